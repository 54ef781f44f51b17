/* SPDX-License-Identifier: MIT */
/*
 * tjit_tuning.h — measuring kernels (tj_bench) and choosing their
 * configurations (tj_autotune) in tjit.h. Part of <tjit.h>, which includes
 * it: include that, not this.
 */
#ifndef TJIT_PUBLIC_TUNING_H
#define TJIT_PUBLIC_TUNING_H

#ifndef TJIT_H
#error "include <tjit.h>, not its parts"
#endif

/* ------------------------------------------------------------------------ */
/* Benchmarking your kernels                                                */
/* ------------------------------------------------------------------------ */

/* tj_bench times work that run(dev, user) launches (any tj_launch calls);
 * run returns TJ_OK, or an error, which ends the benchmark and is
 * tj_bench's (its message prefixed with the call that failed). run is
 * called opts->warmup times untimed; then the device is synchronized, and
 * run is called opts->reps times, each call timed alone — on a GPU by CUDA
 * events recorded on the stream tjit launches on just before and after it
 * (the GPU's time for the work; a call made while the GPU is idle also
 * includes the launch's own host time), on the CPU by the monotonic clock
 * around it (a CPU launch is finished when it returns). The device is
 * synchronized at the end, so a fault or a failed assert of the work is
 * reported. The times' quantiles are linearly interpolated between the
 * sorted times (the q-quantile of n times sits at position q (n - 1),
 * counted from 0: numpy's default), so the median of an even count is the
 * mean of the two middle times.
 *
 * Versions: both structs start with size, which the caller sets to sizeof
 * the struct as its tjit.h declares it (TJ_BENCH_OPTS_INIT does); a later
 * tjit appends fields, and tells the versions apart by it. A size tjit
 * does not know is TJ_ERR_INVALID_ARG. opts NULL: the defaults. */
typedef struct tj_bench_opts {
    size_t size;  /* sizeof(tj_bench_opts) */
    int warmup;   /* untimed calls first, >= 0 (TJ_BENCH_OPTS_INIT: 10) */
    int reps;     /* timed calls, >= 1 (TJ_BENCH_OPTS_INIT: 100) */
} tj_bench_opts;
#define TJ_BENCH_OPTS_INIT {sizeof(tj_bench_opts), 10, 100}

typedef struct tj_bench_result {
    size_t size;       /* set by the caller: sizeof(tj_bench_result) */
    int reps;          /* calls timed */
    double min_ms, p10_ms, median_ms, p90_ms, max_ms;
    double mean_ms;
} tj_bench_result;

TJ_API tj_status tj_bench(tj_device *dev, tj_status (*run)(tj_device *dev, void *user), void *user,
                          const tj_bench_opts *opts, tj_bench_result *out);

/* ------------------------------------------------------------------------ */
/* Autotuning                                                               */
/* ------------------------------------------------------------------------ */

/* One candidate configuration for the autotuner: a value for each of the
 * kernel's constants (consts[0 .. nconsts), nconsts equal to the kernel's
 * count, in its TJ_CONSTS order) and the GPU launch's num_warps and
 * num_stages (0: the defaults, as in tj_launch_cfg; the CPU ignores them,
 * but they still tell configs apart). .version is 0
 * (TJ_TUNE_CONFIG_VERSION) and comes first, so that a later tjit can tell
 * the layout of a whole array of configs from its first element. */
#define TJ_TUNE_CONFIG_VERSION 0
typedef struct tj_tune_config {
    int version;           /* 0, or TJ_TUNE_CONFIG_VERSION */
    int nconsts;           /* the kernel's number of constants */
    const int64_t *consts; /* their values */
    int num_warps;         /* GPU (0: 4) */
    int num_stages;        /* GPU (0: 3) */
} tj_tune_config;

/* The grid of a launch with one config's constants (Triton's grid lambda:
 * the programs usually depend on the block sizes): writes grid[0 .. 3)
 * as tj_launch_cfg.grid takes it. user is tj_autotune_opts.grid_user. */
typedef void (*tj_tune_grid_fn)(const int64_t *consts, const tj_arg *args, int nargs, int64_t grid[3],
                                void *user);

/* Which configs to time for a key (Triton's early_config_prune): keep has
 * nconfigs entries, all 1; the function sets to 0 those not worth timing
 * (a tile larger than the problem, say) and returns 0, or nonzero to fail
 * the tuning. It runs only when tuning (not when the choice is known), so
 * it must depend on nothing but the configs and the key: the choice is
 * remembered under them. user is tj_autotune_opts.prune_user. */
typedef int (*tj_tune_prune_fn)(const tj_tune_config *configs, int nconfigs, const int64_t *key, int nkey,
                                unsigned char *keep, void *user);

/* Options of tj_autotune. size is sizeof the struct as the caller's
 * tjit.h declares it (TJ_AUTOTUNE_OPTS_INIT sets it and the defaults);
 * the size of an earlier tjit's (without prune) is read as that, and any
 * other is TJ_ERR_INVALID_ARG. opts NULL: the defaults.
 * The choice is made once per key: the values it depends on, usually
 * the arguments' shapes (M, N, K), which the caller picks, as Triton's
 * key= names them. */
typedef struct tj_autotune_opts {
    size_t size;              /* sizeof(tj_autotune_opts) */
    const int64_t *key;       /* nkey values; another key tunes again */
    int nkey;
    tj_tune_grid_fn grid;     /* NULL: cfg->grid for every config */
    void *grid_user;          /* passed to grid */
    int warmup;               /* untimed launches of a config after its first, >= 0 (3) */
    int reps;                 /* timed launches of a config, >= 1 (10) */
    const tj_buffer *restore; /* buffers read before tuning and written back after */
    int nrestore;
    tj_tune_prune_fn prune;   /* NULL: time every config */
    void *prune_user;         /* passed to prune */
} tj_autotune_opts;
#define TJ_AUTOTUNE_OPTS_INIT {sizeof(tj_autotune_opts), NULL, 0, NULL, NULL, 3, 10, NULL, 0, NULL, NULL}

/* The autotuner (Triton's @autotune, as calls): picks the fastest of
 * nconfigs configs of a kernel for a key and remembers the pick.
 *
 * tj_autotune writes the index of the chosen config to *best. It looks
 * for the choice in the process's memory, then on disk, and tunes only
 * where neither has it: every config is launched once (compiling it),
 * then opts->warmup times untimed and opts->reps times timed by tj_bench
 * (a GPU's events, the CPU's monotonic clock), on the device's default
 * stream with cfg's grid (or opts->grid's), check_bounds, warp_specialize
 * and persistent; the config of the least median time wins (the first of
 * equals). A config whose launches fail (a compile error, too much
 * shared memory, a fault) is skipped; if all fail, the first one's
 * status is returned, its message naming the kernel, the config and
 * why. Tuning launches the kernel many times on the arguments given, so
 * outputs it accumulates into, or inputs it overwrites, must be listed in
 * opts->restore (their contents are read first and written back after)
 * or be set again by the caller.
 *
 * A choice is keyed by the kernel's name and signature, the device's
 * name, the key values, the whole config list, cfg's options and the
 * tjit version. On disk it is one small file under the cache directory
 * ($TJIT_CACHE_DIR, else $XDG_CACHE_HOME/tjit, else ~/.cache/tjit; in
 * autotune/), written atomically; a file that does not read back exactly
 * as written is ignored and replaced by the next tuning, and TJIT_CACHE=0
 * keeps tjit off the disk. TJIT_PRINT_AUTOTUNING=1 prints to stderr each
 * config's time (or error) and the winner when tuning, and the file a
 * choice was read from. Two threads that miss the same key at once may
 * both tune it.
 *
 * tj_autotuned_launch does the same, then launches the chosen config with
 * cfg (its stream too) and the grid for that config; best may be NULL. */
TJ_API tj_status tj_autotune(tj_device *dev, const tj_kernel *kernel, const tj_launch_cfg *cfg,
                             const tj_arg *args, int nargs, const tj_tune_config *configs, int nconfigs,
                             const tj_autotune_opts *opts, int *best);
TJ_API tj_status tj_autotuned_launch(tj_device *dev, const tj_kernel *kernel, const tj_launch_cfg *cfg,
                                     const tj_arg *args, int nargs, const tj_tune_config *configs,
                                     int nconfigs, const tj_autotune_opts *opts, int *best);

#endif /* TJIT_PUBLIC_TUNING_H */
