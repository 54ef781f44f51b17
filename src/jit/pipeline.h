/* SPDX-License-Identifier: MIT */
/*
 * pipeline.h — compiling a built tile program, one function per target
 * (pipeline.c), and what a compile gives: one artifact.
 *
 * Every compile goes through these: a launch's variant (runtime/variants.c),
 * tj_kernel_ptx* and tj_kernel_explain (runtime/offline.c), the ptxas check
 * (runtime/ptxas.c) and the tests of the passes, which stop after
 * the layouts (tjj_gpu_plan). No other file lists passes.
 */
#ifndef TJIT_PIPELINE_H
#define TJIT_PIPELINE_H

#include "jit.h"

typedef struct tjj_bounds_sites tjj_bounds_sites; /* bounds.h */

/* The stable variant key: XXH3-128 of everything that decides the code
 * (pipeline.c says what), equal in every process; the disk cache's key. */
typedef struct tjj_stable_key {
    uint64_t high, low;
} tjj_stable_key;
/* As 32 hex digits and a NUL. */
TJI_FUNC void tjj_stable_key_hex(const tjj_stable_key *key, char out[33]);

/* Where a device assert of a GPU variant is, by its op index. */
typedef struct tjj_assert_site {
    uint32_t op;
    char *file;
    int line;
    char *message;
} tjj_assert_site;

/* What a GPU compile is for. */
typedef struct tjj_gpu_target {
    int sm;               /* sm_<sm>: 10 * major + minor */
    int arch_specific;    /* sm_<sm>a: that chip's own features (sm_90a: Hopper's) */
    int num_warps;
    uint64_t spec;        /* the arguments' tjf_spec_key: what axis info may assume */
    int default_layouts;  /* tests: anchor accesses at the default layouts (no coalescing) */
    int num_stages;       /* software pipelining (pipeline_loops.c): 0 for the default (3; 1: none) */
    int no_tma;           /* no TMA copies (src/passes/tma.c): the launch's fallback where
                             a tensor map cannot be encoded */
    int warp_specialize;  /* tj_warp_specialize: a producer warpgroup for the TMA copies
                             (src/passes/warp_specialize.c) */
    int persistent;       /* tjp_persistence (src/passes/persistent.c): NEVER unless a
                             launch of a 1-D grid asks; with TJP_STREAM_K bits */
    int cluster;          /* tj_cluster: block pairs (src/passes/cluster_pairs.c) */
    int pairs_allowed;    /*   where the launch's tile count is even */
    tjj_stage_times *times; /* TJIT_LOG=compile: each step's time is added here; NULL: none */
} tjj_gpu_target;

/* The GPU passes' results up to the layouts (tjj_gpu_plan). */
typedef struct tjj_gpu_planned {
    tjp_axis_info_result axis;     /* of every value, the layout pass's conversions included */
    tjp_coalesce_result coalesced; /* empty with default_layouts */
    tjp_layout_plan plan;
} tjj_gpu_planned;
TJI_FUNC void tjj_gpu_planned_free(tjj_gpu_planned *p);

/* A compiled kernel variant. */
typedef struct tjj_artifact {
    tjj_stable_key key;
    char *kernel_name;
    int check_bounds;
    tjj_bounds_sites *bounds;  /* check_bounds: what a violation's message needs */
    int nasserts;              /* GPU: the device asserts, by op */
    tjj_assert_site *asserts;
    tjj_gpu_code gpu;          /* GPU: PTX, entry, shared bytes, num_warps */
    int sm;                    /* GPU: the PTX's target; 0 on the CPU */
    int arch_specific;         /* GPU: sm_<sm>a */
    tjp_layout_plan plan;      /* GPU: the layouts the PTX is made of (for PTX
                                * of another target: the ptxas check) */
    tjj_cpu_kernel *cpu;       /* CPU: the code in the JIT */
    tjj_cpu_object object;     /* CPU: that code as an object file */
    char *cubin;               /* GPU: what ptxas made of the PTX, where it ran */
    size_t cubin_size;
    int ptxas_checked;         /* TJIT_PTXAS passed the code (ptxas.h) */
} tjj_artifact;
/* Frees what the artifact still owns (a caller may take fields, NULLing them). */
TJI_FUNC void tjj_artifact_free(tjj_artifact *a);

/* The GPU pipeline up to the layouts: fn (built, so verified) gains the
 * layout pass's conversions; *out is the caller's to free, also on failure. */
TJI_FUNC tj_status tjj_gpu_plan(tji_func *fn, const tjj_gpu_target *target, tjj_gpu_planned *out);
/* The whole GPU pipeline, to PTX. */
TJI_FUNC tj_status tjj_compile_gpu(tji_func *fn, const tjj_gpu_target *target, tjj_artifact *out);
/* tj_kernel_explain's text of fn after tjj_gpu_plan (malloc'ed). */
TJI_FUNC char *tjj_gpu_explain(const tji_func *fn, const tjj_gpu_planned *planned);

/* A launch's compile, through the disk cache (runtime/disk_cache.h): the
 * code of the entry for fn's stable key where there is a valid one (*hit
 * 1), else the whole pipeline's (*hit 0), which the caller stores once it
 * has passed its checks. On a GPU the process's shared code comes first
 * (runtime/shared_code.h): another device's compile of the key (*hit 2,
 * holding a reference), or the claim to compile it (*claimed 1: the caller
 * publishes or abandons it, whatever the status). On the CPU the code goes into the JIT either way,
 * and spec matters only by its aliasing bit. times (NULL: none) gets each
 * step's time. */
TJI_FUNC tj_status tjj_compile_cpu_cached(tji_func *fn, uint64_t spec, tjj_stage_times *times,
                                          tjj_artifact *out, int *hit);
TJI_FUNC tj_status tjj_compile_gpu_cached(tji_func *fn, const tjj_gpu_target *target, tjj_artifact *out,
                                          int *hit, int *claimed);

/* The specialization key of a compile without a launch: every pointer is
 * a tjit buffer, so 16-byte aligned; nothing is known of scalars. */
TJI_FUNC uint64_t tjj_spec_of_buffers(const tj_kernel *kernel);

/* The stable key of a built fn (before any pass) for a target: sm 0 is
 * the host CPU (num_warps, num_stages, no_tma, warp_specialize and
 * persistent then ignored); no_tma (a GPU variant without TMA copies),
 * warp_specialize, persistent, cluster and pairs_allowed are in the key
 * only where not 0. */
/* A launch's num_stages with 0 meaning the default (3, as Triton). */
enum { TJJ_DEFAULT_NUM_STAGES = 3 }; /* why: tjj_num_stages in pipeline.c */
TJI_FUNC int tjj_num_stages(int num_stages);
TJI_FUNC tjj_stable_key tjj_variant_key(const tji_func *fn, uint64_t spec, int sm, int arch_specific,
                                        int num_warps, int num_stages, int no_tma, int warp_specialize,
                                        int persistent, int cluster, int pairs_allowed);

#endif
