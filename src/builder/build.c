/* SPDX-License-Identifier: MIT */
/*
 * build.c — the builder behind the kernel language: the build in progress,
 * value handles, errors, operand checks, emitting ops, and tji_build.
 *
 * tji_build() makes an empty function whose body region has one block
 * argument per kernel parameter, stores it as this thread's "current
 * function" (tji_building) and runs the kernel's build callback. The public
 * tj__* functions (called by the macros of tjit.h; in literals.c, shapes.c,
 * ops.c and control.c) append to it. Because the state is thread-local,
 * kernels can be built on several threads at once, and the macros need no
 * hidden context argument. When the body has run, tji_build verifies the
 * program (verify.c) and prints it for TJIT_DUMP=ir (print.c): the builder
 * sits above both, neither calls back.
 *
 * Every op makes its operands agree before it enters the IR, as ir.h
 * promises (literals.c: dtypes; shapes.c: shapes).
 *
 * Errors: the first error wins. A failing op records its status and a message
 * "FILE:LINE: error: in kernel 'K', op 'OP': ..." and returns the empty value
 * {0}; every later op sees the recorded error (or its empty operand) and
 * returns {0} quietly, so the body runs to its end without a crash and
 * without a cascade of messages. tji_build then hands the first message to
 * tjs_error.
 *
 * A value may only be used in the region that defines it or in regions nested
 * inside that one; anything else is a value escaping a TJ_FOR/TJ_IF body and
 * is reported at the op that uses it.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build.h"

_Thread_local tji_builder tji_building;
_Thread_local uint64_t tji_build_serial;
/* Serials of builds (see the handles in build.h), process-wide. */
static atomic_uint_fast64_t build_counter;

/* --- errors ---------------------------------------------------------------- */

const char *tji_loc_file(tj_loc loc) { return loc.file ? loc.file : "?"; }

/* Records the first error of the build; returns 0 for "no value". */
int32_t tji_fail(tj_status status, const char *fmt, ...)
{
    if (B.status != TJ_OK)
        return 0;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(B.message, sizeof B.message, "%s:%d: error: in kernel '%s', op '%s': %s",
             tji_loc_file(B.loc), B.loc.line, B.fn->name, B.opname, msg);
    B.status = status;
    return 0;
}

/* A type as text for a message ("*f32[64]"); four stay valid at a time. */
const char *tji_type_text(const tji_type *t)
{
    tjs_buf b = {0};
    tji_print_type(&b, t);
    char *out = B.type_text[B.type_next++ & 3];
    snprintf(out, sizeof B.type_text[0], "%s", b.data ? b.data : "");
    tjs_buf_free(&b);
    return out;
}

/* A shape as text ("[64x32]", "[]" for a scalar). */
const char *tji_dims_text(int rank, const int64_t *dims)
{
    char *out = B.type_text[B.type_next++ & 3];
    size_t n = sizeof B.type_text[0], len = 1;
    snprintf(out, n, "[");
    for (int i = 0; i < rank && i < TJ_MAX_RANK; i++)
        len += (size_t)snprintf(out + len, len < n ? n - len : 0, "%s%lld", i ? "x" : "",
                                (long long)dims[i]);
    if (len < n)
        snprintf(out + len, n - len, "]");
    return out;
}

const char *tji_shape_text(const tji_type *t)
{
    int64_t dims[TJ_MAX_RANK] = {0};
    for (int i = 0; i < t->rank; i++)
        dims[i] = t->shape[i];
    return tji_dims_text(t->rank, dims);
}

/* --- values ---------------------------------------------------------------- */

/* Checks that id is a value the current op may read. what/index name it in
 * the message ("operand 2", "carried variable 1"). */
int tji_check_value(int32_t id, const char *what, int index)
{
    if (id == 0)
        return tji_fail(TJ_ERR_BUILD, "%s %d is an empty value (tj_val {0}: never assigned?)",
                        what, index);
    if (id < 0 || id > B.fn->nvalues)
        return tji_fail(TJ_ERR_BUILD,
                        "%s %d is not a value of this kernel (a C number where a tile value "
                        "belongs? write TJ_V(n) or tj_f32(n); or a value kept from another "
                        "kernel's build)",
                        what, index);
    int32_t r = tji_value_region(B.fn, id);
    if (!tji_region_within(B.fn, B.region, r)) {
        tji_loc body = B.fn->ops[B.fn->regions[r].parent_op].loc;
        return tji_fail(TJ_ERR_BUILD,
                        "value defined inside a TJ_FOR/TJ_IF/TJ_WHILE body (%s:%d) is used outside it; "
                        "list it as a carried variable",
                        body.file ? body.file : "?", body.line);
    }
    tji_op *def = B.fn->values[id].def_op >= 0 ? op_of(id) : NULL;
    if (def && def->loc.line == 0) /* a literal takes the line of its first use */
        def->loc = (tji_loc){B.loc.file, B.loc.line};
    return 1;
}

int tji_check_optional(int32_t id, int index)
{
    return id == 0 || tji_check_value(id, "operand", index);
}

/* Starts an op: a kernel is being built, no error so far, operands valid;
 * a block pointer only as operand 1 where block_ok. */
static int enter(tj_loc loc, const char *name, int n, const tj_val *args, int block_ok)
{
    if (!B.fn) {
        tjs_error(TJ_ERR_BUILD,
                  "%s:%d: error: op '%s' used outside a kernel body (no kernel is being built)",
                  tji_loc_file(loc), loc.line, name);
        return 0;
    }
    if (B.status != TJ_OK)
        return 0;
    B.loc = loc;
    B.opname = name;
    if (B.fn->nvalues > HANDLE_MAX_ID - 64)
        return tji_fail(TJ_ERR_BUILD, "the kernel has more than %d values", HANDLE_MAX_ID - 64);
    for (int i = 0; i < n; i++) {
        if (!tji_check_value(vid(args[i]), "operand", i + 1))
            return 0;
        tji_type t = type_of(vid(args[i]));
        if (tji_is_block_ptr(&t) && !(block_ok && i == 0))
            return tji_fail(TJ_ERR_TYPE, "operand %d is a block pointer (%s): only tj_load, "
                            "tj_store, tj_advance, TJ_FOR and TJ_IF take one", i + 1,
                            tji_type_text(&t));
    }
    return 1;
}

int tji_enter(tj_loc loc, const char *name, int n, const tj_val *args)
{
    return enter(loc, name, n, args, 0);
}

int tji_enter_block(tj_loc loc, const char *name, int n, const tj_val *args)
{
    return enter(loc, name, n, args, 1);
}

/* --- emitting ops ---------------------------------------------------------- */

/* Appends an op with its operands and results to region; returns its index. */
int32_t tji_emit_op(tji_opcode code, int32_t region, const int32_t *args, int nargs,
                    int nresults, const tji_type *rtypes)
{
    tji_func *fn = B.fn;
    int32_t idx = tji_new_op(fn, code, region, (tji_loc){B.loc.file, B.loc.line});
    tji_set_operands(fn, idx, args, nargs);
    for (int i = 0; i < nargs; i++)
        if (args[i] > 0 && fn->values[args[i]].weak)
            B.lits[args[i]].used = 1;
    tji_new_results(fn, idx, rtypes, nresults);
    if (region == B.region)
        B.else_ready = 0;
    return idx;
}

/* An op of one result in the current region; returns the result. */
int32_t tji_emit(tji_opcode code, const int32_t *args, int nargs, tji_type rt)
{
    int32_t op = tji_emit_op(code, B.region, args, nargs, 1, &rt);
    return B.fn->ops[op].result;
}

/* --- building a kernel ----------------------------------------------------- */

static tj_status check_kernel(const tj_kernel *k, const int64_t *consts, int nconsts)
{
    if (!k)
        return tjs_error(TJ_ERR_INVALID_ARG, "kernel is NULL");
    const char *name = k->name ? k->name : "?";
    if (!k->name || !k->build || k->nparams < 0 || k->nconsts < 0 ||
        (k->nparams && !k->params) || (k->nconsts && !k->consts))
        return tjs_error(TJ_ERR_INVALID_ARG, "kernel '%s' is not a kernel made by TJ_KERNEL",
                         name);
    if (k->abi != TJ_KERNEL_ABI)
        return tjs_error(TJ_ERR_INVALID_ARG,
                         "kernel '%s' was compiled against a tjit.h of kernel ABI %d; this libtjit "
                         "(%s) builds ABI %d (rebuild the program against its tjit.h)",
                         name, k->abi, tj_version(), TJ_KERNEL_ABI);
    if (nconsts != k->nconsts)
        return tjs_error(TJ_ERR_INVALID_ARG, "kernel '%s' takes %d constants, got %d", name,
                         k->nconsts, nconsts);
    if (nconsts && !consts)
        return tjs_error(TJ_ERR_INVALID_ARG, "kernel '%s': the constants are NULL", name);
    for (int i = 0; i < k->nparams; i++)
        if (!dtype_ok(k->params[i].dtype))
            return tjs_error(TJ_ERR_INVALID_ARG, "kernel '%s': parameter %d has dtype %d",
                             name, i + 1, (int)k->params[i].dtype);
    if (B.fn)
        return tjs_error(TJ_ERR_BUILD, "kernel '%s' cannot be built while kernel '%s' is "
                         "being built on the same thread", name, B.fn->name);
    return TJ_OK;
}

static tji_func *new_func(const tj_kernel *k, const int64_t *consts)
{
    tji_func *fn = tji_new_func(k->name);
    tjs_arena *arena = fn->arena;
    fn->nparams = k->nparams;
    fn->params = tjs_arena_alloc(arena, sizeof *fn->params * (size_t)k->nparams);
    fn->nconsts = k->nconsts;
    const char **names = tjs_arena_alloc(arena, sizeof *names * (size_t)k->nconsts);
    fn->const_values = tjs_arena_alloc(arena, sizeof(int64_t) * (size_t)k->nconsts);
    for (int i = 0; i < k->nconsts; i++) {
        names[i] = tjs_arena_strdup(arena, k->consts[i] ? k->consts[i] : "?");
        fn->const_values[i] = consts[i];
    }
    fn->const_names = names;
    tji_type *types = tjs_arena_alloc(arena, sizeof *types * (size_t)k->nparams);
    for (int i = 0; i < k->nparams; i++)
        types[i] = (tji_type){.dtype = k->params[i].dtype, .is_ptr = k->params[i].is_ptr != 0};
    int32_t body = 0;
    tji_set_block_args(fn, body, types, k->nparams);
    for (int i = 0; i < k->nparams; i++)
        fn->params[i] = (tji_param){
            .name = tjs_arena_strdup(arena, k->params[i].name ? k->params[i].name : "?"),
            .is_ptr = k->params[i].is_ptr != 0,
            .dtype = k->params[i].dtype,
            .value = fn->regions[body].args[i],
        };
    return fn;
}

static void reset_builder(void)
{
    free(B.scopes);
    free(B.lits);
    memset(&B, 0, sizeof B);
}

tj_status tji_refuse_nested_launch(const tj_kernel *kernel)
{
    if (!B.fn)
        return TJ_OK;
    char msg[sizeof B.message];
    snprintf(msg, sizeof msg,
             "error: kernel '%s' launched from the body of kernel '%s' (%s:%d) while that body "
             "builds its tile program; a kernel body cannot launch or build kernels (launch "
             "from host code)",
             kernel->name ? kernel->name : "?", B.fn->name, tji_loc_file((tj_loc){B.kernel->file, 0}),
             B.kernel->line);
    if (B.status == TJ_OK) {
        B.status = TJ_ERR_LAUNCH;
        snprintf(B.message, sizeof B.message, "%s", msg);
    }
    return tjs_error(TJ_ERR_LAUNCH, "%s", msg);
}

tj_status tji_build(const tj_kernel *kernel, const int64_t *consts, int nconsts, tji_func **out)
{
    if (!out)
        return tjs_error(TJ_ERR_INVALID_ARG, "tji_build: out is NULL");
    *out = NULL;
    if (B.fn) /* tj_kernel_ir and the like from a kernel body */
        return tji_refuse_nested_launch(kernel);
    tj_status st = check_kernel(kernel, consts, nconsts);
    if (st != TJ_OK)
        return st;
    tji_func *fn = new_func(kernel, consts);
    reset_builder(); /* drops placeholder regions left open outside a build */
    tji_build_serial = atomic_fetch_add(&build_counter, 1) % HANDLE_SERIALS + 1;
    B.fn = fn;
    B.kernel = kernel;
    B.loc = (tj_loc){kernel->file, kernel->line};
    B.opname = "kernel";

    tj_val none = {0};
    tj_val *params = kernel->nparams ? tjs_xmalloc(sizeof *params * (size_t)kernel->nparams)
                                     : &none;
    for (int i = 0; i < kernel->nparams; i++)
        params[i] = val(fn->params[i].value);
    kernel->build(params, consts);
    if (params != &none)
        free(params);

    if (B.status == TJ_OK && B.depth > 0) {
        scope *s = &B.scopes[B.depth - 1];
        B.loc = s->loc;
        B.opname = tji_scope_name(s->kind);
        tji_fail(TJ_ERR_BUILD, "region opened at %s:%d was not closed (break/return/goto out of "
                 "a TJ_FOR, TJ_IF or TJ_WHILE body?)", tji_loc_file(s->loc), s->loc.line);
    }
    st = B.status;
    if (st != TJ_OK)
        tjs_error(st, "%s", B.message);
    reset_builder();
    if (st == TJ_OK)
        st = tji_verify(fn);
    if (st != TJ_OK) {
        tji_func_free(fn);
        return st;
    }
    if (tjs_dump_enabled("ir")) {
        char *text = tji_print(fn);
        fprintf(stderr, "// TJIT_DUMP=ir: kernel '%s' (%s:%d)", fn->name,
                kernel->file ? kernel->file : "?", kernel->line);
        for (int i = 0; i < fn->nconsts; i++)
            fprintf(stderr, "%s%s=%lld", i ? ", " : " with ", fn->const_names[i],
                    (long long)fn->const_values[i]);
        fprintf(stderr, "\n%s", text);
        free(text);
    }
    *out = fn;
    return TJ_OK;
}

tj_status tj_kernel_ir(const tj_kernel *kernel, const int64_t *consts, int nconsts,
                       char **out_text)
{
    if (!out_text)
        return tjs_error(TJ_ERR_INVALID_ARG, "tj_kernel_ir: out_text is NULL");
    *out_text = NULL;
    tji_func *fn;
    tj_status st = tji_build(kernel, consts, nconsts, &fn);
    if (st != TJ_OK)
        return st;
    *out_text = tji_print(fn);
    tji_func_free(fn);
    return TJ_OK;
}
