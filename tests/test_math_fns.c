/* SPDX-License-Identifier: MIT */
/*
 * test_math_fns.c — tj_sin, tj_cos, tj_tanh, tj_erf, tj_pow, tj_log1p,
 * tj_expm1, tj_tan, tj_asin, tj_acos, tj_atan, tj_atan2, tj_sinh, tj_cosh,
 * tj_asinh, tj_acosh, tj_atanh, tj_log10, tj_cbrt, tj_hypot, tj_exp10, tj_erfc and tj_lgamma against long
 * double references, in ulp, within the bounds README.md documents.
 *
 * Each function runs over random inputs in the ranges where kernels use
 * it (sin/cos: [-10, 10] and rotary-embedding angles up to 10^4; tanh and
 * erf: across their transition to ±1; pow: bases in [0, 16] with exponents
 * in [-8, 8] and negative bases with integral exponents; log1p and expm1
 * near 0, where they are exact and log/exp - 1 are not, and across their
 * range; erfc across its tail to underflow, where 1 - erf is 0; lgamma
 * around its zeros 1 and 2, below 0 and to overflow) and over edge
 * inputs (±0, tiny and subnormal values, ±inf, NaN, integral and odd
 * exponents, pow's special cases of C99 Annex F). The reference is the C
 * library's long double function, rounded to the dtype; the error is
 * measured in ulp of the dtype at the reference, and an infinite, zero or
 * NaN reference must be matched exactly (the sign of zero too). The maximum
 * error of each function and dtype is printed, and must stay within the
 * bound of the back end under test (TJIT_TEST_DEVICE): the C library's on
 * the CPU, tjit's own functions (src/jit/gpu/math.c) on a GPU.
 */
#include "testlib.h"
#include "math_bounds.h"

enum { N = 1024 };

/* Function fn of a (and b), built into the kernel being built. */
static tj_val apply(int fn, tj_val a, tj_val b)
{
    switch (fn) {
    case TL_SIN: return tj_sin(a);
    case TL_COS: return tj_cos(a);
    case TL_TANH: return tj_tanh(a);
    case TL_ERF: return tj_erf(a);
    case TL_LOG1P: return tj_log1p(a);
    case TL_EXPM1: return tj_expm1(a);
    case TL_TAN: return tj_tan(a);
    case TL_ASIN: return tj_asin(a);
    case TL_ACOS: return tj_acos(a);
    case TL_ATAN: return tj_atan(a);
    case TL_ATAN2: return tj_atan2(a, b);
    case TL_SINH: return tj_sinh(a);
    case TL_COSH: return tj_cosh(a);
    case TL_ASINH: return tj_asinh(a);
    case TL_ACOSH: return tj_acosh(a);
    case TL_ATANH: return tj_atanh(a);
    case TL_LOG10: return tj_log10(a);
    case TL_CBRT: return tj_cbrt(a);
    case TL_HYPOT: return tj_hypot(a, b);
    case TL_EXP10: return tj_exp10(a);
    case TL_ERFC: return tj_erfc(a);
    case TL_LGAMMA: return tj_lgamma(a);
    default: return tj_pow(a, b);
    }
}

#define MATH_KERNEL(NAME, DT)                                                                      \
    TJ_KERNEL(NAME, TJ_PARAMS(TJ_PTR(x, DT), TJ_PTR(y, DT), TJ_PTR(o, DT)), TJ_CONSTS(FN))        \
    {                                                                                              \
        tj_val offs = tj_arange(0, N);                                                             \
        tj_val a = tj_load(tj_add(x, offs)), b = tj_load(tj_add(y, offs));                         \
        tj_store(tj_add(o, offs), apply((int)FN, a, b));                                           \
    }
MATH_KERNEL(math_f16, f16)
MATH_KERNEL(math_bf16, bf16)
MATH_KERNEL(math_f32, f32)
MATH_KERNEL(math_f64, f64)

static void run(tj_device *dev, const tj_kernel *k, tj_dtype dt)
{
    int on_gpu = tj_device_get_kind(dev) == TJ_DEVICE_GPU;
    size_t size = N * tj_dtype_size(dt);
    uint8_t rx[N * 8], ry[N * 8], ro[N * 8];
    double x[N], y[N];
    tj_buffer bx = tl_poisoned(dev, size), by = tl_poisoned(dev, size), bo = tl_poisoned(dev, size);
    for (int64_t fn = 0; fn < TL_NFN; fn++) {
        for (int i = 0; i < N; i++) {
            tl_input((int)fn, dt, i, &x[i], &y[i]);
            tl_set(dt, rx, (size_t)i, tl_flt(x[i])), tl_set(dt, ry, (size_t)i, tl_flt(y[i]));
        }
        tl_repoison(dev, bo, size);
        tj_launch_cfg cfg = {.grid = {1}};
        tj_arg args[] = {TJ_ARG_BUF(bx), TJ_ARG_BUF(by), TJ_ARG_BUF(bo)};
        int ok = tj_buffer_write(dev, bx, 0, rx, size) == TJ_OK && tj_buffer_write(dev, by, 0, ry, size) == TJ_OK &&
                 tj_launch(dev, k, &cfg, args, 3, &fn, 1) == TJ_OK && tj_buffer_read(dev, bo, 0, ro, size) == TJ_OK;
        if (!ok)
            tap_diag("%s: %s", k->name, tj_last_error());
        double bound = (on_gpu ? tl_gpu_bound : tl_cpu_bound)[fn][tl_dt_index(dt)], worst = 0;
        int wrong = 0;
        for (int i = 0; ok && i < N; i++) {
            double got = tl_get(dt, ro, (size_t)i).f;
            double e = tl_error_ulp(dt, got, tl_ref((int)fn, x[i], y[i]));
            worst = e > worst ? e : worst;
            if (e > tl_bound_at((int)fn, dt, on_gpu, x[i], y[i]) && wrong++ < 4) {
                char args[64];
                snprintf(args, sizeof args, tl_binary((int)fn) ? "%.9g, %.9g" : "%.9g", x[i], y[i]);
                tap_diag("%s(%s) = %.17g, expected %.17Lg (%.3g ulp)", tl_fn_names[fn], args, got,
                         tl_ref((int)fn, x[i], y[i]), e);
            }
        }
        tap_diag("%s %s: max error %.3f ulp (bound %g)", tl_fn_names[fn], tj_dtype_name(dt), worst, bound);
        tap_ok(ok && !wrong, "%s %s within %g ulp%s, edges and random inputs", tl_fn_names[fn], tj_dtype_name(dt),
               bound, on_gpu && fn == TL_POW && dt == TJ_F64 ? " or 4(1 + |y ln x|)" : "");
    }
    tj_buffer_free(dev, bx), tj_buffer_free(dev, by), tj_buffer_free(dev, bo);
}

int main(void)
{
    tj_device *dev = tl_setup("test_math_fns");
    tap_plan(4 * TL_NFN + 1);
    run(dev, math_f16, TJ_F16);
    run(dev, math_bf16, TJ_BF16);
    run(dev, math_f32, TJ_F32);
    run(dev, math_f64, TJ_F64);
    /* the GPU code exists for every dtype: PTX that ptxas accepts (make check sets TJIT_PTXAS) */
    int ptx_ok = 1;
    const tj_kernel *ks[] = {math_f16, math_bf16, math_f32, math_f64};
    for (int d = 0; d < 4; d++)
        for (int64_t fn = 0; fn < TL_NFN; fn++) {
            char *ptx = NULL;
            if (tj_kernel_ptx(ks[d], &fn, 1, NULL, 4, &ptx) != TJ_OK)
                ptx_ok = 0, tap_diag("%s %s: %s", ks[d]->name, tl_fn_names[fn], tj_last_error());
            free(ptx);
        }
    tap_ok(ptx_ok, "PTX of every function and dtype");
    tj_device_close(dev);
    return tap_done();
}
