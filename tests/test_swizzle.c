/* SPDX-License-Identifier: MIT */
/*
 * test_swizzle.c — shared-memory swizzles are free of bank conflicts.
 *
 * The swizzle pass (swizzle.c) chooses where each element of a tile goes in
 * shared memory; tjp_bank_cost checks the choice lane by lane, through
 * tjp_layout_apply, without the algebra the pass uses. The tests:
 *
 *  - real transpose kernels of f32, f16 and i8 tiles at 32x32, 64x64 and
 *    128x32, for 4 and 8 warps, with the layouts of the plain layout pass and
 *    of the coalescing pipeline (axis info, tjp_coalesce): every conversion
 *    through shared memory takes, for its writes and its reads, in every
 *    register and warp, exactly the fewest wavefronts possible, and its
 *    swizzle is a permutation of the tile;
 *  - hand-made layout pairs like the coalescing pass's (several contiguous
 *    elements per thread: row vectors written, column vectors read), for
 *    1-, 2-, 4- and 8-byte elements;
 *  - reductions across warps and prefix sums, whose buffers are swizzled too;
 *  - the checker can fail: unswizzled column accesses take the wavefront
 *    counts worked out by hand below, and a swizzle with one image removed
 *    is caught.
 */
#include <stdlib.h>
#include <string.h>

#include "builder/ir.h"
#include "jit/pipeline.h"
#include "passes/passes.h"
#include "tap.h"

#define TRANSPOSE(NAME, DT)                                                                       \
    TJ_KERNEL(NAME, TJ_PARAMS(TJ_PTR(src, DT), TJ_PTR(dst, DT), TJ_SCALAR(m, i32), TJ_SCALAR(n, i32)), \
              TJ_CONSTS(BM, BN))                                                                  \
    {                                                                                             \
        tj_val rows = tj_add(tj_mul(tj_program_id(0), BM), tj_arange(0, BM));                     \
        tj_val cols = tj_add(tj_mul(tj_program_id(1), BN), tj_arange(0, BN));                     \
        tj_val r = tj_expand_dims(rows, 1), c = tj_expand_dims(cols, 0);                          \
        tj_val tile = tj_load(tj_add(src, tj_add(tj_mul(r, n), c)),                               \
                              .mask = tj_and(tj_lt(r, m), tj_lt(c, n)));                          \
        tj_val rt = tj_expand_dims(rows, 0), ct = tj_expand_dims(cols, 1);                        \
        tj_store(tj_add(dst, tj_add(tj_mul(ct, m), rt)), tj_trans(tile),                          \
                 .mask = tj_and(tj_lt(rt, m), tj_lt(ct, n)));                                     \
    }
TRANSPOSE(transpose_f32, f32)
TRANSPOSE(transpose_f16, f16)
TRANSPOSE(transpose_i8, i8)

/* Column sums of an M x N tile: the warps split the rows, so the partial
 * sums meet in shared memory. */
TJ_KERNEL(column_sums, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(y, f32), TJ_PTR(at, i32)), TJ_CONSTS(M, N))
{
    tj_val r = tj_expand_dims(tj_arange(0, M), 1), c = tj_expand_dims(tj_arange(0, N), 0);
    tj_val tile = tj_load(tj_add(x, tj_add(tj_mul(r, N), c)));
    tj_store(tj_add(y, tj_arange(0, N)), tj_sum(tile, 0));
    tj_store(tj_add(at, tj_arange(0, N)), tj_argmax(tile, 0));
}

/* Prefix sums along the rows of an M x N tile. */
TJ_KERNEL(row_scan, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(y, f32)), TJ_CONSTS(M, N))
{
    tj_val r = tj_expand_dims(tj_arange(0, M), 1), c = tj_expand_dims(tj_arange(0, N), 0);
    tj_val offs = tj_add(tj_mul(r, N), c);
    tj_store(tj_add(y, offs), tj_cumsum(tj_load(tj_add(x, offs)), 1));
}

/* Builds and lays out a kernel, with the coalescing pass or without. */
static tji_func *laid_out(const tj_kernel *k, const int64_t *consts, int nconsts, int warps,
                          int coalesced, tjp_layout_plan *plan)
{
    tji_func *fn;
    memset(plan, 0, sizeof *plan);
    if (tji_build(k, consts, nconsts, &fn) != TJ_OK) {
        tap_diag("build: %s", tj_last_error());
        return NULL;
    }
    tjj_gpu_planned planned;
    tj_status st = tjj_gpu_plan(fn, &(tjj_gpu_target){.num_warps = warps, .default_layouts = !coalesced},
                                &planned);
    *plan = planned.plan;
    planned.plan = (tjp_layout_plan){0};
    tjj_gpu_planned_free(&planned);
    if (st != TJ_OK) {
        tap_diag("%s", tj_last_error());
        tjp_layout_plan_free(plan);
        tji_func_free(fn);
        return NULL;
    }
    return fn;
}

/* The buffer of a shared-memory step served in the fewest wavefronts, for
 * the writes and the reads (wv and rv elements per access), every
 * request; the counts go to *w and *r. */
static int conflict_free(const tjp_layout *write, const tjp_layout *read, const tjp_swizzle *S, int wv, int rv,
                         tjp_bank_count *w, tjp_bank_count *r)
{
    tjp_bank_cost(write, S, wv, w);
    tjp_bank_cost(read, S, rv, r);
    return w->requests > 0 && r->requests > 0 && w->wavefronts == w->minimum &&
           r->wavefronts == r->minimum && w->worst == w->worst_minimum &&
           r->worst == r->worst_minimum;
}

/* The swizzle moves every element of a tile of numel to its own index of
 * the same buffer (what the code generator relies on). */
static int permutes(const tjp_swizzle *S, int64_t numel)
{
    unsigned char *seen = calloc((size_t)numel, 1);
    int ok = 1;
    for (int64_t e = 0; e < numel && ok; e++) {
        uint32_t a = tjp_swizzle_apply(S, (uint32_t)e);
        ok = a < (uint64_t)numel && !seen[a];
        if (ok)
            seen[a] = 1;
    }
    free(seen);
    return ok;
}

static void diag_swizzle(const char *what, const tjp_swizzle *S, const tjp_bank_count *w,
                         const tjp_bank_count *r)
{
    tjs_buf b = {0};
    tjp_swizzle_print(&b, S);
    tap_diag("%s: swizzle %s; writes %lld wavefronts (minimum %lld) in %lld requests, reads %lld "
             "(minimum %lld) in %lld", what, b.data, (long long)w->wavefronts, (long long)w->minimum,
             (long long)w->requests, (long long)r->wavefronts, (long long)r->minimum,
             (long long)r->requests);
    free(b.data);
}

static void transposes(void)
{
    static const struct {
        const char *name;
        const tj_kernel *const *k;
        int bytes;
    } types[] = {{"f32", &transpose_f32, 4}, {"f16", &transpose_f16, 2}, {"i8", &transpose_i8, 1}};
    static const int64_t shapes[][2] = {{32, 32}, {64, 64}, {128, 32}};
    static const int warps[] = {4, 8};
    for (int t = 0; t < 3; t++)
        for (int s = 0; s < 3; s++)
            for (int w = 0; w < 2; w++)
                for (int co = 0; co < 2; co++) {
                    char what[128];
                    snprintf(what, sizeof what, "%s %lldx%lld transpose, %d warps, %s layouts",
                             types[t].name, (long long)shapes[s][0], (long long)shapes[s][1],
                             warps[w], co ? "coalesced" : "default");
                    tjp_layout_plan plan;
                    tji_func *fn = laid_out(*types[t].k, shapes[s], 2, warps[w], co, &plan);
                    int shared = 0, ok = fn != NULL, bytes_ok = 1;
                    for (int32_t i = 0; fn && i < fn->nops; i++) {
                        tjp_shared_use use;
                        if (fn->ops[i].parent < 0 || fn->ops[i].code != TJI_CONVERT ||
                            !tjp_shared_use_of(fn, &plan, i, &use))
                            continue;
                        shared++;
                        bytes_ok &= use.swizzle.elem_bytes == types[t].bytes;
                        tjp_bank_count wc, rc;
                        ok &= conflict_free(&use.write, &use.read, &use.swizzle, use.write_vector, use.read_vector, &wc, &rc) &&
                              permutes(&use.swizzle, use.numel);
                        diag_swizzle(what, &use.swizzle, &wc, &rc);
                    }
                    tap_ok(ok && shared == 1 && bytes_ok,
                           "%s: one conversion through shared memory (%d), %d-byte elements, "
                           "writes and reads in the fewest wavefronts", what, shared, types[t].bytes);
                    if (fn) {
                        tjp_layout_plan_free(&plan);
                        tji_func_free(fn);
                    }
                }
}

/* A row layout (spt [1, v], lanes along dim 1 first, warps along dim 0)
 * and a column layout (spt [v, 1], lanes along dim 0 first, warps along
 * dim 1) of a rows x cols tile; 0 if the shape does not allow it. */
static int row_and_column(tjp_layout *row, tjp_layout *col, int32_t rows, int32_t cols, int32_t v,
                          int32_t warps)
{
    int32_t shape[2] = {rows, cols};
    int32_t lanes_c = cols / v < 32 ? cols / v : 32, lanes_r = rows / v < 32 ? rows / v : 32;
    if (lanes_c < 1 || lanes_r < 1)
        return 0;
    int32_t spt_r[2] = {1, v}, tpw_r[2] = {32 / lanes_c, lanes_c}, wpc_r[2] = {warps, 1}, ord_r[2] = {1, 0};
    int32_t spt_c[2] = {v, 1}, tpw_c[2] = {lanes_r, 32 / lanes_r}, wpc_c[2] = {1, warps}, ord_c[2] = {0, 1};
    return tjp_layout_blocked(row, 2, shape, spt_r, tpw_r, wpc_r, ord_r) &&
           tjp_layout_blocked(col, 2, shape, spt_c, tpw_c, wpc_c, ord_c);
}

static void vector_layouts(void)
{
    static const int bytes[] = {1, 2, 4, 8};
    static const int32_t shapes[][2] = {{32, 32}, {64, 64}, {128, 32}, {32, 128}, {128, 128}};
    for (int b = 0; b < 4; b++) {
        int checked = 0, clean = 0, vchecked = 0, vclean = 0;
        for (int s = 0; s < 5; s++)
            for (int32_t warps = 4; warps <= 8; warps *= 2) {
                int32_t vecs[3] = {1, 4, 16 / bytes[b]};
                for (int k = 0; k < 3; k++) {
                    tjp_layout row, col;
                    if (!row_and_column(&row, &col, shapes[s][0], shapes[s][1], vecs[k], warps))
                        continue;
                    for (int dir = 0; dir < 2; dir++) {
                        const tjp_layout *pair[2] = {dir ? &col : &row, dir ? &row : &col};
                        tjp_swizzle S;
                        tjp_swizzle_choose(&S, pair, 2, bytes[b]);
                        tjp_bank_count wc, rc;
                        int ok = conflict_free(pair[0], pair[1], &S, 1, 1, &wc, &rc) &&
                                 permutes(&S, (int64_t)shapes[s][0] * shapes[s][1]);
                        checked++;
                        clean += ok;
                        if (!ok) {
                            char what[128];
                            snprintf(what, sizeof what, "NOT conflict-free: %d-byte %dx%d, vector %d, %d warps, %s",
                                     bytes[b], (int)shapes[s][0], (int)shapes[s][1], (int)vecs[k],
                                     (int)warps, dir ? "columns to rows" : "rows to columns");
                            diag_swizzle(what, &S, &wc, &rc);
                        }
                        /* The same accessed in the widest vectors each layout allows:
                         * a transpose then has conflicts no swizzle that keeps the
                         * vectors whole removes (a vector's elements share banks),
                         * but the swizzle must keep them whole, permute, and cost
                         * no more than none, counted lane by lane. */
                        int v[2] = {tjp_shared_vector(pair[0], bytes[b]), tjp_shared_vector(pair[1], bytes[b])};
                        if (v[0] == 1 && v[1] == 1)
                            continue;
                        tjp_swizzle_choose_vectors(&S, pair, v, 2, bytes[b]);
                        tjp_swizzle none = {.elem_bytes = bytes[b]};
                        tjp_bank_count w0, r0;
                        conflict_free(pair[0], pair[1], &none, v[0], v[1], &w0, &r0);
                        conflict_free(pair[0], pair[1], &S, v[0], v[1], &wc, &rc);
                        ok = tjp_vector_fits(pair[0], &S, v[0]) && tjp_vector_fits(pair[1], &S, v[1]) &&
                             wc.wavefronts + rc.wavefronts <= w0.wavefronts + r0.wavefronts &&
                             permutes(&S, (int64_t)shapes[s][0] * shapes[s][1]);
                        vchecked++;
                        vclean += ok;
                        if (!ok) {
                            char what[160];
                            snprintf(what, sizeof what, "vectors %d/%d broken or dearer than no swizzle: %d-byte %dx%d, "
                                     "%d warps, %s", v[0], v[1], bytes[b], (int)shapes[s][0], (int)shapes[s][1],
                                     (int)warps, dir ? "columns to rows" : "rows to columns");
                            diag_swizzle(what, &S, &wc, &rc);
                        }
                    }
                }
            }
        tap_ok(vchecked > 0 && vclean == vchecked,
               "%d-byte elements, the same accessed as vectors (up to 16 bytes per side): %d of %d "
               "swizzles keep every vector whole, permute, cost no more than none", bytes[b], vclean, vchecked);
        tap_ok(checked > 0 && clean == checked,
               "%d-byte elements: rows of 1, 4 and %d-element vectors to columns and back, 5 shapes, "
               "4 and 8 warps: %d of %d conversions in the fewest wavefronts", bytes[b], 16 / bytes[b],
               clean, checked);
    }
}

/* Unswizzled accesses down a column of a 32-row tile, one row per lane.
 * Row stride 32 elements: f32 rows are 128 bytes apart, all 32 lanes in one
 * bank: 32 wavefronts. f16: 64 bytes, words 16 apart, banks 0 and 16 with 16
 * words each: 16. i8: 32 bytes, words 8 apart, banks 0, 8, 16, 24 with 8
 * each: 8. f64: 256 bytes, served by half warps: each half's 16 words 64
 * apart land in banks 0 and 1 (the two words of each element), 16 per bank,
 * so 16 + 16 = 32 against a minimum of 1 + 1. Along a row, i8 lanes share
 * words (8 words, 1 wavefront) and f64 takes its minimum of 2. */
static void checker_fails(void)
{
    int32_t shape[2] = {32, 32}, one[2] = {1, 1}, down[2] = {32, 1}, across[2] = {1, 32};
    int32_t wpc_d[2] = {1, 4}, wpc_a[2] = {4, 1}, ord_d[2] = {0, 1}, ord_a[2] = {1, 0};
    tjp_layout column, row;
    tjp_layout_blocked(&column, 2, shape, one, down, wpc_d, ord_d);
    tjp_layout_blocked(&row, 2, shape, one, across, wpc_a, ord_a);
    static const struct { int bytes, column, column_min, row, row_min; } cases[] = {
        {4, 32, 1, 1, 1}, {2, 16, 1, 1, 1}, {1, 8, 1, 1, 1}, {8, 32, 2, 2, 2}};
    for (int k = 0; k < 4; k++) {
        tjp_swizzle none = {.elem_bytes = cases[k].bytes};
        int cmin, rmin;
        int c = tjp_request_wavefronts(&column, &none, 1, 0, 0, &cmin);
        int r = tjp_request_wavefronts(&row, &none, 1, 0, 0, &rmin);
        tjp_bank_count all;
        tjp_bank_cost(&column, &none, 1, &all);
        tap_ok(c == cases[k].column && cmin == cases[k].column_min && r == cases[k].row &&
                   rmin == cases[k].row_min && all.requests == 8 * 4 &&
                   all.wavefronts == 32 * (int64_t)cases[k].column,
               "%d-byte elements, no swizzle: a column request takes %d wavefronts (minimum %d), "
               "a row request %d (minimum %d); all 32 column requests %lld", cases[k].bytes, c, cmin,
               r, rmin, (long long)all.wavefronts);
    }

    /* The pass's swizzle for that transpose, with one image taken away:
     * one lane of the column layout falls back into another's bank. */
    const tjp_layout *pair[2] = {&row, &column};
    tjp_swizzle S;
    tjp_swizzle_choose(&S, pair, 2, 4);
    tjp_bank_count wc, rc;
    int fixed = conflict_free(&row, &column, &S, 1, 1, &wc, &rc);
    int bit = 0;
    while (bit < TJP_MAX_BITS && !S.flip[bit])
        bit++;
    if (bit < TJP_MAX_BITS)
        S.flip[bit] = 0;
    tjp_bank_cost(&column, &S, 1, &rc);
    tap_ok(fixed && bit < TJP_MAX_BITS && rc.worst == 2 && rc.worst_minimum == 1,
           "a swizzle with one image removed is caught: 2 wavefronts per column request (minimum 1)");
}

/* Reductions across warps and prefix sums: the real kernels, and the
 * layouts of the coalescing pass put in by hand. */
static void reductions_and_scans(void)
{
    for (int co = 0; co < 2; co++) {
        tjp_layout_plan plan;
        int64_t mn[2] = {64, 128};
        tji_func *fn = laid_out(column_sums, mn, 2, 4, co, &plan);
        int steps = 0, ok = fn != NULL;
        for (int32_t i = 0; fn && i < fn->nops; i++) {
            tjp_shared_use use;
            if (fn->ops[i].parent < 0 || fn->ops[i].code != TJI_REDUCE || !tjp_shared_use_of(fn, &plan, i, &use))
                continue;
            steps++;
            tjp_bank_count wc, rc;
            ok &= use.parts == 4 && conflict_free(&use.write, &use.read, &use.swizzle, use.write_vector, use.read_vector, &wc, &rc) &&
                  permutes(&use.swizzle, use.numel);
            if (use.has_index)
                ok &= conflict_free(&use.write, &use.read, &use.index_swizzle, 1, 1, &wc, &rc);
        }
        tap_ok(ok && steps == 2, "column sum and argmax of 64x128 over 4 warps (%s layouts): "
               "partials of 4 warps in shared memory, no bank conflicts", co ? "coalesced" : "default");
        if (fn) {
            tjp_layout_plan_free(&plan);
            tji_func_free(fn);
        }
    }

    /* 4 contiguous columns per thread, lanes along the columns, warps down
     * the rows: the column sums' partials, unswizzled, are 4 apart per lane
     * (8 banks, 4 words each: 4 wavefronts). */
    tjp_layout_plan plan;
    int64_t mn[2] = {32, 128};
    tji_func *fn = laid_out(column_sums, mn, 2, 4, 0, &plan);
    int32_t shape[2] = {32, 128}, spt[2] = {1, 4}, tpw[2] = {1, 32}, wpc[2] = {4, 1}, ord[2] = {1, 0};
    tjp_layout vec;
    int found = 0, ok = fn && tjp_layout_blocked(&vec, 2, shape, spt, tpw, wpc, ord);
    for (int32_t i = 0; ok && i < fn->nops; i++)
        if (fn->ops[i].parent >= 0 && fn->ops[i].code == TJI_REDUCE) {
            plan.of[fn->ops[i].args[0]] = vec;
            tjp_shared_use use;
            if (!tjp_shared_use_of(fn, &plan, i, &use))
                continue;
            tjp_swizzle none = {.elem_bytes = 4};
            int least, plain = tjp_request_wavefronts(&use.write, &none, 1, 0, 0, &least);
            tjp_bank_count wc, rc;
            ok &= plain == 4 && least == 1 && conflict_free(&use.write, &use.read, &use.swizzle, use.write_vector, use.read_vector, &wc, &rc) &&
                  permutes(&use.swizzle, use.numel);
            found++;
        }
    tap_ok(ok && found == 2, "column sums with 4-element vectors per thread: 4 wavefronts unswizzled, "
           "the minimum swizzled");
    if (fn) {
        tjp_layout_plan_free(&plan);
        tji_func_free(fn);
    }

    /* The scan: a 64 x 8 tile, 4 columns per thread, 2 lanes across a row,
     * 16 lanes down: at each step the lanes read one element of each of 16
     * rows, 8 words apart: banks 0, 8, 16, 24, 4 words each, unswizzled. */
    int64_t sn[2] = {64, 8};
    fn = laid_out(row_scan, sn, 2, 4, 0, &plan);
    int32_t sshape[2] = {64, 8}, stpw[2] = {16, 2};
    found = 0;
    ok = fn && tjp_layout_blocked(&vec, 2, sshape, spt, stpw, wpc, ord);
    for (int32_t i = 0; ok && i < fn->nops; i++)
        if (fn->ops[i].parent >= 0 && fn->ops[i].code == TJI_CUMSUM) {
            plan.of[fn->ops[i].args[0]] = vec;
            tjp_shared_use use;
            if (!tjp_shared_use_of(fn, &plan, i, &use))
                continue;
            tjp_swizzle none = {.elem_bytes = 4};
            int least, plain = tjp_request_wavefronts(&use.read, &none, 1, 0, 0, &least);
            tjp_bank_count wc, rc;
            ok &= plain == 4 && least == 1 && conflict_free(&use.write, &use.read, &use.swizzle, use.write_vector, use.read_vector, &wc, &rc) &&
                  permutes(&use.swizzle, use.numel);
            found++;
        }
    tap_ok(ok && found == 1, "row prefix sums with 4-element vectors per thread: reads of 4 "
           "wavefronts unswizzled, the minimum swizzled");
    if (fn) {
        tjp_layout_plan_free(&plan);
        tji_func_free(fn);
    }
}

int main(void)
{
    transposes();
    vector_layouts();
    checker_fails();
    reductions_and_scans();
    return tap_done();
}
