/* SPDX-License-Identifier: MIT */
/*
 * disk_cache.c — compiled variants kept on disk, so that a second process
 * launching a kernel skips the passes and LLVM.
 *
 * The key is the variant's stable key (pipeline.c): XXH3-128 of everything
 * that decides the code — the tile program as built for its constants, the
 * target (the host CPU's triple, name and features; or sm_XX, num_warps,
 * num_stages, TMA or not, warp specialization), the specialization key,
 * bounds checking, tjit's and LLVM's versions and this library's build
 * (tjj_build_id: a hash of the file it was loaded from, so a rebuilt
 * libtjit whose code generator changed never reads an old entry). An entry
 * is the file <dir>/<key in hex>.tjc:
 *
 *   bytes  0..7   magic "tjitdc\0\1"
 *          8..11  format version (FORMAT_VERSION)
 *         12..15  kind: 1 CPU, 2 GPU
 *         16..31  the key (high, low)
 *         32..39  payload bytes
 *         40..47  XXH3-64 of the payload
 *         48..    payload (put_* / get_* below; integers little-endian)
 *
 * Reading trusts nothing: the file must be a regular file of this user,
 * its header must name this format, kind and key, its length must be the
 * header's and the checksum must match; the payload is then parsed with
 * every length checked against what is left, and every count and size
 * against what a compile could have made, and must end where the header
 * says. Anything else is a bad entry: a miss (TJIT_DUMP=cache says why),
 * recompiled and written over. Entries are written whole to a temporary
 * file in the same directory (mkstemp: mode 0600) and renamed onto their
 * name, which is atomic: a reader sees the old entry, the new one or none,
 * never a part, and processes compiling the same variant at once each
 * rename a whole entry of the same code. Directories are made 0700. A
 * write that fails (a read-only directory, a full disk) is no launch
 * failure: it warns once on stderr and the launch goes on.
 *
 * A compile that TJIT_DUMP asks to print (ir, llvm, ptx, a pass ...) does
 * not read the cache, so it prints what it always did; TJIT_DUMP=cache and
 * TJIT_DUMP=tma print nothing of a compile and leave the cache on.
 *
 * The directory's size is capped (TJIT_CACHE_MAX_SIZE): after a write the
 * least recently used entries go (cache_trim.c), and a hit marks its entry
 * used.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr */
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../hash.h"

#include "disk_cache.h"

enum {
    FORMAT_VERSION = 3,
    HEADER_BYTES = 48,
    KIND_CPU = 1,
    KIND_GPU = 2,
};
static const char MAGIC[8] = {'t', 'j', 'i', 't', 'd', 'c', 0, 1};
/* No compile makes an entry near this; a larger file is not read. */
#define MAX_ENTRY_BYTES ((uint64_t)1 << 30)

static atomic_uint_fast64_t hits, misses, bad, stored;
static atomic_int warned;

tjj_disk_cache_counts tjj_disk_cache_count(void)
{
    return (tjj_disk_cache_counts){atomic_load(&hits), atomic_load(&misses), atomic_load(&bad),
                                   atomic_load(&stored)};
}

/* --- the build ------------------------------------------------------------- */

static pthread_once_t build_once = PTHREAD_ONCE_INIT;
static char build_id[17] = "unknown";

/* XXH3-64 of the file this function's code was loaded from. */
static void find_build_id(void)
{
    Dl_info info;
    if (!dladdr((void *)(uintptr_t)find_build_id, &info) || !info.dli_fname)
        return;
    FILE *f = fopen(info.dli_fname, "rb");
    if (!f)
        return;
    XXH3_state_t *state = XXH3_createState();
    int ok = state && XXH3_64bits_reset(state) == XXH_OK;
    char chunk[1 << 16];
    size_t n;
    while (ok && (n = fread(chunk, 1, sizeof chunk, f)) > 0)
        ok = XXH3_64bits_update(state, chunk, n) == XXH_OK;
    if (ok && !ferror(f))
        snprintf(build_id, sizeof build_id, "%016llx", (unsigned long long)XXH3_64bits_digest(state));
    XXH3_freeState(state);
    fclose(f);
}

const char *tjj_build_id(void)
{
    pthread_once(&build_once, find_build_id);
    return build_id;
}

/* --- where --------------------------------------------------------------- */

/* Is TJIT_DUMP asking for anything a compile prints? */
int tjj_dumping_compiles(void)
{
    const char *env = getenv("TJIT_DUMP");
    if (!env)
        return 0;
    for (const char *p = env; *p;) {
        size_t len = strcspn(p, ",");
        if (len && !(len == 5 && strncmp(p, "cache", 5) == 0) && !(len == 3 && strncmp(p, "tma", 3) == 0))
            return 1;
        p += len + (p[len] == ',');
    }
    return 0;
}

void tjj_cache_warn_once(const char *fmt, ...)
{
    if (atomic_exchange(&warned, 1))
        return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "tjit: warning: %s\n", line);
}

char *tjj_cache_dir(void)
{
    const char *on = getenv("TJIT_CACHE");
    if (on && *on && strcmp(on, "1") != 0) {
        if (strcmp(on, "0") != 0)
            tjj_cache_warn_once("TJIT_CACHE=%s: expected 0 (off) or 1 (on); the disk cache is off", on);
        return NULL;
    }
    const char *dir = getenv("TJIT_CACHE_DIR");
    if (dir && *dir)
        return tjs_xstrdup(dir);
    const char *xdg = getenv("XDG_CACHE_HOME");
    if (xdg && xdg[0] == '/') /* the XDG spec: a relative path is to be ignored */
        return tjs_asprintf("%s/tjit", xdg);
    const char *home = getenv("HOME");
    if (home && *home)
        return tjs_asprintf("%s/.cache/tjit", home);
    return NULL;
}

/* The cache directory of compiled variants (malloc'ed), or NULL where the
 * cache is off. */
static char *cache_dir(void)
{
    char *dir = tjj_cache_dir();
    if (dir && strcmp(tjj_build_id(), "unknown") == 0) {
        tjj_cache_warn_once("the disk cache is off: the library's own file cannot be read (its build is unknown)");
        free(dir);
        return NULL;
    }
    return dir;
}

static char *entry_path(const char *dir, const tjj_stable_key *key)
{
    char hex[33];
    tjj_stable_key_hex(key, hex);
    return tjs_asprintf("%s/%s.tjc", dir, hex);
}

static void dump(const tjj_artifact *a, const char *what, const char *path, const char *why)
{
    if (tjs_dump_enabled("cache"))
        fprintf(stderr, "// TJIT_DUMP=cache: kernel '%s': %s %s%s%s\n", a->kernel_name, what, path,
                why ? ": " : "", why ? why : "");
}

/* --- the payload ----------------------------------------------------------- */

typedef struct bytes {
    unsigned char *data;
    size_t len, cap;
} bytes;

static void put(bytes *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2 + 256;
        b->data = tjs_xrealloc(b->data, b->cap);
    }
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
}

static void put_u64(bytes *b, uint64_t v)
{
    unsigned char le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (unsigned char)(v >> (8 * i));
    put(b, le, 8);
}

static void put_i64(bytes *b, int64_t v) { put_u64(b, (uint64_t)v); }

static void put_blob(bytes *b, const void *p, size_t n)
{
    put_u64(b, n);
    put(b, p, n);
}

static void put_str(bytes *b, const char *s) { put_blob(b, s, s ? strlen(s) : 0); }

/* A reader of the payload; ok falls to 0 at the first thing that cannot be. */
typedef struct reader {
    const unsigned char *p;
    size_t left;
    int ok;
    const char *why; /* the first problem */
} reader;

static int fail(reader *r, const char *why)
{
    if (r->ok)
        r->why = why;
    r->ok = 0;
    return 0;
}

static uint64_t get_u64(reader *r)
{
    if (!r->ok || r->left < 8)
        return fail(r, "the payload ends early");
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)r->p[i] << (8 * i);
    r->p += 8;
    r->left -= 8;
    return v;
}

/* An integer in [lo, hi]. */
static int64_t get_int(reader *r, int64_t lo, int64_t hi)
{
    int64_t v = (int64_t)get_u64(r);
    if (r->ok && (v < lo || v > hi))
        return fail(r, "a field is out of range");
    return v;
}

/* A blob (malloc'ed, NUL after it), NULL if none can be read. */
static char *get_blob(reader *r, size_t *len)
{
    uint64_t n = get_u64(r);
    if (r->ok && n > r->left)
        fail(r, "a length runs past the payload");
    if (!r->ok)
        return NULL;
    char *s = tjs_xmalloc((size_t)n + 1);
    memcpy(s, r->p, (size_t)n);
    s[n] = '\0';
    r->p += n;
    r->left -= (size_t)n;
    *len = (size_t)n;
    return s;
}

/* A string: a blob without NULs (NULL on failure; "" stays ""). */
static char *get_str(reader *r)
{
    size_t n = 0;
    char *s = get_blob(r, &n);
    if (s && strlen(s) != n) {
        free(s);
        fail(r, "a string holds a NUL");
        return NULL;
    }
    return s;
}

static void put_tmap(bytes *b, const tjj_tmap_info *m)
{
    put_i64(b, m->base_param);
    put_i64(b, m->rank);
    put_i64(b, m->dtype);
    put_i64(b, m->elem_bytes);
    for (int d = 0; d < TJJ_TMAP_MAX_RANK; d++) {
        put_i64(b, m->shape[d].param);
        put_i64(b, m->shape[d].value);
        put_i64(b, m->strides[d].param);
        put_i64(b, m->strides[d].value);
        put_u64(b, m->box[d]);
    }
    put_i64(b, m->contiguous);
    put_i64(b, m->swizzle_bytes);
}

static void get_tmap(reader *r, tjj_tmap_info *m)
{
    m->base_param = (int32_t)get_int(r, 0, INT32_MAX);
    m->rank = (int)get_int(r, 1, TJJ_TMAP_MAX_RANK);
    m->dtype = (tj_dtype)get_int(r, 0, TJ_DTYPE_COUNT - 1);
    m->elem_bytes = (int)get_int(r, 1, 8);
    for (int d = 0; d < TJJ_TMAP_MAX_RANK; d++) {
        m->shape[d].param = (int32_t)get_int(r, -1, INT32_MAX);
        m->shape[d].value = get_int(r, INT64_MIN, INT64_MAX);
        m->strides[d].param = (int32_t)get_int(r, -1, INT32_MAX);
        m->strides[d].value = get_int(r, INT64_MIN, INT64_MAX);
        m->box[d] = (uint32_t)get_int(r, 0, UINT32_MAX);
    }
    m->contiguous = (int)get_int(r, 0, m->rank - 1);
    m->swizzle_bytes = (int)get_int(r, 0, 128);
}

/* The payload of a's entry. */
static void put_payload(bytes *b, const tjj_artifact *a)
{
    put_u64(b, (uint64_t)a->ptxas_checked);
    if (!a->sm) {
        put_u64(b, a->object.scratch_bytes);
        put_blob(b, a->object.data, a->object.size);
        return;
    }
    const tjj_gpu_code *g = &a->gpu;
    put_str(b, g->ptx);
    put_str(b, g->entry);
    put_u64(b, g->shared_bytes);
    put_i64(b, g->num_warps);
    put_i64(b, g->producer_warps);
    put_i64(b, g->persistent);
    put_i64(b, g->cluster);
    put_i64(b, g->stream_k_piece_bytes);
    put_i64(b, g->ntmaps);
    for (int i = 0; i < g->ntmaps; i++)
        put_tmap(b, &g->tmaps[i]);
    put_i64(b, a->nasserts);
    for (int i = 0; i < a->nasserts; i++) {
        put_u64(b, a->asserts[i].op);
        put_str(b, a->asserts[i].file);
        put_i64(b, a->asserts[i].line);
        put_str(b, a->asserts[i].message);
    }
    put_blob(b, a->cubin, a->cubin_size);
}

/* Reads the payload into a (which owns what it got, also on failure). */
static void get_payload(reader *r, tjj_artifact *a)
{
    enum { MOST_WARPS = 64, MOST_TMAPS = 64, MOST_SHARED = 1 << 30 };
    a->ptxas_checked = (int)get_int(r, 0, 1);
    if (!a->sm) {
        a->object.scratch_bytes = (size_t)get_int(r, 0, INT64_MAX);
        a->object.data = get_blob(r, &a->object.size);
        if (r->ok && a->object.size == 0)
            fail(r, "no object code");
        return;
    }
    tjj_gpu_code *g = &a->gpu;
    g->ptx = get_str(r);
    g->entry = get_str(r);
    if (r->ok && (!*g->ptx || !*g->entry))
        fail(r, "no PTX or no entry point");
    g->shared_bytes = (size_t)get_int(r, 0, MOST_SHARED);
    g->num_warps = (int)get_int(r, 1, MOST_WARPS);
    g->producer_warps = (int)get_int(r, 0, MOST_WARPS);
    g->persistent = (int)get_int(r, 0, 1);
    g->cluster = (int)get_int(r, 0, 2);
    g->stream_k_piece_bytes = get_int(r, 0, MOST_SHARED);
    int ntmaps = (int)get_int(r, 0, MOST_TMAPS);
    if (r->ok && ntmaps) {
        g->tmaps = tjs_xcalloc((size_t)ntmaps, sizeof *g->tmaps);
        g->ntmaps = ntmaps;
        for (int i = 0; i < ntmaps && r->ok; i++)
            get_tmap(r, &g->tmaps[i]);
    }
    /* each assert takes at least 32 bytes of what is left */
    int nasserts = (int)get_int(r, 0, (int64_t)(r->left / 32));
    if (r->ok && nasserts) {
        a->asserts = tjs_xcalloc((size_t)nasserts, sizeof *a->asserts);
        a->nasserts = nasserts;
        for (int i = 0; i < nasserts && r->ok; i++) {
            tjj_assert_site *s = &a->asserts[i];
            s->op = (uint32_t)get_int(r, 0, UINT32_MAX);
            s->file = get_str(r);
            s->line = (int)get_int(r, INT32_MIN, INT32_MAX);
            s->message = get_str(r);
        }
    }
    size_t n = 0;
    a->cubin = get_blob(r, &n);
    a->cubin_size = n;
    if (r->ok && !n) {
        free(a->cubin);
        a->cubin = NULL;
    }
}

/* Frees what get_payload may have put into a, leaving a as it was before. */
static void drop_payload(tjj_artifact *a)
{
    tjj_cpu_object_free(&a->object);
    tjj_gpu_code_free(&a->gpu);
    for (int i = 0; i < a->nasserts; i++) {
        free(a->asserts[i].file);
        free(a->asserts[i].message);
    }
    free(a->asserts);
    a->asserts = NULL;
    a->nasserts = 0;
    free(a->cubin);
    a->cubin = NULL;
    a->cubin_size = 0;
    a->ptxas_checked = 0;
}

void *tjj_artifact_pack(const tjj_artifact *a, size_t *len)
{
    bytes b = {0};
    put_payload(&b, a);
    *len = b.len;
    return b.data;
}

int tjj_artifact_unpack(tjj_artifact *a, const void *data, size_t len)
{
    reader r = {data, len, 1, NULL};
    get_payload(&r, a);
    if (r.ok && r.left)
        fail(&r, "bytes after the payload");
    if (!r.ok)
        drop_payload(a);
    return r.ok;
}

/* --- entries ----------------------------------------------------------------- */

static void put_header(unsigned char h[HEADER_BYTES], const tjj_artifact *a, const bytes *payload)
{
    bytes b = {0};
    put(&b, MAGIC, sizeof MAGIC);
    uint64_t kind = a->sm ? KIND_GPU : KIND_CPU;
    put_u64(&b, (uint64_t)FORMAT_VERSION | kind << 32);
    put_u64(&b, a->key.high);
    put_u64(&b, a->key.low);
    put_u64(&b, payload->len);
    put_u64(&b, XXH3_64bits(payload->data, payload->len));
    memcpy(h, b.data, HEADER_BYTES);
    free(b.data);
}

/* The whole file at path (malloc'ed), or NULL with why. */
static unsigned char *read_entry(const char *path, size_t *len, const char **why, int *missing)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        *missing = errno == ENOENT || errno == ENOTDIR; /* no entry, or no directory */
        *why = strerror(errno);
        return NULL;
    }
    struct stat st;
    unsigned char *data = NULL;
    if (fstat(fd, &st) != 0)
        *why = strerror(errno);
    else if (!S_ISREG(st.st_mode))
        *why = "not a regular file";
    else if (st.st_uid != geteuid())
        *why = "owned by another user";
    else if (st.st_size < HEADER_BYTES)
        *why = "shorter than its header";
    else if ((uint64_t)st.st_size > MAX_ENTRY_BYTES)
        *why = "larger than any entry";
    else {
        size_t n = (size_t)st.st_size, got = 0;
        data = tjs_xmalloc(n);
        while (got < n) {
            ssize_t r = read(fd, data + got, n - got);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                break;
            got += (size_t)r;
        }
        if (got != n) {
            *why = "cannot be read whole";
            free(data);
            data = NULL;
        }
        *len = n;
    }
    close(fd);
    return data;
}

/* Checks the header of an entry of len bytes against a; NULL if it is a's. */
static const char *check_header(const unsigned char *data, size_t len, const tjj_artifact *a)
{
    reader r = {data + sizeof MAGIC, HEADER_BYTES - sizeof MAGIC, 1, NULL};
    if (memcmp(data, MAGIC, sizeof MAGIC) != 0)
        return "not a tjit cache entry (its magic)";
    uint64_t version = get_u64(&r), high = get_u64(&r), low = get_u64(&r), n = get_u64(&r),
             sum = get_u64(&r);
    if ((uint32_t)version != FORMAT_VERSION)
        return "another format version";
    if (version >> 32 != (uint64_t)(a->sm ? KIND_GPU : KIND_CPU))
        return "another kind of device";
    if (high != a->key.high || low != a->key.low)
        return "another key";
    if (n != len - HEADER_BYTES)
        return n > len - HEADER_BYTES ? "truncated" : "longer than its header says";
    if (XXH3_64bits(data + HEADER_BYTES, (size_t)n) != sum)
        return "its checksum does not match (corrupt)";
    return NULL;
}

int tjj_disk_cache_load(tjj_artifact *a)
{
    if (tjj_dumping_compiles())
        return 0;
    char *dir = cache_dir();
    if (!dir)
        return 0;
    char *path = entry_path(dir, &a->key);
    free(dir);
    size_t len = 0;
    const char *why = NULL;
    int missing = 0;
    unsigned char *data = read_entry(path, &len, &why, &missing);
    if (data && !(why = check_header(data, len, a))) {
        reader r = {data + HEADER_BYTES, len - HEADER_BYTES, 1, NULL};
        get_payload(&r, a);
        if (r.ok && r.left)
            fail(&r, "bytes after the payload");
        if (!r.ok) {
            why = r.why;
            drop_payload(a);
        }
    }
    free(data);
    int hit = !why;
    if (hit) {
        tjj_disk_cache_touch(path); /* recently used: the cap removes it last */
        atomic_fetch_add(&hits, 1);
        dump(a, "hit", path, NULL);
    } else if (missing) {
        atomic_fetch_add(&misses, 1);
        dump(a, "miss", path, NULL);
    } else {
        atomic_fetch_add(&misses, 1);
        atomic_fetch_add(&bad, 1);
        dump(a, "bad entry (recompiled):", path, why);
    }
    free(path);
    return hit;
}

int tjj_cache_make_dirs(const char *dir)
{
    char *p = tjs_xstrdup(dir);
    int rc = 0;
    for (char *s = p + 1; rc == 0; s++) {
        if (*s != '/' && *s != '\0')
            continue;
        char c = *s;
        *s = '\0';
        if (mkdir(p, 0700) != 0 && errno != EEXIST)
            rc = -1;
        *s = c;
        if (!c)
            break;
    }
    free(p);
    return rc;
}

static int write_all(int fd, const void *p, size_t n)
{
    const unsigned char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

void tjj_disk_cache_store(const tjj_artifact *a)
{
    char *dir = cache_dir();
    if (!dir)
        return;
    char *path = entry_path(dir, &a->key);
    char *tmp = tjs_asprintf("%s.tmp-XXXXXX", path);
    bytes payload = {0};
    put_payload(&payload, a);
    unsigned char header[HEADER_BYTES];
    put_header(header, a, &payload);
    int fd = tjj_cache_make_dirs(dir) == 0 ? mkstemp(tmp) : -1;
    int ok = fd >= 0 && write_all(fd, header, sizeof header) == 0 &&
             write_all(fd, payload.data, payload.len) == 0;
    int err = errno;
    if (fd >= 0 && close(fd) != 0 && ok) {
        ok = 0;
        err = errno;
    }
    if (ok && rename(tmp, path) != 0) {
        ok = 0;
        err = errno;
    }
    if (ok) {
        atomic_fetch_add(&stored, 1);
        dump(a, "stored", path, NULL);
        tjj_disk_cache_trim(dir, path);
    } else {
        if (fd >= 0)
            unlink(tmp);
        tjj_cache_warn_once("cannot write the disk cache (%s): %s; compiled kernels are not kept", dir,
                  strerror(err));
    }
    free(payload.data);
    free(tmp);
    free(path);
    free(dir);
}
