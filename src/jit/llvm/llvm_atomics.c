/* SPDX-License-Identifier: MIT */
/*
 * llvm_atomics.c — float atomics without an instruction, as one
 * compare-and-swap loop both back ends emit.
 *
 * Neither target has an atomic add, max or min of f16 or bf16 (x86 has no
 * 16-bit float arithmetic at all), and NVPTX has no float atomic max or
 * min. Each back end once had its own loop, and they had drifted: the CPU's
 * wrote back even a value that did not change, the GPU's did not; the
 * CPU's kept xchg in the loop, the GPU's swapped bits. This is the one
 * version:
 *
 *   old = atomic load (monotonic)
 *   loop: new = round(op(ext(old), ext(v)))    -- in f32 (f64 for f64)
 *         if bits(new) == bits(old): done       -- nothing to write
 *         (seen, ok) = cmpxchg(ptr, old, new)   -- the caller's ordering and scope
 *         if ok: done; else old = seen, loop
 *
 * It returns the value it replaced, so an atomic gives every caller a
 * distinct old value (test_half_atomics checks the tickets under
 * contention). One rounding per update: f32 holds the exact sum of two f16
 * or bf16 values up to a rounding that cannot change the 16-bit result
 * (24 >= 2 * 11 + 2 bits), so the update is the correctly rounded 16-bit
 * sum. max and min are maxnum and minnum, the semantics of atomicrmw
 * fmax/fmin that the other float atomics use: NaN in v is ignored.
 * xchg is not here: exchanging bits needs no arithmetic (atomicrmw xchg).
 */
#include "llvm_scalar.h"
#include "llvm_shared.h"

static LLVMBasicBlockRef new_block(LLVMBuilderRef b, LLVMContextRef ctx, const char *name)
{
    return LLVMAppendBasicBlockInContext(ctx, LLVMGetBasicBlockParent(LLVMGetInsertBlock(b)), name);
}

LLVMValueRef tjj_llvm_float_atomic(const tjj_llvm_types *ty, LLVMModuleRef mod, LLVMBuilderRef b,
                                   const tjj_llvm_atomic_order *order, tj_atomic_op aop, tj_dtype dt,
                                   LLVMValueRef ptr, LLVMValueRef v)
{
    tjj_ls ls = tjj_ls_view(ty, mod, b);
    LLVMTypeRef ft = tjj_ls_dtype_type(&ls, dt); /* bf16: its bits already */
    LLVMTypeRef it = LLVMIntTypeInContext(ty->ctx, (unsigned)tjs_dtype_bits(dt));
    LLVMValueRef start = LLVMBuildLoad2(b, it, ptr, "");
    LLVMSetAlignment(start, (unsigned)tj_dtype_size(dt));
    LLVMSetOrdering(start, LLVMAtomicOrderingMonotonic);
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(b), loop = new_block(b, ty->ctx, "atomic.loop");
    LLVMBasicBlockRef write = new_block(b, ty->ctx, "atomic.cas"), done = new_block(b, ty->ctx, "atomic.done");
    LLVMBuildBr(b, loop);
    LLVMPositionBuilderAtEnd(b, loop);
    LLVMValueRef old = LLVMBuildPhi(b, it, "");
    LLVMValueRef x = tjj_ls_fext(&ls, ft == it ? old : LLVMBuildBitCast(b, old, ft, ""), dt);
    LLVMValueRef y = tjj_ls_fext(&ls, v, dt), r;
    switch (aop) {
    case TJ_ATOMIC_ADD: r = LLVMBuildFAdd(b, x, y, ""); break;
    case TJ_ATOMIC_MAX: r = tjj_ls_intrinsic2(&ls, "llvm.maxnum", x, y); break;
    default: r = tjj_ls_intrinsic2(&ls, "llvm.minnum", x, y); break;
    }
    r = tjj_ls_fround(&ls, r, dt);
    LLVMValueRef new_bits = ft == it ? r : LLVMBuildBitCast(b, r, it, "");
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntEQ, new_bits, old, ""), done, write);
    LLVMPositionBuilderAtEnd(b, write);
    LLVMValueRef pair = LLVMBuildAtomicCmpXchgSyncScope(b, ptr, old, new_bits, order->success, order->failure,
                                                        order->scope);
    LLVMValueRef seen = LLVMBuildExtractValue(b, pair, 0, "");
    LLVMBuildCondBr(b, LLVMBuildExtractValue(b, pair, 1, ""), done, loop);
    LLVMValueRef in[2] = {start, seen};
    LLVMBasicBlockRef from[2] = {pre, write};
    LLVMAddIncoming(old, in, from, 2);
    LLVMPositionBuilderAtEnd(b, done);
    LLVMValueRef result = LLVMBuildPhi(b, it, "");
    LLVMValueRef rin[2] = {old, old};
    LLVMBasicBlockRef rfrom[2] = {loop, write};
    LLVMAddIncoming(result, rin, rfrom, 2);
    return ft == it ? result : LLVMBuildBitCast(b, result, ft, "");
}
