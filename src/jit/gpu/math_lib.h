/* SPDX-License-Identifier: MIT */
/*
 * math_lib.h — the contract between the two halves of the GPU's math
 * library: math.c (exp, exp2, log, log2, fmod, the helpers below, and the
 * dispatch of every float op the GPU computes its own way) and math_f64.c
 * (the functions computed in f64 for every float dtype: trigonometric,
 * hyperbolic and their inverses, erf, pow, log1p, expm1, log10, exp10,
 * cbrt, hypot), with math_special.c (erfc, lgamma). Private to src/jit/gpu/.
 *
 * A library function is an internal function of the kernel's module,
 * "tjm_<name>_<f32|f64>", built on first use (tjj_gmath_call); its body is
 * plain LLVM IR with no NVPTX intrinsic where it works in f64, which is
 * what lets tests/test_gpu_math_host run it on the host.
 */
#ifndef TJIT_GPU_MATH_LIB_H
#define TJIT_GPU_MATH_LIB_H

#include "backend.h"

/* ln 2 and log2(e), each as a double and the double of what it misses. */
#define TJJ_LN2 0x1.62e42fefa39efp-1
#define TJJ_LN2_LO 0x1.abc9e3b39803fp-56
#define TJJ_LOG2E 0x1.71547652b82fep0
#define TJJ_LOG2E_LO 0x1.777d0ffda0d24p-56

static inline LLVMValueRef c_int(LLVMTypeRef t, int64_t v) { return LLVMConstInt(t, (unsigned long long)v, 1); }
static inline LLVMValueRef c_real(LLVMTypeRef t, double v) { return LLVMConstReal(t, v); }

/* The body of a library function: its result from its parameters, built
 * with g->b in the function's entry block. */
typedef LLVMValueRef (*tjj_gmath_body)(tjj_gpu_gen *g, LLVMValueRef *args);

/* A call of library function base (one or two parameters of args[0]'s
 * type), built by body the first time the module needs it. */
TJI_FUNC LLVMValueRef tjj_gmath_call(tjj_gpu_gen *g, const char *base, LLVMValueRef *args, unsigned nargs,
                                     tjj_gmath_body body);

TJI_FUNC LLVMValueRef tjj_gmath_fma(tjj_gpu_gen *g, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c);
/* r, or x where x is NaN. */
TJI_FUNC LLVMValueRef tjj_gmath_keep_nan(tjj_gpu_gen *g, LLVMValueRef x, LLVMValueRef r);
/* x clamped to [lo, hi] (NaN gives lo: maxnum ignores it). */
TJI_FUNC LLVMValueRef tjj_gmath_clamp(tjj_gpu_gen *g, LLVMValueRef x, double lo, double hi);
/* 2^n as a double, for an i32 n in the normal range. */
TJI_FUNC LLVMValueRef tjj_gmath_pow2_f64(tjj_gpu_gen *g, LLVMValueRef n);

/* f64: exp(rh + rl) 2^n for |rh| <= 0.35, tiny rl and an integral double n,
 * |n| <= 1200 (exp's reduction done by the caller). */
TJI_FUNC LLVMValueRef tjj_gmath_exp_core(tjj_gpu_gen *g, LLVMValueRef n, LLVMValueRef rh, LLVMValueRef rl);
/* Bodies: exp of a double; log of a float or double. */
TJI_FUNC LLVMValueRef tjj_gmath_exp_f64(tjj_gpu_gen *g, LLVMValueRef *args);
TJI_FUNC LLVMValueRef tjj_gmath_log(tjj_gpu_gen *g, LLVMValueRef *args);
/* log's parts: for x = 2^e m (m in [sqrt(1/2), sqrt(2))), log(m), and e as
 * a float in *e_out; then the special values (x <= 0, inf, NaN) over r. */
TJI_FUNC LLVMValueRef tjj_gmath_log_core(tjj_gpu_gen *g, LLVMValueRef x, LLVMValueRef *e_out);
TJI_FUNC LLVMValueRef tjj_gmath_log_special(tjj_gpu_gen *g, LLVMValueRef x, LLVMValueRef r);

/* math_f64.c: op code of compute-type x (and y), or NULL if code is not one
 * of its functions. */
TJI_FUNC LLVMValueRef tjj_gmath_f64(tjj_gpu_gen *g, tji_opcode code, LLVMValueRef x, LLVMValueRef y);
/* math_f64.c: a call of erf of the double x. */
TJI_FUNC LLVMValueRef tjj_gmath_erf(tjj_gpu_gen *g, LLVMValueRef x);
/* math_special.c: the body of erfc of a double. */
TJI_FUNC LLVMValueRef tjj_gmath_erfc_body(tjj_gpu_gen *g, LLVMValueRef *args);
/* math_special.c: the body of lgamma of a double. */
TJI_FUNC LLVMValueRef tjj_gmath_lgamma_body(tjj_gpu_gen *g, LLVMValueRef *args);

#endif
