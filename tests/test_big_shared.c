/* SPDX-License-Identifier: MIT */
/*
 * test_big_shared.c — kernels whose shared memory passes the 48 KiB that a
 * GPU gives a block without asking (issue 9, item 4).
 *
 * A tile transpose converts its layout through shared memory, one buffer of
 * the whole tile: 128 x 128 f32 is 64 KiB and 128 x 128 f64 128 KiB. On a
 * GPU the launch must pass that much dynamic shared memory and the function
 * must opt in above 48 KiB (cuFuncSetAttribute), up to the device's maximum
 * (227 KiB on an H100/H200); a launch that forgot either fails or reads
 * garbage. Each transpose runs on several programs (each its own tile of a
 * larger matrix) with random inputs and a poisoned output, checked exactly.
 * On the CPU (no shared memory) the same kernels check the reference.
 */
#include "testlib.h"

static tj_device *dev;

/* Program p transposes the p-th T x T tile of x into y. */
TJ_KERNEL(tile_transpose, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(y, f32)), TJ_CONSTS(T))
{
    tj_val base = tj_mul(tj_program_id(0), T * T);
    tj_val r = tj_expand_dims(tj_arange(0, T), 1), c = tj_expand_dims(tj_arange(0, T), 0);
    tj_val v = tj_load(tj_add(tj_add(x, base), tj_add(tj_mul(r, T), c)));
    tj_store(tj_add(tj_add(y, base), tj_add(tj_mul(c, T), r)), v);
}

TJ_KERNEL(tile_transpose_f64, TJ_PARAMS(TJ_PTR(x, f64), TJ_PTR(y, f64)), TJ_CONSTS(T))
{
    tj_val base = tj_mul(tj_program_id(0), T * T);
    tj_val r = tj_expand_dims(tj_arange(0, T), 1), c = tj_expand_dims(tj_arange(0, T), 0);
    tj_val v = tj_load(tj_add(tj_add(x, base), tj_add(tj_mul(r, T), c)));
    tj_store(tj_add(tj_add(y, base), tj_add(tj_mul(c, T), r)), v);
}

enum { PROGRAMS = 6 };

static void check_transpose(const tj_kernel *kernel, tj_dtype t, int64_t tile, int num_warps)
{
    size_t esize = tj_dtype_size(t), n = (size_t)(PROGRAMS * tile * tile);
    unsigned char *in = malloc(n * esize), *out = malloc(n * esize);
    tl_fill_random(t, in, n);
    tj_buffer bx = tl_upload(dev, in, n * esize), by = tl_poisoned(dev, n * esize);
    tj_arg args[] = {TJ_ARG_BUF(bx), TJ_ARG_BUF(by)};
    tj_launch_cfg cfg = tl_grid(PROGRAMS, 1, 1);
    cfg.num_warps = num_warps;
    char what[160];
    snprintf(what, sizeof what, "%lld x %lld %s transpose (%lld KiB of shared memory on a GPU), %d warps",
             (long long)tile, (long long)tile, tj_dtype_name(t),
             (long long)(tile * tile * (int64_t)esize / 1024), num_warps);
    if (!tl_launch_failed(tj_launch(dev, kernel, &cfg, args, 2, &tile, 1), what)) {
        tl_download(dev, by, out, n * esize);
        int64_t bad = -1;
        for (int64_t p = 0; p < PROGRAMS && bad < 0; p++)
            for (int64_t i = 0; i < tile && bad < 0; i++)
                for (int64_t j = 0; j < tile && bad < 0; j++) {
                    size_t src = (size_t)(p * tile * tile + i * tile + j);
                    size_t dst = (size_t)(p * tile * tile + j * tile + i);
                    if (memcmp(in + src * esize, out + dst * esize, esize) != 0)
                        bad = (int64_t)dst;
                }
        if (bad >= 0)
            tap_diag("  first wrong element: %lld", (long long)bad);
        tap_ok(bad < 0, "%s", what);
    }
    tj_buffer_free(dev, bx);
    tj_buffer_free(dev, by);
    free(in);
    free(out);
}

int main(void)
{
    dev = tl_setup("test_big_shared");
    check_transpose(tile_transpose, TJ_F32, 64, 4);     /* 16 KiB: no opt-in */
    check_transpose(tile_transpose, TJ_F32, 128, 8);    /* 64 KiB */
    check_transpose(tile_transpose, TJ_F32, 128, 16);
    check_transpose(tile_transpose_f64, TJ_F64, 128, 16); /* 128 KiB */
    tj_device_close(dev);
    return tap_done();
}
