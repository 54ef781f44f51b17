/* SPDX-License-Identifier: MIT */
/*
 * test_control.c — runtime control flow and debugging ops.
 *
 * TJ_FOR with loop-carried scalars and tiles and bounds from kernel
 * arguments (including loops that run zero times and once, and negative
 * steps, counting down as Python's range does), nested loops
 * whose inner bounds depend on the outer induction variable, i64 bounds,
 * TJ_IF/TJ_ELSE with carried values taken both ways, an if without an else,
 * an if inside a loop and a loop inside an if, stores inside regions, and a
 * C loop in the body (build-time unrolling). Then device print (the launch
 * must succeed) and device assert: a failing one gives TJ_ERR_ASSERT naming
 * the file:line of the assert, a passing one TJ_OK, and the device keeps
 * working afterwards.
 *
 * References replay the same arithmetic in the same order in C, so float
 * results match to rounding.
 */
#include "testlib.h"

static tj_device *dev;

enum { BLOCK = 32 };

/* acc = x[0:B]; s = 7; for k in range(lo, hi, step): acc += 0.5 * x[k*B:];
 * s += 3k. Also stores acc at every iteration into trace[k*B:]. */
TJ_KERNEL(loop_carried,
          TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(out, f32), TJ_PTR(out_s, i32), TJ_PTR(trace, f32),
                    TJ_SCALAR(lo, i32), TJ_SCALAR(hi, i32), TJ_SCALAR(step, i32)),
          TJ_CONSTS())
{
    tj_val offs = tj_arange(0, BLOCK);
    tj_val acc = tj_load(tj_add(x, offs));
    tj_val s = tj_i32(7);
    TJ_FOR(k, lo, hi, step, &acc, &s) {
        tj_val chunk = tj_add(tj_mul(k, BLOCK), offs);
        acc = tj_add(acc, tj_mul(tj_load(tj_add(x, chunk)), 0.5));
        s = tj_add(s, tj_mul(k, 3));
        tj_store(tj_add(trace, chunk), acc);
    }
    tj_store(tj_add(out, offs), acc);
    tj_store(out_s, s);
}

static void test_loop(int lo, int hi, int step)
{
    enum { CHUNKS = 20 };
    float x[CHUNKS * BLOCK], want[BLOCK], got[BLOCK], trace[CHUNKS * BLOCK];
    float want_trace[CHUNKS * BLOCK];
    int32_t s = 7, got_s;
    tl_fill_random(TJ_F32, x, CHUNKS * BLOCK);
    memset(want_trace, TL_POISON, sizeof want_trace);
    memcpy(want, x, sizeof want);
    for (int k = lo; step > 0 ? k < hi : k > hi; k += step) { /* as Python's range */
        for (int j = 0; j < BLOCK; j++) {
            want[j] = want[j] + x[k * BLOCK + j] * 0.5f;
            want_trace[k * BLOCK + j] = want[j];
        }
        s += 3 * k;
    }
    tj_buffer bx = tl_upload(dev, x, sizeof x), bo = tl_poisoned(dev, sizeof got),
              bs = tl_poisoned(dev, 4), bt = tl_poisoned(dev, sizeof trace);
    tj_launch_cfg cfg = tl_grid(1, 1, 1);
    char what[128];
    int trips = step > 0 ? (hi > lo ? (hi - lo + step - 1) / step : 0)
                         : (lo > hi ? (lo - hi - step - 1) / -step : 0);
    snprintf(what, sizeof what, "TJ_FOR(k, %d, %d, %d) (%d trips): carried tile, scalar, stores",
             lo, hi, step, trips);
    if (!tl_launch_failed(loop_carried_launch(dev, &cfg, bx, bo, bs, bt, lo, hi, step), what)) {
        tl_download(dev, bo, got, sizeof got);
        tl_download(dev, bs, &got_s, 4);
        tl_download(dev, bt, trace, sizeof trace);
        int ok = got_s == s && memcmp(trace, want_trace, sizeof trace) == 0;
        if (got_s != s)
            tap_diag("  carried scalar: got %d, expected %d", got_s, s);
        if (memcmp(trace, want_trace, sizeof trace) != 0)
            tap_diag("  the stores inside the loop differ (or hit chunks outside the range)");
        if (!ok)
            tap_ok(0, "%s", what);
        else
            tl_check(what, TJ_F32, got, want, BLOCK, 1e-6, 0);
    }
}

/* A step of 0 must not hang the launch (the watchdog would fire). */
static void test_loop_step0(void)
{
    float x[20 * BLOCK];
    tl_fill_random(TJ_F32, x, 20 * BLOCK);
    tj_buffer bx = tl_upload(dev, x, sizeof x), bo = tl_poisoned(dev, 4 * BLOCK),
              bs = tl_poisoned(dev, 4), bt = tl_poisoned(dev, sizeof x);
    tj_launch_cfg cfg = tl_grid(1, 1, 1);
    tj_status st = loop_carried_launch(dev, &cfg, bx, bo, bs, bt, 0, 5, 0);
    tap_ok(1, "TJ_FOR with a step of 0 returns (%s)", tj_status_name(st));
}

/* Nested loops: for i in [0, m): for j in [i, n): acc += x[i*n + j]*(i+1)
 * (a scalar) and t += y[j] (a tile row of B); both carried through both. */
TJ_KERNEL(nested,
          TJ_PARAMS(TJ_PTR(x, i32), TJ_PTR(y, i32), TJ_PTR(out, i32), TJ_PTR(out_t, i32),
                    TJ_SCALAR(m, i32), TJ_SCALAR(n, i32)),
          TJ_CONSTS())
{
    tj_val offs = tj_arange(0, BLOCK);
    tj_val acc = tj_i32(11);
    tj_val t = tj_full(TJ_SHAPE(BLOCK), 3, TJ_I32);
    TJ_FOR(i, 0, m, 1, &acc, &t) {
        TJ_FOR(j, i, n, 1, &acc, &t) {
            tj_val v = tj_load(tj_add(x, tj_add(tj_mul(i, n), j)));
            acc = tj_add(acc, tj_mul(v, tj_add(i, 1)));
            t = tj_add(t, tj_load(tj_add(y, tj_add(tj_mul(j, BLOCK), offs))));
        }
    }
    tj_store(out, acc);
    tj_store(tj_add(out_t, offs), t);
}

static void test_nested(void)
{
    int m = (int)tl_rand_range(2, 6), n = (int)tl_rand_range(3, 9);
    int32_t x[6 * 9], y[9 * BLOCK], want_t[BLOCK], got_t[BLOCK], got;
    tl_fill_range(TJ_I32, x, 6 * 9, -1000, 1000);
    tl_fill_range(TJ_I32, y, 9 * BLOCK, -1000, 1000);
    int32_t acc = 11;
    for (int k = 0; k < BLOCK; k++)
        want_t[k] = 3;
    for (int i = 0; i < m; i++)
        for (int j = i; j < n; j++) {
            acc += x[i * n + j] * (i + 1);
            for (int k = 0; k < BLOCK; k++)
                want_t[k] += y[j * BLOCK + k];
        }
    tj_buffer bx = tl_upload(dev, x, sizeof x), by = tl_upload(dev, y, sizeof y),
              bo = tl_poisoned(dev, 4), bt = tl_poisoned(dev, sizeof got_t);
    tj_launch_cfg cfg = tl_grid(1, 1, 1);
    char what[128];
    snprintf(what, sizeof what, "nested TJ_FOR (m = %d, n = %d, inner from the outer iv)", m, n);
    if (!tl_launch_failed(nested_launch(dev, &cfg, bx, by, bo, bt, m, n), what)) {
        tl_download(dev, bo, &got, 4);
        tl_download(dev, bt, got_t, sizeof got_t);
        if (got != acc) {
            tap_diag("  carried scalar: got %d, expected %d", got, acc);
            tap_ok(0, "%s", what);
        } else {
            tl_check(what, TJ_I32, got_t, want_t, BLOCK, 0, 0);
        }
    }
}

/* MODE 0: if (s > 0) { acc *= 2; cnt += s } else { acc = -acc; cnt -= 1 }
 * MODE 1: if (s < 10) { acc += 1 } with no else
 * MODE 2: if (s == 4) { store acc } — a side effect only, nothing carried */
TJ_KERNEL(branches,
          TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(out, f32), TJ_PTR(out_c, i32), TJ_SCALAR(s, i32)),
          TJ_CONSTS(MODE))
{
    tj_val offs = tj_arange(0, BLOCK);
    tj_val acc = tj_load(tj_add(x, offs));
    tj_val cnt = tj_i32(5);
    if (MODE == 0) {
        TJ_IF(tj_gt(s, 0), &acc, &cnt) {
            acc = tj_mul(acc, 2);
            cnt = tj_add(cnt, s);
        }
        TJ_ELSE {
            acc = tj_neg(acc);
            cnt = tj_sub(cnt, 1);
        }
    } else if (MODE == 1) {
        TJ_IF(tj_lt(s, 10), &acc) {
            acc = tj_add(acc, 1);
        }
    } else {
        TJ_IF(tj_eq(s, 4)) {
            tj_store(tj_add(out, offs), acc);
        }
        return;
    }
    tj_store(tj_add(out, offs), acc);
    tj_store(out_c, cnt);
}

static void test_branch(int mode, int32_t s)
{
    float x[BLOCK], want[BLOCK], got[BLOCK];
    int32_t cnt = 5, got_c;
    tl_fill_random(TJ_F32, x, BLOCK);
    int taken = mode == 0 ? s > 0 : mode == 1 ? s < 10 : s == 4;
    for (int j = 0; j < BLOCK; j++)
        want[j] = mode == 0 ? (taken ? x[j] * 2 : -x[j]) : mode == 1 ? (taken ? x[j] + 1 : x[j]) : x[j];
    if (mode == 0)
        cnt = taken ? cnt + s : cnt - 1;
    tj_buffer bx = tl_upload(dev, x, sizeof x), bo = tl_poisoned(dev, sizeof got),
              bc = tl_poisoned(dev, 4);
    tj_launch_cfg cfg = tl_grid(1, 1, 1);
    static const char *const forms[] = {"TJ_IF/TJ_ELSE carrying a tile and a scalar",
                                        "TJ_IF without TJ_ELSE carrying a tile",
                                        "TJ_IF with only a store inside"};
    char what[128];
    snprintf(what, sizeof what, "%s, %s (s = %d)", forms[mode], taken ? "taken" : "not taken", s);
    if (!tl_launch_failed(branches_launch(dev, &cfg, bx, bo, bc, s, mode), what)) {
        tl_download(dev, bo, got, sizeof got);
        tl_download(dev, bc, &got_c, 4);
        if (mode == 2 && !taken) {
            tap_ok(tl_poison_intact(got, 0, sizeof got), "%s", what);
        } else if (mode == 0 && got_c != cnt) {
            tap_diag("  carried scalar: got %d, expected %d", got_c, cnt);
            tap_ok(0, "%s", what);
        } else {
            tl_check(what, TJ_F32, got, want, BLOCK, 0, 0);
        }
    }
}

/* An if inside a loop (even k add, odd k subtract) and a loop inside an if
 * (when s > 0: s times acc *= 1.5). */
TJ_KERNEL(mixed_regions,
          TJ_PARAMS(TJ_PTR(x, f64), TJ_PTR(out, f64), TJ_SCALAR(n, i32), TJ_SCALAR(s, i32)),
          TJ_CONSTS())
{
    tj_val offs = tj_arange(0, BLOCK);
    tj_val acc = tj_full(TJ_SHAPE(BLOCK), 0.25, TJ_F64);
    TJ_FOR(k, 0, n, 1, &acc) {
        tj_val v = tj_load(tj_add(x, tj_add(tj_mul(k, BLOCK), offs)));
        TJ_IF(tj_eq(tj_mod(k, 2), 0), &acc) {
            acc = tj_add(acc, v);
        }
        TJ_ELSE {
            acc = tj_sub(acc, v);
        }
    }
    TJ_IF(tj_gt(s, 0), &acc) {
        TJ_FOR(r, 0, s, 1, &acc) {
            acc = tj_mul(acc, 1.5);
        }
    }
    tj_store(tj_add(out, offs), acc);
}

static void test_mixed_regions(int32_t s)
{
    int n = (int)tl_rand_range(3, 10);
    double x[10 * BLOCK], want[BLOCK], got[BLOCK];
    tl_fill_random(TJ_F64, x, 10 * BLOCK);
    for (int j = 0; j < BLOCK; j++) {
        double acc = 0.25;
        for (int k = 0; k < n; k++)
            acc = k % 2 == 0 ? acc + x[k * BLOCK + j] : acc - x[k * BLOCK + j];
        for (int r = 0; r < s; r++)
            acc *= 1.5;
        want[j] = acc;
    }
    tj_buffer bx = tl_upload(dev, x, sizeof x), bo = tl_poisoned(dev, sizeof got);
    tj_launch_cfg cfg = tl_grid(1, 1, 1);
    char what[128];
    snprintf(what, sizeof what, "TJ_IF/TJ_ELSE inside TJ_FOR (n = %d), TJ_FOR inside TJ_IF (s = %d)",
             n, s);
    if (!tl_launch_failed(mixed_regions_launch(dev, &cfg, bx, bo, n, s), what)) {
        tl_download(dev, bo, got, sizeof got);
        tl_check(what, TJ_F64, got, want, BLOCK, 1e-15, 0);
    }
}

/* i64 bounds: sum of k for k in [lo, hi) plus a build-time C loop that
 * unrolls UNROLL loads. */
TJ_KERNEL(wide_loop,
          TJ_PARAMS(TJ_PTR(x, i64), TJ_PTR(out, i64), TJ_SCALAR(lo, i64), TJ_SCALAR(hi, i64)),
          TJ_CONSTS(UNROLL))
{
    tj_val acc = tj_i64(0);
    TJ_FOR(k, lo, hi, 1, &acc) {
        acc = tj_add(acc, k);
    }
    for (int u = 0; u < UNROLL; u++)
        acc = tj_add(acc, tj_mul(tj_load(tj_add(x, u)), u + 1));
    tj_store(out, acc);
}

static void test_wide_loop(int unroll)
{
    int64_t lo = ((int64_t)1 << 40) + tl_rand_range(0, 1000), hi = lo + tl_rand_range(1, 50);
    int64_t x[8], want = 0, got;
    tl_fill_range(TJ_I64, x, 8, -1000000, 1000000);
    for (int64_t k = lo; k < hi; k++)
        want += k;
    for (int u = 0; u < unroll; u++)
        want += x[u] * (u + 1);
    tj_buffer bx = tl_upload(dev, x, sizeof x), bo = tl_poisoned(dev, 8);
    tj_launch_cfg cfg = tl_grid(1, 1, 1);
    char what[128];
    snprintf(what, sizeof what, "TJ_FOR with i64 bounds near 2^40, C loop unrolled %d times",
             unroll);
    if (!tl_launch_failed(wide_loop_launch(dev, &cfg, bx, bo, lo, hi, unroll), what)) {
        tl_download(dev, bo, &got, 8);
        tl_check(what, TJ_I64, &got, &want, 1, 0, 0);
    }
}

/* ---- print and assert ---------------------------------------------------- */

TJ_KERNEL(printer, TJ_PARAMS(TJ_PTR(x, f32), TJ_SCALAR(n, i32)), TJ_CONSTS())
{
    tj_val offs = tj_arange(0, 8);
    tj_print("tjit-test scalar n =", n);
    tj_print("tjit-test tile x =", tj_load(tj_add(x, offs)));
    tj_print("tjit-test 2-D tile =", tj_add(tj_expand_dims(offs, 1), tj_expand_dims(offs, 0)));
}

static void test_print(void)
{
    float x[8];
    tl_fill_random(TJ_F32, x, 8);
    tj_buffer bx = tl_upload(dev, x, sizeof x);
    tj_launch_cfg cfg = tl_grid(2, 1, 1);
    fflush(stdout);
    tj_status st = printer_launch(dev, &cfg, bx, 42);
    fflush(stdout);
    fflush(stderr);
    tap_ok(st == TJ_OK, "tj_print of a scalar, a 1-D and a 2-D tile: launch succeeds");
    if (st != TJ_OK)
        tap_diag("  %s: %s", tj_status_name(st), tj_last_error());
}

static int assert_line;

/* out = x where every element is below limit; asserts it. */
TJ_KERNEL(checked, TJ_PARAMS(TJ_PTR(x, i32), TJ_PTR(out, i32), TJ_SCALAR(limit, i32)),
          TJ_CONSTS())
{
    tj_val offs = tj_add(tj_mul(tj_program_id(0), BLOCK), tj_arange(0, BLOCK));
    tj_val v = tj_load(tj_add(x, offs));
    assert_line = __LINE__ + 1;
    tj_device_assert(tj_lt(v, limit), "value below limit");
    tj_store(tj_add(out, offs), tj_mul(v, 3));
}

static void test_assert(void)
{
    enum { G = 4 };
    int32_t x[G * BLOCK], want[G * BLOCK], got[G * BLOCK];
    tl_fill_range(TJ_I32, x, G * BLOCK, -1000, 999);
    for (int i = 0; i < G * BLOCK; i++)
        want[i] = x[i] * 3;
    tj_buffer bx = tl_upload(dev, x, sizeof x), bo = tl_poisoned(dev, sizeof got);
    tj_launch_cfg cfg = tl_grid(G, 1, 1);

    tj_status st = checked_launch(dev, &cfg, bx, bo, 1000);
    if (!tl_launch_failed(st, "passing tj_device_assert gives TJ_OK")) {
        tl_download(dev, bo, got, sizeof got);
        tl_check("passing tj_device_assert gives TJ_OK", TJ_I32, got, want, G * BLOCK, 0, 0);
    }

    /* One element of program 2 breaks the assertion. */
    int bad = 2 * BLOCK + (int)tl_rand_range(0, BLOCK - 1);
    x[bad] = 5000;
    tj_buffer_write(dev, bx, 0, x, sizeof x);
    st = checked_launch(dev, &cfg, bx, bo, 1000);
    /* GPU launches are asynchronous: the failure is reported at synchronize. */
    if (st == TJ_OK)
        st = tj_synchronize(dev);
    int ok = tap_ok(st == TJ_ERR_ASSERT, "failing tj_device_assert gives TJ_ERR_ASSERT");
    if (!ok)
        tap_diag("  got %s: %s", tj_status_name(st), tj_last_error());
    tap_ok(st == TJ_ERR_ASSERT &&
               tl_error_mentions(tl_where(__FILE__, assert_line), "value below limit",
                                 "checked", NULL),
           "the assert message names file:line, kernel and message (%s)",
           tl_where(__FILE__, assert_line));
    tap_diag("  message: %s", tj_last_error());

    /* The device still works. */
    x[bad] = 7;
    want[bad] = 21;
    tj_buffer_write(dev, bx, 0, x, sizeof x);
    tl_repoison(dev, bo, sizeof got);
    st = checked_launch(dev, &cfg, bx, bo, 1000);
    if (!tl_launch_failed(st, "the same kernel runs again after a failed assert")) {
        tl_download(dev, bo, got, sizeof got);
        tl_check("the same kernel runs again after a failed assert", TJ_I32, got, want,
                 G * BLOCK, 0, 0);
    }
}

int main(void)
{
    dev = tl_setup("test_control");
    int n = (int)tl_rand_range(3, 19);
    test_loop(0, n, 1);
    test_loop(2, 17, 3);
    test_loop(1, 2, 1);
    test_loop(5, 5, 1);
    test_loop(9, 3, 1);
    test_loop(10, 0, -2);
    test_loop(15, 2, -4);
    test_loop(3, 9, -1);
    test_loop_step0();
    test_nested();
    test_branch(0, (int32_t)tl_rand_range(1, 1000));
    test_branch(0, (int32_t)tl_rand_range(-1000, 0));
    test_branch(0, 0);
    test_branch(1, (int32_t)tl_rand_range(-100, 9));
    test_branch(1, (int32_t)tl_rand_range(10, 100));
    test_branch(2, 4);
    test_branch(2, 5);
    test_mixed_regions((int32_t)tl_rand_range(1, 5));
    test_mixed_regions(0);
    test_wide_loop(1);
    test_wide_loop(4);
    test_print();
    test_assert();
    tj_device_close(dev);
    return tap_done();
}
