/* SPDX-License-Identifier: MIT */
/*
 * registers.c — layouts to registers: which element each register of each
 * thread holds, and the ops that only rename registers.
 *
 * The lane and warp part of a layout's element index is computed once per
 * layout in the entry block; the register part is a constant, so ARANGE
 * (start + coordinate), masks and offsets fold to few instructions. Tile
 * dims are powers of two, so a coordinate is a bit field of the index.
 *
 * Copies. A zero basis means a copy: registers selected by such bits are
 * copies of a register of the same thread (computed once, then reused),
 * lanes and warps selected by them hold the same elements as their twins.
 * Sinks that must happen once (stores, atomics, prints) are done only by
 * the owning slot, the one whose duplicated bits are all 0 (owner_cond).
 *
 * Element-wise ops work register by register (math.c has the arithmetic).
 * The layout pass (passes.h) made BROADCAST, EXPAND_DIMS, RESHAPE and
 * PERMUTE operands hold, in the same register of the same thread, the
 * element the result needs; that is checked here on the layouts' bases
 * (the maps are linear) and then they are register copies.
 */
#include <stdlib.h>
#include <string.h>

#include "gen.h"

/* --- layouts ------------------------------------------------------------------------- */

int tjj_gpu_bases_independent(const tjp_layout *L)
{
    uint32_t pivots[3 * TJP_MAX_BITS];
    int n = 0;
    for (int in = 0; in < TJP_NIN; in++)
        for (int b = 0; b < L->nbits[in]; b++) {
            uint32_t x = L->basis[in][b];
            if (!x)
                continue;
            for (int p = 0; p < n; p++)
                if ((x ^ pivots[p]) < x)
                    x ^= pivots[p];
            if (!x)
                return 0;
            int pos = n++;
            while (pos > 0 && pivots[pos - 1] < x) {
                pivots[pos] = pivots[pos - 1];
                pos--;
            }
            pivots[pos] = x;
        }
    return 1;
}

/* The lane/warp part of the element index of layout L, computed once in
 * the entry block. */
LLVMValueRef tjj_gpu_thread_index(codegen *c, const tjp_layout *L)
{
    for (int i = 0; i < c->nparts; i++) {
        thread_part *p = &c->parts[i];
        if (p->nbits[TJP_LANE] == L->nbits[TJP_LANE] && p->nbits[TJP_WARP] == L->nbits[TJP_WARP] &&
            !memcmp(p->lane, L->basis[TJP_LANE], sizeof(uint32_t) * (size_t)L->nbits[TJP_LANE]) &&
            !memcmp(p->warp, L->basis[TJP_WARP], sizeof(uint32_t) * (size_t)L->nbits[TJP_WARP]))
            return p->index;
    }
    LLVMValueRef idx = c_i32(c, 0);
    LLVMValueRef in[TJP_NIN] = {NULL, c->lane, c->warp};
    /* Bits b..b+k-1 whose bases are one power of two doubling (a blocked
     * layout's field) move as one bit field: shift, mask, scale. */
    for (int level = TJP_LANE; level <= TJP_WARP; level++)
        for (int b = 0, k; b < L->nbits[level]; b += k) {
            uint32_t basis = L->basis[level][b];
            k = 1;
            if (!basis)
                continue;
            while (!(basis & (basis - 1)) && b + k < L->nbits[level] && basis << k &&
                   L->basis[level][b + k] == basis << k)
                k++;
            LLVMValueRef field = LLVMBuildAnd(c->eb, LLVMBuildLShr(c->eb, in[level], c_i32(c, b), ""),
                                              c_i32(c, (1 << k) - 1), "");
            idx = LLVMBuildXor(c->eb, idx, LLVMBuildMul(c->eb, field, c_i32(c, basis), ""), "");
        }
    if (c->nparts == c->parts_cap) {
        c->parts_cap = c->parts_cap ? 2 * c->parts_cap : 8;
        c->parts = tjs_xrealloc(c->parts, (size_t)c->parts_cap * sizeof *c->parts);
    }
    thread_part *p = &c->parts[c->nparts++];
    memset(p, 0, sizeof *p);
    memcpy(p->nbits, L->nbits, sizeof p->nbits);
    memcpy(p->lane, L->basis[TJP_LANE], sizeof(uint32_t) * (size_t)L->nbits[TJP_LANE]);
    memcpy(p->warp, L->basis[TJP_WARP], sizeof(uint32_t) * (size_t)L->nbits[TJP_WARP]);
    p->index = idx;
    return idx;
}

/* Row-major index (i32) of the element in register r of this thread. */
LLVMValueRef tjj_gpu_element_index(codegen *c, const tjp_layout *L, uint32_t r)
{
    return LLVMBuildXor(c->g.b, tjj_gpu_thread_index(c, L), c_i32(c, tjp_layout_apply(L, r, 0, 0)), "");
}

LLVMValueRef tjj_gpu_coordinate(codegen *c, const tji_type *t, LLVMValueRef index, int d)
{
    LLVMValueRef v = LLVMBuildLShr(c->g.b, index, c_i32(c, dim_shift(t, d)), "");
    return LLVMBuildAnd(c->g.b, v, c_i32(c, t->shape[d] - 1), "");
}

/* True in the thread that owns its elements of layout L (NULL: every thread). */
LLVMValueRef tjj_gpu_owner_cond(codegen *c, const tjp_layout *L)
{
    uint32_t lane_dup = thread_dup_mask(c, L, TJP_LANE), warp_dup = thread_dup_mask(c, L, TJP_WARP);
    LLVMValueRef cond = NULL;
    if (lane_dup)
        cond = LLVMBuildICmp(c->eb, LLVMIntEQ, LLVMBuildAnd(c->eb, c->lane, c_i32(c, lane_dup), ""),
                             c_i32(c, 0), "");
    if (warp_dup) {
        LLVMValueRef w = LLVMBuildICmp(c->eb, LLVMIntEQ, LLVMBuildAnd(c->eb, c->warp, c_i32(c, warp_dup), ""),
                                       c_i32(c, 0), "");
        cond = cond ? LLVMBuildAnd(c->eb, cond, w, "") : w;
    }
    return cond;
}

LLVMValueRef tjj_gpu_thread0_cond(codegen *c)
{
    return LLVMBuildICmp(c->eb, LLVMIntEQ, c->tid, c_i32(c, 0), "");
}
/* --- values ------------------------------------------------------------------------ */

LLVMValueRef *tjj_gpu_regs_for(codegen *c, int32_t id)
{
    if (!c->regs[id])
        c->regs[id] = tjs_xcalloc((size_t)nregs_of(c, id), sizeof(LLVMValueRef));
    return c->regs[id];
}

/* Register r of a tile, or the scalar (any r). */
LLVMValueRef tjj_gpu_reg(codegen *c, int32_t id, uint32_t r)
{
    const tji_type *t = type_of(c, id);
    LLVMValueRef v = NULL;
    if (t->rank == 0)
        v = c->ssa[id];
    else if (c->regs[id] && r < (uint32_t)nregs_of(c, id)) {
        if (!c->regs[id][r] && c->deferred && c->deferred[id])
            tjj_gpu_deferred_read(c, id, r);
        v = c->regs[id][r];
    }
    if (!v) {
        FAIL(c, "internal error: value %d is read before it is computed", (int)id);
        v = LLVMGetPoison(tjj_gpu_value_type(&c->g, t));
    }
    return v;
}

/* The operand must be in the result's layout (the plan's promise). */
int tjj_gpu_check_same_layout(codegen *c, int32_t operand, int32_t result)
{
    if (rank_of(c, operand) == 0 && rank_of(c, result) == 0)
        return 1;
    if (rank_of(c, operand) == 0 || rank_of(c, result) == 0 ||
        !tjp_layout_equal(layout_of(c, operand), layout_of(c, result))) {
        FAIL(c, "internal error: operand %d is not in the layout of value %d", (int)operand, (int)result);
        return 0;
    }
    return 1;
}
/* --- element-wise, creation and shape ops ------------------------------------------------- */

/* The NaN rule on one pair's rounded bits (a NaN keeps its top bits, made
 * quiet: llvm_scalar.c), from the pair's f32 inputs. */
static LLVMValueRef bf16_pair_nan_rule(codegen *c, LLVMValueRef rounded, LLVMValueRef lo, LLVMValueRef hi)
{
    LLVMBuilderRef b = c->g.b;
    LLVMTypeRef i32 = c->g.ty.t_i32;
    /* a half is NaN where its bits without the sign are above infinity's */
    LLVMValueRef low_nan = LLVMBuildICmp(b, LLVMIntUGT, LLVMBuildAnd(b, rounded, c_i32(c, 0x7fff), ""),
                                         c_i32(c, 0x7f80), "");
    LLVMValueRef high_nan = LLVMBuildICmp(
        b, LLVMIntUGT, LLVMBuildAnd(b, LLVMBuildLShr(b, rounded, c_i32(c, 16), ""), c_i32(c, 0x7fff), ""),
        c_i32(c, 0x7f80), "");
    LLVMValueRef ulo = LLVMBuildBitCast(b, lo, i32, ""), uhi = LLVMBuildBitCast(b, hi, i32, "");
    LLVMValueRef quiet = LLVMBuildOr(b, LLVMBuildLShr(b, ulo, c_i32(c, 16), ""),
                                     LLVMBuildAnd(b, uhi, c_i32(c, (int64_t)0xffff0000u), ""), "");
    quiet = LLVMBuildOr(b, quiet, c_i32(c, 0x00400040), "");
    LLVMValueRef mask = LLVMBuildOr(b, LLVMBuildSelect(b, low_nan, c_i32(c, 0xffff), c_i32(c, 0), ""),
                                    LLVMBuildSelect(b, high_nan, c_i32(c, (int64_t)0xffff0000u), c_i32(c, 0), ""), "");
    return LLVMBuildOr(b, LLVMBuildAnd(b, rounded, LLVMBuildNot(b, mask, ""), ""), LLVMBuildAnd(b, quiet, mask, ""),
                       "");
}

/* cvt.rn.bf16x2.f32 of the pair, as an i32 (lo in the low half). */
static LLVMValueRef bf16_pair_rounded(codegen *c, LLVMValueRef lo, LLVMValueRef hi)
{
    LLVMBuilderRef b = c->g.b;
    LLVMValueRef v = LLVMGetPoison(LLVMVectorType(c->g.ty.t_float, 2));
    v = LLVMBuildInsertElement(b, v, lo, c_i32(c, 0), "");
    v = LLVMBuildInsertElement(b, v, hi, c_i32(c, 1), "");
    return LLVMBuildBitCast(b, LLVMBuildFPTrunc(b, v, LLVMVectorType(LLVMBFloatTypeInContext(c->g.ctx), 2), ""),
                            c->g.ty.t_i32, "");
}

/* f32 -> bf16 bits of npairs pairs (lo[p], hi[p]), each packed low to
 * high into bits[p]: one cvt.rn.bf16x2.f32 per pair, which rounds a NaN to
 * a NaN (the canonical one) and nothing else to one. The NaN rule applies
 * on a second path, taken where some input of a group of BF16_NAN_GROUP
 * pairs is NaN: one setp.nan a pair and one branch a group. Per-pair
 * selects reading the accumulators' bits raised a persistent bf16
 * matmul's epilogue past its registers (ptxas spilled 208 bytes a thread);
 * a branch a pair made the NaN test 3.5 % of the kernel's time (Nsight
 * Compute: RESULTS.md, 2026-12-06). Larger groups keep more inputs live
 * across their branch: 16 pairs spilled 48 bytes, all 64 about 500. */
enum { BF16_NAN_GROUP = 8 };

static void bf16_pairs_bits(codegen *c, const LLVMValueRef *lo, const LLVMValueRef *hi, LLVMValueRef *bits,
                            uint32_t npairs)
{
    LLVMBuilderRef b = c->g.b;
    for (uint32_t first = 0; first < npairs; first += BF16_NAN_GROUP) {
        uint32_t end = first + BF16_NAN_GROUP < npairs ? first + BF16_NAN_GROUP : npairs;
        LLVMValueRef some_nan = LLVMConstNull(c->g.ty.t_i1), rounded[BF16_NAN_GROUP], ruled[BF16_NAN_GROUP];
        for (uint32_t p = first; p < end; p++)
            some_nan = LLVMBuildOr(b, some_nan, LLVMBuildFCmp(b, LLVMRealUNO, lo[p], hi[p], ""), "");
        LLVMBasicBlockRef plain = new_block(c, "bf16.plain"), rule = new_block(c, "bf16.nan"),
                          done = new_block(c, "bf16.pairs");
        LLVMBuildCondBr(b, some_nan, rule, plain);
        LLVMPositionBuilderAtEnd(b, plain);
        for (uint32_t p = first; p < end; p++)
            rounded[p - first] = bf16_pair_rounded(c, lo[p], hi[p]);
        LLVMBuildBr(b, done);
        LLVMPositionBuilderAtEnd(b, rule);
        for (uint32_t p = first; p < end; p++)
            ruled[p - first] = bf16_pair_nan_rule(c, bf16_pair_rounded(c, lo[p], hi[p]), lo[p], hi[p]);
        LLVMBuildBr(b, done);
        LLVMPositionBuilderAtEnd(b, done);
        for (uint32_t p = first; p < end; p++) {
            bits[p] = LLVMBuildPhi(b, c->g.ty.t_i32, "");
            LLVMAddIncoming(bits[p], (LLVMValueRef[]){rounded[p - first], ruled[p - first]},
                            (LLVMBasicBlockRef[]){plain, rule}, 2);
        }
    }
}

/* f32 -> f16 or bf16 two registers at a time: one cvt.rn.f16x2.f32 (or
 * bf16x2, bf16_pairs_bits) per pair, half the instructions of scalar
 * conversions — which, reading wgmma accumulators, also make ptxas
 * serialize the wgmma pipeline (C7514, where a mul or a selp reading them
 * does not). 0 where it does not apply. */
static int cast_pairs(codegen *c, const tji_op *op, uint32_t n, uint32_t rdup, LLVMValueRef *out)
{
    tj_dtype to = type_of(c, op->result)->dtype;
    if (op->code != TJI_CAST || op->round_to_zero || type_of(c, op->args[0])->dtype != TJ_F32 ||
        (to != TJ_F16 && to != TJ_BF16) || n < 2 || (rdup & 1))
        return 0;
    LLVMBuilderRef b = c->g.b;
    LLVMTypeRef v2 = LLVMVectorType(c->g.ty.t_float, 2), h2 = LLVMVectorType(c->g.ty.t_half, 2);
    uint32_t npairs = 0, *first = tjs_xcalloc(n / 2, sizeof(uint32_t));
    LLVMValueRef *lo = tjs_xcalloc(n / 2, sizeof(LLVMValueRef)), *hi = tjs_xcalloc(n / 2, sizeof(LLVMValueRef));
    for (uint32_t r = 0; r < n; r += 2) {
        if (r & rdup)
            continue;
        first[npairs] = r;
        lo[npairs] = tjj_gpu_reg(c, op->args[0], r);
        hi[npairs++] = tjj_gpu_reg(c, op->args[0], r + 1);
    }
    if (to == TJ_BF16) {
        LLVMValueRef *bits = tjs_xcalloc(npairs, sizeof(LLVMValueRef));
        bf16_pairs_bits(c, lo, hi, bits, npairs);
        for (uint32_t p = 0; p < npairs; p++) {
            out[first[p]] = LLVMBuildTrunc(b, bits[p], c->g.ty.t_i16, "");
            out[first[p] + 1] = LLVMBuildTrunc(b, LLVMBuildLShr(b, bits[p], c_i32(c, 16), ""), c->g.ty.t_i16, "");
        }
        free(bits);
    }
    for (uint32_t p = 0; to == TJ_F16 && p < npairs; p++) {
        LLVMValueRef v = LLVMGetPoison(v2);
        v = LLVMBuildInsertElement(b, v, lo[p], c_i32(c, 0), "");
        v = LLVMBuildInsertElement(b, v, hi[p], c_i32(c, 1), "");
        LLVMValueRef h = LLVMBuildFPTrunc(b, v, h2, "");
        for (uint32_t i = 0; i < 2; i++)
            out[first[p] + i] = LLVMBuildExtractElement(b, h, c_i32(c, i), "");
    }
    /* a duplicated pair is its first copy's */
    for (uint32_t r = 0; r < n; r++)
        if (r & rdup)
            out[r] = out[r & ~rdup];
    free(first);
    free(lo);
    free(hi);
    return 1;
}

/* INLINE_ASM of a pack of elements: each run takes the next pack
 * registers of every operand (zeros past the last; duplicated registers
 * are simply computed again). */
static void emit_packed_asm(codegen *c, const tji_op *op)
{
    int32_t id = op->result;
    int scalar = rank_of(c, id) == 0, pack = op->asm_pack;
    uint32_t n = scalar ? 1 : (uint32_t)nregs_of(c, id);
    LLVMValueRef *out = scalar ? NULL : tjj_gpu_regs_for(c, id);
    for (uint32_t r0 = 0; r0 < n && c->g.status == TJ_OK; r0 += (uint32_t)pack) {
        LLVMValueRef lanes[TJ_MAX_RANK][TJI_MAX_ASM_PACK], *in[TJ_MAX_RANK], res[TJI_MAX_ASM_PACK];
        for (int i = 0; i < op->nargs; i++) {
            in[i] = lanes[i];
            for (int k = 0; k < pack; k++)
                lanes[i][k] = r0 + (uint32_t)k < n ? tjj_gpu_reg(c, op->args[i], r0 + (uint32_t)k)
                                                    : LLVMConstNull(tjj_gpu_value_type(&c->g, type_of(c, op->args[i])));
        }
        tjj_gpu_inline_asm(&c->g, op, in, res);
        for (int k = 0; k < pack && r0 + (uint32_t)k < n; k++) {
            if (scalar)
                c->ssa[id] = res[k];
            else
                out[r0 + (uint32_t)k] = res[k];
        }
    }
}

void tjj_gpu_emit_elementwise(codegen *c, const tji_op *op)
{
    int32_t id = op->result;
    if (op->code == TJI_INLINE_ASM && op->asm_pack > 1) {
        for (int i = 0; rank_of(c, id) > 0 && i < op->nargs; i++)
            if (!tjj_gpu_check_same_layout(c, op->args[i], id))
                return;
        emit_packed_asm(c, op);
        return;
    }
    if (rank_of(c, id) == 0) {
        LLVMValueRef a[TJ_MAX_RANK] = {0}; /* INLINE_ASM takes up to TJ_MAX_RANK */
        for (int i = 0; i < op->nargs && i < TJ_MAX_RANK; i++)
            a[i] = tjj_gpu_reg(c, op->args[i], 0);
        c->ssa[id] = tjj_gpu_elementwise(&c->g, op, a);
        return;
    }
    for (int i = 0; i < op->nargs; i++)
        if (!tjj_gpu_check_same_layout(c, op->args[i], id))
            return;
    const tjp_layout *L = layout_of(c, id);
    uint32_t n = (uint32_t)nregs_of(c, id), rdup = reg_dup_mask(L);
    LLVMValueRef *out = tjj_gpu_regs_for(c, id);
    if (cast_pairs(c, op, n, rdup, out))
        return;
    for (uint32_t r = 0; r < n && c->g.status == TJ_OK; r++) {
        if (r & rdup) {
            out[r] = out[r & ~rdup];
            continue;
        }
        LLVMValueRef a[TJ_MAX_RANK] = {0};
        for (int i = 0; i < op->nargs && i < TJ_MAX_RANK; i++)
            a[i] = tjj_gpu_reg(c, op->args[i], r);
        out[r] = tjj_gpu_elementwise(&c->g, op, a);
    }
}

void tjj_gpu_emit_const(codegen *c, const tji_op *op)
{
    const tji_type *t = type_of(c, op->result);
    LLVMValueRef v;
    if (t->dtype == TJ_BF16) /* LLVM rounds the double to bfloat once */
        v = LLVMConstBitCast(LLVMConstReal(LLVMBFloatTypeInContext(c->g.ctx), op->fval), c->g.ty.t_i16);
    else if (tjs_dtype_is_fp8(t->dtype))
        v = tjj_gpu_fp8_const(&c->g, t->dtype, op->fval);
    else if (tjs_dtype_is_float(t->dtype))
        v = LLVMConstReal(tjj_gpu_dtype_type(&c->g, t->dtype), op->fval);
    else if (t->dtype == TJ_I1)
        v = LLVMConstInt(c->g.ty.t_i1, op->ival != 0, 0);
    else
        v = LLVMConstInt(tjj_gpu_dtype_type(&c->g, t->dtype), (unsigned long long)op->ival, 1);
    if (t->rank == 0) {
        c->ssa[op->result] = v;
        return;
    }
    LLVMValueRef *out = tjj_gpu_regs_for(c, op->result);
    for (int r = 0; r < nregs_of(c, op->result); r++)
        out[r] = v;
}

void tjj_gpu_emit_arange(codegen *c, const tji_op *op)
{
    const tjp_layout *L = layout_of(c, op->result);
    const tji_type *t = type_of(c, op->result);
    LLVMValueRef *out = tjj_gpu_regs_for(c, op->result);
    for (uint32_t r = 0; r < (uint32_t)nregs_of(c, op->result); r++)
        out[r] = LLVMBuildAdd(c->g.b, tjj_gpu_coordinate(c, t, tjj_gpu_element_index(c, L, r), 0), c_i32(c, op->ival), "");
}

void tjj_gpu_emit_splat(codegen *c, const tji_op *op)
{
    LLVMValueRef s = tjj_gpu_reg(c, op->args[0], 0);
    LLVMValueRef *out = tjj_gpu_regs_for(c, op->result);
    for (int r = 0; r < nregs_of(c, op->result); r++)
        out[r] = s;
}

/* The element of the operand that element e of the result of a shape op is. */
static uint32_t shape_source(const tji_op *op, const tji_type *rt, const tji_type *st, uint32_t e)
{
    if (op->code == TJI_RESHAPE)
        return e;
    uint32_t coord[TJ_MAX_RANK] = {0}, src[TJ_MAX_RANK] = {0};
    for (int d = 0; d < rt->rank; d++)
        coord[d] = (e >> dim_shift(rt, d)) & (uint32_t)(rt->shape[d] - 1);
    switch (op->code) {
    case TJI_BROADCAST:
        for (int d = 0; d < st->rank; d++)
            src[d] = st->shape[d] == 1 ? 0 : coord[d];
        break;
    case TJI_EXPAND_DIMS:
        for (int d = 0, s = 0; d < rt->rank; d++)
            if (d != op->axis)
                src[s++] = coord[d];
        break;
    default: /* PERMUTE */
        for (int d = 0; d < rt->rank; d++)
            src[op->perm[d]] = coord[d];
        break;
    }
    uint32_t out = 0;
    for (int d = 0; d < st->rank; d++)
        out |= src[d] << dim_shift(st, d);
    return out;
}

/* BROADCAST, EXPAND_DIMS, RESHAPE, PERMUTE: register copies, once the
 * layouts are seen to make them so (the maps are linear: bases suffice). */
void tjj_gpu_emit_shape_op(codegen *c, const tji_op *op)
{
    int32_t x = op->args[0], id = op->result, read = tji_val(c->g.fn, x)->def_op;
    const tjp_layout_plan *plan = c->g.plan;
    if (op->code == TJI_PERMUTE && read >= 0 && c->g.fn->ops[read].code == TJI_LOCAL_LOAD &&
        c->g.fn->ops[read].ring >= 0 && c->g.fn->ops[read].ring < plan->nrings &&
        plan->rings[c->g.fn->ops[read].ring].wgmma)
        return; /* tj_trans of a slot that wgmma reads itself, transposed (wgmma.c) */
    const tjp_layout *Ls = layout_of(c, x), *Lr = layout_of(c, id);
    const tji_type *st = type_of(c, x), *rt = type_of(c, id);
    int ok = st->rank > 0 && memcmp(Ls->nbits, Lr->nbits, sizeof Ls->nbits) == 0;
    for (int in = 0; ok && in < TJP_NIN; in++)
        for (int b = 0; ok && b < Lr->nbits[in]; b++)
            ok = shape_source(op, rt, st, Lr->basis[in][b]) == Ls->basis[in][b];
    if (!ok) {
        FAIL(c, "internal error: the layout plan does not make this op a register copy");
        return;
    }
    LLVMValueRef *out = tjj_gpu_regs_for(c, id);
    for (uint32_t r = 0; r < (uint32_t)nregs_of(c, id); r++)
        out[r] = tjj_gpu_reg(c, x, r);
}

/* ASSUME: a fact for the passes; the value is its operand's. */
void tjj_gpu_emit_assume(codegen *c, const tji_op *op)
{
    int32_t x = op->args[0], id = op->result;
    if (rank_of(c, id) == 0) {
        c->ssa[id] = tjj_gpu_reg(c, x, 0);
        return;
    }
    if (!tjj_gpu_check_same_layout(c, x, id))
        return;
    LLVMValueRef *out = tjj_gpu_regs_for(c, id);
    for (uint32_t r = 0; r < (uint32_t)nregs_of(c, id); r++)
        out[r] = tjj_gpu_reg(c, x, r);
}
