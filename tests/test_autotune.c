/* SPDX-License-Identifier: MIT */
/*
 * test_autotune.c — tj_autotune and tj_autotuned_launch.
 *
 * Which config wins is the clock's business, so the test asserts what
 * must hold whatever the clock says: the winner is one of the configs
 * and never one that failed; a config that fails to build (BLOCK = 3:
 * tj_arange wants a power of two) is skipped; tuning calls the grid
 * callback once per config, and a second call for the same key calls it
 * never (the choice comes from memory); another key tunes again; the
 * choice is a file under a temporary TJIT_CACHE_DIR, which a new process
 * (this program again, --child) reads instead of tuning, as its
 * TJIT_PRINT_AUTOTUNING=1 output shows; a damaged file, or one naming a
 * config that is not there, is ignored and written anew; TJIT_CACHE=0
 * tunes without touching the disk; the folder and file are 0700 and 0600,
 * as the disk cache makes its own; opts->restore gives an accumulating
 * kernel its output back, so tj_autotuned_launch adds exactly once;
 * every config failing is an error naming the kernel; bad inputs are
 * refused with a message, before anything is launched.
 *
 * The same runs on a GPU as tests/gpu/test_autotune.gpu.
 */
#include <dirent.h>
#include <stddef.h>
#include <sys/stat.h>

#include "testlib.h"

enum { N = 1 << 15 };

TJ_KERNEL(tune_add, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(acc, f32), TJ_SCALAR(n, i32)), TJ_CONSTS(BLOCK))
{
    tj_val offs = tj_add(tj_mul(tj_program_id(0), BLOCK), tj_arange(0, BLOCK));
    tj_val mask = tj_lt(offs, n);
    tj_val sum = tj_add(tj_load(tj_add(acc, offs), .mask = mask), tj_load(tj_add(x, offs), .mask = mask));
    tj_store(tj_add(acc, offs), sum, .mask = mask);
}

static const int64_t blocks[] = {16, 1024, 3, 256}; /* 3 fails to build */
#define CONFIG(i) {0, 1, &blocks[i], 0, 0}
static const tj_tune_config configs[] = {CONFIG(0), CONFIG(1), CONFIG(2), CONFIG(3)};
enum { NCONFIGS = 4, FAILING = 2 };

static int grid_calls;

static void grid_fn(const int64_t *consts, const tj_arg *args, int nargs, int64_t grid[3], void *user)
{
    (void)nargs;
    (void)user;
    grid_calls++;
    grid[0] = (args[2].v.i + consts[0] - 1) / consts[0];
}

static tj_autotune_opts opts_for(const int64_t *key)
{
    tj_autotune_opts o = TJ_AUTOTUNE_OPTS_INIT;
    o.key = key;
    o.nkey = 1;
    o.grid = grid_fn;
    o.warmup = 1;
    o.reps = 3;
    return o;
}

/* The child: one tj_autotune of key N, "best I" on stdout. */
static int child(void)
{
    tj_device *dev = NULL;
    if (tj_device_open(&dev, tl_device_kind(), 0) != TJ_OK) {
        printf("cannot open the device: %s\n", tj_last_error());
        return 1;
    }
    tj_buffer x, acc;
    tj_buffer_alloc(dev, N * sizeof(float), &x);
    tj_buffer_alloc(dev, N * sizeof(float), &acc);
    tj_arg args[] = {TJ_ARG_BUF(x), TJ_ARG_BUF(acc), TJ_ARG_I32(N)};
    int64_t key[] = {N};
    tj_autotune_opts o = opts_for(key);
    int best = -1;
    tj_status st = tj_autotune(dev, tune_add, &(tj_launch_cfg){0}, args, 3, configs, NCONFIGS, &o, &best);
    fflush(stderr);
    if (st == TJ_OK)
        printf("best %d\n", best);
    else
        printf("error %s: %s\n", tj_status_name(st), tj_last_error());
    tj_device_close(dev);
    return st != TJ_OK;
}

/* This program as a child with env before it; its output (stderr too). */
static char *run_child(const char *env)
{
    static char out[1 << 16];
    char self[4096], command[8192];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    self[len > 0 ? len : 0] = 0;
    snprintf(command, sizeof command, "%s '%s' --child 2>&1", env, self);
    FILE *p = popen(command, "r");
    size_t n = p ? fread(out, 1, sizeof out - 1, p) : 0;
    out[n] = 0;
    if (p)
        pclose(p);
    return out;
}

/* How many files dir holds (-1: no such dir); the last one's path in path. */
static int files_in(const char *dir, char *path, size_t size)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (e->d_name[0] != '.') {
            n++;
            snprintf(path, size, "%s/%s", dir, e->d_name);
        }
    closedir(d);
    return n;
}

static char *slurp(const char *path)
{
    static char text[1 << 16];
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    text[n] = 0;
    if (f)
        fclose(f);
    return text;
}

static int prune_calls;

/* Keeps the last config, counting its calls in *user (NULL: fails). */
static int keep_last(const tj_tune_config *c, int n, const int64_t *key, int nkey, unsigned char *keep, void *user)
{
    (void)c, (void)key, (void)nkey;
    if (!user)
        return -1;
    ++*(int *)user;
    for (int i = 0; i + 1 < n; i++)
        keep[i] = 0;
    return 0;
}

static int keep_none(const tj_tune_config *c, int n, const int64_t *key, int nkey, unsigned char *keep, void *user)
{
    (void)c, (void)key, (void)nkey, (void)user;
    memset(keep, 0, (size_t)n);
    return 0;
}

static void spit(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* A call refused with TJ_ERR_INVALID_ARG, a message holding text, nothing launched. */
static int refused(tj_status st, const char *text)
{
    int ok = st == TJ_ERR_INVALID_ARG && strstr(tj_last_error(), text) && grid_calls == 0;
    if (!ok)
        tap_diag("  got %s (%d grid calls): %s", tj_status_name(st), grid_calls, tj_last_error());
    grid_calls = 0;
    return ok;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--child") == 0)
        return child();
    tj_device *dev = tl_setup("test_autotune");
    char dir[] = "/tmp/tjit-autotune-XXXXXX", tune_dir[64], file[4096], file2[4096];
    if (!mkdtemp(dir))
        tap_bail_out("mkdtemp failed");
    snprintf(tune_dir, sizeof tune_dir, "%s/autotune", dir);
    setenv("TJIT_CACHE_DIR", dir, 1);
    unsetenv("TJIT_CACHE");
    unsetenv("TJIT_PRINT_AUTOTUNING");

    float *x = malloc(N * sizeof *x), *acc = malloc(N * sizeof *acc), *got = malloc(N * sizeof *got);
    for (int i = 0; i < N; i++) {
        x[i] = (float)(i % 97);
        acc[i] = (float)(i % 13);
    }
    tj_buffer xb = tl_upload(dev, x, N * sizeof *x), accb = tl_upload(dev, acc, N * sizeof *acc);
    tj_arg args[] = {TJ_ARG_BUF(xb), TJ_ARG_BUF(accb), TJ_ARG_I32(N)};
    tj_launch_cfg cfg = tl_grid(0, 0, 0);
    int64_t key[] = {N}, key2[] = {N - 1};
    tj_autotune_opts o = opts_for(key);

    int best = -1;
    tj_status st = tj_autotune(dev, tune_add, &cfg, args, 3, configs, NCONFIGS, &o, &best);
    if (st != TJ_OK)
        tap_diag("  %s: %s", tj_status_name(st), tj_last_error());
    tap_ok(st == TJ_OK && best >= 0 && best < NCONFIGS && best != FAILING,
           "a winner among the configs, not the one that fails to build (best %d)", best);
    tap_ok(grid_calls == NCONFIGS, "tuning asked the grid of each config once (%d calls)", grid_calls);
    int n = files_in(tune_dir, file, sizeof file);
    tap_ok(n == 1 && strncmp(slurp(file), "tjit autotune 1\nkey ", 20) == 0,
           "the choice is one file under TJIT_CACHE_DIR/autotune (%d files)", n);
    tap_diag("  %s", file);
    struct stat sb, fb;
    tap_ok(stat(tune_dir, &sb) == 0 && (sb.st_mode & 0777) == 0700 && stat(file, &fb) == 0 &&
               (fb.st_mode & 0777) == 0600,
           "the folder is 0700 and the file 0600, as the disk cache makes them");

    grid_calls = 0;
    int again = -1;
    st = tj_autotune(dev, tune_add, &cfg, args, 3, configs, NCONFIGS, &o, &again);
    tap_ok(st == TJ_OK && again == best && grid_calls == 0, "the same key again: the same choice, nothing launched");

    o.key = key2;
    st = tj_autotune(dev, tune_add, &cfg, args, 3, configs, NCONFIGS, &o, &again);
    tap_ok(st == TJ_OK && grid_calls == NCONFIGS && files_in(tune_dir, file2, sizeof file2) == 2,
           "another key tunes again, into a file of its own");
    o.key = key;
    grid_calls = 0;
    st = tj_autotune(dev, tune_add, &cfg, args, 3, configs, 2, &o, &again);
    tap_ok(st == TJ_OK && grid_calls == 2 && again >= 0 && again < 2,
           "another config list (the first two) tunes again, among its own");

    /* A new process reads the file instead of tuning. */
    char env[512];
    snprintf(env, sizeof env, "TJIT_PRINT_AUTOTUNING=1 TJIT_CACHE_DIR='%s'", dir);
    char *out = run_child(env), want[64];
    snprintf(want, sizeof want, "best %d\n", best);
    tap_ok(strstr(out, want) && strstr(out, ", from ") && strstr(out, file) && !strstr(out, "median"),
           "a new process takes the choice from the file, tuning nothing");
    tap_diag("  child: %s", out);

    /* Damaged files are ignored and written anew. */
    const char *damaged[] = {"garbage\n", "tjit autotune 1\nkey nothing like it\nbest 0\nmedian_ms 1\n", NULL};
    char text[8192];
    snprintf(text, sizeof text, "%s", slurp(file));
    char *best_line = strstr(text, "\nbest ");
    if (best_line)
        memcpy(best_line + 6, "9", 1); /* config 9 of 4 */
    damaged[2] = text;
    for (int i = 0; i < 4; i++) {
        if (i < 3) {
            spit(file, damaged[i]);
        } else { /* the good file with a NUL byte after it */
            FILE *f = fopen(file, "ab");
            if (f) {
                fputc(0, f);
                fclose(f);
            }
        }
        out = run_child(env);
        int redone = strstr(out, "ignoring") && tl_count(out, ": median ") == NCONFIGS - 1 &&
                     tl_count(out, "failed (TJ_ERR_SHAPE)") == 1 && strstr(out, "saved to") &&
                     strstr(out, "best ") && strncmp(slurp(file), "tjit autotune 1\nkey tjit", 24) == 0;
        tap_ok(redone, "damaged file %d (%s) is ignored, tuned again and rewritten", i + 1,
               i == 0 ? "not a tuning file" : i == 1 ? "another key" : i == 2 ? "config index out of range"
                                                                       : "a NUL byte at the end");
        if (!redone)
            tap_diag("  child: %s", out);
    }

    /* TJIT_CACHE=0: no disk. */
    char off_dir[128];
    snprintf(off_dir, sizeof off_dir, "%s/off", dir);
    snprintf(env, sizeof env, "TJIT_CACHE=0 TJIT_PRINT_AUTOTUNING=1 TJIT_CACHE_DIR='%s'", off_dir);
    out = run_child(env);
    tap_ok(strstr(out, "best ") && strstr(out, "median") && !strstr(out, "saved to") && stat(off_dir, &sb) != 0,
           "TJIT_CACHE=0: tuned, nothing written");

    /* restore: an accumulating kernel tuned on its own output, which the
     * tunings above (without restore) have added to many times. */
    int changed = tj_buffer_read(dev, accb, 0, got, N * sizeof *got) == TJ_OK && memcmp(got, acc, N * sizeof *got);
    tap_ok(changed, "tuning without restore launched on the arguments: acc changed");
    if (tj_buffer_write(dev, accb, 0, acc, N * sizeof *acc) != TJ_OK)
        tap_bail_out("tj_buffer_write: %s", tj_last_error());
    o.restore = &accb;
    o.nrestore = 1;
    int64_t key3[] = {3};
    o.key = key3;
    grid_calls = 0;
    st = tj_autotuned_launch(dev, tune_add, &cfg, args, 3, configs, NCONFIGS, &o, &again);
    int right = st == TJ_OK && tj_buffer_read(dev, accb, 0, got, N * sizeof *got) == TJ_OK;
    for (int i = 0; right && i < N; i++)
        right = got[i] == acc[i] + x[i];
    tap_ok(right && grid_calls == NCONFIGS + 1,
           "tj_autotuned_launch with restore: tuned, then acc += x exactly once (%s)", tj_last_error());
    grid_calls = 0;
    st = tj_autotuned_launch(dev, tune_add, &cfg, args, 3, configs, NCONFIGS, &o, NULL);
    right = st == TJ_OK && tj_buffer_read(dev, accb, 0, got, N * sizeof *got) == TJ_OK;
    for (int i = 0; right && i < N; i++)
        right = got[i] == acc[i] + 2 * x[i];
    tap_ok(right && grid_calls == 1, "again: no tuning, one launch of the choice (best NULL is fine)");
    o.restore = NULL;
    o.nrestore = 0;
    o.key = key;

    /* A prune function: only what it keeps is launched; none kept, or a
     * failure, is an error; an earlier tjit's options (no prune) still read. */
    int64_t key4[] = {4};
    o.key = key4;
    o.prune = keep_last;
    o.prune_user = &prune_calls;
    grid_calls = 0;
    st = tj_autotune(dev, tune_add, &cfg, args, 3, configs, NCONFIGS, &o, &again);
    tap_ok(st == TJ_OK && again == NCONFIGS - 1 && grid_calls == 1 && prune_calls == 1,
           "opts->prune keeping the last config: it alone is launched and chosen (best %d, %d grids, %d prunes)",
           again, grid_calls, prune_calls);
    st = tj_autotune(dev, tune_add, &cfg, args, 3, configs, NCONFIGS, &o, &again);
    tap_ok(st == TJ_OK && again == NCONFIGS - 1 && prune_calls == 1, "the choice known: prune is not called again");
    o.key = (int64_t[]){5};
    o.prune = keep_none;
    again = -1;
    grid_calls = 0;
    st = tj_autotune(dev, tune_add, &cfg, args, 3, configs, NCONFIGS, &o, &again);
    tap_ok(refused(st, "kernel 'tune_add': opts->prune kept none of the 4 configs") && again == -1,
           "a prune that keeps none is refused");
    o.prune = keep_last;
    o.prune_user = NULL; /* keep_last fails without its counter */
    st = tj_autotune(dev, tune_add, &cfg, args, 3, configs, NCONFIGS, &o, &again);
    tap_ok(refused(st, "opts->prune returned -1"), "a prune that fails fails the tuning");
    tj_autotune_opts earlier = o;
    earlier.size = offsetof(tj_autotune_opts, prune);
    earlier.key = (int64_t[]){6};
    grid_calls = 0;
    st = tj_autotune(dev, tune_add, &cfg, args, 3, configs, NCONFIGS, &earlier, &again);
    tap_ok(st == TJ_OK && grid_calls == NCONFIGS, "options of the size before prune: every config timed (%d grids)",
           grid_calls);
    o.prune = NULL;
    o.prune_user = NULL;
    o.key = key;

    /* Every config failing. */
    static const int64_t bad_blocks[] = {3, 5};
    tj_tune_config bad[] = {{0, 1, &bad_blocks[0], 0, 0}, {0, 1, &bad_blocks[1], 0, 0}};
    grid_calls = 0;
    st = tj_autotune(dev, tune_add, &cfg, args, 3, bad, 2, &o, &again);
    tap_ok(st == TJ_ERR_SHAPE && again == -1 && strstr(tj_last_error(), "kernel 'tune_add': all 2 configs failed") &&
               strstr(tj_last_error(), "config 0 (BLOCK=3"),
           "every config failing: the first one's status, the kernel and config named");
    tap_diag("  %s: %s", tj_status_name(st), tj_last_error());

    /* Bad inputs. */
    grid_calls = 0;
    tj_tune_config wrong = {0, 2, blocks, 0, 0}, noconsts = {0, 1, NULL, 0, 0}, negative = {0, 1, blocks, -1, 0},
                   newer = {1, 1, blocks, 0, 0};
    tap_ok(refused(tj_autotune(NULL, tune_add, &cfg, args, 3, configs, NCONFIGS, &o, &best), "dev is NULL"),
           "no device");
    tap_ok(refused(tj_autotune(dev, NULL, &cfg, args, 3, configs, NCONFIGS, &o, &best), "kernel is NULL"),
           "no kernel");
    tap_ok(refused(tj_autotune(dev, tune_add, NULL, args, 3, configs, NCONFIGS, &o, &best), "cfg is NULL"),
           "no cfg");
    tap_ok(refused(tj_autotune(dev, tune_add, &cfg, args, 3, NULL, NCONFIGS, &o, &best), "no configs"),
           "configs NULL");
    tap_ok(refused(tj_autotune(dev, tune_add, &cfg, args, 3, configs, 0, &o, &best), "no configs"), "nconfigs 0");
    tap_ok(refused(tj_autotune(dev, tune_add, &cfg, args, 3, &wrong, 1, &o, &best),
                   "kernel 'tune_add': configs[0].nconsts = 2; the kernel has 1 constant"),
           "a config with the wrong number of constants");
    tap_ok(refused(tj_autotune(dev, tune_add, &cfg, args, 3, &noconsts, 1, &o, &best), "configs[0].consts is NULL"),
           "a config without its constants");
    tap_ok(refused(tj_autotune(dev, tune_add, &cfg, args, 3, &negative, 1, &o, &best), "num_warps = -1"),
           "a negative num_warps");
    tap_ok(refused(tj_autotune(dev, tune_add, &cfg, args, 3, &newer, 1, &o, &best), "configs[0].version = 1"),
           "a config of a newer version");
    tap_ok(refused(tj_autotune(dev, tune_add, &cfg, args, 3, configs, NCONFIGS, &o, NULL), "best is NULL"),
           "no place for the answer");
    tj_autotune_opts bad_o = o;
    bad_o.size = 8;
    tap_ok(refused(tj_autotune(dev, tune_add, &cfg, args, 3, configs, NCONFIGS, &bad_o, &best), "opts->size is 8"),
           "options of another size");
    bad_o = o;
    bad_o.reps = 0;
    tap_ok(refused(tj_autotune(dev, tune_add, &cfg, args, 3, configs, NCONFIGS, &bad_o, &best), "reps 0"),
           "reps 0");
    bad_o = o;
    bad_o.key = NULL;
    tap_ok(refused(tj_autotune(dev, tune_add, &cfg, args, 3, configs, NCONFIGS, &bad_o, &best),
                   "opts->nkey is 1 and opts->key NULL"),
           "a key count without keys");
    bad_o = o;
    bad_o.key = (int64_t[]){12345}; /* a miss, so the restore list is read */
    bad_o.restore = (tj_buffer[]){{0}};
    bad_o.nrestore = 1;
    tap_ok(refused(tj_autotuned_launch(dev, tune_add, &cfg, args, 3, configs, NCONFIGS, &bad_o, &best),
                   "opts->restore[0] (0x0) is not a live buffer"),
           "a restore buffer that is none");

    char command[4200];
    snprintf(command, sizeof command, "rm -rf '%s'", dir);
    if (system(command) != 0)
        tap_diag("  could not remove %s", dir);
    free(x);
    free(acc);
    free(got);
    tj_device_close(dev);
    return tap_done();
}
