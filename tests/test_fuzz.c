/* SPDX-License-Identifier: MIT */
/*
 * test_fuzz.c — random tile programs against a C reference, and random
 * ill-formed ones against their error messages.
 *
 * One kernel, fuzz_program, takes an input and an output buffer of each of
 * the thirteen dtypes and five scalars (31 parameters); its constant SEED
 * picks the program its body builds. The program is data (fuzz_prog.h),
 * drawn from the seed by fuzz_gen.h: loads (masked, with ragged edges, of
 * whole tiles, rows and columns), constants, tj_full, scalar parameters,
 * program ids and indices; element-wise ops of every dtype with
 * broadcasting and C literals, math functions (tj_sin ... tj_pow among
 * them), minimum/maximum with and without .propagate_nan over signed zeros
 * and NaNs; comparisons, where, casts between all dtypes; reductions,
 * argmax/argmin and cumsum along either axis or of the flattened tile; transposes and broadcasts; TJ_FOR loops (half
 * of them written as TJ_WHILE loops) and TJ_IF branches; then masked stores of up to eight of its values, each to a
 * slot of the output buffer of its value's dtype. The body walks the list and emits the tj_* calls; the
 * host walks it again in C (fuzz_ref.h) and every output element must
 * match — exactly, except where a float bound allows a few ulps (math
 * functions, sums) — and every element not stored must still be poison.
 *
 * Every fourth program is ill-formed: one op of a random kind of mistake
 * (a broadcast that cannot be, a bitwise op on floats, a bad axis, a load
 * from an integer, a mask of the wrong shape, a value used outside its
 * TJ_IF, ...) is put at a random place, sometimes inside a TJ_IF or
 * TJ_FOR, with ops after it. The launch must fail with the status of that
 * kind and a message naming the kernel, the op and this file's line of
 * the bad call, which the body records as it emits it.
 *
 * On a GPU (tests/gpu/test_fuzz.gpu) each program also runs on the CPU and
 * the two devices' outputs must agree. The seed of each run is fresh and
 * printed (TJ_TEST_SEED replays a run, TJ_FUZZ_SEED one program: its
 * inputs are drawn from its seed too);
 * TJ_FUZZ_PROGRAMS sets the count (default 60), TJ_FUZZ_SECONDS runs for
 * that long instead.
 */
#include "testlib.h"
#include "fuzz_gen.h"
#include "fuzz_ref.h"

#include <time.h>

/* ---- ill-formed programs -------------------------------------------------- */

typedef enum fz_bad {
    BAD_BROADCAST, BAD_AND_FLOAT, BAD_SHL_FLOAT, BAD_REDUCE_AXIS, BAD_CUMSUM_AXIS,
    BAD_RESHAPE, BAD_LOAD_INT, BAD_STORE_INT, BAD_MASK_SHAPE, BAD_PERMUTE, BAD_EXPAND_DIMS,
    BAD_PTR_PLUS_FLOAT, BAD_FOR_FLOAT_BOUNDS, BAD_PROGRAM_ID, BAD_ARANGE, BAD_ESCAPE,
    BAD_COUNT
} fz_bad;

typedef struct fz_bad_info {
    const char *what;
    tj_status want;
    const char *op; /* as the message names it */
} fz_bad_info;

static const fz_bad_info bad_info[BAD_COUNT] = {
    [BAD_BROADCAST] = {"[2RC] + [4RC]", TJ_ERR_SHAPE, "add"},
    [BAD_AND_FLOAT] = {"and of f32", TJ_ERR_TYPE, "and"},
    [BAD_SHL_FLOAT] = {"shl of f64", TJ_ERR_TYPE, "shl"},
    [BAD_REDUCE_AXIS] = {"sum along axis 2 of a 2-D tile", TJ_ERR_SHAPE, "sum"},
    [BAD_CUMSUM_AXIS] = {"cumsum along axis -3", TJ_ERR_SHAPE, "cumsum"},
    [BAD_RESHAPE] = {"reshape to twice the elements", TJ_ERR_SHAPE, "reshape"},
    [BAD_LOAD_INT] = {"load of an i32 value", TJ_ERR_TYPE, "load"},
    [BAD_STORE_INT] = {"store to an i32 value", TJ_ERR_TYPE, "store"},
    [BAD_MASK_SHAPE] = {"load with a [2C] mask", TJ_ERR_SHAPE, "load"},
    [BAD_PERMUTE] = {"permute by (1, 1)", TJ_ERR_SHAPE, "permute"},
    [BAD_EXPAND_DIMS] = {"expand_dims at axis 4", TJ_ERR_SHAPE, "expand_dims"},
    [BAD_PTR_PLUS_FLOAT] = {"pointer + f32", TJ_ERR_TYPE, "add"},
    [BAD_FOR_FLOAT_BOUNDS] = {"TJ_FOR to an f32 bound", TJ_ERR_TYPE, "for"},
    [BAD_PROGRAM_ID] = {"program_id(3)", TJ_ERR_BUILD, "program_id"},
    [BAD_ARANGE] = {"arange of 3R elements", TJ_ERR_SHAPE, "arange"},
    [BAD_ESCAPE] = {"a TJ_IF body's value used after it", TJ_ERR_BUILD, "add"},
};

/* Adds one bad op after the first few ops of p: kind and region drawn
 * from the seed. */
static void fz_add_bad(int64_t seed, fz_prog *p)
{
    gen_rng r = {(uint64_t)seed * 0x9e3779b97f4a7c15ull + 7};
    int at = 1 + gen_below(&r, p->nops - 1 > 0 ? p->nops - 1 : 1);
    if (at > p->nops)
        at = p->nops;
    fz_op bad = p->op[at - 1];
    bad.kind = FZ_BAD;
    bad.sub = gen_below(&r, BAD_COUNT);
    bad.a = at - 1, bad.b = bad.c = -1;
    bad.axis = gen_below(&r, 3); /* 0: at top level; 1: inside a TJ_IF; 2: a TJ_FOR */
    /* Make room: later ops' operands move up by one. */
    for (int k = p->nops; k > at; k--) {
        fz_op *o = &p->op[k];
        *o = p->op[k - 1];
        if (o->a >= at) o->a++;
        if (o->b >= at) o->b++;
        if (o->c >= at) o->c++;
    }
    p->op[at] = bad;
    p->nops++;
    p->bad = at;
    for (int s = 0; s < p->nstores; s++)
        if (p->store[s] >= at)
            p->store[s]++;
    if (p->store_mask >= at)
        p->store_mask++;
}

/* ---- the kernel ------------------------------------------------------------ */

static int bad_line; /* the line of the bad op of the program last built */

typedef struct fz_ctx {
    const fz_prog *p;
    tj_val in[TL_NCOMPUTE_DTYPES];
    tj_val trips;
    tj_val params[2];          /* sf, si */
    tj_val grow, gcol;         /* [R, 1] and [1, C] global row and column numbers */
    tj_val row1, col1;         /* the same, 1-D */
    tj_val row_ok, col_ok;     /* row1 < nrows, col1 < ncols */
    tj_val offs, mask;         /* [R, C] into the inputs, and in bounds */
    tj_val vals[FZ_MAXOPS];
} fz_ctx;

static tj_shape dims_of(const fz_op *o)
{
    if (o->scalar) {
        tj_shape s = {0, {0}};
        return s;
    }
    return TJ_SHAPE(o->r, o->cdim);
}

static tj_val emit_literal(const fz_op *o)
{
    return fz_is_float(o->dt) ? tj_const(o->fconst, o->dt) : tj_const((long long)o->iconst, o->dt);
}

static tj_val emit_bin(int sub, tj_val a, tj_val b, int propagate)
{
    tj_propagate_nan nan = propagate ? TJ_PROPAGATE_NAN_ALL : TJ_PROPAGATE_NAN_NONE;
    switch (sub) {
    case TJ_OP_ADD: return tj_add(a, b);
    case TJ_OP_SUB: return tj_sub(a, b);
    case TJ_OP_MUL: return tj_mul(a, b);
    case TJ_OP_AND: return tj_and(a, b);
    case TJ_OP_OR: return tj_or(a, b);
    case TJ_OP_XOR: return tj_xor(a, b);
    case TJ_OP_MINIMUM: return tj_minimum(a, b, .propagate_nan = nan);
    case TJ_OP_MAXIMUM: return tj_maximum(a, b, .propagate_nan = nan);
    default: return (tj_val){0};
    }
}

/* FZ_BIN: the guarded forms of fuzz_ref.h. */
static tj_val emit_guarded_bin(const fz_op *o, tj_val a, tj_val b, int literal)
{
    tj_dtype t = o->dt;
    tj_propagate_nan nan = o->propagate ? TJ_PROPAGATE_NAN_ALL : TJ_PROPAGATE_NAN_NONE;
    if (fz_is_float(t) && o->sub == TJ_OP_POW) {
        tj_val base = tj_add(tj_abs(a), 1.0);
        return literal ? tj_pow(base, o->fconst) : tj_pow(base, b);
    }
    if (literal) { /* a C literal, as a user writes one */
        if (fz_is_float(t)) {
            double x = o->fconst;
            switch (o->sub) {
            case TJ_OP_DIV: return tj_div(a, tj_add(tj_abs(tj_const(x, t)), 1.0));
            case TJ_OP_MOD: return tj_mod(a, tj_add(tj_abs(tj_const(x, t)), 1.0));
            case TJ_OP_ADD: return tj_add(a, x);
            case TJ_OP_SUB: return tj_sub(a, x);
            case TJ_OP_MUL: return tj_mul(a, x);
            case TJ_OP_MINIMUM: return tj_minimum(a, x, .propagate_nan = nan);
            default: return tj_maximum(a, x, .propagate_nan = nan);
            }
        }
        long long x = (long long)o->iconst;
        switch (o->sub) {
        case TJ_OP_FLOORDIV: return tj_floordiv(a, x);
        case TJ_OP_MOD: return tj_mod(a, x);
        case TJ_OP_SHL: return tj_shl(a, x);
        case TJ_OP_SHR: return tj_shr(a, x);
        case TJ_OP_ADD: return tj_add(a, x);
        case TJ_OP_SUB: return tj_sub(a, x);
        case TJ_OP_MUL: return tj_mul(a, x);
        case TJ_OP_AND: return tj_and(a, x);
        case TJ_OP_OR: return tj_or(a, x);
        case TJ_OP_XOR: return tj_xor(a, x);
        case TJ_OP_MINIMUM: return tj_minimum(a, x);
        default: return tj_maximum(a, x);
        }
    }
    if (fz_is_float(t)) {
        if (o->sub == TJ_OP_DIV)
            return tj_div(a, tj_add(tj_abs(b), 1.0));
        if (o->sub == TJ_OP_MOD)
            return tj_mod(a, tj_add(tj_abs(b), 1.0));
        return emit_bin(o->sub, a, b, o->propagate);
    }
    switch (o->sub) {
    case TJ_OP_FLOORDIV: return tj_floordiv(a, tj_and(b, 15));
    case TJ_OP_MOD: return tj_mod(a, tj_and(b, 15));
    case TJ_OP_SHL: return tj_shl(a, tj_and(b, 2 * tl_bits(t) - 1));
    case TJ_OP_SHR: return tj_shr(a, tj_and(b, 2 * tl_bits(t) - 1));
    default: return emit_bin(o->sub, a, b, 0);
    }
}

static tj_val emit_unary(const fz_op *o, tj_val a)
{
    switch (o->sub) {
    case TJ_OP_NEG: return tj_neg(a);
    case TJ_OP_ABS: return tj_abs(a);
    case TJ_OP_NOT: return tj_not(a);
    case TJ_OP_FLOOR: return tj_floor(a);
    case TJ_OP_CEIL: return tj_ceil(a);
    case TJ_OP_SQRT: return tj_sqrt(tj_add(tj_abs(a), 1.0));
    case TJ_OP_EXP: return tj_exp(a);
    case TJ_OP_EXP2: return tj_exp2(a);
    case TJ_OP_LOG: return tj_log(tj_add(tj_abs(a), 1.0));
    case TJ_OP_LOG2: return tj_log2(tj_add(tj_abs(a), 1.0));
    case TJ_OP_RSQRT: return tj_rsqrt(tj_add(tj_abs(a), 1.0));
    case TJ_OP_SIN: return tj_sin(a);
    case TJ_OP_COS: return tj_cos(a);
    case TJ_OP_TANH: return tj_tanh(a);
    case TJ_OP_ERF: return tj_erf(a);
    case TJ_OP_RINT: return tj_rint(a);
    case TJ_OP_ROUND: return tj_round(a);
    case TJ_OP_TRUNC: return tj_trunc(a);
    case TJ_OP_LOG1P: return tj_log1p(tj_abs(a));
    case TJ_OP_EXPM1: return tj_expm1(a);
    default: return tj_sigmoid(a);
    }
}

static tj_val emit_reduce(const fz_op *o, tj_val x, int axis)
{
    tj_propagate_nan nan = o->propagate ? TJ_PROPAGATE_NAN_ALL : TJ_PROPAGATE_NAN_NONE;
    switch (o->sub) {
    case TJ_REDUCE_SUM: return tj_sum(x, axis);
    case TJ_REDUCE_MAX: return tj_max(x, axis, .propagate_nan = nan);
    case TJ_REDUCE_MIN: return tj_min(x, axis, .propagate_nan = nan);
    case TJ_REDUCE_ARGMAX: return tj_argmax(x, axis, .propagate_nan = nan);
    default: return tj_argmin(x, axis, .propagate_nan = nan);
    }
}

/* x (of dims of X) broadcast to the dims of o, where they differ. */
static tj_val to_dims(tj_val x, const fz_op *X, const fz_op *o)
{
    if (X->scalar == o->scalar && X->r == o->r && X->cdim == o->cdim)
        return x;
    return tj_broadcast_to(x, dims_of(o));
}

/* The bad op of kind k over x; its line goes to bad_line. */
static tj_val emit_bad_op(fz_ctx *c, int k, tj_val x)
{
    const int R = c->p->R, C = c->p->C;
    tj_val v = x;
    switch ((fz_bad)k) {
    case BAD_BROADCAST: bad_line = __LINE__; v = tj_add(tj_arange(0, 2 * R * C), tj_arange(0, 4 * R * C)); break;
    case BAD_AND_FLOAT: bad_line = __LINE__; v = tj_and(tj_cast(x, TJ_F32), tj_cast(x, TJ_F32)); break;
    case BAD_SHL_FLOAT: bad_line = __LINE__; v = tj_shl(tj_cast(x, TJ_F64), 1); break;
    case BAD_REDUCE_AXIS: bad_line = __LINE__; v = tj_sum(tj_broadcast_to(x, TJ_SHAPE(R, C)), 2); break;
    case BAD_CUMSUM_AXIS: bad_line = __LINE__; v = tj_cumsum(tj_broadcast_to(x, TJ_SHAPE(R, C)), -3); break;
    case BAD_RESHAPE: bad_line = __LINE__; v = tj_reshape(tj_broadcast_to(x, TJ_SHAPE(R, C)), TJ_SHAPE(2 * R * C)); break;
    case BAD_LOAD_INT: bad_line = __LINE__; v = tj_load(tj_cast(x, TJ_I32)); break;
    case BAD_STORE_INT: bad_line = __LINE__; tj_store(tj_cast(x, TJ_I32), x); break;
    case BAD_MASK_SHAPE: bad_line = __LINE__; v = tj_load(tj_add(c->in[TJ_F32], c->offs), .mask = tj_lt(tj_arange(0, 2 * C), 3)); break;
    case BAD_PERMUTE: bad_line = __LINE__; v = tj_permute(tj_broadcast_to(x, TJ_SHAPE(R, C)), TJ_SHAPE(1, 1)); break;
    case BAD_EXPAND_DIMS: bad_line = __LINE__; v = tj_expand_dims(tj_broadcast_to(x, TJ_SHAPE(R, C)), 4); break;
    case BAD_PTR_PLUS_FLOAT: bad_line = __LINE__; v = tj_add(c->in[TJ_I32], tj_cast(x, TJ_F32)); break;
    case BAD_FOR_FLOAT_BOUNDS:
        bad_line = __LINE__; TJ_FOR(k, 0, tj_f32(2.0), 1) {
        }
        break;
    case BAD_PROGRAM_ID: bad_line = __LINE__; v = tj_add(x, tj_program_id(3)); break;
    case BAD_ARANGE: bad_line = __LINE__; v = tj_arange(0, 3 * R); break;
    case BAD_ESCAPE: {
        tj_val inner = x;
        TJ_IF(tj_lt(tj_program_id(0), 1)) {
            inner = tj_neg(x);
        }
        bad_line = __LINE__; v = tj_add(inner, 1);
        break;
    }
    case BAD_COUNT: break;
    }
    return v;
}

static tj_val emit_bad(fz_ctx *c, const fz_op *o)
{
    tj_val x = c->vals[o->a];
    if (o->axis == 1) {
        TJ_IF(tj_lt(tj_program_id(0), 1000)) {
            emit_bad_op(c, o->sub, x);
        }
        return x;
    }
    if (o->axis == 2) {
        TJ_FOR(k, 0, c->trips, 1) {
            emit_bad_op(c, o->sub, x);
        }
        return x;
    }
    return emit_bad_op(c, o->sub, x);
}

static tj_val emit_op(fz_ctx *c, int idx)
{
    const fz_prog *p = c->p;
    const fz_op *o = &p->op[idx];
    const fz_op *A = o->a >= 0 ? &p->op[o->a] : NULL, *B = o->b >= 0 ? &p->op[o->b] : NULL;
    tj_val a = o->a >= 0 ? c->vals[o->a] : (tj_val){0};
    tj_val b = o->b >= 0 ? c->vals[o->b] : (tj_val){0};
    switch (o->kind) {
    case FZ_LOAD:
        if (o->sub == 1)
            return tj_load(tj_add(c->in[o->in], c->offs), .mask = c->mask);
        if (o->sub == 2)
            return tj_load(tj_add(c->in[o->in], c->offs), .mask = tj_and(c->mask, b),
                           .other = emit_literal(o));
        return tj_load(tj_add(c->in[o->in], c->offs), .mask = c->mask, .other = emit_literal(o));
    case FZ_LOAD_ROW:
        return tj_expand_dims(tj_load(tj_add(c->in[o->in], c->col1), .mask = c->col_ok,
                                      .other = emit_literal(o)), 0);
    case FZ_LOAD_COL:
        return tj_expand_dims(tj_load(tj_add(c->in[o->in], c->row1), .mask = c->row_ok,
                                      .other = emit_literal(o)), 1);
    case FZ_CONST: return emit_literal(o);
    case FZ_FULL:
        return fz_is_float(o->dt) ? tj_full(dims_of(o), o->fconst, o->dt)
                                  : tj_full(dims_of(o), (long long)o->iconst, o->dt);
    case FZ_PARAM: return c->params[o->sub];
    case FZ_PID: return tj_program_id(0);
    case FZ_ROW_IDX: return c->grow;
    case FZ_COL_IDX: return c->gcol;
    case FZ_BIN: return emit_guarded_bin(o, a, b, !B);
    case FZ_UN: return emit_unary(o, a);
    case FZ_FMA: return tj_fma(a, b, c->vals[o->c]);
    case FZ_CMP:
        switch (o->sub) {
        case TJ_OP_EQ: return tj_eq(a, b);
        case TJ_OP_NE: return tj_ne(a, b);
        case TJ_OP_LT: return tj_lt(a, b);
        case TJ_OP_LE: return tj_le(a, b);
        case TJ_OP_GT: return tj_gt(a, b);
        default: return tj_ge(a, b);
        }
    case FZ_WHERE: return tj_where(a, b, c->vals[o->c]);
    case FZ_CAST: return tj_cast(a, o->dt);
    case FZ_REDUCE: return tj_expand_dims(emit_reduce(o, a, o->axis), o->axis);
    case FZ_CUMSUM: return tj_cumsum(a, o->axis);
    case FZ_FLAT_REDUCE:
        return emit_reduce(o, tj_reshape(a, TJ_SHAPE(A->r * A->cdim)), 0);
    case FZ_FLAT_CUMSUM:
        return tj_reshape(tj_cumsum(tj_reshape(a, TJ_SHAPE(A->r * A->cdim)), 0), dims_of(A));
    case FZ_TRANS: return tj_trans(a);
    case FZ_PERMUTE3: {
        int r = A->r, cols = A->cdim;
        tj_val x = tj_reshape(a, TJ_SHAPE(r, cols / 2, 2));
        return tj_reshape(tj_permute(x, TJ_SHAPE(0, 2, 1)), TJ_SHAPE(r, cols));
    }
    case FZ_BCAST: return tj_broadcast_to(a, dims_of(o));
    case FZ_FOR: {
        tj_val acc = to_dims(a, A, o);
        if (fz_for_as_while(o)) {
            tj_val k = tj_i32(0);
            TJ_WHILE(&k, &acc) {
                TJ_WHILE_COND(tj_lt(k, c->trips));
                acc = emit_bin(o->sub, acc, b, 0);
                if (o->axis)
                    acc = tj_add(acc, tj_cast(k, o->dt));
                k = tj_add(k, 1);
            }
            return acc;
        }
        TJ_FOR(k, 0, c->trips, 1, &acc) {
            acc = emit_bin(o->sub, acc, b, 0);
            if (o->axis)
                acc = tj_add(acc, tj_cast(k, o->dt));
        }
        return acc;
    }
    case FZ_IF: {
        tj_val v = to_dims(a, A, o);
        TJ_IF(tj_lt(tj_add(tj_program_id(0), c->trips), (long long)o->iconst), &v) {
            v = emit_bin(o->sub, v, b, 0);
        } TJ_ELSE {
            v = emit_bin(o->sub2, v, b, 0);
        }
        return v;
    }
    case FZ_BAD: return emit_bad(c, o);
    }
    return (tj_val){0};
}

/* Store s of p: its value to its slot of the output buffer of its dtype,
 * masked to the rows and columns in bounds (and by the program's i1 value,
 * for the first). A slot is the grid's R x C tiles. */
static void emit_store(fz_ctx *c, const tj_val *out, int s)
{
    const fz_prog *p = c->p;
    int v = p->store[s], with_mask = s == 0;
    const fz_op *o = &p->op[v];
    tj_val x = c->vals[v];
    fz_op full = {.r = p->R, .cdim = p->C};
    x = to_dims(x, o, &full);
    tj_val mask = c->mask;
    if (with_mask && p->store_mask >= 0)
        mask = tj_and(mask, c->vals[p->store_mask]);
    tj_val offs = tj_add(tj_mul(c->grow, p->C), c->gcol);
    if (p->slot[s])
        offs = tj_add(offs, tj_mul(tj_num_programs(0), p->R * p->C * p->slot[s]));
    tj_store(tj_add(out[o->dt], offs), x, .mask = mask);
}

TJ_KERNEL(fuzz_program,
          TJ_PARAMS(TJ_PTR(in_i1, i1), TJ_PTR(in_i8, i8), TJ_PTR(in_i16, i16),
                    TJ_PTR(in_i32, i32), TJ_PTR(in_i64, i64), TJ_PTR(in_u8, u8),
                    TJ_PTR(in_u16, u16), TJ_PTR(in_u32, u32), TJ_PTR(in_u64, u64),
                    TJ_PTR(in_f16, f16), TJ_PTR(in_bf16, bf16), TJ_PTR(in_f32, f32),
                    TJ_PTR(in_f64, f64),
                    TJ_PTR(out_i1, i1), TJ_PTR(out_i8, i8), TJ_PTR(out_i16, i16),
                    TJ_PTR(out_i32, i32), TJ_PTR(out_i64, i64), TJ_PTR(out_u8, u8),
                    TJ_PTR(out_u16, u16), TJ_PTR(out_u32, u32), TJ_PTR(out_u64, u64),
                    TJ_PTR(out_f16, f16), TJ_PTR(out_bf16, bf16), TJ_PTR(out_f32, f32),
                    TJ_PTR(out_f64, f64),
                    TJ_SCALAR(nrows, i32), TJ_SCALAR(ncols, i32), TJ_SCALAR(trips, i32),
                    TJ_SCALAR(sf, f32), TJ_SCALAR(si, i32)),
          TJ_CONSTS(SEED, ILL_FORMED))
{
    static fz_prog prog;
    static fz_ctx c;
    fz_generate(SEED, &prog);
    if (ILL_FORMED)
        fz_add_bad(SEED, &prog);
    memset(&c, 0, sizeof c);
    c.p = &prog;
    const tj_val ins[TL_NCOMPUTE_DTYPES] = {in_i1, in_i8, in_i16, in_i32, in_i64, in_u8, in_u16,
                                        in_u32, in_u64, in_f16, in_bf16, in_f32, in_f64};
    const tj_val outs[TL_NCOMPUTE_DTYPES] = {out_i1, out_i8, out_i16, out_i32, out_i64, out_u8,
                                         out_u16, out_u32, out_u64, out_f16, out_bf16,
                                         out_f32, out_f64};
    memcpy(c.in, ins, sizeof ins);
    c.params[0] = sf, c.params[1] = si;
    c.trips = trips;
    const int R = prog.R, C = prog.C;
    c.row1 = tj_add(tj_mul(tj_program_id(0), R), tj_arange(0, R));
    c.col1 = tj_arange(0, C);
    c.row_ok = tj_lt(c.row1, nrows);
    c.col_ok = tj_lt(c.col1, ncols);
    c.grow = tj_expand_dims(c.row1, 1);
    c.gcol = tj_expand_dims(c.col1, 0);
    c.offs = tj_add(tj_mul(c.grow, ncols), c.gcol);
    c.mask = tj_and(tj_expand_dims(c.row_ok, 1), tj_expand_dims(c.col_ok, 0));
    for (int k = 0; k < prog.nops; k++)
        c.vals[k] = emit_op(&c, k);
    for (int s = 0; s < prog.nstores; s++)
        emit_store(&c, outs, s);
}

/* ---- the host side --------------------------------------------------------- */

static fz_ref_val ref_vals[FZ_MAXOPS];

typedef struct fz_run {
    int64_t seed;
    int ill_formed;
    fz_prog prog;
    fz_inputs in;
    void *host_in[TL_NCOMPUTE_DTYPES];
    size_t slot_elems;           /* G * R * C: one slot of an output buffer */
    size_t out_elems[TL_NCOMPUTE_DTYPES]; /* slot_elems times its slots (at least 1) */
    void *want[TL_NCOMPUTE_DTYPES];  /* the reference's outputs, poison where not stored */
    double tol[TL_NCOMPUTE_DTYPES][FZ_MAXSTORES]; /* float bound of the value in each slot */
    int grid;
    int num_warps; /* of the launch: 1 to 8, for the GPU's layouts */
} fz_run;

static void *poisoned(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    memset(p, TL_POISON, bytes);
    return p;
}

/* Draws the inputs of a run and computes what the outputs must be. */
static void prepare(fz_run *run)
{
    fz_prog *p = &run->prog;
    fz_generate(run->seed, p);
    if (run->ill_formed)
        fz_add_bad(run->seed, p);
    fz_inputs *in = &run->in;
    in->nrows = (int32_t)tl_rand_range(1, 3 * p->R);
    in->ncols = (int32_t)tl_rand_range(1, p->C);
    in->trips = (int32_t)tl_rand_range(0, 3);
    in->sf = (float)(tl_rand_range(-16, 16) / 4.0);
    in->si = (int32_t)tl_rand_u64();
    run->num_warps = 1 << tl_rand_range(0, 3);
    size_t n = (size_t)in->nrows * (size_t)in->ncols;
    for (int t = 0; t < TL_NCOMPUTE_DTYPES; t++) {
        run->host_in[t] = malloc(n * tj_dtype_size((tj_dtype)t));
        if (fz_is_float((tj_dtype)t)) {
            tl_fill_range((tj_dtype)t, run->host_in[t], n, -FZ_INPUT_MAG, FZ_INPUT_MAG);
            for (size_t e = 0; e < n; e++) /* zeros of both signs, for min/max's order */
                if (tl_rand_range(0, 3) == 0)
                    tl_set((tj_dtype)t, run->host_in[t], e, tl_flt(tl_rand_range(0, 1) ? -0.0 : 0.0));
        } else
            tl_fill_random((tj_dtype)t, run->host_in[t], n);
        in->in[t] = run->host_in[t];
    }
    run->grid = (in->nrows + p->R - 1) / p->R;
    run->slot_elems = (size_t)run->grid * (size_t)p->R * (size_t)p->C;
    for (int t = 0; t < TL_NCOMPUTE_DTYPES; t++) {
        run->out_elems[t] = run->slot_elems * (size_t)(p->slots[t] ? p->slots[t] : 1);
        run->want[t] = poisoned(run->out_elems[t] * tj_dtype_size((tj_dtype)t));
    }
    if (run->ill_formed)
        return;
    for (int pid = 0; pid < run->grid; pid++) {
        fz_ref_run(p, in, pid, ref_vals);
        for (int s = 0; s < p->nstores; s++) {
            int v = p->store[s];
            const fz_op *o = &p->op[v];
            const fz_op *m = s == 0 && p->store_mask >= 0 ? &p->op[p->store_mask] : NULL;
            run->tol[o->dt][p->slot[s]] = o->err;
            for (int i = 0; i < p->R; i++) {
                int grow = pid * p->R + i;
                for (int j = 0; j < p->C; j++) {
                    if (grow >= in->nrows || j >= in->ncols)
                        continue;
                    if (m && !fz_elem(m, &ref_vals[p->store_mask], i, j).i)
                        continue;
                    size_t e = run->slot_elems * (size_t)p->slot[s] + (size_t)grow * (size_t)p->C + (size_t)j;
                    tl_set(o->dt, run->want[o->dt], e, fz_elem(o, &ref_vals[v], i, j));
                }
            }
        }
    }
}

static void release(fz_run *run)
{
    for (int t = 0; t < TL_NCOMPUTE_DTYPES; t++)
        free(run->host_in[t]), free(run->want[t]);
}

static char launch_error[2048]; /* the message of the last failed launch */

/* Does the launch's message contain s? Prints it if not. */
static int error_mentions(const char *s)
{
    if (strstr(launch_error, s))
        return 1;
    tap_diag("  the message lacks \"%s\": %s", s, launch_error);
    return 0;
}

/* Launches the run's program on dev; got[t] receives output buffer t. */
static tj_status launch(tj_device *dev, const fz_run *run, void **got)
{
    const fz_inputs *in = &run->in;
    size_t n = (size_t)in->nrows * (size_t)in->ncols;
    tj_buffer bin[TL_NCOMPUTE_DTYPES], bout[TL_NCOMPUTE_DTYPES];
    for (int t = 0; t < TL_NCOMPUTE_DTYPES; t++) {
        size_t es = tj_dtype_size((tj_dtype)t);
        bin[t] = tl_upload(dev, run->host_in[t], n * es);
        bout[t] = tl_poisoned(dev, run->out_elems[t] * es);
    }
    tj_launch_cfg cfg = tl_grid(run->grid, 1, 1);
    cfg.num_warps = run->num_warps;
    tj_status st = fuzz_program_launch(
        dev, &cfg, bin[0], bin[1], bin[2], bin[3], bin[4], bin[5], bin[6], bin[7], bin[8],
        bin[9], bin[10], bin[11], bin[12], bout[0], bout[1], bout[2], bout[3], bout[4], bout[5],
        bout[6], bout[7], bout[8], bout[9], bout[10], bout[11], bout[12], in->nrows, in->ncols,
        in->trips, in->sf, in->si, run->seed, run->ill_formed);
    if (st == TJ_OK)
        st = tj_synchronize(dev);
    snprintf(launch_error, sizeof launch_error, "%s", st == TJ_OK ? "" : tj_last_error());
    for (int t = 0; t < TL_NCOMPUTE_DTYPES; t++) {
        if (st == TJ_OK && got)
            st = tj_buffer_read(dev, bout[t], 0, got[t], run->out_elems[t] * tj_dtype_size((tj_dtype)t));
        tj_buffer_free(dev, bin[t]);
        tj_buffer_free(dev, bout[t]);
    }
    return st;
}

/* Output buffers against the reference (or another device's): floats
 * within tol (both-poison counts as equal; tol 0: bit for bit but NaN's
 * payload, the sign of a zero included), the rest exactly. */
static int outputs_agree(const fz_run *run, void *const *got, void *const *want, double slack,
                         const char *who)
{
    int bad = 0;
    for (int t = 0; t < TL_NCOMPUTE_DTYPES; t++) {
        tj_dtype dt = (tj_dtype)t;
        for (size_t e = 0; e < run->out_elems[t]; e++) {
            size_t slot = e / run->slot_elems, at = e % run->slot_elems;
            double tol = slack * run->tol[t][slot];
            tl_num g = tl_get(dt, got[t], e), w = tl_get(dt, want[t], e);
            int ok = fz_is_float(dt) ? tl_close(g.f, w.f, 0, tol) : g.i == w.i;
            if (ok && fz_is_float(dt) && tol == 0 && g.f == 0)
                ok = signbit(g.f) == signbit(w.f);
            if (ok)
                continue;
            if (bad++ < 6) {
                char gs[64], ws[64];
                tl_format(gs, sizeof gs, dt, g); /* %g shows a zero's sign */
                tl_format(ws, sizeof ws, dt, w);
                tap_diag("  out_%s slot %zu, row %zu, col %zu: got %s, %s %s (bound %.3g)",
                         tj_dtype_name(dt), slot, at / (size_t)run->prog.C,
                         at % (size_t)run->prog.C, gs, who, ws, tol);
            }
        }
    }
    if (bad > 6)
        tap_diag("  ... %d elements differ in all", bad);
    return bad == 0;
}

static void show_program(const fz_run *run)
{
    int64_t consts[2] = {run->seed, run->ill_formed};
    char *ir = NULL;
    if (tj_kernel_ir(fuzz_program, consts, 2, &ir) != TJ_OK) {
        tap_diag("  (no IR: %s)", tj_last_error());
        return;
    }
    tap_diag("  inputs: %d x %d, trips %d, sf %g, si %d, %d warps; the program (TJ_FUZZ_SEED=%lld):",
             run->in.nrows, run->in.ncols, run->in.trips, (double)run->in.sf, run->in.si,
             run->num_warps, (long long)run->seed);
    for (char *line = strtok(ir, "\n"); line; line = strtok(NULL, "\n"))
        tap_diag("    %s", line);
    free(ir);
}

static void **alloc_outputs(const fz_run *run)
{
    void **out = calloc(TL_NCOMPUTE_DTYPES, sizeof *out);
    for (int t = 0; t < TL_NCOMPUTE_DTYPES; t++)
        out[t] = malloc(run->out_elems[t] * tj_dtype_size((tj_dtype)t));
    return out;
}

static void free_outputs(void **out)
{
    for (int t = 0; t < TL_NCOMPUTE_DTYPES; t++)
        free(out[t]);
    free(out);
}

static int shown; /* programs printed whole so far (a few are enough) */

/* A well-formed program: the reference on dev, and on the CPU too where
 * dev is a GPU. */
static int run_well_formed(tj_device *dev, tj_device *cpu, int n, fz_run *run)
{
    void **got = alloc_outputs(run);
    const fz_prog *p = &run->prog;
    tj_status st = launch(dev, run, got);
    int ok = st == TJ_OK;
    if (!ok)
        tap_diag("  %s: %s", tj_status_name(st), launch_error);
    else
        ok = outputs_agree(run, got, run->want, 1, "expected");
    tap_ok(ok, "program %d (SEED %lld, tile %dx%d, %d ops, %d programs) matches the C reference",
           n, (long long)run->seed, p->R, p->C, p->nops, run->grid);
    if (!ok && shown++ < 3)
        show_program(run);
    if (cpu) {
        void **on_cpu = alloc_outputs(run);
        st = launch(cpu, run, on_cpu);
        int same = st == TJ_OK && outputs_agree(run, got, on_cpu, 2, "the CPU gave");
        if (st != TJ_OK)
            tap_diag("  the CPU run: %s: %s", tj_status_name(st), launch_error);
        tap_ok(same, "program %d: the GPU agrees with the CPU", n);
        free_outputs(on_cpu);
    }
    free_outputs(got);
    return ok;
}

/* An ill-formed program: its status, and a message naming the kernel, the
 * op and the line of the bad call. */
static int run_ill_formed(tj_device *dev, int n, fz_run *run)
{
    const fz_op *b = &run->prog.op[run->prog.bad];
    const fz_bad_info *info = &bad_info[b->sub];
    static const char *const where[] = {"", " inside a TJ_IF", " inside a TJ_FOR"};
    bad_line = 0;
    tj_status st = launch(dev, run, NULL);
    int ok = st == info->want;
    char op[64], kernel[64];
    snprintf(op, sizeof op, "op '%s'", info->op);
    snprintf(kernel, sizeof kernel, "kernel 'fuzz_program'");
    char at[300]; /* "test_fuzz.c:LINE:", the colon so that line 25 is not 251 */
    snprintf(at, sizeof at, "%s:", tl_where(__FILE__, bad_line));
    if (!ok)
        tap_diag("  got %s, expected %s: %s", tj_status_name(st), tj_status_name(info->want),
                 launch_error);
    else
        ok = bad_line > 0 && error_mentions(at) && error_mentions(kernel) && error_mentions(op);
    tap_ok(ok, "ill-formed program %d (SEED %lld): %s%s after op %d -> %s at %s", n,
           (long long)run->seed, info->what, where[b->axis], run->prog.bad,
           tj_status_name(info->want), tl_where(__FILE__, bad_line));
    if (!ok && shown++ < 3)
        show_program(run);
    return ok;
}

int main(void)
{
    tj_device *dev = tl_setup("test_fuzz");
    tj_device *cpu = NULL;
    if (tj_device_get_kind(dev) == TJ_DEVICE_GPU && tj_device_open(&cpu, TJ_DEVICE_CPU, 0) != TJ_OK)
        tap_bail_out("cannot open the CPU device: %s", tj_last_error());
    const char *env_n = getenv("TJ_FUZZ_PROGRAMS"), *env_s = getenv("TJ_FUZZ_SECONDS");
    const char *env_seed = getenv("TJ_FUZZ_SEED");
    long programs = env_n && *env_n ? atol(env_n) : 60;
    double seconds = env_s && *env_s ? atof(env_s) : 0;
    if (env_seed && *env_seed)
        programs = 1;
    gen_rng seeds = {tl_rand_u64()}; /* the programs' seeds, from the run's */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long ran = 0, failed = 0, ill = 0;
    for (long n = 0; seconds > 0 || n < programs; n++) {
        if (seconds > 0) {
            clock_gettime(CLOCK_MONOTONIC, &t1);
            if ((double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec) > seconds)
                break;
        }
        alarm(tl_watchdog_seconds()); /* the watchdog is per program: a long run is fine, a hang is not */
        static fz_run run;
        memset(&run, 0, sizeof run);
        run.seed = env_seed && *env_seed ? strtoll(env_seed, NULL, 0) : (int64_t)(gen_next(&seeds) >> 2);
        /* bit 62 of a seed marks it ill-formed, so that TJ_FUZZ_SEED replays either */
        if (!(env_seed && *env_seed) && n % 4 == 3)
            run.seed |= (int64_t)1 << 62;
        run.ill_formed = (int)((run.seed >> 62) & 1);
        *tl__rng() = (uint64_t)run.seed * 0xd1342543de82ef95ull + 1; /* the inputs, from the seed */
        prepare(&run);
        int ok = run.ill_formed ? run_ill_formed(dev, (int)n, &run)
                                : run_well_formed(dev, cpu, (int)n, &run);
        ran++, failed += !ok, ill += run.ill_formed;
        release(&run);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    tap_diag("%ld programs (%ld ill-formed) in %.1f s, %ld failed", ran, ill,
             (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec), failed);
    if (cpu)
        tj_device_close(cpu);
    tj_device_close(dev);
    return tap_done();
}
