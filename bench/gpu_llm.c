/* SPDX-License-Identifier: MIT */
/*
 * gpu_llm — tjit's matmul on the shapes of LLM inference and in fp8, timed
 * with CUDA events, for the comparison with cuBLAS (torch.matmul) and
 * torch._scaled_mm (bench/torch_llm.py; bench/gpu_llm.sh runs both and
 * joins them).
 *
 * Problems (MATMUL.md's lists):
 *  - bf16 Y = X W^T, X [M, K] row-major, W [N, K] row-major (a linear
 *    layer: B stored N x K, read K-major), Y bf16, for M in {1, 16, 128,
 *    1024, 4096, 16384} and (N, K) in {(4096, 4096), (11008, 4096), (4096,
 *    11008), (12288, 4096), (28672, 8192), (8192, 28672)};
 *  - fp8 e4m3 at 4096^3 and 8192^3, the same layout (wgmma reads 8-bit
 *    operands K-major only), Y bf16, against torch._scaled_mm with unit
 *    scales.
 * Kernels: samples/matmul_kernel.h's block-pointer matmul (TMA copies and a
 * producer warpgroup on Hopper) and its persistent form, in a few tile
 * configurations each; every one is a record, the table keeps the best.
 *
 * Method, as gpu_matmul.c's: inputs random normal (one of 2^16 draws per
 * element; fp8 saturates nothing at that range), Y poisoned with NaN and
 * checked once on 64 sampled elements against a double-precision dot
 * product of the same inputs (within 2 K 2^-23 sum |x w| plus Y's bf16
 * rounding), then WARMUP launches and RUNS launches between CUDA events,
 * the median interval. One device buffer per operand at the largest size,
 * uploaded once; each problem reads its leading M x K and N x K elements.
 * Output: one JSON line per measurement ("impl":"tjit","what":"llm").
 *
 *     usage: bench/gpu_llm [--runs N] [--warmup N] [--quick]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tjit.h"
#include "bench_util.h"
#include "gpu_timing.h"
#include "../samples/matmul_kernel.h"

enum { CHECKED = 64 };

MATMUL_BODY_KERNEL(llm_bf16, bf16, bf16, TJ_BF16, matmul_block_ptr_body)
MATMUL_BODY_KERNEL(llm_bf16_persistent, bf16, bf16, TJ_BF16, matmul_persistent_body)
MATMUL_BODY_KERNEL(llm_fp8, f8e4m3, bf16, TJ_BF16, matmul_block_ptr_body)
MATMUL_BODY_KERNEL(llm_fp8_persistent, f8e4m3, bf16, TJ_BF16, matmul_persistent_body)

typedef struct config {
    int bm, bn, bk, warps, stages, persistent;
} config;
/* 16-bit: BK 64 is one 128-byte row; 8-bit: BK 128 */
static const config bf16_configs[] = {{128, 256, 64, 8, 3, 0}, {128, 256, 64, 8, 2, 1}, {64, 256, 64, 4, 4, 0},
                                      {64, 128, 64, 4, 4, 0}};
static const config fp8_configs[] = {{128, 256, 128, 8, 3, 0}, {128, 256, 128, 8, 2, 1}, {128, 128, 128, 8, 4, 0}};

typedef struct problem {
    int fp8;
    int m, n, k;
    config cfg;
} problem;

static tj_device *dev;
static tj_buffer buf_a, buf_b, buf_c;
static void *host_a, *host_b, *host_c;
static int runs = 10, warmup = 3;

static tj_status launch(const void *p_)
{
    const problem *p = p_;
    int64_t tiles = (int64_t)((p->m + p->cfg.bm - 1) / p->cfg.bm) * ((p->n + p->cfg.bn - 1) / p->cfg.bn);
    if (p->cfg.persistent && tiles > tj_device_processors(dev))
        tiles = tj_device_processors(dev);
    tj_launch_cfg cfg = {.grid = {tiles}, .num_warps = p->cfg.warps, .num_stages = p->cfg.stages};
    const tj_kernel *k = p->fp8 ? (p->cfg.persistent ? llm_fp8_persistent : llm_fp8)
                                : (p->cfg.persistent ? llm_bf16_persistent : llm_bf16);
    int64_t consts[3] = {p->cfg.bm, p->cfg.bn, p->cfg.bk};
    /* X [M, K], W [N, K] read as B = W^T (stride_bk 1, stride_bn K), Y [M, N] */
    tj_arg args[12] = {TJ_ARG_BUF(buf_a), TJ_ARG_BUF(buf_b), TJ_ARG_BUF(buf_c), TJ_ARG_I32(p->m),
                       TJ_ARG_I32(p->n), TJ_ARG_I32(p->k), TJ_ARG_I32(p->k), TJ_ARG_I32(1), TJ_ARG_I32(1),
                       TJ_ARG_I32(p->k), TJ_ARG_I32(p->n), TJ_ARG_I32(1)};
    return tj_launch(dev, k, &cfg, args, 12, consts, 3);
}

static double input(const problem *p, const void *base, size_t i)
{
    return p->fp8 ? tj_f8e4m3_to_f32(((const uint8_t *)base)[i]) : tj_bf16_to_f32(((const uint16_t *)base)[i]);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_random(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}

/* Y on sampled elements against the double dot product. */
static int check(const problem *p)
{
    for (int s = 0; s < CHECKED; s++) {
        uint64_t r = next_random();
        int i = (int)(r % (uint64_t)p->m), j = (int)((r >> 32) % (uint64_t)p->n);
        if (s < 4)
            i = s & 1 ? p->m - 1 : 0, j = s & 2 ? p->n - 1 : 0;
        double sum = 0, mag = 0;
        for (int k = 0; k < p->k; k++) {
            double x = input(p, host_a, (size_t)i * p->k + k), w = input(p, host_b, (size_t)j * p->k + k);
            sum += x * w;
            mag += fabs(x * w);
        }
        double got = tj_bf16_to_f32(((const uint16_t *)host_c)[(size_t)i * p->n + j]);
        if (!(fabs(got - sum) <= 2.0 * p->k * 0x1p-23 * mag + 0x1p-8 * fabs(sum) + 1e-30)) {
            fprintf(stderr, "gpu_llm: %s %dx%dx%d: Y[%d][%d] = %.6g, expected %.6g\n", p->fp8 ? "fp8" : "bf16",
                    p->m, p->n, p->k, i, j, got, sum);
            return 0;
        }
    }
    return 1;
}

static void record(const problem *p, const char *error, double ms, int correct)
{
    printf("{\"impl\":\"tjit\",\"what\":\"llm\",\"dtype\":\"%s\",\"m\":%d,\"n\":%d,\"k\":%d,"
           "\"config\":\"%dx%dx%d, %d warps, %d stages%s\"",
           p->fp8 ? "fp8" : "bf16", p->m, p->n, p->k, p->cfg.bm, p->cfg.bn, p->cfg.bk, p->cfg.warps,
           p->cfg.stages, p->cfg.persistent ? ", persistent" : "");
    if (error) {
        fputs(",\"error\":", stdout);
        json_string(error);
    } else {
        printf(",\"ms\":%.5f,\"tflops\":%.2f,\"correct\":%s", ms, 2.0 * p->m * (double)p->n * p->k / (ms * 1e-3) / 1e12,
               correct ? "true" : "false");
    }
    puts("}");
    fflush(stdout);
}

static int bench(const problem *p)
{
    size_t c_bytes = (size_t)p->m * p->n * 2;
    memset(host_c, 0xff, c_bytes);
    tj_status st = tj_buffer_write(dev, buf_c, 0, host_c, c_bytes);
    if (st == TJ_OK)
        st = launch(p);
    if (st == TJ_OK)
        st = tj_buffer_read(dev, buf_c, 0, host_c, c_bytes);
    char text[1024];
    if (st != TJ_OK) {
        snprintf(text, sizeof text, "%s: %s", tj_status_name(st), tj_last_error());
        record(p, text, 0, 0);
        return 0;
    }
    int correct = check(p);
    double ms = 0;
    const char *why = median_launch_ms(dev, 1, warmup, runs, launch, p, &ms, &st);
    if (why) {
        snprintf(text, sizeof text, "%s: %s", why, st != TJ_OK ? tj_last_error() : "");
        record(p, text, 0, 0);
        return 0;
    }
    record(p, NULL, ms, correct);
    return correct;
}

/* The host operands, random normal in the dtype: n elements each. */
static void fill(int fp8, size_t na, size_t nb)
{
    enum { NORMALS = 1 << 16 };
    static float normals[NORMALS];
    if (normals[0] == 0)
        for (int i = 0; i < NORMALS; i++) {
            double u1 = ((double)(next_random() >> 11) + 1) * 0x1p-53, u2 = (double)(next_random() >> 11) * 0x1p-53;
            normals[i] = (float)(sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2));
        }
    for (size_t i = 0; i < na + nb; i++) {
        float x = normals[next_random() % NORMALS];
        void *base = i < na ? host_a : host_b;
        size_t at = i < na ? i : i - na;
        if (fp8)
            ((uint8_t *)base)[at] = tj_f32_to_f8e4m3(x);
        else
            ((uint16_t *)base)[at] = tj_f32_to_bf16(x);
    }
}

int main(int argc, char **argv)
{
    int quick = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--warmup") && i + 1 < argc)
            warmup = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--runs N] [--warmup N] [--quick]\n", argv[0]);
            return 2;
        }
    }
    if (runs < 1 || warmup < 0)
        return 2;
    tj_status st = tj_device_open(&dev, TJ_DEVICE_GPU, 0);
    const char *why = st == TJ_OK ? cuda_events_init() : NULL;
    if (st != TJ_OK || why) {
        fprintf(stderr, "gpu_llm: %s\n", st != TJ_OK ? tj_last_error() : why);
        return 2;
    }
    static const int ms[] = {1, 16, 128, 1024, 4096, 16384};
    static const int nk[][2] = {{4096, 4096},  {11008, 4096}, {4096, 11008},
                                {12288, 4096}, {28672, 8192}, {8192, 28672}};
    const int nm = quick ? 2 : 6, nnk = quick ? 1 : 6;
    size_t max_a = (size_t)16384 * 28672, max_b = (size_t)28672 * 8192, max_c = (size_t)16384 * 28672;
    if (quick)
        max_a = max_b = max_c = (size_t)8192 * 8192;
    host_a = xmalloc(max_a * 2), host_b = xmalloc(max_b * 2), host_c = xmalloc(max_c * 2);
    if (tj_buffer_alloc(dev, max_a * 2, &buf_a) != TJ_OK || tj_buffer_alloc(dev, max_b * 2, &buf_b) != TJ_OK ||
        tj_buffer_alloc(dev, max_c * 2, &buf_c) != TJ_OK) {
        fprintf(stderr, "gpu_llm: %s\n", tj_last_error());
        return 2;
    }
    int ok = 1;
    for (int fp8 = 0; fp8 < 2; fp8++) {
        size_t na = fp8 ? (size_t)8192 * 8192 : max_a, nb = fp8 ? (size_t)8192 * 8192 : max_b;
        fill(fp8, na, nb);
        if (tj_buffer_write(dev, buf_a, 0, host_a, na * (fp8 ? 1 : 2)) != TJ_OK ||
            tj_buffer_write(dev, buf_b, 0, host_b, nb * (fp8 ? 1 : 2)) != TJ_OK) {
            fprintf(stderr, "gpu_llm: %s\n", tj_last_error());
            return 2;
        }
        const config *cfgs = fp8 ? fp8_configs : bf16_configs;
        int ncfg = fp8 ? (int)(sizeof fp8_configs / sizeof *fp8_configs)
                       : (int)(sizeof bf16_configs / sizeof *bf16_configs);
        for (int pi = 0; pi < (fp8 ? 2 : nm * nnk); pi++) {
            problem p = {.fp8 = fp8};
            if (fp8)
                p.m = p.n = p.k = pi ? 8192 : 4096;
            else
                p.m = ms[pi / nnk], p.n = nk[pi % nnk][0], p.k = nk[pi % nnk][1];
            for (int ci = 0; ci < (quick ? 1 : ncfg); ci++) {
                p.cfg = cfgs[ci];
                ok &= bench(&p);
            }
        }
    }
    tj_device_close(dev);
    free(host_a), free(host_b), free(host_c);
    return ok ? 0 : 1;
}
