/* SPDX-License-Identifier: MIT */
/*
 * plan_finish.c — the plan read back, checked against what its layouts
 * decide (the parse's last hook; plan_parse.c reads the annotations).
 *
 * The text's choices are stored as read: swizzles, offsets, the total,
 * barriers — a hand-edited swizzle is compiled. What follows from the
 * layouts is computed again here and the text must agree with it: every
 * tile value has a layout once any has one; every dot has a form that fits
 * its tile; which ops have a shared step and of what kind, element and
 * buffer sizes (tjp_shared_step_of, and tjp_alloc_shared where the text is
 * allocated); a shared-read barrier in every step and the count of
 * #barriers; warp specialization, made again (tjp_specialize_warps) with
 * the budgets and each op's role the text gives. So code generation can
 * execute any plan that parses. Errors
 * name the text's line and column.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan_text.h"

static int fail_at_op(const text_state *t, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* An error at line:col of the text: "source:line:col: what". */
static int fail_at_op(const text_state *t, int line, int col, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    tjs_error(TJ_ERR_INVALID_ARG, "%s:%d:%d: %s", t->source, line, col, what);
    return -1;
}

/* The line (1-based) of p in the text. */
static int line_of(const text_state *t, const char *p)
{
    int line = 1;
    for (const char *q = t->text; q < p; q++)
        line += *q == '\n';
    return line;
}

/* The first op with a #barrier<...> read. */
static int32_t first_barrier(const text_state *t, const tji_func *fn)
{
    int32_t i = 0;
    while (i < fn->nops && !t->barrier[i])
        i++;
    return i;
}

/* The step read at op n->op against want, what the layouts imply (kind,
 * element size, buffer sizes); the choices read (swizzles, offsets) go
 * into want. */
static int take_step(const text_state *t, const tji_func *fn, const shared_note *n,
                     tjp_shared_step *want)
{
    const tjp_shared_step *got = &n->step;
    if (n->allocated != t->has_shared_bytes)
        return fail_at_op(t, n->line, n->col, n->allocated
                          ? "offset= and bytes= without '#shared_bytes = N' before the kernel"
                          : "expected ', offset=N, bytes=N' (the header gives #shared_bytes)");
    if (want->kind != got->kind)
        return fail_at_op(t, n->line, n->col, "#shared on an op the plan does not take through "
                          "shared memory");
    if (want->use.has_index != got->use.has_index)
        return fail_at_op(t, n->line, n->col, want->use.has_index
                          ? "expected index_swizzle=[...] (argmax/argmin's index buffer)"
                          : "index_swizzle on a reduction without indices (only argmax and "
                          "argmin have them)");
    if (got->kind != TJP_STEP_BROADCAST &&
        got->use.swizzle.elem_bytes != want->use.swizzle.elem_bytes)
        return fail_at_op(t, n->line, n->col, "elem_bytes=%d is not the size of the buffer's "
                          "elements (%d)", got->use.swizzle.elem_bytes,
                          want->use.swizzle.elem_bytes);
    if (got->staged_boxes != want->staged_boxes && !got->staged_boxes)
        return fail_at_op(t, n->line, n->col, "expected boxes=%d: this TMA store stages its block %d boxes "
                          "at a time", want->staged_boxes, want->staged_boxes);
    if (got->staged_boxes != want->staged_boxes && want->staged_boxes)
        return fail_at_op(t, n->line, n->col, "boxes=%d: this TMA store stages its block %d boxes at a time",
                          got->staged_boxes, want->staged_boxes);
    if (got->staged_boxes != want->staged_boxes)
        return fail_at_op(t, n->line, n->col, "boxes=%d on a TMA store that stages its whole block (only one "
                          "in a persistent kernel's tile loop, whose threads keep to a box per register, "
                          "stages boxes)", got->staged_boxes);
    if (got->store_bands != want->store_bands && want->store_bands)
        return fail_at_op(t, n->line, n->col, "expected bands=%d: this TMA store's boxes are stored in %d bands "
                          "of rows, one per warpgroup", want->store_bands, want->store_bands);
    if (got->store_bands != want->store_bands)
        return fail_at_op(t, n->line, n->col, "bands=%d on a TMA store whose warpgroups do not each write rows "
                          "of their own (or that is not staged)", got->store_bands);
    if (n->allocated) {
        const tji_op *op = &fn->ops[n->op];
        int64_t slots = got->kind == TJP_STEP_BROADCAST ? tji_numel(tji_typeof(fn, op->result))
                                                        : want->use.parts * want->use.numel;
        /* a TMA store's buffer may hold only a few boxes of its elements */
        uint64_t align = got->kind == TJP_STEP_TMA_STORE ? (uint64_t)want->use.swizzle.elem_bytes
                                                         : want->bytes / (uint64_t)(slots > 0 ? slots : 1);
        uint64_t end = got->offset + got->bytes, iend = got->index_offset + got->index_bytes;
        if (got->bytes != want->bytes)
            return fail_at_op(t, n->line, n->col, "bytes=%llu is not the size of the step's "
                              "buffer (%llu)", (unsigned long long)got->bytes,
                              (unsigned long long)want->bytes);
        if (got->index_bytes != want->index_bytes)
            return fail_at_op(t, n->line, n->col, "index_bytes=%llu is not the size of the "
                              "index buffer (%llu)", (unsigned long long)got->index_bytes,
                              (unsigned long long)want->index_bytes);
        if (got->offset % align)
            return fail_at_op(t, n->line, n->col, "offset=%llu is not a multiple of the "
                              "element size (%llu)", (unsigned long long)got->offset,
                              (unsigned long long)align);
        if (got->kind == TJP_STEP_TMA_STORE && got->offset % 1024)
            return fail_at_op(t, n->line, n->col, "offset=%llu: a TMA store's buffer starts at a "
                              "multiple of 1024 bytes (where its NVMMA layout repeats)",
                              (unsigned long long)got->offset);
        if (got->index_offset % 4)
            return fail_at_op(t, n->line, n->col, "index_offset=%llu is not a multiple of 4 "
                              "(i32 indices)", (unsigned long long)got->index_offset);
        if (end > t->shared_bytes || iend > t->shared_bytes)
            return fail_at_op(t, n->line, n->col, "a buffer ending at byte %llu, past "
                              "#shared_bytes = %llu", (unsigned long long)(end > iend ? end : iend),
                              (unsigned long long)t->shared_bytes);
        if (got->index_bytes && got->offset < iend && got->index_offset < end)
            return fail_at_op(t, n->line, n->col, "the value and index buffers overlap "
                              "(bytes %llu..%llu and %llu..%llu)",
                              (unsigned long long)got->offset, (unsigned long long)end,
                              (unsigned long long)got->index_offset, (unsigned long long)iend);
    }
    if (got->kind != TJP_STEP_BROADCAST &&
        (!tjp_swizzle_permutes(&got->use.swizzle, want->use.numel) ||
         (want->use.has_index && !tjp_swizzle_permutes(&got->use.index_swizzle, want->use.numel))))
        return fail_at_op(t, n->line, n->col, "the swizzle does not map the buffer's %lld indices "
                          "one to one onto themselves", (long long)want->use.numel);
    if (got->kind == TJP_STEP_TMA_STORE &&
        memcmp(want->use.swizzle.flip, got->use.swizzle.flip, sizeof want->use.swizzle.flip))
        return fail_at_op(t, n->line, n->col, "a TMA store's buffer is in the NVMMA layout of "
                          "%d-byte rows, which this swizzle is not", want->swizzle_bytes);
    memcpy(want->use.swizzle.flip, got->use.swizzle.flip, sizeof want->use.swizzle.flip);
    if (got->use.ldmatrix) {
        int trans, fit = tjp_ldmatrix_of(fn, t->out, n->op, &want->use, &trans);
        if (fit != got->use.ldmatrix || trans != got->use.ldmatrix_trans) {
            char fits[32] = "no ldmatrix here";
            if (fit)
                snprintf(fits, sizeof fits, "it takes ldmatrix=x%d%s", fit, trans ? ".trans" : "");
            return fail_at_op(t, n->line, n->col, "ldmatrix=x%d%s does not fit this conversion "
                              "(its read layout, the swizzle, a dot of the MMA form reading it): %s",
                              got->use.ldmatrix, got->use.ldmatrix_trans ? ".trans" : "", fits);
        }
        want->use.ldmatrix = got->use.ldmatrix;
        want->use.ldmatrix_trans = got->use.ldmatrix_trans;
        want->use.write_vector = 16 / want->use.swizzle.elem_bytes; /* what ldmatrix steps write */
    }
    if (got->use.write_vector) {
        const tjp_shared_use *u = &want->use;
        if (u->ldmatrix)
            return fail_at_op(t, n->line, n->col, "vector= with ldmatrix= (an ldmatrix step writes "
                              "16-byte vectors and reads by ldmatrix)");
        if (!tjp_vector_fits(&u->write, &u->swizzle, got->use.write_vector) ||
            !tjp_vector_fits(&u->read, &u->swizzle, got->use.read_vector))
            return fail_at_op(t, n->line, n->col, "vector=%d/%d does not fit this conversion: its "
                              "layouts and the swizzle allow at most %d/%d", got->use.write_vector,
                              got->use.read_vector, tjp_vector_max(&u->write, &u->swizzle),
                              tjp_vector_max(&u->read, &u->swizzle));
        want->use.write_vector = got->use.write_vector;
        want->use.read_vector = got->use.read_vector;
    }
    memcpy(want->use.index_swizzle.flip, got->use.index_swizzle.flip,
           sizeof want->use.index_swizzle.flip);
    want->offset = got->offset;
    want->index_offset = got->index_offset;
    return 0;
}

/* The plan's shared steps: the steps the layouts imply (kinds, layouts,
 * sizes: tjp_shared_step_of, and the allocation's broadcasts and sizes
 * where the text is allocated), each as the text chose it. */
static int finish_shared(const text_state *t, const tji_func *fn, tjp_layout_plan *p)
{
    p->shared = tjs_xcalloc((size_t)fn->nops + 1, sizeof *p->shared);
    for (int32_t i = 0; i < fn->nops; i++)
        tjp_shared_step_of(fn, p, i, 0, &p->shared[i]);
    if (t->has_shared_bytes && tjp_alloc_shared(fn, p) != TJ_OK)
        return -1;
    int32_t *note_of = tjs_xcalloc((size_t)fn->nops + 1, sizeof *note_of);
    for (int i = 0; i < t->nnotes; i++)
        note_of[t->notes[i].op] = i + 1;
    int rc = 0;
    for (int32_t i = 0; rc == 0 && i < fn->nops; i++) {
        if (note_of[i])
            rc = take_step(t, fn, &t->notes[note_of[i] - 1], &p->shared[i]);
        else if (p->shared[i].kind != TJP_STEP_NONE)
            rc = fail_at_op(t, t->op_line[i], t->op_col[i], "expected #shared<%s, ...>: the "
                            "layouts take this op through shared memory",
                            tjp_text_step_kinds[p->shared[i].kind]);
    }
    free(note_of);
    p->shared_bytes = t->shared_bytes;
    p->shared_allocated = t->has_shared_bytes;
    return rc;
}

/* The plan's barriers as read: a step's writes and reads are always
 * parted by one; the count of the header must be theirs. */
static int finish_barriers(const text_state *t, const tji_func *fn, tjp_layout_plan *p)
{
    p->barrier = tjs_xcalloc((size_t)fn->nops + 1, 1);
    int64_t count = 0;
    for (int32_t i = 0; i < fn->nops; i++) {
        int flags = t->barrier[i], step = p->shared[i].kind != TJP_STEP_NONE;
        if (!step && (flags & ~TJP_BARRIER_BEFORE))
            return fail_at_op(t, t->op_line[i], t->barrier_col[i], "shared-write and "
                              "shared-read on an op without a #shared step");
        if (step && !(flags & TJP_BARRIER_SHARED_READ))
            return fail_at_op(t, t->op_line[i], t->barrier_col[i] ? t->barrier_col[i]
                              : t->op_col[i], "expected #barrier<..., shared-read>: a shared "
                              "step's reads wait for its writes");
        p->barrier[i] = (uint8_t)flags;
        count += __builtin_popcount((unsigned)flags);
    }
    if (count != t->barriers)
        return fail_at_op(t, line_of(t, t->barriers_at), 1, "#barriers = %lld, but the ops "
                          "have %lld", (long long)t->barriers, (long long)count);
    return 0;
}

/* Warp specialization, made again for sm_90a (the only target that has
 * it) where the text has its #warp_spec: its budgets and every op's role
 * must be the text's. */
static int finish_warp_spec(const text_state *t, const tji_func *fn, tjp_layout_plan *p)
{
    int32_t first_role = 0;
    while (first_role < fn->nops && !t->role[first_role])
        first_role++;
    if (!t->has_warp_spec)
        return first_role < fn->nops ? fail_at_op(t, t->op_line[first_role], t->op_col[first_role],
                                                  "#role without '#warp_spec = ...' before the kernel")
                                     : 0;
    int line = line_of(t, t->warp_spec_at);
    if (tjp_specialize_warps(fn, &(tjp_target){90, 1, p->num_warps}, TJ_WARP_SPECIALIZE_ON, p) != TJ_OK)
        return fail_at_op(t, line, 1, "#warp_spec: the plan cannot be specialized for sm_90a: %s",
                          p->why_not_specialized ? p->why_not_specialized : tj_last_error());
    const tjp_warp_spec *w = p->warp_spec, *r = &t->warp_spec;
    if (w->producer_warps != r->producer_warps || w->producer_regs != r->producer_regs ||
        w->consumer_regs != r->consumer_regs || w->entry_regs != r->entry_regs)
        return fail_at_op(t, line, 1, "#warp_spec: the plan gives producer_warps=%d, producer_regs=%d, "
                          "consumer_regs=%d, entry_regs=%d", w->producer_warps, w->producer_regs,
                          w->consumer_regs, w->entry_regs);
    for (int32_t i = 0; i < fn->nops; i++) {
        int read = t->role[i] ? t->role[i] - 1 : TJP_ROLE_CONSUMER;
        if (fn->ops[i].parent >= 0 && read != w->role[i])
            return fail_at_op(t, t->op_line[i], t->op_col[i], "#role<%s>: the plan gives this op to %s",
                              tjp_text_roles[read], tjp_text_roles[w->role[i]]);
    }
    return 0;
}

/* Block pairs, made again (cluster_pairs.c) where the text has its
 * #pairs: every op's #peer must be the plan's. */
static int finish_pairs(const text_state *t, const tji_func *fn, tjp_layout_plan *p)
{
    int32_t first_peer = 0;
    while (first_peer < fn->nops && !(t->peer && t->peer[first_peer]))
        first_peer++;
    if (!t->pairs_at)
        return first_peer < fn->nops ? fail_at_op(t, t->op_line[first_peer], t->op_col[first_peer],
                                                  "#peer without '#pairs = 2' before the kernel")
                                     : 0;
    if (tjp_pair_ctas(fn, &(tjp_target){90, 1, p->num_warps}, TJ_CLUSTER_ON, 1, p) != TJ_OK)
        return fail_at_op(t, line_of(t, t->pairs_at), 1, "#pairs: the plan cannot pair its blocks: %s",
                          p->why_not_paired ? p->why_not_paired : tj_last_error());
    for (int32_t i = 0; i < fn->nops; i++) {
        int read = t->peer && i < t->ops_cap && t->peer[i];
        if (fn->ops[i].parent >= 0 && read != p->pairs->peer_op[i])
            return fail_at_op(t, t->op_line[i], t->op_col[i], "%s: the plan %s this op for the peer",
                              read ? "#peer" : "no #peer", read ? "does not evaluate" : "evaluates");
    }
    return 0;
}

/* Every DOT of a layout plan has its form; an MMA one fits its tile. */
static int finish_dots(const text_state *t, const tji_func *fn, tjp_layout_plan *p)
{
    p->dot = tjs_xcalloc((size_t)fn->nops + 1, sizeof *p->dot);
    for (int32_t i = 0; i < fn->nops; i++) {
        const tji_op *op = &fn->ops[i];
        if (op->code != TJI_DOT || op->parent < 0)
            continue;
        tjp_layout acc;
        if (!t->dot[i].form)
            return fail_at_op(t, t->op_line[i], t->op_col[i], "expected #dot<fma> or "
                              "#dot<mma ...>: a dot's form in a layout plan");
        if (t->dot[i].form == TJP_DOT_MMA &&
            (t->dot[i].warps_m * t->dot[i].warps_n > p->num_warps ||
             !tjp_dot_result_layout(fn, op, &t->dot[i], p->num_warps, &acc)))
            return fail_at_op(t, t->op_line[i], t->op_col[i], "#dot<mma ..., warps=%dx%d>: "
                              "the tile does not fit (16 rows and 8 columns per warp, %d warps)",
                              t->dot[i].warps_m, t->dot[i].warps_n, p->num_warps);
        tjp_layout a_regs, b_regs;
        if (t->dot[i].form == TJP_DOT_WGMMA &&
            (t->dot[i].warps_m != p->num_warps || !tjp_dot_result_layout(fn, op, &t->dot[i], p->num_warps, &acc) ||
             !tjp_dot_operand_layouts(fn, op, &t->dot[i], p->num_warps, &acc, &a_regs, &b_regs)))
            return fail_at_op(t, t->op_line[i], t->op_col[i], "#dot<wgmma m64n%dk%d, warps=%d>: the tile does "
                              "not fit (64 rows per warpgroup, N a multiple of the instruction's, the "
                              "kernel's %d warps)", t->dot[i].instr_n, 32 / t->dot[i].elem_bytes,
                              t->dot[i].warps_m, p->num_warps);
        const char *claim = t->dot[i].form == TJP_DOT_WGMMA ? tjp_wgmma_claim_error(fn, op, &t->dot[i]) : NULL;
        for (int a = 0; a < 2 && !claim; a++)
            claim = tjp_wgmma_shared_read_error(fn, t->dot, t->ops_cap, i, a);
        if (claim)
            return fail_at_op(t, t->op_line[i], t->op_col[i], "#dot<wgmma ...>: %s", claim);
        p->dot[i] = t->dot[i];
    }
    return 0;
}

/* The plan from what was read: every tile value needs a layout once any
 * has one; the shared steps and barriers are the text's (checked to be
 * ones code generation can execute). */
int tjp_text_finish(void *ctx, tji_func *fn)
{
    text_state *t = ctx;
    if (!t->out)
        return 0;
    memset(t->out, 0, sizeof *t->out);
    tjp_text_grow_values(t, fn->nvalues);
    tjp_text_grow_ops(t, fn->nops);
    int32_t barred = first_barrier(t, fn);
    if (!t->num_warps) {
        if (t->nnotes)
            return fail_at_op(t, t->notes[0].line, t->notes[0].col, "#shared without a layout "
                              "plan (#num_warps and layouts before the kernel)");
        if (t->nbarrier_notes)
            return fail_at_op(t, t->op_line[barred], t->barrier_col[barred], "#barrier without "
                              "a layout plan (#num_warps and layouts before the kernel)");
        for (int32_t i = 0; i < fn->nops; i++)
            if (t->role[i])
                return fail_at_op(t, t->op_line[i], t->op_col[i], "#role without a layout plan "
                                  "(#num_warps, layouts and '#warp_spec = ...' before the kernel)");
        return 0;
    }
    tjp_layout_plan *p = t->out;
    p->num_warps = t->num_warps;
    p->nvalues = fn->nvalues;
    p->nops = fn->nops;
    p->of = tjs_xcalloc((size_t)fn->nvalues + 1, sizeof *p->of);
    p->vector = tjs_xcalloc((size_t)fn->nops + 1, 1);
    p->addr_run = tjs_xcalloc((size_t)fn->nops + 1, 1);
    memcpy(p->vector, t->vector, (size_t)fn->nops);
    memcpy(p->addr_run, t->addr_run, (size_t)fn->nops);
    for (int32_t id = 1; id <= fn->nvalues; id++) {
        if (t->has_layout[id])
            p->of[id] = t->value_layout[id];
        else if (tji_typeof(fn, id)->rank > 0 &&
                 (fn->values[id].def_op < 0 || fn->ops[fn->values[id].def_op].parent >= 0))
            return tjs_error(TJ_ERR_INVALID_ARG, "%s: value %%%d is a tile without a layout "
                             "(#L...) in a program with a layout plan", t->source, id), -1;
    }
    if (finish_dots(t, fn, p) < 0)
        return -1;
    if (t->nbarrier_notes && !t->has_barriers)
        return fail_at_op(t, t->op_line[barred], t->barrier_col[barred], "#barrier without "
                          "'#barriers = N' before the kernel");
    if (t->has_barriers && !t->has_shared_bytes)
        return fail_at_op(t, line_of(t, t->barriers_at), 1, "'#barriers = N' without "
                          "'#shared_bytes = N' (barriers are placed after the allocation)");
    if ((t->has_shared_bytes || t->nnotes) && finish_shared(t, fn, p) < 0)
        return -1;
    if (t->has_barriers && finish_barriers(t, fn, p) < 0)
        return -1;
    if (finish_warp_spec(t, fn, p) < 0)
        return -1;
    return finish_pairs(t, fn, p);
}
