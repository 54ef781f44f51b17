/* SPDX-License-Identifier: MIT */
/*
 * ir.h — the tile IR: what a kernel body builds and every later stage reads.
 *
 * A tile program (tji_func) is SSA with regions, in the spirit of MLIR's scf
 * dialect. Values are numbered 1..nvalues (0 means "none"); each is a scalar
 * (rank 0) or a tile with a static power-of-two shape, of an element dtype, or
 * a pointer (tile) to elements of a dtype. Ops live in one array; a region is
 * an ordered list of op indices plus its block arguments. Region 0 is the
 * kernel body, whose block arguments are the kernel parameters in order.
 *
 * The builder makes every op well typed before it enters the IR: operands of
 * element-wise ops already have the result's shape (scalars and size-1 dims
 * are made explicit with SPLAT and BROADCAST) and the same dtype (promotions
 * are explicit CASTs). So a back end never guesses: it reads the op's result
 * type and its operands' types, and they agree as documented per opcode below.
 *
 * Every op carries the user's file and line, so later stages can still blame
 * the right line.
 *
 * Stages change a program's structure (operands, results, which region
 * holds which ops) only through the IR core's calls below (ir.c), so the
 * links between ops, values and regions stay consistent; attributes (axis,
 * pred, loc, ...) are plain fields.
 */
#ifndef TJIT_IR_H
#define TJIT_IR_H

#include "../internal.h"

typedef struct tji_type {
    tj_dtype dtype;   /* element type; of a pointer: the pointee */
    uint8_t is_ptr;   /* 1: pointer (to dtype); TJI_BLOCK_PTR: a block pointer,
                         whose shape is the block's (tj_make_block_ptr) */
    uint8_t rank;     /* 0: scalar */
    int32_t shape[TJ_MAX_RANK]; /* powers of two; unused dims are 0 */
} tji_type;

enum { TJI_BLOCK_PTR = 2 };
/* The most elements one run of inline PTX takes (its pack). */
#define TJI_MAX_ASM_PACK 16
/* The deepest software pipeline (a FOR's num_stages, the launch's). */
#define TJI_MAX_STAGES 8
static inline int tji_is_block_ptr(const tji_type *t) { return t->is_ptr == TJI_BLOCK_PTR; }

/* Opcodes. "x:T" means operand x of type T; shapes equal the result's unless
 * said otherwise. Attributes are in tji_op fields named in brackets. */
typedef enum tji_opcode {
    TJI_CONST,        /* () -> scalar; [ival] for ints/i1, [fval] for floats */
    TJI_PROGRAM_ID,   /* () -> i32 scalar; [axis] */
    TJI_NUM_PROGRAMS, /* () -> i32 scalar; [axis] */
    TJI_ARANGE,       /* () -> i32 [n]; values ival .. ival+n-1 */
    TJI_SPLAT,        /* (s: scalar) -> tile of s's type */
    TJI_BROADCAST,    /* (x) -> same rank, dims of x equal or 1 */
    TJI_EXPAND_DIMS,  /* (x) -> rank+1 with a 1 at [axis] */
    TJI_RESHAPE,      /* (x) -> same element count, row-major order kept */
    TJI_PERMUTE,      /* (x) -> dims permuted: result dim i is x dim perm[i] */

    /* element-wise binary: (a, b) of one dtype and shape -> same type */
    TJI_ADD, TJI_SUB, TJI_MUL,
    TJI_DIV,          /* floats only (the builder casts ints for tj_div) */
    TJI_IDIV,         /* ints: truncating (C) division; b == 0 gives 0 */
    TJI_REM,          /* ints: C remainder (b == 0 gives 0); floats: fmod */
    TJI_AND, TJI_OR, TJI_XOR,   /* ints and i1 */
    TJI_SHL, TJI_SHR, /* ints; SHR arithmetic for signed dtypes */
    TJI_MIN, TJI_MAX, /* floats: -0 < +0; NaN ignored, or won with [propagate_nan] */
    TJI_POW,          /* floats only: C's pow */
    TJI_ATAN2, TJI_HYPOT, /* floats only: C's atan2(a, b), hypot(a, b) */
    TJI_CMP,          /* (a, b) -> i1, [pred]; signedness from the dtype */
    TJI_ADDPTR,       /* (p: ptr, off: int tile of any int dtype) -> ptr; off in elements */

    /* element-wise unary: (x) -> same type; math ops take floats only */
    TJI_NEG, TJI_NOT, TJI_ABS,
    TJI_POPC, TJI_CLZ, TJI_BREV, /* ints (not i1): set bits, leading zeros, bits reversed */
    TJI_EXP, TJI_EXP2, TJI_LOG, TJI_LOG2, TJI_SQRT, TJI_RSQRT,
    TJI_SIGMOID, TJI_FLOOR, TJI_CEIL,
    TJI_SIN, TJI_COS, TJI_TANH, TJI_ERF,
    TJI_LOG1P, TJI_EXPM1,
    TJI_TAN, TJI_ASIN, TJI_ACOS, TJI_ATAN, TJI_SINH, TJI_COSH,
    TJI_ASINH, TJI_ACOSH, TJI_ATANH, TJI_LOG10, TJI_CBRT, TJI_EXP10, TJI_ERFC, TJI_LGAMMA,
    TJI_RINT,         /* to the nearest integer, ties to even */
    TJI_TRUNC,        /* toward zero */
    TJI_ROUND,        /* to the nearest integer, ties away from zero (C's round) */
    TJI_INLINE_ASM,   /* (x1..xn) -> [str] PTX run per element, [constraints]: a GPU's only */
    TJI_FMA,          /* (a, b, c) floats -> a*b+c, one rounding */
    TJI_WHERE,        /* (c: i1, a, b) -> type of a */
    TJI_BITCAST,      /* (x) -> the same bits as another dtype of x's width (no pointers) */
    TJI_CAST,         /* (x) -> result type (any dtype to any, ptr to ptr, an i64/u64
                         address to a ptr and a ptr to its i64 address); a float
                         made narrower rounds to nearest even, or [round_to_zero] */

    /* memory; ptr operands are pointer tiles or scalars */
    TJI_LOAD,         /* (ptr, mask|0, other|0) -> pointee; [cache evict is_volatile];
                         ptr may be a block pointer (no mask, no other) with
                         [boundary_check padding]. With [tma_rank] r (made by
                         tjp_lower_block_ptrs for Hopper), the block pointer it
                         was follows: base, shape x r, strides x r (i64),
                         offsets x r (i32), all scalars (TJI_TMA_OPERANDS) */
    TJI_STORE,        /* (ptr, value, mask|0) -> nothing; value has the pointee dtype;
                         a block pointer as LOAD's, with [boundary_check]; with
                         [tma_rank], its tensor as a LOAD's (a TMA store's) */
    TJI_ATOMIC,       /* (ptr, value, mask|0) -> old values; [atomic sem scope] */
    TJI_ATOMIC_CAS,   /* (ptr, cmp, value) -> old values; [sem scope] */

    TJI_REDUCE,       /* (x) -> x without [axis]; [reduce]; argmax/argmin -> i32 */
    TJI_CUMSUM,       /* (x) -> same type; inclusive along [axis], a sum or, [reduce]
                         PROD, a product (printed cumsum.prod) */

    /* structured control flow */
    TJI_FOR,          /* (lo, hi, step: scalar ints of one dtype, init...) -> results
                         [region[0]]: args (iv, carried...), ends with YIELD;
                         [num_stages] its pipelining depth (0: the launch's) */
    TJI_IF,           /* (cond: i1 scalar) -> results; [region[0]] then,
                         [region[1]] else; both end with YIELD */
    TJI_YIELD,        /* (values...) -> nothing; last op of a FOR/IF/WHILE region */
    TJI_WHILE,        /* (init...) -> results; [region[0]]: args (carried...),
                         holds one CONDITION among its own ops, ends with YIELD
                         (the next trip's carried values). Each trip runs the
                         ops up to the CONDITION; if its cond is false the loop
                         ends with the CONDITION's values as results, else it
                         runs the rest and goes round again */
    TJI_CONDITION,    /* (cond: i1 scalar, values...) -> nothing; in a WHILE
                         region: values have the carried types */
    TJI_BARRIER,      /* () -> nothing; every thread of the program waits for
                         the others (tj_debug_barrier) */

    TJI_CONVERT,      /* (x) -> same type in another distributed layout; made
                         only by the GPU layout pass (tjp_assign_layouts) */
    TJI_ASSUME,       /* (x: int) -> x; what the user asserts of its values:
                         [assume] the fact, [ival] its number (tj_multiple_of,
                         tj_max_contiguous, tj_max_constancy) */

    TJI_PRINT,        /* (x) -> nothing; [str] prefix */
    TJI_ASSERT,       /* (cond: i1) -> nothing; [str] message */
    TJI_ASSUME_TRUE,  /* (cond: i1) -> nothing; the program promises cond
                         (tj_assume): the GPU tells LLVM, axis-info reads nonzero
                         integers from it, and a bounds-checked variant checks
                         it as an ASSERT */

    TJI_DOT,          /* (a: [..,M,K], b: [..,K,N], acc: [..,M,N]) -> type of acc;
                         a and b of one dtype: f16/bf16 -> f32 or f16, f32 ->
                         f32 [precision], i8 -> i32; batch dims (rank 3) equal;
                         M, N, K >= 16. The builder always gives an acc (zeros
                         for none). */
    /* block pointers (rank r: the block's); lowered to pointer tiles by
       tjp_lower_block_ptrs before any back end */
    TJI_MAKE_BLOCK_PTR, /* (base: *T scalar, shape: i64 x r, strides: i64 x r,
                           offsets: i32 x r) -> block pointer to T; [perm] the order */
    TJI_ADVANCE,      /* (bp, offsets: i32 x r) -> bp's type, offsets added */

    /* Software pipelining (the GPU pass tjp_pipeline_loops makes these; no
     * builder call does). A ring is a set of [ring_slots] shared-memory
     * buffers, each one tile, named by its number [ring] (0, 1, ... per
     * kernel): the ring is an attribute, not a value, because nothing but
     * these ops ever holds it. Every ASYNC_COPY and LOCAL_LOAD of one ring
     * agrees on ring_slots and the tile type. */
    TJI_ASYNC_COPY,   /* (ptr: ptr tile, slot: i32 scalar, mask|0) -> nothing; starts
                         copying the pointees into slot `slot` of [ring]; masked
                         elements are zero-filled and read nothing. With
                         [tma_rank] (a LOAD's, below), then that tensor and the
                         i1 scalar "the iteration exists": the shared-memory
                         plan may run it as one TMA copy of the block */
    TJI_ASYNC_COMMIT, /* () -> nothing; the copies issued since the last commit
                         become one group */
    TJI_ASYNC_WAIT,   /* () -> nothing; waits until at most [ival] groups are in
                         flight (the thread's own copies: a barrier makes them
                         everyone's) */
    TJI_LOCAL_LOAD,   /* (slot: i32 scalar) -> tile of [ring]'s type; reads slot */
    TJI_LOGICAL_PROGRAMS, /* () -> i32 scalar: the programs along axis 0 the launch
                         asked for, where a persistent kernel's resident programs
                         walk them (made only by tjp_make_persistent; a hidden
                         kernel parameter) */
    /* stream-K (made only by tjp_stream_k): a tile computed in pieces,
     * each a range of the K loop's trips, by several programs */
    TJI_STREAM_K_ARRIVE, /* (acc: f32|i32 tile, piece: i32, iters: i32, units: i64,
                         programs: i32, me: i32) -> i1: this program's piece
                         `acc` of stream-K tile `piece` (-1: a whole tile) is
                         done; true where it is the tile's last, whose program
                         runs the epilogue (src/passes/stream_k.c says how
                         iters, units, programs — those that take K ranges —
                         and me place the pieces) */
    TJI_STREAM_K_ADD, /* (the same operands) -> acc's type: acc plus the tile's
                         other pieces; only where ARRIVE said true */
    TJI_OPCODE_COUNT
} tji_opcode;

/* The tensor of a LOAD, STORE or ASYNC_COPY with tma_rank r: operands from 3 on
 * (base, shape, strides, offsets); an ASYNC_COPY's "exists" after them. */
enum { TJI_TMA_FIRST = 3 };
#define TJI_TMA_OPERANDS(r) (1 + 3 * (r))

typedef enum tji_pred {
    TJI_EQ, TJI_NE, TJI_LT, TJI_LE, TJI_GT, TJI_GE
} tji_pred;

typedef enum tji_assume {
    TJI_ASSUME_MULTIPLE_OF,   /* every element is a multiple of ival */
    TJI_ASSUME_CONTIGUOUS,    /* along the last dim: runs of ival consecutive
                                 integers, starting at multiples of ival */
    TJI_ASSUME_CONSTANCY      /* along the last dim: runs of ival equal values */
} tji_assume;

typedef struct tji_loc {
    const char *file; /* the user's source file (a string literal) */
    int line;
} tji_loc;

typedef struct tji_op {
    tji_opcode code;
    int32_t nargs;
    int32_t *args;        /* value ids; 0 for an absent optional operand */
    int32_t nresults;
    int32_t result;       /* first result id; results are consecutive */
    int32_t region[2];    /* region ids, -1 if none */
    int32_t parent;       /* the region this op is in; -1: none (tji_detach_op) */
    /* attributes */
    int64_t ival;         /* CONST (ints), ARANGE start */
    double fval;          /* CONST (floats) */
    int axis;             /* PROGRAM_ID, NUM_PROGRAMS, EXPAND_DIMS, REDUCE, CUMSUM */
    int perm[TJ_MAX_RANK];/* PERMUTE; MAKE_BLOCK_PTR: the order, fastest dim first */
    tji_pred pred;        /* CMP */
    tj_reduce_op reduce;  /* REDUCE */
    tj_atomic_op atomic;  /* ATOMIC */
    tj_sem sem;           /* ATOMIC, ATOMIC_CAS: the memory order */
    tj_scope scope;       /* ATOMIC, ATOMIC_CAS: the threads it orders against */
    tj_cache cache;       /* LOAD, STORE */
    tj_evict evict;       /* LOAD, STORE */
    int is_volatile;      /* LOAD; INLINE_ASM: has side effects (is_pure=False) */
    tji_assume assume;    /* ASSUME */
    int approx;           /* DIV, EXP, EXP2: the GPU's fast f32 form (tj_fast_div,
                             tj_fast_exp, tj_fast_exp2); the CPU computes the
                             precise op */
    int propagate_nan;    /* MIN, MAX, REDUCE max/min/argmax/argmin of floats:
                             a NaN operand wins instead of being ignored */
    tj_input_precision precision; /* DOT of f32: IEEE, TF32 or TF32X3 */
    unsigned boundary_check; /* LOAD, STORE of a block pointer: bit d checks dim d */
    tj_padding padding;   /* LOAD of a block pointer: outside the checked bounds */
    int ring, ring_slots;         /* ASYNC_COPY, LOCAL_LOAD: the ring, its slots */
    int tma_rank;         /* LOAD, STORE, ASYNC_COPY: the tensor's rank where it has one */
    int num_stages;       /* FOR: how deep to pipeline it (tl.range's); 0: the launch's */
    int tile_loop;        /* FOR: a persistent kernel's tile loop (persistent.c) */
    int unroll;           /* FOR: LLVM's unroll count (tl.range's loop_unroll_factor);
                             0: LLVM's choice, 1: none */
    int round_to_zero;    /* CAST of a float to a narrower float: toward zero */
    int asm_pack;         /* INLINE_ASM: elements per run of the PTX (Triton's pack; 0 is 1) */
    const char *str;      /* PRINT prefix, ASSERT message, INLINE_ASM's PTX (arena copy) */
    const char *constraints; /* INLINE_ASM: "=r,r,r" (arena copy) */
    tji_loc loc;
} tji_op;

typedef struct tji_region {
    int32_t parent_op;    /* -1 for the kernel body */
    int32_t nargs;
    int32_t *args;        /* block argument value ids */
    int32_t nops, cap;
    int32_t *ops;         /* op indices, in order */
} tji_region;

typedef struct tji_value {
    tji_type type;
    int32_t def_op;       /* defining op, or -1 for a block argument */
    int32_t def_region;   /* for block arguments: their region */
    uint8_t weak;         /* a C literal: its dtype yields to the other operand's */
} tji_value;

typedef struct tji_param {
    const char *name;
    int is_ptr;
    tj_dtype dtype;
    int32_t value;        /* its value id (an argument of region 0) */
} tji_param;

typedef struct tji_func {
    tjs_arena *arena;     /* owns everything below */
    const char *name;
    int nparams;
    tji_param *params;
    uint8_t params_may_alias; /* the launch passed one buffer for several pointer
                                 parameters (alias.c); set after tji_build */
    int nconsts;
    const char *const *const_names;
    int64_t *const_values;

    int32_t nvalues, values_cap;
    tji_value *values;    /* index 0 unused */
    int32_t nops, ops_cap;
    tji_op *ops;
    int32_t nregions, regions_cap;
    tji_region *regions;  /* region 0: the body */

    uint8_t block_ptrs_lowered; /* set by tjp_lower_block_ptrs: the verifier
                                   then refuses any block pointer */
    int check_bounds;     /* set by the launcher, not the builder: the back ends
                             check every access (src/jit/llvm/bounds.h) */
} tji_func;

/* Which file implements what: ir.c the IR core below (it depends on nothing
 * above it); build.c, literals.c, shapes.c, ops.c and control.c the builder
 * (their shared state is in build.h, private to them); verify.c and print.c
 * the sections named after them. The builder calls the verifier and the
 * printer; neither of those, nor ir.c, calls the builder. */

/* --- ir.c: the IR core ---------------------------------------------------- */

/* Shorthands used by all stages. */
static inline const tji_value *tji_val(const tji_func *fn, int32_t id) { return &fn->values[id]; }
static inline const tji_type *tji_typeof(const tji_func *fn, int32_t id) { return &fn->values[id].type; }
TJI_FUNC int64_t tji_numel(const tji_type *t);     /* 1 for scalars */
TJI_FUNC int tji_same_shape(const tji_type *a, const tji_type *b); /* rank and dims */
TJI_FUNC int tji_type_equal(const tji_type *a, const tji_type *b);
TJI_FUNC const char *tji_opcode_name(tji_opcode code); /* "add" */
/* Sets the thread's error, blamed on op (its file:line, the kernel and the
 * op's name; op < 0: the kernel alone), and returns status. */
TJI_FUNC tj_status tji_verror_at(const tji_func *fn, int32_t op, tj_status status,
                                 const char *fmt, va_list ap);
TJI_FUNC tj_status tji_error_at(const tji_func *fn, int32_t op, tj_status status,
                                const char *fmt, ...) TJS_PRINTF(4, 5);
TJI_FUNC int tji_is_elementwise(tji_opcode code); /* SPLAT..CAST minus shape ops */
/* An element-wise op that is a function of its operands alone, which a
 * pass may recompute, duplicate or move: all but volatile INLINE_ASM. */
TJI_FUNC int tji_is_pure_elementwise(const tji_op *op);
/* Are all of op's results scalars (rank 0)? */
TJI_FUNC int tji_results_scalar(const tji_func *fn, const tji_op *op);
/* Does op write memory: STORE, ATOMIC, ATOMIC_CAS, and volatile INLINE_ASM
 * (whose PTX may write anything, at addresses no pass can see)? */
TJI_FUNC int tji_writes_memory(const tji_op *op);
/* Do INLINE_ASM's constraints ("=r,r,h") name the output's registers, then
 * each input's, for pack elements of dtypes out and in[0..n): pack x
 * bits / the letter's bits registers each (h: 16 bits, r: 32, l: 64; f
 * and d hold one f32 or f64)? NULL if so, else why not (a static string). */
TJI_FUNC const char *tji_asm_constraints_wrong(const char *constraints, tj_dtype out, const tj_dtype *in, int n,
                                               int pack);
/* The bits of a register of constraint letter c (0: no such letter). */
TJI_FUNC int tji_asm_letter_bits(char c);
/* The region value id is defined in (a block argument's region, or its
 * defining op's parent). */
TJI_FUNC int32_t tji_value_region(const tji_func *fn, int32_t id);
/* Is region inner the region outer or nested inside it? */
TJI_FUNC int tji_region_within(const tji_func *fn, int32_t inner, int32_t outer);

/* Making a program. Everything is owned by fn's arena; ids and indices are
 * handed out in order (values 1, 2, ...; ops and regions 0, 1, ...). The
 * arrays may move when they grow: re-read fn->ops[i] after these calls. */
/* An empty function named name (copied) with its body, region 0, which has
 * no block arguments yet. */
TJI_FUNC tji_func *tji_new_func(const char *name);
TJI_FUNC void tji_func_free(tji_func *fn);          /* NULL is fine */
/* A value of type defined by def_op (-1: a block argument; see
 * tji_set_block_args). */
TJI_FUNC int32_t tji_new_value(tji_func *fn, tji_type type, int32_t def_op);
/* The value at a chosen id (the parser keeps printed ids): defined by def_op,
 * or a block argument of def_region when def_op is -1. Ids skipped below the
 * highest are the caller's to fill. */
TJI_FUNC void tji_value_at(tji_func *fn, int32_t id, tji_type type, int32_t def_op,
                           int32_t def_region);
/* A new op with no operands or results, appended to region parent
 * (parent -1: placed in no region). */
TJI_FUNC int32_t tji_new_op(tji_func *fn, tji_opcode code, int32_t parent, tji_loc loc);
/* A region of parent_op (-1: the body), put in the op's first free region
 * slot. */
TJI_FUNC int32_t tji_new_region(tji_func *fn, int32_t parent_op);
/* Gives region its block arguments: n new values, one per type. */
TJI_FUNC void tji_set_block_args(tji_func *fn, int32_t region, const tji_type *types, int n);
/* Sets op's operands to a copy of args[0..nargs). */
TJI_FUNC void tji_set_operands(tji_func *fn, int32_t op, const int32_t *args, int nargs);
/* Gives op n new consecutive result values, one per type; returns the first
 * (0 when n is 0). */
TJI_FUNC int32_t tji_new_results(tji_func *fn, int32_t op, const tji_type *types, int n);

/* Rewriting a program (the passes' API). Positions count ops in a region's
 * list, 0..nops. */
/* Appends the existing op, placed in no region, to the end of region. */
TJI_FUNC void tji_append_op(tji_func *fn, int32_t region, int32_t op);
/* A new op (as tji_new_op) inserted at position pos of region; the ops from
 * pos on move one place later. */
TJI_FUNC int32_t tji_insert_op(tji_func *fn, tji_opcode code, int32_t region, int pos,
                               tji_loc loc);
/* A copy of op orig (its code, attributes and location) inserted as
 * tji_insert_op does, with operands args[0..orig->nargs), no results and no
 * regions. orig may point into fn->ops. */
TJI_FUNC int32_t tji_insert_clone(tji_func *fn, const tji_op *orig, int32_t region, int pos,
                                  const int32_t *args);
/* Operand k of op now reads value. */
TJI_FUNC void tji_set_operand(tji_func *fn, int32_t op, int k, int32_t value);
/* Each operand v of op with rename[v] != 0 now reads rename[v] (rename is
 * indexed by value id, 1..nvalues). */
TJI_FUNC void tji_rename_operands(tji_func *fn, int32_t op, const int32_t *rename);
/* value's type becomes type; the caller keeps every op that defines or
 * reads it well typed (carried_offsets.c turns a carried tile into a
 * scalar, its init, yield and uses with it). */
TJI_FUNC void tji_set_type(tji_func *fn, int32_t value, tji_type type);
/* The existing value becomes op's only result: op now defines it. */
TJI_FUNC void tji_set_result(tji_func *fn, int32_t op, int32_t value);
/* Operand value joins op's operands, after the others. */
TJI_FUNC void tji_append_operand(tji_func *fn, int32_t op, int32_t value);
/* Gives FOR op one more carried value, of init's type, starting at init:
 * a new last block argument of its body (returned), operand and result.
 * The results move to fresh consecutive ids (uses renamed, the old ones
 * retired). The body's YIELD must get its new last operand from the
 * caller before the program is checked. */
TJI_FUNC int32_t tji_add_carried(tji_func *fn, int32_t op, int32_t init);
/* Takes op out of the program: it stays in fn->ops, in no region. Its
 * region's list still names it until tji_drop_detached, so a walk may
 * detach ops as it goes. */
TJI_FUNC void tji_detach_op(tji_func *fn, int32_t op);
/* Removes the detached ops from region's list, keeping the others' order. */
TJI_FUNC void tji_drop_detached(tji_func *fn, int32_t region);
/* A value the program no longer defines or reads (its op detached, or a
 * result or block argument replaced) becomes an i1 scalar, so that stages
 * walking every value id (layouts, scratch arrays) skip it. */
TJI_FUNC void tji_retire_value(tji_func *fn, int32_t id);

/* --- build.c: the builder ------------------------------------------------- */

/* Runs kernel->build for the given constants and returns the verified tile
 * program, or a status with the first error (kernel, op, file:line). */
TJI_FUNC tj_status tji_build(const tj_kernel *kernel, const int64_t *consts,
                             int nconsts, tji_func **out);
/* Refuses a launch of kernel (on any device) from inside a kernel body:
 * while this thread builds, fails that build and returns TJ_ERR_LAUNCH with
 * a message naming both kernels; TJ_OK when no build is in progress. */
TJI_FUNC tj_status tji_refuse_nested_launch(const tj_kernel *kernel);

/* --- verify.c ------------------------------------------------------------ */

/* Checks the invariants above (types per opcode, SSA dominance by region
 * nesting, YIELD placement). A failure is a tjit bug, reported with the op. */
TJI_FUNC tj_status tji_verify(const tji_func *fn);

/* --- print.c ------------------------------------------------------------- */

/* The program as text (MLIR-like), one op a line with its source line. */
TJI_FUNC char *tji_print(const tji_func *fn); /* malloc'ed */

/* Annotations a later stage adds to the text without the IR knowing them
 * (the GPU layout plan: src/passes/plan_text.c). Any hook may be NULL.
 * print_header writes whole lines ahead of "kernel"; print_value writes
 * after each value's definition (a parameter's or result's type, a carried
 * variable's "%a = %init"), print_op after an op's text (before a FOR's or
 * IF's "{"), each starting with its own space. The parse hooks read what
 * the matching print hook wrote: parse_header_line gets one line that
 * starts with '#' (returns 0 or -1), parse_value and parse_op get the text
 * right where the print hook wrote and return the characters they read (0:
 * nothing of theirs there), or -1 with *err (a static message) and *at
 * (where it went wrong) set. finish runs once the whole text is read. */
typedef struct tji_text_hooks {
    void *ctx;
    void (*print_header)(void *ctx, tjs_buf *b, const tji_func *fn);
    void (*print_value)(void *ctx, tjs_buf *b, const tji_func *fn, int32_t value);
    void (*print_op)(void *ctx, tjs_buf *b, const tji_func *fn, int32_t op);
    int (*parse_header_line)(void *ctx, const char *line, const char **err, const char **at);
    int (*parse_value)(void *ctx, const char *s, tji_func *fn, int32_t value, const char **err,
                       const char **at);
    int (*parse_op)(void *ctx, const char *s, tji_func *fn, int32_t op, int line,
                    const char **err, const char **at);
    /* 0, or -1 with the message in the thread's error */
    int (*finish)(void *ctx, tji_func *fn);
} tji_text_hooks;
TJI_FUNC char *tji_print_with(const tji_func *fn, const tji_text_hooks *hooks);

/* --- parse.c ------------------------------------------------------------- */

/* Reads what tji_print_with writes (hooks may be NULL; their annotations
 * are then errors) back into a new tile program, keeping value ids and
 * source lines (file names owned by its arena), and verifies it. Bad text
 * fails with TJ_ERR_INVALID_ARG: "source:line:column: expected X, found Y". */
TJI_FUNC tj_status tji_parse(const char *text, const char *source, const tji_text_hooks *hooks,
                             tji_func **out);
TJI_FUNC void tji_print_type(tjs_buf *b, const tji_type *t); /* "f32[64x32]", "*f32", "i32" */

#endif
