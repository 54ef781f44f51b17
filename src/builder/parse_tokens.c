/* SPDX-License-Identifier: MIT */
/*
 * parse_tokens.c — the IR parser's reading below the op (parse.c reads the
 * ops, regions and the kernel out of what this file reads).
 *
 * The parser keeps one cursor into the text and moves it forward only;
 * every reader here skips the spaces before its token, reads it and leaves
 * the cursor after it. The tokens are few, as print.c writes few: names,
 * decimal integers, types ("*f32", "f32[64x32]", "bptr<f16[64x64]>"), value
 * ids ("%12"), string literals with print.c's escapes, constants read once
 * their dtype is known (the type follows the literal on the line), and the
 * "// file:line" location that ends an op's line.
 *
 * The value readers also check what one line cannot: a use names a value
 * defined above, a definition an id not defined before (the parser stores
 * each value at its printed id). Errors all go through tji_parse_fail_at,
 * which turns a position into "source:line:column" and names the token
 * found there; the line count resumes from the last position asked, so a
 * parse that numbers every op's line stays linear in the text.
 *
 * Kept apart from the grammar so that parse.c reads as the grammar: one
 * function a construct, its tokens by name.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"

#define MAX_VALUE_ID (1 << 24) /* far above any real kernel; bounds the arrays */

/* --- errors and the cursor ----------------------------------------------- */

/* Line and column (1-based) of position at. */
static void where(tji_parser *ps, const char *at, int *line, int *col)
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

int tji_parse_fail_at(tji_parser *ps, const char *at, const char *what)
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

int tji_parse_fail(tji_parser *ps, const char *what)
{
    return tji_parse_fail_at(ps, ps->p, what);
}

void tji_skip_spaces(tji_parser *ps)
{
    while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\r')
        ps->p++;
}

void tji_skip_blank_lines(tji_parser *ps)
{
    for (;;) {
        tji_skip_spaces(ps);
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

int tji_accept(tji_parser *ps, const char *s)
{
    tji_skip_spaces(ps);
    size_t n = strlen(s);
    if (strncmp(ps->p, s, n) != 0)
        return 0;
    ps->p += n;
    return 1;
}

int tji_expect(tji_parser *ps, const char *s)
{
    if (tji_accept(ps, s))
        return 1;
    char what[40];
    snprintf(what, sizeof what, "'%s'", s);
    return tji_parse_fail(ps, what);
}

/* --- tokens and literals ------------------------------------------------- */

int tji_read_ident(tji_parser *ps, char *out, size_t cap, const char *what)
{
    tji_skip_spaces(ps);
    size_t n = 0;
    while (is_ident_char(ps->p[n]))
        n++;
    if (n == 0 || n >= cap || (ps->p[0] >= '0' && ps->p[0] <= '9'))
        return tji_parse_fail(ps, what);
    memcpy(out, ps->p, n);
    out[n] = 0;
    ps->p += n;
    return 1;
}

int tji_read_integer(tji_parser *ps, int64_t *out, const char *what)
{
    tji_skip_spaces(ps);
    const char *s = ps->p;
    if (*s == '-')
        s++;
    if (*s < '0' || *s > '9')
        return tji_parse_fail(ps, what);
    char *end;
    errno = 0;
    long long v = strtoll(ps->p, &end, 10);
    if (errno)
        return tji_parse_fail(ps, "an integer in range");
    ps->p = end;
    *out = v;
    return 1;
}

int tji_read_small_int(tji_parser *ps, int *out, int lo, int hi, const char *what)
{
    const char *at = (tji_skip_spaces(ps), ps->p);
    int64_t v;
    if (!tji_read_integer(ps, &v, what))
        return 0;
    if (v < lo || v > hi)
        return tji_parse_fail_at(ps, at, what);
    *out = (int)v;
    return 1;
}

int tji_read_type(tji_parser *ps, tji_type *t)
{
    memset(t, 0, sizeof *t);
    int block = tji_accept(ps, "bptr<");
    if (block)
        t->is_ptr = TJI_BLOCK_PTR;
    else if (tji_accept(ps, "*"))
        t->is_ptr = 1;
    const char *at = (tji_skip_spaces(ps), ps->p);
    char name[16];
    if (!tji_read_ident(ps, name, sizeof name, "a type (i32, *f32, f32[64x32])"))
        return 0;
    int dt = 0;
    while (dt < TJ_DTYPE_COUNT && strcmp(tj_dtype_name((tj_dtype)dt), name) != 0)
        dt++;
    if (dt == TJ_DTYPE_COUNT)
        return tji_parse_fail_at(ps, at,
                                 "a dtype (i1, i8 .. u64, f16, bf16, f32, f64, f8e4m3, f8e5m2)");
    t->dtype = (tj_dtype)dt;
    if (*ps->p != '[')
        return !block || tji_expect(ps, ">");
    ps->p++;
    do {
        if (t->rank == TJ_MAX_RANK)
            return tji_parse_fail(ps, "']' (at most 4 dimensions)");
        const char *dim_at = ps->p;
        int d;
        if (!tji_read_small_int(ps, &d, 1, 1 << 30, "a dimension"))
            return 0;
        if (d & (d - 1))
            return tji_parse_fail_at(ps, dim_at, "a power-of-two dimension");
        t->shape[t->rank++] = d;
    } while (*ps->p == 'x' && ps->p++);
    return tji_expect(ps, "]") && (!block || tji_expect(ps, ">"));
}

int tji_read_dims(tji_parser *ps, int *dims, int *n)
{
    if (!tji_expect(ps, "["))
        return 0;
    for (*n = 0; !tji_accept(ps, "]"); ++*n)
        if (*n == TJ_MAX_RANK || (*n && !tji_expect(ps, ",")) ||
            !tji_read_small_int(ps, &dims[*n], 0, TJ_MAX_RANK - 1, "a dimension or ']'"))
            return ps->failed ? 0 : tji_parse_fail(ps, "']'");
    return 1;
}

int tji_read_string(tji_parser *ps, const char **out)
{
    tji_skip_spaces(ps);
    if (*ps->p != '"')
        return tji_parse_fail(ps, "a string (\"...\")");
    const char *s = ++ps->p;
    tjs_buf b = {0};
    tjs_buf_printf(&b, "%s", "");
    for (; *s != '"'; s++) {
        if (!*s || *s == '\n') {
            tjs_buf_free(&b);
            ps->p = s;
            return tji_parse_fail(ps, "the closing '\"'");
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
            return tji_parse_fail(ps, "an escape (\\\", \\\\, \\n, \\xHH)");
        }
    }
    ps->p = s + 1;
    *out = tjs_arena_strdup(ps->fn->arena, b.data);
    tjs_buf_free(&b);
    return 1;
}

int tji_read_constant(tji_parser *ps, tji_op *op, const char *lit, tj_dtype dt)
{
    char *end = NULL;
    errno = 0;
    if (dt == TJ_I1) {
        if (strncmp(lit, "true", 4) == 0 && !is_ident_char(lit[4]))
            op->ival = 1;
        else if (strncmp(lit, "false", 5) != 0 || is_ident_char(lit[5]))
            return tji_parse_fail_at(ps, lit, "true or false");
        return 1;
    }
    if (tjs_dtype_is_int(dt)) {
        if (*lit == '-' && tjs_dtype_is_signed(dt))
            op->ival = strtoll(lit, &end, 10);
        else if (*lit >= '0' && *lit <= '9')
            op->ival = (int64_t)strtoull(lit, &end, 10);
        if (!end || end == lit || errno || is_ident_char(*end) || *end == '.')
            return tji_parse_fail_at(ps, lit, "an integer constant of the result's dtype");
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
        return tji_parse_fail_at(ps, lit, "a float constant (digits, nan, inf, -inf)");
    return 1;
}

/* --- values -------------------------------------------------------------- */

int tji_read_value_id(tji_parser *ps, int32_t *id)
{
    tji_skip_spaces(ps);
    const char *at = ps->p;
    if (*ps->p != '%')
        return tji_parse_fail(ps, "a value (%id)");
    ps->p++;
    if (*ps->p < '1' || *ps->p > '9')
        return tji_parse_fail_at(ps, at, "a value (%id, id >= 1)");
    int64_t v;
    if (!tji_read_integer(ps, &v, "a value id") || v >= MAX_VALUE_ID)
        return tji_parse_fail_at(ps, at, "a value id below 16777216");
    *id = (int32_t)v;
    return 1;
}

int tji_read_use(tji_parser *ps, int32_t *id, int optional_ok)
{
    tji_skip_spaces(ps);
    if (optional_ok && *ps->p == '_' && !is_ident_char(ps->p[1])) {
        ps->p++;
        *id = 0;
        return 1;
    }
    const char *at = ps->p;
    if (!tji_read_value_id(ps, id))
        return 0;
    if (*id >= ps->defined_cap || !ps->defined[*id])
        return tji_parse_fail_at(ps, at, "a value defined above");
    return 1;
}

int tji_read_uses(tji_parser *ps, int32_t **args, int32_t *nargs)
{
    int32_t tmp[64];
    int n = 0;
    tji_skip_spaces(ps);
    if (*ps->p == '%' || (*ps->p == '_' && !is_ident_char(ps->p[1]))) {
        do {
            if (n == 64)
                return tji_parse_fail(ps, "at most 64 operands");
            if (!tji_read_use(ps, &tmp[n++], 1))
                return 0;
        } while (tji_accept(ps, ","));
    }
    *args = new_args(ps, n);
    memcpy(*args, tmp, sizeof(int32_t) * (size_t)n);
    *nargs = n;
    return 1;
}

int tji_define_value(tji_parser *ps, const char *at, int32_t id, tji_type t, int32_t def_op,
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
        return tji_parse_fail_at(ps, at, "a value id not defined before");
    ps->defined[id] = 1;
    tji_value_at(fn, id, t, def_op, def_region);
    return 1;
}

int tji_read_value_annotation(tji_parser *ps, int32_t id)
{
    const tji_text_hooks *h = ps->hooks;
    if (!h || !h->parse_value)
        return 1;
    const char *err = NULL, *at = ps->p;
    int n = h->parse_value(h->ctx, ps->p, ps->fn, id, &err, &at);
    if (n < 0)
        return tji_parse_fail_at(ps, at, err ? err : "an annotation");
    ps->p += n;
    return 1;
}

int tji_read_op_annotation(tji_parser *ps, int32_t op)
{
    const tji_text_hooks *h = ps->hooks;
    if (!h || !h->parse_op)
        return 1;
    const char *err = NULL, *at = ps->p;
    int line, col;
    where(ps, ps->p, &line, &col);
    int n = h->parse_op(h->ctx, ps->p, ps->fn, op, line, &err, &at);
    if (n < 0)
        return tji_parse_fail_at(ps, at, err ? err : "an annotation");
    ps->p += n;
    return 1;
}

/* --- the end of an op's line --------------------------------------------- */

int tji_read_line_end(tji_parser *ps, tji_loc *loc)
{
    tji_skip_spaces(ps);
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
            return tji_parse_fail(ps, "a location (// file:line)");
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
        return tji_parse_fail(ps, "the end of the line");
    if (*ps->p)
        ps->p++;
    return 1;
}
