/* SPDX-License-Identifier: MIT */
/*
 * layout.c — the F2 layout algebra (see layout.h).
 *
 * Everything here is linear algebra over F2 on 32-bit vectors: a vector is
 * an element's row-major index, XOR is addition. Two tools do the work:
 *
 *  - a reduced basis (Gaussian elimination): each pivot vector remembers
 *    which input bits it is the XOR of, so reducing an element against the
 *    basis both decides membership in the span and solves for the slot;
 *  - span tests, which decide where a layout conversion can happen: data a
 *    thread needs is already in that thread when the difference between the
 *    two layouts' lane and warp bases lies in the span of the source's
 *    register bases, and so on up the hierarchy.
 *
 * Layouts are small (at most 32 input bits each), so none of this is costly.
 */
#include <string.h>

#include "layout.h"

int tjp_log2_exact(int64_t x)
{
    if (x < 1 || (x & (x - 1)))
        return -1;
    int n = 0;
    while ((1ll << n) < x)
        n++;
    return n;
}

/* Bit offset of dimension d in a row-major index: the bits of later dims. */
static int dim_offset(const tjp_layout *L, int d)
{
    int off = 0;
    for (int i = d + 1; i < L->rank; i++)
        off += tjp_log2_exact(L->shape[i]);
    return off;
}

int tjp_layout_blocked(tjp_layout *out, int rank, const int32_t *shape,
                       const int32_t *size_per_thread, const int32_t *threads_per_warp,
                       const int32_t *warps_per_cta, const int32_t *order)
{
    memset(out, 0, sizeof *out);
    if (rank < 1 || rank > TJ_MAX_RANK)
        return 0;
    out->rank = rank;
    int dim_bits[TJ_MAX_RANK], used[TJ_MAX_RANK] = {0}, seen = 0;
    for (int d = 0; d < rank; d++) {
        out->shape[d] = shape[d];
        dim_bits[d] = tjp_log2_exact(shape[d]);
        if (dim_bits[d] < 0 || tjp_log2_exact(size_per_thread[d]) < 0 ||
            tjp_log2_exact(threads_per_warp[d]) < 0 || tjp_log2_exact(warps_per_cta[d]) < 0)
            return 0;
        if (order[d] < 0 || order[d] >= rank || (seen & (1 << order[d])))
            return 0;
        seen |= 1 << order[d];
    }
    /* Hand out bits of each tile dimension, fastest dimension first. Once a
     * dimension has no bits left, further slots along it hold copies. */
    const int32_t *per_level[TJP_NIN] = {size_per_thread, threads_per_warp, warps_per_cta};
    for (int in = 0; in < TJP_NIN; in++) {
        for (int k = 0; k < rank; k++) {
            int d = order[k];
            for (int b = tjp_log2_exact(per_level[in][d]); b > 0; b--) {
                if (out->nbits[in] >= TJP_MAX_BITS)
                    return 0;
                uint32_t v = 0;
                if (used[d] < dim_bits[d])
                    v = 1u << (dim_offset(out, d) + used[d]++);
                out->basis[in][out->nbits[in]++] = v;
            }
        }
    }
    /* A tile larger than one block of the CTA repeats it in more registers. */
    for (int k = 0; k < rank; k++) {
        int d = order[k];
        while (used[d] < dim_bits[d]) {
            if (out->nbits[TJP_REG] >= TJP_MAX_BITS)
                return 0;
            out->basis[TJP_REG][out->nbits[TJP_REG]++] = 1u << (dim_offset(out, d) + used[d]++);
        }
    }
    return 1;
}

int tjp_layout_equal(const tjp_layout *a, const tjp_layout *b)
{
    if (a->rank != b->rank || memcmp(a->shape, b->shape, sizeof a->shape) ||
        memcmp(a->nbits, b->nbits, sizeof a->nbits))
        return 0;
    for (int in = 0; in < TJP_NIN; in++)
        if (memcmp(a->basis[in], b->basis[in], sizeof(uint32_t) * (size_t)a->nbits[in]))
            return 0;
    return 1;
}

void tjp_layout_slice(tjp_layout *out, const tjp_layout *in, int dim)
{
    int off = dim_offset(in, dim), width = tjp_log2_exact(in->shape[dim]);
    tjp_layout r = *in;
    r.rank = in->rank - 1;
    for (int d = dim; d < r.rank; d++)
        r.shape[d] = in->shape[d + 1];
    r.shape[r.rank] = 0;
    for (int i = 0; i < TJP_NIN; i++)
        for (int b = 0; b < in->nbits[i]; b++) {
            uint32_t x = in->basis[i][b];
            r.basis[i][b] = (x & ((1u << off) - 1)) | ((x >> (off + width)) << off);
        }
    *out = r;
}

void tjp_layout_transpose(tjp_layout *out, const tjp_layout *in)
{
    int cbits = tjp_log2_exact(in->shape[1]), rbits = tjp_log2_exact(in->shape[0]);
    tjp_layout r = *in;
    r.shape[0] = in->shape[1];
    r.shape[1] = in->shape[0];
    for (int i = 0; i < TJP_NIN; i++)
        for (int b = 0; b < in->nbits[i]; b++) {
            uint32_t x = in->basis[i][b];
            r.basis[i][b] = (x & ((1u << cbits) - 1)) << rbits | x >> cbits;
        }
    *out = r;
}

uint32_t tjp_layout_apply(const tjp_layout *L, uint32_t reg, uint32_t lane, uint32_t warp)
{
    uint32_t in[TJP_NIN] = {reg, lane, warp}, e = 0;
    for (int i = 0; i < TJP_NIN; i++)
        for (int b = 0; b < L->nbits[i]; b++)
            if (in[i] >> b & 1)
                e ^= L->basis[i][b];
    return e;
}

/* A reduced basis: pivot vectors, each with the input bits it combines
 * (bit i*32+b stands for input dimension i, bit b). */
typedef struct reduced {
    int n;
    uint32_t vec[3 * TJP_MAX_BITS];
    uint32_t combo[3 * TJP_MAX_BITS][TJP_NIN];
} reduced;

/* Reduces x against the basis; returns the residue and, in combo, the input
 * bits whose vectors were XORed away. */
static uint32_t reduce(const reduced *R, uint32_t x, uint32_t combo[TJP_NIN])
{
    if (combo)
        memset(combo, 0, sizeof(uint32_t) * TJP_NIN);
    for (int p = 0; p < R->n; p++) {
        uint32_t top = 1u << (31 - __builtin_clz(R->vec[p]));
        if (x & top) {
            x ^= R->vec[p];
            for (int i = 0; combo && i < TJP_NIN; i++)
                combo[i] ^= R->combo[p][i];
        }
    }
    return x;
}

/* Adds vector x (the image of input bit `bit` of level `in`); dependent
 * vectors are dropped, which is what leaves copies at zero on inversion.
 * Pivots stay sorted by leading bit, highest first, so reduce() works. */
static void add_vector(reduced *R, uint32_t x, int in, int bit)
{
    uint32_t combo[TJP_NIN];
    x = reduce(R, x, combo);
    if (!x)
        return;
    combo[in] ^= 1u << bit;
    uint32_t top = 1u << (31 - __builtin_clz(x));
    /* Keep the basis reduced: clear x's leading bit from the other pivots. */
    for (int p = 0; p < R->n; p++)
        if (R->vec[p] & top) {
            R->vec[p] ^= x;
            for (int i = 0; i < TJP_NIN; i++)
                R->combo[p][i] ^= combo[i];
        }
    int pos = R->n;
    while (pos > 0 && R->vec[pos - 1] < x) {
        R->vec[pos] = R->vec[pos - 1];
        memcpy(R->combo[pos], R->combo[pos - 1], sizeof R->combo[pos]);
        pos--;
    }
    R->vec[pos] = x;
    memcpy(R->combo[pos], combo, sizeof combo);
    R->n++;
}

static void reduced_of(reduced *R, const tjp_layout *L, int levels)
{
    R->n = 0;
    for (int i = 0; i < TJP_NIN; i++)
        if (levels & (1 << i))
            for (int b = 0; b < L->nbits[i]; b++)
                add_vector(R, L->basis[i][b], i, b);
}

int tjp_layout_invert(const tjp_layout *L, uint32_t element, uint32_t *reg, uint32_t *lane,
                      uint32_t *warp)
{
    reduced R;
    reduced_of(&R, L, 7);
    uint32_t combo[TJP_NIN];
    if (reduce(&R, element, combo))
        return 0;
    *reg = combo[TJP_REG];
    *lane = combo[TJP_LANE];
    *warp = combo[TJP_WARP];
    return 1;
}

static uint32_t basis_or_zero(const tjp_layout *L, int in, int b)
{
    return b < L->nbits[in] ? L->basis[in][b] : 0;
}

/* Can every slot of dst whose inputs above `level` match a slot of src get
 * its element from src slots that differ only at levels up to `level`? By
 * linearity it is enough to test the basis vectors. */
static int reachable_within(const tjp_layout *src, const tjp_layout *dst, int level)
{
    reduced R;
    reduced_of(&R, src, (1 << (level + 1)) - 1);
    for (int in = 0; in < TJP_NIN; in++) {
        int n = src->nbits[in] > dst->nbits[in] ? src->nbits[in] : dst->nbits[in];
        for (int b = 0; b < n; b++) {
            uint32_t need = basis_or_zero(dst, in, b);
            if (in > level)
                need ^= basis_or_zero(src, in, b);
            if (reduce(&R, need, NULL))
                return 0;
        }
    }
    return 1;
}

tjp_conversion tjp_layout_conversion(const tjp_layout *src, const tjp_layout *dst)
{
    if (memcmp(src->nbits, dst->nbits, sizeof src->nbits) == 0) {
        int same = 1;
        for (int in = 0; in < TJP_NIN && same; in++)
            same = memcmp(src->basis[in], dst->basis[in],
                          sizeof(uint32_t) * (size_t)src->nbits[in]) == 0;
        if (same)
            return TJP_CONVERT_NONE;
    }
    if (reachable_within(src, dst, TJP_REG))
        return TJP_CONVERT_IN_THREAD;
    if (reachable_within(src, dst, TJP_LANE))
        return TJP_CONVERT_LANES;
    return TJP_CONVERT_SHARED;
}

const char *tjp_conversion_name(tjp_conversion c)
{
    static const char *const names[] = {"none", "in-thread", "lanes", "shared"};
    return names[c];
}

void tjp_layout_print(tjs_buf *b, const tjp_layout *L)
{
    static const char *const level[TJP_NIN] = {"reg", "lane", "warp"};
    for (int in = 0; in < TJP_NIN; in++) {
        tjs_buf_printf(b, "%s%s=[", in ? " " : "", level[in]);
        for (int i = 0; i < L->nbits[in]; i++)
            tjs_buf_printf(b, "%s%u", i ? "," : "", L->basis[in][i]);
        tjs_buf_printf(b, "]");
    }
}
