/* SPDX-License-Identifier: MIT */
/*
 * cpu_dot.c — DOT on the CPU: a register-blocked, vectorized micro-kernel.
 *
 * The materialize pass gives a dot's operands and accumulator arrays of
 * their own (row-major, in the program's scratch), so this file sees three
 * plain matrices. The result is computed in blocks of MR rows by NR
 * columns held in vector registers: for each k, NR / VW vectors of b's row
 * k are loaded once and every one of the MR elements a[m, k] is broadcast
 * against them, one fused multiply-add per vector. That is the shape of a
 * BLAS micro-kernel (MR x NR accumulators, a k loop that loads one row of
 * each operand), written out as LLVM vectors rather than left to the loop
 * vectorizer, which would not block the registers.
 *
 * The order of the sums is the op's definition (tjit.h): each result
 * element starts at the accumulator and adds a[m, k] * b[k, n] for k = 0,
 * 1, ... with one rounding per step — a different blocking changes which
 * elements are computed together, never the order of one element's sum.
 * f16 and bf16 operands are widened to f32 (exact), i8 to i32; TF32
 * truncates each operand to tf32 (its low 13 bits cleared: what the tensor
 * cores read of an f32, as in Triton), TF32X3 splits it into a high part
 * rounded to tf32 (nearest, ties away: cvt.rna.tf32.f32) and the rest,
 * truncated, and adds a_lo * b_hi, a_hi * b_lo, a_hi * b_hi in that order. An f16 result is
 * rounded once, at the end.
 *
 * VW is the host's vector width in f32 lanes (16 with AVX-512, else 8), NR
 * two vectors, MR as many rows as the register file holds beside them (8
 * with AVX-512's 32 registers, 4 with 16).
 */
#include <string.h>

#include <llvm-c/TargetMachine.h>

#include "cpu_codegen.h"

static int host_has_avx512(void)
{
    static int known = -1;
    if (known < 0) {
        char *features = LLVMGetHostCPUFeatures();
        known = features && strstr(features, "+avx512f") != NULL;
        LLVMDisposeMessage(features);
    }
    return known;
}

typedef struct dot_gen {
    codegen *g;
    tj_dtype in;             /* the operands' dtype */
    tj_input_precision prec;
    int is_int;              /* i8 -> i32 */
    int vw;                  /* lanes of one vector */
    LLVMTypeRef lane_t, vec_t; /* f32 or i32, and <vw x lane_t> */
} dot_gen;

static LLVMTypeRef of_width(LLVMTypeRef scalar, int n) { return n > 1 ? LLVMVectorType(scalar, (unsigned)n) : scalar; }

static LLVMValueRef splat(const dot_gen *d, LLVMValueRef scalar_v, int n)
{
    LLVMValueRef c = LLVMConstInt(d->g->ty.t_i32, 0, 0);
    LLVMBuilderRef b = d->g->b;
    LLVMValueRef v = LLVMBuildInsertElement(b, LLVMGetPoison(of_width(LLVMTypeOf(scalar_v), n)), scalar_v, c, "");
    LLVMValueRef zeros = LLVMConstNull(of_width(d->g->ty.t_i32, n));
    return LLVMBuildShuffleVector(b, v, LLVMGetPoison(LLVMTypeOf(v)), zeros, "");
}

/* x (f32, n lanes) truncated to tf32: the low 13 bits cleared. */
static LLVMValueRef tf32_truncated(const dot_gen *d, LLVMValueRef x, int n)
{
    codegen *g = d->g;
    LLVMBuilderRef b = g->b;
    LLVMTypeRef it = of_width(g->ty.t_i32, n);
    LLVMValueRef keep = n > 1 ? splat(d, c_i32(g, (int32_t)0xFFFFE000u), n) : c_i32(g, (int32_t)0xFFFFE000u);
    LLVMValueRef u = LLVMBuildAnd(b, LLVMBuildBitCast(b, x, it, ""), keep, "");
    return LLVMBuildBitCast(b, u, LLVMTypeOf(x), "");
}

/* x (f32, n lanes) rounded to tf32: nearest, ties away from zero, on the
 * low 13 bits; infinities and NaNs are kept. */
static LLVMValueRef tf32_rounded(const dot_gen *d, LLVMValueRef x, int n)
{
    codegen *g = d->g;
    LLVMBuilderRef b = g->b;
    LLVMTypeRef it = of_width(g->ty.t_i32, n);
    LLVMValueRef u = LLVMBuildBitCast(b, x, it, "");
    LLVMValueRef exp_mask = n > 1 ? splat(d, c_i32(g, 0x7F800000), n) : c_i32(g, 0x7F800000);
    LLVMValueRef half = n > 1 ? splat(d, c_i32(g, 0x1000), n) : c_i32(g, 0x1000);
    LLVMValueRef keep = n > 1 ? splat(d, c_i32(g, (int32_t)0xFFFFE000u), n) : c_i32(g, (int32_t)0xFFFFE000u);
    LLVMValueRef rounded = LLVMBuildAnd(b, LLVMBuildAdd(b, u, half, ""), keep, "");
    LLVMValueRef special = LLVMBuildICmp(b, LLVMIntEQ, LLVMBuildAnd(b, u, exp_mask, ""), exp_mask, "");
    return LLVMBuildBitCast(b, LLVMBuildSelect(b, special, u, rounded, ""), LLVMTypeOf(x), "");
}

/* n elements of the operand array at ptr (n = 1: a scalar), widened to
 * the lane type. */
static LLVMValueRef load_operand(const dot_gen *d, LLVMValueRef ptr, int n)
{
    codegen *g = d->g;
    LLVMBuilderRef b = g->b;
    LLVMTypeRef mem_t = tjj_ls_mem_type(&g->ls, d->in);
    LLVMValueRef v = LLVMBuildLoad2(b, of_width(mem_t, n), ptr, "");
    LLVMSetAlignment(v, (unsigned)tj_dtype_size(d->in));
    switch (d->in) {
    case TJ_F16:
        return LLVMBuildFPExt(b, v, of_width(g->ty.t_float, n), "");
    case TJ_BF16: {
        LLVMValueRef w = LLVMBuildZExt(b, v, of_width(g->ty.t_i32, n), "");
        LLVMValueRef sh = n > 1 ? splat(d, c_i32(g, 16), n) : c_i32(g, 16);
        return LLVMBuildBitCast(b, LLVMBuildShl(b, w, sh, ""), of_width(g->ty.t_float, n), "");
    }
    case TJ_I8:
        return LLVMBuildSExt(b, v, of_width(g->ty.t_i32, n), "");
    default:
        return v;
    }
}

/* The operand's parts for the precision: [0] the value (truncated for
 * TF32, the rounded high part for TF32X3), [1] TF32X3's low part. */
static void split(const dot_gen *d, LLVMValueRef x, int n, LLVMValueRef parts[2])
{
    parts[1] = NULL;
    if (d->prec == TJ_PRECISION_IEEE || d->is_int) {
        parts[0] = x;
        return;
    }
    if (d->prec == TJ_PRECISION_TF32) {
        parts[0] = tf32_truncated(d, x, n);
        return;
    }
    parts[0] = tf32_rounded(d, x, n);
    parts[1] = tf32_truncated(d, LLVMBuildFSub(d->g->b, x, parts[0], ""), n);
}

static LLVMValueRef multiply_add(const dot_gen *d, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c)
{
    codegen *g = d->g;
    if (d->is_int)
        return LLVMBuildAdd(g->b, LLVMBuildMul(g->b, a, b, ""), c, "");
    LLVMValueRef args[3] = {a, b, c};
    LLVMTypeRef t = LLVMTypeOf(c);
    return tjj_ls_intrinsic(&g->ls, "llvm.fma", &t, 1, args, 3);
}

/* Address of element (row, col) of a row-major matrix of cols columns of
 * dtype dt at scratch offset, batch bi of rows x cols elements each. */
static LLVMValueRef matrix_at(codegen *g, int64_t offset, tj_dtype dt, LLVMValueRef bi, int64_t rows,
                              int64_t cols, LLVMValueRef row, LLVMValueRef col)
{
    LLVMValueRef lin = add_nuw(g, mul_nuw(g, add_nuw(g, mul_nuw(g, bi, c_i64(g, rows)), row), c_i64(g, cols)), col);
    LLVMTypeRef t = dt == TJ_I1 ? g->ty.t_i8 : tjj_ls_mem_type(&g->ls, dt);
    return LLVMBuildInBoundsGEP2(g->b, t, tjj_cpu_scratch_at(g, offset), &lin, 1, "");
}

void tjj_cpu_emit_dot(codegen *g, const tji_op *op)
{
    const tji_func *fn = g->fn;
    const tji_type *ta = tji_typeof(fn, op->args[0]), *rt = tji_typeof(fn, op->result);
    int32_t acc = op->args[2];
    int r = ta->rank;
    int64_t batch = r == 3 ? ta->shape[0] : 1, M = ta->shape[r - 2], K = ta->shape[r - 1], N = rt->shape[r - 1];
    int64_t oa = g->slot[op->args[0]], ob = g->slot[op->args[1]], oc = g->slot[acc], out = g->slot[op->result];
    if (oa < 0 || ob < 0 || oc < 0 || out < 0) {
        tjj_cpu_fail(g, "internal: a dot operand has no array of its own");
        return;
    }
    int wide = host_has_avx512();
    dot_gen d = {.g = g, .in = ta->dtype, .prec = op->precision, .is_int = ta->dtype == TJ_I8,
                 .vw = wide ? 16 : 8};
    d.lane_t = d.is_int ? g->ty.t_i32 : g->ty.t_float;
    d.vec_t = LLVMVectorType(d.lane_t, (unsigned)d.vw);
    int nj = N >= 2 * d.vw ? 2 : 1, mr = wide ? 8 : 4; /* N >= 16: a multiple of vw */
    int nr = nj * d.vw;
    enum { MAX_ACC = 16 };
    tj_dtype out_dt = rt->dtype;

    /* blocks: [batch, M / mr, N / nr] */
    nest blocks;
    LLVMValueRef bidx[3];
    int32_t bshape[3] = {(int32_t)batch, (int32_t)(M / mr), (int32_t)(N / nr)};
    tjj_cpu_nest_begin(g, &blocks, 3, bshape, bidx);
    LLVMValueRef bi = bidx[0] ? bidx[0] : c_i64(g, 0);
    LLVMValueRef m0 = mul_nuw(g, bidx[1] ? bidx[1] : c_i64(g, 0), c_i64(g, mr));
    LLVMValueRef n0 = mul_nuw(g, bidx[2] ? bidx[2] : c_i64(g, 0), c_i64(g, nr));
    LLVMValueRef rows[8], cols[2];
    for (int i = 0; i < mr; i++)
        rows[i] = add_nuw(g, m0, c_i64(g, i));
    for (int j = 0; j < nj; j++)
        cols[j] = add_nuw(g, n0, c_i64(g, (int64_t)j * d.vw));

    /* the accumulator block, widened */
    LLVMValueRef c[MAX_ACC];
    dot_gen acc_view = d;
    acc_view.in = out_dt;
    for (int i = 0; i < mr; i++)
        for (int j = 0; j < nj; j++) {
            LLVMValueRef p = matrix_at(g, oc, out_dt, bi, M, N, rows[i], cols[j]);
            c[i * nj + j] = load_operand(&acc_view, p, d.vw);
        }

    /* k = 0 .. K-1 */
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(g->b), header = new_block(g, "dot.k");
    LLVMBuildBr(g->b, header);
    LLVMPositionBuilderAtEnd(g->b, header);
    LLVMValueRef k = LLVMBuildPhi(g->b, g->ty.t_i64, "k"), zero = c_i64(g, 0), phis[MAX_ACC];
    LLVMAddIncoming(k, &zero, &pre, 1);
    for (int x = 0; x < mr * nj; x++) {
        phis[x] = LLVMBuildPhi(g->b, d.vec_t, "c");
        LLVMAddIncoming(phis[x], &c[x], &pre, 1);
    }
    LLVMValueRef bparts[2][2];
    for (int j = 0; j < nj; j++)
        split(&d, load_operand(&d, matrix_at(g, ob, d.in, bi, K, N, k, cols[j]), d.vw), d.vw, bparts[j]);
    LLVMValueRef next[MAX_ACC];
    for (int i = 0; i < mr; i++) {
        LLVMValueRef ap[2];
        split(&d, load_operand(&d, matrix_at(g, oa, d.in, bi, M, K, rows[i], k), 1), 1, ap);
        LLVMValueRef a_hi = splat(&d, ap[0], d.vw), a_lo = ap[1] ? splat(&d, ap[1], d.vw) : NULL;
        for (int j = 0; j < nj; j++) {
            LLVMValueRef s = phis[i * nj + j];
            if (a_lo) {
                s = multiply_add(&d, a_lo, bparts[j][0], s);
                s = multiply_add(&d, a_hi, bparts[j][1], s);
            }
            next[i * nj + j] = multiply_add(&d, a_hi, bparts[j][0], s);
        }
    }
    LLVMValueRef next_k = add_nuw(g, k, c_i64(g, 1));
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(g->b), exit = new_block(g, "dot.k.end");
    LLVMAddIncoming(k, &next_k, &latch, 1);
    for (int x = 0; x < mr * nj; x++)
        LLVMAddIncoming(phis[x], &next[x], &latch, 1);
    LLVMValueRef br = LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntULT, next_k, c_i64(g, K), ""), header, exit);
    /* already vectorized by hand; the loop vectorizer would only widen it again */
    tjj_cpu_set_loop_hints(g, br, tjj_cpu_loop_hints(g, 1));
    LLVMPositionBuilderAtEnd(g->b, exit);

    for (int i = 0; i < mr; i++)
        for (int j = 0; j < nj; j++) {
            LLVMValueRef v = next[i * nj + j];
            if (out_dt == TJ_F16)
                v = LLVMBuildFPTrunc(g->b, v, LLVMVectorType(g->ty.t_half, (unsigned)d.vw), "");
            LLVMValueRef st = LLVMBuildStore(g->b, v, matrix_at(g, out, out_dt, bi, M, N, rows[i], cols[j]));
            LLVMSetAlignment(st, (unsigned)tj_dtype_size(out_dt));
        }
    tjj_cpu_nest_end(g, &blocks);
}
