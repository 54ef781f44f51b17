/* SPDX-License-Identifier: MIT */
/*
 * dot.c — the matrix product of tiles, tj_dot.
 *
 * A dot is the one op whose result element reads a whole row of one operand
 * and a whole column of the other, so its rules are stricter than the
 * element-wise ops': no broadcasting, no promotion between operands (a
 * product of f16 and f32 is a question the user answers with a cast, as in
 * Triton), and a short list of dtype pairs that tensor cores take. Shapes
 * are [M, K] x [K, N] or batched [B, M, K] x [B, K, N], each of M, N, K at
 * least 16 (the smallest tensor-core instruction tile along any of them).
 *
 * The op always has an accumulator: without one the builder makes zeros of
 * the result type, as Triton does, so every back end sees one form and a
 * GPU keeps the zeros in registers. The result type is the accumulator's;
 * the rules for it (f32 from f16/bf16/f32, f16 from f16, i32 from i8) are
 * checked here with messages in the user's types.
 *
 * fp8 operands (f8e4m3, f8e5m2, one of each allowed, as in Triton) stay
 * fp8 on the op, with an f32 accumulator: the back ends widen them where
 * they compute (exactly: f16 and f32 hold every value of both formats), the
 * CPU before its micro-kernel (widen_fp8_dots.c), the GPU in registers or
 * not at all (sm_89's fp8 mma.sync, src/passes/accelerate_dot.c).
 */
#include "build.h"

static const char *precision_name(tj_input_precision p)
{
    static const char *const names[] = {"ieee", "tf32", "tf32x3"};
    return (unsigned)p <= TJ_PRECISION_TF32X3 ? names[p] : "?";
}

/* The product's dtype for operands of dtype in: out (0 for the default), or
 * -1 with the error reported. */
static int result_dtype(tj_dtype in, tj_dtype out, tj_input_precision prec)
{
    if (prec != TJ_PRECISION_IEEE && in != TJ_F32)
        return tji_fail(TJ_ERR_TYPE, ".input_precision = %s applies to f32 operands, got %s",
                        precision_name(prec), tj_dtype_name(in)), -1;
    tj_dtype def = in == TJ_I8 ? TJ_I32 : TJ_F32;
    switch (in) {
    case TJ_F16:
        if (out == TJ_I1 || out == TJ_F32 || out == TJ_F16)
            return out == TJ_I1 ? def : out;
        break;
    case TJ_BF16: case TJ_F32: case TJ_I8: case TJ_F8E4M3: case TJ_F8E5M2:
        if (out == TJ_I1 || out == def)
            return def;
        break;
    default:
        return tji_fail(TJ_ERR_TYPE, "no dot of %s operands (dot takes f16, bf16, f32, i8, "
                        "f8e4m3 or f8e5m2)",
                        tj_dtype_name(in)), -1;
    }
    return tji_fail(TJ_ERR_TYPE, "a dot of %s operands gives %s%s, not %s", tj_dtype_name(in),
                    tj_dtype_name(def), in == TJ_F16 ? " or f16" : "",
                    dtype_ok(out) ? tj_dtype_name(out) : "an unknown dtype"), -1;
}

tj_val tj__dot(tj_loc loc, tj_val a, tj_val b, tj_val acc, tj_dot_opts opts)
{
    tj_val args[2] = {a, b};
    if (!tji_enter(loc, "dot", 2, args) || !tji_check_optional(vid(acc), 3))
        return NONE;
    if ((unsigned)opts.input_precision > TJ_PRECISION_TF32X3)
        return tji_fail(TJ_ERR_BUILD, "unknown input_precision %d", (int)opts.input_precision), NONE;
    if (!dtype_ok(opts.out_dtype))
        return tji_fail(TJ_ERR_BUILD, "unknown out_dtype %d", (int)opts.out_dtype), NONE;
    tji_type ta = type_of(vid(a)), tb = type_of(vid(b));
    if (ta.is_ptr || tb.is_ptr || lit(vid(a)) || lit(vid(b)))
        return tji_fail(TJ_ERR_TYPE, "dot multiplies tiles of numbers, got %s and %s",
                        tji_type_text(&ta), tji_type_text(&tb)), NONE;
    if (ta.rank < 2 || ta.rank > 3 || tb.rank != ta.rank)
        return tji_fail(TJ_ERR_SHAPE, "dot takes [M, K] x [K, N] or [B, M, K] x [B, K, N] tiles, "
                        "got %s and %s", tji_type_text(&ta), tji_type_text(&tb)), NONE;
    int r = ta.rank;
    int32_t M = ta.shape[r - 2], K = ta.shape[r - 1], N = tb.shape[r - 1];
    if (tb.shape[r - 2] != K)
        return tji_fail(TJ_ERR_SHAPE, "dot of %s and %s: a's K (%d) differs from b's (%d)",
                        tji_type_text(&ta), tji_type_text(&tb), (int)K, (int)tb.shape[r - 2]), NONE;
    if (r == 3 && ta.shape[0] != tb.shape[0])
        return tji_fail(TJ_ERR_SHAPE, "dot of %s and %s: the batch dimensions differ",
                        tji_type_text(&ta), tji_type_text(&tb)), NONE;
    if (M < 16 || N < 16 || K < 16)
        return tji_fail(TJ_ERR_SHAPE, "dot of %s and %s: M, N and K must be at least 16 "
                        "(got %d, %d, %d)", tji_type_text(&ta), tji_type_text(&tb), (int)M, (int)N,
                        (int)K), NONE;
    int fp8 = tjs_dtype_is_fp8(ta.dtype) && tjs_dtype_is_fp8(tb.dtype); /* mixed too, as Triton */
    if (ta.dtype != tb.dtype && !fp8)
        return tji_fail(TJ_ERR_TYPE, "dot of %s and %s: the operands' dtypes differ (cast one)",
                        tji_type_text(&ta), tji_type_text(&tb)), NONE;

    tji_type rt = ta;
    rt.shape[r - 1] = N;
    tj_dtype out = opts.out_dtype;
    int32_t c = vid(acc);
    if (c) {
        tji_type tc = type_of(c);
        if (tc.is_ptr || !tji_same_shape(&tc, &rt))
            return tji_fail(TJ_ERR_SHAPE, "dot of %s and %s: the accumulator must be of shape %s, "
                            "got %s", tji_type_text(&ta), tji_type_text(&tb), tji_shape_text(&rt),
                            tji_type_text(&tc)), NONE;
        if (out != TJ_I1 && out != tc.dtype)
            return tji_fail(TJ_ERR_TYPE, "dot: out_dtype %s differs from the accumulator's %s",
                            tj_dtype_name(out), tj_dtype_name(tc.dtype)), NONE;
        out = tc.dtype;
    }
    int dt = result_dtype(ta.dtype, out, opts.input_precision);
    if (dt < 0)
        return NONE;
    rt.dtype = (tj_dtype)dt;
    if (!c) {
        int32_t zero = tji_make_const(rt.dtype, 0, 0.0);
        c = zero ? tji_broadcast_shape(zero, rt.rank, rt.shape) : 0;
        if (!c)
            return NONE;
    }
    int32_t res = tji_emit(TJI_DOT, ARGS(vid(a), vid(b), c), rt);
    if (res)
        op_of(res)->precision = opts.input_precision;
    return val(res);
}
