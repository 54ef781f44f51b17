/* SPDX-License-Identifier: MIT */
/*
 * math.c — one element of an element-wise op, for the GPU back end.
 *
 * The GPU must compute what the CPU back end computes (a differential test
 * compares them), so the element-wise rules (integer division, shifts,
 * casts, f16/bf16 rounding, comparisons, the IEEE float ops) are not here:
 * both back ends call the one copy in llvm_scalar.c, over this generator's
 * state. What is here is the GPU's own: the float functions the CPU takes
 * from libm (exp, exp2, log, log2, sigmoid, sin, cos, tanh, erf, pow, and
 * remainder as C's fmod, exact, as on the CPU), handed to llvm_scalar.c as
 * a callback.
 *
 * There is no libm on the GPU and tjit does not use libdevice, so the math
 * functions are written here in LLVM IR, each as an internal function of the
 * module (made on first use; the inliner decides). NVPTX has no lowering for
 * llvm.log/llvm.exp and friends (it stops with a fatal error), so none of
 * those intrinsics is ever emitted: only ones the back end selects natively
 * (sqrt, fma, floor, ceil, rint, fabs, minnum, maxnum, copysign, and exp2 on
 * f32, which becomes ex2.approx.f32).
 *
 * Accuracy against the C library (glibc, through the CPU back end), measured
 * on an H200 over 65536 inputs per function: f32 exp on [-87, 88], exp2 on
 * [-122, 123], log and log2 on 2^[-140, 127] (subnormals included) and
 * [0.9, 1.1]; f64 exp on [-700, 700], exp2 on [-980, 980], log and log2 on
 * 2^[-1070, 1020] and [0.9, 1.1]. Maximum error, in ulp of the result type:
 *
 *   function  f32  f64  how
 *   exp        2    1   f32: ex2.approx(x*log2e), the product's rounding
 *                       error (by fma) put back to first order.
 *                       f64: x = n ln2 + r (Cody-Waite with fma), Taylor
 *                       series of degree 13, 2^n as two exact scalings
 *   exp2       2    1   f32: ex2.approx.f32. f64: n = rint(x), then
 *                       2^f = e^(f ln2) with ln2 split in two
 *   log        1    1   x = 2^e m, m in [sqrt(1/2), sqrt(2)), f = m - 1,
 *                       s = f/(2+f), log(1+f) = f - (f^2/2 - s(f^2/2 + R)),
 *                       R the atanh series (5 terms for f32, 11 for f64)
 *   log2       1    1   the same, times log2(e) split in two
 *   sigmoid    4    2   1/(1+exp(-x)) with exp above
 *   sqrt       0    0   sqrt.rn
 *   rsqrt      0    0   1/sqrt, both correctly rounded, as on the CPU
 *   fmod       0    0   exact (binary long division)
 *   floor, ceil, abs, fma and division are IEEE operations: identical.
 *
 * The other functions (sin, cos, tan, their inverses, the hyperbolic
 * ones, erf, pow, log1p, expm1, log10, cbrt, hypot) are computed in f64
 * for every dtype: math_f64.c, which says how and how well. math_lib.h is
 * what the two files share.
 *
 * tj_fast_exp, tj_fast_exp2 and tj_fast_div (op->approx) trade that
 * accuracy for speed on f32, as Triton's tl.exp, tl.exp2 and `/` do:
 * ex2.approx.ftz.f32 of x*log2(e) (relative error below 2^-21 + 2^-23 |x|:
 * the product's rounding is not put back) or of x, and div.full.f32 (2 ulp
 * for divisors in [2^-126, 2^126]). The .ftz form is one MUFU.EX2; without
 * it ptxas computes two (of x and x/2) and squares the second where the
 * result would be subnormal (seen in the H200's SASS), and the exponential
 * units are what attention's softmax waits on. f64 keeps the precise forms.
 *
 * f16 and bf16 are computed in f32 and rounded: in the same run, f16 and
 * bf16 expressions with exp and log (2048 elements each) matched the CPU bit
 * for bit. The f32 log is a polynomial rather than lg2.approx, whose error is
 * absolute: near x = 1 it is a large relative one (log(1 + 1e-4) would be off
 * by about 0.1%).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "math_lib.h"
#include "llvm_scalar.h"

/* --- types and small helpers ---------------------------------------------------- */

LLVMTypeRef tjj_gpu_dtype_type(const tjj_gpu_gen *g, tj_dtype dt)
{
    tjj_ls ls = tjj_ls_view(&g->ty, g->mod, g->b);
    return tjj_ls_dtype_type(&ls, dt);
}

LLVMTypeRef tjj_gpu_value_type(const tjj_gpu_gen *g, const tji_type *t)
{
    return t->is_ptr ? g->t_gptr : tjj_gpu_dtype_type(g, t->dtype);
}

LLVMTypeRef tjj_gpu_mem_type(const tjj_gpu_gen *g, const tji_type *t)
{
    tjj_ls ls = tjj_ls_view(&g->ty, g->mod, g->b);
    return t->is_ptr ? g->t_gptr : tjj_ls_mem_type(&ls, t->dtype);
}

LLVMTypeRef tjj_gpu_compute_type(const tjj_gpu_gen *g, tj_dtype dt)
{
    tjj_ls ls = tjj_ls_view(&g->ty, g->mod, g->b);
    return tjj_ls_compute_type(&ls, dt);
}


LLVMValueRef tjj_gpu_intrinsic(tjj_gpu_gen *g, const char *name, LLVMTypeRef *overloads,
                               unsigned noverloads, LLVMValueRef *args, unsigned nargs)
{
    if (!LLVMLookupIntrinsicID(name, strlen(name))) {
        tjj_gpu_fail(g, "internal error: LLVM has no intrinsic %s", name);
        return LLVMGetPoison(LLVMTypeOf(args[0]));
    }
    tjj_ls ls = tjj_ls_view(&g->ty, g->mod, g->b);
    return tjj_ls_intrinsic(&ls, name, overloads, noverloads, args, nargs);
}

LLVMValueRef tjj_gpu_intrinsic1(tjj_gpu_gen *g, const char *name, LLVMValueRef x)
{
    LLVMTypeRef t = LLVMTypeOf(x);
    return tjj_gpu_intrinsic(g, name, &t, 1, &x, 1);
}

LLVMValueRef tjj_gpu_intrinsic2(tjj_gpu_gen *g, const char *name, LLVMValueRef x, LLVMValueRef y)
{
    LLVMTypeRef t = LLVMTypeOf(x);
    LLVMValueRef args[2] = {x, y};
    return tjj_gpu_intrinsic(g, name, &t, 1, args, 2);
}

LLVMValueRef tjj_gmath_fma(tjj_gpu_gen *g, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c)
{
    LLVMTypeRef t = LLVMTypeOf(a);
    LLVMValueRef args[3] = {a, b, c};
    return tjj_gpu_intrinsic(g, "llvm.fma", &t, 1, args, 3);
}

static LLVMBasicBlockRef block_here(tjj_gpu_gen *g, const char *name)
{
    LLVMValueRef f = LLVMGetBasicBlockParent(LLVMGetInsertBlock(g->b));
    return LLVMAppendBasicBlockInContext(g->ctx, f, name);
}

/* --- 16-bit floats and memory form: the shared rules ----------------------------------- */

LLVMValueRef tjj_gpu_fext(tjj_gpu_gen *g, LLVMValueRef v, tj_dtype dt)
{
    tjj_ls ls = tjj_ls_view(&g->ty, g->mod, g->b);
    return tjj_ls_fext(&ls, v, dt);
}

LLVMValueRef tjj_gpu_fround(tjj_gpu_gen *g, LLVMValueRef v, tj_dtype dt)
{
    tjj_ls ls = tjj_ls_view(&g->ty, g->mod, g->b);
    return tjj_ls_fround(&ls, v, dt);
}

LLVMValueRef tjj_gpu_fp8_const(tjj_gpu_gen *g, tj_dtype dt, double v)
{
    tjj_ls ls = tjj_ls_view(&g->ty, g->mod, g->b);
    return tjj_ls_fp8_const(&ls, dt, v);
}

LLVMValueRef tjj_gpu_order_key(tjj_gpu_gen *g, LLVMValueRef v, int is_max, int propagate_nan)
{
    tjj_ls ls = tjj_ls_view(&g->ty, g->mod, g->b);
    return tjj_ls_order_key(&ls, v, is_max, propagate_nan);
}

LLVMValueRef tjj_gpu_from_order_key(tjj_gpu_gen *g, LLVMValueRef key, tj_dtype dt, int is_max,
                                    int propagate_nan)
{
    tjj_ls ls = tjj_ls_view(&g->ty, g->mod, g->b);
    return tjj_ls_from_order_key(&ls, key, tjj_ls_compute_type(&ls, dt), is_max, propagate_nan);
}

LLVMValueRef tjj_gpu_to_mem(tjj_gpu_gen *g, LLVMValueRef v, const tji_type *t)
{
    tjj_ls ls = tjj_ls_view(&g->ty, g->mod, g->b);
    return tjj_ls_to_mem(&ls, v, t);
}

LLVMValueRef tjj_gpu_from_mem(tjj_gpu_gen *g, LLVMValueRef v, const tji_type *t)
{
    tjj_ls ls = tjj_ls_view(&g->ty, g->mod, g->b);
    return tjj_ls_from_mem(&ls, v, t);
}

/* --- the math library ----------------------------------------------------------------- */

LLVMValueRef tjj_gmath_call(tjj_gpu_gen *g, const char *base, LLVMValueRef *args, unsigned nargs,
                              tjj_gmath_body body)
{
    LLVMTypeRef t = LLVMTypeOf(args[0]);
    char name[64];
    snprintf(name, sizeof name, "tjm_%s_%s", base, t == g->ty.t_double ? "f64" : "f32");
    LLVMTypeRef params[2] = {t, t};
    LLVMTypeRef fty = LLVMFunctionType(t, params, nargs, 0);
    LLVMValueRef f = LLVMGetNamedFunction(g->mod, name);
    if (!f) {
        f = LLVMAddFunction(g->mod, name, fty);
        LLVMSetLinkage(f, LLVMInternalLinkage);
        const char *attrs[] = {"nounwind", "willreturn", "nosync", "nofree"};
        for (size_t i = 0; i < sizeof attrs / sizeof *attrs; i++) {
            unsigned kind = LLVMGetEnumAttributeKindForName(attrs[i], strlen(attrs[i]));
            LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(g->ctx, kind, 0));
        }
        LLVMBuilderRef outer = g->b;
        g->b = LLVMCreateBuilderInContext(g->ctx);
        LLVMPositionBuilderAtEnd(g->b, LLVMAppendBasicBlockInContext(g->ctx, f, "entry"));
        LLVMValueRef params_v[2];
        for (unsigned i = 0; i < nargs; i++)
            params_v[i] = LLVMGetParam(f, i);
        LLVMBuildRet(g->b, body(g, params_v));
        LLVMDisposeBuilder(g->b);
        g->b = outer;
    }
    return LLVMBuildCall2(g->b, fty, f, args, nargs, "");
}

/* Facts of the two float formats the math is done in. */
typedef struct float_format {
    LLVMTypeRef t, it;     /* the float type and the integer of its width */
    int mant_bits, bias;
} float_format;

static float_format format_of(const tjj_gpu_gen *g, LLVMTypeRef t)
{
    if (t == g->ty.t_double)
        return (float_format){g->ty.t_double, g->ty.t_i64, 52, 1023};
    return (float_format){g->ty.t_float, g->ty.t_i32, 23, 127};
}

/* 2^n for an integer n (i32) in the normal range of the format. */
static LLVMValueRef pow2_int(tjj_gpu_gen *g, const float_format *ff, LLVMValueRef n)
{
    LLVMValueRef e = LLVMBuildAdd(g->b, n, c_int(g->ty.t_i32, ff->bias), "");
    e = ff->it == g->ty.t_i64 ? LLVMBuildSExt(g->b, e, g->ty.t_i64, "") : e;
    LLVMValueRef bits = LLVMBuildShl(g->b, e, c_int(ff->it, ff->mant_bits), "");
    return LLVMBuildBitCast(g->b, bits, ff->t, "");
}

LLVMValueRef tjj_gmath_pow2_f64(tjj_gpu_gen *g, LLVMValueRef n)
{
    float_format ff = format_of(g, g->ty.t_double);
    return pow2_int(g, &ff, n);
}

/* f64: exp(rh + rl) * 2^n for |rh| <= 0.35, tiny rl, |n| <= 1200 (an integral
 * double): Taylor series of degree 13 (its remainder is below 2^-57 on the
 * interval), the rl correction to first order, and 2^n applied as two exact
 * powers of two so that a subnormal result is rounded once. */
LLVMValueRef tjj_gmath_exp_core(tjj_gpu_gen *g, LLVMValueRef n, LLVMValueRef rh, LLVMValueRef rl)
{
    float_format ff = format_of(g, g->ty.t_double);
    double coef[14];
    coef[0] = 1.0;
    for (int k = 1; k < 14; k++)
        coef[k] = coef[k - 1] / k;
    LLVMValueRef p = c_real(g->ty.t_double, coef[13]);
    for (int k = 12; k >= 0; k--)
        p = tjj_gmath_fma(g, p, rh, c_real(g->ty.t_double, coef[k]));
    p = tjj_gmath_fma(g, p, rl, p);
    LLVMValueRef ni = LLVMBuildFPToSI(g->b, n, g->ty.t_i32, "");
    LLVMValueRef n1 = LLVMBuildAShr(g->b, ni, c_int(g->ty.t_i32, 1), "");
    LLVMValueRef n2 = LLVMBuildSub(g->b, ni, n1, "");
    p = LLVMBuildFMul(g->b, p, pow2_int(g, &ff, n1), "");
    return LLVMBuildFMul(g->b, p, pow2_int(g, &ff, n2), "");
}


LLVMValueRef tjj_gmath_keep_nan(tjj_gpu_gen *g, LLVMValueRef x, LLVMValueRef r)
{
    return LLVMBuildSelect(g->b, LLVMBuildFCmp(g->b, LLVMRealUNO, x, x, ""), x, r, "");
}

LLVMValueRef tjj_gmath_clamp(tjj_gpu_gen *g, LLVMValueRef x, double lo, double hi)
{
    LLVMTypeRef t = LLVMTypeOf(x);
    x = tjj_gpu_intrinsic2(g, "llvm.maxnum", x, c_real(t, lo));
    return tjj_gpu_intrinsic2(g, "llvm.minnum", x, c_real(t, hi));
}

static LLVMValueRef exp2_f64_body(tjj_gpu_gen *g, LLVMValueRef *args)
{
    LLVMValueRef x = args[0], t = tjj_gmath_clamp(g, x, -1100, 1100);
    LLVMValueRef n = tjj_gpu_intrinsic1(g, "llvm.rint", t);
    LLVMValueRef f = LLVMBuildFSub(g->b, t, n, ""); /* exact, |f| <= 1/2 */
    LLVMValueRef rh = LLVMBuildFMul(g->b, f, c_real(g->ty.t_double, TJJ_LN2), "");
    LLVMValueRef rl = LLVMBuildFAdd(g->b, tjj_gmath_fma(g, f, c_real(g->ty.t_double, TJJ_LN2), LLVMBuildFNeg(g->b, rh, "")),
                                    LLVMBuildFMul(g->b, f, c_real(g->ty.t_double, TJJ_LN2_LO), ""), "");
    return tjj_gmath_keep_nan(g, x, tjj_gmath_exp_core(g, n, rh, rl));
}

LLVMValueRef tjj_gmath_exp_f64(tjj_gpu_gen *g, LLVMValueRef *args)
{
    LLVMValueRef x = args[0], t = tjj_gmath_clamp(g, x, -800, 800);
    LLVMValueRef n = tjj_gpu_intrinsic1(g, "llvm.rint", LLVMBuildFMul(g->b, t, c_real(g->ty.t_double, TJJ_LOG2E), ""));
    LLVMValueRef neg_n = LLVMBuildFNeg(g->b, n, "");
    LLVMValueRef rh = tjj_gmath_fma(g, neg_n, c_real(g->ty.t_double, TJJ_LN2), t); /* nearly exact: x is close to n ln2 */
    LLVMValueRef rl = LLVMBuildFMul(g->b, neg_n, c_real(g->ty.t_double, TJJ_LN2_LO), "");
    return tjj_gmath_keep_nan(g, x, tjj_gmath_exp_core(g, n, rh, rl));
}

/* f32 exp: ex2.approx of x*log2(e), where the rounding error of the product
 * (recovered with fma, plus the error of log2(e) itself) is put back to first
 * order. Where the correction is NaN (inf or 0 results) the plain value is right. */
static LLVMValueRef exp_f32_body(tjj_gpu_gen *g, LLVMValueRef *args)
{
    LLVMBuilderRef b = g->b;
    LLVMTypeRef t = g->ty.t_float;
    float hi = (float)TJJ_LOG2E;
    float lo = (float)(TJJ_LOG2E - (double)hi);
    LLVMValueRef x = args[0];
    LLVMValueRef p = LLVMBuildFMul(b, x, c_real(t, hi), "");
    LLVMValueRef err = LLVMBuildFAdd(b, tjj_gmath_fma(g, x, c_real(t, hi), LLVMBuildFNeg(b, p, "")),
                                     LLVMBuildFMul(b, x, c_real(t, lo), ""), "");
    LLVMValueRef r = tjj_gpu_intrinsic1(g, "llvm.exp2", p);
    LLVMValueRef fixed = tjj_gmath_fma(g, r, LLVMBuildFMul(b, err, c_real(t, (float)TJJ_LN2), ""), r);
    return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealUNO, fixed, fixed, ""), r, fixed, "");
}

/* log(m) for x = 2^e m: returns log(m) (m in [sqrt(1/2), sqrt(2))) and e as
 * a float. Zero, negative, infinite and NaN x give garbage here; the callers
 * select the right special value. */
LLVMValueRef tjj_gmath_log_core(tjj_gpu_gen *g, LLVMValueRef x, LLVMValueRef *e_out)
{
    LLVMBuilderRef b = g->b;
    float_format ff = format_of(g, LLVMTypeOf(x));
    LLVMTypeRef t = ff.t, it = ff.it;
    int is_double = t == g->ty.t_double;
    int scale_bits = is_double ? 54 : 25;
    double min_normal = is_double ? 0x1p-1022 : 0x1p-126;
    LLVMValueRef sub = LLVMBuildFCmp(b, LLVMRealOLT, x, c_real(t, min_normal), "");
    LLVMValueRef xs = LLVMBuildSelect(b, sub, LLVMBuildFMul(b, x, c_real(t, is_double ? 0x1p54 : 0x1p25), ""), x, "");
    LLVMValueRef bits = LLVMBuildBitCast(b, xs, it, "");
    LLVMValueRef e = LLVMBuildSub(b, LLVMBuildLShr(b, bits, c_int(it, ff.mant_bits), ""), c_int(it, ff.bias), "");
    e = LLVMBuildSub(b, e, LLVMBuildSelect(b, sub, c_int(it, scale_bits), c_int(it, 0), ""), "");
    uint64_t mant_mask = (1ull << ff.mant_bits) - 1, one_bits = (uint64_t)ff.bias << ff.mant_bits;
    LLVMValueRef mbits = LLVMBuildOr(b, LLVMBuildAnd(b, bits, LLVMConstInt(it, mant_mask, 0), ""),
                                     LLVMConstInt(it, one_bits, 0), "");
    LLVMValueRef m = LLVMBuildBitCast(b, mbits, t, "");
    LLVMValueRef big = LLVMBuildFCmp(b, LLVMRealOGT, m, c_real(t, 0x1.6a09e667f3bcdp0), "");
    m = LLVMBuildSelect(b, big, LLVMBuildFMul(b, m, c_real(t, 0.5), ""), m, "");
    e = LLVMBuildAdd(b, e, LLVMBuildZExt(b, big, it, ""), "");
    *e_out = LLVMBuildSIToFP(b, e, t, "");

    LLVMValueRef f = LLVMBuildFSub(b, m, c_real(t, 1.0), ""); /* exact */
    LLVMValueRef s = LLVMBuildFDiv(b, f, LLVMBuildFAdd(b, c_real(t, 2.0), f, ""), "");
    LLVMValueRef z = LLVMBuildFMul(b, s, s, "");
    /* R = sum_{k>=1} 2 z^k / (2k+1): 2 atanh(s) = 2s + s R. */
    int terms = is_double ? 11 : 5;
    LLVMValueRef r = c_real(t, 2.0 / (2 * terms + 1));
    for (int k = terms - 1; k >= 1; k--)
        r = tjj_gmath_fma(g, r, z, c_real(t, 2.0 / (2 * k + 1)));
    r = LLVMBuildFMul(b, r, z, "");
    LLVMValueRef hfsq = LLVMBuildFMul(b, LLVMBuildFMul(b, c_real(t, 0.5), f, ""), f, "");
    /* log(1+f) = f - (hfsq - s (hfsq + R)): f is exact, the rest is small. */
    LLVMValueRef inner = LLVMBuildFSub(b, hfsq, LLVMBuildFMul(b, s, LLVMBuildFAdd(b, hfsq, r, ""), ""), "");
    return LLVMBuildFSub(b, f, inner, "");
}

/* The special values of log: NaN for x < 0 or NaN, -inf for 0, +inf for +inf. */
LLVMValueRef tjj_gmath_log_special(tjj_gpu_gen *g, LLVMValueRef x, LLVMValueRef r)
{
    LLVMBuilderRef b = g->b;
    LLVMTypeRef t = LLVMTypeOf(x);
    LLVMValueRef inf = c_real(t, __builtin_inf());
    r = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOEQ, x, inf, ""), inf, r, "");
    r = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOEQ, x, c_real(t, 0.0), ""),
                        c_real(t, -__builtin_inf()), r, "");
    return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealULT, x, c_real(t, 0.0), ""),
                           c_real(t, __builtin_nan("")), r, "");
}

LLVMValueRef tjj_gmath_log(tjj_gpu_gen *g, LLVMValueRef *args)
{
    LLVMBuilderRef b = g->b;
    LLVMValueRef x = args[0], e;
    LLVMTypeRef t = LLVMTypeOf(x);
    int is_double = t == g->ty.t_double;
    LLVMValueRef l = tjj_gmath_log_core(g, x, &e);
    /* ln 2 split so that e * hi is exact (e has at most 11 bits). */
    double hi = is_double ? 0x1.62e42fee00000p-1 : 0x1.62e400p-1;
    double lo = is_double ? TJJ_LN2 - hi + TJJ_LN2_LO : (double)(float)(TJJ_LN2 - hi);
    LLVMValueRef tail = LLVMBuildFAdd(b, l, LLVMBuildFMul(b, e, c_real(t, lo), ""), "");
    return tjj_gmath_log_special(g, x, LLVMBuildFAdd(b, LLVMBuildFMul(b, e, c_real(t, hi), ""), tail, ""));
}

static LLVMValueRef log2_body(tjj_gpu_gen *g, LLVMValueRef *args)
{
    LLVMBuilderRef b = g->b;
    LLVMValueRef x = args[0], e;
    LLVMTypeRef t = LLVMTypeOf(x);
    int is_double = t == g->ty.t_double;
    LLVMValueRef l = tjj_gmath_log_core(g, x, &e);
    double hi = is_double ? TJJ_LOG2E : (double)(float)TJJ_LOG2E;
    double lo = is_double ? TJJ_LOG2E_LO : (double)(float)(TJJ_LOG2E - hi);
    LLVMValueRef p = LLVMBuildFMul(b, l, c_real(t, hi), "");
    LLVMValueRef err = LLVMBuildFAdd(b, tjj_gmath_fma(g, l, c_real(t, hi), LLVMBuildFNeg(b, p, "")),
                                     LLVMBuildFMul(b, l, c_real(t, lo), ""), "");
    return tjj_gmath_log_special(g, x, LLVMBuildFAdd(b, e, LLVMBuildFAdd(b, p, err, ""), ""));
}

/* C's fmod, exact: the largest ay * 2^k <= ax is found by doubling, then
 * subtracted where it fits while halving back to ay. Every step is exact
 * (doubling and halving stay on representable values; each subtraction has
 * b <= r < 2b). At most about 2 * 2100 steps for f64, far fewer in practice. */
static LLVMValueRef fmod_body(tjj_gpu_gen *g, LLVMValueRef *args)
{
    LLVMBuilderRef b = g->b;
    LLVMValueRef x = args[0], y = args[1];
    LLVMTypeRef t = LLVMTypeOf(x);
    LLVMValueRef ax = tjj_gpu_intrinsic1(g, "llvm.fabs", x), ay = tjj_gpu_intrinsic1(g, "llvm.fabs", y);
    LLVMValueRef inf = c_real(t, __builtin_inf());
    LLVMValueRef invalid = LLVMBuildOr(
        b, LLVMBuildFCmp(b, LLVMRealUNO, x, y, ""),
        LLVMBuildOr(b, LLVMBuildFCmp(b, LLVMRealOEQ, ax, inf, ""),
                    LLVMBuildFCmp(b, LLVMRealOEQ, ay, c_real(t, 0.0), ""), ""),
        "");
    LLVMValueRef small = LLVMBuildFCmp(b, LLVMRealOLT, ax, ay, "");
    LLVMValueRef early = LLVMBuildSelect(b, invalid, c_real(t, __builtin_nan("")), x, "");
    LLVMBasicBlockRef entry = LLVMGetInsertBlock(b);
    LLVMBasicBlockRef grow = block_here(g, "fmod.grow"), shrink = block_here(g, "fmod.shrink");
    LLVMBasicBlockRef done = block_here(g, "fmod.done");
    LLVMBuildCondBr(b, LLVMBuildOr(b, invalid, small, ""), done, grow);

    LLVMPositionBuilderAtEnd(b, grow);
    LLVMValueRef d = LLVMBuildPhi(b, t, "d");
    LLVMValueRef d2 = LLVMBuildFMul(b, d, c_real(t, 2.0), "");
    LLVMValueRef more = LLVMBuildFCmp(b, LLVMRealOLE, d2, ax, "");
    LLVMValueRef d_in[2] = {ay, d2};
    LLVMBasicBlockRef d_from[2] = {entry, grow};
    LLVMAddIncoming(d, d_in, d_from, 2);
    LLVMBuildCondBr(b, more, grow, shrink);

    LLVMPositionBuilderAtEnd(b, shrink);
    LLVMValueRef step = LLVMBuildPhi(b, t, "b");
    LLVMValueRef rem = LLVMBuildPhi(b, t, "r");
    LLVMValueRef fits = LLVMBuildFCmp(b, LLVMRealOGE, rem, step, "");
    LLVMValueRef rem2 = LLVMBuildSelect(b, fits, LLVMBuildFSub(b, rem, step, ""), rem, "");
    LLVMValueRef step2 = LLVMBuildFMul(b, step, c_real(t, 0.5), "");
    LLVMValueRef again = LLVMBuildFCmp(b, LLVMRealOGE, step2, ay, "");
    LLVMValueRef signed_rem = tjj_gpu_intrinsic2(g, "llvm.copysign", rem2, x);
    LLVMValueRef s_in[2] = {d, step2}, r_in[2] = {ax, rem2};
    LLVMBasicBlockRef s_from[2] = {grow, shrink};
    LLVMAddIncoming(step, s_in, s_from, 2);
    LLVMAddIncoming(rem, r_in, s_from, 2);
    LLVMBuildCondBr(b, again, shrink, done);

    LLVMPositionBuilderAtEnd(b, done);
    LLVMValueRef res = LLVMBuildPhi(b, t, "");
    LLVMValueRef res_in[2] = {early, signed_rem};
    LLVMBasicBlockRef res_from[2] = {entry, shrink};
    LLVMAddIncoming(res, res_in, res_from, 2);
    return res;
}

static LLVMValueRef math1(tjj_gpu_gen *g, const char *name, tjj_gmath_body body, LLVMValueRef x)
{
    return tjj_gmath_call(g, name, &x, 1, body);
}

static LLVMValueRef emit_exp(tjj_gpu_gen *g, LLVMValueRef x)
{
    return LLVMTypeOf(x) == g->ty.t_double ? math1(g, "exp", tjj_gmath_exp_f64, x)
                                        : math1(g, "exp", exp_f32_body, x);
}

/* --- element-wise ops ------------------------------------------------------------------- */

/* The float ops whose code is the GPU's own, the math library above (a
 * callback of tjj_ls_elementwise). */
static LLVMValueRef target_math(void *target, tji_opcode code, LLVMValueRef x, LLVMValueRef y)
{
    tjj_gpu_gen *g = target;
    LLVMBuilderRef b = g->b;
    LLVMTypeRef t = LLVMTypeOf(x);
    LLVMValueRef one = c_real(t, 1.0);
    int approx = g->cur_op >= 0 && g->fn->ops[g->cur_op].approx;
    switch (code) {
    case TJI_REM: {
        LLVMValueRef args[2] = {x, y};
        return tjj_gmath_call(g, "fmod", args, 2, fmod_body);
    }
    case TJI_EXP:
        if (t == g->ty.t_float && approx) /* tj_fast_exp */
            return tjj_gpu_intrinsic1(g, "llvm.nvvm.ex2.approx.ftz.f",
                                      LLVMBuildFMul(b, x, c_real(t, 1.4426950408889634), ""));
        return emit_exp(g, x);
    case TJI_EXP2:
        if (t == g->ty.t_float && approx) /* tj_fast_exp2 */
            return tjj_gpu_intrinsic1(g, "llvm.nvvm.ex2.approx.ftz.f", x);
        return t == g->ty.t_double ? math1(g, "exp2", exp2_f64_body, x) : tjj_gpu_intrinsic1(g, "llvm.exp2", x);
    case TJI_LOG: return math1(g, "log", tjj_gmath_log, x);
    case TJI_LOG2: return math1(g, "log2", log2_body, x);
    case TJI_SIGMOID:
        return LLVMBuildFDiv(b, one, LLVMBuildFAdd(b, one, emit_exp(g, LLVMBuildFNeg(b, x, "")), ""), "");
    default: return tjj_gmath_f64(g, code, x, y); /* math_f64.c */
    }
}

LLVMValueRef tjj_gpu_math(tjj_gpu_gen *g, tji_opcode code, LLVMValueRef x, LLVMValueRef y)
{
    return target_math(g, code, x, y);
}

LLVMValueRef tjj_gpu_elementwise(tjj_gpu_gen *g, const tji_op *op, LLVMValueRef *a)
{
    if (op->code == TJI_INLINE_ASM) { /* one element: a pack of 1 */
        LLVMValueRef lanes[TJ_MAX_RANK][1], *in[TJ_MAX_RANK], r;
        for (int i = 0; i < op->nargs; i++)
            lanes[i][0] = a[i], in[i] = lanes[i];
        tjj_gpu_inline_asm(g, op, in, &r);
        return r;
    }
    tj_dtype dt = tji_typeof(g->fn, op->result)->dtype;
    if (op->code == TJI_DIV && op->approx && (dt == TJ_F32 || dt == TJ_F16 || dt == TJ_BF16)) {
        /* tj_fast_div: in f32, rounded back as every 16-bit float op is */
        LLVMValueRef xy[2] = {tjj_gpu_fext(g, a[0], dt), tjj_gpu_fext(g, a[1], dt)};
        return tjj_gpu_fround(g, tjj_gpu_intrinsic(g, "llvm.nvvm.div.full", NULL, 0, xy, 2), dt);
    }
    tjj_ls ls = tjj_ls_view(&g->ty, g->mod, g->b);
    ls.native_f32_min_max = 1; /* max.f32, max.NaN.f32 (sm_80 on) */
    ls.t_ptr = g->t_gptr;
    LLVMValueRef r = tjj_ls_elementwise(&ls, g->fn, op, a, target_math, g);
    if (r)
        return r;
    const tji_type *rt = tji_typeof(g->fn, op->result);
    const tji_type *at = op->nargs > 0 ? tji_typeof(g->fn, op->args[0]) : rt;
    tjj_gpu_fail(g, "not defined for %s", at->is_ptr ? "pointers" : tj_dtype_name(at->dtype));
    return LLVMGetPoison(tjj_gpu_value_type(g, rt));
}
