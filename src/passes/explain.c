/*
 * explain.c — the coalescing chain of each memory access, as text.
 *
 * Whether a load or store is coalesced follows from two maps: the layout F
 * (which thread holds which element of the tile) and the address map (which
 * byte each element's pointer points at). tjp_explain writes both down for
 * every LOAD, STORE and atomic of a kernel whose layouts are assigned, and
 * then composes them for one warp request — register 0 of warp 0, all 32
 * lanes — to count the 32-byte sectors that request touches, next to the
 * fewest it could touch. It also names each layout conversion's class.
 *
 * Shared memory gets the same treatment: for each step through it (a
 * conversion that threads cannot do by renaming registers, the partials of
 * a reduction across warps, a prefix sum) the swizzle the swizzle pass
 * chose and, for the writes and the reads, the wavefronts of a warp request
 * against the fewest possible, counted lane by lane (tjp_bank_cost): the
 * bank conflicts per request.
 *
 * The address map is only what axis info proves: along the pointer's most
 * contiguous dimension, runs of `contiguity` elements are one element apart
 * in memory. Within such a run a lane's address is its offset in the run
 * times the element size; between runs, or along any other dimension, the
 * stride is unknown, and the explanation says so rather than guess. Sector
 * counts assume a run starts on a 32-byte boundary and state the alignment
 * axis info actually proves.
 *
 * The text is for people (TJIT_DUMP=layouts) and for tests; nothing reads
 * it back.
 */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

#define WARP_LANES 32
#define SECTOR_BYTES 32

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

/* The warp request of register 0, warp 0: element coordinates of the 32
 * lanes, the address model where axis info proves one, and sectors. */
static void explain_request(tjs_buf *b, const tjp_layout *L, const tjp_axis_value *p, int dim,
                            int es)
{
    int lanes = 1 << L->nbits[TJP_LANE];
    if (lanes > WARP_LANES)
        lanes = WARP_LANES;
    uint32_t elems[WARP_LANES];
    int64_t coord[WARP_LANES][TJ_MAX_RANK];
    for (int l = 0; l < lanes; l++) {
        elems[l] = tjp_layout_apply(L, 0, (uint32_t)l, 0);
        unravel(L, elems[l], coord[l]);
    }
    int64_t sorted[WARP_LANES];
    for (int l = 0; l < lanes; l++)
        sorted[l] = elems[l];
    qsort(sorted, (size_t)lanes, sizeof *sorted, cmp_i64);
    int distinct = 0;
    for (int l = 0; l < lanes; l++)
        distinct += l == 0 || sorted[l] != sorted[l - 1];
    int minimum = (distinct * es + SECTOR_BYTES - 1) / SECTOR_BYTES;

    tjs_buf_printf(b, "    warp request (register 0, warp 0, %d lanes): %d distinct elements\n",
                   lanes, distinct);
    /* The lanes must share every coordinate but dim, and one contiguity run
     * along dim, for their addresses to be known relative to each other. */
    int32_t run = p->contiguity[dim];
    for (int l = 1; l < lanes; l++) {
        for (int d = 0; d < L->rank; d++)
            if (d != dim && coord[l][d] != coord[0][d]) {
                tjs_buf_printf(b, "    address map: lanes differ along dim %d, stride unknown; "
                               "sectors: unknown (minimum possible %d)\n", d, minimum);
                return;
            }
        if (coord[l][dim] / run != coord[0][dim] / run) {
            tjs_buf_printf(b, "    address map: lanes span contiguity runs of %d along dim %d, "
                           "stride between runs unknown; sectors: unknown (minimum possible %d)\n",
                           (int)run, dim, minimum);
            return;
        }
    }
    int64_t run_start = coord[0][dim] / run * run;
    int64_t sector[WARP_LANES];
    tjs_buf_printf(b, "    address map: run start + (index along dim %d - %lld) x %d bytes; "
                   "lane byte offsets:", dim, (long long)run_start, es);
    for (int l = 0; l < lanes; l++) {
        int64_t offset = (coord[l][dim] - run_start) * es;
        sector[l] = offset / SECTOR_BYTES;
        tjs_buf_printf(b, " %lld", (long long)offset);
    }
    qsort(sector, (size_t)lanes, sizeof *sector, cmp_i64);
    int sectors = 0;
    for (int l = 0; l < lanes; l++)
        sectors += l == 0 || sector[l] != sector[l - 1];
    tjs_buf_printf(b, "\n    sectors per warp request: %d (minimum possible %d)", sectors, minimum);
    if (p->divisibility[dim] < SECTOR_BYTES)
        tjs_buf_printf(b, "; assumes a 32-byte aligned run start, axis info proves %d bytes, "
                       "so up to %d", (int)p->divisibility[dim], sectors + 1);
    tjs_buf_printf(b, "\n");
}

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
    int32_t layout_elems = layout_run(L, dim), width = axis_elems;
    if (layout_elems < width)
        width = layout_elems;
    if (mask_constancy < width)
        width = mask_constancy;
    if (op->code == TJI_ATOMIC || op->code == TJI_ATOMIC_CAS)
        tjs_buf_printf(b, "    vector: 1 element (atomics go element by element)\n");
    else
        tjs_buf_printf(b, "    vector: %d element(s) = %d bytes (axis info allows %d, the layout "
                       "gives %d per thread, mask constancy %d)\n", (int)width, (int)width * es,
                       (int)axis_elems, (int)layout_elems, (int)mask_constancy);
    explain_request(b, L, p, dim, es);
}

/* One side (writes or reads) of a shared-memory buffer: wavefronts per
 * warp request against the minimum, over all requests. */
static void explain_banks(tjs_buf *b, const char *side, const tjp_layout *L, const tjp_swizzle *S)
{
    tjp_bank_count n;
    tjp_bank_cost(L, S, &n);
    tjs_buf_printf(b, "    shared %s: %d wavefront(s) per warp request at worst (minimum %d); "
                   "%lld requests, %lld wavefronts (minimum %lld); ", side, n.worst, n.worst_minimum,
                   (long long)n.requests, (long long)n.wavefronts, (long long)n.minimum);
    if (n.wavefronts == n.minimum)
        tjs_buf_printf(b, "bank conflicts: none\n");
    else
        tjs_buf_printf(b, "bank conflicts: %lld extra wavefronts\n", (long long)(n.wavefronts - n.minimum));
}

static void explain_buffer(tjs_buf *b, const char *what, const tjp_shared_use *use, const tjp_swizzle *S)
{
    tjs_buf_printf(b, "    shared memory%s: %d x %lld elements of %d bytes, swizzle: ", what, use->parts,
                   (long long)use->numel, S->elem_bytes);
    tjp_swizzle_print(b, S);
    tjs_buf_printf(b, "\n");
    explain_banks(b, "writes", &use->write, S);
    explain_banks(b, use->parts > 1 ? "reads (of each part)" : "reads", &use->read, S);
}

/* A step through shared memory: the layouts that write and read the
 * buffer, its swizzle, and the bank conflicts of both sides. */
static void explain_shared(tjs_buf *b, const tjp_shared_use *use)
{
    tjs_buf_printf(b, "    shared writes in: ");
    tjp_layout_print(b, &use->write);
    tjs_buf_printf(b, "\n    shared reads in:  ");
    tjp_layout_print(b, &use->read);
    tjs_buf_printf(b, "\n");
    explain_buffer(b, "", use, &use->swizzle);
    if (use->has_index)
        explain_buffer(b, " (indices)", use, &use->index_swizzle);
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
    tjp_shared_use use;
    if (tjp_shared_use_of(fn, plan, i, &use))
        explain_shared(b, &use);
    else
        tjs_buf_printf(b, "    registers renamed, no shared memory\n");
}

/* REDUCE across warps and CUMSUM: their steps through shared memory. */
static void explain_shared_op(tjs_buf *b, const tji_func *fn, const tjp_layout_plan *plan, int32_t i)
{
    tjp_shared_use use;
    if (!tjp_shared_use_of(fn, plan, i, &use))
        return;
    const tji_op *op = &fn->ops[i];
    tjs_buf_printf(b, "%s (op %d) at %s:%d, %%%d along axis %d: ", tji_opcode_name(op->code), (int)i,
                   op->loc.file ? op->loc.file : "?", op->loc.line, (int)op->args[0], op->axis);
    if (op->code == TJI_REDUCE)
        tjs_buf_printf(b, "partial results of %d warps through shared memory\n", use.parts);
    else
        tjs_buf_printf(b, "each element reads its prefix from shared memory (reads: step 0; the "
                       "other steps move every lane alike)\n");
    explain_shared(b, &use);
}

/* The ops of region r and the regions nested in it, in program order (the
 * op array is in creation order, and the layout pass appends conversions). */
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
    explain_region(&b, fn, plan, axis, 0);
    return b.data;
}
