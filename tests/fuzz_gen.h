/* SPDX-License-Identifier: MIT */
/*
 * fuzz_gen.h — draws a random well-formed tile program (fuzz_prog.h) from
 * a seed.
 *
 * The generator keeps a pool of the values made so far and adds one op at
 * a time over them, preferring recent values so that chains grow deep. A
 * draw that does not fit (an overflowing float, a comparison of inexact
 * values, a shape that a transpose cannot take) is dropped and drawn
 * again. Each op's operands are first cast, by explicit FZ_CAST ops, to
 * the op's dtype, so every op of every dtype is exercised without relying
 * on the promotion rules; C literals (which adopt the other operand's
 * dtype) appear as operands too. Float zeros come with either sign, and a
 * float load's .other is now and then NaN (fuzz_prog.h says where such a
 * value may go); float minimum, maximum and reductions take
 * .propagate_nan now and then.
 */
#ifndef TJIT_TESTS_FUZZ_GEN_H
#define TJIT_TESTS_FUZZ_GEN_H

#include "fuzz_prog.h"
#include "math_bounds.h"

typedef struct fz_gen {
    gen_rng r;
    fz_prog *p;
} fz_gen;

static const tj_dtype fz_float_dts[] = {TJ_F16, TJ_BF16, TJ_F32, TJ_F64, TJ_F32};
static const tj_dtype fz_int_dts[] = {TJ_I8, TJ_I16, TJ_I32, TJ_I64, TJ_U8,
                                      TJ_U16, TJ_U32, TJ_U64, TJ_I32};

static tj_dtype fz_random_dtype(fz_gen *g, int floats)
{
    return floats ? fz_float_dts[gen_below(&g->r, (int)TL_COUNT(fz_float_dts))]
                  : fz_int_dts[gen_below(&g->r, (int)TL_COUNT(fz_int_dts))];
}

static int fz_push(fz_gen *g, fz_op o)
{
    if (g->p->nops >= FZ_MAXOPS)
        return -1;
    g->p->op[g->p->nops] = o;
    return g->p->nops++;
}

static const fz_op *fz_val(const fz_gen *g, int v) { return &g->p->op[v]; }

/* Dims of an element-wise result of a and b. */
static void fz_combine(fz_op *out, const fz_op *a, const fz_op *b)
{
    out->scalar = a->scalar && b->scalar;
    out->r = a->r > b->r ? a->r : b->r;
    out->cdim = a->cdim > b->cdim ? a->cdim : b->cdim;
}

/* A float k/4 in [-lim, lim] (exact in every float dtype), a zero of
 * either sign. */
static double fz_quarter(fz_gen *g, int lim)
{
    double x = (gen_below(&g->r, 8 * lim + 1) - 4 * lim) / 4.0;
    return x == 0 && gen_below(&g->r, 2) ? -0.0 : x;
}

/* A constant of dtype t: floats k/4 in [-4, 4], integers small or
 * anywhere in the dtype's range. */
static void fz_random_const(fz_gen *g, tj_dtype t, fz_op *o)
{
    if (fz_is_float(t)) {
        o->fconst = fz_quarter(g, 4);
        o->mag = FZ_INPUT_MAG;
    } else if (t == TJ_I1) {
        o->iconst = gen_below(&g->r, 2);
    } else {
        int64_t v = gen_below(&g->r, 4) == 0 ? (int64_t)gen_next(&g->r) : gen_below(&g->r, 200) - 100;
        o->iconst = tl_wrap(t, v);
    }
}

static int fz_leaf(fz_gen *g)
{
    const fz_prog *p = g->p;
    fz_op o = {.kind = FZ_LOAD, .a = -1, .b = -1, .c = -1, .r = p->R, .cdim = p->C};
    int pick = gen_below(&g->r, 16);
    tj_dtype t = (tj_dtype)gen_below(&g->r, TL_NCOMPUTE_DTYPES);
    o.dt = t;
    o.in = t;
    if (pick < 6) {
        o.kind = FZ_LOAD;
        o.sub = gen_below(&g->r, 3);
        if (o.sub == 2) { /* a mask from the program: a recent i1 value */
            o.sub = 0;
            for (int k = p->nops - 1; k >= 0 && k >= p->nops - 6; k--)
                if (p->op[k].dt == TJ_I1)
                    o.sub = 2, o.b = k;
        }
    } else if (pick < 8) {
        o.kind = pick == 6 ? FZ_LOAD_ROW : FZ_LOAD_COL;
        if (pick == 6)
            o.r = 1;
        else
            o.cdim = 1;
    } else if (pick < 10) {
        o.kind = pick == 8 ? FZ_CONST : FZ_FULL;
        if (o.kind == FZ_CONST || gen_below(&g->r, 4) == 0) {
            o.scalar = 1, o.r = o.cdim = 1;
        } else {
            o.r = gen_below(&g->r, 2) ? p->R : 1;
            o.cdim = gen_below(&g->r, 2) ? p->C : 1;
        }
    } else if (pick < 12) {
        o.kind = FZ_PARAM;
        o.sub = pick - 10;
        o.dt = o.sub ? TJ_I32 : TJ_F32;
        o.scalar = 1, o.r = o.cdim = 1;
    } else if (pick == 12) {
        o.kind = FZ_PID, o.dt = TJ_I32, o.scalar = 1, o.r = o.cdim = 1;
    } else {
        o.kind = pick == 13 ? FZ_ROW_IDX : FZ_COL_IDX;
        o.dt = TJ_I32;
        if (o.kind == FZ_ROW_IDX)
            o.cdim = 1;
        else
            o.r = 1;
    }
    fz_random_const(g, o.dt, &o);
    o.mag = fz_is_float(o.dt) ? FZ_INPUT_MAG : 0;
    int has_other = (o.kind == FZ_LOAD && o.sub != 1) || o.kind == FZ_LOAD_ROW || o.kind == FZ_LOAD_COL;
    /* NaN where the load is masked off: past the edges, and where the
     * program's mask is false (in bounds, so stored) */
    if (has_other && fz_is_float(o.dt) && gen_below(&g->r, o.sub == 2 ? 2 : 5) == 0)
        o.fconst = NAN, o.nan = 1;
    return fz_push(g, o);
}

/* Value v as dtype t: v itself, or a new FZ_CAST (behind a mod 97 where an
 * integer becomes a float, so that float ops stay in range). -1 where the
 * cast would not be exact on an inexact float value. */
static int fz_cast(fz_gen *g, int v, tj_dtype t)
{
    if (v < 0)
        return -1;
    fz_op x = *fz_val(g, v);
    if (x.dt == t)
        return v;
    if (fz_is_float(x.dt) && !fz_is_float(t) && (x.err > 0 || x.nan))
        return -1;
    if (fz_is_float(t) && fz_is_float(x.dt) && x.mag > fz_limit(t))
        return -1;
    if (fz_is_float(t) && fz_is_int(x.dt)) {
        fz_op m = x;
        m.kind = FZ_BIN, m.sub = TJ_OP_MOD, m.a = v, m.b = -1, m.iconst = 97;
        v = fz_push(g, m);
        if (v < 0)
            return -1;
        x.mag = 97;
    }
    fz_op o = x;
    o.kind = FZ_CAST, o.a = v, o.b = o.c = -1, o.dt = t;
    if (fz_is_float(t)) {
        if (!fz_is_float(x.dt))
            o.mag = x.dt == TJ_I1 ? 1 : 97, o.err = 0;
        else
            o.err = fz_rounding(t, x.err, x.mag);
    } else {
        o.mag = 0, o.err = 0;
    }
    return fz_push(g, o);
}

static int fz_pick(fz_gen *g)
{
    int n = g->p->nops;
    if (gen_below(&g->r, 3))
        return n - 1 - gen_below(&g->r, n < 3 ? n : 3);
    return gen_below(&g->r, n);
}

/* Triton's promotion of two dtypes, as tjit's builder does it. */
static tj_dtype fz_promote(tj_dtype a, tj_dtype b)
{
    if (a == b)
        return a;
    if (fz_is_float(a) && fz_is_float(b)) {
        int ba = tl_bits(a), bb = tl_bits(b);
        return ba == bb ? TJ_F32 : ba > bb ? a : b;
    }
    if (fz_is_float(a) || fz_is_float(b))
        return fz_is_float(a) ? a : b;
    if (a == TJ_I1 || b == TJ_I1)
        return a == TJ_I1 ? b : a;
    if (tl_bits(a) != tl_bits(b))
        return tl_bits(a) > tl_bits(b) ? a : b;
    return tl_is_unsigned(a) ? a : b;
}

/* How far tjit's fn of dtype t may be from the reference's, in units of
 * the result's magnitude: math_bounds.h's ulps (the larger of the CPU's
 * and the GPU's), and half an ulp for the reference's rounding. */
static double fz_math_ulps(int fn, tj_dtype t)
{
    int d = tl_dt_index(t);
    double ulps = tl_cpu_bound[fn][d] > tl_gpu_bound[fn][d] ? tl_cpu_bound[fn][d] : tl_gpu_bound[fn][d];
    return (ulps + 0.5) * tl_eps(t);
}

/* A binary op over a and b in dtype t (b < 0: a C literal). Now and then
 * the operands are left to meet by promotion instead of explicit casts,
 * where that converts exactly (not integers to floats) and the op has no
 * guard. */
static int fz_binary(fz_gen *g, int sub, tj_dtype t, int a, int b)
{
    int literal = b < 0;
    int plain = sub == TJ_OP_ADD || sub == TJ_OP_SUB || sub == TJ_OP_MUL || sub == TJ_OP_AND ||
                sub == TJ_OP_OR || sub == TJ_OP_XOR || sub == TJ_OP_MINIMUM || sub == TJ_OP_MAXIMUM;
    int implicit = 0;
    if (!literal && plain && gen_below(&g->r, 3) == 0) {
        tj_dtype da = fz_val(g, a)->dt, db = fz_val(g, b)->dt, pt = fz_promote(da, db);
        int bitwise = sub == TJ_OP_AND || sub == TJ_OP_OR || sub == TJ_OP_XOR;
        implicit = fz_is_float(da) == fz_is_float(db) && pt != TJ_I1 && (!bitwise || !fz_is_float(pt));
        if (implicit)
            t = pt;
    }
    if (!implicit) {
        a = fz_cast(g, a, t);
        if (!literal)
            b = fz_cast(g, b, t);
    }
    if (a < 0 || (!literal && b < 0))
        return -1;
    fz_op o = *fz_val(g, a);
    const fz_op *A = fz_val(g, a);
    int minmax = sub == TJ_OP_MINIMUM || sub == TJ_OP_MAXIMUM;
    if (!minmax && (A->nan || (!literal && fz_val(g, b)->nan)))
        return -1;
    fz_op lit = {.scalar = 1, .r = 1, .cdim = 1, .dt = t};
    if (b < 0) {
        if (fz_is_float(t) && minmax && gen_below(&g->r, 3) == 0)
            lit.fconst = gen_below(&g->r, 2) ? -0.0 : 0.0, lit.mag = 2; /* max(x, 0), as ReLU */
        else if (fz_is_float(t))
            lit.fconst = fz_quarter(g, 2), lit.mag = 2;
        else
            lit.iconst = gen_below(&g->r, 100);
    }
    const fz_op *B = b >= 0 ? fz_val(g, b) : &lit;
    o.kind = FZ_BIN, o.sub = sub, o.a = a, o.b = b, o.c = -1, o.dt = t;
    o.iconst = lit.iconst, o.fconst = lit.fconst;
    o.nan = A->nan || B->nan;
    o.propagate = fz_is_float(t) && minmax && gen_below(&g->r, 2);
    fz_combine(&o, A, B);
    if (fz_is_float(t)) {
        double lim = fz_limit(t);
        switch (sub) {
        case TJ_OP_ADD: case TJ_OP_SUB:
            o.mag = A->mag + B->mag;
            o.err = fz_rounding(t, A->err + B->err, o.mag);
            break;
        case TJ_OP_MUL:
            o.mag = A->mag * B->mag;
            o.err = fz_rounding(t, A->err * B->mag + B->err * A->mag + A->err * B->err, o.mag);
            break;
        case TJ_OP_DIV: /* a / (|b| + 1) */
            o.mag = A->mag;
            o.err = fz_rounding(t, A->err + A->mag * B->err, o.mag);
            break;
        case TJ_OP_MOD: /* a % (|b| + 1): exact, but it jumps */
            if (A->err > 0 || B->err > 0)
                return -1;
            o.mag = A->mag + B->mag + 1, o.err = 0;
            break;
        case TJ_OP_POW: { /* pow(|a| + 1, b): x^y grows by y x^(y-1) dx and x^y ln x dy */
            double x = A->mag + 1, y = B->mag;
            if (y > 4)
                return -1;
            double xerr = A->err > 0 ? A->err + tl_eps(t) * x : 0;
            o.mag = pow(x, y);
            o.err = 2 * o.mag * (y * xerr + log(x) * B->err) + fz_math_ulps(TL_POW, t) * o.mag;
            break;
        }
        default: /* minimum, maximum */
            o.mag = A->mag > B->mag ? A->mag : B->mag;
            o.err = A->err > B->err ? A->err : B->err;
            break;
        }
        if (o.mag > lim)
            return -1;
    } else {
        o.mag = o.err = 0;
    }
    return fz_push(g, o);
}

static int fz_float_op(fz_gen *g)
{
    int a = fz_pick(g), b = gen_below(&g->r, 5) ? fz_pick(g) : -1;
    const fz_op *A = fz_val(g, a);
    tj_dtype t = fz_is_float(A->dt) && gen_below(&g->r, 2) ? A->dt : fz_random_dtype(g, 1);
    int what = gen_below(&g->r, 10);
    if (what < 6) {
        static const int subs[] = {TJ_OP_ADD, TJ_OP_SUB, TJ_OP_MUL, TJ_OP_DIV, TJ_OP_MOD,
                                   TJ_OP_MINIMUM, TJ_OP_MAXIMUM, TJ_OP_MINIMUM, TJ_OP_MAXIMUM,
                                   TJ_OP_POW};
        return fz_binary(g, subs[gen_below(&g->r, (int)TL_COUNT(subs))], t, a, b);
    }
    a = fz_cast(g, a, t);
    if (a < 0 || fz_val(g, a)->nan)
        return -1;
    fz_op o = *fz_val(g, a);
    A = fz_val(g, a);
    o.a = a, o.b = o.c = -1;
    if (what == 6) { /* fma */
        int b2 = fz_cast(g, fz_pick(g), t), c2 = fz_cast(g, fz_pick(g), t);
        if (b2 < 0 || c2 < 0)
            return -1;
        A = fz_val(g, a);
        const fz_op *B = fz_val(g, b2), *C = fz_val(g, c2);
        o = *A;
        if (B->nan || C->nan)
            return -1;
        o.kind = FZ_FMA, o.a = a, o.b = b2, o.c = c2;
        fz_combine(&o, A, B);
        fz_combine(&o, &o, C);
        o.mag = A->mag * B->mag + C->mag;
        o.err = A->err * B->mag + B->err * A->mag + A->err * B->err + C->err;
        /* f16/bf16 fma is an f32 fma rounded: two roundings */
        o.err = (t == TJ_F16 || t == TJ_BF16) ? o.err + tl_eps(t) * o.mag : fz_rounding(t, o.err, o.mag);
        return o.mag > fz_limit(t) ? -1 : fz_push(g, o);
    }
    o.kind = FZ_UN;
    /* Math functions differ from the reference by a few ulps of f32/f64,
     * and f16/bf16 results by one more rounding. */
    double ulps = 4 * (t == TJ_F64 ? 0x1p-52 : 0x1p-23) + (t == TJ_F16 || t == TJ_BF16 ? tl_eps(t) : 0);
    switch (gen_below(&g->r, 19)) {
    case 0: o.sub = TJ_OP_NEG; break;
    case 1: o.sub = TJ_OP_ABS; break;
    case 2: case 3:
        if (A->err > 0)
            return -1;
        o.sub = gen_below(&g->r, 2) ? TJ_OP_FLOOR : TJ_OP_CEIL;
        o.mag = A->mag + 1;
        break;
    case 4: /* sqrt(|a| + 1): correctly rounded */
        o.sub = TJ_OP_SQRT, o.mag = sqrt(A->mag + 1);
        o.err = fz_rounding(t, A->err, o.mag);
        break;
    case 5:
        if (A->mag > 9)
            return -1;
        o.sub = TJ_OP_EXP, o.mag = exp(A->mag);
        o.err = o.mag * A->err + ulps * o.mag;
        break;
    case 6:
        if (A->mag > 13)
            return -1;
        o.sub = TJ_OP_EXP2, o.mag = exp2(A->mag);
        o.err = 0.7 * o.mag * A->err + ulps * o.mag;
        break;
    case 7: /* log(|a| + 1) */
        o.sub = TJ_OP_LOG, o.mag = log(A->mag + 1) + 1;
        o.err = A->err + ulps * o.mag;
        break;
    case 8: /* log2(|a| + 1) */
        o.sub = TJ_OP_LOG2, o.mag = log2(A->mag + 1) + 1;
        o.err = 1.5 * A->err + ulps * o.mag;
        break;
    case 9: /* rsqrt(|a| + 1) */
        o.sub = TJ_OP_RSQRT, o.mag = 1;
        o.err = A->err / 2 + ulps;
        break;
    case 10: case 11: /* sin, cos: |x| within the range math_bounds.h measures */
        if (A->mag > 1e4)
            return -1;
        o.sub = gen_below(&g->r, 2) ? TJ_OP_SIN : TJ_OP_COS, o.mag = 1;
        o.err = A->err + fz_math_ulps(o.sub == TJ_OP_SIN ? TL_SIN : TL_COS, t);
        break;
    case 12: o.sub = TJ_OP_TANH, o.mag = 1, o.err = A->err + fz_math_ulps(TL_TANH, t); break;
    case 13: o.sub = TJ_OP_ERF, o.mag = 1, o.err = 1.13 * A->err + fz_math_ulps(TL_ERF, t); break;
    case 14: case 15: /* rint, round, trunc: exact, on exact inputs only (a step function) */
        if (A->err > 0)
            return -1;
        o.sub = gen_below(&g->r, 3) == 0 ? TJ_OP_RINT : gen_below(&g->r, 2) ? TJ_OP_ROUND : TJ_OP_TRUNC;
        o.mag = A->mag + 1;
        break;
    case 16: /* log1p(|a|) */
        o.sub = TJ_OP_LOG1P, o.mag = log1p(A->mag) + 1;
        o.err = A->err + fz_math_ulps(TL_LOG1P, t) * o.mag;
        break;
    case 17:
        if (A->mag > 9)
            return -1;
        o.sub = TJ_OP_EXPM1, o.mag = exp(A->mag);
        o.err = o.mag * A->err + fz_math_ulps(TL_EXPM1, t) * o.mag;
        break;
    default:
        o.sub = TJ_OP_SIGMOID, o.mag = 1;
        o.err = A->err / 4 + 2 * ulps;
        break;
    }
    if (o.mag > fz_limit(t))
        return -1;
    return fz_push(g, o);
}

static int fz_int_op(fz_gen *g)
{
    int a = fz_pick(g), b = gen_below(&g->r, 5) ? fz_pick(g) : -1;
    const fz_op *A = fz_val(g, a);
    if (A->dt == TJ_I1 && gen_below(&g->r, 2)) { /* logic on i1 */
        static const int subs[] = {TJ_OP_AND, TJ_OP_OR, TJ_OP_XOR};
        if (gen_below(&g->r, 4) == 0) {
            fz_op o = *A;
            o.kind = FZ_UN, o.sub = TJ_OP_NOT, o.a = a, o.b = o.c = -1;
            return fz_push(g, o);
        }
        return fz_binary(g, subs[gen_below(&g->r, 3)], TJ_I1, a, b < 0 ? fz_pick(g) : b);
    }
    tj_dtype t = fz_is_int(A->dt) && gen_below(&g->r, 2) ? A->dt : fz_random_dtype(g, 0);
    if (gen_below(&g->r, 6) == 0) {
        a = fz_cast(g, a, t);
        if (a < 0)
            return -1;
        fz_op o = *fz_val(g, a);
        static const int subs[] = {TJ_OP_NEG, TJ_OP_ABS, TJ_OP_NOT};
        o.kind = FZ_UN, o.sub = subs[gen_below(&g->r, 3)], o.a = a, o.b = o.c = -1;
        return fz_push(g, o);
    }
    static const int subs[] = {TJ_OP_ADD, TJ_OP_SUB, TJ_OP_MUL, TJ_OP_FLOORDIV, TJ_OP_MOD,
                               TJ_OP_AND, TJ_OP_OR, TJ_OP_XOR, TJ_OP_SHL, TJ_OP_SHR,
                               TJ_OP_MINIMUM, TJ_OP_MAXIMUM};
    return fz_binary(g, subs[gen_below(&g->r, (int)TL_COUNT(subs))], t, a, b);
}

/* A comparison (an i1), or a where that it picks by. */
static int fz_select(fz_gen *g)
{
    int a = fz_pick(g), b = fz_pick(g);
    for (int again = 0; again < 3 && b == a; again++) /* a value against itself is constant */
        b = fz_pick(g);
    const fz_op *A = fz_val(g, a), *B = fz_val(g, b);
    if (A->err > 0 || B->err > 0 || A->nan || B->nan)
        return -1;
    tj_dtype t = A->dt;
    a = fz_cast(g, a, t), b = fz_cast(g, b, t);
    if (a < 0 || b < 0)
        return -1;
    A = fz_val(g, a), B = fz_val(g, b);
    fz_op o = {.kind = FZ_CMP, .sub = TJ_OP_EQ + gen_below(&g->r, 6), .a = a, .b = b, .c = -1,
               .in = t, .dt = TJ_I1};
    fz_combine(&o, A, B);
    int cond = fz_push(g, o);
    if (cond < 0 || gen_below(&g->r, 3) == 0)
        return cond;
    int x = fz_pick(g), y = fz_pick(g);
    tj_dtype xt = fz_val(g, x)->dt;
    if (fz_is_float(xt) && gen_below(&g->r, 3) == 0) { /* NaN where the condition is false */
        fz_op nan = {.kind = FZ_CONST, .a = -1, .b = -1, .c = -1, .dt = xt, .scalar = 1, .r = 1,
                     .cdim = 1, .fconst = NAN, .nan = 1};
        y = fz_push(g, nan);
    }
    x = fz_cast(g, x, xt), y = fz_cast(g, y, xt);
    if (x < 0 || y < 0)
        return -1;
    const fz_op *X = fz_val(g, x), *Y = fz_val(g, y);
    fz_op w = *X;
    w.kind = FZ_WHERE, w.a = cond, w.b = x, w.c = y;
    fz_combine(&w, fz_val(g, cond), X);
    fz_combine(&w, &w, Y);
    w.mag = X->mag > Y->mag ? X->mag : Y->mag;
    w.err = X->err > Y->err ? X->err : Y->err;
    w.nan = X->nan || Y->nan;
    return fz_push(g, w);
}

static int fz_narrow_int(tj_dtype t)
{
    return t == TJ_I1 || t == TJ_I8 || t == TJ_I16 || t == TJ_U8 || t == TJ_U16;
}

/* A reduction or cumsum along an axis, or of the whole tile flattened. */
static int fz_reduction(fz_gen *g)
{
    int a = fz_pick(g);
    if (gen_below(&g->r, 2)) /* prefer a recent value with NaNs: the rules under test */
        for (int k = g->p->nops - 1; k >= 0 && k >= g->p->nops - 8; k--)
            if (fz_val(g, k)->nan && !fz_val(g, k)->scalar) {
                a = k;
                break;
            }
    const fz_op *A = fz_val(g, a);
    if (A->scalar)
        return -1;
    fz_op o = *A;
    o.a = a, o.b = o.c = -1;
    int shape = gen_below(&g->r, 4); /* 0, 1: along an axis; 2: cumsum; 3: flattened */
    o.kind = shape < 2 ? FZ_REDUCE : shape == 2 ? FZ_CUMSUM
             : gen_below(&g->r, 2) ? FZ_FLAT_REDUCE : FZ_FLAT_CUMSUM;
    o.sub = o.kind == FZ_CUMSUM || o.kind == FZ_FLAT_CUMSUM ? TJ_REDUCE_SUM
            : A->nan ? 1 + gen_below(&g->r, 4) : gen_below(&g->r, 5);
    o.axis = gen_below(&g->r, 2);
    int flat = o.kind == FZ_FLAT_REDUCE || o.kind == FZ_FLAT_CUMSUM;
    int extent = flat ? A->r * A->cdim : o.axis == 0 ? A->r : A->cdim;
    int is_sum = o.sub == TJ_REDUCE_SUM;
    int is_arg = o.sub == TJ_REDUCE_ARGMAX || o.sub == TJ_REDUCE_ARGMIN;
    if (is_arg && A->err > 0)
        return -1; /* the index of an extreme of inexact values is not defined */
    if (is_sum && A->nan)
        return -1;
    if (A->dt == TJ_I1) {
        a = fz_cast(g, a, TJ_I32);
        if (a < 0)
            return -1;
        o.a = a, o.dt = TJ_I32;
        A = fz_val(g, a);
    }
    if (is_sum && fz_narrow_int(o.dt)) /* they add in 32 bits, as Triton's */
        o.dt = tl_is_unsigned(o.dt) ? TJ_U32 : TJ_I32;
    o.propagate = !is_sum && fz_is_float(o.dt) && gen_below(&g->r, 2);
    o.nan = A->nan && !is_arg;
    if (is_arg)
        o.dt = TJ_I32;
    if (is_sum && fz_is_float(o.dt)) {
        double k = extent;
        o.err = k * A->err + 2 * k * k * tl_eps(o.dt) * A->mag;
        o.mag = A->mag * k;
        if (o.mag > fz_limit(o.dt))
            return -1;
    }
    if (!fz_is_float(o.dt))
        o.mag = o.err = 0;
    if (o.kind == FZ_REDUCE) {
        if (o.axis == 0)
            o.r = 1;
        else
            o.cdim = 1;
    } else if (o.kind == FZ_FLAT_REDUCE) {
        o.scalar = 1, o.r = o.cdim = 1;
    }
    return fz_push(g, o);
}

static int fz_shape_op(fz_gen *g)
{
    const fz_prog *p = g->p;
    int a = fz_pick(g);
    fz_op o = *fz_val(g, a);
    o.a = a, o.b = o.c = -1;
    if (gen_below(&g->r, 3) == 0 && !o.scalar && o.cdim % 2 == 0) {
        o.kind = FZ_PERMUTE3;
        return fz_push(g, o);
    }
    if (gen_below(&g->r, 2) && !o.scalar) {
        int r = o.cdim, c = o.r; /* transposed dims must again be (1|R, 1|C) */
        if ((r != 1 && r != p->R) || (c != 1 && c != p->C))
            return -1;
        o.kind = FZ_TRANS, o.r = r, o.cdim = c;
        return fz_push(g, o);
    }
    o.kind = FZ_BCAST, o.scalar = 0, o.r = p->R, o.cdim = p->C;
    return fz_push(g, o);
}

/* TJ_FOR over trips (0..3) iterations, or TJ_IF on the program id. */
static int fz_control(fz_gen *g)
{
    int a = fz_pick(g), b = fz_pick(g);
    tj_dtype t = fz_val(g, a)->dt == TJ_I1 ? TJ_I32 : fz_val(g, a)->dt;
    a = fz_cast(g, a, t), b = fz_cast(g, b, t);
    if (a < 0 || b < 0)
        return -1;
    const fz_op *A = fz_val(g, a), *B = fz_val(g, b);
    if (A->nan || B->nan)
        return -1;
    fz_op o = *A;
    o.a = a, o.b = b, o.c = -1;
    fz_combine(&o, A, B);
    static const int float_subs[] = {TJ_OP_ADD, TJ_OP_SUB, TJ_OP_MINIMUM, TJ_OP_MAXIMUM};
    static const int int_subs[] = {TJ_OP_ADD, TJ_OP_SUB, TJ_OP_MUL, TJ_OP_XOR, TJ_OP_MINIMUM,
                                   TJ_OP_MAXIMUM};
    int fl = fz_is_float(t);
    o.sub = fl ? float_subs[gen_below(&g->r, 4)] : int_subs[gen_below(&g->r, 6)];
    o.sub2 = fl ? float_subs[gen_below(&g->r, 4)] : int_subs[gen_below(&g->r, 6)];
    if (gen_below(&g->r, 2)) {
        o.kind = FZ_FOR;
        o.axis = gen_below(&g->r, 2); /* also add the induction variable */
        double step = B->mag + (o.axis ? 3 : 0);
        o.mag = A->mag + 3 * step;
        o.err = fz_rounding(t, A->err + 3 * B->err, o.mag) * 3;
    } else {
        o.kind = FZ_IF;
        o.iconst = gen_below(&g->r, 5);
        o.mag = A->mag + B->mag;
        o.err = fz_rounding(t, A->err + B->err, o.mag);
    }
    if (fl && o.mag > fz_limit(t))
        return -1;
    if (!fl)
        o.mag = o.err = 0;
    return fz_push(g, o);
}

/* The well-formed program of a seed. */
static void fz_generate(int64_t seed, fz_prog *p)
{
    memset(p, 0, sizeof *p);
    fz_gen g = {{(uint64_t)seed ^ 0x6a09e667f3bcc908ull}, p};
    p->R = 1 << gen_below(&g.r, 5);  /* 1 .. 16 */
    p->C = 1 << gen_below(&g.r, 7);  /* 1 .. 64 */
    while (p->R * p->C > FZ_MAXTILE)
        p->C /= 2;
    p->bad = -1;
    fz_leaf(&g);
    fz_leaf(&g);
    int want = 4 + gen_below(&g.r, 14);
    for (int tries = 0; p->nops < want && p->nops < FZ_MAXOPS - 6 && tries < 400; tries++) {
        int save = p->nops, made;
        switch (gen_below(&g.r, 14)) {
        case 0: case 1: made = fz_leaf(&g); break;
        case 2: case 3: case 4: made = fz_float_op(&g); break;
        case 5: case 6: case 7: made = fz_int_op(&g); break;
        case 8: case 9: made = fz_select(&g); break;
        case 10: made = fz_cast(&g, fz_pick(&g), (tj_dtype)gen_below(&g.r, TL_NCOMPUTE_DTYPES)); break;
        case 11: made = fz_reduction(&g); break;
        case 12: made = fz_shape_op(&g); break;
        default: made = fz_control(&g); break;
        }
        if (made < 0)
            p->nops = save; /* drop the draw and the casts made for it */
    }
    /* The last value and a few others are stored, so that most ops are seen. */
    int extra = gen_below(&g.r, FZ_MAXSTORES);
    for (int s = 0; s <= extra; s++) {
        int v = s == 0 ? p->nops - 1 : gen_below(&g.r, p->nops), dup = 0;
        for (int q = 0; q < p->nstores; q++)
            dup |= p->store[q] == v;
        if (dup)
            continue;
        p->store[p->nstores] = v;
        p->slot[p->nstores++] = p->slots[p->op[v].dt]++;
    }
    p->store_mask = -1;
    int m = gen_below(&g.r, p->nops);
    if (gen_below(&g.r, 3) == 0 && p->op[m].dt == TJ_I1)
        p->store_mask = m;
}

#endif
