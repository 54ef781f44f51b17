/* SPDX-License-Identifier: MIT */
/*
 * accelerate_dot.c — how each tj_dot runs on the GPU (Triton's
 * AccelerateMatmul).
 *
 * A DOT runs in one of three forms, chosen here per op and kept in the plan
 * (plan->dot), printed as "#dot<...>" and read back (plan_text.c), shown
 * by the explainer:
 *
 *  - WGMMA (sm_90a): wgmma.mma_async with both operands read from the
 *    rings of pipelined loads, where wgmma.c's tjp_wgmma_fits allows it
 *    (and, for operands whose wgmma is K-major only, axis info says the
 *    loads run along K, or they are 4-byte cp.async copies, which
 *    transpose_copies.c makes store the tile transposed); asynchronous
 *    where the accumulator is carried
 *    by the loop and nothing else reads it, and then the zeros it starts
 *    from are skipped (the first step overwrites). With 16-bit operands
 *    B alone may come from a ring and A from registers (attention: Q
 *    loaded before the loop, P computed from the first dot's scores);
 *    such a dot waits for its group at once, and an accumulator that is
 *    a +0.0 constant is skipped the same way. TF32 with one operand's
 *    loads along K and the other's along M or N reads the latter from
 *    its ring into registers rather than through transposing copies,
 *    which move 4 bytes each (0.53 of cuBLAS on an H100): A as wgmma's
 *    register operand (A stored K x M, B N x K), or B by running the
 *    product transposed (NN, tjp_wgmma_fits_swapped: Cᵀ = Bᵀ Aᵀ, A's
 *    ring the descriptor operand). Asynchronous as the others are, but
 *    with a group per K step: the registers of a step are loaded again
 *    next iteration only once the instructions that read them are done.
 *    A tile that several dots read is read through descriptors by all of
 *    them or by none: where one cannot (no wgmma, a register form, the
 *    other K-major order of a TF32 or fp8 tile), the others are chosen
 *    again without that ring (16-bit A from registers; else mma.sync).
 *
 *  - MMA: warp-wide mma.sync on tensor cores, for f16/bf16 (m16n8k16), f32
 *    with input_precision TF32 (m16n8k8 .tf32; TF32x3 as three of them per
 *    step, a_lo*b_hi + a_hi*b_lo + a_hi*b_hi), i8 (m16n8k32 .s8 -> s32) and
 *    fp8 (e4m3, e5m2, one of each: m16n8k32 .e4m3/.e5m2 -> f32 on sm_89
 *    and later, whose fragments are i8's, elem_bytes 1; before sm_89, or
 *    with K = 16, f16's m16n8k16, elem_bytes 2, each register widened to
 *    f16 where the fragments are packed, exactly), on sm_80 and later,
 *    where the tile fits the instruction: M >= 16 per warp, N >= 8 per
 *    warp, K >= the instruction's K. The result lives in
 *    the accumulator's layout and the operands in A's and B's
 *    (layout_mma.c), split over warps along M first, as Triton does; a
 *    dot whose A operand is another dot's result (attention's second
 *    dot) and that one split M only where M has 16 rows per warp, so
 *    that the accumulator is the A operand in the same threads: a
 *    register copy, no shared memory.
 *  - FMA: every thread computes the elements of the result it holds with
 *    one fused multiply-add per k, k in order — the CPU reference's order,
 *    so f32 IEEE agrees with the CPU; it takes whatever MMA cannot (f32
 *    IEEE, tiles too small for the instruction, a target before sm_80). It
 *    works in any layout of the result: A is that layout projected on the
 *    rows with all of K in each thread's registers, B projected on the
 *    columns.
 *
 * tjp_assign_layouts (layout_assign.c) reads the choice: the result gets
 * the accumulator layout (MMA) and the operands are asked in
 * tjp_dot_operand_layouts's, so the conversions of loaded tiles into them
 * go through shared memory like any other (swizzle.c, alloc_shared.c,
 * barriers.c).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes.h"

/* The MMA instruction for the operands' dtype and precision, on target sm
 * with K along k: elem_bytes (2, 4 for tf32, 1), passes (3 for tf32x3); 0
 * where there is none. fp8 takes its own m16n8k32 where the target has it
 * (sm_89) and K fills one, else f16's m16n8k16, widened in registers. */
static int mma_kind(const tji_op *op, tj_dtype in, int sm, int32_t K, int *elem_bytes, int *passes)
{
    *passes = 1;
    switch (in) {
    case TJ_F16: case TJ_BF16: *elem_bytes = 2; return 1;
    case TJ_I8: *elem_bytes = 1; return 1;
    case TJ_F8E4M3: case TJ_F8E5M2: *elem_bytes = sm >= 89 && K >= 32 ? 1 : 2; return 1;
    case TJ_F32:
        if (op->precision == TJ_PRECISION_IEEE)
            return 0;
        *elem_bytes = 4;
        *passes = op->precision == TJ_PRECISION_TF32X3 ? 3 : 1;
        return 1;
    default:
        return 0;
    }
}

/* The number of operands of ops (in any region) that are v. */
static int uses_of(const tji_func *fn, int32_t v)
{
    int n = 0;
    for (int32_t k = 0; k < fn->nops; k++)
        for (int a = 0; fn->ops[k].parent >= 0 && a < fn->ops[k].nargs; a++)
            n += fn->ops[k].args[a] == v;
    return n;
}

/* Is v +0.0 in every element (a constant, splat or not)? */
static int is_positive_zero(const tji_func *fn, int32_t v)
{
    int32_t d = fn->values[v].def_op;
    if (d >= 0 && fn->ops[d].code == TJI_SPLAT)
        d = fn->values[fn->ops[d].args[0]].def_op;
    return d >= 0 && fn->ops[d].code == TJI_CONST && fn->ops[d].ival == 0 && fn->ops[d].fval == 0 &&
           !signbit(fn->ops[d].fval);
}

/* The FOR whose body is region, or -1. */
static int32_t loop_of_body(const tji_func *fn, int32_t region)
{
    for (int32_t i = 0; i < fn->nops; i++)
        if (fn->ops[i].parent >= 0 && fn->ops[i].code == TJI_FOR && fn->ops[i].region[0] == region)
            return i;
    return -1;
}

/* Does the dot accumulate into a value its loop carries that nothing else
 * reads, and yield its result to nothing else (the next iteration's
 * wgmma takes it as it is)? *zero_init: the accumulator enters the loop
 * as +0.0. */
static int carried_in_loop(const tji_func *fn, const tji_op *op, int *zero_init)
{
    const tji_region *body = &fn->regions[op->parent];
    int32_t yield = body->nops ? body->ops[body->nops - 1] : -1, loop = loop_of_body(fn, op->parent);
    if (loop < 0 || yield < 0 || fn->ops[yield].code != TJI_YIELD || !op->args[2])
        return 0;
    int k = -1;
    for (int i = 1; i < body->nargs; i++)
        if (body->args[i] == op->args[2])
            k = i - 1;
    if (k < 0 || k >= fn->ops[yield].nargs || fn->ops[yield].args[k] != op->result ||
        uses_of(fn, op->args[2]) != 1 || uses_of(fn, op->result) != 1)
        return 0;
    *zero_init = is_positive_zero(fn, fn->ops[loop].args[3 + k]);
    return 1;
}

/* Does the dot's wgmma group stay in flight across iterations? Where it
 * is carried in its loop (the loop's end waits for it), and its rings
 * have the slot more that keeps the one it reads from being refilled next
 * iteration (pipeline loops: slots >= groups in flight + 2). */
static int async_in_loop(const tji_func *fn, const tji_op *op, int *zero_init)
{
    if (!carried_in_loop(fn, op, zero_init))
        return 0;
    const tji_region *body = &fn->regions[op->parent];
    int32_t wait = -1;
    for (int32_t p = 0; p < body->nops && wait < 0; p++)
        if (fn->ops[body->ops[p]].code == TJI_ASYNC_WAIT)
            wait = body->ops[p];
    for (int a = 0; a < 2; a++) {
        int trans;
        int32_t read = tjp_wgmma_operand_read(fn, op->args[a], &trans);
        if (wait < 0 || read < 0 || fn->ops[read].ring_slots < fn->ops[wait].ival + 3)
            return 0;
    }
    return 1;
}

/* What a plan read back may claim of a wgmma (plan_finish.c): a TF32
 * register operand only where this dot alone reads its tile (choose's
 * `alone`), async only where async_in_loop holds (else the producer's
 * tail would wait for a slot no wait ever frees), skip-zero-init only
 * where the zeros are there to skip — the accumulator a constant +0.0, or
 * a loop argument that enters as one (wgmma.c overwrites on the loop's
 * first iteration). */
const char *tjp_wgmma_claim_error(const tji_func *fn, const tji_op *op, const tjp_dot_choice *ch)
{
    int zero_init = 0, trans;
    /* a TF32 register operand's reads wait for their K step: one dot's */
    int32_t regs = ch->b_in_regs || (ch->a_in_regs && ch->elem_bytes == 4)
                       ? tjp_wgmma_operand_read(fn, op->args[ch->b_in_regs ? 1 : 0], &trans) : -1;
    if (regs >= 0 && tjp_wgmma_readers(fn, regs) != 1)
        return "'a-regs'/'b-regs' with tf32: the register operand's tile is read by another dot too (its reads "
               "wait for this dot's K steps)";
    if (ch->async && !async_in_loop(fn, op, &zero_init))
        return "'async': the accumulator is not carried by its loop alone, or a ring lacks the slot that the "
               "group left in flight reads (slots >= groups in flight + 3)";
    if (!ch->skip_zero_init || !op->args[2])
        return NULL;
    const tji_region *body = &fn->regions[op->parent];
    int32_t loop = loop_of_body(fn, op->parent);
    for (int i = 1; loop >= 0 && i < body->nargs; i++)
        if (body->args[i] == op->args[2]) /* FOR: (lo, hi, step, initial values...) */
            return is_positive_zero(fn, fn->ops[loop].args[3 + i - 1])
                       ? NULL : "'skip-zero-init': the accumulator's loop argument does not enter as +0.0";
    return is_positive_zero(fn, op->args[2]) ? NULL : "'skip-zero-init': the accumulator is not +0.0";
}

/* Do the copies into the ring of value v run along dimension dim of v
 * (coalesce.c puts them along the pointer's most contiguous dimension,
 * the last on ties; a ring read through tj_trans holds v transposed)? */
static int loads_along(const tji_func *fn, const tjp_axis_info_result *axis, int32_t v, int dim)
{
    int ring = tjp_wgmma_operand_ring(fn, v), copies = 0;
    if (tjp_wgmma_operand_trans(fn, v))
        dim = 1 - dim;
    for (int32_t i = 0; axis && i < fn->nops; i++) {
        const tji_op *op = &fn->ops[i];
        if (op->parent < 0 || op->code != TJI_ASYNC_COPY || op->ring != ring)
            continue;
        const int32_t *c = axis->of[op->args[0]].contiguity;
        if ((c[0] > c[1]) != (dim == 0))
            return 0;
        copies++;
    }
    return copies > 0;
}

/* Do the copies into the ring of operand v (0: A, 1: B) run along K, so
 * that the ring is stored K-major with 16-byte copies? */
static int loads_along_k(const tji_func *fn, const tjp_axis_info_result *axis, int32_t v, int is_b)
{
    return loads_along(fn, axis, v, is_b ? 0 : 1);
}

/* Can the ring of operand v be stored K-major: its copies run along K, or
 * transpose_copies.c can make 4-byte copies store it transposed? */
static int k_major_ring(const tji_func *fn, const tjp_axis_info_result *axis, int32_t v, int is_b, int eb)
{
    return loads_along_k(fn, axis, v, is_b) || tjp_wgmma_transposable(fn, v, eb);
}

/* May operand v be read from its ring through a descriptor: a LOCAL_LOAD
 * that only dots read (tjp_wgmma_operand_read), not refused (per op index:
 * another dot reads that tile otherwise)? */
static int ring_operand(const tji_func *fn, int32_t v, const uint8_t *refused)
{
    int trans;
    int32_t read = tjp_wgmma_operand_read(fn, v, &trans);
    return read >= 0 && !refused[read];
}

/* Is operand v a ring's tile that this dot alone reads? */
static int sole_reader(const tji_func *fn, int32_t v)
{
    int trans;
    int32_t read = tjp_wgmma_operand_read(fn, v, &trans);
    return read >= 0 && tjp_wgmma_readers(fn, read) == 1;
}

static tjp_dot_choice choose(const tji_func *fn, const tji_op *op, const tjp_target *t,
                             const tjp_axis_info_result *axis, const uint8_t *refused)
{
    tjp_dot_choice ch = {.form = TJP_DOT_FMA};
    int sm = t ? t->sm : 0, num_warps = t ? t->num_warps : 4, instr_n, eb, zero_init = 0;
    int a_ring = ring_operand(fn, op->args[0], refused);
    /* TF32 with one operand's loads along M or N: that operand from
     * registers (faster than copies that store it transposed: those move
     * 4 bytes each) — A as it is (A along M, B along K), B through the
     * transposed product (NN); not where another dot reads either tile. */
    int b_ring = ring_operand(fn, op->args[1], refused), along_k[2], across_k[2];
    for (int a = 0; a < 2; a++) {
        along_k[a] = loads_along(fn, axis, op->args[a], a == 0 ? 1 : 0);
        across_k[a] = loads_along(fn, axis, op->args[a], a == 0 ? 0 : 1);
    }
    /* (a ring read through tj_trans only through a descriptor) */
    int any_trans = tjp_wgmma_operand_trans(fn, op->args[0]) || tjp_wgmma_operand_trans(fn, op->args[1]);
    int alone = sole_reader(fn, op->args[0]) && sole_reader(fn, op->args[1]);
    int a_regs = !any_trans && alone && across_k[0] && along_k[1] && tjp_wgmma_fits(fn, op, t, &instr_n, &eb) &&
                 eb == 4;
    int b_regs = !any_trans && alone && !a_regs && along_k[0] && across_k[1] &&
                 tjp_wgmma_fits_swapped(fn, op, t, &instr_n);
    if (a_ring && b_ring && (a_regs || b_regs)) {
        int async = async_in_loop(fn, op, &zero_init);
        if (!async && !carried_in_loop(fn, op, &zero_init))
            zero_init = op->args[2] && is_positive_zero(fn, op->args[2]);
        return (tjp_dot_choice){.form = TJP_DOT_WGMMA, .elem_bytes = 4, .passes = 1, .warps_m = num_warps,
                                .warps_n = 1, .instr_n = instr_n, .async = async, .skip_zero_init = zero_init,
                                .a_in_regs = a_regs, .b_in_regs = b_regs};
    }
    if (tjp_wgmma_fits(fn, op, t, &instr_n, &eb) && b_ring &&
        (a_ring || eb == 2) &&
        (!tjp_wgmma_k_major_only(fn, op) ||
         (k_major_ring(fn, axis, op->args[0], 0, eb) && k_major_ring(fn, axis, op->args[1], 1, eb)))) {
        /* A in registers may change while a group is in flight: wait */
        int async = a_ring && async_in_loop(fn, op, &zero_init);
        if (!async)
            zero_init = op->args[2] && is_positive_zero(fn, op->args[2]);
        return (tjp_dot_choice){.form = TJP_DOT_WGMMA, .elem_bytes = eb, .passes = 1, .warps_m = num_warps,
                                .warps_n = 1, .instr_n = instr_n, .async = async, .skip_zero_init = zero_init,
                                .a_in_regs = !a_ring};
    }
    const tji_type *a = tji_typeof(fn, op->args[0]), *b = tji_typeof(fn, op->args[1]);
    int rank = a->rank, elem_bytes, passes;
    int32_t M = a->shape[rank - 2], K = a->shape[rank - 1], N = b->shape[rank - 1];
    if (!mma_kind(op, a->dtype, sm, K, &elem_bytes, &passes)) {
        ch.why = a->dtype == TJ_F32 ? "f32 with input_precision IEEE: the CPU's fma order"
                                    : "no mma.sync for this dtype";
        return ch;
    }
    if (sm < 80) {
        ch.why = sm ? "mma.sync needs sm_80 or later" : "no target with tensor cores";
        return ch;
    }
    int wm, wn;
    tjp_mma_warps(M, N, num_warps, &wm, &wn);
    int kin = 8 * tjp_mma_elems_per_reg(elem_bytes); /* the instruction's K */
    if (M / wm < 16 || N / wn < 8 || K < kin) {
        ch.why = "the tile is smaller than one instruction per warp";
        return ch;
    }
    ch.form = TJP_DOT_MMA;
    ch.elem_bytes = elem_bytes;
    ch.passes = passes;
    ch.warps_m = wm;
    ch.warps_n = wn;
    return ch;
}

/* The MMA dot whose result a's value is computed from through element-wise
 * ops (attention's p = f16(exp2(s * scale - m)): the walk follows every
 * operand, so the row maxima broadcast back into it do not hide s); -1 if
 * none. */
static int32_t producer_dot(const tji_func *fn, const tjp_layout_plan *plan, int32_t v, int depth)
{
    int32_t def = v > 0 ? tji_val(fn, v)->def_op : -1;
    if (def < 0 || depth > 8)
        return -1;
    const tji_op *d = &fn->ops[def];
    if (d->code == TJI_DOT)
        return plan->dot[def].form == TJP_DOT_MMA ? def : -1;
    if (!tji_is_elementwise(d->code))
        return -1;
    for (int a = 0; a < d->nargs; a++) {
        int32_t found = producer_dot(fn, plan, d->args[a], depth + 1);
        if (found >= 0)
            return found;
    }
    return -1;
}

tj_status tjp_accelerate_dots(const tji_func *fn, const tjp_target *t, const tjp_axis_info_result *axis,
                              tjp_layout_plan *plan)
{
    int num_warps = t ? t->num_warps : 4;
    free(plan->dot);
    plan->dot = tjs_xcalloc((size_t)fn->nops + 1, sizeof *plan->dot);
    /* A tile that several dots read is read through descriptors by all of
     * them or by none (its ring is in the NVMMA layout or not): choose,
     * refuse the ring reads where the dots disagree, choose again. Each
     * round refuses one read more, or is the last. */
    uint8_t *refused = tjs_xcalloc((size_t)fn->nops + 1, 1);
    for (int again = 1; again;) {
        again = 0;
        for (int32_t i = 0; i < fn->nops; i++)
            if (fn->ops[i].code == TJI_DOT && fn->ops[i].parent >= 0)
                plan->dot[i] = choose(fn, &fn->ops[i], t, axis, refused);
        for (int32_t i = 0; i < fn->nops; i++)
            for (int a = 0; a < 2 && fn->ops[i].code == TJI_DOT && fn->ops[i].parent >= 0; a++) {
                int trans;
                int32_t read = tjp_wgmma_operand_read(fn, fn->ops[i].args[a], &trans);
                if (read >= 0 && !refused[read] && tjp_wgmma_shared_read_error(fn, plan->dot, fn->nops, i, a))
                    refused[read] = again = 1;
            }
    }
    free(refused);
    /* A chained dot (attention): where every warp can take rows of its own,
     * both dots split only M, so that the first's accumulator is the
     * second's A operand in the same threads (a register copy). */
    for (int32_t i = 0; i < fn->nops; i++) {
        if (fn->ops[i].code != TJI_DOT || plan->dot[i].form != TJP_DOT_MMA)
            continue;
        int32_t first = producer_dot(fn, plan, fn->ops[i].args[0], 0);
        const tji_type *t = tji_typeof(fn, fn->ops[i].args[0]);
        if (first < 0 || t->shape[t->rank - 2] / 16 < num_warps)
            continue;
        int32_t rows[2] = {i, first};
        for (int k = 0; k < 2; k++) {
            plan->dot[rows[k]].warps_m = num_warps;
            plan->dot[rows[k]].warps_n = 1;
        }
    }
    return TJ_OK;
}

const char *tjp_mma_instruction(const tji_func *fn, const tji_op *op, const tjp_dot_choice *ch)
{
    tj_dtype a = tji_typeof(fn, op->args[0])->dtype, b = tji_typeof(fn, op->args[1])->dtype;
    if (ch->elem_bytes == 1 && tjs_dtype_is_fp8(a)) /* A's type, then B's where it differs */
        return a == TJ_F8E4M3 ? (b == a ? "m16n8k32.e4m3" : "m16n8k32.e4m3.e5m2")
                              : (b == a ? "m16n8k32.e5m2" : "m16n8k32.e5m2.e4m3");
    return ch->elem_bytes == 1 ? "m16n8k32.s8" : ch->elem_bytes == 4 ? "m16n8k8.tf32" : "m16n8k16";
}

/* --- the layouts a form needs ------------------------------------------------ */

/* e's row (dimension rank-2) or column (rank-1) part and its batch, as the
 * element index of a tile whose other dimension has `other` elements. */
static uint32_t project(uint32_t e, int keep_row, int col_bits, int row_bits, int out_other_bits)
{
    uint32_t col = e & ((1u << col_bits) - 1), row = (e >> col_bits) & ((1u << row_bits) - 1);
    uint32_t batch = e >> (col_bits + row_bits);
    if (keep_row) /* [.., M, K]: the row, K bits zero */
        return (batch << (row_bits + out_other_bits)) | (row << out_other_bits);
    return (batch << (out_other_bits + col_bits)) | col; /* [.., K, N] */
}

static int ilog2(int32_t x)
{
    int n = 0;
    while ((1 << n) < x)
        n++;
    return n;
}

/* FMA: A (keep_row) or B from the result's layout C, K in registers first. */
static int fma_operand(tjp_layout *out, const tjp_layout *C, const tji_type *t, int keep_row)
{
    int rank = C->rank, col_bits = ilog2(C->shape[rank - 1]), row_bits = ilog2(C->shape[rank - 2]);
    int kbits = ilog2(keep_row ? t->shape[rank - 1] : t->shape[rank - 2]);
    memset(out, 0, sizeof *out);
    out->rank = rank;
    for (int d = 0; d < rank; d++)
        out->shape[d] = t->shape[d];
    uint32_t kstep = keep_row ? 1u : 1u << col_bits;
    for (int i = 0; i < kbits; i++)
        out->basis[TJP_REG][out->nbits[TJP_REG]++] = kstep << i;
    uint32_t seen = 0; /* the spanned elements' bits: single-bit bases only */
    for (int in = 0; in < TJP_NIN; in++)
        for (int b = 0; b < C->nbits[in]; b++) {
            uint32_t v = project(C->basis[in][b], keep_row, col_bits, row_bits, kbits);
            if (v & (v - 1))
                return 0;
            if (v && (seen & v)) {
                if (in == TJP_REG)
                    continue; /* a register of C along the other dimension */
                return 0;
            }
            seen |= v;
            if (in == TJP_REG) {
                if (!v)
                    continue;
                if (out->nbits[TJP_REG] >= TJP_MAX_BITS)
                    return 0;
            }
            out->basis[in][out->nbits[in]++] = v;
        }
    return 1;
}

int tjp_dot_result_layout(const tji_func *fn, const tji_op *op, const tjp_dot_choice *ch, int num_warps,
                          tjp_layout *out)
{
    const int32_t *shape = tji_typeof(fn, op->result)->shape;
    if (ch->form == TJP_DOT_WGMMA && ch->b_in_regs) { /* the transposed product's accumulator */
        tjp_layout t;
        if (!tjp_layout_wgmma_acc(&t, (int32_t[]){shape[1], shape[0]}, num_warps, ch->instr_n))
            return 0;
        tjp_layout_transpose(out, &t);
        return 1;
    }
    if (ch->form == TJP_DOT_WGMMA)
        return tjp_layout_wgmma_acc(out, shape, num_warps, ch->instr_n);
    if (ch->form != TJP_DOT_MMA)
        return 0;
    const tji_type *t = tji_typeof(fn, op->result);
    return tjp_layout_mma(out, TJP_MMA_ACC, ch->elem_bytes, t->rank, t->shape, ch->warps_m, ch->warps_n,
                          num_warps);
}

/* The layout a descriptor operand v asks for (none is emitted): the
 * default of the ring's tile as stored, so that a tile read by several
 * dots, some through tj_trans, needs no conversion for any of them. */
static void ring_operand_layout(const tji_func *fn, int32_t v, int num_warps, tjp_layout *out)
{
    const tji_type *t = tji_typeof(fn, v);
    if (!tjp_wgmma_operand_trans(fn, v)) {
        tjp_layout_default(out, t->rank, t->shape, num_warps);
        return;
    }
    tjp_layout stored;
    tjp_layout_default(&stored, 2, (int32_t[]){t->shape[1], t->shape[0]}, num_warps);
    tjp_layout_transpose(out, &stored);
}

int tjp_dot_operand_layouts(const tji_func *fn, const tji_op *op, const tjp_dot_choice *ch, int num_warps,
                            const tjp_layout *C, tjp_layout *a, tjp_layout *b)
{
    const tji_type *ta = tji_typeof(fn, op->args[0]), *tb = tji_typeof(fn, op->args[1]);
    if (ch->form == TJP_DOT_WGMMA) { /* read from shared memory (but an operand in registers): any layout */
        tjp_layout bt;
        if (ch->a_in_regs && !tjp_layout_wgmma_a(a, ta->shape, num_warps, ch->elem_bytes))
            return 0;
        if (ch->b_in_regs && !tjp_layout_wgmma_a(&bt, (int32_t[]){tb->shape[1], tb->shape[0]}, num_warps, 4))
            return 0;
        if (!ch->a_in_regs)
            ring_operand_layout(fn, op->args[0], num_warps, a);
        if (ch->b_in_regs)
            tjp_layout_transpose(b, &bt);
        else
            ring_operand_layout(fn, op->args[1], num_warps, b);
        return 1;
    }
    if (ch->form == TJP_DOT_MMA)
        return tjp_layout_mma(a, TJP_MMA_A, ch->elem_bytes, ta->rank, ta->shape, ch->warps_m, ch->warps_n,
                              num_warps) &&
               tjp_layout_mma(b, TJP_MMA_B, ch->elem_bytes, tb->rank, tb->shape, ch->warps_m, ch->warps_n,
                              num_warps);
    return fma_operand(a, C, ta, 1) && fma_operand(b, C, tb, 0);
}
