/* SPDX-License-Identifier: MIT */
/*
 * wgmma.c — which dots run as Hopper's warpgroup MMA, and the shared
 * layout their operands live in.
 *
 * On sm_90a, wgmma.mma_async has a warpgroup (four warps, 128 threads)
 * multiply a 64 x N x 16 block asynchronously, with both operands read
 * from shared memory through 64-bit matrix descriptors and the
 * accumulator in registers (layout_mma.c's tjp_layout_wgmma_acc). It is
 * what takes an H200 from mma.sync's half of the tensor cores to the top:
 * no ldmatrix, no operand registers, the next K step issued while the
 * last one runs.
 *
 * Where the operands are: a dot runs as wgmma where both operands are
 * LOCAL_LOADs of rings of pipelined loads (pipeline_loops.c) that nothing
 * but dots reads — the ring slot is then the operand, and the LOCAL_LOAD
 * emits nothing — or tj_trans of one (tl.dot(a, b.T)): the descriptor
 * reads the same ring the other way round (tjp_wgmma_view: stored
 * transposed where it was not, its swizzle indexed by the transpose's
 * elements), and the transpose emits nothing either. Several dots may
 * read one slot (a gated MLP's x @ W1 and x @ W2; attention backward's
 * dO, once directly and once through tj_trans) where all of them read it
 * through descriptors (tjp_wgmma_shared_read_error, which accelerate_dot.c
 * enforces): the last of them in the loop body releases the slot
 * (tjp_wgmma_last_reader), at its wait or, its group left in flight, at
 * the next: by then every group that read the slot is complete. Or one
 * operand is in
 * registers: a 16-bit A (a chained
 * dot's operand), or a TF32 B whose loads run along N. wgmma reads
 * 32-bit operands K-major only and only A from registers, so that dot
 * runs transposed (Cᵀ = Bᵀ Aᵀ, accelerate_dot.c): B's ring is read into
 * the transposed register fragments (tjp_wgmma_register_ring), A's ring
 * is the descriptor operand. Anything else (a loop that was not
 * pipelined) keeps mma.sync.
 *
 * The layout is fixed by the hardware, not searched (the NVMMA layout,
 * which TMA also writes): the tile as stored — its own rows, or its last
 * two dimensions swapped where its 16-byte copies run along its first
 * dimension (an A stored M-major, a B stored K-major: Triton's shared
 * `order`) — is cut into column blocks of Sw bytes (Sw = 128, 64 or 32:
 * the widest that the stored row holds), block after block; inside a
 * block, rows of Sw bytes one after another; and in every 1024-byte span
 * the 16-byte chunk bits 4..6 of the byte offset are XORed with bits
 * 7..9 (only as many as Sw/16 - 1 has: CuTe's Swizzle<3,4,3>, <2,4,3>,
 * <1,4,3>). That is a linear permutation of the tile's element indices,
 * so it is an ordinary tjp_swizzle (flip[i] = image of bit i XOR bit i),
 * and everything that already handles swizzled rings (the copies, their
 * bank count, the explainer) handles it unchanged. It is also free of
 * bank conflicts for 16-byte copies: the eight chunks of one 128-byte
 * line are eight different chunks of memory.
 *
 * An instruction's descriptor then holds the start address of its first
 * element (a row that starts an 8-row atom, so the XOR there is 0: the
 * swizzled index of that element is the address), the stride between
 * 8-row groups (SBO = 8 Sw) and, where the contiguous dimension is M or N
 * (the "transposed" operand: A stored M-major, B stored N-major), the
 * stride between column blocks (LBO = rows x Sw); K-major operands need
 * no LBO. tests/test_dot_gpu_plan.c reads every element of every
 * instruction through the PTX ISA's canonical layouts from these numbers
 * and checks it lands where the swizzle put it.
 */
#include <string.h>

#include "passes.h"

enum { MAX_ACC_REGS = 128 }; /* f32 accumulators per thread: more spills */

/* Bytes per operand element of op as wgmma takes it (2: f16, bf16; 4: f32
 * with TF32; 1: fp8, i8), 0 where it takes none; *acc the accumulator's dtype. */
static int operand_bytes(const tji_func *fn, const tji_op *op, tj_dtype *acc)
{
    tj_dtype a = tji_typeof(fn, op->args[0])->dtype, b = tji_typeof(fn, op->args[1])->dtype;
    *acc = TJ_F32;
    if ((a == TJ_F16 || a == TJ_BF16) && b == a)
        return 2;
    if (a == TJ_F32 && b == a && op->precision == TJ_PRECISION_TF32)
        return 4;
    if (tjs_dtype_is_fp8(a) && tjs_dtype_is_fp8(b))
        return 1;
    *acc = TJ_I32;
    return a == TJ_I8 && b == a ? 1 : 0;
}

int tjp_wgmma_k_major_only(const tji_func *fn, const tji_op *op)
{
    tj_dtype acc;
    return operand_bytes(fn, op, &acc) != 2;
}

/* The wgmma form of DOT op, its product computed as it is ([M, N] from A
 * [M, K] and B [K, N]) or, where swapped, transposed (Cᵀ [N, M] = Bᵀ Aᵀ,
 * the instruction's rows along N). */
static int fits(const tji_func *fn, const tji_op *op, const tjp_target *t, int swapped, int *instr_n,
                int *elem_bytes)
{
    if (!t || t->sm != 90 || !t->arch_specific || op->code != TJI_DOT || t->num_warps % 4)
        return 0;
    const tji_type *a = tji_typeof(fn, op->args[0]), *b = tji_typeof(fn, op->args[1]);
    const tji_type *r = tji_typeof(fn, op->result);
    tj_dtype acc;
    int eb = operand_bytes(fn, op, &acc);
    if (!eb || a->rank != 2 || r->dtype != acc || (op->args[2] && tji_typeof(fn, op->args[2])->dtype != acc))
        return 0;
    int32_t K = a->shape[1], rows = swapped ? b->shape[1] : a->shape[0], cols = swapped ? a->shape[0] : b->shape[1];
    int groups = t->num_warps / 4;
    if (rows % (64 * groups) || K % (32 / eb) || cols * eb < 32 || tjp_log2_exact(cols) < 0 ||
        (int64_t)rows * cols / (128 * groups) > MAX_ACC_REGS)
        return 0;
    *instr_n = cols < 256 ? cols : 256;
    *elem_bytes = eb;
    return 1;
}

int tjp_wgmma_fits(const tji_func *fn, const tji_op *op, const tjp_target *t, int *instr_n, int *elem_bytes)
{
    return fits(fn, op, t, 0, instr_n, elem_bytes);
}

int tjp_wgmma_fits_swapped(const tji_func *fn, const tji_op *op, const tjp_target *t, int *instr_n)
{
    int eb;
    return fits(fn, op, t, 1, instr_n, &eb) && eb == 4;
}

int tjp_wgmma_runs(const tji_func *fn, const tji_op *op, const tjp_target *t)
{
    int instr_n, eb;
    return tjp_wgmma_fits(fn, op, t, &instr_n, &eb) || tjp_wgmma_fits_swapped(fn, op, t, &instr_n);
}

int tjp_wgmma_reads_ring(const tjp_dot_choice *ch, int operand)
{
    return ch->form == TJP_DOT_WGMMA && (operand == 0 ? !ch->a_in_regs : !ch->b_in_regs);
}

int tjp_is_trans2(const tji_func *fn, const tji_op *op)
{
    return op->code == TJI_PERMUTE && tji_typeof(fn, op->result)->rank == 2 && op->perm[0] == 1 && op->perm[1] == 0;
}

/* Is every use of v an operand A or B of a DOT in region or, where
 * through_trans, tj_trans in region whose result is used only so? *dots:
 * how many dot operands, counted on. */
static int feeds_dots_only(const tji_func *fn, int32_t v, int32_t region, int through_trans, int *dots)
{
    for (int32_t k = 0; k < fn->nops; k++) {
        const tji_op *op = &fn->ops[k];
        for (int a = 0; op->parent >= 0 && a < op->nargs; a++) {
            if (op->args[a] != v)
                continue;
            if (op->code == TJI_DOT && op->parent == region && a < 2)
                ++*dots;
            else if (!(through_trans && op->parent == region && tjp_is_trans2(fn, op) &&
                       feeds_dots_only(fn, op->result, region, 0, dots)))
                return 0;
        }
    }
    return 1;
}

int32_t tjp_wgmma_operand_read(const tji_func *fn, int32_t v, int *trans)
{
    int32_t def = v > 0 ? tji_val(fn, v)->def_op : -1, read = def;
    *trans = def >= 0 && fn->ops[def].parent >= 0 && tjp_is_trans2(fn, &fn->ops[def]);
    if (*trans) {
        read = tji_val(fn, fn->ops[def].args[0])->def_op;
        if (read < 0 || fn->ops[read].parent != fn->ops[def].parent)
            return -1;
    }
    if (read < 0 || fn->ops[read].code != TJI_LOCAL_LOAD || fn->ops[read].parent < 0)
        return -1;
    int dots = 0;
    return feeds_dots_only(fn, fn->ops[read].result, fn->ops[read].parent, 1, &dots) && dots > 0 ? read : -1;
}

int tjp_wgmma_readers(const tji_func *fn, int32_t read)
{
    int dots = 0;
    return feeds_dots_only(fn, fn->ops[read].result, fn->ops[read].parent, 1, &dots) ? dots : 0;
}

/* Does operand `operand` of DOT op k read LOCAL_LOAD op read (directly or
 * through tj_trans)? */
static int reads_from(const tji_func *fn, int32_t k, int operand, int32_t read)
{
    int trans;
    return fn->ops[k].code == TJI_DOT && fn->ops[k].parent >= 0 &&
           tjp_wgmma_operand_read(fn, fn->ops[k].args[operand], &trans) == read;
}

int tjp_wgmma_last_reader(const tji_func *fn, int32_t dot, int operand)
{
    int trans;
    int32_t read = tjp_wgmma_operand_read(fn, fn->ops[dot].args[operand], &trans);
    if (read < 0)
        return 1;
    const tji_region *body = &fn->regions[fn->ops[read].parent];
    int after = 0;
    for (int32_t p = 0; p < body->nops; p++) {
        int32_t k = body->ops[p];
        if (k == dot) {
            after = 1;
            if (operand == 0 && reads_from(fn, k, 1, read))
                return 0;
        } else if (after && (reads_from(fn, k, 0, read) || reads_from(fn, k, 1, read))) {
            return 0;
        }
    }
    return 1;
}

/* What wgmma needs of the tile that operand `operand` of DOT op k reads
 * from its ring: 0 either order, else 1 + whether stored transposed (a
 * dtype whose operands are K-major only: A by rows, B by columns, the
 * other way round through tj_trans). */
static int stored_need(const tji_func *fn, int32_t k, int operand)
{
    return tjp_wgmma_k_major_only(fn, &fn->ops[k])
               ? 1 + ((operand == 1) != tjp_wgmma_operand_trans(fn, fn->ops[k].args[operand]))
               : 0;
}

const char *tjp_wgmma_shared_read_error(const tji_func *fn, const tjp_dot_choice *dots, int32_t ndots, int32_t dot,
                                        int operand)
{
    int trans;
    int32_t read = tjp_wgmma_operand_read(fn, fn->ops[dot].args[operand], &trans);
    if (read < 0 || !tjp_wgmma_reads_ring(&dots[dot], operand))
        return NULL;
    int need = stored_need(fn, dot, operand);
    for (int32_t k = 0; k < fn->nops && k < ndots; k++)
        for (int b = 0; b < 2; b++) {
            if ((k == dot && b == operand) || !reads_from(fn, k, b, read))
                continue;
            if (dots[k].form != TJP_DOT_WGMMA || !tjp_wgmma_reads_ring(&dots[k], b))
                return "the tile it reads from a ring is read by another dot that does not read it through "
                       "a wgmma descriptor";
            int other = stored_need(fn, k, b);
            if (need && other && other != need)
                return "two dots read the tile from its ring, one K-major by rows and one by columns, and "
                       "this dtype's wgmma reads K-major only";
        }
    return NULL;
}

int tjp_wgmma_operand_ring(const tji_func *fn, int32_t v)
{
    int trans;
    int32_t read = tjp_wgmma_operand_read(fn, v, &trans);
    return read >= 0 ? fn->ops[read].ring : -1;
}

int tjp_wgmma_operand_trans(const tji_func *fn, int32_t v)
{
    int trans;
    return tjp_wgmma_operand_read(fn, v, &trans) >= 0 && trans;
}

/* Whether every LOCAL_LOAD of ring is read by dots alone, each of them
 * in the WGMMA form through a descriptor (directly or through tj_trans);
 * *stored: 0 where the tile may be stored either way, else what
 * stored_need says (the readers agree: tjp_wgmma_shared_read_error). */
static int read_by_wgmma(const tji_func *fn, const tjp_layout_plan *plan, int ring, int *stored)
{
    int reads = 0;
    *stored = 0;
    for (int32_t i = 0; i < fn->nops; i++) {
        const tji_op *op = &fn->ops[i];
        if (op->parent < 0 || op->code != TJI_LOCAL_LOAD || op->ring != ring)
            continue;
        if (!tjp_wgmma_readers(fn, i))
            return 0;
        for (int32_t k = 0; k < fn->nops && k < plan->nops; k++)
            for (int b = 0; b < 2; b++) {
                if (!reads_from(fn, k, b, i))
                    continue;
                if (plan->dot[k].form != TJP_DOT_WGMMA || !tjp_wgmma_reads_ring(&plan->dot[k], b))
                    return 0;
                int need = stored_need(fn, k, b);
                if (need && *stored && need != *stored)
                    return 0;
                if (need)
                    *stored = need;
            }
        reads++;
    }
    return reads > 0;
}

/* Whether the copies into ring run along the tile's first dimension (their
 * vectors' first register moves one row): store it transposed. */
static int copies_along_rows(const tji_func *fn, const tjp_layout_plan *plan, int ring, int32_t cols)
{
    int along = 0, across = 0;
    for (int32_t i = 0; i < fn->nops; i++) {
        const tji_op *op = &fn->ops[i];
        if (op->parent < 0 || op->code != TJI_ASYNC_COPY || op->ring != ring)
            continue;
        const tjp_layout *W = &plan->of[op->args[0]];
        int vector = plan->vector && i < plan->nops ? plan->vector[i] : 1;
        if (vector >= 2 && W->nbits[TJP_REG] && W->basis[TJP_REG][0] == (uint32_t)cols)
            along++;
        else
            across++;
    }
    return along && !across;
}

/* The NVMMA index of element e of a rows x cols tile (essay), stored
 * transposed or not, in rows of sw bytes. */
static uint32_t nvmma_index(uint32_t e, int32_t rows, int32_t cols, int transposed, int sw, int eb)
{
    int cbits = tjp_log2_exact(cols);
    uint32_t r = (e >> cbits) & (uint32_t)(rows - 1), c = e & (uint32_t)(cols - 1);
    uint32_t sr = transposed ? c : r, sc = transposed ? r : c, stored_rows = (uint32_t)(transposed ? cols : rows);
    uint32_t per_row = (uint32_t)(sw / eb);
    uint32_t u = (sc / per_row) * stored_rows * (uint32_t)sw + sr * (uint32_t)sw + (sc % per_row) * (uint32_t)eb;
    u ^= ((u >> 7) & (uint32_t)(sw / 16 - 1)) << 4;
    return u / (uint32_t)eb;
}

void tjp_nvmma_swizzle(int32_t rows, int32_t cols, int transposed, int sw, int eb, tjp_swizzle *out)
{
    memset(out, 0, sizeof *out);
    out->elem_bytes = eb;
    int bits = tjp_log2_exact((int64_t)rows * cols);
    for (int i = 0; i < bits; i++)
        out->flip[i] = nvmma_index(1u << i, rows, cols, transposed, sw, eb) ^ (1u << i);
}

int tjp_wgmma_ring(const tji_func *fn, const tjp_layout_plan *plan, int ring, tjp_ring *R)
{
    int stored;
    if (R->op < 0 || !plan->dot || !read_by_wgmma(fn, plan, ring, &stored))
        return 0;
    const tji_op *first = &fn->ops[R->op];
    const tji_type *t = tji_typeof(fn, first->code == TJI_ASYNC_COPY ? first->args[0] : first->result);
    if (t->rank != 2)
        return 0;
    int32_t rows = t->shape[0], cols = t->shape[1];
    /* K-major where the dtype needs it, even where the copies then narrow:
     * accelerate_dot.c chose wgmma for those only where the loads run along K */
    int transposed = stored ? stored == 2 : copies_along_rows(fn, plan, ring, cols), eb = R->elem_bytes;
    int64_t row_bytes = (int64_t)(transposed ? rows : cols) * eb;
    int sw = row_bytes >= 128 ? 128 : row_bytes >= 64 ? 64 : 32;
    if (row_bytes < 32)
        return 0;
    tjp_nvmma_swizzle(rows, cols, transposed, sw, eb, &R->swizzle);
    R->ldmatrix = R->ldmatrix_trans = R->read_at_use = 0;
    R->wgmma = 1;
    R->transposed = transposed;
    R->swizzle_bytes = sw;
    return 1;
}

int tjp_wgmma_register_ring(const tji_func *fn, const tjp_layout_plan *plan, int ring)
{
    int reads = 0;
    for (int32_t i = 0; plan->dot && i < fn->nops; i++) {
        const tji_op *op = &fn->ops[i];
        if (op->parent < 0 || op->code != TJI_LOCAL_LOAD || op->ring != ring)
            continue;
        int fed = 0, alone = tjp_wgmma_operand_ring(fn, op->result) == ring && tjp_wgmma_readers(fn, i) == 1;
        for (int32_t k = 0; alone && k < fn->nops && k < plan->nops; k++) /* (in registers: one dot's tile) */
            for (int a = 0; a < 2 && fn->ops[k].code == TJI_DOT && fn->ops[k].parent >= 0; a++)
                fed += fn->ops[k].args[a] == op->result && plan->dot[k].form == TJP_DOT_WGMMA &&
                       !tjp_wgmma_reads_ring(&plan->dot[k], a);
        if (!fed)
            return 0;
        reads++;
    }
    return reads > 0;
}

void tjp_wgmma_view(const tjp_ring *R, const tji_type *stored, int trans, tjp_ring *out)
{
    *out = *R;
    if (!trans)
        return;
    /* element (r, c) of the transpose is (c, r) of the stored tile: the
     * index bits of the one are the other's, columns and rows swapped */
    int rbits = tjp_log2_exact(stored->shape[0]), cbits = tjp_log2_exact(stored->shape[1]);
    out->transposed = !R->transposed;
    for (int i = 0; i < rbits + cbits; i++) {
        uint32_t view_bit = 1u << i; /* the transpose is [cols, rows]: its low rbits index stored rows */
        uint32_t bit = i < rbits ? 1u << (cbits + i) : 1u << (i - rbits);
        out->swizzle.flip[i] = tjp_swizzle_apply(&R->swizzle, bit) ^ view_bit;
    }
}

void tjp_wgmma_operand(const tjp_ring *R, const tji_type *t, int is_b, tjp_wgmma_desc *out)
{
    uint32_t stored_rows = (uint32_t)(R->transposed ? t->shape[1] : t->shape[0]), sw = (uint32_t)R->swizzle_bytes;
    out->k_major = is_b ? R->transposed : !R->transposed;
    out->lbo = out->k_major ? 16 : stored_rows * sw;
    out->sbo = 8 * sw;
    out->mode = sw == 128 ? 1 : sw == 64 ? 2 : 3;
}

uint64_t tjp_wgmma_offset(const tjp_ring *R, const tji_type *t, uint32_t row, uint32_t col)
{
    uint32_t e = row << tjp_log2_exact(t->shape[1]) | col;
    return (uint64_t)tjp_swizzle_apply(&R->swizzle, e) * (uint64_t)R->elem_bytes;
}
