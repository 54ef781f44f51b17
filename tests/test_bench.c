/* SPDX-License-Identifier: MIT */
/*
 * test_bench.c — tj_bench, the public benchmark helper: it calls the
 * user's function warmup + reps times, times reps of them, and returns
 * quantiles in order (min <= p10 <= median <= p90 <= max, the mean between
 * min and max); the work it timed was done (a vector add, read back); more
 * calls than one batch of the GPU's events are all timed; a failing call
 * (warm-up or timed) stops it and its status comes back with the call
 * named; bad arguments — no device, no function, no result, reps < 1,
 * warmup < 0, struct sizes of another version — are refused with a
 * message before anything is called.
 *
 * On the CPU a call that sleeps 2 ms must time at 2 ms or more: the
 * clock is around the call. The GPU run (tests/gpu/test_bench.gpu) times
 * the same work by CUDA events.
 */
#include <time.h>

#include "testlib.h"

enum { N = 4096, BLOCK = 256 };

TJ_KERNEL(bench_add, TJ_PARAMS(TJ_PTR(a, f32), TJ_PTR(b, f32), TJ_PTR(c, f32), TJ_SCALAR(n, i32)),
          TJ_CONSTS(B))
{
    tj_val offs = tj_add(tj_mul(tj_program_id(0), B), tj_arange(0, B));
    tj_val mask = tj_lt(offs, n);
    tj_store(tj_add(c, offs), tj_add(tj_load(tj_add(a, offs), .mask = mask), tj_load(tj_add(b, offs), .mask = mask)),
             .mask = mask);
}

typedef struct work {
    tj_buffer a, b, c;
    int calls;       /* run() so far */
    int fail_at;     /* the call (from 1) that fails; 0: none */
    int sleep_ms;    /* each call also sleeps this long */
} work;

static tj_status run(tj_device *dev, void *user)
{
    work *w = user;
    w->calls++;
    if (w->calls == w->fail_at) /* a launch with too few arguments: tjit's error */
        return tj_launch(dev, bench_add, &(tj_launch_cfg){.grid = {1}}, NULL, 0, (int64_t[]){BLOCK}, 1);
    if (w->sleep_ms)
        nanosleep(&(struct timespec){0, w->sleep_ms * 1000000L}, NULL);
    tj_launch_cfg cfg = tl_grid((N + BLOCK - 1) / BLOCK, 1, 1);
    return bench_add_launch(dev, &cfg, w->a, w->b, w->c, N, BLOCK);
}

static int in_order(const tj_bench_result *r)
{
    return r->min_ms >= 0 && r->min_ms <= r->p10_ms && r->p10_ms <= r->median_ms && r->median_ms <= r->p90_ms &&
           r->p90_ms <= r->max_ms && r->mean_ms >= r->min_ms && r->mean_ms <= r->max_ms;
}

static void show(const char *what, const tj_bench_result *r)
{
    tap_diag("  %s: %d reps, min %.4f p10 %.4f median %.4f p90 %.4f max %.4f mean %.4f ms", what, r->reps,
             r->min_ms, r->p10_ms, r->median_ms, r->p90_ms, r->max_ms, r->mean_ms);
}

/* tj_bench with opts refuses before calling run, with a message holding text. */
static int refused(tj_device *dev, tj_status (*fn)(tj_device *, void *), const tj_bench_opts *opts,
                   tj_bench_result *out, const char *text)
{
    work w = {0};
    tj_status st = tj_bench(dev, fn, &w, opts, out);
    int ok = st == TJ_ERR_INVALID_ARG && w.calls == 0 && strstr(tj_last_error(), text);
    if (!ok)
        tap_diag("  got %s after %d calls: %s", tj_status_name(st), w.calls, tj_last_error());
    return ok;
}

int main(void)
{
    tj_device *dev = tl_setup("test_bench");
    float a[N], b[N], c[N];
    for (int i = 0; i < N; i++) {
        a[i] = (float)i;
        b[i] = (float)(2 * i + 1);
    }
    work w = {.a = tl_upload(dev, a, sizeof a), .b = tl_upload(dev, b, sizeof b), .c = tl_upload(dev, a, sizeof a)};

    tj_bench_opts opts = TJ_BENCH_OPTS_INIT;
    opts.warmup = 3;
    opts.reps = 25;
    tj_bench_result r = {.size = sizeof r};
    tj_status st = tj_bench(dev, run, &w, &opts, &r);
    if (st != TJ_OK)
        tap_diag("  %s: %s", tj_status_name(st), tj_last_error());
    tap_ok(st == TJ_OK && w.calls == 28 && r.reps == 25, "warmup 3, reps 25: run called 28 times, 25 timed");
    show("vector add", &r);
    tap_ok(st == TJ_OK && in_order(&r), "min <= p10 <= median <= p90 <= max, mean within");
    int right = tj_buffer_read(dev, w.c, 0, c, sizeof c) == TJ_OK;
    for (int i = 0; right && i < N; i++)
        right = c[i] == a[i] + b[i];
    tap_ok(right, "the work timed was done: c = a + b");

    w.calls = 0;
    st = tj_bench(dev, run, &w, NULL, &r);
    tap_ok(st == TJ_OK && w.calls == 110 && r.reps == 100 && in_order(&r),
           "opts NULL: TJ_BENCH_OPTS_INIT's 10 warm-up calls and 100 timed");

    w.calls = 0;
    opts.warmup = 0;
    opts.reps = 601; /* past two batches of 256 */
    st = tj_bench(dev, run, &w, &opts, &r);
    tap_ok(st == TJ_OK && w.calls == 601 && r.reps == 601 && in_order(&r),
           "601 timed calls (three batches), no warm-up: all timed, in order");

    w.calls = 0;
    opts.reps = 1;
    st = tj_bench(dev, run, &w, &opts, &r);
    tap_ok(st == TJ_OK && r.reps == 1 && r.min_ms == r.p10_ms && r.p10_ms == r.median_ms &&
               r.median_ms == r.p90_ms && r.p90_ms == r.max_ms && r.max_ms == r.mean_ms,
           "one timed call: every quantile and the mean are its time");

    if (tj_device_get_kind(dev) == TJ_DEVICE_CPU) {
        w.calls = 0;
        w.sleep_ms = 2;
        opts.reps = 3;
        st = tj_bench(dev, run, &w, &opts, &r);
        show("sleeping 2 ms", &r);
        tap_ok(st == TJ_OK && r.min_ms >= 2.0, "CPU: a call that sleeps 2 ms times at 2 ms or more");
        w.sleep_ms = 0;
    } else {
        tap_skip(1, "the sleeping call is the CPU's clock check");
    }

    w.calls = 0;
    w.fail_at = 5;
    opts.warmup = 2;
    opts.reps = 10;
    st = tj_bench(dev, run, &w, &opts, &r);
    tap_ok(st == TJ_ERR_LAUNCH && w.calls == 5 && strstr(tj_last_error(), "tj_bench: timed call 3 of run failed"),
           "a failing timed call stops the benchmark; its status comes back, the call named");
    tap_diag("  %s", tj_last_error());
    w.calls = 0;
    w.fail_at = 2;
    st = tj_bench(dev, run, &w, &opts, &r);
    tap_ok(st == TJ_ERR_LAUNCH && w.calls == 2 && strstr(tj_last_error(), "tj_bench: warm-up call 2 of run failed"),
           "a failing warm-up call too");
    w.fail_at = 0;

    opts = (tj_bench_opts)TJ_BENCH_OPTS_INIT;
    tap_ok(refused(NULL, run, &opts, &r, "dev is NULL"), "no device: refused");
    tap_ok(refused(dev, NULL, &opts, &r, "run is NULL"), "no function: refused");
    tap_ok(refused(dev, run, &opts, NULL, "out is NULL"), "no result: refused");
    opts.reps = 0;
    tap_ok(refused(dev, run, &opts, &r, "opts->reps is 0"), "reps 0: refused");
    opts.reps = 1;
    opts.warmup = -1;
    tap_ok(refused(dev, run, &opts, &r, "opts->warmup is -1"), "warmup -1: refused");
    opts = (tj_bench_opts)TJ_BENCH_OPTS_INIT;
    opts.size = sizeof opts + 8;
    tap_ok(refused(dev, run, &opts, &r, "knows tj_bench_opts of"), "opts of a future version (larger size): refused");
    opts.size = 0;
    tap_ok(refused(dev, run, &opts, &r, "opts->size is 0"), "opts without its size: refused");
    opts = (tj_bench_opts)TJ_BENCH_OPTS_INIT;
    tj_bench_result unsized = {0};
    tap_ok(refused(dev, run, &opts, &unsized, "out->size is 0"), "a result without its size: refused");

    tj_device_close(dev);
    return tap_done();
}
