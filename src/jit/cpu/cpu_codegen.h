/* SPDX-License-Identifier: MIT */
/*
 * cpu_codegen.h — the state the files of CPU code generation share (private
 * to src/jit/cpu/; the rest of tjit sees tjj_cpu_codegen in cpu_backend.h).
 *
 * One generator state, `codegen`, is threaded through every file, as the
 * op-family files of Triton's TritonGPUToLLVM share one lowering context:
 *
 *   cpu_kernel.c       the driver: scratch layout, the op dispatch, loop
 *                      nests over tiles, the program and entry functions
 *   cpu_elementwise.c  elem(): one element of any value (element-wise,
 *                      creation and shape ops, fused where they are read)
 *   cpu_memory.c       loads (masked, bounds-checked) and stores
 *   cpu_atomics.c      atomicrmw / cmpxchg per element
 *   cpu_reduce.c       reductions and prefix sums
 *   cpu_dot.c          DOT: a register-blocked, vectorized micro-kernel
 *   cpu_control.c      FOR and IF
 *   cpu_debug.c        PRINT and ASSERT (calls into cpu_runtime.c)
 *   cpu_rows.c         the row walk: a tile's rows interleaved across programs
 *
 * The small helpers below are static inline so that every file emits the
 * same instructions with them; what crosses files is declared after them.
 */
#ifndef TJIT_CPU_CODEGEN_H
#define TJIT_CPU_CODEGEN_H

#include <stdarg.h>

#include <llvm-c/Core.h>

#include "../llvm/bounds.h"
#include "llvm_scalar.h"
#include "llvm_shared.h"
#include "cpu_backend.h"

typedef struct memo_entry {
    int32_t id;
    LLVMValueRef idx[TJ_MAX_RANK];
    LLVMValueRef value;
} memo_entry;

/* At most this many pointer tiles of one store get i64 addresses, and their
 * offset expressions at most WIDE_DEPTH ops deep and WIDE_NODES ops in all,
 * counting shared ones each time they are read (cpu_memory.c). */
#define WIDE_MAX 8
#define WIDE_DEPTH 12
#define WIDE_NODES 48

/* The WHILE being emitted: where its CONDITION leaves the loop to. */
typedef struct tjj_cpu_while {
    LLVMBasicBlockRef exit;
    int emitted;           /* its CONDITION was */
} tjj_cpu_while;

typedef struct codegen {
    const tji_func *fn;
    const tjp_plan *plan;
    LLVMContextRef ctx;
    LLVMModuleRef mod;
    LLVMBuilderRef b;
    LLVMValueRef func;
    LLVMBasicBlockRef entry;
    tjj_llvm_types ty;     /* llvm_shared.h */
    tjj_ls ls;             /* the same state for the shared element-wise code */

    LLVMValueRef *ssa;     /* per value id: a scalar's SSA value */
    int64_t *slot;         /* per value id: a tile's scratch offset, or -1 */
    int64_t **yield_temps; /* per FOR or WHILE op: scratch offsets of swap temporaries, or NULL */
    tjj_cpu_while *cur_while; /* the innermost WHILE being emitted, or NULL */
    uint64_t scratch_bytes;
    LLVMValueRef scratch, rt, pid[3], nprog[3];

    memo_entry *memo;
    size_t nmemo, memo_cap;
    int32_t true_mask;     /* a mask value known to be all true here, or 0 */
    int32_t wide_ptr[WIDE_MAX]; /* ADDPTR results whose offset is proven to fit i32 here */
    int nwide;
    LLVMValueRef no_unroll; /* loop metadata of a large kernel's loops, or NULL */
    tjj_bounds_gen *bounds; /* TJIT_CHECK_BOUNDS: every access is checked */
    int32_t row_store;     /* the store whose rows the row walk slices (cpu_rows.c), or -1 */
    int row_walk_pid;      /* the program id the row walk steps */
    LLVMValueRef row_lo, row_hi; /* the program's rows [lo, hi) of dim 0; NULL: all */

    int32_t cur_op;        /* the op being emitted, for messages */
    tj_status status;      /* the first error */
} codegen;

typedef struct nest {
    int rank;
    int64_t dims[TJ_MAX_RANK];
    LLVMBasicBlockRef header[TJ_MAX_RANK];
    LLVMValueRef iv[TJ_MAX_RANK];
    LLVMValueRef hi[TJ_MAX_RANK]; /* each loop's end */
} nest;

/* --- types and constants ------------------------------------------------- */

static inline int is_half_float(tj_dtype t) { return t == TJ_F16 || t == TJ_BF16; }

static inline int rank_of(const codegen *g, int32_t id) { return tji_typeof(g->fn, id)->rank; }

static inline int64_t numel_of(const tji_type *t)
{
    int64_t n = 1;
    for (int d = 0; d < t->rank; d++)
        n *= t->shape[d];
    return n;
}

static inline LLVMTypeRef value_type(const codegen *g, const tji_type *t)
{
    return t->is_ptr ? g->ty.t_ptr : tjj_ls_dtype_type(&g->ls, t->dtype);
}

static inline LLVMTypeRef value_mem_type(const codegen *g, const tji_type *t)
{
    return t->is_ptr ? g->ty.t_ptr : tjj_ls_mem_type(&g->ls, t->dtype);
}

static inline uint64_t value_mem_size(const tji_type *t)
{
    return t->is_ptr ? sizeof(void *) : tj_dtype_size(t->dtype);
}

static inline LLVMValueRef c_i64(const codegen *g, int64_t v)
{
    return LLVMConstInt(g->ty.t_i64, (unsigned long long)v, 1);
}

static inline LLVMValueRef c_i32(const codegen *g, int64_t v)
{
    return LLVMConstInt(g->ty.t_i32, (unsigned long long)v, 1);
}

static inline LLVMValueRef c_int(LLVMTypeRef t, int64_t v) { return LLVMConstInt(t, (unsigned long long)v, 1); }

static inline void set_nuw_nsw(LLVMValueRef v)
{
    if (LLVMIsAInstruction(v)) {
        LLVMSetNUW(v, 1);
        LLVMSetNSW(v, 1);
    }
}

static inline LLVMValueRef add_nuw(codegen *g, LLVMValueRef a, LLVMValueRef b)
{
    LLVMValueRef v = LLVMBuildAdd(g->b, a, b, "");
    set_nuw_nsw(v);
    return v;
}

static inline LLVMValueRef mul_nuw(codegen *g, LLVMValueRef a, LLVMValueRef b)
{
    LLVMValueRef v = LLVMBuildMul(g->b, a, b, "");
    set_nuw_nsw(v);
    return v;
}

static inline LLVMBasicBlockRef new_block(codegen *g, const char *name)
{
    return LLVMAppendBasicBlockInContext(g->ctx, g->func, name);
}

/* --- memo: what tjj_cpu_elem() computed in the current loop nest --------------------- */

static inline void memo_clear(codegen *g) { g->nmemo = 0; }
static inline size_t memo_mark(const codegen *g) { return g->nmemo; }
static inline void memo_release(codegen *g, size_t mark) { g->nmemo = mark; }

/* --- cpu_kernel.c -------------------------------------------------------- */

/* Records the first error, at the op being emitted (llvm_shared.h). */
#define tjj_cpu_fail(g, ...) tjj_llvm_fail(&(g)->status, (g)->fn, (g)->cur_op, __VA_ARGS__)
TJI_FUNC LLVMValueRef tjj_cpu_memo_find(const codegen *g, int32_t id, int rank, LLVMValueRef *idx);
TJI_FUNC void tjj_cpu_memo_add(codegen *g, int32_t id, int rank, LLVMValueRef *idx, LLVMValueRef v);
/* A loop ID node: unroll disabled, and with no_vectorize vectorization too. */
TJI_FUNC LLVMValueRef tjj_cpu_loop_hints(codegen *g, int no_vectorize);
TJI_FUNC void tjj_cpu_set_loop_hints(codegen *g, LLVMValueRef latch_branch, LLVMValueRef hints);
/* Opens loops over every dim of shape that is not 1; idx gets the indices. */
TJI_FUNC void tjj_cpu_nest_begin(codegen *g, nest *n, int rank, const int32_t *shape, LLVMValueRef *idx);
TJI_FUNC void tjj_cpu_nest_end(codegen *g, nest *n);
/* The scratch buffer at a byte offset; arrays in it, row-major. */
TJI_FUNC LLVMValueRef tjj_cpu_scratch_at(codegen *g, int64_t offset);
TJI_FUNC LLVMValueRef tjj_cpu_linear_index(codegen *g, const tji_type *t, LLVMValueRef *idx);
TJI_FUNC void tjj_cpu_store_elem(codegen *g, int64_t offset, const tji_type *t, LLVMValueRef *idx,
                                 LLVMValueRef v);
TJI_FUNC LLVMValueRef tjj_cpu_load_elem(codegen *g, int64_t offset, const tji_type *t, LLVMValueRef *idx);
/* Fills the array at offset (of type t) with the elements of value src. */
TJI_FUNC void tjj_cpu_copy_value_to(codegen *g, int64_t offset, int32_t src);
/* A stack slot in the entry block (allocas there are static). */
TJI_FUNC LLVMValueRef tjj_cpu_entry_alloca(codegen *g, LLVMTypeRef t, const char *name);
/* Emits the ops of region rid; *yield gets its YIELD, if any. */
TJI_FUNC void tjj_cpu_emit_region(codegen *g, int32_t rid, const tji_op **yield);

/* --- cpu_elementwise.c ----------------------------------------------------- */

/* The element of any value at idx (idx has the value's rank; NULL for scalars). */
TJI_FUNC LLVMValueRef tjj_cpu_elem(codegen *g, int32_t id, LLVMValueRef *idx);
/* The element of value id at idx computed from its defining op. */
TJI_FUNC LLVMValueRef tjj_cpu_def_elem(codegen *g, int32_t id, LLVMValueRef *idx);
/* Refuses the kernel: it holds inline PTX, which only a GPU runs. */
TJI_FUNC void tjj_cpu_refuse_asm(codegen *g);

/* --- cpu_memory.c ------------------------------------------------------------ */

/* A checked variant's mask of an access (bounds.h); unchecked: mask itself. */
TJI_FUNC LLVMValueRef tjj_cpu_bounds_mask(codegen *g, int32_t op, int32_t ptr_id, LLVMValueRef ptr,
                                          const tji_type *t, LLVMValueRef mask);
/* A masked element load: the address is touched only where mask is true. */
TJI_FUNC LLVMValueRef tjj_cpu_masked_load(codegen *g, const tji_type *t, LLVMValueRef ptr, LLVMValueRef mask,
                                          LLVMValueRef other, int is_volatile);
TJI_FUNC void tjj_cpu_emit_store(codegen *g, const tji_op *op);
/* Element idx of ADDPTR result id with its offset formed in i64, where the
 * full-tile loop proved the offset fits i32; NULL elsewhere. */
TJI_FUNC LLVMValueRef tjj_cpu_wide_addptr(codegen *g, int32_t id, LLVMValueRef *idx);

/* --- cpu_rows.c ---------------------------------------------------------------- */

/* The rows one program call of the row walk computes. */
enum { TJJ_CPU_ROW_SLICE = 2 };
/* Whether the kernel takes the row walk: sets g->row_store and g->row_walk_pid. */
TJI_FUNC void tjj_cpu_plan_row_walk(codegen *g);
/* The entry point's body for the row walk (run is the entry, its params as in
 * build_runner; program_ty the program function's type). */
TJI_FUNC void tjj_cpu_build_row_walk(codegen *g, LLVMValueRef run, LLVMTypeRef program_ty);

/* --- cpu_atomics.c, cpu_reduce.c, cpu_dot.c, cpu_control.c, cpu_debug.c -------- */

TJI_FUNC void tjj_cpu_emit_atomic(codegen *g, const tji_op *op);
TJI_FUNC void tjj_cpu_emit_reduce(codegen *g, const tji_op *op);
TJI_FUNC void tjj_cpu_emit_cumsum(codegen *g, const tji_op *op);
TJI_FUNC void tjj_cpu_emit_dot(codegen *g, const tji_op *op);
TJI_FUNC void tjj_cpu_emit_for(codegen *g, int32_t opi);
TJI_FUNC void tjj_cpu_emit_if(codegen *g, int32_t opi);
TJI_FUNC void tjj_cpu_emit_while(codegen *g, int32_t opi);
TJI_FUNC void tjj_cpu_emit_condition(codegen *g, int32_t opi);
TJI_FUNC void tjj_cpu_emit_print(codegen *g, const tji_op *op);
TJI_FUNC void tjj_cpu_emit_assert(codegen *g, const tji_op *op);

#endif
