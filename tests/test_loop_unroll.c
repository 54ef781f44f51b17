/* SPDX-License-Identifier: MIT */
/*
 * test_loop_unroll.c — a loop's unroll count (TJ_LOOP(.unroll = n),
 * Triton's tl.range(..., loop_unroll_factor=n)).
 *
 *  - a column sum over a runtime number of rows, TJ_FOR_OPTS with unroll 0
 *    (LLVM's choice), 1 (never) and 4, for trip counts that 4 divides and
 *    that it does not (0, 1, 3, 4, 5, 7, 13), steps of 1 and 3: exact
 *    against C on the test device, fresh random inputs, poisoned outputs;
 *  - the LLVM IR the CPU compiles (TJIT_DUMP=llvm) carries the hint:
 *    llvm.loop.unroll.count 4, llvm.loop.unroll.disable for 1, neither
 *    for 0;
 *  - on the GPU's path (PTX for sm_90, no launch): unroll 1 keeps the one
 *    load of the loop body, unroll 4 has at least four (with a step known
 *    only at run time LLVM tests for the end after each copy rather
 *    than computing the trip count);
 *  - a count below 0 or above TJ_MAX_UNROLL is an error naming the line;
 *  - the printed IR shows it (for.unroll4).
 */
#include "testlib.h"

enum { B = 128 };

/* out[j] = sum of x[i * B + j] for i = lo, lo + step, ... < n. */
static int loop_line;
TJ_KERNEL(col_sum, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(out, f32), TJ_SCALAR(lo, i32), TJ_SCALAR(n, i32),
                             TJ_SCALAR(step, i32)),
          TJ_CONSTS(UNROLL))
{
    tj_val j = tj_arange(0, B);
    tj_val acc = tj_zeros(TJ_SHAPE(B), TJ_F32);
    loop_line = __LINE__ + 1;
    TJ_FOR_OPTS(i, lo, n, step, TJ_LOOP(.unroll = (int)UNROLL), &acc) {
        acc = tj_add(acc, tj_load(tj_add(x, tj_add(tj_mul(i, B), j))));
    }
    tj_store(tj_add(out, j), acc);
}

static void test_results(tj_device *dev)
{
    enum { ROWS = 16 };
    float x[ROWS * B], got[B], want[B];
    tl_fill_range(TJ_F32, x, ROWS * B, -8, 8);
    for (int i = 0; i < ROWS * B; i++)
        x[i] = (float)(int)x[i]; /* small integers: every order of the sums is exact */
    tj_buffer bx = tl_upload(dev, x, sizeof x), bo = tl_poisoned(dev, sizeof got);
    const int32_t trips[] = {0, 1, 3, 4, 5, 7, 13};
    const int64_t unrolls[] = {0, 1, 4};
    for (size_t u = 0; u < TL_COUNT(unrolls); u++) {
        int ok = 1;
        for (int step = 1; step <= 3; step += 2)
            for (size_t t = 0; ok && t < TL_COUNT(trips); t++) {
                int32_t lo = 1, n = lo + trips[t] * step;
                if (n > ROWS)
                    continue;
                for (int c = 0; c < B; c++) {
                    want[c] = 0;
                    for (int i = lo; i < n; i += step)
                        want[c] += x[i * B + c];
                }
                tl_repoison(dev, bo, sizeof got);
                tj_launch_cfg cfg = tl_grid(1, 1, 1);
                tj_status st = col_sum_launch(dev, &cfg, bx, bo, lo, n, step, unrolls[u]);
                if (st == TJ_OK)
                    st = tj_synchronize(dev);
                if (st != TJ_OK) {
                    tap_diag("unroll %lld, %d trips: %s", (long long)unrolls[u], trips[t], tj_last_error());
                    ok = 0;
                    break;
                }
                tl_download(dev, bo, got, sizeof got);
                if (memcmp(got, want, sizeof got)) {
                    tap_diag("unroll %lld, %d trips of step %d: out differs from the C sum", (long long)unrolls[u],
                             trips[t], step);
                    ok = 0;
                }
            }
        tap_ok(ok, "unroll %lld: sums of 0, 1, 3, 4, 5, 7 and 13 rows, steps 1 and 3, exact", (long long)unrolls[u]);
    }
    tj_buffer_free(dev, bx), tj_buffer_free(dev, bo);
}

/* The CPU's LLVM IR before optimization, for a launch of unroll u. */
static char *cpu_llvm_ir(int64_t u)
{
    tj_device *cpu = NULL;
    if (tj_device_open(&cpu, TJ_DEVICE_CPU, 0) != TJ_OK)
        return NULL;
    tj_buffer bx, bo;
    tj_buffer_alloc(cpu, 4 * B * sizeof(float), &bx);
    tj_buffer_alloc(cpu, B * sizeof(float), &bo);
    tj_launch_cfg cfg = tl_grid(1, 1, 1);
    const char *cache = getenv("TJIT_CACHE");
    char *saved = cache ? strdup(cache) : NULL;
    setenv("TJIT_CACHE", "0", 1); /* a variant read from the disk cache dumps nothing */
    setenv("TJIT_DUMP", "llvm", 1);
    tl_capture cap = tl_stderr_begin();
    tj_status st = col_sum_launch(cpu, &cfg, bx, bo, 0, 4, 1, u);
    char *text = tl_stderr_end(cap);
    unsetenv("TJIT_DUMP");
    if (saved)
        setenv("TJIT_CACHE", saved, 1);
    else
        unsetenv("TJIT_CACHE");
    free(saved);
    if (st != TJ_OK)
        tap_diag("unroll %lld: %s", (long long)u, tj_last_error());
    tj_buffer_free(cpu, bx), tj_buffer_free(cpu, bo);
    tj_device_close(cpu);
    return text;
}

static void test_hints(void)
{
    char *ir[3] = {cpu_llvm_ir(0), cpu_llvm_ir(1), cpu_llvm_ir(4)};
    tap_ok(ir[2] && strstr(ir[2], "!\"llvm.loop.unroll.count\", i32 4}") && ir[1] &&
               strstr(ir[1], "!\"llvm.loop.unroll.disable\"") && ir[0] && !strstr(ir[0], "llvm.loop.unroll"),
           "CPU LLVM IR: unroll 4 is llvm.loop.unroll.count 4, unroll 1 llvm.loop.unroll.disable, 0 no hint");
    for (int i = 0; i < 3; i++)
        free(ir[i]);

    char *ptx[2] = {NULL, NULL};
    for (int k = 0; k < 2; k++) {
        int64_t u = k ? 4 : 1;
        if (tj_kernel_ptx(col_sum, &u, 1, "sm_90", 1, &ptx[k]) != TJ_OK)
            tap_diag("tj_kernel_ptx: %s", tj_last_error());
    }
    int once = tl_count(ptx[0], "ld.global"), unrolled = tl_count(ptx[1], "ld.global");
    tap_ok(ptx[0] && once == 1 && unrolled >= 4, "sm_90 PTX: one load with unroll 1, %d with unroll 4", unrolled);
    free(ptx[0]), free(ptx[1]);

    char *text = NULL;
    int64_t u = 4;
    tj_status st = tj_kernel_ir(col_sum, &u, 1, &text);
    tap_ok(st == TJ_OK && strstr(text, "for.unroll4 "), "the printed IR shows for.unroll4");
    free(text);
}

static void test_bad_counts(void)
{
    const int64_t bad[] = {-1, TJ_MAX_UNROLL + 1};
    for (size_t k = 0; k < TL_COUNT(bad); k++) {
        char *text = NULL;
        tj_status st = tj_kernel_ir(col_sum, &bad[k], 1, &text);
        tap_ok(st == TJ_ERR_INVALID_ARG && tl_error_mentions(tl_where(__FILE__, loop_line), "col_sum", ".unroll",
                                                             NULL),
               "unroll %lld is refused, naming the loop's line (%s)", (long long)bad[k], tj_last_error());
        free(text);
    }
}

int main(void)
{
    tj_device *dev = tl_setup("test_loop_unroll");
    tap_plan(8);
    test_results(dev);
    test_hints();
    test_bad_counts();
    tj_device_close(dev);
    return tap_done();
}
