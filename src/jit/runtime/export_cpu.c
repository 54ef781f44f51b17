/* SPDX-License-Identifier: MIT */
/*
 * export_cpu.c — ahead-of-time export for the CPU: tj_kernel_export_cpu
 * writes a kernel, compiled for one set of constants, as an object file
 * and a C launcher of the same shape as the GPU export's (export_c.c), so
 * that a program runs it with neither tjit nor LLVM.
 *
 * The object is what a CPU launch would link into the JIT: the CPU
 * pipeline (pipeline.c) compiles the kernel — as for arguments that may
 * overlap, since the launcher sees no sizes — to an object for this host
 * (its CPU and features: the machine that exports is the machine, or the
 * kind of machine, that runs it), whose entry point has jit.h's CPU
 * signature. The launcher runs the grid's programs on the machine's CPUs,
 * as a CPU launch does: the calling thread and as many threads more as
 * there are CPUs online (or as the caller asks), taking chunks of programs
 * from a shared counter, each thread with scratch memory of the size the
 * kernel asks. The entry point takes (first, count) ranges of programs for
 * exactly this.
 *
 * Compiled CPU code reports device asserts and prints through tjit's
 * runtime (cpu_runtime.c), and may call its 16-bit float helpers; an
 * exported program has no tjit, so a kernel whose object names any of
 * them is refused, by name. The last parameter of the entry point (the
 * runtime record, which only those calls read) is then passed as NULL.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cpu/cpu_backend.h"
#include "device_impl.h"
#include "export.h"

static const char who[] = "tj_kernel_export_cpu";

/* The runtime function of cpu_runtime.c that obj calls, or NULL: its name
 * is in the object's string table exactly where it is referenced. */
static const char *runtime_call(const tjj_cpu_object *obj)
{
    for (const tjj_cpu_symbol *s = tjj_cpu_runtime_symbols; s->name; s++) {
        size_t n = strlen(s->name) + 1; /* with its NUL: no prefix of a longer name */
        for (size_t at = 0; at + n <= obj->size; at++)
            if (obj->data[at] == s->name[0] && memcmp(obj->data + at, s->name, n) == 0 &&
                (at == 0 || obj->data[at - 1] == '\0'))
                return s->name;
    }
    return NULL;
}

static void put_banner(tjs_buf *b, const char *file, const tj_kernel *kernel, const int64_t *consts,
                       int nconsts)
{
    tjs_buf_printf(b, "/* SPDX-License-Identifier: MIT */\n/*\n * %s — tjit kernel '%s' (%s:%d) for this "
                   "host's CPU (%s),\n * exported by tj_kernel_export_cpu (tjit %s)",
                   file, kernel->name, kernel->file ? kernel->file : "?", kernel->line,
                   tjj_cpu_host() ? tjj_cpu_host() : "?", TJ_VERSION_STRING);
    for (int i = 0; i < nconsts; i++)
        tjs_buf_printf(b, "%s %s = %lld", i ? "," : "; constants", kernel->consts[i], (long long)consts[i]);
    tjs_buf_printf(b, ".\n *\n * Generated code: edit the kernel and export it again instead. Link it with "
                   "its object\n * file; it needs nothing else: no tjit, no LLVM.\n */\n");
}

/* NAME(grid..., params) or, with threads, NAME_threads(threads, grid...,
 * params); named: the kernel's parameter names, else p0, p1, ... */
static void put_signature(tjs_buf *b, const char *name, const tj_kernel *kernel, int named, int threads)
{
    tjs_buf_printf(b, "int %s%s(%sunsigned grid_x, unsigned grid_y, unsigned grid_z", name,
                   threads ? "_threads" : "", threads ? "unsigned threads, " : "");
    for (int i = 0; i < kernel->nparams; i++) {
        const char *pname = kernel->params[i].name;
        const char *type = tjj_export_c_type(&kernel->params[i], "void *");
        const char *space = kernel->params[i].is_ptr ? "" : " ";
        if (named)
            tjs_buf_printf(b, ",\n    %s%s%s%s", type, space, pname,
                           strncmp(pname, "grid_", 5) && strcmp(pname, "threads") ? "" : "_");
        else
            tjs_buf_printf(b, ",\n    %s%sp%d", type, space, i);
    }
    tjs_buf_printf(b, ")");
}

static void put_header(tjs_buf *b, const char *name, const tj_kernel *kernel)
{
    char guard[128];
    snprintf(guard, sizeof guard, "TJIT_EXPORT_%s_H", name);
    for (char *c = guard; *c; c++)
        *c = *c >= 'a' && *c <= 'z' ? (char)(*c - 'a' + 'A') : *c;
    tjs_buf_printf(b, "#ifndef %s\n#define %s\n\n#include <stdint.h>\n\n#ifdef __cplusplus\nextern \"C\" {\n"
                   "#endif\n\n/* Runs %s's grid_x * grid_y * grid_z programs on this machine's\n"
                   " * online CPUs (a thread each, the calling thread one of them) and returns\n"
                   " * when they are done: 0, EINVAL for a grid dimension of 0 or above\n"
                   " * INT32_MAX, ENOMEM where scratch memory cannot be had. Pointers are\n"
                   " * host memory; f16/bf16 and f8 scalars are passed as their bits.\n"
                   " * Thread-safe: each call has its own threads and scratch. */\n",
                   guard, guard, kernel->name);
    put_signature(b, name, kernel, 1, 0);
    tjs_buf_printf(b, ";\n\n/* The same on at most `threads` threads (0: the online CPUs; 1: the\n"
                   " * calling thread alone). Where a thread cannot be started, the others\n"
                   " * run its programs. */\n");
    put_signature(b, name, kernel, 1, 1);
    tjs_buf_printf(b, ";\n\n#ifdef __cplusplus\n}\n#endif\n\n#endif\n");
}

/* The launcher: the grid's programs are taken in chunks from a shared
 * counter by the calling thread and the threads it starts, each with its
 * own scratch (the kernel's tiles), so an uneven program costs no thread
 * more than a chunk. */
static void put_source(tjs_buf *b, const char *name, const char *symbol, const tj_kernel *kernel,
                       size_t scratch)
{
    size_t stride = (scratch + 63) / 64 * 64 + 64;
    tjs_buf_printf(b, "#define _POSIX_C_SOURCE 200809L /* sysconf */\n#include \"%s.h\"\n\n#include <errno.h>\n"
                   "#include <pthread.h>\n#include <stdatomic.h>\n#include <stdlib.h>\n#include <unistd.h>\n\n"
                   "/* The kernel in the object file (jit.h's CPU signature) */\nvoid %s(", name, symbol);
    for (int i = 0; i < kernel->nparams; i++)
        tjs_buf_printf(b, "%s, ", tjj_export_c_type(&kernel->params[i], "void *"));
    tjs_buf_printf(b, "int64_t first, int64_t count, int32_t nprog0, int32_t nprog1,\n"
                   "    int32_t nprog2, void *scratch, void *runtime);\n\n"
                   "/* One launch: its arguments, and the programs not yet taken. */\n"
                   "typedef struct %s_launch {\n", name);
    for (int i = 0; i < kernel->nparams; i++)
        tjs_buf_printf(b, "    %s p%d;\n", tjj_export_c_type(&kernel->params[i], "void *"), i);
    tjs_buf_printf(b, "    int32_t grid[3];\n    int64_t programs, chunk;\n    atomic_llong next;\n"
                   "    char *scratch; /* one block of %zu bytes per thread */\n} %s_launch;\n\n"
                   "typedef struct %s_worker {\n    %s_launch *launch;\n    unsigned index;\n} %s_worker;\n\n",
                   stride, name, name, name, name);
    tjs_buf_printf(b, "static void *%s_work(void *arg)\n{\n    %s_worker *w = arg;\n    %s_launch *l = w->launch;\n"
                   "    void *scratch = l->scratch + (size_t)w->index * %zu;\n    for (;;) {\n"
                   "        int64_t first = atomic_fetch_add(&l->next, l->chunk);\n"
                   "        if (first >= l->programs)\n            return NULL;\n"
                   "        int64_t count = l->programs - first < l->chunk ? l->programs - first : l->chunk;\n"
                   "        %s(", name, name, name, stride, symbol);
    for (int i = 0; i < kernel->nparams; i++)
        tjs_buf_printf(b, "l->p%d, ", i);
    tjs_buf_printf(b, "first, count, l->grid[0], l->grid[1], l->grid[2], scratch, NULL);\n    }\n}\n\n");
    put_signature(b, name, kernel, 0, 1);
    tjs_buf_printf(b, "\n{\n    if (grid_x == 0 || grid_y == 0 || grid_z == 0 || grid_x > INT32_MAX ||\n"
                   "        grid_y > INT32_MAX || grid_z > INT32_MAX)\n        return EINVAL;\n"
                   "    int64_t programs = (int64_t)grid_x * grid_y * grid_z;\n    if (threads == 0) {\n"
                   "        long online = sysconf(_SC_NPROCESSORS_ONLN);\n"
                   "        threads = online > 0 && online < 4096 ? (unsigned)online : 1;\n    }\n"
                   "    if ((int64_t)threads > programs)\n        threads = (unsigned)programs;\n"
                   "    %s_launch l = {", name);
    for (int i = 0; i < kernel->nparams; i++)
        tjs_buf_printf(b, "p%d, ", i);
    tjs_buf_printf(b, "{(int32_t)grid_x, (int32_t)grid_y, (int32_t)grid_z}, programs,\n"
                   "                     0, 0, NULL};\n"
                   "    /* chunks of about a quarter of a thread's share */\n"
                   "    l.chunk = programs / ((int64_t)threads * 4);\n    if (l.chunk < 1)\n        l.chunk = 1;\n"
                   "    /* the tiles the kernel materializes: %zu bytes, 64-byte aligned */\n"
                   "    l.scratch = aligned_alloc(64, (size_t)threads * %zu);\n"
                   "    pthread_t *started = threads > 1 ? malloc((threads - 1) * sizeof *started) : NULL;\n"
                   "    %s_worker *workers = malloc(threads * sizeof *workers);\n"
                   "    if (!l.scratch || (threads > 1 && !started) || !workers) {\n"
                   "        free(l.scratch);\n        free(started);\n        free(workers);\n        return ENOMEM;\n    }\n"
                   "    unsigned nstarted = 0;\n    for (unsigned t = 0; t < threads; t++)\n"
                   "        workers[t] = (%s_worker){&l, t};\n"
                   "    for (unsigned t = 1; t < threads; t++)\n"
                   "        if (pthread_create(&started[nstarted], NULL, %s_work, &workers[t]) == 0)\n"
                   "            nstarted++;\n    %s_work(&workers[0]);\n"
                   "    for (unsigned t = 0; t < nstarted; t++)\n        pthread_join(started[t], NULL);\n"
                   "    free(l.scratch);\n    free(started);\n    free(workers);\n    return 0;\n}\n\n",
                   scratch, stride, name, name, name, name);
    put_signature(b, name, kernel, 0, 0);
    tjs_buf_printf(b, "\n{\n    return %s_threads(0, grid_x, grid_y, grid_z", name);
    for (int i = 0; i < kernel->nparams; i++)
        tjs_buf_printf(b, ", p%d", i);
    tjs_buf_printf(b, ");\n}\n");
}

/* Compiles and writes OUTPUT.o, OUTPUT.h, OUTPUT.c. */
static tj_status export_cpu(const tj_kernel *kernel, const int64_t *consts, int nconsts,
                            const tj_export_opts *opts, tjj_artifact *a)
{
    const char *output = opts->output ? opts->output : kernel->name;
    const char *name;
    tj_status st = tjj_export_launcher_name(who, output, &name);
    for (int i = 0; st == TJ_OK && i < kernel->nparams; i++)
        if (!tjj_export_c_type(&kernel->params[i], "void *"))
            st = tjs_error(TJ_ERR_INVALID_ARG, "%s: kernel '%s': parameter %d ('%s') has no dtype tjit "
                           "knows", who, kernel->name, i + 1, kernel->params[i].name);
    tji_func *fn = NULL;
    if (st == TJ_OK)
        st = tji_build(kernel, consts, nconsts, &fn);
    if (st != TJ_OK)
        return st;
    fn->params_may_alias = 1;
    fn->check_bounds = 0;
    int hit = 0;
    st = tjj_compile_cpu_cached(fn, TJF_SPEC_ALIASED, NULL, a, &hit);
    const char *call = st == TJ_OK ? runtime_call(&a->object) : NULL;
    if (call)
        st = tjs_error(TJ_ERR_UNSUPPORTED, "%s: kernel '%s' calls tjit's runtime (%s: device asserts, "
                       "prints or 16-bit float conversions), which an exported program lacks",
                       who, kernel->name, call);
    char *symbol = st == TJ_OK ? tjj_cpu_entry_symbol(fn->name, &a->key) : NULL;
    tji_func_free(fn);
    if (st != TJ_OK)
        return st;

    tjs_buf h = {0}, c = {0};
    char *o_path = tjs_asprintf("%s.o", output), *h_path = tjs_asprintf("%s.h", output);
    char *c_path = tjs_asprintf("%s.c", output);
    char *h_file = tjs_asprintf("%s.h", name), *c_file = tjs_asprintf("%s.c", name);
    put_banner(&h, h_file, kernel, consts, nconsts);
    put_header(&h, name, kernel);
    put_banner(&c, c_file, kernel, consts, nconsts);
    put_source(&c, name, symbol, kernel, a->object.scratch_bytes);
    st = tjj_export_write_file(who, o_path, a->object.data, a->object.size);
    if (st == TJ_OK)
        st = tjj_export_write_file(who, h_path, h.data, h.len);
    if (st == TJ_OK)
        st = tjj_export_write_file(who, c_path, c.data, c.len);
    tjs_buf_free(&h);
    tjs_buf_free(&c);
    free(o_path);
    free(h_path);
    free(c_path);
    free(h_file);
    free(c_file);
    free(symbol);
    return st;
}

tj_status tj_kernel_export_cpu(const tj_kernel *kernel, const int64_t *consts, int nconsts,
                               const tj_export_opts *opts)
{
    tjs_clear_error();
    tj_status checked = tjj_export_check_args(who, kernel, opts);
    if (checked != TJ_OK)
        return checked;
    tjj_artifact a = {0};
    tj_status st = export_cpu(kernel, consts, nconsts, opts, &a);
    tjj_artifact_free(&a);
    return st;
}
