/* SPDX-License-Identifier: MIT */
/*
 * parse.h — what the IR parser's two files share, private to them:
 * parse_tokens.c reads everything below an op (the cursor and its errors,
 * tokens, types, value ids, literals, the location ending a line) and
 * parse.c the grammar above it (ops, regions, the kernel). The rest of
 * tjit sees the parser through ir.h's tji_parse only.
 *
 * Each reader skips the spaces before what it reads (tji_read_constant
 * reads at lit instead), takes it and moves the cursor past it, returning
 * 1; or fails the parse and returns 0. The first failure is the one
 * reported (tji_parse_fail_at): later ones are what the first left behind,
 * so they say nothing and stop the parse the same way.
 */
#ifndef TJIT_PARSE_H
#define TJIT_PARSE_H

#include "ir.h"

/* The parse in progress: the text, the cursor and the program it fills. */
typedef struct tji_parser {
    const char *text, *p, *source;
    const tji_text_hooks *hooks;
    tji_func *fn;
    uint8_t *defined;          /* per value id: defined already (malloc'ed) */
    int32_t defined_cap;
    const char **files;        /* interned location file names (arena) */
    int nfiles;
    int failed;
    /* where() (parse_tokens.c) resumes from the last position asked (the
     * parse moves forward), so numbering every op's line stays linear */
    const char *seen, *seen_line_start;
    int seen_line;
} tji_parser;

static inline int is_ident_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_';
}

/* An operand array of n (its memory in the program's arena). */
static inline int32_t *new_args(tji_parser *ps, int n)
{
    return tjs_arena_alloc(ps->fn->arena, sizeof(int32_t) * (size_t)(n ? n : 1));
}

/* --- errors and the cursor (parse_tokens.c) ------------------------------ */

/* Fails the parse at at: "source:line:column: expected what, found <the
 * next token>"; returns 0. tji_parse_fail fails at the cursor. */
TJI_FUNC int tji_parse_fail_at(tji_parser *ps, const char *at, const char *what);
TJI_FUNC int tji_parse_fail(tji_parser *ps, const char *what);
TJI_FUNC void tji_skip_spaces(tji_parser *ps);
/* Skips blank lines and lines holding only a comment. */
TJI_FUNC void tji_skip_blank_lines(tji_parser *ps);
/* Skips spaces, then takes s if it comes next (accept: 0 if not, without
 * failing; expect: fails). */
TJI_FUNC int tji_accept(tji_parser *ps, const char *s);
TJI_FUNC int tji_expect(tji_parser *ps, const char *s);

/* --- tokens and literals (parse_tokens.c) -------------------------------- */

/* Each names what it reads with what, in the message of its failure. */
TJI_FUNC int tji_read_ident(tji_parser *ps, char *out, size_t cap, const char *what);
TJI_FUNC int tji_read_integer(tji_parser *ps, int64_t *out, const char *what);
TJI_FUNC int tji_read_small_int(tji_parser *ps, int *out, int lo, int hi, const char *what);
/* "i32", "*f32", "f32[64x32]", "bptr<f16[64x64]>". */
TJI_FUNC int tji_read_type(tji_parser *ps, tji_type *t);
/* "[0, 1]": up to TJ_MAX_RANK dimensions into dims[0..*n). */
TJI_FUNC int tji_read_dims(tji_parser *ps, int *dims, int *n);
/* A string literal with print.c's escapes, into the arena. */
TJI_FUNC int tji_read_string(tji_parser *ps, const char **out);
/* The literal of a CONST, at lit: read once the result's dtype dt is known
 * (the type follows the literal on the line), into op. */
TJI_FUNC int tji_read_constant(tji_parser *ps, tji_op *op, const char *lit, tj_dtype dt);
/* The "// file:line" location ending an op's line (if there), then the
 * line's end. */
TJI_FUNC int tji_read_line_end(tji_parser *ps, tji_loc *loc);

/* --- values (parse_tokens.c) --------------------------------------------- */

/* "%id" into *id. */
TJI_FUNC int tji_read_value_id(tji_parser *ps, int32_t *id);
/* A use: a defined value, or "_" (0) where optional_ok. */
TJI_FUNC int tji_read_use(tji_parser *ps, int32_t *id, int optional_ok);
/* A comma-separated list of uses (with "_"), up to the end of the list. */
TJI_FUNC int tji_read_uses(tji_parser *ps, int32_t **args, int32_t *nargs);
/* Stores value id of type t (def_op, or a block argument of def_region);
 * at is where the text names it. */
TJI_FUNC int tji_define_value(tji_parser *ps, const char *at, int32_t id, tji_type t,
                              int32_t def_op, int32_t def_region);
/* The hooks' annotations: a value's right after its definition, an op's
 * after its text. */
TJI_FUNC int tji_read_value_annotation(tji_parser *ps, int32_t id);
TJI_FUNC int tji_read_op_annotation(tji_parser *ps, int32_t op);

#endif
