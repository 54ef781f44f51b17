/* SPDX-License-Identifier: MIT */
/*
 * test_atomic_order.c — tj_atomic_and, tj_atomic_or, tj_atomic_xor, and
 * every atomic's .sem and .scope (Triton's sem= and scope=), on the device
 * under test (TJIT_TEST_DEVICE), then in the PTX.
 *
 * P programs of 64 lanes each hammer W words at once: program p ors bit
 * (p % bits) into each word, ands away its own bit from an all-ones word,
 * and xors in a random value; a masked-off lane must neither write nor
 * read (its old value is 0). The final words must be the C fold of every
 * program's contribution, in i16, i32 and u64, under each order and scope
 * (the CPU makes them all sequentially consistent; a GPU does as asked;
 * programs contend across CTAs, so no kernel here runs at CTA scope: the
 * PTX check covers it).
 * The old values of a relaxed add must be distinct tickets 0..P*64-1.
 *
 * The PTX shows the orders: acq_rel (the default) fences before and after
 * the op, release only before, acquire after, relaxed not at all; the
 * fences carry the scope (.cta, .gpu, .sys), a system-scope atom says so,
 * and a compare-and-swap carries its order and scope in the instruction.
 */
#include "testlib.h"

enum { P = 24, W = 8, LANES = 64 };

/* ors[w] |= bit, ands[w] &= ~bit, xors[w] ^= val[p * LANES + lane], for
 * lane < live (w = lane % W); olds[p * LANES + lane] the or's old value. */
#define BITWISE_KERNEL(NAME, DT, DTE, ...)                                                                \
    TJ_KERNEL(NAME,                                                                                    \
              TJ_PARAMS(TJ_PTR(ors, DT), TJ_PTR(ands, DT), TJ_PTR(xors, DT), TJ_PTR(vals, DT),          \
                        TJ_PTR(olds, DT), TJ_SCALAR(live, i32), TJ_SCALAR(bits, i32)),                 \
              TJ_CONSTS())                                                                             \
    {                                                                                                  \
        tj_val pid = tj_program_id(0), lane = tj_arange(0, LANES), w = tj_mod(lane, W);                \
        tj_val on = tj_lt(lane, live);                                                                 \
        tj_val bit = tj_shl(tj_full(TJ_SHAPE(LANES), 1, DTE), tj_cast(tj_mod(pid, bits), DTE));     \
        tj_val old = tj_atomic_or(tj_add(ors, w), bit, .mask = on, __VA_ARGS__);                       \
        tj_atomic_and(tj_add(ands, w), tj_not(bit), .mask = on, __VA_ARGS__);                          \
        tj_val at = tj_add(tj_mul(pid, LANES), lane);                                                  \
        tj_atomic_xor(tj_add(xors, w), tj_load(tj_add(vals, at)), .mask = on, __VA_ARGS__);            \
        tj_store(tj_add(olds, at), old);                                                               \
    }
BITWISE_KERNEL(bitwise_i32, i32, TJ_I32, .sem = TJ_SEM_ACQ_REL)
BITWISE_KERNEL(bitwise_u64, u64, TJ_U64, .sem = TJ_SEM_RELAXED, .scope = TJ_SCOPE_SYS)
BITWISE_KERNEL(bitwise_i16, i16, TJ_I16, .sem = TJ_SEM_RELEASE)
BITWISE_KERNEL(bitwise_i32_acquire, i32, TJ_I32, .sem = TJ_SEM_ACQUIRE)

/* tickets[i] = atomic_add(counter, 1) relaxed, for P * LANES lanes */
TJ_KERNEL(tickets, TJ_PARAMS(TJ_PTR(counter, i32), TJ_PTR(out, i32)), TJ_CONSTS())
{
    tj_val at = tj_add(tj_mul(tj_program_id(0), LANES), tj_arange(0, LANES));
    tj_val one = tj_full(TJ_SHAPE(LANES), 1, TJ_I32);
    tj_store(tj_add(out, at), tj_atomic_add(tj_broadcast_to(counter, TJ_SHAPE(LANES)), one, .sem = TJ_SEM_RELAXED));
}

/* One op of each order, for the PTX: add (rmw) and cas. */
#define ORDER_KERNEL(NAME, ...)                                                                        \
    TJ_KERNEL(NAME, TJ_PARAMS(TJ_PTR(x, i32), TJ_PTR(y, i32)), TJ_CONSTS())                            \
    {                                                                                                  \
        tj_store(y, tj_atomic_add(x, 1, __VA_ARGS__));                                                 \
    }                                                                                                  \
    TJ_KERNEL(NAME##_cas, TJ_PARAMS(TJ_PTR(x, i32), TJ_PTR(y, i32)), TJ_CONSTS())                      \
    {                                                                                                  \
        tj_store(y, tj_atomic_cas(x, 0, 1, __VA_ARGS__));                                              \
    }
ORDER_KERNEL(order_default, .sem = TJ_SEM_ACQ_REL)
ORDER_KERNEL(order_relaxed, .sem = TJ_SEM_RELAXED)
ORDER_KERNEL(order_acquire, .sem = TJ_SEM_ACQUIRE)
ORDER_KERNEL(order_release, .sem = TJ_SEM_RELEASE)
ORDER_KERNEL(order_cta, .scope = TJ_SCOPE_CTA)
ORDER_KERNEL(order_sys, .sem = TJ_SEM_RELAXED, .scope = TJ_SCOPE_SYS)

/* A float max is a compare-and-swap loop, fenced as the others: the loop
 * may end without writing, so the cas alone would not order it. */
TJ_KERNEL(float_max_acq_rel, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(y, f32)), TJ_CONSTS())
{
    tj_store(y, tj_atomic_max(x, 1.0f));
}
TJ_KERNEL(float_max_relaxed, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(y, f32)), TJ_CONSTS())
{
    tj_store(y, tj_atomic_max(x, 1.0f, .sem = TJ_SEM_RELAXED));
}

TJ_KERNEL(bad_sem, TJ_PARAMS(TJ_PTR(x, i32)), TJ_CONSTS())
{
    tj_atomic_add(x, 1, .sem = (tj_sem)9);
}
TJ_KERNEL(bad_scope, TJ_PARAMS(TJ_PTR(x, i32)), TJ_CONSTS())
{
    tj_atomic_xchg(x, 1, .scope = (tj_scope)5);
}
TJ_KERNEL(or_of_floats, TJ_PARAMS(TJ_PTR(x, f32)), TJ_CONSTS())
{
    tj_atomic_or(x, 1.0f);
}
TJ_KERNEL(narrow_or_sys, TJ_PARAMS(TJ_PTR(x, u16)), TJ_CONSTS())
{
    tj_atomic_or(x, 1, .scope = TJ_SCOPE_SYS);
}
TJ_KERNEL(cas_with_mask, TJ_PARAMS(TJ_PTR(x, i32)), TJ_CONSTS())
{
    tj_atomic_cas(x, 0, 1, .mask = tj_gt(tj_load(x), 0));
}

static void run_bitwise(tj_device *dev, const tj_kernel *k, tj_dtype dt, const char *order)
{
    size_t es = tj_dtype_size(dt);
    int bits = (int)tl_bits(dt), live = LANES - 5;
    uint8_t ors[W * 8] = {0}, ands[W * 8], xors[W * 8] = {0}, vals[P * LANES * 8], olds[P * LANES * 8];
    memset(ands, 0xff, sizeof ands);
    for (int i = 0; i < P * LANES; i++)
        tl_set(dt, vals, (size_t)i, tl_int(tl_wrap(dt, (int64_t)tl_rand_u64())));
    tj_buffer bo = tl_upload(dev, ors, W * es), ba = tl_upload(dev, ands, W * es), bx = tl_upload(dev, xors, W * es);
    tj_buffer bv = tl_upload(dev, vals, P * LANES * es), bold = tl_poisoned(dev, P * LANES * es);
    tj_arg args[] = {TJ_ARG_BUF(bo), TJ_ARG_BUF(ba), TJ_ARG_BUF(bx), TJ_ARG_BUF(bv), TJ_ARG_BUF(bold),
                     TJ_ARG_I32(live), TJ_ARG_I32(bits)};
    tj_launch_cfg cfg = {.grid = {P}};
    char what[96];
    snprintf(what, sizeof what, "atomic and/or/xor of %s, %s", tj_dtype_name(dt), order);
    if (tl_launch_failed(tj_launch(dev, k, &cfg, args, 7, NULL, 0), what)) {
        tap_ok(0, "%s (not run)", what), tap_ok(0, "%s (not run)", what);
        return;
    }
    tl_download(dev, bo, ors, W * es), tl_download(dev, ba, ands, W * es), tl_download(dev, bx, xors, W * es);
    tl_download(dev, bold, olds, P * LANES * es);
    int wrong = 0, wrong_old = 0;
    for (int w = 0; w < W; w++) {
        uint64_t want_or = 0, want_and = ~(uint64_t)0, want_xor = 0;
        for (int p = 0; p < P; p++)
            for (int lane = w; lane < live; lane += W) {
                want_or |= (uint64_t)1 << (p % bits);
                want_and &= ~((uint64_t)1 << (p % bits));
                want_xor ^= (uint64_t)tl_get(dt, vals, (size_t)(p * LANES + lane)).i;
            }
        int64_t got[3] = {tl_get(dt, ors, (size_t)w).i, tl_get(dt, ands, (size_t)w).i, tl_get(dt, xors, (size_t)w).i};
        int64_t want[3] = {tl_wrap(dt, (int64_t)want_or), tl_wrap(dt, (int64_t)want_and), tl_wrap(dt, (int64_t)want_xor)};
        for (int i = 0; i < 3; i++)
            if (got[i] != want[i] && wrong++ < 3)
                tap_diag("word %d, op %d: %lld, expected %lld", w, i, (long long)got[i], (long long)want[i]);
    }
    /* an or's old value holds no bit the word does not end with; masked
     * lanes read 0 */
    for (int p = 0; p < P; p++)
        for (int lane = 0; lane < LANES; lane++) {
            int64_t old = tl_get(dt, olds, (size_t)(p * LANES + lane)).i;
            int64_t final = tl_get(dt, ors, (size_t)(lane % W)).i;
            wrong_old += lane >= live ? old != 0 : (old & ~final) != 0;
        }
    tap_ok(!wrong, "%s: the words are the C fold of every program's (%d wrong)", what, wrong);
    tap_ok(!wrong_old, "%s: old values hold only or'ed bits, masked lanes read 0 (%d wrong)", what, wrong_old);
    tj_buffer_free(dev, bo), tj_buffer_free(dev, ba), tj_buffer_free(dev, bx), tj_buffer_free(dev, bv),
        tj_buffer_free(dev, bold);
}

static void run_tickets(tj_device *dev)
{
    int32_t zero = 0, got[P * LANES];
    tj_buffer bc = tl_upload(dev, &zero, sizeof zero), bo = tl_poisoned(dev, sizeof got);
    tj_arg args[] = {TJ_ARG_BUF(bc), TJ_ARG_BUF(bo)};
    tj_launch_cfg cfg = {.grid = {P}};
    if (tl_launch_failed(tj_launch(dev, tickets, &cfg, args, 2, NULL, 0), "relaxed tickets")) {
        tap_ok(0, "relaxed tickets (not run)");
        return;
    }
    tl_download(dev, bo, got, sizeof got);
    static uint8_t seen[P * LANES];
    memset(seen, 0, sizeof seen);
    int wrong = 0;
    for (int i = 0; i < P * LANES; i++)
        wrong += got[i] < 0 || got[i] >= P * LANES || seen[got[i]]++;
    tap_ok(!wrong, "a relaxed atomic_add hands out the tickets 0..%d once each (%d wrong)", P * LANES - 1, wrong);
    tj_buffer_free(dev, bc), tj_buffer_free(dev, bo);
}

/* The PTX of kernel k for sm_90 (NULL after a failure, reported). */
static char *ptx_of(const tj_kernel *k)
{
    char *ptx = NULL;
    if (tj_kernel_ptx(k, NULL, 0, "sm_90", 4, &ptx) != TJ_OK) {
        tap_diag("%s: %s", k->name, tj_last_error());
        return NULL;
    }
    return ptx;
}

/* k's PTX around its (first) atom: are there fences before it and after
 * it (1: some, 0: none, -1: either; LLVM may copy a fence that follows a
 * branch into both arms, so "before" means only what an acquire-only op
 * cannot explain), each of the scope in fence_text; and the atom holds
 * atom_text. */
static void check_ptx(const tj_kernel *k, int before, int after, const char *fence_text, const char *atom_text)
{
    char *ptx = ptx_of(k);
    const char *atom = ptx ? strstr(ptx, "atom.") : NULL;
    int n_before = 0, n_after = 0, wrong_scope = 0;
    for (const char *f = ptx; f && (f = strstr(f, "fence.")); f++) {
        *(f < atom ? &n_before : &n_after) += 1;
        wrong_scope += fence_text && strncmp(f, fence_text, strlen(fence_text)) != 0;
    }
    const char *end = atom ? strchr(atom, '\n') : NULL;
    int atom_ok = atom && (!atom_text || (strstr(atom, atom_text) && strstr(atom, atom_text) < end));
    int ok = atom_ok && !wrong_scope && (before < 0 || (n_before > 0) == before) && (after < 0 || (n_after > 0) == after);
    tap_ok(ok, "PTX of %s: fences before %s, after %s%s%s%s%s (found %d before, %d after)", k->name,
           before < 0 ? "any" : before ? "yes" : "no", after ? "yes" : "no", fence_text ? ", " : "",
           fence_text ? fence_text : "", atom_text ? ", the atom has " : "", atom_text ? atom_text : "", n_before,
           n_after);
    free(ptx);
}

int main(void)
{
    tj_device *dev = tl_setup("test_atomic_order");
    tap_plan(4 * 2 + 1 + 14 + 5 + 1);
    run_bitwise(dev, bitwise_i32, TJ_I32, "acq_rel");
    run_bitwise(dev, bitwise_u64, TJ_U64, "relaxed, sys");
    run_bitwise(dev, bitwise_i16, TJ_I16, "release");
    run_bitwise(dev, bitwise_i32_acquire, TJ_I32, "acquire");
    run_tickets(dev);
    check_ptx(order_default, 1, 1, "fence.acq_rel.gpu", NULL);
    check_ptx(order_default_cas, 0, 0, NULL, "atom.acq_rel.gpu");
    check_ptx(order_relaxed, 0, 0, NULL, NULL);
    check_ptx(order_relaxed_cas, 0, 0, NULL, "atom.relaxed.gpu");
    check_ptx(order_acquire, -1, 1, "fence.acq_rel.gpu", NULL);
    check_ptx(order_acquire_cas, 0, 0, NULL, "atom.acquire.gpu");
    check_ptx(order_release, 1, 0, "fence.acq_rel.gpu", NULL);
    check_ptx(order_release_cas, 0, 0, NULL, "atom.release.gpu");
    check_ptx(order_cta, 1, 1, "fence.acq_rel.cta", NULL);
    check_ptx(order_cta_cas, 0, 0, NULL, "atom.acq_rel.cta");
    check_ptx(order_sys, 0, 0, NULL, "atom.relaxed.sys");
    check_ptx(order_sys_cas, 0, 0, NULL, "atom.relaxed.sys");
    check_ptx(float_max_acq_rel, 1, 1, "fence.acq_rel.gpu", "atom.relaxed.gpu");
    check_ptx(float_max_relaxed, 0, 0, NULL, "atom.relaxed.gpu");
    tl_build_refused(bad_sem, TJ_ERR_BUILD, "'atomic_add'", ".sem must be");
    tl_build_refused(bad_scope, TJ_ERR_BUILD, "'atomic_xchg'", ".scope must be");
    tl_build_refused(or_of_floats, TJ_ERR_TYPE, "'atomic_or'", "takes integers");
    tl_build_refused(narrow_or_sys, TJ_ERR_TYPE, "'atomic_or'", "32 and 64 bits only");
    tl_build_refused(cas_with_mask, TJ_ERR_BUILD, "'atomic_cas'", "takes no .mask");
    const tj_kernel *ks[] = {bitwise_i32, bitwise_u64, bitwise_i16, bitwise_i32_acquire, tickets};
    tl_ptx_of_every(ks, (int)TL_COUNT(ks));
    tj_device_close(dev);
    return tap_done();
}
