/* SPDX-License-Identifier: MIT */
/*
 * multi.c — several devices in one process: counting them, telling whose a
 * handle is, and copying between their buffers.
 *
 * A process may open every GPU (tj_device_count, then tj_device_open for
 * each ordinal) and use them from as many threads as it likes; each device
 * is what it always was, its own buffers, streams, events and variants, in
 * its GPU's primary context. What the devices share is the compile
 * (shared_code.c: the code of a variant is made once per architecture, and
 * each device loads its own module) and this file.
 *
 * Handles are checked by the device they are given to: a buffer is a
 * number its device's table maps (buffers.c), a stream or event names its
 * device. A handle of another device used to read as "not a live buffer of
 * this device (freed?)", which sends the user looking for a free that
 * never happened. So the open devices are listed here (a registry, under
 * one lock, that tj_device_open and tj_device_close keep), and a buffer
 * that its device does not know is looked up in the others: the message
 * then says whose it is — "buffer 0x... belongs to GPU 1 (NVIDIA H200
 * ...), not to GPU 0 (...)". Only failures look: a good call never takes
 * the registry's lock. The lock order is the registry, then one device's
 * buffers_lock, so no buffers_lock is held where a message is made.
 *
 * tj_buffer_copy copies between two buffers, of one device or two: within
 * a device by the kind's copy (memcpy; cuMemcpyDtoD, queued as a launch
 * is); between GPUs by cuMemcpyPeer, with peer access enabled where the
 * hardware allows (device_gpu.c); between a GPU and the CPU device by the
 * GPU's own copy to or from the CPU buffer's host memory (no staging: a
 * CPU buffer is host memory); between two devices of a kind with no peer
 * copy, through a bounce buffer on the host. Both buffers are checked,
 * ranges and all, before anything moves, and a copy whose ranges overlap
 * in the same memory is refused (GPU copies do not promise memmove).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_impl.h"

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static tj_device **open_devices;
static size_t nopen, open_cap;
static uint64_t opened; /* devices opened so far: their serial numbers */

void tjj_device_register(tj_device *dev)
{
    pthread_mutex_lock(&registry_lock);
    if (nopen == open_cap) {
        open_cap = open_cap ? 2 * open_cap : 8;
        open_devices = tjs_xrealloc(open_devices, open_cap * sizeof *open_devices);
    }
    open_devices[nopen++] = dev;
    dev->serial = ++opened;
    pthread_mutex_unlock(&registry_lock);
}

void tjj_device_unregister(tj_device *dev)
{
    pthread_mutex_lock(&registry_lock);
    for (size_t i = 0; i < nopen; i++) {
        if (open_devices[i] == dev) {
            open_devices[i] = open_devices[--nopen];
            break;
        }
    }
    if (!nopen) {
        free(open_devices);
        open_devices = NULL;
        open_cap = 0;
    }
    pthread_mutex_unlock(&registry_lock);
}

void tjj_device_label(const tj_device *dev, char *out, size_t size)
{
    if (dev->ops->kind == TJ_DEVICE_GPU)
        snprintf(out, size, "GPU %d (%s)", dev->ordinal, dev->name);
    else
        snprintf(out, size, "the CPU device (%s)", dev->name);
}

int tjj_buffer_elsewhere(const tj_device *dev, tj_buffer buf, char *out, size_t size)
{
    if (!buf.handle)
        return 0;
    char mine[256], its[256] = "";
    int found = 0;
    pthread_mutex_lock(&registry_lock);
    for (size_t i = 0; i < nopen && !found; i++) {
        if (open_devices[i] != dev && tjj_buffer_live(open_devices[i], buf)) {
            tjj_device_label(open_devices[i], its, sizeof its);
            found = 1;
        }
    }
    pthread_mutex_unlock(&registry_lock);
    if (!found)
        return 0;
    tjj_device_label(dev, mine, sizeof mine);
    if (strcmp(mine, its) != 0)
        snprintf(out, size, "belongs to %s, not to %s", its, mine);
    else /* the same GPU (or the CPU) opened twice: two devices all the same */
        snprintf(out, size, "belongs to another device opened on %s (a tj_device of its own), not to "
                 "this one", its);
    return 1;
}

int tj_device_count(tj_device_kind kind)
{
    tjs_clear_error();
    if (kind == TJ_DEVICE_DEFAULT) {
        const char *env = getenv("TJIT_DEVICE");
        if (env && strcmp(env, "cpu") == 0)
            return 1;
        if (env && strcmp(env, "gpu") == 0)
            return tj_device_count(TJ_DEVICE_GPU);
        if (env && *env) {
            tjs_error(TJ_ERR_INVALID_ARG, "tj_device_count: TJIT_DEVICE=%s (expected cpu or gpu)", env);
            return 0;
        }
        int gpus = tj_device_count(TJ_DEVICE_GPU);
        tjs_clear_error();
        return gpus > 0 ? gpus : 1;
    }
    if (kind == TJ_DEVICE_CPU)
        return 1;
    if (kind != TJ_DEVICE_GPU) {
        tjs_error(TJ_ERR_INVALID_ARG, "tj_device_count: unknown device kind %d", (int)kind);
        return 0;
    }
    const tjcu_driver *cu;
    if (tjj_cuda_load(&cu) != TJ_OK) {
        tjs_error(TJ_ERR_DEVICE, "tj_device_count: no GPU: %s", tjj_cuda_load_error());
        return 0;
    }
    int count = 0;
    if (tjj_cu_check(cu->cuDeviceGetCount(&count), "tj_device_count", "cuDeviceGetCount") != TJ_OK)
        return 0;
    return count > 0 ? count : 0;
}

/* One side of a copy: its buffer held, [offset, offset + bytes) inside it. */
static tj_status copy_side(const char *who, const char *side, tj_device *dev, tj_buffer buf, size_t offset,
                           size_t bytes, tjj_buffer_use *use)
{
    char what[64];
    snprintf(what, sizeof what, "%s: %s", who, side);
    if (!dev)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s_dev is NULL", what);
    if (!tjj_buffer_acquire(dev, buf, use))
        return tjj_dead_buffer(what, dev, buf);
    size_t end;
    if (__builtin_add_overflow(offset, bytes, &end) || end > use->size) {
        tjj_buffer_release(dev, use);
        return tjs_error(TJ_ERR_INVALID_ARG,
                         "%s: %zu bytes at offset %zu do not fit in buffer 0x%llx of %zu bytes", what, bytes,
                         offset, (unsigned long long)buf.handle, use->size);
    }
    return TJ_OK;
}

/* Between devices of a kind without a copy of its own: through the host,
 * a piece at a time. */
static tj_status staged_copy(tj_device *dst_dev, uint64_t dst, tj_device *src_dev, uint64_t src, size_t bytes,
                             const char *who)
{
    enum { PIECE = 16 << 20 };
    size_t piece = bytes < PIECE ? bytes : PIECE;
    unsigned char *bounce = malloc(piece ? piece : 1);
    if (!bounce)
        return tjs_error(TJ_ERR_OUT_OF_MEMORY, "%s: no host memory for a copy through the host (%zu bytes)",
                         who, piece);
    tj_status st = TJ_OK;
    for (size_t done = 0; st == TJ_OK && done < bytes; done += piece) {
        size_t n = bytes - done < piece ? bytes - done : piece;
        st = src_dev->ops->read(src_dev, bounce, src + done, n, who);
        if (st == TJ_OK)
            st = dst_dev->ops->write(dst_dev, dst + done, bounce, n, who);
    }
    free(bounce);
    return st;
}

/* Are the two devices' addresses in one address space (so that ranges may
 * overlap)? The same device; host memory; one GPU's context. */
static int same_memory(const tj_device *a, const tj_device *b)
{
    if (a == b)
        return 1;
    if (a->ops != b->ops)
        return 0;
    return a->ops->host_memory || a->context == b->context;
}

tj_status tj_buffer_copy(tj_device *dst_dev, tj_buffer dst, size_t dst_offset, tj_device *src_dev,
                         tj_buffer src, size_t src_offset, size_t bytes)
{
    TJJ_CONTEXT_SCOPE;
    static const char who[] = "tj_buffer_copy";
    tjs_clear_error();
    tjj_buffer_use d, s;
    tj_status st = copy_side(who, "dst", dst_dev, dst, dst_offset, bytes, &d);
    if (st != TJ_OK)
        return st;
    st = copy_side(who, "src", src_dev, src, src_offset, bytes, &s);
    if (st != TJ_OK) {
        tjj_buffer_release(dst_dev, &d);
        return st;
    }
    uint64_t to = d.addr + dst_offset, from = s.addr + src_offset;
    if (bytes && same_memory(dst_dev, src_dev) && to < from + bytes && from < to + bytes) {
        if (to != from)
            st = tjs_error(TJ_ERR_INVALID_ARG, "%s: the %zu bytes to copy overlap where they go (a buffer "
                           "and a view of it, or one buffer at two offsets); copy through another buffer",
                           who, bytes);
        /* else: the bytes are where they go already */
    } else if (!bytes) {
        /* nothing moves */
    } else if (dst_dev == src_dev) {
        st = dst_dev->ops->copy(dst_dev, to, from, bytes, who);
    } else if (src_dev->ops->host_memory) {
        st = dst_dev->ops->write(dst_dev, to, (const void *)(uintptr_t)from, bytes, who);
    } else if (dst_dev->ops->host_memory) {
        st = src_dev->ops->read(src_dev, (void *)(uintptr_t)to, from, bytes, who);
    } else if (dst_dev->ops == src_dev->ops && dst_dev->ops->copy_peer) {
        st = dst_dev->ops->copy_peer(dst_dev, to, src_dev, from, bytes, who);
    } else {
        st = staged_copy(dst_dev, to, src_dev, from, bytes, who);
    }
    tjj_buffer_release(src_dev, &s);
    tjj_buffer_release(dst_dev, &d);
    return st;
}
