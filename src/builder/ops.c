/* SPDX-License-Identifier: MIT */
/*
 * ops.c — the computing ops of the kernel language: element-wise
 * arithmetic, comparisons, pointer arithmetic, math functions and casts;
 * reductions and scans; inline PTX; the user's hints (assume); and the
 * debugging ops (print, device assert). Loads, stores and atomics are
 * memory.c's.
 *
 * Each constructor follows one pattern (build.h): tji_enter, meet the
 * operands' dtypes (tji_meet, tji_to_dtype) and shapes (tji_broadcast_all),
 * check what the opcode accepts with a message that names the user's types,
 * then tji_emit. Operations the IR has no opcode for are spelled here from
 * ones it has (floor division and modulo from IDIV and REM, tj_div of
 * integers as a float DIV), so the back ends stay small.
 */
#include <math.h>
#include <stdio.h>

#include "build.h"

/* --- element-wise ops ------------------------------------------------------ */

static const char *const binop_names[] = {
    "add", "sub", "mul", "div", "floordiv", "mod", "and", "or", "xor", "shl", "shr",
    "minimum", "maximum", "eq", "ne", "lt", "le", "gt", "ge", "fast_div", "pow", "atan2", "hypot",
    "copysign", "truncdiv", "fmod",
};

static int is_comparison(tj_binop op) { return op >= TJ_OP_EQ && op <= TJ_OP_GE; }
#define NBINOPS ((int)(sizeof binop_names / sizeof binop_names[0]))

/* fp8 values are loaded, stored, selected, cast and multiplied (tj_dot);
 * any other op on them asks for a cast first, as Triton, which computes fp8
 * only inside tl.dot. (Computing in f32 and rounding back after every op
 * would be slow and rarely what the user means: the rounding is coarse.) */
int tji_refuse_fp8(tj_dtype dt)
{
    if (!tjs_dtype_is_fp8(dt))
        return 1;
    return tji_fail(TJ_ERR_TYPE, "no '%s' of %s values: fp8 is a storage type (cast to f32 first)",
                    B.opname, tj_dtype_name(dt)), 0;
}

static int32_t no_rule(int32_t a, int32_t b)
{
    tji_type ta = type_of(a), tb = type_of(b);
    return tji_fail(TJ_ERR_TYPE, "no rule for '%s' of %s and %s", B.opname, tji_type_text(&ta), tji_type_text(&tb));
}

/* Pointer arithmetic: ptr + int (either order), ptr - int, and comparisons
 * of pointers to one dtype. */
static int32_t pointer_binary(tj_binop op, int32_t a, int32_t b)
{
    tji_type ta = type_of(a), tb = type_of(b);
    if (is_comparison(op) && ta.is_ptr && tb.is_ptr && ta.dtype == tb.dtype) {
        int32_t ids[2] = {a, b};
        if (!tji_broadcast_all(ids, 2))
            return 0;
        tji_type rt = elem_type(with_dtype(type_of(ids[0]), TJ_I1));
        int32_t v = tji_emit(TJI_CMP, ARGS(ids[0], ids[1]), rt);
        op_of(v)->pred = (tji_pred)(op - TJ_OP_EQ);
        return v;
    }
    int ptr_first = ta.is_ptr;
    int32_t ptr = ptr_first ? a : b, off = ptr_first ? b : a;
    tji_type to = type_of(off);
    if (to.is_ptr || !tjs_dtype_is_int(to.dtype) ||
        !(op == TJ_OP_ADD || (op == TJ_OP_SUB && ptr_first)))
        return no_rule(a, b);
    if (to.dtype == TJ_I1 && !(off = tji_to_dtype(off, TJ_I32, 1)))
        return 0;
    if (op == TJ_OP_SUB) {
        /* Negate narrow unsigned offsets as i64: ADDPTR zero-extends them.
         * (u64 wraps modulo 2^64, which is what the address does too.) */
        tj_dtype dt = type_of(off).dtype;
        if (is_unsigned(dt) && tjs_dtype_bits(dt) < 64 && !(off = tji_to_dtype(off, TJ_I64, 1)))
            return 0;
        off = tji_emit(TJI_NEG, ARGS(off), type_of(off));
    }
    int32_t ids[2] = {ptr, off};
    if (!tji_broadcast_all(ids, 2))
        return 0;
    return tji_emit(TJI_ADDPTR, ARGS(ids[0], ids[1]), type_of(ids[0]));
}

static int32_t compare(tji_pred pred, int32_t a, int32_t b)
{
    int32_t c = tji_emit(TJI_CMP, ARGS(a, b), with_dtype(type_of(a), TJ_I1));
    op_of(c)->pred = pred;
    return c;
}

/* Python's floor division and modulo of signed integers, and modulo of
 * floats, from C's truncating IDIV and REM: where the remainder is not 0
 * and its sign differs from the divisor's, the quotient is one less and the
 * modulo is r + b. So a == floordiv(a, b) * b + mod(a, b), and mod has the
 * sign of b. Division by 0 gives 0 and 0 (IDIV's and REM's rule, unchanged)
 * and INT_MIN // -1 gives INT_MIN, mod 0. */
static int32_t floor_divmod(int want_mod, int32_t a, int32_t b)
{
    tji_type t = type_of(a);
    int32_t zero = tji_broadcast_shape(tji_make_const(t.dtype, 0, 0), t.rank, t.shape);
    int32_t r = tji_emit(TJI_REM, ARGS(a, b), t);
    int32_t r_negative = compare(TJI_LT, r, zero), b_negative = compare(TJI_LT, b, zero);
    int32_t signs_differ = tji_emit(TJI_XOR, ARGS(r_negative, b_negative), with_dtype(t, TJ_I1));
    int32_t r_nonzero = compare(TJI_NE, r, zero);
    int32_t adjust = tji_emit(TJI_AND, ARGS(r_nonzero, signs_differ), with_dtype(t, TJ_I1));
    if (want_mod) {
        int32_t r_plus_b = tji_emit(TJI_ADD, ARGS(r, b), t);
        return tji_emit(TJI_WHERE, ARGS(adjust, r_plus_b, r), t);
    }
    int32_t q = tji_emit(TJI_IDIV, ARGS(a, b), t);
    int32_t one = tji_broadcast_shape(tji_make_const(t.dtype, 1, 0), t.rank, t.shape);
    int32_t q_minus_1 = tji_emit(TJI_SUB, ARGS(q, one), t);
    return tji_emit(TJI_WHERE, ARGS(adjust, q_minus_1, q), t);
}

/* A float's bits as the integer dtype of its width (x's shape). */
static int32_t float_bits(int32_t x)
{
    tji_type t = type_of(x);
    int bits = tjs_dtype_bits(t.dtype);
    tj_dtype it = bits == 64 ? TJ_I64 : bits == 32 ? TJ_I32 : TJ_I16;
    return tji_emit(TJI_BITCAST, ARGS(x), with_dtype(t, it));
}

/* An integer constant of dtype dt in the shape of x. */
static int32_t const_shaped(tj_dtype dt, int32_t x, int64_t v)
{
    tji_type t = type_of(x);
    return tji_broadcast_shape(tji_make_const(dt, v, 0), t.rank, t.shape);
}

/* copysign(x, y) of floats: x's bits but the sign, or'ed with y's sign bit
 * (the magnitude and NaN payload kept exactly, as C's). */
static int32_t copysign_bits(int32_t x, int32_t y)
{
    tji_type t = type_of(x);
    int32_t xb = float_bits(x), yb = float_bits(y);
    tji_type it = type_of(xb);
    int64_t sign = (int64_t)(~(uint64_t)0 << (tjs_dtype_bits(t.dtype) - 1)); /* the sign bit, sign-extended */
    int32_t magnitude = tji_emit(TJI_AND, ARGS(xb, const_shaped(it.dtype, xb, ~sign)), it);
    int32_t sign_of_y = tji_emit(TJI_AND, ARGS(yb, const_shaped(it.dtype, yb, sign)), it);
    return tji_emit(TJI_BITCAST, ARGS(tji_emit(TJI_OR, ARGS(magnitude, sign_of_y), it)), t);
}

tj_val tj__binary(tj_loc loc, tj_binop op, tj_val a, tj_val b)
{
    int known = (unsigned)op < (unsigned)NBINOPS;
    if (!tji_enter(loc, known ? binop_names[op] : "binary", 2, (tj_val[]){a, b}))
        return NONE;
    if (!known)
        return tji_fail(TJ_ERR_BUILD, "unknown binary op %d", (int)op), NONE;
    int32_t x = vid(a), y = vid(b);
    if (type_of(x).is_ptr || type_of(y).is_ptr)
        return val(pointer_binary(op, x, y));
    int is_cmp = is_comparison(op), fast = op == TJ_OP_FAST_DIV;
    if (fast)
        op = TJ_OP_DIV;
    int bitwise = op == TJ_OP_AND || op == TJ_OP_OR || op == TJ_OP_XOR;
    int shift = op == TJ_OP_SHL || op == TJ_OP_SHR;
    tj_dtype dt = tji_meet((int32_t[]){x, y}, 2);
    if (!tji_refuse_fp8(dt))
        return NONE;
    if ((bitwise || shift) && is_float(dt))
        return val(no_rule(x, y));
    if (dt == TJ_I1 && !is_cmp && !bitwise) /* arithmetic on i1 is done in i32 */
        dt = TJ_I32;
    if ((op == TJ_OP_DIV || op == TJ_OP_POW || op == TJ_OP_ATAN2 || op == TJ_OP_HYPOT || op == TJ_OP_COPYSIGN) &&
        !is_float(dt))
        dt = TJ_F32;
    int32_t ids[2] = {tji_to_dtype(x, dt, 1), 0};
    if (!ids[0] || !(ids[1] = tji_to_dtype(y, dt, 1)) || !tji_broadcast_all(ids, 2))
        return NONE;
    tji_type rt = type_of(ids[0]);
    static const tji_opcode codes[] = {
        [TJ_OP_ADD] = TJI_ADD, [TJ_OP_SUB] = TJI_SUB, [TJ_OP_MUL] = TJI_MUL,
        [TJ_OP_DIV] = TJI_DIV, [TJ_OP_FLOORDIV] = TJI_IDIV, [TJ_OP_MOD] = TJI_REM,
        [TJ_OP_AND] = TJI_AND, [TJ_OP_OR] = TJI_OR, [TJ_OP_XOR] = TJI_XOR,
        [TJ_OP_SHL] = TJI_SHL, [TJ_OP_SHR] = TJI_SHR, [TJ_OP_MINIMUM] = TJI_MIN,
        [TJ_OP_MAXIMUM] = TJI_MAX, [TJ_OP_POW] = TJI_POW, [TJ_OP_ATAN2] = TJI_ATAN2,
        [TJ_OP_HYPOT] = TJI_HYPOT, [TJ_OP_TRUNCDIV] = TJI_IDIV, [TJ_OP_FMOD] = TJI_REM,
    };
    if (is_cmp) {
        int32_t v = tji_emit(TJI_CMP, ids, 2, with_dtype(rt, TJ_I1));
        op_of(v)->pred = (tji_pred)(op - TJ_OP_EQ);
        return val(v);
    }
    if ((op == TJ_OP_FLOORDIV || op == TJ_OP_TRUNCDIV) && is_float(dt)) {
        int32_t quotient = tji_emit(TJI_DIV, ids, 2, rt);
        return val(tji_emit(op == TJ_OP_FLOORDIV ? TJI_FLOOR : TJI_TRUNC, &quotient, 1, rt));
    }
    if ((op == TJ_OP_FLOORDIV || op == TJ_OP_MOD) && !is_unsigned(dt))
        return val(floor_divmod(op == TJ_OP_MOD, ids[0], ids[1]));
    if (op == TJ_OP_COPYSIGN)
        return val(copysign_bits(ids[0], ids[1]));
    int32_t v = tji_emit(codes[op], ids, 2, rt);
    op_of(v)->approx = fast;
    return val(v);
}

/* isnan: x != x; isinf: |x| == inf; isfinite: |x| < inf (false for NaN).
 * An integer is a number and finite. */
static int32_t float_class(tj_unop op, int32_t x)
{
    tji_type t = type_of(x);
    tji_type rt = with_dtype(t, TJ_I1);
    if (!is_float(t.dtype)) {
        int32_t c = tji_make_const(TJ_I1, op == TJ_OP_ISFINITE, 0);
        return c && t.rank ? tji_broadcast_shape(c, rt.rank, rt.shape) : c;
    }
    int32_t ids[2] = {x, x};
    tji_pred pred = TJI_NE;
    if (op != TJ_OP_ISNAN) {
        ids[0] = tji_emit(TJI_ABS, &x, 1, t);
        ids[1] = tji_make_const(t.dtype, 0, INFINITY);
        if (!ids[1] || !tji_broadcast_all(ids, 2))
            return 0;
        pred = op == TJ_OP_ISINF ? TJI_EQ : TJI_LT;
    }
    int32_t r = tji_emit(TJI_CMP, ids, 2, rt);
    op_of(r)->pred = pred;
    return r;
}

/* signbit: a float's sign bit (its bits < 0 as a signed integer); an
 * integer's x < 0 (never for unsigned dtypes and i1). */
static int32_t sign_bit(int32_t x)
{
    tji_type t = type_of(x);
    if (!tjs_dtype_is_signed(t.dtype) && !is_float(t.dtype))
        return const_shaped(TJ_I1, x, 0);
    int32_t bits = is_float(t.dtype) ? float_bits(x) : x;
    return compare(TJI_LT, bits, const_shaped(type_of(bits).dtype, bits, 0));
}

tj_val tj__unary(tj_loc loc, tj_unop op, tj_val x)
{
    static const char *const names[] = {"neg", "not", "abs", "exp", "exp2", "log", "log2",
                                        "sqrt", "rsqrt", "sigmoid", "floor", "ceil", "fast_exp",
                                        "sin", "cos", "tanh", "erf", "fast_exp2", "log1p", "expm1",
                                        "rint", "trunc", "round", "isnan", "isinf", "isfinite",
                                        "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh",
                                        "acosh", "atanh", "log10", "cbrt", "popc", "clz", "brev", "signbit",
                                        "exp10", "erfc", "lgamma"};
    static const tji_opcode codes[] = {TJI_NEG, TJI_NOT, TJI_ABS, TJI_EXP, TJI_EXP2,
                                       TJI_LOG, TJI_LOG2, TJI_SQRT, TJI_RSQRT, TJI_SIGMOID,
                                       TJI_FLOOR, TJI_CEIL, TJI_EXP, TJI_SIN, TJI_COS, TJI_TANH,
                                       TJI_ERF, TJI_EXP2, TJI_LOG1P, TJI_EXPM1, TJI_RINT,
                                       TJI_TRUNC, TJI_ROUND, TJI_CMP, TJI_CMP, TJI_CMP,
                                       TJI_TAN, TJI_ASIN, TJI_ACOS, TJI_ATAN, TJI_SINH, TJI_COSH,
                                       TJI_ASINH, TJI_ACOSH, TJI_ATANH, TJI_LOG10, TJI_CBRT,
                                       TJI_POPC, TJI_CLZ, TJI_BREV, TJI_CMP, TJI_EXP10, TJI_ERFC,
                                       TJI_LGAMMA};
    int known = (unsigned)op < sizeof codes / sizeof codes[0];
    if (!tji_enter(loc, known ? names[op] : "unary", 1, &x))
        return NONE;
    if (!known)
        return tji_fail(TJ_ERR_BUILD, "unknown unary op %d", (int)op), NONE;
    tji_type t = type_of(vid(x));
    if (!t.is_ptr && !tji_refuse_fp8(t.dtype))
        return NONE;
    int on_bits = op == TJ_OP_POPC || op == TJ_OP_CLZ || op == TJ_OP_BREV;
    if (t.is_ptr || (op == TJ_OP_NOT && is_float(t.dtype)) || (on_bits && (is_float(t.dtype) || t.dtype == TJ_I1)))
        return tji_fail(TJ_ERR_TYPE, "no rule for '%s' of %s", names[op], tji_type_text(&t)), NONE;
    int32_t v = vid(x);
    if (op == TJ_OP_ABS && is_unsigned(t.dtype))
        return x; /* i1 and unsigned values are their own absolute value */
    if (op == TJ_OP_NEG && t.dtype == TJ_I1)
        v = tji_to_dtype(v, TJ_I32, 1);
    if (op == TJ_OP_ISNAN || op == TJ_OP_ISINF || op == TJ_OP_ISFINITE)
        return val(float_class(op, v));
    if (op == TJ_OP_SIGNBIT)
        return val(sign_bit(v));
    if (op >= TJ_OP_EXP && !on_bits && !is_float(t.dtype))
        v = tji_to_dtype(v, TJ_F32, 1);
    if (!v)
        return NONE;
    int32_t r = tji_emit(codes[op], ARGS(v), type_of(v));
    op_of(r)->approx = op == TJ_OP_FAST_EXP || op == TJ_OP_FAST_EXP2;
    return val(r);
}

tj_val tj__fma(tj_loc loc, tj_val a, tj_val b, tj_val c)
{
    if (!tji_enter(loc, "fma", 3, (tj_val[]){a, b, c}))
        return NONE;
    int32_t ids[3] = {vid(a), vid(b), vid(c)};
    tji_type t[3] = {type_of(vid(a)), type_of(vid(b)), type_of(vid(c))};
    if (t[0].is_ptr || t[1].is_ptr || t[2].is_ptr)
        return tji_fail(TJ_ERR_TYPE, "no rule for 'fma' of %s, %s and %s", tji_type_text(&t[0]),
                        tji_type_text(&t[1]), tji_type_text(&t[2])), NONE;
    tj_dtype dt = tji_meet(ids, 3);
    if (!tji_refuse_fp8(dt))
        return NONE;
    if (!is_float(dt))
        dt = TJ_F32;
    for (int i = 0; i < 3; i++)
        if (!(ids[i] = tji_to_dtype(ids[i], dt, 1)))
            return NONE;
    if (!tji_broadcast_all(ids, 3))
        return NONE;
    return val(tji_emit(TJI_FMA, ids, 3, type_of(ids[0])));
}

tj_val tj__where(tj_loc loc, tj_val cond, tj_val a, tj_val b)
{
    if (!tji_enter(loc, "where", 3, (tj_val[]){cond, a, b}))
        return NONE;
    tji_type ta = type_of(vid(a)), tb = type_of(vid(b));
    int32_t ids[3] = {tji_as_condition(vid(cond), "the condition"), vid(a), vid(b)};
    if (!ids[0])
        return NONE;
    if (ta.is_ptr || tb.is_ptr) {
        if (!ta.is_ptr || !tb.is_ptr || ta.dtype != tb.dtype)
            return tji_fail(TJ_ERR_TYPE, "no rule for 'where' of %s and %s", tji_type_text(&ta),
                            tji_type_text(&tb)), NONE;
    } else {
        tj_dtype dt = tji_meet(ids + 1, 2);
        if (!(ids[1] = tji_to_dtype(ids[1], dt, 1)) || !(ids[2] = tji_to_dtype(ids[2], dt, 1)))
            return NONE;
    }
    if (!tji_broadcast_all(ids, 3))
        return NONE;
    return val(tji_emit(TJI_WHERE, ids, 3, type_of(ids[1])));
}

/* A C number as a strong value of dt's width to take the bits of: an
 * integer as the signed dtype of that width where it fits, else the
 * unsigned one (0xbf800000 is a u32), a float as f32 or f64. */
static int32_t literal_of_width(const literal *l, tj_dtype dt)
{
    static const tj_dtype ints[][2] = {{TJ_I8, TJ_U8}, {TJ_I16, TJ_U16}, {TJ_I32, TJ_U32}, {TJ_I64, TJ_U64}};
    int bits = tjs_dtype_bits(dt), row = bits == 8 ? 0 : bits == 16 ? 1 : bits == 32 ? 2 : 3;
    if (l->kind == LIT_FLOAT) {
        if (bits != 32 && bits != 64)
            return tji_fail(TJ_ERR_TYPE, "bitcast of a C float to %s: give it a dtype of %d bits first "
                            "(tj_const)", tj_dtype_name(dt), bits);
        return tji_make_const(bits == 32 ? TJ_F32 : TJ_F64, 0, l->fval);
    }
    tj_dtype it = dt == TJ_I1 ? TJ_I1 : l->kind == LIT_INT && tji_literal_fits(l, ints[row][0]) ? ints[row][0]
                                                                                             : ints[row][1];
    if (!tji_literal_fits(l, it) || (it == ints[row][1] && l->kind == LIT_INT && l->ival < 0))
        return tji_fail(TJ_ERR_TYPE, "bitcast of a C number to %s: it does not fit in %d bits",
                        tj_dtype_name(dt), bits);
    return tji_make_const(it, l->ival, 0);
}

/* x's bits as dtype dt of the same width. Integers of one width and
 * pointers are cast (the same bits); only a float on either side needs
 * BITCAST. */
static int32_t bitcast(int32_t x, tj_dtype dt)
{
    const literal *l = lit(x);
    if (l && !(x = literal_of_width(l, dt)))
        return 0;
    tji_type t = type_of(x);
    if (t.is_ptr || t.dtype == dt || (tjs_dtype_is_int(t.dtype) && tjs_dtype_is_int(dt) &&
                                      tjs_dtype_bits(t.dtype) == tjs_dtype_bits(dt)))
        return tji_to_dtype(x, dt, 0);
    if (tjs_dtype_bits(t.dtype) != tjs_dtype_bits(dt))
        return tji_fail(TJ_ERR_TYPE, "bitcast of %s to %s: the widths differ (%d and %d bits)",
                        tj_dtype_name(t.dtype), tj_dtype_name(dt), tjs_dtype_bits(t.dtype),
                        tjs_dtype_bits(dt));
    return tji_emit(TJI_BITCAST, ARGS(x), with_dtype(t, dt));
}

/* x, a float, rounded toward zero to the narrower float dt. A literal is an
 * f32 first, as Triton takes a Python float. */
static int32_t cast_toward_zero(int32_t x, tj_dtype dt)
{
    if (lit(x) && !(x = tji_to_dtype(x, TJ_F32, 0)))
        return 0;
    tji_type t = type_of(x);
    if (t.is_ptr || !is_float(t.dtype) || !is_float(dt) || tjs_dtype_bits(dt) >= tjs_dtype_bits(t.dtype))
        return tji_fail(TJ_ERR_TYPE, "fp_downcast_rounding applies to a float cast to a narrower "
                        "float, not %s to %s", tji_type_text(&t), tj_dtype_name(dt));
    int32_t r = tji_emit(TJI_CAST, ARGS(x), with_dtype(t, dt));
    if (r)
        op_of(r)->round_to_zero = 1;
    return r;
}

tj_val tj__cast_opts(tj_loc loc, tj_val x, tj_dtype dtype, tj_cast_opts opts)
{
    if (!tji_enter(loc, opts.bitcast ? "bitcast" : "cast", 1, &x))
        return NONE;
    if (!dtype_ok(dtype))
        return tji_fail(TJ_ERR_BUILD, "unknown dtype %d", (int)dtype), NONE;
    if ((unsigned)opts.fp_downcast_rounding > TJ_ROUND_TO_ZERO)
        return tji_fail(TJ_ERR_BUILD, "unknown rounding %d", (int)opts.fp_downcast_rounding), NONE;
    if (opts.bitcast && opts.fp_downcast_rounding)
        return tji_fail(TJ_ERR_BUILD, "a bitcast does not round: fp_downcast_rounding applies to "
                        "value casts only"), NONE;
    if (opts.bitcast)
        return val(bitcast(vid(x), dtype));
    if (opts.fp_downcast_rounding == TJ_ROUND_TO_ZERO)
        return val(cast_toward_zero(vid(x), dtype));
    const literal *l = lit(vid(x));
    if (l && (l->kind != LIT_FLOAT || is_float(dtype))) /* wraps as in C, and is no */
        return val(tji_make_const(dtype, l->ival, tji_literal_double(l))); /* longer weak */
    return val(tji_to_dtype(vid(x), dtype, 0));
}

/* Addresses as integers (tj_int_to_ptr, tj_ptr_to_int): a CAST between a
 * 64-bit integer and a plain pointer, LLVM's inttoptr and ptrtoint. Only
 * 64 bits, so that no address is cut or widened behind the user's back. */
tj_val tj__int_to_ptr(tj_loc loc, tj_val x, tj_dtype dtype)
{
    if (!tji_enter(loc, "int_to_ptr", 1, &x))
        return NONE;
    if (!dtype_ok(dtype))
        return tji_fail(TJ_ERR_BUILD, "unknown dtype %d", (int)dtype), NONE;
    int32_t v = vid(x);
    if (lit(v) && lit(v)->kind != LIT_FLOAT && !(v = tji_to_dtype(v, TJ_I64, 1)))
        return NONE;
    tji_type t = type_of(v);
    if (t.is_ptr || (t.dtype != TJ_I64 && t.dtype != TJ_U64))
        return tji_fail(TJ_ERR_TYPE, "an address is an i64 or u64, not %s%s", tji_type_text(&t),
                        t.is_ptr || is_float(t.dtype) ? "" : " (cast it to i64 first)"), NONE;
    tji_type r = with_dtype(t, dtype);
    r.is_ptr = 1;
    return val(tji_emit(TJI_CAST, ARGS(v), r));
}

tj_val tj__ptr_to_int(tj_loc loc, tj_val p)
{
    if (!tji_enter(loc, "ptr_to_int", 1, &p))
        return NONE;
    tji_type t = type_of(vid(p));
    if (!t.is_ptr) /* a block pointer is refused by tji_enter */
        return tji_fail(TJ_ERR_TYPE, "the address of %s: not a pointer", tji_type_text(&t)), NONE;
    tji_type r = with_dtype(t, TJ_I64);
    r.is_ptr = 0;
    return val(tji_emit(TJI_CAST, ARGS(vid(p)), r));
}

/* What tj_cast called before casts took options; kept for programs built
 * against those headers. */
tj_val tj__cast(tj_loc loc, tj_val x, tj_dtype dtype)
{
    return tj__cast_opts(loc, x, dtype, (tj_cast_opts){0});
}

/* --- reductions ------------------------------------------------------------ */

/* What a sum or prefix sum adds: integers narrower than 32 bits are widened
 * to 32 bits of their signedness (i1 to i32), as Triton's sum and cumsum do,
 * so that 64 bytes of 200 do not sum to 0. */
static int32_t sum_operand(int32_t x)
{
    tj_dtype dt = type_of(x).dtype;
    if (is_float(dt) || tjs_dtype_bits(dt) >= 32)
        return x;
    return tji_to_dtype(x, is_unsigned(dt) && dt != TJ_I1 ? TJ_U32 : TJ_I32, 1);
}

static int check_minmax_opts(const tj_minmax_opts *o)
{
    if ((unsigned)o->propagate_nan > TJ_PROPAGATE_NAN_ALL)
        return tji_fail(TJ_ERR_BUILD, "propagate_nan must be TJ_PROPAGATE_NAN_NONE or TJ_PROPAGATE_NAN_ALL, "
                                  "got %d", (int)o->propagate_nan), 0;
    return 1;
}

tj_val tj__minmax(tj_loc loc, tj_binop op, tj_val a, tj_val b, tj_minmax_opts opts)
{
    if (op != TJ_OP_MINIMUM && op != TJ_OP_MAXIMUM)
        op = (tj_binop)-1; /* tj__binary reports it */
    tj_val r = tj__binary(loc, op, a, b);
    if (r.id && !check_minmax_opts(&opts))
        return NONE;
    if (r.id)
        op_of(vid(r))->propagate_nan = opts.propagate_nan;
    return r;
}

/* Triton's tl.inline_asm_elementwise: PTX run per element, or per pack of
 * elements, on a GPU. The arguments broadcast together and keep their
 * dtypes (the constraint letters must fit them); with none the result is
 * a scalar. The op is volatile (is_volatile) where the user says the PTX
 * has side effects. The CPU back end refuses the kernel. */
tj_val tj__inline_asm_opts(tj_loc loc, const char *ptx, const char *constraints, tj_dtype dtype, tj_vals args,
                           tj_asm_opts opts)
{
    if (!tji_enter(loc, "inline_asm_elementwise", args.n > 0 && args.n <= TJ_MAX_RANK ? args.n : 0, args.v))
        return NONE;
    if (!ptx || !constraints)
        return tji_fail(TJ_ERR_INVALID_ARG, "the PTX and the constraints are needed (not NULL)"), NONE;
    if (args.n < 0 || args.n > TJ_MAX_RANK)
        return tji_fail(TJ_ERR_INVALID_ARG, "%d arguments: 0 to %d", args.n, TJ_MAX_RANK), NONE;
    if (opts.side_effects != 0 && opts.side_effects != 1)
        return tji_fail(TJ_ERR_INVALID_ARG, "side_effects %d: 0 (pure) or 1", opts.side_effects), NONE;
    if (!dtype_ok(dtype))
        return tji_fail(TJ_ERR_BUILD, "unknown dtype %d", (int)dtype), NONE;
    if (opts.pack < 0 || opts.pack > TJI_MAX_ASM_PACK)
        return tji_fail(TJ_ERR_INVALID_ARG, "pack %d: 1 to %d elements per run", opts.pack, TJI_MAX_ASM_PACK), NONE;
    int pack = opts.pack ? opts.pack : 1;
    int32_t ids[TJ_MAX_RANK];
    tj_dtype in[TJ_MAX_RANK];
    for (int i = 0; i < args.n; i++) {
        tji_type t = type_of(vid(args.v[i]));
        if (t.is_ptr)
            return tji_fail(TJ_ERR_TYPE, "argument %d is %s: pass numbers", i + 1, tji_type_text(&t)), NONE;
        ids[i] = vid(args.v[i]);
        if (!(ids[i] = tji_to_dtype(ids[i], tji_meet(&ids[i], 1), 1))) /* C numbers take their own dtype */
            return NONE;
        in[i] = type_of(ids[i]).dtype;
    }
    const char *why = tji_asm_constraints_wrong(constraints, dtype, in, args.n, pack);
    if (why)
        return tji_fail(TJ_ERR_INVALID_ARG, "constraints \"%s\": %s", constraints, why), NONE;
    if (args.n && !tji_broadcast_all(ids, args.n))
        return NONE;
    tji_type rt = args.n ? with_dtype(type_of(ids[0]), dtype) : (tji_type){.dtype = dtype};
    int32_t r = tji_emit(TJI_INLINE_ASM, ids, args.n, rt);
    op_of(r)->str = tjs_arena_strdup(B.fn->arena, ptx);
    op_of(r)->constraints = tjs_arena_strdup(B.fn->arena, constraints);
    op_of(r)->asm_pack = pack;
    op_of(r)->is_volatile = opts.side_effects;
    return val(r);
}

tj_val tj__inline_asm(tj_loc loc, const char *ptx, const char *constraints, tj_dtype dtype, tj_vals args)
{
    return tj__inline_asm_opts(loc, ptx, constraints, dtype, args, (tj_asm_opts){.pack = 1});
}

tj_val tj__clamp(tj_loc loc, tj_val x, tj_val lo, tj_val hi, tj_minmax_opts opts)
{
    if (!tji_enter(loc, "clamp", 3, (tj_val[]){x, lo, hi}) || !check_minmax_opts(&opts))
        return NONE;
    int32_t ids[3] = {vid(x), vid(lo), vid(hi)};
    for (int i = 0; i < 3; i++) {
        tji_type t = type_of(ids[i]);
        if (t.is_ptr)
            return tji_fail(TJ_ERR_TYPE, "no rule for 'clamp' of %s", tji_type_text(&t)), NONE;
    }
    tj_dtype dt = tji_meet(ids, 3);
    if (!tji_refuse_fp8(dt))
        return NONE;
    for (int i = 0; i < 3; i++)
        if (!(ids[i] = tji_to_dtype(ids[i], dt, 1)))
            return NONE;
    if (!tji_broadcast_all(ids, 3))
        return NONE;
    tji_type rt = type_of(ids[0]);
    int32_t above = tji_emit(TJI_MAX, ids, 2, rt);
    op_of(above)->propagate_nan = opts.propagate_nan;
    int32_t r = tji_emit(TJI_MIN, (int32_t[]){above, ids[2]}, 2, rt);
    op_of(r)->propagate_nan = opts.propagate_nan;
    return val(r);
}

/* tj__reduce, tj__reduce_minmax, tj__cumsum and tj__scan are what the
 * macros called before reductions and scans took options; they stay for
 * programs built against those headers. */
tj_val tj__reduce(tj_loc loc, tj_reduce_op op, tj_val x, int axis)
{
    return tj__reduce_opts(loc, op, x, axis, (tj_reduce_opts){0});
}

tj_val tj__reduce_minmax(tj_loc loc, tj_reduce_op op, tj_val x, int axis, tj_minmax_opts opts)
{
    return tj__reduce_opts(loc, op, x, axis, (tj_reduce_opts){.propagate_nan = opts.propagate_nan});
}

tj_val tj__reduce_opts(tj_loc loc, tj_reduce_op op, tj_val x, int axis, tj_reduce_opts opts)
{
    static const char *const names[] = {"sum", "max", "min", "argmax", "argmin", "prod"};
    int known = (unsigned)op <= TJ_REDUCE_PROD;
    if (opts.indices) /* nothing, until the index is made */
        *opts.indices = NONE;
    if (!tji_enter(loc, known ? names[op] : "reduce", 1, &x))
        return NONE;
    if (!known)
        return tji_fail(TJ_ERR_BUILD, "unknown reduction %d", (int)op), NONE;
    if (!check_minmax_opts(&(tj_minmax_opts){opts.propagate_nan}))
        return NONE;
    if (opts.propagate_nan && (op == TJ_REDUCE_SUM || op == TJ_REDUCE_PROD))
        return tji_fail(TJ_ERR_BUILD, ".propagate_nan is for max, min, argmax and argmin, not %s", names[op]), NONE;
    if (opts.indices && op != TJ_REDUCE_MAX && op != TJ_REDUCE_MIN)
        return tji_fail(TJ_ERR_BUILD, ".indices is for max and min, not %s", names[op]), NONE;
    if (opts.indices) { /* the value, then its index by argmax/argmin under the same options */
        tj_val *indices = opts.indices;
        opts.indices = NULL;
        tj_val v = tj__reduce_opts(loc, op, x, axis, opts);
        if (vid(v))
            *indices = tj__reduce_opts(loc, op == TJ_REDUCE_MAX ? TJ_REDUCE_ARGMAX : TJ_REDUCE_ARGMIN, x, axis, opts);
        return vid(*indices) ? v : NONE;
    }
    tji_type t = type_of(vid(x));
    if (t.is_ptr)
        return tji_fail(TJ_ERR_TYPE, "no rule for '%s' of %s", names[op], tji_type_text(&t)), NONE;
    if (!tji_refuse_fp8(t.dtype))
        return NONE;
    if (!tji_check_axis(&axis, &t, "reduction"))
        return NONE;
    int32_t v = op == TJ_REDUCE_SUM || op == TJ_REDUCE_PROD ? sum_operand(vid(x))
              : t.dtype == TJ_I1                          ? tji_to_dtype(vid(x), TJ_I32, 1)
                                                                          : vid(x); /* i1 reduces as i32 */
    tji_type rt = type_of(v);
    for (int i = axis; i + 1 < rt.rank; i++)
        rt.shape[i] = rt.shape[i + 1];
    rt.shape[--rt.rank] = 0;
    if (op == TJ_REDUCE_ARGMAX || op == TJ_REDUCE_ARGMIN)
        rt.dtype = TJ_I32;
    int32_t r = tji_emit(TJI_REDUCE, ARGS(v), rt);
    op_of(r)->axis = axis;
    op_of(r)->reduce = op;
    op_of(r)->propagate_nan = opts.propagate_nan;
    return opts.keep_dims ? tj__expand_dims(loc, val(r), axis) : val(r);
}

tj_val tj__cumsum(tj_loc loc, tj_val x, int axis)
{
    return tj__scan_opts(loc, TJ_REDUCE_SUM, x, axis, (tj_scan_opts){0});
}

tj_val tj__scan(tj_loc loc, tj_reduce_op op, tj_val x, int axis)
{
    return tj__scan_opts(loc, op, x, axis, (tj_scan_opts){0});
}

/* A running max or min is a scan with tj_maximum (tj_minimum) as its
 * combine (combine.c); sums and products are the CUMSUM op, in index
 * order on both back ends. .reverse flips the axis before and after. */
tj_val tj__scan_opts(tj_loc loc, tj_reduce_op op, tj_val x, int axis, tj_scan_opts opts)
{
    const char *name = op == TJ_REDUCE_PROD ? "cumprod" : op == TJ_REDUCE_MAX ? "cummax"
                     : op == TJ_REDUCE_MIN ? "cummin" : "cumsum";
    if (!tji_enter(loc, name, 1, &x))
        return NONE;
    if (op == TJ_REDUCE_MAX || op == TJ_REDUCE_MIN)
        return tji_scan_minmax(loc, op, x, axis, opts);
    if (op != TJ_REDUCE_SUM && op != TJ_REDUCE_PROD)
        return tji_fail(TJ_ERR_BUILD, "unknown scan %d (sum, product, max or min)", (int)op), NONE;
    tji_type t = type_of(vid(x));
    if (t.is_ptr)
        return tji_fail(TJ_ERR_TYPE, "no rule for '%s' of %s", name, tji_type_text(&t)), NONE;
    if (!tji_refuse_fp8(t.dtype))
        return NONE;
    if (!tji_check_axis(&axis, &t, name))
        return NONE;
    if (opts.reverse)
        x = tj__flip(loc, x, axis);
    int32_t v = B.status == TJ_OK ? sum_operand(vid(x)) : 0;
    if (!v)
        return NONE;
    int32_t r = tji_emit(TJI_CUMSUM, ARGS(v), type_of(v));
    op_of(r)->axis = axis;
    op_of(r)->reduce = op;
    return opts.reverse ? tj__flip(loc, val(r), axis) : val(r);
}

/* --- hints ----------------------------------------------------------------- */

/* What the user knows of an integer tile's values and the compiler cannot
 * see (an offset computed from a scalar that is always a multiple of 16, a
 * gather whose indices come in runs): the coalescing pass uses it to choose
 * wider accesses. It is trusted, not checked: a false hint gives wrong
 * results, as in C with a wrong restrict. */
tj_val tj__assume(tj_loc loc, int what, tj_val x, int64_t n)
{
    static const char *const names[] = {"multiple_of", "max_contiguous", "max_constancy"};
    const char *name = (unsigned)what <= TJI_ASSUME_CONSTANCY ? names[what] : "hint";
    if (!tji_enter(loc, name, 1, &x))
        return NONE;
    if ((unsigned)what > TJI_ASSUME_CONSTANCY)
        return tji_fail(TJ_ERR_BUILD, "unknown hint %d", what), NONE;
    tji_type t = type_of(vid(x));
    if (t.is_ptr || !tjs_dtype_is_int(t.dtype) || t.dtype == TJ_I1)
        return tji_fail(TJ_ERR_TYPE, "'%s' applies to integer values, got %s%s", name, tji_type_text(&t),
                        t.is_ptr ? " (give it the offsets added to the pointer)" : ""), NONE;
    if (n < 1)
        return tji_fail(TJ_ERR_BUILD, "'%s' needs a positive number, got %lld", name, (long long)n), NONE;
    if (what != TJI_ASSUME_MULTIPLE_OF) {
        if (t.rank == 0)
            return tji_fail(TJ_ERR_SHAPE, "'%s' describes runs along a tile's last dimension; %s is a scalar",
                            name, tji_type_text(&t)), NONE;
        int32_t last = t.shape[t.rank - 1];
        if ((n & (n - 1)) || n > last)
            return tji_fail(TJ_ERR_BUILD, "'%s' needs a power of two dividing the last dimension (%d), got %lld",
                            name, (int)last, (long long)n), NONE;
    }
    int32_t r = tji_emit(TJI_ASSUME, ARGS(vid(x)), t);
    op_of(r)->assume = (tji_assume)what;
    op_of(r)->ival = n;
    return val(r);
}

/* Triton's tl.assume: a promise, not a check (a bounds-checked launch
 * checks it; see the pipeline). */
void tj__assume_true(tj_loc loc, tj_val cond)
{
    if (!tji_enter(loc, "assume", 1, &cond))
        return;
    int32_t c = tji_as_condition(vid(cond), "the assumption");
    if (c)
        tji_emit_op(TJI_ASSUME_TRUE, B.region, ARGS(c), 0, NULL);
}

/* --- debugging ------------------------------------------------------------- */

void tj__print(tj_loc loc, const char *prefix, tj_val x)
{
    if (!tji_enter(loc, "print", 1, &x))
        return;
    int32_t op = tji_emit_op(TJI_PRINT, B.region, ARGS(vid(x)), 0, NULL);
    B.fn->ops[op].str = tjs_arena_strdup(B.fn->arena, prefix ? prefix : "");
}

void tj__device_assert(tj_loc loc, tj_val cond, const char *msg)
{
    if (!tji_enter(loc, "device_assert", 1, &cond))
        return;
    int32_t c = tji_as_condition(vid(cond), "the condition");
    if (!c)
        return;
    int32_t op = tji_emit_op(TJI_ASSERT, B.region, ARGS(c), 0, NULL);
    B.fn->ops[op].str = tjs_arena_strdup(B.fn->arena, msg ? msg : "");
}

void tj__debug_barrier(tj_loc loc)
{
    if (tji_enter(loc, "debug_barrier", 0, NULL))
        tji_emit_op(TJI_BARRIER, B.region, NULL, 0, 0, NULL);
}
