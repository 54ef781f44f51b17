/* SPDX-License-Identifier: MIT */
/*
 * aot_fake_cuda.c — a stand-in libcuda.so.1 for tests/test_aot.sh, so that an
 * exported launcher's own logic runs on a machine without a GPU.
 *
 * It implements the driver functions an exported launcher calls, records
 * what it is asked, and runs nothing. The device's compute capability is
 * $FAKE_CUDA_CC (e.g. 90 for 9.0; unset: 90). A module is its image's
 * address; loading one notes whether the image is a cubin (ELF) or PTX.
 * cuLaunchKernel keeps its function, grid, block, shared bytes and its
 * parameters, read as aot_vadd's (tests/test_aot_export.c); cuCtxGetCurrent gives
 * the context fake_set_context set (NULL at first). The test's driver,
 * tests/aot_fake_driver.c, reads the record through dlsym.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aot_fake_record.h"

fake_record fake_cuda;
static void *current;

void fake_set_context(void *context)
{
    current = context;
}

int cuInit(unsigned flags)
{
    return flags == 0 ? 0 : 1;
}

int cuCtxGetCurrent(void **context)
{
    *context = current;
    return 0;
}

int cuCtxGetDevice(int *device)
{
    *device = 0;
    return current ? 0 : 201;
}

int cuDeviceGetAttribute(int *value, int attribute, int device)
{
    const char *cc = getenv("FAKE_CUDA_CC");
    int sm = cc ? atoi(cc) : 90;
    if (device != 0 || (attribute != 75 && attribute != 76))
        return 1;
    *value = attribute == 75 ? sm / 10 : sm % 10;
    return 0;
}

int cuModuleLoadData(void **module, const void *image)
{
    fake_cuda.loads++;
    if (memcmp(image, "\177ELF", 4) == 0)
        fake_cuda.cubin_loads++;
    else if (strstr(image, ".entry"))
        fake_cuda.ptx_loads++;
    else
        return 200; /* CUDA_ERROR_INVALID_IMAGE */
    *module = (void *)image;
    return 0;
}

int cuModuleGetFunction(void **function, void *module, const char *name)
{
    *function = strncmp(name, "tjk_", 4) == 0 ? module : NULL;
    return *function ? 0 : 500;
}

int cuModuleUnload(void *module)
{
    fake_cuda.unloads++;
    return module ? 0 : 400;
}

int cuFuncSetAttribute(void *function, int attribute, int value)
{
    (void)function;
    (void)attribute;
    (void)value;
    fake_cuda.attribute_sets++;
    return 0;
}

int cuLaunchKernel(void *function, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                   unsigned bz, unsigned shared, void *stream, void **params, void **extra)
{
    (void)stream;
    if (extra)
        return 1;
    fake_cuda.launches++;
    fake_cuda.function = function;
    fake_cuda.grid[0] = gx, fake_cuda.grid[1] = gy, fake_cuda.grid[2] = gz;
    fake_cuda.block[0] = bx, fake_cuda.block[1] = by, fake_cuda.block[2] = bz;
    fake_cuda.shared = shared;
    /* aot_vadd's: three pointers, an i32, an f32, the assert record */
    static const size_t width[6] = {8, 8, 8, 4, 4, 8};
    for (int i = 0; i < 6; i++) {
        fake_cuda.param[i] = 0;
        memcpy(&fake_cuda.param[i], params[i], width[i]);
    }
    return 0;
}
