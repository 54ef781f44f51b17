/* SPDX-License-Identifier: MIT */
/*
 * explain.c — the coalescing chain of each memory access, as text.
 *
 * Whether a load or store is coalesced follows from two maps: the layout F
 * (which thread holds which element of the tile) and the address map (which
 * byte each element's pointer points at). tjp_explain writes both down for
 * every LOAD, STORE and atomic of a kernel whose layouts are assigned, and
 * then composes them for one warp request — the first vector of warp 0's
 * 32 lanes, as wide as the code generator makes it — to count the 32-byte
 * sectors that request touches, next to the fewest it could touch. It
 * also names each layout conversion's class, and each DOT's form
 * (accelerate_dot.c: mma.sync and its instruction and warp split, or fma
 * and why) with the layouts of its operands and result.
 *
 * Shared memory gets the same treatment: for each step through it (a
 * conversion that threads cannot do by renaming registers, the partials of
 * a reduction across warps, a prefix sum) the swizzle the swizzle pass
 * chose and, for the writes and the reads, the wavefronts of a warp request
 * against the fewest possible, counted lane by lane (tjp_bank_cost): the
 * bank conflicts per request. All of it is read from the plan: the steps
 * of the swizzle pass, their bytes in the kernel's shared allocation
 * (alloc_shared.c) and the barriers around them and before global accesses
 * (barriers.c), and the user's own (tj_debug_barrier); with a plan that
 * lacks them the text says so.
 *
 * The address map is only what axis info proves: along the pointer's most
 * contiguous dimension, runs of `contiguity` elements are one element apart
 * in memory. Within such a run a lane's address is its offset in the run
 * times the element size; between runs, or along any other dimension, the
 * distance is unknown, and the explanation says so rather than guess: a
 * request spread over several runs counts each run's sectors on its own
 * ("if the runs share no sector"). Sector counts assume a run starts on a
 * 32-byte boundary and state the alignment axis info actually proves.
 *
 * The text is for people (TJIT_DUMP=layouts) and for tests; nothing reads
 * it back.
 */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

#define WARP_LANES 32
#define SECTOR_BYTES 32

/* The plan's decisions at op i: its shared step's bytes (a broadcast's
 * too) and its barriers. */
static void explain_plan_steps(tjs_buf *b, const tjp_layout_plan *plan, int32_t i)
{
    if (!plan->shared || !plan->barrier || i >= plan->nops)
        return;
    const tjp_shared_step *step = &plan->shared[i];
    if (step->kind == TJP_STEP_BROADCAST)
        tjs_buf_printf(b, "    old value to its copies in other warps through shared memory\n");
    if (step->kind != TJP_STEP_NONE) {
        tjs_buf_printf(b, "    shared bytes %llu..%llu", (unsigned long long)step->offset,
                       (unsigned long long)(step->offset + step->bytes));
        if (step->index_bytes)
            tjs_buf_printf(b, ", indices %llu..%llu", (unsigned long long)step->index_offset,
                           (unsigned long long)(step->index_offset + step->index_bytes));
        tjs_buf_printf(b, "\n");
    }
    uint8_t bar = plan->barrier[i];
    if (bar & TJP_BARRIER_BEFORE)
        tjs_buf_printf(b, "    barrier before it: memory order with earlier global accesses\n");
    if (bar & TJP_BARRIER_SHARED_WRITE)
        tjs_buf_printf(b, "    barrier before the shared writes: earlier readers are done\n");
    if (bar & TJP_BARRIER_SHARED_READ)
        tjs_buf_printf(b, "    barrier between the shared writes and reads\n");
}

static int elem_bytes(tj_dtype dtype)
{
    int bits = tjs_dtype_bits(dtype);
    return bits < 8 ? 1 : bits / 8;
}

/* Row-major coordinates of element e of a tile of the given rank and shape. */
static void unravel(const tjp_layout *L, uint32_t e, int64_t *coord)
{
    for (int d = L->rank - 1; d >= 0; d--) {
        coord[d] = e % (uint32_t)L->shape[d];
        e /= (uint32_t)L->shape[d];
    }
}

static void print_coord(tjs_buf *b, const tjp_layout *L, uint32_t e)
{
    int64_t c[TJ_MAX_RANK];
    unravel(L, e, c);
    tjs_buf_printf(b, "(");
    for (int d = 0; d < L->rank; d++)
        tjs_buf_printf(b, "%s%lld", d ? "," : "", (long long)c[d]);
    tjs_buf_printf(b, ")");
}

/* How many consecutive elements along dim each thread holds in its lowest
 * registers: the vector the layout allows. */
static int32_t layout_run(const tjp_layout *L, int dim)
{
    uint32_t stride = 1;
    for (int d = L->rank - 1; d > dim; d--)
        stride *= (uint32_t)L->shape[d];
    int32_t run = 1;
    for (int i = 0; i < L->nbits[TJP_REG] && L->basis[TJP_REG][i] == (uint32_t)run * stride; i++)
        run *= 2;
    return run;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The warp request of warp 0 for registers 0..v-1 (one instruction of v
 * elements a lane): element coordinates of the lanes, the address model
 * where axis info proves one, and the 32-byte sectors touched. */
static void explain_request(tjs_buf *b, const tjp_layout *L, const tjp_axis_value *p, int dim,
                            int es, int v)
{
    enum { MAX_ELEMS = WARP_LANES * 16 };
    int lanes = 1 << L->nbits[TJP_LANE];
    if (lanes > WARP_LANES)
        lanes = WARP_LANES;
    if (v < 1 || v > 16 || v > 1 << L->nbits[TJP_REG])
        v = 1;
    int n = lanes * v;
    uint32_t elems[MAX_ELEMS];
    int64_t coord[MAX_ELEMS][TJ_MAX_RANK];
    for (int l = 0; l < lanes; l++)
        for (int r = 0; r < v; r++) {
            elems[l * v + r] = tjp_layout_apply(L, (uint32_t)r, (uint32_t)l, 0);
            unravel(L, elems[l * v + r], coord[l * v + r]);
        }
    int64_t sorted[MAX_ELEMS];
    for (int k = 0; k < n; k++)
        sorted[k] = elems[k];
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_i64);
    int distinct = 0;
    for (int k = 0; k < n; k++)
        distinct += k == 0 || sorted[k] != sorted[k - 1];
    int minimum = (distinct * es + SECTOR_BYTES - 1) / SECTOR_BYTES;

    tjs_buf_printf(b, "    warp request (warp 0, %d lanes x %d element%s): %d distinct elements\n",
                   lanes, v, v == 1 ? "" : "s", distinct);
    /* Addresses are known relative to each other only within one run: the
     * same coordinates but along dim, the same contiguity run along dim.
     * Each run of the request is counted from its own start. */
    int32_t run = p->contiguity[dim];
    int group[MAX_ELEMS], ngroups = 0, leader[MAX_ELEMS];
    for (int k = 0; k < n; k++) {
        int g = 0;
        for (; g < ngroups; g++) {
            const int64_t *c0 = coord[leader[g]];
            int same = coord[k][dim] / run == c0[dim] / run;
            for (int d = 0; d < L->rank && same; d++)
                same = d == dim || coord[k][d] == c0[d];
            if (same)
                break;
        }
        if (g == ngroups)
            leader[ngroups++] = k;
        group[k] = g;
    }
    int64_t sector[MAX_ELEMS];
    for (int k = 0; k < n; k++) {
        int64_t run_start = coord[leader[group[k]]][dim] / run * run;
        

/* a group's sectors never meet another's: number them apart */
        sector[k] = (int64_t)group[k] * MAX_ELEMS * 16 + (coord[k][dim] - run_start) * es / SECTOR_BYTES;
    }
    if (ngroups == 1) {
        int64_t run_start = coord[0][dim] / run * run;
        tjs_buf_printf(b, "    address map: run start + (index along dim %d - %lld) x %d bytes; "
                       "lane byte offsets:", dim, (long long)run_start, es);
        for (int k = 0; k < n; k += v)
            tjs_buf_printf(b, " %lld", (long long)((coord[k][dim] - run_start) * es));
        tjs_buf_printf(b, "\n");
    } else {
        int per = n / ngroups;
        tjs_buf_printf(b, "    address map: %d runs along dim %d of %d bytes each (%d lanes x %d), "
                       "their distance unknown; within a run, start + index x %d bytes\n", ngroups,
                       dim, per * es, per / v, v, es);
    }
    qsort(sector, (size_t)n, sizeof *sector, cmp_i64);
    int sectors = 0;
    for (int k = 0; k < n; k++)
        sectors += k == 0 || sector[k] != sector[k - 1];
    tjs_buf_printf(b, "    sectors per warp request: %d%s (minimum possible %d)", sectors,
                   ngroups > 1 ? " if the runs share no sector" : "", minimum);
    if (p->divisibility[dim] < SECTOR_BYTES)
        tjs_buf_printf(b, "; assumes 32-byte aligned runs, axis info proves %d bytes, so up to %d",
                       (int)p->divisibility[dim], sectors + ngroups);
    tjs_buf_printf(b, "\n");
}

static void explain_tma_store(tjs_buf *b, const tji_func *fn, const tjp_layout_plan *plan, int32_t i);

static void explain_access(tjs_buf *b, const tji_func *fn, const tjp_layout_plan *plan,
                           const tjp_axis_info_result *axis, int32_t i)
{
    const tji_op *op = &fn->ops[i];
    int32_t ptr = op->args[0];
    const tji_type *t = tji_typeof(fn, ptr);
    int es = elem_bytes(t->dtype);
    tjs_buf_printf(b, "%s (op %d) at %s:%d, pointer %%%d: ", tji_opcode_name(op->code), (int)i,
                   op->loc.file ? op->loc.file : "?", op->loc.line, (int)ptr);
    tji_print_type(b, t);
    tjs_buf_printf(b, "\n");
    if (t->rank == 0) {
        tjs_buf_printf(b, "    scalar pointer: every thread uses one address, 1 sector\n");
        return;
    }
    if (plan->shared && i < plan->nops && plan->shared[i].kind == TJP_STEP_TMA_STORE) {
        explain_tma_store(b, fn, plan, i);
        explain_plan_steps(b, plan, i);
        return;
    }
    if (ptr > axis->nvalues || ptr > plan->nvalues) {
        tjs_buf_printf(b, "    (the analysis predates this op)\n");
        return;
    }
    const tjp_layout *L = &plan->of[ptr];
    const tjp_axis_value *p = &axis->of[ptr];
    tjs_buf_printf(b, "    layout F: ");
    tjp_layout_print(b, L);
    tjs_buf_printf(b, "\n    lanes 0..3 of warp 0, register 0 hold:");
    for (uint32_t l = 0; l < 4 && l < 1u << L->nbits[TJP_LANE]; l++) {
        tjs_buf_printf(b, " ");
        print_coord(b, L, tjp_layout_apply(L, 0, l, 0));
    }
    tjs_buf_printf(b, "\n");

    int dim = 0;
    for (int d = 1; d < t->rank; d++)
        if (p->contiguity[d] >= p->contiguity[dim])
            dim = d;
    int32_t axis_elems = 1, mask_constancy = t->shape[dim];
    if (op->code == TJI_LOAD || op->code == TJI_STORE) {
        tjp_access acc;
        if (tjp_access_vector(fn, axis, i, &acc) == TJ_OK) {
            dim = acc.dim;
            axis_elems = acc.vector_bytes / es;
            mask_constancy = acc.mask_constancy;
        }
    }
    tjs_buf_printf(b, "    pointer: contiguous along dim %d, contiguity %d, divisibility %d bytes\n",
                   dim, (int)p->contiguity[dim], (int)p->divisibility[dim]);
    /* the width the code generator uses: the plan's */
    int32_t layout_elems = layout_run(L, dim);
    int width = plan->vector && i < plan->nops && plan->vector[i] ? plan->vector[i] : 1;
    if (op->code == TJI_ATOMIC || op->code == TJI_ATOMIC_CAS)
        tjs_buf_printf(b, "    vector: 1 element (atomics go element by element)\n");
    else
        tjs_buf_printf(b, "    vector: %d element(s) = %d bytes (axis info allows %d, the layout "
                       "gives %d per thread, mask constancy %d)\n", width, width * es,
                       (int)axis_elems, (int)layout_elems, (int)mask_constancy);
    explain_request(b, L, p, dim, es, width);
    explain_plan_steps(b, plan, i);
}

/* One side (writes or reads) of a shared-memory buffer, `vector`
 * elements per access: wavefronts per warp request against the minimum,
 * over all requests. */
static void explain_banks(tjs_buf *b, const char *side, const tjp_layout *L, const tjp_swizzle *S, int vector)
{
    tjp_bank_count n;
    tjp_bank_cost(L, S, vector, &n);
    if (vector > 1)
        tjs_buf_printf(b, "    shared %s: %d-byte vectors\n", side, vector * S->elem_bytes);
    tjs_buf_printf(b, "    shared %s: %d wavefront(s) per warp request at worst (minimum %d); "
                   "%lld requests, %lld wavefronts (minimum %lld); ", side, n.worst, n.worst_minimum,
                   (long long)n.requests, (long long)n.wavefronts, (long long)n.minimum);
    if (n.wavefronts == n.minimum)
        tjs_buf_printf(b, "bank conflicts: none\n");
    else
        tjs_buf_printf(b, "bank conflicts: %lld extra wavefronts\n", (long long)(n.wavefronts - n.minimum));
}

/* A TMA store: the block staged by the threads, stored by the engine. */
static void explain_tma_store(tjs_buf *b, const tji_func *fn, const tjp_layout_plan *plan, int32_t i)
{
    const tjp_shared_step *step = &plan->shared[i];
    uint32_t box[2];
    int nboxes;
    tjp_tma_store_box(step, tji_typeof(fn, fn->ops[i].args[1]), box, &nboxes);
    if (step->store_bands)
        tjs_buf_printf(b, "    TMA store (cp.async.bulk.tensor) to tensor map %d, %d boxes of %u x %u staged %d at a "
                          "time, each in %d bands of %u rows, one per warpgroup: a warpgroup writes its band of a box "
                          "to shared memory in the NVMMA layout (%d-byte swizzle) once the engine has read its band "
                          "%d boxes before, meets only its own threads at a named barrier, and its first thread "
                          "stores the band; the engine clips at the tensor's edges\n",
                       step->tma_map, nboxes, box[0], box[1], step->staged_boxes, step->store_bands,
                       box[0] / (uint32_t)step->store_bands, step->swizzle_bytes, step->staged_boxes);
    else if (step->staged_boxes)
        tjs_buf_printf(b, "    TMA store (cp.async.bulk.tensor) to tensor map %d, %d boxes of %u x %u staged %d at a "
                          "time: the threads write a box to shared memory in the NVMMA layout (%d-byte swizzle) "
                          "once the engine has read the one %d boxes before it, then thread 0 stores it and the "
                          "next box is written while it goes; the engine clips at the tensor's edges\n",
                       step->tma_map, nboxes, box[0], box[1], step->staged_boxes, step->swizzle_bytes,
                       step->staged_boxes);
    else
        tjs_buf_printf(b, "    TMA store (cp.async.bulk.tensor) to tensor map %d, %d box%s of %u x %u, issued by "
                          "thread 0 once every thread has written the block to shared memory in the NVMMA layout "
                          "(%d-byte swizzle); the engine clips at the tensor's edges; thread 0 then waits until "
                          "%s\n", step->tma_map, nboxes, nboxes == 1 ? "" : "es", box[0], box[1], step->swizzle_bytes,
                       step->tma_complete ? "the writes are done (a store follows)" : "the block has been read");
    explain_banks(b, "writes", &step->use.write, &step->use.swizzle, step->use.write_vector);
}

static void explain_buffer(tjs_buf *b, const char *what, const tjp_shared_use *use, const tjp_swizzle *S)
{
    tjs_buf_printf(b, "    shared memory%s: %d x %lld elements of %d bytes, swizzle: ", what, use->parts,
                   (long long)use->numel, S->elem_bytes);
    tjp_swizzle_print(b, S);
    tjs_buf_printf(b, "\n");
    int values = S == &use->swizzle; /* the index buffer is accessed element by element */
    explain_banks(b, "writes", &use->write, S, values && use->write_vector ? use->write_vector : 1);
    explain_banks(b, use->part_lanes ? "reads (a part per lane)"
                     : use->parts > 1 ? "reads (of each part)" : "reads", &use->read, S,
                  values && use->read_vector ? use->read_vector : 1);
}

/* 16-byte vector writes of W under S and their bank conflicts. */
static void explain_vector_writes(tjs_buf *b, const tjp_layout *W, const tjp_swizzle *S)
{
    tjp_bank_count n;
    tjp_vector_write_cost(W, S, &n);
    tjs_buf_printf(b, "    shared writes: 16-byte vectors; %lld quarter-warp phases, %lld wavefronts "
                   "(minimum %lld); bank conflicts: %s\n", (long long)n.requests, (long long)n.wavefronts,
                   (long long)n.minimum, n.wavefronts == n.minimum ? "none" : "some");
}

/* ldmatrix.x<m>[.trans] reads of R under S and their bank conflicts. */
static void explain_ldmatrix_reads(tjs_buf *b, const tjp_layout *R, const tjp_swizzle *S, int m, int trans)
{
    tjp_bank_count n;
    tjp_ldmatrix_cost(R, S, &n);
    tjs_buf_printf(b, "    shared reads: ldmatrix.sync.aligned.m8n8.x%d%s.b16; %lld matrix phases, %lld "
                   "wavefronts (minimum %lld); bank conflicts: %s\n", m, trans ? ".trans" : "",
                   (long long)n.requests, (long long)n.wavefronts, (long long)n.minimum,
                   n.wavefronts == n.minimum ? "none" : "some");
}

/* A step through shared memory: the layouts that write and read the
 * buffer, its swizzle, and the bank conflicts of both sides. */
static void explain_shared(tjs_buf *b, const tjp_layout_plan *plan, int32_t i)
{
    const tjp_shared_use *use = &plan->shared[i].use;
    tjs_buf_printf(b, "    shared writes in: ");
    tjp_layout_print(b, &use->write);
    tjs_buf_printf(b, "\n    shared reads in:  ");
    tjp_layout_print(b, &use->read);
    tjs_buf_printf(b, "\n");
    if (use->ldmatrix) {
        tjs_buf_printf(b, "    shared memory: %lld elements of %d bytes, swizzle: ", (long long)use->numel,
                       use->swizzle.elem_bytes);
        tjp_swizzle_print(b, &use->swizzle);
        tjs_buf_printf(b, " (16-byte rows kept whole)\n");
        explain_vector_writes(b, &use->write, &use->swizzle);
        explain_ldmatrix_reads(b, &use->read, &use->swizzle, use->ldmatrix, use->ldmatrix_trans);
    } else {
        explain_buffer(b, "", use, &use->swizzle);
    }
    if (use->has_index)
        explain_buffer(b, " (indices)", use, &use->index_swizzle);
    explain_plan_steps(b, plan, i);
}

static void explain_convert(tjs_buf *b, const tji_func *fn, const tjp_layout_plan *plan, int32_t i)
{
    const tji_op *op = &fn->ops[i];
    int32_t src = op->args[0], dst = op->result;
    tjs_buf_printf(b, "convert (op %d) at %s:%d, %%%d -> %%%d\n", (int)i,
                   op->loc.file ? op->loc.file : "?", op->loc.line, (int)src, (int)dst);
    if (src > plan->nvalues || dst > plan->nvalues) {
        tjs_buf_printf(b, "    (the plan predates this op)\n");
        return;
    }
    tjs_buf_printf(b, "    from: ");
    tjp_layout_print(b, &plan->of[src]);
    tjs_buf_printf(b, "\n    to:   ");
    tjp_layout_print(b, &plan->of[dst]);
    tjs_buf_printf(b, "\n    class: %s\n",
                   tjp_conversion_name(tjp_layout_conversion(&plan->of[src], &plan->of[dst])));
    if (!plan->shared)
        tjs_buf_printf(b, "    (the plan has no shared-memory steps)\n");
    else if (plan->shared[i].kind == TJP_STEP_CONVERT)
        explain_shared(b, plan, i);
    else
        tjs_buf_printf(b, "    registers renamed, no shared memory\n");
}

/* REDUCE across warps and CUMSUM: their steps through shared memory. */
static void explain_shared_op(tjs_buf *b, const tji_func *fn, const tjp_layout_plan *plan, int32_t i)
{
    if (!plan->shared || (plan->shared[i].kind != TJP_STEP_REDUCE && plan->shared[i].kind != TJP_STEP_CUMSUM))
        return;
    const tjp_shared_use use = plan->shared[i].use;
    const tji_op *op = &fn->ops[i];
    tjs_buf_printf(b, "%s (op %d) at %s:%d, %%%d along axis %d: ", tji_opcode_name(op->code), (int)i,
                   op->loc.file ? op->loc.file : "?", op->loc.line, (int)op->args[0], op->axis);
    if (op->code == TJI_REDUCE && use.part_lanes)
        tjs_buf_printf(b, "partial results of %d warps through shared memory, lane l reads "
                       "part l %% %d and butterfly shuffles combine them\n", use.parts, use.parts);
    else if (op->code == TJI_REDUCE)
        tjs_buf_printf(b, "partial results of %d warps through shared memory\n", use.parts);
    else
        tjs_buf_printf(b, "each element reads its prefix from shared memory (reads: step 0; the "
                       "other steps move every lane alike)\n");
    explain_shared(b, plan, i);
}

/* A DOT: its form (accelerate_dot.c), the instruction and warp split, and
 * the layouts of its result and operands. */
static void explain_dot(tjs_buf *b, const tji_func *fn, const tjp_layout_plan *plan, int32_t i)
{
    const tji_op *op = &fn->ops[i];
    const tjp_dot_choice *ch = plan->dot && i < plan->nops ? &plan->dot[i] : NULL;
    tjs_buf_printf(b, "dot (op %d) at %s:%d, %%%d x %%%d + %%%d: ", (int)i, op->loc.file ? op->loc.file : "?",
                   op->loc.line, (int)op->args[0], (int)op->args[1], (int)op->args[2]);
    if (!ch || !ch->form)
        tjs_buf_printf(b, "no form chosen (tjp_accelerate_dots has not run)\n");
    else if (ch->form == TJP_DOT_WGMMA) {
        int trans_a = tjp_wgmma_reads_ring(ch, 0) && tjp_wgmma_operand_trans(fn, op->args[0]);
        int trans_b = tjp_wgmma_reads_ring(ch, 1) && tjp_wgmma_operand_trans(fn, op->args[1]);
        tjs_buf_printf(b, "wgmma.mma_async.m64n%dk%d on tensor cores, %d warpgroup%s along %s, %s%s%s\n",
                       ch->instr_n, 32 / ch->elem_bytes, ch->warps_m / 4, ch->warps_m > 4 ? "s" : "",
                       ch->b_in_regs ? "N" : "M",
                       ch->a_in_regs   ? "A from registers, B read from its ring in shared memory"
                       : ch->b_in_regs ? "computed transposed (C^T = B^T A^T: tf32 B stored along N cannot be "
                                         "read from a descriptor), B from registers, A read from its ring"
                                       : "operands read from their rings in shared memory",
                       trans_a && trans_b ? " (A and B through tj_trans: the descriptors read each ring the other "
                                            "way round)"
                       : trans_a          ? " (A through tj_trans: the descriptor reads its ring the other way round)"
                       : trans_b          ? " (B through tj_trans: the descriptor reads its ring the other way round)"
                                          : "",
                       ch->async ? ", one group left in flight across iterations" : ", waited for at once");
        for (int a = 0; a < 2; a++) {
            int trans;
            int32_t read = tjp_wgmma_reads_ring(ch, a) ? tjp_wgmma_operand_read(fn, op->args[a], &trans) : -1;
            int readers = read >= 0 ? tjp_wgmma_readers(fn, read) : 0;
            if (readers > 1)
                tjs_buf_printf(b, "  %s's ring slot is read by %d dot operands through descriptors; %s\n",
                               a ? "B" : "A", readers,
                               tjp_wgmma_last_reader(fn, i, a) ? "this one, the last, releases it"
                                                               : "the last of them releases it");
        }
    } else if (ch->form == TJP_DOT_MMA)
        tjs_buf_printf(b, "mma.sync.%s%s on tensor cores, warps %d (M) x %d (N)%s\n",
                       tjp_mma_instruction(fn, op, ch), ch->passes == 3 ? " x3 (tf32x3: lo*hi + hi*lo + hi*hi)" : "",
                       ch->warps_m, ch->warps_n,
                       tjs_dtype_is_fp8(tji_typeof(fn, op->args[0])->dtype) && ch->elem_bytes == 2
                           ? ", fp8 widened to f16 in registers (fp8's own mma.sync needs sm_89 and K >= 32)"
                           : "");
    else
        tjs_buf_printf(b, "fma per thread, k in order%s%s%s\n", ch->why ? " (not mma: " : "",
                       ch->why ? ch->why : "", ch->why ? ")" : "");
    static const char *const what[3] = {"a", "b", "acc"};
    for (int k = 0; k < 3 && k < op->nargs; k++)
        if (op->args[k] > 0 && op->args[k] <= plan->nvalues) {
            tjs_buf_printf(b, "    %-6s ", what[k]);
            tjp_layout_print(b, &plan->of[op->args[k]]);
            tjs_buf_printf(b, "\n");
        }
    tjs_buf_printf(b, "    result ");
    tjp_layout_print(b, &plan->of[op->result]);
    tjs_buf_printf(b, "\n");
}

/* The ops of region r and the regions nested in it, in program order (the
 * op array is in creation order, and the layout pass appends conversions). */
/* A copy into a ring of pipelined loads, or a read of it: the layout, the
 * ring (slots, bytes, swizzle) and the bank conflicts of this side. */
static void explain_ring_op(tjs_buf *b, const tji_func *fn, const tjp_layout_plan *plan, int32_t i)
{
    const tji_op *op = &fn->ops[i];
    int copy = op->code == TJI_ASYNC_COPY;
    int32_t v = copy ? op->args[0] : op->result;
    tjs_buf_printf(b, "%s (op %d) at %s:%d, ring %d\n", copy ? "async copy" : "ring read", (int)i,
                   op->loc.file ? op->loc.file : "?", op->loc.line, op->ring);
    if (!plan->rings || op->ring < 0 || op->ring >= plan->nrings || v > plan->nvalues) {
        tjs_buf_printf(b, "    (the plan has no rings yet)\n");
        return;
    }
    const tjp_ring *R = &plan->rings[op->ring];
    tjs_buf_printf(b, "    layout: ");
    tjp_layout_print(b, &plan->of[v]);
    tjs_buf_printf(b, "\n    ring: %d slots of %llu bytes at byte %llu, %lld elements of %d bytes, swizzle: ",
                   R->slots, (unsigned long long)R->slot_bytes, (unsigned long long)R->offset,
                   (long long)R->numel, R->elem_bytes);
    tjp_swizzle_print(b, &R->swizzle);
    tjs_buf_printf(b, "\n");
    if (R->family != op->ring)
        tjs_buf_printf(b, "    in ring %d's family: its bytes and mbarriers, the fills of each slot following "
                          "that ring's\n", R->family);
    if (R->wgmma)
        tjs_buf_printf(b, "    NVMMA layout for wgmma: %d-byte swizzle, stored %s\n", R->swizzle_bytes,
                       R->transposed ? "with its last two dimensions swapped" : "by rows");
    if (copy && R->tma) {
        uint32_t box[2];
        int nboxes;
        tjp_tma_box(R, tji_typeof(fn, v), box, &nboxes);
        tjs_buf_printf(b, "    copies: TMA (cp.async.bulk.tensor) from tensor map %d, %d box%s of %u x %u, ",
                       R->tma_map, nboxes, nboxes == 1 ? "" : "es", box[0], box[1]);
        if (plan->warp_spec)
            tjs_buf_printf(b, "the producer warp issuing once the slot's empty mbarrier (at byte %llu) says "
                              "the consumers are done with it, completed on its full mbarrier",
                           (unsigned long long)tjp_ring_empty_barriers(R));
        else
            tjs_buf_printf(b, "thread 0 issuing, completed on the slot's mbarrier");
        tjs_buf_printf(b, " (at byte %llu)\n", (unsigned long long)R->barriers);
    } else if (copy) {
        int vector = plan->vector && i < plan->nops ? plan->vector[i] : 1;
        tjs_buf_printf(b, "    copies: cp.async of up to %d bytes per thread and vector%s\n", vector * R->elem_bytes,
                       op->tma_rank ? " (its tensor could be a TMA copy's, but the ring is not one wgmma reads "
                                      "in the tensor's order)" : "");
        if (R->ldmatrix)
            explain_vector_writes(b, &plan->of[v], &R->swizzle);
        else
            explain_banks(b, "writes", &plan->of[v], &R->swizzle, vector);
    } else if (R->wgmma) {
        tjs_buf_printf(b, "    reads: none; wgmma reads the slot through matrix descriptors%s\n",
                       R->tma ? ", once the slot's mbarrier says the TMA copy landed" : "");
    } else if (R->ldmatrix) {
        explain_ldmatrix_reads(b, &plan->of[v], &R->swizzle, R->ldmatrix, R->ldmatrix_trans);
    } else {
        explain_banks(b, "reads", &plan->of[v], &R->swizzle, 1);
    }
}

/* Warp specialization (warp_specialize.c): the two sides, or why not
 * where the kernel has TMA rings that could have had a producer. */
static void explain_warp_spec(tjs_buf *b, const tjp_layout_plan *plan)
{
    const tjp_warp_spec *ws = plan->warp_spec;
    if (ws) {
        tjs_buf_printf(b, "warp specialization: warps %d..%d are the producer (the first issues the TMA copies "
                          "of %s op %d%s), warps 0..%d the consumers (everything else)",
                       plan->num_warps, plan->num_warps + ws->producer_warps - 1,
                       ws->nloops > 1 ? "the loops from" : "the loop,", (int)ws->loop,
                       ws->nloops > 1 ? " on" : "", plan->num_warps - 1);
        if (ws->consumer_regs)
            tjs_buf_printf(b, "; setmaxnreg %d for the producer, %d for the consumers (%d at entry)",
                           ws->producer_regs, ws->consumer_regs, ws->entry_regs);
        tjs_buf_printf(b, "\n");
        if (plan->pairs)
            tjs_buf_printf(b, "block pairs: blocks 2c and 2c + 1 are a cluster walking tiles t and t ^ 1; a copy "
                              "whose coordinates come from the same values for both tiles (#peer ops: the "
                              "peer's, evaluated again) is issued half by each block, multicast to both; each "
                              "slot's empty mbarrier counts both blocks' consumer warps\n");
        else
            tjs_buf_printf(b, "block pairs: none (%s)\n", plan->why_not_paired ? plan->why_not_paired : "not planned");
        return;
    }
    for (int r = 0; plan->rings && r < plan->nrings; r++)
        if (plan->rings[r].op >= 0 && plan->rings[r].tma) {
            tjs_buf_printf(b, "warp specialization: none (%s)\n",
                           plan->why_not_specialized ? plan->why_not_specialized : "not planned");
            return;
        }
}

static void explain_region(tjs_buf *b, const tji_func *fn, const tjp_layout_plan *plan,
                           const tjp_axis_info_result *axis, int32_t r)
{
    const tji_region *region = &fn->regions[r];
    for (int32_t k = 0; k < region->nops; k++) {
        int32_t i = region->ops[k];
        const tji_op *op = &fn->ops[i];
        if (op->code == TJI_LOAD || op->code == TJI_STORE || op->code == TJI_ATOMIC ||
            op->code == TJI_ATOMIC_CAS)
            explain_access(b, fn, plan, axis, i);
        else if (op->code == TJI_CONVERT)
            explain_convert(b, fn, plan, i);
        else if (op->code == TJI_REDUCE || op->code == TJI_CUMSUM)
            explain_shared_op(b, fn, plan, i);
        else if (op->code == TJI_DOT)
            explain_dot(b, fn, plan, i);
        else if (op->code == TJI_ASYNC_COPY || op->code == TJI_LOCAL_LOAD)
            explain_ring_op(b, fn, plan, i);
        else if (op->code == TJI_BARRIER)
            tjs_buf_printf(b, "debug_barrier (op %d) at %s:%d: bar.sync 0, every thread of the "
                           "program waits\n", (int)i, op->loc.file ? op->loc.file : "?", op->loc.line);
        for (int n = 0; n < 2; n++)
            if (op->region[n] >= 0)
                explain_region(b, fn, plan, axis, op->region[n]);
    }
}

char *tjp_explain(const tji_func *fn, const tjp_layout_plan *plan, const tjp_axis_info_result *axis)
{
    if (!fn || !plan || !axis || fn->nregions < 1)
        return NULL;
    tjs_buf b = {0};
    tjs_buf_printf(&b, "layouts of kernel '%s' (%d warps)\n", fn->name, plan->num_warps);
    if (plan->shared)
        tjs_buf_printf(&b, "shared memory: %llu bytes (one dynamic allocation)\n",
                       (unsigned long long)plan->shared_bytes);
    else
        tjs_buf_printf(&b, "shared memory: not planned (tjp_alloc_shared has not run)\n");
    explain_warp_spec(&b, plan);
    explain_region(&b, fn, plan, axis, 0);
    return b.data;
}
