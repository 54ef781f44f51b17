/* SPDX-License-Identifier: MIT */
/*
 * export_c.c — ahead-of-time export: tj_kernel_export_c writes a kernel,
 * compiled for one set of constants, as C source that launches it on a GPU
 * with nothing but the CUDA driver.
 *
 * A JIT launch knows its arguments before it compiles; an exported kernel
 * is compiled before any argument exists. So the export compiles, for each
 * target asked for, two variants: the SPECIALIZED one a launch with tjit
 * buffers would get (every pointer 16-byte aligned: tjj_spec_of_buffers),
 * and a GENERIC one assuming nothing of any argument (spec 0). The
 * generated launcher tests the pointers it is given and runs the first
 * where all are aligned, the second otherwise. Both are compiled as for
 * arguments that may overlap (TJF_SPEC_ALIASED): the launcher cannot see
 * buffer sizes, so it cannot prove they do not.
 *
 * What an exported launcher could not do is refused, by name: device
 * asserts (their record would have to be read back and reported, which is
 * tjit's runtime). TMA copies and persistence are not refused but compiled
 * away: every variant is built with no_tma (cp.async instead of tensor maps,
 * which would need the driver's encoder and the arguments' shapes at each
 * launch), without warp specialization (its producer warps feed TMA), and
 * never persistent (which needs the SM count and an extra parameter). The
 * bounds-checked code of TJIT_CHECK_BOUNDS is never exported. So the
 * kernel's parameters are the user's, then the assert record's address,
 * which a kernel without asserts never reads: the launcher passes 0.
 *
 * Each variant's PTX is embedded as a string and, where ptxas can be run
 * (opts->ptxas, $TJIT_PTXAS, or "ptxas" in PATH), its cubin as bytes;
 * ptxas also checks the PTX as every tjit compile is checked (a warning of
 * serialized instructions fails the export). The launcher picks, once per
 * CUDA context, the target that suits the context's device: a cubin for it
 * where one exists, else the newest PTX it can JIT.
 *
 * The generated source dlopens libcuda.so.1 once (pthread_once) and keeps
 * the modules it loads per context in a mutex-guarded list; NAME_unload()
 * unloads those of the current context. It needs no cuda.h: the header
 * declares CUresult, CUstream and CUdeviceptr itself unless cuda.h came
 * first, and the source reaches the driver through its own pointer types.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../ffi_bind/ffi_bind.h"
#include "device_impl.h"
#include "export.h"
#include "ptxas.h"

enum { MAX_TARGETS = 16, NVARIANTS = 2, SHARED_WITHOUT_OPT_IN = 48 * 1024 };

static const char who[] = "tj_kernel_export_c";


/* One compiled variant of one target. */
typedef struct variant_code {
    char *ptx;
    char *entry;
    char *cubin;          /* NULL: none (no ptxas) */
    size_t cubin_size;
    size_t shared_bytes;
    int threads;
} variant_code;

typedef struct export_target {
    int sm, arch_specific;
    variant_code v[NVARIANTS];
} export_target;

const char *tjj_export_c_type(const tj_param_desc *p, const char *pointer)
{
    if (p->is_ptr)
        return pointer;
    switch (p->dtype) {
    case TJ_I1: return "uint8_t";
    case TJ_I8: return "int8_t";
    case TJ_I16: return "int16_t";
    case TJ_I32: return "int32_t";
    case TJ_I64: return "int64_t";
    case TJ_U8: case TJ_F8E4M3: case TJ_F8E5M2: return "uint8_t";
    case TJ_U16: case TJ_F16: case TJ_BF16: return "uint16_t";
    case TJ_U32: return "uint32_t";
    case TJ_U64: return "uint64_t";
    case TJ_F32: return "float";
    case TJ_F64: return "double";
    default: return NULL;
    }
}

/* A GPU launcher's C type of a parameter. */
static const char *c_type(const tj_param_desc *p)
{
    return tjj_export_c_type(p, "CUdeviceptr");
}

/* Parses "sm_80,sm_90a" into targets. */
static tj_status parse_targets(const char *list, export_target *targets, int *n)
{
    *n = 0;
    const char *p = list;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char name[32];
        if (len == 0 || len >= sizeof name)
            return tjs_error(TJ_ERR_INVALID_ARG, "%s: opts->targets \"%s\": expected PTX targets "
                             "separated by commas, e.g. \"sm_80,sm_90a\"", who, list);
        if (*n == MAX_TARGETS)
            return tjs_error(TJ_ERR_INVALID_ARG, "%s: opts->targets \"%s\": at most %d targets",
                             who, list, MAX_TARGETS);
        memcpy(name, p, len);
        name[len] = '\0';
        export_target *t = &targets[*n];
        tj_status st = tjj_ptx_target(who, name, &t->sm, &t->arch_specific);
        if (st != TJ_OK)
            return st;
        for (int i = 0; i < *n; i++)
            if (targets[i].sm == t->sm && targets[i].arch_specific == t->arch_specific)
                return tjs_error(TJ_ERR_INVALID_ARG, "%s: opts->targets \"%s\" names %s twice", who,
                                 list, name);
        ++*n;
        if (!comma)
            return TJ_OK;
        p = comma + 1;
    }
}

tj_status tjj_export_launcher_name(const char *who, const char *output, const char **name)
{
    const char *slash = strrchr(output, '/');
    *name = slash ? slash + 1 : output;
    int ok = **name && !isdigit((unsigned char)**name);
    for (const char *c = *name; ok && *c; c++)
        ok = isalnum((unsigned char)*c) || *c == '_';
    if (!ok)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: output \"%s\": its last component \"%s\" names the "
                         "launcher, so it must be a C identifier", who, output, *name);
    return TJ_OK;
}

/* The ptxas in PATH (malloc'ed), or NULL: the export's default where
 * neither opts->ptxas nor $TJIT_PTXAS names one. */
static char *ptxas_in_path(void)
{
    const char *path = getenv("PATH");
    for (const char *dir = path; dir && *dir;) {
        size_t len = strcspn(dir, ":");
        char *candidate = tjs_asprintf("%.*s/ptxas", (int)len, dir);
        if (len > 0 && access(candidate, X_OK) == 0)
            return candidate;
        free(candidate);
        dir += len + (dir[len] == ':');
    }
    return NULL;
}

/* Compiles one variant: spec 0 (generic) or the buffers' alignment. */
static tj_status compile_variant(const tj_kernel *kernel, const int64_t *consts, int nconsts,
                                 const export_target *t, int num_warps, int num_stages, uint64_t spec,
                                 const char *ptxas, variant_code *out)
{
    tji_func *fn = NULL;
    tj_status st = tji_build(kernel, consts, nconsts, &fn);
    if (st != TJ_OK)
        return st;
    fn->params_may_alias = 1;
    fn->check_bounds = 0;
    tjj_artifact a;
    st = tjj_compile_gpu(fn,
                         &(tjj_gpu_target){.sm = t->sm, .arch_specific = t->arch_specific,
                                           .num_warps = num_warps, .spec = spec | TJF_SPEC_ALIASED,
                                           .num_stages = num_stages, .no_tma = 1,
                                           .warp_specialize = TJ_WARP_SPECIALIZE_OFF,
                                           .persistent = TJP_PERSIST_NEVER},
                         &a);
    if (st == TJ_OK && a.nasserts)
        st = tjs_error(TJ_ERR_UNSUPPORTED,
                       "%s: kernel '%s' has %d device assert%s (the first at %s:%d); an exported "
                       "launcher cannot report a failed one, so kernels with asserts are not exported",
                       who, kernel->name, a.nasserts, a.nasserts == 1 ? "" : "s", a.asserts[0].file,
                       a.asserts[0].line);
    if (st == TJ_OK && (a.gpu.ntmaps || a.gpu.persistent || a.gpu.producer_warps))
        st = tjs_error(TJ_ERR_COMPILE, "internal error: %s: kernel '%s' compiled without TMA and "
                       "persistence still reads tensor maps or a program count", who, kernel->name);
    if (st == TJ_OK && ptxas)
        st = tjj_ptxas_assemble(ptxas, a.gpu.ptx, t->sm, t->arch_specific, kernel->name, &out->cubin,
                                &out->cubin_size);
    if (st == TJ_OK) {
        out->ptx = a.gpu.ptx;
        out->entry = a.gpu.entry;
        a.gpu.ptx = a.gpu.entry = NULL;
        out->shared_bytes = a.gpu.shared_bytes;
        out->threads = 32 * a.gpu.num_warps;
    }
    tjj_artifact_free(&a);
    tji_func_free(fn);
    return st;
}

/* Text as a C string literal, one literal per line. */
static void put_string(tjs_buf *b, const char *text)
{
    tjs_buf_printf(b, "    \"");
    for (const char *c = text; *c; c++) {
        if (*c == '\n')
            tjs_buf_printf(b, c[1] ? "\\n\"\n    \"" : "\\n");
        else if (*c == '\t')
            tjs_buf_printf(b, "\\t");
        else if (*c == '"' || *c == '\\')
            tjs_buf_printf(b, "\\%c", *c);
        else if (isprint((unsigned char)*c))
            tjs_buf_printf(b, "%c", *c);
        else
            tjs_buf_printf(b, "\\%03o", (unsigned char)*c);
    }
    tjs_buf_printf(b, "\"");
}

static void put_bytes(tjs_buf *b, const unsigned char *bytes, size_t n)
{
    for (size_t i = 0; i < n; i++)
        tjs_buf_printf(b, "%s0x%02x,", i % 16 ? " " : "\n    ", bytes[i]);
}

/* The comment both files open with. */
static void put_banner(tjs_buf *b, const char *file, const tj_kernel *kernel, const int64_t *consts,
                       int nconsts, const export_target *targets, int ntargets, int num_warps,
                       int num_stages)
{
    tjs_buf_printf(b, "/* SPDX-License-Identifier: MIT */\n/*\n * %s — tjit kernel '%s' (%s:%d), "
                   "exported by tj_kernel_export_c (tjit %s)\n * for", file, kernel->name,
                   kernel->file ? kernel->file : "?", kernel->line, TJ_VERSION_STRING);
    for (int t = 0; t < ntargets; t++)
        tjs_buf_printf(b, "%s sm_%d%s", t ? "," : "", targets[t].sm, targets[t].arch_specific ? "a" : "");
    tjs_buf_printf(b, ", %d warps, %d stages", num_warps, tjj_num_stages(num_stages));
    for (int i = 0; i < nconsts; i++)
        tjs_buf_printf(b, "%s %s = %lld", i ? "," : "; constants", kernel->consts[i], (long long)consts[i]);
    tjs_buf_printf(b, ".\n *\n * Generated code: edit the kernel and export it again instead. It needs the "
                   "CUDA driver\n * (libcuda.so.1, loaded at the first launch) and nothing else: no tjit, "
                   "no LLVM,\n * no cuda.h. Link with -ldl -lpthread.\n */\n");
}

static void put_header(tjs_buf *b, const char *name, const tj_kernel *kernel)
{
    char guard[128];
    snprintf(guard, sizeof guard, "TJIT_EXPORT_%s_H", name);
    for (char *c = guard; *c; c++)
        *c = (char)toupper((unsigned char)*c);
    tjs_buf_printf(b,
        "#ifndef %s\n#define %s\n\n#include <stdint.h>\n\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
        "/* The driver's types; include cuda.h before this header if at all. */\n"
        "#ifndef __cuda_cuda_h__\ntypedef int CUresult;\n#endif\n"
        "typedef struct CUstream_st *CUstream;\ntypedef unsigned long long CUdeviceptr;\n\n"
        "/* Launches %s on stream (NULL: the legacy default stream) over a grid of\n"
        " * grid_x * grid_y * grid_z programs in the CUDA context current on the\n"
        " * calling thread (cuCtxSetCurrent; the CUDA runtime makes the device's\n"
        " * primary context current). Asynchronous, as cuLaunchKernel; returns its\n"
        " * result, or the first failed driver call's: CUDA_ERROR_NO_DEVICE (100)\n"
        " * where libcuda.so.1 cannot be loaded, CUDA_ERROR_NOT_FOUND (500) where\n"
        " * it lacks a function, CUDA_ERROR_INVALID_CONTEXT (201) with no current\n"
        " * context, CUDA_ERROR_NO_BINARY_FOR_GPU (209) where no exported target\n"
        " * runs on its device. Where every pointer is 16-byte aligned it runs the\n"
        " * variant specialized for that, else the generic one. Pointers are device\n"
        " * addresses; f16/bf16 and f8 scalars are passed as their bits. Thread-safe.\n */\n"
        "CUresult %s(CUstream stream, unsigned grid_x, unsigned grid_y, unsigned grid_z",
        guard, guard, kernel->name, name);
    for (int i = 0; i < kernel->nparams; i++) {
        const char *pname = kernel->params[i].name;
        int clash = !strcmp(pname, "stream") || !strncmp(pname, "grid_", 5);
        tjs_buf_printf(b, ",\n    %s %s%s", c_type(&kernel->params[i]), pname, clash ? "_" : "");
    }
    tjs_buf_printf(b, ");\n\n/* Unloads the modules %s loaded in the current context (before that\n"
                   " * context is destroyed, if it is: the launcher keeps one set per context,\n"
                   " * found by the context's handle). The next launch loads them again. */\n"
                   "CUresult %s_unload(void);\n\n#ifdef __cplusplus\n}\n#endif\n\n#endif\n", name, name);
}

/* The driver binding, module cache and target choice every launcher shares. */
static const char runtime_text[] =
    "/* The driver functions used, resolved from libcuda.so.1 (handles as void *,\n"
    " * enums as int: the driver's ABI) */\n"
    "static struct {\n"
    "    int (*cuInit)(unsigned);\n"
    "    int (*cuCtxGetCurrent)(void **);\n"
    "    int (*cuCtxGetDevice)(int *);\n"
    "    int (*cuDeviceGetAttribute)(int *, int, int);\n"
    "    int (*cuModuleLoadData)(void **, const void *);\n"
    "    int (*cuModuleGetFunction)(void **, void *, const char *);\n"
    "    int (*cuModuleUnload)(void *);\n"
    "    int (*cuFuncSetAttribute)(void *, int, int);\n"
    "    int (*cuLaunchKernel)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,\n"
    "                          unsigned, void *, void **, void **);\n"
    "} tjx_cu;\n"
    "static int tjx_cu_status;\n"
    "static pthread_once_t tjx_once = PTHREAD_ONCE_INIT;\n\n"
    "static void tjx_resolve(void *lib, const char *symbol, void *fn)\n{\n"
    "    void *p = dlsym(lib, symbol);\n"
    "    if (!p)\n        tjx_cu_status = TJX_ERROR_NOT_FOUND;\n"
    "    memcpy(fn, &p, sizeof p); /* ISO C: a data pointer becomes a function pointer so */\n}\n\n"
    "static void tjx_load_driver(void)\n{\n"
    "    void *lib = dlopen(\"libcuda.so.1\", RTLD_NOW | RTLD_LOCAL);\n"
    "    if (!lib) {\n        tjx_cu_status = TJX_ERROR_NO_DEVICE;\n        return;\n    }\n"
    "    tjx_resolve(lib, \"cuInit\", &tjx_cu.cuInit);\n"
    "    tjx_resolve(lib, \"cuCtxGetCurrent\", &tjx_cu.cuCtxGetCurrent);\n"
    "    tjx_resolve(lib, \"cuCtxGetDevice\", &tjx_cu.cuCtxGetDevice);\n"
    "    tjx_resolve(lib, \"cuDeviceGetAttribute\", &tjx_cu.cuDeviceGetAttribute);\n"
    "    tjx_resolve(lib, \"cuModuleLoadData\", &tjx_cu.cuModuleLoadData);\n"
    "    tjx_resolve(lib, \"cuModuleGetFunction\", &tjx_cu.cuModuleGetFunction);\n"
    "    tjx_resolve(lib, \"cuModuleUnload\", &tjx_cu.cuModuleUnload);\n"
    "    tjx_resolve(lib, \"cuFuncSetAttribute\", &tjx_cu.cuFuncSetAttribute);\n"
    "    tjx_resolve(lib, \"cuLaunchKernel\", &tjx_cu.cuLaunchKernel);\n"
    "    if (tjx_cu_status == TJX_SUCCESS)\n        tjx_cu_status = tjx_cu.cuInit(0);\n"
    "    if (tjx_cu_status != TJX_SUCCESS)\n        dlclose(lib);\n}\n\n"
    "/* What one context has loaded: the target chosen for its device, and the\n"
    " * module and function of each variant used so far. */\n"
    "struct tjx_loaded {\n"
    "    void *context;\n"
    "    int target, from_cubin;\n"
    "    void *module[TJX_NVARIANTS], *function[TJX_NVARIANTS];\n"
    "    struct tjx_loaded *next;\n"
    "};\n"
    "static struct tjx_loaded *tjx_contexts;\n"
    "static pthread_mutex_t tjx_lock = PTHREAD_MUTEX_INITIALIZER;\n\n"
    "/* The target for a device of compute capability sm (10 * major + minor): a\n"
    " * cubin that runs there (same major, not newer; an 'a' target: that exact\n"
    " * chip), else PTX the driver can compile for it (not newer); the newest. */\n"
    "static int tjx_choose(int sm, int *target, int *from_cubin)\n{\n"
    "    int best = -1, best_rank = 0;\n"
    "    for (int t = 0; t < TJX_NTARGETS; t++) {\n"
    "        const struct tjx_image *im = &tjx_images[t][0];\n"
    "        int fits = im->arch_specific ? im->sm == sm : im->sm <= sm;\n"
    "        int cubin = fits && im->cubin && (im->arch_specific || im->sm / 10 == sm / 10);\n"
    "        int rank = !fits ? 0 : (cubin ? 100000 : 10000) + 2 * im->sm + im->arch_specific;\n"
    "        if (rank > best_rank) {\n            best = t;\n            best_rank = rank;\n"
    "            *from_cubin = cubin;\n        }\n    }\n"
    "    *target = best;\n"
    "    return best < 0 ? TJX_ERROR_NO_BINARY_FOR_GPU : TJX_SUCCESS;\n}\n\n"
    "static int tjx_new_context(void *context, struct tjx_loaded **out)\n{\n"
    "    int device = 0, major = 0, minor = 0, target = -1, from_cubin = 0;\n"
    "    int r = tjx_cu.cuCtxGetDevice(&device);\n"
    "    if (r == TJX_SUCCESS)\n"
    "        r = tjx_cu.cuDeviceGetAttribute(&major, TJX_ATTRIBUTE_CC_MAJOR, device);\n"
    "    if (r == TJX_SUCCESS)\n"
    "        r = tjx_cu.cuDeviceGetAttribute(&minor, TJX_ATTRIBUTE_CC_MINOR, device);\n"
    "    if (r == TJX_SUCCESS)\n        r = tjx_choose(10 * major + minor, &target, &from_cubin);\n"
    "    struct tjx_loaded *l = r == TJX_SUCCESS ? calloc(1, sizeof *l) : NULL;\n"
    "    if (r == TJX_SUCCESS && !l)\n        r = TJX_ERROR_OUT_OF_MEMORY;\n"
    "    if (r != TJX_SUCCESS)\n        return r;\n"
    "    l->context = context;\n    l->target = target;\n    l->from_cubin = from_cubin;\n"
    "    l->next = tjx_contexts;\n    tjx_contexts = l;\n    *out = l;\n    return r;\n}\n\n"
    "static int tjx_load_variant(struct tjx_loaded *l, int v)\n{\n"
    "    const struct tjx_image *im = &tjx_images[l->target][v];\n"
    "    void *module = NULL, *function = NULL;\n"
    "    int r = tjx_cu.cuModuleLoadData(&module, l->from_cubin ? (const void *)im->cubin\n"
    "                                                          : (const void *)im->ptx);\n"
    "    if (r == TJX_SUCCESS)\n        r = tjx_cu.cuModuleGetFunction(&function, module, im->entry);\n"
    "    if (r == TJX_SUCCESS && im->shared_bytes > TJX_SHARED_WITHOUT_OPT_IN)\n"
    "        r = tjx_cu.cuFuncSetAttribute(function, TJX_ATTRIBUTE_MAX_DYNAMIC_SHARED,\n"
    "                                      (int)im->shared_bytes);\n"
    "    if (r != TJX_SUCCESS && module)\n        tjx_cu.cuModuleUnload(module);\n"
    "    if (r == TJX_SUCCESS) {\n        l->module[v] = module;\n        l->function[v] = function;\n    }\n"
    "    return r;\n}\n\n"
    "/* The function of variant v in the current context, loaded at its first use. */\n"
    "static int tjx_function(int v, void **function, const struct tjx_image **image)\n{\n"
    "    pthread_once(&tjx_once, tjx_load_driver);\n"
    "    if (tjx_cu_status != TJX_SUCCESS)\n        return tjx_cu_status;\n"
    "    void *context = NULL;\n"
    "    int r = tjx_cu.cuCtxGetCurrent(&context);\n"
    "    if (r == TJX_SUCCESS && !context)\n        r = TJX_ERROR_INVALID_CONTEXT;\n"
    "    if (r != TJX_SUCCESS)\n        return r;\n"
    "    pthread_mutex_lock(&tjx_lock);\n"
    "    struct tjx_loaded *l = tjx_contexts;\n"
    "    while (l && l->context != context)\n        l = l->next;\n"
    "    if (!l)\n        r = tjx_new_context(context, &l);\n"
    "    if (r == TJX_SUCCESS && !l->function[v])\n        r = tjx_load_variant(l, v);\n"
    "    if (r == TJX_SUCCESS) {\n        *function = l->function[v];\n"
    "        *image = &tjx_images[l->target][v];\n    }\n"
    "    pthread_mutex_unlock(&tjx_lock);\n    return r;\n}\n\n"
    "static int tjx_unload(void)\n{\n"
    "    pthread_once(&tjx_once, tjx_load_driver);\n"
    "    if (tjx_cu_status != TJX_SUCCESS)\n        return tjx_cu_status;\n"
    "    void *context = NULL;\n"
    "    int r = tjx_cu.cuCtxGetCurrent(&context);\n"
    "    if (r != TJX_SUCCESS || !context)\n        return r;\n"
    "    pthread_mutex_lock(&tjx_lock);\n"
    "    struct tjx_loaded **at = &tjx_contexts;\n"
    "    while (*at && (*at)->context != context)\n        at = &(*at)->next;\n"
    "    struct tjx_loaded *l = *at;\n"
    "    if (l)\n        *at = l->next;\n"
    "    pthread_mutex_unlock(&tjx_lock);\n"
    "    for (int v = 0; l && v < TJX_NVARIANTS; v++)\n"
    "        if (l->module[v]) {\n            int u = tjx_cu.cuModuleUnload(l->module[v]);\n"
    "            if (r == TJX_SUCCESS)\n                r = u;\n        }\n"
    "    free(l);\n    return r;\n}\n\n";

static void put_source(tjs_buf *b, const char *name, const tj_kernel *kernel,
                       const export_target *targets, int ntargets, int nvariants)
{
    tjs_buf_printf(b, "#include \"%s.h\"\n\n#include <dlfcn.h>\n#include <pthread.h>\n#include <stddef.h>\n"
                   "#include <stdlib.h>\n#include <string.h>\n\n", name);
    tjs_buf_printf(b, "/* The driver's constants (cuda.h's values) */\nenum {\n"
                   "    TJX_SUCCESS = %d, TJX_ERROR_OUT_OF_MEMORY = %d, TJX_ERROR_NO_DEVICE = %d,\n"
                   "    TJX_ERROR_INVALID_CONTEXT = %d, TJX_ERROR_NO_BINARY_FOR_GPU = %d,\n"
                   "    TJX_ERROR_NOT_FOUND = %d, TJX_ATTRIBUTE_CC_MAJOR = %d, TJX_ATTRIBUTE_CC_MINOR = %d,\n"
                   "    TJX_ATTRIBUTE_MAX_DYNAMIC_SHARED = %d, TJX_SHARED_WITHOUT_OPT_IN = %d,\n"
                   "    TJX_NTARGETS = %d, TJX_NVARIANTS = %d\n};\n\n",
                   TJCU_SUCCESS, TJCU_ERROR_OUT_OF_MEMORY, TJCU_ERROR_NO_DEVICE,
                   TJCU_ERROR_INVALID_CONTEXT, TJCU_ERROR_NO_BINARY_FOR_GPU, TJCU_ERROR_NOT_FOUND,
                   TJCU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                   TJCU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                   TJCU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, SHARED_WITHOUT_OPT_IN, ntargets,
                   nvariants);
    static const char *const variant_names[NVARIANTS] = {
        "specialized: every pointer 16-byte aligned", "generic: nothing assumed of the arguments"};
    for (int t = 0; t < ntargets; t++)
        for (int v = 0; v < nvariants; v++) {
            const variant_code *c = &targets[t].v[v];
            tjs_buf_printf(b, "/* sm_%d%s, variant %d (%s) */\nstatic const char tjx_ptx_%d_%d[] =\n",
                           targets[t].sm, targets[t].arch_specific ? "a" : "", v,
                           nvariants == 1 ? "generic: the kernel has no pointer to specialize on"
                                          : variant_names[v], t, v);
            put_string(b, c->ptx);
            tjs_buf_printf(b, ";\n");
            if (c->cubin) {
                tjs_buf_printf(b, "static const unsigned char tjx_cubin_%d_%d[%zu] = {", t, v, c->cubin_size);
                put_bytes(b, (const unsigned char *)c->cubin, c->cubin_size);
                tjs_buf_printf(b, "\n};\n");
            }
            tjs_buf_printf(b, "\n");
        }
    tjs_buf_printf(b, "struct tjx_image {\n    int sm, arch_specific;\n    const char *ptx, *entry;\n"
                   "    const unsigned char *cubin; /* NULL: none (no ptxas at the export) */\n"
                   "    unsigned shared_bytes, threads;\n};\n"
                   "static const struct tjx_image tjx_images[TJX_NTARGETS][TJX_NVARIANTS] = {\n");
    for (int t = 0; t < ntargets; t++) {
        tjs_buf_printf(b, "    {");
        for (int v = 0; v < nvariants; v++) {
            const variant_code *c = &targets[t].v[v];
            char cubin[48] = "NULL";
            if (c->cubin)
                snprintf(cubin, sizeof cubin, "tjx_cubin_%d_%d", t, v);
            tjs_buf_printf(b, "%s{%d, %d, tjx_ptx_%d_%d, \"%s\", %s, %zu, %d}", v ? ",\n     " : "",
                           targets[t].sm, targets[t].arch_specific, t, v, c->entry, cubin,
                           c->shared_bytes, c->threads);
        }
        tjs_buf_printf(b, "},\n");
    }
    tjs_buf_printf(b, "};\n\n%s", runtime_text);

    tjs_buf_printf(b, "CUresult %s(CUstream stream, unsigned grid_x, unsigned grid_y, unsigned grid_z", name);
    for (int i = 0; i < kernel->nparams; i++)
        tjs_buf_printf(b, ",\n    %s p%d", c_type(&kernel->params[i]), i);
    tjs_buf_printf(b, ")\n{\n    /* the specialized variant (0) where every pointer is 16-byte aligned */\n"
                   "    int v = 0;\n");
    uint64_t spec = tjj_spec_of_buffers(kernel);
    for (int i = 0; nvariants == NVARIANTS && i < kernel->nparams; i++)
        if (spec & ((uint64_t)TJF_SPEC_ALIGN16 << (TJF_SPEC_BITS * i)))
            tjs_buf_printf(b, "    v |= (p%d & 15) != 0;\n", i);
    for (int i = 0; i < kernel->nparams; i++)
        if (kernel->params[i].dtype == TJ_I1 && !kernel->params[i].is_ptr)
            tjs_buf_printf(b, "    p%d = p%d != 0;\n", i, i);
    tjs_buf_printf(b, "    void *function = NULL;\n    const struct tjx_image *image = NULL;\n"
                   "    int r = tjx_function(v, &function, &image);\n    if (r != TJX_SUCCESS)\n"
                   "        return (CUresult)r;\n"
                   "    /* jit.h's GPU ABI: the parameters, then the assert record (none: 0) */\n"
                   "    unsigned long long assert_record = 0;\n    void *params[] = {");
    for (int i = 0; i < kernel->nparams; i++)
        tjs_buf_printf(b, "&p%d, ", i);
    tjs_buf_printf(b, "&assert_record};\n"
                   "    return (CUresult)tjx_cu.cuLaunchKernel(function, grid_x, grid_y, grid_z, image->threads,\n"
                   "                                           1, 1, image->shared_bytes, (void *)stream,\n"
                   "                                           params, NULL);\n}\n\n"
                   "CUresult %s_unload(void)\n{\n    return (CUresult)tjx_unload();\n}\n", name);
}

tj_status tjj_export_check_args(const char *who, const tj_kernel *kernel, const tj_export_opts *opts)
{
    if (!kernel)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: kernel is NULL", who);
    if (!opts)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: opts is NULL (start from TJ_EXPORT_OPTS_INIT)", who);
    if (opts->size != sizeof(tj_export_opts))
        return tjs_error(TJ_ERR_INVALID_ARG,
                         "%s: opts->size is %zu; tjit %s knows tj_export_opts of %zu bytes (start from "
                         "TJ_EXPORT_OPTS_INIT)", who, opts->size, TJ_VERSION_STRING, sizeof(tj_export_opts));
    return TJ_OK;
}

tj_status tjj_export_write_file(const char *who, const char *path, const void *data, size_t size)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: cannot create %s: %s", who, path, strerror(errno));
    size_t wrote = fwrite(data, 1, size, f);
    int failed = wrote != size || ferror(f);
    if (fclose(f) != 0 || failed)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: cannot write %s: %s", who, path, strerror(errno));
    return TJ_OK;
}

/* Compiles and writes; targets' code is the caller's to free. */
static tj_status export_c(const tj_kernel *kernel, const int64_t *consts, int nconsts,
                          const tj_export_opts *opts, export_target *targets, int *ntargets)
{
    int num_warps = opts->num_warps ? opts->num_warps : DEFAULT_NUM_WARPS;
    if (!tjj_valid_num_warps(num_warps))
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: opts->num_warps = %d (a power of two from 1 to %d, "
                         "or 0 for %d)", who, opts->num_warps, MAX_NUM_WARPS, DEFAULT_NUM_WARPS);
    if (opts->num_stages < 0 || opts->num_stages > MAX_NUM_STAGES)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: opts->num_stages = %d (1 to %d, or 0 for %d)", who,
                         opts->num_stages, MAX_NUM_STAGES, TJJ_DEFAULT_NUM_STAGES);
    const char *output = opts->output ? opts->output : kernel->name;
    const char *name;
    tj_status st = tjj_export_launcher_name(who, output, &name);
    if (st == TJ_OK)
        st = parse_targets(opts->targets ? opts->targets : "sm_80", targets, ntargets);
    if (st != TJ_OK)
        return st;
    for (int i = 0; i < kernel->nparams; i++)
        if (!c_type(&kernel->params[i]))
            return tjs_error(TJ_ERR_INVALID_ARG, "%s: kernel '%s': parameter %d ('%s') has no dtype "
                             "tjit knows", who, kernel->name, i + 1, kernel->params[i].name);
    char *found = NULL;
    const char *ptxas = opts->ptxas ? opts->ptxas : tjj_ptxas_path();
    if (!ptxas)
        ptxas = found = ptxas_in_path();
    if (ptxas && !*ptxas)
        ptxas = NULL;
    uint64_t spec = tjj_spec_of_buffers(kernel);
    int nvariants = spec ? NVARIANTS : 1;
    for (int t = 0; t < *ntargets && st == TJ_OK; t++)
        for (int v = 0; v < nvariants && st == TJ_OK; v++)
            st = compile_variant(kernel, consts, nconsts, &targets[t], num_warps, opts->num_stages,
                                 nvariants == 1 || v == 1 ? 0 : spec, ptxas, &targets[t].v[v]);
    free(found);
    if (st != TJ_OK)
        return st;

    tjs_buf h = {0}, c = {0};
    char *h_path = tjs_asprintf("%s.h", output), *c_path = tjs_asprintf("%s.c", output);
    char *h_file = tjs_asprintf("%s.h", name), *c_file = tjs_asprintf("%s.c", name);
    put_banner(&h, h_file, kernel, consts, nconsts, targets, *ntargets, num_warps, opts->num_stages);
    put_header(&h, name, kernel);
    put_banner(&c, c_file, kernel, consts, nconsts, targets, *ntargets, num_warps, opts->num_stages);
    put_source(&c, name, kernel, targets, *ntargets, nvariants);
    st = tjj_export_write_file(who, h_path, h.data, h.len);
    if (st == TJ_OK)
        st = tjj_export_write_file(who, c_path, c.data, c.len);
    tjs_buf_free(&h);
    tjs_buf_free(&c);
    free(h_path);
    free(c_path);
    free(h_file);
    free(c_file);
    return st;
}

tj_status tj_kernel_export_c(const tj_kernel *kernel, const int64_t *consts, int nconsts,
                             const tj_export_opts *opts)
{
    tjs_clear_error();
    tj_status checked = tjj_export_check_args(who, kernel, opts);
    if (checked != TJ_OK)
        return checked;
    export_target targets[MAX_TARGETS];
    memset(targets, 0, sizeof targets);
    int ntargets = 0;
    tj_status st = export_c(kernel, consts, nconsts, opts, targets, &ntargets);
    for (int t = 0; t < MAX_TARGETS; t++)
        for (int v = 0; v < NVARIANTS; v++) {
            free(targets[t].v[v].ptx);
            free(targets[t].v[v].entry);
            free(targets[t].v[v].cubin);
        }
    return st;
}
