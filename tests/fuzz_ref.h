/* SPDX-License-Identifier: MIT */
/*
 * fuzz_ref.h — the C reference of test_fuzz.c's random tile programs.
 *
 * It runs a program (fuzz_prog.h) for one program id, element by element,
 * with tjit's documented semantics written out plainly: integers wrap to
 * their width (computed in 64 bits, then wrapped), floordiv and mod are
 * Python's // and % (floor; the remainder has the divisor's sign, for
 * floats too), division by zero gives 0, shifts past the width give 0 or
 * the sign, casts to i1 test != 0, float-to-int casts saturate; float
 * minimum, maximum and the max/min/argmax/argmin reductions order -0
 * below +0 and ignore NaN, or with .propagate_nan let it win; sums of
 * narrow integers are i32/u32. Every float op is done in double and
 * rounded once to its dtype (tl_round), which is exactly what a correctly
 * rounded op in that dtype gives (and what tjit's f16/bf16-in-f32 gives:
 * f32 has more than twice their precision); math functions are the C
 * library's double ones, tjit's within math_bounds.h's ulps of them. The
 * guarded forms the generator uses are spelled out here and in the kernel
 * body alike: float a / (|b| + 1), a % (|b| + 1), pow(|a| + 1, b),
 * sqrt/log/log2/rsqrt of |a| + 1, integer a // (b & 15) and a % (b & 15),
 * shifts by b & (2 * bits - 1).
 */
#ifndef TJIT_TESTS_FUZZ_REF_H
#define TJIT_TESTS_FUZZ_REF_H

#include "fuzz_prog.h"

typedef struct fz_ref_val {
    tl_num e[FZ_MAXTILE];
} fz_ref_val;

/* The inputs of a run, as the host filled them. */
typedef struct fz_inputs {
    const void *in[TJ_DTYPE_COUNT]; /* nrows x ncols elements each */
    int32_t nrows, ncols, trips, si;
    float sf;
} fz_inputs;

static tl_num fz_elem(const fz_op *o, const fz_ref_val *v, int i, int j)
{
    if (o->scalar)
        return v->e[0];
    return v->e[(o->r == 1 ? 0 : i) * o->cdim + (o->cdim == 1 ? 0 : j)];
}

static int fz_uless(int64_t a, int64_t b) { return (uint64_t)a < (uint64_t)b; }
/* The comparison's order: IEEE for floats (-0 == +0). */
static int fz_less(tj_dtype t, tl_num a, tl_num b)
{
    if (fz_is_float(t))
        return a.f < b.f;
    return tl_is_signed(t) ? a.i < b.i : fz_uless(a.i, b.i);
}

/* The order of minimum, maximum and the reductions over non-NaN values:
 * -0 below +0. */
static int fz_order_less(tj_dtype t, tl_num a, tl_num b)
{
    if (fz_is_float(t) && a.f == b.f)
        return signbit(a.f) && !signbit(b.f);
    return fz_less(t, a, b);
}

/* minimum (or maximum) of a and b; a NaN loses, or with propagate wins. */
static tl_num fz_ref_minmax(int is_max, int propagate, tj_dtype t, tl_num a, tl_num b)
{
    if (fz_is_float(t) && (isnan(a.f) || isnan(b.f))) {
        if (propagate || (isnan(a.f) && isnan(b.f)))
            return tl_flt(NAN);
        return isnan(a.f) ? b : a;
    }
    return fz_order_less(t, a, b) == is_max ? b : a;
}

/* Python's a // d and a % d of t's integers (d == 0: 0; INT_MIN // -1
 * wraps). */
static int64_t fz_floor_divmod(int want_mod, tj_dtype t, int64_t a, int64_t d)
{
    if (d == 0)
        return 0;
    if (!tl_is_signed(t))
        return (int64_t)(want_mod ? (uint64_t)a % (uint64_t)d : (uint64_t)a / (uint64_t)d);
    if (d == -1)
        return want_mod ? 0 : tl_wrap(t, (int64_t)(0 - (uint64_t)a));
    int64_t q = a / d, r = a % d;
    if (r != 0 && (r < 0) != (d < 0))
        q--, r += d;
    return want_mod ? r : q;
}

static int64_t fz_shift(int left, tj_dtype t, int64_t a, int64_t amount)
{
    int bits = tl_bits(t);
    uint64_t s = (uint64_t)amount;
    if (s >= (uint64_t)bits)
        return left || !tl_is_signed(t) ? 0 : (a < 0 ? -1 : 0);
    if (left)
        return tl_wrap(t, (int64_t)((uint64_t)a << s));
    if (tl_is_signed(t))
        return a >> s; /* a is sign-extended: arithmetic */
    return (int64_t)((uint64_t)a >> s);
}

/* A binary op of dtype t; literal: b is a C literal (used as it is, no
 * guard); propagate: minimum/maximum's .propagate_nan. */
static tl_num fz_ref_bin(int sub, tj_dtype t, tl_num a, tl_num b, int literal, int propagate)
{
    tl_num out = {0, 0};
    if (sub == TJ_OP_MINIMUM || sub == TJ_OP_MAXIMUM)
        return fz_ref_minmax(sub == TJ_OP_MAXIMUM, propagate, t, a, b);
    if (fz_is_float(t)) {
        double x = a.f, y = b.f, d = tl_round(t, fabs(y) + 1);
        switch (sub) {
        case TJ_OP_ADD: out.f = x + y; break;
        case TJ_OP_SUB: out.f = x - y; break;
        case TJ_OP_MUL: out.f = x * y; break;
        case TJ_OP_DIV: out.f = x / d; break;
        case TJ_OP_MOD: /* fmod moved into the divisor's sign; a zero keeps fmod's */
            out.f = fmod(x, d);
            if (out.f != 0 && (out.f < 0) != (d < 0))
                out.f += d;
            break;
        default: out.f = pow(tl_round(t, fabs(x) + 1), y); break; /* TJ_OP_POW */
        }
        out.f = tl_round(t, out.f);
        return out;
    }
    uint64_t x = (uint64_t)a.i, y = (uint64_t)b.i;
    int64_t r;
    switch (sub) {
    case TJ_OP_ADD: r = (int64_t)(x + y); break;
    case TJ_OP_SUB: r = (int64_t)(x - y); break;
    case TJ_OP_MUL: r = (int64_t)(x * y); break;
    case TJ_OP_FLOORDIV: case TJ_OP_MOD:
        r = fz_floor_divmod(sub == TJ_OP_MOD, t, a.i, literal ? b.i : (int64_t)(y & 15));
        break;
    case TJ_OP_AND: r = (int64_t)(x & y); break;
    case TJ_OP_OR: r = (int64_t)(x | y); break;
    case TJ_OP_XOR: r = (int64_t)(x ^ y); break;
    case TJ_OP_SHL: case TJ_OP_SHR: {
        int64_t amount = literal ? b.i : (int64_t)(y & (uint64_t)(2 * tl_bits(t) - 1));
        r = fz_shift(sub == TJ_OP_SHL, t, a.i, amount);
        break;
    }
    default: r = 0; break;
    }
    out.i = tl_wrap(t, r);
    return out;
}

static tl_num fz_ref_un(int sub, tj_dtype t, tl_num a)
{
    tl_num out = {0, 0};
    if (!fz_is_float(t)) {
        switch (sub) {
        case TJ_OP_NEG: out.i = tl_wrap(t, (int64_t)(0 - (uint64_t)a.i)); break;
        case TJ_OP_ABS: out.i = tl_is_signed(t) && a.i < 0 ? tl_wrap(t, (int64_t)(0 - (uint64_t)a.i)) : a.i; break;
        default: out.i = t == TJ_I1 ? a.i ^ 1 : tl_wrap(t, ~a.i); break;
        }
        return out;
    }
    double x = a.f, g = tl_round(t, fabs(x) + 1);
    switch (sub) {
    case TJ_OP_NEG: out.f = -x; break;
    case TJ_OP_ABS: out.f = fabs(x); break;
    case TJ_OP_FLOOR: out.f = floor(x); break;
    case TJ_OP_CEIL: out.f = ceil(x); break;
    case TJ_OP_SQRT: out.f = sqrt(g); break;
    case TJ_OP_EXP: out.f = exp(x); break;
    case TJ_OP_EXP2: out.f = exp2(x); break;
    case TJ_OP_LOG: out.f = log(g); break;
    case TJ_OP_LOG2: out.f = log2(g); break;
    case TJ_OP_RSQRT: out.f = 1 / sqrt(g); break;
    case TJ_OP_SIN: out.f = sin(x); break;
    case TJ_OP_COS: out.f = cos(x); break;
    case TJ_OP_TANH: out.f = tanh(x); break;
    case TJ_OP_ERF: out.f = erf(x); break;
    case TJ_OP_RINT: out.f = rint(x); break;
    case TJ_OP_ROUND: out.f = round(x); break;
    case TJ_OP_TRUNC: out.f = trunc(x); break;
    case TJ_OP_LOG1P: out.f = log1p(fabs(x)); break;
    case TJ_OP_EXPM1: out.f = expm1(x); break;
    default: out.f = 1 / (1 + exp(-x)); break;
    }
    out.f = tl_round(t, out.f);
    return out;
}

static tl_num fz_ref_cast(tj_dtype from, tj_dtype to, tl_num a)
{
    tl_num out = {0, 0};
    if (from == to)
        return a;
    if (fz_is_float(to)) {
        out.f = tl_round(to, fz_is_float(from) ? a.f
                                : from == TJ_U64 ? (double)(uint64_t)a.i : (double)a.i);
        return out;
    }
    if (to == TJ_I1) {
        out.i = fz_is_float(from) ? a.f != 0 : a.i != 0;
        return out;
    }
    if (!fz_is_float(from)) {
        out.i = tl_wrap(to, a.i);
        return out;
    }
    double x = trunc(a.f); /* saturating */
    if (to == TJ_U64) {
        out.i = x <= 0 ? 0 : x >= 0x1p64 ? -1 : (int64_t)(uint64_t)x;
    } else {
        double lo = (double)tl_int_min(to), hi = (double)tl_int_max(to);
        out.i = x <= lo ? tl_int_min(to) : x >= hi ? tl_int_max(to) : (int64_t)x;
    }
    return out;
}

/* Reductions of n elements (sum, max, min, argmax, argmin; propagate:
 * .propagate_nan), and the running sums of cumsum in place. */
static tl_num fz_ref_reduce(int sub, int propagate, tj_dtype from, tj_dtype to, const tl_num *x, int n)
{
    tl_num acc = x[0];
    int at = 0;
    if (sub == TJ_REDUCE_SUM) {
        double f = 0;
        uint64_t s = 0;
        for (int k = 0; k < n; k++)
            f += x[k].f, s += (uint64_t)x[k].i;
        acc.f = tl_round(to, f);
        acc.i = tl_wrap(to, (int64_t)s);
        return acc;
    }
    int is_max = sub == TJ_REDUCE_MAX || sub == TJ_REDUCE_ARGMAX;
    if (sub == TJ_REDUCE_MAX || sub == TJ_REDUCE_MIN) {
        for (int k = 1; k < n; k++)
            acc = fz_ref_minmax(is_max, propagate, from, acc, x[k]);
        return acc;
    }
    /* argmax/argmin: the first extreme; NaNs ignored (all NaN: 0), or the
     * first NaN */
    int fl = fz_is_float(from), found = 0;
    for (int k = 0; k < n; k++) {
        if (fl && isnan(x[k].f)) {
            if (propagate)
                return tl_int(k);
            continue;
        }
        if (!found || fz_order_less(from, is_max ? acc : x[k], is_max ? x[k] : acc))
            acc = x[k], at = k;
        found = 1;
    }
    return tl_int(at);
}

static void fz_ref_cumsum(tj_dtype t, tl_num *x, int n)
{
    double f = 0;
    uint64_t s = 0;
    for (int k = 0; k < n; k++) {
        f += x[k].f, s += (uint64_t)x[k].i;
        x[k].f = tl_round(t, f);
        x[k].i = tl_wrap(t, (int64_t)s);
    }
}

static tl_num fz_ref_const(const fz_op *o)
{
    return fz_is_float(o->dt) ? tl_flt(o->fconst) : tl_int(o->iconst);
}

/* Runs program p for program id pid: vals[k] gets op k's value. */
static void fz_ref_run(const fz_prog *p, const fz_inputs *in, int pid, fz_ref_val *vals)
{
    const int R = p->R;
    for (int k = 0; k < p->nops; k++) {
        const fz_op *o = &p->op[k];
        const fz_op *A = o->a >= 0 ? &p->op[o->a] : NULL, *B = o->b >= 0 ? &p->op[o->b] : NULL;
        const fz_op *Cc = o->c >= 0 ? &p->op[o->c] : NULL;
        fz_ref_val *v = &vals[k];
        int rows = o->scalar ? 1 : o->r, cols = o->scalar ? 1 : o->cdim;
        tl_num tmp[FZ_MAXTILE];
        for (int i = 0; i < rows; i++) {
            for (int j = 0; j < cols; j++) {
                tl_num *e = &v->e[i * cols + j];
                int grow = pid * R + i, gcol = j;
                switch (o->kind) {
                case FZ_LOAD: case FZ_LOAD_ROW: case FZ_LOAD_COL: {
                    int ok, idx;
                    if (o->kind == FZ_LOAD)
                        ok = grow < in->nrows && gcol < in->ncols, idx = grow * in->ncols + gcol;
                    else if (o->kind == FZ_LOAD_ROW)
                        ok = gcol < in->ncols, idx = gcol;
                    else
                        ok = grow < in->nrows, idx = grow;
                    if (o->kind == FZ_LOAD && o->sub == 2)
                        ok = ok && fz_elem(B, &vals[o->b], i, j).i;
                    tl_num other = o->kind == FZ_LOAD && o->sub == 1 ? (tl_num){0, 0} : fz_ref_const(o);
                    *e = ok ? tl_get((tj_dtype)o->in, in->in[o->in], (size_t)idx) : other;
                    break;
                }
                case FZ_CONST: case FZ_FULL: *e = fz_ref_const(o); break;
                case FZ_PARAM: *e = o->sub ? tl_int(in->si) : tl_flt(in->sf); break;
                case FZ_PID: *e = tl_int(pid); break;
                case FZ_ROW_IDX: *e = tl_int(grow); break;
                case FZ_COL_IDX: *e = tl_int(gcol); break;
                case FZ_BIN: { /* operands of other dtypes met by promotion */
                    tl_num x = fz_ref_cast(A->dt, o->dt, fz_elem(A, &vals[o->a], i, j));
                    tl_num y = B ? fz_ref_cast(B->dt, o->dt, fz_elem(B, &vals[o->b], i, j))
                                 : (fz_is_float(o->dt) ? tl_flt(o->fconst) : tl_int(o->iconst));
                    *e = fz_ref_bin(o->sub, o->dt, x, y, !B, o->propagate);
                    break;
                }
                case FZ_UN: *e = fz_ref_un(o->sub, o->dt, fz_elem(A, &vals[o->a], i, j)); break;
                case FZ_FMA: {
                    double x = fz_elem(A, &vals[o->a], i, j).f, y = fz_elem(B, &vals[o->b], i, j).f;
                    double z = fz_elem(Cc, &vals[o->c], i, j).f;
                    *e = tl_flt(o->dt == TJ_F64 ? fma(x, y, z)
                                : tl_round(o->dt, fmaf((float)x, (float)y, (float)z)));
                    break;
                }
                case FZ_CMP: {
                    tl_num x = fz_elem(A, &vals[o->a], i, j), y = fz_elem(B, &vals[o->b], i, j);
                    tj_dtype t = (tj_dtype)o->in;
                    int eq = fz_is_float(t) ? x.f == y.f : x.i == y.i;
                    int lt = fz_less(t, x, y), r;
                    switch (o->sub) {
                    case TJ_OP_EQ: r = eq; break;
                    case TJ_OP_NE: r = !eq; break;
                    case TJ_OP_LT: r = lt; break;
                    case TJ_OP_LE: r = lt || eq; break;
                    case TJ_OP_GT: r = !lt && !eq; break;
                    default: r = !lt; break;
                    }
                    *e = tl_int(r);
                    break;
                }
                case FZ_WHERE:
                    *e = fz_elem(A, &vals[o->a], i, j).i ? fz_elem(B, &vals[o->b], i, j)
                                                        : fz_elem(Cc, &vals[o->c], i, j);
                    break;
                case FZ_CAST: *e = fz_ref_cast(A->dt, o->dt, fz_elem(A, &vals[o->a], i, j)); break;
                case FZ_REDUCE: {
                    int n = o->axis == 0 ? A->r : A->cdim;
                    for (int q = 0; q < n; q++)
                        tmp[q] = o->axis == 0 ? fz_elem(A, &vals[o->a], q, j) : fz_elem(A, &vals[o->a], i, q);
                    *e = fz_ref_reduce(o->sub, o->propagate, A->dt, o->dt, tmp, n);
                    break;
                }
                case FZ_CUMSUM: {
                    int at = o->axis == 0 ? i : j;
                    for (int q = 0; q <= at; q++)
                        tmp[q] = o->axis == 0 ? fz_elem(A, &vals[o->a], q, j) : fz_elem(A, &vals[o->a], i, q);
                    fz_ref_cumsum(o->dt, tmp, at + 1);
                    *e = tmp[at];
                    break;
                }
                case FZ_FLAT_REDUCE: case FZ_FLAT_CUMSUM: {
                    int n = A->r * A->cdim, at = i * cols + j;
                    for (int q = 0; q < n; q++)
                        tmp[q] = vals[o->a].e[q];
                    if (o->kind == FZ_FLAT_REDUCE) {
                        *e = fz_ref_reduce(o->sub, o->propagate, A->dt, o->dt, tmp, n);
                    } else {
                        fz_ref_cumsum(o->dt, tmp, at + 1);
                        *e = tmp[at];
                    }
                    break;
                }
                case FZ_TRANS: *e = fz_elem(A, &vals[o->a], j, i); break;
                case FZ_PERMUTE3: {
                    int half = cols / 2;
                    *e = fz_elem(A, &vals[o->a], i, (j % half) * 2 + j / half);
                    break;
                }
                case FZ_BCAST: *e = fz_elem(A, &vals[o->a], i, j); break;
                case FZ_FOR: {
                    tl_num acc = fz_elem(A, &vals[o->a], i, j), y = fz_elem(B, &vals[o->b], i, j);
                    for (int it = 0; it < in->trips; it++) {
                        acc = fz_ref_bin(o->sub, o->dt, acc, y, 0, 0);
                        if (o->axis)
                            acc = fz_ref_bin(TJ_OP_ADD, o->dt, acc, fz_ref_cast(TJ_I32, o->dt, tl_int(it)), 0, 0);
                    }
                    *e = acc;
                    break;
                }
                case FZ_IF: {
                    tl_num x = fz_elem(A, &vals[o->a], i, j), y = fz_elem(B, &vals[o->b], i, j);
                    int taken = pid + in->trips < o->iconst;
                    *e = fz_ref_bin(taken ? o->sub : o->sub2, o->dt, x, y, 0, 0);
                    break;
                }
                case FZ_BAD: break;
                }
            }
        }
    }
}

#endif
