/* SPDX-License-Identifier: MIT */
/*
 * cpu_atomics.c — ATOMIC and ATOMIC_CAS, one element at a time.
 *
 * Like stores, atomics run a loop nest over the pointer tile and touch only
 * the lanes whose mask is true; a masked-off lane does nothing and reads as
 * old value 0. They are seq_cst atomicrmw/cmpxchg; 16-bit floats, which
 * have no atomicrmw on the host, are a compare-and-swap loop computing in
 * f32. cmpxchg of floats compares bits.
 */
#include "cpu_codegen.h"

/* A compare-and-swap loop for 16-bit float atomics, done in f32. */
static LLVMValueRef atomic_half_loop(codegen *g, tj_atomic_op aop, tj_dtype dt, LLVMValueRef ptr,
                                     LLVMValueRef v)
{
    LLVMTypeRef it = g->t_i16;
    LLVMValueRef start = LLVMBuildLoad2(g->b, it, ptr, "");
    LLVMSetAlignment(start, 2);
    LLVMSetOrdering(start, LLVMAtomicOrderingMonotonic);
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(g->b), body = new_block(g, "cas");
    LLVMBuildBr(g->b, body);
    LLVMPositionBuilderAtEnd(g->b, body);
    LLVMValueRef old = LLVMBuildPhi(g->b, it, "");
    LLVMValueRef old_v = dt == TJ_F16 ? LLVMBuildBitCast(g->b, old, g->t_half, "") : old;
    LLVMValueRef x = tjj_ls_fext(&g->ls, old_v, dt), y = tjj_ls_fext(&g->ls, v, dt), r;
    switch (aop) {
    case TJ_ATOMIC_ADD: r = tjj_ls_fround(&g->ls, LLVMBuildFAdd(g->b, x, y, ""), dt); break;
    case TJ_ATOMIC_MAX: r = tjj_ls_fround(&g->ls, tjj_ls_intrinsic2(&g->ls, "llvm.maxnum", x, y), dt); break;
    case TJ_ATOMIC_MIN: r = tjj_ls_fround(&g->ls, tjj_ls_intrinsic2(&g->ls, "llvm.minnum", x, y), dt); break;
    default: r = v; break;
    }
    LLVMValueRef new_bits = dt == TJ_F16 ? LLVMBuildBitCast(g->b, r, it, "") : r;
    LLVMValueRef pair = LLVMBuildAtomicCmpXchg(g->b, ptr, old, new_bits, LLVMAtomicOrderingSequentiallyConsistent,
                                               LLVMAtomicOrderingSequentiallyConsistent, 0);
    LLVMValueRef seen = LLVMBuildExtractValue(g->b, pair, 0, "");
    LLVMValueRef ok = LLVMBuildExtractValue(g->b, pair, 1, "");
    LLVMBasicBlockRef body_end = LLVMGetInsertBlock(g->b), done = new_block(g, "cas.end");
    LLVMAddIncoming(old, &start, &pre, 1);
    LLVMAddIncoming(old, &seen, &body_end, 1);
    LLVMBuildCondBr(g->b, ok, done, body);
    LLVMPositionBuilderAtEnd(g->b, done);
    return dt == TJ_F16 ? LLVMBuildBitCast(g->b, seen, g->t_half, "") : seen;
}

static LLVMValueRef atomic_rmw(codegen *g, const tji_op *op, const tji_type *vt, LLVMValueRef ptr,
                               LLVMValueRef v)
{
    tj_dtype dt = vt->dtype;
    int is_float = tjs_dtype_is_float(dt), is_signed = tjs_dtype_is_signed(dt);
    if (is_half_float(dt))
        return atomic_half_loop(g, op->atomic, dt, ptr, v);
    LLVMAtomicRMWBinOp bop;
    switch (op->atomic) {
    case TJ_ATOMIC_ADD: bop = is_float ? LLVMAtomicRMWBinOpFAdd : LLVMAtomicRMWBinOpAdd; break;
    case TJ_ATOMIC_MAX:
        bop = is_float ? LLVMAtomicRMWBinOpFMax : is_signed ? LLVMAtomicRMWBinOpMax : LLVMAtomicRMWBinOpUMax;
        break;
    case TJ_ATOMIC_MIN:
        bop = is_float ? LLVMAtomicRMWBinOpFMin : is_signed ? LLVMAtomicRMWBinOpMin : LLVMAtomicRMWBinOpUMin;
        break;
    default: bop = LLVMAtomicRMWBinOpXchg; break;
    }
    LLVMValueRef old = LLVMBuildAtomicRMW(g->b, bop, ptr, tjj_ls_to_mem(&g->ls, v, vt),
                                          LLVMAtomicOrderingSequentiallyConsistent, 0);
    return tjj_ls_from_mem(&g->ls, old, vt);
}

void tjj_cpu_emit_atomic(codegen *g, const tji_op *op)
{
    const tji_func *fn = g->fn;
    const tji_type *pt = tji_typeof(fn, op->args[0]);
    const tji_type *rt = tji_typeof(fn, op->result);
    int is_cas = op->code == TJI_ATOMIC_CAS;
    nest n;
    LLVMValueRef idx[TJ_MAX_RANK];
    tjj_cpu_nest_begin(g, &n, pt->rank, pt->shape, idx);
    LLVMValueRef mask = !is_cas && op->nargs > 2 && op->args[2] ? tjj_cpu_elem(g, op->args[2], idx) : NULL;
    LLVMValueRef ptr = tjj_cpu_elem(g, op->args[0], idx);
    mask = tjj_cpu_bounds_mask(g, (int32_t)(op - fn->ops), op->args[0], ptr, rt, mask);
    size_t mark = memo_mark(g);
    LLVMBasicBlockRef before = LLVMGetInsertBlock(g->b);
    LLVMBasicBlockRef cont = tjj_cpu_guard_begin(g, mask, "atomic");
    LLVMValueRef old;
    if (is_cas) {
        LLVMValueRef cmp = tjj_ls_to_mem(&g->ls, tjj_cpu_elem(g, op->args[1], idx), rt);
        LLVMValueRef v = tjj_ls_to_mem(&g->ls, tjj_cpu_elem(g, op->args[2], idx), rt);
        if (tjs_dtype_is_float(rt->dtype)) { /* cmpxchg compares bits */
            LLVMTypeRef it = LLVMIntTypeInContext(g->ctx, (unsigned)tjs_dtype_bits(rt->dtype));
            cmp = LLVMBuildBitCast(g->b, cmp, it, "");
            v = LLVMBuildBitCast(g->b, v, it, "");
        }
        LLVMValueRef pair = LLVMBuildAtomicCmpXchg(g->b, ptr, cmp, v, LLVMAtomicOrderingSequentiallyConsistent,
                                                   LLVMAtomicOrderingSequentiallyConsistent, 0);
        old = LLVMBuildExtractValue(g->b, pair, 0, "");
        if (tjs_dtype_is_float(rt->dtype))
            old = LLVMBuildBitCast(g->b, old, tjj_ls_mem_type(&g->ls, rt->dtype), "");
        old = tjj_ls_from_mem(&g->ls, old, rt);
    } else {
        old = atomic_rmw(g, op, tji_typeof(fn, op->args[1]), ptr, tjj_cpu_elem(g, op->args[1], idx));
    }
    memo_release(g, mark);
    if (cont) {
        LLVMBasicBlockRef then_end = LLVMGetInsertBlock(g->b);
        tjj_cpu_guard_end(g, cont);
        LLVMValueRef phi = LLVMBuildPhi(g->b, value_type(g, rt), "");
        LLVMValueRef vals[2] = {old, LLVMConstNull(value_type(g, rt))};
        LLVMBasicBlockRef blocks[2] = {then_end, before};
        LLVMAddIncoming(phi, vals, blocks, 2);
        old = phi;
    }
    if (rt->rank == 0)
        g->ssa[op->result] = old;
    else if (g->slot[op->result] >= 0)
        tjj_cpu_store_elem(g, g->slot[op->result], rt, idx, old);
    tjj_cpu_nest_end(g, &n);
}
