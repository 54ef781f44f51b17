/* SPDX-License-Identifier: MIT */
/*
 * builder.c — the builder behind the kernel language: each call made by a
 * TJ_KERNEL body appends typed ops to the tile program being built.
 *
 * tji_build() makes an empty function whose body region has one block
 * argument per kernel parameter, stores it as this thread's "current
 * function" and runs the kernel's build callback. The public tj__* functions
 * (called by the macros of tjit.h) append to it. Because the state is
 * thread-local, kernels can be built on several threads at once, and the
 * macros need no hidden context argument.
 *
 * Every op makes its operands agree before it enters the IR, as ir.h
 * promises: dtypes meet by Triton's promotion rules (explicit CASTs),
 * shapes meet by numpy's broadcasting rule (explicit SPLAT, EXPAND_DIMS and
 * BROADCAST). C numbers arrive as weak literals: a CONST value that yields
 * its dtype to the other operand, so `x + 1` keeps the dtype of x. A literal
 * that no op has read yet is retyped in place; one already read is copied
 * into a new CONST of the wanted dtype (never a CAST, so `x + 1` on f16 is
 * exact). A side table (lits) remembers each literal's C value and kind
 * (integer, unsigned above INT64_MAX, or floating) while the program is built.
 *
 * Errors: the first error wins. A failing op records its status and a message
 * "FILE:LINE: error: in kernel 'K', op 'OP': ..." and returns the empty value
 * {0}; every later op sees the recorded error (or its empty operand) and
 * returns {0} quietly, so the body runs to its end without a crash and
 * without a cascade of messages. tji_build then hands the first message to
 * tjs_error.
 *
 * Runtime control flow: TJ_FOR / TJ_IF / TJ_ELSE are C for-statements whose
 * condition is tj__region_next(): the first call after a begin lets the body
 * run once (at build time), the second closes the region. Open regions form
 * a stack (scopes). Carried variables are the user's own tj_val variables,
 * named by address: a region's begin points them at the block arguments (FOR)
 * or leaves them (IF), and its close yields their current values and points
 * them at the op's results, which turns C assignment into SSA. TJ_ELSE is
 * accepted right after a TJ_IF closed, with no op in between: it reopens the
 * IF's else region, whose provisional YIELD (the values from before the IF)
 * is taken out and re-appended with the else body's values at its close.
 * Regions opened in an error state (or outside a build) are placeholders that
 * only keep the C loops' "run once, then close" rhythm.
 *
 * A value may only be used in the region that defines it or in regions nested
 * inside that one; anything else is a value escaping a TJ_FOR/TJ_IF body and
 * is reported at the op that uses it.
 */
#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

#define NONE ((tj_val){0})
/* The largest tile, in elements; it keeps every size and index in i32. */
#define MAX_NUMEL ((int64_t)1 << 24)

/* What a weak literal was in C. */
enum { LIT_INT = 1, LIT_UINT, LIT_FLOAT };

typedef struct literal {
    uint8_t kind;  /* LIT_*: integer, unsigned above INT64_MAX, floating */
    uint8_t used;  /* an op reads it: retyping must make a copy */
    int64_t ival;
    double fval;
} literal;

typedef enum scope_kind { SCOPE_FOR, SCOPE_THEN, SCOPE_ELSE } scope_kind;

/* An open TJ_FOR / TJ_IF / TJ_ELSE body. */
typedef struct scope {
    scope_kind kind;
    int entered;        /* tj__region_next() has let the body run */
    int32_t op;         /* the FOR or IF op; -1 for a placeholder */
    int32_t region;     /* the body */
    int32_t outer;      /* the region to return to */
    int32_t yield_op;   /* IF: the provisional YIELD of the else region */
    tj_loc loc;
    int nvars;
    tj_val **vars;      /* the user's carried variables (copied pointers) */
    int32_t *before;    /* IF: the carried values before the IF */
} scope;

typedef struct builder {
    tji_func *fn;       /* NULL: no kernel is being built on this thread */
    const tj_kernel *kernel;
    tj_status status;   /* the first error */
    char message[2048];
    tj_loc loc;         /* the op being built, for its message and its ops */
    const char *opname;
    int32_t region;     /* where new ops go */
    scope *scopes;
    int depth, scopes_cap;
    literal *lits;      /* per value id, for weak values */
    int32_t lits_cap;
    int else_ready;     /* last_if may take a TJ_ELSE */
    scope last_if;
    char type_text[4][64];
    int type_next;
} builder;

static _Thread_local builder B;

/* --- small facts ---------------------------------------------------------- */

/* A handle given to the user is the value's id (bits 0..22) plus the
 * serial number of the build (bits 23..62, never 0). So a C number placed
 * where a value belongs (`.other = 5` instead of `.other = TJ_V(5)`) and a
 * value kept from another build are reported, not taken for some value of
 * this one. Serials come from one process-wide counter, so builds on other
 * threads differ too, and they wrap only after 2^40 - 1 builds (an 8-bit
 * serial let a value kept from 255 builds earlier pass as live). */
#define HANDLE_ID_BITS 23
#define HANDLE_MAX_ID ((1 << HANDLE_ID_BITS) - 1)
#define HANDLE_SERIALS ((UINT64_C(1) << 40) - 1)
static atomic_uint_fast64_t build_counter;
static _Thread_local uint64_t build_serial;
static tj_val val(int32_t id)
{
    return (tj_val){id ? (int64_t)(build_serial << HANDLE_ID_BITS | (uint64_t)id) : 0};
}
/* -1 for a handle that is not of this build: check_value rejects it. */
static int32_t vid(tj_val v)
{
    if (!v.id)
        return 0;
    if ((uint64_t)v.id >> HANDLE_ID_BITS != build_serial)
        return -1;
    return (int32_t)(v.id & HANDLE_MAX_ID);
}
static int dtype_ok(tj_dtype dt) { return (unsigned)dt < TJ_DTYPE_COUNT; }
static int is_pow2(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }
static int is_float(tj_dtype dt) { return tjs_dtype_is_float(dt); }
static int is_unsigned(tj_dtype dt) { return tjs_dtype_is_int(dt) && !tjs_dtype_is_signed(dt); }

int64_t tji_numel(const tji_type *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->rank && i < TJ_MAX_RANK; i++)
        n *= t->shape[i];
    return n;
}

static int same_shape(const tji_type *a, const tji_type *b)
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
    return a->dtype == b->dtype && a->is_ptr == b->is_ptr && same_shape(a, b);
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
        [TJI_ABS] = "abs", [TJI_EXP] = "exp", [TJI_EXP2] = "exp2", [TJI_LOG] = "log",
        [TJI_LOG2] = "log2", [TJI_SQRT] = "sqrt", [TJI_RSQRT] = "rsqrt",
        [TJI_SIGMOID] = "sigmoid", [TJI_FLOOR] = "floor", [TJI_CEIL] = "ceil",
        [TJI_SIN] = "sin", [TJI_COS] = "cos", [TJI_TANH] = "tanh", [TJI_ERF] = "erf", [TJI_POW] = "pow",
        [TJI_FMA] = "fma", [TJI_WHERE] = "where", [TJI_CAST] = "cast",
        [TJI_LOAD] = "load", [TJI_STORE] = "store", [TJI_ATOMIC] = "atomic",
        [TJI_ATOMIC_CAS] = "atomic_cas", [TJI_REDUCE] = "reduce",
        [TJI_CUMSUM] = "cumsum", [TJI_FOR] = "for", [TJI_IF] = "if",
        [TJI_YIELD] = "yield", [TJI_CONVERT] = "convert_layout", [TJI_ASSUME] = "assume", [TJI_PRINT] = "print", [TJI_ASSERT] = "assert",
    };
    return (unsigned)code < TJI_OPCODE_COUNT && names[code] ? names[code] : "?";
}

/* SPLAT (each element is the scalar) and the ops from ADD to CAST but the
 * pointer-free shape ops: result element i depends on operand elements i. */
int tji_is_elementwise(tji_opcode code)
{
    return code == TJI_SPLAT || (code >= TJI_ADD && code <= TJI_ADDPTR) ||
           (code >= TJI_NEG && code <= TJI_CAST);
}

/* --- IR mutation ---------------------------------------------------------- */

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

int32_t tji_new_value(tji_func *fn, tji_type type, int32_t def_op)
{
    fn->values = grow(fn->arena, fn->values, &fn->values_cap, fn->nvalues + 2,
                      sizeof *fn->values);
    int32_t id = ++fn->nvalues;
    fn->values[id] = (tji_value){.type = type, .def_op = def_op, .def_region = -1};
    return id;
}

static void region_append(tji_func *fn, int32_t region, int32_t op)
{
    tji_region *r = &fn->regions[region];
    r->ops = grow(fn->arena, r->ops, &r->cap, r->nops + 1, sizeof *r->ops);
    r->ops[r->nops++] = op;
}

/* Appends the op at the end of region parent (parent -1: placed nowhere). */
int32_t tji_new_op(tji_func *fn, tji_opcode code, int32_t parent, tji_loc loc)
{
    fn->ops = grow(fn->arena, fn->ops, &fn->ops_cap, fn->nops + 1, sizeof *fn->ops);
    int32_t idx = fn->nops++;
    fn->ops[idx] = (tji_op){.code = code, .region = {-1, -1}, .parent = parent, .loc = loc};
    if (parent >= 0)
        region_append(fn, parent, idx);
    return idx;
}

/* A region of parent_op, put in the op's first free region slot. */
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

/* Block arguments of a region, one per type. */
static void set_block_args(tji_func *fn, int32_t region, const tji_type *types, int n)
{
    int32_t *args = tjs_arena_alloc(fn->arena, sizeof(int32_t) * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) {
        args[i] = tji_new_value(fn, types[i], -1);
        fn->values[args[i]].def_region = region;
    }
    fn->regions[region].args = args;
    fn->regions[region].nargs = n;
}

void tji_func_free(tji_func *fn)
{
    if (fn)
        tjs_arena_free(fn->arena); /* fn lives in its own arena */
}

/* --- errors ---------------------------------------------------------------- */

static const char *loc_file(tj_loc loc) { return loc.file ? loc.file : "?"; }

/* Records the first error of the build; returns 0 for "no value". */
static int32_t fail(tj_status status, const char *fmt, ...) TJS_PRINTF(2, 3);
static int32_t fail(tj_status status, const char *fmt, ...)
{
    if (B.status != TJ_OK)
        return 0;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(B.message, sizeof B.message, "%s:%d: error: in kernel '%s', op '%s': %s",
             loc_file(B.loc), B.loc.line, B.fn->name, B.opname, msg);
    B.status = status;
    return 0;
}

/* A type as text for a message ("*f32[64]"); four stay valid at a time. */
static const char *tstr(const tji_type *t)
{
    tjs_buf b = {0};
    tji_print_type(&b, t);
    char *out = B.type_text[B.type_next++ & 3];
    snprintf(out, sizeof B.type_text[0], "%s", b.data ? b.data : "");
    tjs_buf_free(&b);
    return out;
}

/* A shape as text ("[64x32]", "[]" for a scalar). */
static const char *shape_str(int rank, const int64_t *dims)
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

static const char *tshape(const tji_type *t)
{
    int64_t dims[TJ_MAX_RANK] = {0};
    for (int i = 0; i < t->rank; i++)
        dims[i] = t->shape[i];
    return shape_str(t->rank, dims);
}

/* --- values ---------------------------------------------------------------- */

static tji_type type_of(int32_t id) { return B.fn->values[id].type; }
static tji_op *op_of(int32_t id) { return &B.fn->ops[B.fn->values[id].def_op]; }
static literal *lit(int32_t id) { return B.fn->values[id].weak ? &B.lits[id] : NULL; }
static tji_type scalar_type(tj_dtype dt) { return (tji_type){.dtype = dt}; }

static tji_type with_dtype(tji_type t, tj_dtype dt)
{
    t.dtype = dt;
    return t;
}

static tji_type elem_type(tji_type t)
{
    t.is_ptr = 0;
    return t;
}

static tji_type with_shape(tji_type t, int rank, const int32_t *dims)
{
    memset(t.shape, 0, sizeof t.shape);
    t.rank = (uint8_t)rank;
    for (int i = 0; i < rank; i++)
        t.shape[i] = dims[i];
    return t;
}

/* The region a value is defined in. */
static int32_t value_region(int32_t id)
{
    const tji_value *v = &B.fn->values[id];
    return v->def_op < 0 ? v->def_region : B.fn->ops[v->def_op].parent;
}

/* Is region inner the region outer or nested inside it? */
static int region_within(int32_t inner, int32_t outer)
{
    for (int32_t r = inner; r >= 0;) {
        if (r == outer)
            return 1;
        int32_t op = B.fn->regions[r].parent_op;
        r = op < 0 ? -1 : B.fn->ops[op].parent;
    }
    return 0;
}

/* Checks that id is a value the current op may read. what/index name it in
 * the message ("operand 2", "carried variable 1"). */
static int check_value(int32_t id, const char *what, int index)
{
    if (id == 0)
        return fail(TJ_ERR_BUILD, "%s %d is an empty value (tj_val {0}: never assigned?)",
                    what, index);
    if (id < 0 || id > B.fn->nvalues)
        return fail(TJ_ERR_BUILD,
                    "%s %d is not a value of this kernel (a C number where a tile value "
                    "belongs? write TJ_V(n) or tj_f32(n); or a value kept from another "
                    "kernel's build)",
                    what, index);
    int32_t r = value_region(id);
    if (!region_within(B.region, r)) {
        tji_loc body = B.fn->ops[B.fn->regions[r].parent_op].loc;
        return fail(TJ_ERR_BUILD,
                    "value defined inside a TJ_FOR/TJ_IF body (%s:%d) is used outside it; "
                    "list it as a carried variable",
                    body.file ? body.file : "?", body.line);
    }
    tji_op *def = B.fn->values[id].def_op >= 0 ? op_of(id) : NULL;
    if (def && def->loc.line == 0) /* a literal takes the line of its first use */
        def->loc = (tji_loc){B.loc.file, B.loc.line};
    return 1;
}

static int check_optional(int32_t id, int index)
{
    return id == 0 || check_value(id, "operand", index);
}

/* Starts an op: a kernel is being built, no error so far, operands valid. */
static int enter(tj_loc loc, const char *name, int n, const tj_val *args)
{
    if (!B.fn) {
        tjs_error(TJ_ERR_BUILD,
                  "%s:%d: error: op '%s' used outside a kernel body (no kernel is being built)",
                  loc_file(loc), loc.line, name);
        return 0;
    }
    if (B.status != TJ_OK)
        return 0;
    B.loc = loc;
    B.opname = name;
    if (B.fn->nvalues > HANDLE_MAX_ID - 64)
        return fail(TJ_ERR_BUILD, "the kernel has more than %d values", HANDLE_MAX_ID - 64);
    for (int i = 0; i < n; i++)
        if (!check_value(vid(args[i]), "operand", i + 1))
            return 0;
    return 1;
}

/* --- emitting ops ---------------------------------------------------------- */

/* Appends an op with its operands and results to region; returns its index. */
static int32_t emit_op(tji_opcode code, int32_t region, const int32_t *args, int nargs,
                       int nresults, const tji_type *rtypes)
{
    tji_func *fn = B.fn;
    int32_t idx = tji_new_op(fn, code, region, (tji_loc){B.loc.file, B.loc.line});
    int32_t *copy = NULL;
    if (nargs) {
        copy = tjs_arena_alloc(fn->arena, sizeof(int32_t) * (size_t)nargs);
        memcpy(copy, args, sizeof(int32_t) * (size_t)nargs);
    }
    for (int i = 0; i < nargs; i++)
        if (args[i] > 0 && fn->values[args[i]].weak)
            B.lits[args[i]].used = 1;
    int32_t first = 0;
    for (int i = 0; i < nresults; i++) {
        int32_t v = tji_new_value(fn, rtypes[i], idx);
        if (i == 0)
            first = v;
    }
    tji_op *op = &fn->ops[idx];
    op->args = copy;
    op->nargs = nargs;
    op->result = first;
    op->nresults = nresults;
    if (region == B.region)
        B.else_ready = 0;
    return idx;
}

/* An op of one result in the current region; returns the result. */
static int32_t emit(tji_opcode code, const int32_t *args, int nargs, tji_type rt)
{
    int32_t op = emit_op(code, B.region, args, nargs, 1, &rt);
    return B.fn->ops[op].result;
}

#define ARGS(...) (const int32_t[]){__VA_ARGS__}, \
    (int)(sizeof((const int32_t[]){__VA_ARGS__}) / sizeof(int32_t))

static int64_t wrap_int(tj_dtype dt, int64_t v)
{
    int bits = tjs_dtype_bits(dt);
    if (dt == TJ_I1)
        return v != 0;
    if (bits >= 64)
        return v;
    uint64_t mask = ((uint64_t)1 << bits) - 1, u = (uint64_t)v & mask;
    if (tjs_dtype_is_signed(dt) && (u >> (bits - 1)))
        u |= ~mask;
    return (int64_t)u;
}

/* v rounded to the nearest value of float dtype dt (IEEE, ties to even). */
static double round_float(tj_dtype dt, double v)
{
    if (dt == TJ_F64 || isnan(v) || isinf(v))
        return v;
    if (fabs(v) > FLT_MAX) /* past FLT_MAX plus half an ulp: infinity */
        return fabs(v) >= 0x1.ffffffp127 ? copysign(INFINITY, v) : copysign(FLT_MAX, v);
    float f = (float)v;
    if (dt != TJ_F32 && (double)f != v) {
        /* Round to odd first (truncate, then set the last bit): float has
         * enough extra bits that the 16-bit rounding below is then the only
         * rounding, as if done directly from v. */
        uint32_t u;
        memcpy(&u, &f, sizeof u);
        if (fabs((double)f) > fabs(v))
            u--;
        u |= 1;
        memcpy(&f, &u, sizeof f);
    }
    if (dt == TJ_F16)
        f = tj_f16_to_f32(tj_f32_to_f16(f));
    else if (dt == TJ_BF16)
        f = tj_bf16_to_f32(tj_f32_to_bf16(f));
    return f;
}

static void set_const(tji_op *op, tj_dtype dt, int64_t ival, double fval)
{
    op->ival = is_float(dt) ? 0 : wrap_int(dt, ival);
    op->fval = is_float(dt) ? round_float(dt, fval) : 0;
}

static int32_t make_const(tj_dtype dt, int64_t ival, double fval)
{
    int32_t v = emit(TJI_CONST, NULL, 0, scalar_type(dt));
    set_const(op_of(v), dt, ival, fval);
    return v;
}

/* --- literals and promotion ------------------------------------------------ */

static tj_dtype literal_dtype(const literal *l)
{
    if (l->kind == LIT_FLOAT)
        return TJ_F32;
    if (l->kind == LIT_UINT)
        return TJ_U64;
    return l->ival >= INT32_MIN && l->ival <= INT32_MAX ? TJ_I32 : TJ_I64;
}

static double literal_double(const literal *l)
{
    if (l->kind == LIT_FLOAT)
        return l->fval;
    return l->kind == LIT_UINT ? (double)(uint64_t)l->ival : (double)l->ival;
}

/* An integer literal fits an integer dtype when it is representable in it;
 * for unsigned dtypes negative values that fit the signed type of that width
 * are allowed too, and wrap as in C (u32 x - 1 is x + 0xffffffff). */
static int literal_fits(const literal *l, tj_dtype dt)
{
    if (is_float(dt))
        return 1;
    if (l->kind == LIT_UINT)
        return dt == TJ_U64;
    int64_t v = l->ival;
    int bits = tjs_dtype_bits(dt);
    if (dt == TJ_I1)
        return v == 0 || v == 1;
    if (bits >= 64)
        return 1;
    int64_t lo = -((int64_t)1 << (bits - 1));
    int64_t hi = tjs_dtype_is_signed(dt) ? ((int64_t)1 << (bits - 1)) - 1
                                          : ((int64_t)1 << bits) - 1;
    return v >= lo && v <= hi;
}

static tj_val new_literal(int kind, int64_t ival, double fval)
{
    if (!B.fn) {
        tjs_error(TJ_ERR_BUILD, "error: a C number was used as a tile value outside a "
                                "kernel body (no kernel is being built)");
        return NONE;
    }
    if (B.status != TJ_OK)
        return NONE;
    literal l = {(uint8_t)kind, 0, ival, fval};
    tj_loc saved = B.loc;
    B.loc = (tj_loc){B.kernel->file, 0}; /* line 0: set at its first use */
    int32_t v = make_const(literal_dtype(&l), ival, fval);
    B.loc = saved;
    B.fn->values[v].weak = 1;
    if (v >= B.lits_cap) {
        int32_t cap = B.lits_cap ? B.lits_cap : 64;
        while (cap <= v)
            cap *= 2;
        B.lits = tjs_xrealloc(B.lits, sizeof *B.lits * (size_t)cap);
        memset(B.lits + B.lits_cap, 0, sizeof *B.lits * (size_t)(cap - B.lits_cap));
        B.lits_cap = cap;
    }
    B.lits[v] = l;
    return val(v);
}

tj_val tj__val_id(tj_val v) { return v; }
tj_val tj__weak_int(long long v) { return new_literal(LIT_INT, v, 0); }
tj_val tj__weak_float(double v) { return new_literal(LIT_FLOAT, 0, v); }

tj_val tj__weak_uint(unsigned long long v)
{
    if (v <= INT64_MAX)
        return new_literal(LIT_INT, (int64_t)v, 0);
    return new_literal(LIT_UINT, (int64_t)v, 0);
}

/* Triton's promotion of two dtypes. */
static tj_dtype promote(tj_dtype a, tj_dtype b)
{
    if (a == b)
        return a;
    if (is_float(a) && is_float(b)) {
        int ba = tjs_dtype_bits(a), bb = tjs_dtype_bits(b);
        return ba == bb ? TJ_F32 : ba > bb ? a : b; /* f16 with bf16: f32 */
    }
    if (is_float(a) || is_float(b))
        return is_float(a) ? a : b;
    if (a == TJ_I1 || b == TJ_I1)
        return a == TJ_I1 ? b : a;
    int ba = tjs_dtype_bits(a), bb = tjs_dtype_bits(b);
    if (ba != bb)
        return ba > bb ? a : b;
    return is_unsigned(a) ? a : b; /* equal width: unsigned wins */
}

/* The dtype n operands meet in. Literals yield to the other operands: an
 * integer literal takes any dtype, a floating one a floating dtype (with
 * integers only, it stays f32 and promotion makes the result f32). */
static tj_dtype meet(const int32_t *ids, int n)
{
    int nstrong = 0, nweak = 0, weak_float = 0;
    tj_dtype strong = TJ_I32, weak = TJ_I32;
    for (int i = 0; i < n; i++) {
        const literal *l = lit(ids[i]);
        if (l) {
            tj_dtype d = literal_dtype(l);
            weak = nweak++ ? promote(weak, d) : d;
            weak_float |= l->kind == LIT_FLOAT;
        } else {
            tj_dtype d = type_of(ids[i]).dtype;
            strong = nstrong++ ? promote(strong, d) : d;
        }
    }
    if (!nstrong)
        return weak;
    if (weak_float && !is_float(strong))
        return TJ_F32;
    return strong;
}

/* x as dtype dt. A literal becomes a CONST of dt (retyped in place while no
 * op reads it); checked: an integer literal must fit dt. Anything else gets
 * a CAST (pointers: a pointer to dt). */
static int32_t to_dtype(int32_t x, tj_dtype dt, int checked)
{
    tji_type t = type_of(x);
    if (t.dtype == dt)
        return x;
    literal *l = lit(x);
    if (l && (l->kind != LIT_FLOAT || is_float(dt))) {
        if (checked && !literal_fits(l, dt)) {
            if (l->kind == LIT_UINT)
                return fail(TJ_ERR_TYPE, "integer literal %llu does not fit in %s",
                            (unsigned long long)l->ival, tj_dtype_name(dt));
            return fail(TJ_ERR_TYPE, "integer literal %lld does not fit in %s",
                        (long long)l->ival, tj_dtype_name(dt));
        }
        if (!l->used) {
            set_const(op_of(x), dt, l->ival, literal_double(l));
            B.fn->values[x].type.dtype = dt;
            return x;
        }
        return make_const(dt, l->ival, literal_double(l));
    }
    return emit(TJI_CAST, ARGS(x), with_dtype(t, dt));
}

/* --- shapes ---------------------------------------------------------------- */

static tji_type expanded(tji_type t, int axis)
{
    for (int i = t.rank; i > axis; i--)
        t.shape[i] = t.shape[i - 1];
    t.shape[axis] = 1;
    t.rank++;
    return t;
}

static int32_t expand(int32_t x, int axis)
{
    int32_t v = emit(TJI_EXPAND_DIMS, ARGS(x), expanded(type_of(x), axis));
    op_of(v)->axis = axis;
    return v;
}

/* Can a value of type t be broadcast to the shape (rank, dims)? */
static int broadcastable(const tji_type *t, int rank, const int32_t *dims)
{
    if (t->rank > rank)
        return 0;
    int off = rank - t->rank;
    for (int i = 0; i < t->rank; i++)
        if (t->shape[i] != 1 && t->shape[i] != dims[off + i])
            return 0;
    return 1;
}

/* x broadcast to (rank, dims), which broadcastable() allowed. */
static int32_t broadcast_shape(int32_t x, int rank, const int32_t *dims)
{
    tji_type t = type_of(x);
    if (t.rank == 0)
        return rank ? emit(TJI_SPLAT, ARGS(x), with_shape(t, rank, dims)) : x;
    while (type_of(x).rank < rank)
        x = expand(x, 0);
    t = type_of(x);
    tji_type want = with_shape(t, rank, dims);
    return same_shape(&t, &want) ? x : emit(TJI_BROADCAST, ARGS(x), want);
}

/* Broadcasts n values to their common shape (numpy's rule) in place. */
static int broadcast_all(int32_t *ids, int n)
{
    int rank = 0;
    int32_t dims[TJ_MAX_RANK];
    for (int i = 0; i < n; i++)
        if (type_of(ids[i]).rank > rank)
            rank = type_of(ids[i]).rank;
    for (int d = 0; d < rank; d++)
        dims[d] = 1;
    for (int i = 0; i < n; i++) {
        tji_type t = type_of(ids[i]);
        for (int d = 0; d < t.rank; d++) {
            int32_t *want = &dims[rank - t.rank + d];
            if (*want == 1)
                *want = t.shape[d];
            else if (t.shape[d] != 1 && t.shape[d] != *want)
                goto mismatch;
        }
    }
    for (int i = 0; i < n; i++)
        ids[i] = broadcast_shape(ids[i], rank, dims);
    return 1;
mismatch:;
    char list[256];
    size_t len = 0;
    for (int i = 0; i < n; i++) {
        tji_type t = type_of(ids[i]);
        len += (size_t)snprintf(list + len, len < sizeof list ? sizeof list - len : 0, "%s%s",
                                i == 0 ? "" : i == n - 1 ? " and " : ", ", tshape(&t));
    }
    return fail(TJ_ERR_SHAPE, "shapes %s cannot be broadcast together", list);
}

/* A shape from the user: rank 0..TJ_MAX_RANK, dims powers of two. */
static int check_shape(tj_shape s, int32_t *dims)
{
    if (s.rank < 0 || s.rank > TJ_MAX_RANK)
        return fail(TJ_ERR_SHAPE, "shape of rank %d: the rank must be 0 to %d", s.rank,
                    TJ_MAX_RANK);
    int64_t numel = 1;
    for (int i = 0; i < s.rank; i++) {
        if (!is_pow2(s.dims[i]) || s.dims[i] > MAX_NUMEL)
            return fail(TJ_ERR_SHAPE, "shape %s: dims must be powers of two (at most 2^24)",
                        shape_str(s.rank, s.dims));
        numel *= s.dims[i];
        dims[i] = (int32_t)s.dims[i];
    }
    if (numel > MAX_NUMEL)
        return fail(TJ_ERR_SHAPE, "shape %s has %lld elements; tiles hold at most 2^24",
                    shape_str(s.rank, s.dims), (long long)numel);
    return 1;
}

/* Normalizes a (possibly negative) axis of x; scalars have none. */
static int check_axis(int *axis, const tji_type *t, const char *what)
{
    if (t->rank == 0 || *axis < -t->rank || *axis >= t->rank)
        return fail(TJ_ERR_SHAPE, "%s axis %d is out of range for %s", what, *axis, tstr(t));
    if (*axis < 0)
        *axis += t->rank;
    return 1;
}

/* A condition as i1: integers are compared with 0; floats and pointers fail. */
static int32_t as_condition(int32_t x, const char *what)
{
    tji_type t = type_of(x);
    if (t.is_ptr || is_float(t.dtype))
        return fail(TJ_ERR_TYPE, "%s must be i1 or an integer, got %s", what, tstr(&t));
    if (t.dtype == TJ_I1)
        return x;
    const literal *l = lit(x);
    if (l) /* folds to true or false, as a copy: the literal may be an operand too */
        return make_const(TJ_I1, l->ival, 0);
    int32_t zero = broadcast_shape(make_const(t.dtype, 0, 0), t.rank, t.shape);
    int32_t c = emit(TJI_CMP, ARGS(x, zero), with_dtype(t, TJ_I1));
    op_of(c)->pred = TJI_NE;
    return c;
}

/* --- creation and shape ops ------------------------------------------------ */

static tj_val typed_const(tj_loc loc, int64_t ivalue, double fvalue, tj_dtype dtype)
{
    if (!enter(loc, "const", 0, NULL))
        return NONE;
    if (!dtype_ok(dtype))
        return fail(TJ_ERR_BUILD, "unknown dtype %d", (int)dtype), NONE;
    return val(make_const(dtype, ivalue, fvalue));
}

tj_val tj__const_int(tj_loc loc, long long value, tj_dtype dtype)
{
    return typed_const(loc, value, (double)value, dtype);
}

/* A float constant of an integer dtype truncates toward zero, saturating at
 * the ends of int64 (NaN gives 0), so no C conversion is undefined. */
tj_val tj__const_float(tj_loc loc, double value, tj_dtype dtype)
{
    int64_t i = value != value          ? 0
                : value >= 0x1p63       ? INT64_MAX
                : value <= -0x1p63      ? INT64_MIN
                                        : (int64_t)value;
    return typed_const(loc, i, value, dtype);
}

static tj_val grid_op(tj_loc loc, const char *name, tji_opcode code, int axis)
{
    if (!enter(loc, name, 0, NULL))
        return NONE;
    if (axis < 0 || axis > 2)
        return fail(TJ_ERR_BUILD, "%s axis %d is out of range (0..2)", name, axis), NONE;
    int32_t v = emit(code, NULL, 0, scalar_type(TJ_I32));
    op_of(v)->axis = axis;
    return val(v);
}

tj_val tj__program_id(tj_loc loc, int axis)
{
    return grid_op(loc, "program_id", TJI_PROGRAM_ID, axis);
}

tj_val tj__num_programs(tj_loc loc, int axis)
{
    return grid_op(loc, "num_programs", TJI_NUM_PROGRAMS, axis);
}

tj_val tj__arange(tj_loc loc, int64_t lo, int64_t hi)
{
    if (!enter(loc, "arange", 0, NULL))
        return NONE;
    long long l = lo, h = hi;
    if (lo < INT32_MIN || lo > INT32_MAX || hi < INT32_MIN || hi > INT32_MAX)
        return fail(TJ_ERR_SHAPE, "arange(%lld, %lld): bounds must fit in i32", l, h), NONE;
    if (hi <= lo)
        return fail(TJ_ERR_SHAPE, "arange(%lld, %lld) is empty", l, h), NONE;
    if (!is_pow2(hi - lo))
        return fail(TJ_ERR_SHAPE, "arange(%lld, %lld): length %lld is not a power of two", l,
                    h, h - l), NONE;
    if (hi - lo > MAX_NUMEL)
        return fail(TJ_ERR_SHAPE, "arange(%lld, %lld): length %lld is more than 2^24", l, h,
                    h - l), NONE;
    int32_t n = (int32_t)(hi - lo);
    int32_t v = emit(TJI_ARANGE, NULL, 0, with_shape(scalar_type(TJ_I32), 1, &n));
    op_of(v)->ival = lo;
    return val(v);
}

tj_val tj__full(tj_loc loc, tj_shape shape, tj_val value, tj_dtype dtype)
{
    int32_t dims[TJ_MAX_RANK];
    if (!enter(loc, "full", 1, &value) || !check_shape(shape, dims))
        return NONE;
    if (!dtype_ok(dtype))
        return fail(TJ_ERR_BUILD, "unknown dtype %d", (int)dtype), NONE;
    tji_type t = type_of(vid(value));
    if (t.is_ptr)
        return fail(TJ_ERR_TYPE, "the value must be a number, got %s", tstr(&t)), NONE;
    if (t.rank)
        return fail(TJ_ERR_SHAPE, "the value must be a scalar, got %s", tstr(&t)), NONE;
    int32_t x = to_dtype(vid(value), dtype, 1);
    const literal *l = x ? lit(x) : NULL;
    if (l) /* the dtype is the user's: the value must not stay weak, even as a scalar */
        x = make_const(dtype, l->ival, literal_double(l));
    return x ? val(broadcast_shape(x, shape.rank, dims)) : NONE;
}

tj_val tj__expand_dims(tj_loc loc, tj_val x, int axis)
{
    if (!enter(loc, "expand_dims", 1, &x))
        return NONE;
    tji_type t = type_of(vid(x));
    if (axis < -(t.rank + 1) || axis > t.rank)
        return fail(TJ_ERR_SHAPE, "axis %d is out of range for %s", axis, tstr(&t)), NONE;
    if (t.rank == TJ_MAX_RANK)
        return fail(TJ_ERR_SHAPE, "%s already has the largest rank (%d)", tstr(&t),
                    TJ_MAX_RANK), NONE;
    if (t.rank == 0)
        return val(broadcast_shape(vid(x), 1, (int32_t[]){1}));
    return val(expand(vid(x), axis < 0 ? axis + t.rank + 1 : axis));
}

tj_val tj__broadcast_to(tj_loc loc, tj_val x, tj_shape shape)
{
    int32_t dims[TJ_MAX_RANK];
    if (!enter(loc, "broadcast_to", 1, &x) || !check_shape(shape, dims))
        return NONE;
    tji_type t = type_of(vid(x));
    if (!broadcastable(&t, shape.rank, dims))
        return fail(TJ_ERR_SHAPE, "cannot broadcast %s to %s", tstr(&t),
                    shape_str(shape.rank, shape.dims)), NONE;
    return val(broadcast_shape(vid(x), shape.rank, dims));
}

tj_val tj__reshape(tj_loc loc, tj_val x, tj_shape shape)
{
    int32_t dims[TJ_MAX_RANK];
    if (!enter(loc, "reshape", 1, &x) || !check_shape(shape, dims))
        return NONE;
    tji_type t = type_of(vid(x)), want = with_shape(t, shape.rank, dims);
    if (tji_numel(&t) != tji_numel(&want))
        return fail(TJ_ERR_SHAPE, "cannot reshape %s (%lld elements) to %s (%lld elements)",
                    tstr(&t), (long long)tji_numel(&t), tshape(&want),
                    (long long)tji_numel(&want)), NONE;
    if (same_shape(&t, &want))
        return x;
    if (want.rank == 0)
        return fail(TJ_ERR_SHAPE, "cannot reshape %s to a scalar (reduce it with tj_sum)",
                    tstr(&t)), NONE;
    if (t.rank == 0)
        return val(broadcast_shape(vid(x), want.rank, want.shape));
    return val(emit(TJI_RESHAPE, ARGS(vid(x)), want));
}

tj_val tj__permute(tj_loc loc, tj_val x, tj_shape order)
{
    if (!enter(loc, "permute", 1, &x))
        return NONE;
    tji_type t = type_of(vid(x)), want = t;
    char text[64];
    size_t len = 1;
    snprintf(text, sizeof text, "[");
    for (int i = 0; i < order.rank && i < TJ_MAX_RANK; i++)
        len += (size_t)snprintf(text + len, len < sizeof text ? sizeof text - len : 0,
                                "%s%lld", i ? ", " : "", (long long)order.dims[i]);
    if (len < sizeof text)
        snprintf(text + len, sizeof text - len, "]");
    if (order.rank != t.rank)
        return fail(TJ_ERR_SHAPE, "order %s has %d entries for %s of rank %d", text,
                    order.rank, tstr(&t), t.rank), NONE;
    int seen = 0, identity = 1;
    for (int i = 0; i < t.rank; i++) {
        int64_t p = order.dims[i];
        if (p < 0 || p >= t.rank || (seen & (1 << p)))
            return fail(TJ_ERR_SHAPE, "order %s is not a permutation of 0..%d", text,
                        t.rank - 1), NONE;
        seen |= 1 << p;
        want.shape[i] = t.shape[p];
        identity &= p == i;
    }
    if (identity)
        return x;
    int32_t v = emit(TJI_PERMUTE, ARGS(vid(x)), want);
    for (int i = 0; i < t.rank; i++)
        op_of(v)->perm[i] = (int)order.dims[i];
    return val(v);
}

/* --- element-wise ops ------------------------------------------------------ */

static const char *const binop_names[] = {
    "add", "sub", "mul", "div", "floordiv", "mod", "and", "or", "xor", "shl", "shr",
    "minimum", "maximum", "eq", "ne", "lt", "le", "gt", "ge", "fast_div", "pow",
};

static int is_comparison(tj_binop op) { return op >= TJ_OP_EQ && op <= TJ_OP_GE; }
#define NBINOPS ((int)(sizeof binop_names / sizeof binop_names[0]))

static int32_t no_rule(int32_t a, int32_t b)
{
    tji_type ta = type_of(a), tb = type_of(b);
    return fail(TJ_ERR_TYPE, "no rule for '%s' of %s and %s", B.opname, tstr(&ta), tstr(&tb));
}

/* Pointer arithmetic: ptr + int (either order), ptr - int, and comparisons
 * of pointers to one dtype. */
static int32_t pointer_binary(tj_binop op, int32_t a, int32_t b)
{
    tji_type ta = type_of(a), tb = type_of(b);
    if (is_comparison(op) && ta.is_ptr && tb.is_ptr && ta.dtype == tb.dtype) {
        int32_t ids[2] = {a, b};
        if (!broadcast_all(ids, 2))
            return 0;
        tji_type rt = elem_type(with_dtype(type_of(ids[0]), TJ_I1));
        int32_t v = emit(TJI_CMP, ARGS(ids[0], ids[1]), rt);
        op_of(v)->pred = (tji_pred)(op - TJ_OP_EQ);
        return v;
    }
    int ptr_first = ta.is_ptr;
    int32_t ptr = ptr_first ? a : b, off = ptr_first ? b : a;
    tji_type to = type_of(off);
    if (to.is_ptr || !tjs_dtype_is_int(to.dtype) ||
        !(op == TJ_OP_ADD || (op == TJ_OP_SUB && ptr_first)))
        return no_rule(a, b);
    if (to.dtype == TJ_I1 && !(off = to_dtype(off, TJ_I32, 1)))
        return 0;
    if (op == TJ_OP_SUB) {
        /* Negate narrow unsigned offsets as i64: ADDPTR zero-extends them.
         * (u64 wraps modulo 2^64, which is what the address does too.) */
        tj_dtype dt = type_of(off).dtype;
        if (is_unsigned(dt) && tjs_dtype_bits(dt) < 64 && !(off = to_dtype(off, TJ_I64, 1)))
            return 0;
        off = emit(TJI_NEG, ARGS(off), type_of(off));
    }
    int32_t ids[2] = {ptr, off};
    if (!broadcast_all(ids, 2))
        return 0;
    return emit(TJI_ADDPTR, ARGS(ids[0], ids[1]), type_of(ids[0]));
}

static int32_t compare(tji_pred pred, int32_t a, int32_t b)
{
    int32_t c = emit(TJI_CMP, ARGS(a, b), with_dtype(type_of(a), TJ_I1));
    op_of(c)->pred = pred;
    return c;
}

/* Python's floor division and modulo of signed integers, and modulo of
 * floats, from C's truncating IDIV and REM: where the remainder is not 0
 * and its sign differs from the divisor's, the quotient is one less and the
 * modulo is r + b. So a == floordiv(a, b) * b + mod(a, b), and mod has the
 * sign of b. Division by 0 gives 0 and 0 (IDIV's and REM's rule, unchanged)
 * and INT_MIN // -1 gives INT_MIN, mod 0. */
static int32_t floor_divmod(int want_mod, int32_t a, int32_t b)
{
    tji_type t = type_of(a);
    int32_t zero = broadcast_shape(make_const(t.dtype, 0, 0), t.rank, t.shape);
    int32_t r = emit(TJI_REM, ARGS(a, b), t);
    int32_t r_negative = compare(TJI_LT, r, zero), b_negative = compare(TJI_LT, b, zero);
    int32_t signs_differ = emit(TJI_XOR, ARGS(r_negative, b_negative), with_dtype(t, TJ_I1));
    int32_t r_nonzero = compare(TJI_NE, r, zero);
    int32_t adjust = emit(TJI_AND, ARGS(r_nonzero, signs_differ), with_dtype(t, TJ_I1));
    if (want_mod) {
        int32_t r_plus_b = emit(TJI_ADD, ARGS(r, b), t);
        return emit(TJI_WHERE, ARGS(adjust, r_plus_b, r), t);
    }
    int32_t q = emit(TJI_IDIV, ARGS(a, b), t);
    int32_t one = broadcast_shape(make_const(t.dtype, 1, 0), t.rank, t.shape);
    int32_t q_minus_1 = emit(TJI_SUB, ARGS(q, one), t);
    return emit(TJI_WHERE, ARGS(adjust, q_minus_1, q), t);
}

tj_val tj__binary(tj_loc loc, tj_binop op, tj_val a, tj_val b)
{
    int known = (unsigned)op < (unsigned)NBINOPS;
    if (!enter(loc, known ? binop_names[op] : "binary", 2, (tj_val[]){a, b}))
        return NONE;
    if (!known)
        return fail(TJ_ERR_BUILD, "unknown binary op %d", (int)op), NONE;
    int32_t x = vid(a), y = vid(b);
    if (type_of(x).is_ptr || type_of(y).is_ptr)
        return val(pointer_binary(op, x, y));
    int is_cmp = is_comparison(op), fast = op == TJ_OP_FAST_DIV;
    if (fast)
        op = TJ_OP_DIV;
    int bitwise = op == TJ_OP_AND || op == TJ_OP_OR || op == TJ_OP_XOR;
    int shift = op == TJ_OP_SHL || op == TJ_OP_SHR;
    tj_dtype dt = meet((int32_t[]){x, y}, 2);
    if ((bitwise || shift) && is_float(dt))
        return val(no_rule(x, y));
    if (dt == TJ_I1 && !is_cmp && !bitwise) /* arithmetic on i1 is done in i32 */
        dt = TJ_I32;
    if ((op == TJ_OP_DIV || op == TJ_OP_POW) && !is_float(dt))
        dt = TJ_F32;
    int32_t ids[2] = {to_dtype(x, dt, 1), 0};
    if (!ids[0] || !(ids[1] = to_dtype(y, dt, 1)) || !broadcast_all(ids, 2))
        return NONE;
    tji_type rt = type_of(ids[0]);
    static const tji_opcode codes[] = {
        [TJ_OP_ADD] = TJI_ADD, [TJ_OP_SUB] = TJI_SUB, [TJ_OP_MUL] = TJI_MUL,
        [TJ_OP_DIV] = TJI_DIV, [TJ_OP_FLOORDIV] = TJI_IDIV, [TJ_OP_MOD] = TJI_REM,
        [TJ_OP_AND] = TJI_AND, [TJ_OP_OR] = TJI_OR, [TJ_OP_XOR] = TJI_XOR,
        [TJ_OP_SHL] = TJI_SHL, [TJ_OP_SHR] = TJI_SHR, [TJ_OP_MINIMUM] = TJI_MIN,
        [TJ_OP_MAXIMUM] = TJI_MAX, [TJ_OP_POW] = TJI_POW,
    };
    if (is_cmp) {
        int32_t v = emit(TJI_CMP, ids, 2, with_dtype(rt, TJ_I1));
        op_of(v)->pred = (tji_pred)(op - TJ_OP_EQ);
        return val(v);
    }
    if (op == TJ_OP_FLOORDIV && is_float(dt)) {
        int32_t quotient = emit(TJI_DIV, ids, 2, rt);
        return val(emit(TJI_FLOOR, &quotient, 1, rt));
    }
    if ((op == TJ_OP_FLOORDIV || op == TJ_OP_MOD) && !is_unsigned(dt))
        return val(floor_divmod(op == TJ_OP_MOD, ids[0], ids[1]));
    int32_t v = emit(codes[op], ids, 2, rt);
    op_of(v)->approx = fast;
    return val(v);
}

tj_val tj__unary(tj_loc loc, tj_unop op, tj_val x)
{
    static const char *const names[] = {"neg", "not", "abs", "exp", "exp2", "log", "log2",
                                        "sqrt", "rsqrt", "sigmoid", "floor", "ceil", "fast_exp",
                                        "sin", "cos", "tanh", "erf"};
    static const tji_opcode codes[] = {TJI_NEG, TJI_NOT, TJI_ABS, TJI_EXP, TJI_EXP2,
                                       TJI_LOG, TJI_LOG2, TJI_SQRT, TJI_RSQRT, TJI_SIGMOID,
                                       TJI_FLOOR, TJI_CEIL, TJI_EXP, TJI_SIN, TJI_COS, TJI_TANH,
                                       TJI_ERF};
    int known = (unsigned)op < sizeof codes / sizeof codes[0];
    if (!enter(loc, known ? names[op] : "unary", 1, &x))
        return NONE;
    if (!known)
        return fail(TJ_ERR_BUILD, "unknown unary op %d", (int)op), NONE;
    tji_type t = type_of(vid(x));
    if (t.is_ptr || (op == TJ_OP_NOT && is_float(t.dtype)))
        return fail(TJ_ERR_TYPE, "no rule for '%s' of %s", names[op], tstr(&t)), NONE;
    int32_t v = vid(x);
    if (op == TJ_OP_ABS && is_unsigned(t.dtype))
        return x; /* i1 and unsigned values are their own absolute value */
    if (op == TJ_OP_NEG && t.dtype == TJ_I1)
        v = to_dtype(v, TJ_I32, 1);
    if (op >= TJ_OP_EXP && !is_float(t.dtype))
        v = to_dtype(v, TJ_F32, 1);
    if (!v)
        return NONE;
    int32_t r = emit(codes[op], ARGS(v), type_of(v));
    op_of(r)->approx = op == TJ_OP_FAST_EXP;
    return val(r);
}

tj_val tj__fma(tj_loc loc, tj_val a, tj_val b, tj_val c)
{
    if (!enter(loc, "fma", 3, (tj_val[]){a, b, c}))
        return NONE;
    int32_t ids[3] = {vid(a), vid(b), vid(c)};
    tji_type t[3] = {type_of(vid(a)), type_of(vid(b)), type_of(vid(c))};
    if (t[0].is_ptr || t[1].is_ptr || t[2].is_ptr)
        return fail(TJ_ERR_TYPE, "no rule for 'fma' of %s, %s and %s", tstr(&t[0]),
                    tstr(&t[1]), tstr(&t[2])), NONE;
    tj_dtype dt = meet(ids, 3);
    if (!is_float(dt))
        dt = TJ_F32;
    for (int i = 0; i < 3; i++)
        if (!(ids[i] = to_dtype(ids[i], dt, 1)))
            return NONE;
    if (!broadcast_all(ids, 3))
        return NONE;
    return val(emit(TJI_FMA, ids, 3, type_of(ids[0])));
}

tj_val tj__where(tj_loc loc, tj_val cond, tj_val a, tj_val b)
{
    if (!enter(loc, "where", 3, (tj_val[]){cond, a, b}))
        return NONE;
    tji_type ta = type_of(vid(a)), tb = type_of(vid(b));
    int32_t ids[3] = {as_condition(vid(cond), "the condition"), vid(a), vid(b)};
    if (!ids[0])
        return NONE;
    if (ta.is_ptr || tb.is_ptr) {
        if (!ta.is_ptr || !tb.is_ptr || ta.dtype != tb.dtype)
            return fail(TJ_ERR_TYPE, "no rule for 'where' of %s and %s", tstr(&ta),
                        tstr(&tb)), NONE;
    } else {
        tj_dtype dt = meet(ids + 1, 2);
        if (!(ids[1] = to_dtype(ids[1], dt, 1)) || !(ids[2] = to_dtype(ids[2], dt, 1)))
            return NONE;
    }
    if (!broadcast_all(ids, 3))
        return NONE;
    return val(emit(TJI_WHERE, ids, 3, type_of(ids[1])));
}

tj_val tj__cast(tj_loc loc, tj_val x, tj_dtype dtype)
{
    if (!enter(loc, "cast", 1, &x))
        return NONE;
    if (!dtype_ok(dtype))
        return fail(TJ_ERR_BUILD, "unknown dtype %d", (int)dtype), NONE;
    const literal *l = lit(vid(x));
    if (l && (l->kind != LIT_FLOAT || is_float(dtype))) /* wraps as in C, and is no */
        return val(make_const(dtype, l->ival, literal_double(l))); /* longer weak */
    return val(to_dtype(vid(x), dtype, 0));
}

/* --- memory ---------------------------------------------------------------- */

/* The options an op takes: other (loads), cache and evict (loads, stores),
 * is_volatile (loads). The others must be left at their defaults. */
static int check_mem_opts(const tj_mem_opts *o, int is_load, int is_store)
{
    if ((unsigned)o->cache > TJ_CACHE_WT)
        return fail(TJ_ERR_BUILD, "unknown cache modifier %d", (int)o->cache);
    if ((unsigned)o->evict > TJ_EVICT_LAST)
        return fail(TJ_ERR_BUILD, "unknown eviction policy %d", (int)o->evict);
    if (!is_load && vid(o->other))
        return fail(TJ_ERR_BUILD, "'other' applies to loads only");
    if (!is_load && o->is_volatile)
        return fail(TJ_ERR_BUILD, "'is_volatile' applies to loads only");
    if (!is_load && !is_store && (o->cache || o->evict))
        return fail(TJ_ERR_BUILD, "cache and eviction hints apply to loads and stores only");
    /* The hints become PTX modifiers: each kind of access has its own cache
     * operators, and PTX has no instruction with two of cache operator,
     * eviction priority and volatile. */
    static const char *const cache_names[] = {"default", "ca", "cg", "cs", "lu", "cv", "wb", "wt"};
    int load_cache = o->cache != TJ_CACHE_WB && o->cache != TJ_CACHE_WT;
    int store_cache = o->cache == TJ_CACHE_DEFAULT || o->cache == TJ_CACHE_WB ||
                      o->cache == TJ_CACHE_CG || o->cache == TJ_CACHE_CS || o->cache == TJ_CACHE_WT;
    if ((is_load && !load_cache) || (is_store && !store_cache))
        return fail(TJ_ERR_BUILD, "cache modifier .%s applies to %s only", cache_names[o->cache],
                    is_load ? "stores" : "loads");
    if (o->cache && o->evict)
        return fail(TJ_ERR_BUILD, "a cache modifier (.%s) and an eviction policy (%s) cannot be "
                    "combined: PTX has no instruction with both", cache_names[o->cache],
                    o->evict == TJ_EVICT_FIRST ? "evict_first" : "evict_last");
    if (o->is_volatile && (o->cache || o->evict))
        return fail(TJ_ERR_BUILD, "a volatile load takes no cache modifier or eviction policy");
    return 1;
}

static int check_pointer(int32_t ptr, const char *what)
{
    tji_type t = type_of(ptr);
    if (!t.is_ptr)
        return fail(TJ_ERR_TYPE, "%s of a non-pointer value of type %s", what, tstr(&t));
    return 1;
}

/* A mask for the pointer tile pt: absent stays 0; an integer mask is
 * compared with 0; it broadcasts to the pointer's shape, never the reverse. */
static int prepare_mask(int32_t *mask, const tji_type *pt)
{
    if (!*mask)
        return 1;
    tji_type t = type_of(*mask);
    if (!broadcastable(&t, pt->rank, pt->shape))
        return fail(TJ_ERR_SHAPE, "mask of shape %s does not match the pointer's shape %s",
                    tshape(&t), tshape(pt));
    int32_t c = as_condition(*mask, "the mask");
    return c && (*mask = broadcast_shape(c, pt->rank, pt->shape));
}

/* A value for the pointer tile pt: converted to the pointee dtype (as an
 * assignment in C would) and broadcast to the pointer's shape. */
static int32_t value_for(int32_t x, const tji_type *pt, const char *what)
{
    tji_type t = type_of(x);
    if (t.is_ptr)
        return fail(TJ_ERR_TYPE, "%s is a pointer (%s), not a value for %s", what, tstr(&t),
                    tstr(pt));
    if (!broadcastable(&t, pt->rank, pt->shape))
        return fail(TJ_ERR_SHAPE, "%s of shape %s does not match the pointer's shape %s", what,
                    tshape(&t), tshape(pt));
    x = to_dtype(x, pt->dtype, 1);
    return x ? broadcast_shape(x, pt->rank, pt->shape) : 0;
}

tj_val tj__load(tj_loc loc, tj_val ptr, tj_mem_opts opts)
{
    if (!enter(loc, "load", 1, &ptr) || !check_optional(vid(opts.mask), 2) ||
        !check_optional(vid(opts.other), 3) || !check_mem_opts(&opts, 1, 0) ||
        !check_pointer(vid(ptr), "load"))
        return NONE;
    tji_type pt = type_of(vid(ptr));
    int32_t mask = vid(opts.mask), other = vid(opts.other);
    if (!prepare_mask(&mask, &pt) || (other && !(other = value_for(other, &pt, "other"))))
        return NONE;
    int32_t v = emit(TJI_LOAD, ARGS(vid(ptr), mask, other), elem_type(pt));
    tji_op *op = op_of(v);
    op->cache = opts.cache;
    op->evict = opts.evict;
    op->is_volatile = opts.is_volatile != 0;
    return val(v);
}

void tj__store(tj_loc loc, tj_val ptr, tj_val value, tj_mem_opts opts)
{
    if (!enter(loc, "store", 2, (tj_val[]){ptr, value}) || !check_optional(vid(opts.mask), 3) ||
        !check_mem_opts(&opts, 0, 1) || !check_pointer(vid(ptr), "store"))
        return;
    tji_type pt = type_of(vid(ptr));
    int32_t mask = vid(opts.mask), x = value_for(vid(value), &pt, "the value");
    if (!x || !prepare_mask(&mask, &pt))
        return;
    int32_t op = emit_op(TJI_STORE, B.region, ARGS(vid(ptr), x, mask), 0, NULL);
    B.fn->ops[op].cache = opts.cache;
    B.fn->ops[op].evict = opts.evict;
}

tj_val tj__atomic(tj_loc loc, tj_atomic_op op, tj_val ptr, tj_val value, tj_mem_opts opts)
{
    static const char *const names[] = {"atomic_add", "atomic_max", "atomic_min",
                                        "atomic_xchg"};
    int known = (unsigned)op <= TJ_ATOMIC_XCHG;
    if (!enter(loc, known ? names[op] : "atomic", 2, (tj_val[]){ptr, value}) ||
        !check_optional(vid(opts.mask), 3))
        return NONE;
    if (!known)
        return fail(TJ_ERR_BUILD, "unknown atomic op %d", (int)op), NONE;
    if (!check_mem_opts(&opts, 0, 0) || !check_pointer(vid(ptr), names[op]))
        return NONE;
    tji_type pt = type_of(vid(ptr));
    tj_dtype dt = pt.dtype;
    if (op != TJ_ATOMIC_XCHG && (dt == TJ_F16 || dt == TJ_BF16 || dt == TJ_I1))
        return fail(TJ_ERR_TYPE, "no %s on %s: it takes integers (not i1), f32 and f64",
                    names[op], tstr(&pt)), NONE;
    int32_t mask = vid(opts.mask), x = value_for(vid(value), &pt, "the value");
    if (!x || !prepare_mask(&mask, &pt))
        return NONE;
    int32_t v = emit(TJI_ATOMIC, ARGS(vid(ptr), x, mask), elem_type(pt));
    op_of(v)->atomic = op;
    return val(v);
}

tj_val tj__atomic_cas(tj_loc loc, tj_val ptr, tj_val cmp, tj_val value)
{
    if (!enter(loc, "atomic_cas", 3, (tj_val[]){ptr, cmp, value}) ||
        !check_pointer(vid(ptr), "atomic_cas"))
        return NONE;
    tji_type pt = type_of(vid(ptr));
    if (pt.dtype != TJ_I32 && pt.dtype != TJ_I64 && pt.dtype != TJ_U32 && pt.dtype != TJ_U64)
        return fail(TJ_ERR_TYPE, "atomic_cas needs a pointer to i32, i64, u32 or u64, got %s",
                    tstr(&pt)), NONE;
    int32_t c = value_for(vid(cmp), &pt, "the compared value");
    int32_t x = c ? value_for(vid(value), &pt, "the new value") : 0;
    return x ? val(emit(TJI_ATOMIC_CAS, ARGS(vid(ptr), c, x), elem_type(pt))) : NONE;
}

/* --- reductions ------------------------------------------------------------ */

/* What a sum or prefix sum adds: integers narrower than 32 bits are widened
 * to 32 bits of their signedness (i1 to i32), as Triton's sum and cumsum do,
 * so that 64 bytes of 200 do not sum to 0. */
static int32_t sum_operand(int32_t x)
{
    tj_dtype dt = type_of(x).dtype;
    if (is_float(dt) || tjs_dtype_bits(dt) >= 32)
        return x;
    return to_dtype(x, is_unsigned(dt) && dt != TJ_I1 ? TJ_U32 : TJ_I32, 1);
}

static int check_minmax_opts(const tj_minmax_opts *o)
{
    if ((unsigned)o->propagate_nan > TJ_PROPAGATE_NAN_ALL)
        return fail(TJ_ERR_BUILD, "propagate_nan must be TJ_PROPAGATE_NAN_NONE or TJ_PROPAGATE_NAN_ALL, "
                                  "got %d", (int)o->propagate_nan), 0;
    return 1;
}

tj_val tj__minmax(tj_loc loc, tj_binop op, tj_val a, tj_val b, tj_minmax_opts opts)
{
    if (op != TJ_OP_MINIMUM && op != TJ_OP_MAXIMUM)
        op = (tj_binop)-1; /* tj__binary reports it */
    tj_val r = tj__binary(loc, op, a, b);
    if (r.id && !check_minmax_opts(&opts))
        return NONE;
    if (r.id)
        op_of(vid(r))->propagate_nan = opts.propagate_nan;
    return r;
}

tj_val tj__reduce(tj_loc loc, tj_reduce_op op, tj_val x, int axis)
{
    return tj__reduce_minmax(loc, op, x, axis, (tj_minmax_opts){TJ_PROPAGATE_NAN_NONE});
}

tj_val tj__reduce_minmax(tj_loc loc, tj_reduce_op op, tj_val x, int axis, tj_minmax_opts opts)
{
    static const char *const names[] = {"sum", "max", "min", "argmax", "argmin"};
    int known = (unsigned)op <= TJ_REDUCE_ARGMIN;
    if (!enter(loc, known ? names[op] : "reduce", 1, &x))
        return NONE;
    if (!known)
        return fail(TJ_ERR_BUILD, "unknown reduction %d", (int)op), NONE;
    if (!check_minmax_opts(&opts))
        return NONE;
    tji_type t = type_of(vid(x));
    if (t.is_ptr)
        return fail(TJ_ERR_TYPE, "no rule for '%s' of %s", names[op], tstr(&t)), NONE;
    if (!check_axis(&axis, &t, "reduction"))
        return NONE;
    int32_t v = op == TJ_REDUCE_SUM ? sum_operand(vid(x)) : t.dtype == TJ_I1 ? to_dtype(vid(x), TJ_I32, 1)
                                                                          : vid(x); /* i1 reduces as i32 */
    tji_type rt = type_of(v);
    for (int i = axis; i + 1 < rt.rank; i++)
        rt.shape[i] = rt.shape[i + 1];
    rt.shape[--rt.rank] = 0;
    if (op == TJ_REDUCE_ARGMAX || op == TJ_REDUCE_ARGMIN)
        rt.dtype = TJ_I32;
    int32_t r = emit(TJI_REDUCE, ARGS(v), rt);
    op_of(r)->axis = axis;
    op_of(r)->reduce = op;
    op_of(r)->propagate_nan = opts.propagate_nan;
    return val(r);
}

tj_val tj__cumsum(tj_loc loc, tj_val x, int axis)
{
    if (!enter(loc, "cumsum", 1, &x))
        return NONE;
    tji_type t = type_of(vid(x));
    if (t.is_ptr)
        return fail(TJ_ERR_TYPE, "no rule for 'cumsum' of %s", tstr(&t)), NONE;
    if (!check_axis(&axis, &t, "cumsum"))
        return NONE;
    int32_t v = sum_operand(vid(x));
    int32_t r = emit(TJI_CUMSUM, ARGS(v), type_of(v));
    op_of(r)->axis = axis;
    return val(r);
}

/* --- hints ----------------------------------------------------------------- */

/* What the user knows of an integer tile's values and the compiler cannot
 * see (an offset computed from a scalar that is always a multiple of 16, a
 * gather whose indices come in runs): the coalescing pass uses it to choose
 * wider accesses. It is trusted, not checked: a false hint gives wrong
 * results, as in C with a wrong restrict. */
tj_val tj__assume(tj_loc loc, int what, tj_val x, int64_t n)
{
    static const char *const names[] = {"multiple_of", "max_contiguous", "max_constancy"};
    const char *name = (unsigned)what <= TJI_ASSUME_CONSTANCY ? names[what] : "hint";
    if (!enter(loc, name, 1, &x))
        return NONE;
    if ((unsigned)what > TJI_ASSUME_CONSTANCY)
        return fail(TJ_ERR_BUILD, "unknown hint %d", what), NONE;
    tji_type t = type_of(vid(x));
    if (t.is_ptr || !tjs_dtype_is_int(t.dtype) || t.dtype == TJ_I1)
        return fail(TJ_ERR_TYPE, "'%s' applies to integer values, got %s%s", name, tstr(&t),
                    t.is_ptr ? " (give it the offsets added to the pointer)" : ""), NONE;
    if (n < 1)
        return fail(TJ_ERR_BUILD, "'%s' needs a positive number, got %lld", name, (long long)n), NONE;
    if (what != TJI_ASSUME_MULTIPLE_OF) {
        if (t.rank == 0)
            return fail(TJ_ERR_SHAPE, "'%s' describes runs along a tile's last dimension; %s is a scalar",
                        name, tstr(&t)), NONE;
        int32_t last = t.shape[t.rank - 1];
        if ((n & (n - 1)) || n > last)
            return fail(TJ_ERR_BUILD, "'%s' needs a power of two dividing the last dimension (%d), got %lld",
                        name, (int)last, (long long)n), NONE;
    }
    int32_t r = emit(TJI_ASSUME, ARGS(vid(x)), t);
    op_of(r)->assume = (tji_assume)what;
    op_of(r)->ival = n;
    return val(r);
}

/* --- debugging ------------------------------------------------------------- */

void tj__print(tj_loc loc, const char *prefix, tj_val x)
{
    if (!enter(loc, "print", 1, &x))
        return;
    int32_t op = emit_op(TJI_PRINT, B.region, ARGS(vid(x)), 0, NULL);
    B.fn->ops[op].str = tjs_arena_strdup(B.fn->arena, prefix ? prefix : "");
}

void tj__device_assert(tj_loc loc, tj_val cond, const char *msg)
{
    if (!enter(loc, "device_assert", 1, &cond))
        return;
    int32_t c = as_condition(vid(cond), "the condition");
    if (!c)
        return;
    int32_t op = emit_op(TJI_ASSERT, B.region, ARGS(c), 0, NULL);
    B.fn->ops[op].str = tjs_arena_strdup(B.fn->arena, msg ? msg : "");
}

/* --- control flow ---------------------------------------------------------- */

static const char *scope_name(scope_kind k)
{
    return k == SCOPE_FOR ? "for" : k == SCOPE_THEN ? "if" : "else";
}

/* Opens a scope; it stays a placeholder (op -1) unless its begin succeeds. */
static scope *push_scope(scope_kind kind, tj_loc loc)
{
    if (B.depth == B.scopes_cap) {
        B.scopes_cap = B.scopes_cap ? B.scopes_cap * 2 : 8;
        B.scopes = tjs_xrealloc(B.scopes, sizeof *B.scopes * (size_t)B.scopes_cap);
    }
    scope *s = &B.scopes[B.depth++];
    *s = (scope){.kind = kind, .op = -1, .loc = loc};
    B.else_ready = 0;
    return s;
}

static int check_carried(tj_val **vars, int nvars)
{
    if (nvars < 0)
        return fail(TJ_ERR_BUILD, "negative count of carried variables (%d)", nvars);
    for (int i = 1; i <= nvars; i++) {
        if (!vars || !vars[i])
            return fail(TJ_ERR_BUILD, "carried variable %d is a NULL pointer", i);
        if (!check_value(vid(*vars[i]), "carried variable", i))
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
    push_scope(SCOPE_FOR, loc);
    int32_t b[3] = {vid(lo), vid(hi), vid(step)};
    if (!enter(loc, "for", 3, (tj_val[]){lo, hi, step}) || !check_carried(vars, nvars))
        return NONE;
    for (int i = 0; i < 3; i++) {
        tji_type t = type_of(b[i]);
        if (t.is_ptr || is_float(t.dtype))
            return fail(TJ_ERR_TYPE, "loop bounds must be integers, got %s", tstr(&t)), NONE;
        if (t.rank)
            return fail(TJ_ERR_SHAPE, "loop bounds must be scalars, got %s", tstr(&t)), NONE;
    }
    tj_dtype dt = meet(b, 3);
    if (dt == TJ_I1)
        dt = TJ_I32;
    for (int i = 0; i < 3; i++)
        if (!(b[i] = to_dtype(b[i], dt, 1)))
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
    int32_t op = emit_op(TJI_FOR, B.region, args, nvars + 3, nvars, types + 1);
    int32_t body = tji_new_region(fn, op);
    set_block_args(fn, body, types, nvars + 1);
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
    if (!enter(loc, "if", 1, &cond) || !check_carried(vars, nvars))
        return 1;
    tji_type t = type_of(vid(cond));
    if (t.rank)
        return fail(TJ_ERR_SHAPE, "TJ_IF condition must be a scalar, got %s", tstr(&t)), 1;
    int32_t c = as_condition(vid(cond), "the TJ_IF condition");
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
    s->op = emit_op(TJI_IF, B.region, ARGS(c), nvars, types);
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
    if (!check_value(id, "carried variable", i))
        return 0;
    tji_type t = type_of(id);
    const literal *l = lit(id);
    if (!tji_type_equal(&t, want) && l && !want->is_ptr &&
        (l->kind != LIT_FLOAT || is_float(want->dtype))) {
        id = to_dtype(id, want->dtype, 1);
        return id ? broadcast_shape(id, want->rank, want->shape) : 0;
    }
    if (!tji_type_equal(&t, want)) {
        const char *where = s->kind == SCOPE_FOR ? "loop" : s->kind == SCOPE_THEN ? "TJ_IF"
                                                                                   : "TJ_ELSE";
        return fail(TJ_ERR_TYPE, "%scarried variable %d changes type from %s to %s in the %s body",
                    s->kind == SCOPE_FOR ? "loop-" : "", i, tstr(want), tstr(&t), where);
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
        B.opname = scope_name(s->kind);
        vals = tjs_arena_alloc(fn->arena, sizeof(int32_t) * (size_t)(s->nvars + 1));
        int32_t first = fn->ops[s->op].result;
        for (int i = 0; i < s->nvars && ok; i++) {
            tji_type want = fn->values[first + i].type;
            ok = (vals[i] = carried_value(s, i + 1, &want)) != 0;
        }
    }
    if (ok && s->kind != SCOPE_ELSE)
        emit_op(TJI_YIELD, s->region, vals, s->nvars, 0, NULL);
    if (ok && s->kind == SCOPE_ELSE) { /* the provisional YIELD, with this body's values */
        tji_op *y = &fn->ops[s->yield_op];
        y->args = vals;
        for (int i = 0; i < s->nvars; i++)
            if (fn->values[vals[i]].weak)
                B.lits[vals[i]].used = 1;
        region_append(fn, s->region, s->yield_op);
    }
    B.region = s->outer;
    if (!ok)
        return;
    for (int i = 0; i < s->nvars; i++)
        *s->vars[i] = val(fn->ops[s->op].result + i);
    if (s->kind == SCOPE_THEN) {
        int32_t other = fn->ops[s->op].region[1];
        s->yield_op = emit_op(TJI_YIELD, other, s->before, s->nvars, 0, NULL);
        B.last_if = *s;
        B.else_ready = 1;
    }
}

int tj__else_begin(tj_loc loc)
{
    scope prev = B.last_if;
    int ready = B.else_ready;
    scope *s = push_scope(SCOPE_ELSE, loc);
    if (!enter(loc, "else", 0, NULL))
        return 1;
    tji_func *fn = B.fn;
    if (!ready || fn->ops[prev.op].parent != B.region)
        return fail(TJ_ERR_BUILD, "TJ_ELSE without a matching TJ_IF"), 1;
    int32_t r = fn->ops[prev.op].region[1];
    fn->regions[r].nops = 0; /* take out the provisional YIELD; the close puts it back */
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
            fail(TJ_ERR_BUILD, "tj__region_next without an open TJ_FOR or TJ_IF");
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
    tjs_arena *arena = tjs_arena_new();
    tji_func *fn = tjs_arena_alloc(arena, sizeof *fn);
    fn->arena = arena;
    fn->name = tjs_arena_strdup(arena, k->name);
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
    int32_t body = tji_new_region(fn, -1);
    set_block_args(fn, body, types, k->nparams);
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
             kernel->name ? kernel->name : "?", B.fn->name, loc_file((tj_loc){B.kernel->file, 0}),
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
    build_serial = atomic_fetch_add(&build_counter, 1) % HANDLE_SERIALS + 1;
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
        B.opname = scope_name(s->kind);
        fail(TJ_ERR_BUILD, "region opened at %s:%d was not closed (break/return/goto out of "
             "a TJ_FOR or TJ_IF body?)", loc_file(s->loc), s->loc.line);
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
