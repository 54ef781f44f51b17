/* SPDX-License-Identifier: MIT */
/*
 * tensor_map.h — what a kernel's TMA copies need from the host: the
 * contract between the GPU code generator (which lists the tensor maps a
 * variant reads) and the launch (which encodes them from the arguments).
 *
 * Hopper's tensor-memory accelerator copies a box of a strided tensor into
 * shared memory from a 128-byte descriptor, the tensor map, that the host
 * encodes (cuTensorMapEncodeTiled) and the kernel takes as a grid-constant
 * parameter. A variant's maps are described here by where each part comes
 * from: the base is a pointer parameter, each extent and stride a
 * parameter or a constant. At launch each map is encoded from the
 * arguments' values (tensor_map.c) and passed after the assert record, in
 * order. Dimensions are in the tile's order (dim 0 outermost, as the block
 * pointer gives them); the encoder reverses them for the driver, whose
 * dimension 0 is the contiguous one.
 *
 * The launch's side, below (runtime/tensor_map.c): a map is resolved
 * against the arguments, checked against what the driver can encode (a
 * refusal is no error: the launch runs the variant compiled without TMA,
 * tjj_gpu_target.no_tma), then encoded — or taken from the variant's
 * cache of its recent encodings, where the arguments are the same.
 */
#ifndef TJIT_TENSOR_MAP_H
#define TJIT_TENSOR_MAP_H

#include <pthread.h>

#include "../internal.h"
#include "runtime/cuda_api.h"

enum { TJJ_TMAP_MAX_RANK = 3, TJJ_TMAP_BYTES = 128 };

/* One integer of a map: the value of parameter `param` (>= 0, an integer
 * parameter) or, where param < 0, the constant `value`. */
typedef struct tjj_tmap_src {
    int32_t param;
    int64_t value;
} tjj_tmap_src;

typedef struct tjj_tmap_info {
    int32_t base_param;               /* the pointer parameter */
    int rank;                         /* 2, or 3 (a batch of 2-D tensors) */
    tj_dtype dtype;
    int elem_bytes;
    tjj_tmap_src shape[TJJ_TMAP_MAX_RANK];   /* extents, in elements */
    tjj_tmap_src strides[TJJ_TMAP_MAX_RANK]; /* in elements; strides[contiguous] is 1 */
    int contiguous;                   /* the dimension whose stride is 1 */
    uint32_t box[TJJ_TMAP_MAX_RANK];  /* one copy's box, in elements, tile order */
    int swizzle_bytes;                /* 128, 64 or 32: NVMMA rows; box[contiguous] *
                                         elem_bytes equals it */
} tjj_tmap_info;

union tjf_value; /* ffi_bind.h: one launch argument as the kernel takes it */

/* A map's integers for one launch: the base's device address and each
 * extent and stride in elements, in the tile's order. */
typedef struct tjj_tmap_args {
    uint64_t base;
    int64_t shape[TJJ_TMAP_MAX_RANK];
    int64_t strides[TJJ_TMAP_MAX_RANK];
} tjj_tmap_args;

/* Map number `index` of kernel's variant, read from the launch's values
 * (tjf_check_args' scalars, pointers as device addresses: pass_buffer).
 * Returns 0 with the reason in why where the map names no parameter of
 * the right kind (a code generator's bug, never the user's). */
TJI_FUNC int tjj_tmap_resolve(const tjj_tmap_info *map, int index, const tj_kernel *kernel,
                              const union tjf_value *values, tjj_tmap_args *out, char *why,
                              size_t why_len);

/* Can the driver encode the map for these integers? 1 if so; else 0 and
 * why names the map, the part, its parameter (or constant) and its value:
 * "tensor map 0 (of 'a', argument 1): the stride of dimension 0, 'lda'
 * (argument 5) = 100 elements of 2 bytes, is not a multiple of 16 bytes". */
TJI_FUNC int tjj_tmap_check(const tjj_tmap_info *map, int index, const tj_kernel *kernel,
                            const tjj_tmap_args *args, char *why, size_t why_len);

/* The driver's element type for a dtype (1-byte types, fp8 and i1 among
 * them, as UINT8); 0 for none. */
TJI_FUNC int tjj_tmap_data_type(tj_dtype dtype, tjcu_tensor_map_data_type *out);

/* Encodes a checked map through encode (the driver's cuTensorMapEncodeTiled,
 * or a test's stand-in): the driver's dimensions innermost first, strides
 * in bytes, element strides 1, no interleave, the map's swizzle, 128-byte
 * L2 promotion, zeros out of bounds. A failure is the error "WHO:
 * cuTensorMapEncodeTiled (tensor map N of 'a'): CUDA_ERROR_...". */
TJI_FUNC tj_status tjj_tmap_encode(tjcu_cuTensorMapEncodeTiled_fn encode, const tjj_tmap_info *map,
                                   int index, const tj_kernel *kernel, const tjj_tmap_args *args,
                                   const char *who, tjcu_tensor_map *out);

/* A variant's maps, and for each its last TJJ_TMAP_WAYS encodings with the
 * integers each was made of: a launch whose map has the integers of one of
 * them (the usual case: the same tensors, or a few used in turn) copies it
 * instead of calling the driver. lock guards the cache; launches of the
 * variant may come from several threads. */
enum { TJJ_TMAP_WAYS = 8 };
typedef struct tjj_tmap_set {
    int n;
    tjj_tmap_info *maps;      /* malloc'ed, n */
    pthread_mutex_t lock;
    int *filled;              /* n: the entries of each map that hold an encoding */
    int *next;                /* n: the entry a map's next new encoding replaces */
    tjj_tmap_args *cached_args;   /* n x TJJ_TMAP_WAYS, map i's at i * TJJ_TMAP_WAYS */
    tjcu_tensor_map *cached_maps; /* the same, 64-byte aligned */
    uint64_t encodes;         /* calls of the encoder so far (for tests) */
} tjj_tmap_set;

/* set takes maps (n of them, malloc'ed; none where n is 0). */
TJI_FUNC void tjj_tmap_set_init(tjj_tmap_set *set, tjj_tmap_info *maps, int n);
TJI_FUNC void tjj_tmap_set_free(tjj_tmap_set *set);
/* n maps' storage, 64-byte aligned (free() it); NULL where out of memory. */
TJI_FUNC tjcu_tensor_map *tjj_tmap_storage(int n);

/* A launch's maps, into out (set->n of them, 64-byte aligned). TJ_OK and
 * *fallback 0: out holds them. TJ_OK and *fallback 1: they cannot be
 * encoded for these arguments, or encode is NULL (a driver without it),
 * and why says why; the launch runs the variant without TMA. Otherwise the
 * encoder's error. */
TJI_FUNC tj_status tjj_tmaps_prepare(tjj_tmap_set *set, tjcu_cuTensorMapEncodeTiled_fn encode,
                                     const tj_kernel *kernel, const union tjf_value *values,
                                     const char *who, tjcu_tensor_map *out, int *fallback,
                                     char *why, size_t why_len);

#endif
