/* SPDX-License-Identifier: MIT */
/*
 * verify.c — checks that a tile program keeps the promises of ir.h.
 *
 * The builder and every pass run the verifier after they change the IR, so a
 * back end may trust what it reads: each op has the operand count, types and
 * shapes its opcode documents, each value is defined once and used only
 * where its definition dominates the use, and each FOR/IF region ends with a
 * YIELD that matches the op's results. A failure is a bug in tjit, not in the
 * user's kernel, and says so: "internal error: verifier: ..." with the op,
 * its index and the user's line it came from.
 *
 * Dominance in structured SSA is nesting plus order: the walk goes through
 * the regions in program order with a "visible" flag per value. A region's
 * block arguments and each op's results become visible where they are
 * defined and stop being visible when their region ends, so a use is valid
 * exactly when its value is visible at that point. Ops are checked in the
 * order they run; ops left in fn->ops but in no region are not part of the
 * program and are not checked.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

typedef struct verifier {
    const tji_func *fn;
    uint8_t *visible;  /* per value id */
    uint8_t *placed;   /* per op: seen in a region already */
} verifier;

/* Reports a broken invariant at op (or at the function when op < 0). */
static int broken(const verifier *v, int32_t op, const char *fmt, ...) TJS_PRINTF(3, 4);
static int broken(const verifier *v, int32_t op, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *name = v->fn->name ? v->fn->name : "?";
    if (op < 0) {
        tjs_error(TJ_ERR_BUILD, "internal error: verifier: kernel '%s': %s", name, msg);
    } else {
        const tji_op *o = &v->fn->ops[op];
        tjs_error(TJ_ERR_BUILD, "internal error: verifier: kernel '%s', op #%d '%s' (%s:%d): %s",
                  name, op, tji_opcode_name(o->code), o->loc.file ? o->loc.file : "?",
                  o->loc.line, msg);
    }
    return 0;
}

static const char *type_text(const tji_type *t, char *out, size_t n)
{
    tjs_buf b = {0};
    tji_print_type(&b, t);
    snprintf(out, n, "%s", b.data ? b.data : "");
    tjs_buf_free(&b);
    return out;
}

static int type_valid(const tji_type *t)
{
    if ((unsigned)t->dtype >= TJ_DTYPE_COUNT || t->rank > TJ_MAX_RANK || t->is_ptr > TJI_BLOCK_PTR)
        return 0;
    for (int i = 0; i < TJ_MAX_RANK; i++) {
        int32_t d = t->shape[i];
        if (i < t->rank ? d <= 0 || (d & (d - 1)) : d != 0)
            return 0;
    }
    return 1;
}

static int is_int(const tji_type *t) { return !t->is_ptr && tjs_dtype_is_int(t->dtype); }
static int is_float(const tji_type *t) { return !t->is_ptr && tjs_dtype_is_float(t->dtype); }
static int is_i1(const tji_type *t) { return !t->is_ptr && t->dtype == TJ_I1; }

/* fp8 values are only moved, selected, cast, printed and multiplied by a
 * dot (tjit.h); the builder refuses any other op. */
static int takes_fp8(tji_opcode c)
{
    switch (c) {
    case TJI_CONST: case TJI_SPLAT: case TJI_BROADCAST: case TJI_EXPAND_DIMS: case TJI_RESHAPE:
    case TJI_PERMUTE: case TJI_WHERE: case TJI_BITCAST: case TJI_CAST: case TJI_LOAD: case TJI_STORE: case TJI_FOR:
    case TJI_IF: case TJI_YIELD: case TJI_CONVERT: case TJI_PRINT: case TJI_DOT: case TJI_LOCAL_LOAD:
    case TJI_WHILE: case TJI_CONDITION: case TJI_INLINE_ASM:
        return 1;
    default:
        return 0;
    }
}

static int is_fp8(const tji_type *t) { return !t->is_ptr && tjs_dtype_is_fp8(t->dtype); }

/* Operands and results per opcode; -1: any number (checked per opcode). */
static int operand_count(tji_opcode c)
{
    switch (c) {
    case TJI_CONST: case TJI_PROGRAM_ID: case TJI_NUM_PROGRAMS: case TJI_ARANGE:
    case TJI_ASYNC_COMMIT: case TJI_ASYNC_WAIT: case TJI_LOGICAL_PROGRAMS: case TJI_BARRIER:
        return 0;
    case TJI_STREAM_K_ARRIVE: case TJI_STREAM_K_ADD:
        return 6;
    case TJI_FMA: case TJI_WHERE: case TJI_LOAD: case TJI_STORE: case TJI_ATOMIC:
    case TJI_ATOMIC_CAS: case TJI_DOT: case TJI_ASYNC_COPY:
        return 3;
    case TJI_FOR: case TJI_YIELD: case TJI_MAKE_BLOCK_PTR: case TJI_ADVANCE: case TJI_WHILE:
    case TJI_CONDITION: case TJI_INLINE_ASM:
        return -1;
    default:
        return c >= TJI_ADD && c <= TJI_ADDPTR ? 2 : 1;
    }
}

static int result_count(tji_opcode c)
{
    switch (c) {
    case TJI_STORE: case TJI_YIELD: case TJI_PRINT: case TJI_ASSERT: case TJI_ASSUME_TRUE:
    case TJI_ASYNC_COPY: case TJI_ASYNC_COMMIT: case TJI_ASYNC_WAIT: case TJI_CONDITION:
    case TJI_BARRIER:
        return 0;
    case TJI_FOR: case TJI_IF: case TJI_WHILE:
        return -1;
    default:
        return 1;
    }
}

/* Block pointers are made by MAKE_BLOCK_PTR and ADVANCE, read by LOAD and
 * STORE (operand 1) and carried by FOR, IF and YIELD (not WHILE: the builder
 * refuses); no other op sees one
 * (and once they are lowered no value is one: tji_verify). */
static int block_ptrs_fit(const tji_func *fn, const tji_op *op)
{
    tji_opcode c = op->code;
    int carries = c == TJI_FOR || c == TJI_IF || c == TJI_YIELD;
    for (int i = 0; i < op->nargs; i++)
        if (op->args[i] > 0 && tji_is_block_ptr(tji_typeof(fn, op->args[i])) &&
            !(carries || (i == 0 && (c == TJI_ADVANCE || c == TJI_LOAD || c == TJI_STORE))))
            return 0;
    for (int i = 0; i < op->nresults; i++)
        if (tji_is_block_ptr(tji_typeof(fn, op->result + i)) &&
            !(carries || c == TJI_MAKE_BLOCK_PTR || c == TJI_ADVANCE))
            return 0;
    return 1;
}

/* MAKE_BLOCK_PTR's and ADVANCE's scalar operands from first on: n of
 * dtype dt each. */
static int scalars_of(const tji_func *fn, const tji_op *op, int first, int n, tj_dtype dt)
{
    for (int i = first; i < first + n; i++) {
        const tji_type *t = tji_typeof(fn, op->args[i]);
        if (t->is_ptr || t->rank || t->dtype != dt)
            return 0;
    }
    return 1;
}

/* The tensor operands of a LOAD, STORE or ASYNC_COPY of elem with tma_rank r
 * (ir.h): a pointer to elem, shape and strides in i64, offsets in i32 (and
 * a copy's i1 "exists"), all scalars. */
static int tma_operands_ok(const tji_func *fn, const tji_op *op, tj_dtype elem)
{
    int r = op->tma_rank, first = TJI_TMA_FIRST;
    const tji_type *base = tji_typeof(fn, op->args[first]);
    return base->is_ptr == 1 && !base->rank && base->dtype == elem &&
           scalars_of(fn, op, first + 1, 2 * r, TJ_I64) && scalars_of(fn, op, first + 1 + 2 * r, r, TJ_I32) &&
           (op->code != TJI_ASYNC_COPY || scalars_of(fn, op, first + 1 + 3 * r, 1, TJ_I1));
}

/* The block of an op with its tensor: of the tensor's rank, or a 2-D one
 * of a 3-D tensor (a batch's [1, R, C] block as [R, C]). */
static int tma_block_ok(const tji_type *block, const tji_op *op)
{
    return block->rank == op->tma_rank || (block->rank == 2 && op->tma_rank == 3);
}

/* Per-opcode checks of operand and result types. T(i) is operand i's type,
 * R the first result's. Returns 1, or reports and returns 0. */
static int check_types(const verifier *v, int32_t idx)
{
    const tji_func *fn = v->fn;
    const tji_op *op = &fn->ops[idx];
    char t1[64], t2[64], t3[64];
#define FAIL(...) return broken(v, idx, __VA_ARGS__)
#define NEED(cond, ...) do { if (!(cond)) FAIL(__VA_ARGS__); } while (0)
#define T(i) tji_typeof(fn, op->args[i])
#define HAS(i) (op->args[i] != 0)
#define EQ(a, b) tji_type_equal((a), (b))
#define TXT(t, buf) type_text((t), (buf), sizeof(buf))
    tji_opcode c = op->code;
    NEED((unsigned)c < TJI_OPCODE_COUNT, "unknown opcode %d", (int)c);
    int nargs = operand_count(c), nresults = result_count(c);
    int tma = c == TJI_LOAD || c == TJI_STORE || c == TJI_ASYNC_COPY;
    NEED(op->tma_rank == 0 || (tma && op->tma_rank > 0 && op->tma_rank <= TJ_MAX_RANK),
         "tma_rank %d", op->tma_rank);
    if (op->tma_rank)
        nargs = TJI_TMA_FIRST + TJI_TMA_OPERANDS(op->tma_rank) + (c == TJI_ASYNC_COPY);
    NEED(nargs < 0 || op->nargs == nargs, "%d operands, expected %d", op->nargs, nargs);
    NEED(nresults < 0 || op->nresults == nresults, "%d results, expected %d", op->nresults,
         nresults);
    int optional_from = c == TJI_LOAD ? 1
                      : c == TJI_STORE || c == TJI_ATOMIC || c == TJI_ASYNC_COPY ? 2 : op->nargs;
    for (int i = 0; i < op->nargs; i++) {
        int32_t a = op->args[i];
        NEED(a >= 0 && a <= fn->nvalues, "operand %d is value #%d, which does not exist",
             i + 1, a);
        NEED(a != 0 || (i >= optional_from && i < TJI_TMA_FIRST), "operand %d is missing", i + 1);
    }
    NEED(op->nresults >= 0 && (op->nresults == 0 || (op->result > 0 &&
                                                     op->result + op->nresults - 1 <= fn->nvalues)),
         "results %d..%d do not exist", op->result, op->result + op->nresults - 1);
    for (int i = 0; i < op->nresults; i++)
        NEED(fn->values[op->result + i].def_op == idx, "result %%%d names op #%d as its definer",
             op->result + i, fn->values[op->result + i].def_op);
    int has_regions = c == TJI_FOR || c == TJI_IF || c == TJI_WHILE;
    NEED((op->region[0] >= 0) == has_regions && (op->region[1] >= 0) == (c == TJI_IF),
         "has regions %d and %d", op->region[0], op->region[1]);
    for (int i = 0; i < 2; i++)
        NEED(op->region[i] < fn->nregions &&
             (op->region[i] < 0 || fn->regions[op->region[i]].parent_op == idx),
             "region %d does not belong to it", op->region[i]);

    const tji_type *R = op->nresults ? tji_typeof(fn, op->result) : NULL;
    NEED(block_ptrs_fit(fn, op), "a block pointer where this op takes none");
    if (!takes_fp8(c)) {
        for (int i = 0; i < op->nargs; i++)
            NEED(!HAS(i) || !is_fp8(T(i)), "no %s on %s (fp8 is only loaded, stored, selected "
                 "and cast)", tji_opcode_name(c), TXT(T(i), t1));
        NEED(!R || !is_fp8(R), "no %s giving %s", tji_opcode_name(c), TXT(R, t1));
    }
    switch (c) {
    case TJI_CONST:
        NEED(!R->is_ptr && R->rank == 0, "result %s is not a scalar number", TXT(R, t1));
        break;
    case TJI_PROGRAM_ID: case TJI_NUM_PROGRAMS:
        NEED(EQ(R, &(tji_type){.dtype = TJ_I32}), "result %s is not i32", TXT(R, t1));
        NEED(op->axis >= 0 && op->axis <= 2, "axis %d", op->axis);
        break;
    case TJI_LOGICAL_PROGRAMS:
        NEED(EQ(R, &(tji_type){.dtype = TJ_I32}), "result %s is not i32", TXT(R, t1));
        break;
    case TJI_ARANGE:
        NEED(R->dtype == TJ_I32 && !R->is_ptr && R->rank == 1, "result %s is not i32[n]",
             TXT(R, t1));
        NEED(op->ival >= INT32_MIN && op->ival + R->shape[0] - 1 <= INT32_MAX,
             "range %lld.. does not fit in i32", (long long)op->ival);
        break;
    case TJI_SPLAT:
        NEED(T(0)->rank == 0 && R->rank > 0 && R->dtype == T(0)->dtype &&
             R->is_ptr == T(0)->is_ptr, "%s -> %s", TXT(T(0), t1), TXT(R, t2));
        break;
    case TJI_BROADCAST: {
        int ok = R->rank == T(0)->rank && R->rank > 0 && R->dtype == T(0)->dtype &&
                 R->is_ptr == T(0)->is_ptr;
        for (int i = 0; ok && i < R->rank; i++)
            ok = T(0)->shape[i] == R->shape[i] || T(0)->shape[i] == 1;
        NEED(ok, "%s -> %s", TXT(T(0), t1), TXT(R, t2));
        break;
    }
    case TJI_EXPAND_DIMS: {
        const tji_type *x = T(0);
        int ok = x->rank > 0 && R->rank == x->rank + 1 && op->axis >= 0 &&
                 op->axis <= x->rank && R->shape[op->axis] == 1 && R->dtype == x->dtype &&
                 R->is_ptr == x->is_ptr;
        for (int i = 0, j = 0; ok && i < R->rank; i++)
            if (i != op->axis)
                ok = R->shape[i] == x->shape[j++];
        NEED(ok, "axis %d: %s -> %s", op->axis, TXT(x, t1), TXT(R, t2));
        break;
    }
    case TJI_RESHAPE:
        NEED(T(0)->rank > 0 && R->rank > 0 && tji_numel(T(0)) == tji_numel(R) &&
             R->dtype == T(0)->dtype && R->is_ptr == T(0)->is_ptr, "%s -> %s", TXT(T(0), t1),
             TXT(R, t2));
        break;
    case TJI_PERMUTE: {
        const tji_type *x = T(0);
        int ok = x->rank > 0 && R->rank == x->rank && R->dtype == x->dtype &&
                 R->is_ptr == x->is_ptr, seen = 0;
        for (int i = 0; ok && i < R->rank; i++) {
            int p = op->perm[i];
            ok = p >= 0 && p < x->rank && !(seen & (1 << p)) && R->shape[i] == x->shape[p];
            seen |= ok ? 1 << p : 0;
        }
        NEED(ok, "bad permutation of %s -> %s", TXT(x, t1), TXT(R, t2));
        break;
    }
    case TJI_ADD: case TJI_SUB: case TJI_MUL: case TJI_DIV: case TJI_IDIV: case TJI_REM:
    case TJI_AND: case TJI_OR: case TJI_XOR: case TJI_SHL: case TJI_SHR: case TJI_MIN:
    case TJI_MAX: case TJI_POW: case TJI_ATAN2: case TJI_HYPOT: {
        NEED(EQ(T(0), R) && EQ(T(1), R), "operands %s and %s for a result %s", TXT(T(0), t1),
             TXT(T(1), t2), TXT(R, t3));
        int isf = is_float(R), isi = is_int(R) && R->dtype != TJ_I1;
        int ok = c == TJI_DIV || c == TJI_POW || c == TJI_ATAN2 || c == TJI_HYPOT ? isf
               : c == TJI_IDIV || c == TJI_SHL || c == TJI_SHR ? isi
               : c == TJI_AND || c == TJI_OR || c == TJI_XOR ? is_int(R)
               : isf || isi;
        NEED(ok, "no %s on %s", tji_opcode_name(c), TXT(R, t1));
        break;
    }
    case TJI_CMP:
        NEED(EQ(T(0), T(1)) && is_i1(R) && tji_same_shape(R, T(0)), "%s vs %s -> %s",
             TXT(T(0), t1), TXT(T(1), t2), TXT(R, t3));
        NEED((unsigned)op->pred <= TJI_GE, "predicate %d", (int)op->pred);
        break;
    case TJI_ADDPTR:
        NEED(R->is_ptr && EQ(T(0), R) && is_int(T(1)) && T(1)->dtype != TJ_I1 &&
             tji_same_shape(T(1), R), "%s + %s -> %s", TXT(T(0), t1), TXT(T(1), t2), TXT(R, t3));
        break;
    case TJI_NEG: case TJI_NOT: case TJI_ABS: case TJI_POPC: case TJI_CLZ: case TJI_BREV:
    case TJI_EXP: case TJI_EXP2: case TJI_LOG:
    case TJI_LOG2: case TJI_SQRT: case TJI_RSQRT: case TJI_SIGMOID: case TJI_FLOOR:
    case TJI_CEIL: case TJI_SIN: case TJI_COS: case TJI_TANH: case TJI_ERF: case TJI_LOG1P:
    case TJI_EXPM1: case TJI_RINT: case TJI_TRUNC: case TJI_ROUND: case TJI_TAN: case TJI_ASIN:
    case TJI_ACOS: case TJI_ATAN: case TJI_SINH: case TJI_COSH: case TJI_ASINH: case TJI_ACOSH:
    case TJI_ATANH: case TJI_LOG10: case TJI_CBRT: case TJI_EXP10: case TJI_ERFC: case TJI_LGAMMA: {
        NEED(EQ(T(0), R), "%s -> %s", TXT(T(0), t1), TXT(R, t2));
        int ok = c == TJI_NEG ? (is_int(R) && R->dtype != TJ_I1) || is_float(R)
               : c == TJI_NOT ? is_int(R)
               : c == TJI_POPC || c == TJI_CLZ || c == TJI_BREV ? is_int(R) && R->dtype != TJ_I1
               : c == TJI_ABS ? is_float(R) || (is_int(R) && tjs_dtype_is_signed(R->dtype))
               : is_float(R);
        NEED(ok, "no %s on %s", tji_opcode_name(c), TXT(R, t1));
        break;
    }
    case TJI_INLINE_ASM: {
        NEED(op->str && op->nargs >= 0 && op->nargs <= TJ_MAX_RANK, "%d operands (0 to %d) and the PTX",
             op->nargs, TJ_MAX_RANK);
        NEED(op->nargs || R->rank == 0, "no operands, so a scalar result, not %s", TXT(R, t1));
        tj_dtype in[TJ_MAX_RANK];
        for (int i = 0; i < op->nargs; i++) {
            NEED(!T(i)->is_ptr && tji_same_shape(T(i), R), "operand %d is %s, the result %s", i + 1,
                 TXT(T(i), t1), TXT(R, t2));
            in[i] = T(i)->dtype;
        }
        NEED(op->asm_pack >= 0 && op->asm_pack <= TJI_MAX_ASM_PACK, "pack %d (1 to %d)", op->asm_pack,
             TJI_MAX_ASM_PACK);
        const char *why = tji_asm_constraints_wrong(op->constraints, R->dtype, in, op->nargs,
                                                    op->asm_pack ? op->asm_pack : 1);
        NEED(!why, "constraints \"%s\": %s", op->constraints ? op->constraints : "", why ? why : "");
        break;
    }
    case TJI_FMA:
        NEED(is_float(R) && EQ(T(0), R) && EQ(T(1), R) && EQ(T(2), R), "operands differ from %s",
             TXT(R, t1));
        break;
    case TJI_WHERE:
        NEED(is_i1(T(0)) && tji_same_shape(T(0), R) && EQ(T(1), R) && EQ(T(2), R),
             "where(%s, ...) -> %s", TXT(T(0), t1), TXT(R, t2));
        break;
    case TJI_CONVERT:
        NEED(EQ(T(0), R) && R->rank > 0, "%s -> %s", TXT(T(0), t1), TXT(R, t2));
        break;
    case TJI_ASSUME:
        NEED(EQ(T(0), R) && !R->is_ptr && tjs_dtype_is_int(R->dtype) && R->dtype != TJ_I1 &&
             (unsigned)op->assume <= TJI_ASSUME_CONSTANCY && op->ival >= 1,
             "%s -> %s", TXT(T(0), t1), TXT(R, t2));
        break;
    case TJI_CAST: /* values, pointers to pointers, or addresses: i64/u64 <-> pointer */
        NEED(tji_same_shape(T(0), R) &&
                 (T(0)->is_ptr == R->is_ptr ||
                  (!T(0)->is_ptr && R->is_ptr == 1 && (T(0)->dtype == TJ_I64 || T(0)->dtype == TJ_U64)) ||
                  (T(0)->is_ptr == 1 && !R->is_ptr && R->dtype == TJ_I64)),
             "%s -> %s", TXT(T(0), t1), TXT(R, t2));
        NEED(!op->round_to_zero || (is_float(T(0)) && is_float(R) &&
                                    tjs_dtype_bits(R->dtype) < tjs_dtype_bits(T(0)->dtype)),
             "rounding toward zero is for floats made narrower, not %s -> %s", TXT(T(0), t1),
             TXT(R, t2));
        break;
    case TJI_BITCAST:
        NEED(tji_same_shape(T(0), R) && !T(0)->is_ptr && !R->is_ptr &&
             tjs_dtype_bits(T(0)->dtype) == tjs_dtype_bits(R->dtype), "%s -> %s", TXT(T(0), t1),
             TXT(R, t2));
        break;
    case TJI_MAKE_BLOCK_PTR: {
        int r = R->rank, seen = 0;
        NEED(tji_is_block_ptr(R) && r > 0 && op->nargs == 1 + 3 * r, "%d operands for a %s",
             op->nargs, TXT(R, t1));
        NEED(T(0)->is_ptr == 1 && T(0)->rank == 0 && T(0)->dtype == R->dtype,
             "base %s for a %s", TXT(T(0), t1), TXT(R, t2));
        NEED(scalars_of(fn, op, 1, 2 * r, TJ_I64) && scalars_of(fn, op, 1 + 2 * r, r, TJ_I32),
             "shape and strides must be i64 scalars, offsets i32 scalars");
        for (int i = 0; i < r; i++) {
            int p = op->perm[i];
            NEED(p >= 0 && p < r && !(seen & (1 << p)), "order is no permutation of %d dims", r);
            seen |= 1 << p;
        }
        break;
    }
    case TJI_STREAM_K_ARRIVE: case TJI_STREAM_K_ADD:
        NEED(!T(0)->is_ptr && T(0)->rank > 0 && (T(0)->dtype == TJ_F32 || T(0)->dtype == TJ_I32),
             "a piece %s is not an f32 or i32 tile", TXT(T(0), t1));
        NEED(scalars_of(fn, op, 1, 2, TJ_I32) && scalars_of(fn, op, 3, 1, TJ_I64) && scalars_of(fn, op, 4, 2, TJ_I32),
             "piece, iters, units, programs and me must be i32, i32, i64, i32 and i32 scalars");
        NEED(c == TJI_STREAM_K_ADD ? EQ(R, T(0)) : EQ(R, &(tji_type){.dtype = TJ_I1}),
             "result %s", TXT(R, t1));
        break;
    case TJI_ADVANCE:
        NEED(tji_is_block_ptr(T(0)) && EQ(T(0), R) && op->nargs == 1 + R->rank &&
             scalars_of(fn, op, 1, R->rank, TJ_I32), "%s advanced by %d i32 offsets -> %s",
             TXT(T(0), t1), op->nargs - 1, TXT(R, t2));
        break;
    case TJI_LOAD: case TJI_STORE: case TJI_ATOMIC: case TJI_ATOMIC_CAS: {
        const tji_type *p = T(0);
        tji_type elem = *p;
        elem.is_ptr = 0;
        NEED(p->is_ptr, "operand 1 %s is not a pointer", TXT(p, t1));
        int block = tji_is_block_ptr(p);
        NEED(!block || (c != TJI_ATOMIC && c != TJI_ATOMIC_CAS && !HAS(c == TJI_LOAD ? 1 : 2) &&
                        (c != TJI_LOAD || !HAS(2))), "a block pointer takes no mask or other");
        NEED(block ? op->boundary_check < 1u << p->rank : !op->boundary_check,
             "boundary_check %#x for a pointer %s", op->boundary_check, TXT(p, t1));
        NEED(op->padding == TJ_PADDING_ZERO ||
             (op->padding == TJ_PADDING_NAN && block && c == TJI_LOAD && is_float(&elem)),
             "padding %d for a pointer %s", (int)op->padding, TXT(p, t1));
        NEED(!R || EQ(R, &elem), "result %s for a pointer %s", TXT(R, t1), TXT(p, t2));
        if (c != TJI_LOAD)
            NEED(EQ(T(1), &elem), "value %s for a pointer %s", TXT(T(1), t1), TXT(p, t2));
        if (c == TJI_ATOMIC_CAS)
            NEED(EQ(T(2), &elem) && is_int(&elem) && tjs_dtype_bits(elem.dtype) >= 32,
                 "value %s for a pointer %s", TXT(T(2), t1), TXT(p, t2));
        int mask = c == TJI_LOAD ? 1 : 2;
        if (c != TJI_ATOMIC_CAS && HAS(mask))
            NEED(is_i1(T(mask)) && tji_same_shape(T(mask), p), "mask %s for a pointer %s",
                 TXT(T(mask), t1), TXT(p, t2));
        if (c == TJI_LOAD && HAS(2))
            NEED(EQ(T(2), &elem), "other %s for a pointer %s", TXT(T(2), t1), TXT(p, t2));
        if (op->tma_rank)
            NEED(!block && tma_block_ok(p, op) && tma_operands_ok(fn, op, elem.dtype),
                 "tma operands of a %s of %s", c == TJI_LOAD ? "load" : "store", TXT(p, t1));
        NEED((unsigned)op->cache <= TJ_CACHE_WT && (unsigned)op->evict <= TJ_EVICT_LAST,
             "cache %d, evict %d", (int)op->cache, (int)op->evict);
        if (c == TJI_ATOMIC)
            NEED((unsigned)op->atomic <= TJ_ATOMIC_XOR &&
                 (op->atomic < TJ_ATOMIC_AND || (tjs_dtype_is_int(elem.dtype) && elem.dtype != TJ_I1)),
                 "atomic op %d of %s", (int)op->atomic, TXT(p, t1));
        if (c == TJI_ATOMIC || c == TJI_ATOMIC_CAS)
            NEED((unsigned)op->sem <= TJ_SEM_RELEASE && (unsigned)op->scope <= TJ_SCOPE_SYS &&
                 !(c == TJI_ATOMIC && op->atomic >= TJ_ATOMIC_AND && op->scope == TJ_SCOPE_SYS &&
                   tjs_dtype_bits(elem.dtype) < 32), /* ops.c: LLVM would drop the scope */
                 "sem %d, scope %d of %s", (int)op->sem, (int)op->scope, TXT(p, t1));
        break;
    }
    case TJI_REDUCE: case TJI_CUMSUM: {
        const tji_type *x = T(0);
        NEED(!x->is_ptr && x->rank > 0 && op->axis >= 0 && op->axis < x->rank,
             "axis %d of %s", op->axis, TXT(x, t1));
        if (c == TJI_CUMSUM) {
            NEED(EQ(x, R) && x->dtype != TJ_I1, "%s -> %s", TXT(x, t1), TXT(R, t2));
            NEED(op->reduce == TJ_REDUCE_SUM || op->reduce == TJ_REDUCE_PROD, "scan %d", (int)op->reduce);
            break;
        }
        NEED((unsigned)op->reduce <= TJ_REDUCE_PROD, "reduction %d", (int)op->reduce);
        int arg = op->reduce == TJ_REDUCE_ARGMAX || op->reduce == TJ_REDUCE_ARGMIN;
        int ok = !R->is_ptr && R->rank == x->rank - 1 && x->dtype != TJ_I1 &&
                 R->dtype == (arg ? TJ_I32 : x->dtype);
        for (int i = 0, j = 0; ok && i < x->rank; i++)
            if (i != op->axis)
                ok = R->shape[j++] == x->shape[i];
        NEED(ok, "%s along axis %d -> %s", TXT(x, t1), op->axis, TXT(R, t2));
        break;
    }
    case TJI_DOT: {
        const tji_type *a = T(0), *b = T(1), *acc = T(2);
        int r = a->rank;
        tj_dtype in = a->dtype, out = R->dtype;
        int fp8 = is_fp8(a) && is_fp8(b); /* e4m3 and e5m2 mixed too, as Triton */
        int ok = !a->is_ptr && !b->is_ptr && EQ(acc, R) && (r == 2 || r == 3) && b->rank == r &&
                 R->rank == r && (b->dtype == in || fp8) && a->shape[r - 1] == b->shape[r - 2] &&
                 R->shape[r - 2] == a->shape[r - 2] && R->shape[r - 1] == b->shape[r - 1] &&
                 (r == 2 || (a->shape[0] == b->shape[0] && R->shape[0] == a->shape[0])) &&
                 a->shape[r - 2] >= 16 && a->shape[r - 1] >= 16 && b->shape[r - 1] >= 16;
        NEED(ok, "%s x %s -> %s", TXT(a, t1), TXT(b, t2), TXT(R, t3));
        NEED((in == TJ_F16 && (out == TJ_F32 || out == TJ_F16)) ||
             ((in == TJ_BF16 || in == TJ_F32 || fp8) && out == TJ_F32) || (in == TJ_I8 && out == TJ_I32),
             "no dot of %s giving %s", tj_dtype_name(in), tj_dtype_name(out));
        NEED((unsigned)op->precision <= TJ_PRECISION_TF32X3 &&
             (op->precision == TJ_PRECISION_IEEE || in == TJ_F32),
             "input precision %d for %s", (int)op->precision, tj_dtype_name(in));
        break;
    }
    case TJI_ASYNC_COPY: case TJI_LOCAL_LOAD: {
        const tji_type *slot = T(c == TJI_ASYNC_COPY ? 1 : 0);
        NEED(EQ(slot, &(tji_type){.dtype = TJ_I32}), "slot %s is not an i32 scalar",
             TXT(slot, t1));
        NEED(op->ring >= 0 && op->ring_slots >= 1, "ring %d of %d slots", (int)op->ring,
             (int)op->ring_slots);
        const tji_type *tile = c == TJI_LOCAL_LOAD ? R : T(0);
        NEED(tile->rank > 0 && tile->is_ptr == (c == TJI_ASYNC_COPY), "tile %s",
             TXT(tile, t1));
        if (c == TJI_ASYNC_COPY && HAS(2))
            NEED(is_i1(T(2)) && tji_same_shape(T(2), T(0)), "mask %s for a pointer %s",
                 TXT(T(2), t1), TXT(T(0), t2));
        if (op->tma_rank)
            NEED(tma_block_ok(T(0), op) && tma_operands_ok(fn, op, T(0)->dtype),
                 "tma operands of a copy of %s", TXT(T(0), t1));
        NEED((unsigned)op->cache <= TJ_CACHE_WT, "cache %d", (int)op->cache);
        break;
    }
    case TJI_ASYNC_WAIT:
        NEED(op->ival >= 0, "%lld groups in flight", (long long)op->ival);
        break;
    case TJI_FOR: {
        NEED(op->nargs >= 3 && op->nresults == op->nargs - 3, "%d operands for %d results",
             op->nargs, op->nresults);
        NEED(op->num_stages >= 0 && op->num_stages <= TJI_MAX_STAGES, "num_stages %d", op->num_stages);
        NEED(op->unroll >= 0 && op->unroll <= TJ_MAX_UNROLL, "unroll %d", op->unroll);
        for (int i = 0; i < 3; i++)
            NEED(is_int(T(i)) && T(i)->dtype != TJ_I1 && T(i)->rank == 0 && EQ(T(i), T(0)),
                 "bound %d is %s", i + 1, TXT(T(i), t1));
        for (int i = 0; i < op->nresults; i++)
            NEED(EQ(T(3 + i), tji_typeof(fn, op->result + i)), "carried value %d: %s -> %s",
                 i + 1, TXT(T(3 + i), t1), TXT(tji_typeof(fn, op->result + i), t2));
        const tji_region *body = &fn->regions[op->region[0]];
        NEED(body->nargs == op->nresults + 1 && EQ(tji_typeof(fn, body->args[0]), T(0)),
             "the body has %d arguments", body->nargs);
        for (int i = 0; i < op->nresults; i++)
            NEED(EQ(tji_typeof(fn, body->args[i + 1]), tji_typeof(fn, op->result + i)),
                 "block argument %d has the wrong type", i + 2);
        break;
    }
    case TJI_WHILE: {
        NEED(op->nresults == op->nargs, "%d operands for %d results", op->nargs, op->nresults);
        for (int i = 0; i < op->nresults; i++)
            NEED(EQ(T(i), tji_typeof(fn, op->result + i)), "carried value %d: %s -> %s", i + 1,
                 TXT(T(i), t1), TXT(tji_typeof(fn, op->result + i), t2));
        const tji_region *body = &fn->regions[op->region[0]];
        NEED(body->nargs == op->nresults, "the body has %d arguments", body->nargs);
        for (int i = 0; i < op->nresults; i++)
            NEED(EQ(tji_typeof(fn, body->args[i]), tji_typeof(fn, op->result + i)),
                 "block argument %d has the wrong type", i + 1);
        int conds = 0;
        for (int32_t i = 0; i < body->nops; i++)
            conds += body->ops[i] >= 0 && body->ops[i] < fn->nops &&
                     fn->ops[body->ops[i]].code == TJI_CONDITION;
        NEED(conds == 1, "its body has %d conditions", conds);
        break;
    }
    case TJI_CONDITION: {
        int32_t loop = op->parent >= 0 ? fn->regions[op->parent].parent_op : -1;
        NEED(loop >= 0 && fn->ops[loop].code == TJI_WHILE, "a condition outside a while body");
        NEED(op->nargs >= 1 && is_i1(T(0)) && T(0)->rank == 0, "condition %s",
             op->nargs ? TXT(T(0), t1) : "missing");
        NEED(op->nargs - 1 == fn->ops[loop].nresults, "%d values for %d results", op->nargs - 1,
             fn->ops[loop].nresults);
        for (int i = 1; i < op->nargs; i++)
            NEED(EQ(T(i), tji_typeof(fn, fn->ops[loop].result + i - 1)),
                 "value %d does not have the type of the loop's result %d", i, i);
        break;
    }
    case TJI_IF:
        NEED(is_i1(T(0)) && T(0)->rank == 0, "condition %s", TXT(T(0), t1));
        NEED(fn->regions[op->region[0]].nargs == 0 && fn->regions[op->region[1]].nargs == 0,
             "a branch has block arguments");
        break;
    case TJI_PRINT: case TJI_ASSERT:
        NEED(op->str, "no string");
        if (c == TJI_ASSERT)
            NEED(is_i1(T(0)), "condition %s", TXT(T(0), t1));
        break;
    case TJI_ASSUME_TRUE:
        NEED(is_i1(T(0)), "condition %s", TXT(T(0), t1));
        break;
    case TJI_YIELD: case TJI_ASYNC_COMMIT: case TJI_BARRIER: case TJI_OPCODE_COUNT:
        break;
    }
    /* The YIELD ending each region of a FOR, IF or WHILE matches its results. */
    for (int r = 0; has_regions && r < 2 && op->region[r] >= 0; r++) {
        const tji_region *reg = &fn->regions[op->region[r]];
        if (reg->nops == 0)
            continue; /* reported when the region is walked */
        const tji_op *y = &fn->ops[reg->ops[reg->nops - 1]];
        if (y->code != TJI_YIELD)
            continue;
        NEED(y->nargs == op->nresults, "its yield has %d values for %d results", y->nargs,
             op->nresults);
        for (int i = 0; i < y->nargs; i++)
            NEED(y->args[i] > 0 && y->args[i] <= fn->nvalues &&
                 EQ(tji_typeof(fn, y->args[i]), tji_typeof(fn, op->result + i)),
                 "yielded value %d does not have the type of result %d", i + 1, i + 1);
    }
    return 1;
#undef FAIL
#undef NEED
#undef T
#undef HAS
#undef EQ
#undef TXT
}

static int walk_region(verifier *v, int32_t region);

static int walk_op(verifier *v, int32_t region, int32_t idx, int last)
{
    const tji_func *fn = v->fn;
    if (idx < 0 || idx >= fn->nops)
        return broken(v, -1, "region %d lists op #%d, which does not exist", region, idx);
    const tji_op *op = &fn->ops[idx];
    if (v->placed[idx])
        return broken(v, idx, "the op is in a region twice");
    v->placed[idx] = 1;
    if (op->parent != region)
        return broken(v, idx, "it is in region %d but names region %d", region, op->parent);
    if (op->code == TJI_YIELD && (!last || fn->regions[region].parent_op < 0))
        return broken(v, idx, "a yield that does not end a FOR, IF or WHILE region");
    if (!check_types(v, idx))
        return 0;
    for (int i = 0; i < op->nargs; i++)
        if (op->args[i] && !v->visible[op->args[i]])
            return broken(v, idx, "operand %d (%%%d) is not defined before it in an enclosing "
                          "region", i + 1, op->args[i]);
    for (int r = 0; r < 2; r++)
        if (op->region[r] >= 0 && !walk_region(v, op->region[r]))
            return 0;
    for (int i = 0; i < op->nresults; i++)
        v->visible[op->result + i] = 1;
    return 1;
}

static int walk_region(verifier *v, int32_t region)
{
    const tji_func *fn = v->fn;
    const tji_region *r = &fn->regions[region];
    for (int i = 0; i < r->nargs; i++) {
        int32_t a = r->args[i];
        if (a <= 0 || a > fn->nvalues || fn->values[a].def_op != -1 ||
            fn->values[a].def_region != region)
            return broken(v, r->parent_op, "block argument %d of region %d is not its own",
                          i + 1, region);
        v->visible[a] = 1;
    }
    for (int32_t i = 0; i < r->nops; i++)
        if (!walk_op(v, region, r->ops[i], i == r->nops - 1))
            return 0;
    if (r->parent_op >= 0 &&
        (r->nops == 0 || fn->ops[r->ops[r->nops - 1]].code != TJI_YIELD))
        return broken(v, r->parent_op, "region %d does not end with a yield", region);
    /* What the region defined goes out of scope with it. */
    for (int i = 0; i < r->nargs; i++)
        v->visible[r->args[i]] = 0;
    for (int32_t i = 0; i < r->nops; i++) {
        const tji_op *op = &fn->ops[r->ops[i]];
        for (int k = 0; k < op->nresults; k++)
            v->visible[op->result + k] = 0;
    }
    return 1;
}

/* The tile a ring op moves: the pointees of an ASYNC_COPY, a LOCAL_LOAD's
 * result. */
static tji_type ring_tile(const tji_func *fn, const tji_op *op)
{
    tji_type t = *tji_typeof(fn, op->code == TJI_ASYNC_COPY ? op->args[0] : op->result);
    t.is_ptr = 0;
    return t;
}

/* Every ASYNC_COPY and LOCAL_LOAD of one ring (ir.h) agrees with the ring's
 * first op on the slots and the tile. */
static int rings_agree(const verifier *v)
{
    const tji_func *fn = v->fn;
    for (int32_t i = 0; i < fn->nops; i++) {
        const tji_op *op = &fn->ops[i];
        if (!v->placed[i] || (op->code != TJI_ASYNC_COPY && op->code != TJI_LOCAL_LOAD))
            continue;
        int32_t first = 0;
        while (!v->placed[first] || fn->ops[first].ring != op->ring ||
               (fn->ops[first].code != TJI_ASYNC_COPY && fn->ops[first].code != TJI_LOCAL_LOAD))
            first++;
        tji_type a = ring_tile(fn, op), b = ring_tile(fn, &fn->ops[first]);
        if (fn->ops[first].ring_slots != op->ring_slots || !tji_type_equal(&a, &b))
            return broken(v, i, "ring %d: %d slots of another tile than op #%d's %d",
                          (int)op->ring, (int)op->ring_slots, first,
                          (int)fn->ops[first].ring_slots);
    }
    return 1;
}

tj_status tji_verify(const tji_func *fn)
{
    if (!fn)
        return tjs_error(TJ_ERR_BUILD, "internal error: verifier: no function");
    verifier v = {.fn = fn};
    if (fn->nregions < 1 || fn->regions[0].parent_op != -1)
        return broken(&v, -1, "region 0 is not the kernel body"), TJ_ERR_BUILD;
    if (fn->regions[0].nargs != fn->nparams)
        return broken(&v, -1, "%d parameters, %d body arguments", fn->nparams,
                      fn->regions[0].nargs), TJ_ERR_BUILD;
    for (int i = 0; i < fn->nparams; i++) {
        const tji_param *p = &fn->params[i];
        const tji_type *t = p->value > 0 && p->value <= fn->nvalues
                                ? tji_typeof(fn, p->value) : NULL;
        if (p->value != fn->regions[0].args[i] || !t || t->rank != 0 ||
            t->dtype != p->dtype || t->is_ptr != (p->is_ptr != 0))
            return broken(&v, -1, "parameter %d '%s' does not match its value", i + 1,
                          p->name ? p->name : "?"), TJ_ERR_BUILD;
    }
    for (int32_t id = 1; id <= fn->nvalues; id++) {
        const tji_value *val = &fn->values[id];
        char text[64];
        if (!type_valid(&val->type))
            return broken(&v, -1, "value %%%d has an invalid type (%s)", id,
                          type_text(&val->type, text, sizeof text)), TJ_ERR_BUILD;
        if (fn->block_ptrs_lowered && tji_is_block_ptr(&val->type))
            return broken(&v, -1, "value %%%d is a block pointer after they were lowered "
                          "(tjp_lower_block_ptrs)", id), TJ_ERR_BUILD;
        if (val->def_op < -1 || val->def_op >= fn->nops ||
            (val->def_op < 0 && (val->def_region < 0 || val->def_region >= fn->nregions)))
            return broken(&v, -1, "value %%%d has no definition", id), TJ_ERR_BUILD;
    }
    v.visible = tjs_xcalloc((size_t)fn->nvalues + 1, 1);
    v.placed = tjs_xcalloc((size_t)fn->nops + 1, 1);
    int ok = walk_region(&v, 0) && rings_agree(&v);
    free(v.visible);
    free(v.placed);
    return ok ? TJ_OK : TJ_ERR_BUILD;
}
