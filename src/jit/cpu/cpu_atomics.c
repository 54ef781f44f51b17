/* SPDX-License-Identifier: MIT */
/*
 * cpu_atomics.c — ATOMIC and ATOMIC_CAS, one element at a time.
 *
 * Like stores, atomics run a loop nest over the pointer tile and touch only
 * the lanes whose mask is true; a masked-off lane does nothing and reads as
 * old value 0. They are seq_cst atomicrmw/cmpxchg, whatever their .sem and
 * .scope (stronger than any of them asks); add, max and min of
 * 16-bit floats, which have no atomicrmw on the host, are the shared
 * compare-and-swap loop of llvm_atomics.c (the builder refuses them today;
 * the loop is ready for when it does not); their xchg is atomicrmw xchg.
 * cmpxchg of floats compares bits.
 */
#include "cpu_codegen.h"

static LLVMValueRef atomic_rmw(codegen *g, const tji_op *op, const tji_type *vt, LLVMValueRef ptr,
                               LLVMValueRef v)
{
    tj_dtype dt = vt->dtype;
    int is_float = tjs_dtype_is_float(dt), is_signed = tjs_dtype_is_signed(dt);
    if (is_half_float(dt) && op->atomic != TJ_ATOMIC_XCHG) {
        tjj_llvm_atomic_order order = {LLVMAtomicOrderingSequentiallyConsistent,
                                       LLVMAtomicOrderingSequentiallyConsistent, LLVMGetSyncScopeID(g->ctx, "", 0)};
        return tjj_llvm_float_atomic(&g->ty, g->mod, g->b, &order, op->atomic, dt, ptr, v);
    }
    LLVMAtomicRMWBinOp bop;
    switch (op->atomic) {
    case TJ_ATOMIC_ADD: bop = is_float ? LLVMAtomicRMWBinOpFAdd : LLVMAtomicRMWBinOpAdd; break;
    case TJ_ATOMIC_MAX:
        bop = is_float ? LLVMAtomicRMWBinOpFMax : is_signed ? LLVMAtomicRMWBinOpMax : LLVMAtomicRMWBinOpUMax;
        break;
    case TJ_ATOMIC_MIN:
        bop = is_float ? LLVMAtomicRMWBinOpFMin : is_signed ? LLVMAtomicRMWBinOpMin : LLVMAtomicRMWBinOpUMin;
        break;
    case TJ_ATOMIC_AND: bop = LLVMAtomicRMWBinOpAnd; break;
    case TJ_ATOMIC_OR: bop = LLVMAtomicRMWBinOpOr; break;
    case TJ_ATOMIC_XOR: bop = LLVMAtomicRMWBinOpXor; break;
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
    LLVMBasicBlockRef cont = tjj_llvm_guard_begin(g->b, mask, "atomic");
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
    old = tjj_llvm_guard_value(g->b, cont, before, old, LLVMConstNull(value_type(g, rt)));
    if (rt->rank == 0)
        g->ssa[op->result] = old;
    else if (g->slot[op->result] >= 0)
        tjj_cpu_store_elem(g, g->slot[op->result], rt, idx, old);
    tjj_cpu_nest_end(g, &n);
}
