/* SPDX-License-Identifier: MIT */
/*
 * cpu_reduce.c — REDUCE and CUMSUM.
 *
 * Reductions loop over the result's indices with an inner loop along the
 * axis; the first element seeds the accumulator, so a max over all-NaN
 * elements is NaN and an empty identity is never needed. Float sums may be
 * reassociated (any order is a valid sum order; a GPU adds as a tree), so
 * LLVM vectorizes them. Float max/min/argmax/argmin compare the integer
 * order keys of llvm_scalar.c (-0 below +0, NaN ignored or propagated),
 * so they are integer reductions, vectorized and the same bits as the
 * GPU's. (They once used minnum/maxnum, whose vectorized form in LLVM 22
 * skipped the scalar remainder of loops of 7 or 15 trips: a tile of 8 or
 * 16 along the axis was reduced over its first 5 or 13 elements;
 * tests/test_minmax.c keeps those lengths.) An argmax/argmin loop
 * stays a loop, neither unrolled nor vectorized: fully unrolled, a chain
 * of 31 compare-selects on addresses that do not change from program to
 * program (a [1,32] or [32,1] tile at constant offsets) sent LLVM 22's
 * loop vectorizer, working on the loop over programs around it, into
 * endless recursion (tests/llvm/argmax_loop_vectorize_hang.ll). CUMSUM
 * is sequential along its axis.
 *
 * argmax/argmin give the first index of the extreme value, ignore NaN (or,
 * propagating it, give the first NaN's index), and give 0 when every
 * element is NaN; f16 and bf16 reductions and prefix sums accumulate in f32.
 */
#include <string.h>

#include "cpu_codegen.h"

/* Reductions: loop over the result's indices, inner loop along the axis. */
void tjj_cpu_emit_reduce(codegen *g, const tji_op *op)
{
    const tji_func *fn = g->fn;
    int32_t x = op->args[0];
    const tji_type *xt = tji_typeof(fn, x), *rt = tji_typeof(fn, op->result);
    tj_dtype dt = xt->dtype;
    int axis = op->axis, len = xt->shape[axis];
    int is_float = tjs_dtype_is_float(dt), is_signed = tjs_dtype_is_signed(dt);
    int is_arg = op->reduce == TJ_REDUCE_ARGMAX || op->reduce == TJ_REDUCE_ARGMIN;
    int is_max = op->reduce == TJ_REDUCE_MAX || op->reduce == TJ_REDUCE_ARGMAX;
    LLVMTypeRef acc_t = tjj_ls_compute_type(&g->ls, dt), float_t = acc_t;
    /* float max/min/argmax/argmin compare order keys, as signed integers */
    int by_key = is_float && op->reduce != TJ_REDUCE_SUM && op->reduce != TJ_REDUCE_PROD;
    if (by_key) {
        acc_t = acc_t == g->ty.t_double ? g->ty.t_i64 : g->ty.t_i32;
        is_float = 0, is_signed = 1;
    }
#define ELEMENT(v) (by_key ? tjj_ls_order_key(&g->ls, (v), is_max, op->propagate_nan) : (v))

    nest n;
    LLVMValueRef oidx[TJ_MAX_RANK], xidx[TJ_MAX_RANK];
    tjj_cpu_nest_begin(g, &n, rt->rank, rt->shape, oidx);
    for (int d = 0, s = 0; d < xt->rank; d++)
        xidx[d] = d == axis ? c_i64(g, 0) : oidx[s++];
    LLVMValueRef acc = ELEMENT(tjj_ls_fext(&g->ls, tjj_cpu_elem(g, x, xidx), dt)), best = c_i32(g, 0);
    if (len > 1) {
        size_t mark = memo_mark(g);
        LLVMBasicBlockRef pre = LLVMGetInsertBlock(g->b), header = new_block(g, "reduce");
        LLVMBuildBr(g->b, header);
        LLVMPositionBuilderAtEnd(g->b, header);
        LLVMValueRef k = LLVMBuildPhi(g->b, g->ty.t_i64, "k");
        LLVMValueRef acc_phi = LLVMBuildPhi(g->b, acc_t, "acc");
        LLVMValueRef best_phi = is_arg ? LLVMBuildPhi(g->b, g->ty.t_i32, "best") : NULL;
        LLVMValueRef one = c_i64(g, 1);
        LLVMAddIncoming(k, &one, &pre, 1);
        LLVMAddIncoming(acc_phi, &acc, &pre, 1);
        if (is_arg)
            LLVMAddIncoming(best_phi, &best, &pre, 1);
        xidx[axis] = k;
        LLVMValueRef v = ELEMENT(tjj_ls_fext(&g->ls, tjj_cpu_elem(g, x, xidx), dt)), next_acc, next_best = NULL;
        switch (op->reduce) {
        case TJ_REDUCE_SUM:
            if (is_float) {
                next_acc = LLVMBuildFAdd(g->b, acc_phi, v, "");
                /* Any order is a valid sum order (a GPU adds as a tree):
                 * let LLVM vectorize it. */
                LLVMSetFastMathFlags(next_acc, LLVMFastMathAllowReassoc);
            } else {
                next_acc = LLVMBuildAdd(g->b, acc_phi, v, "");
            }
            break;
        case TJ_REDUCE_PROD: /* any order, as a sum's */
            if (is_float) {
                next_acc = LLVMBuildFMul(g->b, acc_phi, v, "");
                LLVMSetFastMathFlags(next_acc, LLVMFastMathAllowReassoc);
            } else {
                next_acc = LLVMBuildMul(g->b, acc_phi, v, "");
            }
            break;
        case TJ_REDUCE_MAX:
            next_acc = tjj_ls_intrinsic2(&g->ls, is_signed ? "llvm.smax" : "llvm.umax", acc_phi, v);
            break;
        case TJ_REDUCE_MIN:
            next_acc = tjj_ls_intrinsic2(&g->ls, is_signed ? "llvm.smin" : "llvm.umin", acc_phi, v);
            break;
        default: { /* strictly better: the first extreme element wins */
            LLVMValueRef better = LLVMBuildICmp(g->b, is_max ? (is_signed ? LLVMIntSGT : LLVMIntUGT)
                                                             : (is_signed ? LLVMIntSLT : LLVMIntULT),
                                                v, acc_phi, "");
            next_acc = LLVMBuildSelect(g->b, better, v, acc_phi, "");
            next_best = LLVMBuildSelect(g->b, better, LLVMBuildTrunc(g->b, k, g->ty.t_i32, ""), best_phi, "");
            break;
        }
        }
        LLVMValueRef next_k = add_nuw(g, k, one);
        LLVMBasicBlockRef latch = LLVMGetInsertBlock(g->b), exit = new_block(g, "reduce.end");
        LLVMAddIncoming(k, &next_k, &latch, 1);
        LLVMAddIncoming(acc_phi, &next_acc, &latch, 1);
        if (is_arg)
            LLVMAddIncoming(best_phi, &next_best, &latch, 1);
        LLVMValueRef br = LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntULT, next_k, c_i64(g, len), ""),
                                          header, exit);
        /* argmax/argmin: see the top of the file */
        if (is_arg)
            tjj_cpu_set_loop_hints(g, br, tjj_cpu_loop_hints(g, 1));
        else if (g->no_unroll)
            tjj_cpu_set_loop_hints(g, br, g->no_unroll);
        LLVMPositionBuilderAtEnd(g->b, exit);
        acc = next_acc;
        best = next_best;
        memo_release(g, mark);
    }
#undef ELEMENT
    if (by_key && !is_arg)
        acc = tjj_ls_from_order_key(&g->ls, acc, float_t, is_max, op->propagate_nan);
    LLVMValueRef result = is_arg ? best : is_float || by_key ? tjj_ls_fround(&g->ls, acc, dt) : acc;
    if (rt->rank == 0)
        g->ssa[op->result] = result;
    else if (g->slot[op->result] >= 0)
        tjj_cpu_store_elem(g, g->slot[op->result], rt, oidx, result);
    tjj_cpu_nest_end(g, &n);
}

/* Inclusive prefix sum or product: sequential along the axis. */
void tjj_cpu_emit_cumsum(codegen *g, const tji_op *op)
{
    const tji_func *fn = g->fn;
    int32_t x = op->args[0];
    const tji_type *t = tji_typeof(fn, op->result);
    tj_dtype dt = t->dtype;
    int axis = op->axis, len = t->shape[axis];
    int is_float = tjs_dtype_is_float(dt);
    int32_t outer[TJ_MAX_RANK];
    memcpy(outer, t->shape, sizeof outer);
    outer[axis] = 1;
    nest n;
    LLVMValueRef idx[TJ_MAX_RANK];
    tjj_cpu_nest_begin(g, &n, t->rank, outer, idx);
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(g->b), header = new_block(g, "cumsum");
    LLVMBuildBr(g->b, header);
    LLVMPositionBuilderAtEnd(g->b, header);
    LLVMValueRef k = LLVMBuildPhi(g->b, g->ty.t_i64, "k");
    LLVMValueRef acc = LLVMBuildPhi(g->b, tjj_ls_compute_type(&g->ls, dt), "acc");
    int prod = op->reduce == TJ_REDUCE_PROD;
    LLVMTypeRef ct = tjj_ls_compute_type(&g->ls, dt);
    LLVMValueRef zero = c_i64(g, 0);
    LLVMValueRef acc0 = !prod ? LLVMConstNull(ct) : is_float ? LLVMConstReal(ct, 1) : LLVMConstInt(ct, 1, 0);
    LLVMAddIncoming(k, &zero, &pre, 1);
    LLVMAddIncoming(acc, &acc0, &pre, 1);
    size_t mark = memo_mark(g);
    idx[axis] = k;
    LLVMValueRef v = tjj_ls_fext(&g->ls, tjj_cpu_elem(g, x, idx), dt);
    LLVMValueRef next = prod ? (is_float ? LLVMBuildFMul(g->b, acc, v, "") : LLVMBuildMul(g->b, acc, v, ""))
                             : (is_float ? LLVMBuildFAdd(g->b, acc, v, "") : LLVMBuildAdd(g->b, acc, v, ""));
    if (g->slot[op->result] >= 0)
        tjj_cpu_store_elem(g, g->slot[op->result], t, idx, is_float ? tjj_ls_fround(&g->ls, next, dt) : next);
    memo_release(g, mark);
    LLVMValueRef next_k = add_nuw(g, k, c_i64(g, 1));
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(g->b), exit = new_block(g, "cumsum.end");
    LLVMAddIncoming(k, &next_k, &latch, 1);
    LLVMAddIncoming(acc, &next, &latch, 1);
    LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntULT, next_k, c_i64(g, len), ""), header, exit);
    LLVMPositionBuilderAtEnd(g->b, exit);
    tjj_cpu_nest_end(g, &n);
}
