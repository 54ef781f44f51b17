/* SPDX-License-Identifier: MIT */
/*
 * memory.c — the memory ops of the kernel language: tj_load and tj_store
 * (of pointer tiles and of block pointers, whose options block_ptr.c
 * checks; tensor descriptors' loads and stores come here through tji_load
 * and tji_store) and the atomics (add, max, min, xchg, and, or, xor, and
 * compare-and-swap) with their memory order and scope.
 *
 * Each checks its options first (a hint a kind of access cannot take is
 * an error, not ignored), then the pointer, then the mask (an i1 that
 * broadcasts to the pointer's shape, never the reverse) and the value (met
 * to the pointee's dtype), and emits one op; the back ends lower them.
 */
#include "build.h"

/* The options an op takes: other (loads), cache and evict (loads, stores),
 * is_volatile (loads). The others must be left at their defaults. */
static int check_mem_opts(const tj_mem_opts *o, int is_load, int is_store)
{
    if ((unsigned)o->cache > TJ_CACHE_WT)
        return tji_fail(TJ_ERR_BUILD, "unknown cache modifier %d", (int)o->cache);
    if ((unsigned)o->evict > TJ_EVICT_LAST)
        return tji_fail(TJ_ERR_BUILD, "unknown eviction policy %d", (int)o->evict);
    if (!is_load && vid(o->other))
        return tji_fail(TJ_ERR_BUILD, "'other' applies to loads only");
    if (!is_load && o->is_volatile)
        return tji_fail(TJ_ERR_BUILD, "'is_volatile' applies to loads only");
    if (!is_load && !is_store && (o->cache || o->evict))
        return tji_fail(TJ_ERR_BUILD, "cache and eviction hints apply to loads and stores only");
    /* The hints become PTX modifiers: each kind of access has its own cache
     * operators, and PTX has no instruction with two of cache operator,
     * eviction priority and volatile. */
    static const char *const cache_names[] = {"default", "ca", "cg", "cs", "lu", "cv", "wb", "wt"};
    int load_cache = o->cache != TJ_CACHE_WB && o->cache != TJ_CACHE_WT;
    int store_cache = o->cache == TJ_CACHE_DEFAULT || o->cache == TJ_CACHE_WB ||
                      o->cache == TJ_CACHE_CG || o->cache == TJ_CACHE_CS || o->cache == TJ_CACHE_WT;
    if ((is_load && !load_cache) || (is_store && !store_cache))
        return tji_fail(TJ_ERR_BUILD, "cache modifier .%s applies to %s only", cache_names[o->cache],
                        is_load ? "stores" : "loads");
    if (o->cache && o->evict)
        return tji_fail(TJ_ERR_BUILD, "a cache modifier (.%s) and an eviction policy (%s) cannot be "
                        "combined: PTX has no instruction with both", cache_names[o->cache],
                        o->evict == TJ_EVICT_FIRST ? "evict_first" : "evict_last");
    if (o->is_volatile && (o->cache || o->evict))
        return tji_fail(TJ_ERR_BUILD, "a volatile load takes no cache modifier or eviction policy");
    return 1;
}

static int check_pointer(int32_t ptr, const char *what)
{
    tji_type t = type_of(ptr);
    if (!t.is_ptr)
        return tji_fail(TJ_ERR_TYPE, "%s of a non-pointer value of type %s", what, tji_type_text(&t));
    return 1;
}

/* A mask for the pointer tile pt: absent stays 0; an integer mask is
 * compared with 0; it broadcasts to the pointer's shape, never the reverse. */
static int prepare_mask(int32_t *mask, const tji_type *pt)
{
    if (!*mask)
        return 1;
    tji_type t = type_of(*mask);
    if (!tji_broadcastable(&t, pt->rank, pt->shape))
        return tji_fail(TJ_ERR_SHAPE, "mask of shape %s does not match the pointer's shape %s",
                        tji_shape_text(&t), tji_shape_text(pt));
    int32_t c = tji_as_condition(*mask, "the mask");
    return c && (*mask = tji_broadcast_shape(c, pt->rank, pt->shape));
}

/* A value for the pointer tile pt: converted to the pointee dtype (as an
 * assignment in C would) and broadcast to the pointer's shape. */
static int32_t value_for(int32_t x, const tji_type *pt, const char *what)
{
    tji_type t = type_of(x);
    if (t.is_ptr)
        return tji_fail(TJ_ERR_TYPE, "%s is a pointer (%s), not a value for %s", what, tji_type_text(&t),
                        tji_type_text(pt));
    if (!tji_broadcastable(&t, pt->rank, pt->shape))
        return tji_fail(TJ_ERR_SHAPE, "%s of shape %s does not match the pointer's shape %s", what,
                        tji_shape_text(&t), tji_shape_text(pt));
    x = tji_to_dtype(x, pt->dtype, 1);
    return x ? tji_broadcast_shape(x, pt->rank, pt->shape) : 0;
}

/* A load of ptr, a pointer tile or a block pointer, once the op has been
 * entered and its operands are known to be valid (tj__load; the tensor
 * descriptors' loads in block_ptr.c): the options checked, the LOAD. */
int32_t tji_load(int32_t ptr, const tj_mem_opts *opts)
{
    if (!check_mem_opts(opts, 1, 0) || !check_pointer(ptr, "load") ||
        !tji_check_block_opts(ptr, opts, 1))
        return 0;
    tji_type pt = type_of(ptr);
    int32_t mask = vid(opts->mask), other = vid(opts->other);
    if (!prepare_mask(&mask, &pt) || (other && !(other = value_for(other, &pt, "other"))))
        return 0;
    int32_t v = tji_emit(TJI_LOAD, ARGS(ptr, mask, other), elem_type(pt));
    tji_op *op = op_of(v);
    op->cache = opts->cache;
    op->evict = opts->evict;
    op->is_volatile = opts->is_volatile != 0;
    op->boundary_check = opts->boundary_check;
    op->padding = opts->padding;
    return v;
}

tj_val tj__load(tj_loc loc, tj_val ptr, tj_mem_opts opts)
{
    if (!tji_enter_block(loc, "load", 1, &ptr) || !tji_check_optional(vid(opts.mask), 2) ||
        !tji_check_optional(vid(opts.other), 3))
        return NONE;
    return val(tji_load(vid(ptr), &opts));
}

/* The store of value through ptr, as tji_load for loads. */
int tji_store(int32_t ptr, int32_t value, const tj_mem_opts *opts)
{
    if (!check_mem_opts(opts, 0, 1) || !check_pointer(ptr, "store") ||
        !tji_check_block_opts(ptr, opts, 0))
        return 0;
    tji_type pt = type_of(ptr);
    int32_t mask = vid(opts->mask), x = value_for(value, &pt, "the value");
    if (!x || !prepare_mask(&mask, &pt))
        return 0;
    int32_t op = tji_emit_op(TJI_STORE, B.region, ARGS(ptr, x, mask), 0, NULL);
    B.fn->ops[op].cache = opts->cache;
    B.fn->ops[op].evict = opts->evict;
    B.fn->ops[op].boundary_check = opts->boundary_check;
    return 1;
}

void tj__store(tj_loc loc, tj_val ptr, tj_val value, tj_mem_opts opts)
{
    if (!tji_enter_block(loc, "store", 2, (tj_val[]){ptr, value}) ||
        !tji_check_optional(vid(opts.mask), 3))
        return;
    tji_store(vid(ptr), vid(value), &opts);
}

/* tj__atomic and tj__atomic_cas are what the macros called before atomics
 * took .sem and .scope; they stay for programs built against those headers. */
tj_val tj__atomic(tj_loc loc, tj_atomic_op op, tj_val ptr, tj_val value, tj_mem_opts opts)
{
    if (!tji_enter(loc, "atomic", 2, (tj_val[]){ptr, value}) || !check_mem_opts(&opts, 0, 0) ||
        !tji_check_block_opts(vid(ptr), &opts, 0))
        return NONE;
    return tj__atomic_opts(loc, op, ptr, value, (tj_atomic_opts){.mask = opts.mask});
}

tj_val tj__atomic_cas(tj_loc loc, tj_val ptr, tj_val cmp, tj_val value)
{
    return tj__atomic_cas_opts(loc, ptr, cmp, value, (tj_atomic_opts){0});
}

static int check_atomic_opts(const tj_atomic_opts *o)
{
    if ((unsigned)o->sem > TJ_SEM_RELEASE)
        return tji_fail(TJ_ERR_BUILD, ".sem must be TJ_SEM_ACQ_REL, TJ_SEM_RELAXED, TJ_SEM_ACQUIRE or "
                                      "TJ_SEM_RELEASE, got %d", (int)o->sem);
    if ((unsigned)o->scope > TJ_SCOPE_SYS)
        return tji_fail(TJ_ERR_BUILD, ".scope must be TJ_SCOPE_GPU, TJ_SCOPE_CTA or TJ_SCOPE_SYS, got %d",
                        (int)o->scope);
    return 1;
}

tj_val tj__atomic_opts(tj_loc loc, tj_atomic_op op, tj_val ptr, tj_val value, tj_atomic_opts opts)
{
    static const char *const names[] = {"atomic_add", "atomic_max", "atomic_min", "atomic_xchg",
                                        "atomic_and", "atomic_or", "atomic_xor"};
    int known = (unsigned)op <= TJ_ATOMIC_XOR, bitwise = op >= TJ_ATOMIC_AND;
    if (!tji_enter(loc, known ? names[op] : "atomic", 2, (tj_val[]){ptr, value}) ||
        !tji_check_optional(vid(opts.mask), 3))
        return NONE;
    if (!known)
        return tji_fail(TJ_ERR_BUILD, "unknown atomic op %d", (int)op), NONE;
    if (!check_atomic_opts(&opts) || !check_pointer(vid(ptr), names[op]))
        return NONE;
    tji_type pt = type_of(vid(ptr));
    tj_dtype dt = pt.dtype;
    if (!tji_refuse_fp8(dt))
        return NONE;
    if (bitwise && (!tjs_dtype_is_int(dt) || dt == TJ_I1))
        return tji_fail(TJ_ERR_TYPE, "no %s on %s: it takes integers (not i1)", names[op], tji_type_text(&pt)),
               NONE;
    if (op != TJ_ATOMIC_XCHG && (dt == TJ_F16 || dt == TJ_BF16 || dt == TJ_I1))
        return tji_fail(TJ_ERR_TYPE, "no %s on %s: it takes integers (not i1), f32 and f64",
                        names[op], tji_type_text(&pt)), NONE;
    /* LLVM widens a narrow and/or/xor to a 32-bit one and drops its scope */
    if (bitwise && opts.scope == TJ_SCOPE_SYS && tjs_dtype_bits(dt) < 32)
        return tji_fail(TJ_ERR_TYPE, "no %s on %s at system scope: a GPU has it for 32 and 64 bits only",
                        names[op], tji_type_text(&pt)), NONE;
    int32_t mask = vid(opts.mask), x = value_for(vid(value), &pt, "the value");
    if (!x || !prepare_mask(&mask, &pt))
        return NONE;
    int32_t v = tji_emit(TJI_ATOMIC, ARGS(vid(ptr), x, mask), elem_type(pt));
    op_of(v)->atomic = op;
    op_of(v)->sem = opts.sem;
    op_of(v)->scope = opts.scope;
    return val(v);
}

tj_val tj__atomic_cas_opts(tj_loc loc, tj_val ptr, tj_val cmp, tj_val value, tj_atomic_opts opts)
{
    if (!tji_enter(loc, "atomic_cas", 3, (tj_val[]){ptr, cmp, value}) ||
        !check_pointer(vid(ptr), "atomic_cas") || !check_atomic_opts(&opts))
        return NONE;
    if (opts.mask.id)
        return tji_fail(TJ_ERR_BUILD, "atomic_cas takes no .mask (nor does Triton's): compare with a value "
                                      "that cannot match where it should do nothing"), NONE;
    tji_type pt = type_of(vid(ptr));
    if (pt.dtype != TJ_I32 && pt.dtype != TJ_I64 && pt.dtype != TJ_U32 && pt.dtype != TJ_U64)
        return tji_fail(TJ_ERR_TYPE, "atomic_cas needs a pointer to i32, i64, u32 or u64, got %s",
                        tji_type_text(&pt)), NONE;
    int32_t c = value_for(vid(cmp), &pt, "the compared value");
    int32_t x = c ? value_for(vid(value), &pt, "the new value") : 0;
    if (!x)
        return NONE;
    int32_t v = tji_emit(TJI_ATOMIC_CAS, ARGS(vid(ptr), c, x), elem_type(pt));
    op_of(v)->sem = opts.sem;
    op_of(v)->scope = opts.scope;
    return val(v);
}
