/* SPDX-License-Identifier: MIT */
/*
 * llvm_shared.h — the LLVM helpers both back ends need, once: the type
 * cache, the kernel parameter ABI, the module dump, the optimizer run,
 * a loop's unroll hint, guards (if-then blocks) and float atomics by
 * compare-and-swap. The element-wise semantics are llvm_scalar.h's. See llvm_shared.c and
 * llvm_atomics.c for why each is shared.
 */
#ifndef TJIT_LLVM_SHARED_H
#define TJIT_LLVM_SHARED_H

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

#include "../../builder/ir.h"

/* The LLVM types code generation uses, made once per context. t_ptr is the
 * generic (address space 0) pointer. */
typedef struct tjj_llvm_types {
    LLVMContextRef ctx;
    LLVMTypeRef t_void, t_i1, t_i8, t_i16, t_i32, t_i64, t_half, t_float, t_double, t_ptr;
} tjj_llvm_types;

TJI_FUNC void tjj_llvm_types_init(tjj_llvm_types *ty, LLVMContextRef ctx);

/* Records the first error of code generation in *status (left as it is
 * when it holds one already): a TJ_ERR_COMPILE naming fn's kernel and, for
 * op >= 0, the op and its source line. Each back end calls it through its
 * own macro over its state (tjj_cpu_fail, tjj_gpu_fail). */
TJI_FUNC void tjj_llvm_fail(tj_status *status, const tji_func *fn, int32_t op, const char *fmt, ...)
    TJS_PRINTF(4, 5);

/* The kernel parameter ABI (jit.h) of tile-IR parameter p: a pointer is
 * ptr_type (the back end's address space), i1 is passed as a byte and
 * f16/bf16 as their 16 bits; param_value turns the argument into the SSA
 * form of the value (i1, half), with b in the entry block. */
TJI_FUNC LLVMTypeRef tjj_llvm_param_type(const tjj_llvm_types *ty, const tji_param *p, LLVMTypeRef ptr_type);
TJI_FUNC LLVMValueRef tjj_llvm_param_value(const tjj_llvm_types *ty, LLVMBuilderRef b, const tji_param *p,
                                           LLVMValueRef arg);

/* TJIT_DUMP=llvm: prints mod to stderr under "; ---- tjit: LLVM IR of
 * <target>kernel '<name>' <when> optimization ----" (target "" or "GPU "). */
TJI_FUNC void tjj_llvm_dump(LLVMModuleRef mod, const char *target, const char *name, const char *when);

/* Runs LLVM's default<O3> pipeline on mod for tm; vectorize turns on the
 * loop and SLP vectorizers (else LLVM's defaults). A failure is reported
 * as a TJ_ERR_COMPILE naming the kernel. */
TJI_FUNC tj_status tjj_llvm_optimize(LLVMModuleRef mod, LLVMTargetMachineRef tm, int vectorize,
                                     const char *name);

/* Guards: guard_begin branches on cond (NULL: always, and no block) into
 * a new block named name of the function b is in, and returns the block
 * to continue in; guard_end closes it. guard_value is a value v computed
 * inside the guard (entered from block before), or otherwise where the
 * guard was not taken. */
/* A loop ID (the self-referential llvm.loop node) holding the n hint
 * nodes, for the back edge of a loop. */
TJI_FUNC LLVMValueRef tjj_llvm_loop_id(LLVMContextRef ctx, const LLVMMetadataRef *hints, unsigned n);
/* tl.range's loop_unroll_factor (a FOR's unroll) on the loop whose back
 * edge is branch: 1 is llvm.loop.unroll.disable, n > 1
 * llvm.loop.unroll.count n; 0 leaves the loop to LLVM. */
TJI_FUNC void tjj_llvm_loop_unroll(LLVMContextRef ctx, LLVMValueRef branch, int unroll);

TJI_FUNC LLVMBasicBlockRef tjj_llvm_guard_begin(LLVMBuilderRef b, LLVMValueRef cond, const char *name);
TJI_FUNC void tjj_llvm_guard_end(LLVMBuilderRef b, LLVMBasicBlockRef cont);
TJI_FUNC LLVMValueRef tjj_llvm_guard_value(LLVMBuilderRef b, LLVMBasicBlockRef cont, LLVMBasicBlockRef before,
                                           LLVMValueRef v, LLVMValueRef otherwise);

/* How an atomic synchronizes: the orderings of a successful and a failed
 * compare-and-swap, and its sync scope (LLVMGetSyncScopeID; "" is the
 * whole system, the CPU's; "device" the GPU's). */
typedef struct tjj_llvm_atomic_order {
    LLVMAtomicOrdering success, failure;
    unsigned scope;
} tjj_llvm_atomic_order;

/* A float atomic add, max or min that has no instruction (f16 and bf16
 * everywhere; max and min of any float on a GPU), on float dtype dt at ptr
 * with value v in SSA form, as a compare-and-swap loop on the bits that
 * computes in f32 (f64 for f64) and rounds once; max and min are LLVM's
 * maxnum and minnum, as atomicrmw fmax/fmin are. A value that would not
 * change is not written. Returns the old value in SSA form. b is where
 * code goes now; ty holds its context's types. */
TJI_FUNC LLVMValueRef tjj_llvm_float_atomic(const tjj_llvm_types *ty, LLVMModuleRef mod, LLVMBuilderRef b,
                                            const tjj_llvm_atomic_order *order, tj_atomic_op aop, tj_dtype dt,
                                            LLVMValueRef ptr, LLVMValueRef v);

#endif
