/* SPDX-License-Identifier: MIT */
/*
 * test_dtypes.c — dtypes: every cast, 16-bit float round trips, scalar
 * arguments of every dtype through both launch forms, C literals that
 * adopt the other operand's dtype, typed constants, and the promotion of
 * mixed operands.
 *
 * Casts: one kernel per source dtype casts a tile to all 15 dtypes at
 * once (the fp8 ones too: into them floats round once and saturate); each (source, target) pair is a test point. Integers convert
 * modulo the target's width, to i1 as x != 0 (as Triton), and to floats
 * rounded to nearest even; floats truncate toward zero into integers (only
 * where the value fits, since C leaves the rest undefined) and round to
 * nearest even into narrower floats. References round once from the exact
 * value, so results must match bit for bit.
 *
 * Dtype results are checked through values: i8 x + 1 must wrap at 127, a
 * double literal must keep its double precision with an f64 tile, and so on.
 */
#include "testlib.h"

static tj_device *dev;

enum { BLOCK = 128 };

#define CAST_KERNEL(dt)                                                         \
    TJ_KERNEL(cast_##dt,                                                        \
              TJ_PARAMS(TJ_PTR(x, dt), TJ_PTR(o_i1, i1), TJ_PTR(o_i8, i8),      \
                        TJ_PTR(o_i16, i16), TJ_PTR(o_i32, i32), TJ_PTR(o_i64, i64), \
                        TJ_PTR(o_u8, u8), TJ_PTR(o_u16, u16), TJ_PTR(o_u32, u32), \
                        TJ_PTR(o_u64, u64), TJ_PTR(o_f16, f16), TJ_PTR(o_bf16, bf16), \
                        TJ_PTR(o_f32, f32), TJ_PTR(o_f64, f64), TJ_PTR(o_e4m3, f8e4m3), \
                        TJ_PTR(o_e5m2, f8e5m2), TJ_SCALAR(n, i32)),     \
              TJ_CONSTS())                                                      \
    {                                                                           \
        tj_val offs = tj_add(tj_mul(tj_program_id(0), BLOCK), tj_arange(0, BLOCK)); \
        tj_val mask = tj_lt(offs, n);                                           \
        tj_val v = tj_load(tj_add(x, offs), .mask = mask);                      \
        const tj_val outs[TJ_DTYPE_COUNT] = {o_i1, o_i8, o_i16, o_i32, o_i64, o_u8, \
                                             o_u16, o_u32, o_u64, o_f16, o_bf16, \
                                             o_f32, o_f64, o_e4m3, o_e5m2};     \
        for (int d = 0; d < TJ_DTYPE_COUNT; d++)                                \
            tj_store(tj_add(outs[d], offs), tj_cast(v, (tj_dtype)d), .mask = mask); \
    }

CAST_KERNEL(i1)
CAST_KERNEL(i8)
CAST_KERNEL(i16)
CAST_KERNEL(i32)
CAST_KERNEL(i64)
CAST_KERNEL(u8)
CAST_KERNEL(u16)
CAST_KERNEL(u32)
CAST_KERNEL(u64)
CAST_KERNEL(f16)
CAST_KERNEL(bf16)
CAST_KERNEL(f32)
CAST_KERNEL(f64)
CAST_KERNEL(f8e4m3)
CAST_KERNEL(f8e5m2)

static const tj_kernel *cast_kernel(tj_dtype t)
{
    const tj_kernel *k[TJ_DTYPE_COUNT] = {cast_i1, cast_i8, cast_i16, cast_i32, cast_i64,
                                          cast_u8, cast_u16, cast_u32, cast_u64, cast_f16,
                                          cast_bf16, cast_f32, cast_f64, cast_f8e4m3,
                                          cast_f8e5m2};
    return k[t];
}

/* The reference cast; *defined is 0 where C leaves it undefined (a float
 * whose integer part does not fit the integer target). */
/* mag rounded to `bits` significant bits, to nearest even (exact in a double). */
static double round_int_bits(uint64_t mag, int bits)
{
    int len = 0;
    while (len < 64 && mag >> len)
        len++;
    if (len <= bits)
        return (double)mag;
    int e = len - bits;
    uint64_t lo = mag >> e << e, rem = mag - lo, half = (uint64_t)1 << (e - 1);
    int up = rem > half || (rem == half && (lo >> e & 1));
    return ldexp((double)(lo >> e) + up, e);
}

static tl_num ref_cast(tj_dtype from, tl_num v, tj_dtype to, int *defined)
{
    *defined = 1;
    if (!tl_is_float(from)) {
        int is_u64 = from == TJ_U64;
        if (to == TJ_I1)
            return tl_int(v.i != 0);
        if (!tl_is_float(to))
            return tl_int(tl_wrap(to, v.i));
        if (to == TJ_F32)
            return tl_flt(is_u64 ? (double)(float)(uint64_t)v.i : (double)(float)v.i);
        /* Round the integer itself, so no conversion to double rounds first. */
        int neg = !is_u64 && v.i < 0;
        uint64_t mag = neg ? 0 - (uint64_t)v.i : (uint64_t)v.i;
        return tl_flt(tl_round(to, (neg ? -1.0 : 1.0) * round_int_bits(mag, to == TJ_BF16 ? 8 : to == TJ_F16 ? 11 : to == TJ_F8E4M3 ? 4 : to == TJ_F8E5M2 ? 3 : 53)));
    }
    if (to == TJ_I1)
        return tl_int(v.f != 0);
    if (tl_is_float(to))
        return tl_flt(tl_round(to, v.f));
    double t = trunc(v.f);
    double lo = tl_is_signed(to) ? ldexp(-1, tl_bits(to) - 1) : 0;
    double hi = tl_is_signed(to) ? ldexp(1, tl_bits(to) - 1) : ldexp(1, tl_bits(to));
    if (!(t >= lo && t < hi)) {
        *defined = 0;
        return tl_int(0);
    }
    if (to == TJ_U64)
        return tl_int((int64_t)(uint64_t)t);
    return tl_int((int64_t)t);
}

/* Source values: integers over the whole range and near zero; floats near
 * zero with fractions, in (0, 250) for the unsigned targets, and large. */
static tl_num cast_input(tj_dtype t, int i)
{
    if (t == TJ_I1)
        return tl_int(tl_rand_u64() & 1);
    if (!tl_is_float(t)) {
        if (tl_bits(t) >= 32 && i % 16 == 1) {
            /* Within 1 of a tie between two bf16 values, on the side that
             * rounding to f32 first would carry onto the tie, so rounding
             * twice picks the wrong neighbor: M odd just below the tie,
             * M even just above. */
            int e = tl_bits(t) == 32 ? (int)tl_rand_range(25, 30) : (int)tl_rand_range(25, 62);
            int64_t m = tl_rand_range(128, 255);
            int64_t tie = (2 * m + 1) * ((int64_t)1 << (e - 8));
            int64_t x = m % 2 ? tie - 1 : tie + 1;
            return tl_int(tl_wrap(t, tl_is_signed(t) && (i & 32) ? -x : x));
        }
        if (i % 4 == 0)
            return tl_int(tl_wrap(t, tl_rand_range(-3, 3)));
        return tl_random(t);
    }
    double x;
    switch (i % 4) {
    case 0: x = tl_rand_double(-100, 100); break;
    case 1: x = tl_rand_double(0, 250); break;
    case 2: x = tl_rand_double(-1, 1); break;
    default: {
        double lim = t == TJ_F16 || t == TJ_F8E5M2 ? 60000 : t == TJ_F8E4M3 ? 500 : 3e9;
        x = tl_rand_double(-lim, lim);
        break;
    }
    }
    return tl_flt(tl_round(t, x));
}

static void test_casts_from(tj_dtype from)
{
    int n = (int)tl_rand_range(3 * BLOCK + 1, 4 * BLOCK - 1), grid = (n + BLOCK - 1) / BLOCK;
    size_t es = tj_dtype_size(from);
    void *x = malloc(n * es);
    for (int i = 0; i < n; i++)
        tl_set(from, x, i, cast_input(from, i));
    tj_buffer bx = tl_upload(dev, x, n * es), outs[TJ_DTYPE_COUNT];
    tj_arg args[TJ_DTYPE_COUNT + 2];
    args[0] = TJ_ARG_BUF(bx);
    for (int d = 0; d < TJ_DTYPE_COUNT; d++) {
        outs[d] = tl_poisoned(dev, n * tj_dtype_size((tj_dtype)d));
        args[d + 1] = TJ_ARG_BUF(outs[d]);
    }
    args[TJ_DTYPE_COUNT + 1] = TJ_ARG_I32(n);
    tj_launch_cfg cfg = tl_grid(grid, 1, 1);
    tj_status st = tj_launch(dev, cast_kernel(from), &cfg, args, TJ_DTYPE_COUNT + 2, NULL, 0);
    for (int d = 0; d < TJ_DTYPE_COUNT; d++) {
        tj_dtype to = (tj_dtype)d;
        char what[160];
        snprintf(what, sizeof what, "cast %s -> %s", tj_dtype_name(from), tj_dtype_name(to));
        if (tl_launch_failed(st, what))
            continue;
        void *got = malloc(n * tj_dtype_size(to));
        tl_download(dev, outs[d], got, n * tj_dtype_size(to));
        int bad = 0, checked = 0;
        for (int i = 0; i < n; i++) {
            int defined;
            tl_num v = tl_get(from, x, i), want = ref_cast(from, v, to, &defined);
            if (!defined)
                continue;
            checked++;
            tl_num g = tl_get(to, got, i);
            if (!tl_num_match(to, g, want, 0, 0) && bad++ < 4) {
                char vs[64], gs[64], ws[64];
                tl_format(vs, sizeof vs, from, v);
                tl_format(gs, sizeof gs, to, g);
                tl_format(ws, sizeof ws, to, want);
                tap_diag("  %s %s -> got %s, expected %s", tj_dtype_name(from), vs, gs, ws);
            }
        }
        tap_ok(bad == 0 && checked >= n / 4, "%s (%d values)", what, checked);
        free(got);
    }
    tj_buffer_free(dev, bx);
    for (int d = 0; d < TJ_DTYPE_COUNT; d++)
        tj_buffer_free(dev, outs[d]);
    free(x);
}

/* ---- 16-bit float round trips -------------------------------------------- */

/* From 16 bits to f32 and back, and from f32 and f64 to 16 bits. */
#define ROUND_TRIP_KERNEL(dt, DT)                                                 \
    TJ_KERNEL(trip_##dt,                                                        \
              TJ_PARAMS(TJ_PTR(h, dt), TJ_PTR(wide, f32), TJ_PTR(back, dt),     \
                        TJ_PTR(f, f32), TJ_PTR(from_f32, dt), TJ_PTR(d, f64),   \
                        TJ_PTR(from_f64, dt)),                                  \
              TJ_CONSTS())                                                      \
    {                                                                           \
        tj_val offs = tj_add(tj_mul(tj_program_id(0), 1024), tj_arange(0, 1024)); \
        tj_val w = tj_cast(tj_load(tj_add(h, offs)), TJ_F32);                   \
        tj_store(tj_add(wide, offs), w);                                        \
        tj_store(tj_add(back, offs), tj_cast(w, DT));                  \
        tj_store(tj_add(from_f32, offs), tj_cast(tj_load(tj_add(f, offs)), DT)); \
        tj_store(tj_add(from_f64, offs), tj_cast(tj_load(tj_add(d, offs)), DT)); \
    }
ROUND_TRIP_KERNEL(f16, TJ_F16)
ROUND_TRIP_KERNEL(bf16, TJ_BF16)

static int same_float(float a, float b) { return (isnan(a) && isnan(b)) || memcmp(&a, &b, 4) == 0; }

static void test_round_trip(tj_dtype t)
{
    enum { N = 65536 };
    int is_f16 = t == TJ_F16;
    uint16_t *h = malloc(2 * N), *back = malloc(2 * N), *from_f32 = malloc(2 * N),
             *from_f64 = malloc(2 * N);
    float *wide = malloc(4 * N), *f = malloc(4 * N);
    double *d = malloc(8 * N);
    for (int i = 0; i < N; i++) {
        h[i] = (uint16_t)i; /* every bit pattern */
        /* f32 values across the range: random, exact ties, specials. */
        double mag = exp2(tl_rand_double(is_f16 ? -26 : -130, is_f16 ? 17 : 128));
        float x = (float)((tl_rand_u64() & 1) ? -mag : mag);
        if (i % 8 == 1) { /* halfway between two 16-bit values: ties to even */
            if (is_f16) {
                float lo = tj_f16_to_f32((uint16_t)(tl_rand_u64() & 0x7bfe));
                float hi = tj_f16_to_f32((uint16_t)(tj_f32_to_f16(lo) + 1));
                x = (lo + hi) / 2;
            } else { /* bit 15 set, below it zeros */
                uint32_t u = (((uint32_t)(tl_rand_u64() & 0x3fff) + 0x3800) << 16) | 0x8000u;
                memcpy(&x, &u, 4);
            }
        }
        static const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN,
                                         65504.0f, 65520.0f, 70000.0f, 6e-8f, 1e-40f};
        if (i < (int)TL_COUNT(specials))
            x = specials[i];
        f[i] = x;
        d[i] = (double)x * (1 + tl_rand_double(-1e-6, 1e-6)); /* off the f32 grid */
        if (i < (int)TL_COUNT(specials))
            d[i] = x;
    }
    tj_buffer bh = tl_upload(dev, h, 2 * N), bw = tl_poisoned(dev, 4 * N),
              bb = tl_poisoned(dev, 2 * N), bf = tl_upload(dev, f, 4 * N),
              bf16 = tl_poisoned(dev, 2 * N), bd = tl_upload(dev, d, 8 * N),
              bd16 = tl_poisoned(dev, 2 * N);
    tj_arg args[] = {TJ_ARG_BUF(bh), TJ_ARG_BUF(bw), TJ_ARG_BUF(bb), TJ_ARG_BUF(bf),
                     TJ_ARG_BUF(bf16), TJ_ARG_BUF(bd), TJ_ARG_BUF(bd16)};
    tj_launch_cfg cfg = tl_grid(N / 1024, 1, 1);
    const char *name = tj_dtype_name(t);
    char w1[96], w2[96], w3[96], w4[96];
    snprintf(w1, sizeof w1, "%s -> f32 is exact for all 65536 bit patterns", name);
    snprintf(w2, sizeof w2, "%s -> f32 -> %s gives the same bits back (all patterns)", name, name);
    snprintf(w3, sizeof w3, "f32 -> %s rounds to nearest even (ties, subnormals, inf, NaN)", name);
    snprintf(w4, sizeof w4, "f64 -> %s rounds once to nearest even", name);
    tj_status st = tj_launch(dev, is_f16 ? trip_f16 : trip_bf16, &cfg, args, 7, NULL, 0);
    if (tl_launch_failed(st, w1) + tl_launch_failed(st, w2) + tl_launch_failed(st, w3) +
        tl_launch_failed(st, w4))
        goto done;
    tl_download(dev, bw, wide, 4 * N);
    tl_download(dev, bb, back, 2 * N);
    tl_download(dev, bf16, from_f32, 2 * N);
    tl_download(dev, bd16, from_f64, 2 * N);
    int bad[4] = {0};
    for (int i = 0; i < N; i++) {
        float ref = is_f16 ? tj_f16_to_f32(h[i]) : tj_bf16_to_f32(h[i]);
        if (!same_float(wide[i], ref) && bad[0]++ < 3)
            tap_diag("  %s 0x%04x -> f32 %g, expected %g", name, h[i], wide[i], ref);
        int nan = isnan(ref);
        float bk = is_f16 ? tj_f16_to_f32(back[i]) : tj_bf16_to_f32(back[i]);
        if (!(nan ? isnan(bk) : back[i] == h[i]) && bad[1]++ < 3)
            tap_diag("  %s 0x%04x came back as 0x%04x", name, h[i], back[i]);
        uint16_t want = is_f16 ? tj_f32_to_f16(f[i]) : tj_f32_to_bf16(f[i]);
        float gw = is_f16 ? tj_f16_to_f32(from_f32[i]) : tj_bf16_to_f32(from_f32[i]);
        if (!(isnan(f[i]) ? isnan(gw) : from_f32[i] == want) && bad[2]++ < 3)
            tap_diag("  f32 %.9g -> 0x%04x, expected 0x%04x", f[i], from_f32[i], want);
        double r = tl_round(t, d[i]);
        float g64 = is_f16 ? tj_f16_to_f32(from_f64[i]) : tj_bf16_to_f32(from_f64[i]);
        if (!(isnan(d[i]) ? isnan(g64) : (double)g64 == r && !signbit(g64) == !signbit(r)) &&
            bad[3]++ < 3)
            tap_diag("  f64 %.17g -> %.9g, expected %.9g", d[i], g64, r);
    }
    tap_ok(!bad[0], "%s", w1);
    tap_ok(!bad[1], "%s", w2);
    tap_ok(!bad[2], "%s", w3);
    tap_ok(!bad[3], "%s", w4);
done:
    free(h), free(back), free(from_f32), free(from_f64), free(wide), free(f), free(d);
}

/* ---- scalar arguments of every dtype ------------------------------------- */

/* out = full(s); out2 = x + s (x ^ s for i1). */
#define SCALAR_KERNEL(dt, DT)                                                   \
    TJ_KERNEL(scalar_##dt,                                                      \
              TJ_PARAMS(TJ_PTR(x, dt), TJ_PTR(out, dt), TJ_PTR(out2, dt), TJ_SCALAR(s, dt)), \
              TJ_CONSTS())                                                      \
    {                                                                           \
        tj_val k = tj_arange(0, 16);                                            \
        tj_store(tj_add(out, k), tj_full(TJ_SHAPE(16), s, DT));        \
        tj_val v = tj_load(tj_add(x, k));                                       \
        tj_store(tj_add(out2, k), DT == TJ_I1 ? tj_xor(v, s) : tj_add(v, s)); \
    }
SCALAR_KERNEL(i1, TJ_I1)
SCALAR_KERNEL(i8, TJ_I8)
SCALAR_KERNEL(i16, TJ_I16)
SCALAR_KERNEL(i32, TJ_I32)
SCALAR_KERNEL(i64, TJ_I64)
SCALAR_KERNEL(u8, TJ_U8)
SCALAR_KERNEL(u16, TJ_U16)
SCALAR_KERNEL(u32, TJ_U32)
SCALAR_KERNEL(u64, TJ_U64)
SCALAR_KERNEL(f16, TJ_F16)
SCALAR_KERNEL(bf16, TJ_BF16)
SCALAR_KERNEL(f32, TJ_F32)
SCALAR_KERNEL(f64, TJ_F64)

/* Launches scalar_<t> with s both ways; the typed launch passes the C type
 * of the dtype. */
static tj_status launch_scalar(tj_dtype t, int typed, tj_buffer x, tj_buffer o, tj_buffer o2,
                               tl_num s)
{
    tj_launch_cfg cfg = tl_grid(1, 1, 1);
    if (typed) {
        switch (t) {
        case TJ_I1: return scalar_i1_launch(dev, &cfg, x, o, o2, s.i != 0);
        case TJ_I8: return scalar_i8_launch(dev, &cfg, x, o, o2, (int8_t)s.i);
        case TJ_I16: return scalar_i16_launch(dev, &cfg, x, o, o2, (int16_t)s.i);
        case TJ_I32: return scalar_i32_launch(dev, &cfg, x, o, o2, (int32_t)s.i);
        case TJ_I64: return scalar_i64_launch(dev, &cfg, x, o, o2, s.i);
        case TJ_U8: return scalar_u8_launch(dev, &cfg, x, o, o2, (uint8_t)s.i);
        case TJ_U16: return scalar_u16_launch(dev, &cfg, x, o, o2, (uint16_t)s.i);
        case TJ_U32: return scalar_u32_launch(dev, &cfg, x, o, o2, (uint32_t)s.i);
        case TJ_U64: return scalar_u64_launch(dev, &cfg, x, o, o2, (uint64_t)s.i);
        case TJ_F16: return scalar_f16_launch(dev, &cfg, x, o, o2, (float)s.f);
        case TJ_BF16: return scalar_bf16_launch(dev, &cfg, x, o, o2, (float)s.f);
        case TJ_F32: return scalar_f32_launch(dev, &cfg, x, o, o2, (float)s.f);
        default: return scalar_f64_launch(dev, &cfg, x, o, o2, s.f);
        }
    }
    static const tj_kernel *const *kernels[TJ_DTYPE_COUNT] = {
        &scalar_i1, &scalar_i8, &scalar_i16, &scalar_i32, &scalar_i64, &scalar_u8, &scalar_u16,
        &scalar_u32, &scalar_u64, &scalar_f16, &scalar_bf16, &scalar_f32, &scalar_f64};
    tj_arg sa;
    switch (t) {
    case TJ_F16: sa = TJ_ARG_F16(s.f); break;
    case TJ_BF16: sa = TJ_ARG_BF16(s.f); break;
    case TJ_F32: sa = TJ_ARG_F32(s.f); break;
    case TJ_F64: sa = TJ_ARG_F64(s.f); break;
    case TJ_U64: sa = TJ_ARG_U64((uint64_t)s.i); break;
    case TJ_U32: sa = TJ_ARG_U32((uint64_t)s.i); break;
    case TJ_I32: sa = TJ_ARG_I32(s.i); break;
    case TJ_I64: sa = TJ_ARG_I64(s.i); break;
    default: sa = TJ_ARG_INT(t, s.i); break;
    }
    tj_arg args[] = {TJ_ARG_BUF(x), TJ_ARG_BUF(o), TJ_ARG_BUF(o2), sa};
    return tj_launch(dev, *kernels[t], &cfg, args, 4, NULL, 0);
}

static void test_scalar_arg(tj_dtype t, int typed)
{
    size_t es = tj_dtype_size(t);
    unsigned char x[16 * 8], want[16 * 8], want2[16 * 8], got[16 * 8], got2[16 * 8];
    tl_fill_random(t, x, 16);
    /* Edge values half of the time: the extremes of the range. */
    tl_num s = tl_random(t);
    if (!tl_is_float(t) && t != TJ_I1 && (tl_rand_u64() & 1))
        s = tl_int((tl_rand_u64() & 1) ? tl_int_max(t) : tl_int_min(t) ? tl_int_min(t) : 1);
    for (int i = 0; i < 16; i++) {
        tl_num v = tl_get(t, x, i), r;
        if (t == TJ_I1)
            r = tl_int(v.i ^ s.i);
        else if (tl_is_float(t))
            r = tl_flt(tl_round(t, v.f + s.f));
        else
            r = tl_int(tl_wrap(t, (int64_t)((uint64_t)v.i + (uint64_t)s.i)));
        tl_set(t, want, i, s);
        tl_set(t, want2, i, r);
    }
    tj_buffer bx = tl_upload(dev, x, 16 * es), bo = tl_poisoned(dev, 16 * es),
              bo2 = tl_poisoned(dev, 16 * es);
    char what[160], sv[64];
    tl_format(sv, sizeof sv, t, s);
    snprintf(what, sizeof what, "%s scalar argument %s via %s launch", tj_dtype_name(t), sv,
             typed ? "typed" : "generic");
    tj_status st = launch_scalar(t, typed, bx, bo, bo2, s);
    if (!tl_launch_failed(st, what)) {
        tl_download(dev, bo, got, 16 * es);
        tl_download(dev, bo2, got2, 16 * es);
        double rel = tl_is_float(t) ? tl_eps(t) : 0;
        if (memcmp(got, want, 16 * es) != 0) {
            tl_check(what, t, got, want, 16, 0, 0);
        } else {
            tl_check(what, t, got2, want2, 16, rel, 0);
        }
    }
    tj_buffer_free(dev, bx);
    tj_buffer_free(dev, bo);
    tj_buffer_free(dev, bo2);
}

/* ---- literals, typed constants, promotion -------------------------------- */

enum { MIXN = 64 };

/* A kernel out = expr(x, y) over MIXN elements of a (A) and b (B). */
#define MIX_KERNEL(name, A, B, O, expr)                                         \
    TJ_KERNEL(name, TJ_PARAMS(TJ_PTR(a, A), TJ_PTR(b, B), TJ_PTR(out, O)), TJ_CONSTS()) \
    {                                                                           \
        tj_val k = tj_arange(0, MIXN);                                          \
        tj_val x = tj_load(tj_add(a, k)), y = tj_load(tj_add(b, k));            \
        (void)x, (void)y;                                                       \
        tj_store(tj_add(out, k), expr);                                         \
    }

MIX_KERNEL(lit_i8_add, i8, i8, i8, tj_add(x, 1))
MIX_KERNEL(lit_u8_mul, u8, u8, u8, tj_mul(x, 3))
MIX_KERNEL(lit_i16_rsub, i16, i16, i16, tj_sub(10, x))
MIX_KERNEL(lit_f16_mul, f16, f16, f16, tj_mul(x, 2.5))
MIX_KERNEL(lit_bf16_add, bf16, bf16, bf16, tj_add(x, 0.75))
MIX_KERNEL(lit_i32_fmul, i32, i32, f32, tj_mul(x, 2.5))
MIX_KERNEL(lit_i32_fadd, i32, i32, f32, tj_add(x, 0.5))
MIX_KERNEL(lit_f64_mul, f64, f64, f64, tj_mul(x, 0.1))
MIX_KERNEL(lit_u64_add, u64, u64, u64, tj_add(x, 1))
MIX_KERNEL(lit_i64_add, i64, i64, i64, tj_add(x, 1))
MIX_KERNEL(lit_i32_div, i32, i32, f32, tj_div(x, 2))
MIX_KERNEL(lit_u32_shr, u32, u32, u32, tj_shr(x, 3))
MIX_KERNEL(lit_i32_relu, i32, i32, i32, tj_maximum(x, 0))
MIX_KERNEL(const_i64, i32, i32, i64, tj_add(x, tj_i64((int64_t)1 << 40)))
MIX_KERNEL(const_u32, u32, u32, u32, tj_add(x, tj_u32(4000000000u)))
MIX_KERNEL(const_f16, f16, f16, f16, tj_add(tj_f16(0.1), x))
MIX_KERNEL(const_bf16, bf16, bf16, bf16, tj_mul(tj_bf16(3.5), x))
MIX_KERNEL(const_f64, f32, f32, f64, tj_add(x, tj_f64(1.0 / 3)))
MIX_KERNEL(const_i1, i32, i32, i32, tj_add(tj_where(tj_i1(1), x, y), tj_where(tj_i1(0), x, y)))
MIX_KERNEL(const_i32_i8, i8, i8, i32, tj_mul(tj_i32(-5), x))
MIX_KERNEL(const_u8, u8, u8, u8, tj_add(tj_const(200, TJ_U8), x))
MIX_KERNEL(prom_i8_i32, i8, i32, i32, tj_add(x, y))
MIX_KERNEL(prom_i16_i64, i16, i64, i64, tj_add(x, y))
MIX_KERNEL(prom_u8_u32, u8, u32, u32, tj_add(x, y))
MIX_KERNEL(prom_f16_f32, f16, f32, f32, tj_add(x, y))
MIX_KERNEL(prom_i32_f32, i32, f32, f32, tj_add(x, y))
MIX_KERNEL(prom_f32_f64, f32, f64, f64, tj_mul(x, y))
MIX_KERNEL(prom_f16_bf16, f16, bf16, f32, tj_add(x, y))
MIX_KERNEL(prom_i32_f16, i32, f16, f16, tj_add(x, y))
MIX_KERNEL(prom_u32_i64, u32, i64, i64, tj_add(x, y))
MIX_KERNEL(prom_i32_u32, i32, u32, u32, tj_floordiv(x, y))

typedef tl_num (*mix_ref)(tl_num x, tl_num y);

#define REF(name, body) static tl_num ref_##name(tl_num x, tl_num y) { (void)x, (void)y; body }
REF(lit_i8_add, return tl_int(tl_wrap(TJ_I8, x.i + 1));)
REF(lit_u8_mul, return tl_int(tl_wrap(TJ_U8, x.i * 3));)
REF(lit_i16_rsub, return tl_int(tl_wrap(TJ_I16, 10 - x.i));)
REF(lit_f16_mul, return tl_flt(tl_round(TJ_F16, x.f * 2.5));)
REF(lit_bf16_add, return tl_flt(tl_round(TJ_BF16, x.f + 0.75));)
REF(lit_i32_fmul, return tl_flt((double)((float)x.i * 2.5f));)
REF(lit_i32_fadd, return tl_flt((double)((float)x.i + 0.5f));)
REF(lit_f64_mul, return tl_flt(x.f * 0.1);)
REF(lit_u64_add, return tl_int((int64_t)((uint64_t)x.i + 1));)
REF(lit_i64_add, return tl_int((int64_t)((uint64_t)x.i + 1));)
REF(lit_i32_div, return tl_flt((double)((float)x.i / 2.0f));)
REF(lit_u32_shr, return tl_int((int64_t)((uint64_t)x.i >> 3));)
REF(lit_i32_relu, return tl_int(x.i > 0 ? x.i : 0);)
REF(const_i64, return tl_int(x.i + ((int64_t)1 << 40));)
REF(const_u32, return tl_int(tl_wrap(TJ_U32, x.i + 4000000000ll));)
REF(const_f16, return tl_flt(tl_round(TJ_F16, tl_round(TJ_F16, 0.1) + x.f));)
REF(const_bf16, return tl_flt(tl_round(TJ_BF16, 3.5 * x.f));)
REF(const_f64, return tl_flt(x.f + 1.0 / 3);)
REF(const_i1, return tl_int(tl_wrap(TJ_I32, x.i + y.i));)
REF(const_i32_i8, return tl_int(-5 * x.i);)
REF(const_u8, return tl_int(tl_wrap(TJ_U8, 200 + x.i));)
REF(prom_i8_i32, return tl_int(tl_wrap(TJ_I32, x.i + y.i));)
REF(prom_i16_i64, return tl_int((int64_t)((uint64_t)x.i + (uint64_t)y.i));)
REF(prom_u8_u32, return tl_int(tl_wrap(TJ_U32, x.i + y.i));)
REF(prom_f16_f32, return tl_flt((double)(float)(x.f + y.f));)
REF(prom_i32_f32, return tl_flt((double)((float)x.i + (float)y.f));)
REF(prom_f32_f64, return tl_flt(x.f * y.f);)
REF(prom_f16_bf16, return tl_flt((double)(float)(x.f + y.f));)
REF(prom_i32_f16, return tl_flt(tl_round(TJ_F16, tl_round(TJ_F16, (double)x.i) + y.f));)
REF(prom_u32_i64, return tl_int((int64_t)((uint64_t)x.i + (uint64_t)y.i));)
REF(prom_i32_u32, return tl_int((int64_t)((uint32_t)x.i / (uint32_t)y.i));)

typedef struct mix_case {
    const tj_kernel *const *kernel;
    tj_dtype a, b, o;
    mix_ref ref;
    double lo, hi;       /* input range if lo < hi; else tl_random */
    int64_t edge;        /* put in a[0] if nonzero (integers) */
    const char *what;
} mix_case;

#define CASE(name, A, B, O, lo, hi, edge, what) \
    {&name, A, B, O, ref_##name, lo, hi, edge, what}

static const mix_case mix_cases[] = {
    CASE(lit_i8_add, TJ_I8, TJ_I8, TJ_I8, 0, 0, 127, "i8 tile + 1 stays i8 (127 + 1 wraps)"),
    CASE(lit_u8_mul, TJ_U8, TJ_U8, TJ_U8, 0, 0, 255, "u8 tile * 3 stays u8"),
    CASE(lit_i16_rsub, TJ_I16, TJ_I16, TJ_I16, 0, 0, -32768, "10 - i16 tile stays i16"),
    CASE(lit_f16_mul, TJ_F16, TJ_F16, TJ_F16, 0, 0, 0, "f16 tile * 2.5 stays f16"),
    CASE(lit_bf16_add, TJ_BF16, TJ_BF16, TJ_BF16, 0, 0, 0, "bf16 tile + 0.75 stays bf16"),
    CASE(lit_i32_fmul, TJ_I32, TJ_I32, TJ_F32, -100000, 100000, 0, "i32 tile * 2.5 is f32"),
    CASE(lit_i32_fadd, TJ_I32, TJ_I32, TJ_F32, -100000, 100000, 0, "i32 tile + 0.5 is f32"),
    CASE(lit_f64_mul, TJ_F64, TJ_F64, TJ_F64, 0, 0, 0,
         "f64 tile * 0.1 keeps the literal in double precision"),
    CASE(lit_u64_add, TJ_U64, TJ_U64, TJ_U64, 0, 0, -1, "u64 tile + 1 stays u64 (max wraps to 0)"),
    CASE(lit_i64_add, TJ_I64, TJ_I64, TJ_I64, 0, 0, INT64_MAX, "i64 tile + 1 stays i64"),
    CASE(lit_i32_div, TJ_I32, TJ_I32, TJ_F32, -1000000, 1000000, 0, "div(i32 tile, 2) is f32"),
    CASE(lit_i32_relu, TJ_I32, TJ_I32, TJ_I32, 0, 0, 0, "maximum(i32 tile, 0)"),
    CASE(lit_u32_shr, TJ_U32, TJ_U32, TJ_U32, 0, 0, 0xffffffffll,
         "u32 tile >> 3 is a logical shift"),
    CASE(const_i64, TJ_I32, TJ_I32, TJ_I64, 0, 0, 0, "i32 tile + tj_i64(2^40) is i64"),
    CASE(const_u32, TJ_U32, TJ_U32, TJ_U32, 0, 0, 0, "u32 tile + tj_u32(4000000000) wraps in u32"),
    CASE(const_f16, TJ_F16, TJ_F16, TJ_F16, 0, 0, 0, "tj_f16(0.1) + f16 tile"),
    CASE(const_bf16, TJ_BF16, TJ_BF16, TJ_BF16, 0, 0, 0, "tj_bf16(3.5) * bf16 tile"),
    CASE(const_f64, TJ_F32, TJ_F32, TJ_F64, 0, 0, 0, "f32 tile + tj_f64(1/3) is f64"),
    CASE(const_i1, TJ_I32, TJ_I32, TJ_I32, 0, 0, 0, "where(tj_i1(1), x, y) + where(tj_i1(0), x, y)"),
    CASE(const_i32_i8, TJ_I8, TJ_I8, TJ_I32, 0, 0, -128, "tj_i32(-5) * i8 tile is i32"),
    CASE(const_u8, TJ_U8, TJ_U8, TJ_U8, 0, 0, 100, "tj_const(200, TJ_U8) + u8 tile wraps in u8"),
    CASE(prom_i8_i32, TJ_I8, TJ_I32, TJ_I32, 0, 0, 0, "i8 tile + i32 tile is i32"),
    CASE(prom_i16_i64, TJ_I16, TJ_I64, TJ_I64, 0, 0, 0, "i16 tile + i64 tile is i64"),
    CASE(prom_u8_u32, TJ_U8, TJ_U32, TJ_U32, 0, 0, 0, "u8 tile + u32 tile is u32"),
    CASE(prom_f16_f32, TJ_F16, TJ_F32, TJ_F32, 0, 0, 0, "f16 tile + f32 tile is f32"),
    CASE(prom_i32_f32, TJ_I32, TJ_F32, TJ_F32, -100000, 100000, 0, "i32 tile + f32 tile is f32"),
    CASE(prom_f32_f64, TJ_F32, TJ_F64, TJ_F64, 0, 0, 0, "f32 tile * f64 tile is f64"),
    CASE(prom_f16_bf16, TJ_F16, TJ_BF16, TJ_F32, 0, 0, 0, "f16 tile + bf16 tile is f32"),
    CASE(prom_i32_f16, TJ_I32, TJ_F16, TJ_F16, -1000, 1000, 0, "i32 tile + f16 tile is f16"),
    CASE(prom_u32_i64, TJ_U32, TJ_I64, TJ_I64, 0, 0, 0xffffffffll, "u32 tile + i64 tile is i64"),
    CASE(prom_i32_u32, TJ_I32, TJ_U32, TJ_U32, -1000, -1, 0,
         "floordiv(i32 tile, u32 tile) divides as u32"),
};

static void test_mix(const mix_case *c)
{
    unsigned char a[MIXN * 8], b[MIXN * 8], want[MIXN * 8], got[MIXN * 8];
    for (int i = 0; i < MIXN; i++) {
        tl_set(c->a, a, i, c->lo < c->hi ? (tl_is_float(c->a) ? tl_flt(tl_round(c->a, tl_rand_double(c->lo, c->hi)))
                                                              : tl_int(tl_rand_range((int64_t)c->lo, (int64_t)c->hi)))
                                         : tl_random(c->a));
        tl_num y = tl_random(c->b);
        if (c->ref == ref_prom_i32_u32)
            y = tl_int(tl_rand_range(1, 1000));
        tl_set(c->b, b, i, y);
    }
    if (c->edge && !tl_is_float(c->a))
        tl_set(c->a, a, 0, tl_int(tl_wrap(c->a, c->edge)));
    for (int i = 0; i < MIXN; i++)
        tl_set(c->o, want, i, c->ref(tl_get(c->a, a, i), tl_get(c->b, b, i)));
    tj_buffer ba = tl_upload(dev, a, MIXN * tj_dtype_size(c->a)),
              bb = tl_upload(dev, b, MIXN * tj_dtype_size(c->b)),
              bo = tl_poisoned(dev, MIXN * tj_dtype_size(c->o));
    tj_arg args[] = {TJ_ARG_BUF(ba), TJ_ARG_BUF(bb), TJ_ARG_BUF(bo)};
    tj_launch_cfg cfg = tl_grid(1, 1, 1);
    if (!tl_launch_failed(tj_launch(dev, *c->kernel, &cfg, args, 3, NULL, 0), c->what)) {
        tl_download(dev, bo, got, MIXN * tj_dtype_size(c->o));
        double rel = c->o == TJ_F64 ? 1e-15 : c->o == TJ_F32 ? 2 * tl_eps(c->o) : tl_eps(c->o);
        tl_check(c->what, c->o, got, want, MIXN, rel, 0);
    }
    tj_buffer_free(dev, ba);
    tj_buffer_free(dev, bb);
    tj_buffer_free(dev, bo);
}

int main(void)
{
    dev = tl_setup("test_dtypes");
    for (int t = 0; t < TJ_DTYPE_COUNT; t++)
        test_casts_from((tj_dtype)t);
    test_round_trip(TJ_F16);
    test_round_trip(TJ_BF16);
    for (int t = 0; t < TL_NCOMPUTE_DTYPES; t++) { /* fp8 scalars: test_fp8.c */
        test_scalar_arg((tj_dtype)t, 1);
        test_scalar_arg((tj_dtype)t, 0);
    }
    for (size_t i = 0; i < TL_COUNT(mix_cases); i++)
        test_mix(&mix_cases[i]);
    tj_device_close(dev);
    return tap_done();
}
