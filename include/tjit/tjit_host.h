/* SPDX-License-Identifier: MIT */
/*
 * tjit_host.h — the host API of tjit.h: devices, buffers, launches,
 * streams and events, offline compiles and ahead-of-time export, the
 * layout explainer. Part of <tjit.h>, which includes it: include that, not
 * this.
 */
#ifndef TJIT_PUBLIC_HOST_H
#define TJIT_PUBLIC_HOST_H

#ifndef TJIT_H
#error "include <tjit.h>, not its parts"
#endif

/* ------------------------------------------------------------------------ */
/* Host API                                                                 */
/* ------------------------------------------------------------------------ */

typedef struct tj_device tj_device; /* opaque */
typedef struct tj_stream tj_stream; /* opaque */

typedef enum tj_device_kind {
    TJ_DEVICE_DEFAULT, /* the first GPU, else the CPU; TJIT_DEVICE=cpu|gpu overrides */
    TJ_DEVICE_CPU,
    TJ_DEVICE_GPU
} tj_device_kind;

/* How many devices of a kind tj_device_open can be asked for (ordinals 0
 * to the count - 1): the GPUs the CUDA driver sees (cuDeviceGetCount; one
 * older than sm_80 is counted, and refused by tj_device_open), 0 where no
 * driver loads or it sees none (tj_last_error() then says why); 1 for
 * TJ_DEVICE_CPU; for TJ_DEVICE_DEFAULT what tj_device_open would choose
 * among (TJIT_DEVICE, else the GPUs if there are any, else the CPU: 1).
 * Never fails otherwise; an unknown kind gives 0 and the error. */
TJ_API int tj_device_count(tj_device_kind kind);
/* Opens a device. ordinal picks among GPUs (0: the first).
 *
 * Several devices: a process may open every GPU (and the CPU) and use
 * them at once, from any threads. Each device has its own buffers,
 * streams and events, and a handle of one device given to another is
 * refused (TJ_ERR_INVALID_ARG; TJ_ERR_LAUNCH for a launch's arguments)
 * with a message naming both ("buffer 0x... belongs to GPU 1 (...), not
 * to GPU 0 (...)"). Kernels belong to no device: one tj_kernel launches
 * on any, and a variant compiled for one GPU is compiled once for all the
 * process's GPUs of its architecture (each loads its own module). The
 * same GPU may be opened twice: two devices, each with its own handles.
 * tj_buffer_copy copies between devices. */
TJ_API tj_status tj_device_open(tj_device **out, tj_device_kind kind, int ordinal);
TJ_API void tj_device_close(tj_device *dev); /* closes it and frees its buffers and kernels */
TJ_API tj_device_kind tj_device_get_kind(const tj_device *dev); /* TJ_DEVICE_CPU or TJ_DEVICE_GPU */
/* Its name: "cpu (x86_64, 2 threads)", "NVIDIA H200 (sm_90, 132 SMs)". */
TJ_API const char *tj_device_name(const tj_device *dev);
/* How many processors run programs side by side: a GPU's streaming
 * multiprocessors (132 on an H200), the CPU's worker threads; 0 (and the
 * error set) for NULL. A persistent kernel (Triton's tutorial 09) launches
 * about this many programs, each walking tiles. */
TJ_API int tj_device_processors(const tj_device *dev);
/* Waits for the device's work; reports a failed assert or fault of it. */
TJ_API tj_status tj_synchronize(tj_device *dev);

/* A buffer is a handle (not a pointer): using a freed buffer is an error
 * that tjit reports, never undefined behavior. The zero handle is "no buffer".
 * Handles are never reissued in a process (a 64-bit serial), so a freed
 * buffer, or one of a closed or another device, never comes back to life.
 *
 * tj_buffer_free may be called while the buffer is in use — by a launch on
 * another thread, or on a GPU by launches still queued or running: the
 * handle is dead at once (TJ_OK), and the memory is kept until those uses
 * are done. On the CPU the last launch using it releases it; on a GPU the
 * next synchronization does (tj_synchronize, tj_buffer_read,
 * tj_device_close, or a tj_buffer_alloc that would otherwise fail for want
 * of memory). A launch uses its buffers from its start, compile included. */
typedef struct tj_buffer {
    uint64_t handle;
} tj_buffer;

/* Buffers: allocation, release, and copies to and from host memory at a
 * byte offset (tj_buffer_read waits for the device's work first). */
TJ_API tj_status tj_buffer_alloc(tj_device *dev, size_t bytes, tj_buffer *out);
TJ_API tj_status tj_buffer_free(tj_device *dev, tj_buffer buf);
TJ_API tj_status tj_buffer_write(tj_device *dev, tj_buffer dst, size_t offset,
                                 const void *src, size_t bytes);
TJ_API tj_status tj_buffer_read(tj_device *dev, tj_buffer src, size_t offset,
                                void *dst, size_t bytes);
TJ_API size_t tj_buffer_size(tj_device *dev, tj_buffer buf); /* its size in bytes; 0 if invalid */

/* Copies bytes from byte src_offset of buffer src of device src_dev to
 * byte dst_offset of buffer dst of device dst_dev: within one device, or
 * between two (several GPUs, a GPU and the CPU, two CPU devices). Both
 * buffers must be live buffers of their devices and both ranges inside
 * them; ranges that overlap in the same memory are refused unless they
 * are the same bytes (a buffer and a view of it: copy through another
 * buffer). 0 bytes is no copy, once the buffers are checked.
 *
 * Within a GPU the copy is queued as a launch is (cuMemcpyDtoD, on the
 * default stream: after the work queued before it, before the work queued
 * after). Between GPUs it is cuMemcpyPeer, directly from GPU to GPU where
 * the hardware allows peer access (tjit enables it the first time two
 * devices copy), staged through the host by the driver otherwise; it
 * follows the work queued on both devices and is finished when the call
 * returns (both devices are synchronized: a fault of their earlier work is
 * reported here, as tj_buffer_read would). Between a GPU and the
 * CPU device it is the GPU's copy to or from the CPU buffer's memory,
 * finished when the call returns (from the GPU: after its work, as
 * tj_buffer_read). On the CPU a memcpy. */
TJ_API tj_status tj_buffer_copy(tj_device *dst_dev, tj_buffer dst, size_t dst_offset, tj_device *src_dev,
                                tj_buffer src, size_t src_offset, size_t bytes);

/* Memory tjit does not own, and parts of buffers.
 *
 * tj_buffer_wrap gives a handle to `bytes` bytes at `address` that the
 * application (or cudaMalloc, or another library) allocated: on a GPU a
 * device address that the CUDA driver places in an allocation of this
 * device's context (its GPU's primary context, which the CUDA runtime
 * uses too) holding the whole range, checked; on the CPU a host address,
 * taken on the caller's word. tjit never frees that memory: tj_buffer_free
 * ends the handle only, and the memory must outlive every launch and copy
 * that uses it (tj_synchronize waits for them).
 *
 * tj_buffer_view gives a handle to `bytes` bytes of buf from byte `offset`,
 * usable wherever a buffer is (launch arguments, copies, views). A view
 * keeps the memory it shows alive: buf may be freed first, its memory goes
 * with the last view. Alignment is whatever the address is: a launch
 * specializes each pointer on its actual alignment, and pointer arguments
 * whose bytes overlap (a buffer and a view of it, two views) are compiled
 * as possibly aliased.
 *
 * tj_buffer_address gives the device address (GPU) or host pointer (CPU)
 * of a buffer's first byte, for cuMemcpy, another library's kernels or the
 * application's own code; it stays valid while the buffer (or a view of
 * it) lives. */
TJ_API tj_status tj_buffer_wrap(tj_device *dev, uint64_t address, size_t bytes, tj_buffer *out);
TJ_API tj_status tj_buffer_view(tj_device *dev, tj_buffer buf, size_t offset, size_t bytes,
                                tj_buffer *out);
TJ_API tj_status tj_buffer_address(tj_device *dev, tj_buffer buf, uint64_t *out);

/* Streams and events: work queued in order, waited for one queue at a time.
 *
 * A stream is an ordered queue of launches (tj_launch_cfg.stream) and
 * copies; work on different streams may overlap. On a GPU a stream is a
 * CUstream of the device's context: tj_stream_create makes one (blocking
 * with respect to the legacy default stream, which the plain tj_buffer_*
 * copies and a NULL cfg->stream use, so mixing both stays ordered), and
 * tj_stream_wrap adopts the application's (cudaStream_t and CUstream are
 * the same pointer; it must belong to the device's GPU's primary context,
 * which the CUDA runtime uses too), which tj_stream_destroy then ends
 * without destroying. On the CPU a stream is accepted everywhere a GPU's
 * is, and its work is done when the call returns, so code written for
 * streams runs on both.
 *
 * Every tjit call that uses the GPU makes the device's context current
 * (pushes it, where it is not) and pops it before returning: the calling
 * thread's current CUDA context is never left changed. A stream may be
 * captured into a CUDA graph (cuStreamBeginCapture) once each kernel
 * launched there has run before: a variant's first launch compiles and
 * loads code, which capture does not allow.
 *
 * tj_stream_synchronize waits for one stream's work, then reports a
 * failed device assert or a fault as tj_synchronize does (an assert record
 * names its kernel, whichever stream ran it). tj_synchronize still waits
 * for every stream and is what lets the memory of freed buffers go.
 *
 * tj_buffer_write_async / tj_buffer_read_async queue a copy on a stream
 * and return: the host memory must stay valid, and unchanged for a write,
 * until the stream has done it (synchronize the stream, or an event after
 * it). Host memory from tj_host_alloc is page-locked on a GPU: copies from
 * and to it run asynchronously at full speed (other host memory is staged
 * by the driver). tj_host_free frees it; on the CPU it is plain aligned
 * memory.
 *
 * An event marks a point in a stream: tj_event_record places it after the
 * work queued so far (stream NULL: the default stream), tj_event_synchronize
 * waits for that work, tj_event_elapsed gives the milliseconds between two
 * completed events (GPU: the device's clock; CPU: the host's monotonic
 * clock at each record). Ownership: the creator destroys; destroying a
 * device frees its streams and events' resources, after which only
 * tj_stream_destroy / tj_event_destroy may be called on them. */
typedef struct tj_event tj_event; /* opaque */
TJ_API tj_status tj_stream_create(tj_device *dev, tj_stream **out);
TJ_API tj_status tj_stream_wrap(tj_device *dev, void *cuda_stream, tj_stream **out);
TJ_API tj_status tj_stream_destroy(tj_stream *stream); /* NULL is fine */
TJ_API tj_status tj_stream_synchronize(tj_stream *stream);
TJ_API tj_status tj_buffer_write_async(tj_device *dev, tj_buffer dst, size_t offset, const void *src,
                                       size_t bytes, tj_stream *stream);
TJ_API tj_status tj_buffer_read_async(tj_device *dev, tj_buffer src, size_t offset, void *dst,
                                      size_t bytes, tj_stream *stream);
TJ_API tj_status tj_host_alloc(tj_device *dev, size_t bytes, void **out);
TJ_API tj_status tj_host_free(tj_device *dev, void *ptr); /* NULL is fine */
TJ_API tj_status tj_event_create(tj_device *dev, tj_event **out);
TJ_API tj_status tj_event_destroy(tj_event *event); /* NULL is fine */
TJ_API tj_status tj_event_record(tj_event *event, tj_stream *stream);
TJ_API tj_status tj_event_synchronize(tj_event *event);
TJ_API tj_status tj_event_elapsed(tj_event *start, tj_event *end, float *milliseconds);

/* One kernel argument for tj_launch(): a buffer or a scalar of a dtype. */
typedef struct tj_arg {
    tj_dtype dtype;  /* scalars: the value's dtype; buffers: ignored */
    int is_buffer;
    union {
        tj_buffer buf;
        int64_t i;   /* integer dtypes, i1 */
        uint64_t u;  /* unsigned dtypes may use either */
        double f;    /* f16, bf16, f32, f64, f8e4m3, f8e5m2 */
    } v;
} tj_arg;

#define TJ_ARG_BUF(b) ((tj_arg){TJ_I32, 1, {.buf = (b)}})
#define TJ_ARG_I32(x) ((tj_arg){TJ_I32, 0, {.i = (x)}})
#define TJ_ARG_I64(x) ((tj_arg){TJ_I64, 0, {.i = (x)}})
#define TJ_ARG_U32(x) ((tj_arg){TJ_U32, 0, {.u = (x)}})
#define TJ_ARG_U64(x) ((tj_arg){TJ_U64, 0, {.u = (x)}})
#define TJ_ARG_F32(x) ((tj_arg){TJ_F32, 0, {.f = (x)}})
#define TJ_ARG_F64(x) ((tj_arg){TJ_F64, 0, {.f = (x)}})
#define TJ_ARG_F16(x) ((tj_arg){TJ_F16, 0, {.f = (x)}})
#define TJ_ARG_BF16(x) ((tj_arg){TJ_BF16, 0, {.f = (x)}})
#define TJ_ARG_F8E4M3(x) ((tj_arg){TJ_F8E4M3, 0, {.f = (x)}})
#define TJ_ARG_F8E5M2(x) ((tj_arg){TJ_F8E5M2, 0, {.f = (x)}})
#define TJ_ARG_INT(dt, x) ((tj_arg){(dt), 0, {.i = (x)}})

/* Bounds-checked launches (to find a forgotten mask): every load, store and
 * atomic is checked against the buffer its pointer comes from; an access
 * outside it is not performed, and the launch (on a GPU: the next
 * synchronize) fails with TJ_ERR_BOUNDS naming kernel, op, source line,
 * program and offset. Checked code is slower and compiled separately. */
typedef enum tj_check_bounds {
    TJ_CHECK_BOUNDS_DEFAULT, /* as TJIT_CHECK_BOUNDS says (1: on; unset, 0: off) */
    TJ_CHECK_BOUNDS_ON,
    TJ_CHECK_BOUNDS_OFF
} tj_check_bounds;

/* Warp specialization (Hopper, sm_90a): a loop whose dot runs as wgmma on
 * operands that TMA copies (block pointers, tensor descriptors) may run
 * with one more warpgroup that only issues the copies, so that the
 * num_warps warps computing never wait for each other between
 * iterations. */
typedef enum tj_warp_specialize {
    TJ_WARP_SPECIALIZE_DEFAULT, /* where the kernel allows it */
    TJ_WARP_SPECIALIZE_ON,      /* required: a launch that cannot fails,
                                   saying why (a launch whose arguments
                                   rule out TMA runs without, as always) */
    TJ_WARP_SPECIALIZE_OFF
} tj_warp_specialize;

/* Persistence (GPU): a launch of a 1-D grid may run as a persistent
 * kernel — as many programs as the GPU holds at once, each walking the
 * grid's programs (tiles) in turn: program_id(0) and num_programs(0) are
 * the grid's as always, the tiles run in the order of their ids, and no
 * program starts cold after a wave (Triton's tutorial 09 by hand). */
typedef enum tj_persistent {
    TJ_PERSISTENT_DEFAULT, /* on Hopper (sm_90a), for a kernel whose main loop
                              is a dot (not TF32) fed by block pointers or tensor
                              descriptors and that does not read num_programs(0) */
    TJ_PERSISTENT_ON,      /* any kernel (a grid of more than one axis is an error) */
    TJ_PERSISTENT_OFF
} tj_persistent;

/* Block pairs (Hopper, sm_90a): a persistent, warp-specialized kernel
 * may run as clusters of two blocks that walk neighbouring tiles; where
 * both blocks' copies read the same tile of an operand (in the grouped
 * order, the tiles of one column share B's), each block loads half of it
 * and TMA multicasts that half into both blocks' shared memory, halving
 * the operand's traffic from L2. A launch whose tile count is odd runs
 * the blocks alone. */
typedef enum tj_cluster {
    TJ_CLUSTER_DEFAULT, /* blocks alone: on an H100 pairs measured no
                           faster (0.97-1.00x) for tensor-core-bound tiles
                           (TJIT_BLOCK_PAIRS=1: pairs where they can be) */
    TJ_CLUSTER_ON,      /* required: a launch that cannot fails, saying why
                           (the tile count odd, the kernel not persistent and
                           warp-specialized, ...) */
    TJ_CLUSTER_OFF
} tj_cluster;

/* Stream-K (GPU): a persistent matmul whose tile count the resident
 * programs do not divide runs its last wave in pieces along K — every
 * program gets the same number of K iterations, some tiles are computed
 * by two (or more) programs and summed in a workspace by the last to
 * finish (Osama et al.'s Stream-K, CUTLASS's stream-K scheduler). It
 * takes a tile body with one K loop that carries a dot's accumulator
 * (f32 or i32, from zeros) and block pointers, and no loop after it. */
typedef enum tj_stream_k {
    TJ_STREAM_K_DEFAULT, /* off: on an H100 it measured slower (bf16 4096^3: 0.94x)
                            (TJIT_STREAM_K=1: on where the kernel has the shape) */
    TJ_STREAM_K_ON,      /* required: a launch that cannot fails, saying why
                            (the kernel not persistent, its body not a matmul's) */
    TJ_STREAM_K_OFF
} tj_stream_k;

/* A launch's configuration; zero-initialize it and set what you need
 * (designated initializers). The fields up to .version are version 0;
 * fields added in later releases are read only where .version says the
 * caller knows them, so a program compiled against this header keeps
 * working with a newer libtjit. A .version above TJ_LAUNCH_CFG_VERSION
 * (a program built against a newer tjit) is refused. */
#define TJ_LAUNCH_CFG_VERSION 2
typedef struct tj_launch_cfg {
    int64_t grid[3];  /* programs along each axis; 0 in y or z means 1 */
    int num_warps;    /* GPU threads per program / 32 (0: 4); ignored on CPU */
    tj_stream *stream;/* NULL: the device's default stream */
    tj_check_bounds check_bounds; /* 0: as the environment says */
    int num_stages;   /* GPU: the depth of software pipelining of the loads
                         that feed a dot in a TJ_FOR (0: the default, 3, as
                         Triton's; 1: none; at most 8); on sm_90a a dot
                         that runs as wgmma keeps num_stages + 1 buffers
                         of each operand; ignored on the CPU */
    tj_warp_specialize warp_specialize; /* GPU (sm_90a); ignored on the CPU */
    tj_persistent persistent; /* GPU; ignored on the CPU */
    int version;      /* 0, or TJ_LAUNCH_CFG_VERSION */
    /* version 1: */
    tj_cluster cluster; /* GPU (sm_90a); ignored on the CPU */
    /* version 2: */
    tj_stream_k stream_k; /* GPU, persistent launches; ignored on the CPU */
} tj_launch_cfg;

/* A kernel as TJ_KERNEL defines it. The fields are tjit's business. */
typedef struct tj_param_desc {
    int is_ptr;
    tj_dtype dtype;
    const char *name;
    int no_specialize;  /* declared with TJ_PTR_NOSPEC / TJ_SCALAR_NOSPEC */
} tj_param_desc;

/* The kernel ABI: how TJ_KERNEL's code calls the builder (the tj__
 * functions and the option structs they take by value). A kernel records
 * the ABI of the tjit.h it was compiled with, and a libtjit of another ABI
 * refuses to build it, saying so, instead of misreading its calls. */
#define TJ_KERNEL_ABI 2 /* 2: tj_loop_opts.unroll */
typedef struct tj_kernel {
    const char *name;
    const char *file;
    int line;
    int nparams;
    const tj_param_desc *params;
    int nconsts;
    const char *const *consts;
    void (*build)(const tj_val *params, const int64_t *consts);
    int abi;          /* TJ_KERNEL_ABI */
} tj_kernel;

/* Launches a kernel, building and compiling it first for a set of constants
 * it has not seen. Arguments are checked against the kernel's signature. On
 * the CPU the launch is finished when the call returns (a failed device
 * assert is its TJ_ERR_ASSERT). On a GPU it is asynchronous: a failed assert
 * or a fault is reported by the next tj_synchronize() or tj_buffer_read(),
 * which wait for the device (TJIT_LAUNCH_BLOCKING=1 makes each launch wait). */
TJ_API tj_status tj_launch(tj_device *dev, const tj_kernel *kernel,
                           const tj_launch_cfg *cfg, const tj_arg *args, int nargs,
                           const int64_t *consts, int nconsts);

/* Builds a kernel's tile program for a set of constants without launching,
 * and writes its text (the IR as TJIT_DUMP=ir prints it) to a malloc'ed
 * string the caller frees. Bad programs fail here with their message. */
TJ_API tj_status tj_kernel_ir(const tj_kernel *kernel, const int64_t *consts,
                              int nconsts, char **out_text);

/* Builds a kernel for a set of constants and compiles it for an NVIDIA GPU
 * without launching, writing its PTX to a malloc'ed string the caller frees.
 * No GPU (and no CUDA) is needed. target is "sm_80", "sm_90", ... (sm_80 or
 * newer), or an architecture-specific target such as "sm_90a" (PTX that
 * runs on that chip alone and may use its own instructions; a launch on a
 * compute capability 9.0 GPU compiles for sm_90a); NULL means
 * $TJIT_PTX_TARGET, else sm_90. num_warps is the launch's
 * (a power of two from 1 to 32; 0: 4), since the code depends on it. The
 * code is specialized as for a launch with tjit buffers (16-byte aligned)
 * and scalars of unknown value; tj_kernel_ptx_args specializes it on args
 * exactly as a launch with them would (buffer handles are not looked up).
 * With TJIT_CHECK_BOUNDS=1 set, the PTX is the bounds-checked code. */
TJ_API tj_status tj_kernel_ptx(const tj_kernel *kernel, const int64_t *consts, int nconsts,
                               const char *target, int num_warps, char **out_ptx);
TJ_API tj_status tj_kernel_ptx_args(const tj_kernel *kernel, const tj_arg *args, int nargs,
                                    const int64_t *consts, int nconsts, const char *target,
                                    int num_warps, char **out_ptx);

/* Ahead-of-time export (README, "Ahead-of-time export"): what
 * tj_kernel_export_c writes. Start from TJ_EXPORT_OPTS_INIT. */
typedef struct tj_export_opts {
    size_t size;          /* sizeof(tj_export_opts) */
    const char *targets;  /* PTX targets, comma-separated ("sm_80,sm_90a"); NULL: "sm_80" */
    int num_warps;        /* as a launch's (0: 4) */
    int num_stages;       /* as a launch's (0: 3) */
    const char *output;   /* writes OUTPUT.h and OUTPUT.c; the launcher is named after
                             its last component (a C identifier). NULL: the kernel's
                             name, in the current directory */
    const char *ptxas;    /* assembles the embedded cubins: NULL: $TJIT_PTXAS, else
                             "ptxas" in PATH (none found: PTX only); "": PTX only */
} tj_export_opts;
#define TJ_EXPORT_OPTS_INIT {sizeof(tj_export_opts), NULL, 0, 0, NULL, NULL}

/* Compiles a kernel for a set of constants and writes it as C source that
 * launches it with the CUDA driver alone (libcuda.so.1, dlopen'ed; no tjit,
 * LLVM or cuda.h): OUTPUT.h declares
 * CUresult NAME(CUstream stream, unsigned grid_x, unsigned grid_y,
 * unsigned grid_z, <the kernel's parameters: CUdeviceptr for pointers, the
 * C type of each scalar, f16/bf16/f8 as their bits>) and NAME_unload(),
 * and OUTPUT.c embeds, for each target, the PTX (and the cubin, where
 * ptxas runs) of two variants: one for 16-byte aligned pointers, as tjit
 * buffers are, which the launcher runs where every pointer is so, and one
 * assuming nothing. Kernels are compiled without TMA, warp specialization
 * and persistence; one with device asserts is refused (TJ_ERR_UNSUPPORTED).
 * No GPU is needed. */
TJ_API tj_status tj_kernel_export_c(const tj_kernel *kernel, const int64_t *consts, int nconsts,
                                    const tj_export_opts *opts);
/* The same for the CPU: compiles the kernel for this host's CPU into
 * OUTPUT.o and writes OUTPUT.h and OUTPUT.c, whose launcher
 * int NAME(unsigned grid_x, unsigned grid_y, unsigned grid_z, <the
 * kernel's parameters: void * for pointers, scalars as above>) runs the
 * grid on the online CPUs (the calling thread one of them) and returns 0
 * (or EINVAL, ENOMEM); NAME_threads(unsigned threads, <the same>) on at
 * most that many threads (0: the online CPUs, 1: the calling thread). Link
 * OUTPUT.o and OUTPUT.c; nothing else is needed. Of opts, size and output
 * count. A kernel whose code calls tjit's runtime (device asserts, prints,
 * 16-bit float conversions the CPU lacks instructions for) is refused
 * (TJ_ERR_UNSUPPORTED). */
TJ_API tj_status tj_kernel_export_cpu(const tj_kernel *kernel, const int64_t *consts, int nconsts,
                                      const tj_export_opts *opts);

/* The layout explainer: builds a kernel as a GPU launch with args would
 * (args NULL: tjit buffers and scalars of unknown value, as tj_kernel_ptx)
 * and writes, to a malloc'ed string the caller frees, how each load, store
 * and atomic is coalesced — its layout (which thread holds which element),
 * what is known of its addresses, the vector width, the 32-byte sectors
 * one warp request touches against the minimum — and for every step
 * through shared memory (a layout conversion, a reduction across warps, a
 * prefix sum) its swizzle and the bank conflicts of its writes and reads.
 * TJIT_DUMP=layouts prints the same for every kernel compiled. No GPU is
 * needed; num_warps as in tj_kernel_ptx, and the target is the one
 * tj_kernel_ptx takes for NULL ($TJIT_PTX_TARGET, else sm_90): a tj_dot
 * runs on tensor cores from sm_80 on, and its operands' steps differ. The
 * plan is a launch's with the default num_stages. */
TJ_API tj_status tj_kernel_explain(const tj_kernel *kernel, const tj_arg *args, int nargs,
                                   const int64_t *consts, int nconsts, int num_warps,
                                   char **out_text);

#endif /* TJIT_PUBLIC_HOST_H */
