/* SPDX-License-Identifier: MIT */
/*
 * test_layout.c — the F2 layout algebra against brute-force enumeration.
 *
 * Random blocked layouts (random shapes, per-thread sizes, lane and warp
 * splits, orders) are checked slot by slot against an independent direct
 * formula for Triton's blocked layout; inversion against a search over all
 * slots; slices against dropping the coordinate; and the classification of
 * conversions against asking, for every destination slot, where the source
 * keeps that element.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "passes/layout.h"
#include "tap.h"

typedef struct params {
    int rank;
    int32_t shape[4], spt[4], tpw[4], wpc[4], order[4];
} params;

static int ilog2(int x) { int n = 0; while ((1 << n) < x) n++; return n; }

/* Splits 2^bits over rank dims at random (powers of two). */
static void split(int bits, int rank, int32_t *out)
{
    for (int d = 0; d < rank; d++)
        out[d] = 1;
    while (bits-- > 0)
        out[rand() % rank] *= 2;
}

static params random_params(int rank, int num_warps)
{
    params p = {.rank = rank};
    for (int d = 0; d < rank; d++) {
        p.shape[d] = 1 << (rand() % (rank == 1 ? 11 : rank == 2 ? 6 : 5));
        p.spt[d] = 1 << (rand() % 3);
        p.order[d] = d;
    }
    for (int d = rank - 1; d > 0; d--) { /* shuffle the order */
        int j = rand() % (d + 1), t = p.order[d];
        p.order[d] = p.order[j];
        p.order[j] = t;
    }
    split(5, rank, p.tpw);
    split(ilog2(num_warps), rank, p.wpc);
    return p;
}

/* The element of slot (r, l, w), straight from the blocked layout's definition. */
static uint32_t direct(const params *p, uint32_t r, uint32_t l, uint32_t w)
{
    int spt_total = 1;
    for (int d = 0; d < p->rank; d++)
        spt_total *= p->spt[d];
    uint32_t r_in = r % (uint32_t)spt_total, rep = r / (uint32_t)spt_total;
    int64_t coord[4];
    for (int k = 0; k < p->rank; k++) {
        int d = p->order[k];
        int32_t block = p->spt[d] * p->tpw[d] * p->wpc[d];
        int32_t reps = p->shape[d] > block ? p->shape[d] / block : 1;
        int64_t c_in = r_in % (uint32_t)p->spt[d];
        r_in /= (uint32_t)p->spt[d];
        int64_t c_l = l % (uint32_t)p->tpw[d];
        l /= (uint32_t)p->tpw[d];
        int64_t c_w = w % (uint32_t)p->wpc[d];
        w /= (uint32_t)p->wpc[d];
        int64_t c_r = rep % (uint32_t)reps;
        rep /= (uint32_t)reps;
        coord[d] = (c_in + p->spt[d] * (c_l + p->tpw[d] * (c_w + (int64_t)p->wpc[d] * c_r))) % p->shape[d];
    }
    uint32_t e = 0;
    for (int d = 0; d < p->rank; d++)
        e = e * (uint32_t)p->shape[d] + (uint32_t)coord[d];
    return e;
}

static uint32_t nslots(const tjp_layout *L, int in) { return 1u << L->nbits[in]; }

static int check_blocked(const params *p, tjp_layout *L)
{
    if (!tjp_layout_blocked(L, p->rank, p->shape, p->spt, p->tpw, p->wpc, p->order))
        return 0;
    for (uint32_t w = 0; w < nslots(L, TJP_WARP); w++)
        for (uint32_t l = 0; l < nslots(L, TJP_LANE); l++)
            for (uint32_t r = 0; r < nslots(L, TJP_REG); r++)
                if (tjp_layout_apply(L, r, l, w) != direct(p, r, l, w)) {
                    tap_diag("slot (%u,%u,%u): %u, expected %u", r, l, w,
                             tjp_layout_apply(L, r, l, w), direct(p, r, l, w));
                    return 0;
                }
    return 1;
}

static int numel(const tjp_layout *L)
{
    int n = 1;
    for (int d = 0; d < L->rank; d++)
        n *= L->shape[d];
    return n;
}

static int check_invert(const tjp_layout *L)
{
    for (int e = 0; e < numel(L); e++) {
        int held = 0;
        for (uint32_t w = 0; w < nslots(L, TJP_WARP) && !held; w++)
            for (uint32_t l = 0; l < nslots(L, TJP_LANE) && !held; l++)
                for (uint32_t r = 0; r < nslots(L, TJP_REG) && !held; r++)
                    held = tjp_layout_apply(L, r, l, w) == (uint32_t)e;
        uint32_t r, l, w;
        int found = tjp_layout_invert(L, (uint32_t)e, &r, &l, &w);
        if (found != held || (found && tjp_layout_apply(L, r, l, w) != (uint32_t)e))
            return 0;
    }
    return 1;
}

static int check_slice(const tjp_layout *L, int dim)
{
    tjp_layout S;
    tjp_layout_slice(&S, L, dim);
    for (uint32_t w = 0; w < nslots(L, TJP_WARP); w++)
        for (uint32_t l = 0; l < nslots(L, TJP_LANE); l++)
            for (uint32_t r = 0; r < nslots(L, TJP_REG); r++) {
                uint32_t e = tjp_layout_apply(L, r, l, w), dropped = 0;
                int64_t coord[4];
                for (int d = L->rank - 1; d >= 0; d--) {
                    coord[d] = e % (uint32_t)L->shape[d];
                    e /= (uint32_t)L->shape[d];
                }
                for (int d = 0; d < L->rank; d++)
                    if (d != dim)
                        dropped = dropped * (uint32_t)L->shape[d] + (uint32_t)coord[d];
                if (tjp_layout_apply(&S, r, l, w) != dropped)
                    return 0;
            }
    return 1;
}

/* Where does dst's slot find its element in src: same thread, same warp, anywhere? */
static tjp_conversion brute_conversion(const tjp_layout *src, const tjp_layout *dst)
{
    /* Every src slot, grouped by the element it holds. */
    int n = numel(src);
    uint32_t total = nslots(src, TJP_REG) * nslots(src, TJP_LANE) * nslots(src, TJP_WARP);
    int *first = calloc((size_t)n + 1, sizeof(int));
    uint32_t(*slot)[3] = malloc(sizeof *slot * total);
    for (uint32_t w = 0; w < nslots(src, TJP_WARP); w++)
        for (uint32_t l = 0; l < nslots(src, TJP_LANE); l++)
            for (uint32_t r = 0; r < nslots(src, TJP_REG); r++)
                first[tjp_layout_apply(src, r, l, w) + 1]++;
    for (int e = 0; e < n; e++)
        first[e + 1] += first[e];
    int *fill = calloc((size_t)n, sizeof(int));
    for (uint32_t w = 0; w < nslots(src, TJP_WARP); w++)
        for (uint32_t l = 0; l < nslots(src, TJP_LANE); l++)
            for (uint32_t r = 0; r < nslots(src, TJP_REG); r++) {
                uint32_t e = tjp_layout_apply(src, r, l, w);
                uint32_t *s = slot[first[e] + fill[e]++];
                s[0] = r, s[1] = l, s[2] = w;
            }
    int same = memcmp(src->nbits, dst->nbits, sizeof src->nbits) == 0;
    int level = 0;
    uint32_t W = nslots(dst, TJP_WARP) > nslots(src, TJP_WARP) ? nslots(dst, TJP_WARP) : nslots(src, TJP_WARP);
    uint32_t Ln = nslots(dst, TJP_LANE) > nslots(src, TJP_LANE) ? nslots(dst, TJP_LANE) : nslots(src, TJP_LANE);
    for (uint32_t w = 0; w < W; w++)
        for (uint32_t l = 0; l < Ln; l++)
            for (uint32_t r = 0; r < nslots(dst, TJP_REG); r++) {
                uint32_t e = tjp_layout_apply(dst, r, l % nslots(dst, TJP_LANE), w % nslots(dst, TJP_WARP));
                if (same && tjp_layout_apply(src, r, l, w) != e)
                    same = 0;
                int best = 3;
                for (int k = first[e]; k < first[e + 1]; k++) {
                    int lv = slot[k][2] != w % nslots(src, TJP_WARP)   ? 2
                             : slot[k][1] != l % nslots(src, TJP_LANE) ? 1
                                                                       : 0;
                    best = lv < best ? lv : best;
                }
                level = best > level ? best : level;
            }
    free(first);
    free(fill);
    free(slot);
    if (same)
        return TJP_CONVERT_NONE;
    return level == 0 ? TJP_CONVERT_IN_THREAD : level == 1 ? TJP_CONVERT_LANES : TJP_CONVERT_SHARED;
}

int main(void)
{
    unsigned seed = (unsigned)time(NULL);
    srand(seed);
    tap_diag("seed %u", seed);
    int bad_blocked = 0, bad_invert = 0, bad_slice = 0, bad_conv = 0, convs = 0;
    int kinds[4] = {0};
    for (int t = 0; t < 300; t++) {
        int rank = 1 + t % 3, warps = 1 << (rand() % 4);
        params p = random_params(rank, warps);
        tjp_layout L;
        if (!check_blocked(&p, &L)) {
            bad_blocked++;
            continue;
        }
        bad_invert += !check_invert(&L);
        bad_slice += rank > 1 && !check_slice(&L, rand() % rank);
        /* A second layout of the same tile and warp count. */
        params q = random_params(rank, warps);
        memcpy(q.shape, p.shape, sizeof p.shape);
        if (t % 5 == 0)
            q = p; /* identical layouts must say "none" */
        tjp_layout M;
        if (!check_blocked(&q, &M)) {
            bad_blocked++;
            continue;
        }
        tjp_conversion got = tjp_layout_conversion(&L, &M), want = brute_conversion(&L, &M);
        kinds[want]++;
        convs++;
        if (got != want) {
            bad_conv++;
            tjs_buf b = {0};
            tjp_layout_print(&b, &L);
            tjs_buf_printf(&b, "  ->  ");
            tjp_layout_print(&b, &M);
            tap_diag("conversion %s, brute force says %s: %s", tjp_conversion_name(got),
                     tjp_conversion_name(want), b.data);
            tjs_buf_free(&b);
        }
    }
    tap_ok(bad_blocked == 0, "blocked layouts match the direct formula slot by slot");
    tap_ok(bad_invert == 0, "inversion finds a slot for exactly the elements held");
    tap_ok(bad_slice == 0, "slices drop the reduced coordinate");
    tap_ok(bad_conv == 0, "conversion classes match brute force (%d pairs: %d none, %d in-thread, %d lanes, %d shared)",
           convs, kinds[0], kinds[1], kinds[2], kinds[3]);
    tap_ok(kinds[0] && kinds[1] + kinds[2] && kinds[3], "the random pairs cover the classes");

    /* A known case: the transpose of a 32x32 f32 tile with 4 warps needs shared memory. */
    int32_t shape[2] = {32, 32}, spt[2] = {1, 4}, tpw[2] = {4, 8}, wpc[2] = {4, 1};
    int32_t rows[2] = {1, 0}, cols[2] = {0, 1};
    tjp_layout A, B;
    tjp_layout_blocked(&A, 2, shape, spt, tpw, wpc, rows);
    int32_t spt_t[2] = {4, 1}, tpw_t[2] = {8, 4}, wpc_t[2] = {1, 4};
    tjp_layout_blocked(&B, 2, shape, spt_t, tpw_t, wpc_t, cols);
    tap_ok(tjp_layout_conversion(&A, &B) == TJP_CONVERT_SHARED, "row-major to column-major 32x32 goes through shared memory");
    tap_ok(tjp_layout_apply(&A, 1, 0, 0) == 1 && tjp_layout_apply(&A, 0, 1, 0) == 4 &&
               tjp_layout_apply(&A, 0, 8, 0) == 32 && tjp_layout_apply(&A, 0, 0, 1) == 128,
           "blocked [1,4]x[4,8]x[4,1]: reg 1 -> col 1, lane 1 -> col 4, lane 8 -> row 1, warp 1 -> row 4");
    return tap_done();
}
