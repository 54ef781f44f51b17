/* SPDX-License-Identifier: MIT */
/*
 * test_buffer_views.c — memory tjit does not own (tj_buffer_wrap), parts of
 * buffers (tj_buffer_view) and raw addresses (tj_buffer_address), on the
 * CPU and (tests/gpu/test_buffer_views.gpu) the GPU.
 *
 * A kernel adds one to n floats from src into dst, launched on:
 *  - wrapped memory: on the CPU the test's own malloc'ed arrays, read back
 *    without tjit, and freed by the test after tj_buffer_free (so ASan would
 *    see tjit free them twice); on a GPU the address of another buffer
 *    (memory the driver knows, allocated by someone else's call);
 *  - views at offsets of 16 bytes and of 4 bytes (an address no 16-byte
 *    vector may assume), whose neighbours must stay untouched; a view of a
 *    view; a view outliving its buffer;
 *  - src and dst overlapping views of one buffer, shifted by one element
 *    (dst[i] = src[i + 1] + 1 in place, one program): the launch must see
 *    the overlap and get what the loop in C gets.
 * Bad inputs each get their error: a view out of range or of 0 bytes, of a
 * freed buffer, a wrap of address 0, of 0 bytes, and on a GPU of memory the
 * driver does not know and past the end of an allocation.
 */
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "testlib.h"

TJ_KERNEL(add_one, TJ_PARAMS(TJ_PTR(src, f32), TJ_PTR(dst, f32), TJ_SCALAR(n, i32)), TJ_CONSTS(BLOCK))
{
    tj_val offs = tj_add(tj_mul(tj_program_id(0), BLOCK), tj_arange(0, BLOCK));
    tj_val mask = tj_lt(offs, n);
    tj_store(tj_add(dst, offs), tj_add(tj_load(tj_add(src, offs), .mask = mask), tj_f32(1)), .mask = mask);
}

enum { N = 1000, BLOCK = 256 };

static tj_device *dev;

static tj_status launch(tj_buffer src, tj_buffer dst, int n)
{
    tj_launch_cfg cfg = tl_grid((n + BLOCK - 1) / BLOCK, 1, 1);
    return add_one_launch(dev, &cfg, src, dst, n, BLOCK);
}

static float *random_floats(size_t n)
{
    float *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)tl_rand_range(-1000, 1000) / 8;
    return x;
}

/* dst (of `total` floats, the first `at` untouched, then n written, the
 * rest untouched) against src; poison 0xAB bytes where untouched. */
static int check_written(const float *dst, size_t total, size_t at, const float *src, size_t n)
{
    for (size_t i = 0; i < total; i++) {
        uint32_t bits;
        memcpy(&bits, &dst[i], 4);
        int inside = i >= at && i < at + n;
        if (inside ? dst[i] != src[i - at] + 1 : bits != 0xABABABABu) {
            tap_diag("element %zu: %g (%s)", i, (double)dst[i], inside ? "written" : "should be untouched");
            return 0;
        }
    }
    return 1;
}

/* A buffer of n floats holding x (or poison where x is NULL). */
static tj_buffer upload(const float *x, size_t n)
{
    tj_buffer b = {0};
    if (tj_buffer_alloc(dev, n * 4, &b) != TJ_OK)
        tap_bail_out("tj_buffer_alloc: %s", tj_last_error());
    if (x)
        tj_buffer_write(dev, b, 0, x, n * 4);
    else {
        unsigned char *p = malloc(n * 4);
        memset(p, 0xAB, n * 4);
        tj_buffer_write(dev, b, 0, p, n * 4);
        free(p);
    }
    return b;
}

static void wrapped_host(void)
{
    float *src = random_floats(N), *dst = malloc(N * sizeof *dst);
    memset(dst, 0xAB, N * sizeof *dst);
    tj_buffer s, d;
    tj_status st = tj_buffer_wrap(dev, (uint64_t)(uintptr_t)src, N * 4, &s);
    if (st == TJ_OK)
        st = tj_buffer_wrap(dev, (uint64_t)(uintptr_t)dst, N * 4, &d);
    if (st == TJ_OK)
        st = launch(s, d, N);
    if (st == TJ_OK)
        st = tj_synchronize(dev);
    uint64_t addr = 0;
    int same = tj_buffer_address(dev, d, &addr) == TJ_OK && addr == (uint64_t)(uintptr_t)dst;
    tap_ok(st == TJ_OK && same && check_written(dst, N, 0, src, N),
           "CPU: a launch on wrapped host arrays writes them in place; tj_buffer_address is the pointer");
    if (st != TJ_OK)
        tap_diag("%s", tj_last_error());
    tap_ok(tj_buffer_free(dev, s) == TJ_OK && tj_buffer_free(dev, d) == TJ_OK && src[N - 1] == src[N - 1],
           "freeing the handles leaves the memory to its owner (the test frees it)");
    free(src);
    free(dst);
}

static void wrapped_device(void)
{
    float *src = random_floats(N), *got = malloc(N * sizeof *got);
    tj_buffer a = upload(src, N), b = upload(NULL, N), s = {0}, d = {0};
    uint64_t pa = 0, pb = 0;
    tj_status st = tj_buffer_address(dev, a, &pa);
    if (st == TJ_OK)
        st = tj_buffer_address(dev, b, &pb);
    if (st == TJ_OK)
        st = tj_buffer_wrap(dev, pa, N * 4, &s);
    if (st == TJ_OK)
        st = tj_buffer_wrap(dev, pb, N * 4, &d);
    if (st == TJ_OK)
        st = launch(s, d, N);
    if (st == TJ_OK)
        st = tj_buffer_read(dev, b, 0, got, N * 4);
    tap_ok(st == TJ_OK && pa && pb && check_written(got, N, 0, src, N),
           "GPU: wrapped device addresses (another buffer's memory) run a launch");
    if (st != TJ_OK)
        tap_diag("%s", tj_last_error());
    tj_status bad = tj_buffer_wrap(dev, 0x1000, 64, &d);
    tap_ok(bad == TJ_ERR_INVALID_ARG && strstr(tj_last_error(), "tj_buffer_wrap") &&
               strstr(tj_last_error(), "0x1000"),
           "GPU: wrapping memory the driver does not know is refused: %s", tj_last_error());
    bad = tj_buffer_wrap(dev, pa + 64, (size_t)1 << 30, &d); /* a GiB: past any rounding of 4000 bytes */
    tap_ok(bad == TJ_ERR_INVALID_ARG && strstr(tj_last_error(), "past the end of its allocation"),
           "GPU: wrapping past the end of an allocation is refused: %s", tj_last_error());
    tj_buffer_free(dev, s);
    tj_buffer_free(dev, a);
    tj_buffer_free(dev, b);
    free(src);
    free(got);
}

/* src's first n floats into a view of dst at byte offset `at` (a multiple
 * of 4): everything else of dst untouched. */
static void view_at(size_t at, const char *what)
{
    size_t total = N + 8, n = N;
    float *src = random_floats(n), *got = malloc(total * sizeof *got);
    tj_buffer a = upload(src, n), b = upload(NULL, total), v = {0};
    tj_status st = tj_buffer_view(dev, b, at, n * 4, &v);
    uint64_t pb = 0, pv = 0;
    if (st == TJ_OK)
        st = tj_buffer_address(dev, b, &pb);
    if (st == TJ_OK)
        st = tj_buffer_address(dev, v, &pv);
    if (st == TJ_OK)
        st = launch(a, v, (int)n);
    if (st == TJ_OK)
        st = tj_buffer_read(dev, b, 0, got, total * 4);
    tap_ok(st == TJ_OK && pv == pb + at && tj_buffer_size(dev, v) == n * 4 &&
               check_written(got, total, at / 4, src, n),
           "%s: a view at byte %zu is written, its neighbours are not", what, at);
    if (st != TJ_OK)
        tap_diag("%s", tj_last_error());
    tj_buffer_free(dev, v);
    tj_buffer_free(dev, a);
    tj_buffer_free(dev, b);
    free(src);
    free(got);
}

/* A view of a view, used after its buffer and the middle view are freed. */
static void view_outlives(void)
{
    size_t total = N + 16;
    float *src = random_floats(N), *got = malloc(N * sizeof *got);
    tj_buffer a = upload(src, N), b = upload(NULL, total), mid = {0}, inner = {0};
    tj_status st = tj_buffer_view(dev, b, 32, (N + 8) * 4, &mid);
    if (st == TJ_OK)
        st = tj_buffer_view(dev, mid, 16, N * 4, &inner);
    if (st == TJ_OK)
        st = tj_buffer_free(dev, b);
    if (st == TJ_OK)
        st = tj_buffer_free(dev, mid);
    if (st == TJ_OK)
        st = launch(a, inner, N);
    if (st == TJ_OK)
        st = tj_buffer_read(dev, inner, 0, got, N * 4);
    tap_ok(st == TJ_OK && check_written(got, N, 0, src, N),
           "a view of a view still works after its buffer and the middle view are freed");
    if (st != TJ_OK)
        tap_diag("%s", tj_last_error());
    tap_ok(tj_buffer_free(dev, inner) == TJ_OK && tj_synchronize(dev) == TJ_OK && tj_buffer_size(dev, b) == 0,
           "freeing the last view lets the memory go (the handles stay dead)");
    tj_buffer_free(dev, a);
    free(src);
    free(got);
}

/* dst[i] = src[i + 1] + 1 with src and dst views of one buffer, in one
 * program (programs run in no order, so only a program's own accesses
 * are ordered): its loads must all happen before its stores, which on a
 * GPU takes the barrier that the aliasing key brings (thread t stores
 * element t, which thread t - 1 loads). */
static void overlapping_views(void)
{
    enum { M = BLOCK - 8 };
    float *x = random_floats(M + 1), *got = malloc((M + 1) * sizeof *got);
    tj_buffer b = upload(x, M + 1), s = {0}, d = {0};
    tj_status st = tj_buffer_view(dev, b, 4, M * 4, &s);
    if (st == TJ_OK)
        st = tj_buffer_view(dev, b, 0, M * 4, &d);
    if (st == TJ_OK)
        st = launch(s, d, M);
    if (st == TJ_OK)
        st = tj_buffer_read(dev, b, 0, got, (M + 1) * 4);
    int bad = -1;
    for (int i = 0; st == TJ_OK && i < M && bad < 0; i++)
        if (got[i] != x[i + 1] + 1)
            bad = i;
    tap_ok(st == TJ_OK && bad < 0 && got[M] == x[M],
           "overlapping views (dst[i] = src[i + 1] + 1 in place, one program) give the C loop's result");
    if (bad >= 0)
        tap_diag("element %d: %g, expected %g", bad, (double)got[bad], (double)(x[bad + 1] + 1));
    tj_buffer_free(dev, s);
    tj_buffer_free(dev, d);
    tj_buffer_free(dev, b);
    free(x);
    free(got);
}

static void bad_inputs(void)
{
    tj_buffer b = upload(NULL, 16), v = {1};
    tap_ok(tj_buffer_view(dev, b, 32, 40, &v) == TJ_ERR_INVALID_ARG && v.handle == 0 &&
               strstr(tj_last_error(), "do not fit in buffer"),
           "a view past its buffer's end is refused: %s", tj_last_error());
    tap_ok(tj_buffer_view(dev, b, 0, 0, &v) == TJ_ERR_INVALID_ARG && strstr(tj_last_error(), "0 bytes"),
           "a view of 0 bytes is refused");
    tap_ok(tj_buffer_view(dev, b, SIZE_MAX, 8, &v) == TJ_ERR_INVALID_ARG,
           "a view whose end overflows is refused");
    tj_buffer_free(dev, b);
    tap_ok(tj_buffer_view(dev, b, 0, 8, &v) == TJ_ERR_INVALID_ARG && strstr(tj_last_error(), "freed"),
           "a view of a freed buffer is refused: %s", tj_last_error());
    uint64_t addr = 1;
    tap_ok(tj_buffer_address(dev, b, &addr) == TJ_ERR_INVALID_ARG && addr == 0,
           "the address of a freed buffer is an error, and 0");
    tap_ok(tj_buffer_wrap(dev, 0, 8, &v) == TJ_ERR_INVALID_ARG && strstr(tj_last_error(), "address is 0"),
           "wrapping address 0 is refused");
    float x;
    tap_ok(tj_buffer_wrap(dev, (uint64_t)(uintptr_t)&x, 0, &v) == TJ_ERR_INVALID_ARG,
           "wrapping 0 bytes is refused");
    tap_ok(tj_buffer_wrap(NULL, 16, 8, &v) == TJ_ERR_INVALID_ARG && tj_buffer_view(dev, b, 0, 8, NULL) ==
               TJ_ERR_INVALID_ARG && tj_buffer_address(dev, b, NULL) == TJ_ERR_INVALID_ARG,
           "NULL devices and outputs are refused");
}

int main(void)
{
    dev = tl_setup("test_buffer_views");
    int gpu = tl_device_kind() == TJ_DEVICE_GPU;
    tap_plan(gpu ? 16 : 15);
    if (gpu)
        wrapped_device();
    else
        wrapped_host();
    view_at(16, "16-byte aligned");
    view_at(4, "4 bytes in (no 16-byte vectors)");
    view_outlives();
    overlapping_views();
    bad_inputs();
    tj_device_close(dev);
    return tap_done();
}
