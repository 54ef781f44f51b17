/* SPDX-License-Identifier: MIT */
/*
 * gpu_norm — the layer_norm and dropout samples' kernels (Triton's
 * tutorials 05 and 04 written with tjit) timed with CUDA events, for the
 * comparison with the same algorithms in Triton and with torch
 * (bench/triton_norm.py; bench/gpu_norm.sh runs both and joins them).
 *
 * Problems, f32 (the samples' dtype):
 *  - layer norm forward, M = 4096 rows of N in {1024, 4096, 8192}: x read
 *    three times over by the kernel (mean, variance, output), y written;
 *    counted as the 2 M N 4 bytes that must move;
 *  - its backward dx kernel (dx, and dw/db partials summed per group of
 *    rows under a TJ_WHILE spin lock): x and dy read, dx written, 3 M N 4
 *    bytes. The locks and count flags are zero for the checked first
 *    launch only; the timed launches find the flags set and add to the
 *    partial sums, which is the same work;
 *  - dropout (tj_rand, Philox 4x32-10) over n in {2^24, 2^26}: 2 n 4 bytes.
 * Each is checked once on sampled rows or elements against plain C, then
 * WARMUP and RUNS launches between CUDA events (gpu_timing.h): the median.
 * On the CPU back end (no events) the wall clock times each launch.
 * Output: one JSON line per measurement ("impl":"tjit","what":"norm"), with
 * GB/s.
 *
 *     usage: bench/gpu_norm [--runs N] [--warmup N] [--quick]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tjit.h"
#include "bench_util.h"
#include "gpu_timing.h"
#include "../samples/dropout_kernel.h"
#include "../samples/layer_norm_kernel.h"

enum { M = 4096, MAX_N = 8192, DROPOUT_BLOCK = 1024, CHECKED = 8 };
#define EPS 1e-5f
#define DROP_P 0.25f
#define SEED 1234

typedef struct problem {
    const char *op; /* "layer_norm_fwd", "layer_norm_bwd_dx", "dropout" */
    int64_t m, n;
    int64_t block, group_m; /* layer norm: BLOCK / BLOCK_N, GROUP_M */
} problem;

static tj_device *dev;
static tj_buffer bx, by, bw, bb, bmean, brstd, bdy, bdx, bpdw, bpdb, block_locks;
static float *hx, *hw, *hb, *hdy, *hout;
static int runs = 20, warmup = 5;

static int64_t next_pow2(int64_t n)
{
    int64_t p = 1;
    while (p < n)
        p *= 2;
    return p;
}

/* The forward's chunk: the row, up to 4096 columns */
static int64_t fwd_block(int64_t n)
{
    return next_pow2(n) < 4096 ? next_pow2(n) : 4096;
}

static tj_status launch(const void *p_)
{
    const problem *p = p_;
    if (!strcmp(p->op, "dropout")) {
        tj_launch_cfg cfg = {.grid = {(p->n + DROPOUT_BLOCK - 1) / DROPOUT_BLOCK}};
        return seeded_dropout_launch(dev, &cfg, bx, by, (int32_t)p->n, DROP_P, SEED, DROPOUT_BLOCK);
    }
    /* the tutorial's warps: BLOCK / 256, from 1 to 8 */
    int warps = (int)(p->block / 256 < 1 ? 1 : p->block / 256 > 8 ? 8 : p->block / 256);
    tj_launch_cfg rows = {.grid = {p->m}, .num_warps = warps};
    if (!strcmp(p->op, "layer_norm_fwd"))
        return layer_norm_fwd_launch(dev, &rows, bx, by, bw, bb, bmean, brstd, (int32_t)p->n, (int32_t)p->n, EPS,
                                     p->block);
    return layer_norm_bwd_dx_launch(dev, &rows, bdx, bdy, bpdw, bpdb, bx, bw, bmean, brstd, block_locks,
                                    (int32_t)p->n, (int32_t)p->n, p->group_m, p->block);
}

/* The layer norm of row i in double: its mean and rstd. */
static void row_stats(const problem *p, int64_t i, double *mean, double *rstd)
{
    double s = 0, v = 0;
    for (int64_t j = 0; j < p->n; j++)
        s += hx[i * p->n + j];
    *mean = s / (double)p->n;
    for (int64_t j = 0; j < p->n; j++)
        v += (hx[i * p->n + j] - *mean) * (hx[i * p->n + j] - *mean);
    *rstd = 1 / sqrt(v / (double)p->n + EPS);
}

/* Sampled rows (layer norm) or elements (dropout) against plain C. */
static int check(const problem *p)
{
    size_t count = (size_t)(strcmp(p->op, "dropout") ? p->m * p->n : p->n);
    tj_buffer out = !strcmp(p->op, "layer_norm_bwd_dx") ? bdx : by;
    if (tj_buffer_read(dev, out, 0, hout, count * sizeof(float)) != TJ_OK)
        return 0;
    if (!strcmp(p->op, "dropout")) {
        int kept = 0;
        for (size_t i = 0; i < count; i++) {
            float want = hx[i] / (1.0f - DROP_P);
            if (hout[i] != 0 && fabsf(hout[i] - want) > 1e-6f * fabsf(want))
                return fprintf(stderr, "gpu_norm: dropout[%zu] = %g, neither 0 nor %g\n", i, hout[i], want), 0;
            kept += hout[i] != 0;
        }
        double frac = (double)kept / (double)count;
        if (fabs(frac - (1 - DROP_P)) > 0.01)
            return fprintf(stderr, "gpu_norm: dropout kept %.4f of the elements, expected %.2f\n", frac,
                           1 - DROP_P), 0;
        return 1;
    }
    for (int s = 0; s < CHECKED; s++) {
        int64_t i = s == 0 ? 0 : s == 1 ? p->m - 1 : (int64_t)((uint64_t)s * 2654435761u % (uint64_t)p->m);
        double mean, rstd, c1 = 0, c2 = 0;
        row_stats(p, i, &mean, &rstd);
        for (int64_t j = 0; j < p->n; j++) {
            double xh = (hx[i * p->n + j] - mean) * rstd, wdy = hw[j] * hdy[i * p->n + j];
            c1 += xh * wdy / (double)p->n;
            c2 += wdy / (double)p->n;
        }
        for (int64_t j = 0; j < p->n; j++) {
            double xh = (hx[i * p->n + j] - mean) * rstd;
            double want = !strcmp(p->op, "layer_norm_fwd") ? xh * hw[j] + hb[j]
                                                            : (hw[j] * hdy[i * p->n + j] - (xh * c1 + c2)) * rstd;
            double got = hout[i * p->n + j];
            if (!(fabs(got - want) <= 1e-4 * (1 + fabs(want))))
                return fprintf(stderr, "gpu_norm: %s %lldx%lld: [%lld][%lld] = %.7g, expected %.7g\n", p->op,
                               (long long)p->m, (long long)p->n, (long long)i, (long long)j, got, want), 0;
        }
    }
    return 1;
}

static void record(const problem *p, const char *error, double ms, int correct)
{
    double bytes = !strcmp(p->op, "dropout") ? 2.0 * p->n * 4
                 : !strcmp(p->op, "layer_norm_fwd") ? 2.0 * p->m * p->n * 4 : 3.0 * p->m * p->n * 4;
    printf("{\"impl\":\"tjit\",\"what\":\"norm\",\"op\":\"%s\",\"m\":%lld,\"n\":%lld", p->op, (long long)p->m,
           (long long)p->n);
    if (error) {
        fputs(",\"error\":", stdout);
        json_string(error);
    } else {
        printf(",\"ms\":%.5f,\"gbps\":%.1f,\"correct\":%s", ms, bytes / (ms * 1e-3) / 1e9, correct ? "true" : "false");
    }
    puts("}");
    fflush(stdout);
}

static void bench(const problem *p, int use_events)
{
    /* the flags and locks zero, and Mean/Rstd the forward's, for the check */
    static int32_t zeros[2 * 256];
    tj_status st = tj_buffer_write(dev, block_locks, 0, zeros, sizeof zeros);
    if (st == TJ_OK && !strcmp(p->op, "layer_norm_bwd_dx")) {
        problem fwd = {"layer_norm_fwd", p->m, p->n, fwd_block(p->n), 0};
        st = launch(&fwd);
    }
    if (st == TJ_OK)
        st = launch(p);
    char text[1024];
    if (st == TJ_OK)
        st = tj_synchronize(dev);
    if (st != TJ_OK) {
        snprintf(text, sizeof text, "%s: %s", tj_status_name(st), tj_last_error());
        record(p, text, 0, 0);
        return;
    }
    int correct = check(p);
    double ms = 0;
    const char *failed = median_launch_ms(dev, use_events, warmup, runs, launch, p, &ms, &st);
    if (failed) {
        snprintf(text, sizeof text, "%s: %s", failed, st != TJ_OK ? tj_last_error() : "");
        record(p, text, 0, 0);
        return;
    }
    record(p, NULL, ms, correct);
}

static float *random_floats(size_t n, float lo, float hi)
{
    float *a = xmalloc(n * sizeof(float));
    uint64_t s = 0x9e3779b97f4a7c15ull ^ n;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        a[i] = lo + (hi - lo) * (float)((s >> 40) * 0x1p-24);
    }
    return a;
}

static tj_buffer upload(const float *a, size_t n)
{
    tj_buffer b = {0};
    if (tj_buffer_alloc(dev, n * sizeof(float), &b) != TJ_OK ||
        (a && tj_buffer_write(dev, b, 0, a, n * sizeof(float)) != TJ_OK)) {
        fprintf(stderr, "gpu_norm: %s\n", tj_last_error());
        exit(1);
    }
    return b;
}

int main(int argc, char **argv)
{
    int quick = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--warmup") && i + 1 < argc)
            warmup = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else
            return fprintf(stderr, "usage: %s [--runs N] [--warmup N] [--quick]\n", argv[0]), 2;
    }
    if (runs < 1 || warmup < 0)
        return fprintf(stderr, "gpu_norm: --runs must be at least 1\n"), 2;
    if (tj_device_open(&dev, TJ_DEVICE_DEFAULT, 0) != TJ_OK) /* the CPU where no GPU: a smoke test */
        return fprintf(stderr, "gpu_norm: %s\n", tj_last_error()), 1;
    int use_events = tj_device_get_kind(dev) == TJ_DEVICE_GPU;
    const char *why = use_events ? cuda_events_init() : NULL;
    if (why)
        return fprintf(stderr, "gpu_norm: %s\n", why), 1;
    int64_t m = quick ? 256 : M, dropout_n = quick ? (1 << 20) : (1 << 26);
    size_t big = (size_t)(m * MAX_N > dropout_n ? m * MAX_N : dropout_n);
    hx = random_floats(big, -2, 2), hdy = random_floats(big, -1, 1);
    hw = random_floats(MAX_N, 0.5f, 1.5f), hb = random_floats(MAX_N, -0.5f, 0.5f);
    hout = xmalloc(big * sizeof(float));
    bx = upload(hx, big), bdy = upload(hdy, big), bw = upload(hw, MAX_N), bb = upload(hb, MAX_N);
    by = upload(NULL, big), bdx = upload(NULL, big), bmean = upload(NULL, (size_t)m), brstd = upload(NULL, (size_t)m);
    bpdw = upload(NULL, 256 * MAX_N), bpdb = upload(NULL, 256 * MAX_N);
    if (tj_buffer_alloc(dev, 2 * 256 * sizeof(int32_t), &block_locks) != TJ_OK)
        return fprintf(stderr, "gpu_norm: %s\n", tj_last_error()), 1;
    static const int64_t ns[] = {1024, 4096, 8192};
    for (int i = 0; i < 3; i++) {
        int64_t n = ns[i];
        /* more groups (locks) for narrower rows, as the tutorial's 256/128/96 */
        int64_t group_m = n <= 1024 ? 256 : n <= 4096 ? 128 : 64;
        bench(&(problem){"layer_norm_fwd", m, n, fwd_block(n), 0}, use_events);
        bench(&(problem){"layer_norm_bwd_dx", m, n, next_pow2(n), group_m}, use_events);
    }
    for (int64_t n = dropout_n / 4; n <= dropout_n; n *= 4)
        bench(&(problem){"dropout", 1, n, DROPOUT_BLOCK, 0}, use_events);
    tj_device_close(dev);
    return 0;
}
