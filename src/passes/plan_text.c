/* SPDX-License-Identifier: MIT */
/*
 * plan_text.c — the GPU layout plan (and axis info) in the printed IR.
 *
 * The builder's printer and parser know nothing of layouts; they call the
 * hooks of tji_text_hooks (ir.h), which this file implements. What it adds,
 * in the manner of Triton's tensor<64x64xf32, #blocked>:
 *
 *   #num_warps = 4
 *   #L1 = linear<[64x64], reg=[(0,1), (0,2)], lane=[(0,4), ...], warp=[(16,0), (32,0)]>
 *   kernel k(...) {
 *     %7 = load %6 : f32[64x64] #L1 #access<vector=2, addr_run=2>   // k.c:9
 *     %9 = convert %8 : f32[64x64] #L2 #shared<bytes=4, swizzle=[32->1]>
 *
 * Aliases are numbered in the order the values appear in the program; a
 * basis vector is the element it names as tile coordinates ((row,col); a
 * plain number for rank 1), one per register, lane and warp bit (layout.h).
 * (Parentheses, not Triton's nested brackets: FileCheck reads "[[" as the
 * start of a variable.)
 * A LOAD or STORE shows its vector width and address run, a step through
 * shared memory (tjp_shared_use_of) its swizzle; with axis info, a value
 * shows "#axis<contig=[..], div=[..], const=[..]>" (and "value=N"), with
 * the coalescing table an access "#coalesce<vector=.., addr_run=.., linear<..>>",
 * with the CPU's fusion plan a tile value "#cpu<fused|materialized, uses=N>".
 *
 * Reading back, layouts and access widths fill a new tjp_layout_plan. The
 * swizzle and the axis info are derived facts (the plan's layouts decide the
 * swizzle, the program the axis info), so the parser checks them: a swizzle
 * must be the one the parsed plan yields; axis info, the coalescing table and
 * the fusion plan are read and dropped (tjit-opt computes them again).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes.h"

typedef struct shared_note {
    int32_t op;
    int line;
    tjp_swizzle swizzle, index_swizzle;
    int has_index;
} shared_note;

typedef struct text_state {
    /* printing */
    const tjp_layout_plan *plan;
    const tjp_axis_info_result *axis;
    const tjp_coalesce_result *coalesce;
    const tjp_plan *cpu;
    tjp_layout *aliases;      /* distinct layouts, in order of appearance */
    int naliases;
    int32_t *alias_of;        /* per value id: alias number (1-based), 0 none */
    /* parsing */
    char (*names)[16];        /* parsed alias names */
    int num_warps;            /* 0: no #num_warps line read */
    tjp_layout *value_layout; /* per value id */
    uint8_t *has_layout;
    int32_t values_cap;
    uint8_t *vector, *addr_run;   /* per op */
    int32_t ops_cap;
    shared_note *notes;
    int nnotes;
    tjp_layout_plan *out;
    const char *source;       /* names the text in errors */
} text_state;

/* --- printing ------------------------------------------------------------ */

static int layout_equal(const tjp_layout *a, const tjp_layout *b)
{
    if (a->rank != b->rank || memcmp(a->nbits, b->nbits, sizeof a->nbits))
        return 0;
    for (int d = 0; d < a->rank; d++)
        if (a->shape[d] != b->shape[d])
            return 0;
    for (int k = 0; k < TJP_NIN; k++)
        for (int i = 0; i < a->nbits[k]; i++)
            if (a->basis[k][i] != b->basis[k][i])
                return 0;
    return 1;
}

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
        if (layout_equal(&t->aliases[a], L)) {
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
            if ((op->code == TJI_FOR || op->code == TJI_IF) && op->region[k] >= 0)
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
    if (op->code == TJI_LOAD || op->code == TJI_STORE)
        tjs_buf_printf(b, " #access<vector=%d, addr_run=%d>", plan->vector[idx],
                       plan->addr_run[idx]);
    tjp_shared_use use;
    if (tjp_shared_use_of(fn, plan, idx, &use)) {
        tjs_buf_printf(b, " #shared<bytes=%d, swizzle=", use.swizzle.elem_bytes);
        print_swizzle(b, &use.swizzle);
        if (use.has_index) {
            tjs_buf_printf(b, ", index_swizzle=");
            print_swizzle(b, &use.index_swizzle);
        }
        tjs_buf_printf(b, ">");
    }
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

/* --- parsing ------------------------------------------------------------- */

typedef struct cursor {
    const char *s;
    const char **err, **at;
} cursor;

static void spaces(cursor *c)
{
    while (*c->s == ' ' || *c->s == '\t')
        c->s++;
}

static int bad(cursor *c, const char *what)
{
    *c->err = what;
    *c->at = c->s;
    return 0;
}

static int take(cursor *c, const char *word)
{
    spaces(c);
    size_t n = strlen(word);
    if (strncmp(c->s, word, n) != 0)
        return 0;
    c->s += n;
    return 1;
}

static int need(cursor *c, const char *word, const char *what)
{
    return take(c, word) || bad(c, what);
}

static int number(cursor *c, long long lo, long long hi, long long *out, const char *what)
{
    spaces(c);
    char *end;
    if ((*c->s < '0' || *c->s > '9') && *c->s != '-')
        return bad(c, what);
    long long v = strtoll(c->s, &end, 10);
    if (end == c->s || v < lo || v > hi)
        return bad(c, what);
    c->s = end;
    *out = v;
    return 1;
}

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

static void grow_values(text_state *t, int32_t id)
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
        grow_values(t, id);
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
        if (take(&c, ",") && (!need(&c, "value=", "'value='") ||
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
            !number(c, 1, bit - 1, &flip, "the bits it flips (below the index bit)"))
            return 0;
        int i = 0;
        while ((1LL << i) != bit)
            i++;
        S->flip[i] = (uint32_t)flip;
        first = 0;
    }
    return 1;
}

static void grow_ops(text_state *t, int32_t op)
{
    if (op < t->ops_cap)
        return;
    int32_t cap = t->ops_cap ? t->ops_cap : 64;
    while (cap <= op)
        cap *= 2;
    t->vector = tjs_xrealloc(t->vector, (size_t)cap);
    t->addr_run = tjs_xrealloc(t->addr_run, (size_t)cap);
    memset(t->vector + t->ops_cap, 1, (size_t)(cap - t->ops_cap));
    memset(t->addr_run + t->ops_cap, 1, (size_t)(cap - t->ops_cap));
    t->ops_cap = cap;
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
    if (take(&c, "#access<")) {
        tji_opcode code = fn->ops[op].code;
        if (code != TJI_LOAD && code != TJI_STORE) {
            c.s = tag;
            return bad(&c, "an access width on a load or store only"), -1;
        }
        if (!need(&c, "vector=", "'vector='") || !number(&c, 1, 128, &v, "a vector width") ||
            (v & (v - 1)) || !need(&c, ",", "','") || !need(&c, "addr_run=", "'addr_run='") ||
            !number(&c, v, 255, &r, "an address run (at least the vector)") ||
            !need(&c, ">", "'>'"))
            return -1;
        grow_ops(t, op);
        t->vector[op] = (uint8_t)v;
        t->addr_run[op] = (uint8_t)r;
        end = c.s;
    }
    c.s = end;
    if (take(&c, "#shared<")) {
        shared_note note = {.op = op, .line = line};
        if (!need(&c, "bytes=", "'bytes='") || !number(&c, 1, 8, &v, "element bytes") ||
            !need(&c, ",", "','") || !need(&c, "swizzle=", "'swizzle='") ||
            !parse_swizzle(&c, &note.swizzle))
            return -1;
        note.swizzle.elem_bytes = (int)v;
        if (take(&c, ",")) {
            if (!need(&c, "index_swizzle=", "'index_swizzle='") ||
                !parse_swizzle(&c, &note.index_swizzle))
                return -1;
            note.has_index = 1;
        }
        if (!need(&c, ">", "'>' closing the shared step"))
            return -1;
        t->notes = tjs_xrealloc(t->notes, sizeof *t->notes * (size_t)(t->nnotes + 1));
        t->notes[t->nnotes++] = note;
        end = c.s;
    }
    return (int)(end - s);
}

static int same_swizzle(const tjp_swizzle *a, const tjp_swizzle *b, int check_bytes)
{
    return (!check_bytes || a->elem_bytes == b->elem_bytes) &&
           memcmp(a->flip, b->flip, sizeof a->flip) == 0;
}

/* The plan from what was read: every tile value needs a layout once any
 * has one; the swizzles read must be the plan's. */
static int finish(void *ctx, tji_func *fn)
{
    text_state *t = ctx;
    if (!t->out)
        return 0;
    memset(t->out, 0, sizeof *t->out);
    int any = t->num_warps != 0;
    if (!any)
        return t->nnotes ? tjs_error(TJ_ERR_INVALID_ARG, "%s: a #shared step without a layout "
                                     "plan (#num_warps and layouts)", t->source), -1 : 0;
    grow_values(t, fn->nvalues);
    grow_ops(t, fn->nops);
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
    for (int i = 0; i < t->nnotes; i++) {
        const shared_note *n = &t->notes[i];
        tjp_shared_use use;
        if (!tjp_shared_use_of(fn, p, n->op, &use))
            return tjs_error(TJ_ERR_INVALID_ARG, "%s:%d: #shared on an op the plan does not "
                             "take through shared memory", t->source, n->line), -1;
        if (!same_swizzle(&n->swizzle, &use.swizzle, 1) || n->has_index != use.has_index ||
            (n->has_index && !same_swizzle(&n->index_swizzle, &use.index_swizzle, 0))) {
            tjs_buf b = {0};
            tjs_buf_printf(&b, "bytes=%d, swizzle=", use.swizzle.elem_bytes);
            print_swizzle(&b, &use.swizzle);
            tjs_error(TJ_ERR_INVALID_ARG, "%s:%d: the swizzle read is not the one the layouts "
                      "give (%s)", t->source, n->line, b.data);
            tjs_buf_free(&b);
            return -1;
        }
    }
    return 0;
}

tj_status tjp_parse_annotated(const char *text, const char *source, tji_func **fn,
                              tjp_layout_plan *plan)
{
    text_state t = {.out = plan, .source = source ? source : "<input>"};
    tji_text_hooks h = {.ctx = &t, .parse_header_line = parse_header_line,
                        .parse_value = parse_value, .parse_op = parse_op, .finish = finish};
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
    free(t.notes);
    return st;
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
