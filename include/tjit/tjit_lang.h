/* SPDX-License-Identifier: MIT */
/*
 * tjit_lang.h — the kernel language of tjit.h: TJ_KERNEL, the tile ops a
 * kernel body builds its program with, and runtime control flow (TJ_FOR,
 * TJ_IF). Part of <tjit.h>, which includes it: include that, not this.
 */
#ifndef TJIT_PUBLIC_LANG_H
#define TJIT_PUBLIC_LANG_H

#ifndef TJIT_H
#error "include <tjit.h>, not its parts"
#endif

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
/* Triton's tl.full_like and tl.zeros_like: x's shape and dtype. */
#define tj_full_like(x, value)     tj__full_like(TJ__HERE, TJ_V(x), TJ_V(value))
#define tj_zeros_like(x)           tj__full_like(TJ__HERE, TJ_V(x), tj__weak_int(0))
#define tj_expand_dims(x, axis)    tj__expand_dims(TJ__HERE, TJ_V(x), (axis))
#define tj_broadcast_to(x, shape)  tj__broadcast_to(TJ__HERE, TJ_V(x), (shape))
#define tj_reshape(x, shape)       tj__reshape(TJ__HERE, TJ_V(x), (shape))
/* Triton's tl.ravel: x as 1-D, row-major (a scalar: [1]). */
#define tj_ravel(x)                tj__ravel(TJ__HERE, TJ_V(x))
/* trans of a 2-D tile swaps its axes; tj_permute gives the order of any rank. */
#define tj_trans(x)                tj__permute(TJ__HERE, TJ_V(x), TJ_SHAPE(1, 0))
#define tj_permute(x, order)       tj__permute(TJ__HERE, TJ_V(x), (order))
/* Triton's tl.join, tl.split and tl.interleave. join: a and b (broadcast
 * together, their dtypes met) side by side along a new last dimension of
 * 2; split: the two halves of x along its last dimension, which must be 2
 * (tj_split(x, &a, &b)); interleave: a0 b0 a1 b1 ... along the last
 * dimension (join, then the last two dimensions merged). tj_cat(a, b):
 * a, then b, along the first dimension (Triton's tl.cat, in order: an
 * [N] and an [N] make a [2N], an [R, C] and an [R, C] a [2R, C]). */
#define tj_join(a, b)              tj__join(TJ__HERE, TJ_V(a), TJ_V(b))
#define tj_cat(a, b)               tj__cat(TJ__HERE, TJ_V(a), TJ_V(b))
#define tj_split(x, a, b)          tj__split(TJ__HERE, TJ_V(x), (a), (b))
#define tj_interleave(a, b)        tj__interleave(TJ__HERE, TJ_V(a), TJ_V(b))

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
    TJ_OP_POW,       /* floats (integers become f32): C's pow */
    TJ_OP_ATAN2, TJ_OP_HYPOT, /* floats, as pow: C's atan2(a, b), hypot(a, b) */
    TJ_OP_COPYSIGN,  /* floats, as pow: a's magnitude with b's sign */
    TJ_OP_TRUNCDIV,  /* a / b rounded toward 0: C's integer / (Triton's // on integers) */
    TJ_OP_FMOD       /* a - truncdiv(a, b) * b: the sign of a, as C's % and fmod (Triton's %) */
} tj_binop;

#define TJ__BIN(op, a, b) tj__binary(TJ__HERE, (op), TJ_V(a), TJ_V(b))
#define tj_add(a, b)      TJ__BIN(TJ_OP_ADD, a, b)
#define tj_sub(a, b)      TJ__BIN(TJ_OP_SUB, a, b)
#define tj_mul(a, b)      TJ__BIN(TJ_OP_MUL, a, b)
#define tj_div(a, b)      TJ__BIN(TJ_OP_DIV, a, b)
#define tj_floordiv(a, b) TJ__BIN(TJ_OP_FLOORDIV, a, b)
#define tj_mod(a, b)      TJ__BIN(TJ_OP_MOD, a, b)
/* C's division and remainder, which are Triton's // and % on integers (and
 * % on floats): truncdiv rounds toward 0, fmod has the sign of a (floats:
 * C's fmod, exact; truncdiv is trunc(a / b)). Integer division by 0 gives 0
 * for both, INT_MIN / -1 wraps to INT_MIN, fmod 0. */
#define tj_truncdiv(a, b) TJ__BIN(TJ_OP_TRUNCDIV, a, b)
#define tj_fmod(a, b)     TJ__BIN(TJ_OP_FMOD, a, b)
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
/* Triton's names: tl.div_rn and tl.sqrt_rn are tj_div and tj_sqrt (IEEE,
 * correctly rounded); tl.fdiv(x, y) (ieee_rounding=False) is tj_fast_div. */
#define tj_div_rn(a, b)   tj_div(a, b)
#define tj_sqrt_rn(x)     tj_sqrt(x)
#define tj_fdiv(a, b)     tj_fast_div(a, b)
/* ceil(a / b) for integers and b > 0: floordiv(a + b - 1, b). */
#define tj_cdiv(a, b)     tj_floordiv(tj_sub(tj_add(a, b), 1), b)

typedef enum tj_unop {
    TJ_OP_NEG, TJ_OP_NOT, TJ_OP_ABS,
    TJ_OP_EXP, TJ_OP_EXP2, TJ_OP_LOG, TJ_OP_LOG2,
    TJ_OP_SQRT, TJ_OP_RSQRT, TJ_OP_SIGMOID, TJ_OP_FLOOR, TJ_OP_CEIL,
    TJ_OP_FAST_EXP,  /* tj_fast_exp: see tj_fast_div */
    TJ_OP_SIN, TJ_OP_COS, TJ_OP_TANH, TJ_OP_ERF,
    TJ_OP_FAST_EXP2, /* tj_fast_exp2: see tj_fast_div */
    TJ_OP_LOG1P, TJ_OP_EXPM1, TJ_OP_RINT, TJ_OP_TRUNC, TJ_OP_ROUND,
    TJ_OP_ISNAN, TJ_OP_ISINF, TJ_OP_ISFINITE,
    TJ_OP_TAN, TJ_OP_ASIN, TJ_OP_ACOS, TJ_OP_ATAN, TJ_OP_SINH, TJ_OP_COSH,
    TJ_OP_ASINH, TJ_OP_ACOSH, TJ_OP_ATANH, TJ_OP_LOG10, TJ_OP_CBRT,
    TJ_OP_POPC, TJ_OP_CLZ, TJ_OP_BREV, TJ_OP_SIGNBIT, TJ_OP_EXP10, TJ_OP_ERFC,
    TJ_OP_LGAMMA
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
/* sin, cos, tanh, erf, log1p, expm1 and pow(x, y) as C's (CPU: libm; GPU: tjit's own, error
 * bounds in README.md); integers become f32, f16/bf16 are computed in f32. */
#define tj_sin(x)      TJ__UN(TJ_OP_SIN, x)
#define tj_cos(x)      TJ__UN(TJ_OP_COS, x)
#define tj_tanh(x)     TJ__UN(TJ_OP_TANH, x)
#define tj_erf(x)      TJ__UN(TJ_OP_ERF, x)
#define tj_log1p(x)    TJ__UN(TJ_OP_LOG1P, x) /* log(1 + x), exact near 0 */
#define tj_expm1(x)    TJ__UN(TJ_OP_EXPM1, x) /* exp(x) - 1, exact near 0 */
/* More of C's (and Triton's libdevice's) functions, as the ones above: */
#define tj_tan(x)      TJ__UN(TJ_OP_TAN, x)
#define tj_asin(x)     TJ__UN(TJ_OP_ASIN, x)
#define tj_acos(x)     TJ__UN(TJ_OP_ACOS, x)
#define tj_atan(x)     TJ__UN(TJ_OP_ATAN, x)
#define tj_sinh(x)     TJ__UN(TJ_OP_SINH, x)
#define tj_cosh(x)     TJ__UN(TJ_OP_COSH, x)
#define tj_asinh(x)    TJ__UN(TJ_OP_ASINH, x)
#define tj_acosh(x)    TJ__UN(TJ_OP_ACOSH, x)
#define tj_atanh(x)    TJ__UN(TJ_OP_ATANH, x)
#define tj_log10(x)    TJ__UN(TJ_OP_LOG10, x)
#define tj_exp10(x)    TJ__UN(TJ_OP_EXP10, x)
#define tj_cbrt(x)     TJ__UN(TJ_OP_CBRT, x)
#define tj_erfc(x)     TJ__UN(TJ_OP_ERFC, x) /* 1 - erf(x), to full relative precision as it nears 0 */
/* log|gamma(x)|, as C's lgamma: +inf at 0 and the negative integers. For
 * x < 0 it is log(pi / |sin(pi x)|) - lgamma(1 - x), whose error on a GPU is
 * absolute, a few 2^-53 of lgamma(1 - x), near its zeros below -2 (as CUDA's). */
#define tj_lgamma(x)   TJ__UN(TJ_OP_LGAMMA, x)
#define tj_atan2(y, x) TJ__BIN(TJ_OP_ATAN2, y, x) /* the angle of (x, y), in [-pi, pi] */
#define tj_hypot(x, y) TJ__BIN(TJ_OP_HYPOT, x, y) /* sqrt(x^2 + y^2) without overflow */
/* C's copysign (x's magnitude, y's sign bit: NaN and zeros too; x and y
 * meet in one dtype first, and a NaN's sign through that conversion is the
 * target's) and signbit (the sign bit as i1; an integer's is x < 0), exact
 * on both back ends. */
#define tj_copysign(x, y) TJ__BIN(TJ_OP_COPYSIGN, x, y)
#define tj_signbit(x)  TJ__UN(TJ_OP_SIGNBIT, x)
/* Rounding to an integral value of the same dtype: rint to the nearest,
 * ties to even (Triton's libdevice rint); round to the nearest, ties away
 * from zero (C's round, libdevice round); trunc toward zero. */
#define tj_rint(x)     TJ__UN(TJ_OP_RINT, x)
#define tj_round(x)    TJ__UN(TJ_OP_ROUND, x)
#define tj_trunc(x)    TJ__UN(TJ_OP_TRUNC, x)
/* Bits of an integer (not i1), in its dtype (libdevice's popc, clz, brev):
 * how many bits are set; how many zeros lead, counted in the dtype's width
 * (the width for 0); the bits in reverse order. */
#define tj_popc(x)     TJ__UN(TJ_OP_POPC, x)
#define tj_clz(x)      TJ__UN(TJ_OP_CLZ, x)
#define tj_brev(x)     TJ__UN(TJ_OP_BREV, x)
/* Float classes, as i1: NaN; +-infinity; neither. Integers are finite. */
#define tj_isnan(x)    TJ__UN(TJ_OP_ISNAN, x)
#define tj_isinf(x)    TJ__UN(TJ_OP_ISINF, x)
#define tj_isfinite(x) TJ__UN(TJ_OP_ISFINITE, x)
/* x limited to [lo, hi]: minimum(maximum(x, lo), hi) in the dtype the three
 * meet in (Triton's tl.clamp), NaN as tj_minimum's .propagate_nan says (by
 * default a NaN x gives lo); lo > hi is the caller's error (the result is hi). */
#define tj_clamp(x, lo, hi, ...) \
    tj__clamp(TJ__HERE, TJ_V(x), TJ_V(lo), TJ_V(hi), (tj_minmax_opts){__VA_ARGS__})
#define tj_pow(x, y)   TJ__BIN(TJ_OP_POW, x, y)
#define tj_fma(a, b, c) tj__fma(TJ__HERE, TJ_V(a), TJ_V(b), TJ_V(c))
/* Triton's tl.inline_asm_elementwise(asm, constraints, args, dtype,
 * is_pure=True, pack=1): the PTX ptx runs once per element on a GPU, $0 the
 * result (of dtype), $1.. the arguments (0 to 4, broadcast together, each
 * keeping its dtype); constraints "=r,r,r" give each a register by width
 * (h: 16 bits, r: 32, l: 64, f: f32, d: f64; the bits pass unconverted).
 * With no arguments the result is a scalar, computed by every thread:
 *     tj_inline_asm_elementwise("mov.u32 $0, %smid;", "=r", TJ_I32)
 * The PTX is taken as pure (is_pure=True): the compiler may merge, move or
 * drop runs as it does arithmetic. The CPU back end cannot run PTX and
 * refuses such a kernel.
 *     tj_inline_asm_elementwise("add.s32 $0, $1, $2;", "=r,r,r", TJ_I32, a, b) */
#define tj_inline_asm_elementwise(ptx, constraints, dtype, ...) \
    tj__inline_asm(TJ__HERE, (ptx), (constraints), (dtype), TJ_VALS(__VA_ARGS__))
/* The same with options, the arguments as TJ_VALS(...): .pack = N runs
 * the PTX once per N elements (Triton's pack), their bits packed into
 * registers (lane 0 lowest): each operand takes N x its bits / the
 * letter's bits registers, the output's first ("=r" each), then each
 * input's in turn. Four i8 to four f16:
 *     tj_inline_asm("...", "=r,=r,r", TJ_F16, TJ_VALS(bytes), .pack = 4)
 * Which elements share a run is the GPU's choice; lane k of every operand
 * is one element. .side_effects = 1 is Triton's is_pure=False: every run
 * the program reaches happens, even when its result is unused, and is not
 * merged, moved or run ahead by tjit or LLVM (a clock or timer read, a
 * store, an atomic in the PTX); a loop with such PTX is not pipelined.
 * Each thread runs it for each element it holds (an element held by
 * several threads once per thread; with a pack, each pack of its
 * registers, copies and the padding of a last, partial pack included).
 * Memory the PTX writes is the user's to order against the kernel's
 * loads by other threads (tj_debug_barrier), as tjit cannot see it.
 *     tj_inline_asm("mov.u64 $0, %globaltimer;", "=l", TJ_I64, TJ_VALS(), .side_effects = 1) */
typedef struct tj_asm_opts {
    int pack;         /* 0 or 1: one element per run */
    int side_effects; /* 1: not pure (Triton's is_pure=False) */
} tj_asm_opts;
#define tj_inline_asm(ptx, constraints, dtype, args, ...) \
    tj__inline_asm_opts(TJ__HERE, (ptx), (constraints), (dtype), (args), (tj_asm_opts){__VA_ARGS__})
#define tj_where(c, a, b) tj__where(TJ__HERE, TJ_V(c), TJ_V(a), TJ_V(b))
/* tj_cast(x, dt, ...): x converted to dtype dt (a pointer to a pointer to
 * dt), as Triton's x.to(dt) / tl.cast: floats to integers saturate (NaN
 * gives 0), integers wrap, floats round to nearest even. Options:
 * .bitcast = 1 reinterprets the bits instead (Triton's bitcast=True): dt
 * must have x's width (f32 <-> i32/u32, f16/bf16 <-> i16/u16, fp8 <-> i8/u8,
 * f64 <-> i64/u64); pointers are cast as without it.
 * .fp_downcast_rounding = TJ_ROUND_TO_ZERO rounds a float made narrower
 * (f64 -> f32, f32 -> f16 ...) toward zero instead (Triton's "rtz"; a
 * finite value too large becomes the largest finite one, not infinity). */
typedef enum tj_rounding { TJ_ROUND_TO_NEAREST_EVEN, TJ_ROUND_TO_ZERO } tj_rounding;
typedef struct tj_cast_opts {
    int bitcast;
    tj_rounding fp_downcast_rounding;
} tj_cast_opts;
#define tj_cast(x, dt, ...) tj__cast_opts(TJ__HERE, TJ_V(x), (dt), (tj_cast_opts){__VA_ARGS__})
/* Addresses as integers, for pointers that a kernel reads from memory (the
 * table of matrices of Triton's grouped-GEMM tutorial):
 * tj_int_to_ptr(x, dt): the i64/u64 tile or scalar x as pointers to dt
 * (Triton's x.to(tl.pointer_type(dt))); tj_ptr_to_int(p): p's addresses
 * as an i64 (Triton's p.to(tl.int64); tj_cast(p, TJ_I64) is a pointer to
 * i64). tjit knows nothing of a pointer made from an integer: it may
 * alias any buffer, its alignment is what tj_multiple_of says of x, and a
 * bounds-checked launch (tj_launch_cfg.check_bounds) does not check the
 * accesses through it, as it knows no buffer they belong to. */
#define tj_int_to_ptr(x, dt) tj__int_to_ptr(TJ__HERE, TJ_V(x), (dt))
#define tj_ptr_to_int(p)     tj__ptr_to_int(TJ__HERE, TJ_V(p))

/* Triton's standard-library algorithms, built from the ops above:
 * tj_sort(x, .descending): along the last dimension (a bitonic network;
 * floats order NaN above every number, -0 equal to +0). tj_topk(x, k): the
 * k largest along the last dimension, largest first, in the sort's order
 * (Triton's tl.topk; k a power of two up to that dimension; the result's
 * last dimension is k). tj_bitonic_merge(x, .descending): the sort's last
 * round alone (Triton's tl.bitonic_merge): rows that rise then fall come
 * out sorted. tj_flip(x, axis):
 * the axis reversed. tj_gather(src, index, axis): out[..i..] =
 * src[..index[..i..]..] along axis, index of src's rank and of its dims
 * elsewhere (Triton's tl.gather; an index outside [0, n) gives the dtype's
 * lowest value, -inf for floats; the work is index's size times n).
 * tj_histogram(x, num_bins, .mask): i32 counts of 0 .. num_bins-1 in the
 * integer tile x (others and masked elements not counted).
 * tj_swizzle2d(i, j, size_i, size_j, size_g, &new_i, &new_j): Triton's
 * tl.swizzle2d, the grouped program order of its matmul tutorial. */
typedef struct tj_sort_opts {
    int descending;
} tj_sort_opts;
typedef struct tj_histogram_opts {
    tj_val mask; /* TJ_NONE (zero): every element */
} tj_histogram_opts;
#define tj_sort(x, ...) tj__sort(TJ__HERE, TJ_V(x), (tj_sort_opts){__VA_ARGS__})
#define tj_topk(x, k) tj__topk(TJ__HERE, TJ_V(x), (k))
#define tj_bitonic_merge(x, ...) tj__bitonic_merge(TJ__HERE, TJ_V(x), (tj_sort_opts){__VA_ARGS__})
#define tj_flip(x, axis) tj__flip(TJ__HERE, TJ_V(x), (axis))
#define tj_gather(src, index, axis) tj__gather(TJ__HERE, TJ_V(src), TJ_V(index), (axis))
#define tj_histogram(x, num_bins, ...) \
    tj__histogram(TJ__HERE, TJ_V(x), (num_bins), (tj_histogram_opts){__VA_ARGS__})
#define tj_swizzle2d(i, j, size_i, size_j, size_g, new_i, new_j)                                      \
    tj__swizzle2d(TJ__HERE, TJ_V(i), TJ_V(j), TJ_V(size_i), TJ_V(size_j), TJ_V(size_g), (new_i), (new_j))

/*
 * Random numbers, bit for bit Triton's (triton/language/random.py):
 * Philox 4x32-10 of the counter (offset, 0, 0, 0) under the key (seed's low
 * 32 bits, its high 32 bits). The seed is any integer (converted to u64 as
 * C converts), the offset a tile (or scalar) of i32 or u32; they broadcast.
 * An i64 or u64 offset selects Triton's 64-bit Philox (4x64 words and
 * constants, key (seed, 0)): u64 results, and floats from 64-bit integers.
 *   tj_randint(seed, offset)   the first Philox output, u32
 *   tj_randint4x(seed, offset, &r0, &r1, &r2, &r3)
 *                              all four (u32 tiles); NULL skips one
 *   tj_rand(seed, offset)      uniform f32 in [0, 1): the first output as a
 *                              signed integer x, (x < 0 ? -x - 1 : x) * 4.6566127342e-10
 *   tj_randn(seed, offset)     standard normal f32: Box-Muller of the first
 *                              two uniforms, sqrt(-2 log(max(1e-7, u1))) * cos(2 pi u2)
 *   tj_rand4x, tj_randn4x      as tj_randint4x: the four uniforms; the four
 *                              normals (r cos, r sin of words 0, 1; of 2, 3)
 * .n_rounds = N (1 to 64) runs N rounds instead of 10, as Triton's n_rounds.
 * The normals' log, sqrt and cos are the C library's on the CPU (so they
 * are bit for bit those of C's logf, sqrtf and cosf) and tjit's own on a
 * GPU (within a few ulp).
 * tj_umulhi(a, b) is the high half of the unsigned product of two 32- or
 * 64-bit integers (Triton's tl.umulhi), in their dtype.
 *
 *     tj_val keep = tj_gt(tj_rand(seed, offs), p);   // dropout's mask
 */
typedef enum tj_random_kind { TJ_RANDOM_INT, TJ_RANDOM_UNIFORM, TJ_RANDOM_NORMAL } tj_random_kind;
typedef struct tj_rand_opts {
    int n_rounds; /* 0: 10 */
} tj_rand_opts;
#define tj_randint(seed, offset, ...) \
    tj__random(TJ__HERE, TJ_RANDOM_INT, TJ_V(seed), TJ_V(offset), (tj_rand_opts){__VA_ARGS__})
#define tj_rand(seed, offset, ...) \
    tj__random(TJ__HERE, TJ_RANDOM_UNIFORM, TJ_V(seed), TJ_V(offset), (tj_rand_opts){__VA_ARGS__})
#define tj_randn(seed, offset, ...) \
    tj__random(TJ__HERE, TJ_RANDOM_NORMAL, TJ_V(seed), TJ_V(offset), (tj_rand_opts){__VA_ARGS__})
#define TJ__RANDOM4X(kind, seed, offset, r0, r1, r2, r3, ...)                          \
    tj__random4x(TJ__HERE, (kind), TJ_V(seed), TJ_V(offset),                           \
                 (tj_val *const[4]){r0, r1, r2, r3}, (tj_rand_opts){__VA_ARGS__})
#define tj_randint4x(seed, offset, r0, r1, r2, r3, ...) \
    TJ__RANDOM4X(TJ_RANDOM_INT, seed, offset, r0, r1, r2, r3, __VA_ARGS__)
#define tj_rand4x(seed, offset, r0, r1, r2, r3, ...) \
    TJ__RANDOM4X(TJ_RANDOM_UNIFORM, seed, offset, r0, r1, r2, r3, __VA_ARGS__)
#define tj_randn4x(seed, offset, r0, r1, r2, r3, ...) \
    TJ__RANDOM4X(TJ_RANDOM_NORMAL, seed, offset, r0, r1, r2, r3, __VA_ARGS__)
#define tj_umulhi(a, b) tj__umulhi(TJ__HERE, TJ_V(a), TJ_V(b))

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
#define TJ_VALS(...) ((tj_vals){TJ__NARGS(__VA_ARGS__) __VA_OPT__(, {TJ__EACH(TJ__VALS_ITEM, (__VA_ARGS__))})})
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
    TJ_ATOMIC_ADD, TJ_ATOMIC_MAX, TJ_ATOMIC_MIN, TJ_ATOMIC_XCHG,
    TJ_ATOMIC_AND, TJ_ATOMIC_OR, TJ_ATOMIC_XOR /* integers only */
} tj_atomic_op;
/* An atomic's memory order (Triton's sem=) and the threads it orders
 * against (scope=). The default is Triton's: acquire-release, every thread
 * of the GPU. .sem = TJ_SEM_RELAXED orders nothing (a counter, a split-K
 * sum: the fastest); TJ_SEM_ACQUIRE sees what was released before the
 * value it reads; TJ_SEM_RELEASE publishes this program's earlier writes.
 * .scope = TJ_SCOPE_CTA is cheaper where only one program's threads meet;
 * TJ_SCOPE_SYS reaches the host and other GPUs. The CPU back end makes
 * every atomic sequentially consistent, stronger than any of these. */
typedef enum tj_sem { TJ_SEM_ACQ_REL, TJ_SEM_RELAXED, TJ_SEM_ACQUIRE, TJ_SEM_RELEASE } tj_sem;
typedef enum tj_scope { TJ_SCOPE_GPU, TJ_SCOPE_CTA, TJ_SCOPE_SYS } tj_scope;
typedef struct tj_atomic_opts {
    tj_val mask;     /* i1, the pointer tile's shape; masked-off lanes do nothing and read 0 */
    tj_sem sem;
    tj_scope scope;
} tj_atomic_opts;
/* Atomics return the values memory held before. */
#define tj_atomic_add(ptr, v, ...)  tj__atomic_opts(TJ__HERE, TJ_ATOMIC_ADD, TJ_V(ptr), TJ_V(v), (tj_atomic_opts){__VA_ARGS__})
#define tj_atomic_max(ptr, v, ...)  tj__atomic_opts(TJ__HERE, TJ_ATOMIC_MAX, TJ_V(ptr), TJ_V(v), (tj_atomic_opts){__VA_ARGS__})
#define tj_atomic_min(ptr, v, ...)  tj__atomic_opts(TJ__HERE, TJ_ATOMIC_MIN, TJ_V(ptr), TJ_V(v), (tj_atomic_opts){__VA_ARGS__})
#define tj_atomic_xchg(ptr, v, ...) tj__atomic_opts(TJ__HERE, TJ_ATOMIC_XCHG, TJ_V(ptr), TJ_V(v), (tj_atomic_opts){__VA_ARGS__})
#define tj_atomic_and(ptr, v, ...)  tj__atomic_opts(TJ__HERE, TJ_ATOMIC_AND, TJ_V(ptr), TJ_V(v), (tj_atomic_opts){__VA_ARGS__})
#define tj_atomic_or(ptr, v, ...)   tj__atomic_opts(TJ__HERE, TJ_ATOMIC_OR, TJ_V(ptr), TJ_V(v), (tj_atomic_opts){__VA_ARGS__})
#define tj_atomic_xor(ptr, v, ...)  tj__atomic_opts(TJ__HERE, TJ_ATOMIC_XOR, TJ_V(ptr), TJ_V(v), (tj_atomic_opts){__VA_ARGS__})
/* Compare-and-swap takes .sem and .scope, no mask (as Triton's). */
#define tj_atomic_cas(ptr, cmp, v, ...) \
    tj__atomic_cas_opts(TJ__HERE, TJ_V(ptr), TJ_V(cmp), TJ_V(v), (tj_atomic_opts){__VA_ARGS__})

/* Reductions along an axis (negative axes count from the end). The result
 * has that axis removed; a 1-D tile reduces to a scalar. argmax/argmin give
 * the first index of the extreme value, as i32. Integers narrower than 32
 * bits are summed in 32 bits of their signedness (i1: i32), as in Triton.
 * max, min, argmax, argmin order floats as tj_maximum does and take its
 * option: tj_max(x, 0, .propagate_nan = TJ_PROPAGATE_NAN_ALL) is NaN where a
 * NaN is met (argmax: the first NaN's index); by default NaNs are ignored
 * (all NaN: NaN, argmax 0). */
typedef enum tj_reduce_op {
    TJ_REDUCE_SUM, TJ_REDUCE_MAX, TJ_REDUCE_MIN, TJ_REDUCE_ARGMAX, TJ_REDUCE_ARGMIN,
    TJ_REDUCE_PROD
} tj_reduce_op;
/* Every reduction takes options: .keep_dims = 1 keeps the reduced axis
 * with size 1 (Triton's keep_dims=True); .propagate_nan is for max, min,
 * argmax and argmin only; .indices (max and min only) receives the index
 * argmax or argmin gives, beside the value (Triton's return_indices=True):
 *     tj_val at, m = tj_max(x, 1, .indices = &at); */
typedef struct tj_reduce_opts {
    tj_propagate_nan propagate_nan;
    int keep_dims;
    tj_val *indices;
} tj_reduce_opts;
#define tj_sum(x, axis, ...) \
    tj__reduce_opts(TJ__HERE, TJ_REDUCE_SUM, TJ_V(x), (axis), (tj_reduce_opts){__VA_ARGS__})
/* The product along an axis (Triton's tl.reduce(x, axis, mul)); integers
 * narrower than 32 bits multiply in 32 bits, as sums add. */
#define tj_prod(x, axis, ...) \
    tj__reduce_opts(TJ__HERE, TJ_REDUCE_PROD, TJ_V(x), (axis), (tj_reduce_opts){__VA_ARGS__})
#define tj_max(x, axis, ...) \
    tj__reduce_opts(TJ__HERE, TJ_REDUCE_MAX, TJ_V(x), (axis), (tj_reduce_opts){__VA_ARGS__})
#define tj_min(x, axis, ...) \
    tj__reduce_opts(TJ__HERE, TJ_REDUCE_MIN, TJ_V(x), (axis), (tj_reduce_opts){__VA_ARGS__})
#define tj_argmax(x, axis, ...) \
    tj__reduce_opts(TJ__HERE, TJ_REDUCE_ARGMAX, TJ_V(x), (axis), (tj_reduce_opts){__VA_ARGS__})
#define tj_argmin(x, axis, ...) \
    tj__reduce_opts(TJ__HERE, TJ_REDUCE_ARGMIN, TJ_V(x), (axis), (tj_reduce_opts){__VA_ARGS__})
/* Inclusive prefix sum and product along an axis (Triton's tl.cumsum,
 * tl.cumprod), sequential in index order on both back ends; the shape is
 * kept. .reverse = 1 scans from the last element to the first. */
typedef struct tj_scan_opts {
    int reverse;
} tj_scan_opts;
#define tj_cumsum(x, axis, ...) \
    tj__scan_opts(TJ__HERE, TJ_REDUCE_SUM, TJ_V(x), (axis), (tj_scan_opts){__VA_ARGS__})
#define tj_cumprod(x, axis, ...) \
    tj__scan_opts(TJ__HERE, TJ_REDUCE_PROD, TJ_V(x), (axis), (tj_scan_opts){__VA_ARGS__})
/* Running maximum and minimum (tl.cummax, tl.cummin), NaNs ignored as by
 * tj_maximum; .reverse as for tj_cumsum. */
#define tj_cummax(x, axis, ...) \
    tj__scan_opts(TJ__HERE, TJ_REDUCE_MAX, TJ_V(x), (axis), (tj_scan_opts){__VA_ARGS__})
#define tj_cummin(x, axis, ...) \
    tj__scan_opts(TJ__HERE, TJ_REDUCE_MIN, TJ_V(x), (axis), (tj_scan_opts){__VA_ARGS__})

/* Reductions and scans with a combine function of your own (Triton's
 * tl.reduce and tl.associative_scan). The function builds ops: tjit calls
 * it while it builds the kernel, log2(n) times for an axis of n, with tiles
 * whose elements are the pairs to combine, and it returns their
 * combination, element-wise, in the operands' dtype:
 *
 *     static tj_val larger_abs(tj_val a, tj_val b)    (ties: the earlier, a)
 *     { return tj_where(tj_ge(tj_abs(a), tj_abs(b)), a, b); }
 *     tj_val r = tj_reduce(x, 1, larger_abs);
 *     tj_val s = tj_associative_scan(x, 0, larger_abs, .reverse = 1);
 *
 * The function must be associative; it need not be commutative: a is
 * always the earlier part of the axis, b the later (with .reverse, the
 * scan runs from the end and a is the later part). The _n forms combine
 * several tiles at once (argmax of a value and its index, a linear
 * recurrence's pair): xs[0..n-1] (broadcast together, each keeping its
 * dtype) and the function's a, b and out hold n values each; results go
 * to out[0..n-1]; ctx is passed through. A reduction pairs neighbours, in
 * a tree; a scan is Sklansky's: log2(n) steps of n/2 combines. */
typedef tj_val (*tj_combine_fn)(tj_val a, tj_val b);
typedef void (*tj_combine_n_fn)(const tj_val *a, const tj_val *b, tj_val *out, void *ctx);
#define tj_reduce(x, axis, combine, ...) \
    tj__reduce_with(TJ__HERE, TJ_V(x), (axis), (combine), (tj_reduce_opts){__VA_ARGS__})
#define tj_reduce_n(n, xs, out, axis, combine, ctx, ...) \
    tj__reduce_n(TJ__HERE, (n), (xs), (out), (axis), (combine), (ctx), (tj_reduce_opts){__VA_ARGS__})
#define tj_associative_scan(x, axis, combine, ...) \
    tj__scan_with(TJ__HERE, TJ_V(x), (axis), (combine), (tj_scan_opts){__VA_ARGS__})
#define tj_associative_scan_n(n, xs, out, axis, combine, ctx, ...) \
    tj__scan_n(TJ__HERE, (n), (xs), (out), (axis), (combine), (ctx), (tj_scan_opts){__VA_ARGS__})
/* Triton's tl.xor_sum (integers) and tl.softmax (floats: exp(x - max)
 * over its sum, along axis, with .keep_dims for xor_sum), built from the ops
 * above. */
#define tj_xor_sum(x, axis, ...) \
    tj__xor_sum(TJ__HERE, TJ_V(x), (axis), (tj_reduce_opts){__VA_ARGS__})
#define tj_softmax(x, axis) tj__softmax(TJ__HERE, TJ_V(x), (axis))

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
/* Triton's tl.assume(cond): the program promises cond (an i1, or a number
 * compared with 0, scalar or tile) wherever this line runs. The GPU code
 * tells LLVM (llvm.assume of each element), and the analysis of offsets
 * reads one fact from it: an integer compared with a constant so that it
 * cannot be 0 (n > 0, n >= 1, n != 0, or an and of such) is nonzero after
 * the promise, when the promise is in the block (loop body, branch) that
 * defines it. That lets Triton's `offs % N` with N a runtime multiple of
 * 16 (tj_multiple_of) keep 16-byte vectors where N is not a kernel
 * argument the launch specializes. A false promise is undefined behaviour,
 * as in Triton; a bounds-checked launch (TJIT_CHECK_BOUNDS=1) checks each
 * tj_assume as a tj_device_assert and fails with TJ_ERR_ASSERT and its
 * line. */
#define tj_assume(cond)         tj__assume_true(TJ__HERE, TJ_V(cond))

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
 * A loop whose end is only known at run time is TJ_WHILE: each trip runs
 * the body up to TJ_WHILE_COND(cond), which ends the loop where the i1
 * scalar cond is false, and goes round again after the rest of the body:
 *
 *     TJ_WHILE(&x) { TJ_WHILE_COND(tj_lt(x, limit)); x = tj_mul(x, 2); }
 *     TJ_WHILE() { TJ_WHILE_COND(tj_eq(tj_atomic_cas(lock, 0, 1), 1)); }  -- spin
 *
 * After the loop the carried variables hold their values at TJ_WHILE_COND.
 * The body is C that runs once, at build time. Do not leave it with break,
 * return or goto: the builder reports an unclosed region.
 */
#define TJ_FOR(iv, lo, hi, step, ...)                                          \
    for (TJ__UNUSED tj_val iv = tj__for_begin(TJ__HERE, TJ_V(lo), TJ_V(hi), TJ_V(step),    \
                                   (tj_val *[]){NULL __VA_OPT__(,) __VA_ARGS__},           \
                                   TJ__NARGS(__VA_ARGS__));                     \
         tj__region_next(); )
/* TJ_FOR with options, as Triton's tl.range: TJ_FOR_OPTS(k, 0, K, BK,
 * TJ_LOOP(.num_stages = 4), &acc) pipelines this loop's loads num_stages
 * deep (1: not at all) instead of the launch's num_stages;
 * TJ_LOOP(.unroll = 4) has LLVM unroll it 4 times (Triton's
 * loop_unroll_factor; a trip count that 4 does not divide runs the rest
 * one by one), .unroll = 1 not at all. */
typedef struct tj_loop_opts {
    int num_stages; /* 0: the launch's (tj_launch_cfg.num_stages) */
    int unroll;     /* 0: as LLVM decides; 1: never; 2..TJ_MAX_UNROLL: that many times */
} tj_loop_opts;
#define TJ_MAX_UNROLL 64
#define TJ_LOOP(...) ((tj_loop_opts){__VA_ARGS__})
#define TJ_FOR_OPTS(iv, lo, hi, step, opts, ...)                               \
    for (TJ__UNUSED tj_val iv = tj__for_begin_opts(TJ__HERE, TJ_V(lo), TJ_V(hi), TJ_V(step), \
                                   (tj_val *[]){NULL __VA_OPT__(,) __VA_ARGS__},           \
                                   TJ__NARGS(__VA_ARGS__), (opts));             \
         tj__region_next(); )
#define TJ_IF(cond, ...)                                                        \
    for (int tj__once_ = tj__if_begin(TJ__HERE, TJ_V(cond),                     \
                                      (tj_val *[]){NULL __VA_OPT__(,) __VA_ARGS__},        \
                                      TJ__NARGS(__VA_ARGS__));                  \
         tj__once_ && tj__region_next(); )
#define TJ_ELSE                                                                 \
    for (int tj__once_ = tj__else_begin(TJ__HERE); tj__once_ && tj__region_next(); )
#define TJ_WHILE(...)                                                           \
    for (int tj__once_ = tj__while_begin(TJ__HERE,                              \
                                         (tj_val *[]){NULL __VA_OPT__(,) __VA_ARGS__},     \
                                         TJ__NARGS(__VA_ARGS__));               \
         tj__once_ && tj__region_next(); )
#define TJ_WHILE_COND(cond) tj__while_cond(TJ__HERE, TJ_V(cond))
/* Every thread of the program waits here for the others (Triton's
 * tl.debug_barrier; bar.sync 0 on a GPU, nothing on the CPU). */
#define tj_debug_barrier() tj__debug_barrier(TJ__HERE)

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

#endif /* TJIT_PUBLIC_LANG_H */
