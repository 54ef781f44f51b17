/* SPDX-License-Identifier: MIT */
/*
 * autotune.c — tj_autotune and tj_autotuned_launch: the fastest of a list
 * of configs, chosen once per key and remembered.
 *
 * The best block sizes, num_warps and num_stages of a kernel depend on
 * the GPU and on the problem's shape, and no rule finds them as well as
 * trying them does; Triton's @autotune makes trying them a decorator.
 * Here it is a call: the caller lists the configs and the values that key
 * the choice (M, N, K), and a grid callback plays the grid lambda.
 *
 * Timing is tj_bench's (bench.c), so the autotuner measures exactly as a
 * user's benchmark would: CUDA events on the GPU, the monotonic clock on
 * the CPU, the median of the timed calls. Each config is launched once
 * by itself first: that launch compiles it, and a config that cannot be
 * built or launched (too much shared memory, a block too large) fails
 * there and is skipped with its message kept, rather than ending the
 * tuning. Only when every config fails is there an error. A prune
 * function (opts->prune, Triton's early_config_prune) may drop configs
 * before any is launched, from the configs and the key alone.
 *
 * A choice is remembered twice. In the process: a hash table keyed by the
 * full key text — tjit's version, the kernel's name and signature, the
 * device's name, the launch options that change the code, the key values
 * and every config — so that a second call costs a string compare. On
 * disk: one file per key text under <cache dir>/autotune/, named by the
 * text's 64-bit FNV-1a hash and holding the text itself, so a collision
 * of names is a miss, never a wrong answer. A file is written to a
 * temporary name and renamed, so a reader never sees half of one; it is
 * read strictly (four lines, each exactly as written, the index in range)
 * and anything else is ignored, then replaced by the tuning that follows.
 * The disk is a cache: failing to write it is said (TJIT_PRINT_AUTOTUNING)
 * and not an error. The directory is the disk cache's (disk_cache.h:
 * TJIT_CACHE_DIR, XDG_CACHE_HOME, ~/.cache; TJIT_CACHE=0 turns both off),
 * made as it makes its own (mode 0700), the files this user's alone.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../llvm/bounds.h"
#include "device_impl.h"
#include "disk_cache.h"

enum { MEMO_BUCKETS = 256, MAX_FILE_BYTES = 1 << 20 };

static const char file_magic[] = "tjit autotune 1";

/* ---- the key ------------------------------------------------------------ */

/* "BLOCK=64, num_warps=4, num_stages=3" */
static void describe_config(tjs_buf *b, const tj_kernel *kernel, const tj_tune_config *c)
{
    for (int i = 0; i < c->nconsts; i++)
        tjs_buf_printf(b, "%s=%lld, ", kernel->consts[i], (long long)c->consts[i]);
    tjs_buf_printf(b, "num_warps=%d, num_stages=%d", c->num_warps, c->num_stages);
}

/* Everything the choice depends on, on one line. */
static char *key_text(tj_device *dev, const tj_kernel *kernel, const tj_launch_cfg *cfg,
                      const tj_tune_config *configs, int nconfigs, const tj_autotune_opts *o)
{
    tjs_buf b = {0};
    tjs_buf_printf(&b, "tjit %s; kernel %s(", TJ_VERSION_STRING, kernel->name);
    for (int i = 0; i < kernel->nparams; i++)
        tjs_buf_printf(&b, "%s%s %s%s", i ? ", " : "", kernel->params[i].name,
                       tj_dtype_name(kernel->params[i].dtype), kernel->params[i].is_ptr ? "*" : "");
    tjs_buf_printf(&b, "; ");
    for (int i = 0; i < kernel->nconsts; i++)
        tjs_buf_printf(&b, "%s%s", i ? ", " : "", kernel->consts[i]);
    tjs_buf_printf(&b, "); device %s; check_bounds %d, warp_specialize %d, persistent %d, cluster %d, "
                   "stream_k %d; key [",
                   tj_device_name(dev), tjj_bounds_wanted(cfg->check_bounds), (int)cfg->warp_specialize,
                   (int)cfg->persistent, cfg->version >= 1 ? (int)cfg->cluster : 0,
                   cfg->version >= 2 ? (int)cfg->stream_k : 0);
    for (int i = 0; i < o->nkey; i++)
        tjs_buf_printf(&b, "%s%lld", i ? ", " : "", (long long)o->key[i]);
    tjs_buf_printf(&b, "]; configs");
    for (int i = 0; i < nconfigs; i++) {
        tjs_buf_printf(&b, " {");
        describe_config(&b, kernel, &configs[i]);
        tjs_buf_printf(&b, "}");
    }
    for (char *p = b.data; *p; p++) /* one line, whatever a name holds */
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    return b.data;
}

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

/* ---- the process's memory of choices ------------------------------------ */

typedef struct memo_entry {
    struct memo_entry *next;
    uint64_t hash;
    char *key;
    int best;
} memo_entry;

static pthread_mutex_t memo_lock = PTHREAD_MUTEX_INITIALIZER;
static memo_entry *memo[MEMO_BUCKETS];

static int memo_find(const char *key, uint64_t hash)
{
    int best = -1;
    pthread_mutex_lock(&memo_lock);
    for (memo_entry *e = memo[hash % MEMO_BUCKETS]; e && best < 0; e = e->next)
        if (e->hash == hash && strcmp(e->key, key) == 0)
            best = e->best;
    pthread_mutex_unlock(&memo_lock);
    return best;
}

static void memo_put(const char *key, uint64_t hash, int best)
{
    pthread_mutex_lock(&memo_lock);
    memo_entry *e = memo[hash % MEMO_BUCKETS];
    while (e && !(e->hash == hash && strcmp(e->key, key) == 0))
        e = e->next;
    if (!e) {
        e = tjs_xcalloc(1, sizeof *e);
        e->hash = hash;
        e->key = tjs_xstrdup(key);
        e->next = memo[hash % MEMO_BUCKETS];
        memo[hash % MEMO_BUCKETS] = e;
    }
    e->best = best;
    pthread_mutex_unlock(&memo_lock);
}

/* ---- the disk ----------------------------------------------------------- */

static int printing(void)
{
    const char *env = getenv("TJIT_PRINT_AUTOTUNING");
    return env && strcmp(env, "1") == 0;
}

/* The autotuner's folder in the cache directory (malloc'ed), or NULL where
 * TJIT_CACHE turns the disk off or no directory can be named. */
static char *tune_dir(void)
{
    char *dir = tjj_cache_dir();
    char *sub = dir ? tjs_asprintf("%s/autotune", dir) : NULL;
    free(dir);
    return sub;
}

/* The whole file (malloc'ed, NUL-terminated), or NULL with *why set (NULL
 * too where there is no file). A file of another user is not trusted. */
static char *read_file(const char *path, const char **why)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        *why = errno == ENOENT || errno == ENOTDIR ? NULL : strerror(errno);
        return NULL;
    }
    struct stat st;
    char *text = tjs_xmalloc(MAX_FILE_BYTES + 1);
    size_t n = 0;
    int bad = fstat(fileno(f), &st) != 0;
    if (bad)
        *why = "it cannot be read";
    else if (!S_ISREG(st.st_mode) || st.st_uid != geteuid())
        *why = "it is not a regular file of this user";
    else if (((n = fread(text, 1, MAX_FILE_BYTES + 1, f)), ferror(f)))
        *why = "it cannot be read";
    else if (n > MAX_FILE_BYTES)
        *why = "it is too large";
    else if (memchr(text, 0, n))
        *why = "it holds a NUL byte";
    else
        *why = NULL;
    fclose(f);
    if (*why) {
        free(text);
        return NULL;
    }
    text[n] = 0;
    return text;
}

/* The next line of *text, which must start with prefix and end in '\n':
 * what follows prefix (the newline cut), or NULL. */
static char *take_line(char **text, const char *prefix)
{
    char *line = *text, *end = strchr(line, '\n');
    size_t n = strlen(prefix);
    if (!end || strncmp(line, prefix, n) != 0)
        return NULL;
    *end = 0;
    *text = end + 1;
    return line + n;
}

/* The choice a file holds for key, or -1 with *why saying what is wrong
 * (NULL: there is no file). */
static int parse_choice(char *text, const char *key, int nconfigs, const char **why)
{
    char *rest = text, *line;
    *why = "it is not a tjit autotuning file";
    if (!(line = take_line(&rest, "")) || strcmp(line, file_magic) != 0)
        return -1;
    *why = "its key line differs (a hash collision or a damaged file)";
    if (!(line = take_line(&rest, "key ")) || strcmp(line, key) != 0)
        return -1;
    *why = "its best line is not a config index";
    if (!(line = take_line(&rest, "best ")) || !*line || strspn(line, "0123456789") != strlen(line) ||
        strlen(line) > 9 || atoi(line) >= nconfigs)
        return -1;
    int best = atoi(line);
    *why = "its median_ms line is not a time";
    char *end = NULL;
    if (!(line = take_line(&rest, "median_ms ")) || !*line)
        return -1;
    double ms = strtod(line, &end);
    if (*end || !isfinite(ms) || ms < 0)
        return -1;
    *why = "it has more than four lines";
    if (*rest)
        return -1;
    *why = NULL;
    return best;
}

/* Writes the file through a temporary name and a rename; 0, or errno. */
static int write_choice(const char *dir, const char *path, const char *key, int best, double ms)
{
    static unsigned serial;
    if (tjj_cache_make_dirs(dir) != 0)
        return errno;
    int err = 0;
    char *tmp = tjs_asprintf("%s.tmp.%ld.%u", path, (long)getpid(),
                             __atomic_fetch_add(&serial, 1, __ATOMIC_RELAXED));
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        err = errno;
        if (fd >= 0)
            close(fd);
    } else {
        fprintf(f, "%s\nkey %s\nbest %d\nmedian_ms %.6f\n", file_magic, key, best, ms);
        if (ferror(f))
            err = EIO;
        if (fclose(f) != 0 && !err)
            err = errno;
        if (!err && rename(tmp, path) != 0)
            err = errno;
    }
    if (err)
        unlink(tmp);
    free(tmp);
    return err;
}

/* ---- tuning ------------------------------------------------------------- */

typedef struct tuning {
    tj_device *dev;
    const tj_kernel *kernel;
    const tj_launch_cfg *cfg;
    const tj_arg *args;
    int nargs;
    const tj_tune_config *configs;
    int nconfigs;
    tj_autotune_opts o;   /* the options, or their defaults */
    const char *key;      /* the key text */
    int print;            /* TJIT_PRINT_AUTOTUNING=1 */
    /* the config being timed: */
    const tj_tune_config *config;
    tj_launch_cfg launch;
} tuning;

/* A launch configuration for config c: the grid from opts->grid or cfg. */
static tj_launch_cfg config_cfg(const tuning *t, const tj_tune_config *c, tj_stream *stream)
{
    tj_launch_cfg l = {.grid = {t->cfg->grid[0], t->cfg->grid[1], t->cfg->grid[2]},
                       .num_warps = c->num_warps,
                       .stream = stream,
                       .check_bounds = t->cfg->check_bounds,
                       .num_stages = c->num_stages,
                       .warp_specialize = t->cfg->warp_specialize,
                       .persistent = t->cfg->persistent,
                       .version = t->cfg->version,
                       .cluster = t->cfg->version >= 1 ? t->cfg->cluster : TJ_CLUSTER_DEFAULT,
                       .stream_k = t->cfg->version >= 2 ? t->cfg->stream_k : TJ_STREAM_K_DEFAULT};
    if (t->o.grid)
        t->o.grid(c->consts, t->args, t->nargs, l.grid, t->o.grid_user);
    return l;
}

static tj_status launch_config(tj_device *dev, void *user)
{
    tuning *t = user;
    return tj_launch(dev, t->kernel, &t->launch, t->args, t->nargs, t->config->consts, t->config->nconsts);
}

static void say(const tuning *t, const char *fmt, ...) TJS_PRINTF(2, 3);
static void say(const tuning *t, const char *fmt, ...)
{
    tjs_buf b = {0};
    tjs_buf_printf(&b, "tjit autotune: kernel '%s' on %s, key [", t->kernel->name, tj_device_name(t->dev));
    for (int i = 0; i < t->o.nkey; i++)
        tjs_buf_printf(&b, "%s%lld", i ? ", " : "", (long long)t->o.key[i]);
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s]: ", b.data);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    tjs_buf_free(&b);
}

static char *config_name(const tuning *t, int i)
{
    tjs_buf b = {0};
    tjs_buf_printf(&b, "config %d (", i);
    describe_config(&b, t->kernel, &t->configs[i]);
    tjs_buf_printf(&b, ")");
    return b.data;
}

/* Times config i: its median, or a failure (status, message in *why). */
static tj_status time_config(tuning *t, int i, double *median, char **why)
{
    t->config = &t->configs[i];
    t->launch = config_cfg(t, t->config, NULL);
    tj_status st = tj_launch(t->dev, t->kernel, &t->launch, t->args, t->nargs, t->config->consts,
                             t->config->nconsts);
    if (st == TJ_OK) {
        tj_bench_opts bo = {sizeof bo, t->o.warmup, t->o.reps};
        tj_bench_result r = {.size = sizeof r};
        st = tj_bench(t->dev, launch_config, t, &bo, &r);
        *median = r.median_ms;
    }
    if (st != TJ_OK)
        *why = tjs_xstrdup(tj_last_error());
    return st;
}

/* Host copies of the restore buffers: saved[0 .. *nsaved) are read
 * whole; restore_end writes them back and frees them. */
static tj_status restore_begin(const tuning *t, void ***saved, int *nsaved)
{
    *saved = tjs_xcalloc((size_t)t->o.nrestore + 1, sizeof **saved);
    *nsaved = 0;
    for (int i = 0; i < t->o.nrestore; i++) {
        size_t bytes = tj_buffer_size(t->dev, t->o.restore[i]);
        if (!bytes)
            return tjs_error(TJ_ERR_INVALID_ARG,
                             "tj_autotune: kernel '%s': opts->restore[%d] (0x%llx) is not a live buffer of "
                             "this device", t->kernel->name, i, (unsigned long long)t->o.restore[i].handle);
        if (!((*saved)[i] = malloc(bytes)))
            return tjs_error(TJ_ERR_OUT_OF_MEMORY, "tj_autotune: kernel '%s': no host memory to save "
                             "opts->restore[%d] (%zu bytes)", t->kernel->name, i, bytes);
        tj_status st = tj_buffer_read(t->dev, t->o.restore[i], 0, (*saved)[i], bytes);
        if (st != TJ_OK)
            return st;
        ++*nsaved;
    }
    return TJ_OK;
}

/* Writes the saved contents back, whether or not tuning succeeded, and
 * frees them; st, or the first write's failure where st is TJ_OK. */
static tj_status restore_end(const tuning *t, void **saved, int nsaved, tj_status st)
{
    for (int i = 0; i < t->o.nrestore; i++) {
        tj_status w = TJ_OK;
        if (i < nsaved)
            w = tj_buffer_write(t->dev, t->o.restore[i], 0, saved[i], tj_buffer_size(t->dev, t->o.restore[i]));
        if (st == TJ_OK)
            st = w;
        free(saved[i]);
    }
    free(saved);
    return st;
}

/* The configs opts->prune keeps (all where there is none) into keep;
 * the tuning's error where it fails or keeps none. */
static tj_status prune(tuning *t, unsigned char *keep)
{
    memset(keep, 1, (size_t)t->nconfigs);
    if (!t->o.prune)
        return TJ_OK;
    int rc = t->o.prune(t->configs, t->nconfigs, t->o.key, t->o.nkey, keep, t->o.prune_user), kept = 0;
    for (int i = 0; i < t->nconfigs; i++)
        kept += keep[i] != 0;
    if (rc != 0)
        return tjs_error(TJ_ERR_INVALID_ARG, "tj_autotune: kernel '%s': opts->prune returned %d", t->kernel->name,
                         rc);
    if (!kept)
        return tjs_error(TJ_ERR_INVALID_ARG, "tj_autotune: kernel '%s': opts->prune kept none of the %d configs",
                         t->kernel->name, t->nconfigs);
    return TJ_OK;
}

/* Every config kept timed; the fastest into *best and its time into *best_ms. */
static tj_status tune(tuning *t, int *best, double *best_ms)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    tj_status first = TJ_OK;
    char *first_why = NULL;
    int failed = 0, timed = 0;
    *best = -1;
    unsigned char *keep = tjs_xmalloc((size_t)t->nconfigs);
    tj_status pruned = prune(t, keep);
    if (pruned != TJ_OK) {
        free(keep);
        return pruned;
    }
    for (int i = 0; i < t->nconfigs; i++) {
        if (!keep[i]) {
            if (t->print) {
                char *name = config_name(t, i);
                say(t, "%s pruned", name);
                free(name);
            }
            continue;
        }
        double ms = 0;
        char *why = NULL, *name = config_name(t, i);
        timed++;
        tj_status st = time_config(t, i, &ms, &why);
        if (st != TJ_OK) {
            failed++;
            if (t->print)
                say(t, "%s failed (%s): %s", name, tj_status_name(st), why);
            if (first == TJ_OK) {
                first = st;
                first_why = tjs_asprintf("%s: %s", name, why);
            }
        } else {
            if (t->print)
                say(t, "%s: median %.4f ms", name, ms);
            if (*best < 0 || ms < *best_ms) {
                *best = i;
                *best_ms = ms;
            }
        }
        free(why);
        free(name);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    tj_status st = TJ_OK;
    if (*best < 0) {
        st = tjs_error(first, "tj_autotune: kernel '%s': all %d configs failed; the first, %s", t->kernel->name,
                       timed, first_why);
    } else if (t->print) {
        char *name = config_name(t, *best);
        say(t, "best %s at %.4f ms, of %d configs (%d failed), tuned in %.1f ms", name, *best_ms, timed,
            failed, (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
        free(name);
    }
    free(first_why);
    free(keep);
    return st;
}

/* The choice: from memory, the disk, or tuning (remembered in both). */
static tj_status choose(tuning *t, int *best)
{
    uint64_t hash = fnv1a(t->key);
    if ((*best = memo_find(t->key, hash)) >= 0)
        return TJ_OK;
    char *dir = tune_dir(), *path = NULL;
    if (dir) {
        path = tjs_asprintf("%s/%016llx.txt", dir, (unsigned long long)hash);
        const char *why = NULL;
        char *text = read_file(path, &why);
        if (text)
            *best = parse_choice(text, t->key, t->nconfigs, &why);
        free(text);
        if (*best >= 0) {
            if (t->print) {
                char *name = config_name(t, *best);
                say(t, "%s, from %s", name, path);
                free(name);
            }
            memo_put(t->key, hash, *best);
            free(path);
            free(dir);
            return TJ_OK;
        }
        if (why && t->print)
            say(t, "ignoring %s: %s", path, why);
    }
    void **saved = NULL;
    int nsaved = 0;
    double ms = 0;
    tj_status st = restore_begin(t, &saved, &nsaved);
    if (st == TJ_OK)
        st = tune(t, best, &ms);
    st = restore_end(t, saved, nsaved, st);
    if (st == TJ_OK) {
        memo_put(t->key, hash, *best);
        int err = path ? write_choice(dir, path, t->key, *best, ms) : 0;
        if (t->print && path)
            say(t, err ? "cannot save the choice to %s: %s" : "saved to %s%s", path, err ? strerror(err) : "");
    }
    free(path);
    free(dir);
    return st;
}

/* ---- the entry points --------------------------------------------------- */

static tj_status check_config(const tj_kernel *kernel, const tj_tune_config *c, int i, const char *who)
{
    if (c->version != 0)
        return tjs_error(TJ_ERR_INVALID_ARG,
                         "%s: kernel '%s': configs[%d].version = %d, but this libtjit (%s) knows "
                         "tj_tune_config up to version %d", who, kernel->name, i, c->version, tj_version(),
                         TJ_TUNE_CONFIG_VERSION);
    if (c->nconsts != kernel->nconsts)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: kernel '%s': configs[%d].nconsts = %d; the kernel has %d "
                         "constant%s", who, kernel->name, i, c->nconsts, kernel->nconsts,
                         kernel->nconsts == 1 ? "" : "s");
    if (c->nconsts > 0 && !c->consts)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: kernel '%s': configs[%d].consts is NULL", who, kernel->name, i);
    if (c->num_warps < 0 || c->num_stages < 0)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: kernel '%s': configs[%d] has num_warps = %d, num_stages = %d "
                         "(0 or more)", who, kernel->name, i, c->num_warps, c->num_stages);
    return TJ_OK;
}

static tj_status check_opts(const tj_kernel *kernel, const tj_autotune_opts *opts, tj_autotune_opts *o,
                            const char *who)
{
    *o = (tj_autotune_opts)TJ_AUTOTUNE_OPTS_INIT;
    if (!opts)
        return TJ_OK;
    size_t before_prune = offsetof(tj_autotune_opts, prune);
    if (opts->size != sizeof(tj_autotune_opts) && opts->size != before_prune)
        return tjs_error(TJ_ERR_INVALID_ARG,
                         "%s: kernel '%s': opts->size is %zu; tjit %s knows tj_autotune_opts of %zu bytes "
                         "(start from TJ_AUTOTUNE_OPTS_INIT)", who, kernel->name, opts->size, TJ_VERSION_STRING,
                         sizeof(tj_autotune_opts));
    if (opts->nkey < 0 || (opts->nkey > 0 && !opts->key))
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: kernel '%s': opts->nkey is %d and opts->key %s", who,
                         kernel->name, opts->nkey, opts->key ? "is set" : "NULL");
    if (opts->nrestore < 0 || (opts->nrestore > 0 && !opts->restore))
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: kernel '%s': opts->nrestore is %d and opts->restore %s", who,
                         kernel->name, opts->nrestore, opts->restore ? "is set" : "NULL");
    if (opts->warmup < 0 || opts->reps < 1)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: kernel '%s': opts->warmup is %d, opts->reps %d (warmup >= 0, "
                         "reps >= 1)", who, kernel->name, opts->warmup, opts->reps);
    memcpy(o, opts, opts->size); /* an earlier tjit's options: no prune */
    o->size = sizeof *o;
    return TJ_OK;
}

static tj_status check_args(tj_device *dev, const tj_kernel *kernel, const tj_launch_cfg *cfg,
                            const tj_tune_config *configs, int nconfigs, const char *who)
{
    if (!dev)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: dev is NULL", who);
    if (!kernel || !kernel->name || (kernel->nconsts > 0 && !kernel->consts) ||
        (kernel->nparams > 0 && !kernel->params))
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: kernel is %s", who, kernel ? "not one TJ_KERNEL defined" : "NULL");
    if (!cfg)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: kernel '%s': cfg is NULL", who, kernel->name);
    if (cfg->version < 0 || cfg->version > TJ_LAUNCH_CFG_VERSION)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: kernel '%s': cfg->version = %d, but this libtjit (%s) knows "
                         "tj_launch_cfg up to version %d", who, kernel->name, cfg->version, tj_version(),
                         TJ_LAUNCH_CFG_VERSION);
    if (!configs || nconfigs < 1)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: kernel '%s': no configs to choose from (configs %s, "
                         "nconfigs %d)", who, kernel->name, configs ? "set" : "NULL", nconfigs);
    tj_status st = TJ_OK;
    for (int i = 0; i < nconfigs && st == TJ_OK; i++)
        st = check_config(kernel, &configs[i], i, who);
    return st;
}

/* The checks, then the choice (*best, -1 on failure); t is the tuning's
 * state for a launch that follows. */
static tj_status autotune(const char *who, tj_device *dev, const tj_kernel *kernel, const tj_launch_cfg *cfg,
                          const tj_arg *args, int nargs, const tj_tune_config *configs, int nconfigs,
                          const tj_autotune_opts *opts, tuning *t, int *best)
{
    tjs_clear_error();
    *best = -1;
    *t = (tuning){.dev = dev, .kernel = kernel, .cfg = cfg, .args = args, .nargs = nargs, .configs = configs,
                  .nconfigs = nconfigs, .print = printing()};
    tj_status st = check_args(dev, kernel, cfg, configs, nconfigs, who);
    if (st == TJ_OK)
        st = check_opts(kernel, opts, &t->o, who);
    if (st != TJ_OK)
        return st;
    char *key = key_text(dev, kernel, cfg, configs, nconfigs, &t->o);
    t->key = key;
    st = choose(t, best);
    t->key = NULL;
    free(key);
    if (st != TJ_OK)
        *best = -1;
    return st;
}

tj_status tj_autotune(tj_device *dev, const tj_kernel *kernel, const tj_launch_cfg *cfg, const tj_arg *args,
                      int nargs, const tj_tune_config *configs, int nconfigs, const tj_autotune_opts *opts,
                      int *best)
{
    if (!best) {
        tjs_clear_error();
        return tjs_error(TJ_ERR_INVALID_ARG, "tj_autotune: best is NULL (where the chosen index goes)");
    }
    tuning t;
    return autotune("tj_autotune", dev, kernel, cfg, args, nargs, configs, nconfigs, opts, &t, best);
}

tj_status tj_autotuned_launch(tj_device *dev, const tj_kernel *kernel, const tj_launch_cfg *cfg,
                              const tj_arg *args, int nargs, const tj_tune_config *configs, int nconfigs,
                              const tj_autotune_opts *opts, int *best)
{
    tuning t;
    int chosen = -1;
    tj_status st =
        autotune("tj_autotuned_launch", dev, kernel, cfg, args, nargs, configs, nconfigs, opts, &t, &chosen);
    if (st == TJ_OK) {
        tj_launch_cfg l = config_cfg(&t, &configs[chosen], cfg->stream);
        st = tj_launch(dev, kernel, &l, args, nargs, configs[chosen].consts, configs[chosen].nconsts);
    }
    if (best)
        *best = chosen;
    return st;
}
