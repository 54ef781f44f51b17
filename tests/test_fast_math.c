/* SPDX-License-Identifier: MIT */
/*
 * test_fast_math.c — tj_fast_exp, tj_fast_exp2 and tj_fast_div.
 *
 * They are the precise ops' fast forms on a GPU (f32: ex2.approx.ftz of
 * x*log2(e) or of x, div.full.f32) and the precise ops elsewhere. Checked
 * here:
 *  - the IR marks them (exp.fast, exp2.fast, div.fast) and the PTX holds
 *    ex2.approx.ftz.f32 (one exponential unit op; the precise exp2's
 *    ex2.approx.f32 is two) and div.full.f32 where the precise kernel holds
 *    div.rn.f32;
 *  - on the test device (TJIT_TEST_DEVICE), with fresh random inputs and a
 *    poisoned output, every f32 result is within the documented bound of
 *    the exact value (computed in double): exp's relative error below
 *    2^-21 + 2^-23 |x|, div's below 2 ulp (2^-22 relative) for divisors in
 *    [2^-126, 2^126]; exp2's on [-125, 125] below 2^-21; f64 results are
 *    the precise ops' (1 ulp of exp);
 *  - bad uses are errors naming the op and this file's line.
 */
#include "testlib.h"

enum { N = 4096, BLOCK = 256 };

/* e = exp(a), q = a / b over one block, in the fast forms or the precise. */
static void exp_and_div(tj_val a, tj_val b, tj_val e, tj_val q, tj_val n, int fast)
{
    tj_val offs = tj_add(tj_mul(tj_program_id(0), BLOCK), tj_arange(0, BLOCK));
    tj_val mask = tj_lt(offs, n);
    tj_val x = tj_load(tj_add(a, offs), .mask = mask), y = tj_load(tj_add(b, offs), .mask = mask);
    tj_store(tj_add(e, offs), fast ? tj_fast_exp(x) : tj_exp(x), .mask = mask);
    tj_store(tj_add(q, offs), fast ? tj_fast_div(x, y) : tj_div(x, y), .mask = mask);
}

TJ_KERNEL(fast_f32, TJ_PARAMS(TJ_PTR(a, f32), TJ_PTR(b, f32), TJ_PTR(e, f32), TJ_PTR(q, f32),
                              TJ_SCALAR(n, i32)),
          TJ_CONSTS(FAST))
{
    exp_and_div(a, b, e, q, n, (int)FAST);
}

TJ_KERNEL(fast_f64, TJ_PARAMS(TJ_PTR(a, f64), TJ_PTR(b, f64), TJ_PTR(e, f64), TJ_PTR(q, f64),
                              TJ_SCALAR(n, i32)),
          TJ_CONSTS())
{
    exp_and_div(a, b, e, q, n, 1);
}

TJ_KERNEL(fast_f16, TJ_PARAMS(TJ_PTR(a, f16), TJ_PTR(b, f16), TJ_PTR(e, f16), TJ_PTR(q, f16),
                              TJ_SCALAR(n, i32)),
          TJ_CONSTS())
{
    exp_and_div(a, b, e, q, n, 1);
}

TJ_KERNEL(fast_exp2_f32, TJ_PARAMS(TJ_PTR(a, f32), TJ_PTR(e, f32), TJ_SCALAR(n, i32)), TJ_CONSTS())
{
    tj_val offs = tj_add(tj_mul(tj_program_id(0), BLOCK), tj_arange(0, BLOCK));
    tj_val mask = tj_lt(offs, n);
    tj_store(tj_add(e, offs), tj_fast_exp2(tj_load(tj_add(a, offs), .mask = mask)), .mask = mask);
}

static int bad_line;
TJ_KERNEL(bad_fast, TJ_PARAMS(TJ_PTR(p, f32)), TJ_CONSTS(WHICH))
{
    bad_line = __LINE__ + 1;
    tj_val v = WHICH ? tj_fast_div(p, 2.0f) : tj_fast_exp(p);
    tj_store(p, 0.0f);
    (void)v;
}

static char *ptx_of(int64_t fast)
{
    char *ptx = NULL;
    if (tj_kernel_ptx(fast_f32, &fast, 1, "sm_90", 4, &ptx) != TJ_OK)
        tap_diag("tj_kernel_ptx: %s", tj_last_error());
    return ptx;
}

static void test_text(void)
{
    int64_t one = 1;
    char *ir = NULL;
    tj_status st = tj_kernel_ir(fast_f32, &one, 1, &ir);
    tap_ok(st == TJ_OK && strstr(ir, "exp.fast") && strstr(ir, "div.fast"), "the IR marks exp.fast and div.fast");
    free(ir);
    char *fast = ptx_of(1), *precise = ptx_of(0);
    tap_ok(fast && strstr(fast, "ex2.approx.ftz.f32") && strstr(fast, "div.full.f32") && !strstr(fast, "div.rn.f32"),
           "fast PTX: ex2.approx.ftz.f32 and div.full.f32, no div.rn.f32");
    tap_ok(precise && strstr(precise, "div.rn.f32") && !strstr(precise, "div.full.f32"),
           "precise PTX: div.rn.f32");
    free(fast);
    free(precise);
    char *half = NULL;
    st = tj_kernel_ptx(fast_f16, NULL, 0, "sm_90", 4, &half);
    tap_ok(st == TJ_OK && strstr(half, "ex2.approx") && strstr(half, "div.full.f32") && !strstr(half, "div.rn"),
           "f16 fast PTX: computed in f32 with ex2.approx and div.full.f32");
    free(half);
    st = tj_kernel_ir(fast_exp2_f32, NULL, 0, &ir);
    char *exp2 = NULL;
    tj_status pst = tj_kernel_ptx(fast_exp2_f32, NULL, 0, "sm_90", 4, &exp2);
    tap_ok(st == TJ_OK && strstr(ir, "exp2.fast") && pst == TJ_OK && strstr(exp2, "ex2.approx.ftz.f32") &&
               !strstr(exp2, "ex2.approx.f32"),
           "tj_fast_exp2: exp2.fast in the IR, ex2.approx.ftz.f32 (never ex2.approx.f32) in the PTX");
    free(ir);
    free(exp2);
    for (int64_t w = 0; w < 2; w++) {
        st = tj_kernel_ir(bad_fast, &w, 1, &ir);
        char where[64];
        snprintf(where, sizeof where, "test_fast_math.c:%d", bad_line);
        tap_ok(st == TJ_ERR_TYPE && strstr(tj_last_error(), where) &&
                   strstr(tj_last_error(), w ? "fast_div" : "fast_exp"),
               "%s of a pointer: %s", w ? "fast_div" : "fast_exp", tj_last_error());
    }
}

/* Runs kernel k (FAST = fast when it takes a constant) on a, b; returns e, q. */
static int run(tj_device *dev, const tj_kernel *k, const int64_t *consts, int nconsts, size_t es,
               const void *a, const void *b, void *e, void *q)
{
    tj_buffer ba, bb, be, bq;
    size_t bytes = N * es;
    int ok = tj_buffer_alloc(dev, bytes, &ba) == TJ_OK && tj_buffer_alloc(dev, bytes, &bb) == TJ_OK &&
             tj_buffer_alloc(dev, bytes, &be) == TJ_OK && tj_buffer_alloc(dev, bytes, &bq) == TJ_OK;
    memset(e, TL_POISON, bytes);
    memset(q, TL_POISON, bytes);
    ok = ok && tj_buffer_write(dev, ba, 0, a, bytes) == TJ_OK && tj_buffer_write(dev, bb, 0, b, bytes) == TJ_OK &&
         tj_buffer_write(dev, be, 0, e, bytes) == TJ_OK && tj_buffer_write(dev, bq, 0, q, bytes) == TJ_OK;
    tj_launch_cfg cfg = {.grid = {N / BLOCK}};
    tj_arg args[] = {TJ_ARG_BUF(ba), TJ_ARG_BUF(bb), TJ_ARG_BUF(be), TJ_ARG_BUF(bq), TJ_ARG_I32(N)};
    ok = ok && tj_launch(dev, k, &cfg, args, 5, consts, nconsts) == TJ_OK &&
         tj_buffer_read(dev, be, 0, e, bytes) == TJ_OK && tj_buffer_read(dev, bq, 0, q, bytes) == TJ_OK;
    if (!ok)
        tap_diag("%s: %s", k->name, tj_last_error());
    tj_buffer_free(dev, ba), tj_buffer_free(dev, bb), tj_buffer_free(dev, be), tj_buffer_free(dev, bq);
    return ok;
}

static void test_f32(tj_device *dev)
{
    static float a[N], b[N], e[N], q[N];
    for (int i = 0; i < N; i++) {
        a[i] = (float)tl_rand_double(-80, 80);
        /* divisors with exponents over most of the range, both signs */
        double m = tl_rand_double(1, 2) * (tl_rand_u64() & 1 ? 1 : -1);
        b[i] = (float)ldexp(m, (int)tl_rand_range(-100, 100));
    }
    int64_t fast = 1;
    int ok = run(dev, fast_f32, &fast, 1, sizeof(float), a, b, e, q);
    double worst_e = 0, worst_q = 0;
    int bad_e = 0, bad_q = 0;
    for (int i = 0; ok && i < N; i++) {
        double want_e = exp((double)a[i]), want_q = (double)a[i] / (double)b[i];
        double re = fabs(((double)e[i] - want_e) / want_e), rq = fabs(((double)q[i] - want_q) / want_q);
        double bound_e = ldexp(1, -21) + ldexp(1, -23) * fabs((double)a[i]);
        if (!(re <= bound_e) && bad_e++ < 3)
            tap_diag("fast_exp(%.9g) = %.9g, exact %.9g (relative error %.3g, bound %.3g)", a[i], e[i], want_e,
                     re, bound_e);
        if (!(rq <= ldexp(1, -22)) && bad_q++ < 3)
            tap_diag("fast_div(%.9g, %.9g) = %.9g, exact %.9g (relative error %.3g)", a[i], b[i], q[i], want_q, rq);
        worst_e = re > worst_e ? re : worst_e;
        worst_q = rq > worst_q ? rq : worst_q;
    }
    tap_diag("f32: worst relative error exp %.3g, div %.3g", worst_e, worst_q);
    tap_ok(ok && !bad_e, "f32 tj_fast_exp on [-80, 80]: relative error below 2^-21 + 2^-23 |x|");
    tap_ok(ok && !bad_q, "f32 tj_fast_div, divisors 2^[-100, 100]: within 2 ulp");
}

static void test_exp2(tj_device *dev)
{
    static float a[N], e[N];
    for (int i = 0; i < N; i++)
        a[i] = (float)tl_rand_double(-125, 125);
    memset(e, TL_POISON, sizeof e);
    tj_buffer ba, be;
    int ok = tj_buffer_alloc(dev, sizeof a, &ba) == TJ_OK && tj_buffer_alloc(dev, sizeof e, &be) == TJ_OK &&
             tj_buffer_write(dev, ba, 0, a, sizeof a) == TJ_OK && tj_buffer_write(dev, be, 0, e, sizeof e) == TJ_OK;
    tj_launch_cfg cfg = {.grid = {N / BLOCK}};
    tj_arg args[] = {TJ_ARG_BUF(ba), TJ_ARG_BUF(be), TJ_ARG_I32(N)};
    ok = ok && tj_launch(dev, fast_exp2_f32, &cfg, args, 3, NULL, 0) == TJ_OK &&
         tj_buffer_read(dev, be, 0, e, sizeof e) == TJ_OK;
    if (!ok)
        tap_diag("fast_exp2_f32: %s", tj_last_error());
    tj_buffer_free(dev, ba), tj_buffer_free(dev, be);
    int bad = 0;
    for (int i = 0; ok && i < N; i++) {
        double want = exp2((double)a[i]), r = fabs(((double)e[i] - want) / want);
        if (!(r <= ldexp(1, -21)) && bad++ < 3)
            tap_diag("fast_exp2(%.9g) = %.9g, exact %.9g (relative error %.3g)", a[i], e[i], want, r);
    }
    tap_ok(ok && !bad, "f32 tj_fast_exp2 on [-125, 125]: relative error below 2^-21");
}

/* f16: the fast ops in f32, rounded once: within an f16 ulp (2^-10 relative,
 * and below 2^-14, where f16 is subnormal, half its spacing of 2^-24: a
 * tiny x gives a subnormal quotient). */
static void test_f16(tj_device *dev)
{
    static uint16_t a[N], b[N], e[N], q[N];
    for (int i = 0; i < N; i++) {
        a[i] = tj_f32_to_f16((float)tl_round(TJ_F16, tl_rand_double(-8, 8)));
        b[i] = tj_f32_to_f16((float)tl_round(TJ_F16, tl_rand_double(0.5, 2) * (tl_rand_u64() & 1 ? 1 : -1)));
    }
    int ok = run(dev, fast_f16, NULL, 0, 2, a, b, e, q);
    int bad = 0;
    for (int i = 0; ok && i < N; i++) {
        double x = tj_f16_to_f32(a[i]), y = tj_f16_to_f32(b[i]);
        double ge = tj_f16_to_f32(e[i]), gq = tj_f16_to_f32(q[i]);
        if (!(fabs(ge - exp(x)) <= tl_eps(TJ_F16) * exp(x)) ||
            !(fabs(gq - x / y) <= tl_eps(TJ_F16) * fabs(x / y) + 0x1p-25)) {
            if (bad++ < 3)
                tap_diag("f16: fast_exp(%g) = %g (exp %g), fast_div(%g, %g) = %g (%g)", x, ge, exp(x), x, y, gq, x / y);
        }
    }
    tap_ok(ok && !bad, "f16 tj_fast_exp and tj_fast_div: within an f16 ulp");
}

static void test_f64(tj_device *dev)
{
    static double a[N], b[N], e[N], q[N];
    for (int i = 0; i < N; i++) {
        a[i] = tl_rand_double(-700, 700);
        b[i] = tl_rand_double(0.5, 2) * (tl_rand_u64() & 1 ? 1 : -1);
    }
    int ok = run(dev, fast_f64, NULL, 0, sizeof(double), a, b, e, q);
    int bad = 0;
    for (int i = 0; ok && i < N; i++) {
        double want_e = exp(a[i]);
        if (!(fabs(e[i] - want_e) <= 2 * tl_eps(TJ_F64) * fabs(want_e)) || q[i] != a[i] / b[i]) {
            if (bad++ < 3)
                tap_diag("f64: fast_exp(%.17g) = %.17g (exp %.17g), fast_div(%.17g, %.17g) = %.17g (%.17g)",
                         a[i], e[i], want_e, a[i], b[i], q[i], a[i] / b[i]);
        }
    }
    tap_ok(ok && !bad, "f64: tj_fast_exp and tj_fast_div are the precise ops (exp within 1 ulp, div exact)");
}

int main(void)
{
    tj_device *dev = tl_setup("test_fast_math");
    tap_plan(12);
    test_text();
    test_f32(dev);
    test_exp2(dev);
    test_f16(dev);
    test_f64(dev);
    tj_device_close(dev);
    return tap_done();
}
