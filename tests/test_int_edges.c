/* SPDX-License-Identifier: MIT */
/*
 * test_int_edges.c — integer arithmetic at the edges of each width.
 *
 * Narrow integers wrap: -(-128) is -128 in i8, 32767 + 1 is -32768 in i16.
 * The GPU computes i8 and i16 in wider registers, and ptxas once got this
 * wrong (neg.s16 of -32768 followed by an arithmetic shift gave +8192 for
 * -8192; tjit now rewrites neg.s16, see src/jit/gpu/target.c). Each signed dtype
 * is run through add, sub, neg, mul, shl and abs on the values at its edges (and
 * random ones), each result then shifted right arithmetically — the step
 * that exposed the bug — and widened to i64, against a C reference, on the
 * test device (TJIT_TEST_DEVICE).
 */
#include "testlib.h"

enum { N = 64 };

#define EDGE_KERNEL(NAME, DT)                                                                     \
    TJ_KERNEL(NAME, TJ_PARAMS(TJ_PTR(a, DT), TJ_PTR(b, DT), TJ_PTR(s, DT), TJ_PTR(o, i64)),      \
              TJ_CONSTS(OP))                                                                      \
    {                                                                                             \
        tj_val offs = tj_arange(0, N);                                                            \
        tj_val x = tj_load(tj_add(a, offs)), y = tj_load(tj_add(b, offs));                        \
        tj_val sh = tj_and(tj_load(tj_add(s, offs)), 7);                                          \
        tj_val r = OP == 0 ? tj_add(x, y) : OP == 1 ? tj_sub(x, y) : OP == 2 ? tj_neg(x)          \
                 : OP == 3 ? tj_mul(x, y) : OP == 4 ? tj_shl(x, tj_and(y, 7)) : tj_abs(x);        \
        tj_store(tj_add(o, offs), tj_cast(tj_shr(r, sh), TJ_I64));                               \
    }
EDGE_KERNEL(edges_i8, i8)
EDGE_KERNEL(edges_i16, i16)
EDGE_KERNEL(edges_i32, i32)
EDGE_KERNEL(edges_i64, i64)

static const char *const op_names[] = {"add", "sub", "neg", "mul", "shl", "abs"};

/* The op in the dtype's width, wrapped as two's complement (computed in
 * unsigned arithmetic, so C itself never overflows). */
static int64_t reference(int op, tj_dtype dt, int64_t x, int64_t y, int64_t s)
{
    uint64_t ux = (uint64_t)x, uy = (uint64_t)y, r;
    switch (op) {
    case 0: r = ux + uy; break;
    case 1: r = ux - uy; break;
    case 2: r = 0 - ux; break;
    case 3: r = ux * uy; break;
    case 4: r = ux << (uy & 7); break;
    default: r = x < 0 ? 0 - ux : ux; break;
    }
    int64_t w = tl_wrap(dt, (int64_t)r);
    return w >> (s & 7);
}

static void run(tj_device *dev, const tj_kernel *k, tj_dtype dt)
{
    int bytes = tl_bits(dt) / 8;
    int64_t lo = tl_int_min(dt), hi = tl_int_max(dt);
    const int64_t edges[] = {lo, lo + 1, -1, 0, 1, hi - 1, hi};
    int64_t a[N], b[N], s[N];
    for (int i = 0; i < N; i++) {
        a[i] = i < 49 ? edges[i % 7] : tl_rand_range(lo, hi);
        b[i] = i < 49 ? edges[i / 7] : tl_rand_range(lo, hi);
        s[i] = tl_rand_range(0, 7);
    }
    uint8_t ra[N * 8], rb[N * 8], rs[N * 8];
    for (int i = 0; i < N; i++) { /* little-endian narrowing */
        memcpy(ra + i * bytes, &a[i], (size_t)bytes);
        memcpy(rb + i * bytes, &b[i], (size_t)bytes);
        memcpy(rs + i * bytes, &s[i], (size_t)bytes);
    }
    tj_buffer ba, bb, bs, bo;
    int ok = tj_buffer_alloc(dev, (size_t)(N * bytes), &ba) == TJ_OK &&
             tj_buffer_alloc(dev, (size_t)(N * bytes), &bb) == TJ_OK &&
             tj_buffer_alloc(dev, (size_t)(N * bytes), &bs) == TJ_OK && tj_buffer_alloc(dev, N * 8, &bo) == TJ_OK &&
             tj_buffer_write(dev, ba, 0, ra, (size_t)(N * bytes)) == TJ_OK &&
             tj_buffer_write(dev, bb, 0, rb, (size_t)(N * bytes)) == TJ_OK &&
             tj_buffer_write(dev, bs, 0, rs, (size_t)(N * bytes)) == TJ_OK;
    for (int64_t op = 0; op < 6; op++) {
        int64_t o[N];
        memset(o, TL_POISON, sizeof o);
        tj_launch_cfg cfg = {.grid = {1}};
        tj_arg args[] = {TJ_ARG_BUF(ba), TJ_ARG_BUF(bb), TJ_ARG_BUF(bs), TJ_ARG_BUF(bo)};
        int good = ok && tj_buffer_write(dev, bo, 0, o, sizeof o) == TJ_OK &&
                   tj_launch(dev, k, &cfg, args, 4, &op, 1) == TJ_OK &&
                   tj_buffer_read(dev, bo, 0, o, sizeof o) == TJ_OK;
        if (!good)
            tap_diag("%s: %s", k->name, tj_last_error());
        int wrong = 0;
        for (int i = 0; good && i < N; i++) {
            int64_t want = reference((int)op, dt, a[i], b[i], s[i]);
            if (o[i] != want && wrong++ < 3)
                tap_diag("%s %s(%lld, %lld) >> %lld = %lld, expected %lld", tj_dtype_name(dt), op_names[op],
                         (long long)a[i], (long long)b[i], (long long)(s[i] & 7), (long long)o[i],
                         (long long)want);
        }
        tap_ok(good && !wrong, "%s %s at the edges of the width, then >>", tj_dtype_name(dt), op_names[op]);
    }
    tj_buffer_free(dev, ba), tj_buffer_free(dev, bb), tj_buffer_free(dev, bs), tj_buffer_free(dev, bo);
}

int main(void)
{
    tj_device *dev = tl_setup("test_int_edges");
    tap_plan(24);
    run(dev, edges_i8, TJ_I8);
    run(dev, edges_i16, TJ_I16);
    run(dev, edges_i32, TJ_I32);
    run(dev, edges_i64, TJ_I64);
    tj_device_close(dev);
    return tap_done();
}
