/* SPDX-License-Identifier: MIT */
/*
 * test_join_split.c — tj_join, tj_split, tj_interleave and tj_cat (and
 * tj_full_like, tj_zeros_like) on the device under test (TJIT_TEST_DEVICE),
 * bit for bit.
 *
 * Random tiles of every dtype family (f16, bf16, f32, f64, fp8, i8, u8,
 * i64, and i1 made by a comparison), with -0.0, NaN and ±inf among the
 * floats and each dtype's extremes among the integers (the values split
 * must not lose): split of an [N, 2] tile loaded from memory into its
 * columns, join of two [N] tiles and of tiles that broadcast ([R, 1] with
 * [1, C], a scalar with a tile), interleave, split(join(a, b)) == (a, b),
 * and cat of two [N] tiles and of two [R, C] tiles (a's rows first). Then the errors (a last dimension other than 2, pointers, a missing
 * half) and the PTX of each kernel for sm_80 and sm_90 (ptxas checks it
 * where make check sets TJIT_PTXAS).
 */
#include "testlib.h"

enum { N = 256, R = 8, C = 16 };

/* cols: x[N][2] -> c0[N], c1[N]; join: a[N], b[N] -> j[N][2];
 * interleave: a, b -> il[2N]; round trip: split(join(a, b)) -> c0, c1;
 * cat: a, b -> ct[2N]. */
#define JOIN_KERNEL(NAME, DT)                                                                        \
    TJ_KERNEL(NAME,                                                                                  \
              TJ_PARAMS(TJ_PTR(x, DT), TJ_PTR(a, DT), TJ_PTR(b, DT), TJ_PTR(c0, DT), TJ_PTR(c1, DT),    \
                        TJ_PTR(j, DT), TJ_PTR(il, DT), TJ_PTR(r0, DT), TJ_PTR(r1, DT), TJ_PTR(ct, DT)), \
              TJ_CONSTS())                                                                           \
    {                                                                                                \
        tj_val i = tj_arange(0, N), pair = tj_arange(0, 2);                                          \
        tj_val xy = tj_add(tj_mul(tj_expand_dims(i, 1), 2), tj_expand_dims(pair, 0));                \
        tj_val lo, hi;                                                                               \
        tj_split(tj_load(tj_add(x, xy)), &lo, &hi);                                                  \
        tj_store(tj_add(c0, i), lo);                                                                 \
        tj_store(tj_add(c1, i), hi);                                                                 \
        tj_val va = tj_load(tj_add(a, i)), vb = tj_load(tj_add(b, i));                               \
        tj_store(tj_add(j, xy), tj_join(va, vb));                                                    \
        tj_store(tj_add(il, tj_arange(0, 2 * N)), tj_interleave(va, vb));                            \
        tj_val back0, back1;                                                                         \
        tj_split(tj_join(va, vb), &back0, &back1);                                                   \
        tj_store(tj_add(r0, i), back0);                                                              \
        tj_store(tj_add(r1, i), back1);                                                              \
        tj_store(tj_add(ct, tj_arange(0, 2 * N)), tj_cat(va, vb));                                   \
    }
JOIN_KERNEL(join_f16, f16)
JOIN_KERNEL(join_bf16, bf16)
JOIN_KERNEL(join_f32, f32)
JOIN_KERNEL(join_f64, f64)
JOIN_KERNEL(join_f8, f8e4m3)
JOIN_KERNEL(join_i8, i8)
JOIN_KERNEL(join_u8, u8)
JOIN_KERNEL(join_i64, i64)

/* Broadcasting and i1: j[R][C][2] = join(a[R, 1], b[1, C]); s[C][2] =
 * join(7, b[C]); bits: split of join(a > 0, b > 0) stored as i32. */
TJ_KERNEL(join_broadcast,
          TJ_PARAMS(TJ_PTR(a, i32), TJ_PTR(b, i32), TJ_PTR(j, i32), TJ_PTR(s, i32), TJ_PTR(bits, i32)),
          TJ_CONSTS())
{
    tj_val r = tj_arange(0, R), c = tj_arange(0, C), pair = tj_arange(0, 2);
    tj_val va = tj_load(tj_add(a, tj_expand_dims(r, 1))), vb = tj_load(tj_add(b, tj_expand_dims(c, 0)));
    tj_val at = tj_add(tj_mul(tj_add(tj_mul(tj_expand_dims(tj_expand_dims(r, 1), 2), C),
                                     tj_expand_dims(tj_expand_dims(c, 0), 2)), 2),
                       tj_expand_dims(tj_expand_dims(pair, 0), 0));
    tj_store(tj_add(j, at), tj_join(va, vb));
    tj_val b1 = tj_load(tj_add(b, c));
    tj_store(tj_add(s, tj_add(tj_mul(tj_expand_dims(c, 1), 2), tj_expand_dims(pair, 0))), tj_join(7, b1));
    tj_val p, q;
    tj_split(tj_join(tj_gt(b1, 0), tj_lt(b1, 0)), &p, &q);
    tj_store(tj_add(bits, c), tj_add(tj_cast(p, TJ_I32), tj_mul(tj_cast(q, TJ_I32), 2)));
}

/* full_like and zeros_like take the model's shape and dtype: h [R, C] f16
 * gets 2.5 + 0 in f16 (an f32 there would not store into h's f16 without a
 * cast), k [C] i32 gets 7 - 0, s the scalar -3. */
TJ_KERNEL(like, TJ_PARAMS(TJ_PTR(h, f16), TJ_PTR(k, i32), TJ_PTR(s, i64)), TJ_CONSTS())
{
    tj_val at = tj_add(tj_mul(tj_expand_dims(tj_arange(0, R), 1), C), tj_expand_dims(tj_arange(0, C), 0));
    tj_val vh = tj_load(tj_add(h, at)), vk = tj_load(tj_add(k, tj_arange(0, C))), vs = tj_load(s);
    tj_store(tj_add(h, at), tj_add(tj_full_like(vh, 2.5), tj_zeros_like(vh)));
    tj_store(tj_add(k, tj_arange(0, C)), tj_sub(tj_full_like(vk, 7), tj_zeros_like(vk)));
    tj_store(s, tj_full_like(vs, -3));
}
TJ_KERNEL(like_ptr, TJ_PARAMS(TJ_PTR(x, f32)), TJ_CONSTS())
{
    tj_zeros_like(x);
}

TJ_KERNEL(split_odd, TJ_PARAMS(TJ_PTR(x, f32)), TJ_CONSTS())
{
    tj_val lo, hi;
    tj_split(tj_load(tj_add(x, tj_arange(0, 4))), &lo, &hi);
}
TJ_KERNEL(split_scalar, TJ_PARAMS(TJ_PTR(x, f32)), TJ_CONSTS())
{
    tj_val lo, hi;
    tj_split(tj_load(x), &lo, &hi);
}
TJ_KERNEL(join_ptr, TJ_PARAMS(TJ_PTR(x, f32)), TJ_CONSTS())
{
    tj_join(x, x);
}
TJ_KERNEL(cat_rank4, TJ_PARAMS(TJ_PTR(x, f32)), TJ_CONSTS())
{
    tj_val t = tj_reshape(tj_load(tj_add(x, tj_arange(0, 16))), TJ_SHAPE(2, 2, 2, 2));
    tj_cat(t, t);
}
TJ_KERNEL(split_no_half, TJ_PARAMS(TJ_PTR(x, f32)), TJ_CONSTS())
{
    tj_val lo;
    tj_split(tj_load(tj_add(x, tj_arange(0, 2))), &lo, NULL);
}

/* o[2R][C] = cat(a[R][C], b[R][C]) */
TJ_KERNEL(cat_2d, TJ_PARAMS(TJ_PTR(a, i32), TJ_PTR(b, i32), TJ_PTR(o, i32)), TJ_CONSTS())
{
    tj_val rc = tj_add(tj_mul(tj_expand_dims(tj_arange(0, R), 1), C), tj_expand_dims(tj_arange(0, C), 0));
    tj_val rc2 = tj_add(tj_mul(tj_expand_dims(tj_arange(0, 2 * R), 1), C), tj_expand_dims(tj_arange(0, C), 0));
    tj_store(tj_add(o, rc2), tj_cat(tj_load(tj_add(a, rc)), tj_load(tj_add(b, rc))));
}

/* A value of dt for element i: edges first, then random. */
static tl_num value(tj_dtype dt, int i)
{
    if (tl_is_float(dt)) {
        static const double edges[] = {-0.0, 0.0, NAN, INFINITY, -INFINITY, 1.0, -1.0, 0.5};
        int n = dt == TJ_F8E4M3 ? 3 : 8; /* e4m3: no infinities */
        if (i < n)
            return tl_flt(edges[i]);
        return tl_flt(tl_round(dt, tl_rand_double(-100, 100)));
    }
    if (i == 0)
        return tl_int(tl_int_min(dt));
    if (i == 1)
        return tl_int(tl_int_max(dt));
    return tl_int(tl_rand_range(tl_int_min(dt), tl_int_max(dt)));
}

/* Element-by-element identity of bits: NaN matches NaN (a NaN result is
 * the quiet NaN), anything else the same bits. */
static int same(tj_dtype dt, tl_num got, tl_num want)
{
    if (tl_is_float(dt))
        return isnan(want.f) ? isnan(got.f) != 0 : got.f == want.f && signbit(got.f) == signbit(want.f);
    return got.i == want.i;
}

static int compare(const char *what, tj_dtype dt, const uint8_t *got, const uint8_t *want, int n)
{
    int wrong = 0;
    for (int i = 0; i < n; i++) {
        tl_num g = tl_get(dt, got, (size_t)i), w = tl_get(dt, want, (size_t)i);
        if (!same(dt, g, w) && wrong++ < 4) {
            char gs[64], ws[64];
            tl_format(gs, sizeof gs, dt, g), tl_format(ws, sizeof ws, dt, w);
            tap_diag("%s %s [%d]: got %s, expected %s", what, tj_dtype_name(dt), i, gs, ws);
        }
    }
    return tap_ok(!wrong, "%s of %s, bit for bit", what, tj_dtype_name(dt));
}

static void run(tj_device *dev, const tj_kernel *k, tj_dtype dt)
{
    size_t es = tj_dtype_size(dt);
    static uint8_t hx[2 * N * 8], ha[N * 8], hb[N * 8], want[2 * N * 8], got[2 * N * 8];
    for (int i = 0; i < 2 * N; i++)
        tl_set(dt, hx, (size_t)i, value(dt, (i * 7) % (2 * N)));
    for (int i = 0; i < N; i++) {
        tl_set(dt, ha, (size_t)i, value(dt, i));
        tl_set(dt, hb, (size_t)i, value(dt, N - 1 - i));
    }
    tj_buffer bx = tl_upload(dev, hx, 2 * N * es), ba = tl_upload(dev, ha, N * es), bb = tl_upload(dev, hb, N * es);
    tj_buffer out[7];
    size_t sizes[7] = {N * es, N * es, 2 * N * es, 2 * N * es, N * es, N * es, 2 * N * es};
    for (int o = 0; o < 7; o++)
        out[o] = tl_poisoned(dev, sizes[o]);
    tj_launch_cfg cfg = {.grid = {1}};
    tj_arg args[10] = {TJ_ARG_BUF(bx),     TJ_ARG_BUF(ba),     TJ_ARG_BUF(bb),     TJ_ARG_BUF(out[0]),
                       TJ_ARG_BUF(out[1]), TJ_ARG_BUF(out[2]), TJ_ARG_BUF(out[3]), TJ_ARG_BUF(out[4]),
                       TJ_ARG_BUF(out[5]), TJ_ARG_BUF(out[6])};
    char what[64];
    snprintf(what, sizeof what, "join, split, interleave, cat of %s", tj_dtype_name(dt));
    if (!tl_launch_failed(tj_launch(dev, k, &cfg, args, 10, NULL, 0), what)) {
        for (int half = 0; half < 2; half++) {
            for (int i = 0; i < N; i++)
                tl_set(dt, want, (size_t)i, tl_get(dt, hx, (size_t)(2 * i + half)));
            tl_download(dev, out[half], got, N * es);
            compare(half ? "split, second half" : "split, first half", dt, got, want, N);
        }
        for (int i = 0; i < N; i++) {
            tl_set(dt, want, (size_t)(2 * i), tl_get(dt, ha, (size_t)i));
            tl_set(dt, want, (size_t)(2 * i + 1), tl_get(dt, hb, (size_t)i));
        }
        tl_download(dev, out[2], got, 2 * N * es);
        compare("join", dt, got, want, 2 * N);
        tl_download(dev, out[3], got, 2 * N * es);
        compare("interleave", dt, got, want, 2 * N);
        tl_download(dev, out[4], got, N * es);
        compare("split(join(a, b)), a", dt, got, ha, N);
        tl_download(dev, out[5], got, N * es);
        compare("split(join(a, b)), b", dt, got, hb, N);
        memcpy(want, ha, N * es);
        memcpy(want + N * es, hb, N * es);
        tl_download(dev, out[6], got, 2 * N * es);
        compare("cat", dt, got, want, 2 * N);
    } else {
        for (int t = 1; t < 7; t++)
            tap_ok(0, "%s (not run)", what);
    }
    tj_buffer_free(dev, bx), tj_buffer_free(dev, ba), tj_buffer_free(dev, bb);
    for (int o = 0; o < 7; o++)
        tj_buffer_free(dev, out[o]);
}

static void run_cat_2d(tj_device *dev)
{
    int32_t a[R * C], b[R * C], o[2 * R * C];
    for (int i = 0; i < R * C; i++)
        a[i] = (int32_t)tl_rand_range(INT32_MIN, INT32_MAX), b[i] = (int32_t)tl_rand_range(INT32_MIN, INT32_MAX);
    tj_buffer ba = tl_upload(dev, a, sizeof a), bb = tl_upload(dev, b, sizeof b), bo = tl_poisoned(dev, sizeof o);
    tj_launch_cfg cfg = {.grid = {1}};
    tj_arg args[] = {TJ_ARG_BUF(ba), TJ_ARG_BUF(bb), TJ_ARG_BUF(bo)};
    if (!tl_launch_failed(tj_launch(dev, cat_2d, &cfg, args, 3, NULL, 0), "cat of [R, C] tiles")) {
        tl_download(dev, bo, o, sizeof o);
        tap_ok(!memcmp(o, a, sizeof a) && !memcmp(o + R * C, b, sizeof b),
               "cat of two [%d, %d] tiles: a's rows, then b's", R, C);
    }
    tj_buffer_free(dev, ba), tj_buffer_free(dev, bb), tj_buffer_free(dev, bo);
}

static void run_broadcast(tj_device *dev)
{
    int32_t ha[R], hb[C], j[R * C * 2], s[C * 2], bits[C];
    for (int i = 0; i < R; i++)
        ha[i] = (int32_t)tl_rand_range(-1000, 1000);
    for (int i = 0; i < C; i++)
        hb[i] = (int32_t)tl_rand_range(-3, 3);
    tj_buffer ba = tl_upload(dev, ha, sizeof ha), bb = tl_upload(dev, hb, sizeof hb);
    tj_buffer bj = tl_poisoned(dev, sizeof j), bs = tl_poisoned(dev, sizeof s), bbits = tl_poisoned(dev, sizeof bits);
    tj_launch_cfg cfg = {.grid = {1}};
    tj_arg args[] = {TJ_ARG_BUF(ba), TJ_ARG_BUF(bb), TJ_ARG_BUF(bj), TJ_ARG_BUF(bs), TJ_ARG_BUF(bbits)};
    if (tl_launch_failed(tj_launch(dev, join_broadcast, &cfg, args, 5, NULL, 0), "join of broadcast tiles")) {
        tap_ok(0, "join of a scalar (not run)"), tap_ok(0, "split of i1 (not run)");
        return;
    }
    tl_download(dev, bj, j, sizeof j), tl_download(dev, bs, s, sizeof s), tl_download(dev, bbits, bits, sizeof bits);
    int wrong = 0;
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++)
            wrong += j[(r * C + c) * 2] != ha[r] || j[(r * C + c) * 2 + 1] != hb[c];
    tap_ok(!wrong, "join of [%d, 1] and [1, %d] tiles: [%d, %d, 2]", R, C, R, C);
    wrong = 0;
    for (int c = 0; c < C; c++)
        wrong += s[2 * c] != 7 || s[2 * c + 1] != hb[c];
    tap_ok(!wrong, "join of a scalar and a tile");
    wrong = 0;
    for (int c = 0; c < C; c++)
        wrong += bits[c] != (hb[c] > 0) + 2 * (hb[c] < 0);
    tap_ok(!wrong, "split of an i1 join gives the comparisons back");
    tj_buffer_free(dev, ba), tj_buffer_free(dev, bb), tj_buffer_free(dev, bj), tj_buffer_free(dev, bs),
        tj_buffer_free(dev, bbits);
}

static void run_like(tj_device *dev)
{
    uint16_t h[R * C];
    int32_t k[C];
    int64_t sv = 99;
    tj_buffer bh = tl_poisoned(dev, sizeof h), bk = tl_poisoned(dev, sizeof k), bs = tl_upload(dev, &sv, sizeof sv);
    tj_launch_cfg cfg = {.grid = {1}};
    tj_arg args[] = {TJ_ARG_BUF(bh), TJ_ARG_BUF(bk), TJ_ARG_BUF(bs)};
    if (tl_launch_failed(tj_launch(dev, like, &cfg, args, 3, NULL, 0), "full_like and zeros_like"))
        return;
    tl_download(dev, bh, h, sizeof h), tl_download(dev, bk, k, sizeof k), tl_download(dev, bs, &sv, sizeof sv);
    int wrong = sv != -3;
    for (int i = 0; i < R * C; i++)
        wrong += tj_f16_to_f32(h[i]) != 2.5f;
    for (int i = 0; i < C; i++)
        wrong += k[i] != 7;
    tap_ok(!wrong, "full_like and zeros_like take the model's shape and dtype (f16 tile, i32 tile, i64 scalar)");
    tj_buffer_free(dev, bh), tj_buffer_free(dev, bk), tj_buffer_free(dev, bs);
}

int main(void)
{
    tj_device *dev = tl_setup("test_join_split");
    static const tj_dtype dts[] = {TJ_F16, TJ_BF16, TJ_F32, TJ_F64, TJ_F8E4M3, TJ_I8, TJ_U8, TJ_I64};
    const tj_kernel *ks[] = {join_f16, join_bf16, join_f32, join_f64,
                             join_f8,  join_i8,   join_u8,  join_i64};
    tap_plan(8 * 7 + 3 + 1 + 5 + 1 + 2);
    for (int d = 0; d < 8; d++)
        run(dev, ks[d], dts[d]);
    run_broadcast(dev);
    run_cat_2d(dev);
    run_like(dev);
    tl_build_refused(like_ptr, TJ_ERR_TYPE, "'full_like'", "the model must be numbers");
    tl_build_refused(split_odd, TJ_ERR_SHAPE, NULL, "last dimension is 2, got f32[4]");
    tl_build_refused(split_scalar, TJ_ERR_SHAPE, NULL, "last dimension is 2");
    tl_build_refused(join_ptr, TJ_ERR_TYPE, NULL, "no rule for 'join'");
    tl_build_refused(split_no_half, TJ_ERR_INVALID_ARG, NULL, "both halves");
    tl_build_refused(cat_rank4, TJ_ERR_SHAPE, "'cat'", "tiles of at most 3 dimensions");
    int ptx_ok = 1;
    for (int d = 0; d <= 9; d++)
        for (int t = 0; t < 2; t++) {
            char *ptx = NULL;
            const tj_kernel *k = d < 8 ? ks[d] : d == 8 ? join_broadcast : cat_2d;
            if (tj_kernel_ptx(k, NULL, 0, t ? "sm_90" : "sm_80", 4, &ptx) != TJ_OK)
                ptx_ok = 0, tap_diag("%s: %s", k->name, tj_last_error());
            free(ptx);
        }
    tap_ok(ptx_ok, "PTX of every kernel, sm_80 and sm_90");
    tj_device_close(dev);
    return tap_done();
}
