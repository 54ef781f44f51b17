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
 * rounding), then WARMUP launches (at least one on each set of buffers)
 * and RUNS launches between CUDA events, the median interval. The timed
 * launches take two to eight sets of X, W and Y in turn (rotated buffers:
 * together at least 256 MiB, gpu_timing.h's rule), so that none finds the
 * operands of the launch before it in L2: one device buffer per operand,
 * filled once with the host's random image repeated, and a problem's set s
 * a view of its M x K, N x K and M x N elements at s times their size
 * (rounded up to 4 KiB, so that every set has the first one's alignment).
 * The check reads set 0. Output: one JSON line per measurement
 * ("impl":"tjit","what":"llm").
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

/* Each set's views start at multiples of this (gpu_timing.h's rotation). */
enum { SET_ALIGN = 4096 };

typedef struct problem {
    int fp8;
    int m, n, k;
    config cfg;
    int sets;                                   /* sets of X, W and Y, used in turn */
    tj_buffer a[MAX_SETS], b[MAX_SETS], c[MAX_SETS]; /* views of buf_a, buf_b, buf_c */
} problem;

static tj_device *dev;
static tj_buffer buf_a, buf_b, buf_c;
static void *host_a, *host_b, *host_c;
static int runs = 10, warmup = 3;

static size_t operand_bytes(const problem *p, char which)
{
    size_t in = p->fp8 ? 1 : 2;
    return which == 'a' ? (size_t)p->m * p->k * in : which == 'b' ? (size_t)p->n * p->k * in : (size_t)p->m * p->n * 2;
}

static size_t set_stride(const problem *p, char which)
{
    return (operand_bytes(p, which) + SET_ALIGN - 1) / SET_ALIGN * SET_ALIGN;
}

/* The views of p's sets (p->sets of them); 0 and the error printed where a view fails. */
static int make_views(problem *p)
{
    const tj_buffer bufs[3] = {buf_a, buf_b, buf_c};
    tj_buffer *views[3] = {p->a, p->b, p->c};
    for (int s = 0; s < p->sets; s++)
        for (int o = 0; o < 3; o++)
            if (tj_buffer_view(dev, bufs[o], s * set_stride(p, "abc"[o]), operand_bytes(p, "abc"[o]), &views[o][s]) !=
                TJ_OK) {
                fprintf(stderr, "gpu_llm: %s\n", tj_last_error());
                return 0;
            }
    return 1;
}

static void free_views(problem *p)
{
    for (int s = 0; s < p->sets; s++)
        tj_buffer_free(dev, p->a[s]), tj_buffer_free(dev, p->b[s]), tj_buffer_free(dev, p->c[s]);
}

static tj_status launch_set(const problem *p, int set)
{
    int64_t tiles = (int64_t)((p->m + p->cfg.bm - 1) / p->cfg.bm) * ((p->n + p->cfg.bn - 1) / p->cfg.bn);
    if (p->cfg.persistent && tiles > tj_device_processors(dev))
        tiles = tj_device_processors(dev);
    tj_launch_cfg cfg = {.grid = {tiles}, .num_warps = p->cfg.warps, .num_stages = p->cfg.stages};
    const tj_kernel *k = p->fp8 ? (p->cfg.persistent ? llm_fp8_persistent : llm_fp8)
                                : (p->cfg.persistent ? llm_bf16_persistent : llm_bf16);
    int64_t consts[3] = {p->cfg.bm, p->cfg.bn, p->cfg.bk};
    /* X [M, K], W [N, K] read as B = W^T (stride_bk 1, stride_bn K), Y [M, N] */
    tj_arg args[12] = {TJ_ARG_BUF(p->a[set]), TJ_ARG_BUF(p->b[set]), TJ_ARG_BUF(p->c[set]), TJ_ARG_I32(p->m),
                       TJ_ARG_I32(p->n), TJ_ARG_I32(p->k), TJ_ARG_I32(p->k), TJ_ARG_I32(1), TJ_ARG_I32(1),
                       TJ_ARG_I32(p->k), TJ_ARG_I32(p->n), TJ_ARG_I32(1)};
    return tj_launch(dev, k, &cfg, args, 12, consts, 3);
}

/* The set a timed launch takes: the next, each launch. */
static unsigned turn;

static tj_status launch(const void *p_)
{
    const problem *p = p_;
    return launch_set(p, (int)(turn++ % (unsigned)p->sets));
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
    size_t c_bytes = operand_bytes(p, 'c');
    memset(host_c, 0xff, c_bytes);
    tj_status st = tj_buffer_write(dev, p->c[0], 0, host_c, c_bytes);
    if (st == TJ_OK)
        st = launch_set(p, 0);
    if (st == TJ_OK)
        st = tj_buffer_read(dev, p->c[0], 0, host_c, c_bytes);
    char text[1024];
    if (st != TJ_OK) {
        snprintf(text, sizeof text, "%s: %s", tj_status_name(st), tj_last_error());
        record(p, text, 0, 0);
        return 0;
    }
    int correct = check(p);
    double ms = 0;
    turn = 0;
    const char *why = median_launch_ms(dev, 1, warmup > p->sets ? warmup : p->sets, runs, launch, p, &ms, &st);
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
    /* Every problem, and the bytes each operand's buffer needs for its sets. */
    problem problems[6 * 6 + 2];
    int nproblems = 0;
    size_t need[3] = {0, 0, 0}, host_need[3] = {0, 0, 0};
    for (int fp8 = 0; fp8 < 2; fp8++)
        for (int pi = 0; pi < (fp8 ? 2 : nm * nnk); pi++) {
            problem p = {.fp8 = fp8};
            if (fp8)
                p.m = p.n = p.k = pi ? 8192 : 4096;
            else
                p.m = ms[pi / nnk], p.n = nk[pi % nnk][0], p.k = nk[pi % nnk][1];
            p.sets = rotated_sets(operand_bytes(&p, 'a') + operand_bytes(&p, 'b') + operand_bytes(&p, 'c'));
            for (int o = 0; o < 3; o++) {
                size_t bytes = (size_t)(p.sets - 1) * set_stride(&p, "abc"[o]) + operand_bytes(&p, "abc"[o]);
                need[o] = bytes > need[o] ? bytes : need[o];
                host_need[o] = operand_bytes(&p, "abc"[o]) > host_need[o] ? operand_bytes(&p, "abc"[o]) : host_need[o];
            }
            problems[nproblems++] = p;
        }
    host_a = xmalloc(host_need[0]), host_b = xmalloc(host_need[1]), host_c = xmalloc(host_need[2]);
    if (tj_buffer_alloc(dev, need[0], &buf_a) != TJ_OK || tj_buffer_alloc(dev, need[1], &buf_b) != TJ_OK ||
        tj_buffer_alloc(dev, need[2], &buf_c) != TJ_OK) {
        fprintf(stderr, "gpu_llm: %s\n", tj_last_error());
        return 2;
    }
    int ok = 1;
    for (int fp8 = 0; fp8 < 2; fp8++) {
        /* X and W: the host's random image of the dtype's largest problem,
         * repeated over the whole buffer (the later sets read its copies) */
        size_t size = fp8 ? 1 : 2, na = 0, nb = 0;
        for (int i = 0; i < nproblems; i++)
            if (problems[i].fp8 == fp8) {
                na = operand_bytes(&problems[i], 'a') / size > na ? operand_bytes(&problems[i], 'a') / size : na;
                nb = operand_bytes(&problems[i], 'b') / size > nb ? operand_bytes(&problems[i], 'b') / size : nb;
            }
        fill(fp8, na, nb);
        tj_status st = TJ_OK;
        for (size_t at = 0; st == TJ_OK && at < need[0]; at += na * size)
            st = tj_buffer_write(dev, buf_a, at, host_a, need[0] - at < na * size ? need[0] - at : na * size);
        for (size_t at = 0; st == TJ_OK && at < need[1]; at += nb * size)
            st = tj_buffer_write(dev, buf_b, at, host_b, need[1] - at < nb * size ? need[1] - at : nb * size);
        if (st != TJ_OK) {
            fprintf(stderr, "gpu_llm: %s\n", tj_last_error());
            return 2;
        }
        const config *cfgs = fp8 ? fp8_configs : bf16_configs;
        int ncfg = fp8 ? (int)(sizeof fp8_configs / sizeof *fp8_configs)
                       : (int)(sizeof bf16_configs / sizeof *bf16_configs);
        for (int i = 0; i < nproblems; i++) {
            problem *p = &problems[i];
            if (p->fp8 != fp8)
                continue;
            if (!make_views(p))
                return 2;
            for (int ci = 0; ci < (quick ? 1 : ncfg); ci++) {
                p->cfg = cfgs[ci];
                ok &= bench(p);
            }
            free_views(p);
        }
    }
    tj_device_close(dev);
    free(host_a), free(host_b), free(host_c);
    return ok ? 0 : 1;
}
