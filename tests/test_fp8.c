/* SPDX-License-Identifier: MIT */
/*
 * test_fp8.c — the 8-bit floats f8e4m3 and f8e5m2: conversions, casts,
 * constants and scalar arguments, tj_dot of fp8 operands, and the errors of
 * the ops that fp8 does not take.
 *
 * The reference is written here from the formats' definition, not from
 * tjit's code: a code's value is sign * 2^(e - bias) * (1 + m / 2^M) (or
 * m * 2^(1 - bias - M) for e == 0), and rounding x picks, among the finite
 * codes, the one nearest |x| (a tie: the even code), which saturates by
 * itself; infinities give the largest finite code, NaN gives 0x7f (tjit.h).
 * Every bit pattern goes fp8 -> f32 -> fp8 through a kernel; f32 and f64
 * inputs cover random values, exact ties, values one f32 ulp either side of
 * a tie, f64 values within 2^-35 of a tie (which a rounding through f32
 * would get wrong), subnormals, overflow, infinities and NaN. The host
 * helpers (tj_f32_to_f8e4m3, ...) are checked against the same reference.
 *
 * tj_dot of fp8 on the CPU is the f32 fused multiply-add chain over the
 * fp8 values, bit for bit (the operands widen to f16 exactly); on a GPU
 * (tests/gpu/test_fp8.gpu: sm_89+ runs fp8's own mma.sync for K >= 32,
 * f16's m16n8k16 after widening for K = 16, FMA for tiles too small)
 * small-integer inputs still exactly and random ones within a K-scaled
 * bound: the fp8 tensor cores of sm_89 and sm_90 keep about 13 mantissa
 * bits while they add 32 products to the accumulator.
 */
#include "testlib.h"

static tj_device *dev;

/* --- the formats ---------------------------------------------------------- */

typedef struct format {
    tj_dtype dt;
    int mant, bias;
    int ieee_specials; /* e5m2: exponent all ones is inf (m == 0) or NaN */
} format;

static const format E4M3 = {TJ_F8E4M3, 3, 7, 0}, E5M2 = {TJ_F8E5M2, 2, 15, 1};

static double code_value(const format *f, int code)
{
    int sign = code & 0x80, mag = code & 0x7f;
    int e = mag >> f->mant, m = mag & ((1 << f->mant) - 1);
    double v;
    if (f->ieee_specials && e == (0x7f >> f->mant))
        v = m ? NAN : INFINITY;
    else if (!f->ieee_specials && mag == 0x7f)
        v = NAN;
    else if (e == 0)
        v = ldexp(m, 1 - f->bias - f->mant);
    else
        v = ldexp(1.0 + ldexp(m, -f->mant), e - f->bias);
    return sign ? -v : v;
}

static int max_code(const format *f) { return f->ieee_specials ? 0x7b : 0x7e; }

/* x rounded to the format: nearest finite code, ties to the even code. */
static int ref_round(const format *f, double x)
{
    if (isnan(x))
        return 0x7f;
    int sign = signbit(x) ? 0x80 : 0;
    double a = fabs(x);
    int best = max_code(f);
    if (a < code_value(f, best)) { /* else saturated (far from max, both distances round alike) */
        double best_d = INFINITY;
        for (int c = 0; c <= max_code(f); c++) {
            double d = fabs(code_value(f, c) - a);
            if (d < best_d || (d == best_d && !(c & 1)))
                best = c, best_d = d;
        }
    }
    return sign | best;
}

static int same_value(double got, double want)
{
    return (isnan(got) && isnan(want)) || (got == want && !signbit(got) == !signbit(want));
}

/* --- every pattern, and rounding from f32 and f64 ---------------------------- */

enum { NCONV = 4096, CBLOCK = 256 };

#define CONV_KERNEL(dt, DT)                                                                   \
    TJ_KERNEL(conv_##dt,                                                                       \
              TJ_PARAMS(TJ_PTR(h, dt), TJ_PTR(wide, f32), TJ_PTR(back, dt), TJ_PTR(f, f32),    \
                        TJ_PTR(from_f32, dt), TJ_PTR(d, f64), TJ_PTR(from_f64, dt)),           \
              TJ_CONSTS())                                                                     \
    {                                                                                          \
        tj_val offs = tj_add(tj_mul(tj_program_id(0), CBLOCK), tj_arange(0, CBLOCK));          \
        tj_val w = tj_cast(tj_load(tj_add(h, offs)), TJ_F32);                                  \
        tj_store(tj_add(wide, offs), w);                                                       \
        tj_store(tj_add(back, offs), tj_cast(w, DT));                                          \
        tj_store(tj_add(from_f32, offs), tj_cast(tj_load(tj_add(f, offs)), DT));               \
        tj_store(tj_add(from_f64, offs), tj_cast(tj_load(tj_add(d, offs)), DT));               \
    }
CONV_KERNEL(f8e4m3, TJ_F8E4M3)
CONV_KERNEL(f8e5m2, TJ_F8E5M2)

/* An f32 input: random magnitudes across the format's range and beyond,
 * exact ties, a ulp off a tie, and the specials first. */
static float conv_input(const format *f, int i)
{
    float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 1e-40f, -1e-40f,
                        (float)code_value(f, max_code(f)), (float)-code_value(f, max_code(f)),
                        (float)(code_value(f, max_code(f)) * 1.0625), 1e30f,
                        (float)ldexp(0.5, 1 - f->bias - f->mant),  /* half the least: 0 */
                        (float)ldexp(0.75, 1 - f->bias - f->mant), /* rounds to the least */
                        (float)ldexp(1.5, 1 - f->bias - f->mant),  /* tie 1 | 2: 2 */
                        (float)ldexp(2.5, 1 - f->bias - f->mant)}; /* tie 2 | 3: 2 */
    if (i < (int)TL_COUNT(specials))
        return specials[i];
    int lo = 1 - f->bias - f->mant - 3, hi = f->ieee_specials ? 17 : 10;
    int c = (int)tl_rand_range(0, max_code(f) - 1);
    float tie = (float)((code_value(f, c) + code_value(f, c + 1)) / 2); /* exact in f32 */
    float x;
    switch (i % 4) {
    case 1: x = tie; break;
    case 2: x = nextafterf(tie, (tl_rand_u64() & 1) ? INFINITY : 0); break;
    default: x = (float)exp2(tl_rand_double(lo, hi)); break;
    }
    return (tl_rand_u64() & 1) ? -x : x;
}

/* An f64 input near x: off the f32 grid, or within 2^-35 of x when x is a
 * tie (rounding to f32 first would land on the tie and round to even). */
static double conv_input_f64(float x, int i)
{
    if (i < 16 || isinf(x) || isnan(x))
        return x;
    if (i % 4 == 1)
        return (double)x * (1 + ((i & 8) ? 0x1p-35 : -0x1p-35));
    return (double)x * (1 + tl_rand_double(-1e-6, 1e-6));
}

static void test_conversions(const format *f)
{
    const char *name = tj_dtype_name(f->dt);
    uint8_t *h = malloc(NCONV), *back = malloc(NCONV), *from_f32 = malloc(NCONV), *from_f64 = malloc(NCONV);
    float *wide = malloc(4 * NCONV), *x = malloc(4 * NCONV);
    double *d = malloc(8 * NCONV);
    for (int i = 0; i < NCONV; i++) {
        h[i] = (uint8_t)i; /* every pattern, 16 times */
        x[i] = conv_input(f, i);
        d[i] = conv_input_f64(x[i], i);
    }
    tj_buffer bh = tl_upload(dev, h, NCONV), bw = tl_poisoned(dev, 4 * NCONV), bb = tl_poisoned(dev, NCONV),
              bx = tl_upload(dev, x, 4 * NCONV), bx8 = tl_poisoned(dev, NCONV), bd = tl_upload(dev, d, 8 * NCONV),
              bd8 = tl_poisoned(dev, NCONV);
    tj_arg args[] = {TJ_ARG_BUF(bh), TJ_ARG_BUF(bw), TJ_ARG_BUF(bb), TJ_ARG_BUF(bx),
                     TJ_ARG_BUF(bx8), TJ_ARG_BUF(bd), TJ_ARG_BUF(bd8)};
    tj_launch_cfg cfg = tl_grid(NCONV / CBLOCK, 1, 1);
    char w[4][128];
    snprintf(w[0], sizeof w[0], "%s -> f32 is exact for all 256 patterns (device)", name);
    snprintf(w[1], sizeof w[1], "%s -> f32 -> %s gives the bits back; NaN 0x7f%s (device)", name, name,
             f->ieee_specials ? ", inf the largest finite" : "");
    snprintf(w[2], sizeof w[2], "f32 -> %s rounds to nearest even, saturating (ties, subnormals, inf, NaN; device)",
             name);
    snprintf(w[3], sizeof w[3], "f64 -> %s rounds once (within 2^-35 of ties; device)", name);
    tj_status st = tj_launch(dev, f->dt == TJ_F8E4M3 ? conv_f8e4m3 : conv_f8e5m2, &cfg, args, 7, NULL, 0);
    int failed = 0;
    for (int k = 0; k < 4; k++)
        failed |= tl_launch_failed(st, w[k]);
    if (!failed) {
        tl_download(dev, bw, wide, 4 * NCONV);
        tl_download(dev, bb, back, NCONV);
        tl_download(dev, bx8, from_f32, NCONV);
        tl_download(dev, bd8, from_f64, NCONV);
        int bad[4] = {0};
        for (int i = 0; i < NCONV; i++) {
            double v = code_value(f, h[i]);
            if (!same_value(wide[i], v) && bad[0]++ < 3)
                tap_diag("  %s 0x%02x -> %.9g, expected %.9g", name, h[i], wide[i], v);
            int want_back = isnan(v) ? 0x7f : isinf(v) ? (h[i] & 0x80) | max_code(f) : h[i];
            if (back[i] != want_back && bad[1]++ < 3)
                tap_diag("  %s 0x%02x came back as 0x%02x, expected 0x%02x", name, h[i], back[i], want_back);
            if (from_f32[i] != ref_round(f, x[i]) && bad[2]++ < 3)
                tap_diag("  f32 %.9g -> 0x%02x, expected 0x%02x", x[i], from_f32[i], ref_round(f, x[i]));
            if (from_f64[i] != ref_round(f, d[i]) && bad[3]++ < 3)
                tap_diag("  f64 %.17g -> 0x%02x, expected 0x%02x", d[i], from_f64[i], ref_round(f, d[i]));
        }
        for (int k = 0; k < 4; k++)
            tap_ok(!bad[k], "%s", w[k]);
    }
    /* The host helpers, on the same inputs. */
    int bad_to = 0, bad_from = 0;
    for (int i = 0; i < NCONV; i++) {
        int got = f->dt == TJ_F8E4M3 ? tj_f32_to_f8e4m3(x[i]) : tj_f32_to_f8e5m2(x[i]);
        if (got != ref_round(f, x[i]) && bad_to++ < 3)
            tap_diag("  host f32 %.9g -> 0x%02x, expected 0x%02x", x[i], got, ref_round(f, x[i]));
        float v = f->dt == TJ_F8E4M3 ? tj_f8e4m3_to_f32((uint8_t)i) : tj_f8e5m2_to_f32((uint8_t)i);
        if (i < 256 && !same_value(v, code_value(f, i)) && bad_from++ < 3)
            tap_diag("  host 0x%02x -> %.9g, expected %.9g", i, v, code_value(f, i));
    }
    tap_ok(!bad_to && !bad_from, "tj_f32_to_%s and tj_%s_to_f32 on the host agree with the reference", name,
           name);
    tj_buffer bufs[] = {bh, bw, bb, bx, bx8, bd, bd8};
    for (size_t k = 0; k < TL_COUNT(bufs); k++)
        tj_buffer_free(dev, bufs[k]);
    free(h), free(back), free(from_f32), free(from_f64), free(wide), free(x), free(d);
}

/* --- integers <-> fp8 ------------------------------------------------------- */

#define INT_KERNEL(dt, DT)                                                                    \
    TJ_KERNEL(ints_##dt,                                                                       \
              TJ_PARAMS(TJ_PTR(h, dt), TJ_PTR(o_i32, i32), TJ_PTR(o_i8, i8), TJ_PTR(o_u8, u8), \
                        TJ_PTR(o_i1, i1), TJ_PTR(i, i32), TJ_PTR(from_i32, dt), TJ_PTR(l, i64), \
                        TJ_PTR(from_i64, dt), TJ_PTR(u, u8), TJ_PTR(from_u8, dt)),             \
              TJ_CONSTS())                                                                     \
    {                                                                                          \
        tj_val offs = tj_arange(0, 256);                                                       \
        tj_val v = tj_load(tj_add(h, offs));                                                   \
        tj_store(tj_add(o_i32, offs), tj_cast(v, TJ_I32));                                     \
        tj_store(tj_add(o_i8, offs), tj_cast(v, TJ_I8));                                       \
        tj_store(tj_add(o_u8, offs), tj_cast(v, TJ_U8));                                       \
        tj_store(tj_add(o_i1, offs), tj_cast(v, TJ_I1));                                       \
        tj_store(tj_add(from_i32, offs), tj_cast(tj_load(tj_add(i, offs)), DT));               \
        tj_store(tj_add(from_i64, offs), tj_cast(tj_load(tj_add(l, offs)), DT));               \
        tj_store(tj_add(from_u8, offs), tj_cast(tj_load(tj_add(u, offs)), DT));                \
    }
INT_KERNEL(f8e4m3, TJ_F8E4M3)
INT_KERNEL(f8e5m2, TJ_F8E5M2)

/* fp8 -> integer: toward zero, saturating at the integer's range; NaN 0. */
static int64_t ref_to_int(double v, int64_t lo, int64_t hi)
{
    if (isnan(v))
        return 0;
    double t = trunc(v);
    return t < (double)lo ? lo : t > (double)hi ? hi : (int64_t)t;
}

static void test_ints(const format *f)
{
    const char *name = tj_dtype_name(f->dt);
    uint8_t h[256], u[256], o_i8[256], o_u8[256], o_i1[256], fi[256], fl[256], fu[256];
    int32_t o_i32[256], iv[256];
    int64_t lv[256];
    for (int k = 0; k < 256; k++) {
        h[k] = (uint8_t)k;
        u[k] = (uint8_t)tl_rand_u64();
        /* small integers, ties between fp8 integers, the range's edge and past it */
        switch (k % 4) {
        case 0: iv[k] = (int32_t)tl_rand_range(-40, 40); break;
        case 1: iv[k] = (int32_t)tl_rand_range(-70000, 70000); break;
        case 2: { /* halfway between two fp8 integers: ties to even */
            int c = (int)tl_rand_range(0x58, max_code(f) - 1);
            iv[k] = (int32_t)((code_value(f, c) + code_value(f, c + 1)) / 2) * ((k & 8) ? -1 : 1);
            break;
        }
        default: iv[k] = (k & 4) ? INT32_MIN : INT32_MAX; break;
        }
        lv[k] = (k % 2) ? (int64_t)tl_rand_u64() : tl_rand_range(-1000, 1000);
    }
    tj_buffer bh = tl_upload(dev, h, 256), b32 = tl_poisoned(dev, 4 * 256), b8 = tl_poisoned(dev, 256),
              bu8 = tl_poisoned(dev, 256), b1 = tl_poisoned(dev, 256), bi = tl_upload(dev, iv, 4 * 256),
              bfi = tl_poisoned(dev, 256), bl = tl_upload(dev, lv, 8 * 256), bfl = tl_poisoned(dev, 256),
              bu = tl_upload(dev, u, 256), bfu = tl_poisoned(dev, 256);
    tj_arg args[] = {TJ_ARG_BUF(bh), TJ_ARG_BUF(b32), TJ_ARG_BUF(b8), TJ_ARG_BUF(bu8),
                     TJ_ARG_BUF(b1), TJ_ARG_BUF(bi), TJ_ARG_BUF(bfi), TJ_ARG_BUF(bl),
                     TJ_ARG_BUF(bfl), TJ_ARG_BUF(bu), TJ_ARG_BUF(bfu)};
    char w1[128], w2[128];
    snprintf(w1, sizeof w1, "%s -> i32, i8, u8, i1: toward zero, saturating, NaN 0 (i1: NaN true)", name);
    snprintf(w2, sizeof w2, "i32, i64, u8 -> %s: rounded once, saturating", name);
    tj_launch_cfg cfg = tl_grid(1, 1, 1);
    tj_status st = tj_launch(dev, f->dt == TJ_F8E4M3 ? ints_f8e4m3 : ints_f8e5m2, &cfg, args, 11, NULL, 0);
    if (!tl_launch_failed(st, w1) && !tl_launch_failed(st, w2)) {
        tl_download(dev, b32, o_i32, 4 * 256);
        tl_download(dev, b8, o_i8, 256);
        tl_download(dev, bu8, o_u8, 256);
        tl_download(dev, b1, o_i1, 256);
        tl_download(dev, bfi, fi, 256);
        tl_download(dev, bfl, fl, 256);
        tl_download(dev, bfu, fu, 256);
        int bad1 = 0, bad2 = 0;
        for (int k = 0; k < 256; k++) {
            double v = code_value(f, k);
            int ok = o_i32[k] == ref_to_int(v, INT32_MIN, INT32_MAX) &&
                     (int8_t)o_i8[k] == ref_to_int(v, -128, 127) && o_u8[k] == ref_to_int(v, 0, 255) &&
                     o_i1[k] == (v != 0 || isnan(v));
            if (!ok && bad1++ < 3)
                tap_diag("  0x%02x (%g) -> i32 %d, i8 %d, u8 %u, i1 %u", k, v, o_i32[k], (int8_t)o_i8[k],
                         o_u8[k], o_i1[k]);
            if ((fi[k] != ref_round(f, iv[k]) || fl[k] != ref_round(f, (double)lv[k]) ||
                 fu[k] != ref_round(f, u[k])) && bad2++ < 3)
                tap_diag("  %d -> 0x%02x (want 0x%02x), %lld -> 0x%02x (want 0x%02x), %u -> 0x%02x (want 0x%02x)",
                         iv[k], fi[k], ref_round(f, iv[k]), (long long)lv[k], fl[k], ref_round(f, (double)lv[k]),
                         u[k], fu[k], ref_round(f, u[k]));
        }
        tap_ok(!bad1, "%s", w1);
        tap_ok(!bad2, "%s", w2);
    }
    tj_buffer bufs[] = {bh, b32, b8, bu8, b1, bi, bfi, bl, bfl, bu, bfu};
    for (size_t k = 0; k < TL_COUNT(bufs); k++)
        tj_buffer_free(dev, bufs[k]);
}

/* --- constants, where, masked loads, scalar arguments ----------------------- */

/* out[0:16] = full(s); out[16:32] = where(k even, x, -1000.0 (saturates));
 * out[32:48] = x masked to k < 5, other 0.3; out[48:64] = tj_f8e5m2(1e9)
 * cast to dt (e5m2's largest, then rounded again). */
#define CONST_KERNEL(dt, DT)                                                                  \
    TJ_KERNEL(consts_##dt, TJ_PARAMS(TJ_PTR(x, dt), TJ_PTR(out, dt), TJ_SCALAR(s, dt)),        \
              TJ_CONSTS())                                                                     \
    {                                                                                          \
        tj_val k = tj_arange(0, 16);                                                           \
        tj_store(tj_add(out, k), tj_full(TJ_SHAPE(16), s, DT));                                \
        tj_val v = tj_load(tj_add(x, k));                                                      \
        tj_val even = tj_eq(tj_mod(k, 2), 0);                                                  \
        tj_store(tj_add(tj_add(out, 16), k), tj_where(even, v, tj_const(-1000.0, DT)));        \
        tj_store(tj_add(tj_add(out, 32), k), tj_load(tj_add(x, k), .mask = tj_lt(k, 5),        \
                                                      .other = tj_const(0.3, DT)));            \
        tj_store(tj_add(tj_add(out, 48), k),                                                   \
                 tj_cast(tj_full(TJ_SHAPE(16), tj_f8e5m2(1e9), TJ_F8E5M2), DT));               \
    }
CONST_KERNEL(f8e4m3, TJ_F8E4M3)
CONST_KERNEL(f8e5m2, TJ_F8E5M2)

static void test_consts(const format *f, int typed)
{
    const char *name = tj_dtype_name(f->dt);
    uint8_t x[16], got[64], want[64];
    for (int k = 0; k < 16; k++)
        x[k] = (uint8_t)ref_round(f, tl_rand_double(-8, 8));
    double s = tl_rand_double(-300, 300);
    for (int k = 0; k < 16; k++) {
        want[k] = (uint8_t)ref_round(f, s);
        want[16 + k] = k % 2 == 0 ? x[k] : (uint8_t)ref_round(f, -1000.0);
        want[32 + k] = k < 5 ? x[k] : (uint8_t)ref_round(f, 0.3);
        want[48 + k] = (uint8_t)ref_round(f, code_value(&E5M2, max_code(&E5M2)));
    }
    tj_buffer bx = tl_upload(dev, x, 16), bo = tl_poisoned(dev, 64);
    tj_launch_cfg cfg = tl_grid(1, 1, 1);
    tj_status st;
    if (typed)
        st = f->dt == TJ_F8E4M3 ? consts_f8e4m3_launch(dev, &cfg, bx, bo, s)
                                : consts_f8e5m2_launch(dev, &cfg, bx, bo, s);
    else
        st = tj_launch(dev, f->dt == TJ_F8E4M3 ? consts_f8e4m3 : consts_f8e5m2, &cfg,
                       (tj_arg[]){TJ_ARG_BUF(bx), TJ_ARG_BUF(bo), TJ_ARG_F64(s)}, 3, NULL, 0);
    char what[160];
    snprintf(what, sizeof what, "%s: scalar argument %.17g (%s launch), constants, where, masked load's other",
             name, s, typed ? "typed" : "generic");
    if (!tl_launch_failed(st, what)) {
        tl_download(dev, bo, got, 64);
        int bad = 0;
        for (int k = 0; k < 64; k++)
            if (got[k] != want[k] && bad++ < 4)
                tap_diag("  [%d] got 0x%02x, expected 0x%02x", k, got[k], want[k]);
        tap_ok(!bad, "%s", what);
    }
    tj_buffer_free(dev, bx);
    tj_buffer_free(dev, bo);
}

/* --- tj_dot ---------------------------------------------------------------- */

/* c = a @ b (+ acc), a of dtype A, b of dtype B; TRANS_B: b stored [N, K]
 * (unbatched only), which the GPU reads by ldmatrix like a. */
#define FP8_DOT_KERNEL(NAME, A, B)                                                                 \
    TJ_KERNEL(NAME, TJ_PARAMS(TJ_PTR(a, A), TJ_PTR(b, B), TJ_PTR(acc, f32), TJ_PTR(c, f32)),        \
              TJ_CONSTS(BATCH, M, N, K, HAS_ACC, TRANS_B))                                          \
    {                                                                                               \
        tj_val ta = tj_load(tj_add(a, TL_IDX(BATCH, M, K)));                                       \
        tj_val tb = TRANS_B ? tj_trans(tj_load(tj_add(b, TL_TILE_IDX(N, K))))                      \
                            : tj_load(tj_add(b, TL_IDX(BATCH, K, N)));                             \
        tj_val tacc = HAS_ACC ? tj_load(tj_add(acc, TL_IDX(BATCH, M, N))) : TJ_NONE;               \
        tj_store(tj_add(c, TL_IDX(BATCH, M, N)), tj_dot(ta, tb, tacc));                            \
    }
FP8_DOT_KERNEL(dot_e4m3, f8e4m3, f8e4m3)
FP8_DOT_KERNEL(dot_e5m2, f8e5m2, f8e5m2)
FP8_DOT_KERNEL(dot_e4m3_e5m2, f8e4m3, f8e5m2)
FP8_DOT_KERNEL(dot_e5m2_e4m3, f8e5m2, f8e4m3)

/* Small integers (every partial sum exact) or random values in (-2, 2). */
static void fill_fp8(const format *f, uint8_t *p, size_t n, int small)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)ref_round(f, small ? (double)tl_rand_range(-4, 4)
                                           : tl_rand_double(-1, 1) + tl_rand_double(-1, 1));
}

/* Twice one unit in the 13th mantissa bit of |x|. */
static double unit13(double x)
{
    int e;
    frexp(x, &e);
    return x == 0 ? 0 : ldexp(1.0, e - 13);
}

/* The GPU's error bound for one element, K-scaled. Per mma.sync of 32
 * products, sm_89's and sm_90's fp8 tensor cores add the products aligned
 * to the largest term and keep about 13 mantissa bits of the sum, not 23
 * (measured by others: SageAttention2, DeepSeek-V3): at worst the 32
 * products, the accumulator and the result each lose half a unit13 of the
 * largest of them, 17 units in all. f32's own reordering is far below
 * that; f16's m16n8k16 and the FMA form are well inside it. */
static double gpu_bound(float acc, const float *p, int K)
{
    double bound = 0, s = acc;
    for (int k0 = 0; k0 < K; k0 += 32) {
        double big = fabs(s);
        for (int k = k0; k < k0 + 32 && k < K; k++) {
            big = fmax(big, fabs(p[k]));
            s += p[k];
        }
        bound += 17 * unit13(fmax(big, fabs(s)));
    }
    return bound;
}

static void dot_case(const tj_kernel *k, const format *fa, const format *fb, int batch, int M, int N, int K,
                     int has_acc, int trans_b, int small)
{
    size_t na = (size_t)batch * M * K, nb = (size_t)batch * K * N, nc = (size_t)batch * M * N;
    uint8_t *a = malloc(na), *b = malloc(nb);
    float *acc = malloc(4 * nc), *want = malloc(4 * nc), *got = malloc(4 * nc), *p = malloc(4 * (size_t)K);
    double *bound = malloc(sizeof(double) * nc);
    fill_fp8(fa, a, na, small);
    fill_fp8(fb, b, nb, small);
    for (size_t i = 0; i < nc; i++)
        acc[i] = small ? (float)tl_rand_range(-8, 8) : (float)tl_rand_double(-4, 4);
    for (int bi = 0; bi < batch; bi++)
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++) {
                size_t ci = ((size_t)bi * M + m) * N + n;
                float s = has_acc ? acc[ci] : 0.0f;
                for (int kk = 0; kk < K; kk++) {
                    size_t bk = trans_b ? (size_t)n * K + kk : ((size_t)bi * K + kk) * N + n;
                    float x = (float)code_value(fa, a[((size_t)bi * M + m) * K + kk]), y = (float)code_value(fb, b[bk]);
                    p[kk] = x * y; /* exact: 4 by 4 significant bits */
                    s = fmaf(x, y, s);
                }
                want[ci] = s;
                bound[ci] = gpu_bound(has_acc ? acc[ci] : 0.0f, p, K);
            }
    tj_buffer ba = tl_upload(dev, a, na), bb = tl_upload(dev, b, nb), bacc = tl_upload(dev, acc, 4 * nc),
              bc = tl_poisoned(dev, 4 * nc);
    char what[160];
    snprintf(what, sizeof what, "dot %s x %s -> f32, %dx%dx%dx%d%s%s, %s inputs", tj_dtype_name(fa->dt),
             tj_dtype_name(fb->dt), batch, M, N, K, trans_b ? " (b transposed)" : "", has_acc ? " + acc" : "",
             small ? "small-integer" : "random");
    tj_arg args[] = {TJ_ARG_BUF(ba), TJ_ARG_BUF(bb), TJ_ARG_BUF(bacc), TJ_ARG_BUF(bc)};
    int64_t consts[] = {batch, M, N, K, has_acc, trans_b};
    tj_status st = tj_launch(dev, k, &(tj_launch_cfg){.grid = {1}}, args, 4, consts, 6);
    if (!tl_launch_failed(st, what)) {
        tl_download(dev, bc, got, 4 * nc);
        /* the CPU's f32 fma chain is the reference's; small integers are exact anywhere */
        if (tj_device_get_kind(dev) == TJ_DEVICE_CPU || small) {
            tl_check(what, TJ_F32, got, want, nc, 0, 0);
        } else {
            size_t bad = 0;
            for (size_t i = 0; i < nc; i++)
                if (!(fabs((double)got[i] - want[i]) <= bound[i]) && bad++ < 5)
                    tap_diag("  [%zu] got %.9g, expected %.9g within %.3g", i, got[i], want[i], bound[i]);
            tap_ok(bad == 0, "%s, within 13-bit accumulation per 32 products (%zu of %zu off)", what, bad, nc);
        }
    }
    tj_buffer_free(dev, ba);
    tj_buffer_free(dev, bb);
    tj_buffer_free(dev, bacc);
    tj_buffer_free(dev, bc);
    free(a), free(b), free(acc), free(want), free(got), free(p), free(bound);
}

/* --- errors ----------------------------------------------------------------- */

static int bad_case0_line; /* case i of bad_fp8 is on line bad_case0_line + i */

TJ_KERNEL(bad_fp8, TJ_PARAMS(TJ_PTR(p, f8e4m3), TJ_PTR(q, f8e5m2), TJ_PTR(h, f16), TJ_PTR(o, f32)),
          TJ_CONSTS(CASE))
{
    tj_val x = tj_load(tj_add(p, TL_TILE_IDX(16, 16)));  /* f8e4m3 [16, 16] */
    tj_val y = tj_load(tj_add(q, TL_TILE_IDX(16, 16)));  /* f8e5m2 [16, 16] */
    tj_val hh = tj_load(tj_add(h, TL_TILE_IDX(16, 16))); /* f16 [16, 16] */
    tj_val r = TJ_NONE;
    bad_case0_line = __LINE__ + 2;
    switch (CASE) {
    case 0: r = tj_add(x, x); break;
    case 1: r = tj_mul(y, 2.0); break;
    case 2: r = tj_exp(x); break;
    case 3: r = tj_sum(x, 0); break;
    case 4: r = tj_lt(x, 1.0); break;
    case 5: r = tj_atomic_add(tj_add(p, TL_TILE_IDX(16, 16)), x); break;
    case 6: r = tj_dot(x, hh, TJ_NONE); break;
    case 7: r = tj_dot(x, y, TJ_NONE, .out_dtype = TJ_F16); break;
    case 8: r = tj_dot(x, x, TJ_NONE, .input_precision = TJ_PRECISION_TF32); break;
    default: r = tj_maximum(x, y); break; /* meets in f32: allowed, and the control */
    }
    tj_store(tj_add(o, TL_TILE_IDX(16, 16)), tj_cast(r, TJ_F32));
}

static void error_case(int which, const char *op, tj_status want, const char *words)
{
    char *text = NULL;
    int64_t c = which;
    tj_status st = tj_kernel_ir(bad_fp8, &c, 1, &text);
    free(text);
    const char *where = tl_where(__FILE__, bad_case0_line + which);
    if (want == TJ_OK) {
        tap_ok(st == TJ_OK, "case %d: '%s' of f8e4m3 and f8e5m2 meets in f32 and builds (%s)", which, op,
               tj_status_name(st));
        return;
    }
    tap_ok(st == want && tl_error_mentions("bad_fp8", op, where, words, NULL),
           "error %d: '%s' %s at %s (%s: %s)", which, op, words, where, tj_status_name(st), tj_last_error());
}

int main(void)
{
    dev = tl_setup("test_fp8");
    const format *formats[] = {&E4M3, &E5M2};
    for (int i = 0; i < 2; i++) {
        test_conversions(formats[i]);
        test_ints(formats[i]);
        test_consts(formats[i], 1);
        test_consts(formats[i], 0);
    }
    /* On a GPU of sm_89+ (4 warps): FMA (16x16), fp8's own mma.sync (K >= 32),
     * f16's after widening (K = 16); b transposed: ldmatrix for both operands. */
    static const int shapes[][5] = {{1, 16, 16, 16, 0}, {1, 32, 64, 32, 0}, {1, 64, 16, 64, 0},
                                    {2, 16, 32, 16, 0}, {1, 64, 64, 128, 0}, {1, 64, 32, 64, 1}};
    const tj_kernel *kernels[] = {dot_e4m3, dot_e5m2, dot_e4m3_e5m2, dot_e5m2_e4m3};
    const format *fas[] = {&E4M3, &E5M2, &E4M3, &E5M2}, *fbs[] = {&E4M3, &E5M2, &E5M2, &E4M3};
    for (size_t s = 0; s < TL_COUNT(shapes); s++)
        for (int small = 1; small >= 0; small--)
            for (int i = 0; i < 4; i++)
                dot_case(kernels[i], fas[i], fbs[i], shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3],
                         (int)(s + (size_t)i) % 2, shapes[s][4], small);
    error_case(0, "add", TJ_ERR_TYPE, "cast to f32 first");
    error_case(1, "mul", TJ_ERR_TYPE, "cast to f32 first");
    error_case(2, "exp", TJ_ERR_TYPE, "cast to f32 first");
    error_case(3, "sum", TJ_ERR_TYPE, "cast to f32 first");
    error_case(4, "lt", TJ_ERR_TYPE, "cast to f32 first");
    error_case(5, "atomic_add", TJ_ERR_TYPE, "cast to f32 first");
    error_case(6, "dot", TJ_ERR_TYPE, "dtypes differ");
    error_case(7, "dot", TJ_ERR_TYPE, "gives f32");
    error_case(8, "dot", TJ_ERR_TYPE, "applies to f32");
    error_case(9, "maximum", TJ_OK, "");
    tj_device_close(dev);
    return tap_done();
}
