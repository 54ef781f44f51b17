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
 * This file reads the grammar: an op line (its results, name and
 * suffixes, then the operands and attributes of its opcode, in a switch
 * that mirrors print.c's print_op_text), the regions of FOR and IF, and
 * the kernel line with its parameters and constants. parse_tokens.c reads
 * what it is made of: tokens, types, value ids, literals and locations.
 */
#include <stdlib.h>
#include <string.h>

#include "parse.h"

#define MAX_DEPTH 64           /* nesting of FOR/IF regions (bounds the C stack) */

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
static int suffix(tji_parser *ps, tji_op *op, const char *s, const char *at)
{
    static const char *const preds[] = {"eq", "ne", "lt", "le", "gt", "ge"};
    static const char *const facts[] = {"multiple_of", "max_contiguous", "max_constancy"};
    static const char *const atomics[] = {"add", "max", "min", "xchg", "and", "or", "xor"};
    static const char *const sems[] = {"acq_rel", "relaxed", "acquire", "release"};
    static const char *const scopes[] = {"gpu", "cta", "sys"};
    static const char *const reduces[] = {"sum", "max", "min", "argmax", "argmin", "prod"};
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
    else if (op->code == TJI_ATOMIC && (i = index_of(atomics, 7, s)) >= 0)
        op->atomic = (tj_atomic_op)i;
    else if ((op->code == TJI_ATOMIC || op->code == TJI_ATOMIC_CAS) && (i = index_of(sems, 4, s)) >= 0)
        op->sem = (tj_sem)i;
    else if ((op->code == TJI_ATOMIC || op->code == TJI_ATOMIC_CAS) && (i = index_of(scopes, 3, s)) >= 0)
        op->scope = (tj_scope)i;
    else if (op->code == TJI_REDUCE && (i = index_of(reduces, 6, s)) >= 0)
        op->reduce = (tj_reduce_op)i;
    else if (op->code == TJI_CUMSUM && strcmp(s, "prod") == 0)
        op->reduce = TJ_REDUCE_PROD, i = 0;
    else if (op->code == TJI_DOT && (i = index_of(precisions, 3, s)) >= 0)
        op->precision = (tj_input_precision)i;
    else if (op->code == TJI_CAST && strcmp(s, "rtz") == 0)
        op->round_to_zero = 1, i = 0;
    else if (op->code == TJI_INLINE_ASM && strcmp(s, "volatile") == 0)
        op->is_volatile = 1, i = 0;
    else if (op->code == TJI_INLINE_ASM && strncmp(s, "pack", 4) == 0 && s[4] >= '2' && s[4] <= '9' &&
             (!s[5] || (s[5] >= '0' && s[5] <= '9' && !s[6])))
        op->asm_pack = atoi(s + 4), i = 0;
    else if (op->code == TJI_FOR && strncmp(s, "stages", 6) == 0 && s[6] >= '1' && s[6] <= '9' && !s[7])
        op->num_stages = s[6] - '0', i = 0;
    else if (op->code == TJI_FOR && strncmp(s, "unroll", 6) == 0 && s[6] >= '1' && s[6] <= '9' &&
             strspn(s + 7, "0123456789") == strlen(s + 7) && strlen(s + 6) <= 2)
        op->unroll = atoi(s + 6), i = 0;
    else if (op->code == TJI_FOR && strcmp(s, "tiles") == 0)
        op->tile_loop = 1, i = 0;
    if (i < 0)
        return tji_parse_fail_at(ps, at,
                                 "a suffix this op takes (.fast, .propagate_nan, a predicate, "
                                 "fact, atomic, memory order, scope, reduction, precision, rounding, "
                                 "an asm's pack or volatile, a loop's stages, unroll or tiles)");
    return 1;
}

/* ", tma(values)" after a LOAD's, STORE's or ASYNC_COPY's first three operands
 * (print.c's print_tma), if it comes next: appended to op's operands;
 * their count gives tma_rank (ir.h). */
static int tma_operands(tji_parser *ps, tji_op *op)
{
    const char *save = ps->p;
    if (!tji_accept(ps, ",") || !tji_accept(ps, "tma")) {
        ps->p = save;
        return 1;
    }
    int32_t *vals, n;
    if (!tji_expect(ps, "(") || !tji_read_uses(ps, &vals, &n))
        return 0;
    int extra = op->code == TJI_ASYNC_COPY; /* its "exists" */
    int rank = (n - extra - 1) / 3;
    if (rank < 1 || n != TJI_TMA_OPERANDS(rank) + extra)
        return tji_parse_fail(ps, extra ? "base, shape, strides, offsets and exists of a tensor"
                                        : "base, shape, strides and offsets of a tensor");
    if (!tji_expect(ps, ")"))
        return 0;
    int32_t *all = new_args(ps, TJI_TMA_FIRST + n);
    memcpy(all, op->args, sizeof(int32_t) * TJI_TMA_FIRST);
    memcpy(all + TJI_TMA_FIRST, vals, sizeof(int32_t) * (size_t)n);
    op->args = all;
    op->nargs = TJI_TMA_FIRST + n;
    op->tma_rank = rank;
    return 1;
}

static int mem_attrs(tji_parser *ps, tji_op *op)
{
    static const char *const caches[] = {"", "ca", "cg", "cs", "lu", "cv", "wb", "wt"};
    static const char *const evicts[] = {"", "first", "last"};
    char word[16];
    while (tji_accept(ps, ",")) {
        const char *at = (tji_skip_spaces(ps), ps->p);
        if (!tji_read_ident(ps, word, sizeof word, "cache, evict or volatile"))
            return 0;
        int i, dims[TJ_MAX_RANK], n;
        if (strcmp(word, "volatile") == 0 && op->code == TJI_LOAD) {
            op->is_volatile = 1;
        } else if (strcmp(word, "boundary_check") == 0) {
            if (!tji_read_dims(ps, dims, &n))
                return 0;
            for (i = 0; i < n; i++)
                op->boundary_check |= 1u << dims[i];
        } else if (strcmp(word, "padding") == 0 && op->code == TJI_LOAD) {
            if (!tji_accept(ps, "nan"))
                return tji_parse_fail(ps, "a padding (nan)");
            op->padding = TJ_PADDING_NAN;
        } else if (strcmp(word, "cache") == 0) {
            if (!tji_read_ident(ps, word, sizeof word, "a cache hint") ||
                (i = index_of(caches, 8, word)) <= 0)
                return tji_parse_fail(ps, "a cache hint (ca cg cs lu cv wb wt)");
            op->cache = (tj_cache)i;
        } else if (strcmp(word, "evict") == 0) {
            if (!tji_read_ident(ps, word, sizeof word, "an eviction hint") ||
                (i = index_of(evicts, 3, word)) <= 0)
                return tji_parse_fail(ps, "an eviction hint (first last)");
            op->evict = (tj_evict)i;
        } else {
            return tji_parse_fail_at(ps, at, "cache, evict or volatile");
        }
    }
    return 1;
}

/* The ops of a region up to its closing "}". */
static int region_body(tji_parser *ps, int32_t region, int depth);

/* "%a = %init" pairs of a FOR's iter_args. */
/* A FOR's "iter_args(%a = %init, ...)" after its bounds (iv: its induction
 * variable, the body's first argument), or a WHILE's (iv 0: none, no bounds). */
static int iter_args(tji_parser *ps, int32_t body, int32_t iv, int32_t **args, int32_t *nargs)
{
    int32_t block[64], init[64];
    const char *block_at[64];
    int n = 0;
    if (tji_accept(ps, "iter_args(")) {
        do {
            if (n == 63)
                return tji_parse_fail(ps, "at most 63 carried values");
            block_at[n] = (tji_skip_spaces(ps), ps->p);
            if (!tji_read_value_id(ps, &block[n]) || !tji_expect(ps, "=") ||
                !tji_read_use(ps, &init[n], 0))
                return 0;
            tji_type t = ps->fn->values[init[n]].type;
            if (!tji_define_value(ps, block_at[n], block[n], t, -1, body) ||
                !tji_read_value_annotation(ps, block[n]))
                return 0;
            n++;
        } while (tji_accept(ps, ","));
        if (!tji_expect(ps, ")"))
            return 0;
    }
    int fixed = iv ? 1 : 0, bounds = iv ? 3 : 0;
    tji_region *r = &ps->fn->regions[body];
    r->args = new_args(ps, n + fixed);
    if (fixed)
        r->args[0] = iv;
    memcpy(r->args + fixed, block, sizeof(int32_t) * (size_t)n);
    r->nargs = n + fixed;
    int32_t *all = new_args(ps, n + bounds);
    memcpy(all, *args, sizeof(int32_t) * (size_t)bounds);
    memcpy(all + bounds, init, sizeof(int32_t) * (size_t)n);
    *args = all;
    *nargs = n + bounds;
    return 1;
}

/* The "-> (types)" of a FOR, IF or WHILE, defining its results. */
static int region_results(tji_parser *ps, int32_t idx, const int32_t *ids, const char *const *at,
                          int n)
{
    if (n == 0)
        return 1;
    if (!tji_expect(ps, "->") || !tji_expect(ps, "("))
        return 0;
    for (int i = 0; i < n; i++) {
        tji_type t;
        if ((i && !tji_expect(ps, ",")) || !tji_read_type(ps, &t) ||
            !tji_define_value(ps, at[i], ids[i], t, idx, -1) ||
            !tji_read_value_annotation(ps, ids[i]))
            return 0;
    }
    return tji_expect(ps, ")");
}

static int op_line(tji_parser *ps, int32_t region, int depth)
{
    tji_func *fn = ps->fn;
    int32_t ids[64];
    const char *ids_at[64];
    int nres = 0;
    tji_skip_spaces(ps);
    if (*ps->p == '%') {
        do {
            if (nres == 64)
                return tji_parse_fail(ps, "at most 64 results");
            ids_at[nres] = (tji_skip_spaces(ps), ps->p);
            if (!tji_read_value_id(ps, &ids[nres]))
                return 0;
            if (nres && ids[nres] != ids[nres - 1] + 1)
                return tji_parse_fail_at(ps, ids_at[nres], "consecutive result ids");
            nres++;
        } while (tji_accept(ps, ","));
        if (!tji_expect(ps, "="))
            return 0;
    }
    const char *name_at = (tji_skip_spaces(ps), ps->p);
    char name[32];
    if (!tji_read_ident(ps, name, sizeof name, "an op name"))
        return 0;
    tji_opcode code;
    if (!lookup_opcode(name, &code))
        return tji_parse_fail_at(ps, name_at, "an op name (add, load, for, ...)");
    int32_t idx = tji_new_op(fn, code, region, (tji_loc){0});
    tji_op op = fn->ops[idx];
    while (*ps->p == '.') {
        const char *at = ++ps->p;
        char s[32];
        if (!tji_read_ident(ps, s, sizeof s, "a suffix after '.'") || !suffix(ps, &op, s, at))
            return 0;
    }
    int is_region = code == TJI_FOR || code == TJI_IF || code == TJI_WHILE;
    int no_result = code == TJI_STORE || code == TJI_YIELD || code == TJI_PRINT ||
                    code == TJI_ASSERT || code == TJI_ASSUME_TRUE || code == TJI_ASYNC_COPY ||
                    code == TJI_ASYNC_COMMIT || code == TJI_ASYNC_WAIT || code == TJI_CONDITION ||
                    code == TJI_BARRIER;
    if (no_result && nres)
        return tji_parse_fail_at(ps, name_at, "an op with results (this one has none)");
    if (!is_region && !no_result && nres != 1)
        return tji_parse_fail_at(ps, name_at, nres ? "one result" : "'%id =' before this op");
    op.nresults = nres;
    op.result = nres ? ids[0] : 0;
    const char *lit = NULL, *arange_end_at = NULL;
    int64_t arange_end = 0;
    switch (code) {
    case TJI_CONST: {
        lit = (tji_skip_spaces(ps), ps->p);
        while (*ps->p && *ps->p != ' ' && *ps->p != ':' && *ps->p != '\n')
            ps->p++;
        if (ps->p == lit)
            return tji_parse_fail(ps, "a constant");
        op.args = new_args(ps, 0);
        break;
    }
    case TJI_PROGRAM_ID: case TJI_NUM_PROGRAMS:
        if (!tji_read_small_int(ps, &op.axis, 0, 2, "an axis (0, 1 or 2)"))
            return 0;
        op.args = new_args(ps, 0);
        break;
    case TJI_ARANGE:
        if (!tji_read_integer(ps, &op.ival, "the range's start") || !tji_expect(ps, ","))
            return 0;
        arange_end_at = (tji_skip_spaces(ps), ps->p);
        if (!tji_read_integer(ps, &arange_end, "the range's end"))
            return 0;
        op.args = new_args(ps, 0);
        break;
    case TJI_ASSUME:
        op.args = new_args(ps, 1);
        op.nargs = 1;
        if (!tji_read_use(ps, &op.args[0], 0) || !tji_expect(ps, ",") ||
            !tji_read_integer(ps, &op.ival, "the assumed number"))
            return 0;
        break;
    case TJI_EXPAND_DIMS: case TJI_CUMSUM: case TJI_REDUCE:
        op.args = new_args(ps, 1);
        op.nargs = 1;
        if (!tji_read_use(ps, &op.args[0], 0) || !tji_expect(ps, ",") || !tji_expect(ps, "axis") ||
            !tji_read_small_int(ps, &op.axis, 0, TJ_MAX_RANK, "an axis"))
            return 0;
        break;
    case TJI_PERMUTE: case TJI_MAKE_BLOCK_PTR: {
        /* permute %x, [1, 0];
         * make_block_ptr %base, %shape.., %strides.., %offsets.., order [1, 0] */
        int32_t tmp[1 + 3 * TJ_MAX_RANK];
        int n = 0, nperm;
        do {
            if (n == (code == TJI_PERMUTE ? 1 : 1 + 3 * TJ_MAX_RANK))
                return tji_parse_fail(ps, code == TJI_PERMUTE ? "'['" : "'order'");
            if (!tji_read_use(ps, &tmp[n++], 0) || !tji_expect(ps, ","))
                return 0;
        } while ((tji_skip_spaces(ps), *ps->p == '%'));
        if ((code == TJI_MAKE_BLOCK_PTR && !tji_expect(ps, "order")) ||
            !tji_read_dims(ps, op.perm, &nperm))
            return 0;
        op.args = new_args(ps, n);
        op.nargs = n;
        memcpy(op.args, tmp, sizeof(int32_t) * (size_t)n);
        break;
    }
    case TJI_BITCAST: case TJI_CAST: {
        op.args = new_args(ps, 1);
        op.nargs = 1;
        tji_type from, to;
        if (!tji_read_use(ps, &op.args[0], 0) || !tji_expect(ps, ":"))
            return 0;
        const char *from_at = (tji_skip_spaces(ps), ps->p);
        if (!tji_read_type(ps, &from) || !tji_expect(ps, "->") || !tji_read_type(ps, &to))
            return 0;
        if (!tji_type_equal(&from, &fn->values[op.args[0]].type))
            return tji_parse_fail_at(ps, from_at, "the operand's type");
        if (!tji_define_value(ps, ids_at[0], ids[0], to, idx, -1) ||
            !tji_read_value_annotation(ps, ids[0]))
            return 0;
        break;
    }
    case TJI_LOAD: case TJI_STORE: case TJI_ATOMIC: {
        int load = code == TJI_LOAD;
        op.args = new_args(ps, 3);
        op.nargs = 3;
        if (!tji_read_use(ps, &op.args[0], 0) ||
            (!load && (!tji_expect(ps, ",") || !tji_read_use(ps, &op.args[1], 0))))
            return 0;
        const char *save = ps->p;
        if (tji_accept(ps, ",") && tji_accept(ps, "mask")) {
            if (!tji_read_use(ps, &op.args[load ? 1 : 2], 0))
                return 0;
            save = ps->p;
        } else {
            ps->p = save;
        }
        if (load && tji_accept(ps, ",") && tji_accept(ps, "other")) {
            if (!tji_read_use(ps, &op.args[2], 0))
                return 0;
        } else {
            ps->p = save;
        }
        if (code != TJI_ATOMIC && !tma_operands(ps, &op))
            return 0;
        if (!mem_attrs(ps, &op))
            return 0;
        break;
    }
    case TJI_ASYNC_COPY: case TJI_LOCAL_LOAD: {
        int copy = code == TJI_ASYNC_COPY;
        op.args = new_args(ps, copy ? 3 : 1);
        op.nargs = copy ? 3 : 1;
        if (copy && (!tji_read_use(ps, &op.args[0], 0) || !tji_expect(ps, ",")))
            return 0;
        if (!tji_read_use(ps, &op.args[copy], 0))
            return 0;
        const char *save = ps->p;
        if (copy && tji_accept(ps, ",") && tji_accept(ps, "mask")) {
            if (!tji_read_use(ps, &op.args[2], 0))
                return 0;
        } else {
            ps->p = save;
        }
        if (copy && !tma_operands(ps, &op))
            return 0;
        if (!tji_expect(ps, ",") || !tji_expect(ps, "ring") ||
            !tji_read_small_int(ps, &op.ring, 0, INT32_MAX, "a ring number") ||
            !tji_expect(ps, ",") || !tji_expect(ps, "slots") ||
            !tji_read_small_int(ps, &op.ring_slots, 1, INT32_MAX, "a number of slots") ||
            !mem_attrs(ps, &op))
            return 0;
        break;
    }
    case TJI_ASYNC_WAIT:
        if (!tji_read_integer(ps, &op.ival, "the groups left in flight"))
            return 0;
        op.args = new_args(ps, 0);
        break;
    case TJI_FOR: {
        int32_t iv;
        const char *iv_at = (tji_skip_spaces(ps), ps->p);
        op.args = new_args(ps, 3);
        if (!tji_read_value_id(ps, &iv) || !tji_expect(ps, "=") ||
            !tji_read_use(ps, &op.args[0], 0) || !tji_expect(ps, "to") ||
            !tji_read_use(ps, &op.args[1], 0) || !tji_expect(ps, "step") ||
            !tji_read_use(ps, &op.args[2], 0) || !tji_expect(ps, ":"))
            return 0;
        const char *t_at = (tji_skip_spaces(ps), ps->p);
        tji_type t;
        if (!tji_read_type(ps, &t))
            return 0;
        if (!tji_type_equal(&t, &fn->values[op.args[0]].type))
            return tji_parse_fail_at(ps, t_at, "the lower bound's type");
        int32_t body = tji_new_region(fn, idx);
        op.region[0] = body;
        if (!tji_define_value(ps, iv_at, iv, t, -1, body) ||
            !iter_args(ps, body, iv, &op.args, &op.nargs) ||
            !region_results(ps, idx, ids, ids_at, nres))
            return 0;
        break;
    }
    case TJI_WHILE: {
        int32_t body = tji_new_region(fn, idx);
        op.region[0] = body;
        op.args = new_args(ps, 0);
        if (!iter_args(ps, body, 0, &op.args, &op.nargs) ||
            !region_results(ps, idx, ids, ids_at, nres))
            return 0;
        break;
    }
    case TJI_IF:
        op.args = new_args(ps, 1);
        op.nargs = 1;
        if (!tji_read_use(ps, &op.args[0], 0) || !region_results(ps, idx, ids, ids_at, nres))
            return 0;
        op.region[0] = tji_new_region(fn, idx);
        op.region[1] = tji_new_region(fn, idx);
        break;
    case TJI_INLINE_ASM:
        if (!tji_read_string(ps, &op.str) || !tji_expect(ps, ",") || !tji_read_string(ps, &op.constraints) ||
            (tji_accept(ps, ",") && !tji_read_uses(ps, &op.args, &op.nargs)))
            return 0;
        break;
    case TJI_PRINT:
        op.args = new_args(ps, 1);
        op.nargs = 1;
        if (!tji_read_string(ps, &op.str) || !tji_expect(ps, ",") ||
            !tji_read_use(ps, &op.args[0], 0))
            return 0;
        break;
    case TJI_ASSERT:
        op.args = new_args(ps, 1);
        op.nargs = 1;
        if (!tji_read_use(ps, &op.args[0], 0) || !tji_expect(ps, ",") ||
            !tji_read_string(ps, &op.str))
            return 0;
        break;
    default:
        if (!tji_read_uses(ps, &op.args, &op.nargs))
            return 0;
        break;
    }
    if (!is_region && !no_result && code != TJI_CAST && code != TJI_BITCAST) {
        tji_type t;
        if (!tji_expect(ps, ":") || !tji_read_type(ps, &t))
            return 0;
        if (lit && !tji_read_constant(ps, &op, lit, t.dtype))
            return 0;
        if (arange_end_at && (t.rank != 1 || arange_end - op.ival != t.shape[0]))
            return tji_parse_fail_at(ps, arange_end_at,
                                     "the range's end: start + the result's length");
        if (!tji_define_value(ps, ids_at[0], ids[0], t, idx, -1) ||
            !tji_read_value_annotation(ps, ids[0]))
            return 0;
    }
    /* regions made above may have moved fn->ops; the op goes in whole */
    op.region[0] = fn->ops[idx].region[0];
    op.region[1] = fn->ops[idx].region[1];
    fn->ops[idx] = op;
    if (!tji_read_op_annotation(ps, idx))
        return 0;
    if (is_region && !tji_expect(ps, "{"))
        return 0;
    tji_loc loc = {0};
    if (!tji_read_line_end(ps, &loc))
        return 0;
    fn->ops[idx].loc = loc;
    if (!is_region)
        return 1;
    if (depth >= MAX_DEPTH)
        return tji_parse_fail(ps, "at most 64 nested regions");
    if (!region_body(ps, fn->ops[idx].region[0], depth + 1))
        return 0;
    if (code == TJI_IF) {
        int32_t other = fn->ops[idx].region[1];
        if (tji_accept(ps, "else")) {
            if (!tji_expect(ps, "{") || !tji_read_line_end(ps, &(tji_loc){0}) ||
                !region_body(ps, other, depth + 1))
                return 0;
        } else {
            /* the printer leaves out an else that only yields nothing */
            int32_t y = tji_new_op(fn, TJI_YIELD, other, loc);
            fn->ops[y].args = new_args(ps, 0);
        }
    }
    return tji_read_line_end(ps, &(tji_loc){0});
}

/* Ops up to the "}" that closes the region; leaves the text after it. */
static int region_body(tji_parser *ps, int32_t region, int depth)
{
    for (;;) {
        tji_skip_blank_lines(ps);
        if (*ps->p == '}') {
            ps->p++;
            return 1;
        }
        if (!*ps->p)
            return tji_parse_fail(ps, "'}' closing the region");
        if (!op_line(ps, region, depth))
            return 0;
    }
}

/* --- the kernel ---------------------------------------------------------- */

static int header_lines(tji_parser *ps)
{
    for (;;) {
        tji_skip_blank_lines(ps);
        if (*ps->p != '#')
            return 1;
        const tji_text_hooks *h = ps->hooks;
        const char *err = NULL, *at = ps->p;
        if (!h || !h->parse_header_line ||
            h->parse_header_line(h->ctx, ps->p, &err, &at) < 0)
            return tji_parse_fail_at(ps, at, err ? err : "'kernel' (no annotations are read here)");
        while (*ps->p && *ps->p != '\n')
            ps->p++;
    }
}

static int kernel(tji_parser *ps)
{
    tji_func *fn = ps->fn;
    char name[256];
    if (!header_lines(ps) || !tji_expect(ps, "kernel") ||
        !tji_read_ident(ps, name, sizeof name, "a kernel name") || !tji_expect(ps, "("))
        return 0;
    fn->name = tjs_arena_strdup(fn->arena, name);
    int32_t body = 0; /* tji_new_func made it */
    tji_param params[64];
    int32_t args[64];
    int n = 0;
    if (!tji_accept(ps, ")")) {
        do {
            if (n == 64)
                return tji_parse_fail(ps, "at most 64 parameters");
            const char *at = (tji_skip_spaces(ps), ps->p);
            tji_type t;
            if (!tji_read_value_id(ps, &args[n]) ||
                !tji_read_ident(ps, name, sizeof name, "a parameter name") ||
                !tji_expect(ps, ":") || !tji_read_type(ps, &t))
                return 0;
            if (t.rank)
                return tji_parse_fail_at(ps, at, "a scalar or pointer parameter");
            if (!tji_define_value(ps, at, args[n], t, -1, body) ||
                !tji_read_value_annotation(ps, args[n]))
                return 0;
            params[n] = (tji_param){tjs_arena_strdup(fn->arena, name), t.is_ptr, t.dtype,
                                    args[n]};
            n++;
        } while (tji_accept(ps, ","));
        if (!tji_expect(ps, ")"))
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
    if (tji_accept(ps, "[")) {
        do {
            if (nc == 64)
                return tji_parse_fail(ps, "at most 64 constants");
            if (!tji_read_ident(ps, name, sizeof name, "a constant's name") ||
                !tji_expect(ps, "=") || !tji_read_integer(ps, &values[nc], "the constant's value"))
                return 0;
            names[nc++] = tjs_arena_strdup(fn->arena, name);
        } while (tji_accept(ps, ","));
        if (!tji_expect(ps, "]"))
            return 0;
    }
    fn->nconsts = nc;
    const char **cn = tjs_arena_alloc(fn->arena, sizeof *cn * (size_t)(nc ? nc : 1));
    fn->const_values = tjs_arena_alloc(fn->arena, sizeof(int64_t) * (size_t)(nc ? nc : 1));
    memcpy(cn, names, sizeof *cn * (size_t)nc);
    memcpy(fn->const_values, values, sizeof(int64_t) * (size_t)nc);
    fn->const_names = cn;
    if (!tji_expect(ps, "{") || !tji_read_line_end(ps, &(tji_loc){0}) ||
        !region_body(ps, body, 0) || !tji_read_line_end(ps, &(tji_loc){0}))
        return 0;
    tji_skip_blank_lines(ps);
    if (*ps->p)
        return tji_parse_fail(ps, "the end of the text after the kernel");
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
    tji_parser ps = {.text = text, .p = text, .source = source ? source : "<input>",
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
