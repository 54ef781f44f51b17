/* SPDX-License-Identifier: MIT */
/*
 * test_multi_gpu.c — several devices in one process (issue 13;
 * src/jit/runtime/multi.c, shared_code.c), on the CPU and
 * (tests/gpu/test_multi_gpu.gpu) the GPUs.
 *
 * What one machine without a GPU can check, every run checks:
 *  - tj_device_count: 1 CPU, >= 1 for the default, an unknown kind 0 with
 *    its error, the GPUs' count never a crash (0 with a reason without a
 *    driver);
 *  - two CPU devices opened separately: a buffer, a stream, an event of
 *    one given to the other is refused with a message naming the call and
 *    saying whose the handle is (and a freed buffer still reads "freed?");
 *  - tj_buffer_copy within a device and between the two, at offsets, every
 *    byte checked (those outside the range keep their poison), and each bad
 *    input: NULL devices, dead or foreign buffers, ranges past the end or
 *    overflowing, overlapping ranges;
 *  - one kernel launched on both CPU devices from two threads at once;
 *  - the process's shared GPU code (shared_code.c) driven directly with an
 *    artifact of made-up PTX: a claim, a second device waiting for the
 *    compile in flight and taking its code, references released; and a
 *    claim abandoned, which the waiter then takes over.
 * With a GPU (the .gpu run): a GPU buffer given to the CPU device and the
 *    other way round, copies GPU <-> CPU and within the GPU at offsets, GPU
 *    0 opened twice (two devices on one context: refusals, a copy, and one
 *    compile for both, counted). With two GPUs or more: every GPU opened,
 *    refusals between GPU 0 and GPU 1, a kernel launched on every GPU from
 *    a thread each at once with results checked and, where they share an
 *    architecture, one compile counted for all; peer copies both ways at
 *    offsets. With fewer, those points are skipped, saying why.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../src/jit/runtime/device_impl.h"
#include "../src/jit/runtime/shared_code.h"
#include "testlib.h"

TJ_KERNEL(scale_add, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(y, f32), TJ_SCALAR(n, i32), TJ_SCALAR(a, f32)),
          TJ_CONSTS(BLOCK, SALT))
{
    (void)SALT; /* only tells variants apart: a new one is a new compile */
    tj_val offs = tj_add(tj_mul(tj_program_id(0), BLOCK), tj_arange(0, BLOCK));
    tj_val mask = tj_lt(offs, n);
    tj_val v = tj_load(tj_add(x, offs), .mask = mask);
    tj_store(tj_add(y, offs), tj_add(tj_mul(v, a), tj_f32(1)), .mask = mask);
}

enum { N = 10007, BLOCK = 256, MAX_GPUS = 8 };

static int contains(const char *text, const char *what)
{
    return text && strstr(text, what) != NULL;
}

/* The status of a call, and whether its message has each of the words. */
static int refused(tj_status got, tj_status want, const char *w1, const char *w2)
{
    const char *msg = tj_last_error();
    int ok = got == want && contains(msg, w1) && (!w2 || contains(msg, w2));
    if (!ok)
        tap_diag("  got %s: %s", tj_status_name(got), msg);
    return ok;
}

static float *pattern(size_t n, float base)
{
    float *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++)
        x[i] = base + (float)i;
    return x;
}

/* A kernel launch of y = 2x + 1 over n elements, and its check. */
static tj_status launch_scale(tj_device *dev, tj_buffer x, tj_buffer y, int n, int salt)
{
    tj_launch_cfg cfg = {.grid = {(n + BLOCK - 1) / BLOCK}};
    return scale_add_launch(dev, &cfg, x, y, n, 2.0, BLOCK, salt);
}

static int check_scaled(const float *x, const float *y, int n)
{
    for (int i = 0; i < n; i++)
        if (y[i] != 2 * x[i] + 1)
            return 0;
    return 1;
}

/* --- one device's launch, on a thread of its own ------------------------ */

typedef struct worker {
    tj_device *dev;
    int salt;
    pthread_barrier_t *start;
    tj_status st;
    int right;
    char why[512];
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    float *x = pattern(N, (float)w->salt), *y = calloc(N, sizeof *y);
    tj_buffer bx = {0}, by = {0};
    w->st = tj_buffer_alloc(w->dev, N * sizeof(float), &bx);
    if (w->st == TJ_OK)
        w->st = tj_buffer_alloc(w->dev, N * sizeof(float), &by);
    if (w->st == TJ_OK)
        w->st = tj_buffer_write(w->dev, bx, 0, x, N * sizeof(float));
    pthread_barrier_wait(w->start);
    if (w->st == TJ_OK)
        w->st = launch_scale(w->dev, bx, by, N, w->salt);
    if (w->st == TJ_OK)
        w->st = tj_buffer_read(w->dev, by, 0, y, N * sizeof(float));
    w->right = w->st == TJ_OK && check_scaled(x, y, N);
    if (w->st != TJ_OK)
        snprintf(w->why, sizeof w->why, "%s: %s", tj_status_name(w->st), tj_last_error());
    tj_buffer_free(w->dev, bx);
    tj_buffer_free(w->dev, by);
    free(x);
    free(y);
    return NULL;
}

/* Launches on every device at once, a thread each; all right? */
static int launch_everywhere(tj_device **devs, int n, int salt)
{
    worker w[MAX_GPUS];
    pthread_t t[MAX_GPUS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)n);
    for (int i = 0; i < n; i++) {
        w[i] = (worker){.dev = devs[i], .salt = salt, .start = &start};
        pthread_create(&t[i], NULL, work, &w[i]);
    }
    int all = 1;
    for (int i = 0; i < n; i++) {
        pthread_join(t[i], NULL);
        if (!w[i].right) {
            tap_diag("  device %d (%s): %s", i, tj_device_name(devs[i]), w[i].st != TJ_OK ? w[i].why : "wrong values");
            all = 0;
        }
    }
    pthread_barrier_destroy(&start);
    return all;
}

/* --- cross-device refusals ----------------------------------------------- */

/* a's buffer, stream and event given to b; whose says whose they are. */
static void check_refusals(tj_device *a, tj_device *b, const char *whose, const char *pair)
{
    tj_buffer buf = {0};
    float x[4] = {1, 2, 3, 4};
    if (tj_buffer_alloc(a, sizeof x, &buf) != TJ_OK)
        tap_bail_out("tj_buffer_alloc: %s", tj_last_error());
    tap_ok(refused(tj_buffer_read(b, buf, 0, x, sizeof x), TJ_ERR_INVALID_ARG, "tj_buffer_read: buffer 0x",
                   whose),
           "%s: tj_buffer_read of the other device's buffer is refused, saying whose it is", pair);
    tap_ok(refused(tj_buffer_write(b, buf, 0, x, sizeof x), TJ_ERR_INVALID_ARG, "tj_buffer_write", whose),
           "%s: so is tj_buffer_write", pair);
    tj_buffer view = {0};
    tap_ok(refused(tj_buffer_view(b, buf, 0, 4, &view), TJ_ERR_INVALID_ARG, "tj_buffer_view", whose) &&
               view.handle == 0,
           "%s: and tj_buffer_view", pair);
    tap_ok(tj_buffer_size(b, buf) == 0 && contains(tj_last_error(), whose), "%s: tj_buffer_size is 0, saying why",
           pair);
    tap_ok(refused(launch_scale(b, buf, buf, 4, 0), TJ_ERR_LAUNCH, "argument 1 'x': buffer 0x", whose),
           "%s: a launch with it as an argument is refused, naming the argument and whose it is", pair);
    tap_ok(refused(tj_buffer_free(b, buf), TJ_ERR_INVALID_ARG, "tj_buffer_free", whose) &&
               tj_buffer_size(a, buf) == sizeof x,
           "%s: tj_buffer_free through the other device is refused and frees nothing", pair);

    tj_stream *s = NULL;
    if (tj_stream_create(a, &s) != TJ_OK)
        tap_bail_out("tj_stream_create: %s", tj_last_error());
    tj_launch_cfg cfg = {.grid = {1}, .stream = s};
    tj_buffer mine = {0};
    if (tj_buffer_alloc(b, sizeof x, &mine) != TJ_OK)
        tap_bail_out("tj_buffer_alloc: %s", tj_last_error());
    tap_ok(refused(scale_add_launch(b, &cfg, mine, mine, 4, 2.0, BLOCK, 0), TJ_ERR_INVALID_ARG,
                   "the stream belongs to", NULL),
           "%s: a launch on the other device's stream is refused", pair);
    tap_ok(refused(tj_buffer_read_async(b, mine, 0, x, sizeof x, s), TJ_ERR_INVALID_ARG, "the stream belongs to",
                   NULL),
           "%s: so is an async copy on it", pair);
    tj_event *ea = NULL, *eb = NULL;
    if (tj_event_create(a, &ea) != TJ_OK || tj_event_create(b, &eb) != TJ_OK)
        tap_bail_out("tj_event_create: %s", tj_last_error());
    tap_ok(refused(tj_event_record(eb, s), TJ_ERR_INVALID_ARG, "tj_event_record: the stream belongs to", NULL),
           "%s: recording an event on the other device's stream is refused", pair);
    float ms = 0;
    if (tj_event_record(ea, NULL) != TJ_OK || tj_event_record(eb, NULL) != TJ_OK ||
        tj_event_synchronize(ea) != TJ_OK || tj_event_synchronize(eb) != TJ_OK)
        tap_bail_out("tj_event_record: %s", tj_last_error());
    tap_ok(refused(tj_event_elapsed(ea, eb, &ms), TJ_ERR_INVALID_ARG, "tj_event_elapsed: the events belong to "
                   "different devices", NULL),
           "%s: the time between events of two devices is refused, naming both", pair);
    tj_event_destroy(ea);
    tj_event_destroy(eb);
    tj_stream_destroy(s);

    tj_buffer_free(a, buf);
    tap_ok(refused(tj_buffer_read(a, buf, 0, x, sizeof x), TJ_ERR_INVALID_ARG, "freed?", NULL) &&
               !contains(tj_last_error(), "belongs to"),
           "%s: a freed buffer is still reported as freed, not as another device's", pair);
    tj_buffer_free(b, mine);
}

/* --- tj_buffer_copy ------------------------------------------------------ */

enum { COPY_N = 3001 }; /* floats in each buffer */

/* Copies count floats from src_dev's buffer at float src_at to dst_dev's
 * at dst_at, and checks every float of the destination. */
static int copy_checked(tj_device *dst_dev, tj_device *src_dev, size_t dst_at, size_t src_at, size_t count)
{
    float *src = pattern(COPY_N, 1000), *dst = malloc(COPY_N * sizeof *dst);
    tj_buffer s = tl_upload(src_dev, src, COPY_N * sizeof(float));
    tj_buffer d = tl_poisoned(dst_dev, COPY_N * sizeof(float));
    tj_status st = tj_buffer_copy(dst_dev, d, dst_at * sizeof(float), src_dev, s, src_at * sizeof(float),
                                  count * sizeof(float));
    int ok = st == TJ_OK;
    if (!ok)
        tap_diag("  tj_buffer_copy: %s: %s", tj_status_name(st), tj_last_error());
    tl_download(dst_dev, d, dst, COPY_N * sizeof(float));
    float poison;
    memset(&poison, TL_POISON, sizeof poison);
    for (size_t i = 0; ok && i < COPY_N; i++) {
        int inside = i >= dst_at && i < dst_at + count;
        float want = inside ? src[i - dst_at + src_at] : poison;
        if (memcmp(&dst[i], &want, sizeof want) != 0) {
            tap_diag("  float %zu: %g, expected %g", i, (double)dst[i], (double)want);
            ok = 0;
        }
    }
    tj_buffer_free(src_dev, s);
    tj_buffer_free(dst_dev, d);
    free(src);
    free(dst);
    return ok;
}

static void check_copies(tj_device *a, tj_device *b, const char *pair)
{
    tap_ok(copy_checked(a, a, 17, 5, 2000), "%s: tj_buffer_copy within the first device, at offsets", pair);
    tap_ok(copy_checked(b, b, 0, 1001, 2000), "%s: within the second", pair);
    tap_ok(copy_checked(b, a, 3, 700, 2100), "%s: from the first to the second, at offsets", pair);
    tap_ok(copy_checked(a, b, 1000, 1, 1999), "%s: from the second to the first, at offsets", pair);
    tap_ok(copy_checked(b, a, 0, 0, COPY_N), "%s: a whole buffer", pair);
}

static void check_copy_errors(tj_device *a, tj_device *b)
{
    tj_buffer x = tl_poisoned(a, 1024), y = tl_poisoned(b, 1024), dead = tl_poisoned(a, 64);
    tj_buffer_free(a, dead);
    tap_ok(refused(tj_buffer_copy(NULL, x, 0, a, x, 0, 4), TJ_ERR_INVALID_ARG, "tj_buffer_copy: dst_dev is NULL",
                   NULL) &&
               refused(tj_buffer_copy(a, x, 0, NULL, x, 0, 4), TJ_ERR_INVALID_ARG, "tj_buffer_copy: src_dev is NULL", NULL),
           "tj_buffer_copy: a NULL device is refused, saying which");
    tap_ok(refused(tj_buffer_copy(a, x, 0, a, dead, 0, 4), TJ_ERR_INVALID_ARG, "tj_buffer_copy: src: buffer",
                   "freed?") &&
               refused(tj_buffer_copy(a, (tj_buffer){0}, 0, a, x, 0, 4), TJ_ERR_INVALID_ARG, "dst: the buffer "
                       "handle is 0", NULL),
           "tj_buffer_copy: a freed buffer and the zero handle are refused");
    tap_ok(refused(tj_buffer_copy(a, y, 0, b, y, 0, 4), TJ_ERR_INVALID_ARG, "tj_buffer_copy: dst: buffer",
                   "belongs to") &&
               refused(tj_buffer_copy(a, x, 0, a, y, 0, 4), TJ_ERR_INVALID_ARG, "src: buffer", "belongs to"),
           "tj_buffer_copy: a buffer given with the wrong device is refused, saying whose it is");
    tap_ok(refused(tj_buffer_copy(b, y, 1000, a, x, 0, 32), TJ_ERR_INVALID_ARG, "dst: 32 bytes at offset 1000 do "
                   "not fit", NULL) &&
               refused(tj_buffer_copy(b, y, 0, a, x, 1021, 4), TJ_ERR_INVALID_ARG, "src: 4 bytes at offset 1021",
                       NULL) &&
               refused(tj_buffer_copy(b, y, SIZE_MAX, a, x, 0, 2), TJ_ERR_INVALID_ARG, "do not fit", NULL) &&
               refused(tj_buffer_copy(b, y, 0, a, x, 0, SIZE_MAX), TJ_ERR_INVALID_ARG, "do not fit", NULL),
           "tj_buffer_copy: ranges past a buffer's end, or overflowing, are refused");
    tj_buffer v = {0};
    if (tj_buffer_view(a, x, 512, 256, &v) != TJ_OK)
        tap_bail_out("tj_buffer_view: %s", tj_last_error());
    tap_ok(refused(tj_buffer_copy(a, x, 0, a, x, 8, 64), TJ_ERR_INVALID_ARG, "overlap", NULL) &&
               refused(tj_buffer_copy(a, v, 0, a, x, 500, 64), TJ_ERR_INVALID_ARG, "overlap", NULL),
           "tj_buffer_copy: overlapping ranges (one buffer, a buffer and its view) are refused");
    tap_ok(tj_buffer_copy(a, x, 64, a, x, 64, 64) == TJ_OK && tj_buffer_copy(a, v, 0, a, x, 512, 256) == TJ_OK &&
               tj_buffer_copy(b, y, 1024, a, x, 1024, 0) == TJ_OK && tj_buffer_copy(a, x, 0, a, x, 512, 512) == TJ_OK,
           "tj_buffer_copy: the same bytes onto themselves, 0 bytes at the end, and adjacent ranges are fine");
    tj_buffer_free(a, v);
    tj_buffer_free(a, x);
    tj_buffer_free(b, y);
}

/* --- the shared code, driven directly ------------------------------------ */

typedef struct claimer {
    tjj_artifact a;
    tjj_shared_claim claim;
    atomic_int done;
} claimer;

static void start_artifact(tjj_artifact *a, uint64_t key)
{
    memset(a, 0, sizeof *a);
    a->key = (tjj_stable_key){0x7465737400000000u, key};
    a->sm = 90;
}

static void *claim_thread(void *arg)
{
    claimer *c = arg;
    c->claim = tjj_shared_code_begin(&c->a);
    c->done = 1;
    return NULL;
}

static void check_shared_code(void)
{
    uint64_t salt = (uint64_t)getpid() << 20;
    tjj_shared_code_counts before = tjj_shared_code_count();
    tjj_artifact a;
    start_artifact(&a, salt + 1);
    tap_ok(tjj_shared_code_begin(&a) == TJJ_SHARED_MINE, "shared code: the first device to miss a key claims it");
    char ptx[] = "// made-up PTX", entry[] = "made_up";
    a.gpu.ptx = ptx;
    a.gpu.entry = entry;
    a.gpu.num_warps = 4;
    a.gpu.shared_bytes = 4096;

    claimer c;
    start_artifact(&c.a, salt + 1);
    c.done = 0;
    pthread_t t;
    pthread_create(&t, NULL, claim_thread, &c);
    usleep(100 * 1000);
    tap_ok(!c.done, "shared code: a second device missing the same key waits for the compile in flight");
    tjj_shared_code_publish(&a);
    pthread_join(t, NULL);
    tap_ok(c.claim == TJJ_SHARED_HIT && c.a.gpu.ptx && strcmp(c.a.gpu.ptx, ptx) == 0 && c.a.gpu.entry &&
               strcmp(c.a.gpu.entry, entry) == 0 && c.a.gpu.num_warps == 4 && c.a.gpu.shared_bytes == 4096,
           "shared code: once published, the waiter has the same code (PTX, entry, warps, shared bytes)");
    tjj_artifact_free(&c.a);
    tjj_shared_code_counts mid = tjj_shared_code_count();
    tap_ok(mid.published == before.published + 1 && mid.hits == before.hits + 1 && mid.held == before.held + 1,
           "shared code: one published, one hit, one entry held");
    tjj_shared_code_release(&a.key);
    tap_ok(tjj_shared_code_count().held == before.held + 1, "shared code: the entry stays while a variant uses it");
    tjj_shared_code_release(&a.key);
    tap_ok(tjj_shared_code_count().held == before.held, "shared code: the last release frees it");

    tjj_artifact b;
    start_artifact(&b, salt + 2);
    start_artifact(&c.a, salt + 2);
    c.done = 0;
    tap_ok(tjj_shared_code_begin(&b) == TJJ_SHARED_MINE, "shared code: another key is claimed");
    pthread_create(&t, NULL, claim_thread, &c);
    usleep(100 * 1000);
    tjj_shared_code_abandon(&b.key);
    pthread_join(t, NULL);
    tap_ok(c.claim == TJJ_SHARED_MINE, "shared code: a claim abandoned (a failed compile) passes to the waiter");
    tjj_shared_code_abandon(&c.a.key);
    tap_ok(tjj_shared_code_count().held == before.held, "shared code: nothing is held after");

    tjj_artifact cpu = {0};
    cpu.key = a.key;
    tap_ok(tjj_shared_code_begin(&cpu) == TJJ_SHARED_OFF, "shared code: CPU code is not shared");
}

/* --- GPUs ---------------------------------------------------------------- */

/* The same GPU opened twice: two devices on one context. */
static void check_one_gpu_twice(tj_device *g, tj_device *cpu)
{
    tj_device *g2 = NULL;
    if (tj_device_open(&g2, TJ_DEVICE_GPU, 0) != TJ_OK)
        tap_bail_out("tj_device_open(GPU 0) again: %s", tj_last_error());
    check_refusals(g, cpu, "belongs to GPU 0 (", "GPU -> CPU");
    check_refusals(cpu, g, "belongs to the CPU device", "CPU -> GPU");
    check_refusals(g, g2, "belongs to another device opened on GPU 0", "GPU 0 twice");
    check_copies(g, cpu, "GPU and CPU");
    check_copies(g, g2, "GPU 0 twice");

    tjj_shared_code_counts before = tjj_shared_code_count();
    tj_device *both[2] = {g, g2};
    tap_ok(launch_everywhere(both, 1, 101), "a new variant on the first device of GPU 0: right");
    tjj_shared_code_counts mid = tjj_shared_code_count();
    tap_ok(launch_everywhere(both + 1, 1, 101), "the same variant on the second device of GPU 0: right");
    tjj_shared_code_counts after = tjj_shared_code_count();
    tap_ok(mid.published == before.published + 1 && after.published == mid.published &&
               after.hits == mid.hits + 1,
           "one compile for both devices of GPU 0: the second took the first one's code");
    tap_diag("  shared code: published %llu, hits %llu",
             (unsigned long long)(after.published - before.published),
             (unsigned long long)(after.hits - before.hits));
    tj_device_close(g2);
}

static int same_arch(tj_device **devs, int n)
{
    const char *sm0 = strstr(tj_device_name(devs[0]), "(sm_");
    for (int i = 1; i < n; i++) {
        const char *sm = strstr(tj_device_name(devs[i]), "(sm_");
        if (!sm0 || !sm || strncmp(sm0, sm, 8) != 0)
            return 0;
    }
    return 1;
}

enum { MULTI_POINTS = 2 * 11 + 2 * 5 + 2 }; /* the points of check_gpus below: two check_refusals,
                                               * two check_copies, two of its own */

static void check_gpus(tj_device *g0, int ngpus)
{
    tj_device *devs[MAX_GPUS] = {g0};
    int n = ngpus < MAX_GPUS ? ngpus : MAX_GPUS;
    for (int i = 1; i < n; i++)
        if (tj_device_open(&devs[i], TJ_DEVICE_GPU, i) != TJ_OK)
            tap_bail_out("tj_device_open(GPU %d): %s", i, tj_last_error());
    for (int i = 0; i < n; i++)
        tap_diag("GPU %d: %s", i, tj_device_name(devs[i]));
    check_refusals(devs[0], devs[1], "belongs to GPU 0 (", "GPU 0 -> GPU 1");
    check_refusals(devs[1], devs[0], "belongs to GPU 1 (", "GPU 1 -> GPU 0");
    check_copies(devs[0], devs[1], "GPU 0 and GPU 1 (peer)");
    check_copies(devs[1], devs[0], "GPU 1 and GPU 0 (peer)");
    tap_diag("peer access: GPU 0 -> 1 %s, GPU 1 -> 0 %s", tjj_peer_access(devs[0], devs[1]) ? "on" : "off",
             tjj_peer_access(devs[1], devs[0]) ? "on" : "off");

    tjj_shared_code_counts before = tjj_shared_code_count();
    tap_ok(launch_everywhere(devs, n, 202), "one new variant launched on all %d GPUs at once, a thread each: "
           "every result right", n);
    tjj_shared_code_counts after = tjj_shared_code_count();
    tap_diag("  shared code: published %llu, hits %llu", (unsigned long long)(after.published - before.published),
             (unsigned long long)(after.hits - before.hits));
    if (same_arch(devs, n))
        tap_ok(after.published == before.published + 1 && after.hits == before.hits + (uint64_t)(n - 1),
               "one compile for the %d GPUs of one architecture, the others took its code", n);
    else
        tap_skip(1, "the GPUs are of different architectures: a compile each");
    for (int i = 1; i < n; i++)
        tj_device_close(devs[i]);
}

int main(void)
{
    tj_device *dev = tl_setup("test_multi_gpu");
    int gpu = tj_device_get_kind(dev) == TJ_DEVICE_GPU;

    tap_ok(tj_device_count(TJ_DEVICE_CPU) == 1, "tj_device_count: one CPU device");
    tap_ok(tj_device_count(TJ_DEVICE_DEFAULT) >= 1, "tj_device_count: the default kind has at least one");
    tap_ok(tj_device_count((tj_device_kind)99) == 0 && contains(tj_last_error(), "unknown device kind 99"),
           "tj_device_count: an unknown kind is 0, with its error");
    int ngpus = tj_device_count(TJ_DEVICE_GPU);
    tap_ok(ngpus >= 0 && (ngpus > 0 || *tj_last_error()), "tj_device_count: %d GPU%s%s%s", ngpus,
           ngpus == 1 ? "" : "s", ngpus ? "" : ", saying why: ", ngpus ? "" : tj_last_error());
    tap_ok(!gpu || ngpus >= 1, "tj_device_count: the GPU this run opened is counted");

    tj_device *c1 = NULL, *c2 = NULL;
    if (tj_device_open(&c1, TJ_DEVICE_CPU, 0) != TJ_OK || tj_device_open(&c2, TJ_DEVICE_CPU, 0) != TJ_OK)
        tap_bail_out("tj_device_open(CPU) twice: %s", tj_last_error());
    check_refusals(c1, c2, "belongs to another device opened on the CPU device", "two CPU devices");
    check_copies(c1, c2, "two CPU devices");
    check_copy_errors(c1, c2);
    tj_device *cpus[2] = {c1, c2};
    tap_ok(launch_everywhere(cpus, 2, 1), "one kernel on two CPU devices at once, a thread each: right");
    check_shared_code();

    if (gpu) {
        check_one_gpu_twice(dev, c1);
        if (ngpus >= 2)
            check_gpus(dev, ngpus);
        else
            tap_skip(MULTI_POINTS, "fewer than two GPUs: the refusals between GPUs, launches on every GPU "
                                   "at once, one compile for all and peer copies need two");
    } else {
        tap_skip(1, "the GPU points run in tests/gpu/test_multi_gpu.gpu");
    }
    tj_device_close(c1);
    tj_device_close(c2);
    tj_device_close(dev);
    return tap_done();
}
