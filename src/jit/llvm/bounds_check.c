/* SPDX-License-Identifier: MIT */
/*
 * bounds_check.c — the bounds-checked mode's code: the checks both back ends
 * emit into a kernel, and the message the launcher makes of a violation.
 *
 * The checks are LLVM IR that either back end emits at each access (the
 * design is in bounds.h). For an access of n bytes at address a whose
 * pointer may point into the buffers of parameters P (provenance.c):
 *
 *     in(p)  = (a - base_p) <u size_p  &&  size_p - (a - base_p) >=u n
 *     ok     = OR over p in P of in(p)
 *     cond'  = cond && ok                  the access is performed only then
 *     bad    = cond && !ok                 a violation to record
 *
 * Unsigned arithmetic makes one comparison catch both ends: an address
 * below the base wraps to a huge offset. The violation is reported against
 * the buffer it misses by the fewest bytes (for one candidate: that one),
 * at the first element outside it (for a vector access that straddles the
 * end, not the vector's first element, which is inside). A pointer that
 * may be made from an integer (tj_int_to_ptr) is not checked: it may
 * point into memory that no parameter of the launch holds.
 *
 * A back end may check several accesses of one op (the registers of a GPU
 * thread) and flush once: the pending violation is the first bad access in
 * emission order, kept by selects, and the flush is one branch to a
 * compare-and-swap of the record's `failed` word from 0 to 1; the winner
 * writes op, program, parameter, offset and size. On the CPU the record is
 * tjj_cpu_rt.bounds, read when the launch returns; on a GPU the assert
 * record, read at the next synchronize.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "llvm_shared.h"

struct tjj_bounds_gen {
    const tji_func *fn;
    tjp_provenance prov;
    LLVMContextRef ctx;
    tjj_llvm_types ty;           /* llvm_shared.h */
    LLVMValueRef *base;          /* per parameter: its address as i64; NULL for scalars */
    LLVMValueRef *size;          /* per parameter: its buffer's bytes (i64) */
    LLVMValueRef record;         /* the tjj_gpu_assert to fill */
    LLVMValueRef pid[3];
    int gpu;
    unsigned scope;              /* GPU: sync scope of the compare-and-swap */
    /* the first violation checked since the last flush */
    LLVMValueRef bad, param, offset, buffer_size;
};

static tjj_bounds_gen *new_gen(const tji_func *fn, LLVMContextRef ctx, LLVMBuilderRef b, LLVMValueRef *ssa,
                               const LLVMValueRef pid[3])
{
    tjj_bounds_gen *bg = tjs_xcalloc(1, sizeof *bg);
    bg->fn = fn;
    bg->ctx = ctx;
    tjj_llvm_types_init(&bg->ty, ctx);
    tjp_find_provenance(fn, &bg->prov);
    bg->base = tjs_xcalloc((size_t)fn->nparams + 1, sizeof *bg->base);
    bg->size = tjs_xcalloc((size_t)fn->nparams + 1, sizeof *bg->size);
    for (int i = 0; i < fn->nparams; i++) {
        int32_t id = fn->params[i].value;
        if (fn->params[i].is_ptr && id > 0 && id <= fn->nvalues && ssa[id])
            bg->base[i] = LLVMBuildPtrToInt(b, ssa[id], bg->ty.t_i64, "buffer.base");
    }
    for (int k = 0; k < 3; k++)
        bg->pid[k] = pid[k];
    return bg;
}

/* The field of type t at byte offset off of the struct at p, loaded. */
static LLVMValueRef load_field(tjj_bounds_gen *bg, LLVMBuilderRef b, LLVMTypeRef t, LLVMValueRef p,
                               size_t off)
{
    LLVMValueRef o = LLVMConstInt(bg->ty.t_i64, off, 0);
    LLVMValueRef at = LLVMBuildInBoundsGEP2(b, bg->ty.t_i8, p, &o, 1, "");
    LLVMValueRef v = LLVMBuildLoad2(b, t, at, "");
    LLVMSetAlignment(v, 8);
    return v;
}

tjj_bounds_gen *tjj_bounds_new_cpu(const tji_func *fn, LLVMContextRef ctx, LLVMBuilderRef b,
                                   LLVMValueRef *ssa, LLVMValueRef rt, const LLVMValueRef pid[3])
{
    tjj_bounds_gen *bg = new_gen(fn, ctx, b, ssa, pid);
    LLVMTypeRef t_ptr = LLVMPointerTypeInContext(ctx, 0);
    LLVMValueRef sizes = load_field(bg, b, t_ptr, rt, offsetof(tjj_cpu_rt, buffer_sizes));
    for (int i = 0; i < fn->nparams; i++) {
        if (!bg->base[i])
            continue;
        bg->size[i] = load_field(bg, b, bg->ty.t_i64, sizes, (size_t)i * sizeof(uint64_t));
        LLVMSetValueName2(bg->size[i], "buffer.size", 11);
    }
    bg->record = load_field(bg, b, t_ptr, rt, offsetof(tjj_cpu_rt, bounds));
    return bg;
}

tjj_bounds_gen *tjj_bounds_new_gpu(const tji_func *fn, LLVMContextRef ctx, LLVMBuilderRef b,
                                   LLVMValueRef *ssa, LLVMValueRef func, unsigned first_size,
                                   LLVMValueRef record, const LLVMValueRef pid[3], unsigned scope)
{
    tjj_bounds_gen *bg = new_gen(fn, ctx, b, ssa, pid);
    unsigned k = first_size;
    for (int i = 0; i < fn->nparams; i++)
        if (fn->params[i].is_ptr)
            bg->size[i] = LLVMGetParam(func, k++);
    bg->record = record;
    bg->gpu = 1;
    bg->scope = scope;
    return bg;
}

void tjj_bounds_free(tjj_bounds_gen *bg)
{
    if (!bg)
        return;
    tjp_provenance_free(&bg->prov);
    free(bg->base);
    free(bg->size);
    free(bg);
}

int tjj_bounds_nbuffers(const tji_func *fn)
{
    int n = 0;
    for (int i = 0; i < fn->nparams; i++)
        n += fn->params[i].is_ptr != 0;
    return n;
}

static LLVMValueRef i64c(const tjj_bounds_gen *bg, uint64_t v) { return LLVMConstInt(bg->ty.t_i64, v, 0); }

LLVMValueRef tjj_bounds_check(tjj_bounds_gen *bg, LLVMBuilderRef b, int32_t ptr_id, LLVMValueRef addr,
                              uint64_t bytes, uint64_t elem_bytes, LLVMValueRef cond)
{
    if (tjp_provenance_from_int(&bg->prov, ptr_id)) /* it may point anywhere: no buffer to check */
        return cond ? cond : LLVMConstInt(bg->ty.t_i1, 1, 0);
    LLVMValueRef a = LLVMBuildPtrToInt(b, addr, bg->ty.t_i64, "");
    LLVMValueRef n = i64c(bg, bytes);
    LLVMValueRef ok = NULL, param = NULL, offset = NULL, size = NULL, dist = NULL;
    for (int i = 0; i < bg->fn->nparams; i++) {
        if (!bg->base[i] || !tjp_provenance_has(&bg->prov, ptr_id, i))
            continue;
        LLVMValueRef off = LLVMBuildSub(b, a, bg->base[i], "");
        LLVMValueRef sz = bg->size[i];
        LLVMValueRef in = LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntULT, off, sz, ""),
                                       LLVMBuildICmp(b, LLVMIntUGE, LLVMBuildSub(b, sz, off, ""), n, ""), "");
        /* bytes by which the access misses the buffer (0 if it straddles the end) */
        LLVMValueRef d = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, off, i64c(bg, 0), ""),
                                         LLVMBuildNeg(b, off, ""),
                                         LLVMBuildSub(b, LLVMBuildAdd(b, off, n, ""), sz, ""), "");
        LLVMValueRef p = LLVMConstInt(bg->ty.t_i32, (unsigned long long)i, 0);
        if (!ok) {
            ok = in, param = p, offset = off, size = sz, dist = d;
            continue;
        }
        ok = LLVMBuildOr(b, ok, in, "");
        LLVMValueRef better = LLVMBuildICmp(b, LLVMIntULT, d, dist, "");
        param = LLVMBuildSelect(b, better, p, param, "");
        offset = LLVMBuildSelect(b, better, off, offset, "");
        size = LLVMBuildSelect(b, better, sz, size, "");
        dist = LLVMBuildSelect(b, better, d, dist, "");
    }
    if (!ok) { /* a pointer of no buffer parameter: nothing is in bounds */
        ok = LLVMConstInt(bg->ty.t_i1, 0, 0);
        param = LLVMConstInt(bg->ty.t_i32, UINT32_MAX, 0);
        offset = a;
        size = i64c(bg, 0);
    } else if (bytes > elem_bytes && elem_bytes > 0) {
        /* a vector straddling the end: report its first element outside */
        LLVMValueRef e = i64c(bg, elem_bytes);
        LLVMValueRef inside = LLVMBuildSub(b, size, offset, "");
        LLVMValueRef first_out = LLVMBuildAdd(
            b, offset,
            LLVMBuildMul(b, LLVMBuildUDiv(b, LLVMBuildAdd(b, inside, i64c(bg, elem_bytes - 1), ""), e, ""), e, ""), "");
        offset = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntULT, offset, size, ""), first_out, offset, "");
    }
    LLVMValueRef bad = LLVMBuildNot(b, ok, "");
    if (cond)
        bad = LLVMBuildAnd(b, cond, bad, "");
    if (!bg->bad) {
        bg->bad = bad, bg->param = param, bg->offset = offset, bg->buffer_size = size;
    } else {
        LLVMValueRef earlier = bg->bad;
        bg->param = LLVMBuildSelect(b, earlier, bg->param, param, "");
        bg->offset = LLVMBuildSelect(b, earlier, bg->offset, offset, "");
        bg->buffer_size = LLVMBuildSelect(b, earlier, bg->buffer_size, size, "");
        bg->bad = LLVMBuildOr(b, earlier, bad, "");
    }
    return cond ? LLVMBuildAnd(b, cond, ok, "") : ok;
}

static void store_field(tjj_bounds_gen *bg, LLVMBuilderRef b, size_t off, LLVMValueRef v, unsigned align)
{
    LLVMValueRef o = i64c(bg, off);
    LLVMValueRef st = LLVMBuildStore(b, v, LLVMBuildInBoundsGEP2(b, bg->ty.t_i8, bg->record, &o, 1, ""));
    LLVMSetAlignment(st, align);
    if (bg->gpu)
        LLVMSetVolatile(st, 1);
}

void tjj_bounds_flush(tjj_bounds_gen *bg, LLVMBuilderRef b, int32_t op)
{
    LLVMValueRef bad = bg->bad;
    bg->bad = NULL;
    if (!bad || (LLVMIsAConstantInt(bad) && !LLVMConstIntGetZExtValue(bad)))
        return;
    LLVMValueRef func = LLVMGetBasicBlockParent(LLVMGetInsertBlock(b));
    LLVMBasicBlockRef report = LLVMAppendBasicBlockInContext(bg->ctx, func, "bounds.fail");
    LLVMBasicBlockRef write = LLVMAppendBasicBlockInContext(bg->ctx, func, "bounds.record");
    LLVMBasicBlockRef cont = LLVMAppendBasicBlockInContext(bg->ctx, func, "bounds.ok");
    LLVMBuildCondBr(b, bad, report, cont);
    LLVMPositionBuilderAtEnd(b, report);
    LLVMValueRef zero = LLVMConstInt(bg->ty.t_i32, 0, 0), one = LLVMConstInt(bg->ty.t_i32, 1, 0);
    LLVMValueRef pair =
        bg->gpu ? LLVMBuildAtomicCmpXchgSyncScope(b, bg->record, zero, one, LLVMAtomicOrderingAcquireRelease,
                                                  LLVMAtomicOrderingMonotonic, bg->scope)
                : LLVMBuildAtomicCmpXchg(b, bg->record, zero, one, LLVMAtomicOrderingSequentiallyConsistent,
                                         LLVMAtomicOrderingSequentiallyConsistent, 0);
    LLVMBuildCondBr(b, LLVMBuildExtractValue(b, pair, 1, ""), write, cont);
    LLVMPositionBuilderAtEnd(b, write);
    store_field(bg, b, offsetof(tjj_gpu_assert, op), LLVMConstInt(bg->ty.t_i32, (unsigned long long)op, 0), 4);
    for (int k = 0; k < 3; k++)
        store_field(bg, b, offsetof(tjj_gpu_assert, pid) + 4 * (size_t)k, bg->pid[k], 4);
    store_field(bg, b, offsetof(tjj_gpu_assert, param), bg->param, 4);
    store_field(bg, b, offsetof(tjj_gpu_assert, offset), bg->offset, 8);
    store_field(bg, b, offsetof(tjj_gpu_assert, size), bg->buffer_size, 8);
    LLVMBuildBr(b, cont);
    LLVMPositionBuilderAtEnd(b, cont);
}

/* --- the launcher's side ------------------------------------------------------- */

int tjj_bounds_wanted(tj_check_bounds option)
{
    if (option == TJ_CHECK_BOUNDS_ON)
        return 1;
    if (option == TJ_CHECK_BOUNDS_OFF)
        return 0;
    const char *env = getenv("TJIT_CHECK_BOUNDS");
    return env && *env && strcmp(env, "0") != 0;
}

typedef struct bounds_site {
    uint32_t op;
    tji_opcode code;
    char *file;
    int line;
    tj_dtype dtype;       /* of the elements accessed */
    uint64_t *params;     /* the buffers its pointer may point into (a bitset) */
} bounds_site;

struct tjj_bounds_sites {
    int n, nwords;
    bounds_site *site;
};

static int is_access(tji_opcode code)
{
    return code == TJI_LOAD || code == TJI_STORE || code == TJI_ATOMIC || code == TJI_ATOMIC_CAS;
}

tjj_bounds_sites *tjj_bounds_sites_new(const tji_func *fn)
{
    tjj_bounds_sites *s = tjs_xcalloc(1, sizeof *s);
    tjp_provenance prov;
    tjp_find_provenance(fn, &prov);
    s->nwords = prov.nwords;
    for (int32_t i = 0; i < fn->nops; i++)
        s->n += is_access(fn->ops[i].code);
    s->site = tjs_xcalloc((size_t)s->n + 1, sizeof *s->site);
    int k = 0;
    for (int32_t i = 0; i < fn->nops; i++) {
        const tji_op *op = &fn->ops[i];
        if (!is_access(op->code))
            continue;
        bounds_site *site = &s->site[k++];
        site->op = (uint32_t)i;
        site->code = op->code;
        site->file = tjs_xstrdup(op->loc.file ? op->loc.file : "?");
        site->line = op->loc.line;
        site->dtype = tji_typeof(fn, op->args[0])->dtype;
        site->params = tjs_xcalloc((size_t)s->nwords, sizeof *site->params);
        for (int p = 0; p < fn->nparams; p++)
            if (tjp_provenance_has(&prov, op->args[0], p))
                site->params[p / 64] |= UINT64_C(1) << (p % 64);
    }
    tjp_provenance_free(&prov);
    return s;
}

void tjj_bounds_sites_free(tjj_bounds_sites *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->n; i++) {
        free(s->site[i].file);
        free(s->site[i].params);
    }
    free(s->site);
    free(s);
}

static int site_has(const bounds_site *site, int p)
{
    return (int)(site->params[p / 64] >> (p % 64) & 1);
}

/* floor(a / b) for b > 0: element -1 is the one just before the buffer. */
static int64_t floor_div(int64_t a, int64_t b)
{
    return a >= 0 ? a / b : -((-(a + 1)) / b) - 1;
}

char *tjj_bounds_message(const tjj_bounds_sites *s, const tj_kernel *kernel, const tjj_gpu_assert *rec)
{
    const bounds_site *site = NULL;
    for (int i = 0; s && i < s->n && !site; i++)
        if (s->site[i].op == rec->op)
            site = &s->site[i];
    if (!site)
        return NULL;
    tjs_buf b = {0};
    tjs_buf_printf(&b, "%s:%d: error: in kernel '%s', op '%s': out-of-bounds access in program (%u, %u, %u): ",
                   site->file, site->line, kernel->name, tji_opcode_name(site->code), rec->pid[0], rec->pid[1],
                   rec->pid[2]);
    int64_t elem = (int64_t)tj_dtype_size(site->dtype);
    if (rec->param < (uint32_t)kernel->nparams) {
        tjs_buf_printf(&b, "element %" PRId64 " (byte %" PRId64 ") of buffer '%s' (argument %u), which holds %"
                       PRIu64 " element%s of %s (%" PRIu64 " bytes)",
                       floor_div(rec->offset, elem), rec->offset, kernel->params[rec->param].name, rec->param + 1,
                       rec->size / (uint64_t)elem, rec->size / (uint64_t)elem == 1 ? "" : "s",
                       tj_dtype_name(site->dtype), rec->size);
        int others = 0;
        for (int p = 0; p < kernel->nparams; p++)
            others += site_has(site, p) && (uint32_t)p != rec->param;
        if (others) {
            tjs_buf_printf(&b, "; the pointer may point into");
            for (int p = 0, k = 0; p < kernel->nparams; p++)
                if (site_has(site, p))
                    tjs_buf_printf(&b, "%s '%s'", k++ == 0 ? "" : k == others + 1 ? " or" : ",",
                                   kernel->params[p].name);
            tjs_buf_printf(&b, " and is inside none");
        }
    } else {
        tjs_buf_printf(&b, "address 0x%" PRIx64 ", from no buffer parameter", (uint64_t)rec->offset);
    }
    tjs_buf_printf(&b, "; the access was not performed (a mask missing?)");
    return b.data;
}
