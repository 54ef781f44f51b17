/* SPDX-License-Identifier: MIT */
/*
 * registry.c — the passes by name, over one state.
 *
 * tjit-opt runs the passes a command line names in the order given; each
 * entry here wraps one pass so that it reads what it needs from the state
 * (the program, the argument specialization, num_warps, the results of the
 * passes before it) and stores what it finds there. An analysis a pass
 * needs and nothing has computed yet is computed on the way (coalescing
 * needs axis info), as Triton's passes ask for their analyses; a pass that
 * rewrites the program (layout assignment adds conversions) drops the
 * results it makes stale. Wrappers only: the passes themselves stay where
 * they are, so the pipeline can call these same entries.
 */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

static void drop_axis(tjp_pass_state *s)
{
    if (s->has_axis)
        tjp_axis_info_free(&s->axis);
    s->has_axis = 0;
}

static void drop_coalesce(tjp_pass_state *s)
{
    if (s->has_coalesce)
        tjp_coalesce_free(&s->coalesce);
    s->has_coalesce = 0;
}

static tj_status compute_axis(tjp_pass_state *s)
{
    drop_axis(s);
    tj_status st = tjp_axis_info(s->fn, s->spec, &s->axis);
    s->has_axis = st == TJ_OK;
    return st;
}

/* The pass: computes axis info and shows it in the printed result. */
static tj_status run_axis_info(tjp_pass_state *s)
{
    s->show_axis = 1;
    return compute_axis(s);
}

static tj_status run_coalesce(tjp_pass_state *s)
{
    tj_status st = s->has_axis ? TJ_OK : compute_axis(s);
    drop_coalesce(s);
    if (st == TJ_OK)
        st = tjp_coalesce(s->fn, &s->axis, s->num_warps, &s->coalesce);
    s->has_coalesce = st == TJ_OK;
    return st;
}

static tj_status run_assign_layouts(tjp_pass_state *s)
{
    if (s->has_layouts)
        return tjs_error(TJ_ERR_INVALID_ARG, "assign-layouts: the program has layouts already");
    tj_status st = tjp_assign_layouts(s->fn, s->num_warps,
                                      s->has_coalesce ? &s->coalesce : NULL, &s->layouts);
    s->has_layouts = st == TJ_OK;
    /* the pass added conversions: the analyses no longer cover every value */
    drop_axis(s);
    drop_coalesce(s);
    return st;
}

/* Before the layouts: they read the choices. */
static tj_status run_accelerate_dot(tjp_pass_state *s)
{
    if (s->has_layouts)
        return tjs_error(TJ_ERR_INVALID_ARG, "accelerate-dot: the program has layouts already "
                         "(the dots' forms are chosen before them)");
    tjp_target t = {s->sm, s->arch_specific, s->num_warps};
    return tjp_accelerate_dots(s->fn, &t, s->has_axis ? &s->axis : NULL, &s->layouts);
}

/* Between accelerate-dot (whose choices it reads) and assign-layouts
 * (which reads the copies' layouts it changes); coalesces on the way. */
static tj_status run_transpose_copies(tjp_pass_state *s)
{
    if (s->has_layouts || !s->layouts.dot)
        return tjs_error(TJ_ERR_INVALID_ARG, "transpose-copies: runs after --accelerate-dot and before "
                         "--assign-layouts");
    tj_status st = s->has_coalesce ? TJ_OK : run_coalesce(s);
    if (st == TJ_OK)
        st = tjp_transpose_copies(s->fn, &s->layouts, s->num_warps, &s->coalesce);
    return st;
}

static tj_status run_check_layouts(tjp_pass_state *s)
{
    if (!s->has_layouts)
        return tjs_error(TJ_ERR_INVALID_ARG, "check-layouts: the program has no layouts (run "
                         "--assign-layouts first, or give IR with #L layouts)");
    return tjp_check_layouts(s->fn, &s->layouts);
}

/* The plan's results from the swizzles (from_swizzle) or the allocation on:
 * a pass run again makes what follows it stale. */
static void drop_shared(tjp_layout_plan *p, int from_swizzle)
{
    if (from_swizzle) {
        free(p->shared);
        p->shared = NULL;
    }
    p->shared_bytes = 0;
    p->shared_allocated = 0;
    free(p->barrier);
    p->barrier = NULL;
}

static tj_status run_swizzle(tjp_pass_state *s)
{
    if (!s->has_layouts)
        return tjs_error(TJ_ERR_INVALID_ARG, "swizzle: the program has no layouts (run "
                         "--assign-layouts first, or give IR with #L layouts)");
    drop_shared(&s->layouts, 1);
    return tjp_choose_swizzles(s->fn, &s->layouts);
}

/* The allocation needs the steps: swizzles chosen on the way. */
static tj_status run_alloc_shared(tjp_pass_state *s)
{
    tj_status st = s->has_layouts && s->layouts.shared ? TJ_OK : run_swizzle(s);
    drop_shared(&s->layouts, 0);
    if (st == TJ_OK)
        st = tjp_alloc_shared(s->fn, &s->layouts);
    return st;
}

/* Barriers need every step, the allocation's broadcasts too. */
static tj_status run_barriers(tjp_pass_state *s)
{
    tj_status st = s->has_layouts && s->layouts.shared_allocated ? TJ_OK : run_alloc_shared(s);
    if (st == TJ_OK)
        st = tjp_place_barriers(s->fn, &s->layouts);
    return st;
}

/* The last of the GPU passes: barriers (and what they need) first. */
static tj_status run_specialize_warps(tjp_pass_state *s)
{
    tj_status st = s->has_layouts && s->layouts.barrier ? TJ_OK : run_barriers(s);
    if (st == TJ_OK)
        st = tjp_specialize_warps(s->fn, &(tjp_target){s->sm, s->arch_specific, s->num_warps},
                                  TJ_WARP_SPECIALIZE_DEFAULT, &s->layouts);
    return st;
}

/* Block pairs after the specialization (made first if not yet), as a
 * launch with an even tile count asks for them. */
static tj_status run_pair_ctas(tjp_pass_state *s)
{
    tj_status st = s->has_layouts && s->layouts.warp_spec ? TJ_OK : run_specialize_warps(s);
    if (st == TJ_OK)
        st = tjp_pair_ctas(s->fn, &(tjp_target){s->sm, s->arch_specific, s->num_warps}, TJ_CLUSTER_DEFAULT, 1,
                           &s->layouts);
    return st;
}

/* Rewrites the program: analyses made before it are stale. */
static tj_status run_lower_block_ptrs(tjp_pass_state *s)
{
    if (s->has_layouts)
        return tjs_error(TJ_ERR_INVALID_ARG, "lower-block-ptrs: the program has layouts "
                         "already (lower block pointers first)");
    drop_axis(s);
    drop_coalesce(s);
    /* Hopper keeps TMA's tensors where --spec says what the launch knows */
    return tjp_lower_block_ptrs(s->fn, s->sm >= 90 && s->arch_specific ? s->spec : NULL);
}

/* Loads go ahead into shared rings: before layouts, and the analyses are
 * stale after it. */
static tj_status run_pipeline_loops(tjp_pass_state *s)
{
    if (s->has_layouts)
        return tjs_error(TJ_ERR_INVALID_ARG, "pipeline-loops: the program has layouts already "
                         "(the pass runs before assign-layouts)");
    tj_status st = tjp_pipeline_loops(s->fn, s->num_stages ? s->num_stages : 3,
                                      &(tjp_target){s->sm, s->arch_specific, s->num_warps});
    drop_axis(s);
    drop_coalesce(s);
    return st;
}

/* The body moves into a loop over tiles: before block pointers are lowered
 * and before anything else, as in the pipeline. */
static tj_status make_persistent(tjp_pass_state *s, tjp_persistence mode)
{
    if (s->has_layouts)
        return tjs_error(TJ_ERR_INVALID_ARG, "make-persistent: the program has layouts already "
                         "(the pass runs first)");
    drop_axis(s);
    drop_coalesce(s);
    return tjp_make_persistent(s->fn, &(tjp_target){s->sm, s->arch_specific, s->num_warps}, s->spec,
                               s->num_stages ? s->num_stages : 3, mode, NULL);
}

static tj_status run_make_persistent(tjp_pass_state *s)
{
    return make_persistent(s, TJP_PERSIST_WHERE_IT_PAYS);
}

static tj_status run_make_persistent_always(tjp_pass_state *s)
{
    return make_persistent(s, TJP_PERSIST_ALWAYS);
}

/* The last wave split along K: after make-persistent, as in the pipeline. */
static tj_status run_stream_k(tjp_pass_state *s)
{
    if (s->has_layouts)
        return tjs_error(TJ_ERR_INVALID_ARG, "stream-k: the program has layouts already "
                         "(the pass runs right after make-persistent)");
    drop_axis(s);
    drop_coalesce(s);
    return tjp_stream_k(s->fn, 1, NULL);
}

static tj_status run_verify(tjp_pass_state *s) { return tji_verify(s->fn); }

static tj_status run_carry_offsets(tjp_pass_state *s)
{
    drop_axis(s);
    drop_coalesce(s);
    return tjp_carry_offsets(s->fn);
}

static tj_status run_widen_fp8_dots(tjp_pass_state *s)
{
    drop_axis(s);
    drop_coalesce(s);
    return tjp_widen_fp8_dots(s->fn);
}

static tj_status run_materialize(tjp_pass_state *s)
{
    if (s->has_cpu)
        tjp_plan_free(&s->cpu);
    tjp_materialize(s->fn, &s->cpu);
    s->has_cpu = 1;
    return TJ_OK;
}

static const tjp_pass_info passes[] = {
    {"make-persistent", "the body walks the launch's programs as tiles in a loop, where it pays "
     "on --sm (a launch's TJ_PERSISTENT_DEFAULT)", run_make_persistent},
    {"make-persistent-always", "make-persistent on any kernel (TJ_PERSISTENT_ON)",
     run_make_persistent_always},
    {"stream-k", "a persistent kernel's last wave split along K into pieces that the last to "
     "arrive sums (TJ_STREAM_K_ON; fails where the tile body is not a matmul's)", run_stream_k},
    {"lower-block-ptrs", "block pointers become pointer tiles, masks and carried offsets",
     run_lower_block_ptrs},
    {"pipeline-loops", "loads feeding a dot issued num_stages - 1 iterations ahead into shared "
     "rings (--num-stages=N, default 3)", run_pipeline_loops},
    {"axis-info", "what is known of each integer and address (shown as #axis<...>)",
     run_axis_info},
    {"coalesce", "the layout and vector each global access wants (#coalesce<...>)",
     run_coalesce},
    {"accelerate-dot", "each dot's form: mma.sync (instruction, warp split) or fma, for --sm "
     "(#dot<...> once layouts are assigned)", run_accelerate_dot},
    {"transpose-copies", "copies into a K-major-only wgmma ring (TF32) that run along M or N store "
     "it transposed, conflict-free (#coalesce<...>)", run_transpose_copies},
    {"assign-layouts", "every tile value's layout, conversions where they disagree (#L, "
     "#access)", run_assign_layouts},
    {"check-layouts", "checks every op's operands hold the elements it needs", run_check_layouts},
    {"swizzle", "each shared-memory step's kind and swizzle (#shared<...>)", run_swizzle},
    {"alloc-shared", "byte offsets of each step's buffers, the kernel's total "
     "(#shared_bytes; swizzles first if none)", run_alloc_shared},
    {"barriers", "where bar.sync goes (#barrier<...>, #barriers; allocates first if not yet)",
     run_barriers},
    {"specialize-warps", "a producer warpgroup issues the TMA copies where the loop allows it (#warp_spec, "
     "#role<...>; barriers first if not yet)", run_specialize_warps},
    {"pair-ctas", "clusters of two blocks whose copies of a shared tile multicast (#pairs, #peer; "
     "specializes warps first if not yet)", run_pair_ctas},
    {"verify", "checks the IR's invariants", run_verify},
    {"carry-offsets", "a loop's pointer tile moved by a scalar becomes its start plus a "
     "carried i64 offset (CPU)", run_carry_offsets},
    {"widen-fp8-dots", "a dot's fp8 operands cast to f16 before it (CPU)", run_widen_fp8_dots},
    {"materialize", "the CPU's fusion plan (#cpu<...>)", run_materialize},
};

const tjp_pass_info *tjp_find_pass(const char *name)
{
    for (size_t i = 0; i < sizeof passes / sizeof *passes; i++)
        if (strcmp(passes[i].name, name) == 0)
            return &passes[i];
    return NULL;
}

const tjp_pass_info *tjp_pass_table(int *n)
{
    *n = (int)(sizeof passes / sizeof *passes);
    return passes;
}

tjp_annotations tjp_pass_annotations(const tjp_pass_state *s)
{
    return (tjp_annotations){
        .layouts = s->has_layouts ? &s->layouts : NULL,
        .axis = s->has_axis && s->show_axis ? &s->axis : NULL,
        .coalesce = s->has_coalesce ? &s->coalesce : NULL,
        .cpu = s->has_cpu ? &s->cpu : NULL,
    };
}

void tjp_pass_state_free(tjp_pass_state *s)
{
    drop_axis(s);
    drop_coalesce(s);
    tjp_layout_plan_free(&s->layouts); /* also the dots' forms, chosen before any layout */
    if (s->has_cpu)
        tjp_plan_free(&s->cpu);
    free(s->spec);
    tji_func_free(s->fn);
    memset(s, 0, sizeof *s);
}
