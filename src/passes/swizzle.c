/* SPDX-License-Identifier: MIT */
/*
 * swizzle.c — shared-memory layouts (S of the design's chain) and their
 * bank conflicts.
 *
 * Three GPU steps move a tile through shared memory: a layout conversion
 * that threads cannot do by renaming registers (a transpose), the partial
 * results of a reduction across warps, and a prefix sum. Each writes a
 * buffer from one distributed layout W and reads it back in another, R. The
 * element with row-major index e lives at buffer index A(e), where A is the
 * buffer's shared layout S. This pass chooses A for every such step; the
 * code generator only executes the choice, the explainer reports it.
 *
 * The bank model. Shared memory has 32 banks of 4-byte words; the lanes of
 * one warp request that touch different words of one bank are served one
 * after another (one wavefront per word), lanes touching one word share it.
 * So which bits of the buffer index pick the bank depends on the element
 * size: for 4-byte elements index bits 0..4; for 2- and 1-byte elements the
 * lowest 1 or 2 bits pick a byte inside the word and bits 1..5 or 2..6 pick
 * the bank; an 8-byte access is served half a warp at a time, so lanes 0..15
 * form a request and bits 0..3 pick a pair of banks. Call those the bank
 * bits [lo, lo + nb) and the bits above them the high bits.
 *
 * The algebra. A is linear over F2, A(e) = e ^ flip(e), where each high bit
 * of e XORs a constant into the bank bits (flip[i] only has bits below i, so
 * A is a permutation of the buffer: the array keeps its size, and any A is
 * correct; A is chosen for speed). The layouts are linear too, so the
 * buffer indices of one request — register r and warp w fixed, the lanes
 * varying — are A(W(r, 0, w)) XOR the span of A(lane bases): the lane
 * bases alone decide the conflicts, for every register and warp alike. With
 * u(v) = A(v) >> lo (the word, or the 8-byte slot) and b(v) its bank bits,
 * a request touches 2^rank{u(lane bases)} words spread over
 * 2^rank{b(lane bases)} banks, every bank equally: it takes
 * 2^(rank u - rank b) wavefronts, one when the bank vectors are as
 * independent as the words.
 *
 * The greedy construction. For a layout, walk its lane bases (those of one
 * request); a basis whose word is in the span of the earlier ones adds no
 * word; one whose bank is new is fine; one whose bank is already spanned is
 * repaired by giving one of its high bits that no earlier lane basis (of
 * either layout) uses an image that turns its bank into a unit vector
 * outside the span. Lane bases without such a free bit go first, so that
 * the others avoid their banks. Fitting W then R and R then W, the pass
 * keeps the cheapest of those and of no swizzle (ties to no swizzle, which
 * costs no instructions). A transpose is the typical case: W's lanes run
 * along the bank bits, R's along high bits, which get images that spread
 * them over the 32 banks — the XOR swizzle col ^ row.
 *
 * Vectors. A thread whose registers 0 .. v-1 are v consecutive elements
 * of the buffer (tjp_shared_vector) can move them in one access of up to
 * 16 bytes, served a half (8 bytes) or a quarter (16 bytes) warp at a
 * time. The model is the same with the access as the unit: bank bits
 * start higher, a request has fewer lanes. The swizzle must keep each
 * vector whole, so for a conversion whose sides move vectors it only
 * XORs into index bits at or above the widest one
 * (tjp_swizzle_choose_vectors). A CONVERT takes the vectors where that
 * costs no more wavefronts than element by element: always for the
 * matmul epilogue (the accumulator's pairs to the store's 16-byte rows),
 * not for a transpose whose column reads would then share banks.
 *
 * The check. tjp_bank_cost does not trust the algebra above: it enumerates
 * the 32 lanes of every request through tjp_layout_apply and A, collects
 * the distinct words per bank, and counts wavefronts against the minimum
 * (distinct words / 32, rounded up, per request phase). Tests and the
 * explainer compare the two.
 */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

#define WARP_LANES 32
#define BANKS 32
#define WORD_BYTES 4
#define WAVEFRONT_BYTES (BANKS * WORD_BYTES)

static int log2_floor(uint32_t x)
{
    int n = 0;
    while (x >> (n + 1))
        n++;
    return n;
}

/* --- the bank model -------------------------------------------------------- */

typedef struct bank_model {
    int lo;      /* index bits below lo pick bytes of one word (or slot) */
    int nb;      /* bits lo .. lo + nb - 1 pick the bank (or pair of banks) */
    int phase;   /* lane bits of one request: 5, 4 for 8-byte accesses, 3 for 16 */
} bank_model;

/* Accesses of `vector` consecutive elements of elem_bytes each. */
static bank_model bank_model_of(int elem_bytes, int vector)
{
    bank_model m;
    int bytes = elem_bytes * vector, unit = bytes > WORD_BYTES ? bytes : WORD_BYTES;
    m.lo = log2_floor((uint32_t)(unit / elem_bytes));
    m.nb = log2_floor(BANKS) - log2_floor((uint32_t)(unit / WORD_BYTES));
    m.phase = m.nb;
    return m;
}

uint32_t tjp_swizzle_apply(const tjp_swizzle *S, uint32_t e)
{
    uint32_t a = e;
    for (int i = 0; i < TJP_MAX_BITS; i++)
        if (e >> i & 1)
            a ^= S->flip[i];
    return a;
}

int tjp_swizzle_permutes(const tjp_swizzle *S, int64_t numel)
{
    int nbits = 0;
    while (nbits < TJP_MAX_BITS && ((int64_t)1 << nbits) < numel)
        nbits++;
    int pow2 = ((int64_t)1 << nbits) == numel;
    uint32_t image[TJP_MAX_BITS];
    for (int i = 0; i < TJP_MAX_BITS; i++) {
        if (i >= nbits ? S->flip[i] != 0 : pow2 ? S->flip[i] >> nbits != 0 : S->flip[i] >> i != 0)
            return 0;
        image[i] = (1u << i) ^ S->flip[i];
    }
    /* the images of the index bits are independent: elimination over F2 */
    for (int i = 0; i < nbits; i++) {
        int pivot = -1;
        for (int r = i; r < nbits && pivot < 0; r++)
            if (image[r] >> i & 1)
                pivot = r;
        if (pivot < 0)
            return 0;
        uint32_t t = image[pivot];
        image[pivot] = image[i];
        image[i] = t;
        for (int r = 0; r < nbits; r++)
            if (r != i && (image[r] >> i & 1))
                image[r] ^= image[i];
    }
    return 1;
}

/* --- spans over F2 --------------------------------------------------------- */

typedef struct span {
    int n;
    uint32_t vec[TJP_MAX_BITS];   /* reduced, sorted by leading bit */
} span;

static uint32_t span_reduce(const span *s, uint32_t x)
{
    for (int i = 0; i < s->n; i++)
        if ((x ^ s->vec[i]) < x)
            x ^= s->vec[i];
    return x;
}

/* Adds x; returns 0 when x was in the span already. */
static int span_add(span *s, uint32_t x)
{
    x = span_reduce(s, x);
    if (!x)
        return 0;
    int pos = s->n++;
    while (pos > 0 && s->vec[pos - 1] < x) {
        s->vec[pos] = s->vec[pos - 1];
        pos--;
    }
    s->vec[pos] = x;
    return 1;
}

/* Wavefronts of one request of L under S, by the algebra: 2^(rank of the
 * lane bases' words - rank of their banks). */
static int algebraic_cost(const tjp_swizzle *S, const tjp_layout *L, int vector)
{
    bank_model m = bank_model_of(S->elem_bytes, vector);
    span words = {0}, banks = {0};
    for (int b = 0; b < L->nbits[TJP_LANE] && b < m.phase; b++) {
        uint32_t u = tjp_swizzle_apply(S, L->basis[TJP_LANE][b]) >> m.lo;
        span_add(&words, u);
        span_add(&banks, u & ((1u << m.nb) - 1));
    }
    return 1 << (words.n - banks.n);
}

/* The greedy step for one layout accessed `vector` elements at a time;
 * *used holds the high bits (as index bits) that earlier lane bases depend
 * on, whose images must stay; flips only reach index bits floor and up. */
static void fit(tjp_swizzle *S, const tjp_layout *L, int vector, int floor, uint32_t *used)
{
    bank_model m = bank_model_of(S->elem_bytes, vector);
    uint32_t bank_mask = (1u << m.nb) - 1, high_mask = ~((1u << (m.lo + m.nb)) - 1);
    int n = L->nbits[TJP_LANE] < m.phase ? L->nbits[TJP_LANE] : m.phase;
    uint32_t fixed = 0;
    for (int b = 0; b < n; b++)
        if (!(L->basis[TJP_LANE][b] & high_mask & ~*used))
            fixed |= 1u << b;
    span words = {0}, banks = {0};
    for (int round = 0; round < 2; round++)
        for (int b = 0; b < n; b++) {
            if ((fixed >> b & 1) != (round == 0))
                continue; /* the fixed ones in the first round, the others in the second */
            uint32_t e = L->basis[TJP_LANE][b], free_bits = e & high_mask & ~*used;
            *used |= e & high_mask;
            uint32_t u = tjp_swizzle_apply(S, e) >> m.lo, bank = u & bank_mask;
            if (!span_reduce(&words, u))
                continue; /* no new word: no new conflict */
            if (span_reduce(&banks, bank) && span_add(&banks, bank)) {
                span_add(&words, u);
                continue;
            }
            if (!free_bits) {
                span_add(&words, u); /* a conflict the swizzle cannot remove */
                continue;
            }
            /* Fewer banks than lanes are spanned, so some unit vector is
             * not; one at or above floor, where the vectors allow. */
            uint32_t unit = floor > m.lo ? 1u << (floor - m.lo) : 1;
            while (unit <= bank_mask && !span_reduce(&banks, unit))
                unit <<= 1;
            if (unit > bank_mask) {
                span_add(&words, u);
                continue;
            }
            S->flip[__builtin_ctz(free_bits)] ^= (bank ^ unit) << m.lo;
            span_add(&banks, unit);
            span_add(&words, u ^ bank ^ unit);
        }
}

void tjp_swizzle_choose_vectors(tjp_swizzle *out, const tjp_layout *const *layouts, const int *vectors,
                                int nlayouts, int elem_bytes)
{
    memset(out, 0, sizeof *out);
    out->elem_bytes = elem_bytes;
    int floor = 0, best = 0;
    for (int k = 0; k < nlayouts; k++) {
        int v = vectors ? vectors[k] : 1;
        if (log2_floor((uint32_t)v) > floor)
            floor = log2_floor((uint32_t)v);
        best += algebraic_cost(out, layouts[k], v);
    }
    if (best == nlayouts)
        return;
    for (int first = 0; first < nlayouts; first++) {
        tjp_swizzle s = {.elem_bytes = elem_bytes};
        uint32_t used = 0;
        for (int k = 0; k < nlayouts; k++) {
            int at = (first + k) % nlayouts;
            fit(&s, layouts[at], vectors ? vectors[at] : 1, floor, &used);
        }
        int cost = 0;
        for (int k = 0; k < nlayouts; k++)
            cost += algebraic_cost(&s, layouts[k], vectors ? vectors[k] : 1);
        if (cost < best) {
            best = cost;
            *out = s;
        }
    }
}

void tjp_swizzle_choose(tjp_swizzle *out, const tjp_layout *const *layouts, int nlayouts, int elem_bytes)
{
    tjp_swizzle_choose_vectors(out, layouts, NULL, nlayouts, elem_bytes);
}

int tjp_shared_vector(const tjp_layout *L, int elem_bytes)
{
    int k = 0;
    while (k < L->nbits[TJP_REG] && elem_bytes << (k + 1) <= 16 && L->basis[TJP_REG][k] == 1u << k)
        k++;
    for (; k > 0; k--) { /* every other move keeps the vectors aligned */
        uint32_t low = (1u << k) - 1;
        int aligned = 1;
        for (int in = 0; in < TJP_NIN && aligned; in++)
            for (int b = in == TJP_REG ? k : 0; b < L->nbits[in]; b++)
                aligned = aligned && !(L->basis[in][b] & low);
        if (aligned)
            break;
    }
    return 1 << k;
}

int tjp_vector_max(const tjp_layout *L, const tjp_swizzle *S)
{
    int v = tjp_shared_vector(L, S->elem_bytes);
    while (v > 1) {
        uint32_t low = (uint32_t)v - 1;
        int whole = 1;
        for (int i = 0; i < TJP_MAX_BITS && whole; i++)
            whole = !(S->flip[i] & low) && !((1u << i) & low && S->flip[i]);
        if (whole)
            break;
        v /= 2;
    }
    return v;
}

int tjp_vector_fits(const tjp_layout *L, const tjp_swizzle *S, int vector)
{
    return vector >= 1 && !(vector & (vector - 1)) && vector <= tjp_vector_max(L, S);
}

/* --- the check: banks lane by lane ----------------------------------------- */

int tjp_request_wavefronts(const tjp_layout *L, const tjp_swizzle *S, int vector, uint32_t reg,
                           uint32_t warp, int *minimum)
{
    int es = S->elem_bytes * vector;
    int phase_lanes = es > WORD_BYTES ? WAVEFRONT_BYTES / es : WARP_LANES;
    int wavefronts = 0, least = 0;
    for (int start = 0; start < WARP_LANES; start += phase_lanes) {
        uint32_t words[2 * WARP_LANES];
        int nwords = 0;
        for (int lane = start; lane < start + phase_lanes; lane++) {
            uint64_t byte = (uint64_t)tjp_swizzle_apply(S, tjp_layout_apply(L, reg, (uint32_t)lane, warp)) *
                            (uint64_t)S->elem_bytes;
            for (uint64_t w = byte / WORD_BYTES; w <= (byte + (uint64_t)es - 1) / WORD_BYTES; w++) {
                int seen = 0;
                for (int k = 0; k < nwords && !seen; k++)
                    seen = words[k] == (uint32_t)w;
                if (!seen)
                    words[nwords++] = (uint32_t)w;
            }
        }
        int per_bank[BANKS] = {0}, most = 0;
        for (int k = 0; k < nwords; k++)
            if (++per_bank[words[k] % BANKS] > most)
                most = per_bank[words[k] % BANKS];
        wavefronts += most;
        least += (nwords + BANKS - 1) / BANKS;
    }
    if (minimum)
        *minimum = least;
    return wavefronts;
}

void tjp_bank_cost(const tjp_layout *L, const tjp_swizzle *S, int vector, tjp_bank_count *out)
{
    memset(out, 0, sizeof *out);
    uint32_t copies = 0;
    for (int b = 0; b < L->nbits[TJP_REG]; b++)
        if (!L->basis[TJP_REG][b])
            copies |= 1u << b;
    for (uint32_t w = 0; w < 1u << L->nbits[TJP_WARP]; w++)
        for (uint32_t r = 0; r < 1u << L->nbits[TJP_REG]; r += (uint32_t)vector) {
            if (r & copies)
                continue; /* a copy of another register: not written or read again */
            int least, n = tjp_request_wavefronts(L, S, vector, r, w, &least);
            out->requests++;
            out->wavefronts += n;
            out->minimum += least;
            if (n - least > out->worst - out->worst_minimum || out->requests == 1) {
                out->worst = n;
                out->worst_minimum = least;
            }
        }
}

/* --- the steps that go through shared memory ------------------------------- */

int tjp_convert_renames(const tjp_layout *src, const tjp_layout *dst)
{
    if (src->nbits[TJP_LANE] != dst->nbits[TJP_LANE] || src->nbits[TJP_WARP] != dst->nbits[TJP_WARP])
        return 0;
    for (int in = TJP_LANE; in <= TJP_WARP; in++)
        if (memcmp(src->basis[in], dst->basis[in], sizeof(uint32_t) * (size_t)src->nbits[in]))
            return 0;
    uint32_t ns = 1u << src->nbits[TJP_REG];
    for (uint32_t r = 0; r < 1u << dst->nbits[TJP_REG]; r++) {
        uint32_t e = tjp_layout_apply(dst, r, 0, 0), s = 0;
        while (s < ns && tjp_layout_apply(src, s, 0, 0) != e)
            s++;
        if (s == ns)
            return 0;
    }
    return 1;
}

/* Bytes of one element in shared memory: i1 as a byte, pointers as 8;
 * computed (reductions and scans), 16-bit floats as f32. */
static int shared_bytes(const tji_type *t, int computed)
{
    if (t->is_ptr)
        return 8;
    int bits = tjs_dtype_bits(t->dtype);
    if (computed && tjs_dtype_is_float(t->dtype) && bits < 32)
        return 4;
    return bits < 8 ? 1 : bits / 8;
}

/* Bits of a row-major index of a tile of type t that hold dimension dim. */
static uint32_t dim_bits(const tji_type *t, int dim)
{
    int shift = 0;
    for (int d = dim + 1; d < t->rank; d++)
        shift += log2_floor((uint32_t)t->shape[d]);
    return ((uint32_t)t->shape[dim] - 1) << shift;
}

/* Eight or more parts, where every lane of a warp holds the same result
 * elements (a row reduction): lane l reads part p(l) (the lowest lane bits)
 * and the parts meet by butterfly shuffles, log2(parts) steps, instead of
 * every thread reading and combining every part. Reading one slot of each
 * part, the lanes touch words numel apart. */
static void lane_parallel_parts(tjp_shared_use *use)
{
    int k = __builtin_ctz((unsigned)use->parts);
    if (use->parts < 8 || use->write.nbits[TJP_LANE] < k)
        return;
    for (int b = 0; b < use->write.nbits[TJP_LANE]; b++)
        if (use->write.basis[TJP_LANE][b])
            return; /* lanes hold different result elements */
    use->part_lanes = (1u << k) - 1;
    tjp_layout *R = &use->read;
    R->rank = 1;
    memset(R->shape, 0, sizeof R->shape);
    R->shape[0] = (int32_t)(use->numel * use->parts);
    for (int b = 0; b < k; b++)
        R->basis[TJP_LANE][b] = (uint32_t)use->numel << b;
}

/* The buffer's swizzle S for layouts: chosen, or (choose 0) none yet. */
static void swizzle_for(tjp_swizzle *S, const tjp_layout *const *layouts, int n, int elem_bytes,
                        int choose)
{
    if (choose) {
        tjp_swizzle_choose(S, layouts, n, elem_bytes);
        return;
    }
    memset(S, 0, sizeof *S);
    S->elem_bytes = elem_bytes;
}

/* A CONVERT's accesses as vectors: each side the widest its layout allows
 * (tjp_shared_vector) under a swizzle that keeps those vectors whole,
 * where that costs no more wavefronts than element by element (it always
 * takes fewer instructions). */
static void choose_vectors(tjp_shared_use *use)
{
    int eb = use->swizzle.elem_bytes;
    int v[2] = {tjp_shared_vector(&use->write, eb), tjp_shared_vector(&use->read, eb)};
    if (v[0] == 1 && v[1] == 1)
        return;
    const tjp_layout *both[2] = {&use->write, &use->read};
    tjp_swizzle S;
    tjp_swizzle_choose_vectors(&S, both, v, 2, eb);
    tjp_bank_count w1, r1, w0, r0;
    tjp_bank_cost(&use->write, &S, v[0], &w1);
    tjp_bank_cost(&use->read, &S, v[1], &r1);
    tjp_bank_cost(&use->write, &use->swizzle, 1, &w0);
    tjp_bank_cost(&use->read, &use->swizzle, 1, &r0);
    if (w1.wavefronts + r1.wavefronts > w0.wavefronts + r0.wavefronts)
        return;
    use->swizzle = S;
    use->write_vector = v[0];
    use->read_vector = v[1];
}

static int shared_use(const tji_func *fn, const tjp_layout_plan *plan, int32_t i, int choose,
                      tjp_shared_use *out)
{
    memset(out, 0, sizeof *out);
    if (!fn || !plan || i < 0 || i >= fn->nops)
        return 0;
    const tji_op *op = &fn->ops[i];
    if (op->nargs < 1 || op->args[0] > plan->nvalues || op->result > plan->nvalues)
        return 0;
    const tji_type *t = tji_typeof(fn, op->args[0]);
    if (t->rank == 0)
        return 0;
    const tjp_layout *L = &plan->of[op->args[0]];
    out->parts = 1;
    out->write_vector = out->read_vector = 1;
    switch (op->code) {
    case TJI_CONVERT: {
        const tjp_layout *to = &plan->of[op->result];
        if (tjp_convert_renames(L, to))
            return 0;
        out->write = *L;
        out->read = *to;
        out->numel = tji_numel(t);
        const tjp_layout *both[2] = {L, to};
        swizzle_for(&out->swizzle, both, 2, shared_bytes(t, 0), choose);
        if (choose && !t->is_ptr && t->dtype != TJ_I1)
            choose_vectors(out);
        return 1;
    }
    case TJI_REDUCE: {
        uint32_t axis = dim_bits(t, op->axis), across = 0;
        for (int b = 0; b < L->nbits[TJP_WARP]; b++) {
            uint32_t v = L->basis[TJP_WARP][b];
            if (v && (v & axis) == v)
                across++;
        }
        if (!across)
            return 0;
        tjp_layout_slice(&out->write, L, op->axis);
        out->read = out->write;
        out->parts = 1 << across;
        out->numel = tji_numel(tji_typeof(fn, op->result));
        const tjp_layout *one[1] = {&out->write};
        swizzle_for(&out->swizzle, one, 1, shared_bytes(t, 1), choose);
        if (op->reduce == TJ_REDUCE_ARGMAX || op->reduce == TJ_REDUCE_ARGMIN) {
            out->has_index = 1;
            swizzle_for(&out->index_swizzle, one, 1, 4, choose);
        }
        lane_parallel_parts(out);
        return 1;
    }
    case TJI_CUMSUM: {
        /* The scan of an element reads its whole prefix along the axis: at
         * step k every lane reads its element with the axis coordinate
         * replaced by k. That is the layout with the axis bits cleared,
         * XOR a constant, which moves no lane to another bank or word. */
        uint32_t axis = dim_bits(t, op->axis);
        out->write = *L;
        out->read = *L;
        for (int in = 0; in < TJP_NIN; in++)
            for (int b = 0; b < L->nbits[in]; b++)
                out->read.basis[in][b] &= ~axis;
        out->numel = tji_numel(t);
        const tjp_layout *both[2] = {&out->write, &out->read};
        swizzle_for(&out->swizzle, both, 2, shared_bytes(t, 1), choose);
        return 1;
    }
    default:
        return 0;
    }
}

int tjp_shared_use_of(const tji_func *fn, const tjp_layout_plan *plan, int32_t i,
                      tjp_shared_use *out)
{
    return shared_use(fn, plan, i, 1, out);
}

int tjp_shared_step_of(const tji_func *fn, const tjp_layout_plan *plan, int32_t i,
                       int choose_swizzle, tjp_shared_step *out)
{
    memset(out, 0, sizeof *out);
    if (fn->ops[i].code == TJI_STORE) /* the hardware's layout: nothing to choose */
        return tjp_tma_store(fn, plan, i, out) ? TJP_STEP_TMA_STORE : TJP_STEP_NONE;
    if (!shared_use(fn, plan, i, choose_swizzle, &out->use))
        return TJP_STEP_NONE;
    tji_opcode code = fn->ops[i].code;
    out->kind = code == TJI_CONVERT ? TJP_STEP_CONVERT : code == TJI_REDUCE ? TJP_STEP_REDUCE : TJP_STEP_CUMSUM;
    return out->kind;
}

void tjp_swizzle_print(tjs_buf *b, const tjp_swizzle *S)
{
    int any = 0;
    for (int i = 0; i < TJP_MAX_BITS; i++)
        if (S->flip[i]) {
            tjs_buf_printf(b, "%s%u->%u", any ? " " : "index ^= bit ", 1u << i, S->flip[i]);
            any = 1;
        }
    if (!any)
        tjs_buf_printf(b, "none (row-major)");
}

/* The pass: the plan's shared step of every op (passes.h). */
tj_status tjp_choose_swizzles(const tji_func *fn, tjp_layout_plan *plan)
{
    if (!fn || !plan || !plan->of || plan->nops < fn->nops)
        return tjs_error(TJ_ERR_INVALID_ARG, "tjp_choose_swizzles: no program or no layout plan");
    free(plan->shared);
    plan->shared = tjs_xcalloc((size_t)fn->nops + 1, sizeof *plan->shared);
    for (int32_t i = 0; i < fn->nops; i++)
        if (tjp_shared_step_of(fn, plan, i, 1, &plan->shared[i]) == TJP_STEP_CONVERT)
            tjp_ldmatrix_choose(fn, plan, i, &plan->shared[i].use);
    return TJ_OK;
}

