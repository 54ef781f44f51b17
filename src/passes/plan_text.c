/* SPDX-License-Identifier: MIT */
/*
 * plan_text.c — the GPU layout plan (and axis info) in the printed IR.
 *
 * The builder's printer and parser know nothing of layouts; they call the
 * hooks of tji_text_hooks (ir.h), which this file implements. What it adds,
 * in the manner of Triton's tensor<64x64xf32, #blocked>:
 *
 *   #num_warps = 4
 *   #shared_bytes = 16384
 *   #barriers = 2
 *   #L1 = linear<[64x64], reg=[(0,1), (0,2)], lane=[(0,4), ...], warp=[(16,0), (32,0)]>
 *   kernel k(...) {
 *     %7 = load %6 : f32[64x64] #L1 #access<vector=2, addr_run=2> #barrier<before>  // k.c:9
 *     %9 = convert_layout %8 : f32[64x64] #L2 #shared<convert, elem_bytes=4,
 *            swizzle=[32->1], offset=0, bytes=16384> #barrier<shared-read>
 *
 * Aliases are numbered in the order the values appear in the program; a
 * basis vector is the element it names as tile coordinates ((row,col); a
 * plain number for rank 1), one per register, lane and warp bit (layout.h).
 * (Parentheses, not Triton's nested brackets: FileCheck reads "[[" as the
 * start of a variable.)
 * A DOT shows its form (accelerate_dot.c): "#dot<fma>" or "#dot<mma
 * m16n8k16, warps=2x2>" (m16n8k8.tf32, " x3" for TF32X3, m16n8k32.s8;
 * of fp8 operands m16n8k32.e4m3, .e5m2 or, mixed, A's type then B's, as
 * m16n8k32.e4m3.e5m2, or m16n8k16 where they are widened to f16).
 * A LOAD, STORE or ASYNC_COPY shows its vector width and address run (a
 * ring's swizzle and orientation follow from its copies' vectors). Once the swizzle
 * pass ran, each step through shared memory (plan->shared) shows its kind
 * (convert, reduce, cumsum, broadcast), element size and swizzle (argmax's
 * index buffer its index_swizzle); once the allocation ran, the header's
 * #shared_bytes is the kernel's total and each step shows its buffers'
 * offset and bytes (index_offset, index_bytes); once barriers are placed,
 * #barriers counts the bar.sync sites and each op shows its flags; once
 * warps are specialized (warp_specialize.c), the header's "#warp_spec =
 * producer_warps=4, producer_regs=40, consumer_regs=232, entry_regs=168"
 * gives the budgets and each op that the consumers alone do not run says
 * who does: "#role<producer>", "#role<both>" or "#role<none>". With
 * axis info, a value
 * shows "#axis<contig=[..], div=[..], const=[..]>" (and "value=N"), with
 * the coalescing table an access "#coalesce<vector=.., addr_run=.., linear<..>>",
 * with the CPU's fusion plan a tile value "#cpu<fused|materialized, uses=N>".
 *
 * Reading back, layouts, access widths, shared steps and barriers fill a
 * new tjp_layout_plan that the passes after it and code generation use as
 * they use a computed one. The text's choices are stored as read: swizzles,
 * offsets, the total, barriers (a hand-edited swizzle is compiled). What the
 * layouts decide is checked instead, so that code generation can execute
 * the plan: warp specialization (made again, and it must give the numbers
 * and roles the text gives), which ops have a step and of what kind (tjp_shared_step_of and,
 * where the text is allocated, tjp_alloc_shared's broadcasts), element
 * sizes, buffer sizes, alignment, buffers inside the total, argmax's two
 * buffers apart, a shared-read barrier in every step, the count of
 * #barriers. Axis info, the coalescing table and the fusion plan are read
 * and dropped (tjit-opt computes them again).
 *
 * The reader is plan_parse.c; both share plan_text.h (the state of one
 * print or parse). A printed form changed here needs its reader changed
 * there: the round trip below (every compile of make check) fails until it is.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan_text.h"

/* --- printing ------------------------------------------------------------ */

static int has_plan_layout(const text_state *t, const tji_func *fn, int32_t id)
{
    return t->plan && t->plan->of && id > 0 && id <= t->plan->nvalues && id <= fn->nvalues &&
           tji_typeof(fn, id)->rank > 0;
}

static void note_value(text_state *t, const tji_func *fn, int32_t id)
{
    if (!has_plan_layout(t, fn, id) || t->alias_of[id])
        return;
    const tjp_layout *L = &t->plan->of[id];
    for (int a = 0; a < t->naliases; a++)
        if (tjp_layout_equal(&t->aliases[a], L)) {
            t->alias_of[id] = a + 1;
            return;
        }
    t->aliases = tjs_xrealloc(t->aliases, sizeof *t->aliases * (size_t)(t->naliases + 1));
    t->aliases[t->naliases++] = *L;
    t->alias_of[id] = t->naliases;
}

static void note_region(text_state *t, const tji_func *fn, int32_t region)
{
    const tji_region *r = &fn->regions[region];
    for (int i = 0; i < r->nargs; i++)
        note_value(t, fn, r->args[i]);
    for (int32_t i = 0; i < r->nops; i++) {
        const tji_op *op = &fn->ops[r->ops[i]];
        for (int k = 0; k < op->nresults; k++)
            note_value(t, fn, op->result + k);
        for (int k = 0; k < 2; k++)
            if ((op->code == TJI_FOR || op->code == TJI_IF || op->code == TJI_WHILE) && op->region[k] >= 0)
                note_region(t, fn, op->region[k]);
    }
}

/* Basis vector e (an element index) as tile coordinates. */
static void print_basis(tjs_buf *b, const tjp_layout *L, uint32_t e)
{
    if (L->rank == 1) {
        tjs_buf_printf(b, "%u", e);
        return;
    }
    uint32_t coord[TJ_MAX_RANK];
    for (int d = L->rank - 1; d >= 0; d--) {
        coord[d] = e % (uint32_t)L->shape[d];
        e /= (uint32_t)L->shape[d];
    }
    tjs_buf_printf(b, "(");
    for (int d = 0; d < L->rank; d++)
        tjs_buf_printf(b, "%s%u", d ? "," : "", coord[d]);
    tjs_buf_printf(b, ")");
}

static void print_layout(tjs_buf *b, const tjp_layout *L)
{
    static const char *const ins[] = {"reg", "lane", "warp"};
    tjs_buf_printf(b, "linear<[");
    for (int d = 0; d < L->rank; d++)
        tjs_buf_printf(b, "%s%d", d ? "x" : "", L->shape[d]);
    tjs_buf_printf(b, "]");
    for (int k = 0; k < TJP_NIN; k++) {
        tjs_buf_printf(b, ", %s=[", ins[k]);
        for (int i = 0; i < L->nbits[k]; i++) {
            tjs_buf_printf(b, "%s", i ? ", " : "");
            print_basis(b, L, L->basis[k][i]);
        }
        tjs_buf_printf(b, "]");
    }
    tjs_buf_printf(b, ">");
}

static void print_header(void *ctx, tjs_buf *b, const tji_func *fn)
{
    text_state *t = ctx;
    if (!t->plan || !t->plan->of)
        return;
    t->alias_of = tjs_xcalloc((size_t)fn->nvalues + 1, sizeof *t->alias_of);
    note_region(t, fn, 0);
    tjs_buf_printf(b, "#num_warps = %d\n", t->plan->num_warps);
    const tjp_layout_plan *p = t->plan;
    if (p->shared && p->shared_allocated)
        tjs_buf_printf(b, "#shared_bytes = %llu\n", (unsigned long long)p->shared_bytes);
    if (p->barrier) {
        int n = 0;
        for (int32_t i = 0; i < p->nops; i++)
            n += __builtin_popcount(p->barrier[i]);
        tjs_buf_printf(b, "#barriers = %d\n", n);
    }
    if (p->warp_spec)
        tjs_buf_printf(b, "#warp_spec = producer_warps=%d, producer_regs=%d, consumer_regs=%d, entry_regs=%d\n",
                       p->warp_spec->producer_warps, p->warp_spec->producer_regs, p->warp_spec->consumer_regs,
                       p->warp_spec->entry_regs);
    if (p->pairs)
        tjs_buf_printf(b, "#pairs = 2\n");
    for (int a = 0; a < t->naliases; a++) {
        tjs_buf_printf(b, "#L%d = ", a + 1);
        print_layout(b, &t->aliases[a]);
        tjs_buf_printf(b, "\n");
    }
}

static void print_counts(tjs_buf *b, const char *name, const int32_t *v, int n)
{
    tjs_buf_printf(b, "%s=[", name);
    for (int d = 0; d < n; d++)
        tjs_buf_printf(b, "%s%d", d ? "," : "", v[d]);
    tjs_buf_printf(b, "]");
}

static void print_value(void *ctx, tjs_buf *b, const tji_func *fn, int32_t id)
{
    text_state *t = ctx;
    if (t->alias_of && id <= fn->nvalues && t->alias_of[id])
        tjs_buf_printf(b, " #L%d", t->alias_of[id]);
    if (t->axis && id > 0 && id < t->axis->nvalues + 1 && id <= fn->nvalues) {
        const tjp_axis_value *a = &t->axis->of[id];
        int n = tji_typeof(fn, id)->rank ? tji_typeof(fn, id)->rank : 1;
        tjs_buf_printf(b, " #axis<");
        print_counts(b, "contig", a->contiguity, n);
        print_counts(b, ", div", a->divisibility, n);
        print_counts(b, ", const", a->constancy, n);
        if (a->has_value)
            tjs_buf_printf(b, ", value=%lld", (long long)a->value);
        else if (a->nonzero)
            tjs_buf_printf(b, ", nonzero");
        tjs_buf_printf(b, ">");
    }
    if (t->cpu && id <= fn->nvalues && tji_typeof(fn, id)->rank > 0)
        tjs_buf_printf(b, " #cpu<%s, uses=%d>", t->cpu->materialize[id] ? "materialized" : "fused",
                       t->cpu->uses[id]);
}

static void print_swizzle(tjs_buf *b, const tjp_swizzle *S)
{
    tjs_buf_printf(b, "[");
    for (int i = 0, any = 0; i < TJP_MAX_BITS; i++)
        if (S->flip[i]) {
            tjs_buf_printf(b, "%s%u->%u", any ? ", " : "", 1u << i, S->flip[i]);
            any = 1;
        }
    tjs_buf_printf(b, "]");
}

const char *const tjp_text_step_kinds[] = {"none", "convert", "reduce", "cumsum", "broadcast", "tma-store"};
const char *const tjp_text_roles[] = {"none", "consumer", "producer", "both"};

/* " #shared<convert, elem_bytes=4, swizzle=[..], offset=0, bytes=4096>":
 * the step's kind and swizzle(s), its buffers once allocated. */
static void print_step(tjs_buf *b, const tjp_shared_step *step, int allocated)
{
    tjs_buf_printf(b, " #shared<%s", tjp_text_step_kinds[step->kind]);
    if (step->kind != TJP_STEP_BROADCAST) {
        tjs_buf_printf(b, ", elem_bytes=%d, swizzle=", step->use.swizzle.elem_bytes);
        print_swizzle(b, &step->use.swizzle);
    }
    if (step->use.has_index) {
        tjs_buf_printf(b, ", index_swizzle=");
        print_swizzle(b, &step->use.index_swizzle);
    }
    if (step->use.ldmatrix)
        tjs_buf_printf(b, ", ldmatrix=x%d%s", step->use.ldmatrix, step->use.ldmatrix_trans ? ".trans" : "");
    else if (step->kind != TJP_STEP_TMA_STORE && (step->use.write_vector > 1 || step->use.read_vector > 1))
        tjs_buf_printf(b, ", vector=%d/%d", step->use.write_vector, step->use.read_vector);
    if (step->staged_boxes)
        tjs_buf_printf(b, ", boxes=%d", step->staged_boxes);
    if (step->store_bands)
        tjs_buf_printf(b, ", bands=%d", step->store_bands);
    if (allocated) {
        tjs_buf_printf(b, ", offset=%llu, bytes=%llu", (unsigned long long)step->offset,
                       (unsigned long long)step->bytes);
        if (step->use.has_index)
            tjs_buf_printf(b, ", index_offset=%llu, index_bytes=%llu",
                           (unsigned long long)step->index_offset,
                           (unsigned long long)step->index_bytes);
    }
    tjs_buf_printf(b, ">");
}

static void print_op(void *ctx, tjs_buf *b, const tji_func *fn, int32_t idx)
{
    text_state *t = ctx;
    const tjp_layout_plan *plan = t->plan;
    const tji_op *op = &fn->ops[idx];
    if (t->coalesce && idx < t->coalesce->nops && t->coalesce->of[idx].chosen) {
        const tjp_coalesce_choice *ch = &t->coalesce->of[idx];
        tjs_buf_printf(b, " #coalesce<vector=%d, addr_run=%d, ", ch->vector, ch->addr_run);
        print_layout(b, &ch->layout);
        tjs_buf_printf(b, ">");
    }
    if (!plan || !plan->of || idx >= plan->nops)
        return;
    if (plan->dot && plan->dot[idx].form == TJP_DOT_FMA)
        tjs_buf_printf(b, " #dot<fma>");
    else if (plan->dot && plan->dot[idx].form == TJP_DOT_MMA)
        tjs_buf_printf(b, " #dot<mma %s%s, warps=%dx%d>", tjp_mma_instruction(fn, op, &plan->dot[idx]),
                       plan->dot[idx].passes == 3 ? " x3" : "", plan->dot[idx].warps_m,
                       plan->dot[idx].warps_n);
    else if (plan->dot && plan->dot[idx].form == TJP_DOT_WGMMA)
        tjs_buf_printf(b, " #dot<wgmma m64n%dk%d, warps=%d%s%s%s%s>", plan->dot[idx].instr_n,
                       32 / plan->dot[idx].elem_bytes, plan->dot[idx].warps_m,
                       plan->dot[idx].a_in_regs ? ", a-regs" : "", plan->dot[idx].b_in_regs ? ", b-regs" : "",
                       plan->dot[idx].async ? ", async" : "",
                       plan->dot[idx].skip_zero_init ? ", skip-zero-init" : "");
    if (op->code == TJI_LOAD || op->code == TJI_STORE || op->code == TJI_ASYNC_COPY)
        tjs_buf_printf(b, " #access<vector=%d, addr_run=%d>", plan->vector[idx],
                       plan->addr_run[idx]);
    if (plan->shared && plan->shared[idx].kind != TJP_STEP_NONE)
        print_step(b, &plan->shared[idx], plan->shared_allocated);
    if (plan->barrier && plan->barrier[idx]) {
        int f = plan->barrier[idx];
        tjs_buf_printf(b, " #barrier<%s%s%s%s%s>", f & TJP_BARRIER_BEFORE ? "before" : "",
                       f & TJP_BARRIER_BEFORE && f & ~TJP_BARRIER_BEFORE ? ", " : "",
                       f & TJP_BARRIER_SHARED_WRITE ? "shared-write" : "",
                       f & TJP_BARRIER_SHARED_WRITE && f & TJP_BARRIER_SHARED_READ ? ", " : "",
                       f & TJP_BARRIER_SHARED_READ ? "shared-read" : "");
    }
    if (plan->warp_spec && plan->warp_spec->role[idx] != TJP_ROLE_CONSUMER)
        tjs_buf_printf(b, " #role<%s>", tjp_text_roles[plan->warp_spec->role[idx]]);
    if (plan->pairs && plan->pairs->peer_op[idx])
        tjs_buf_printf(b, " #peer");
}

char *tjp_print_annotated(const tji_func *fn, const tjp_annotations *a)
{
    text_state t = {0};
    if (a)
        t = (text_state){.plan = a->layouts, .axis = a->axis, .coalesce = a->coalesce,
                         .cpu = a->cpu};
    tji_text_hooks h = {.ctx = &t, .print_header = print_header, .print_value = print_value,
                        .print_op = print_op};
    char *text = tji_print_with(fn, &h);
    free(t.aliases);
    free(t.alias_of);
    return text;
}

/* --- the round trip ------------------------------------------------------ */

static int roundtrip_enabled(void)
{
    const char *e = getenv("TJIT_CHECK_ROUNDTRIP");
    return e && *e && strcmp(e, "0") != 0;
}

/* The first line where a and b differ (1-based) into *line, its two texts. */
static int first_difference(const char *a, const char *b, int *line, const char **la,
                            const char **lb)
{
    *line = 1;
    *la = a;
    *lb = b;
    for (; *a == *b; a++, b++) {
        if (!*a)
            return 0;
        if (*a == '\n') {
            (*line)++;
            *la = a + 1;
            *lb = b + 1;
        }
    }
    return 1;
}

static int line_length(const char *s) { return (int)strcspn(s, "\n"); }

tj_status tjp_check_roundtrip(const tji_func *fn, const tjp_layout_plan *plan)
{
    if (!roundtrip_enabled())
        return TJ_OK;
    tjp_annotations a = {.layouts = plan};
    char *first = tjp_print_annotated(fn, &a);
    tji_func *back = NULL;
    tjp_layout_plan back_plan = {0};
    tj_status st = tjp_parse_annotated(first, fn->name, &back, &back_plan);
    if (st != TJ_OK) {
        char why[1024];
        snprintf(why, sizeof why, "%s", tj_last_error());
        free(first);
        return tjs_error(TJ_ERR_COMPILE, "internal error: kernel '%s': its printed IR does not "
                         "parse back (TJIT_CHECK_ROUNDTRIP): %s", fn->name, why);
    }
    tjp_annotations b = {.layouts = plan ? &back_plan : NULL};
    char *second = tjp_print_annotated(back, &b);
    int line;
    const char *la, *lb;
    if (first_difference(first, second, &line, &la, &lb))
        st = tjs_error(TJ_ERR_COMPILE, "internal error: kernel '%s': its IR printed, parsed and "
                       "printed again differs at line %d (TJIT_CHECK_ROUNDTRIP):\n  printed:   "
                       "%.*s\n  reprinted: %.*s", fn->name, line, line_length(la), la,
                       line_length(lb), lb);
    free(first);
    free(second);
    tji_func_free(back);
    tjp_layout_plan_free(&back_plan);
    return st;
}
