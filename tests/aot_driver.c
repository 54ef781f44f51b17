/* SPDX-License-Identifier: MIT */
/*
 * aot_driver.c — a program built from an exported kernel (tests/test_aot.sh):
 * it includes aot_vadd.h, which tests/test_aot_export wrote, and links with
 * aot_vadd.c and -ldl -lpthread only: no tjit, no LLVM, no cuda.h.
 *
 * It takes the CUDA driver itself (dlopen, as the launcher does) for the
 * memory and the context, runs aot_vadd (out = x + scale * y, masked to n)
 * on a stream-less launch with 16-byte aligned pointers, then with pointers
 * 4 bytes past them (the generic variant) and a ragged n, and checks every
 * element, and that the elements past n are left alone. Exits 77 where
 * there is no driver or no GPU, 1 on a wrong result or a failed call.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "aot_vadd.h"

enum { N = 5000, BLOCK = 256 };

static struct {
    int (*cuInit)(unsigned);
    int (*cuDeviceGetCount)(int *);
    int (*cuDeviceGet)(int *, int);
    int (*cuDevicePrimaryCtxRetain)(void **, int);
    int (*cuCtxSetCurrent)(void *);
    int (*cuCtxSynchronize)(void);
    int (*cuMemAlloc)(CUdeviceptr *, size_t);
    int (*cuMemFree)(CUdeviceptr);
    int (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
    int (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
} cu;

static int resolve(void *lib, const char *symbol, void *fn)
{
    void *p = dlsym(lib, symbol);
    memcpy(fn, &p, sizeof p);
    return p != NULL;
}

#define CHECK(call)                                                                   \
    do {                                                                              \
        int r_ = (call);                                                              \
        if (r_ != 0) {                                                                \
            printf("FAIL: %s: CUresult %d\n", #call, r_);                             \
            return 1;                                                                 \
        }                                                                             \
    } while (0)

/* One launch at element offset off (0: aligned) over n elements. */
static int run(CUdeviceptr x, CUdeviceptr y, CUdeviceptr out, int off, int n, const char *what)
{
    static float hx[N], hy[N], hout[N];
    for (int i = 0; i < N; i++) {
        hx[i] = (float)i;
        hy[i] = (float)(3 * i % 17);
        hout[i] = -1.0f;
    }
    CHECK(cu.cuMemcpyHtoD(x, hx, sizeof hx));
    CHECK(cu.cuMemcpyHtoD(y, hy, sizeof hy));
    CHECK(cu.cuMemcpyHtoD(out, hout, sizeof hout));
    size_t at = (size_t)off * sizeof(float);
    CHECK(aot_vadd(NULL, (unsigned)((n + BLOCK - 1) / BLOCK), 1, 1, x + at, y + at, out + at, n, 0.5f));
    CHECK(cu.cuCtxSynchronize());
    CHECK(cu.cuMemcpyDtoH(hout, out, sizeof hout));
    int bad = 0;
    for (int i = 0; i < N; i++) {
        int inside = i >= off && i < off + n;
        float want = inside ? hx[i] + 0.5f * hy[i] : -1.0f;
        if (hout[i] != want && bad++ < 5)
            printf("FAIL: %s: out[%d] = %g, want %g\n", what, i, hout[i], want);
    }
    printf("%s: %s\n", what, bad ? "wrong" : "right");
    return bad != 0;
}

int main(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        printf("no CUDA driver: %s\n", dlerror());
        return 77;
    }
    if (!resolve(lib, "cuInit", &cu.cuInit) || !resolve(lib, "cuDeviceGetCount", &cu.cuDeviceGetCount) ||
        !resolve(lib, "cuDeviceGet", &cu.cuDeviceGet) ||
        !resolve(lib, "cuDevicePrimaryCtxRetain", &cu.cuDevicePrimaryCtxRetain) ||
        !resolve(lib, "cuCtxSetCurrent", &cu.cuCtxSetCurrent) ||
        !resolve(lib, "cuCtxSynchronize", &cu.cuCtxSynchronize) ||
        !resolve(lib, "cuMemAlloc_v2", &cu.cuMemAlloc) || !resolve(lib, "cuMemFree_v2", &cu.cuMemFree) ||
        !resolve(lib, "cuMemcpyHtoD_v2", &cu.cuMemcpyHtoD) ||
        !resolve(lib, "cuMemcpyDtoH_v2", &cu.cuMemcpyDtoH)) {
        printf("FAIL: the CUDA driver lacks a function\n");
        return 1;
    }
    int count = 0;
    if (cu.cuInit(0) != 0 || cu.cuDeviceGetCount(&count) != 0 || count == 0) {
        printf("no GPU\n");
        return 77;
    }
    /* before any context is current: the launcher says so */
    int r = aot_vadd(NULL, 1, 1, 1, 0, 0, 0, 0, 1.0f);
    if (r != 201) {
        printf("FAIL: a launch without a current context gave %d, want 201\n", r);
        return 1;
    }
    int device;
    void *context;
    CUdeviceptr x, y, out;
    CHECK(cu.cuDeviceGet(&device, 0));
    CHECK(cu.cuDevicePrimaryCtxRetain(&context, device));
    CHECK(cu.cuCtxSetCurrent(context));
    CHECK(cu.cuMemAlloc(&x, N * sizeof(float)));
    CHECK(cu.cuMemAlloc(&y, N * sizeof(float)));
    CHECK(cu.cuMemAlloc(&out, N * sizeof(float)));
    int failed = run(x, y, out, 0, N - 37, "aligned (the specialized variant)");
    failed |= run(x, y, out, 1, N - 40, "4 bytes past alignment (the generic variant)");
    failed |= run(x, y, out, 3, 1, "one element, misaligned");
    CHECK(aot_vadd_unload());
    failed |= run(x, y, out, 0, N, "aligned again, after aot_vadd_unload");
    CHECK(aot_vadd_unload());
    cu.cuMemFree(x);
    cu.cuMemFree(y);
    cu.cuMemFree(out);
    return failed;
}
