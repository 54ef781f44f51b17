/* SPDX-License-Identifier: MIT */
/*
 * gpu_matmul — tjit's matmul on the GPU, timed with CUDA events, for the
 * comparison with cuBLAS (torch.matmul) and Triton's tutorial matmul
 * (bench/triton_matmul.py; bench/gpu_matmul.sh runs all three and joins
 * them).
 *
 * The kernel is samples/matmul.c's (Triton's tutorial 03): a 1-D grid of
 * BM x BN tiles grouped by GROUP_M = 8 rows, a TJ_FOR loop over K with
 * masked tail loads, tj_dot accumulating in f32, C in the inputs' dtype
 * (f32 for TF32), strides for every operand. The problems (the issue's
 * list): f16 and bf16 at 4096^3 and 8192^3, f32 with TF32 input precision
 * at 8192^3, each NN (B row-major, K x N) and NT (B stored N x K, read
 * through its strides: C = A B^T with B^T's rows contiguous along K).
 * Each problem runs in several configurations of that kernel (BM, BN, BK,
 * warps, stages; TF32's include 256x128, whose NN runs transposed as one
 * m64n256 per warpgroup and K step; 128x128x64 at 2 stages fits two CTAs
 * in an SM, at 8 warps it has two warpgroups of wgmma; 256x128x64, cuBLAS's
 * tile, gives each consumer warpgroup 128 rows) and in several
 * of its block-pointer form (samples/matmul_kernel.h's
 * matmul_block_ptr_body, whose loads are TMA copies on Hopper, issued by a
 * producer warpgroup; one configuration again without it, "no warp spec")
 * and in several of its persistent form (matmul_persistent_body: one
 * program per SM walking the tiles, the producer loading the next tile
 * while the consumers store C); two block-pointer configurations walk
 * the tiles in groups of 16 rows instead of 8 (a persistent grid's 132
 * tiles at a time then span 16 rows of A and half of B at 4096^3, not 8
 * rows and all of B: fewer L2 misses); two configurations run the
 * persistent kernel's blocks in pairs that multicast the tiles both read
 * (src/passes/cluster_pairs.c, TJ_CLUSTER_ON); two, for NT alone, walk B
 * as [N, K] and read its tiles through tj_trans (Triton's
 * tl.dot(a, b.T)); two split the persistent kernel's last wave along K
 * (stream-K, src/passes/stream_k.c, TJ_STREAM_K_ON);
 * each is a record, and the table keeps the best one. --profile DTYPE runs
 * DTYPE (f16, bf16 or tf32) at 4096^3 only, NN then NT, each configuration
 * launched twice (the check, one run), for Nsight Compute
 * (scripts/gpu-ncu.sh matmul).
 *
 * Method, the same as triton_matmul.py: inputs random normal (zeros run
 * faster on tensor cores; each element one of 2^16 normal draws picked at
 * random), C poisoned with NaN and checked once on 256
 * sampled elements against a double-precision dot product of the same
 * inputs, within 2 K 2^-23 sum |a b| plus C's rounding (TF32: + 2^-10 of
 * sum |a b|); then WARMUP launches and RUNS launches each between two CUDA
 * events on the default stream, enqueued back to back, each on the next of
 * two to eight copies of A, B and C (rotated buffers: together at least
 * 256 MiB, past 3x the L2); the figure is the median interval
 * (gpu_timing.h). TFLOP/s counts 2 M N K per product.
 *
 * Output: one JSON line per measurement ("impl":"tjit","what":"matmul"),
 * with "first_launch_ms", the wall time of its first tj_launch: the cold
 * compile (build, passes, LLVM to PTX, the driver's load of it) where
 * no earlier problem compiled the same variant, microseconds where one did;
 * a failed build or launch is a line with "error" and the run goes on. The
 * exit status is 1 when anything failed or computed a wrong result.
 *
 *     usage: gpu_matmul [--runs N] [--warmup N] [--quick | --profile DTYPE] [--only DTYPE]
 *                       [--device gpu|cpu]
 *     (--quick: 512^3 and 1024^3, one pipelined configuration, for a smoke
 *      test, with TJIT_DUMP left as it is;
 *      --only DTYPE: the problems of that dtype alone;
 *      --device cpu: the same on tjit's CPU back end, timed by wall clock)
 */
#define _GNU_SOURCE /* setenv */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tjit.h"
#include "gpu_timing.h"
#include "../samples/matmul_kernel.h"

enum { GROUP_M = 8, CHECKED_ELEMENTS = 256 };

/* The tutorial's kernel (body matmul_tutorial_body) or its block-pointer
 * form (matmul_block_ptr_body, TMA copies on Hopper): one signature; the
 * block-pointer kernels take the tile order's group of rows (GROUP) as a
 * constant of their own. */
#define MATMUL_PARAMS(dt)                                                                     \
    TJ_PARAMS(TJ_PTR(a, dt), TJ_PTR(b, dt), TJ_PTR(c, dt), TJ_SCALAR(M, i32), TJ_SCALAR(N, i32), \
              TJ_SCALAR(K, i32), TJ_SCALAR(stride_am, i32), TJ_SCALAR(stride_ak, i32),        \
              TJ_SCALAR(stride_bk, i32), TJ_SCALAR(stride_bn, i32), TJ_SCALAR(stride_cm, i32), \
              TJ_SCALAR(stride_cn, i32))
#define MATMUL_KERNEL(name, dt, c_dtype, body)                                                \
    TJ_KERNEL(name, MATMUL_PARAMS(dt), TJ_CONSTS(BM, BN, BK, PRECISION))                      \
    {                                                                                         \
        body(a, b, c, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm,         \
             stride_cn, BM, BN, BK, GROUP_M, (tj_input_precision)PRECISION, c_dtype);          \
    }
#define MATMUL_GROUP_KERNEL(name, dt, c_dtype, body)                                          \
    TJ_KERNEL(name, MATMUL_PARAMS(dt), TJ_CONSTS(BM, BN, BK, PRECISION, GROUP))               \
    {                                                                                         \
        body(a, b, c, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm,         \
             stride_cn, BM, BN, BK, GROUP, (tj_input_precision)PRECISION, c_dtype);            \
    }

MATMUL_KERNEL(matmul_f16, f16, TJ_F16, matmul_tutorial_body)
MATMUL_KERNEL(matmul_bf16, bf16, TJ_BF16, matmul_tutorial_body)
MATMUL_KERNEL(matmul_f32, f32, TJ_F32, matmul_tutorial_body)
MATMUL_GROUP_KERNEL(matmul_bp_f16, f16, TJ_F16, matmul_block_ptr_body)
MATMUL_GROUP_KERNEL(matmul_bp_bf16, bf16, TJ_BF16, matmul_block_ptr_body)
MATMUL_GROUP_KERNEL(matmul_bp_f32, f32, TJ_F32, matmul_block_ptr_body)
MATMUL_GROUP_KERNEL(matmul_ps_f16, f16, TJ_F16, matmul_persistent_body)
MATMUL_GROUP_KERNEL(matmul_ps_bf16, bf16, TJ_BF16, matmul_persistent_body)
MATMUL_GROUP_KERNEL(matmul_ps_f32, f32, TJ_F32, matmul_persistent_body)
MATMUL_GROUP_KERNEL(matmul_nk_f16, f16, TJ_F16, matmul_block_ptr_nk_body)
MATMUL_GROUP_KERNEL(matmul_nk_bf16, bf16, TJ_BF16, matmul_block_ptr_nk_body)

/* The configurations tried: the same lists as triton_matmul.py's (the
 * first, one stage, shows what pipelining gives). */
typedef struct config {
    int bm, bn, bk, warps, stages;
    int block_ptr; /* the block-pointer kernel (TMA on Hopper; a launch makes it persistent
                      there, src/passes/persistent.c); 2: its hand-written persistent form
                      (tutorial 09); 3: the block-pointer kernel as written */
    int no_warp_spec; /* its loop without a producer warpgroup (TJ_WARP_SPECIALIZE_OFF) */
    int group_m;      /* the block-pointer kernels' rows of tiles walked together; 0: GROUP_M */
    int pairs;        /* made persistent, its blocks in pairs (TJ_CLUSTER_ON) */
    int b_nk;         /* the block-pointer kernel walking B as [N, K], its tiles through
                         tj_trans (matmul_block_ptr_nk_body); NT problems only */
    int stream_k;     /* made persistent, its last wave split along K (TJ_STREAM_K_ON) */
} config;
enum { NHALF_CONFIGS = 30, NTF32_CONFIGS = 14 };
static const config half_configs[NHALF_CONFIGS] = {
    {128, 128, 32, 4, 1, 0, 0, 0, 0, 0, 0}, {128, 128, 32, 4, 4, 0, 0, 0, 0, 0, 0}, {128, 128, 64, 4, 4, 0, 0, 0, 0, 0, 0},
    {64, 256, 32, 4, 4, 0, 0, 0, 0, 0, 0},  {128, 256, 32, 8, 3, 0, 0, 0, 0, 0, 0}, {128, 256, 64, 8, 3, 0, 0, 0, 0, 0, 0},
    {128, 128, 64, 4, 2, 0, 0, 0, 0, 0, 0}, {128, 128, 64, 8, 3, 0, 0, 0, 0, 0, 0}, {128, 256, 64, 8, 3, 1, 0, 0, 0, 0, 0},
    {128, 256, 64, 8, 2, 1, 0, 0, 0, 0, 0}, {128, 128, 64, 8, 4, 1, 0, 0, 0, 0, 0}, {128, 256, 64, 8, 3, 1, 1, 0, 0, 0, 0},
    {128, 128, 64, 4, 4, 1, 0, 0, 0, 0, 0}, {128, 256, 64, 8, 2, 2, 0, 0, 0, 0, 0}, {128, 256, 64, 8, 2, 2, 1, 0, 0, 0, 0},
    {128, 256, 32, 8, 4, 2, 0, 0, 0, 0, 0}, {128, 256, 32, 8, 5, 2, 0, 0, 0, 0, 0}, {128, 256, 64, 8, 3, 3, 0, 0, 0, 0, 0},
    {128, 128, 64, 8, 4, 3, 0, 0, 0, 0, 0}, {256, 128, 64, 8, 3, 1, 0, 0, 0, 0, 0}, {256, 128, 64, 8, 2, 1, 0, 0, 0, 0, 0},
    {256, 128, 64, 8, 2, 2, 0, 0, 0, 0, 0}, {128, 256, 64, 8, 3, 1, 0, 16, 0, 0, 0}, {128, 256, 64, 8, 2, 1, 0, 16, 0, 0, 0},
    {128, 256, 64, 8, 3, 1, 0, 0, 1, 0, 0}, {128, 256, 64, 8, 3, 1, 0, 16, 1, 0, 0}, {128, 256, 64, 8, 3, 1, 0, 0, 0, 1, 0},
    {128, 256, 64, 8, 3, 1, 0, 16, 0, 1, 0}, {128, 256, 64, 8, 3, 1, 0, 0, 0, 0, 1},
    {128, 256, 64, 8, 3, 1, 0, 16, 0, 0, 1}};
static const config tf32_configs[NTF32_CONFIGS] = {
    {128, 128, 32, 4, 1, 0, 0, 0, 0, 0, 0}, {128, 128, 32, 4, 3, 0, 0, 0, 0, 0, 0}, {128, 128, 16, 4, 4, 0, 0, 0, 0, 0, 0},
    {64, 256, 32, 4, 4, 0, 0, 0, 0, 0, 0},  {128, 256, 32, 8, 3, 0, 0, 0, 0, 0, 0}, {128, 128, 32, 8, 3, 0, 0, 0, 0, 0, 0},
    {128, 128, 16, 4, 3, 0, 0, 0, 0, 0, 0}, {128, 64, 32, 4, 4, 0, 0, 0, 0, 0, 0},  {128, 256, 32, 8, 3, 1, 0, 0, 0, 0, 0},
    {128, 128, 32, 8, 4, 1, 0, 0, 0, 0, 0}, {128, 256, 32, 8, 3, 1, 1, 0, 0, 0, 0}, {128, 128, 32, 8, 3, 2, 0, 0, 0, 0, 0},
    {256, 128, 32, 8, 3, 0, 0, 0, 0, 0, 0}, {128, 256, 32, 8, 3, 1, 0, 16, 0, 0, 0}};

/* ---- output ------------------------------------------------------------------- */

static tj_device *dev;
static int use_events = 1, runs = 10, warmup = 3;

typedef struct problem {
    const char *dtype; /* "f16", "bf16", "tf32" */
    int n;             /* M = N = K */
    int nt;            /* B stored N x K */
    config cfg;
    int sets;                           /* copies of A, B and C, used in turn */
    tj_buffer a[MAX_SETS], b[MAX_SETS], c[MAX_SETS];
} problem;

/* The set of buffers a timed launch takes: the next, each launch. */
static unsigned turn;

static void record_begin(const problem *p)
{
    printf("{\"impl\":\"tjit\",\"what\":\"matmul\",\"dtype\":\"%s\",\"size\":%d,\"layout\":\"%s\","
           "\"config\":\"%dx%dx%d, %d warps, %d stages%s%s",
           p->dtype, p->n, p->nt ? "NT" : "NN", p->cfg.bm, p->cfg.bn, p->cfg.bk, p->cfg.warps,
           p->cfg.stages,
           p->cfg.block_ptr == 2   ? ", persistent"
           : p->cfg.block_ptr == 3 ? ", block ptr, not persistent"
           : p->cfg.block_ptr      ? ", block ptr"
                                   : "",
           p->cfg.no_warp_spec ? ", no warp spec" : "");
    if (p->cfg.group_m)
        printf(", tile rows grouped by %d", p->cfg.group_m);
    if (p->cfg.pairs)
        printf(", block pairs");
    if (p->cfg.b_nk)
        printf(", B [N, K] through tj_trans");
    if (p->cfg.stream_k)
        printf(", stream-K");
    putchar('"');
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
    fprintf(stderr, "gpu_matmul: %s %d %s: %s\n", p->dtype, p->n, p->nt ? "NT" : "NN", message);
    return 0;
}

static const char *tj_failure(tj_status st)
{
    static char text[1024];
    snprintf(text, sizeof text, "%s: %s", tj_status_name(st), tj_last_error());
    return text;
}

/* ---- one problem -------------------------------------------------------------- */

/* One launch of p on its set of buffers `set`. */
static tj_status launch_set(const problem *p, int set)
{
    tj_launch_cfg cfg = {.grid = {(int64_t)((p->n + p->cfg.bm - 1) / p->cfg.bm) *
                                  ((p->n + p->cfg.bn - 1) / p->cfg.bn)},
                         .num_warps = p->cfg.warps, .num_stages = p->cfg.stages,
                         .warp_specialize = p->cfg.no_warp_spec ? TJ_WARP_SPECIALIZE_OFF : TJ_WARP_SPECIALIZE_DEFAULT,
                         .persistent = p->cfg.block_ptr == 3 ? TJ_PERSISTENT_OFF : TJ_PERSISTENT_DEFAULT,
                         .version = TJ_LAUNCH_CFG_VERSION,
                         .cluster = p->cfg.pairs ? TJ_CLUSTER_ON : TJ_CLUSTER_DEFAULT,
                         .stream_k = p->cfg.stream_k ? TJ_STREAM_K_ON : TJ_STREAM_K_DEFAULT};
    const int n = p->n;
    const tj_buffer a = p->a[set], b = p->b[set], c = p->c[set];
    /* NN: B(k, j) at k * N + j; NT: at j * K + k. */
    const int sbk = p->nt ? 1 : n, sbn = p->nt ? n : 1;
    if (p->cfg.block_ptr == 2 && cfg.grid[0] > tj_device_processors(dev))
        cfg.grid[0] = tj_device_processors(dev); /* one program per SM, walking the tiles */
    if (p->cfg.block_ptr) {
        const int f16 = !strcmp(p->dtype, "f16"), bf16 = !strcmp(p->dtype, "bf16");
        const tj_kernel *k = p->cfg.b_nk ? (f16 ? matmul_nk_f16 : matmul_nk_bf16)
                             : f16 ? (p->cfg.block_ptr == 2 ? matmul_ps_f16 : matmul_bp_f16)
                             : bf16 ? (p->cfg.block_ptr == 2 ? matmul_ps_bf16 : matmul_bp_bf16)
                             : (p->cfg.block_ptr == 2 ? matmul_ps_f32 : matmul_bp_f32);
        int64_t consts[5] = {p->cfg.bm, p->cfg.bn, p->cfg.bk,
                             !strcmp(p->dtype, "tf32") ? TJ_PRECISION_TF32 : TJ_PRECISION_IEEE,
                             p->cfg.group_m ? p->cfg.group_m : GROUP_M};
        tj_arg args[12] = {TJ_ARG_BUF(a), TJ_ARG_BUF(b), TJ_ARG_BUF(c), TJ_ARG_I32(n), TJ_ARG_I32(n),
                           TJ_ARG_I32(n), TJ_ARG_I32(n), TJ_ARG_I32(1), TJ_ARG_I32(sbk), TJ_ARG_I32(sbn),
                           TJ_ARG_I32(n), TJ_ARG_I32(1)};
        return tj_launch(dev, k, &cfg, args, 12, consts, 5);
    }
    if (!strcmp(p->dtype, "f16"))
        return matmul_f16_launch(dev, &cfg, a, b, c, n, n, n, n, 1, sbk, sbn, n, 1,
                                 p->cfg.bm, p->cfg.bn, p->cfg.bk, TJ_PRECISION_IEEE);
    if (!strcmp(p->dtype, "bf16"))
        return matmul_bf16_launch(dev, &cfg, a, b, c, n, n, n, n, 1, sbk, sbn, n, 1,
                                  p->cfg.bm, p->cfg.bn, p->cfg.bk, TJ_PRECISION_IEEE);
    return matmul_f32_launch(dev, &cfg, a, b, c, n, n, n, n, 1, sbk, sbn, n, 1, p->cfg.bm,
                             p->cfg.bn, p->cfg.bk, TJ_PRECISION_TF32);
}

/* A timed launch: on the next set of buffers. */
static tj_status launch(const void *problem_)
{
    const problem *p = problem_;
    return launch_set(p, (int)(turn++ % (unsigned)p->sets));
}

static size_t elem_size(const char *dtype) { return !strcmp(dtype, "tf32") ? 4 : 2; }

static double load_elem(const char *dtype, const void *base, size_t i)
{
    if (!strcmp(dtype, "tf32"))
        return ((const float *)base)[i];
    uint16_t bits = ((const uint16_t *)base)[i];
    return !strcmp(dtype, "f16") ? tj_f16_to_f32(bits) : tj_bf16_to_f32(bits);
}

/* Host images of A and B (random normal, in the dtype), shared by every
 * problem of a dtype and size. */
static void *host_a, *host_b, *host_c;

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint64_t next_random(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}

/* Standard normal numbers (Box-Muller), NORMALS of them, drawn from at
 * random for each element: 2 x 8192^2 transcendental draws per problem
 * would take seconds of the benchmark's time. */
enum { NORMALS = 1 << 16 };
static float normals[NORMALS];

static void fill_inputs(const char *dtype, size_t count)
{
    if (normals[0] == 0)
        for (int i = 0; i < NORMALS; i++) {
            double u1 = ((double)(next_random() >> 11) + 1) * 0x1p-53;
            double u2 = (double)(next_random() >> 11) * 0x1p-53;
            normals[i] = (float)(sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2));
        }
    for (int which = 0; which < 2; which++) {
        void *dst = which ? host_b : host_a;
        for (size_t i = 0; i < count; i++) {
            float x = normals[next_random() % NORMALS];
            if (!strcmp(dtype, "tf32"))
                ((float *)dst)[i] = x;
            else
                ((uint16_t *)dst)[i] = !strcmp(dtype, "f16") ? tj_f32_to_f16(x) : tj_f32_to_bf16(x);
        }
    }
}

/* C on sampled elements against the double dot product (the top comment). */
static int check(const problem *p)
{
    const int n = p->n;
    const double out_eps = !strcmp(p->dtype, "tf32") ? 0x1p-24
                           : !strcmp(p->dtype, "f16") ? 0x1p-11 : 0x1p-8;
    const double in_eps = !strcmp(p->dtype, "tf32") ? 0x1p-9 : 0; /* two inputs truncated */
    for (int s = 0; s < CHECKED_ELEMENTS; s++) {
        uint64_t r = next_random();
        int i = (int)(r % (uint64_t)n), j = (int)((r >> 32) % (uint64_t)n);
        if (s < 4) /* the corners */
            i = s & 1 ? n - 1 : 0, j = s & 2 ? n - 1 : 0;
        double sum = 0, mag = 0;
        for (int k = 0; k < n; k++) {
            double x = load_elem(p->dtype, host_a, (size_t)i * n + k);
            double y = load_elem(p->dtype, host_b, p->nt ? (size_t)j * n + k : (size_t)k * n + j);
            sum += x * y;
            mag += fabs(x * y);
        }
        double got = load_elem(p->dtype, host_c, (size_t)i * n + j);
        double tol = (2.0 * n * 0x1p-23 + in_eps) * mag + out_eps * fabs(sum) + 1e-30;
        if (!(fabs(got - sum) <= tol)) {
            fprintf(stderr, "gpu_matmul: %s %d %s %dx%dx%d: C[%d][%d] = %.9g, expected %.9g\n",
                    p->dtype, n, p->nt ? "NT" : "NN", p->cfg.bm, p->cfg.bn, p->cfg.bk, i, j, got,
                    sum);
            return 0;
        }
    }
    return 1;
}

/* Checks once, then times; one record. Returns whether it ran and was right. */
static int bench(const problem *p)
{
    const size_t count = (size_t)p->n * p->n, bytes = count * elem_size(p->dtype);
    memset(host_c, 0xff, bytes); /* NaN in every dtype */
    tj_status st = tj_buffer_write(dev, p->c[0], 0, host_c, bytes);
    /* the first launch of a configuration compiles it (and the driver loads
     * the PTX): its wall time is the cold compile, where no earlier problem
     * compiled the same variant */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (st == TJ_OK)
        st = launch_set(p, 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double first_ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-6;
    if (st == TJ_OK)
        st = tj_buffer_read(dev, p->c[0], 0, host_c, bytes);
    if (st != TJ_OK)
        return record_error(p, tj_failure(st));
    int correct = check(p);
    double median_ms;
    if (median_launch_ms(dev, use_events, warmup, runs, launch, p, &median_ms, &st))
        return record_error(p, st != TJ_OK ? tj_failure(st) : "a CUDA event call failed");
    record_begin(p);
    printf(",\"runs\":%d,\"ms\":%.5f,\"tflops\":%.2f,\"correct\":%s,\"timer\":\"%s\",\"first_launch_ms\":%.3f",
           runs, median_ms, 2.0 * p->n * (double)p->n * p->n / (median_ms * 1e-3) / 1e12,
           correct ? "true" : "false", use_events ? "cuda_events" : "wall_clock", first_ms);
    record_end();
    return correct;
}

/* Frees the buffers p holds (a zero handle is none). */
static void free_sets(problem *p)
{
    for (int i = 0; i < MAX_SETS; i++) {
        tj_buffer held[3] = {p->a[i], p->b[i], p->c[i]};
        for (int j = 0; j < 3; j++)
            if (held[j].handle)
                tj_buffer_free(dev, held[j]);
    }
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
    int quick = 0, profile = 0;
    const char *profile_dtype = "f16", *only = NULL;
    tj_device_kind kind = TJ_DEVICE_GPU;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else if (!strcmp(argv[i], "--profile") && i + 1 < argc &&
                 (!strcmp(argv[i + 1], "f16") || !strcmp(argv[i + 1], "bf16") ||
                  !strcmp(argv[i + 1], "tf32")))
            profile = 1, profile_dtype = argv[++i];
        else if (!strcmp(argv[i], "--only") && i + 1 < argc &&
                 (!strcmp(argv[i + 1], "f16") || !strcmp(argv[i + 1], "bf16") ||
                  !strcmp(argv[i + 1], "tf32")))
            only = argv[++i];
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc && parse_count(argv[i + 1], &runs))
            i++;
        else if (!strcmp(argv[i], "--warmup") && i + 1 < argc &&
                 parse_count(argv[i + 1], &warmup))
            i++;
        else if (!strcmp(argv[i], "--device") && i + 1 < argc &&
                 (!strcmp(argv[i + 1], "gpu") || !strcmp(argv[i + 1], "cpu")))
            kind = !strcmp(argv[++i], "cpu") ? TJ_DEVICE_CPU : TJ_DEVICE_GPU;
        else {
            fprintf(stderr, "usage: %s [--runs N] [--warmup N] [--quick | --profile f16|bf16|tf32] "
                            "[--only f16|bf16|tf32] [--device gpu|cpu]\n",
                    argv[0]);
            return 2;
        }
    }
    if (profile)
        quick = 0, runs = 1, warmup = 0;
    use_events = kind == TJ_DEVICE_GPU;
    /* Debugging aids that would change what is timed; --quick, a smoke
     * test, keeps TJIT_DUMP (gpu-run.sh reads its kernels' PTX). */
    unsetenv("TJIT_PTXAS");
    unsetenv("TJIT_LAUNCH_BLOCKING");
    if (!quick)
        unsetenv("TJIT_DUMP");
    tj_status st = tj_device_open(&dev, kind, 0);
    if (st != TJ_OK) {
        fprintf(stderr, "gpu_matmul: %s\n", tj_failure(st));
        printf("{\"impl\":\"tjit\",\"what\":\"matmul\",\"error\":");
        json_string(tj_failure(st));
        puts("}");
        return 2;
    }
    const char *why = use_events ? cuda_events_init() : NULL;
    if (why) {
        fprintf(stderr, "gpu_matmul: %s\n", why);
        return 2;
    }
    /* The problems: f16 and bf16 at 4096 and 8192, tf32 at 8192. */
    static const struct { const char *dtype; int n; } problems[] = {
        {"f16", 4096}, {"f16", 8192}, {"bf16", 4096}, {"bf16", 8192}, {"tf32", 8192}};
    static const struct { const char *dtype; int n; } quick_problems[] = {
        {"f16", 512}, {"bf16", 1024}, {"tf32", 512}};
    const size_t nproblems = quick ? 3 : profile ? 1 : sizeof problems / sizeof problems[0];
    const size_t max_bytes = (size_t)(quick ? 1024 : 8192) * (quick ? 1024 : 8192) * 4;
    host_a = xmalloc(max_bytes), host_b = xmalloc(max_bytes), host_c = xmalloc(max_bytes);
    int ok = 1;
    for (size_t pi = 0; pi < nproblems; pi++) {
        problem p = {.dtype = quick ? quick_problems[pi].dtype : problems[pi].dtype,
                     .n = quick ? quick_problems[pi].n : problems[pi].n};
        if (profile)
            p.dtype = profile_dtype, p.n = 4096;
        else if (only && strcmp(p.dtype, only))
            continue;
        const size_t count = (size_t)p.n * p.n, bytes = count * elem_size(p.dtype);
        fill_inputs(p.dtype, count);
        p.sets = rotated_sets(3 * bytes); /* A, B and C */
        st = TJ_OK;
        for (int i = 0; i < p.sets && st == TJ_OK; i++) {
            st = tj_buffer_alloc(dev, bytes, &p.a[i]);
            if (st == TJ_OK)
                st = tj_buffer_alloc(dev, bytes, &p.b[i]);
            if (st == TJ_OK)
                st = tj_buffer_alloc(dev, bytes, &p.c[i]);
            if (st == TJ_OK)
                st = tj_buffer_write(dev, p.a[i], 0, host_a, bytes);
            if (st == TJ_OK)
                st = tj_buffer_write(dev, p.b[i], 0, host_b, bytes);
        }
        if (st != TJ_OK) {
            ok = record_error(&p, tj_failure(st));
            free_sets(&p);
            continue;
        }
        const int is_tf32 = !strcmp(p.dtype, "tf32");
        const config *configs = is_tf32 ? tf32_configs : half_configs;
        /* --quick: the second configuration, 128x128x32 pipelined (the first,
         * one stage, is mma.sync even on Hopper) */
        const size_t first = quick ? 1 : 0, nconfigs = quick ? 2 : is_tf32 ? NTF32_CONFIGS : NHALF_CONFIGS;
        for (int nt = 0; nt < 2; nt++)
            for (size_t ci = first; ci < nconfigs; ci++) {
                p.nt = nt;
                p.cfg = configs[ci];
                if (!p.cfg.b_nk || nt)
                    ok &= bench(&p);
            }
        free_sets(&p);
    }
    tj_device_close(dev);
    free(host_a), free(host_b), free(host_c);
    return ok ? 0 : 1;
}
