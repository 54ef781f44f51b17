/* SPDX-License-Identifier: MIT */
/*
 * reduce.c — REDUCE and CUMSUM.
 *
 * REDUCE combines registers along the axis, then lanes (butterfly
 * shuffles), then warps (partials through shared memory, each thread
 * combining them in a fixed order, or for row reductions over 8+ warps a
 * part per lane and butterflies); every step combines symmetrically, so
 * all threads that hold one result hold it bit for bit. CUMSUM goes
 * through shared memory: each element is the sequential sum of its
 * prefix, in the CPU's order. Where the partials sit in shared memory (the
 * swizzle, the byte offset) and the barriers around them are the plan's
 * (the swizzle, alloc-shared and barrier passes).
 */
#include <stdlib.h>

#include "gen.h"

/* --- reductions and scans ------------------------------------------------------------------ */

/* acc = acc (op) (v, i), symmetric: both orders give the same bits. f32
 * max and min (f16 and bf16 are combined in f32) are LLVM's maximum /
 * minimum (NaN propagated) or maximumnum / minimumnum (NaN ignored): -0 <
 * +0 as on the CPU, one max.NaN.f32 or max.f32 instruction each. f64
 * max/min and every argmax/argmin arrive as the integer order keys of
 * llvm_scalar.c (dt a signed integer dtype), which place -0, +0 and NaN as
 * the CPU does. argmax and argmin carry (value, index): equal values go to
 * the smaller index, so the first extreme element wins (an ignored NaN's
 * key loses to every number's; all NaN gives index 0), as on the CPU. */
static void combine(codegen *c, const tji_op *op, tj_dtype dt, LLVMValueRef *acc, LLVMValueRef *acc_i,
                    LLVMValueRef v, LLVMValueRef i)
{
    LLVMBuilderRef b = c->g.b;
    tj_reduce_op rop = op->reduce;
    int is_float = tjs_dtype_is_float(dt), is_signed = tjs_dtype_is_signed(dt);
    switch (rop) {
    case TJ_REDUCE_SUM:
        *acc = is_float ? LLVMBuildFAdd(b, *acc, v, "") : LLVMBuildAdd(b, *acc, v, "");
        return;
    case TJ_REDUCE_PROD:
        *acc = is_float ? LLVMBuildFMul(b, *acc, v, "") : LLVMBuildMul(b, *acc, v, "");
        return;
    case TJ_REDUCE_MAX:
        if (is_float)
            *acc = tjj_gpu_intrinsic2(&c->g, op->propagate_nan ? "llvm.maximum" : "llvm.maximumnum", *acc, v);
        else
            *acc = tjj_gpu_intrinsic2(&c->g, is_signed ? "llvm.smax" : "llvm.umax", *acc, v);
        return;
    case TJ_REDUCE_MIN:
        if (is_float)
            *acc = tjj_gpu_intrinsic2(&c->g, op->propagate_nan ? "llvm.minimum" : "llvm.minimumnum", *acc, v);
        else
            *acc = tjj_gpu_intrinsic2(&c->g, is_signed ? "llvm.smin" : "llvm.umin", *acc, v);
        return;
    default: {
        int is_max = rop == TJ_REDUCE_ARGMAX;
        LLVMValueRef smaller_i = LLVMBuildICmp(b, LLVMIntSLT, i, *acc_i, "");
        LLVMIntPredicate p = is_max ? (is_signed ? LLVMIntSGT : LLVMIntUGT) : (is_signed ? LLVMIntSLT : LLVMIntULT);
        LLVMValueRef better = LLVMBuildICmp(b, p, v, *acc, "");
        LLVMValueRef tie = LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntEQ, v, *acc, ""), smaller_i, "");
        LLVMValueRef take = LLVMBuildOr(b, better, tie, "");
        *acc = LLVMBuildSelect(b, take, v, *acc, "");
        *acc_i = LLVMBuildSelect(b, take, i, *acc_i, "");
        return;
    }
    }
}

/* The bits of `value` at the positions in `mask`, packed (a software pext). */
static LLVMValueRef extract_bits(codegen *c, LLVMValueRef value, uint32_t mask)
{
    LLVMValueRef out = c_i32(c, 0);
    for (int b = 0, k = 0; b < 32; b++) {
        if (!(mask >> b & 1))
            continue;
        LLVMValueRef bit = LLVMBuildAnd(c->g.b, LLVMBuildLShr(c->g.b, value, c_i32(c, b), ""), c_i32(c, 1), "");
        out = LLVMBuildOr(c->g.b, out, LLVMBuildShl(c->g.b, bit, c_i32(c, k++), ""), "");
    }
    return out;
}

void tjj_gpu_emit_reduce(codegen *c, const tji_op *op)
{
    int32_t x = op->args[0], id = op->result;
    const tji_type *xt = type_of(c, x), *rt = type_of(c, id);
    const tjp_layout *L = layout_of(c, x);
    tj_dtype dt = xt->dtype;
    int axis = op->axis;
    int is_arg = op->reduce == TJ_REDUCE_ARGMAX || op->reduce == TJ_REDUCE_ARGMIN;
    int is_max = op->reduce == TJ_REDUCE_MAX || op->reduce == TJ_REDUCE_ARGMAX;
    int is_float = tjs_dtype_is_float(dt);
    /* f64 max/min and float argmax/argmin combine order keys, the other
     * float max/min the values in f32 (see combine) */
    int by_key = is_float && op->reduce != TJ_REDUCE_SUM && op->reduce != TJ_REDUCE_PROD && (is_arg || dt == TJ_F64);
    tj_dtype combine_dt = by_key ? (dt == TJ_F64 ? TJ_I64 : TJ_I32) : dt;
    uint32_t axis_bits = (uint32_t)((xt->shape[axis] - 1) << dim_shift(xt, axis));

    /* Which input bits move along the axis (A), hold copies (Z), or neither. */
    uint32_t along[TJP_NIN] = {0}, copies[TJP_NIN] = {0};
    for (int in = 0; in < TJP_NIN; in++)
        for (int b = 0; b < L->nbits[in]; b++) {
            uint32_t v = L->basis[in][b];
            if (!v)
                copies[in] |= 1u << b;
            else if ((v & axis_bits) == v)
                along[in] |= 1u << b;
            else if (v & axis_bits) {
                FAIL(c, "internal error: a layout basis mixes the reduced axis with others");
                return;
            }
        }
    if (!tjj_gpu_bases_independent(L)) {
        FAIL(c, "internal error: a layout holds an element twice");
        return;
    }
    if (rt->rank > 0) {
        tjp_layout expect;
        tjp_layout_slice(&expect, L, axis);
        if (!tjp_layout_equal(&expect, layout_of(c, id))) {
            FAIL(c, "internal error: the result's layout is not the slice of the operand's");
            return;
        }
    }

    uint32_t n = 1u << L->nbits[TJP_REG], fold = along[TJP_REG] | copies[TJP_REG];
    LLVMValueRef *acc = tjs_xcalloc(n, sizeof(LLVMValueRef)), *acc_i = tjs_xcalloc(n, sizeof(LLVMValueRef));
    /* 1: registers along the axis, in increasing order */
    for (uint32_t r = 0; r < n; r++) {
        if (r & fold)
            continue;
        for (uint32_t s = 0;; s = (s - along[TJP_REG]) & along[TJP_REG]) {
            LLVMValueRef v = tjj_gpu_fext(&c->g, tjj_gpu_reg(c, x, r | s), dt), i = NULL;
            if (by_key)
                v = tjj_gpu_order_key(&c->g, v, is_max, op->propagate_nan);
            if (is_arg)
                i = tjj_gpu_coordinate(c, xt, tjj_gpu_element_index(c, L, r | s), axis);
            if (!s) {
                acc[r] = v;
                acc_i[r] = i;
            } else {
                combine(c, op, combine_dt, &acc[r], &acc_i[r], v, i);
            }
            if (s == along[TJP_REG])
                break;
        }
    }
    /* 2: lanes along the axis, by butterfly */
    for (int b = 0; b < L->nbits[TJP_LANE]; b++) {
        if (!(along[TJP_LANE] >> b & 1))
            continue;
        for (uint32_t r = 0; r < n; r++) {
            if (r & fold)
                continue;
            LLVMValueRef v = tjj_gpu_shuffle(c, 1, acc[r], c_i32(c, 1 << b));
            LLVMValueRef i = is_arg ? tjj_gpu_shuffle(c, 1, acc_i[r], c_i32(c, 1 << b)) : NULL;
            combine(c, op, combine_dt, &acc[r], &acc_i[r], v, i);
        }
    }
    /* 3: warps along the axis, through shared memory in warp order: part p
     * of the partials holds the result tile, each element at its swizzled
     * index (the swizzle pass's choice for the result's layout) */
    const tjp_shared_step *step = along[TJP_WARP] ? tjj_gpu_step(c, TJP_STEP_REDUCE) : NULL;
    if (along[TJP_WARP] && c->g.status == TJ_OK) {
        const tjp_shared_use *use = &step->use;
        uint64_t vbase = step->offset, ibase = step->index_offset;
        uint32_t parts = (uint32_t)use->parts;
        int64_t out_numel = use->numel;
        LLVMTypeRef ct = LLVMTypeOf(acc[0]);
        LLVMValueRef smem = tjj_gpu_shared(c);
        LLVMValueRef my_part = extract_bits(c, c->warp, along[TJP_WARP]);
        LLVMValueRef *oidx = tjs_xcalloc(n, sizeof(LLVMValueRef)), *iidx = tjs_xcalloc(n, sizeof(LLVMValueRef));
        LLVMValueRef tv = tjj_gpu_swizzled_thread_index(c, &use->swizzle, &use->write);
        LLVMValueRef ti = is_arg ? tjj_gpu_swizzled_thread_index(c, &use->index_swizzle, &use->write) : NULL;
        for (uint32_t r = 0; r < n; r++)
            if (!(r & fold)) {
                oidx[r] = tjj_gpu_swizzled_index(c, &use->swizzle, tv, &use->write, r);
                iidx[r] = is_arg ? tjj_gpu_swizzled_index(c, &use->index_swizzle, ti, &use->write, r) : NULL;
            }
        LLVMValueRef my_base = LLVMBuildMul(c->g.b, my_part, c_i32(c, out_numel), "");
        tjj_gpu_barrier(c, TJP_BARRIER_SHARED_WRITE);
        for (uint32_t r = 0; r < n; r++) {
            if (r & fold)
                continue;
            tjj_gpu_shared_store(c, smem, vbase, LLVMBuildAdd(c->g.b, my_base, oidx[r], ""), acc[r]);
            if (is_arg)
                tjj_gpu_shared_store(c, smem, ibase, LLVMBuildAdd(c->g.b, my_base, iidx[r], ""), acc_i[r]);
        }
        tjj_gpu_barrier(c, TJP_BARRIER_SHARED_READ);
        LLVMValueRef lane_part = use->part_lanes ? extract_bits(c, c->lane, use->part_lanes) : NULL;
        for (uint32_t r = 0; use->part_lanes && r < n; r++) {
            /* lane l reads part p(l); butterflies over those lane bits */
            if (r & fold)
                continue;
            LLVMValueRef at = LLVMBuildMul(c->g.b, lane_part, c_i32(c, out_numel), "");
            acc[r] = tjj_gpu_shared_load(c, smem, vbase, ct, LLVMBuildAdd(c->g.b, oidx[r], at, ""));
            if (is_arg)
                acc_i[r] = tjj_gpu_shared_load(c, smem, ibase, c->g.ty.t_i32, LLVMBuildAdd(c->g.b, iidx[r], at, ""));
            for (int b = 0; b < 32; b++) {
                if (!(use->part_lanes >> b & 1))
                    continue;
                LLVMValueRef v = tjj_gpu_shuffle(c, 1, acc[r], c_i32(c, 1 << b));
                LLVMValueRef i = is_arg ? tjj_gpu_shuffle(c, 1, acc_i[r], c_i32(c, 1 << b)) : NULL;
                combine(c, op, combine_dt, &acc[r], &acc_i[r], v, i);
            }
        }
        for (uint32_t r = 0; !use->part_lanes && r < n; r++) {
            if (r & fold)
                continue;
            for (uint32_t p = 0; p < parts; p++) {
                LLVMValueRef slot = LLVMBuildAdd(c->g.b, oidx[r], c_i32(c, (int64_t)p * out_numel), "");
                LLVMValueRef v = tjj_gpu_shared_load(c, smem, vbase, ct, slot);
                LLVMValueRef i = NULL;
                if (is_arg)
                    i = tjj_gpu_shared_load(c, smem, ibase, c->g.ty.t_i32,
                                    LLVMBuildAdd(c->g.b, iidx[r], c_i32(c, (int64_t)p * out_numel), ""));
                if (!p) {
                    acc[r] = v;
                    acc_i[r] = i;
                } else {
                    combine(c, op, combine_dt, &acc[r], &acc_i[r], v, i);
                }
            }
        }
        free(oidx);
        free(iidx);
    }
    if (c->g.status == TJ_OK) {
        LLVMValueRef *out = rt->rank > 0 ? tjj_gpu_regs_for(c, id) : NULL;
        for (uint32_t r = 0; r < (rt->rank > 0 ? n : 1); r++) {
            uint32_t k = r & ~fold;
            LLVMValueRef v = is_arg ? acc_i[k] : acc[k];
            if (by_key && !is_arg)
                v = tjj_gpu_from_order_key(&c->g, v, dt, is_max, op->propagate_nan);
            if (is_float && !is_arg)
                v = tjj_gpu_fround(&c->g, v, dt);
            if (out)
                out[r] = v;
            else
                c->ssa[id] = v;
        }
    }
    free(acc);
    free(acc_i);
}

/* Inclusive prefix sums (products) through shared memory: each element is
 * the sequential sum (product) of its prefix along the axis (the CPU's
 * order). */
void tjj_gpu_emit_cumsum(codegen *c, const tji_op *op)
{
    int32_t x = op->args[0], id = op->result;
    if (!tjj_gpu_check_same_layout(c, x, id))
        return;
    const tji_type *t = type_of(c, id);
    const tjp_layout *L = layout_of(c, id);
    tj_dtype dt = t->dtype;
    int is_float = tjs_dtype_is_float(dt), shift = dim_shift(t, op->axis), prod = op->reduce == TJ_REDUCE_PROD;
    uint32_t axis_bits = (uint32_t)((t->shape[op->axis] - 1) << shift);
    LLVMTypeRef ct = tjj_gpu_compute_type(&c->g, dt);
    LLVMValueRef smem = tjj_gpu_shared(c);
    uint32_t n = (uint32_t)nregs_of(c, id), rdup = reg_dup_mask(L);
    LLVMBuilderRef b = c->g.b;
    const tjp_shared_step *step = tjj_gpu_step(c, TJP_STEP_CUMSUM);
    if (c->g.status != TJ_OK)
        return;
    const tjp_swizzle *S = &step->use.swizzle;
    LLVMValueRef ts = tjj_gpu_swizzled_thread_index(c, S, L);
    tjj_gpu_barrier(c, TJP_BARRIER_SHARED_WRITE);
    for (uint32_t r = 0; r < n; r++)
        if (!(r & rdup))
            tjj_gpu_shared_store(c, smem, step->offset, tjj_gpu_swizzled_index(c, S, ts, L, r), tjj_gpu_fext(&c->g, tjj_gpu_reg(c, x, r), dt));
    tjj_gpu_barrier(c, TJP_BARRIER_SHARED_READ);
    LLVMValueRef *out = tjj_gpu_regs_for(c, id);
    for (uint32_t r = 0; r < n; r++) {
        if (r & rdup) {
            out[r] = out[r & ~rdup];
            continue;
        }
        LLVMValueRef e = tjj_gpu_element_index(c, L, r);
        LLVMValueRef last = tjj_gpu_coordinate(c, t, e, op->axis);
        LLVMValueRef base = tjj_gpu_swizzled(c, b, S, LLVMBuildAnd(b, e, c_i32(c, ~axis_bits), ""), ~axis_bits);
        LLVMBasicBlockRef pre = LLVMGetInsertBlock(b), loop = new_block(c, "cumsum"), done = new_block(c, "cumsum.end");
        LLVMBuildBr(b, loop);
        LLVMPositionBuilderAtEnd(b, loop);
        LLVMValueRef k = LLVMBuildPhi(b, c->g.ty.t_i32, "k"), acc = LLVMBuildPhi(b, ct, "acc");
        LLVMValueRef at = LLVMBuildXor(b, base, tjj_gpu_swizzled(c, b, S, LLVMBuildShl(b, k, c_i32(c, shift), ""), axis_bits), "");
        LLVMValueRef v = tjj_gpu_shared_load(c, smem, step->offset, ct, at);
        LLVMValueRef next = prod ? (is_float ? LLVMBuildFMul(b, acc, v, "") : LLVMBuildMul(b, acc, v, ""))
                                 : (is_float ? LLVMBuildFAdd(b, acc, v, "") : LLVMBuildAdd(b, acc, v, ""));
        LLVMValueRef next_k = LLVMBuildAdd(b, k, c_i32(c, 1), "");
        LLVMValueRef zero_k = c_i32(c, 0);
        LLVMValueRef zero = !prod ? LLVMConstNull(ct) : is_float ? LLVMConstReal(ct, 1) : LLVMConstInt(ct, 1, 0);
        LLVMAddIncoming(k, &zero_k, &pre, 1);
        LLVMAddIncoming(k, &next_k, &loop, 1);
        LLVMAddIncoming(acc, &zero, &pre, 1);
        LLVMAddIncoming(acc, &next, &loop, 1);
        LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntULE, next_k, last, ""), loop, done);
        LLVMPositionBuilderAtEnd(b, done);
        out[r] = is_float ? tjj_gpu_fround(&c->g, next, dt) : next;
    }
}
