/* SPDX-License-Identifier: MIT */
/*
 * device_impl.h — the inside of a tj_device, shared by the files of the
 * host API:
 *
 *   device.c      opening, closing and naming devices, tj_synchronize
 *   launch.c      tj_launch: the checks of a launch, its buffers, its variant
 *   device_cpu.c  the CPU's back-end operations (tjj_cpu_ops)
 *   device_gpu.c  the GPU's (tjj_gpu_ops): the CUDA context, memory, module
 *                 loading, assert records, launches
 *   buffers.c     buffer handles, and buffers held by the launches using them
 *   variants.c    the cache of compiled variants, compiles outside its lock
 *   ptxas.c       PTX targets, and the ptxas check of every variant
 *   offline.c     compiling without a device: tj_kernel_ptx*, tj_kernel_explain
 *   bench.c       tj_bench: timing the user's work by the kind's events
 *   multi.c       several devices: the open devices, tj_device_count, the
 *                 refusal of another device's handles, tj_buffer_copy
 *   shared_code.c a GPU compile shared by the devices of one architecture
 *
 * What differs between device kinds is one table of operations per kind,
 * tjj_backend (as QBE's Target is per machine): the files above call
 * dev->ops and never ask which kind a device is.
 *
 * Locks: buffers_lock (the buffer table), variants_lock (the cache),
 * pending_lock (assert records and the last kernel's name), never nested;
 * and build_lock, held while a kernel body runs (which may take
 * buffers_lock, in tj_buffer_* calls of the body).
 */
#ifndef TJIT_DEVICE_IMPL_H
#define TJIT_DEVICE_IMPL_H

#include <pthread.h>

#include "../../ffi_bind/ffi_bind.h"
#include "../jit.h"
#include "../pipeline.h"
#include "cuda_api.h"
#include "ptxas.h"

#define ALIGNMENT 64 /* buffers and scratch: a cache line, the widest vector */
enum { DEFAULT_NUM_WARPS = 4, MAX_NUM_WARPS = 32, MAX_NUM_STAGES = 8 };

/* A buffer's memory. A slot is live (a handle names it), held (freed by
 * the user while launches still use it: no handle, memory kept) or free. */
typedef struct buffer_slot {
    uint64_t addr;        /* host pointer or device address; 0: the slot is free */
    size_t size;
    uint64_t handle;      /* 0 once freed by the user */
    uint32_t uses;        /* launches and copies using the memory now */
    uint32_t next_free;   /* free list: index + 1 of the next free slot, 0 = end */
    uint64_t gpu_epoch;   /* GPU: the use epoch of its last use (see buffers.c) */
    uint32_t owner;       /* a view: index + 1 of the slot whose memory it shows
                             (holding one use of it); 0: none */
    uint8_t foreign;      /* the memory is not tjit's (tj_buffer_wrap) or is a
                             view's: never freed through this slot */
} buffer_slot;

typedef struct tjj_bounds_sites tjj_bounds_sites; /* bounds.h */

typedef enum variant_state { VARIANT_COMPILING, VARIANT_READY, VARIANT_FAILED } variant_state;

typedef struct variant {
    struct variant *next; /* hash chain */
    uint64_t hash;        /* of the lookup below (kernel pointer and all) */
    const tj_kernel *kernel;
    int nconsts;
    int64_t *consts;
    int num_warps;        /* part of the key on a GPU; 0 on the CPU */
    int num_stages;       /* part of the key on a GPU (tjj_num_stages); 0 on the CPU */
    uint64_t spec;        /* part of the key on a GPU: tjf_spec_key; 0 on the CPU */
    int check_bounds;     /* part of the key: a bounds-checked variant (bounds.h) */
    int no_tma;           /* part of the key on a GPU: compiled without TMA copies (the
                           * fallback where a launch's tensor maps cannot be encoded) */
    int warp_specialize;  /* part of the key on a GPU: tj_warp_specialize */
    int persistent;       /* part of the key on a GPU: tjp_persistence */
    int cluster;          /*   and, where persistent, tj_cluster | TJJ_PAIRS_ALLOWED */
    int shared_code;      /* GPU: holds a reference to the process's shared code
                           * of key (shared_code.h), released with the variant */
    /* variants_lock: */
    variant_state state;
    int waiters;          /* threads waiting for this compile */
    tj_status failure;    /* VARIANT_FAILED: the compile's status and message */
    char *failure_message;
    /* Set by the compile, read-only once READY: */
    tjf_sig sig;
    tjj_stable_key key;   /* the artifact's stable key (pipeline.h) */
    tjj_cpu_kernel *compiled;       /* CPU */
    tjcu_module module;             /* GPU */
    tjcu_function function;
    size_t shared_bytes;  /* dynamic shared memory each launch gives it */
    int threads;          /* GPU: per block (num_warps and any producer warpgroup) */
    int resident_programs;/* GPU, a persistent kernel (persistent.c): the programs
                             a launch runs at most, SMs x the blocks one holds;
                             0 for any other kernel */
    int64_t stream_k_piece_bytes; /* GPU, stream-K (src/passes/stream_k.c): a piece's
                             bytes, the launch's workspace holds 2 per program */
    int nasserts;
    tjj_assert_site *asserts;
    tjcu_deviceptr assert_record;   /* its own if nasserts > 0 or checked, else the device's */
    int pending;          /* launched since the last assert check (pending_lock) */
    tjj_bounds_sites *bounds; /* a checked variant's accesses, for its messages */
    tjj_tmap_set tmaps;   /* GPU: the tensor maps its TMA copies read (tensor_map.h),
                           * parameters after the assert record and any sizes */
} variant;

typedef struct scratch_slot {
    void *ptr;
    size_t size;
} scratch_slot;

typedef struct tjj_backend tjj_backend;

struct tj_device {
    const tjj_backend *ops;
    char name[128];
    int ordinal;          /* tj_device_open's: the GPU's CUDA ordinal; 0 on the CPU */
    uint64_t serial;      /* the process's count of devices opened, from 1 (multi.c) */

    pthread_mutex_t buffers_lock;
    buffer_slot *slots;
    uint32_t nslots, slots_cap;
    uint32_t free_head;   /* index + 1, 0 = none */
    uint64_t *map_keys;   /* handle -> slot index: open addressing, key 0 = empty */
    uint32_t *map_slots;
    size_t map_cap, map_count;
    uint32_t nheld;       /* slots freed by the user, still in use */
    uint64_t gpu_epoch;   /* GPU: uses so far (each queued use takes the next) */
    uint64_t gpu_synced;  /* GPU: every use up to this epoch has finished */

    pthread_mutex_t variants_lock;
    pthread_cond_t variant_done; /* a compile finished (variants_lock) */
    variant **buckets;
    size_t nbuckets, nvariants;
    int variant_waiters;  /* threads waiting for a compile (variants_lock) */
    pthread_mutex_t build_lock; /* kernel bodies run one at a time per device */
    int processors;       /* tj_device_processors: SMs, or the pool's workers */
    pthread_mutex_t streams_lock;
    struct tj_stream *streams; /* live streams and events (streams.c), whose */
    struct tj_event *events;   /*   resources tj_device_close frees */

    /* CPU */
    int nworkers;
    scratch_slot *scratch; /* one per pool worker */

    /* GPU */
    const tjcu_driver *cu;
    tjcu_device cu_device;
    tjcu_context context;
    int sm;               /* compute capability, 10 * major + minor */
    tjcu_deviceptr assert_record; /* shared by variants without asserts */
    int blocking;         /* TJIT_LAUNCH_BLOCKING=1: each launch waits */
    int no_tma;           /* every variant without TMA copies: TJIT_NO_TMA=1, or a driver
                           * without cuTensorMapEncodeTiled (0 on the CPU) */
    int pairs_by_default; /* a launch's TJ_CLUSTER_DEFAULT pairs blocks where it can:
                           * TJIT_BLOCK_PAIRS, else the library's default (0 on the CPU) */
    int stream_k_by_default; /* a launch's TJ_STREAM_K_DEFAULT splits where it can:
                           * TJIT_STREAM_K=1 (0 on the CPU) */
    pthread_mutex_t pending_lock;
    struct tjj_sk_workspace *sk_workspaces; /* per stream (stream_k_workspace.c; pending_lock) */
    int nsk_workspaces;
    variant **pending;    /* variants with asserts launched since the last check */
    int npending, pending_cap;
    const char *last_kernel; /* the name of the last kernel launched */
    /* multi.c, under its lock of the open devices: the GPU ordinals (< 64)
     * whose memory this GPU's context was asked to reach (peer access),
     * and those it reaches */
    uint64_t peers_tried, peers_enabled;
};

/* A stream or event: the device's native handle (tjj_backend), in the
 * device's lists until destroyed or the device closes (dev then NULL). */
struct tj_stream {
    tj_device *dev;
    uint64_t native;      /* 0 on the CPU */
    int owned;            /* made by tj_stream_create (not wrapped): destroyed with it */
    struct tj_stream *prev, *next;
};
struct tj_event {
    tj_device *dev;
    uint64_t native;
    int recorded;
    struct tj_event *prev, *next;
};

/* One device kind's half of the runtime. The flags say how the kind
 * behaves where the shared code must know; the functions do the work. */
struct tjj_backend {
    tj_device_kind kind;
    int asynchronous;     /* launches are queued: a freed buffer's memory waits
                           * for the device (buffers.c's epochs) */
    int specializes;      /* a variant per num_warps and per argument
                           * specialization key (tjf_spec_key); otherwise
                           * num_warps is ignored and only aliasing is keyed */
    int32_t max_grid_yz;  /* programs along y and z */
    int host_memory;      /* a buffer's address is a host pointer (the CPU's) */
    /* A device of this kind (dev->ops set); the ordinal is >= 0. */
    tj_status (*open)(int ordinal, tj_device **out);
    /* At close, before the buffers and variants go: waits for the device
     * (errors are past reporting). */
    void (*idle)(tj_device *dev);
    /* At close, after them: the rest of the kind's state. */
    void (*close)(tj_device *dev);
    /* Makes the device usable by the calling thread, for API function who. */
    tj_status (*enter)(tj_device *dev, const char *who);
    /* Waits for everything launched, reporting faults and failed asserts. */
    tj_status (*synchronize)(tj_device *dev, const char *who);
    /* Buffer memory (64-byte aligned) and copies to and from it; read
     * first waits for the kernels that may write it. */
    tj_status (*alloc)(tj_device *dev, size_t bytes, uint64_t *addr);
    void (*free)(tj_device *dev, uint64_t addr);
    /* Whether [addr, addr + bytes) is memory of this device that a buffer
     * may wrap (tj_buffer_wrap); else the error, naming who. */
    tj_status (*check_foreign)(tj_device *dev, uint64_t addr, size_t bytes, const char *who);
    tj_status (*write)(tj_device *dev, uint64_t dst, const void *src, size_t bytes,
                       const char *who);
    tj_status (*read)(tj_device *dev, void *dst, uint64_t src, size_t bytes, const char *who);
    /* A copy between two buffers of the device, queued as a launch is. */
    tj_status (*copy)(tj_device *dev, uint64_t dst, uint64_t src, size_t bytes, const char *who);
    /* A copy from a buffer of src_dev (a device of the same kind) to one of
     * dev, finished when it returns; NULL: tj_buffer_copy stages it
     * through the host. */
    tj_status (*copy_peer)(tj_device *dev, uint64_t dst, tj_device *src_dev, uint64_t src, size_t bytes,
                           const char *who);
    /* A buffer argument's value for the compiled code. */
    void (*pass_buffer)(tjf_value *value, uint64_t addr);
    /* Compiles the built tile program fn for the in-flight variant v by the
     * kind's pipeline (pipeline.h) into *a, and takes the code it runs
     * (num_warps and spec: a launch's, which the ptxas check uses); times
     * (TJIT_LOG=compile; NULL: none) gets each stage's time. */
    tj_status (*compile)(tj_device *dev, tji_func *fn, variant *v, int num_warps, uint64_t spec,
                         tjj_stage_times *times, tjj_artifact *a);
    void (*free_variant)(tj_device *dev, variant *v);
    /* Runs var over the grid nprog (total programs) with the arguments'
     * values and the byte sizes of their buffers, queued on stream (a
     * native handle, below; 0: the default stream). */
    tj_status (*launch)(tj_device *dev, const tj_kernel *kernel, variant *var, tjf_value *values,
                        uint64_t *sizes, const int32_t nprog[3], int64_t total, uint64_t stream);
    /* Streams, events and page-locked host memory (streams.c), by native
     * handles (a GPU's CUstream and CUevent; the CPU's own). */
    tj_status (*stream_new)(tj_device *dev, uint64_t *native, const char *who);
    void (*stream_free)(tj_device *dev, uint64_t native);
    /* Waits for the stream's work, reporting faults and failed asserts. */
    tj_status (*stream_wait)(tj_device *dev, uint64_t native, const char *who);
    /* Queues a copy between host and device memory on stream. */
    tj_status (*copy_async)(tj_device *dev, int to_device, uint64_t device_addr, void *host,
                            size_t bytes, uint64_t stream, const char *who);
    tj_status (*event_new)(tj_device *dev, uint64_t *native, const char *who);
    void (*event_free)(tj_device *dev, uint64_t native);
    tj_status (*event_record)(tj_device *dev, uint64_t event, uint64_t stream, const char *who);
    tj_status (*event_wait)(tj_device *dev, uint64_t event, const char *who);
    /* Milliseconds between two events recorded and complete. */
    tj_status (*event_elapsed)(tj_device *dev, uint64_t start, uint64_t end, float *ms, const char *who);
    tj_status (*host_alloc)(tj_device *dev, size_t bytes, void **out, const char *who);
    void (*host_free)(tj_device *dev, void *ptr);
};

/* device_cpu.c, device_gpu.c */
TJI_FUNC extern const tjj_backend tjj_cpu_ops;
TJI_FUNC extern const tjj_backend tjj_gpu_ops;

/* device.c: a device of ops' kind with its locks, and its end. */
TJI_FUNC tj_device *tjj_device_new(const tjj_backend *ops);
TJI_FUNC void tjj_device_free(tj_device *dev);
/* multi.c: the devices open in the process, for the messages that name
 * the device a handle belongs to. */
TJI_FUNC void tjj_device_register(tj_device *dev);
TJI_FUNC void tjj_device_unregister(tj_device *dev);
/* "GPU 1 (NVIDIA H200 (sm_90, 132 SMs))", "the CPU (cpu (x86_64, 2 threads))". */
TJI_FUNC void tjj_device_label(const tj_device *dev, char *out, size_t size);
/* Where buf is a live buffer of another open device than dev: 1, with
 * "belongs to <that device>, not to <dev>" in out. */
TJI_FUNC int tjj_buffer_elsewhere(const tj_device *dev, tj_buffer buf, char *out, size_t size);
/* A power of two from 1 to MAX_NUM_WARPS. */
TJI_FUNC int tjj_valid_num_warps(int n);

/* streams.c: at close, every stream's and event's resources go. */
TJI_FUNC void tjj_streams_close(tj_device *dev);
/* The native handle of a launch's stream (NULL: 0), checked to be dev's. */
TJI_FUNC tj_status tjj_stream_native(tj_device *dev, tj_stream *stream, const char *who, uint64_t *out);

/* context.c: a public call's CUDA context. TJJ_CONTEXT_SCOPE, first in a
 * public function that may reach the driver, opens a scope that pops, when
 * the function returns, the context tjj_gpu_enter pushed for it. */
typedef struct tjj_context_scope {
    int depth;
} tjj_context_scope;
TJI_FUNC tjj_context_scope tjj_context_scope_begin(void);
TJI_FUNC void tjj_context_scope_end(const tjj_context_scope *scope);
#define TJJ_CONTEXT_SCOPE                                                                    \
    tjj_context_scope tjj_scope_ __attribute__((cleanup(tjj_context_scope_end), unused)) =   \
        tjj_context_scope_begin()
/* Makes context current for the rest of the scope (outside any: for good). */
TJI_FUNC tj_status tjj_cuda_make_current(const tjcu_driver *cu, tjcu_context context, const char *who);

/* device_gpu.c: the CUDA calls other files make for a GPU device. */
TJI_FUNC tj_status tjj_cu_check(tjcu_result r, const char *who, const char *call);
TJI_FUNC tj_status tjj_gpu_enter(tj_device *dev, const char *who);
TJI_FUNC tj_status tjj_gpu_finish(tj_device *dev, const char *who);
/* Whether dev's context was given peer access to peer's memory (tests). */
TJI_FUNC int tjj_peer_access(const tj_device *dev, const tj_device *peer);

/* buffers.c. A buffer in use: its slot stays allocated until released. */
typedef struct tjj_buffer_use {
    uint32_t slot;
    uint64_t addr;
    size_t size;
} tjj_buffer_use;
/* The memory of a live buffer, held for a use until tjj_buffer_release; 0
 * if buf is no live buffer of dev. */
TJI_FUNC int tjj_buffer_acquire(tj_device *dev, tj_buffer buf, tjj_buffer_use *use);
/* Ends a use; on a GPU the use may still be running on the device. */
TJI_FUNC void tjj_buffer_release(tj_device *dev, const tjj_buffer_use *use);
/* The checks of a copy (a live buffer, a host pointer, the range inside the
 * buffer), holding the buffer in *use. */
TJI_FUNC tj_status tjj_copy_target(const char *who, tj_device *dev, tj_buffer buf, size_t offset,
                                   const void *host, size_t bytes, tjj_buffer_use *use);
/* GPU: the epoch of the uses queued so far, and (after a synchronize that
 * began later) the memory of freed buffers whose uses all have finished. */
TJI_FUNC uint64_t tjj_buffers_epoch(tj_device *dev);
TJI_FUNC void tjj_buffers_synced(tj_device *dev, uint64_t epoch);
TJI_FUNC void tjj_buffers_close(tj_device *dev);
/* Are buffers freed by the user waiting for their last uses? */
TJI_FUNC int tjj_buffers_held(tj_device *dev);
/* The error of a buffer that is no live buffer of dev: the zero handle,
 * another open device's buffer (naming both devices), or a dead one. */
TJI_FUNC tj_status tjj_dead_buffer(const char *who, const tj_device *dev, tj_buffer buf);
/* Whether buf is a live buffer of dev (takes dev's buffers_lock). */
TJI_FUNC int tjj_buffer_live(tj_device *dev, tj_buffer buf);

/* variants.c. cluster: the launch's tj_cluster, with TJJ_PAIRS_ALLOWED
 * where its tile count is even (src/passes/cluster_pairs.c). */
enum { TJJ_PAIRS_ALLOWED = 4 };
/* launch.c: a variant's cluster for a launch asking mode of a 1-D grid of
 * `programs`: the default resolved by the device, TJJ_PAIRS_ALLOWED where
 * pairs may be made and the count is even. */
TJI_FUNC int tjj_launch_cluster(const tj_device *dev, tj_cluster mode, int32_t programs);
TJI_FUNC tj_status tjj_get_variant(tj_device *dev, const tj_kernel *kernel,
                                   const int64_t *consts, int nconsts, int num_warps,
                                   int num_stages, uint64_t spec, int check_bounds,
                                   int no_tma, int warp_specialize, int persistent,
                                   int cluster, variant **out);
TJI_FUNC void tjj_variants_close(tj_device *dev);
/* Threads now waiting for another thread's compile (for tests). */
TJI_FUNC int tjj_variant_waiters(tj_device *dev);

/* stream_k_workspace.c: the workspace of a stream-K launch on `stream`, of at
 * least `bytes`, its first `counter_bytes` zero when the launch starts (the
 * launch writes nothing else below them), in *out; freed by the device's
 * close. */
TJI_FUNC tj_status tjj_stream_k_workspace(tj_device *dev, uint64_t stream, size_t counter_bytes, size_t bytes,
                                         const char *who, uint64_t *out);
TJI_FUNC void tjj_stream_k_workspaces_free(tj_device *dev);
/* Before `stream` is destroyed: its workspace goes, once the stream is done. */
TJI_FUNC void tjj_stream_k_workspace_forget(tj_device *dev, uint64_t stream);

#endif
