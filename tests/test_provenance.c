/* SPDX-License-Identifier: MIT */
/*
 * test_provenance.c — pointers whose buffer is known only through a loop or
 * a where(), for the two users of one provenance analysis
 * (src/passes/provenance.c): the aliasing of loads and later stores
 * (alias.c) and the bounds checks (bounds.h).
 *
 * Each kernel loads rows and stores them reversed, through pointers carried
 * by a TJ_FOR loop or chosen by tj_where:
 *
 *  - rows reversed in place through one carried row pointer: the load and
 *    the store are of one buffer, so the store must wait for the load;
 *  - rows copied reversed through two carried row pointers (src, dst):
 *    launched with two buffers and with one buffer for both — two buffers
 *    need no ordering (in the PTX: no barrier between load and store), one
 *    buffer does, and both must be right;
 *  - a where() between a pointer into x and one into y, loaded and stored
 *    reversed into x: picking x is an in-place reversal.
 *
 * Every kernel also runs bounds-checked (cfg.check_bounds): a carried or
 * where()d pointer that stays inside its buffers must not be reported, and
 * the result must be the same.
 * tests/gpu/test_provenance.gpu runs everything on a GPU where there is one.
 */
#include "ptx_barriers.h"
#include "testlib.h"

static tj_device *dev;

TJ_KERNEL(reverse_rows_loop, TJ_PARAMS(TJ_PTR(x, f32), TJ_SCALAR(rows, i32)), TJ_CONSTS(N))
{
    tj_val o = tj_arange(0, N);
    tj_val row = x;
    TJ_FOR(k, 0, rows, 1, &row) {
        tj_val v = tj_load(tj_add(row, o));
        tj_store(tj_add(row, tj_sub(N - 1, o)), v);
        row = tj_add(row, N);
    }
}

TJ_KERNEL(reverse_copy_loop, TJ_PARAMS(TJ_PTR(src, f32), TJ_PTR(dst, f32), TJ_SCALAR(rows, i32)),
          TJ_CONSTS(N))
{
    tj_val o = tj_arange(0, N);
    tj_val from = src, to = dst;
    TJ_FOR(k, 0, rows, 1, &from, &to) {
        tj_val v = tj_load(tj_add(from, o));
        tj_store(tj_add(to, tj_sub(N - 1, o)), v);
        from = tj_add(from, N);
        to = tj_add(to, N);
    }
}

TJ_KERNEL(reverse_where, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(y, f32), TJ_SCALAR(pick_x, i32)), TJ_CONSTS(N))
{
    tj_val o = tj_arange(0, N);
    tj_val p = tj_where(tj_broadcast_to(tj_ne(pick_x, 0), TJ_SHAPE(N)), tj_add(x, o), tj_add(y, o));
    tj_val v = tj_load(p);
    tj_store(tj_add(x, tj_sub(N - 1, o)), v);
}

static const char *mode_name(tj_check_bounds mode)
{
    return mode == TJ_CHECK_BOUNDS_ON ? "checked" : "unchecked";
}

static float *random_floats(int n)
{
    float *x = malloc(sizeof(float) * (size_t)n);
    tl_fill_random(TJ_F32, x, n);
    return x;
}

/* want: every row of n elements of x reversed. */
static void reversed_rows(const float *x, float *want, int rows, int n)
{
    for (int r = 0; r < rows; r++)
        for (int i = 0; i < n; i++)
            want[r * n + i] = x[r * n + n - 1 - i];
}

/* got[i] == want[i] bit for bit, the first mismatches as diagnostics. */
static void check_floats(const char *what, const float *got, const float *want, int n)
{
    int bad = 0;
    for (int i = 0; i < n; i++)
        if (memcmp(&got[i], &want[i], sizeof(float)) != 0 && bad++ < 5)
            tap_diag("  [%d] got %g, expected %g", i, got[i], want[i]);
    tap_ok(bad == 0, "%s", what);
}

static void test_reverse_rows_loop(int rows, int n, tj_check_bounds mode)
{
    int total = rows * n;
    size_t bytes = sizeof(float) * (size_t)total;
    float *x = random_floats(total), *got = malloc(bytes), *want = malloc(bytes);
    reversed_rows(x, want, rows, n);
    tj_buffer b = tl_upload(dev, x, bytes);
    tj_launch_cfg cfg = tl_grid(1, 1, 1);
    cfg.check_bounds = mode;
    char what[128];
    snprintf(what, sizeof what, "%d rows of %d reversed in place through a carried pointer (%s)", rows, n,
             mode_name(mode));
    if (!tl_launch_failed(reverse_rows_loop_launch(dev, &cfg, b, rows, n), what)) {
        tl_download(dev, b, got, bytes);
        check_floats(what, got, want, total);
    }
    tj_buffer_free(dev, b);
    free(x), free(got), free(want);
}

/* Two buffers (the source must stay intact), then one buffer for both. */
static void test_reverse_copy_loop(int rows, int n, tj_check_bounds mode)
{
    int total = rows * n;
    size_t bytes = sizeof(float) * (size_t)total;
    float *x = random_floats(total), *got = malloc(bytes), *want = malloc(bytes);
    reversed_rows(x, want, rows, n);
    tj_buffer src = tl_upload(dev, x, bytes), dst = tl_poisoned(dev, bytes);
    tj_launch_cfg cfg = tl_grid(1, 1, 1);
    cfg.check_bounds = mode;
    char what[160];
    snprintf(what, sizeof what, "%d rows of %d copied reversed through two carried pointers, two buffers (%s)",
             rows, n, mode_name(mode));
    if (!tl_launch_failed(reverse_copy_loop_launch(dev, &cfg, src, dst, rows, n), what)) {
        tl_download(dev, dst, got, bytes);
        check_floats(what, got, want, total);
        tl_download(dev, src, got, bytes);
        check_floats("... and the source is untouched", got, x, total);
    }
    snprintf(what, sizeof what, "%d rows of %d copied reversed through two carried pointers, one buffer (%s)",
             rows, n, mode_name(mode));
    if (!tl_launch_failed(reverse_copy_loop_launch(dev, &cfg, src, src, rows, n), what)) {
        tl_download(dev, src, got, bytes);
        check_floats(what, got, want, total);
    }
    tj_buffer_free(dev, src);
    tj_buffer_free(dev, dst);
    free(x), free(got), free(want);
}

static void test_reverse_where(int n, int pick_x, tj_check_bounds mode)
{
    size_t bytes = sizeof(float) * (size_t)n;
    float *x = random_floats(n), *y = random_floats(n), *got = malloc(bytes), *want = malloc(bytes);
    reversed_rows(pick_x ? x : y, want, 1, n);
    tj_buffer bx = tl_upload(dev, x, bytes), by = tl_upload(dev, y, bytes);
    tj_launch_cfg cfg = tl_grid(1, 1, 1);
    cfg.check_bounds = mode;
    char what[128];
    snprintf(what, sizeof what, "x[%d - 1 - o] = where(.., x, y)[o] picking %s (%s)", n, pick_x ? "x: in place" : "y",
             mode_name(mode));
    if (!tl_launch_failed(reverse_where_launch(dev, &cfg, bx, by, pick_x, n), what)) {
        tl_download(dev, bx, got, bytes);
        check_floats(what, got, want, n);
    }
    tj_buffer_free(dev, bx);
    tj_buffer_free(dev, by);
    free(x), free(y), free(got), free(want);
}

/* ---- the PTX: a barrier where the GPU needs one, none elsewhere ---------- */

static void test_ptx(void)
{
    tj_buffer a, b;
    if (tj_buffer_alloc(dev, 4 * 1024, &a) != TJ_OK || tj_buffer_alloc(dev, 4 * 1024, &b) != TJ_OK)
        tap_bail_out("tj_buffer_alloc: %s", tj_last_error());
    tj_arg in_place[] = {TJ_ARG_BUF(a), TJ_ARG_INT(TJ_I32, 4)};
    tj_arg two[] = {TJ_ARG_BUF(a), TJ_ARG_BUF(b), TJ_ARG_INT(TJ_I32, 4)};
    tj_arg one[] = {TJ_ARG_BUF(a), TJ_ARG_BUF(a), TJ_ARG_INT(TJ_I32, 4)};
    tj_arg where[] = {TJ_ARG_BUF(a), TJ_ARG_BUF(b), TJ_ARG_INT(TJ_I32, 1)};
    tap_ok(tl_barrier_between(reverse_rows_loop, in_place, 2, 8) == 1,
           "PTX: the in-place reversal through a carried pointer has a barrier between load and store");
    tap_ok(tl_barrier_between(reverse_copy_loop, one, 3, 8) == 1,
           "PTX: so has the copy through two carried pointers given one buffer");
    tap_ok(tl_barrier_between(reverse_copy_loop, two, 3, 8) == 0,
           "PTX: the copy through two carried pointers given two buffers has none there");
    tap_ok(tl_barrier_between(reverse_where, where, 3, 8) == 1,
           "PTX: a where() between x and y, stored into x, has a barrier between load and store");
    tj_buffer_free(dev, a);
    tj_buffer_free(dev, b);
}

int main(void)
{
    dev = tl_setup("test_provenance");
    tj_check_bounds modes[] = {TJ_CHECK_BOUNDS_OFF, TJ_CHECK_BOUNDS_ON};
    for (int m = 0; m < 2; m++) {
        test_reverse_rows_loop(5, 8, modes[m]);
        test_reverse_rows_loop(3, 1024, modes[m]);
        test_reverse_copy_loop(5, 8, modes[m]);
        test_reverse_copy_loop(3, 1024, modes[m]);
        test_reverse_where(8, 1, modes[m]);
        test_reverse_where(1024, 1, modes[m]);
        test_reverse_where(1024, 0, modes[m]);
    }
    test_ptx();
    tj_device_close(dev);
    return tap_done();
}
