/* SPDX-License-Identifier: MIT */
/*
 * test_api.c — the host API: version, status and dtype names, 16-bit float
 * helpers, devices, buffers (and their errors), tj_kernel_ir, the typed and
 * the generic launch agreeing, the compiled-variant cache keeping variants
 * apart, and launches from several threads on one device.
 */
#include <pthread.h>

#include "testlib.h"

static tj_device *dev;

/* ---- version, names, helpers --------------------------------------------- */

static void test_version(void)
{
    char expect[32];
    snprintf(expect, sizeof expect, "%d.%d.%d", TJ_VERSION_MAJOR, TJ_VERSION_MINOR,
             TJ_VERSION_PATCH);
    tap_ok(strcmp(tj_version(), TJ_VERSION_STRING) == 0 && strcmp(expect, TJ_VERSION_STRING) == 0,
           "tj_version() \"%s\" == TJ_VERSION_STRING \"%s\"", tj_version(), TJ_VERSION_STRING);
    tap_ok(tj_version_number() == TJ_VERSION_NUMBER &&
               TJ_VERSION_NUMBER ==
                   TJ_VERSION_MAJOR * 10000 + TJ_VERSION_MINOR * 100 + TJ_VERSION_PATCH,
           "tj_version_number() %d == TJ_VERSION_NUMBER %d", tj_version_number(),
           TJ_VERSION_NUMBER);
}

static void test_names(void)
{
    static const char *const status[] = {
        "TJ_OK", "TJ_ERR_INVALID_ARG", "TJ_ERR_SHAPE", "TJ_ERR_TYPE", "TJ_ERR_BUILD",
        "TJ_ERR_COMPILE", "TJ_ERR_LAUNCH", "TJ_ERR_DEVICE", "TJ_ERR_OUT_OF_MEMORY",
        "TJ_ERR_ASSERT", "TJ_ERR_UNSUPPORTED"};
    int bad = 0;
    for (int s = 0; s <= TJ_ERR_UNSUPPORTED; s++)
        if (strcmp(tj_status_name((tj_status)s), status[s]) != 0) {
            tap_diag("  status %d is named %s", s, tj_status_name((tj_status)s));
            bad++;
        }
    tap_ok(!bad, "tj_status_name names every status");
    const char *unknown = tj_status_name((tj_status)1234);
    tap_ok(unknown && *unknown, "tj_status_name of an unknown status gives a string (\"%s\")",
           unknown ? unknown : "(null)");

    static const char *const names[] = {"i1", "i8", "i16", "i32", "i64", "u8", "u16",
                                        "u32", "u64", "f16", "bf16", "f32", "f64",
                                        "f8e4m3", "f8e5m2"};
    static const size_t sizes[] = {1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 2, 4, 8, 1, 1};
    bad = 0;
    for (int t = 0; t < TJ_DTYPE_COUNT; t++)
        if (strcmp(tj_dtype_name((tj_dtype)t), names[t]) != 0 ||
            tj_dtype_size((tj_dtype)t) != sizes[t]) {
            tap_diag("  dtype %d: %s, %zu bytes", t, tj_dtype_name((tj_dtype)t),
                     tj_dtype_size((tj_dtype)t));
            bad++;
        }
    tap_ok(!bad, "tj_dtype_name and tj_dtype_size of every dtype");
}

static void test_half_helpers(void)
{
    int ok = tj_f32_to_f16(1.0f) == 0x3c00 && tj_f32_to_f16(-2.0f) == 0xc000 &&
             tj_f32_to_f16(65504.0f) == 0x7bff && tj_f32_to_f16(1e6f) == 0x7c00 &&
             tj_f16_to_f32(0x3555) == 0x1.554p-2f && tj_f16_to_f32(0x0001) == 0x1p-24f &&
             tj_f32_to_f16(1.0f + 0x1p-11f) == 0x3c00 &&    /* tie to even */
             tj_f32_to_f16(1.0f + 0x3p-11f) == 0x3c02;
    tap_ok(ok, "tj_f32_to_f16 / tj_f16_to_f32 on known values");
    ok = tj_f32_to_bf16(1.0f) == 0x3f80 && tj_f32_to_bf16(-3.0f) == 0xc040 &&
         tj_bf16_to_f32(0x4049) == 3.140625f && tj_f32_to_bf16(1.0f + 0x1p-8f) == 0x3f80 &&
         tj_f32_to_bf16(1.0f + 0x3p-8f) == 0x3f82 && isnan(tj_bf16_to_f32(tj_f32_to_bf16(NAN)));
    tap_ok(ok, "tj_f32_to_bf16 / tj_bf16_to_f32 on known values");
}

/* ---- devices and buffers ------------------------------------------------- */

static void test_device(void)
{
    const char *name = tj_device_name(dev);
    tap_ok(name && strstr(name, "cpu"), "tj_device_name of the CPU device: \"%s\"",
           name ? name : "(null)");
    tap_ok(tj_device_get_kind(dev) == TJ_DEVICE_CPU, "tj_device_get_kind is TJ_DEVICE_CPU");
    tap_ok(tj_synchronize(dev) == TJ_OK, "tj_synchronize on the CPU");
    char threads[48];
    snprintf(threads, sizeof threads, ", %d thread", tj_device_processors(dev));
    tap_ok(tj_device_processors(dev) >= 1 && strstr(name, threads),
           "tj_device_processors of the CPU device: its %d worker threads", tj_device_processors(dev));
    tap_ok(tj_device_processors(NULL) == 0 && strstr(tj_last_error(), "tj_device_processors"),
           "tj_device_processors(NULL) is 0, with an error");

    tj_device *d2 = NULL;
    setenv("TJIT_DEVICE", "cpu", 1);
    tj_status st = tj_device_open(&d2, TJ_DEVICE_DEFAULT, 0);
    tap_ok(st == TJ_OK && d2 && tj_device_get_kind(d2) == TJ_DEVICE_CPU,
           "TJIT_DEVICE=cpu makes the default device the CPU (%s)", tj_status_name(st));
    unsetenv("TJIT_DEVICE");
    if (st == TJ_OK)
        tj_device_close(d2);

    /* A GPU may or may not be here: it opens, or fails with a message. */
    d2 = NULL;
    st = tj_device_open(&d2, TJ_DEVICE_GPU, 0);
    if (st == TJ_OK) {
        char sms[48];
        snprintf(sms, sizeof sms, ", %d SMs)", tj_device_processors(d2));
        tap_ok(d2 && tj_device_get_kind(d2) == TJ_DEVICE_GPU && tj_device_processors(d2) > 0 &&
                   strstr(tj_device_name(d2), sms),
               "a GPU device opens: %s, %d processors", tj_device_name(d2), tj_device_processors(d2));
        tj_device_close(d2);
    } else {
        tap_ok(*tj_last_error() != '\0', "no GPU: tj_device_open fails with a message (%s: %s)",
               tj_status_name(st), tj_last_error());
    }
    st = tj_device_open(NULL, TJ_DEVICE_CPU, 0);
    tap_ok(st == TJ_ERR_INVALID_ARG, "tj_device_open(NULL, ...) -> TJ_ERR_INVALID_ARG (got %s)",
           tj_status_name(st));
}

static void test_buffers(void)
{
    enum { BYTES = 1000 };
    unsigned char data[BYTES], back[BYTES];
    for (int i = 0; i < BYTES; i++)
        data[i] = (unsigned char)tl_rand_u64();
    tj_buffer b = {0};
    tj_status st = tj_buffer_alloc(dev, BYTES, &b);
    tap_ok(st == TJ_OK && b.handle != 0, "tj_buffer_alloc of %d bytes gives a handle", BYTES);
    tap_ok(tj_buffer_size(dev, b) == BYTES, "tj_buffer_size is %d (got %zu)", BYTES,
           tj_buffer_size(dev, b));
    st = tj_buffer_write(dev, b, 0, data, BYTES);
    memset(back, 0, sizeof back);
    tj_status st2 = tj_buffer_read(dev, b, 0, back, BYTES);
    tap_ok(st == TJ_OK && st2 == TJ_OK && memcmp(data, back, BYTES) == 0,
           "tj_buffer_write then tj_buffer_read give the bytes back");

    /* Partial writes and reads at offsets. */
    unsigned char patch[100], part[300];
    for (int i = 0; i < 100; i++)
        patch[i] = (unsigned char)tl_rand_u64();
    st = tj_buffer_write(dev, b, 450, patch, 100);
    memcpy(data + 450, patch, 100);
    st2 = tj_buffer_read(dev, b, 400, part, 300);
    tap_ok(st == TJ_OK && st2 == TJ_OK && memcmp(part, data + 400, 300) == 0,
           "a write at offset 450 and a read at offset 400 see each other");
    st = tj_buffer_read(dev, b, BYTES - 1, part, 1);
    tap_ok(st == TJ_OK && part[0] == data[BYTES - 1], "reading the last byte");

    /* Out of bounds and bad handles. */
    st = tj_buffer_read(dev, b, 900, part, 101);
    tap_ok(st == TJ_ERR_INVALID_ARG, "a read past the end -> TJ_ERR_INVALID_ARG (got %s)",
           tj_status_name(st));
    st = tj_buffer_write(dev, b, BYTES + 1, patch, 0);
    tap_ok(st == TJ_ERR_INVALID_ARG, "a write at an offset past the end -> TJ_ERR_INVALID_ARG (got %s)",
           tj_status_name(st));
    st = tj_buffer_write(dev, b, SIZE_MAX - 10, patch, 100);
    tap_ok(st == TJ_ERR_INVALID_ARG,
           "a write whose offset + size overflows -> TJ_ERR_INVALID_ARG (got %s)",
           tj_status_name(st));
    st = tj_buffer_write(dev, (tj_buffer){0}, 0, patch, 10);
    tap_ok(st == TJ_ERR_INVALID_ARG && *tj_last_error(),
           "tj_buffer_write to the zero handle -> TJ_ERR_INVALID_ARG (got %s: %s)",
           tj_status_name(st), tj_last_error());
    st = tj_buffer_read(dev, (tj_buffer){0}, 0, part, 10);
    tap_ok(st == TJ_ERR_INVALID_ARG && *tj_last_error(),
           "tj_buffer_read of the zero handle -> TJ_ERR_INVALID_ARG (got %s)", tj_status_name(st));
    st = tj_buffer_write(dev, (tj_buffer){0xdeadbeef}, 0, patch, 10);
    tap_ok(st == TJ_ERR_INVALID_ARG, "a made-up handle -> TJ_ERR_INVALID_ARG (got %s)",
           tj_status_name(st));
    st = tj_buffer_write(dev, b, 0, NULL, 10);
    tap_ok(st == TJ_ERR_INVALID_ARG, "tj_buffer_write from NULL -> TJ_ERR_INVALID_ARG (got %s)",
           tj_status_name(st));

    st = tj_buffer_free(dev, b);
    tap_ok(st == TJ_OK, "tj_buffer_free");
    tap_ok(tj_buffer_size(dev, b) == 0, "tj_buffer_size of a freed buffer is 0");
    st = tj_buffer_write(dev, b, 0, patch, 10);
    const char *msg = tj_last_error();
    tap_ok(st == TJ_ERR_INVALID_ARG && (strstr(msg, "freed") || strstr(msg, "invalid")),
           "tj_buffer_write to a freed buffer -> TJ_ERR_INVALID_ARG, says freed/invalid (%s: %s)",
           tj_status_name(st), msg);
    st = tj_buffer_read(dev, b, 0, part, 10);
    msg = tj_last_error();
    tap_ok(st == TJ_ERR_INVALID_ARG && (strstr(msg, "freed") || strstr(msg, "invalid")),
           "tj_buffer_read of a freed buffer -> TJ_ERR_INVALID_ARG, says freed/invalid (%s: %s)",
           tj_status_name(st), msg);
    st = tj_buffer_free(dev, b);
    tap_ok(st == TJ_ERR_INVALID_ARG, "freeing a buffer twice -> TJ_ERR_INVALID_ARG (got %s)",
           tj_status_name(st));

    /* A new buffer does not bring the old handle back to life. */
    tj_buffer c = {0};
    tj_buffer_alloc(dev, 64, &c);
    tap_ok(c.handle != b.handle && tj_buffer_size(dev, b) == 0,
           "a new buffer gets a new handle; the freed one stays invalid");
    tj_buffer_free(dev, c);

    /* Out of memory. */
    tj_buffer huge = {0};
    st = tj_buffer_alloc(dev, SIZE_MAX / 4, &huge);
    tap_ok(st == TJ_ERR_OUT_OF_MEMORY && *tj_last_error(),
           "tj_buffer_alloc(SIZE_MAX / 4) -> TJ_ERR_OUT_OF_MEMORY (got %s: %s)",
           tj_status_name(st), tj_last_error());
    st = tj_buffer_alloc(dev, 16, NULL);
    tap_ok(st == TJ_ERR_INVALID_ARG, "tj_buffer_alloc(..., NULL) -> TJ_ERR_INVALID_ARG (got %s)",
           tj_status_name(st));
    st = tj_buffer_alloc(NULL, 16, &huge);
    tap_ok(st == TJ_ERR_INVALID_ARG, "tj_buffer_alloc(NULL, ...) -> TJ_ERR_INVALID_ARG (got %s)",
           tj_status_name(st));

    /* The device still works: a buffer round trip. */
    tj_buffer d = tl_upload(dev, data, BYTES);
    memset(back, 0, sizeof back);
    tl_download(dev, d, back, BYTES);
    tap_ok(memcmp(back, data, BYTES) == 0, "buffers still work after the errors");
    tj_buffer_free(dev, d);

    /* Buffers of another device are not this device's. */
    tj_device *other = NULL;
    if (tj_device_open(&other, TJ_DEVICE_CPU, 0) == TJ_OK) {
        tj_buffer e = tl_upload(other, data, BYTES);
        tj_buffer mine = tl_upload(dev, data, 16);
        int clash = e.handle == mine.handle;
        st = tj_buffer_read(dev, e, 0, back, BYTES);
        tap_ok(clash || st == TJ_ERR_INVALID_ARG,
               "reading another device's buffer -> TJ_ERR_INVALID_ARG (got %s)",
               tj_status_name(st));
        /* Closing a device with live buffers frees them. */
        tj_device_close(other);
        tap_ok(1, "closing a device with a live buffer");
        tj_buffer_free(dev, mine);
    }
}

/* ---- kernels: IR text, typed vs generic launch, variants ------------------ */

/* out = x * SCALE + y (masked), a kernel with several params and consts. */
static int axpy_store_line;
TJ_KERNEL(axpy, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(y, f32), TJ_PTR(out, f32), TJ_SCALAR(n, i32)),
          TJ_CONSTS(SCALE, BLOCK))
{
    tj_val offs = tj_add(tj_mul(tj_program_id(0), BLOCK), tj_arange(0, BLOCK));
    tj_val mask = tj_lt(offs, n);
    tj_val a = tj_load(tj_add(x, offs), .mask = mask);
    tj_val b = tj_load(tj_add(y, offs), .mask = mask);
    axpy_store_line = __LINE__ + 1;
    tj_store(tj_add(out, offs), tj_add(tj_mul(a, SCALE), b), .mask = mask);
}

static void test_kernel_ir(void)
{
    char *text = NULL;
    int64_t consts[] = {3, 64};
    tj_status st = tj_kernel_ir(axpy, consts, 2, &text);
    int ok = st == TJ_OK && text;
    if (!ok)
        tap_diag("  %s: %s", tj_status_name(st), tj_last_error());
    tap_ok(ok, "tj_kernel_ir builds a kernel without launching it");
    if (ok) {
        static const char *const words[] = {"axpy", "load", "store", "arange", "program_id",
                                            "mul", "add"};
        int missing = 0;
        for (size_t i = 0; i < TL_COUNT(words); i++)
            if (!strstr(text, words[i])) {
                tap_diag("  the IR text lacks \"%s\"", words[i]);
                missing++;
            }
        if (missing)
            tap_diag("%s", text);
        tap_ok(!missing, "the IR text names the kernel and its ops");
        /* Ops carry their source lines. */
        char line[32];
        snprintf(line, sizeof line, "%d", axpy_store_line);
        tap_ok(strstr(text, line) != NULL, "the IR text carries the store's source line %d",
               axpy_store_line);
    } else {
        tap_skip(2, "no IR text");
    }
    free(text);
    text = NULL;
    st = tj_kernel_ir(axpy, consts, 1, &text);
    tap_ok(st != TJ_OK && tl_error_mentions("axpy", NULL),
           "tj_kernel_ir with 1 constant for 2 fails naming the kernel (got %s)",
           tj_status_name(st));
    free(text);
    st = tj_kernel_ir(axpy, consts, 2, NULL);
    tap_ok(st == TJ_ERR_INVALID_ARG, "tj_kernel_ir(..., NULL) -> TJ_ERR_INVALID_ARG (got %s)",
           tj_status_name(st));
}

/* Runs axpy with a SCALE both ways and compares with C. */
static void test_launch_forms(void)
{
    int n = (int)tl_rand_range(200, 1000), block = 64, grid = (n + block - 1) / block;
    float *x = malloc(4 * n), *y = malloc(4 * n), *want = malloc(4 * n);
    float *typed = malloc(4 * n), *generic = malloc(4 * n);
    tl_fill_random(TJ_F32, x, n);
    tl_fill_random(TJ_F32, y, n);
    for (int i = 0; i < n; i++)
        want[i] = x[i] * 5 + y[i];
    tj_buffer bx = tl_upload(dev, x, 4 * n), by = tl_upload(dev, y, 4 * n);
    tj_buffer b1 = tl_poisoned(dev, 4 * n), b2 = tl_poisoned(dev, 4 * n);
    tj_launch_cfg cfg = tl_grid(grid, 1, 1);
    cfg.num_warps = 8; /* ignored on the CPU */
    tj_status st1 = axpy_launch(dev, &cfg, bx, by, b1, n, 5, block);
    tj_arg args[] = {TJ_ARG_BUF(bx), TJ_ARG_BUF(by), TJ_ARG_BUF(b2), TJ_ARG_I32(n)};
    int64_t consts[] = {5, block};
    tj_status st2 = tj_launch(dev, axpy, &cfg, args, 4, consts, 2);
    if (!tl_launch_failed(st1, "typed launch axpy_launch()") &&
        !tl_launch_failed(st2, "generic tj_launch()")) {
        tl_download(dev, b1, typed, 4 * n);
        tl_download(dev, b2, generic, 4 * n);
        tl_check("typed launch gives x * 5 + y", TJ_F32, typed, want, n, 1e-6, 0);
        tap_ok(memcmp(typed, generic, 4 * n) == 0,
               "typed and generic launches give the same bits");
    }
    free(x), free(y), free(want), free(typed), free(generic);
    tj_buffer_free(dev, bx);
    tj_buffer_free(dev, by);
    tj_buffer_free(dev, b1);
    tj_buffer_free(dev, b2);
}

/* Two constants give two variants; each stays right when they alternate. */
static void test_variants(void)
{
    enum { NV = 300 };
    float x[NV], y[NV], got[NV], want[NV];
    tl_fill_random(TJ_F32, x, NV);
    tl_fill_random(TJ_F32, y, NV);
    tj_buffer bx = tl_upload(dev, x, sizeof x), by = tl_upload(dev, y, sizeof y),
              bo = tl_poisoned(dev, sizeof got);
    static const int64_t scales[] = {2, 3, 2, -7, 3};
    static const int64_t blocks[] = {64, 64, 128, 64, 32};
    for (size_t v = 0; v < TL_COUNT(scales); v++) {
        tl_repoison(dev, bo, sizeof got);
        for (int i = 0; i < NV; i++)
            want[i] = x[i] * (float)scales[v] + y[i];
        tj_launch_cfg cfg = tl_grid((NV + blocks[v] - 1) / blocks[v], 1, 1);
        char what[96];
        snprintf(what, sizeof what, "variant SCALE = %lld, BLOCK = %lld (launch %zu)",
                 (long long)scales[v], (long long)blocks[v], v + 1);
        if (!tl_launch_failed(axpy_launch(dev, &cfg, bx, by, bo, NV, scales[v], blocks[v]), what)) {
            tl_download(dev, bo, got, sizeof got);
            tl_check(what, TJ_F32, got, want, NV, 1e-6, 0);
        }
    }
}

/* The same kernel on a second device, and on a third one opened after the
 * second is closed (its compiled variants went with it). */
static void test_second_device(void)
{
    enum { NV = 200 };
    float x[NV], y[NV], got[NV], want[NV];
    tl_fill_random(TJ_F32, x, NV);
    tl_fill_random(TJ_F32, y, NV);
    for (int i = 0; i < NV; i++)
        want[i] = x[i] * 4 + y[i];
    for (int round = 0; round < 2; round++) {
        tj_device *d2 = NULL;
        char what[96];
        snprintf(what, sizeof what, "the same kernel on %s",
                 round ? "a CPU device opened after the second closed" : "a second CPU device");
        tj_status st = tj_device_open(&d2, TJ_DEVICE_CPU, 0);
        if (st != TJ_OK) {
            tap_ok(0, "%s: %s", what, tj_last_error());
            continue;
        }
        tj_buffer bx = tl_upload(d2, x, sizeof x), by = tl_upload(d2, y, sizeof y),
                  bo = tl_poisoned(d2, sizeof got);
        tj_launch_cfg cfg = tl_grid((NV + 63) / 64, 1, 1);
        if (!tl_launch_failed(axpy_launch(d2, &cfg, bx, by, bo, NV, 4, 64), what)) {
            tl_download(d2, bo, got, sizeof got);
            tl_check(what, TJ_F32, got, want, NV, 1e-6, 0);
        }
        tj_device_close(d2);
    }
}

/* Several threads launch on one device, each its own variant and data. */
typedef struct worker {
    int64_t scale;
    int failures;
    char error[256];
} worker;

static void *worker_main(void *arg)
{
    worker *w = arg;
    enum { NW = 500 };
    float x[NW], y[NW], got[NW];
    for (int i = 0; i < NW; i++) {
        x[i] = (float)(i % 17) - 8.5f;
        y[i] = (float)w->scale;
    }
    for (int round = 0; round < 10 && !w->failures; round++) {
        tj_buffer bx = {0}, by = {0}, bo = {0};
        if (tj_buffer_alloc(dev, sizeof x, &bx) || tj_buffer_alloc(dev, sizeof y, &by) ||
            tj_buffer_alloc(dev, sizeof got, &bo) || tj_buffer_write(dev, bx, 0, x, sizeof x) ||
            tj_buffer_write(dev, by, 0, y, sizeof y)) {
            snprintf(w->error, sizeof w->error, "buffers: %s", tj_last_error());
            w->failures++;
            break;
        }
        tj_launch_cfg cfg = tl_grid((NW + 63) / 64, 1, 1);
        tj_status st = axpy_launch(dev, &cfg, bx, by, bo, NW, w->scale, 64);
        if (st != TJ_OK || tj_buffer_read(dev, bo, 0, got, sizeof got) != TJ_OK) {
            snprintf(w->error, sizeof w->error, "launch: %s", tj_last_error());
            w->failures++;
        } else {
            for (int i = 0; i < NW; i++)
                if (got[i] != x[i] * (float)w->scale + y[i]) {
                    snprintf(w->error, sizeof w->error, "round %d: [%d] = %g, expected %g",
                             round, i, got[i], x[i] * (float)w->scale + y[i]);
                    w->failures++;
                    break;
                }
        }
        tj_buffer_free(dev, bx);
        tj_buffer_free(dev, by);
        tj_buffer_free(dev, bo);
    }
    return NULL;
}

static void test_threads(void)
{
    enum { THREADS = 4 };
    pthread_t th[THREADS];
    worker w[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){.scale = 11 + i % 2, .failures = 0};
        pthread_create(&th[i], NULL, worker_main, &w[i]);
    }
    int failures = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        if (w[i].failures)
            tap_diag("  thread %d: %s", i, w[i].error);
        failures += w[i].failures;
    }
    tap_ok(!failures, "%d threads launching on one device (shared and distinct variants)", THREADS);
}

int main(void)
{
    dev = tl_setup("test_api");
    test_version();
    test_names();
    test_half_helpers();
    test_device();
    test_buffers();
    test_kernel_ir();
    test_launch_forms();
    test_variants();
    test_second_device();
    test_threads();
    tj_device_close(dev);
    return tap_done();
}
