/* SPDX-License-Identifier: MIT */
/*
 * control.c — runtime control flow: TJ_FOR, TJ_IF, TJ_ELSE and TJ_WHILE.
 *
 * They are C for-statements whose condition is tj__region_next(): the first
 * call after a begin lets the body run once (at build time), the second
 * closes the region. Open regions form a stack (scopes). Carried variables
 * are the user's own tj_val variables, named by address: a region's begin
 * points them at the block arguments (FOR) or leaves them (IF), and its
 * close yields their current values and points them at the op's results,
 * which turns C assignment into SSA. TJ_ELSE is accepted right after a TJ_IF
 * closed, with no op in between: it reopens the IF's else region, whose
 * provisional YIELD (the values from before the IF) is taken out and
 * re-appended with the else body's values at its close. TJ_WHILE's body is
 * one region like a FOR's (its block arguments are the carried values);
 * TJ_WHILE_COND, directly in it, appends the CONDITION that ends the loop
 * when false, with the carried values as they are there: those become the
 * WHILE's results. Regions opened in an
 * error state (or outside a build) are placeholders that only keep the C
 * loops' "run once, then close" rhythm.
 */
#include <stdlib.h>

#include "build.h"

/* --- control flow ---------------------------------------------------------- */

const char *tji_scope_name(scope_kind k)
{
    return k == SCOPE_FOR ? "for" : k == SCOPE_THEN ? "if" : k == SCOPE_ELSE ? "else" : "while";
}

/* Opens a scope; it stays a placeholder (op -1) unless its begin succeeds. */
static scope *push_scope(scope_kind kind, tj_loc loc)
{
    if (B.depth == B.scopes_cap) {
        B.scopes_cap = B.scopes_cap ? B.scopes_cap * 2 : 8;
        B.scopes = tjs_xrealloc(B.scopes, sizeof *B.scopes * (size_t)B.scopes_cap);
    }
    scope *s = &B.scopes[B.depth++];
    *s = (scope){.kind = kind, .op = -1, .yield_op = -1, .loc = loc};
    B.else_ready = 0;
    return s;
}

static int check_carried(tj_val **vars, int nvars)
{
    if (nvars < 0)
        return tji_fail(TJ_ERR_BUILD, "negative count of carried variables (%d)", nvars);
    for (int i = 1; i <= nvars; i++) {
        if (!vars || !vars[i])
            return tji_fail(TJ_ERR_BUILD, "carried variable %d is a NULL pointer", i);
        if (!tji_check_value(vid(*vars[i]), "carried variable", i))
            return 0;
    }
    return 1;
}

/* Remembers the carried variables of s (vars[1..n]) and their values now. */
static void keep_vars(scope *s, tj_val **vars, int nvars, int32_t *before)
{
    s->nvars = nvars;
    s->vars = tjs_arena_alloc(B.fn->arena, sizeof(tj_val *) * (size_t)(nvars + 1));
    for (int i = 0; i < nvars; i++) {
        s->vars[i] = vars[i + 1];
        before[i] = vid(*vars[i + 1]);
    }
}

tj_val tj__for_begin(tj_loc loc, tj_val lo, tj_val hi, tj_val step, tj_val **vars, int nvars)
{
    return tj__for_begin_opts(loc, lo, hi, step, vars, nvars, (tj_loop_opts){0});
}

tj_val tj__for_begin_opts(tj_loc loc, tj_val lo, tj_val hi, tj_val step, tj_val **vars, int nvars,
                          tj_loop_opts opts)
{
    push_scope(SCOPE_FOR, loc);
    int32_t b[3] = {vid(lo), vid(hi), vid(step)};
    if (!tji_enter(loc, "for", 3, (tj_val[]){lo, hi, step}) || !check_carried(vars, nvars))
        return NONE;
    for (int i = 0; i < 3; i++) {
        tji_type t = type_of(b[i]);
        if (t.is_ptr || is_float(t.dtype))
            return tji_fail(TJ_ERR_TYPE, "loop bounds must be integers, got %s", tji_type_text(&t)), NONE;
        if (t.rank)
            return tji_fail(TJ_ERR_SHAPE, "loop bounds must be scalars, got %s", tji_type_text(&t)), NONE;
    }
    if (opts.num_stages < 0 || opts.num_stages > TJI_MAX_STAGES)
        return tji_fail(TJ_ERR_INVALID_ARG, ".num_stages %d is not between 1 and %d (0: the launch's)",
                        opts.num_stages, TJI_MAX_STAGES), NONE;
    if (opts.unroll < 0 || opts.unroll > TJ_MAX_UNROLL)
        return tji_fail(TJ_ERR_INVALID_ARG, ".unroll %d is not between 1 and %d (0: LLVM's choice)",
                        opts.unroll, TJ_MAX_UNROLL), NONE;
    tj_dtype dt = tji_meet(b, 3);
    if (dt == TJ_I1)
        dt = TJ_I32;
    for (int i = 0; i < 3; i++)
        if (!(b[i] = tji_to_dtype(b[i], dt, 1)))
            return NONE;
    tji_func *fn = B.fn;
    int32_t *args = tjs_arena_alloc(fn->arena, sizeof(int32_t) * (size_t)(nvars + 3));
    tji_type *types = tjs_arena_alloc(fn->arena, sizeof(tji_type) * (size_t)(nvars + 1));
    memcpy(args, b, sizeof b);
    types[0] = scalar_type(dt);
    scope *s = &B.scopes[B.depth - 1];
    keep_vars(s, vars, nvars, args + 3);
    for (int i = 0; i < nvars; i++)
        types[i + 1] = type_of(args[3 + i]);
    int32_t op = tji_emit_op(TJI_FOR, B.region, args, nvars + 3, nvars, types + 1);
    fn->ops[op].num_stages = opts.num_stages;
    fn->ops[op].unroll = opts.unroll;
    int32_t body = tji_new_region(fn, op);
    tji_set_block_args(fn, body, types, nvars + 1);
    s->op = op;
    s->region = body;
    s->outer = B.region;
    for (int i = 0; i < nvars; i++)
        *s->vars[i] = val(fn->regions[body].args[i + 1]);
    B.region = body;
    return val(fn->regions[body].args[0]);
}

int tj__if_begin(tj_loc loc, tj_val cond, tj_val **vars, int nvars)
{
    push_scope(SCOPE_THEN, loc);
    if (!tji_enter(loc, "if", 1, &cond) || !check_carried(vars, nvars))
        return 1;
    tji_type t = type_of(vid(cond));
    if (t.rank)
        return tji_fail(TJ_ERR_SHAPE, "TJ_IF condition must be a scalar, got %s", tji_type_text(&t)), 1;
    int32_t c = tji_as_condition(vid(cond), "the TJ_IF condition");
    if (!c)
        return 1;
    tji_func *fn = B.fn;
    scope *s = &B.scopes[B.depth - 1];
    s->before = tjs_arena_alloc(fn->arena, sizeof(int32_t) * (size_t)(nvars + 1));
    keep_vars(s, vars, nvars, s->before);
    tji_type *types = tjs_arena_alloc(fn->arena, sizeof(tji_type) * (size_t)(nvars + 1));
    for (int i = 0; i < nvars; i++) {
        types[i] = type_of(s->before[i]);
        if (fn->values[s->before[i]].weak) /* its type is now the IF's: freeze it */
            B.lits[s->before[i]].used = 1;
    }
    s->op = tji_emit_op(TJI_IF, B.region, ARGS(c), nvars, types);
    s->region = tji_new_region(fn, s->op);
    tji_new_region(fn, s->op);
    s->outer = B.region;
    B.region = s->region;
    return 1;
}

/* The value of carried variable i (1-based) for a YIELD of type want: its
 * type may not change, but a literal is re-created in the wanted type. */
static int32_t carried_value(const scope *s, int i, const tji_type *want)
{
    int32_t id = vid(*s->vars[i - 1]);
    if (!tji_check_value(id, "carried variable", i))
        return 0;
    tji_type t = type_of(id);
    const literal *l = lit(id);
    if (!tji_type_equal(&t, want) && l && !want->is_ptr &&
        (l->kind != LIT_FLOAT || is_float(want->dtype))) {
        id = tji_to_dtype(id, want->dtype, 1);
        return id ? tji_broadcast_shape(id, want->rank, want->shape) : 0;
    }
    if (!tji_type_equal(&t, want)) {
        static const char *const where[] = {[SCOPE_FOR] = "loop", [SCOPE_THEN] = "TJ_IF",
                                            [SCOPE_ELSE] = "TJ_ELSE", [SCOPE_WHILE] = "TJ_WHILE"};
        int loop = s->kind == SCOPE_FOR || s->kind == SCOPE_WHILE;
        return tji_fail(TJ_ERR_TYPE, "%scarried variable %d changes type from %s to %s in the %s body",
                        loop ? "loop-" : "", i, tji_type_text(want), tji_type_text(&t), where[s->kind]);
    }
    return id;
}

/* Closes scope s: yields the carried values and points the variables at the
 * op's results. In an error state it only leaves the region. */
static void close_scope(scope *s)
{
    if (s->op < 0)
        return; /* a placeholder: its begin failed, nothing was opened */
    tji_func *fn = B.fn;
    int ok = B.status == TJ_OK;
    int32_t *vals = NULL;
    if (ok) {
        B.loc = s->loc;
        B.opname = tji_scope_name(s->kind);
        vals = tjs_arena_alloc(fn->arena, sizeof(int32_t) * (size_t)(s->nvars + 1));
        int32_t first = fn->ops[s->op].result;
        for (int i = 0; i < s->nvars && ok; i++) {
            tji_type want = fn->values[first + i].type;
            ok = (vals[i] = carried_value(s, i + 1, &want)) != 0;
        }
    }
    if (ok && s->kind == SCOPE_WHILE && s->yield_op < 0)
        ok = tji_fail(TJ_ERR_BUILD, "TJ_WHILE body without a TJ_WHILE_COND(cond): the loop "
                      "could never end");
    if (ok && s->kind != SCOPE_ELSE)
        tji_emit_op(TJI_YIELD, s->region, vals, s->nvars, 0, NULL);
    if (ok && s->kind == SCOPE_ELSE) { /* the provisional YIELD, with this body's values */
        tji_set_operands(fn, s->yield_op, vals, s->nvars);
        for (int i = 0; i < s->nvars; i++)
            if (fn->values[vals[i]].weak)
                B.lits[vals[i]].used = 1;
        tji_append_op(fn, s->region, s->yield_op);
    }
    B.region = s->outer;
    if (!ok)
        return;
    for (int i = 0; i < s->nvars; i++)
        *s->vars[i] = val(fn->ops[s->op].result + i);
    if (s->kind == SCOPE_THEN) {
        int32_t other = fn->ops[s->op].region[1];
        s->yield_op = tji_emit_op(TJI_YIELD, other, s->before, s->nvars, 0, NULL);
        B.last_if = *s;
        B.else_ready = 1;
    }
}

int tj__while_begin(tj_loc loc, tj_val **vars, int nvars)
{
    push_scope(SCOPE_WHILE, loc);
    if (!tji_enter(loc, "while", 0, NULL) || !check_carried(vars, nvars))
        return 1;
    tji_func *fn = B.fn;
    scope *s = &B.scopes[B.depth - 1];
    int32_t *init = tjs_arena_alloc(fn->arena, sizeof(int32_t) * (size_t)(nvars + 1));
    keep_vars(s, vars, nvars, init);
    tji_type *types = tjs_arena_alloc(fn->arena, sizeof(tji_type) * (size_t)(nvars + 1));
    for (int i = 0; i < nvars; i++) {
        types[i] = type_of(init[i]);
        if (fn->values[init[i]].weak) /* its type is now the loop's: freeze it */
            B.lits[init[i]].used = 1;
    }
    for (int i = 0; i < nvars; i++)
        if (tji_is_block_ptr(&types[i]))
            return tji_fail(TJ_ERR_TYPE, "TJ_WHILE cannot carry a block pointer (carried "
                            "variable %d): carry its offsets, or use TJ_FOR", i + 1), 1;
    s->op = tji_emit_op(TJI_WHILE, B.region, init, nvars, nvars, types);
    s->region = tji_new_region(fn, s->op);
    tji_set_block_args(fn, s->region, types, nvars);
    s->outer = B.region;
    for (int i = 0; i < nvars; i++)
        *s->vars[i] = val(fn->regions[s->region].args[i]);
    B.region = s->region;
    return 1;
}

void tj__while_cond(tj_loc loc, tj_val cond)
{
    if (!tji_enter(loc, "while_cond", 1, &cond))
        return;
    scope *s = B.depth > 0 ? &B.scopes[B.depth - 1] : NULL;
    if (!s || s->kind != SCOPE_WHILE || s->op < 0) {
        tji_fail(TJ_ERR_BUILD, "TJ_WHILE_COND outside a TJ_WHILE body (it goes directly in "
                 "one, not in a TJ_FOR or TJ_IF inside it)");
        return;
    }
    tji_func *fn = B.fn;
    if (s->yield_op >= 0) {
        tji_fail(TJ_ERR_BUILD, "a second TJ_WHILE_COND in one TJ_WHILE body (the first is at "
                 "line %d)", fn->ops[s->yield_op].loc.line);
        return;
    }
    tji_type t = type_of(vid(cond));
    if (t.rank) {
        tji_fail(TJ_ERR_SHAPE, "TJ_WHILE condition must be a scalar, got %s (reduce the tile, "
                 "e.g. with tj_max)", tji_type_text(&t));
        return;
    }
    int32_t *vals = tjs_arena_alloc(fn->arena, sizeof(int32_t) * (size_t)(s->nvars + 1));
    if (!(vals[0] = tji_as_condition(vid(cond), "the TJ_WHILE condition")))
        return;
    int32_t first = fn->ops[s->op].result;
    for (int i = 0; i < s->nvars; i++) {
        tji_type want = fn->values[first + i].type;
        if (!(vals[i + 1] = carried_value(s, i + 1, &want)))
            return;
    }
    s->yield_op = tji_emit_op(TJI_CONDITION, B.region, vals, s->nvars + 1, 0, NULL);
}

int tj__else_begin(tj_loc loc)
{
    scope prev = B.last_if;
    int ready = B.else_ready;
    scope *s = push_scope(SCOPE_ELSE, loc);
    if (!tji_enter(loc, "else", 0, NULL))
        return 1;
    tji_func *fn = B.fn;
    if (!ready || fn->ops[prev.op].parent != B.region)
        return tji_fail(TJ_ERR_BUILD, "TJ_ELSE without a matching TJ_IF"), 1;
    int32_t r = fn->ops[prev.op].region[1];
    tji_detach_op(fn, prev.yield_op); /* the provisional YIELD; the close puts it back */
    tji_drop_detached(fn, r);
    for (int i = 0; i < prev.nvars; i++)
        *prev.vars[i] = val(prev.before[i]);
    *s = prev;
    s->kind = SCOPE_ELSE;
    s->entered = 0;
    s->loc = loc;
    s->region = r;
    s->outer = B.region;
    B.region = r;
    return 1;
}

int tj__region_next(void)
{
    if (B.depth == 0) {
        if (B.fn)
            tji_fail(TJ_ERR_BUILD, "tj__region_next without an open TJ_FOR, TJ_IF or TJ_WHILE");
        return 0;
    }
    scope *s = &B.scopes[B.depth - 1];
    if (!s->entered) {
        s->entered = 1;
        return 1;
    }
    if (B.fn)
        close_scope(s);
    B.depth--;
    if (!B.fn && B.depth == 0) { /* regions opened outside any build */
        free(B.scopes);
        B.scopes = NULL;
        B.scopes_cap = 0;
    }
    return 0;
}

