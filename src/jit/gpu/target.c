/* SPDX-License-Identifier: MIT */
/*
 * target.c — the NVPTX target: the LLVM module of a kernel, the O3
 * pipeline, PTX, and the fix-ups PTX needs before ptxas.
 *
 * tjj_gpu_compile (jit.h) is the GPU back end's entry: it makes the target
 * machine for sm_XX or sm_XXa (an architecture-specific target: the
 * chip's own instructions, such as Hopper's wgmma, PTX that loads on that
 * chip alone) with the PTX ISA the chip needs, the context and module,
 * runs code generation (kernel.c), verifies and optimizes the module and
 * emits PTX, which TJIT_DUMP=llvm/ptx print. The dump and the O3 run are
 * the CPU's (llvm_shared.c: tjj_llvm_dump, tjj_llvm_optimize without the
 * vectorizers forced on, as this back end always ran it). The accuracy of the math
 * functions is tabulated at the top of math.c.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/Support.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>

#include "gen.h"

static const char *const TRIPLE = "nvptx64-nvidia-cuda";

/* --- target and compile ---------------------------------------------------------------------------- */

static pthread_once_t nvptx_once = PTHREAD_ONCE_INIT;

/* Shared-memory pointers are 32 bits (NVPTX's short pointers, as in
 * Triton and nvcc): shared memory is at most 227 KiB, and 64-bit shared
 * addresses cost a register pair and two adds each — in a matmul's loop
 * every ldmatrix and cp.async computes one. The option is LLVM's only
 * switch for it; it changes nothing but the NVPTX data layout. */
static void nvptx_init(void)
{
    const char *const options[] = {"tjit", "-nvptx-short-ptr"};
    LLVMParseCommandLineOptions(2, options, NULL);
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
}

/* The PTX ISA: 8.0 (CUDA 12.0) covers sm_80..sm_90; newer chips need the
 * version that introduced them. sm_89 and sm_90 get 8.4 (CUDA 12.4), the
 * first that has mma.sync of fp8 (ptxas refuses it under an older
 * .version). */
static const char *ptx_features(int sm)
{
    if (sm >= 120)
        return "+ptx87";
    if (sm >= 100)
        return "+ptx86";
    if (sm >= 89)
        return "+ptx84";
    return "+ptx80";
}

static char *entry_name_of(const char *name)
{
    char *s = tjs_asprintf("tjk_%s", name ? name : "kernel");
    for (char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
            *p = '_';
    return s;
}

static tj_status compile_error(const char *name, const char *what, char *msg)
{
    tj_status st = tjs_error(TJ_ERR_COMPILE, "error: in kernel '%s': %s: %s", name, what, msg ? msg : "?");
    if (msg)
        LLVMDisposeMessage(msg);
    return st;
}

/* The PTX LLVM wrote, with every `neg.s16 d, a;` (and `abs.s16`) done in
 * 32 bits:
 *     { .reg .b32 %tjn; cvt.s32.s16 %tjn, a; neg.s32 %tjn, %tjn; cvt.u16.u32 d, %tjn; }
 * ptxas (CUDA 13, and the driver's JIT on the H200) keeps a 16-bit value
 * sign-extended in a 32-bit register and assumes neg.s16 leaves it so; the
 * negation of -32768 does not (it is +32768 there, where 16 bits wrap to
 * -32768), and a later arithmetic shift then sees a positive number: an
 * i16 -(-32768) >> 2 gave 8192 instead of -8192, and i8 negations, which
 * LLVM widens to neg.s16 of x << 8, went wrong the same way. abs.s16 has
 * the same edge. The explicit truncation makes ptxas sign-extend again.
 * Malloc'ed, NUL-terminated. */
static char *ptx_without_s16_neg_abs(const char *ptx, size_t len)
{
    static const char *const ops[] = {"neg", "abs"};
    tjs_buf b = {0};
    const char *p = ptx, *end = ptx + len;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *line_end = eol ? eol + 1 : end;
        const char *at = p;
        while (at < line_end && (*at == ' ' || *at == '\t'))
            at++;
        char d[32], a[32];
        int op = -1;
        for (int k = 0; k < 2 && op < 0; k++)
            if (line_end - at > 8 && !memcmp(at, ops[k], 3) && !memcmp(at + 3, ".s16", 4) &&
                sscanf(at + 7, " %31[^, ] , %31[^; ] ;", d, a) == 2)
                op = k;
        if (op >= 0)
            tjs_buf_printf(&b, "\t{ .reg .b32 %%tjn; cvt.s32.s16 %%tjn, %s; %s.s32 %%tjn, %%tjn; "
                           "cvt.u16.u32 %s, %%tjn; }\n", a, ops[op], d);
        else
            tjs_buf_printf(&b, "%.*s", (int)(line_end - p), p);
        p = line_end;
    }
    return b.data ? b.data : tjs_xstrdup("");
}

tj_status tjj_gpu_compile(const tji_func *fn, const tjp_layout_plan *plan, int sm, int arch_specific,
                          tjj_stage_times *times, tjj_gpu_code *out)
{
    memset(out, 0, sizeof *out);
    if (!fn || !plan)
        return tjs_error(TJ_ERR_INVALID_ARG, "tjj_gpu_compile: no program or no layout plan");
    if (sm < 70)
        return tjs_error(TJ_ERR_UNSUPPORTED, "error: in kernel '%s': GPU code needs sm_70 or newer, not sm_%d",
                         fn->name, sm);
    pthread_once(&nvptx_once, nvptx_init);
    LLVMTargetRef target;
    char *msg = NULL;
    if (LLVMGetTargetFromTriple(TRIPLE, &target, &msg))
        return compile_error(fn->name, "the NVPTX target is not available", msg);
    char cpu[16];
    snprintf(cpu, sizeof cpu, "sm_%d%s", sm, arch_specific ? "a" : "");
    LLVMTargetMachineRef tm = LLVMCreateTargetMachine(target, TRIPLE, cpu, ptx_features(sm),
                                                      LLVMCodeGenLevelAggressive, LLVMRelocDefault,
                                                      LLVMCodeModelDefault);
    if (!tm)
        return tjs_error(TJ_ERR_COMPILE, "error: in kernel '%s': LLVM cannot target %s", fn->name, cpu);

    LLVMContextRef ctx = LLVMContextCreate();
    char *entry = entry_name_of(fn->name);
    codegen c = {.g = {.fn = fn, .plan = plan, .ctx = ctx, .cur_op = -1, .status = TJ_OK},
                 .num_warps = plan->num_warps, .sm = sm, .arch_specific = arch_specific};
    c.warp_bits = log2_of(plan->num_warps > 0 ? plan->num_warps : 1);
    tjj_llvm_types_init(&c.g.ty, ctx);
    c.g.t_gptr = LLVMPointerTypeInContext(ctx, ADDR_GLOBAL);
    c.g.device_scope = LLVMGetSyncScopeID(ctx, "device", 6);
    LLVMModuleRef mod = c.g.mod = LLVMModuleCreateWithNameInContext(entry, ctx);
    LLVMSetTarget(mod, TRIPLE);
    LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
    LLVMSetModuleDataLayout(mod, td);
    LLVMDisposeTargetData(td);

    tj_status st = tjj_gpu_generate(&c, entry);
    if (st == TJ_OK && LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg))
        st = compile_error(fn->name, "internal error: invalid LLVM IR", msg);
    else if (msg)
        LLVMDisposeMessage(msg);
    msg = NULL;
    tjj_stage_done(times, "llvm-ir");
    if (st == TJ_OK) {
        tjj_llvm_dump(mod, "GPU ", fn->name, "before");
        st = tjj_llvm_optimize(mod, tm, 0, fn->name); /* the vectorizers as LLVM's defaults */
        if (st == TJ_OK)
            tjj_llvm_dump(mod, "GPU ", fn->name, "after");
        tjj_stage_done(times, "llvm-opt");
    }
    LLVMMemoryBufferRef buf = NULL;
    if (st == TJ_OK && LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMAssemblyFile, &msg, &buf))
        st = compile_error(fn->name, "PTX generation failed", msg);
    if (st == TJ_OK) {
        const char *text = LLVMGetBufferStart(buf);
        size_t len = LLVMGetBufferSize(buf);
        if (memmem(text, len, "neg.s16", 7) || memmem(text, len, "abs.s16", 7)) {
            out->ptx = ptx_without_s16_neg_abs(text, len);
        } else {
            out->ptx = tjs_xmalloc(len + 1);
            memcpy(out->ptx, text, len);
            out->ptx[len] = 0;
        }
        LLVMDisposeMemoryBuffer(buf);
        out->entry = entry;
        entry = NULL;
        out->shared_bytes = (size_t)plan->shared_bytes;
        out->num_warps = plan->num_warps;
        out->producer_warps = plan->warp_spec ? plan->warp_spec->producer_warps : 0;
        out->tmaps = tjj_gpu_tma_maps(fn, plan, &out->ntmaps);
        out->persistent = tjp_is_persistent(fn);
        out->cluster = plan->pairs ? 2 : 0;
        out->stream_k_piece_bytes = tjp_stream_k_piece_bytes(fn);
        if (tjs_dump_enabled("ptx"))
            fprintf(stderr, "// ---- tjit: PTX of kernel '%s' (%s) ----\n%s", fn->name, cpu, out->ptx);
        tjj_stage_done(times, "emit-ptx");
    }
    free(entry);
    LLVMDisposeModule(mod);
    LLVMContextDispose(ctx);
    LLVMDisposeTargetMachine(tm);
    return st;
}

void tjj_gpu_code_free(tjj_gpu_code *code)
{
    if (!code)
        return;
    free(code->ptx);
    free(code->entry);
    free(code->tmaps);
    memset(code, 0, sizeof *code);
}
