/* SPDX-License-Identifier: MIT */
/*
 * attention_kernel.h — fused attention forward, the algorithm of Triton's
 * tutorial 06 (FlashAttention-2) in tjit: one copy for the sample
 * (samples/attention.c, whose top comment explains it), the GPU benchmark
 * and the tests.
 *
 * Q, K, V and O are [Z, H, N_CTX, HEAD_DIM] tensors with unit stride along
 * the head dimension; stride_z, stride_h and stride_m are their other
 * strides, in elements, the same for the four. A program owns BM rows of Q
 * of one (batch, head) pair: program id 0 picks the rows, program id 1 the
 * pair. It keeps its Q block in registers and walks the keys in blocks of
 * BN in runtime loops, with the online softmax:
 *
 *     m_new = max(m, rowmax(S) * scale)         S = Q K^T of the block
 *     P     = exp2(S * scale - m_new)           scale = sm_scale * log2(e)
 *     l     = l * exp2(m - m_new) + rowsum(P)
 *     acc   = acc * exp2(m - m_new) + P V       P rounded to the input dtype
 *
 * and O = acc / l at the end. The keys come in two stages, so that the
 * mask costs nothing where no key of a block can be masked:
 *   - causal: every block left of the diagonal block (no mask), then the
 *     diagonal block with the mask key <= query (its loads masked at
 *     N_CTX: keys past it are read as 0, as P V would take NaN * 0 from
 *     garbage);
 *   - not causal: every whole block (no mask), then at most one partial
 *     block at the end of the sequence, keys past N_CTX masked.
 * Masked scores are -inf, which never wins the max and adds exp2(-inf) = 0;
 * every query row sees at least one key (its own position, or the first
 * key of the tail), so m stays finite. BM must be a multiple of BN (the
 * diagonal block starts on a key block), N_CTX need not be a multiple of
 * either: rows past N_CTX are neither loaded nor stored.
 */
#ifndef TJIT_SAMPLES_ATTENTION_KERNEL_H
#define TJIT_SAMPLES_ATTENTION_KERNEL_H

#include <math.h>

#include "tjit.h"

/* The running state of the online softmax for BM query rows. */
typedef struct attention_state {
    tj_val acc;   /* [BM, D] f32: sum of P V so far, scaled to the running max */
    tj_val m;     /* [BM] f32: running max of the scaled scores (log2 domain) */
    tj_val l;     /* [BM] f32: running sum of P */
} attention_state;

typedef enum attention_mask {
    ATTENTION_NO_MASK,
    ATTENTION_CAUSAL_MASK, /* key <= query */
    ATTENTION_TAIL_MASK    /* key < N_CTX */
} attention_mask;

/* Folds the keys [lo, hi) of one (batch, head) pair into st, BN at a time. */
static inline void attention_keys(attention_state *st, tj_val q, tj_val k_head, tj_val v_head,
                                  tj_val stride_m, tj_val n_ctx, tj_val offs_m, tj_val lo,
                                  tj_val hi, tj_val qk_scale, int64_t BM, int64_t BN, int64_t D,
                                  tj_dtype dtype, attention_mask mask)
{
    tj_val offs_n = tj_arange(0, BN), offs_d = tj_arange(0, D);
    /* K^T: [D, BN], key n of the block at column n. */
    tj_val kt_ptrs = tj_add(k_head, tj_add(tj_expand_dims(offs_d, 1),
                                           tj_mul(tj_expand_dims(tj_add(lo, offs_n), 0), stride_m)));
    tj_val v_ptrs = tj_add(v_head, tj_add(tj_mul(tj_expand_dims(tj_add(lo, offs_n), 1), stride_m),
                                          tj_expand_dims(offs_d, 0)));
    tj_val acc = st->acc, m_i = st->m, l_i = st->l;
    TJ_FOR(start_n, lo, hi, BN, &acc, &m_i, &l_i, &kt_ptrs, &v_ptrs) {
        tj_val keys = tj_add(start_n, offs_n);
        tj_val kt, v;
        if (mask != ATTENTION_NO_MASK) {
            kt = tj_load(kt_ptrs, .mask = tj_lt(tj_expand_dims(keys, 0), n_ctx));
            v = tj_load(v_ptrs, .mask = tj_lt(tj_expand_dims(keys, 1), n_ctx));
        } else {
            kt = tj_load(kt_ptrs);
            v = tj_load(v_ptrs);
        }
        tj_val s = tj_dot(q, kt, tj_zeros(TJ_SHAPE(BM, BN), TJ_F32));
        tj_val m_new, shifted;
        if (mask == ATTENTION_NO_MASK) {
            m_new = tj_maximum(m_i, tj_mul(tj_max(s, 1), qk_scale));
            shifted = tj_fma(s, qk_scale, tj_neg(tj_expand_dims(m_new, 1)));
        } else {
            tj_val keep = mask == ATTENTION_CAUSAL_MASK
                              ? tj_ge(tj_expand_dims(offs_m, 1), tj_expand_dims(keys, 0))
                              : tj_lt(tj_expand_dims(keys, 0), n_ctx);
            tj_val scaled = tj_where(keep, tj_mul(s, qk_scale), tj_f32(-INFINITY));
            m_new = tj_maximum(m_i, tj_max(scaled, 1));
            shifted = tj_sub(scaled, tj_expand_dims(m_new, 1));
        }
        tj_val p = tj_exp2(shifted);
        tj_val alpha = tj_exp2(tj_sub(m_i, m_new));
        l_i = tj_add(tj_mul(l_i, alpha), tj_sum(p, 1));
        acc = tj_dot(tj_cast(p, dtype), v, tj_mul(acc, tj_expand_dims(alpha, 1)));
        m_i = m_new;
        kt_ptrs = tj_add(kt_ptrs, tj_mul(stride_m, BN));
        v_ptrs = tj_add(v_ptrs, tj_mul(stride_m, BN));
    }
    st->acc = acc;
    st->m = m_i;
    st->l = l_i;
}

static inline void attention_body(tj_val q, tj_val k, tj_val v, tj_val o, tj_val sm_scale,
                                  tj_val H, tj_val n_ctx, tj_val stride_z, tj_val stride_h,
                                  tj_val stride_m, int64_t BM, int64_t BN, int64_t D,
                                  int64_t causal, tj_dtype dtype)
{
    tj_val start_m = tj_program_id(0), off_hz = tj_program_id(1);
    tj_val head = tj_add(tj_mul(tj_floordiv(off_hz, H), stride_z),
                         tj_mul(tj_mod(off_hz, H), stride_h));
    tj_val offs_m = tj_add(tj_mul(start_m, BM), tj_arange(0, BM));
    tj_val offs_d = tj_arange(0, D);
    tj_val rows = tj_add(tj_mul(tj_expand_dims(offs_m, 1), stride_m), tj_expand_dims(offs_d, 0));
    tj_val row_ok = tj_lt(tj_expand_dims(offs_m, 1), n_ctx);
    tj_val q_block = tj_load(tj_add(tj_add(q, head), rows), .mask = row_ok);
    tj_val qk_scale = tj_mul(sm_scale, tj_f32(1.4426950408889634f)); /* log2(e) */

    attention_state st = {
        .acc = tj_zeros(TJ_SHAPE(BM, D), TJ_F32),
        .m = tj_full(TJ_SHAPE(BM), tj_f32(-INFINITY), TJ_F32),
        .l = tj_zeros(TJ_SHAPE(BM), TJ_F32),
    };
    tj_val k_head = tj_add(k, head), v_head = tj_add(v, head);
    tj_val diag = tj_mul(start_m, BM);
    if (causal) {
        attention_keys(&st, q_block, k_head, v_head, stride_m, n_ctx, offs_m, tj_i32(0), diag,
                       qk_scale, BM, BN, D, dtype, ATTENTION_NO_MASK);
        attention_keys(&st, q_block, k_head, v_head, stride_m, n_ctx, offs_m, diag,
                       tj_minimum(tj_add(diag, BM), n_ctx), qk_scale, BM, BN, D, dtype,
                       ATTENTION_CAUSAL_MASK);
    } else {
        tj_val whole = tj_mul(tj_floordiv(n_ctx, BN), BN);
        attention_keys(&st, q_block, k_head, v_head, stride_m, n_ctx, offs_m, tj_i32(0), whole,
                       qk_scale, BM, BN, D, dtype, ATTENTION_NO_MASK);
        attention_keys(&st, q_block, k_head, v_head, stride_m, n_ctx, offs_m, whole, n_ctx,
                       qk_scale, BM, BN, D, dtype, ATTENTION_TAIL_MASK);
    }
    tj_val out = tj_div(st.acc, tj_expand_dims(st.l, 1));
    tj_store(tj_add(tj_add(o, head), rows), tj_cast(out, dtype), .mask = row_ok);
}

/* The kernel for one input dtype (f16 or bf16; O in the same dtype). */
#define ATTENTION_KERNEL(name, dt, dtype)                                                          \
    TJ_KERNEL(name,                                                                                \
              TJ_PARAMS(TJ_PTR(q, dt), TJ_PTR(k, dt), TJ_PTR(v, dt), TJ_PTR(o, dt),                \
                        TJ_SCALAR(sm_scale, f32), TJ_SCALAR(H, i32), TJ_SCALAR(n_ctx, i32),        \
                        TJ_SCALAR(stride_z, i32), TJ_SCALAR(stride_h, i32),                        \
                        TJ_SCALAR(stride_m, i32)),                                                 \
              TJ_CONSTS(BM, BN, HEAD_DIM, CAUSAL))                                                 \
    {                                                                                              \
        attention_body(q, k, v, o, sm_scale, H, n_ctx, stride_z, stride_h, stride_m, BM, BN,      \
                       HEAD_DIM, CAUSAL, dtype);                                                   \
    }

#endif
