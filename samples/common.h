/* SPDX-License-Identifier: MIT */
/*
 * common.h — the few host-side chores every sample shares.
 *
 * The samples are meant to be read for their kernels, so what is not about
 * tjit lives here: checking a tjit call and stopping with its message,
 * drawing random inputs, timing, and reading an optional size from the
 * command line. Everything is static, so each sample stays one program.
 *
 * Each sample follows the same path: open the default device (the first GPU,
 * else the CPU), say which one it got, copy fresh random inputs to device
 * buffers, poison the output (so a lane that never stores is caught), launch,
 * read back, compare with a plain C loop, print PASS or FAIL with the
 * throughput, and exit non-zero on FAIL or on any tjit error.
 */
#ifndef TJIT_SAMPLES_COMMON_H
#define TJIT_SAMPLES_COMMON_H

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tjit.h"

/* Runs a tjit call; on failure prints where, the status and tjit's message
 * (which names the kernel, the op and the source line at fault) and exits. */
#define CHECK(call)                                                           \
    do {                                                                      \
        tj_status check_status_ = (call);                                     \
        if (check_status_ != TJ_OK) {                                         \
            fprintf(stderr, "%s:%d: %s failed: %s\n%s\n", __FILE__, __LINE__, \
                    #call, tj_status_name(check_status_), tj_last_error());   \
            exit(2);                                                          \
        }                                                                     \
    } while (0)

static inline double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline void *xmalloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "out of memory (%zu bytes)\n", bytes);
        exit(2);
    }
    return p;
}

/* A fresh seed per run (printed, so a failure can be replayed with
 * TJIT_SAMPLE_SEED=...), and a small xorshift generator so every libc
 * draws the same numbers from the same seed. */
static uint64_t sample_rng_state;

static inline uint64_t sample_seed(void)
{
    const char *env = getenv("TJIT_SAMPLE_SEED");
    uint64_t seed = env && *env ? strtoull(env, NULL, 0)
                                : (uint64_t)time(NULL) * 2654435761u ^ (uint64_t)getpid();
    sample_rng_state = seed ? seed : 1;
    return seed;
}

/* Uniform in [lo, hi). */
static inline float random_float(float lo, float hi)
{
    sample_rng_state ^= sample_rng_state << 13;
    sample_rng_state ^= sample_rng_state >> 7;
    sample_rng_state ^= sample_rng_state << 17;
    return lo + (hi - lo) * (float)(sample_rng_state >> 40) * (1.0f / 16777216.0f);
}

static inline void fill_random(float *a, size_t n, float lo, float hi)
{
    for (size_t i = 0; i < n; i++)
        a[i] = random_float(lo, hi);
}

/* Allocates a device buffer of `count` floats holding `host` (or NaN
 * everywhere where host is NULL: an output that must be overwritten). */
static inline tj_buffer device_floats(tj_device *dev, const float *host, size_t count)
{
    tj_buffer buf;
    CHECK(tj_buffer_alloc(dev, count * sizeof(float), &buf));
    if (host) {
        CHECK(tj_buffer_write(dev, buf, 0, host, count * sizeof(float)));
    } else {
        float *nan_fill = xmalloc(count * sizeof(float));
        for (size_t i = 0; i < count; i++)
            nan_fill[i] = NAN;
        CHECK(tj_buffer_write(dev, buf, 0, nan_fill, count * sizeof(float)));
        free(nan_fill);
    }
    return buf;
}

/* 16-bit floats (f16 or bf16, as dtype says) on the host as floats: x
 * rounded to dtype; a device buffer of count of them holding host (NaN
 * everywhere where host is NULL); and such a buffer read back. */
static inline float round_half(tj_dtype dtype, float x)
{
    return dtype == TJ_F16 ? tj_f16_to_f32(tj_f32_to_f16(x)) : tj_bf16_to_f32(tj_f32_to_bf16(x));
}

static inline tj_buffer device_halves(tj_device *dev, tj_dtype dtype, const float *host, size_t count)
{
    uint16_t *bits = xmalloc(count * sizeof(uint16_t));
    for (size_t i = 0; i < count; i++) {
        float x = host ? host[i] : NAN;
        bits[i] = dtype == TJ_F16 ? tj_f32_to_f16(x) : tj_f32_to_bf16(x);
    }
    tj_buffer buf;
    CHECK(tj_buffer_alloc(dev, count * sizeof(uint16_t), &buf));
    CHECK(tj_buffer_write(dev, buf, 0, bits, count * sizeof(uint16_t)));
    free(bits);
    return buf;
}

static inline void read_halves(tj_device *dev, tj_dtype dtype, tj_buffer buf, float *host, size_t count)
{
    uint16_t *bits = xmalloc(count * sizeof(uint16_t));
    CHECK(tj_buffer_read(dev, buf, 0, bits, count * sizeof(uint16_t)));
    for (size_t i = 0; i < count; i++)
        host[i] = dtype == TJ_F16 ? tj_f16_to_f32(bits[i]) : tj_bf16_to_f32(bits[i]);
    free(bits);
}

/* Index of the first element where got and want differ by more than
 * atol + rtol * |want| (NaN never matches), or -1 when all match. */
static inline int64_t first_mismatch(const float *got, const float *want, size_t n,
                                     float atol, float rtol)
{
    for (size_t i = 0; i < n; i++)
        if (!(fabsf(got[i] - want[i]) <= atol + rtol * fabsf(want[i])))
            return (int64_t)i;
    return -1;
}

/* Reads the i-th command-line argument as a positive size, or gives the
 * default when there is none. */
static inline int64_t size_arg(int argc, char **argv, int i, int64_t fallback)
{
    if (argc <= i)
        return fallback;
    char *end;
    errno = 0;
    long long v = strtoll(argv[i], &end, 10);
    if (errno || *end || v <= 0 || v > INT32_MAX) {
        fprintf(stderr, "%s: bad size '%s' (a positive integer below 2^31)\n", argv[0],
                argv[i]);
        exit(2);
    }
    return v;
}

static inline int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

static inline int64_t next_pow2(int64_t n)
{
    int64_t p = 1;
    while (p < n)
        p *= 2;
    return p;
}

static inline int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median wall time of `runs` calls of launch(ctx), after one warm-up call
 * (the first launch of a kernel builds and compiles it). tj_synchronize
 * makes the time honest on devices where a launch only enqueues work. */
static inline double median_seconds(tj_device *dev, int runs, void (*launch)(void *ctx),
                                    void *ctx)
{
    double times[64];
    if (runs > 64)
        runs = 64;
    launch(ctx);
    CHECK(tj_synchronize(dev));
    for (int r = 0; r < runs; r++) {
        double t0 = now_seconds();
        launch(ctx);
        CHECK(tj_synchronize(dev));
        times[r] = now_seconds() - t0;
    }
    qsort(times, (size_t)runs, sizeof times[0], cmp_double);
    return times[runs / 2];
}

static inline tj_device *open_default_device(void)
{
    tj_device *dev;
    CHECK(tj_device_open(&dev, TJ_DEVICE_DEFAULT, 0));
    printf("device: %s\n", tj_device_name(dev));
    return dev;
}

#endif
