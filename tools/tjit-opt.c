/* SPDX-License-Identifier: MIT */
/*
 * tjit-opt — tjit's passes on IR text, as mlir-opt and triton-opt are.
 *
 *     tjit-opt [options] [--PASS ...] [FILE | -]
 *
 * reads the tile IR tjit prints (TJIT_DUMP=ir, tj_kernel_ir, or this
 * program's own output, layouts included), runs the named passes in the
 * order given and prints the result with what the passes found: layouts
 * once assigned, axis info, the coalescing choices, the CPU's fusion plan.
 * The passes are the library's own (src/passes/registry.c), so a test of
 * tjit-opt is a test of what a compile runs; the tests under tests/ir are such tests,
 * checked with LLVM's FileCheck. Any bad option or text is an error on
 * stderr with a nonzero exit.
 *
 * The GPU back end's own check before the layout passes (no tile too big
 * for the registers, src/jit/gpu/kernel.c) is added here, not in the
 * registry: src/passes is below the back ends, which call it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jit/jit.h"
#include "passes/passes.h"

static tj_status run_check_tile_sizes(tjp_pass_state *s)
{
    return tjj_gpu_check_tile_sizes(s->fn, s->num_warps);
}

static const tjp_pass_info backend_passes[] = {
    {"check-tile-sizes", "the GPU's check that no tile needs more registers per thread than "
     "allowed at num_warps", run_check_tile_sizes},
};
#define NBACKEND ((int)(sizeof backend_passes / sizeof *backend_passes))

/* The pass named name: the registry's, else the back end's; NULL if none. */
static const tjp_pass_info *find_pass(const char *name)
{
    const tjp_pass_info *p = tjp_find_pass(name);
    for (int i = 0; !p && i < NBACKEND; i++)
        if (strcmp(backend_passes[i].name, name) == 0)
            p = &backend_passes[i];
    return p;
}

static void usage(FILE *to)
{
    int n;
    const tjp_pass_info *passes = tjp_pass_table(&n);
    fprintf(to, "usage: tjit-opt [options] [--PASS ...] [FILE | -]\n"
                "Reads tjit's tile IR (FILE, or stdin), runs the passes in the order given and "
                "prints the result.\n\noptions:\n"
                "  --num-warps=N  warps per program for the GPU passes (1..32, a power of two; "
                "default 4)\n"
                "  --num-stages=N stages of --pipeline-loops (1..8; default 3)\n"
                "  --spec=LIST    what is known of each kernel argument, one item per "
                "parameter, comma-separated:\n"
                "                 a16 (pointer: 16-byte aligned), d16 (integer: a multiple of "
                "16), one (integer: 1), - (nothing)\n"
                "  --sm=N         the GPU target for accelerate-dot and pipeline-loops (sm_N, 90a:\n"
                "                 sm_90a with wgmma; 0: none; default 80)\n"
                "  -o FILE        write the result to FILE\n"
                "  --help         this text\n\npasses:\n");
    for (int i = 0; i < n; i++)
        fprintf(to, "  --%-23s %s\n", passes[i].name, passes[i].help);
    for (int i = 0; i < NBACKEND; i++)
        fprintf(to, "  --%-23s %s\n", backend_passes[i].name, backend_passes[i].help);
}

static int fail(const char *fmt, const char *arg)
{
    fprintf(stderr, "tjit-opt: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n");
    return 1;
}

static char *read_all(FILE *f)
{
    size_t len = 0, cap = 4096;
    char *data = malloc(cap);
    size_t got;
    while (data && (got = fread(data + len, 1, cap - len - 1, f)) > 0) {
        len += got;
        if (cap - len - 1 == 0) {
            char *bigger = realloc(data, cap * 2);
            if (!bigger) {
                free(data);
                return NULL;
            }
            data = bigger;
            cap *= 2;
        }
    }
    if (!data || ferror(f)) {
        free(data);
        return NULL;
    }
    data[len] = 0;
    if (strlen(data) != len) { /* a NUL inside: not text */
        free(data);
        errno = EINVAL;
        return NULL;
    }
    return data;
}

/* --spec=a16,d16,-: one item per parameter. */
static int parse_spec(const char *list, tjp_pass_state *s)
{
    int nparams = s->fn->nparams;
    s->spec = calloc((size_t)nparams + 1, sizeof *s->spec);
    if (!s->spec)
        return fail("%s", "out of memory");
    int i = 0;
    for (const char *p = list; *p; i++) {
        size_t n = strcspn(p, ",");
        if (i >= nparams)
            return fail("--spec: more items than the kernel's parameters (at '%s')", p);
        const tji_type *t = tji_typeof(s->fn, s->fn->params[i].value);
        if (n == 3 && !strncmp(p, "a16", 3) && t->is_ptr)
            s->spec[i].ptr_align16 = 1;
        else if (n == 3 && !strncmp(p, "d16", 3) && !t->is_ptr && tjs_dtype_is_int(t->dtype))
            s->spec[i].int_div16 = 1;
        else if (n == 3 && !strncmp(p, "one", 3) && !t->is_ptr && tjs_dtype_is_int(t->dtype))
            s->spec[i].is_one = 1;
        else if (!(n == 1 && *p == '-'))
            return fail("--spec: '%s' is not a16 (pointers), d16 or one (integers) or - for "
                        "that parameter", p);
        p += n;
        if (*p == ',' && *++p == 0)
            return fail("%s", "--spec: an empty item at the end");
    }
    if (i != nparams) {
        fprintf(stderr, "tjit-opt: --spec: %d items for %d parameters\n", i, nparams);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *input = NULL, *output = NULL, *spec = NULL;
    const tjp_pass_info **order = calloc((size_t)argc + 1, sizeof *order);
    int norder = 0, num_warps = 4, num_stages = 3, sm = 80, arch_specific = 0;
    if (!order)
        return fail("%s", "out of memory");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            free(order);
            return 0;
        } else if (!strncmp(a, "--num-warps=", 12)) {
            char *end;
            long n = strtol(a + 12, &end, 10);
            if (end == a + 12 || *end || n < 1 || n > 32 || (n & (n - 1)))
                return free(order), fail("--num-warps: '%s' is not a power of two from 1 to 32",
                                         a + 12);
            num_warps = (int)n;
        } else if (!strncmp(a, "--num-stages=", 13)) {
            char *end;
            long n = strtol(a + 13, &end, 10);
            if (end == a + 13 || *end || n < 1 || n > TJP_MAX_STAGES)
                return free(order), fail("--num-stages: '%s' is not a number from 1 to 8 "
                                         "(TJP_MAX_STAGES)", a + 13);
            num_stages = (int)n;
        } else if (!strncmp(a, "--sm=", 5)) {
            char *end;
            long n = strtol(a + 5, &end, 10);
            arch_specific = *end == 'a' && n >= 90;
            if (end == a + 5 || end[arch_specific] || n < 0 || n > 1000)
                return free(order), fail("--sm: '%s' is not a target such as 80, 90 or 90a", a + 5);
            sm = (int)n;
        } else if (!strncmp(a, "--spec=", 7)) {
            spec = a + 7;
        } else if (!strcmp(a, "-o")) {
            if (++i == argc)
                return free(order), fail("%s", "-o: a file name is missing");
            output = argv[i];
        } else if (!strncmp(a, "--", 2)) {
            const tjp_pass_info *p = find_pass(a + 2);
            if (!p) {
                free(order);
                fail("unknown pass or option '%s'", a);
                usage(stderr);
                return 1;
            }
            order[norder++] = p;
        } else if (input) {
            return free(order), fail("more than one input file ('%s')", a);
        } else if (a[0] == '-' && a[1]) {
            return free(order), fail("unknown option '%s' (see --help)", a);
        } else {
            input = a;
        }
    }
    FILE *in = !input || !strcmp(input, "-") ? stdin : fopen(input, "r");
    if (!in)
        return free(order), fail("cannot open '%s'", input);
    char *text = read_all(in);
    if (in != stdin)
        fclose(in);
    if (!text)
        return free(order), fail("cannot read '%s' (or it holds a NUL byte)",
                                 input ? input : "-");
    tjp_pass_state s = {.num_warps = num_warps, .num_stages = num_stages, .sm = sm,
                         .arch_specific = arch_specific};
    tj_status st = tjp_parse_annotated(text, input && strcmp(input, "-") ? input : "<stdin>",
                                       &s.fn, &s.layouts);
    free(text);
    if (st != TJ_OK)
        return free(order), fail("%s", tj_last_error());
    s.has_layouts = s.layouts.of != NULL;
    if (s.has_layouts && s.layouts.num_warps != num_warps) {
        /* a program read with layouts keeps its own number of warps */
        s.num_warps = s.layouts.num_warps;
    }
    int rc = spec ? parse_spec(spec, &s) : 0;
    for (int i = 0; rc == 0 && i < norder; i++) {
        st = order[i]->run(&s);
        if (st != TJ_OK) {
            fprintf(stderr, "tjit-opt: --%s: %s\n", order[i]->name, tj_last_error());
            rc = 1;
        }
    }
    if (rc == 0) {
        tjp_annotations notes = tjp_pass_annotations(&s);
        char *out = tjp_print_annotated(s.fn, &notes);
        FILE *to = output ? fopen(output, "w") : stdout;
        if (!to) {
            rc = fail("cannot write '%s'", output);
        } else {
            if (fputs(out, to) == EOF)
                rc = fail("cannot write '%s'", output ? output : "stdout");
            if (to != stdout && fclose(to) != 0)
                rc = fail("cannot write '%s'", output);
        }
        free(out);
    }
    tjp_pass_state_free(&s);
    free(order);
    return rc;
}
