/* SPDX-License-Identifier: MIT */
/*
 * variants.c — the device's cache of compiled kernel variants.
 *
 * A variant is a kernel compiled for one set of constants and, on a GPU,
 * one num_warps and one specialization key of its arguments (tjf_spec_key),
 * with or without TMA copies (no_tma: the variant a launch falls back to
 * where its tensor maps cannot be encoded, device_gpu.c).
 * Launches look it up in the device's hash table; on a miss the launching
 * thread builds and compiles it. Compiles are slow (milliseconds to
 * seconds) and launches of cached variants must not wait for them, so the
 * table's mutex is never held while compiling: the first thread to miss
 * inserts an in-flight entry (VARIANT_COMPILING) and compiles without the
 * lock; a thread that finds an in-flight entry waits on the device's
 * condition variable until it is READY or FAILED. So a variant asked for by
 * several threads at once is compiled once, and launches of other variants
 * (cached or not) go on meanwhile. A failed compile is reported to every
 * thread that waited for it — the same status and message — and is then
 * dropped from the table, so that a later launch tries again, as a launch
 * after a failure always has. The last waiter frees a failed entry.
 *
 * Kernel bodies still run one at a time per device (build_lock, held for
 * tji_build only), as tjit.h has always promised: a body is user code, and
 * may keep state in globals. What follows the build — passes, LLVM, the
 * driver — runs concurrently for different variants: the CPU back end
 * locks the one shared JIT where it must (cpu_orc.c), and the GPU back end
 * uses a context and target machine per compile. Variants live until the
 * device closes, so a launch keeps using its variant without the lock.
 *
 * The compile itself is the device kind's (tjj_backend.compile): it runs
 * the kind's pipeline (../pipeline.c), which returns an artifact, and takes
 * the code it runs — on a GPU it loads the PTX, with an assert record of the
 * variant's own where it has device asserts or is bounds-checked
 * (TJIT_CHECK_BOUNDS, bounds.h: a variant of its own in the cache). The
 * variant keeps the artifact's stable key and bounds sites.
 *
 * With TJIT_LOG=compile each compile is timed stage by stage
 * (compile_log.h) — the build here, the pipeline's steps, the back end's
 * ptxas and load — and a compiled variant writes one line to stderr: the
 * kernel, the target, what tells the variant from the kernel's others, the
 * stages and the total. A variant found in the cache compiles nothing and
 * writes nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../llvm/bounds.h"
#include "device_impl.h"

static void free_variant(tj_device *dev, variant *v)
{
    dev->ops->free_variant(dev, v);
    for (int a = 0; a < v->nasserts; a++) {
        free(v->asserts[a].file);
        free(v->asserts[a].message);
    }
    free(v->asserts);
    tjj_bounds_sites_free(v->bounds);
    tjj_tmap_set_free(&v->tmaps);
    tjf_sig_free(&v->sig);
    free(v->consts);
    free(v->failure_message);
    free(v);
}

static uint64_t variant_hash(const tj_kernel *kernel, const int64_t *consts, int nconsts,
                             int num_warps, int num_stages, uint64_t spec, int check_bounds,
                             int no_tma, int warp_specialize, int persistent, int cluster)
{
    uint64_t h = (0xcbf29ce484222325u ^ (uint64_t)(uintptr_t)kernel) + (uint64_t)check_bounds +
                 ((uint64_t)no_tma << 1) + ((uint64_t)warp_specialize << 2) + ((uint64_t)persistent << 4) +
                 ((uint64_t)cluster << 6);
    h = (h ^ (uint64_t)num_warps) * 0x100000001b3u;
    h = (h ^ (uint64_t)num_stages) * 0x100000001b3u;
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

/* TJIT_LOG=compile's line for the compiled variant v of artifact a. */
static void log_compile(const variant *v, const tjj_artifact *a, const tjj_stage_times *times)
{
    tjs_buf facts = {0};
    tjs_buf_printf(&facts, "%s ", v->kernel->name);
    if (a->sm)
        tjs_buf_printf(&facts, "sm_%d%s", a->sm, a->arch_specific ? "a" : "");
    else
        tjs_buf_printf(&facts, "cpu");
    for (int i = 0; i < v->nconsts && i < v->kernel->nconsts; i++)
        tjs_buf_printf(&facts, " %s=%lld", v->kernel->consts[i], (long long)v->consts[i]);
    if (a->sm) {
        tjs_buf_printf(&facts, " num_warps=%d num_stages=%d spec=0x%llx", v->num_warps, v->num_stages,
                       (unsigned long long)v->spec);
        if (v->no_tma)
            tjs_buf_printf(&facts, " no_tma=1");
        if (v->warp_specialize)
            tjs_buf_printf(&facts, " warp_specialize=%d", v->warp_specialize);
        if (v->persistent)
            tjs_buf_printf(&facts, " persistent=%d", v->persistent);
        if (v->cluster)
            tjs_buf_printf(&facts, " cluster=%d", v->cluster);
    } else if (v->spec & TJF_SPEC_ALIASED) {
        tjs_buf_printf(&facts, " aliased=1");
    }
    if (v->check_bounds)
        tjs_buf_printf(&facts, " check_bounds=1");
    tjj_log_compile(facts.data, times);
    tjs_buf_free(&facts);
}

/* Binds, builds and compiles the in-flight variant v, without the lock.
 * num_warps and spec are the variant's on a GPU; on the CPU only
 * TJIT_PTXAS uses them. */
static tj_status compile_variant(tj_device *dev, variant *v, const int64_t *consts, int nconsts,
                                 int num_warps, uint64_t spec)
{
    tjj_stage_times clock, *times = tjj_log_enabled("compile") ? &clock : NULL;
    tjj_stages_begin(times);
    tji_func *fn = NULL;
    tj_status st = tjf_sig_init(&v->sig, v->kernel);
    if (st == TJ_OK) {
        pthread_mutex_lock(&dev->build_lock);
        st = tji_build(v->kernel, consts, nconsts, &fn);
        pthread_mutex_unlock(&dev->build_lock);
        tjj_stage_done(times, "build"); /* with any wait for another thread's kernel body */
    }
    if (st == TJ_OK)
        fn->params_may_alias = !!(spec & TJF_SPEC_ALIASED);
    if (st == TJ_OK && v->check_bounds)
        fn->check_bounds = 1;
    tjj_artifact artifact = {0};
    if (st == TJ_OK)
        st = dev->ops->compile(dev, fn, v, num_warps, spec, times, &artifact);
    if (st == TJ_OK) {
        v->key = artifact.key;
        v->bounds = artifact.bounds;
        artifact.bounds = NULL;
        if (times)
            log_compile(v, &artifact, times);
    }
    tjj_artifact_free(&artifact);
    tji_func_free(fn);
    return st;
}

static variant *find_variant(const tj_device *dev, const tj_kernel *kernel, const int64_t *consts,
                             int nconsts, int num_warps, int num_stages, uint64_t spec,
                             int check_bounds, int no_tma, int warp_specialize, int persistent,
                             int cluster, uint64_t hash)
{
    if (!dev->nbuckets)
        return NULL;
    for (variant *v = dev->buckets[hash % dev->nbuckets]; v; v = v->next)
        if (v->hash == hash && v->kernel == kernel && v->nconsts == nconsts &&
            v->num_warps == num_warps && v->num_stages == num_stages && v->spec == spec &&
            v->check_bounds == check_bounds && v->no_tma == no_tma && v->warp_specialize == warp_specialize &&
            v->persistent == persistent && v->cluster == cluster &&
            (nconsts == 0 || memcmp(v->consts, consts, (size_t)nconsts * sizeof *consts) == 0))
            return v;
    return NULL;
}

static void remove_variant(tj_device *dev, variant *v)
{
    variant **link = &dev->buckets[v->hash % dev->nbuckets];
    while (*link != v)
        link = &(*link)->next;
    *link = v->next;
    dev->nvariants--;
}

/* The variant for kernel, consts, (on a GPU) num_warps, the arguments'
 * specialization key spec, no_tma, warp_specialize, persistent and cluster, and
 * check_bounds: from the cache,
 * from another thread's compile of it, or compiled now. */
tj_status tjj_get_variant(tj_device *dev, const tj_kernel *kernel, const int64_t *consts,
                          int nconsts, int num_warps, int num_stages, uint64_t spec,
                          int check_bounds, int no_tma, int warp_specialize, int persistent,
                          int cluster, variant **out)
{
    int specializes = dev->ops->specializes;
    int key_warps = specializes ? num_warps : 0;
    int key_stages = specializes ? tjj_num_stages(num_stages) : 0;
    uint64_t key_spec = specializes ? spec : spec & TJF_SPEC_ALIASED; /* CPU: aliasing only */
    int key_no_tma = specializes && no_tma;
    int key_ws = specializes ? warp_specialize : 0;
    int key_persistent = specializes ? persistent : 0;
    int key_cluster = specializes && persistent ? cluster : 0;
    uint64_t hash = variant_hash(kernel, consts, nconsts, key_warps, key_stages, key_spec,
                                 check_bounds, key_no_tma, key_ws, key_persistent, key_cluster);
    pthread_mutex_lock(&dev->variants_lock);
    variant *v = find_variant(dev, kernel, consts, nconsts, key_warps, key_stages, key_spec,
                              check_bounds, key_no_tma, key_ws, key_persistent, key_cluster, hash);
    if (!v) {
        v = tjs_xcalloc(1, sizeof *v);
        v->kernel = kernel;
        v->hash = hash;
        v->num_warps = key_warps;
        v->num_stages = key_stages;
        v->spec = key_spec;
        v->check_bounds = check_bounds;
        v->no_tma = key_no_tma;
        v->warp_specialize = key_ws;
        v->persistent = key_persistent;
        v->cluster = key_cluster;
        tjj_tmap_set_init(&v->tmaps, NULL, 0);
        v->nconsts = nconsts;
        v->consts = tjs_xmalloc((size_t)nconsts * sizeof *consts);
        if (nconsts)
            memcpy(v->consts, consts, (size_t)nconsts * sizeof *consts);
        v->state = VARIANT_COMPILING;
        insert_variant(dev, v);
        pthread_mutex_unlock(&dev->variants_lock);

        tj_status st = compile_variant(dev, v, consts, nconsts, num_warps, spec);

        pthread_mutex_lock(&dev->variants_lock);
        int drop = 0;
        if (st == TJ_OK) {
            v->state = VARIANT_READY;
            *out = v;
        } else {
            remove_variant(dev, v);
            v->state = VARIANT_FAILED;
            v->failure = st;
            v->failure_message = tjs_xstrdup(tj_last_error());
            drop = v->waiters == 0;
        }
        pthread_cond_broadcast(&dev->variant_done);
        pthread_mutex_unlock(&dev->variants_lock);
        if (drop)
            free_variant(dev, v);
        return st;
    }
    if (v->state == VARIANT_COMPILING) {
        v->waiters++;
        dev->variant_waiters++;
        while (v->state == VARIANT_COMPILING)
            pthread_cond_wait(&dev->variant_done, &dev->variants_lock);
        dev->variant_waiters--;
        v->waiters--;
    }
    if (v->state == VARIANT_READY) {
        pthread_mutex_unlock(&dev->variants_lock);
        *out = v;
        return TJ_OK;
    }
    tj_status st = tjs_error(v->failure, "%s", v->failure_message);
    int last = v->waiters == 0;
    pthread_mutex_unlock(&dev->variants_lock);
    if (last)
        free_variant(dev, v);
    return st;
}

int tjj_variant_waiters(tj_device *dev)
{
    pthread_mutex_lock(&dev->variants_lock);
    int n = dev->variant_waiters;
    pthread_mutex_unlock(&dev->variants_lock);
    return n;
}

/* At close, with no launch or compile left. */
void tjj_variants_close(tj_device *dev)
{
    for (size_t b = 0; b < dev->nbuckets; b++) {
        for (variant *v = dev->buckets[b], *next; v; v = next) {
            next = v->next;
            free_variant(dev, v);
        }
    }
    free(dev->buckets);
}
