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
 */
#ifndef TJIT_TENSOR_MAP_H
#define TJIT_TENSOR_MAP_H

#include "../internal.h"

enum { TJJ_TMAP_MAX_RANK = 2, TJJ_TMAP_BYTES = 128 };

/* One integer of a map: the value of parameter `param` (>= 0, an integer
 * parameter) or, where param < 0, the constant `value`. */
typedef struct tjj_tmap_src {
    int32_t param;
    int64_t value;
} tjj_tmap_src;

typedef struct tjj_tmap_info {
    int32_t base_param;               /* the pointer parameter */
    int rank;                         /* 2 */
    tj_dtype dtype;
    int elem_bytes;
    tjj_tmap_src shape[TJJ_TMAP_MAX_RANK];   /* extents, in elements */
    tjj_tmap_src strides[TJJ_TMAP_MAX_RANK]; /* in elements; strides[contiguous] is 1 */
    int contiguous;                   /* the dimension whose stride is 1 */
    uint32_t box[TJJ_TMAP_MAX_RANK];  /* one copy's box, in elements, tile order */
    int swizzle_bytes;                /* 128, 64 or 32: NVMMA rows; box[contiguous] *
                                         elem_bytes equals it */
} tjj_tmap_info;

#endif
