/*
 * device.c — the host API: devices, buffers and launches.
 *
 * A device owns three things: a table of buffers, a cache of compiled kernel
 * variants and per-worker scratch memory for CPU launches.
 *
 * Buffers are handles, not pointers, so that a freed, foreign or invented
 * handle is reported instead of being undefined behavior. A handle packs
 * three fields: the device's tag (16 bits, distinct for each device opened),
 * the generation of its slot (24 bits, bumped when the slot's buffer is
 * freed) and the slot index plus one (24 bits), so 0 is never a handle.
 * A lookup checks all three under the table's mutex.
 *
 * A launch checks everything the caller gave (device, kernel, grid, constants,
 * arguments, buffers) before any work, then finds the compiled variant for
 * the kernel and its constants in the device's cache, building and compiling
 * it on a miss. The cache is keyed by the kernel's address and the constant
 * values; its mutex is held while a variant is built, which serializes
 * kernel building per device as tjit.h promises. Variants live until the
 * device closes, so a launch keeps using its variant without the lock.
 *
 * On the CPU the grid is a range of program instances run by the thread pool
 * (threadpool.c); each call of the compiled function computes one program.
 * The pool runs one launch at a time and a worker index is exclusive while a
 * task runs, so each worker owns its scratch slot here and grows it itself.
 *
 * The GPU back end is a later piece of work: asking for a GPU loads the
 * driver (so a missing driver is reported as such) and then reports that the
 * back end is not built yet.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "../ffi_bind/ffi_bind.h"
#include "cuda_api.h"
#include "jit.h"

enum { SLOT_BITS = 24, GENERATION_BITS = 24, TAG_BITS = 16 };
#define FIELD_MASK(bits) ((UINT64_C(1) << (bits)) - 1)
#define MAX_SLOTS FIELD_MASK(SLOT_BITS)
#define ALIGNMENT 64 /* buffers and scratch: a cache line, the widest vector */

typedef struct buffer_slot {
    void *ptr;            /* NULL: the slot is free */
    size_t size;
    uint32_t generation;  /* never 0 */
    uint32_t next_free;   /* free list: index + 1 of the next free slot, 0 = end */
} buffer_slot;

typedef struct variant {
    struct variant *next; /* hash chain */
    uint64_t hash;
    const tj_kernel *kernel;
    int nconsts;
    int64_t *consts;
    tjj_cpu_kernel *compiled;
    tjf_sig sig;
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

    int nworkers;
    scratch_slot *scratch; /* one per pool worker */
};

static atomic_uint_fast64_t device_counter;

/* --- devices --------------------------------------------------------------- */

static tj_status open_cpu(tj_device **out)
{
    tj_device *dev = tjs_xcalloc(1, sizeof *dev);
    dev->kind = TJ_DEVICE_CPU;
    /* Tags start at 1 and wrap after 65535 devices; 0 is skipped so no
     * handle field is ever all zero by construction. */
    dev->tag = atomic_fetch_add(&device_counter, 1) % FIELD_MASK(TAG_BITS) + 1;
    pthread_mutex_init(&dev->buffers_lock, NULL);
    pthread_mutex_init(&dev->variants_lock, NULL);
    dev->nworkers = tjj_pool_workers();
    dev->scratch = tjs_xcalloc((size_t)dev->nworkers, sizeof *dev->scratch);
    struct utsname u;
    const char *arch = uname(&u) == 0 ? u.machine : "unknown";
    snprintf(dev->name, sizeof dev->name, "cpu (%s, %d thread%s)", arch, dev->nworkers,
             dev->nworkers == 1 ? "" : "s");
    *out = dev;
    return TJ_OK;
}

static tj_status open_gpu(int ordinal)
{
    const tjcu_driver *drv;
    if (tjj_cuda_load(&drv) != TJ_OK)
        return tjs_error(TJ_ERR_DEVICE, "tj_device_open: no GPU: %s", tjj_cuda_load_error());
    return tjs_error(TJ_ERR_UNSUPPORTED,
                     "tj_device_open: GPU %d: the GPU back end is not built yet (issue 3); "
                     "use TJ_DEVICE_CPU", ordinal);
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
        if (!env || !*env || strcmp(env, "cpu") == 0)
            kind = TJ_DEVICE_CPU;
        else if (strcmp(env, "gpu") == 0)
            kind = TJ_DEVICE_GPU;
        else
            return tjs_error(TJ_ERR_INVALID_ARG, "tj_device_open: TJIT_DEVICE=%s (expected cpu or gpu)",
                             env);
    }
    switch (kind) {
    case TJ_DEVICE_CPU:
        if (ordinal != 0)
            return tjs_error(TJ_ERR_INVALID_ARG,
                             "tj_device_open: ordinal %d: there is one CPU device, ordinal 0", ordinal);
        return open_cpu(out);
    case TJ_DEVICE_GPU:
        return open_gpu(ordinal);
    default:
        return tjs_error(TJ_ERR_INVALID_ARG, "tj_device_open: unknown device kind %d", (int)kind);
    }
}

void tj_device_close(tj_device *dev)
{
    tjs_clear_error();
    if (!dev)
        return;
    for (uint32_t i = 0; i < dev->nslots; i++)
        free(dev->slots[i].ptr);
    free(dev->slots);
    for (size_t b = 0; b < dev->nbuckets; b++) {
        for (variant *v = dev->buckets[b], *next; v; v = next) {
            next = v->next;
            tjj_cpu_kernel_free(v->compiled);
            tjf_sig_free(&v->sig);
            free(v->consts);
            free(v);
        }
    }
    free(dev->buckets);
    for (int w = 0; w < dev->nworkers; w++)
        free(dev->scratch[w].ptr);
    free(dev->scratch);
    pthread_mutex_destroy(&dev->buffers_lock);
    pthread_mutex_destroy(&dev->variants_lock);
    free(dev);
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
    return TJ_OK; /* CPU launches are finished when tj_launch returns */
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
    return s->ptr && s->generation == generation ? s : NULL;
}

static tj_status dead_buffer(const char *who, tj_buffer buf)
{
    if (buf.handle == 0)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: the buffer handle is 0 (no buffer)", who);
    return tjs_error(TJ_ERR_INVALID_ARG, "%s: buffer 0x%llx is not a live buffer of this device (freed?)",
                     who, (unsigned long long)buf.handle);
}

/* Copies out the pointer and size of a live buffer. */
static int lookup_buffer(tj_device *dev, tj_buffer buf, void **ptr, size_t *size)
{
    pthread_mutex_lock(&dev->buffers_lock);
    buffer_slot *s = find_slot(dev, buf);
    if (s) {
        *ptr = s->ptr;
        *size = s->size;
    }
    pthread_mutex_unlock(&dev->buffers_lock);
    return s != NULL;
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
    void *ptr;
    if (posix_memalign(&ptr, ALIGNMENT, bytes) != 0)
        return tjs_error(TJ_ERR_OUT_OF_MEMORY, "tj_buffer_alloc: cannot allocate %zu bytes", bytes);

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
        free(ptr);
        return tjs_error(TJ_ERR_OUT_OF_MEMORY, "tj_buffer_alloc: the device already holds %llu buffers",
                         (unsigned long long)MAX_SLOTS);
    }
    buffer_slot *s = &dev->slots[index];
    s->ptr = ptr;
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
    pthread_mutex_lock(&dev->buffers_lock);
    buffer_slot *s = find_slot(dev, buf);
    if (!s) {
        pthread_mutex_unlock(&dev->buffers_lock);
        return dead_buffer("tj_buffer_free", buf);
    }
    free(s->ptr);
    s->ptr = NULL;
    s->size = 0;
    s->generation = s->generation == FIELD_MASK(GENERATION_BITS) ? 1 : s->generation + 1;
    s->next_free = dev->free_head;
    dev->free_head = (uint32_t)(s - dev->slots) + 1;
    pthread_mutex_unlock(&dev->buffers_lock);
    return TJ_OK;
}

/* The checks read and write share: a live buffer, a host pointer, and a
 * range [offset, offset + bytes) inside the buffer. */
static tj_status copy_target(const char *who, tj_device *dev, tj_buffer buf, size_t offset,
                             const void *host, size_t bytes, char **where)
{
    if (!dev)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: dev is NULL", who);
    if (!host)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: the host pointer is NULL", who);
    void *ptr;
    size_t size;
    if (!lookup_buffer(dev, buf, &ptr, &size))
        return dead_buffer(who, buf);
    size_t end;
    if (__builtin_add_overflow(offset, bytes, &end) || end > size)
        return tjs_error(TJ_ERR_INVALID_ARG,
                         "%s: %zu bytes at offset %zu do not fit in buffer 0x%llx of %zu bytes", who,
                         bytes, offset, (unsigned long long)buf.handle, size);
    *where = (char *)ptr + offset;
    return TJ_OK;
}

tj_status tj_buffer_write(tj_device *dev, tj_buffer dst, size_t offset, const void *src,
                          size_t bytes)
{
    tjs_clear_error();
    char *where;
    tj_status st = copy_target("tj_buffer_write", dev, dst, offset, src, bytes, &where);
    if (st == TJ_OK && bytes)
        memcpy(where, src, bytes);
    return st;
}

tj_status tj_buffer_read(tj_device *dev, tj_buffer src, size_t offset, void *dst, size_t bytes)
{
    tjs_clear_error();
    char *where;
    tj_status st = copy_target("tj_buffer_read", dev, src, offset, dst, bytes, &where);
    if (st == TJ_OK && bytes)
        memcpy(dst, where, bytes);
    return st;
}

size_t tj_buffer_size(tj_device *dev, tj_buffer buf)
{
    tjs_clear_error();
    if (!dev) {
        tjs_error(TJ_ERR_INVALID_ARG, "tj_buffer_size: dev is NULL");
        return 0;
    }
    void *ptr;
    size_t size;
    if (!lookup_buffer(dev, buf, &ptr, &size)) {
        dead_buffer("tj_buffer_size", buf);
        return 0;
    }
    return size;
}

/* --- the variant cache ----------------------------------------------------- */

static uint64_t variant_hash(const tj_kernel *kernel, const int64_t *consts, int nconsts)
{
    uint64_t h = 0xcbf29ce484222325u ^ (uint64_t)(uintptr_t)kernel;
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

/* Binds, builds and compiles a variant. Call with variants_lock held. */
static tj_status compile_variant(const tj_kernel *kernel, const int64_t *consts, int nconsts,
                                 uint64_t hash, variant **out)
{
    variant *v = tjs_xcalloc(1, sizeof *v);
    tji_func *fn = NULL;
    tj_status st = tjf_sig_init(&v->sig, kernel);
    if (st == TJ_OK)
        st = tji_build(kernel, consts, nconsts, &fn);
    if (st == TJ_OK) {
        st = tjj_cpu_compile(fn, &v->compiled);
        tji_func_free(fn);
    }
    if (st != TJ_OK) {
        tjf_sig_free(&v->sig);
        free(v);
        return st;
    }
    v->hash = hash;
    v->kernel = kernel;
    v->nconsts = nconsts;
    v->consts = tjs_xmalloc((size_t)nconsts * sizeof *consts);
    if (nconsts)
        memcpy(v->consts, consts, (size_t)nconsts * sizeof *consts);
    *out = v;
    return TJ_OK;
}

static tj_status get_variant(tj_device *dev, const tj_kernel *kernel, const int64_t *consts,
                             int nconsts, variant **out)
{
    uint64_t hash = variant_hash(kernel, consts, nconsts);
    pthread_mutex_lock(&dev->variants_lock);
    if (dev->nbuckets) {
        for (variant *v = dev->buckets[hash % dev->nbuckets]; v; v = v->next) {
            if (v->hash == hash && v->kernel == kernel && v->nconsts == nconsts &&
                (nconsts == 0 || memcmp(v->consts, consts, (size_t)nconsts * sizeof *consts) == 0)) {
                pthread_mutex_unlock(&dev->variants_lock);
                *out = v;
                return TJ_OK;
            }
        }
    }
    variant *v;
    tj_status st = compile_variant(kernel, consts, nconsts, hash, &v);
    if (st == TJ_OK) {
        insert_variant(dev, v);
        *out = v;
    }
    pthread_mutex_unlock(&dev->variants_lock);
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
static tj_status check_grid(const tj_kernel *kernel, const tj_launch_cfg *cfg, int32_t nprog[3],
                            int64_t *total)
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
    const int32_t *nprog = L->nprog;
    int64_t plane = (int64_t)nprog[0] * nprog[1];
    int32_t pid[3] = {(int32_t)(first % nprog[0]), (int32_t)(first / nprog[0] % nprog[1]),
                      (int32_t)(first / plane)};
    /* After a failed device assert the launch is over, as on a GPU: later
     * chunks are skipped. (The runtime sets the flag under the lock.) */
    pthread_mutex_lock(&L->rt->lock);
    int failed = L->rt->assert_failed;
    pthread_mutex_unlock(&L->rt->lock);
    if (failed)
        return;
    for (int64_t i = 0; i < count; i++) {
        tjf_call_cpu(&L->var->sig, L->entry, L->values, pid, nprog, scratch, L->rt);
        if (++pid[0] == nprog[0]) {
            pid[0] = 0;
            if (++pid[1] == nprog[1]) {
                pid[1] = 0;
                pid[2]++;
            }
        }
    }
}

static tj_status launch_cpu(tj_device *dev, const tj_kernel *kernel, const variant *var,
                            const tjf_value *values, const int32_t nprog[3], int64_t total)
{
    tjj_cpu_rt rt = {.kernel_name = kernel->name};
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
    return TJ_OK;
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
    if (cfg->stream)
        return tjs_error(TJ_ERR_INVALID_ARG, "kernel '%s': the CPU device has no streams (cfg->stream must be NULL)",
                         kernel->name);
    if (cfg->num_warps < 0)
        return tjs_error(TJ_ERR_LAUNCH, "kernel '%s': num_warps = %d is negative", kernel->name,
                         cfg->num_warps);
    int32_t nprog[3];
    int64_t total = 0;
    if ((st = check_grid(kernel, cfg, nprog, &total)) != TJ_OK)
        return st;
    if (nconsts != kernel->nconsts)
        return tjs_error(TJ_ERR_LAUNCH, "kernel '%s': expects %d constant%s, got %d", kernel->name,
                         kernel->nconsts, kernel->nconsts == 1 ? "" : "s", nconsts);
    if (nconsts > 0 && !consts)
        return tjs_error(TJ_ERR_INVALID_ARG, "kernel '%s': consts is NULL but %d constants are expected",
                         kernel->name, nconsts);

    tjf_value *values = tjs_xcalloc(kernel->nparams ? (size_t)kernel->nparams : 1, sizeof *values);
    st = tjf_check_args(kernel, args, nargs, values);
    for (int i = 0; st == TJ_OK && i < nargs; i++) {
        if (!kernel->params[i].is_ptr)
            continue;
        size_t size;
        if (!lookup_buffer(dev, args[i].v.buf, &values[i].ptr, &size))
            st = tjs_error(TJ_ERR_LAUNCH,
                           "kernel '%s': argument %d '%s': buffer 0x%llx is not a live buffer of this device (freed?)",
                           kernel->name, i + 1, kernel->params[i].name,
                           (unsigned long long)args[i].v.buf.handle);
    }
    variant *var = NULL;
    if (st == TJ_OK)
        st = get_variant(dev, kernel, consts, nconsts, &var);
    if (st == TJ_OK)
        st = launch_cpu(dev, kernel, var, values, nprog, total);
    free(values);
    return st;
}
