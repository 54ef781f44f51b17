/* SPDX-License-Identifier: MIT */
/*
 * multi_gpu — one large memory-bound kernel split across every GPU of the
 * machine: y = a * x + b over n floats.
 *
 * tj_device_count says how many GPUs there are; each is opened as a device
 * of its own (tj_device_open with its ordinal), gets a contiguous share of
 * the rows (here: elements) in buffers of its own, and is driven by a host
 * thread of its own, so that the launches on all GPUs are queued at once.
 * The kernel is one tj_kernel for all: the first GPU to launch it compiles
 * it, the others of the same architecture take that code and only load it
 * (under TJIT_LOG=compile their lines show only the shared-code and
 * module-load stages). Each thread times its GPU by
 * CUDA events around `reps` launches (tj_event_record and
 * tj_event_elapsed); the total is the bytes all GPUs moved over the wall
 * time from a common start to the last GPU done. With more than one GPU,
 * GPU 0 first runs the whole problem alone, which is the "one GPU" the
 * total is compared with. Every element of y is then checked.
 *
 * With one GPU it runs on that one; with none it runs on the CPU device and
 * says so. The third argument caps the GPUs used (a run on 1 and one on 2
 * compare by hand too); without a GPU it is how many CPU devices to open
 * (each a tj_device of its own, all sharing the one CPU: the split, the
 * threads and the check run as they do on GPUs, the speed does not scale).
 *
 *     usage: multi_gpu [n [reps [devices]]]   (default n = 2^28 on GPUs, 2^22 on
 *                                              the CPU; reps = 20; devices: all
 *                                              GPUs, else 1 CPU device)
 */
#include <pthread.h>

#include "common.h"

TJ_KERNEL(axpb_kernel,
          TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(y, f32), TJ_SCALAR(n, i32), TJ_SCALAR(a, f32), TJ_SCALAR(b, f32)),
          TJ_CONSTS(BLOCK))
{
    tj_val offs = tj_add(tj_mul(tj_program_id(0), BLOCK), tj_arange(0, BLOCK));
    tj_val mask = tj_lt(offs, n);
    tj_val v = tj_load(tj_add(x, offs), .mask = mask);
    tj_store(tj_add(y, offs), tj_add(tj_mul(v, a), b), .mask = mask);
}

enum { BLOCK = 1024, MAX_DEVICES = 64 };
static const float A = 2.5f, B = -1.0f;

/* One device's share: elements [start, start + count) of x and y. */
typedef struct part {
    tj_device *dev;
    int64_t start, count;
    const float *x;
    float *y;
    int reps;
    pthread_barrier_t *go;
    double ms;        /* the device's time for all reps (its events) */
    double begin, end; /* when its timed work was queued and done (host clock) */
} part;

static void launch(tj_device *dev, tj_buffer x, tj_buffer y, int64_t count)
{
    tj_launch_cfg cfg = {.grid = {cdiv(count, BLOCK)}};
    CHECK(axpb_kernel_launch(dev, &cfg, x, y, (int32_t)count, A, B, BLOCK));
}

static void *run_part(void *arg)
{
    part *p = arg;
    size_t bytes = (size_t)p->count * sizeof(float);
    tj_buffer x, y;
    CHECK(tj_buffer_alloc(p->dev, bytes, &x));
    CHECK(tj_buffer_alloc(p->dev, bytes, &y));
    CHECK(tj_buffer_write(p->dev, x, 0, p->x + p->start, bytes));
    launch(p->dev, x, y, p->count); /* compiles, or takes another GPU's compile */
    CHECK(tj_synchronize(p->dev));
    tj_event *start, *stop;
    CHECK(tj_event_create(p->dev, &start));
    CHECK(tj_event_create(p->dev, &stop));

    pthread_barrier_wait(p->go);
    p->begin = now_seconds();
    CHECK(tj_event_record(start, NULL));
    for (int r = 0; r < p->reps; r++)
        launch(p->dev, x, y, p->count);
    CHECK(tj_event_record(stop, NULL));
    CHECK(tj_event_synchronize(stop));
    p->end = now_seconds();
    float ms = 0;
    CHECK(tj_event_elapsed(start, stop, &ms));
    p->ms = ms;

    CHECK(tj_buffer_read(p->dev, y, 0, p->y + p->start, bytes));
    tj_event_destroy(start);
    tj_event_destroy(stop);
    CHECK(tj_buffer_free(p->dev, x));
    CHECK(tj_buffer_free(p->dev, y));
    return NULL;
}

static double gbps(int64_t count, int reps, double seconds)
{
    return 2.0 * (double)count * sizeof(float) * reps / seconds / 1e9; /* a read and a write each */
}

/* Runs the parts at once, a thread each; returns the total GB/s (bytes of
 * all parts over the wall time from the common start to the last done). */
static double run_all(part *parts, int n)
{
    pthread_t threads[MAX_DEVICES];
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, (unsigned)n + 1);
    for (int i = 0; i < n; i++) {
        parts[i].go = &go;
        pthread_create(&threads[i], NULL, run_part, &parts[i]);
    }
    pthread_barrier_wait(&go);
    int64_t total = 0;
    double start = 0, end = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(threads[i], NULL);
        if (i == 0 || parts[i].begin < start)
            start = parts[i].begin;
        if (i == 0 || parts[i].end > end)
            end = parts[i].end;
        total += parts[i].count;
    }
    pthread_barrier_destroy(&go);
    return gbps(total, parts[0].reps, end - start);
}

int main(int argc, char **argv)
{
    int ngpus = tj_device_count(TJ_DEVICE_GPU);
    char why[512]; /* tj_last_error's text lasts until the next tjit call */
    snprintf(why, sizeof why, "%s", ngpus ? "" : tj_last_error());
    const int64_t n = size_arg(argc, argv, 1, ngpus ? (int64_t)1 << 28 : (int64_t)1 << 22);
    const int reps = (int)size_arg(argc, argv, 2, 20);
    int64_t most = size_arg(argc, argv, 3, ngpus ? ngpus : 1);
    if (most > MAX_DEVICES)
        most = MAX_DEVICES;
    int ndev = ngpus && ngpus < most ? ngpus : (int)most;
    const int opened = ndev;
    const char *kind = ngpus ? (ndev == 1 ? "GPU" : "GPUs") : (ndev == 1 ? "CPU device" : "CPU devices");
    tj_device *devs[MAX_DEVICES];
    for (int i = 0; i < ndev; i++)
        CHECK(tj_device_open(&devs[i], ngpus ? TJ_DEVICE_GPU : TJ_DEVICE_CPU, ngpus ? i : 0));
    if (!ngpus)
        printf("multi_gpu: no GPU (%s): the CPU runs it all\n", why);
    printf("multi_gpu: n = %lld, %d %s, reps = %d, seed = %llu\n", (long long)n, ndev, kind, reps,
           (unsigned long long)sample_seed());

    float *x = xmalloc((size_t)n * sizeof(float));
    float *y = xmalloc((size_t)n * sizeof(float));
    fill_random(x, (size_t)n, -1, 1);

    part parts[MAX_DEVICES];
    for (int i = 0; i < ndev; i++) { /* rows split as evenly as BLOCK allows */
        int64_t blocks = cdiv(n, BLOCK), lo = blocks * i / ndev, hi = blocks * (i + 1) / ndev;
        int64_t start = lo * BLOCK, end = hi * BLOCK < n ? hi * BLOCK : n;
        parts[i] = (part){.dev = devs[i], .start = start, .count = end - start, .x = x, .y = y, .reps = reps};
    }
    for (int i = 0; i < ndev; i++) /* a device with no rows (tiny n) sits out */
        if (parts[i].count == 0)
            parts[i--] = parts[--ndev];
    if (ndev < opened)
        kind = ngpus ? (ndev == 1 ? "GPU" : "GPUs") : (ndev == 1 ? "CPU device" : "CPU devices");

    double one = 0;
    if (ndev > 1) { /* the baseline: device 0 alone, all of n */
        for (int64_t i = 0; i < n; i++)
            y[i] = NAN;
        part whole = {.dev = devs[0], .start = 0, .count = n, .x = x, .y = y, .reps = reps};
        one = run_all(&whole, 1);
        printf("one %s (%s 0, all %lld elements): %8.1f GB/s\n", ngpus ? "GPU" : "CPU device",
               ngpus ? "GPU" : "device", (long long)n, one);
    }
    for (int64_t i = 0; i < n; i++)
        y[i] = NAN;
    double total = run_all(parts, ndev);
    for (int i = 0; i < ndev; i++)
        printf("%s %d: %s: elements [%lld, %lld): %8.1f GB/s (%.3f ms per launch)\n", ngpus ? "GPU" : "device",
               i, tj_device_name(parts[i].dev), (long long)parts[i].start,
               (long long)(parts[i].start + parts[i].count),
               gbps(parts[i].count, reps, parts[i].ms / 1e3), parts[i].ms / reps);
    if (ndev > 1)
        printf("all %d %s: %8.1f GB/s total, %.2fx one\n", ndev, kind, total, total / one);
    else
        printf("total: %8.1f GB/s\n", total);

    /* a * x + b, possibly fused: within an ulp or two */
    int64_t bad = -1;
    for (int64_t i = 0; i < n && bad < 0; i++) {
        float want = A * x[i] + B;
        if (!(fabsf(y[i] - want) <= 1e-6f + 1e-6f * fabsf(want)))
            bad = i;
    }
    if (bad >= 0)
        printf("y[%lld] = %g, expected %g\n", (long long)bad, y[bad], A * x[bad] + B);
    printf("%s  multi_gpu  %.1f GB/s on %d %s\n", bad >= 0 ? "FAIL" : "PASS", total, ndev, kind);

    for (int i = 0; i < opened; i++)
        tj_device_close(devs[i]);
    free(x);
    free(y);
    return bad >= 0;
}
