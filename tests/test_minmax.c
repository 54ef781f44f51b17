/* SPDX-License-Identifier: MIT */
/*
 * test_minmax.c — one order for float min/max and their reductions.
 *
 * tj_minimum, tj_maximum and the reductions tj_max (with .indices, its
 * argmax), tj_min, tj_argmin order -0 below +0 and ignore NaN (a NaN only when nothing else
 * is there), or with .propagate_nan = TJ_PROPAGATE_NAN_ALL let a NaN win
 * (argmax/argmin: the first NaN's index). LLVM's minnum/maxnum, used
 * before, leave ±0 to the target, so CPU and GPU gave -0 and +0 for the
 * same input and 1/x then differed by the sign of infinity. Every dtype
 * (f16, bf16, f32, f64) is checked bit for bit (the sign of zero included)
 * against a C reference of that order: element-wise pairs of ±0, NaN, ±inf
 * and random numbers; reductions along both axes of tiles 8 × L for L = 8,
 * 16, 32 (lengths of 8 and 16 once lost their last elements to LLVM 22's
 * vectorizer of minnum loops, 7 and 15 trips), over rows of numbers with
 * signed zeros, rows with a NaN, all-NaN rows and rows of equal zeros. The
 * PTX, compiled here without a GPU: f32 min and max (f16 and bf16 too,
 * computed in f32) are one min/max(.NaN).f32 instruction each, LLVM's
 * minimum(num)/maximum(num), whose ±0 order the GPU run of this test checks
 * bit for bit; f64 has no float min or max instruction (its order is
 * integer code, as on the CPU). On the test device (TJIT_TEST_DEVICE).
 */
#include "testlib.h"

enum { N = 128, R = 8 };

#define MINMAX_KERNELS(DT)                                                                          \
    TJ_KERNEL(pair_##DT, TJ_PARAMS(TJ_PTR(x, DT), TJ_PTR(y, DT), TJ_PTR(lo, DT), TJ_PTR(hi, DT)),    \
              TJ_CONSTS(PROP))                                                                      \
    {                                                                                               \
        tj_val offs = tj_arange(0, N);                                                              \
        tj_val a = tj_load(tj_add(x, offs)), b = tj_load(tj_add(y, offs));                          \
        tj_store(tj_add(lo, offs), tj_minimum(a, b, .propagate_nan = (tj_propagate_nan)PROP));      \
        tj_store(tj_add(hi, offs), tj_maximum(a, b, .propagate_nan = (tj_propagate_nan)PROP));      \
    }                                                                                               \
    TJ_KERNEL(reduce_##DT, TJ_PARAMS(TJ_PTR(x, DT), TJ_PTR(mx, DT), TJ_PTR(mn, DT), TJ_PTR(amx, i32), \
                                     TJ_PTR(amn, i32)), TJ_CONSTS(PROP, L, AXIS))                   \
    {                                                                                               \
        /* rows of L along AXIS: element (r, k) at r * L + k */                                     \
        tj_val r = tj_arange(0, R), k = tj_arange(0, L);                                            \
        tj_val offs = AXIS == 1 ? tj_add(tj_mul(tj_expand_dims(r, 1), L), tj_expand_dims(k, 0))     \
                                : tj_add(tj_expand_dims(k, 1), tj_mul(tj_expand_dims(r, 0), L));    \
        tj_val v = tj_load(tj_add(x, offs));                                                        \
        tj_minmax_opts o = {(tj_propagate_nan)PROP};                                                \
        tj_val at; /* max and its index as Triton's return_indices; min, argmin apart */            \
        tj_store(tj_add(mx, r), tj_max(v, AXIS, .propagate_nan = o.propagate_nan, .indices = &at)); \
        tj_store(tj_add(amx, r), at);                                                               \
        tj_store(tj_add(mn, r), tj_min(v, AXIS, .propagate_nan = o.propagate_nan));                 \
        tj_store(tj_add(amn, r), tj_argmin(v, AXIS, .propagate_nan = o.propagate_nan));             \
    }
MINMAX_KERNELS(f16)
MINMAX_KERNELS(bf16)
MINMAX_KERNELS(f32)
MINMAX_KERNELS(f64)

/* A bad option value is an error naming the option and the line. */
static int bad_line;
TJ_KERNEL(bad_option, TJ_PARAMS(TJ_PTR(x, f32)), TJ_CONSTS(REDUCE))
{
    tj_val v = tj_load(tj_add(x, tj_arange(0, 16)));
    if (REDUCE)
        bad_line = __LINE__, v = tj_max(v, 0, .propagate_nan = (tj_propagate_nan)7);
    else
        bad_line = __LINE__, v = tj_maximum(v, 1.0, .propagate_nan = (tj_propagate_nan)-1);
    tj_store(tj_add(x, tj_arange(0, 16)), v);
}
/* What a refused .indices leaves behind: none, whatever the variable held. */
static int64_t indices_after_sum = -1, indices_after_bad_axis = -1;
TJ_KERNEL(indices_of_sum, TJ_PARAMS(TJ_PTR(x, f32)), TJ_CONSTS())
{
    tj_val at = tj_arange(0, 16), xs = tj_load(tj_add(x, at));
    tj_sum(xs, 0, .indices = &at);
    indices_after_sum = at.id;
}
TJ_KERNEL(indices_bad_axis, TJ_PARAMS(TJ_PTR(x, f32)), TJ_CONSTS())
{
    tj_val at = tj_arange(0, 16), xs = tj_load(tj_add(x, at));
    tj_max(xs, 3, .indices = &at);
    indices_after_bad_axis = at.id;
}

/* The order: -0 < +0, NaN aside. */
static int less(double a, double b) { return a < b || (a == b && signbit(a) && !signbit(b)); }

static double ref_pick(int is_max, int prop, double a, double b)
{
    if (isnan(a) || isnan(b))
        return prop || (isnan(a) && isnan(b)) ? NAN : isnan(a) ? b : a;
    return is_max ? (less(a, b) ? b : a) : (less(b, a) ? b : a);
}

/* Reduction of v[0..n) (stride apart): the value, and its first index. */
static double ref_reduce(int is_max, int prop, const double *v, int n, int stride, int *index)
{
    int best = -1;
    for (int i = 0; i < n; i++) {
        double x = v[i * stride];
        if (isnan(x)) {
            if (prop) {
                *index = i;
                return NAN;
            }
            continue;
        }
        if (best < 0 || (is_max ? less(v[best * stride], x) : less(x, v[best * stride])))
            best = i;
    }
    *index = best < 0 ? 0 : best;
    return best < 0 ? NAN : v[best * stride];
}

static int same(double got, double want)
{
    return isnan(want) ? isnan(got) : got == want && signbit(got) == signbit(want);
}

static double special(tj_dtype dt, int i)
{
    static const double s[] = {0.0, -0.0, NAN, INFINITY, -INFINITY, 1.5, -1.5};
    return i < (int)TL_COUNT(s) ? s[i] : tl_random(dt).f;
}

static void run_pairs(tj_device *dev, const tj_kernel *k, tj_dtype dt)
{
    double x[N], y[N];
    uint8_t rx[N * 8], ry[N * 8], lo[N * 8], hi[N * 8];
    for (int i = 0; i < N; i++) { /* the first 64: every pair of specials */
        x[i] = i < 64 ? special(dt, i % 8) : tl_random(dt).f;
        y[i] = i < 64 ? special(dt, i / 8) : i % 3 ? tl_random(dt).f : x[i] * -1;
        tl_set(dt, rx, (size_t)i, tl_flt(x[i])), tl_set(dt, ry, (size_t)i, tl_flt(y[i]));
    }
    size_t size = N * tj_dtype_size(dt);
    tj_buffer bx = tl_upload(dev, rx, size), by = tl_upload(dev, ry, size);
    tj_buffer blo = tl_poisoned(dev, size), bhi = tl_poisoned(dev, size);
    for (int64_t prop = 0; prop < 2; prop++) {
        tl_repoison(dev, blo, size), tl_repoison(dev, bhi, size);
        tj_launch_cfg cfg = {.grid = {1}};
        tj_arg args[] = {TJ_ARG_BUF(bx), TJ_ARG_BUF(by), TJ_ARG_BUF(blo), TJ_ARG_BUF(bhi)};
        int ok = tj_launch(dev, k, &cfg, args, 4, &prop, 1) == TJ_OK && tj_buffer_read(dev, blo, 0, lo, size) == TJ_OK &&
                 tj_buffer_read(dev, bhi, 0, hi, size) == TJ_OK;
        if (!ok)
            tap_diag("%s: %s", k->name, tj_last_error());
        int wrong = 0;
        for (int i = 0; ok && i < N; i++)
            for (int is_max = 0; is_max < 2; is_max++) {
                double got = tl_get(dt, is_max ? hi : lo, (size_t)i).f, want = ref_pick(is_max, (int)prop, x[i], y[i]);
                if (!same(got, want) && wrong++ < 4)
                    tap_diag("%s(%g, %g) = %g, expected %g", is_max ? "maximum" : "minimum", x[i], y[i], got, want);
            }
        tap_ok(ok && !wrong, "%s minimum/maximum%s: -0 < +0, NaN %s", tj_dtype_name(dt),
               prop ? " (propagate_nan)" : "", prop ? "wins" : "ignored");
    }
    tj_buffer_free(dev, bx), tj_buffer_free(dev, by), tj_buffer_free(dev, blo), tj_buffer_free(dev, bhi);
}

/* Row r (of R) of a reduction: element k of n. */
static double row_value(tj_dtype dt, int r, int k, int nan_at)
{
    switch (r % 4) {
    case 0: return k % 3 == 0 ? (k % 2 ? -0.0 : 0.0) : tl_random(dt).f; /* signed zeros among numbers */
    case 1: return k == nan_at ? NAN : k % 5 == 0 ? -0.0 : tl_random(dt).f;
    case 2: return NAN;
    default: return (k * 7 + r) % 3 ? -0.0 : 0.0; /* only zeros: ties */
    }
}

static void run_reduce(tj_device *dev, const tj_kernel *k, tj_dtype dt)
{
    static const int64_t lens[] = {8, 16, 32};
    for (size_t li = 0; li < TL_COUNT(lens); li++)
        for (int64_t axis = 0; axis < 2; axis++)
            for (int64_t prop = 0; prop < 2; prop++) {
                int L = (int)lens[li];
                double v[R * 32];
                uint8_t raw[R * 32 * 8], mx[R * 8], mn[R * 8];
                int32_t amx[R], amn[R];
                for (int r = 0; r < R; r++) {
                    int nan_at = (int)tl_rand_range(0, L - 1);
                    for (int j = 0; j < L; j++) {
                        double e = row_value(dt, r, j, nan_at);
                        v[r * L + j] = e; /* the kernel's tile is R × L or L × R */
                        tl_set(dt, raw, (size_t)(r * L + j), tl_flt(e));
                    }
                }
                size_t size = (size_t)(R * L) * tj_dtype_size(dt), rsize = R * tj_dtype_size(dt);
                tj_buffer bx = tl_upload(dev, raw, size), bmx = tl_poisoned(dev, rsize), bmn = tl_poisoned(dev, rsize);
                tj_buffer bamx = tl_poisoned(dev, R * 4), bamn = tl_poisoned(dev, R * 4);
                tj_launch_cfg cfg = {.grid = {1}};
                tj_arg args[] = {TJ_ARG_BUF(bx), TJ_ARG_BUF(bmx), TJ_ARG_BUF(bmn), TJ_ARG_BUF(bamx), TJ_ARG_BUF(bamn)};
                int64_t consts[] = {prop, L, axis};
                int ok = tj_launch(dev, k, &cfg, args, 5, consts, 3) == TJ_OK &&
                         tj_buffer_read(dev, bmx, 0, mx, rsize) == TJ_OK && tj_buffer_read(dev, bmn, 0, mn, rsize) == TJ_OK &&
                         tj_buffer_read(dev, bamx, 0, amx, R * 4) == TJ_OK && tj_buffer_read(dev, bamn, 0, amn, R * 4) == TJ_OK;
                if (!ok)
                    tap_diag("%s: %s", k->name, tj_last_error());
                int wrong = 0;
                for (int r = 0; ok && r < R; r++)
                    for (int is_max = 0; is_max < 2; is_max++) {
                        int want_i;
                        double want = ref_reduce(is_max, (int)prop, v + r * L, L, 1, &want_i);
                        double got = tl_get(dt, is_max ? mx : mn, (size_t)r).f;
                        int got_i = is_max ? amx[r] : amn[r];
                        if ((!same(got, want) || got_i != want_i) && wrong++ < 4)
                            tap_diag("row %d (kind %d): %s = %g at %d, expected %g at %d", r, r % 4,
                                     is_max ? "max" : "min", got, got_i, want, want_i);
                    }
                tap_ok(ok && !wrong, "%s max/min/argmax/argmin along axis %d of length %d%s", tj_dtype_name(dt),
                       (int)axis, L, prop ? " (propagate_nan)" : "");
                tj_buffer_free(dev, bx), tj_buffer_free(dev, bmx), tj_buffer_free(dev, bmn);
                tj_buffer_free(dev, bamx), tj_buffer_free(dev, bamn);
            }
}

/* f32 (native): the PTX has min.f32 / max.NaN.f32 ..., and no others
 * (f64: none at all, its order is integer code). */
static void check_ptx(const tj_kernel *k, const int64_t *consts, int nconsts, int native)
{
    char *ptx = NULL;
    tj_status st = tj_kernel_ptx(k, consts, nconsts, NULL, 4, &ptx);
    int float_minmax = 0;
    for (const char *p = ptx; st == TJ_OK && *p; p++) { /* each whitespace-separated token */
        if (p != ptx && !strchr(" \t\n", p[-1]))
            continue;
        size_t len = strcspn(p, " \t\n");
        char token[64];
        snprintf(token, sizeof token, "%.*s", (int)(len < 63 ? len : 63), p);
        if ((!strncmp(token, "min.", 4) || !strncmp(token, "max.", 4)) && strstr(token, "f")) {
            int f32 = strstr(token, ".f32") != NULL;
            float_minmax += f32 && native ? 1 : 1000;
            if (!f32 || !native)
                tap_diag("%s: %s", k->name, token);
        }
    }
    if (st != TJ_OK)
        tap_diag("%s: %s", k->name, tj_last_error());
    if (native)
        tap_ok(st == TJ_OK && float_minmax > 0 && float_minmax < 1000,
               "PTX of %s: f32 min/max instructions (min.f32, max.NaN.f32 ...; their order checked above), no other",
               k->name);
    else
        tap_ok(st == TJ_OK && !float_minmax, "PTX of %s has no float min/max instruction", k->name);
    free(ptx);
}

static void check_bad_option(int64_t reduce)
{
    char *ir = NULL;
    tj_status st = tj_kernel_ir(bad_option, &reduce, 1, &ir);
    const char *msg = tj_last_error();
    char line[32];
    snprintf(line, sizeof line, "test_minmax.c:%d", bad_line);
    int ok = st != TJ_OK && strstr(msg, "propagate_nan must be") && strstr(msg, line) &&
             strstr(msg, reduce ? "'max'" : "'maximum'");
    if (!ok)
        tap_diag("status %s: %s", tj_status_name(st), msg);
    tap_ok(ok, "a bad propagate_nan of %s is an error naming it and the line", reduce ? "tj_max" : "tj_maximum");
    free(ir);
}

int main(void)
{
    tj_device *dev = tl_setup("test_minmax");
    tap_plan(4 * (2 + 12) + 4 + 5);
    check_bad_option(0);
    check_bad_option(1);
    tl_build_refused(indices_of_sum, TJ_ERR_BUILD, "'sum'", ".indices is for max and min, not sum");
    tl_build_refused(indices_bad_axis, TJ_ERR_SHAPE, "'max'", "reduction axis 3 is out of range");
    tap_ok(indices_after_sum == 0 && indices_after_bad_axis == 0,
           "a refused tj_sum or tj_max leaves .indices none (ids %lld, %lld)", (long long)indices_after_sum,
           (long long)indices_after_bad_axis);
    run_pairs(dev, pair_f16, TJ_F16);
    run_pairs(dev, pair_bf16, TJ_BF16);
    run_pairs(dev, pair_f32, TJ_F32);
    run_pairs(dev, pair_f64, TJ_F64);
    run_reduce(dev, reduce_f16, TJ_F16);
    run_reduce(dev, reduce_bf16, TJ_BF16);
    run_reduce(dev, reduce_f32, TJ_F32);
    run_reduce(dev, reduce_f64, TJ_F64);
    check_ptx(pair_f32, (int64_t[]){0}, 1, 1);
    check_ptx(pair_f64, (int64_t[]){1}, 1, 0);
    check_ptx(reduce_f32, (int64_t[]){0, 32, 1}, 3, 1);
    check_ptx(reduce_f64, (int64_t[]){1, 16, 0}, 3, 0);
    tj_device_close(dev);
    return tap_done();
}
