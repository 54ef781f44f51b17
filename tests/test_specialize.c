/* SPDX-License-Identifier: MIT */
/*
 * test_specialize.c — argument specialization and the user's hints.
 *
 * A GPU launch specializes a kernel on its arguments (tjf_spec_key): a
 * pointer 16-byte aligned, an integer a multiple of 16, an integer equal to
 * 1; TJ_*_NOSPEC parameters are left out. This test
 *  - computes the key for chosen values of every parameter kind, each
 *    checked against what the rule says of that value;
 *  - checks the PTX each key leads to: a vector add masked by an n that is a
 *    multiple of 16 reads and writes 16-byte vectors, one masked by any
 *    other n (or by an n declared NOSPEC) reads scalars;
 *  - checks the hints (tj_multiple_of, tj_max_contiguous, tj_max_constancy,
 *    and tj_assume, which takes a condition)
 *    in the axis analysis, that they let a gather-like access vectorize,
 *    that bad uses are errors naming this file's line, and that the IR
 *    prints them;
 *  - checks tj_assume: a promise that a loaded length n is positive lets
 *    offsets wrapped by n (Triton's `offs % N`) load 16-byte vectors, the
 *    kernel computes the same with or without it, and a bounds-checked
 *    launch reports a broken promise with its line;
 *  - launches the kernels on the test device (TJIT_TEST_DEVICE) with sizes
 *    on both sides of every specialization, fresh random inputs and a
 *    poisoned output, so every variant's result is checked.
 */
#include "testlib.h"

#include "builder/ir.h"
#include "ffi_bind/ffi_bind.h"
#include "passes/passes.h"

enum { BLOCK = 1024 }; /* 8 elements per thread at 4 warps: room for 16-byte vectors */

/* out = x + y over one block, masked by n. */
static void add_block(tj_val x, tj_val y, tj_val out, tj_val n, int64_t block)
{
    tj_val offs = tj_add(tj_mul(tj_program_id(0), block), tj_arange(0, block));
    tj_val mask = tj_lt(offs, n);
    tj_store(tj_add(out, offs), tj_add(tj_load(tj_add(x, offs), .mask = mask),
                                       tj_load(tj_add(y, offs), .mask = mask)),
             .mask = mask);
}

TJ_KERNEL(vadd, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(y, f32), TJ_PTR(out, f32), TJ_SCALAR(n, i32)),
          TJ_CONSTS(B))
{
    add_block(x, y, out, n, B);
}

/* The same, with n left out of the specialization. */
TJ_KERNEL(vadd_nospec, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(y, f32), TJ_PTR(out, f32),
                                 TJ_SCALAR_NOSPEC(n, i32)),
          TJ_CONSTS(B))
{
    add_block(x, y, out, n, B);
}

/* out[i*stride + j] = x[i*stride + j] * 2 for rows i, j < B: with stride a
 * multiple of 16 the rows start 64-byte aligned, which only specialization
 * (or a tj_multiple_of hint) can tell. */
TJ_KERNEL(scale_rows, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(out, f32), TJ_SCALAR(stride, i32)),
          TJ_CONSTS(B, HINT))
{
    tj_val row = tj_program_id(0);
    tj_val base = tj_mul(row, stride);
    if (HINT) {
        base = tj_multiple_of(base, 16);
        tj_assume(tj_gt(stride, 0)); /* true; nothing here reads "nonzero" */
    }
    tj_val offs = tj_add(base, tj_arange(0, B));
    tj_store(tj_add(out, offs), tj_mul(tj_load(tj_add(x, offs)), 2.0f));
}

/* A gather: out[j] = x[idx[j]], where the caller promises idx holds runs
 * of 4 consecutive integers starting at multiples of 4. */
TJ_KERNEL(gather4, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(idx, i32), TJ_PTR(out, f32)), TJ_CONSTS(B, HINT))
{
    tj_val j = tj_arange(0, B);
    tj_val ix = tj_load(tj_add(idx, j));
    if (HINT)
        ix = tj_max_contiguous(tj_multiple_of(ix, 4), 4);
    tj_store(tj_add(out, j), tj_load(tj_add(x, ix)));
}

/* out[i] = x[i % n] for this program's B elements, n = lens[0]: a length
 * known only at run time, a multiple of 16 by the caller's word. Only
 * with PROMISE (n > 0) may the wrapped offsets keep runs: n = 0 would
 * make every x % n zero. */
static int promise_line;
TJ_KERNEL(wrap_copy, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(out, f32), TJ_PTR(lens, i32)), TJ_CONSTS(B, PROMISE))
{
    tj_val n = tj_multiple_of(tj_load(lens), 16);
    promise_line = __LINE__ + 2;
    if (PROMISE)
        tj_assume(tj_gt(n, 0));
    tj_val offs = tj_add(tj_mul(tj_program_id(0), B), tj_arange(0, B));
    tj_store(tj_add(out, offs), tj_load(tj_add(x, tj_mod(offs, n))));
}

static int bad_line;
TJ_KERNEL(bad_hint, TJ_PARAMS(TJ_PTR(x, f32), TJ_SCALAR(s, i32)), TJ_CONSTS(WHICH))
{
    tj_val r = tj_arange(0, 16);
    bad_line = __LINE__ + 2;
    switch (WHICH) {
    case 0: tj_multiple_of(x, 16); break;            /* a pointer */
    case 1: tj_max_contiguous(tj_cast(r, TJ_F32), 4); break; /* a float */
    case 2: tj_max_contiguous(r, 3); break;           /* not a power of two */
    case 3: tj_max_constancy(r, 32); break;           /* longer than the dim */
    case 4: tj_multiple_of(s, 0); break;              /* not positive */
    case 5: tj_max_contiguous(s, 4); break;           /* a scalar has no runs */
    default: tj_assume(x); break;                     /* a pointer is no condition */
    }
    tj_store(tj_add(x, r), 0.0f);
}

/* --- the key ----------------------------------------------------------------- */

TJ_KERNEL(every_kind, TJ_PARAMS(TJ_PTR(p, f32), TJ_PTR_NOSPEC(q, f32), TJ_SCALAR(a, i32),
                                TJ_SCALAR(b, i64), TJ_SCALAR(c, u8), TJ_SCALAR(flag, i1),
                                TJ_SCALAR(f, f32), TJ_SCALAR_NOSPEC(s, i32)),
          TJ_CONSTS())
{
    (void)p, (void)q, (void)a, (void)b, (void)c, (void)flag, (void)f, (void)s;
}

static unsigned bits_of(uint64_t key, int param)
{
    return (unsigned)(key >> (TJF_SPEC_BITS * param)) & ((1u << TJF_SPEC_BITS) - 1);
}

/* The rule, written independently of tjf_spec_key. */
/* 0 is no "multiple of 16" to the key: a divisor so marked is never 0 (axis_info.c) */
static unsigned expected_int(int64_t v) { return (v != 0 && v % 16 == 0 ? TJF_SPEC_DIV16 : 0) | (v == 1 ? TJF_SPEC_ONE : 0); }

static void test_key(void)
{
    const int64_t ints[] = {0, 1, 2, 15, 16, 17, 32, 1000, 1024, -16, -1, -32, 4096 + 1};
    int all_ok = 1;
    for (int round = 0; round < 64; round++) {
        int64_t a = round < (int)TL_COUNT(ints) ? ints[round] : tl_rand_range(-100000, 100000);
        int64_t b = round < (int)TL_COUNT(ints) ? ints[TL_COUNT(ints) - 1 - round]
                                                : tl_rand_range(INT64_MIN / 2, INT64_MAX / 2);
        int64_t c = tl_rand_range(0, 255);
        uint64_t paddr = 0x7f0000000000u + (uint64_t)tl_rand_range(0, 64);
        tj_arg args[] = {TJ_ARG_BUF((tj_buffer){1}), TJ_ARG_BUF((tj_buffer){2}), TJ_ARG_I32(a),
                         TJ_ARG_I64(b), TJ_ARG_INT(TJ_U8, c), TJ_ARG_INT(TJ_I1, round & 1),
                         TJ_ARG_F32(16.0), TJ_ARG_I32(16)};
        tjf_value values[8];
        if (tjf_check_args(every_kind, args, 8, values) != TJ_OK) {
            tap_diag("check_args: %s", tj_last_error());
            all_ok = 0;
            break;
        }
        values[0].u64 = paddr;
        values[1].u64 = 0; /* aligned, but NOSPEC */
        uint64_t key = tjf_spec_key(every_kind, values);
        unsigned want[8] = {paddr % 16 ? 0 : TJF_SPEC_ALIGN16, 0, expected_int(a), expected_int(b),
                            expected_int(c), 0, 0, 0};
        for (int i = 0; i < 8; i++)
            if (bits_of(key, i) != want[i]) {
                tap_diag("round %d, param %d: key bits %u, expected %u (a=%lld b=%lld c=%lld p=%#llx)",
                         round, i, bits_of(key, i), want[i], (long long)a, (long long)b,
                         (long long)c, (unsigned long long)paddr);
                all_ok = 0;
            }
        if (key >> (TJF_SPEC_BITS * 8)) {
            tap_diag("bits beyond the parameters: %#llx", (unsigned long long)key);
            all_ok = 0;
        }
    }
    tap_ok(all_ok, "specialization key: aligned pointers, multiples of 16, ones; NOSPEC, i1 and floats left out");
}

/* --- PTX ----------------------------------------------------------------------- */

static char *ptx_for(const tj_kernel *k, int32_t n, int64_t c0)
{
    tj_arg args[] = {TJ_ARG_BUF((tj_buffer){1}), TJ_ARG_BUF((tj_buffer){2}), TJ_ARG_BUF((tj_buffer){3}),
                     TJ_ARG_I32(n)};
    char *ptx = NULL;
    if (tj_kernel_ptx_args(k, args, 4, &c0, 1, "sm_90", 4, &ptx) != TJ_OK)
        tap_diag("tj_kernel_ptx_args: %s", tj_last_error());
    return ptx;
}

static int has(const char *ptx, const char *what) { return ptx && strstr(ptx, what) != NULL; }

static void test_ptx(void)
{
    char *p1024 = ptx_for(vadd, 1024, BLOCK), *p1000 = ptx_for(vadd, 1000, BLOCK);
    char *n1024 = ptx_for(vadd_nospec, 1024, BLOCK);
    tap_ok(has(p1024, "ld.global.v4.") && has(p1024, "st.global.v4."),
           "n = 1024 (a multiple of 16): the masked loads and the store are 16-byte vectors");
    tap_ok(p1000 && !has(p1000, ".v4.") && !has(p1000, ".v2.") && has(p1000, "@%p") &&
               has(p1000, "ld.global.f32"),
           "n = 1000: scalar accesses, each under its own predicate");
    tap_ok(n1024 && !has(n1024, ".v4.") && has(n1024, "ld.global.f32"),
           "n declared TJ_SCALAR_NOSPEC: scalar accesses even for n = 1024");
    free(p1024), free(p1000), free(n1024);

    /* Without args tj_kernel_ptx knows nothing of n: as n = 1000. */
    char *plain = NULL;
    int64_t b = BLOCK;
    tj_status st = tj_kernel_ptx(vadd, &b, 1, "sm_90", 4, &plain);
    tap_ok(st == TJ_OK && !has(plain, ".v4."), "tj_kernel_ptx (no arguments): scalar masked accesses");
    free(plain);

    /* scale_rows: rows start at row * stride. */
    int64_t c[2] = {128, 0};
    tj_arg args[] = {TJ_ARG_BUF((tj_buffer){1}), TJ_ARG_BUF((tj_buffer){2}), TJ_ARG_I32(48)};
    char *s48 = NULL, *s50 = NULL, *hinted = NULL;
    /* one warp, so that a thread holds 4 of the 128 elements */
    tj_kernel_ptx_args(scale_rows, args, 3, c, 2, "sm_90", 1, &s48);
    args[2] = TJ_ARG_I32(50);
    tj_kernel_ptx_args(scale_rows, args, 3, c, 2, "sm_90", 1, &s50);
    c[1] = 1;
    tj_kernel_ptx_args(scale_rows, args, 3, c, 2, "sm_90", 1, &hinted);
    tap_ok(has(s48, "ld.global.v4.") && has(s48, "st.global.v4."),
           "stride 48: row starts are 16-byte aligned, vector accesses");
    tap_ok(s50 && !has(s50, ".v4.") && !has(s50, ".v2."), "stride 50: scalar accesses");
    tap_ok(has(hinted, "ld.global.v4."), "stride 50 but tj_multiple_of(row * stride, 16): vectors");
    free(s48), free(s50), free(hinted);

    /* gather4: the hint makes runs of 4 consecutive indices known. */
    int64_t g[2] = {128, 0};
    char *plain_g = NULL, *hinted_g = NULL;
    tj_kernel_ptx(gather4, g, 2, "sm_90", 1, &plain_g);
    g[1] = 1;
    tj_kernel_ptx(gather4, g, 2, "sm_90", 1, &hinted_g);
    /* Without the hint: idx in one vector, x in 4 scalar loads a thread.
     * With it: x in one vector, of which only idx's first element is
     * needed (LLVM drops the other three idx loads). */
    tap_ok(tl_count(plain_g, "ld.global.b32") == 4 && tl_count(plain_g, "ld.global.v4.") == 1,
           "gather without hints: scalar loads of x");
    tap_ok(tl_count(hinted_g, "ld.global.v4.") == 1 && tl_count(hinted_g, "ld.global.b32") == 1,
           "gather with tj_max_contiguous(tj_multiple_of(ix, 4), 4): 16-byte loads of x");
    free(plain_g), free(hinted_g);
}

/* wrap_copy's PTX, with and without the promise: one warp, 4 elements a
 * thread. */
static void test_promise_ptx(void)
{
    char *ptx[2] = {NULL, NULL};
    for (int promise = 0; promise < 2; promise++) {
        int64_t c[2] = {128, promise};
        if (tj_kernel_ptx(wrap_copy, c, 2, "sm_90", 1, &ptx[promise]) != TJ_OK)
            tap_diag("tj_kernel_ptx: %s", tj_last_error());
    }
    tap_ok(tl_count(ptx[0], "ld.global.v4.") == 0 && tl_count(ptx[0], "ld.global.b32") == 5,
           "x[offs %% n] without tj_assume(n > 0): scalar loads (n may be 0)");
    tap_ok(tl_count(ptx[1], "ld.global.v4.") == 1 && tl_count(ptx[1], "ld.global.b32") == 1,
           "x[offs %% n] with tj_assume(n > 0): one 16-byte load a thread");
    free(ptx[0]), free(ptx[1]);
}

/* wrap_copy on the test device for several n, with and without the
 * promise; then a bounds-checked launch with n = 0 breaks it. */
static void test_promise_launches(tj_device *dev)
{
    enum { B = 128, G = 8 };
    float x[G * B], got[G * B], want[G * B];
    tl_fill_random(TJ_F32, x, G * B);
    tj_buffer bx = tl_upload(dev, x, sizeof x), bo = tl_poisoned(dev, sizeof got);
    int32_t n = 0;
    tj_buffer bn = tl_upload(dev, &n, sizeof n);
    tj_launch_cfg cfg = tl_grid(G, 1, 1);
    tj_arg args[] = {TJ_ARG_BUF(bx), TJ_ARG_BUF(bo), TJ_ARG_BUF(bn)};
    const int32_t lens[] = {16, 48, 208, 1024};
    for (int promise = 0; promise < 2; promise++) {
        int ok = 1;
        for (size_t k = 0; ok && k < TL_COUNT(lens); k++) {
            n = lens[k];
            for (int i = 0; i < G * B; i++)
                want[i] = x[i % n];
            tj_buffer_write(dev, bn, 0, &n, sizeof n);
            tl_repoison(dev, bo, sizeof got);
            int64_t c[2] = {B, promise};
            tj_status st = tj_launch(dev, wrap_copy, &cfg, args, 3, c, 2);
            if (st == TJ_OK)
                st = tj_synchronize(dev);
            if (st != TJ_OK) {
                tap_diag("n = %d: %s", n, tj_last_error());
                ok = 0;
                break;
            }
            tl_download(dev, bo, got, sizeof got);
            ok = memcmp(got, want, sizeof got) == 0;
            if (!ok)
                tap_diag("n = %d: out differs from x[i %% n]", n);
        }
        tap_ok(ok, "wrap_copy %s tj_assume(n > 0): out[i] = x[i %% n] for n = 16, 48, 208, 1024",
               promise ? "with" : "without");
    }
    n = 0;
    tj_buffer_write(dev, bn, 0, &n, sizeof n);
    cfg.check_bounds = TJ_CHECK_BOUNDS_ON;
    int64_t c[2] = {B, 1};
    tj_status st = tj_launch(dev, wrap_copy, &cfg, args, 3, c, 2);
    if (st == TJ_OK)
        st = tj_synchronize(dev);
    tap_ok(st == TJ_ERR_ASSERT && tl_error_mentions(tl_where(__FILE__, promise_line), "wrap_copy", "tj_assume",
                                                     NULL),
           "a bounds-checked launch reports the broken promise n > 0 with its line (%s)", tj_last_error());
    tj_buffer_free(dev, bx), tj_buffer_free(dev, bo), tj_buffer_free(dev, bn);
}

/* --- axis info ------------------------------------------------------------------ */

static void test_axis(void)
{
    int64_t g[2] = {128, 1};
    tji_func *fn = NULL;
    int ok = tji_build(gather4, g, 2, &fn) == TJ_OK;
    tjp_axis_info_result info = {0};
    ok = ok && tjp_axis_info(fn, NULL, &info) == TJ_OK;
    int found = 0;
    for (int32_t i = 0; ok && i < fn->nops; i++) {
        const tji_op *op = &fn->ops[i];
        if (op->code != TJI_ASSUME)
            continue;
        const tjp_axis_value *v = &info.of[op->result];
        if (op->assume == TJI_ASSUME_MULTIPLE_OF)
            found += v->divisibility[0] == 4 && v->contiguity[0] == 1;
        else if (op->assume == TJI_ASSUME_CONTIGUOUS)
            found += v->divisibility[0] == 4 && v->contiguity[0] == 4;
    }
    tap_ok(ok && found == 2, "axis info: multiple_of 4 gives divisibility 4, max_contiguous 4 contiguity 4");
    tjp_axis_info_free(&info);
    tji_func_free(fn);

    char *ir = NULL;
    tj_status st = tj_kernel_ir(gather4, g, 2, &ir);
    tap_ok(st == TJ_OK && strstr(ir, "assume.multiple_of") && strstr(ir, "assume.max_contiguous"),
           "the IR prints the hints");
    free(ir);
}

static void test_bad_hints(void)
{
    static const char *const why[] = {"integer", "integer", "power of two", "power of two",
                                      "positive", "scalar", "the assumption must be i1 or an integer"};
    for (int64_t w = 0; w < 7; w++) {
        char *ir = NULL;
        tj_status st = tj_kernel_ir(bad_hint, &w, 1, &ir);
        char where[64];
        snprintf(where, sizeof where, "test_specialize.c:%d", bad_line + (int)w); /* a case a line */
        const char *msg = tj_last_error();
        tap_ok(st != TJ_OK && strstr(msg, where) && strstr(msg, why[w]) && strstr(msg, "bad_hint"),
               "bad hint %d is an error naming the line and the reason (%s)", (int)w, msg);
        free(ir);
    }
}

/* --- launches -------------------------------------------------------------------- */

static int run_vadd(tj_device *dev, const tj_kernel *k, int32_t n)
{
    size_t cap = (size_t)n + BLOCK;
    float *x = malloc(cap * sizeof *x), *y = malloc(cap * sizeof *y), *out = malloc(cap * sizeof *out);
    for (size_t i = 0; i < cap; i++) {
        x[i] = (float)tl_rand_double(-100, 100);
        y[i] = (float)tl_rand_double(-100, 100);
    }
    tj_buffer bx, by, bo;
    int ok = tj_buffer_alloc(dev, cap * 4, &bx) == TJ_OK && tj_buffer_alloc(dev, cap * 4, &by) == TJ_OK &&
             tj_buffer_alloc(dev, cap * 4, &bo) == TJ_OK;
    memset(out, TL_POISON, cap * 4);
    ok = ok && tj_buffer_write(dev, bx, 0, x, cap * 4) == TJ_OK &&
         tj_buffer_write(dev, by, 0, y, cap * 4) == TJ_OK && tj_buffer_write(dev, bo, 0, out, cap * 4) == TJ_OK;
    tj_launch_cfg cfg = {.grid = {(n + BLOCK - 1) / BLOCK}};
    tj_arg args[] = {TJ_ARG_BUF(bx), TJ_ARG_BUF(by), TJ_ARG_BUF(bo), TJ_ARG_I32(n)};
    int64_t b = BLOCK;
    ok = ok && tj_launch(dev, k, &cfg, args, 4, &b, 1) == TJ_OK && tj_buffer_read(dev, bo, 0, out, cap * 4) == TJ_OK;
    if (!ok)
        tap_diag("n = %d: %s", n, tj_last_error());
    uint32_t poison;
    memset(&poison, TL_POISON, 4);
    for (size_t i = 0; ok && i < cap; i++) {
        uint32_t bits;
        memcpy(&bits, &out[i], 4);
        int good = (int64_t)i < n ? out[i] == x[i] + y[i] : bits == poison;
        if (!good) {
            tap_diag("n = %d: out[%zu] = %g, expected %s", n, i, out[i], (int64_t)i < n ? "x + y" : "untouched");
            ok = 0;
        }
    }
    tj_buffer_free(dev, bx), tj_buffer_free(dev, by), tj_buffer_free(dev, bo);
    free(x), free(y), free(out);
    return ok;
}

static void test_launches(tj_device *dev)
{
    /* A multiple of 16 first: were the key to ignore the specialization, the
     * vector variant it compiles would be reused for 17 and write past n. */
    const int32_t sizes[] = {1024, 17, 16, 15, 1, 1000, 4096 + 16, 4096 + 3};
    for (int k = 0; k < 2; k++) {
        int ok = 1;
        for (size_t i = 0; i < TL_COUNT(sizes); i++)
            ok &= run_vadd(dev, k ? vadd_nospec : vadd, sizes[i]);
        tap_ok(ok, "%s: correct for n = 1024, 17, 16, 15, 1, 1000, 4112, 4099 (every variant)",
               k ? "vadd_nospec" : "vadd");
    }
}

int main(void)
{
    tj_device *dev = tl_setup("test_specialize");
    tap_plan(26);
    test_key();
    test_ptx();
    test_promise_ptx();
    test_axis();
    test_bad_hints();
    test_launches(dev);
    test_promise_launches(dev);
    tj_device_close(dev);
    return tap_done();
}
