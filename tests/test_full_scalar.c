/* SPDX-License-Identifier: MIT */
/*
 * test_full_scalar.c — tj_full and tj_zeros of rank 0 keep their dtype.
 *
 * A C number is a weak constant that adopts the dtype it meets; tj_full
 * names a dtype, so its result must be a value of that dtype even as a
 * scalar (TJ_SHAPE()). It once stayed weak: zeros(i64) + INT32_MAX + 1
 * wrapped in i32, full(0.1, f64) was rounded to f32, and where(c, c, x) on
 * such a c was an internal verifier error. For each dtype, a random value
 * A goes through full(TJ_SHAPE(), A, dt) + B (integers: both random, the sum
 * wraps in dt; floats: A rounded to dt, times 1) and is widened to i64/f64
 * for the host to compare, on the test device (TJIT_TEST_DEVICE).
 */
#include "testlib.h"

/* DT: the dtype; A, B: the operands (floats: A / 1024 + 0.1 and B = 1). */
TJ_KERNEL(full_int, TJ_PARAMS(TJ_PTR(o, i64)), TJ_CONSTS(DT, A, B, ZEROS))
{
    tj_val s = ZEROS ? tj_add(tj_zeros(TJ_SHAPE(), (tj_dtype)DT), A) : tj_full(TJ_SHAPE(), A, (tj_dtype)DT);
    tj_store(o, tj_cast(tj_add(s, B), TJ_I64));
}
TJ_KERNEL(full_float, TJ_PARAMS(TJ_PTR(o, f64)), TJ_CONSTS(DT, A))
{
    tj_val s = tj_full(TJ_SHAPE(), (double)A / 1024.0 + 0.1, (tj_dtype)DT);
    tj_store(o, tj_cast(tj_mul(s, 1), TJ_F64));
}
/* where(c, c, x) with c a rank-0 full of i32 (the condition c != 0, and a
 * value) and x a tile of f32: c where c is not 0, else x. */
TJ_KERNEL(where_full, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(o, f32)), TJ_CONSTS(C))
{
    tj_val offs = tj_arange(0, 16);
    tj_val c = tj_full(TJ_SHAPE(), C, TJ_I32);
    tj_val v = tj_load(tj_add(x, offs));
    tj_store(tj_add(o, offs), tj_where(c, c, v));
}

static int launch1(tj_device *dev, const tj_kernel *k, tj_buffer out, void *host, const int64_t *c, int nc)
{
    tj_launch_cfg cfg = {.grid = {1}};
    tj_arg arg = TJ_ARG_BUF(out);
    memset(host, TL_POISON, 8);
    int ok = tj_buffer_write(dev, out, 0, host, 8) == TJ_OK &&
             tj_launch(dev, k, &cfg, &arg, 1, c, nc) == TJ_OK && tj_buffer_read(dev, out, 0, host, 8) == TJ_OK;
    if (!ok)
        tap_diag("%s: %s", k->name, tj_last_error());
    return ok;
}

int main(void)
{
    tj_device *dev = tl_setup("test_full_scalar");
    static const tj_dtype ints[] = {TJ_I8, TJ_I16, TJ_I32, TJ_I64, TJ_U8, TJ_U16, TJ_U32};
    static const tj_dtype floats[] = {TJ_F16, TJ_BF16, TJ_F32, TJ_F64};
    tap_plan(2 * (int)TL_COUNT(ints) + 2 + (int)TL_COUNT(floats) + 2);
    tj_buffer out;
    if (tj_buffer_alloc(dev, 16 * 4, &out) != TJ_OK)
        tap_bail_out("alloc: %s", tj_last_error());

    for (int zeros = 0; zeros < 2; zeros++)
        for (size_t i = 0; i < TL_COUNT(ints); i++) {
            tj_dtype dt = ints[i];
            /* B is a literal: it must fit dt (and an i32 literal). */
            int64_t lo = tl_int_min(dt), hi = tl_int_max(dt) > INT32_MAX ? INT32_MAX : tl_int_max(dt);
            int64_t a = tl_rand_range(lo, hi);
            int64_t b = tl_rand_range(hi / 2, hi), got;
            int64_t want = tl_wrap(dt, (int64_t)((uint64_t)a + (uint64_t)b));
            int ok = launch1(dev, full_int, out, &got, (int64_t[]){dt, a, b, zeros}, 4);
            if (ok && got != want)
                tap_diag("got %lld, expected %lld", (long long)got, (long long)want);
            tap_ok(ok && got == want, "%s of rank 0, %s: %lld + %lld wraps in %s", zeros ? "zeros + A" : "full(A)",
                   tj_dtype_name(dt), (long long)a, (long long)b, tj_dtype_name(dt));
        }
    /* The case: i64 sums past INT32_MAX do not wrap in i32
     * (full: INT32_MAX + 1; zeros: 0 + INT32_MAX + INT32_MAX). */
    for (int zeros = 0; zeros < 2; zeros++) {
        int64_t got, want = zeros ? 2 * (int64_t)INT32_MAX : (int64_t)INT32_MAX + 1;
        int ok = launch1(dev, full_int, out, &got,
                         (int64_t[]){TJ_I64, INT32_MAX, zeros ? INT32_MAX : 1, zeros}, 4);
        tap_ok(ok && got == want, "%s i64 past INT32_MAX: %lld (expected %lld)", zeros ? "zeros" : "full",
               (long long)got, (long long)want);
    }
    for (size_t i = 0; i < TL_COUNT(floats); i++) {
        tj_dtype dt = floats[i];
        int64_t a = tl_rand_range(-4096, 4096);
        double got, want = tl_round(dt, (double)a / 1024.0 + 0.1);
        int ok = launch1(dev, full_float, out, &got, (int64_t[]){dt, a}, 2);
        if (ok && got != want)
            tap_diag("got %.17g, expected %.17g", got, want);
        tap_ok(ok && got == want, "full(TJ_SHAPE(), %.17g, %s) keeps %s", (double)a / 1024.0 + 0.1,
               tj_dtype_name(dt), tj_dtype_name(dt));
    }
    for (int pass = 0; pass < 2; pass++) {
        int64_t c = pass ? tl_rand_range(-1000, 1000) | 1 : 0;
        float x[16], o[16];
        tl_fill_range(TJ_F32, x, 16, -100, 100);
        memset(o, TL_POISON, sizeof o);
        tj_buffer bx = tl_upload(dev, x, sizeof x);
        tj_launch_cfg cfg = {.grid = {1}};
        tj_arg args[] = {TJ_ARG_BUF(bx), TJ_ARG_BUF(out)};
        int ok = tj_buffer_write(dev, out, 0, o, sizeof o) == TJ_OK &&
                 tj_launch(dev, where_full, &cfg, args, 2, &c, 1) == TJ_OK &&
                 tj_buffer_read(dev, out, 0, o, sizeof o) == TJ_OK;
        if (!ok)
            tap_diag("where_full: %s", tj_last_error());
        int wrong = 0;
        for (int i = 0; ok && i < 16; i++)
            wrong += o[i] != (c ? (float)c : x[i]);
        tap_ok(ok && !wrong, "where(c, c, x) with c = full(TJ_SHAPE(), %d, i32)", (int)c);
        tj_buffer_free(dev, bx);
    }
    tj_buffer_free(dev, out);
    tj_device_close(dev);
    return tap_done();
}
