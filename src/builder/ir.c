/* SPDX-License-Identifier: MIT */
/*
 * ir.c — the IR core: making and changing a tile program, and the facts
 * every stage asks of one.
 *
 * Everything that holds a tji_func — the builder, the verifier, the
 * printer, the passes, the back ends — shares this file and nothing above
 * it: it includes ir.h and the support layer only. So the builder may call
 * the verifier and the printer (for TJIT_DUMP=ir), and none of those calls
 * back into the builder.
 *
 * A function owns one arena. Its arrays (values, ops, a region's op list)
 * grow geometrically inside that arena; an outgrown block is not freed, so
 * a pointer taken before a growth still reads the old contents, but writes
 * through it are lost: take a tji_op * after the last call that adds ops.
 *
 * The rewrite API is what passes need to change a program in place: insert
 * an op (new, or a copy of an existing one) at a position of a region, set
 * or rename its operands, give it results or move a value's definition to
 * it, and take ops out of a region. Each call keeps the bookkeeping the
 * verifier checks (an op's parent, a value's defining op) consistent, so a
 * pass states what it changes, not how the arrays are laid out.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

/* --- types and opcodes ------------------------------------------------------ */

int64_t tji_numel(const tji_type *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->rank && i < TJ_MAX_RANK; i++)
        n *= t->shape[i];
    return n;
}

int tji_same_shape(const tji_type *a, const tji_type *b)
{
    if (a->rank != b->rank)
        return 0;
    for (int i = 0; i < a->rank; i++)
        if (a->shape[i] != b->shape[i])
            return 0;
    return 1;
}

int tji_type_equal(const tji_type *a, const tji_type *b)
{
    return a->dtype == b->dtype && a->is_ptr == b->is_ptr && tji_same_shape(a, b);
}

const char *tji_opcode_name(tji_opcode code)
{
    static const char *const names[TJI_OPCODE_COUNT] = {
        [TJI_CONST] = "const", [TJI_PROGRAM_ID] = "program_id",
        [TJI_NUM_PROGRAMS] = "num_programs", [TJI_ARANGE] = "arange",
        [TJI_SPLAT] = "splat", [TJI_BROADCAST] = "broadcast",
        [TJI_EXPAND_DIMS] = "expand_dims", [TJI_RESHAPE] = "reshape",
        [TJI_PERMUTE] = "permute", [TJI_ADD] = "add", [TJI_SUB] = "sub",
        [TJI_MUL] = "mul", [TJI_DIV] = "div", [TJI_IDIV] = "idiv", [TJI_REM] = "rem",
        [TJI_AND] = "and", [TJI_OR] = "or", [TJI_XOR] = "xor", [TJI_SHL] = "shl",
        [TJI_SHR] = "shr", [TJI_MIN] = "min", [TJI_MAX] = "max", [TJI_CMP] = "cmp",
        [TJI_ADDPTR] = "addptr", [TJI_NEG] = "neg", [TJI_NOT] = "not",
        [TJI_ABS] = "abs", [TJI_POPC] = "popc", [TJI_CLZ] = "clz", [TJI_BREV] = "brev",
        [TJI_EXP] = "exp", [TJI_EXP2] = "exp2", [TJI_LOG] = "log",
        [TJI_LOG2] = "log2", [TJI_SQRT] = "sqrt", [TJI_RSQRT] = "rsqrt",
        [TJI_SIGMOID] = "sigmoid", [TJI_FLOOR] = "floor", [TJI_CEIL] = "ceil",
        [TJI_SIN] = "sin", [TJI_COS] = "cos", [TJI_TANH] = "tanh", [TJI_ERF] = "erf", [TJI_POW] = "pow",
        [TJI_ATAN2] = "atan2", [TJI_HYPOT] = "hypot", [TJI_TAN] = "tan", [TJI_ASIN] = "asin",
        [TJI_ACOS] = "acos", [TJI_ATAN] = "atan", [TJI_SINH] = "sinh", [TJI_COSH] = "cosh",
        [TJI_ASINH] = "asinh", [TJI_ACOSH] = "acosh", [TJI_ATANH] = "atanh", [TJI_LOG10] = "log10",
        [TJI_CBRT] = "cbrt", [TJI_EXP10] = "exp10", [TJI_ERFC] = "erfc",
        [TJI_LGAMMA] = "lgamma",
        [TJI_LOG1P] = "log1p", [TJI_EXPM1] = "expm1", [TJI_RINT] = "rint", [TJI_TRUNC] = "trunc",
        [TJI_ROUND] = "round", [TJI_INLINE_ASM] = "inline_asm",
        [TJI_FMA] = "fma", [TJI_WHERE] = "where", [TJI_BITCAST] = "bitcast", [TJI_CAST] = "cast",
        [TJI_LOAD] = "load", [TJI_STORE] = "store", [TJI_ATOMIC] = "atomic",
        [TJI_ATOMIC_CAS] = "atomic_cas", [TJI_REDUCE] = "reduce",
        [TJI_CUMSUM] = "cumsum", [TJI_FOR] = "for", [TJI_IF] = "if",
        [TJI_YIELD] = "yield", [TJI_WHILE] = "while", [TJI_CONDITION] = "condition",
        [TJI_BARRIER] = "barrier", [TJI_CONVERT] = "convert_layout", [TJI_ASSUME] = "assume", [TJI_PRINT] = "print", [TJI_ASSERT] = "assert",
        [TJI_ASSUME_TRUE] = "assume_true",
        [TJI_DOT] = "dot",
        [TJI_MAKE_BLOCK_PTR] = "make_block_ptr", [TJI_ADVANCE] = "advance",
        [TJI_ASYNC_COPY] = "async_copy",
        [TJI_ASYNC_COMMIT] = "async_commit", [TJI_ASYNC_WAIT] = "async_wait",
        [TJI_LOCAL_LOAD] = "local_load", [TJI_LOGICAL_PROGRAMS] = "logical_programs",
        [TJI_STREAM_K_ARRIVE] = "stream_k_arrive", [TJI_STREAM_K_ADD] = "stream_k_add",
    };
    return (unsigned)code < TJI_OPCODE_COUNT && names[code] ? names[code] : "?";
}

/* The bits of a register of constraint letter c (0: no such letter). */
int tji_asm_letter_bits(char c)
{
    switch (c) {
    case 'h': return 16;
    case 'r': case 'f': return 32;
    case 'l': case 'd': return 64;
    default: return 0;
    }
}

/* How many registers of letter c hold pack elements of dt (0: they do not
 * fill whole registers, or one element would span two; f and d hold only
 * f32 and f64, one at a time). */
static int asm_registers(char c, tj_dtype dt, int pack)
{
    int bits = tjs_dtype_bits(dt) * pack, w = tji_asm_letter_bits(c);
    if (!w || dt == TJ_I1 || bits % w || tjs_dtype_bits(dt) > w || (c == 'f' && (dt != TJ_F32 || pack != 1)) ||
        (c == 'd' && (dt != TJ_F64 || pack != 1)))
        return 0;
    return bits / w;
}

const char *tji_asm_constraints_wrong(const char *constraints, tj_dtype out, const tj_dtype *in, int n, int pack)
{
    if (!constraints || constraints[0] != '=' || !constraints[1])
        return "the constraints must start with the output's, \"=r\" or the like";
    enum { MAX_REGISTERS = 64 };
    char letter[MAX_REGISTERS];
    int is_output[MAX_REGISTERS], nregs = 0;
    for (const char *p = constraints;; p++) { /* "=X" per output register, then "X" per input's */
        int o = *p == '=';
        p += o;
        if (!*p || *p == ',' || (p[1] && p[1] != ',') || nregs == MAX_REGISTERS)
            return "each constraint is one letter (with \"=\" before an output's), at most 64 of them";
        letter[nregs] = *p, is_output[nregs++] = o;
        if (!*++p)
            break;
    }
    int at = 0;
    for (int k = 0; k <= n; k++) { /* k = 0: the output; k: input k */
        tj_dtype dt = k ? in[k - 1] : out;
        if (at == nregs)
            return "the constraints name fewer inputs than there are arguments";
        if (is_output[at] != (k == 0))
            return k ? "the constraints name more outputs than the output's pack needs"
                     : "the output's pack needs more outputs (\"=r,=r,...\") than the constraints name";
        int regs = asm_registers(letter[at], dt, pack);
        if (!regs && pack == 1)
            return k ? "an input's constraint letter does not fit its argument's dtype (h: 16 bits, r: 32, "
                       "l: 64, f: f32, d: f64; cast 8-bit values and i1 first, or pack them)"
                     : "the output's constraint letter does not fit the result dtype (h: 16 bits, r: 32, l: 64, "
                       "f: f32, d: f64)";
        if (!regs)
            return "an operand's pack of elements does not fill whole registers of its letter (pack times "
                   "the dtype's bits must be a multiple of h: 16, r: 32 or l: 64; i1 is not packed)";
        for (int r = 1; r < regs; r++)
            if (at + r == nregs || is_output[at + r] != (k == 0) || letter[at + r] != letter[at])
                return k ? "an input's pack needs more registers of its letter than the constraints name"
                         : "the output's pack needs more outputs (\"=r,=r,...\") than the constraints name";
        at += regs;
    }
    return at < nregs ? "the constraints name more inputs than there are arguments" : NULL;
}

/* SPLAT (each element is the scalar) and the ops from ADD to CAST but the
 * pointer-free shape ops: result element i depends on operand elements i. */
int tji_is_elementwise(tji_opcode code)
{
    return code == TJI_SPLAT || (code >= TJI_ADD && code <= TJI_ADDPTR) ||
           (code >= TJI_NEG && code <= TJI_CAST);
}

int tji_is_pure_elementwise(const tji_op *op)
{
    return tji_is_elementwise(op->code) && !(op->code == TJI_INLINE_ASM && op->is_volatile);
}

int tji_results_scalar(const tji_func *fn, const tji_op *op)
{
    for (int r = 0; r < op->nresults; r++)
        if (tji_typeof(fn, op->result + r)->rank)
            return 0;
    return 1;
}

int tji_writes_memory(const tji_op *op)
{
    return op->code == TJI_STORE || op->code == TJI_ATOMIC || op->code == TJI_ATOMIC_CAS ||
           (op->code == TJI_INLINE_ASM && op->is_volatile);
}

tj_status tji_verror_at(const tji_func *fn, int32_t op, tj_status status, const char *fmt,
                        va_list ap)
{
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (op < 0)
        return tjs_error(status, "error: in kernel '%s': %s", fn->name, msg);
    const tji_op *o = &fn->ops[op];
    return tjs_error(status, "%s:%d: error: in kernel '%s', op '%s': %s",
                     o->loc.file ? o->loc.file : "?", o->loc.line, fn->name,
                     tji_opcode_name(o->code), msg);
}

tj_status tji_error_at(const tji_func *fn, int32_t op, tj_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tj_status st = tji_verror_at(fn, op, status, fmt, ap);
    va_end(ap);
    return st;
}

/* --- structure ---------------------------------------------------------------- */

int32_t tji_value_region(const tji_func *fn, int32_t id)
{
    const tji_value *v = &fn->values[id];
    return v->def_op < 0 ? v->def_region : fn->ops[v->def_op].parent;
}

int tji_region_within(const tji_func *fn, int32_t inner, int32_t outer)
{
    for (int32_t r = inner; r >= 0;) {
        if (r == outer)
            return 1;
        int32_t op = fn->regions[r].parent_op;
        r = op < 0 ? -1 : fn->ops[op].parent;
    }
    return 0;
}

/* --- making a program ----------------------------------------------------------- */

/* Grows an arena array to hold need elements. The old block stays in the
 * arena; growth is geometric, so the waste is at most the final size. */
static void *grow(tjs_arena *a, void *old, int32_t *cap, int32_t need, size_t size)
{
    if (need <= *cap)
        return old;
    int32_t n = *cap ? *cap : 8;
    while (n < need)
        n *= 2;
    void *p = tjs_arena_alloc(a, (size_t)n * size);
    if (old)
        memcpy(p, old, (size_t)*cap * size);
    *cap = n;
    return p;
}

tji_func *tji_new_func(const char *name)
{
    tjs_arena *arena = tjs_arena_new();
    tji_func *fn = tjs_arena_alloc(arena, sizeof *fn);
    fn->arena = arena;
    fn->name = tjs_arena_strdup(arena, name);
    tji_new_region(fn, -1);
    return fn;
}

void tji_func_free(tji_func *fn)
{
    if (fn)
        tjs_arena_free(fn->arena); /* fn lives in its own arena */
}

int32_t tji_new_value(tji_func *fn, tji_type type, int32_t def_op)
{
    fn->values = grow(fn->arena, fn->values, &fn->values_cap, fn->nvalues + 2,
                      sizeof *fn->values);
    int32_t id = ++fn->nvalues;
    fn->values[id] = (tji_value){.type = type, .def_op = def_op, .def_region = -1};
    return id;
}

void tji_value_at(tji_func *fn, int32_t id, tji_type type, int32_t def_op, int32_t def_region)
{
    fn->values = grow(fn->arena, fn->values, &fn->values_cap, id + 1, sizeof *fn->values);
    fn->values[id] = (tji_value){.type = type, .def_op = def_op, .def_region = def_region};
    if (id > fn->nvalues)
        fn->nvalues = id;
}

void tji_append_op(tji_func *fn, int32_t region, int32_t op)
{
    tji_region *r = &fn->regions[region];
    r->ops = grow(fn->arena, r->ops, &r->cap, r->nops + 1, sizeof *r->ops);
    r->ops[r->nops++] = op;
    fn->ops[op].parent = region;
}

int32_t tji_new_op(tji_func *fn, tji_opcode code, int32_t parent, tji_loc loc)
{
    fn->ops = grow(fn->arena, fn->ops, &fn->ops_cap, fn->nops + 1, sizeof *fn->ops);
    int32_t idx = fn->nops++;
    fn->ops[idx] = (tji_op){.code = code, .region = {-1, -1}, .parent = parent, .loc = loc};
    if (parent >= 0)
        tji_append_op(fn, parent, idx);
    return idx;
}

int32_t tji_new_region(tji_func *fn, int32_t parent_op)
{
    fn->regions = grow(fn->arena, fn->regions, &fn->regions_cap, fn->nregions + 1,
                       sizeof *fn->regions);
    int32_t idx = fn->nregions++;
    fn->regions[idx] = (tji_region){.parent_op = parent_op};
    if (parent_op >= 0) {
        tji_op *op = &fn->ops[parent_op];
        if (op->region[0] < 0)
            op->region[0] = idx;
        else if (op->region[1] < 0)
            op->region[1] = idx;
    }
    return idx;
}

void tji_set_block_args(tji_func *fn, int32_t region, const tji_type *types, int n)
{
    int32_t *args = tjs_arena_alloc(fn->arena, sizeof(int32_t) * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) {
        args[i] = tji_new_value(fn, types[i], -1);
        fn->values[args[i]].def_region = region;
    }
    fn->regions[region].args = args;
    fn->regions[region].nargs = n;
}

void tji_set_operands(tji_func *fn, int32_t op, const int32_t *args, int nargs)
{
    int32_t *copy = NULL;
    if (nargs) {
        copy = tjs_arena_alloc(fn->arena, sizeof(int32_t) * (size_t)nargs);
        memcpy(copy, args, sizeof(int32_t) * (size_t)nargs);
    }
    fn->ops[op].args = copy;
    fn->ops[op].nargs = nargs;
}

int32_t tji_new_results(tji_func *fn, int32_t op, const tji_type *types, int n)
{
    int32_t first = 0;
    for (int i = 0; i < n; i++) {
        int32_t v = tji_new_value(fn, types[i], op);
        if (i == 0)
            first = v;
    }
    fn->ops[op].result = first;
    fn->ops[op].nresults = n;
    return first;
}

/* --- rewriting a program ----------------------------------------------------------- */

int32_t tji_insert_op(tji_func *fn, tji_opcode code, int32_t region, int pos, tji_loc loc)
{
    int32_t idx = tji_new_op(fn, code, region, loc);
    tji_region *r = &fn->regions[region];
    memmove(r->ops + pos + 1, r->ops + pos, sizeof(int32_t) * (size_t)(r->nops - 1 - pos));
    r->ops[pos] = idx;
    return idx;
}

int32_t tji_insert_clone(tji_func *fn, const tji_op *orig, int32_t region, int pos,
                         const int32_t *args)
{
    tji_op copy = *orig; /* orig may live in fn->ops, which the insertion may move */
    int32_t idx = tji_insert_op(fn, copy.code, region, pos, copy.loc);
    tji_op *op = &fn->ops[idx];
    copy.region[0] = copy.region[1] = -1;
    copy.parent = op->parent;
    copy.result = 0;
    copy.nresults = 0;
    *op = copy;
    tji_set_operands(fn, idx, args, copy.nargs);
    return idx;
}

void tji_set_operand(tji_func *fn, int32_t op, int k, int32_t value)
{
    fn->ops[op].args[k] = value;
}

void tji_rename_operands(tji_func *fn, int32_t op, const int32_t *rename)
{
    tji_op *o = &fn->ops[op];
    for (int k = 0; k < o->nargs; k++)
        if (o->args[k] > 0 && rename[o->args[k]])
            o->args[k] = rename[o->args[k]];
}

void tji_set_type(tji_func *fn, int32_t value, tji_type type)
{
    fn->values[value].type = type;
}

void tji_set_result(tji_func *fn, int32_t op, int32_t value)
{
    fn->ops[op].result = value;
    fn->ops[op].nresults = 1;
    fn->values[value].def_op = op;
}

void tji_append_operand(tji_func *fn, int32_t op, int32_t value)
{
    int nargs = fn->ops[op].nargs;
    int32_t *args = tjs_arena_alloc(fn->arena, sizeof(int32_t) * (size_t)(nargs + 1));
    if (nargs)
        memcpy(args, fn->ops[op].args, sizeof(int32_t) * (size_t)nargs);
    args[nargs] = value;
    fn->ops[op].args = args;
    fn->ops[op].nargs = nargs + 1;
}

int32_t tji_add_carried(tji_func *fn, int32_t op, int32_t init)
{
    tji_type type = *tji_typeof(fn, init);
    int32_t body = fn->ops[op].region[0];
    /* the block argument */
    const tji_region *r = &fn->regions[body];
    int32_t *args = tjs_arena_alloc(fn->arena, sizeof(int32_t) * (size_t)(r->nargs + 1));
    memcpy(args, r->args, sizeof(int32_t) * (size_t)r->nargs);
    int32_t arg = tji_new_value(fn, type, -1);
    fn->values[arg].def_region = body;
    args[fn->regions[body].nargs] = arg;
    fn->regions[body].args = args;
    fn->regions[body].nargs++;
    tji_append_operand(fn, op, init);
    /* the results, at fresh ids */
    int n = fn->ops[op].nresults;
    int32_t old = fn->ops[op].result;
    tji_type *types = tjs_xcalloc((size_t)n + 1, sizeof *types);
    for (int k = 0; k < n; k++)
        types[k] = *tji_typeof(fn, old + k);
    types[n] = type;
    int32_t fresh = tji_new_results(fn, op, types, n + 1);
    free(types);
    if (n) {
        int32_t *rename = tjs_xcalloc((size_t)fn->nvalues + 1, sizeof *rename);
        for (int k = 0; k < n; k++)
            rename[old + k] = fresh + k;
        for (int32_t i = 0; i < fn->nops; i++)
            tji_rename_operands(fn, i, rename);
        free(rename);
        for (int k = 0; k < n; k++)
            tji_retire_value(fn, old + k);
    }
    return arg;
}

void tji_detach_op(tji_func *fn, int32_t op)
{
    fn->ops[op].parent = -1;
}

void tji_drop_detached(tji_func *fn, int32_t region)
{
    tji_region *r = &fn->regions[region];
    int32_t keep = 0;
    for (int32_t i = 0; i < r->nops; i++)
        if (fn->ops[r->ops[i]].parent == region)
            r->ops[keep++] = r->ops[i];
    r->nops = keep;
}

void tji_retire_value(tji_func *fn, int32_t id)
{
    fn->values[id].type = (tji_type){.dtype = TJ_I1};
}
