/* SPDX-License-Identifier: MIT */
/*
 * device.c — devices: opening one of a kind, closing it, its kind and name,
 * and tj_synchronize.
 *
 * A device owns a table of buffers (buffers.c) and a cache of compiled
 * kernel variants (variants.c); what its kind adds — a CPU device's
 * per-worker scratch memory, a GPU device's CUDA primary context — and how
 * it does the work are its back end's operations (tjj_backend in
 * device_impl.h; device_cpu.c, device_gpu.c). This file and launch.c only
 * call them. TJ_DEVICE_DEFAULT opens the first usable GPU, else the CPU
 * (TJIT_DEVICE=cpu or gpu says which). Every open device is listed in the
 * process's registry (multi.c) until it closes, so that a handle given to
 * the wrong device can be told whose it is.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_impl.h"

/* The operations of a device kind; NULL for no kind tjit has. */
static const tjj_backend *backend_of(tj_device_kind kind)
{
    static const tjj_backend *const all[] = {&tjj_cpu_ops, &tjj_gpu_ops};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        if (all[i]->kind == kind)
            return all[i];
    return NULL;
}

int tjj_valid_num_warps(int n)
{
    return n >= 1 && n <= MAX_NUM_WARPS && (n & (n - 1)) == 0;
}

tj_device *tjj_device_new(const tjj_backend *ops)
{
    tj_device *dev = tjs_xcalloc(1, sizeof *dev);
    dev->ops = ops;
    pthread_mutex_init(&dev->buffers_lock, NULL);
    pthread_mutex_init(&dev->variants_lock, NULL);
    pthread_cond_init(&dev->variant_done, NULL);
    pthread_mutex_init(&dev->build_lock, NULL);
    pthread_mutex_init(&dev->pending_lock, NULL);
    pthread_mutex_init(&dev->streams_lock, NULL);
    return dev;
}

void tjj_device_free(tj_device *dev)
{
    pthread_mutex_destroy(&dev->buffers_lock);
    pthread_mutex_destroy(&dev->variants_lock);
    pthread_cond_destroy(&dev->variant_done);
    pthread_mutex_destroy(&dev->build_lock);
    pthread_mutex_destroy(&dev->pending_lock);
    pthread_mutex_destroy(&dev->streams_lock);
    free(dev);
}

tj_status tj_device_open(tj_device **out, tj_device_kind kind, int ordinal)
{
    TJJ_CONTEXT_SCOPE;
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
            tj_status st = tjj_gpu_ops.open(ordinal, out);
            if (st == TJ_OK)
                tjj_device_register(*out);
            if (st == TJ_OK || ordinal != 0)
                return st;
            tjs_clear_error();
            kind = TJ_DEVICE_CPU;
        }
    }
    const tjj_backend *ops = backend_of(kind);
    if (!ops)
        return tjs_error(TJ_ERR_INVALID_ARG, "tj_device_open: unknown device kind %d", (int)kind);
    tj_status st = ops->open(ordinal, out);
    if (st == TJ_OK)
        tjj_device_register(*out);
    return st;
}

void tj_device_close(tj_device *dev)
{
    TJJ_CONTEXT_SCOPE;
    tjs_clear_error();
    if (!dev)
        return;
    tjj_device_unregister(dev);
    dev->ops->idle(dev);
    tjj_streams_close(dev);
    tjj_buffers_close(dev);
    tjj_variants_close(dev);
    dev->ops->close(dev);
    tjj_device_free(dev);
    tjs_clear_error();
}

tj_device_kind tj_device_get_kind(const tj_device *dev)
{
    tjs_clear_error();
    if (!dev) {
        tjs_error(TJ_ERR_INVALID_ARG, "tj_device_get_kind: dev is NULL");
        return TJ_DEVICE_DEFAULT;
    }
    return dev->ops->kind;
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

int tj_device_processors(const tj_device *dev)
{
    tjs_clear_error();
    if (!dev) {
        tjs_error(TJ_ERR_INVALID_ARG, "tj_device_processors: dev is NULL");
        return 0;
    }
    return dev->processors;
}

tj_status tj_synchronize(tj_device *dev)
{
    TJJ_CONTEXT_SCOPE;
    tjs_clear_error();
    if (!dev)
        return tjs_error(TJ_ERR_INVALID_ARG, "tj_synchronize: dev is NULL");
    return dev->ops->synchronize(dev, "tj_synchronize");
}
