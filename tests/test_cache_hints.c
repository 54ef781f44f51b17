/* SPDX-License-Identifier: MIT */
/*
 * test_cache_hints.c — cache modifiers, eviction policies and volatile
 * loads reach the PTX, and the combinations PTX cannot express are errors.
 *
 * Each accepted hint is compiled with tj_kernel_ptx (no GPU needed) and the
 * PTX must hold its instruction (ld.global.cg.f32, st.global.L1::evict_last,
 * ld.volatile.global, ...); a kernel without hints must hold none of them.
 * The copy kernels of the other dtypes check every register form (.b16,
 * .u8, .b64, .f64); under `make check` ptxas assembles all of this PTX.
 * Bad combinations must fail with TJ_ERR_BUILD and a message naming this
 * file and the line of the access. Finally every hint is launched on the
 * test device (TJIT_TEST_DEVICE): the CPU back end ignores hints, the GPU
 * honours them, and the values must be those of a plain copy either way.
 */
#include "testlib.h"

enum { BLOCK = 128 };

static int load_line, store_line;

/* Copies x to out + 1 with the hints given as constants. */
TJ_KERNEL(copy_f32, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(out, f32), TJ_SCALAR(n, i32)),
          TJ_CONSTS(LC, LE, VOL, SC, SE))
{
    tj_val offs = tj_arange(0, BLOCK);
    tj_val mask = tj_lt(offs, n);
    load_line = __LINE__ + 1;
    tj_val v = tj_load(tj_add(x, offs), .mask = mask, .cache = (tj_cache)LC,
                       .evict = (tj_evict)LE, .is_volatile = (int)VOL);
    store_line = __LINE__ + 1;
    tj_store(tj_add(out, offs), tj_add(v, 1), .mask = mask, .cache = (tj_cache)SC,
             .evict = (tj_evict)SE);
}

/* Unmasked copies of the other dtypes, hints as in copy_f32. */
#define COPY_KERNEL(NAME, DT)                                                                   \
    TJ_KERNEL(NAME, TJ_PARAMS(TJ_PTR(x, DT), TJ_PTR(out, DT)), TJ_CONSTS(LC, LE, VOL, SC, SE)) \
    {                                                                                           \
        tj_val offs = tj_arange(0, BLOCK);                                                      \
        tj_val v = tj_load(tj_add(x, offs), .cache = (tj_cache)LC, .evict = (tj_evict)LE,       \
                           .is_volatile = (int)VOL);                                            \
        tj_store(tj_add(out, offs), v, .cache = (tj_cache)SC, .evict = (tj_evict)SE);           \
    }
COPY_KERNEL(copy_f64, f64)
COPY_KERNEL(copy_f16, f16)
COPY_KERNEL(copy_bf16, bf16)
COPY_KERNEL(copy_i1, i1)
COPY_KERNEL(copy_i8, i8)
COPY_KERNEL(copy_u8, u8)
COPY_KERNEL(copy_i16, i16)
COPY_KERNEL(copy_i32, i32)
COPY_KERNEL(copy_i64, i64)

typedef struct hint_case {
    tj_cache lc;
    tj_evict le;
    int vol;
    tj_cache sc;
    tj_evict se;
    const char *load_insn, *store_insn; /* expected in the PTX, NULL: none */
} hint_case;

static const hint_case accepted[] = {
    {TJ_CACHE_CA, 0, 0, TJ_CACHE_WB, 0, "ld.global.ca.f32", "st.global.wb.f32"},
    {TJ_CACHE_CG, 0, 0, TJ_CACHE_CG, 0, "ld.global.cg.f32", "st.global.cg.f32"},
    {TJ_CACHE_CS, 0, 0, TJ_CACHE_CS, 0, "ld.global.cs.f32", "st.global.cs.f32"},
    {TJ_CACHE_LU, 0, 0, TJ_CACHE_WT, 0, "ld.global.lu.f32", "st.global.wt.f32"},
    {TJ_CACHE_CV, 0, 0, 0, TJ_EVICT_FIRST, "ld.global.cv.f32", "st.global.L1::evict_first.f32"},
    {0, TJ_EVICT_FIRST, 0, 0, TJ_EVICT_LAST, "ld.global.L1::evict_first.f32",
     "st.global.L1::evict_last.f32"},
    {0, TJ_EVICT_LAST, 0, 0, 0, "ld.global.L1::evict_last.f32", NULL},
    {0, 0, 1, 0, 0, "ld.volatile.global", NULL},
};

/* What no hint-free kernel may contain. */
static const char *const hinted[] = {
    "ld.global.ca", "ld.global.cg", "ld.global.cs", "ld.global.lu", "ld.global.cv",
    "st.global.wb", "st.global.cg", "st.global.cs", "st.global.wt", "L1::evict", "volatile",
};

static char *ptx_of(const tj_kernel *k, const hint_case *h)
{
    int64_t consts[5] = {h->lc, h->le, h->vol, h->sc, h->se};
    char *ptx = NULL;
    tj_status st = tj_kernel_ptx(k, consts, 5, "sm_90", 4, &ptx);
    if (st != TJ_OK) {
        tap_diag("  tj_kernel_ptx: %s: %s", tj_status_name(st), tj_last_error());
        return NULL;
    }
    return ptx;
}

static void test_default_has_no_hints(void)
{
    char *ptx = ptx_of(copy_f32, &(hint_case){0});
    const char *found = NULL;
    for (size_t i = 0; ptx && i < sizeof hinted / sizeof *hinted; i++)
        if (strstr(ptx, hinted[i]))
            found = hinted[i];
    tap_ok(ptx && !found && strstr(ptx, "ld.global") && strstr(ptx, "st.global"),
           "a kernel without hints has plain ld.global/st.global and no hint");
    if (found)
        tap_diag("  found '%s'", found);
    free(ptx);
}

static void test_accepted_hints(void)
{
    for (size_t i = 0; i < sizeof accepted / sizeof *accepted; i++) {
        const hint_case *h = &accepted[i];
        char *ptx = ptx_of(copy_f32, h);
        int ok = ptx && strstr(ptx, h->load_insn) && (!h->store_insn || strstr(ptx, h->store_insn));
        tap_ok(ok, "PTX holds %s%s%s", h->load_insn, h->store_insn ? " and " : "",
               h->store_insn ? h->store_insn : "");
        free(ptx);
    }
}

/* Every dtype's register form: .cg loads and .cs stores, and L1 hints. */
static void test_dtypes(void)
{
    static const struct {
        const tj_kernel *const *k;
        const char *name, *suffix;
    } kernels[] = {
        {&copy_f64, "copy_f64", ".f64"}, {&copy_f16, "copy_f16", ".b16"},
        {&copy_bf16, "copy_bf16", ".b16"}, {&copy_i1, "copy_i1", ".u8"},
        {&copy_i8, "copy_i8", ".u8"},     {&copy_u8, "copy_u8", ".u8"},
        {&copy_i16, "copy_i16", ".b16"},  {&copy_i32, "copy_i32", ".b32"},
        {&copy_i64, "copy_i64", ".b64"},
    };
    static const hint_case cg_cs = {TJ_CACHE_CG, 0, 0, TJ_CACHE_CS, 0, NULL, NULL};
    static const hint_case evicts = {0, TJ_EVICT_LAST, 0, 0, TJ_EVICT_FIRST, NULL, NULL};
    for (size_t i = 0; i < sizeof kernels / sizeof *kernels; i++) {
        const char *name = kernels[i].name;
        char ld[64], st[64], ld2[64], st2[64];
        snprintf(ld, sizeof ld, "ld.global.cg%s", kernels[i].suffix);
        snprintf(st, sizeof st, "st.global.cs%s", kernels[i].suffix);
        snprintf(ld2, sizeof ld2, "ld.global.L1::evict_last%s", kernels[i].suffix);
        snprintf(st2, sizeof st2, "st.global.L1::evict_first%s", kernels[i].suffix);
        char *ptx = ptx_of(*kernels[i].k, &cg_cs);
        tap_ok(ptx && strstr(ptx, ld) && strstr(ptx, st), "%s: PTX holds %s and %s", name, ld, st);
        free(ptx);
        ptx = ptx_of(*kernels[i].k, &evicts);
        tap_ok(ptx && strstr(ptx, ld2) && strstr(ptx, st2), "%s: PTX holds %s and %s", name, ld2,
               st2);
        free(ptx);
    }
}

static void test_bad_combinations(void)
{
    static const struct {
        hint_case h;
        int on_store;
        const char *words;
    } bad[] = {
        {{TJ_CACHE_WB, 0, 0, 0, 0, NULL, NULL}, 0, ".wb applies to stores only"},
        {{TJ_CACHE_WT, 0, 0, 0, 0, NULL, NULL}, 0, ".wt applies to stores only"},
        {{0, 0, 0, TJ_CACHE_CA, 0, NULL, NULL}, 1, ".ca applies to loads only"},
        {{0, 0, 0, TJ_CACHE_LU, 0, NULL, NULL}, 1, ".lu applies to loads only"},
        {{0, 0, 0, TJ_CACHE_CV, 0, NULL, NULL}, 1, ".cv applies to loads only"},
        {{TJ_CACHE_CG, TJ_EVICT_LAST, 0, 0, 0, NULL, NULL}, 0, "cannot be combined"},
        {{0, 0, 0, TJ_CACHE_CS, TJ_EVICT_FIRST, NULL, NULL}, 1, "cannot be combined"},
        {{TJ_CACHE_CV, 0, 1, 0, 0, NULL, NULL}, 0, "volatile load takes no cache"},
        {{0, TJ_EVICT_FIRST, 1, 0, 0, NULL, NULL}, 0, "volatile load takes no cache"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const hint_case *h = &bad[i].h;
        int64_t consts[5] = {h->lc, h->le, h->vol, h->sc, h->se};
        char *ptx = NULL;
        tj_status st = tj_kernel_ptx(copy_f32, consts, 5, "sm_90", 4, &ptx);
        const char *msg = tj_last_error();
        char where[96];
        snprintf(where, sizeof where, "test_cache_hints.c:%d: error: in kernel 'copy_f32', op '%s'",
                 bad[i].on_store ? store_line : load_line, bad[i].on_store ? "store" : "load");
        int ok = st == TJ_ERR_BUILD && msg && strstr(msg, where) && strstr(msg, bad[i].words);
        tap_ok(ok, "bad hint %zu: TJ_ERR_BUILD naming the line and '%s'", i, bad[i].words);
        if (!ok)
            tap_diag("  got %s: %s", tj_status_name(st), msg ? msg : "(none)");
        free(ptx);
    }
}

/* Every accepted hint, and none, launched: x + 1 lands in out[0..n), the
 * poison after n survives. */
static void test_results(tj_device *dev)
{
    int n = (int)tl_rand_range(1, BLOCK - 1);
    float x[BLOCK], want[BLOCK], got[BLOCK], poison[BLOCK];
    tl_fill_random(TJ_F32, x, BLOCK);
    tj_buffer bx = tl_upload(dev, x, sizeof x), bo = tl_poisoned(dev, sizeof got);
    tl_download(dev, bo, poison, sizeof poison);
    for (int i = 0; i < BLOCK; i++)
        want[i] = i < n ? x[i] + 1 : poison[i];
    size_t ncases = sizeof accepted / sizeof *accepted;
    for (size_t i = 0; i <= ncases; i++) {
        const hint_case *h = i < ncases ? &accepted[i] : &(hint_case){0};
        char what[128];
        snprintf(what, sizeof what, "results with %s", i < ncases ? h->load_insn : "no hints");
        tl_repoison(dev, bo, sizeof got);
        tj_launch_cfg cfg = tl_grid(1, 1, 1);
        if (!tl_launch_failed(copy_f32_launch(dev, &cfg, bx, bo, n, h->lc, h->le, h->vol, h->sc, h->se),
                              what)) {
            tl_download(dev, bo, got, sizeof got);
            tl_check(what, TJ_F32, got, want, BLOCK, 0, 0);
        }
    }
    tj_buffer_free(dev, bx);
    tj_buffer_free(dev, bo);
}

int main(void)
{
    tj_device *dev = tl_setup("test_cache_hints");
    test_default_has_no_hints();
    test_accepted_hints();
    test_dtypes();
    test_bad_combinations();
    test_results(dev);
    tj_device_close(dev);
    return tap_done();
}
