/* SPDX-License-Identifier: MIT */
/*
 * test_parse.c — the IR's text read back (src/builder/parse.c) and the
 * layout plan's annotations (src/passes/plan_text.c).
 *
 * Checks: a kernel using every op family and attribute prints, parses and
 * prints the same text, keeps its value ids, and owns its location file
 * names; after the GPU layout passes, for 1..8 warps, the annotated text
 * (layouts, access widths, shared steps with their swizzles and offsets,
 * the allocation, barriers) reads back to a plan that passes
 * tjp_check_layouts, prints the same, holds the same shared steps and
 * barriers, and compiles to the same PTX (an edited swizzle to other PTX:
 * code generation executes the plan read); tjp_check_roundtrip passes on both
 * and fails, naming the kernel, where the text cannot read back; bad text
 * gets "line:column: expected ..." (a table of cases); and every prefix and
 * a few hundred byte mutations of a valid text parse or fail cleanly (the
 * sanitizer builds make a crash or leak visible).
 */
#include <stdlib.h>
#include <string.h>

#include "builder/ir.h"
#include "jit/jit.h"
#include "jit/pipeline.h"
#include "passes/passes.h"
#include "tap.h"

TJ_KERNEL(all_ops,
          TJ_PARAMS(TJ_PTR(x, f16), TJ_PTR(out, f32), TJ_PTR(counts, i32), TJ_PTR(bytes, u8),
                    TJ_SCALAR(n, i32)),
          TJ_CONSTS(BLOCK))
{
    tj_val r = tj_expand_dims(tj_arange(0, BLOCK), 1);
    tj_val c = tj_expand_dims(tj_arange(0, 4), 0);
    tj_val offs = tj_multiple_of(tj_add(tj_mul(r, 4), c), 4);
    tj_val v = tj_load(tj_add(x, offs), .mask = tj_lt(offs, n), .other = tj_f16(0.1),
                       .cache = TJ_CACHE_CG);
    tj_val w = tj_where(tj_gt(v, 0), tj_fma(v, v, v),
                        tj_cast(tj_broadcast_to(c, TJ_SHAPE(BLOCK, 4)), TJ_F16));
    tj_val t = tj_reshape(tj_permute(w, TJ_SHAPE(1, 0)), TJ_SHAPE(4 * BLOCK));
    tj_val acc = tj_full(TJ_SHAPE(BLOCK), 1.5, TJ_F32);
    w = tj_add(w, tj_f16(2000.5)); /* shortest f16 digits "2e+03": an integer */
    TJ_FOR(i, 0, n, 1, &acc) {
        acc = tj_add(acc, tj_sum(tj_cast(tj_mul(w, i), TJ_F32), 1));
        TJ_IF(tj_gt(i, 3)) {
            tj_store(tj_add(out, tj_arange(0, BLOCK)), acc);
        }
    }
    TJ_IF(tj_gt(tj_max(t, 0, .propagate_nan = TJ_PROPAGATE_NAN_ALL), 3), &acc) {
        acc = tj_fast_div(tj_neg(acc), 3.25);
    }
    TJ_ELSE {
        acc = tj_fast_exp(tj_cumsum(acc, 0));
    }
    tj_val u = tj_load(tj_add(bytes, tj_arange(0, BLOCK)), .is_volatile = 1);
    tj_store(tj_add(bytes, tj_arange(0, BLOCK)), tj_xor(u, (uint8_t)200),
             .evict = TJ_EVICT_FIRST);
    tj_atomic_add(tj_add(counts, tj_argmax(acc, 0)), 1);
    tj_atomic_cas(tj_add(counts, tj_num_programs(0)), 0, tj_program_id(0));
    tj_print("acc \"q\"\n", acc);
    tj_device_assert(tj_lt(tj_min(acc, 0), 1e6), "bounded\\");
    tj_store(tj_add(out, tj_arange(0, BLOCK)), tj_sqrt(tj_abs(acc)),
             .mask = tj_lt(tj_arange(0, BLOCK), n));
}

/* A 2-D tile through shared memory (a transpose) and reductions. */
TJ_KERNEL(transpose, TJ_PARAMS(TJ_PTR(src, f32), TJ_PTR(dst, f32)), TJ_CONSTS(B))
{
    tj_val r = tj_expand_dims(tj_arange(0, B), 1), c = tj_expand_dims(tj_arange(0, B), 0);
    tj_val v = tj_load(tj_add(src, tj_add(tj_mul(r, B), c)));
    tj_store(tj_add(dst, tj_add(tj_mul(c, B), r)), v);
    tj_store(tj_add(dst, tj_arange(0, B)), tj_sum(v, 0));
}

static int first_diff_line(const char *a, const char *b)
{
    int line = 1;
    for (; *a && *a == *b; a++, b++)
        line += *a == '\n';
    return *a == *b ? 0 : line;
}

static void round_trip_plain(tji_func *fn)
{
    char *text = tji_print(fn);
    tji_func *back = NULL;
    tj_status st = tji_parse(text, "all_ops", NULL, &back);
    tap_ok(st == TJ_OK, "the printed IR parses and verifies (%s)", st ? tj_last_error() : "ok");
    if (st == TJ_OK) {
        char *again = tji_print(back);
        int d = first_diff_line(text, again);
        tap_ok(d == 0, "print(parse(print(ir))) == print(ir) (first difference: line %d)", d);
        tap_ok(back->nvalues == fn->nvalues && back->nparams == fn->nparams &&
                   back->nconsts == fn->nconsts && back->const_values[0] == fn->const_values[0],
               "value ids, parameters and constants are kept");
        int owned = 1, located = 0;
        for (int32_t i = 0; i < back->nops; i++)
            if (back->ops[i].loc.file) {
                located++;
                owned &= strcmp(back->ops[i].loc.file, "test_parse.c") == 0 &&
                         back->ops[i].loc.file != fn->ops[0].loc.file;
            }
        tap_ok(located > 20 && owned, "locations read back (%d ops), their file names the "
               "parsed program's own", located);
        free(again);
        tji_func_free(back);
    }
    free(text);
}

/* A summary of plan's shared steps and barriers (op indices differ
 * between a program and its text read back: the parser numbers ops in
 * text order), into out: per step kind the count, offsets, bytes and
 * barriers at them; then the allocation. */
static void shared_summary(const tjp_layout_plan *p, int32_t nops, uint64_t out[5][4])
{
    memset(out, 0, sizeof(uint64_t) * 5 * 4);
    for (int32_t i = 0; p->shared && p->barrier && i < nops; i++) {
        const tjp_shared_step *x = &p->shared[i];
        uint64_t *k = out[x->kind];
        k[0]++;
        k[1] += x->offset + 3 * x->index_offset;
        k[2] += x->bytes + 3 * x->index_bytes;
        k[3] += p->barrier[i];
    }
    out[0][1] = p->shared_bytes;
    out[0][2] = (uint64_t)p->shared_allocated;
    out[0][3] = 0;
    for (int32_t i = 0; p->barrier && i < nops; i++)
        out[0][3] += (uint64_t)__builtin_popcount(p->barrier[i]);
}

static int same_shared_plan(const tjp_layout_plan *a, int32_t na, const tjp_layout_plan *b,
                            int32_t nb)
{
    uint64_t x[5][4], y[5][4];
    shared_summary(a, na, x);
    shared_summary(b, nb, y);
    return a->shared && b->shared && a->barrier && b->barrier && memcmp(x, y, sizeof x) == 0;
}

/* The PTX of fn under plan (malloc'ed), or NULL. */
static char *ptx_of(const tji_func *fn, const tjp_layout_plan *plan)
{
    tjj_gpu_code code = {0};
    if (tjj_gpu_compile(fn, plan, 90, 0, NULL, &code) != TJ_OK)
        return NULL;
    char *ptx = code.ptx;
    code.ptx = NULL;
    tjj_gpu_code_free(&code);
    return ptx;
}

/* The transpose's plan read back compiles to the PTX of the plan printed;
 * with its swizzle edited in the text, to other PTX. */
static void plan_read_back_compiles(const tji_func *fn, const tjp_layout_plan *plan,
                                    const char *text)
{
    tji_func *back = NULL, *edited = NULL;
    tjp_layout_plan back_plan = {0}, edited_plan = {0};
    char *swapped = strdup(text), *at = strstr(swapped, "swizzle=[32->1,");
    if (at)
        at[strlen("swizzle=[32->")] = '3';
    char *ptx = ptx_of(fn, plan), *back_ptx = NULL, *edited_ptx = NULL;
    if (tjp_parse_annotated(text, "t", &back, &back_plan) == TJ_OK)
        back_ptx = ptx_of(back, &back_plan);
    if (at && tjp_parse_annotated(swapped, "t", &edited, &edited_plan) == TJ_OK)
        edited_ptx = ptx_of(edited, &edited_plan);
    tap_ok(ptx && back_ptx && strcmp(ptx, back_ptx) == 0,
           "transpose: the plan read back compiles to the same PTX");
    tap_ok(ptx && edited_ptx && strcmp(ptx, edited_ptx) != 0 &&
               edited_plan.shared && strstr(swapped, "swizzle=[32->3,"),
           "transpose: a swizzle edited in the text is the one code generation uses");
    free(ptx);
    free(back_ptx);
    free(edited_ptx);
    free(swapped);
    tji_func_free(back);
    tji_func_free(edited);
    tjp_layout_plan_free(&back_plan);
    tjp_layout_plan_free(&edited_plan);
}

/* fn's plan after every GPU pass (src/jit/pipeline.c's tjj_gpu_plan). */
static tj_status gpu_plan(tji_func *fn, int warps, tjp_layout_plan *plan)
{
    tjj_gpu_planned out = {0};
    tj_status st = tjj_gpu_plan(fn, &(tjj_gpu_target){.num_warps = warps}, &out);
    *plan = out.plan;
    out.plan = (tjp_layout_plan){0};
    tjj_gpu_planned_free(&out);
    return st;
}

static void round_trip_layouts(const tj_kernel *k, int64_t c)
{
    for (int warps = 1; warps <= 8; warps *= 2) {
        tji_func *fn = NULL;
        tjp_layout_plan plan = {0};
        tj_status st = tji_build(k, &c, 1, &fn);
        if (st == TJ_OK)
            st = gpu_plan(fn, warps, &plan);
        if (!tap_ok(st == TJ_OK, "%s, %d warps: layouts, shared steps and barriers planned",
                    k->name, warps)) {
            tap_diag("  %s", tj_last_error());
            tji_func_free(fn);
            continue;
        }
        tjp_annotations notes = {.layouts = &plan};
        char *text = tjp_print_annotated(fn, &notes);
        tji_func *back = NULL;
        tjp_layout_plan back_plan = {0};
        st = tjp_parse_annotated(text, k->name, &back, &back_plan);
        tap_ok(st == TJ_OK && strstr(text, "#L1 = linear<") && strstr(text, "#access<vector="),
               "%s, %d warps: the annotated text parses (%s)", k->name, warps,
               st ? tj_last_error() : "ok");
        if (st == TJ_OK) {
            tjp_annotations back_notes = {.layouts = &back_plan};
            char *again = tjp_print_annotated(back, &back_notes);
            int d = first_diff_line(text, again);
            tap_ok(d == 0, "%s, %d warps: layouts, widths and swizzles print the same after "
                   "parsing (first difference: line %d)", k->name, warps, d);
            tap_ok(tjp_check_layouts(back, &back_plan) == TJ_OK &&
                       back_plan.num_warps == warps,
                   "%s, %d warps: the parsed plan passes tjp_check_layouts", k->name, warps);
            tap_ok(same_shared_plan(&plan, fn->nops, &back_plan, back->nops) &&
                       strstr(text, "#barriers = "),
                   "%s, %d warps: the parsed plan has the same shared steps, allocation and "
                   "barriers", k->name, warps);
            free(again);
        }
        tap_ok(tjp_check_roundtrip(fn, &plan) == TJ_OK, "%s, %d warps: tjp_check_roundtrip "
               "passes", k->name, warps);
        if (k == transpose && warps == 4) {
            tap_ok(strstr(text, "#shared<convert, elem_bytes=4, swizzle=[") &&
                       strstr(text, "offset=0, bytes=4096>") &&
                       strstr(text, "#shared_bytes = 4096\n"),
                   "the transpose's conversion shows its step, swizzle and bytes");
            plan_read_back_compiles(fn, &plan, text);
        }
        free(text);
        tji_func_free(back);
        tjp_layout_plan_free(&back_plan);
        tjp_layout_plan_free(&plan);
        tji_func_free(fn);
    }
}

static void roundtrip_check_can_fail(void)
{
    int64_t block = 8;
    tji_func *fn = NULL;
    if (tji_build(all_ops, &block, 1, &fn) != TJ_OK)
        return (void)tap_ok(0, "all_ops builds");
    tap_ok(tjp_check_roundtrip(fn, NULL) == TJ_OK, "tjp_check_roundtrip passes a built kernel");
    fn->params[1].name = "two words"; /* prints, but cannot read back */
    tj_status st = tjp_check_roundtrip(fn, NULL);
    tap_ok(st == TJ_ERR_COMPILE && strstr(tj_last_error(), "internal error: kernel 'all_ops'") &&
               strstr(tj_last_error(), "does not parse back"),
           "a text that cannot read back fails the check naming the kernel (%s)",
           tj_last_error());
    fn->params[1].name = "out";
    fn->const_values[0] = 12345678901234567;
    fn->ops[fn->regions[0].ops[0]].axis = 1; /* an arange has no axis: invisible, kept */
    tap_ok(tjp_check_roundtrip(fn, NULL) == TJ_OK, "what the text does not show does not fail it");
    setenv("TJIT_CHECK_ROUNDTRIP", "0", 1);
    fn->params[1].name = "two words";
    tap_ok(tjp_check_roundtrip(fn, NULL) == TJ_OK, "TJIT_CHECK_ROUNDTRIP=0 turns the check off");
    setenv("TJIT_CHECK_ROUNDTRIP", "1", 1);
    tji_func_free(fn);
}

static const struct bad_case {
    const char *text, *error;
} bad_cases[] = {
    {"", "<t>:1:1: expected 'kernel', found the end of the text"},
    {"kernal k() {\n}\n", "<t>:1:1: expected 'kernel', found 'kernal'"},
    {"kernel k(%1 x: f33) {\n}\n", "<t>:1:16: expected a dtype"},
    {"kernel k(%1 x: *f32[8]) {\n}\n", "<t>:1:10: expected a scalar or pointer parameter"},
    {"kernel k() {\n  %1 = add %2, %3 : f32\n}\n", "<t>:2:12: expected a value defined above"},
    {"kernel k() {\n  %1 = frobnicate : f32\n}\n", "<t>:2:8: expected an op name"},
    {"kernel k() {\n  %1 = const 1 : f32[3]\n}\n", "<t>:2:22: expected a power-of-two dimension"},
    {"kernel k() {\n  %1 = const 1 : i32\n", "<t>:3:1: expected '}' closing the region"},
    {"kernel k() {\n  %1 = const 1 : i32  // k.c:x\n}\n", "<t>:2:26: expected a location"},
    {"kernel k() {\n  %1 = const x : i32\n}\n", "<t>:2:14: expected an integer constant"},
    {"kernel k() {\n  %1 = const 1 : i32\n  %1 = const 2 : i32\n}\n",
     "<t>:3:3: expected a value id not defined before"},
    {"kernel k(%1 p: *i8) {\n  print \"abc, %1\n}\n", "expected the closing '\"'"},
    {"kernel k(%1 p: *i8) {\n  print \"a\\x1g\", %1\n}\n", "<t>:2:11: expected an escape"},
    {"kernel k() {\n  %1 = cmp.lq %1, %1 : i1\n}\n", "<t>:2:12: expected a suffix"},
    {"kernel k() {\n  %2 = arange 0, 8 : i32[8]\n}\n",
     "a placeholder"}, /* id 1 undefined: a placeholder, then it verifies (ok) */
    {"kernel k() {\n  %1 = arange 0, 9 : i32[8]\n}\n", "<t>:2:18: expected the range's end"},
    {"kernel k() {\n  %1 = const 1 : i32 #L1\n}\n", "<t>:2:22: expected a layout alias defined above"},
    {"#L1 = linear<[8], reg=[], lane=[], warp=[]>\nkernel k() {\n}\n",
     "<t>:1:2: expected '#num_warps = N' before the layouts"},
    {"#num_warps = 4\n#L1 = linear<[8], reg=[], lane=[1,2,4,0,0], warp=[0,0]>\n"
     "kernel k() {\n  %1 = arange 0, 4 : i32[4] #L1\n}\n",
     "<t>:4:29: expected a layout of the value's shape"},
    {"#num_warps = 4\nkernel k() {\n  %1 = arange 0, 8 : i32[8] #L2\n}\n",
     "<t>:3:29: expected a layout alias defined above"},
    {"#num_warps = 4\n#L1 = linear<[8], reg=[], lane=[1,2,4], warp=[0,0]>\nkernel k() {\n}\n",
     "<t>:2:51: expected '>' after 5 lane bases"},
    {"#num_warps = 4\n#L1 = linear<[8], reg=[9], lane=[1,2,4,0,0], warp=[0,0]>\nkernel k() {\n}\n",
     "<t>:2:24: expected an element of the tile"},
    {"#num_warps = 4\nkernel k() {\n  %1 = arange 0, 8 : i32[8]\n}\n",
     "value %1 is a tile without a layout"},
    {"kernel k() {\n  %1 = const 1.5 : i32\n}\n", "<t>:2:14: expected an integer constant"},
    {"kernel k() {\n  %1 = const 1 : f32\n  %2 = add %1, %1 : f64\n}\n", "kernel 'k'"},
    {"kernel k() {\n  yield\n}\n", "yield"},
    {"kernel k() {\n}\ntrailing\n", "<t>:3:1: expected the end of the text after the kernel"},
};

static void bad_text(void)
{
    for (size_t i = 0; i < sizeof bad_cases / sizeof *bad_cases; i++) {
        tji_func *fn = NULL;
        tjp_layout_plan plan = {0};
        tj_status st = tjp_parse_annotated(bad_cases[i].text, "<t>", &fn, &plan);
        int placeholder = strcmp(bad_cases[i].error, "a placeholder") == 0;
        if (placeholder) {
            tap_ok(st == TJ_OK && fn->nvalues == 2, "an id the text never defines is kept as a "
                   "placeholder (%s)", st ? tj_last_error() : "ok");
        } else {
            tap_ok(st != TJ_OK && !fn && strstr(tj_last_error(), bad_cases[i].error),
                   "bad text %zu fails with \"%s\" (got: %s)", i, bad_cases[i].error,
                   st ? tj_last_error() : "ok");
        }
        tji_func_free(fn);
        tjp_layout_plan_free(&plan);
    }
}

/* Every prefix and many mutations of text: a clean answer each time. */
static void mangled_text(const char *text)
{
    size_t len = strlen(text);
    char *copy = malloc(len + 1);
    int clean = 1, accepted = 0;
    for (size_t n = 0; n < len; n++) {
        memcpy(copy, text, n);
        copy[n] = 0;
        tji_func *fn = NULL;
        tjp_layout_plan plan = {0};
        tj_status st = tjp_parse_annotated(copy, "<p>", &fn, &plan);
        if (st == TJ_OK)
            accepted++;
        else
            clean &= fn == NULL && strlen(tj_last_error()) > 0;
        tji_func_free(fn);
        tjp_layout_plan_free(&plan);
    }
    tap_ok(clean && accepted <= 2, "each of %zu prefixes parses or fails with a message "
           "(%d accepted: the whole kernel)", len, accepted);
    uint64_t seed = 12345;
    static const char junk[] = "%#_[]<>(){}=,.:-0123456789x\n \"\\ay";
    int errors = 0;
    clean = 1;
    for (int round = 0; round < 400; round++) {
        memcpy(copy, text, len + 1);
        for (int k = 0; k < 3; k++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            copy[(seed >> 33) % len] = junk[(seed >> 17) % (sizeof junk - 1)];
        }
        tji_func *fn = NULL;
        tjp_layout_plan plan = {0};
        tj_status st = tjp_parse_annotated(copy, "<m>", &fn, &plan);
        if (st != TJ_OK) {
            errors++;
            clean &= fn == NULL && strlen(tj_last_error()) > 0;
        }
        tji_func_free(fn);
        tjp_layout_plan_free(&plan);
    }
    tap_ok(clean && errors > 200, "400 mutated texts: each parses or fails with a message "
           "(%d failed)", errors);
    free(copy);
}

int main(void)
{
    setenv("TJIT_CHECK_ROUNDTRIP", "1", 1);
    int64_t block = 8;
    tji_func *fn = NULL;
    tj_status st = tji_build(all_ops, &block, 1, &fn);
    if (!tap_ok(st == TJ_OK, "a kernel of every op family builds (%s)", tj_status_name(st))) {
        tap_diag("  %s", tj_last_error());
        return tap_done();
    }
    round_trip_plain(fn);
    tji_func_free(fn);
    round_trip_layouts(all_ops, 64);
    round_trip_layouts(transpose, 32);
    roundtrip_check_can_fail();
    bad_text();

    int64_t b = 32;
    tjp_layout_plan plan = {0};
    if (tji_build(transpose, &b, 1, &fn) == TJ_OK && gpu_plan(fn, 4, &plan) == TJ_OK) {
        tjp_annotations notes = {.layouts = &plan};
        char *text = tjp_print_annotated(fn, &notes);
        mangled_text(text);
        free(text);
    }
    tjp_layout_plan_free(&plan);
    tji_func_free(fn);
    return tap_done();
}
