/* SPDX-License-Identifier: MIT */
/*
 * jit.h — the back ends and the runtime they share.
 *
 * CPU back end (src/jit/cpu/): one call of the
 * compiled function computes the program instances first .. first+count-1
 * (linear indices: pid0 varies fastest), in a loop around the inlined
 * program body. Its C signature is
 *
 *     void kernel(<params>, int64_t first, int64_t count,
 *                 int32_t nprog0, int32_t nprog1, int32_t nprog2,
 *                 void *scratch, tjj_cpu_rt *rt);
 *
 * where a pointer parameter is a pointer, i1 is passed as uint8_t (0 or 1),
 * integers as their own width, f16/bf16 as uint16_t bits, f32 as float and
 * f64 as double. scratch is per-thread memory of scratch_bytes, 64-byte
 * aligned, holding the program's materialized tiles. rt collects device
 * prints and assert failures of the launch.
 */
#ifndef TJIT_JIT_H
#define TJIT_JIT_H

#include <pthread.h>

#include "../passes/passes.h"
#include "compile_log.h"
#include "tensor_map.h"

/* Per-launch runtime state that compiled CPU code reports into. */
typedef struct tjj_cpu_rt {
    const char *kernel_name;
    pthread_mutex_t lock;   /* serializes prints and the first failure */
    int assert_failed;      /* set once; the message below says where */
    char message[1024];
    const uint64_t *buffer_sizes; /* checked variants (bounds.h): bytes per parameter */
    struct tjj_gpu_assert *bounds; /* checked variants: the first bounds violation */
} tjj_cpu_rt;

typedef struct tjj_cpu_kernel tjj_cpu_kernel; /* a compiled variant, loaded */

/* A compiled variant as an object file for the host: what tjj_cpu_load
 * links, and what the disk cache keeps. */
typedef struct tjj_cpu_object {
    char *data;           /* malloc'ed, size bytes */
    size_t size;
    size_t scratch_bytes; /* the per-thread scratch the kernel needs */
} tjj_cpu_object;
TJI_FUNC void tjj_cpu_object_free(tjj_cpu_object *o);

/* buffers.c: the host pointer or device address of a live buffer (0: none),
 * for tests that look at the memory around a buffer (test_bounds). */
TJI_FUNC uint64_t tjj_buffer_address(tj_device *dev, tj_buffer buf);

/* Compiles a verified tile program and its fusion plan (tjp_materialize)
 * for the host CPU into an object file whose entry point is symbol
 * (tjj_cpu_entry_symbol). TJIT_DUMP=llvm prints the LLVM IR before and after
 * optimization. times (NULL: none) gets the stages llvm-ir, llvm-opt and
 * emit-object (machine code). */
TJI_FUNC tj_status tjj_cpu_compile(const tji_func *fn, const tjp_plan *plan, const char *symbol,
                                   tjj_stage_times *times, tjj_cpu_object *out);
/* The entry point's symbol of a kernel with this stable key (malloc'ed):
 * the same in every process, so that an object from the disk cache links. */
struct tjj_stable_key;
TJI_FUNC char *tjj_cpu_entry_symbol(const char *kernel_name, const struct tjj_stable_key *key);
/* Links obj into ORC's LLJIT and finds symbol in it; a kernel already
 * loaded under symbol is shared (same symbol, same key, same code). */
TJI_FUNC tj_status tjj_cpu_load(const tjj_cpu_object *obj, const char *symbol, const char *kernel_name,
                                tjj_cpu_kernel **out);
/* The host the code is for, "triple cpu features" (part of the stable
 * key); NULL where the JIT cannot start. */
TJI_FUNC const char *tjj_cpu_host(void);
TJI_FUNC void *tjj_cpu_kernel_entry(const tjj_cpu_kernel *k);
TJI_FUNC size_t tjj_cpu_kernel_scratch(const tjj_cpu_kernel *k);
TJI_FUNC void tjj_cpu_kernel_free(tjj_cpu_kernel *k);

/* cpu_runtime.c: functions compiled code calls (bound by address in ORC). */
TJI_FUNC void tjj_rt_assert_fail(tjj_cpu_rt *rt, const char *msg, const char *file,
                                 int line, int32_t pid0, int32_t pid1, int32_t pid2);
/* Prints each element of a materialized tile (row-major, numel elements of
 * dtype, shape dims d0..d3, rank) as "prefix (pid) [i,j]: value". */
TJI_FUNC void tjj_rt_print(tjj_cpu_rt *rt, const char *prefix, int32_t pid0,
                           int32_t pid1, int32_t pid2, int32_t dtype, const void *data,
                           int32_t rank, int32_t d0, int32_t d1, int32_t d2, int32_t d3);
TJI_FUNC float tjj_rt_f16_to_f32(uint16_t h);
TJI_FUNC uint16_t tjj_rt_f32_to_f16(float f);
TJI_FUNC float tjj_rt_bf16_to_f32(uint16_t h);
TJI_FUNC uint16_t tjj_rt_f32_to_bf16(float f);

/* threadpool.c: runs fn(ctx, worker, first, count) over [0, n) on all host
 * cores in chunks; returns when every chunk is done. */
typedef void (*tjj_task_fn)(void *ctx, int worker, int64_t first, int64_t count);
TJI_FUNC int tjj_pool_workers(void);
TJI_FUNC void tjj_pool_run(int64_t n, int64_t chunk, tjj_task_fn fn, void *ctx);

/*
 * GPU back end (src/jit/gpu/): a verified tile program whose tile values all
 * have layouts (tjp_assign_layouts) becomes one LLVM function per kernel in
 * the NVPTX target, SIMT over num_warps * 32 threads: program ids are ctaid,
 * each tile value is one LLVM value per register of its layout, lanes and
 * warps come from tid.x. Its signature is
 *
 *     kernel(<params>, ptr assert_info)   (ptx_kernel calling convention)
 *
 * (a bounds-checked variant, bounds.h, takes the byte size of each pointer
 * parameter's buffer after assert_info, as i64s; then come the tensor maps
 * of TMA copies, and last, in a persistent kernel (src/passes/persistent.c),
 * the logical program count as an i32, and after it, in a stream-K kernel
 * (src/jit/gpu/stream_k.c), the workspace's global pointer)
 * with pointers as global pointers and scalars as jit.h's CPU ABI gives them.
 * assert_info points at a tjj_gpu_assert record in device memory; the first
 * failing device assert fills it (atomically) and the launch reports it.
 */
typedef struct tjj_gpu_assert {
    uint32_t failed;      /* 0, or 1 once an assert failed */
    uint32_t op;          /* index of the failing ASSERT op in the tji_func */
    uint32_t pid[3];      /* the program that failed */
    /* a bounds violation (bounds.h; on the CPU too) is recorded here as well,
     * op being the memory op, with: */
    uint32_t param;       /* the parameter whose buffer the access missed */
    int64_t offset;       /* the access's bytes from that buffer's start */
    uint64_t size;        /* the buffer's bytes */
} tjj_gpu_assert;

typedef struct tjj_gpu_code {
    char *ptx;            /* malloc'ed PTX text */
    char *entry;          /* malloc'ed name of the kernel function in it */
    size_t shared_bytes;  /* dynamic shared memory a launch gives it (the plan's) */
    int num_warps;        /* computing warps; the block has */
    int producer_warps;   /*   these after them (warp specialization) */
    int ntmaps;           /* tensor maps its TMA copies read (tensor_map.h): */
    tjj_tmap_info *tmaps; /*   malloc'ed; parameters after the assert record */
    int persistent;       /* walks the launch's programs as tiles: a launch makes
                             fewer and passes their count (persistent.c) */
    int cluster;          /* blocks per cluster: 2 for block pairs (cluster_pairs.c),
                             whose launch runs an even number; 0: none */
    int64_t stream_k_piece_bytes; /* stream-K (src/passes/stream_k.c): the bytes of a
                             piece of a tile; the launch passes a workspace; 0: none */
} tjj_gpu_code;

/* Compiles for sm_<sm> (e.g. 90; sm_<sm>a with arch_specific), optimizing
 * at O3; TJIT_DUMP=llvm,ptx prints the LLVM IR and the PTX. The PTX needs
 * no GPU to be produced. */
/* Before the GPU passes: no tile so large that, whatever its layout, a
 * thread would hold more registers of it than the code generator allows
 * (the error names the largest such tile's op and line). */
TJI_FUNC tj_status tjj_gpu_check_tile_sizes(const tji_func *fn, int num_warps);
/* times (NULL: none) gets the stages llvm-ir, llvm-opt and emit-ptx. */
TJI_FUNC tj_status tjj_gpu_compile(const tji_func *fn, const tjp_layout_plan *plan,
                                   int sm, int arch_specific, tjj_stage_times *times, tjj_gpu_code *out);
TJI_FUNC void tjj_gpu_code_free(tjj_gpu_code *code);

#endif
