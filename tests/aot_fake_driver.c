/* SPDX-License-Identifier: MIT */
/*
 * aot_fake_driver.c — an exported launcher's logic without a GPU
 * (tests/test_aot.sh): built from aot_vadd.c like tests/aot_driver.c, but
 * run over tests/aot_fake_cuda.c as libcuda.so.1, whose record it reads.
 *
 *     usage: aot_fake_driver cubin|ptx|none
 *
 * says what the launcher must load for the device the stand-in plays
 * ($FAKE_CUDA_CC): a cubin, PTX, or nothing (no exported target runs
 * there: CUDA_ERROR_NO_BINARY_FOR_GPU). It checks the launch without a
 * context, the parameters and block of a launch, that aligned pointers and
 * misaligned ones run different variants each loaded once per context,
 * and that aot_vadd_unload unloads what the current context loaded.
 * Prints each failure; exits 0 when there is none.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "aot_vadd.h"
#include "aot_fake_record.h"

static int failures;

static void expect(int ok, const char *what, long got)
{
    if (!ok) {
        printf("FAIL: %s (got %ld)\n", what, got);
        failures++;
    }
}

int main(int argc, char **argv)
{
    const char *mode = argc == 2 ? argv[1] : "";
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    fake_record *rec = lib ? dlsym(lib, "fake_cuda") : NULL;
    void (*set_context)(void *) = NULL;
    void *sym = lib ? dlsym(lib, "fake_set_context") : NULL;
    memcpy(&set_context, &sym, sizeof sym);
    if (!rec || !set_context) {
        printf("FAIL: libcuda.so.1 is not tests/aot_fake_cuda.c\n");
        return 1;
    }
    CUdeviceptr x = 0x10000, y = 0x20000, out = 0x30000;
    int r = aot_vadd(NULL, 4, 1, 1, x, y, out, 1000, 0.5f);
    expect(r == 201 && rec->launches == 0, "no current context: CUDA_ERROR_INVALID_CONTEXT", r);

    int a, b; /* two contexts, by their addresses */
    set_context(&a);
    r = aot_vadd(NULL, 4, 2, 3, x, y, out, 1000, 0.5f);
    if (!strcmp(mode, "none")) {
        expect(r == 209 && rec->launches == 0 && rec->loads == 0,
               "no target for the device: CUDA_ERROR_NO_BINARY_FOR_GPU", r);
        return failures != 0;
    }
    expect(r == 0 && rec->launches == 1, "an aligned launch", r);
    expect(rec->loads == 1, "one module loaded", rec->loads);
    if (!strcmp(mode, "cubin"))
        expect(rec->cubin_loads == 1, "from a cubin", rec->cubin_loads);
    else
        expect(rec->ptx_loads == 1, "from PTX", rec->ptx_loads);
    expect(rec->grid[0] == 4 && rec->grid[1] == 2 && rec->grid[2] == 3, "the grid", rec->grid[0]);
    expect(rec->block[0] == 128 && rec->block[1] == 1 && rec->block[2] == 1, "4 warps", rec->block[0]);
    expect(rec->shared <= 48 * 1024 && rec->attribute_sets == 0, "no opt-in to more shared memory",
           rec->shared);
    float scale;
    memcpy(&scale, &rec->param[4], sizeof scale);
    expect(rec->param[0] == x && rec->param[1] == y && rec->param[2] == out, "the pointers",
           (long)rec->param[0]);
    expect(rec->param[3] == 1000 && scale == 0.5f && rec->param[5] == 0,
           "n, scale and a null assert record", (long)rec->param[3]);
    const void *aligned = rec->function;

    r = aot_vadd(NULL, 4, 1, 1, x, y + 4, out, 999, 0.5f);
    expect(r == 0 && rec->loads == 2 && rec->function != aligned,
           "a misaligned pointer: the other variant, loaded", rec->loads);
    expect(rec->param[1] == y + 4 && rec->param[3] == 999, "its arguments", (long)rec->param[3]);
    r = aot_vadd(NULL, 4, 1, 1, x, y, out, 1000, 0.5f);
    expect(r == 0 && rec->loads == 2 && rec->function == aligned,
           "aligned again: the first variant, not loaded again", rec->loads);

    set_context(&b);
    r = aot_vadd(NULL, 4, 1, 1, x, y, out, 1000, 0.5f);
    expect(r == 0 && rec->loads == 3, "another context loads its own module", rec->loads);
    r = aot_vadd_unload();
    expect(r == 0 && rec->unloads == 1, "unload: that context's one module", rec->unloads);
    set_context(&a);
    r = aot_vadd_unload();
    expect(r == 0 && rec->unloads == 3, "unload: the first context's two", rec->unloads);
    r = aot_vadd_unload();
    expect(r == 0 && rec->unloads == 3, "unload again: nothing", rec->unloads);
    r = aot_vadd(NULL, 4, 1, 1, x, y, out, 1000, 0.5f);
    expect(r == 0 && rec->loads == 4, "a launch after the unload loads again", rec->loads);
    aot_vadd_unload();
    return failures != 0;
}
