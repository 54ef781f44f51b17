/* SPDX-License-Identifier: MIT */
/*
 * tjit.h — Triton-style GPU tile kernels, written inline in C.
 *
 * This header is the whole public API of tjit. It has two halves:
 *
 *  1. The kernel language. A kernel is written with TJ_KERNEL: its body is
 *     ordinary C that *builds* a tile program when the kernel is first launched
 *     with a given set of compile-time constants. C control flow in the body
 *     runs at build time (it is the meta-language, like Triton's constexpr);
 *     runtime loops and branches are TJ_FOR and TJ_IF. Every op is a macro that
 *     records the caller's __FILE__ and __LINE__, so an error in a tile program
 *     points at the user's own source line.
 *
 *  2. The host API: devices, buffers, launches and errors. Handles are opaque;
 *     every call that can fail returns a tj_status, and tj_last_error() gives
 *     the message of the last failure on the calling thread.
 *
 * Ownership: tj_device_open() gives a device that the caller closes with
 * tj_device_close(); buffers belong to their device and are released with
 * tj_buffer_free() or when the device closes. Compiled kernels are cached by
 * the device and freed with it, and kept on disk for later processes
 * (TJIT_CACHE, TJIT_CACHE_DIR: README.md, "Disk cache"). Strings returned by tjit stay valid until the
 * next tjit call on the same thread (tj_last_error) or for the life of the
 * object they describe (tj_device_name).
 *
 * Threads: a device may be used from several threads. A kernel variant is
 * built and compiled on the thread that first launches it; kernel bodies
 * run one at a time per device, the rest of compiling and launches of
 * variants already compiled go on meanwhile, and threads that launch the
 * same new variant at once wait for that one compile and share its result
 * or its error. A kernel body runs
 * at build time and must not launch or build kernels: tj_launch (on any
 * device) from a body returns TJ_ERR_LAUNCH, and the body's own build fails
 * with the same message.
 */
#ifndef TJIT_H
#define TJIT_H

#include <stddef.h>
#include <stdint.h>

#include "tjit/tjit_macros.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The typed launch (name_launch, TJ_KERNEL) takes integer parameters as C
 * integers, and C converts a float passed to one silently (2.5 becomes 2).
 * No C function can refuse a float argument there (the launch is a function,
 * not a macro), so this header turns on the compiler's warning for implicit
 * float-to-integer conversions that may change a value (-Wfloat-conversion)
 * for the rest of the translation unit: the launch argument is reported, and
 * so is any such conversion in code after the include (GCC's flag also
 * covers double to float). A warning, never an error, so that the user's own
 * code is not broken by tjit (-Werror does not raise a pragma's warning).
 * Float parameters take a double, so a double argument is no conversion.
 * An explicit cast says a conversion is meant; define
 * TJIT_ALLOW_FLOAT_CONVERSION before including tjit.h to keep C's silent rule. */
#if !defined(TJIT_ALLOW_FLOAT_CONVERSION) && defined(__clang__)
#pragma clang diagnostic warning "-Wfloat-conversion"
#pragma clang diagnostic warning "-Wliteral-conversion"
#elif !defined(TJIT_ALLOW_FLOAT_CONVERSION) && defined(__GNUC__)
#pragma GCC diagnostic warning "-Wfloat-conversion"
#endif

#define TJ_VERSION_MAJOR 0
#define TJ_VERSION_MINOR 1
#define TJ_VERSION_PATCH 0
#define TJ_VERSION_STRING "0.1.0"
/* TJ_VERSION_NUMBER is MAJOR*10000 + MINOR*100 + PATCH, for #if tests. */
#define TJ_VERSION_NUMBER (TJ_VERSION_MAJOR * 10000 + TJ_VERSION_MINOR * 100 + TJ_VERSION_PATCH)

#if defined(__GNUC__)
#define TJ_API __attribute__((visibility("default")))
#define TJ__UNUSED __attribute__((unused))
#else
#define TJ_API
#define TJ__UNUSED
#endif

/* The library's version at run time ("0.1.0"), and as TJ_VERSION_NUMBER. */
TJ_API const char *tj_version(void);
TJ_API int tj_version_number(void);

/* ------------------------------------------------------------------------ */
/* Errors                                                                   */
/* ------------------------------------------------------------------------ */

typedef enum tj_status {
    TJ_OK = 0,
    TJ_ERR_INVALID_ARG,  /* a bad argument to a host API call */
    TJ_ERR_SHAPE,        /* tile shapes that do not fit (broadcast, mask, ...) */
    TJ_ERR_TYPE,         /* dtypes for which no rule applies */
    TJ_ERR_BUILD,        /* any other error in a tile program */
    TJ_ERR_COMPILE,      /* LLVM or the device JIT failed */
    TJ_ERR_LAUNCH,       /* bad launch: grid, arguments, buffers */
    TJ_ERR_DEVICE,       /* the device (driver) reported an error */
    TJ_ERR_OUT_OF_MEMORY,
    TJ_ERR_ASSERT,       /* a device assert failed while the kernel ran */
    TJ_ERR_UNSUPPORTED,  /* valid, but not available on this device */
    TJ_ERR_BOUNDS        /* a checked launch accessed memory outside its buffer */
} tj_status;

/* Message of the last failed call on this thread ("" if none). It names the
 * kernel, the op and the user's file:line where a tile program is at fault. */
TJ_API const char *tj_last_error(void);
/* A short constant name for a status ("TJ_ERR_SHAPE"). */
TJ_API const char *tj_status_name(tj_status status);

/* ------------------------------------------------------------------------ */
/* Element types                                                            */
/* ------------------------------------------------------------------------ */

typedef enum tj_dtype {
    TJ_I1, TJ_I8, TJ_I16, TJ_I32, TJ_I64,
    TJ_U8, TJ_U16, TJ_U32, TJ_U64,
    TJ_F16, TJ_BF16, TJ_F32, TJ_F64,
    TJ_F8E4M3, TJ_F8E5M2, /* 8-bit floats (storage, casts and tj_dot), below */
    TJ_DTYPE_COUNT
} tj_dtype;

TJ_API const char *tj_dtype_name(tj_dtype dtype); /* its name, "f32" */
TJ_API size_t tj_dtype_size(tj_dtype dtype);      /* its size in bytes (i1 takes 1) */

/* f16/bf16 values are passed between host and device as their raw 16 bits. */
TJ_API uint16_t tj_f32_to_f16(float x);
TJ_API float tj_f16_to_f32(uint16_t bits);
TJ_API uint16_t tj_f32_to_bf16(float x);
TJ_API float tj_bf16_to_f32(uint16_t bits);

/* 8-bit floats (OCP FP8), passed as their raw byte. f8e4m3 is e4m3fn: bias
 * 7, no infinities, 0x7f and 0xff NaN, largest 448; f8e5m2: bias 15, IEEE
 * infinities and NaNs, largest 57344. They are storage types: a kernel loads,
 * stores, selects (tj_where), casts and multiplies them (tj_dot); any other
 * arithmetic is an error that says to cast to f32 first. Widening to f32 is
 * exact. Narrowing rounds once, to nearest even, and saturates as CUDA's
 * __nv_cvt_float_to_fp8(x, __NV_SATFINITE, ...) and PTX's cvt.rn.satfinite
 * do: beyond the largest finite value (infinities too, also for e5m2) gives
 * it with the sign; NaN gives 0x7f. The same bits on every back end. */
TJ_API uint8_t tj_f32_to_f8e4m3(float x);
TJ_API float tj_f8e4m3_to_f32(uint8_t bits);
TJ_API uint8_t tj_f32_to_f8e5m2(float x);
TJ_API float tj_f8e5m2_to_f32(uint8_t bits);

/* ------------------------------------------------------------------------ */
/* The kernel language                                                      */
/* ------------------------------------------------------------------------ */

/* A value of a tile program: a scalar or a tile. It is only a handle into the
 * program being built; it means nothing outside a kernel body, and a value
 * kept from an earlier build is reported as such (the handle carries a
 * 40-bit serial of its build). tj_val's id was once 32 bits: code compiled
 * against a tjit.h of that time must be recompiled. */
typedef struct tj_val {
    int64_t id; /* 0: none (an absent optional argument, or a failed op) */
} tj_val;

#define TJ_MAX_RANK 4

typedef struct tj_shape {
    int rank;
    int64_t dims[TJ_MAX_RANK];
} tj_shape;

/* TJ_SHAPE(64, 32) is a 2-D shape. */
#define TJ_SHAPE(...) ((tj_shape){TJ__NARGS(__VA_ARGS__), {__VA_ARGS__}})

typedef struct tj_loc {
    const char *file;
    int line;
} tj_loc;
#define TJ__HERE ((tj_loc){__FILE__, __LINE__})

/* Cache and eviction hints of loads and stores: on the GPU they become the
 * PTX modifiers of the access (.ca .cg .cs .lu .cv for loads, .wb .cg .cs .wt
 * for stores; .L1::evict_first / .L1::evict_last). A load or store takes a
 * cache modifier or an eviction policy, not both, and a volatile load takes
 * neither (PTX has no such instruction): anything else is TJ_ERR_BUILD. The
 * CPU back end ignores the hints. */
typedef enum tj_cache {
    TJ_CACHE_DEFAULT, TJ_CACHE_CA, TJ_CACHE_CG, TJ_CACHE_CS, TJ_CACHE_LU,
    TJ_CACHE_CV, TJ_CACHE_WB, TJ_CACHE_WT
} tj_cache;

typedef enum tj_evict {
    TJ_EVICT_NORMAL, TJ_EVICT_FIRST, TJ_EVICT_LAST
} tj_evict;

/* Optional arguments of loads, stores and atomics, written as designated
 * initializers: tj_load(p, .mask = m, .other = tj_f32(0), .cache = TJ_CACHE_CG).
 * .mask and .other take values: write a number as TJ_V(0) or tj_f32(0) (a
 * bare number there is reported as "not a value of this kernel"). */
typedef enum tj_padding { TJ_PADDING_ZERO, TJ_PADDING_NAN } tj_padding;

typedef struct tj_mem_opts {
    tj_val mask;     /* i1, same shape as the pointer tile; absent: all lanes */
    tj_val other;    /* loads: the value of masked-off lanes (default 0) */
    tj_cache cache;
    tj_evict evict;
    int is_volatile;
    /* Block pointers only (tj_make_block_ptr), instead of mask and other:
     * the dimensions whose bounds are checked, TJ_DIMS(0, 1), and what a
     * load reads outside them (zero, or NaN for floats; not on stores). */
    unsigned boundary_check;
    tj_padding padding;
} tj_mem_opts;

/* C numbers mix with tile values: TJ_V(x) makes a value of a C number. An
 * integer literal adopts the dtype of the value it meets (x + 1 keeps x's
 * dtype); a floating literal does too when that dtype is floating, and is
 * f32 otherwise. */
#define TJ_V(x) _Generic((x),                                               \
    tj_val: tj__val_id,                                                     \
    _Bool: tj__weak_int, char: tj__weak_int, signed char: tj__weak_int,     \
    unsigned char: tj__weak_int, short: tj__weak_int,                       \
    unsigned short: tj__weak_int, int: tj__weak_int,                        \
    unsigned int: tj__weak_int, long: tj__weak_int,                         \
    unsigned long: tj__weak_uint, long long: tj__weak_int,                  \
    unsigned long long: tj__weak_uint,                                      \
    float: tj__weak_float, double: tj__weak_float)(x)

/* Typed constants. */
#define tj_const(value, dtype) _Generic((value), float: tj__const_float,      \
    double: tj__const_float, long double: tj__const_float,                      \
    default: tj__const_int)(TJ__HERE, (value), (dtype))
#define tj_i1(v)  tj_const(v, TJ_I1)
#define tj_i32(v) tj_const(v, TJ_I32)
#define tj_i64(v) tj_const(v, TJ_I64)
#define tj_u32(v) tj_const(v, TJ_U32)
#define tj_f16(v) tj_const(v, TJ_F16)
#define tj_bf16(v) tj_const(v, TJ_BF16)
#define tj_f8e4m3(v) tj_const(v, TJ_F8E4M3)
#define tj_f8e5m2(v) tj_const(v, TJ_F8E5M2)
#define tj_f32(v) tj_const(v, TJ_F32)
#define tj_f64(v) tj_const(v, TJ_F64)

/* Program instance and grid (axis 0, 1 or 2); scalars of type i32. */
#define tj_program_id(axis)   tj__program_id(TJ__HERE, (axis))
#define tj_num_programs(axis) tj__num_programs(TJ__HERE, (axis))

/* Tile creation and shape. arange(lo, hi) is [lo, hi) as i32; hi - lo must be
 * a power of two. */
#define tj_arange(lo, hi)          tj__arange(TJ__HERE, (lo), (hi))
#define tj_full(shape, value, dt)  tj__full(TJ__HERE, (shape), TJ_V(value), (dt))
#define tj_zeros(shape, dt)        tj__full(TJ__HERE, (shape), tj__weak_int(0), (dt))
#define tj_expand_dims(x, axis)    tj__expand_dims(TJ__HERE, TJ_V(x), (axis))
#define tj_broadcast_to(x, shape)  tj__broadcast_to(TJ__HERE, TJ_V(x), (shape))
#define tj_reshape(x, shape)       tj__reshape(TJ__HERE, TJ_V(x), (shape))
/* trans of a 2-D tile swaps its axes; tj_permute gives the order of any rank. */
#define tj_trans(x)                tj__permute(TJ__HERE, TJ_V(x), TJ_SHAPE(1, 0))
#define tj_permute(x, order)       tj__permute(TJ__HERE, TJ_V(x), (order))

/* Element-wise arithmetic with numpy broadcasting and Triton's promotion.
 * Pointer tiles take integer offsets in elements: tj_add(ptr, offs). */
typedef enum tj_binop {
    TJ_OP_ADD, TJ_OP_SUB, TJ_OP_MUL,
    TJ_OP_DIV,       /* true division: integers are divided as f32 */
    TJ_OP_FLOORDIV,  /* floor(a / b); on integers Python's // (not C's truncation) */
    TJ_OP_MOD,       /* a - floordiv(a, b) * b: the sign of b, as Python's % */
    TJ_OP_AND, TJ_OP_OR, TJ_OP_XOR, TJ_OP_SHL, TJ_OP_SHR,
    TJ_OP_MINIMUM, TJ_OP_MAXIMUM,
    TJ_OP_EQ, TJ_OP_NE, TJ_OP_LT, TJ_OP_LE, TJ_OP_GT, TJ_OP_GE,
    TJ_OP_FAST_DIV,  /* tj_fast_div, below */
    TJ_OP_POW        /* floats (integers become f32): C's pow */
} tj_binop;

#define TJ__BIN(op, a, b) tj__binary(TJ__HERE, (op), TJ_V(a), TJ_V(b))
#define tj_add(a, b)      TJ__BIN(TJ_OP_ADD, a, b)
#define tj_sub(a, b)      TJ__BIN(TJ_OP_SUB, a, b)
#define tj_mul(a, b)      TJ__BIN(TJ_OP_MUL, a, b)
#define tj_div(a, b)      TJ__BIN(TJ_OP_DIV, a, b)
#define tj_floordiv(a, b) TJ__BIN(TJ_OP_FLOORDIV, a, b)
#define tj_mod(a, b)      TJ__BIN(TJ_OP_MOD, a, b)
#define tj_and(a, b)      TJ__BIN(TJ_OP_AND, a, b)
#define tj_or(a, b)       TJ__BIN(TJ_OP_OR, a, b)
#define tj_xor(a, b)      TJ__BIN(TJ_OP_XOR, a, b)
#define tj_shl(a, b)      TJ__BIN(TJ_OP_SHL, a, b)
#define tj_shr(a, b)      TJ__BIN(TJ_OP_SHR, a, b) /* arithmetic if signed */
/* Float minimum and maximum order -0 below +0 and ignore a NaN operand (NaN
 * only if both are), or, with .propagate_nan = TJ_PROPAGATE_NAN_ALL (Triton's
 * propagate_nan), give NaN if either is; a NaN result is the quiet NaN. The
 * same on every back end; the reductions max, min, argmax, argmin follow it. */
typedef enum tj_propagate_nan { TJ_PROPAGATE_NAN_NONE, TJ_PROPAGATE_NAN_ALL } tj_propagate_nan;
typedef struct tj_minmax_opts {
    tj_propagate_nan propagate_nan;
} tj_minmax_opts;
#define tj_minimum(a, b, ...) \
    tj__minmax(TJ__HERE, TJ_OP_MINIMUM, TJ_V(a), TJ_V(b), (tj_minmax_opts){__VA_ARGS__})
#define tj_maximum(a, b, ...) \
    tj__minmax(TJ__HERE, TJ_OP_MAXIMUM, TJ_V(a), TJ_V(b), (tj_minmax_opts){__VA_ARGS__})
#define tj_eq(a, b)       TJ__BIN(TJ_OP_EQ, a, b)
#define tj_ne(a, b)       TJ__BIN(TJ_OP_NE, a, b)
#define tj_lt(a, b)       TJ__BIN(TJ_OP_LT, a, b)
#define tj_le(a, b)       TJ__BIN(TJ_OP_LE, a, b)
#define tj_gt(a, b)       TJ__BIN(TJ_OP_GT, a, b)
#define tj_ge(a, b)       TJ__BIN(TJ_OP_GE, a, b)
/* Division and exp as fast as the GPU computes them, where the precise
 * ones (tj_div: IEEE, correctly rounded; tj_exp: within 2 ulp) cost more
 * than a memory-bound kernel can hide — what Triton's `/` and tl.exp are.
 * On a GPU for f32 (and f16/bf16, computed in f32): tj_fast_div is
 * div.full.f32, within 2 ulp for divisors in [2^-126, 2^126]; tj_fast_exp
 * is ex2.approx.ftz.f32 of x * log2(e), whose error grows with |x|
 * (relative error below 2^-21 + 2^-23 |x|), and tj_fast_exp2 is
 * ex2.approx.ftz.f32 of x (relative error below 2^-21): one instruction
 * each, where tj_exp2 takes two of the GPU's scarce exponential units and
 * three more to keep results under 2^-126 (the fast ones give 0 there).
 * Elsewhere (f64, the CPU) they are tj_div, tj_exp and tj_exp2. */
#define tj_fast_div(a, b) TJ__BIN(TJ_OP_FAST_DIV, a, b)
/* ceil(a / b) for integers and b > 0: floordiv(a + b - 1, b). */
#define tj_cdiv(a, b)     tj_floordiv(tj_sub(tj_add(a, b), 1), b)

typedef enum tj_unop {
    TJ_OP_NEG, TJ_OP_NOT, TJ_OP_ABS,
    TJ_OP_EXP, TJ_OP_EXP2, TJ_OP_LOG, TJ_OP_LOG2,
    TJ_OP_SQRT, TJ_OP_RSQRT, TJ_OP_SIGMOID, TJ_OP_FLOOR, TJ_OP_CEIL,
    TJ_OP_FAST_EXP,  /* tj_fast_exp: see tj_fast_div */
    TJ_OP_SIN, TJ_OP_COS, TJ_OP_TANH, TJ_OP_ERF,
    TJ_OP_FAST_EXP2  /* tj_fast_exp2: see tj_fast_div */
} tj_unop;

#define TJ__UN(op, x)  tj__unary(TJ__HERE, (op), TJ_V(x))
#define tj_neg(x)      TJ__UN(TJ_OP_NEG, x)
#define tj_not(x)      TJ__UN(TJ_OP_NOT, x)  /* bitwise; logical on i1 */
#define tj_abs(x)      TJ__UN(TJ_OP_ABS, x)
#define tj_exp(x)      TJ__UN(TJ_OP_EXP, x)  /* math ops take floats; */
#define tj_exp2(x)     TJ__UN(TJ_OP_EXP2, x) /* integers become f32 */
#define tj_log(x)      TJ__UN(TJ_OP_LOG, x)
#define tj_log2(x)     TJ__UN(TJ_OP_LOG2, x)
#define tj_sqrt(x)     TJ__UN(TJ_OP_SQRT, x)
#define tj_rsqrt(x)    TJ__UN(TJ_OP_RSQRT, x)
#define tj_sigmoid(x)  TJ__UN(TJ_OP_SIGMOID, x)
#define tj_floor(x)    TJ__UN(TJ_OP_FLOOR, x)
#define tj_ceil(x)     TJ__UN(TJ_OP_CEIL, x)
#define tj_fast_exp(x) TJ__UN(TJ_OP_FAST_EXP, x)
#define tj_fast_exp2(x) TJ__UN(TJ_OP_FAST_EXP2, x)
/* sin, cos, tanh, erf and pow(x, y) as C's (CPU: libm; GPU: tjit's own, error
 * bounds in README.md); integers become f32, f16/bf16 are computed in f32. */
#define tj_sin(x)      TJ__UN(TJ_OP_SIN, x)
#define tj_cos(x)      TJ__UN(TJ_OP_COS, x)
#define tj_tanh(x)     TJ__UN(TJ_OP_TANH, x)
#define tj_erf(x)      TJ__UN(TJ_OP_ERF, x)
#define tj_pow(x, y)   TJ__BIN(TJ_OP_POW, x, y)
#define tj_fma(a, b, c) tj__fma(TJ__HERE, TJ_V(a), TJ_V(b), TJ_V(c))
#define tj_where(c, a, b) tj__where(TJ__HERE, TJ_V(c), TJ_V(a), TJ_V(b))
#define tj_cast(x, dt)  tj__cast(TJ__HERE, TJ_V(x), (dt))

/* Memory. A pointer tile is a pointer parameter plus offsets. */
#define tj_load(ptr, ...) \
    tj__load(TJ__HERE, TJ_V(ptr), (tj_mem_opts){__VA_ARGS__})
#define tj_store(ptr, value, ...) \
    tj__store(TJ__HERE, TJ_V(ptr), TJ_V(value), (tj_mem_opts){__VA_ARGS__})

/*
 * Block pointers, as Triton's make_block_ptr: a view of a strided tensor
 * (base, shape and strides in elements, i64) and a block of it at offsets
 * (i32), of a static power-of-two block_shape. order lists the dimensions
 * from the fastest-varying in memory (TJ_SHAPE(1, 0): row-major), a hint
 * for the layout of the data. A load gives a tile of block_shape; elements
 * outside [0, shape) along the dimensions named in .boundary_check read
 * .padding, and a store leaves them untouched. tj_advance moves the block
 * by offsets (i32). A block pointer is a value that TJ_FOR and TJ_IF carry
 * like any other; it is no operand of arithmetic.
 *
 *     tj_val a = tj_make_block_ptr(A, TJ_VALS(M, K), TJ_VALS(K, 1),
 *                                  TJ_VALS(tj_mul(pid, BM), 0),
 *                                  TJ_SHAPE(BM, BK), TJ_SHAPE(1, 0));
 *     tj_val x = tj_load(a, .boundary_check = TJ_DIMS(0, 1));
 *     a = tj_advance(a, TJ_VALS(0, BK));
 */
typedef struct tj_vals {
    int n;
    tj_val v[TJ_MAX_RANK];
} tj_vals;
/* TJ_VALS(M, 1) lists up to TJ_MAX_RANK values (C numbers through TJ_V). */
#define TJ_VALS(...) ((tj_vals){TJ__NARGS(__VA_ARGS__), {TJ__EACH(TJ__VALS_ITEM, (__VA_ARGS__))}})
#define TJ__VALS_ITEM(i, x) TJ_V(x),
/* TJ_DIMS(0, 1): a set of dimensions, for .boundary_check. */
#define TJ_DIMS(...) (0u TJ__EACH(TJ__DIM_BIT, (__VA_ARGS__)))
#define TJ__DIM_BIT(i, d) | ((unsigned)(d) < 31u ? 1u << ((unsigned)(d) & 31u) : 1u << 31)
#define tj_make_block_ptr(base, shape, strides, offsets, block_shape, order) \
    tj__make_block_ptr(TJ__HERE, TJ_V(base), (shape), (strides), (offsets), (block_shape), (order))
#define tj_advance(bp, offsets) tj__advance(TJ__HERE, TJ_V(bp), (offsets))

/*
 * Tensor descriptors, as Triton's make_tensor_descriptor: a strided tensor
 * of rank 1 to TJ_MAX_RANK (base, shape and strides in elements, widened to
 * i64) read and written in blocks of a static power-of-two block_shape.
 * The last stride must be the constant 1 (a C number 1, or tj_i64(1)): the
 * last dimension is contiguous, as Triton requires; anything else is
 * TJ_ERR_BUILD at the user's line (tj_make_block_ptr takes any strides).
 * tj_descriptor_load gives the block at offsets (i32, one per dimension)
 * as a tile of block_shape, elements outside [0, shape) in any dimension
 * reading 0; tj_descriptor_store writes value (converted to the element
 * dtype, broadcast to block_shape) there and leaves every element outside
 * the tensor untouched. The offsets may be any values, negative too.
 *
 * A descriptor is a block pointer (the IR has no type of its own for it):
 * the one at offsets 0 in row-major order, TJ_SHAPE(R-1, ..., 0); its
 * accesses are tj_advance to the offsets and a load or store with every
 * dimension in .boundary_check (zero padding). So TJ_FOR and TJ_IF carry
 * it, and tj_load, tj_store and tj_advance take it too. Like every value it
 * belongs to the build that made it.
 *
 *     tj_val a = tj_make_tensor_descriptor(A, TJ_VALS(M, K), TJ_VALS(K, 1),
 *                                          TJ_SHAPE(BM, BK));
 *     tj_val x = tj_descriptor_load(a, TJ_VALS(tj_mul(pid, BM), k));
 *     tj_descriptor_store(c, TJ_VALS(tj_mul(pid, BM), 0), acc);
 */
#define tj_make_tensor_descriptor(base, shape, strides, block_shape) \
    tj__make_tensor_descriptor(TJ__HERE, TJ_V(base), (shape), (strides), (block_shape))
#define tj_descriptor_load(desc, offsets) \
    tj__descriptor_load(TJ__HERE, TJ_V(desc), (offsets))
#define tj_descriptor_store(desc, offsets, value) \
    tj__descriptor_store(TJ__HERE, TJ_V(desc), (offsets), TJ_V(value))

typedef enum tj_atomic_op {
    TJ_ATOMIC_ADD, TJ_ATOMIC_MAX, TJ_ATOMIC_MIN, TJ_ATOMIC_XCHG
} tj_atomic_op;
/* Atomics return the values memory held before. */
#define tj_atomic_add(ptr, v, ...)  tj__atomic(TJ__HERE, TJ_ATOMIC_ADD, TJ_V(ptr), TJ_V(v), (tj_mem_opts){__VA_ARGS__})
#define tj_atomic_max(ptr, v, ...)  tj__atomic(TJ__HERE, TJ_ATOMIC_MAX, TJ_V(ptr), TJ_V(v), (tj_mem_opts){__VA_ARGS__})
#define tj_atomic_min(ptr, v, ...)  tj__atomic(TJ__HERE, TJ_ATOMIC_MIN, TJ_V(ptr), TJ_V(v), (tj_mem_opts){__VA_ARGS__})
#define tj_atomic_xchg(ptr, v, ...) tj__atomic(TJ__HERE, TJ_ATOMIC_XCHG, TJ_V(ptr), TJ_V(v), (tj_mem_opts){__VA_ARGS__})
#define tj_atomic_cas(ptr, cmp, v)  tj__atomic_cas(TJ__HERE, TJ_V(ptr), TJ_V(cmp), TJ_V(v))

/* Reductions along an axis (negative axes count from the end). The result
 * has that axis removed; a 1-D tile reduces to a scalar. argmax/argmin give
 * the first index of the extreme value, as i32. Integers narrower than 32
 * bits are summed in 32 bits of their signedness (i1: i32), as in Triton.
 * max, min, argmax, argmin order floats as tj_maximum does and take its
 * option: tj_max(x, 0, .propagate_nan = TJ_PROPAGATE_NAN_ALL) is NaN where a
 * NaN is met (argmax: the first NaN's index); by default NaNs are ignored
 * (all NaN: NaN, argmax 0). */
typedef enum tj_reduce_op {
    TJ_REDUCE_SUM, TJ_REDUCE_MAX, TJ_REDUCE_MIN, TJ_REDUCE_ARGMAX, TJ_REDUCE_ARGMIN
} tj_reduce_op;
#define tj_sum(x, axis)    tj__reduce(TJ__HERE, TJ_REDUCE_SUM, TJ_V(x), (axis))
#define tj_max(x, axis, ...) \
    tj__reduce_minmax(TJ__HERE, TJ_REDUCE_MAX, TJ_V(x), (axis), (tj_minmax_opts){__VA_ARGS__})
#define tj_min(x, axis, ...) \
    tj__reduce_minmax(TJ__HERE, TJ_REDUCE_MIN, TJ_V(x), (axis), (tj_minmax_opts){__VA_ARGS__})
#define tj_argmax(x, axis, ...) \
    tj__reduce_minmax(TJ__HERE, TJ_REDUCE_ARGMAX, TJ_V(x), (axis), (tj_minmax_opts){__VA_ARGS__})
#define tj_argmin(x, axis, ...) \
    tj__reduce_minmax(TJ__HERE, TJ_REDUCE_ARGMIN, TJ_V(x), (axis), (tj_minmax_opts){__VA_ARGS__})
/* Inclusive prefix sum along an axis; the shape is kept. */
#define tj_cumsum(x, axis) tj__cumsum(TJ__HERE, TJ_V(x), (axis))

/* Matrix product on tiles: tj_dot(a, b, acc) is a @ b + acc for a [M, K] and b
 * [K, N] (or batched: [B, M, K] and [B, K, N]); acc is [M, N] ([B, M, N]) or
 * TJ_NONE (zeros). M, N, K are at least 16. Operands share a dtype:
 *   f16, bf16 -> f32 (f16 with .out_dtype = TJ_F16 or an f16 acc);
 *   f32 -> f32, with .input_precision: TJ_PRECISION_IEEE (the default, exact
 *     products), TF32 (inputs truncated to tf32 — the low 13 bits dropped —
 *     as tensor cores read an f32, and as in Triton) or TF32X3 (three tf32
 *     products of a rounded high part and a truncated low part, about f32's
 *     accuracy);
 *   i8 -> i32 (exact, wrapping);
 *   f8e4m3, f8e5m2 -> f32, either with either (as Triton allows): the
 *     builder widens both operands to f16 (exact for both formats) and
 *     emits an f16 dot with an f32 accumulator.
 * Each result element adds the products in the order k = 0, 1, ... to acc,
 * one fused multiply-add each, on the CPU; a GPU's tensor cores sum in their
 * own order, so float results agree within rounding. */
typedef enum tj_input_precision {
    TJ_PRECISION_IEEE, TJ_PRECISION_TF32, TJ_PRECISION_TF32X3
} tj_input_precision;
typedef struct tj_dot_opts {
    tj_input_precision input_precision;
    tj_dtype out_dtype; /* 0 (TJ_I1, never a product's dtype): f32 or i32 */
} tj_dot_opts;
#define TJ_NONE ((tj_val){0})
#define tj_dot(a, b, acc, ...) \
    tj__dot(TJ__HERE, TJ_V(a), TJ_V(b), (acc), (tj_dot_opts){__VA_ARGS__})

/*
 * Hints: facts about an integer tile (typically the offsets of a load or
 * store) that tjit cannot prove but may use to choose wider, coalesced
 * accesses. They return x unchanged. tjit trusts them: a false hint gives
 * wrong results.
 *   tj_multiple_of(x, n)     every element of x is a multiple of n
 *   tj_max_contiguous(x, n)  along x's last dimension, runs of n consecutive
 *                            integers, each starting at a multiple of n
 *   tj_max_constancy(x, n)   along x's last dimension, runs of n equal values
 * For the last two n is a power of two dividing the dimension.
 */
#define tj_multiple_of(x, n)    tj__assume(TJ__HERE, 0, TJ_V(x), (n))
#define tj_max_contiguous(x, n) tj__assume(TJ__HERE, 1, TJ_V(x), (n))
#define tj_max_constancy(x, n)  tj__assume(TJ__HERE, 2, TJ_V(x), (n))

/* Debugging: print a value with a prefix (each program, each element), and
 * fail the launch with TJ_ERR_ASSERT where cond is false anywhere. */
#define tj_print(prefix, x)       tj__print(TJ__HERE, (prefix), TJ_V(x))
#define tj_device_assert(cond, msg) tj__device_assert(TJ__HERE, TJ_V(cond), (msg))

/*
 * Runtime control flow. Values that a loop or branch changes are named by
 * address after the bounds; plain C assignment in the body updates them:
 *
 *     tj_val acc = tj_zeros(TJ_SHAPE(BLOCK), TJ_F32);
 *     TJ_FOR(k, 0, n_chunks, 1, &acc) {
 *         acc = tj_add(acc, tj_load(tj_add(p, tj_add(tj_mul(k, BLOCK), offs))));
 *     }
 *     TJ_IF(tj_gt(s, 0), &acc) { acc = tj_mul(acc, 2); } TJ_ELSE { acc = tj_neg(acc); }
 *
 * The body is C that runs once, at build time. Do not leave it with break,
 * return or goto: the builder reports an unclosed region.
 */
#define TJ_FOR(iv, lo, hi, step, ...)                                          \
    for (TJ__UNUSED tj_val iv = tj__for_begin(TJ__HERE, TJ_V(lo), TJ_V(hi), TJ_V(step),    \
                                   (tj_val *[]){NULL __VA_OPT__(,) __VA_ARGS__},           \
                                   TJ__NARGS(__VA_ARGS__));                     \
         tj__region_next(); )
#define TJ_IF(cond, ...)                                                        \
    for (int tj__once_ = tj__if_begin(TJ__HERE, TJ_V(cond),                     \
                                      (tj_val *[]){NULL __VA_OPT__(,) __VA_ARGS__},        \
                                      TJ__NARGS(__VA_ARGS__));                  \
         tj__once_ && tj__region_next(); )
#define TJ_ELSE                                                                 \
    for (int tj__once_ = tj__else_begin(TJ__HERE); tj__once_ && tj__region_next(); )

/*
 * TJ_KERNEL(name, TJ_PARAMS(...), TJ_CONSTS(...)) { body }
 *
 * Parameters are TJ_PTR(name, dtype) (a buffer of elements of dtype) and
 * TJ_SCALAR(name, dtype); dtype is one of i1 i8 i16 i32 i64 u8 u16 u32 u64
 * f16 bf16 f32 f64 f8e4m3 f8e5m2. Constants are names of compile-time int64
 * values, plain C in the body.
 *
 * A GPU launch specializes the kernel on what it sees of its arguments: a
 * pointer whose address is a multiple of 16 bytes (every tjit buffer is), an
 * integer that is a multiple of 16, an integer equal to 1. Each combination
 * is a variant of its own, compiled once, whose loads and stores can then be
 * 16-byte vectors. TJ_SCALAR_NOSPEC / TJ_PTR_NOSPEC declare a parameter that
 * is not specialized on (one variant for all its values), for an argument
 * that changes at every launch. The macro defines, at file scope:
 *
 *   const tj_kernel *name;                   the kernel, for tj_launch()
 *   tj_status name_launch(tj_device *, const tj_launch_cfg *,
 *                         args..., consts...);   a launch typed for C
 *
 * where a pointer parameter takes a tj_buffer, an integer scalar its C
 * integer type (a float argument is diagnosed, see the top of this file)
 * and a float scalar (f16, bf16, f32, f64, f8e4m3, f8e5m2) a double,
 * rounded to its dtype.
 * A kernel takes up to TJ_MAX_PARAMS parameters and as many constants;
 * past that, the compile fails with one error that says so.
 */
#define TJ_PTR(name, dt)    (1, name, dt)
#define TJ_SCALAR(name, dt) (0, name, dt)
#define TJ_PTR_NOSPEC(name, dt)    (3, name, dt)
#define TJ_SCALAR_NOSPEC(name, dt) (2, name, dt)
#define TJ_PARAMS(...) (__VA_ARGS__)
#define TJ_CONSTS(...) (__VA_ARGS__)
/* The most parameters, and the most constants, a kernel takes. */
#define TJ_MAX_PARAMS 64

#define TJ_KERNEL(kname, params, consts)                                        \
    _Static_assert(TJ__NARGS params <= TJ_MAX_PARAMS,                           \
                   "TJ_KERNEL " #kname ": too many parameters (at most 64)");   \
    _Static_assert(TJ__NARGS consts <= TJ_MAX_PARAMS,                           \
                   "TJ_KERNEL " #kname ": too many constants (at most 64)");    \
    static void kname##__tj_body(TJ__UNUSED const char *tj__kernel_name_        \
        TJ__EACH_P(TJ__P_DECL, params) TJ__EACH_C(TJ__C_DECL, consts));         \
    static void kname##__tj_build(const tj_val *tj__p, const int64_t *tj__c)    \
    {                                                                           \
        (void)tj__p; (void)tj__c;                                               \
        kname##__tj_body(#kname TJ__EACH_P(TJ__P_PASS, params)                  \
                         TJ__EACH_C(TJ__C_PASS, consts));                       \
    }                                                                           \
    static const tj_param_desc kname##__tj_params[] = {                         \
        {0, TJ_I32, NULL, 0} TJ__EACH_P(TJ__P_DESC, params)};                      \
    static const char *const kname##__tj_consts[] = {                           \
        NULL TJ__EACH_C(TJ__C_NAME, consts)};                                   \
    static const tj_kernel kname##__tj_def = {                                  \
        #kname, __FILE__, __LINE__,                                             \
        TJ__NARGS params, kname##__tj_params + 1,                               \
        TJ__NARGS consts, kname##__tj_consts + 1, kname##__tj_build, TJ_KERNEL_ABI}; \
    static const tj_kernel *const kname TJ__UNUSED = &kname##__tj_def;          \
    static inline TJ__UNUSED tj_status kname##_launch(tj_device *tj__dev,                  \
        const tj_launch_cfg *tj__cfg TJ__EACH_P(TJ__P_CARG, params)             \
        TJ__EACH_C(TJ__C_DECL, consts))                                         \
    {                                                                           \
        const tj_arg tj__a[] = {{TJ_I32, 0, {.i = 0}} TJ__EACH_P(TJ__P_MKARG, params)}; \
        const int64_t tj__cv[] = {0 TJ__EACH_C(TJ__C_PASSV, consts)};           \
        return tj_launch(tj__dev, &kname##__tj_def, tj__cfg,                    \
                         tj__a + 1, TJ__NARGS params, tj__cv + 1, TJ__NARGS consts); \
    }                                                                           \
    static void kname##__tj_body(TJ__UNUSED const char *tj__kernel_name_        \
        TJ__EACH_P(TJ__P_DECL, params) TJ__EACH_C(TJ__C_DECL, consts))

/* ------------------------------------------------------------------------ */
/* Host API                                                                 */
/* ------------------------------------------------------------------------ */

typedef struct tj_device tj_device; /* opaque */
typedef struct tj_stream tj_stream; /* opaque */

typedef enum tj_device_kind {
    TJ_DEVICE_DEFAULT, /* the first GPU, else the CPU; TJIT_DEVICE=cpu|gpu overrides */
    TJ_DEVICE_CPU,
    TJ_DEVICE_GPU
} tj_device_kind;

/* How many devices of a kind tj_device_open can be asked for (ordinals 0
 * to the count - 1): the GPUs the CUDA driver sees (cuDeviceGetCount; one
 * older than sm_80 is counted, and refused by tj_device_open), 0 where no
 * driver loads or it sees none (tj_last_error() then says why); 1 for
 * TJ_DEVICE_CPU; for TJ_DEVICE_DEFAULT what tj_device_open would choose
 * among (TJIT_DEVICE, else the GPUs if there are any, else the CPU: 1).
 * Never fails otherwise; an unknown kind gives 0 and the error. */
TJ_API int tj_device_count(tj_device_kind kind);
/* Opens a device. ordinal picks among GPUs (0: the first).
 *
 * Several devices: a process may open every GPU (and the CPU) and use
 * them at once, from any threads. Each device has its own buffers,
 * streams and events, and a handle of one device given to another is
 * refused (TJ_ERR_INVALID_ARG; TJ_ERR_LAUNCH for a launch's arguments)
 * with a message naming both ("buffer 0x... belongs to GPU 1 (...), not
 * to GPU 0 (...)"). Kernels belong to no device: one tj_kernel launches
 * on any, and a variant compiled for one GPU is compiled once for all the
 * process's GPUs of its architecture (each loads its own module). The
 * same GPU may be opened twice: two devices, each with its own handles.
 * tj_buffer_copy copies between devices. */
TJ_API tj_status tj_device_open(tj_device **out, tj_device_kind kind, int ordinal);
TJ_API void tj_device_close(tj_device *dev); /* closes it and frees its buffers and kernels */
TJ_API tj_device_kind tj_device_get_kind(const tj_device *dev); /* TJ_DEVICE_CPU or TJ_DEVICE_GPU */
/* Its name: "cpu (x86_64, 2 threads)", "NVIDIA H200 (sm_90, 132 SMs)". */
TJ_API const char *tj_device_name(const tj_device *dev);
/* How many processors run programs side by side: a GPU's streaming
 * multiprocessors (132 on an H200), the CPU's worker threads; 0 (and the
 * error set) for NULL. A persistent kernel (Triton's tutorial 09) launches
 * about this many programs, each walking tiles. */
TJ_API int tj_device_processors(const tj_device *dev);
/* Waits for the device's work; reports a failed assert or fault of it. */
TJ_API tj_status tj_synchronize(tj_device *dev);

/* A buffer is a handle (not a pointer): using a freed buffer is an error
 * that tjit reports, never undefined behavior. The zero handle is "no buffer".
 * Handles are never reissued in a process (a 64-bit serial), so a freed
 * buffer, or one of a closed or another device, never comes back to life.
 *
 * tj_buffer_free may be called while the buffer is in use — by a launch on
 * another thread, or on a GPU by launches still queued or running: the
 * handle is dead at once (TJ_OK), and the memory is kept until those uses
 * are done. On the CPU the last launch using it releases it; on a GPU the
 * next synchronization does (tj_synchronize, tj_buffer_read,
 * tj_device_close, or a tj_buffer_alloc that would otherwise fail for want
 * of memory). A launch uses its buffers from its start, compile included. */
typedef struct tj_buffer {
    uint64_t handle;
} tj_buffer;

/* Buffers: allocation, release, and copies to and from host memory at a
 * byte offset (tj_buffer_read waits for the device's work first). */
TJ_API tj_status tj_buffer_alloc(tj_device *dev, size_t bytes, tj_buffer *out);
TJ_API tj_status tj_buffer_free(tj_device *dev, tj_buffer buf);
TJ_API tj_status tj_buffer_write(tj_device *dev, tj_buffer dst, size_t offset,
                                 const void *src, size_t bytes);
TJ_API tj_status tj_buffer_read(tj_device *dev, tj_buffer src, size_t offset,
                                void *dst, size_t bytes);
TJ_API size_t tj_buffer_size(tj_device *dev, tj_buffer buf); /* its size in bytes; 0 if invalid */

/* Copies bytes from byte src_offset of buffer src of device src_dev to
 * byte dst_offset of buffer dst of device dst_dev: within one device, or
 * between two (several GPUs, a GPU and the CPU, two CPU devices). Both
 * buffers must be live buffers of their devices and both ranges inside
 * them; ranges that overlap in the same memory are refused unless they
 * are the same bytes (a buffer and a view of it: copy through another
 * buffer). 0 bytes is no copy, once the buffers are checked.
 *
 * Within a GPU the copy is queued as a launch is (cuMemcpyDtoD, on the
 * default stream: after the work queued before it, before the work queued
 * after). Between GPUs it is cuMemcpyPeer, directly from GPU to GPU where
 * the hardware allows peer access (tjit enables it the first time two
 * devices copy), staged through the host by the driver otherwise; it
 * follows the work queued on both devices and is finished when the call
 * returns (both devices are synchronized: a fault of their earlier work is
 * reported here, as tj_buffer_read would). Between a GPU and the
 * CPU device it is the GPU's copy to or from the CPU buffer's memory,
 * finished when the call returns (from the GPU: after its work, as
 * tj_buffer_read). On the CPU a memcpy. */
TJ_API tj_status tj_buffer_copy(tj_device *dst_dev, tj_buffer dst, size_t dst_offset, tj_device *src_dev,
                                tj_buffer src, size_t src_offset, size_t bytes);

/* Memory tjit does not own, and parts of buffers.
 *
 * tj_buffer_wrap gives a handle to `bytes` bytes at `address` that the
 * application (or cudaMalloc, or another library) allocated: on a GPU a
 * device address that the CUDA driver places in an allocation of this
 * device's context (its GPU's primary context, which the CUDA runtime
 * uses too) holding the whole range, checked; on the CPU a host address,
 * taken on the caller's word. tjit never frees that memory: tj_buffer_free
 * ends the handle only, and the memory must outlive every launch and copy
 * that uses it (tj_synchronize waits for them).
 *
 * tj_buffer_view gives a handle to `bytes` bytes of buf from byte `offset`,
 * usable wherever a buffer is (launch arguments, copies, views). A view
 * keeps the memory it shows alive: buf may be freed first, its memory goes
 * with the last view. Alignment is whatever the address is: a launch
 * specializes each pointer on its actual alignment, and pointer arguments
 * whose bytes overlap (a buffer and a view of it, two views) are compiled
 * as possibly aliased.
 *
 * tj_buffer_address gives the device address (GPU) or host pointer (CPU)
 * of a buffer's first byte, for cuMemcpy, another library's kernels or the
 * application's own code; it stays valid while the buffer (or a view of
 * it) lives. */
TJ_API tj_status tj_buffer_wrap(tj_device *dev, uint64_t address, size_t bytes, tj_buffer *out);
TJ_API tj_status tj_buffer_view(tj_device *dev, tj_buffer buf, size_t offset, size_t bytes,
                                tj_buffer *out);
TJ_API tj_status tj_buffer_address(tj_device *dev, tj_buffer buf, uint64_t *out);

/* Streams and events: work queued in order, waited for one queue at a time.
 *
 * A stream is an ordered queue of launches (tj_launch_cfg.stream) and
 * copies; work on different streams may overlap. On a GPU a stream is a
 * CUstream of the device's context: tj_stream_create makes one (blocking
 * with respect to the legacy default stream, which the plain tj_buffer_*
 * copies and a NULL cfg->stream use, so mixing both stays ordered), and
 * tj_stream_wrap adopts the application's (cudaStream_t and CUstream are
 * the same pointer; it must belong to the device's GPU's primary context,
 * which the CUDA runtime uses too), which tj_stream_destroy then ends
 * without destroying. On the CPU a stream is accepted everywhere a GPU's
 * is, and its work is done when the call returns, so code written for
 * streams runs on both.
 *
 * Every tjit call that uses the GPU makes the device's context current
 * (pushes it, where it is not) and pops it before returning: the calling
 * thread's current CUDA context is never left changed. A stream may be
 * captured into a CUDA graph (cuStreamBeginCapture) once each kernel
 * launched there has run before: a variant's first launch compiles and
 * loads code, which capture does not allow.
 *
 * tj_stream_synchronize waits for one stream's work, then reports a
 * failed device assert or a fault as tj_synchronize does (an assert record
 * names its kernel, whichever stream ran it). tj_synchronize still waits
 * for every stream and is what lets the memory of freed buffers go.
 *
 * tj_buffer_write_async / tj_buffer_read_async queue a copy on a stream
 * and return: the host memory must stay valid, and unchanged for a write,
 * until the stream has done it (synchronize the stream, or an event after
 * it). Host memory from tj_host_alloc is page-locked on a GPU: copies from
 * and to it run asynchronously at full speed (other host memory is staged
 * by the driver). tj_host_free frees it; on the CPU it is plain aligned
 * memory.
 *
 * An event marks a point in a stream: tj_event_record places it after the
 * work queued so far (stream NULL: the default stream), tj_event_synchronize
 * waits for that work, tj_event_elapsed gives the milliseconds between two
 * completed events (GPU: the device's clock; CPU: the host's monotonic
 * clock at each record). Ownership: the creator destroys; destroying a
 * device frees its streams and events' resources, after which only
 * tj_stream_destroy / tj_event_destroy may be called on them. */
typedef struct tj_event tj_event; /* opaque */
TJ_API tj_status tj_stream_create(tj_device *dev, tj_stream **out);
TJ_API tj_status tj_stream_wrap(tj_device *dev, void *cuda_stream, tj_stream **out);
TJ_API tj_status tj_stream_destroy(tj_stream *stream); /* NULL is fine */
TJ_API tj_status tj_stream_synchronize(tj_stream *stream);
TJ_API tj_status tj_buffer_write_async(tj_device *dev, tj_buffer dst, size_t offset, const void *src,
                                       size_t bytes, tj_stream *stream);
TJ_API tj_status tj_buffer_read_async(tj_device *dev, tj_buffer src, size_t offset, void *dst,
                                      size_t bytes, tj_stream *stream);
TJ_API tj_status tj_host_alloc(tj_device *dev, size_t bytes, void **out);
TJ_API tj_status tj_host_free(tj_device *dev, void *ptr); /* NULL is fine */
TJ_API tj_status tj_event_create(tj_device *dev, tj_event **out);
TJ_API tj_status tj_event_destroy(tj_event *event); /* NULL is fine */
TJ_API tj_status tj_event_record(tj_event *event, tj_stream *stream);
TJ_API tj_status tj_event_synchronize(tj_event *event);
TJ_API tj_status tj_event_elapsed(tj_event *start, tj_event *end, float *milliseconds);

/* One kernel argument for tj_launch(): a buffer or a scalar of a dtype. */
typedef struct tj_arg {
    tj_dtype dtype;  /* scalars: the value's dtype; buffers: ignored */
    int is_buffer;
    union {
        tj_buffer buf;
        int64_t i;   /* integer dtypes, i1 */
        uint64_t u;  /* unsigned dtypes may use either */
        double f;    /* f16, bf16, f32, f64, f8e4m3, f8e5m2 */
    } v;
} tj_arg;

#define TJ_ARG_BUF(b) ((tj_arg){TJ_I32, 1, {.buf = (b)}})
#define TJ_ARG_I32(x) ((tj_arg){TJ_I32, 0, {.i = (x)}})
#define TJ_ARG_I64(x) ((tj_arg){TJ_I64, 0, {.i = (x)}})
#define TJ_ARG_U32(x) ((tj_arg){TJ_U32, 0, {.u = (x)}})
#define TJ_ARG_U64(x) ((tj_arg){TJ_U64, 0, {.u = (x)}})
#define TJ_ARG_F32(x) ((tj_arg){TJ_F32, 0, {.f = (x)}})
#define TJ_ARG_F64(x) ((tj_arg){TJ_F64, 0, {.f = (x)}})
#define TJ_ARG_F16(x) ((tj_arg){TJ_F16, 0, {.f = (x)}})
#define TJ_ARG_BF16(x) ((tj_arg){TJ_BF16, 0, {.f = (x)}})
#define TJ_ARG_F8E4M3(x) ((tj_arg){TJ_F8E4M3, 0, {.f = (x)}})
#define TJ_ARG_F8E5M2(x) ((tj_arg){TJ_F8E5M2, 0, {.f = (x)}})
#define TJ_ARG_INT(dt, x) ((tj_arg){(dt), 0, {.i = (x)}})

/* Bounds-checked launches (to find a forgotten mask): every load, store and
 * atomic is checked against the buffer its pointer comes from; an access
 * outside it is not performed, and the launch (on a GPU: the next
 * synchronize) fails with TJ_ERR_BOUNDS naming kernel, op, source line,
 * program and offset. Checked code is slower and compiled separately. */
typedef enum tj_check_bounds {
    TJ_CHECK_BOUNDS_DEFAULT, /* as TJIT_CHECK_BOUNDS says (1: on; unset, 0: off) */
    TJ_CHECK_BOUNDS_ON,
    TJ_CHECK_BOUNDS_OFF
} tj_check_bounds;

/* Warp specialization (Hopper, sm_90a): a loop whose dot runs as wgmma on
 * operands that TMA copies (block pointers, tensor descriptors) may run
 * with one more warpgroup that only issues the copies, so that the
 * num_warps warps computing never wait for each other between
 * iterations. */
typedef enum tj_warp_specialize {
    TJ_WARP_SPECIALIZE_DEFAULT, /* where the kernel allows it */
    TJ_WARP_SPECIALIZE_ON,      /* required: a launch that cannot fails,
                                   saying why (a launch whose arguments
                                   rule out TMA runs without, as always) */
    TJ_WARP_SPECIALIZE_OFF
} tj_warp_specialize;

/* Persistence (GPU): a launch of a 1-D grid may run as a persistent
 * kernel — as many programs as the GPU holds at once, each walking the
 * grid's programs (tiles) in turn: program_id(0) and num_programs(0) are
 * the grid's as always, the tiles run in the order of their ids, and no
 * program starts cold after a wave (Triton's tutorial 09 by hand). */
typedef enum tj_persistent {
    TJ_PERSISTENT_DEFAULT, /* on Hopper (sm_90a), for a kernel whose main loop
                              is a dot fed by block pointers or tensor
                              descriptors and that does not read num_programs(0) */
    TJ_PERSISTENT_ON,      /* any kernel (a grid of more than one axis is an error) */
    TJ_PERSISTENT_OFF
} tj_persistent;

/* A launch's configuration; zero-initialize it and set what you need
 * (designated initializers). The fields up to .version are version 0;
 * fields added in later releases are read only where .version says the
 * caller knows them, so a program compiled against this header keeps
 * working with a newer libtjit. A .version above TJ_LAUNCH_CFG_VERSION
 * (a program built against a newer tjit) is refused. */
#define TJ_LAUNCH_CFG_VERSION 0
typedef struct tj_launch_cfg {
    int64_t grid[3];  /* programs along each axis; 0 in y or z means 1 */
    int num_warps;    /* GPU threads per program / 32 (0: 4); ignored on CPU */
    tj_stream *stream;/* NULL: the device's default stream */
    tj_check_bounds check_bounds; /* 0: as the environment says */
    int num_stages;   /* GPU: the depth of software pipelining of the loads
                         that feed a dot in a TJ_FOR (0: the default, 3, as
                         Triton's; 1: none; at most 8); on sm_90a a dot
                         that runs as wgmma keeps num_stages + 1 buffers
                         of each operand; ignored on the CPU */
    tj_warp_specialize warp_specialize; /* GPU (sm_90a); ignored on the CPU */
    tj_persistent persistent; /* GPU; ignored on the CPU */
    int version;      /* 0, or TJ_LAUNCH_CFG_VERSION */
} tj_launch_cfg;

/* A kernel as TJ_KERNEL defines it. The fields are tjit's business. */
typedef struct tj_param_desc {
    int is_ptr;
    tj_dtype dtype;
    const char *name;
    int no_specialize;  /* declared with TJ_PTR_NOSPEC / TJ_SCALAR_NOSPEC */
} tj_param_desc;

/* The kernel ABI: how TJ_KERNEL's code calls the builder (the tj__
 * functions and the option structs they take by value). A kernel records
 * the ABI of the tjit.h it was compiled with, and a libtjit of another ABI
 * refuses to build it, saying so, instead of misreading its calls. */
#define TJ_KERNEL_ABI 1
typedef struct tj_kernel {
    const char *name;
    const char *file;
    int line;
    int nparams;
    const tj_param_desc *params;
    int nconsts;
    const char *const *consts;
    void (*build)(const tj_val *params, const int64_t *consts);
    int abi;          /* TJ_KERNEL_ABI */
} tj_kernel;

/* Launches a kernel, building and compiling it first for a set of constants
 * it has not seen. Arguments are checked against the kernel's signature. On
 * the CPU the launch is finished when the call returns (a failed device
 * assert is its TJ_ERR_ASSERT). On a GPU it is asynchronous: a failed assert
 * or a fault is reported by the next tj_synchronize() or tj_buffer_read(),
 * which wait for the device (TJIT_LAUNCH_BLOCKING=1 makes each launch wait). */
TJ_API tj_status tj_launch(tj_device *dev, const tj_kernel *kernel,
                           const tj_launch_cfg *cfg, const tj_arg *args, int nargs,
                           const int64_t *consts, int nconsts);

/* Builds a kernel's tile program for a set of constants without launching,
 * and writes its text (the IR as TJIT_DUMP=ir prints it) to a malloc'ed
 * string the caller frees. Bad programs fail here with their message. */
TJ_API tj_status tj_kernel_ir(const tj_kernel *kernel, const int64_t *consts,
                              int nconsts, char **out_text);

/* Builds a kernel for a set of constants and compiles it for an NVIDIA GPU
 * without launching, writing its PTX to a malloc'ed string the caller frees.
 * No GPU (and no CUDA) is needed. target is "sm_80", "sm_90", ... (sm_80 or
 * newer), or an architecture-specific target such as "sm_90a" (PTX that
 * runs on that chip alone and may use its own instructions; a launch on a
 * compute capability 9.0 GPU compiles for sm_90a); NULL means
 * $TJIT_PTX_TARGET, else sm_90. num_warps is the launch's
 * (a power of two from 1 to 32; 0: 4), since the code depends on it. The
 * code is specialized as for a launch with tjit buffers (16-byte aligned)
 * and scalars of unknown value; tj_kernel_ptx_args specializes it on args
 * exactly as a launch with them would (buffer handles are not looked up).
 * With TJIT_CHECK_BOUNDS=1 set, the PTX is the bounds-checked code. */
TJ_API tj_status tj_kernel_ptx(const tj_kernel *kernel, const int64_t *consts, int nconsts,
                               const char *target, int num_warps, char **out_ptx);
TJ_API tj_status tj_kernel_ptx_args(const tj_kernel *kernel, const tj_arg *args, int nargs,
                                    const int64_t *consts, int nconsts, const char *target,
                                    int num_warps, char **out_ptx);

/* Ahead-of-time export (README, "Ahead-of-time export"): what
 * tj_kernel_export_c writes. Start from TJ_EXPORT_OPTS_INIT. */
typedef struct tj_export_opts {
    size_t size;          /* sizeof(tj_export_opts) */
    const char *targets;  /* PTX targets, comma-separated ("sm_80,sm_90a"); NULL: "sm_80" */
    int num_warps;        /* as a launch's (0: 4) */
    int num_stages;       /* as a launch's (0: 3) */
    const char *output;   /* writes OUTPUT.h and OUTPUT.c; the launcher is named after
                             its last component (a C identifier). NULL: the kernel's
                             name, in the current directory */
    const char *ptxas;    /* assembles the embedded cubins: NULL: $TJIT_PTXAS, else
                             "ptxas" in PATH (none found: PTX only); "": PTX only */
} tj_export_opts;
#define TJ_EXPORT_OPTS_INIT {sizeof(tj_export_opts), NULL, 0, 0, NULL, NULL}

/* Compiles a kernel for a set of constants and writes it as C source that
 * launches it with the CUDA driver alone (libcuda.so.1, dlopen'ed; no tjit,
 * LLVM or cuda.h): OUTPUT.h declares
 * CUresult NAME(CUstream stream, unsigned grid_x, unsigned grid_y,
 * unsigned grid_z, <the kernel's parameters: CUdeviceptr for pointers, the
 * C type of each scalar, f16/bf16/f8 as their bits>) and NAME_unload(),
 * and OUTPUT.c embeds, for each target, the PTX (and the cubin, where
 * ptxas runs) of two variants: one for 16-byte aligned pointers, as tjit
 * buffers are, which the launcher runs where every pointer is so, and one
 * assuming nothing. Kernels are compiled without TMA, warp specialization
 * and persistence; one with device asserts is refused (TJ_ERR_UNSUPPORTED).
 * No GPU is needed. */
TJ_API tj_status tj_kernel_export_c(const tj_kernel *kernel, const int64_t *consts, int nconsts,
                                    const tj_export_opts *opts);
/* The same for the CPU: compiles the kernel for this host's CPU into
 * OUTPUT.o and writes OUTPUT.h and OUTPUT.c, whose launcher
 * int NAME(unsigned grid_x, unsigned grid_y, unsigned grid_z, <the
 * kernel's parameters: void * for pointers, scalars as above>) runs the
 * grid on the calling thread and returns 0 (or EINVAL, ENOMEM). Link
 * OUTPUT.o and OUTPUT.c; nothing else is needed. Of opts, size and output
 * count. A kernel whose code calls tjit's runtime (device asserts, prints,
 * 16-bit float conversions the CPU lacks instructions for) is refused
 * (TJ_ERR_UNSUPPORTED). */
TJ_API tj_status tj_kernel_export_cpu(const tj_kernel *kernel, const int64_t *consts, int nconsts,
                                      const tj_export_opts *opts);

/* The layout explainer: builds a kernel as a GPU launch with args would
 * (args NULL: tjit buffers and scalars of unknown value, as tj_kernel_ptx)
 * and writes, to a malloc'ed string the caller frees, how each load, store
 * and atomic is coalesced — its layout (which thread holds which element),
 * what is known of its addresses, the vector width, the 32-byte sectors
 * one warp request touches against the minimum — and for every step
 * through shared memory (a layout conversion, a reduction across warps, a
 * prefix sum) its swizzle and the bank conflicts of its writes and reads.
 * TJIT_DUMP=layouts prints the same for every kernel compiled. No GPU is
 * needed; num_warps as in tj_kernel_ptx, and the target is the one
 * tj_kernel_ptx takes for NULL ($TJIT_PTX_TARGET, else sm_90): a tj_dot
 * runs on tensor cores from sm_80 on, and its operands' steps differ. The
 * plan is a launch's with the default num_stages. */
TJ_API tj_status tj_kernel_explain(const tj_kernel *kernel, const tj_arg *args, int nargs,
                                   const int64_t *consts, int nconsts, int num_warps,
                                   char **out_text);

/* ------------------------------------------------------------------------ */
/* Benchmarking your kernels                                                */
/* ------------------------------------------------------------------------ */

/* tj_bench times work that run(dev, user) launches (any tj_launch calls);
 * run returns TJ_OK, or an error, which ends the benchmark and is
 * tj_bench's (its message prefixed with the call that failed). run is
 * called opts->warmup times untimed; then the device is synchronized, and
 * run is called opts->reps times, each call timed alone — on a GPU by CUDA
 * events recorded on the stream tjit launches on just before and after it
 * (the GPU's time for the work; a call made while the GPU is idle also
 * includes the launch's own host time), on the CPU by the monotonic clock
 * around it (a CPU launch is finished when it returns). The device is
 * synchronized at the end, so a fault or a failed assert of the work is
 * reported. The times' quantiles are linearly interpolated between the
 * sorted times (the q-quantile of n times sits at position q (n - 1),
 * counted from 0: numpy's default), so the median of an even count is the
 * mean of the two middle times.
 *
 * Versions: both structs start with size, which the caller sets to sizeof
 * the struct as its tjit.h declares it (TJ_BENCH_OPTS_INIT does); a later
 * tjit appends fields, and tells the versions apart by it. A size tjit
 * does not know is TJ_ERR_INVALID_ARG. opts NULL: the defaults. */
typedef struct tj_bench_opts {
    size_t size;  /* sizeof(tj_bench_opts) */
    int warmup;   /* untimed calls first, >= 0 (TJ_BENCH_OPTS_INIT: 10) */
    int reps;     /* timed calls, >= 1 (TJ_BENCH_OPTS_INIT: 100) */
} tj_bench_opts;
#define TJ_BENCH_OPTS_INIT {sizeof(tj_bench_opts), 10, 100}

typedef struct tj_bench_result {
    size_t size;       /* set by the caller: sizeof(tj_bench_result) */
    int reps;          /* calls timed */
    double min_ms, p10_ms, median_ms, p90_ms, max_ms;
    double mean_ms;
} tj_bench_result;

TJ_API tj_status tj_bench(tj_device *dev, tj_status (*run)(tj_device *dev, void *user), void *user,
                          const tj_bench_opts *opts, tj_bench_result *out);

/* ------------------------------------------------------------------------ */
/* Autotuning                                                               */
/* ------------------------------------------------------------------------ */

/* One candidate configuration for the autotuner: a value for each of the
 * kernel's constants (consts[0 .. nconsts), nconsts equal to the kernel's
 * count, in its TJ_CONSTS order) and the GPU launch's num_warps and
 * num_stages (0: the defaults, as in tj_launch_cfg; the CPU ignores them,
 * but they still tell configs apart). .version is 0
 * (TJ_TUNE_CONFIG_VERSION) and comes first, so that a later tjit can tell
 * the layout of a whole array of configs from its first element. */
#define TJ_TUNE_CONFIG_VERSION 0
typedef struct tj_tune_config {
    int version;           /* 0, or TJ_TUNE_CONFIG_VERSION */
    int nconsts;           /* the kernel's number of constants */
    const int64_t *consts; /* their values */
    int num_warps;         /* GPU (0: 4) */
    int num_stages;        /* GPU (0: 3) */
} tj_tune_config;

/* The grid of a launch with one config's constants (Triton's grid lambda:
 * the programs usually depend on the block sizes): writes grid[0 .. 3)
 * as tj_launch_cfg.grid takes it. user is tj_autotune_opts.grid_user. */
typedef void (*tj_tune_grid_fn)(const int64_t *consts, const tj_arg *args, int nargs, int64_t grid[3],
                                void *user);

/* Options of tj_autotune. size is sizeof the struct as the caller's
 * tjit.h declares it (TJ_AUTOTUNE_OPTS_INIT sets it and the defaults); a
 * size tjit does not know is TJ_ERR_INVALID_ARG. opts NULL: the defaults.
 * The choice is made once per key: the values it depends on, usually
 * the arguments' shapes (M, N, K), which the caller picks, as Triton's
 * key= names them. */
typedef struct tj_autotune_opts {
    size_t size;              /* sizeof(tj_autotune_opts) */
    const int64_t *key;       /* nkey values; another key tunes again */
    int nkey;
    tj_tune_grid_fn grid;     /* NULL: cfg->grid for every config */
    void *grid_user;          /* passed to grid */
    int warmup;               /* untimed launches of a config after its first, >= 0 (3) */
    int reps;                 /* timed launches of a config, >= 1 (10) */
    const tj_buffer *restore; /* buffers read before tuning and written back after */
    int nrestore;
} tj_autotune_opts;
#define TJ_AUTOTUNE_OPTS_INIT {sizeof(tj_autotune_opts), NULL, 0, NULL, NULL, 3, 10, NULL, 0}

/* The autotuner (Triton's @autotune, as calls): picks the fastest of
 * nconfigs configs of a kernel for a key and remembers the pick.
 *
 * tj_autotune writes the index of the chosen config to *best. It looks
 * for the choice in the process's memory, then on disk, and tunes only
 * where neither has it: every config is launched once (compiling it),
 * then opts->warmup times untimed and opts->reps times timed by tj_bench
 * (a GPU's events, the CPU's monotonic clock), on the device's default
 * stream with cfg's grid (or opts->grid's), check_bounds, warp_specialize
 * and persistent; the config of the least median time wins (the first of
 * equals). A config whose launches fail (a compile error, too much
 * shared memory, a fault) is skipped; if all fail, the first one's
 * status is returned, its message naming the kernel, the config and
 * why. Tuning launches the kernel many times on the arguments given, so
 * outputs it accumulates into, or inputs it overwrites, must be listed in
 * opts->restore (their contents are read first and written back after)
 * or be set again by the caller.
 *
 * A choice is keyed by the kernel's name and signature, the device's
 * name, the key values, the whole config list, cfg's options and the
 * tjit version. On disk it is one small file under the cache directory
 * ($TJIT_CACHE_DIR, else $XDG_CACHE_HOME/tjit, else ~/.cache/tjit; in
 * autotune/), written atomically; a file that does not read back exactly
 * as written is ignored and replaced by the next tuning, and TJIT_CACHE=0
 * keeps tjit off the disk. TJIT_PRINT_AUTOTUNING=1 prints to stderr each
 * config's time (or error) and the winner when tuning, and the file a
 * choice was read from. Two threads that miss the same key at once may
 * both tune it.
 *
 * tj_autotuned_launch does the same, then launches the chosen config with
 * cfg (its stream too) and the grid for that config; best may be NULL. */
TJ_API tj_status tj_autotune(tj_device *dev, const tj_kernel *kernel, const tj_launch_cfg *cfg,
                             const tj_arg *args, int nargs, const tj_tune_config *configs, int nconfigs,
                             const tj_autotune_opts *opts, int *best);
TJ_API tj_status tj_autotuned_launch(tj_device *dev, const tj_kernel *kernel, const tj_launch_cfg *cfg,
                                     const tj_arg *args, int nargs, const tj_tune_config *configs,
                                     int nconfigs, const tj_autotune_opts *opts, int *best);

/* ------------------------------------------------------------------------ */
/* Internals used by the macros above (names with tj__ are not API)         */
/* ------------------------------------------------------------------------ */

TJ_API tj_val tj__val_id(tj_val v);
TJ_API tj_arg tj__arg_int(tj_dtype dtype, int64_t value);
TJ_API tj_arg tj__arg_float(tj_dtype dtype, double value);
TJ_API tj_val tj__weak_int(long long v);
TJ_API tj_val tj__weak_uint(unsigned long long v);
TJ_API tj_val tj__weak_float(double v);
TJ_API tj_val tj__const_int(tj_loc loc, long long value, tj_dtype dtype);
TJ_API tj_val tj__const_float(tj_loc loc, double value, tj_dtype dtype);
TJ_API tj_val tj__program_id(tj_loc loc, int axis);
TJ_API tj_val tj__num_programs(tj_loc loc, int axis);
TJ_API tj_val tj__arange(tj_loc loc, int64_t lo, int64_t hi);
TJ_API tj_val tj__full(tj_loc loc, tj_shape shape, tj_val value, tj_dtype dtype);
TJ_API tj_val tj__expand_dims(tj_loc loc, tj_val x, int axis);
TJ_API tj_val tj__broadcast_to(tj_loc loc, tj_val x, tj_shape shape);
TJ_API tj_val tj__reshape(tj_loc loc, tj_val x, tj_shape shape);
TJ_API tj_val tj__permute(tj_loc loc, tj_val x, tj_shape order);
TJ_API tj_val tj__binary(tj_loc loc, tj_binop op, tj_val a, tj_val b);
TJ_API tj_val tj__unary(tj_loc loc, tj_unop op, tj_val x);
TJ_API tj_val tj__fma(tj_loc loc, tj_val a, tj_val b, tj_val c);
TJ_API tj_val tj__where(tj_loc loc, tj_val cond, tj_val a, tj_val b);
TJ_API tj_val tj__cast(tj_loc loc, tj_val x, tj_dtype dtype);
TJ_API tj_val tj__load(tj_loc loc, tj_val ptr, tj_mem_opts opts);
TJ_API void tj__store(tj_loc loc, tj_val ptr, tj_val value, tj_mem_opts opts);
TJ_API tj_val tj__make_block_ptr(tj_loc loc, tj_val base, tj_vals shape, tj_vals strides,
                                 tj_vals offsets, tj_shape block_shape, tj_shape order);
TJ_API tj_val tj__advance(tj_loc loc, tj_val bp, tj_vals offsets);
TJ_API tj_val tj__make_tensor_descriptor(tj_loc loc, tj_val base, tj_vals shape,
                                         tj_vals strides, tj_shape block_shape);
TJ_API tj_val tj__descriptor_load(tj_loc loc, tj_val desc, tj_vals offsets);
TJ_API void tj__descriptor_store(tj_loc loc, tj_val desc, tj_vals offsets, tj_val value);
TJ_API tj_val tj__atomic(tj_loc loc, tj_atomic_op op, tj_val ptr, tj_val value, tj_mem_opts opts);
TJ_API tj_val tj__atomic_cas(tj_loc loc, tj_val ptr, tj_val cmp, tj_val value);
TJ_API tj_val tj__reduce(tj_loc loc, tj_reduce_op op, tj_val x, int axis);
TJ_API tj_val tj__reduce_minmax(tj_loc loc, tj_reduce_op op, tj_val x, int axis, tj_minmax_opts opts);
TJ_API tj_val tj__minmax(tj_loc loc, tj_binop op, tj_val a, tj_val b, tj_minmax_opts opts);
TJ_API tj_val tj__cumsum(tj_loc loc, tj_val x, int axis);
TJ_API tj_val tj__dot(tj_loc loc, tj_val a, tj_val b, tj_val acc, tj_dot_opts opts);
TJ_API tj_val tj__assume(tj_loc loc, int what, tj_val x, int64_t n);
TJ_API void tj__print(tj_loc loc, const char *prefix, tj_val x);
TJ_API void tj__device_assert(tj_loc loc, tj_val cond, const char *msg);
TJ_API tj_val tj__for_begin(tj_loc loc, tj_val lo, tj_val hi, tj_val step,
                            tj_val **vars, int nvars);
TJ_API int tj__if_begin(tj_loc loc, tj_val cond, tj_val **vars, int nvars);
TJ_API int tj__else_begin(tj_loc loc);
TJ_API int tj__region_next(void);

/* Parameters are triples (kind, name, dtype); kind's bit 0: a pointer,
 * bit 1: not specialized on. */
#define TJ__P_IS(t) TJ__P_IS_ t
#define TJ__P_IS_(p, n, d) p
#define TJ__P_NAME(t) TJ__P_NAME_ t
#define TJ__P_NAME_(p, n, d) n
#define TJ__P_DT(t) TJ__P_DT_ t
#define TJ__P_DT_(p, n, d) TJ__DT_##d
#define TJ__P_CT(t) TJ__P_CT_ t
#define TJ__P_CT_(p, n, d) TJ__CAT(TJ__CT, p)(d)
#define TJ__CT1(d) tj_buffer
#define TJ__CT0(d) TJ__CT_##d
#define TJ__CT3(d) tj_buffer
#define TJ__CT2(d) TJ__CT_##d
#define TJ__P_DECL(i, t) , TJ__UNUSED tj_val TJ__P_NAME(t)
#define TJ__P_DESC(i, t) , {TJ__P_IS(t) & 1, TJ__P_DT(t), TJ__STR(TJ__P_NAME(t)), TJ__P_IS(t) >> 1}
#define TJ__P_CARG(i, t) , TJ__P_CT(t) TJ__P_NAME(t)
#define TJ__P_MKARG(i, t) , TJ__CAT(TJ__MKARG, TJ__P_IS(t))(TJ__P_DT(t), TJ__P_NAME(t))
#define TJ__MKARG1(dt, n) {TJ_I32, 1, {.buf = (n)}}
#define TJ__MKARG3 TJ__MKARG1
#define TJ__MKARG2 TJ__MKARG0
#define TJ__MKARG0(dt, n) _Generic((n), float: tj__arg_float, double: tj__arg_float, \
                                    default: tj__arg_int)((dt), (n))
#define TJ__P_PASS(i, t) , tj__p[i]
#define TJ__C_DECL(i, n) , TJ__UNUSED int64_t n
#define TJ__C_NAME(i, n) , #n
#define TJ__C_PASS(i, n) , tj__c[i]
#define TJ__C_PASSV(i, n) , (n)
#define TJ__STR(x) TJ__STR_(x)
#define TJ__STR_(x) #x

#define TJ__DT_i1 TJ_I1
#define TJ__DT_i8 TJ_I8
#define TJ__DT_i16 TJ_I16
#define TJ__DT_i32 TJ_I32
#define TJ__DT_i64 TJ_I64
#define TJ__DT_u8 TJ_U8
#define TJ__DT_u16 TJ_U16
#define TJ__DT_u32 TJ_U32
#define TJ__DT_u64 TJ_U64
#define TJ__DT_f16 TJ_F16
#define TJ__DT_bf16 TJ_BF16
#define TJ__DT_f32 TJ_F32
#define TJ__DT_f64 TJ_F64
#define TJ__DT_f8e4m3 TJ_F8E4M3
#define TJ__DT_f8e5m2 TJ_F8E5M2
#define TJ__CT_i1 _Bool
#define TJ__CT_i8 int8_t
#define TJ__CT_i16 int16_t
#define TJ__CT_i32 int32_t
#define TJ__CT_i64 int64_t
#define TJ__CT_u8 uint8_t
#define TJ__CT_u16 uint16_t
#define TJ__CT_u32 uint32_t
#define TJ__CT_u64 uint64_t
#define TJ__CT_f16 double
#define TJ__CT_bf16 double
#define TJ__CT_f32 double
#define TJ__CT_f64 double
#define TJ__CT_f8e4m3 double
#define TJ__CT_f8e5m2 double

#ifdef __cplusplus
}
#endif
#endif /* TJIT_H */
