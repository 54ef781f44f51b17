/* SPDX-License-Identifier: MIT */
/*
 * test_aot_export.c — tj_kernel_export_c (src/jit/runtime/export_c.c).
 *
 * Without arguments, a TAP test of the export's refusals: no kernel, no
 * options, options of another size, a bad target list, an output whose
 * last component is no C identifier, a kernel with a device assert (which
 * an exported launcher could not report) — each a clear error, and no
 * file written — and of one export, whose files hold both variants; and
 * tj_kernel_export_cpu's refusal of a kernel that calls tjit's runtime.
 *
 * With an argument DIR, it exports aot_vadd (out = x + scale * y over n
 * floats, masked) to DIR/aot_vadd.h and DIR/aot_vadd.c for sm_80 and
 * sm_90a, and aot_scalars (one variant: no pointer to specialize on) to
 * DIR/aot_scalars.*, and aot_vadd for this CPU (tj_kernel_export_cpu) to
 * DIR/aot_vadd_cpu.o, .h and .c, and exits 0 on success: tests/test_aot.sh
 * builds programs from them.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "tjit.h"

TJ_KERNEL(aot_vadd,
          TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(y, f32), TJ_PTR(out, f32), TJ_SCALAR(n, i32),
                    TJ_SCALAR(scale, f32)),
          TJ_CONSTS(BLOCK))
{
    tj_val offs = tj_add(tj_mul(tj_program_id(0), BLOCK), tj_arange(0, BLOCK));
    tj_val mask = tj_lt(offs, n);
    tj_val a = tj_load(tj_add(x, offs), .mask = mask);
    tj_val b = tj_load(tj_add(y, offs), .mask = mask);
    tj_store(tj_add(out, offs), tj_add(a, tj_mul(scale, b)), .mask = mask);
}

TJ_KERNEL(aot_asserting, TJ_PARAMS(TJ_PTR(x, f32), TJ_SCALAR(n, i32)), TJ_CONSTS())
{
    tj_device_assert(tj_gt(n, 0), "n must be positive");
    tj_store(x, tj_mul(tj_load(x), 2.0f));
}

/* No pointer to specialize on (out is NOSPEC): one variant; scalars of
 * every width the launcher passes. */
TJ_KERNEL(aot_scalars,
          TJ_PARAMS(TJ_PTR_NOSPEC(out, f32), TJ_SCALAR(h, f16), TJ_SCALAR(flag, i1), TJ_SCALAR(k, i64),
                    TJ_SCALAR(b, u8), TJ_SCALAR(d, f64)),
          TJ_CONSTS())
{
    tj_val sum = tj_add(tj_add(tj_cast(h, TJ_F32), tj_cast(k, TJ_F32)),
                        tj_add(tj_cast(b, TJ_F32), tj_cast(d, TJ_F32)));
    tj_store(out, tj_where(flag, sum, 0.0f));
}

static const int64_t block[] = {256};

static tj_status export_vadd(const char *output)
{
    tj_export_opts opts = TJ_EXPORT_OPTS_INIT;
    opts.targets = "sm_80,sm_90a";
    opts.output = output;
    return tj_kernel_export_c(aot_vadd, block, 1, &opts);
}

/* A refusal: status want, a message containing what, and no file. */
static void refused(tj_status st, tj_status want, const char *what, const char *base, const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s.c", base);
    int ok = st == want && strstr(tj_last_error(), what) && access(path, F_OK) != 0;
    tap_ok(ok, "%s: %s", name, tj_status_name(st));
    if (!ok)
        tap_diag("want %s with \"%s\"; got: %s", tj_status_name(want), what, tj_last_error());
}

static int contains(const char *path, const char *text)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char line[4096];
    int found = 0;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, text) != NULL;
    fclose(f);
    return found;
}

int main(int argc, char **argv)
{
    if (argc == 2) {
        char path[512];
        snprintf(path, sizeof path, "%s/aot_vadd", argv[1]);
        tj_status st = export_vadd(path);
        tj_export_opts opts = TJ_EXPORT_OPTS_INIT;
        snprintf(path, sizeof path, "%s/aot_scalars", argv[1]);
        opts.output = path;
        if (st == TJ_OK)
            st = tj_kernel_export_c(aot_scalars, NULL, 0, &opts);
        snprintf(path, sizeof path, "%s/aot_vadd_cpu", argv[1]);
        if (st == TJ_OK)
            st = tj_kernel_export_cpu(aot_vadd, block, 1, &opts);
        if (st != TJ_OK)
            fprintf(stderr, "test_aot_export: %s: %s\n", tj_status_name(st), tj_last_error());
        return st == TJ_OK ? 0 : 1;
    }
    char dir[] = "/tmp/tjit_aot_XXXXXX";
    if (!mkdtemp(dir))
        tap_bail_out("mkdtemp failed");
    char base[256], bad[300], h[300], c[300];
    snprintf(base, sizeof base, "%s/aot_vadd", dir);
    snprintf(bad, sizeof bad, "%s/2bad-name", dir);

    tj_export_opts opts = TJ_EXPORT_OPTS_INIT;
    opts.output = base;
    refused(tj_kernel_export_c(NULL, block, 1, &opts), TJ_ERR_INVALID_ARG, "kernel is NULL", base,
            "no kernel");
    refused(tj_kernel_export_c(aot_vadd, block, 1, NULL), TJ_ERR_INVALID_ARG, "TJ_EXPORT_OPTS_INIT",
            base, "no options");
    opts.size = 8;
    refused(tj_kernel_export_c(aot_vadd, block, 1, &opts), TJ_ERR_INVALID_ARG, "opts->size is 8",
            base, "options of another size");
    opts.size = sizeof opts;
    opts.targets = "sm_80,,sm_90";
    refused(tj_kernel_export_c(aot_vadd, block, 1, &opts), TJ_ERR_INVALID_ARG, "separated by commas",
            base, "an empty target");
    opts.targets = "sm_70";
    refused(tj_kernel_export_c(aot_vadd, block, 1, &opts), TJ_ERR_INVALID_ARG, "sm_80 or newer", base,
            "a target below sm_80");
    opts.targets = "sm_90,sm_90";
    refused(tj_kernel_export_c(aot_vadd, block, 1, &opts), TJ_ERR_INVALID_ARG, "names sm_90 twice",
            base, "a target twice");
    opts.targets = NULL;
    opts.num_warps = 3;
    refused(tj_kernel_export_c(aot_vadd, block, 1, &opts), TJ_ERR_INVALID_ARG, "num_warps = 3", base,
            "num_warps 3");
    opts.num_warps = 0;
    opts.output = bad;
    refused(tj_kernel_export_c(aot_vadd, block, 1, &opts), TJ_ERR_INVALID_ARG,
            "must be a C identifier", bad, "an output that names no C identifier");
    opts.output = base;
    refused(tj_kernel_export_c(aot_asserting, NULL, 0, &opts), TJ_ERR_UNSUPPORTED,
            "1 device assert (the first at", base, "a kernel with a device assert");
    refused(tj_kernel_export_c(aot_vadd, NULL, 0, &opts), TJ_ERR_INVALID_ARG, "takes 1 constants, got 0", base,
            "a missing constant");

    tj_status st = export_vadd(base);
    tap_ok(st == TJ_OK, "aot_vadd exports: %s", st == TJ_OK ? "ok" : tj_last_error());
    snprintf(h, sizeof h, "%s.h", base);
    snprintf(c, sizeof c, "%s.c", base);
    tap_ok(contains(h, "CUresult aot_vadd(CUstream stream, unsigned grid_x") &&
               contains(h, "CUdeviceptr out,") && contains(h, "float scale);") &&
               contains(h, "CUresult aot_vadd_unload(void);"),
           "the header declares the typed launcher and the unload");
    tap_ok(contains(c, "/* sm_80, variant 0 (specialized") && contains(c, "/* sm_80, variant 1 (generic") &&
               contains(c, "/* sm_90a, variant 0 (specialized") &&
               contains(c, "/* sm_90a, variant 1 (generic"),
           "the source embeds both variants for both targets");
    tap_ok(contains(c, "v |= (p0 & 15) != 0;") && contains(c, "v |= (p2 & 15) != 0;") &&
               !contains(c, "(p3 & 15)"),
           "the launcher tests the alignment of the pointers, and only of them");
    tap_ok(contains(h, "SPDX-License-Identifier: MIT") && contains(c, "SPDX-License-Identifier: MIT") &&
               contains(c, "constants BLOCK = 256"),
           "both files open with the license and what was exported");
    remove(h);
    remove(c);

    snprintf(base, sizeof base, "%s/aot_scalars", dir);
    snprintf(h, sizeof h, "%s.h", base);
    snprintf(c, sizeof c, "%s.c", base);
    opts.output = base;
    st = tj_kernel_export_c(aot_scalars, NULL, 0, &opts);
    tap_ok(st == TJ_OK, "aot_scalars exports: %s", st == TJ_OK ? "ok" : tj_last_error());
    tap_ok(contains(h, "uint16_t h,") && contains(h, "uint8_t flag,") && contains(h, "int64_t k,") &&
               contains(h, "uint8_t b,") && contains(h, "double d);"),
           "its scalars' C types: f16 as its bits, i1 as a byte");
    tap_ok(contains(c, "/* sm_80, variant 0 (generic: the kernel has no pointer") &&
               !contains(c, "variant 1") && !contains(c, "& 15"),
           "one variant, and no alignment test, without a pointer to specialize on");
    remove(h);
    remove(c);

    snprintf(base, sizeof base, "%s/aot_cpu", dir);
    opts.output = base;
    refused(tj_kernel_export_cpu(aot_asserting, NULL, 0, &opts), TJ_ERR_UNSUPPORTED,
            "calls tjit's runtime (tjj_rt_assert_fail", base, "the CPU: a kernel with a device assert");
    refused(tj_kernel_export_cpu(aot_vadd, block, 1, NULL), TJ_ERR_INVALID_ARG, "TJ_EXPORT_OPTS_INIT",
            base, "the CPU: no options");
    opts.output = bad;
    refused(tj_kernel_export_cpu(aot_vadd, block, 1, &opts), TJ_ERR_INVALID_ARG,
            "must be a C identifier", bad, "the CPU: an output that names no C identifier");
    rmdir(dir);
    return tap_done();
}
