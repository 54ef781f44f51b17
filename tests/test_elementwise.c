/* SPDX-License-Identifier: MIT */
/*
 * test_elementwise.c — every element-wise op on every dtype it takes, on
 * the CPU device, against a plain C reference.
 *
 * One kernel per dtype (stamped out by a macro, since a kernel's parameter
 * dtypes are part of its definition) takes the op as a compile-time
 * constant, so each (op, dtype) pair is its own compiled variant and its own
 * test point. Sizes are ragged (n is not a multiple of BLOCK) and every
 * load and store is masked; the tail of each output past n must still hold
 * the poison afterwards. Inputs are fresh random values; divisors and shift
 * amounts are drawn from the ranges where C defines the result.
 *
 * References are computed in int64 (wrapped to the dtype) or in double and
 * rounded once to the dtype, so they are exact; float results may differ by
 * about one unit in the last place (a few for exp/log and friends).
 */
#include "testlib.h"

enum { BLOCK = 64 };

static tj_val apply_binary(int op, tj_val x, tj_val y)
{
    switch (op) {
    case TJ_OP_ADD: return tj_add(x, y);
    case TJ_OP_SUB: return tj_sub(x, y);
    case TJ_OP_MUL: return tj_mul(x, y);
    case TJ_OP_DIV: return tj_div(x, y);
    case TJ_OP_FLOORDIV: return tj_floordiv(x, y);
    case TJ_OP_MOD: return tj_mod(x, y);
    case TJ_OP_AND: return tj_and(x, y);
    case TJ_OP_OR: return tj_or(x, y);
    case TJ_OP_XOR: return tj_xor(x, y);
    case TJ_OP_SHL: return tj_shl(x, y);
    case TJ_OP_SHR: return tj_shr(x, y);
    case TJ_OP_MINIMUM: return tj_minimum(x, y);
    case TJ_OP_MAXIMUM: return tj_maximum(x, y);
    case TJ_OP_EQ: return tj_eq(x, y);
    case TJ_OP_NE: return tj_ne(x, y);
    case TJ_OP_LT: return tj_lt(x, y);
    case TJ_OP_LE: return tj_le(x, y);
    case TJ_OP_GT: return tj_gt(x, y);
    default: return tj_ge(x, y);
    }
}

static tj_val apply_unary(int op, tj_val x)
{
    switch (op) {
    case TJ_OP_NEG: return tj_neg(x);
    case TJ_OP_NOT: return tj_not(x);
    case TJ_OP_ABS: return tj_abs(x);
    case TJ_OP_EXP: return tj_exp(x);
    case TJ_OP_EXP2: return tj_exp2(x);
    case TJ_OP_LOG: return tj_log(x);
    case TJ_OP_LOG2: return tj_log2(x);
    case TJ_OP_SQRT: return tj_sqrt(x);
    case TJ_OP_RSQRT: return tj_rsqrt(x);
    case TJ_OP_SIGMOID: return tj_sigmoid(x);
    case TJ_OP_FLOOR: return tj_floor(x);
    default: return tj_ceil(x);
    }
}

static const char *const binary_names[] = {
    "add", "sub", "mul", "div", "floordiv", "mod", "and", "or", "xor", "shl", "shr",
    "minimum", "maximum", "eq", "ne", "lt", "le", "gt", "ge"};
static const char *const unary_names[] = {
    "neg", "not", "abs", "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sigmoid",
    "floor", "ceil"};

/* The dtype a binary op gives for operands of dtype t. */
static tj_dtype binary_result(int op, tj_dtype t)
{
    if (op >= TJ_OP_EQ)
        return TJ_I1;
    if (op == TJ_OP_DIV && !tl_is_float(t))
        return TJ_F32;
    return t;
}

/* The dtype a unary op gives: math ops make integers f32. */
static tj_dtype unary_result(int op, tj_dtype t)
{
    if (op >= TJ_OP_EXP && !tl_is_float(t))
        return TJ_F32;
    return t;
}

/*
 * Binary ops: out (dtype), out_b (i1, comparisons) and out_f (f32, integer
 * true division); the body stores to the one that fits the result.
 * The masked-off lanes of b load 1, so no lane divides by zero.
 */
#define BINARY_KERNEL(dt, DT)                                                   \
    TJ_KERNEL(binary_##dt,                                                      \
              TJ_PARAMS(TJ_PTR(a, dt), TJ_PTR(b, dt), TJ_PTR(out, dt),          \
                        TJ_PTR(out_b, i1), TJ_PTR(out_f, f32), TJ_SCALAR(n, i32)), \
              TJ_CONSTS(OP))                                                    \
    {                                                                           \
        tj_val offs = tj_add(tj_mul(tj_program_id(0), BLOCK), tj_arange(0, BLOCK)); \
        tj_val mask = tj_lt(offs, n);                                           \
        tj_val x = tj_load(tj_add(a, offs), .mask = mask);                      \
        tj_val y = tj_load(tj_add(b, offs), .mask = mask, .other = tj_const(1, DT)); \
        tj_dtype rt = binary_result((int)OP, DT);                               \
        tj_val dst = rt == TJ_I1 && DT != TJ_I1 ? out_b : rt != DT ? out_f : out; \
        tj_store(tj_add(dst, offs), apply_binary((int)OP, x, y), .mask = mask); \
    }

/* Unary ops: out (dtype) or out_f (f32, math ops on integers). */
#define UNARY_KERNEL(dt, DT)                                                    \
    TJ_KERNEL(unary_##dt,                                                       \
              TJ_PARAMS(TJ_PTR(a, dt), TJ_PTR(out, dt), TJ_PTR(out_f, f32),     \
                        TJ_SCALAR(n, i32)),                                     \
              TJ_CONSTS(OP))                                                    \
    {                                                                           \
        tj_val offs = tj_add(tj_mul(tj_program_id(0), BLOCK), tj_arange(0, BLOCK)); \
        tj_val mask = tj_lt(offs, n);                                           \
        tj_val x = tj_load(tj_add(a, offs), .mask = mask, .other = tj_const(1, DT)); \
        tj_val dst = unary_result((int)OP, DT) != DT ? out_f : out;             \
        tj_store(tj_add(dst, offs), apply_unary((int)OP, x), .mask = mask);     \
    }

/* where(c, a, b) with c from an i1 buffer. */
#define WHERE_KERNEL(dt)                                                        \
    TJ_KERNEL(where_##dt,                                                       \
              TJ_PARAMS(TJ_PTR(c, i1), TJ_PTR(a, dt), TJ_PTR(b, dt), TJ_PTR(out, dt), \
                        TJ_SCALAR(n, i32)),                                     \
              TJ_CONSTS())                                                      \
    {                                                                           \
        tj_val offs = tj_add(tj_mul(tj_program_id(0), BLOCK), tj_arange(0, BLOCK)); \
        tj_val mask = tj_lt(offs, n);                                           \
        tj_val cond = tj_load(tj_add(c, offs), .mask = mask);                   \
        tj_val x = tj_load(tj_add(a, offs), .mask = mask);                      \
        tj_val y = tj_load(tj_add(b, offs), .mask = mask);                      \
        tj_store(tj_add(out, offs), tj_where(cond, x, y), .mask = mask);        \
    }

#define FMA_KERNEL(dt)                                                          \
    TJ_KERNEL(fma_##dt,                                                         \
              TJ_PARAMS(TJ_PTR(a, dt), TJ_PTR(b, dt), TJ_PTR(c, dt), TJ_PTR(out, dt), \
                        TJ_SCALAR(n, i32)),                                     \
              TJ_CONSTS())                                                      \
    {                                                                           \
        tj_val offs = tj_add(tj_mul(tj_program_id(0), BLOCK), tj_arange(0, BLOCK)); \
        tj_val mask = tj_lt(offs, n);                                           \
        tj_val x = tj_load(tj_add(a, offs), .mask = mask);                      \
        tj_val y = tj_load(tj_add(b, offs), .mask = mask);                      \
        tj_val z = tj_load(tj_add(c, offs), .mask = mask);                      \
        tj_store(tj_add(out, offs), tj_fma(x, y, z), .mask = mask);             \
    }

#define ALL_DTYPES(X)                                                           \
    X(i1, TJ_I1) X(i8, TJ_I8) X(i16, TJ_I16) X(i32, TJ_I32) X(i64, TJ_I64)     \
    X(u8, TJ_U8) X(u16, TJ_U16) X(u32, TJ_U32) X(u64, TJ_U64)                   \
    X(f16, TJ_F16) X(bf16, TJ_BF16) X(f32, TJ_F32) X(f64, TJ_F64)

#define DEFINE_ALL(dt, DT) BINARY_KERNEL(dt, DT) UNARY_KERNEL(dt, DT) WHERE_KERNEL(dt)
ALL_DTYPES(DEFINE_ALL)
FMA_KERNEL(f16)
FMA_KERNEL(bf16)
FMA_KERNEL(f32)
FMA_KERNEL(f64)

typedef struct kernels_of {
    tj_dtype dt;
    const tj_kernel *binary, *unary, *where;
} kernels_of;

#define KERNEL_ROW(dt, DT) {DT, binary_##dt, unary_##dt, where_##dt},
static const kernels_of kernels[] = {ALL_DTYPES(KERNEL_ROW)};

static tj_device *dev;

/* ---- references ---------------------------------------------------------- */

static int is_shift(int op) { return op == TJ_OP_SHL || op == TJ_OP_SHR; }
static int is_division(int op)
{
    return op == TJ_OP_DIV || op == TJ_OP_FLOORDIV || op == TJ_OP_MOD;
}
static int is_bitwise(int op) { return op >= TJ_OP_AND && op <= TJ_OP_SHR; }

/* Which binary ops a dtype takes: bitwise and shifts need integers,
 * floordiv is tested on integers only; i1 takes logic and equality. */
static int binary_applies(int op, tj_dtype t)
{
    if (t == TJ_I1)
        return op == TJ_OP_AND || op == TJ_OP_OR || op == TJ_OP_XOR || op == TJ_OP_EQ ||
               op == TJ_OP_NE;
    if (tl_is_float(t))
        return !is_bitwise(op) && op != TJ_OP_FLOORDIV;
    return 1;
}

static int compare(int op, int c) /* c: -1, 0, 1 */
{
    switch (op) {
    case TJ_OP_EQ: return c == 0;
    case TJ_OP_NE: return c != 0;
    case TJ_OP_LT: return c < 0;
    case TJ_OP_LE: return c <= 0;
    case TJ_OP_GT: return c > 0;
    default: return c >= 0;
    }
}

static tl_num ref_binary(int op, tj_dtype t, tl_num a, tl_num b)
{
    if (tl_is_float(t)) {
        double x = a.f, y = b.f, r;
        switch (op) {
        case TJ_OP_ADD: r = x + y; break;
        case TJ_OP_SUB: r = x - y; break;
        case TJ_OP_MUL: r = x * y; break;
        case TJ_OP_DIV: r = x / y; break; /* rounding twice is harmless here */
        case TJ_OP_MOD: /* Python's: fmod moved into the sign of y */
            r = fmod(x, y);
            r = r != 0 && (r < 0) != (y < 0) ? tl_round(t, r + y) : r;
            break;
        case TJ_OP_MINIMUM: r = fmin(x, y); break;
        case TJ_OP_MAXIMUM: r = fmax(x, y); break;
        default: return tl_int(compare(op, (x > y) - (x < y)));
        }
        return tl_flt(tl_round(t, r));
    }
    int64_t x = a.i, y = b.i;
    uint64_t ux = (uint64_t)x, uy = (uint64_t)y;
    int sgn = tl_is_signed(t);
    int cmp = sgn ? (x > y) - (x < y) : (ux > uy) - (ux < uy);
    switch (op) {
    case TJ_OP_ADD: return tl_int(tl_wrap(t, (int64_t)(ux + uy)));
    case TJ_OP_SUB: return tl_int(tl_wrap(t, (int64_t)(ux - uy)));
    case TJ_OP_MUL: return tl_int(tl_wrap(t, (int64_t)(ux * uy)));
    case TJ_OP_DIV: /* true division in f32 */
        return tl_flt((double)((sgn ? (float)x : (float)ux) / (sgn ? (float)y : (float)uy)));
    case TJ_OP_FLOORDIV: /* Python's: toward -inf */
        return tl_int(tl_wrap(t, sgn ? x / y - (x % y != 0 && (x % y < 0) != (y < 0)) : (int64_t)(ux / uy)));
    case TJ_OP_MOD: /* Python's: the sign of y */
        return tl_int(tl_wrap(t, sgn ? x % y + (x % y != 0 && (x % y < 0) != (y < 0)) * y : (int64_t)(ux % uy)));
    case TJ_OP_AND: return tl_int(x & y);
    case TJ_OP_OR: return tl_int(x | y);
    case TJ_OP_XOR: return tl_int(x ^ y);
    case TJ_OP_SHL: return tl_int(tl_wrap(t, (int64_t)(ux << y)));
    case TJ_OP_SHR: return tl_int(tl_wrap(t, sgn ? x >> y : (int64_t)(ux >> y)));
    case TJ_OP_MINIMUM: return cmp <= 0 ? a : b;
    case TJ_OP_MAXIMUM: return cmp >= 0 ? a : b;
    default: return tl_int(compare(op, cmp));
    }
}

/* Operand b for op: shift amounts within the width, nonzero divisors that
 * do not divide the minimum by -1. */
static tl_num operand_b(int op, tj_dtype t, tl_num a)
{
    if (is_shift(op) && !tl_is_float(t))
        return tl_int(tl_rand_range(0, tl_bits(t) - 1));
    tl_num b = tl_random(t);
    if (is_division(op) && !tl_is_float(t) && tl_is_signed(t) && b.i == -1 &&
        a.i == tl_int_min(t))
        b.i = 3;
    if (is_division(op) && tl_is_float(t) && b.f == 0)
        b.f = 1.5;
    if (is_division(op) && !tl_is_float(t) && (tl_rand_u64() & 3) == 0) {
        /* Small divisors too, so quotients are not mostly 0. */
        b.i = tl_rand_range(1, 9);
        if (tl_is_signed(t) && (tl_rand_u64() & 1))
            b.i = -b.i;
        b.i = tl_wrap(t, b.i);
    }
    return b;
}

/* The largest error allowed for a float result of dtype t: |got - want| <=
 * rel*|want| + abs. The reference is rounded once, so one ulp of the dtype
 * covers a correct result; f32 and f64 get 2 and 4 (still far below 1e-6),
 * and the absolute part covers results that round to subnormals. */
static void arith_tolerance(tj_dtype t, double *rel, double *abs_tol)
{
    *rel = t == TJ_F32 ? 2 * tl_eps(t) : t == TJ_F64 ? 4 * tl_eps(t) : tl_eps(t);
    *abs_tol = t == TJ_F16 ? 0x1p-24 : t == TJ_BF16 ? 0x1p-133 : 0;
}

/* ---- the test runs ------------------------------------------------------- */

static int ragged_n(void) { return (int)tl_rand_range(3 * BLOCK + 1, 6 * BLOCK - 1); }

/* Checks n elements of out against want and that the rest up to cap elements
 * is still poison. One test point. */
static void check_output(const char *what, tj_dtype t, const void *got, const void *want,
                         int n, int cap, double rel, double abs_tol)
{
    size_t es = tj_dtype_size(t);
    int tail_ok = tl_poison_intact(got, (size_t)n * es, (size_t)cap * es);
    if (!tail_ok)
        tap_diag("%s: a masked-off element past n = %d was written", what, n);
    if (!tail_ok) {
        tap_ok(0, "%s", what);
        return;
    }
    tl_check(what, t, got, want, (size_t)n, rel, abs_tol);
}

static void test_binary(const kernels_of *k, int op)
{
    tj_dtype t = k->dt, rt = binary_result(op, t);
    int n = ragged_n(), grid = (n + BLOCK - 1) / BLOCK, cap = grid * BLOCK;
    size_t es = tj_dtype_size(t), res = tj_dtype_size(rt);
    void *a = malloc(n * es), *b = malloc(n * es);
    void *want = malloc((size_t)cap * res), *got = malloc((size_t)cap * res);
    for (int i = 0; i < n; i++) {
        tl_num x = tl_random(t), y = operand_b(op, t, x);
        tl_set(t, a, i, x);
        tl_set(t, b, i, y);
        tl_set(rt, want, i, ref_binary(op, t, tl_get(t, a, i), tl_get(t, b, i)));
    }
    tj_buffer ba = tl_upload(dev, a, n * es), bb = tl_upload(dev, b, n * es);
    tj_buffer out = tl_poisoned(dev, cap * es), out_b = tl_poisoned(dev, cap),
              out_f = tl_poisoned(dev, cap * 4u);
    tj_arg args[] = {TJ_ARG_BUF(ba), TJ_ARG_BUF(bb), TJ_ARG_BUF(out), TJ_ARG_BUF(out_b),
                     TJ_ARG_BUF(out_f), TJ_ARG_I32(n)};
    int64_t consts[] = {op};
    tj_launch_cfg cfg = tl_grid(grid, 1, 1);
    char what[128];
    snprintf(what, sizeof what, "%s %s (n = %d)", binary_names[op], tj_dtype_name(t), n);
    tj_status st = tj_launch(dev, k->binary, &cfg, args, 6, consts, 1);
    if (!tl_launch_failed(st, what)) {
        tj_buffer res_buf = rt == t ? out : rt == TJ_I1 ? out_b : out_f;
        tl_download(dev, res_buf, got, cap * res);
        double rel = 0, abs_tol = 0;
        if (tl_is_float(rt))
            arith_tolerance(rt, &rel, &abs_tol);
        check_output(what, rt, got, want, n, cap, rel, abs_tol);
    }
    tj_buffer_free(dev, ba);
    tj_buffer_free(dev, bb);
    tj_buffer_free(dev, out);
    tj_buffer_free(dev, out_b);
    tj_buffer_free(dev, out_f);
    free(a), free(b), free(want), free(got);
}

/* Inputs of a unary op: where it is defined and does not overflow f16. */
static tl_num unary_input(int op, tj_dtype t)
{
    if (!tl_is_float(t)) {
        tl_num v = tl_random(t);
        if (op == TJ_OP_ABS && v.i == tl_int_min(t))
            v.i++;
        if (op == TJ_OP_SQRT || op == TJ_OP_EXP)
            v.i = tl_rand_range(1, op == TJ_OP_EXP ? 20 : 100000);
        return v;
    }
    double lo, hi;
    switch (op) {
    case TJ_OP_EXP: lo = -8, hi = 8; break;
    case TJ_OP_EXP2: lo = -12, hi = 12; break;
    case TJ_OP_LOG: case TJ_OP_LOG2: case TJ_OP_SQRT: case TJ_OP_RSQRT:
        lo = 0.01, hi = 1000; break;
    case TJ_OP_SIGMOID: lo = -12, hi = 12; break;
    case TJ_OP_FLOOR: case TJ_OP_CEIL: lo = -100, hi = 100; break;
    default: return tl_random(t);
    }
    double x = tl_round(t, tl_rand_double(lo, hi));
    return tl_flt(x ? x : 0.5);
}

static tl_num ref_unary(int op, tj_dtype t, tl_num a)
{
    if (!tl_is_float(t)) {
        switch (op) {
        case TJ_OP_NEG: return tl_int(tl_wrap(t, (int64_t)(0 - (uint64_t)a.i)));
        case TJ_OP_NOT: return tl_int(t == TJ_I1 ? !a.i : tl_wrap(t, ~a.i));
        case TJ_OP_ABS: return tl_int(tl_is_signed(t) && a.i < 0 ? -a.i : a.i);
        case TJ_OP_EXP: return tl_flt((double)expf((float)a.i));
        default: return tl_flt((double)sqrtf((float)a.i));
        }
    }
    double x = a.f, r;
    switch (op) {
    case TJ_OP_NEG: r = -x; break;
    case TJ_OP_ABS: r = fabs(x); break;
    case TJ_OP_EXP: r = exp(x); break;
    case TJ_OP_EXP2: r = exp2(x); break;
    case TJ_OP_LOG: r = log(x); break;
    case TJ_OP_LOG2: r = log2(x); break;
    case TJ_OP_SQRT: r = sqrt(x); break;
    case TJ_OP_RSQRT: r = 1 / sqrt(x); break;
    case TJ_OP_SIGMOID: r = 1 / (1 + exp(-x)); break;
    case TJ_OP_FLOOR: r = floor(x); break;
    default: r = ceil(x); break;
    }
    return tl_flt(tl_round(t, r));
}

static void test_unary(const kernels_of *k, int op)
{
    tj_dtype t = k->dt, rt = unary_result(op, t);
    int n = ragged_n(), grid = (n + BLOCK - 1) / BLOCK, cap = grid * BLOCK;
    size_t es = tj_dtype_size(t), res = tj_dtype_size(rt);
    void *a = malloc(n * es), *want = malloc((size_t)cap * res), *got = malloc((size_t)cap * res);
    for (int i = 0; i < n; i++) {
        tl_set(t, a, i, unary_input(op, t));
        tl_set(rt, want, i, ref_unary(op, t, tl_get(t, a, i)));
    }
    tj_buffer ba = tl_upload(dev, a, n * es);
    tj_buffer out = tl_poisoned(dev, cap * es), out_f = tl_poisoned(dev, cap * 4u);
    tj_arg args[] = {TJ_ARG_BUF(ba), TJ_ARG_BUF(out), TJ_ARG_BUF(out_f), TJ_ARG_I32(n)};
    int64_t consts[] = {op};
    tj_launch_cfg cfg = tl_grid(grid, 1, 1);
    char what[128];
    snprintf(what, sizeof what, "%s %s (n = %d)", unary_names[op], tj_dtype_name(t), n);
    tj_status st = tj_launch(dev, k->unary, &cfg, args, 4, consts, 1);
    if (!tl_launch_failed(st, what)) {
        tl_download(dev, rt == t ? out : out_f, got, cap * res);
        double rel = 0, abs_tol = 0;
        if (tl_is_float(rt)) {
            /* Math functions: a few ulp in f32/f64, rounding to one ulp in
             * 16-bit floats; logs are near 0 around 1, so an absolute part. */
            int math = op >= TJ_OP_EXP && op <= TJ_OP_SIGMOID;
            if (rt == TJ_F16 || rt == TJ_BF16)
                rel = tl_eps(rt);
            else
                rel = math ? 4 * tl_eps(rt) : 0;
            abs_tol = (op == TJ_OP_LOG || op == TJ_OP_LOG2) ? rel : 0;
        }
        check_output(what, rt, got, want, n, cap, rel, abs_tol);
    }
    tj_buffer_free(dev, ba);
    tj_buffer_free(dev, out);
    tj_buffer_free(dev, out_f);
    free(a), free(want), free(got);
}

static int unary_applies(int op, tj_dtype t)
{
    if (t == TJ_I1)
        return op == TJ_OP_NOT;
    if (tl_is_float(t))
        return op != TJ_OP_NOT;
    /* Integers: neg, not, abs; and one math op each way into f32 on i32. */
    if (op <= TJ_OP_ABS)
        return 1;
    return t == TJ_I32 && (op == TJ_OP_EXP || op == TJ_OP_SQRT);
}

static void test_where(const kernels_of *k)
{
    tj_dtype t = k->dt;
    int n = ragged_n(), grid = (n + BLOCK - 1) / BLOCK, cap = grid * BLOCK;
    size_t es = tj_dtype_size(t);
    uint8_t *c = malloc(n);
    void *a = malloc(n * es), *b = malloc(n * es), *want = malloc(cap * es), *got = malloc(cap * es);
    for (int i = 0; i < n; i++) {
        c[i] = tl_rand_u64() & 1;
        tl_set(t, a, i, tl_random(t));
        tl_set(t, b, i, tl_random(t));
        tl_set(t, want, i, tl_get(t, c[i] ? a : b, i));
    }
    tj_buffer bc = tl_upload(dev, c, n), ba = tl_upload(dev, a, n * es),
              bb = tl_upload(dev, b, n * es), out = tl_poisoned(dev, cap * es);
    tj_arg args[] = {TJ_ARG_BUF(bc), TJ_ARG_BUF(ba), TJ_ARG_BUF(bb), TJ_ARG_BUF(out),
                     TJ_ARG_I32(n)};
    tj_launch_cfg cfg = tl_grid(grid, 1, 1);
    char what[128];
    snprintf(what, sizeof what, "where %s (n = %d)", tj_dtype_name(t), n);
    if (!tl_launch_failed(tj_launch(dev, k->where, &cfg, args, 5, NULL, 0), what)) {
        tl_download(dev, out, got, cap * es);
        check_output(what, t, got, want, n, cap, 0, 0);
    }
    tj_buffer_free(dev, bc);
    tj_buffer_free(dev, ba);
    tj_buffer_free(dev, bb);
    tj_buffer_free(dev, out);
    free(c), free(a), free(b), free(want), free(got);
}

/* fma on random operands; then, for f32, operands where a separate multiply
 * and add give 0 but one rounding keeps the product's rounding error. */
static void test_fma(const tj_kernel *kernel, tj_dtype t, int fused_check)
{
    int n = ragged_n(), grid = (n + BLOCK - 1) / BLOCK, cap = grid * BLOCK;
    size_t es = tj_dtype_size(t);
    void *a = malloc(n * es), *b = malloc(n * es), *c = malloc(n * es);
    void *want = malloc(cap * es), *got = malloc(cap * es);
    for (int i = 0; i < n; i++) {
        tl_num x = tl_random(t), y = tl_random(t), z = tl_random(t);
        if (fused_check) {
            z.f = -(double)((float)x.f * (float)y.f);
        }
        tl_set(t, a, i, x);
        tl_set(t, b, i, y);
        tl_set(t, c, i, z);
        double r = t == TJ_F64 ? fma(x.f, y.f, z.f)
                               : (double)fmaf((float)x.f, (float)y.f, (float)z.f);
        tl_set(t, want, i, tl_flt(tl_round(t, r)));
    }
    tj_buffer ba = tl_upload(dev, a, n * es), bb = tl_upload(dev, b, n * es),
              bc = tl_upload(dev, c, n * es), out = tl_poisoned(dev, cap * es);
    tj_arg args[] = {TJ_ARG_BUF(ba), TJ_ARG_BUF(bb), TJ_ARG_BUF(bc), TJ_ARG_BUF(out),
                     TJ_ARG_I32(n)};
    tj_launch_cfg cfg = tl_grid(grid, 1, 1);
    char what[128];
    if (fused_check)
        snprintf(what, sizeof what, "fma %s rounds once (keeps a*b - round(a*b))",
                 tj_dtype_name(t));
    else
        snprintf(what, sizeof what, "fma %s (n = %d)", tj_dtype_name(t), n);
    if (!tl_launch_failed(tj_launch(dev, kernel, &cfg, args, 5, NULL, 0), what)) {
        tl_download(dev, out, got, cap * es);
        double rel, abs_tol;
        arith_tolerance(t, &rel, &abs_tol);
        if (fused_check)
            rel = 0, abs_tol = 0;
        check_output(what, t, got, want, n, cap, rel, abs_tol);
    }
    tj_buffer_free(dev, ba);
    tj_buffer_free(dev, bb);
    tj_buffer_free(dev, bc);
    tj_buffer_free(dev, out);
    free(a), free(b), free(c), free(want), free(got);
}

int main(void)
{
    dev = tl_setup("test_elementwise");
    for (size_t k = 0; k < TL_COUNT(kernels); k++)
        for (int op = TJ_OP_ADD; op <= TJ_OP_GE; op++)
            if (binary_applies(op, kernels[k].dt))
                test_binary(&kernels[k], op);
    for (size_t k = 0; k < TL_COUNT(kernels); k++)
        for (int op = TJ_OP_NEG; op <= TJ_OP_CEIL; op++)
            if (unary_applies(op, kernels[k].dt))
                test_unary(&kernels[k], op);
    for (size_t k = 0; k < TL_COUNT(kernels); k++)
        test_where(&kernels[k]);
    test_fma(fma_f16, TJ_F16, 0);
    test_fma(fma_bf16, TJ_BF16, 0);
    test_fma(fma_f32, TJ_F32, 0);
    test_fma(fma_f64, TJ_F64, 0);
    test_fma(fma_f32, TJ_F32, 1);
    tj_device_close(dev);
    return tap_done();
}
