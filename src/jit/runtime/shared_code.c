/* SPDX-License-Identifier: MIT */
/*
 * shared_code.c — a GPU compile shared by every device of its architecture
 * in the process.
 *
 * A variant is cached per device (variants.c), because what a launch runs
 * is the device's own: a CUmodule loaded into its GPU's context, an assert
 * record in its memory. But the compile that makes the code — the passes,
 * LLVM, ptxas — depends only on the tile program and the target, which the
 * variant's stable key (pipeline.c) already sums up, sm included. So two
 * H200s in one process need one compile: the second device takes the
 * first one's code and only loads its own module.
 *
 * The process keeps, by stable key, the code of every GPU variant some
 * device holds — the same payload the disk cache writes (disk_cache.c's
 * tjj_artifact_pack: PTX, entry point, launch facts, asserts, cubin),
 * immutable once published. An entry counts the variants using it and goes
 * with the last (so the process holds no more code than its devices do).
 *
 * The first device to miss a key claims it (an entry in flight) and
 * compiles; a device that misses the same key meanwhile waits for that
 * compile instead of making its own, as threads of one device wait for a
 * variant in variants.c. The compiling device publishes once its driver
 * has loaded the code (so a published code has loaded somewhere), or
 * abandons the claim when its compile fails; the waiters then try again,
 * one of them claiming. A wait is never for work of the waiter's own:
 * the claimant is compiling, not waiting on anything.
 *
 * The disk cache sits behind: a claimant asks it before compiling. A
 * compile that TJIT_DUMP asks to print is not shared either way, so every
 * device prints what it compiles. CPU variants are not shared: the CPU's
 * code lives in the one process-wide JIT already (cpu_orc.c).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "disk_cache.h"
#include "shared_code.h"

typedef struct entry {
    struct entry *next;
    tjj_stable_key key;
    int ready;            /* published; otherwise a compile in flight */
    int refs;             /* variants using the code */
    void *data;           /* the payload (tjj_artifact_pack) */
    size_t len;
} entry;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t settled = PTHREAD_COND_INITIALIZER; /* a claim published or abandoned */
static entry *entries;
static uint64_t nheld;
static atomic_uint_fast64_t published, hits;

static int same(const tjj_stable_key *a, const tjj_stable_key *b)
{
    return a->high == b->high && a->low == b->low;
}

/* The link to key's entry (to *link NULL where there is none); lock held. */
static entry **find(const tjj_stable_key *key)
{
    entry **link = &entries;
    while (*link && !same(&(*link)->key, key))
        link = &(*link)->next;
    return link;
}

static void drop(entry **link)
{
    entry *e = *link;
    *link = e->next;
    free(e->data);
    free(e);
    nheld--;
}

tjj_shared_claim tjj_shared_code_begin(tjj_artifact *a)
{
    if (!a->sm || tjj_dumping_compiles())
        return TJJ_SHARED_OFF;
    pthread_mutex_lock(&lock);
    for (;;) {
        entry **link = find(&a->key);
        if (!*link) {
            entry *e = calloc(1, sizeof *e);
            if (!e) {
                pthread_mutex_unlock(&lock);
                return TJJ_SHARED_OFF;
            }
            e->key = a->key;
            e->next = entries;
            entries = e;
            nheld++;
            pthread_mutex_unlock(&lock);
            return TJJ_SHARED_MINE;
        }
        entry *e = *link;
        if (e->ready) {
            /* the reference keeps the payload; it never changes */
            e->refs++;
            pthread_mutex_unlock(&lock);
            if (tjj_artifact_unpack(a, e->data, e->len)) {
                atomic_fetch_add(&hits, 1);
                return TJJ_SHARED_HIT;
            }
            tjj_shared_code_release(&a->key); /* cannot be: compiled alone */
            return TJJ_SHARED_OFF;
        }
        pthread_cond_wait(&settled, &lock);
    }
}

void tjj_shared_code_publish(const tjj_artifact *a)
{
    size_t len = 0;
    void *data = tjj_artifact_pack(a, &len);
    pthread_mutex_lock(&lock);
    entry *e = *find(&a->key);
    if (e && !e->ready) {
        e->data = data;
        e->len = len;
        e->ready = 1;
        e->refs = 1;
        data = NULL;
        atomic_fetch_add(&published, 1);
    }
    pthread_cond_broadcast(&settled);
    pthread_mutex_unlock(&lock);
    free(data);
}

void tjj_shared_code_abandon(const tjj_stable_key *key)
{
    pthread_mutex_lock(&lock);
    entry **link = find(key);
    if (*link && !(*link)->ready)
        drop(link);
    pthread_cond_broadcast(&settled);
    pthread_mutex_unlock(&lock);
}

void tjj_shared_code_release(const tjj_stable_key *key)
{
    pthread_mutex_lock(&lock);
    entry **link = find(key);
    if (*link && (*link)->ready && --(*link)->refs == 0)
        drop(link);
    pthread_mutex_unlock(&lock);
}

tjj_shared_code_counts tjj_shared_code_count(void)
{
    pthread_mutex_lock(&lock);
    uint64_t held = nheld;
    pthread_mutex_unlock(&lock);
    return (tjj_shared_code_counts){atomic_load(&published), atomic_load(&hits), held};
}
