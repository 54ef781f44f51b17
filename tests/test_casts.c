/* SPDX-License-Identifier: MIT */
/*
 * test_casts.c — tj_cast's options on the device under test
 * (TJIT_TEST_DEVICE): .bitcast (Triton's x.to(dt, bitcast=True)) and
 * .fp_downcast_rounding = TJ_ROUND_TO_ZERO (Triton's "rtz").
 *
 * A bitcast keeps every bit, so its output bytes must equal its input
 * bytes, for random bit patterns (NaN payloads and subnormals included) of
 * every pair of dtypes of one width, and for a kernel that computes in the
 * other dtype between two bitcasts (the next float above x, as integer
 * code does it). Rounding toward zero has one right answer: each result
 * must match, bit for bit, a C reference that truncates the significand
 * (the largest finite number where the value is too large; fp8 saturates
 * infinities, as its value casts do). A cast from f32 to bf16 rounds to
 * nearest even and keeps a NaN's top bits, made quiet: the result must
 * be tj_f32_to_bf16's, bit for bit, for random bit patterns (NaNs of both
 * signs with payloads among them) — on the GPU through the packed
 * conversion of register pairs (src/jit/gpu/registers.c), whose NaN rule
 * runs on groups of pairs where one is NaN: with a NaN in every group,
 * and with groups that have none beside groups that have one. Then the
 * errors and the PTX.
 */
#include "testlib.h"

enum { N = 1024 };

/* o = x's bits as dtype TO. */
#define BITCAST_KERNEL(NAME, FROM, TO)                                                              \
    TJ_KERNEL(NAME, TJ_PARAMS(TJ_PTR(x, FROM), TJ_PTR(o, TO)), TJ_CONSTS())                        \
    {                                                                                               \
        tj_val offs = tj_arange(0, N);                                                              \
        tj_store(tj_add(o, offs), tj_cast(tj_load(tj_add(x, offs)), TJ_##TO, .bitcast = 1));       \
    }
#define TJ_f16 TJ_F16
#define TJ_bf16 TJ_BF16
#define TJ_f32 TJ_F32
#define TJ_f64 TJ_F64
#define TJ_i16 TJ_I16
#define TJ_u16 TJ_U16
#define TJ_i32 TJ_I32
#define TJ_u32 TJ_U32
#define TJ_i64 TJ_I64
#define TJ_u64 TJ_U64
#define TJ_u8 TJ_U8
#define TJ_i8 TJ_I8
#define TJ_f8e4m3 TJ_F8E4M3
#define TJ_f8e5m2 TJ_F8E5M2
BITCAST_KERNEL(bits_f32_i32, f32, i32)
BITCAST_KERNEL(bits_i32_f32, i32, f32)
BITCAST_KERNEL(bits_f32_u32, f32, u32)
BITCAST_KERNEL(bits_f16_i16, f16, i16)
BITCAST_KERNEL(bits_u16_f16, u16, f16)
BITCAST_KERNEL(bits_bf16_u16, bf16, u16)
BITCAST_KERNEL(bits_i16_bf16, i16, bf16)
BITCAST_KERNEL(bits_f16_bf16, f16, bf16)
BITCAST_KERNEL(bits_bf16_f16, bf16, f16)
BITCAST_KERNEL(bits_f64_u64, f64, u64)
BITCAST_KERNEL(bits_i64_f64, i64, f64)
BITCAST_KERNEL(bits_f8e4m3_u8, f8e4m3, u8)
BITCAST_KERNEL(bits_i8_f8e5m2, i8, f8e5m2)
BITCAST_KERNEL(bits_f8e4m3_f8e5m2, f8e4m3, f8e5m2)
BITCAST_KERNEL(bits_i32_u32, i32, u32)

/* o = the float after x (x > 0, finite): its bits plus one, and x + 1.0
 * through the literal 1.0f's bits (0x3f800000) bitcast to f32. */
TJ_KERNEL(next_up, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(o, f32), TJ_PTR(p, f32)), TJ_CONSTS())
{
    tj_val offs = tj_arange(0, N), a = tj_load(tj_add(x, offs));
    tj_val up = tj_cast(tj_add(tj_cast(a, TJ_I32, .bitcast = 1), 1), TJ_F32, .bitcast = 1);
    tj_store(tj_add(o, offs), up);
    tj_store(tj_add(p, offs), tj_add(a, tj_cast(0x3f800000, TJ_F32, .bitcast = 1)));
}

/* Literals bitcast take a dtype of their own, strong: s = x + 1 in i32
 * (not in x's i8, where 127 + 1 would wrap), n = -1.0 from 0xbf800000 (a
 * u32). */
TJ_KERNEL(literal_bits, TJ_PARAMS(TJ_PTR(x, i8), TJ_PTR(s, i32), TJ_PTR(n, f32)), TJ_CONSTS())
{
    tj_val offs = tj_arange(0, N);
    tj_store(tj_add(s, offs), tj_add(tj_load(tj_add(x, offs)), tj_cast(1, TJ_I32, .bitcast = 1)));
    tj_store(n, tj_cast(0xbf800000, TJ_F32, .bitcast = 1));
}

/* o = x rounded toward zero to TO. */
#define RTZ_KERNEL(NAME, FROM, TO)                                                                  \
    TJ_KERNEL(NAME, TJ_PARAMS(TJ_PTR(x, FROM), TJ_PTR(o, TO)), TJ_CONSTS())                        \
    {                                                                                               \
        tj_val offs = tj_arange(0, N);                                                              \
        tj_val r = tj_cast(tj_load(tj_add(x, offs)), TJ_##TO, .fp_downcast_rounding = TJ_ROUND_TO_ZERO); \
        tj_store(tj_add(o, offs), r);                                                               \
    }
RTZ_KERNEL(rtz_f32_f16, f32, f16)
RTZ_KERNEL(rtz_f32_bf16, f32, bf16)
RTZ_KERNEL(rtz_f64_f32, f64, f32)
RTZ_KERNEL(rtz_f64_f16, f64, f16)
RTZ_KERNEL(rtz_f64_bf16, f64, bf16)
RTZ_KERNEL(rtz_f32_f8e4m3, f32, f8e4m3)
RTZ_KERNEL(rtz_f32_f8e5m2, f32, f8e5m2)
RTZ_KERNEL(rtz_f16_f8e4m3, f16, f8e4m3)

/* o = x rounded to nearest even, as a value cast does. */
enum { WIDE = 8192 };
TJ_KERNEL(rn_f32_bf16, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(o, bf16)), TJ_CONSTS())
{
    tj_val offs = tj_arange(0, N);
    tj_store(tj_add(o, offs), tj_cast(tj_load(tj_add(x, offs)), TJ_BF16));
}
TJ_KERNEL(rn_f32_bf16_wide, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(o, bf16)), TJ_CONSTS())
{
    tj_val offs = tj_arange(0, WIDE);
    tj_store(tj_add(o, offs), tj_cast(tj_load(tj_add(x, offs)), TJ_BF16));
}

TJ_KERNEL(bitcast_literal_too_big, TJ_PARAMS(TJ_PTR(x, f32)), TJ_CONSTS())
{
    tj_cast(0x1ffffffffll, TJ_F32, .bitcast = 1);
}
TJ_KERNEL(bitcast_widths, TJ_PARAMS(TJ_PTR(x, f32)), TJ_CONSTS())
{
    tj_cast(tj_load(x), TJ_F16, .bitcast = 1);
}
TJ_KERNEL(rtz_of_int, TJ_PARAMS(TJ_PTR(x, i32)), TJ_CONSTS())
{
    tj_cast(tj_load(x), TJ_F16, .fp_downcast_rounding = TJ_ROUND_TO_ZERO);
}
TJ_KERNEL(rtz_widening, TJ_PARAMS(TJ_PTR(x, f16)), TJ_CONSTS())
{
    tj_cast(tj_load(x), TJ_F32, .fp_downcast_rounding = TJ_ROUND_TO_ZERO);
}
TJ_KERNEL(rtz_bitcast, TJ_PARAMS(TJ_PTR(x, f32)), TJ_CONSTS())
{
    tj_cast(tj_load(x), TJ_I32, .bitcast = 1, .fp_downcast_rounding = TJ_ROUND_TO_ZERO);
}
TJ_KERNEL(rounding_unknown, TJ_PARAMS(TJ_PTR(x, f32)), TJ_CONSTS())
{
    tj_cast(tj_load(x), TJ_F16, .fp_downcast_rounding = (tj_rounding)5);
}

static void run_bitcast(tj_device *dev, const tj_kernel *k, tj_dtype from, tj_dtype to)
{
    size_t size = N * tj_dtype_size(from);
    uint8_t in[N * 8], out[N * 8];
    for (size_t i = 0; i < size; i++)
        in[i] = (uint8_t)tl_rand_u64();
    tj_buffer bx = tl_upload(dev, in, size), bo = tl_poisoned(dev, size);
    tj_launch_cfg cfg = {.grid = {1}};
    tj_arg args[] = {TJ_ARG_BUF(bx), TJ_ARG_BUF(bo)};
    char what[96];
    snprintf(what, sizeof what, "bitcast %s -> %s keeps every bit", tj_dtype_name(from), tj_dtype_name(to));
    if (!tl_launch_failed(tj_launch(dev, k, &cfg, args, 2, NULL, 0), what)) {
        tl_download(dev, bo, out, size);
        size_t w = tj_dtype_size(from), bad = N;
        for (size_t i = 0; i < N && bad == N; i++)
            if (memcmp(in + i * w, out + i * w, w))
                bad = i;
        if (bad < N)
            tap_diag("element %zu differs", bad);
        tap_ok(bad == N, "%s", what);
    }
    tj_buffer_free(dev, bx), tj_buffer_free(dev, bo);
}

static void run_next_up(tj_device *dev)
{
    float x[N], o[N], p[N];
    for (int i = 0; i < N; i++)
        x[i] = (float)ldexp(tl_rand_double(1, 2), (int)tl_rand_range(-140, 120));
    size_t size = sizeof x;
    tj_buffer bx = tl_upload(dev, x, size), bo = tl_poisoned(dev, size), bp = tl_poisoned(dev, size);
    tj_launch_cfg cfg = {.grid = {1}};
    tj_arg args[] = {TJ_ARG_BUF(bx), TJ_ARG_BUF(bo), TJ_ARG_BUF(bp)};
    if (!tl_launch_failed(tj_launch(dev, next_up, &cfg, args, 3, NULL, 0), "integer code between bitcasts")) {
        tl_download(dev, bo, o, size);
        tl_download(dev, bp, p, size);
        int wrong = 0, wrong_lit = 0;
        for (int i = 0; i < N; i++) {
            float want = nextafterf(x[i], INFINITY);
            if (memcmp(&o[i], &want, 4) && wrong++ < 4)
                tap_diag("next after %a: %a, expected %a", (double)x[i], (double)o[i], (double)want);
            wrong_lit += p[i] != x[i] + 1.0f;
        }
        tap_ok(!wrong, "bits + 1 of a positive f32 is the next float (nextafterf)");
        tap_ok(!wrong_lit, "a literal's bits (0x3f800000) bitcast to f32 are 1.0");
    }
    tj_buffer_free(dev, bx), tj_buffer_free(dev, bo), tj_buffer_free(dev, bp);
}

static void run_literal_bits(tj_device *dev)
{
    int8_t x[N];
    int32_t s[N];
    float n = 0;
    for (int i = 0; i < N; i++)
        x[i] = i < 2 ? (int8_t)(i ? -128 : 127) : (int8_t)tl_rand_range(-128, 127);
    tj_buffer bx = tl_upload(dev, x, sizeof x), bs = tl_poisoned(dev, sizeof s), bn = tl_poisoned(dev, sizeof n);
    tj_launch_cfg cfg = {.grid = {1}};
    tj_arg args[] = {TJ_ARG_BUF(bx), TJ_ARG_BUF(bs), TJ_ARG_BUF(bn)};
    if (!tl_launch_failed(tj_launch(dev, literal_bits, &cfg, args, 3, NULL, 0), "bitcast literals")) {
        tl_download(dev, bs, s, sizeof s), tl_download(dev, bn, &n, sizeof n);
        int wrong = 0;
        for (int i = 0; i < N; i++)
            wrong += s[i] != x[i] + 1;
        tap_ok(!wrong && n == -1.0f, "a bitcast literal is a strong value of its own width (i8 + i32 1 is i32; "
               "0xbf800000 as f32 is -1)");
    }
    tj_buffer_free(dev, bx), tj_buffer_free(dev, bs), tj_buffer_free(dev, bn);
}

/* x rounded toward zero to float dtype t: the significand truncated, the
 * largest finite number where |x| is larger; fp8 saturates infinities. */
static double toward_zero(tj_dtype t, double x)
{
    int mant, emin;
    double max;
    switch (t) {
    case TJ_F16: mant = 11, emin = -14, max = 65504.0; break;
    case TJ_BF16: mant = 8, emin = -126, max = 0x1.fep127; break;
    case TJ_F32: mant = 24, emin = -126, max = 0x1.fffffep127; break;
    case TJ_F8E4M3: mant = 4, emin = -6, max = 448.0; break;
    default: mant = 3, emin = -14, max = 57344.0; break; /* f8e5m2 */
    }
    if (isnan(x) || x == 0)
        return x;
    if (isinf(x))
        return tl_is_fp8(t) ? copysign(max, x) : x;
    int e = ilogb(x) < emin ? emin : ilogb(x);
    double quantum = ldexp(1.0, e - (mant - 1));
    double r = trunc(x / quantum) * quantum;
    return fabs(r) > max ? copysign(max, x) : r;
}

/* Inputs for a cast to dt: around its largest number, its subnormals, its
 * ties and exact values, the specials, and random values. */
static double rtz_input(tj_dtype from, tj_dtype to, int i)
{
    double max = to == TJ_F16 ? 65504.0 : to == TJ_F8E4M3 ? 448.0 : to == TJ_F8E5M2 ? 57344.0
               : to == TJ_F32 ? 0x1.fffffep127 : 0x1.fep127;
    double tiny = to == TJ_F16 ? 0x1p-24 : to == TJ_F8E4M3 ? 0x1p-9 : to == TJ_F8E5M2 ? 0x1p-16 : 0x1p-149;
    double v;
    switch (i % 8) {
    case 0: v = max * tl_rand_double(0.98, 1.02); break;
    case 1: v = tiny * tl_rand_double(0, 40); break;
    case 2: v = (double)tl_rand_range(-3000, 3000) / 16; break;
    case 3: v = ldexp(tl_rand_double(1, 2), (int)tl_rand_range(-30, 30)); break;
    default: v = tl_rand_double(-1000, 1000); break;
    }
    static const double specials[] = {0.0,      -0.0,     INFINITY, -INFINITY, NAN,    1.0,   -1.0, 65520.0,
                                      -65520.0, 65519.99, 1e39,     -1e39,     464.0,  -464.0, 61440.0,
                                      0.1,      -0.1};
    if (i < (int)TL_COUNT(specials))
        return tl_round(from, specials[i]); /* what the input buffer holds */
    if (i % 16 >= 8) /* each kind of random input with both signs */
        v = -v;
    return tl_round(from, v);
}

static int same_float(double got, double want)
{
    return isnan(want) ? isnan(got) != 0 : got == want && signbit(got) == signbit(want);
}

static void run_toward_zero(tj_device *dev, const tj_kernel *k, tj_dtype from, tj_dtype to)
{
    uint8_t rx[N * 8], ro[N * 8];
    for (int i = 0; i < N; i++)
        tl_set(from, rx, (size_t)i, tl_flt(rtz_input(from, to, i)));
    tj_buffer bx = tl_upload(dev, rx, N * tj_dtype_size(from)), bo = tl_poisoned(dev, N * tj_dtype_size(to));
    tj_launch_cfg cfg = {.grid = {1}};
    tj_arg args[] = {TJ_ARG_BUF(bx), TJ_ARG_BUF(bo)};
    char what[96];
    snprintf(what, sizeof what, "%s -> %s toward zero, exactly", tj_dtype_name(from), tj_dtype_name(to));
    if (!tl_launch_failed(tj_launch(dev, k, &cfg, args, 2, NULL, 0), what)) {
        tl_download(dev, bo, ro, N * tj_dtype_size(to));
        int wrong = 0;
        for (int i = 0; i < N; i++) {
            double v = tl_get(from, rx, (size_t)i).f, want = toward_zero(to, v), got = tl_get(to, ro, (size_t)i).f;
            if (!same_float(got, want) && wrong++ < 4)
                tap_diag("%a -> %a, expected %a", v, got, want);
        }
        tap_ok(!wrong, "%s", what);
    }
    tj_buffer_free(dev, bx), tj_buffer_free(dev, bo);
}

/* f32 -> bf16 of random bit patterns, one NaN in nan_every (either sign,
 * any payload, quiet or signaling), next to rounding ties and both
 * infinities, against tj_f32_to_bf16 bit for bit. A GPU converts pairs
 * and applies the NaN rule to groups of pairs where one is NaN: one NaN in
 * four puts one in every group; 8192 elements with one in 37 give each
 * thread 32 pairs, groups with none next to groups with one. */
static void run_to_bf16(tj_device *dev, const tj_kernel *k, int n, int nan_every)
{
    uint32_t *x = malloc(n * sizeof *x);
    uint16_t *o = malloc(n * sizeof *o);
    for (int i = 0; i < n; i++) {
        uint32_t bits = (uint32_t)tl_rand_u64();
        if (i % nan_every == 1) /* a NaN: exponent all ones, a payload that is not zero */
            bits = (bits | 0x7f800000u) | (bits & 0x7fffff ? 0 : 1);
        else if ((bits & 0x7f800000u) == 0x7f800000u) /* no other NaN (the infinities are x[0], x[1]) */
            bits ^= 0x00800000u;
        if (i % 16 == 2) /* a tie: the 16 bits below bf16's last one are 0x8000 */
            bits = (bits & 0xffff0000u) | 0x8000u;
        x[i] = i < 4 ? (uint32_t[]){0x7f800000u, 0xff800000u, 0x7fffffffu, 0xff800001u}[i] : bits;
    }
    tj_buffer bx = tl_upload(dev, x, n * sizeof *x), bo = tl_poisoned(dev, n * sizeof *o);
    tj_launch_cfg cfg = {.grid = {1}};
    tj_arg args[] = {TJ_ARG_BUF(bx), TJ_ARG_BUF(bo)};
    char what[160];
    snprintf(what, sizeof what,
             "f32 -> bf16 to nearest even, NaNs keeping their top bits made quiet, bit for bit (%d elements, "
             "one NaN in %d)",
             n, nan_every);
    if (!tl_launch_failed(tj_launch(dev, k, &cfg, args, 2, NULL, 0), what)) {
        tl_download(dev, bo, o, n * sizeof *o);
        int wrong = 0;
        for (int i = 0; i < n; i++) {
            float f;
            memcpy(&f, &x[i], 4);
            if (o[i] != tj_f32_to_bf16(f) && wrong++ < 4)
                tap_diag("0x%08x -> 0x%04x, expected 0x%04x", x[i], o[i], tj_f32_to_bf16(f));
        }
        tap_ok(!wrong, "%s (%d wrong)", what, wrong);
    }
    tj_buffer_free(dev, bx), tj_buffer_free(dev, bo);
    free(x), free(o);
}

/* The printed IR names the ops: bitcast, and cast.rtz for rounding toward zero. */
static void check_ir(void)
{
    char *a = NULL, *b = NULL;
    int ok = tj_kernel_ir(bits_f32_i32, NULL, 0, &a) == TJ_OK && tj_kernel_ir(rtz_f32_f16, NULL, 0, &b) == TJ_OK;
    tap_ok(ok && strstr(a, "= bitcast %") && strstr(b, "= cast.rtz %"), "the IR prints bitcast and cast.rtz");
    free(a), free(b);
}

int main(void)
{
    tj_device *dev = tl_setup("test_casts");
    tap_plan(15 + 3 + 8 + 2 + 6 + 1 + 1); /* bitcasts, next float and literals, toward zero, to bf16, errors, IR, PTX */
    run_bitcast(dev, bits_f32_i32, TJ_F32, TJ_I32);
    run_bitcast(dev, bits_i32_f32, TJ_I32, TJ_F32);
    run_bitcast(dev, bits_f32_u32, TJ_F32, TJ_U32);
    run_bitcast(dev, bits_f16_i16, TJ_F16, TJ_I16);
    run_bitcast(dev, bits_u16_f16, TJ_U16, TJ_F16);
    run_bitcast(dev, bits_bf16_u16, TJ_BF16, TJ_U16);
    run_bitcast(dev, bits_i16_bf16, TJ_I16, TJ_BF16);
    run_bitcast(dev, bits_f16_bf16, TJ_F16, TJ_BF16);
    run_bitcast(dev, bits_bf16_f16, TJ_BF16, TJ_F16);
    run_bitcast(dev, bits_f64_u64, TJ_F64, TJ_U64);
    run_bitcast(dev, bits_i64_f64, TJ_I64, TJ_F64);
    run_bitcast(dev, bits_f8e4m3_u8, TJ_F8E4M3, TJ_U8);
    run_bitcast(dev, bits_i8_f8e5m2, TJ_I8, TJ_F8E5M2);
    run_bitcast(dev, bits_f8e4m3_f8e5m2, TJ_F8E4M3, TJ_F8E5M2);
    run_bitcast(dev, bits_i32_u32, TJ_I32, TJ_U32);
    run_next_up(dev);
    run_literal_bits(dev);
    run_toward_zero(dev, rtz_f32_f16, TJ_F32, TJ_F16);
    run_toward_zero(dev, rtz_f32_bf16, TJ_F32, TJ_BF16);
    run_toward_zero(dev, rtz_f64_f32, TJ_F64, TJ_F32);
    run_toward_zero(dev, rtz_f64_f16, TJ_F64, TJ_F16);
    run_toward_zero(dev, rtz_f64_bf16, TJ_F64, TJ_BF16);
    run_toward_zero(dev, rtz_f32_f8e4m3, TJ_F32, TJ_F8E4M3);
    run_toward_zero(dev, rtz_f32_f8e5m2, TJ_F32, TJ_F8E5M2);
    run_toward_zero(dev, rtz_f16_f8e4m3, TJ_F16, TJ_F8E4M3);
    run_to_bf16(dev, rn_f32_bf16, N, 4);
    run_to_bf16(dev, rn_f32_bf16_wide, WIDE, 37);
    tl_build_refused(bitcast_widths, TJ_ERR_TYPE, "'bitcast'", "the widths differ (32 and 16 bits)");
    tl_build_refused(bitcast_literal_too_big, TJ_ERR_TYPE, "'bitcast'", "does not fit in 32 bits");
    tl_build_refused(rtz_of_int, TJ_ERR_TYPE, "'cast'", "fp_downcast_rounding applies to a float cast");
    tl_build_refused(rtz_widening, TJ_ERR_TYPE, "'cast'", "f16 to f32");
    tl_build_refused(rtz_bitcast, TJ_ERR_BUILD, "'bitcast'", "a bitcast does not round");
    tl_build_refused(rounding_unknown, TJ_ERR_BUILD, "'cast'", "unknown rounding 5");
    check_ir();
    const tj_kernel *ks[] = {bits_f32_i32, bits_i32_f32, bits_f32_u32, bits_f16_i16, bits_u16_f16, bits_bf16_u16,
                             bits_i16_bf16, bits_f16_bf16, bits_bf16_f16, bits_f64_u64, bits_i64_f64,
                             bits_f8e4m3_u8, bits_i8_f8e5m2, bits_f8e4m3_f8e5m2, bits_i32_u32, next_up,
                             rtz_f32_f16, rtz_f32_bf16, rtz_f64_f32, rtz_f64_f16, rtz_f64_bf16, rtz_f32_f8e4m3,
                             rtz_f32_f8e5m2, rtz_f16_f8e4m3, literal_bits, rn_f32_bf16, rn_f32_bf16_wide};
    tl_ptx_of_every(ks, (int)TL_COUNT(ks));
    tj_device_close(dev);
    return tap_done();
}
