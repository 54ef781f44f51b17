/* SPDX-License-Identifier: MIT */
/*
 * test_streams.c — streams, events, asynchronous copies and page-locked host
 * memory (src/jit/runtime/streams.c), on the CPU and
 * (tests/gpu/test_streams.gpu) the GPU.
 *
 * A kernel adds one to n floats; each case checks every element:
 *  - on a stream of its own: an asynchronous write from page-locked memory,
 *    a launch, an asynchronous read back, then tj_stream_synchronize only;
 *  - on two streams at once, each with its own buffers and data;
 *  - events around a launch: both complete after tj_event_synchronize, the
 *    time between them not negative;
 *  - on a GPU, a CUstream the application made through the driver API
 *    (libcuda loaded here, as an application would), wrapped and used,
 *    then destroyed by the application after tj_stream_destroy;
 *  - on a GPU, tjit launches on an application's stream captured into a CUDA
 *    graph (global capture mode, the variant compiled before), the graph
 *    replayed twice: each replay adds one more;
 *  - on a GPU, the thread's current context after tjit's calls is what it
 *    was before: the primary context an application made current, or none;
 *  - on a GPU, a failed device assert in a kernel on a stream is what
 *    tj_stream_synchronize reports.
 * Bad inputs each get their error: the elapsed time of an event never
 * recorded, waiting for one, a stream of another device, a copy past a
 * buffer's end or from a freed buffer, NULL arguments, tj_stream_wrap on
 * the CPU or of NULL, and a stream and an event used after their device
 * was closed (destroying them then is still fine: ASan checks the rest).
 */
#include <dlfcn.h>
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

/* Fails in every program whose first element is negative. */
TJ_KERNEL(no_negatives, TJ_PARAMS(TJ_PTR(x, f32)), TJ_CONSTS())
{
    tj_device_assert(tj_ge(tj_load(tj_add(x, tj_mul(tj_program_id(0), 4))), tj_f32(0)), "x must not be negative");
}

enum { N = 100000, BLOCK = 1024 };

static tj_device *dev;

static tj_status launch_on(tj_stream *s, tj_buffer src, tj_buffer dst, int n)
{
    tj_launch_cfg cfg = {.grid = {(n + BLOCK - 1) / BLOCK}, .stream = s};
    return add_one_launch(dev, &cfg, src, dst, n, BLOCK);
}

static void fill(float *x, int n)
{
    for (int i = 0; i < n; i++)
        x[i] = (float)tl_rand_range(-100000, 100000) / 8;
}

static int plus_one(const float *got, const float *in, int n, const char *what)
{
    for (int i = 0; i < n; i++)
        if (got[i] != in[i] + 1) {
            tap_diag("%s: element %d: %g, not %g", what, i, (double)got[i], (double)(in[i] + 1));
            return 0;
        }
    return 1;
}

/* Write, launch and read back on stream s from page-locked memory; the
 * caller synchronizes. */
typedef struct round_trip {
    float *in, *out;
    tj_buffer src, dst;
} round_trip;

static tj_status start_round_trip(round_trip *r, tj_stream *s)
{
    memset(r, 0, sizeof *r);
    tj_status st = tj_host_alloc(dev, N * 4, (void **)&r->in);
    if (st == TJ_OK)
        st = tj_host_alloc(dev, N * 4, (void **)&r->out);
    if (st != TJ_OK)
        return st;
    fill(r->in, N);
    memset(r->out, 0xff, N * 4);
    r->src = tl_poisoned(dev, N * 4);
    r->dst = tl_poisoned(dev, N * 4);
    st = tj_buffer_write_async(dev, r->src, 0, r->in, N * 4, s);
    if (st == TJ_OK)
        st = launch_on(s, r->src, r->dst, N);
    if (st == TJ_OK)
        st = tj_buffer_read_async(dev, r->dst, 0, r->out, N * 4, s);
    return st;
}

static void end_round_trip(round_trip *r)
{
    tj_host_free(dev, r->in);
    tj_host_free(dev, r->out);
    tj_buffer_free(dev, r->src);
    tj_buffer_free(dev, r->dst);
}

static void one_stream(void)
{
    tj_stream *s = NULL;
    round_trip r;
    tj_status st = tj_stream_create(dev, &s);
    if (st == TJ_OK)
        st = start_round_trip(&r, s);
    if (st == TJ_OK)
        st = tj_stream_synchronize(s);
    if (st != TJ_OK)
        tap_diag("%s", tj_last_error());
    tap_ok(st == TJ_OK && plus_one(r.out, r.in, N, "one stream"),
           "a stream: async write from page-locked memory, launch, async read, its synchronize");
    end_round_trip(&r);
    tj_stream_destroy(s);
}

static void two_streams(void)
{
    tj_stream *s[2] = {NULL, NULL};
    round_trip r[2];
    tj_status st = tj_stream_create(dev, &s[0]);
    if (st == TJ_OK)
        st = tj_stream_create(dev, &s[1]);
    for (int i = 0; i < 2 && st == TJ_OK; i++)
        st = start_round_trip(&r[i], s[i]);
    for (int i = 1; i >= 0 && st == TJ_OK; i--)
        st = tj_stream_synchronize(s[i]);
    if (st != TJ_OK)
        tap_diag("%s", tj_last_error());
    tap_ok(st == TJ_OK && plus_one(r[0].out, r[0].in, N, "stream 0") && plus_one(r[1].out, r[1].in, N, "stream 1"),
           "two streams at once, each with its own buffers");
    for (int i = 0; i < 2 && st == TJ_OK; i++)
        end_round_trip(&r[i]);
    tj_stream_destroy(s[0]);
    tj_stream_destroy(s[1]);
}

static void events(void)
{
    tj_stream *s = NULL;
    tj_event *start = NULL, *end = NULL;
    tj_buffer src = tl_poisoned(dev, N * 4), dst = tl_poisoned(dev, N * 4);
    float ms = -1;
    tj_status st = tj_stream_create(dev, &s);
    if (st == TJ_OK)
        st = tj_event_create(dev, &start);
    if (st == TJ_OK)
        st = tj_event_create(dev, &end);
    tj_status never = st == TJ_OK ? tj_event_elapsed(start, end, &ms) : TJ_OK;
    tap_ok(never == TJ_ERR_INVALID_ARG && tl_error_mentions("tj_event_elapsed", "never recorded", NULL),
           "the time to an event never recorded is an error: %s", tj_last_error());
    never = st == TJ_OK ? tj_event_synchronize(end) : TJ_OK;
    tap_ok(never == TJ_ERR_INVALID_ARG && tl_error_mentions("tj_event_synchronize", "never recorded", NULL),
           "waiting for an event never recorded is an error");
    if (st == TJ_OK)
        st = tj_event_record(start, s);
    for (int i = 0; i < 10 && st == TJ_OK; i++)
        st = launch_on(s, src, dst, N);
    if (st == TJ_OK)
        st = tj_event_record(end, s);
    if (st == TJ_OK)
        st = tj_event_synchronize(end);
    if (st == TJ_OK)
        st = tj_event_elapsed(start, end, &ms);
    if (st != TJ_OK)
        tap_diag("%s", tj_last_error());
    tap_ok(st == TJ_OK && ms >= 0 && ms < 60000, "events around 10 launches: %.3f ms between them", (double)ms);
    tj_event_destroy(start);
    tj_event_destroy(end);
    tj_stream_destroy(s);
    tj_buffer_free(dev, src);
    tj_buffer_free(dev, dst);
}

/* The application's own CUstream, made through the driver API. */
typedef int (*cu_stream_create_fn)(void **stream, unsigned flags);
typedef int (*cu_stream_destroy_fn)(void *stream);

/* As a CUDA runtime application does: the GPU's primary context current on
 * this thread (NULL: none current). Returns 0 where the driver refused. */
static int app_context(void *cuda, int primary)
{
    int (*device_get)(int *, int) = NULL;
    int (*retain)(void **, int) = NULL;
    int (*set_current)(void *) = NULL;
    *(void **)&device_get = dlsym(cuda, "cuDeviceGet");
    *(void **)&retain = dlsym(cuda, "cuDevicePrimaryCtxRetain");
    *(void **)&set_current = dlsym(cuda, "cuCtxSetCurrent");
    int device = 0;
    void *context = NULL;
    if (!device_get || !retain || !set_current || device_get(&device, 0) != 0)
        return 0;
    if (primary && retain(&context, device) != 0) /* released by the process's end */
        return 0;
    return set_current(context) == 0;
}

/* The thread's current context, or (void *)-1 where the driver refused. */
static void *current_context(void *cuda)
{
    int (*get_current)(void **) = NULL;
    *(void **)&get_current = dlsym(cuda, "cuCtxGetCurrent");
    void *context = NULL;
    return get_current && get_current(&context) == 0 ? context : (void *)-1;
}

/* tjit's calls push their context and pop it: whatever the thread had
 * current before (the application's primary context, or none) it has after. */
static void context_left_alone(void)
{
    if (tj_device_get_kind(dev) != TJ_DEVICE_GPU) {
        tap_skip(2, "CUDA contexts need a GPU");
        return;
    }
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    for (int primary = 1; primary >= 0; primary--) {
        int set = cuda && app_context(cuda, primary);
        void *before = set ? current_context(cuda) : (void *)-1;
        tj_buffer x = tl_poisoned(dev, 4096 * 4);
        tj_status st = launch_on(NULL, x, x, 4096);
        if (st == TJ_OK)
            st = tj_synchronize(dev);
        tj_buffer_free(dev, x);
        void *after = set ? current_context(cuda) : (void *)-2;
        if (st != TJ_OK)
            tap_diag("%s", tj_last_error());
        tap_ok(set && st == TJ_OK && before == after && (primary ? before != NULL : before == NULL),
               "the thread's current context (%s) is the same after tjit's calls",
               primary ? "the primary context, as the CUDA runtime makes it" : "none");
    }
    if (cuda)
        dlclose(cuda);
}

static void wrapped_stream(void)
{
    if (tj_device_get_kind(dev) != TJ_DEVICE_GPU) {
        tj_stream *s = NULL;
        tap_ok(tj_stream_wrap(dev, (void *)0x1, &s) == TJ_ERR_INVALID_ARG && !s &&
                   tl_error_mentions("tj_stream_wrap", "CPU", NULL),
               "the CPU has no CUDA stream to wrap: %s", tj_last_error());
        tap_skip(2, "an application's CUstream needs a GPU");
        return;
    }
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    cu_stream_create_fn create = cuda ? (cu_stream_create_fn)dlsym(cuda, "cuStreamCreate") : NULL;
    cu_stream_destroy_fn destroy = cuda ? (cu_stream_destroy_fn)dlsym(cuda, "cuStreamDestroy_v2") : NULL;
    void *app_stream = NULL;
    /* the application's stream, made in the primary context it made current */
    int made = create && destroy && app_context(cuda, 1) && create(&app_stream, 0) == 0;
    tj_stream *s = NULL;
    round_trip r;
    tj_status st = made ? tj_stream_wrap(dev, app_stream, &s) : TJ_ERR_DEVICE;
    if (st == TJ_OK)
        st = start_round_trip(&r, s);
    if (st == TJ_OK)
        st = tj_stream_synchronize(s);
    if (st != TJ_OK)
        tap_diag("%s", made ? tj_last_error() : "no cuStreamCreate from libcuda.so.1");
    tap_ok(st == TJ_OK && plus_one(r.out, r.in, N, "wrapped stream"),
           "the application's CUstream, wrapped: copies and a launch on it");
    if (st == TJ_OK)
        end_round_trip(&r);
    tj_stream_destroy(s); /* not the application's stream: */
    tap_ok(!made || destroy(app_stream) == 0, "the application destroys its stream after tj_stream_destroy");
    tap_ok(tj_stream_wrap(dev, NULL, &s) == TJ_ERR_INVALID_ARG && tl_error_mentions("default stream", NULL),
           "wrapping a NULL stream is refused");
    if (cuda)
        dlclose(cuda);
}

/* The driver calls an application makes to capture and replay a graph. */
typedef struct graph_api {
    int (*begin)(void *stream, int mode);
    int (*end)(void *stream, void **graph);
    int (*instantiate)(void **exec, void *graph, unsigned long long flags);
    int (*launch)(void *exec, void *stream);
    int (*sync)(void *stream);
    int (*exec_destroy)(void *exec);
    int (*graph_destroy)(void *graph);
} graph_api;

static void graph_capture(void)
{
    if (tj_device_get_kind(dev) != TJ_DEVICE_GPU) {
        tap_skip(1, "CUDA graphs need a GPU");
        return;
    }
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    graph_api g = {0};
    if (cuda) {
        *(void **)&g.begin = dlsym(cuda, "cuStreamBeginCapture_v2");
        *(void **)&g.end = dlsym(cuda, "cuStreamEndCapture");
        *(void **)&g.instantiate = dlsym(cuda, "cuGraphInstantiateWithFlags");
        *(void **)&g.launch = dlsym(cuda, "cuGraphLaunch");
        *(void **)&g.sync = dlsym(cuda, "cuStreamSynchronize");
        *(void **)&g.exec_destroy = dlsym(cuda, "cuGraphExecDestroy");
        *(void **)&g.graph_destroy = dlsym(cuda, "cuGraphDestroy");
    }
    float *in = malloc(N * 4), *out = malloc(N * 4);
    fill(in, N);
    tj_buffer x = tl_upload(dev, in, N * 4);
    tj_stream *s = NULL;
    void *graph = NULL, *exec = NULL;
    int drv = 0;
    tj_status st = g.begin && g.end && g.instantiate && g.launch && g.sync && g.exec_destroy && g.graph_destroy
                       ? tj_stream_create(dev, &s)
                       : TJ_ERR_DEVICE;
    if (st == TJ_OK) /* x += 1 in place: compiled now, outside the capture */
        st = launch_on(s, x, x, N);
    if (st == TJ_OK)
        st = tj_stream_synchronize(s);
    void *native = NULL; /* the CUstream: the test's own view of tjit's stream */
    tj_stream *wrapped = NULL;
    if (st == TJ_OK && g.begin) {
        /* capture through a wrapped handle of a stream tjit did not make */
        int (*create)(void **, unsigned) = NULL;
        *(void **)&create = dlsym(cuda, "cuStreamCreate");
        drv = create && app_context(cuda, 1) ? create(&native, 0) : -1;
        st = drv == 0 ? tj_stream_wrap(dev, native, &wrapped) : TJ_ERR_DEVICE;
    }
    if (st == TJ_OK && (drv = g.begin(native, 0)) != 0) /* CU_STREAM_CAPTURE_MODE_GLOBAL */
        st = TJ_ERR_DEVICE;
    if (st == TJ_OK) {
        tj_status in_capture = launch_on(wrapped, x, x, N);
        drv = g.end(native, &graph);
        st = in_capture != TJ_OK ? in_capture : drv ? TJ_ERR_DEVICE : TJ_OK;
    }
    if (st == TJ_OK && (drv = g.instantiate(&exec, graph, 0)) != 0)
        st = TJ_ERR_DEVICE;
    for (int replay = 0; replay < 2 && st == TJ_OK; replay++)
        if ((drv = g.launch(exec, native)) != 0 || (drv = g.sync(native)) != 0)
            st = TJ_ERR_DEVICE;
    if (st == TJ_OK)
        st = tj_buffer_read(dev, x, 0, out, N * 4);
    /* one launch before the capture, two replays of the captured one */
    for (int i = 0; i < N && st == TJ_OK; i++)
        in[i] += 2; /* plus_one adds the third */
    if (st != TJ_OK)
        tap_diag("%s (driver result %d)", st == TJ_ERR_DEVICE ? "a driver call failed" : tj_last_error(), drv);
    tap_ok(st == TJ_OK && plus_one(out, in, N, "graph replays") ,
           "a tjit launch captured into a CUDA graph on the application's stream, replayed twice");
    if (exec)
        g.exec_destroy(exec);
    if (graph)
        g.graph_destroy(graph);
    tj_stream_destroy(wrapped);
    if (native) {
        int (*destroy)(void *) = NULL;
        *(void **)&destroy = dlsym(cuda, "cuStreamDestroy_v2");
        if (destroy)
            destroy(native);
    }
    tj_stream_destroy(s);
    tj_buffer_free(dev, x);
    free(in);
    free(out);
    if (cuda)
        dlclose(cuda);
}

static void assert_on_stream(void)
{
    if (tj_device_get_kind(dev) != TJ_DEVICE_GPU) {
        tap_skip(1, "the CPU reports a failed assert from tj_launch itself");
        return;
    }
    float x[64];
    for (int i = 0; i < 64; i++)
        x[i] = i == 36 ? -1.0f : 1.0f; /* program 9 reads x[36] */
    tj_buffer b = tl_upload(dev, x, sizeof x);
    tj_stream *s = NULL;
    tj_status st = tj_stream_create(dev, &s);
    tj_launch_cfg cfg = {.grid = {16}, .stream = s};
    tj_arg arg = TJ_ARG_BUF(b);
    if (st == TJ_OK)
        st = tj_launch(dev, no_negatives, &cfg, &arg, 1, NULL, 0);
    if (st == TJ_OK)
        st = tj_stream_synchronize(s);
    tap_ok(st == TJ_ERR_ASSERT && tl_error_mentions("no_negatives", "x must not be negative", "(9, 0, 0)", NULL),
           "a failed assert on a stream is reported by its synchronize: %s", tj_last_error());
    tj_stream_destroy(s);
    tj_buffer_free(dev, b);
}

static void bad_inputs(void)
{
    tj_stream *s = NULL;
    tj_buffer b = tl_poisoned(dev, 64);
    float host[32];
    tj_status st = tj_stream_create(dev, &s);
    tap_ok(st == TJ_OK && tj_buffer_write_async(dev, b, 32, host, 64, s) == TJ_ERR_INVALID_ARG &&
               tl_error_mentions("tj_buffer_write_async", "do not fit", NULL),
           "an async copy past the buffer's end is refused");
    tj_buffer_free(dev, b);
    tap_ok(tj_buffer_read_async(dev, b, 0, host, 16, s) == TJ_ERR_INVALID_ARG &&
               tl_error_mentions("tj_buffer_read_async", "freed", NULL),
           "an async copy of a freed buffer is refused");
    tap_ok(tj_stream_create(NULL, &s) == TJ_ERR_INVALID_ARG && tj_stream_synchronize(NULL) == TJ_ERR_INVALID_ARG &&
               tj_event_record(NULL, NULL) == TJ_ERR_INVALID_ARG && tj_host_alloc(dev, 0, (void **)&b) ==
               TJ_ERR_INVALID_ARG && tj_stream_destroy(NULL) == TJ_OK && tj_event_destroy(NULL) == TJ_OK,
           "NULL arguments and 0 bytes are refused (destroying NULL is fine)");

    /* a stream of another device */
    tj_device *other = NULL;
    tj_stream *foreign = NULL;
    tj_buffer c = tl_poisoned(dev, 4 * 1024);
    st = tj_device_open(&other, TJ_DEVICE_CPU, 0);
    if (st == TJ_OK)
        st = tj_stream_create(other, &foreign);
    tap_ok(st == TJ_OK && launch_on(foreign, c, c, 1024) == TJ_ERR_INVALID_ARG &&
               tl_error_mentions("add_one", "the stream belongs to", NULL), /* another CPU device, or the CPU's */
           "a launch on another device's stream is refused: %s", tj_last_error());
    tj_event *ev = NULL;
    if (other)
        tj_event_create(other, &ev);
    tj_device_close(other);
    tap_ok(foreign && tj_stream_synchronize(foreign) == TJ_ERR_INVALID_ARG &&
               tl_error_mentions("device was closed", NULL) && ev && tj_event_record(ev, NULL) == TJ_ERR_INVALID_ARG,
           "a stream and an event whose device was closed are refused, not used");
    tap_ok(tj_stream_destroy(foreign) == TJ_OK && tj_event_destroy(ev) == TJ_OK,
           "... and destroying them is fine");
    tj_buffer_free(dev, c);
    tj_stream_destroy(s);
}

int main(void)
{
    dev = tl_setup("test_streams");
    tap_plan(18);
    one_stream();
    two_streams();
    events();
    wrapped_stream();
    graph_capture();
    context_left_alone();
    assert_on_stream();
    bad_inputs();
    tj_device_close(dev);
    return tap_done();
}
