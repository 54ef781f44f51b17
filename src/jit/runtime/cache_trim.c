/* SPDX-License-Identifier: MIT */
/*
 * cache_trim.c — the disk cache's size cap: the entries used least
 * recently go first.
 *
 * Without a cap the cache only grows: every kernel, every set of constants,
 * every specialization and every rebuilt libtjit adds entries, and nothing
 * old is ever read again. So the directory has a cap, TJIT_CACHE_MAX_SIZE
 * (bytes, or with a K, M or G suffix; default 1 GiB; 0 for none), and
 * after each entry it writes a process brings the directory under it: it
 * lists the entries (*.tjc regular files of this user), and where their
 * sizes add up to more than the cap it removes the oldest by modification
 * time until they fill at most 90% of it — the margin keeps the next few
 * writes from scanning and removing again. The entry just written stays
 * whatever the cap. A hit sets its entry's modification time to now
 * (tjj_disk_cache_touch), so "oldest" means least recently used; the time
 * is the file system's, which every reader sees, where access times are
 * often not kept (noatime, relatime). Temporary files of writes that died
 * before their rename (*.tjc.tmp-*) older than an hour go too.
 *
 * Processes trimming at once may remove the same file (the second unlink
 * fails, which is fine) or an entry another process is about to read
 * (its open fails: a miss, and it compiles and writes the entry again); a
 * reader that has opened an entry keeps reading it after the unlink. So
 * there is no lock, as there is none for writes (disk_cache.c).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "disk_cache.h"

enum { STALE_TEMP_SECONDS = 3600 };
#define DEFAULT_MAX_BYTES ((uint64_t)1 << 30)

uint64_t tjj_disk_cache_max_bytes(void)
{
    const char *s = getenv("TJIT_CACHE_MAX_SIZE");
    if (!s || !*s)
        return DEFAULT_MAX_BYTES;
    uint64_t n = 0;
    const char *p = s;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (n > (UINT64_MAX - 9) / 10)
            break;
        n = n * 10 + (uint64_t)(*p - '0');
    }
    int shift = *p == 'K' || *p == 'k' ? 10 : *p == 'M' || *p == 'm' ? 20 : *p == 'G' || *p == 'g' ? 30 : 0;
    if (shift)
        p++;
    if (p == s || *p || (shift && n > UINT64_MAX >> shift)) {
        tjj_cache_warn_once("TJIT_CACHE_MAX_SIZE=%s: expected a size in bytes with an optional K, M or G "
                            "(0: no cap); the cap stays at 1G", s);
        return DEFAULT_MAX_BYTES;
    }
    return n << shift;
}

void tjj_disk_cache_touch(const char *path)
{
    (void)utimensat(AT_FDCWD, path, NULL, 0); /* a read-only cache just ages */
}

typedef struct entry {
    char *name;
    uint64_t bytes;
    struct timespec used;
} entry;

static int older_first(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    if (x->used.tv_sec != y->used.tv_sec)
        return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
    if (x->used.tv_nsec != y->used.tv_nsec)
        return x->used.tv_nsec < y->used.tv_nsec ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), t = strlen(tail);
    return n > t && strcmp(s + n - t, tail) == 0;
}

void tjj_disk_cache_trim(const char *dir, const char *keep)
{
    uint64_t max = tjj_disk_cache_max_bytes();
    DIR *d = max ? opendir(dir) : NULL;
    if (!d)
        return;
    const char *slash = strrchr(keep, '/');
    const char *keep_name = slash ? slash + 1 : keep;
    entry *all = NULL;
    size_t n = 0, cap = 0;
    uint64_t total = 0;
    time_t now = time(NULL);
    for (struct dirent *de; (de = readdir(d));) {
        struct stat st;
        int is_entry = ends_with(de->d_name, ".tjc"), is_temp = strstr(de->d_name, ".tjc.tmp-") != NULL;
        if ((!is_entry && !is_temp) || fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISREG(st.st_mode) || st.st_uid != geteuid())
            continue;
        if (is_temp) {
            if (now - st.st_mtim.tv_sec > STALE_TEMP_SECONDS)
                (void)unlinkat(dirfd(d), de->d_name, 0);
            continue;
        }
        if (n == cap)
            all = tjs_xrealloc(all, (cap = cap ? 2 * cap : 64) * sizeof *all);
        all[n++] = (entry){tjs_xstrdup(de->d_name), (uint64_t)st.st_size, st.st_mtim};
        total += (uint64_t)st.st_size;
    }
    uint64_t before = total, freed = 0;
    size_t removed = 0;
    if (total > max) {
        qsort(all, n, sizeof *all, older_first);
        for (size_t i = 0; i < n && total > max / 10 * 9; i++) {
            if (strcmp(all[i].name, keep_name) == 0 || unlinkat(dirfd(d), all[i].name, 0) != 0)
                continue;
            total -= all[i].bytes;
            freed += all[i].bytes;
            removed++;
        }
    }
    if (removed && tjs_dump_enabled("cache"))
        fprintf(stderr, "// TJIT_DUMP=cache: %s held %llu bytes, over TJIT_CACHE_MAX_SIZE (%llu): removed the %zu "
                "least recently used entries (%llu bytes)\n", dir, (unsigned long long)before,
                (unsigned long long)max, removed, (unsigned long long)freed);
    for (size_t i = 0; i < n; i++)
        free(all[i].name);
    free(all);
    closedir(d);
}
