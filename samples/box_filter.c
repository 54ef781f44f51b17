/* SPDX-License-Identifier: MIT */
/*
 * box_filter — a 3x3 mean filter over a height x width image of floats,
 * with zero padding.
 *
 * Program (i, j) computes one BLOCK_H x BLOCK_W tile of the output. The nine
 * neighbours are nine shifted loads of the input tile; the C loops over the
 * shifts run while the kernel is built (C is the meta-language), so the tile
 * program holds nine loads and nine adds, no runtime loop. Zero padding is a
 * mask: a shifted element outside the image is not read, and the load gives
 * `other` (0) there instead. The image need not be a multiple of the tile;
 * the store's mask trims the tiles on the bottom and right edges.
 *
 *     usage: box_filter [height width]   (default 1080 x 1920, tiles 16 x 64)
 */
#include "common.h"

TJ_KERNEL(box_filter_kernel,
          TJ_PARAMS(TJ_PTR(src, f32), TJ_PTR(dst, f32), TJ_SCALAR(height, i32),
                    TJ_SCALAR(width, i32)),
          TJ_CONSTS(BLOCK_H, BLOCK_W))
{
    tj_val r = tj_expand_dims(tj_add(tj_mul(tj_program_id(0), BLOCK_H), tj_arange(0, BLOCK_H)), 1);
    tj_val c = tj_expand_dims(tj_add(tj_mul(tj_program_id(1), BLOCK_W), tj_arange(0, BLOCK_W)), 0);

    tj_val sum = tj_zeros(TJ_SHAPE(BLOCK_H, BLOCK_W), TJ_F32);
    for (int dr = -1; dr <= 1; dr++) {
        tj_val rr = tj_add(r, dr);
        tj_val row_ok = tj_and(tj_ge(rr, 0), tj_lt(rr, height));
        for (int dc = -1; dc <= 1; dc++) {
            tj_val cc = tj_add(c, dc);
            tj_val inside = tj_and(row_ok, tj_and(tj_ge(cc, 0), tj_lt(cc, width)));
            tj_val ptrs = tj_add(src, tj_add(tj_mul(rr, width), cc));
            sum = tj_add(sum, tj_load(ptrs, .mask = inside, .other = tj_f32(0)));
        }
    }
    tj_val out_mask = tj_and(tj_lt(r, height), tj_lt(c, width));
    tj_store(tj_add(dst, tj_add(tj_mul(r, width), c)), tj_mul(sum, 1.0f / 9.0f),
             .mask = out_mask);
}

enum { BLOCK_H = 16, BLOCK_W = 64 };

struct launch_args {
    tj_device *dev;
    tj_buffer src, dst;
    int32_t height, width;
};

static void launch(void *ctx)
{
    struct launch_args *a = ctx;
    tj_launch_cfg cfg = {.grid = {cdiv(a->height, BLOCK_H), cdiv(a->width, BLOCK_W)}};
    CHECK(box_filter_kernel_launch(a->dev, &cfg, a->src, a->dst, a->height, a->width, BLOCK_H,
                                   BLOCK_W));
}

/* The same filter in plain C, summing the neighbours in the kernel's order. */
static void box_filter_ref(const float *src, float *dst, int64_t height, int64_t width)
{
    for (int64_t i = 0; i < height; i++)
        for (int64_t j = 0; j < width; j++) {
            float sum = 0;
            for (int64_t di = -1; di <= 1; di++)
                for (int64_t dj = -1; dj <= 1; dj++) {
                    int64_t ii = i + di, jj = j + dj;
                    if (ii >= 0 && ii < height && jj >= 0 && jj < width)
                        sum += src[ii * width + jj];
                }
            dst[i * width + j] = sum * (1.0f / 9.0f);
        }
}

int main(int argc, char **argv)
{
    const int64_t height = size_arg(argc, argv, 1, 1080);
    const int64_t width = size_arg(argc, argv, 2, 1920);
    if (height * width > INT32_MAX) {
        fprintf(stderr, "box_filter: height * width must fit in i32\n");
        return 2;
    }
    const size_t count = (size_t)(height * width);
    tj_device *dev = open_default_device();
    printf("box_filter: %lld x %lld, tiles %d x %d, seed = %llu\n", (long long)height,
           (long long)width, BLOCK_H, BLOCK_W, (unsigned long long)sample_seed());

    float *src = xmalloc(count * sizeof(float));
    float *dst = xmalloc(count * sizeof(float));
    float *want = xmalloc(count * sizeof(float));
    fill_random(src, count, 0, 1);

    struct launch_args args = {dev, device_floats(dev, src, count),
                               device_floats(dev, NULL, count), (int32_t)height,
                               (int32_t)width};
    launch(&args);
    CHECK(tj_buffer_read(dev, args.dst, 0, dst, count * sizeof(float)));
    box_filter_ref(src, want, height, width);
    int64_t bad = first_mismatch(dst, want, count, 1e-6f, 1e-5f);
    if (bad >= 0)
        printf("dst[%lld][%lld] = %g, expected %g\n", (long long)(bad / width),
               (long long)(bad % width), dst[bad], want[bad]);

    double seconds = median_seconds(dev, 10, launch, &args);
    double gbps = 2.0 * (double)count * sizeof(float) / seconds / 1e9;
    printf("%s  box_filter  %.2f GB/s  (%.3f ms, median of 10 runs)\n",
           bad >= 0 ? "FAIL" : "PASS", gbps, seconds * 1e3);

    tj_device_close(dev);
    free(src);
    free(dst);
    free(want);
    return bad >= 0;
}
