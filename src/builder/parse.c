/* SPDX-License-Identifier: MIT */
/*
 * parse.c — the tile IR's text read back (print.c's inverse).
 *
 * tjit-opt reads hand-written IR with it, and make check proves, for every
 * kernel a test compiles, that print(parse(print(ir))) == print(ir)
 * (tjp_check_roundtrip). So the parser reads exactly the printer's grammar:
 * one op a line, operands by value id, attributes where the printer puts
 * them, the trailing "// file:line" as the op's location, regions as
 * indented blocks. Whitespace between tokens is free, a line that holds only
 * a "//" comment is skipped (lit's RUN and CHECK lines), and what a later
 * stage annotates (layouts) goes to its tji_text_hooks.
 *
 * Value ids are kept as printed: the parser stores each value at its id, so
 * the reprint names the same values. Every error stops the parse with
 * "source:line:column: expected X, found Y"; the parsed program is then
 * checked by tji_verify, so text the parser accepts is a valid program.
 *
 * (Past 900 lines on purpose: one grammar, read in one place, with
 * op_line's switch over the opcodes mirroring print_op_text's.)
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

#define MAX_VALUE_ID (1 << 24) /* far above any real kernel; bounds the arrays */
#define MAX_DEPTH 64           /* nesting of FOR/IF regions (bounds the C stack) */

typedef struct parser {
    const char *text, *p, *source;
    const tji_text_hooks *hooks;
    tji_func *fn;
    uint8_t *defined;          /* per value id: defined already (malloc'ed) */
    int32_t defined_cap;
    const char **files;        /* interned location file names (arena) */
    int nfiles;
    int failed;
    /* where() resumes from the last position asked (the parse moves
     * forward), so numbering every op's line stays linear */
    const char *seen, *seen_line_start;
    int seen_line;
} parser;

/* Line and column (1-based) of position at. */
static void where(parser *ps, const char *at, int *line, int *col)
{
    if (!ps->seen || at < ps->seen) {
        ps->seen = ps->seen_line_start = ps->text;
        ps->seen_line = 1;
    }
    for (const char *c = ps->seen; c < at; c++)
        if (*c == '\n') {
            ps->seen_line++;
            ps->seen_line_start = c + 1;
        }
    ps->seen = at;
    *line = ps->seen_line;
    *col = (int)(at - ps->seen_line_start) + 1;
}

/* Fails the parse at at: "expected what, found <the next token>". */
static int fail_at(parser *ps, const char *at, const char *what)
{
    if (ps->failed)
        return 0;
    ps->failed = 1;
    int line, col;
    where(ps, at, &line, &col);
    int n = 0;
    while (at[n] && at[n] != '\n' && at[n] != ' ' && n < 24)
        n++;
    if (!*at)
        tjs_error(TJ_ERR_INVALID_ARG, "%s:%d:%d: expected %s, found the end of the text",
                  ps->source, line, col, what);
    else if (*at == '\n')
        tjs_error(TJ_ERR_INVALID_ARG, "%s:%d:%d: expected %s, found the end of the line",
                  ps->source, line, col, what);
    else
        tjs_error(TJ_ERR_INVALID_ARG, "%s:%d:%d: expected %s, found '%.*s'", ps->source, line,
                  col, what, n, at);
    return 0;
}

static int fail(parser *ps, const char *what) { return fail_at(ps, ps->p, what); }

static void skip_spaces(parser *ps)
{
    while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\r')
        ps->p++;
}

/* Skips blank lines and lines holding only a comment. */
static void skip_blank_lines(parser *ps)
{
    for (;;) {
        skip_spaces(ps);
        if (*ps->p == '\n') {
            ps->p++;
        } else if (ps->p[0] == '/' && ps->p[1] == '/') {
            while (*ps->p && *ps->p != '\n')
                ps->p++;
        } else {
            return;
        }
    }
}

/* Skips spaces, then takes s if it comes next. */
static int accept(parser *ps, const char *s)
{
    skip_spaces(ps);
    size_t n = strlen(s);
    if (strncmp(ps->p, s, n) != 0)
        return 0;
    ps->p += n;
    return 1;
}

static int expect(parser *ps, const char *s)
{
    if (accept(ps, s))
        return 1;
    char what[40];
    snprintf(what, sizeof what, "'%s'", s);
    return fail(ps, what);
}

static int is_ident_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_';
}

/* An identifier into out (NUL-terminated); what names it in an error. */
static int ident(parser *ps, char *out, size_t cap, const char *what)
{
    skip_spaces(ps);
    size_t n = 0;
    while (is_ident_char(ps->p[n]))
        n++;
    if (n == 0 || n >= cap || (ps->p[0] >= '0' && ps->p[0] <= '9'))
        return fail(ps, what);
    memcpy(out, ps->p, n);
    out[n] = 0;
    ps->p += n;
    return 1;
}

static int integer(parser *ps, int64_t *out, const char *what)
{
    skip_spaces(ps);
    const char *s = ps->p;
    if (*s == '-')
        s++;
    if (*s < '0' || *s > '9')
        return fail(ps, what);
    char *end;
    errno = 0;
    long long v = strtoll(ps->p, &end, 10);
    if (errno)
        return fail(ps, "an integer in range");
    ps->p = end;
    *out = v;
    return 1;
}

static int small_int(parser *ps, int *out, int lo, int hi, const char *what)
{
    const char *at = (skip_spaces(ps), ps->p);
    int64_t v;
    if (!integer(ps, &v, what))
        return 0;
    if (v < lo || v > hi)
        return fail_at(ps, at, what);
    *out = (int)v;
    return 1;
}

/* --- types and values ---------------------------------------------------- */

static int type(parser *ps, tji_type *t)
{
    memset(t, 0, sizeof *t);
    int block = accept(ps, "bptr<");
    if (block)
        t->is_ptr = TJI_BLOCK_PTR;
    else if (accept(ps, "*"))
        t->is_ptr = 1;
    const char *at = (skip_spaces(ps), ps->p);
    char name[16];
    if (!ident(ps, name, sizeof name, "a type (i32, *f32, f32[64x32])"))
        return 0;
    int dt = 0;
    while (dt < TJ_DTYPE_COUNT && strcmp(tj_dtype_name((tj_dtype)dt), name) != 0)
        dt++;
    if (dt == TJ_DTYPE_COUNT)
        return fail_at(ps, at, "a dtype (i1, i8 .. u64, f16, bf16, f32, f64, f8e4m3, f8e5m2)");
    t->dtype = (tj_dtype)dt;
    if (*ps->p != '[')
        return !block || expect(ps, ">");
    ps->p++;
    do {
        if (t->rank == TJ_MAX_RANK)
            return fail(ps, "']' (at most 4 dimensions)");
        const char *dim_at = ps->p;
        int d;
        if (!small_int(ps, &d, 1, 1 << 30, "a dimension"))
            return 0;
        if (d & (d - 1))
            return fail_at(ps, dim_at, "a power-of-two dimension");
        t->shape[t->rank++] = d;
    } while (*ps->p == 'x' && ps->p++);
    return expect(ps, "]") && (!block || expect(ps, ">"));
}

/* "%id" into *id. */
static int value_id(parser *ps, int32_t *id)
{
    skip_spaces(ps);
    const char *at = ps->p;
    if (*ps->p != '%')
        return fail(ps, "a value (%id)");
    ps->p++;
    if (*ps->p < '1' || *ps->p > '9')
        return fail_at(ps, at, "a value (%id, id >= 1)");
    int64_t v;
    if (!integer(ps, &v, "a value id") || v >= MAX_VALUE_ID)
        return fail_at(ps, at, "a value id below 16777216");
    *id = (int32_t)v;
    return 1;
}

/* A use: a defined value, or "_" where optional_ok. */
static int use(parser *ps, int32_t *id, int optional_ok)
{
    skip_spaces(ps);
    if (optional_ok && *ps->p == '_' && !is_ident_char(ps->p[1])) {
        ps->p++;
        *id = 0;
        return 1;
    }
    const char *at = ps->p;
    if (!value_id(ps, id))
        return 0;
    if (*id >= ps->defined_cap || !ps->defined[*id])
        return fail_at(ps, at, "a value defined above");
    return 1;
}

/* Stores value id of type t (def_op, or a block argument of def_region). */
static int define(parser *ps, const char *at, int32_t id, tji_type t, int32_t def_op,
                  int32_t def_region)
{
    tji_func *fn = ps->fn;
    if (id >= ps->defined_cap) {
        int32_t cap = ps->defined_cap ? ps->defined_cap : 64;
        while (cap <= id)
            cap *= 2;
        ps->defined = tjs_xrealloc(ps->defined, (size_t)cap);
        memset(ps->defined + ps->defined_cap, 0, (size_t)(cap - ps->defined_cap));
        ps->defined_cap = cap;
    }
    if (ps->defined[id])
        return fail_at(ps, at, "a value id not defined before");
    ps->defined[id] = 1;
    tji_value_at(fn, id, t, def_op, def_region);
    return 1;
}

/* The value hook right after value id's definition. */
static int value_annotation(parser *ps, int32_t id)
{
    const tji_text_hooks *h = ps->hooks;
    if (!h || !h->parse_value)
        return 1;
    const char *err = NULL, *at = ps->p;
    int n = h->parse_value(h->ctx, ps->p, ps->fn, id, &err, &at);
    if (n < 0)
        return fail_at(ps, at, err ? err : "an annotation");
    ps->p += n;
    return 1;
}

static int op_annotation(parser *ps, int32_t op)
{
    const tji_text_hooks *h = ps->hooks;
    if (!h || !h->parse_op)
        return 1;
    const char *err = NULL, *at = ps->p;
    int line, col;
    where(ps, ps->p, &line, &col);
    int n = h->parse_op(h->ctx, ps->p, ps->fn, op, line, &err, &at);
    if (n < 0)
        return fail_at(ps, at, err ? err : "an annotation");
    ps->p += n;
    return 1;
}

/* --- ops ----------------------------------------------------------------- */

static int lookup_opcode(const char *name, tji_opcode *out)
{
    for (int c = 0; c < TJI_OPCODE_COUNT; c++)
        if (strcmp(tji_opcode_name((tji_opcode)c), name) == 0) {
            *out = (tji_opcode)c;
            return 1;
        }
    return 0;
}

static int index_of(const char *const *names, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0)
            return i;
    return -1;
}

/* One ".suffix" of the op name: the flags any op may carry, then the
 * opcode's own (predicate, fact, atomic or reduction). */
static int suffix(parser *ps, tji_op *op, const char *s, const char *at)
{
    static const char *const preds[] = {"eq", "ne", "lt", "le", "gt", "ge"};
    static const char *const facts[] = {"multiple_of", "max_contiguous", "max_constancy"};
    static const char *const atomics[] = {"add", "max", "min", "xchg"};
    static const char *const reduces[] = {"sum", "max", "min", "argmax", "argmin"};
    static const char *const precisions[] = {"ieee", "tf32", "tf32x3"};
    int i = -1;
    if (strcmp(s, "fast") == 0)
        return op->approx = 1;
    if (strcmp(s, "propagate_nan") == 0)
        return op->propagate_nan = 1;
    if (op->code == TJI_CMP && (i = index_of(preds, 6, s)) >= 0)
        op->pred = (tji_pred)i;
    else if (op->code == TJI_ASSUME && (i = index_of(facts, 3, s)) >= 0)
        op->assume = (tji_assume)i;
    else if (op->code == TJI_ATOMIC && (i = index_of(atomics, 4, s)) >= 0)
        op->atomic = (tj_atomic_op)i;
    else if (op->code == TJI_REDUCE && (i = index_of(reduces, 5, s)) >= 0)
        op->reduce = (tj_reduce_op)i;
    else if (op->code == TJI_DOT && (i = index_of(precisions, 3, s)) >= 0)
        op->precision = (tj_input_precision)i;
    if (i < 0)
        return fail_at(ps, at, "a suffix this op takes (.fast, .propagate_nan, a predicate, "
                       "fact, atomic, reduction or precision)");
    return 1;
}

/* A string literal with print.c's escapes, into the arena. */
static int string(parser *ps, const char **out)
{
    skip_spaces(ps);
    if (*ps->p != '"')
        return fail(ps, "a string (\"...\")");
    const char *s = ++ps->p;
    tjs_buf b = {0};
    tjs_buf_printf(&b, "%s", "");
    for (; *s != '"'; s++) {
        if (!*s || *s == '\n') {
            tjs_buf_free(&b);
            ps->p = s;
            return fail(ps, "the closing '\"'");
        }
        if (*s != '\\') {
            tjs_buf_printf(&b, "%c", *s);
            continue;
        }
        s++;
        unsigned hex;
        if (*s == '"' || *s == '\\')
            tjs_buf_printf(&b, "%c", *s);
        else if (*s == 'n')
            tjs_buf_printf(&b, "\n");
        else if (*s == 'x' && isxdigit((unsigned char)s[1]) && isxdigit((unsigned char)s[2]) &&
                 sscanf(s + 1, "%2x", &hex) == 1 && hex) {
            tjs_buf_printf(&b, "%c", (char)hex);
            s += 2;
        } else {
            tjs_buf_free(&b);
            ps->p = s - 1;
            return fail(ps, "an escape (\\\", \\\\, \\n, \\xHH)");
        }
    }
    ps->p = s + 1;
    *out = tjs_arena_strdup(ps->fn->arena, b.data);
    tjs_buf_free(&b);
    return 1;
}

/* The constant's literal, read once the result's dtype is known. */
static int constant(parser *ps, tji_op *op, const char *lit, tj_dtype dt)
{
    char *end = NULL;
    errno = 0;
    if (dt == TJ_I1) {
        if (strncmp(lit, "true", 4) == 0 && !is_ident_char(lit[4]))
            op->ival = 1;
        else if (strncmp(lit, "false", 5) != 0 || is_ident_char(lit[5]))
            return fail_at(ps, lit, "true or false");
        return 1;
    }
    if (tjs_dtype_is_int(dt)) {
        if (*lit == '-' && tjs_dtype_is_signed(dt))
            op->ival = strtoll(lit, &end, 10);
        else if (*lit >= '0' && *lit <= '9')
            op->ival = (int64_t)strtoull(lit, &end, 10);
        if (!end || end == lit || errno || is_ident_char(*end) || *end == '.')
            return fail_at(ps, lit, "an integer constant of the result's dtype");
        return 1;
    }
    if (strncmp(lit, "nan", 3) == 0 && !is_ident_char(lit[3]))
        op->fval = NAN;
    else if (strncmp(lit, "inf", 3) == 0 && !is_ident_char(lit[3]))
        op->fval = INFINITY;
    else if (strncmp(lit, "-inf", 4) == 0 && !is_ident_char(lit[4]))
        op->fval = -INFINITY;
    else if ((*lit == '-' || (*lit >= '0' && *lit <= '9')) &&
             ((op->fval = strtod(lit, &end)), end != lit) && !is_ident_char(*end) &&
             isfinite(op->fval))
        return 1;
    else
        return fail_at(ps, lit, "a float constant (digits, nan, inf, -inf)");
    return 1;
}

static int32_t *new_args(parser *ps, int n)
{
    return tjs_arena_alloc(ps->fn->arena, sizeof(int32_t) * (size_t)(n ? n : 1));
}

/* A comma-separated list of uses (with "_"), up to the end of the list. */
static int use_list(parser *ps, int32_t **args, int32_t *nargs)
{
    int32_t tmp[64];
    int n = 0;
    skip_spaces(ps);
    if (*ps->p == '%' || (*ps->p == '_' && !is_ident_char(ps->p[1]))) {
        do {
            if (n == 64)
                return fail(ps, "at most 64 operands");
            if (!use(ps, &tmp[n++], 1))
                return 0;
        } while (accept(ps, ","));
    }
    *args = new_args(ps, n);
    memcpy(*args, tmp, sizeof(int32_t) * (size_t)n);
    *nargs = n;
    return 1;
}

/* "[0, 1]": up to TJ_MAX_RANK dimensions into dims[0..*n). */
static int dims_list(parser *ps, int *dims, int *n)
{
    if (!expect(ps, "["))
        return 0;
    for (*n = 0; !accept(ps, "]"); ++*n)
        if (*n == TJ_MAX_RANK || (*n && !expect(ps, ",")) ||
            !small_int(ps, &dims[*n], 0, TJ_MAX_RANK - 1, "a dimension or ']'"))
            return ps->failed ? 0 : fail(ps, "']'");
    return 1;
}

static int mem_attrs(parser *ps, tji_op *op)
{
    static const char *const caches[] = {"", "ca", "cg", "cs", "lu", "cv", "wb", "wt"};
    static const char *const evicts[] = {"", "first", "last"};
    char word[16];
    while (accept(ps, ",")) {
        const char *at = (skip_spaces(ps), ps->p);
        if (!ident(ps, word, sizeof word, "cache, evict or volatile"))
            return 0;
        int i, dims[TJ_MAX_RANK], n;
        if (strcmp(word, "volatile") == 0 && op->code == TJI_LOAD) {
            op->is_volatile = 1;
        } else if (strcmp(word, "boundary_check") == 0) {
            if (!dims_list(ps, dims, &n))
                return 0;
            for (i = 0; i < n; i++)
                op->boundary_check |= 1u << dims[i];
        } else if (strcmp(word, "padding") == 0 && op->code == TJI_LOAD) {
            if (!accept(ps, "nan"))
                return fail(ps, "a padding (nan)");
            op->padding = TJ_PADDING_NAN;
        } else if (strcmp(word, "cache") == 0) {
            if (!ident(ps, word, sizeof word, "a cache hint") ||
                (i = index_of(caches, 8, word)) <= 0)
                return fail(ps, "a cache hint (ca cg cs lu cv wb wt)");
            op->cache = (tj_cache)i;
        } else if (strcmp(word, "evict") == 0) {
            if (!ident(ps, word, sizeof word, "an eviction hint") ||
                (i = index_of(evicts, 3, word)) <= 0)
                return fail(ps, "an eviction hint (first last)");
            op->evict = (tj_evict)i;
        } else {
            return fail_at(ps, at, "cache, evict or volatile");
        }
    }
    return 1;
}

/* The ops of a region up to its closing "}". */
static int region_body(parser *ps, int32_t region, int depth);

/* The location comment ending an op's line, and the line's end. */
static int line_end(parser *ps, tji_loc *loc)
{
    skip_spaces(ps);
    if (ps->p[0] == '/' && ps->p[1] == '/') {
        const char *s = ps->p + 2, *e = s;
        while (*e == ' ')
            s = ++e;
        while (*e && *e != '\n')
            e++;
        const char *colon = e;
        while (colon > s && colon[-1] != ':')
            colon--;
        char *end = NULL;
        long line = colon > s + 1 ? strtol(colon, &end, 10) : 0;
        while (end && (*end == ' ' || *end == '\r'))
            end++;
        if (colon <= s + 1 || line <= 0 || line > 1 << 30 || end != e) {
            ps->p = s;
            return fail(ps, "a location (// file:line)");
        }
        size_t n = (size_t)(colon - 1 - s);
        const char *file = NULL;
        for (int i = 0; i < ps->nfiles && !file; i++)
            if (strlen(ps->files[i]) == n && strncmp(ps->files[i], s, n) == 0)
                file = ps->files[i];
        if (!file) {
            char *copy = tjs_arena_alloc(ps->fn->arena, n + 1);
            memcpy(copy, s, n);
            const char **files = tjs_arena_alloc(ps->fn->arena,
                                                 sizeof *files * (size_t)(ps->nfiles + 1));
            if (ps->nfiles)
                memcpy(files, ps->files, sizeof *files * (size_t)ps->nfiles);
            files[ps->nfiles++] = file = copy;
            ps->files = files;
        }
        *loc = (tji_loc){file, (int)line};
        ps->p = e;
    }
    if (*ps->p && *ps->p != '\n')
        return fail(ps, "the end of the line");
    if (*ps->p)
        ps->p++;
    return 1;
}

/* "%a = %init" pairs of a FOR's iter_args. */
static int iter_args(parser *ps, int32_t body, int32_t iv, int32_t **args, int32_t *nargs)
{
    int32_t block[64], init[64];
    const char *block_at[64];
    int n = 0;
    if (accept(ps, "iter_args(")) {
        do {
            if (n == 63)
                return fail(ps, "at most 63 carried values");
            block_at[n] = (skip_spaces(ps), ps->p);
            if (!value_id(ps, &block[n]) || !expect(ps, "=") || !use(ps, &init[n], 0))
                return 0;
            if (!define(ps, block_at[n], block[n], ps->fn->values[init[n]].type, -1, body) ||
                !value_annotation(ps, block[n]))
                return 0;
            n++;
        } while (accept(ps, ","));
        if (!expect(ps, ")"))
            return 0;
    }
    tji_region *r = &ps->fn->regions[body];
    r->args = new_args(ps, n + 1);
    r->args[0] = iv;
    memcpy(r->args + 1, block, sizeof(int32_t) * (size_t)n);
    r->nargs = n + 1;
    int32_t *all = new_args(ps, n + 3);
    memcpy(all, *args, sizeof(int32_t) * 3);
    memcpy(all + 3, init, sizeof(int32_t) * (size_t)n);
    *args = all;
    *nargs = n + 3;
    return 1;
}

/* The "-> (types)" of a FOR or IF, defining its results. */
static int region_results(parser *ps, int32_t idx, const int32_t *ids, const char *const *at,
                          int n)
{
    if (n == 0)
        return 1;
    if (!expect(ps, "->") || !expect(ps, "("))
        return 0;
    for (int i = 0; i < n; i++) {
        tji_type t;
        if ((i && !expect(ps, ",")) || !type(ps, &t) || !define(ps, at[i], ids[i], t, idx, -1) ||
            !value_annotation(ps, ids[i]))
            return 0;
    }
    return expect(ps, ")");
}

static int op_line(parser *ps, int32_t region, int depth)
{
    tji_func *fn = ps->fn;
    int32_t ids[64];
    const char *ids_at[64];
    int nres = 0;
    skip_spaces(ps);
    if (*ps->p == '%') {
        do {
            if (nres == 64)
                return fail(ps, "at most 64 results");
            ids_at[nres] = (skip_spaces(ps), ps->p);
            if (!value_id(ps, &ids[nres]))
                return 0;
            if (nres && ids[nres] != ids[nres - 1] + 1)
                return fail_at(ps, ids_at[nres], "consecutive result ids");
            nres++;
        } while (accept(ps, ","));
        if (!expect(ps, "="))
            return 0;
    }
    const char *name_at = (skip_spaces(ps), ps->p);
    char name[32];
    if (!ident(ps, name, sizeof name, "an op name"))
        return 0;
    tji_opcode code;
    if (!lookup_opcode(name, &code))
        return fail_at(ps, name_at, "an op name (add, load, for, ...)");
    int32_t idx = tji_new_op(fn, code, region, (tji_loc){0});
    tji_op op = fn->ops[idx];
    while (*ps->p == '.') {
        const char *at = ++ps->p;
        char s[32];
        if (!ident(ps, s, sizeof s, "a suffix after '.'") || !suffix(ps, &op, s, at))
            return 0;
    }
    int is_region = code == TJI_FOR || code == TJI_IF;
    int no_result = code == TJI_STORE || code == TJI_YIELD || code == TJI_PRINT ||
                    code == TJI_ASSERT || code == TJI_ASYNC_COPY || code == TJI_ASYNC_COMMIT ||
                    code == TJI_ASYNC_WAIT;
    if (no_result && nres)
        return fail_at(ps, name_at, "an op with results (this one has none)");
    if (!is_region && !no_result && nres != 1)
        return fail_at(ps, name_at, nres ? "one result" : "'%id =' before this op");
    op.nresults = nres;
    op.result = nres ? ids[0] : 0;
    const char *lit = NULL, *arange_end_at = NULL;
    int64_t arange_end = 0;
    switch (code) {
    case TJI_CONST: {
        lit = (skip_spaces(ps), ps->p);
        while (*ps->p && *ps->p != ' ' && *ps->p != ':' && *ps->p != '\n')
            ps->p++;
        if (ps->p == lit)
            return fail(ps, "a constant");
        op.args = new_args(ps, 0);
        break;
    }
    case TJI_PROGRAM_ID: case TJI_NUM_PROGRAMS:
        if (!small_int(ps, &op.axis, 0, 2, "an axis (0, 1 or 2)"))
            return 0;
        op.args = new_args(ps, 0);
        break;
    case TJI_ARANGE:
        if (!integer(ps, &op.ival, "the range's start") || !expect(ps, ","))
            return 0;
        arange_end_at = (skip_spaces(ps), ps->p);
        if (!integer(ps, &arange_end, "the range's end"))
            return 0;
        op.args = new_args(ps, 0);
        break;
    case TJI_ASSUME:
        op.args = new_args(ps, 1);
        op.nargs = 1;
        if (!use(ps, &op.args[0], 0) || !expect(ps, ",") ||
            !integer(ps, &op.ival, "the assumed number"))
            return 0;
        break;
    case TJI_EXPAND_DIMS: case TJI_CUMSUM: case TJI_REDUCE:
        op.args = new_args(ps, 1);
        op.nargs = 1;
        if (!use(ps, &op.args[0], 0) || !expect(ps, ",") || !expect(ps, "axis") ||
            !small_int(ps, &op.axis, 0, TJ_MAX_RANK, "an axis"))
            return 0;
        break;
    case TJI_PERMUTE: case TJI_MAKE_BLOCK_PTR: {
        /* permute %x, [1, 0]; make_block_ptr %base, %shape.., %strides.., %offsets.., order [1, 0] */
        int32_t tmp[1 + 3 * TJ_MAX_RANK];
        int n = 0, nperm;
        do {
            if (n == (code == TJI_PERMUTE ? 1 : 1 + 3 * TJ_MAX_RANK))
                return fail(ps, code == TJI_PERMUTE ? "'['" : "'order'");
            if (!use(ps, &tmp[n++], 0) || !expect(ps, ","))
                return 0;
        } while ((skip_spaces(ps), *ps->p == '%'));
        if ((code == TJI_MAKE_BLOCK_PTR && !expect(ps, "order")) || !dims_list(ps, op.perm, &nperm))
            return 0;
        op.args = new_args(ps, n);
        op.nargs = n;
        memcpy(op.args, tmp, sizeof(int32_t) * (size_t)n);
        break;
    }
    case TJI_CAST: {
        op.args = new_args(ps, 1);
        op.nargs = 1;
        tji_type from, to;
        if (!use(ps, &op.args[0], 0) || !expect(ps, ":"))
            return 0;
        const char *from_at = (skip_spaces(ps), ps->p);
        if (!type(ps, &from) || !expect(ps, "->") || !type(ps, &to))
            return 0;
        if (!tji_type_equal(&from, &fn->values[op.args[0]].type))
            return fail_at(ps, from_at, "the operand's type");
        if (!define(ps, ids_at[0], ids[0], to, idx, -1) || !value_annotation(ps, ids[0]))
            return 0;
        break;
    }
    case TJI_LOAD: case TJI_STORE: case TJI_ATOMIC: {
        int load = code == TJI_LOAD;
        op.args = new_args(ps, 3);
        op.nargs = 3;
        if (!use(ps, &op.args[0], 0) || (!load && (!expect(ps, ",") || !use(ps, &op.args[1], 0))))
            return 0;
        const char *save = ps->p;
        if (accept(ps, ",") && accept(ps, "mask")) {
            if (!use(ps, &op.args[load ? 1 : 2], 0))
                return 0;
            save = ps->p;
        } else {
            ps->p = save;
        }
        if (load && accept(ps, ",") && accept(ps, "other")) {
            if (!use(ps, &op.args[2], 0))
                return 0;
        } else {
            ps->p = save;
        }
        if (!mem_attrs(ps, &op))
            return 0;
        break;
    }
    case TJI_ASYNC_COPY: case TJI_LOCAL_LOAD: {
        int copy = code == TJI_ASYNC_COPY;
        op.args = new_args(ps, copy ? 3 : 1);
        op.nargs = copy ? 3 : 1;
        if (copy && (!use(ps, &op.args[0], 0) || !expect(ps, ",")))
            return 0;
        if (!use(ps, &op.args[copy], 0))
            return 0;
        const char *save = ps->p;
        if (copy && accept(ps, ",") && accept(ps, "mask")) {
            if (!use(ps, &op.args[2], 0))
                return 0;
        } else {
            ps->p = save;
        }
        if (!expect(ps, ",") || !expect(ps, "ring") ||
            !small_int(ps, &op.ring, 0, INT32_MAX, "a ring number") || !expect(ps, ",") ||
            !expect(ps, "slots") ||
            !small_int(ps, &op.ring_slots, 1, INT32_MAX, "a number of slots") ||
            !mem_attrs(ps, &op))
            return 0;
        break;
    }
    case TJI_ASYNC_WAIT:
        if (!integer(ps, &op.ival, "the groups left in flight"))
            return 0;
        op.args = new_args(ps, 0);
        break;
    case TJI_FOR: {
        int32_t iv;
        const char *iv_at = (skip_spaces(ps), ps->p);
        op.args = new_args(ps, 3);
        if (!value_id(ps, &iv) || !expect(ps, "=") || !use(ps, &op.args[0], 0) ||
            !expect(ps, "to") || !use(ps, &op.args[1], 0) || !expect(ps, "step") ||
            !use(ps, &op.args[2], 0) || !expect(ps, ":"))
            return 0;
        const char *t_at = (skip_spaces(ps), ps->p);
        tji_type t;
        if (!type(ps, &t))
            return 0;
        if (!tji_type_equal(&t, &fn->values[op.args[0]].type))
            return fail_at(ps, t_at, "the lower bound's type");
        int32_t body = tji_new_region(fn, idx);
        op.region[0] = body;
        if (!define(ps, iv_at, iv, t, -1, body) ||
            !iter_args(ps, body, iv, &op.args, &op.nargs) ||
            !region_results(ps, idx, ids, ids_at, nres))
            return 0;
        break;
    }
    case TJI_IF:
        op.args = new_args(ps, 1);
        op.nargs = 1;
        if (!use(ps, &op.args[0], 0) || !region_results(ps, idx, ids, ids_at, nres))
            return 0;
        op.region[0] = tji_new_region(fn, idx);
        op.region[1] = tji_new_region(fn, idx);
        break;
    case TJI_PRINT:
        op.args = new_args(ps, 1);
        op.nargs = 1;
        if (!string(ps, &op.str) || !expect(ps, ",") || !use(ps, &op.args[0], 0))
            return 0;
        break;
    case TJI_ASSERT:
        op.args = new_args(ps, 1);
        op.nargs = 1;
        if (!use(ps, &op.args[0], 0) || !expect(ps, ",") || !string(ps, &op.str))
            return 0;
        break;
    default:
        if (!use_list(ps, &op.args, &op.nargs))
            return 0;
        break;
    }
    if (!is_region && !no_result && code != TJI_CAST) {
        tji_type t;
        if (!expect(ps, ":") || !type(ps, &t))
            return 0;
        if (lit && !constant(ps, &op, lit, t.dtype))
            return 0;
        if (arange_end_at && (t.rank != 1 || arange_end - op.ival != t.shape[0]))
            return fail_at(ps, arange_end_at, "the range's end: start + the result's length");
        if (!define(ps, ids_at[0], ids[0], t, idx, -1) || !value_annotation(ps, ids[0]))
            return 0;
    }
    /* regions made above may have moved fn->ops; the op goes in whole */
    op.region[0] = fn->ops[idx].region[0];
    op.region[1] = fn->ops[idx].region[1];
    fn->ops[idx] = op;
    if (!op_annotation(ps, idx))
        return 0;
    if (is_region && !expect(ps, "{"))
        return 0;
    tji_loc loc = {0};
    if (!line_end(ps, &loc))
        return 0;
    fn->ops[idx].loc = loc;
    if (!is_region)
        return 1;
    if (depth >= MAX_DEPTH)
        return fail(ps, "at most 64 nested regions");
    if (!region_body(ps, fn->ops[idx].region[0], depth + 1))
        return 0;
    if (code == TJI_IF) {
        int32_t other = fn->ops[idx].region[1];
        if (accept(ps, "else")) {
            if (!expect(ps, "{") || !line_end(ps, &(tji_loc){0}) ||
                !region_body(ps, other, depth + 1))
                return 0;
        } else {
            /* the printer leaves out an else that only yields nothing */
            int32_t y = tji_new_op(fn, TJI_YIELD, other, loc);
            fn->ops[y].args = new_args(ps, 0);
        }
    }
    return line_end(ps, &(tji_loc){0});
}

/* Ops up to the "}" that closes the region; leaves the text after it. */
static int region_body(parser *ps, int32_t region, int depth)
{
    for (;;) {
        skip_blank_lines(ps);
        if (*ps->p == '}') {
            ps->p++;
            return 1;
        }
        if (!*ps->p)
            return fail(ps, "'}' closing the region");
        if (!op_line(ps, region, depth))
            return 0;
    }
}

/* --- the kernel ---------------------------------------------------------- */

static int header_lines(parser *ps)
{
    for (;;) {
        skip_blank_lines(ps);
        if (*ps->p != '#')
            return 1;
        const tji_text_hooks *h = ps->hooks;
        const char *err = NULL, *at = ps->p;
        if (!h || !h->parse_header_line ||
            h->parse_header_line(h->ctx, ps->p, &err, &at) < 0)
            return fail_at(ps, at, err ? err : "'kernel' (no annotations are read here)");
        while (*ps->p && *ps->p != '\n')
            ps->p++;
    }
}

static int kernel(parser *ps)
{
    tji_func *fn = ps->fn;
    char name[256];
    if (!header_lines(ps) || !expect(ps, "kernel") || !ident(ps, name, sizeof name, "a kernel name") ||
        !expect(ps, "("))
        return 0;
    fn->name = tjs_arena_strdup(fn->arena, name);
    int32_t body = 0; /* tji_new_func made it */
    tji_param params[64];
    int32_t args[64];
    int n = 0;
    if (!accept(ps, ")")) {
        do {
            if (n == 64)
                return fail(ps, "at most 64 parameters");
            const char *at = (skip_spaces(ps), ps->p);
            tji_type t;
            if (!value_id(ps, &args[n]) || !ident(ps, name, sizeof name, "a parameter name") ||
                !expect(ps, ":") || !type(ps, &t))
                return 0;
            if (t.rank)
                return fail_at(ps, at, "a scalar or pointer parameter");
            if (!define(ps, at, args[n], t, -1, body) || !value_annotation(ps, args[n]))
                return 0;
            params[n] = (tji_param){tjs_arena_strdup(fn->arena, name), t.is_ptr, t.dtype,
                                    args[n]};
            n++;
        } while (accept(ps, ","));
        if (!expect(ps, ")"))
            return 0;
    }
    fn->nparams = n;
    fn->params = tjs_arena_alloc(fn->arena, sizeof *fn->params * (size_t)(n ? n : 1));
    memcpy(fn->params, params, sizeof *params * (size_t)n);
    fn->regions[body].args = new_args(ps, n);
    memcpy(fn->regions[body].args, args, sizeof(int32_t) * (size_t)n);
    fn->regions[body].nargs = n;
    const char *names[64];
    int64_t values[64];
    int nc = 0;
    if (accept(ps, "[")) {
        do {
            if (nc == 64)
                return fail(ps, "at most 64 constants");
            if (!ident(ps, name, sizeof name, "a constant's name") || !expect(ps, "=") ||
                !integer(ps, &values[nc], "the constant's value"))
                return 0;
            names[nc++] = tjs_arena_strdup(fn->arena, name);
        } while (accept(ps, ","));
        if (!expect(ps, "]"))
            return 0;
    }
    fn->nconsts = nc;
    const char **cn = tjs_arena_alloc(fn->arena, sizeof *cn * (size_t)(nc ? nc : 1));
    fn->const_values = tjs_arena_alloc(fn->arena, sizeof(int64_t) * (size_t)(nc ? nc : 1));
    memcpy(cn, names, sizeof *cn * (size_t)nc);
    memcpy(fn->const_values, values, sizeof(int64_t) * (size_t)nc);
    fn->const_names = cn;
    if (!expect(ps, "{") || !line_end(ps, &(tji_loc){0}) || !region_body(ps, body, 0) ||
        !line_end(ps, &(tji_loc){0}))
        return 0;
    skip_blank_lines(ps);
    if (*ps->p)
        return fail(ps, "the end of the text after the kernel");
    /* Ids the text never defines (results of ops a pass took out of their
     * region) get a placeholder op outside every region, so that the other
     * ids stay as printed. */
    for (int32_t id = 1; id <= fn->nvalues; id++)
        if (!ps->defined[id]) {
            int32_t idx = tji_new_op(fn, TJI_CONST, -1, (tji_loc){0});
            tji_value_at(fn, id, (tji_type){.dtype = TJ_I32}, idx, -1);
            tji_set_result(fn, idx, id);
        }
    return 1;
}

tj_status tji_parse(const char *text, const char *source, const tji_text_hooks *hooks,
                    tji_func **out)
{
    if (!text || !out)
        return tjs_error(TJ_ERR_INVALID_ARG, "tji_parse: text or out is NULL");
    *out = NULL;
    tji_func *fn = tji_new_func(""); /* named by the kernel line */
    parser ps = {.text = text, .p = text, .source = source ? source : "<input>",
                 .hooks = hooks, .fn = fn};
    int ok = kernel(&ps);
    free(ps.defined);
    tj_status st = ok ? TJ_OK : TJ_ERR_INVALID_ARG;
    if (ok && hooks && hooks->finish && hooks->finish(hooks->ctx, fn) < 0)
        st = TJ_ERR_INVALID_ARG;
    if (st == TJ_OK)
        st = tji_verify(fn);
    if (st != TJ_OK) {
        tji_func_free(fn);
        return st;
    }
    *out = fn;
    return TJ_OK;
}
