/* SPDX-License-Identifier: MIT */
/*
 * buffers.c — buffer handles, and buffers held by the launches using them.
 *
 * Buffers are handles, not pointers, so that a freed, foreign or invented
 * handle is reported instead of being undefined behavior. A handle is never
 * reissued: it is a process-wide 64-bit serial number (one counter for all
 * devices, bumped per allocation), scrambled by an invertible mix so that
 * small integers and neighbouring numbers are no handles. A device maps the
 * handles of its live buffers to slots (open addressing, under its mutex);
 * a handle freed, of a closed device or of another device is simply not in
 * the map. 2^64 allocations are out of reach, so no handle comes back to
 * life — which a packed (device tag, slot generation, slot) handle did
 * after 65,535 device opens or 2^24 reuses of a slot.
 *
 * A slot holds a host pointer on the CPU and a device address (cuMemAlloc)
 * on a GPU; the memory and the copies to and from it are the device kind's
 * operations (tjj_backend: alloc, free, write, read), synchronous copies
 * on a GPU (cuMemcpy).
 *
 * A buffer may be freed while something still uses it: a launch on another
 * thread (from the moment it looked its arguments up), a copy, or on a GPU
 * a launch still queued or running. tj_buffer_free then kills the handle at
 * once and holds the memory back: each use counts itself in its slot
 * (tjj_buffer_acquire/_release); on the CPU the last use to end releases the
 * memory. A GPU use is not over when its call returns, so each use takes
 * the next number of the device's use epoch; a synchronize records the
 * epoch it waited for (tjj_buffers_synced), and held memory whose last use
 * is no later is released then: at tj_synchronize, tj_buffer_read,
 * tj_device_close, or an allocation that failed for want of memory.
 *
 * Not every slot owns its memory. A wrapped buffer (tj_buffer_wrap) shows
 * memory someone else allocated, and a view (tj_buffer_view) a byte range
 * of another slot's: both are `foreign`, never freed through their own
 * slot. A view holds one use of the slot that owns its memory (a view of a
 * view, of the owner directly) from its making to its slot's release, so
 * the owner's memory outlives a freed owner handle as it outlives a
 * running launch, and the view's release may be what lets it go.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_impl.h"

#define MAX_SLOTS UINT32_MAX

static atomic_uint_fast64_t buffer_serial;

/* splitmix64's finalizer: a bijection of 64-bit words with 0 -> 0, so a
 * serial number from 1 up never gives the zero handle. */
static uint64_t scramble(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* --- the handle map (buffers_lock held) ------------------------------------ */

static size_t map_find(const tj_device *dev, uint64_t handle)
{
    size_t mask = dev->map_cap - 1, i = handle & mask;
    while (dev->map_keys[i] && dev->map_keys[i] != handle)
        i = (i + 1) & mask;
    return i;
}

/* The slot index of a live handle, or -1. */
static int64_t map_get(const tj_device *dev, uint64_t handle)
{
    if (!handle || !dev->map_cap)
        return -1;
    size_t i = map_find(dev, handle);
    return dev->map_keys[i] ? (int64_t)dev->map_slots[i] : -1;
}

static void map_put(tj_device *dev, uint64_t handle, uint32_t slot);

static void map_grow(tj_device *dev)
{
    uint64_t *keys = dev->map_keys;
    uint32_t *slots = dev->map_slots;
    size_t cap = dev->map_cap;
    dev->map_cap = cap ? cap * 2 : 64;
    dev->map_keys = tjs_xcalloc(dev->map_cap, sizeof *dev->map_keys);
    dev->map_slots = tjs_xcalloc(dev->map_cap, sizeof *dev->map_slots);
    dev->map_count = 0;
    for (size_t i = 0; i < cap; i++)
        if (keys[i])
            map_put(dev, keys[i], slots[i]);
    free(keys);
    free(slots);
}

static void map_put(tj_device *dev, uint64_t handle, uint32_t slot)
{
    if (2 * (dev->map_count + 1) > dev->map_cap)
        map_grow(dev);
    size_t i = map_find(dev, handle);
    dev->map_keys[i] = handle;
    dev->map_slots[i] = slot;
    dev->map_count++;
}

/* Removes a present handle; later entries of its run move back into the
 * gap, so lookups never need tombstones. */
static void map_remove(tj_device *dev, uint64_t handle)
{
    size_t mask = dev->map_cap - 1, gap = map_find(dev, handle);
    dev->map_keys[gap] = 0;
    dev->map_count--;
    for (size_t i = (gap + 1) & mask; dev->map_keys[i]; i = (i + 1) & mask) {
        size_t home = dev->map_keys[i] & mask;
        /* Move it if its home is not in (gap, i], cyclically. */
        if ((i > gap && (home <= gap || home > i)) || (i < gap && home <= gap && home > i)) {
            dev->map_keys[gap] = dev->map_keys[i];
            dev->map_slots[gap] = dev->map_slots[i];
            dev->map_keys[i] = 0;
            gap = i;
        }
    }
}

/* --- memory ---------------------------------------------------------------- */

static int done_with(const tj_device *dev, const buffer_slot *s);

/* Puts a slot whose memory is being released back on the free list and
 * returns the address to free (after unlocking), 0 where the memory is
 * not the slot's to free: a wrapped buffer's, or a view's — whose end
 * gives back its use of the buffer it shows, which may release that one's
 * memory. buffers_lock held. */
static uint64_t recycle(tj_device *dev, buffer_slot *s)
{
    uint64_t addr = s->foreign ? 0 : s->addr;
    uint32_t owner = s->owner;
    *s = (buffer_slot){.next_free = dev->free_head};
    dev->free_head = (uint32_t)(s - dev->slots) + 1;
    if (owner) {
        buffer_slot *o = &dev->slots[owner - 1];
        o->uses--;
        if (!o->handle && done_with(dev, o)) {
            dev->nheld--;
            addr = recycle(dev, o);
        }
    }
    return addr;
}

/* May a held slot's memory go now? buffers_lock held. */
static int done_with(const tj_device *dev, const buffer_slot *s)
{
    return s->uses == 0 && (!dev->ops->asynchronous || s->gpu_epoch <= dev->gpu_synced);
}

/* --- uses ------------------------------------------------------------------ */

int tjj_buffer_acquire(tj_device *dev, tj_buffer buf, tjj_buffer_use *use)
{
    pthread_mutex_lock(&dev->buffers_lock);
    int64_t slot = map_get(dev, buf.handle);
    if (slot >= 0) {
        buffer_slot *s = &dev->slots[slot];
        s->uses++;
        *use = (tjj_buffer_use){(uint32_t)slot, s->addr, s->size};
    }
    pthread_mutex_unlock(&dev->buffers_lock);
    return slot >= 0;
}

void tjj_buffer_release(tj_device *dev, const tjj_buffer_use *use)
{
    uint64_t addr = 0;
    pthread_mutex_lock(&dev->buffers_lock);
    buffer_slot *s = &dev->slots[use->slot];
    s->uses--;
    if (dev->ops->asynchronous)
        s->gpu_epoch = ++dev->gpu_epoch;
    if (!s->handle && done_with(dev, s)) {
        dev->nheld--;
        addr = recycle(dev, s);
    }
    pthread_mutex_unlock(&dev->buffers_lock);
    if (addr)
        dev->ops->free(dev, addr);
}

int tjj_buffers_held(tj_device *dev)
{
    pthread_mutex_lock(&dev->buffers_lock);
    int held = dev->nheld > 0;
    pthread_mutex_unlock(&dev->buffers_lock);
    return held;
}

uint64_t tjj_buffers_epoch(tj_device *dev)
{
    pthread_mutex_lock(&dev->buffers_lock);
    uint64_t epoch = dev->gpu_epoch;
    pthread_mutex_unlock(&dev->buffers_lock);
    return epoch;
}

void tjj_buffers_synced(tj_device *dev, uint64_t epoch)
{
    uint64_t *addrs = NULL;
    uint32_t n = 0;
    pthread_mutex_lock(&dev->buffers_lock);
    if (epoch > dev->gpu_synced)
        dev->gpu_synced = epoch;
    if (dev->nheld)
        addrs = tjs_xmalloc(dev->nheld * sizeof *addrs);
    for (uint32_t i = 0; i < dev->nslots && n < dev->nheld; i++) {
        buffer_slot *s = &dev->slots[i];
        if (s->addr && !s->handle && done_with(dev, s))
            addrs[n++] = recycle(dev, s);
    }
    dev->nheld -= n;
    pthread_mutex_unlock(&dev->buffers_lock);
    for (uint32_t i = 0; i < n; i++)
        if (addrs[i])
            dev->ops->free(dev, addrs[i]);
    free(addrs);
}

/* After the device is idle: everything goes. */
void tjj_buffers_close(tj_device *dev)
{
    for (uint32_t i = 0; i < dev->nslots; i++)
        if (dev->slots[i].addr && !dev->slots[i].foreign)
            dev->ops->free(dev, dev->slots[i].addr);
    free(dev->slots);
    free(dev->map_keys);
    free(dev->map_slots);
}

/* The checks of every call that makes a handle: the error cleared, dev
 * and out given, *out the zero handle until the call succeeds. */
static tj_status out_of(const char *who, tj_device *dev, tj_buffer *out)
{
    tjs_clear_error();
    if (!out)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: out is NULL", who);
    out->handle = 0;
    if (!dev)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: dev is NULL", who);
    return TJ_OK;
}

/* A live slot for *init (its handle made here), into *out. buffers_lock
 * held. */
static tj_status new_slot(tj_device *dev, const char *who, buffer_slot init, tj_buffer *out)
{
    uint32_t index;
    if (dev->free_head) {
        index = dev->free_head - 1;
        dev->free_head = dev->slots[index].next_free;
    } else if (dev->nslots < MAX_SLOTS) {
        if (dev->nslots == dev->slots_cap) {
            uint32_t cap = dev->slots_cap ? dev->slots_cap * 2 : 64;
            if (cap < dev->slots_cap) /* past 2^31 */
                cap = MAX_SLOTS;
            dev->slots = tjs_xrealloc(dev->slots, (size_t)cap * sizeof *dev->slots);
            dev->slots_cap = cap;
        }
        index = dev->nslots++;
    } else {
        return tjs_error(TJ_ERR_OUT_OF_MEMORY, "%s: the device already holds %llu buffers", who,
                         (unsigned long long)MAX_SLOTS);
    }
    init.handle = scramble(atomic_fetch_add(&buffer_serial, 1) + 1);
    dev->slots[index] = init;
    map_put(dev, init.handle, index);
    out->handle = init.handle;
    return TJ_OK;
}

int tjj_buffer_live(tj_device *dev, tj_buffer buf)
{
    pthread_mutex_lock(&dev->buffers_lock);
    int live = map_get(dev, buf.handle) >= 0;
    pthread_mutex_unlock(&dev->buffers_lock);
    return live;
}

/* Never called with a buffers_lock held: finding the buffer's device takes
 * the other devices' (multi.c). */
tj_status tjj_dead_buffer(const char *who, const tj_device *dev, tj_buffer buf)
{
    if (buf.handle == 0)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: the buffer handle is 0 (no buffer)", who);
    char where[512];
    if (dev && tjj_buffer_elsewhere(dev, buf, where, sizeof where))
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: buffer 0x%llx %s", who, (unsigned long long)buf.handle,
                         where);
    return tjs_error(TJ_ERR_INVALID_ARG, "%s: buffer 0x%llx is not a live buffer of this device (freed?)",
                     who, (unsigned long long)buf.handle);
}

/* --- the API --------------------------------------------------------------- */

tj_status tj_buffer_alloc(tj_device *dev, size_t bytes, tj_buffer *out)
{
    TJJ_CONTEXT_SCOPE;
    static const char who[] = "tj_buffer_alloc";
    tj_status st = out_of(who, dev, out);
    if (st != TJ_OK)
        return st;
    if (bytes == 0)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: a buffer of 0 bytes", who);
    uint64_t addr = 0;
    st = dev->ops->alloc(dev, bytes, &addr);
    if (st != TJ_OK)
        return st;
    pthread_mutex_lock(&dev->buffers_lock);
    st = new_slot(dev, who, (buffer_slot){.addr = addr, .size = bytes}, out);
    pthread_mutex_unlock(&dev->buffers_lock);
    if (st != TJ_OK)
        dev->ops->free(dev, addr);
    return st;
}

tj_status tj_buffer_wrap(tj_device *dev, uint64_t address, size_t bytes, tj_buffer *out)
{
    TJJ_CONTEXT_SCOPE;
    static const char who[] = "tj_buffer_wrap";
    tj_status st = out_of(who, dev, out);
    if (st != TJ_OK)
        return st;
    if (!address || !bytes)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: %s", who, !address ? "the address is 0" : "a buffer of 0 bytes");
    st = dev->ops->check_foreign(dev, address, bytes, who);
    if (st != TJ_OK)
        return st;
    pthread_mutex_lock(&dev->buffers_lock);
    st = new_slot(dev, who, (buffer_slot){.addr = address, .size = bytes, .foreign = 1}, out);
    pthread_mutex_unlock(&dev->buffers_lock);
    return st;
}

tj_status tj_buffer_view(tj_device *dev, tj_buffer buf, size_t offset, size_t bytes, tj_buffer *out)
{
    TJJ_CONTEXT_SCOPE;
    static const char who[] = "tj_buffer_view";
    tj_status st = out_of(who, dev, out);
    if (st != TJ_OK)
        return st;
    if (!bytes)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: a view of 0 bytes", who);
    pthread_mutex_lock(&dev->buffers_lock);
    int64_t slot = map_get(dev, buf.handle);
    size_t end;
    if (slot < 0) {
        st = TJ_ERR_INVALID_ARG; /* reported below, without the lock */
    } else if (__builtin_add_overflow(offset, bytes, &end) || end > dev->slots[slot].size) {
        st = tjs_error(TJ_ERR_INVALID_ARG, "%s: %zu bytes at offset %zu do not fit in buffer 0x%llx of %zu bytes",
                       who, bytes, offset, (unsigned long long)buf.handle, dev->slots[slot].size);
    } else {
        /* a view of a view shows the memory's owner directly */
        const buffer_slot *b = &dev->slots[slot];
        uint32_t owner = b->owner ? b->owner : (uint32_t)slot + 1;
        st = new_slot(dev, who, (buffer_slot){.addr = b->addr + offset, .size = bytes, .foreign = 1,
                                               .owner = owner}, out);
        if (st == TJ_OK)
            dev->slots[owner - 1].uses++;
    }
    pthread_mutex_unlock(&dev->buffers_lock);
    if (slot < 0)
        st = tjj_dead_buffer(who, dev, buf);
    return st;
}

tj_status tj_buffer_address(tj_device *dev, tj_buffer buf, uint64_t *out)
{
    static const char who[] = "tj_buffer_address";
    tjs_clear_error();
    if (!out)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: out is NULL", who);
    *out = 0;
    if (!dev)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: dev is NULL", who);
    *out = tjj_buffer_address(dev, buf);
    return *out ? TJ_OK : tjj_dead_buffer(who, dev, buf);
}

tj_status tj_buffer_free(tj_device *dev, tj_buffer buf)
{
    TJJ_CONTEXT_SCOPE;
    tjs_clear_error();
    if (!dev)
        return tjs_error(TJ_ERR_INVALID_ARG, "tj_buffer_free: dev is NULL");
    tj_status st = dev->ops->enter(dev, "tj_buffer_free");
    if (st != TJ_OK)
        return st;
    uint64_t addr = 0;
    pthread_mutex_lock(&dev->buffers_lock);
    int64_t slot = map_get(dev, buf.handle);
    if (slot < 0) {
        pthread_mutex_unlock(&dev->buffers_lock);
        return tjj_dead_buffer("tj_buffer_free", dev, buf);
    }
    map_remove(dev, buf.handle);
    buffer_slot *s = &dev->slots[slot];
    s->handle = 0;
    if (done_with(dev, s))
        addr = recycle(dev, s);
    else
        dev->nheld++; /* its last use releases it */
    pthread_mutex_unlock(&dev->buffers_lock);
    if (addr)
        dev->ops->free(dev, addr);
    return TJ_OK;
}

/* The checks read and write share: a live buffer, a host pointer, and a
 * range [offset, offset + bytes) inside the buffer; the buffer is held in
 * *use for the copy. */
tj_status tjj_copy_target(const char *who, tj_device *dev, tj_buffer buf, size_t offset,
                          const void *host, size_t bytes, tjj_buffer_use *use)
{
    if (!dev)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: dev is NULL", who);
    if (!host)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: the host pointer is NULL", who);
    if (!tjj_buffer_acquire(dev, buf, use))
        return tjj_dead_buffer(who, dev, buf);
    size_t end;
    if (__builtin_add_overflow(offset, bytes, &end) || end > use->size) {
        tjj_buffer_release(dev, use);
        return tjs_error(TJ_ERR_INVALID_ARG,
                         "%s: %zu bytes at offset %zu do not fit in buffer 0x%llx of %zu bytes", who,
                         bytes, offset, (unsigned long long)buf.handle, use->size);
    }
    return TJ_OK;
}

tj_status tj_buffer_write(tj_device *dev, tj_buffer dst, size_t offset, const void *src,
                          size_t bytes)
{
    TJJ_CONTEXT_SCOPE;
    static const char who[] = "tj_buffer_write";
    tjs_clear_error();
    tjj_buffer_use use;
    tj_status st = tjj_copy_target(who, dev, dst, offset, src, bytes, &use);
    if (st != TJ_OK)
        return st;
    st = dev->ops->write(dev, use.addr + offset, src, bytes, who);
    tjj_buffer_release(dev, &use);
    return st;
}

tj_status tj_buffer_read(tj_device *dev, tj_buffer src, size_t offset, void *dst, size_t bytes)
{
    TJJ_CONTEXT_SCOPE;
    static const char who[] = "tj_buffer_read";
    tjs_clear_error();
    tjj_buffer_use use;
    tj_status st = tjj_copy_target(who, dev, src, offset, dst, bytes, &use);
    if (st != TJ_OK)
        return st;
    st = dev->ops->read(dev, dst, use.addr + offset, bytes, who);
    tjj_buffer_release(dev, &use);
    return st;
}

size_t tj_buffer_size(tj_device *dev, tj_buffer buf)
{
    tjs_clear_error();
    if (!dev) {
        tjs_error(TJ_ERR_INVALID_ARG, "tj_buffer_size: dev is NULL");
        return 0;
    }
    size_t size = 0;
    pthread_mutex_lock(&dev->buffers_lock);
    int64_t slot = map_get(dev, buf.handle);
    if (slot >= 0)
        size = dev->slots[slot].size;
    pthread_mutex_unlock(&dev->buffers_lock);
    if (slot < 0)
        tjj_dead_buffer("tj_buffer_size", dev, buf);
    return size;
}

uint64_t tjj_buffer_address(tj_device *dev, tj_buffer buf)
{
    if (!dev)
        return 0;
    pthread_mutex_lock(&dev->buffers_lock);
    int64_t slot = map_get(dev, buf.handle);
    uint64_t addr = slot >= 0 ? dev->slots[slot].addr : 0;
    pthread_mutex_unlock(&dev->buffers_lock);
    return addr;
}
