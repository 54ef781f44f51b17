/* SPDX-License-Identifier: MIT */
/*
 * persistent.c — a persistent kernel: the launch's programs become tiles
 * that resident programs walk (passes.h: tjp_make_persistent).
 *
 * A matmul launched as one program per C tile runs in waves: 132 SMs take
 * a wave of tiles, each program loads its prologue, computes, stores and
 * exits, and the next wave's programs start cold — the tensor cores idle
 * through every epilogue and every prologue. A persistent kernel (Triton's
 * tutorial 09, CUTLASS's tile schedulers) launches only as many programs
 * as fit on the GPU at once, and each walks tiles t = pid, pid + P,
 * pid + 2P, ... of the grid the user asked for. With warp specialization
 * (warp_specialize.c) the producer warpgroup then starts the next tile's
 * copies while the consumers still store this one's C.
 *
 * The rewrite is the same for every kernel, so this pass does it where the
 * launch asks and the user wrote one program per tile: the whole body moves
 * into a FOR from program_id(0) (the hardware's, ctaid.x) to the logical
 * program count (a new op, LOGICAL_PROGRAMS: a hidden parameter the launch
 * passes) by num_programs(0) (the hardware's, nctaid.x); inside, the
 * body's program_id(0) is the loop's index and its num_programs(0) the
 * logical count, so the kernel computes what it always did. Programs of a
 * tile grid never wait for each other (nothing in tjit lets one program
 * wait for another), so running them one after another in fewer programs
 * is the same kernel; only a device assert's report names the resident
 * program, not the tile. The launch makes the grid 1-D, min(tiles, SMs x
 * the blocks an SM holds), and passes the tile count.
 *
 * Where: forced (TJP_PERSIST_ALWAYS) on any kernel; by default only where it
 * pays — on Hopper (sm_90a), a kernel whose top level has a loop with a
 * dot fed by block-pointer loads (the shape warp specialization takes), and
 * which does not already read num_programs(0) (a kernel that walks its own
 * tiles, as tutorial 09 does, is persistent already), and not for a TF32
 * dot (lower_block_ptr.c may leave one of its operands to the threads,
 * depending on strides this pass does not see; without a producer
 * warpgroup persistence lost 28% on the H200) — and where it fits:
 * a loop nested in the tile loop keeps its rings' bytes apart from the
 * epilogue's (alloc_shared.c), so the rings (a tile per block-pointer load
 * of the loop, num_stages + 1 slots: wgmma's) and what the stores after
 * it keep in shared memory must fit a block's together: a TMA store of C
 * in a tile loop stages two boxes (128-byte-wide column blocks) at a time
 * (tma.c), any other store its whole tile (the accumulator's conversion
 * for the threads' stores), and so may a reduction or a scan after it
 * (counted as its tile in f32). So 128x256x64 at 3 stages with an f16 C
 * takes 192 + 32 KiB where C goes by TMA; where the specialization does
 * not take C's tensor for TMA (a stride not known to be a multiple of 16
 * elements), 192 + 64 KiB would not fit and the kernel stays as written:
 * the default must never turn a kernel that compiles into one that fails.
 * Measured on an H100 (RESULTS.md, 2026-12-06), that 3-stage persistent
 * kernel against the kernel as written: bf16 +3 % and +1 % at 4096^3 and
 * 8192^3, f16 +2 % and -1 % — once its bf16 epilogue stopped spilling;
 * before, it lost 3-6 %.
 */
#include <stdlib.h>

#include "passes.h"

static int uses_num_programs(const tji_func *fn)
{
    for (int32_t i = 0; i < fn->nops; i++)
        if (fn->ops[i].parent >= 0 && fn->ops[i].code == TJI_NUM_PROGRAMS && fn->ops[i].axis == 0)
            return 1;
    return 0;
}

/* Inline PTX may read %ctaid or %nctaid, which a persistent grid changes. */
static int runs_inline_ptx(const tji_func *fn)
{
    for (int32_t i = 0; i < fn->nops; i++)
        if (fn->ops[i].parent >= 0 && fn->ops[i].code == TJI_INLINE_ASM)
            return 1;
    return 0;
}

static int64_t tile_bytes(const tji_type *t)
{
    return tji_numel(t) * (int64_t)tj_dtype_size(t->dtype);
}

/* Region r holds, at any depth, a DOT (*dot: 1, or 2 for a TF32 one);
 * *block_loads gets the bytes of the tiles its block-pointer loads read. */
static void find_dot_and_block_loads(const tji_func *fn, int32_t r, int *dot, int64_t *block_loads)
{
    const tji_region *region = &fn->regions[r];
    for (int k = 0; k < region->nops; k++) {
        const tji_op *op = &fn->ops[region->ops[k]];
        if (op->code == TJI_DOT)
            *dot |= op->precision == TJ_PRECISION_TF32 ? 2 : 1;
        if (op->code == TJI_LOAD && tji_is_block_ptr(tji_typeof(fn, op->args[0])))
            *block_loads += tile_bytes(tji_typeof(fn, op->result));
        for (int s = 0; s < 2; s++)
            if (op->region[s] >= 0)
                find_dot_and_block_loads(fn, op->region[s], dot, block_loads);
    }
}

/* The default's test: the main loop is a matmul's that TMA can feed, and
 * its rings fit beside what the largest store keeps in shared memory. */
static const char *why_not_by_default(const tji_func *fn, const tjp_target *t, const tjp_param_spec *spec,
                                      int num_stages)
{
    if (t->sm < 90 || !t->arch_specific)
        return "not a Hopper target (sm_90a)";
    if (uses_num_programs(fn))
        return "the kernel reads num_programs(0): it walks its own tiles";
    if (runs_inline_ptx(fn))
        return "the kernel runs inline PTX, which may read %ctaid or %nctaid";
    int64_t ring_bytes = 0, stored = 0, others = 0; /* the largest loop's rings, all its stages */
    int matmul_loop = 0, tf32 = 0;
    const tji_region *body = &fn->regions[0];
    for (int k = 0; k < body->nops; k++) {
        const tji_op *op = &fn->ops[body->ops[k]];
        int dot = 0;
        int64_t loads = 0;
        if (op->code == TJI_FOR)
            find_dot_and_block_loads(fn, op->region[0], &dot, &loads);
        if (dot && loads) {
            int stages = op->num_stages ? op->num_stages : num_stages;
            int64_t bytes = stages > 1 ? loads * (stages + 1) : 0; /* 1: no rings */
            matmul_loop = 1;
            tf32 |= dot & 2;
            ring_bytes = ring_bytes > bytes ? ring_bytes : bytes;
        }
        if (op->code == TJI_STORE && tji_typeof(fn, op->args[1])->rank) {
            int64_t bytes = tji_is_block_ptr(tji_typeof(fn, op->args[0]))
                                ? tjp_tma_store_loop_bytes(fn, spec, body->ops[k])
                                : tile_bytes(tji_typeof(fn, op->args[1]));
            stored = stored > bytes ? stored : bytes;
        }
        /* a reduction or scan of a tile may go through shared memory too
         * (its partials, in f32 at most: counted as the tile in 4 bytes) */
        if ((op->code == TJI_REDUCE || op->code == TJI_CUMSUM) && tji_typeof(fn, op->args[0])->rank)
            others += tji_numel(tji_typeof(fn, op->args[0])) * 4;
    }
    if (!matmul_loop)
        return "no top-level loop with a dot of block-pointer loads";
    if (tf32) /* unknown here: which way B's strides run (NN or NT) */
        return "a TF32 dot: an operand stored along M or N is copied by the threads (wgmma reads TF32 K-major "
               "only), which leaves no producer warpgroup, and without one persistence loses";
    enum { BARRIERS_AND_SLACK = 2048 }; /* the rings' mbarriers, the staging block's 1024-byte alignment */
    if (ring_bytes + stored + others + BARRIERS_AND_SLACK > TJP_SHARED_MAX)
        return "the rings and the epilogue would not fit a block's shared memory together";
    return NULL;
}

static int is_grid_op(const tji_op *op)
{
    return op->parent >= 0 && (op->code == TJI_PROGRAM_ID || op->code == TJI_NUM_PROGRAMS) && op->axis == 0;
}

/* Moves region 0's ops into a new FOR over the tiles; the body's grid ops,
 * at any depth, give way to the tile and the logical count. */
static void wrap_body(tji_func *fn)
{
    const tji_type i32 = {.dtype = TJ_I32};
    int32_t nops_before = fn->nops;
    int nold = fn->regions[0].nops;
    tji_loc loc = nold ? fn->ops[fn->regions[0].ops[0]].loc : (tji_loc){fn->name, 0};
    int32_t *old = tjs_xmalloc((size_t)(nold ? nold : 1) * sizeof *old);
    for (int k = 0; k < nold; k++)
        old[k] = fn->regions[0].ops[k];

    int32_t first = tji_insert_op(fn, TJI_PROGRAM_ID, 0, 0, loc);
    fn->ops[first].axis = 0;
    int32_t resident = tji_insert_op(fn, TJI_NUM_PROGRAMS, 0, 1, loc);
    fn->ops[resident].axis = 0;
    int32_t logical = tji_insert_op(fn, TJI_LOGICAL_PROGRAMS, 0, 2, loc);
    int32_t loop = tji_insert_op(fn, TJI_FOR, 0, 3, loc);
    fn->ops[loop].tile_loop = 1;
    int32_t bounds[3];
    bounds[0] = tji_new_results(fn, first, &i32, 1);
    bounds[2] = tji_new_results(fn, resident, &i32, 1);
    bounds[1] = tji_new_results(fn, logical, &i32, 1);
    tji_set_operands(fn, loop, bounds, 3);
    int32_t tiles = tji_new_region(fn, loop);
    tji_set_block_args(fn, tiles, &i32, 1);
    int32_t tile = fn->regions[tiles].args[0];

    int32_t *rename = tjs_xcalloc((size_t)fn->nvalues + 1, sizeof *rename);
    for (int32_t i = 0; i < nops_before; i++)
        if (is_grid_op(&fn->ops[i]))
            rename[fn->ops[i].result] = fn->ops[i].code == TJI_PROGRAM_ID ? tile : bounds[1];
    for (int32_t i = 0; i < fn->nops; i++)
        if (fn->ops[i].parent >= 0)
            tji_rename_operands(fn, i, rename);
    for (int32_t i = 0; i < nops_before; i++) {
        if (!is_grid_op(&fn->ops[i]))
            continue;
        int32_t region = fn->ops[i].parent;
        tji_detach_op(fn, i);
        tji_retire_value(fn, fn->ops[i].result);
        if (region != 0)
            tji_drop_detached(fn, region);
    }
    for (int k = 0; k < nold; k++)
        if (fn->ops[old[k]].parent == 0) {
            tji_detach_op(fn, old[k]);
            tji_append_op(fn, tiles, old[k]);
        }
    tji_drop_detached(fn, 0);
    tji_new_op(fn, TJI_YIELD, tiles, loc);
    free(rename);
    free(old);
}

tj_status tjp_make_persistent(tji_func *fn, const tjp_target *t, const tjp_param_spec *spec, int num_stages,
                              tjp_persistence mode, const char **why_not)
{
    const char *why = mode == TJP_PERSIST_NEVER    ? "not asked for by the launch"
                      : mode == TJP_PERSIST_ALWAYS ? NULL
                                                   : why_not_by_default(fn, t, spec, num_stages);
    if (why_not)
        *why_not = why;
    if (!why)
        wrap_body(fn);
    return TJ_OK;
}

int32_t tjp_tile_loop(const tji_func *fn)
{
    const tji_region *top = &fn->regions[0];
    for (int k = 0; k < top->nops; k++)
        if (fn->ops[top->ops[k]].code == TJI_FOR && fn->ops[top->ops[k]].tile_loop)
            return top->ops[k];
    return -1;
}

int tjp_is_persistent(const tji_func *fn)
{
    for (int32_t i = 0; i < fn->nops; i++)
        if (fn->ops[i].parent >= 0 && fn->ops[i].code == TJI_LOGICAL_PROGRAMS)
            return 1;
    return 0;
}
