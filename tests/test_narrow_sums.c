/* SPDX-License-Identifier: MIT */
/*
 * test_narrow_sums.c — sums and prefix sums of narrow integers do not wrap.
 *
 * tj_sum and tj_cumsum of i1, i8, i16, u8 and u16 add in 32 bits of the
 * operand's signedness (i1: i32), as Triton's do: 64 u8 elements of 200 sum
 * to 12800, not 0. Each dtype is summed along the rows and the columns of
 * a random 4×64 tile (edge values included) and prefix-summed along both,
 * the result widened to i64 for the host; the reference adds in int64. On
 * the test device (TJIT_TEST_DEVICE).
 */
#include "testlib.h"

enum { R = 4, C = 64 };

/* OP 0: sum along AXIS, 1: cumsum along AXIS; out is R×C (sums use a row or
 * a column of it). */
#define SUM_KERNEL(NAME, DT)                                                                       \
    TJ_KERNEL(NAME, TJ_PARAMS(TJ_PTR(x, DT), TJ_PTR(o, i64)), TJ_CONSTS(OP, AXIS))                \
    {                                                                                              \
        tj_val rows = tj_expand_dims(tj_arange(0, R), 1), cols = tj_expand_dims(tj_arange(0, C), 0); \
        tj_val v = tj_load(tj_add(x, tj_add(tj_mul(rows, C), cols)));                              \
        if (OP == 1) {                                                                             \
            tj_store(tj_add(o, tj_add(tj_mul(rows, C), cols)), tj_cast(tj_cumsum(v, AXIS), TJ_I64)); \
        } else if (AXIS == 1) {                                                                    \
            tj_store(tj_add(o, tj_arange(0, R)), tj_cast(tj_sum(v, 1), TJ_I64));                   \
        } else {                                                                                   \
            tj_store(tj_add(o, tj_arange(0, C)), tj_cast(tj_sum(v, 0), TJ_I64));                   \
        }                                                                                          \
    }
SUM_KERNEL(sum_i1, i1)
SUM_KERNEL(sum_i8, i8)
SUM_KERNEL(sum_i16, i16)
SUM_KERNEL(sum_u8, u8)
SUM_KERNEL(sum_u16, u16)

static void run(tj_device *dev, const tj_kernel *k, tj_dtype dt)
{
    int bytes = dt == TJ_I1 ? 1 : tl_bits(dt) / 8;
    int64_t lo = dt == TJ_I1 ? 0 : tl_int_min(dt), hi = dt == TJ_I1 ? 1 : tl_int_max(dt);
    int64_t x[R * C];
    uint8_t raw[R * C * 2];
    for (int i = 0; i < R * C; i++) {
        /* row 0 all at the top of the range (the 64 × u8 200), row 1
         * all at the bottom, the rest random */
        x[i] = i < C ? hi - (dt == TJ_U8 ? 55 : 0) : i < 2 * C ? lo : tl_rand_range(lo, hi);
        memcpy(raw + i * bytes, &x[i], (size_t)bytes);
    }
    tj_buffer bx = tl_upload(dev, raw, (size_t)(R * C * bytes)), bo = tl_poisoned(dev, R * C * 8);
    for (int64_t op = 0; op < 2; op++)
        for (int64_t axis = 0; axis < 2; axis++) {
            int64_t o[R * C], want[R * C];
            size_t n = op ? R * C : axis ? R : C;
            for (int r = 0; r < R; r++)
                for (int c = 0; c < C; c++) {
                    int64_t acc = 0;
                    if (op)
                        for (int j = 0; j <= (axis ? c : r); j++)
                            acc += axis ? x[r * C + j] : x[j * C + c];
                    else if (axis && c == 0)
                        for (int j = 0; j < C; j++)
                            acc += x[r * C + j];
                    else if (!axis && r == 0)
                        for (int j = 0; j < R; j++)
                            acc += x[j * C + c];
                    if (op)
                        want[r * C + c] = acc;
                    else if (axis && c == 0)
                        want[r] = acc;
                    else if (!axis && r == 0)
                        want[c] = acc;
                }
            tl_repoison(dev, bo, R * C * 8);
            tj_launch_cfg cfg = {.grid = {1}};
            tj_arg args[] = {TJ_ARG_BUF(bx), TJ_ARG_BUF(bo)};
            int ok = tj_launch(dev, k, &cfg, args, 2, (int64_t[]){op, axis}, 2) == TJ_OK &&
                     tj_buffer_read(dev, bo, 0, o, n * 8) == TJ_OK;
            if (!ok)
                tap_diag("%s: %s", k->name, tj_last_error());
            int wrong = 0;
            for (size_t i = 0; ok && i < n; i++)
                if (o[i] != want[i] && wrong++ < 3)
                    tap_diag("[%zu] = %lld, expected %lld", i, (long long)o[i], (long long)want[i]);
            tap_ok(ok && !wrong, "%s of %s along axis %d in 32 bits", op ? "cumsum" : "sum",
                   tj_dtype_name(dt), (int)axis);
        }
    tj_buffer_free(dev, bx), tj_buffer_free(dev, bo);
}

int main(void)
{
    tj_device *dev = tl_setup("test_narrow_sums");
    tap_plan(5 * 4);
    run(dev, sum_i1, TJ_I1);
    run(dev, sum_i8, TJ_I8);
    run(dev, sum_i16, TJ_I16);
    run(dev, sum_u8, TJ_U8);
    run(dev, sum_u16, TJ_U16);
    tj_device_close(dev);
    return tap_done();
}
