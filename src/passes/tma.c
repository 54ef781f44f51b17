/* SPDX-License-Identifier: MIT */
/*
 * tma.c — which block loads Hopper's tensor-memory accelerator can make,
 * and the rings it writes.
 *
 * A TMA copy moves a box of a strided tensor into shared memory, described
 * by a tensor map that the host encodes at launch (cuTensorMapEncodeTiled)
 * from the tensor's base, extents and strides. So a load can become one
 * only where each of those is something the launch knows: a kernel
 * parameter or a constant (tjp_tma_source), and where the map is legal for
 * every argument the variant may be launched with — which the
 * specialization key says: the base aligned to 16 bytes, one dimension of
 * stride 1 (the contiguous one), the other's stride a multiple of 16
 * bytes. The launch checks the rest (an extent of 0, a driver without
 * the encoder) and falls back to a variant without TMA. A block pointer
 * is exactly such a description, so tjp_lower_block_ptrs keeps it on the
 * loads it lowers (the LOAD's tma operands, ir.h) where this file says the
 * tensor qualifies, and the pipeliner carries it to the ring's copies.
 *
 * Whether a ring's copies then run as TMA is the shared-memory plan's
 * choice (tjp_tma_ring): where every copy into the ring has its tensor,
 * wgmma reads the ring (so it is in the NVMMA layout, which is what TMA
 * writes with the matching swizzle) and the stored rows run along the
 * tensor's contiguous dimension. One copy is then a few boxes of Sw bytes
 * by the stored rows (Sw the NVMMA row: 128, 64 or 32 bytes), each box
 * one column block of the layout, completing on the slot's mbarrier.
 * Everything else keeps cp.async, which the same copy op still describes.
 *
 * Stores go the other way (tjp_tma_store): the threads write the block
 * into a shared buffer in the NVMMA layout, and thread 0 has TMA store it
 * box by box — a few instructions where the threads' stores would be rows
 * of strided writes, and the block leaves while the kernel ends. The
 * engine clips at the tensor's edges as a boundary check would, but along
 * the contiguous dimension in whole 16-byte chunks (seen on the H200: an
 * f32 tensor 41 wide got its columns 41..43 written), so a store is TMA's
 * only where that extent is known to be a multiple of 16 bytes
 * (tjp_tma_store_extent); loads fill zeros element by element. The copy
 * runs asynchronously, so a store becomes one only where nothing could
 * observe it early: outside every loop (the buffer is not refilled while
 * TMA reads it), and with no load or atomic after it — a later store
 * waits for its writes to complete first (the code generator's wait), the
 * last one only for its buffer to be read.
 *
 * The one loop a store may be in is a persistent kernel's tile loop
 * (persistent.c; tjp_tma_store_tile_loop): its trips were programs of
 * their own, which nothing orders, so a later trip's loads need not see
 * this trip's store. There the store stays in flight while the next tile
 * is computed — the epilogue overlaps the next mainloop, as CUTLASS's
 * does: thread 0 waits for the engine to have read the buffer only before
 * the next trip's threads write it again, and for the writes after the
 * loop; its buffer is live across the whole loop (alloc_shared.c), so
 * nothing else, the next tile's rings included, takes its bytes. That
 * costs the block's bytes for the whole kernel, which a 128x256 tile's
 * third stage needs: so a block of more than two boxes is staged two at
 * a time (staged_boxes), where the value's layout keeps each lane's and
 * warp's columns within one box (the wgmma accumulator's does) — box j
 * goes to slot j % 2 once the engine has read box j - 2, and is stored at
 * once (the code generator's emit_staged_store). Where each warpgroup's
 * threads write rows of their own (store_bands: the wgmma accumulator's
 * warpgroups own 64 rows each), a box is stored band by band instead: each
 * warpgroup waits for its own band's earlier store, writes its band behind
 * a named barrier of its 128 threads, and its first thread stores it — so
 * one warpgroup's epilogue never waits for the other's, and the engine
 * reads half a box before that slot is free for the band again. The
 * buffer is the same bytes: an NVMMA box of R rows is its bands' boxes
 * one after another.
 *
 * A batched (3-D) tensor's [1, R, C] block, reshaped to the 2-D tile a dot
 * takes (lower_block_ptr.c), is one box of the 3-D tensor: the ring and
 * the staging buffer are 2-D, the batch is one more coordinate.
 */
#include <string.h>

#include "passes.h"

int tjp_tma_source(const tji_func *fn, int32_t v, int32_t *param, int64_t *value)
{
    const tji_value *val = tji_val(fn, v);
    *param = -1;
    *value = 0;
    if (val->def_op >= 0) {
        const tji_op *op = &fn->ops[val->def_op];
        if (op->code == TJI_CONST && tjs_dtype_is_int(tji_typeof(fn, v)->dtype)) {
            *value = op->ival;
            return 1;
        }
        /* an integer parameter widened to i64 by the builder */
        if (op->code != TJI_CAST || !tjs_dtype_is_int(tji_typeof(fn, op->args[0])->dtype) ||
            tji_typeof(fn, op->args[0])->is_ptr || tji_typeof(fn, v)->is_ptr)
            return 0;
        val = tji_val(fn, v = op->args[0]);
    }
    if (val->def_op >= 0 || val->def_region != 0)
        return 0;
    for (int i = 0; i < fn->nparams; i++)
        if (fn->params[i].value == v) {
            *param = i;
            return 1;
        }
    return 0;
}

/* Is integer v known to be 1 (one) or a multiple of 16 bytes for elements
 * of eb bytes (!one)? */
static int known(const tji_func *fn, const tjp_param_spec *spec, int32_t v, int one, int eb)
{
    int32_t param;
    int64_t value;
    if (!tjp_tma_source(fn, v, &param, &value))
        return 0;
    if (param < 0)
        return one ? value == 1 : value > 0 && value * eb % 16 == 0;
    return one ? spec[param].is_one : spec[param].int_div16;
}

int tjp_tma_store_extent(const tji_func *fn, const tjp_param_spec *spec, int32_t extent, tj_dtype dtype)
{
    int eb = tjs_dtype_bits(dtype) / 8;
    return eb > 0 && known(fn, spec, extent, 0, eb);
}

int tjp_tma_access(const tji_func *fn, const tjp_param_spec *spec, const tji_op *op, int rank, int32_t base,
                   const int32_t *shape, const int32_t *strides, tj_dtype dtype)
{
    if (!spec || op->is_volatile || fn->check_bounds)
        return -1;
    int contiguous = tjp_tma_tensor(fn, spec, rank, base, shape, strides);
    if (contiguous >= 0 && op->code == TJI_STORE && !tjp_tma_store_extent(fn, spec, shape[contiguous], dtype))
        return -1;
    return contiguous;
}

int tjp_tma_tensor(const tji_func *fn, const tjp_param_spec *spec, int rank, int32_t base,
                   const int32_t *shape, const int32_t *strides)
{
    int32_t param;
    int64_t value;
    const tji_type *bt = tji_typeof(fn, base);
    int eb = tjs_dtype_bits(bt->dtype) / 8;
    if (!spec || rank < 2 || rank > 3 || (eb != 1 && eb != 2 && eb != 4) ||
        !tjp_tma_source(fn, base, &param, &value) || param < 0 || !spec[param].ptr_align16)
        return -1;
    int contiguous = -1;
    for (int d = 0; d < rank; d++) {
        if (!tjp_tma_source(fn, shape[d], &param, &value) || (param < 0 && value < 1))
            return -1;
        if (contiguous < 0 && known(fn, spec, strides[d], 1, eb))
            contiguous = d;
    }
    for (int d = 0; d < rank && contiguous >= 0; d++)
        if (d != contiguous && !known(fn, spec, strides[d], 0, eb))
            return -1;
    return contiguous;
}

/* The dimension of the 2-D block of op (a copy or a store) that runs
 * along its tensor's dimension of stride 1 (the lowering writes a stride
 * the launch specialized as 1 so); -1 where there is none, or where the
 * block is no 2-D tile of a 2-D tensor's two dimensions or a 3-D tensor's
 * last two (a batched descriptor's [1, R, C] block, lower_block_ptr.c). */
static int contiguous_dim(const tji_func *fn, const tji_op *op)
{
    int r = op->tma_rank, batch = r - 2;
    if ((r != 2 && r != 3) || tji_typeof(fn, op->args[op->code == TJI_STORE])->rank != 2)
        return -1;
    for (int d = 0; d < r; d++) {
        int32_t param;
        int64_t value;
        if (tjp_tma_source(fn, op->args[TJI_TMA_FIRST + 1 + r + d], &param, &value) && param < 0 &&
            value == 1)
            return d - batch;
    }
    return -1;
}

int tjp_tma_ring(const tji_func *fn, int ring, tjp_ring *R)
{
    R->tma = 0;
    if (!R->wgmma)
        return 0;
    int copies = 0, contiguous = -1, rank = 0;
    for (int32_t i = 0; i < fn->nops; i++) {
        const tji_op *op = &fn->ops[i];
        if (op->parent < 0 || op->code != TJI_ASYNC_COPY || op->ring != ring)
            continue;
        int d = contiguous_dim(fn, op);
        if (d < 0 || (contiguous >= 0 && d != contiguous) || (rank && op->tma_rank != rank))
            return 0;
        contiguous = d;
        rank = op->tma_rank;
        copies++;
    }
    /* the stored rows must be the tensor's: a transposed ring runs along dim 0 */
    if (!copies || contiguous != (R->transposed ? 0 : 1))
        return 0;
    R->tma = 1;
    R->tma_contiguous = contiguous;
    return 1;
}

void tjp_tma_box(const tjp_ring *R, const tji_type *tile, uint32_t box[2], int *nboxes)
{
    int c = R->tma_contiguous;
    uint32_t per_row = (uint32_t)(R->swizzle_bytes / R->elem_bytes);
    box[c] = per_row;
    box[1 - c] = (uint32_t)tile->shape[1 - c];
    *nboxes = (int)((uint32_t)tile->shape[c] / per_row);
}

/* Bytes of the largest block staged for a TMA store: the NVMMA buffer is
 * live only at the store, where the loop's rings are done, but a bigger
 * one would crowd out what may be live beside it. */
enum { TMA_STORE_MAX_BYTES = 128 * 1024 };

/* The loops around op: -1 none; the index of the persistent kernel's tile
 * loop (persistent.c: tjp_tile_loop) where it is the only
 * one; -2 where another loop holds op. */
static int32_t loops_around(const tji_func *fn, const tji_op *op)
{
    int32_t tile_loop = -1;
    for (int32_t r = op->parent; r >= 0 && fn->regions[r].parent_op >= 0;) {
        int32_t at = fn->regions[r].parent_op;
        const tji_op *outer = &fn->ops[at];
        if (outer->code == TJI_WHILE)
            return -2;
        if (outer->code == TJI_FOR) {
            if (tile_loop >= 0 || !outer->tile_loop)
                return -2;
            tile_loop = at;
        }
        r = outer->parent;
    }
    return tile_loop;
}

int32_t tjp_tma_store_tile_loop(const tji_func *fn, int32_t i)
{
    int32_t loop = loops_around(fn, &fn->ops[i]);
    return loop >= 0 ? loop : -1;
}

/* Walks region rid in emission order: after op `store` (*seen set), a
 * load, atomic or copy sets *observed, a store *stored. */
static void accesses_after(const tji_func *fn, int32_t rid, int32_t store, int *seen, int *observed,
                           int *stored)
{
    const tji_region *region = &fn->regions[rid];
    for (int32_t k = 0; k < region->nops && !*observed; k++) {
        const tji_op *op = &fn->ops[region->ops[k]];
        if (region->ops[k] == store)
            *seen = 1;
        else if (*seen && (op->code == TJI_LOAD || op->code == TJI_ATOMIC || op->code == TJI_ATOMIC_CAS ||
                           op->code == TJI_ASYNC_COPY))
            *observed = 1;
        else if (*seen && op->code == TJI_STORE)
            *stored = 1;
        for (int j = 0; j < 2; j++)
            if ((op->code == TJI_FOR || op->code == TJI_IF || op->code == TJI_WHILE) && op->region[j] >= 0)
                accesses_after(fn, op->region[j], store, seen, observed, stored);
    }
}

/* The block's shape is one a TMA store takes: 2-D, 8 to 256 rows (a
 * multiple of 8) of 32 bytes or more, at most TMA_STORE_MAX_BYTES. */
static int block_fits(const tji_type *t)
{
    int eb = tjs_dtype_bits(t->dtype) / 8;
    return t->rank == 2 && (int64_t)t->shape[1] * eb >= 32 && t->shape[0] % 8 == 0 && t->shape[0] <= 256 &&
           tji_numel(t) * eb <= TMA_STORE_MAX_BYTES;
}

int tjp_tma_store_fits(const tji_func *fn, int32_t i)
{
    const tji_op *op = &fn->ops[i];
    if (op->parent < 0 || op->code != TJI_STORE || !op->tma_rank)
        return 0;
    if (!block_fits(tji_typeof(fn, op->args[1])) || contiguous_dim(fn, op) != 1 || loops_around(fn, op) == -2)
        return 0;
    int seen = 0, observed = 0, stored = 0;
    accesses_after(fn, 0, i, &seen, &observed, &stored);
    return !observed;
}

/* A block stored in a tile loop in more boxes than this is staged in this
 * many: the threads write one while the engine reads the other. */
enum { STAGED_BOXES = 2 };

static int store_swizzle_bytes(const tji_type *t)
{
    int64_t row_bytes = (int64_t)t->shape[1] * (tjs_dtype_bits(t->dtype) / 8);
    return row_bytes >= 128 ? 128 : row_bytes >= 64 ? 64 : 32;
}

/* Whether L's lanes and warps stay within one column block of a tile
 * cols wide (per_row columns each): which box a register's element falls
 * in is then the register's alone, the same in every thread. */
static int threads_within_box(const tjp_layout *L, int32_t cols, int32_t per_row)
{
    for (int k = TJP_LANE; k <= TJP_WARP; k++)
        for (int b = 0; b < L->nbits[k]; b++)
            if ((L->basis[k][b] & (uint32_t)(cols - 1)) >= (uint32_t)per_row)
                return 0;
    return 1;
}

/* Warpgroups that own bands of the block's rows: where L's warp bits above
 * the first two (a warpgroup's four warps) move rows by whole bands and
 * every other bit of L stays within a band, warpgroup w alone writes rows
 * [w R/n, (w + 1) R/n) of each box. Returns n (0: no such bands). */
static int warpgroup_bands(const tjp_layout *L, int32_t rows, int32_t cols)
{
    int group_bits = L->nbits[TJP_WARP] - 2;
    int32_t band_rows = group_bits > 0 ? rows >> group_bits : 0;
    if (band_rows < 8 || band_rows % 8)
        return 0;
    for (int k = 0; k < TJP_NIN; k++)
        for (int b = 0; b < L->nbits[k]; b++) {
            uint32_t e = L->basis[k][b];
            if (k == TJP_WARP && b >= 2 ? e != ((uint32_t)band_rows << (b - 2)) * (uint32_t)cols
                                        : e / (uint32_t)cols >= (uint32_t)band_rows)
                return 0;
        }
    return 1 << group_bits;
}

int tjp_tma_store(const tji_func *fn, const tjp_layout_plan *plan, int32_t i, tjp_shared_step *out)
{
    if (!plan->of || !tjp_tma_store_fits(fn, i))
        return 0;
    const tji_op *op = &fn->ops[i];
    const tji_type *t = tji_typeof(fn, op->args[1]);
    int eb = tjs_dtype_bits(t->dtype) / 8;
    memset(out, 0, sizeof *out);
    out->kind = TJP_STEP_TMA_STORE;
    out->swizzle_bytes = store_swizzle_bytes(t);
    tjp_nvmma_swizzle(t->shape[0], t->shape[1], 0, out->swizzle_bytes, eb, &out->use.swizzle);
    out->use.write = out->use.read = plan->of[op->args[1]];
    out->use.numel = tji_numel(t);
    out->use.parts = 1;
    out->use.write_vector = tjp_vector_max(&out->use.write, &out->use.swizzle);
    out->use.read_vector = 1;
    int seen = 0, observed = 0;
    accesses_after(fn, 0, i, &seen, &observed, &out->tma_complete);
    uint32_t box[2];
    int nboxes;
    tjp_tma_store_box(out, t, box, &nboxes);
    if (tjp_tma_store_tile_loop(fn, i) >= 0 && nboxes > STAGED_BOXES &&
        threads_within_box(&out->use.write, t->shape[1], (int32_t)box[1])) {
        out->staged_boxes = STAGED_BOXES;
        out->store_bands = warpgroup_bands(&out->use.write, t->shape[0], t->shape[1]);
    }
    return 1;
}

/* The store's boxes: as a ring's copy of the same block would be (one
 * column block of swizzle_bytes each; a band of its rows is a box of the
 * tensor map where the store has bands). */
void tjp_tma_store_box(const tjp_shared_step *step, const tji_type *tile, uint32_t box[2], int *nboxes)
{
    tjp_ring R = {.tma_contiguous = 1, .swizzle_bytes = step->swizzle_bytes, .elem_bytes = step->use.swizzle.elem_bytes};
    tjp_tma_box(&R, tile, box, nboxes);
}

uint64_t tjp_tma_store_bytes(const tjp_shared_step *step, const tji_type *tile)
{
    uint64_t block = (uint64_t)tji_numel(tile) * (uint64_t)step->use.swizzle.elem_bytes;
    uint32_t box[2];
    int nboxes;
    tjp_tma_store_box(step, tile, box, &nboxes);
    return step->staged_boxes ? block / (uint64_t)nboxes * (uint64_t)step->staged_boxes : block;
}

int64_t tjp_tma_store_loop_bytes(const tji_func *fn, const tjp_param_spec *spec, int32_t i)
{
    const tji_op *op = &fn->ops[i];
    const tji_type *t = tji_typeof(fn, op->args[1]);
    int64_t block = tji_numel(t) * (int64_t)tj_dtype_size(t->dtype);
    int32_t bp = op->args[0];
    while (tji_val(fn, bp)->def_op >= 0 && fn->ops[tji_val(fn, bp)->def_op].code == TJI_ADVANCE)
        bp = fn->ops[tji_val(fn, bp)->def_op].args[0];
    int32_t made = tji_val(fn, bp)->def_op;
    if (made < 0 || fn->ops[made].code != TJI_MAKE_BLOCK_PTR || !block_fits(t) || tji_typeof(fn, bp)->rank != 2)
        return block;
    const int32_t *tensor = fn->ops[made].args; /* base, shape[2], strides[2] */
    if (tjp_tma_access(fn, spec, op, 2, tensor[0], tensor + 1, tensor + 3, t->dtype) != 1)
        return block;
    int seen = 0, observed = 0, stored = 0;
    accesses_after(fn, 0, i, &seen, &observed, &stored);
    if (observed)
        return block;
    tjp_shared_step step = {.swizzle_bytes = store_swizzle_bytes(t), .use.swizzle.elem_bytes = tj_dtype_size(t->dtype)};
    uint32_t box[2];
    int nboxes;
    tjp_tma_store_box(&step, t, box, &nboxes);
    step.staged_boxes = nboxes > STAGED_BOXES ? STAGED_BOXES : 0;
    return (int64_t)tjp_tma_store_bytes(&step, t);
}
