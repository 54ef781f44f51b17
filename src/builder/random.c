/* SPDX-License-Identifier: MIT */
/*
 * random.c — Triton's random numbers: tj_umulhi, tj_randint, tj_randint4x,
 * tj_rand and tj_randn, bit for bit what triton/language/random.py gives.
 *
 * The generator is Philox 4x32-10 (Salmon et al., "Parallel random numbers:
 * as easy as 1, 2, 3"): a counter-based generator, so every element is a
 * pure function of (seed, offset) and a kernel needs no state. As in Triton
 * the counter is (offset, 0, 0, 0) and the key is the seed's low and high
 * 32 bits (the seed is first converted to u64, as C converts: a negative
 * i32 seed sign-extends). Each round multiplies counter words 0 and 2 by
 * 0xD2511F53 and 0xCD9E8D57, keeps the low and high halves of the
 * products, and mixes in the key, which then grows by the Weyl constants
 * 0x9E3779B9 and 0xBB67AE85. A 64-bit offset selects Triton's 64-bit
 * variant: the same rounds on u64 words with the constants of Random123's
 * philox4x64, key (seed, 0).
 *
 * Everything is spelled in ops the IR has (MUL, XOR, ADD, casts, shifts):
 * the high half of a 32-bit product is the 64-bit product shifted, and the
 * high half of a 64-bit one is put together from four 32x32 products. So
 * both back ends get the generator without a line of new code generation,
 * and LLVM sees plain integer arithmetic it selects mul.hi / mul.wide from.
 *
 * tj_rand folds the signed value x onto [0, 2^31) with Triton's
 * x < 0 ? -x - 1 : x (written ~x, the same bits without the overflow of
 * -x) and scales it by 4.6566127342e-10 in f32; tj_randn is the first
 * output of Box-Muller on the first two uniforms, in Triton's order of f32
 * operations: r = sqrt(-2 log(max(1e-7, u1))), r cos(6.283185307179586 u2).
 * The 4x forms (randint4x, rand4x, randn4x) give all four of one draw;
 * randn4x's are both Box-Muller outputs (r cos, r sin) of each pair.
 */
#include "build.h"

enum { DEFAULT_ROUNDS = 10, MAX_ROUNDS = 64 };

/* A constant of dt (integer bits or float value) at the shape of like. */
static int32_t splat(tj_dtype dt, uint64_t bits, double f, int32_t like)
{
    tji_type t = type_of(like);
    return tji_broadcast_shape(tji_make_const(dt, (int64_t)bits, f), t.rank, t.shape);
}

static int32_t op2(tji_opcode code, int32_t a, int32_t b)
{
    return tji_emit(code, ARGS(a, b), type_of(a));
}

static int32_t cast(int32_t x, tj_dtype dt)
{
    return tji_to_dtype(x, dt, 0);
}

/* The high half of the product of a and b, unsigned, of one shape and of
 * dtype u32 or u64. */
static int32_t mulhi(int32_t a, int32_t b)
{
    if (type_of(a).dtype == TJ_U32) {
        int32_t p = op2(TJI_MUL, cast(a, TJ_U64), cast(b, TJ_U64));
        return cast(op2(TJI_SHR, p, splat(TJ_U64, 32, 0, p)), TJ_U32);
    }
    /* Schoolbook on 32-bit halves: the middle column adds the carry out of
     * the low product to the low halves of the cross products (below
     * 3 * 2^32, so no overflow), and its high half carries into hh. */
    int32_t mask = splat(TJ_U64, 0xffffffffu, 0, a), k32 = splat(TJ_U64, 32, 0, a);
    int32_t al = op2(TJI_AND, a, mask), ah = op2(TJI_SHR, a, k32);
    int32_t bl = op2(TJI_AND, b, mask), bh = op2(TJI_SHR, b, k32);
    int32_t ll = op2(TJI_MUL, al, bl), lh = op2(TJI_MUL, al, bh);
    int32_t hl = op2(TJI_MUL, ah, bl), hh = op2(TJI_MUL, ah, bh);
    int32_t mid = op2(TJI_ADD, op2(TJI_ADD, op2(TJI_SHR, ll, k32), op2(TJI_AND, lh, mask)),
                      op2(TJI_AND, hl, mask));
    int32_t hi = op2(TJI_ADD, hh, op2(TJI_ADD, op2(TJI_SHR, lh, k32), op2(TJI_SHR, hl, k32)));
    return op2(TJI_ADD, hi, op2(TJI_SHR, mid, k32));
}

tj_val tj__umulhi(tj_loc loc, tj_val a, tj_val b)
{
    if (!tji_enter(loc, "umulhi", 2, (tj_val[]){a, b}))
        return NONE;
    int32_t ids[2] = {vid(a), vid(b)};
    tji_type ta = type_of(ids[0]), tb = type_of(ids[1]);
    tj_dtype dt = ta.is_ptr || tb.is_ptr ? TJ_F32 : tji_meet(ids, 2);
    if (ta.is_ptr || tb.is_ptr || !tjs_dtype_is_int(dt) || tjs_dtype_bits(dt) < 32)
        return tji_fail(TJ_ERR_TYPE, "no rule for 'umulhi' of %s and %s: it takes 32- or 64-bit "
                        "integers (i32, u32, i64, u64)", tji_type_text(&ta), tji_type_text(&tb)), NONE;
    if (!(ids[0] = tji_to_dtype(ids[0], dt, 1)) || !(ids[1] = tji_to_dtype(ids[1], dt, 1)) ||
        !tji_broadcast_all(ids, 2))
        return NONE;
    tj_dtype u = tjs_dtype_bits(dt) == 32 ? TJ_U32 : TJ_U64; /* signed operands: their bits */
    return val(cast(mulhi(cast(ids[0], u), cast(ids[1], u)), dt));
}

/* --- Philox ---------------------------------------------------------------- */

typedef struct philox_consts {
    uint64_t round_a, round_b, key_a, key_b;
} philox_consts;

static const philox_consts philox32 = {0xD2511F53u, 0xCD9E8D57u, 0x9E3779B9u, 0xBB67AE85u};
static const philox_consts philox64 = {0xD2E7470EE14C6C93u, 0xCA5A826395121157u,
                                       0x9E3779B97F4A7C15u, 0xBB67AE8584CAA73Bu};

/* The four outputs of Philox for (seed, offset), which the op has entered:
 * the checks, then n_rounds rounds. The outputs are u32 for a 32-bit
 * offset, u64 for a 64-bit one. */
static int philox(int32_t seed, int32_t offset, const tj_rand_opts *opts, int32_t out[4])
{
    tji_type ts = type_of(seed), to = type_of(offset);
    if (ts.is_ptr || !tjs_dtype_is_int(ts.dtype))
        return tji_fail(TJ_ERR_TYPE, "the seed must be an integer, got %s", tji_type_text(&ts));
    if (to.is_ptr || !tjs_dtype_is_int(to.dtype) || tjs_dtype_bits(to.dtype) < 32)
        return tji_fail(TJ_ERR_TYPE, "the offset must be a 32- or 64-bit integer (i32, u32, i64, "
                        "u64), got %s", tji_type_text(&to));
    int rounds = opts->n_rounds ? opts->n_rounds : DEFAULT_ROUNDS;
    if (rounds < 1 || rounds > MAX_ROUNDS)
        return tji_fail(TJ_ERR_BUILD, "n_rounds must be 1 to %d (0: the default %d), got %d",
                        MAX_ROUNDS, DEFAULT_ROUNDS, opts->n_rounds);
    int wide = tjs_dtype_bits(to.dtype) == 64;
    tj_dtype w = wide ? TJ_U64 : TJ_U32;
    const philox_consts *k = wide ? &philox64 : &philox32;
    int32_t ids[2] = {cast(seed, TJ_U64), cast(offset, w)};
    if (!tji_broadcast_all(ids, 2))
        return 0;
    int32_t c[4] = {ids[1], 0, 0, 0}, zero = splat(w, 0, 0, ids[1]);
    c[1] = c[2] = c[3] = zero;
    int32_t k0 = wide ? ids[0] : cast(ids[0], TJ_U32);
    int32_t k1 = wide ? zero : cast(op2(TJI_SHR, ids[0], splat(TJ_U64, 32, 0, ids[0])), TJ_U32);
    int32_t ra = splat(w, k->round_a, 0, zero), rb = splat(w, k->round_b, 0, zero);
    for (int r = 0; r < rounds; r++) {
        if (r) {
            k0 = op2(TJI_ADD, k0, splat(w, k->key_a, 0, zero));
            k1 = op2(TJI_ADD, k1, splat(w, k->key_b, 0, zero));
        }
        int32_t c0 = op2(TJI_XOR, op2(TJI_XOR, mulhi(rb, c[2]), c[1]), k0);
        int32_t c2 = op2(TJI_XOR, op2(TJI_XOR, mulhi(ra, c[0]), c[3]), k1);
        c[1] = op2(TJI_MUL, rb, c[2]);
        c[3] = op2(TJI_MUL, ra, c[0]);
        c[0] = c0, c[2] = c2;
    }
    memcpy(out, c, sizeof c);
    return 1;
}

/* Triton's uint_to_uniform_float: x's bits as a signed integer, folded
 * onto the non-negative ones, as f32, times the largest scale that keeps
 * the result below 1. */
static int32_t uniform(int32_t x)
{
    int wide = type_of(x).dtype == TJ_U64;
    int32_t s = cast(x, wide ? TJ_I64 : TJ_I32);
    int32_t negative = tji_emit(TJI_CMP, ARGS(s, splat(type_of(s).dtype, 0, 0, s)),
                                with_dtype(type_of(s), TJ_I1));
    op_of(negative)->pred = TJI_LT;
    int32_t folded = tji_emit(TJI_WHERE, ARGS(negative, tji_emit(TJI_NOT, ARGS(s), type_of(s)), s),
                              type_of(s));
    int32_t f = cast(folded, TJ_F32);
    return op2(TJI_MUL, f, splat(TJ_F32, 0, wide ? 1.0842020432385337e-19 : 4.6566127342e-10, f));
}

/* Box-Muller for the uniforms u1, u2, in Triton's order of f32 operations:
 * r cos(th) in *c and r sin(th) in *s, each only where asked for. */
static void normals(int32_t u1, int32_t u2, int32_t *c, int32_t *s)
{
    tji_type t = type_of(u1);
    u1 = op2(TJI_MAX, splat(TJ_F32, 0, 1.0e-7, u1), u1);
    int32_t th = op2(TJI_MUL, splat(TJ_F32, 0, 6.283185307179586, u2), u2);
    int32_t lg = tji_emit(TJI_LOG, ARGS(u1), t);
    int32_t r = tji_emit(TJI_SQRT, ARGS(op2(TJI_MUL, splat(TJ_F32, 0, -2.0, lg), lg)), t);
    if (c)
        *c = op2(TJI_MUL, r, tji_emit(TJI_COS, ARGS(th), t));
    if (s)
        *s = op2(TJI_MUL, r, tji_emit(TJI_SIN, ARGS(th), t));
}

static const char *const names[] = {"randint", "rand", "randn"};
static const char *const names4x[] = {"randint4x", "rand4x", "randn4x"};

tj_val tj__random(tj_loc loc, tj_random_kind kind, tj_val seed, tj_val offset, tj_rand_opts opts)
{
    int known = (unsigned)kind <= TJ_RANDOM_NORMAL;
    if (!tji_enter(loc, known ? names[kind] : "random", 2, (tj_val[]){seed, offset}))
        return NONE;
    if (!known)
        return tji_fail(TJ_ERR_BUILD, "unknown random op %d", (int)kind), NONE;
    int32_t c[4], r = 0;
    if (!philox(vid(seed), vid(offset), &opts, c))
        return NONE;
    if (kind == TJ_RANDOM_INT)
        return val(c[0]);
    if (kind == TJ_RANDOM_UNIFORM)
        return val(uniform(c[0]));
    normals(uniform(c[0]), uniform(c[1]), &r, NULL);
    return val(r);
}

/* The four values of one Philox draw: the words (randint4x), their
 * uniforms (rand4x), or Box-Muller's both outputs of each pair of them
 * (randn4x). An output whose pointer is NULL is not computed. */
void tj__random4x(tj_loc loc, tj_random_kind kind, tj_val seed, tj_val offset,
                  tj_val *const out[4], tj_rand_opts opts)
{
    for (int i = 0; i < 4; i++)
        if (out[i])
            *out[i] = NONE;
    int known = (unsigned)kind <= TJ_RANDOM_NORMAL;
    if (!tji_enter(loc, known ? names4x[kind] : "random4x", 2, (tj_val[]){seed, offset}))
        return;
    if (!known) {
        tji_fail(TJ_ERR_BUILD, "unknown random op %d", (int)kind);
        return;
    }
    int32_t c[4], r[4] = {0, 0, 0, 0};
    if (!philox(vid(seed), vid(offset), &opts, c))
        return;
    for (int i = 0; i < 4; i++)
        if (out[i] && kind != TJ_RANDOM_NORMAL)
            r[i] = kind == TJ_RANDOM_INT ? c[i] : uniform(c[i]);
    for (int i = 0; i < 4 && kind == TJ_RANDOM_NORMAL; i += 2)
        if (out[i] || out[i + 1])
            normals(uniform(c[i]), uniform(c[i + 1]), out[i] ? &r[i] : NULL,
                    out[i + 1] ? &r[i + 1] : NULL);
    for (int i = 0; i < 4; i++)
        if (out[i])
            *out[i] = val(r[i]);
}
