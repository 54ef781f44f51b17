/* SPDX-License-Identifier: MIT */
/*
 * test_disk_cache.c — the disk cache of compiled variants
 * (src/jit/runtime/disk_cache.c), across processes.
 *
 * Every run is a child process (fork) with its own environment: it opens
 * the test device (the CPU, or the GPU under tests/gpu/test_disk_cache.gpu),
 * launches two kernels — a row softmax, and a kernel with a device assert,
 * once passing and once failing, whose message must still name its line —
 * checks every result, and sends back the cache's counters (hits, misses,
 * bad entries, entries stored: tjj_disk_cache_count). The parent never
 * opens a device, so each child starts as a fresh process would.
 *
 * What must hold: an empty cache misses and stores both variants, and a
 * second process hits both and compiles nothing; an entry with a flipped
 * byte, cut short, cut below its header, grown, holding another key's
 * entry, or whose payload is forged or noise under a matching checksum is bad: the child recompiles, gets right results, and writes it
 * over (the next process hits); TJIT_CACHE=0 writes nothing, and a
 * malformed TJIT_CACHE warns and turns the cache off; TJIT_CACHE_DIR,
 * XDG_CACHE_HOME and HOME are honored in that order, directories made
 * 0700; a directory that cannot be made warns once and changes no result;
 * a compile that TJIT_DUMP prints does not read the cache; and 8 processes
 * compiling the same kernels at once into an empty cache all succeed,
 * leaving whole entries only — no temporary file — which a ninth hits;
 * over TJIT_CACHE_MAX_SIZE the least recently used entries go after a
 * write (a hit counts as a use, the entry written stays), stale temporary
 * files too, and a malformed cap warns.
 */
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../src/jit/hash.h"
#include "../src/jit/runtime/disk_cache.h"
#include "testlib.h"

enum { ROWS = 37, COLS = 300, BLOCK = 512, N = 256, KERNELS = 2, RACERS = 8 };
/* The assert kernel's limits: above every value, and below some. Neither is
 * a multiple of 16 (nor 1), so that on a GPU both launches run one variant
 * (tjf_spec_key): two kernels, two entries. */
enum { PASSING = 250, FAILING = 100 };

TJ_KERNEL(row_softmax, TJ_PARAMS(TJ_PTR(src, f32), TJ_PTR(dst, f32), TJ_SCALAR(cols, i32)),
          TJ_CONSTS(B))
{
    tj_val start = tj_mul(tj_program_id(0), cols);
    tj_val offs = tj_arange(0, B);
    tj_val mask = tj_lt(offs, cols);
    tj_val x = tj_load(tj_add(src, tj_add(start, offs)), .mask = mask, .other = tj_f32(-INFINITY));
    tj_val e = tj_exp(tj_sub(x, tj_max(x, 0)));
    tj_store(tj_add(dst, tj_add(start, offs)), tj_div(e, tj_sum(e, 0)), .mask = mask);
}

static int assert_line;

TJ_KERNEL(checked_double, TJ_PARAMS(TJ_PTR(x, i32), TJ_PTR(y, i32), TJ_SCALAR(limit, i32)), TJ_CONSTS(B))
{
    tj_val offs = tj_add(tj_mul(tj_program_id(0), B), tj_arange(0, B));
    tj_val v = tj_load(tj_add(x, offs));
    assert_line = __LINE__ + 1;
    tj_device_assert(tj_lt(v, limit), "every value under the limit");
    tj_store(tj_add(y, offs), tj_add(v, v));
}

/* --- the child ---------------------------------------------------------------- */

typedef struct outcome {
    int ran;        /* the child reported (else it crashed or failed to start) */
    int correct;    /* softmax and the passing assert kernel's results */
    int asserted;   /* the failing launch: TJ_ERR_ASSERT naming the assert's line */
    tjj_disk_cache_counts n;
} outcome;

static int softmax_right(tj_device *dev)
{
    static float src[ROWS * COLS], got[ROWS * COLS];
    for (int i = 0; i < ROWS * COLS; i++)
        src[i] = (float)((i * 7919) % 101) / 13.0f - 3.0f;
    tj_buffer s, d;
    tj_launch_cfg cfg = {.grid = {ROWS}};
    if (tj_buffer_alloc(dev, sizeof src, &s) != TJ_OK || tj_buffer_alloc(dev, sizeof got, &d) != TJ_OK ||
        tj_buffer_write(dev, s, 0, src, sizeof src) != TJ_OK ||
        row_softmax_launch(dev, &cfg, s, d, COLS, BLOCK) != TJ_OK ||
        tj_buffer_read(dev, d, 0, got, sizeof got) != TJ_OK) {
        fprintf(stderr, "softmax: %s\n", tj_last_error());
        return 0;
    }
    for (int r = 0; r < ROWS; r++) {
        const float *x = src + r * COLS;
        float max = -INFINITY;
        double sum = 0;
        for (int c = 0; c < COLS; c++)
            max = fmaxf(max, x[c]);
        for (int c = 0; c < COLS; c++)
            sum += exp((double)x[c] - max);
        for (int c = 0; c < COLS; c++)
            if (fabs(got[r * COLS + c] - exp((double)x[c] - max) / sum) > 1e-6) {
                fprintf(stderr, "softmax: row %d col %d: %g\n", r, c, got[r * COLS + c]);
                return 0;
            }
    }
    return 1;
}

/* The passing launch's results, and the failing launch's error. */
static void assert_kernel(tj_device *dev, outcome *o)
{
    int32_t x[N], y[N];
    for (int i = 0; i < N; i++)
        x[i] = i - 10;
    tj_buffer bx, by;
    tj_launch_cfg cfg = {.grid = {N / 64}};
    if (tj_buffer_alloc(dev, sizeof x, &bx) != TJ_OK || tj_buffer_alloc(dev, sizeof y, &by) != TJ_OK ||
        tj_buffer_write(dev, bx, 0, x, sizeof x) != TJ_OK || checked_double_launch(dev, &cfg, bx, by, PASSING, 64) != TJ_OK ||
        tj_buffer_read(dev, by, 0, y, sizeof y) != TJ_OK) {
        fprintf(stderr, "checked_double: %s\n", tj_last_error());
        o->correct = 0;
        return;
    }
    for (int i = 0; i < N; i++)
        if (y[i] != 2 * x[i])
            o->correct = 0;
    tj_status st = checked_double_launch(dev, &cfg, bx, by, FAILING, 64);
    if (st == TJ_OK)
        st = tj_synchronize(dev);
    char where[64];
    snprintf(where, sizeof where, "test_disk_cache.c:%d", assert_line);
    o->asserted = st == TJ_ERR_ASSERT && strstr(tj_last_error(), where) &&
                  strstr(tj_last_error(), "every value under the limit");
    if (!o->asserted)
        fprintf(stderr, "the failing launch: %s: %s\n", tj_status_name(st), tj_last_error());
}

/* In the child: env is a list of "NAME=value" (set) and "NAME" (unset). */
static void child(const char *const *env, int go_fd, int report_fd)
{
    alarm(tl_watchdog_seconds()); /* a hung child dies too */
    for (; env && *env; env++) {
        const char *eq = strchr(*env, '=');
        if (eq) {
            char name[64];
            snprintf(name, sizeof name, "%.*s", (int)(eq - *env), *env);
            setenv(name, eq + 1, 1);
        } else {
            unsetenv(*env);
        }
    }
    char c;
    if (go_fd >= 0) /* racers start together, when the parent closes the pipe */
        while (read(go_fd, &c, 1) > 0) {
        }
    outcome o = {.ran = 1, .correct = 1};
    tj_device *dev = NULL;
    if (tj_device_open(&dev, tl_device_kind(), 0) != TJ_OK) {
        fprintf(stderr, "cannot open the device: %s\n", tj_last_error());
        _exit(1);
    }
    o.correct = softmax_right(dev);
    assert_kernel(dev, &o);
    tj_device_close(dev);
    o.n = tjj_disk_cache_count();
    if (write(report_fd, &o, sizeof o) != (ssize_t)sizeof o)
        _exit(1);
    _exit(0);
}

typedef struct proc {
    pid_t pid;
    int report_fd;
} proc;

/* A child with env, its stderr into stderr_path (NULL: the test's); a
 * racer waits for EOF on go[0] (go NULL: none). */
static proc spawn(const char *const *env, const int *go, const char *stderr_path)
{
    int fds[2];
    if (pipe(fds) != 0)
        tap_bail_out("pipe");
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        tap_bail_out("fork");
    if (pid == 0) {
        close(fds[0]);
        if (go)
            close(go[1]); /* else the racers would keep each other waiting */
        if (stderr_path) {
            int fd = open(stderr_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
            if (fd >= 0)
                dup2(fd, 2);
        }
        child(env, go ? go[0] : -1, fds[1]);
    }
    close(fds[1]);
    return (proc){pid, fds[0]};
}

static outcome collect(proc p)
{
    outcome o = {0};
    if (read(p.report_fd, &o, sizeof o) != (ssize_t)sizeof o)
        o.ran = 0;
    close(p.report_fd);
    int status;
    waitpid(p.pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        o.ran = 0;
    return o;
}

static outcome run(const char *const *env, const char *stderr_path)
{
    return collect(spawn(env, NULL, stderr_path));
}

/* --- the parent ----------------------------------------------------------------- */

static char root[256]; /* the test's temporary directory */

static char *path_in(const char *rel)
{
    static char p[8][512];
    static int next;
    char *s = p[next++ % 8];
    snprintf(s, 512, "%s/%s", root, rel);
    return s;
}

/* Entries (*.tjc) and anything else in dir; -1 entries if dir is missing. */
static int count_files(const char *dir, int *others)
{
    DIR *d = opendir(dir);
    *others = 0;
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (len > 4 && !strcmp(e->d_name + len - 4, ".tjc") && !strchr(e->d_name, '-'))
            n++;
        else
            ++*others;
    }
    closedir(d);
    return n;
}

/* The paths of dir's entries, sorted (at most KERNELS). */
static int entries(const char *dir, char paths[KERNELS][512])
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len > 4 && !strcmp(e->d_name + len - 4, ".tjc") && n < KERNELS)
            snprintf(paths[n++], 512, "%s/%s", dir, e->d_name);
    }
    if (d)
        closedir(d);
    if (n == 2 && strcmp(paths[0], paths[1]) > 0) {
        char t[512];
        memcpy(t, paths[0], 512);
        memcpy(paths[0], paths[1], 512);
        memcpy(paths[1], t, 512);
    }
    return n;
}

static int all_right(const outcome *o) { return o->ran && o->correct && o->asserted; }

static void show(const char *what, const outcome *o)
{
    tap_diag("%s: ran %d correct %d asserted %d; hits %llu misses %llu bad %llu stored %llu", what,
             o->ran, o->correct, o->asserted, (unsigned long long)o->n.hits,
             (unsigned long long)o->n.misses, (unsigned long long)o->n.bad,
             (unsigned long long)o->n.stored);
}

static long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* Damage one way: every entry of dir. */
typedef enum damage { FLIP, CUT, CUT_HEADER, GROW, SWAP, FORGED, GARBAGE } damage;

/* The payload of the entry at path changed, its checksum made to match:
 * FORGED sets its bytes 8..23 (the first sizes and lengths after the
 * ptxas flag) to 0xff, GARBAGE replaces all of it with noise. Only the
 * parser's checks can tell. */
static void forge(const char *path, damage how)
{
    enum { HEADER = 48, SUM_AT = 40 };
    FILE *f = fopen(path, "r+b");
    long size = file_size(path);
    if (!f || size < HEADER + 24) {
        tap_diag("cannot forge %s", path);
        if (f)
            fclose(f);
        return;
    }
    unsigned char *data = malloc((size_t)size);
    if (!data || fread(data, 1, (size_t)size, f) != (size_t)size)
        tap_bail_out("reading %s", path);
    unsigned char *payload = data + HEADER;
    size_t n = (size_t)size - HEADER;
    if (how == FORGED)
        memset(payload + 8, 0xff, 16);
    else
        for (uint64_t i = 0, x = 12345; i < n; i++) {
            x = x * 6364136223846793005u + 1442695040888963407u; /* an LCG's top byte */
            payload[i] = (unsigned char)(x >> 56);
        }
    uint64_t sum = XXH3_64bits(payload, n);
    for (int i = 0; i < 8; i++)
        data[SUM_AT + i] = (unsigned char)(sum >> (8 * i));
    rewind(f);
    if (fwrite(data, 1, (size_t)size, f) != (size_t)size)
        tap_bail_out("writing %s", path);
    fclose(f);
    free(data);
}

static void damage_entries(const char *dir, damage how)
{
    char p[KERNELS][512];
    int n = entries(dir, p);
    if (how == SWAP) { /* each file holds the other's entry */
        char t[600];
        snprintf(t, sizeof t, "%s.swap", p[0]);
        if (n != 2 || rename(p[0], t) || rename(p[1], p[0]) || rename(t, p[1]))
            tap_diag("swap failed");
        return;
    }
    for (int i = 0; i < n; i++) {
        if (how == FORGED || how == GARBAGE) {
            forge(p[i], how);
            continue;
        }
        long size = file_size(p[i]);
        if (how == CUT || how == CUT_HEADER) {
            if (truncate(p[i], how == CUT ? size - 7 : 20) != 0)
                tap_diag("truncate failed");
            continue;
        }
        FILE *f = fopen(p[i], "r+b");
        if (!f)
            continue;
        if (how == FLIP) {
            fseek(f, size / 2, SEEK_SET);
            int c = fgetc(f);
            fseek(f, size / 2, SEEK_SET);
            fputc(c ^ 0x5a, f);
        } else {
            fseek(f, 0, SEEK_END);
            fputs("trailing bytes", f);
        }
        fclose(f);
    }
}

static int count_lines_with(const char *path, const char *what)
{
    FILE *f = fopen(path, "r");
    char line[1024];
    int n = 0;
    while (f && fgets(line, sizeof line, f))
        n += strstr(line, what) != NULL;
    if (f)
        fclose(f);
    return n;
}

static void test_miss_then_hit(const char *const *env, const char *dir)
{
    outcome a = run(env, NULL);
    show("first process", &a);
    int others;
    tap_ok(all_right(&a) && a.n.hits == 0 && a.n.misses == KERNELS && a.n.stored == KERNELS &&
               count_files(dir, &others) == KERNELS && others == 0,
           "an empty cache: both variants compiled, right, and stored as %d entries", KERNELS);
    outcome b = run(env, NULL);
    show("second process", &b);
    tap_ok(all_right(&b) && b.n.hits == KERNELS && b.n.misses == 0 && b.n.stored == 0,
           "a second process hits both entries, compiles nothing, and gets the same results");
}

static void test_damage(const char *const *env, const char *dir, damage how, const char *what)
{
    damage_entries(dir, how);
    outcome o = run(env, NULL);
    show(what, &o);
    tap_ok(all_right(&o) && o.n.hits == 0 && o.n.bad == KERNELS && o.n.stored == KERNELS,
           "%s: a bad entry, recompiled (right results) and written over", what);
    outcome again = run(env, NULL);
    tap_ok(all_right(&again) && again.n.hits == KERNELS && again.n.bad == 0,
           "%s: the next process hits the rewritten entries", what);
}

/* Sets path's access and modification times to seconds_ago. */
static void age(const char *path, long seconds_ago)
{
    struct timespec t[2] = {{time(NULL) - seconds_ago, 0}, {time(NULL) - seconds_ago, 0}};
    utimensat(AT_FDCWD, path, t, 0);
}

static long seconds_since_change(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long)(time(NULL) - st.st_mtime) : -1;
}

static void write_bytes(const char *path, long n)
{
    FILE *f = fopen(path, "w");
    for (long i = 0; f && i < n; i++)
        fputc(0, f);
    if (f)
        fclose(f);
}

static void remove_entries(const char *dir)
{
    char e[KERNELS][512];
    for (int i = entries(dir, e) - 1; i >= 0; i--)
        unlink(e[i]);
}

/* The size cap (src/jit/runtime/cache_trim.c): after a write, the least
 * recently used entries go until the rest fits; a hit counts as a use; the
 * entry just written stays whatever the cap; a malformed cap warns. */
static void test_cap(void)
{
    const char *dir = path_in("cap");
    char dir_env[600], cap_env[64];
    snprintf(dir_env, sizeof dir_env, "TJIT_CACHE_DIR=%s", dir);
    const char *fill[] = {"TJIT_CACHE=1", dir_env, "TJIT_CACHE_MAX_SIZE", "TJIT_DUMP", NULL};
    outcome o = run(fill, NULL);
    char e[KERNELS][512], foreign[600], stale[600], fresh[600];
    int n = entries(dir, e);
    long total = n == KERNELS ? file_size(e[0]) + file_size(e[1]) : 0;
    /* an entry of another build, older than both and as big; temporary
     * files of dead writes, one two hours old and one just made */
    snprintf(foreign, sizeof foreign, "%s/0123456789abcdef0123456789abcdef.tjc", dir);
    snprintf(stale, sizeof stale, "%s/0.tjc.tmp-AAAAAA", dir);
    snprintf(fresh, sizeof fresh, "%s/1.tjc.tmp-BBBBBB", dir);
    write_bytes(foreign, total);
    write_bytes(stale, 10);
    write_bytes(fresh, 10);
    age(foreign, 3 * 86400);
    age(stale, 7200);
    for (int i = 0; i < n; i++)
        age(e[i], 2 * 86400);
    if (n == KERNELS)
        unlink(e[1]); /* a miss: the next process writes, then trims */
    snprintf(cap_env, sizeof cap_env, "TJIT_CACHE_MAX_SIZE=%ld", total + total / 2);
    const char *capped[] = {"TJIT_CACHE=1", dir_env, cap_env, "TJIT_DUMP", NULL};
    o = run(capped, NULL);
    show("capped", &o);
    long touched = n ? seconds_since_change(e[0]) : -1;
    tap_ok(all_right(&o) && n == KERNELS && o.n.hits == 1 && o.n.stored == 1 && file_size(foreign) < 0 &&
               touched >= 0 && touched < 600 && file_size(e[1]) > 0 && file_size(stale) < 0 && file_size(fresh) > 0,
           "over TJIT_CACHE_MAX_SIZE (%ld bytes): the least recently used entry goes, the one hit (used %ld s ago) "
           "and the one written stay; a temporary file two hours old goes, a new one stays", total + total / 2,
           touched);

    remove_entries(dir);
    const char *tiny[] = {"TJIT_CACHE=1", dir_env, "TJIT_CACHE_MAX_SIZE=1k", "TJIT_DUMP", NULL};
    o = run(tiny, NULL);
    int others;
    tap_ok(all_right(&o) && o.n.stored == KERNELS && count_files(dir, &others) == 1,
           "a cap below one entry (1k): each write removes the others, the entry just written stays");

    remove_entries(dir);
    const char *bogus[] = {"TJIT_CACHE=1", dir_env, "TJIT_CACHE_MAX_SIZE=lots", "TJIT_DUMP", NULL};
    o = run(bogus, path_in("cap.err"));
    tap_ok(all_right(&o) && o.n.stored == KERNELS && count_files(dir, &others) == KERNELS &&
               count_lines_with(path_in("cap.err"), "TJIT_CACHE_MAX_SIZE=lots") == 1,
           "TJIT_CACHE_MAX_SIZE=lots: one warning naming it, and the default cap (both entries kept)");
}

static void test_race(const char *const *env, const char *dir)
{
    int go[2];
    if (pipe(go) != 0)
        tap_bail_out("pipe");
    proc racers[RACERS];
    for (int i = 0; i < RACERS; i++)
        racers[i] = spawn(env, go, NULL);
    close(go[0]);
    close(go[1]); /* they start */
    int right = 0;
    uint64_t stored = 0;
    for (int i = 0; i < RACERS; i++) {
        outcome o = collect(racers[i]);
        right += all_right(&o);
        stored += o.n.stored;
        if (!all_right(&o))
            show("a racer", &o);
    }
    int others;
    int n = count_files(dir, &others);
    tap_ok(right == RACERS, "%d processes compiling the same kernels at once: all right (%d)", RACERS, right);
    tap_ok(n == KERNELS && others == 0 && stored >= KERNELS,
           "afterwards the cache holds %d whole entries and nothing else (%d entries, %d others, %llu stores)",
           KERNELS, n, others, (unsigned long long)stored);
    outcome v = run(env, NULL);
    tap_ok(all_right(&v) && v.n.hits == KERNELS && v.n.bad == 0, "and every entry is valid: a ninth process hits all");
}

int main(void)
{
    tap_plan(29);
    alarm(tl_watchdog_seconds());
    const char *tmp = getenv("TMPDIR");
    snprintf(root, sizeof root, "%s/tjit-disk-cache-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(root))
        tap_bail_out("mkdtemp %s", root);
    tap_diag("in %s, on the %s", root, tl_device_kind() == TJ_DEVICE_GPU ? "GPU" : "CPU");

    /* TJIT_CACHE_DIR, made with the directories above it */
    const char *dir = path_in("a/b/cache");
    char dir_env[600];
    snprintf(dir_env, sizeof dir_env, "TJIT_CACHE_DIR=%s", dir);
    const char *on[] = {"TJIT_CACHE=1", dir_env, "TJIT_DUMP", NULL};
    test_miss_then_hit(on, dir);
    struct stat st;
    tap_ok(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700 && stat(path_in("a"), &st) == 0 &&
               (st.st_mode & 0777) == 0700,
           "TJIT_CACHE_DIR is honored; the directories it needed were made 0700");

    test_damage(on, dir, FLIP, "a flipped byte");
    test_damage(on, dir, CUT, "an entry cut short");
    test_damage(on, dir, CUT_HEADER, "an entry cut inside its header");
    test_damage(on, dir, GROW, "an entry with bytes after it");
    test_damage(on, dir, SWAP, "an entry under another key's name");
    test_damage(on, dir, FORGED, "huge sizes under a matching checksum");
    test_damage(on, dir, GARBAGE, "noise under a matching checksum");

    const char *dump_ir[] = {"TJIT_CACHE=1", dir_env, "TJIT_DUMP=ir", NULL};
    outcome d = run(dump_ir, "/dev/null");
    tap_ok(all_right(&d) && d.n.hits == 0, "TJIT_DUMP=ir compiles (and prints) instead of reading the cache");

    /* off */
    char off_dir_env[600];
    snprintf(off_dir_env, sizeof off_dir_env, "TJIT_CACHE_DIR=%s", path_in("off"));
    const char *off[] = {"TJIT_CACHE=0", off_dir_env, "TJIT_DUMP", NULL};
    outcome o = run(off, NULL);
    int others;
    tap_ok(all_right(&o) && o.n.stored == 0 && o.n.hits == 0 && count_files(path_in("off"), &others) == -1,
           "TJIT_CACHE=0: right results, nothing read or written (no directory made)");
    const char *bogus[] = {"TJIT_CACHE=yes", off_dir_env, "TJIT_DUMP", NULL};
    o = run(bogus, path_in("bogus.err"));
    tap_ok(all_right(&o) && o.n.stored == 0 && count_lines_with(path_in("bogus.err"), "TJIT_CACHE=yes") == 1,
           "TJIT_CACHE=yes: one warning naming it, and the cache off");

    /* the defaults: $XDG_CACHE_HOME/tjit, then ~/.cache/tjit */
    char xdg_env[600], home_env[600];
    snprintf(xdg_env, sizeof xdg_env, "XDG_CACHE_HOME=%s", path_in("xdg"));
    snprintf(home_env, sizeof home_env, "HOME=%s", path_in("home"));
    const char *xdg[] = {"TJIT_CACHE", "TJIT_CACHE_DIR", xdg_env, home_env, "TJIT_DUMP", NULL};
    o = run(xdg, NULL);
    tap_ok(all_right(&o) && o.n.stored == KERNELS && count_files(path_in("xdg/tjit"), &others) == KERNELS &&
               count_files(path_in("home/.cache/tjit"), &others) == -1,
           "without TJIT_CACHE_DIR: $XDG_CACHE_HOME/tjit");
    const char *home[] = {"TJIT_CACHE", "TJIT_CACHE_DIR", "XDG_CACHE_HOME", home_env, "TJIT_DUMP", NULL};
    o = run(home, NULL);
    tap_ok(all_right(&o) && o.n.stored == KERNELS && count_files(path_in("home/.cache/tjit"), &others) == KERNELS &&
               stat(path_in("home/.cache/tjit"), &st) == 0 && (st.st_mode & 0777) == 0700,
           "without XDG_CACHE_HOME either: ~/.cache/tjit, made 0700");

    /* a directory that cannot be made: under a regular file */
    FILE *f = fopen(path_in("plain-file"), "w");
    if (f)
        fclose(f);
    char bad_env[600];
    snprintf(bad_env, sizeof bad_env, "TJIT_CACHE_DIR=%s", path_in("plain-file/cache"));
    const char *unwritable[] = {"TJIT_CACHE=1", bad_env, "TJIT_DUMP", NULL};
    o = run(unwritable, path_in("unwritable.err"));
    show("unwritable", &o);
    tap_ok(all_right(&o) && o.n.stored == 0 && count_lines_with(path_in("unwritable.err"), "tjit: warning") == 1 &&
               count_lines_with(path_in("unwritable.err"), "cannot write the disk cache") == 1,
           "a cache directory that cannot be made: right results, one warning for two stores");

    test_cap();

    /* 8 processes at once, into an empty cache */
    char race_env[600];
    snprintf(race_env, sizeof race_env, "TJIT_CACHE_DIR=%s", path_in("race"));
    const char *race[] = {"TJIT_CACHE=1", race_env, "TJIT_DUMP", NULL};
    test_race(race, path_in("race"));

    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0)
        tap_diag("could not remove %s", root);
    return tap_done();
}
