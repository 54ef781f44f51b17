/* SPDX-License-Identifier: MIT */
/*
 * disk_cache.h — compiled variants kept on disk between processes
 * (disk_cache.c): the contract between the pipeline (../pipeline.c, which
 * asks before it compiles a launch's variant) and the device kinds (which
 * store what they compiled once it has passed every check).
 *
 * An entry is the code of one artifact (pipeline.h) under its stable key:
 * on the CPU its object file, on a GPU its PTX (and the cubin ptxas made of
 * it, where TJIT_PTXAS ran) with what a launch needs besides: the entry
 * point's name, shared bytes, warps, persistence, tensor maps and device
 * asserts. What the artifact holds that follows from the tile program as
 * built (its bounds sites) is computed again from it, as the key is.
 *
 * Where: $TJIT_CACHE_DIR, else $XDG_CACHE_HOME/tjit, else ~/.cache/tjit;
 * TJIT_CACHE=0 turns it off; TJIT_CACHE_MAX_SIZE caps it (cache_trim.c).
 * Nothing here fails a launch: an entry that is
 * missing, unreadable or bad is a miss (a bad one said under
 * TJIT_DUMP=cache), and a store that cannot be written warns once.
 */
#ifndef TJIT_DISK_CACHE_H
#define TJIT_DISK_CACHE_H

#include "../pipeline.h"

/* The library's build, as 16 hex digits (a hash of the file libtjit was
 * loaded from), part of every stable key so that a rebuilt libtjit never
 * reads what another build wrote; "unknown" where the file cannot be read
 * (then the disk cache is off). */
TJI_FUNC const char *tjj_build_id(void);

/* Fills the started artifact a (key, kernel name and sm set: CPU where sm
 * is 0) from the entry for a->key: a->object on the CPU; on a GPU a->gpu,
 * a->asserts and a->cubin. 1 on a hit; 0 on a miss, where the cache is off
 * or TJIT_DUMP asks for what a compile prints (a is then unchanged). */
TJI_FUNC int tjj_disk_cache_load(tjj_artifact *a);

/* Stores a's code under a->key: written to a temporary file in the cache
 * directory, then renamed onto the entry's name, so that a reader sees a
 * whole entry or none. */
TJI_FUNC void tjj_disk_cache_store(const tjj_artifact *a);

/* One line "tjit: warning: ..." on stderr, the first time anything about
 * the cache goes wrong in this process. */
TJI_FUNC void tjj_cache_warn_once(const char *fmt, ...) TJS_PRINTF(1, 2);

/* The size cap (cache_trim.c): TJIT_CACHE_MAX_SIZE in bytes (K, M, G
 * suffixes), 1 GiB where unset or malformed (which warns), 0 for none.
 * tjj_disk_cache_trim: where the entries in dir add up to more, removes
 * the least recently used (by modification time) until they fill 90% of
 * it, never `keep` (the entry just written), and temporary files older
 * than an hour. tjj_disk_cache_touch: marks an entry used now. */
TJI_FUNC uint64_t tjj_disk_cache_max_bytes(void);
TJI_FUNC void tjj_disk_cache_trim(const char *dir, const char *keep);
TJI_FUNC void tjj_disk_cache_touch(const char *path);

/* The cache directory by the rule above (malloc'ed): $TJIT_CACHE_DIR, else
 * $XDG_CACHE_HOME/tjit, else ~/.cache/tjit; NULL where TJIT_CACHE turns
 * the disk off (a value other than 0 or 1 warns once) or no directory can
 * be named. The autotuner (autotune.c) keeps its choices there too. */
TJI_FUNC char *tjj_cache_dir(void);

/* Makes dir and the directories above it that are missing, mode 0700;
 * 0, or -1 with errno set. */
TJI_FUNC int tjj_cache_make_dirs(const char *dir);

/* An entry's payload (malloc'ed, *len bytes) of a's code, and the code of
 * a payload into the started artifact a (1; 0 where it does not parse, a
 * then unchanged): what the process's shared code (shared_code.c) keeps. */
TJI_FUNC void *tjj_artifact_pack(const tjj_artifact *a, size_t *len);
TJI_FUNC int tjj_artifact_unpack(tjj_artifact *a, const void *data, size_t len);

/* Is TJIT_DUMP asking for anything a compile prints? Then no compile is
 * taken from a cache, so that it prints what it always did. */
TJI_FUNC int tjj_dumping_compiles(void);

/* What the disk cache has done in this process (for tests). */
typedef struct tjj_disk_cache_counts {
    uint64_t hits, misses, bad, stored;
} tjj_disk_cache_counts;
TJI_FUNC tjj_disk_cache_counts tjj_disk_cache_count(void);

#endif
