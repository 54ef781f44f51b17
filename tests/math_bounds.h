/* SPDX-License-Identifier: MIT */
/*
 * math_bounds.h — the error bounds README.md documents for tj_sin, tj_cos,
 * tj_tanh, tj_erf, tj_pow, tj_log1p, tj_expm1, tj_tan, tj_asin, tj_acos,
 * tj_atan, tj_atan2, tj_sinh, tj_cosh, tj_asinh, tj_acosh, tj_atanh,
 * tj_log10, tj_cbrt, tj_hypot, tj_exp10, tj_erfc and tj_lgamma, in ulp of the result dtype, with the inputs,
 * references and error measure of the tests that hold each back end to
 * them: test_math_fns (on the device under test) and test_gpu_math_host
 * (the GPU's code, run on the host).
 */
#ifndef TJIT_TESTS_MATH_BOUNDS_H
#define TJIT_TESTS_MATH_BOUNDS_H

#include "testlib.h"

enum {
    TL_SIN, TL_COS, TL_TANH, TL_ERF, TL_POW, TL_LOG1P, TL_EXPM1, TL_TAN, TL_ASIN, TL_ACOS, TL_ATAN,
    TL_ATAN2, TL_SINH, TL_COSH, TL_ASINH, TL_ACOSH, TL_ATANH, TL_LOG10, TL_CBRT, TL_HYPOT, TL_EXP10, TL_ERFC,
    TL_LGAMMA, TL_NFN
};
static const char *const tl_fn_names[] = {"sin",  "cos",  "tanh",  "erf",   "pow",   "log1p", "expm1",
                                          "tan",  "asin", "acos",  "atan",  "atan2", "sinh",  "cosh",
                                          "asinh", "acosh", "atanh", "log10", "cbrt", "hypot", "exp10",
                                          "erfc", "lgamma"};
/* Functions of two arguments (x, y). */
static inline int tl_binary(int fn) { return fn == TL_POW || fn == TL_ATAN2 || fn == TL_HYPOT; }

/* [function][dtype: f16 bf16 f32 f64]: the C library (glibc) on the CPU */
static const double tl_cpu_bound[TL_NFN][4] = {
    {1, 1, 1, 1}, {1, 1, 1, 1}, {1, 1, 2, 2}, {1.5, 1.5, 2, 1.5}, {1, 1, 1, 1}, {1, 1, 1, 1}, {1, 1, 1, 1},
    /* tan .. hypot: glibc's documented ulp + half an ulp of rounding to
       the reference's dtype (cbrt's double is glibc's least accurate) */
    {1, 1, 1.5, 1.5}, {1, 1, 1.5, 1.5}, {1, 1, 1.5, 1.5}, {1, 1, 1.5, 1.5}, {1, 1, 1.5, 1.5},
    {1, 1, 2.5, 2.5}, {1, 1, 2.5, 2.5}, {1, 1, 2.5, 2.5}, {1, 1, 2.5, 2.5}, {1, 1, 2.5, 2.5},
    {1, 1, 2.5, 2.5}, {1, 1, 1.5, 4.5}, {1, 1, 1.5, 1.5},
    /* exp10 */
    {1, 1, 1.5, 2.5},
    /* erfc: glibc's documented 3 (float) and 5 (double) ulp, + 1/2 */
    {1, 1, 3.5, 5.5},
    /* lgamma: glibc's 3.6 (float) and 3 (double) ulp seen over a dozen seeds, + margin */
    {1, 1, 5, 4},
};
/* tjit's own code on the GPU (src/jit/gpu/math.c, math_f64.c, math_special.c) */
static const double tl_gpu_bound[TL_NFN][4] = {
    {1, 1, 1, 2.5}, {1, 1, 1, 2.5}, {1, 1, 1, 3}, {1, 1, 1, 2}, {1, 1, 1, 64}, {1, 1, 1, 3}, {1, 1, 1, 2},
    /* tan .. hypot: f64 bounds about half an ulp above the largest error
       seen over a dozen seeds on the host */
    {1, 1, 1, 4}, {1, 1, 1, 2.5}, {1, 1, 1, 2.5}, {1, 1, 1, 1}, {1, 1, 1, 2}, {1, 1, 1, 4}, {1, 1, 1, 4.5},
    {1, 1, 1, 3.5}, {1, 1, 1, 3.5}, {1, 1, 1, 3}, {1, 1, 1, 2}, {1, 1, 1, 1}, {1, 1, 1, 1.5},
    /* exp10 */
    {1, 1, 1, 2},
    /* erfc (math_special.c) */
    {1, 1, 1, 4},
    /* lgamma (math_special.c): 3.25 seen over a dozen seeds; below 0 grown
       as tl_bound_at says */
    {1, 1, 1, 4},
};

static inline int tl_dt_index(tj_dtype dt) { return dt == TJ_F16 ? 0 : dt == TJ_BF16 ? 1 : dt == TJ_F32 ? 2 : 3; }
static inline double tl_ulp_at(tj_dtype dt, long double v);
/* The bound at one input: the table's, except that the GPU's f64 pow,
 * exp(y·log x) in double, loses accuracy with |y·ln x| (an absolute error of
 * a few 2^-53·|y·ln x| in the exponent): at most 4·(1 + |y·ln x|) ulp. */
static inline double tl_bound_at(int fn, tj_dtype dt, int on_gpu, double x, double y)
{
    double b = (on_gpu ? tl_gpu_bound : tl_cpu_bound)[fn][tl_dt_index(dt)];
    if (on_gpu && fn == TL_POW && dt == TJ_F64 && isfinite(x) && isfinite(y) && x != 0) {
        double grown = 4 * (1 + fabs(y * log(fabs(x))));
        b = grown > b ? grown : b;
    }
    if (on_gpu && fn == TL_LGAMMA && x < 0 && isfinite(x) && x != floor(x)) {
        /* the reflection's terms cancel near lgamma's zeros: 6 2^-53 of them,
           absolute (up to 4.8 seen over a dozen seeds) */
        int sign;
        const long double pi = 3.14159265358979323846264338327950288L;
        long double terms = fabsl(lgammal_r(1.0L - x, &sign)) + fabsl(logl(fabsl(sinl(pi * x))));
        long double r = lgammal_r(x, &sign);
        double grown = r != 0 ? 4 + (double)(6 * terms * 0x1p-53L / tl_ulp_at(dt, r)) : INFINITY;
        b = grown > b ? grown : b;
    }
    return b;
}

/* The reference: the C library's long double function. */
static inline long double tl_ref(int fn, long double x, long double y)
{
    switch (fn) {
    case TL_SIN: return sinl(x);
    case TL_COS: return cosl(x);
    case TL_TANH: return tanhl(x);
    case TL_ERF: return erfl(x);
    case TL_LOG1P: return log1pl(x);
    case TL_EXPM1: return expm1l(x);
    case TL_TAN: return tanl(x);
    case TL_ASIN: return asinl(x);
    case TL_ACOS: return acosl(x);
    case TL_ATAN: return atanl(x);
    case TL_ATAN2: return atan2l(x, y);
    case TL_SINH: return sinhl(x);
    case TL_COSH: return coshl(x);
    case TL_ASINH: return asinhl(x);
    case TL_ACOSH: return acoshl(x);
    case TL_ATANH: return atanhl(x);
    case TL_LOG10: return log10l(x);
    case TL_CBRT: return cbrtl(x);
    case TL_HYPOT: return hypotl(x, y);
    case TL_EXP10: return powl(10, x); /* exp10l is a GNU extension */
    case TL_ERFC: return erfcl(x);
    case TL_LGAMMA: {
        int sign;
        return lgammal_r(x, &sign);
    }
    default: return powl(x, y);
    }
}

/* The spacing of dt's numbers at |v| (v finite, nonzero). */
static inline double tl_ulp_at(tj_dtype dt, long double v)
{
    int mant = dt == TJ_F16 ? 11 : dt == TJ_BF16 ? 8 : dt == TJ_F32 ? 24 : 53;
    int emin = dt == TJ_F16 ? -14 : dt == TJ_BF16 || dt == TJ_F32 ? -126 : -1022;
    int e = ilogbl(v);
    return ldexp(1.0, (e < emin ? emin : e) - (mant - 1));
}

static inline double tl__random_in(tj_dtype dt, double lo, double hi) { return tl_round(dt, tl_rand_double(lo, hi)); }

/* Input i of function fn: edge inputs first, then random ones. */
static inline void tl_input(int fn, tj_dtype dt, int i, double *x, double *y)
{
    static const double edges[] = {0.0, -0.0, 1e-30, -1e-30, 0x1p-140, 1.0, -1.0, 0.5, 2.0,
                                   INFINITY, -INFINITY, NAN, 3.14159265358979, 1.5707963267949,
                                   -4.71238898038469, 100.0, -100.0, 1e-5};
    /* pow: (x, y) pairs of C's special cases */
    static const double pow_edges[][2] = {
        {0.0, 3.0}, {-0.0, 3.0}, {-0.0, 2.0}, {0.0, -1.0}, {-0.0, -1.0}, {-0.0, -2.0}, {-0.0, 0.5},
        {1.0, NAN}, {NAN, 0.0}, {-1.0, INFINITY}, {-1.0, -INFINITY}, {0.5, INFINITY}, {0.5, -INFINITY},
        {2.0, INFINITY}, {2.0, -INFINITY}, {-2.0, 3.0}, {-2.0, 2.0}, {-2.0, 0.5}, {-8.0, -3.0},
        {INFINITY, 2.0}, {INFINITY, -2.0}, {-INFINITY, 3.0}, {-INFINITY, 2.0}, {-INFINITY, -3.0},
        {NAN, 1.0}, {2.0, NAN}, {3.0, 0.0}, {-3.0, -0.0}, {10.0, 4.0}, {2.0, -10.0}, {0x1p-140, 0.5},
        {-INFINITY, 0.5}, {-INFINITY, -0.5}, {-INFINITY, 2.5},
    };
    /* atan2 and hypot: zeros, infinities and NaN against each other */
    static const double pair_edges[][2] = {
        {0.0, 0.0}, {-0.0, 0.0}, {0.0, -0.0}, {-0.0, -0.0}, {0.0, 2.0}, {-0.0, -2.0}, {3.0, 0.0},
        {-3.0, -0.0}, {INFINITY, INFINITY}, {-INFINITY, INFINITY}, {INFINITY, -INFINITY},
        {-INFINITY, -INFINITY}, {1.0, INFINITY}, {-1.0, -INFINITY}, {INFINITY, 5.0}, {-INFINITY, NAN},
        {NAN, INFINITY}, {NAN, 1.0}, {1.0, NAN}, {1e-30, 1e30}, {0x1p-140, 0x1p-141}, {1.0, -1.0},
    };
    *y = 1;
    int pair = fn == TL_ATAN2 || fn == TL_HYPOT;
    int nedges = fn == TL_POW ? (int)TL_COUNT(pow_edges) : pair ? (int)TL_COUNT(pair_edges) : (int)TL_COUNT(edges);
    if (i < nedges) {
        if (fn == TL_POW)
            *x = pow_edges[i][0], *y = pow_edges[i][1];
        else if (pair)
            *x = pair_edges[i][0], *y = pair_edges[i][1];
        else
            *x = edges[i];
        *x = tl_round(dt, *x), *y = tl_round(dt, *y);
        return;
    }
    int part = i % 4;
    switch (fn) {
    case TL_SIN: case TL_COS: case TL_TAN: /* beyond 2^30 too: a reduction of its own */
        *x = part < 2 ? tl__random_in(dt, -10, 10) : part == 2 ? tl__random_in(dt, -1e4, 1e4)
           : tl_round(dt, ldexp(tl_rand_double(-2, 2), (int)tl_rand_range(30, dt == TJ_F64 ? 1023 : 127)));
        break;
    case TL_TANH: *x = part == 0 ? tl__random_in(dt, -1e-3, 1e-3) : tl__random_in(dt, -20, 20); break;
    case TL_ERF: *x = part == 0 ? tl__random_in(dt, -1e-3, 1e-3) : tl__random_in(dt, -7, 7); break;
    case TL_LOG1P:
        *x = part == 0 ? tl__random_in(dt, -1e-3, 1e-3) : part == 1 ? tl__random_in(dt, -0.999, 0)
                                                          : tl__random_in(dt, 0, part == 2 ? 10 : 1e6);
        break;
    case TL_EXPM1:
        *x = part == 0 ? tl__random_in(dt, -1e-3, 1e-3) : part < 3 ? tl__random_in(dt, -10, 10)
                                                          : tl__random_in(dt, -100, dt == TJ_F64 ? 709 : 88);
        break;
    case TL_ASIN: case TL_ACOS: case TL_ATANH:
        *x = part == 0 ? tl__random_in(dt, 0.99, 1) : part == 1 ? tl__random_in(dt, -1, -0.99)
                                                      : tl__random_in(dt, -1, 1);
        break;
    case TL_ATAN: case TL_ASINH:
        *x = part == 0 ? tl__random_in(dt, -1e-3, 1e-3) : part < 3 ? tl__random_in(dt, -10, 10)
                                                          : tl__random_in(dt, -6e4, 6e4);
        break;
    case TL_SINH: case TL_COSH:
        *x = part == 0 ? tl__random_in(dt, -1e-3, 1e-3) : part < 3 ? tl__random_in(dt, -10, 10)
                                                          : tl__random_in(dt, -710, 710);
        break;
    case TL_ACOSH: *x = part < 2 ? tl__random_in(dt, 1, 3) : tl__random_in(dt, 1, 6e4); break;
    case TL_LOG10: case TL_CBRT:
        *x = part < 2 ? tl__random_in(dt, fn == TL_CBRT ? -100 : 0, 100)
                      : tl_round(dt, ldexp(tl_rand_double(fn == TL_CBRT ? -2 : 1, 2), (int)tl_rand_range(-1070, 1020)));
        break;
    case TL_EXP10: { /* across the dtype's whole range, subnormal results too */
        double top = dt == TJ_F16 ? 4.8 : dt == TJ_F64 ? 308.2 : 38.5, bottom = dt == TJ_F16 ? -7.5 : dt == TJ_F64 ? -323 : -44;
        *x = part == 0 ? tl__random_in(dt, -1e-3, 1e-3) : part == 1 ? tl__random_in(dt, -3, 3) : tl__random_in(dt, bottom, top);
        break;
    }
    case TL_ERFC: { /* across the tail to underflow, subnormal results too */
        double top = dt == TJ_F16 ? 4.2 : dt == TJ_F64 ? 27.3 : 10.1;
        *x = part == 0 ? tl__random_in(dt, -1e-3, 1e-3) : part == 1 ? tl__random_in(dt, -6, 2) : tl__random_in(dt, 0, top);
        break;
    }
    case TL_LGAMMA: /* around its zeros 1 and 2; below 0; to overflow */
        *x = part == 0 ? tl__random_in(dt, 0.5, 3) : part == 1 ? tl__random_in(dt, -6, 0.5)
           : part == 2 ? tl__random_in(dt, 3, 40)
                       : tl_round(dt, ldexp(tl_rand_double(1, 2), (int)tl_rand_range(-60, dt == TJ_F64 ? 1020 : 126)));
        break;
    case TL_ATAN2: case TL_HYPOT:
        *x = tl__random_in(dt, -10, 10), *y = tl__random_in(dt, -10, 10);
        if (part == 3) {
            int e = (int)tl_rand_range(-1000, 1000);
            *x = tl_round(dt, ldexp(*x, e)), *y = tl_round(dt, ldexp(*y, e + (int)tl_rand_range(-30, 30)));
        }
        break;
    default:
        if (part < 3) {
            *x = tl__random_in(dt, 0, 16), *y = tl__random_in(dt, -8, 8);
        } else {
            *x = tl__random_in(dt, -4, 0), *y = (double)tl_rand_range(-9, 9);
        }
        break;
    }
}

/* The error of got in ulp of dt; INFINITY for a wrong special value. */
static inline double tl_error_ulp(tj_dtype dt, double got, long double want_ld)
{
    double want = tl_round(dt, (double)want_ld); /* double holds every f32 value */
    /* a reference that rounds to zero is no exact zero: below half the
       least subnormal, got may be 0 or that subnormal (tl_ulp_at's unit) */
    if (isnan(want) || isinf(want) || want_ld == 0 || isnan(got) || isinf(got))
        return isnan(want) ? (isnan(got) ? 0 : INFINITY)
             : got == want && signbit(got) == signbit(want) ? 0 : INFINITY;
    return (double)(fabsl((long double)got - want_ld) / tl_ulp_at(dt, want_ld));
}

#endif
