/* SPDX-License-Identifier: MIT */
/*
 * cpu_bench — tjit's CPU back end against the same algorithms in plain C.
 *
 * Six kernels, each past the last-level cache: fp32 vector add, fp32
 * transpose in 32x32 tiles, fp32 row softmax, fp32 row cumsum, a histogram
 * of random u32 keys by atomic adds into one shared array (C uses relaxed
 * __atomic_fetch_add from every thread, the same algorithm), and a strided
 * 2-D gather (a view of every stride-th column, copied out densely; the
 * stride is a runtime value on both sides). Each is written once as a
 * tjit kernel and once as the plain C loop a programmer would write for the
 * same algorithm, compiled with the rest of this file (-O2) and run on the
 * same number of threads as tjit's grid: the value of TJIT_NUM_THREADS,
 * else the number of cores the process may use. The C side runs on a
 * small persistent pthread pool with a static split of the work, so neither
 * side pays for thread creation inside the timed region.
 *
 * Method: one warm-up launch (which also builds and compiles the tjit
 * kernel) whose output is checked against the C result; then runs of tjit
 * and C alternate, so drift in the machine's state hits both alike; the
 * figure is the median of the runs, with the spread of the middle half of
 * them (interquartile range over median: tjit_iqr, c_iqr), since the
 * machines this runs on are often shared. A reset hook (the histogram's
 * zeroing) runs before each run, untimed. Bandwidth counts the bytes the
 * algorithm must move (read once, written once), not cache traffic.
 *
 * Output: one JSON line per kernel with both bandwidths and their ratio
 * (tjit / C) next to the target the project set for it. The exit status is
 * non-zero only when tjit fails or computes a wrong result; a missed target
 * is a figure to report, not an error.
 *
 *     usage: cpu_bench [--quick] [--runs N] [--only NAME]
 *     (--quick: sizes that fit in cache, for a smoke test; --only: one kernel)
 */
#define _GNU_SOURCE /* sched_getaffinity */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tjit.h"
#include "bench_util.h"

#define CHECK(call)                                                           \
    do {                                                                      \
        tj_status check_status_ = (call);                                     \
        if (check_status_ != TJ_OK) {                                         \
            fprintf(stderr, "%s:%d: %s failed: %s\n%s\n", __FILE__, __LINE__, \
                    #call, tj_status_name(check_status_), tj_last_error());   \
            exit(2);                                                          \
        }                                                                     \
    } while (0)

/* ------------------------------------------------------------------------ */
/* The tjit kernels                                                         */
/* ------------------------------------------------------------------------ */

TJ_KERNEL(vector_add_kernel,
          TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(y, f32), TJ_PTR(out, f32), TJ_SCALAR(n, i32)),
          TJ_CONSTS(BLOCK))
{
    tj_val offs = tj_add(tj_mul(tj_program_id(0), BLOCK), tj_arange(0, BLOCK));
    tj_val mask = tj_lt(offs, n);
    tj_val a = tj_load(tj_add(x, offs), .mask = mask);
    tj_val b = tj_load(tj_add(y, offs), .mask = mask);
    tj_store(tj_add(out, offs), tj_add(a, b), .mask = mask);
}

TJ_KERNEL(transpose_kernel,
          TJ_PARAMS(TJ_PTR(src, f32), TJ_PTR(dst, f32), TJ_SCALAR(rows, i32),
                    TJ_SCALAR(cols, i32)),
          TJ_CONSTS(TILE))
{
    tj_val r = tj_add(tj_mul(tj_program_id(0), TILE), tj_arange(0, TILE));
    tj_val c = tj_add(tj_mul(tj_program_id(1), TILE), tj_arange(0, TILE));
    tj_val r_col = tj_expand_dims(r, 1), c_row = tj_expand_dims(c, 0);
    tj_val mask = tj_and(tj_lt(r_col, rows), tj_lt(c_row, cols));
    tj_val tile = tj_load(tj_add(src, tj_add(tj_mul(r_col, cols), c_row)), .mask = mask);
    tj_val c_col = tj_expand_dims(c, 1), r_row = tj_expand_dims(r, 0);
    tj_store(tj_add(dst, tj_add(tj_mul(c_col, rows), r_row)), tj_trans(tile),
             .mask = tj_trans(mask));
}

TJ_KERNEL(softmax_kernel,
          TJ_PARAMS(TJ_PTR(src, f32), TJ_PTR(dst, f32), TJ_SCALAR(cols, i32)),
          TJ_CONSTS(BLOCK))
{
    tj_val offs = tj_arange(0, BLOCK);
    tj_val mask = tj_lt(offs, cols);
    tj_val row_start = tj_mul(tj_program_id(0), cols);
    tj_val x = tj_load(tj_add(src, tj_add(row_start, offs)), .mask = mask,
                       .other = tj_f32(-INFINITY));
    tj_val num = tj_exp(tj_sub(x, tj_max(x, 0)));
    tj_store(tj_add(dst, tj_add(row_start, offs)), tj_div(num, tj_sum(num, 0)), .mask = mask);
}

TJ_KERNEL(cumsum_kernel,
          TJ_PARAMS(TJ_PTR(src, f32), TJ_PTR(dst, f32), TJ_SCALAR(cols, i32)),
          TJ_CONSTS(BLOCK))
{
    tj_val offs = tj_arange(0, BLOCK);
    tj_val mask = tj_lt(offs, cols);
    tj_val row_start = tj_mul(tj_program_id(0), cols);
    tj_val x = tj_load(tj_add(src, tj_add(row_start, offs)), .mask = mask);
    tj_store(tj_add(dst, tj_add(row_start, offs)), tj_cumsum(x, 0), .mask = mask);
}

/* Counts keys % NBINS into one shared histogram with atomic adds. */
TJ_KERNEL(histogram_kernel,
          TJ_PARAMS(TJ_PTR(keys, u32), TJ_PTR(hist, i32), TJ_SCALAR(n, i32)),
          TJ_CONSTS(BLOCK, NBINS))
{
    tj_val offs = tj_add(tj_mul(tj_program_id(0), BLOCK), tj_arange(0, BLOCK));
    tj_val mask = tj_lt(offs, n);
    tj_val bin = tj_mod(tj_load(tj_add(keys, offs), .mask = mask), tj_u32(NBINS));
    tj_atomic_add(tj_add(hist, bin), 1, .mask = mask);
}

/* A strided 2-D view: dst[r, c] = src[r * ld + c * stride], tile by tile. */
TJ_KERNEL(strided_gather_kernel,
          TJ_PARAMS(TJ_PTR(src, f32), TJ_PTR(dst, f32), TJ_SCALAR(rows, i32),
                    TJ_SCALAR(cols, i32), TJ_SCALAR(ld, i32), TJ_SCALAR(stride, i32)),
          TJ_CONSTS(TILE_R, TILE_C))
{
    tj_val r = tj_expand_dims(tj_add(tj_mul(tj_program_id(0), TILE_R), tj_arange(0, TILE_R)), 1);
    tj_val c = tj_expand_dims(tj_add(tj_mul(tj_program_id(1), TILE_C), tj_arange(0, TILE_C)), 0);
    tj_val mask = tj_and(tj_lt(r, rows), tj_lt(c, cols));
    tj_val v = tj_load(tj_add(src, tj_add(tj_mul(r, ld), tj_mul(c, stride))), .mask = mask);
    tj_store(tj_add(dst, tj_add(tj_mul(r, cols), c)), v, .mask = mask);
}

/* Compile-time constants of the launches (SOFTMAX_COLS is a power of two,
 * so it is also the softmax kernel's BLOCK). */
#define ADD_BLOCK 1024
#define TRANSPOSE_TILE 32
#define SOFTMAX_COLS 1024
#define CUMSUM_COLS 1024
#define HIST_BLOCK 1024
#define HIST_BINS 256
#define GATHER_TILE_R 16
#define GATHER_TILE_C 64
#define STR(x) STR_(x)
#define STR_(x) #x

/* ------------------------------------------------------------------------ */
/* Plain C on a pool of threads                                             */
/* ------------------------------------------------------------------------ */

typedef void (*range_fn)(void *ctx, int64_t begin, int64_t end);

/* Thread 0 is the caller; threads 1.. wait at the start barrier. Each runs
 * its contiguous share [n*t/T, n*(t+1)/T) of the items. */
static struct {
    int nthreads;
    pthread_t *threads;
    pthread_barrier_t start, done;
    range_fn fn;
    void *ctx;
    int64_t n;
    int quit;
} pool;

static void run_share(int t)
{
    int64_t begin = pool.n * t / pool.nthreads, end = pool.n * (t + 1) / pool.nthreads;
    if (begin < end)
        pool.fn(pool.ctx, begin, end);
}

static void *pool_worker(void *arg)
{
    int t = (int)(intptr_t)arg;
    for (;;) {
        pthread_barrier_wait(&pool.start);
        if (pool.quit)
            return NULL;
        run_share(t);
        pthread_barrier_wait(&pool.done);
    }
}

static void pool_start(int nthreads)
{
    pool.nthreads = nthreads;
    pool.threads = calloc((size_t)nthreads, sizeof(pthread_t));
    if (!pool.threads || pthread_barrier_init(&pool.start, NULL, (unsigned)nthreads) ||
        pthread_barrier_init(&pool.done, NULL, (unsigned)nthreads)) {
        fprintf(stderr, "cpu_bench: cannot set up %d threads\n", nthreads);
        exit(2);
    }
    for (int t = 1; t < nthreads; t++)
        if (pthread_create(&pool.threads[t], NULL, pool_worker, (void *)(intptr_t)t)) {
            fprintf(stderr, "cpu_bench: cannot start thread %d\n", t);
            exit(2);
        }
}

static void pool_stop(void)
{
    pool.quit = 1;
    pthread_barrier_wait(&pool.start);
    for (int t = 1; t < pool.nthreads; t++)
        pthread_join(pool.threads[t], NULL);
    pthread_barrier_destroy(&pool.start);
    pthread_barrier_destroy(&pool.done);
    free(pool.threads);
}

static void parallel_for(int64_t n, range_fn fn, void *ctx)
{
    pool.fn = fn;
    pool.ctx = ctx;
    pool.n = n;
    pthread_barrier_wait(&pool.start);
    run_share(0);
    pthread_barrier_wait(&pool.done);
}

/* The same three algorithms in C. Items are elements (add), tiles
 * (transpose) and rows (softmax), as the tjit grids split them. */
struct c_args {
    const float *src, *src2;
    float *dst;
    int64_t rows, cols;
    int64_t ld, stride;      /* strided gather */
    const uint32_t *keys;    /* histogram */
    int32_t *hist;
};

static void c_vector_add(void *ctx, int64_t begin, int64_t end)
{
    const struct c_args *a = ctx;
    const float *restrict x = a->src, *restrict y = a->src2;
    float *restrict out = a->dst;
    for (int64_t i = begin; i < end; i++)
        out[i] = x[i] + y[i];
}

static void c_transpose(void *ctx, int64_t begin, int64_t end)
{
    const struct c_args *a = ctx;
    const float *restrict src = a->src;
    float *restrict dst = a->dst;
    const int64_t tiles_c = (a->cols + TRANSPOSE_TILE - 1) / TRANSPOSE_TILE;
    for (int64_t t = begin; t < end; t++) {
        int64_t r0 = t / tiles_c * TRANSPOSE_TILE, c0 = t % tiles_c * TRANSPOSE_TILE;
        int64_t r1 = r0 + TRANSPOSE_TILE < a->rows ? r0 + TRANSPOSE_TILE : a->rows;
        int64_t c1 = c0 + TRANSPOSE_TILE < a->cols ? c0 + TRANSPOSE_TILE : a->cols;
        for (int64_t c = c0; c < c1; c++)
            for (int64_t r = r0; r < r1; r++)
                dst[c * a->rows + r] = src[r * a->cols + c];
    }
}

static void c_softmax(void *ctx, int64_t begin, int64_t end)
{
    const struct c_args *a = ctx;
    for (int64_t i = begin; i < end; i++) {
        const float *restrict x = a->src + i * a->cols;
        float *restrict y = a->dst + i * a->cols;
        float max = -INFINITY, sum = 0;
        for (int64_t j = 0; j < a->cols; j++)
            max = x[j] > max ? x[j] : max;
        for (int64_t j = 0; j < a->cols; j++) {
            y[j] = expf(x[j] - max);
            sum += y[j];
        }
        float inv = 1.0f / sum;
        for (int64_t j = 0; j < a->cols; j++)
            y[j] *= inv;
    }
}

static void c_cumsum(void *ctx, int64_t begin, int64_t end)
{
    const struct c_args *a = ctx;
    for (int64_t i = begin; i < end; i++) {
        const float *restrict x = a->src + i * a->cols;
        float *restrict y = a->dst + i * a->cols;
        float sum = 0;
        for (int64_t j = 0; j < a->cols; j++) {
            sum += x[j];
            y[j] = sum;
        }
    }
}

/* Items are keys; both threads count into the one shared histogram. */
static void c_histogram(void *ctx, int64_t begin, int64_t end)
{
    const struct c_args *a = ctx;
    for (int64_t i = begin; i < end; i++)
        __atomic_fetch_add(&a->hist[a->keys[i] % HIST_BINS], 1, __ATOMIC_RELAXED);
}

/* Items are rows. */
static void c_strided_gather(void *ctx, int64_t begin, int64_t end)
{
    const struct c_args *a = ctx;
    const float *restrict src = a->src;
    float *restrict dst = a->dst;
    for (int64_t r = begin; r < end; r++)
        for (int64_t c = 0; c < a->cols; c++)
            dst[r * a->cols + c] = src[r * a->ld + c * a->stride];
}

/* ------------------------------------------------------------------------ */
/* Timing and reporting                                                     */
/* ------------------------------------------------------------------------ */

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static void fill_random(float *a, size_t n, float lo, float hi)
{
    for (size_t i = 0; i < n; i++) {
        rng_state ^= rng_state << 13;
        rng_state ^= rng_state >> 7;
        rng_state ^= rng_state << 17;
        a[i] = lo + (hi - lo) * (float)(rng_state >> 40) * (1.0f / 16777216.0f);
    }
}

static tj_buffer device_copy(tj_device *dev, const float *host, size_t count)
{
    tj_buffer buf;
    CHECK(tj_buffer_alloc(dev, count * sizeof(float), &buf));
    CHECK(tj_buffer_write(dev, buf, 0, host, count * sizeof(float)));
    return buf;
}

/* Largest |got - want| / (atol + rtol * |want|): at most 1 is a pass. */
static double worst_error(const float *got, const float *want, size_t n, double atol,
                          double rtol)
{
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double err = fabs((double)got[i] - want[i]) / (atol + rtol * fabs((double)want[i]));
        if (!(err <= worst))
            worst = isnan(err) ? INFINITY : err;
    }
    return worst;
}

/* One benchmark: a tjit launch and its C twin over the same sizes. */
struct bench {
    const char *name;
    const char *dtype;        /* of the data moved */
    const char *shape;        /* JSON array text */
    const char *config;       /* the tjit kernel's constants */
    double bytes;             /* moved per run */
    double target;            /* wanted tjit / C ratio */
    double tolerance_rtol;    /* for the check of tjit's output */
    tj_device *dev;
    void (*launch)(struct bench *b);
    void (*reset)(struct bench *b); /* before every run of either side, untimed */
    range_fn c_fn;
    struct c_args c;
    int64_t c_items;
    tj_buffer in, in2, out;   /* tjit's buffers */
    int64_t n, rows, cols;
    int64_t out_count;        /* elements of out, where not n or rows * cols */
    int out_is_i32;           /* out holds int32 counts (compared exactly) */
};

static int runs = 11;
static int nthreads;
static const char *device_name;

static void json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            putchar('\\');
        putchar(*s);
    }
    putchar('"');
}

static double worst_error_i32(const int32_t *got, const int32_t *want, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i])
            return INFINITY;
    return 0;
}

static void run_c(struct bench *b)
{
    parallel_for(b->c_items, b->c_fn, &b->c);
}

static int run_bench(struct bench *b)
{
    size_t out_count = (size_t)(b->out_count ? b->out_count : b->n ? b->n : b->rows * b->cols);
    void *got = xmalloc(out_count * 4);

    /* warm-up: compiles the kernel; its output is checked against C's */
    if (b->reset)
        b->reset(b);
    b->launch(b);
    CHECK(tj_synchronize(b->dev));
    run_c(b);
    CHECK(tj_buffer_read(b->dev, b->out, 0, got, out_count * 4));
    double err = b->out_is_i32 ? worst_error_i32(got, b->c.hist, out_count)
                               : worst_error(got, b->c.dst, out_count, 1e-7, b->tolerance_rtol);
    int correct = err <= 1;
    free(got);

    double *t_tjit = xmalloc((size_t)runs * sizeof(double));
    double *t_c = xmalloc((size_t)runs * sizeof(double));
    for (int r = 0; r < runs; r++) {
        if (b->reset)
            b->reset(b);
        double t0 = now_seconds();
        b->launch(b);
        CHECK(tj_synchronize(b->dev));
        double t1 = now_seconds();
        run_c(b);
        double t2 = now_seconds();
        t_tjit[r] = t1 - t0;
        t_c[r] = t2 - t1;
    }
    /* the spread: the middle half of the runs, as a fraction of the median */
    double tjit_s = median(t_tjit, runs), c_s = median(t_c, runs);
    double tjit_iqr = (t_tjit[runs * 3 / 4] - t_tjit[runs / 4]) / tjit_s;
    double c_iqr = (t_c[runs * 3 / 4] - t_c[runs / 4]) / c_s;
    free(t_tjit);
    free(t_c);

    double tjit_gbps = b->bytes / tjit_s / 1e9, c_gbps = b->bytes / c_s / 1e9;
    double ratio = tjit_gbps / c_gbps;
    printf("{\"bench\":\"%s\",\"dtype\":\"%s\",\"shape\":%s,\"config\":\"%s\","
           "\"bytes\":%.0f,\"threads\":%d,\"runs\":%d,\"tjit_ms\":%.3f,\"c_ms\":%.3f,"
           "\"tjit_iqr\":%.2f,\"c_iqr\":%.2f,"
           "\"tjit_gbps\":%.2f,\"c_gbps\":%.2f,\"ratio\":%.3f,\"target\":%.1f,"
           "\"meets_target\":%s,\"correct\":%s,\"device\":",
           b->name, b->dtype ? b->dtype : "f32", b->shape, b->config, b->bytes, nthreads, runs,
           tjit_s * 1e3, c_s * 1e3, tjit_iqr, c_iqr,
           tjit_gbps, c_gbps, ratio, b->target, ratio >= b->target ? "true" : "false",
           correct ? "true" : "false");
    json_string(device_name);
    printf("}\n");
    fflush(stdout);
    if (!correct)
        fprintf(stderr, "cpu_bench: %s: tjit's output differs from C's (worst error %g "
                        "times the tolerance)\n", b->name, err);
    return correct;
}

static void launch_vector_add(struct bench *b)
{
    tj_launch_cfg cfg = {.grid = {(b->n + ADD_BLOCK - 1) / ADD_BLOCK}};
    CHECK(vector_add_kernel_launch(b->dev, &cfg, b->in, b->in2, b->out, (int32_t)b->n,
                                   ADD_BLOCK));
}

static void launch_transpose(struct bench *b)
{
    tj_launch_cfg cfg = {.grid = {(b->rows + TRANSPOSE_TILE - 1) / TRANSPOSE_TILE,
                                  (b->cols + TRANSPOSE_TILE - 1) / TRANSPOSE_TILE}};
    CHECK(transpose_kernel_launch(b->dev, &cfg, b->in, b->out, (int32_t)b->rows,
                                  (int32_t)b->cols, TRANSPOSE_TILE));
}

static void launch_softmax(struct bench *b)
{
    int64_t block = 1;
    while (block < b->cols)
        block *= 2;
    tj_launch_cfg cfg = {.grid = {b->rows}};
    CHECK(softmax_kernel_launch(b->dev, &cfg, b->in, b->out, (int32_t)b->cols, block));
}

static void launch_cumsum(struct bench *b)
{
    tj_launch_cfg cfg = {.grid = {b->rows}};
    CHECK(cumsum_kernel_launch(b->dev, &cfg, b->in, b->out, (int32_t)b->cols, CUMSUM_COLS));
}

static void launch_histogram(struct bench *b)
{
    tj_launch_cfg cfg = {.grid = {(b->n + HIST_BLOCK - 1) / HIST_BLOCK}};
    CHECK(histogram_kernel_launch(b->dev, &cfg, b->in, b->out, (int32_t)b->n, HIST_BLOCK,
                                  HIST_BINS));
}

static void reset_histogram(struct bench *b)
{
    static const int32_t zeros[HIST_BINS];
    CHECK(tj_buffer_write(b->dev, b->out, 0, zeros, sizeof zeros));
    memset(b->c.hist, 0, sizeof zeros);
}

static void launch_strided_gather(struct bench *b)
{
    tj_launch_cfg cfg = {.grid = {(b->rows + GATHER_TILE_R - 1) / GATHER_TILE_R,
                                  (b->cols + GATHER_TILE_C - 1) / GATHER_TILE_C}};
    CHECK(strided_gather_kernel_launch(b->dev, &cfg, b->in, b->out, (int32_t)b->rows,
                                       (int32_t)b->cols, (int32_t)b->c.ld,
                                       (int32_t)b->c.stride, GATHER_TILE_R, GATHER_TILE_C));
}

static int wanted(const char *only, const char *name)
{
    return !only || !strcmp(only, name);
}

/* The thread count tjit's CPU grid uses, by the same rule: the cores this
 * process may run on, or TJIT_NUM_THREADS where set. */
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

int main(int argc, char **argv)
{
    int quick = 0;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) {
            quick = 1;
        } else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
            only = argv[++i];
        } else if (!strcmp(argv[i], "--runs") && i + 1 < argc) {
            runs = atoi(argv[++i]);
            if (runs < 1) {
                fprintf(stderr, "cpu_bench: --runs needs a positive count\n");
                return 2;
            }
        } else {
            fprintf(stderr, "usage: %s [--quick] [--runs N] [--only NAME]\n", argv[0]);
            return 2;
        }
    }

    tj_device *dev;
    CHECK(tj_device_open(&dev, TJ_DEVICE_CPU, 0));
    device_name = tj_device_name(dev);
    nthreads = tjit_threads();
    pool_start(nthreads);

    /* Full sizes: each moves 256 MiB or more per run, past the LLC. */
    const int64_t add_n = quick ? (1 << 20) + 3 : (int64_t)1 << 27;
    const int64_t tr_n = quick ? 1024 : 8192;
    const int64_t sm_rows = quick ? 1024 : 65536, sm_cols = SOFTMAX_COLS;
    const int64_t cs_rows = quick ? 1024 : 65536, cs_cols = CUMSUM_COLS;
    const int64_t hist_n = quick ? (1 << 20) + 5 : (int64_t)1 << 26;
    const int64_t ga_rows = quick ? 512 : 8192, ga_cols = quick ? 1000 : 4000;
    const int ga_strides[] = {2, 5};
    int ok = 1;
    char shape[64], config[64];

    if (wanted(only, "vector_add")) {
        float *in = xmalloc((size_t)add_n * sizeof(float));
        float *in2 = xmalloc((size_t)add_n * sizeof(float));
        float *out = xmalloc((size_t)add_n * sizeof(float));
        fill_random(in, (size_t)add_n, -1, 1);
        fill_random(in2, (size_t)add_n, -1, 1);
        snprintf(shape, sizeof shape, "[%lld]", (long long)add_n);
        struct bench add = {
            .name = "vector_add", .shape = shape, .config = "BLOCK=" STR(ADD_BLOCK),
            .bytes = 3.0 * (double)add_n * sizeof(float),
            .target = 1.0, .tolerance_rtol = 0, .dev = dev, .launch = launch_vector_add,
            .c_fn = c_vector_add, .c = {in, in2, out, 0, 0}, .c_items = add_n,
            .in = device_copy(dev, in, (size_t)add_n),
            .in2 = device_copy(dev, in2, (size_t)add_n), .n = add_n};
        CHECK(tj_buffer_alloc(dev, (size_t)add_n * sizeof(float), &add.out));
        ok &= run_bench(&add);
        CHECK(tj_buffer_free(dev, add.in));
        CHECK(tj_buffer_free(dev, add.in2));
        CHECK(tj_buffer_free(dev, add.out));
        free(in);
        free(in2);
        free(out);
    }

    if (wanted(only, "transpose")) {
        size_t count = (size_t)(tr_n * tr_n);
        float *in = xmalloc(count * sizeof(float)), *out = xmalloc(count * sizeof(float));
        fill_random(in, count, -1, 1);
        snprintf(shape, sizeof shape, "[%lld,%lld]", (long long)tr_n, (long long)tr_n);
        int64_t tile_rows = (tr_n + TRANSPOSE_TILE - 1) / TRANSPOSE_TILE;
        struct bench tr = {
            .name = "transpose", .shape = shape, .config = "TILE=" STR(TRANSPOSE_TILE),
            .bytes = 2.0 * (double)count * sizeof(float),
            .target = 0.5, .tolerance_rtol = 0, .dev = dev, .launch = launch_transpose,
            .c_fn = c_transpose, .c = {in, NULL, out, tr_n, tr_n},
            .c_items = tile_rows * tile_rows, .in = device_copy(dev, in, count),
            .rows = tr_n, .cols = tr_n};
        CHECK(tj_buffer_alloc(dev, count * sizeof(float), &tr.out));
        ok &= run_bench(&tr);
        CHECK(tj_buffer_free(dev, tr.in));
        CHECK(tj_buffer_free(dev, tr.out));
        free(in);
        free(out);
    }

    if (wanted(only, "softmax")) {
        size_t count = (size_t)(sm_rows * sm_cols);
        float *in = xmalloc(count * sizeof(float)), *out = xmalloc(count * sizeof(float));
        fill_random(in, count, -10, 10);
        snprintf(shape, sizeof shape, "[%lld,%lld]", (long long)sm_rows, (long long)sm_cols);
        struct bench sm = {
            .name = "softmax", .shape = shape, .config = "BLOCK=" STR(SOFTMAX_COLS),
            .bytes = 2.0 * (double)count * sizeof(float), .target = 0.8,
            .tolerance_rtol = 1e-4, .dev = dev, .launch = launch_softmax, .c_fn = c_softmax,
            .c = {in, NULL, out, sm_rows, sm_cols}, .c_items = sm_rows,
            .in = device_copy(dev, in, count), .rows = sm_rows, .cols = sm_cols};
        CHECK(tj_buffer_alloc(dev, count * sizeof(float), &sm.out));
        ok &= run_bench(&sm);
        CHECK(tj_buffer_free(dev, sm.in));
        CHECK(tj_buffer_free(dev, sm.out));
        free(in);
        free(out);
    }

    /* Row prefix sums; both sides add in the same order, so they agree
     * bit for bit. */
    if (wanted(only, "cumsum")) {
        size_t count = (size_t)(cs_rows * cs_cols);
        float *in = xmalloc(count * sizeof(float)), *out = xmalloc(count * sizeof(float));
        fill_random(in, count, -1, 1);
        snprintf(shape, sizeof shape, "[%lld,%lld]", (long long)cs_rows, (long long)cs_cols);
        struct bench cs = {
            .name = "cumsum", .shape = shape, .config = "BLOCK=" STR(CUMSUM_COLS),
            .bytes = 2.0 * (double)count * sizeof(float), .target = 0.8,
            .tolerance_rtol = 0, .dev = dev, .launch = launch_cumsum, .c_fn = c_cumsum,
            .c = {in, NULL, out, cs_rows, cs_cols}, .c_items = cs_rows,
            .in = device_copy(dev, in, count), .rows = cs_rows, .cols = cs_cols};
        CHECK(tj_buffer_alloc(dev, count * sizeof(float), &cs.out));
        ok &= run_bench(&cs);
        CHECK(tj_buffer_free(dev, cs.in));
        CHECK(tj_buffer_free(dev, cs.out));
        free(in);
        free(out);
    }

    /* Random 32-bit keys, counted into HIST_BINS bins by atomics from every
     * thread at once. Bytes: the keys read. */
    if (wanted(only, "histogram")) {
        uint32_t *keys = xmalloc((size_t)hist_n * sizeof(uint32_t));
        int32_t *hist = xmalloc(HIST_BINS * sizeof(int32_t));
        for (int64_t i = 0; i < hist_n; i++) {
            rng_state ^= rng_state << 13;
            rng_state ^= rng_state >> 7;
            rng_state ^= rng_state << 17;
            keys[i] = (uint32_t)(rng_state >> 32);
        }
        snprintf(shape, sizeof shape, "[%lld]", (long long)hist_n);
        struct bench h = {
            .name = "histogram_atomic", .dtype = "u32", .shape = shape,
            .config = "BLOCK=" STR(HIST_BLOCK) ",NBINS=" STR(HIST_BINS),
            .bytes = (double)hist_n * sizeof(uint32_t), .target = 0.8, .dev = dev,
            .launch = launch_histogram, .reset = reset_histogram, .c_fn = c_histogram,
            .c = {.keys = keys, .hist = hist}, .c_items = hist_n, .n = hist_n,
            .out_count = HIST_BINS, .out_is_i32 = 1};
        CHECK(tj_buffer_alloc(dev, (size_t)hist_n * sizeof(uint32_t), &h.in));
        CHECK(tj_buffer_write(dev, h.in, 0, keys, (size_t)hist_n * sizeof(uint32_t)));
        CHECK(tj_buffer_alloc(dev, HIST_BINS * sizeof(int32_t), &h.out));
        ok &= run_bench(&h);
        CHECK(tj_buffer_free(dev, h.in));
        CHECK(tj_buffer_free(dev, h.out));
        free(keys);
        free(hist);
    }

    /* A strided view of a matrix (every stride-th column) copied out
     * densely. Bytes: the elements read and written. */
    for (size_t k = 0; k < sizeof ga_strides / sizeof ga_strides[0]; k++) {
        if (!wanted(only, "strided_gather"))
            break;
        int64_t stride = ga_strides[k], ld = ga_cols * stride;
        size_t src_count = (size_t)(ga_rows * ld), count = (size_t)(ga_rows * ga_cols);
        float *in = xmalloc(src_count * sizeof(float)), *out = xmalloc(count * sizeof(float));
        fill_random(in, src_count, -1, 1);
        snprintf(shape, sizeof shape, "[%lld,%lld]", (long long)ga_rows, (long long)ga_cols);
        snprintf(config, sizeof config, "TILE=" STR(GATHER_TILE_R) "x" STR(GATHER_TILE_C)
                 ",stride=%lld", (long long)stride);
        struct bench ga = {
            .name = "strided_gather", .shape = shape, .config = config,
            .bytes = 2.0 * (double)count * sizeof(float), .target = 0.8,
            .tolerance_rtol = 0, .dev = dev, .launch = launch_strided_gather,
            .c_fn = c_strided_gather,
            .c = {in, NULL, out, ga_rows, ga_cols, .ld = ld, .stride = stride},
            .c_items = ga_rows, .in = device_copy(dev, in, src_count), .rows = ga_rows,
            .cols = ga_cols};
        CHECK(tj_buffer_alloc(dev, count * sizeof(float), &ga.out));
        ok &= run_bench(&ga);
        CHECK(tj_buffer_free(dev, ga.in));
        CHECK(tj_buffer_free(dev, ga.out));
        free(in);
        free(out);
    }

    pool_stop();
    tj_device_close(dev);
    return ok ? 0 : 1;
}
