/* SPDX-License-Identifier: MIT */
/*
 * attention_bwd_kernel.h — the backward pass of causal fused attention, the
 * algorithm of Triton's tutorial 06 (FlashAttention-2's backward) in tjit,
 * for samples/attention_bwd.c and the tests.
 *
 * Q, K, V, O and their gradients are contiguous [Z, H, N_CTX, HEAD_DIM]
 * tensors; LSE (from the forward, attention_kernel.h with an lse tensor)
 * and DELTA are [Z * H, N_CTX] f32. With s = sm_scale * log2(e), the
 * forward's probabilities are P = exp2(s Q K^T - LSE) (no softmax is taken
 * again: LSE holds each row's max and sum), and
 *
 *     DELTA = rowsum(dO * O)                  (attention_bwd_preprocess)
 *     dV    = P^T dO
 *     dS    = P * (dO V^T - DELTA)
 *     dK    = sm_scale dS^T Q
 *     dQ    = sm_scale dS K
 *
 * A program of the main kernel owns one block of keys and one block of
 * queries (BN1 = BM2 rows each, program id 0) of one (batch, head) pair
 * (program id 1). For its keys it keeps dK and dV in registers and walks
 * the queries that see them (causal: from its own block on) in blocks of
 * BM1, recomputing P^T a block at a time; for its queries it keeps dQ and
 * walks the keys they see (up to its own block) in blocks of BN2. The
 * diagonal blocks come first, in steps SLICE times smaller and masked
 * (key <= query); the rest needs no mask. Five dots a step in the dK/dV
 * loops, three in the dQ loops. The tutorial reads Q^T and dO (K^T in the
 * dQ loops) once and gives the dot that wants the other orientation
 * tj_trans of it (ONE_READ = 1); with ONE_READ = 0 each of those tiles is
 * read twice instead, once in each orientation ([D, BM] and [BM, D]), the
 * second read an L2 hit. On Hopper both forms take every dot to wgmma:
 * one ring slot may be read by several dots, one of them through the
 * transpose (src/passes/wgmma.c); before that could be, the second form
 * was the only one that did.
 *
 * As in the tutorial, N_CTX must be a multiple of BN1 (= BM2) and the
 * blocks must divide one another: the host checks.
 */
#ifndef TJIT_SAMPLES_ATTENTION_BWD_KERNEL_H
#define TJIT_SAMPLES_ATTENTION_BWD_KERNEL_H

#include "tjit.h"

/* The first element of (batch, head) pair off_hz in a [Z, H, N_CTX, D]
 * tensor, as a 64-bit offset (Z * H * N_CTX * D may pass 2^31). */
static inline tj_val attention_bwd_head(tj_val off_hz, tj_val n_ctx, int64_t D)
{
    return tj_mul(tj_cast(tj_mul(off_hz, n_ctx), TJ_I64), D);
}

/* Rows [row0, row0 + R) x [0, D) of a [N_CTX, D] head: offsets, and the
 * transposed [D, R] offsets of the same elements. */
static inline tj_val attention_bwd_rows(tj_val row0, int64_t R, int64_t D)
{
    tj_val rows = tj_add(row0, tj_arange(0, R));
    return tj_add(tj_mul(tj_expand_dims(rows, 1), D), tj_expand_dims(tj_arange(0, D), 0));
}

static inline tj_val attention_bwd_rows_t(tj_val row0, int64_t R, int64_t D)
{
    tj_val rows = tj_add(row0, tj_arange(0, R));
    return tj_add(tj_mul(tj_expand_dims(rows, 0), D), tj_expand_dims(tj_arange(0, D), 1));
}

/* delta[row] = sum over d of O[row, d] * dO[row, d], BM rows a program. */
#define ATTENTION_BWD_PREPROCESS_KERNEL(name, dt)                                                       \
    TJ_KERNEL(name,                                                                                     \
              TJ_PARAMS(TJ_PTR(o, dt), TJ_PTR(d_o, dt), TJ_PTR(delta, f32), TJ_SCALAR(n_ctx, i32)),     \
              TJ_CONSTS(BM, HEAD_DIM))                                                                  \
    {                                                                                                   \
        tj_val off_hz = tj_program_id(1), row0 = tj_mul(tj_program_id(0), BM);                          \
        tj_val at = tj_add(attention_bwd_head(off_hz, n_ctx, HEAD_DIM),                                 \
                           tj_cast(attention_bwd_rows(row0, BM, HEAD_DIM), TJ_I64));                    \
        tj_val prod = tj_mul(tj_cast(tj_load(tj_add(o, at)), TJ_F32), tj_cast(tj_load(tj_add(d_o, at)), TJ_F32)); \
        tj_store(tj_add(delta, tj_add(tj_mul(off_hz, n_ctx), tj_add(row0, tj_arange(0, BM)))), tj_sum(prod, 1)); \
    }

/* What both halves of the main kernel read: the pair's tensors (pointers
 * already at its first element) and the scales. */
typedef struct attention_bwd_head_ptrs {
    tj_val q, k, v, d_o;  /* [N_CTX, D] of the input dtype */
    tj_val lse, delta;    /* [N_CTX] f32 */
    tj_val qk_scale;      /* sm_scale * log2(e) */
    int64_t D;
    tj_dtype dtype;
    int one_read;         /* Q^T, dO, K^T read once, the other orientation through tj_trans */
} attention_bwd_head_ptrs;

/* dK and dV of keys [start_n, start_n + BN) over num_steps query blocks of
 * BM from start_m; masked: key <= query. k and v are the keys' blocks. */
static inline void attention_bwd_dkdv(tj_val *dk, tj_val *dv, const attention_bwd_head_ptrs *h, tj_val k, tj_val v,
                                      tj_val start_n, tj_val start_m, tj_val num_steps, int64_t BM, int64_t BN,
                                      int masked)
{
    tj_val offs_n = tj_add(start_n, tj_arange(0, BN));
    tj_val qt_at = tj_add(h->q, attention_bwd_rows_t(start_m, BM, h->D));
    tj_val q_at = tj_add(h->q, attention_bwd_rows(start_m, BM, h->D));
    tj_val do_at = tj_add(h->d_o, attention_bwd_rows(start_m, BM, h->D));
    tj_val dot_at = tj_add(h->d_o, attention_bwd_rows_t(start_m, BM, h->D));
    tj_val acc_k = *dk, acc_v = *dv;
    TJ_FOR(step, 0, num_steps, 1, &acc_k, &acc_v, &qt_at, &q_at, &do_at, &dot_at) {
        tj_val offs_m = tj_add(tj_add(start_m, tj_mul(step, BM)), tj_arange(0, BM));
        tj_val qt = tj_load(qt_at);                                       /* [D, BM] */
        tj_val lse = tj_load(tj_add(h->lse, offs_m));
        tj_val qkt = tj_dot(k, qt, tj_zeros(TJ_SHAPE(BN, BM), TJ_F32));  /* [BN, BM] */
        tj_val pt = tj_fast_exp2(tj_fma(qkt, h->qk_scale, tj_neg(tj_expand_dims(lse, 0))));
        if (masked)
            pt = tj_where(tj_ge(tj_expand_dims(offs_m, 0), tj_expand_dims(offs_n, 1)), pt, 0.0f);
        tj_val d_o = tj_load(do_at);                                      /* [BM, D] */
        acc_v = tj_dot(tj_cast(pt, h->dtype), d_o, acc_v);
        tj_val delta = tj_load(tj_add(h->delta, offs_m));
        tj_val dpt = tj_dot(v, h->one_read ? tj_trans(d_o) : tj_load(dot_at), tj_zeros(TJ_SHAPE(BN, BM), TJ_F32));
        tj_val dst = tj_mul(pt, tj_sub(dpt, tj_expand_dims(delta, 0)));
        acc_k = tj_dot(tj_cast(dst, h->dtype), h->one_read ? tj_trans(qt) : tj_load(q_at), acc_k);
        qt_at = tj_add(qt_at, BM * h->D);
        q_at = tj_add(q_at, BM * h->D);
        do_at = tj_add(do_at, BM * h->D);
        dot_at = tj_add(dot_at, BM * h->D);
    }
    *dk = acc_k;
    *dv = acc_v;
}

/* dQ of queries [start_m, start_m + BM) over num_steps key blocks of BN
 * from start_n; q, d_o, lse ([BM, 1]) and delta ([BM]) are the queries'. */
static inline tj_val attention_bwd_dq(tj_val dq, const attention_bwd_head_ptrs *h, tj_val q, tj_val d_o,
                                      tj_val lse, tj_val delta, tj_val start_m, tj_val start_n, tj_val num_steps,
                                      int64_t BM, int64_t BN, int masked)
{
    tj_val offs_m = tj_add(start_m, tj_arange(0, BM));
    tj_val kt_at = tj_add(h->k, attention_bwd_rows_t(start_n, BN, h->D));
    tj_val k_at = tj_add(h->k, attention_bwd_rows(start_n, BN, h->D));
    tj_val vt_at = tj_add(h->v, attention_bwd_rows_t(start_n, BN, h->D));
    TJ_FOR(step, 0, num_steps, 1, &dq, &kt_at, &k_at, &vt_at) {
        tj_val kt = tj_load(kt_at), vt = tj_load(vt_at);                  /* [D, BN] */
        tj_val qk = tj_dot(q, kt, tj_zeros(TJ_SHAPE(BM, BN), TJ_F32));
        tj_val p = tj_fast_exp2(tj_fma(qk, h->qk_scale, tj_neg(lse)));
        if (masked) {
            tj_val offs_n = tj_add(tj_add(start_n, tj_mul(step, BN)), tj_arange(0, BN));
            p = tj_where(tj_ge(tj_expand_dims(offs_m, 1), tj_expand_dims(offs_n, 0)), p, 0.0f);
        }
        tj_val dp = tj_dot(d_o, vt, tj_zeros(TJ_SHAPE(BM, BN), TJ_F32));
        tj_val ds = tj_mul(p, tj_sub(dp, tj_expand_dims(delta, 1)));
        dq = tj_dot(tj_cast(ds, h->dtype), h->one_read ? tj_trans(kt) : tj_load(k_at), dq);
        kt_at = tj_add(kt_at, BN * h->D);
        k_at = tj_add(k_at, BN * h->D);
        vt_at = tj_add(vt_at, BN * h->D);
    }
    return dq;
}

/* The main kernel: dK, dV of keys block program_id(0) and dQ of the query
 * block of the same index, for pair program_id(1). */
static inline void attention_bwd_body(tj_val q, tj_val k, tj_val v, tj_val d_o, tj_val dq, tj_val dk, tj_val dv,
                                      tj_val lse, tj_val delta, tj_val sm_scale, tj_val n_ctx, int64_t BM1,
                                      int64_t BN1, int64_t BM2, int64_t BN2, int64_t SLICE, int64_t D,
                                      tj_dtype dtype, int one_read)
{
    tj_val off_hz = tj_program_id(1), pid = tj_program_id(0);
    tj_val head = attention_bwd_head(off_hz, n_ctx, D), row_base = tj_mul(off_hz, n_ctx);
    attention_bwd_head_ptrs h = {
        .q = tj_add(q, head), .k = tj_add(k, head), .v = tj_add(v, head), .d_o = tj_add(d_o, head),
        .lse = tj_add(lse, row_base), .delta = tj_add(delta, row_base),
        .qk_scale = tj_mul(sm_scale, tj_f32(1.4426950408889634f)), .D = D, .dtype = dtype, .one_read = one_read};

    /* dK, dV: the diagonal block in steps of BM1 / SLICE, then the rest */
    tj_val start_n = tj_mul(pid, BN1);
    tj_val kv_rows = attention_bwd_rows(start_n, BN1, D);
    tj_val k_block = tj_load(tj_add(h.k, kv_rows)), v_block = tj_load(tj_add(h.v, kv_rows));
    tj_val acc_k = tj_zeros(TJ_SHAPE(BN1, D), TJ_F32), acc_v = tj_zeros(TJ_SHAPE(BN1, D), TJ_F32);
    int64_t mask_bm = BM1 / SLICE;
    attention_bwd_dkdv(&acc_k, &acc_v, &h, k_block, v_block, start_n, start_n, tj_i32(BN1 / mask_bm), mask_bm, BN1,
                       1);
    tj_val after = tj_add(start_n, BN1);
    attention_bwd_dkdv(&acc_k, &acc_v, &h, k_block, v_block, start_n, after,
                       tj_floordiv(tj_sub(n_ctx, after), BM1), BM1, BN1, 0);
    tj_store(tj_add(tj_add(dv, head), kv_rows), tj_cast(acc_v, dtype));
    tj_store(tj_add(tj_add(dk, head), kv_rows), tj_cast(tj_mul(acc_k, sm_scale), dtype));

    /* dQ: the diagonal block in steps of BN2 / SLICE, then the keys before it */
    tj_val start_m = tj_mul(pid, BM2);
    tj_val q_rows = attention_bwd_rows(start_m, BM2, D);
    tj_val q_block = tj_load(tj_add(h.q, q_rows)), do_block = tj_load(tj_add(h.d_o, q_rows));
    tj_val offs_m = tj_add(start_m, tj_arange(0, BM2));
    tj_val lse_rows = tj_expand_dims(tj_load(tj_add(h.lse, offs_m)), 1);
    tj_val delta_rows = tj_load(tj_add(h.delta, offs_m));
    tj_val acc_q = tj_zeros(TJ_SHAPE(BM2, D), TJ_F32);
    int64_t mask_bn = BN2 / SLICE;
    acc_q = attention_bwd_dq(acc_q, &h, q_block, do_block, lse_rows, delta_rows, start_m, start_m,
                             tj_i32(BM2 / mask_bn), BM2, mask_bn, 1);
    acc_q = attention_bwd_dq(acc_q, &h, q_block, do_block, lse_rows, delta_rows, start_m, tj_i32(0),
                             tj_floordiv(start_m, BN2), BM2, BN2, 0);
    tj_store(tj_add(tj_add(dq, head), q_rows), tj_cast(tj_mul(acc_q, sm_scale), dtype));
}

/* The main kernel for one input dtype (f16 or bf16; gradients in the same);
 * ONE_READ: the tutorial's reads (attention_bwd_head_ptrs). */
#define ATTENTION_BWD_KERNEL(name, dt, dtype)                                                          \
    TJ_KERNEL(name,                                                                                    \
              TJ_PARAMS(TJ_PTR(q, dt), TJ_PTR(k, dt), TJ_PTR(v, dt), TJ_PTR(d_o, dt), TJ_PTR(dq, dt),  \
                        TJ_PTR(dk, dt), TJ_PTR(dv, dt), TJ_PTR(lse, f32), TJ_PTR(delta, f32),          \
                        TJ_SCALAR(sm_scale, f32), TJ_SCALAR(n_ctx, i32)),                              \
              TJ_CONSTS(BM1, BN1, BM2, BN2, SLICE, HEAD_DIM, ONE_READ))                                \
    {                                                                                                  \
        attention_bwd_body(q, k, v, d_o, dq, dk, dv, lse, delta, sm_scale, n_ctx, BM1, BN1, BM2, BN2,  \
                           SLICE, HEAD_DIM, dtype, ONE_READ != 0);                                     \
    }

#endif
