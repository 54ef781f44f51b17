/* SPDX-License-Identifier: MIT */
/*
 * pipeline.c — compiling a built tile program: one function per target,
 * each the straight list of its steps.
 *
 *   GPU (tjj_compile_gpu)               CPU (tjj_compile_cpu_cached)
 *     stable key, bounds sites            stable key, bounds sites
 *     no tile too big for registers       lower-block-ptrs
 *     tjj_gpu_plan:                       carry-offsets (pointer tiles a loop
 *       lower-block-ptrs (pointer tiles     moves by a scalar)
 *                    and masks)           widen-fp8-dots (a dot's fp8
 *       pipeline-loops (num_stages; not     operands cast to f16)
 *                    in bounds-checked    materialize (the fusion plan)
 *                    code)                code generation, O3, ORC
 *       axis-info   (for the arguments'
 *                    specialization key)
 *       coalesce
 *       accelerate-dot (each dot's form)
 *       assign-layouts
 *       swizzle      (each shared-memory step's swizzle)
 *       alloc-shared (byte offsets, the kernel's total)
 *       barriers     (where bar.sync goes)
 *       specialize-warps (a producer warpgroup
 *                    for the TMA copies)
 *       pair-ctas    (clusters of two blocks that
 *                    multicast what both copy)
 *     the explainer (TJIT_DUMP=layouts)
 *     code generation, O3, PTX
 *     the device asserts' sites
 *
 * tjj_gpu_plan is where tj_kernel_explain and the tests of the passes stop;
 * the tile-size check stays outside it, so that they explain and lay out
 * any kernel, as they always have.
 *
 * fn comes verified from tji_build (whose TJIT_DUMP=ir shows it). After
 * each pass, after_pass checks and dumps: TJIT_DUMP=<pass> prints the
 * IR after that pass (dump_ir), and with pass checks on (TJIT_CHECK_PASSES=1,
 * which make check sets, or configure --enable-pass-checks) the IR is
 * verified and, once there is a layout plan, the plan checked (check_ir).
 * The layouts are checked after assign-layouts in every build, as they
 * always were. A new pass is one more line in the list: its call, then
 * after_pass with its name.
 *
 * With a tjj_stage_times (TJIT_LOG=compile, compile_log.h) every step is
 * timed as it returns: after_pass times its pass, and tjj_timed wraps the
 * other calls, so the list stays a list of calls. NULL times nothing.
 *
 * The specialization key of a launch (tjf_spec_key: which pointers are
 * 16-byte aligned, which integers are multiples of 16 or equal to 1) says
 * what axis info may assume. The explainer reads the pipeline's axis info:
 * every value the layout pass adds (a conversion, a recomputed op, a
 * converted op's fresh result) equals one that was analysed, element by
 * element, so its facts are copied (axis_info_of_added), not computed again.
 *
 * The stable variant key (tjj_variant_key) is XXH3-128 of the tjit and LLVM
 * versions, the library's build (tjj_build_id: a hash of libtjit's file),
 * the target (the host CPU's triple, name and features; or sm_XX, num_warps
 * and num_stages, and no_tma and warp specialization where set),
 * check_bounds, the specialization key, the constants and the printed IR
 * as built (tji_print), in that order — nothing of the process (no pointer,
 * no counter), so the same kernel has the same key in every process: the
 * key of the disk cache (runtime/disk_cache.c), which a launch's compile
 * asks first (tjj_compile_*_cached). The device's in-memory cache keeps its
 * own faster lookup by kernel pointer (runtime/variants.c) and records this
 * key in the variant.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Core.h>
#include "hash.h"

#include "../ffi_bind/ffi_bind.h"
#include "llvm/bounds.h"
#include "pipeline.h"
#include "runtime/disk_cache.h"
#include "runtime/shared_code.h"

/* --- checks and dumps between passes -------------------------------------- */

#ifdef TJIT_PASS_CHECKS
enum { PASS_CHECKS_DEFAULT = 1 };
#else
enum { PASS_CHECKS_DEFAULT = 0 };
#endif

/* Are the IR and the plan checked after every pass? */
static int pass_checks(void)
{
    const char *env = getenv("TJIT_CHECK_PASSES");
    if (!env || !*env)
        return PASS_CHECKS_DEFAULT;
    return strcmp(env, "0") != 0;
}

/* The IR verified and, where there is one, the layout plan checked. */
static tj_status check_ir(const tji_func *fn, const tjp_layout_plan *plan)
{
    tj_status st = tji_verify(fn);
    if (st == TJ_OK && plan)
        st = tjp_check_layouts(fn, plan);
    return st;
}

/* TJIT_DUMP=<pass>: the IR after the pass, with the layout plan so far, on
 * stderr. */
static void dump_ir(const tji_func *fn, const char *pass, const tjp_layout_plan *plan)
{
    char *text = tjp_print_annotated(fn, &(tjp_annotations){.layouts = plan});
    fprintf(stderr, "// TJIT_DUMP=%s: kernel '%s' after %s\n%s", pass, fn->name, pass, text);
    free(text);
}

/* What follows a pass that returned st: its time (TJIT_LOG=compile), the
 * check (always where `checked`, otherwise with pass checks on), then the
 * dump; the checks and the dumps are timed as stages of their own. */
static tj_status after_pass(tj_status st, const char *pass, const tji_func *fn,
                            const tjp_layout_plan *plan, int checked, tjj_stage_times *times)
{
    tjj_stage_done(times, pass);
    if (st == TJ_OK && (checked || pass_checks()))
        st = tjj_timed(times, "checks", check_ir(fn, plan));
    if (st == TJ_OK && tjs_dump_enabled(pass)) {
        dump_ir(fn, pass, plan);
        tjj_stage_done(times, "dumps");
    }
    return st;
}

/* --- the stable variant key ------------------------------------------------ */

tjj_stable_key tjj_variant_key(const tji_func *fn, uint64_t spec, int sm, int arch_specific,
                               int num_warps, int num_stages, int no_tma, int warp_specialize,
                               int persistent, int cluster, int pairs_allowed)
{
    unsigned major, minor, patch;
    LLVMGetVersion(&major, &minor, &patch);
    tjs_buf b = {0};
    tjs_buf_printf(&b, "tjit %s\nllvm %u.%u.%u\nbuild %s\n", TJ_VERSION_STRING, major, minor, patch,
                   tjj_build_id());
    if (sm) {
        tjs_buf_printf(&b, "target sm_%d%s num_warps %d num_stages %d\n", sm, arch_specific ? "a" : "",
                       num_warps, tjj_num_stages(num_stages));
        if (no_tma) /* only where set: every other variant keeps the key it had */
            tjs_buf_printf(&b, "no_tma 1\n");
        if (warp_specialize)
            tjs_buf_printf(&b, "warp_specialize %d\n", warp_specialize);
        if (persistent)
            tjs_buf_printf(&b, "persistent %d\n", persistent);
        if (cluster || pairs_allowed)
            tjs_buf_printf(&b, "cluster %d pairs_allowed %d\n", cluster, pairs_allowed);
    } else {
        const char *host = tjj_cpu_host();
        tjs_buf_printf(&b, "target cpu %s\n", host ? host : "unknown");
    }
    tjs_buf_printf(&b, "check_bounds %d\nspec %llx\nconsts %d:", fn->check_bounds,
                   (unsigned long long)spec, fn->nconsts);
    for (int i = 0; i < fn->nconsts; i++)
        tjs_buf_printf(&b, " %lld", (long long)fn->const_values[i]);
    char *ir = tji_print(fn);
    tjs_buf_printf(&b, "\n%s", ir);
    free(ir);
    XXH128_hash_t h = XXH3_128bits(b.data, b.len);
    tjs_buf_free(&b);
    return (tjj_stable_key){h.high64, h.low64};
}

void tjj_stable_key_hex(const tjj_stable_key *key, char out[33])
{
    snprintf(out, 33, "%016llx%016llx", (unsigned long long)key->high,
             (unsigned long long)key->low);
}

/* The default is Triton's 3 (DESIGN.md: pipelining pays once its rings
 * are read with ldmatrix, RESULTS.md 2026-12-02 05:48); 1 turns it off. */
int tjj_num_stages(int num_stages)
{
    return num_stages ? num_stages : TJJ_DEFAULT_NUM_STAGES;
}

/* --- artifacts ------------------------------------------------------------- */

/* What every artifact starts with, from fn as built. */
static void start_artifact(const tji_func *fn, uint64_t spec, const tjj_gpu_target *t, tjj_artifact *a)
{
    memset(a, 0, sizeof *a);
    a->key = t ? tjj_variant_key(fn, spec, t->sm, t->arch_specific, t->num_warps, t->num_stages, t->no_tma,
                                 t->warp_specialize, t->persistent, t->cluster, t->pairs_allowed)
               : tjj_variant_key(fn, spec, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    a->kernel_name = tjs_xstrdup(fn->name);
    a->check_bounds = fn->check_bounds;
    if (fn->check_bounds)
        a->bounds = tjj_bounds_sites_new(fn);
    a->sm = t ? t->sm : 0;
    a->arch_specific = t && t->arch_specific;
}

/* A bounds-checked variant is the debugging one: there each tj_assume is
 * checked as a device assert, so that a broken promise is reported where
 * it was made instead of being undefined behaviour. */
static void check_promises(tji_func *fn)
{
    for (int32_t i = 0; fn->check_bounds && i < fn->nops; i++)
        if (fn->ops[i].code == TJI_ASSUME_TRUE) {
            fn->ops[i].code = TJI_ASSERT;
            fn->ops[i].str = "a tj_assume is false (a bounds-checked launch checks each as an assert)";
        }
}

/* The asserts of fn, so that a failure can be told by op index. */
static void collect_asserts(const tji_func *fn, tjj_artifact *a)
{
    for (int32_t i = 0; i < fn->nops; i++)
        if (fn->ops[i].code == TJI_ASSERT)
            a->nasserts++;
    if (!a->nasserts)
        return;
    a->asserts = tjs_xcalloc((size_t)a->nasserts, sizeof *a->asserts);
    int n = 0;
    for (int32_t i = 0; i < fn->nops; i++) {
        const tji_op *op = &fn->ops[i];
        if (op->code != TJI_ASSERT)
            continue;
        a->asserts[n++] = (tjj_assert_site){(uint32_t)i, tjs_xstrdup(op->loc.file ? op->loc.file : "?"),
                                            op->loc.line, tjs_xstrdup(op->str ? op->str : "")};
    }
}

void tjj_artifact_free(tjj_artifact *a)
{
    for (int i = 0; i < a->nasserts; i++) {
        free(a->asserts[i].file);
        free(a->asserts[i].message);
    }
    free(a->asserts);
    tjj_bounds_sites_free(a->bounds);
    tjj_gpu_code_free(&a->gpu);
    tjp_layout_plan_free(&a->plan);
    tjj_cpu_kernel_free(a->cpu);
    tjj_cpu_object_free(&a->object);
    free(a->cubin);
    free(a->kernel_name);
    memset(a, 0, sizeof *a);
}

/* --- GPU --------------------------------------------------------------------- */

/* What the parameters of fn are known to be, from a tjf_spec_key: one
 * entry per parameter (malloc'ed). */
static tjp_param_spec *spec_of_key(const tji_func *fn, uint64_t key)
{
    tjp_param_spec *spec = tjs_xcalloc((size_t)fn->nparams + 1, sizeof *spec);
    for (int i = 0; i < fn->nparams; i++) {
        unsigned bits = i < TJF_SPEC_PARAMS ? (unsigned)(key >> (TJF_SPEC_BITS * i)) : 0;
        spec[i] = (tjp_param_spec){.ptr_align16 = !!(bits & TJF_SPEC_ALIGN16),
                                   .int_div16 = !!(bits & TJF_SPEC_DIV16),
                                   .is_one = !!(bits & TJF_SPEC_ONE)};
    }
    return spec;
}

uint64_t tjj_spec_of_buffers(const tj_kernel *kernel)
{
    uint64_t key = 0;
    for (int i = 0; i < kernel->nparams && i < TJF_SPEC_PARAMS; i++)
        if (kernel->params[i].is_ptr && !kernel->params[i].no_specialize)
            key |= (uint64_t)TJF_SPEC_ALIGN16 << (TJF_SPEC_BITS * i);
    return key;
}

/* Axis info of the values the layout pass added, from the values they
 * equal (plan->equal_to): the analysis need not run again. */
static void axis_info_of_added(const tji_func *fn, const tjp_layout_plan *plan,
                               tjp_axis_info_result *axis)
{
    int32_t analysed = axis->nvalues;
    if (fn->nvalues == analysed)
        return;
    axis->of = tjs_xrealloc(axis->of, ((size_t)fn->nvalues + 1) * sizeof *axis->of);
    for (int32_t v = analysed + 1; v <= fn->nvalues; v++) {
        int32_t same = v;
        while (same > analysed) /* 0 (unknown) where no pass said */
            same = plan->equal_to ? plan->equal_to[same] : 0;
        axis->of[v] = axis->of[same];
    }
    axis->nvalues = fn->nvalues;
}

void tjj_gpu_planned_free(tjj_gpu_planned *p)
{
    tjp_axis_info_free(&p->axis);
    tjp_coalesce_free(&p->coalesced);
    tjp_layout_plan_free(&p->plan);
}

tj_status tjj_gpu_plan(tji_func *fn, const tjj_gpu_target *t, tjj_gpu_planned *out)
{
    memset(out, 0, sizeof *out);
    tjj_stage_times *times = t->times;
    tjp_param_spec *spec = spec_of_key(fn, t->spec);
    const tjp_coalesce_result *coalesced = t->default_layouts ? NULL : &out->coalesced;
    tjp_target target = {t->sm, t->arch_specific, t->num_warps};
    int tma = t->sm >= 90 && t->arch_specific && !t->no_tma;
    tj_status st = after_pass(tjp_make_persistent(fn, &target, tma ? spec : NULL, tjj_num_stages(t->num_stages),
                                                  (tjp_persistence)(t->persistent & TJP_PERSIST_MODE), NULL),
                              "make-persistent", fn, NULL, 0, times);
    if (st == TJ_OK && (t->persistent & (TJP_STREAM_K | TJP_STREAM_K_REQUIRED)))
        st = after_pass(tjp_stream_k(fn, !!(t->persistent & TJP_STREAM_K_REQUIRED), NULL), "stream-k", fn,
                        NULL, 0, times);
    if (st == TJ_OK)
        st = after_pass(tjp_lower_block_ptrs(fn, tma ? spec : NULL), "lower-block-ptrs", fn, NULL, 0, times);
    /* bounds-checked code checks every access: its loads stay loads */
    if (st == TJ_OK && !fn->check_bounds)
        st = after_pass(tjp_pipeline_loops(fn, tjj_num_stages(t->num_stages), &target), "pipeline-loops",
                        fn, NULL, 0, times);
    if (st == TJ_OK)
        st = after_pass(tjp_axis_info(fn, spec, &out->axis), "axis-info", fn, NULL, 0, times);
    if (st == TJ_OK && coalesced)
        st = after_pass(tjp_coalesce(fn, &out->axis, t->num_warps, &out->coalesced), "coalesce",
                        fn, NULL, 0, times);
    if (st == TJ_OK)
        st = after_pass(tjp_accelerate_dots(fn, &target, &out->axis, &out->plan), "accelerate-dot",
                        fn, NULL, 0, times);
    if (st == TJ_OK && coalesced)
        st = after_pass(tjp_transpose_copies(fn, &out->plan, t->num_warps, &out->coalesced), "transpose-copies",
                        fn, NULL, 0, times);
    if (st == TJ_OK)
        st = after_pass(tjp_assign_layouts(fn, t->num_warps, coalesced, &out->plan),
                        "assign-layouts", fn, &out->plan, 1, times);
    if (st == TJ_OK)
        st = after_pass(tjp_choose_swizzles(fn, &out->plan), "swizzle", fn, &out->plan, 0, times);
    if (st == TJ_OK)
        st = after_pass(tjp_alloc_shared(fn, &out->plan), "alloc-shared", fn, &out->plan, 0, times);
    if (st == TJ_OK)
        st = after_pass(tjp_place_barriers(fn, &out->plan), "barriers", fn, &out->plan, 0, times);
    if (st == TJ_OK)
        st = after_pass(tjp_specialize_warps(fn, &target, t->warp_specialize, &out->plan), "specialize-warps",
                        fn, &out->plan, 0, times);
    if (st == TJ_OK)
        st = after_pass(tjp_pair_ctas(fn, &target, t->cluster, t->pairs_allowed, &out->plan), "pair-ctas", fn,
                        &out->plan, 0, times);
    if (st == TJ_OK)
        st = tjj_timed(times, "checks", tjp_check_roundtrip(fn, &out->plan));
    if (st == TJ_OK)
        axis_info_of_added(fn, &out->plan, &out->axis);
    free(spec);
    return st;
}

char *tjj_gpu_explain(const tji_func *fn, const tjj_gpu_planned *planned)
{
    return tjp_explain(fn, &planned->plan, &planned->axis);
}

/* The GPU pipeline for a started artifact. */
static tj_status compile_gpu(tji_func *fn, const tjj_gpu_target *t, tjj_artifact *out)
{
    tjj_stage_times *times = t->times;
    tjj_gpu_planned planned = {0};
    tj_status st = tjj_timed(times, "checks", tjp_check_roundtrip(fn, NULL));
    if (st == TJ_OK)
        st = tjj_timed(times, "tile-sizes", tjj_gpu_check_tile_sizes(fn, t->num_warps));
    if (st == TJ_OK)
        st = tjj_gpu_plan(fn, t, &planned);
    if (st == TJ_OK && tjs_dump_enabled("layouts")) {
        char *text = tjj_gpu_explain(fn, &planned);
        if (text)
            fprintf(stderr, "%s", text);
        free(text);
        tjj_stage_done(times, "dumps");
    }
    if (st == TJ_OK)
        st = tjj_gpu_compile(fn, &planned.plan, t->sm, t->arch_specific, times, &out->gpu);
    if (st == TJ_OK)
        collect_asserts(fn, out);
    out->plan = planned.plan;
    planned.plan = (tjp_layout_plan){0};
    tjj_gpu_planned_free(&planned);
    return st;
}

tj_status tjj_compile_gpu(tji_func *fn, const tjj_gpu_target *t, tjj_artifact *out)
{
    check_promises(fn);
    start_artifact(fn, t->spec, t, out);
    tjj_stage_done(t->times, "key");
    return compile_gpu(fn, t, out);
}

tj_status tjj_compile_gpu_cached(tji_func *fn, const tjj_gpu_target *t, tjj_artifact *out, int *hit,
                                 int *claimed)
{
    check_promises(fn);
    start_artifact(fn, t->spec, t, out);
    tjj_stage_done(t->times, "key");
    tjj_shared_claim claim = tjj_shared_code_begin(out);
    tjj_stage_done(t->times, "shared-code"); /* with any wait for another device's compile */
    *claimed = claim == TJJ_SHARED_MINE;
    if (claim == TJJ_SHARED_HIT) {
        *hit = 2;
        return TJ_OK;
    }
    *hit = tjj_disk_cache_load(out);
    tjj_stage_done(t->times, "disk-cache");
    return *hit ? TJ_OK : compile_gpu(fn, t, out);
}

/* --- CPU --------------------------------------------------------------------- */

/* The CPU pipeline for a started artifact: the object file, then the JIT. */
static tj_status compile_cpu(tji_func *fn, tjj_stage_times *times, tjj_artifact *out)
{
    tj_status st = tjj_timed(times, "checks", tjp_check_roundtrip(fn, NULL));
    if (st != TJ_OK)
        return st;
    st = after_pass(tjp_lower_block_ptrs(fn, NULL), "lower-block-ptrs", fn, NULL, 0, times);
    if (st != TJ_OK)
        return st;
    st = after_pass(tjp_carry_offsets(fn), "carry-offsets", fn, NULL, 0, times);
    if (st != TJ_OK)
        return st;
    st = after_pass(tjp_widen_fp8_dots(fn), "widen-fp8-dots", fn, NULL, 0, times);
    if (st != TJ_OK)
        return st;
    tjp_plan plan = {0};
    tjp_materialize(fn, &plan);
    st = after_pass(TJ_OK, "materialize", fn, NULL, 0, times);
    char *symbol = tjj_cpu_entry_symbol(fn->name, &out->key);
    if (st == TJ_OK)
        st = tjj_cpu_compile(fn, &plan, symbol, times, &out->object);
    if (st == TJ_OK)
        st = tjj_timed(times, "link", tjj_cpu_load(&out->object, symbol, fn->name, &out->cpu));
    free(symbol);
    tjp_plan_free(&plan);
    return st;
}

tj_status tjj_compile_cpu_cached(tji_func *fn, uint64_t spec, tjj_stage_times *times, tjj_artifact *out,
                                 int *hit)
{
    check_promises(fn);
    start_artifact(fn, spec & TJF_SPEC_ALIASED, NULL, out);
    tjj_stage_done(times, "key");
    *hit = tjj_disk_cache_load(out);
    tjj_stage_done(times, "disk-cache");
    if (*hit) {
        char *symbol = tjj_cpu_entry_symbol(fn->name, &out->key);
        tj_status st = tjj_timed(times, "link", tjj_cpu_load(&out->object, symbol, fn->name, &out->cpu));
        free(symbol);
        if (st == TJ_OK)
            return TJ_OK;
        /* an entry whose object does not link (it passed every check):
         * compiled again, and written over */
        if (tjs_dump_enabled("cache"))
            fprintf(stderr, "// TJIT_DUMP=cache: kernel '%s': its entry does not link (%s); recompiling\n",
                    fn->name, tj_last_error());
        tjs_clear_error();
        tjj_cpu_object_free(&out->object);
        out->ptxas_checked = 0;
        *hit = 0;
    }
    return compile_cpu(fn, times, out);
}
