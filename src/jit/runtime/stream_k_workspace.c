/* SPDX-License-Identifier: MIT */
/*
 * stream_k_workspace.c — the memory where a stream-K kernel's pieces of a
 * tile meet (src/jit/gpu/stream_k.c says what it holds).
 *
 * A launch of a stream-K variant passes a workspace of counters, which
 * must be zero when it starts (each launch leaves them zero again), and
 * partial sums. Launches on one stream run one after another, so they
 * share one workspace; launches on two streams may run at once, so each
 * stream has its own. A workspace grows to the largest launch seen on
 * its stream: the stream is drained first, since a kernel queued on it
 * may still read the old one. A stream's goes with the stream (drained
 * first: a stream made later may get the same handle and run at once
 * with what the old one still runs); the rest live until the device
 * closes.
 *
 * The partial sums start where the counters end, and how many counters
 * there are is the launch's: the kernel puts the slots past 8R bytes,
 * R being its number of ranges (at least its S split tiles, at most its
 * P programs). A launch that splits more tiles than the last one on its
 * stream (another shape, or another kernel with more programs) finds its
 * last counters where the last launch wrote partial sums. So a workspace
 * knows how much of its start is zero — all of it when made, then the
 * 8 (T mod P) bytes, rounded up, that the last launch kept clear — and
 * zeroes the rest of a launch's on the stream, before the launch.
 * (Without it, TJIT_STREAM_K=1 made the LLM benchmark compute wrong
 * tiles.)
 */
#include <stdlib.h>

#include "device_impl.h"

struct tjj_sk_workspace {
    uint64_t stream;
    tjcu_deviceptr ptr;
    size_t bytes;
    size_t zero_bytes; /* the start that is zero once the stream's queued launches end */
};

tj_status tjj_stream_k_workspace(tj_device *dev, uint64_t stream, size_t counter_bytes, size_t bytes,
                                 const char *who, uint64_t *out)
{
    pthread_mutex_lock(&dev->pending_lock);
    struct tjj_sk_workspace *w = NULL;
    for (int i = 0; i < dev->nsk_workspaces && !w; i++)
        if (dev->sk_workspaces[i].stream == stream)
            w = &dev->sk_workspaces[i];
    if (!w) {
        dev->sk_workspaces = tjs_xrealloc(dev->sk_workspaces,
                                          (size_t)(dev->nsk_workspaces + 1) * sizeof *dev->sk_workspaces);
        w = &dev->sk_workspaces[dev->nsk_workspaces++];
        *w = (struct tjj_sk_workspace){stream, 0, 0, 0};
    }
    const tjcu_driver *cu = dev->cu;
    tj_status st = TJ_OK;
    if (w->bytes < bytes) {
        if (w->ptr)
            st = tjj_cu_check(cu->cuStreamSynchronize((tjcu_stream)(uintptr_t)stream), who, "cuStreamSynchronize");
        if (st == TJ_OK && w->ptr)
            cu->cuMemFree(w->ptr);
        w->ptr = 0;
        w->bytes = 0;
        if (st == TJ_OK)
            st = tjj_cu_check(cu->cuMemAlloc(&w->ptr, bytes), who, "cuMemAlloc (the stream-K workspace)");
        if (st == TJ_OK)
            st = tjj_cu_check(cu->cuMemsetD8(w->ptr, 0, bytes), who, "cuMemsetD8");
        if (st == TJ_OK)
            w->bytes = w->zero_bytes = bytes;
    }
    if (st == TJ_OK && w->zero_bytes < counter_bytes)
        st = tjj_cu_check(cu->cuMemsetD8Async(w->ptr + w->zero_bytes, 0, counter_bytes - w->zero_bytes,
                                              (tjcu_stream)(uintptr_t)stream),
                          who, "cuMemsetD8Async (the stream-K counters)");
    if (st == TJ_OK)
        w->zero_bytes = counter_bytes; /* past them, this launch's partial sums */
    *out = (uint64_t)w->ptr;
    pthread_mutex_unlock(&dev->pending_lock);
    return st;
}

void tjj_stream_k_workspace_forget(tj_device *dev, uint64_t stream)
{
    pthread_mutex_lock(&dev->pending_lock);
    for (int i = 0; i < dev->nsk_workspaces; i++) {
        struct tjj_sk_workspace *w = &dev->sk_workspaces[i];
        if (w->stream != stream)
            continue;
        if (w->ptr && dev->cu->cuStreamSynchronize((tjcu_stream)(uintptr_t)stream) == TJCU_SUCCESS)
            dev->cu->cuMemFree(w->ptr);
        *w = dev->sk_workspaces[--dev->nsk_workspaces];
        break;
    }
    pthread_mutex_unlock(&dev->pending_lock);
}

void tjj_stream_k_workspaces_free(tj_device *dev)
{
    for (int i = 0; i < dev->nsk_workspaces; i++)
        if (dev->sk_workspaces[i].ptr)
            dev->cu->cuMemFree(dev->sk_workspaces[i].ptr);
    free(dev->sk_workspaces);
    dev->sk_workspaces = NULL;
    dev->nsk_workspaces = 0;
}
