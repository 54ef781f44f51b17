/* SPDX-License-Identifier: MIT */
/*
 * test_llvm_atomics.c — the float compare-and-swap loop both back ends
 * share (tjj_llvm_float_atomic, src/jit/llvm/llvm_atomics.c), run on the
 * host by many threads at once.
 *
 * tjit's builder offers no f16/bf16 atomic add, max or min yet, and on the
 * GPU the loop also serves f32/f64 max and min, so the loop is tested here
 * directly: the test builds one function per dtype and op,
 *
 *     void update(T *p, bits v, bits *old)   -- *old = atomic_op(p, v)
 *
 * with the helper (the CPU's seq_cst, system scope), compiles it with an
 * LLJIT of its own and calls it from THREADS threads at once on one
 * address, in ROUNDS rounds that start the threads together:
 *
 *  - add of 1: the final value is exactly the number of updates, and the
 *    old values are exactly 0 .. n-1, one each (no update lost or seen
 *    twice); every one of those integers is exact in the dtype.
 *  - max (min) of random values: the final value is the largest (smallest)
 *    of all, and each thread's old values never decrease (increase).
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>

#include "../src/jit/cpu/cpu_backend.h"
#include "../src/jit/llvm/llvm_shared.h"
#include "tap.h"

enum { THREADS = 8, MAX_PER_THREAD = 4096, ROUNDS = 50 };

typedef void (*update_fn)(void *p, uint64_t v, uint64_t *old);

static LLVMOrcLLJITRef jit;

static int jit_failed(LLVMErrorRef err, const char *what)
{
    if (!err)
        return 0;
    char *m = LLVMGetErrorMessage(err);
    tap_diag("%s: %s", what, m);
    LLVMDisposeErrorMessage(m);
    return 1;
}

/* An LLJIT for the host that resolves what tjit's CPU code may call. */
static int start_jit(void)
{
    if (LLVMInitializeNativeTarget() || LLVMInitializeNativeAsmPrinter())
        return 0;
    if (jit_failed(LLVMOrcCreateLLJIT(&jit, NULL), "creating LLJIT"))
        return 0;
    LLVMOrcJITDylibRef jd = LLVMOrcLLJITGetMainJITDylib(jit);
    size_t n = 0;
    while (tjj_cpu_runtime_symbols[n].name)
        n++;
    LLVMOrcCSymbolMapPair *pairs = calloc(n, sizeof *pairs);
    for (size_t i = 0; i < n; i++) {
        pairs[i].Name = LLVMOrcLLJITMangleAndIntern(jit, tjj_cpu_runtime_symbols[i].name);
        pairs[i].Sym.Address = (LLVMOrcExecutorAddress)(uintptr_t)tjj_cpu_runtime_symbols[i].address;
        pairs[i].Sym.Flags.GenericFlags = LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable;
    }
    LLVMErrorRef err = LLVMOrcJITDylibDefine(jd, LLVMOrcAbsoluteSymbols(pairs, n));
    free(pairs);
    if (jit_failed(err, "defining the runtime symbols"))
        return 0;
    LLVMOrcDefinitionGeneratorRef gen;
    err = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(&gen, LLVMOrcLLJITGetGlobalPrefix(jit), NULL, NULL);
    if (jit_failed(err, "searching the process"))
        return 0;
    LLVMOrcJITDylibAddGenerator(jd, gen);
    return 1;
}

/* Builds and compiles update() for dt and aop; NULL on failure. */
static update_fn build_update(tj_dtype dt, tj_atomic_op aop)
{
    static int counter;
    char name[64];
    snprintf(name, sizeof name, "update_%s_%d_%d", tj_dtype_name(dt), (int)aop, counter++);
    LLVMContextRef ctx = LLVMContextCreate();
    tjj_llvm_types ty;
    tjj_llvm_types_init(&ty, ctx);
    LLVMModuleRef mod = LLVMModuleCreateWithNameInContext(name, ctx);
    LLVMSetTarget(mod, LLVMOrcLLJITGetTripleString(jit));
    LLVMSetDataLayout(mod, LLVMOrcLLJITGetDataLayoutStr(jit));
    LLVMTypeRef params[3] = {ty.t_ptr, ty.t_i64, ty.t_ptr};
    LLVMValueRef f = LLVMAddFunction(mod, name, LLVMFunctionType(ty.t_void, params, 3, 0));
    LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
    LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, f, "entry"));
    LLVMTypeRef it = LLVMIntTypeInContext(ctx, (unsigned)tjs_dtype_bits(dt));
    LLVMTypeRef ft = dt == TJ_F16 ? ty.t_half : dt == TJ_BF16 ? ty.t_i16 : dt == TJ_F32 ? ty.t_float : ty.t_double;
    LLVMValueRef bits = LLVMBuildTrunc(b, LLVMGetParam(f, 1), it, "");
    LLVMValueRef v = ft == it ? bits : LLVMBuildBitCast(b, bits, ft, "");
    tjj_llvm_atomic_order order = {LLVMAtomicOrderingSequentiallyConsistent, LLVMAtomicOrderingSequentiallyConsistent,
                                   LLVMGetSyncScopeID(ctx, "", 0)};
    LLVMValueRef old = tjj_llvm_float_atomic(&ty, mod, b, &order, aop, dt, LLVMGetParam(f, 0), v);
    LLVMValueRef old_bits = ft == it ? old : LLVMBuildBitCast(b, old, it, "");
    LLVMBuildStore(b, LLVMBuildZExt(b, old_bits, ty.t_i64, ""), LLVMGetParam(f, 2));
    LLVMBuildRetVoid(b);
    LLVMDisposeBuilder(b);
    char *msg = NULL;
    if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg)) {
        tap_diag("invalid IR: %s", msg);
        LLVMDisposeMessage(msg);
        LLVMDisposeModule(mod);
        LLVMContextDispose(ctx);
        return NULL;
    }
    LLVMDisposeMessage(msg);
    LLVMOrcThreadSafeContextRef tsctx = LLVMOrcCreateNewThreadSafeContextFromLLVMContext(ctx);
    LLVMOrcThreadSafeModuleRef tsm = LLVMOrcCreateNewThreadSafeModule(mod, tsctx);
    LLVMOrcDisposeThreadSafeContext(tsctx);
    LLVMOrcExecutorAddress addr = 0;
    if (jit_failed(LLVMOrcLLJITAddLLVMIRModule(jit, LLVMOrcLLJITGetMainJITDylib(jit), tsm), "adding the module") ||
        jit_failed(LLVMOrcLLJITLookup(jit, &addr, name), "looking up the function"))
        return NULL;
    return (update_fn)(uintptr_t)addr;
}

/* --- values as bits --------------------------------------------------------- */

static double from_bits(tj_dtype dt, uint64_t bits)
{
    switch (dt) {
    case TJ_F16: return tj_f16_to_f32((uint16_t)bits);
    case TJ_BF16: return tj_bf16_to_f32((uint16_t)bits);
    case TJ_F32: { uint32_t u = (uint32_t)bits; float f; memcpy(&f, &u, 4); return f; }
    default: { double d; memcpy(&d, &bits, 8); return d; }
    }
}

static uint64_t to_bits(tj_dtype dt, double x)
{
    switch (dt) {
    case TJ_F16: return tj_f32_to_f16((float)x);
    case TJ_BF16: return tj_f32_to_bf16((float)x);
    case TJ_F32: { float f = (float)x; uint32_t u; memcpy(&u, &f, 4); return u; }
    default: { uint64_t u; memcpy(&u, &x, 8); return u; }
    }
}

/* --- the threads ---------------------------------------------------------------- */

typedef struct worker {
    update_fn update;
    uint64_t *target;
    pthread_barrier_t *start, *end;
    int n;
    uint64_t vals[MAX_PER_THREAD], olds[MAX_PER_THREAD];
} worker;

static void *run_worker(void *arg)
{
    worker *w = arg;
    for (int round = 0; round < ROUNDS; round++) {
        pthread_barrier_wait(w->start);
        for (int i = 0; i < w->n; i++)
            w->update(w->target, w->vals[i], &w->olds[i]);
        pthread_barrier_wait(w->end);
    }
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void test_update(tj_dtype dt, tj_atomic_op aop)
{
    static const char *const names[] = {"add", "max", "min"};
    /* add of 1 stays exact: 2048 updates for f16, 256 for bf16 */
    int per_thread = dt == TJ_F16 ? 256 : dt == TJ_BF16 ? 32 : MAX_PER_THREAD;
    int total = per_thread * THREADS;
    update_fn update = build_update(dt, aop);
    if (!update) {
        tap_ok(0, "atomic %s of %s: compiled", names[aop], tj_dtype_name(dt));
        return;
    }
    double init = aop == TJ_ATOMIC_ADD ? 0 : aop == TJ_ATOMIC_MAX ? -1000 : 1000;
    uint64_t target = 0; /* 8-aligned, little-endian: its low bits are the dtype's */
    static worker w[THREADS];
    pthread_t th[THREADS];
    pthread_barrier_t start, end;
    pthread_barrier_init(&start, NULL, THREADS + 1);
    pthread_barrier_init(&end, NULL, THREADS + 1);
    double extreme = init;
    unsigned seed = 12345u + (unsigned)dt * 7u + (unsigned)aop;
    for (int t = 0; t < THREADS; t++) {
        w[t] = (worker){.update = update, .target = &target, .start = &start, .end = &end, .n = per_thread};
        for (int i = 0; i < per_thread; i++) {
            double x = 1;
            if (aop != TJ_ATOMIC_ADD) { /* random values of either sign, exact in dt */
                x = from_bits(dt, to_bits(dt, ((double)rand_r(&seed) / RAND_MAX - 0.5) * 200));
                extreme = aop == TJ_ATOMIC_MAX ? fmax(extreme, x) : fmin(extreme, x);
            }
            w[t].vals[i] = to_bits(dt, x);
        }
    }
    for (int t = 0; t < THREADS; t++)
        pthread_create(&th[t], NULL, run_worker, &w[t]);
    const char *why = NULL;
    double final = 0;
    double *seen = malloc(sizeof(double) * (size_t)total);
    uint64_t mask = tjs_dtype_bits(dt) == 64 ? ~0ull : (1ull << tjs_dtype_bits(dt)) - 1;
    for (int round = 0; round < ROUNDS; round++) {
        target = to_bits(dt, init);
        pthread_barrier_wait(&start);
        pthread_barrier_wait(&end);
        final = from_bits(dt, target & mask);
        if (why)
            continue;
        if (aop == TJ_ATOMIC_ADD) {
            for (int t = 0; t < THREADS; t++)
                for (int i = 0; i < per_thread; i++)
                    seen[t * per_thread + i] = from_bits(dt, w[t].olds[i]);
            qsort(seen, (size_t)total, sizeof *seen, cmp_double);
            if (final != total)
                why = "the sum is not exact";
            for (int k = 0; k < total && !why; k++)
                if (seen[k] != k)
                    why = "the old values are not one ticket each (an update was lost or seen twice)";
        } else {
            if (final != extreme)
                why = "the final value is not the extreme of all values";
            for (int t = 0; t < THREADS && !why; t++)
                for (int i = 1; i < per_thread && !why; i++) {
                    double a = from_bits(dt, w[t].olds[i - 1]), c = from_bits(dt, w[t].olds[i]);
                    if (aop == TJ_ATOMIC_MAX ? c < a : c > a)
                        why = "a thread saw the value move backwards";
                }
        }
        if (why)
            tap_diag("  round %d: %s (final %g)", round, why, final);
    }
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    pthread_barrier_destroy(&start);
    pthread_barrier_destroy(&end);
    free(seen);
    tap_ok(!why, "atomic %s of %s: %d rounds of %d threads x %d updates on one address", names[aop],
           tj_dtype_name(dt), ROUNDS, THREADS, per_thread);
}

int main(void)
{
    if (!start_jit())
        tap_bail_out("cannot start an LLJIT for the host");
    static const tj_dtype dtypes[] = {TJ_F16, TJ_BF16, TJ_F32, TJ_F64};
    for (size_t d = 0; d < sizeof dtypes / sizeof *dtypes; d++)
        for (int op = TJ_ATOMIC_ADD; op <= TJ_ATOMIC_MIN; op++)
            test_update(dtypes[d], (tj_atomic_op)op);
    LLVMOrcDisposeLLJIT(jit);
    return tap_done();
}
