/* SPDX-License-Identifier: MIT */
/*
 * vector_add — the first tjit program: out = x + y over n floats.
 *
 * Each program instance adds one block of BLOCK elements. Its offsets are a
 * tile built from the program id and an arange; the last block runs past n,
 * so every load and store carries the mask offs < n (a ragged tail is the
 * normal case, not a special one). The host side opens the default device,
 * launches a 1-D grid of cdiv(n, BLOCK) programs through the typed entry
 * point TJ_KERNEL defines, and checks the result against a C loop.
 *
 *     usage: vector_add [n]        (default n = 10^7 + 37)
 */
#include "common.h"

TJ_KERNEL(add_kernel,
          TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(y, f32), TJ_PTR(out, f32), TJ_SCALAR(n, i32)),
          TJ_CONSTS(BLOCK))
{
    tj_val pid = tj_program_id(0);
    tj_val offs = tj_add(tj_mul(pid, BLOCK), tj_arange(0, BLOCK));
    tj_val mask = tj_lt(offs, n);
    tj_val a = tj_load(tj_add(x, offs), .mask = mask);
    tj_val b = tj_load(tj_add(y, offs), .mask = mask);
    tj_store(tj_add(out, offs), tj_add(a, b), .mask = mask);
}

enum { BLOCK = 1024 };

struct launch_args {
    tj_device *dev;
    tj_buffer x, y, out;
    int32_t n;
};

static void launch(void *ctx)
{
    struct launch_args *a = ctx;
    tj_launch_cfg cfg = {.grid = {cdiv(a->n, BLOCK)}};
    CHECK(add_kernel_launch(a->dev, &cfg, a->x, a->y, a->out, a->n, BLOCK));
}

int main(int argc, char **argv)
{
    const int64_t n = size_arg(argc, argv, 1, 10000000 + 37);
    tj_device *dev = open_default_device();
    printf("vector_add: n = %lld, BLOCK = %d, seed = %llu\n", (long long)n, BLOCK,
           (unsigned long long)sample_seed());

    float *x = xmalloc((size_t)n * sizeof(float));
    float *y = xmalloc((size_t)n * sizeof(float));
    float *out = xmalloc((size_t)n * sizeof(float));
    fill_random(x, (size_t)n, -1, 1);
    fill_random(y, (size_t)n, -1, 1);

    struct launch_args args = {dev, device_floats(dev, x, (size_t)n),
                               device_floats(dev, y, (size_t)n),
                               device_floats(dev, NULL, (size_t)n), (int32_t)n};
    launch(&args);
    CHECK(tj_buffer_read(dev, args.out, 0, out, (size_t)n * sizeof(float)));

    /* The expected sums, in place of x. One correctly rounded add on both
     * sides: the match must be exact. */
    for (int64_t i = 0; i < n; i++)
        x[i] += y[i];
    int64_t bad = first_mismatch(out, x, (size_t)n, 0, 0);

    double seconds = median_seconds(dev, 10, launch, &args);
    double gbps = 3.0 * (double)n * sizeof(float) / seconds / 1e9;
    if (bad >= 0)
        printf("out[%lld] = %g, expected %g\n", (long long)bad, out[bad], x[bad]);
    printf("%s  vector_add  %.2f GB/s  (%.3f ms, median of 10 runs)\n",
           bad >= 0 ? "FAIL" : "PASS", gbps, seconds * 1e3);

    tj_device_close(dev);
    free(x);
    free(y);
    free(out);
    return bad >= 0;
}
