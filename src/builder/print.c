/* SPDX-License-Identifier: MIT */
/*
 * print.c — the tile IR as text, for TJIT_DUMP=ir, tj_kernel_ir() and tests.
 *
 * The format reads like MLIR: one op a line, "%id = name operands,
 * attributes : result type", with the user's source line as a trailing
 * comment, and regions as indented blocks in braces:
 *
 *   kernel add(%1 x: *f32, %2 n: i32) [BLOCK=1024] {
 *     %3 = program_id 0 : i32                          // add.c:12
 *     %6 = add %4, %5 : f32[1024]                      // add.c:14
 *     %9 = for %10 = %7 to %8 step %3 : i32 iter_args(%11 = %6) -> (f32[1024]) {
 *       yield %11
 *     }
 *   }
 *
 * Values are printed by id, and an absent optional operand as "_", so the
 * text is a faithful picture of the arrays in tji_func (the printer never
 * hides an op), which is what a reader debugging a pass needs. Constants are
 * printed with the fewest digits that read back to the same value of their
 * dtype.
 *
 * Later stages annotate the text through tji_text_hooks (ir.h) without the
 * IR knowing what they add: the GPU layout plan prints "#L1 = linear<...>"
 * lines ahead of the kernel, " #L1" after each tile value's type and
 * " #access<...>" / " #shared<...>" after memory ops (src/passes/plan_text.c).
 * parse.c reads all of it back, so print(parse(print(ir))) == print(ir).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

#define COMMENT_COLUMN 56

/* "f32[64x32]", "*f32", and a block pointer "bptr<f32[64x32]>". */
void tji_print_type(tjs_buf *b, const tji_type *t)
{
    int block = tji_is_block_ptr(t);
    tjs_buf_printf(b, "%s%s", block ? "bptr<" : t->is_ptr ? "*" : "", tj_dtype_name(t->dtype));
    if (t->rank > 0) {
        tjs_buf_printf(b, "[");
        for (int i = 0; i < t->rank && i < TJ_MAX_RANK; i++)
            tjs_buf_printf(b, "%s%d", i ? "x" : "", t->shape[i]);
        tjs_buf_printf(b, "]");
    }
    if (block)
        tjs_buf_printf(b, ">");
}

static void print_value(tjs_buf *b, int32_t id)
{
    if (id)
        tjs_buf_printf(b, "%%%d", id);
    else
        tjs_buf_printf(b, "_");
}

static void print_values(tjs_buf *b, const int32_t *ids, int n)
{
    for (int i = 0; i < n; i++) {
        tjs_buf_printf(b, "%s", i ? ", " : "");
        print_value(b, ids[i]);
    }
}

/* ", tma(base, shape..., strides..., offsets...[, exists])" of a LOAD,
 * STORE or ASYNC_COPY that carries its tensor (ir.h). */
static void print_tma(tjs_buf *b, const tji_op *op)
{
    if (!op->tma_rank || op->nargs <= TJI_TMA_FIRST)
        return;
    tjs_buf_printf(b, ", tma(");
    print_values(b, op->args + TJI_TMA_FIRST, op->nargs - TJI_TMA_FIRST);
    tjs_buf_printf(b, ")");
}

/* Do a and b name the same value of float dtype dt? */
static int same_float(tj_dtype dt, double a, double b)
{
    if (dt == TJ_F64)
        return a == b;
    float fa = (float)a, fb = (float)b;
    if (dt == TJ_F16)
        return tj_f32_to_f16(fa) == tj_f32_to_f16(fb);
    if (dt == TJ_BF16)
        return tj_f32_to_bf16(fa) == tj_f32_to_bf16(fb);
    if (dt == TJ_F8E4M3)
        return tj_f32_to_f8e4m3(fa) == tj_f32_to_f8e4m3(fb);
    if (dt == TJ_F8E5M2)
        return tj_f32_to_f8e5m2(fa) == tj_f32_to_f8e5m2(fb);
    return fa == fb;
}

static void print_const(tjs_buf *b, const tji_op *op, tj_dtype dt)
{
    if (dt == TJ_I1)
        tjs_buf_printf(b, "%s", op->ival ? "true" : "false");
    else if (tjs_dtype_is_signed(dt))
        tjs_buf_printf(b, "%lld", (long long)op->ival);
    else if (tjs_dtype_is_int(dt))
        tjs_buf_printf(b, "%llu", (unsigned long long)(uint64_t)op->ival);
    else if (isnan(op->fval))
        tjs_buf_printf(b, "nan");
    else if (isinf(op->fval))
        tjs_buf_printf(b, "%sinf", op->fval < 0 ? "-" : "");
    else if (op->fval == floor(op->fval) && fabs(op->fval) < 0x1p53)
        tjs_buf_printf(b, "%.0f", op->fval);
    else {
        char text[40];
        for (int digits = 1; digits <= 17; digits++) {
            snprintf(text, sizeof text, "%.*g", digits, op->fval);
            if (same_float(dt, strtod(text, NULL), op->fval))
                break;
        }
        /* "2e+03" reads back as the integer 2000, printed as such: so the
         * text prints the same once parsed */
        double shortest = strtod(text, NULL);
        if (shortest == floor(shortest) && fabs(shortest) < 0x1p53)
            tjs_buf_printf(b, "%.0f", shortest);
        else
            tjs_buf_printf(b, "%s", text);
    }
}

static void print_string(tjs_buf *b, const char *s)
{
    tjs_buf_printf(b, "\"");
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\')
            tjs_buf_printf(b, "\\%c", *p);
        else if (*p == '\n')
            tjs_buf_printf(b, "\\n");
        else if (*p < 0x20 || *p >= 0x7f)
            tjs_buf_printf(b, "\\x%02x", *p);
        else
            tjs_buf_printf(b, "%c", *p);
    }
    tjs_buf_printf(b, "\"");
}

static const char *pred_name(tji_pred p)
{
    static const char *const names[] = {"eq", "ne", "lt", "le", "gt", "ge"};
    return (unsigned)p < 6 ? names[p] : "?";
}

/* An atomic's .sem and .scope where they are not the defaults (acq_rel, gpu). */
static void print_atomic_order(tjs_buf *b, const tji_op *op)
{
    static const char *const sems[] = {"", ".relaxed", ".acquire", ".release"};
    static const char *const scopes[] = {"", ".cta", ".sys"};
    tjs_buf_printf(b, "%s%s", (unsigned)op->sem <= TJ_SEM_RELEASE ? sems[op->sem] : ".?",
                   (unsigned)op->scope <= TJ_SCOPE_SYS ? scopes[op->scope] : ".?");
}

static void print_mem_attrs(tjs_buf *b, const tji_op *op)
{
    static const char *const caches[] = {"", "ca", "cg", "cs", "lu", "cv", "wb", "wt"};
    static const char *const evicts[] = {"", "first", "last"};
    if (op->cache > TJ_CACHE_DEFAULT && op->cache <= TJ_CACHE_WT)
        tjs_buf_printf(b, ", cache %s", caches[op->cache]);
    if (op->evict > TJ_EVICT_NORMAL && op->evict <= TJ_EVICT_LAST)
        tjs_buf_printf(b, ", evict %s", evicts[op->evict]);
    if (op->is_volatile)
        tjs_buf_printf(b, ", volatile");
    if (op->boundary_check) {
        tjs_buf_printf(b, ", boundary_check [");
        for (int d = 0, n = 0; d < 32; d++)
            if (op->boundary_check >> d & 1)
                tjs_buf_printf(b, "%s%d", n++ ? ", " : "", d);
        tjs_buf_printf(b, "]");
    }
    if (op->padding == TJ_PADDING_NAN)
        tjs_buf_printf(b, ", padding nan");
}

/* The annotations a later stage adds (tji_text_hooks). */
static void hook_value(tjs_buf *b, const tji_func *fn, const tji_text_hooks *h, int32_t id)
{
    if (h && h->print_value)
        h->print_value(h->ctx, b, fn, id);
}

static void hook_op(tjs_buf *b, const tji_func *fn, const tji_text_hooks *h, const tji_op *op)
{
    if (h && h->print_op)
        h->print_op(h->ctx, b, fn, (int32_t)(op - fn->ops));
}

static void print_result_types(tjs_buf *b, const tji_func *fn, const tji_text_hooks *h,
                               const tji_op *op)
{
    tjs_buf_printf(b, " -> (");
    for (int i = 0; i < op->nresults; i++) {
        tjs_buf_printf(b, "%s", i ? ", " : "");
        tji_print_type(b, tji_typeof(fn, op->result + i));
        hook_value(b, fn, h, op->result + i);
    }
    tjs_buf_printf(b, ")");
}

static int32_t arg(const tji_op *op, int i) { return i < op->nargs ? op->args[i] : 0; }

/* " iter_args(%a = %init, ...)": a FOR's operands from 3 on (its body's
 * arguments from 1), a WHILE's from 0 (from 0). */
static void print_iter_args(tjs_buf *b, const tji_func *fn, const tji_text_hooks *h,
                            const tji_op *op, const tji_region *body, int first)
{
    if (op->nargs <= first)
        return;
    int shift = first ? first - 1 : 0; /* operand i is body argument i - shift */
    tjs_buf_printf(b, " iter_args(");
    for (int i = first; i < op->nargs; i++) {
        tjs_buf_printf(b, "%s", i > first ? ", " : "");
        if (body && i - shift < body->nargs)
            tjs_buf_printf(b, "%%%d = ", body->args[i - shift]);
        print_value(b, op->args[i]);
        if (body && i - shift < body->nargs)
            hook_value(b, fn, h, body->args[i - shift]);
    }
    tjs_buf_printf(b, ")");
}

/* The op's line, without indentation, comment or region bodies. */
static void print_op_text(tjs_buf *b, const tji_func *fn, const tji_text_hooks *h,
                          const tji_op *op)
{
    for (int i = 0; i < op->nresults; i++)
        tjs_buf_printf(b, "%s%%%d", i ? ", " : "", op->result + i);
    if (op->nresults)
        tjs_buf_printf(b, " = ");
    tjs_buf_printf(b, "%s%s%s", tji_opcode_name(op->code), op->approx ? ".fast" : "",
                   op->propagate_nan ? ".propagate_nan" : "");
    if (op->code == TJI_DOT && op->precision != TJ_PRECISION_IEEE)
        tjs_buf_printf(b, ".%s", op->precision == TJ_PRECISION_TF32 ? "tf32" : "tf32x3");
    if (op->code == TJI_ATOMIC_CAS)
        print_atomic_order(b, op);
    if (op->code == TJI_FOR && op->num_stages)
        tjs_buf_printf(b, ".stages%d", op->num_stages);
    if (op->code == TJI_FOR && op->unroll)
        tjs_buf_printf(b, ".unroll%d", op->unroll);
    if (op->code == TJI_FOR && op->tile_loop)
        tjs_buf_printf(b, ".tiles");
    if (op->code == TJI_CAST && op->round_to_zero)
        tjs_buf_printf(b, ".rtz");
    if (op->code == TJI_INLINE_ASM && op->asm_pack > 1)
        tjs_buf_printf(b, ".pack%d", op->asm_pack);
    if (op->code == TJI_INLINE_ASM && op->is_volatile)
        tjs_buf_printf(b, ".volatile");

    const tji_type *rt = op->nresults == 1 ? tji_typeof(fn, op->result) : NULL;
    switch (op->code) {
    case TJI_CONST:
        tjs_buf_printf(b, " ");
        if (rt)
            print_const(b, op, rt->dtype);
        break;
    case TJI_PROGRAM_ID: case TJI_NUM_PROGRAMS:
        tjs_buf_printf(b, " %d", op->axis);
        break;
    case TJI_ARANGE:
        tjs_buf_printf(b, " %lld, %lld", (long long)op->ival,
                       (long long)(op->ival + (rt && rt->rank ? rt->shape[0] : 0)));
        break;
    case TJI_ASSUME: {
        static const char *const facts[] = {"multiple_of", "max_contiguous", "max_constancy"};
        tjs_buf_printf(b, ".%s ", (unsigned)op->assume <= TJI_ASSUME_CONSTANCY ? facts[op->assume] : "?");
        print_value(b, arg(op, 0));
        tjs_buf_printf(b, ", %lld", (long long)op->ival);
        break;
    }
    case TJI_EXPAND_DIMS: case TJI_CUMSUM:
        tjs_buf_printf(b, op->code == TJI_CUMSUM && op->reduce == TJ_REDUCE_PROD ? ".prod " : " ");
        print_value(b, arg(op, 0));
        tjs_buf_printf(b, ", axis %d", op->axis);
        break;
    case TJI_PERMUTE: case TJI_MAKE_BLOCK_PTR:
        tjs_buf_printf(b, " ");
        print_values(b, op->args, op->nargs);
        tjs_buf_printf(b, op->code == TJI_PERMUTE ? ", [" : ", order [");
        for (int i = 0; rt && i < rt->rank; i++)
            tjs_buf_printf(b, "%s%d", i ? ", " : "", op->perm[i]);
        tjs_buf_printf(b, "]");
        break;
    case TJI_CMP:
        tjs_buf_printf(b, ".%s ", pred_name(op->pred));
        print_values(b, op->args, op->nargs);
        break;
    case TJI_BITCAST: case TJI_CAST:
        tjs_buf_printf(b, " ");
        print_value(b, arg(op, 0));
        if (rt && arg(op, 0) > 0 && arg(op, 0) <= fn->nvalues) {
            tjs_buf_printf(b, " : ");
            tji_print_type(b, tji_typeof(fn, arg(op, 0)));
            tjs_buf_printf(b, " -> ");
            tji_print_type(b, rt);
            hook_value(b, fn, h, op->result);
            hook_op(b, fn, h, op);
            return;
        }
        break;
    case TJI_LOAD: case TJI_STORE: case TJI_ATOMIC: {
        if (op->code == TJI_ATOMIC) {
            static const char *const ops[] = {"add", "max", "min", "xchg", "and", "or", "xor"};
            tjs_buf_printf(b, ".%s", (unsigned)op->atomic <= TJ_ATOMIC_XOR ? ops[op->atomic] : "?");
            print_atomic_order(b, op);
        }
        int load = op->code == TJI_LOAD, leading = load ? 1 : 2; /* ptr (, value) */
        tjs_buf_printf(b, " ");
        print_values(b, op->args, op->nargs < leading ? op->nargs : leading);
        if (arg(op, load ? 1 : 2)) {
            tjs_buf_printf(b, ", mask ");
            print_value(b, arg(op, load ? 1 : 2));
        }
        if (load && arg(op, 2)) {
            tjs_buf_printf(b, ", other ");
            print_value(b, arg(op, 2));
        }
        print_tma(b, op);
        print_mem_attrs(b, op);
        break;
    }
    case TJI_ASYNC_COPY: case TJI_LOCAL_LOAD: {
        int copy = op->code == TJI_ASYNC_COPY;
        tjs_buf_printf(b, " ");
        print_values(b, op->args, copy ? (op->nargs < 2 ? op->nargs : 2) : op->nargs);
        if (copy && arg(op, 2)) {
            tjs_buf_printf(b, ", mask ");
            print_value(b, arg(op, 2));
        }
        print_tma(b, op);
        tjs_buf_printf(b, ", ring %d, slots %d", (int)op->ring, (int)op->ring_slots);
        print_mem_attrs(b, op);
        break;
    }
    case TJI_ASYNC_WAIT:
        tjs_buf_printf(b, " %lld", (long long)op->ival);
        break;
    case TJI_REDUCE: {
        static const char *const ops[] = {"sum", "max", "min", "argmax", "argmin", "prod"};
        tjs_buf_printf(b, ".%s ", (unsigned)op->reduce <= TJ_REDUCE_PROD ? ops[op->reduce]
                                                                          : "?");
        print_value(b, arg(op, 0));
        tjs_buf_printf(b, ", axis %d", op->axis);
        break;
    }
    case TJI_FOR: {
        const tji_region *body = op->region[0] >= 0 ? &fn->regions[op->region[0]] : NULL;
        tjs_buf_printf(b, " ");
        if (body && body->nargs)
            tjs_buf_printf(b, "%%%d = ", body->args[0]);
        print_value(b, arg(op, 0));
        tjs_buf_printf(b, " to ");
        print_value(b, arg(op, 1));
        tjs_buf_printf(b, " step ");
        print_value(b, arg(op, 2));
        if (arg(op, 0) > 0 && arg(op, 0) <= fn->nvalues) {
            tjs_buf_printf(b, " : ");
            tji_print_type(b, tji_typeof(fn, arg(op, 0)));
        }
        print_iter_args(b, fn, h, op, body, 3);
        if (op->nresults)
            print_result_types(b, fn, h, op);
        hook_op(b, fn, h, op);
        tjs_buf_printf(b, " {");
        return;
    }
    case TJI_WHILE:
        print_iter_args(b, fn, h, op, op->region[0] >= 0 ? &fn->regions[op->region[0]] : NULL, 0);
        if (op->nresults)
            print_result_types(b, fn, h, op);
        hook_op(b, fn, h, op);
        tjs_buf_printf(b, " {");
        return;
    case TJI_IF:
        tjs_buf_printf(b, " ");
        print_value(b, arg(op, 0));
        if (op->nresults)
            print_result_types(b, fn, h, op);
        hook_op(b, fn, h, op);
        tjs_buf_printf(b, " {");
        return;
    case TJI_INLINE_ASM:
        tjs_buf_printf(b, " ");
        print_string(b, op->str);
        tjs_buf_printf(b, ", ");
        print_string(b, op->constraints);
        if (op->nargs)
            tjs_buf_printf(b, ", ");
        print_values(b, op->args, op->nargs);
        break;
    case TJI_PRINT:
        tjs_buf_printf(b, " ");
        print_string(b, op->str);
        tjs_buf_printf(b, ", ");
        print_value(b, arg(op, 0));
        break;
    case TJI_ASSERT:
        tjs_buf_printf(b, " ");
        print_value(b, arg(op, 0));
        tjs_buf_printf(b, ", ");
        print_string(b, op->str);
        break;
    default:
        if (op->nargs)
            tjs_buf_printf(b, " ");
        print_values(b, op->args, op->nargs);
        break;
    }
    if (rt) {
        tjs_buf_printf(b, " : ");
        tji_print_type(b, rt);
        hook_value(b, fn, h, op->result);
    }
    hook_op(b, fn, h, op);
}

static void indent(tjs_buf *b, int depth)
{
    tjs_buf_printf(b, "%*s", depth * 2, "");
}

static void print_region(tjs_buf *b, const tji_func *fn, const tji_text_hooks *h,
                         int32_t region, int depth);

static void print_op(tjs_buf *b, const tji_func *fn, const tji_text_hooks *h, int32_t idx,
                     int depth)
{
    const tji_op *op = &fn->ops[idx];
    size_t start = b->len;
    indent(b, depth);
    print_op_text(b, fn, h, op);
    if (op->loc.line > 0) {
        size_t width = b->len - start;
        const char *file = op->loc.file ? op->loc.file : "?";
        const char *slash = strrchr(file, '/');
        tjs_buf_printf(b, "%*s// %s:%d", width < COMMENT_COLUMN ? (int)(COMMENT_COLUMN - width)
                                                                 : 2, "",
                       slash ? slash + 1 : file, op->loc.line);
    }
    tjs_buf_printf(b, "\n");
    if (op->code != TJI_FOR && op->code != TJI_IF && op->code != TJI_WHILE)
        return;
    if (op->region[0] >= 0)
        print_region(b, fn, h, op->region[0], depth + 1);
    int32_t other = op->code == TJI_IF ? op->region[1] : -1;
    if (other >= 0) {
        const tji_region *r = &fn->regions[other];
        /* an else that only yields nothing says nothing */
        int empty = r->nops == 0 || (r->nops == 1 && fn->ops[r->ops[0]].code == TJI_YIELD &&
                                     fn->ops[r->ops[0]].nargs == 0);
        if (!empty) {
            indent(b, depth);
            tjs_buf_printf(b, "} else {\n");
            print_region(b, fn, h, other, depth + 1);
        }
    }
    indent(b, depth);
    tjs_buf_printf(b, "}\n");
}

static void print_region(tjs_buf *b, const tji_func *fn, const tji_text_hooks *h,
                         int32_t region, int depth)
{
    const tji_region *r = &fn->regions[region];
    for (int32_t i = 0; i < r->nops; i++)
        print_op(b, fn, h, r->ops[i], depth);
}

char *tji_print(const tji_func *fn)
{
    return tji_print_with(fn, NULL);
}

char *tji_print_with(const tji_func *fn, const tji_text_hooks *h)
{
    tjs_buf b = {0};
    if (h && h->print_header)
        h->print_header(h->ctx, &b, fn);
    tjs_buf_printf(&b, "kernel %s(", fn->name);
    for (int i = 0; i < fn->nparams; i++) {
        const tji_param *p = &fn->params[i];
        tjs_buf_printf(&b, "%s%%%d %s: ", i ? ", " : "", p->value, p->name);
        tji_print_type(&b, tji_typeof(fn, p->value));
        hook_value(&b, fn, h, p->value);
    }
    tjs_buf_printf(&b, ")");
    for (int i = 0; i < fn->nconsts; i++)
        tjs_buf_printf(&b, "%s%s=%lld", i ? ", " : " [", fn->const_names[i],
                       (long long)fn->const_values[i]);
    tjs_buf_printf(&b, "%s {\n", fn->nconsts ? "]" : "");
    if (fn->nregions > 0)
        print_region(&b, fn, h, 0, 1);
    tjs_buf_printf(&b, "}\n");
    return b.data;
}
