/* SPDX-License-Identifier: MIT */
/*
 * test_differential.c — random tile programs must give the same answers on
 * the CPU and on the GPU.
 *
 * One kernel, random_program, takes an input buffer of each of ten dtypes,
 * two output buffers (f64 and i64) and three scalars; its constant SEED
 * picks the program its body builds. The body is C that runs at build time,
 * so it draws from a generator seeded by SEED: a tile shape (1-D, or 2-D
 * with a 2-D grid), leaves (masked loads with ragged edges, row and column
 * vectors that broadcast, scalars, constants, program ids), a chain of
 * random element-wise ops over random dtypes (every operand cast to the
 * op's dtype first, so the dtypes are the generator's, not the promotion
 * rules'), then maybe a reduction (sum, max, min, argmax, argmin or cumsum)
 * along a random axis, and a masked store of the result as f64 or i64.
 * Each SEED is another variant, built and compiled separately on each
 * device, from the same random inputs.
 *
 * Integers must agree exactly. For floats the generator keeps, beside each
 * value, a bound on its magnitude and on how far the two devices may differ
 * on it: zero while every op is correctly rounded on both (IEEE add, mul,
 * div, sqrt, fma, casts, min/max, where), which is what jit.h requires of
 * both back ends; a few ulps where exp, log, exp2, log2 and sigmoid come
 * from different implementations; and the rounding of a float sum, whose
 * order the devices choose differently. Values are propagated through the
 * derivative bounds of later ops. Comparisons, float-to-int casts,
 * argmax/argmin and floor/ceil are applied only to values both devices hold
 * bit for bit, so no branch can go one way on one device and the other way
 * on the other.
 *
 * Where the devices disagree, the test looks for the first op that does:
 * the constant STOP (-1 for the whole program) cuts a program after that
 * many ops and leaves out the reduction, and since the generator draws the
 * same numbers up to there, the cut programs are prefixes of the failing
 * one. The first prefix that disagrees is printed whole, its last ops being
 * the culprit; if every prefix agrees, the reduction is.
 *
 * Without a GPU the CPU half still runs every program (and, under make
 * check with ptxas, compiles and assembles its PTX); the comparison points
 * are skipped. TJ_TEST_SEED replays a run, TJ_DIFF_PROGRAMS sets how many
 * programs (default 60).
 */
#include "testlib.h"
#include "fuzz_rng.h"

enum { NIN = 10 };
static const tj_dtype in_dtypes[NIN] = {TJ_F32, TJ_F16, TJ_BF16, TJ_F64, TJ_I8,
                                        TJ_I16, TJ_I32, TJ_I64, TJ_U8, TJ_U32};
#define INPUT_MAG 4.0 /* float inputs (and load defaults) lie in [-4, 4] */

/* ---- the program generator (runs in the kernel body) --------------------- */

/* The tile shape a seed gives; the host needs it for the grid. */
typedef struct prog_shape {
    int rank;
    int rows_tile, cols_tile; /* 2-D: [R, C]; 1-D: [cols_tile] */
} prog_shape;

static prog_shape shape_of(int64_t seed)
{
    gen_rng r = {(uint64_t)seed * 0x2545f4914f6cdd1dull + 1};
    prog_shape s;
    s.rank = gen_below(&r, 10) < 7 ? 2 : 1;
    if (s.rank == 2) {
        s.rows_tile = 1 << gen_below(&r, 6); /* 1 .. 32 */
        s.cols_tile = 1 << gen_below(&r, 7); /* 1 .. 64 */
        while (s.rows_tile * s.cols_tile > 1024)
            s.cols_tile /= 2;
    } else {
        s.rows_tile = 1;
        s.cols_tile = 1 << (4 + gen_below(&r, 6)); /* 16 .. 512 */
    }
    return s;
}

enum { FULL, ROW, COL, SCALAR }; /* shape kinds: [R,C] or [B]; [1,C]; [R,1]; scalar */

typedef struct gv {
    tj_val v;
    tj_dtype dt;
    int kind;
    double mag; /* floats: a bound on |value| */
    double err; /* floats: a bound on |CPU value - GPU value|; 0 = bit for bit */
} gv;

/* What the host needs to know of the program last built. */
typedef struct gen_info {
    int out_float;   /* the result went to out_f (else out_i) */
    double tol;      /* its bound, for floats */
    int nops;
    char desc[160];  /* the reduction and the result's dtype */
} gen_info;
static gen_info info;

typedef struct gen {
    gen_rng r;
    prog_shape shape;
    tj_val in[NIN];
    tj_val rows, cols, s;
    tj_val offs, mask;           /* [R,C] (or [B]) offsets into the inputs, and their mask */
    tj_val row_offs, row_mask;   /* [C] column indices of this tile (2-D) */
    tj_val col_offs, col_mask;   /* [R] row indices of this tile (2-D) */
    gv pool[64];
    int npool;
} gen;

static int is_float(tj_dtype t) { return t >= TJ_F16 && t <= TJ_F64; }

static double dt_eps(tj_dtype t)
{
    switch (t) {
    case TJ_F16: return 0x1p-10;
    case TJ_BF16: return 0x1p-7;
    case TJ_F32: return 0x1p-23;
    default: return 0x1p-52;
    }
}

/* The largest magnitude the generator lets a float value of t reach. */
static double dt_limit(tj_dtype t)
{
    return t == TJ_F16 ? 2e4 : t == TJ_F64 ? 1e100 : 1e30;
}

/* One rounding of a result of magnitude mag that may differ between the
 * devices because its inputs did. */
static double rounding(tj_dtype t, double err_in, double mag)
{
    return err_in > 0 ? err_in + dt_eps(t) * mag : 0;
}

/* A math function computed by different code on each device: a few ulps
 * (f16/bf16 are computed in f32, then rounded). */
static double math_ulps(tj_dtype t, double mag)
{
    double compute_eps = t == TJ_F64 ? 0x1p-52 : 0x1p-23;
    return 4 * compute_eps * mag + (t == TJ_F16 || t == TJ_BF16 ? dt_eps(t) * mag : 0);
}

static tj_val random_const(gen *g, tj_dtype dt, double *mag)
{
    if (is_float(dt)) {
        double x = gen_uniform(&g->r, -INPUT_MAG, INPUT_MAG);
        *mag = INPUT_MAG;
        return tj_const(x, dt);
    }
    *mag = 0;
    if (dt == TJ_I1)
        return tj_const((long long)(gen_next(&g->r) & 1), dt);
    long long v = gen_below(&g->r, 4) == 0 ? (long long)gen_next(&g->r) : gen_below(&g->r, 200) - 100;
    if (dt >= TJ_U8 && dt <= TJ_U64 && v < 0)
        v = -v;
    int bits = tl_bits(dt);
    if (bits < 64)
        v = tl_wrap(dt, v);
    return tj_const(v, dt);
}

static void push(gen *g, gv x)
{
    if (g->npool < (int)TL_COUNT(g->pool))
        g->pool[g->npool++] = x;
    else
        g->pool[gen_below(&g->r, g->npool)] = x;
}

/* A leaf: a masked load, a broadcast vector, a scalar or an index tile. */
static gv leaf(gen *g, int want_full)
{
    int pick = want_full ? 0 : gen_below(&g->r, 10);
    int d = gen_below(&g->r, NIN);
    tj_dtype dt = in_dtypes[d];
    double other_mag;
    if (pick < 5) {
        tj_val other = random_const(g, dt, &other_mag);
        tj_val v = tj_load(tj_add(g->in[d], g->offs), .mask = g->mask, .other = other);
        return (gv){v, dt, FULL, is_float(dt) ? INPUT_MAG : 0, 0};
    }
    if (pick < 7 && g->shape.rank == 2) {
        int as_row = gen_below(&g->r, 2);
        tj_val idx = as_row ? g->row_offs : g->col_offs;
        tj_val m = as_row ? g->row_mask : g->col_mask;
        tj_val other = random_const(g, dt, &other_mag);
        tj_val v = tj_load(tj_add(g->in[d], idx), .mask = m, .other = other);
        v = tj_expand_dims(v, as_row ? 0 : 1);
        return (gv){v, dt, as_row ? ROW : COL, is_float(dt) ? INPUT_MAG : 0, 0};
    }
    if (pick == 7)
        return (gv){g->s, TJ_F32, SCALAR, INPUT_MAG, 0};
    if (pick == 8) {
        switch (gen_below(&g->r, 3)) {
        case 0: return (gv){tj_program_id(0), TJ_I32, SCALAR, 0, 0};
        case 1: return (gv){g->rows, TJ_I32, SCALAR, 0, 0};
        default:
            if (g->shape.rank == 1)
                return (gv){g->offs, TJ_I32, FULL, 0, 0};
            return (gv){g->cols, TJ_I32, SCALAR, 0, 0};
        }
    }
    tj_dtype cdt = gen_below(&g->r, 2) ? dt : TJ_I1;
    double mag;
    tj_val c = random_const(g, cdt, &mag);
    return (gv){c, cdt, SCALAR, mag, 0};
}

static int combined_kind(int a, int b)
{
    if (a == SCALAR)
        return b;
    if (b == SCALAR || a == b)
        return a;
    return FULL;
}

/* x as dtype t, keeping the bounds honest. Returns 0 where the cast could
 * differ between the devices (an inexact float to an integer or i1). */
static int cast_to(gen *g, gv *x, tj_dtype t)
{
    if (x->dt == t)
        return 1;
    if (is_float(x->dt) && !is_float(t)) {
        if (x->err > 0)
            return 0;
        x->v = tj_cast(x->v, t); /* saturating and exact on both */
        x->dt = t;
        x->mag = 0;
        return 1;
    }
    if (!is_float(x->dt) && is_float(t)) {
        /* Small integers, so that later float ops stay in range. */
        if (x->dt != TJ_I1)
            x->v = tj_mod(x->v, tj_const(97, x->dt));
        x->v = tj_cast(x->v, t);
        x->dt = t;
        x->mag = 97;
        x->err = 0;
        return 1;
    }
    if (is_float(t)) {
        if (x->mag > dt_limit(t))
            return 0;
        x->err = rounding(t, x->err, x->mag);
    }
    x->v = tj_cast(x->v, t);
    x->dt = t;
    (void)g;
    return 1;
}

static tj_dtype random_dtype(gen *g, int floats)
{
    static const tj_dtype fl[] = {TJ_F16, TJ_BF16, TJ_F32, TJ_F64, TJ_F32};
    static const tj_dtype ints[] = {TJ_I8, TJ_I16, TJ_I32, TJ_I64, TJ_U8, TJ_U16, TJ_U32, TJ_U64, TJ_I32};
    return floats ? fl[gen_below(&g->r, (int)TL_COUNT(fl))] : ints[gen_below(&g->r, (int)TL_COUNT(ints))];
}

static gv pick_operand(gen *g)
{
    /* Recent values more often, so that chains grow deep. */
    int n = g->npool;
    int i = gen_below(&g->r, 3) ? n - 1 - gen_below(&g->r, n < 3 ? n : 3) : gen_below(&g->r, n);
    return g->pool[i];
}

/* One random op over values of the pool; returns 0 if the draw did not fit
 * (the caller draws again). */
static int random_op(gen *g)
{
    gv a = pick_operand(g), b = pick_operand(g), c = pick_operand(g);
    if (gen_below(&g->r, 4) == 0)
        b = leaf(g, 0);
    int cls = gen_below(&g->r, 10);
    gv out = a;
    out.kind = combined_kind(a.kind, b.kind);

    if (cls < 4) { /* float arithmetic */
        tj_dtype t = gen_below(&g->r, 2) && is_float(a.dt) ? a.dt : random_dtype(g, 1);
        if (!cast_to(g, &a, t) || !cast_to(g, &b, t))
            return 0;
        double lim = dt_limit(t);
        out.dt = t;
        switch (gen_below(&g->r, 9)) {
        case 0:
            if (a.mag + b.mag > lim) return 0;
            out.v = tj_add(a.v, b.v), out.mag = a.mag + b.mag;
            out.err = rounding(t, a.err + b.err, out.mag);
            break;
        case 1:
            if (a.mag + b.mag > lim) return 0;
            out.v = tj_sub(a.v, b.v), out.mag = a.mag + b.mag;
            out.err = rounding(t, a.err + b.err, out.mag);
            break;
        case 2:
            if (a.mag * b.mag > lim) return 0;
            out.v = tj_mul(a.v, b.v), out.mag = a.mag * b.mag;
            out.err = rounding(t, a.err * b.mag + b.err * a.mag + a.err * b.err, out.mag);
            break;
        case 3: /* a / (|b| + 1) */
            out.v = tj_div(a.v, tj_add(tj_abs(b.v), tj_const(1.0, t)));
            out.mag = a.mag;
            out.err = rounding(t, a.err + a.mag * b.err, out.mag);
            break;
        case 4:
            if (!cast_to(g, &c, t) || a.mag * b.mag + c.mag > lim) return 0;
            out.v = tj_fma(a.v, b.v, c.v), out.mag = a.mag * b.mag + c.mag;
            out.err = rounding(t, a.err * b.mag + b.err * a.mag + a.err * b.err + c.err, out.mag);
            out.kind = combined_kind(out.kind, c.kind);
            break;
        case 5:
            out.v = gen_below(&g->r, 2) ? tj_minimum(a.v, b.v) : tj_maximum(a.v, b.v);
            out.mag = a.mag > b.mag ? a.mag : b.mag;
            out.err = a.err > b.err ? a.err : b.err;
            break;
        case 6: /* remainder: exact, but it jumps, so only on exact values */
            if (a.err > 0 || b.err > 0) return 0;
            out.v = tj_mod(a.v, tj_add(tj_abs(b.v), tj_const(1.0, t)));
            out.mag = a.mag;
            out.err = 0;
            break;
        default: { /* unary, on a */
            out.kind = a.kind;
            int u = gen_below(&g->r, 10);
            tj_val one = tj_const(1.0, t);
            switch (u) {
            case 0: out.v = tj_neg(a.v); break;
            case 1: out.v = tj_abs(a.v); break;
            case 2:
                out.v = gen_below(&g->r, 2) ? tj_floor(a.v) : tj_ceil(a.v);
                out.mag = a.mag + 1;
                out.err = a.err > 0 ? a.err + 1 : 0;
                break;
            case 3:
                if (a.mag > 10) return 0;
                out.mag = exp(a.mag);
                out.v = tj_exp(a.v);
                out.err = out.mag * a.err + math_ulps(t, out.mag);
                break;
            case 4:
                if (a.mag > 14) return 0;
                out.mag = exp2(a.mag);
                out.v = tj_exp2(a.v);
                out.err = 0.7 * out.mag * a.err + math_ulps(t, out.mag);
                break;
            case 5:
                out.mag = log(a.mag + 1) + 1;
                out.v = tj_log(tj_add(tj_abs(a.v), one));
                out.err = a.err + math_ulps(t, out.mag);
                break;
            case 6:
                out.mag = log2(a.mag + 1) + 1;
                out.v = tj_log2(tj_add(tj_abs(a.v), one));
                out.err = 1.5 * a.err + math_ulps(t, out.mag);
                break;
            case 7:
                out.mag = sqrt(a.mag + 1);
                out.v = tj_sqrt(tj_add(tj_abs(a.v), one));
                out.err = rounding(t, a.err, out.mag);
                break;
            case 8:
                out.mag = 1;
                out.v = tj_rsqrt(tj_add(tj_abs(a.v), one));
                out.err = rounding(t, a.err, 1);
                break;
            default:
                out.mag = 1;
                out.v = tj_sigmoid(a.v);
                out.err = a.err / 4 + math_ulps(t, 1);
                break;
            }
            break;
        }
        }
    } else if (cls < 7) { /* integer arithmetic */
        tj_dtype t = gen_below(&g->r, 2) && !is_float(a.dt) && a.dt != TJ_I1 ? a.dt : random_dtype(g, 0);
        if (!cast_to(g, &a, t) || !cast_to(g, &b, t))
            return 0;
        out.dt = t;
        out.mag = 0;
        out.err = 0;
        switch (gen_below(&g->r, 13)) {
        case 0: out.v = tj_add(a.v, b.v); break;
        case 1: out.v = tj_sub(a.v, b.v); break;
        case 2: out.v = tj_mul(a.v, b.v); break;
        case 3: out.v = tj_floordiv(a.v, b.v); break;
        case 4: out.v = tj_mod(a.v, b.v); break;
        case 5: out.v = tj_and(a.v, b.v); break;
        case 6: out.v = tj_or(a.v, b.v); break;
        case 7: out.v = tj_xor(a.v, b.v); break;
        case 8: out.v = tj_shl(a.v, tj_and(b.v, tj_const(tl_bits(t) + 3, t))); break;
        case 9: out.v = tj_shr(a.v, tj_and(b.v, tj_const(tl_bits(t) + 3, t))); break;
        case 10: out.v = gen_below(&g->r, 2) ? tj_minimum(a.v, b.v) : tj_maximum(a.v, b.v); break;
        case 11: out.kind = a.kind; out.v = gen_below(&g->r, 2) ? tj_neg(a.v) : tj_abs(a.v); break;
        default: out.kind = a.kind; out.v = tj_not(a.v); break;
        }
    } else if (cls < 9) { /* a comparison picks between two values */
        if (a.err > 0 || b.err > 0) {
            tj_dtype t = random_dtype(g, 0);
            if (!cast_to(g, &a, t) || !cast_to(g, &b, t))
                return 0;
        } else if (a.dt != b.dt && !cast_to(g, &b, a.dt)) {
            return 0;
        }
        tj_val cond;
        switch (gen_below(&g->r, 6)) {
        case 0: cond = tj_eq(a.v, b.v); break;
        case 1: cond = tj_ne(a.v, b.v); break;
        case 2: cond = tj_lt(a.v, b.v); break;
        case 3: cond = tj_le(a.v, b.v); break;
        case 4: cond = tj_gt(a.v, b.v); break;
        default: cond = tj_ge(a.v, b.v); break;
        }
        int cond_kind = combined_kind(a.kind, b.kind);
        if (gen_below(&g->r, 3) == 0) { /* keep the i1 itself */
            out = (gv){cond, TJ_I1, cond_kind, 0, 0};
        } else {
            gv x = c, y = pick_operand(g);
            tj_dtype t = x.dt == TJ_I1 ? y.dt : x.dt;
            if (!cast_to(g, &x, t) || !cast_to(g, &y, t))
                return 0;
            out.v = tj_where(cond, x.v, y.v);
            out.dt = t;
            out.kind = combined_kind(cond_kind, combined_kind(x.kind, y.kind));
            out.mag = x.mag > y.mag ? x.mag : y.mag;
            out.err = x.err > y.err ? x.err : y.err;
        }
    } else { /* a plain cast */
        out = a;
        if (!cast_to(g, &out, random_dtype(g, gen_below(&g->r, 2))))
            return 0;
    }
    push(g, out);
    info.nops++;
    return 1;
}

/* The final reduction along an axis (or none): returns the kind of what is
 * left (FULL, or ROW/COL meaning "reduced along axis 0/1", or SCALAR). */
static int finish_reduction(gen *g, gv *x)
{
    int choice = gen_below(&g->r, 10);
    if (choice < 4)
        return FULL;
    int rank = g->shape.rank;
    int axis = rank == 2 ? gen_below(&g->r, 2) : 0;
    int extent = rank == 2 ? (axis == 0 ? g->shape.rows_tile : g->shape.cols_tile)
                           : g->shape.cols_tile;
    int left = rank == 1 ? SCALAR : axis == 0 ? ROW : COL;
    static const char *const names[] = {"sum", "max", "min", "argmax", "argmin", "cumsum"};
    int op = gen_below(&g->r, 6);
    if ((op == 3 || op == 4) && x->err > 0)
        op = 1; /* the index of an extreme must not depend on the device */
    if (x->dt == TJ_I1)
        cast_to(g, x, TJ_I32);
    if ((op == 0 || op == 5) && (x->dt == TJ_F16 || x->dt == TJ_BF16))
        cast_to(g, x, TJ_F32); /* sums of 16-bit floats would round away the test */
    double k = extent;
    switch (op) {
    case 0:
        x->v = tj_sum(x->v, axis);
        x->err = k * x->err + 2 * k * k * dt_eps(x->dt) * x->mag;
        x->mag *= k;
        break;
    case 1: x->v = tj_max(x->v, axis); break;
    case 2: x->v = tj_min(x->v, axis); break;
    case 3: x->v = tj_argmax(x->v, axis), x->dt = TJ_I32, x->mag = 0, x->err = 0; break;
    case 4: x->v = tj_argmin(x->v, axis), x->dt = TJ_I32, x->mag = 0, x->err = 0; break;
    default: /* cumsum: sequential on both, so exact for exact input */
        x->v = tj_cumsum(x->v, axis);
        x->err = x->err > 0 ? k * x->err + 2 * k * k * dt_eps(x->dt) * x->mag : 0;
        x->mag *= k;
        left = FULL;
        break;
    }
    snprintf(info.desc, sizeof info.desc, "%s along axis %d of %d", names[op], axis, extent);
    return left;
}

TJ_KERNEL(random_program,
          TJ_PARAMS(TJ_PTR(in_f32, f32), TJ_PTR(in_f16, f16), TJ_PTR(in_bf16, bf16),
                    TJ_PTR(in_f64, f64), TJ_PTR(in_i8, i8), TJ_PTR(in_i16, i16),
                    TJ_PTR(in_i32, i32), TJ_PTR(in_i64, i64), TJ_PTR(in_u8, u8),
                    TJ_PTR(in_u32, u32), TJ_PTR(out_f, f64), TJ_PTR(out_i, i64),
                    TJ_SCALAR(rows, i32), TJ_SCALAR(cols, i32), TJ_SCALAR(s, f32)),
          TJ_CONSTS(SEED, STOP))
{
    gen g;
    memset(&g, 0, sizeof g);
    memset(&info, 0, sizeof info);
    snprintf(info.desc, sizeof info.desc, "no reduction");
    g.shape = shape_of(SEED);
    g.r.state = (uint64_t)SEED ^ 0x5bd1e9955bd1e995ull;
    const tj_val ins[NIN] = {in_f32, in_f16, in_bf16, in_f64, in_i8, in_i16, in_i32, in_i64, in_u8, in_u32};
    memcpy(g.in, ins, sizeof ins);
    g.rows = rows, g.cols = cols, g.s = s;
    const int R = g.shape.rows_tile, C = g.shape.cols_tile;
    tj_val r1 = {0}, c1 = {0};
    if (g.shape.rank == 2) {
        r1 = tj_add(tj_mul(tj_program_id(0), R), tj_arange(0, R));
        c1 = tj_add(tj_mul(tj_program_id(1), C), tj_arange(0, C));
        g.col_offs = r1, g.col_mask = tj_lt(r1, rows);
        g.row_offs = c1, g.row_mask = tj_lt(c1, cols);
        tj_val r2 = tj_expand_dims(r1, 1), c2 = tj_expand_dims(c1, 0);
        g.offs = tj_add(tj_mul(r2, cols), c2);
        g.mask = tj_and(tj_lt(r2, rows), tj_lt(c2, cols));
    } else {
        g.offs = tj_add(tj_mul(tj_program_id(0), C), tj_arange(0, C));
        g.mask = tj_lt(g.offs, tj_mul(rows, cols));
    }

    push(&g, leaf(&g, 1));
    push(&g, leaf(&g, 0));
    int want = 3 + gen_below(&g.r, 9);
    if (STOP >= 0 && STOP < want)
        want = (int)STOP;
    for (int tries = 0; info.nops < want && tries < 200; tries++)
        random_op(&g);
    gv x = g.pool[g.npool - 1];
    if (x.kind != FULL) { /* the result covers the whole tile: add a load */
        if (x.dt == TJ_I1)
            cast_to(&g, &x, TJ_I32);
        gv full = leaf(&g, 1);
        cast_to(&g, &full, x.dt); /* a leaf is exact: this cast always works */
        x.v = tj_add(x.v, full.v);
        x.mag += full.mag;
        x.err = rounding(x.dt, x.err + full.err, x.mag);
        x.kind = FULL;
    }
    int left = STOP < 0 ? finish_reduction(&g, &x) : FULL;

    info.out_float = is_float(x.dt);
    info.tol = x.err;
    snprintf(info.desc + strlen(info.desc), sizeof info.desc - strlen(info.desc),
             ", result %s, %d ops", tj_dtype_name(x.dt), info.nops);
    tj_val value = tj_cast(x.v, info.out_float ? TJ_F64 : TJ_I64);
    tj_val out = info.out_float ? out_f : out_i;
    if (left == FULL) {
        tj_store(tj_add(out, g.offs), value, .mask = g.mask);
    } else if (left == ROW) { /* reduced along axis 0: one value per column */
        tj_store(tj_add(out, tj_add(tj_mul(tj_program_id(0), cols), c1)), value, .mask = g.row_mask);
    } else if (left == COL) { /* along axis 1: one per row and column block */
        tj_val idx = tj_add(tj_mul(r1, tj_num_programs(1)), tj_program_id(1));
        tj_store(tj_add(out, idx), value, .mask = g.col_mask);
    } else {
        tj_store(tj_add(out, tj_program_id(0)), value);
    }
}

/* ---- the host side ------------------------------------------------------- */

typedef struct device_run {
    tj_device *dev;
    tj_buffer in[NIN], out_f, out_i;
    double *got_f;
    int64_t *got_i;
    gen_info info;
} device_run;

static void *host_in[NIN];

/* Uploads the inputs, poisons the outputs, launches program (seed, stop),
 * reads back. */
static tj_status run_on(device_run *d, int64_t seed, int64_t stop, int32_t rows, int32_t cols,
                        float s, size_t n)
{
    for (int k = 0; k < NIN; k++)
        d->in[k] = tl_upload(d->dev, host_in[k], n * tj_dtype_size(in_dtypes[k]));
    d->out_f = tl_poisoned(d->dev, n * 8);
    d->out_i = tl_poisoned(d->dev, n * 8);
    prog_shape sh = shape_of(seed);
    tj_launch_cfg cfg = sh.rank == 2 ? tl_grid((rows + sh.rows_tile - 1) / sh.rows_tile,
                                               (cols + sh.cols_tile - 1) / sh.cols_tile, 1)
                                     : tl_grid(((int64_t)rows * cols + sh.cols_tile - 1) / sh.cols_tile, 1, 1);
    tj_status st = random_program_launch(d->dev, &cfg, d->in[0], d->in[1], d->in[2], d->in[3],
                                         d->in[4], d->in[5], d->in[6], d->in[7], d->in[8],
                                         d->in[9], d->out_f, d->out_i, rows, cols, s, seed, stop);
    d->info = info;
    if (st == TJ_OK)
        st = tj_synchronize(d->dev);
    if (st == TJ_OK)
        st = tj_buffer_read(d->dev, d->out_f, 0, d->got_f, n * 8);
    if (st == TJ_OK)
        st = tj_buffer_read(d->dev, d->out_i, 0, d->got_i, n * 8);
    return st;
}

static void release(device_run *d)
{
    for (int k = 0; k < NIN; k++)
        tj_buffer_free(d->dev, d->in[k]);
    tj_buffer_free(d->dev, d->out_f);
    tj_buffer_free(d->dev, d->out_i);
}

/* The program's tile IR, one diagnostic line per line. */
static void show_program(int64_t seed, int64_t stop)
{
    int64_t consts[2] = {seed, stop};
    char *ir = NULL;
    if (tj_kernel_ir(random_program, consts, 2, &ir) != TJ_OK)
        return;
    tap_diag("the program (SEED = %lld, STOP = %lld):", (long long)seed, (long long)stop);
    for (char *line = strtok(ir, "\n"); line; line = strtok(NULL, "\n"))
        tap_diag("  %s", line);
    free(ir);
}

/* CPU and GPU outputs: integers exactly, floats within the program's
 * bound. Prints the first differences when report is set. */
static int agree(const device_run *c, const device_run *g, size_t n, double tol, int report)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        int ok_f = tl_close(g->got_f[i], c->got_f[i], 0, tol) ||
                   memcmp(&g->got_f[i], &c->got_f[i], 8) == 0;
        int ok_i = g->got_i[i] == c->got_i[i];
        if (ok_f && ok_i)
            continue;
        if (report && bad < 5)
            tap_diag("  [%zu] f64: cpu %.17g gpu %.17g; i64: cpu %lld gpu %lld", i, c->got_f[i],
                     g->got_f[i], (long long)c->got_i[i], (long long)g->got_i[i]);
        bad++;
    }
    if (report && bad)
        tap_diag("  %zu of %zu elements differ (float bound %.3g)", bad, n, tol);
    return bad == 0;
}

/* Runs program (seed, stop) on both devices; 1 if they agree, 0 if not,
 * -1 if a run failed. */
static int compare_devices(tj_device *cpu, tj_device *gpu, int64_t seed, int64_t stop,
                           int32_t rows, int32_t cols, float s, size_t n, int report,
                           gen_info *info_out)
{
    device_run c = {cpu, {{0}}, {0}, {0}, malloc(n * 8), malloc(n * 8), {0}};
    device_run g = {gpu, {{0}}, {0}, {0}, malloc(n * 8), malloc(n * 8), {0}};
    int result = -1;
    tj_status st = run_on(&c, seed, stop, rows, cols, s, n);
    if (st != TJ_OK && report)
        tap_diag("  the CPU run failed: %s: %s", tj_status_name(st), tj_last_error());
    if (st == TJ_OK) {
        st = run_on(&g, seed, stop, rows, cols, s, n);
        if (st != TJ_OK && report)
            tap_diag("  the GPU run failed: %s: %s", tj_status_name(st), tj_last_error());
        if (st == TJ_OK)
            result = agree(&c, &g, n, c.info.tol, report);
        release(&g);
    }
    release(&c);
    if (info_out)
        *info_out = c.info;
    free(c.got_f), free(c.got_i), free(g.got_f), free(g.got_i);
    return result;
}

/* The first prefix of a disagreeing program that disagrees, printed. */
static void find_first_disagreement(tj_device *cpu, tj_device *gpu, int64_t seed, int nops,
                                    int32_t rows, int32_t cols, float s, size_t n)
{
    for (int stop = 1; stop <= nops; stop++) {
        int r = compare_devices(cpu, gpu, seed, stop, rows, cols, s, n, 0, NULL);
        if (r == 1)
            continue;
        tap_diag("the first %d of its %d ops, without the reduction, %s:", stop, nops,
                 r == 0 ? "already disagree" : "fail to run on one device");
        compare_devices(cpu, gpu, seed, stop, rows, cols, s, n, 1, NULL);
        show_program(seed, stop);
        return;
    }
    tap_diag("every prefix of its %d ops agrees: the reduction disagrees", nops);
    show_program(seed, -1);
}

int main(void)
{
    tj_device *cpu = tl_setup("test_differential");
    if (tj_device_get_kind(cpu) != TJ_DEVICE_CPU) {
        tj_device_close(cpu);
        if (tj_device_open(&cpu, TJ_DEVICE_CPU, 0) != TJ_OK)
            tap_bail_out("cannot open the CPU device: %s", tj_last_error());
    }
    tj_device *gpu = NULL;
    char skip_reason[600] = "";
    tj_status st = tj_device_open(&gpu, TJ_DEVICE_GPU, 0);
    if (st == TJ_OK) {
        tap_diag("GPU: %s", tj_device_name(gpu));
    } else if (st == TJ_ERR_DEVICE && strstr(tj_last_error(), "no GPU")) {
        snprintf(skip_reason, sizeof skip_reason, "no GPU (%s)", tj_last_error());
    } else {
        tap_ok(0, "the GPU opens where the driver is present");
        tap_diag("  %s: %s", tj_status_name(st), tj_last_error());
        snprintf(skip_reason, sizeof skip_reason, "the GPU does not open");
        gpu = NULL;
    }
    const char *env = getenv("TJ_DIFF_PROGRAMS");
    int programs = env && *env ? atoi(env) : 60;
    int explained = 0;

    for (int p = 0; p < programs; p++) {
        int64_t seed = (int64_t)(tl_rand_u64() >> 1);
        int32_t rows = (int32_t)tl_rand_range(1, 100), cols = (int32_t)tl_rand_range(1, 150);
        size_t n = (size_t)rows * (size_t)cols;
        float s = (float)tl_round(TJ_F32, tl_rand_double(-INPUT_MAG, INPUT_MAG));
        for (int k = 0; k < NIN; k++) {
            host_in[k] = malloc(n * tj_dtype_size(in_dtypes[k]));
            if (is_float(in_dtypes[k]))
                tl_fill_range(in_dtypes[k], host_in[k], n, -INPUT_MAG, INPUT_MAG);
            else
                tl_fill_random(in_dtypes[k], host_in[k], n);
        }
        prog_shape sh = shape_of(seed);
        char what[512];

        device_run c = {cpu, {{0}}, {0}, {0}, malloc(n * 8), malloc(n * 8), {0}};
        st = run_on(&c, seed, -1, rows, cols, s, n);
        release(&c);
        free(c.got_f), free(c.got_i);
        snprintf(what, sizeof what, "program %d (SEED %lld, %s tile %dx%d, %dx%d elements, %s)", p,
                 (long long)seed, sh.rank == 2 ? "2-D" : "1-D", sh.rows_tile, sh.cols_tile, rows,
                 cols, c.info.desc);
        int cpu_ok = !tl_launch_failed(st, what);
        if (cpu_ok)
            tap_ok(1, "%s runs on the CPU", what);
        else if (explained++ < 3)
            show_program(seed, -1);

        if (!gpu) {
            tap_skip(1, skip_reason);
        } else if (!cpu_ok) {
            tap_skip(1, "the CPU run failed");
        } else {
            gen_info program;
            int r = compare_devices(cpu, gpu, seed, -1, rows, cols, s, n, 1, &program);
            tap_ok(r == 1, "program %d: the GPU agrees with the CPU", p);
            if (r != 1 && explained++ < 3)
                find_first_disagreement(cpu, gpu, seed, program.nops, rows, cols, s, n);
        }
        for (int k = 0; k < NIN; k++)
            free(host_in[k]);
    }
    if (gpu)
        tj_device_close(gpu);
    tj_device_close(cpu);
    return tap_done();
}
