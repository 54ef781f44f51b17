/* SPDX-License-Identifier: MIT */
/*
 * test_ir.c — the tile IR as tj_kernel_ir shows it: one kernel that uses
 * every kind of op, built without any device open.
 *
 * Checks: the header names the kernel, its typed parameters and the
 * constants; each op family appears by name; every op line carries the
 * user's file:line, and that line lies inside the kernel's body; the
 * builder makes implicit conversions explicit (splat, broadcast, cast), as
 * the IR contract says; the text is deterministic and changes with the
 * constants.
 */
#include "testlib.h"

static int body_first, body_last;

TJ_KERNEL(every_op,
          TJ_PARAMS(TJ_PTR(x, f16), TJ_PTR(out, f32), TJ_PTR(counts, i32), TJ_SCALAR(n, i32)),
          TJ_CONSTS(BLOCK))
{
    body_first = __LINE__;
    tj_val r = tj_expand_dims(tj_arange(0, BLOCK), 1);
    tj_val c = tj_expand_dims(tj_arange(0, 4), 0);
    tj_val offs = tj_add(tj_mul(r, 4), c);
    tj_val v = tj_load(tj_add(x, offs), .mask = tj_lt(offs, n), .other = tj_f16(0));
    tj_val w = tj_where(tj_gt(v, 0), tj_fma(v, v, v), tj_cast(tj_broadcast_to(c, TJ_SHAPE(BLOCK, 4)), TJ_F16));
    tj_val t = tj_reshape(tj_permute(w, TJ_SHAPE(1, 0)), TJ_SHAPE(4 * BLOCK));
    tj_val acc = tj_full(TJ_SHAPE(BLOCK), 1.5, TJ_F32);
    TJ_FOR(i, 0, n, 1, &acc) {
        acc = tj_add(acc, tj_sum(tj_mul(w, i), 1));
    }
    TJ_IF(tj_gt(tj_max(t, 0), 3), &acc) {
        acc = tj_neg(acc);
    }
    TJ_ELSE {
        acc = tj_exp(tj_cumsum(acc, 0));
    }
    tj_atomic_add(tj_add(counts, tj_argmax(acc, 0)), 1);
    tj_atomic_cas(tj_add(counts, tj_num_programs(0)), 0, tj_program_id(0));
    tj_print("acc", acc);
    tj_device_assert(tj_lt(tj_min(acc, 0), 1e6), "bounded");
    tj_store(tj_add(out, tj_arange(0, BLOCK)), acc, .mask = tj_lt(tj_arange(0, BLOCK), n));
    body_last = __LINE__;
}

/* Lines of text that carry a "// file:line" comment: checks each line's
 * file is this one and its line within the body. Returns the bad count. */
static int check_locations(const char *text, int *ops)
{
    int bad = 0;
    *ops = 0;
    for (const char *p = text; *p;) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char line[512];
        snprintf(line, sizeof line, "%.*s", (int)(len < 511 ? len : 511), p);
        char *loc = strstr(line, "// ");
        if (loc) {
            (*ops)++;
            char *colon = strrchr(loc, ':');
            int n = colon ? atoi(colon + 1) : -1;
            if (!strstr(loc, "test_ir.c:") || n < body_first || n > body_last) {
                if (bad++ < 3)
                    tap_diag("  op outside the body (%d..%d): %s", body_first, body_last, line);
            }
        }
        p += len + (end ? 1 : 0);
    }
    return bad;
}

int main(void)
{
    char *text = NULL, *again = NULL, *other = NULL;
    int64_t block = 8, block16 = 16;
    tj_status st = tj_kernel_ir(every_op, &block, 1, &text);
    if (!tap_ok(st == TJ_OK && text, "tj_kernel_ir builds a kernel using every op family, "
                                     "with no device open (%s)", tj_status_name(st))) {
        tap_diag("  %s", tj_last_error());
        return tap_done();
    }

    tap_ok(strstr(text, "every_op") && strstr(text, "x: *f16") && strstr(text, "out: *f32") &&
               strstr(text, "n: i32") && strstr(text, "BLOCK=8"),
           "the header names the kernel, typed parameters and constants");

    static const char *const ops[] = {
        "arange", "expand_dims", "broadcast", "splat", "mul", "add", "cmp.lt", "cmp.gt",
        "addptr", "load", "where", "fma", "cast", "permute", "reshape", "const", "for",
        "yield", "reduce.sum", "reduce.max", "reduce.min", "reduce.argmax", "if", "else",
        "neg", "exp", "cumsum", "atomic", "atomic_cas", "num_programs", "program_id",
        "print", "assert", "store"};
    for (size_t i = 0; i < TL_COUNT(ops); i++)
        tap_ok(strstr(text, ops[i]) != NULL, "the IR shows '%s'", ops[i]);

    int nops = 0, bad = check_locations(text, &nops);
    tap_ok(nops >= 40 && bad == 0,
           "all %d ops carry test_ir.c:LINE within the kernel body (lines %d..%d)", nops,
           body_first, body_last);

    st = tj_kernel_ir(every_op, &block, 1, &again);
    tap_ok(st == TJ_OK && again && strcmp(text, again) == 0,
           "building the same variant twice gives the same text");
    st = tj_kernel_ir(every_op, &block16, 1, &other);
    tap_ok(st == TJ_OK && other && strstr(other, "BLOCK=16") && strstr(other, "arange 0, 16") &&
               strcmp(text, other) != 0,
           "another constant gives another program (BLOCK=16)");
    if (bad || nops < 40)
        tap_diag("%s", text);
    free(text);
    free(again);
    free(other);

    /* And the program runs: launch it on the CPU, check the stored values. */
    tj_device *dev = tl_setup("test_ir");
    uint16_t xs[8 * 4];
    for (int i = 0; i < 32; i++)
        xs[i] = tj_f32_to_f16((float)tl_rand_range(-3, 3) * 0.25f);
    int32_t counts[16] = {0};
    tj_buffer bx = tl_upload(dev, xs, sizeof xs), bo = tl_poisoned(dev, 4 * 8),
              bc = tl_upload(dev, counts, sizeof counts);
    tj_launch_cfg cfg = tl_grid(1, 1, 1);
    int32_t nn = 2; /* two loop trips; stores the first 2 of 8 */
    fflush(stdout);
    st = every_op_launch(dev, &cfg, bx, bo, bc, nn, 8);
    fflush(stdout);
    if (!tl_launch_failed(st, "the every-op kernel runs")) {
        /* Reference in C, following the same steps. */
        float w[8][4], t_max = -1e30f, acc[8];
        for (int i = 0; i < 8; i++)
            for (int j = 0; j < 4; j++) {
                int o = i * 4 + j;
                float v = o < nn ? tj_f16_to_f32(xs[o]) : 0;
                float f = tj_f16_to_f32(tj_f32_to_f16(tj_f16_to_f32(tj_f32_to_f16(v * v)) + v));
                w[i][j] = v > 0 ? f : (float)j;
                t_max = fmaxf(t_max, w[i][j]);
            }
        for (int i = 0; i < 8; i++) {
            acc[i] = 1.5f;
            for (int k = 0; k < nn; k++) {
                float s = 0;
                for (int j = 0; j < 4; j++)
                    s = tj_f16_to_f32(tj_f32_to_f16(s + tj_f16_to_f32(tj_f32_to_f16(w[i][j] * k))));
                acc[i] += s;
            }
        }
        float want[2], got[8];
        if (t_max > 3) {
            for (int i = 0; i < 2; i++)
                want[i] = -acc[i];
        } else {
            float run = 0;
            for (int i = 0; i < 2; i++)
                want[i] = expf(run += acc[i]);
        }
        tl_download(dev, bo, got, sizeof got);
        tl_check("the every-op kernel stores the values C computes", TJ_F32, got, want, 2, 1e-3,
                 1e-6);
    }
    tj_device_close(dev);
    return tap_done();
}
