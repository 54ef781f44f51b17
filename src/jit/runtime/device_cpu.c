/* SPDX-License-Identifier: MIT */
/*
 * device_cpu.c — the CPU device's back-end operations (tjj_cpu_ops).
 *
 * Buffers are host memory; copies are memcpy; a launch is finished when it
 * returns, so synchronizing has nothing to wait for. A variant is compiled
 * by the CPU pipeline (ORC) and, with TJIT_PTXAS set, also to PTX for
 * ptxas to assemble, so that a machine without a GPU still proves the PTX
 * valid; num_warps and the specialization key matter only to that check.
 * A compile asks the disk cache first (disk_cache.h) and stores what it
 * compiled once the check has passed.
 *
 * Streams (streams.c) need nothing here: work is done in call order. An
 * event is the monotonic clock's reading when it was recorded.
 *
 * The grid is a range of program instances run by the thread pool
 * (threadpool.c); each call of the compiled function computes a chunk of
 * programs (one libffi call per chunk, a compiled loop inside). The pool
 * runs one launch at a time and a worker index is exclusive while a task
 * runs, so each worker owns its scratch slot here and grows it itself.
 *
 * tj_bench times by these events: a launch is over when it returns, so
 * the clock around it is the work's time.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "../llvm/bounds.h"
#include "device_impl.h"
#include "disk_cache.h"

static tj_status open_cpu(int ordinal, tj_device **out)
{
    if (ordinal != 0)
        return tjs_error(TJ_ERR_INVALID_ARG,
                         "tj_device_open: ordinal %d: there is one CPU device, ordinal 0", ordinal);
    tj_device *dev = tjj_device_new(&tjj_cpu_ops);
    dev->nworkers = tjj_pool_workers();
    dev->processors = dev->nworkers;
    dev->scratch = tjs_xcalloc((size_t)dev->nworkers, sizeof *dev->scratch);
    struct utsname u;
    const char *arch = uname(&u) == 0 ? u.machine : "unknown";
    snprintf(dev->name, sizeof dev->name, "cpu (%s, %d thread%s)", arch, dev->nworkers,
             dev->nworkers == 1 ? "" : "s");
    *out = dev;
    return TJ_OK;
}

typedef struct cpu_launch {
    tj_device *dev;
    const variant *var;
    void *entry;
    size_t scratch_bytes;
    const tjf_value *values;
    int32_t nprog[3];
    tjj_cpu_rt *rt;
    atomic_int scratch_failed;
} cpu_launch;

/* The worker's scratch memory, grown to at least bytes (its old contents
 * are dead between programs). Only worker w touches slot w. */
static void *worker_scratch(tj_device *dev, int worker, size_t bytes)
{
    scratch_slot *s = &dev->scratch[worker];
    if (s->size < bytes) {
        free(s->ptr);
        s->ptr = NULL;
        s->size = 0;
        void *p;
        if (posix_memalign(&p, ALIGNMENT, bytes) != 0)
            return NULL;
        s->ptr = p;
        s->size = bytes;
    }
    return s->ptr;
}

static void run_programs(void *ctx, int worker, int64_t first, int64_t count)
{
    cpu_launch *L = ctx;
    if (atomic_load_explicit(&L->scratch_failed, memory_order_relaxed))
        return;
    void *scratch = NULL;
    if (L->scratch_bytes) {
        scratch = worker_scratch(L->dev, worker, L->scratch_bytes);
        if (!scratch) {
            atomic_store(&L->scratch_failed, 1);
            return;
        }
    }
    /* After a failed device assert the launch is over, as on a GPU: later
     * chunks are skipped. (The runtime sets the flag under the lock.) */
    pthread_mutex_lock(&L->rt->lock);
    int failed = L->rt->assert_failed;
    pthread_mutex_unlock(&L->rt->lock);
    if (!failed)
        tjf_call_cpu(&L->var->sig, L->entry, L->values, first, count, L->nprog, scratch, L->rt);
}

static tj_status launch(tj_device *dev, const tj_kernel *kernel, variant *var, tjf_value *values,
                        uint64_t *sizes, const int32_t nprog[3], int64_t total, uint64_t stream)
{
    (void)stream; /* done before the call returns: in order on any stream */
    tjj_gpu_assert bounds = {0};
    tjj_cpu_rt rt = {.kernel_name = kernel->name, .buffer_sizes = sizes, .bounds = &bounds};
    pthread_mutex_init(&rt.lock, NULL);
    cpu_launch L = {
        .dev = dev,
        .var = var,
        .entry = tjj_cpu_kernel_entry(var->compiled),
        .scratch_bytes = tjj_cpu_kernel_scratch(var->compiled),
        .values = values,
        .nprog = {nprog[0], nprog[1], nprog[2]},
        .rt = &rt,
    };
    /* Chunks of up to a few hundred programs keep the counter cold; smaller
     * ones where needed so that every worker gets several. */
    int64_t chunk = total / ((int64_t)dev->nworkers * 4);
    chunk = chunk < 1 ? 1 : chunk > 256 ? 256 : chunk;
    tjj_pool_run(total, chunk, run_programs, &L);
    pthread_mutex_destroy(&rt.lock);

    if (atomic_load(&L.scratch_failed))
        return tjs_error(TJ_ERR_OUT_OF_MEMORY, "kernel '%s': cannot allocate %zu bytes of scratch memory",
                         kernel->name, L.scratch_bytes);
    if (rt.assert_failed)
        return tjs_error(TJ_ERR_ASSERT, "%s", rt.message);
    if (bounds.failed) {
        char *why = tjj_bounds_message(var->bounds, kernel, &bounds);
        tj_status st = why ? tjs_error(TJ_ERR_BOUNDS, "%s", why)
                           : tjs_error(TJ_ERR_BOUNDS, "kernel '%s': an out-of-bounds access", kernel->name);
        free(why);
        return st;
    }
    return TJ_OK;
}

static void idle(tj_device *dev)
{
    (void)dev; /* launches are over when tj_launch returns */
}

static void close_cpu(tj_device *dev)
{
    for (int w = 0; w < dev->nworkers; w++)
        free(dev->scratch[w].ptr);
    free(dev->scratch);
}

static tj_status enter(tj_device *dev, const char *who)
{
    (void)dev;
    (void)who;
    return TJ_OK;
}

static tj_status synchronize(tj_device *dev, const char *who)
{
    (void)dev;
    (void)who;
    return TJ_OK; /* CPU launches are finished when tj_launch returns */
}

static tj_status alloc_memory(tj_device *dev, size_t bytes, uint64_t *addr)
{
    (void)dev;
    void *ptr;
    if (posix_memalign(&ptr, ALIGNMENT, bytes) != 0)
        return tjs_error(TJ_ERR_OUT_OF_MEMORY, "tj_buffer_alloc: cannot allocate %zu bytes", bytes);
    *addr = (uint64_t)(uintptr_t)ptr;
    return TJ_OK;
}

static void free_memory(tj_device *dev, uint64_t addr)
{
    (void)dev;
    free((void *)(uintptr_t)addr);
}

/* Host memory cannot be asked about: any address and size that do not
 * wrap around the address space are taken on the caller's word. */
static tj_status check_foreign(tj_device *dev, uint64_t addr, size_t bytes, const char *who)
{
    (void)dev;
    uint64_t end;
    if (__builtin_add_overflow(addr, (uint64_t)bytes, &end))
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: %zu bytes at 0x%llx run past the end of the address space",
                         who, bytes, (unsigned long long)addr);
    return TJ_OK;
}

static tj_status write_memory(tj_device *dev, uint64_t dst, const void *src, size_t bytes,
                              const char *who)
{
    (void)dev;
    (void)who;
    if (bytes)
        memcpy((void *)(uintptr_t)dst, src, bytes);
    return TJ_OK;
}

static tj_status read_memory(tj_device *dev, void *dst, uint64_t src, size_t bytes, const char *who)
{
    (void)dev;
    (void)who;
    if (bytes)
        memcpy(dst, (const void *)(uintptr_t)src, bytes);
    return TJ_OK;
}

/* Between buffers of host memory (two CPU devices' too); tj_buffer_copy
 * has refused overlapping ranges. */
static tj_status copy_memory(tj_device *dev, uint64_t dst, uint64_t src, size_t bytes, const char *who)
{
    (void)dev;
    (void)who;
    if (bytes)
        memcpy((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, bytes);
    return TJ_OK;
}

static void pass_buffer(tjf_value *value, uint64_t addr)
{
    value->ptr = (void *)(uintptr_t)addr;
}

static tj_status compile(tj_device *dev, tji_func *fn, variant *v, int num_warps, uint64_t spec,
                         tjj_stage_times *times, tjj_artifact *a)
{
    (void)dev;
    int hit = 0;
    tj_status st = tjj_compile_cpu_cached(fn, spec, times, a, &hit);
    /* with TJIT_PTXAS: the GPU pipeline's PTX of the kernel, and ptxas on it
     * (unless the entry the disk cache had says it passed) */
    if (st == TJ_OK && !a->ptxas_checked && tjj_ptxas_path()) {
        st = tjj_timed(times, "ptxas-check", tjj_check_with_ptxas(fn, a, num_warps, spec));
        a->ptxas_checked = st == TJ_OK;
    }
    if (st == TJ_OK && !hit)
        tjj_disk_cache_store(a);
    if (st == TJ_OK) {
        v->compiled = a->cpu;
        a->cpu = NULL;
    }
    return st;
}

static void free_variant(tj_device *dev, variant *v)
{
    (void)dev;
    tjj_cpu_kernel_free(v->compiled);
}

/* --- streams and events: work is done when its call returns ----------------- */

static tj_status stream_new(tj_device *dev, uint64_t *native, const char *who)
{
    (void)dev, (void)who;
    *native = 0;
    return TJ_OK;
}

static void stream_free(tj_device *dev, uint64_t native) { (void)dev, (void)native; }

static tj_status stream_wait(tj_device *dev, uint64_t native, const char *who)
{
    (void)dev, (void)native, (void)who;
    return TJ_OK;
}

static tj_status copy_async(tj_device *dev, int to_device, uint64_t device_addr, void *host, size_t bytes,
                            uint64_t stream, const char *who)
{
    (void)stream;
    return to_device ? write_memory(dev, device_addr, host, bytes, who)
                     : read_memory(dev, host, device_addr, bytes, who);
}

/* An event: the monotonic clock's seconds at its record. */
static tj_status event_new(tj_device *dev, uint64_t *native, const char *who)
{
    (void)dev, (void)who;
    *native = (uint64_t)(uintptr_t)tjs_xcalloc(1, sizeof(double));
    return TJ_OK;
}

static void event_free(tj_device *dev, uint64_t native)
{
    (void)dev;
    free((void *)(uintptr_t)native);
}

static tj_status event_record(tj_device *dev, uint64_t event, uint64_t stream, const char *who)
{
    (void)dev, (void)stream, (void)who;
    *(double *)(uintptr_t)event = tjj_monotonic_seconds();
    return TJ_OK;
}

static tj_status event_elapsed(tj_device *dev, uint64_t start, uint64_t end, float *ms, const char *who)
{
    (void)dev, (void)who;
    *ms = (float)((*(double *)(uintptr_t)end - *(double *)(uintptr_t)start) * 1e3);
    return TJ_OK;
}

static tj_status host_alloc(tj_device *dev, size_t bytes, void **out, const char *who)
{
    (void)dev;
    if (posix_memalign(out, ALIGNMENT, bytes) != 0) {
        *out = NULL;
        return tjs_error(TJ_ERR_OUT_OF_MEMORY, "%s: cannot allocate %zu bytes", who, bytes);
    }
    return TJ_OK;
}

static void host_free(tj_device *dev, void *ptr)
{
    (void)dev;
    free(ptr);
}

const tjj_backend tjj_cpu_ops = {
    .kind = TJ_DEVICE_CPU,
    .max_grid_yz = INT32_MAX,
    .host_memory = 1,
    .open = open_cpu,
    .idle = idle,
    .close = close_cpu,
    .enter = enter,
    .synchronize = synchronize,
    .alloc = alloc_memory,
    .free = free_memory,
    .check_foreign = check_foreign,
    .write = write_memory,
    .read = read_memory,
    .copy = copy_memory,
    .pass_buffer = pass_buffer,
    .compile = compile,
    .free_variant = free_variant,
    .launch = launch,
    .stream_new = stream_new,
    .stream_free = stream_free,
    .stream_wait = stream_wait,
    .copy_async = copy_async,
    .event_new = event_new,
    .event_free = event_free,
    .event_record = event_record,
    .event_wait = stream_wait, /* recorded means done */
    .event_elapsed = event_elapsed,
    .host_alloc = host_alloc,
    .host_free = host_free,
};
