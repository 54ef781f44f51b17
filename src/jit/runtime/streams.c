/* SPDX-License-Identifier: MIT */
/*
 * streams.c — streams, events, asynchronous copies and page-locked host
 * memory (tjit.h: tj_stream_*, tj_event_*, tj_buffer_*_async, tj_host_*).
 *
 * An application that already queues work on its own CUDA streams wants
 * tjit's launches and copies in the same queues, in order with its own,
 * and wants to wait for one queue without draining the whole GPU. So a
 * tj_stream is a thin handle on the device kind's native stream (a GPU's
 * CUstream; on the CPU nothing, since CPU work is done when its call
 * returns) and an event the kind's native event. Everything here checks
 * its arguments and delegates to the kind (device_impl.h's tjj_backend).
 *
 * Lifetimes: a stream or event is its creator's, but it must not outlive
 * its device's resources, and a user may close the device first. So the
 * device keeps the live ones in lists; tj_device_close frees their
 * native handles and marks them dead, after which only destroy is valid
 * on them (anything else is an error, never a use of freed memory).
 *
 * A buffer in an asynchronous copy is held as a launch holds it: its
 * memory outlives a tj_buffer_free until the device is synchronized
 * (buffers.c's epochs), since the copy may still be queued.
 */
#include <stdlib.h>
#include <string.h>

#include "device_impl.h"

static void unlink_stream(tj_stream *s)
{
    if (s->prev)
        s->prev->next = s->next;
    else
        s->dev->streams = s->next;
    if (s->next)
        s->next->prev = s->prev;
}

static void unlink_event(tj_event *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        e->dev->events = e->next;
    if (e->next)
        e->next->prev = e->prev;
}

void tjj_streams_close(tj_device *dev)
{
    pthread_mutex_lock(&dev->streams_lock);
    for (tj_stream *s = dev->streams, *next; s; s = next) {
        next = s->next;
        if (s->owned)
            dev->ops->stream_free(dev, s->native);
        s->dev = NULL;
        s->prev = s->next = NULL;
    }
    for (tj_event *e = dev->events, *next; e; e = next) {
        next = e->next;
        dev->ops->event_free(dev, e->native);
        e->dev = NULL;
        e->prev = e->next = NULL;
    }
    dev->streams = NULL;
    dev->events = NULL;
    pthread_mutex_unlock(&dev->streams_lock);
}

static tj_stream *add_stream(tj_device *dev, uint64_t native, int owned)
{
    tj_stream *s = tjs_xcalloc(1, sizeof *s);
    s->dev = dev;
    s->native = native;
    s->owned = owned;
    pthread_mutex_lock(&dev->streams_lock);
    s->next = dev->streams;
    if (s->next)
        s->next->prev = s;
    dev->streams = s;
    pthread_mutex_unlock(&dev->streams_lock);
    return s;
}

tj_status tj_stream_create(tj_device *dev, tj_stream **out)
{
    TJJ_CONTEXT_SCOPE;
    static const char who[] = "tj_stream_create";
    tjs_clear_error();
    if (!dev || !out)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: %s is NULL", who, dev ? "out" : "dev");
    *out = NULL;
    uint64_t native = 0;
    tj_status st = dev->ops->stream_new(dev, &native, who);
    if (st == TJ_OK)
        *out = add_stream(dev, native, 1);
    return st;
}

tj_status tj_stream_wrap(tj_device *dev, void *cuda_stream, tj_stream **out)
{
    static const char who[] = "tj_stream_wrap";
    tjs_clear_error();
    if (!dev || !out)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: %s is NULL", who, dev ? "out" : "dev");
    *out = NULL;
    if (dev->ops->kind != TJ_DEVICE_GPU)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: the CPU device has no CUDA streams to wrap "
                         "(tj_stream_create makes a stream that works on both)", who);
    if (!cuda_stream)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: the stream is NULL (the default stream: pass no "
                         "stream, cfg->stream = NULL)", who);
    *out = add_stream(dev, (uint64_t)(uintptr_t)cuda_stream, 0);
    return TJ_OK;
}

/* The stream's device, or an error where it is closed. */
static tj_status live_stream(const tj_stream *s, const char *who)
{
    if (!s)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: stream is NULL", who);
    if (!s->dev)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: the stream's device was closed (only "
                         "tj_stream_destroy may still be called)", who);
    return TJ_OK;
}

tj_status tj_stream_destroy(tj_stream *s)
{
    TJJ_CONTEXT_SCOPE;
    tjs_clear_error();
    if (!s)
        return TJ_OK;
    tj_device *dev = s->dev;
    if (dev) {
        pthread_mutex_lock(&dev->streams_lock);
        unlink_stream(s);
        pthread_mutex_unlock(&dev->streams_lock);
        if (s->owned)
            dev->ops->stream_free(dev, s->native);
    }
    free(s);
    return TJ_OK;
}

tj_status tj_stream_synchronize(tj_stream *s)
{
    TJJ_CONTEXT_SCOPE;
    static const char who[] = "tj_stream_synchronize";
    tjs_clear_error();
    tj_status st = live_stream(s, who);
    return st == TJ_OK ? s->dev->ops->stream_wait(s->dev, s->native, who) : st;
}

tj_status tjj_stream_native(tj_device *dev, tj_stream *stream, const char *who, uint64_t *out)
{
    *out = 0;
    if (!stream)
        return TJ_OK;
    tj_status st = live_stream(stream, who);
    if (st == TJ_OK && stream->dev != dev) {
        char mine[256], its[256];
        tjj_device_label(dev, mine, sizeof mine);
        tjj_device_label(stream->dev, its, sizeof its);
        st = strcmp(mine, its) != 0
                 ? tjs_error(TJ_ERR_INVALID_ARG, "%s: the stream belongs to %s, not to %s", who, its, mine)
                 : tjs_error(TJ_ERR_INVALID_ARG, "%s: the stream belongs to another device opened on %s, "
                             "not to this one", who, its);
    }
    if (st == TJ_OK)
        *out = stream->native;
    return st;
}

/* A copy queued on stream; to_device says which way. */
static tj_status copy_async(const char *who, tj_device *dev, tj_buffer buf, size_t offset, void *host,
                            size_t bytes, tj_stream *stream, int to_device)
{
    tjs_clear_error();
    uint64_t native = 0;
    tj_status st = dev ? tjj_stream_native(dev, stream, who, &native)
                       : tjs_error(TJ_ERR_INVALID_ARG, "%s: dev is NULL", who);
    tjj_buffer_use use;
    if (st == TJ_OK)
        st = tjj_copy_target(who, dev, buf, offset, host, bytes, &use);
    if (st != TJ_OK)
        return st;
    if (bytes)
        st = dev->ops->copy_async(dev, to_device, use.addr + offset, host, bytes, native, who);
    tjj_buffer_release(dev, &use);
    return st;
}

tj_status tj_buffer_write_async(tj_device *dev, tj_buffer dst, size_t offset, const void *src, size_t bytes,
                                tj_stream *stream)
{
    TJJ_CONTEXT_SCOPE;
    return copy_async("tj_buffer_write_async", dev, dst, offset, (void *)(uintptr_t)src, bytes, stream, 1);
}

tj_status tj_buffer_read_async(tj_device *dev, tj_buffer src, size_t offset, void *dst, size_t bytes,
                               tj_stream *stream)
{
    TJJ_CONTEXT_SCOPE;
    return copy_async("tj_buffer_read_async", dev, src, offset, dst, bytes, stream, 0);
}

tj_status tj_host_alloc(tj_device *dev, size_t bytes, void **out)
{
    TJJ_CONTEXT_SCOPE;
    static const char who[] = "tj_host_alloc";
    tjs_clear_error();
    if (!dev || !out)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: %s is NULL", who, dev ? "out" : "dev");
    *out = NULL;
    if (!bytes)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: 0 bytes", who);
    return dev->ops->host_alloc(dev, bytes, out, who);
}

tj_status tj_host_free(tj_device *dev, void *ptr)
{
    TJJ_CONTEXT_SCOPE;
    tjs_clear_error();
    if (!dev)
        return tjs_error(TJ_ERR_INVALID_ARG, "tj_host_free: dev is NULL");
    if (ptr)
        dev->ops->host_free(dev, ptr);
    return TJ_OK;
}

tj_status tj_event_create(tj_device *dev, tj_event **out)
{
    TJJ_CONTEXT_SCOPE;
    static const char who[] = "tj_event_create";
    tjs_clear_error();
    if (!dev || !out)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: %s is NULL", who, dev ? "out" : "dev");
    *out = NULL;
    uint64_t native = 0;
    tj_status st = dev->ops->event_new(dev, &native, who);
    if (st != TJ_OK)
        return st;
    tj_event *e = tjs_xcalloc(1, sizeof *e);
    e->dev = dev;
    e->native = native;
    pthread_mutex_lock(&dev->streams_lock);
    e->next = dev->events;
    if (e->next)
        e->next->prev = e;
    dev->events = e;
    pthread_mutex_unlock(&dev->streams_lock);
    *out = e;
    return TJ_OK;
}

tj_status tj_event_destroy(tj_event *e)
{
    TJJ_CONTEXT_SCOPE;
    tjs_clear_error();
    if (!e)
        return TJ_OK;
    tj_device *dev = e->dev;
    if (dev) {
        pthread_mutex_lock(&dev->streams_lock);
        unlink_event(e);
        pthread_mutex_unlock(&dev->streams_lock);
        dev->ops->event_free(dev, e->native);
    }
    free(e);
    return TJ_OK;
}

/* The event's device, or an error where there is none. */
static tj_status live_event(const tj_event *e, const char *name, const char *who)
{
    if (!e)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: %s is NULL", who, name);
    if (!e->dev)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: %s's device was closed (only tj_event_destroy may "
                         "still be called)", who, name);
    return TJ_OK;
}

tj_status tj_event_record(tj_event *e, tj_stream *stream)
{
    TJJ_CONTEXT_SCOPE;
    static const char who[] = "tj_event_record";
    tjs_clear_error();
    tj_status st = live_event(e, "event", who);
    uint64_t native = 0;
    if (st == TJ_OK)
        st = tjj_stream_native(e->dev, stream, who, &native);
    if (st == TJ_OK)
        st = e->dev->ops->event_record(e->dev, e->native, native, who);
    if (st == TJ_OK)
        e->recorded = 1;
    return st;
}

tj_status tj_event_synchronize(tj_event *e)
{
    TJJ_CONTEXT_SCOPE;
    static const char who[] = "tj_event_synchronize";
    tjs_clear_error();
    tj_status st = live_event(e, "event", who);
    if (st == TJ_OK && !e->recorded)
        st = tjs_error(TJ_ERR_INVALID_ARG, "%s: the event was never recorded (tj_event_record)", who);
    return st == TJ_OK ? e->dev->ops->event_wait(e->dev, e->native, who) : st;
}

tj_status tj_event_elapsed(tj_event *start, tj_event *end, float *milliseconds)
{
    TJJ_CONTEXT_SCOPE;
    static const char who[] = "tj_event_elapsed";
    tjs_clear_error();
    tj_status st = live_event(start, "start", who);
    if (st == TJ_OK)
        st = live_event(end, "end", who);
    if (st == TJ_OK && !milliseconds)
        st = tjs_error(TJ_ERR_INVALID_ARG, "%s: milliseconds is NULL", who);
    if (st == TJ_OK && start->dev != end->dev) {
        char a[256], b[256];
        tjj_device_label(start->dev, a, sizeof a);
        tjj_device_label(end->dev, b, sizeof b);
        st = tjs_error(TJ_ERR_INVALID_ARG, "%s: the events belong to different devices: start to %s, end "
                       "to %s%s", who, a, b, strcmp(a, b) == 0 ? " (opened separately)" : "");
    }
    if (st == TJ_OK && (!start->recorded || !end->recorded))
        st = tjs_error(TJ_ERR_INVALID_ARG, "%s: the %s event was never recorded (tj_event_record)", who,
                       start->recorded ? "end" : "start");
    return st == TJ_OK ? start->dev->ops->event_elapsed(start->dev, start->native, end->native, milliseconds, who)
                       : st;
}
