/* SPDX-License-Identifier: MIT */
/*
 * test_wide_offsets.c — i32 pointer offsets keep their wrap-around when the
 * CPU forms addresses in i64.
 *
 * The CPU back end computes the address of a full tile's loads and stores in
 * i64 (pointer increments for LLVM) when a check before the loop proves that
 * no intermediate of the i32 offset leaves i32, so the exact and the wrapped
 * value agree. This test runs a strided 2-D gather dst[r, c] = src[r*ld +
 * c*stride + a*b] where a*b is either 0 as 0*0 (nothing wraps: the i64 path)
 * or 0 only modulo 2^32 (a = ±2^k, b = 2^(32-k): the product wraps, so the
 * i32 path must be taken; an i64 address would be 4 GiB off and fault or
 * read other data). Shapes leave ragged edge tiles beside full ones.
 */
#include "testlib.h"

static tj_device *dev;

enum { TILE_R = 8, TILE_C = 32 };

TJ_KERNEL(wrapped_gather,
          TJ_PARAMS(TJ_PTR(src, f32), TJ_PTR(dst, f32), TJ_SCALAR(rows, i32), TJ_SCALAR(cols, i32),
                    TJ_SCALAR(ld, i32), TJ_SCALAR(stride, i32), TJ_SCALAR(a, i32), TJ_SCALAR(b, i32)),
          TJ_CONSTS())
{
    tj_val r = tj_expand_dims(tj_add(tj_mul(tj_program_id(0), TILE_R), tj_arange(0, TILE_R)), 1);
    tj_val c = tj_expand_dims(tj_add(tj_mul(tj_program_id(1), TILE_C), tj_arange(0, TILE_C)), 0);
    tj_val mask = tj_and(tj_lt(r, rows), tj_lt(c, cols));
    /* a * b as a tile, so the product is part of the offset's arithmetic */
    tj_val ab = tj_mul(tj_broadcast_to(a, TJ_SHAPE(TILE_R, TILE_C)), b);
    tj_val off = tj_add(tj_add(tj_mul(r, ld), tj_mul(c, stride)), ab);
    tj_val v = tj_load(tj_add(src, off), .mask = mask);
    tj_store(tj_add(dst, tj_sub(tj_add(tj_mul(r, cols), c), ab)), v, .mask = mask);
}

static void test_gather(int32_t a, int32_t b)
{
    int rows = (int)tl_rand_range(2 * TILE_R, 5 * TILE_R), cols = (int)tl_rand_range(2 * TILE_C, 4 * TILE_C);
    int stride = (int)tl_rand_range(1, 5), ld = cols * stride + (int)tl_rand_range(0, 3);
    size_t nsrc = (size_t)rows * ld, ndst = (size_t)rows * cols;
    float *src = malloc(4 * nsrc), *got = malloc(4 * ndst);
    tl_fill_random(TJ_F32, src, nsrc);
    tj_buffer bs = tl_upload(dev, src, 4 * nsrc), bd = tl_poisoned(dev, 4 * ndst);
    tj_launch_cfg cfg = tl_grid((rows + TILE_R - 1) / TILE_R, (cols + TILE_C - 1) / TILE_C, 1);
    char what[160];
    snprintf(what, sizeof what, "gather %d x %d, ld %d, stride %d, offsets + %d * %d (wraps to 0)", rows,
             cols, ld, stride, a, b);
    if (!tl_launch_failed(wrapped_gather_launch(dev, &cfg, bs, bd, rows, cols, ld, stride, a, b), what)) {
        tl_download(dev, bd, got, 4 * ndst);
        int bad = 0;
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < cols; c++)
                if (memcmp(&got[r * cols + c], &src[(size_t)r * ld + (size_t)c * stride], 4) && bad++ < 5)
                    tap_diag("  [%d, %d] got %g, expected %g", r, c, got[r * cols + c],
                             src[(size_t)r * ld + (size_t)c * stride]);
        tap_ok(bad == 0, "%s", what);
    }
    tj_buffer_free(dev, bs);
    tj_buffer_free(dev, bd);
    free(src), free(got);
}

int main(void)
{
    dev = tl_setup("test_wide_offsets");
    test_gather(0, 0);
    test_gather(1 << 16, 1 << 16);
    for (int i = 0; i < 4; i++) {
        int k = (int)tl_rand_range(2, 30);
        int32_t a = (int32_t)(1u << k), b = (int32_t)(1u << (32 - k));
        test_gather(tl_rand_range(0, 1) ? -a : a, b);
    }
    tj_device_close(dev);
    return tap_done();
}
