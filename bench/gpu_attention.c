/* SPDX-License-Identifier: MIT */
/*
 * gpu_attention — tjit's fused attention forward on the GPU, timed with
 * CUDA events, for the comparison with Triton (tutorial 06's algorithm)
 * and torch's scaled_dot_product_attention (bench/triton_attention.py;
 * bench/gpu_attention.sh runs both and joins them).
 *
 * The kernels are samples/attention_kernel.h's, with K and V as pointer
 * tiles and as block pointers. Problems (the issue's): Z = 4, H = 32,
 * N_CTX 4096 and 16384, head dim 64 and 128, f16, causal and not; each in
 * the configurations of CONFIGS (BM, BN, warps, stages, kernel form), each
 * a record; the table keeps the best.
 *
 * Method, the same as triton_attention.py: Q, K, V random normal (one of
 * 2^16 draws per element), O poisoned with NaN and checked once on 64
 * sampled rows against the softmax in double, within 1e-2; then the timing
 * of gpu_timing.h, each launch on the next of two to eight copies of Q, K,
 * V and O (rotated buffers, together at least 256 MiB: gpu_timing.h's rule;
 * the warm-up launches at least once on each). TFLOP/s counts
 * 4 Z H N_CTX^2 D (half when causal).
 *
 * Output: one JSON line per measurement ("impl":"tjit","what":"attention");
 * a failed build or launch is a line with "error" and the run goes on. The
 * exit status is 1 when anything failed or computed a wrong result.
 *
 *     usage: gpu_attention [--runs N] [--warmup N] [--quick | --profile] [--device gpu|cpu]
 *     (--quick: N_CTX 1024 on two problems, one configuration of each form;
 *     --profile: N_CTX 4096, d 64, causal, every configuration launched
 *     twice, a check and one timed run: for scripts/gpu-ncu.sh attention)
 */
#define _GNU_SOURCE /* unsetenv */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tjit.h"
#include "gpu_timing.h"
#include "../samples/attention_kernel.h"

ATTENTION_KERNEL(attention_f16, f16, TJ_F16)
ATTENTION_BLOCK_PTR_KERNEL(attention_block_ptr_f16, f16, TJ_F16)

enum { Z = 4, H = 32, CHECKED_ROWS = 64, NCONFIGS = 8 };

typedef struct config {
    int bm, bn, warps, stages;
    int block_ptrs; /* K and V by block pointers (TMA and a producer warpgroup on Hopper) */
} config;
/* Triton's list (triton_attention.py's), with K and V as pointer tiles
 * and as block pointers. */
static const config configs[NCONFIGS] = {{128, 64, 4, 3, 0},  {128, 64, 8, 3, 0}, {128, 128, 8, 3, 0},
                                         {64, 64, 4, 3, 0},   {128, 64, 4, 3, 1}, {128, 64, 8, 3, 1},
                                         {128, 128, 8, 3, 1}, {64, 64, 4, 3, 1}};

typedef struct problem {
    int n_ctx, d, causal;
    config cfg;
    int sets; /* copies of Q, K, V and O, used in turn */
    tj_buffer q[MAX_SETS], k[MAX_SETS], v[MAX_SETS], o[MAX_SETS];
} problem;

static tj_device *dev;
static int use_events = 1, runs = 10, warmup = 3;

static void record_begin(const problem *p)
{
    printf("{\"impl\":\"tjit\",\"what\":\"attention\",\"dtype\":\"f16\",\"n_ctx\":%d,"
           "\"head_dim\":%d,\"causal\":%s,\"z\":%d,\"h\":%d,"
           "\"config\":\"%dx%d, %d warps, %d stages%s\"",
           p->n_ctx, p->d, p->causal ? "true" : "false", Z, H, p->cfg.bm, p->cfg.bn, p->cfg.warps,
           p->cfg.stages, p->cfg.block_ptrs ? ", K/V block pointers" : "");
}

static void record_end(void)
{
    fputs(",\"device\":", stdout);
    json_string(tj_device_name(dev));
    puts("}");
    fflush(stdout);
}

static int record_error(const problem *p, const char *message)
{
    record_begin(p);
    fputs(",\"error\":", stdout);
    json_string(message);
    record_end();
    fprintf(stderr, "gpu_attention: %d d=%d %s: %s\n", p->n_ctx, p->d,
            p->causal ? "causal" : "full", message);
    return 0;
}

static const char *tj_failure(tj_status st)
{
    static char text[1024];
    snprintf(text, sizeof text, "%s: %s", tj_status_name(st), tj_last_error());
    return text;
}

static int profile; /* --profile: a single set, no warm-up (ncu counts the launches) */

static tj_status launch_set(const problem *p, int set)
{
    tj_launch_cfg cfg = {.grid = {(p->n_ctx + p->cfg.bm - 1) / p->cfg.bm, Z * H},
                         .num_warps = p->cfg.warps, .num_stages = p->cfg.stages};
    const int stride_m = p->d, stride_h = p->n_ctx * p->d, stride_z = H * stride_h;
    if (p->cfg.block_ptrs)
        return attention_block_ptr_f16_launch(dev, &cfg, p->q[set], p->k[set], p->v[set], p->o[set], 1.0 / sqrt(p->d),
                                              H, p->n_ctx,
                                              Z * H * p->n_ctx, p->cfg.bm, p->cfg.bn, p->d, p->causal);
    return attention_f16_launch(dev, &cfg, p->q[set], p->k[set], p->v[set], p->o[set], 1.0 / sqrt(p->d), H,
                                p->n_ctx, stride_z, stride_h, stride_m, p->cfg.bm, p->cfg.bn, p->d,
                                p->causal);
}

/* The set a timed launch takes: the next, each launch. */
static unsigned turn;

static tj_status launch(const void *problem_)
{
    const problem *p = problem_;
    return launch_set(p, (int)(turn++ % (unsigned)p->sets));
}

static uint16_t *host[4]; /* Q, K, V, O */

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_random(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}

enum { NORMALS = 1 << 16 };
static uint16_t normals[NORMALS]; /* f16 bits of standard normal draws */

static void fill_inputs(size_t count)
{
    if (normals[0] == 0)
        for (int i = 0; i < NORMALS; i++) {
            double u1 = ((double)(next_random() >> 11) + 1) * 0x1p-53;
            double u2 = (double)(next_random() >> 11) * 0x1p-53;
            normals[i] = tj_f32_to_f16((float)(sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2)));
        }
    for (int t = 0; t < 3; t++)
        for (size_t i = 0; i < count; i++)
            host[t][i] = normals[next_random() % NORMALS];
}

/* O on sampled rows against the softmax in double (the top comment). */
static int check(const problem *p, double *scores)
{
    const int n = p->n_ctx, d = p->d;
    for (int s = 0; s < CHECKED_ROWS; s++) {
        uint64_t r = next_random();
        size_t head = (size_t)(r % (Z * H));
        int i = s == 0 ? 0 : s == 1 ? n - 1 : (int)((r >> 32) % (uint64_t)n);
        const uint16_t *q = host[0] + (head * n + i) * d;
        int keys = p->causal ? i + 1 : n;
        double max = -INFINITY, sum = 0;
        for (int j = 0; j < keys; j++) {
            const uint16_t *k = host[1] + (head * n + j) * d;
            double dot = 0;
            for (int c = 0; c < d; c++)
                dot += (double)tj_f16_to_f32(q[c]) * tj_f16_to_f32(k[c]);
            scores[j] = dot / sqrt(d);
            max = fmax(max, scores[j]);
        }
        for (int j = 0; j < keys; j++)
            sum += scores[j] = exp(scores[j] - max);
        for (int c = 0; c < d; c++) {
            double want = 0;
            for (int j = 0; j < keys; j++)
                want += scores[j] * tj_f16_to_f32(host[2][(head * n + j) * d + c]);
            want /= sum;
            double got = tj_f16_to_f32(host[3][(head * n + i) * d + c]);
            if (!(fabs(got - want) <= 1e-2)) {
                fprintf(stderr, "gpu_attention: %d d=%d %s %dx%d: O[head %zu][%d][%d] = %.6g, "
                                "expected %.6g\n",
                        n, d, p->causal ? "causal" : "full", p->cfg.bm, p->cfg.bn, head, i, c,
                        got, want);
                return 0;
            }
        }
    }
    return 1;
}

/* Checks once, then times; one record. Returns whether it ran and was right. */
static int bench(const problem *p, double *scores)
{
    const size_t bytes = (size_t)Z * H * p->n_ctx * p->d * sizeof(uint16_t);
    memset(host[3], 0xff, bytes); /* NaN */
    tj_status st = tj_buffer_write(dev, p->o[0], 0, host[3], bytes);
    if (st == TJ_OK)
        st = launch_set(p, 0);
    if (st == TJ_OK)
        st = tj_buffer_read(dev, p->o[0], 0, host[3], bytes);
    if (st != TJ_OK)
        return record_error(p, tj_failure(st));
    int correct = check(p, scores);
    double median_ms;
    turn = 0;
    if (median_launch_ms(dev, use_events, warmup > p->sets || profile ? warmup : p->sets, runs, launch, p,
                         &median_ms, &st))
        return record_error(p, st != TJ_OK ? tj_failure(st) : "a CUDA event call failed");
    double flops = 4.0 * Z * H * (double)p->n_ctx * p->n_ctx * p->d * (p->causal ? 0.5 : 1);
    record_begin(p);
    printf(",\"runs\":%d,\"ms\":%.5f,\"tflops\":%.2f,\"correct\":%s,\"timer\":\"%s\"", runs,
           median_ms, flops / (median_ms * 1e-3) / 1e12, correct ? "true" : "false",
           use_events ? "cuda_events" : "wall_clock");
    record_end();
    return correct;
}

static int parse_count(const char *text, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || *end || v < 1 || v > 10000)
        return 0;
    *out = (int)v;
    return 1;
}

int main(int argc, char **argv)
{
    int quick = 0;
    tj_device_kind kind = TJ_DEVICE_GPU;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else if (!strcmp(argv[i], "--profile"))
            profile = 1;
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc && parse_count(argv[i + 1], &runs))
            i++;
        else if (!strcmp(argv[i], "--warmup") && i + 1 < argc &&
                 parse_count(argv[i + 1], &warmup))
            i++;
        else if (!strcmp(argv[i], "--device") && i + 1 < argc &&
                 (!strcmp(argv[i + 1], "gpu") || !strcmp(argv[i + 1], "cpu")))
            kind = !strcmp(argv[++i], "cpu") ? TJ_DEVICE_CPU : TJ_DEVICE_GPU;
        else {
            fprintf(stderr, "usage: %s [--runs N] [--warmup N] [--quick | --profile] [--device gpu|cpu]\n",
                    argv[0]);
            return 2;
        }
    }
    use_events = kind == TJ_DEVICE_GPU;
    if (profile)
        runs = 1, warmup = 0;
    unsetenv("TJIT_PTXAS"); /* debugging aids that would change what is timed */
    unsetenv("TJIT_LAUNCH_BLOCKING");
    unsetenv("TJIT_DUMP");
    tj_status st = tj_device_open(&dev, kind, 0);
    if (st != TJ_OK) {
        fprintf(stderr, "gpu_attention: %s\n", tj_failure(st));
        printf("{\"impl\":\"tjit\",\"what\":\"attention\",\"error\":");
        json_string(tj_failure(st));
        puts("}");
        return 2;
    }
    const char *why = use_events ? cuda_events_init() : NULL;
    if (why) {
        fprintf(stderr, "gpu_attention: %s\n", why);
        return 2;
    }
    static const int full[][3] = {{4096, 64, 0},   {4096, 64, 1},   {4096, 128, 0},
                                  {4096, 128, 1},  {16384, 64, 0},  {16384, 64, 1},
                                  {16384, 128, 0}, {16384, 128, 1}};
    static const int small[][3] = {{1024, 64, 0}, {1024, 128, 1}}, profiled[][3] = {{4096, 64, 1}};
    const size_t nproblems = quick ? 2 : profile ? 1 : sizeof full / sizeof full[0];
    const int max_n = quick ? 1024 : profile ? 4096 : 16384;
    const size_t max_bytes = (size_t)Z * H * max_n * 128 * sizeof(uint16_t);
    for (int t = 0; t < 4; t++)
        host[t] = xmalloc(max_bytes);
    double *scores = xmalloc((size_t)max_n * sizeof(double));
    int ok = 1;
    for (size_t pi = 0; pi < nproblems; pi++) {
        const int *pr = quick ? small[pi] : profile ? profiled[pi] : full[pi];
        problem p = {.n_ctx = pr[0], .d = pr[1], .causal = pr[2]};
        const size_t count = (size_t)Z * H * p.n_ctx * p.d, bytes = count * sizeof(uint16_t);
        fill_inputs(count);
        p.sets = profile ? 1 : rotated_sets(4 * bytes); /* Q, K, V and O */
        tj_buffer *bufs[4] = {p.q, p.k, p.v, p.o};
        st = TJ_OK;
        int allocated = 0; /* buffers: set allocated / 4, tensor allocated % 4 */
        while (allocated < 4 * p.sets && st == TJ_OK) {
            const int t = allocated % 4;
            tj_buffer *buf = &bufs[t][allocated / 4];
            if ((st = tj_buffer_alloc(dev, bytes, buf)) != TJ_OK)
                break;
            allocated++;
            if (t < 3)
                st = tj_buffer_write(dev, *buf, 0, host[t], bytes);
        }
        if (st != TJ_OK)
            ok = record_error(&p, tj_failure(st));
        for (size_t ci = 0; ci < NCONFIGS && st == TJ_OK; ci++) {
            if (quick && ci % (NCONFIGS / 2))
                continue;
            p.cfg = configs[ci];
            ok &= bench(&p, scores);
        }
        for (int i = 0; i < allocated; i++)
            tj_buffer_free(dev, bufs[i % 4][i / 4]);
    }
    tj_device_close(dev);
    for (int t = 0; t < 4; t++)
        free(host[t]);
    free(scores);
    return ok ? 0 : 1;
}
