/* SPDX-License-Identifier: MIT */
/*
 * tensor_map.c — a launch's tensor maps: from the variant's description of
 * each (../tensor_map.h) and the arguments, to the 128 bytes its TMA
 * copies read.
 *
 * Three steps, each its own function so that a test can take them apart.
 *
 * Resolving reads the map's integers from the launch: the base pointer's
 * device address, and each extent and stride from its integer parameter
 * (sign- or zero-extended as the parameter's dtype says) or its constant.
 * A map that names no such parameter is the code generator's mistake, and
 * the launch fails with an internal error rather than guess.
 *
 * Checking compares them with what cuTensorMapEncodeTiled accepts (cuda.h
 * documents it): a 16-byte aligned base; extents from 1 to 2^32; a stride
 * of exactly 1 along the contiguous dimension and, along the others, a
 * positive multiple of 16 bytes below 2^40 that is no less than the
 * contiguous extent (the driver's strides include the dimensions below
 * them: rows that overlap are no tensor it can describe); a box of 1 to
 * 256 elements per dimension whose contiguous row is exactly the swizzle
 * width, 32, 64 or 128 bytes, the NVMMA row the shared-memory layout was
 * planned with. Most of this the compiler knew from the specialization key
 * (alignment, strides a multiple of 16); what it could not know — a zero
 * extent, a stride too small — is why a map may still fail here, and a
 * failure is no error: the launch runs the variant compiled without TMA
 * (device_gpu.c). The reason names the map, the part, the parameter it
 * came from and the value, for TJIT_DUMP=tma and the tests.
 *
 * Encoding is the driver's: its dimension 0 is the contiguous one, then
 * the others from the innermost out (so for rank 2 the tile's dims in
 * reverse where dim 1 is contiguous, in order where dim 0 is), its
 * strides are in bytes and leave out dimension 0's, its element strides
 * are all 1. The encoder is a parameter — the driver's function, or a
 * test's stand-in that records what it was given.
 *
 * A variant launched again and again with the same tensors would encode
 * the same maps every time, so its tjj_tmap_set keeps each map's last
 * eight encodings and the integers each was made of: a map whose integers
 * are those of one of them is copied. Eight, not one, because programs
 * take a few tensors in turn — double buffers, a benchmark's rotated
 * copies, the layers of a model sharing a kernel — and each map on its
 * own, because usually only one of them changes (the weights stay, the
 * activations move). The oldest entry goes first. Launches come from any
 * thread, so the cache is under its own mutex, held only to compare and
 * copy; encoding happens outside it, into the launch's own storage, and
 * the new encodings enter the cache after, once all of them succeeded.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../ffi_bind/ffi_bind.h"
#include "../tensor_map.h"

#define MAX_EXTENT ((int64_t)1 << 32)
#define MAX_STRIDE_BYTES ((int64_t)1 << 40)
enum { MAX_BOX = 256, MAX_SWIZZLE = 128 };

/* --- resolving -------------------------------------------------------------- */

/* Integer parameter p's value as the kernel receives it. */
static int param_int(const tj_kernel *kernel, const tjf_value *values, int32_t p, int64_t *out)
{
    if (p < 0 || p >= kernel->nparams || kernel->params[p].is_ptr ||
        !tjs_dtype_is_int(kernel->params[p].dtype))
        return 0;
    tj_dtype dtype = kernel->params[p].dtype;
    const tjf_value *v = &values[p];
    int is_signed = tjs_dtype_is_signed(dtype);
    switch (tjs_dtype_bits(dtype)) {
    case 1: *out = v->u8 & 1; break;
    case 8: *out = is_signed ? (int64_t)(int8_t)v->u8 : (int64_t)v->u8; break;
    case 16: *out = is_signed ? (int64_t)(int16_t)v->u16 : (int64_t)v->u16; break;
    case 32: *out = is_signed ? (int64_t)(int32_t)v->u32 : (int64_t)v->u32; break;
    default:
        /* a u64 beyond INT64_MAX is beyond every limit below as well */
        *out = is_signed || v->u64 <= (uint64_t)INT64_MAX ? (int64_t)v->u64 : INT64_MAX;
        break;
    }
    return 1;
}

static int src_value(const tj_kernel *kernel, const tjf_value *values, const tjj_tmap_src *src,
                     int64_t *out)
{
    if (src->param < 0) {
        *out = src->value;
        return 1;
    }
    return param_int(kernel, values, src->param, out);
}

/* "tensor map 0 (of 'a', argument 1)" */
static void map_name(char *buf, size_t len, const tjj_tmap_info *map, int index,
                     const tj_kernel *kernel)
{
    int p = map->base_param;
    if (p >= 0 && p < kernel->nparams)
        snprintf(buf, len, "tensor map %d (of '%s', argument %d)", index, kernel->params[p].name,
                 p + 1);
    else
        snprintf(buf, len, "tensor map %d", index);
}

int tjj_tmap_resolve(const tjj_tmap_info *map, int index, const tj_kernel *kernel,
                     const tjf_value *values, tjj_tmap_args *out, char *why, size_t why_len)
{
    char name[160];
    map_name(name, sizeof name, map, index, kernel);
    memset(out, 0, sizeof *out);
    int p = map->base_param;
    if (p < 0 || p >= kernel->nparams || !kernel->params[p].is_ptr) {
        snprintf(why, why_len, "%s: its base is parameter %d, which is no pointer parameter of the "
                 "kernel (%d parameters)", name, p, kernel->nparams);
        return 0;
    }
    tjcu_tensor_map_data_type type;
    if (map->rank < 1 || map->rank > TJJ_TMAP_MAX_RANK || map->contiguous < 0 ||
        map->contiguous >= map->rank || !tjj_tmap_data_type(map->dtype, &type) ||
        (size_t)map->elem_bytes != tj_dtype_size(map->dtype) ||
        tj_dtype_size(kernel->params[p].dtype) != tj_dtype_size(map->dtype)) {
        snprintf(why, why_len, "%s is malformed: rank %d, contiguous dimension %d, dtype %s of %d "
                 "bytes (the pointer's: %s)", name, map->rank, map->contiguous,
                 (unsigned)map->dtype < TJ_DTYPE_COUNT ? tj_dtype_name(map->dtype) : "?",
                 map->elem_bytes, tj_dtype_name(kernel->params[p].dtype));
        return 0;
    }
    out->base = values[p].u64;
    for (int d = 0; d < map->rank; d++) {
        const tjj_tmap_src *parts[2] = {&map->shape[d], &map->strides[d]};
        int64_t *dst[2] = {&out->shape[d], &out->strides[d]};
        for (int k = 0; k < 2; k++) {
            if (!src_value(kernel, values, parts[k], dst[k])) {
                snprintf(why, why_len, "%s: the %s of dimension %d is parameter %d, which is no "
                         "integer parameter of the kernel", name, k ? "stride" : "extent", d,
                         parts[k]->param);
                return 0;
            }
        }
    }
    return 1;
}

/* --- checking --------------------------------------------------------------- */

/* Where a part came from: "'lda' (argument 5)" or "a constant". */
static void src_name(char *buf, size_t len, const tj_kernel *kernel, const tjj_tmap_src *src)
{
    if (src->param >= 0 && src->param < kernel->nparams)
        snprintf(buf, len, "'%s' (argument %d)", kernel->params[src->param].name, src->param + 1);
    else
        snprintf(buf, len, "a constant");
}

int tjj_tmap_check(const tjj_tmap_info *map, int index, const tj_kernel *kernel,
                   const tjj_tmap_args *args, char *why, size_t why_len)
{
    char name[160], from[160];
    map_name(name, sizeof name, map, index, kernel);
    int c = map->contiguous, eb = map->elem_bytes;
    if (args->base % 16) {
        src_name(from, sizeof from, kernel, &(tjj_tmap_src){map->base_param, 0});
        snprintf(why, why_len, "%s: its base, %s, is at 0x%llx, not 16-byte aligned", name, from,
                 (unsigned long long)args->base);
        return 0;
    }
    for (int d = 0; d < map->rank; d++) {
        src_name(from, sizeof from, kernel, &map->shape[d]);
        if (args->shape[d] < 1 || args->shape[d] > MAX_EXTENT) {
            snprintf(why, why_len, "%s: the extent of dimension %d, %s = %lld, is not from 1 to 2^32",
                     name, d, from, (long long)args->shape[d]);
            return 0;
        }
    }
    for (int d = 0; d < map->rank; d++) {
        int64_t s = args->strides[d];
        src_name(from, sizeof from, kernel, &map->strides[d]);
        const char *fault = NULL;
        if (d == c && s != 1)
            fault = "is not 1 (the contiguous dimension's)";
        else if (d != c && s < 1)
            fault = "is not positive";
        else if (d != c && s >= MAX_STRIDE_BYTES / eb)
            fault = "is not below 2^40 bytes";
        else if (d != c && s * eb % 16)
            fault = "is not a multiple of 16 bytes";
        else if (d != c && s < args->shape[c])
            fault = "is less than the contiguous dimension's extent (rows overlap)";
        if (fault) {
            snprintf(why, why_len, "%s: the stride of dimension %d, %s = %lld elements of %d bytes, %s",
                     name, d, from, (long long)s, eb, fault);
            return 0;
        }
    }
    for (int d = 0; d < map->rank; d++) {
        if (map->box[d] < 1 || map->box[d] > MAX_BOX) {
            snprintf(why, why_len, "%s: its box is %u elements along dimension %d (1 to %d)", name,
                     map->box[d], d, MAX_BOX);
            return 0;
        }
    }
    int64_t row = (int64_t)map->box[c] * eb;
    if ((map->swizzle_bytes != 32 && map->swizzle_bytes != 64 && map->swizzle_bytes != 128) ||
        row != map->swizzle_bytes || row > MAX_SWIZZLE) {
        snprintf(why, why_len, "%s: its box's row, %u elements of %d bytes along dimension %d, is "
                 "not its swizzle width (%d bytes; 32, 64 or 128)", name, map->box[c], eb, c,
                 map->swizzle_bytes);
        return 0;
    }
    return 1;
}

/* --- encoding --------------------------------------------------------------- */

int tjj_tmap_data_type(tj_dtype dtype, tjcu_tensor_map_data_type *out)
{
    switch (dtype) {
    case TJ_I1:
    case TJ_I8:
    case TJ_U8:
    case TJ_F8E4M3:
    case TJ_F8E5M2: *out = TJCU_TENSOR_MAP_DATA_TYPE_UINT8; return 1;
    case TJ_I16:
    case TJ_U16: *out = TJCU_TENSOR_MAP_DATA_TYPE_UINT16; return 1;
    case TJ_I32: *out = TJCU_TENSOR_MAP_DATA_TYPE_INT32; return 1;
    case TJ_U32: *out = TJCU_TENSOR_MAP_DATA_TYPE_UINT32; return 1;
    case TJ_I64: *out = TJCU_TENSOR_MAP_DATA_TYPE_INT64; return 1;
    case TJ_U64: *out = TJCU_TENSOR_MAP_DATA_TYPE_UINT64; return 1;
    case TJ_F16: *out = TJCU_TENSOR_MAP_DATA_TYPE_FLOAT16; return 1;
    case TJ_BF16: *out = TJCU_TENSOR_MAP_DATA_TYPE_BFLOAT16; return 1;
    case TJ_F32: *out = TJCU_TENSOR_MAP_DATA_TYPE_FLOAT32; return 1;
    case TJ_F64: *out = TJCU_TENSOR_MAP_DATA_TYPE_FLOAT64; return 1;
    default: return 0;
    }
}

static tjcu_tensor_map_swizzle swizzle_of(int bytes)
{
    switch (bytes) {
    case 32: return TJCU_TENSOR_MAP_SWIZZLE_32B;
    case 64: return TJCU_TENSOR_MAP_SWIZZLE_64B;
    case 128: return TJCU_TENSOR_MAP_SWIZZLE_128B;
    default: return TJCU_TENSOR_MAP_SWIZZLE_NONE;
    }
}

tj_status tjj_tmap_encode(tjcu_cuTensorMapEncodeTiled_fn encode, const tjj_tmap_info *map,
                          int index, const tj_kernel *kernel, const tjj_tmap_args *args,
                          const char *who, tjcu_tensor_map *out)
{
    int rank = map->rank, c = map->contiguous;
    /* the driver's dimension k is the tile's order[k]: the contiguous
     * dimension, then the rest from the innermost out */
    int order[TJJ_TMAP_MAX_RANK], n = 0;
    order[n++] = c;
    for (int d = rank - 1; d >= 0; d--)
        if (d != c)
            order[n++] = d;
    uint64_t dims[TJJ_TMAP_MAX_RANK], strides[TJJ_TMAP_MAX_RANK] = {0};
    uint32_t box[TJJ_TMAP_MAX_RANK], element_strides[TJJ_TMAP_MAX_RANK];
    for (int k = 0; k < rank; k++) {
        dims[k] = (uint64_t)args->shape[order[k]];
        box[k] = map->box[order[k]];
        element_strides[k] = 1;
        if (k > 0)
            strides[k - 1] = (uint64_t)args->strides[order[k]] * (uint64_t)map->elem_bytes;
    }
    tjcu_tensor_map_data_type type = TJCU_TENSOR_MAP_DATA_TYPE_UINT8;
    tjj_tmap_data_type(map->dtype, &type);
    memset(out, 0, sizeof *out);
    tjcu_result r = encode(out, type, (uint32_t)rank, (void *)(uintptr_t)args->base, dims, strides,
                           box, element_strides, TJCU_TENSOR_MAP_INTERLEAVE_NONE,
                           swizzle_of(map->swizzle_bytes), TJCU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                           TJCU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r == TJCU_SUCCESS)
        return TJ_OK;
    char name[160], what[400];
    map_name(name, sizeof name, map, index, kernel);
    snprintf(what, sizeof what, "%s: cuTensorMapEncodeTiled (%s)", who, name);
    return tjj_cuda_check(r, what);
}

/* --- a variant's maps and their cache -------------------------------------- */

tjcu_tensor_map *tjj_tmap_storage(int n)
{
    return aligned_alloc(_Alignof(tjcu_tensor_map), (size_t)(n > 0 ? n : 1) * sizeof(tjcu_tensor_map));
}

void tjj_tmap_set_init(tjj_tmap_set *set, tjj_tmap_info *maps, int n)
{
    memset(set, 0, sizeof *set);
    pthread_mutex_init(&set->lock, NULL);
    set->n = n;
    set->maps = maps;
    if (n > 0) {
        set->filled = tjs_xcalloc((size_t)n, sizeof *set->filled);
        set->next = tjs_xcalloc((size_t)n, sizeof *set->next);
        set->cached_args = tjs_xcalloc((size_t)n * TJJ_TMAP_WAYS, sizeof *set->cached_args);
        set->cached_maps = tjj_tmap_storage(n * TJJ_TMAP_WAYS);
        /* Without the storage there is no cache: every launch encodes. */
    }
}

void tjj_tmap_set_free(tjj_tmap_set *set)
{
    pthread_mutex_destroy(&set->lock);
    free(set->maps);
    free(set->filled);
    free(set->next);
    free(set->cached_args);
    free(set->cached_maps);
    memset(set, 0, sizeof *set);
}

/* Map i's cached encoding of args, copied into *out where out is not
 * NULL: 1; else 0. Under the lock. */
static int cache_find(const tjj_tmap_set *set, int i, const tjj_tmap_args *args, tjcu_tensor_map *out)
{
    for (int w = 0; set->cached_maps && w < set->filled[i]; w++) {
        size_t e = (size_t)i * TJJ_TMAP_WAYS + (size_t)w;
        if (memcmp(&set->cached_args[e], args, sizeof *args) == 0) {
            if (out)
                *out = set->cached_maps[e];
            return 1;
        }
    }
    return 0;
}

/* Map i's new encoding in place of its oldest. Under the lock. */
static void cache_add(tjj_tmap_set *set, int i, const tjj_tmap_args *args, const tjcu_tensor_map *map)
{
    if (!set->cached_maps)
        return;
    size_t e = (size_t)i * TJJ_TMAP_WAYS + (size_t)set->next[i];
    set->cached_args[e] = *args;
    set->cached_maps[e] = *map;
    set->next[i] = (set->next[i] + 1) % TJJ_TMAP_WAYS;
    if (set->filled[i] < TJJ_TMAP_WAYS)
        set->filled[i]++;
}

tj_status tjj_tmaps_prepare(tjj_tmap_set *set, tjcu_cuTensorMapEncodeTiled_fn encode,
                            const tj_kernel *kernel, const tjf_value *values, const char *who,
                            tjcu_tensor_map *out, int *fallback, char *why, size_t why_len)
{
    *fallback = 0;
    if (why_len)
        why[0] = 0;
    int n = set->n;
    if (n <= 0)
        return TJ_OK;
    if (!encode) {
        *fallback = 1;
        snprintf(why, why_len, "the CUDA driver has no cuTensorMapEncodeTiled (it is older than CUDA 12)");
        return TJ_OK;
    }
    /* each map's integers, and whether the cache held its encoding */
    struct resolved {
        tjj_tmap_args args;
        int cached;
    } *r = tjs_xcalloc((size_t)n, sizeof *r);
    for (int i = 0; i < n; i++) {
        if (!tjj_tmap_resolve(&set->maps[i], i, kernel, values, &r[i].args, why, why_len)) {
            free(r);
            return tjs_error(TJ_ERR_COMPILE, "internal error: %s: %s", who, why);
        }
        if (!tjj_tmap_check(&set->maps[i], i, kernel, &r[i].args, why, why_len)) {
            free(r);
            *fallback = 1;
            return TJ_OK;
        }
    }
    int misses = 0;
    pthread_mutex_lock(&set->lock);
    for (int i = 0; i < n; i++) {
        r[i].cached = cache_find(set, i, &r[i].args, &out[i]);
        misses += !r[i].cached;
    }
    pthread_mutex_unlock(&set->lock);
    tj_status st = TJ_OK;
    for (int i = 0; st == TJ_OK && i < n; i++)
        if (!r[i].cached)
            st = tjj_tmap_encode(encode, &set->maps[i], i, kernel, &r[i].args, who, &out[i]);
    if (misses && st == TJ_OK) {
        pthread_mutex_lock(&set->lock);
        set->encodes += (uint64_t)misses;
        for (int i = 0; i < n; i++) /* (another launch may have added it meanwhile) */
            if (!r[i].cached && !cache_find(set, i, &r[i].args, NULL))
                cache_add(set, i, &r[i].args, &out[i]);
        pthread_mutex_unlock(&set->lock);
    }
    free(r);
    return st;
}
