/* SPDX-License-Identifier: MIT */
/*
 * ptxas.c — PTX target names, and assembling tjit's PTX with NVIDIA's ptxas.
 *
 * The GPU back end needs no CUDA toolkit: LLVM writes the PTX and the driver
 * assembles it when a module is loaded. So on a machine without a GPU
 * nothing would ever tell whether that PTX is valid. ptxas, the toolkit's
 * assembler, can: when $TJIT_PTXAS names it, the runtime hands every
 * variant it compiles — for any device, the CPU included — to
 * tjj_check_with_ptxas, which assembles a GPU variant's PTX for the
 * GPU's target, and compiles a CPU variant for TJIT_PTX_TARGET, and a
 * rejection fails the launch with ptxas's message, and so does PTX that
 * ptxas assembles but reports serializing (its "Potential Performance
 * Loss" lines: Hopper's asynchronous wgmma pipeline would not run).
 * `make check` sets TJIT_PTXAS wherever configure found ptxas, which turns
 * every test kernel into a PTX validity test as well.
 *
 * ptxas reads the PTX from a temporary file (mkstemps under $TMPDIR, removed
 * afterwards) and writes its object to /dev/null, or, for a GPU variant,
 * to another such file, read back as the variant's cubin: the disk cache
 * (disk_cache.c) keeps it, so that a later process's launch loads it
 * without the driver's PTX compile. It runs through
 * posix_spawnp, never a shell, with stdout and stderr on one pipe whose read
 * end the runtime drains before waiting, so a chatty ptxas cannot block.
 * Both pipe ends are close-on-exec, so a ptxas started by another thread at
 * the same moment does not inherit this one's pipe and keep it open.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pipe2 */
#endif
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../hash.h"

#include "disk_cache.h"
#include "ptxas.h"

extern char **environ;

enum { MIN_SM = 80, MIN_ARCH_SPECIFIC_SM = 90, MAX_MESSAGE = 8192 };

tj_status tjj_ptx_target(const char *who, const char *target, int *sm, int *arch_specific)
{
    const char *from = "target";
    if (!target) {
        target = getenv("TJIT_PTX_TARGET");
        from = "TJIT_PTX_TARGET";
        if (!target || !*target)
            target = "sm_90";
    }
    const char *digits = strncmp(target, "sm_", 3) == 0 ? target + 3 : NULL;
    char *end = NULL;
    long n = digits && *digits >= '0' && *digits <= '9' ? strtol(digits, &end, 10) : -1;
    int suffix = n >= 0 && *end == 'a';
    if (n < 0 || end[suffix] != '\0' || n > 999)
        return tjs_error(TJ_ERR_INVALID_ARG,
                         "%s: %s \"%s\" is not a PTX target (expected sm_NN or sm_NNa, e.g. sm_90 or sm_90a)",
                         who, from, target);
    if (n < MIN_SM)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: %s \"%s\": tjit's GPU back end needs sm_%d or newer",
                         who, from, target, MIN_SM);
    if (suffix && n < MIN_ARCH_SPECIFIC_SM)
        return tjs_error(TJ_ERR_INVALID_ARG,
                         "%s: %s \"%s\": architecture-specific targets (the 'a' suffix) start at sm_%da",
                         who, from, target, MIN_ARCH_SPECIFIC_SM);
    *sm = (int)n;
    *arch_specific = suffix;
    return TJ_OK;
}

/* Writes all of text to fd. */
static int write_all(int fd, const char *text, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, text, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        text += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Reads fd to its end, keeping the first MAX_MESSAGE bytes. */
static void drain(int fd, tjs_buf *out)
{
    char chunk[4096];
    for (;;) {
        ssize_t r = read(fd, chunk, sizeof chunk);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return;
        if (out->len < MAX_MESSAGE)
            tjs_buf_printf(out, "%.*s", (int)r, chunk);
    }
}

/* Runs ptxas on the file at ptx_path; its output goes to message. Returns
 * the wait status, or -1 with errno-style err set when it could not run. */
static int run_ptxas(const char *path, const char *arch, const char *ptx_path, const char *out_path,
                     tjs_buf *message, int *err)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        *err = errno;
        return -1;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
    char *argv[] = {(char *)path, (char *)arch, "-o", (char *)out_path, (char *)ptx_path, NULL};
    pid_t pid;
    int rc = posix_spawnp(&pid, path, &actions, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        *err = rc;
        return -1;
    }
    drain(fds[0], message);
    close(fds[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            *err = errno;
            return -1;
        }
    }
    return status;
}

/* Does ptxas's output say it serialized instructions? It assembles such
 * PTX, but e.g. "(C7515) Potential Performance Loss: wgmma.mma_async
 * instructions are serialized ..." (C7508, C7510, C7511 alike) means the
 * asynchronous tensor-core pipeline the code was made for does not run,
 * and "(C7519) warpgroup.arrive is injected ... to allow use of registers
 * in GMMA" that a register was written between a wgmma.fence and a wgmma,
 * so the instruction waits for that write: bugs of the code generator, not
 * of the user's kernel. */
static int serialized(const char *text)
{
    static const char *const codes[] = {"(C7508)", "(C7510)", "(C7511)", "(C7515)", "(C7519)"};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
        if (strstr(text, codes[i]))
            return 1;
    return strstr(text, "Potential Performance Loss") != NULL || strstr(text, "are serialized") != NULL;
}

/* The whole file at path (malloc'ed, NUL-terminated) and its size; NULL if
 * it cannot be read or is empty. */
static char *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    tjs_buf b = {0};
    char chunk[1 << 14];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (b.len + n + 1 > b.cap) {
            b.cap = (b.len + n + 1) * 2;
            b.data = tjs_xrealloc(b.data, b.cap);
        }
        memcpy(b.data + b.len, chunk, n);
        b.len += n;
    }
    int bad = ferror(f) || b.len == 0;
    fclose(f);
    if (!bad)
        b.data[b.len] = '\0'; /* room was kept: text may be parsed */
    if (bad) {
        free(b.data);
        return NULL;
    }
    *size = b.len;
    return b.data;
}

tj_status tjj_ptxas_check(const char *path, const char *ptx, int sm, int arch_specific, const char *kernel_name)
{
    return tjj_ptxas_assemble(path, ptx, sm, arch_specific, kernel_name, NULL, NULL);
}

/* --- Kept verdicts (TJIT_PTXAS_CACHE) ----------------------------------
 * ptxas is a pure function of its binary, its arguments and the PTX, and
 * under `make check` it assembles much the same PTX again and again: one
 * kernel in several tests, and every kernel again in each of CI's builds
 * (plain, ASan, TSan), whose tjit differs but not the PTX it emits. Where
 * $TJIT_PTXAS_CACHE names a directory, an accepted PTX's messages (and
 * cubin) are kept there under an XXH3-128 key of all three, and the next
 * identical call repeats them without running ptxas: the same verdict,
 * serialization warnings included, minus a process spawn that costs more
 * than the compile. A rejection is never kept, so its message always
 * names the file ptxas was really given. An entry is
 * "tjit-ptxas-verdict 1 <message bytes> <cubin bytes>\n" and the two
 * blobs, written under a temporary name and renamed into place, so that
 * concurrent tests share the directory safely; one that does not parse
 * is a miss. */

/* The entry for ptxas at path run with arch on ptx (malloc'ed), or NULL
 * where no cache is set or the binary cannot be found to be keyed. */
static char *verdict_entry(const char *path, const char *arch, int want_cubin, const char *ptx)
{
    const char *dir = getenv("TJIT_PTXAS_CACHE");
    struct stat bin;
    if (!dir || !*dir || !strchr(path, '/') || stat(path, &bin) != 0)
        return NULL;
    XXH3_state_t *h = XXH3_createState();
    if (!h)
        return NULL;
    char id[256];
    int n = snprintf(id, sizeof id, "tjit-ptxas-verdict 1|%s|%s|%lld|%lld.%09ld|", arch,
                     want_cubin ? "cubin" : "check", (long long)bin.st_size, (long long)bin.st_mtim.tv_sec,
                     (long)bin.st_mtim.tv_nsec);
    XXH3_128bits_reset(h);
    XXH3_128bits_update(h, path, strlen(path) + 1);
    XXH3_128bits_update(h, id, (size_t)n);
    XXH3_128bits_update(h, ptx, strlen(ptx));
    XXH128_hash_t key = XXH3_128bits_digest(h);
    XXH3_freeState(h);
    return tjs_asprintf("%s/%016llx%016llx", dir, (unsigned long long)key.high64,
                        (unsigned long long)key.low64);
}

/* Reads the entry's message into message and, where wanted, its cubin;
 * 1 on a hit, 0 on a miss (no entry, or one that does not parse). */
static int load_verdict(const char *entry, tjs_buf *message, char **cubin, size_t *cubin_size)
{
    size_t size;
    char *data = read_file(entry, &size);
    unsigned long long message_len, cubin_len;
    int header_len = 0;
    int hit = data && sscanf(data, "tjit-ptxas-verdict 1 %llu %llu%n", &message_len, &cubin_len, &header_len) == 2 &&
              header_len > 0 && data[header_len++] == '\n' && message_len <= size && cubin_len <= size &&
              size == (size_t)header_len + message_len + cubin_len && (!cubin || cubin_len > 0);
    if (hit) {
        tjs_buf_printf(message, "%.*s", (int)message_len, data + header_len);
        if (cubin) {
            *cubin = tjs_xmalloc(cubin_len);
            memcpy(*cubin, data + header_len + message_len, cubin_len);
            *cubin_size = cubin_len;
        }
    }
    free(data);
    return hit;
}

static void store_verdict(const char *entry, const tjs_buf *message, const char *cubin, size_t cubin_size)
{
    char *tmp = tjs_asprintf("%s", entry);
    *strrchr(tmp, '/') = 0; /* the directory, made where missing */
    int made = tjj_cache_make_dirs(tmp) == 0;
    free(tmp);
    tmp = tjs_asprintf("%s.tmp-XXXXXX", entry);
    int fd = made ? mkstemp(tmp) : -1;
    if (fd >= 0) {
        char header[64];
        int n = snprintf(header, sizeof header, "tjit-ptxas-verdict 1 %zu %zu\n", message->len, cubin_size);
        int ok = write_all(fd, header, (size_t)n) == 0 && write_all(fd, message->data, message->len) == 0 &&
                 write_all(fd, cubin, cubin_size) == 0;
        if (close(fd) != 0 || !ok || rename(tmp, entry) != 0)
            unlink(tmp);
    }
    free(tmp);
}

/* Runs ptxas with arch on ptx through temporary files; its messages go to
 * message, its cubin (where wanted) to *cubin. */
static tj_status run_on_files(const char *path, const char *arch, const char *ptx, const char *kernel_name,
                              tjs_buf *message, char **cubin, size_t *cubin_size)
{
    const char *tmpdir = getenv("TMPDIR");
    if (!tmpdir || !*tmpdir)
        tmpdir = "/tmp";
    char *ptx_path = tjs_asprintf("%s/tjit-ptxas-XXXXXX.ptx", tmpdir);
    /* the cubin, where wanted: a file of our own, which ptxas overwrites */
    char *out_path = cubin ? tjs_asprintf("%s/tjit-ptxas-XXXXXX.cubin", tmpdir) : NULL;
    int out_fd = out_path ? mkstemps(out_path, 6) : -1;
    if (out_fd >= 0)
        close(out_fd);
    int fd = mkstemps(ptx_path, 4);
    if (fd < 0 || (out_path && out_fd < 0)) {
        tj_status st = tjs_error(TJ_ERR_COMPILE, "kernel '%s': no temporary file for ptxas in %s: %s",
                                 kernel_name, tmpdir, strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(ptx_path);
        }
        if (out_fd >= 0)
            unlink(out_path);
        free(ptx_path);
        free(out_path);
        return st;
    }
    int wrote = write_all(fd, ptx, strlen(ptx));
    int write_err = errno;
    close(fd);
    tj_status st = TJ_OK;
    if (wrote != 0) {
        st = tjs_error(TJ_ERR_COMPILE, "kernel '%s': cannot write %s for ptxas: %s", kernel_name,
                       ptx_path, strerror(write_err));
    } else {
        int err = 0;
        int status = run_ptxas(path, arch, ptx_path, out_path ? out_path : "/dev/null", message, &err);
        const char *text = message->data ? message->data : "";
        if (status < 0)
            st = tjs_error(TJ_ERR_COMPILE, "kernel '%s': cannot run ptxas (TJIT_PTXAS=%s): %s",
                           kernel_name, path, strerror(err));
        else if (WIFSIGNALED(status))
            st = tjs_error(TJ_ERR_COMPILE, "kernel '%s': ptxas (%s %s) was killed by signal %d:\n%s",
                           kernel_name, path, arch, WTERMSIG(status), text);
        else if (WEXITSTATUS(status) != 0)
            st = tjs_error(TJ_ERR_COMPILE, "kernel '%s': ptxas (%s %s) rejected its PTX (exit status %d):\n%s",
                           kernel_name, path, arch, WEXITSTATUS(status), text);
    }
    /* no cubin is no failure: the PTX is what the driver loads otherwise */
    if (st == TJ_OK && out_path)
        *cubin = read_file(out_path, cubin_size);
    unlink(ptx_path);
    free(ptx_path);
    if (out_path)
        unlink(out_path);
    free(out_path);
    return st;
}

tj_status tjj_ptxas_assemble(const char *path, const char *ptx, int sm, int arch_specific,
                             const char *kernel_name, char **cubin, size_t *cubin_size)
{
    char arch[32];
    snprintf(arch, sizeof arch, "-arch=sm_%d%s", sm, arch_specific ? "a" : "");
    char *entry = verdict_entry(path, arch, cubin != NULL, ptx);
    tjs_buf message = {0};
    if (cubin)
        *cubin = NULL;
    tj_status st = TJ_OK;
    if (!entry || !load_verdict(entry, &message, cubin, cubin_size)) {
        st = run_on_files(path, arch, ptx, kernel_name, &message, cubin, cubin_size);
        if (st == TJ_OK && entry && (!cubin || *cubin))
            store_verdict(entry, &message, cubin ? *cubin : NULL, cubin ? *cubin_size : 0);
    }
    if (st == TJ_OK && serialized(message.data ? message.data : ""))
        st = tjs_error(TJ_ERR_COMPILE,
                       "kernel '%s': ptxas (%s %s) serialized instructions of its PTX, a performance bug "
                       "tjit treats as a failure:\n%s",
                       kernel_name, path, arch, message.data);
    if (st != TJ_OK && cubin) {
        free(*cubin);
        *cubin = NULL;
    }
    tjs_buf_free(&message);
    free(entry);
    return st;
}

const char *tjj_ptxas_path(void)
{
    const char *ptxas = getenv("TJIT_PTXAS");
    return ptxas && *ptxas ? ptxas : NULL;
}

tj_status tjj_check_with_ptxas(tji_func *fn, tjj_artifact *a, int num_warps, uint64_t spec)
{
    const char *ptxas = tjj_ptxas_path();
    if (!ptxas)
        return TJ_OK;
    int sm, arch_specific;
    tj_status st = tjj_ptx_target("TJIT_PTXAS", NULL, &sm, &arch_specific);
    if (st != TJ_OK)
        return st;
    /* a GPU variant's PTX is checked for the target it was made for: its
     * plan is that target's (sm_90a's wgmma and TMA), which another could
     * not compile */
    if (a->gpu.ptx) {
        free(a->cubin);
        a->cubin = NULL;
        return tjj_ptxas_assemble(ptxas, a->gpu.ptx, a->sm, a->arch_specific, fn->name, &a->cubin,
                                  &a->cubin_size);
    }
    tjj_artifact own = {0};
    st = tjj_compile_gpu(fn,
                         &(tjj_gpu_target){.sm = sm, .arch_specific = arch_specific, .num_warps = num_warps,
                                           .spec = spec},
                         &own);
    /* A kernel the GPU back end refuses makes no PTX to check; a GPU launch
     * reports the refusal itself. */
    if (st == TJ_ERR_UNSUPPORTED) {
        tjj_artifact_free(&own);
        tjs_clear_error();
        return TJ_OK;
    }
    if (st == TJ_OK)
        st = tjj_ptxas_check(ptxas, own.gpu.ptx, sm, arch_specific, fn->name);
    tjj_artifact_free(&own);
    return st;
}
