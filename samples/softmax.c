/* SPDX-License-Identifier: MIT */
/*
 * softmax — row-wise softmax of a rows x cols matrix of floats.
 *
 * One program per row: it loads the whole row as one tile of BLOCK =
 * next power of two >= cols elements, subtracts the row's maximum (so exp
 * cannot overflow), exponentiates, and divides by the sum. The lanes past
 * the end of the row are masked off and load -inf, the one value that
 * leaves both reductions unchanged: it never wins the max, and
 * exp(-inf - max) = 0 adds nothing to the sum. The row stride is an
 * argument, as it would be for a view of a larger matrix.
 *
 *     usage: softmax [rows cols]     (default 4096 x 781)
 */
#include "common.h"
#include "softmax_kernel.h"

struct launch_args {
    tj_device *dev;
    tj_buffer src, dst;
    int32_t rows, cols;
    int64_t block;
};

static void launch(void *ctx)
{
    struct launch_args *a = ctx;
    tj_launch_cfg cfg = {.grid = {a->rows}};
    CHECK(softmax_kernel_launch(a->dev, &cfg, a->src, a->dst, a->cols, a->cols, a->block));
}

static void softmax_ref(const float *src, float *dst, int64_t rows, int64_t cols)
{
    for (int64_t i = 0; i < rows; i++) {
        const float *x = src + i * cols;
        float *y = dst + i * cols;
        float max = -INFINITY, sum = 0;
        for (int64_t j = 0; j < cols; j++)
            max = fmaxf(max, x[j]);
        for (int64_t j = 0; j < cols; j++)
            sum += y[j] = expf(x[j] - max);
        for (int64_t j = 0; j < cols; j++)
            y[j] /= sum;
    }
}

int main(int argc, char **argv)
{
    const int64_t rows = size_arg(argc, argv, 1, 4096);
    const int64_t cols = size_arg(argc, argv, 2, 781);
    if (rows * cols > INT32_MAX || cols > (1 << 20)) {
        fprintf(stderr, "softmax: rows * cols must fit in i32, and cols be at most 2^20\n");
        return 2;
    }
    const size_t count = (size_t)(rows * cols);
    tj_device *dev = open_default_device();
    struct launch_args args = {dev, {0}, {0}, (int32_t)rows, (int32_t)cols, next_pow2(cols)};
    printf("softmax: %lld x %lld, BLOCK = %lld, seed = %llu\n", (long long)rows,
           (long long)cols, (long long)args.block, (unsigned long long)sample_seed());

    float *src = xmalloc(count * sizeof(float));
    float *dst = xmalloc(count * sizeof(float));
    float *want = xmalloc(count * sizeof(float));
    fill_random(src, count, -10, 10);

    args.src = device_floats(dev, src, count);
    args.dst = device_floats(dev, NULL, count);
    launch(&args);
    CHECK(tj_buffer_read(dev, args.dst, 0, dst, count * sizeof(float)));
    softmax_ref(src, want, rows, cols);
    /* The sums may be taken in another order (a tree, vector lanes), and
     * exp may be a different approximation: compare with a tolerance. */
    int64_t bad = first_mismatch(dst, want, count, 1e-7f, 1e-4f);
    if (bad >= 0)
        printf("dst[%lld][%lld] = %g, expected %g\n", (long long)(bad / cols),
               (long long)(bad % cols), dst[bad], want[bad]);

    double seconds = median_seconds(dev, 10, launch, &args);
    double gbps = 2.0 * (double)count * sizeof(float) / seconds / 1e9;
    printf("%s  softmax  %.2f GB/s  (%.3f ms, median of 10 runs)\n",
           bad >= 0 ? "FAIL" : "PASS", gbps, seconds * 1e3);

    tj_device_close(dev);
    free(src);
    free(dst);
    free(want);
    return bad >= 0;
}
