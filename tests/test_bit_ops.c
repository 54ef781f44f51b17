/* SPDX-License-Identifier: MIT */
/*
 * test_bit_ops.c — tj_popc, tj_clz and tj_brev (libdevice's popc, clz and
 * brev) on every integer dtype but i1.
 *
 * Each dtype gets edge inputs (0, 1, -1, the smallest and largest values,
 * single bits at both ends) and random ones over the whole range; the
 * results, in the input's dtype, are checked bit for bit against a C
 * reference that walks the bits of the value in its own width (clz of 0 is
 * the width). Floats, i1 and pointers are refused with an error naming the
 * op and the line. The PTX of every kernel must assemble for sm_80 and sm_90
 * (ptxas where make check finds it). Runs on the test device
 * (TJIT_TEST_DEVICE).
 */
#include "testlib.h"

enum { N = 512 };

#define BITS_KERNEL(NAME, DT)                                                                      \
    TJ_KERNEL(NAME, TJ_PARAMS(TJ_PTR(x, DT), TJ_PTR(pc, DT), TJ_PTR(lz, DT), TJ_PTR(rev, DT)),     \
              TJ_CONSTS())                                                                         \
    {                                                                                              \
        tj_val offs = tj_arange(0, N), v = tj_load(tj_add(x, offs));                               \
        tj_store(tj_add(pc, offs), tj_popc(v));                                                    \
        tj_store(tj_add(lz, offs), tj_clz(v));                                                     \
        tj_store(tj_add(rev, offs), tj_brev(v));                                                   \
    }
BITS_KERNEL(bits_i8, i8)
BITS_KERNEL(bits_i16, i16)
BITS_KERNEL(bits_i32, i32)
BITS_KERNEL(bits_i64, i64)
BITS_KERNEL(bits_u8, u8)
BITS_KERNEL(bits_u16, u16)
BITS_KERNEL(bits_u32, u32)
BITS_KERNEL(bits_u64, u64)

static int bad_line;
TJ_KERNEL(popc_of_float, TJ_PARAMS(TJ_PTR(x, f32)), TJ_CONSTS())
{
    tj_val offs = tj_arange(0, 16);
    bad_line = __LINE__, tj_store(tj_add(x, offs), tj_popc(tj_load(tj_add(x, offs))));
}
TJ_KERNEL(brev_of_pointer, TJ_PARAMS(TJ_PTR(x, i32)), TJ_CONSTS())
{
    tj_brev(x);
}
TJ_KERNEL(clz_of_i1, TJ_PARAMS(TJ_PTR(x, i32)), TJ_CONSTS())
{
    tj_val offs = tj_arange(0, 16);
    tj_clz(tj_lt(tj_load(tj_add(x, offs)), 0));
}

/* The reference, on the value's bits in a width of `bits`. */
static void reference(uint64_t v, int bits, uint64_t *pc, uint64_t *lz, uint64_t *rev)
{
    *pc = 0, *lz = (uint64_t)bits, *rev = 0;
    for (int i = 0; i < bits; i++) {
        uint64_t bit = v >> i & 1;
        *pc += bit;
        *rev |= bit << (bits - 1 - i);
        if (bit)
            *lz = (uint64_t)(bits - 1 - i);
    }
}

static void run(tj_device *dev, const tj_kernel *k, tj_dtype dt)
{
    int bits = tl_bits(dt);
    uint64_t mask = bits == 64 ? ~(uint64_t)0 : ((uint64_t)1 << bits) - 1;
    const int64_t edges[] = {0, 1, -1, tl_int_min(dt), tl_int_max(dt), (int64_t)((uint64_t)1 << (bits - 1)),
                             2, 0x55, (int64_t)(mask >> 1), (int64_t)(mask ^ 1)};
    size_t size = (size_t)N * (size_t)(bits / 8);
    uint8_t in[N * 8], got[3][N * 8];
    for (int i = 0; i < N; i++)
        tl_set(dt, in, (size_t)i, i < (int)TL_COUNT(edges) ? tl_int(tl_wrap(dt, edges[i])) : tl_random(dt));
    tj_buffer bx = tl_upload(dev, in, size), out[3];
    for (int j = 0; j < 3; j++)
        out[j] = tl_poisoned(dev, size);
    tj_launch_cfg cfg = {.grid = {1}};
    tj_arg args[] = {TJ_ARG_BUF(bx), TJ_ARG_BUF(out[0]), TJ_ARG_BUF(out[1]), TJ_ARG_BUF(out[2])};
    int ok = tj_launch(dev, k, &cfg, args, 4, NULL, 0) == TJ_OK;
    for (int j = 0; ok && j < 3; j++)
        ok = tj_buffer_read(dev, out[j], 0, got[j], size) == TJ_OK;
    if (!ok)
        tap_diag("%s: %s", k->name, tj_last_error());
    static const char *const names[3] = {"popc", "clz", "brev"};
    int wrong[3] = {0, 0, 0};
    for (int i = 0; ok && i < N; i++) {
        uint64_t v = (uint64_t)tl_get(dt, in, (size_t)i).i & mask, want[3];
        reference(v, bits, &want[0], &want[1], &want[2]);
        for (int j = 0; j < 3; j++) {
            uint64_t have = (uint64_t)tl_get(dt, got[j], (size_t)i).i & mask;
            if (have != want[j] && wrong[j]++ < 3)
                tap_diag("%s(0x%llx) = 0x%llx, expected 0x%llx", names[j], (unsigned long long)v,
                         (unsigned long long)have, (unsigned long long)want[j]);
        }
    }
    for (int j = 0; j < 3; j++)
        tap_ok(ok && !wrong[j], "%s %s, edges and random values", tj_dtype_name(dt), names[j]);
    tj_buffer_free(dev, bx);
    for (int j = 0; j < 3; j++)
        tj_buffer_free(dev, out[j]);
}

int main(void)
{
    tj_device *dev = tl_setup("test_bit_ops");
    tap_plan(8 * 3 + 5);
    const tj_kernel *ks[] = {bits_i8, bits_i16, bits_i32, bits_i64, bits_u8, bits_u16, bits_u32, bits_u64};
    const tj_dtype dts[] = {TJ_I8, TJ_I16, TJ_I32, TJ_I64, TJ_U8, TJ_U16, TJ_U32, TJ_U64};
    for (int i = 0; i < (int)TL_COUNT(ks); i++)
        run(dev, ks[i], dts[i]);
    char line[32];
    tl_build_refused(popc_of_float, TJ_ERR_TYPE, "'popc'", "no rule for 'popc' of f32");
    snprintf(line, sizeof line, ":%d", bad_line);
    tap_ok(tl_error_mentions(line, NULL), "the error names the user's line %s", line);
    tl_build_refused(clz_of_i1, TJ_ERR_TYPE, "'clz'", "no rule for 'clz' of i1");
    tl_build_refused(brev_of_pointer, TJ_ERR_TYPE, "'brev'", "no rule for 'brev' of *i32");
    tl_ptx_of_every(ks, (int)TL_COUNT(ks));
    tj_device_close(dev);
    return tap_done();
}
