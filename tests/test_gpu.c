/* SPDX-License-Identifier: MIT */
/*
 * test_gpu.c — what is particular to GPUs: PTX without a GPU, the ptxas
 * check, and the GPU device's runtime.
 *
 * Part 1 runs everywhere. tj_kernel_ptx gives PTX for the target asked
 * (argument, TJIT_PTX_TARGET, sm_90; sm_90a too) and num_warps, and refuses
 * bad targets, bad num_warps and bad programs with their messages.
 * TJIT_PTXAS is tried with programs that always reject (false), that accept
 * but report serialized wgmma instructions (a failure) or other remarks (not
 * one), or do not exist, on a CPU launch too, since the check covers every
 * variant compiled on any device. A
 * kernel taking a scalar of every dtype checks how the CPU passes them.
 *
 * Part 2 needs a GPU and is skipped, point for point, without one: the
 * device's name, buffers, launches at every num_warps, num_warps and grids a
 * GPU refuses, streams, out-of-memory, asynchronous launches whose device
 * asserts are reported by tj_synchronize and tj_buffer_read (and by the
 * launch itself under TJIT_LAUNCH_BLOCKING=1), the scalar kernel again
 * (kernel parameters marshalled for cuLaunchKernel), and a launch from
 * another thread (the context is made current there).
 */
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testlib.h"

enum { GPU_POINTS = 23 };

TJ_KERNEL(vadd, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(y, f32), TJ_PTR(out, f32), TJ_SCALAR(n, i32)),
          TJ_CONSTS(BLOCK))
{
    tj_val offs = tj_add(tj_mul(tj_program_id(0), BLOCK), tj_arange(0, BLOCK));
    tj_val mask = tj_lt(offs, n);
    tj_val a = tj_load(tj_add(x, offs), .mask = mask);
    tj_val b = tj_load(tj_add(y, offs), .mask = mask);
    tj_store(tj_add(out, offs), tj_add(a, b), .mask = mask);
}

static int bad_shapes_line;

TJ_KERNEL(bad_shapes, TJ_PARAMS(TJ_PTR(x, i32)), TJ_CONSTS())
{
    tj_val a = tj_arange(0, 16), b = tj_arange(0, 32);
    bad_shapes_line = __LINE__ + 1;
    tj_store(tj_add(x, a), tj_add(a, b));
}

static int assert_line;

/* Asserts that every element of x is below limit. */
TJ_KERNEL(checked, TJ_PARAMS(TJ_PTR(x, i32), TJ_SCALAR(limit, i32)), TJ_CONSTS(BLOCK))
{
    tj_val offs = tj_add(tj_mul(tj_program_id(0), BLOCK), tj_arange(0, BLOCK));
    tj_val v = tj_load(tj_add(x, offs));
    assert_line = __LINE__ + 1;
    tj_device_assert(tj_lt(v, limit), "value below limit");
}

/* out[q] = scalar parameter q as f64, for a scalar of each dtype. */
TJ_KERNEL(scalars,
          TJ_PARAMS(TJ_PTR(out, f64), TJ_SCALAR(a, i8), TJ_SCALAR(b, u8), TJ_SCALAR(c, i16),
                    TJ_SCALAR(d, u16), TJ_SCALAR(e, i32), TJ_SCALAR(f, u32), TJ_SCALAR(g, i64),
                    TJ_SCALAR(h, u64), TJ_SCALAR(i, f16), TJ_SCALAR(j, bf16), TJ_SCALAR(k, f32),
                    TJ_SCALAR(l, f64), TJ_SCALAR(m, i1)),
          TJ_CONSTS())
{
    const tj_val s[13] = {a, b, c, d, e, f, g, h, i, j, k, l, m};
    for (int q = 0; q < 13; q++)
        tj_store(tj_add(out, q), tj_cast(s[q], TJ_F64));
}

static tj_device *cpu;

/* ---- part 1: PTX anywhere ------------------------------------------------ */

static int contains(const char *text, const char *what) { return text && strstr(text, what); }

static void test_kernel_ptx(void)
{
    int64_t block = 256;
    char *ptx = NULL;
    tj_status st = tj_kernel_ptx(vadd, &block, 1, "sm_90", 4, &ptx);
    tap_ok(st == TJ_OK && contains(ptx, ".entry") && contains(ptx, ".target sm_90"),
           "tj_kernel_ptx for sm_90 gives PTX with an .entry and '.target sm_90' (%s)",
           tj_status_name(st));
    if (st != TJ_OK)
        tap_diag("  %s", tj_last_error());
    free(ptx);

    ptx = NULL;
    st = tj_kernel_ptx(vadd, &block, 1, "sm_90a", 4, &ptx);
    tap_ok(st == TJ_OK && contains(ptx, ".target sm_90a"),
           "sm_90a, the architecture-specific target: '.target sm_90a' (%s; assembled for sm_90a where "
           "TJIT_PTXAS is set)",
           tj_status_name(st));
    if (st != TJ_OK)
        tap_diag("  %s", tj_last_error());
    free(ptx);

    ptx = NULL;
    st = tj_kernel_ptx(vadd, &block, 1, "sm_80", 8, &ptx);
    tap_ok(st == TJ_OK && contains(ptx, ".target sm_80") && contains(ptx, "256"),
           "sm_80 and num_warps 8: '.target sm_80', 256 threads (%s)", tj_status_name(st));
    free(ptx);

    const char *saved = getenv("TJIT_PTX_TARGET");
    char *saved_copy = saved ? strdup(saved) : NULL;
    setenv("TJIT_PTX_TARGET", "sm_86", 1);
    ptx = NULL;
    st = tj_kernel_ptx(vadd, &block, 1, NULL, 0, &ptx);
    tap_ok(st == TJ_OK && contains(ptx, ".target sm_86"),
           "target NULL: TJIT_PTX_TARGET=sm_86 is used (%s)", tj_status_name(st));
    free(ptx);
    unsetenv("TJIT_PTX_TARGET");
    ptx = NULL;
    st = tj_kernel_ptx(vadd, &block, 1, NULL, 0, &ptx);
    tap_ok(st == TJ_OK && contains(ptx, ".target sm_90"),
           "target NULL and no TJIT_PTX_TARGET: sm_90 (%s)", tj_status_name(st));
    free(ptx);
    if (saved_copy)
        setenv("TJIT_PTX_TARGET", saved_copy, 1);
    free(saved_copy);

    static const char *const bad_targets[] = {"sm_70", "compute_90", "sm_9x", "sm_", "", "sm_80a", "sm_90b",
                                              "sm_90aa"};
    for (size_t t = 0; t < TL_COUNT(bad_targets); t++) {
        ptx = (char *)"untouched";
        st = tj_kernel_ptx(vadd, &block, 1, bad_targets[t], 4, &ptx);
        tap_ok(st == TJ_ERR_INVALID_ARG && ptx == NULL &&
                   tl_error_mentions("tj_kernel_ptx", bad_targets[t], NULL),
               "target \"%s\" -> TJ_ERR_INVALID_ARG naming it (%s)", bad_targets[t],
               tj_status_name(st));
    }
    static const int bad_warps[] = {3, 64, -4};
    for (size_t w = 0; w < TL_COUNT(bad_warps); w++) {
        st = tj_kernel_ptx(vadd, &block, 1, "sm_90", bad_warps[w], &ptx);
        tap_ok(st == TJ_ERR_INVALID_ARG && tl_error_mentions("num_warps", NULL),
               "num_warps %d -> TJ_ERR_INVALID_ARG (%s)", bad_warps[w], tj_status_name(st));
    }
    st = tj_kernel_ptx(vadd, &block, 1, "sm_90", 4, NULL);
    tap_ok(st == TJ_ERR_INVALID_ARG, "out_ptx NULL -> TJ_ERR_INVALID_ARG (%s)", tj_status_name(st));
    st = tj_kernel_ptx(vadd, NULL, 0, "sm_90", 4, &ptx);
    tap_ok(st != TJ_OK && ptx == NULL, "no constants for a kernel with one -> an error (%s)",
           tj_status_name(st));
    st = tj_kernel_ptx(bad_shapes, NULL, 0, "sm_90", 4, &ptx);
    tap_ok(st == TJ_ERR_SHAPE && tl_error_mentions(tl_where(__FILE__, bad_shapes_line), NULL),
           "a bad program -> its own error, naming its line (%s)", tj_status_name(st));
}

/* Makes the shell script at path a fake ptxas that prints remark (one
 * line, to stderr) and succeeds, then compiles vadd's PTX for sm_90a under
 * it: the status, *ptx the text (freed by the caller). 0 in *written where
 * the script could not be written. */
static tj_status ptx_under_remark(const char *path, const char *remark, int64_t *block, char **ptx, int *written)
{
    FILE *f = fopen(path, "w");
    *written = f != NULL;
    if (f) {
        fprintf(f, "#!/bin/sh\necho \"ptxas info    : %s\" >&2\nexit 0\n", remark);
        fclose(f);
        chmod(path, 0700);
    }
    *ptx = NULL;
    return tj_kernel_ptx(vadd, block, 1, "sm_90a", 4, ptx);
}

/* TJIT_PTXAS set to a program that always fails, or to none at all. */
static void test_ptxas_check(void)
{
    const char *saved = getenv("TJIT_PTXAS");
    char *saved_copy = saved ? strdup(saved) : NULL;
    int64_t block = 128; /* a variant the CPU device has not compiled yet */
    char *ptx = NULL;

    setenv("TJIT_PTXAS", "false", 1);
    tj_status st = tj_kernel_ptx(vadd, &block, 1, "sm_90", 4, &ptx);
    tap_ok(st == TJ_ERR_COMPILE && ptx == NULL && tl_error_mentions("ptxas", "vadd", NULL),
           "TJIT_PTXAS=false: tj_kernel_ptx fails with TJ_ERR_COMPILE naming ptxas and the kernel (%s)",
           tj_status_name(st));

    enum { N = 1000 };
    float x[N];
    tl_fill_random(TJ_F32, x, N);
    tj_buffer bx = tl_upload(cpu, x, sizeof x), bo = tl_poisoned(cpu, sizeof x);
    tj_launch_cfg cfg = tl_grid((N + block - 1) / block, 1, 1);
    st = vadd_launch(cpu, &cfg, bx, bx, bo, N, block);
    tap_ok(st == TJ_ERR_COMPILE && tl_error_mentions("ptxas", "vadd", NULL),
           "TJIT_PTXAS=false fails a CPU launch too (%s)", tj_status_name(st));

    /* ptxas that assembles but reports serialized instructions (as it does
     * for a wgmma pipeline it cannot keep asynchronous): a failure; any other
     * remark is not */
    char script[] = "/tmp/tjit-fake-ptxas-XXXXXX";
    int fd = mkstemp(script), written;
    if (fd >= 0)
        close(fd);
    setenv("TJIT_PTXAS", script, 1);
    st = ptx_under_remark(script,
                          "(C7515) Potential Performance Loss: wgmma.mma_async instructions are serialized due "
                          "to non wgmma instructions",
                          &block, &ptx, &written);
    tap_ok(written && st == TJ_ERR_COMPILE && ptx == NULL && tl_error_mentions("C7515", "serialized", "vadd", NULL),
           "a ptxas that reports serialized wgmma: TJ_ERR_COMPILE with its message and the kernel (%s)",
           tj_status_name(st));
    free(ptx);
    /* C7519 is an info line, not a "Performance Loss": a fence ptxas
     * injected before a wgmma, which then waits for the register writes
     * before it (issue 11 names it with the serialization codes) */
    st = ptx_under_remark(script,
                          "(C7519) warpgroup.arrive is injected in around line 642 by compiler to allow use of "
                          "registers in GMMA in function 'tjk_vadd'",
                          &block, &ptx, &written);
    tap_ok(written && st == TJ_ERR_COMPILE && ptx == NULL &&
               tl_error_mentions("C7519", "warpgroup.arrive", "vadd", NULL),
           "a ptxas that injects a warpgroup.arrive (C7519): TJ_ERR_COMPILE with its message and the kernel (%s)",
           tj_status_name(st));
    free(ptx);
    st = ptx_under_remark(script, "0 bytes gmem", &block, &ptx, &written);
    tap_ok(written && st == TJ_OK && ptx != NULL, "a ptxas whose remarks report nothing serialized: TJ_OK (%s)",
           tj_status_name(st));
    free(ptx);
    unlink(script);

    setenv("TJIT_PTXAS", "/nonexistent/ptxas", 1);
    st = vadd_launch(cpu, &cfg, bx, bx, bo, N, block);
    tap_ok(st == TJ_ERR_COMPILE && tl_error_mentions("/nonexistent/ptxas", NULL),
           "TJIT_PTXAS naming no program -> TJ_ERR_COMPILE naming it (%s)", tj_status_name(st));

    unsetenv("TJIT_PTXAS");
    st = vadd_launch(cpu, &cfg, bx, bx, bo, N, block);
    float got[N], want[N];
    for (int i = 0; i < N; i++)
        want[i] = x[i] + x[i];
    if (!tl_launch_failed(st, "without TJIT_PTXAS the same variant compiles and runs")) {
        tl_download(cpu, bo, got, sizeof got);
        tl_check("without TJIT_PTXAS the same variant compiles and runs", TJ_F32, got, want, N, 0, 0);
    }
    if (saved_copy)
        setenv("TJIT_PTXAS", saved_copy, 1);
    free(saved_copy);
    tj_buffer_free(cpu, bx);
    tj_buffer_free(cpu, bo);
}

/* Launches scalars with one value of each dtype and checks what arrived. */
static void check_scalars(tj_device *dev, const char *where)
{
    const double want[13] = {-100, 200, -30000, 60000, -2000000000.0, 4000000000.0,
                             -(double)((int64_t)1 << 40) - 3, (double)(((uint64_t)1 << 60) + 5),
                             1.5, -2.5, 3.25, 1e300, 1};
    double got[13];
    tj_buffer bo = tl_poisoned(dev, sizeof got);
    tj_launch_cfg cfg = tl_grid(1, 1, 1);
    tj_status st = scalars_launch(dev, &cfg, bo, -100, 200, -30000, 60000, -2000000000,
                                  4000000000u, -((int64_t)1 << 40) - 3, ((uint64_t)1 << 60) + 5,
                                  1.5f, -2.5f, 3.25f, 1e300, 1);
    char what[128];
    snprintf(what, sizeof what, "%s: a scalar of every dtype arrives intact", where);
    if (st == TJ_OK)
        st = tj_synchronize(dev);
    if (!tl_launch_failed(st, what)) {
        tl_download(dev, bo, got, sizeof got);
        tl_check(what, TJ_F64, got, want, 13, 0, 0);
    }
    tj_buffer_free(dev, bo);
}

/* ---- part 2: the GPU device ---------------------------------------------- */

enum { VN = 100003 };
static float vx[VN], vy[VN], vwant[VN], vgot[VN];

/* vadd on dev with num_warps; returns its status, checks nothing. */
static tj_status run_vadd(tj_device *dev, tj_buffer bx, tj_buffer by, tj_buffer bo, int num_warps,
                          int64_t block)
{
    tj_launch_cfg cfg = tl_grid((VN + block - 1) / block, 1, 1);
    cfg.num_warps = num_warps;
    return vadd_launch(dev, &cfg, bx, by, bo, VN, block);
}

typedef struct thread_job {
    tj_device *dev;
    tj_buffer bx, by, bo;
    tj_status st;
    char error[512];
} thread_job;

static void *launch_on_thread(void *arg)
{
    thread_job *job = arg;
    job->st = run_vadd(job->dev, job->bx, job->by, job->bo, 4, 512);
    if (job->st == TJ_OK)
        job->st = tj_buffer_read(job->dev, job->bo, 0, vgot, sizeof vgot);
    snprintf(job->error, sizeof job->error, "%s", tj_last_error());
    return NULL;
}

static void test_gpu_device(tj_device *gpu)
{
    const char *name = tj_device_name(gpu);
    tap_ok(tj_device_get_kind(gpu) == TJ_DEVICE_GPU && contains(name, "(sm_") &&
               contains(name, "SMs)"),
           "the GPU device: kind GPU, name \"%s\"", name);

    /* buffers */
    tl_fill_random(TJ_F32, vx, VN);
    tl_fill_random(TJ_F32, vy, VN);
    for (int i = 0; i < VN; i++)
        vwant[i] = vx[i] + vy[i];
    tj_buffer bx = tl_upload(gpu, vx, sizeof vx), by = tl_upload(gpu, vy, sizeof vy);
    tj_buffer bo = tl_poisoned(gpu, sizeof vgot);
    float part[100];
    tj_status st = tj_buffer_read(gpu, bx, 4 * 5000, part, sizeof part);
    tap_ok(st == TJ_OK && memcmp(part, vx + 5000, sizeof part) == 0,
           "a buffer written whole reads back at an offset (%s)", tj_status_name(st));

    /* launches at every num_warps */
    static const int warps[] = {1, 2, 4, 8, 16, 32};
    for (size_t w = 0; w < TL_COUNT(warps); w++) {
        char what[96];
        snprintf(what, sizeof what, "vector add of %d elements with num_warps = %d", VN, warps[w]);
        tl_repoison(gpu, bo, sizeof vgot);
        st = run_vadd(gpu, bx, by, bo, warps[w], 1024);
        if (!tl_launch_failed(st, what)) {
            tl_download(gpu, bo, vgot, sizeof vgot);
            tl_check(what, TJ_F32, vgot, vwant, VN, 0, 0);
        }
    }
    st = run_vadd(gpu, bx, by, bo, 3, 1024);
    tap_ok(st == TJ_ERR_LAUNCH && tl_error_mentions("num_warps", NULL),
           "num_warps = 3 -> TJ_ERR_LAUNCH (%s)", tj_status_name(st));
    st = run_vadd(gpu, bx, by, bo, 64, 1024);
    tap_ok(st == TJ_ERR_LAUNCH && tl_error_mentions("num_warps", NULL),
           "num_warps = 64 -> TJ_ERR_LAUNCH (%s)", tj_status_name(st));
    tj_launch_cfg cfg = tl_grid(1, 70000, 1);
    st = vadd_launch(gpu, &cfg, bx, by, bo, VN, 1024);
    tap_ok(st == TJ_ERR_LAUNCH && tl_error_mentions("grid", "65535", NULL),
           "a grid of 70000 along y -> TJ_ERR_LAUNCH (%s)", tj_status_name(st));
    cfg = tl_grid((VN + 1023) / 1024, 1, 1);
    st = tj_stream_create(gpu, &cfg.stream);
    if (st == TJ_OK)
        st = vadd_launch(gpu, &cfg, bx, by, bo, VN, 1024);
    if (st == TJ_OK)
        st = tj_stream_synchronize(cfg.stream);
    tj_stream_destroy(cfg.stream);
    if (st == TJ_OK)
        st = tj_buffer_read(gpu, bo, 0, vgot, sizeof vgot);
    tap_ok(st == TJ_OK && memcmp(vgot, vwant, sizeof vgot) == 0,
           "a launch on a stream of its own, waited for by its synchronize (%s)", tj_status_name(st));

    tj_buffer huge;
    st = tj_buffer_alloc(gpu, (size_t)1 << 50, &huge);
    tap_ok(st == TJ_ERR_OUT_OF_MEMORY && tl_error_mentions("cuMemAlloc", "CUDA_ERROR_OUT_OF_MEMORY", NULL),
           "a buffer of 2^50 bytes -> TJ_ERR_OUT_OF_MEMORY with the CUDA error (%s)",
           tj_status_name(st));

    /* device asserts, found when the host waits */
    enum { G = 8, B = 128 };
    int32_t xs[G * B];
    tl_fill_range(TJ_I32, xs, G * B, -1000, 999);
    int bad = 5 * B + (int)tl_rand_range(0, B - 1);
    xs[bad] = 5000;
    tj_buffer bxs = tl_upload(gpu, xs, sizeof xs);
    cfg = tl_grid(G, 1, 1);
    st = checked_launch(gpu, &cfg, bxs, 1000, B);
    tap_ok(st == TJ_OK, "a launch whose assert fails returns TJ_OK: it is asynchronous (%s)",
           tj_status_name(st));
    st = tj_synchronize(gpu);
    tap_ok(st == TJ_ERR_ASSERT && tl_error_mentions(tl_where(__FILE__, assert_line), "checked",
                                                    "value below limit", "(5, 0, 0)", NULL),
           "tj_synchronize reports it: file:line, kernel, program (5, 0, 0), message (%s)",
           tj_status_name(st));
    tap_diag("  message: %s", tj_last_error());
    st = tj_synchronize(gpu);
    tap_ok(st == TJ_OK, "... once: the next tj_synchronize is TJ_OK (%s)", tj_status_name(st));
    st = checked_launch(gpu, &cfg, bxs, 1000, B);
    if (st == TJ_OK)
        st = tj_buffer_read(gpu, bxs, 0, part, sizeof part);
    tap_ok(st == TJ_ERR_ASSERT && tl_error_mentions("value below limit", NULL),
           "tj_buffer_read reports a failed assert too (%s)", tj_status_name(st));
    st = checked_launch(gpu, &cfg, bxs, 6000, B);
    if (st == TJ_OK)
        st = tj_synchronize(gpu);
    tap_ok(st == TJ_OK, "the kernel runs again with every assert passing (%s)", tj_status_name(st));

    setenv("TJIT_LAUNCH_BLOCKING", "1", 1);
    tj_device *blocking = NULL;
    st = tj_device_open(&blocking, TJ_DEVICE_GPU, 0);
    unsetenv("TJIT_LAUNCH_BLOCKING");
    if (st == TJ_OK) {
        tj_buffer bxb = tl_upload(blocking, xs, sizeof xs);
        st = checked_launch(blocking, &cfg, bxb, 1000, B);
        tap_ok(st == TJ_ERR_ASSERT && tl_error_mentions("value below limit", NULL),
               "TJIT_LAUNCH_BLOCKING=1: the launch itself reports the assert (%s)",
               tj_status_name(st));
        tj_device_close(blocking);
    } else {
        tap_ok(0, "TJIT_LAUNCH_BLOCKING=1: a second GPU device opens (%s: %s)", tj_status_name(st),
               tj_last_error());
    }

    check_scalars(gpu, "GPU");

    /* another thread */
    tl_repoison(gpu, bo, sizeof vgot);
    thread_job job = {gpu, bx, by, bo, TJ_OK, ""};
    pthread_t thread;
    if (pthread_create(&thread, NULL, launch_on_thread, &job) == 0) {
        pthread_join(thread, NULL);
        if (job.st != TJ_OK) {
            tap_ok(0, "a launch and a read from another thread");
            tap_diag("  %s: %s", tj_status_name(job.st), job.error);
        } else {
            tl_check("a launch and a read from another thread", TJ_F32, vgot, vwant, VN, 0, 0);
        }
    } else {
        tap_ok(0, "a launch and a read from another thread (pthread_create failed)");
    }

    tj_device *other = NULL;
    st = tj_device_open(&other, TJ_DEVICE_GPU, 1000);
    tap_ok(st == TJ_ERR_INVALID_ARG && tl_error_mentions("1000", NULL),
           "GPU ordinal 1000 -> TJ_ERR_INVALID_ARG (%s)", tj_status_name(st));
    const char *saved = getenv("TJIT_DEVICE");
    char *saved_copy = saved ? strdup(saved) : NULL;
    unsetenv("TJIT_DEVICE");
    st = tj_device_open(&other, TJ_DEVICE_DEFAULT, 0);
    tap_ok(st == TJ_OK && tj_device_get_kind(other) == TJ_DEVICE_GPU,
           "TJ_DEVICE_DEFAULT opens the GPU where there is one (%s)", tj_status_name(st));
    if (st == TJ_OK)
        tj_device_close(other);
    if (saved_copy)
        setenv("TJIT_DEVICE", saved_copy, 1);
    free(saved_copy);
}

int main(void)
{
    cpu = tl_setup("test_gpu");
    if (tj_device_get_kind(cpu) != TJ_DEVICE_CPU) {
        /* The GPU runs of make check open the GPU in part 2 anyway. */
        tj_device_close(cpu);
        if (tj_device_open(&cpu, TJ_DEVICE_CPU, 0) != TJ_OK)
            tap_bail_out("cannot open the CPU device: %s", tj_last_error());
    }
    test_kernel_ptx();
    test_ptxas_check();
    check_scalars(cpu, "CPU");

    tj_device *gpu = NULL;
    tj_status st = tj_device_open(&gpu, TJ_DEVICE_GPU, 0);
    if (st == TJ_OK) {
        tap_diag("GPU: %s", tj_device_name(gpu));
        int before = tap__state()->run;
        test_gpu_device(gpu);
        int ran = tap__state()->run - before;
        if (ran != GPU_POINTS)
            tap_ok(0, "part 2 ran %d points, GPU_POINTS says %d", ran, GPU_POINTS);
        tj_device_close(gpu);
    } else if (st == TJ_ERR_DEVICE && strstr(tj_last_error(), "no GPU")) {
        char reason[600];
        snprintf(reason, sizeof reason, "no GPU (%s)", tj_last_error());
        tap_skip(GPU_POINTS, reason);
    } else {
        tap_ok(0, "the GPU opens where the driver is present");
        tap_diag("  %s: %s", tj_status_name(st), tj_last_error());
        tap_skip(GPU_POINTS - 1, "the GPU does not open");
    }
    tj_device_close(cpu);
    return tap_done();
}
