/* SPDX-License-Identifier: MIT */
/*
 * math_f64.c — the GPU's float functions that are computed in f64 for every
 * float dtype: sin, cos, tan, asin, acos, atan, atan2, sinh, cosh, tanh,
 * asinh, acosh, atanh, erf, pow, log1p, expm1, log10, exp10, cbrt and hypot.
 *
 * There is no libm on the GPU and tjit does not use libdevice (math.c says
 * why and how the library is built). These functions are rarer than exp in
 * a kernel's inner loop, so each has one f64 body: f32 (and f16 and bf16,
 * which arrive as f32) is computed by it and rounded once, so its error is
 * half an ulp plus the f64 error scaled down by 2^29. The bodies are plain
 * IR, so tests/test_gpu_math_host runs this very code on the host; its f64
 * errors there, over edges and random inputs (sin/cos up to 10^4 and from
 * 2^30 to the largest double, tanh and erf across their range, pow with
 * |y ln x| <= 22), in ulp: sin 1.9, cos 1.9, tanh 1.9, erf 1.4, log1p 2.2, expm1 1.4, pow 28 (exp(y log x) in
 * double: 2^-53 (1 + |y ln x|) relative, hundreds of ulp near the ends of
 * the range); the newer functions' figures are in tests/math_bounds.h.
 *
 * How, in short: sin, cos and tan by Cody-Waite reduction with pi/2 in
 * three parts below 2^30, Payne and Hanek's above, and Taylor series;
 * tanh, expm1, sinh and cosh from an expm1 core (Cody-Waite, Taylor
 * series), in forms where nothing cancels; log1p from log with the rounding of 1 + x corrected; asinh,
 * acosh and atanh from log1p and log in fdlibm's forms; atan by reduction
 * to five points (fdlibm's intervals) and a Taylor series, and asin, acos
 * and atan2 from it; erf by its Maclaurin series below 1 and Taylor series
 * at j + 1/2 on [j, j+1) up to 6, whose coefficients are computed from
 * erfl and expl; log10 from log's reduction; exp10 from exp's, of x ln 10
 * in two parts; cbrt by Newton's method from
 * a guess made of the bits; hypot by one fma of scaled squares.
 */
#include <math.h>
#include <stdint.h>

#include "math_lib.h"

/* f32 (f16 and bf16 arrive as f32) is computed by the f64 function and
 * rounded once, so its error is half an ulp plus the f64 error scaled down
 * by 2^29; these functions are rarer than exp in a kernel's inner loop. */
static LLVMValueRef via_f64(tjj_gpu_gen *g, const char *name, tjj_gmath_body body, LLVMValueRef x, LLVMValueRef y)
{
    int is_f32 = LLVMTypeOf(x) != g->ty.t_double;
    LLVMValueRef args[2] = {x, y};
    for (int i = 0; is_f32 && i < (y ? 2 : 1); i++)
        args[i] = LLVMBuildFPExt(g->b, args[i], g->ty.t_double, "");
    LLVMValueRef r = tjj_gmath_call(g, name, args, y ? 2 : 1, body);
    return is_f32 ? LLVMBuildFPTrunc(g->b, r, g->ty.t_float, "") : r;
}

static LLVMValueRef cd(tjj_gpu_gen *g, double v) { return c_real(g->ty.t_double, v); }

/* Horner: c[0] + z (c[1] + z (c[2] + ...)), with fma. */
static LLVMValueRef horner(tjj_gpu_gen *g, LLVMValueRef z, const double *c, int n)
{
    LLVMValueRef p = cd(g, c[n - 1]);
    for (int k = n - 2; k >= 0; k--)
        p = tjj_gmath_fma(g, p, z, cd(g, c[k]));
    return p;
}

/* The bits of 2/pi after the binary point, 64 to a word, after a word of
 * zeros (so that a window of them may begin before the point). Computed
 * as floor(2^1600 * 2 / pi) with pi from Machin's formula in integer
 * arithmetic; they begin a2f9836e4e441529, as every table of them does. */
static const uint64_t two_over_pi_bits[] = {
    0,                     0xa2f9836e4e441529ull, 0xfc2757d1f534ddc0ull, 0xdb6295993c439041ull,
    0xfe5163abdebbc561ull, 0xb7246e3a424dd2e0ull, 0x06492eea09d1921cull, 0xfe1deb1cb129a73eull,
    0xe88235f52ebb4484ull, 0xe99c7026b45f7e41ull, 0x3991d639835339f4ull, 0x9c845f8bbdf9283bull,
    0x1ff897ffde05980full, 0xef2f118b5a0a6d1full, 0x6d367ecf27cb09b7ull, 0x4f463f669e5fea2dull,
    0x7527bac7ebe5f17bull, 0x3d0739f78a5292eaull, 0x6bfb5fb11f8d5d08ull, 0x56033046fc7b6babull,
    0xf0cfbc209af4361dull, 0xa9e391615ee61b08ull,
};
enum { TWO_OVER_PI_WORDS = sizeof two_over_pi_bits / sizeof two_over_pi_bits[0] };

static LLVMValueRef two_over_pi_table(tjj_gpu_gen *g)
{
    LLVMValueRef t = LLVMGetNamedGlobal(g->mod, "tjm_two_over_pi");
    if (t)
        return t;
    LLVMValueRef words[TWO_OVER_PI_WORDS];
    for (int i = 0; i < TWO_OVER_PI_WORDS; i++)
        words[i] = LLVMConstInt(g->ty.t_i64, two_over_pi_bits[i], 0);
    t = LLVMAddGlobal(g->mod, LLVMArrayType(g->ty.t_i64, TWO_OVER_PI_WORDS), "tjm_two_over_pi");
    LLVMSetInitializer(t, LLVMConstArray(g->ty.t_i64, words, TWO_OVER_PI_WORDS));
    LLVMSetGlobalConstant(t, 1);
    LLVMSetLinkage(t, LLVMInternalLinkage);
    return t;
}

/* Payne and Hanek's reduction of a finite x, |x| >= 2^30: |x| = M 2^E (M
 * the 53-bit significand) times 2/pi needs only the bits of 2/pi from
 * weight 2^(1-E) on (earlier ones make multiples of 4 quarter turns): a
 * window of 192 of them times M, in 128-bit integers, gives the quarter
 * turns mod 4 (2 bits) and 126 bits of the fraction, taken to [-1/2, 1/2)
 * as a signed number. r = fraction * pi/2, with x's sign. */
static void reduce_big(tjj_gpu_gen *g, LLVMValueRef x, LLVMValueRef *k_out, LLVMValueRef *r_out)
{
    LLVMBuilderRef b = g->b;
    LLVMTypeRef i64 = g->ty.t_i64, i128 = LLVMInt128TypeInContext(g->ctx);
    LLVMValueRef bits = LLVMBuildBitCast(b, tjj_gpu_intrinsic1(g, "llvm.fabs", x), i64, "");
    LLVMValueRef m = LLVMBuildOr(b, LLVMBuildAnd(b, bits, c_int(i64, (1ll << 52) - 1), ""), c_int(i64, 1ll << 52), "");
    /* the window's first bit: weight 2^(1-E), E = exponent - 1075; bit
       position exponent - 1013 in the table (its word of zeros first) */
    LLVMValueRef at = LLVMBuildSub(b, LLVMBuildLShr(b, bits, c_int(i64, 52), ""), c_int(i64, 1013), "");
    LLVMValueRef q = LLVMBuildLShr(b, at, c_int(i64, 6), ""), s = LLVMBuildAnd(b, at, c_int(i64, 63), "");
    LLVMValueRef table = two_over_pi_table(g), word[4];
    LLVMTypeRef at_type = LLVMArrayType(i64, TWO_OVER_PI_WORDS);
    for (int w = 0; w < 4; w++) {
        LLVMValueRef idx[2] = {c_int(i64, 0), LLVMBuildAdd(b, q, c_int(i64, w), "")};
        word[w] = LLVMBuildLoad2(b, i64, LLVMBuildInBoundsGEP2(b, at_type, table, idx, 2, ""), "");
    }
    LLVMValueRef product[3];
    for (int w = 0; w < 3; w++) { /* window word w = word[w] << s | word[w + 1] >> (64 - s) */
        LLVMValueRef next = LLVMBuildLShr(b, LLVMBuildLShr(b, word[w + 1], LLVMBuildSub(b, c_int(i64, 63), s, ""), ""),
                                          c_int(i64, 1), "");
        LLVMValueRef win = LLVMBuildOr(b, LLVMBuildShl(b, word[w], s, ""), next, "");
        product[w] = LLVMBuildMul(b, LLVMBuildZExt(b, m, i128, ""), LLVMBuildZExt(b, win, i128, ""), "");
    }
    /* bits 64 .. 191 of the 245-bit product: turns mod 4 on top, the fraction below */
    LLVMValueRef a = LLVMBuildAdd(b, LLVMBuildLShr(b, product[2], LLVMConstInt(i128, 64, 0), ""), product[1], "");
    a = LLVMBuildAdd(b, a, LLVMBuildShl(b, product[0], LLVMConstInt(i128, 64, 0), ""), "");
    LLVMValueRef turns = LLVMBuildTrunc(b, LLVMBuildLShr(b, a, LLVMConstInt(i128, 126, 0), ""), g->ty.t_i32, "");
    LLVMValueRef frac = LLVMBuildShl(b, a, LLVMConstInt(i128, 2, 0), ""); /* signed: [-1/2, 1/2) x 2^128 */
    LLVMValueRef up = LLVMBuildICmp(b, LLVMIntSLT, frac, LLVMConstInt(i128, 0, 0), "");
    turns = LLVMBuildAdd(b, turns, LLVMBuildZExt(b, up, g->ty.t_i32, ""), "");
    /* the fraction's magnitude, shifted up to its first set bit (so that
       an x near a multiple of pi/2, whose fraction is tiny, keeps all its
       bits), as two doubles, each exact: its top 53 bits and the next 53,
       summed without loss (hi + lo); then r = that times pi/2 (two parts)
       times 2^-(128 + shift), with one rounding, and the fraction's sign */
    LLVMValueRef negative = LLVMBuildICmp(b, LLVMIntSLT, frac, LLVMConstInt(i128, 0, 0), "");
    LLVMValueRef mag = LLVMBuildSelect(b, negative, LLVMBuildNeg(b, frac, ""), frac, "");
    LLVMValueRef ctlz_args[2] = {mag, LLVMConstInt(g->ty.t_i1, 0, 0)};
    LLVMValueRef lz = tjj_gpu_intrinsic(g, "llvm.ctlz", &i128, 1, ctlz_args, 2);
    lz = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntUGT, lz, LLVMConstInt(i128, 127, 0), ""),
                         LLVMConstInt(i128, 127, 0), lz, ""); /* a zero fraction stays 0 */
    LLVMValueRef norm = LLVMBuildShl(b, mag, lz, "");
    LLVMValueRef top = LLVMBuildTrunc(b, LLVMBuildLShr(b, norm, LLVMConstInt(i128, 75, 0), ""), i64, "");
    LLVMValueRef next = LLVMBuildAnd(b, LLVMBuildTrunc(b, LLVMBuildLShr(b, norm, LLVMConstInt(i128, 22, 0), ""), i64, ""),
                                     c_int(i64, (1ll << 53) - 1), "");
    LLVMValueRef big_part = LLVMBuildFMul(b, LLVMBuildUIToFP(b, top, g->ty.t_double, ""), cd(g, 0x1p75), "");
    LLVMValueRef small_part = LLVMBuildFMul(b, LLVMBuildUIToFP(b, next, g->ty.t_double, ""), cd(g, 0x1p22), "");
    LLVMValueRef f_hi = LLVMBuildFAdd(b, big_part, small_part, "");
    LLVMValueRef f_lo = LLVMBuildFSub(b, small_part, LLVMBuildFSub(b, f_hi, big_part, ""), "");
    double p_hi = 0x1.921fb54442d18p+0 * 0x1p-128, p_lo = 0x1.1a62633145c07p-54 * 0x1p-128;
    LLVMValueRef tail = tjj_gmath_fma(g, f_hi, cd(g, p_lo), LLVMBuildFMul(b, f_lo, cd(g, p_hi), ""));
    LLVMValueRef r = tjj_gmath_fma(g, f_hi, cd(g, p_hi), tail);
    LLVMValueRef unshift = LLVMBuildShl(b, LLVMBuildSub(b, c_int(i64, 1023), LLVMBuildTrunc(b, lz, i64, ""), ""),
                                        c_int(i64, 52), ""); /* 2^-shift, exactly */
    r = LLVMBuildFMul(b, r, LLVMBuildBitCast(b, unshift, g->ty.t_double, ""), "");
    r = LLVMBuildSelect(b, negative, LLVMBuildFNeg(b, r, ""), r, "");
    LLVMValueRef k = LLVMBuildSIToFP(b, turns, g->ty.t_double, "");
    LLVMValueRef neg = LLVMBuildFCmp(b, LLVMRealOLT, x, cd(g, 0), "");
    *k_out = LLVMBuildSelect(b, neg, LLVMBuildFNeg(b, k, ""), k, "");
    *r_out = LLVMBuildSelect(b, neg, LLVMBuildFNeg(b, r, ""), r, "");
}

/* x = k pi/2 + r: below 2^30 with pi/2 in three parts (Cody-Waite by fma,
 * accurate while k fits well in a double), from there by reduce_big (a
 * branch: it is rare); then the Taylor series of sin r and cos r on |r| <=
 * pi/4 (degree 21 and 20, remainders below 2^-80). inf and NaN give a NaN
 * r. */
typedef struct quarter_turns {
    LLVMValueRef k, sin_r, cos_r; /* k an integral double */
} quarter_turns;

static quarter_turns reduce_quarters(tjj_gpu_gen *g, LLVMValueRef x)
{
    LLVMBuilderRef b = g->b;
    LLVMValueRef k = tjj_gpu_intrinsic1(g, "llvm.rint", LLVMBuildFMul(b, x, cd(g, 0x1.45f306dc9c883p-1), ""));
    LLVMValueRef neg_k = LLVMBuildFNeg(b, k, "");
    LLVMValueRef r = tjj_gmath_fma(g, neg_k, cd(g, 0x1.921fb54442d18p+0), x);
    r = tjj_gmath_fma(g, neg_k, cd(g, 0x1.1a62633145c07p-54), r);
    r = tjj_gmath_fma(g, neg_k, cd(g, -0x1.f1976b7ed8fbcp-110), r);
    LLVMValueRef ax = tjj_gpu_intrinsic1(g, "llvm.fabs", x);
    LLVMValueRef is_big = LLVMBuildAnd(b, LLVMBuildFCmp(b, LLVMRealOGE, ax, cd(g, 0x1p30), ""),
                                       LLVMBuildFCmp(b, LLVMRealOLT, ax, cd(g, INFINITY), ""), "");
    LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(b));
    LLVMBasicBlockRef small_end = LLVMGetInsertBlock(b);
    LLVMBasicBlockRef big = LLVMAppendBasicBlockInContext(g->ctx, fn, "reduce.big");
    LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(g->ctx, fn, "reduce.join");
    LLVMBuildCondBr(b, is_big, big, join);
    LLVMPositionBuilderAtEnd(b, big);
    LLVMValueRef k_big, r_big;
    reduce_big(g, x, &k_big, &r_big);
    LLVMBasicBlockRef big_end = LLVMGetInsertBlock(b);
    LLVMBuildBr(b, join);
    LLVMPositionBuilderAtEnd(b, join);
    LLVMValueRef k_phi = LLVMBuildPhi(b, g->ty.t_double, "k"), r_phi = LLVMBuildPhi(b, g->ty.t_double, "r");
    LLVMValueRef k_in[2] = {k, k_big}, r_in[2] = {r, r_big};
    LLVMBasicBlockRef from[2] = {small_end, big_end};
    LLVMAddIncoming(k_phi, k_in, from, 2);
    LLVMAddIncoming(r_phi, r_in, from, 2);
    k = k_phi, r = r_phi;
    LLVMValueRef z = LLVMBuildFMul(b, r, r, "");
    double sc[11], cc[11];
    double f = 1;
    for (int n = 0; n < 11; n++) { /* sc[n] = (-1)^n / (2n+1)!, cc[n] = (-1)^n / (2n)! */
        cc[n] = (n % 2 ? -1 : 1) / f;
        f *= 2 * n + 1;
        sc[n] = (n % 2 ? -1 : 1) / f;
        f *= 2 * n + 2;
    }
    return (quarter_turns){k, LLVMBuildFMul(b, r, horner(g, z, sc, 11), ""), horner(g, z, cc, 11)};
}

static LLVMValueRef copysign_f64(tjj_gpu_gen *g, LLVMValueRef magnitude, LLVMValueRef sign)
{
    return tjj_gpu_intrinsic2(g, "llvm.copysign", magnitude, sign);
}

/* An odd function f(x) = sign(x) f(|x|), NaN kept. */
static LLVMValueRef odd_result(tjj_gpu_gen *g, LLVMValueRef x, LLVMValueRef of_abs)
{
    return tjj_gmath_keep_nan(g, x, copysign_f64(g, of_abs, x));
}

/* Is |x| below t? (x with its sign where a function is x near 0.) */
static LLVMValueRef below(tjj_gpu_gen *g, LLVMValueRef x, double t)
{
    return LLVMBuildFCmp(g->b, LLVMRealOLT, tjj_gpu_intrinsic1(g, "llvm.fabs", x), cd(g, t), "");
}

/* sin(x) (quarter 0) or cos(x) (quarter 1, as sin(x + pi/2)): sin r or
 * cos r chosen and signed by (k + quarter) mod 4. */
static LLVMValueRef sin_cos_f64(tjj_gpu_gen *g, LLVMValueRef x, int quarter)
{
    LLVMBuilderRef b = g->b;
    quarter_turns q4 = reduce_quarters(g, x);
    LLVMValueRef kq = LLVMBuildFAdd(b, q4.k, cd(g, quarter), "");
    kq = LLVMBuildFSub(b, kq, LLVMBuildFMul(b, cd(g, 4), tjj_gpu_intrinsic1(g, "llvm.floor",
                                            LLVMBuildFMul(b, kq, cd(g, 0.25), "")), ""), "");
    LLVMValueRef finite = LLVMBuildFCmp(b, LLVMRealOLT, tjj_gpu_intrinsic1(g, "llvm.fabs", kq), cd(g, 8), "");
    LLVMValueRef q = LLVMBuildFPToSI(b, LLVMBuildSelect(b, finite, kq, cd(g, 0), ""), g->ty.t_i32, "");
    LLVMValueRef odd = LLVMBuildTrunc(b, q, g->ty.t_i1, "");
    LLVMValueRef negate = LLVMBuildICmp(b, LLVMIntUGE, q, c_int(g->ty.t_i32, 2), "");
    LLVMValueRef v = LLVMBuildSelect(b, odd, q4.cos_r, q4.sin_r, "");
    v = LLVMBuildSelect(b, negate, LLVMBuildFNeg(b, v, ""), v, "");
    if (quarter == 0) /* sin x = x below 2^-26, the sign of zero included */
        v = LLVMBuildSelect(b, below(g, x, 0x1p-26), x, v, "");
    return v;
}

static LLVMValueRef sin_body(tjj_gpu_gen *g, LLVMValueRef *args) { return sin_cos_f64(g, args[0], 0); }
static LLVMValueRef cos_body(tjj_gpu_gen *g, LLVMValueRef *args) { return sin_cos_f64(g, args[0], 1); }

/* expm1(u) for u in [-40, 700]: u = n ln2 + r with n = trunc(u / ln2), so
 * that r (|r| < ln2, ln2 in two parts) has u's sign, expm1(r) by its Taylor
 * series to degree 17 (r plus a correction, so r's bits pass exactly), then 2^n expm1(r) + (2^n - 1): both terms of one
 * sign, so nothing cancels (a rounded n would subtract near u = ln2/2, where
 * it cost 2 ulp). */
static LLVMValueRef expm1_core(tjj_gpu_gen *g, LLVMValueRef u)
{
    LLVMBuilderRef b = g->b;
    LLVMValueRef n = tjj_gpu_intrinsic1(g, "llvm.trunc", LLVMBuildFMul(b, u, cd(g, TJJ_LOG2E), ""));
    LLVMValueRef neg_n = LLVMBuildFNeg(b, n, "");
    LLVMValueRef r = LLVMBuildFAdd(b, tjj_gmath_fma(g, neg_n, cd(g, TJJ_LN2), u), LLVMBuildFMul(b, neg_n, cd(g, TJJ_LN2_LO), ""), "");
    double c[16];
    double f = 1;
    for (int k = 0; k < 16; k++) /* c[k] = 1 / (k+2)! */
        f *= k + 2, c[k] = 1 / f;
    /* r + r (r (1/2 + r/6 + ...)): the leading term exact */
    LLVMValueRef em1r = tjj_gmath_fma(g, r, LLVMBuildFMul(b, r, horner(g, r, c, 16), ""), r);
    LLVMValueRef p2 = tjj_gmath_pow2_f64(g, LLVMBuildFPToSI(b, n, g->ty.t_i32, ""));
    return tjj_gmath_fma(g, p2, em1r, LLVMBuildFSub(b, p2, cd(g, 1), ""));
}

/* tanh |x| = expm1(2|x|) / (expm1(2|x|) + 2), signed; 1 from |x| > 19.1,
 * where tanh rounds to 1. */
static LLVMValueRef tanh_body(tjj_gpu_gen *g, LLVMValueRef *args)
{
    LLVMBuilderRef b = g->b;
    LLVMValueRef x = args[0], a = tjj_gpu_intrinsic1(g, "llvm.fabs", x);
    LLVMValueRef em1 = expm1_core(g, LLVMBuildFMul(b, tjj_gmath_clamp(g, a, 0, 19.5), cd(g, 2), ""));
    LLVMValueRef t = LLVMBuildFDiv(b, em1, LLVMBuildFAdd(b, em1, cd(g, 2), ""), "");
    t = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOGT, a, cd(g, 19.1), ""), cd(g, 1), t, "");
    return odd_result(g, x, t);
}

/* expm1 x: expm1_core on [-40, 700] (below -40 it rounds to -1), exp x
 * above (where the 1 is lost in the rounding); zeros kept with their sign. */
static LLVMValueRef expm1_body(tjj_gpu_gen *g, LLVMValueRef *args)
{
    LLVMBuilderRef b = g->b;
    LLVMValueRef x = args[0], r = expm1_core(g, tjj_gmath_clamp(g, x, -40, 700));
    LLVMValueRef big = LLVMBuildFCmp(b, LLVMRealOGT, x, cd(g, 700), "");
    r = LLVMBuildSelect(b, big, tjj_gmath_call(g, "exp", &x, 1, tjj_gmath_exp_f64), r, "");
    r = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOEQ, x, cd(g, 0), ""), x, r, "");
    return tjj_gmath_keep_nan(g, x, r);
}

/* log1p x = log(u) x / (u - 1) with u = 1 + x rounded (Goldberg's
 * correction of u's rounding error); x itself where u is 1 (|x| below half
 * an ulp of 1, zeros with their sign), infinity for infinity. log gives
 * -inf at x = -1 and NaN below. */
static LLVMValueRef log1p_body(tjj_gpu_gen *g, LLVMValueRef *args)
{
    LLVMBuilderRef b = g->b;
    LLVMValueRef x = args[0], u = LLVMBuildFAdd(b, cd(g, 1), x, "");
    LLVMValueRef l = tjj_gmath_call(g, "log", &u, 1, tjj_gmath_log);
    LLVMValueRef r = LLVMBuildFMul(b, l, LLVMBuildFDiv(b, x, LLVMBuildFSub(b, u, cd(g, 1), ""), ""), "");
    r = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOEQ, u, cd(g, 1), ""), x, r, "");
    r = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOEQ, x, cd(g, INFINITY), ""), x, r, "");
    return tjj_gmath_keep_nan(g, x, r);
}

/* erf |x|: below 1 its Maclaurin series in x^2 (19 terms); on [j, j+1) for
 * j = 1..5 the Taylor series at j + 1/2 (26 terms in |x| - j - 1/2, each
 * below 2^-70), whose coefficients erf(c), and (2/sqrt(pi)) e^(-c^2)
 * (-1)^(m-1) H_(m-1)(c) / m! with Hermite polynomials H, are computed here in
 * long double from the C library's erfl and expl; 1 from 6 on. Signed. */
enum { ERF_SMALL_TERMS = 19, ERF_PIECES = 5, ERF_TERMS = 26 };

static LLVMValueRef erf_body(tjj_gpu_gen *g, LLVMValueRef *args)
{
    LLVMBuilderRef b = g->b;
    LLVMValueRef x = args[0], a = tjj_gpu_intrinsic1(g, "llvm.fabs", x);
    const long double two_over_sqrt_pi = 1.1283791670955125738961589031215452L;
    double small[ERF_SMALL_TERMS], piece[ERF_PIECES][ERF_TERMS];
    long double fact = 1;
    for (int n = 0; n < ERF_SMALL_TERMS; n++) {
        small[n] = (double)(two_over_sqrt_pi * (n % 2 ? -1 : 1) / (fact * (2 * n + 1)));
        fact *= n + 1;
    }
    for (int j = 0; j < ERF_PIECES; j++) {
        long double c = j + 1.5L, h_prev = 0, h = 1, scale = two_over_sqrt_pi * expl(-c * c), mfact = 1;
        piece[j][0] = (double)erfl(c);
        for (int m = 1; m < ERF_TERMS; m++) { /* h = H_(m-1)(c) */
            mfact *= m;
            piece[j][m] = (double)(scale * ((m - 1) % 2 ? -h : h) / mfact);
            long double next = 2 * c * h - 2 * (m - 1) * h_prev;
            h_prev = h, h = next;
        }
    }
    LLVMValueRef e_small = LLVMBuildFMul(b, a, horner(g, LLVMBuildFMul(b, a, a, ""), small, ERF_SMALL_TERMS), "");
    /* the piece of a: j = clamp(floor(a), 1, 5) - 1, its coefficients by select */
    LLVMValueRef jf = tjj_gmath_clamp(g, tjj_gpu_intrinsic1(g, "llvm.floor", a), 1, 5);
    LLVMValueRef h = LLVMBuildFSub(b, a, LLVMBuildFAdd(b, jf, cd(g, 0.5), ""), "");
    LLVMValueRef is_piece[ERF_PIECES];
    for (int j = 0; j < ERF_PIECES; j++)
        is_piece[j] = LLVMBuildFCmp(b, LLVMRealOEQ, jf, cd(g, j + 1), "");
    LLVMValueRef q = NULL;
    for (int m = ERF_TERMS - 1; m >= 0; m--) {
        LLVMValueRef coef = cd(g, piece[0][m]);
        for (int j = 1; j < ERF_PIECES; j++)
            coef = LLVMBuildSelect(b, is_piece[j], cd(g, piece[j][m]), coef, "");
        q = q ? tjj_gmath_fma(g, q, h, coef) : coef;
    }
    LLVMValueRef e = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOLT, a, cd(g, 1), ""), e_small, q, "");
    e = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOGE, a, cd(g, 6), ""), cd(g, 1), e, "");
    return odd_result(g, x, e);
}

LLVMValueRef tjj_gmath_erf(tjj_gpu_gen *g, LLVMValueRef x)
{
    return tjj_gmath_call(g, "erf", &x, 1, erf_body);
}

/* pow(x, y) = exp(y log|x|) with C's special cases: 1 where y is 0 or x is
 * 1 (NaN included), the sign of x for odd integral y, NaN for x < 0 and y
 * not integral; zeros and infinities fall out of exp and log. The product's
 * rounding makes the f64 relative error about 2^-53 (1 + |y ln x|): exact
 * enough for f32, a few hundred ulp for f64 results near the limits of the
 * range. */
static LLVMValueRef pow_body(tjj_gpu_gen *g, LLVMValueRef *args)
{
    LLVMBuilderRef b = g->b;
    LLVMValueRef x = args[0], y = args[1], a = tjj_gpu_intrinsic1(g, "llvm.fabs", x);
    LLVMValueRef l = tjj_gmath_call(g, "log", &a, 1, tjj_gmath_log);
    LLVMValueRef yl = LLVMBuildFMul(b, y, l, "");
    LLVMValueRef r = tjj_gmath_call(g, "exp", &yl, 1, tjj_gmath_exp_f64);
    LLVMValueRef y_int = LLVMBuildFCmp(b, LLVMRealOEQ, tjj_gpu_intrinsic1(g, "llvm.floor", y), y, "");
    LLVMValueRef half_y = LLVMBuildFMul(b, y, cd(g, 0.5), "");
    LLVMValueRef y_odd = LLVMBuildAnd(b, y_int, LLVMBuildFCmp(b, LLVMRealUNE, tjj_gpu_intrinsic1(g, "llvm.floor", half_y),
                                                           half_y, ""), "");
    LLVMValueRef x_neg = LLVMBuildICmp(b, LLVMIntSLT, LLVMBuildBitCast(b, x, g->ty.t_i64, ""), c_int(g->ty.t_i64, 0), "");
    r = LLVMBuildSelect(b, LLVMBuildAnd(b, x_neg, y_odd, ""), LLVMBuildFNeg(b, r, ""), r, "");
    LLVMValueRef below_zero = LLVMBuildAnd(b, LLVMBuildFCmp(b, LLVMRealOLT, x, cd(g, 0), ""),
                                           LLVMBuildFCmp(b, LLVMRealOGT, x, cd(g, -INFINITY), ""), "");
    LLVMValueRef y_finite = LLVMBuildFCmp(b, LLVMRealOLT, tjj_gpu_intrinsic1(g, "llvm.fabs", y), cd(g, INFINITY), "");
    LLVMValueRef no_real = LLVMBuildAnd(b, below_zero, LLVMBuildAnd(b, y_finite, LLVMBuildNot(b, y_int, ""), ""), "");
    r = LLVMBuildSelect(b, no_real, cd(g, NAN), r, "");
    LLVMValueRef one = LLVMBuildOr(b, LLVMBuildFCmp(b, LLVMRealOEQ, y, cd(g, 0), ""),
                                   LLVMBuildFCmp(b, LLVMRealOEQ, x, cd(g, 1), ""), "");
    /* |x| = 1 with infinite y: 1 (exp(inf * 0) would be NaN) */
    LLVMValueRef unit = LLVMBuildAnd(b, LLVMBuildFCmp(b, LLVMRealOEQ, a, cd(g, 1), ""),
                                     LLVMBuildNot(b, y_finite, ""), "");
    unit = LLVMBuildAnd(b, unit, LLVMBuildFCmp(b, LLVMRealORD, y, y, ""), "");
    return LLVMBuildSelect(b, LLVMBuildOr(b, one, unit, ""), cd(g, 1), r, "");
}

/* --- tan, the inverse trigonometric functions, the hyperbolic ones ------------------ */

/* tan x = sin r / cos r, or -cos r / sin r for odd k; x below 2^-27. */
static LLVMValueRef tan_body(tjj_gpu_gen *g, LLVMValueRef *args)
{
    LLVMBuilderRef b = g->b;
    LLVMValueRef x = args[0];
    quarter_turns q4 = reduce_quarters(g, x);
    LLVMValueRef half_k = LLVMBuildFMul(b, q4.k, cd(g, 0.5), "");
    LLVMValueRef odd = LLVMBuildFCmp(b, LLVMRealUNE, tjj_gpu_intrinsic1(g, "llvm.floor", half_k), half_k, "");
    LLVMValueRef t = LLVMBuildSelect(b, odd, LLVMBuildFNeg(b, LLVMBuildFDiv(b, q4.cos_r, q4.sin_r, ""), ""),
                                     LLVMBuildFDiv(b, q4.sin_r, q4.cos_r, ""), "");
    return LLVMBuildSelect(b, below(g, x, 0x1p-27), x, t, "");
}

/* atan a for a >= 0 (NaN gives NaN): a is brought near a point c of 0,
 * 1/2, 1, 3/2 or infinity, t = (a - c) / (1 + a c) (-1/a for infinity),
 * atan a = atan c + atan t with |t| <= 7/16 (fdlibm's intervals), atan c
 * in two parts from atanl, atan t by its Taylor series (24 terms past t:
 * the remainder is below 2^-62 of t). */
enum { ATAN_POINTS = 5, ATAN_TERMS = 24 };

/* atan a as hi (atan of the point, a double) and small (the rest), for
 * callers that subtract it from pi without losing small's low bits. */
static void atan_parts(tjj_gpu_gen *g, LLVMValueRef a, LLVMValueRef *hi_out, LLVMValueRef *small_out)
{
    LLVMBuilderRef b = g->b;
    static const double bounds[ATAN_POINTS - 1] = {7.0 / 16, 11.0 / 16, 19.0 / 16, 39.0 / 16};
    LLVMValueRef c = cd(g, 0), hi = cd(g, 0), lo = cd(g, 0), far = NULL;
    for (int i = 0; i < ATAN_POINTS - 1; i++) {
        long double point = i + 1 < ATAN_POINTS - 1 ? 0.5L * (i + 1) : INFINITY;
        long double angle = atanl(point);
        LLVMValueRef past = LLVMBuildFCmp(b, LLVMRealUGE, a, cd(g, bounds[i]), ""); /* NaN: the last */
        c = LLVMBuildSelect(b, past, cd(g, (double)point), c, "");
        hi = LLVMBuildSelect(b, past, cd(g, (double)angle), hi, "");
        lo = LLVMBuildSelect(b, past, cd(g, (double)(angle - (double)angle)), lo, "");
        far = past;
    }
    LLVMValueRef num = LLVMBuildSelect(b, far, cd(g, -1), LLVMBuildFSub(b, a, c, ""), "");
    LLVMValueRef den = LLVMBuildSelect(b, far, a, tjj_gmath_fma(g, a, c, cd(g, 1)), "");
    LLVMValueRef t = LLVMBuildFDiv(b, num, den, ""), z = LLVMBuildFMul(b, t, t, "");
    double coef[ATAN_TERMS];
    for (int n = 1; n <= ATAN_TERMS; n++) /* atan t = t + t z (-1/3 + z/5 - ...) */
        coef[n - 1] = (n % 2 ? -1.0 : 1.0) / (2 * n + 1);
    LLVMValueRef tail = LLVMBuildFMul(b, LLVMBuildFMul(b, t, z, ""), horner(g, z, coef, ATAN_TERMS), "");
    /* atan c + (t + (atan t - t + lo)): the small parts first */
    *hi_out = hi;
    *small_out = LLVMBuildFAdd(b, t, LLVMBuildFAdd(b, tail, lo, ""), "");
}

static LLVMValueRef atan_nonneg(tjj_gpu_gen *g, LLVMValueRef a)
{
    LLVMValueRef hi, small;
    atan_parts(g, a, &hi, &small);
    return LLVMBuildFAdd(g->b, hi, small, "");
}

static LLVMValueRef atan_body(tjj_gpu_gen *g, LLVMValueRef *args)
{
    return odd_result(g, args[0], atan_nonneg(g, tjj_gpu_intrinsic1(g, "llvm.fabs", args[0])));
}

/* asin x = atan(x / sqrt((1 - x)(1 + x))): 1 - |x| is exact where it
 * matters (|x| near 1); |x| > 1 gives the square root of a negative, NaN. */
static LLVMValueRef asin_body(tjj_gpu_gen *g, LLVMValueRef *args)
{
    LLVMBuilderRef b = g->b;
    LLVMValueRef a = tjj_gpu_intrinsic1(g, "llvm.fabs", args[0]);
    LLVMValueRef d = LLVMBuildFMul(b, LLVMBuildFSub(b, cd(g, 1), a, ""), LLVMBuildFAdd(b, cd(g, 1), a, ""), "");
    LLVMValueRef u = LLVMBuildFDiv(b, a, tjj_gpu_intrinsic1(g, "llvm.sqrt", d), "");
    return odd_result(g, args[0], atan_nonneg(g, u));
}

/* acos x = 2 atan(sqrt((1 - x) / (1 + x))): pi at -1 (the quotient is
 * infinite), 0 at 1; outside [-1, 1] the quotient is negative, NaN. */
static LLVMValueRef acos_body(tjj_gpu_gen *g, LLVMValueRef *args)
{
    LLVMBuilderRef b = g->b;
    LLVMValueRef x = args[0];
    LLVMValueRef q = LLVMBuildFDiv(b, LLVMBuildFSub(b, cd(g, 1), x, ""), LLVMBuildFAdd(b, cd(g, 1), x, ""), "");
    LLVMValueRef r = atan_nonneg(g, tjj_gpu_intrinsic1(g, "llvm.sqrt", q));
    return tjj_gmath_keep_nan(g, x, LLVMBuildFMul(b, cd(g, 2), r, ""));
}

/* atan2(y, x): the angle in the first quadrant, atan(|y| / |x|) (0 for two
 * zeros, pi/4 for two infinities), taken from pi where x's sign is set
 * (-0 too), and given y's sign: C's special cases, zeros' signs included. */
static LLVMValueRef atan2_body(tjj_gpu_gen *g, LLVMValueRef *args)
{
    LLVMBuilderRef b = g->b;
    LLVMValueRef y = args[0], x = args[1];
    LLVMValueRef ay = tjj_gpu_intrinsic1(g, "llvm.fabs", y), ax = tjj_gpu_intrinsic1(g, "llvm.fabs", x);
    LLVMValueRef hi, small;
    atan_parts(g, LLVMBuildFDiv(b, ay, ax, ""), &hi, &small);
    LLVMValueRef theta = LLVMBuildFAdd(b, hi, small, "");
    LLVMValueRef zeros = LLVMBuildAnd(b, LLVMBuildFCmp(b, LLVMRealOEQ, ay, cd(g, 0), ""),
                                      LLVMBuildFCmp(b, LLVMRealOEQ, ax, cd(g, 0), ""), "");
    LLVMValueRef infs = LLVMBuildAnd(b, LLVMBuildFCmp(b, LLVMRealOEQ, ay, cd(g, INFINITY), ""),
                                     LLVMBuildFCmp(b, LLVMRealOEQ, ax, cd(g, INFINITY), ""), "");
    theta = LLVMBuildSelect(b, zeros, cd(g, 0), theta, "");
    theta = LLVMBuildSelect(b, infs, cd(g, (double)atanl(1)), theta, "");
    long double pi = 4 * atanl(1);
    /* pi - theta = (pi's double - hi) + (what pi's double misses - small) */
    LLVMValueRef from_pi = LLVMBuildFAdd(b, LLVMBuildFSub(b, cd(g, (double)pi), hi, ""),
                                         LLVMBuildFSub(b, cd(g, (double)(pi - (double)pi)), small, ""), "");
    from_pi = LLVMBuildSelect(b, zeros, cd(g, (double)pi), from_pi, "");
    from_pi = LLVMBuildSelect(b, infs, cd(g, (double)(3 * atanl(1))), from_pi, "");
    LLVMValueRef x_neg = LLVMBuildICmp(b, LLVMIntSLT, LLVMBuildBitCast(b, x, g->ty.t_i64, ""), c_int(g->ty.t_i64, 0), "");
    LLVMValueRef r = copysign_f64(g, LLVMBuildSelect(b, x_neg, from_pi, theta, ""), y);
    return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealUNO, x, y, ""), cd(g, NAN), r, "");
}

/* sinh |x| = (t + t / (t + 1)) / 2 with t = expm1|x| (e^a - e^-a: two
 * positive terms) below 22; e^(a/2) e^(a/2) / 2 above, so that it
 * overflows where sinh does, not where e^a does. x itself below 2^-28. */
static LLVMValueRef exp_half_squared(tjj_gpu_gen *g, LLVMValueRef a)
{
    LLVMBuilderRef b = g->b;
    LLVMValueRef half = LLVMBuildFMul(b, a, cd(g, 0.5), "");
    LLVMValueRef h = tjj_gmath_call(g, "exp", &half, 1, tjj_gmath_exp_f64);
    return LLVMBuildFMul(b, LLVMBuildFMul(b, h, cd(g, 0.5), ""), h, "");
}

static LLVMValueRef sinh_body(tjj_gpu_gen *g, LLVMValueRef *args)
{
    LLVMBuilderRef b = g->b;
    LLVMValueRef x = args[0], a = tjj_gpu_intrinsic1(g, "llvm.fabs", x);
    LLVMValueRef t = expm1_core(g, tjj_gmath_clamp(g, a, 0, 22));
    LLVMValueRef s = LLVMBuildFMul(b, cd(g, 0.5), LLVMBuildFAdd(b, t, LLVMBuildFDiv(b, t, LLVMBuildFAdd(b, t, cd(g, 1), ""), ""), ""), "");
    s = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOGE, a, cd(g, 22), ""), exp_half_squared(g, a), s, "");
    return odd_result(g, x, LLVMBuildSelect(b, below(g, x, 0x1p-28), a, s, ""));
}

/* cosh |x| = 1 + t^2 / (2 (1 + t)) with t = expm1|x| below 22 (cosh - 1
 * exactly, no cancellation); as sinh above. */
static LLVMValueRef cosh_body(tjj_gpu_gen *g, LLVMValueRef *args)
{
    LLVMBuilderRef b = g->b;
    LLVMValueRef x = args[0], a = tjj_gpu_intrinsic1(g, "llvm.fabs", x);
    LLVMValueRef t = expm1_core(g, tjj_gmath_clamp(g, a, 0, 22));
    LLVMValueRef den = LLVMBuildFMul(b, cd(g, 2), LLVMBuildFAdd(b, t, cd(g, 1), ""), "");
    LLVMValueRef c = LLVMBuildFAdd(b, cd(g, 1), LLVMBuildFDiv(b, LLVMBuildFMul(b, t, t, ""), den, ""), "");
    c = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOGE, a, cd(g, 22), ""), exp_half_squared(g, a), c, "");
    return tjj_gmath_keep_nan(g, x, c);
}

/* log(a) + ln 2: log(2a) where 2a would overflow. */
static LLVMValueRef log_twice(tjj_gpu_gen *g, LLVMValueRef a)
{
    LLVMValueRef l = tjj_gmath_call(g, "log", &a, 1, tjj_gmath_log);
    return LLVMBuildFAdd(g->b, l, cd(g, TJJ_LN2), "");
}

static LLVMValueRef log1p_of(tjj_gpu_gen *g, LLVMValueRef u)
{
    return tjj_gmath_call(g, "log1p", &u, 1, log1p_body);
}

/* asinh |x| = log1p(a + a^2 / (1 + sqrt(1 + a^2))) up to 2, log(2a + 1 /
 * (sqrt(a^2 + 1) + a)) up to 2^28, log(a) + ln 2 above (fdlibm's forms). */
static LLVMValueRef asinh_body(tjj_gpu_gen *g, LLVMValueRef *args)
{
    LLVMBuilderRef b = g->b;
    LLVMValueRef x = args[0], a = tjj_gpu_intrinsic1(g, "llvm.fabs", x), a2 = LLVMBuildFMul(b, a, a, "");
    LLVMValueRef root = tjj_gpu_intrinsic1(g, "llvm.sqrt", LLVMBuildFAdd(b, a2, cd(g, 1), ""));
    LLVMValueRef small = log1p_of(g, LLVMBuildFAdd(b, a, LLVMBuildFDiv(b, a2, LLVMBuildFAdd(b, cd(g, 1), root, ""), ""), ""));
    LLVMValueRef mid_arg = LLVMBuildFAdd(b, LLVMBuildFMul(b, cd(g, 2), a, ""),
                                         LLVMBuildFDiv(b, cd(g, 1), LLVMBuildFAdd(b, root, a, ""), ""), "");
    LLVMValueRef mid = tjj_gmath_call(g, "log", &mid_arg, 1, tjj_gmath_log);
    LLVMValueRef r = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOLE, a, cd(g, 2), ""), small, mid, "");
    r = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOGE, a, cd(g, 0x1p28), ""), log_twice(g, a), r, "");
    return odd_result(g, x, r);
}

/* acosh x = log1p(t + sqrt(2t + t^2)) with t = x - 1 (exact) up to 2,
 * log(2x - 1 / (x + sqrt(x^2 - 1))) up to 2^28, log(x) + ln 2 above; NaN
 * below 1. */
static LLVMValueRef acosh_body(tjj_gpu_gen *g, LLVMValueRef *args)
{
    LLVMBuilderRef b = g->b;
    LLVMValueRef x = args[0], t = LLVMBuildFSub(b, x, cd(g, 1), "");
    LLVMValueRef small_root = tjj_gpu_intrinsic1(g, "llvm.sqrt", tjj_gmath_fma(g, t, t, LLVMBuildFMul(b, cd(g, 2), t, "")));
    LLVMValueRef small = log1p_of(g, LLVMBuildFAdd(b, t, small_root, ""));
    LLVMValueRef root = tjj_gpu_intrinsic1(g, "llvm.sqrt", tjj_gmath_fma(g, x, x, cd(g, -1)));
    LLVMValueRef mid_arg = LLVMBuildFSub(b, LLVMBuildFMul(b, cd(g, 2), x, ""),
                                         LLVMBuildFDiv(b, cd(g, 1), LLVMBuildFAdd(b, x, root, ""), ""), "");
    LLVMValueRef mid = tjj_gmath_call(g, "log", &mid_arg, 1, tjj_gmath_log);
    LLVMValueRef r = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOLE, x, cd(g, 2), ""), small, mid, "");
    r = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOGE, x, cd(g, 0x1p28), ""), log_twice(g, x), r, "");
    return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealULT, x, cd(g, 1), ""), cd(g, NAN), r, "");
}

/* atanh |x| = log1p(2a / (1 - a)) / 2, as log1p(2a + 2a^2 / (1 - a)) / 2
 * below 1/2; infinite at 1, NaN beyond. */
static LLVMValueRef atanh_body(tjj_gpu_gen *g, LLVMValueRef *args)
{
    LLVMBuilderRef b = g->b;
    LLVMValueRef x = args[0], a = tjj_gpu_intrinsic1(g, "llvm.fabs", x);
    LLVMValueRef one_minus = LLVMBuildFSub(b, cd(g, 1), a, ""), two_a = LLVMBuildFMul(b, cd(g, 2), a, "");
    LLVMValueRef small_arg = LLVMBuildFAdd(b, two_a, LLVMBuildFDiv(b, LLVMBuildFMul(b, two_a, a, ""), one_minus, ""), "");
    LLVMValueRef arg = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOLT, a, cd(g, 0.5), ""), small_arg,
                                       LLVMBuildFDiv(b, two_a, one_minus, ""), "");
    return odd_result(g, x, LLVMBuildFMul(b, cd(g, 0.5), log1p_of(g, arg), ""));
}

/* --- log10, exp10, cbrt, hypot ----------------------------------------------------------- */

/* log10 x = e log10(2) + log(m) log10(e) for x = 2^e m (log's reduction),
 * log10(2) split so that e times its first part is exact. */
static LLVMValueRef log10_body(tjj_gpu_gen *g, LLVMValueRef *args)
{
    LLVMBuilderRef b = g->b;
    LLVMValueRef x = args[0], e;
    LLVMValueRef l = tjj_gmath_log_core(g, x, &e);
    long double log10_2 = log10l(2), log10_e = 1 / logl(10);
    double hi = (double)(float)log10_2; /* 24 bits: e (11 bits) times it is exact */
    double lo = (double)(log10_2 - hi);
    LLVMValueRef tail = tjj_gmath_fma(g, l, cd(g, (double)log10_e), LLVMBuildFMul(b, e, cd(g, lo), ""));
    tail = tjj_gmath_fma(g, l, cd(g, (double)(log10_e - (double)log10_e)), tail);
    return tjj_gmath_log_special(g, x, tjj_gmath_fma(g, e, cd(g, hi), tail));
}

/* exp10 x = e^(x ln 10), with x ln 10 kept as a double and what its
 * rounding lost (fma), since that loss (up to 2^-53 |x ln 10|) would be
 * hundreds of ulp near the ends of the range; exp's reduction takes both
 * parts to n ln 2 + rh + rl. Beyond +-350 the result is 0 or inf. */
static LLVMValueRef exp10_body(tjj_gpu_gen *g, LLVMValueRef *args)
{
    LLVMBuilderRef b = g->b;
    LLVMValueRef x = args[0], t = tjj_gmath_clamp(g, x, -350, 350);
    /* ln 10 as a double and the double of what it misses (a long double's
       difference would keep only 11 bits of it, or none) */
    const double ln10 = 0x1.26bb1bbb55516p+1, ln10_lo = -0x1.f48ad494ea3e9p-53;
    LLVMValueRef p = LLVMBuildFMul(b, t, cd(g, ln10), "");
    LLVMValueRef p_lo = LLVMBuildFAdd(b, tjj_gmath_fma(g, t, cd(g, ln10), LLVMBuildFNeg(b, p, "")),
                                      LLVMBuildFMul(b, t, cd(g, ln10_lo), ""), "");
    LLVMValueRef n = tjj_gpu_intrinsic1(g, "llvm.rint", LLVMBuildFMul(b, p, cd(g, TJJ_LOG2E), ""));
    LLVMValueRef neg_n = LLVMBuildFNeg(b, n, "");
    LLVMValueRef rh = tjj_gmath_fma(g, neg_n, cd(g, TJJ_LN2), p);
    LLVMValueRef rl = tjj_gmath_fma(g, neg_n, cd(g, TJJ_LN2_LO), p_lo);
    return tjj_gmath_keep_nan(g, x, tjj_gmath_exp_core(g, n, rh, rl));
}

/* cbrt x: a first guess from the bits (a third of the exponent, a constant
 * for the mantissa's error), five Newton steps y -= (y^3 - a) / (3 y^2)
 * (the error squares each step), the residual by fma in the last; inputs
 * below 2^-1000 scaled by 2^162 first (their result by 2^-54). Zeros and
 * infinities are themselves. */
static LLVMValueRef cbrt_body(tjj_gpu_gen *g, LLVMValueRef *args)
{
    LLVMBuilderRef b = g->b;
    LLVMValueRef x = args[0], a = tjj_gpu_intrinsic1(g, "llvm.fabs", x);
    LLVMValueRef tiny = LLVMBuildFCmp(b, LLVMRealOLT, a, cd(g, 0x1p-1000), "");
    LLVMValueRef as = LLVMBuildSelect(b, tiny, LLVMBuildFMul(b, a, cd(g, 0x1p162), ""), a, "");
    LLVMValueRef bits = LLVMBuildBitCast(b, as, g->ty.t_i64, "");
    bits = LLVMBuildAdd(b, LLVMBuildUDiv(b, bits, c_int(g->ty.t_i64, 3), ""),
                        LLVMConstInt(g->ty.t_i64, 0x2A9F7893782DA1CEull, 0), "");
    LLVMValueRef y = LLVMBuildBitCast(b, bits, g->ty.t_double, "");
    for (int step = 0; step < 5; step++) {
        LLVMValueRef y2 = LLVMBuildFMul(b, y, y, "");
        LLVMValueRef residual = tjj_gmath_fma(g, y2, y, LLVMBuildFNeg(b, as, ""));
        y = LLVMBuildFSub(b, y, LLVMBuildFDiv(b, residual, LLVMBuildFMul(b, cd(g, 3), y2, ""), ""), "");
    }
    y = LLVMBuildSelect(b, tiny, LLVMBuildFMul(b, y, cd(g, 0x1p-54), ""), y, "");
    LLVMValueRef r = copysign_f64(g, y, x);
    LLVMValueRef same = LLVMBuildOr(b, LLVMBuildFCmp(b, LLVMRealOEQ, a, cd(g, 0), ""),
                                    LLVMBuildFCmp(b, LLVMRealOEQ, a, cd(g, INFINITY), ""), "");
    return tjj_gmath_keep_nan(g, x, LLVMBuildSelect(b, same, x, r, ""));
}

/* hypot(x, y) = sqrt(x^2 + y^2) with the squares' sum by one fma, both
 * scaled by a power of two (exact) where the larger is beyond 2^+-500, so
 * that nothing overflows or underflows that matters; infinity if either is
 * infinite, a NaN other included (C's rule). */
static LLVMValueRef hypot_body(tjj_gpu_gen *g, LLVMValueRef *args)
{
    LLVMBuilderRef b = g->b;
    LLVMValueRef ax = tjj_gpu_intrinsic1(g, "llvm.fabs", args[0]), ay = tjj_gpu_intrinsic1(g, "llvm.fabs", args[1]);
    LLVMValueRef m = tjj_gpu_intrinsic2(g, "llvm.maxnum", ax, ay);
    LLVMValueRef big = LLVMBuildFCmp(b, LLVMRealOGT, m, cd(g, 0x1p500), "");
    LLVMValueRef small = LLVMBuildFCmp(b, LLVMRealOLT, m, cd(g, 0x1p-500), "");
    LLVMValueRef scale = LLVMBuildSelect(b, big, cd(g, 0x1p-600), LLVMBuildSelect(b, small, cd(g, 0x1p600), cd(g, 1), ""), "");
    LLVMValueRef unscale = LLVMBuildSelect(b, big, cd(g, 0x1p600), LLVMBuildSelect(b, small, cd(g, 0x1p-600), cd(g, 1), ""), "");
    LLVMValueRef xs = LLVMBuildFMul(b, ax, scale, ""), ys = LLVMBuildFMul(b, ay, scale, "");
    LLVMValueRef sum = tjj_gmath_fma(g, xs, xs, LLVMBuildFMul(b, ys, ys, ""));
    LLVMValueRef h = LLVMBuildFMul(b, tjj_gpu_intrinsic1(g, "llvm.sqrt", sum), unscale, "");
    LLVMValueRef inf = LLVMBuildOr(b, LLVMBuildFCmp(b, LLVMRealOEQ, ax, cd(g, INFINITY), ""),
                                   LLVMBuildFCmp(b, LLVMRealOEQ, ay, cd(g, INFINITY), ""), "");
    return LLVMBuildSelect(b, inf, cd(g, INFINITY), h, "");
}

LLVMValueRef tjj_gmath_f64(tjj_gpu_gen *g, tji_opcode code, LLVMValueRef x, LLVMValueRef y)
{
    static const struct {
        tji_opcode code;
        const char *name;
        tjj_gmath_body body;
    } fns[] = {
        {TJI_SIN, "sin", sin_body},       {TJI_COS, "cos", cos_body},       {TJI_TAN, "tan", tan_body},
        {TJI_TANH, "tanh", tanh_body},    {TJI_ERF, "erf", erf_body},       {TJI_LOG1P, "log1p", log1p_body},
        {TJI_EXPM1, "expm1", expm1_body}, {TJI_POW, "pow", pow_body},       {TJI_ASIN, "asin", asin_body},
        {TJI_ACOS, "acos", acos_body},    {TJI_ATAN, "atan", atan_body},    {TJI_ATAN2, "atan2", atan2_body},
        {TJI_SINH, "sinh", sinh_body},    {TJI_COSH, "cosh", cosh_body},    {TJI_ASINH, "asinh", asinh_body},
        {TJI_ACOSH, "acosh", acosh_body}, {TJI_ATANH, "atanh", atanh_body}, {TJI_LOG10, "log10", log10_body},
        {TJI_CBRT, "cbrt", cbrt_body},    {TJI_HYPOT, "hypot", hypot_body}, {TJI_EXP10, "exp10", exp10_body},
        {TJI_ERFC, "erfc", tjj_gmath_erfc_body},  {TJI_LGAMMA, "lgamma", tjj_gmath_lgamma_body},
    };
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++)
        if (fns[i].code == code)
            return via_f64(g, fns[i].name, fns[i].body, x, y);
    return NULL;
}
