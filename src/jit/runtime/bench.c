/* SPDX-License-Identifier: MIT */
/*
 * bench.c — tj_bench: timing the user's own work on a device.
 *
 * Every benchmark of a kernel needs the same few things done right, and
 * each hand-made one gets some of them wrong: warm-up calls first (the
 * first launch compiles; caches and clocks settle), a synchronization
 * before timing so the warm-up's queue is not counted, one time per call
 * so that outliers show as outliers instead of moving a mean, the
 * device's own clock on a GPU (the host returns from a launch long before
 * the work ends), and quantiles of the sorted times rather than a mean.
 * tj_bench does these once, for any work a callback launches.
 *
 * The clock is the device kind's events (device_impl.h, the operations
 * tj_event_* use): the monotonic clock around each call on the CPU, CUDA
 * events on the default stream, which launches use, on a GPU. The timed calls run in batches of at most BATCH calls, each
 * batch read before the next begins, so that a GPU needs 2 * BATCH events
 * however many calls are asked for; only the first call of a batch meets
 * an idle GPU.
 *
 * The public structs carry their size (tjit.h): a caller compiled against
 * another tjit.h passes the size it knows, and tj_bench accepts the sizes
 * of the versions it knows — so far the one — and refuses any other with
 * a message that says so, rather than reading or writing past the
 * caller's struct.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_impl.h"

enum { BATCH = 256 };

static const char who[] = "tj_bench";

/* The q-quantile of the n sorted times: linear between the two nearest,
 * at position q (n - 1). */
static double quantile(const double *sorted, int n, double q)
{
    double pos = q * (n - 1);
    int lo = (int)pos;
    if (lo >= n - 1)
        return sorted[n - 1];
    return sorted[lo] + (pos - lo) * (sorted[lo + 1] - sorted[lo]);
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void summarize(double *ms, int n, tj_bench_result *out)
{
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += ms[i];
    qsort(ms, (size_t)n, sizeof *ms, by_value);
    out->reps = n;
    out->min_ms = ms[0];
    out->p10_ms = quantile(ms, n, 0.10);
    out->median_ms = quantile(ms, n, 0.50);
    out->p90_ms = quantile(ms, n, 0.90);
    out->max_ms = ms[n - 1];
    out->mean_ms = sum / n;
}

/* A failure of run(), as the benchmark's error: run's status, its message
 * after the call that failed. */
static tj_status run_failed(tj_status st, const char *phase, int call)
{
    char *why = tjs_xstrdup(tj_last_error());
    st = tjs_error(st, "%s: %s call %d of run failed (%s)%s%s", who, phase, call + 1, tj_status_name(st),
                   *why ? ": " : "", why);
    free(why);
    return st;
}

static tj_status check_args(tj_device *dev, tj_status (*run)(tj_device *, void *),
                            const tj_bench_opts *opts, const tj_bench_result *out, tj_bench_opts *o)
{
    if (!dev)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: dev is NULL", who);
    if (!run)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: run is NULL (the function that launches the work)", who);
    if (!out)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: out is NULL", who);
    if (out->size != sizeof(tj_bench_result))
        return tjs_error(TJ_ERR_INVALID_ARG,
                         "%s: out->size is %zu; tjit %s knows tj_bench_result of %zu bytes (set size to "
                         "sizeof(tj_bench_result))", who, out->size, TJ_VERSION_STRING, sizeof(tj_bench_result));
    *o = (tj_bench_opts)TJ_BENCH_OPTS_INIT;
    if (!opts)
        return TJ_OK;
    if (opts->size != sizeof(tj_bench_opts))
        return tjs_error(TJ_ERR_INVALID_ARG,
                         "%s: opts->size is %zu; tjit %s knows tj_bench_opts of %zu bytes (start from "
                         "TJ_BENCH_OPTS_INIT)", who, opts->size, TJ_VERSION_STRING, sizeof(tj_bench_opts));
    if (opts->warmup < 0)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: opts->warmup is %d; it must be 0 or more", who, opts->warmup);
    if (opts->reps < 1)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: opts->reps is %d; it must be 1 or more", who, opts->reps);
    *o = *opts;
    return TJ_OK;
}

/* The timed calls, in batches, their times into ms[0 .. reps). */
static tj_status timed_calls(tj_device *dev, tj_status (*run)(tj_device *, void *), void *user, int reps,
                             double *ms)
{
    int n = reps < BATCH ? reps : BATCH, made = 0;
    uint64_t *events = tjs_xcalloc(2 * (size_t)n, sizeof *events); /* call i: 2i and 2i + 1 */
    tj_status st = TJ_OK;
    while (made < 2 * n && st == TJ_OK)
        if ((st = dev->ops->event_new(dev, &events[made], who)) == TJ_OK)
            made++;
    for (int done = 0, batch; st == TJ_OK && done < reps; done += batch) {
        batch = reps - done < n ? reps - done : n;
        for (int i = 0; i < batch && st == TJ_OK; i++) {
            st = dev->ops->event_record(dev, events[2 * i], 0, who);
            if (st == TJ_OK && (st = run(dev, user)) != TJ_OK)
                st = run_failed(st, "timed", done + i);
            if (st == TJ_OK)
                st = dev->ops->event_record(dev, events[2 * i + 1], 0, who);
        }
        if (st == TJ_OK)
            st = dev->ops->event_wait(dev, events[2 * batch - 1], who);
        for (int i = 0; i < batch && st == TJ_OK; i++) {
            float elapsed = 0;
            st = dev->ops->event_elapsed(dev, events[2 * i], events[2 * i + 1], &elapsed, who);
            ms[done + i] = elapsed;
        }
    }
    for (int e = 0; e < made; e++)
        dev->ops->event_free(dev, events[e]);
    free(events);
    return st;
}

tj_status tj_bench(tj_device *dev, tj_status (*run)(tj_device *dev, void *user), void *user,
                   const tj_bench_opts *opts, tj_bench_result *out)
{
    TJJ_CONTEXT_SCOPE;
    tjs_clear_error();
    tj_bench_opts o;
    tj_status st = check_args(dev, run, opts, out, &o);
    if (st != TJ_OK)
        return st;
    double *ms = malloc((size_t)o.reps * sizeof *ms);
    if (!ms)
        return tjs_error(TJ_ERR_OUT_OF_MEMORY, "%s: no memory for %d times", who, o.reps);
    for (int i = 0; i < o.warmup && st == TJ_OK; i++)
        if ((st = run(dev, user)) != TJ_OK)
            st = run_failed(st, "warm-up", i);
    if (st == TJ_OK)
        st = dev->ops->synchronize(dev, who);
    if (st == TJ_OK)
        st = timed_calls(dev, run, user, o.reps, ms);
    if (st == TJ_OK)
        st = dev->ops->synchronize(dev, who);
    if (st == TJ_OK)
        summarize(ms, o.reps, out);
    free(ms);
    return st;
}
