/* SPDX-License-Identifier: MIT */
/*
 * cpu_orc.c — compiling CPU kernels: plan, generate, verify, optimize, link.
 *
 * One LLJIT serves the whole process. It is created on first use under
 * pthread_once and targets the host CPU by name and feature list
 * (LLVMGetHostCPUName/Features), so the code uses AVX2 or AVX-512 where the
 * machine has them; only the native target is initialized. Its main
 * JITDylib resolves the runtime functions of cpu_runtime.c (and the 16-bit
 * float helpers LLVM may call) as absolute symbols, and everything else
 * (expf, fmodf, memcpy ...) from the process, libm included.
 *
 * A kernel goes into the JIT as an object file, in two steps, so that the
 * disk cache (runtime/disk_cache.c) can keep what the first makes.
 * tjj_cpu_compile runs the CPU back end for one tile program and its fusion
 * plan (tjp_materialize, run by pipeline.c): code generation into a fresh
 * LLVMContext, the verifier (a failure is TJ_ERR_COMPILE with LLVM's
 * message: it would be a tjit bug), the O3 pipeline with a target machine
 * for the host (so the loop vectorizer knows the vector width), then
 * machine code, emitted into memory by a target machine set as LLJIT sets
 * its own (the host, PIC, the JIT's code model), so the object is what the
 * JIT would have made of the module. tjj_cpu_load adds an object, fresh or
 * from the disk cache, to the JIT under its own resource tracker and looks
 * up the entry point, which is when it is linked. A kernel's symbol is its
 * name and its stable key (pipeline.h), so that an object from another
 * process links here: the same symbol means the same code, and a kernel
 * already loaded under it is shared (counted) instead of loaded twice;
 * tjj_cpu_kernel_free removes the tracker, and with it the code and data,
 * when the last user goes. Compiles may run on several threads at once:
 * code generation, optimization and emission use a context and target
 * machine of their own; loading (adding, looking up and removing objects,
 * the list of loaded kernels) holds jit_lock.
 *
 * TJIT_DUMP=llvm prints each module before and after optimization to stderr.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>

#include "../pipeline.h"
#include "cpu_backend.h"
#include "llvm_shared.h"

struct tjj_cpu_kernel {
    LLVMOrcResourceTrackerRef tracker;
    void *entry;
    size_t scratch_bytes;
    char *symbol;
    int users;                   /* variants running it (jit_lock) */
    struct tjj_cpu_kernel *next; /* the loaded kernels (jit_lock) */
};

static pthread_once_t host_once = PTHREAD_ONCE_INIT;
static struct {
    tj_status status;
    char error[1024];
    LLVMOrcLLJITRef jit;
    LLVMTargetRef target;
    char *triple, *cpu, *features;
    char *id;               /* tjj_cpu_host: "triple cpu features" */
    tjj_cpu_target tgt;
} host;

static pthread_mutex_t jit_lock = PTHREAD_MUTEX_INITIALIZER;
static tjj_cpu_kernel *loaded; /* jit_lock */

/* ORC reports errors of lazy steps (materialization, linking) here; the
 * lookup that triggered them then fails and tjj_cpu_load reports both. */
static _Thread_local char session_error[1024];

static void report_session_error(void *ctx, LLVMErrorRef err)
{
    (void)ctx;
    char *msg = LLVMGetErrorMessage(err);
    snprintf(session_error, sizeof session_error, "%s", msg);
    LLVMDisposeErrorMessage(msg);
}

/* Takes err's message into a malloc'ed string and consumes err. */
static char *take_error(LLVMErrorRef err)
{
    char *msg = LLVMGetErrorMessage(err);
    char *copy = tjs_xstrdup(msg);
    LLVMDisposeErrorMessage(msg);
    return copy;
}

static void host_fail(const char *what, char *msg)
{
    host.status = TJ_ERR_COMPILE;
    snprintf(host.error, sizeof host.error, "cannot start the LLVM JIT: %s: %s", what,
             msg ? msg : "unknown error");
}

static LLVMTargetMachineRef host_target_machine(LLVMRelocMode reloc)
{
    return LLVMCreateTargetMachine(host.target, host.triple, host.cpu, host.features,
                                   LLVMCodeGenLevelAggressive, reloc, LLVMCodeModelJITDefault);
}

static void host_init(void)
{
    if (LLVMInitializeNativeTarget() || LLVMInitializeNativeAsmPrinter()) {
        host_fail("initializing the native target", NULL);
        return;
    }
    char *raw = LLVMGetDefaultTargetTriple();
    host.triple = LLVMNormalizeTargetTriple(raw);
    LLVMDisposeMessage(raw);
    host.cpu = LLVMGetHostCPUName();
    host.features = LLVMGetHostCPUFeatures();
    host.id = tjs_asprintf("%s %s %s", host.triple, host.cpu, host.features);
    char *msg = NULL;
    if (LLVMGetTargetFromTriple(host.triple, &host.target, &msg)) {
        host_fail(host.triple, msg);
        LLVMDisposeMessage(msg);
        return;
    }
    LLVMOrcLLJITBuilderRef builder = LLVMOrcCreateLLJITBuilder();
    LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(
        builder, LLVMOrcJITTargetMachineBuilderCreateFromTargetMachine(host_target_machine(LLVMRelocDefault)));
    LLVMErrorRef err = LLVMOrcCreateLLJIT(&host.jit, builder);
    if (err) {
        char *m = take_error(err);
        host_fail("creating LLJIT", m);
        free(m);
        return;
    }
    LLVMOrcExecutionSessionSetErrorReporter(LLVMOrcLLJITGetExecutionSession(host.jit),
                                            report_session_error, NULL);
    LLVMOrcJITDylibRef jd = LLVMOrcLLJITGetMainJITDylib(host.jit);

    size_t n = 0;
    while (tjj_cpu_runtime_symbols[n].name)
        n++;
    LLVMOrcCSymbolMapPair *pairs = tjs_xcalloc(n, sizeof *pairs);
    for (size_t i = 0; i < n; i++) {
        pairs[i].Name = LLVMOrcLLJITMangleAndIntern(host.jit, tjj_cpu_runtime_symbols[i].name);
        pairs[i].Sym.Address = (LLVMOrcExecutorAddress)(uintptr_t)tjj_cpu_runtime_symbols[i].address;
        pairs[i].Sym.Flags.GenericFlags = LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable;
    }
    err = LLVMOrcJITDylibDefine(jd, LLVMOrcAbsoluteSymbols(pairs, n));
    free(pairs);
    if (err) {
        char *m = take_error(err);
        host_fail("defining the runtime symbols", m);
        free(m);
        return;
    }
    LLVMOrcDefinitionGeneratorRef gen;
    err = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(
        &gen, LLVMOrcLLJITGetGlobalPrefix(host.jit), NULL, NULL);
    if (err) {
        char *m = take_error(err);
        host_fail("searching the process for symbols", m);
        free(m);
        return;
    }
    LLVMOrcJITDylibAddGenerator(jd, gen);
    host.tgt.triple = LLVMOrcLLJITGetTripleString(host.jit);
    host.tgt.data_layout = LLVMOrcLLJITGetDataLayoutStr(host.jit);
    host.tgt.cpu = host.cpu;
    host.tgt.features = host.features;
}

const char *tjj_cpu_host(void)
{
    pthread_once(&host_once, host_init);
    return host.status == TJ_OK ? host.id : NULL;
}

char *tjj_cpu_entry_symbol(const char *kernel_name, const tjj_stable_key *key)
{
    char hex[33];
    tjj_stable_key_hex(key, hex);
    char *s = tjs_asprintf("tjk_%s_%s", kernel_name ? kernel_name : "kernel", hex);
    for (char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
            *p = '_';
    return s;
}

/* O3 with the loop and SLP vectorizers, then machine code, both for the
 * host; on success *out holds the object file. */
static tj_status optimize_and_emit(LLVMModuleRef mod, const char *name, tjj_stage_times *times,
                                   tjj_cpu_object *out)
{
    LLVMTargetMachineRef tm = host_target_machine(LLVMRelocDefault);
    tj_status st = tjj_llvm_optimize(mod, tm, 1, name);
    LLVMDisposeTargetMachine(tm);
    tjj_stage_done(times, "llvm-opt");
    if (st != TJ_OK)
        return st;
    tjj_llvm_dump(mod, "", name, "after");
    /* PIC, as LLJIT makes its own code (the essay above) */
    tm = host_target_machine(LLVMRelocPIC);
    char *msg = NULL;
    LLVMMemoryBufferRef buf = NULL;
    if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMObjectFile, &msg, &buf)) {
        st = tjs_error(TJ_ERR_COMPILE, "error: in kernel '%s': LLVM cannot emit machine code: %s", name,
                       msg ? msg : "unknown error");
    } else {
        out->size = LLVMGetBufferSize(buf);
        out->data = tjs_xmalloc(out->size ? out->size : 1);
        memcpy(out->data, LLVMGetBufferStart(buf), out->size);
        LLVMDisposeMemoryBuffer(buf);
    }
    LLVMDisposeMessage(msg);
    LLVMDisposeTargetMachine(tm);
    tjj_stage_done(times, "emit-object");
    return st;
}

tj_status tjj_cpu_compile(const tji_func *fn, const tjp_plan *plan, const char *symbol, tjj_stage_times *times,
                          tjj_cpu_object *out)
{
    memset(out, 0, sizeof *out);
    pthread_once(&host_once, host_init);
    if (host.status != TJ_OK)
        return tjs_error(host.status, "%s", host.error);

    LLVMContextRef ctx = LLVMContextCreate();
    LLVMModuleRef mod = NULL;
    size_t scratch = 0;
    tj_status st = tjj_cpu_codegen(fn, plan, ctx, &host.tgt, symbol, &mod, &scratch);
    if (st != TJ_OK) {
        LLVMContextDispose(ctx);
        return st;
    }
    tjj_llvm_dump(mod, "", fn->name, "before");
    char *msg = NULL;
    if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg))
        st = tjs_error(TJ_ERR_COMPILE, "error: in kernel '%s': LLVM verifier (a tjit bug): %s",
                       fn->name, msg ? msg : "");
    LLVMDisposeMessage(msg);
    tjj_stage_done(times, "llvm-ir");
    if (st == TJ_OK)
        st = optimize_and_emit(mod, fn->name, times, out);
    LLVMDisposeModule(mod);
    LLVMContextDispose(ctx);
    if (st == TJ_OK)
        out->scratch_bytes = scratch;
    else
        tjj_cpu_object_free(out);
    return st;
}

void tjj_cpu_object_free(tjj_cpu_object *o)
{
    free(o->data);
    memset(o, 0, sizeof *o);
}

/* The loaded kernel named symbol, with one more user; NULL if none
 * (jit_lock held). */
static tjj_cpu_kernel *find_loaded(const char *symbol)
{
    for (tjj_cpu_kernel *k = loaded; k; k = k->next)
        if (strcmp(k->symbol, symbol) == 0) {
            k->users++;
            return k;
        }
    return NULL;
}

tj_status tjj_cpu_load(const tjj_cpu_object *obj, const char *symbol, const char *kernel_name,
                       tjj_cpu_kernel **out)
{
    *out = NULL;
    pthread_once(&host_once, host_init);
    if (host.status != TJ_OK)
        return tjs_error(host.status, "%s", host.error);
    pthread_mutex_lock(&jit_lock);
    tjj_cpu_kernel *k = find_loaded(symbol);
    if (k) {
        pthread_mutex_unlock(&jit_lock);
        *out = k;
        return TJ_OK;
    }
    /* The JIT owns the buffer from here on. */
    LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRangeCopy(obj->data, obj->size, symbol);
    LLVMOrcResourceTrackerRef tracker =
        LLVMOrcJITDylibCreateResourceTracker(LLVMOrcLLJITGetMainJITDylib(host.jit));
    session_error[0] = '\0';
    LLVMErrorRef err = LLVMOrcLLJITAddObjectFileWithRT(host.jit, tracker, buf);
    LLVMOrcExecutorAddress addr = 0;
    if (!err)
        err = LLVMOrcLLJITLookup(host.jit, &addr, symbol);
    if (err) {
        char *m = take_error(err);
        tj_status st = tjs_error(TJ_ERR_COMPILE, "error: in kernel '%s': LLVM JIT failed: %s%s%s",
                                 kernel_name, m, session_error[0] ? "; " : "", session_error);
        free(m);
        LLVMErrorRef rm = LLVMOrcResourceTrackerRemove(tracker);
        if (rm)
            LLVMConsumeError(rm);
        LLVMOrcReleaseResourceTracker(tracker);
        pthread_mutex_unlock(&jit_lock);
        return st;
    }
    k = tjs_xcalloc(1, sizeof *k);
    k->tracker = tracker;
    k->entry = (void *)(uintptr_t)addr;
    k->scratch_bytes = obj->scratch_bytes;
    k->symbol = tjs_xstrdup(symbol);
    k->users = 1;
    k->next = loaded;
    loaded = k;
    pthread_mutex_unlock(&jit_lock);
    *out = k;
    return TJ_OK;
}

void *tjj_cpu_kernel_entry(const tjj_cpu_kernel *k) { return k ? k->entry : NULL; }

size_t tjj_cpu_kernel_scratch(const tjj_cpu_kernel *k) { return k ? k->scratch_bytes : 0; }

void tjj_cpu_kernel_free(tjj_cpu_kernel *k)
{
    if (!k)
        return;
    pthread_mutex_lock(&jit_lock);
    if (--k->users > 0) {
        pthread_mutex_unlock(&jit_lock);
        return;
    }
    tjj_cpu_kernel **link = &loaded;
    while (*link != k)
        link = &(*link)->next;
    *link = k->next;
    LLVMErrorRef err = LLVMOrcResourceTrackerRemove(k->tracker);
    if (err)
        LLVMConsumeError(err);
    LLVMOrcReleaseResourceTracker(k->tracker);
    pthread_mutex_unlock(&jit_lock);
    free(k->symbol);
    free(k);
}
