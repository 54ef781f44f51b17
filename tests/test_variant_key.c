/* SPDX-License-Identifier: MIT */
/*
 * test_variant_key.c — the stable variant key (src/jit/pipeline.c,
 * tjj_variant_key): the key the disk cache will use.
 *
 * The same kernel must get the same key in another process: the test runs
 * itself again as a child (its /proc/self/exe, --print-keys), whose addresses
 * differ (ASLR), and compares the child's keys with its own. Each input the
 * key stands for must change it: a constant, the specialization key, the
 * target (CPU, sm_80, sm_90, sm_90a), num_warps, num_stages, check_bounds, no_tma and the IR
 * (a kernel alike in all but one op); no_tma, which only GPU keys know, leaves
 * the CPU's key alone. A compile's artifact and a launched variant record the
 * same key; the grid's size is no part of it (odd and even grids share a
 * variant).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../src/jit/runtime/device_impl.h"
#include "builder/ir.h"
#include "testlib.h"

TJ_KERNEL(scale_add, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(y, f32), TJ_SCALAR(n, i32)), TJ_CONSTS(BLOCK))
{
    tj_val offs = tj_add(tj_mul(tj_program_id(0), BLOCK), tj_arange(0, BLOCK));
    tj_val mask = tj_lt(offs, n);
    tj_store(tj_add(y, offs), tj_add(tj_load(tj_add(x, offs), .mask = mask), tj_f32(1)), .mask = mask);
}

/* scale_add with a subtraction: the same signature, other IR. */
TJ_KERNEL(scale_sub, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(y, f32), TJ_SCALAR(n, i32)), TJ_CONSTS(BLOCK))
{
    tj_val offs = tj_add(tj_mul(tj_program_id(0), BLOCK), tj_arange(0, BLOCK));
    tj_val mask = tj_lt(offs, n);
    tj_store(tj_add(y, offs), tj_sub(tj_load(tj_add(x, offs), .mask = mask), tj_f32(1)), .mask = mask);
}

/* What the key is computed of. */
typedef struct key_case {
    const char *what;
    int sub;              /* scale_sub instead of scale_add */
    int64_t block;
    uint64_t spec;
    int sm, num_warps, check_bounds;
    int num_stages;       /* 0: the default (1) */
    int arch_specific;    /* sm_<sm>a */
    int no_tma;           /* the variant without TMA copies */
    int warp_specialize;  /* tj_warp_specialize */
    int persistent;       /* tjp_persistence */
    int cluster;          /* tj_cluster */
    int pairs_allowed;    /* an even tile count */
} key_case;

static const key_case cases[] = {
    {"the base case (sm_90, 4 warps)", 0, 256, 0x5, 90, 4, 0, 0, 0, 0, 0, 0, 0, 0},
    {"another constant", 0, 512, 0x5, 90, 4, 0, 0, 0, 0, 0, 0, 0, 0},
    {"another specialization key", 0, 256, 0x1, 90, 4, 0, 0, 0, 0, 0, 0, 0, 0},
    {"another target (sm_80)", 0, 256, 0x5, 80, 4, 0, 0, 0, 0, 0, 0, 0, 0},
    {"the CPU target", 0, 256, 0x5, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0},
    {"another num_warps", 0, 256, 0x5, 90, 8, 0, 0, 0, 0, 0, 0, 0, 0},
    {"check_bounds", 0, 256, 0x5, 90, 4, 1, 0, 0, 0, 0, 0, 0, 0},
    {"other IR (a sub for an add)", 1, 256, 0x5, 90, 4, 0, 0, 0, 0, 0, 0, 0, 0},
    {"another num_stages (2)", 0, 256, 0x5, 90, 4, 0, 2, 0, 0, 0, 0, 0, 0},
    {"the architecture-specific target (sm_90a)", 0, 256, 0x5, 90, 4, 0, 0, 1, 0, 0, 0, 0, 0},
    {"no_tma (the fallback without TMA copies)", 0, 256, 0x5, 90, 4, 0, 0, 0, 1, 0, 0, 0, 0},
    {"warp specialization forced on", 0, 256, 0x5, 90, 4, 0, 0, 0, 0, TJ_WARP_SPECIALIZE_ON, 0, 0, 0},
    {"warp specialization turned off", 0, 256, 0x5, 90, 4, 0, 0, 0, 0, TJ_WARP_SPECIALIZE_OFF, 0, 0, 0},
    {"persistent where it pays", 0, 256, 0x5, 90, 4, 0, 0, 0, 0, 0, TJP_PERSIST_WHERE_IT_PAYS, 0, 0},
    {"persistent always", 0, 256, 0x5, 90, 4, 0, 0, 0, 0, 0, TJP_PERSIST_ALWAYS, 0, 0},
    {"block pairs allowed (an even tile count)", 0, 256, 0x5, 90, 4, 0, 0, 0, 0, 0, TJP_PERSIST_ALWAYS, 0, 1},
    {"block pairs turned off", 0, 256, 0x5, 90, 4, 0, 0, 0, 0, 0, TJP_PERSIST_ALWAYS, TJ_CLUSTER_OFF, 1},
};
enum { CASE_SM90A = 9, CASE_NO_TMA = 10 };
enum { NCASES = (int)TL_COUNT(cases) };

/* The key of case c as 32 hex digits, or "" if the kernel did not build. */
static void key_of(const key_case *c, char hex[33])
{
    tji_func *fn;
    hex[0] = 0;
    if (tji_build(c->sub ? scale_sub : scale_add, &c->block, 1, &fn) != TJ_OK) {
        tap_diag("build: %s", tj_last_error());
        return;
    }
    fn->check_bounds = c->check_bounds;
    tjj_stable_key key = tjj_variant_key(fn, c->spec, c->sm, c->arch_specific, c->num_warps, c->num_stages,
                                         c->no_tma, c->warp_specialize, c->persistent, c->cluster, c->pairs_allowed);
    tjj_stable_key_hex(&key, hex);
    tji_func_free(fn);
}

/* The child: one key per line. */
static int print_keys(void)
{
    for (int i = 0; i < NCASES; i++) {
        char hex[33];
        key_of(&cases[i], hex);
        printf("%s\n", hex);
    }
    return 0;
}

/* The first variant of kernel k in dev's cache, or NULL. */
static const variant *find_variant(const tj_device *d, const tj_kernel *k)
{
    for (size_t b = 0; b < d->nbuckets; b++)
        for (const variant *v = d->buckets[b]; v; v = v->next)
            if (v->kernel == k)
                return v;
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--print-keys") == 0)
        return print_keys();
    tap_plan(NCASES + 7);

    char keys[NCASES][33];
    for (int i = 0; i < NCASES; i++)
        key_of(&cases[i], keys[i]);

    /* The same keys in another process. */
    char self[4096], command[4200];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    self[len > 0 ? len : 0] = 0;
    snprintf(command, sizeof command, "'%s' --print-keys", self);
    FILE *child = len > 0 ? popen(command, "r") : NULL;
    int same = child != NULL, lines = 0;
    char line[64];
    while (child && fgets(line, sizeof line, child)) {
        line[strcspn(line, "\n")] = 0;
        if (lines < NCASES && (strcmp(line, keys[lines]) != 0 || !*line))
            same = 0;
        lines++;
    }
    if (child && pclose(child) != 0)
        same = 0;
    tap_ok(same && lines == NCASES, "the %d keys are the same in a child process (%d lines; base %s)",
           NCASES, lines, keys[0]);
    char again[33];
    key_of(&cases[0], again);
    tap_ok(strcmp(again, keys[0]) == 0 && *again, "the base case's key is the same when computed again");

    for (int i = 1; i < NCASES; i++)
        tap_ok(*keys[i] && strcmp(keys[i], keys[0]) != 0, "%s changes the key (%s)", cases[i].what,
               keys[i]);

    /* The artifact of a GPU compile records the key of its target. */
    tji_func *fn;
    int ok = tji_build(scale_add, &cases[0].block, 1, &fn) == TJ_OK;
    tjj_artifact a = {0};
    char hex[33] = "";
    if (ok) {
        ok = tjj_compile_gpu(fn, &(tjj_gpu_target){.sm = 90, .num_warps = 4, .spec = 0x5}, &a) == TJ_OK;
        tjj_stable_key_hex(&a.key, hex);
        tji_func_free(fn);
    }
    if (!ok)
        tap_diag("%s", tj_last_error());
    tap_ok(ok && strcmp(hex, keys[0]) == 0, "a GPU compile's artifact records the key (%s)", hex);
    tjj_artifact_free(&a);
    /* ... and that of sm_90a, which it records as its target */
    ok = tji_build(scale_add, &cases[0].block, 1, &fn) == TJ_OK;
    a = (tjj_artifact){0};
    hex[0] = 0;
    if (ok) {
        ok = tjj_compile_gpu(fn, &(tjj_gpu_target){.sm = 90, .arch_specific = 1, .num_warps = 4, .spec = 0x5},
                             &a) == TJ_OK;
        tjj_stable_key_hex(&a.key, hex);
        tji_func_free(fn);
    }
    if (!ok)
        tap_diag("%s", tj_last_error());
    tap_ok(ok && strcmp(hex, keys[CASE_SM90A]) == 0 && a.arch_specific && strstr(a.gpu.ptx, ".target sm_90a"),
           "an sm_90a compile's artifact records its key and target, and its PTX is for sm_90a (%s)", hex);
    tjj_artifact_free(&a);
    /* ... and that of a target without TMA */
    ok = tji_build(scale_add, &cases[0].block, 1, &fn) == TJ_OK;
    a = (tjj_artifact){0};
    hex[0] = 0;
    if (ok) {
        ok = tjj_compile_gpu(fn, &(tjj_gpu_target){.sm = 90, .num_warps = 4, .spec = 0x5, .no_tma = 1}, &a) ==
             TJ_OK;
        tjj_stable_key_hex(&a.key, hex);
        tji_func_free(fn);
    }
    if (!ok)
        tap_diag("%s", tj_last_error());
    tap_ok(ok && strcmp(hex, keys[CASE_NO_TMA]) == 0, "a no_tma compile's artifact records its key (%s)", hex);
    tjj_artifact_free(&a);

    /* no_tma is a GPU variant's: the CPU's key ignores it */
    key_case cpu_no_tma = cases[4];
    cpu_no_tma.no_tma = 1;
    key_of(&cpu_no_tma, hex);
    tap_ok(*hex && strcmp(hex, keys[4]) == 0, "no_tma leaves the CPU target's key (%s)", hex);

    /* A launched CPU variant records the key of its kernel, constants and
     * aliasing (the CPU's variants know no other specialization). */
    tj_device *dev = NULL;
    const int n = 1000;
    tj_buffer x = {0}, y = {0};
    ok = tj_device_open(&dev, TJ_DEVICE_CPU, 0) == TJ_OK &&
         tj_buffer_alloc(dev, n * sizeof(float), &x) == TJ_OK &&
         tj_buffer_alloc(dev, n * sizeof(float), &y) == TJ_OK;
    tj_arg args[] = {TJ_ARG_BUF(x), TJ_ARG_BUF(y), TJ_ARG_I32(n)};
    tj_launch_cfg cfg = {.grid = {(n + 255) / 256}};
    ok = ok && tj_launch(dev, scale_add, &cfg, args, 3, &cases[0].block, 1) == TJ_OK;
    const variant *v = ok ? find_variant(dev, scale_add) : NULL;
    key_case cpu = cases[4];
    cpu.spec = 0; /* distinct buffers: no aliasing */
    char want[33], got[33] = "";
    key_of(&cpu, want);
    if (v)
        tjj_stable_key_hex(&v->key, got);
    else
        tap_diag("launch: %s", tj_last_error());
    tap_ok(v && strcmp(got, want) == 0, "a launched CPU variant records the key (%s)", got);
    /* A grid's parity is part of the key only where block pairs may be
     * made: otherwise odd and even grids would compile twice, and on a GPU
     * a launch of the cached kernel would wait for another thread's
     * compile (test_threads' twin failed so). */
    int same_off = tjj_launch_cluster(dev, TJ_CLUSTER_DEFAULT, 3) == tjj_launch_cluster(dev, TJ_CLUSTER_DEFAULT, 4) &&
                   tjj_launch_cluster(dev, TJ_CLUSTER_OFF, 3) == tjj_launch_cluster(dev, TJ_CLUSTER_OFF, 4);
    int on_even = tjj_launch_cluster(dev, TJ_CLUSTER_ON, 4), on_odd = tjj_launch_cluster(dev, TJ_CLUSTER_ON, 3);
    tap_ok(same_off && on_even == (TJ_CLUSTER_ON | TJJ_PAIRS_ALLOWED) && on_odd == TJ_CLUSTER_ON,
           "the grid's parity keys a variant only where pairs are asked for (on: %d and %d)", on_even, on_odd);
    tj_device_close(dev);
    return tap_done();
}
