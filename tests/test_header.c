/* SPDX-License-Identifier: MIT */
/*
 * test_header.c — tjit.h in strict ISO C: this file is compiled twice, as
 * -std=c11 and as -std=c17, both with -Wall -Wextra -Werror (see
 * Makefile.am), so any warning the kernel macros cause in a user's
 * translation unit breaks the build (test_header_clang.sh does the same
 * with clang). It defines several kernels in one file — one with no
 * parameters and no constants, one with constants only, one launched only
 * through tj_launch, one with the most parameters TJ_KERNEL takes (16, so
 * that the launch passes arguments on the stack too) — and runs each once.
 *
 * Only ISO C here (no POSIX), so it uses tap.h but not testlib.h.
 */
#include <string.h>

#include "tjit.h"
#include "tap.h"

/* No parameters, no constants: fails its assert on a grid of more than 2. */
TJ_KERNEL(no_params, TJ_PARAMS(), TJ_CONSTS())
{
    tj_device_assert(tj_lt(tj_program_id(0), 2), "at most 2 programs");
}

/* Constants only. */
TJ_KERNEL(consts_only, TJ_PARAMS(), TJ_CONSTS(LIMIT))
{
    tj_device_assert(tj_le(tj_num_programs(0), LIMIT), "grid within LIMIT");
}

/* Block pointers: TJ_VALS, TJ_DIMS and the new options compile cleanly
 * (built only, never launched); tensor descriptors too. */
TJ_KERNEL(block_ptrs, TJ_PARAMS(TJ_PTR(out, f32), TJ_SCALAR(n, i32)), TJ_CONSTS())
{
    tj_val b = tj_make_block_ptr(out, TJ_VALS(n, 16), TJ_VALS(16, 1), TJ_VALS(0, 0),
                                 TJ_SHAPE(16, 16), TJ_SHAPE(1, 0));
    tj_val x = tj_load(b, .boundary_check = TJ_DIMS(0, 1), .padding = TJ_PADDING_NAN);
    tj_store(tj_advance(b, TJ_VALS(16, 0)), x, .boundary_check = TJ_DIMS(0));
    tj_val d = tj_make_tensor_descriptor(out, TJ_VALS(n, 16), TJ_VALS(16, 1), TJ_SHAPE(16, 16));
    tj_descriptor_store(d, TJ_VALS(16, 0), tj_descriptor_load(d, TJ_VALS(0, 0)));
}

/* Random numbers: the options' braces and randint4x's outputs (one
 * skipped) compile cleanly (built only, never launched). */
TJ_KERNEL(random_ops, TJ_PARAMS(TJ_PTR(out, f32), TJ_SCALAR(seed, i64)), TJ_CONSTS())
{
    tj_val offs = tj_arange(0, 16), r0, r2, u3, n1;
    tj_randint4x(seed, offs, &r0, NULL, &r2, NULL, .n_rounds = 7);
    tj_rand4x(seed, offs, NULL, NULL, NULL, &u3);
    tj_randn4x(seed, offs, NULL, &n1, NULL, NULL, .n_rounds = 12);
    tj_val u = tj_add(tj_add(tj_rand(seed, offs), tj_randn(seed, offs)), tj_add(u3, n1));
    tj_val i = tj_umulhi(tj_randint(seed, offs), tj_xor(r0, r2));
    tj_store(tj_add(out, offs), tj_add(u, tj_cast(i, TJ_F32)));
}

/* Parameters only; a loop whose induction variable goes unused (v times
 * add 1) must not warn. */
TJ_KERNEL(params_only, TJ_PARAMS(TJ_PTR(out, i32), TJ_SCALAR(v, i32)), TJ_CONSTS())
{
    tj_val t = tj_arange(0, 16);
    TJ_FOR(unused_iv, 0, v, 1, &t) {
        t = tj_add(t, 1);
    }
    tj_store(tj_add(out, tj_arange(0, 16)), t);
}

/* Launched only through tj_launch: its typed launch goes unused. */
TJ_KERNEL(generic_only, TJ_PARAMS(TJ_PTR(out, i32)), TJ_CONSTS())
{
    tj_store(tj_add(out, tj_arange(0, 16)), tj_mul(tj_arange(0, 16), 3));
}

/* 16 parameters: out[0] = the weighted sum of 15 scalars of mixed dtypes. */
TJ_KERNEL(sixteen,
          TJ_PARAMS(TJ_PTR(out, f64), TJ_SCALAR(a, i8), TJ_SCALAR(b, i16), TJ_SCALAR(c, i32),
                    TJ_SCALAR(d, i64), TJ_SCALAR(e, u8), TJ_SCALAR(f, u16), TJ_SCALAR(g, u32),
                    TJ_SCALAR(h, f32), TJ_SCALAR(i, f64), TJ_SCALAR(j, i32), TJ_SCALAR(k, f32),
                    TJ_SCALAR(l, i64), TJ_SCALAR(m, f64), TJ_SCALAR(n, i32), TJ_SCALAR(o, f16)),
          TJ_CONSTS(W))
{
    const tj_val s[15] = {a, b, c, d, e, f, g, h, i, j, k, l, m, n, o};
    tj_val acc = tj_f64(0);
    for (int q = 0; q < 15; q++)
        acc = tj_add(acc, tj_mul(tj_cast(s[q], TJ_F64), (double)(q + 1) * (double)W));
    tj_store(out, acc);
}

int main(void)
{
    tj_device *dev = NULL;
    tj_status st = tj_device_open(&dev, TJ_DEVICE_CPU, 0);
    if (st != TJ_OK)
        tap_bail_out("cannot open the CPU device: %s", tj_last_error());
#if defined(__STDC_VERSION__)
    tap_diag("compiled as C %ld", (long)__STDC_VERSION__);
#endif
    tj_launch_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.grid[0] = 2;
    tap_ok(no_params_launch(dev, &cfg) == TJ_OK, "a kernel with no params and no consts runs");
    cfg.grid[0] = 3;
    st = no_params_launch(dev, &cfg);
    tap_ok(st == TJ_ERR_ASSERT, "... and its assert fails on 3 programs (%s)", tj_status_name(st));
    st = tj_launch(dev, no_params, &cfg, NULL, 0, NULL, 0);
    tap_ok(st == TJ_ERR_ASSERT, "... through tj_launch too (%s)", tj_status_name(st));

    cfg.grid[0] = 5;
    tap_ok(consts_only_launch(dev, &cfg, 5) == TJ_OK, "a kernel with constants only runs");
    tap_ok(consts_only_launch(dev, &cfg, 4) == TJ_ERR_ASSERT,
           "... and another constant is another variant");

    tj_buffer b = {0};
    int32_t got[16];
    int ok = tj_buffer_alloc(dev, sizeof got, &b) == TJ_OK;
    cfg.grid[0] = 1;
    ok = ok && params_only_launch(dev, &cfg, b, 40) == TJ_OK;
    ok = ok && tj_buffer_read(dev, b, 0, got, sizeof got) == TJ_OK;
    for (int q = 0; q < 16 && ok; q++)
        ok = got[q] == q + 40;
    tap_ok(ok, "a kernel with parameters only (and an unused loop variable) stores arange + v");

    tj_arg out_arg = {TJ_I32, 1, {.buf = b}};
    ok = tj_launch(dev, generic_only, &cfg, &out_arg, 1, NULL, 0) == TJ_OK &&
         tj_buffer_read(dev, b, 0, got, sizeof got) == TJ_OK;
    for (int q = 0; q < 16 && ok; q++)
        ok = got[q] == 3 * q;
    tap_ok(ok, "a kernel launched only through tj_launch");

    tj_buffer o = {0};
    double sum = 0;
    ok = tj_buffer_alloc(dev, sizeof sum, &o) == TJ_OK;
    const double vals[15] = {-7, -300, 70000, -5000000000.0, 200, 60000, 4000000000.0,
                             1.5, -2.25, 12, 0.125, 9, 3.5, -1, 0.5};
    double want = 0;
    for (int q = 0; q < 15; q++)
        want += vals[q] * (q + 1) * 3;
    st = sixteen_launch(dev, &cfg, o, -7, -300, 70000, -5000000000ll, 200, 60000, 4000000000u,
                        1.5f, -2.25, 12, 0.125f, 9, 3.5, -1, 0.5f, 3);
    ok = ok && st == TJ_OK && tj_buffer_read(dev, o, 0, &sum, sizeof sum) == TJ_OK;
    tap_ok(ok && sum == want, "16 parameters of mixed dtypes arrive (got %.17g, expected %.17g)",
           sum, want);
    if (st != TJ_OK)
        tap_diag("  %s: %s", tj_status_name(st), tj_last_error());
    tj_device_close(dev);
    return tap_done();
}
