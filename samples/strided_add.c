/* SPDX-License-Identifier: MIT */
/*
 * strided_add — out[i] = x[i*s] + y[i*s]: what a stride costs.
 *
 * The kernel is vector add with the input offsets multiplied by a runtime
 * stride s. The work is the same for every s; what changes is how much of
 * each cache line (on a GPU: each 32-byte sector a warp fetches) is used:
 * with s = 1 all of it, with s = 8 floats only one element in eight. The
 * table shows the effective bandwidth (useful bytes per second) per stride.
 *
 *     usage: strided_add [n]       (default n = 2^21 + 3 outputs)
 */
#include "common.h"

TJ_KERNEL(strided_add_kernel,
          TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(y, f32), TJ_PTR(out, f32), TJ_SCALAR(n, i32),
                    TJ_SCALAR(stride, i32)),
          TJ_CONSTS(BLOCK))
{
    tj_val offs = tj_add(tj_mul(tj_program_id(0), BLOCK), tj_arange(0, BLOCK));
    tj_val mask = tj_lt(offs, n);
    tj_val in_offs = tj_mul(offs, stride);
    tj_val a = tj_load(tj_add(x, in_offs), .mask = mask);
    tj_val b = tj_load(tj_add(y, in_offs), .mask = mask);
    tj_store(tj_add(out, offs), tj_add(a, b), .mask = mask);
}

enum { BLOCK = 1024, MAX_STRIDE = 8 };

struct launch_args {
    tj_device *dev;
    tj_buffer x, y, out;
    int32_t n, stride;
};

static void launch(void *ctx)
{
    struct launch_args *a = ctx;
    tj_launch_cfg cfg = {.grid = {cdiv(a->n, BLOCK)}};
    CHECK(strided_add_kernel_launch(a->dev, &cfg, a->x, a->y, a->out, a->n, a->stride,
                                    BLOCK));
}

int main(int argc, char **argv)
{
    const int64_t n = size_arg(argc, argv, 1, (1 << 21) + 3);
    if (n > INT32_MAX / MAX_STRIDE) {
        fprintf(stderr, "strided_add: n * %d must fit in i32\n", MAX_STRIDE);
        return 2;
    }
    const size_t in_count = (size_t)n * MAX_STRIDE;
    tj_device *dev = open_default_device();
    printf("strided_add: n = %lld, BLOCK = %d, seed = %llu\n", (long long)n, BLOCK,
           (unsigned long long)sample_seed());

    float *x = xmalloc(in_count * sizeof(float));
    float *y = xmalloc(in_count * sizeof(float));
    float *out = xmalloc((size_t)n * sizeof(float));
    fill_random(x, in_count, -1, 1);
    fill_random(y, in_count, -1, 1);
    tj_buffer xb = device_floats(dev, x, in_count);
    tj_buffer yb = device_floats(dev, y, in_count);

    int failed = 0;
    printf("  stride   time (ms)   effective GB/s   result\n");
    for (int32_t s = 1; s <= MAX_STRIDE; s *= 2) {
        struct launch_args args = {dev, xb, yb, device_floats(dev, NULL, (size_t)n),
                                   (int32_t)n, s};
        launch(&args);
        CHECK(tj_buffer_read(dev, args.out, 0, out, (size_t)n * sizeof(float)));
        int64_t bad = -1;
        for (int64_t i = 0; i < n && bad < 0; i++)
            if (!(out[i] == x[i * s] + y[i * s]))
                bad = i;
        double seconds = median_seconds(dev, 10, launch, &args);
        double gbps = 3.0 * (double)n * sizeof(float) / seconds / 1e9;
        printf("  %6d   %9.3f   %14.2f   %s\n", s, seconds * 1e3, gbps,
               bad < 0 ? "ok" : "wrong");
        if (bad >= 0) {
            printf("  out[%lld] = %g, expected %g\n", (long long)bad, out[bad],
                   x[bad * s] + y[bad * s]);
            failed = 1;
        }
        CHECK(tj_buffer_free(dev, args.out));
    }
    printf("%s  strided_add  (effective GB/s per stride above)\n", failed ? "FAIL" : "PASS");

    tj_device_close(dev);
    free(x);
    free(y);
    free(out);
    return failed;
}
