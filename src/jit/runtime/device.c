/* SPDX-License-Identifier: MIT */
/*
 * device.c — the host API: devices and launches, on the CPU and on NVIDIA
 * GPUs.
 *
 * A device owns a table of buffers (buffers.c) and a cache of compiled
 * kernel variants (variants.c); a CPU device also owns per-worker scratch
 * memory, a GPU device the CUDA primary context of its GPU. The inside of
 * a device is in device_impl.h.
 *
 * A launch checks everything the caller gave (device, kernel, grid, constants,
 * num_warps, arguments, buffers) before any work, then finds the compiled
 * variant for the kernel, its constants and (on a GPU) num_warps and the
 * arguments' specialization key in the device's cache, which compiles it on
 * a miss without blocking launches of other variants. The launch holds its
 * buffers from the moment it looks them up until it returns (on a GPU,
 * until the device has run it, see buffers.c), so a buffer freed meanwhile
 * by another thread keeps its memory until then.
 *
 * A kernel body that launches (on any device) is refused: the body is
 * being built, and a launch from it would build another kernel inside the
 * build — or, on its own device, wait for its own compile. tj_launch says
 * so, and the outer build fails with the same message.
 *
 * On the CPU the grid is a range of program instances run by the thread pool
 * (threadpool.c); each call of the compiled function computes a chunk of
 * programs (one libffi call per chunk, a compiled loop inside).
 * The pool runs one launch at a time and a worker index is exclusive while a
 * task runs, so each worker owns its scratch slot here and grows it itself.
 *
 * On a GPU a variant is compiled by gpu_pipeline.c and loaded by
 * variants.c. A launch is cuLaunchKernel on the default stream, one CTA of
 * num_warps * 32 threads per program, and returns at once
 * (TJIT_LAUNCH_BLOCKING=1 makes it wait, for debugging). Faults and failed
 * device asserts are therefore found when the host next waits:
 * tj_synchronize and tj_buffer_read synchronize, then read the assert
 * records of the kernels launched since the last check. A kernel with
 * device asserts gets a record of its own in device memory, so a failure
 * names its kernel, op and program exactly; the others share the device's
 * record, which they never write. The context is made current on the
 * calling thread at every API call, so any thread may use the device.
 *
 * A bounds-checked launch (TJIT_CHECK_BOUNDS, tj_launch_cfg.check_bounds;
 * bounds.h) runs a variant of its own, given its buffers' sizes, whose
 * violations come back through the same records as device asserts, with
 * TJ_ERR_BOUNDS.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "../bounds.h"
#include "device_impl.h"

enum { MAX_GRID_YZ = 65535 };

/* --- CUDA calls ---------------------------------------------------------- */

/* Checks a driver call made for an API function: "WHO: CALL: CUDA_ERROR_..." */
tj_status tjj_cu_check(tjcu_result r, const char *who, const char *call)
{
    if (r == TJCU_SUCCESS)
        return TJ_OK;
    char what[256];
    snprintf(what, sizeof what, "%s: %s", who, call);
    return tjj_cuda_check(r, what);
}

/* Makes the device's context current on the calling thread. */
tj_status tjj_gpu_enter(tj_device *dev, const char *who)
{
    return tjj_cu_check(dev->cu->cuCtxSetCurrent(dev->context), who, "cuCtxSetCurrent");
}

/* Reads, reports and resets the assert records of the variants launched
 * since the last check; the first failure found is the error. */
static tj_status check_asserts(tj_device *dev, const char *who)
{
    pthread_mutex_lock(&dev->pending_lock);
    variant **pending = dev->pending;
    int npending = dev->npending;
    dev->pending = NULL;
    dev->npending = dev->pending_cap = 0;
    for (int i = 0; i < npending; i++)
        pending[i]->pending = 0;
    pthread_mutex_unlock(&dev->pending_lock);

    tj_status st = TJ_OK, failure_status = TJ_ERR_ASSERT;
    char *failure = NULL;
    for (int i = 0; i < npending && st == TJ_OK; i++) {
        const variant *v = pending[i];
        tjj_gpu_assert rec;
        st = tjj_cu_check(dev->cu->cuMemcpyDtoH(&rec, v->assert_record, sizeof rec), who,
                      "cuMemcpyDtoH (assert record)");
        if (st != TJ_OK || !rec.failed)
            continue;
        st = tjj_cu_check(dev->cu->cuMemsetD8(v->assert_record, 0, sizeof rec), who,
                      "cuMemsetD8 (assert record)");
        if (failure)
            continue;
        const assert_site *site = NULL;
        for (int a = 0; a < v->nasserts; a++)
            if (v->asserts[a].op == rec.op)
                site = &v->asserts[a];
        if (!site && (failure = tjj_bounds_message(v->bounds, v->kernel, &rec)))
            failure_status = TJ_ERR_BOUNDS;
        else if (site)
            failure = tjs_asprintf("%s:%d: error: in kernel '%s', op 'assert': device assertion "
                                   "failed in program (%u, %u, %u): %s",
                                   site->file, site->line, v->kernel->name, rec.pid[0],
                                   rec.pid[1], rec.pid[2], site->message);
        else
            failure = tjs_asprintf("error: in kernel '%s': a device assertion failed in program "
                                   "(%u, %u, %u), at op %u, which is no assert of the kernel",
                                   v->kernel->name, rec.pid[0], rec.pid[1], rec.pid[2], rec.op);
    }
    free(pending);
    if (st == TJ_OK && failure)
        st = tjs_error(failure_status, "%s", failure);
    free(failure);
    return st;
}

/* Waits for everything launched on the device, then checks asserts. A
 * fault of a kernel is reported with the last kernel launched. */
tj_status tjj_gpu_finish(tj_device *dev, const char *who)
{
    uint64_t epoch = tjj_buffers_epoch(dev);
    tjcu_result r = dev->cu->cuCtxSynchronize();
    if (r != TJCU_SUCCESS) {
        pthread_mutex_lock(&dev->pending_lock);
        const char *last = dev->last_kernel;
        pthread_mutex_unlock(&dev->pending_lock);
        tj_status st = tjj_cuda_check(r, "cuCtxSynchronize");
        char *why = tjs_xstrdup(tj_last_error());
        st = tjs_error(st, "%s: a kernel failed on the GPU (the last one launched was '%s'): %s",
                       who, last ? last : "?", why);
        free(why);
        return st;
    }
    tjj_buffers_synced(dev, epoch); /* the memory of buffers freed while in use */
    return check_asserts(dev, who);
}

/* --- devices --------------------------------------------------------------- */

static tj_device *new_device(tj_device_kind kind)
{
    tj_device *dev = tjs_xcalloc(1, sizeof *dev);
    dev->kind = kind;
    pthread_mutex_init(&dev->buffers_lock, NULL);
    pthread_mutex_init(&dev->variants_lock, NULL);
    pthread_cond_init(&dev->variant_done, NULL);
    pthread_mutex_init(&dev->build_lock, NULL);
    pthread_mutex_init(&dev->pending_lock, NULL);
    return dev;
}

static void free_device(tj_device *dev)
{
    pthread_mutex_destroy(&dev->buffers_lock);
    pthread_mutex_destroy(&dev->variants_lock);
    pthread_cond_destroy(&dev->variant_done);
    pthread_mutex_destroy(&dev->build_lock);
    pthread_mutex_destroy(&dev->pending_lock);
    free(dev);
}

static tj_status open_cpu(tj_device **out)
{
    tj_device *dev = new_device(TJ_DEVICE_CPU);
    dev->nworkers = tjj_pool_workers();
    dev->scratch = tjs_xcalloc((size_t)dev->nworkers, sizeof *dev->scratch);
    struct utsname u;
    const char *arch = uname(&u) == 0 ? u.machine : "unknown";
    snprintf(dev->name, sizeof dev->name, "cpu (%s, %d thread%s)", arch, dev->nworkers,
             dev->nworkers == 1 ? "" : "s");
    *out = dev;
    return TJ_OK;
}

static tj_status open_gpu(int ordinal, tj_device **out)
{
    static const char who[] = "tj_device_open";
    const tjcu_driver *cu;
    if (tjj_cuda_load(&cu) != TJ_OK)
        return tjs_error(TJ_ERR_DEVICE, "%s: no GPU: %s", who, tjj_cuda_load_error());
    int count = 0;
    tj_status st = tjj_cu_check(cu->cuDeviceGetCount(&count), who, "cuDeviceGetCount");
    if (st != TJ_OK)
        return st;
    if (count == 0)
        return tjs_error(TJ_ERR_DEVICE, "%s: no GPU: the CUDA driver sees no device", who);
    if (ordinal >= count)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: GPU %d: there %s only %d GPU%s (ordinals 0 to %d)",
                         who, ordinal, count == 1 ? "is" : "are", count, count == 1 ? "" : "s",
                         count - 1);
    tjcu_device cu_device;
    char gpu_name[96] = "";
    int major = 0, minor = 0, sms = 0;
    if ((st = tjj_cu_check(cu->cuDeviceGet(&cu_device, ordinal), who, "cuDeviceGet")) != TJ_OK ||
        (st = tjj_cu_check(cu->cuDeviceGetName(gpu_name, (int)sizeof gpu_name - 1, cu_device), who,
                       "cuDeviceGetName")) != TJ_OK ||
        (st = tjj_cu_check(cu->cuDeviceGetAttribute(&major, TJCU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                                cu_device), who, "cuDeviceGetAttribute")) != TJ_OK ||
        (st = tjj_cu_check(cu->cuDeviceGetAttribute(&minor, TJCU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                                cu_device), who, "cuDeviceGetAttribute")) != TJ_OK ||
        (st = tjj_cu_check(cu->cuDeviceGetAttribute(&sms, TJCU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                                cu_device), who, "cuDeviceGetAttribute")) != TJ_OK)
        return st;
    int sm = major * 10 + minor;
    if (sm < 80)
        return tjs_error(TJ_ERR_UNSUPPORTED, "%s: GPU %d (%s) is sm_%d; tjit needs sm_80 or newer",
                         who, ordinal, gpu_name, sm);

    tjcu_context context;
    if ((st = tjj_cu_check(cu->cuDevicePrimaryCtxRetain(&context, cu_device), who,
                       "cuDevicePrimaryCtxRetain")) != TJ_OK)
        return st;
    tjcu_deviceptr record = 0;
    if ((st = tjj_cu_check(cu->cuCtxSetCurrent(context), who, "cuCtxSetCurrent")) != TJ_OK ||
        (st = tjj_cu_check(cu->cuMemAlloc(&record, sizeof(tjj_gpu_assert)), who, "cuMemAlloc")) != TJ_OK ||
        (st = tjj_cu_check(cu->cuMemsetD8(record, 0, sizeof(tjj_gpu_assert)), who, "cuMemsetD8")) != TJ_OK) {
        if (record)
            cu->cuMemFree(record);
        cu->cuDevicePrimaryCtxRelease(cu_device);
        return st;
    }

    tj_device *dev = new_device(TJ_DEVICE_GPU);
    dev->cu = cu;
    dev->cu_device = cu_device;
    dev->context = context;
    dev->sm = sm;
    dev->assert_record = record;
    const char *blocking = getenv("TJIT_LAUNCH_BLOCKING");
    dev->blocking = blocking && *blocking && strcmp(blocking, "0") != 0;
    snprintf(dev->name, sizeof dev->name, "%s (sm_%d, %d SMs)", gpu_name, sm, sms);
    *out = dev;
    return TJ_OK;
}

tj_status tj_device_open(tj_device **out, tj_device_kind kind, int ordinal)
{
    tjs_clear_error();
    if (!out)
        return tjs_error(TJ_ERR_INVALID_ARG, "tj_device_open: out is NULL");
    *out = NULL;
    if (ordinal < 0)
        return tjs_error(TJ_ERR_INVALID_ARG, "tj_device_open: ordinal %d is negative", ordinal);
    if (kind == TJ_DEVICE_DEFAULT) {
        const char *env = getenv("TJIT_DEVICE");
        if (env && strcmp(env, "cpu") == 0) {
            kind = TJ_DEVICE_CPU;
        } else if (env && strcmp(env, "gpu") == 0) {
            kind = TJ_DEVICE_GPU;
        } else if (env && *env) {
            return tjs_error(TJ_ERR_INVALID_ARG, "tj_device_open: TJIT_DEVICE=%s (expected cpu or gpu)",
                             env);
        } else {
            /* The first GPU if one is usable; otherwise the CPU, where
             * ordinal 0 names it (a GPU ordinal beyond 0 stays an error). */
            tj_status st = open_gpu(ordinal, out);
            if (st == TJ_OK || ordinal != 0)
                return st;
            tjs_clear_error();
            kind = TJ_DEVICE_CPU;
        }
    }
    switch (kind) {
    case TJ_DEVICE_CPU:
        if (ordinal != 0)
            return tjs_error(TJ_ERR_INVALID_ARG,
                             "tj_device_open: ordinal %d: there is one CPU device, ordinal 0", ordinal);
        return open_cpu(out);
    case TJ_DEVICE_GPU:
        return open_gpu(ordinal, out);
    default:
        return tjs_error(TJ_ERR_INVALID_ARG, "tj_device_open: unknown device kind %d", (int)kind);
    }
}

void tj_device_close(tj_device *dev)
{
    tjs_clear_error();
    if (!dev)
        return;
    int gpu = dev->kind == TJ_DEVICE_GPU;
    /* Errors are past reporting here; on a GPU whose context has failed
     * the frees below fail too, and the context's release reclaims all. */
    if (gpu && tjj_gpu_enter(dev, "tj_device_close") == TJ_OK)
        dev->cu->cuCtxSynchronize();
    tjj_buffers_close(dev);
    tjj_variants_close(dev);
    for (int w = 0; w < dev->nworkers; w++)
        free(dev->scratch[w].ptr);
    free(dev->scratch);
    free(dev->pending);
    if (gpu) {
        dev->cu->cuMemFree(dev->assert_record);
        dev->cu->cuDevicePrimaryCtxRelease(dev->cu_device);
    }
    free_device(dev);
    tjs_clear_error();
}

tj_device_kind tj_device_get_kind(const tj_device *dev)
{
    tjs_clear_error();
    if (!dev) {
        tjs_error(TJ_ERR_INVALID_ARG, "tj_device_get_kind: dev is NULL");
        return TJ_DEVICE_DEFAULT;
    }
    return dev->kind;
}

const char *tj_device_name(const tj_device *dev)
{
    tjs_clear_error();
    if (!dev) {
        tjs_error(TJ_ERR_INVALID_ARG, "tj_device_name: dev is NULL");
        return "(no device)";
    }
    return dev->name;
}

tj_status tj_synchronize(tj_device *dev)
{
    tjs_clear_error();
    if (!dev)
        return tjs_error(TJ_ERR_INVALID_ARG, "tj_synchronize: dev is NULL");
    if (dev->kind != TJ_DEVICE_GPU)
        return TJ_OK; /* CPU launches are finished when tj_launch returns */
    tj_status st = tjj_gpu_enter(dev, "tj_synchronize");
    return st == TJ_OK ? tjj_gpu_finish(dev, "tj_synchronize") : st;
}

/* --- launches -------------------------------------------------------------- */

static tj_status check_kernel(const tj_kernel *kernel)
{
    if (!kernel)
        return tjs_error(TJ_ERR_INVALID_ARG, "tj_launch: kernel is NULL");
    if (!kernel->name || !kernel->build || kernel->nparams < 0 || kernel->nconsts < 0 ||
        (kernel->nparams > 0 && !kernel->params) || (kernel->nconsts > 0 && !kernel->consts))
        return tjs_error(TJ_ERR_INVALID_ARG, "tj_launch: the kernel is not one TJ_KERNEL defined");
    return TJ_OK;
}

/* Grid axes as program counts: 0 in y or z means 1. */
static tj_status check_grid(const tj_device *dev, const tj_kernel *kernel, const tj_launch_cfg *cfg,
                            int32_t nprog[3], int64_t *total)
{
    for (int axis = 0; axis < 3; axis++) {
        int64_t g = cfg->grid[axis];
        if (g < 0)
            return tjs_error(TJ_ERR_LAUNCH, "kernel '%s': empty grid (grid[%d] = %lld is negative)",
                             kernel->name, axis, (long long)g);
        if (g == 0 && axis == 0)
            return tjs_error(TJ_ERR_LAUNCH, "kernel '%s': empty grid (grid[0] = 0)", kernel->name);
        if (g > INT32_MAX)
            return tjs_error(TJ_ERR_LAUNCH,
                             "kernel '%s': grid too large (grid[%d] = %lld; at most %d programs per axis)",
                             kernel->name, axis, (long long)g, INT32_MAX);
        if (axis > 0 && g > MAX_GRID_YZ && dev->kind == TJ_DEVICE_GPU)
            return tjs_error(TJ_ERR_LAUNCH,
                             "kernel '%s': grid too large for a GPU (grid[%d] = %lld; at most %d "
                             "programs along y and z)",
                             kernel->name, axis, (long long)g, MAX_GRID_YZ);
        nprog[axis] = g == 0 ? 1 : (int32_t)g;
    }
    int64_t n = (int64_t)nprog[0] * nprog[1];
    if (__builtin_mul_overflow(n, (int64_t)nprog[2], total))
        return tjs_error(TJ_ERR_LAUNCH, "kernel '%s': grid too large (%d x %d x %d programs)",
                         kernel->name, nprog[0], nprog[1], nprog[2]);
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

static tj_status launch_cpu(tj_device *dev, const tj_kernel *kernel, const variant *var,
                            const tjf_value *values, const uint64_t *sizes, const int32_t nprog[3],
                            int64_t total)
{
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

/* One program per CTA of num_warps * 32 threads on the default stream;
 * returns once the launch is queued (or, blocking, has finished). */
static tj_status launch_gpu(tj_device *dev, const tj_kernel *kernel, variant *var,
                            tjf_value *values, uint64_t *sizes, const int32_t nprog[3])
{
    pthread_mutex_lock(&dev->pending_lock);
    dev->last_kernel = kernel->name;
    if ((var->nasserts || var->check_bounds) && !var->pending) {
        if (dev->npending == dev->pending_cap) {
            dev->pending_cap = dev->pending_cap ? dev->pending_cap * 2 : 8;
            dev->pending = tjs_xrealloc(dev->pending, (size_t)dev->pending_cap * sizeof *dev->pending);
        }
        dev->pending[dev->npending++] = var;
        var->pending = 1;
    }
    pthread_mutex_unlock(&dev->pending_lock);

    uint64_t assert_info = var->assert_record;
    void **params = tjs_xmalloc(((size_t)var->sig.nparams * 2 + 1) * sizeof *params);
    tjf_gpu_params(&var->sig, values, &assert_info, params);
    for (int i = 0, k = var->sig.nparams + 1; var->check_bounds && i < kernel->nparams; i++)
        if (kernel->params[i].is_ptr) /* bounds.h: each buffer's bytes */
            params[k++] = &sizes[i];
    tjcu_result r = dev->cu->cuLaunchKernel(var->function, (unsigned)nprog[0], (unsigned)nprog[1],
                                            (unsigned)nprog[2], (unsigned)var->num_warps * 32, 1, 1,
                                            0, NULL, params, NULL);
    free(params);
    char who[160];
    snprintf(who, sizeof who, "kernel '%s'", kernel->name);
    tj_status st = tjj_cu_check(r, who, "cuLaunchKernel");
    if (st == TJ_OK && dev->blocking)
        st = tjj_gpu_finish(dev, who);
    return st;
}

tj_status tj_launch(tj_device *dev, const tj_kernel *kernel, const tj_launch_cfg *cfg,
                    const tj_arg *args, int nargs, const int64_t *consts, int nconsts)
{
    tjs_clear_error();
    if (!dev)
        return tjs_error(TJ_ERR_INVALID_ARG, "tj_launch: dev is NULL");
    tj_status st = check_kernel(kernel);
    if (st == TJ_OK)
        st = tji_refuse_nested_launch(kernel);
    if (st != TJ_OK)
        return st;
    if (!cfg)
        return tjs_error(TJ_ERR_INVALID_ARG, "tj_launch: kernel '%s': cfg is NULL", kernel->name);
    int gpu = dev->kind == TJ_DEVICE_GPU;
    if (cfg->stream && !gpu)
        return tjs_error(TJ_ERR_INVALID_ARG, "kernel '%s': the CPU device has no streams (cfg->stream must be NULL)",
                         kernel->name);
    if (cfg->stream)
        return tjs_error(TJ_ERR_UNSUPPORTED,
                         "kernel '%s': streams are not supported yet (cfg->stream must be NULL: the "
                         "default stream)",
                         kernel->name);
    if (cfg->num_warps < 0)
        return tjs_error(TJ_ERR_LAUNCH, "kernel '%s': num_warps = %d is negative", kernel->name,
                         cfg->num_warps);
    /* num_warps shapes GPU code only; a CPU launch ignores it, except that
     * TJIT_PTXAS compiles its PTX for it (or the default where invalid). */
    int num_warps = cfg->num_warps ? cfg->num_warps : DEFAULT_NUM_WARPS;
    if (!tjj_valid_num_warps(num_warps)) {
        if (gpu)
            return tjs_error(TJ_ERR_LAUNCH,
                             "kernel '%s': num_warps = %d (a power of two from 1 to %d, or 0 for %d)",
                             kernel->name, num_warps, MAX_NUM_WARPS, DEFAULT_NUM_WARPS);
        num_warps = DEFAULT_NUM_WARPS;
    }
    int32_t nprog[3];
    int64_t total = 0;
    if ((st = check_grid(dev, kernel, cfg, nprog, &total)) != TJ_OK)
        return st;
    if (nconsts != kernel->nconsts)
        return tjs_error(TJ_ERR_LAUNCH, "kernel '%s': expects %d constant%s, got %d", kernel->name,
                         kernel->nconsts, kernel->nconsts == 1 ? "" : "s", nconsts);
    if (nconsts > 0 && !consts)
        return tjs_error(TJ_ERR_INVALID_ARG, "kernel '%s': consts is NULL but %d constants are expected",
                         kernel->name, nconsts);

    if ((unsigned)cfg->check_bounds > (unsigned)TJ_CHECK_BOUNDS_OFF)
        return tjs_error(TJ_ERR_INVALID_ARG, "kernel '%s': cfg->check_bounds = %d (expected a tj_check_bounds)",
                         kernel->name, (int)cfg->check_bounds);
    int check_bounds = tjj_bounds_wanted(cfg->check_bounds);

    tjf_value *values = tjs_xcalloc(kernel->nparams ? (size_t)kernel->nparams : 1, sizeof *values);
    uint64_t *sizes = tjs_xcalloc(kernel->nparams ? (size_t)kernel->nparams : 1, sizeof *sizes);
    /* The buffers this launch uses, held until it is done with them. */
    tjj_buffer_use *uses = tjs_xmalloc((size_t)(nargs > 0 ? nargs : 1) * sizeof *uses);
    int nuses = 0;
    st = tjf_check_args(kernel, args, nargs, values);
    for (int i = 0; st == TJ_OK && i < nargs; i++) {
        if (!kernel->params[i].is_ptr)
            continue;
        tjj_buffer_use *use = &uses[nuses];
        if (!tjj_buffer_acquire(dev, args[i].v.buf, use)) {
            st = tjs_error(TJ_ERR_LAUNCH,
                           "kernel '%s': argument %d '%s': buffer 0x%llx is not a live buffer of this device (freed?)",
                           kernel->name, i + 1, kernel->params[i].name,
                           (unsigned long long)args[i].v.buf.handle);
            break;
        }
        nuses++;
        if (gpu)
            values[i].u64 = use->addr;
        else
            values[i].ptr = (void *)(uintptr_t)use->addr;
        sizes[i] = use->size;
    }
    if (st == TJ_OK && gpu)
        st = tjj_gpu_enter(dev, "tj_launch");
    variant *var = NULL;
    if (st == TJ_OK)
        st = tjj_get_variant(dev, kernel, consts, nconsts, num_warps,
                             tjf_spec_key(kernel, values) | tjf_alias_bit(kernel, args, nargs),
                             check_bounds, &var);
    if (st == TJ_OK)
        st = gpu ? launch_gpu(dev, kernel, var, values, sizes, nprog)
                 : launch_cpu(dev, kernel, var, values, sizes, nprog, total);
    for (int i = 0; i < nuses; i++)
        tjj_buffer_release(dev, &uses[i]);
    free(uses);
    free(sizes);
    free(values);
    return st;
}
