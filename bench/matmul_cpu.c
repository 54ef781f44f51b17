/* SPDX-License-Identifier: MIT */
/*
 * matmul_cpu — tjit's CPU matmul (tj_dot in Triton's tutorial-03 kernel)
 * against OpenBLAS's sgemm, f32, on the same number of threads.
 *
 * The tjit side is samples/matmul.c's kernel for f32: a 1-D grid of BM x BN
 * tiles in groups of GROUP_M rows, a TJ_FOR loop over K in BK steps whose
 * tj_dot accumulates in f32 (the CPU back end's blocked, vectorized loop
 * nest), masks on every edge. It runs in a few tile configurations, each
 * reported, the best one being the figure. The other side is
 * cblas_sgemm (row-major, no transposes, alpha 1, beta 0). Both get the
 * same threads: tjit's grid runs on its pool of TJIT_NUM_THREADS threads,
 * else one per core this process may use, and OpenBLAS is told the same
 * count with openblas_set_num_threads.
 *
 * Method: random inputs uniform in [-1, 1); one warm-up of each side (tjit's
 * also builds and compiles the kernel), after which tjit's C is checked
 * against OpenBLAS's within the error bound of K f32 accumulations
 * (2 K 2^-24 sum |a b|, sum |a b| bounded by K for these inputs); then runs
 * of the two alternate, so drift in a shared machine hits both alike; each
 * figure is the median of the runs. GFLOP/s counts 2 M N K per product.
 *
 * Output: one JSON line per tjit configuration (GFLOP/s of both sides, the
 * ratio tjit / OpenBLAS, from the runs alternated with it) and a last line:
 * tjit's fastest configuration against OpenBLAS's median over all its runs,
 * next to the project's target (>= 0.5). The exit status is non-zero when
 * tjit fails or computes a wrong result, not when the target is missed.
 *
 *     usage: matmul_cpu [--quick] [--runs N] [--size N]
 *     (default: 2048^3, 7 runs; --quick: 512^3, 3 runs, for a smoke test)
 */
#define _GNU_SOURCE /* sched_getaffinity */
#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tjit.h"
#include "bench_util.h"

enum { GROUP_M = 8, MAX_RUNS = 101 };

TJ_KERNEL(matmul_kernel,
          TJ_PARAMS(TJ_PTR(a, f32), TJ_PTR(b, f32), TJ_PTR(c, f32), TJ_SCALAR(M, i32),
                    TJ_SCALAR(N, i32), TJ_SCALAR(K, i32), TJ_SCALAR(stride_am, i32),
                    TJ_SCALAR(stride_bk, i32), TJ_SCALAR(stride_cm, i32)),
          TJ_CONSTS(BM, BN, BK))
{
    tj_val pid = tj_program_id(0);
    tj_val num_pid_m = tj_cdiv(M, BM), num_pid_n = tj_cdiv(N, BN);
    tj_val num_pid_in_group = tj_mul(num_pid_n, GROUP_M);
    tj_val first_pid_m = tj_mul(tj_floordiv(pid, num_pid_in_group), GROUP_M);
    tj_val group_size_m = tj_minimum(tj_sub(num_pid_m, first_pid_m), GROUP_M);
    tj_val pid_in_group = tj_mod(pid, num_pid_in_group);
    tj_val pid_m = tj_add(first_pid_m, tj_mod(pid_in_group, group_size_m));
    tj_val pid_n = tj_floordiv(pid_in_group, group_size_m);

    tj_val rm = tj_expand_dims(tj_add(tj_mul(pid_m, BM), tj_arange(0, BM)), 1);
    tj_val rn = tj_expand_dims(tj_add(tj_mul(pid_n, BN), tj_arange(0, BN)), 0);
    tj_val rk = tj_arange(0, BK);
    tj_val in_m = tj_lt(rm, M), in_n = tj_lt(rn, N);
    tj_val a_ptrs = tj_add(a, tj_add(tj_mul(rm, stride_am), tj_expand_dims(rk, 0)));
    tj_val b_ptrs = tj_add(b, tj_add(tj_mul(tj_expand_dims(rk, 1), stride_bk), rn));
    tj_val acc = tj_zeros(TJ_SHAPE(BM, BN), TJ_F32);
    TJ_FOR(k, 0, tj_cdiv(K, BK), 1, &acc, &a_ptrs, &b_ptrs) {
        tj_val k_left = tj_sub(K, tj_mul(k, BK));
        tj_val a_tile = tj_load(a_ptrs, .mask = tj_and(in_m, tj_lt(tj_expand_dims(rk, 0), k_left)));
        tj_val b_tile = tj_load(b_ptrs, .mask = tj_and(tj_lt(tj_expand_dims(rk, 1), k_left), in_n));
        acc = tj_dot(a_tile, b_tile, acc);
        a_ptrs = tj_add(a_ptrs, BK);
        b_ptrs = tj_add(b_ptrs, tj_mul(stride_bk, BK));
    }
    tj_store(tj_add(c, tj_add(tj_mul(rm, stride_cm), rn)), acc, .mask = tj_and(in_m, in_n));
}

#define CHECK(call)                                                           \
    do {                                                                      \
        tj_status check_status_ = (call);                                     \
        if (check_status_ != TJ_OK) {                                         \
            fprintf(stderr, "%s:%d: %s failed: %s\n%s\n", __FILE__, __LINE__, \
                    #call, tj_status_name(check_status_), tj_last_error());   \
            exit(2);                                                          \
        }                                                                     \
    } while (0)

/* The tile configurations tried (BM, BN, BK). */
static const int64_t configs[][3] = {
    {128, 128, 32}, {128, 128, 128}, {256, 128, 128}, {256, 256, 64}, {256, 256, 128}};

struct problem {
    tj_device *dev;
    int32_t n; /* M = N = K */
    const int64_t *config;
    tj_buffer a, b, c;
    const float *ha, *hb;
    float *hc;
};

static void tjit_run(const struct problem *p)
{
    const int64_t bm = p->config[0], bn = p->config[1];
    tj_launch_cfg cfg = {.grid = {((p->n + bm - 1) / bm) * ((p->n + bn - 1) / bn)}};
    CHECK(matmul_kernel_launch(p->dev, &cfg, p->a, p->b, p->c, p->n, p->n, p->n, p->n, p->n,
                               p->n, bm, bn, p->config[2]));
}

static void blas_run(const struct problem *p)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, p->n, p->n, p->n, 1.0f, p->ha, p->n,
                p->hb, p->n, 0.0f, p->hc, p->n);
}

/* The thread count of tjit's CPU grid, by its rule (threadpool.c): the
 * cores this process may run on, or TJIT_NUM_THREADS where set. */
static int tjit_threads(void)
{
    const char *env = getenv("TJIT_NUM_THREADS");
    if (env && *env) {
        char *end;
        errno = 0;
        long v = strtol(env, &end, 10);
        if (!errno && !*end && v > 0)
            return v > 1024 ? 1024 : (int)v;
    }
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    return cores > 0 ? (int)cores : 1;
}

static int parse_count(const char *text, int lo, int hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return 0;
    *out = (int)v;
    return 1;
}

int main(int argc, char **argv)
{
    int n = 2048, runs = 7;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            n = 512, runs = 3;
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc &&
                 parse_count(argv[i + 1], 1, MAX_RUNS, &runs))
            i++;
        else if (!strcmp(argv[i], "--size") && i + 1 < argc &&
                 parse_count(argv[i + 1], 1, 16384, &n))
            i++;
        else {
            fprintf(stderr, "usage: %s [--quick] [--runs N] [--size N]\n", argv[0]);
            return 2;
        }
    }
    unsetenv("TJIT_PTXAS"); /* a ptxas run per compile is not what is measured */
    const int threads = tjit_threads();
    openblas_set_num_threads(threads);
    tj_device *dev;
    CHECK(tj_device_open(&dev, TJ_DEVICE_CPU, 0));

    const size_t count = (size_t)n * (size_t)n;
    float *ha = xmalloc(count * sizeof(float)), *hb = xmalloc(count * sizeof(float));
    float *hc = xmalloc(count * sizeof(float)), *got = xmalloc(count * sizeof(float));
    uint64_t state = 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
    for (size_t i = 0; i < 2 * count; i++) {
        state ^= state << 13, state ^= state >> 7, state ^= state << 17;
        float x = -1.0f + 2.0f * (float)(state >> 40) * (1.0f / 16777216.0f);
        (i < count ? ha : hb)[i % count] = x;
    }
    struct problem p = {dev, n, NULL, {0}, {0}, {0}, ha, hb, hc};
    CHECK(tj_buffer_alloc(dev, count * sizeof(float), &p.a));
    CHECK(tj_buffer_alloc(dev, count * sizeof(float), &p.b));
    CHECK(tj_buffer_alloc(dev, count * sizeof(float), &p.c));
    CHECK(tj_buffer_write(dev, p.a, 0, ha, count * sizeof(float)));
    CHECK(tj_buffer_write(dev, p.b, 0, hb, count * sizeof(float)));
    blas_run(&p); /* warm-up, and the reference */

    const double flops = 2.0 * n * (double)n * n, tol = 2.0 * n * 0x1p-24 * n;
    /* OpenBLAS's runs of every configuration's turn, for the final figure. */
    double *t_blas_all = xmalloc(sizeof configs / sizeof configs[0] * MAX_RUNS * sizeof(double));
    int blas_runs = 0;
    double best_tjit = 0;
    const int64_t *best = NULL;
    int ok = 1;
    for (size_t ci = 0; ci < sizeof configs / sizeof configs[0]; ci++) {
        p.config = configs[ci];
        float *nan_fill = got;
        for (size_t i = 0; i < count; i++)
            nan_fill[i] = NAN;
        CHECK(tj_buffer_write(dev, p.c, 0, nan_fill, count * sizeof(float)));
        tjit_run(&p);
        CHECK(tj_buffer_read(dev, p.c, 0, got, count * sizeof(float)));
        size_t bad = 0;
        for (size_t i = 0; i < count; i++)
            if (!(fabsf(got[i] - hc[i]) <= tol) && bad++ == 0)
                fprintf(stderr, "matmul_cpu: C[%zu][%zu] = %.9g, OpenBLAS %.9g\n", i / n, i % n,
                        got[i], hc[i]);
        ok &= bad == 0;
        double t_tjit[MAX_RUNS], t_blas[MAX_RUNS];
        for (int r = 0; r < runs; r++) {
            double t0 = now_seconds();
            tjit_run(&p);
            t_tjit[r] = now_seconds() - t0;
            t0 = now_seconds();
            blas_run(&p);
            t_blas[r] = t_blas_all[blas_runs++] = now_seconds() - t0;
        }
        double tjit_gflops = flops / median(t_tjit, runs) / 1e9;
        double blas_gflops = flops / median(t_blas, runs) / 1e9;
        printf("{\"what\":\"matmul_cpu\",\"dtype\":\"f32\",\"size\":%d,\"threads\":%d,"
               "\"config\":\"BM %lld, BN %lld, BK %lld\",\"runs\":%d,\"tjit_gflops\":%.2f,"
               "\"openblas_gflops\":%.2f,\"ratio\":%.3f,\"correct\":%s}\n",
               n, threads, (long long)p.config[0], (long long)p.config[1],
               (long long)p.config[2], runs, tjit_gflops, blas_gflops,
               tjit_gflops / blas_gflops, bad ? "false" : "true");
        fflush(stdout);
        if (tjit_gflops > best_tjit)
            best_tjit = tjit_gflops, best = p.config;
    }
    const double best_blas = flops / median(t_blas_all, blas_runs) / 1e9;
    const double best_ratio = best_tjit / best_blas;
    printf("{\"what\":\"matmul_cpu_best\",\"size\":%d,\"threads\":%d,\"config\":\"BM %lld, BN "
           "%lld, BK %lld\",\"tjit_gflops\":%.2f,\"openblas_gflops\":%.2f,\"ratio\":%.3f,"
           "\"target\":0.5,\"verdict\":\"%s\"}\n",
           n, threads, (long long)best[0], (long long)best[1], (long long)best[2], best_tjit,
           best_blas, best_ratio, best_ratio >= 0.5 ? "met" : "missed");
    tj_device_close(dev);
    free(ha), free(hb), free(hc), free(got), free(t_blas_all);
    return ok ? 0 : 1;
}
