/* SPDX-License-Identifier: MIT */
/*
 * test_stream_k.c — stream-K (src/passes/stream_k.c, src/jit/gpu/
 * stream_k.c): a persistent matmul's last wave split along K into pieces
 * that the last to arrive sums.
 *
 * Without a GPU (the PTX, assembled by ptxas where make check sets
 * TJIT_PTXAS):
 *  - the block-pointer matmul, warp-specialized on sm_90a: its pieces
 *    arrive with an acquire read, a fenced acq_rel count and bar.red.or
 *    among the consumers (named barrier 1), its artifact asks for a
 *    workspace of 128x128 f32 pieces, and its TMA copies stay;
 *  - the benchmark's bf16 kernel at 128x256x64: no spills (ptxas -v), and
 *    its C still goes by a TMA store (the sum keeps the dot's layout);
 *  - forced persistent on sm_80 (no producer warpgroup): barrier 0;
 *  - required of a kernel whose K loop carries pointer tiles (the
 *    tutorial's): refused, saying why.
 * On any device (the GPU when tests/gpu-test.sh runs it; the CPU ignores
 * the option), C checked element by element with C poisoned, stream-K
 * required:
 *  - fewer tiles than programs (each tile in pieces of 2 or 3 programs),
 *    K of one iteration (programs with no iteration at all), ragged
 *    edges over more tiles than a wave, a long K, and many waves; each
 *    launched twice (the first must leave the counters zero);
 *  - two streams at once (a workspace each), and a stream made after one
 *    is destroyed;
 *  - a launch value that is no tj_stream_k, and stream-K required of a
 *    launch that is not persistent (a GPU's matter), are refused.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builder/ir.h"
#include "ffi_bind/ffi_bind.h"
#include "jit/pipeline.h"
#include "jit/runtime/ptxas.h"
#include "tap.h"
#include "testlib.h"
#include "tjit.h"
#include "../samples/matmul_kernel.h"

TJ_KERNEL(sk_matmul,
          TJ_PARAMS(TJ_PTR(a, f16), TJ_PTR(b, f16), TJ_PTR(c, f32), TJ_SCALAR(M, i32), TJ_SCALAR(N, i32),
                    TJ_SCALAR(K, i32), TJ_SCALAR(stride_am, i32), TJ_SCALAR(stride_ak, i32),
                    TJ_SCALAR(stride_bk, i32), TJ_SCALAR(stride_bn, i32), TJ_SCALAR(stride_cm, i32),
                    TJ_SCALAR(stride_cn, i32)),
          TJ_CONSTS(BM, BN, BK, GROUP))
{
    matmul_block_ptr_body(a, b, c, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn, BM,
                          BN, BK, GROUP, TJ_PRECISION_IEEE, TJ_F32);
}

TJ_KERNEL(sk_bf16,
          TJ_PARAMS(TJ_PTR(a, bf16), TJ_PTR(b, bf16), TJ_PTR(c, bf16), TJ_SCALAR(M, i32), TJ_SCALAR(N, i32),
                    TJ_SCALAR(K, i32), TJ_SCALAR(stride_am, i32), TJ_SCALAR(stride_ak, i32),
                    TJ_SCALAR(stride_bk, i32), TJ_SCALAR(stride_bn, i32), TJ_SCALAR(stride_cm, i32),
                    TJ_SCALAR(stride_cn, i32)),
          TJ_CONSTS(BM, BN, BK, GROUP))
{
    matmul_block_ptr_body(a, b, c, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn, BM,
                          BN, BK, GROUP, TJ_PRECISION_IEEE, TJ_BF16);
}

/* The tutorial's loop: pointer tiles advanced, not block pointers. */
MATMUL_TUTORIAL_KERNEL(sk_tutorial, f16, f16, f32, TJ_F32, TJ_PRECISION_IEEE)

static tj_device *dev;

static uint64_t spec_4096(const tj_kernel *k)
{
    enum { NARGS = 12 };
    const tj_arg none = TJ_ARG_BUF((tj_buffer){0});
    tj_arg args[NARGS] = {none, none, none, TJ_ARG_I32(4096), TJ_ARG_I32(4096), TJ_ARG_I32(4096),
                          TJ_ARG_I32(4096), TJ_ARG_I32(1), TJ_ARG_I32(4096), TJ_ARG_I32(1), TJ_ARG_I32(4096),
                          TJ_ARG_I32(1)};
    tjf_value values[NARGS];
    if (tjf_check_args(k, args, NARGS, values) != TJ_OK)
        return tjj_spec_of_buffers(k);
    return tjf_spec_key(k, values) | tjj_spec_of_buffers(k);
}

/* Kernel k's artifact at BM x BN x 64 (groups of 8), 8 warps, for sm_<sm>[a],
 * persistent as mode says, stream-K required; ptxas checks it where it is set. */
static tj_status compile(const tj_kernel *k, int64_t bm, int64_t bn, int sm, int arch_specific,
                         tjp_persistence mode, tjj_artifact *art)
{
    int64_t consts[4] = {bm, bn, 64, 8};
    tji_func *fn = NULL;
    memset(art, 0, sizeof *art);
    tj_status st = tji_build(k, consts, 4, &fn);
    if (st == TJ_OK)
        st = tjj_compile_gpu(fn, &(tjj_gpu_target){.sm = sm, .arch_specific = arch_specific, .num_warps = 8,
                                                   .spec = spec_4096(k),
                                                   .persistent = (int)mode | TJP_STREAM_K_REQUIRED},
                             art);
    if (st == TJ_OK && tjj_ptxas_path())
        st = tjj_ptxas_check(tjj_ptxas_path(), art->gpu.ptx, sm, arch_specific, fn->name);
    tji_func_free(fn);
    return st;
}

static void ptx_of_stream_k(void)
{
    tjj_artifact art;
    tj_status st = compile(sk_matmul, 128, 128, 90, 1, TJP_PERSIST_WHERE_IT_PAYS, &art);
    if (st != TJ_OK)
        tap_diag("%s", tj_last_error());
    const char *ptx = st == TJ_OK ? art.gpu.ptx : "";
    tap_ok(st == TJ_OK && art.gpu.persistent && art.gpu.producer_warps == 4 &&
               art.gpu.stream_k_piece_bytes == 128 * 128 * 4,
           "sm_90a: persistent, warp-specialized, pieces of 128x128 f32 (%lld bytes)",
           (long long)art.gpu.stream_k_piece_bytes);
    tap_ok(strstr(ptx, "ld.acquire.gpu.global.u32") && strstr(ptx, "fence.acq_rel.gpu") &&
               strstr(ptx, "atom.acq_rel.gpu.global.add.u32") && strstr(ptx, "bar.red.or.pred"),
           "a piece arrives: acquire read, fenced acq_rel count, bar.red.or");
    tap_ok(strstr(ptx, "bar.red.or.pred q, 1, 256, p;") != NULL,
           "among the consumers only (named barrier 1, 256 threads)");
    tap_ok(strstr(ptx, "cp.async.bulk.tensor.2d.shared::cluster.global") != NULL,
           "its loads stay TMA copies");
    tjj_artifact_free(&art);

    const char *ptxas = tjj_ptxas_path();
    st = compile(sk_bf16, 128, 256, 90, 1, TJP_PERSIST_WHERE_IT_PAYS, &art);
    if (st != TJ_OK)
        tap_diag("%s", tj_last_error());
    long spills = st == TJ_OK && ptxas ? tl_ptxas_spills(ptxas, art.gpu.ptx) : -1;
    tap_ok(st == TJ_OK && (!ptxas || spills == 0),
           "the benchmark's bf16 128x256x64 kernel: ptxas -v reports no spills (%ld bytes)", spills);
    tap_ok(st == TJ_OK && strstr(art.gpu.ptx, "cp.async.bulk.tensor.2d.global.shared::cta") != NULL,
           "its C goes by a TMA store");
    tjj_artifact_free(&art);

    st = compile(sk_matmul, 128, 128, 80, 0, TJP_PERSIST_ALWAYS, &art);
    if (st != TJ_OK)
        tap_diag("%s", tj_last_error());
    tap_ok(st == TJ_OK && strstr(art.gpu.ptx, "bar.red.or.pred q, 0, p;") && art.gpu.producer_warps == 0 &&
               art.gpu.stream_k_piece_bytes > 0,
           "sm_80, persistent by force: every thread meets at barrier 0");
    tjj_artifact_free(&art);

    st = compile(sk_tutorial, 128, 128, 90, 1, TJP_PERSIST_ALWAYS, &art);
    tap_ok(st == TJ_ERR_LAUNCH && strstr(tj_last_error(), "sk_tutorial") && strstr(tj_last_error(), "stream-K") &&
               strstr(tj_last_error(), "carries"),
           "required of the tutorial's loop (pointer tiles): refused (%s)", tj_last_error());
    tjj_artifact_free(&art);
}

/* C = A B (f16 small integers, exact in f32) in 128x128x64 tiles, groups
 * of 8, stream-K required: one problem's buffers and expected values. */
typedef struct problem {
    int m, n, k;
    int8_t *ia, *ib;
    float *hc;
    tj_buffer a, b, c;
    int ok;
} problem;

static problem make(int m, int n, int k)
{
    problem p = {m, n, k, malloc((size_t)m * k), malloc((size_t)k * n), malloc((size_t)m * n * 4), {0}, {0}, {0}, 0};
    size_t a_count = (size_t)m * k, b_count = (size_t)k * n;
    uint16_t *ha = malloc(a_count * 2), *hb = malloc(b_count * 2);
    tl_small_int_f16(a_count, p.ia, ha);
    tl_small_int_f16(b_count, p.ib, hb);
    p.ok = tj_buffer_alloc(dev, a_count * 2, &p.a) == TJ_OK && tj_buffer_alloc(dev, b_count * 2, &p.b) == TJ_OK &&
           tj_buffer_alloc(dev, (size_t)m * n * 4, &p.c) == TJ_OK &&
           tj_buffer_write(dev, p.a, 0, ha, a_count * 2) == TJ_OK &&
           tj_buffer_write(dev, p.b, 0, hb, b_count * 2) == TJ_OK;
    free(ha), free(hb);
    return p;
}

/* C poisoned, then the launch on `stream` (NULL: the default). */
static tj_status launch(problem *p, tj_stream *stream)
{
    memset(p->hc, 0xff, (size_t)p->m * p->n * 4);
    tj_status st = p->ok ? tj_buffer_write(dev, p->c, 0, p->hc, (size_t)p->m * p->n * 4) : TJ_ERR_LAUNCH;
    int64_t consts[4] = {128, 128, 64, 8};
    tj_launch_cfg cfg = {.grid = {(p->m + 127) / 128 * ((p->n + 127) / 128)}, .num_warps = 8, .stream = stream,
                         .persistent = TJ_PERSISTENT_ON, .version = TJ_LAUNCH_CFG_VERSION,
                         .stream_k = TJ_STREAM_K_ON};
    tj_arg args[12] = {TJ_ARG_BUF(p->a), TJ_ARG_BUF(p->b), TJ_ARG_BUF(p->c), TJ_ARG_I32(p->m), TJ_ARG_I32(p->n),
                       TJ_ARG_I32(p->k), TJ_ARG_I32(p->k), TJ_ARG_I32(1), TJ_ARG_I32(p->n), TJ_ARG_I32(1),
                       TJ_ARG_I32(p->n), TJ_ARG_I32(1)};
    return st == TJ_OK ? tj_launch(dev, sk_matmul, &cfg, args, 12, consts, 4) : st;
}

/* C read back (after the device is done) and checked: 1 where right. */
static int right(problem *p, tj_status st, const char *what)
{
    if (st == TJ_OK)
        st = tj_synchronize(dev);
    if (st == TJ_OK)
        st = tj_buffer_read(dev, p->c, 0, p->hc, (size_t)p->m * p->n * 4);
    long bad = st == TJ_OK ? tl_first_wrong_product(p->ia, p->ib, p->hc, p->m, p->n, p->k, p->k) : -1;
    if (st != TJ_OK)
        tap_diag("%s: %s: %s", what, tj_status_name(st), tj_last_error());
    else if (bad >= 0)
        tap_diag("%s: C[%ld][%ld] = %g", what, bad / p->n, bad % p->n, p->hc[bad]);
    return st == TJ_OK && bad < 0;
}

static void drop(problem *p)
{
    tj_buffer_free(dev, p->a);
    tj_buffer_free(dev, p->b);
    tj_buffer_free(dev, p->c);
    free(p->ia), free(p->ib), free(p->hc);
}

/* Launched twice: the first launch must leave the counters zero for the second. */
static void run(int m, int n, int k, const char *what)
{
    problem p = make(m, n, k);
    int ok = right(&p, launch(&p, NULL), what) && right(&p, launch(&p, NULL), what);
    tap_ok(p.ok && ok, "%s: %d x %d x %d, launched twice", what, m, n, k);
    drop(&p);
}

/* Two streams at once, each with its own workspace; then a stream made
 * after one is destroyed (its handle may be the old one's). */
static void streams(void)
{
    problem p = make(2000, 2608, 208), q = make(1024, 1024, 1024);
    tj_stream *s1 = NULL, *s2 = NULL, *s3 = NULL;
    int made = tj_stream_create(dev, &s1) == TJ_OK && tj_stream_create(dev, &s2) == TJ_OK;
    tj_status sp = made ? launch(&p, s1) : TJ_ERR_LAUNCH, sq = made ? launch(&q, s2) : TJ_ERR_LAUNCH;
    int ok = right(&p, sp, "stream 1") & right(&q, sq, "stream 2");
    tap_ok(made && ok, "two streams at once, a workspace each: both right");
    tj_stream_destroy(s1);
    made = tj_stream_create(dev, &s3) == TJ_OK;
    ok = made && right(&p, launch(&p, s3), "a later stream") && right(&q, launch(&q, s2), "stream 2 again");
    tap_ok(ok, "a stream made after one is destroyed, and the other again: both right");
    tj_stream_destroy(s2);
    tj_stream_destroy(s3);
    drop(&p);
    drop(&q);
}

static void refusals(void)
{
    int64_t consts[4] = {128, 128, 64, 8};
    tj_buffer none = {0};
    tj_arg args[12] = {TJ_ARG_BUF(none), TJ_ARG_BUF(none), TJ_ARG_BUF(none), TJ_ARG_I32(0), TJ_ARG_I32(0),
                       TJ_ARG_I32(0), TJ_ARG_I32(0), TJ_ARG_I32(1), TJ_ARG_I32(0), TJ_ARG_I32(1), TJ_ARG_I32(0),
                       TJ_ARG_I32(1)};
    tj_launch_cfg cfg = {.grid = {1}, .version = TJ_LAUNCH_CFG_VERSION, .stream_k = (tj_stream_k)7};
    tj_status st = tj_launch(dev, sk_matmul, &cfg, args, 12, consts, 4);
    tap_ok(st == TJ_ERR_INVALID_ARG && strstr(tj_last_error(), "sk_matmul") && strstr(tj_last_error(), "stream_k"),
           "a stream_k value that is no tj_stream_k: refused (%s)", tj_last_error());
    if (tj_device_get_kind(dev) != TJ_DEVICE_GPU) {
        tap_skip(1, "stream-K required of a launch that is not persistent: a GPU's matter");
        return;
    }
    cfg = (tj_launch_cfg){.grid = {1}, .persistent = TJ_PERSISTENT_OFF, .version = TJ_LAUNCH_CFG_VERSION,
                          .stream_k = TJ_STREAM_K_ON};
    st = tj_launch(dev, sk_matmul, &cfg, args, 12, consts, 4);
    tap_ok(st == TJ_ERR_LAUNCH && strstr(tj_last_error(), "sk_matmul") && strstr(tj_last_error(), "persistent"),
           "stream-K required of a launch that is not persistent: refused (%s)", tj_last_error());
}

int main(void)
{
    dev = tl_setup("test_stream_k");
    tap_plan(17);
    ptx_of_stream_k();
    run(1024, 1024, 256, "64 tiles, fewer than the programs: pieces of 2 or 3 programs");
    run(1024, 1024, 64, "K of one iteration: programs with no iteration");
    run(2000, 2608, 208, "336 ragged tiles, more than a wave");
    run(1024, 1024, 4096, "64 tiles of 64 iterations");
    run(4096, 4096, 512, "1024 tiles, many waves");
    streams();
    refusals();
    tj_device_close(dev);
    return tap_done();
}
