/* SPDX-License-Identifier: MIT */
/*
 * test_prod.c — tj_prod and tj_cumprod on the device under test
 * (TJIT_TEST_DEVICE), against plain C.
 *
 * Random [R, C] tiles of f32, f64, f16, i32, i64 and i8, along either axis.
 * cumprod is sequential in index order on both back ends, so every element
 * must match a C loop that multiplies in the same order and compute type
 * (f32 for f16, rounded to f16 at each output; i32 for i8) bit for bit.
 * prod may multiply in any order (a GPU combines as a tree): integers
 * exactly (wrapping), floats within a few rounding errors of the dtype.
 * Then the errors and the PTX of each kernel for sm_80 and sm_90.
 */
#include "testlib.h"

enum { R = 8, C = 16 };

/* p0 = prod(x, 0) [C], p1 = prod(x, 1) [R], c0 = cumprod(x, 0), c1 = cumprod(x, 1) */
#define PROD_KERNEL(NAME, DT, OUT)                                                                     \
    TJ_KERNEL(NAME,                                                                                    \
              TJ_PARAMS(TJ_PTR(x, DT), TJ_PTR(p0, OUT), TJ_PTR(p1, OUT), TJ_PTR(c0, OUT), TJ_PTR(c1, OUT)), \
              TJ_CONSTS())                                                                             \
    {                                                                                                  \
        tj_val r = tj_expand_dims(tj_arange(0, R), 1), c = tj_expand_dims(tj_arange(0, C), 0);         \
        tj_val at = tj_add(tj_mul(r, C), c), v = tj_load(tj_add(x, at));                              \
        tj_store(tj_add(p0, tj_arange(0, C)), tj_prod(v, 0));                                         \
        tj_store(tj_add(p1, tj_arange(0, R)), tj_prod(v, 1));                                         \
        tj_store(tj_add(c0, at), tj_cumprod(v, 0));                                                   \
        tj_store(tj_add(c1, at), tj_cumprod(v, -1));                                                  \
    }
PROD_KERNEL(prod_f32, f32, f32)
PROD_KERNEL(prod_f64, f64, f64)
PROD_KERNEL(prod_f16, f16, f16)
PROD_KERNEL(prod_i32, i32, i32)
PROD_KERNEL(prod_i64, i64, i64)
PROD_KERNEL(prod_i8, i8, i32) /* narrow integers multiply in i32, as sums add */

TJ_KERNEL(cumprod_ptr, TJ_PARAMS(TJ_PTR(x, f32)), TJ_CONSTS())
{
    tj_cumprod(tj_add(x, tj_arange(0, 4)), 0);
}
TJ_KERNEL(prod_scalar, TJ_PARAMS(TJ_PTR(x, f32)), TJ_CONSTS())
{
    tj_prod(tj_load(x), 0);
}

/* The value of element (i, j) of the C reference's compute type. */
static double element(tj_dtype dt, const uint8_t *x, int i, int j)
{
    tl_num v = tl_get(dt, x, (size_t)(i * C + j));
    return tl_is_float(dt) ? v.f : (double)v.i;
}

/* Multiplies like the kernel: in f32 for f16 and f32, f64 for f64, in the
 * integer width of the output otherwise (wrapping). */
static double times(tj_dtype out, double acc, double v)
{
    if (out == TJ_F32 || out == TJ_F16)
        return (double)((float)acc * (float)v);
    if (out == TJ_F64)
        return acc * v;
    return (double)tl_wrap(out, (int64_t)((uint64_t)(int64_t)acc * (uint64_t)(int64_t)v));
}

static int same(tj_dtype dt, double got, double want, int exact)
{
    if (!tl_is_float(dt) || exact)
        return got == want || (isnan(got) && isnan(want));
    double eps = dt == TJ_F16 ? 0x1p-10 : dt == TJ_F32 ? 0x1p-23 : 0x1p-52;
    return fabs(got - want) <= 8 * eps * fabs(want) + 1e-300;
}

/* The value of an output element as a double. */
static double out_value(tj_dtype dt, const uint8_t *base, size_t i)
{
    return tl_is_float(dt) ? tl_get(dt, base, i).f : (double)tl_get(dt, base, i).i;
}

/* Checks prod (p) and cumprod (c) along axis against C's sequential
 * product; counts the wrong elements of each in *wrong_p and *wrong_c. */
static void check_axis(tj_dtype dt, tj_dtype out_dt, const uint8_t *hx, int axis, const uint8_t *p,
                       const uint8_t *c, int *wrong_p, int *wrong_c)
{
    int lines = axis ? R : C, len = axis ? C : R;
    for (int l = 0; l < lines; l++) {
        double acc = 1;
        for (int k = 0; k < len; k++) {
            int i = axis ? l : k, j = axis ? k : l;
            acc = times(out_dt, acc, element(dt, hx, i, j));
            double want = tl_is_float(out_dt) ? tl_round(out_dt, acc) : acc;
            double got = out_value(out_dt, c, (size_t)(i * C + j));
            if (!same(out_dt, got, want, 1) && (*wrong_c)++ < 3)
                tap_diag("cumprod axis %d [%d][%d]: %.17g, expected %.17g", axis, i, j, got, want);
        }
        double got = out_value(out_dt, p, (size_t)l);
        if (!same(out_dt, got, tl_is_float(out_dt) ? tl_round(out_dt, acc) : acc, 0) && (*wrong_p)++ < 3)
            tap_diag("prod axis %d [%d]: %.17g, expected %.17g", axis, l, got, acc);
    }
}

static void run(tj_device *dev, const tj_kernel *k, tj_dtype dt, tj_dtype out_dt)
{
    size_t in_size = R * C * tj_dtype_size(dt), es = tj_dtype_size(out_dt);
    uint8_t hx[R * C * 8], p0[C * 8], p1[R * 8], c0[R * C * 8], c1[R * C * 8];
    for (int i = 0; i < R * C; i++)
        tl_set(dt, hx, (size_t)i,
               tl_is_float(dt) ? tl_flt(tl_round(dt, tl_rand_double(0.5, 1.5))) : tl_int(tl_rand_range(-3, 3)));
    tj_buffer bx = tl_upload(dev, hx, in_size), b0 = tl_poisoned(dev, C * es), b1 = tl_poisoned(dev, R * es);
    tj_buffer bc0 = tl_poisoned(dev, R * C * es), bc1 = tl_poisoned(dev, R * C * es);
    tj_launch_cfg cfg = {.grid = {1}};
    tj_arg args[] = {TJ_ARG_BUF(bx), TJ_ARG_BUF(b0), TJ_ARG_BUF(b1), TJ_ARG_BUF(bc0), TJ_ARG_BUF(bc1)};
    char what[64];
    snprintf(what, sizeof what, "prod and cumprod of %s", tj_dtype_name(dt));
    if (tl_launch_failed(tj_launch(dev, k, &cfg, args, 5, NULL, 0), what)) {
        tap_ok(0, "%s (not run)", what), tap_ok(0, "%s (not run)", what), tap_ok(0, "%s (not run)", what);
        return;
    }
    tl_download(dev, b0, p0, C * es), tl_download(dev, b1, p1, R * es);
    tl_download(dev, bc0, c0, R * C * es), tl_download(dev, bc1, c1, R * C * es);
    int wrong_p = 0, wrong_c0 = 0, wrong_c1 = 0;
    check_axis(dt, out_dt, hx, 0, p0, c0, &wrong_p, &wrong_c0);
    check_axis(dt, out_dt, hx, 1, p1, c1, &wrong_p, &wrong_c1);
    tap_ok(!wrong_p, "prod of %s along each axis%s", tj_dtype_name(dt),
           tl_is_float(dt) ? " (within 8 roundings)" : ", exactly");
    tap_ok(!wrong_c0, "cumprod of %s along axis 0, bit for bit", tj_dtype_name(dt));
    tap_ok(!wrong_c1, "cumprod of %s along axis 1, bit for bit", tj_dtype_name(dt));
    tj_buffer_free(dev, bx), tj_buffer_free(dev, b0), tj_buffer_free(dev, b1), tj_buffer_free(dev, bc0),
        tj_buffer_free(dev, bc1);
}

int main(void)
{
    tj_device *dev = tl_setup("test_prod");
    tap_plan(6 * 3 + 2 + 1);
    run(dev, prod_f32, TJ_F32, TJ_F32);
    run(dev, prod_f64, TJ_F64, TJ_F64);
    run(dev, prod_f16, TJ_F16, TJ_F16);
    run(dev, prod_i32, TJ_I32, TJ_I32);
    run(dev, prod_i64, TJ_I64, TJ_I64);
    run(dev, prod_i8, TJ_I8, TJ_I32);
    tl_build_refused(cumprod_ptr, TJ_ERR_TYPE, "'cumprod'", "no rule for 'cumprod'");
    tl_build_refused(prod_scalar, TJ_ERR_SHAPE, NULL, "axis");
    const tj_kernel *ks[] = {prod_f32, prod_f64, prod_f16, prod_i32, prod_i64, prod_i8};
    tl_ptx_of_every(ks, (int)TL_COUNT(ks));
    tj_device_close(dev);
    return tap_done();
}
