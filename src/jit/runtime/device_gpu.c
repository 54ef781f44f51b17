/* SPDX-License-Identifier: MIT */
/*
 * device_gpu.c — a GPU device's back-end operations (tjj_gpu_ops), through
 * the CUDA driver API (cuda.c loads it).
 *
 * A device holds the primary context of its GPU, made current on the
 * calling thread for the length of every API call (context.c), so any
 * thread may use the device and the caller's own context is left as it was.
 * Buffers are device memory; an allocation that fails for want of memory
 * first waits for the device to release held buffers, then tries once more.
 *
 * A variant is compiled to PTX by the GPU pipeline (../pipeline.c) and
 * loaded by the driver, whose JIT log becomes the error message when it
 * refuses. A launch is cuLaunchKernel on its stream (the legacy default
 * stream, or a tj_stream's CUstream), one CTA of
 * num_warps * 32 threads per program, and returns at once
 * (TJIT_LAUNCH_BLOCKING=1 makes it wait, for debugging). Faults and failed
 * device asserts are therefore found when the host next waits:
 * tj_synchronize and tj_buffer_read synchronize, then read the assert
 * records of the kernels launched since the last check. A kernel with
 * device asserts gets a record of its own in device memory, so a failure
 * names its kernel, op and program exactly; the others share the device's
 * record, which they never write. So does a bounds-checked variant
 * (bounds.h), whose violations come back through that record with
 * TJ_ERR_BOUNDS. tj_stream_synchronize and tj_event_synchronize wait for
 * their stream only, then read the records the same way (a kernel with
 * asserts launched on another stream and still running makes that read,
 * a copy on the legacy default stream, wait for it too).
 *
 * A compile asks the process's shared code first (shared_code.h: one
 * compile per variant and sm for all the process's GPUs; each loads its
 * own module), then the disk cache (disk_cache.h): a hit brings the PTX,
 * what the launch needs besides, and the cubin where ptxas made one (with
 * TJIT_PTXAS), which is loaded instead of the PTX. What was compiled is
 * stored once the driver has loaded it.
 *
 * A variant with TMA copies (sm_90a) takes its tensor maps after the
 * assert record, 128 bytes each, encoded at the launch from the arguments
 * (tensor_map.c; its cache keeps the last encoding). Where a map cannot be
 * encoded for the arguments given — an extent of 0, a stride too small —
 * the launch runs instead the variant of the same kernel compiled without
 * TMA (no_tma, cached beside it), which reads the same memory by cp.async.
 * Every launch does so with TJIT_NO_TMA=1, or where the driver lacks
 * cuTensorMapEncodeTiled (older than CUDA 12); TJIT_DUMP=tma says why each
 * fallback happened.
 *
 * tj_bench times by a pair of events per timed call, recorded on the
 * default stream that launches use; events of one stream complete in
 * order, so waiting for the last one waits for them all. A fault of the
 * work fails a stream's or an event's wait, and is then reported as
 * tj_synchronize would, naming the last kernel launched.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../llvm/bounds.h"
#include "device_impl.h"
#include "disk_cache.h"
#include "shared_code.h"

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

/* Makes the device's context current on the calling thread, for the rest
 * of the public call (context.c). */
tj_status tjj_gpu_enter(tj_device *dev, const char *who)
{
    return tjj_cuda_make_current(dev->cu, dev->context, who);
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
        const tjj_assert_site *site = NULL;
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
    if ((st = tjj_cuda_make_current(cu, context, who)) != TJ_OK ||
        (st = tjj_cu_check(cu->cuMemAlloc(&record, sizeof(tjj_gpu_assert)), who, "cuMemAlloc")) != TJ_OK ||
        (st = tjj_cu_check(cu->cuMemsetD8(record, 0, sizeof(tjj_gpu_assert)), who, "cuMemsetD8")) != TJ_OK) {
        if (record)
            cu->cuMemFree(record);
        cu->cuDevicePrimaryCtxRelease(cu_device);
        return st;
    }

    tj_device *dev = tjj_device_new(&tjj_gpu_ops);
    dev->cu = cu;
    dev->cu_device = cu_device;
    dev->ordinal = ordinal;
    dev->context = context;
    dev->sm = sm;
    dev->processors = sms;
    dev->assert_record = record;
    const char *blocking = getenv("TJIT_LAUNCH_BLOCKING");
    dev->blocking = blocking && *blocking && strcmp(blocking, "0") != 0;
    const char *no_tma = getenv("TJIT_NO_TMA");
    dev->no_tma = (no_tma && *no_tma && strcmp(no_tma, "0") != 0) || !cu->cuTensorMapEncodeTiled;
    /* Block pairs run where a launch asks for them: on an H100 they were
     * right but no faster than blocks alone (RESULTS.md, 2026-12-07:
     * 0.97-1.00x); TJIT_BLOCK_PAIRS=1 makes them the default, =0 keeps them off. */
    enum { PAIRS_BY_DEFAULT = 0 };
    const char *pairs = getenv("TJIT_BLOCK_PAIRS");
    dev->pairs_by_default = pairs && *pairs ? strcmp(pairs, "0") != 0 : PAIRS_BY_DEFAULT;
    const char *stream_k = getenv("TJIT_STREAM_K");
    dev->stream_k_by_default = stream_k && *stream_k && strcmp(stream_k, "0") != 0;
    snprintf(dev->name, sizeof dev->name, "%s (sm_%d, %d SMs)", gpu_name, sm, sms);
    *out = dev;
    return TJ_OK;
}

static void idle(tj_device *dev)
{
    /* On a GPU whose context has failed the frees that follow fail too,
     * and the context's release reclaims all. */
    if (tjj_gpu_enter(dev, "tj_device_close") == TJ_OK)
        dev->cu->cuCtxSynchronize();
}

static void close_gpu(tj_device *dev)
{
    free(dev->pending);
    tjj_stream_k_workspaces_free(dev);
    dev->cu->cuMemFree(dev->assert_record);
    dev->cu->cuDevicePrimaryCtxRelease(dev->cu_device);
}

static tj_status synchronize(tj_device *dev, const char *who)
{
    tj_status st = tjj_gpu_enter(dev, who);
    return st == TJ_OK ? tjj_gpu_finish(dev, who) : st;
}

/* --- memory ---------------------------------------------------------------- */

static tj_status alloc_memory(tj_device *dev, size_t bytes, uint64_t *addr)
{
    static const char who[] = "tj_buffer_alloc";
    tj_status st = tjj_gpu_enter(dev, who);
    if (st != TJ_OK)
        return st;
    tjcu_deviceptr p = 0;
    tjcu_result r = dev->cu->cuMemAlloc(&p, bytes);
    if (r == TJCU_ERROR_OUT_OF_MEMORY && tjj_buffers_held(dev)) {
        /* Faults and asserts stay for the next tj_synchronize to report. */
        uint64_t epoch = tjj_buffers_epoch(dev);
        if (dev->cu->cuCtxSynchronize() == TJCU_SUCCESS)
            tjj_buffers_synced(dev, epoch);
        r = dev->cu->cuMemAlloc(&p, bytes);
    }
    char call[64];
    snprintf(call, sizeof call, "cuMemAlloc of %zu bytes", bytes);
    if ((st = tjj_cu_check(r, who, call)) != TJ_OK)
        return st;
    *addr = p;
    return TJ_OK;
}

/* The driver's word on foreign memory: an allocation of this device's
 * context (cuMemAlloc, cudaMalloc on the primary context, another
 * library's) that holds the whole range. */
static tj_status check_foreign(tj_device *dev, uint64_t addr, size_t bytes, const char *who)
{
    tj_status st = tjj_gpu_enter(dev, who);
    if (st != TJ_OK)
        return st;
    tjcu_context context = NULL;
    tjcu_deviceptr start = 0;
    size_t size = 0;
    tjcu_result r = dev->cu->cuPointerGetAttribute(&context, TJCU_POINTER_ATTRIBUTE_CONTEXT, addr);
    if (r == TJCU_SUCCESS)
        r = dev->cu->cuPointerGetAttribute(&start, TJCU_POINTER_ATTRIBUTE_RANGE_START_ADDR, addr);
    if (r == TJCU_SUCCESS)
        r = dev->cu->cuPointerGetAttribute(&size, TJCU_POINTER_ATTRIBUTE_RANGE_SIZE, addr);
    if (r != TJCU_SUCCESS) {
        char why[256];
        tjj_cu_check(r, who, "cuPointerGetAttribute");
        snprintf(why, sizeof why, "%s", tj_last_error());
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: 0x%llx is no device memory the CUDA driver knows (%s)", who,
                         (unsigned long long)addr, why);
    }
    if (context != dev->context)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: 0x%llx belongs to another CUDA context than the device's "
                         "(the primary context of its GPU)", who, (unsigned long long)addr);
    if (addr - start > size || bytes > size - (addr - start))
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: %zu bytes at 0x%llx run past the end of its allocation "
                         "(%zu bytes at 0x%llx)", who, bytes, (unsigned long long)addr, size,
                         (unsigned long long)start);
    return TJ_OK;
}

/* Also reached from a launch that failed before it entered (releasing a
 * freed buffer it held): enter first. */
static void free_memory(tj_device *dev, uint64_t addr)
{
    if (tjj_gpu_enter(dev, "tj_buffer_free") == TJ_OK)
        dev->cu->cuMemFree(addr);
}

static tj_status write_memory(tj_device *dev, uint64_t dst, const void *src, size_t bytes,
                              const char *who)
{
    if (!bytes)
        return TJ_OK;
    tj_status st = tjj_gpu_enter(dev, who);
    /* A synchronous copy on the default stream: it follows every kernel
     * launched before it and is done when it returns. */
    if (st == TJ_OK)
        st = tjj_cu_check(dev->cu->cuMemcpyHtoD(dst, src, bytes), who, "cuMemcpyHtoD");
    return st;
}

static tj_status read_memory(tj_device *dev, void *dst, uint64_t src, size_t bytes, const char *who)
{
    tj_status st;
    /* The kernels that wrote the buffer must have finished without a fault
     * or a failed assert before their results are worth reading. */
    if ((st = tjj_gpu_enter(dev, who)) == TJ_OK && (st = tjj_gpu_finish(dev, who)) == TJ_OK && bytes)
        st = tjj_cu_check(dev->cu->cuMemcpyDtoH(dst, src, bytes), who, "cuMemcpyDtoH");
    return st;
}

/* Between two buffers of the device: on the default stream, after the
 * kernels queued before it and before those queued after. */
static tj_status copy_memory(tj_device *dev, uint64_t dst, uint64_t src, size_t bytes, const char *who)
{
    tj_status st = tjj_gpu_enter(dev, who);
    if (st == TJ_OK && bytes)
        st = tjj_cu_check(dev->cu->cuMemcpyDtoD(dst, src, bytes), who, "cuMemcpyDtoD");
    if (st == TJ_OK && dev->blocking)
        st = tjj_gpu_finish(dev, who);
    return st;
}

/* Peer access: dev's context may read and write peer's memory directly,
 * where the hardware allows (NVLink, or PCIe peer to peer), so copies go
 * straight between the GPUs. Asked once per pair of devices; where it is
 * refused, cuMemcpyPeer stages the copy through the host itself. */
static pthread_mutex_t peer_lock = PTHREAD_MUTEX_INITIALIZER;

static void enable_peer(tj_device *dev, tj_device *peer, const char *who)
{
    if (dev->cu_device == peer->cu_device || peer->ordinal >= 64)
        return;
    uint64_t bit = (uint64_t)1 << peer->ordinal;
    pthread_mutex_lock(&peer_lock);
    if (!(dev->peers_tried & bit)) {
        dev->peers_tried |= bit;
        int can = 0;
        if (tjj_gpu_enter(dev, who) == TJ_OK &&
            dev->cu->cuDeviceCanAccessPeer(&can, dev->cu_device, peer->cu_device) == TJCU_SUCCESS && can) {
            tjcu_result r = dev->cu->cuCtxEnablePeerAccess(peer->context, 0);
            if (r == TJCU_SUCCESS || r == TJCU_ERROR_PEER_ACCESS_ALREADY_ENABLED)
                dev->peers_enabled |= bit;
        }
    }
    pthread_mutex_unlock(&peer_lock);
}

int tjj_peer_access(const tj_device *dev, const tj_device *peer)
{
    if (!dev || !peer || dev->ops != &tjj_gpu_ops || peer->ops != &tjj_gpu_ops || peer->ordinal >= 64)
        return 0;
    pthread_mutex_lock(&peer_lock);
    int on = !!(dev->peers_enabled & ((uint64_t)1 << peer->ordinal));
    pthread_mutex_unlock(&peer_lock);
    return on;
}

/* From a buffer of another GPU device (or another tj_device of this GPU):
 * cuMemcpyPeer, which follows the work queued on both contexts and is
 * asynchronous to the host; both contexts are then waited for (the driver
 * does not say in which the copy is queued), so the copy is done, and any
 * fault of the work before it reported as tj_buffer_read reports one, when
 * tj_buffer_copy returns. */
static tj_status copy_peer(tj_device *dev, uint64_t dst, tj_device *src_dev, uint64_t src, size_t bytes,
                           const char *who)
{
    int one_context = dev->context == src_dev->context; /* one GPU opened twice */
    if (!one_context) {
        enable_peer(dev, src_dev, who);
        enable_peer(src_dev, dev, who);
    }
    tj_status st = tjj_gpu_enter(dev, who);
    if (st == TJ_OK && bytes && one_context)
        st = tjj_cu_check(dev->cu->cuMemcpyDtoD(dst, src, bytes), who, "cuMemcpyDtoD");
    else if (st == TJ_OK && bytes)
        st = tjj_cu_check(dev->cu->cuMemcpyPeer(dst, dev->context, src, src_dev->context, bytes), who,
                          "cuMemcpyPeer");
    if (st == TJ_OK)
        st = tjj_gpu_finish(dev, who);
    if (st == TJ_OK && !one_context && (st = tjj_gpu_enter(src_dev, who)) == TJ_OK)
        st = tjj_gpu_finish(src_dev, who);
    return st;
}

static void pass_buffer(tjf_value *value, uint64_t addr)
{
    value->u64 = addr;
}

/* --- variants -------------------------------------------------------------- */

/* Loads PTX into the device's context; the driver's JIT log explains a
 * refusal. */
static tj_status load_module(tj_device *dev, const char *kernel_name, const tjj_gpu_code *code,
                             variant *v)
{
    char info_log[4096] = "", error_log[8192] = "";
    tjcu_jit_option options[] = {TJCU_JIT_INFO_LOG_BUFFER, TJCU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                                 TJCU_JIT_ERROR_LOG_BUFFER, TJCU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *values[] = {info_log, (void *)(uintptr_t)sizeof info_log, error_log,
                      (void *)(uintptr_t)sizeof error_log};
    tjcu_result r = dev->cu->cuModuleLoadDataEx(&v->module, code->ptx, 4, options, values);
    if (r != TJCU_SUCCESS) {
        v->module = NULL;
        tj_status st = tjj_cuda_check(r, "cuModuleLoadDataEx");
        char *why = tjs_xstrdup(tj_last_error());
        st = tjs_error(st == TJ_ERR_OUT_OF_MEMORY ? st : TJ_ERR_COMPILE,
                       "kernel '%s': the CUDA driver cannot load its PTX for sm_%d: %s%s%s%s%s",
                       kernel_name, dev->sm, why, *error_log ? "\n" : "", error_log,
                       *info_log ? "\n" : "", info_log);
        free(why);
        return st;
    }
    char call[160];
    snprintf(call, sizeof call, "cuModuleGetFunction(%s)", code->entry);
    return tjj_cu_check(dev->cu->cuModuleGetFunction(&v->function, v->module, code->entry),
                    kernel_name, call);
}

/* Loads a cubin (ptxas's, for this device's target) into the device's
 * context; on failure nothing is loaded, and the caller loads the PTX. */
static tj_status load_image(tj_device *dev, const char *cubin, const tjj_gpu_code *code, variant *v)
{
    tjcu_result r = dev->cu->cuModuleLoadDataEx(&v->module, cubin, 0, NULL, NULL);
    if (r != TJCU_SUCCESS) {
        v->module = NULL;
        return tjj_cuda_check(r, "cuModuleLoadDataEx (cubin)");
    }
    r = dev->cu->cuModuleGetFunction(&v->function, v->module, code->entry);
    if (r != TJCU_SUCCESS) {
        dev->cu->cuModuleUnload(v->module);
        v->module = NULL;
        return tjj_cuda_check(r, "cuModuleGetFunction (cubin)");
    }
    return TJ_OK;
}

/* The kernel's dynamic shared memory, for its launches: above the 48 KiB
 * every GPU gives a block, the function opts in (cuFuncSetAttribute), up to
 * what this device allows. */
static tj_status opt_in_shared(tj_device *dev, const char *kernel_name, const tjj_gpu_code *code,
                               variant *v)
{
    enum { SHARED_WITHOUT_OPT_IN = 48 * 1024 };
    v->shared_bytes = code->shared_bytes;
    v->threads = 32 * (code->num_warps + code->producer_warps);
    if (code->shared_bytes <= SHARED_WITHOUT_OPT_IN)
        return TJ_OK;
    int most = 0;
    tj_status st = tjj_cu_check(dev->cu->cuDeviceGetAttribute(
                                    &most, TJCU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                    dev->cu_device),
                                kernel_name, "cuDeviceGetAttribute");
    if (st == TJ_OK && code->shared_bytes > (size_t)most)
        return tjs_error(TJ_ERR_COMPILE,
                         "error: in kernel '%s': needs %zu bytes of shared memory; this GPU (sm_%d) "
                         "gives a block at most %d (use a smaller tile)",
                         kernel_name, code->shared_bytes, dev->sm, most);
    if (st == TJ_OK)
        st = tjj_cu_check(dev->cu->cuFuncSetAttribute(v->function, TJCU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                      (int)code->shared_bytes),
                          kernel_name, "cuFuncSetAttribute");
    return st;
}

/* A persistent kernel runs as many programs as the GPU holds at once: every
 * SM as many blocks as its registers, shared memory and threads allow; in
 * pairs (cluster_pairs.c), twice the clusters the GPU holds at once, which
 * a GPC's SMs may cap below that (the driver's count, where it has one),
 * and an even count in any case. */
static tj_status count_resident_programs(tj_device *dev, const char *kernel_name, variant *v, int cluster)
{
    int per_sm = 0;
    tj_status st = tjj_cu_check(dev->cu->cuOccupancyMaxActiveBlocksPerMultiprocessor(
                                    &per_sm, v->function, v->threads, v->shared_bytes),
                                kernel_name, "cuOccupancyMaxActiveBlocksPerMultiprocessor");
    if (st == TJ_OK && per_sm < 1)
        st = tjs_error(TJ_ERR_LAUNCH, "kernel '%s': no block of %d threads and %zu bytes of shared "
                       "memory fits on an SM", kernel_name, v->threads, v->shared_bytes);
    v->resident_programs = per_sm * dev->processors;
    if (st == TJ_OK && cluster > 1) {
        int clusters = 0;
        tjcu_launch_config config = {.grid_x = (unsigned)(v->resident_programs / cluster * cluster), .grid_y = 1,
                                     .grid_z = 1, .block_x = (unsigned)v->threads, .block_y = 1, .block_z = 1,
                                     .shared_bytes = (unsigned)v->shared_bytes};
        /* a driver that cannot say keeps the even count */
        if (dev->cu->cuOccupancyMaxActiveClusters &&
            dev->cu->cuOccupancyMaxActiveClusters(&clusters, v->function, &config) != TJCU_SUCCESS)
            clusters = 0;
        if (clusters > 0 && clusters * cluster < v->resident_programs)
            v->resident_programs = clusters * cluster;
        v->resident_programs = v->resident_programs / cluster * cluster;
        if (st == TJ_OK && v->resident_programs < cluster)
            st = tjs_error(TJ_ERR_LAUNCH, "kernel '%s': no cluster of %d blocks of %d threads and %zu bytes of "
                           "shared memory fits on the GPU", kernel_name, cluster, v->threads, v->shared_bytes);
    }
    return st;
}

static tj_status compile(tj_device *dev, tji_func *fn, variant *v, int num_warps, uint64_t spec,
                         tjj_stage_times *times, tjj_artifact *a)
{
    (void)num_warps; /* the variant's own */
    (void)spec;
    /* sm_90a on a 9.0 device: its PTX runs on that chip only, which is
     * this one, and it may use what sm_90 lacks (Hopper's wgmma and TMA) */
    tjj_gpu_target target = {.sm = dev->sm, .arch_specific = dev->sm == 90, .num_warps = v->num_warps,
                             .spec = v->spec, .num_stages = v->num_stages, .no_tma = v->no_tma,
                             .warp_specialize = v->warp_specialize, .persistent = v->persistent,
                             .cluster = v->cluster & ~TJJ_PAIRS_ALLOWED,
                             .pairs_allowed = (v->cluster & TJJ_PAIRS_ALLOWED) != 0,
                             .times = times};
    int hit = 0, claimed = 0;
    tj_status st = tjj_compile_gpu_cached(fn, &target, a, &hit, &claimed);
    if (hit == 2) { /* another device's compile: the variant holds its reference */
        v->shared_code = 1;
        v->key = a->key;
    }
    if (st == TJ_OK && !a->ptxas_checked && tjj_ptxas_path()) {
        st = tjj_timed(times, "ptxas", tjj_check_with_ptxas(fn, a, v->num_warps, v->spec));
        a->ptxas_checked = st == TJ_OK;
    }
    /* a cubin from the disk cache spares the driver its PTX compile; the
     * PTX beside it is loaded where the driver refuses the cubin */
    int loaded = st == TJ_OK && hit && a->cubin && load_image(dev, a->cubin, &a->gpu, v) == TJ_OK;
    if (st == TJ_OK && !loaded)
        st = load_module(dev, fn->name, &a->gpu, v);
    tjj_stage_done(times, "module-load");
    if (st == TJ_OK && !hit)
        tjj_disk_cache_store(a);
    if (st == TJ_OK && claimed) { /* loaded here: the other devices of this sm take it */
        tjj_shared_code_publish(a);
        claimed = 0;
        v->shared_code = 1;
        v->key = a->key;
    }
    if (claimed)
        tjj_shared_code_abandon(&a->key);
    if (st == TJ_OK)
        st = opt_in_shared(dev, fn->name, &a->gpu, v);
    if (st == TJ_OK && a->gpu.persistent)
        st = count_resident_programs(dev, fn->name, v, a->gpu.cluster);
    v->stream_k_piece_bytes = a->gpu.stream_k_piece_bytes;
    if (st == TJ_OK) {
        v->nasserts = a->nasserts;
        v->asserts = a->asserts;
        a->nasserts = 0;
        a->asserts = NULL;
        v->assert_record = dev->assert_record;
        tjj_tmap_set_free(&v->tmaps);
        tjj_tmap_set_init(&v->tmaps, a->gpu.tmaps, a->gpu.ntmaps);
        a->gpu.tmaps = NULL;
        a->gpu.ntmaps = 0;
    }
    /* the launch falls back to a variant without TMA, whose maps it would
     * not encode: it must have none */
    if (st == TJ_OK && v->tmaps.n && v->no_tma)
        st = tjs_error(TJ_ERR_COMPILE, "internal error: kernel '%s': its variant without TMA reads "
                       "%d tensor map%s", fn->name, v->tmaps.n, v->tmaps.n == 1 ? "" : "s");
    if (st == TJ_OK && (v->nasserts || v->check_bounds)) {
        tjcu_deviceptr record = 0;
        st = tjj_cu_check(dev->cu->cuMemAlloc(&record, sizeof(tjj_gpu_assert)), fn->name,
                      "cuMemAlloc (assert record)");
        if (st == TJ_OK) {
            v->assert_record = record;
            st = tjj_cu_check(dev->cu->cuMemsetD8(record, 0, sizeof(tjj_gpu_assert)), fn->name,
                          "cuMemsetD8 (assert record)");
        }
    }
    return st;
}

static void free_variant(tj_device *dev, variant *v)
{
    if (v->shared_code)
        tjj_shared_code_release(&v->key);
    if (v->module)
        dev->cu->cuModuleUnload(v->module);
    if (v->assert_record && v->assert_record != dev->assert_record)
        dev->cu->cuMemFree(v->assert_record);
}

/* --- launches -------------------------------------------------------------- */

/* The variant var's launch falls back to where its maps cannot be encoded:
 * the same kernel, constants and specialization, compiled without TMA. */
static tj_status tma_fallback(tj_device *dev, const tj_kernel *kernel, const variant *var,
                              const char *why, variant **out)
{
    if (tjs_dump_enabled("tma"))
        fprintf(stderr, "// TJIT_DUMP=tma: kernel '%s': %s; launching its variant without TMA\n",
                kernel->name, why);
    return tjj_get_variant(dev, kernel, var->consts, var->nconsts, var->num_warps, var->num_stages,
                           var->spec, var->check_bounds, 1,
                           var->warp_specialize == TJ_WARP_SPECIALIZE_ON ? TJ_WARP_SPECIALIZE_DEFAULT
                                                                         : var->warp_specialize,
                           var->persistent,
                           (var->cluster & TJJ_PAIRS_ALLOWED) |
                               ((var->cluster & ~TJJ_PAIRS_ALLOWED) == TJ_CLUSTER_ON ? TJ_CLUSTER_DEFAULT
                                                                                    : var->cluster & ~TJJ_PAIRS_ALLOWED),
                           out);
}

/* One program per CTA of num_warps * 32 threads on the default stream;
 * returns once the launch is queued (or, blocking, has finished). */
static tj_status launch(tj_device *dev, const tj_kernel *kernel, variant *var, tjf_value *values,
                        uint64_t *sizes, const int32_t nprog[3], int64_t total, uint64_t stream)
{
    (void)total;
    char who[160];
    snprintf(who, sizeof who, "kernel '%s'", kernel->name);
    tjcu_tensor_map *maps = NULL;
    if (var->tmaps.n) {
        char why[512];
        int fallback = 0;
        maps = tjj_tmap_storage(var->tmaps.n);
        if (!maps)
            return tjs_error(TJ_ERR_OUT_OF_MEMORY, "%s: no memory for %d tensor maps", who,
                             var->tmaps.n);
        tj_status st = tjj_tmaps_prepare(&var->tmaps, dev->cu->cuTensorMapEncodeTiled, kernel,
                                         values, who, maps, &fallback, why, sizeof why);
        if (st == TJ_OK && fallback) {
            free(maps);
            maps = NULL;
            st = tma_fallback(dev, kernel, var, why, &var);
        }
        if (st != TJ_OK) {
            free(maps);
            return st;
        }
    }

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

    /* jit.h's order: the user's parameters, the assert record, a checked
     * variant's buffer sizes (bounds.h), the tensor maps, a persistent
     * kernel's program count (its grid: the programs it holds at once) */
    uint64_t assert_info = var->assert_record;
    int32_t logical_programs = nprog[0];
    unsigned grid_x = (unsigned)nprog[0];
    if (var->resident_programs && var->resident_programs < nprog[0])
        grid_x = (unsigned)var->resident_programs;
    int k = var->sig.nparams + 1;
    void **params = tjs_xmalloc(((size_t)var->sig.nparams * 2 + 3 + (size_t)var->tmaps.n) * sizeof *params);
    tjf_gpu_params(&var->sig, values, &assert_info, params);
    for (int i = 0; var->check_bounds && i < kernel->nparams; i++)
        if (kernel->params[i].is_ptr) /* bounds.h: each buffer's bytes */
            params[k++] = &sizes[i];
    for (int m = 0; maps && m < var->tmaps.n; m++)
        params[k++] = &maps[m];
    if (var->resident_programs)
        params[k++] = &logical_programs;
    uint64_t workspace = 0;
    if (var->stream_k_piece_bytes) {
        /* gpu/stream_k.c: a counter for each of the S <= T mod P split
         * tiles, then from 8R bytes (rounded up to 128; R <= P ranges, R
         * >= S) the 2R slots */
        size_t split = grid_x < (unsigned)nprog[0] ? (size_t)nprog[0] % grid_x : 0;
        size_t counters = (split * 8 + 127) / 128 * 128;
        size_t bytes = ((size_t)grid_x * 8 + 127) / 128 * 128 + 2 * (size_t)grid_x * var->stream_k_piece_bytes;
        tj_status st = tjj_stream_k_workspace(dev, stream, counters, bytes, who, &workspace);
        if (st != TJ_OK) {
            free(params);
            free(maps);
            return st;
        }
        params[k++] = &workspace;
    }
    tjcu_result r = dev->cu->cuLaunchKernel(var->function, grid_x, (unsigned)nprog[1],
                                            (unsigned)nprog[2], (unsigned)var->threads, 1, 1,
                                            (unsigned)var->shared_bytes, (tjcu_stream)(uintptr_t)stream,
                                            params, NULL);
    /* the driver has copied the parameters by the time it returns */
    free(params);
    free(maps);
    tj_status st = tjj_cu_check(r, who, "cuLaunchKernel");
    if (st == TJ_OK && dev->blocking)
        st = tjj_gpu_finish(dev, who);
    return st;
}

/* --- streams, events, page-locked memory (streams.c) ------------------------- */

static tj_status stream_new(tj_device *dev, uint64_t *native, const char *who)
{
    tjcu_stream s = NULL;
    tj_status st = tjj_gpu_enter(dev, who);
    if (st == TJ_OK) /* flags 0: ordered with the legacy default stream */
        st = tjj_cu_check(dev->cu->cuStreamCreate(&s, 0), who, "cuStreamCreate");
    *native = (uint64_t)(uintptr_t)s;
    return st;
}

static void stream_free(tj_device *dev, uint64_t native)
{
    if (tjj_gpu_enter(dev, "tj_stream_destroy") == TJ_OK) {
        tjj_stream_k_workspace_forget(dev, native);
        dev->cu->cuStreamDestroy((tjcu_stream)(uintptr_t)native);
    }
}

/* After a wait's result r: a failed wait is a fault of some kernel queued
 * before, reported as tj_synchronize reports it (with the last kernel
 * launched); else the assert records of every kernel launched since the
 * last check are read. */
static tj_status after_wait(tj_device *dev, tjcu_result r, const char *who, const char *call)
{
    if (r == TJCU_SUCCESS)
        return check_asserts(dev, who);
    tj_status st = tjj_gpu_finish(dev, who);
    return st != TJ_OK ? st : tjj_cu_check(r, who, call);
}

static tj_status stream_wait(tj_device *dev, uint64_t native, const char *who)
{
    tj_status st = tjj_gpu_enter(dev, who);
    return st == TJ_OK ? after_wait(dev, dev->cu->cuStreamSynchronize((tjcu_stream)(uintptr_t)native), who,
                                    "cuStreamSynchronize")
                       : st;
}

static tj_status copy_async(tj_device *dev, int to_device, uint64_t device_addr, void *host, size_t bytes,
                            uint64_t stream, const char *who)
{
    tj_status st = tjj_gpu_enter(dev, who);
    tjcu_stream s = (tjcu_stream)(uintptr_t)stream;
    if (st == TJ_OK && to_device)
        st = tjj_cu_check(dev->cu->cuMemcpyHtoDAsync(device_addr, host, bytes, s), who, "cuMemcpyHtoDAsync");
    else if (st == TJ_OK)
        st = tjj_cu_check(dev->cu->cuMemcpyDtoHAsync(host, device_addr, bytes, s), who, "cuMemcpyDtoHAsync");
    if (st == TJ_OK && dev->blocking)
        st = stream_wait(dev, stream, who);
    return st;
}

static tj_status event_new(tj_device *dev, uint64_t *native, const char *who)
{
    tjcu_event e = NULL;
    tj_status st = tjj_gpu_enter(dev, who);
    if (st == TJ_OK) /* flags 0: it times */
        st = tjj_cu_check(dev->cu->cuEventCreate(&e, 0), who, "cuEventCreate");
    *native = (uint64_t)(uintptr_t)e;
    return st;
}

static void event_free(tj_device *dev, uint64_t native)
{
    if (tjj_gpu_enter(dev, "tj_event_destroy") == TJ_OK)
        dev->cu->cuEventDestroy((tjcu_event)(uintptr_t)native);
}

static tj_status event_record(tj_device *dev, uint64_t event, uint64_t stream, const char *who)
{
    tj_status st = tjj_gpu_enter(dev, who);
    return st == TJ_OK ? tjj_cu_check(dev->cu->cuEventRecord((tjcu_event)(uintptr_t)event,
                                                             (tjcu_stream)(uintptr_t)stream),
                                      who, "cuEventRecord")
                       : st;
}

static tj_status event_wait(tj_device *dev, uint64_t event, const char *who)
{
    tj_status st = tjj_gpu_enter(dev, who);
    return st == TJ_OK ? after_wait(dev, dev->cu->cuEventSynchronize((tjcu_event)(uintptr_t)event), who,
                                    "cuEventSynchronize")
                       : st;
}

static tj_status event_elapsed(tj_device *dev, uint64_t start, uint64_t end, float *ms, const char *who)
{
    tj_status st = tjj_gpu_enter(dev, who);
    if (st == TJ_OK)
        st = tjj_cu_check(dev->cu->cuEventElapsedTime(ms, (tjcu_event)(uintptr_t)start,
                                                      (tjcu_event)(uintptr_t)end),
                          who, "cuEventElapsedTime (are both events complete? tj_event_synchronize)");
    return st;
}

static tj_status host_alloc(tj_device *dev, size_t bytes, void **out, const char *who)
{
    tj_status st = tjj_gpu_enter(dev, who);
    char call[64];
    snprintf(call, sizeof call, "cuMemAllocHost of %zu bytes", bytes);
    if (st == TJ_OK)
        st = tjj_cu_check(dev->cu->cuMemAllocHost(out, bytes), who, call);
    if (st != TJ_OK)
        *out = NULL;
    return st;
}

static void host_free(tj_device *dev, void *ptr)
{
    if (tjj_gpu_enter(dev, "tj_host_free") == TJ_OK)
        dev->cu->cuMemFreeHost(ptr);
}

const tjj_backend tjj_gpu_ops = {
    .kind = TJ_DEVICE_GPU,
    .asynchronous = 1,
    .specializes = 1,
    .max_grid_yz = MAX_GRID_YZ,
    .open = open_gpu,
    .idle = idle,
    .close = close_gpu,
    .enter = tjj_gpu_enter,
    .synchronize = synchronize,
    .alloc = alloc_memory,
    .free = free_memory,
    .check_foreign = check_foreign,
    .write = write_memory,
    .read = read_memory,
    .copy = copy_memory,
    .copy_peer = copy_peer,
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
    .event_wait = event_wait,
    .event_elapsed = event_elapsed,
    .host_alloc = host_alloc,
    .host_free = host_free,
};
