/* SPDX-License-Identifier: MIT */
/*
 * launch.c — tj_launch, on any device.
 *
 * A launch checks everything the caller gave (device, kernel, grid, constants,
 * num_warps, arguments, buffers) before any work, then finds the compiled
 * variant for the kernel, its constants and (on a GPU) num_warps and the
 * arguments' specialization key in the device's cache, which compiles it on
 * a miss without blocking launches of other variants (variants.c). The
 * launch holds its buffers from the moment it looks them up until it
 * returns (on a GPU, until the device has run it, see buffers.c), so a
 * buffer freed meanwhile by another thread keeps its memory until then.
 * Running the variant is the device kind's (tjj_backend.launch:
 * device_cpu.c, device_gpu.c).
 *
 * A kernel body that launches (on any device) is refused: the body is
 * being built, and a launch from it would build another kernel inside the
 * build — or, on its own device, wait for its own compile. tj_launch says
 * so, and the outer build fails with the same message.
 *
 * A bounds-checked launch (TJIT_CHECK_BOUNDS, tj_launch_cfg.check_bounds;
 * bounds.h) runs a variant of its own, given its buffers' sizes, whose
 * violations come back through the same records as device asserts, with
 * TJ_ERR_BOUNDS. On a GPU that must do without TMA (TJIT_NO_TMA=1, an old
 * driver) the variant asked for is the one compiled without it.
 *
 * The launch queues on cfg->stream (streams.c; NULL: the default stream).
 * A GPU launch of a 1-D grid asks the pipeline for a persistent kernel
 * (src/passes/persistent.c: always with TJ_PERSISTENT_ON, where it pays by
 * default); the choice is part of the variant's key, and the launch then
 * runs as many programs as the GPU holds, passing the grid's size. Such a
 * kernel may run its blocks in pairs (src/passes/cluster_pairs.c) where
 * the grid's size is even, which the key says too.
 */
#include <stdio.h>
#include <stdlib.h>

#include "../llvm/bounds.h"
#include "device_impl.h"

static tj_status check_kernel(const tj_kernel *kernel)
{
    if (!kernel)
        return tjs_error(TJ_ERR_INVALID_ARG, "tj_launch: kernel is NULL");
    if (!kernel->name || !kernel->build || kernel->nparams < 0 || kernel->nconsts < 0 ||
        (kernel->nparams > 0 && !kernel->params) || (kernel->nconsts > 0 && !kernel->consts))
        return tjs_error(TJ_ERR_INVALID_ARG, "tj_launch: the kernel is not one TJ_KERNEL defined");
    if (kernel->abi != TJ_KERNEL_ABI)
        return tjs_error(TJ_ERR_INVALID_ARG,
                         "tj_launch: kernel '%s' was compiled against a tjit.h of kernel ABI %d; this "
                         "libtjit (%s) builds ABI %d (rebuild the program against its tjit.h)",
                         kernel->name, kernel->abi, tj_version(), TJ_KERNEL_ABI);
    return TJ_OK;
}

/* Grid axes as program counts: 0 in y or z means 1. */
static tj_status check_grid(const tj_device *dev, const tj_kernel *kernel, const tj_launch_cfg *cfg,
                            int32_t nprog[3], int64_t *total)
{
    for (int axis = 0; axis < 3; axis++) {
        int64_t g = cfg->grid[axis];
        if (g < 0)
            return tjs_error(TJ_ERR_LAUNCH, "kernel '%s': empty grid (grid[%d] = %lld is negative)",
                             kernel->name, axis, (long long)g);
        if (g == 0 && axis == 0)
            return tjs_error(TJ_ERR_LAUNCH, "kernel '%s': empty grid (grid[0] = 0)", kernel->name);
        if (g > INT32_MAX)
            return tjs_error(TJ_ERR_LAUNCH,
                             "kernel '%s': grid too large (grid[%d] = %lld; at most %d programs per axis)",
                             kernel->name, axis, (long long)g, INT32_MAX);
        if (axis > 0 && g > dev->ops->max_grid_yz)
            return tjs_error(TJ_ERR_LAUNCH,
                             "kernel '%s': grid too large for a GPU (grid[%d] = %lld; at most %d "
                             "programs along y and z)",
                             kernel->name, axis, (long long)g, (int)dev->ops->max_grid_yz);
        nprog[axis] = g == 0 ? 1 : (int32_t)g;
    }
    int64_t n = (int64_t)nprog[0] * nprog[1];
    if (__builtin_mul_overflow(n, (int64_t)nprog[2], total))
        return tjs_error(TJ_ERR_LAUNCH, "kernel '%s': grid too large (%d x %d x %d programs)",
                         kernel->name, nprog[0], nprog[1], nprog[2]);
    return TJ_OK;
}

/* What the launch asks of persistent.c: a kernel walks a 1-D grid only. */
static tjp_persistence persistence(const tj_device *dev, const tj_kernel *kernel, const tj_launch_cfg *cfg,
                                   const int32_t nprog[3], tj_status *st)
{
    *st = TJ_OK;
    if (!dev->ops->specializes || cfg->persistent == TJ_PERSISTENT_OFF)
        return TJP_PERSIST_NEVER;
    if (nprog[1] > 1 || nprog[2] > 1) {
        if (cfg->persistent == TJ_PERSISTENT_ON)
            *st = tjs_error(TJ_ERR_LAUNCH,
                            "kernel '%s': a persistent launch (cfg->persistent = TJ_PERSISTENT_ON) "
                            "walks a 1-D grid; this grid is %d x %d x %d programs",
                            kernel->name, nprog[0], nprog[1], nprog[2]);
        return TJP_PERSIST_NEVER;
    }
    return cfg->persistent == TJ_PERSISTENT_ON ? TJP_PERSIST_ALWAYS : TJP_PERSIST_WHERE_IT_PAYS;
}

int tjj_launch_cluster(const tj_device *dev, tj_cluster mode, int32_t programs)
{
    /* Whether the default pairs blocks is the device's (device_gpu.c). */
    if (mode == TJ_CLUSTER_DEFAULT && !dev->pairs_by_default)
        mode = TJ_CLUSTER_OFF;
    /* A pair walks its tiles together: as many for each block where the
     * tile count is even (src/passes/cluster_pairs.c). Only where pairs may
     * be made does the key hear of it: otherwise odd and even grids would
     * compile a variant each. */
    return (int)mode | (mode != TJ_CLUSTER_OFF && programs % 2 == 0 ? TJJ_PAIRS_ALLOWED : 0);
}

/* TJF_SPEC_ALIASED where two pointer arguments reach overlapping bytes:
 * the same buffer twice, or views and wrapped buffers over one memory
 * (values: the addresses the launch passes, sizes: their buffers'). */
static uint64_t aliased(const tj_kernel *kernel, const tjf_value *values, const uint64_t *sizes)
{
    for (int i = 0; i < kernel->nparams; i++)
        for (int j = 0; kernel->params[i].is_ptr && j < i; j++)
            if (kernel->params[j].is_ptr && values[i].u64 < values[j].u64 + sizes[j] &&
                values[j].u64 < values[i].u64 + sizes[i])
                return TJF_SPEC_ALIASED;
    return 0;
}

tj_status tj_launch(tj_device *dev, const tj_kernel *kernel, const tj_launch_cfg *cfg,
                    const tj_arg *args, int nargs, const int64_t *consts, int nconsts)
{
    TJJ_CONTEXT_SCOPE;
    tjs_clear_error();
    if (!dev)
        return tjs_error(TJ_ERR_INVALID_ARG, "tj_launch: dev is NULL");
    tj_status st = check_kernel(kernel);
    if (st == TJ_OK)
        st = tji_refuse_nested_launch(kernel);
    if (st != TJ_OK)
        return st;
    if (!cfg)
        return tjs_error(TJ_ERR_INVALID_ARG, "tj_launch: kernel '%s': cfg is NULL", kernel->name);
    if (cfg->version < 0 || cfg->version > TJ_LAUNCH_CFG_VERSION)
        return tjs_error(TJ_ERR_INVALID_ARG,
                         "kernel '%s': cfg->version = %d, but this libtjit (%s) knows tj_launch_cfg "
                         "up to version %d (a program built against a newer tjit?)",
                         kernel->name, cfg->version, tj_version(), TJ_LAUNCH_CFG_VERSION);
    uint64_t stream = 0;
    if (cfg->stream) { /* the name is formatted only where a stream is checked */
        char who[160];
        snprintf(who, sizeof who, "kernel '%s'", kernel->name);
        if ((st = tjj_stream_native(dev, cfg->stream, who, &stream)) != TJ_OK)
            return st;
    }
    if (cfg->num_stages < 0 || cfg->num_stages > MAX_NUM_STAGES)
        return tjs_error(TJ_ERR_LAUNCH, "kernel '%s': num_stages = %d (1 to %d, or 0 for %d)",
                         kernel->name, cfg->num_stages, MAX_NUM_STAGES, TJJ_DEFAULT_NUM_STAGES);
    if ((unsigned)cfg->warp_specialize > (unsigned)TJ_WARP_SPECIALIZE_OFF)
        return tjs_error(TJ_ERR_INVALID_ARG, "kernel '%s': cfg->warp_specialize = %d (expected a tj_warp_specialize)",
                         kernel->name, (int)cfg->warp_specialize);
    if ((unsigned)cfg->persistent > (unsigned)TJ_PERSISTENT_OFF)
        return tjs_error(TJ_ERR_INVALID_ARG, "kernel '%s': cfg->persistent = %d (expected a tj_persistent)",
                         kernel->name, (int)cfg->persistent);
    if (cfg->num_warps < 0)
        return tjs_error(TJ_ERR_LAUNCH, "kernel '%s': num_warps = %d is negative", kernel->name,
                         cfg->num_warps);
    /* num_warps shapes GPU code only; a CPU launch ignores it, except that
     * TJIT_PTXAS compiles its PTX for it (or the default where invalid). */
    int num_warps = cfg->num_warps ? cfg->num_warps : DEFAULT_NUM_WARPS;
    if (!tjj_valid_num_warps(num_warps)) {
        if (dev->ops->specializes)
            return tjs_error(TJ_ERR_LAUNCH,
                             "kernel '%s': num_warps = %d (a power of two from 1 to %d, or 0 for %d)",
                             kernel->name, num_warps, MAX_NUM_WARPS, DEFAULT_NUM_WARPS);
        num_warps = DEFAULT_NUM_WARPS;
    }
    int32_t nprog[3];
    int64_t total = 0;
    if ((st = check_grid(dev, kernel, cfg, nprog, &total)) != TJ_OK)
        return st;
    int persistent = persistence(dev, kernel, cfg, nprog, &st);
    if (st != TJ_OK)
        return st;
    tj_cluster cluster_mode = cfg->version >= 1 ? cfg->cluster : TJ_CLUSTER_DEFAULT;
    if ((unsigned)cluster_mode > (unsigned)TJ_CLUSTER_OFF)
        return tjs_error(TJ_ERR_INVALID_ARG, "kernel '%s': cfg->cluster = %d (expected a tj_cluster)",
                         kernel->name, (int)cluster_mode);
    int cluster = tjj_launch_cluster(dev, cluster_mode, nprog[0]);
    tj_stream_k stream_k = cfg->version >= 2 ? cfg->stream_k : TJ_STREAM_K_DEFAULT;
    if ((unsigned)stream_k > (unsigned)TJ_STREAM_K_OFF)
        return tjs_error(TJ_ERR_INVALID_ARG, "kernel '%s': cfg->stream_k = %d (expected a tj_stream_k)",
                         kernel->name, (int)stream_k);
    if (stream_k == TJ_STREAM_K_ON && dev->ops->specializes && persistent == TJP_PERSIST_NEVER)
        return tjs_error(TJ_ERR_LAUNCH, "kernel '%s': stream-K (cfg->stream_k = TJ_STREAM_K_ON) splits the "
                         "tiles of a persistent launch; this one is not (cfg->persistent, or a grid of "
                         "more than one axis)", kernel->name);
    /* Stream-K and block pairs refuse each other (a pair walks whole
     * tiles): a default stream-K yields where the launch asks for pairs,
     * by its own word or by the device's default. */
    int pairs_asked = (cluster & ~TJJ_PAIRS_ALLOWED) != TJ_CLUSTER_OFF;
    int split_by_default = stream_k == TJ_STREAM_K_DEFAULT && dev->stream_k_by_default && !pairs_asked;
    if (persistent != TJP_PERSIST_NEVER)
        persistent |= stream_k == TJ_STREAM_K_ON ? TJP_STREAM_K_REQUIRED : split_by_default ? TJP_STREAM_K : 0;
    if (nconsts != kernel->nconsts)
        return tjs_error(TJ_ERR_LAUNCH, "kernel '%s': expects %d constant%s, got %d", kernel->name,
                         kernel->nconsts, kernel->nconsts == 1 ? "" : "s", nconsts);
    if (nconsts > 0 && !consts)
        return tjs_error(TJ_ERR_INVALID_ARG, "kernel '%s': consts is NULL but %d constants are expected",
                         kernel->name, nconsts);

    if ((unsigned)cfg->check_bounds > (unsigned)TJ_CHECK_BOUNDS_OFF)
        return tjs_error(TJ_ERR_INVALID_ARG, "kernel '%s': cfg->check_bounds = %d (expected a tj_check_bounds)",
                         kernel->name, (int)cfg->check_bounds);
    int check_bounds = tjj_bounds_wanted(cfg->check_bounds);

    tjf_value *values = tjs_xcalloc(kernel->nparams ? (size_t)kernel->nparams : 1, sizeof *values);
    uint64_t *sizes = tjs_xcalloc(kernel->nparams ? (size_t)kernel->nparams : 1, sizeof *sizes);
    /* The buffers this launch uses, held until it is done with them. */
    tjj_buffer_use *uses = tjs_xmalloc((size_t)(nargs > 0 ? nargs : 1) * sizeof *uses);
    int nuses = 0;
    st = tjf_check_args(kernel, args, nargs, values);
    for (int i = 0; st == TJ_OK && i < nargs; i++) {
        if (!kernel->params[i].is_ptr)
            continue;
        tjj_buffer_use *use = &uses[nuses];
        if (!tjj_buffer_acquire(dev, args[i].v.buf, use)) {
            char where[512];
            if (!tjj_buffer_elsewhere(dev, args[i].v.buf, where, sizeof where))
                snprintf(where, sizeof where, "is not a live buffer of this device (freed?)");
            st = tjs_error(TJ_ERR_LAUNCH, "kernel '%s': argument %d '%s': buffer 0x%llx %s", kernel->name,
                           i + 1, kernel->params[i].name, (unsigned long long)args[i].v.buf.handle, where);
            break;
        }
        nuses++;
        dev->ops->pass_buffer(&values[i], use->addr);
        sizes[i] = use->size;
    }
    if (st == TJ_OK)
        st = dev->ops->enter(dev, "tj_launch");
    variant *var = NULL;
    if (st == TJ_OK)
        st = tjj_get_variant(dev, kernel, consts, nconsts, num_warps, cfg->num_stages,
                             tjf_spec_key(kernel, values) | aliased(kernel, values, sizes),
                             check_bounds, dev->no_tma, cfg->warp_specialize, persistent, cluster, &var);
    if (st == TJ_OK)
        st = dev->ops->launch(dev, kernel, var, values, sizes, nprog, total, stream);
    for (int i = 0; i < nuses; i++)
        tjj_buffer_release(dev, &uses[i]);
    free(uses);
    free(sizes);
    free(values);
    return st;
}
