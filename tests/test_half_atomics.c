/* SPDX-License-Identifier: MIT */
/*
 * test_half_atomics.c — atomic xchg of f16 and bf16 under contention.
 *
 * xchg is the one 16-bit float atomic the builder offers (add, max and min
 * of f16/bf16 are refused; their compare-and-swap loop is tested directly
 * by test_llvm_atomics). Many programs, spread over more worker threads
 * than cores, exchange values at the same addresses: the old values they
 * got back and the final value must be exactly the initial value and all
 * values written, each once.
 */
#include "testlib.h"

static tj_device *dev;

enum { AB = 64, PROGRAMS = 256 };

/* Every program exchanges its own row of vals with the same AB targets
 * and stores the old values it got back. */
#define HALF_ATOMIC_KERNEL(dt)                                                  \
    TJ_KERNEL(half_xchg_##dt,                                                   \
              TJ_PARAMS(TJ_PTR(target, dt), TJ_PTR(vals, dt), TJ_PTR(olds, dt)), \
              TJ_CONSTS())                                                      \
    {                                                                           \
        tj_val k = tj_arange(0, AB);                                            \
        tj_val row = tj_add(tj_mul(tj_program_id(0), AB), k);                   \
        tj_val v = tj_load(tj_add(vals, row));                                  \
        tj_store(tj_add(olds, row), tj_atomic_xchg(tj_add(target, k), v));      \
    }
HALF_ATOMIC_KERNEL(f16)
HALF_ATOMIC_KERNEL(bf16)

/* Sorts doubles ascending (NaN-free data). */
static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Whether address j's old values and final value are exactly its initial
 * value and the values written to it. */
static int lane_consistent(tj_dtype t, const uint16_t *init, const uint16_t *vals, const uint16_t *olds,
                           const uint16_t *final, int j)
{
    static double seen[PROGRAMS + 1], want[PROGRAMS + 1];
    for (int p = 0; p < PROGRAMS; p++) {
        seen[p] = tl_get(t, olds, (size_t)p * AB + j).f;
        want[p] = tl_get(t, vals, (size_t)p * AB + j).f;
    }
    seen[PROGRAMS] = tl_get(t, final, (size_t)j).f;
    want[PROGRAMS] = tl_get(t, init, (size_t)j).f;
    qsort(seen, PROGRAMS + 1, sizeof *seen, cmp_double);
    qsort(want, PROGRAMS + 1, sizeof *want, cmp_double);
    return memcmp(seen, want, sizeof seen) == 0;
}

static void test_half_xchg(const tj_kernel *kernel, tj_dtype t)
{
    static uint16_t init[AB], vals[PROGRAMS * AB], olds[PROGRAMS * AB], final[AB];
    for (int j = 0; j < AB; j++) {
        tl_set(t, init, (size_t)j, tl_random(t));
        for (int p = 0; p < PROGRAMS; p++)
            tl_set(t, vals, (size_t)p * AB + j, tl_random(t));
    }
    tj_buffer bt = tl_upload(dev, init, sizeof init), bv = tl_upload(dev, vals, sizeof vals),
              bo = tl_poisoned(dev, sizeof olds);
    tj_arg args[] = {TJ_ARG_BUF(bt), TJ_ARG_BUF(bv), TJ_ARG_BUF(bo)};
    tj_launch_cfg cfg = tl_grid(PROGRAMS, 1, 1);
    char what[128];
    snprintf(what, sizeof what, "atomic_xchg %s from %d programs on %d shared addresses", tj_dtype_name(t),
             PROGRAMS, AB);
    if (!tl_launch_failed(tj_launch(dev, kernel, &cfg, args, 3, NULL, 0), what)) {
        tl_download(dev, bt, final, sizeof final);
        tl_download(dev, bo, olds, sizeof olds);
        int bad = -1;
        for (int j = 0; j < AB && bad < 0; j++)
            if (!lane_consistent(t, init, vals, olds, final, j))
                bad = j;
        if (bad >= 0)
            tap_diag("  address %d: old and final values are not the initial value and all values written",
                     bad);
        tap_ok(bad < 0, "%s", what);
    }
    tj_buffer_free(dev, bt);
    tj_buffer_free(dev, bv);
    tj_buffer_free(dev, bo);
}

int main(void)
{
    /* more workers than cores: the programs interleave in every way */
    setenv("TJIT_NUM_THREADS", "16", 0);
    dev = tl_setup("test_half_atomics");
    test_half_xchg(half_xchg_f16, TJ_F16);
    test_half_xchg(half_xchg_bf16, TJ_BF16);
    tj_device_close(dev);
    return tap_done();
}
