/* SPDX-License-Identifier: MIT */
/*
 * matmul_host.h — the host side the two matmul samples share (matmul.c,
 * matmul_block_ptr.c): inputs, buffers, the check against C, the timing.
 *
 * A sample defines its kernels and one launch function for a
 * matmul_problem (row-major A: M x K, B: K x N, C: M x N, each of the
 * problem's dtype, f16 or f32), then calls matmul_main. For each dtype it
 * checks C twice against a C loop: small-integer inputs in [-3, 3] (every
 * product and partial sum is an integer below 2^24, exact in f32, so C —
 * that exact sum, rounded once to f16 where C is f16 — must match bit for
 * bit), then random normal inputs within the error bound of K f32
 * accumulations plus C's rounding, relative to sum |a b|. Problems past
 * 2^28 multiply-adds are checked on sampled rows. C is poisoned with NaN
 * first. It prints TFLOP/s: 2 M N K flops per launch, the median of 10.
 */
#ifndef TJIT_SAMPLES_MATMUL_HOST_H
#define TJIT_SAMPLES_MATMUL_HOST_H

#include "common.h"

typedef struct matmul_problem {
    tj_device *dev;
    tj_dtype dtype; /* of A, B and C: f16 or f32 */
    int32_t m, n, k;
    int64_t bm, bn, bk;
    int warps;
    tj_buffer a, b, c;
} matmul_problem;

/* Rounds x to the dtype as the device holds it. */
static inline float matmul_round(tj_dtype dtype, float x)
{
    return dtype == TJ_F16 ? tj_f16_to_f32(tj_f32_to_f16(x)) : x;
}

/* A device buffer of count elements of the dtype holding host (already
 * representable in it), or NaN everywhere where host is NULL. */
static inline tj_buffer matmul_upload(tj_device *dev, tj_dtype dtype, const float *host,
                                      size_t count)
{
    if (dtype == TJ_F32)
        return device_floats(dev, host, count);
    uint16_t *bits = xmalloc(count * sizeof(uint16_t));
    for (size_t i = 0; i < count; i++)
        bits[i] = tj_f32_to_f16(host ? host[i] : NAN);
    tj_buffer buf;
    CHECK(tj_buffer_alloc(dev, count * sizeof(uint16_t), &buf));
    CHECK(tj_buffer_write(dev, buf, 0, bits, count * sizeof(uint16_t)));
    free(bits);
    return buf;
}

static inline void matmul_download(tj_device *dev, tj_dtype dtype, tj_buffer buf, float *host,
                                   size_t count)
{
    if (dtype == TJ_F32) {
        CHECK(tj_buffer_read(dev, buf, 0, host, count * sizeof(float)));
        return;
    }
    uint16_t *bits = xmalloc(count * sizeof(uint16_t));
    CHECK(tj_buffer_read(dev, buf, 0, bits, count * sizeof(uint16_t)));
    for (size_t i = 0; i < count; i++)
        host[i] = tj_f16_to_f32(bits[i]);
    free(bits);
}

/* A standard normal number (Box-Muller on the sample generator). */
static inline float matmul_random_normal(void)
{
    float u1 = random_float(0x1p-24f, 1.0f), u2 = random_float(0.0f, 1.0f);
    return sqrtf(-2.0f * logf(u1)) * cosf(6.2831853f * u2);
}

static inline int matmul_row_checked(int64_t i, const matmul_problem *p)
{
    if ((double)p->m * p->n * p->k <= 0x1p28)
        return 1;
    return i < 2 || i >= p->m - 2 || i % 97 == 0;
}

/* Returns whether every checked element of c matches; prints the first
 * that does not. */
static inline int matmul_check(const matmul_problem *p, const float *a, const float *b,
                               const float *c, int exact)
{
    const double out_eps = p->dtype == TJ_F16 ? 0x1p-11 : 0x1p-24;
    for (int64_t i = 0; i < p->m; i++) {
        if (!matmul_row_checked(i, p))
            continue;
        for (int64_t j = 0; j < p->n; j++) {
            double sum = 0, magnitude = 0;
            for (int64_t kk = 0; kk < p->k; kk++) {
                double prod = (double)a[i * p->k + kk] * b[kk * p->n + j];
                sum += prod;
                magnitude += fabs(prod);
            }
            float got = c[i * p->n + j];
            double want = exact ? matmul_round(p->dtype, (float)sum) : sum;
            double tol = exact ? 0 : ((double)p->k * 0x1p-24 + out_eps) * magnitude + 1e-30;
            if (!(fabs((double)got - want) <= tol)) {
                printf("C[%lld][%lld] = %.9g, expected %.9g (tolerance %.3g)\n", (long long)i,
                       (long long)j, got, want, tol);
                return 0;
            }
        }
    }
    return 1;
}

/* Runs, checks and times one dtype; returns whether both checks passed. */
static inline int matmul_run(matmul_problem *p, void (*launch)(void *problem))
{
    const size_t na = (size_t)p->m * p->k, nb = (size_t)p->k * p->n, nc = (size_t)p->m * p->n;
    float *a = xmalloc(na * sizeof(float)), *b = xmalloc(nb * sizeof(float));
    float *c = xmalloc(nc * sizeof(float));
    const char *name = p->dtype == TJ_F16 ? "f16" : "f32";
    int ok = 1;
    for (int exact = 1; exact >= 0; exact--) {
        for (size_t i = 0; i < na; i++)
            a[i] = exact ? floorf(random_float(-3, 4))
                         : matmul_round(p->dtype, matmul_random_normal());
        for (size_t i = 0; i < nb; i++)
            b[i] = exact ? floorf(random_float(-3, 4))
                         : matmul_round(p->dtype, matmul_random_normal());
        p->a = matmul_upload(p->dev, p->dtype, a, na);
        p->b = matmul_upload(p->dev, p->dtype, b, nb);
        p->c = matmul_upload(p->dev, p->dtype, NULL, nc);
        launch(p);
        matmul_download(p->dev, p->dtype, p->c, c, nc);
        int good = matmul_check(p, a, b, c, exact);
        ok &= good;
        printf("%s  %s, %s inputs\n", good ? "PASS" : "FAIL", name,
               exact ? "small-integer (exact)" : "random normal (K-scaled tolerance)");
        if (!exact) {
            double seconds = median_seconds(p->dev, 10, launch, p);
            printf("%s  matmul %s %d x %d x %d, tiles %lld x %lld x %lld, %d warps: "
                   "%.3f TFLOP/s (%.3f ms, median of 10 runs)\n",
                   good ? "PASS" : "FAIL", name, p->m, p->n, p->k, (long long)p->bm,
                   (long long)p->bn, (long long)p->bk, p->warps,
                   2.0 * p->m * p->n * p->k / seconds / 1e12, seconds * 1e3);
        }
        CHECK(tj_buffer_free(p->dev, p->a));
        CHECK(tj_buffer_free(p->dev, p->b));
        CHECK(tj_buffer_free(p->dev, p->c));
    }
    free(a);
    free(b);
    free(c);
    return ok;
}

/* The sample's main: sizes from the command line (default 2048^3), both
 * dtypes in the tutorial's usual configurations, 128 x 128 x 32 tiles on 4
 * warps (128 x 64 for f32, whose tiles take twice the bytes), on the CPU
 * too: there make check also compiles the kernel's PTX for this launch.
 * (The CPU is faster with bigger tiles: bench/matmul_cpu.) */
static inline int matmul_main(int argc, char **argv, const char *name,
                              void (*launch)(void *problem))
{
    const int64_t m = size_arg(argc, argv, 1, 2048);
    const int64_t n = size_arg(argc, argv, 2, 2048);
    const int64_t k = size_arg(argc, argv, 3, 2048);
    if (m * k > INT32_MAX || k * n > INT32_MAX || m * n > INT32_MAX || 9 * k >= (1 << 24)) {
        fprintf(stderr, "%s: M*K, K*N and M*N must fit in i32, and K be below 2^24 / 9\n", name);
        return 2;
    }
    tj_device *dev = open_default_device();
    printf("%s: %lld x %lld x %lld, seed = %llu\n", name, (long long)m, (long long)n,
           (long long)k, (unsigned long long)sample_seed());
    int ok = 1;
    for (int d = 0; d < 2; d++) {
        matmul_problem p = {dev, d == 0 ? TJ_F16 : TJ_F32, (int32_t)m, (int32_t)n, (int32_t)k,
                            .bm = 128, .bn = d == 1 ? 64 : 128, .bk = 32,
                            .warps = 4};
        ok &= matmul_run(&p, launch);
    }
    tj_device_close(dev);
    return !ok;
}

#endif
