/* SPDX-License-Identifier: MIT */
/*
 * literals.c — constants, C numbers as weak literals, and dtype promotion.
 *
 * Dtypes meet by Triton's promotion rules, made explicit as CASTs. C numbers
 * arrive as weak literals: a CONST value that yields its dtype to the other
 * operand, so `x + 1` keeps the dtype of x. A literal that no op has read
 * yet is retyped in place; one already read is copied into a new CONST of
 * the wanted dtype (never a CAST, so `x + 1` on f16 is exact). A side table
 * (B.lits) remembers each literal's C value and kind (integer,
 * unsigned above INT64_MAX, or floating) while the program is built.
 *
 * A CONST holds its value as the dtype holds it: integers wrapped to the
 * width, floats rounded once to the nearest value of the dtype, so a back
 * end emits the constant as it is.
 */
#include <float.h>
#include <math.h>

#include "build.h"

/* --- constants ------------------------------------------------------------- */

static int64_t wrap_int(tj_dtype dt, int64_t v)
{
    int bits = tjs_dtype_bits(dt);
    if (dt == TJ_I1)
        return v != 0;
    if (bits >= 64)
        return v;
    uint64_t mask = ((uint64_t)1 << bits) - 1, u = (uint64_t)v & mask;
    if (tjs_dtype_is_signed(dt) && (u >> (bits - 1)))
        u |= ~mask;
    return (int64_t)u;
}

/* v rounded to the nearest value of float dtype dt (IEEE, ties to even). */
static double round_float(tj_dtype dt, double v)
{
    if (tjs_dtype_is_fp8(dt) && fabs(v) > FLT_MAX) /* saturates, infinities too */
        v = copysign(FLT_MAX, v);
    if (dt == TJ_F64 || isnan(v) || isinf(v))
        return v;
    if (fabs(v) > FLT_MAX) /* past FLT_MAX plus half an ulp: infinity */
        return fabs(v) >= 0x1.ffffffp127 ? copysign(INFINITY, v) : copysign(FLT_MAX, v);
    float f = (float)v;
    if (dt != TJ_F32 && (double)f != v) {
        /* Round to odd first (truncate, then set the last bit): float has
         * enough extra bits that the 16-bit rounding below is then the only
         * rounding, as if done directly from v. */
        uint32_t u;
        memcpy(&u, &f, sizeof u);
        if (fabs((double)f) > fabs(v))
            u--;
        u |= 1;
        memcpy(&f, &u, sizeof f);
    }
    if (dt == TJ_F16)
        f = tj_f16_to_f32(tj_f32_to_f16(f));
    else if (dt == TJ_BF16)
        f = tj_bf16_to_f32(tj_f32_to_bf16(f));
    else if (dt == TJ_F8E4M3)
        f = tj_f8e4m3_to_f32(tj_f32_to_f8e4m3(f));
    else if (dt == TJ_F8E5M2)
        f = tj_f8e5m2_to_f32(tj_f32_to_f8e5m2(f));
    return f;
}

static void set_const(tji_op *op, tj_dtype dt, int64_t ival, double fval)
{
    op->ival = is_float(dt) ? 0 : wrap_int(dt, ival);
    op->fval = is_float(dt) ? round_float(dt, fval) : 0;
}

int32_t tji_make_const(tj_dtype dt, int64_t ival, double fval)
{
    int32_t v = tji_emit(TJI_CONST, NULL, 0, scalar_type(dt));
    set_const(op_of(v), dt, ival, fval);
    return v;
}

/* --- literals and promotion ------------------------------------------------ */

static tj_dtype literal_dtype(const literal *l)
{
    if (l->kind == LIT_FLOAT)
        return TJ_F32;
    if (l->kind == LIT_UINT)
        return TJ_U64;
    return l->ival >= INT32_MIN && l->ival <= INT32_MAX ? TJ_I32 : TJ_I64;
}

double tji_literal_double(const literal *l)
{
    if (l->kind == LIT_FLOAT)
        return l->fval;
    return l->kind == LIT_UINT ? (double)(uint64_t)l->ival : (double)l->ival;
}

/* An integer literal fits an integer dtype when it is representable in it;
 * for unsigned dtypes negative values that fit the signed type of that width
 * are allowed too, and wrap as in C (u32 x - 1 is x + 0xffffffff). */
int tji_literal_fits(const literal *l, tj_dtype dt)
{
    if (is_float(dt))
        return 1;
    if (l->kind == LIT_UINT)
        return dt == TJ_U64;
    int64_t v = l->ival;
    int bits = tjs_dtype_bits(dt);
    if (dt == TJ_I1)
        return v == 0 || v == 1;
    if (bits >= 64)
        return 1;
    int64_t lo = -((int64_t)1 << (bits - 1));
    int64_t hi = tjs_dtype_is_signed(dt) ? ((int64_t)1 << (bits - 1)) - 1
                                          : ((int64_t)1 << bits) - 1;
    return v >= lo && v <= hi;
}

static tj_val new_literal(int kind, int64_t ival, double fval)
{
    if (!B.fn) {
        tjs_error(TJ_ERR_BUILD, "error: a C number was used as a tile value outside a "
                                "kernel body (no kernel is being built)");
        return NONE;
    }
    if (B.status != TJ_OK)
        return NONE;
    literal l = {(uint8_t)kind, 0, ival, fval};
    tj_loc saved = B.loc;
    B.loc = (tj_loc){B.kernel->file, 0}; /* line 0: set at its first use */
    int32_t v = tji_make_const(literal_dtype(&l), ival, fval);
    B.loc = saved;
    B.fn->values[v].weak = 1;
    if (v >= B.lits_cap) {
        int32_t cap = B.lits_cap ? B.lits_cap : 64;
        while (cap <= v)
            cap *= 2;
        B.lits = tjs_xrealloc(B.lits, sizeof *B.lits * (size_t)cap);
        memset(B.lits + B.lits_cap, 0, sizeof *B.lits * (size_t)(cap - B.lits_cap));
        B.lits_cap = cap;
    }
    B.lits[v] = l;
    return val(v);
}

tj_val tj__val_id(tj_val v) { return v; }
tj_val tj__weak_int(long long v) { return new_literal(LIT_INT, v, 0); }
tj_val tj__weak_float(double v) { return new_literal(LIT_FLOAT, 0, v); }

tj_val tj__weak_uint(unsigned long long v)
{
    if (v <= INT64_MAX)
        return new_literal(LIT_INT, (int64_t)v, 0);
    return new_literal(LIT_UINT, (int64_t)v, 0);
}

/* Triton's promotion of two dtypes. */
static tj_dtype promote(tj_dtype a, tj_dtype b)
{
    if (a == b)
        return a;
    if (is_float(a) && is_float(b)) {
        int ba = tjs_dtype_bits(a), bb = tjs_dtype_bits(b);
        return ba == bb ? TJ_F32 : ba > bb ? a : b; /* f16 with bf16: f32 */
    }
    if (is_float(a) || is_float(b))
        return is_float(a) ? a : b;
    if (a == TJ_I1 || b == TJ_I1)
        return a == TJ_I1 ? b : a;
    int ba = tjs_dtype_bits(a), bb = tjs_dtype_bits(b);
    if (ba != bb)
        return ba > bb ? a : b;
    return is_unsigned(a) ? a : b; /* equal width: unsigned wins */
}

/* The dtype n operands meet in. Literals yield to the other operands: an
 * integer literal takes any dtype, a floating one a floating dtype (with
 * integers only, it stays f32 and promotion makes the result f32). */
tj_dtype tji_meet(const int32_t *ids, int n)
{
    int nstrong = 0, nweak = 0, weak_float = 0;
    tj_dtype strong = TJ_I32, weak = TJ_I32;
    for (int i = 0; i < n; i++) {
        const literal *l = lit(ids[i]);
        if (l) {
            tj_dtype d = literal_dtype(l);
            weak = nweak++ ? promote(weak, d) : d;
            weak_float |= l->kind == LIT_FLOAT;
        } else {
            tj_dtype d = type_of(ids[i]).dtype;
            strong = nstrong++ ? promote(strong, d) : d;
        }
    }
    if (!nstrong)
        return weak;
    if (weak_float && !is_float(strong))
        return TJ_F32;
    return strong;
}

/* x as dtype dt. A literal becomes a CONST of dt (retyped in place while no
 * op reads it); checked: an integer literal must fit dt. Anything else gets
 * a CAST (pointers: a pointer to dt). */
int32_t tji_to_dtype(int32_t x, tj_dtype dt, int checked)
{
    tji_type t = type_of(x);
    if (t.dtype == dt)
        return x;
    literal *l = lit(x);
    if (l && (l->kind != LIT_FLOAT || is_float(dt))) {
        if (checked && !tji_literal_fits(l, dt)) {
            if (l->kind == LIT_UINT)
                return tji_fail(TJ_ERR_TYPE, "integer literal %llu does not fit in %s",
                                (unsigned long long)l->ival, tj_dtype_name(dt));
            return tji_fail(TJ_ERR_TYPE, "integer literal %lld does not fit in %s",
                            (long long)l->ival, tj_dtype_name(dt));
        }
        if (!l->used) {
            set_const(op_of(x), dt, l->ival, tji_literal_double(l));
            B.fn->values[x].type.dtype = dt;
            return x;
        }
        return tji_make_const(dt, l->ival, tji_literal_double(l));
    }
    return tji_emit(TJI_CAST, ARGS(x), with_dtype(t, dt));
}

/* --- typed constants (tj_i32(5), tj_const(...)) ------------------------------ */

static tj_val typed_const(tj_loc loc, int64_t ivalue, double fvalue, tj_dtype dtype)
{
    if (!tji_enter(loc, "const", 0, NULL))
        return NONE;
    if (!dtype_ok(dtype))
        return tji_fail(TJ_ERR_BUILD, "unknown dtype %d", (int)dtype), NONE;
    return val(tji_make_const(dtype, ivalue, fvalue));
}

tj_val tj__const_int(tj_loc loc, long long value, tj_dtype dtype)
{
    return typed_const(loc, value, (double)value, dtype);
}

/* A float constant of an integer dtype truncates toward zero, saturating at
 * the ends of int64 (NaN gives 0), so no C conversion is undefined. */
tj_val tj__const_float(tj_loc loc, double value, tj_dtype dtype)
{
    int64_t i = value != value          ? 0
                : value >= 0x1p63       ? INT64_MAX
                : value <= -0x1p63      ? INT64_MIN
                                        : (int64_t)value;
    return typed_const(loc, i, value, dtype);
}
