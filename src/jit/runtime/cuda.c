/* SPDX-License-Identifier: MIT */
/*
 * cuda.c — loading the CUDA driver at run time.
 *
 * tjit never links against libcuda: the GPU back end reaches the driver
 * through the table of function pointers filled here, from
 * dlopen("libcuda.so.1"), the name the driver package installs on every
 * Linux system with an NVIDIA driver (libcuda.so without the version is a
 * development link that may be missing). Each function is resolved by the
 * exported symbol that cuda.h would bind its plain name to (cuMemAlloc_v2,
 * not the legacy cuMemAlloc with 32-bit sizes); cuda_api.h lists them. A
 * driver without one of them is too old for tjit; the optional functions
 * (cuTensorMapEncodeTiled, new in CUDA 12) are looked up too, and where one
 * is missing its pointer stays NULL for the code using it to notice.
 *
 * Loading happens once per process (pthread_once) and its outcome is kept:
 * on a machine without the driver every GPU request gets the same clear
 * reason instead of a new dlopen each time. The library stays loaded for the
 * life of the process — unloading a driver that may still own contexts and
 * threads is never safe.
 *
 * Errors from the driver are reported with its own names for them,
 * "cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (out of memory)", through
 * tjj_cuda_check.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cuda_api.h"

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static tjcu_driver driver;
static int driver_loaded;
static char load_error[512];

/* Resolves one symbol, or its older name where the driver predates it. */
static void *resolve(void *lib, const char *symbol, const char *fallback)
{
    void *p = dlsym(lib, symbol);
    if (!p && fallback)
        p = dlsym(lib, fallback);
    return p;
}

static void load_driver(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *why = dlerror();
        snprintf(load_error, sizeof load_error, "cannot load the CUDA driver: %s",
                 why ? why : "libcuda.so.1: dlopen failed");
        return;
    }
    /* A data pointer from dlsym becomes a function pointer through memcpy,
     * which ISO C allows where a cast would not be. */
#define TJCU_RESOLVE(name, symbol, fallback)                                                   \
    {                                                                                          \
        void *p = resolve(lib, symbol, fallback);                                              \
        if (!p) {                                                                              \
            snprintf(load_error, sizeof load_error,                                            \
                     "the CUDA driver (libcuda.so.1) lacks %s; it is older than tjit needs",   \
                     symbol);                                                                  \
            memset(&driver, 0, sizeof driver);                                                 \
            dlclose(lib);                                                                      \
            return;                                                                            \
        }                                                                                      \
        memcpy(&driver.name, &p, sizeof p);                                                    \
    }
    TJCU_DRIVER_FUNCTIONS(TJCU_RESOLVE)
#undef TJCU_RESOLVE
#define TJCU_RESOLVE_OPTIONAL(name, symbol, fallback)                                          \
    {                                                                                          \
        void *p = resolve(lib, symbol, fallback);                                              \
        if (p)                                                                                 \
            memcpy(&driver.name, &p, sizeof p);                                                \
    }
    TJCU_OPTIONAL_FUNCTIONS(TJCU_RESOLVE_OPTIONAL)
#undef TJCU_RESOLVE_OPTIONAL

    /* A driver that loads but cannot start (no device, driver/kernel module
     * mismatch) stays loaded: it may have started threads of its own. */
    tjcu_result r = driver.cuInit(0);
    if (r == TJCU_ERROR_STUB_LIBRARY) {
        /* The toolkit's link-time stub answers even cuGetErrorName with an error. */
        tjs_error(TJ_ERR_DEVICE, "cuInit: CUDA_ERROR_STUB_LIBRARY (the libcuda.so.1 found is "
                                 "the CUDA toolkit's stub, not an NVIDIA driver)");
    } else if (r != TJCU_SUCCESS) {
        tjj_cuda_check(r, "cuInit");
    } else {
        r = driver.cuDriverGetVersion(&driver.version);
        tjj_cuda_check(r, "cuDriverGetVersion");
    }
    if (r != TJCU_SUCCESS) {
        snprintf(load_error, sizeof load_error, "%s", tj_last_error());
        tjs_clear_error();
        return;
    }
    driver_loaded = 1;
}

tj_status tjj_cuda_load(const tjcu_driver **out)
{
    pthread_once(&load_once, load_driver);
    if (!driver_loaded) {
        *out = NULL;
        return tjs_error(TJ_ERR_DEVICE, "%s", load_error);
    }
    *out = &driver;
    return TJ_OK;
}

const char *tjj_cuda_load_error(void) { return load_error; }

tj_status tjj_cuda_check(tjcu_result result, const char *what)
{
    if (result == TJCU_SUCCESS)
        return TJ_OK;
    tj_status status = result == TJCU_ERROR_OUT_OF_MEMORY ? TJ_ERR_OUT_OF_MEMORY : TJ_ERR_DEVICE;
    const char *name = NULL, *text = NULL;
    if (driver.cuGetErrorName && driver.cuGetErrorName(result, &name) != TJCU_SUCCESS)
        name = NULL;
    if (driver.cuGetErrorString && driver.cuGetErrorString(result, &text) != TJCU_SUCCESS)
        text = NULL;
    if (!name)
        return tjs_error(status, "%s: CUDA error %u", what, result);
    if (!text)
        return tjs_error(status, "%s: %s", what, name);
    return tjs_error(status, "%s: %s (%s)", what, name, text);
}
