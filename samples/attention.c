/* SPDX-License-Identifier: MIT */
/*
 * attention — fused scaled-dot-product attention forward,
 * O = softmax(Q K^T * sm_scale [+ causal mask]) V, as Triton's tutorial 06
 * writes it (FlashAttention-2), in tjit.
 *
 * The point of fusing: the N_CTX x N_CTX score matrix is never written to
 * memory. Each program holds BM rows of Q and walks K and V in blocks of
 * BN keys; for each block it multiplies Q K^T on the tensor cores, keeps a
 * running row maximum and row sum of the exponentials (the online softmax:
 * when the maximum grows, what was summed so far is rescaled by
 * exp2(m_old - m_new)), and adds P V into an f32 accumulator — a second dot
 * whose left operand, P, was computed in registers by the first. The
 * exponentials are taken in base 2, with log2(e) folded into the scale, as
 * exp2 is the instruction the GPU has. The kernel is in
 * attention_kernel.h, shared with the benchmark and a test.
 *
 * K and V are read either by pointer tiles (any strides) or by block
 * pointers over all heads' keys as one [Z * H * N_CTX, HEAD_DIM] tensor
 * (contiguous tensors; on Hopper TMA copies, with a producer warpgroup).
 * For both, f16 and bf16, head dims 64 and 128, causal and not, it checks
 * O against a C reference in double (sampled rows for long sequences;
 * tolerance: P is rounded to the input dtype before the second dot, as in
 * the tutorial, and O once more at the store) and prints TFLOP/s, counting
 * 4 N_CTX^2 D flops per (batch, head), half of that when causal. Q, K and V
 * are poisoned nowhere, O is NaN before the launch.
 *
 *     usage: attention [Z H N_CTX]     (default 1 x 4 x 1000)
 */
#include "common.h"
#include "attention_kernel.h"

ATTENTION_KERNEL(attention_f16, f16, TJ_F16)
ATTENTION_KERNEL(attention_bf16, bf16, TJ_BF16)
ATTENTION_BLOCK_PTR_KERNEL(attention_block_ptr_f16, f16, TJ_F16)
ATTENTION_BLOCK_PTR_KERNEL(attention_block_ptr_bf16, bf16, TJ_BF16)

typedef struct attention_problem {
    tj_device *dev;
    tj_dtype dtype; /* f16 or bf16: Q, K, V and O */
    int32_t z, h, n_ctx, d;
    int causal;
    int block_ptrs; /* K and V by block pointers (attention_kernel.h) */
    int64_t bm, bn;
    int warps;
    tj_buffer q, k, v, o;
} attention_problem;

static void launch(void *problem)
{
    const attention_problem *p = problem;
    tj_launch_cfg cfg = {.grid = {cdiv(p->n_ctx, p->bm), (int64_t)p->z * p->h},
                         .num_warps = p->warps};
    const double sm_scale = 1.0 / sqrt((double)p->d);
    const int32_t stride_m = p->d, stride_h = p->n_ctx * p->d, stride_z = p->h * stride_h;
    const int32_t kv_rows = p->z * stride_z / p->d;
    if (p->block_ptrs && p->dtype == TJ_F16)
        CHECK(attention_block_ptr_f16_launch(p->dev, &cfg, p->q, p->k, p->v, p->o, sm_scale, p->h, p->n_ctx,
                                             kv_rows, p->bm, p->bn, p->d, p->causal));
    else if (p->block_ptrs)
        CHECK(attention_block_ptr_bf16_launch(p->dev, &cfg, p->q, p->k, p->v, p->o, sm_scale, p->h, p->n_ctx,
                                              kv_rows, p->bm, p->bn, p->d, p->causal));
    else if (p->dtype == TJ_F16)
        CHECK(attention_f16_launch(p->dev, &cfg, p->q, p->k, p->v, p->o, sm_scale, p->h,
                                   p->n_ctx, stride_z, stride_h, stride_m, p->bm, p->bn, p->d,
                                   p->causal));
    else
        CHECK(attention_bf16_launch(p->dev, &cfg, p->q, p->k, p->v, p->o, sm_scale, p->h,
                                    p->n_ctx, stride_z, stride_h, stride_m, p->bm, p->bn, p->d,
                                    p->causal));
}

/* Checks one query row of one head against the softmax in double; returns
 * whether it matches, printing the first element that does not. */
static int check_row(const attention_problem *p, const float *q, const float *k, const float *v,
                     const float *o, int64_t head, int64_t i, double *scores)
{
    const int64_t d = p->d, n = p->causal ? i + 1 : p->n_ctx;
    const float *qi = q + (head * p->n_ctx + i) * d;
    const double sm_scale = 1.0 / sqrt((double)d);
    double max = -INFINITY, sum = 0;
    for (int64_t j = 0; j < n; j++) {
        const float *kj = k + (head * p->n_ctx + j) * d;
        double s = 0;
        for (int64_t c = 0; c < d; c++)
            s += (double)qi[c] * kj[c];
        scores[j] = s * sm_scale;
        max = fmax(max, scores[j]);
    }
    for (int64_t j = 0; j < n; j++)
        sum += scores[j] = exp(scores[j] - max);
    /* P is rounded to the input dtype (relative error 2^-11 for f16, 2^-8
     * for bf16) before P V; O is a convex combination of rows of V, |v| <
     * 4, rounded once more at the store. */
    const double eps = p->dtype == TJ_F16 ? 0x1p-11 : 0x1p-8;
    for (int64_t c = 0; c < d; c++) {
        double want = 0;
        for (int64_t j = 0; j < n; j++)
            want += scores[j] / sum * v[(head * p->n_ctx + j) * d + c];
        double got = o[(head * p->n_ctx + i) * d + c];
        double tol = 4 * eps * 4 + eps * fabs(want) + 1e-3;
        if (!(fabs(got - want) <= tol)) {
            printf("O[head %lld][row %lld][%lld] = %.6g, expected %.6g (tolerance %.3g)\n",
                   (long long)head, (long long)i, (long long)c, got, want, tol);
            return 0;
        }
    }
    return 1;
}

static int run(attention_problem *p)
{
    const size_t count = (size_t)p->z * p->h * p->n_ctx * p->d;
    float *q = xmalloc(count * sizeof(float)), *k = xmalloc(count * sizeof(float));
    float *v = xmalloc(count * sizeof(float)), *o = xmalloc(count * sizeof(float));
    double *scores = xmalloc((size_t)p->n_ctx * sizeof(double));
    float *inputs[3] = {q, k, v};
    for (int t = 0; t < 3; t++)
        for (size_t i = 0; i < count; i++)
            inputs[t][i] = round_half(p->dtype, random_float(-2, 2));
    p->q = device_halves(p->dev, p->dtype, q, count);
    p->k = device_halves(p->dev, p->dtype, k, count);
    p->v = device_halves(p->dev, p->dtype, v, count);
    p->o = device_halves(p->dev, p->dtype, NULL, count);
    launch(p);
    read_halves(p->dev, p->dtype, p->o, o, count);

    /* Every row when the check is cheap, else the first, the last and
     * every 61st of each head (rows on both sides of each block edge). */
    const int every = (double)p->z * p->h * p->n_ctx * p->n_ctx * p->d > 0x1p31 ? 61 : 1;
    int ok = 1;
    for (int64_t head = 0; ok && head < (int64_t)p->z * p->h; head++)
        for (int64_t i = 0; ok && i < p->n_ctx; i++)
            if (i % every == 0 || i == p->n_ctx - 1)
                ok = check_row(p, q, k, v, o, head, i, scores);

    double seconds = median_seconds(p->dev, 10, launch, p);
    double flops = 4.0 * p->z * p->h * (double)p->n_ctx * p->n_ctx * p->d * (p->causal ? 0.5 : 1);
    printf("%s  attention %s %s d=%d, K/V by %s, %d x %d x %d, blocks %lld x %lld, %d warps: "
           "%.3f TFLOP/s (%.3f ms, median of 10 runs)\n",
           ok ? "PASS" : "FAIL", p->dtype == TJ_F16 ? "f16" : "bf16",
           p->causal ? "causal" : "full", p->d, p->block_ptrs ? "block pointers" : "pointer tiles", p->z,
           p->h, p->n_ctx, (long long)p->bm,
           (long long)p->bn, p->warps, flops / seconds / 1e12, seconds * 1e3);
    tj_buffer bufs[4] = {p->q, p->k, p->v, p->o};
    for (int t = 0; t < 4; t++)
        CHECK(tj_buffer_free(p->dev, bufs[t]));
    free(q);
    free(k);
    free(v);
    free(o);
    free(scores);
    return ok;
}

int main(int argc, char **argv)
{
    const int64_t z = size_arg(argc, argv, 1, 1);
    const int64_t h = size_arg(argc, argv, 2, 4);
    const int64_t n_ctx = size_arg(argc, argv, 3, 1000);
    if (z * h * n_ctx * 128 > INT32_MAX) {
        fprintf(stderr, "attention: Z * H * N_CTX * 128 must fit in i32\n");
        return 2;
    }
    tj_device *dev = open_default_device();
    printf("attention: Z = %lld, H = %lld, N_CTX = %lld, seed = %llu\n", (long long)z,
           (long long)h, (long long)n_ctx, (unsigned long long)sample_seed());
    int ok = 1;
    for (int dt = 0; dt < 2; dt++)
        for (int d = 64; d <= 128; d *= 2)
            for (int causal = 0; causal < 2; causal++)
                for (int block_ptrs = 0; block_ptrs < 2; block_ptrs++) {
                    attention_problem p = {dev, dt == 0 ? TJ_F16 : TJ_BF16, (int32_t)z, (int32_t)h,
                                           (int32_t)n_ctx, d, causal, block_ptrs, .bm = 128, .bn = 64,
                                           .warps = 8};
                    ok &= run(&p);
                }
    tj_device_close(dev);
    return !ok;
}
