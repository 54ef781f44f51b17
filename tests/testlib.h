/* SPDX-License-Identifier: MIT */
/*
 * testlib.h — what tjit's test programs share: a seeded random source,
 * element access by dtype, correctly rounded 16-bit float references,
 * buffers that are filled or poisoned in one call, and checks that print
 * the first mismatches as TAP diagnostics.
 *
 * Every test draws fresh random inputs: the seed comes from /dev/urandom
 * (or TJ_TEST_SEED=N to replay a failure) and is printed first. Outputs are
 * poisoned with 0xAB bytes before each launch, so a value the kernel never
 * wrote cannot pass for a right answer.
 *
 * Elements travel as tl_num: integers in .i (signed dtypes sign-extended,
 * unsigned ones zero-extended, u64 as its bit pattern), floats in .f (a
 * double that holds the dtype's value exactly). References compute in
 * double or int64 and round to the dtype once, so they are the correctly
 * rounded answer the kernel is compared against.
 */
#ifndef TJIT_TESTS_TESTLIB_H
#define TJIT_TESTS_TESTLIB_H

#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tjit.h"
#include "tap.h"

#define TL_POISON 0xAB
#define TL_COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Row-major element indices of a whole [R, C] tile, and of a batch of B_
 * of them ([B_, R, C]; TL_IDX picks by B_ > 1): the offsets of tile loads
 * and stores in the dot tests. */
#define TL_TILE_IDX(R, C) tj_add(tj_mul(tj_expand_dims(tj_arange(0, R), 1), C), tj_expand_dims(tj_arange(0, C), 0))
#define TL_BATCH_IDX(B_, R, C)                                                                      \
    tj_add(tj_mul(tj_expand_dims(tj_expand_dims(tj_arange(0, B_), 1), 2), (R) * (C)),               \
           tj_expand_dims(TL_TILE_IDX(R, C), 0))
#define TL_IDX(B_, R, C) (B_ > 1 ? TL_BATCH_IDX(B_, R, C) : TL_TILE_IDX(R, C))

/* How many times `what` occurs in text (NULL: none): counting
 * instructions in a kernel's PTX or lines of an explainer's text. */
static inline int tl_count(const char *text, const char *what)
{
    int n = 0;
    for (const char *p = text; p && (p = strstr(p, what)) != NULL; p += strlen(what))
        n++;
    return n;
}

/* ptxas (a path) run on ptx with options (e.g. "-arch=sm_90a -v"), its
 * output discarded: what it said (stdout and stderr together) goes into
 * said[size]; the exit status, or -1 where it could not run. */
static inline int tl_ptxas_run(const char *ptxas, const char *ptx, const char *options, char *said, size_t size)
{
    char path[] = "/tmp/tjit-ptxas-XXXXXX.ptx", cmd[1024];
    int fd = mkstemps(path, 4);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    int wrote = f && fputs(ptx, f) >= 0;
    if (f)
        fclose(f);
    snprintf(cmd, sizeof cmd, "'%s' %s -o /dev/null '%s' 2>&1", ptxas, options, path);
    FILE *p = wrote ? popen(cmd, "r") : NULL;
    size_t n = p ? fread(said, 1, size - 1, p) : 0;
    said[n] = 0;
    int status = p ? pclose(p) : -1;
    if (fd >= 0)
        unlink(path);
    return status;
}

/* The bytes a thread spills in ptx for sm_90a, as ptxas -v reports them
 * (stores and loads); -1 where ptxas cannot say (what it said is a
 * diagnostic then). */
static inline long tl_ptxas_spills(const char *ptxas, const char *ptx)
{
    char said[4096] = "";
    int status = tl_ptxas_run(ptxas, ptx, "-arch=sm_90a -v", said, sizeof said);
    long stores = -1, loads = -1;
    const char *at = strstr(said, "bytes spill stores");
    if (status == 0 && at) {
        while (at > said && at[-1] == ' ')
            at--;
        while (at > said && at[-1] >= '0' && at[-1] <= '9')
            at--;
        stores = strtol(at, NULL, 10);
        const char *l = strstr(at, "spill stores, ");
        loads = l ? strtol(l + 14, NULL, 10) : -1;
    }
    if (stores < 0 || loads < 0)
        tap_diag("ptxas said: %s", said);
    return stores < 0 || loads < 0 ? -1 : stores + loads;
}

/* ---- random numbers ------------------------------------------------------ */

static inline uint64_t *tl__rng(void)
{
    static uint64_t state;
    return &state;
}

/* splitmix64: small, fast, and good enough for test data. */
static inline uint64_t tl_rand_u64(void)
{
    uint64_t z = (*tl__rng() += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi] (inclusive). */
static inline int64_t tl_rand_range(int64_t lo, int64_t hi)
{
    uint64_t span = (uint64_t)hi - (uint64_t)lo + 1;
    if (span == 0)
        return (int64_t)tl_rand_u64();
    return (int64_t)((uint64_t)lo + tl_rand_u64() % span);
}

/* Uniform in [lo, hi). */
static inline double tl_rand_double(double lo, double hi)
{
    return lo + (hi - lo) * ((double)(tl_rand_u64() >> 11) * 0x1p-53);
}

static inline void tl__watchdog(int sig)
{
    (void)sig;
    static const char msg[] = "Bail out! test timed out (a hang?)\n";
    ssize_t w = write(1, msg, sizeof msg - 1);
    (void)w;
    _exit(1);
}

/* The device tests run on: TJIT_TEST_DEVICE=gpu is the first GPU (make
 * check's tests/gpu/NAME.gpu runs set it, where tests/has_gpu found one),
 * unset or cpu the CPU. */
static inline tj_device_kind tl_device_kind(void)
{
    const char *env = getenv("TJIT_TEST_DEVICE");
    if (!env || !*env || strcmp(env, "cpu") == 0)
        return TJ_DEVICE_CPU;
    if (strcmp(env, "gpu") == 0)
        return TJ_DEVICE_GPU;
    tap_bail_out("TJIT_TEST_DEVICE=%s (expected cpu or gpu)", env);
    return TJ_DEVICE_CPU;
}

/* The watchdog's seconds: what a test may take before it counts as hung.
 * 300, four times that in a sanitizer build (ASan and TSan slow tjit's own
 * code several times, and on a loaded 2-core machine the slowest op tests
 * took longer than 300 s under ASan: CI's watchdog bail-outs); TJ_TEST_TIMEOUT
 * overrides both. */
static inline unsigned tl_watchdog_seconds(void)
{
    const char *env = getenv("TJ_TEST_TIMEOUT");
    if (env && *env && atoi(env) > 0)
        return (unsigned)atoi(env);
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    return 4 * 300;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
    return 4 * 300;
#else
    return 300;
#endif
#else
    return 300;
#endif
}

/* Seeds the generator, arms a watchdog and opens the test device
 * (tl_device_kind). */
static inline tj_device *tl_setup(const char *program)
{
    uint64_t seed = 0;
    const char *env = getenv("TJ_TEST_SEED");
    if (env && *env) {
        seed = strtoull(env, NULL, 0);
    } else {
        FILE *f = fopen("/dev/urandom", "rb");
        if (!f || fread(&seed, sizeof seed, 1, f) != 1)
            seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
        if (f)
            fclose(f);
    }
    *tl__rng() = seed;
    tap_diag("%s: seed %llu (replay with TJ_TEST_SEED=%llu)", program,
             (unsigned long long)seed, (unsigned long long)seed);
    signal(SIGALRM, tl__watchdog);
    alarm(tl_watchdog_seconds());
    tj_device *dev = NULL;
    tj_device_kind kind = tl_device_kind();
    tj_status st = tj_device_open(&dev, kind, 0);
    if (st != TJ_OK || !dev)
        tap_bail_out("cannot open the %s device: %s: %s", kind == TJ_DEVICE_GPU ? "GPU" : "CPU",
                     tj_status_name(st), tj_last_error());
    tap_diag("device: %s", tj_device_name(dev));
    return dev;
}

/* ---- dtypes -------------------------------------------------------------- */

typedef struct tl_num {
    int64_t i;
    double f;
} tl_num;

static inline int tl_is_fp8(tj_dtype t) { return t == TJ_F8E4M3 || t == TJ_F8E5M2; }
static inline int tl_is_float(tj_dtype t) { return (t >= TJ_F16 && t <= TJ_F64) || tl_is_fp8(t); }
/* The dtypes that compute: 0 .. TL_NCOMPUTE_DTYPES - 1, every one but the
 * fp8 storage types (only loaded, stored, cast and multiplied by tj_dot). */
#define TL_NCOMPUTE_DTYPES ((int)TJ_F8E4M3)
static inline int tl_is_signed(tj_dtype t) { return t >= TJ_I8 && t <= TJ_I64; }
static inline int tl_is_unsigned(tj_dtype t) { return t >= TJ_U8 && t <= TJ_U64; }
static inline int tl_bits(tj_dtype t)
{
    static const int bits[TJ_DTYPE_COUNT] = {1, 8, 16, 32, 64, 8, 16, 32, 64, 16, 16, 32, 64, 8, 8};
    return bits[t];
}

/* The dtype's value of an integer: wraps to its width, then sign- or
 * zero-extends; i1 keeps the lowest bit. */
static inline int64_t tl_wrap(tj_dtype t, int64_t v)
{
    switch (t) {
    case TJ_I1: return v & 1;
    case TJ_I8: return (int8_t)v;
    case TJ_I16: return (int16_t)v;
    case TJ_I32: return (int32_t)v;
    case TJ_U8: return (uint8_t)v;
    case TJ_U16: return (uint16_t)v;
    case TJ_U32: return (uint32_t)v;
    default: return v;
    }
}

static inline int64_t tl_int_min(tj_dtype t)
{
    return tl_is_signed(t) ? (int64_t)((uint64_t)-1 << (tl_bits(t) - 1)) : 0;
}
static inline int64_t tl_int_max(tj_dtype t)
{
    if (t == TJ_U64)
        return -1; /* all ones, as a bit pattern */
    return tl_is_signed(t) ? (int64_t)(((uint64_t)1 << (tl_bits(t) - 1)) - 1)
                           : (int64_t)(((uint64_t)1 << tl_bits(t)) - 1);
}

/* x rounded to nearest even with mant_bits bits of precision, exponents from
 * emin on (below: subnormal steps), overflowing to infinity above max. */
static inline double tl__round_format(double x, int mant_bits, int emin, double max)
{
    if (x == 0 || isnan(x) || isinf(x))
        return x;
    int e = ilogb(x);
    if (e < emin)
        e = emin;
    double quantum = ldexp(1.0, e - (mant_bits - 1));
    double r = rint(x / quantum) * quantum; /* exact scaling; rint rounds to even */
    if (fabs(r) > max)
        return copysign(INFINITY, x);
    return r;
}

/* x rounded to an fp8 format: to nearest even as if the exponent had no
 * top, then saturated (tjit.h): beyond max, infinities too, gives +-max. */
static inline double tl__round_fp8(double x, int mant_bits, int emin, double max)
{
    if (isnan(x))
        return x;
    double r = isinf(x) ? x : tl__round_format(x, mant_bits, emin, INFINITY);
    return fabs(r) > max ? copysign(max, x) : r;
}

/* x rounded once to the dtype (floats) — the correctly rounded reference. */
static inline double tl_round(tj_dtype t, double x)
{
    switch (t) {
    case TJ_F8E4M3: return tl__round_fp8(x, 4, -6, 448.0);
    case TJ_F8E5M2: return tl__round_fp8(x, 3, -14, 57344.0);
    case TJ_F16: return tl__round_format(x, 11, -14, 65504.0);
    case TJ_BF16: return tl__round_format(x, 8, -126, 0x1.fep127);
    case TJ_F32: return (double)(float)x;
    default: return x;
    }
}

/* The spacing of the dtype's numbers at 1 (machine epsilon). */
static inline double tl_eps(tj_dtype t)
{
    switch (t) {
    case TJ_F16: return 0x1p-10;
    case TJ_BF16: return 0x1p-7;
    case TJ_F8E4M3: return 0x1p-3;
    case TJ_F8E5M2: return 0x1p-2;
    case TJ_F32: return 0x1p-23;
    case TJ_F64: return 0x1p-52;
    default: return 0;
    }
}

static inline tl_num tl_get(tj_dtype t, const void *base, size_t i)
{
    tl_num v = {0, 0};
    const unsigned char *p = (const unsigned char *)base + i * tj_dtype_size(t);
    switch (t) {
    case TJ_I1: v.i = *(const uint8_t *)p; break;
    case TJ_I8: v.i = *(const int8_t *)p; break;
    case TJ_I16: { int16_t x; memcpy(&x, p, 2); v.i = x; break; }
    case TJ_I32: { int32_t x; memcpy(&x, p, 4); v.i = x; break; }
    case TJ_I64: { int64_t x; memcpy(&x, p, 8); v.i = x; break; }
    case TJ_U8: v.i = *(const uint8_t *)p; break;
    case TJ_U16: { uint16_t x; memcpy(&x, p, 2); v.i = x; break; }
    case TJ_U32: { uint32_t x; memcpy(&x, p, 4); v.i = x; break; }
    case TJ_U64: { uint64_t x; memcpy(&x, p, 8); v.i = (int64_t)x; break; }
    case TJ_F16: { uint16_t x; memcpy(&x, p, 2); v.f = tj_f16_to_f32(x); break; }
    case TJ_BF16: { uint16_t x; memcpy(&x, p, 2); v.f = tj_bf16_to_f32(x); break; }
    case TJ_F32: { float x; memcpy(&x, p, 4); v.f = x; break; }
    case TJ_F64: { double x; memcpy(&x, p, 8); v.f = x; break; }
    case TJ_F8E4M3: v.f = tj_f8e4m3_to_f32(*p); break;
    case TJ_F8E5M2: v.f = tj_f8e5m2_to_f32(*p); break;
    default: break;
    }
    return v;
}

/* Stores v as dtype t: integers wrap, floats round to nearest even. */
static inline void tl_set(tj_dtype t, void *base, size_t i, tl_num v)
{
    unsigned char *p = (unsigned char *)base + i * tj_dtype_size(t);
    switch (t) {
    case TJ_I1: *p = (uint8_t)(v.i & 1); break;
    case TJ_I8: case TJ_U8: *p = (uint8_t)v.i; break;
    case TJ_I16: case TJ_U16: { uint16_t x = (uint16_t)v.i; memcpy(p, &x, 2); break; }
    case TJ_I32: case TJ_U32: { uint32_t x = (uint32_t)v.i; memcpy(p, &x, 4); break; }
    case TJ_I64: case TJ_U64: memcpy(p, &v.i, 8); break;
    case TJ_F16: { uint16_t x = tj_f32_to_f16((float)tl_round(TJ_F16, v.f)); memcpy(p, &x, 2); break; }
    case TJ_BF16: { uint16_t x = tj_f32_to_bf16((float)tl_round(TJ_BF16, v.f)); memcpy(p, &x, 2); break; }
    case TJ_F32: { float x = (float)v.f; memcpy(p, &x, 4); break; }
    case TJ_F64: memcpy(p, &v.f, 8); break;
    case TJ_F8E4M3: *p = tj_f32_to_f8e4m3((float)tl_round(TJ_F8E4M3, v.f)); break;
    case TJ_F8E5M2: *p = tj_f32_to_f8e5m2((float)tl_round(TJ_F8E5M2, v.f)); break;
    default: break;
    }
}

static inline tl_num tl_int(int64_t i) { return (tl_num){i, 0}; }
static inline tl_num tl_flt(double f) { return (tl_num){0, f}; }

/* A random nonzero value of the dtype: integers over their whole range,
 * floats of either sign with magnitudes from 1/16 to 16. */
static inline tl_num tl_random(tj_dtype t)
{
    if (t == TJ_I1)
        return tl_int((int64_t)(tl_rand_u64() & 1));
    if (tl_is_float(t)) {
        double mag = exp2(tl_rand_double(-4, 4));
        double x = tl_round(t, (tl_rand_u64() & 1) ? -mag : mag);
        return tl_flt(x);
    }
    int64_t v = tl_wrap(t, (int64_t)tl_rand_u64());
    return tl_int(v ? v : 1);
}

/* n small integers in [-3, 3], as int8 (the reference's) and as f16 (the
 * kernel's): their products and sums stay exact in f32. */
static inline void tl_small_int_f16(size_t n, int8_t *ints, uint16_t *halves)
{
    for (size_t i = 0; i < n; i++)
        ints[i] = (int8_t)tl_rand_range(-3, 3), halves[i] = tj_f32_to_f16((float)ints[i]);
}

/* The first index of C (m x n, row stride n) that is not the exact product
 * of the small integers A (m x k, row stride lda) and B (k x n, row stride
 * n); -1 where there is none. */
static inline long tl_first_wrong_product(const int8_t *a, const int8_t *b, const float *c, int m, int n, int k,
                                          int lda)
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            long sum = 0;
            for (int kk = 0; kk < k; kk++)
                sum += (long)a[(size_t)i * lda + kk] * b[(size_t)kk * n + j];
            if (c[(size_t)i * n + j] != (float)sum)
                return (long)i * n + j;
        }
    return -1;
}

/* Fills n elements of dtype t with tl_random values. */
static inline void tl_fill_random(tj_dtype t, void *base, size_t n)
{
    for (size_t i = 0; i < n; i++)
        tl_set(t, base, i, tl_random(t));
}

/* Fills n elements with floats uniform in [lo, hi) (rounded to the dtype) or
 * integers uniform in [lo, hi]. */
static inline void tl_fill_range(tj_dtype t, void *base, size_t n, double lo, double hi)
{
    for (size_t i = 0; i < n; i++) {
        if (tl_is_float(t))
            tl_set(t, base, i, tl_flt(tl_round(t, tl_rand_double(lo, hi))));
        else
            tl_set(t, base, i, tl_int(tl_rand_range((int64_t)lo, (int64_t)hi)));
    }
}

/* The order of tj_sort and tj_topk: NaN above every number, -0 equal to
 * +0 (-1, 0, 1 as a comparison function's). */
static inline int tl_order(double a, double b)
{
    if (isnan(a) || isnan(b))
        return isnan(a) - isnan(b);
    return (a > b) - (a < b);
}

/* Element i of a row to sort: f32 and f16 from [-1000, 1000] with, where
 * edges, NaN, ±inf, ±0 and ±1 at every 37th place; fp8 from [-400, 400]
 * with NaN at every 29th; integers over their whole range. */
static inline tl_num tl_sort_input(tj_dtype dt, int i, int edges)
{
    if (dt == TJ_F32 || dt == TJ_F16) {
        static const double special[] = {NAN, INFINITY, -INFINITY, -0.0, 0.0, 1.0, -1.0};
        if (edges && i % 37 < 7)
            return tl_flt(special[i % 37]);
        return tl_flt(tl_round(dt, tl_rand_double(-1000, 1000)));
    }
    if (dt == TJ_F8E4M3)
        return tl_flt(i % 29 == 0 ? NAN : tl_round(dt, tl_rand_double(-400, 400)));
    return tl_int(tl_rand_range(tl_int_min(dt), tl_int_max(dt)));
}

static inline void tl_format(char *out, size_t size, tj_dtype t, tl_num v)
{
    if (tl_is_float(t))
        snprintf(out, size, "%.9g", v.f);
    else if (t == TJ_U64)
        snprintf(out, size, "%llu", (unsigned long long)v.i);
    else
        snprintf(out, size, "%lld", (long long)v.i);
}

/* ---- buffers ------------------------------------------------------------- */

static inline tj_buffer tl_upload(tj_device *dev, const void *data, size_t bytes)
{
    tj_buffer b = {0};
    tj_status st = tj_buffer_alloc(dev, bytes, &b);
    if (st != TJ_OK)
        tap_bail_out("tj_buffer_alloc(%zu): %s: %s", bytes, tj_status_name(st), tj_last_error());
    st = tj_buffer_write(dev, b, 0, data, bytes);
    if (st != TJ_OK)
        tap_bail_out("tj_buffer_write(%zu): %s: %s", bytes, tj_status_name(st), tj_last_error());
    return b;
}

/* A buffer of 0xAB bytes. */
static inline tj_buffer tl_poisoned(tj_device *dev, size_t bytes)
{
    void *poison = malloc(bytes ? bytes : 1);
    memset(poison, TL_POISON, bytes);
    tj_buffer b = tl_upload(dev, poison, bytes);
    free(poison);
    return b;
}

/* Fills an existing buffer with poison again. */
static inline void tl_repoison(tj_device *dev, tj_buffer b, size_t bytes)
{
    void *poison = malloc(bytes ? bytes : 1);
    memset(poison, TL_POISON, bytes);
    tj_status st = tj_buffer_write(dev, b, 0, poison, bytes);
    free(poison);
    if (st != TJ_OK)
        tap_bail_out("tj_buffer_write(%zu): %s: %s", bytes, tj_status_name(st), tj_last_error());
}

static inline void tl_download(tj_device *dev, tj_buffer b, void *out, size_t bytes)
{
    tj_status st = tj_buffer_read(dev, b, 0, out, bytes);
    if (st != TJ_OK)
        tap_bail_out("tj_buffer_read(%zu): %s: %s", bytes, tj_status_name(st), tj_last_error());
}

/* ---- checks -------------------------------------------------------------- */

/* If a launch failed, reports the test point as failed with the error and
 * returns 1; the caller then skips its value checks. */
static inline int tl_launch_failed(tj_status st, const char *what)
{
    if (st == TJ_OK)
        return 0;
    tap_ok(0, "%s", what);
    tap_diag("  launch returned %s: %s", tj_status_name(st), tj_last_error());
    return 1;
}

/* Floats agree if both are NaN, equal, or |got - want| <= rel*|want| + abs. */
static inline int tl_close(double got, double want, double rel, double abs_tol)
{
    if (isnan(want) || isnan(got))
        return isnan(want) && isnan(got);
    if (got == want)
        return 1;
    if (isinf(want) || isinf(got))
        return 0;
    return fabs(got - want) <= rel * fabs(want) + abs_tol;
}

static inline int tl_num_match(tj_dtype t, tl_num got, tl_num want, double rel, double abs_tol)
{
    if (tl_is_float(t))
        return tl_close(got.f, want.f, rel, abs_tol);
    return got.i == want.i;
}

/* One test point: n elements of dtype t (at got, of the device's output)
 * against want (both arrays of dtype t). Floats within rel/abs, integers
 * exactly. Prints the first mismatches. */
static inline int tl_check(const char *what, tj_dtype t, const void *got, const void *want,
                           size_t n, double rel, double abs_tol)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        tl_num g = tl_get(t, got, i), w = tl_get(t, want, i);
        if (!tl_num_match(t, g, w, rel, abs_tol)) {
            if (bad < 5) {
                char gs[64], ws[64];
                tl_format(gs, sizeof gs, t, g);
                tl_format(ws, sizeof ws, t, w);
                if (bad == 0)
                    tap_diag("%s: mismatches (%s):", what, tj_dtype_name(t));
                tap_diag("  [%zu] got %s, expected %s", i, gs, ws);
            }
            bad++;
        }
    }
    if (bad)
        tap_diag("  %zu of %zu elements differ", bad, n);
    return tap_ok(bad == 0, "%s", what);
}

/* Bytes [from, to) of got must still be poison. */
static inline int tl_poison_intact(const void *got, size_t from, size_t to)
{
    const unsigned char *p = (const unsigned char *)got;
    for (size_t i = from; i < to; i++)
        if (p[i] != TL_POISON)
            return 0;
    return 1;
}

/* Does the last error contain every one of the given strings? Prints it if
 * not. The list ends with NULL. */
static inline int tl_error_mentions(const char *first, ...)
{
    const char *msg = tj_last_error();
    int all = 1;
    va_list ap;
    va_start(ap, first);
    for (const char *s = first; s; s = va_arg(ap, const char *)) {
        if (!strstr(msg, s)) {
            tap_diag("  error message lacks \"%s\"", s);
            all = 0;
        }
    }
    va_end(ap);
    if (!all)
        tap_diag("  message: %s", msg);
    return all;
}

/* Building kernel k (no constants) fails with status want, and the message
 * names the kernel, its source file and line, op (unless NULL) and why. */
static inline int tl_build_refused(const tj_kernel *k, tj_status want, const char *op, const char *why)
{
    char *text = NULL;
    tj_status st = tj_kernel_ir(k, NULL, 0, &text);
    free(text);
    const char *base = strrchr(k->file, '/');
    char where[256];
    snprintf(where, sizeof where, "%s:", base ? base + 1 : k->file);
    return tap_ok(st == want && tl_error_mentions(k->name, where, op ? op : why, why, NULL), "%s is refused: %s",
                  k->name, why);
}

/* Does every kernel of ks (built without constants) make PTX for sm_80
 * and for sm_90? Reports each failure; one TAP point. */
static inline int tl_ptx_of_every(const tj_kernel *const *ks, int n)
{
    int ok = 1;
    for (int k = 0; k < n; k++)
        for (int t = 0; t < 2; t++) {
            char *ptx = NULL;
            if (tj_kernel_ptx(ks[k], NULL, 0, t ? "sm_90" : "sm_80", 4, &ptx) != TJ_OK)
                ok = 0, tap_diag("%s: %s", ks[k]->name, tj_last_error());
            free(ptx);
        }
    return tap_ok(ok, "PTX of every kernel, sm_80 and sm_90");
}

/* What the process writes to stderr between tl_stderr_begin and
 * tl_stderr_end, which returns it (malloc'ed). */
typedef struct tl_capture {
    FILE *tmp;
    int saved;
} tl_capture;

static inline tl_capture tl_stderr_begin(void)
{
    fflush(stderr);
    tl_capture c = {tmpfile(), dup(2)};
    if (!c.tmp || c.saved < 0)
        tap_bail_out("cannot redirect stderr");
    dup2(fileno(c.tmp), 2);
    return c;
}

static inline char *tl_stderr_end(tl_capture c)
{
    fflush(stderr);
    dup2(c.saved, 2);
    close(c.saved);
    long size = ftell(c.tmp);
    char *text = calloc((size_t)(size > 0 ? size : 0) + 1, 1);
    rewind(c.tmp);
    if (size > 0 && fread(text, 1, (size_t)size, c.tmp) != (size_t)size)
        text[0] = '\0';
    fclose(c.tmp);
    return text;
}

/* "name.c:LINE" for file:line checks, file given as __FILE__. */
static inline const char *tl_where(const char *file, int line)
{
    static char buf[8][256];
    static int next;
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    char *out = buf[next++ % 8];
    snprintf(out, sizeof buf[0], "%s:%d", base, line);
    return out;
}

static inline tj_launch_cfg tl_grid(int64_t x, int64_t y, int64_t z)
{
    tj_launch_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.grid[0] = x;
    cfg.grid[1] = y;
    cfg.grid[2] = z;
    return cfg;
}

#endif
