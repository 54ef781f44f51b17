/* SPDX-License-Identifier: MIT */
/*
 * test_alias.c — a program's loads happen before its later stores, as
 * written, even where the stores overwrite what was loaded.
 *
 * The CPU back end fuses a load into the loop of the store that reads it,
 * and GPU warps run ahead of one another; an in-place permutation of a tile
 * broke both (issue 8: reversing 0..7 in place gave 0 1 2 3 3 2 1 0 on the
 * CPU). Each kernel here permutes a tile onto the memory it loaded from:
 *
 *  - a reversal in place (one parameter), at a tile of 8 and of 1024;
 *  - the same reversal with source and destination as two parameters,
 *    launched first with two buffers and then with one buffer for both (the
 *    variant compiled for distinct buffers must not be reused);
 *  - a row flip of a 2-D tile in place;
 *  - an in-place square transpose by tiles: program (i, j), i < j, swaps
 *    tile (i, j) with tile (j, i) transposed, and a diagonal program
 *    transposes its tile onto itself;
 *  - x[o] = 2 x[o] + 1 in place, which is safe to fuse and must stay right.
 *
 * The GPU half is also checked without a GPU, in the PTX: the in-place
 * reversal and the two-parameter one given one buffer have a barrier
 * between their load and their store, the two-parameter one given two
 * buffers has none there, and vector add and the element-wise in-place
 * update have no barrier at all.
 * tests/gpu/test_alias.gpu runs everything on a GPU where there is one.
 */
#include "ptx_barriers.h"
#include "testlib.h"

static tj_device *dev;

TJ_KERNEL(reverse_in_place, TJ_PARAMS(TJ_PTR(x, f32)), TJ_CONSTS(N))
{
    tj_val o = tj_arange(0, N);
    tj_val v = tj_load(tj_add(x, o));
    tj_store(tj_add(x, tj_sub(N - 1, o)), v);
}

TJ_KERNEL(reverse_copy, TJ_PARAMS(TJ_PTR(src, f32), TJ_PTR(dst, f32)), TJ_CONSTS(N))
{
    tj_val o = tj_arange(0, N);
    tj_val v = tj_load(tj_add(src, o));
    tj_store(tj_add(dst, tj_sub(N - 1, o)), v);
}

/* Each program flips one row of R x C elements (a 2-D tile of R rows). */
TJ_KERNEL(flip_rows, TJ_PARAMS(TJ_PTR(x, f32)), TJ_CONSTS(R, C))
{
    tj_val r = tj_expand_dims(tj_arange(0, R), 1), c = tj_expand_dims(tj_arange(0, C), 0);
    tj_val base = tj_add(x, tj_mul(tj_program_id(0), R * C));
    tj_val v = tj_load(tj_add(tj_add(base, tj_mul(r, C)), c));
    tj_store(tj_add(tj_add(base, tj_mul(r, C)), tj_sub(C - 1, c)), v);
}

/* An n x n matrix (n = T * grid) transposed in place by T x T tiles. */
TJ_KERNEL(transpose_in_place, TJ_PARAMS(TJ_PTR(x, f32), TJ_SCALAR(n, i32)), TJ_CONSTS(T))
{
    tj_val bi = tj_program_id(0), bj = tj_program_id(1);
    tj_val r = tj_expand_dims(tj_arange(0, T), 1), c = tj_expand_dims(tj_arange(0, T), 0);
    tj_val mine = tj_broadcast_to(tj_le(bi, bj), TJ_SHAPE(T, T));
    /* a = tile (bi, bj), b = tile (bj, bi), both as a[r][c] */
    tj_val pa = tj_add(x, tj_add(tj_mul(tj_add(tj_mul(bi, T), r), n), tj_add(tj_mul(bj, T), c)));
    tj_val pb = tj_add(x, tj_add(tj_mul(tj_add(tj_mul(bj, T), r), n), tj_add(tj_mul(bi, T), c)));
    /* where element [r][c] of a goes: row bj*T + c, column bi*T + r */
    tj_val qa = tj_add(x, tj_add(tj_mul(tj_add(tj_mul(bj, T), c), n), tj_add(tj_mul(bi, T), r)));
    tj_val qb = tj_add(x, tj_add(tj_mul(tj_add(tj_mul(bi, T), c), n), tj_add(tj_mul(bj, T), r)));
    tj_val a = tj_load(pa, .mask = mine), b = tj_load(pb, .mask = mine);
    tj_store(qa, a, .mask = mine);
    /* a diagonal program stores once: its tile onto itself, transposed */
    tj_store(qb, b, .mask = tj_broadcast_to(tj_lt(bi, bj), TJ_SHAPE(T, T)));
}

TJ_KERNEL(scale_in_place, TJ_PARAMS(TJ_PTR(x, f32)), TJ_CONSTS(N))
{
    tj_val o = tj_add(tj_mul(tj_program_id(0), N), tj_arange(0, N));
    tj_store(tj_add(x, o), tj_add(tj_mul(tj_load(tj_add(x, o)), 2.0f), 1.0f));
}

TJ_KERNEL(vector_add, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(y, f32), TJ_PTR(out, f32)), TJ_CONSTS(N))
{
    tj_val o = tj_add(tj_mul(tj_program_id(0), N), tj_arange(0, N));
    tj_store(tj_add(out, o), tj_add(tj_load(tj_add(x, o)), tj_load(tj_add(y, o))));
}

static float *random_floats(int n)
{
    float *x = malloc(sizeof(float) * (size_t)n);
    tl_fill_random(TJ_F32, x, n);
    return x;
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

static void test_reverse_in_place(int n)
{
    float *x = random_floats(n), *got = malloc(sizeof(float) * (size_t)n), *want = malloc(sizeof(float) * (size_t)n);
    for (int i = 0; i < n; i++)
        want[i] = x[n - 1 - i];
    tj_buffer b = tl_upload(dev, x, sizeof(float) * (size_t)n);
    tj_launch_cfg cfg = tl_grid(1, 1, 1);
    char what[96];
    snprintf(what, sizeof what, "x[%d - 1 - o] = x[o] reverses the tile in place (N = %d)", n, n);
    if (!tl_launch_failed(reverse_in_place_launch(dev, &cfg, b, n), what)) {
        tl_download(dev, b, got, sizeof(float) * (size_t)n);
        check_floats(what, got, want, n);
    }
    tj_buffer_free(dev, b);
    free(x), free(got), free(want);
}

/* Two buffers first (and the result must be a reversed copy with the
 * source intact), then one buffer as both parameters. */
static void test_reverse_copy(int n)
{
    size_t bytes = sizeof(float) * (size_t)n;
    float *x = random_floats(n), *got = malloc(bytes), *want = malloc(bytes);
    for (int i = 0; i < n; i++)
        want[i] = x[n - 1 - i];
    tj_launch_cfg cfg = tl_grid(1, 1, 1);
    char what[128];
    tj_buffer src = tl_upload(dev, x, bytes), dst = tl_poisoned(dev, bytes);
    snprintf(what, sizeof what, "reverse_copy(src, dst), two buffers (N = %d)", n);
    if (!tl_launch_failed(reverse_copy_launch(dev, &cfg, src, dst, n), what)) {
        tl_download(dev, dst, got, bytes);
        check_floats(what, got, want, n);
        tl_download(dev, src, got, bytes);
        check_floats("... and the source is untouched", got, x, n);
    }
    snprintf(what, sizeof what, "reverse_copy(x, x), one buffer as source and destination (N = %d)", n);
    if (!tl_launch_failed(reverse_copy_launch(dev, &cfg, src, src, n), what)) {
        tl_download(dev, src, got, bytes);
        check_floats(what, got, want, n);
    }
    tj_buffer_free(dev, src);
    tj_buffer_free(dev, dst);
    free(x), free(got), free(want);
}

static void test_flip_rows(int rows, int cols, int programs)
{
    int n = rows * cols * programs;
    size_t bytes = sizeof(float) * (size_t)n;
    float *x = random_floats(n), *got = malloc(bytes), *want = malloc(bytes);
    for (int r = 0; r < rows * programs; r++)
        for (int c = 0; c < cols; c++)
            want[r * cols + c] = x[r * cols + cols - 1 - c];
    tj_buffer b = tl_upload(dev, x, bytes);
    tj_launch_cfg cfg = tl_grid(programs, 1, 1);
    char what[128];
    snprintf(what, sizeof what, "row flip in place, %d x %d tiles, %d programs", rows, cols, programs);
    if (!tl_launch_failed(flip_rows_launch(dev, &cfg, b, rows, cols), what)) {
        tl_download(dev, b, got, bytes);
        check_floats(what, got, want, n);
    }
    tj_buffer_free(dev, b);
    free(x), free(got), free(want);
}

static void test_transpose_in_place(int tile, int tiles)
{
    int n = tile * tiles;
    size_t bytes = sizeof(float) * (size_t)n * (size_t)n;
    float *x = random_floats(n * n), *got = malloc(bytes), *want = malloc(bytes);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            want[i * n + j] = x[j * n + i];
    tj_buffer b = tl_upload(dev, x, bytes);
    tj_launch_cfg cfg = tl_grid(tiles, tiles, 1);
    char what[128];
    snprintf(what, sizeof what, "in-place transpose of %d x %d by %d x %d tiles, diagonal tiles included",
             n, n, tile, tile);
    if (!tl_launch_failed(transpose_in_place_launch(dev, &cfg, b, n, tile), what)) {
        tl_download(dev, b, got, bytes);
        check_floats(what, got, want, n * n);
    }
    tj_buffer_free(dev, b);
    free(x), free(got), free(want);
}

static void test_scale_in_place(int block, int programs)
{
    int n = block * programs;
    size_t bytes = sizeof(float) * (size_t)n;
    float *x = random_floats(n), *got = malloc(bytes), *want = malloc(bytes);
    for (int i = 0; i < n; i++)
        want[i] = x[i] * 2.0f + 1.0f;
    tj_buffer b = tl_upload(dev, x, bytes);
    tj_launch_cfg cfg = tl_grid(programs, 1, 1);
    char what[96];
    snprintf(what, sizeof what, "x[o] = 2 x[o] + 1 in place (N = %d)", block);
    if (!tl_launch_failed(scale_in_place_launch(dev, &cfg, b, block), what)) {
        tl_download(dev, b, got, bytes);
        check_floats(what, got, want, n);
    }
    tj_buffer_free(dev, b);
    free(x), free(got), free(want);
}

/* ---- the PTX: a barrier where the GPU needs one, none elsewhere ---------- */

static int count_barriers(const tj_kernel *k, int64_t n)
{
    char *ptx = NULL;
    if (tj_kernel_ptx(k, &n, 1, "sm_90", 4, &ptx) != TJ_OK)
        return -1;
    int count = 0;
    for (const char *p = ptx; *p; p++)
        count += tl_is_barrier(p);
    free(ptx);
    return count;
}

static void test_ptx(void)
{
    tj_buffer a, b;
    if (tj_buffer_alloc(dev, 4 * 1024, &a) != TJ_OK || tj_buffer_alloc(dev, 4 * 1024, &b) != TJ_OK)
        tap_bail_out("tj_buffer_alloc: %s", tj_last_error());
    tj_arg two[] = {TJ_ARG_BUF(a), TJ_ARG_BUF(b)}, one[] = {TJ_ARG_BUF(a), TJ_ARG_BUF(a)};
    for (int64_t n = 8; n <= 1024; n *= 128) {
        tap_ok(tl_barrier_between(reverse_in_place, NULL, 0, n) == 1,
               "PTX (N = %d): the in-place reversal has a barrier between its load and its store", (int)n);
        tap_ok(tl_barrier_between(reverse_copy, one, 2, n) == 1,
               "PTX (N = %d): so has reverse_copy given one buffer for both", (int)n);
    }
    /* At N = 8 nothing else puts a barrier there (at 1024 the store's layout
     * conversion through shared memory does). */
    tap_ok(tl_barrier_between(reverse_copy, two, 2, 8) == 0,
           "PTX (N = 8): reverse_copy given two buffers has none there");
    int vadd = count_barriers(vector_add, 1024), scale = count_barriers(scale_in_place, 1024);
    tap_ok(vadd == 0, "PTX: vector add has no barrier (%d)", vadd);
    tap_ok(scale == 0, "PTX: x[o] = 2 x[o] + 1 in place has no barrier (%d)", scale);
    tj_buffer_free(dev, a);
    tj_buffer_free(dev, b);
}

int main(void)
{
    dev = tl_setup("test_alias");
    test_reverse_in_place(8);
    test_reverse_in_place(1024);
    test_reverse_copy(8);
    test_reverse_copy(1024);
    test_flip_rows(4, 8, 3);
    test_flip_rows(16, 64, 2);
    test_transpose_in_place(4, 3);
    test_transpose_in_place(32, 4);
    test_scale_in_place(1024, 3);
    test_ptx();
    tj_device_close(dev);
    return tap_done();
}
