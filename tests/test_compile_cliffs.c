/* SPDX-License-Identifier: MIT */
/*
 * test_compile_cliffs.c — kernels that crashed, hung or took seconds to be
 * refused while being compiled (issue 8, items 8, 10 and 11).
 *
 *  - A long chain of element-wise ops built, printed, compiled and run on
 *    a thread with a 256 KiB stack: every walk over the IR recursed along
 *    the chain and overflowed that stack at about 1,000 ops. tj_kernel_ir
 *    and tj_kernel_ptx take a 100,000-op kernel, the CPU compiles and runs
 *    a 10,000-op one (sizes that keep the test at seconds), and the results
 *    match the same chain computed in C, in the same f32 rounding.
 *  - argmax and argmin along the 32-long axis of a [1,32] and a [32,1]
 *    tile at constant addresses: LLVM 22's loop vectorizer recursed without
 *    end on the code once generated for them, and the launch never
 *    returned (the IR is tests/llvm/argmax_loop_vectorize_hang.ll). An
 *    alarm turns a regression into a failure rather than a hang.
 *  - A 2048 x 2048 tile is refused for the GPU with an error that names the
 *    kernel, the op and the line, before any layout work (it took 13.5 s;
 *    how long it takes now is bench/compile_bench's to measure).
 */
#include <pthread.h>

#include "testlib.h"

static tj_device *dev;

enum { LANES = 64, STACK_BYTES = 256 * 1024 };

/* y = STEPS times v = v * 0.999 + 0.5 (4 ops a step with the two splats). */
TJ_KERNEL(long_chain, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(y, f32)), TJ_CONSTS(STEPS))
{
    tj_val o = tj_arange(0, LANES);
    tj_val v = tj_load(tj_add(x, o));
    for (int64_t i = 0; i < STEPS; i++)
        v = tj_add(tj_mul(v, 0.999f), 0.5f);
    tj_store(tj_add(y, o), v);
}

typedef struct chain_job {
    int64_t ir_steps, run_steps, ptx_steps;
    tj_status ir, run, ptx;
    size_t ir_chars;
    char error[512];
    float x[LANES], y[LANES];
} chain_job;

static void keep_error(chain_job *job, tj_status st)
{
    if (st != TJ_OK && !job->error[0])
        snprintf(job->error, sizeof job->error, "%s: %s", tj_status_name(st), tj_last_error());
}

static void *build_chains(void *arg)
{
    chain_job *job = arg;
    char *text = NULL;
    job->ir = tj_kernel_ir(long_chain, &job->ir_steps, 1, &text);
    job->ir_chars = text ? strlen(text) : 0;
    free(text);
    keep_error(job, job->ir);
    job->ptx = tj_kernel_ptx(long_chain, &job->ptx_steps, 1, "sm_90", 4, &text);
    free(text);
    keep_error(job, job->ptx);
    tj_buffer bx = tl_upload(dev, job->x, sizeof job->x), by = tl_poisoned(dev, sizeof job->y);
    tj_launch_cfg cfg = tl_grid(1, 1, 1);
    job->run = long_chain_launch(dev, &cfg, bx, by, job->run_steps);
    keep_error(job, job->run);
    if (job->run == TJ_OK)
        tl_download(dev, by, job->y, sizeof job->y);
    tj_buffer_free(dev, bx);
    tj_buffer_free(dev, by);
    return NULL;
}

static void test_long_chains(void)
{
    chain_job job = {.ir_steps = 25000, .run_steps = 2500, .ptx_steps = 25000};
    for (int i = 0; i < LANES; i++)
        job.x[i] = (float)tl_rand_double(-100, 100);
    pthread_attr_t attr;
    pthread_t thread;
    pthread_attr_init(&attr);
    if (pthread_attr_setstacksize(&attr, STACK_BYTES) != 0 ||
        pthread_create(&thread, &attr, build_chains, &job) != 0)
        tap_bail_out("cannot start a thread with a %d-byte stack", STACK_BYTES);
    pthread_join(thread, NULL);
    pthread_attr_destroy(&attr);
    if (job.error[0])
        tap_diag("  %s", job.error);
    tap_ok(job.ir == TJ_OK && job.ir_chars > 100000,
           "on a 256 KiB stack: tj_kernel_ir of a 100,000-op chain (%zu characters)", job.ir_chars);
    tap_ok(job.ptx == TJ_OK, "on a 256 KiB stack: tj_kernel_ptx of a 100,000-op chain");
    int bad = 0;
    for (int i = 0; job.run == TJ_OK && i < LANES; i++) {
        float v = job.x[i];
        for (int64_t s = 0; s < job.run_steps; s++) {
            volatile float t = v * 0.999f; /* one rounding per op, as the kernel */
            v = t + 0.5f;
        }
        if (memcmp(&v, &job.y[i], sizeof v) != 0 && bad++ < 5)
            tap_diag("  [%d] got %.9g, expected %.9g", i, job.y[i], v);
    }
    tap_ok(job.run == TJ_OK && bad == 0,
           "on a 256 KiB stack: a 10,000-op chain compiles, runs and matches C");
}

/* argmax/argmin of x[0..31] as a [1,32] (ROWS = 0) or [32,1] tile. */
TJ_KERNEL(arg_extreme, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(out, i32)), TJ_CONSTS(ROWS, IS_MAX))
{
    tj_val i = tj_arange(0, 32);
    tj_val v = tj_load(tj_add(x, tj_expand_dims(i, ROWS ? 1 : 0)));
    tj_val best = IS_MAX ? tj_argmax(v, ROWS ? 0 : 1) : tj_argmin(v, ROWS ? 0 : 1);
    tj_store(tj_add(out, tj_arange(0, 1)), best);
}

static void test_arg_extremes(void)
{
    alarm(tl_watchdog_seconds()); /* was: never returned */
    for (int rows = 0; rows < 2; rows++)
        for (int is_max = 0; is_max < 2; is_max++) {
            float x[32];
            for (int i = 0; i < 32; i++)
                x[i] = (float)tl_rand_double(-1000, 1000);
            int want = 0;
            for (int i = 1; i < 32; i++)
                if (is_max ? x[i] > x[want] : x[i] < x[want])
                    want = i;
            tj_buffer bx = tl_upload(dev, x, sizeof x), bo = tl_poisoned(dev, 4);
            tj_launch_cfg cfg = tl_grid(3, 1, 1);
            char what[96];
            snprintf(what, sizeof what, "%s along the 32-long axis of a %s tile at constant addresses",
                     is_max ? "argmax" : "argmin", rows ? "[32,1]" : "[1,32]");
            if (!tl_launch_failed(arg_extreme_launch(dev, &cfg, bx, bo, rows, is_max), what)) {
                int32_t got = -1;
                tl_download(dev, bo, &got, 4);
                tap_ok(got == want, "%s (got %d, expected %d)", what, got, want);
            }
            tj_buffer_free(dev, bx);
            tj_buffer_free(dev, bo);
        }
    alarm(tl_watchdog_seconds());
}

static const int huge_tile_line = __LINE__ + 4; /* the line of o */
TJ_KERNEL(huge_tile, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(y, f32)), TJ_CONSTS(R, C))
{
    tj_val r = tj_expand_dims(tj_arange(0, R), 1), c = tj_expand_dims(tj_arange(0, C), 0);
    tj_val o = tj_add(tj_mul(r, C), c); /* the first tile of R x C elements */
    tj_store(tj_add(y, o), tj_add(tj_load(tj_add(x, o)), 1.0f));
}

static void test_huge_tile(void)
{
    int64_t shape[2] = {2048, 2048};
    char *ptx = NULL, line[64];
    tj_status st = tj_kernel_ptx(huge_tile, shape, 2, "sm_90", 4, &ptx);
    const char *msg = tj_last_error();
    snprintf(line, sizeof line, "test_compile_cliffs.c:%d:", huge_tile_line);
    tap_ok(st == TJ_ERR_COMPILE && strstr(msg, line) && strstr(msg, "kernel 'huge_tile'") &&
               strstr(msg, "op 'broadcast'") && strstr(msg, "4194304 elements"),
           "a 2048 x 2048 tile is refused for the GPU, naming kernel, op and line");
    tap_diag("  %s: %s", tj_status_name(st), msg);
    free(ptx);
}

int main(void)
{
    dev = tl_setup("test_compile_cliffs");
    test_long_chains();
    test_arg_extremes();
    test_huge_tile();
    tj_device_close(dev);
    return tap_done();
}
