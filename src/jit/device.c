/* SPDX-License-Identifier: MIT */
/*
 * device.c — the host API: devices, buffers and launches, on the CPU and on
 * NVIDIA GPUs.
 *
 * A device owns a table of buffers and a cache of compiled kernel variants;
 * a CPU device also owns per-worker scratch memory, a GPU device the CUDA
 * primary context of its GPU.
 *
 * Buffers are handles, not pointers, so that a freed, foreign or invented
 * handle is reported instead of being undefined behavior. A handle packs
 * three fields: the device's tag (16 bits, distinct for each device opened),
 * the generation of its slot (24 bits, bumped when the slot's buffer is
 * freed) and the slot index plus one (24 bits), so 0 is never a handle.
 * A lookup checks all three under the table's mutex. A slot holds a host
 * pointer on the CPU and a device address (cuMemAlloc) on a GPU; reads and
 * writes of GPU buffers are synchronous copies (cuMemcpy).
 *
 * A launch checks everything the caller gave (device, kernel, grid, constants,
 * num_warps, arguments, buffers) before any work, then finds the compiled
 * variant for the kernel, its constants and (on a GPU) num_warps and the
 * arguments' specialization key (tjf_spec_key: which pointers are 16-byte
 * aligned, which integers are multiples of 16 or equal to 1) in the
 * device's cache, building and compiling it on a miss. Its mutex is held
 * while a variant is built, which serializes kernel building per device as
 * tjit.h promises. Variants live until the device closes, so a launch keeps
 * using its variant without the lock.
 *
 * On the CPU the grid is a range of program instances run by the thread pool
 * (threadpool.c); each call of the compiled function computes a chunk of
 * programs (one libffi call per chunk, a compiled loop inside).
 * The pool runs one launch at a time and a worker index is exclusive while a
 * task runs, so each worker owns its scratch slot here and grows it itself.
 *
 * On a GPU a variant is built as tile IR, analysed (axis info for the
 * specialization), given coalesced layouts (tjp_coalesce,
 * tjp_assign_layouts), verified and checked again, compiled to PTX
 * (gpu_codegen.c) and loaded by the driver,
 * whose JIT log becomes the error message when it refuses. A launch is
 * cuLaunchKernel on the default stream, one CTA of num_warps * 32 threads
 * per program, and returns at once (TJIT_LAUNCH_BLOCKING=1 makes it wait,
 * for debugging). Faults and failed device asserts are therefore found when
 * the host next waits: tj_synchronize and tj_buffer_read synchronize, then
 * read the assert records of the kernels launched since the last check. A
 * kernel with device asserts gets a record of its own in device memory, so
 * a failure names its kernel, op and program exactly; the others share the
 * device's record, which they never write. The context is made current on
 * the calling thread at every API call, so any thread may use the device.
 *
 * A bounds-checked launch (TJIT_CHECK_BOUNDS, tj_launch_cfg.check_bounds;
 * bounds.h) runs a variant of its own, whose violations come back through
 * the same records as device asserts, with TJ_ERR_BOUNDS.
 *
 * Every variant's PTX can also be assembled by ptxas (TJIT_PTXAS, see
 * ptxas.c) — CPU variants included, which then get a GPU compile as well —
 * so that a machine without a GPU still proves the PTX valid. The same GPU
 * pipeline runs without a launch for tj_kernel_ptx(_args) and for the
 * layout explainer, tj_kernel_explain.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "../ffi_bind/ffi_bind.h"
#include "bounds.h"
#include "cuda_api.h"
#include "jit.h"
#include "ptxas.h"

enum { SLOT_BITS = 24, GENERATION_BITS = 24, TAG_BITS = 16 };
#define FIELD_MASK(bits) ((UINT64_C(1) << (bits)) - 1)
#define MAX_SLOTS FIELD_MASK(SLOT_BITS)
#define ALIGNMENT 64 /* buffers and scratch: a cache line, the widest vector */
enum { DEFAULT_NUM_WARPS = 4, MAX_NUM_WARPS = 32, MAX_GRID_YZ = 65535 };

typedef struct buffer_slot {
    uint64_t addr;        /* host pointer or device address; 0: the slot is free */
    size_t size;
    uint32_t generation;  /* never 0 */
    uint32_t next_free;   /* free list: index + 1 of the next free slot, 0 = end */
} buffer_slot;

/* Where a device assert of a GPU variant is, by its op index. */
typedef struct assert_site {
    uint32_t op;
    char *file;
    int line;
    char *message;
} assert_site;

typedef struct variant {
    struct variant *next; /* hash chain */
    uint64_t hash;
    const tj_kernel *kernel;
    int nconsts;
    int64_t *consts;
    int num_warps;        /* part of the key on a GPU; 0 on the CPU */
    uint64_t spec;        /* part of the key on a GPU: tjf_spec_key; 0 on the CPU */
    tjf_sig sig;
    tjj_cpu_kernel *compiled;       /* CPU */
    tjcu_module module;             /* GPU */
    tjcu_function function;
    int nasserts;
    assert_site *asserts;
    tjcu_deviceptr assert_record;   /* its own if nasserts > 0 or bounds, else the device's */
    int pending;          /* launched since the last assert check (pending_lock) */
    int check_bounds;     /* part of the key: a bounds-checked variant (bounds.h) */
    tjj_bounds_sites *bounds; /* a checked variant's accesses, for its messages */
} variant;

typedef struct scratch_slot {
    void *ptr;
    size_t size;
} scratch_slot;

struct tj_device {
    tj_device_kind kind;
    uint64_t tag;
    char name[128];

    pthread_mutex_t buffers_lock;
    buffer_slot *slots;
    uint32_t nslots, slots_cap;
    uint32_t free_head;   /* index + 1, 0 = none */

    pthread_mutex_t variants_lock;
    variant **buckets;
    size_t nbuckets, nvariants;

    /* CPU */
    int nworkers;
    scratch_slot *scratch; /* one per pool worker */

    /* GPU */
    const tjcu_driver *cu;
    tjcu_device cu_device;
    tjcu_context context;
    int sm;               /* compute capability, 10 * major + minor */
    tjcu_deviceptr assert_record; /* shared by variants without asserts */
    int blocking;         /* TJIT_LAUNCH_BLOCKING=1: each launch waits */
    pthread_mutex_t pending_lock;
    variant **pending;    /* variants with asserts launched since the last check */
    int npending, pending_cap;
    const char *last_kernel; /* the name of the last kernel launched */
};

static atomic_uint_fast64_t device_counter;

/* --- CUDA calls ---------------------------------------------------------- */

/* Checks a driver call made for an API function: "WHO: CALL: CUDA_ERROR_..." */
static tj_status cu_check(tjcu_result r, const char *who, const char *call)
{
    if (r == TJCU_SUCCESS)
        return TJ_OK;
    char what[256];
    snprintf(what, sizeof what, "%s: %s", who, call);
    return tjj_cuda_check(r, what);
}

/* Makes the device's context current on the calling thread. */
static tj_status gpu_enter(tj_device *dev, const char *who)
{
    return cu_check(dev->cu->cuCtxSetCurrent(dev->context), who, "cuCtxSetCurrent");
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
        st = cu_check(dev->cu->cuMemcpyDtoH(&rec, v->assert_record, sizeof rec), who,
                      "cuMemcpyDtoH (assert record)");
        if (st != TJ_OK || !rec.failed)
            continue;
        st = cu_check(dev->cu->cuMemsetD8(v->assert_record, 0, sizeof rec), who,
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
static tj_status gpu_finish(tj_device *dev, const char *who)
{
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
    return check_asserts(dev, who);
}

/* --- devices --------------------------------------------------------------- */

static tj_device *new_device(tj_device_kind kind)
{
    tj_device *dev = tjs_xcalloc(1, sizeof *dev);
    dev->kind = kind;
    /* Tags start at 1 and wrap after 65535 devices; 0 is skipped so no
     * handle field is ever all zero by construction. */
    dev->tag = atomic_fetch_add(&device_counter, 1) % FIELD_MASK(TAG_BITS) + 1;
    pthread_mutex_init(&dev->buffers_lock, NULL);
    pthread_mutex_init(&dev->variants_lock, NULL);
    pthread_mutex_init(&dev->pending_lock, NULL);
    return dev;
}

static void free_device(tj_device *dev)
{
    pthread_mutex_destroy(&dev->buffers_lock);
    pthread_mutex_destroy(&dev->variants_lock);
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
    tj_status st = cu_check(cu->cuDeviceGetCount(&count), who, "cuDeviceGetCount");
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
    if ((st = cu_check(cu->cuDeviceGet(&cu_device, ordinal), who, "cuDeviceGet")) != TJ_OK ||
        (st = cu_check(cu->cuDeviceGetName(gpu_name, (int)sizeof gpu_name - 1, cu_device), who,
                       "cuDeviceGetName")) != TJ_OK ||
        (st = cu_check(cu->cuDeviceGetAttribute(&major, TJCU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                                cu_device), who, "cuDeviceGetAttribute")) != TJ_OK ||
        (st = cu_check(cu->cuDeviceGetAttribute(&minor, TJCU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                                cu_device), who, "cuDeviceGetAttribute")) != TJ_OK ||
        (st = cu_check(cu->cuDeviceGetAttribute(&sms, TJCU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                                cu_device), who, "cuDeviceGetAttribute")) != TJ_OK)
        return st;
    int sm = major * 10 + minor;
    if (sm < 80)
        return tjs_error(TJ_ERR_UNSUPPORTED, "%s: GPU %d (%s) is sm_%d; tjit needs sm_80 or newer",
                         who, ordinal, gpu_name, sm);

    tjcu_context context;
    if ((st = cu_check(cu->cuDevicePrimaryCtxRetain(&context, cu_device), who,
                       "cuDevicePrimaryCtxRetain")) != TJ_OK)
        return st;
    tjcu_deviceptr record = 0;
    if ((st = cu_check(cu->cuCtxSetCurrent(context), who, "cuCtxSetCurrent")) != TJ_OK ||
        (st = cu_check(cu->cuMemAlloc(&record, sizeof(tjj_gpu_assert)), who, "cuMemAlloc")) != TJ_OK ||
        (st = cu_check(cu->cuMemsetD8(record, 0, sizeof(tjj_gpu_assert)), who, "cuMemsetD8")) != TJ_OK) {
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

static void free_variant(tj_device *dev, variant *v)
{
    tjj_cpu_kernel_free(v->compiled);
    if (v->module)
        dev->cu->cuModuleUnload(v->module);
    if (v->assert_record && v->assert_record != dev->assert_record)
        dev->cu->cuMemFree(v->assert_record);
    for (int a = 0; a < v->nasserts; a++) {
        free(v->asserts[a].file);
        free(v->asserts[a].message);
    }
    free(v->asserts);
    tjj_bounds_sites_free(v->bounds);
    tjf_sig_free(&v->sig);
    free(v->consts);
    free(v);
}

void tj_device_close(tj_device *dev)
{
    tjs_clear_error();
    if (!dev)
        return;
    int gpu = dev->kind == TJ_DEVICE_GPU;
    /* Errors are past reporting here; on a GPU whose context has failed
     * the frees below fail too, and the context's release reclaims all. */
    if (gpu && gpu_enter(dev, "tj_device_close") == TJ_OK)
        dev->cu->cuCtxSynchronize();
    for (uint32_t i = 0; i < dev->nslots; i++) {
        if (!dev->slots[i].addr)
            continue;
        if (gpu)
            dev->cu->cuMemFree(dev->slots[i].addr);
        else
            free((void *)(uintptr_t)dev->slots[i].addr);
    }
    free(dev->slots);
    for (size_t b = 0; b < dev->nbuckets; b++) {
        for (variant *v = dev->buckets[b], *next; v; v = next) {
            next = v->next;
            free_variant(dev, v);
        }
    }
    free(dev->buckets);
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
    tj_status st = gpu_enter(dev, "tj_synchronize");
    return st == TJ_OK ? gpu_finish(dev, "tj_synchronize") : st;
}

/* --- buffers --------------------------------------------------------------- */

static uint64_t make_handle(const tj_device *dev, uint32_t index, uint32_t generation)
{
    return dev->tag << (GENERATION_BITS + SLOT_BITS) | (uint64_t)generation << SLOT_BITS |
           ((uint64_t)index + 1);
}

/* The live slot a handle names, or NULL. Call with buffers_lock held. */
static buffer_slot *find_slot(tj_device *dev, tj_buffer buf)
{
    uint64_t h = buf.handle;
    uint64_t tag = h >> (GENERATION_BITS + SLOT_BITS);
    uint32_t generation = (uint32_t)(h >> SLOT_BITS & FIELD_MASK(GENERATION_BITS));
    uint64_t index_plus_1 = h & FIELD_MASK(SLOT_BITS);
    if (tag != dev->tag || index_plus_1 == 0 || index_plus_1 > dev->nslots)
        return NULL;
    buffer_slot *s = &dev->slots[index_plus_1 - 1];
    return s->addr && s->generation == generation ? s : NULL;
}

static tj_status dead_buffer(const char *who, tj_buffer buf)
{
    if (buf.handle == 0)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: the buffer handle is 0 (no buffer)", who);
    return tjs_error(TJ_ERR_INVALID_ARG, "%s: buffer 0x%llx is not a live buffer of this device (freed?)",
                     who, (unsigned long long)buf.handle);
}

/* Copies out the address and size of a live buffer. */
static int lookup_buffer(tj_device *dev, tj_buffer buf, uint64_t *addr, size_t *size)
{
    pthread_mutex_lock(&dev->buffers_lock);
    buffer_slot *s = find_slot(dev, buf);
    if (s) {
        *addr = s->addr;
        *size = s->size;
    }
    pthread_mutex_unlock(&dev->buffers_lock);
    return s != NULL;
}

/* Memory for a buffer: host memory on the CPU, device memory on a GPU. */
static tj_status alloc_memory(tj_device *dev, size_t bytes, uint64_t *addr)
{
    static const char who[] = "tj_buffer_alloc";
    if (dev->kind != TJ_DEVICE_GPU) {
        void *ptr;
        if (posix_memalign(&ptr, ALIGNMENT, bytes) != 0)
            return tjs_error(TJ_ERR_OUT_OF_MEMORY, "%s: cannot allocate %zu bytes", who, bytes);
        *addr = (uint64_t)(uintptr_t)ptr;
        return TJ_OK;
    }
    tj_status st = gpu_enter(dev, who);
    if (st != TJ_OK)
        return st;
    tjcu_deviceptr p = 0;
    char call[64];
    snprintf(call, sizeof call, "cuMemAlloc of %zu bytes", bytes);
    if ((st = cu_check(dev->cu->cuMemAlloc(&p, bytes), who, call)) != TJ_OK)
        return st;
    *addr = p;
    return TJ_OK;
}

static void free_memory(tj_device *dev, uint64_t addr)
{
    if (dev->kind == TJ_DEVICE_GPU)
        dev->cu->cuMemFree(addr);
    else
        free((void *)(uintptr_t)addr);
}

tj_status tj_buffer_alloc(tj_device *dev, size_t bytes, tj_buffer *out)
{
    tjs_clear_error();
    if (!out)
        return tjs_error(TJ_ERR_INVALID_ARG, "tj_buffer_alloc: out is NULL");
    out->handle = 0;
    if (!dev)
        return tjs_error(TJ_ERR_INVALID_ARG, "tj_buffer_alloc: dev is NULL");
    if (bytes == 0)
        return tjs_error(TJ_ERR_INVALID_ARG, "tj_buffer_alloc: a buffer of 0 bytes");
    uint64_t addr = 0;
    tj_status st = alloc_memory(dev, bytes, &addr);
    if (st != TJ_OK)
        return st;

    pthread_mutex_lock(&dev->buffers_lock);
    uint32_t index;
    if (dev->free_head) {
        index = dev->free_head - 1;
        dev->free_head = dev->slots[index].next_free;
    } else if (dev->nslots < MAX_SLOTS) {
        if (dev->nslots == dev->slots_cap) {
            uint32_t cap = dev->slots_cap ? dev->slots_cap * 2 : 64;
            if (cap > MAX_SLOTS)
                cap = MAX_SLOTS;
            dev->slots = tjs_xrealloc(dev->slots, cap * sizeof *dev->slots);
            dev->slots_cap = cap;
        }
        index = dev->nslots++;
        dev->slots[index] = (buffer_slot){.generation = 1};
    } else {
        pthread_mutex_unlock(&dev->buffers_lock);
        free_memory(dev, addr);
        return tjs_error(TJ_ERR_OUT_OF_MEMORY, "tj_buffer_alloc: the device already holds %llu buffers",
                         (unsigned long long)MAX_SLOTS);
    }
    buffer_slot *s = &dev->slots[index];
    s->addr = addr;
    s->size = bytes;
    s->next_free = 0;
    out->handle = make_handle(dev, index, s->generation);
    pthread_mutex_unlock(&dev->buffers_lock);
    return TJ_OK;
}

tj_status tj_buffer_free(tj_device *dev, tj_buffer buf)
{
    tjs_clear_error();
    if (!dev)
        return tjs_error(TJ_ERR_INVALID_ARG, "tj_buffer_free: dev is NULL");
    if (dev->kind == TJ_DEVICE_GPU) {
        tj_status st = gpu_enter(dev, "tj_buffer_free");
        if (st != TJ_OK)
            return st;
    }
    pthread_mutex_lock(&dev->buffers_lock);
    buffer_slot *s = find_slot(dev, buf);
    if (!s) {
        pthread_mutex_unlock(&dev->buffers_lock);
        return dead_buffer("tj_buffer_free", buf);
    }
    uint64_t addr = s->addr;
    s->addr = 0;
    s->size = 0;
    s->generation = s->generation == FIELD_MASK(GENERATION_BITS) ? 1 : s->generation + 1;
    s->next_free = dev->free_head;
    dev->free_head = (uint32_t)(s - dev->slots) + 1;
    pthread_mutex_unlock(&dev->buffers_lock);
    free_memory(dev, addr);
    return TJ_OK;
}

/* The checks read and write share: a live buffer, a host pointer, and a
 * range [offset, offset + bytes) inside the buffer, whose address is *where. */
static tj_status copy_target(const char *who, tj_device *dev, tj_buffer buf, size_t offset,
                             const void *host, size_t bytes, uint64_t *where)
{
    if (!dev)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: dev is NULL", who);
    if (!host)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: the host pointer is NULL", who);
    uint64_t addr;
    size_t size;
    if (!lookup_buffer(dev, buf, &addr, &size))
        return dead_buffer(who, buf);
    size_t end;
    if (__builtin_add_overflow(offset, bytes, &end) || end > size)
        return tjs_error(TJ_ERR_INVALID_ARG,
                         "%s: %zu bytes at offset %zu do not fit in buffer 0x%llx of %zu bytes", who,
                         bytes, offset, (unsigned long long)buf.handle, size);
    *where = addr + offset;
    return TJ_OK;
}

tj_status tj_buffer_write(tj_device *dev, tj_buffer dst, size_t offset, const void *src,
                          size_t bytes)
{
    static const char who[] = "tj_buffer_write";
    tjs_clear_error();
    uint64_t where;
    tj_status st = copy_target(who, dev, dst, offset, src, bytes, &where);
    if (st != TJ_OK || bytes == 0)
        return st;
    if (dev->kind != TJ_DEVICE_GPU) {
        memcpy((void *)(uintptr_t)where, src, bytes);
        return TJ_OK;
    }
    /* A synchronous copy on the default stream: it follows every kernel
     * launched before it and is done when it returns. */
    if ((st = gpu_enter(dev, who)) != TJ_OK)
        return st;
    return cu_check(dev->cu->cuMemcpyHtoD(where, src, bytes), who, "cuMemcpyHtoD");
}

tj_status tj_buffer_read(tj_device *dev, tj_buffer src, size_t offset, void *dst, size_t bytes)
{
    static const char who[] = "tj_buffer_read";
    tjs_clear_error();
    uint64_t where;
    tj_status st = copy_target(who, dev, src, offset, dst, bytes, &where);
    if (st != TJ_OK)
        return st;
    if (dev->kind != TJ_DEVICE_GPU) {
        if (bytes)
            memcpy(dst, (const void *)(uintptr_t)where, bytes);
        return TJ_OK;
    }
    /* The kernels that wrote the buffer must have finished without a fault
     * or a failed assert before their results are worth reading. */
    if ((st = gpu_enter(dev, who)) != TJ_OK || (st = gpu_finish(dev, who)) != TJ_OK || bytes == 0)
        return st;
    return cu_check(dev->cu->cuMemcpyDtoH(dst, where, bytes), who, "cuMemcpyDtoH");
}

size_t tj_buffer_size(tj_device *dev, tj_buffer buf)
{
    tjs_clear_error();
    if (!dev) {
        tjs_error(TJ_ERR_INVALID_ARG, "tj_buffer_size: dev is NULL");
        return 0;
    }
    uint64_t addr;
    size_t size;
    if (!lookup_buffer(dev, buf, &addr, &size)) {
        dead_buffer("tj_buffer_size", buf);
        return 0;
    }
    return size;
}

uint64_t tjj_buffer_address(tj_device *dev, tj_buffer buf)
{
    uint64_t addr = 0;
    size_t size;
    return dev && lookup_buffer(dev, buf, &addr, &size) ? addr : 0;
}

/* --- compiling for a GPU --------------------------------------------------- */

/* What the parameters of fn are known to be, from a tjf_spec_key; out has
 * one entry per parameter. */
static void spec_of_key(const tji_func *fn, uint64_t key, tjp_param_spec *out)
{
    for (int i = 0; i < fn->nparams; i++) {
        unsigned bits = i < TJF_SPEC_PARAMS ? (unsigned)(key >> (TJF_SPEC_BITS * i)) : 0;
        out[i] = (tjp_param_spec){.ptr_align16 = !!(bits & TJF_SPEC_ALIGN16),
                                  .int_div16 = !!(bits & TJF_SPEC_DIV16),
                                  .is_one = !!(bits & TJF_SPEC_ONE)};
    }
}

/* The key of a compile without a launch: every pointer is a tjit buffer,
 * so 16-byte aligned; nothing is known of scalars. */
static uint64_t spec_without_args(const tj_kernel *kernel)
{
    uint64_t key = 0;
    for (int i = 0; i < kernel->nparams && i < TJF_SPEC_PARAMS; i++)
        if (kernel->params[i].is_ptr && !kernel->params[i].no_specialize)
            key |= (uint64_t)TJF_SPEC_ALIGN16 << (TJF_SPEC_BITS * i);
    return key;
}

/* The GPU passes up to the layouts: axis info for the arguments spec
 * describes, coalescing, layouts, and the checks of both. fn gains the
 * layout pass's conversions. */
static tj_status gpu_layouts(tji_func *fn, const tjp_param_spec *spec, int num_warps,
                             tjp_layout_plan *plan)
{
    tjp_axis_info_result axis = {0};
    tjp_coalesce_result coalesced = {0};
    tj_status st = tjp_axis_info(fn, spec, &axis);
    if (st == TJ_OK)
        st = tjp_coalesce(fn, &axis, num_warps, &coalesced);
    if (st == TJ_OK)
        st = tjp_assign_layouts(fn, num_warps, &coalesced, plan);
    if (st == TJ_OK)
        st = tji_verify(fn);
    if (st == TJ_OK)
        st = tjp_check_layouts(fn, plan);
    tjp_coalesce_free(&coalesced);
    tjp_axis_info_free(&axis);
    return st;
}

/* The explainer's text for fn after gpu_layouts (axis info again, of the
 * values the layout pass added), malloc'ed into *text. */
static tj_status explain_layouts(const tji_func *fn, const tjp_param_spec *spec,
                                 const tjp_layout_plan *plan, char **text)
{
    tjp_axis_info_result axis = {0};
    tj_status st = tjp_axis_info(fn, spec, &axis);
    if (st == TJ_OK)
        *text = tjp_explain(fn, plan, &axis);
    tjp_axis_info_free(&axis);
    return st;
}

/* Layouts, verification and PTX for sm_<sm>: the GPU half of the pipeline
 * after tji_build, for the arguments spec_key describes (tjf_spec_key).
 * TJIT_DUMP=layouts prints the explainer's text on the way. */
static tj_status gpu_code(tji_func *fn, uint64_t spec_key, int num_warps, int sm,
                          tjp_layout_plan *plan, tjj_gpu_code *code)
{
    tjp_param_spec *spec = tjs_xcalloc((size_t)fn->nparams + 1, sizeof *spec);
    spec_of_key(fn, spec_key, spec);
    tj_status st = gpu_layouts(fn, spec, num_warps, plan);
    if (st == TJ_OK && tjs_dump_enabled("layouts")) {
        char *text = NULL;
        st = explain_layouts(fn, spec, plan, &text);
        if (text)
            fprintf(stderr, "%s", text);
        free(text);
    }
    if (st == TJ_OK)
        st = tjj_gpu_compile(fn, plan, sm, code);
    free(spec);
    return st;
}

/* The ptxas that checks every PTX compiled (TJIT_PTXAS), or NULL. */
static const char *ptxas_path(void)
{
    const char *ptxas = getenv("TJIT_PTXAS");
    return ptxas && *ptxas ? ptxas : NULL;
}

/* TJIT_PTXAS: assembles a variant's PTX for TJIT_PTX_TARGET with ptxas.
 * code (for sm_<code_sm>) is reused when it is for that target; otherwise
 * the PTX is compiled here, from plan or (NULL) new layouts of fn for the
 * arguments spec_key describes. */
static tj_status check_with_ptxas(tji_func *fn, uint64_t spec_key, int num_warps,
                                  const tjp_layout_plan *plan,
                                  const tjj_gpu_code *code, int code_sm)
{
    const char *ptxas = ptxas_path();
    if (!ptxas)
        return TJ_OK;
    int sm;
    tj_status st = tjj_ptx_target("TJIT_PTXAS", NULL, &sm);
    if (st != TJ_OK)
        return st;
    if (code && code_sm == sm)
        return tjj_ptxas_check(ptxas, code->ptx, sm, fn->name);
    tjp_layout_plan own_plan = {0};
    tjj_gpu_code own_code = {0};
    if (plan)
        st = tjj_gpu_compile(fn, plan, sm, &own_code);
    else
        st = gpu_code(fn, spec_key, num_warps, sm, &own_plan, &own_code);
    if (st == TJ_OK)
        st = tjj_ptxas_check(ptxas, own_code.ptx, sm, fn->name);
    tjj_gpu_code_free(&own_code);
    tjp_layout_plan_free(&own_plan);
    return st;
}

/* The asserts of fn, so that a failure can be told by op index. */
static void collect_asserts(const tji_func *fn, variant *v)
{
    for (int32_t i = 0; i < fn->nops; i++)
        if (fn->ops[i].code == TJI_ASSERT)
            v->nasserts++;
    if (!v->nasserts)
        return;
    v->asserts = tjs_xcalloc((size_t)v->nasserts, sizeof *v->asserts);
    int a = 0;
    for (int32_t i = 0; i < fn->nops; i++) {
        const tji_op *op = &fn->ops[i];
        if (op->code != TJI_ASSERT)
            continue;
        v->asserts[a++] = (assert_site){(uint32_t)i, tjs_xstrdup(op->loc.file ? op->loc.file : "?"),
                                        op->loc.line, tjs_xstrdup(op->str ? op->str : "")};
    }
}

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
    return cu_check(dev->cu->cuModuleGetFunction(&v->function, v->module, code->entry),
                    kernel_name, call);
}

static tj_status compile_gpu(tj_device *dev, tji_func *fn, variant *v)
{
    tjp_layout_plan plan = {0};
    tjj_gpu_code code = {0};
    tj_status st = gpu_code(fn, v->spec, v->num_warps, dev->sm, &plan, &code);
    if (st == TJ_OK)
        st = check_with_ptxas(fn, v->spec, v->num_warps, &plan, &code, dev->sm);
    if (st == TJ_OK)
        st = load_module(dev, fn->name, &code, v);
    if (st == TJ_OK) {
        collect_asserts(fn, v);
        v->assert_record = dev->assert_record;
    }
    if (st == TJ_OK && (v->nasserts || v->check_bounds)) {
        tjcu_deviceptr record = 0;
        st = cu_check(dev->cu->cuMemAlloc(&record, sizeof(tjj_gpu_assert)), fn->name,
                      "cuMemAlloc (assert record)");
        if (st == TJ_OK) {
            v->assert_record = record;
            st = cu_check(dev->cu->cuMemsetD8(record, 0, sizeof(tjj_gpu_assert)), fn->name,
                          "cuMemsetD8 (assert record)");
        }
    }
    tjj_gpu_code_free(&code);
    tjp_layout_plan_free(&plan);
    return st;
}

/* --- the variant cache ----------------------------------------------------- */

static uint64_t variant_hash(const tj_kernel *kernel, const int64_t *consts, int nconsts,
                             int num_warps, uint64_t spec, int check_bounds)
{
    uint64_t h = (0xcbf29ce484222325u ^ (uint64_t)(uintptr_t)kernel) + (uint64_t)check_bounds;
    h = (h ^ (uint64_t)num_warps) * 0x100000001b3u;
    h = (h ^ spec) * 0x100000001b3u;
    for (int i = 0; i < nconsts; i++) {
        h = (h ^ (uint64_t)consts[i]) * 0x100000001b3u;
        h ^= h >> 29;
    }
    return h * 0x9e3779b97f4a7c15u;
}

static void insert_variant(tj_device *dev, variant *v)
{
    if (dev->nvariants >= dev->nbuckets) {
        size_t nb = dev->nbuckets ? dev->nbuckets * 2 : 16;
        variant **buckets = tjs_xcalloc(nb, sizeof *buckets);
        for (size_t b = 0; b < dev->nbuckets; b++) {
            for (variant *u = dev->buckets[b], *next; u; u = next) {
                next = u->next;
                u->next = buckets[u->hash % nb];
                buckets[u->hash % nb] = u;
            }
        }
        free(dev->buckets);
        dev->buckets = buckets;
        dev->nbuckets = nb;
    }
    v->next = dev->buckets[v->hash % dev->nbuckets];
    dev->buckets[v->hash % dev->nbuckets] = v;
    dev->nvariants++;
}

/* Binds, builds and compiles a variant. Call with variants_lock held.
 * num_warps and spec are the variant's on a GPU; on the CPU only
 * TJIT_PTXAS uses them. */
static tj_status compile_variant(tj_device *dev, const tj_kernel *kernel, const int64_t *consts,
                                 int nconsts, int num_warps, uint64_t spec, int check_bounds,
                                 uint64_t hash, variant **out)
{
    variant *v = tjs_xcalloc(1, sizeof *v);
    v->kernel = kernel;
    v->check_bounds = check_bounds;
    v->num_warps = dev->kind == TJ_DEVICE_GPU ? num_warps : 0;
    v->spec = dev->kind == TJ_DEVICE_GPU ? spec : 0;
    tji_func *fn = NULL;
    tj_status st = tjf_sig_init(&v->sig, kernel);
    if (st == TJ_OK)
        st = tji_build(kernel, consts, nconsts, &fn);
    if (st == TJ_OK && check_bounds) {
        fn->check_bounds = 1;
        v->bounds = tjj_bounds_sites_new(fn);
    }
    if (st == TJ_OK && dev->kind == TJ_DEVICE_GPU) {
        st = compile_gpu(dev, fn, v);
    } else if (st == TJ_OK) {
        st = tjj_cpu_compile(fn, &v->compiled);
        if (st == TJ_OK)
            st = check_with_ptxas(fn, spec, num_warps, NULL, NULL, 0);
    }
    tji_func_free(fn);
    if (st != TJ_OK) {
        free_variant(dev, v);
        return st;
    }
    v->hash = hash;
    v->nconsts = nconsts;
    v->consts = tjs_xmalloc((size_t)nconsts * sizeof *consts);
    if (nconsts)
        memcpy(v->consts, consts, (size_t)nconsts * sizeof *consts);
    *out = v;
    return TJ_OK;
}

/* The variant for kernel, consts and (on a GPU) num_warps and the
 * arguments' specialization key spec, from the cache or compiled now. */
static tj_status get_variant(tj_device *dev, const tj_kernel *kernel, const int64_t *consts,
                             int nconsts, int num_warps, uint64_t spec, int check_bounds, variant **out)
{
    int gpu = dev->kind == TJ_DEVICE_GPU;
    int key_warps = gpu ? num_warps : 0;
    uint64_t key_spec = gpu ? spec : 0;
    uint64_t hash = variant_hash(kernel, consts, nconsts, key_warps, key_spec, check_bounds);
    pthread_mutex_lock(&dev->variants_lock);
    if (dev->nbuckets) {
        for (variant *v = dev->buckets[hash % dev->nbuckets]; v; v = v->next) {
            if (v->hash == hash && v->kernel == kernel && v->nconsts == nconsts &&
                v->num_warps == key_warps && v->spec == key_spec && v->check_bounds == check_bounds &&
                (nconsts == 0 || memcmp(v->consts, consts, (size_t)nconsts * sizeof *consts) == 0)) {
                pthread_mutex_unlock(&dev->variants_lock);
                *out = v;
                return TJ_OK;
            }
        }
    }
    variant *v;
    tj_status st = compile_variant(dev, kernel, consts, nconsts, num_warps, spec, check_bounds, hash, &v);
    if (st == TJ_OK) {
        insert_variant(dev, v);
        *out = v;
    }
    pthread_mutex_unlock(&dev->variants_lock);
    return st;
}

/* --- PTX without a GPU ----------------------------------------------------- */

static int valid_num_warps(int n)
{
    return n >= 1 && n <= MAX_NUM_WARPS && (n & (n - 1)) == 0;
}

/* The specialization key of a compile for args without a launch (NULL:
 * none given): as a launch would see them, every buffer being 16-byte
 * aligned. */
static tj_status spec_of_args(const char *who, const tj_kernel *kernel, const tj_arg *args,
                              int nargs, uint64_t *key)
{
    if (!kernel)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: kernel is NULL", who);
    if (!args && nargs == 0) {
        *key = spec_without_args(kernel);
        return TJ_OK;
    }
    tjf_value *values = tjs_xcalloc(kernel->nparams ? (size_t)kernel->nparams : 1, sizeof *values);
    tj_status st = tjf_check_args(kernel, args, nargs, values);
    if (st == TJ_OK)
        *key = tjf_spec_key(kernel, values); /* buffer slots hold address 0: aligned */
    free(values);
    return st;
}

/* What compiling without a launch (tj_kernel_ptx*, tj_kernel_explain)
 * starts with: num_warps checked (0: the default), the specialization key
 * of args, and the tile program, built. */
static tj_status build_offline(const char *who, const tj_kernel *kernel, const tj_arg *args,
                               int nargs, const int64_t *consts, int nconsts, int *num_warps,
                               uint64_t *spec, tji_func **fn)
{
    if (*num_warps == 0)
        *num_warps = DEFAULT_NUM_WARPS;
    if (!valid_num_warps(*num_warps))
        return tjs_error(TJ_ERR_INVALID_ARG,
                         "%s: num_warps = %d (a power of two from 1 to %d, or 0 for %d)",
                         who, *num_warps, MAX_NUM_WARPS, DEFAULT_NUM_WARPS);
    tj_status st = spec_of_args(who, kernel, args, nargs, spec);
    if (st == TJ_OK)
        st = tji_build(kernel, consts, nconsts, fn);
    if (st == TJ_OK) /* the code a launch would run: checked as TJIT_CHECK_BOUNDS says */
        (*fn)->check_bounds = tjj_bounds_wanted(TJ_CHECK_BOUNDS_DEFAULT);
    return st;
}

/* tj_kernel_ptx and tj_kernel_ptx_args. */
static tj_status kernel_ptx(const char *who, const tj_kernel *kernel, const tj_arg *args, int nargs,
                            const int64_t *consts, int nconsts, const char *target, int num_warps,
                            char **out_ptx)
{
    tjs_clear_error();
    if (!out_ptx)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: out_ptx is NULL", who);
    *out_ptx = NULL;
    int sm;
    uint64_t spec = 0;
    tji_func *fn = NULL;
    tj_status st = tjj_ptx_target(who, target, &sm);
    if (st == TJ_OK)
        st = build_offline(who, kernel, args, nargs, consts, nconsts, &num_warps, &spec, &fn);
    if (st != TJ_OK)
        return st;
    tjp_layout_plan plan = {0};
    tjj_gpu_code code = {0};
    st = gpu_code(fn, spec, num_warps, sm, &plan, &code);
    if (st == TJ_OK && ptxas_path())
        st = tjj_ptxas_check(ptxas_path(), code.ptx, sm, fn->name);
    if (st == TJ_OK) {
        *out_ptx = code.ptx;
        code.ptx = NULL;
    }
    tjj_gpu_code_free(&code);
    tjp_layout_plan_free(&plan);
    tji_func_free(fn);
    return st;
}

tj_status tj_kernel_ptx(const tj_kernel *kernel, const int64_t *consts, int nconsts,
                        const char *target, int num_warps, char **out_ptx)
{
    return kernel_ptx("tj_kernel_ptx", kernel, NULL, 0, consts, nconsts, target, num_warps, out_ptx);
}

tj_status tj_kernel_ptx_args(const tj_kernel *kernel, const tj_arg *args, int nargs,
                             const int64_t *consts, int nconsts, const char *target, int num_warps,
                             char **out_ptx)
{
    return kernel_ptx("tj_kernel_ptx_args", kernel, args, nargs, consts, nconsts, target, num_warps,
                      out_ptx);
}

tj_status tj_kernel_explain(const tj_kernel *kernel, const tj_arg *args, int nargs,
                            const int64_t *consts, int nconsts, int num_warps, char **out_text)
{
    static const char who[] = "tj_kernel_explain";
    tjs_clear_error();
    if (!out_text)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: out_text is NULL", who);
    *out_text = NULL;
    uint64_t key = 0;
    tji_func *fn = NULL;
    tj_status st = build_offline(who, kernel, args, nargs, consts, nconsts, &num_warps, &key, &fn);
    if (st != TJ_OK)
        return st;
    tjp_param_spec *spec = tjs_xcalloc((size_t)fn->nparams + 1, sizeof *spec);
    spec_of_key(fn, key, spec);
    tjp_layout_plan plan = {0};
    st = gpu_layouts(fn, spec, num_warps, &plan);
    if (st == TJ_OK)
        st = explain_layouts(fn, spec, &plan, out_text);
    tjp_layout_plan_free(&plan);
    free(spec);
    tji_func_free(fn);
    return st;
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
        tj_status st = tjs_error(TJ_ERR_BOUNDS, "%s", why ? why : "an out-of-bounds access");
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
    tj_status st = cu_check(r, who, "cuLaunchKernel");
    if (st == TJ_OK && dev->blocking)
        st = gpu_finish(dev, who);
    return st;
}

tj_status tj_launch(tj_device *dev, const tj_kernel *kernel, const tj_launch_cfg *cfg,
                    const tj_arg *args, int nargs, const int64_t *consts, int nconsts)
{
    tjs_clear_error();
    if (!dev)
        return tjs_error(TJ_ERR_INVALID_ARG, "tj_launch: dev is NULL");
    tj_status st = check_kernel(kernel);
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
    if (!valid_num_warps(num_warps)) {
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
    st = tjf_check_args(kernel, args, nargs, values);
    for (int i = 0; st == TJ_OK && i < nargs; i++) {
        if (!kernel->params[i].is_ptr)
            continue;
        uint64_t addr = 0;
        size_t size = 0;
        if (!lookup_buffer(dev, args[i].v.buf, &addr, &size))
            st = tjs_error(TJ_ERR_LAUNCH,
                           "kernel '%s': argument %d '%s': buffer 0x%llx is not a live buffer of this device (freed?)",
                           kernel->name, i + 1, kernel->params[i].name,
                           (unsigned long long)args[i].v.buf.handle);
        else if (gpu)
            values[i].u64 = addr;
        else
            values[i].ptr = (void *)(uintptr_t)addr;
        sizes[i] = size;
    }
    if (st == TJ_OK && gpu)
        st = gpu_enter(dev, "tj_launch");
    variant *var = NULL;
    if (st == TJ_OK)
        st = get_variant(dev, kernel, consts, nconsts, num_warps, tjf_spec_key(kernel, values),
                         check_bounds, &var);
    if (st == TJ_OK)
        st = gpu ? launch_gpu(dev, kernel, var, values, sizes, nprog)
                 : launch_cpu(dev, kernel, var, values, sizes, nprog, total);
    free(values);
    free(sizes);
    return st;
}
