/* SPDX-License-Identifier: MIT */
/*
 * memory.c — global LOAD and STORE.
 *
 * A masked LOAD/STORE is one predicated instruction, so a masked-off
 * address is never touched; registers that the plan groups into a vector
 * (the coalescing pass's width) are one access of up to 16 bytes under one
 * predicate, and a run of consecutive addresses shares one address
 * register. A store is done by the owning slot only. Cache hints and masks
 * go through inline PTX (below); a plain access stays an LLVM load or
 * store. Under TJIT_CHECK_BOUNDS every access is checked (bounds.h).
 */
#include <stdio.h>
#include <string.h>

#include "gen.h"

/* --- memory ------------------------------------------------------------------------------ */

/* Cache and eviction hints. A load or store with a cache operator or an L1
 * eviction priority (the builder allows one, never both, and none on a
 * volatile load) is one inline-asm PTX instruction, since LLVM's IR has no
 * way to carry them; without a hint the access stays an LLVM load or store,
 * which the NVPTX back end is free to combine and schedule. The asm works
 * on a register of the access's width: f32/f64 in "f"/"d", 16-bit values
 * (f16, bf16, i16) as .b16 in "h", bytes (i8, i1) as .u8 in a 16-bit "h"
 * register (PTX has no 8-bit registers), i32 in "r", i64 and pointers in
 * "l". The asm has side effects and clobbers memory, so LLVM keeps it in
 * order with the other memory accesses and barriers. */

typedef struct ptx_access {
    const char *suffix;      /* PTX type of the instruction */
    const char *constraint;  /* register constraint */
    LLVMTypeRef reg;         /* LLVM type of that register */
} ptx_access;

/* The PTX modifier of op's hint, "" if it has none. */
static const char *hint_modifier(const tji_op *op)
{
    static const char *const cache[] = {"", ".ca", ".cg", ".cs", ".lu", ".cv", ".wb", ".wt"};
    if (op->cache != TJ_CACHE_DEFAULT)
        return cache[op->cache];
    if (op->evict == TJ_EVICT_FIRST)
        return ".L1::evict_first";
    if (op->evict == TJ_EVICT_LAST)
        return ".L1::evict_last";
    return "";
}

static ptx_access ptx_access_of(const codegen *c, LLVMTypeRef mem)
{
    const tjj_gpu_gen *g = &c->g;
    if (mem == g->ty.t_float)
        return (ptx_access){".f32", "f", g->ty.t_float};
    if (mem == g->ty.t_double)
        return (ptx_access){".f64", "d", g->ty.t_double};
    if (mem == g->ty.t_half || mem == g->ty.t_i16)
        return (ptx_access){".b16", "h", g->ty.t_i16};
    if (mem == g->ty.t_i8)
        return (ptx_access){".u8", "h", g->ty.t_i16};
    if (mem == g->ty.t_i32)
        return (ptx_access){".b32", "r", g->ty.t_i32};
    return (ptx_access){".b64", "l", g->ty.t_i64};  /* i64 and pointers */
}

static LLVMValueRef inline_ptx(codegen *c, LLVMTypeRef ret, const char *text, const char *constraints,
                               LLVMValueRef *args, unsigned nargs)
{
    LLVMTypeRef params[MAX_VECTOR_PARTS + 2];
    for (unsigned i = 0; i < nargs; i++)
        params[i] = LLVMTypeOf(args[i]);
    LLVMTypeRef fty = LLVMFunctionType(ret, params, nargs, 0);
    LLVMValueRef fn = LLVMGetInlineAsm(fty, text, strlen(text), constraints, strlen(constraints),
                                       1, 0, LLVMInlineAsmDialectATT, 0);
    return LLVMBuildCall2(c->g.b, fty, fn, args, nargs, "");
}

/* Vector accesses. The plan gives each LOAD and STORE a width v (elements):
 * registers r..r+v-1, r a multiple of v, hold elements at consecutive
 * addresses, the first aligned to the v elements' bytes, and one mask
 * register speaks for all of them (the coalescing pass's promises). Such a
 * group is one access of v * size bytes, moved in parts: elements of 4
 * bytes or more as themselves (<4 x float> becomes ld.global.v4.f32), the
 * smaller ones as 32-bit words (eight halves: ld.global.v4.b32), or two
 * bytes as one 16-bit word. With a hint or a mask the same parts go through
 * one inline-asm instruction with a register per part (predicated on the
 * mask). */

typedef struct vector_access {
    int v;              /* elements */
    int nparts;         /* PTX vector components: 1, 2 or 4 */
    LLVMTypeRef mem;    /* an element in memory */
    LLVMTypeRef whole;  /* the access: <nparts x part>, or part */
    ptx_access part;
} vector_access;

static vector_access vector_access_of(codegen *c, LLVMTypeRef mem, int v)
{
    uint64_t bytes = type_bytes(c, mem), total = bytes * (uint64_t)v;
    vector_access a = {.v = v, .mem = mem};
    if (bytes >= 4 || v == 1) {
        a.part = ptx_access_of(c, mem);
        a.nparts = v;
    } else {
        a.part = ptx_access_of(c, total >= 4 ? c->g.ty.t_i32 : c->g.ty.t_i16);
        a.nparts = total >= 4 ? (int)(total / 4) : 1;
    }
    a.whole = a.nparts > 1 ? LLVMVectorType(a.part.reg, (unsigned)a.nparts) : a.part.reg;
    return a;
}

static LLVMTypeRef element_int(const codegen *c, const vector_access *a)
{
    return LLVMIntTypeInContext(c->g.ctx, (unsigned)(8 * type_bytes(c, a->mem)));
}

/* The elements (memory form) of a loaded access. */
static void vector_split(codegen *c, const vector_access *a, LLVMValueRef whole, LLVMValueRef *out)
{
    LLVMBuilderRef b = c->g.b;
    LLVMTypeRef it = element_int(c, a);
    LLVMValueRef ints = LLVMBuildBitCast(b, whole, LLVMVectorType(it, (unsigned)a->v), "");
    for (int j = 0; j < a->v; j++) {
        LLVMValueRef x = LLVMBuildExtractElement(b, ints, c_i32(c, j), "");
        out[j] = a->mem == it ? x
                 : LLVMGetTypeKind(a->mem) == LLVMPointerTypeKind ? LLVMBuildIntToPtr(b, x, a->mem, "")
                                                                  : LLVMBuildBitCast(b, x, a->mem, "");
    }
}

/* One access of elements (memory form) to store. */
static LLVMValueRef vector_join(codegen *c, const vector_access *a, LLVMValueRef *elems)
{
    LLVMBuilderRef b = c->g.b;
    LLVMTypeRef it = element_int(c, a);
    LLVMValueRef ints = LLVMGetPoison(LLVMVectorType(it, (unsigned)a->v));
    for (int j = 0; j < a->v; j++) {
        LLVMValueRef x = elems[j];
        x = LLVMTypeOf(x) == it ? x
            : LLVMGetTypeKind(LLVMTypeOf(x)) == LLVMPointerTypeKind ? LLVMBuildPtrToInt(b, x, it, "")
                                                                    : LLVMBuildBitCast(b, x, it, "");
        ints = LLVMBuildInsertElement(b, ints, x, c_i32(c, j), "");
    }
    return LLVMBuildBitCast(b, ints, a->whole, "");
}

/* "{$k, $k+1, ...}" for the parts of a vector, or "$k" for one part. */
static void asm_operands(char *out, size_t size, int first, int nparts)
{
    if (nparts == 1) {
        snprintf(out, size, "$%d", first);
        return;
    }
    int n = snprintf(out, size, "{");
    for (int i = 0; i < nparts; i++)
        n += snprintf(out + n, size - (size_t)n, "%s$%d", i ? ", " : "", first + i);
    snprintf(out + n, size - (size_t)n, "}");
}

static const char *vector_modifier(int nparts)
{
    return nparts == 4 ? ".v4" : nparts == 2 ? ".v2" : "";
}

/* The register form of one element (memory form x) for the asm, and back. */
static LLVMValueRef to_part(codegen *c, LLVMValueRef x, LLVMTypeRef part)
{
    LLVMTypeRef mem = LLVMTypeOf(x);
    if (mem == part)
        return x;
    if (mem == c->g.ty.t_i8)
        return LLVMBuildZExt(c->g.b, x, part, "");
    if (LLVMGetTypeKind(mem) == LLVMPointerTypeKind)
        return LLVMBuildPtrToInt(c->g.b, x, part, "");
    return LLVMBuildBitCast(c->g.b, x, part, "");
}

static LLVMValueRef from_part(codegen *c, LLVMValueRef x, LLVMTypeRef mem)
{
    if (LLVMTypeOf(x) == mem)
        return x;
    if (mem == c->g.ty.t_i8)
        return LLVMBuildTrunc(c->g.b, x, mem, "");
    if (LLVMGetTypeKind(mem) == LLVMPointerTypeKind)
        return LLVMBuildIntToPtr(c->g.b, x, mem, "");
    return LLVMBuildBitCast(c->g.b, x, mem, "");
}

/* The parts of v elements (memory form) as the asm's registers. */
static void parts_of(codegen *c, const vector_access *a, LLVMValueRef *elems, LLVMValueRef *parts)
{
    if (a->v == 1) {
        parts[0] = to_part(c, elems[0], a->part.reg);
        return;
    }
    LLVMValueRef whole = vector_join(c, a, elems);
    for (int i = 0; i < a->nparts; i++)
        parts[i] = a->nparts == 1 ? whole : LLVMBuildExtractElement(c->g.b, whole, c_i32(c, i), "");
}

/* The v elements (memory form) that the asm's registers hold. */
static void elems_of(codegen *c, const vector_access *a, LLVMValueRef *parts, LLVMValueRef *elems)
{
    if (a->v == 1) {
        elems[0] = from_part(c, parts[0], a->mem);
        return;
    }
    LLVMValueRef whole = parts[0];
    if (a->nparts > 1) {
        whole = LLVMGetPoison(a->whole);
        for (int i = 0; i < a->nparts; i++)
            whole = LLVMBuildInsertElement(c->g.b, whole, parts[i], c_i32(c, i), "");
    }
    vector_split(c, a, whole, elems);
}

/* The mov suffix for a register of constraint k ("h", "r", "l", "f", "d"). */
static const char *mov_suffix(const char *k)
{
    return *k == 'h' ? ".b16" : *k == 'r' ? ".b32" : *k == 'l' ? ".b64" : *k == 'f' ? ".f32" : ".f64";
}

/* One ld.global of a (its parts) from ptr, with the cache hint (""), under
 * predicate pred (NULL: always); where pred is false the registers keep
 * others (the parts of `other`). out gets the parts. */
static void asm_load(codegen *c, const vector_access *a, address at, const char *hint,
                     LLVMValueRef pred, LLVMValueRef *others, LLVMValueRef *out)
{
    LLVMValueRef ptr = at.base;
    int n = a->nparts, len = 0;
    char regs[64], text[512], constraints[96];
    asm_operands(regs, sizeof regs, 0, n);
    /* operands: n outputs, ptr ($n), pred ($n+1), n fallbacks */
    for (int i = 0; pred && i < n; i++)
        len += snprintf(text + len, sizeof text - (size_t)len, "mov%s $%d, $%d;\n\t",
                        mov_suffix(a->part.constraint), i, n + 2 + i);
    if (pred)
        len += snprintf(text + len, sizeof text - (size_t)len, "@$%d ", n + 1);
    snprintf(text + len, sizeof text - (size_t)len, "ld.global%s%s%s %s, [$%d+%lld];", hint,
             vector_modifier(n), a->part.suffix, regs, n, (long long)at.offset);
    len = 0;
    for (int i = 0; i < n; i++)
        len += snprintf(constraints + len, sizeof constraints - (size_t)len, "=&%s,", a->part.constraint);
    len += snprintf(constraints + len, sizeof constraints - (size_t)len, "l");
    if (pred) {
        len += snprintf(constraints + len, sizeof constraints - (size_t)len, ",b");
        for (int i = 0; i < n; i++)
            len += snprintf(constraints + len, sizeof constraints - (size_t)len, ",%s", a->part.constraint);
    }
    snprintf(constraints + len, sizeof constraints - (size_t)len, ",~{memory}");
    LLVMValueRef args[2 + MAX_VECTOR_PARTS] = {ptr, pred};
    for (int i = 0; pred && i < n; i++)
        args[2 + i] = others[i];
    unsigned nargs = pred ? 2 + (unsigned)n : 1;
    if (n == 1) {
        out[0] = inline_ptx(c, a->part.reg, text, constraints, args, nargs);
        return;
    }
    LLVMTypeRef types[MAX_VECTOR_PARTS];
    for (int i = 0; i < n; i++)
        types[i] = a->part.reg;
    LLVMValueRef got = inline_ptx(c, LLVMStructTypeInContext(c->g.ctx, types, (unsigned)n, 0), text,
                                  constraints, args, nargs);
    for (int i = 0; i < n; i++)
        out[i] = LLVMBuildExtractValue(c->g.b, got, (unsigned)i, "");
}

/* One st.global of a's parts to ptr, with the cache hint (""), under
 * predicate pred (NULL: always). */
static void asm_store(codegen *c, const vector_access *a, address at, LLVMValueRef *parts,
                      const char *hint, LLVMValueRef pred)
{
    LLVMValueRef ptr = at.base;
    int n = a->nparts, len = 0;
    char regs[64], text[160], constraints[64];
    asm_operands(regs, sizeof regs, 1, n);
    /* operands: ptr ($0), n parts, pred ($n+1) */
    if (pred)
        len += snprintf(text, sizeof text, "@$%d ", n + 1);
    snprintf(text + len, sizeof text - (size_t)len, "st.global%s%s%s [$0+%lld], %s;", hint,
             vector_modifier(n), a->part.suffix, (long long)at.offset, regs);
    len = snprintf(constraints, sizeof constraints, "l");
    for (int i = 0; i < n; i++)
        len += snprintf(constraints + len, sizeof constraints - (size_t)len, ",%s", a->part.constraint);
    snprintf(constraints + len, sizeof constraints - (size_t)len, "%s,~{memory}", pred ? ",b" : "");
    LLVMValueRef args[2 + MAX_VECTOR_PARTS] = {ptr};
    for (int i = 0; i < n; i++)
        args[1 + i] = parts[i];
    args[1 + n] = pred;
    inline_ptx(c, c->g.ty.t_void, text, constraints, args, (unsigned)n + (pred ? 2 : 1));
}

/* The plan's vector width of the access at op index opi. */
static int vector_of(const codegen *c, int32_t opi)
{
    const tjp_layout_plan *p = c->g.plan;
    return p->vector && opi >= 0 && opi < p->nops ? p->vector[opi] : 1;
}

/* Do registers r..r+v-1 (r a multiple of v) of L hold, in order, v
 * consecutive elements along one dimension of t, starting at a multiple
 * of v? Their register bases must be the bits s..s+k-1 of one dimension's
 * field (v = 2^k), and no other basis may touch those bits. */
static int holds_vectors(const tjp_layout *L, const tji_type *t, int v)
{
    int k = log2_of(v);
    uint32_t first = L->nbits[TJP_REG] >= k ? L->basis[TJP_REG][0] : 0;
    if (!first || (first & (first - 1)))
        return 0;
    int s = __builtin_ctz(first), in_dim = 0;
    for (int d = 0; d < t->rank; d++)
        in_dim |= dim_shift(t, d) == s && k <= log2_of(t->shape[d]); /* stride 1 along d */
    uint32_t field = (uint32_t)(v - 1) << s;
    for (int in = 0; in < TJP_NIN; in++)
        for (int b = 0; b < L->nbits[in]; b++)
            if (in == TJP_REG && b < k ? L->basis[in][b] != first << b : (L->basis[in][b] & field) != 0)
                return 0;
    return in_dim;
}

/* The width of the access op (on a tile in layout L), checked against the
 * layout; 0 after a failure. Volatile loads stay element by element. */
static int access_width(codegen *c, const tji_op *op, const tjp_layout *L, const tji_type *t)
{
    int v = vector_of(c, c->g.cur_op);
    if (v <= 1 || op->is_volatile)
        return 1;
    uint64_t bytes = type_bytes(c, tjj_gpu_mem_type(&c->g, t)) * (uint64_t)v;
    if (v > MAX_VECTOR || bytes > 16 || !holds_vectors(L, t, v)) {
        FAIL(c, "internal error: the layout of this access does not hold vectors of %d", v);
        return 0;
    }
    return v;
}

/* The plan's run of consecutive addresses for the access at op index opi
 * (on a tile in layout L), checked against the layout; 0 after a failure. */
static int address_run(codegen *c, const tjp_layout *L, const tji_type *t)
{
    const tjp_layout_plan *p = c->g.plan;
    int32_t opi = c->g.cur_op;
    int run = p->addr_run && opi >= 0 && opi < p->nops ? p->addr_run[opi] : 1;
    if (run <= 1)
        return 1;
    if (run > MAX_VECTOR || !holds_vectors(L, t, run)) {
        FAIL(c, "internal error: the layout of this access does not hold runs of %d", run);
        return 0;
    }
    return run;
}

/* The address of register r of pointer tile ptr, whose registers come in
 * runs of `run` consecutive elements (of memory type elem): the run's first
 * address and a byte offset, which goes into the instruction ([%rd+4])
 * rather than every address being computed in full. */
static address run_address(codegen *c, int32_t ptr, uint32_t r, int run, LLVMTypeRef elem)
{
    uint32_t k = run > 1 ? r % (uint32_t)run : 0;
    return (address){tjj_gpu_reg(c, ptr, r - k), (int64_t)(k * type_bytes(c, elem))};
}

/* An address as an LLVM pointer. */
static LLVMValueRef address_value(codegen *c, address at)
{
    if (!at.offset)
        return at.base;
    LLVMValueRef offset = c_i64(c, at.offset);
    return LLVMBuildGEP2(c->g.b, c->g.ty.t_i8, at.base, &offset, 1, "");
}

/* A checked kernel's condition (cond, NULL: always) of an access of v
 * elements of t at `at`, an address of pointer value ptr: off where it
 * leaves its buffers; emit_op reports the op's first such (bounds.h).
 * Unchecked: cond itself. */
LLVMValueRef tjj_gpu_bounds_cond(codegen *c, int32_t ptr, address at, const tji_type *t, int v, LLVMValueRef cond)
{
    if (!c->bounds)
        return cond;
    uint64_t elem = type_bytes(c, tjj_gpu_mem_type(&c->g, t));
    return tjj_bounds_check(c->bounds, c->g.b, ptr, address_value(c, at), elem * (uint64_t)v, elem, cond);
}

/* v elements (v = 1: one) from ptr into out, in SSA form, when mask (NULL:
 * always) holds; else other's (NULL: zeros). A masked or hinted access is
 * one predicated inline-asm instruction; a plain one an LLVM load; a
 * masked volatile load branches around an LLVM volatile load. */
static void masked_load(codegen *c, const tji_type *t, const tji_op *op, address at, LLVMValueRef mask,
                        const LLVMValueRef *other, int v, LLVMValueRef *out)
{
    LLVMTypeRef mem = tjj_gpu_mem_type(&c->g, t);
    const char *hint = hint_modifier(op);
    vector_access a = vector_access_of(c, mem, v);
    LLVMValueRef got[MAX_VECTOR];
    if ((mask || *hint) && !op->is_volatile) {
        LLVMValueRef fallback[MAX_VECTOR], others[MAX_VECTOR_PARTS] = {0}, parts[MAX_VECTOR_PARTS] = {0};
        for (int j = 0; mask && j < v; j++)
            fallback[j] = other ? tjj_gpu_to_mem(&c->g, other[j], t) : LLVMConstNull(mem);
        if (mask)
            parts_of(c, &a, fallback, others);
        asm_load(c, &a, at, hint, mask, others, parts);
        elems_of(c, &a, parts, got);
        for (int j = 0; j < v; j++)
            out[j] = tjj_gpu_from_mem(&c->g, got[j], t);
        return;
    }
    LLVMBasicBlockRef before = LLVMGetInsertBlock(c->g.b);
    LLVMBasicBlockRef cont = tjj_llvm_guard_begin(c->g.b, mask, "load");
    LLVMValueRef ld = LLVMBuildLoad2(c->g.b, a.v == 1 ? mem : a.whole, address_value(c, at), "");
    LLVMSetAlignment(ld, (unsigned)(type_bytes(c, mem) * (uint64_t)v));
    if (op->is_volatile)
        LLVMSetVolatile(ld, 1);
    if (v == 1)
        got[0] = ld;
    else
        vector_split(c, &a, ld, got);
    for (int j = 0; j < v; j++)
        got[j] = tjj_gpu_from_mem(&c->g, got[j], t);
    LLVMBasicBlockRef then_end = LLVMGetInsertBlock(c->g.b);
    tjj_llvm_guard_end(c->g.b, cont);
    for (int j = 0; j < v; j++) {
        out[j] = got[j];
        if (!cont)
            continue;
        out[j] = LLVMBuildPhi(c->g.b, LLVMTypeOf(got[j]), "");
        LLVMValueRef vals[2] = {got[j], other ? other[j] : LLVMConstNull(LLVMTypeOf(got[j]))};
        LLVMBasicBlockRef blocks[2] = {then_end, before};
        LLVMAddIncoming(out[j], vals, blocks, 2);
    }
}

void tjj_gpu_emit_load(codegen *c, const tji_op *op)
{
    int32_t id = op->result, mask = op->nargs > 1 ? op->args[1] : 0, other = op->nargs > 2 ? op->args[2] : 0;
    const tji_type *t = type_of(c, id);
    tjj_gpu_barrier(c, TJP_BARRIER_BEFORE);
    if (t->rank == 0) {
        LLVMValueRef o = other ? tjj_gpu_reg(c, other, 0) : NULL;
        address at = {tjj_gpu_reg(c, op->args[0], 0), 0};
        masked_load(c, t, op, at, tjj_gpu_bounds_cond(c, op->args[0], at, t, 1, mask ? live_cond(tjj_gpu_reg(c, mask, 0)) : NULL),
                    other ? &o : NULL, 1, &c->ssa[id]);
        return;
    }
    for (int i = 0; i < op->nargs; i++)
        if (op->args[i] && !tjj_gpu_check_same_layout(c, op->args[i], id))
            return;
    const tjp_layout *L = layout_of(c, id);
    int v = access_width(c, op, L, t), run = v ? address_run(c, L, t) : 0;
    LLVMTypeRef mem = tjj_gpu_mem_type(&c->g, t);
    uint32_t rdup = reg_dup_mask(L), n = (uint32_t)nregs_of(c, id);
    LLVMValueRef *out = tjj_gpu_regs_for(c, id);
    for (uint32_t r = 0; v && run && r < n && c->g.status == TJ_OK; r += (uint32_t)v) {
        if (r & rdup) {
            for (int j = 0; j < v; j++)
                out[r + (uint32_t)j] = out[(r & ~rdup) + (uint32_t)j];
            continue;
        }
        LLVMValueRef others[MAX_VECTOR];
        for (int j = 0; other && j < v; j++)
            others[j] = tjj_gpu_reg(c, other, r + (uint32_t)j);
        address at = run_address(c, op->args[0], r, run, mem);
        masked_load(c, t, op, at, tjj_gpu_bounds_cond(c, op->args[0], at, t, v, mask ? live_cond(tjj_gpu_reg(c, mask, r)) : NULL),
                    other ? others : NULL, v, out + r);
    }
}

void tjj_gpu_emit_store(codegen *c, const tji_op *op)
{
    int32_t ptr = op->args[0], val = op->args[1], mask = op->nargs > 2 ? op->args[2] : 0;
    const tji_type *vt = type_of(c, val);
    const char *hint = hint_modifier(op);
    int rank = rank_of(c, ptr), v = 1, run = 1;
    LLVMValueRef owner;
    uint32_t n = 1, rdup = 0;
    if (c->g.plan->shared && c->g.plan->shared[c->g.cur_op].kind == TJP_STEP_TMA_STORE) {
        tjj_gpu_emit_tma_store(c, op, &c->g.plan->shared[c->g.cur_op]);
        return;
    }
    tjj_gpu_barrier(c, TJP_BARRIER_BEFORE);
    if (rank == 0) {
        owner = tjj_gpu_thread0_cond(c);
    } else {
        if (!tjj_gpu_check_same_layout(c, val, ptr) || (mask && !tjj_gpu_check_same_layout(c, mask, ptr)))
            return;
        const tjp_layout *L = layout_of(c, ptr);
        owner = tjj_gpu_owner_cond(c, L);
        n = (uint32_t)nregs_of(c, ptr);
        rdup = reg_dup_mask(L);
        if (!(v = access_width(c, op, L, vt)) || !(run = address_run(c, L, vt)))
            return;
    }
    LLVMTypeRef mem = tjj_gpu_mem_type(&c->g, vt);
    vector_access a = vector_access_of(c, mem, v);
    for (uint32_t r = 0; r < n; r += (uint32_t)v) {
        if (r & rdup)
            continue;
        LLVMValueRef cond = and_cond(c, owner, mask ? live_cond(tjj_gpu_reg(c, mask, r)) : NULL);
        cond = tjj_gpu_bounds_cond(c, ptr, run_address(c, ptr, r, run, mem), vt, v, cond);
        LLVMValueRef elems[MAX_VECTOR], parts[MAX_VECTOR_PARTS] = {0};
        for (int j = 0; j < v; j++)
            elems[j] = tjj_gpu_to_mem(&c->g, tjj_gpu_reg(c, val, r + (uint32_t)j), vt);
        if (cond || *hint) { /* a predicated (or hinted) st.global */
            parts_of(c, &a, elems, parts);
            asm_store(c, &a, run_address(c, ptr, r, run, mem), parts, hint, cond);
            continue;
        }
        LLVMValueRef st = LLVMBuildStore(c->g.b, v == 1 ? elems[0] : vector_join(c, &a, elems),
                                         address_value(c, run_address(c, ptr, r, run, mem)));
        LLVMSetAlignment(st, (unsigned)(type_bytes(c, mem) * (uint64_t)v));
    }
}
