/* SPDX-License-Identifier: MIT */
/*
 * plan_parse.c — the plan's annotations read back (plan_text.c's inverse).
 *
 * tji_parse (src/builder/parse.c) reads the program and hands this file,
 * through tji_text_hooks, the header lines before the kernel, what follows
 * each value's type and what follows each op. The layouts, access widths,
 * shared steps and barriers read fill a new tjp_layout_plan that the passes
 * after it and code generation use as they use a computed one. The text's
 * choices are stored as read (a hand-edited swizzle is compiled); what the
 * layouts decide is checked instead (finish), so that code generation can
 * execute the plan (plan_finish.c). Every error names line:column and
 * what was expected. The format itself is described atop plan_text.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan_scan.h"
#include "plan_text.h"

/* --- parsing ------------------------------------------------------------- */

static int name_char(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '_';
}

/* One basis vector: tile coordinates (a number for rank 1). */
static int parse_basis(cursor *c, const tjp_layout *L, uint32_t *out)
{
    long long v;
    if (L->rank == 1) {
        if (!number(c, 0, L->shape[0] - 1, &v, "an element of the tile (a basis vector)"))
            return 0;
        *out = (uint32_t)v;
        return 1;
    }
    uint32_t e = 0;
    if (!need(c, "(", "'(' opening a basis vector's coordinates"))
        return 0;
    for (int d = 0; d < L->rank; d++) {
        if ((d && !need(c, ",", "',' (one coordinate per dimension)")) ||
            !number(c, 0, L->shape[d] - 1, &v, "a coordinate inside the tile"))
            return 0;
        e = e * (uint32_t)L->shape[d] + (uint32_t)v;
    }
    *out = e;
    return need(c, ")", "')' closing the coordinates");
}

static int parse_layout(cursor *c, int num_warps, tjp_layout *L)
{
    static const char *const ins[] = {"reg", "lane", "warp"};
    memset(L, 0, sizeof *L);
    if (!need(c, "linear<[", "'linear<[' (a layout)"))
        return 0;
    int64_t numel = 1;
    do {
        long long d;
        if (L->rank == TJ_MAX_RANK)
            return bad(c, "']' (at most 4 dimensions)");
        if (!number(c, 1, 1 << 30, &d, "a power-of-two dimension") || (d & (d - 1)))
            return bad(c, "a power-of-two dimension");
        L->shape[L->rank++] = (int32_t)d;
        numel *= d;
        if (numel > (int64_t)1 << 30)
            return bad(c, "a tile of at most 2^30 elements");
    } while (*c->s == 'x' && c->s++);
    if (!need(c, "]", "']' closing the shape"))
        return 0;
    for (int k = 0; k < TJP_NIN; k++) {
        char word[16];
        snprintf(word, sizeof word, "%s=[", ins[k]);
        if (!need(c, ",", "',' before the next bases") || !need(c, word, k == 0 ? "'reg=['"
                                                                : k == 1 ? "'lane=['" : "'warp=['"))
            return 0;
        while (!take(c, "]")) {
            if (L->nbits[k] == TJP_MAX_BITS)
                return bad(c, "']' (at most 32 bases)");
            if ((L->nbits[k] && !need(c, ",", "',' or ']'")) ||
                !parse_basis(c, L, &L->basis[k][L->nbits[k]]))
                return 0;
            L->nbits[k]++;
        }
    }
    if (L->nbits[TJP_LANE] != 5)
        return bad(c, "'>' after 5 lane bases (32 lanes)");
    if (num_warps && (1 << L->nbits[TJP_WARP]) != num_warps)
        return bad(c, "'>' after log2(num_warps) warp bases");
    return need(c, ">", "'>' closing the layout");
}

/* "#warp_spec = producer_warps=4, producer_regs=40, consumer_regs=232,
 * entry_regs=168" (after #barriers: warps are specialized last). */
static int parse_warp_spec(text_state *t, cursor *c, const char *line)
{
    static const char *const keys[] = {"producer_warps=", "producer_regs=", "consumer_regs=", "entry_regs="};
    int *fields[] = {&t->warp_spec.producer_warps, &t->warp_spec.producer_regs, &t->warp_spec.consumer_regs,
                     &t->warp_spec.entry_regs};
    if (!t->has_barriers) {
        c->s = line;
        return bad(c, "'#barriers = N' before it (warps are specialized after the barriers)"), -1;
    }
    if (!need(c, "=", "'='"))
        return -1;
    for (int k = 0; k < 4; k++) {
        long long v;
        if ((k && !need(c, ",", "','")) || !need(c, keys[k], keys[k]) ||
            !number(c, 0, 255, &v, "a number of warps or registers (0..255)"))
            return -1;
        *fields[k] = (int)v;
    }
    spaces(c);
    if (*c->s && *c->s != '\n' && *c->s != '\r')
        return bad(c, "the end of the line"), -1;
    t->has_warp_spec = 1;
    t->warp_spec_at = line;
    return 0;
}

static int parse_header_line(void *ctx, const char *line, const char **err, const char **at)
{
    text_state *t = ctx;
    cursor c = {line, err, at};
    long long v;
    if (take(&c, "#num_warps")) {
        if (!need(&c, "=", "'='") || !number(&c, 1, 32, &v, "a number of warps (1..32)") ||
            (v & (v - 1)))
            return bad(&c, "a power-of-two number of warps (1..32)"), -1;
        t->num_warps = (int)v;
        return 0;
    }
    if (take(&c, "#warp_spec"))
        return parse_warp_spec(t, &c, line);
    if (take(&c, "#pairs")) { /* cluster_pairs.c: made again at the end, and compared */
        if (!t->has_warp_spec) {
            c.s = line;
            return bad(&c, "'#warp_spec = ...' before it (pairs are made after the specialization)"), -1;
        }
        if (!need(&c, "=", "'='") || !need(&c, "2", "2 (blocks per cluster)"))
            return -1;
        t->pairs_at = line;
        return 0;
    }
    int is_bytes = take(&c, "#shared_bytes"), is_barriers = !is_bytes && take(&c, "#barriers");
    if (is_bytes || is_barriers) {
        if (!t->num_warps) {
            c.s = line;
            return bad(&c, "'#num_warps = N' before it (a plan of the GPU passes)"), -1;
        }
        if (!need(&c, "=", "'='") ||
            !number(&c, 0, is_bytes ? TJP_SHARED_MAX : INT32_MAX, &v,
                    is_bytes ? "a number of bytes (at most 232448)" : "a number of barriers"))
            return -1;
        spaces(&c);
        if (*c.s && *c.s != '\n' && *c.s != '\r')
            return bad(&c, "the end of the line"), -1;
        if (is_bytes) {
            t->has_shared_bytes = 1;
            t->shared_bytes = (uint64_t)v;
        } else {
            t->has_barriers = 1;
            t->barriers = v;
            t->barriers_at = line;
        }
        return 0;
    }
    if (!need(&c, "#", "'#'"))
        return -1;
    if (!t->num_warps)
        return bad(&c, "'#num_warps = N' before the layouts"), -1;
    const char *name = c.s;
    while (name_char(*c.s))
        c.s++;
    size_t n = (size_t)(c.s - name);
    if (n == 0 || n >= 16)
        return bad(&c, "a layout alias name (#L1)"), -1;
    for (int a = 0; a < t->naliases; a++)
        if (strlen(t->names[a]) == n && strncmp(t->names[a], name, n) == 0) {
            c.s = name;
            return bad(&c, "a layout alias not defined before"), -1;
        }
    tjp_layout L;
    if (!need(&c, "=", "'=' after the alias name") || !parse_layout(&c, t->num_warps, &L))
        return -1;
    spaces(&c);
    if (*c.s && *c.s != '\n' && *c.s != '\r')
        return bad(&c, "the end of the line"), -1;
    t->aliases = tjs_xrealloc(t->aliases, sizeof *t->aliases * (size_t)(t->naliases + 1));
    t->names = tjs_xrealloc(t->names, sizeof *t->names * (size_t)(t->naliases + 1));
    t->aliases[t->naliases] = L;
    memcpy(t->names[t->naliases], name, n);
    t->names[t->naliases][n] = 0;
    t->naliases++;
    return 0;
}

void tjp_text_grow_values(text_state *t, int32_t id)
{
    if (id < t->values_cap)
        return;
    int32_t cap = t->values_cap ? t->values_cap : 64;
    while (cap <= id)
        cap *= 2;
    t->value_layout = tjs_xrealloc(t->value_layout, sizeof *t->value_layout * (size_t)cap);
    t->has_layout = tjs_xrealloc(t->has_layout, (size_t)cap);
    memset(t->has_layout + t->values_cap, 0, (size_t)(cap - t->values_cap));
    t->values_cap = cap;
}

static int counts(cursor *c, const char *name, int n)
{
    long long v;
    if (!need(c, name, name))
        return 0;
    for (int d = 0; d < n; d++)
        if ((d && !need(c, ",", "',' (one count per dimension)")) ||
            !number(c, 1, 1LL << 40, &v, "a count"))
            return 0;
    return need(c, "]", "']' closing the counts");
}

static int parse_value(void *ctx, const char *s, tji_func *fn, int32_t id, const char **err,
                       const char **at)
{
    text_state *t = ctx;
    cursor c = {s, err, at};
    const tji_type *type = tji_typeof(fn, id);
    const char *before = c.s;
    spaces(&c);
    if (c.s[0] == '#' && strncmp(c.s, "#axis<", 6) && strncmp(c.s, "#cpu<", 5) &&
        strncmp(c.s, "#access<", 8) && strncmp(c.s, "#shared<", 8) &&
        strncmp(c.s, "#barrier<", 9) && strncmp(c.s, "#role<", 6) && strncmp(c.s, "#peer", 5) &&
        strncmp(c.s, "#coalesce<", 10)) {
        const char *name = ++c.s;
        while (name_char(*c.s))
            c.s++;
        size_t n = (size_t)(c.s - name);
        int a = 0;
        while (a < t->naliases && !(strlen(t->names[a]) == n && !strncmp(t->names[a], name, n)))
            a++;
        if (a == t->naliases) {
            c.s = name - 1;
            return bad(&c, "a layout alias defined above the kernel"), -1;
        }
        const tjp_layout *L = &t->aliases[a];
        int same = type->rank == L->rank;
        for (int d = 0; same && d < L->rank; d++)
            same = type->shape[d] == L->shape[d];
        if (!same) {
            c.s = name - 1;
            return bad(&c, "a layout of the value's shape"), -1;
        }
        tjp_text_grow_values(t, id);
        t->value_layout[id] = *L;
        t->has_layout[id] = 1;
        before = c.s;
        spaces(&c);
    }
    if (take(&c, "#axis<")) {
        int n = type->rank ? type->rank : 1;
        long long v;
        if (!counts(&c, "contig=[", n) || !need(&c, ",", "','") || !counts(&c, "div=[", n) ||
            !need(&c, ",", "','") || !counts(&c, "const=[", n))
            return -1;
        if (take(&c, ",") && !take(&c, "nonzero") &&
            (!need(&c, "value=", "'value=' or 'nonzero'") ||
             !number(&c, INT64_MIN, INT64_MAX, &v, "an integer")))
            return -1;
        if (!need(&c, ">", "'>' closing the axis info"))
            return -1;
        before = c.s;
    }
    if (take(&c, "#cpu<")) {
        long long v;
        if ((!take(&c, "materialized") && !need(&c, "fused", "materialized or fused")) ||
            !need(&c, ",", "','") || !need(&c, "uses=", "'uses='") ||
            !number(&c, 0, INT32_MAX, &v, "a number of uses") || !need(&c, ">", "'>'"))
            return -1;
        before = c.s;
    }
    return (int)(before - s);
}

static int parse_swizzle(cursor *c, tjp_swizzle *S)
{
    if (!need(c, "[", "'[' opening the swizzle"))
        return 0;
    int first = 1;
    while (!take(c, "]")) {
        long long bit, flip;
        if ((!first && !need(c, ",", "',' or ']'")) ||
            !number(c, 1, 1LL << 31, &bit, "an index bit (a power of two)") || (bit & (bit - 1)) ||
            !need(c, "->", "'->'") ||
            !number(c, 1, (1LL << 32) - 1, &flip, "the bits it flips"))
            return 0;
        int i = 0;
        while ((1LL << i) != bit)
            i++;
        S->flip[i] = (uint32_t)flip;
        first = 0;
    }
    return 1;
}

void tjp_text_grow_ops(text_state *t, int32_t op)
{
    if (op < t->ops_cap)
        return;
    int32_t cap = t->ops_cap ? t->ops_cap : 64;
    while (cap <= op)
        cap *= 2;
    size_t more = (size_t)(cap - t->ops_cap);
    t->vector = tjs_xrealloc(t->vector, (size_t)cap);
    t->addr_run = tjs_xrealloc(t->addr_run, (size_t)cap);
    t->barrier = tjs_xrealloc(t->barrier, (size_t)cap);
    t->dot = tjs_xrealloc(t->dot, sizeof *t->dot * (size_t)cap);
    memset(t->dot + t->ops_cap, 0, sizeof *t->dot * more);
    t->role = tjs_xrealloc(t->role, (size_t)cap);
    memset(t->role + t->ops_cap, 0, more);
    t->peer = tjs_xrealloc(t->peer, (size_t)cap);
    memset(t->peer + t->ops_cap, 0, more);
    memset(t->vector + t->ops_cap, 1, more);
    memset(t->addr_run + t->ops_cap, 1, more);
    memset(t->barrier + t->ops_cap, 0, more);
    int32_t **where[] = {&t->op_line, &t->op_col, &t->barrier_col};
    for (int k = 0; k < 3; k++) {
        *where[k] = tjs_xrealloc(*where[k], sizeof **where[k] * (size_t)cap);
        memset(*where[k] + t->ops_cap, 0, sizeof **where[k] * more);
    }
    t->ops_cap = cap;
}

/* The column (1-based) of p in its line of the text. */
static int32_t column(const text_state *t, const char *p)
{
    const char *start = p;
    while (start > t->text && start[-1] != '\n')
        start--;
    return (int32_t)(p - start) + 1;
}

/* "#dot<" read: the form, checked against the dot's operands. */
static int parse_dot(cursor *c, const tji_func *fn, int32_t op, tjp_dot_choice *out)
{
    const tji_op *o = &fn->ops[op];
    tj_dtype in = tji_typeof(fn, o->args[0])->dtype;
    tjp_dot_choice ch = {.form = TJP_DOT_FMA, .passes = 1};
    spaces(c);
    const char *form = c->s;
    if (take(c, "wgmma")) {
        long long n, w;
        int eb = in == TJ_F16 || in == TJ_BF16 ? 2 : in == TJ_F32 && o->precision == TJ_PRECISION_TF32 ? 4
                 : in == TJ_I8 || tjs_dtype_is_fp8(in) ? 1 : 0;
        if (!eb) {
            c->s = form;
            return bad(c, "mma or fma: wgmma takes f16, bf16, f32 with tf32, fp8 or i8 operands");
        }
        char kname[8];
        snprintf(kname, sizeof kname, "k%d", 32 / eb);
        if (!need(c, "m64n", "'m64n' (the instruction: m64nNkK)") ||
            !number(c, 8, 256, &n, "the instruction's N (8 .. 256, a power of two)") || (n & (n - 1)) ||
            !need(c, kname, eb == 2   ? "'k16' (16-bit operands)"
                            : eb == 4 ? "'k8' (tf32 operands)"
                                      : "'k32' (8-bit operands)") ||
            !need(c, ",", "','") || !need(c, "warps=", "'warps='") ||
            !number(c, 4, 32, &w, "the warps (four per warpgroup, a power of two)") || (w & (w - 1)))
            return 0;
        ch = (tjp_dot_choice){.form = TJP_DOT_WGMMA, .elem_bytes = eb, .passes = 1, .warps_m = (int)w,
                              .warps_n = 1, .instr_n = (int)n};
        const char *item = c->s;
        ch.a_in_regs = take_item(c, "a-regs");
        if (ch.a_in_regs && eb != 2 && eb != 4) {
            c->s = item;
            return bad(c, "f16, bf16 or tf32 operands for 'a-regs' (wgmma reads A from registers for 16- and "
                          "32-bit ones only)");
        }
        item = c->s;
        ch.b_in_regs = !ch.a_in_regs && take_item(c, "b-regs");
        if (ch.b_in_regs && eb != 4) {
            c->s = item;
            return bad(c, "tf32 operands for 'b-regs' (the transposed product is for 32-bit B stored along N)");
        }
        ch.async = (!ch.a_in_regs || eb == 4) && take_item(c, "async"); /* 16-bit A: not from a ring */
        ch.skip_zero_init = take_item(c, "skip-zero-init");
    } else if (take(c, "mma")) {
        static const char *const instr[] = {"m16n8k32.s8", "m16n8k16", "", "m16n8k8.tf32"};
        int fp8 = tjs_dtype_is_fp8(in);
        int eb = in == TJ_I8 ? 1 : in == TJ_F16 || in == TJ_BF16 || fp8 ? 2
                 : in == TJ_F32 && o->precision != TJ_PRECISION_IEEE ? 4 : 0;
        if (!eb) {
            c->s = form;
            return bad(c, "fma: no mma.sync takes this dot's operands (f32 ieee, or their dtype)");
        }
        /* fp8: its own instruction (elem_bytes 1), or f16's after widening */
        const char *native = fp8 ? tjp_mma_instruction(fn, o, &(tjp_dot_choice){.elem_bytes = 1}) : NULL;
        if (native && take_word(c, native))
            eb = 1;
        else if (!take_word(c, instr[eb - 1]))
            return bad(c, fp8 ? "m16n8k32 with the operands' fp8 types (A's, then B's where it differs) or "
                                "m16n8k16 (widened to f16)"
                          : eb == 1 ? "m16n8k32.s8 (the instruction of i8 operands)"
                          : eb == 2 ? "m16n8k16 (the instruction of 16-bit operands)"
                                    : "m16n8k8.tf32 (the instruction of f32 operands with tf32)");
        int three = take(c, "x3");
        if (three != (eb == 4 && o->precision == TJ_PRECISION_TF32X3))
            return bad(c, three ? "no 'x3': the dot's precision is not tf32x3"
                                : "'x3': a tf32x3 dot takes three mma per step");
        long long wm, wn;
        if (!need(c, ",", "','") || !need(c, "warps=", "'warps='") ||
            !number(c, 1, 32, &wm, "warps along M (a power of two)") || (wm & (wm - 1)) ||
            !need(c, "x", "'x'") || !number(c, 1, 32, &wn, "warps along N (a power of two)") ||
            (wn & (wn - 1)))
            return 0;
        ch = (tjp_dot_choice){.form = TJP_DOT_MMA, .elem_bytes = eb, .passes = three ? 3 : 1,
                              .warps_m = (int)wm, .warps_n = (int)wn};
    } else if (!take(c, "fma")) {
        return bad(c, "a dot's form: fma, mma or wgmma");
    }
    if (!need(c, ">", "'>' closing the dot's form"))
        return 0;
    *out = ch;
    return 1;
}

/* "#shared<" read: the rest of the step, kept as a note for finish. */
static int parse_step(text_state *t, cursor *c, tji_func *fn, int32_t op, int line)
{
    shared_note note = {.op = op, .line = line, .col = t->op_col[op]};
    tjp_shared_step *step = &note.step;
    spaces(c);
    for (int k = TJP_STEP_CONVERT; k < TJP_STEP_KINDS && !step->kind; k++)
        if (take(c, tjp_text_step_kinds[k]))
            step->kind = k;
    if (!step->kind)
        return bad(c, "a step kind: convert, reduce, cumsum, broadcast or tma-store");
    tji_opcode code = fn->ops[op].code;
    int fits = step->kind == TJP_STEP_CONVERT ? code == TJI_CONVERT
             : step->kind == TJP_STEP_REDUCE ? code == TJI_REDUCE
             : step->kind == TJP_STEP_CUMSUM ? code == TJI_CUMSUM
             : step->kind == TJP_STEP_TMA_STORE ? code == TJI_STORE
             : code == TJI_ATOMIC || code == TJI_ATOMIC_CAS;
    if (!fits) {
        c->s -= strlen(tjp_text_step_kinds[step->kind]);
        return bad(c, "the step of this op (convert on convert_layout, reduce, cumsum, "
                   "broadcast on an atomic, tma-store on a store)");
    }
    long long v;
    if (step->kind != TJP_STEP_BROADCAST) {
        if (!need(c, ",", "','") || !need(c, "elem_bytes=", "'elem_bytes='") ||
            !number(c, 1, 8, &v, "element bytes (1..8)") || !need(c, ",", "','") ||
            !need(c, "swizzle=", "'swizzle='") || !parse_swizzle(c, &step->use.swizzle))
            return 0;
        step->use.swizzle.elem_bytes = (int)v;
    }
    if (step->kind == TJP_STEP_REDUCE && take_item(c, "index_swizzle=")) {
        if (!parse_swizzle(c, &step->use.index_swizzle))
            return 0;
        step->use.has_index = 1;
        step->use.index_swizzle.elem_bytes = 4;
    }
    if (step->kind == TJP_STEP_CONVERT && take_item(c, "ldmatrix=")) {
        long long x;
        if (!need(c, "x", "'x' (ldmatrix=x4, x2 or x1)") || !number(c, 1, 4, &x, "1, 2 or 4 matrices") || x == 3)
            return 0;
        step->use.ldmatrix = (int)x;
        step->use.ldmatrix_trans = take(c, ".trans");
    }
    if (step->kind == TJP_STEP_CONVERT && take_item(c, "vector=")) {
        long long w, r;
        if (!number(c, 1, 16, &w, "elements per shared write (1..16)") || !need(c, "/", "'/' (vector=W/R)") ||
            !number(c, 1, 16, &r, "elements per shared read (1..16)"))
            return 0;
        step->use.write_vector = (int)w;
        step->use.read_vector = (int)r;
    }
    if (step->kind == TJP_STEP_TMA_STORE && take_item(c, "boxes=")) {
        if (!number(c, 1, 64, &v, "boxes staged at a time (1..64)"))
            return 0;
        step->staged_boxes = (int)v;
    }
    if (step->kind == TJP_STEP_TMA_STORE && take_item(c, "bands=")) {
        if (!number(c, 2, 16, &v, "warpgroups' bands of a box (2..16)"))
            return 0;
        step->store_bands = (int)v;
    }
    if (take_item(c, "offset=")) {
        note.allocated = 1;
        if (!byte_number(c, 0, &step->offset) || !byte_item(c, "bytes=", 1, &step->bytes) ||
            (step->use.has_index &&
             (!byte_item(c, "index_offset=", 0, &step->index_offset) ||
              !byte_item(c, "index_bytes=", 1, &step->index_bytes))))
            return 0;
    } else if (step->kind == TJP_STEP_BROADCAST) {
        return bad(c, "', offset=N, bytes=N' (a broadcast comes with its allocation)");
    }
    if (!need(c, ">", "'>' closing the shared step"))
        return 0;
    t->notes = tjs_xrealloc(t->notes, sizeof *t->notes * (size_t)(t->nnotes + 1));
    t->notes[t->nnotes++] = note;
    return 1;
}

static int parse_op(void *ctx, const char *s, tji_func *fn, int32_t op, int line,
                    const char **err, const char **at)
{
    text_state *t = ctx;
    cursor c = {s, err, at};
    const char *end = s;
    long long v, r;
    if (take(&c, "#coalesce<")) {
        tjp_layout L;
        if (!need(&c, "vector=", "'vector='") || !number(&c, 1, 128, &v, "a vector width") ||
            !need(&c, ",", "','") || !need(&c, "addr_run=", "'addr_run='") ||
            !number(&c, v, 255, &r, "an address run (at least the vector)") ||
            !need(&c, ",", "','") || !parse_layout(&c, 0, &L) || !need(&c, ">", "'>'"))
            return -1;
        end = c.s;
    }
    c.s = end;
    spaces(&c);
    const char *tag = c.s;
    if (take(&c, "#dot<")) {
        if (fn->ops[op].code != TJI_DOT) {
            c.s = tag;
            return bad(&c, "a dot's form on a dot only"), -1;
        }
        tjp_text_grow_ops(t, op);
        if (!parse_dot(&c, fn, op, &t->dot[op]))
            return -1;
        end = c.s;
    }
    c.s = end;
    spaces(&c);
    tag = c.s;
    if (take(&c, "#access<")) {
        tji_opcode code = fn->ops[op].code;
        if (code != TJI_LOAD && code != TJI_STORE && code != TJI_ASYNC_COPY) {
            c.s = tag;
            return bad(&c, "an access width on a load, store or async_copy only"), -1;
        }
        if (!need(&c, "vector=", "'vector='") || !number(&c, 1, 128, &v, "a vector width") ||
            (v & (v - 1)) || !need(&c, ",", "','") || !need(&c, "addr_run=", "'addr_run='") ||
            !number(&c, v, 255, &r, "an address run (at least the vector)") ||
            !need(&c, ">", "'>'"))
            return -1;
        tjp_text_grow_ops(t, op);
        t->vector[op] = (uint8_t)v;
        t->addr_run[op] = (uint8_t)r;
        end = c.s;
    }
    c.s = end;
    spaces(&c);
    tjp_text_grow_ops(t, op);
    t->op_line[op] = line;
    t->op_col[op] = column(t, c.s);
    if (take(&c, "#shared<")) {
        if (!parse_step(t, &c, fn, op, line))
            return -1;
        end = c.s;
    }
    c.s = end;
    spaces(&c);
    tag = c.s;
    if (take(&c, "#barrier<")) {
        int flags = 0;
        tji_opcode code = fn->ops[op].code;
        do {
            spaces(&c);
            const char *word = c.s;
            int f = take(&c, "before") ? TJP_BARRIER_BEFORE
                  : take(&c, "shared-write") ? TJP_BARRIER_SHARED_WRITE
                  : take(&c, "shared-read") ? TJP_BARRIER_SHARED_READ : 0;
            if (!f)
                return bad(&c, "a barrier: before, shared-write or shared-read"), -1;
            c.s = word;
            if (f <= flags)
                return bad(&c, "each barrier once, in the order before, shared-write, "
                           "shared-read"), -1;
            if (f == TJP_BARRIER_BEFORE && code != TJI_LOAD && code != TJI_STORE &&
                code != TJI_ATOMIC && code != TJI_ATOMIC_CAS && code != TJI_BARRIER)
                return bad(&c, "a barrier 'before' on a load, store, atomic or barrier only"), -1;
            take(&c, f == TJP_BARRIER_BEFORE ? "before" : f == TJP_BARRIER_SHARED_WRITE
                                                           ? "shared-write" : "shared-read");
            flags |= f;
        } while (take(&c, ","));
        if (!need(&c, ">", "'>' closing the barriers"))
            return -1;
        t->barrier[op] = (uint8_t)flags;
        t->barrier_col[op] = column(t, tag);
        t->nbarrier_notes++;
        end = c.s;
    }
    c.s = end;
    spaces(&c);
    if (take(&c, "#role<")) {
        int role = -1;
        for (int r = 0; r < 4 && role < 0; r++)
            if (r != TJP_ROLE_CONSUMER && take(&c, tjp_text_roles[r]))
                role = r;
        if (role < 0)
            return bad(&c, "a role: producer, both or none (ops the consumers alone run have none written)"), -1;
        if (!need(&c, ">", "'>'"))
            return -1;
        t->role[op] = (uint8_t)(1 + role);
        end = c.s;
    }
    c.s = end;
    spaces(&c);
    if (take(&c, "#peer")) {
        t->peer[op] = 1;
        end = c.s;
    }
    return (int)(end - s);
}

tj_status tjp_parse_annotated(const char *text, const char *source, tji_func **fn,
                              tjp_layout_plan *plan)
{
    text_state t = {.out = plan, .text = text, .source = source ? source : "<input>"};
    tji_text_hooks h = {.ctx = &t, .parse_header_line = parse_header_line,
                        .parse_value = parse_value, .parse_op = parse_op, .finish = tjp_text_finish};
    if (plan)
        memset(plan, 0, sizeof *plan);
    tj_status st = tji_parse(text, source, &h, fn);
    if (st != TJ_OK && plan)
        tjp_layout_plan_free(plan);
    free(t.aliases);
    free(t.names);
    free(t.value_layout);
    free(t.has_layout);
    free(t.vector);
    free(t.addr_run);
    free(t.barrier);
    free(t.dot);
    free(t.role);
    free(t.peer);
    free(t.op_line);
    free(t.op_col);
    free(t.barrier_col);
    free(t.notes);
    return st;
}
