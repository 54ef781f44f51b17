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
 * The optional functions are checked alike; cuTensorMapEncodeTiled's
 * parameter list, written once in cuda_api.h over the map's type, is
 * instantiated here with CUDA's CUtensorMap and compared with cuda.h's, and
 * tjit's map has CUtensorMap's size and at least the 64-byte alignment the
 * driver asks of it.
 *
 * Each check is made twice: as a _Static_assert, so a mismatch stops the
 * build with the name of the culprit, and as a TAP point, so the test run
 * lists what was compared. Nothing is called: no GPU and no libcuda needed.
 */
#include <cuda.h>
#include <stddef.h>
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
    X(tjcu_jit_option, CUjit_option)                                             \
    X(tjcu_tensor_map_data_type, CUtensorMapDataType)                            \
    X(tjcu_tensor_map_interleave, CUtensorMapInterleave)                         \
    X(tjcu_tensor_map_swizzle, CUtensorMapSwizzle)                               \
    X(tjcu_tensor_map_l2_promotion, CUtensorMapL2promotion)                      \
    X(tjcu_tensor_map_oob_fill, CUtensorMapFloatOOBfill)                         \
    X(tjcu_pointer_attribute, CUpointer_attribute)
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

/* The tensor map: CUDA's size, an array of the same element type, aligned
 * as the driver wants (64 bytes; cuda.h may ask more of the compiler). */
#define MAP_OPAQUE(type) __typeof__(((type *)0)->opaque)
_Static_assert(sizeof(tjcu_tensor_map) == sizeof(CUtensorMap), "sizeof tjcu_tensor_map != sizeof CUtensorMap");
_Static_assert(SAME_TYPE(MAP_OPAQUE(tjcu_tensor_map), MAP_OPAQUE(CUtensorMap)),
               "tjcu_tensor_map's words are not CUtensorMap's");
_Static_assert(_Alignof(tjcu_tensor_map) >= 64, "tjcu_tensor_map is not 64-byte aligned");

/* Optional functions whose parameters involve the map: tjit's declaration
 * is made of TJCU_ENCODE_TILED_PARAMS, so the same list over CUtensorMap
 * must be cuda.h's type, and over tjcu_tensor_map tjit's. Each optional
 * function needs its cuda_NAME_fn here. */
typedef CUresult(*cuda_cuTensorMapEncodeTiled_fn) TJCU_ENCODE_TILED_PARAMS(CUtensorMap);
_Static_assert(SAME_TYPE(tjcu_cuTensorMapEncodeTiled_fn,
                         tjcu_result(*) TJCU_ENCODE_TILED_PARAMS(tjcu_tensor_map)),
               "tjcu_cuTensorMapEncodeTiled_fn is not TJCU_ENCODE_TILED_PARAMS(tjcu_tensor_map)");
typedef CUresult(*cuda_cuOccupancyMaxActiveClusters_fn) TJCU_MAX_ACTIVE_CLUSTERS_PARAMS(CUlaunchConfig);
#define SAME_FIELD(ours, cuda)                                                   \
    (offsetof(tjcu_launch_config, ours) == offsetof(CUlaunchConfig, cuda) &&     \
     sizeof(((tjcu_launch_config *)0)->ours) == sizeof(((CUlaunchConfig *)0)->cuda))
#define LAUNCH_CONFIG_MATCHES                                                    \
    (sizeof(tjcu_launch_config) == sizeof(CUlaunchConfig) && SAME_FIELD(grid_x, gridDimX) &&          \
     SAME_FIELD(grid_y, gridDimY) && SAME_FIELD(grid_z, gridDimZ) && SAME_FIELD(block_x, blockDimX) && \
     SAME_FIELD(block_y, blockDimY) && SAME_FIELD(block_z, blockDimZ) &&                              \
     SAME_FIELD(shared_bytes, sharedMemBytes) && SAME_FIELD(stream, hStream) &&                       \
     SAME_FIELD(attrs, attrs) && SAME_FIELD(nattrs, numAttrs))
_Static_assert(LAUNCH_CONFIG_MATCHES, "tjcu_launch_config is not laid out as CUlaunchConfig");
#define CHECK_OPTIONAL_FUNCTION(name, symbol, fallback)                          \
    _Static_assert(SAME_TYPE(__typeof__(&name), cuda_##name##_fn),               \
                   "tjcu_" #name "_fn's parameters do not match " #name " in cuda.h");
TJCU_OPTIONAL_FUNCTIONS(CHECK_OPTIONAL_FUNCTION)

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

    tap_ok(sizeof(tjcu_tensor_map) == sizeof(CUtensorMap) &&
               SAME_TYPE(MAP_OPAQUE(tjcu_tensor_map), MAP_OPAQUE(CUtensorMap)),
           "tjcu_tensor_map is as large as CUtensorMap (%zu bytes) and of the same words",
           sizeof(CUtensorMap));
    tap_ok(_Alignof(tjcu_tensor_map) >= 64, "tjcu_tensor_map is aligned to %zu bytes (the driver wants 64; "
           "cuda.h's CUtensorMap: %zu)", _Alignof(tjcu_tensor_map), _Alignof(CUtensorMap));
    tap_ok(LAUNCH_CONFIG_MATCHES, "tjcu_launch_config has CUlaunchConfig's size (%zu bytes) and field offsets",
           sizeof(CUlaunchConfig));
#define TAP_OPTIONAL_FUNCTION(name, symbol, fallback)                            \
    tap_ok(SAME_TYPE(__typeof__(&name), cuda_##name##_fn) &&                     \
               SAME_TYPE(tjcu_##name##_fn, __typeof__(((tjcu_driver *)0)->name)), \
           "optional tjcu_%s_fn matches the type of %s", #name, XSTR(name));     \
    tap_ok(strcmp(XSTR(name), symbol) == 0, "optional %s resolves the symbol %s (cuda.h: %s)", \
           #name, symbol, XSTR(name));
    TJCU_OPTIONAL_FUNCTIONS(TAP_OPTIONAL_FUNCTION)

    tap_diag("checked against cuda.h of CUDA %d.%d", CUDA_VERSION / 1000,
             CUDA_VERSION % 1000 / 10);
    return tap_done();
}
