/* SPDX-License-Identifier: MIT */
/*
 * gpu_timing.h — what the GPU benchmarks of one kernel each
 * (gpu_matmul.c, gpu_attention.c) share: the CUDA driver's event functions,
 * loaded with dlopen on the primary context tjit launches in (as
 * gpu_bench.c does), the median time of a launch measured with them, and
 * the JSON string writer of their records. Header only (static functions).
 *
 * The timing: WARMUP launches, a synchronize, then RUNS launches each
 * between two events on the default stream, enqueued back to back; the
 * figure is the median interval. On the CPU back end (no events) each run
 * is a launch and a synchronize timed by the wall clock.
 *
 * Rotated buffers (MATMUL.md: past 3x L2): the timed launches take
 * rotated_sets() sets of a problem's operands in turn, together at least
 * ROTATE_BYTES, so that none finds the operands of the launch before it in
 * L2 (50 MiB on an H100, 60 on an H200); bench/rotation.py is the same
 * rule for the references.
 */
#ifndef TJIT_BENCH_GPU_TIMING_H
#define TJIT_BENCH_GPU_TIMING_H

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "tjit.h"
#include "bench_util.h"

typedef struct CUctx_st *cu_context;
typedef struct CUevent_st *cu_event;
static struct {
    unsigned (*device_get)(int *device, int ordinal);
    unsigned (*primary_ctx_retain)(cu_context *ctx, int device);
    unsigned (*ctx_set_current)(cu_context ctx);
    unsigned (*event_create)(cu_event *event, unsigned flags);
    unsigned (*event_record)(cu_event event, void *stream);
    unsigned (*event_synchronize)(cu_event event);
    unsigned (*event_elapsed_time)(float *ms, cu_event start, cu_event end);
    unsigned (*event_destroy)(cu_event event);
} cu;

static int resolve(void *lib, void *fn_ptr, size_t size, const char *symbol,
                   const char *fallback)
{
    void *p = dlsym(lib, symbol);
    if (!p && fallback)
        p = dlsym(lib, fallback);
    if (p)
        memcpy(fn_ptr, &p, size); /* dlsym gives a data pointer */
    return p != NULL;
}

/* Loads the event functions and makes GPU 0's primary context current;
 * NULL on success, else why not. */
static const char *cuda_events_init(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return "cannot dlopen libcuda.so.1";
#define RESOLVE(field, symbol, fallback) resolve(lib, &cu.field, sizeof cu.field, symbol, fallback)
    if (!RESOLVE(device_get, "cuDeviceGet", NULL) ||
        !RESOLVE(primary_ctx_retain, "cuDevicePrimaryCtxRetain", NULL) ||
        !RESOLVE(ctx_set_current, "cuCtxSetCurrent", NULL) ||
        !RESOLVE(event_create, "cuEventCreate", NULL) ||
        !RESOLVE(event_record, "cuEventRecord", NULL) ||
        !RESOLVE(event_synchronize, "cuEventSynchronize", NULL) ||
        !RESOLVE(event_elapsed_time, "cuEventElapsedTime_v2", "cuEventElapsedTime") ||
        !RESOLVE(event_destroy, "cuEventDestroy_v2", NULL))
        return "libcuda.so.1 lacks an event function";
#undef RESOLVE
    int device;
    cu_context ctx;
    if (cu.device_get(&device, 0) || cu.primary_ctx_retain(&ctx, device) ||
        cu.ctx_set_current(ctx))
        return "cannot make GPU 0's primary context current";
    return NULL;
}

/* The median milliseconds of runs launches of launch(p) on dev, after
 * warmup ones (the top comment), with events where use_events. Returns
 * NULL, or what failed: a tjit call (*st says which status) or an event. */
static const char *median_launch_ms(tj_device *dev, int use_events, int warmup, int runs,
                                    tj_status (*launch)(const void *p), const void *p,
                                    double *median_ms, tj_status *st)
{
    *st = TJ_OK;
    for (int i = 0; i < warmup && *st == TJ_OK; i++)
        *st = launch(p);
    if (*st == TJ_OK)
        *st = tj_synchronize(dev);
    double *ms = xmalloc((size_t)runs * sizeof(double));
    const char *failed = NULL;
    if (use_events) {
        cu_event *ev = xmalloc(2 * (size_t)runs * sizeof(cu_event));
        int created = 0, ok = *st == TJ_OK;
        while (ok && created < 2 * runs)
            ok = cu.event_create(&ev[created], 0) == 0 && ++created;
        for (int r = 0; ok && r < runs; r++)
            ok = cu.event_record(ev[2 * r], NULL) == 0 && (*st = launch(p)) == TJ_OK &&
                 cu.event_record(ev[2 * r + 1], NULL) == 0;
        ok = ok && cu.event_synchronize(ev[2 * runs - 1]) == 0;
        for (int r = 0; ok && r < runs; r++) {
            float t;
            ok = cu.event_elapsed_time(&t, ev[2 * r], ev[2 * r + 1]) == 0;
            ms[r] = t;
        }
        for (int i = 0; i < created; i++)
            cu.event_destroy(ev[i]);
        free(ev);
        if (!ok && *st == TJ_OK)
            failed = "a CUDA event call failed";
    } else {
        for (int r = 0; r < runs && *st == TJ_OK; r++) {
            double t0 = now_seconds();
            if ((*st = launch(p)) == TJ_OK)
                *st = tj_synchronize(dev);
            ms[r] = (now_seconds() - t0) * 1e3;
        }
    }
    if (*st == TJ_OK)
        *st = tj_synchronize(dev);
    if (*st != TJ_OK)
        failed = "a tjit call failed";
    *median_ms = failed ? 0 : median(ms, runs);
    free(ms);
    return failed;
}

enum { MIN_SETS = 2, MAX_SETS = 8 };
#define ROTATE_BYTES ((size_t)256 << 20)

/* How many sets of set_bytes each the timed launches rotate through. */
static inline int rotated_sets(size_t set_bytes)
{
    size_t sets = (ROTATE_BYTES + set_bytes - 1) / set_bytes;
    return sets < MIN_SETS ? MIN_SETS : sets > MAX_SETS ? MAX_SETS : (int)sets;
}

static void json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            printf("\\%c", ch);
        else if (ch < 0x20)
            printf("\\u%04x", ch);
        else
            putchar(ch);
    }
    putchar('"');
}

#endif
