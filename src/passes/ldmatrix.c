/* SPDX-License-Identifier: MIT */
/*
 * ldmatrix.c — moving a dot's operand through shared memory in 16-byte
 * pieces: vector writes, ldmatrix reads.
 *
 * An mma.sync operand reaches its layout by a CONVERT through shared
 * memory (swizzle.c). Element by element, each thread issues one load per
 * element and one store per element; instead, a thread can store 16 bytes
 * of its registers at once (st.shared.v4) where they are one row of the
 * buffer, and ldmatrix.sync.aligned.m8n8.x4.b16 has the warp read four
 * 8 x 16-byte matrices at once, each lane giving the address of one
 * 16-byte row, and hands every thread exactly an mma fragment: of matrix
 * j, row lane/4, the 32-bit word at lane%4 (two 16-bit elements, one
 * tf32, four i8), in its register j (.trans, 16-bit only: the transpose,
 * rows 2*(lane%4) and +1 of column lane/4).
 *
 * In F2 terms (layout.h), with the buffer's element index e, its swizzled
 * index A(e) (swizzle.c), p elements per 32-bit word and E = 16 /
 * elem_bytes elements per 16-byte row, a read layout R is an ldmatrix
 * read when A after R (each slot's index in the buffer) has
 *   - plain: register bits 0 .. log2(p)-1 at indices 1, 2, .. (one word,
 *     low element first) and lane bits 0, 1 at p, 2p (the 4 words of one
 *     row), lane bits 2..4 the 8 rows; .trans: lane bits 2..4 at indices
 *     1, 2, 4 (the row in memory is a column of the fragment) and register
 *     bit 0, lane bits 0, 1 picking the 8 rows;
 *   - the matrices in the next two register bits (.x4), one (.x2) or none
 *     (.x1), never copies;
 *   - every other move keeping rows aligned (its index bits below E clear),
 *     so each 16-byte row is whole and in order;
 *   - and the writes are 16-byte vectors: the write layout's first log2(E)
 *     register bits at indices 1, 2, 4, .., its other moves keeping rows
 *     aligned too;
 *   - the conversion feeds a dot in the MMA form (so the target has
 *     ldmatrix: sm_80 and later), directly or through a transpose.
 * The mma A operands (16-bit m16k16: reg [1, 8K, 8], lane [2, 4, K, 2K,
 * 4K]; tf32 m16k8: reg [8K, 4], lane [1, 2, K, ..]; i8 m16k32: reg [1, 2,
 * 8K, 16], lane [4, 8, K, ..]) are plain .x4 reads, and so is B stored
 * [N, K] and transposed; 16-bit B stored [K, N] is a .trans one; tf32 and
 * i8 B stored [K, N] have no ldmatrix (no .trans for them) and stay
 * element by element.
 *
 * Every condition is read in the buffer's index space, on the swizzle
 * after the layout (composed below: a swizzle is linear, so that is a
 * layout whose bases are the swizzle's images of the layout's), and the
 * address layout handed to code generation is in that space too.
 *
 * The swizzle is then fixed, not searched: rows of the buffer XOR their
 * low row bits into the 16-byte-row bits of the index, so that eight
 * consecutive rows land in eight different groups of four banks (CuTe's
 * Swizzle<3,4,3> for rows of 128 bytes or more, fewer bits for shorter
 * rows, which share 128 bytes). A second candidate stores the tile with
 * its last two dimensions swapped first (a bit permutation, then the same
 * XOR on the stored rows): the order of a tile whose 16-byte pieces run
 * along its first dimension, B of an NT product read through strides,
 * which then is a plain ldmatrix read of 16-byte writes (Triton's shared
 * `order`). tjp_ldmatrix_choose and tjp_ldmatrix_ring take the first
 * candidate under which the counts below are at their minimum on both
 * sides.
 *
 * tjp_ldmatrix_cost and tjp_vector_write_cost count, lane by lane and
 * independently of the conditions above, what the hardware does: each 8x8
 * matrix of an ldmatrix, and each quarter warp of a 16-byte store, is one
 * phase of eight 16-byte rows; rows in the same 16-byte column of the 128
 * bytes of banks (the same four banks) but different rows of memory wait
 * on each other.
 */
#include <string.h>

#include "passes.h"

enum { ROW_BYTES = 16, BANK_ROWS = 8, WORD_BYTES = 4 };

/* The elements lane bits pick for the addresses: 3 row bits, then the
 * matrix bits (lanes 8..15, 16..31 address the later matrices). */
typedef struct ldm_shape {
    int matrices;           /* 1, 2, 4 */
    int trans;
    int pbits;              /* log2 of elements per 32-bit word */
    uint32_t row[3];        /* element moves of address lane bits 0..2 */
    uint32_t matrix[2];     /* of lane bits 3, 4 (and of the registers above a word) */
} ldm_shape;

static int log2_small(int x)
{
    int n = 0;
    while ((1 << n) < x)
        n++;
    return n;
}

/* Elements of one 16-byte row. */
static uint32_t row_elems(int elem_bytes) { return (uint32_t)(ROW_BYTES / elem_bytes); }

static int row_ok(uint32_t v, uint32_t re) { return v && !(v & (re - 1)); }

static uint32_t reg_basis(const tjp_layout *R, int b) { return b < R->nbits[TJP_REG] ? R->basis[TJP_REG][b] : 0; }

/* S after L: where in the buffer (element index) each slot's element is.
 * S is linear over F2, so this is a layout whose bases are S's images of
 * L's; every condition below is on it, in the buffer's index space. */
static void composed(const tjp_layout *L, const tjp_swizzle *S, tjp_layout *out)
{
    *out = *L;
    for (int in = 0; in < TJP_NIN; in++)
        for (int b = 0; b < L->nbits[in]; b++)
            out->basis[in][b] = tjp_swizzle_apply(S, L->basis[in][b]);
}

static int shape_of(const tjp_layout *L, const tjp_swizzle *S, ldm_shape *out)
{
    memset(out, 0, sizeof *out);
    int eb = S->elem_bytes;
    if ((eb != 1 && eb != 2 && eb != 4) || L->nbits[TJP_LANE] != 5)
        return 0;
    uint32_t re = row_elems(eb), p = (uint32_t)(WORD_BYTES / eb);
    out->pbits = log2_small((int)p);
    tjp_layout at;
    composed(L, S, &at);
    const tjp_layout *R = &at;
    const uint32_t *lane = R->basis[TJP_LANE];
    int word = 1; /* registers 0 .. p-1: the elements of one word, in order */
    for (int b = 0; b < out->pbits; b++)
        word = word && reg_basis(R, b) == 1u << b;
    if (word && lane[0] == p && lane[1] == 2 * p) {
        for (int b = 0; b < 3; b++)
            out->row[b] = lane[2 + b];
    } else if (eb == 2 && lane[2] == 1 && lane[3] == 2 && lane[4] == 4) {
        out->trans = 1;
        out->row[0] = reg_basis(R, 0);
        out->row[1] = lane[0];
        out->row[2] = lane[1];
    } else {
        return 0;
    }
    for (int b = 0; b < 3; b++)
        if (!row_ok(out->row[b], re))
            return 0;
    /* Every other move keeps rows 16-byte aligned. */
    for (int in = 0; in < TJP_NIN; in++)
        for (int b = 0; b < R->nbits[in]; b++) {
            int in_row = out->trans ? (in == TJP_LANE && b >= 2)
                                    : ((in == TJP_REG && b < out->pbits) || (in == TJP_LANE && b < 2));
            if (!in_row && (R->basis[in][b] & (re - 1)))
                return 0;
        }
    out->matrices = 1;
    int first = out->trans ? 1 : out->pbits; /* .trans: register 0 is a row */
    for (int b = first; b < first + 2 && row_ok(reg_basis(R, b), re); b++) {
        out->matrix[b - first] = reg_basis(R, b);
        out->matrices *= 2;
    }
    return 1;
}

int tjp_ldmatrix_fit(const tjp_layout *R, const tjp_swizzle *S, int *trans)
{
    ldm_shape s;
    if (!shape_of(R, S, &s))
        return 0;
    *trans = s.trans;
    return s.matrices;
}

void tjp_ldmatrix_address_layout(const tjp_layout *R, const tjp_swizzle *S, tjp_layout *out)
{
    ldm_shape s;
    composed(R, S, out);
    if (!shape_of(R, S, &s))
        return;
    for (int b = 0; b < 3; b++)
        out->basis[TJP_LANE][b] = s.row[b];
    out->basis[TJP_LANE][3] = s.matrix[0];
    out->basis[TJP_LANE][4] = s.matrix[1];
}

/* One phase of eight 16-byte rows (the buffer indices of their first
 * elements): rows in the same four banks but different rows of memory wait
 * on each other; counted into out against the minimum of 1. */
static void count_phase(const uint32_t start[8], int elem_bytes, tjp_bank_count *out)
{
    uint32_t rows[8];
    int n = 0, per_col[BANK_ROWS] = {0}, most = 0;
    for (int l = 0; l < 8; l++) {
        uint32_t row = start[l] * (uint32_t)elem_bytes / ROW_BYTES;
        int seen = 0;
        for (int k = 0; k < n && !seen; k++)
            seen = rows[k] == row;
        if (!seen)
            rows[n++] = row;
    }
    for (int k = 0; k < n; k++)
        if (++per_col[rows[k] % BANK_ROWS] > most)
            most = per_col[rows[k] % BANK_ROWS];
    out->requests++;
    out->wavefronts += most;
    out->minimum += 1;
    if (most - 1 > out->worst - out->worst_minimum || out->requests == 1) {
        out->worst = most;
        out->worst_minimum = 1;
    }
}

void tjp_ldmatrix_cost(const tjp_layout *R, const tjp_swizzle *S, tjp_bank_count *out)
{
    memset(out, 0, sizeof *out);
    ldm_shape s;
    if (!shape_of(R, S, &s))
        return;
    tjp_layout A;
    tjp_ldmatrix_address_layout(R, S, &A);
    uint32_t step = (uint32_t)s.matrices << (s.trans ? 1 : s.pbits); /* registers per ldmatrix */
    for (uint32_t w = 0; w < 1u << R->nbits[TJP_WARP]; w++)
        for (uint32_t r = 0; r < 1u << R->nbits[TJP_REG]; r += step)
            for (int m = 0; m < s.matrices; m++) {
                /* The phase of matrix m: lanes 8m .. 8m+7 give its rows. */
                uint32_t start[8];
                for (uint32_t l = 0; l < 8; l++)
                    start[l] = tjp_layout_apply(&A, r, 8u * (uint32_t)m + l, w);
                count_phase(start, S->elem_bytes, out);
            }
}

/* The writes as 16-byte vectors: W's registers 0..7 are 8 consecutive
 * elements of one row, every other move keeps rows aligned. */
static int vector_writes(const tjp_layout *L, const tjp_swizzle *S)
{
    int eb = S->elem_bytes;
    if (eb != 1 && eb != 2 && eb != 4)
        return 0;
    uint32_t re = row_elems(eb);
    int vbits = log2_small((int)re);
    if (L->nbits[TJP_REG] < vbits)
        return 0;
    tjp_layout at;
    composed(L, S, &at);
    const tjp_layout *W = &at;
    for (int in = 0; in < TJP_NIN; in++)
        for (int b = 0; b < W->nbits[in]; b++) {
            uint32_t v = W->basis[in][b];
            if (in == TJP_REG && b < vbits ? v != 1u << b : (v & (re - 1)) != 0)
                return 0;
        }
    return 1;
}

void tjp_vector_write_cost(const tjp_layout *W, const tjp_swizzle *S, tjp_bank_count *out)
{
    memset(out, 0, sizeof *out);
    if (!vector_writes(W, S))
        return;
    for (uint32_t w = 0; w < 1u << W->nbits[TJP_WARP]; w++)
        for (uint32_t r = 0; r < 1u << W->nbits[TJP_REG]; r += row_elems(S->elem_bytes))
            for (uint32_t q = 0; q < 32; q += 8) { /* a quarter warp: 128 bytes per wavefront */
                uint32_t start[8];
                for (uint32_t l = 0; l < 8; l++)
                    start[l] = tjp_swizzle_apply(S, tjp_layout_apply(W, r, q + l, w));
                count_phase(start, S->elem_bytes, out);
            }
}

void tjp_ldmatrix_swizzle(int32_t cols, int elem_bytes, tjp_swizzle *out)
{
    memset(out, 0, sizeof *out);
    out->elem_bytes = elem_bytes;
    int cbits = log2_small(cols), rbits = log2_small((int)row_elems(elem_bytes));
    int inside = cbits - rbits < 0 ? 0 : cbits - rbits > 3 ? 3 : cbits - rbits; /* log2 of 16-byte rows per row */
    for (int j = 3 - inside; j < 3; j++)
        out->flip[cbits + j] = row_elems(elem_bytes) << (j - (3 - inside));
}

/* Does the conversion (or ring read) at op i feed a dot of the MMA form
 * (directly or through a transpose)? */
static int feeds_mma(const tji_func *fn, const tjp_layout_plan *plan, int32_t i)
{
    if (!plan->dot || (fn->ops[i].code != TJI_CONVERT && fn->ops[i].code != TJI_LOCAL_LOAD))
        return 0;
    int32_t v = fn->ops[i].result;
    for (int32_t k = 0; k < fn->nops; k++) {
        const tji_op *op = &fn->ops[k];
        if (op->parent < 0 || op->nargs < 1)
            continue;
        if (op->code == TJI_PERMUTE && op->args[0] == v) {
            for (int32_t j = 0; j < fn->nops && j < plan->nops; j++)
                if (fn->ops[j].code == TJI_DOT && fn->ops[j].parent >= 0 && plan->dot[j].form == TJP_DOT_MMA &&
                    (fn->ops[j].args[0] == op->result || fn->ops[j].args[1] == op->result))
                    return 1;
        } else if (op->code == TJI_DOT && k < plan->nops && plan->dot[k].form == TJP_DOT_MMA &&
                   (op->args[0] == v || op->args[1] == v)) {
            return 1;
        }
    }
    return 0;
}

int tjp_ldmatrix_of(const tji_func *fn, const tjp_layout_plan *plan, int32_t i, const tjp_shared_use *use,
                    int *trans)
{
    *trans = 0;
    if (!feeds_mma(fn, plan, i) || !vector_writes(&use->write, &use->swizzle))
        return 0;
    return tjp_ldmatrix_fit(&use->read, &use->swizzle, trans);
}

/* The 16-byte-row swizzle of a [.., R, C] tile stored with its last two
 * dimensions swapped, as [.., C, R] (rows of R elements): a bit
 * permutation, then tjp_ldmatrix_swizzle of those rows; both are linear,
 * so their product is a swizzle too (flip[i] = image of bit i, XOR bit i). */
static void transposed_swizzle(const tji_type *t, int elem_bytes, tjp_swizzle *out)
{
    int cbits = log2_small(t->shape[t->rank - 1]), rbits = log2_small(t->shape[t->rank - 2]);
    tjp_swizzle rows;
    tjp_ldmatrix_swizzle(t->shape[t->rank - 2], elem_bytes, &rows);
    memset(out, 0, sizeof *out);
    out->elem_bytes = elem_bytes;
    for (int i = 0; i < TJP_MAX_BITS; i++) {
        uint32_t bit = 1u << i;
        uint32_t moved = i < cbits ? bit << rbits : i < cbits + rbits ? bit >> cbits : bit;
        out->flip[i] = tjp_swizzle_apply(&rows, moved) ^ bit;
    }
}

/* Candidate k of an operand buffer's swizzle (0: none left): the tile's
 * own rows first; then its last two dimensions swapped, the order of a
 * tile loaded along its columns (B of an NT product read through strides:
 * its 16-byte pieces run along K), whose writes stay 16-byte vectors. */
static int candidate_swizzle(const tji_type *t, int elem_bytes, int k, tjp_swizzle *out)
{
    if (k == 0)
        tjp_ldmatrix_swizzle(t->shape[t->rank - 1], elem_bytes, out);
    else if (k == 1 && t->rank >= 2)
        transposed_swizzle(t, elem_bytes, out);
    else
        return 0;
    return 1;
}

int tjp_ldmatrix_choose(const tji_func *fn, const tjp_layout_plan *plan, int32_t i, tjp_shared_use *use)
{
    const tji_type *t = tji_typeof(fn, fn->ops[i].result);
    tjp_shared_use try = *use;
    for (int k = 0; candidate_swizzle(t, use->swizzle.elem_bytes, k, &try.swizzle); k++) {
        try.ldmatrix = tjp_ldmatrix_of(fn, plan, i, &try, &try.ldmatrix_trans);
        if (!try.ldmatrix)
            continue;
        tjp_bank_count w, r;
        tjp_vector_write_cost(&try.write, &try.swizzle, &w);
        tjp_ldmatrix_cost(&try.read, &try.swizzle, &r);
        if (w.wavefronts == w.minimum && r.wavefronts == r.minimum) {
            try.write_vector = (int)row_elems(try.swizzle.elem_bytes);
            try.read_vector = 1;
            *use = try;
            return 1;
        }
    }
    return 0;
}

/* A ring op's fit under S: a copy writes whole 16-byte rows without
 * conflicts; a read feeds an mma dot and is an ldmatrix read without
 * conflicts (matrices and .trans into *m, *trans). */
static int ring_op_fits(const tji_func *fn, const tjp_layout_plan *plan, int32_t i, const tjp_swizzle *S,
                        int *m, int *trans)
{
    const tji_op *op = &fn->ops[i];
    tjp_bank_count cost;
    if (op->code == TJI_ASYNC_COPY) {
        int vector = plan->vector && i < plan->nops ? plan->vector[i] : 1;
        const tjp_layout *W = &plan->of[op->args[0]];
        if (vector * S->elem_bytes < ROW_BYTES || !vector_writes(W, S))
            return 0;
        tjp_vector_write_cost(W, S, &cost);
        return cost.wavefronts == cost.minimum;
    }
    const tjp_layout *R = &plan->of[op->result];
    int t = 0, k = feeds_mma(fn, plan, i) ? tjp_ldmatrix_fit(R, S, &t) : 0;
    if (!k || (*m && (k != *m || t != *trans)))
        return 0;
    tjp_ldmatrix_cost(R, S, &cost);
    *m = k;
    *trans = t;
    return cost.wavefronts == cost.minimum;
}

/* Whether every op of ring fits under S (the reads' shape into *m, *trans). */
static int ring_fits(const tji_func *fn, const tjp_layout_plan *plan, int ring, const tjp_swizzle *S,
                     int *m, int *trans)
{
    *m = *trans = 0;
    for (int32_t i = 0; i < fn->nops; i++) {
        const tji_op *op = &fn->ops[i];
        if (op->parent >= 0 && op->ring == ring &&
            (op->code == TJI_ASYNC_COPY || op->code == TJI_LOCAL_LOAD) &&
            !ring_op_fits(fn, plan, i, S, m, trans))
            return 0;
    }
    return *m != 0;
}

/* Whether every read of ring has one user, a DOT in its own region: its
 * registers may then be loaded where the dot first reads them, between
 * its mma instructions (no barrier or copy into the slot comes between). */
static int reads_feed_one_dot(const tji_func *fn, int ring)
{
    for (int32_t i = 0; i < fn->nops; i++) {
        const tji_op *op = &fn->ops[i];
        if (op->parent < 0 || op->code != TJI_LOCAL_LOAD || op->ring != ring)
            continue;
        int uses = 0, in_dot = 0;
        for (int32_t k = 0; k < fn->nops; k++)
            for (int a = 0; fn->ops[k].parent >= 0 && a < fn->ops[k].nargs; a++)
                if (fn->ops[k].args[a] == op->result) {
                    uses++;
                    in_dot += fn->ops[k].code == TJI_DOT && fn->ops[k].parent == op->parent && a < 2;
                }
        if (uses != 1 || in_dot != 1)
            return 0;
    }
    return 1;
}

int tjp_ldmatrix_ring(const tji_func *fn, const tjp_layout_plan *plan, int ring, tjp_ring *R)
{
    if (R->op < 0)
        return 0;
    const tji_op *first = &fn->ops[R->op];
    const tji_type *t = tji_typeof(fn, first->code == TJI_ASYNC_COPY ? first->args[0] : first->result);
    tjp_swizzle S;
    int m, trans;
    for (int k = 0; candidate_swizzle(t, R->elem_bytes, k, &S); k++)
        if (ring_fits(fn, plan, ring, &S, &m, &trans)) {
            R->swizzle = S;
            R->ldmatrix = m;
            R->ldmatrix_trans = trans;
            R->read_at_use = reads_feed_one_dot(fn, ring);
            return 1;
        }
    return 0;
}
