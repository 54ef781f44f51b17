/* SPDX-License-Identifier: MIT */
/*
 * test_tensor_map.c — the launch's side of Hopper's TMA copies
 * (src/jit/runtime/tensor_map.c): a variant's tensor maps resolved
 * against a launch's arguments, checked, encoded and cached.
 *
 * No GPU is needed: the encoder is a parameter, and here it is a stand-in
 * that records what it was given and writes those integers into the map,
 * so a map copied from the cache can be told from one encoded for other
 * arguments. The test checks
 *  - resolving: the base's address, extents and strides read from integer
 *    parameters of every width and sign, or constants; a map naming a
 *    parameter of the wrong kind is refused as malformed;
 *  - checking: good maps of f16, bf16, f32 and u8 (contiguous dimension 1
 *    and 0, swizzles of 128, 64 and 32 bytes) pass, and each illegal case
 *    (misaligned base, extents of 0 and past 2^32, a contiguous stride not
 *    1, strides not a multiple of 16 bytes, at 2^40 bytes, negative,
 *    overlapping rows; boxes of 0 and 257, a row that is not the swizzle)
 *    is refused with a reason naming the parameter and its value;
 *  - encoding: the driver's dimension order (contiguous first), strides in
 *    bytes without dimension 0's, the box in the same order, element
 *    strides 1, no interleave, the swizzle's enum, 128-byte L2 promotion,
 *    zero fill, the dtype's enum; an encoder's error becomes the launch's;
 *  - the cache: the same arguments copy the last encoding, other ones (a
 *    stride, a base) are encoded again — never a stale map — and threads
 *    launching with different arguments each get their own maps; a
 *    refusal or a driver without the encoder is a fallback, not an error;
 *  - the variant cache keeps a no_tma variant apart where a device
 *    specializes, and the CPU's (which does not) ignores it;
 *  - the contract with the code generator: the maps of a block-pointer
 *    matmul compiled for sm_90a resolve against a launch's arguments, pass
 *    the check and encode to what the driver wants, and a launch whose row
 *    stride makes A's rows overlap is refused (the fallback).
 * On a GPU (TJIT_TEST_DEVICE=gpu, tests/gpu/test_tensor_map.gpu) the
 * driver's own encoder accepts every good map, and on an sm_90 device the
 * matmul runs by TMA (its maps encoded once for two launches, ragged edges
 * filled with zeros), falls back to its variant without TMA where A's rows
 * overlap, and runs without TMA on a device opened with TJIT_NO_TMA=1 —
 * right each time against the product computed here.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/jit/runtime/device_impl.h"
#include "tap.h"
#include "tjit.h"

TJ_KERNEL(mapped,
          TJ_PARAMS(TJ_PTR(a16, f16), TJ_PTR(abf, bf16), TJ_PTR(a32, f32), TJ_PTR(a8, u8),
                    TJ_SCALAR(rows, i32), TJ_SCALAR(cols, i64), TJ_SCALAR(ld, i32), TJ_SCALAR(uld, u32),
                    TJ_SCALAR(neg, i16)),
          TJ_CONSTS())
{
}

enum { P_A16, P_ABF, P_A32, P_A8, P_ROWS, P_COLS, P_LD, P_ULD, P_NEG, NPARAMS };

/* A kernel for the variant cache's test (CPU). */
TJ_KERNEL(add_one, TJ_PARAMS(TJ_PTR(x, f32), TJ_SCALAR(n, i32)), TJ_CONSTS(BLOCK))
{
    tj_val offs = tj_add(tj_mul(tj_program_id(0), BLOCK), tj_arange(0, BLOCK));
    tj_val mask = tj_lt(offs, n);
    tj_store(tj_add(x, offs), tj_add(tj_load(tj_add(x, offs), .mask = mask), tj_f32(1)), .mask = mask);
}

/* A block-pointer matmul, f16 in, f32 out: what the code generator gives
 * TMA copies and a TMA store on sm_90a (src/passes/tma.c). */
TJ_KERNEL(bp_matmul,
          TJ_PARAMS(TJ_PTR(a, f16), TJ_PTR(b, f16), TJ_PTR(c, f32), TJ_SCALAR(M, i32), TJ_SCALAR(N, i32),
                    TJ_SCALAR(K, i32), TJ_SCALAR(stride_am, i32), TJ_SCALAR(stride_bk, i32)),
          TJ_CONSTS(BM, BN, BK))
{
    tj_val row0 = tj_mul(tj_program_id(1), BM), col0 = tj_mul(tj_program_id(0), BN);
    tj_val ap = tj_make_block_ptr(a, TJ_VALS(M, K), TJ_VALS(stride_am, 1), TJ_VALS(row0, 0), TJ_SHAPE(BM, BK),
                                  TJ_SHAPE(1, 0));
    tj_val bp = tj_make_block_ptr(b, TJ_VALS(K, N), TJ_VALS(stride_bk, 1), TJ_VALS(0, col0), TJ_SHAPE(BK, BN),
                                  TJ_SHAPE(1, 0));
    tj_val acc = tj_zeros(TJ_SHAPE(BM, BN), TJ_F32);
    TJ_FOR(k, 0, tj_cdiv(K, BK), 1, &acc, &ap, &bp) {
        acc = tj_dot(tj_load(ap, .boundary_check = TJ_DIMS(0, 1)), tj_load(bp, .boundary_check = TJ_DIMS(0, 1)),
                     acc);
        ap = tj_advance(ap, TJ_VALS(0, BK));
        bp = tj_advance(bp, TJ_VALS(BK, 0));
    }
    tj_store(tj_make_block_ptr(c, TJ_VALS(M, N), TJ_VALS(N, 1), TJ_VALS(row0, col0), TJ_SHAPE(BM, BN),
                               TJ_SHAPE(1, 0)),
             acc, .boundary_check = TJ_DIMS(0, 1));
}

enum { MM_NPARAMS = 8, MM_WARPS = 8 };
static const int64_t mm_consts[3] = {128, 128, 64};

#define BASE UINT64_C(0x7f1234560000)

/* The launch's values: buffers at BASE + 1 MiB * i, the scalars given. */
typedef struct launch_ints {
    int32_t rows;
    int64_t cols;
    int32_t ld;
    uint32_t uld;
    int16_t neg;
} launch_ints;

static int values_of(const launch_ints *in, tjf_value values[NPARAMS])
{
    tj_arg args[NPARAMS] = {TJ_ARG_BUF((tj_buffer){0}), TJ_ARG_BUF((tj_buffer){0}),
                            TJ_ARG_BUF((tj_buffer){0}), TJ_ARG_BUF((tj_buffer){0}),
                            TJ_ARG_I32(in->rows), TJ_ARG_I64(in->cols), TJ_ARG_I32(in->ld),
                            TJ_ARG_U32(in->uld), (tj_arg){TJ_I16, 0, {.i = in->neg}}};
    memset(values, 0, NPARAMS * sizeof *values);
    if (tjf_check_args(mapped, args, NPARAMS, values) != TJ_OK) {
        tap_diag("tjf_check_args: %s", tj_last_error());
        return 0;
    }
    for (int p = P_A16; p <= P_A8; p++)
        values[p].u64 = BASE + ((uint64_t)p << 20); /* as pass_buffer leaves it */
    return 1;
}

static tjj_tmap_src par(int p) { return (tjj_tmap_src){p, 0}; }
static tjj_tmap_src cst(int64_t v) { return (tjj_tmap_src){-1, v}; }

/* A rank-2 map of the base parameter's dtype. */
static tjj_tmap_info map2(int base, tjj_tmap_src e0, tjj_tmap_src e1, tjj_tmap_src s0, tjj_tmap_src s1,
                          int contiguous, uint32_t box0, uint32_t box1, int swizzle)
{
    tj_dtype dt = mapped->params[base].dtype;
    return (tjj_tmap_info){.base_param = base, .rank = 2, .dtype = dt, .elem_bytes = (int)tj_dtype_size(dt),
                           .shape = {e0, e1}, .strides = {s0, s1}, .contiguous = contiguous,
                           .box = {box0, box1}, .swizzle_bytes = swizzle};
}

/* The f16 map of an A operand: rows x cols, row stride ld, 128 x 64 boxes. */
static tjj_tmap_info map_a16(void)
{
    return map2(P_A16, par(P_ROWS), par(P_COLS), par(P_LD), cst(1), 1, 128, 64, 128);
}

static const launch_ints good_ints = {300, 1000, 1024, 3000000000u, -32};

/* --- the stand-in encoder -------------------------------------------------- */

typedef struct encode_call {
    tjcu_tensor_map *map;
    unsigned data_type, interleave, swizzle, l2, oob;
    uint32_t rank;
    void *address;
    uint64_t dims[5], strides[4];
    uint32_t box[5], element_strides[5];
} encode_call;

static _Thread_local encode_call last_call; /* the calling thread's: the thread test encodes on four */
static atomic_ulong encode_calls;
static tjcu_result encode_result = TJCU_SUCCESS;

/* Records its arguments; the map's words say which integers it was made of
 * (the thread test compares them with its own). */
static tjcu_result fake_encode TJCU_ENCODE_TILED_PARAMS(tjcu_tensor_map)
{
    unsigned long serial = atomic_fetch_add(&encode_calls, 1) + 1;
    encode_call c = {tensor_map, data_type, interleave, swizzle, l2_promotion, oob_fill, rank, global_address,
                     {0}, {0}, {0}, {0}};
    for (uint32_t k = 0; k < rank && k < 5; k++) {
        c.dims[k] = global_dim[k];
        c.box[k] = box_dim[k];
        c.element_strides[k] = element_strides[k];
        if (k + 1 < rank)
            c.strides[k] = global_strides[k];
    }
    if (encode_result != TJCU_SUCCESS)
        return encode_result;
    last_call = c;
    memset(tensor_map, 0, sizeof *tensor_map);
    uint64_t *w = tensor_map->opaque;
    w[0] = (uint64_t)(uintptr_t)global_address;
    w[1] = global_dim[0];
    w[2] = rank > 1 ? global_dim[1] : 0;
    w[3] = rank > 1 ? global_strides[0] : 0;
    w[4] = box_dim[0];
    w[5] = serial;
    return TJCU_SUCCESS;
}

/* --- resolving -------------------------------------------------------------- */

static void test_resolve(void)
{
    tjf_value values[NPARAMS];
    int ok = values_of(&good_ints, values);
    char why[512] = "";
    tjj_tmap_args args;
    tjj_tmap_info m = map_a16();
    ok = ok && tjj_tmap_resolve(&m, 0, mapped, values, &args, why, sizeof why);
    tap_ok(ok && args.base == BASE && args.shape[0] == 300 && args.shape[1] == 1000 && args.strides[0] == 1024 &&
               args.strides[1] == 1,
           "resolve: base 0x%llx, extents (%lld, %lld), strides (%lld, %lld) from i32, i64 and a constant",
           (unsigned long long)args.base, (long long)args.shape[0], (long long)args.shape[1],
           (long long)args.strides[0], (long long)args.strides[1]);

    /* a u32 above INT32_MAX stays positive, an i16 keeps its sign */
    m = map2(P_A32, par(P_ULD), cst(64), par(P_NEG), cst(1), 1, 8, 32, 128);
    ok = tjj_tmap_resolve(&m, 1, mapped, values, &args, why, sizeof why);
    tap_ok(ok && args.base == BASE + (2u << 20) && args.shape[0] == 3000000000ll && args.shape[1] == 64 &&
               args.strides[0] == -32,
           "resolve: a u32 is zero-extended (%lld), an i16 sign-extended (%lld)", (long long)args.shape[0],
           (long long)args.strides[0]);

    /* malformed maps: the code generator's mistakes */
    struct {
        const char *what, *expect;
        tjj_tmap_info m;
    } bad[] = {
        {"a base that is an integer parameter", "parameter 4", map_a16()},
        {"an extent from a pointer parameter", "parameter 1", map_a16()},
        {"a stride from past the parameters", "parameter 12", map_a16()},
        {"rank 4", "rank 4", map_a16()},
        {"a contiguous dimension past the rank", "contiguous dimension 2", map_a16()},
        {"an element size not the dtype's", "dtype f16 of 4 bytes", map_a16()},
        {"a dtype not the pointer's size", "(the pointer's: f16)", map_a16()},
    };
    bad[0].m.base_param = P_ROWS;
    bad[1].m.shape[1] = par(P_ABF);
    bad[2].m.strides[0] = par(12);
    bad[3].m.rank = 4;
    bad[4].m.contiguous = 2;
    bad[5].m.elem_bytes = 4;
    bad[6].m.dtype = TJ_F32;
    bad[6].m.elem_bytes = 4;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        why[0] = 0;
        ok = tjj_tmap_resolve(&bad[i].m, 3, mapped, values, &args, why, sizeof why);
        tap_ok(!ok && strstr(why, bad[i].expect) && strstr(why, "tensor map 3"),
               "resolve refuses %s: %s", bad[i].what, why);
    }
}

/* --- checking --------------------------------------------------------------- */

/* Resolves and checks m for the integers in; 1 if encodable. */
static int check(const tjj_tmap_info *m, const launch_ints *in, uint64_t base_offset, char *why, size_t len)
{
    tjf_value values[NPARAMS];
    tjj_tmap_args args;
    why[0] = 0;
    if (!values_of(in, values))
        return -1;
    values[m->base_param].u64 += base_offset;
    if (!tjj_tmap_resolve(m, 0, mapped, values, &args, why, len)) {
        tap_diag("resolve: %s", why);
        return -1;
    }
    return tjj_tmap_check(m, 0, mapped, &args, why, len);
}

static void test_check(void)
{
    char why[512];
    struct {
        const char *what;
        tjj_tmap_info m;
        launch_ints in;
    } good[] = {
        {"f16, contiguous dimension 1, 128 x 64 boxes, swizzle 128", map_a16(), good_ints},
        {"bf16, contiguous dimension 1, 64 x 32 boxes, swizzle 64",
         map2(P_ABF, par(P_ROWS), par(P_COLS), par(P_LD), cst(1), 1, 64, 32, 64), good_ints},
        {"f32, contiguous dimension 0 (column-major), 32 x 128 boxes, swizzle 128",
         map2(P_A32, par(P_COLS), par(P_ROWS), cst(1), par(P_LD), 0, 32, 128, 128), good_ints},
        {"u8, contiguous dimension 1, 256 x 32 boxes, swizzle 32",
         map2(P_A8, par(P_ROWS), par(P_COLS), par(P_LD), cst(1), 1, 256, 32, 32), good_ints},
        {"extents and strides at their limits (2^32 rows, a stride just under 2^40 bytes)",
         map2(P_A8, par(P_COLS), cst(16), par(P_COLS), cst(1), 1, 1, 32, 32),
         {1, ((int64_t)1 << 32), 16, 0, 0}},
        {"a stride equal to the contiguous extent", map_a16(), {300, 1024, 1024, 0, 0}},
    };
    good[4].m.strides[0] = cst(((int64_t)1 << 40) - 16);
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        int ok = check(&good[i].m, &good[i].in, 0, why, sizeof why);
        tap_ok(ok == 1, "check accepts %s%s%s", good[i].what, ok == 1 ? "" : ": ", ok == 1 ? "" : why);
    }

    struct {
        const char *what;
        tjj_tmap_info m;
        launch_ints in;
        uint64_t base_offset;
        const char *expect[3];
    } bad[] = {
        {"a base not 16-byte aligned", map_a16(), good_ints, 8, {"base, 'a16' (argument 1)", "0x7f1234560008", "16-byte"}},
        {"an extent of 0", map_a16(), {0, 1000, 1024, 0, 0}, 0, {"extent of dimension 0", "'rows' (argument 5) = 0", "1 to 2^32"}},
        {"an extent past 2^32", map_a16(), {300, ((int64_t)1 << 32) + 1, 1024, 0, 0}, 0,
         {"extent of dimension 1", "'cols' (argument 6) = 4294967297", "2^32"}},
        {"a contiguous stride not 1", map2(P_A16, par(P_ROWS), par(P_COLS), cst(1024), par(P_LD), 1, 128, 64, 128),
         {300, 1000, 2, 0, 0}, 0, {"stride of dimension 1", "'ld' (argument 7) = 2", "is not 1"}},
        {"a stride not a multiple of 16 bytes", map_a16(), {300, 64, 100, 0, 0}, 0,
         {"stride of dimension 0", "'ld' (argument 7) = 100 elements of 2 bytes", "multiple of 16"}},
        {"a stride of 2^40 bytes", map2(P_A16, par(P_ROWS), cst(64), par(P_COLS), cst(1), 1, 128, 64, 128),
         {300, (int64_t)1 << 39, 0, 0, 0}, 0, {"stride of dimension 0", "'cols' (argument 6) = 549755813888", "2^40"}},
        {"a negative stride", map2(P_A16, par(P_ROWS), cst(64), par(P_NEG), cst(1), 1, 128, 64, 128),
         {300, 0, 0, 0, -64}, 0, {"stride of dimension 0", "'neg' (argument 9) = -64", "not positive"}},
        {"rows that overlap (a stride below the contiguous extent)", map_a16(), {300, 2048, 1024, 0, 0}, 0,
         {"stride of dimension 0", "'ld' (argument 7) = 1024", "rows overlap"}},
        {"a constant stride not a multiple of 16 bytes",
         map2(P_A32, par(P_ROWS), cst(3), cst(3), cst(1), 1, 128, 32, 128), good_ints, 0,
         {"stride of dimension 0", "a constant = 3 elements of 4 bytes", "multiple of 16"}},
        {"an empty box", map2(P_A16, par(P_ROWS), par(P_COLS), par(P_LD), cst(1), 1, 0, 64, 128), good_ints, 0,
         {"box is 0 elements along dimension 0", "tensor map 0 (of 'a16', argument 1)", ""}},
        {"a box of 257", map2(P_A16, par(P_ROWS), par(P_COLS), par(P_LD), cst(1), 1, 257, 64, 128), good_ints, 0,
         {"box is 257 elements along dimension 0", "1 to 256", ""}},
        {"a box row that is not the swizzle", map2(P_A16, par(P_ROWS), par(P_COLS), par(P_LD), cst(1), 1, 128, 32, 128),
         good_ints, 0, {"32 elements of 2 bytes along dimension 1", "swizzle width (128 bytes", ""}},
        {"a swizzle of 256 bytes", map2(P_A32, par(P_ROWS), par(P_COLS), par(P_LD), cst(1), 1, 8, 64, 256),
         good_ints, 0, {"swizzle width (256 bytes", "", ""}},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int ok = check(&bad[i].m, &bad[i].in, bad[i].base_offset, why, sizeof why);
        int named = 1;
        for (int k = 0; k < 3; k++)
            named = named && strstr(why, bad[i].expect[k]) != NULL;
        tap_ok(ok == 0 && named && strstr(why, "tensor map 0"), "check refuses %s: %s", bad[i].what, why);
    }
}

/* --- encoding --------------------------------------------------------------- */

static void test_encode(void)
{
    struct {
        const char *what;
        tjj_tmap_info m;
        unsigned data_type, swizzle;
        uint64_t dims[2], stride;
        uint32_t box[2];
    } cases[] = {
        /* the tile's (300 x 1000, ld 1024): contiguous dimension 1 leads */
        {"f16, contiguous dimension 1", map_a16(), TJCU_TENSOR_MAP_DATA_TYPE_FLOAT16, TJCU_TENSOR_MAP_SWIZZLE_128B,
         {1000, 300}, 2048, {64, 128}},
        {"bf16, contiguous dimension 1", map2(P_ABF, par(P_ROWS), par(P_COLS), par(P_LD), cst(1), 1, 64, 32, 64),
         TJCU_TENSOR_MAP_DATA_TYPE_BFLOAT16, TJCU_TENSOR_MAP_SWIZZLE_64B, {1000, 300}, 2048, {32, 64}},
        /* (1000 x 300) column-major: dimension 0 is the contiguous one */
        {"f32, contiguous dimension 0", map2(P_A32, par(P_COLS), par(P_ROWS), cst(1), par(P_LD), 0, 32, 128, 128),
         TJCU_TENSOR_MAP_DATA_TYPE_FLOAT32, TJCU_TENSOR_MAP_SWIZZLE_128B, {1000, 300}, 4096, {32, 128}},
        {"u8, contiguous dimension 1", map2(P_A8, par(P_ROWS), par(P_COLS), par(P_LD), cst(1), 1, 256, 32, 32),
         TJCU_TENSOR_MAP_DATA_TYPE_UINT8, TJCU_TENSOR_MAP_SWIZZLE_32B, {1000, 300}, 1024, {32, 256}},
        {"u8, contiguous dimension 0", map2(P_A8, par(P_COLS), par(P_ROWS), cst(1), par(P_LD), 0, 64, 16, 64),
         TJCU_TENSOR_MAP_DATA_TYPE_UINT8, TJCU_TENSOR_MAP_SWIZZLE_64B, {1000, 300}, 1024, {64, 16}},
    };
    tjf_value values[NPARAMS];
    values_of(&good_ints, values);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const tjj_tmap_info *m = &cases[i].m;
        char why[512] = "";
        tjj_tmap_args args;
        _Alignas(64) tjcu_tensor_map out;
        memset(&last_call, 0, sizeof last_call);
        int ok = tjj_tmap_resolve(m, 0, mapped, values, &args, why, sizeof why) &&
                 tjj_tmap_check(m, 0, mapped, &args, why, sizeof why) &&
                 tjj_tmap_encode(fake_encode, m, 0, mapped, &args, "test", &out) == TJ_OK;
        if (!ok)
            tap_diag("%s %s", why, tj_last_error());
        const encode_call *c = &last_call;
        tap_ok(ok && c->map == &out && c->rank == 2 && c->address == (void *)(uintptr_t)args.base &&
                   c->data_type == cases[i].data_type,
               "encode %s: rank 2, the base's address, data type %u (got %u)", cases[i].what,
               cases[i].data_type, c->data_type);
        tap_ok(c->dims[0] == cases[i].dims[0] && c->dims[1] == cases[i].dims[1] && c->strides[0] == cases[i].stride,
               "encode %s: dims (%llu, %llu) innermost first, stride %llu bytes (got (%llu, %llu), %llu)",
               cases[i].what, (unsigned long long)cases[i].dims[0], (unsigned long long)cases[i].dims[1],
               (unsigned long long)cases[i].stride, (unsigned long long)c->dims[0],
               (unsigned long long)c->dims[1], (unsigned long long)c->strides[0]);
        tap_ok(c->box[0] == cases[i].box[0] && c->box[1] == cases[i].box[1] && c->element_strides[0] == 1 &&
                   c->element_strides[1] == 1,
               "encode %s: box (%u, %u) in the same order (got (%u, %u)), element strides 1", cases[i].what,
               cases[i].box[0], cases[i].box[1], c->box[0], c->box[1]);
        tap_ok(c->swizzle == cases[i].swizzle && c->interleave == TJCU_TENSOR_MAP_INTERLEAVE_NONE &&
                   c->l2 == TJCU_TENSOR_MAP_L2_PROMOTION_L2_128B && c->oob == TJCU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
               "encode %s: swizzle %u, no interleave, L2 promotion 128B, zero fill (got %u, %u, %u, %u)",
               cases[i].what, cases[i].swizzle, c->swizzle, c->interleave, c->l2, c->oob);
    }

    /* every dtype has its driver type; 1-byte ones copy as UINT8 */
    struct {
        tj_dtype dt;
        unsigned want;
    } types[] = {{TJ_F8E4M3, TJCU_TENSOR_MAP_DATA_TYPE_UINT8}, {TJ_F8E5M2, TJCU_TENSOR_MAP_DATA_TYPE_UINT8},
                 {TJ_I8, TJCU_TENSOR_MAP_DATA_TYPE_UINT8},      {TJ_I16, TJCU_TENSOR_MAP_DATA_TYPE_UINT16},
                 {TJ_I32, TJCU_TENSOR_MAP_DATA_TYPE_INT32},     {TJ_U32, TJCU_TENSOR_MAP_DATA_TYPE_UINT32},
                 {TJ_I64, TJCU_TENSOR_MAP_DATA_TYPE_INT64},     {TJ_F64, TJCU_TENSOR_MAP_DATA_TYPE_FLOAT64}};
    int all = 1;
    for (size_t i = 0; i < sizeof types / sizeof *types; i++) {
        tjcu_tensor_map_data_type t = 99;
        if (!tjj_tmap_data_type(types[i].dt, &t) || t != types[i].want) {
            tap_diag("%s: data type %u, expected %u", tj_dtype_name(types[i].dt), t, types[i].want);
            all = 0;
        }
    }
    tap_ok(all, "the driver's data types of fp8, i8, i16, i32, u32, i64 and f64");

    /* the driver's refusal is the launch's error, naming the map */
    tjj_tmap_args args;
    char why[512];
    tjj_tmap_info m = map_a16();
    _Alignas(64) tjcu_tensor_map out;
    tjj_tmap_resolve(&m, 2, mapped, values, &args, why, sizeof why);
    encode_result = TJCU_ERROR_INVALID_VALUE;
    tj_status st = tjj_tmap_encode(fake_encode, &m, 2, mapped, &args, "kernel 'mapped'", &out);
    encode_result = TJCU_SUCCESS;
    tap_ok(st == TJ_ERR_DEVICE && strstr(tj_last_error(), "kernel 'mapped': cuTensorMapEncodeTiled (tensor map 2 "
                                                          "(of 'a16', argument 1)): CUDA error 1"),
           "an encoder's error fails the launch: %s", tj_last_error());
    tjs_clear_error();
}

/* --- a variant's set and its cache ------------------------------------------ */

/* A set of two maps: A (rows x cols, ld) and B (cols x 64, ld) of a16, abf. */
static void two_maps(tjj_tmap_set *set)
{
    tjj_tmap_info *maps = tjs_xcalloc(2, sizeof *maps);
    maps[0] = map_a16();
    maps[1] = map2(P_ABF, par(P_COLS), cst(64), par(P_LD), cst(1), 1, 64, 64, 128);
    tjj_tmap_set_init(set, maps, 2);
}

/* Does map (as fake_encode wrote it) hold base, the innermost extent and the stride in bytes? */
static int holds(const tjcu_tensor_map *map, uint64_t base, uint64_t dim0, uint64_t stride)
{
    return map->opaque[0] == base && map->opaque[1] == dim0 && map->opaque[3] == stride;
}

static tj_status prepare(tjj_tmap_set *set, tjcu_cuTensorMapEncodeTiled_fn encode, const launch_ints *in,
                         uint64_t a_offset, tjcu_tensor_map *out, int *fallback, char *why, size_t len)
{
    tjf_value values[NPARAMS];
    values_of(in, values);
    values[P_A16].u64 += a_offset;
    return tjj_tmaps_prepare(set, encode, mapped, values, "kernel 'mapped'", out, fallback, why, len);
}

static void test_cache(void)
{
    tjj_tmap_set set;
    two_maps(&set);
    tjcu_tensor_map *out = tjj_tmap_storage(2), *first = tjj_tmap_storage(2);
    char why[512];
    int fallback = -1;
    atomic_store(&encode_calls, 0);
    const uint64_t a = BASE, b = BASE + (1u << 20);

    tj_status st = prepare(&set, fake_encode, &good_ints, 0, out, &fallback, why, sizeof why);
    tap_ok(st == TJ_OK && !fallback && atomic_load(&encode_calls) == 2 && holds(&out[0], a, 1000, 2048) &&
               holds(&out[1], b, 64, 2048) && ((uintptr_t)out & 63) == 0,
           "the first launch encodes both maps (%lu encoder calls)", atomic_load(&encode_calls));
    memcpy(first, out, 2 * sizeof *out);
    memset(out, 0, 2 * sizeof *out);
    st = prepare(&set, fake_encode, &good_ints, 0, out, &fallback, why, sizeof why);
    tap_ok(st == TJ_OK && !fallback && atomic_load(&encode_calls) == 2 && memcmp(out, first, 2 * sizeof *out) == 0,
           "a launch with the same arguments copies the cached maps (%lu encoder calls)",
           atomic_load(&encode_calls));

    launch_ints other = good_ints;
    other.ld = 2048;
    st = prepare(&set, fake_encode, &other, 0, out, &fallback, why, sizeof why);
    tap_ok(st == TJ_OK && !fallback && atomic_load(&encode_calls) == 4 && holds(&out[0], a, 1000, 4096) &&
               holds(&out[1], b, 64, 4096),
           "another stride encodes again: no stale map (%lu calls; stride %llu bytes)", atomic_load(&encode_calls),
           (unsigned long long)out[0].opaque[3]);
    st = prepare(&set, fake_encode, &good_ints, 4096, out, &fallback, why, sizeof why);
    tap_ok(st == TJ_OK && !fallback && atomic_load(&encode_calls) == 5 && holds(&out[0], a + 4096, 1000, 2048) &&
               holds(&out[1], b, 64, 2048),
           "another base of A encodes A's map alone (%lu calls; base 0x%llx)", atomic_load(&encode_calls),
           (unsigned long long)out[0].opaque[0]);
    st = prepare(&set, fake_encode, &good_ints, 0, out, &fallback, why, sizeof why);
    tap_ok(st == TJ_OK && atomic_load(&encode_calls) == 5 && holds(&out[0], a, 1000, 2048) &&
               holds(&out[1], b, 64, 2048) && set.encodes == 5,
           "the first arguments again: both maps from the cache (%lu calls)", atomic_load(&encode_calls));


    /* refusals fall back, without calling the encoder */
    launch_ints empty = good_ints;
    empty.rows = 0;
    st = prepare(&set, fake_encode, &empty, 0, out, &fallback, why, sizeof why);
    tap_ok(st == TJ_OK && fallback == 1 && strstr(why, "'rows' (argument 5) = 0") && atomic_load(&encode_calls) == 5,
           "an extent of 0 falls back: %s", why);
    st = prepare(&set, NULL, &good_ints, 0, out, &fallback, why, sizeof why);
    tap_ok(st == TJ_OK && fallback == 1 && strstr(why, "cuTensorMapEncodeTiled"),
           "a driver without the encoder falls back: %s", why);

    /* an encoder's failure is an error and leaves the cache as it was */
    launch_ints third = good_ints;
    third.ld = 3072;
    encode_result = TJCU_ERROR_INVALID_VALUE;
    st = prepare(&set, fake_encode, &third, 0, out, &fallback, why, sizeof why);
    encode_result = TJCU_SUCCESS;
    tap_ok(st == TJ_ERR_DEVICE && !fallback && strstr(tj_last_error(), "cuTensorMapEncodeTiled (tensor map 0"),
           "an encoder's failure is the launch's error: %s", tj_last_error());
    unsigned long before = atomic_load(&encode_calls);
    st = prepare(&set, fake_encode, &good_ints, 0, out, &fallback, why, sizeof why);
    tap_ok(st == TJ_OK && atomic_load(&encode_calls) == before && holds(&out[0], a, 1000, 2048),
           "... and the cache still holds the last good encoding");
    tjj_tmap_set_free(&set);

    /* A's base rotating through TJJ_TMAP_WAYS copies: each encoded once,
     * B's map once, then every launch copies; one copy more than the cache
     * holds evicts the oldest, and every map is still right. */
    two_maps(&set);
    unsigned long calls = atomic_load(&encode_calls);
    int right = 1;
    for (int round = 0; round < 3; round++)
        for (uint64_t k = 0; k < TJJ_TMAP_WAYS; k++) {
            st = prepare(&set, fake_encode, &good_ints, k * 4096, out, &fallback, why, sizeof why);
            right &= st == TJ_OK && holds(&out[0], a + k * 4096, 1000, 2048) && holds(&out[1], b, 64, 2048);
        }
    tap_ok(right && atomic_load(&encode_calls) - calls == TJJ_TMAP_WAYS + 1,
           "%d copies of A in turn, 3 rounds: %lu encoder calls (%d expected)", TJJ_TMAP_WAYS,
           atomic_load(&encode_calls) - calls, TJJ_TMAP_WAYS + 1);
    calls = atomic_load(&encode_calls);
    for (int round = 0; round < 2; round++)
        for (uint64_t k = 0; k <= TJJ_TMAP_WAYS; k++) {
            st = prepare(&set, fake_encode, &good_ints, k * 4096, out, &fallback, why, sizeof why);
            right &= st == TJ_OK && holds(&out[0], a + k * 4096, 1000, 2048) && holds(&out[1], b, 64, 2048);
        }
    tap_ok(right && atomic_load(&encode_calls) > calls && atomic_load(&encode_calls) - calls <= 2 * (TJJ_TMAP_WAYS + 1),
           "%d copies in turn, one more than the cache holds: every map right (%lu encoder calls)",
           TJJ_TMAP_WAYS + 1, atomic_load(&encode_calls) - calls);
    free(out);
    free(first);
    tjj_tmap_set_free(&set);

    /* a malformed map is an internal error, not a fallback */
    tjj_tmap_info *maps = tjs_xcalloc(1, sizeof *maps);
    maps[0] = map_a16();
    maps[0].base_param = P_LD;
    tjj_tmap_set_init(&set, maps, 1);
    out = tjj_tmap_storage(1);
    st = prepare(&set, fake_encode, &good_ints, 0, out, &fallback, why, sizeof why);
    tap_ok(st == TJ_ERR_COMPILE && !fallback && strstr(tj_last_error(), "internal error"),
           "a malformed map is an internal error: %s", tj_last_error());
    tjs_clear_error();
    free(out);
    tjj_tmap_set_free(&set);

    /* no maps: nothing to do */
    tjj_tmap_set_init(&set, NULL, 0);
    st = prepare(&set, NULL, &good_ints, 0, NULL, &fallback, why, sizeof why);
    tap_ok(st == TJ_OK && !fallback, "a variant without maps has nothing to prepare");
    tjj_tmap_set_free(&set);
}

/* Threads launching one variant with arguments of their own, at once. */
enum { NTHREADS = 4, ROUNDS = 3000 };
typedef struct thread_job {
    tjj_tmap_set *set;
    int id;
    int wrong;
    tj_status status;
} thread_job;

static void *launcher(void *arg)
{
    thread_job *job = arg;
    tjcu_tensor_map *out = tjj_tmap_storage(3);
    char why[512];
    for (int r = 0; r < ROUNDS && !job->wrong; r++) {
        /* half the rounds share arguments with every other thread */
        launch_ints in = good_ints;
        in.ld = 1024 + 16 * (r % 2 ? job->id + 1 : 0);
        int fallback = 0;
        tj_status st = prepare(job->set, fake_encode, &in, 0, out, &fallback, why, sizeof why);
        if (st != TJ_OK || fallback) {
            job->status = st;
            job->wrong = 1;
        } else if (!holds(&out[0], BASE, 1000, (uint64_t)in.ld * 2) ||
                   !holds(&out[1], BASE + (1u << 20), 64, (uint64_t)in.ld * 2)) {
            job->wrong = 1;
        }
    }
    free(out);
    return NULL;
}

static void test_threads(void)
{
    tjj_tmap_set set;
    two_maps(&set);
    pthread_t threads[NTHREADS];
    thread_job jobs[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
        jobs[i] = (thread_job){&set, i, 0, TJ_OK};
        pthread_create(&threads[i], NULL, launcher, &jobs[i]);
    }
    int wrong = 0;
    for (int i = 0; i < NTHREADS; i++) {
        pthread_join(threads[i], NULL);
        wrong += jobs[i].wrong;
    }
    tap_ok(!wrong, "%d threads x %d launches with their own strides each get their own maps (%llu encoded)",
           NTHREADS, ROUNDS, (unsigned long long)set.encodes);
    tjj_tmap_set_free(&set);
}

/* --- the variant cache ----------------------------------------------------- */

static void test_variants(void)
{
    tj_device *dev = NULL;
    if (tj_device_open(&dev, TJ_DEVICE_CPU, 0) != TJ_OK) {
        tap_diag("%s", tj_last_error());
        tap_ok(0, "the CPU device opens");
        return;
    }
    const int64_t block = 128;
    variant *v0 = NULL, *v1 = NULL, *v0again = NULL;
    /* the CPU does not specialize: no_tma is no part of its key */
    int ok = tjj_get_variant(dev, add_one, &block, 1, 4, 0, 0, 0, 0, 0, 0, 0, &v0) == TJ_OK &&
             tjj_get_variant(dev, add_one, &block, 1, 4, 0, 0, 0, 1, 0, 0, 0, &v1) == TJ_OK;
    tap_ok(ok && v0 == v1 && !v0->no_tma && v0->tmaps.n == 0, "the CPU's variant cache ignores no_tma");
    /* a device that specializes (the GPU's way) keeps the two apart */
    tjj_backend specializing = *dev->ops;
    specializing.specializes = 1;
    const tjj_backend *own = dev->ops;
    dev->ops = &specializing;
    ok = tjj_get_variant(dev, add_one, &block, 1, 4, 0, 0, 0, 0, 0, 0, 0, &v0) == TJ_OK &&
         tjj_get_variant(dev, add_one, &block, 1, 4, 0, 0, 0, 1, 0, 0, 0, &v1) == TJ_OK &&
         tjj_get_variant(dev, add_one, &block, 1, 4, 0, 0, 0, 0, 0, 0, 0, &v0again) == TJ_OK;
    if (!ok)
        tap_diag("%s", tj_last_error());
    tap_ok(ok && v0 != v1 && v0 == v0again && !v0->no_tma && v1->no_tma,
           "a specializing device caches the no_tma variant apart from the other");
    tap_ok(ok && v0->key.high == v1->key.high && v0->key.low == v1->key.low,
           "... and compiled for the CPU both have the CPU's key (no_tma is a GPU target's)");
    dev->ops = own;
    tj_device_close(dev);
}

/* --- the code generator's maps -------------------------------------------- */

/* bp_matmul's launch values for an M x N x K product with A's row stride
 * lda (pointers at a, b, c). */
static void mm_values(int32_t m, int32_t n, int32_t k, int32_t lda, const uint64_t ptrs[3],
                      tjf_value values[MM_NPARAMS])
{
    tj_arg args[MM_NPARAMS] = {TJ_ARG_BUF((tj_buffer){0}), TJ_ARG_BUF((tj_buffer){0}), TJ_ARG_BUF((tj_buffer){0}),
                               TJ_ARG_I32(m), TJ_ARG_I32(n), TJ_ARG_I32(k), TJ_ARG_I32(lda), TJ_ARG_I32(n)};
    memset(values, 0, MM_NPARAMS * sizeof *values);
    if (tjf_check_args(bp_matmul, args, MM_NPARAMS, values) != TJ_OK)
        tap_diag("tjf_check_args: %s", tj_last_error());
    for (int p = 0; p < 3; p++)
        values[p].u64 = ptrs[p];
}

static void test_compiled_maps(void)
{
    const uint64_t ptrs[3] = {BASE, BASE + (1u << 24), BASE + (2u << 24)};
    tjf_value values[MM_NPARAMS];
    mm_values(256, 256, 256, 256, ptrs, values);
    tji_func *fn = NULL;
    tjj_artifact art = {0};
    tj_status st = tji_build(bp_matmul, mm_consts, 3, &fn);
    if (st == TJ_OK)
        st = tjj_compile_gpu(fn, &(tjj_gpu_target){.sm = 90, .arch_specific = 1, .num_warps = MM_WARPS,
                                                   .spec = tjf_spec_key(bp_matmul, values)},
                             &art);
    tji_func_free(fn);
    if (st != TJ_OK)
        tap_diag("compile: %s", tj_last_error());
    tap_ok(st == TJ_OK && art.gpu.ntmaps == 3, "the matmul for sm_90a uses %d tensor maps (A's, B's and C's)",
           art.gpu.ntmaps);
    if (st != TJ_OK || art.gpu.ntmaps != 3) {
        tjj_artifact_free(&art);
        return;
    }
    tjj_tmap_set set;
    tjj_tmap_set_init(&set, art.gpu.tmaps, art.gpu.ntmaps);
    art.gpu.tmaps = NULL;
    art.gpu.ntmaps = 0;
    tjj_artifact_free(&art);
    tjcu_tensor_map *out = tjj_tmap_storage(3);
    char why[512];
    int fallback = -1;
    memset(&last_call, 0, sizeof last_call);
    st = tjj_tmaps_prepare(&set, fake_encode, bp_matmul, values, "kernel 'bp_matmul'", out, &fallback, why,
                           sizeof why);
    /* A's and B's, in the order of their rings (either first): each at its pointer, 256
     * elements innermost, rows of 512 bytes; then C's (f32: rows of 1024
     * bytes), the last one encoded, with 128-byte rows of f32 in its box */
    const encode_call *c = &last_call;
    int bases = 0, right = st == TJ_OK && !fallback;
    for (int i = 0; i < 3; i++) {
        int p = set.maps[i].base_param;
        bases |= 1 << (p & 7);
        right = right && (i < 2 ? p < 2 : p == 2) && holds(&out[i], ptrs[p], 256, p == 2 ? 1024 : 512);
    }
    tap_ok(right && bases == 7 && c->data_type == TJCU_TENSOR_MAP_DATA_TYPE_FLOAT32 &&
               c->swizzle == TJCU_TENSOR_MAP_SWIZZLE_128B && c->box[0] * 4 == 128,
           "its maps, resolved from a launch of 256^3, encode A's, B's and C's (at 0x%llx, 0x%llx and 0x%llx, "
           "rows of %llu and %llu bytes; the last box %u x %u) %s", (unsigned long long)out[0].opaque[0],
           (unsigned long long)out[1].opaque[0], (unsigned long long)out[2].opaque[0],
           (unsigned long long)out[0].opaque[3], (unsigned long long)out[2].opaque[3], c->box[0], c->box[1], why);
    /* the same specialization (every integer a multiple of 16), A's rows overlapping */
    mm_values(256, 256, 256, 64, ptrs, values);
    st = tjj_tmaps_prepare(&set, fake_encode, bp_matmul, values, "kernel 'bp_matmul'", out, &fallback, why,
                           sizeof why);
    tap_ok(st == TJ_OK && fallback && strstr(why, "'stride_am' (argument 7) = 64") && strstr(why, "rows overlap"),
           "a launch with A's row stride (64) below K (256) falls back: %s", why);
    free(out);
    tjj_tmap_set_free(&set);
}

/* --- on a GPU ------------------------------------------------------------------ */

/* The variant of kernel k in dev's cache with the given no_tma, or NULL. */
static variant *cached(tj_device *d, const tj_kernel *k, int no_tma)
{
    for (size_t b = 0; b < d->nbuckets; b++)
        for (variant *v = d->buckets[b]; v; v = v->next)
            if (v->kernel == k && v->no_tma == no_tma && v->state == VARIANT_READY)
                return v;
    return NULL;
}

/* The driver's encoder on every good map of the check test, at a buffer's address. */
static void gpu_encode(tj_device *dev, uint64_t addr)
{
    tjcu_cuTensorMapEncodeTiled_fn encode = dev->cu->cuTensorMapEncodeTiled;
    tap_ok(encode != NULL, "the driver has cuTensorMapEncodeTiled (driver %d)", dev->cu->version);
    if (!encode || tjj_gpu_enter(dev, "test") != TJ_OK)
        return;
    struct {
        const char *what;
        tjj_tmap_info m;
    } maps[] = {
        {"f16, contiguous dimension 1", map_a16()},
        {"bf16, contiguous dimension 1", map2(P_ABF, par(P_ROWS), par(P_COLS), par(P_LD), cst(1), 1, 64, 32, 64)},
        {"f32, contiguous dimension 0", map2(P_A32, par(P_COLS), par(P_ROWS), cst(1), par(P_LD), 0, 32, 128, 128)},
        {"u8, contiguous dimension 1", map2(P_A8, par(P_ROWS), par(P_COLS), par(P_LD), cst(1), 1, 256, 32, 32)},
        {"u8, contiguous dimension 0", map2(P_A8, par(P_COLS), par(P_ROWS), cst(1), par(P_LD), 0, 64, 16, 64)},
    };
    tjf_value values[NPARAMS];
    values_of(&good_ints, values);
    for (int p = P_A16; p <= P_A8; p++)
        values[p].u64 = addr;
    for (size_t i = 0; i < sizeof maps / sizeof *maps; i++) {
        tjj_tmap_args args;
        char why[512] = "";
        _Alignas(64) tjcu_tensor_map out;
        int ok = tjj_tmap_resolve(&maps[i].m, 0, mapped, values, &args, why, sizeof why) &&
                 tjj_tmap_check(&maps[i].m, 0, mapped, &args, why, sizeof why) &&
                 tjj_tmap_encode(encode, &maps[i].m, 0, mapped, &args, "test", &out) == TJ_OK;
        tap_ok(ok, "the driver encodes %s%s%s%s", maps[i].what, ok ? "" : ": ", why, ok ? "" : tj_last_error());
    }
    /* what the check refuses and the driver would take, for the record */
    tjj_tmap_info m = map_a16();
    launch_ints overlap = {300, 2048, 1024, 0, 0};
    values_of(&overlap, values);
    values[P_A16].u64 = addr;
    tjj_tmap_args args;
    char why[512];
    _Alignas(64) tjcu_tensor_map out;
    tjj_tmap_resolve(&m, 0, mapped, values, &args, why, sizeof why);
    tj_status st = tjj_tmap_encode(encode, &m, 0, mapped, &args, "test", &out);
    tap_diag("the driver %s a map whose rows overlap (stride 1024 < extent 2048)%s%s",
             st == TJ_OK ? "accepts" : "refuses", st == TJ_OK ? "" : ": ", st == TJ_OK ? "" : tj_last_error());
    tjs_clear_error();
}

/* One bp_matmul launch of M x N x K with A's row stride lda on dev,
 * against the product computed here; small integers, so exact. */
static int gpu_matmul_n(tj_device *dev, int32_t m, int32_t n, int32_t k, int32_t lda, int launches,
                        const char *what)
{
    size_t na = (size_t)(m - 1) * (size_t)lda + (size_t)k, nb = (size_t)k * n, nc = (size_t)m * n;
    uint16_t *a = malloc(na * 2), *b = malloc(nb * 2);
    float *c = malloc(nc * 4), *ref = calloc(nc, 4);
    for (size_t i = 0; i < na; i++)
        a[i] = tj_f32_to_f16((float)((int)(i * 7 % 5) - 2));
    for (size_t i = 0; i < nb; i++)
        b[i] = tj_f32_to_f16((float)((int)(i * 3 % 7) - 3));
    for (int32_t i = 0; i < m; i++)
        for (int32_t kk = 0; kk < k; kk++) {
            float x = tj_f16_to_f32(a[(size_t)i * lda + kk]);
            for (int32_t j = 0; j < n; j++)
                ref[(size_t)i * n + j] += x * tj_f16_to_f32(b[(size_t)kk * n + j]);
        }
    tj_buffer ba = {0}, bb = {0}, bc = {0};
    tj_launch_cfg cfg = {.grid = {(n + mm_consts[1] - 1) / mm_consts[1], (m + mm_consts[0] - 1) / mm_consts[0]},
                         .num_warps = MM_WARPS};
    tj_status st = tj_buffer_alloc(dev, na * 2, &ba);
    if (st == TJ_OK)
        st = tj_buffer_alloc(dev, nb * 2, &bb);
    if (st == TJ_OK)
        st = tj_buffer_alloc(dev, nc * 4, &bc);
    if (st == TJ_OK)
        st = tj_buffer_write(dev, ba, 0, a, na * 2);
    if (st == TJ_OK)
        st = tj_buffer_write(dev, bb, 0, b, nb * 2);
    for (int l = 0; l < launches && st == TJ_OK; l++)
        st = bp_matmul_launch(dev, &cfg, ba, bb, bc, m, n, k, lda, n, mm_consts[0], mm_consts[1], mm_consts[2]);
    if (st == TJ_OK)
        st = tj_buffer_read(dev, bc, 0, c, nc * 4);
    size_t bad = 0, first = 0;
    for (size_t i = 0; st == TJ_OK && i < nc; i++)
        if (c[i] != ref[i] && !bad++)
            first = i;
    if (st != TJ_OK)
        tap_diag("%s", tj_last_error());
    else if (bad)
        tap_diag("%zu of %zu wrong; the first at [%zu, %zu]: %g, expected %g", bad, nc, first / (size_t)n,
                 first % (size_t)n, c[first], ref[first]);
    int ok = tap_ok(st == TJ_OK && !bad, "%s: %d x %d x %d, A's row stride %d, right", what, m, n, k, lda);
    tj_buffer_free(dev, ba);
    tj_buffer_free(dev, bb);
    tj_buffer_free(dev, bc);
    free(a);
    free(b);
    free(c);
    free(ref);
    return ok;
}

static int gpu_matmul(tj_device *dev, int32_t m, int32_t n, int32_t k, int32_t lda, const char *what)
{
    return gpu_matmul_n(dev, m, n, k, lda, 1, what);
}

static void test_gpu(void)
{
    const char *env = getenv("TJIT_TEST_DEVICE");
    if (!env || strcmp(env, "gpu") != 0) {
        tap_diag("the GPU part runs as tests/gpu/test_tensor_map.gpu (TJIT_TEST_DEVICE=gpu)");
        return;
    }
    tj_device *dev = NULL;
    if (tj_device_open(&dev, TJ_DEVICE_GPU, 0) != TJ_OK)
        tap_bail_out("TJIT_TEST_DEVICE=gpu, but the GPU does not open: %s", tj_last_error());
    tap_diag("on %s", dev->name);
    tj_buffer buf = {0};
    if (tj_buffer_alloc(dev, 1 << 20, &buf) == TJ_OK)
        gpu_encode(dev, tjj_buffer_address(dev, buf));
    tj_buffer_free(dev, buf);
    if (dev->sm != 90 || dev->no_tma) {
        tap_skip(1, dev->no_tma ? "TMA is off on this device (TJIT_NO_TMA or an old driver)"
                                : "no sm_90a here: no TMA copies to launch");
        tj_device_close(dev);
        return;
    }
    gpu_matmul_n(dev, 256, 256, 256, 256, 2, "by TMA, launched twice on the same buffers");
    variant *v = cached(dev, bp_matmul, 0);
    tap_ok(v && v->tmaps.n == 3 && v->tmaps.encodes == 3 && !cached(dev, bp_matmul, 1),
           "the variant uses 3 maps (A, B, C), encoded once for both launches (%llu encoded), and none fell back",
           v ? (unsigned long long)v->tmaps.encodes : 0ull);
    /* ragged: the boxes past M, N and K are filled with zeros */
    gpu_matmul(dev, 200, 144, 208, 208, "by TMA, ragged in M, N and K");
    gpu_matmul(dev, 256, 256, 256, 64, "falling back (A's rows overlap)");
    variant *f = cached(dev, bp_matmul, 1);
    tap_ok(f && f->tmaps.n == 0, "the launch with overlapping rows ran the variant without TMA");
    tj_device_close(dev);

    setenv("TJIT_NO_TMA", "1", 1);
    tj_status st = tj_device_open(&dev, TJ_DEVICE_GPU, 0);
    unsetenv("TJIT_NO_TMA");
    if (st != TJ_OK)
        tap_bail_out("the GPU does not open again: %s", tj_last_error());
    gpu_matmul(dev, 256, 256, 256, 256, "with TJIT_NO_TMA=1");
    tap_ok(dev->no_tma && !cached(dev, bp_matmul, 0) && cached(dev, bp_matmul, 1) &&
               cached(dev, bp_matmul, 1)->tmaps.n == 0,
           "TJIT_NO_TMA=1: only the variant without TMA was compiled");
    tj_device_close(dev);
}

int main(void)
{
    test_resolve();
    test_check();
    test_encode();
    test_cache();
    test_threads();
    test_variants();
    test_compiled_maps();
    test_gpu();
    return tap_done();
}
