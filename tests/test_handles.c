/* SPDX-License-Identifier: MIT */
/*
 * test_handles.c — stale handles stay dead, and a buffer freed while in use
 * is not reused under the launch.
 *
 * Handles (issue 8, item 6) are checked by the real sequences that once
 * made them come back to life, each short enough to run in seconds:
 *   - a buffer of a closed device, used on each of the next 65,536 devices
 *     opened (a 16-bit device tag wrapped after 65,535 opens);
 *   - a freed buffer, looked up through 2^24 + 1 alloc/free cycles of the
 *     slot it had (a 24-bit generation wrapped);
 *   - a tj_val kept from one build and used 255 builds later (an 8-bit
 *     build serial wrapped after 255).
 *
 * A buffer freed while a launch uses it (item 5): a launch holds its
 * buffers from the moment it looks them up. The kernel body, which runs
 * while the launch compiles, blocks until the main thread has freed the
 * output buffer and allocated and poisoned new buffers of the same size —
 * the memory malloc (or cuMemAlloc) would hand out again. The launch then
 * writes its output; the new buffers must still hold their poison. On a GPU
 * the asynchronous case is checked too: a queued launch's output freed at
 * once, then new buffers written before the device is synchronized.
 */
#include <pthread.h>

#include "testlib.h"

static tj_device *dev;

enum { BLOCK = 256, NREUSE = 8 };

/* ---- item 6: stale handles ------------------------------------------------ */

static void test_closed_device_handle(void)
{
    tj_device *old = NULL;
    tj_buffer stale = {0};
    if (tj_device_open(&old, TJ_DEVICE_CPU, 0) != TJ_OK ||
        tj_buffer_alloc(old, 64, &stale) != TJ_OK) {
        tap_ok(0, "open a CPU device and allocate: %s", tj_last_error());
        return;
    }
    tj_device_close(old);
    int revived = 0, failed = 0;
    long at = -1;
    for (long i = 0; i < 65536 && !revived && !failed; i++) {
        tj_device *d = NULL;
        tj_buffer b;
        if (tj_device_open(&d, TJ_DEVICE_CPU, 0) != TJ_OK || tj_buffer_alloc(d, 64, &b) != TJ_OK) {
            failed = 1;
            tap_diag("open %ld: %s", i, tj_last_error());
        } else if (tj_buffer_size(d, stale) != 0 || b.handle == stale.handle) {
            revived = 1;
            at = i + 1;
        }
        tj_device_close(d);
    }
    tap_ok(!revived && !failed,
           "a closed device's buffer stays dead on each of the next 65,536 devices%s",
           revived ? " (it came back to life)" : "");
    if (revived)
        tap_diag("revived on the %ld-th device opened after its own closed", at);
}

static void test_freed_slot_handle(void)
{
    tj_device *d = NULL;
    tj_buffer stale;
    if (tj_device_open(&d, TJ_DEVICE_CPU, 0) != TJ_OK || tj_buffer_alloc(d, 16, &stale) != TJ_OK) {
        tap_ok(0, "open a CPU device and allocate: %s", tj_last_error());
        tj_device_close(d);
        return;
    }
    tj_buffer_free(d, stale);
    /* One buffer at a time: every allocation takes the slot stale had.
     * ThreadSanitizer makes each cycle ~100x dearer; its build (there for
     * races) runs 2^20, the others the whole sequence. */
#ifdef __SANITIZE_THREAD__
    long revived_at = -1, cycles = (1L << 20) + 1;
#else
    long revived_at = -1, cycles = (1L << 24) + 1;
#endif
    for (long i = 0; i < cycles && revived_at < 0; i++) {
        tj_buffer b;
        if (tj_buffer_alloc(d, 16, &b) != TJ_OK) {
            tap_diag("alloc %ld: %s", i, tj_last_error());
            revived_at = i;
            break;
        }
        if (b.handle == stale.handle || tj_buffer_size(d, stale) != 0)
            revived_at = i + 1;
        tj_buffer_free(d, b);
    }
    tap_ok(revived_at < 0, "a freed buffer stays dead through %ld reuses of its slot", cycles);
    if (revived_at >= 0)
        tap_diag("it came back after %ld reuses", revived_at);
    /* And it is reported as such, not as some other buffer. */
    tj_status st = tj_buffer_write(d, stale, 0, &cycles, sizeof cycles);
    tap_ok(st == TJ_ERR_INVALID_ARG && strstr(tj_last_error(), "not a live buffer"),
           "writing the stale buffer -> TJ_ERR_INVALID_ARG, 'not a live buffer' (got %s: %s)",
           tj_status_name(st), tj_last_error());
    tj_device_close(d);
}

static tj_val kept;

TJ_KERNEL(keep_value, TJ_PARAMS(TJ_PTR(out, f32)), TJ_CONSTS())
{
    kept = tj_arange(0, 8);
    tj_store(tj_add(out, kept), tj_cast(kept, TJ_F32));
}

TJ_KERNEL(other_build, TJ_PARAMS(TJ_PTR(out, f32)), TJ_CONSTS())
{
    tj_val o = tj_arange(0, 8);
    tj_store(tj_add(out, o), tj_cast(o, TJ_F32));
}

/* Uses the value kept from keep_value's build, in a build of its own. */
TJ_KERNEL(use_kept, TJ_PARAMS(TJ_PTR(out, f32)), TJ_CONSTS())
{
    tj_val o = tj_arange(0, 8);
    tj_store(tj_add(out, tj_add(o, kept)), tj_cast(o, TJ_F32));
}

static void test_stale_value(void)
{
    char *text = NULL;
    tj_status st = tj_kernel_ir(keep_value, NULL, 0, &text);
    free(text);
    int ok = st == TJ_OK;
    for (int i = 0; ok && i < 254; i++) {
        ok = tj_kernel_ir(other_build, NULL, 0, &text) == TJ_OK;
        free(text);
        text = NULL;
    }
    st = tj_kernel_ir(use_kept, NULL, 0, &text);
    free(text);
    tap_ok(ok && st == TJ_ERR_BUILD && strstr(tj_last_error(), "test_handles.c") &&
               strstr(tj_last_error(), "not a value of this kernel"),
           "a tj_val kept from a build 255 builds earlier -> TJ_ERR_BUILD naming the line "
           "(got %s: %s)", tj_status_name(st), tj_last_error());
}

/* ---- item 5: a buffer freed while a launch uses it ------------------------ */

static pthread_mutex_t hold_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hold_cond = PTHREAD_COND_INITIALIZER;
static int hold_entered, hold_released;

/* Waits (at most 60 s) until flag is set; returns whether it was. */
static int wait_for(int *flag)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 60;
    pthread_mutex_lock(&hold_lock);
    while (!*flag && pthread_cond_timedwait(&hold_cond, &hold_lock, &until) == 0)
        ;
    int set = *flag;
    pthread_mutex_unlock(&hold_lock);
    return set;
}

static void set_flag(int *flag)
{
    pthread_mutex_lock(&hold_lock);
    *flag = 1;
    pthread_cond_broadcast(&hold_cond);
    pthread_mutex_unlock(&hold_lock);
}

/* out[i] = 7 over the grid; its first build waits for the main thread. */
TJ_KERNEL(fill_held, TJ_PARAMS(TJ_PTR(out, i32)), TJ_CONSTS(HOLD))
{
    if (HOLD) {
        set_flag(&hold_entered);
        wait_for(&hold_released);
    }
    tj_val o = tj_add(tj_mul(tj_program_id(0), BLOCK), tj_arange(0, BLOCK));
    tj_store(tj_add(out, o), tj_full(TJ_SHAPE(BLOCK), 7, TJ_I32));
}

typedef struct held_launch {
    tj_buffer out;
    int grid;
    tj_status st;
    char message[512];
} held_launch;

static void *launch_held(void *arg)
{
    held_launch *h = arg;
    tj_launch_cfg cfg = {.grid = {h->grid}};
    h->st = fill_held_launch(dev, &cfg, h->out, 1);
    snprintf(h->message, sizeof h->message, "%s", tj_last_error());
    if (h->st == TJ_OK)
        h->st = tj_synchronize(dev);
    return NULL;
}

/* Allocates NREUSE buffers of bytes, each poisoned with 0x5a; 0 if not. */
static int alloc_poisoned(size_t bytes, tj_buffer *bufs, unsigned char *poison)
{
    memset(poison, 0x5a, bytes);
    for (int i = 0; i < NREUSE; i++)
        if (tj_buffer_alloc(dev, bytes, &bufs[i]) != TJ_OK ||
            tj_buffer_write(dev, bufs[i], 0, poison, bytes) != TJ_OK)
            return 0;
    return 1;
}

/* How many of the buffers lost their poison; frees them. */
static int count_overwritten(size_t bytes, tj_buffer *bufs, const unsigned char *poison)
{
    unsigned char *got = malloc(bytes);
    int overwritten = 0;
    for (int i = 0; i < NREUSE; i++) {
        memset(got, 0, bytes);
        if (tj_buffer_read(dev, bufs[i], 0, got, bytes) != TJ_OK || memcmp(got, poison, bytes))
            overwritten++;
        tj_buffer_free(dev, bufs[i]);
    }
    free(got);
    return overwritten;
}

static void test_free_during_launch(void)
{
    held_launch h = {.grid = (int)tl_rand_range(4, 16)};
    size_t bytes = (size_t)h.grid * BLOCK * sizeof(int32_t);
    if (tj_buffer_alloc(dev, bytes, &h.out) != TJ_OK) {
        tap_ok(0, "alloc: %s", tj_last_error());
        return;
    }
    pthread_t t;
    pthread_create(&t, NULL, launch_held, &h);
    int entered = wait_for(&hold_entered);
    tj_status st = tj_buffer_free(dev, h.out);
    char free_message[512];
    snprintf(free_message, sizeof free_message, "%s", tj_last_error());
    tj_buffer bufs[NREUSE];
    unsigned char *poison = malloc(bytes);
    int allocated = alloc_poisoned(bytes, bufs, poison);
    set_flag(&hold_released);
    pthread_join(t, NULL);
    tap_ok(entered, "the launch's kernel body ran (and waited) while the main thread freed");
    tap_ok(st == TJ_OK, "freeing a buffer in use by a launch -> TJ_OK (deferred) (got %s: %s)",
           tj_status_name(st), free_message);
    tap_ok(h.st == TJ_OK, "the launch itself succeeds (got %s: %s)", tj_status_name(h.st),
           h.message);
    tap_ok(tj_buffer_size(dev, h.out) == 0, "the freed buffer's handle is dead at once");
    int overwritten = allocated ? count_overwritten(bytes, bufs, poison) : NREUSE;
    tap_ok(allocated && overwritten == 0,
           "buffers allocated after the free keep their poison (%d of %d overwritten by the launch)",
           overwritten, NREUSE);
    free(poison);
}

/* GPU: a queued launch's output freed before the launch has run. (On the
 * CPU a launch has finished when it returns; the sequence must hold too.) */
static void test_free_after_async_launch(void)
{
    int grid = (int)tl_rand_range(2048, 4096);
    size_t bytes = (size_t)grid * BLOCK * sizeof(int32_t);
    tj_buffer out;
    if (tj_buffer_alloc(dev, bytes, &out) != TJ_OK) {
        tap_ok(0, "alloc: %s", tj_last_error());
        return;
    }
    tj_launch_cfg cfg = {.grid = {grid}};
    int ok = 1;
    for (int rep = 0; rep < 4 && ok; rep++)
        ok = fill_held_launch(dev, &cfg, out, 0) == TJ_OK;
    tj_status st = tj_buffer_free(dev, out);
    tj_buffer bufs[NREUSE];
    unsigned char *poison = malloc(bytes);
    int allocated = alloc_poisoned(bytes, bufs, poison);
    tj_status sync = tj_synchronize(dev);
    int overwritten = allocated ? count_overwritten(bytes, bufs, poison) : NREUSE;
    tap_ok(ok && st == TJ_OK && sync == TJ_OK && allocated && overwritten == 0,
           "a buffer freed right after queued launches: new buffers keep their poison "
           "(%d of %d overwritten; %s)", overwritten, NREUSE, tj_last_error());
    free(poison);
}

int main(void)
{
    dev = tl_setup("test_handles");
    tap_plan(10);
    test_closed_device_handle();
    test_freed_slot_handle();
    test_stale_value();
    test_free_during_launch();
    test_free_after_async_launch();
    tj_device_close(dev);
    return tap_done();
}
