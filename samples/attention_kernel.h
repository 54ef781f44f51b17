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
 * of one (batch, head) pair: program id 0 picks the rows (from the last
 * block down), program id 1 the pair. It keeps its Q block in registers
 * and walks the keys in blocks of BN in runtime loops, with the online
 * softmax:
 *
 *     m_new = max(m, rowmax(S) * scale)         S = Q K^T of the block
 *     P     = exp2(S * scale - m_new)           scale = sm_scale * log2(e)
 *     l     = l * exp2(m - m_new) + rowsum(P)
 *     acc   = acc * exp2(m - m_new) + P V       P rounded to the input dtype
 *
 * and O = acc / l at the end. exp2 is tj_fast_exp2: one op of the GPU's
 * exponential units, which the softmax waits on (0 below 2^-126, which P
 * can spare). The keys come in two stages, so that the mask costs nothing
 * where no key of a block can be masked:
 *   - causal: every block left of the diagonal block (no mask), then the
 *     diagonal block with the mask key <= query (its loads masked at
 *     N_CTX: keys past it are read as 0, as P V would take NaN * 0 from
 *     garbage);
 *   - not causal: every whole block (no mask), then at most one partial
 *     block at the end of the sequence, keys past N_CTX masked.
 * With K and V by block pointers over every head's keys (the TMA form,
 * ATTENTION_BLOCK_PTR_KERNEL), a block past N_CTX reads the next head's
 * keys (or zeros past the tensor's end): finite where the inputs are, so
 * their P = 0 still adds nothing.
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

/* Where a loop's K and V blocks come from: pointer tiles over one head
 * (any strides; loads masked at N_CTX), or block pointers over the
 * [rows, HEAD_DIM] tensor of every head's keys one after the other (TMA
 * copies on Hopper; keys past N_CTX are the next head's, or zeros past the
 * tensor's end, and masked in the scores). */
typedef struct attention_kv {
    int block_ptrs;
    tj_val kt, v;     /* K^T [D, BN] and V [BN, D] of the first block */
    tj_val stride_m;  /* pointer tiles: the key stride, in elements */
} attention_kv;

static inline attention_kv attention_kv_ptrs(tj_val k_head, tj_val v_head, tj_val stride_m, tj_val lo,
                                             int64_t BN, int64_t D)
{
    tj_val keys = tj_add(lo, tj_arange(0, BN)), offs_d = tj_arange(0, D);
    return (attention_kv){
        .kt = tj_add(k_head, tj_add(tj_expand_dims(offs_d, 1), tj_mul(tj_expand_dims(keys, 0), stride_m))),
        .v = tj_add(v_head, tj_add(tj_mul(tj_expand_dims(keys, 1), stride_m), tj_expand_dims(offs_d, 0))),
        .stride_m = stride_m};
}

/* Block pointers at key lo of the head whose first key is row head_row. */
static inline attention_kv attention_kv_blocks(tj_val k, tj_val v, tj_val rows, tj_val head_row, tj_val lo,
                                               int64_t BN, int64_t D)
{
    tj_val row = tj_add(head_row, lo);
    return (attention_kv){
        .block_ptrs = 1,
        .kt = tj_make_block_ptr(k, TJ_VALS(D, rows), TJ_VALS(1, D), TJ_VALS(0, row), TJ_SHAPE(D, BN),
                                TJ_SHAPE(0, 1)),
        .v = tj_make_block_ptr(v, TJ_VALS(rows, D), TJ_VALS(D, 1), TJ_VALS(row, 0), TJ_SHAPE(BN, D),
                               TJ_SHAPE(1, 0))};
}

/* Folds the keys [lo, hi) of one (batch, head) pair into st, BN at a time,
 * kv at key lo. */
static inline void attention_keys(attention_state *st, tj_val q, attention_kv kv, tj_val n_ctx, tj_val offs_m,
                                  tj_val lo, tj_val hi, tj_val qk_scale, int64_t BM, int64_t BN, tj_dtype dtype,
                                  attention_mask mask)
{
    tj_val offs_n = tj_arange(0, BN);
    tj_val acc = st->acc, m_i = st->m, l_i = st->l, kt_at = kv.kt, v_at = kv.v;
    TJ_FOR(start_n, lo, hi, BN, &acc, &m_i, &l_i, &kt_at, &v_at) {
        tj_val keys = tj_add(start_n, offs_n);
        tj_val kt, v;
        if (kv.block_ptrs) {
            kt = tj_load(kt_at, .boundary_check = TJ_DIMS(0, 1));
            v = tj_load(v_at, .boundary_check = TJ_DIMS(0, 1));
        } else if (mask != ATTENTION_NO_MASK) {
            kt = tj_load(kt_at, .mask = tj_lt(tj_expand_dims(keys, 0), n_ctx));
            v = tj_load(v_at, .mask = tj_lt(tj_expand_dims(keys, 1), n_ctx));
        } else {
            kt = tj_load(kt_at);
            v = tj_load(v_at);
        }
        tj_val s = tj_dot(q, kt, tj_zeros(TJ_SHAPE(BM, BN), TJ_F32));
        tj_val m_new, shifted;
        if (mask == ATTENTION_NO_MASK) {
            m_new = tj_maximum(m_i, tj_mul(tj_max(s, 1), qk_scale));
            shifted = tj_fma(s, qk_scale, tj_neg(tj_expand_dims(m_new, 1)));
        } else {
            tj_val scaled;
            if (mask == ATTENTION_CAUSAL_MASK) {
                /* key <= row as arithmetic, not a compare: d = row - key,
                 * bias -1 (masked) or 0 from its sign, the masked scores
                 * pushed to -3e38 (exp2 gives 0). A tile of compares would
                 * be 32 predicates per thread at 128x64 that ptxas keeps
                 * in registers (159 of them instead of 128: one block per
                 * SM where two fit). */
                tj_val d = tj_sub(tj_expand_dims(tj_sub(offs_m, start_n), 1), tj_expand_dims(offs_n, 0));
                tj_val bias = tj_cast(tj_shr(d, 31), TJ_F32);
                scaled = tj_fma(bias, tj_f32(3e38f), tj_mul(s, qk_scale));
            } else {
                tj_val keep = tj_lt(tj_expand_dims(keys, 0), n_ctx);
                scaled = tj_where(keep, tj_mul(s, qk_scale), tj_f32(-INFINITY));
            }
            m_new = tj_maximum(m_i, tj_max(scaled, 1));
            shifted = tj_sub(scaled, tj_expand_dims(m_new, 1));
        }
        tj_val p = tj_fast_exp2(shifted);
        tj_val alpha = tj_fast_exp2(tj_sub(m_i, m_new));
        l_i = tj_add(tj_mul(l_i, alpha), tj_sum(p, 1));
        acc = tj_dot(tj_cast(p, dtype), v, tj_mul(acc, tj_expand_dims(alpha, 1)));
        m_i = m_new;
        if (kv.block_ptrs) {
            kt_at = tj_advance(kt_at, TJ_VALS(0, BN));
            v_at = tj_advance(v_at, TJ_VALS(BN, 0));
        } else {
            kt_at = tj_add(kt_at, tj_mul(kv.stride_m, BN));
            v_at = tj_add(v_at, tj_mul(kv.stride_m, BN));
        }
    }
    st->acc = acc;
    st->m = m_i;
    st->l = l_i;
}

/* The kernel's body. lse is TJ_NONE, or a [Z * H, N_CTX] f32 tensor that
 * receives each row's log2-sum-exp of the scaled scores, m + log2(l) (what
 * the backward pass, attention_bwd_kernel.h, recomputes P from). kv_rows is
 * TJ_NONE for K and V as pointer tiles
 * over [Z, H, N_CTX, HEAD_DIM] of any strides; else Z * H * N_CTX, and the
 * four tensors are contiguous (stride_m = HEAD_DIM, stride_h = N_CTX *
 * HEAD_DIM, stride_z = H * stride_h) and K and V are read by block
 * pointers over their [kv_rows, HEAD_DIM] view. */
static inline void attention_body(tj_val q, tj_val k, tj_val v, tj_val o, tj_val lse, tj_val sm_scale,
                                  tj_val H, tj_val n_ctx, tj_val stride_z, tj_val stride_h,
                                  tj_val stride_m, tj_val kv_rows, int64_t BM, int64_t BN, int64_t D,
                                  int64_t causal, tj_dtype dtype)
{
    /* the last row blocks first: causal ones see the most keys, and the
     * launch's last wave is then the lightest */
    tj_val start_m = tj_sub(tj_sub(tj_num_programs(0), 1), tj_program_id(0)), off_hz = tj_program_id(1);
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
    tj_val diag = tj_mul(start_m, BM);
    tj_val lo[2], hi[2];
    attention_mask masks[2];
    if (causal) {
        lo[0] = tj_i32(0), hi[0] = diag, masks[0] = ATTENTION_NO_MASK;
        lo[1] = diag, hi[1] = tj_minimum(tj_add(diag, BM), n_ctx), masks[1] = ATTENTION_CAUSAL_MASK;
    } else {
        tj_val whole = tj_mul(tj_floordiv(n_ctx, BN), BN);
        lo[0] = tj_i32(0), hi[0] = whole, masks[0] = ATTENTION_NO_MASK;
        lo[1] = whole, hi[1] = n_ctx, masks[1] = ATTENTION_TAIL_MASK;
    }
    for (int part = 0; part < 2; part++) {
        attention_kv kv = kv_rows.id ? attention_kv_blocks(k, v, kv_rows, tj_mul(off_hz, n_ctx), lo[part], BN, D)
                                     : attention_kv_ptrs(tj_add(k, head), tj_add(v, head), stride_m, lo[part],
                                                         BN, D);
        attention_keys(&st, q_block, kv, n_ctx, offs_m, lo[part], hi[part], qk_scale, BM, BN, dtype, masks[part]);
    }
    tj_val out = tj_fast_div(st.acc, tj_expand_dims(st.l, 1)); /* l >= 1: div.full is within 2 ulp */
    tj_store(tj_add(tj_add(o, head), rows), tj_cast(out, dtype), .mask = row_ok);
    if (lse.id)
        tj_store(tj_add(lse, tj_add(tj_mul(off_hz, n_ctx), offs_m)), tj_add(st.m, tj_log2(st.l)),
                 .mask = tj_lt(offs_m, n_ctx));
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
        attention_body(q, k, v, o, TJ_NONE, sm_scale, H, n_ctx, stride_z, stride_h, stride_m,     \
                       TJ_NONE, BM, BN, HEAD_DIM, CAUSAL, dtype);                                  \
    }

/* The same for contiguous tensors, K and V by block pointers (TMA on
 * Hopper, as Triton's tutorial reads them through tensor descriptors):
 * kv_rows = Z * H * N_CTX. */
#define ATTENTION_BLOCK_PTR_KERNEL(name, dt, dtype)                                                \
    TJ_KERNEL(name,                                                                                \
              TJ_PARAMS(TJ_PTR(q, dt), TJ_PTR(k, dt), TJ_PTR(v, dt), TJ_PTR(o, dt),                \
                        TJ_SCALAR(sm_scale, f32), TJ_SCALAR(H, i32), TJ_SCALAR(n_ctx, i32),        \
                        TJ_SCALAR(kv_rows, i32)),                                                  \
              TJ_CONSTS(BM, BN, HEAD_DIM, CAUSAL))                                                 \
    {                                                                                              \
        tj_val stride_h = tj_mul(n_ctx, HEAD_DIM);                                                 \
        attention_body(q, k, v, o, TJ_NONE, sm_scale, H, n_ctx, tj_mul(H, stride_h), stride_h,    \
                       tj_i32(HEAD_DIM), kv_rows, BM, BN, HEAD_DIM, CAUSAL, dtype);                \
    }

#endif
