/* SPDX-License-Identifier: MIT */
/*
 * test_cluster_pairs.c — block pairs (src/passes/cluster_pairs.c): a
 * persistent, warp-specialized matmul on sm_90a runs as clusters of two
 * blocks that multicast the tiles both copy.
 *
 * Without a GPU (the PTX, assembled by ptxas where make check sets
 * TJIT_PTXAS):
 *  - the block-pointer matmul made persistent, its tile count even: the
 *    kernel asks for clusters of 2 (.reqnctapercluster), starts with a
 *    cluster barrier, multicasts copies, releases slots in the peer
 *    (mapa, an arrive without .release.cluster, whose memory barrier
 *    stalled the paired kernel on an H100), and its artifact says 2 blocks a
 *    cluster; every tensor load is one multicast instruction a box, its
 *    mask naming both blocks or its own; A's copy of one 128-row column
 *    block is halved into two
 *    64-row boxes (its tensor map's box), B's two column blocks are not;
 *  - the benchmark's bf16 kernel at 128x256x64 in pairs: no spills (ptxas -v);
 *  - none where the tile count is odd, where the launch turns pairs off,
 *    on sm_90 (no multicast), or as written (not persistent); a launch
 *    that requires pairs where none can be made fails saying why.
 * On any device (the GPU when tests/gpu-test.sh runs it), checked element
 * by element against C with C poisoned (the CPU ignores the option), pairs
 * asked for (TJ_CLUSTER_ON; the launch's default leaves blocks alone:
 * pairs measured no faster):
 *  - tile orders in which a pair shares B (groups of 8 rows), shares A
 *    (groups of 1: row-major tiles), or shares either only in some pairs
 *    (groups of 3 on 4 tile rows: a group ends between a pair's tiles);
 *  - more tiles than resident blocks (pairs walk many tiles: each slot's
 *    phases wrap across tiles), ragged edges (the halves of a box past
 *    M or N read zeros), and an odd tile count (blocks alone);
 *  - pairs required (TJ_CLUSTER_ON) on an odd tile count, and a cluster
 *    value that is no tj_cluster, are refused naming the kernel;
 *  - on a GPU, TJIT_BLOCK_PAIRS=1 when a device opens: its default launch
 *    compiles a paired kernel (the PTX dumped) and stays right — with
 *    TJIT_STREAM_K=1 too, whose default yields to pairs (the two refuse
 *    each other; the required pairs of that device's TJ_CLUSTER_ON launch
 *    once failed, stream-K's default having split the tiles).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builder/ir.h"
#include "ffi_bind/ffi_bind.h"
#include "jit/pipeline.h"
#include "jit/runtime/ptxas.h"
#include "matmul_spec.h"
#include "tap.h"
#include "testlib.h"
#include "tjit.h"
#include "../samples/matmul_kernel.h"

/* The block-pointer matmul with the tile order's group of rows as a
 * constant (the benchmark's kernel). */
TJ_KERNEL(pair_matmul,
          TJ_PARAMS(TJ_PTR(a, f16), TJ_PTR(b, f16), TJ_PTR(c, f32), TJ_SCALAR(M, i32), TJ_SCALAR(N, i32),
                    TJ_SCALAR(K, i32), TJ_SCALAR(stride_am, i32), TJ_SCALAR(stride_ak, i32),
                    TJ_SCALAR(stride_bk, i32), TJ_SCALAR(stride_bn, i32), TJ_SCALAR(stride_cm, i32),
                    TJ_SCALAR(stride_cn, i32)),
          TJ_CONSTS(BM, BN, BK, GROUP))
{
    matmul_block_ptr_body(a, b, c, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn, BM,
                          BN, BK, GROUP, TJ_PRECISION_IEEE, TJ_F32);
}

/* The benchmark's bf16 kernel (bf16 in, bf16 C). */
TJ_KERNEL(pair_bf16,
          TJ_PARAMS(TJ_PTR(a, bf16), TJ_PTR(b, bf16), TJ_PTR(c, bf16), TJ_SCALAR(M, i32), TJ_SCALAR(N, i32),
                    TJ_SCALAR(K, i32), TJ_SCALAR(stride_am, i32), TJ_SCALAR(stride_ak, i32),
                    TJ_SCALAR(stride_bk, i32), TJ_SCALAR(stride_bn, i32), TJ_SCALAR(stride_cm, i32),
                    TJ_SCALAR(stride_cn, i32)),
          TJ_CONSTS(BM, BN, BK, GROUP))
{
    matmul_block_ptr_body(a, b, c, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn, BM,
                          BN, BK, GROUP, TJ_PRECISION_IEEE, TJ_BF16);
}

static tj_device *dev;

/* Kernel k's artifact at BM x BN x 64 (groups of 8), 8 warps, for
 * sm_90[a] with persistence mode, cluster and pairs_allowed; ptxas checks
 * it where it is set. */
static tj_status compile_at(const tj_kernel *k, int64_t bm, int64_t bn, int arch_specific, tjp_persistence mode,
                            tj_cluster cluster, int allowed, tjj_artifact *art)
{
    int64_t consts[4] = {bm, bn, 64, 8};
    tji_func *fn = NULL;
    memset(art, 0, sizeof *art);
    tj_status st = tji_build(k, consts, 4, &fn);
    if (st == TJ_OK)
        st = tjj_compile_gpu(fn, &(tjj_gpu_target){.sm = 90, .arch_specific = arch_specific, .num_warps = 8,
                                                   .spec = tl_matmul_spec(k, 4096), .persistent = mode,
                                                   .cluster = cluster, .pairs_allowed = allowed},
                             art);
    if (st == TJ_OK && tjj_ptxas_path())
        st = tjj_ptxas_check(tjj_ptxas_path(), art->gpu.ptx, 90, arch_specific, fn->name);
    tji_func_free(fn);
    return st;
}

/* The 128x128x64 f16 kernel's. */
static tj_status compile(int arch_specific, tjp_persistence mode, tj_cluster cluster, int allowed, tjj_artifact *art)
{
    return compile_at(pair_matmul, 128, 128, arch_specific, mode, cluster, allowed, art);
}

/* The benchmark's bf16 kernel at 128x256x64 in pairs: the producer's
 * second evaluation of the tile order and its halved copies must cost the
 * consumers no spills. */
static void bf16_128x256(void)
{
    const char *ptxas = tjj_ptxas_path();
    if (!ptxas) {
        tap_skip(1, "the paired bf16 128x256x64 kernel's spills: no ptxas (TJIT_PTXAS)");
        return;
    }
    tjj_artifact art;
    tj_status st = compile_at(pair_bf16, 128, 256, 1, TJP_PERSIST_WHERE_IT_PAYS, TJ_CLUSTER_ON, 1, &art);
    if (st != TJ_OK)
        tap_diag("%s", tj_last_error());
    long spills = st == TJ_OK ? tl_ptxas_spills(ptxas, art.gpu.ptx) : -1;
    tap_ok(st == TJ_OK && art.gpu.cluster == 2 && spills == 0,
           "the benchmark's bf16 128x256x64 kernel in pairs: ptxas -v reports no spills (%ld bytes)", spills);
    tjj_artifact_free(&art);
}

static void ptx_of_pairs(void)
{
    tjj_artifact art;
    tj_status st = compile(1, TJP_PERSIST_WHERE_IT_PAYS, TJ_CLUSTER_DEFAULT, 1, &art);
    const char *ptx = st == TJ_OK ? art.gpu.ptx : "";
    if (st != TJ_OK)
        tap_diag("%s", tj_last_error());
    tap_ok(st == TJ_OK && art.gpu.cluster == 2 && art.gpu.persistent && strstr(ptx, ".reqnctapercluster 2, 1, 1"),
           "persistent, an even tile count: clusters of 2 blocks (.reqnctapercluster 2, 1, 1; the artifact's %d)",
           art.gpu.cluster);
    tap_ok(strstr(ptx, "barrier.cluster.arrive") && strstr(ptx, "barrier.cluster.wait"),
           "the blocks of a pair meet once their mbarriers are set up");
    tap_ok(tl_count(ptx, ".multicast::cluster") >= 2 && tl_count(ptx, "mapa.shared::cluster") >= 1 &&
               strstr(ptx, "@p mbarrier.arrive.shared::cluster.b64 _, [remote];") && !strstr(ptx, "release.cluster.shared") &&
               !strstr(ptx, "acquire.cluster"),
           "copies multicast (%d in the PTX); consumers release each slot in the peer too, at the default "
           "(block) scope: no cluster-scope release or acquire, whose memory barriers stall",
           tl_count(ptx, ".multicast::cluster"));
    int loads = tl_count(ptx, "global.tile.mbarrier::complete_tx::bytes"),
        multicast_loads = tl_count(ptx, "global.tile.mbarrier::complete_tx::bytes.multicast::cluster");
    tap_ok(loads > 0 && multicast_loads == loads,
           "one copy instruction a box, multicast to both blocks or to its own alone by a mask: "
           "%d of %d tensor loads multicast (two a box, plain and multicast, made the producer the "
           "paired kernel's bottleneck)", multicast_loads, loads);
    tap_ok(art.gpu.ntmaps >= 2 && art.gpu.tmaps[0].box[0] == 64 && art.gpu.tmaps[0].box[1] == 64 &&
               art.gpu.tmaps[1].box[0] == 64 && art.gpu.tmaps[1].box[1] == 64,
           "A's one column block of 128 rows goes as two 64-row boxes; B's two column blocks as they were "
           "(boxes %ux%u and %ux%u)",
           art.gpu.ntmaps ? art.gpu.tmaps[0].box[0] : 0, art.gpu.ntmaps ? art.gpu.tmaps[0].box[1] : 0,
           art.gpu.ntmaps > 1 ? art.gpu.tmaps[1].box[0] : 0, art.gpu.ntmaps > 1 ? art.gpu.tmaps[1].box[1] : 0);
    tjj_artifact_free(&art);

    struct {
        int arch_specific;
        tjp_persistence mode;
        tj_cluster cluster;
        int allowed;
        const char *what;
    } alone[] = {
        {1, TJP_PERSIST_WHERE_IT_PAYS, TJ_CLUSTER_DEFAULT, 0, "an odd tile count"},
        {1, TJP_PERSIST_WHERE_IT_PAYS, TJ_CLUSTER_OFF, 1, "pairs turned off by the launch"},
        {0, TJP_PERSIST_ALWAYS, TJ_CLUSTER_DEFAULT, 1, "sm_90 (no TMA, no multicast)"},
        {1, TJP_PERSIST_NEVER, TJ_CLUSTER_DEFAULT, 1, "not persistent"},
    };
    for (size_t i = 0; i < sizeof alone / sizeof *alone; i++) {
        st = compile(alone[i].arch_specific, alone[i].mode, alone[i].cluster, alone[i].allowed, &art);
        ptx = st == TJ_OK ? art.gpu.ptx : "";
        tap_ok(st == TJ_OK && !art.gpu.cluster && !strstr(ptx, ".reqnctapercluster") && !strstr(ptx, "multicast") &&
                   !strstr(ptx, "mapa"),
               "%s: blocks alone", alone[i].what);
        tjj_artifact_free(&art);
    }
    st = compile(1, TJP_PERSIST_WHERE_IT_PAYS, TJ_CLUSTER_ON, 0, &art);
    tap_ok(st == TJ_ERR_UNSUPPORTED && strstr(tj_last_error(), "TJ_CLUSTER_ON") &&
               strstr(tj_last_error(), "tile count is odd"),
           "pairs required where the tile count is odd: refused (%s)", tj_last_error());
    tjj_artifact_free(&art);
}

/* C = A B (f16 small integers, exact in f32) in 128x128x64 tiles walked
 * in groups of `group` tile rows, on `programs` persistent programs (0:
 * one per tile, made persistent by the launch), pairs as cluster says. */
static int run(int m, int n, int k, int group, tj_cluster cluster, const char *what)
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
    int64_t consts[4] = {128, 128, 64, group};
    tj_launch_cfg cfg = {.grid = {(m + 127) / 128 * ((n + 127) / 128)}, .num_warps = 8,
                         .version = TJ_LAUNCH_CFG_VERSION, .cluster = cluster};
    tj_arg args[12] = {TJ_ARG_BUF(a), TJ_ARG_BUF(b), TJ_ARG_BUF(c), TJ_ARG_I32(m), TJ_ARG_I32(n), TJ_ARG_I32(k),
                       TJ_ARG_I32(k), TJ_ARG_I32(1), TJ_ARG_I32(n), TJ_ARG_I32(1), TJ_ARG_I32(n), TJ_ARG_I32(1)};
    tj_status st = ok ? tj_launch(dev, pair_matmul, &cfg, args, 12, consts, 4) : TJ_ERR_LAUNCH;
    if (st == TJ_OK)
        st = tj_buffer_read(dev, c, 0, hc, c_count * 4);
    long bad = st == TJ_OK ? tl_first_wrong_product(ia, ib, hc, m, n, k, k) : -1;
    if (st != TJ_OK)
        tap_diag("%s: %s: %s", what, tj_status_name(st), tj_last_error());
    else if (bad >= 0)
        tap_diag("%s: C[%ld][%ld] = %g", what, bad / n, bad % n, hc[bad]);
    tj_buffer_free(dev, a);
    tj_buffer_free(dev, b);
    tj_buffer_free(dev, c);
    free(ha), free(hb), free(hc), free(ia), free(ib);
    return tap_ok(ok && st == TJ_OK && bad < 0, "%s: %d x %d x %d", what, m, n, k);
}

/* TJIT_BLOCK_PAIRS=1 and TJIT_STREAM_K=1, read when a device opens: that
 * device's default launch pairs the blocks (the PTX it compiles, dumped,
 * multicasts; stream-K's default yields) and stays right, and a launch
 * that requires pairs gets them. A GPU's matter: the CPU ignores pairs. */
static void pairs_by_environment(void)
{
    if (tj_device_get_kind(dev) != TJ_DEVICE_GPU) {
        tap_skip(3, "TJIT_BLOCK_PAIRS=1: a GPU's default (the CPU ignores pairs)");
        return;
    }
    const char *split = getenv("TJIT_STREAM_K");
    char *saved_split = split ? strdup(split) : NULL;
    setenv("TJIT_BLOCK_PAIRS", "1", 1);
    setenv("TJIT_STREAM_K", "1", 1);
    tj_device *alone = dev, *paired = NULL;
    tj_status st = tj_device_open(&paired, TJ_DEVICE_GPU, 0);
    unsetenv("TJIT_BLOCK_PAIRS");
    saved_split ? setenv("TJIT_STREAM_K", saved_split, 1) : unsetenv("TJIT_STREAM_K");
    free(saved_split);
    if (st != TJ_OK) {
        tap_ok(0, "TJIT_BLOCK_PAIRS=1: a GPU opens (%s)", tj_last_error());
        tap_skip(2, "no second device");
        return;
    }
    const char *dump = getenv("TJIT_DUMP"), *cache = getenv("TJIT_CACHE");
    char *saved_dump = dump ? strdup(dump) : NULL, *saved_cache = cache ? strdup(cache) : NULL;
    setenv("TJIT_DUMP", "ptx", 1);
    setenv("TJIT_CACHE", "0", 1); /* compiled here, so dumped */
    tl_capture capture = tl_stderr_begin();
    dev = paired;
    run(1024, 1024, 256, 8, TJ_CLUSTER_DEFAULT, "TJIT_BLOCK_PAIRS=1 and TJIT_STREAM_K=1: the default launch, 64 tiles");
    dev = alone;
    char *said = tl_stderr_end(capture);
    saved_dump ? setenv("TJIT_DUMP", saved_dump, 1) : unsetenv("TJIT_DUMP");
    saved_cache ? setenv("TJIT_CACHE", saved_cache, 1) : unsetenv("TJIT_CACHE");
    tap_ok(said && strstr(said, ".reqnctapercluster") && strstr(said, ".multicast::cluster"),
           "TJIT_BLOCK_PAIRS=1 and TJIT_STREAM_K=1: the default launch's kernel is paired (its PTX multicasts)");
    free(said), free(saved_dump), free(saved_cache);
    dev = paired;
    run(1024, 1024, 256, 1, TJ_CLUSTER_ON, "TJIT_STREAM_K=1: pairs required, 64 tiles");
    dev = alone;
    tj_device_close(paired);
}

static void refusals(void)
{
    int64_t consts[4] = {128, 128, 64, 8};
    tj_buffer none = {0};
    tj_arg args[12] = {TJ_ARG_BUF(none), TJ_ARG_BUF(none), TJ_ARG_BUF(none), TJ_ARG_I32(0), TJ_ARG_I32(0),
                       TJ_ARG_I32(0), TJ_ARG_I32(0), TJ_ARG_I32(1), TJ_ARG_I32(0), TJ_ARG_I32(1), TJ_ARG_I32(0),
                       TJ_ARG_I32(1)};
    tj_launch_cfg cfg = {.grid = {1}, .version = TJ_LAUNCH_CFG_VERSION, .cluster = (tj_cluster)7};
    tj_status st = tj_launch(dev, pair_matmul, &cfg, args, 12, consts, 4);
    tap_ok(st == TJ_ERR_INVALID_ARG && strstr(tj_last_error(), "pair_matmul") && strstr(tj_last_error(), "cluster"),
           "a cluster value that is no tj_cluster: refused (%s)", tj_last_error());
}

int main(void)
{
    dev = tl_setup("test_cluster_pairs");
    tap_plan(23);
    ptx_of_pairs();
    bf16_128x256();
    run(1024, 1024, 256, 8, TJ_CLUSTER_ON, "pairs share B (groups of 8 tile rows), 64 tiles");
    run(1024, 1024, 256, 1, TJ_CLUSTER_ON, "pairs share A (row-major tiles, groups of 1)");
    run(512, 1536, 320, 3, TJ_CLUSTER_ON, "groups of 3 on 4 tile rows: some pairs share nothing");
    /* N and K multiples of 16 elements, as the specialization must see
     * them for TMA's strides (2600 and 200 left the GPU without TMA, so
     * without a producer warpgroup: the required pairs were refused) */
    run(2000, 2608, 208, 8, TJ_CLUSTER_ON,
        "336 ragged tiles, more than the blocks resident at once (halves of boxes past M and N)");
    run(1000, 1000, 64 * 13, 8, TJ_CLUSTER_DEFAULT, "an odd tile count (49): blocks alone");
    run(1024, 1024, 256, 8, TJ_CLUSTER_OFF, "pairs turned off by the launch");
    run(1024, 1024, 256, 8, TJ_CLUSTER_DEFAULT, "the launch's default (blocks alone)");
    if (tj_device_get_kind(dev) == TJ_DEVICE_GPU) {
        int64_t consts[4] = {128, 128, 64, 8};
        tj_launch_cfg cfg = {.grid = {49}, .num_warps = 8, .version = TJ_LAUNCH_CFG_VERSION,
                             .cluster = TJ_CLUSTER_ON};
        tj_buffer none = {0};
        tj_arg args[12] = {TJ_ARG_BUF(none), TJ_ARG_BUF(none), TJ_ARG_BUF(none), TJ_ARG_I32(0), TJ_ARG_I32(0),
                           TJ_ARG_I32(0), TJ_ARG_I32(0), TJ_ARG_I32(1), TJ_ARG_I32(0), TJ_ARG_I32(1),
                           TJ_ARG_I32(0), TJ_ARG_I32(1)};
        tj_status st = tj_launch(dev, pair_matmul, &cfg, args, 12, consts, 4);
        tap_ok(st != TJ_OK && strstr(tj_last_error(), "pair_matmul"),
               "pairs required on an odd tile count: refused (%s)", tj_last_error());
    } else {
        tap_skip(1, "pairs required on an odd tile count: a GPU launch (the CPU ignores the option)");
    }
    pairs_by_environment();
    refusals();
    tj_device_close(dev);
    return tap_done();
}
