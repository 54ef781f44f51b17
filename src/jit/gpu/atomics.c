/* SPDX-License-Identifier: MIT */
/*
 * atomics.c — ATOMIC and ATOMIC_CAS on global memory.
 *
 * Each element's atomic is done once, by its owning slot, in the op's
 * scope (.scope: the CTA, the GPU by default, or the system) and memory
 * order (.sem; acquire-release by default, Triton's). Compare-and-swap
 * (and the loops built on it) carries that order itself. LLVM 22 lowers
 * an atomicrmw (add, max, min, xchg, and, or, xor) to a relaxed atom with
 * fences of its own choosing, and drops its scope, so tjit emits every
 * atomicrmw relaxed and fences it where its order asks: a release fence
 * before the op's first element, an acquire fence after its last (each a
 * fence.acq_rel of the scope, per op and thread, not per element). That
 * orders a "last program to arrive" count or a spin lock's release as
 * Triton's atom.acq_rel would; .sem = TJ_SEM_RELAXED gets no fence. A
 * system-scope atom of 32 or 64 bits is written in PTX (atom.relaxed.sys);
 * narrower ones LLVM expands to a compare-and-swap loop, which keeps it.
 * An atomic's old value is then handed to the copies (a shuffle within a
 * warp, shared memory across warps: shared.c).
 * Float atomics that PTX lacks (max, min, and add of 16-bit floats) are the
 * compare-and-swap loop on the bits that the CPU back end emits too
 * (tjj_llvm_float_atomic, llvm_atomics.c), relaxed, in the op's scope and
 * fenced as an atomicrmw (the loop may end without writing, and then only
 * the fences order it). Atomics need no barrier among themselves; after a store they get
 * one (barriers.c places them).
 */
#include <stdio.h>

#include "gen.h"

/* --- atomics -------------------------------------------------------------------------------- */

/* The op's .sem as an LLVM ordering, and its .scope as a sync scope. */
static LLVMAtomicOrdering ordering(const tji_op *op)
{
    switch (op->sem) {
    case TJ_SEM_RELAXED: return LLVMAtomicOrderingMonotonic;
    case TJ_SEM_ACQUIRE: return LLVMAtomicOrderingAcquire;
    case TJ_SEM_RELEASE: return LLVMAtomicOrderingRelease;
    default: return LLVMAtomicOrderingAcquireRelease;
    }
}

static unsigned sync_scope(codegen *c, const tji_op *op)
{
    switch (op->scope) {
    case TJ_SCOPE_CTA: return LLVMGetSyncScopeID(c->g.ctx, "block", 5);
    case TJ_SCOPE_SYS: return LLVMGetSyncScopeID(c->g.ctx, "", 0);
    default: return c->g.device_scope;
    }
}

/* A system-scope atom of 32 or 64 bits as PTX of its own: LLVM 22 drops
 * the scope of an atomicrmw, and a GPU-scope atom is not atomic against
 * the host or a peer GPU. Its order comes from the fences around it. */
static LLVMValueRef sys_atom(codegen *c, LLVMAtomicRMWBinOp bop, LLVMValueRef ptr, LLVMValueRef v)
{
    LLVMTypeRef vt = LLVMTypeOf(v);
    int is_float = LLVMGetTypeKind(vt) != LLVMIntegerTypeKind;
    int wide = is_float ? LLVMGetTypeKind(vt) == LLVMDoubleTypeKind : LLVMGetIntTypeWidth(vt) == 64;
    const char *what = bop == LLVMAtomicRMWBinOpFAdd ? (wide ? "add.f64" : "add.f32")
                     : bop == LLVMAtomicRMWBinOpAdd  ? (wide ? "add.u64" : "add.u32")
                     : bop == LLVMAtomicRMWBinOpMax  ? (wide ? "max.s64" : "max.s32")
                     : bop == LLVMAtomicRMWBinOpUMax ? (wide ? "max.u64" : "max.u32")
                     : bop == LLVMAtomicRMWBinOpMin  ? (wide ? "min.s64" : "min.s32")
                     : bop == LLVMAtomicRMWBinOpUMin ? (wide ? "min.u64" : "min.u32")
                     : bop == LLVMAtomicRMWBinOpAnd  ? (wide ? "and.b64" : "and.b32")
                     : bop == LLVMAtomicRMWBinOpOr   ? (wide ? "or.b64" : "or.b32")
                     : bop == LLVMAtomicRMWBinOpXor  ? (wide ? "xor.b64" : "xor.b32")
                                                     : (wide ? "exch.b64" : "exch.b32");
    const char *reg = is_float ? (wide ? "d" : "f") : (wide ? "l" : "r");
    int global = LLVMGetPointerAddressSpace(LLVMTypeOf(ptr)) == 1;
    char text[96], constraints[32];
    snprintf(text, sizeof text, "atom.relaxed.sys%s.%s $0, [$1], $2;", global ? ".global" : "", what);
    snprintf(constraints, sizeof constraints, "=%s,l,%s,~{memory}", reg, reg);
    LLVMTypeRef params[2] = {LLVMTypeOf(ptr), vt};
    LLVMTypeRef fty = LLVMFunctionType(vt, params, 2, 0);
    LLVMValueRef fn = LLVMGetInlineAsm(fty, text, strlen(text), constraints, strlen(constraints), 1, 0,
                                       LLVMInlineAsmDialectATT, 0);
    return LLVMBuildCall2(c->g.b, fty, fn, (LLVMValueRef[]){ptr, v}, 2, "");
}

/* An atomicrmw, relaxed: the fences around the op give its order (see
 * above); of the system's scope, PTX of its own where LLVM would drop it. */
static LLVMValueRef atomic_rmw(codegen *c, const tji_op *op, LLVMAtomicRMWBinOp bop, LLVMValueRef ptr,
                               LLVMValueRef v)
{
    LLVMTypeRef vt = LLVMTypeOf(v);
    int bits = LLVMGetTypeKind(vt) == LLVMIntegerTypeKind ? (int)LLVMGetIntTypeWidth(vt)
             : LLVMGetTypeKind(vt) == LLVMDoubleTypeKind  ? 64
             : LLVMGetTypeKind(vt) == LLVMFloatTypeKind   ? 32 : 16;
    if (op->scope == TJ_SCOPE_SYS && bits >= 32)
        return sys_atom(c, bop, ptr, v);
    return LLVMBuildAtomicRMWSyncScope(c->g.b, bop, ptr, v, LLVMAtomicOrderingMonotonic, sync_scope(c, op));
}

/* cmpxchg of the op's order and scope (acq_rel in the GPU for none). */
static LLVMValueRef cas(codegen *c, const tji_op *op, LLVMValueRef ptr, LLVMValueRef cmp, LLVMValueRef v,
                        LLVMValueRef *ok)
{
    LLVMValueRef pair = LLVMBuildAtomicCmpXchgSyncScope(c->g.b, ptr, cmp, v,
                                                        op ? ordering(op) : LLVMAtomicOrderingAcquireRelease,
                                                        LLVMAtomicOrderingMonotonic,
                                                        op ? sync_scope(c, op) : c->g.device_scope);
    if (ok)
        *ok = LLVMBuildExtractValue(c->g.b, pair, 1, "");
    return LLVMBuildExtractValue(c->g.b, pair, 0, "");
}

LLVMValueRef tjj_gpu_atomic_cas(codegen *c, LLVMValueRef ptr, LLVMValueRef cmp, LLVMValueRef v, LLVMValueRef *ok)
{
    return cas(c, NULL, ptr, cmp, v, ok);
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
            old = cas(c, op, ptr, LLVMBuildBitCast(b, tjj_gpu_to_mem(&c->g, a1, rt), it, ""), v, NULL);
        } else {
            old = atomic_rmw(c, op, LLVMAtomicRMWBinOpXchg, ptr, v); /* fenced by the caller */
        }
        return tjj_gpu_from_mem(&c->g, LLVMBuildBitCast(b, old, mt, ""), rt);
    }
    if (is_float && (op->atomic != TJ_ATOMIC_ADD || dt == TJ_F16 || dt == TJ_BF16)) {
        /* relaxed: the fences give the order, also where the loop writes nothing */
        tjj_llvm_atomic_order order = {LLVMAtomicOrderingMonotonic, LLVMAtomicOrderingMonotonic, sync_scope(c, op)};
        return tjj_llvm_float_atomic(&c->g.ty, c->g.mod, b, &order, op->atomic, dt, ptr, a1);
    }
    LLVMAtomicRMWBinOp bop;
    switch (op->atomic) {
    case TJ_ATOMIC_ADD: bop = is_float ? LLVMAtomicRMWBinOpFAdd : LLVMAtomicRMWBinOpAdd; break;
    case TJ_ATOMIC_MAX: bop = is_signed ? LLVMAtomicRMWBinOpMax : LLVMAtomicRMWBinOpUMax; break;
    case TJ_ATOMIC_AND: bop = LLVMAtomicRMWBinOpAnd; break;
    case TJ_ATOMIC_OR: bop = LLVMAtomicRMWBinOpOr; break;
    case TJ_ATOMIC_XOR: bop = LLVMAtomicRMWBinOpXor; break;
    default: bop = is_signed ? LLVMAtomicRMWBinOpMin : LLVMAtomicRMWBinOpUMin; break;
    }
    return tjj_gpu_from_mem(&c->g, atomic_rmw(c, op, bop, ptr, tjj_gpu_to_mem(&c->g, a1, rt)), rt);
}

/* The fence an ATOMIC needs before (release) or after (acquire); a
 * compare-and-swap carries its order itself. */
static void fence(codegen *c, const tji_op *op, LLVMAtomicOrdering side)
{
    int wanted = side == LLVMAtomicOrderingRelease
                   ? op->sem == TJ_SEM_ACQ_REL || op->sem == TJ_SEM_RELEASE
                   : op->sem == TJ_SEM_ACQ_REL || op->sem == TJ_SEM_ACQUIRE;
    if (wanted && op->code == TJI_ATOMIC)
        LLVMBuildFenceSyncScope(c->g.b, side, sync_scope(c, op), "");
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
    tjj_gpu_barrier(c, TJP_BARRIER_BEFORE);
    fence(c, op, LLVMAtomicOrderingRelease);
    if (rt->rank == 0) {
        LLVMValueRef cond = and_cond(c, tjj_gpu_thread0_cond(c), mask ? live_cond(tjj_gpu_reg(c, mask, 0)) : NULL);
        cond = tjj_gpu_bounds_cond(c, ptr, (address){tjj_gpu_reg(c, ptr, 0), 0}, rt, 1, cond);
        LLVMBasicBlockRef before = LLVMGetInsertBlock(c->g.b);
        LLVMBasicBlockRef cont = tjj_llvm_guard_begin(c->g.b, cond, "atomic");
        LLVMValueRef old = atomic_one(c, op, rt, tjj_gpu_reg(c, ptr, 0), tjj_gpu_reg(c, op->args[1], 0),
                                      is_cas ? tjj_gpu_reg(c, op->args[2], 0) : NULL);
        old = tjj_llvm_guard_value(c->g.b, cont, before, old, LLVMConstNull(vt));
        fence(c, op, LLVMAtomicOrderingAcquire);
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
    fence(c, op, LLVMAtomicOrderingAcquire);
    if (c->uses[id])
        tjj_gpu_broadcast_from_owners(c, L, out);
    else
        for (uint32_t r = 0; r < n; r++)
            if (r & rdup)
                out[r] = out[r & ~rdup];
}
