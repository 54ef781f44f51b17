/* SPDX-License-Identifier: MIT */
/*
 * build.h — what the builder's files share, private to src/builder/'s
 * build.c, literals.c, shapes.c, ops.c, random.c, control.c, join.c, sort.c
 * and combine.c: the state of the build in progress on this thread, value
 * handles, and the helpers every op constructor uses (errors, operand
 * checks, emitting ops, dtypes, shapes).
 * The rest of tjit sees the builder through ir.h (tji_build) and the public
 * tj__* functions of tjit.h only.
 *
 * The state is one thread-local struct, tji_building: its fn is NULL when no
 * kernel is being built on the thread. Each op constructor starts with
 * tji_enter (a build is in progress, no error so far, operands valid),
 * makes its operands agree (tji_to_dtype, tji_broadcast_all), appends its op
 * (tji_emit) and returns the result's handle (val). A failure goes through
 * tji_fail, which records the first error and returns 0, "no value".
 */
#ifndef TJIT_BUILD_H
#define TJIT_BUILD_H

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

typedef enum scope_kind { SCOPE_FOR, SCOPE_THEN, SCOPE_ELSE, SCOPE_WHILE } scope_kind;

/* An open TJ_FOR / TJ_IF / TJ_ELSE / TJ_WHILE body. */
typedef struct scope {
    scope_kind kind;
    int entered;        /* tj__region_next() has let the body run */
    int32_t op;         /* the FOR, IF or WHILE op; -1 for a placeholder */
    int32_t region;     /* the body */
    int32_t outer;      /* the region to return to */
    int32_t yield_op;   /* IF: the provisional YIELD of the else region;
                           WHILE: its CONDITION, -1 until TJ_WHILE_COND */
    tj_loc loc;
    int nvars;
    tj_val **vars;      /* the user's carried variables (copied pointers) */
    int32_t *before;    /* IF: the carried values before the IF */
} scope;

/* The build in progress on this thread (tji_building). */
typedef struct tji_builder {
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
} tji_builder;

extern _Thread_local tji_builder tji_building;
/* Short, as the builder reads it on nearly every line. */
#define B tji_building

/* --- value handles (build.c) ------------------------------------------------ */

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
extern _Thread_local uint64_t tji_build_serial;
static inline tj_val val(int32_t id)
{
    return (tj_val){id ? (int64_t)(tji_build_serial << HANDLE_ID_BITS | (uint64_t)id) : 0};
}
/* -1 for a handle that is not of this build: tji_check_value rejects it. */
static inline int32_t vid(tj_val v)
{
    if (!v.id)
        return 0;
    if ((uint64_t)v.id >> HANDLE_ID_BITS != tji_build_serial)
        return -1;
    return (int32_t)(v.id & HANDLE_MAX_ID);
}

/* --- small facts ----------------------------------------------------------------- */

static inline int dtype_ok(tj_dtype dt) { return (unsigned)dt < TJ_DTYPE_COUNT; }
static inline int is_pow2(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }
static inline int is_float(tj_dtype dt) { return tjs_dtype_is_float(dt); }
static inline int is_unsigned(tj_dtype dt) { return tjs_dtype_is_int(dt) && !tjs_dtype_is_signed(dt); }
static inline tji_type type_of(int32_t id) { return B.fn->values[id].type; }
static inline tji_op *op_of(int32_t id) { return &B.fn->ops[B.fn->values[id].def_op]; }
static inline literal *lit(int32_t id) { return B.fn->values[id].weak ? &B.lits[id] : NULL; }
static inline tji_type scalar_type(tj_dtype dt) { return (tji_type){.dtype = dt}; }

static inline tji_type with_dtype(tji_type t, tj_dtype dt)
{
    t.dtype = dt;
    return t;
}

static inline tji_type elem_type(tji_type t)
{
    t.is_ptr = 0;
    return t;
}

static inline tji_type with_shape(tji_type t, int rank, const int32_t *dims)
{
    memset(t.shape, 0, sizeof t.shape);
    t.rank = (uint8_t)rank;
    for (int i = 0; i < rank; i++)
        t.shape[i] = dims[i];
    return t;
}

/* --- errors and operands (build.c) ----------------------------------------------- */

/* Records the first error of the build; returns 0 for "no value". */
TJI_FUNC int32_t tji_fail(tj_status status, const char *fmt, ...) TJS_PRINTF(2, 3);
/* A type ("*f32[64]") or a shape ("[64x32]", "[]") as text for a message;
 * four stay valid at a time. */
TJI_FUNC const char *tji_type_text(const tji_type *t);
TJI_FUNC const char *tji_dims_text(int rank, const int64_t *dims);
TJI_FUNC const char *tji_shape_text(const tji_type *t);
TJI_FUNC const char *tji_loc_file(tj_loc loc); /* "?" for none */
/* Checks that id is a value the current op may read. what/index name it in
 * the message ("operand 2", "carried variable 1"). */
TJI_FUNC int tji_check_value(int32_t id, const char *what, int index);
TJI_FUNC int tji_check_optional(int32_t id, int index); /* 0 (absent) is fine */
/* Starts an op: a kernel is being built, no error so far, operands valid
 * and none a block pointer; tji_enter_block lets operand 1 be one. */
TJI_FUNC int tji_enter(tj_loc loc, const char *name, int n, const tj_val *args);
TJI_FUNC int tji_enter_block(tj_loc loc, const char *name, int n, const tj_val *args);

/* --- emitting ops (build.c) ------------------------------------------------------- */

/* Appends an op with its operands and results to region; returns its index. */
TJI_FUNC int32_t tji_emit_op(tji_opcode code, int32_t region, const int32_t *args, int nargs,
                             int nresults, const tji_type *rtypes);
/* An op of one result in the current region; returns the result. */
TJI_FUNC int32_t tji_emit(tji_opcode code, const int32_t *args, int nargs, tji_type rt);
#define ARGS(...) (const int32_t[]){__VA_ARGS__}, \
    (int)(sizeof((const int32_t[]){__VA_ARGS__}) / sizeof(int32_t))

/* --- constants, literals and promotion (literals.c) -------------------------------- */

/* A CONST of dtype dt (integers wrapped, floats rounded to dt). */
TJI_FUNC int32_t tji_make_const(tj_dtype dt, int64_t ival, double fval);
TJI_FUNC double tji_literal_double(const literal *l); /* its C value */
/* Does integer literal l fit dtype dt (an unsigned dt takes a negative
 * that fits the signed dtype of its width, wrapping as C)? Floats: yes. */
TJI_FUNC int tji_literal_fits(const literal *l, tj_dtype dt);
/* 1 if dt is not an fp8 dtype, else an error naming the op (fp8 is only
 * moved, cast and multiplied by a dot) and 0. */
TJI_FUNC int tji_refuse_fp8(tj_dtype dt);
/* The dtype n operands meet in (literals yield to the other operands). */
TJI_FUNC tj_dtype tji_meet(const int32_t *ids, int n);
/* x as dtype dt; checked: an integer literal must fit dt. */
TJI_FUNC int32_t tji_to_dtype(int32_t x, tj_dtype dt, int checked);

/* --- shapes (shapes.c) ------------------------------------------------------------ */

/* Can a value of type t be broadcast to the shape (rank, dims)? */
TJI_FUNC int tji_broadcastable(const tji_type *t, int rank, const int32_t *dims);
/* x broadcast to (rank, dims), which tji_broadcastable allowed. */
TJI_FUNC int32_t tji_broadcast_shape(int32_t x, int rank, const int32_t *dims);
/* Broadcasts n values to their common shape (numpy's rule) in place. */
TJI_FUNC int tji_broadcast_all(int32_t *ids, int n);
/* Normalizes a (possibly negative) axis of x; scalars have none. */
TJI_FUNC int tji_check_axis(int *axis, const tji_type *t, const char *what);
/* An i1 tile of (rank, dims): is the element's index along axis k? */
TJI_FUNC int32_t tji_index_is(int rank, const int32_t *dims, int axis, int k);
/* Of v, along axis, the element where the i1 tile cond (v's shape) holds,
 * bit for bit; the dtype's lowest value (-inf for floats) where none does
 * (join.c). The result is v without that axis. */
TJI_FUNC int32_t tji_pick(int32_t cond, int32_t v, int axis);
/* Views along one axis (sort.c), for the algorithms built from ops (sort,
 * flip, reduce and scan with a combine function): tji_as_rows checks x (a
 * tile, not pointers) and moves axis last (a permute where it was not):
 * rows of n elements, whose [rows, n] reshape the caller makes;
 * tji_from_rows is its inverse to the shape orig. tji_partners views y
 * [rows, n] as [rows, n/2s, 2, s]: a the elements whose bit s is clear, b
 * their partners, both [rows, n/2s, s]; tji_joined is its inverse. */
TJI_FUNC int tji_as_rows(const char *name, tj_loc loc, tj_val *x, int *axis, int64_t *rows, int64_t *n);
TJI_FUNC tj_val tji_from_rows(tj_loc loc, tj_val y, tji_type orig, int axis);
TJI_FUNC void tji_partners(tj_loc loc, tj_val y, int64_t rows, int64_t n, int64_t s, tj_val *a, tj_val *b);
TJI_FUNC tj_val tji_joined(tj_loc loc, tj_val a, tj_val b, int64_t rows, int64_t n);
/* tj_cummax / tj_cummin (op MAX or MIN), for tj__scan_opts (combine.c). */
TJI_FUNC tj_val tji_scan_minmax(tj_loc loc, tj_reduce_op op, tj_val x, int axis, tj_scan_opts opts);
/* A condition as i1: integers are compared with 0; floats and pointers fail. */
TJI_FUNC int32_t tji_as_condition(int32_t x, const char *what);

/* --- loads and stores (ops.c) ------------------------------------------------------ */

/* A load or store of ptr (a pointer tile or a block pointer) with its
 * options, for an op already entered whose operands are valid: what
 * tj_load and tj_store do after tji_enter_block, also behind the tensor
 * descriptors' loads and stores. The load gives its result, 0 on error;
 * the store 1, or 0. */
TJI_FUNC int32_t tji_load(int32_t ptr, const tj_mem_opts *opts);
TJI_FUNC int tji_store(int32_t ptr, int32_t value, const tj_mem_opts *opts);

/* --- block pointers (block_ptr.c) ------------------------------------------------ */

/* The block-pointer options of a load or store of ptr (.boundary_check,
 * .padding; a block pointer takes no .mask or .other). */
TJI_FUNC int tji_check_block_opts(int32_t ptr, const tj_mem_opts *o, int is_load);

/* --- control flow (control.c) ------------------------------------------------------ */

TJI_FUNC const char *tji_scope_name(scope_kind k); /* "for", "if", "else", "while" */

#endif
