/* SPDX-License-Identifier: MIT */
/*
 * test_rounding.c — tj_rint, tj_round, tj_trunc, tj_isnan, tj_isinf,
 * tj_isfinite, tj_signbit, tj_copysign and tj_clamp, exactly, on the device
 * under test (TJIT_TEST_DEVICE), against the C library.
 *
 * These ops have one right answer each, so every element must match bit
 * for bit (the sign of a zero too): the rounding functions over the ties
 * where rint and round differ (±0.5, ±1.5, ±2.5), values past the last
 * fraction bit of the dtype, ±0, ±inf, NaN and random values; the classes
 * and the sign bit over the same inputs; copysign of every input with the
 * sign of another (NaNs and zeros of both signs among them) bit for bit;
 * clamp with random bounds (lo <= hi), NaN inputs under both NaN rules,
 * integer dtypes, a tile bound and a scalar one. Then the errors (a
 * pointer, an fp8 operand, a bad option) and the PTX of every kernel for
 * sm_80 and sm_90 (assembled by ptxas where make check sets it).
 */
#include "testlib.h"

enum { N = 512, FN_RINT, FN_ROUND, FN_TRUNC, FN_ISNAN, FN_ISINF, FN_ISFINITE, FN_SIGNBIT };

/* o[i] = FN(x[i]); the classes are stored as the dtype (0 or 1). */
#define ROUNDING_KERNEL(NAME, DT)                                                                   \
    TJ_KERNEL(NAME, TJ_PARAMS(TJ_PTR(x, DT), TJ_PTR(o, DT)), TJ_CONSTS(FN))                        \
    {                                                                                               \
        tj_val offs = tj_arange(0, N), a = tj_load(tj_add(x, offs));                               \
        tj_val r = FN == FN_RINT    ? tj_rint(a)                                                    \
                 : FN == FN_ROUND   ? tj_round(a)                                                   \
                 : FN == FN_TRUNC   ? tj_trunc(a)                                                   \
                 : FN == FN_ISNAN   ? tj_isnan(a)                                                   \
                 : FN == FN_ISINF   ? tj_isinf(a)                                                   \
                 : FN == FN_ISFINITE ? tj_isfinite(a)                                               \
                                    : tj_signbit(a);                                                \
        tj_store(tj_add(o, offs), tj_cast(r, TJ_##DT));                                             \
    }
#define TJ_f16 TJ_F16
#define TJ_bf16 TJ_BF16
#define TJ_f32 TJ_F32
#define TJ_f64 TJ_F64
#define TJ_i32 TJ_I32
#define TJ_u8 TJ_U8
ROUNDING_KERNEL(round_f16, f16)
ROUNDING_KERNEL(round_bf16, bf16)
ROUNDING_KERNEL(round_f32, f32)
ROUNDING_KERNEL(round_f64, f64)
ROUNDING_KERNEL(round_i32, i32) /* the classes of integers; rounding makes them f32 */

/* o[i] = copysign(x[i], x[N - 1 - i]) */
#define COPYSIGN_KERNEL(NAME, DT)                                                                   \
    TJ_KERNEL(NAME, TJ_PARAMS(TJ_PTR(x, DT), TJ_PTR(o, DT)), TJ_CONSTS())                          \
    {                                                                                               \
        tj_val offs = tj_arange(0, N);                                                              \
        tj_val a = tj_load(tj_add(x, offs)), b = tj_load(tj_sub(tj_add(x, N - 1), offs));          \
        tj_store(tj_add(o, offs), tj_copysign(a, b));                                               \
    }
COPYSIGN_KERNEL(copysign_f16, f16)
COPYSIGN_KERNEL(copysign_bf16, bf16)
COPYSIGN_KERNEL(copysign_f32, f32)
COPYSIGN_KERNEL(copysign_f64, f64)

/* o = clamp(x, lo, hi) with lo, hi tiles (TILE) or the scalars lo[0], hi[0]. */
#define CLAMP_KERNEL(NAME, DT)                                                                      \
    TJ_KERNEL(NAME, TJ_PARAMS(TJ_PTR(x, DT), TJ_PTR(lo, DT), TJ_PTR(hi, DT), TJ_PTR(o, DT)),       \
              TJ_CONSTS(TILE, NAN_ALL))                                                             \
    {                                                                                               \
        tj_val offs = tj_arange(0, N), a = tj_load(tj_add(x, offs));                               \
        tj_val l = TILE ? tj_load(tj_add(lo, offs)) : tj_load(lo);                                  \
        tj_val h = TILE ? tj_load(tj_add(hi, offs)) : tj_load(hi);                                  \
        tj_val r = NAN_ALL ? tj_clamp(a, l, h, .propagate_nan = TJ_PROPAGATE_NAN_ALL) : tj_clamp(a, l, h); \
        tj_store(tj_add(o, offs), r);                                                               \
    }
CLAMP_KERNEL(clamp_f16, f16)
CLAMP_KERNEL(clamp_f32, f32)
CLAMP_KERNEL(clamp_f64, f64)
CLAMP_KERNEL(clamp_i32, i32)
CLAMP_KERNEL(clamp_u8, u8)

TJ_KERNEL(clamp_ptr, TJ_PARAMS(TJ_PTR(x, f32)), TJ_CONSTS())
{
    tj_clamp(x, 0, 1);
}
TJ_KERNEL(isnan_ptr, TJ_PARAMS(TJ_PTR(x, f32)), TJ_CONSTS())
{
    tj_isnan(x);
}
TJ_KERNEL(rint_fp8, TJ_PARAMS(TJ_PTR(x, f8e4m3)), TJ_CONSTS())
{
    tj_rint(tj_load(x));
}
TJ_KERNEL(clamp_bad_opts, TJ_PARAMS(TJ_PTR(x, f32)), TJ_CONSTS())
{
    tj_clamp(tj_load(x), 0, 1, .propagate_nan = (tj_propagate_nan)7);
}

static const char *const fn_names[] = {[FN_RINT] = "rint", [FN_ROUND] = "round", [FN_TRUNC] = "trunc",
                                       [FN_ISNAN] = "isnan", [FN_ISINF] = "isinf", [FN_ISFINITE] = "isfinite",
                                       [FN_SIGNBIT] = "signbit"};

static double reference(int fn, double v)
{
    switch (fn) {
    case FN_RINT: return rint(v); /* the default rounding mode: ties to even */
    case FN_ROUND: return round(v);
    case FN_TRUNC: return trunc(v);
    case FN_ISNAN: return isnan(v) != 0;
    case FN_ISINF: return isinf(v) != 0;
    case FN_ISFINITE: return isfinite(v) != 0;
    default: return signbit(v) != 0;
    }
}

/* Inputs of dtype dt: the edges, then random values of every magnitude. */
static void inputs(tj_dtype dt, double *x)
{
    static const double edges[] = {0.5,  -0.5, 1.5,  -1.5, 2.5,      -2.5,      0.0,  -0.0, 0.49999, -0.49999,
                                   3.5,  -3.5, 1e-3, -1e-3, INFINITY, -INFINITY, NAN, -NAN, 1e30, -1e30,  4097.5,
                                   2049, -2049, 255.5, 8388609.0, 4503599627370497.0, 0.75, -0.25, 1.0};
    int nedges = (int)TL_COUNT(edges);
    for (int i = 0; i < N; i++) {
        double v = i < nedges ? edges[i] : i % 3 == 0 ? tl_rand_double(-4, 4)
                                         : i % 3 == 1 ? tl_rand_double(-300, 300)
                                                      : ldexp(tl_rand_double(-1, 1), (int)tl_rand_range(-20, 60));
        x[i] = tl_round(dt, v); /* the value the buffer holds */
    }
}

static int same_float(double got, double want)
{
    return isnan(want) ? isnan(got) != 0 : got == want && signbit(got) == signbit(want);
}

static void run_rounding(tj_device *dev, const tj_kernel *k, tj_dtype dt)
{
    size_t size = N * tj_dtype_size(dt);
    uint8_t rx[N * 8], ro[N * 8];
    double x[N];
    inputs(dt, x);
    for (int i = 0; i < N; i++)
        tl_set(dt, rx, (size_t)i, dt == TJ_I32 ? tl_int((int64_t)tl_rand_range(-100000, 100000)) : tl_flt(x[i]));
    tj_buffer bx = tl_upload(dev, rx, size), bo = tl_poisoned(dev, size);
    for (int64_t fn = dt == TJ_I32 ? FN_ISNAN : FN_RINT; fn <= FN_SIGNBIT; fn++) {
        tl_repoison(dev, bo, size);
        tj_launch_cfg cfg = {.grid = {1}};
        tj_arg args[] = {TJ_ARG_BUF(bx), TJ_ARG_BUF(bo)};
        char what[64];
        snprintf(what, sizeof what, "%s of %s, exactly", fn_names[fn], tj_dtype_name(dt));
        if (tl_launch_failed(tj_launch(dev, k, &cfg, args, 2, &fn, 1), what))
            continue;
        tl_download(dev, bo, ro, size);
        int wrong = 0;
        for (int i = 0; i < N; i++) {
            double v = dt == TJ_I32 ? (double)tl_get(dt, rx, (size_t)i).i : x[i];
            double want = reference((int)fn, v);
            double got = dt == TJ_I32 ? (double)tl_get(dt, ro, (size_t)i).i : tl_get(dt, ro, (size_t)i).f;
            if (!same_float(got, want) && wrong++ < 4)
                tap_diag("%s(%.17g) = %.17g, expected %.17g", fn_names[fn], v, got, want);
        }
        tap_ok(!wrong, "%s", what);
    }
    tj_buffer_free(dev, bx), tj_buffer_free(dev, bo);
}

/* copysign, bit for bit: x's bits but the sign bit, which is y's (the
 * inputs reversed give every pairing of signs, NaN and zeros included). */
static void run_copysign(tj_device *dev, const tj_kernel *k, tj_dtype dt)
{
    size_t width = tj_dtype_size(dt), size = N * width;
    uint8_t rx[N * 8], ro[N * 8];
    double x[N];
    inputs(dt, x);
    for (int i = 0; i < N; i++)
        tl_set(dt, rx, (size_t)i, tl_flt(i % 7 == 3 ? -x[i] : x[i])); /* more negatives */
    tj_buffer bx = tl_upload(dev, rx, size), bo = tl_poisoned(dev, size);
    tj_launch_cfg cfg = {.grid = {1}};
    tj_arg args[] = {TJ_ARG_BUF(bx), TJ_ARG_BUF(bo)};
    char what[64];
    snprintf(what, sizeof what, "copysign of %s, bit for bit", tj_dtype_name(dt));
    if (!tl_launch_failed(tj_launch(dev, k, &cfg, args, 2, NULL, 0), what)) {
        tl_download(dev, bo, ro, size);
        int wrong = 0;
        for (int i = 0; i < N; i++) {
            uint8_t want[8];
            memcpy(want, rx + (size_t)i * width, width);
            const uint8_t sign = (uint8_t)(rx[(size_t)(N - 1 - i) * width + width - 1] & 0x80);
            want[width - 1] = (uint8_t)((want[width - 1] & 0x7f) | sign); /* little-endian: the top byte */
            if (memcmp(want, ro + (size_t)i * width, width) && wrong++ < 4)
                tap_diag("copysign(%.17g, %.17g) = %.17g, expected the bits of %.17g", tl_get(dt, rx, (size_t)i).f,
                         tl_get(dt, rx, (size_t)(N - 1 - i)).f, tl_get(dt, ro, (size_t)i).f,
                         tl_get(dt, want, 0).f);
        }
        tap_ok(!wrong, "%s", what);
    }
    tj_buffer_free(dev, bx), tj_buffer_free(dev, bo);
}

/* C's clamp under tjit's NaN rules: a NaN operand loses (NONE), or wins (ALL). */
static double clamp_ref(double v, double lo, double hi, int nan_all)
{
    if (nan_all && (isnan(v) || isnan(lo) || isnan(hi)))
        return NAN;
    double m = isnan(v) ? lo : isnan(lo) ? v : v > lo || (v == lo && !signbit(v)) ? v : lo;
    return isnan(hi) ? m : isnan(m) ? hi : m < hi || (m == hi && signbit(m)) ? m : hi;
}

static void run_clamp(tj_device *dev, const tj_kernel *k, tj_dtype dt)
{
    size_t size = N * tj_dtype_size(dt);
    uint8_t rx[N * 8], rl[N * 8], rh[N * 8], ro[N * 8];
    for (int i = 0; i < N; i++) {
        if (tl_is_float(dt)) {
            double a = tl_round(dt, tl_rand_double(-100, 100)), b = tl_round(dt, tl_rand_double(-100, 100));
            double v = i % 17 == 0 ? NAN : i % 19 == 0 ? INFINITY : tl_round(dt, tl_rand_double(-150, 150));
            tl_set(dt, rx, (size_t)i, tl_flt(v));
            tl_set(dt, rl, (size_t)i, tl_flt(a < b ? a : b)), tl_set(dt, rh, (size_t)i, tl_flt(a < b ? b : a));
        } else {
            int64_t top = dt == TJ_U8 ? 255 : 1000, bottom = dt == TJ_U8 ? 0 : -1000;
            int64_t a = tl_rand_range(bottom, top), b = tl_rand_range(bottom, top);
            tl_set(dt, rx, (size_t)i, tl_int(tl_rand_range(bottom, top)));
            tl_set(dt, rl, (size_t)i, tl_int(a < b ? a : b)), tl_set(dt, rh, (size_t)i, tl_int(a < b ? b : a));
        }
    }
    tj_buffer bx = tl_upload(dev, rx, size), bl = tl_upload(dev, rl, size), bh = tl_upload(dev, rh, size);
    tj_buffer bo = tl_poisoned(dev, size);
    for (int tile = 0; tile < 2; tile++)
        for (int nan_all = 0; nan_all < (tl_is_float(dt) ? 2 : 1); nan_all++) {
            int64_t consts[2] = {tile, nan_all};
            tl_repoison(dev, bo, size);
            tj_launch_cfg cfg = {.grid = {1}};
            tj_arg args[] = {TJ_ARG_BUF(bx), TJ_ARG_BUF(bl), TJ_ARG_BUF(bh), TJ_ARG_BUF(bo)};
            char what[96];
            snprintf(what, sizeof what, "clamp of %s, %s bounds%s", tj_dtype_name(dt), tile ? "tile" : "scalar",
                     nan_all ? ", NaN propagated" : "");
            if (tl_launch_failed(tj_launch(dev, k, &cfg, args, 4, consts, 2), what))
                continue;
            tl_download(dev, bo, ro, size);
            int wrong = 0;
            for (int i = 0; i < N; i++) {
                size_t b = tile ? (size_t)i : 0;
                if (tl_is_float(dt)) {
                    double want = clamp_ref(tl_get(dt, rx, (size_t)i).f, tl_get(dt, rl, b).f, tl_get(dt, rh, b).f, nan_all);
                    double got = tl_get(dt, ro, (size_t)i).f;
                    if (!same_float(got, want) && wrong++ < 4)
                        tap_diag("clamp(%g, %g, %g) = %g, expected %g", tl_get(dt, rx, (size_t)i).f,
                                 tl_get(dt, rl, b).f, tl_get(dt, rh, b).f, got, want);
                } else {
                    int64_t v = tl_get(dt, rx, (size_t)i).i, lo = tl_get(dt, rl, b).i, hi = tl_get(dt, rh, b).i;
                    int64_t want = v < lo ? lo : v, got = tl_get(dt, ro, (size_t)i).i;
                    want = want > hi ? hi : want;
                    if (got != want && wrong++ < 4)
                        tap_diag("clamp(%lld, %lld, %lld) = %lld", (long long)v, (long long)lo, (long long)hi,
                                 (long long)got);
                }
            }
            tap_ok(!wrong, "%s", what);
        }
    tj_buffer_free(dev, bx), tj_buffer_free(dev, bl), tj_buffer_free(dev, bh), tj_buffer_free(dev, bo);
}

int main(void)
{
    tj_device *dev = tl_setup("test_rounding");
    tap_plan(4 * 7 + 4 + 4 + 3 * 4 + 2 * 2 + 4 + 1); /* rounding, integer classes, copysign, clamp, errors, PTX */
    run_rounding(dev, round_f16, TJ_F16);
    run_rounding(dev, round_bf16, TJ_BF16);
    run_rounding(dev, round_f32, TJ_F32);
    run_rounding(dev, round_f64, TJ_F64);
    run_rounding(dev, round_i32, TJ_I32);
    run_copysign(dev, copysign_f16, TJ_F16);
    run_copysign(dev, copysign_bf16, TJ_BF16);
    run_copysign(dev, copysign_f32, TJ_F32);
    run_copysign(dev, copysign_f64, TJ_F64);
    run_clamp(dev, clamp_f16, TJ_F16);
    run_clamp(dev, clamp_f32, TJ_F32);
    run_clamp(dev, clamp_f64, TJ_F64);
    run_clamp(dev, clamp_i32, TJ_I32);
    run_clamp(dev, clamp_u8, TJ_U8);
    tl_build_refused(clamp_ptr, TJ_ERR_TYPE, "'clamp'", "no rule for 'clamp' of");
    tl_build_refused(isnan_ptr, TJ_ERR_TYPE, "'isnan'", "no rule for 'isnan'");
    tl_build_refused(rint_fp8, TJ_ERR_TYPE, "'rint'", "f8e4m3");
    tl_build_refused(clamp_bad_opts, TJ_ERR_BUILD, "'clamp'", "propagate_nan");

    /* PTX for sm_80 and sm_90: every op has GPU code ptxas accepts */
    int ptx_ok = 1;
    const tj_kernel *ks[] = {round_f16, round_bf16, round_f32, round_f64};
    for (int d = 0; d < 4; d++)
        for (int64_t fn = FN_RINT; fn <= FN_SIGNBIT; fn++)
            for (int t = 0; t < 2; t++) {
                char *ptx = NULL;
                if (tj_kernel_ptx(ks[d], &fn, 1, t ? "sm_90" : "sm_80", 4, &ptx) != TJ_OK)
                    ptx_ok = 0, tap_diag("%s %s: %s", ks[d]->name, fn_names[fn], tj_last_error());
                free(ptx);
            }
    const tj_kernel *copysigns[] = {copysign_f16, copysign_bf16, copysign_f32, copysign_f64};
    for (int d = 0; d < 4; d++) {
        char *ptx = NULL;
        if (tj_kernel_ptx(copysigns[d], NULL, 0, "sm_80", 4, &ptx) != TJ_OK)
            ptx_ok = 0, tap_diag("%s: %s", copysigns[d]->name, tj_last_error());
        free(ptx);
    }
    const tj_kernel *cs[] = {clamp_f16, clamp_f32, clamp_f64, clamp_i32, clamp_u8};
    for (int c = 0; c < 5; c++) {
        int64_t consts[2] = {1, 1};
        char *ptx = NULL;
        if (tj_kernel_ptx(cs[c], consts, 2, "sm_80", 4, &ptx) != TJ_OK)
            ptx_ok = 0, tap_diag("%s: %s", cs[c]->name, tj_last_error());
        free(ptx);
    }
    tap_ok(ptx_ok, "PTX of every op and dtype, sm_80 and sm_90");
    tj_device_close(dev);
    return tap_done();
}
