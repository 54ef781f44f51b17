/* SPDX-License-Identifier: MIT */
/*
 * atomics.c — ATOMIC and ATOMIC_CAS on global memory.
 *
 * Each element's atomic is done once, by its owning slot, with device
 * scope and acquire-release order, Triton's default: compare-and-swap (and
 * the loops built on it) carries that order itself, but LLVM 22 lowers any
 * atomicrmw (add, max, min, xchg) to a relaxed atom, so those ops are
 * fenced: a release fence before the op's first element and an acquire
 * fence after its last (two fence.acq_rel.gpu per op and thread, not per
 * element), which orders a "last program to arrive" count or a spin lock's
 * release as Triton's atom.acq_rel would; an atomic's old value is then handed to
 * the copies (a shuffle within a warp, shared memory across warps: shared.c).
 * Float atomics that PTX lacks (max, min, and add of 16-bit floats) are the
 * compare-and-swap loop on the bits that the CPU back end emits too
 * (tjj_llvm_float_atomic, llvm_atomics.c), with this file's order and
 * scope. Atomics need no barrier among
 * themselves; after a store they get one (barriers.c places them).
 */
#include "gen.h"

/* --- atomics -------------------------------------------------------------------------------- */

static LLVMValueRef atomic_rmw(codegen *c, LLVMAtomicRMWBinOp bop, LLVMValueRef ptr, LLVMValueRef v)
{
    return LLVMBuildAtomicRMWSyncScope(c->g.b, bop, ptr, v, LLVMAtomicOrderingAcquireRelease, c->g.device_scope);
}

LLVMValueRef tjj_gpu_atomic_cas(codegen *c, LLVMValueRef ptr, LLVMValueRef cmp, LLVMValueRef v, LLVMValueRef *ok)
{
    LLVMValueRef pair = LLVMBuildAtomicCmpXchgSyncScope(c->g.b, ptr, cmp, v, LLVMAtomicOrderingAcquireRelease,
                                                        LLVMAtomicOrderingMonotonic, c->g.device_scope);
    if (ok)
        *ok = LLVMBuildExtractValue(c->g.b, pair, 1, "");
    return LLVMBuildExtractValue(c->g.b, pair, 0, "");
}

/* One atomic on one element; returns the old value in SSA form. */
static LLVMValueRef atomic_one(codegen *c, const tji_op *op, const tji_type *rt, LLVMValueRef ptr,
                               LLVMValueRef a1, LLVMValueRef a2)
{
    LLVMBuilderRef b = c->g.b;
    tj_dtype dt = rt->dtype;
    int is_float = tjs_dtype_is_float(dt), is_signed = tjs_dtype_is_signed(dt);
    LLVMTypeRef mt = tjj_gpu_mem_type(&c->g, rt);
    LLVMTypeRef it = is_float ? LLVMIntTypeInContext(c->g.ctx, (unsigned)tjs_dtype_bits(dt)) : mt;
    if (op->code == TJI_ATOMIC_CAS || op->atomic == TJ_ATOMIC_XCHG) {
        /* on the bits: cmpxchg compares bits, and xchg of bits is exact */
        LLVMValueRef v = LLVMBuildBitCast(b, tjj_gpu_to_mem(&c->g, op->code == TJI_ATOMIC_CAS ? a2 : a1, rt), it, "");
        LLVMValueRef old;
        if (op->code == TJI_ATOMIC_CAS) {
            old = tjj_gpu_atomic_cas(c, ptr, LLVMBuildBitCast(b, tjj_gpu_to_mem(&c->g, a1, rt), it, ""), v, NULL);
        } else {
            old = atomic_rmw(c, LLVMAtomicRMWBinOpXchg, ptr, v); /* fenced by the caller */
        }
        return tjj_gpu_from_mem(&c->g, LLVMBuildBitCast(b, old, mt, ""), rt);
    }
    if (is_float && (op->atomic != TJ_ATOMIC_ADD || dt == TJ_F16 || dt == TJ_BF16)) {
        tjj_llvm_atomic_order order = {LLVMAtomicOrderingAcquireRelease, LLVMAtomicOrderingMonotonic,
                                       c->g.device_scope}; /* tjj_gpu_atomic_cas's */
        return tjj_llvm_float_atomic(&c->g.ty, c->g.mod, b, &order, op->atomic, dt, ptr, a1);
    }
    LLVMAtomicRMWBinOp bop;
    switch (op->atomic) {
    case TJ_ATOMIC_ADD: bop = is_float ? LLVMAtomicRMWBinOpFAdd : LLVMAtomicRMWBinOpAdd; break;
    case TJ_ATOMIC_MAX: bop = is_signed ? LLVMAtomicRMWBinOpMax : LLVMAtomicRMWBinOpUMax; break;
    default: bop = is_signed ? LLVMAtomicRMWBinOpMin : LLVMAtomicRMWBinOpUMin; break;
    }
    return tjj_gpu_from_mem(&c->g, atomic_rmw(c, bop, ptr, tjj_gpu_to_mem(&c->g, a1, rt)), rt);
}

/* Does op lower to an atomicrmw, which LLVM leaves relaxed (see above)? */
static int needs_fences(const tji_op *op, tj_dtype dt)
{
    if (op->code == TJI_ATOMIC_CAS || op->atomic == TJ_ATOMIC_XCHG)
        return op->code != TJI_ATOMIC_CAS;
    return !tjs_dtype_is_float(dt) || (op->atomic == TJ_ATOMIC_ADD && dt != TJ_F16 && dt != TJ_BF16);
}

static void fence(codegen *c, LLVMAtomicOrdering order)
{
    LLVMBuildFenceSyncScope(c->g.b, order, c->g.device_scope, "");
}

/* ATOMIC (ptr, value, mask) and ATOMIC_CAS (ptr, cmp, value): done once per
 * element by its owner; masked-off elements do nothing and read 0. */
void tjj_gpu_emit_atomic(codegen *c, const tji_op *op)
{
    int is_cas = op->code == TJI_ATOMIC_CAS;
    int32_t ptr = op->args[0], id = op->result;
    int32_t mask = !is_cas && op->nargs > 2 ? op->args[2] : 0;
    const tji_type *rt = type_of(c, id);
    LLVMTypeRef vt = tjj_gpu_value_type(&c->g, rt);
    int fenced = needs_fences(op, rt->dtype);
    tjj_gpu_barrier(c, TJP_BARRIER_BEFORE);
    if (fenced)
        fence(c, LLVMAtomicOrderingRelease);
    if (rt->rank == 0) {
        LLVMValueRef cond = and_cond(c, tjj_gpu_thread0_cond(c), mask ? live_cond(tjj_gpu_reg(c, mask, 0)) : NULL);
        cond = tjj_gpu_bounds_cond(c, ptr, (address){tjj_gpu_reg(c, ptr, 0), 0}, rt, 1, cond);
        LLVMBasicBlockRef before = LLVMGetInsertBlock(c->g.b);
        LLVMBasicBlockRef cont = tjj_llvm_guard_begin(c->g.b, cond, "atomic");
        LLVMValueRef old = atomic_one(c, op, rt, tjj_gpu_reg(c, ptr, 0), tjj_gpu_reg(c, op->args[1], 0),
                                      is_cas ? tjj_gpu_reg(c, op->args[2], 0) : NULL);
        old = tjj_llvm_guard_value(c->g.b, cont, before, old, LLVMConstNull(vt));
        if (fenced)
            fence(c, LLVMAtomicOrderingAcquire);
        c->ssa[id] = c->uses[id] ? tjj_gpu_broadcast_scalar(c, old) : old;
        return;
    }
    for (int i = 1; i < op->nargs; i++)
        if (op->args[i] && !tjj_gpu_check_same_layout(c, op->args[i], ptr))
            return;
    if (!tjj_gpu_check_same_layout(c, id, ptr))
        return;
    const tjp_layout *L = layout_of(c, ptr);
    if (!tjj_gpu_bases_independent(L)) {
        FAIL(c, "internal error: a layout holds an element twice");
        return;
    }
    LLVMValueRef owner = tjj_gpu_owner_cond(c, L);
    uint32_t n = (uint32_t)nregs_of(c, ptr), rdup = reg_dup_mask(L);
    LLVMValueRef *out = tjj_gpu_regs_for(c, id);
    for (uint32_t r = 0; r < n && c->g.status == TJ_OK; r++) {
        if (r & rdup)
            continue;
        LLVMValueRef cond = and_cond(c, owner, mask ? live_cond(tjj_gpu_reg(c, mask, r)) : NULL);
        cond = tjj_gpu_bounds_cond(c, ptr, (address){tjj_gpu_reg(c, ptr, r), 0}, rt, 1, cond);
        LLVMBasicBlockRef before = LLVMGetInsertBlock(c->g.b);
        LLVMBasicBlockRef cont = tjj_llvm_guard_begin(c->g.b, cond, "atomic");
        LLVMValueRef old = atomic_one(c, op, rt, tjj_gpu_reg(c, ptr, r), tjj_gpu_reg(c, op->args[1], r),
                                      is_cas ? tjj_gpu_reg(c, op->args[2], r) : NULL);
        out[r] = tjj_llvm_guard_value(c->g.b, cont, before, old, LLVMConstNull(vt));
    }
    if (fenced)
        fence(c, LLVMAtomicOrderingAcquire);
    if (c->uses[id])
        tjj_gpu_broadcast_from_owners(c, L, out);
    else
        for (uint32_t r = 0; r < n; r++)
            if (r & rdup)
                out[r] = out[r & ~rdup];
}
