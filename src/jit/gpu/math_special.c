/* SPDX-License-Identifier: MIT */
/*
 * math_special.c — the GPU's special functions beyond math_f64.c's: erfc
 * and lgamma, each built on polynomials made here from the C library.
 *
 * Both need a function that no short series covers well over the range
 * that matters, so both interpolate one: a polynomial of degree 14 on each
 * of 14 pieces of that range, centred on the piece's midpoint, narrower
 * where the function bends more. The coefficients are made when a module
 * first needs them, in long double, by interpolating the C library's long
 * double function at 15 Chebyshev points of the piece (each rounded to 24
 * fraction bits, so that the arithmetic around them is exact in long
 * double) and solving the Vandermonde system with partial pivoting; they
 * live in one constant table of the module, a row per piece, and the piece
 * of an argument is counted from the edges.
 *
 * erfc(x) = 1 - erf(x) is what a kernel asks for where erf nears 1 and the
 * difference is the answer: Gaussian tails, probabilities of large
 * deviations. 1 - erf(x) is fine while erf(x) stays below 1/2 (|x| < 1/2,
 * and every negative x, where erfc(x) = 2 - erfc(|x|) lies in [1, 2]), but
 * beyond it the subtraction cancels: at x = 6 nothing of erf's 53 bits
 * survives, while erfc(6) = 2.2e-17 is a perfectly good double (erfc
 * underflows only near 27.2). So for a = |x| >= 1/2 the function is split
 * as erfc(a) = exp(-a^2) E(a), where E (the scaled complement, erfcx) is
 * smooth and slowly varying: about 1/(a sqrt(pi)) for large a. exp(-a^2)
 * takes a^2 as hi + lo (lo by fma, so no rounding of the square is
 * amplified by the exponential) through exp's own core; E is interpolated
 * on [1/2, 28). From 27.5 on the result is 0 (it underflows near 27.2).
 *
 * lgamma(x) = log |gamma(x)| has two zeros, at 1 and 2, where a relative
 * error is only kept by dividing them out: on [1/2, 8) the polynomials
 * interpolate G(x) = lgamma(x) / ((x - 1)(x - 2)), smooth and free of
 * zeros, and lgamma is G times the two factors, each subtraction exact.
 * From 8 on, Stirling's series: (x - 1/2) log x - x + log(2 pi)/2 plus
 * eight terms in 1/x (the ninth is below 2^-56 of the result at 8). Below
 * 1/2, lgamma(x) = lgamma(1 + x) - log x, with (1 + x - 1)(1 + x - 2) taken
 * as x (x - 1), exactly. Below 0 the reflection, lgamma(x) = log(pi /
 * |sin(pi x)|) - lgamma(1 - x), with sin(pi x) from x reduced exactly to
 * [0, 1/2]; it cancels near lgamma's zeros below -2 (as CUDA's does), to an
 * absolute error of a few 2^-53 lgamma(1 - x). Zero and the negative
 * integers give +inf, as do both infinities.
 *
 * Error in f64, measured on the host against glibc's erfcl and lgammal over
 * edges and random inputs (tests/test_gpu_math_host, bounds in
 * tests/math_bounds.h): a few ulp, from exp's, log's and the polynomials'
 * rounding; f32, f16 and bf16 are computed in f64 and rounded once
 * (math_f64.c's via_f64).
 */
#include <math.h>

#include "math_lib.h"

enum { TERMS = 15, ROW = TERMS + 1 };

/* A function interpolated piecewise: the pieces' edges (npieces + 1), the
 * long double reference, and the name of its table in the module. */
typedef struct pieces {
    const char *table;
    int npieces;
    const double *edges;
    long double (*fn)(long double t);
} pieces;

enum { ERFC_PIECES = 14, LGAMMA_PIECES = 14 };
static const double erfc_edges[ERFC_PIECES + 1] = {0.5, 1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10, 13, 17, 22, 28};
/* erfc(27.5) is about 1e-330, below half the least subnormal double */
static const double ERFC_ZERO_FROM = 27.5;
/* narrow near 1/2, where log's pole at 0 is closest */
static const double lgamma_edges[LGAMMA_PIECES + 1] = {0.5,  0.625, 0.75, 0.875, 1, 1.25, 1.5, 1.75,
                                                       2,    2.5,   3,    4,     5, 6,    8};
static const double LGAMMA_STIRLING_FROM = 8;

static long double erfc_scaled(long double t) { return expl(t * t) * erfcl(t); }

static long double lgamma_over_zeros(long double t)
{
    int sign;
    return lgammal_r(t, &sign) / ((t - 1) * (t - 2));
}

static const pieces erfc_pieces = {"tjm_erfc_pieces", ERFC_PIECES, erfc_edges, erfc_scaled};
static const pieces lgamma_pieces = {"tjm_lgamma_pieces", LGAMMA_PIECES, lgamma_edges, lgamma_over_zeros};

/* Row p of P's table: the piece's midpoint, then the coefficients in
 * (t - midpoint), lowest first, interpolated at Chebyshev points. */
static void fit_row(const pieces *P, int p, double row[ROW])
{
    const long double pi = 3.14159265358979323846264338327950288L;
    long double lo = P->edges[p], hi = P->edges[p + 1], mid = (lo + hi) / 2, half = (hi - lo) / 2;
    long double m[TERMS][TERMS + 1], c[TERMS];
    for (int i = 0; i < TERMS; i++) {
        long double t = mid + half * cosl((2 * i + 1) * pi / (2 * TERMS));
        t = ldexpl(rintl(ldexpl(t, 24)), -24);
        long double h = t - mid, power = 1;
        for (int k = 0; k < TERMS; k++, power *= h)
            m[i][k] = power;
        m[i][TERMS] = P->fn(t);
    }
    for (int col = 0; col < TERMS; col++) {
        int pivot = col;
        for (int r = col + 1; r < TERMS; r++)
            if (fabsl(m[r][col]) > fabsl(m[pivot][col]))
                pivot = r;
        for (int k = 0; k <= TERMS; k++) {
            long double swap = m[col][k];
            m[col][k] = m[pivot][k];
            m[pivot][k] = swap;
        }
        for (int r = col + 1; r < TERMS; r++) {
            long double f = m[r][col] / m[col][col];
            for (int k = col; k <= TERMS; k++)
                m[r][k] -= f * m[col][k];
        }
    }
    for (int col = TERMS - 1; col >= 0; col--) {
        long double s = m[col][TERMS];
        for (int k = col + 1; k < TERMS; k++)
            s -= m[col][k] * c[k];
        c[col] = s / m[col][col];
    }
    row[0] = (double)mid;
    for (int k = 0; k < TERMS; k++)
        row[k + 1] = (double)c[k];
}

static LLVMValueRef pieces_table(tjj_gpu_gen *g, const pieces *P)
{
    LLVMValueRef t = LLVMGetNamedGlobal(g->mod, P->table);
    if (t)
        return t;
    LLVMValueRef rows[LGAMMA_PIECES > ERFC_PIECES ? LGAMMA_PIECES : ERFC_PIECES];
    LLVMTypeRef row_type = LLVMArrayType(g->ty.t_double, ROW);
    for (int p = 0; p < P->npieces; p++) {
        double row[ROW];
        LLVMValueRef v[ROW];
        fit_row(P, p, row);
        for (int k = 0; k < ROW; k++)
            v[k] = c_real(g->ty.t_double, row[k]);
        rows[p] = LLVMConstArray(g->ty.t_double, v, ROW);
    }
    t = LLVMAddGlobal(g->mod, LLVMArrayType(row_type, (unsigned)P->npieces), P->table);
    LLVMSetInitializer(t, LLVMConstArray(row_type, rows, (unsigned)P->npieces));
    LLVMSetGlobalConstant(t, 1);
    LLVMSetLinkage(t, LLVMInternalLinkage);
    return t;
}

/* P's polynomial at x, which lies within P's edges. */
static LLVMValueRef pieces_eval(tjj_gpu_gen *g, const pieces *P, LLVMValueRef x)
{
    LLVMBuilderRef b = g->b;
    LLVMTypeRef i64 = g->ty.t_i64, f64 = g->ty.t_double;
    LLVMValueRef piece = c_int(i64, 0);
    for (int k = 1; k < P->npieces; k++)
        piece = LLVMBuildAdd(b, piece,
                             LLVMBuildZExt(b, LLVMBuildFCmp(b, LLVMRealOGE, x, c_real(f64, P->edges[k]), ""), i64, ""),
                             "");
    LLVMValueRef table = pieces_table(g, P), row[ROW];
    LLVMTypeRef table_type = LLVMArrayType(LLVMArrayType(f64, ROW), (unsigned)P->npieces);
    for (int k = 0; k < ROW; k++) {
        LLVMValueRef idx[3] = {c_int(i64, 0), piece, c_int(i64, k)};
        row[k] = LLVMBuildLoad2(b, f64, LLVMBuildInBoundsGEP2(b, table_type, table, idx, 3, ""), "");
    }
    LLVMValueRef h = LLVMBuildFSub(b, x, row[0], "");
    LLVMValueRef e = row[TERMS];
    for (int k = TERMS - 1; k >= 1; k--)
        e = tjj_gmath_fma(g, e, h, row[k]);
    return e;
}

/* erfc(a) for a in [1/2, 27.5]: exp(-a^2) E(a). */
static LLVMValueRef erfc_tail(tjj_gpu_gen *g, LLVMValueRef a)
{
    LLVMBuilderRef b = g->b;
    LLVMTypeRef f64 = g->ty.t_double;
    LLVMValueRef e = pieces_eval(g, &erfc_pieces, a);
    /* exp(-(hi + lo)), hi + lo = a^2 exactly, by exp's reduction */
    LLVMValueRef sq = LLVMBuildFMul(b, a, a, "");
    LLVMValueRef sq_lo = tjj_gmath_fma(g, a, a, LLVMBuildFNeg(b, sq, ""));
    LLVMValueRef n = tjj_gpu_intrinsic1(g, "llvm.rint", LLVMBuildFMul(b, sq, c_real(f64, -TJJ_LOG2E), ""));
    LLVMValueRef neg_n = LLVMBuildFNeg(b, n, "");
    LLVMValueRef rh = tjj_gmath_fma(g, neg_n, c_real(f64, TJJ_LN2), LLVMBuildFNeg(b, sq, ""));
    LLVMValueRef rl = tjj_gmath_fma(g, neg_n, c_real(f64, TJJ_LN2_LO), LLVMBuildFNeg(b, sq_lo, ""));
    return LLVMBuildFMul(b, tjj_gmath_exp_core(g, n, rh, rl), e, "");
}

LLVMValueRef tjj_gmath_erfc_body(tjj_gpu_gen *g, LLVMValueRef *args)
{
    LLVMBuilderRef b = g->b;
    LLVMTypeRef f64 = g->ty.t_double;
    LLVMValueRef x = args[0], a = tjj_gpu_intrinsic1(g, "llvm.fabs", x);
    LLVMValueRef near_zero = LLVMBuildFSub(b, c_real(f64, 1), tjj_gmath_erf(g, x), "");
    LLVMValueRef tail = erfc_tail(g, tjj_gmath_clamp(g, a, 0.5, ERFC_ZERO_FROM));
    tail = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOGE, a, c_real(f64, ERFC_ZERO_FROM), ""), c_real(f64, 0),
                           tail, "");
    LLVMValueRef negative = LLVMBuildFCmp(b, LLVMRealOLT, x, c_real(f64, 0), "");
    tail = LLVMBuildSelect(b, negative, LLVMBuildFSub(b, c_real(f64, 2), tail, ""), tail, "");
    LLVMValueRef r = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOLT, a, c_real(f64, 0.5), ""), near_zero, tail, "");
    return tjj_gmath_keep_nan(g, x, r);
}

/* Stirling's series for w >= 8: (w - 1/2) log w - w + log(2 pi)/2 + S(1/w),
 * S's coefficients B_2k / (2k (2k - 1)). */
static LLVMValueRef lgamma_stirling(tjj_gpu_gen *g, LLVMValueRef w)
{
    static const double s[] = {1.0 / 12,  -1.0 / 360, 1.0 / 1260, -1.0 / 1680, 1.0 / 1188, -691.0 / 360360,
                               1.0 / 156, -3617.0 / 122400};
    const int n = (int)(sizeof s / sizeof s[0]);
    const double half_log_2pi = 0x1.d67f1c864beb5p-1;
    LLVMBuilderRef b = g->b;
    LLVMTypeRef f64 = g->ty.t_double;
    LLVMValueRef z = LLVMBuildFDiv(b, c_real(f64, 1), w, ""), z2 = LLVMBuildFMul(b, z, z, "");
    LLVMValueRef series = c_real(f64, s[n - 1]);
    for (int k = n - 2; k >= 0; k--)
        series = tjj_gmath_fma(g, series, z2, c_real(f64, s[k]));
    LLVMValueRef log_w = tjj_gmath_call(g, "log", &w, 1, tjj_gmath_log);
    LLVMValueRef r = tjj_gmath_fma(g, LLVMBuildFSub(b, w, c_real(f64, 0.5), ""), log_w, LLVMBuildFNeg(b, w, ""));
    return LLVMBuildFAdd(b, r, tjj_gmath_fma(g, series, z, c_real(f64, half_log_2pi)), "");
}

/* |sin(pi x)| for x < 0, by an exact reduction of |x| to [0, 1/2]. */
static LLVMValueRef lgamma_abs_sin_pi(tjj_gpu_gen *g, LLVMValueRef x)
{
    LLVMBuilderRef b = g->b;
    LLVMTypeRef f64 = g->ty.t_double;
    LLVMValueRef t = tjj_gpu_intrinsic1(g, "llvm.fabs", x);
    LLVMValueRef two_floor = LLVMBuildFMul(
        b, c_real(f64, 2), tjj_gpu_intrinsic1(g, "llvm.floor", LLVMBuildFMul(b, t, c_real(f64, 0.5), "")), "");
    LLVMValueRef r = LLVMBuildFSub(b, t, two_floor, ""); /* [0, 2) */
    LLVMValueRef s = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOGE, r, c_real(f64, 1), ""),
                                     LLVMBuildFSub(b, r, c_real(f64, 1), ""), r, ""); /* [0, 1) */
    s = tjj_gpu_intrinsic2(g, "llvm.minnum", s, LLVMBuildFSub(b, c_real(f64, 1), s, ""));
    LLVMValueRef angle = LLVMBuildFMul(b, s, c_real(f64, 0x1.921fb54442d18p1), "");
    return tjj_gmath_f64(g, TJI_SIN, angle, NULL);
}

LLVMValueRef tjj_gmath_lgamma_body(tjj_gpu_gen *g, LLVMValueRef *args)
{
    LLVMBuilderRef b = g->b;
    LLVMTypeRef f64 = g->ty.t_double;
    LLVMValueRef x = args[0], one = c_real(f64, 1), two = c_real(f64, 2);
    LLVMValueRef negative = LLVMBuildFCmp(b, LLVMRealOLT, x, c_real(f64, 0), "");
    LLVMValueRef below_half = LLVMBuildFCmp(b, LLVMRealOLT, x, c_real(f64, 0.5), "");
    LLVMValueRef small = LLVMBuildAnd(b, below_half, LLVMBuildNot(b, negative, ""), ""); /* [0, 1/2) */
    /* w >= 1/2: 1 - x below 0, 1 + x on [0, 1/2), else x */
    LLVMValueRef w = LLVMBuildSelect(b, negative, LLVMBuildFSub(b, one, x, ""),
                                     LLVMBuildSelect(b, small, LLVMBuildFAdd(b, one, x, ""), x, ""), "");
    LLVMValueRef zeros = LLVMBuildSelect(
        b, small, LLVMBuildFMul(b, x, LLVMBuildFSub(b, x, one, ""), ""),
        LLVMBuildFMul(b, LLVMBuildFSub(b, w, one, ""), LLVMBuildFSub(b, w, two, ""), ""), "");
    LLVMValueRef near = LLVMBuildFMul(
        b, pieces_eval(g, &lgamma_pieces, tjj_gmath_clamp(g, w, 0.5, LGAMMA_STIRLING_FROM)), zeros, "");
    LLVMValueRef far = lgamma_stirling(g, tjj_gpu_intrinsic2(g, "llvm.maxnum", w, c_real(f64, LGAMMA_STIRLING_FROM)));
    LLVMValueRef lg_w = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOLT, w, c_real(f64, LGAMMA_STIRLING_FROM), ""),
                                        near, far, "");
    LLVMValueRef log_x = tjj_gmath_call(g, "log", &x, 1, tjj_gmath_log);
    LLVMValueRef sin_pi = lgamma_abs_sin_pi(g, x);
    LLVMValueRef log_sin = tjj_gmath_call(g, "log", &sin_pi, 1, tjj_gmath_log);
    LLVMValueRef reflected = LLVMBuildFSub(b, LLVMBuildFSub(b, c_real(f64, 0x1.250d048e7a1bdp0), log_sin, ""), lg_w, "");
    LLVMValueRef r = LLVMBuildSelect(b, negative, reflected,
                                     LLVMBuildSelect(b, small, LLVMBuildFSub(b, lg_w, log_x, ""), lg_w, ""), "");
    /* +-inf, and every x below -2^52 (an integer): +inf */
    LLVMValueRef pole = LLVMBuildFCmp(b, LLVMRealOLE, x, c_real(f64, -0x1p52), "");
    pole = LLVMBuildOr(b, pole, LLVMBuildFCmp(b, LLVMRealOEQ, x, c_real(f64, INFINITY), ""), "");
    r = LLVMBuildSelect(b, pole, c_real(f64, INFINITY), r, "");
    /* + 0: lgamma(1) and lgamma(2) are +0, not G times (-0) */
    return tjj_gmath_keep_nan(g, x, LLVMBuildFAdd(b, r, c_real(f64, 0), ""));
}
