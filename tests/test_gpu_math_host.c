/* SPDX-License-Identifier: MIT */
/*
 * test_gpu_math_host.c — the GPU's math functions computed in f64 (sin,
 * cos, tan, the inverse and hyperbolic functions, erf, pow, log1p, expm1,
 * log10, cbrt, hypot, exp10, erfc, lgamma), run on the host, within the bounds README.md
 * documents.
 *
 * There is no libm on the GPU: src/jit/gpu/math.c writes these functions
 * in LLVM IR (in f64 for every float dtype). That IR uses no NVPTX
 * intrinsic, so this test builds the very same code (tjj_gpu_math) into a
 * host module, compiles it with LLJIT and measures it here, with no GPU,
 * on the inputs, long double references and ulp measure of test_math_fns
 * (math_bounds.h): f32 results as the GPU returns them, f16 and bf16 as the
 * f32 result rounded once, as the GPU kernel does. The maximum errors it
 * prints are README's GPU column; its twin on a GPU is
 * tests/gpu/test_math_fns.gpu, under the same bounds.
 */
#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Target.h>

#include "math_bounds.h"
#include "jit/gpu/backend.h"

enum { N = 1 << 14 };

typedef double (*fn_f64)(double, double);
typedef float (*fn_f32)(float, float);

static const tji_opcode codes[TL_NFN] = {
    TJI_SIN,   TJI_COS,  TJI_TANH, TJI_ERF,  TJI_POW,   TJI_LOG1P, TJI_EXPM1, TJI_TAN, TJI_ASIN, TJI_ACOS,
    TJI_ATAN,  TJI_ATAN2, TJI_SINH, TJI_COSH, TJI_ASINH, TJI_ACOSH, TJI_ATANH, TJI_LOG10, TJI_CBRT, TJI_HYPOT,
    TJI_EXP10, TJI_ERFC, TJI_LGAMMA,
};

/* One host function per (function, f32/f64): T f(T x, T y). */
static void build(LLVMContextRef ctx, LLVMModuleRef mod)
{
    tjj_gpu_gen g = {0};
    g.ctx = ctx, g.mod = mod, g.b = LLVMCreateBuilderInContext(ctx), g.cur_op = -1;
    tjj_llvm_types_init(&g.ty, ctx);
    for (int fn = 0; fn < TL_NFN; fn++)
        for (int is_f64 = 0; is_f64 < 2; is_f64++) {
            LLVMTypeRef t = is_f64 ? g.ty.t_double : g.ty.t_float, params[2] = {t, t};
            char name[32];
            snprintf(name, sizeof name, "host_%s_%s", tl_fn_names[fn], is_f64 ? "f64" : "f32");
            LLVMValueRef f = LLVMAddFunction(mod, name, LLVMFunctionType(t, params, 2, 0));
            LLVMPositionBuilderAtEnd(g.b, LLVMAppendBasicBlockInContext(ctx, f, "entry"));
            LLVMValueRef r = tjj_gpu_math(&g, codes[fn], LLVMGetParam(f, 0), tl_binary(fn) ? LLVMGetParam(f, 1) : NULL);
            LLVMBuildRet(g.b, r);
        }
    LLVMDisposeBuilder(g.b);
}

static void *lookup(LLVMOrcLLJITRef jit, const char *name)
{
    LLVMOrcExecutorAddress addr = 0;
    LLVMErrorRef err = LLVMOrcLLJITLookup(jit, &addr, name);
    if (err) {
        char *m = LLVMGetErrorMessage(err);
        tap_bail_out("lookup %s: %s", name, m);
    }
    return (void *)(uintptr_t)addr;
}

static void measure(LLVMOrcLLJITRef jit, int fn, tj_dtype dt)
{
    char name[32];
    snprintf(name, sizeof name, "host_%s_%s", tl_fn_names[fn], dt == TJ_F64 ? "f64" : "f32");
    void *f = lookup(jit, name);
    double bound = tl_gpu_bound[fn][tl_dt_index(dt)], worst = 0;
    int wrong = 0;
    for (int i = 0; i < N; i++) {
        double x, y, got;
        tl_input(fn, dt, i, &x, &y);
        if (dt == TJ_F64) {
            got = ((fn_f64)f)(x, y);
        } else {
            uint8_t raw[8];
            tl_set(dt, raw, 0, tl_flt(((fn_f32)f)((float)x, (float)y))); /* rounded once to dt */
            got = tl_get(dt, raw, 0).f;
        }
        double e = tl_error_ulp(dt, got, tl_ref(fn, x, y));
        worst = e > worst ? e : worst;
        if (e > tl_bound_at(fn, dt, 1, x, y) && wrong++ < 4)
            tap_diag("%s(%.17g, %.17g) = %.17g, expected %.17Lg (%.3g ulp)", tl_fn_names[fn], x, y, got,
                     tl_ref(fn, x, y), e);
    }
    tap_diag("GPU %s %s: max error %.3f ulp over %d inputs (bound %g)", tl_fn_names[fn], tj_dtype_name(dt), worst, N,
             bound);
    tap_ok(!wrong, "GPU code of %s for %s, on the host, within %g ulp%s", tl_fn_names[fn], tj_dtype_name(dt), bound,
           fn == TL_POW && dt == TJ_F64 ? " or 4(1 + |y ln x|)" : "");
}

/* The double nearest a multiple of pi/2, 6381956970095103 * 2^797 (its
 * reduced argument is about 4.7e-19), its double and its negation: sin,
 * cos and tan within their f64 bounds of the long double reference. (Not
 * in test_math_fns's inputs: glibc's own double cos is 8 ulp off there.) */
static void check_hardest_reduction(LLVMOrcLLJITRef jit)
{
    static const double xs[] = {0x1.6ac5b262ca1ffp+849, 0x1.6ac5b262ca1ffp+850, -0x1.6ac5b262ca1ffp+849};
    static const int fns[] = {TL_SIN, TL_COS, TL_TAN};
    int wrong = 0;
    for (int f = 0; f < 3; f++) {
        char name[32];
        snprintf(name, sizeof name, "host_%s_f64", tl_fn_names[fns[f]]);
        fn_f64 fp = (fn_f64)lookup(jit, name);
        for (size_t i = 0; i < TL_COUNT(xs); i++) {
            double got = fp(xs[i], 1), e = tl_error_ulp(TJ_F64, got, tl_ref(fns[f], xs[i], 1));
            if (e > tl_gpu_bound[fns[f]][3] && wrong++ < 4)
                tap_diag("%s(%a) = %.17g, expected %.17Lg (%.3g ulp)", tl_fn_names[fns[f]], xs[i], got,
                         tl_ref(fns[f], xs[i], 1), e);
        }
    }
    tap_ok(!wrong, "sin, cos and tan of the double nearest a multiple of pi/2, within their bounds");
}

int main(void)
{
    tj_device_close(tl_setup("test_gpu_math_host")); /* the seed; the device is not used */
    tap_plan(4 * TL_NFN + 1);
    LLVMInitializeNativeTarget();
    LLVMInitializeNativeAsmPrinter();
    LLVMContextRef ctx = LLVMContextCreate();
    LLVMModuleRef mod = LLVMModuleCreateWithNameInContext("gpu_math_host", ctx);
    build(ctx, mod);
    char *msg = NULL;
    if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg))
        tap_bail_out("the GPU math IR does not verify: %s", msg);
    LLVMDisposeMessage(msg);
    LLVMOrcLLJITRef jit;
    LLVMErrorRef err = LLVMOrcCreateLLJIT(&jit, NULL);
    if (err)
        tap_bail_out("LLJIT: %s", LLVMGetErrorMessage(err));
    LLVMOrcDefinitionGeneratorRef gen; /* libm for what the host lowers to calls (fma, rint, ...) */
    err = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(&gen, LLVMOrcLLJITGetGlobalPrefix(jit), NULL, NULL);
    if (err)
        tap_bail_out("process symbols: %s", LLVMGetErrorMessage(err));
    LLVMOrcJITDylibAddGenerator(LLVMOrcLLJITGetMainJITDylib(jit), gen);
    LLVMOrcThreadSafeContextRef tsctx = LLVMOrcCreateNewThreadSafeContextFromLLVMContext(ctx);
    LLVMOrcThreadSafeModuleRef tsm = LLVMOrcCreateNewThreadSafeModule(mod, tsctx);
    LLVMOrcDisposeThreadSafeContext(tsctx);
    err = LLVMOrcLLJITAddLLVMIRModule(jit, LLVMOrcLLJITGetMainJITDylib(jit), tsm);
    if (err)
        tap_bail_out("adding the module: %s", LLVMGetErrorMessage(err));
    static const tj_dtype dts[] = {TJ_F16, TJ_BF16, TJ_F32, TJ_F64};
    for (int d = 0; d < 4; d++)
        for (int fn = 0; fn < TL_NFN; fn++)
            measure(jit, fn, dts[d]);
    check_hardest_reduction(jit);
    LLVMOrcDisposeLLJIT(jit);
    return tap_done();
}
