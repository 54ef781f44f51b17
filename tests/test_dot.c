/* SPDX-License-Identifier: MIT */
/*
 * test_dot.c — tj_dot: its semantics on one tile, and its errors.
 *
 * Each kernel loads a [M, K] and a [K, N] tile (and an accumulator), takes
 * their dot and stores it; the C reference computes the op's definition
 * (tjit.h): each element starts at the accumulator and adds the products
 * for k = 0, 1, ... with one fused multiply-add each, TF32 truncating each
 * input to tf32 (the low 13 bits cleared), TF32X3 adding a_lo b_hi, a_hi
 * b_lo, a_hi b_hi (hi rounded to tf32, nearest, ties away; lo truncated). On the CPU that is the order the back end follows, so results
 * must match bit for bit; on a GPU (tensor cores sum in their own order)
 * they must be within a K-scaled tolerance, and small-integer inputs,
 * whose every sum is exact, still bit for bit. Shapes cover every block
 * size of the CPU's micro-kernel and batches; a dot inside a TJ_FOR,
 * transposed operands (a view, tj_trans) and an f16 result are there too.
 * The errors name the user's line.
 */
#include "testlib.h"

/* c = a @ b (+ acc) for [BATCH,] M x K x N; TRANS_B: b is stored [N, K]. */
#define DOT_KERNEL(NAME, IN, OUT)                                                                   \
    TJ_KERNEL(NAME, TJ_PARAMS(TJ_PTR(a, IN), TJ_PTR(b, IN), TJ_PTR(acc, OUT), TJ_PTR(c, OUT)),       \
              TJ_CONSTS(BATCH, M, N, K, HAS_ACC, PREC, TRANS_B))                                     \
    {                                                                                                \
        tj_val ta = tj_load(tj_add(a, TL_IDX(BATCH, M, K)));                                            \
        tj_val tb = TRANS_B ? tj_trans(tj_load(tj_add(b, TL_TILE_IDX(N, K))))                           \
                            : tj_load(tj_add(b, TL_IDX(BATCH, K, N)));                                  \
        tj_val tacc = HAS_ACC ? tj_load(tj_add(acc, TL_IDX(BATCH, M, N))) : TJ_NONE;                    \
        tj_val r = tj_dot(ta, tb, tacc, .input_precision = (tj_input_precision)PREC,                 \
                          .out_dtype = TJ_##OUT == TJ_F16 ? TJ_F16 : 0);                             \
        tj_store(tj_add(c, TL_IDX(BATCH, M, N)), r);                                                    \
    }
#define TJ_f32 TJ_F32
#define TJ_f16 TJ_F16
#define TJ_i32 TJ_I32
DOT_KERNEL(dot_f16, f16, f32)
DOT_KERNEL(dot_f16_f16, f16, f16)
DOT_KERNEL(dot_bf16, bf16, f32)
DOT_KERNEL(dot_f32, f32, f32)
DOT_KERNEL(dot_i8, i8, i32)

/* acc += a_k @ b_k over NK chunks of K along a TJ_FOR. */
TJ_KERNEL(dot_loop, TJ_PARAMS(TJ_PTR(a, f32), TJ_PTR(b, f32), TJ_PTR(c, f32), TJ_SCALAR(nk, i32)),
          TJ_CONSTS(M, N, K))
{
    tj_val acc = tj_zeros(TJ_SHAPE(M, N), TJ_F32);
    TJ_FOR(k, 0, nk, 1, &acc) {
        tj_val ta = tj_load(tj_add(tj_add(a, tj_mul(k, K)), tj_add(tj_mul(tj_expand_dims(tj_arange(0, M), 1), tj_mul(nk, K)),
                                                           tj_expand_dims(tj_arange(0, K), 0))));
        tj_val tb = tj_load(tj_add(tj_add(b, tj_mul(tj_mul(k, K), N)), TL_TILE_IDX(K, N)));
        acc = tj_dot(ta, tb, acc);
    }
    tj_store(tj_add(c, TL_TILE_IDX(M, N)), acc);
}

/* The same with Triton's carried pointer tiles (a_ptrs += K each chunk), and
 * after the loop the tile where a_ptrs ended, copied to d. */
TJ_KERNEL(dot_ptr_loop, TJ_PARAMS(TJ_PTR(a, f32), TJ_PTR(b, f32), TJ_PTR(c, f32), TJ_PTR(d, f32),
                                  TJ_SCALAR(nk, i32)), TJ_CONSTS(M, N, K))
{
    tj_val lda = tj_mul(tj_add(nk, 1), K);
    tj_val ap = tj_add(a, tj_add(tj_mul(tj_expand_dims(tj_arange(0, M), 1), lda), tj_expand_dims(tj_arange(0, K), 0)));
    tj_val bp = tj_add(b, TL_TILE_IDX(K, N));
    tj_val acc = tj_zeros(TJ_SHAPE(M, N), TJ_F32);
    TJ_FOR(k, 0, nk, 1, &acc, &ap, &bp) {
        acc = tj_dot(tj_load(ap), tj_load(bp), acc);
        ap = tj_add(ap, K);
        bp = tj_add(bp, tj_mul(K, N));
    }
    tj_store(tj_add(c, TL_TILE_IDX(M, N)), acc);
    tj_store(tj_add(d, TL_TILE_IDX(M, K)), tj_load(ap));
}

/* x rounded to tf32 (to nearest, ties away; Inf and NaN kept), or
 * truncated (the low 13 bits cleared). */
static float tf32(float x, int rounded)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    if (!rounded)
        u &= 0xFFFFE000u;
    else if ((u & 0x7F800000u) != 0x7F800000u)
        u = (u + 0x1000u) & 0xFFFFE000u;
    memcpy(&x, &u, 4);
    return x;
}

/* The definition: element (m, n) of batch bi, in float (or int32) arithmetic. */
static void reference(tj_dtype in, tj_dtype out, int prec, int batch, int M, int N, int K, int trans_b,
                      const void *a, const void *b, const void *acc, void *c)
{
    for (int bi = 0; bi < batch; bi++)
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++) {
                size_t ci = ((size_t)bi * M + m) * N + n;
                if (in == TJ_I8) {
                    uint32_t s = acc ? (uint32_t)tl_get(TJ_I32, acc, ci).i : 0;
                    for (int k = 0; k < K; k++)
                        s += (uint32_t)(tl_get(TJ_I8, a, ((size_t)bi * M + m) * K + k).i *
                                        tl_get(TJ_I8, b, ((size_t)bi * K + k) * N + n).i);
                    tl_set(TJ_I32, c, ci, tl_int((int32_t)s));
                    continue;
                }
                float s = acc ? (float)tl_get(out, acc, ci).f : 0.0f;
                for (int k = 0; k < K; k++) {
                    size_t bidx = trans_b ? (size_t)n * K + k : ((size_t)bi * K + k) * N + n;
                    float x = (float)tl_get(in, a, ((size_t)bi * M + m) * K + k).f;
                    float y = (float)tl_get(in, b, bidx).f;
                    if (prec == TJ_PRECISION_IEEE) {
                        s = fmaf(x, y, s);
                    } else {
                        int x3 = prec == TJ_PRECISION_TF32X3;
                        float xh = tf32(x, x3), yh = tf32(y, x3);
                        if (x3) {
                            s = fmaf(tf32(x - xh, 0), yh, s);
                            s = fmaf(xh, tf32(y - yh, 0), s);
                        }
                        s = fmaf(xh, yh, s);
                    }
                }
                tl_set(out, c, ci, tl_flt(out == TJ_F16 ? tl_round(TJ_F16, s) : s));
            }
}

/* Inputs: small integers (every sum exact) or random normal-ish values. */
static void fill(tj_dtype t, void *p, size_t n, int small)
{
    for (size_t i = 0; i < n; i++) {
        if (t == TJ_I8)
            tl_set(t, p, i, tl_int(tl_rand_range(-128, 127)));
        else if (small)
            tl_set(t, p, i, tl_flt((double)tl_rand_range(-4, 4)));
        else
            tl_set(t, p, i, tl_flt(tl_round(t, tl_rand_double(-1, 1) + tl_rand_double(-1, 1))));
    }
}

static const char *prec_name(int p) { return p == 0 ? "ieee" : p == 1 ? "tf32" : "tf32x3"; }

static void run(tj_device *dev, const tj_kernel *k, tj_dtype in, tj_dtype out, int prec, int batch,
                int M, int N, int K, int has_acc, int trans_b, int small)
{
    size_t na = (size_t)batch * M * K, nb = (size_t)batch * K * N, nc = (size_t)batch * M * N;
    size_t ea = tj_dtype_size(in), ec = tj_dtype_size(out);
    void *a = malloc(na * ea), *b = malloc(nb * ea), *acc = malloc(nc * ec), *want = malloc(nc * ec),
         *got = malloc(nc * ec);
    fill(in, a, na, small);
    fill(in, b, nb, small);
    fill(out == TJ_I32 ? TJ_I8 : out, acc, nc, small); /* i32 acc: values of i8's range */
    if (out == TJ_I32)
        for (size_t i = nc; i-- > 0;)
            tl_set(TJ_I32, acc, i, tl_get(TJ_I8, acc, i));
    reference(in, out, prec, batch, M, N, K, trans_b, a, b, has_acc ? acc : NULL, want);
    tj_buffer ba = tl_upload(dev, a, na * ea), bb = tl_upload(dev, b, nb * ea),
              bacc = tl_upload(dev, acc, nc * ec), bc = tl_poisoned(dev, nc * ec);
    char what[160];
    snprintf(what, sizeof what, "%s: %s x %s -> %s, %dx%dx%dx%d%s%s, %s inputs", k->name, tj_dtype_name(in), tj_dtype_name(in), tj_dtype_name(out), batch, M, N, K,
             has_acc ? " + acc" : "", trans_b ? ", b transposed" : "", small ? "small-integer" : "random");
    if (in == TJ_F32) {
        size_t len = strlen(what);
        snprintf(what + len, sizeof what - len, ", %s", prec_name(prec));
    }
    tj_arg args[] = {TJ_ARG_BUF(ba), TJ_ARG_BUF(bb), TJ_ARG_BUF(bacc), TJ_ARG_BUF(bc)};
    int64_t consts[] = {batch, M, N, K, has_acc, prec, trans_b};
    tj_status st = tj_launch(dev, k, &(tj_launch_cfg){.grid = {1}}, args, 4, consts, 7);
    if (!tl_launch_failed(st, what)) {
        tl_download(dev, bc, got, nc * ec);
        int exact = tj_device_get_kind(dev) == TJ_DEVICE_CPU || small || in == TJ_I8;
        /* a sum of K products of inputs below 2 in magnitude, in another order */
        double eps = out == TJ_F16                 ? 0x1p-10
                     : prec == TJ_PRECISION_TF32   ? 0x1p-9 /* two inputs truncated */
                     : prec == TJ_PRECISION_TF32X3 ? 0x1p-20
                                                   : 0x1p-23;
        tl_check(what, out, got, want, nc, exact ? 0 : eps, exact ? 0 : 4.0 * K * eps);
    }
    tj_buffer_free(dev, ba);
    tj_buffer_free(dev, bb);
    tj_buffer_free(dev, bacc);
    tj_buffer_free(dev, bc);
    free(a), free(b), free(acc), free(want), free(got);
}

static void loop_case(tj_device *dev, int M, int N, int K, int nk)
{
    int KT = K * nk;
    float *a = malloc(sizeof(float) * M * KT), *b = malloc(sizeof(float) * KT * N),
          *want = malloc(sizeof(float) * M * N), *got = malloc(sizeof(float) * M * N);
    fill(TJ_F32, a, (size_t)M * KT, 0);
    fill(TJ_F32, b, (size_t)KT * N, 0);
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            float s = 0;
            for (int k = 0; k < KT; k++)
                s = fmaf(a[m * KT + k], b[k * N + n], s);
            want[m * N + n] = s;
        }
    tj_buffer ba = tl_upload(dev, a, sizeof(float) * M * KT), bb = tl_upload(dev, b, sizeof(float) * KT * N),
              bc = tl_poisoned(dev, sizeof(float) * M * N);
    char what[128];
    snprintf(what, sizeof what, "dot in a TJ_FOR: %dx%d, %d chunks of K = %d", M, N, nk, K);
    tj_arg args[] = {TJ_ARG_BUF(ba), TJ_ARG_BUF(bb), TJ_ARG_BUF(bc), TJ_ARG_I32(nk)};
    int64_t consts[] = {M, N, K};
    tj_status st = tj_launch(dev, dot_loop, &(tj_launch_cfg){.grid = {1}}, args, 4, consts, 3);
    if (!tl_launch_failed(st, what)) {
        tl_download(dev, bc, got, sizeof(float) * M * N);
        int exact = tj_device_get_kind(dev) == TJ_DEVICE_CPU;
        tl_check(what, TJ_F32, got, want, (size_t)M * N, exact ? 0 : 0x1p-21, exact ? 0 : 4.0 * KT * 0x1p-23);
    }
    tj_buffer_free(dev, ba);
    tj_buffer_free(dev, bb);
    tj_buffer_free(dev, bc);
    free(a), free(b), free(want), free(got);
}

static void ptr_loop_case(tj_device *dev, int M, int N, int K, int nk)
{
    int lda = K * (nk + 1), KT = K * nk;
    float *a = malloc(sizeof(float) * M * lda), *b = malloc(sizeof(float) * (KT + K) * N),
          *want = malloc(sizeof(float) * M * N), *got = malloc(sizeof(float) * M * N),
          *dwant = malloc(sizeof(float) * M * K), *dgot = malloc(sizeof(float) * M * K);
    fill(TJ_F32, a, (size_t)M * lda, 0);
    fill(TJ_F32, b, (size_t)(KT + K) * N, 0);
    for (int m = 0; m < M; m++) {
        for (int n = 0; n < N; n++) {
            float s = 0;
            for (int k = 0; k < KT; k++)
                s = fmaf(a[m * lda + k], b[k * N + n], s);
            want[m * N + n] = s;
        }
        for (int k = 0; k < K; k++)
            dwant[m * K + k] = a[m * lda + KT + k];
    }
    tj_buffer ba = tl_upload(dev, a, sizeof(float) * M * lda), bb = tl_upload(dev, b, sizeof(float) * (KT + K) * N),
              bc = tl_poisoned(dev, sizeof(float) * M * N), bd = tl_poisoned(dev, sizeof(float) * M * K);
    char what[128];
    snprintf(what, sizeof what, "dot of carried pointer tiles: %dx%d, %d chunks of K = %d", M, N, nk, K);
    tj_arg args[] = {TJ_ARG_BUF(ba), TJ_ARG_BUF(bb), TJ_ARG_BUF(bc), TJ_ARG_BUF(bd), TJ_ARG_I32(nk)};
    int64_t consts[] = {M, N, K};
    tj_status st = tj_launch(dev, dot_ptr_loop, &(tj_launch_cfg){.grid = {1}}, args, 5, consts, 3);
    if (!tl_launch_failed(st, what)) {
        tl_download(dev, bc, got, sizeof(float) * M * N);
        tl_download(dev, bd, dgot, sizeof(float) * M * K);
        int exact = tj_device_get_kind(dev) == TJ_DEVICE_CPU;
        tl_check(what, TJ_F32, got, want, (size_t)M * N, exact ? 0 : 0x1p-21, exact ? 0 : 4.0 * KT * 0x1p-23);
        tl_check("... and the pointer tile after the loop", TJ_F32, dgot, dwant, (size_t)M * K, 0, 0);
    }
    tj_buffer_free(dev, ba);
    tj_buffer_free(dev, bb);
    tj_buffer_free(dev, bc);
    tj_buffer_free(dev, bd);
    free(a), free(b), free(want), free(got), free(dwant), free(dgot);
}

/* --- errors --------------------------------------------------------------- */

static int bad_case0_line; /* case i of bad_dot is on line bad_case0_line + i */

TJ_KERNEL(bad_dot, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(h, f16), TJ_PTR(q, i8)), TJ_CONSTS(CASE))
{
    tj_val a = tj_load(tj_add(x, TL_TILE_IDX(32, 16)));   /* f32 [32, 16] */
    tj_val b = tj_load(tj_add(x, TL_TILE_IDX(16, 32)));   /* f32 [16, 32] */
    tj_val hb = tj_load(tj_add(h, TL_TILE_IDX(16, 32)));  /* f16 [16, 32] */
    tj_val qa = tj_load(tj_add(q, TL_TILE_IDX(32, 16)));  /* i8 [32, 16] */
    tj_val small = tj_load(tj_add(x, TL_TILE_IDX(8, 16))); /* f32 [8, 16] */
    tj_val r = TJ_NONE;
    bad_case0_line = __LINE__ + 2;
    switch (CASE) {
    case 0: r = tj_dot(a, a, TJ_NONE); break;                                   /* K 16 vs 32 */
    case 1: r = tj_dot(tj_arange(0, 16), b, TJ_NONE); break;                    /* rank 1 */
    case 2: r = tj_dot(a, hb, TJ_NONE); break;                                  /* f32 x f16 */
    case 3: r = tj_dot(small, b, TJ_NONE); break;                               /* M = 8 */
    case 4: r = tj_dot(tj_cast(a, TJ_I32), tj_cast(b, TJ_I32), TJ_NONE); break; /* i32 */
    case 5: r = tj_dot(qa, tj_cast(b, TJ_I8), TJ_NONE, .out_dtype = TJ_F32); break;
    case 6: r = tj_dot(tj_cast(a, TJ_F16), hb, TJ_NONE, .input_precision = TJ_PRECISION_TF32); break;
    case 7: r = tj_dot(a, b, tj_zeros(TJ_SHAPE(32, 16), TJ_F32)); break;        /* acc shape */
    default: r = tj_dot(a, b, tj_zeros(TJ_SHAPE(32, 32), TJ_F16)); break;       /* f32 -> f16 */
    }
    tj_store(tj_add(x, TL_TILE_IDX(32, 32)), tj_cast(r, TJ_F32));
}

static void error_case(int which, tj_status want, const char *words)
{
    char *text = NULL;
    int64_t c = which;
    tj_status st = tj_kernel_ir(bad_dot, &c, 1, &text);
    free(text);
    const char *where = tl_where(__FILE__, bad_case0_line + which);
    tap_ok(st == want && tl_error_mentions("bad_dot", "dot", where, words, NULL),
           "error %d: %s at %s (%s: %s)", which, words, where, tj_status_name(st), tj_last_error());
}

int main(void)
{
    tj_device *dev = tl_setup("test_dot");
    static const int shapes[][4] = {{1, 16, 16, 16}, {1, 32, 64, 16}, {1, 64, 32, 32}, {1, 16, 128, 64},
                                    {1, 128, 16, 16}, {2, 16, 32, 16}, {4, 32, 16, 32}};
    for (size_t s = 0; s < TL_COUNT(shapes); s++)
        for (int small = 1; small >= 0; small--) {
            int B_ = shapes[s][0], M = shapes[s][1], N = shapes[s][2], K = shapes[s][3];
            int acc = (int)(s % 2);
            run(dev, dot_f16, TJ_F16, TJ_F32, 0, B_, M, N, K, acc, 0, small);
            run(dev, dot_bf16, TJ_BF16, TJ_F32, 0, B_, M, N, K, !acc, 0, small);
            run(dev, dot_f32, TJ_F32, TJ_F32, (int)(s % 3), B_, M, N, K, acc, 0, small);
            run(dev, dot_i8, TJ_I8, TJ_I32, 0, B_, M, N, K, acc, 0, 1);
            if (small)
                run(dev, dot_f16_f16, TJ_F16, TJ_F16, 0, B_, M, N, K, !acc, 0, 1);
        }
    for (int p = 0; p < 3; p++)
        run(dev, dot_f32, TJ_F32, TJ_F32, p, 1, 32, 32, 32, 1, 0, 0);
    run(dev, dot_f16, TJ_F16, TJ_F32, 0, 1, 32, 64, 16, 1, 1, 0);
    run(dev, dot_f32, TJ_F32, TJ_F32, 0, 1, 64, 16, 32, 0, 1, 0);
    loop_case(dev, 32, 32, 16, 5);
    loop_case(dev, 64, 64, 32, 3);
    ptr_loop_case(dev, 32, 64, 16, 4);
    ptr_loop_case(dev, 16, 16, 16, 0);

    for (int stages = -1; stages <= 9; stages += 10) {
        tj_buffer bx = tl_poisoned(dev, 64);
        tj_arg args[] = {TJ_ARG_BUF(bx), TJ_ARG_BUF(bx), TJ_ARG_BUF(bx), TJ_ARG_I32(1)};
        tj_status st = tj_launch(dev, dot_loop, &(tj_launch_cfg){.grid = {1}, .num_stages = stages}, args, 4,
                                 (int64_t[]){16, 16, 16}, 3);
        tap_ok(st == TJ_ERR_LAUNCH && tl_error_mentions("dot_loop", "num_stages", NULL),
               "num_stages = %d is refused (%s)", stages, tj_status_name(st));
        tj_buffer_free(dev, bx);
    }
    error_case(0, TJ_ERR_SHAPE, "K");
    error_case(1, TJ_ERR_SHAPE, "[M, K] x [K, N]");
    error_case(2, TJ_ERR_TYPE, "dtypes differ");
    error_case(3, TJ_ERR_SHAPE, "at least 16");
    error_case(4, TJ_ERR_TYPE, "no dot of i32");
    error_case(5, TJ_ERR_TYPE, "gives i32");
    error_case(6, TJ_ERR_TYPE, "applies to f32");
    error_case(7, TJ_ERR_SHAPE, "accumulator");
    error_case(8, TJ_ERR_TYPE, "gives f32");
    tj_device_close(dev);
    return tap_done();
}
