/* SPDX-License-Identifier: MIT */
/*
 * llvm_scalar.c — one element of an element-wise op, as LLVM IR, for both
 * back ends.
 *
 * The CPU back end (cpu/, LLVM ORC) and the GPU back end
 * (gpu_math.c, NVPTX) must give the same answer bit for bit for every
 * element-wise op and cast: a differential test runs the same kernels on
 * both and compares. Two copies of these rules drifted apart once (integer
 * to bf16 rounded twice on the GPU only), so they live here, once, and both
 * back ends call them. What stays in the back ends is what truly differs by
 * target: the float functions with no IEEE instruction (remainder, exp,
 * exp2, log, log2, sigmoid: libm on the CPU, IR polynomials on the GPU,
 * reached through a callback), memory, reductions and layouts.
 *
 * The rules, chosen so that no input is undefined behavior or a trap:
 * integer division and remainder by 0 give 0 and INT_MIN / -1 gives INT_MIN
 * (remainder 0); shifts by the bit width or more give 0, or the sign for an
 * arithmetic right shift; float to int casts saturate and NaN becomes 0; a
 * cast to i1 is "!= 0" (NaN is true, as in C); float min/max order -0
 * below +0 and ignore NaN, or propagate it (a NaN result is the quiet NaN
 * 0x7fc00000, or its f64 and f16/bf16 forms), through integer keys that the reductions of both back ends
 * use too (tjj_ls_order_key) — except f32 on the GPU, where LLVM's
 * maximum/maximumnum are one max.NaN.f32 / max.f32 with the same order
 * (and the instruction's NaN); abs(INT_MIN) is INT_MIN. f16 and bf16 are computed in f32
 * and rounded back after every op: f16 is LLVM half; bf16 is carried as its
 * 16 bits and rounded with integer code (round to nearest even, a NaN keeps
 * its top bits, made quiet). Every conversion rounds once: f64 to bf16 rounds
 * to odd in f32 first, f64 to f16 is one fptrunc, and an integer becomes bf16
 * by integer code alone. The fp8 dtypes (f8e4m3, f8e5m2) are carried as their
 * byte and only cast (the builder refuses arithmetic on them): to f32 and
 * from f32 by integer code (support.c's steps, the same bits on every
 * target, with no need for sm_89's cvt ... e4m3x2), from f64 through f32
 * rounded to odd, from an integer through f32 (exact below 2^24, and anything
 * larger saturates either way).
 *
 * The code works on a tjj_ls, a small view of the caller's generator state
 * (context, module, builder, types) that each back end fills from its own.
 */
#include <string.h>

#include "llvm_scalar.h"

/* --- types and small helpers -------------------------------------------------- */

tjj_ls tjj_ls_view(const tjj_llvm_types *ty, LLVMModuleRef mod, LLVMBuilderRef b)
{
    return (tjj_ls){ty->ctx,   mod,       b,          ty->t_i1,     ty->t_i8,  ty->t_i16,
                    ty->t_i32, ty->t_i64, ty->t_half, ty->t_float, ty->t_double, ty->t_ptr, 0};
}

LLVMTypeRef tjj_ls_dtype_type(const tjj_ls *ls, tj_dtype dt)
{
    switch (dt) {
    case TJ_I1: return ls->t_i1;
    case TJ_I8: case TJ_U8: case TJ_F8E4M3: case TJ_F8E5M2: return ls->t_i8;
    case TJ_I16: case TJ_U16: case TJ_BF16: return ls->t_i16;
    case TJ_I32: case TJ_U32: return ls->t_i32;
    case TJ_I64: case TJ_U64: return ls->t_i64;
    case TJ_F16: return ls->t_half;
    case TJ_F32: return ls->t_float;
    case TJ_F64: return ls->t_double;
    default: return ls->t_i32;
    }
}

LLVMTypeRef tjj_ls_mem_type(const tjj_ls *ls, tj_dtype dt)
{
    return dt == TJ_I1 ? ls->t_i8 : tjj_ls_dtype_type(ls, dt);
}

LLVMTypeRef tjj_ls_compute_type(const tjj_ls *ls, tj_dtype dt)
{
    if (dt == TJ_F16 || dt == TJ_BF16 || tjs_dtype_is_fp8(dt))
        return ls->t_float;
    return tjj_ls_dtype_type(ls, dt);
}

static LLVMValueRef c_int(LLVMTypeRef t, int64_t v) { return LLVMConstInt(t, (unsigned long long)v, 1); }

LLVMValueRef tjj_ls_intrinsic(const tjj_ls *ls, const char *name, LLVMTypeRef *overloads,
                             unsigned noverloads, LLVMValueRef *args, unsigned nargs)
{
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    LLVMValueRef f = LLVMGetIntrinsicDeclaration(ls->mod, id, overloads, noverloads);
    LLVMTypeRef ft = LLVMIntrinsicGetType(ls->ctx, id, overloads, noverloads);
    return LLVMBuildCall2(ls->b, ft, f, args, nargs, "");
}

LLVMValueRef tjj_ls_intrinsic1(const tjj_ls *ls, const char *name, LLVMValueRef x)
{
    LLVMTypeRef t = LLVMTypeOf(x);
    return tjj_ls_intrinsic(ls, name, &t, 1, &x, 1);
}

LLVMValueRef tjj_ls_intrinsic2(const tjj_ls *ls, const char *name, LLVMValueRef x, LLVMValueRef y)
{
    LLVMTypeRef t = LLVMTypeOf(x);
    LLVMValueRef args[2] = {x, y};
    return tjj_ls_intrinsic(ls, name, &t, 1, args, 2);
}

/* --- 8-bit floats ---------------------------------------------------------------- */

/* The two formats, as support.c's fp8_format: mantissa bits, bias, the
 * largest finite magnitude's bits, and whether the top exponent is inf/NaN
 * (e5m2) rather than only 0x7f being NaN (e4m3). */
typedef struct fp8_format {
    int mant_bits, bias;
    int64_t max_code;
    int has_inf;
} fp8_format;

static fp8_format fp8_format_of(tj_dtype dt)
{
    return dt == TJ_F8E4M3 ? (fp8_format){3, 7, 0x7e, 0} : (fp8_format){2, 15, 0x7b, 1};
}

/* fp8 bits (i8) -> f32, exact: normals by moving the fields, subnormals
 * as mant * 2^(1 - bias - m) (an exact product with a normal result). */
static LLVMValueRef fp8_to_f32(const tjj_ls *ls, LLVMValueRef v, tj_dtype dt)
{
    LLVMBuilderRef b = ls->b;
    LLVMTypeRef i32 = ls->t_i32;
    fp8_format f = fp8_format_of(dt);
    int m = f.mant_bits;
    LLVMValueRef x = LLVMBuildZExt(b, v, i32, "");
    LLVMValueRef sign = LLVMBuildShl(b, LLVMBuildAnd(b, x, c_int(i32, 0x80), ""), c_int(i32, 24), "");
    LLVMValueRef mag = LLVMBuildAnd(b, x, c_int(i32, 0x7f), "");
    LLVMValueRef e = LLVMBuildLShr(b, mag, c_int(i32, m), "");
    LLVMValueRef mant = LLVMBuildAnd(b, mag, c_int(i32, (1 << m) - 1), "");
    LLVMValueRef normal = LLVMBuildOr(
        b, LLVMBuildShl(b, LLVMBuildAdd(b, e, c_int(i32, 127 - f.bias), ""), c_int(i32, 23), ""),
        LLVMBuildShl(b, mant, c_int(i32, 23 - m), ""), "");
    LLVMValueRef scale = LLVMBuildBitCast(b, c_int(i32, (int64_t)(128 - f.bias - m) << 23), ls->t_float, "");
    LLVMValueRef sub = LLVMBuildBitCast(b, LLVMBuildFMul(b, LLVMBuildUIToFP(b, mant, ls->t_float, ""), scale, ""),
                                        i32, "");
    LLVMValueRef special, special_bits;
    if (f.has_inf) {
        special = LLVMBuildICmp(b, LLVMIntEQ, e, c_int(i32, 0x7f >> m), "");
        LLVMValueRef is_inf = LLVMBuildICmp(b, LLVMIntEQ, mant, c_int(i32, 0), "");
        special_bits = LLVMBuildSelect(b, is_inf, c_int(i32, 0x7f800000), c_int(i32, 0x7fc00000), "");
    } else {
        special = LLVMBuildICmp(b, LLVMIntEQ, mag, c_int(i32, 0x7f), "");
        special_bits = c_int(i32, 0x7fc00000);
    }
    LLVMValueRef is_sub = LLVMBuildICmp(b, LLVMIntEQ, e, c_int(i32, 0), "");
    LLVMValueRef bits = LLVMBuildSelect(b, special, special_bits, LLVMBuildSelect(b, is_sub, sub, normal, ""), "");
    return LLVMBuildBitCast(b, LLVMBuildOr(b, bits, sign, ""), ls->t_float, "");
}

/* f32 -> fp8 bits (i8): round to nearest even, saturating to the largest
 * finite value (infinities too), NaN -> 0x7f; the steps of support.c's
 * f32_to_fp8, with selects for its branches. A normal result drops 23 - m
 * bits of the f32 with the bf16 trick (a carry moves into the exponent); a
 * subnormal one counts units of 2^(1 - bias - m) in the significand shifted
 * right by 151 - bias - m - exponent, clamped to 31 (which gives 0 for
 * anything smaller, f32 subnormals included). */
static LLVMValueRef f32_to_fp8(const tjj_ls *ls, LLVMValueRef fv, tj_dtype dt)
{
    LLVMBuilderRef b = ls->b;
    LLVMTypeRef i32 = ls->t_i32;
    fp8_format f = fp8_format_of(dt);
    int m = f.mant_bits, drop = 23 - m;
    LLVMValueRef u = LLVMBuildBitCast(b, fv, i32, "");
    LLVMValueRef sign = LLVMBuildAnd(b, LLVMBuildLShr(b, u, c_int(i32, 24), ""), c_int(i32, 0x80), "");
    LLVMValueRef a = LLVMBuildAnd(b, u, c_int(i32, 0x7fffffff), "");
    LLVMValueRef lsb = LLVMBuildAnd(b, LLVMBuildLShr(b, a, c_int(i32, drop), ""), c_int(i32, 1), "");
    LLVMValueRef r = LLVMBuildAdd(b, LLVMBuildAdd(b, a, c_int(i32, (1 << (drop - 1)) - 1), ""), lsb, "");
    LLVMValueRef ncode = LLVMBuildSub(b, LLVMBuildLShr(b, r, c_int(i32, drop), ""),
                                      c_int(i32, (int64_t)(127 - f.bias) << m), "");
    LLVMValueRef shift = LLVMBuildSub(b, c_int(i32, 151 - f.bias - m), LLVMBuildLShr(b, a, c_int(i32, 23), ""), "");
    shift = tjj_ls_intrinsic2(ls, "llvm.umin", shift, c_int(i32, 31)); /* a normal's is negative: unused */
    LLVMValueRef sig = LLVMBuildOr(b, LLVMBuildAnd(b, a, c_int(i32, 0x7fffff), ""), c_int(i32, 0x800000), "");
    LLVMValueRef q = LLVMBuildLShr(b, sig, shift, "");
    LLVMValueRef half = LLVMBuildShl(b, c_int(i32, 1), LLVMBuildSub(b, shift, c_int(i32, 1), ""), "");
    LLVMValueRef rest = LLVMBuildAnd(b, sig, LLVMBuildSub(b, LLVMBuildShl(b, half, c_int(i32, 1), ""), c_int(i32, 1), ""), "");
    LLVMValueRef odd = LLVMBuildICmp(b, LLVMIntNE, LLVMBuildAnd(b, q, c_int(i32, 1), ""), c_int(i32, 0), "");
    LLVMValueRef up = LLVMBuildOr(b, LLVMBuildICmp(b, LLVMIntUGT, rest, half, ""),
                                  LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntEQ, rest, half, ""), odd, ""), "");
    LLVMValueRef scode = LLVMBuildAdd(b, q, LLVMBuildZExt(b, up, i32, ""), "");
    LLVMValueRef is_normal = LLVMBuildICmp(b, LLVMIntUGE, a, c_int(i32, (int64_t)(128 - f.bias) << 23), "");
    LLVMValueRef code = LLVMBuildSelect(b, is_normal, ncode, scode, "");
    code = tjj_ls_intrinsic2(ls, "llvm.umin", code, c_int(i32, f.max_code));
    LLVMValueRef out = LLVMBuildTrunc(b, LLVMBuildOr(b, sign, code, ""), ls->t_i8, "");
    LLVMValueRef nan = LLVMBuildICmp(b, LLVMIntUGT, a, c_int(i32, 0x7f800000), "");
    return LLVMBuildSelect(b, nan, c_int(ls->t_i8, 0x7f), out, "");
}

LLVMValueRef tjj_ls_fp8_const(const tjj_ls *ls, tj_dtype dt, double v)
{
    float f = (float)v; /* the builder rounded v to dt already: exact (parsed text rounds here) */
    uint8_t bits = dt == TJ_F8E4M3 ? tj_f32_to_f8e4m3(f) : tj_f32_to_f8e5m2(f);
    return LLVMConstInt(ls->t_i8, bits, 0);
}

/* --- 16-bit floats and memory form --------------------------------------------- */

LLVMValueRef tjj_ls_fext(const tjj_ls *ls, LLVMValueRef v, tj_dtype dt)
{
    if (tjs_dtype_is_fp8(dt))
        return fp8_to_f32(ls, v, dt);
    if (dt == TJ_F16)
        return LLVMBuildFPExt(ls->b, v, ls->t_float, "");
    if (dt == TJ_BF16) {
        LLVMValueRef w = LLVMBuildShl(ls->b, LLVMBuildZExt(ls->b, v, ls->t_i32, ""), c_int(ls->t_i32, 16), "");
        return LLVMBuildBitCast(ls->b, w, ls->t_float, "");
    }
    return v;
}

/* Whether the module is NVPTX's, whose sm_80+ round f32 to bf16 in one
 * instruction (cvt.rn.bf16.f32; LLVM expands it on older chips). */
static int targets_nvptx(const tjj_ls *ls)
{
    const char *triple = LLVMGetTarget(ls->mod);
    return triple && !strncmp(triple, "nvptx", 5);
}

/* f32 -> bf16 bits: round to nearest even; a NaN keeps its top bits, made
 * quiet (as tj_f32_to_bf16 in support.c). The rounding is integer code on
 * the CPU and LLVM's fptrunc to bfloat on the GPU (the same bits for every
 * number: both round to nearest even); the NaN rule is ours on both. */
static LLVMValueRef f32_to_bf16(const tjj_ls *ls, LLVMValueRef f)
{
    LLVMBuilderRef b = ls->b;
    LLVMValueRef u = LLVMBuildBitCast(b, f, ls->t_i32, "");
    LLVMValueRef high = LLVMBuildLShr(b, u, c_int(ls->t_i32, 16), ""), rounded;
    if (targets_nvptx(ls)) {
        LLVMValueRef bf = LLVMBuildFPTrunc(b, f, LLVMBFloatTypeInContext(ls->ctx), "");
        rounded = LLVMBuildBitCast(b, bf, ls->t_i16, "");
    } else {
        LLVMValueRef lsb = LLVMBuildAnd(b, high, c_int(ls->t_i32, 1), "");
        LLVMValueRef biased = LLVMBuildAdd(b, LLVMBuildAdd(b, u, c_int(ls->t_i32, 0x7fff), ""), lsb, "");
        rounded = LLVMBuildTrunc(b, LLVMBuildLShr(b, biased, c_int(ls->t_i32, 16), ""), ls->t_i16, "");
    }
    LLVMValueRef quiet = LLVMBuildOr(b, LLVMBuildTrunc(b, high, ls->t_i16, ""), c_int(ls->t_i16, 0x40), "");
    LLVMValueRef nan = LLVMBuildFCmp(b, LLVMRealUNO, f, f, "");
    return LLVMBuildSelect(b, nan, quiet, rounded, "");
}

/* f64 -> f32 rounded to odd (inexact results get their last bit set, after
 * truncation toward zero), so that a later rounding to 16 bits is the only one. */
static LLVMValueRef f64_to_f32_odd(const tjj_ls *ls, LLVMValueRef d)
{
    LLVMBuilderRef b = ls->b;
    LLVMValueRef f = LLVMBuildFPTrunc(b, d, ls->t_float, "");
    LLVMValueRef back = LLVMBuildFPExt(b, f, ls->t_double, "");
    LLVMValueRef inexact = LLVMBuildFCmp(b, LLVMRealONE, back, d, "");
    LLVMValueRef away = LLVMBuildFCmp(b, LLVMRealOGT, tjj_ls_intrinsic1(ls, "llvm.fabs", back),
                                      tjj_ls_intrinsic1(ls, "llvm.fabs", d), "");
    LLVMValueRef u = LLVMBuildBitCast(b, f, ls->t_i32, "");
    LLVMValueRef toward_zero = LLVMBuildSub(b, u, LLVMBuildZExt(b, away, ls->t_i32, ""), "");
    LLVMValueRef odd = LLVMBuildOr(b, toward_zero, c_int(ls->t_i32, 1), "");
    return LLVMBuildBitCast(b, LLVMBuildSelect(b, inexact, odd, u, ""), ls->t_float, "");
}

LLVMValueRef tjj_ls_fround(const tjj_ls *ls, LLVMValueRef v, tj_dtype dt)
{
    int from_double = LLVMTypeOf(v) == ls->t_double;
    switch (dt) {
    case TJ_F16: return LLVMBuildFPTrunc(ls->b, v, ls->t_half, "");
    case TJ_BF16: return f32_to_bf16(ls, from_double ? f64_to_f32_odd(ls, v) : v);
    case TJ_F32: return from_double ? LLVMBuildFPTrunc(ls->b, v, ls->t_float, "") : v;
    case TJ_F64: return from_double ? v : LLVMBuildFPExt(ls->b, v, ls->t_double, "");
    case TJ_F8E4M3: case TJ_F8E5M2: return f32_to_fp8(ls, from_double ? f64_to_f32_odd(ls, v) : v, dt);
    default: return v;
    }
}

/* An integer as bf16 bits, rounded once (to nearest even) with integer
 * code alone: the magnitude is normalized so that its leading 1 is the top
 * bit, the 8 bits from there are the significand, and the bits below decide
 * the rounding. A carry out of the significand moves into the exponent by
 * itself, since the bits are built by adding, not by or-ing. (A route through
 * floats, an exact int -> f64 with a sticky bit and a round-to-odd f64 ->
 * f32, was right on the CPU but still rounded some i32 and i64 values twice
 * on the H200; integer code leaves nothing to float conversions.) */
static LLVMValueRef int_to_bf16(const tjj_ls *ls, LLVMValueRef v, int is_signed)
{
    LLVMBuilderRef b = ls->b;
    if (LLVMGetIntTypeWidth(LLVMTypeOf(v)) < 32)
        v = is_signed ? LLVMBuildSExt(b, v, ls->t_i32, "") : LLVMBuildZExt(b, v, ls->t_i32, "");
    LLVMTypeRef it = LLVMTypeOf(v);
    int w = (int)LLVMGetIntTypeWidth(it);
    LLVMValueRef zero = LLVMConstNull(it);
    LLVMValueRef neg = is_signed ? LLVMBuildICmp(b, LLVMIntSLT, v, zero, "") : NULL;
    LLVMValueRef mag = neg ? LLVMBuildSelect(b, neg, LLVMBuildNeg(b, v, ""), v, "") : v;
    LLVMValueRef ctlz_args[2] = {mag, LLVMConstInt(ls->t_i1, 1, 0)}; /* poison for 0: not selected */
    LLVMValueRef lz = tjj_ls_intrinsic(ls, "llvm.ctlz", &it, 1, ctlz_args, 2);
    LLVMValueRef norm = LLVMBuildShl(b, mag, lz, "");
    LLVMValueRef sig = LLVMBuildLShr(b, norm, c_int(it, w - 8), "");          /* 128..255 */
    LLVMValueRef rest = LLVMBuildAnd(b, norm, c_int(it, ((int64_t)1 << (w - 8)) - 1), "");
    LLVMValueRef half = c_int(it, (int64_t)1 << (w - 9));
    LLVMValueRef odd = LLVMBuildICmp(b, LLVMIntNE, LLVMBuildAnd(b, sig, c_int(it, 1), ""), zero, "");
    LLVMValueRef up = LLVMBuildOr(b, LLVMBuildICmp(b, LLVMIntUGT, rest, half, ""),
                                  LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntEQ, rest, half, ""), odd, ""), "");
    /* exponent field (w - 1 - lz) + 127, plus the significand without its leading 1 */
    LLVMValueRef exp_field = LLVMBuildShl(b, LLVMBuildSub(b, c_int(it, w - 1 + 127), lz, ""), c_int(it, 7), "");
    LLVMValueRef bits = LLVMBuildAdd(b, exp_field, LLVMBuildSub(b, sig, c_int(it, 128), ""), "");
    bits = LLVMBuildAdd(b, bits, LLVMBuildZExt(b, up, it, ""), "");
    LLVMValueRef out = LLVMBuildTrunc(b, bits, ls->t_i16, "");
    if (neg)
        out = LLVMBuildOr(b, out, LLVMBuildSelect(b, neg, c_int(ls->t_i16, 0x8000), LLVMConstNull(ls->t_i16), ""), "");
    return LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, mag, zero, ""), LLVMConstNull(ls->t_i16), out, "");
}

LLVMValueRef tjj_ls_to_mem(const tjj_ls *ls, LLVMValueRef v, const tji_type *t)
{
    return !t->is_ptr && t->dtype == TJ_I1 ? LLVMBuildZExt(ls->b, v, ls->t_i8, "") : v;
}

LLVMValueRef tjj_ls_from_mem(const tjj_ls *ls, LLVMValueRef v, const tji_type *t)
{
    return !t->is_ptr && t->dtype == TJ_I1
               ? LLVMBuildICmp(ls->b, LLVMIntNE, v, LLVMConstNull(ls->t_i8), "")
               : v;
}

/* --- integer arithmetic ----------------------------------------------------------- */

/* Division and remainder that never trap: d == 0 gives 0, and for signed
 * types d == -1 is done as a negation (INT_MIN / -1 = INT_MIN). */
static LLVMValueRef int_divrem(const tjj_ls *ls, int is_rem, int is_signed, LLVMValueRef a, LLVMValueRef d)
{
    LLVMBuilderRef b = ls->b;
    LLVMTypeRef t = LLVMTypeOf(a);
    LLVMValueRef zero = LLVMConstNull(t), one = c_int(t, 1);
    LLVMValueRef by_zero = LLVMBuildICmp(b, LLVMIntEQ, d, zero, "");
    if (!is_signed) {
        LLVMValueRef safe = LLVMBuildSelect(b, by_zero, one, d, "");
        LLVMValueRef r = is_rem ? LLVMBuildURem(b, a, safe, "") : LLVMBuildUDiv(b, a, safe, "");
        return LLVMBuildSelect(b, by_zero, zero, r, "");
    }
    LLVMValueRef by_m1 = LLVMBuildICmp(b, LLVMIntEQ, d, LLVMConstAllOnes(t), "");
    LLVMValueRef special = LLVMBuildOr(b, by_zero, by_m1, "");
    LLVMValueRef safe = LLVMBuildSelect(b, special, one, d, "");
    if (is_rem)
        return LLVMBuildSelect(b, special, zero, LLVMBuildSRem(b, a, safe, ""), "");
    LLVMValueRef q = LLVMBuildSDiv(b, a, safe, "");
    LLVMValueRef neg = LLVMBuildSub(b, zero, a, ""); /* wraps: INT_MIN / -1 = INT_MIN */
    return LLVMBuildSelect(b, by_zero, zero, LLVMBuildSelect(b, by_m1, neg, q, ""), "");
}

/* Shifts by the width or more (s read as unsigned) give 0, or the sign. */
static LLVMValueRef int_shift(const tjj_ls *ls, int left, int is_signed, LLVMValueRef a, LLVMValueRef s)
{
    LLVMBuilderRef b = ls->b;
    LLVMTypeRef t = LLVMTypeOf(a);
    unsigned bits = LLVMGetIntTypeWidth(t);
    LLVMValueRef too_far = LLVMBuildICmp(b, LLVMIntUGE, s, c_int(t, bits), "");
    if (!left && is_signed)
        return LLVMBuildAShr(b, a, LLVMBuildSelect(b, too_far, c_int(t, bits - 1), s, ""), "");
    LLVMValueRef r = left ? LLVMBuildShl(b, a, s, "") : LLVMBuildLShr(b, a, s, "");
    return LLVMBuildSelect(b, too_far, LLVMConstNull(t), r, "");
}

static LLVMValueRef int_op(const tjj_ls *ls, tji_opcode code, int is_signed, LLVMValueRef *a)
{
    LLVMBuilderRef b = ls->b;
    switch (code) {
    case TJI_ADD: return LLVMBuildAdd(b, a[0], a[1], "");
    case TJI_SUB: return LLVMBuildSub(b, a[0], a[1], "");
    case TJI_MUL: return LLVMBuildMul(b, a[0], a[1], "");
    case TJI_IDIV: return int_divrem(ls, 0, is_signed, a[0], a[1]);
    case TJI_REM: return int_divrem(ls, 1, is_signed, a[0], a[1]);
    case TJI_AND: return LLVMBuildAnd(b, a[0], a[1], "");
    case TJI_OR: return LLVMBuildOr(b, a[0], a[1], "");
    case TJI_XOR: return LLVMBuildXor(b, a[0], a[1], "");
    case TJI_NOT: return LLVMBuildNot(b, a[0], "");
    case TJI_POPC: return tjj_ls_intrinsic1(ls, "llvm.ctpop", a[0]);
    case TJI_CLZ: { /* ctlz(0) is the width, not poison */
        LLVMTypeRef t = LLVMTypeOf(a[0]);
        LLVMValueRef args[2] = {a[0], LLVMConstNull(ls->t_i1)};
        return tjj_ls_intrinsic(ls, "llvm.ctlz", &t, 1, args, 2);
    }
    case TJI_BREV: return tjj_ls_intrinsic1(ls, "llvm.bitreverse", a[0]);
    case TJI_SHL: return int_shift(ls, 1, is_signed, a[0], a[1]);
    case TJI_SHR: return int_shift(ls, 0, is_signed, a[0], a[1]);
    case TJI_MIN: return tjj_ls_intrinsic2(ls, is_signed ? "llvm.smin" : "llvm.umin", a[0], a[1]);
    case TJI_MAX: return tjj_ls_intrinsic2(ls, is_signed ? "llvm.smax" : "llvm.umax", a[0], a[1]);
    case TJI_NEG: return LLVMBuildSub(b, LLVMConstNull(LLVMTypeOf(a[0])), a[0], "");
    case TJI_ABS: {
        if (!is_signed)
            return a[0];
        LLVMTypeRef t = LLVMTypeOf(a[0]);
        LLVMValueRef args[2] = {a[0], LLVMConstNull(ls->t_i1)}; /* abs(INT_MIN) = INT_MIN */
        return tjj_ls_intrinsic(ls, "llvm.abs", &t, 1, args, 2);
    }
    default: return NULL;
    }
}

/* --- float arithmetic --------------------------------------------------------------- */

/* The float ops that are IEEE operations, the same on every target, on
 * compute-type values; NULL for the others. */
static LLVMValueRef ieee_float_op(const tjj_ls *ls, tji_opcode code, LLVMValueRef x, LLVMValueRef y,
                                  LLVMValueRef z)
{
    LLVMBuilderRef b = ls->b;
    LLVMTypeRef t = LLVMTypeOf(x);
    switch (code) {
    case TJI_ADD: return LLVMBuildFAdd(b, x, y, "");
    case TJI_SUB: return LLVMBuildFSub(b, x, y, "");
    case TJI_MUL: return LLVMBuildFMul(b, x, y, "");
    case TJI_DIV: return LLVMBuildFDiv(b, x, y, "");
    case TJI_NEG: return LLVMBuildFNeg(b, x, "");
    case TJI_ABS: return tjj_ls_intrinsic1(ls, "llvm.fabs", x);
    case TJI_SQRT: return tjj_ls_intrinsic1(ls, "llvm.sqrt", x);
    case TJI_RSQRT: /* both correctly rounded, not an approximate rsqrt */
        return LLVMBuildFDiv(b, LLVMConstReal(t, 1.0), tjj_ls_intrinsic1(ls, "llvm.sqrt", x), "");
    case TJI_FLOOR: return tjj_ls_intrinsic1(ls, "llvm.floor", x);
    case TJI_CEIL: return tjj_ls_intrinsic1(ls, "llvm.ceil", x);
    case TJI_RINT: return tjj_ls_intrinsic1(ls, "llvm.rint", x);
    case TJI_TRUNC: return tjj_ls_intrinsic1(ls, "llvm.trunc", x);
    case TJI_ROUND: return tjj_ls_intrinsic1(ls, "llvm.round", x);
    case TJI_FMA: {
        LLVMValueRef args[3] = {x, y, z};
        return tjj_ls_intrinsic(ls, "llvm.fma", &t, 1, args, 3);
    }
    default: return NULL;
    }
}

/* The float order of min, max and their reductions, as integers: the bits
 * of a number with the sign bit clear, else with the other bits flipped, so
 * that a signed comparison of keys orders -inf < ... < -0 < +0 < ... < +inf
 * (minnum/maxnum leave -0 against +0 to the target, and CPU and GPU chose
 * differently). A NaN becomes the lowest or highest key, beyond every
 * number's, so that it loses or wins every comparison: it loses (is
 * ignored) where NaNs are not propagated, and wins where they are. */
static LLVMValueRef key_sentinel(LLVMTypeRef it, int nan_high)
{
    unsigned w = LLVMGetIntTypeWidth(it);
    uint64_t high = (UINT64_C(1) << (w - 1)) - 1;
    return LLVMConstInt(it, nan_high ? high : ~high, 0);
}

static int nan_key_high(int is_max, int propagate_nan) { return is_max == propagate_nan; }

LLVMValueRef tjj_ls_order_key(const tjj_ls *ls, LLVMValueRef x, int is_max, int propagate_nan)
{
    LLVMBuilderRef b = ls->b;
    LLVMTypeRef ft = LLVMTypeOf(x), it = ft == ls->t_double ? ls->t_i64 : ls->t_i32;
    unsigned w = LLVMGetIntTypeWidth(it);
    LLVMValueRef bits = LLVMBuildBitCast(b, x, it, "");
    LLVMValueRef flip = LLVMBuildLShr(b, LLVMBuildAShr(b, bits, LLVMConstInt(it, w - 1, 0), ""),
                                      LLVMConstInt(it, 1, 0), "");
    LLVMValueRef key = LLVMBuildXor(b, bits, flip, "");
    LLVMValueRef is_nan = LLVMBuildFCmp(b, LLVMRealUNO, x, x, "");
    return LLVMBuildSelect(b, is_nan, key_sentinel(it, nan_key_high(is_max, propagate_nan)), key, "");
}

LLVMValueRef tjj_ls_from_order_key(const tjj_ls *ls, LLVMValueRef key, LLVMTypeRef ft, int is_max,
                                   int propagate_nan)
{
    LLVMBuilderRef b = ls->b;
    LLVMTypeRef it = LLVMTypeOf(key);
    unsigned w = LLVMGetIntTypeWidth(it);
    LLVMValueRef flip = LLVMBuildLShr(b, LLVMBuildAShr(b, key, LLVMConstInt(it, w - 1, 0), ""),
                                      LLVMConstInt(it, 1, 0), "");
    LLVMValueRef x = LLVMBuildBitCast(b, LLVMBuildXor(b, key, flip, ""), ft, "");
    LLVMValueRef is_nan = LLVMBuildICmp(b, LLVMIntEQ, key,
                                        key_sentinel(it, nan_key_high(is_max, propagate_nan)), "");
    LLVMValueRef quiet_nan = LLVMConstInt(it, w == 64 ? UINT64_C(0x7ff8000000000000) : 0x7fc00000, 0);
    return LLVMBuildSelect(b, is_nan, LLVMBuildBitCast(b, quiet_nan, ft, ""), x, "");
}

static LLVMValueRef float_min_max(const tjj_ls *ls, int is_max, int propagate_nan, LLVMValueRef x,
                                  LLVMValueRef y)
{
    if (ls->native_f32_min_max && LLVMTypeOf(x) == ls->t_float)
        return tjj_ls_intrinsic2(ls, is_max ? (propagate_nan ? "llvm.maximum" : "llvm.maximumnum")
                                            : (propagate_nan ? "llvm.minimum" : "llvm.minimumnum"), x, y);
    LLVMValueRef kx = tjj_ls_order_key(ls, x, is_max, propagate_nan);
    LLVMValueRef ky = tjj_ls_order_key(ls, y, is_max, propagate_nan);
    LLVMValueRef k = tjj_ls_intrinsic2(ls, is_max ? "llvm.smax" : "llvm.smin", kx, ky);
    return tjj_ls_from_order_key(ls, k, LLVMTypeOf(x), is_max, propagate_nan);
}

/* --- casts, comparisons, element-wise ops ------------------------------------------- */

/* x (compute type) rounded toward zero to the narrower float dt: rounded to
 * nearest, then, where that went past x (away from zero), the next
 * representable number toward zero, one less in the bits' magnitude. This
 * holds for any rounding to a neighbour of x, and turns an overflow to
 * infinity into the largest finite number, as cvt.rz does. NaN stays. */
static LLVMValueRef round_toward_zero(const tjj_ls *ls, LLVMValueRef x, tj_dtype from, tj_dtype dt)
{
    LLVMBuilderRef b = ls->b;
    LLVMValueRef r = dt == TJ_F16 && from == TJ_F64 ? LLVMBuildFPTrunc(b, x, ls->t_half, "")
                                                    : tjj_ls_fround(ls, x, dt);
    LLVMValueRef back = tjj_ls_fext(ls, r, dt);
    if (LLVMTypeOf(back) != LLVMTypeOf(x))
        back = LLVMBuildFPExt(b, back, LLVMTypeOf(x), "");
    LLVMValueRef past = LLVMBuildFCmp(b, LLVMRealOGT, tjj_ls_intrinsic1(ls, "llvm.fabs", back),
                                      tjj_ls_intrinsic1(ls, "llvm.fabs", x), "");
    LLVMTypeRef rt = LLVMTypeOf(r);
    LLVMTypeRef it = LLVMGetTypeKind(rt) == LLVMIntegerTypeKind
                         ? rt : LLVMIntTypeInContext(ls->ctx, tjs_dtype_bits(dt));
    LLVMValueRef bits = LLVMBuildBitCast(b, r, it, "");
    LLVMValueRef lower = LLVMBuildBitCast(b, LLVMBuildSub(b, bits, LLVMConstInt(it, 1, 0), ""), rt, "");
    return LLVMBuildSelect(b, past, lower, r, "");
}

/* The bits of x (SSA form of its dtype) as dtype to, of the same width. */
static LLVMValueRef emit_bitcast(const tjj_ls *ls, LLVMValueRef x, tj_dtype to)
{
    LLVMTypeRef tt = tjj_ls_dtype_type(ls, to);
    return LLVMTypeOf(x) == tt ? x : LLVMBuildBitCast(ls->b, x, tt, "");
}

static LLVMValueRef emit_cast(const tjj_ls *ls, LLVMValueRef v, const tji_type *from, const tji_type *to,
                              int toward_zero)
{
    LLVMBuilderRef b = ls->b;
    if (from->is_ptr && to->is_ptr)
        return v; /* opaque pointers: a pointer cast changes only the pointee */
    if (to->is_ptr)
        return LLVMBuildIntToPtr(b, v, ls->t_ptr, "");
    if (from->is_ptr)
        return LLVMBuildPtrToInt(b, v, ls->t_i64, "");
    tj_dtype f = from->dtype, t = to->dtype;
    if (f == t)
        return v;
    LLVMTypeRef tt = tjj_ls_dtype_type(ls, t);
    int f_float = tjs_dtype_is_float(f), t_float = tjs_dtype_is_float(t);
    if (!f_float && !t_float) {
        if (t == TJ_I1)
            return LLVMBuildICmp(b, LLVMIntNE, v, LLVMConstNull(LLVMTypeOf(v)), "");
        unsigned fb = LLVMGetIntTypeWidth(LLVMTypeOf(v)), tb = LLVMGetIntTypeWidth(tt);
        if (tb < fb)
            return LLVMBuildTrunc(b, v, tt, "");
        if (tb == fb)
            return v;
        return tjs_dtype_is_signed(f) ? LLVMBuildSExt(b, v, tt, "") : LLVMBuildZExt(b, v, tt, "");
    }
    if (!f_float) { /* int -> float */
        if (t == TJ_BF16)
            return int_to_bf16(ls, v, tjs_dtype_is_signed(f));
        LLVMTypeRef ct = tjj_ls_compute_type(ls, t);
        LLVMValueRef x = tjs_dtype_is_signed(f) ? LLVMBuildSIToFP(b, v, ct, "") : LLVMBuildUIToFP(b, v, ct, "");
        return tjj_ls_fround(ls, x, t);
    }
    LLVMValueRef x = tjj_ls_fext(ls, v, f);
    if (!t_float) { /* float -> int, saturating, NaN -> 0 */
        if (t == TJ_I1)
            return LLVMBuildFCmp(b, LLVMRealUNE, x, LLVMConstNull(LLVMTypeOf(x)), "");
        LLVMTypeRef types[2] = {tt, LLVMTypeOf(x)};
        return tjj_ls_intrinsic(ls, tjs_dtype_is_signed(t) ? "llvm.fptosi.sat" : "llvm.fptoui.sat", types, 2, &x, 1);
    }
    if (toward_zero)
        return round_toward_zero(ls, x, f, t);
    if (t == TJ_F16 && f == TJ_F64)
        return LLVMBuildFPTrunc(b, x, ls->t_half, ""); /* one rounding */
    return tjj_ls_fround(ls, x, t);
}

static LLVMIntPredicate int_pred(tji_pred p, int is_signed)
{
    switch (p) {
    case TJI_EQ: return LLVMIntEQ;
    case TJI_NE: return LLVMIntNE;
    case TJI_LT: return is_signed ? LLVMIntSLT : LLVMIntULT;
    case TJI_LE: return is_signed ? LLVMIntSLE : LLVMIntULE;
    case TJI_GT: return is_signed ? LLVMIntSGT : LLVMIntUGT;
    default: return is_signed ? LLVMIntSGE : LLVMIntUGE;
    }
}

static LLVMRealPredicate real_pred(tji_pred p)
{
    switch (p) {
    case TJI_EQ: return LLVMRealOEQ;
    case TJI_NE: return LLVMRealUNE; /* NaN != x is true */
    case TJI_LT: return LLVMRealOLT;
    case TJI_LE: return LLVMRealOLE;
    case TJI_GT: return LLVMRealOGT;
    default: return LLVMRealOGE;
    }
}

LLVMValueRef tjj_ls_elementwise(const tjj_ls *ls, const tji_func *fn, const tji_op *op,
                                LLVMValueRef *a, tjj_ls_target_math math, void *target)
{
    LLVMBuilderRef b = ls->b;
    const tji_type *rt = tji_typeof(fn, op->result);
    const tji_type *at = op->nargs > 0 ? tji_typeof(fn, op->args[0]) : rt;
    tj_dtype dt = at->dtype;
    int is_float = !at->is_ptr && tjs_dtype_is_float(dt);
    int is_signed = !at->is_ptr && tjs_dtype_is_signed(dt);

    switch (op->code) {
    case TJI_ADDPTR: {
        const tji_type *ot = tji_typeof(fn, op->args[1]);
        LLVMValueRef off = a[1];
        if (LLVMGetIntTypeWidth(LLVMTypeOf(off)) < 64)
            off = tjs_dtype_is_signed(ot->dtype) ? LLVMBuildSExt(b, off, ls->t_i64, "")
                                                 : LLVMBuildZExt(b, off, ls->t_i64, "");
        return LLVMBuildGEP2(b, tjj_ls_mem_type(ls, at->dtype), a[0], &off, 1, "");
    }
    case TJI_CMP:
        if (is_float)
            return LLVMBuildFCmp(b, real_pred(op->pred), tjj_ls_fext(ls, a[0], dt), tjj_ls_fext(ls, a[1], dt), "");
        return LLVMBuildICmp(b, int_pred(op->pred, is_signed), a[0], a[1], "");
    case TJI_WHERE:
        return LLVMBuildSelect(b, a[0], a[1], a[2], "");
    case TJI_CAST:
        return emit_cast(ls, a[0], at, rt, op->round_to_zero);
    case TJI_BITCAST:
        return emit_bitcast(ls, a[0], rt->dtype);
    default:
        break;
    }

    if (!is_float)
        return int_op(ls, op->code, is_signed, a);
    LLVMValueRef x = tjj_ls_fext(ls, a[0], dt);
    LLVMValueRef y = op->nargs > 1 ? tjj_ls_fext(ls, a[1], dt) : NULL;
    LLVMValueRef z = op->nargs > 2 ? tjj_ls_fext(ls, a[2], dt) : NULL;
    LLVMValueRef r = op->code == TJI_MIN || op->code == TJI_MAX
                         ? float_min_max(ls, op->code == TJI_MAX, op->propagate_nan, x, y)
                         : ieee_float_op(ls, op->code, x, y, z);
    if (!r)
        r = math(target, op->code, x, y);
    return r ? tjj_ls_fround(ls, r, dt) : NULL;
}
