/* SPDX-License-Identifier: MIT */
/*
 * test_row_walk.c — kernels that the CPU back end runs in the row walk
 * compute what they compute whole.
 *
 * A kernel whose only work is the store of a 2-D tile, contiguous along
 * the tile's rows, is run on the CPU a few rows at a time for a run of
 * programs along the row (cpu/cpu_rows.c): every program is called once
 * per slice of its rows. A mistake there would skip or repeat rows or
 * programs, hand a slice the wrong rows, cut runs wrongly at the ends of a
 * thread's chunk or of the grid, or let a ragged tile's edge through. The
 * kernels here are of that kind: a strided view copied out densely, with
 * the rows' program id as pid0 or as pid1, a batch in pid2, an element-wise
 * op with a row vector loaded once per column, and a store masked by
 * loaded values (which takes the masked loop only). Tiles have 8 rows (two
 * slices), 16 and 32; matrices are ragged in both
 * dimensions, grids from one program to more than one chunk per thread.
 * Outputs are poisoned and compared everywhere, exactly (the arithmetic is
 * exact in f32), so a missing, repeated or misplaced element shows.
 */
#include "testlib.h"

static tj_device *dev;

/* dst[b, r, c] = src[b, r * ld + c * stride] (* 2 + bias[c] with BIAS);
 * rows r come from pid0 (or pid1 with SWAP), columns from the other. */
TJ_KERNEL(strided_rows,
          TJ_PARAMS(TJ_PTR(src, f32), TJ_PTR(bias, f32), TJ_PTR(dst, f32), TJ_SCALAR(rows, i32),
                    TJ_SCALAR(cols, i32), TJ_SCALAR(ld, i32), TJ_SCALAR(stride, i32)),
          TJ_CONSTS(TR, TC, SWAP, BIAS))
{
    tj_val pr = tj_program_id(SWAP ? 1 : 0), pc = tj_program_id(SWAP ? 0 : 1);
    tj_val batch = tj_program_id(2);
    tj_val r = tj_expand_dims(tj_add(tj_mul(pr, TR), tj_arange(0, TR)), 1);
    tj_val c = tj_expand_dims(tj_add(tj_mul(pc, TC), tj_arange(0, TC)), 0);
    tj_val mask = tj_and(tj_lt(r, rows), tj_lt(c, cols));
    tj_val in = tj_add(src, tj_mul(batch, tj_mul(rows, ld)));
    tj_val v = tj_load(tj_add(in, tj_add(tj_mul(r, ld), tj_mul(c, stride))), .mask = mask);
    if (BIAS)
        v = tj_add(tj_mul(v, 2.0f), tj_load(tj_add(bias, c), .mask = tj_lt(c, cols)));
    tj_val out = tj_add(dst, tj_mul(batch, tj_mul(rows, cols)));
    tj_store(tj_add(out, tj_add(tj_mul(r, cols), c)), v, .mask = mask);
}

/* dst[r, c] = src[r, c] where sel[r, c] is positive; the rest stays as it
 * was. (sel is another array than src: a load read twice would get an
 * array of its own, and the kernel would not be a single loop nest.) */
TJ_KERNEL(selected_rows,
          TJ_PARAMS(TJ_PTR(src, f32), TJ_PTR(sel, f32), TJ_PTR(dst, f32), TJ_SCALAR(rows, i32),
                    TJ_SCALAR(cols, i32)),
          TJ_CONSTS(TR, TC))
{
    tj_val r = tj_expand_dims(tj_add(tj_mul(tj_program_id(0), TR), tj_arange(0, TR)), 1);
    tj_val c = tj_expand_dims(tj_add(tj_mul(tj_program_id(1), TC), tj_arange(0, TC)), 0);
    tj_val in = tj_and(tj_lt(r, rows), tj_lt(c, cols));
    tj_val offs = tj_add(tj_mul(r, cols), c);
    tj_val v = tj_load(tj_add(src, offs), .mask = in);
    tj_val chosen = tj_gt(tj_load(tj_add(sel, offs), .mask = in), 0.0f);
    tj_store(tj_add(dst, offs), v, .mask = tj_and(in, chosen));
}

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

static void test_strided(int tr, int tc, int swap, int bias, int rows, int cols, int stride,
                         int batches)
{
    char what[160];
    snprintf(what, sizeof what, "%dx%d tiles, rows by pid%d%s, %d x %d x %d, stride %d", tr, tc,
             swap, bias ? ", * 2 + bias row" : "", batches, rows, cols, stride);
    int ld = cols * stride + (int)tl_rand_range(0, 3);
    size_t nsrc = (size_t)batches * rows * ld, ndst = (size_t)batches * rows * cols;
    float *src = malloc(nsrc * sizeof *src), *b = malloc((size_t)cols * sizeof *b);
    float *want = malloc(ndst * sizeof *want), *got = malloc(ndst * sizeof *got);
    tl_fill_range(TJ_F32, src, nsrc, -1000, 1000);
    tl_fill_range(TJ_F32, b, (size_t)cols, -1000, 1000);
    for (int k = 0; k < batches; k++)
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < cols; c++) {
                float v = src[(size_t)k * rows * ld + (size_t)r * ld + (size_t)c * stride];
                want[((size_t)k * rows + r) * cols + c] = bias ? v * 2.0f + b[c] : v;
            }
    tj_buffer bs = tl_upload(dev, src, nsrc * sizeof *src);
    tj_buffer bb = tl_upload(dev, b, (size_t)cols * sizeof *b);
    tj_buffer bd = tl_poisoned(dev, ndst * sizeof *got);
    int64_t grid_r = ceil_div(rows, tr), grid_c = ceil_div(cols, tc);
    tj_launch_cfg cfg = tl_grid(swap ? grid_c : grid_r, swap ? grid_r : grid_c, batches);
    if (!tl_launch_failed(strided_rows_launch(dev, &cfg, bs, bb, bd, rows, cols, ld, stride, tr,
                                              tc, swap, bias),
                          what)) {
        tl_download(dev, bd, got, ndst * sizeof *got);
        tl_check(what, TJ_F32, got, want, ndst, 0, 0);
    }
    tj_buffer_free(dev, bs);
    tj_buffer_free(dev, bb);
    tj_buffer_free(dev, bd);
    free(src);
    free(b);
    free(want);
    free(got);
}

static void test_selected(int tr, int tc, int rows, int cols)
{
    char what[96];
    snprintf(what, sizeof what, "store masked by loaded values, %dx%d tiles, %d x %d", tr, tc,
             rows, cols);
    size_t n = (size_t)rows * cols;
    float *src = malloc(n * sizeof *src), *sel = malloc(n * sizeof *sel);
    float *want = malloc(n * sizeof *want), *got = malloc(n * sizeof *got);
    tl_fill_range(TJ_F32, src, n, -1000, 1000);
    tl_fill_range(TJ_F32, sel, n, -1, 1);
    memset(want, TL_POISON, n * sizeof *want);
    for (size_t i = 0; i < n; i++)
        if (sel[i] > 0)
            want[i] = src[i];
    tj_buffer bs = tl_upload(dev, src, n * sizeof *src), bm = tl_upload(dev, sel, n * sizeof *sel);
    tj_buffer bd = tl_poisoned(dev, n * sizeof *got);
    tj_launch_cfg cfg = tl_grid(ceil_div(rows, tr), ceil_div(cols, tc), 1);
    if (!tl_launch_failed(selected_rows_launch(dev, &cfg, bs, bm, bd, rows, cols, tr, tc), what)) {
        tl_download(dev, bd, got, n * sizeof *got);
        tap_ok(memcmp(got, want, n * sizeof *got) == 0, "%s", what);
    }
    tj_buffer_free(dev, bs);
    tj_buffer_free(dev, bm);
    tj_buffer_free(dev, bd);
    free(src);
    free(sel);
    free(want);
    free(got);
}

int main(void)
{
    dev = tl_setup("test_row_walk");
    static const int shapes[][8] = {
        /* tr, tc, swap, bias, rows, cols, stride, batches */
        {16, 64, 0, 0, 300, 1000, 2, 1}, {16, 64, 0, 0, 257, 130, 5, 1}, {16, 64, 1, 0, 300, 1000, 2, 1},
        {8, 8, 0, 0, 41, 67, 3, 1},      {8, 8, 1, 0, 41, 67, 1, 2},     {32, 16, 0, 1, 100, 75, 2, 3},
        {32, 16, 1, 1, 100, 75, 1, 1},   {16, 64, 0, 1, 16, 64, 1, 1},   {16, 64, 0, 0, 7, 3, 2, 1},
        {16, 8, 0, 0, 1000, 20, 1, 1},   {16, 8, 1, 0, 20, 2000, 1, 1},  {8, 64, 0, 0, 4, 5000, 2, 1},
    };
    for (size_t i = 0; i < TL_COUNT(shapes); i++) {
        const int *s = shapes[i];
        test_strided(s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]);
    }
    for (int i = 0; i < 4; i++) {
        static const int trs[] = {8, 16, 32}, tcs[] = {8, 16, 64};
        test_strided(trs[tl_rand_range(0, 2)], tcs[tl_rand_range(0, 2)], (int)tl_rand_range(0, 1),
                     (int)tl_rand_range(0, 1), (int)tl_rand_range(1, 400),
                     (int)tl_rand_range(1, 400), (int)tl_rand_range(1, 4), (int)tl_rand_range(1, 3));
    }
    test_selected(16, 64, 200, 333);
    test_selected(8, 16, 37, 70);
    tj_device_close(dev);
    return tap_done();
}
