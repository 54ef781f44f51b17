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
 * tjj_cpu_compile runs the CPU back end for one tile program and its fusion
 * plan (tjp_materialize, run by pipeline.c): code generation into a fresh LLVMContext,
 * the verifier (a failure is TJ_ERR_COMPILE with LLVM's message: it would be
 * a tjit bug), the O3 pipeline with a target machine for the host (so the
 * loop vectorizer knows the vector width), then the module goes into the JIT
 * under its own resource tracker and the entry point is looked up, which is
 * when machine code is generated. Each kernel's symbol is its name plus a
 * process-wide counter, so variants never clash; tjj_cpu_kernel_free removes
 * the tracker and with it the kernel's code and data. Compiles may run on
 * several threads at once: planning, code generation and optimization use a
 * context and target machine of their own; the last step (adding, looking up
 * and removing modules) holds jit_lock, because LLJIT as the C API builds it
 * generates machine code with one shared target machine, which two threads
 * must not use at once.
 *
 * TJIT_DUMP=llvm prints each module before and after optimization to stderr.
 */
#include <pthread.h>
#include <stdatomic.h>
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

#include "cpu_backend.h"
#include "llvm_shared.h"

struct tjj_cpu_kernel {
    LLVMOrcResourceTrackerRef tracker;
    void *entry;
    size_t scratch_bytes;
};

static pthread_once_t host_once = PTHREAD_ONCE_INIT;
static struct {
    tj_status status;
    char error[1024];
    LLVMOrcLLJITRef jit;
    LLVMTargetRef target;
    char *triple, *cpu, *features;
    tjj_cpu_target tgt;
} host;

static atomic_uint_fast64_t kernel_counter;
static pthread_mutex_t jit_lock = PTHREAD_MUTEX_INITIALIZER;

/* ORC reports errors of lazy steps (materialization, linking) here; the
 * lookup that triggered them then fails and tjj_cpu_compile reports both. */
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

static LLVMTargetMachineRef host_target_machine(void)
{
    return LLVMCreateTargetMachine(host.target, host.triple, host.cpu, host.features,
                                   LLVMCodeGenLevelAggressive, LLVMRelocDefault,
                                   LLVMCodeModelJITDefault);
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
    char *msg = NULL;
    if (LLVMGetTargetFromTriple(host.triple, &host.target, &msg)) {
        host_fail(host.triple, msg);
        LLVMDisposeMessage(msg);
        return;
    }
    LLVMOrcLLJITBuilderRef builder = LLVMOrcCreateLLJITBuilder();
    LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(
        builder, LLVMOrcJITTargetMachineBuilderCreateFromTargetMachine(host_target_machine()));
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

/* A symbol from the kernel's name: letters, digits and '_' only. */
static char *kernel_symbol(const char *name)
{
    unsigned long long n = (unsigned long long)atomic_fetch_add(&kernel_counter, 1) + 1;
    char *s = tjs_asprintf("tjk_%s_%llu", name ? name : "kernel", n);
    for (char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
            *p = '_';
    return s;
}

/* O3 with the loop and SLP vectorizers, for the host. */
static tj_status optimize(LLVMModuleRef mod, const char *name)
{
    LLVMTargetMachineRef tm = host_target_machine();
    tj_status st = tjj_llvm_optimize(mod, tm, 1, name);
    LLVMDisposeTargetMachine(tm);
    return st;
}

tj_status tjj_cpu_compile(const tji_func *fn, const tjp_plan *plan, tjj_stage_times *times,
                          tjj_cpu_kernel **out)
{
    *out = NULL;
    pthread_once(&host_once, host_init);
    if (host.status != TJ_OK)
        return tjs_error(host.status, "%s", host.error);

    char *symbol = kernel_symbol(fn->name);
    LLVMContextRef ctx = LLVMContextCreate();
    LLVMModuleRef mod = NULL;
    size_t scratch = 0;
    tj_status st = tjj_cpu_codegen(fn, plan, ctx, &host.tgt, symbol, &mod, &scratch);
    if (st != TJ_OK) {
        LLVMContextDispose(ctx);
        free(symbol);
        return st;
    }
    tjj_llvm_dump(mod, "", fn->name, "before");
    char *msg = NULL;
    if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg)) {
        st = tjs_error(TJ_ERR_COMPILE, "error: in kernel '%s': LLVM verifier (a tjit bug): %s",
                       fn->name, msg ? msg : "");
        LLVMDisposeMessage(msg);
        LLVMDisposeModule(mod);
        LLVMContextDispose(ctx);
        free(symbol);
        return st;
    }
    LLVMDisposeMessage(msg);
    tjj_stage_done(times, "llvm-ir");
    st = optimize(mod, fn->name);
    tjj_stage_done(times, "llvm-opt");
    if (st != TJ_OK) {
        LLVMDisposeModule(mod);
        LLVMContextDispose(ctx);
        free(symbol);
        return st;
    }
    tjj_llvm_dump(mod, "", fn->name, "after");

    /* The JIT owns module and context from here on. */
    LLVMOrcThreadSafeContextRef tsctx = LLVMOrcCreateNewThreadSafeContextFromLLVMContext(ctx);
    LLVMOrcThreadSafeModuleRef tsm = LLVMOrcCreateNewThreadSafeModule(mod, tsctx);
    LLVMOrcDisposeThreadSafeContext(tsctx);
    LLVMOrcResourceTrackerRef tracker =
        LLVMOrcJITDylibCreateResourceTracker(LLVMOrcLLJITGetMainJITDylib(host.jit));
    pthread_mutex_lock(&jit_lock);
    session_error[0] = '\0';
    LLVMErrorRef err = LLVMOrcLLJITAddLLVMIRModuleWithRT(host.jit, tracker, tsm);
    LLVMOrcExecutorAddress addr = 0;
    if (!err)
        err = LLVMOrcLLJITLookup(host.jit, &addr, symbol);
    if (err) {
        char *m = take_error(err);
        st = tjs_error(TJ_ERR_COMPILE, "error: in kernel '%s': LLVM JIT failed: %s%s%s", fn->name, m,
                       session_error[0] ? "; " : "", session_error);
        free(m);
        LLVMErrorRef rm = LLVMOrcResourceTrackerRemove(tracker);
        if (rm)
            LLVMConsumeError(rm);
        LLVMOrcReleaseResourceTracker(tracker);
        pthread_mutex_unlock(&jit_lock);
        free(symbol);
        return st;
    }
    pthread_mutex_unlock(&jit_lock);
    tjj_stage_done(times, "emit-object");
    free(symbol);
    tjj_cpu_kernel *k = tjs_xcalloc(1, sizeof *k);
    k->tracker = tracker;
    k->entry = (void *)(uintptr_t)addr;
    k->scratch_bytes = scratch;
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
    LLVMErrorRef err = LLVMOrcResourceTrackerRemove(k->tracker);
    if (err)
        LLVMConsumeError(err);
    LLVMOrcReleaseResourceTracker(k->tracker);
    pthread_mutex_unlock(&jit_lock);
    free(k);
}
