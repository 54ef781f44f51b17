/* SPDX-License-Identifier: MIT */
/*
 * attention_bwd — the backward pass of causal fused attention, as Triton's
 * tutorial 06 writes it (FlashAttention-2), in tjit: given Q, K, V and the
 * gradient dO of the output, the gradients dQ, dK and dV.
 *
 * Training needs what the forward saw: the forward kernel
 * (attention_kernel.h) is run with an lse tensor, so that it also stores
 * each query row's log2-sum-exp of the scaled scores. The backward then
 * never takes a softmax: P = exp2(s Q K^T - LSE) comes back exactly, a block
 * at a time, and the N_CTX x N_CTX matrices P and dS are never written to
 * memory. Two kernels (attention_bwd_kernel.h, whose top comment gives the
 * formulas): a row reduction DELTA = rowsum(dO * O), then the main kernel,
 * in which a program accumulates dK and dV for one block of keys and dQ for
 * one block of queries.
 *
 * For f16 and bf16, head dims 64 and 128, it checks the three gradients
 * against a C reference in double (of every head, or of the first and the
 * last for long sequences) and prints TFLOP/s of the backward's two
 * kernels, each in both of the kernel's forms (ONE_READ: the tutorial's
 * tiles read once and transposed by tj_trans, or read in both
 * orientations), counting 2.5 times the forward's flops (two of its five dots
 * recompute what the forward had), 4 N_CTX^2 D per (batch, head) halved by
 * the causal mask, as the tutorial counts. Outputs are NaN before the
 * launches.
 *
 *     usage: attention_bwd [Z H N_CTX]    (default 1 x 2 x 256; N_CTX a
 *                                          multiple of 128)
 */
#include "common.h"
#include "attention_kernel.h"
#include "attention_bwd_kernel.h"

/* The forward over contiguous tensors, storing LSE as well. */
#define ATTENTION_TRAIN_KERNEL(name, dt, dtype)                                                        \
    TJ_KERNEL(name,                                                                                    \
              TJ_PARAMS(TJ_PTR(q, dt), TJ_PTR(k, dt), TJ_PTR(v, dt), TJ_PTR(o, dt), TJ_PTR(lse, f32),  \
                        TJ_SCALAR(sm_scale, f32), TJ_SCALAR(H, i32), TJ_SCALAR(n_ctx, i32)),           \
              TJ_CONSTS(BM, BN, HEAD_DIM))                                                             \
    {                                                                                                  \
        tj_val stride_h = tj_mul(n_ctx, HEAD_DIM);                                                     \
        attention_body(q, k, v, o, lse, sm_scale, H, n_ctx, tj_mul(H, stride_h), stride_h,            \
                       tj_i32(HEAD_DIM), TJ_NONE, BM, BN, HEAD_DIM, 1, dtype);                         \
    }

ATTENTION_TRAIN_KERNEL(attention_fwd_f16, f16, TJ_F16)
ATTENTION_TRAIN_KERNEL(attention_fwd_bf16, bf16, TJ_BF16)
ATTENTION_BWD_PREPROCESS_KERNEL(attention_bwd_pre_f16, f16)
ATTENTION_BWD_PREPROCESS_KERNEL(attention_bwd_pre_bf16, bf16)
ATTENTION_BWD_KERNEL(attention_bwd_f16, f16, TJ_F16)
ATTENTION_BWD_KERNEL(attention_bwd_bf16, bf16, TJ_BF16)

/* The tutorial's blocks: keys of dK/dV and queries of dQ in 128s, the
 * other side in 32s, the diagonal blocks in halves of those. */
enum { BM1 = 32, BN1 = 128, BM2 = 128, BN2 = 32, SLICE = 2, PRE_BM = 128 };

typedef struct bwd_problem {
    tj_device *dev;
    tj_dtype dtype;
    int32_t z, h, n_ctx, d;
    int warps;
    int one_read; /* the tutorial's reads: Q^T, dO and K^T once, tj_trans for the other orientation */
    tj_buffer q, k, v, o, d_o, dq, dk, dv, lse, delta;
} bwd_problem;

static double sm_scale_of(const bwd_problem *p) { return 1.0 / sqrt((double)p->d); }

static void forward(const bwd_problem *p)
{
    tj_launch_cfg cfg = {.grid = {cdiv(p->n_ctx, 128), (int64_t)p->z * p->h}, .num_warps = 8};
    if (p->dtype == TJ_F16)
        CHECK(attention_fwd_f16_launch(p->dev, &cfg, p->q, p->k, p->v, p->o, p->lse, sm_scale_of(p), p->h,
                                       p->n_ctx, 128, 64, p->d));
    else
        CHECK(attention_fwd_bf16_launch(p->dev, &cfg, p->q, p->k, p->v, p->o, p->lse, sm_scale_of(p), p->h,
                                        p->n_ctx, 128, 64, p->d));
}

/* The backward: DELTA, then the gradients (what is timed). */
static void backward(void *problem)
{
    const bwd_problem *p = problem;
    tj_launch_cfg pre = {.grid = {p->n_ctx / PRE_BM, (int64_t)p->z * p->h}};
    tj_launch_cfg cfg = {.grid = {p->n_ctx / BN1, (int64_t)p->z * p->h}, .num_warps = p->warps};
    if (p->dtype == TJ_F16) {
        CHECK(attention_bwd_pre_f16_launch(p->dev, &pre, p->o, p->d_o, p->delta, p->n_ctx, PRE_BM, p->d));
        CHECK(attention_bwd_f16_launch(p->dev, &cfg, p->q, p->k, p->v, p->d_o, p->dq, p->dk, p->dv, p->lse,
                                       p->delta, sm_scale_of(p), p->n_ctx, BM1, BN1, BM2, BN2, SLICE, p->d,
                                       p->one_read));
    } else {
        CHECK(attention_bwd_pre_bf16_launch(p->dev, &pre, p->o, p->d_o, p->delta, p->n_ctx, PRE_BM, p->d));
        CHECK(attention_bwd_bf16_launch(p->dev, &cfg, p->q, p->k, p->v, p->d_o, p->dq, p->dk, p->dv, p->lse,
                                        p->delta, sm_scale_of(p), p->n_ctx, BM1, BN1, BM2, BN2, SLICE, p->d,
                                       p->one_read));
    }
}

/* The gradients of one head in double: P, dP and dS row by row (causal),
 * accumulated into dq, dk, dv ([n_ctx, d] each, zeroed here). */
static void reference_head(int64_t n, int64_t d, double sm_scale, const float *q, const float *k,
                           const float *v, const float *d_o, double *dq, double *dk, double *dv, double *p,
                           double *dp)
{
    memset(dq, 0, (size_t)(n * d) * sizeof *dq);
    memset(dk, 0, (size_t)(n * d) * sizeof *dk);
    memset(dv, 0, (size_t)(n * d) * sizeof *dv);
    for (int64_t i = 0; i < n; i++) {
        double max = -INFINITY, sum = 0, delta = 0;
        for (int64_t j = 0; j <= i; j++) {
            double s = 0, t = 0;
            for (int64_t c = 0; c < d; c++) {
                s += (double)q[i * d + c] * k[j * d + c];
                t += (double)d_o[i * d + c] * v[j * d + c];
            }
            p[j] = s * sm_scale;
            dp[j] = t;
            max = fmax(max, p[j]);
        }
        for (int64_t j = 0; j <= i; j++)
            sum += p[j] = exp(p[j] - max);
        for (int64_t j = 0; j <= i; j++) {
            p[j] /= sum;
            delta += p[j] * dp[j]; /* rowsum(dO * O), as O_i = sum_j P_ij V_j */
        }
        for (int64_t j = 0; j <= i; j++) {
            double ds = p[j] * (dp[j] - delta) * sm_scale;
            for (int64_t c = 0; c < d; c++) {
                dq[i * d + c] += ds * k[j * d + c];
                dk[j * d + c] += ds * q[i * d + c];
                dv[j * d + c] += p[j] * d_o[i * d + c];
            }
        }
    }
}

/* got against want: every element within tol of the largest |want| (the
 * gradients' rounding errors are sums of many rounded products, so they
 * scale with the tensor, not the element). Prints the worst. */
static int check_grad(const char *name, const bwd_problem *p, int64_t head, const float *got, const double *want,
                      int64_t count, double tol)
{
    double scale = 0, worst = 0;
    int64_t at = 0;
    for (int64_t i = 0; i < count; i++)
        scale = fmax(scale, fabs(want[i]));
    for (int64_t i = 0; i < count; i++) {
        double err = fabs(got[i] - want[i]);
        if (!(err <= worst)) { /* NaN too */
            worst = isnan(err) ? INFINITY : err;
            at = i;
        }
    }
    int ok = worst <= tol * scale;
    if (!ok)
        printf("%s[head %lld][row %lld][%lld] = %.6g, expected %.6g (error %.3g > %.3g x max |%s| %.3g)\n", name,
               (long long)head, (long long)(at / p->d), (long long)(at % p->d), got[at], want[at], worst, tol,
               name, scale);
    return ok;
}

static int run(bwd_problem *p)
{
    const size_t count = (size_t)p->z * p->h * p->n_ctx * p->d, rows = (size_t)p->z * p->h * p->n_ctx;
    float *host[4], *got[3];
    for (int t = 0; t < 4; t++) {
        host[t] = xmalloc(count * sizeof(float));
        for (size_t i = 0; i < count; i++)
            host[t][i] = round_half(p->dtype, random_float(-1, 1));
    }
    for (int t = 0; t < 3; t++)
        got[t] = xmalloc(count * sizeof(float));
    p->q = device_halves(p->dev, p->dtype, host[0], count);
    p->k = device_halves(p->dev, p->dtype, host[1], count);
    p->v = device_halves(p->dev, p->dtype, host[2], count);
    p->d_o = device_halves(p->dev, p->dtype, host[3], count);
    p->o = device_halves(p->dev, p->dtype, NULL, count);
    p->dq = device_halves(p->dev, p->dtype, NULL, count);
    p->dk = device_halves(p->dev, p->dtype, NULL, count);
    p->dv = device_halves(p->dev, p->dtype, NULL, count);
    p->lse = device_floats(p->dev, NULL, rows);
    p->delta = device_floats(p->dev, NULL, rows);
    forward(p);
    backward(p);
    read_halves(p->dev, p->dtype, p->dq, got[0], count);
    read_halves(p->dev, p->dtype, p->dk, got[1], count);
    read_halves(p->dev, p->dtype, p->dv, got[2], count);

    /* P and dS are rounded to the input dtype before their dots (2^-11 for
     * f16, 2^-8 for bf16), and so is each gradient at its store. */
    const double tol = p->dtype == TJ_F16 ? 0.004 : 0.025;
    const int64_t n = p->n_ctx, d = p->d, per_head = n * d;
    double *want[3], *prow = xmalloc((size_t)n * sizeof(double)), *dprow = xmalloc((size_t)n * sizeof(double));
    for (int t = 0; t < 3; t++)
        want[t] = xmalloc((size_t)per_head * sizeof(double));
    static const char *const names[3] = {"dQ", "dK", "dV"};
    /* Every head when the check is cheap, else the first and the last. */
    const int64_t heads = (int64_t)p->z * p->h;
    const int64_t skip = (double)heads * n * n * d > 0x1p31 && heads > 2 ? heads - 1 : 1;
    int ok = 1;
    for (int64_t head = 0; ok && head < heads; head += skip) {
        const size_t at = (size_t)(head * per_head);
        reference_head(n, d, sm_scale_of(p), host[0] + at, host[1] + at, host[2] + at, host[3] + at, want[0],
                       want[1], want[2], prow, dprow);
        for (int t = 0; ok && t < 3; t++)
            ok = check_grad(names[t], p, head, got[t] + at, want[t], per_head, tol);
    }

    double seconds = median_seconds(p->dev, 10, backward, p);
    double flops = 2.5 * 4.0 * p->z * p->h * (double)p->n_ctx * p->n_ctx * p->d * 0.5;
    printf("%s  attention backward %s causal d=%d, %d x %d x %d, blocks %d x %d (dK, dV) and %d x %d (dQ), "
           "%d warps, %s: %.3f TFLOP/s (%.3f ms, median of 10 runs)\n",
           ok ? "PASS" : "FAIL", p->dtype == TJ_F16 ? "f16" : "bf16", p->d, p->z, p->h, p->n_ctx, BM1, BN1, BM2,
           BN2, p->warps, p->one_read ? "tiles read once (tj_trans)" : "tiles read in both orientations",
           flops / seconds / 1e12, seconds * 1e3);
    tj_buffer bufs[10] = {p->q, p->k, p->v, p->o, p->d_o, p->dq, p->dk, p->dv, p->lse, p->delta};
    for (int t = 0; t < 10; t++)
        CHECK(tj_buffer_free(p->dev, bufs[t]));
    for (int t = 0; t < 4; t++)
        free(host[t]);
    for (int t = 0; t < 3; t++) {
        free(got[t]);
        free(want[t]);
    }
    free(prow);
    free(dprow);
    return ok;
}

int main(int argc, char **argv)
{
    const int64_t z = size_arg(argc, argv, 1, 1);
    const int64_t h = size_arg(argc, argv, 2, 2);
    const int64_t n_ctx = size_arg(argc, argv, 3, 256);
    if (n_ctx % BN1 || z * h * n_ctx > INT32_MAX) {
        fprintf(stderr, "attention_bwd: N_CTX must be a multiple of %d, Z * H * N_CTX must fit in i32\n", BN1);
        return 2;
    }
    tj_device *dev = open_default_device();
    printf("attention_bwd: Z = %lld, H = %lld, N_CTX = %lld, seed = %llu\n", (long long)z, (long long)h,
           (long long)n_ctx, (unsigned long long)sample_seed());
    int ok = 1;
    for (int dt = 0; dt < 2; dt++)
        for (int d = 64; d <= 128; d *= 2) {
            /* dK and dV of 128 keys are 2 x 128 x d f32 accumulators: 8
             * warps keep them in registers (on sm_90a ptxas spills none
             * at d = 64, 48 bytes at d = 128) */
            for (int one_read = 0; one_read < 2; one_read++) {
                bwd_problem p = {dev, dt == 0 ? TJ_F16 : TJ_BF16, (int32_t)z, (int32_t)h, (int32_t)n_ctx, d,
                                 .warps = 8, .one_read = one_read};
                ok &= run(&p);
            }
        }
    tj_device_close(dev);
    return !ok;
}
