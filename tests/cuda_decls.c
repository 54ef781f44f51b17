/* SPDX-License-Identifier: MIT */
/*
 * cuda_decls.c — tjit's own declarations of the CUDA driver API
 * (src/jit/cuda_api.h) checked against the toolkit's cuda.h.
 *
 * tjit calls the driver through pointers from dlsym, typed by its own
 * declarations; a wrong parameter type or enum value there would be an ABI
 * bug that no compiler sees. Here both headers meet in one translation unit:
 * every constant must equal CUDA's, every type must have CUDA's size and be
 * compatible with it, every function pointer type must be compatible with
 * the type of the real function, and the symbol tjit resolves must be the
 * one cuda.h binds the function's name to (cuMemAlloc -> cuMemAlloc_v2).
 *
 * Each check is made twice: as a _Static_assert, so a mismatch stops the
 * build with the name of the culprit, and as a TAP point, so the test run
 * lists what was compared. Nothing is called: no GPU and no libcuda needed.
 */
#include <cuda.h>
#include <string.h>

#include "jit/runtime/cuda_api.h"
#include "tap.h"

#define STR(x) #x
#define XSTR(x) STR(x)
#define SAME_TYPE(a, b) __builtin_types_compatible_p(a, b)

/* Constants: each of tjit's equals CUDA's. */
#define CHECK_CONSTANT(ours, cuda, value)                                        \
    _Static_assert((long long)(ours) == (long long)(cuda), #ours " != " #cuda);
TJCU_CONSTANTS(CHECK_CONSTANT)

/* Types: same size and compatible (the handles are the same struct types). */
#define TYPE_PAIRS(X)                                                            \
    X(tjcu_result, CUresult)                                                     \
    X(tjcu_device, CUdevice)                                                     \
    X(tjcu_deviceptr, CUdeviceptr)                                               \
    X(tjcu_context, CUcontext)                                                   \
    X(tjcu_module, CUmodule)                                                     \
    X(tjcu_function, CUfunction)                                                 \
    X(tjcu_stream, CUstream)                                                     \
    X(tjcu_event, CUevent)                                                       \
    X(tjcu_device_attribute, CUdevice_attribute)                                 \
    X(tjcu_function_attribute, CUfunction_attribute)                             \
    X(tjcu_jit_option, CUjit_option)
#define CHECK_TYPE(ours, cuda)                                                   \
    _Static_assert(sizeof(ours) == sizeof(cuda), "sizeof " #ours " != sizeof " #cuda); \
    _Static_assert(SAME_TYPE(ours, cuda), #ours " is not compatible with " #cuda);
TYPE_PAIRS(CHECK_TYPE)

/* Functions: the pointer type matches the real function's type. cuda.h
 * maps some plain names to versioned ones by macro, so &name here is the
 * address of the function the header's users would call. */
#define CHECK_FUNCTION(name, symbol, fallback)                                   \
    _Static_assert(SAME_TYPE(__typeof__(&name), tjcu_##name##_fn),               \
                   "tjcu_" #name "_fn does not match " #name " in cuda.h");
TJCU_DRIVER_FUNCTIONS(CHECK_FUNCTION)

int main(void)
{
#define TAP_CONSTANT(ours, cuda, value)                                          \
    tap_ok((long long)(ours) == (long long)(cuda), "%s == %s (%lld)", #ours, #cuda, \
           (long long)(cuda));
    TJCU_CONSTANTS(TAP_CONSTANT)

#define TAP_TYPE(ours, cuda)                                                     \
    tap_ok(sizeof(ours) == sizeof(cuda) && SAME_TYPE(ours, cuda),                \
           "%s is compatible with %s (%zu bytes)", #ours, #cuda, sizeof(cuda));
    TYPE_PAIRS(TAP_TYPE)

    /* XSTR(name) is the name after cuda.h's macros: the symbol it binds. */
#define TAP_FUNCTION(name, symbol, fallback)                                     \
    tap_ok(SAME_TYPE(__typeof__(&name), tjcu_##name##_fn),                       \
           "tjcu_%s_fn matches the type of %s", #name, XSTR(name));              \
    tap_ok(strcmp(XSTR(name), symbol) == 0, "%s resolves the symbol %s (cuda.h: %s)", \
           #name, symbol, XSTR(name));
    TJCU_DRIVER_FUNCTIONS(TAP_FUNCTION)

    tap_diag("checked against cuda.h of CUDA %d.%d", CUDA_VERSION / 1000,
             CUDA_VERSION % 1000 / 10);
    return tap_done();
}
