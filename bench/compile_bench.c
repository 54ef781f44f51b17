/* SPDX-License-Identifier: MIT */
/*
 * compile_bench.c — how compile time grows with a kernel's size.
 *
 * A kernel of STEPS steps v = v * 0.999 + 0.5 on a tile (4 IR ops a step:
 * two splats of the constants, a multiply and an add) between one load and
 * one store is compiled for the CPU (its first launch, one program: the
 * run itself is negligible) and for the GPU (tj_kernel_ptx, no GPU
 * needed), at sizes doubling from about 750 to 24,000 ops (or max_ops),
 * the best of three compiles each. Each line gives
 * the op count (from tj_kernel_ir), wall seconds and the compiling thread's
 * CPU seconds (the compile runs on the caller's thread, so CPU time is the
 * steadier figure on a shared machine), and the ratio to the line before:
 * doubling the ops should at most multiply the time by 2.5 (issue 8).
 * Then the time to refuse a 2048 x 2048 tile for the GPU.
 *
 * Usage: compile_bench [max_ops] (default 32000).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tjit.h"

TJ_KERNEL(chain, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(y, f32)), TJ_CONSTS(STEPS, N))
{
    tj_val o = tj_arange(0, N);
    tj_val v = tj_load(tj_add(x, o));
    for (int64_t i = 0; i < STEPS; i++)
        v = tj_add(tj_mul(v, 0.999f), 0.5f);
    tj_store(tj_add(y, o), v);
}

TJ_KERNEL(huge_tile, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(y, f32)), TJ_CONSTS(R, C))
{
    tj_val r = tj_expand_dims(tj_arange(0, R), 1), c = tj_expand_dims(tj_arange(0, C), 0);
    tj_val o = tj_add(tj_mul(r, C), c);
    tj_store(tj_add(y, o), tj_add(tj_load(tj_add(x, o)), 1.0f));
}

static double seconds(clockid_t clock)
{
    struct timespec t;
    clock_gettime(clock, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void die(const char *what, tj_status st)
{
    fprintf(stderr, "compile_bench: %s: %s: %s\n", what, tj_status_name(st), tj_last_error());
    exit(1);
}

/* The ops of a kernel: the lines of its IR that are ops. */
static int count_ops(const int64_t *consts)
{
    char *ir = NULL;
    tj_status st = tj_kernel_ir(chain, consts, 2, &ir);
    if (st != TJ_OK)
        die("tj_kernel_ir", st);
    int n = 0;
    for (const char *p = ir; (p = strstr(p, "\n  ")) != NULL; p++)
        n++;
    free(ir);
    return n;
}

/* Compile seconds (process CPU) of chain at consts for the CPU (a fresh
 * device each time, so the variant cache does not answer) and the GPU:
 * the best of REPEATS, wall seconds of the same run in wall[]. */
enum { REPEATS = 3 };
static void time_compiles(const int64_t *consts, double cpu[2], double wall[2])
{
    cpu[0] = cpu[1] = 1e30;
    wall[0] = wall[1] = 0;
    for (int r = 0; r < REPEATS; r++) {
        tj_device *dev = NULL;
        tj_buffer bx, by;
        tj_status st = tj_device_open(&dev, TJ_DEVICE_CPU, 0);
        if (st != TJ_OK || (st = tj_buffer_alloc(dev, 4 * 1024, &bx)) != TJ_OK ||
            (st = tj_buffer_alloc(dev, 4 * 1024, &by)) != TJ_OK)
            die("tj_device_open / tj_buffer_alloc", st);
        tj_launch_cfg cfg;
        memset(&cfg, 0, sizeof cfg);
        cfg.grid[0] = 1;
        double w0 = seconds(CLOCK_MONOTONIC), c0 = seconds(CLOCK_PROCESS_CPUTIME_ID);
        if ((st = chain_launch(dev, &cfg, bx, by, consts[0], consts[1])) != TJ_OK)
            die("chain_launch", st);
        double w1 = seconds(CLOCK_MONOTONIC), c1 = seconds(CLOCK_PROCESS_CPUTIME_ID);
        char *ptx = NULL;
        if ((st = tj_kernel_ptx(chain, consts, 2, "sm_90", 4, &ptx)) != TJ_OK)
            die("tj_kernel_ptx", st);
        free(ptx);
        double w2 = seconds(CLOCK_MONOTONIC), c2 = seconds(CLOCK_PROCESS_CPUTIME_ID);
        if (c1 - c0 < cpu[0])
            cpu[0] = c1 - c0, wall[0] = w1 - w0;
        if (c2 - c1 < cpu[1])
            cpu[1] = c2 - c1, wall[1] = w2 - w1;
        tj_device_close(dev);
    }
}

int main(int argc, char **argv)
{
    setenv("TJIT_CACHE", "0", 1); /* compiles are measured, not the disk cache */
    int max_ops = argc > 1 ? atoi(argv[1]) : 32000;
    static const int tiles[] = {64, 1024};
    for (size_t t = 0; t < sizeof tiles / sizeof tiles[0]; t++) {
        printf("# tile [%d]: ops -> compile seconds, best of %d (wall, process CPU; CPU ratio to the size before)\n",
               tiles[t], REPEATS);
        printf("%8s %10s %10s %7s %10s %10s %7s\n", "ops", "cpu_wall", "cpu_cpu", "ratio", "ptx_wall",
               "ptx_cpu", "ratio");
        double last[2] = {0, 0};
        for (int64_t steps = 125; steps * 4 <= max_ops; steps *= 2) {
            int64_t consts[2] = {steps, tiles[t]};
            double cpu[2], wall[2];
            int ops = count_ops(consts);
            time_compiles(consts, cpu, wall);
            printf("%8d %10.3f %10.3f %7.2f %10.3f %10.3f %7.2f\n", ops, wall[0], cpu[0],
                   last[0] > 0 ? cpu[0] / last[0] : 0.0, wall[1], cpu[1], last[1] > 0 ? cpu[1] / last[1] : 0.0);
            fflush(stdout);
            last[0] = cpu[0];
            last[1] = cpu[1];
        }
    }
    int64_t shape[2] = {2048, 2048};
    char *ptx = NULL;
    double w0 = seconds(CLOCK_MONOTONIC);
    tj_status st = tj_kernel_ptx(huge_tile, shape, 2, "sm_90", 4, &ptx);
    printf("# a 2048 x 2048 tile for the GPU: %s after %.3f s\n", tj_status_name(st),
           seconds(CLOCK_MONOTONIC) - w0);
    free(ptx);
    return 0;
}
