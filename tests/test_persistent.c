/* SPDX-License-Identifier: MIT */
/*
 * test_persistent.c — persistent kernels made by the pass
 * (src/passes/persistent.c) and the launch option that asks for them.
 *
 * Without a GPU (the PTX, assembled by ptxas where make check sets
 * TJIT_PTXAS):
 *  - forced on (TJP_PERSIST_ALWAYS), a kernel that writes its program id
 *    and count reads ctaid.x and nctaid.x once, before a loop, and takes
 *    one i32 parameter more, last;
 *  - where it pays (a launch's default): the block-pointer matmul on
 *    sm_90a becomes persistent and stays warp-specialized, at 128x256x64
 *    too (C's TMA store staged two boxes at a time), but not where C's
 *    row stride allows no TMA store (the rings and C's conversion would
 *    not fit shared memory together: it compiles as written); forced on,
 *    128x256x64 fits; on sm_90, the
 *    tutorial's pointer tiles, and tutorial 09's own tile loop (it reads
 *    num_programs) and a TF32 block-pointer matmul (its B may be the
 *    threads' copies, no producer) stay as they are;
 *  - made persistent, the block-pointer matmul's C is a TMA store inside
 *    the tile loop, staged in bytes that no ring takes, left in flight
 *    until the next trip's store waits for its read (and the loop's end
 *    for its writes); a block of more than two boxes is staged two at a
 *    time, each box its own bulk group after a wait for all but the last
 *    group's reads — by 8 warps in two bands of 64 rows, each warpgroup
 *    writing and storing its own behind a barrier of its 128 threads, the
 *    tensor map's box a band (16 warps at 256x128: four bands); there and
 *    as written, the threads write the accumulator to the staging block as
 *    it is, no conversion first;
 *  - a bf16 C of the made-persistent 128x256x64 kernel: ptxas -v reports
 *    no spills (the conversion's NaN rule once spilled 208 bytes); its
 *    epilogue tests for NaN one setp.nan a pair (a branch a pair once made
 *    that test 3.5 % of the kernel's time), and no select picks the
 *    accumulators' initial value for a loop that did not run.
 * On any device (the GPU when tests/gpu-test.sh runs it):
 *  - the ids kernel on 5000 programs with persistence forced on: every
 *    program's slot holds its id and the count 5000, read at the top of
 *    the body and inside a loop of it (on a GPU the launch
 *    runs a few hundred programs, each walking ~20 tiles; the CPU ignores
 *    the option);
 *  - forced on, a 2-D grid is refused on a GPU and ignored on the CPU;
 *    a persistent value that is no tj_persistent, a tj_launch_cfg version
 *    newer than the library's, and a kernel of another kernel ABI (one
 *    compiled against another tjit.h) are refused naming the kernel.
 * The matmul itself runs persistent in test_tma (ragged tiles, more tiles
 * than resident programs, specialized or not).
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

/* ids[p] = p, counts[p] = num_programs(0), for p < n; the counts from
 * inside a loop of the body, whose grid ops the pass must reach too. */
TJ_KERNEL(program_ids, TJ_PARAMS(TJ_PTR(ids, i32), TJ_PTR(counts, i32), TJ_SCALAR(n, i32)), TJ_CONSTS())
{
    tj_val p = tj_program_id(0);
    tj_store(tj_add(ids, p), p, .mask = tj_lt(p, n));
    TJ_FOR(once, 0, 1, 1) {
        tj_val q = tj_program_id(0);
        tj_store(tj_add(counts, q), tj_num_programs(0), .mask = tj_lt(q, n));
    }
}

MATMUL_BODY_KERNEL(bp_matmul, f16, f32, TJ_F32, matmul_block_ptr_body)
MATMUL_BODY_KERNEL(bp_bf16, bf16, bf16, TJ_BF16, matmul_block_ptr_body)

/* The block-pointer matmul in f32 with TF32 input precision. */
TJ_KERNEL(bp_tf32,
          TJ_PARAMS(TJ_PTR(a, f32), TJ_PTR(b, f32), TJ_PTR(c, f32), TJ_SCALAR(M, i32), TJ_SCALAR(N, i32),
                    TJ_SCALAR(K, i32), TJ_SCALAR(stride_am, i32), TJ_SCALAR(stride_ak, i32),
                    TJ_SCALAR(stride_bk, i32), TJ_SCALAR(stride_bn, i32), TJ_SCALAR(stride_cm, i32),
                    TJ_SCALAR(stride_cn, i32)),
          TJ_CONSTS(BM, BN, BK))
{
    matmul_block_ptr_body(a, b, c, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn, BM,
                          BN, BK, 8, TJ_PRECISION_TF32, TJ_F32);
}
MATMUL_BODY_KERNEL(ptr_matmul, f16, f32, TJ_F32, matmul_tutorial_body)
MATMUL_BODY_KERNEL(own_tiles, f16, f16, TJ_F16, matmul_persistent_body)

static tj_device *dev;

/* C's row stride (elements) in the matmul launches' specialization: 4096
 * but where a check says otherwise. */
static int32_t c_row_stride = 4096;

/* The specialization of a matmul launch with M = N = K = 4096, row-major
 * (strides multiples of 16 bytes: TMA's, C's but where c_row_stride is
 * not), or of tjit buffers for k with no arguments. */
static uint64_t spec_of(const tj_kernel *k, int matmul)
{
    enum { NARGS = 12 };
    const tj_arg none = TJ_ARG_BUF((tj_buffer){0});
    tj_arg args[NARGS] = {none,          none,          none,          TJ_ARG_I32(4096),
                          TJ_ARG_I32(4096), TJ_ARG_I32(4096), TJ_ARG_I32(4096), TJ_ARG_I32(1),
                          TJ_ARG_I32(4096), TJ_ARG_I32(1),    TJ_ARG_I32(c_row_stride), TJ_ARG_I32(1)};
    tjf_value values[NARGS];
    if (!matmul || tjf_check_args(k, args, NARGS, values) != TJ_OK)
        return tjj_spec_of_buffers(k);
    return tjf_spec_key(k, values) | tjj_spec_of_buffers(k);
}

/* The artifact of kernel k (constants consts[0..n)) for sm<sm>[a] with
 * persistence mode; ptxas checks the PTX where it is set. */
static tj_status compile_at(const tj_kernel *k, const int64_t *consts, int nconsts, int sm, int arch_specific,
                            int warps, int stages, tjp_persistence mode, tjj_artifact *art)
{
    tji_func *fn = NULL;
    memset(art, 0, sizeof *art);
    tj_status st = tji_build(k, consts, nconsts, &fn);
    if (st == TJ_OK)
        st = tjj_compile_gpu(fn, &(tjj_gpu_target){.sm = sm, .arch_specific = arch_specific, .num_warps = warps,
                                                   .num_stages = stages, .spec = spec_of(k, nconsts == 3),
                                                   .persistent = mode},
                             art);
    if (st == TJ_OK && tjj_ptxas_path())
        st = tjj_ptxas_check(tjj_ptxas_path(), art->gpu.ptx, sm, arch_specific, fn->name);
    tji_func_free(fn);
    return st;
}

/* The same at the default stages. */
static tj_status compile(const tj_kernel *k, const int64_t *consts, int nconsts, int sm, int arch_specific,
                         int warps, tjp_persistence mode, tjj_artifact *art)
{
    return compile_at(k, consts, nconsts, sm, arch_specific, warps, 0, mode, art);
}

/* The .param lines of ptx's entry; *last gets the last one. */
static int entry_params(const char *ptx, const char **last)
{
    const char *entry = strstr(ptx, ".entry");
    const char *body = entry ? strchr(entry, '{') : NULL;
    int params = 0;
    *last = NULL;
    for (const char *s = entry; s && body && (s = strstr(s, ".param")) && s < body; s++) {
        params++;
        *last = s;
    }
    return params;
}

static void ptx_of_forced(void)
{
    tjj_artifact art;
    tj_status st = compile(program_ids, NULL, 0, 80, 0, 4, TJP_PERSIST_ALWAYS, &art);
    const char *ptx = st == TJ_OK ? art.gpu.ptx : "";
    if (st != TJ_OK)
        tap_diag("%s", tj_last_error());
    /* the entry's parameters: 3 of the user's, the assert record, the count */
    const char *last_param = NULL;
    int params = entry_params(ptx, &last_param);
    tap_ok(st == TJ_OK && art.gpu.persistent && params == 5 && last_param && !strncmp(last_param, ".param .u32", 11),
           "forced on: one i32 parameter more, last (%d parameters)", params);
    tap_ok(st == TJ_OK && tl_count(ptx, "%ctaid.x") == 1 && tl_count(ptx, "%nctaid.x") == 1 &&
               strstr(ptx, "bra"),
           "forced on: ctaid.x and nctaid.x read once, a loop around the body");
    tjj_artifact_free(&art);

    st = compile(program_ids, NULL, 0, 80, 0, 4, TJP_PERSIST_NEVER, &art);
    params = st == TJ_OK ? entry_params(art.gpu.ptx, &last_param) : 0;
    tap_ok(st == TJ_OK && !art.gpu.persistent && params == 4, "never: the kernel as written (%d parameters)",
           params);
    tjj_artifact_free(&art);
}

/* Is k's artifact, at 128 x bn x 64 and 3 stages, persistent with mode
 * on sm<sm>[a]? -1 on failure. */
static int persistent_with(const tj_kernel *k, int64_t bn, int sm, int arch_specific, tjp_persistence mode,
                           int *specialized)
{
    int64_t consts[3] = {128, bn, 64};
    tjj_artifact art;
    tj_status st = compile(k, consts, 3, sm, arch_specific, 8, mode, &art);
    if (st != TJ_OK)
        tap_diag("%s: %s", k->name, tj_last_error());
    int persistent = st == TJ_OK ? art.gpu.persistent : -1;
    if (specialized)
        *specialized = st == TJ_OK && art.gpu.producer_warps > 0;
    tjj_artifact_free(&art);
    return persistent;
}

static int persistent_by_default(const tj_kernel *k, int64_t bn, int sm, int arch_specific, int *specialized)
{
    return persistent_with(k, bn, sm, arch_specific, TJP_PERSIST_WHERE_IT_PAYS, specialized);
}

static void where_it_pays(void)
{
    int specialized = 0;
    tap_ok(persistent_by_default(bp_matmul, 128, 90, 1, &specialized) == 1 && specialized,
           "by default: the block-pointer matmul on sm_90a walks its tiles, warp-specialized");
    tap_ok(persistent_by_default(bp_matmul, 256, 90, 1, &specialized) == 1 && specialized,
           "by default: at 128x256x64 too, where the rings (192 KiB) and C's TMA store, staged two boxes "
           "(32 KiB) at a time, fit together");
    c_row_stride = 4097;
    tap_ok(persistent_by_default(bp_matmul, 256, 90, 1, &specialized) == 0 && specialized,
           "by default: not where C's row stride (4097 elements) allows no TMA store: the rings (192 KiB) and C's "
           "conversion (128 KiB) would not fit together; it compiles as written");
    c_row_stride = 4096;
    tap_ok(persistent_with(bp_matmul, 256, 90, 1, TJP_PERSIST_ALWAYS, &specialized) == 1 && specialized,
           "forced on, 128x256x64 at 3 stages fits: C's TMA store is staged two boxes (32 KiB) at a time beside "
           "the rings (192 KiB)%s", tjj_ptxas_path() ? "; ptxas -arch=sm_90a assembles it" : "");
    tap_ok(persistent_by_default(bp_matmul, 128, 90, 0, NULL) == 0, "by default: not on sm_90 (no TMA, no wgmma)");
    tap_ok(persistent_by_default(ptr_matmul, 128, 90, 1, NULL) == 0,
           "by default: not the tutorial's pointer tiles (cp.async rings)");
    tap_ok(persistent_by_default(own_tiles, 128, 90, 1, NULL) == 0,
           "by default: not a kernel that walks its own tiles (reads num_programs)");
    int64_t tf32_consts[3] = {128, 128, 32};
    tjj_artifact art;
    tj_status st = compile(bp_tf32, tf32_consts, 3, 90, 1, 8, TJP_PERSIST_WHERE_IT_PAYS, &art);
    int persistent = st == TJ_OK ? art.gpu.persistent : -1;
    if (st == TJ_OK)
        tjj_artifact_free(&art);
    st = st == TJ_OK ? compile(bp_tf32, tf32_consts, 3, 90, 1, 8, TJP_PERSIST_ALWAYS, &art) : st;
    int forced = st == TJ_OK ? art.gpu.persistent : -1;
    if (st == TJ_OK)
        tjj_artifact_free(&art);
    else
        tap_diag("%s", tj_last_error());
    tap_ok(persistent == 0 && forced == 1,
           "by default: not a TF32 matmul (B by the threads leaves no producer), which forced on still walks its "
           "tiles (%d, forced %d)", persistent, forced);
}

/* C's TMA store inside the tile loop: in bytes no ring takes, left in
 * flight — thread 0 waits for the engine's read of the last trip's block
 * before the next trip's writes, and for the writes after the loop; a
 * block of more than two boxes is staged two boxes at a time. */
typedef struct tma_store_plan {
    int stores, in_loop, overlaps, converted;
    int staged;     /* the step's staged_boxes */
    int bands;      /* its store_bands */
    uint64_t bytes; /* its buffer's */
} tma_store_plan;

/* The plan of bp_matmul at 128 x bn x 64 with persistence mode: its TMA
 * stores, how many are in the tile loop, overlap a ring's bytes or store a
 * value converted first, and the last one's staging. 0 on failure. */
static int tma_stores(int64_t bn, tjp_persistence mode, tma_store_plan *out)
{
    int64_t consts[3] = {128, bn, 64};
    tji_func *fn = NULL;
    tjj_gpu_planned planned = {0};
    tjj_gpu_target target = {.sm = 90, .arch_specific = 1, .num_warps = 8, .spec = spec_of(bp_matmul, 1),
                             .persistent = mode};
    tj_status st = tji_build(bp_matmul, consts, 3, &fn);
    if (st == TJ_OK)
        st = tjj_gpu_plan(fn, &target, &planned);
    memset(out, 0, sizeof *out);
    for (int32_t i = 0; st == TJ_OK && i < fn->nops; i++) {
        const tjp_shared_step *step = &planned.plan.shared[i];
        if (step->kind != TJP_STEP_TMA_STORE)
            continue;
        out->stores++;
        out->in_loop += tjp_tma_store_tile_loop(fn, i) >= 0;
        int32_t def = tji_val(fn, fn->ops[i].args[1])->def_op;
        out->converted += def >= 0 && fn->ops[def].code == TJI_CONVERT;
        out->staged = step->staged_boxes;
        out->bands = step->store_bands;
        out->bytes = step->bytes;
        for (int r = 0; r < planned.plan.nrings; r++) {
            const tjp_ring *R = &planned.plan.rings[r];
            uint64_t end = R->offset + R->slot_bytes * (uint64_t)R->slots;
            out->overlaps += R->op >= 0 && step->offset < end && R->offset < step->offset + step->bytes;
        }
    }
    if (st != TJ_OK)
        tap_diag("%s", tj_last_error());
    tjj_gpu_planned_free(&planned);
    tji_func_free(fn);
    return out->stores;
}

/* The PTX of bp_matmul at 128 x bn x 64, made persistent; "" on failure
 * (*art to free either way). */
static const char *persistent_ptx(int64_t bn, tjj_artifact *art)
{
    int64_t consts[3] = {128, bn, 64};
    tj_status st = compile(bp_matmul, consts, 3, 90, 1, 8, TJP_PERSIST_ALWAYS, art);
    if (st != TJ_OK)
        tap_diag("%s", tj_last_error());
    return st == TJ_OK ? art->gpu.ptx : "";
}

/* The bar.sync instructions in ptx of `threads` threads (its second
 * operand), whatever the barrier's id. */
static int barriers_of(const char *ptx, int threads)
{
    int n = 0;
    for (const char *at = ptx; (at = strstr(at, "bar.sync")); at++) {
        const char *end = strchr(at, ';'), *comma = strchr(at, ',');
        n += end && comma && comma < end && strtol(comma + 1, NULL, 10) == threads;
    }
    return n;
}

static void store_in_flight(void)
{
    tma_store_plan p;
    int stores = tma_stores(64, TJP_PERSIST_WHERE_IT_PAYS, &p);
    tap_ok(stores == 1 && p.in_loop == 1 && !p.overlaps && !p.converted && !p.staged && p.bytes == 128 * 64 * 4,
           "made persistent (128x64, f32 C: two boxes): C is a TMA store inside the tile loop of the accumulator "
           "as it is, its whole block in bytes no ring takes (%d stores, %d in the loop, %d overlaps, %d "
           "converted, boxes=%d, %llu bytes)", stores, p.in_loop, p.overlaps, p.converted, p.staged,
           (unsigned long long)p.bytes);
    stores = tma_stores(256, TJP_PERSIST_ALWAYS, &p);
    tap_ok(stores == 1 && p.in_loop == 1 && !p.overlaps && !p.converted && p.staged == 2 && p.bands == 2 &&
               p.bytes == 2 * 128 * 32 * 4,
           "forced persistent (128x256, f32 C: eight boxes of 32 columns): staged two boxes at a time, 32 KiB beside "
           "the rings, each box in two bands of 64 rows, one per warpgroup (%d stores, %d in the loop, %d overlaps, "
           "boxes=%d, bands=%d, %llu bytes)", stores, p.in_loop, p.overlaps, p.staged, p.bands,
           (unsigned long long)p.bytes);
    stores = tma_stores(256, TJP_PERSIST_NEVER, &p);
    tap_ok(stores == 1 && !p.in_loop && !p.converted && !p.staged,
           "as written (128x256): C is a TMA store after the loop, of the accumulator as it is, its whole block "
           "(%d stores, %d converted, boxes=%d)", stores, p.converted, p.staged);

    tjj_artifact art;
    const char *ptx = persistent_ptx(64, &art);
    const char *store = strstr(ptx, "cp.async.bulk.tensor.2d.global.shared::cta");
    const char *read_wait = strstr(ptx, "cp.async.bulk.wait_group.read 0;");
    const char *write_wait = strstr(ptx, "cp.async.bulk.wait_group 0;");
    tap_ok(store && read_wait && read_wait < store && write_wait > store &&
               !strstr(store, "cp.async.bulk.wait_group.read") && tl_count(ptx, "cp.async.bulk.wait_group") == 2,
           "its PTX (128x64): the read wait before the block's writes, the store left in flight, the write wait "
           "after the loop%s", tjj_ptxas_path() ? "; ptxas -arch=sm_90a assembles it" : "");
    tjj_artifact_free(&art);

    /* staged: per box a read wait (all but the last group read), the
     * box's store and its own group; the write wait after the loop */
    ptx = persistent_ptx(256, &art);
    int boxes = tl_count(ptx, "cp.async.bulk.tensor.2d.global.shared::cta");
    int groups = tl_count(ptx, "cp.async.bulk.commit_group;");
    int read_waits = tl_count(ptx, "cp.async.bulk.wait_group.read 1;");
    const char *first_wait = strstr(ptx, "cp.async.bulk.wait_group.read 1;");
    store = strstr(ptx, "cp.async.bulk.tensor.2d.global.shared::cta");
    write_wait = strstr(ptx, "cp.async.bulk.wait_group 0;");
    tap_ok(boxes == 8 && groups == 8 && read_waits == 8 && !strstr(ptx, "wait_group.read 0;") && first_wait &&
               first_wait < store && write_wait > store && tl_count(ptx, "cp.async.bulk.wait_group 0;") == 1,
           "its PTX (128x256): eight boxes, each stored in a group of its own after a wait for all but the last "
           "group's reads, the write wait after the loop (%d stores, %d groups, %d read waits)%s", boxes, groups,
           read_waits, tjj_ptxas_path() ? "; ptxas -arch=sm_90a assembles it" : "");
    /* in bands: each box's writes between two barriers of the warpgroup's
     * 128 threads, not the consumers' 256; the tensor map's box a band */
    int band_barriers = barriers_of(ptx, 128), consumer_barriers = barriers_of(ptx, 256);
    const tjj_tmap_info *map = art.gpu.ntmaps ? &art.gpu.tmaps[art.gpu.ntmaps - 1] : NULL;
    tap_ok(band_barriers == 16 && map && map->box[0] == 64 && map->box[1] == 32,
           "its PTX (128x256): each warpgroup writes and stores its band of 64 rows of a box behind its own "
           "barrier (%d barriers of 128 threads, 16 expected; %d of the 256 consumers), C's tensor map box %u x %u "
           "(64 x 32 expected)", band_barriers, consumer_barriers, map ? map->box[0] : 0, map ? map->box[1] : 0);
    tjj_artifact_free(&art);
}

/* 16 warps at 256x128x64, 2 stages, made persistent: C (f32, four boxes
 * of 32 columns) in four bands of 64 rows, a consumer warpgroup each —
 * per box two barriers of its 128 threads, the tensor map's box a band. */
static void four_bands(void)
{
    int64_t consts[3] = {256, 128, 64};
    tjj_artifact art;
    tj_status st = compile_at(bp_matmul, consts, 3, 90, 1, 16, 2, TJP_PERSIST_ALWAYS, &art);
    if (st != TJ_OK)
        tap_diag("%s", tj_last_error());
    const char *ptx = st == TJ_OK ? art.gpu.ptx : "";
    const tjj_tmap_info *map = st == TJ_OK && art.gpu.ntmaps ? &art.gpu.tmaps[art.gpu.ntmaps - 1] : NULL;
    int band_barriers = barriers_of(ptx, 128);
    tap_ok(st == TJ_OK && art.gpu.persistent && band_barriers == 8 && map && map->box[0] == 64 && map->box[1] == 32,
           "16 warps at 256x128x64, 2 stages, made persistent: C in four bands of 64 rows, a consumer warpgroup each "
           "(%d barriers of 128 threads, 8 expected; C's tensor map box %u x %u, 64 x 32 expected)%s", band_barriers,
           map ? map->box[0] : 0, map ? map->box[1] : 0,
           tjj_ptxas_path() ? "; ptxas -arch=sm_90a assembles it" : "");
    tjj_artifact_free(&art);
}

/* A bf16 C converted from the accumulators of the made-persistent
 * 128x256x64 kernel at 3 stages: the conversion's NaN rule, applied to
 * every pair by selects, made ptxas spill 208 bytes a thread (with the
 * L1 left beside 225 KiB of shared memory, 35 % more L2 traffic); applied
 * behind a branch a pair, the test for it took 3.5 % of the kernel's time
 * (Nsight Compute's samples), as did 128 selects a tile of the
 * accumulators' initial value for a loop that did not run. */
static void bf16_epilogue(void)
{
    int64_t consts[3] = {128, 256, 64};
    tjj_artifact art;
    tj_status st = compile(bp_bf16, consts, 3, 90, 1, 8, TJP_PERSIST_ALWAYS, &art);
    if (st != TJ_OK)
        tap_diag("%s", tj_last_error());
    const char *ptx = st == TJ_OK ? art.gpu.ptx : "";
    int nan_tests = tl_count(ptx, "setp.nan.f32"), selects = tl_count(ptx, "selp.f32");
    tap_ok(st == TJ_OK && art.gpu.persistent && nan_tests == 64 && selects == 0,
           "bf16 C, made persistent at 128x256x64: the epilogue tests its 128 accumulators for NaN a pair at a "
           "time (%d setp.nan, 64 expected) and takes their initial value on a branch of its own (%d selp.f32)",
           nan_tests, selects);
    const char *ptxas = tjj_ptxas_path();
    if (!ptxas)
        tap_skip(1, "no TJIT_PTXAS (configure found no ptxas)");
    else {
        long spills = st == TJ_OK && art.gpu.persistent ? tl_ptxas_spills(ptxas, art.gpu.ptx) : -1;
        tap_ok(spills == 0,
               "the same kernel, 3 stages, a producer: ptxas -arch=sm_90a spills nothing (%ld bytes)", spills);
    }
    tjj_artifact_free(&art);
}

static tj_status launch_ids(const tj_launch_cfg *cfg, tj_buffer ids, tj_buffer counts, int n)
{
    tj_arg args[3] = {TJ_ARG_BUF(ids), TJ_ARG_BUF(counts), TJ_ARG_I32(n)};
    return tj_launch(dev, program_ids, cfg, args, 3, NULL, 0);
}

static void ids_on_device(void)
{
    enum { N = 5000 };
    int gpu = tj_device_get_kind(dev) == TJ_DEVICE_GPU;
    tj_buffer ids = tl_poisoned(dev, N * 4), counts = tl_poisoned(dev, N * 4);
    tj_launch_cfg cfg = {.grid = {N}, .persistent = TJ_PERSISTENT_ON};
    tj_status st = launch_ids(&cfg, ids, counts, N);
    int32_t *got_ids = malloc(N * 4), *got_counts = malloc(N * 4);
    if (st == TJ_OK)
        st = tj_buffer_read(dev, ids, 0, got_ids, N * 4);
    if (st == TJ_OK)
        st = tj_buffer_read(dev, counts, 0, got_counts, N * 4);
    int bad = -1;
    for (int i = 0; st == TJ_OK && i < N && bad < 0; i++)
        if (got_ids[i] != i || got_counts[i] != N)
            bad = i;
    if (st != TJ_OK)
        tap_diag("%s", tj_last_error());
    else if (bad >= 0)
        tap_diag("program %d: id %d, count %d", bad, got_ids[bad], got_counts[bad]);
    tap_ok(st == TJ_OK && bad < 0, "forced on, %d programs: each sees its own id and the count %d", N, N);

    cfg = (tj_launch_cfg){.grid = {4, 2}, .persistent = TJ_PERSISTENT_ON};
    st = launch_ids(&cfg, ids, counts, 8);
    if (gpu)
        tap_ok(st == TJ_ERR_LAUNCH && tl_error_mentions("program_ids", "1-D grid", "4 x 2 x 1", NULL),
               "forced on, a 2-D grid is refused: %s", tj_last_error());
    else
        tap_ok(st == TJ_OK, "forced on, a 2-D grid runs on the CPU (the option is ignored there)");

    cfg = (tj_launch_cfg){.grid = {8}, .persistent = (tj_persistent)9};
    st = launch_ids(&cfg, ids, counts, 8);
    tap_ok(st == TJ_ERR_INVALID_ARG && tl_error_mentions("program_ids", "persistent = 9", NULL),
           "a persistent that is no tj_persistent is refused: %s", tj_last_error());
    cfg = (tj_launch_cfg){.grid = {8}, .version = TJ_LAUNCH_CFG_VERSION + 1};
    st = launch_ids(&cfg, ids, counts, 8);
    tap_ok(st == TJ_ERR_INVALID_ARG && tl_error_mentions("program_ids", "version", NULL),
           "a tj_launch_cfg version newer than the library's is refused: %s", tj_last_error());
    /* a kernel compiled against another tjit.h (its ABI field says so) */
    tj_kernel other_abi = *program_ids;
    other_abi.abi = TJ_KERNEL_ABI + 1;
    tj_arg args[3] = {TJ_ARG_BUF(ids), TJ_ARG_BUF(counts), TJ_ARG_I32(8)};
    cfg = (tj_launch_cfg){.grid = {8}};
    char *ir = NULL;
    st = tj_launch(dev, &other_abi, &cfg, args, 3, NULL, 0);
    tj_status built = tj_kernel_ir(&other_abi, NULL, 0, &ir);
    tap_ok(st == TJ_ERR_INVALID_ARG && built == TJ_ERR_INVALID_ARG && !ir &&
               tl_error_mentions("program_ids", "kernel ABI", "rebuild", NULL),
           "a kernel of another kernel ABI is refused by tj_launch and by tj_kernel_ir: %s", tj_last_error());
    tj_buffer_free(dev, ids);
    tj_buffer_free(dev, counts);
    free(got_ids);
    free(got_counts);
}

int main(void)
{
    dev = tl_setup("test_persistent");
    tap_plan(25);
    ptx_of_forced();
    where_it_pays();
    store_in_flight();
    four_bands();
    bf16_epilogue();
    ids_on_device();
    tj_device_close(dev);
    return tap_done();
}
