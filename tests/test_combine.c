/* SPDX-License-Identifier: MIT */
/*
 * test_combine.c — reductions and scans with a combine function of the
 * user's (tj_reduce, tj_reduce_n, tj_associative_scan, _n), tj_cummax and
 * tj_cummin, .reverse on scans and .keep_dims on reductions, tj_xor_sum,
 * tj_softmax and tj_ravel, on the device
 * under test (TJIT_TEST_DEVICE), against C loops.
 *
 * The order is the point. Composing affine maps x -> m x + k is associative
 * but not commutative, and in wrapping i32 arithmetic it is exact, so a
 * reduction or a scan that combined out of index order, or put the later
 * part first, would give other numbers than the C fold in index order.
 * "The first element of largest magnitude" (ties go to the earlier one)
 * checks the same with floats, bit for bit. cummax and cummin run over
 * floats with NaNs (ignored, as by tj_maximum) and over i8; the reversed
 * cumsum of f32 is sequential from the end, so bit for bit too.
 * Then the errors (each naming the kernel, the op and the user's file)
 * and the PTX of every kernel for sm_80 and sm_90.
 */
#include "testlib.h"

enum { R = 8, C = 16 };

/* The affine map x -> a[0] x + a[1], then b's. */
static void compose(const tj_val *a, const tj_val *b, tj_val *out, void *ctx)
{
    (void)ctx;
    out[0] = tj_mul(a[0], b[0]);
    out[1] = tj_add(tj_mul(b[0], a[1]), b[1]);
}

/* Of a and b, the one of larger magnitude; a on a tie; NaNs are passed
 * over (so that the function is associative with them too). */
static tj_val first_max_abs(tj_val a, tj_val b)
{
    return tj_where(tj_or(tj_ge(tj_abs(a), tj_abs(b)), tj_isnan(b)), a, b);
}

/* m, k [R, C]: rm0/rk0 [C] the composition down each column, rm1/rk1 [R]
 * along each row (kept as [R, 1]), sm/sk [R, C] the running composition
 * along each row, tm/tk [R, C] up each column (reversed), am/ak [1] over
 * all R*C elements in row-major order. */
TJ_KERNEL(affine_i32,
          TJ_PARAMS(TJ_PTR(m, i32), TJ_PTR(k, i32), TJ_PTR(rm0, i32), TJ_PTR(rk0, i32), TJ_PTR(rm1, i32),
                    TJ_PTR(rk1, i32), TJ_PTR(sm, i32), TJ_PTR(sk, i32), TJ_PTR(tm, i32), TJ_PTR(tk, i32),
                    TJ_PTR(am, i32), TJ_PTR(ak, i32)),
          TJ_CONSTS())
{
    tj_val r = tj_expand_dims(tj_arange(0, R), 1), c = tj_expand_dims(tj_arange(0, C), 0);
    tj_val at = tj_add(tj_mul(r, C), c);
    tj_val xs[2] = {tj_load(tj_add(m, at)), tj_load(tj_add(k, at))}, out[2];
    tj_reduce_n(2, xs, out, 0, compose, NULL);
    tj_store(tj_add(rm0, tj_arange(0, C)), out[0]);
    tj_store(tj_add(rk0, tj_arange(0, C)), out[1]);
    tj_reduce_n(2, xs, out, -1, compose, NULL, .keep_dims = 1);
    tj_store(tj_add(rm1, r), out[0]);
    tj_store(tj_add(rk1, r), out[1]);
    tj_associative_scan_n(2, xs, out, 1, compose, NULL);
    tj_store(tj_add(sm, at), out[0]);
    tj_store(tj_add(sk, at), out[1]);
    tj_associative_scan_n(2, xs, out, 0, compose, NULL, .reverse = 1);
    tj_store(tj_add(tm, at), out[0]);
    tj_store(tj_add(tk, at), out[1]);
    tj_val flat[2] = {tj_ravel(xs[0]), tj_ravel(xs[1])};
    tj_reduce_n(2, flat, out, 0, compose, NULL);
    tj_store(am, out[0]);
    tj_store(ak, out[1]);
}

/* x f32 [R, C] with NaNs: big0 [C] first_max_abs down the columns, big1
 * [R] along the rows, hi [R, C] cummax along rows, lo [R, C] cummin up
 * the columns (reversed), rs [R, C] cumsum along rows from the end, mx
 * [R] max along rows with NaN propagated, kept as [R, 1]. */
TJ_KERNEL(floats_f32,
          TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(big0, f32), TJ_PTR(big1, f32), TJ_PTR(hi, f32), TJ_PTR(lo, f32),
                    TJ_PTR(rs, f32), TJ_PTR(mx, f32)),
          TJ_CONSTS())
{
    tj_val r = tj_expand_dims(tj_arange(0, R), 1), c = tj_expand_dims(tj_arange(0, C), 0);
    tj_val at = tj_add(tj_mul(r, C), c), v = tj_load(tj_add(x, at));
    tj_store(tj_add(big0, tj_arange(0, C)), tj_reduce(v, 0, first_max_abs));
    tj_store(tj_add(big1, tj_arange(0, R)), tj_reduce(v, 1, first_max_abs));
    tj_store(tj_add(hi, at), tj_cummax(v, 1));
    tj_store(tj_add(lo, at), tj_cummin(v, 0, .reverse = 1));
    tj_store(tj_add(rs, at), tj_cumsum(v, 1, .reverse = 1));
    tj_store(tj_add(mx, r), tj_max(v, 1, .propagate_nan = TJ_PROPAGATE_NAN_ALL, .keep_dims = 1));
}

/* x i8 [R, C]: hi [R, C] cummax down the columns, lo cummin along rows
 * reversed, d [R, C] x minus its row's sum (kept as [R, 1]), in i32. */
TJ_KERNEL(ints_i8, TJ_PARAMS(TJ_PTR(x, i8), TJ_PTR(hi, i8), TJ_PTR(lo, i8), TJ_PTR(d, i32)), TJ_CONSTS())
{
    tj_val r = tj_expand_dims(tj_arange(0, R), 1), c = tj_expand_dims(tj_arange(0, C), 0);
    tj_val at = tj_add(tj_mul(r, C), c), v = tj_load(tj_add(x, at));
    tj_store(tj_add(hi, at), tj_cummax(v, 0));
    tj_store(tj_add(lo, at), tj_cummin(v, -1, .reverse = 1));
    tj_store(tj_add(d, at), tj_sub(tj_cast(v, TJ_I32), tj_sum(v, 1, .keep_dims = 1)));
}

/* x i32 [R, C]: xr [R, 1] the xor of each row (kept), xc [C] of each
 * column; y f32 [R, C]: sm its softmax along rows. */
TJ_KERNEL(library_ops, TJ_PARAMS(TJ_PTR(x, i32), TJ_PTR(xr, i32), TJ_PTR(xc, i32), TJ_PTR(y, f32), TJ_PTR(sm, f32)),
          TJ_CONSTS())
{
    tj_val r = tj_expand_dims(tj_arange(0, R), 1), c = tj_expand_dims(tj_arange(0, C), 0);
    tj_val at = tj_add(tj_mul(r, C), c), v = tj_load(tj_add(x, at));
    tj_store(tj_add(xr, r), tj_xor_sum(v, 1, .keep_dims = 1));
    tj_store(tj_add(xc, tj_arange(0, C)), tj_xor_sum(v, 0));
    tj_store(tj_add(sm, at), tj_softmax(tj_load(tj_add(y, at)), 1));
}

/* Ill-formed combines and options. */
static tj_val to_f32(tj_val a, tj_val b) { return tj_cast(tj_add(a, b), TJ_F32); }
static tj_val row_sum(tj_val a, tj_val b) { return tj_sum(tj_add(a, b), 0); }
TJ_KERNEL(combine_dtype, TJ_PARAMS(TJ_PTR(x, i32)), TJ_CONSTS())
{
    tj_reduce(tj_load(tj_add(x, tj_arange(0, 8))), 0, to_f32);
}
TJ_KERNEL(combine_shape, TJ_PARAMS(TJ_PTR(x, i32)), TJ_CONSTS())
{
    tj_associative_scan(tj_load(tj_add(x, tj_arange(0, 8))), 0, row_sum);
}
TJ_KERNEL(combine_null, TJ_PARAMS(TJ_PTR(x, i32)), TJ_CONSTS())
{
    tj_reduce(tj_load(tj_add(x, tj_arange(0, 8))), 0, NULL);
}
TJ_KERNEL(combine_scalar, TJ_PARAMS(TJ_PTR(x, i32)), TJ_CONSTS())
{
    tj_associative_scan(tj_load(x), 0, first_max_abs);
}
TJ_KERNEL(sum_propagate_nan, TJ_PARAMS(TJ_PTR(x, f32)), TJ_CONSTS())
{
    tj_sum(tj_load(tj_add(x, tj_arange(0, 8))), 0, .propagate_nan = TJ_PROPAGATE_NAN_ALL);
}
TJ_KERNEL(xor_sum_float, TJ_PARAMS(TJ_PTR(x, f32)), TJ_CONSTS())
{
    tj_xor_sum(tj_load(tj_add(x, tj_arange(0, 8))), 0);
}
TJ_KERNEL(combine_none, TJ_PARAMS(TJ_PTR(x, i32)), TJ_CONSTS())
{
    tj_val out[1];
    tj_reduce_n(0, NULL, out, 0, compose, NULL);
}

/* The composition of (m, k) over n elements, from at[0] by step. */
static void fold(const int32_t *m, const int32_t *k, int start, int step, int n, int32_t *om, int32_t *ok)
{
    uint32_t am = 1, ak = 0;
    for (int i = 0, at = start; i < n; i++, at += step) {
        uint32_t bm = (uint32_t)m[at], bk = (uint32_t)k[at];
        ak = bm * ak + bk;
        am = am * bm;
    }
    *om = (int32_t)am, *ok = (int32_t)ak;
}

static void run_affine(tj_device *dev)
{
    int32_t m[R * C], k[R * C];
    for (int i = 0; i < R * C; i++)
        /* odd m: invertible mod 2^32, so no element drops out of a product */
        m[i] = (int32_t)(2 * tl_rand_range(-5, 4) + 1), k[i] = (int32_t)tl_rand_range(-1000, 1000);
    enum { NOUT = 10 };
    size_t sizes[NOUT] = {C, C, R, R, R * C, R * C, R * C, R * C, 1, 1};
    tj_buffer bm = tl_upload(dev, m, sizeof m), bk = tl_upload(dev, k, sizeof k), b[NOUT];
    tj_arg args[2 + NOUT] = {TJ_ARG_BUF(bm), TJ_ARG_BUF(bk)};
    for (int i = 0; i < NOUT; i++)
        b[i] = tl_poisoned(dev, sizes[i] * 4), args[2 + i] = (tj_arg)TJ_ARG_BUF(b[i]);
    tj_launch_cfg cfg = {.grid = {1}};
    if (tl_launch_failed(tj_launch(dev, affine_i32, &cfg, args, 2 + NOUT, NULL, 0), "affine maps")) {
        for (int i = 0; i < 5; i++)
            tap_ok(0, "affine maps (not run)");
        return;
    }
    int32_t got[NOUT][R * C];
    for (int i = 0; i < NOUT; i++)
        tl_download(dev, b[i], got[i], sizes[i] * 4);
    int wrong[5] = {0};
    int32_t wm, wk;
    for (int j = 0; j < C; j++) { /* down column j */
        fold(m, k, j, C, R, &wm, &wk);
        wrong[0] += got[0][j] != wm || got[1][j] != wk;
    }
    for (int i = 0; i < R; i++) { /* along row i */
        fold(m, k, i * C, 1, C, &wm, &wk);
        wrong[1] += got[2][i] != wm || got[3][i] != wk;
        for (int j = 0; j < C; j++) {
            fold(m, k, i * C, 1, j + 1, &wm, &wk);
            wrong[2] += got[4][i * C + j] != wm || got[5][i * C + j] != wk;
        }
    }
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) { /* up column j from the last row to row i */
            fold(m, k, (R - 1) * C + j, -C, R - i, &wm, &wk);
            wrong[3] += got[6][i * C + j] != wm || got[7][i * C + j] != wk;
        }
    fold(m, k, 0, 1, R * C, &wm, &wk);
    wrong[4] = got[8][0] != wm || got[9][0] != wk;
    tap_ok(!wrong[0], "tj_reduce_n of affine maps down the columns, in index order (%d wrong)", wrong[0]);
    tap_ok(!wrong[1], "tj_reduce_n along the rows, .keep_dims ([R, 1]) (%d wrong)", wrong[1]);
    tap_ok(!wrong[2], "tj_associative_scan_n along the rows, earlier part first (%d wrong)", wrong[2]);
    tap_ok(!wrong[3], "tj_associative_scan_n up the columns, .reverse (%d wrong)", wrong[3]);
    tap_ok(!wrong[4], "tj_reduce_n of a 1-D tile to scalars");
    tj_buffer_free(dev, bm), tj_buffer_free(dev, bk);
    for (int i = 0; i < NOUT; i++)
        tj_buffer_free(dev, b[i]);
}

/* a > b as tj_maximum orders floats (NaN below every number: ignored) */
static float fmax_ignoring_nan(float a, float b) { return isnan(a) ? b : isnan(b) ? a : a >= b ? a : b; }
static float fmin_ignoring_nan(float a, float b) { return isnan(a) ? b : isnan(b) ? a : a <= b ? a : b; }
static float first_max_abs_c(float a, float b) { return fabsf(a) >= fabsf(b) || isnan(b) ? a : b; }
static int same_float(float got, float want) { return memcmp(&got, &want, 4) == 0 || (isnan(got) && isnan(want)); }

static void run_floats(tj_device *dev)
{
    float x[R * C];
    for (int i = 0; i < R * C; i++) /* magnitudes in steps of 1/4: ties happen */
        x[i] = (float)tl_rand_range(-12, 12) / 4 + (tl_rand_range(0, 1) ? 0.0f : 0.125f);
    for (int i = 0; i < 12; i++)
        x[tl_rand_range(0, R * C - 1)] = NAN;
    x[0] = x[1] = NAN; /* a row that starts with NaNs */
    enum { NOUT = 6 };
    size_t sizes[NOUT] = {C, R, R * C, R * C, R * C, R};
    tj_buffer bx = tl_upload(dev, x, sizeof x), b[NOUT];
    tj_arg args[1 + NOUT] = {TJ_ARG_BUF(bx)};
    for (int i = 0; i < NOUT; i++)
        b[i] = tl_poisoned(dev, sizes[i] * 4), args[1 + i] = (tj_arg)TJ_ARG_BUF(b[i]);
    tj_launch_cfg cfg = {.grid = {1}};
    if (tl_launch_failed(tj_launch(dev, floats_f32, &cfg, args, 1 + NOUT, NULL, 0), "f32 combines")) {
        for (int i = 0; i < 5; i++)
            tap_ok(0, "f32 combines (not run)");
        return;
    }
    float got[NOUT][R * C];
    for (int i = 0; i < NOUT; i++)
        tl_download(dev, b[i], got[i], sizes[i] * 4);
    int wrong[5] = {0};
    for (int j = 0; j < C; j++) {
        float w = x[j];
        for (int i = 1; i < R; i++)
            w = first_max_abs_c(w, x[i * C + j]);
        wrong[0] += !same_float(got[0][j], w);
    }
    for (int i = 0; i < R; i++) {
        float w = x[i * C], hi = x[i * C], sum = 0, mx = x[i * C];
        for (int j = 1; j < C; j++)
            w = first_max_abs_c(w, x[i * C + j]);
        wrong[0] += !same_float(got[1][i], w);
        for (int j = 0; j < C; j++) {
            hi = j ? fmax_ignoring_nan(hi, x[i * C + j]) : hi;
            wrong[1] += !same_float(got[2][i * C + j], hi);
            mx = isnan(mx) || isnan(x[i * C + j]) ? NAN : fmaxf(mx, x[i * C + j]);
        }
        for (int j = C - 1; j >= 0; j--) {
            sum += x[i * C + j];
            wrong[3] += !same_float(got[4][i * C + j], sum);
        }
        wrong[4] += !same_float(got[5][i], mx);
    }
    for (int j = 0; j < C; j++) {
        float lo = x[(R - 1) * C + j];
        for (int i = R - 1; i >= 0; i--) {
            lo = i == R - 1 ? lo : fmin_ignoring_nan(lo, x[i * C + j]);
            wrong[2] += !same_float(got[3][i * C + j], lo);
        }
    }
    tap_ok(!wrong[0], "tj_reduce(first_max_abs) of f32 along each axis, ties to the earlier, bit for bit (%d wrong)",
           wrong[0]);
    tap_ok(!wrong[1], "tj_cummax of f32 with NaNs along rows (%d wrong)", wrong[1]);
    tap_ok(!wrong[2], "tj_cummin of f32 with NaNs up the columns, .reverse (%d wrong)", wrong[2]);
    tap_ok(!wrong[3], "tj_cumsum of f32, .reverse, sequential from the end (%d wrong)", wrong[3]);
    tap_ok(!wrong[4], "tj_max with .propagate_nan and .keep_dims (%d wrong)", wrong[4]);
    tj_buffer_free(dev, bx);
    for (int i = 0; i < NOUT; i++)
        tj_buffer_free(dev, b[i]);
}

static void run_ints(tj_device *dev)
{
    int8_t x[R * C], hi[R * C], lo[R * C];
    int32_t d[R * C];
    for (int i = 0; i < R * C; i++)
        x[i] = (int8_t)tl_rand_range(-128, 127);
    tj_buffer bx = tl_upload(dev, x, sizeof x), bh = tl_poisoned(dev, sizeof hi), bl = tl_poisoned(dev, sizeof lo),
              bd = tl_poisoned(dev, sizeof d);
    tj_arg args[] = {TJ_ARG_BUF(bx), TJ_ARG_BUF(bh), TJ_ARG_BUF(bl), TJ_ARG_BUF(bd)};
    tj_launch_cfg cfg = {.grid = {1}};
    if (tl_launch_failed(tj_launch(dev, ints_i8, &cfg, args, 4, NULL, 0), "i8 scans")) {
        tap_ok(0, "i8 scans (not run)"), tap_ok(0, "i8 sum (not run)");
        return;
    }
    tl_download(dev, bh, hi, sizeof hi), tl_download(dev, bl, lo, sizeof lo), tl_download(dev, bd, d, sizeof d);
    int wrong = 0, wrong_d = 0;
    for (int j = 0; j < C; j++)
        for (int i = 0, m = x[j]; i < R; i++) {
            m = x[i * C + j] > m ? x[i * C + j] : m;
            wrong += hi[i * C + j] != m;
        }
    for (int i = 0; i < R; i++) {
        int32_t sum = 0;
        for (int j = C - 1, m = x[i * C + C - 1]; j >= 0; j--) {
            m = x[i * C + j] < m ? x[i * C + j] : m;
            wrong += lo[i * C + j] != m;
            sum += x[i * C + j];
        }
        for (int j = 0; j < C; j++)
            wrong_d += d[i * C + j] != x[i * C + j] - sum;
    }
    tap_ok(!wrong, "tj_cummax down the columns and reversed tj_cummin along rows of i8 (%d wrong)", wrong);
    tap_ok(!wrong_d, "x - tj_sum(x, 1, .keep_dims = 1) of i8 broadcasts as [R, 1] (%d wrong)", wrong_d);
    tj_buffer_free(dev, bx), tj_buffer_free(dev, bh), tj_buffer_free(dev, bl), tj_buffer_free(dev, bd);
}

static void run_library_ops(tj_device *dev)
{
    int32_t x[R * C], xr[R], xc[C];
    float y[R * C], sm[R * C];
    for (int i = 0; i < R * C; i++)
        x[i] = (int32_t)tl_rand_u64(), y[i] = (float)tl_rand_double(-20, 20);
    tj_buffer bx = tl_upload(dev, x, sizeof x), bxr = tl_poisoned(dev, sizeof xr), bxc = tl_poisoned(dev, sizeof xc);
    tj_buffer by = tl_upload(dev, y, sizeof y), bsm = tl_poisoned(dev, sizeof sm);
    tj_arg args[] = {TJ_ARG_BUF(bx), TJ_ARG_BUF(bxr), TJ_ARG_BUF(bxc), TJ_ARG_BUF(by), TJ_ARG_BUF(bsm)};
    tj_launch_cfg cfg = {.grid = {1}};
    if (tl_launch_failed(tj_launch(dev, library_ops, &cfg, args, 5, NULL, 0), "xor_sum and softmax")) {
        tap_ok(0, "xor_sum (not run)"), tap_ok(0, "softmax (not run)");
        return;
    }
    tl_download(dev, bxr, xr, sizeof xr), tl_download(dev, bxc, xc, sizeof xc), tl_download(dev, bsm, sm, sizeof sm);
    int wrong = 0, wrong_sm = 0;
    for (int i = 0; i < R; i++) {
        int32_t want = 0;
        double max = -INFINITY, sum = 0;
        for (int j = 0; j < C; j++)
            want ^= x[i * C + j], max = fmax(max, y[i * C + j]);
        wrong += xr[i] != want;
        for (int j = 0; j < C; j++)
            sum += exp(y[i * C + j] - max);
        for (int j = 0; j < C; j++)
            wrong_sm += !tl_close(sm[i * C + j], exp(y[i * C + j] - max) / sum, 1e-5, 1e-30);
    }
    for (int j = 0; j < C; j++) {
        int32_t want = 0;
        for (int i = 0; i < R; i++)
            want ^= x[i * C + j];
        wrong += xc[j] != want;
    }
    tap_ok(!wrong, "tj_xor_sum of i32 along each axis (.keep_dims on one) (%d wrong)", wrong);
    tap_ok(!wrong_sm, "tj_softmax of f32 along rows, within 1e-5 (%d wrong)", wrong_sm);
    tj_buffer_free(dev, bx), tj_buffer_free(dev, bxr), tj_buffer_free(dev, bxc), tj_buffer_free(dev, by),
        tj_buffer_free(dev, bsm);
}

int main(void)
{
    tj_device *dev = tl_setup("test_combine");
    tap_plan(5 + 5 + 2 + 2 + 7 + 1);
    run_affine(dev);
    run_floats(dev);
    run_ints(dev);
    run_library_ops(dev);
    tl_build_refused(combine_dtype, TJ_ERR_TYPE, "'reduce'", "combine function gave f32");
    tl_build_refused(combine_shape, TJ_ERR_SHAPE, "'associative_scan'", "element by element");
    tl_build_refused(combine_null, TJ_ERR_INVALID_ARG, "'reduce'", "no combine function");
    tl_build_refused(combine_scalar, TJ_ERR_SHAPE, "'associative_scan'", "takes a tile");
    tl_build_refused(sum_propagate_nan, TJ_ERR_BUILD, "'sum'", ".propagate_nan is for max");
    tl_build_refused(xor_sum_float, TJ_ERR_TYPE, "'xor_sum'", "takes integers");
    tl_build_refused(combine_none, TJ_ERR_INVALID_ARG, "'reduce'", "1 to 16 tiles");
    const tj_kernel *ks[] = {affine_i32, floats_f32, ints_i8, library_ops};
    tl_ptx_of_every(ks, (int)TL_COUNT(ks));
    tj_device_close(dev);
    return tap_done();
}
