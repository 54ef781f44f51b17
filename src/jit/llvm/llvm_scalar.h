/* SPDX-License-Identifier: MIT */
/*
 * llvm_scalar.h — the element-wise semantics of tjit, as LLVM IR, shared by
 * the CPU back end (cpu/cpu_elementwise.c) and the GPU back end (gpu/math.c).
 * See llvm_scalar.c for why there is one copy.
 */
#ifndef TJIT_LLVM_SCALAR_H
#define TJIT_LLVM_SCALAR_H

#include <llvm-c/Core.h>

#include "../../builder/ir.h"
#include "llvm_shared.h"

/* What the shared code needs of a back end's generator state; each back end
 * fills one from its own (b is where code goes now). */
typedef struct tjj_ls {
    LLVMContextRef ctx;
    LLVMModuleRef mod;
    LLVMBuilderRef b;
    LLVMTypeRef t_i1, t_i8, t_i16, t_i32, t_i64, t_half, t_float, t_double;
    LLVMTypeRef t_ptr; /* a tile pointer: generic (CPU), global (GPU) */
    int native_f32_min_max; /* f32 min/max as LLVM's maximum(num) and
                               minimum(num), which the target has as one
                               instruction (NVPTX); else order keys */
} tjj_ls;

/* The view of a back end whose types are ty, emitting at b into mod; its
 * t_ptr is ty's generic pointer (a GPU sets its global one). */
TJI_FUNC tjj_ls tjj_ls_view(const tjj_llvm_types *ty, LLVMModuleRef mod, LLVMBuilderRef b);

/* SSA type of a dtype: i1 as i1, bf16 as its 16 bits (i16), f16 as half,
 * f8e4m3 and f8e5m2 as their byte (i8). */
TJI_FUNC LLVMTypeRef tjj_ls_dtype_type(const tjj_ls *ls, tj_dtype dt);
/* In memory: i1 as a byte, everything else as in SSA form. */
TJI_FUNC LLVMTypeRef tjj_ls_mem_type(const tjj_ls *ls, tj_dtype dt);
/* The type a dtype is computed in: f32 for f16, bf16 and the fp8s, else its
 * SSA type. */
TJI_FUNC LLVMTypeRef tjj_ls_compute_type(const tjj_ls *ls, tj_dtype dt);

/* f16/bf16/fp8 -> f32 (exact); other dtypes unchanged. */
TJI_FUNC LLVMValueRef tjj_ls_fext(const tjj_ls *ls, LLVMValueRef v, tj_dtype dt);
/* A compute-type value (f32 or f64) rounded once to float dtype dt (fp8:
 * to nearest even, saturating, NaN 0x7f, as tj_f32_to_f8e4m3/e5m2). */
TJI_FUNC LLVMValueRef tjj_ls_fround(const tjj_ls *ls, LLVMValueRef v, tj_dtype dt);
/* The i8 constant of an fp8 dtype's value v (already rounded to dt). */
TJI_FUNC LLVMValueRef tjj_ls_fp8_const(const tjj_ls *ls, tj_dtype dt, double v);
/* SSA form <-> memory form of a value of type t (i1 <-> i8). */
TJI_FUNC LLVMValueRef tjj_ls_to_mem(const tjj_ls *ls, LLVMValueRef v, const tji_type *t);
TJI_FUNC LLVMValueRef tjj_ls_from_mem(const tjj_ls *ls, LLVMValueRef v, const tji_type *t);

/* Calls LLVM intrinsic name (which must exist) with its overload types. */
TJI_FUNC LLVMValueRef tjj_ls_intrinsic(const tjj_ls *ls, const char *name, LLVMTypeRef *overloads,
                                       unsigned noverloads, LLVMValueRef *args, unsigned nargs);
/* Calls an LLVM intrinsic by name, overloaded on the first argument's type. */
TJI_FUNC LLVMValueRef tjj_ls_intrinsic1(const tjj_ls *ls, const char *name, LLVMValueRef x);
TJI_FUNC LLVMValueRef tjj_ls_intrinsic2(const tjj_ls *ls, const char *name, LLVMValueRef x,
                                        LLVMValueRef y);

/* The integer key of a compute-type float (f32 -> i32, f64 -> i64) whose
 * signed order is min/max's order: -0 below +0, a NaN below every number
 * for a max that ignores NaN (above for a min), above for one that
 * propagates it (below for a min). from_order_key inverts it; a NaN's key
 * becomes the quiet NaN. Reductions compare keys: the same bits on every
 * back end, and integer reductions that LLVM vectorizes. */
TJI_FUNC LLVMValueRef tjj_ls_order_key(const tjj_ls *ls, LLVMValueRef x, int is_max, int propagate_nan);
TJI_FUNC LLVMValueRef tjj_ls_from_order_key(const tjj_ls *ls, LLVMValueRef key, LLVMTypeRef ft,
                                            int is_max, int propagate_nan);

/* The float ops whose code differs between targets (remainder, exp, exp2,
 * log, log2, sigmoid), on compute-type values x and y (y NULL for one
 * operand); NULL when the op is not defined for floats. */
typedef LLVMValueRef (*tjj_ls_target_math)(void *target, tji_opcode code, LLVMValueRef x,
                                           LLVMValueRef y);

/* One element of an element-wise op (SPLAT, shape ops and LOAD excluded)
 * of fn from its operands' elements a[0..nargs-1]; float ops that only the
 * target knows go to math(target, ...). NULL when the op is not defined
 * for its operand type: the caller reports it. */
TJI_FUNC LLVMValueRef tjj_ls_elementwise(const tjj_ls *ls, const tji_func *fn, const tji_op *op,
                                         LLVMValueRef *a, tjj_ls_target_math math, void *target);

#endif
