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
 *    edges over more tiles than a wave, a long K, and many waves;
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
 * of 8, stream-K required. */
static int run(int m, int n, int k, const char *what)
{
    size_t a_count = (size_t)m * k, b_count = (size_t)k * n, c_count = (size_t)m * n;
    uint16_t *ha = malloc(a_count * 2), *hb = malloc(b_count * 2);
    float *hc = malloc(c_count * 4);
    int8_t *ia = malloc(a_count), *ib = malloc(b_count);
    tl_small_int_f16(a_count, ia, ha);
    tl_small_int_f16(b_count, ib, hb);
    memset(hc, 0xff, c_count * 4);
    tj_buffer a, b, c;
    int ok = tj_buffer_alloc(dev, a_count * 2, &a) == TJ_OK && tj_buffer_alloc(dev, b_count * 2, &b) == TJ_OK &&
             tj_buffer_alloc(dev, c_count * 4, &c) == TJ_OK;
    ok = ok && tj_buffer_write(dev, a, 0, ha, a_count * 2) == TJ_OK &&
         tj_buffer_write(dev, b, 0, hb, b_count * 2) == TJ_OK && tj_buffer_write(dev, c, 0, hc, c_count * 4) == TJ_OK;
    int64_t consts[4] = {128, 128, 64, 8};
    tj_launch_cfg cfg = {.grid = {(m + 127) / 128 * ((n + 127) / 128)}, .num_warps = 8,
                         .persistent = TJ_PERSISTENT_ON, .version = TJ_LAUNCH_CFG_VERSION,
                         .stream_k = TJ_STREAM_K_ON};
    tj_arg args[12] = {TJ_ARG_BUF(a), TJ_ARG_BUF(b), TJ_ARG_BUF(c), TJ_ARG_I32(m), TJ_ARG_I32(n), TJ_ARG_I32(k),
                       TJ_ARG_I32(k), TJ_ARG_I32(1), TJ_ARG_I32(n), TJ_ARG_I32(1), TJ_ARG_I32(n), TJ_ARG_I32(1)};
    tj_status st = TJ_ERR_LAUNCH;
    long bad = -1;
    /* twice: the first launch must leave the counters zero for the second */
    for (int round = 0; ok && round < 2 && (round == 0 || (st == TJ_OK && bad < 0)); round++) {
        memset(hc, 0xff, c_count * 4);
        st = tj_buffer_write(dev, c, 0, hc, c_count * 4);
        if (st == TJ_OK)
            st = tj_launch(dev, sk_matmul, &cfg, args, 12, consts, 4);
        if (st == TJ_OK)
            st = tj_buffer_read(dev, c, 0, hc, c_count * 4);
        bad = st == TJ_OK ? tl_first_wrong_product(ia, ib, hc, m, n, k, k) : -1;
    }
    if (st != TJ_OK)
        tap_diag("%s: %s: %s", what, tj_status_name(st), tj_last_error());
    else if (bad >= 0)
        tap_diag("%s: C[%ld][%ld] = %g", what, bad / n, bad % n, hc[bad]);
    tj_buffer_free(dev, a);
    tj_buffer_free(dev, b);
    tj_buffer_free(dev, c);
    free(ha), free(hb), free(hc), free(ia), free(ib);
    return tap_ok(ok && st == TJ_OK && bad < 0, "%s: %d x %d x %d, launched twice", what, m, n, k);
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
    tap_plan(15);
    ptx_of_stream_k();
    run(1024, 1024, 256, "64 tiles, fewer than the programs: pieces of 2 or 3 programs");
    run(1024, 1024, 64, "K of one iteration: programs with no iteration");
    run(2000, 2608, 208, "336 ragged tiles, more than a wave");
    run(1024, 1024, 4096, "64 tiles of 64 iterations");
    run(4096, 4096, 512, "1024 tiles, many waves");
    refusals();
    tj_device_close(dev);
    return tap_done();
}
