/* SPDX-License-Identifier: MIT */
/*
 * math_special.c — the GPU's special functions beyond math_f64.c's: erfc.
 *
 * erfc(x) = 1 - erf(x) is what a kernel asks for where erf nears 1 and the
 * difference is the answer: Gaussian tails, probabilities of large
 * deviations. 1 - erf(x) is fine while erf(x) stays below 1/2 (|x| < 1/2,
 * and every negative x, where erfc(x) = 2 - erfc(|x|) lies in [1, 2]), but
 * beyond it the subtraction cancels: at x = 6 nothing of erf's 53 bits
 * survives, while erfc(6) = 2.2e-17 is a perfectly good double (erfc
 * underflows only near 27.2).
 *
 * So for a = |x| >= 1/2 the function is split as erfc(a) = exp(-a^2) E(a),
 * where E (the scaled complement, erfcx) is smooth and slowly varying: about
 * 1/(a sqrt(pi)) for large a. exp(-a^2) takes a^2 as hi + lo (lo by fma, so
 * no rounding of the square is amplified by the exponential) through
 * exp's own core; E is a polynomial of degree 14 on each of 14 pieces of
 * [1/2, 28), of widths growing with a as E smooths out, centred on the
 * piece's midpoint. Its coefficients are made here, in long double, by
 * interpolating E = expl(t^2) erfcl(t) from the C library at 15 Chebyshev
 * points of the piece (each rounded to 24 fraction bits, so that t^2 is
 * exact in long double) and solving the Vandermonde system with partial
 * pivoting; they live in one constant table of the module, a row per
 * piece, and the piece of a is counted from its edges. From 27.5 on the
 * result is 0 (it underflows near 27.2).
 *
 * Error in f64, measured on the host against glibc's erfcl over edges and
 * random inputs (tests/test_gpu_math_host, bounds in tests/math_bounds.h):
 * a few ulp, from exp's and the polynomial's rounding; f32, f16 and bf16
 * are computed in f64 and rounded once (math_f64.c's via_f64).
 */
#include <math.h>

#include "math_lib.h"

enum { ERFC_PIECES = 14, ERFC_TERMS = 15, ERFC_ROW = ERFC_TERMS + 1 };
static const double erfc_edges[ERFC_PIECES + 1] = {0.5, 1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10, 13, 17, 22, 28};
/* erfc(27.5) is about 1e-330, below half the least subnormal double */
static const double ERFC_ZERO_FROM = 27.5;

/* Row p of the table: the piece's midpoint, then E's coefficients in
 * (t - midpoint), lowest first, interpolated at Chebyshev points. */
static void erfc_row(int p, double row[ERFC_ROW])
{
    const long double pi = 3.14159265358979323846264338327950288L;
    long double lo = erfc_edges[p], hi = erfc_edges[p + 1], mid = (lo + hi) / 2, half = (hi - lo) / 2;
    long double m[ERFC_TERMS][ERFC_TERMS + 1], c[ERFC_TERMS];
    for (int i = 0; i < ERFC_TERMS; i++) {
        long double t = mid + half * cosl((2 * i + 1) * pi / (2 * ERFC_TERMS));
        t = ldexpl(rintl(ldexpl(t, 24)), -24);
        long double h = t - mid, power = 1;
        for (int k = 0; k < ERFC_TERMS; k++, power *= h)
            m[i][k] = power;
        m[i][ERFC_TERMS] = expl(t * t) * erfcl(t);
    }
    for (int col = 0; col < ERFC_TERMS; col++) {
        int pivot = col;
        for (int r = col + 1; r < ERFC_TERMS; r++)
            if (fabsl(m[r][col]) > fabsl(m[pivot][col]))
                pivot = r;
        for (int k = 0; k <= ERFC_TERMS; k++) {
            long double swap = m[col][k];
            m[col][k] = m[pivot][k];
            m[pivot][k] = swap;
        }
        for (int r = col + 1; r < ERFC_TERMS; r++) {
            long double f = m[r][col] / m[col][col];
            for (int k = col; k <= ERFC_TERMS; k++)
                m[r][k] -= f * m[col][k];
        }
    }
    for (int col = ERFC_TERMS - 1; col >= 0; col--) {
        long double s = m[col][ERFC_TERMS];
        for (int k = col + 1; k < ERFC_TERMS; k++)
            s -= m[col][k] * c[k];
        c[col] = s / m[col][col];
    }
    row[0] = (double)mid;
    for (int k = 0; k < ERFC_TERMS; k++)
        row[k + 1] = (double)c[k];
}

static LLVMValueRef erfc_table(tjj_gpu_gen *g)
{
    LLVMValueRef t = LLVMGetNamedGlobal(g->mod, "tjm_erfc_pieces");
    if (t)
        return t;
    LLVMValueRef rows[ERFC_PIECES];
    LLVMTypeRef row_type = LLVMArrayType(g->ty.t_double, ERFC_ROW);
    for (int p = 0; p < ERFC_PIECES; p++) {
        double row[ERFC_ROW];
        LLVMValueRef v[ERFC_ROW];
        erfc_row(p, row);
        for (int k = 0; k < ERFC_ROW; k++)
            v[k] = c_real(g->ty.t_double, row[k]);
        rows[p] = LLVMConstArray(g->ty.t_double, v, ERFC_ROW);
    }
    t = LLVMAddGlobal(g->mod, LLVMArrayType(row_type, ERFC_PIECES), "tjm_erfc_pieces");
    LLVMSetInitializer(t, LLVMConstArray(row_type, rows, ERFC_PIECES));
    LLVMSetGlobalConstant(t, 1);
    LLVMSetLinkage(t, LLVMInternalLinkage);
    return t;
}

/* erfc(a) for a in [1/2, 27.5]: exp(-a^2) E(a), E from a's row of the table. */
static LLVMValueRef erfc_tail(tjj_gpu_gen *g, LLVMValueRef a)
{
    LLVMBuilderRef b = g->b;
    LLVMTypeRef i64 = g->ty.t_i64, f64 = g->ty.t_double;
    LLVMValueRef piece = c_int(i64, 0);
    for (int k = 1; k < ERFC_PIECES; k++)
        piece = LLVMBuildAdd(b, piece,
                             LLVMBuildZExt(b, LLVMBuildFCmp(b, LLVMRealOGE, a, c_real(f64, erfc_edges[k]), ""), i64, ""),
                             "");
    LLVMValueRef table = erfc_table(g), row[ERFC_ROW];
    LLVMTypeRef table_type = LLVMArrayType(LLVMArrayType(f64, ERFC_ROW), ERFC_PIECES);
    for (int k = 0; k < ERFC_ROW; k++) {
        LLVMValueRef idx[3] = {c_int(i64, 0), piece, c_int(i64, k)};
        row[k] = LLVMBuildLoad2(b, f64, LLVMBuildInBoundsGEP2(b, table_type, table, idx, 3, ""), "");
    }
    LLVMValueRef h = LLVMBuildFSub(b, a, row[0], "");
    LLVMValueRef e = row[ERFC_TERMS];
    for (int k = ERFC_TERMS - 1; k >= 1; k--)
        e = tjj_gmath_fma(g, e, h, row[k]);
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
