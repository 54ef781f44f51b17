/* SPDX-License-Identifier: MIT */
/*
 * backend.h — how the GPU code generator (src/jit/gpu/, gen.h lists its
 * files) talks to its element arithmetic, math.c (private to them; the rest
 * of tjit sees only jit.h).
 *
 *   math.c       one element of an element-wise op: the shared rules of
 *                llvm_scalar.c (the CPU back end's too) over this state,
 *                and the math library (no libdevice), with math_f64.c
 *
 * The generator state here is the part of gen.h's codegen that math.c
 * needs: its types are llvm_shared.h's tjj_llvm_types (the CPU's too),
 * plus the global pointer; the code generator owns it; math.c reads its types, builder and
 * module, and reports errors through tjj_gpu_fail. tests/test_gpu_math_host
 * builds one of its own, with no kernel.
 */
#ifndef TJIT_GPU_BACKEND_H
#define TJIT_GPU_BACKEND_H

#include <llvm-c/Core.h>

#include "../../passes/passes.h"
#include "../jit.h"
#include "../llvm/llvm_shared.h"

typedef struct tjj_gpu_gen {
    const tji_func *fn;
    const tjp_layout_plan *plan;
    LLVMContextRef ctx;
    LLVMModuleRef mod;
    LLVMBuilderRef b;        /* where code goes now */
    LLVMValueRef func;       /* the kernel */
    tjj_llvm_types ty;       /* llvm_shared.h: the context's types (t_ptr is generic) */
    LLVMTypeRef t_gptr;      /* global memory: every tile-IR pointer */
    unsigned device_scope;   /* sync scope id of "device" */
    int32_t cur_op;          /* the op being emitted, for messages; -1 if none */
    tj_status status;        /* the first error */
} tjj_gpu_gen;

/* Records the first error, naming the kernel, the current op and its line
 * (llvm_shared.h). */
#define tjj_gpu_fail(g, ...) tjj_llvm_fail(&(g)->status, (g)->fn, (g)->cur_op, __VA_ARGS__)

/* --- math.c ------------------------------------------------------------------ */

/* SSA type of a value of type t: i1 as i1, bf16 as its 16 bits (i16), f16 as
 * half, pointers as global pointers. */
TJI_FUNC LLVMTypeRef tjj_gpu_value_type(const tjj_gpu_gen *g, const tji_type *t);
TJI_FUNC LLVMTypeRef tjj_gpu_dtype_type(const tjj_gpu_gen *g, tj_dtype dt);
/* In memory: i1 as a byte, everything else as in SSA form. */
TJI_FUNC LLVMTypeRef tjj_gpu_mem_type(const tjj_gpu_gen *g, const tji_type *t);
/* The type 16-bit floats are computed in (f32); other dtypes as themselves. */
TJI_FUNC LLVMTypeRef tjj_gpu_compute_type(const tjj_gpu_gen *g, tj_dtype dt);

/* f16/bf16/fp8 -> f32 (exact); other dtypes unchanged. */
TJI_FUNC LLVMValueRef tjj_gpu_fext(tjj_gpu_gen *g, LLVMValueRef v, tj_dtype dt);
/* A compute-type value (f32 or f64) rounded to float dtype dt. */
TJI_FUNC LLVMValueRef tjj_gpu_fround(tjj_gpu_gen *g, LLVMValueRef v, tj_dtype dt);
/* The i8 constant of fp8 dtype dt's value v (rounded to dt by the builder). */
TJI_FUNC LLVMValueRef tjj_gpu_fp8_const(tjj_gpu_gen *g, tj_dtype dt, double v);
/* min/max order keys of compute-type floats (llvm_scalar.h), and back to dt's compute type. */
TJI_FUNC LLVMValueRef tjj_gpu_order_key(tjj_gpu_gen *g, LLVMValueRef v, int is_max, int propagate_nan);
TJI_FUNC LLVMValueRef tjj_gpu_from_order_key(tjj_gpu_gen *g, LLVMValueRef key, tj_dtype dt, int is_max,
                                             int propagate_nan);
/* SSA form <-> memory form (i1 <-> i8). */
TJI_FUNC LLVMValueRef tjj_gpu_to_mem(tjj_gpu_gen *g, LLVMValueRef v, const tji_type *t);
TJI_FUNC LLVMValueRef tjj_gpu_from_mem(tjj_gpu_gen *g, LLVMValueRef v, const tji_type *t);

/* inline_asm.c: one run of INLINE_ASM's PTX on its pack of elements:
 * in[i][0 .. pack) of operand i, out[0 .. pack) of the result. */
TJI_FUNC void tjj_gpu_inline_asm(tjj_gpu_gen *g, const tji_op *op, LLVMValueRef *const *in, LLVMValueRef *out);

/* One element of an element-wise op (SPLAT, shape ops and LOAD excluded)
 * from its operands' elements a[0..nargs-1]. */
TJI_FUNC LLVMValueRef tjj_gpu_elementwise(tjj_gpu_gen *g, const tji_op *op, LLVMValueRef *a);
/* The GPU's own float function code (exp, log, sin, pow, ...) of compute-type
 * x and y (y NULL for one operand), with no kernel: g needs only the
 * context, module, builder and types, and cur_op -1. The IR is plain LLVM
 * (no NVPTX intrinsic for f64), so tests/test_gpu_math_host.c runs it on the
 * host to measure its error where there is no GPU. */
TJI_FUNC LLVMValueRef tjj_gpu_math(tjj_gpu_gen *g, tji_opcode code, LLVMValueRef x, LLVMValueRef y);

/* Calls an LLVM intrinsic by name, with its overload types. */
TJI_FUNC LLVMValueRef tjj_gpu_intrinsic(tjj_gpu_gen *g, const char *name, LLVMTypeRef *overloads,
                                        unsigned noverloads, LLVMValueRef *args, unsigned nargs);
TJI_FUNC LLVMValueRef tjj_gpu_intrinsic1(tjj_gpu_gen *g, const char *name, LLVMValueRef x);
TJI_FUNC LLVMValueRef tjj_gpu_intrinsic2(tjj_gpu_gen *g, const char *name, LLVMValueRef x,
                                         LLVMValueRef y);

#endif
