/* SPDX-License-Identifier: MIT */
/*
 * math_bounds.h — the error bounds README.md documents for tj_sin, tj_cos,
 * tj_tanh, tj_erf, tj_pow, tj_log1p and tj_expm1, in ulp of the result dtype, with the inputs,
 * references and error measure of the tests that hold each back end to
 * them: test_math_fns (on the device under test) and test_gpu_math_host
 * (the GPU's code, run on the host).
 */
#ifndef TJIT_TESTS_MATH_BOUNDS_H
#define TJIT_TESTS_MATH_BOUNDS_H

#include "testlib.h"

enum { TL_SIN, TL_COS, TL_TANH, TL_ERF, TL_POW, TL_LOG1P, TL_EXPM1, TL_NFN };
static const char *const tl_fn_names[] = {"sin", "cos", "tanh", "erf", "pow", "log1p", "expm1"};

/* [function][dtype: f16 bf16 f32 f64]: the C library (glibc) on the CPU */
static const double tl_cpu_bound[TL_NFN][4] = {
    {1, 1, 1, 1}, {1, 1, 1, 1}, {1, 1, 2, 2}, {1.5, 1.5, 2, 1.5}, {1, 1, 1, 1}, {1, 1, 1, 1}, {1, 1, 1, 1},
};
/* tjit's own code on the GPU (src/jit/gpu/math.c) */
static const double tl_gpu_bound[TL_NFN][4] = {
    {1, 1, 1, 2}, {1, 1, 1, 2}, {1, 1, 1, 3}, {1, 1, 1, 2}, {1, 1, 1, 64}, {1, 1, 1, 3}, {1, 1, 1, 2},
};

static inline int tl_dt_index(tj_dtype dt) { return dt == TJ_F16 ? 0 : dt == TJ_BF16 ? 1 : dt == TJ_F32 ? 2 : 3; }
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
    };
    *y = 1;
    int nedges = fn == TL_POW ? (int)TL_COUNT(pow_edges) : (int)TL_COUNT(edges);
    if (i < nedges) {
        if (fn == TL_POW)
            *x = pow_edges[i][0], *y = pow_edges[i][1];
        else
            *x = edges[i];
        *x = tl_round(dt, *x), *y = tl_round(dt, *y);
        return;
    }
    int part = i % 4;
    switch (fn) {
    case TL_SIN: case TL_COS:
        *x = part < 3 ? tl__random_in(dt, -10, 10) : tl__random_in(dt, -1e4, 1e4);
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
    if (isnan(want) || isinf(want) || want == 0 || isnan(got) || isinf(got))
        return isnan(want) ? (isnan(got) ? 0 : INFINITY)
             : got == want && signbit(got) == signbit(want) ? 0 : INFINITY;
    return (double)(fabsl((long double)got - want_ld) / tl_ulp_at(dt, want_ld));
}

#endif
