/* SPDX-License-Identifier: MIT */
/*
 * test_floordiv.c — tj_floordiv and tj_mod are Python's // and %;
 * tj_truncdiv and tj_fmod are C's / and % (Triton's // and % on integers).
 *
 * floordiv rounds toward negative infinity and mod takes the sign of the
 * divisor, so a == floordiv(a, b) * b + mod(a, b) (tj_floordiv once
 * truncated toward zero as C does). Division by 0 gives 0 and 0 for
 * integers; INT_MIN // -1 wraps to INT_MIN, mod 0. For floats floordiv is
 * floor(a / b) and mod is fmod moved into the divisor's sign. tj_cdiv
 * (ceil for b > 0) is checked for negative a too. truncdiv rounds toward 0
 * and fmod has the sign of the dividend, as C's (with the same rules for 0
 * and INT_MIN / -1); for floats they are trunc(a / b) and C's fmod, exact
 * (its sign included). Each dtype gets operands
 * at the edges (INT_MIN, -1, 0, 1, INT_MAX, small negatives) crossed with
 * each other, then random ones, against an int64/double reference, on the
 * test device (TJIT_TEST_DEVICE).
 */
#include "testlib.h"

enum { N = 256 };

#define DIV_KERNEL(NAME, DT, OUT)                                                                  \
    TJ_KERNEL(NAME, TJ_PARAMS(TJ_PTR(a, DT), TJ_PTR(b, DT), TJ_PTR(q, OUT), TJ_PTR(m, OUT),       \
                              TJ_PTR(c, OUT), TJ_PTR(t, OUT), TJ_PTR(f, OUT)), TJ_CONSTS(IS_INT))  \
    {                                                                                              \
        tj_val offs = tj_arange(0, N);                                                             \
        tj_val x = tj_load(tj_add(a, offs)), y = tj_load(tj_add(b, offs));                         \
        tj_store(tj_add(q, offs), tj_floordiv(x, y));                                              \
        tj_store(tj_add(m, offs), tj_mod(x, y));                                                   \
        tj_store(tj_add(t, offs), tj_truncdiv(x, y));                                              \
        tj_store(tj_add(f, offs), tj_fmod(x, y));                                                  \
        if (IS_INT)                                                                                \
            tj_store(tj_add(c, offs), tj_cdiv(x, tj_abs(y)));                                      \
    }
DIV_KERNEL(div_i8, i8, i8)
DIV_KERNEL(div_i16, i16, i16)
DIV_KERNEL(div_i32, i32, i32)
DIV_KERNEL(div_i64, i64, i64)
DIV_KERNEL(div_u8, u8, u8)
DIV_KERNEL(div_u32, u32, u32)
DIV_KERNEL(div_f32, f32, f32)
DIV_KERNEL(div_f64, f64, f64)

/* Python's // and % in dt's width; unsigned are plain; by 0: 0 and 0. */
static void int_ref(tj_dtype dt, int64_t a, int64_t b, int64_t *q, int64_t *m)
{
    if (b == 0) {
        *q = *m = 0;
        return;
    }
    if (tl_is_unsigned(dt)) {
        *q = (int64_t)((uint64_t)a / (uint64_t)b), *m = (int64_t)((uint64_t)a % (uint64_t)b);
        return;
    }
    if (a == INT64_MIN && b == -1) {
        *q = INT64_MIN, *m = 0;
        return;
    }
    int64_t tq = a / b, tr = a % b;
    if (tr != 0 && (tr < 0) != (b < 0))
        tq -= 1, tr += b;
    *q = tl_wrap(dt, tq), *m = tr;
}

/* C's / and % in dt's width; by 0: 0 and 0; INT_MIN / -1: INT_MIN, 0. */
static void c_ref(tj_dtype dt, int64_t a, int64_t b, int64_t *q, int64_t *r)
{
    if (b == 0) {
        *q = *r = 0;
    } else if (tl_is_unsigned(dt)) {
        *q = (int64_t)((uint64_t)a / (uint64_t)b), *r = (int64_t)((uint64_t)a % (uint64_t)b);
    } else if (a == INT64_MIN && b == -1) {
        *q = INT64_MIN, *r = 0;
    } else {
        *q = tl_wrap(dt, a / b), *r = a % b;
    }
}

static void run(tj_device *dev, const tj_kernel *k, tj_dtype dt)
{
    int is_int = !tl_is_float(dt), bytes = tl_bits(dt) / 8;
    tl_num a[N], b[N];
    int64_t lo = is_int ? tl_int_min(dt) : 0, hi = is_int ? tl_int_max(dt) : 0;
    const int64_t edges[] = {lo, lo + 1, -7, -3, -1, 0, 1, 3, 7, hi};
    const double fedges[] = {-7.5, -3, -1, -0.0, 0, 1, 3, 7.5, INFINITY, -INFINITY};
    for (int i = 0; i < N; i++) {
        if (i < 100 && is_int) {
            a[i] = tl_int(tl_wrap(dt, edges[i % 10])), b[i] = tl_int(tl_wrap(dt, edges[i / 10]));
        } else if (i < 100) {
            a[i] = tl_flt(fedges[i % 10]), b[i] = tl_flt(fedges[i / 10]);
        } else {
            a[i] = tl_random(dt);
            b[i] = is_int ? tl_int(tl_wrap(dt, tl_rand_range(-20, 20))) : tl_flt(tl_round(dt, tl_rand_double(-20, 20)));
        }
    }
    uint8_t ra[N * 8], rb[N * 8], q[N * 8], m[N * 8], c[N * 8], t[N * 8], f[N * 8];
    for (int i = 0; i < N; i++)
        tl_set(dt, ra, (size_t)i, a[i]), tl_set(dt, rb, (size_t)i, b[i]);
    size_t size = (size_t)(N * bytes);
    tj_buffer ba = tl_upload(dev, ra, size), bb = tl_upload(dev, rb, size);
    tj_buffer bq = tl_poisoned(dev, size), bm = tl_poisoned(dev, size), bc = tl_poisoned(dev, size);
    tj_buffer bt = tl_poisoned(dev, size), bf = tl_poisoned(dev, size);
    tj_launch_cfg cfg = {.grid = {1}};
    tj_arg args[] = {TJ_ARG_BUF(ba), TJ_ARG_BUF(bb), TJ_ARG_BUF(bq), TJ_ARG_BUF(bm),
                     TJ_ARG_BUF(bc), TJ_ARG_BUF(bt), TJ_ARG_BUF(bf)};
    int64_t flag = is_int;
    int ok = tj_launch(dev, k, &cfg, args, 7, &flag, 1) == TJ_OK && tj_buffer_read(dev, bq, 0, q, size) == TJ_OK &&
             tj_buffer_read(dev, bm, 0, m, size) == TJ_OK && tj_buffer_read(dev, bc, 0, c, size) == TJ_OK &&
             tj_buffer_read(dev, bt, 0, t, size) == TJ_OK && tj_buffer_read(dev, bf, 0, f, size) == TJ_OK;
    if (!ok)
        tap_diag("%s: %s", k->name, tj_last_error());
    int wrong[5] = {0, 0, 0, 0, 0};
    for (int i = 0; ok && i < N; i++) {
        tl_num gq = tl_get(dt, q, (size_t)i), gm = tl_get(dt, m, (size_t)i);
        tl_num gt = tl_get(dt, t, (size_t)i), gf = tl_get(dt, f, (size_t)i);
        char sa[40], sb[40];
        tl_format(sa, sizeof sa, dt, a[i]), tl_format(sb, sizeof sb, dt, b[i]);
        if (is_int) {
            int64_t wq, wm, wc, dummy;
            int_ref(dt, a[i].i, b[i].i, &wq, &wm);
            int64_t ab = tl_wrap(dt, b[i].i < 0 ? (int64_t)(0 - (uint64_t)b[i].i) : b[i].i);
            int_ref(dt, tl_wrap(dt, (int64_t)((uint64_t)a[i].i + (uint64_t)ab - 1)), ab, &wc, &dummy);
            int64_t gc = tl_get(dt, c, (size_t)i).i, wt, wf;
            c_ref(dt, a[i].i, b[i].i, &wt, &wf);
            if (gt.i != wt && wrong[3]++ < 3)
                tap_diag("truncdiv(%s, %s) = %lld, expected %lld", sa, sb, (long long)gt.i, (long long)wt);
            if (gf.i != wf && wrong[4]++ < 3)
                tap_diag("fmod(%s, %s) = %lld, expected %lld", sa, sb, (long long)gf.i, (long long)wf);
            if (gq.i != wq && wrong[0]++ < 3)
                tap_diag("floordiv(%s, %s) = %lld, expected %lld", sa, sb, (long long)gq.i, (long long)wq);
            if (gm.i != wm && wrong[1]++ < 3)
                tap_diag("mod(%s, %s) = %lld, expected %lld", sa, sb, (long long)gm.i, (long long)wm);
            /* cdiv is ceil(a / |b|) where a + |b| - 1 does not overflow */
            int in_range = ab > 0 && (tl_is_unsigned(dt) ? (uint64_t)a[i].i <= (uint64_t)hi - (uint64_t)ab + 1
                                                          : a[i].i <= hi - ab + 1);
            if (in_range && gc != wc && wrong[2]++ < 3)
                tap_diag("cdiv(%s, %lld) = %lld, expected %lld", sa, (long long)ab, (long long)gc, (long long)wc);
        } else {
            double x = a[i].f, y = b[i].f;
            double wq = tl_round(dt, floor(tl_round(dt, x / y)));
            double r = fmod(x, y);
            double wm = r != 0 && (r < 0) != (y < 0) ? tl_round(dt, r + y) : r;
            int q_ok = isnan(wq) ? isnan(gq.f) : gq.f == wq;
            int m_ok = isnan(wm) ? isnan(gm.f) : gm.f == wm && signbit(gm.f) == signbit(wm);
            if (!q_ok && wrong[0]++ < 3)
                tap_diag("floordiv(%s, %s) = %.17g, expected %.17g", sa, sb, gq.f, wq);
            if (!m_ok && wrong[1]++ < 3)
                tap_diag("mod(%s, %s) = %.17g, expected %.17g", sa, sb, gm.f, wm);
            double wt = tl_round(dt, trunc(tl_round(dt, x / y))), wf = r;
            int t_ok = isnan(wt) ? isnan(gt.f) : gt.f == wt;
            int f_ok = isnan(wf) ? isnan(gf.f) : gf.f == wf && signbit(gf.f) == signbit(wf);
            if (!t_ok && wrong[3]++ < 3)
                tap_diag("truncdiv(%s, %s) = %.17g, expected %.17g", sa, sb, gt.f, wt);
            if (!f_ok && wrong[4]++ < 3)
                tap_diag("fmod(%s, %s) = %.17g, expected %.17g", sa, sb, gf.f, wf);
        }
    }
    tap_ok(ok && !wrong[0], "%s floordiv rounds toward -inf (edges, random)", tj_dtype_name(dt));
    tap_ok(ok && !wrong[1], "%s mod has the sign of the divisor", tj_dtype_name(dt));
    tap_ok(ok && !wrong[3], "%s truncdiv rounds toward 0 (C's /)", tj_dtype_name(dt));
    tap_ok(ok && !wrong[4], "%s fmod has the sign of the dividend (C's %%, fmod)", tj_dtype_name(dt));
    if (is_int)
        tap_ok(ok && !wrong[2], "%s cdiv is ceil, negative dividends included", tj_dtype_name(dt));
    tj_buffer_free(dev, ba), tj_buffer_free(dev, bb), tj_buffer_free(dev, bq), tj_buffer_free(dev, bm);
    tj_buffer_free(dev, bc), tj_buffer_free(dev, bt), tj_buffer_free(dev, bf);
}

int main(void)
{
    tj_device *dev = tl_setup("test_floordiv");
    tap_plan(6 * 5 + 2 * 4);
    run(dev, div_i8, TJ_I8);
    run(dev, div_i16, TJ_I16);
    run(dev, div_i32, TJ_I32);
    run(dev, div_i64, TJ_I64);
    run(dev, div_u8, TJ_U8);
    run(dev, div_u32, TJ_U32);
    run(dev, div_f32, TJ_F32);
    run(dev, div_f64, TJ_F64);
    tj_device_close(dev);
    return tap_done();
}
