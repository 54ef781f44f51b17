/* SPDX-License-Identifier: MIT */
/*
 * cuda_api.h — the part of the CUDA driver API that tjit uses, declared by
 * tjit itself.
 *
 * tjit loads the driver at run time (dlopen("libcuda.so.1")), so one build
 * runs on machines with and without a GPU and nothing from CUDA is needed to
 * build it. The price is that these declarations must match the driver's ABI
 * exactly; tests/cuda_decls.c checks every one against the toolkit's cuda.h
 * wherever that header exists.
 *
 * Names are tjit's (tjcu_), but the opaque handle types use CUDA's own struct
 * tags, so a tjcu_context *is* a CUcontext wherever both are visible. Enum
 * parameters (CUresult, CUdevice_attribute, CUjit_option, ...) are unsigned
 * int, the type a C compiler gives an enum whose values are all non-negative;
 * the constants tjit needs are listed below next to their CUDA names, which
 * lets the test compare each pair.
 *
 * The functions are listed once, in TJCU_DRIVER_FUNCTIONS, with the exported
 * symbol that the driver resolves them by (the versioned names such as
 * cuMemAlloc_v2 that cuda.h's macros select); the same list makes the table
 * of function pointers, the dlsym loop in cuda.c and the checks in the test.
 * A driver lacking one of them is refused. TJCU_OPTIONAL_FUNCTIONS lists
 * those tjit can do without (Hopper's tensor-map encoder and cluster
 * occupancy, CUDA 12): a driver
 * lacking one still loads, its pointer is NULL, and the code that would use
 * it takes another way (a variant without TMA copies, device_gpu.c).
 */
#ifndef TJIT_CUDA_API_H
#define TJIT_CUDA_API_H

#include <stddef.h>

#include "../../internal.h"

typedef unsigned int tjcu_result;             /* CUresult */
typedef int tjcu_device;                      /* CUdevice */
#if defined(_WIN64) || defined(__LP64__)
typedef unsigned long long tjcu_deviceptr;    /* CUdeviceptr */
#else
typedef unsigned int tjcu_deviceptr;
#endif
typedef struct CUctx_st *tjcu_context;        /* CUcontext */
typedef struct CUmod_st *tjcu_module;         /* CUmodule */
typedef struct CUfunc_st *tjcu_function;      /* CUfunction */
typedef struct CUstream_st *tjcu_stream;      /* CUstream */
typedef struct CUevent_st *tjcu_event;        /* CUevent */
typedef unsigned int tjcu_device_attribute;   /* CUdevice_attribute */
typedef unsigned int tjcu_function_attribute; /* CUfunction_attribute */
typedef unsigned int tjcu_jit_option;         /* CUjit_option */
typedef unsigned int tjcu_tensor_map_data_type;  /* CUtensorMapDataType */
typedef unsigned int tjcu_tensor_map_interleave; /* CUtensorMapInterleave */
typedef unsigned int tjcu_tensor_map_swizzle;    /* CUtensorMapSwizzle */
typedef unsigned int tjcu_tensor_map_l2_promotion; /* CUtensorMapL2promotion */
typedef unsigned int tjcu_tensor_map_oob_fill;   /* CUtensorMapFloatOOBfill */
typedef unsigned int tjcu_pointer_attribute;     /* CUpointer_attribute */

/* CUtensorMap: the 128 opaque bytes cuTensorMapEncodeTiled writes and a
 * kernel takes as a parameter. The driver wants them 64-byte aligned (its
 * documentation; CUDA 13's header asks 128 of the compiler, which the test
 * accepts: the size is what must match). A struct of tjit's own tag, since
 * cuda.h defines CUtensorMap_st as a full type, not an opaque handle. */
typedef struct tjcu_tensor_map {
    _Alignas(64) uint64_t opaque[16];
} tjcu_tensor_map;

/* X(tjit name, CUDA name, value) */
#define TJCU_CONSTANTS(X)                                                                    \
    /* CUresult */                                                                           \
    X(TJCU_SUCCESS, CUDA_SUCCESS, 0)                                                         \
    X(TJCU_ERROR_INVALID_VALUE, CUDA_ERROR_INVALID_VALUE, 1)                                 \
    X(TJCU_ERROR_OUT_OF_MEMORY, CUDA_ERROR_OUT_OF_MEMORY, 2)                                 \
    X(TJCU_ERROR_NOT_INITIALIZED, CUDA_ERROR_NOT_INITIALIZED, 3)                             \
    X(TJCU_ERROR_DEINITIALIZED, CUDA_ERROR_DEINITIALIZED, 4)                                 \
    X(TJCU_ERROR_STUB_LIBRARY, CUDA_ERROR_STUB_LIBRARY, 34)                                  \
    X(TJCU_ERROR_NO_DEVICE, CUDA_ERROR_NO_DEVICE, 100)                                       \
    X(TJCU_ERROR_INVALID_DEVICE, CUDA_ERROR_INVALID_DEVICE, 101)                             \
    X(TJCU_ERROR_INVALID_IMAGE, CUDA_ERROR_INVALID_IMAGE, 200)                               \
    X(TJCU_ERROR_INVALID_CONTEXT, CUDA_ERROR_INVALID_CONTEXT, 201)                           \
    X(TJCU_ERROR_NO_BINARY_FOR_GPU, CUDA_ERROR_NO_BINARY_FOR_GPU, 209)                       \
    X(TJCU_ERROR_INVALID_PTX, CUDA_ERROR_INVALID_PTX, 218)                                   \
    X(TJCU_ERROR_UNSUPPORTED_PTX_VERSION, CUDA_ERROR_UNSUPPORTED_PTX_VERSION, 222)           \
    X(TJCU_ERROR_INVALID_HANDLE, CUDA_ERROR_INVALID_HANDLE, 400)                             \
    X(TJCU_ERROR_NOT_FOUND, CUDA_ERROR_NOT_FOUND, 500)                                       \
    X(TJCU_ERROR_NOT_READY, CUDA_ERROR_NOT_READY, 600)                                       \
    X(TJCU_ERROR_ILLEGAL_ADDRESS, CUDA_ERROR_ILLEGAL_ADDRESS, 700)                           \
    X(TJCU_ERROR_LAUNCH_OUT_OF_RESOURCES, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, 701)           \
    X(TJCU_ERROR_ASSERT, CUDA_ERROR_ASSERT, 710)                                             \
    X(TJCU_ERROR_PEER_ACCESS_ALREADY_ENABLED, CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, 704)   \
    X(TJCU_ERROR_LAUNCH_FAILED, CUDA_ERROR_LAUNCH_FAILED, 719)                               \
    X(TJCU_ERROR_UNKNOWN, CUDA_ERROR_UNKNOWN, 999)                                           \
    /* CUdevice_attribute */                                                                 \
    X(TJCU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1) \
    X(TJCU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 16) \
    X(TJCU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,                                        \
      CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 75)                                      \
    X(TJCU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,                                        \
      CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 76)                                      \
    X(TJCU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,                               \
      CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 97)                             \
    /* CUfunction_attribute */                                                               \
    X(TJCU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,                                     \
      CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 8)                                    \
    /* CUjit_option: the logs of cuModuleLoadDataEx */                                       \
    X(TJCU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER, 3)                                   \
    X(TJCU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, 4)             \
    X(TJCU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER, 5)                                 \
    X(TJCU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, 6)           \
    X(TJCU_JIT_LOG_VERBOSE, CU_JIT_LOG_VERBOSE, 12)                                          \
    /* flags of cuStreamCreate and cuEventCreate */                                          \
    X(TJCU_STREAM_DEFAULT, CU_STREAM_DEFAULT, 0)                                             \
    X(TJCU_STREAM_NON_BLOCKING, CU_STREAM_NON_BLOCKING, 1)                                   \
    X(TJCU_EVENT_DEFAULT, CU_EVENT_DEFAULT, 0)                                               \
    X(TJCU_EVENT_BLOCKING_SYNC, CU_EVENT_BLOCKING_SYNC, 1)                                   \
    X(TJCU_EVENT_DISABLE_TIMING, CU_EVENT_DISABLE_TIMING, 2)                                 \
    /* CUtensorMapDataType: the element types of tjit's dtypes (tensor_map.c) */             \
    X(TJCU_TENSOR_MAP_DATA_TYPE_UINT8, CU_TENSOR_MAP_DATA_TYPE_UINT8, 0)                     \
    X(TJCU_TENSOR_MAP_DATA_TYPE_UINT16, CU_TENSOR_MAP_DATA_TYPE_UINT16, 1)                   \
    X(TJCU_TENSOR_MAP_DATA_TYPE_UINT32, CU_TENSOR_MAP_DATA_TYPE_UINT32, 2)                   \
    X(TJCU_TENSOR_MAP_DATA_TYPE_INT32, CU_TENSOR_MAP_DATA_TYPE_INT32, 3)                     \
    X(TJCU_TENSOR_MAP_DATA_TYPE_UINT64, CU_TENSOR_MAP_DATA_TYPE_UINT64, 4)                   \
    X(TJCU_TENSOR_MAP_DATA_TYPE_INT64, CU_TENSOR_MAP_DATA_TYPE_INT64, 5)                     \
    X(TJCU_TENSOR_MAP_DATA_TYPE_FLOAT16, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 6)                 \
    X(TJCU_TENSOR_MAP_DATA_TYPE_FLOAT32, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 7)                 \
    X(TJCU_TENSOR_MAP_DATA_TYPE_FLOAT64, CU_TENSOR_MAP_DATA_TYPE_FLOAT64, 8)                 \
    X(TJCU_TENSOR_MAP_DATA_TYPE_BFLOAT16, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 9)               \
    /* CUtensorMapInterleave, CUtensorMapSwizzle, CUtensorMapL2promotion,                    \
     * CUtensorMapFloatOOBfill: what tjit's maps use */                                     \
    X(TJCU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_INTERLEAVE_NONE, 0)                     \
    X(TJCU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, 0)                           \
    X(TJCU_TENSOR_MAP_SWIZZLE_32B, CU_TENSOR_MAP_SWIZZLE_32B, 1)                             \
    X(TJCU_TENSOR_MAP_SWIZZLE_64B, CU_TENSOR_MAP_SWIZZLE_64B, 2)                             \
    X(TJCU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_SWIZZLE_128B, 3)                           \
    X(TJCU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B, 2)           \
    X(TJCU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, 3)           \
    X(TJCU_TENSOR_MAP_FLOAT_OOB_FILL_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE, 0)            \
    /* CUpointer_attribute: what tj_buffer_wrap asks of foreign memory */                    \
    X(TJCU_POINTER_ATTRIBUTE_CONTEXT, CU_POINTER_ATTRIBUTE_CONTEXT, 1)                       \
    X(TJCU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, 11)    \
    X(TJCU_POINTER_ATTRIBUTE_RANGE_SIZE, CU_POINTER_ATTRIBUTE_RANGE_SIZE, 12)

#define TJCU_ENUMERATOR(ours, cuda, value) ours = value,
enum { TJCU_CONSTANTS(TJCU_ENUMERATOR) };
#undef TJCU_ENUMERATOR

/* Function pointer types, one per driver function (parameters as in cuda.h). */
typedef tjcu_result (*tjcu_cuInit_fn)(unsigned int flags);
typedef tjcu_result (*tjcu_cuDriverGetVersion_fn)(int *version);
typedef tjcu_result (*tjcu_cuDeviceGetCount_fn)(int *count);
typedef tjcu_result (*tjcu_cuDeviceGet_fn)(tjcu_device *device, int ordinal);
typedef tjcu_result (*tjcu_cuDeviceGetName_fn)(char *name, int len, tjcu_device device);
typedef tjcu_result (*tjcu_cuDeviceGetAttribute_fn)(int *value, tjcu_device_attribute attribute,
                                                     tjcu_device device);
typedef tjcu_result (*tjcu_cuDevicePrimaryCtxRetain_fn)(tjcu_context *context, tjcu_device device);
typedef tjcu_result (*tjcu_cuDevicePrimaryCtxRelease_fn)(tjcu_device device);
typedef tjcu_result (*tjcu_cuCtxSetCurrent_fn)(tjcu_context context);
typedef tjcu_result (*tjcu_cuCtxGetCurrent_fn)(tjcu_context *context);
typedef tjcu_result (*tjcu_cuCtxPushCurrent_fn)(tjcu_context context);
typedef tjcu_result (*tjcu_cuCtxPopCurrent_fn)(tjcu_context *context);
typedef tjcu_result (*tjcu_cuCtxSynchronize_fn)(void);
typedef tjcu_result (*tjcu_cuMemAlloc_fn)(tjcu_deviceptr *ptr, size_t bytes);
typedef tjcu_result (*tjcu_cuMemFree_fn)(tjcu_deviceptr ptr);
typedef tjcu_result (*tjcu_cuMemcpyHtoD_fn)(tjcu_deviceptr dst, const void *src, size_t bytes);
typedef tjcu_result (*tjcu_cuMemcpyDtoH_fn)(void *dst, tjcu_deviceptr src, size_t bytes);
typedef tjcu_result (*tjcu_cuMemcpyHtoDAsync_fn)(tjcu_deviceptr dst, const void *src, size_t bytes,
                                                  tjcu_stream stream);
typedef tjcu_result (*tjcu_cuMemcpyDtoHAsync_fn)(void *dst, tjcu_deviceptr src, size_t bytes,
                                                  tjcu_stream stream);
/* Copies between device memory: in one context, and between contexts
 * (several GPUs: tj_buffer_copy, multi.c), and peer access between them. */
typedef tjcu_result (*tjcu_cuMemcpyDtoD_fn)(tjcu_deviceptr dst, tjcu_deviceptr src, size_t bytes);
typedef tjcu_result (*tjcu_cuMemcpyPeer_fn)(tjcu_deviceptr dst, tjcu_context dst_context,
                                             tjcu_deviceptr src, tjcu_context src_context, size_t bytes);
typedef tjcu_result (*tjcu_cuDeviceCanAccessPeer_fn)(int *can_access, tjcu_device device,
                                                      tjcu_device peer);
typedef tjcu_result (*tjcu_cuCtxEnablePeerAccess_fn)(tjcu_context peer, unsigned int flags);
typedef tjcu_result (*tjcu_cuMemAllocHost_fn)(void **ptr, size_t bytes);
typedef tjcu_result (*tjcu_cuMemFreeHost_fn)(void *ptr);
typedef tjcu_result (*tjcu_cuMemsetD8_fn)(tjcu_deviceptr dst, unsigned char value, size_t count);
typedef tjcu_result (*tjcu_cuMemsetD8Async_fn)(tjcu_deviceptr dst, unsigned char value, size_t count,
                                               tjcu_stream stream);
typedef tjcu_result (*tjcu_cuModuleLoadDataEx_fn)(tjcu_module *module, const void *image,
                                                   unsigned int noptions, tjcu_jit_option *options,
                                                   void **option_values);
typedef tjcu_result (*tjcu_cuModuleUnload_fn)(tjcu_module module);
typedef tjcu_result (*tjcu_cuModuleGetFunction_fn)(tjcu_function *function, tjcu_module module,
                                                    const char *name);
typedef tjcu_result (*tjcu_cuFuncSetAttribute_fn)(tjcu_function function,
                                                   tjcu_function_attribute attribute, int value);
typedef tjcu_result (*tjcu_cuOccupancyMaxActiveBlocksPerMultiprocessor_fn)(int *blocks,
                                                                          tjcu_function function,
                                                                          int block_size,
                                                                          size_t shared_bytes);
typedef tjcu_result (*tjcu_cuLaunchKernel_fn)(tjcu_function function, unsigned int grid_x,
                                               unsigned int grid_y, unsigned int grid_z,
                                               unsigned int block_x, unsigned int block_y,
                                               unsigned int block_z, unsigned int shared_bytes,
                                               tjcu_stream stream, void **params, void **extra);
typedef tjcu_result (*tjcu_cuStreamCreate_fn)(tjcu_stream *stream, unsigned int flags);
typedef tjcu_result (*tjcu_cuStreamDestroy_fn)(tjcu_stream stream);
typedef tjcu_result (*tjcu_cuStreamSynchronize_fn)(tjcu_stream stream);
typedef tjcu_result (*tjcu_cuEventCreate_fn)(tjcu_event *event, unsigned int flags);
typedef tjcu_result (*tjcu_cuEventRecord_fn)(tjcu_event event, tjcu_stream stream);
typedef tjcu_result (*tjcu_cuEventSynchronize_fn)(tjcu_event event);
typedef tjcu_result (*tjcu_cuEventElapsedTime_fn)(float *milliseconds, tjcu_event start,
                                                   tjcu_event end);
typedef tjcu_result (*tjcu_cuEventDestroy_fn)(tjcu_event event);
typedef tjcu_result (*tjcu_cuPointerGetAttribute_fn)(void *data, tjcu_pointer_attribute attribute,
                                                      tjcu_deviceptr ptr);
typedef tjcu_result (*tjcu_cuGetErrorName_fn)(tjcu_result error, const char **name);
typedef tjcu_result (*tjcu_cuGetErrorString_fn)(tjcu_result error, const char **text);
/* cuTensorMapEncodeTiled's parameters over the type of the map it writes:
 * tjcu_tensor_map here, CUtensorMap where tests/cuda_decls.c compares the
 * two declarations (the structs are alike, not the same type). */
#define TJCU_ENCODE_TILED_PARAMS(map_type)                                                   \
    (map_type *tensor_map, tjcu_tensor_map_data_type data_type, uint32_t rank,                \
     void *global_address, const uint64_t *global_dim, const uint64_t *global_strides,       \
     const uint32_t *box_dim, const uint32_t *element_strides,                                \
     tjcu_tensor_map_interleave interleave, tjcu_tensor_map_swizzle swizzle,                  \
     tjcu_tensor_map_l2_promotion l2_promotion, tjcu_tensor_map_oob_fill oob_fill)
typedef tjcu_result(*tjcu_cuTensorMapEncodeTiled_fn) TJCU_ENCODE_TILED_PARAMS(tjcu_tensor_map);

/* CUlaunchConfig, field by field (tests/cuda_decls.c compares sizes and
 * offsets); tjit passes no launch attributes. */
typedef struct tjcu_launch_config {
    unsigned int grid_x, grid_y, grid_z;
    unsigned int block_x, block_y, block_z;
    unsigned int shared_bytes;
    tjcu_stream stream;
    void *attrs;          /* CUlaunchAttribute *: none here */
    unsigned int nattrs;
} tjcu_launch_config;
/* cuOccupancyMaxActiveClusters (CUDA 12) over the config's type. */
#define TJCU_MAX_ACTIVE_CLUSTERS_PARAMS(config_type) \
    (int *clusters, tjcu_function function, const config_type *config)
typedef tjcu_result(*tjcu_cuOccupancyMaxActiveClusters_fn) TJCU_MAX_ACTIVE_CLUSTERS_PARAMS(tjcu_launch_config);

/* X(name, exported symbol, older symbol to fall back on or NULL). The
 * symbols are the versions cuda.h (CUDA 13) binds the plain names to. */
#define TJCU_DRIVER_FUNCTIONS(X)                                                 \
    X(cuInit, "cuInit", NULL)                                                    \
    X(cuDriverGetVersion, "cuDriverGetVersion", NULL)                            \
    X(cuDeviceGetCount, "cuDeviceGetCount", NULL)                                \
    X(cuDeviceGet, "cuDeviceGet", NULL)                                          \
    X(cuDeviceGetName, "cuDeviceGetName", NULL)                                  \
    X(cuDeviceGetAttribute, "cuDeviceGetAttribute", NULL)                        \
    X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", NULL)                \
    X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", NULL)          \
    X(cuCtxSetCurrent, "cuCtxSetCurrent", NULL)                                  \
    X(cuCtxGetCurrent, "cuCtxGetCurrent", NULL)                                  \
    X(cuCtxPushCurrent, "cuCtxPushCurrent_v2", NULL)                             \
    X(cuCtxPopCurrent, "cuCtxPopCurrent_v2", NULL)                               \
    X(cuCtxSynchronize, "cuCtxSynchronize", NULL)                                \
    X(cuMemAlloc, "cuMemAlloc_v2", NULL)                                         \
    X(cuMemFree, "cuMemFree_v2", NULL)                                           \
    X(cuMemcpyHtoD, "cuMemcpyHtoD_v2", NULL)                                     \
    X(cuMemcpyDtoH, "cuMemcpyDtoH_v2", NULL)                                     \
    X(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", NULL)                           \
    X(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", NULL)                           \
    X(cuMemsetD8, "cuMemsetD8_v2", NULL)                                         \
    X(cuMemsetD8Async, "cuMemsetD8Async", NULL)                                  \
    X(cuMemcpyDtoD, "cuMemcpyDtoD_v2", NULL)                                     \
    X(cuMemcpyPeer, "cuMemcpyPeer", NULL)                                        \
    X(cuDeviceCanAccessPeer, "cuDeviceCanAccessPeer", NULL)                      \
    X(cuCtxEnablePeerAccess, "cuCtxEnablePeerAccess", NULL)                      \
    X(cuMemAllocHost, "cuMemAllocHost_v2", NULL)                                 \
    X(cuMemFreeHost, "cuMemFreeHost", NULL)                                      \
    X(cuModuleLoadDataEx, "cuModuleLoadDataEx", NULL)                            \
    X(cuModuleUnload, "cuModuleUnload", NULL)                                    \
    X(cuModuleGetFunction, "cuModuleGetFunction", NULL)                          \
    X(cuFuncSetAttribute, "cuFuncSetAttribute", NULL)                            \
    X(cuOccupancyMaxActiveBlocksPerMultiprocessor,                               \
      "cuOccupancyMaxActiveBlocksPerMultiprocessor", NULL)                       \
    X(cuLaunchKernel, "cuLaunchKernel", NULL)                                    \
    X(cuStreamCreate, "cuStreamCreate", NULL)                                    \
    X(cuStreamDestroy, "cuStreamDestroy_v2", NULL)                               \
    X(cuStreamSynchronize, "cuStreamSynchronize", NULL)                          \
    X(cuEventCreate, "cuEventCreate", NULL)                                      \
    X(cuEventRecord, "cuEventRecord", NULL)                                      \
    X(cuEventSynchronize, "cuEventSynchronize", NULL)                            \
    X(cuEventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime")         \
    X(cuEventDestroy, "cuEventDestroy_v2", NULL)                                 \
    X(cuPointerGetAttribute, "cuPointerGetAttribute", NULL)                      \
    X(cuGetErrorName, "cuGetErrorName", NULL)                                    \
    X(cuGetErrorString, "cuGetErrorString", NULL)

/* The same, for the functions a driver may lack (NULL then). */
#define TJCU_OPTIONAL_FUNCTIONS(X)                                               \
    X(cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled", NULL)                    \
    X(cuOccupancyMaxActiveClusters, "cuOccupancyMaxActiveClusters", NULL)

/* The loaded driver: one pointer per function of the lists. */
typedef struct tjcu_driver {
#define TJCU_FIELD(name, symbol, fallback) tjcu_##name##_fn name;
    TJCU_DRIVER_FUNCTIONS(TJCU_FIELD)
    TJCU_OPTIONAL_FUNCTIONS(TJCU_FIELD)
#undef TJCU_FIELD
    int version; /* cuDriverGetVersion: 1000 * major + 10 * minor */
} tjcu_driver;

/* Loads libcuda.so.1, resolves every function (an optional one it lacks is
 * left NULL) and calls cuInit(0) — once per process, whichever thread asks
 * first. On failure returns TJ_ERR_DEVICE and sets the thread's error to the
 * reason (the dlopen message, the missing symbol or cuInit's error); every
 * later call fails the same way. */
TJI_FUNC tj_status tjj_cuda_load(const tjcu_driver **out);
/* The reason the load failed ("" before a load or after a good one). */
TJI_FUNC const char *tjj_cuda_load_error(void);

/* TJ_OK for TJCU_SUCCESS; otherwise sets the error to
 * "WHAT: CUDA_ERROR_OUT_OF_MEMORY (out of memory)" and returns
 * TJ_ERR_OUT_OF_MEMORY for out-of-memory, TJ_ERR_DEVICE for the rest. */
TJI_FUNC tj_status tjj_cuda_check(tjcu_result result, const char *what);

#endif
