/* SPDX-License-Identifier: MIT */
/*
 * test_many_params.c — a kernel of TJ_MAX_PARAMS (64) parameters, as wide
 * as attention kernels get and four times the old limit of 16.
 *
 * wide_kernel takes ten input pointers of ten dtypes, two output pointers
 * and 52 scalars cycling through all thirteen dtypes, and eight constants.
 * Its body writes every one of them to its own output slot: input pointer k
 * contributes its element k (so a pointer bound to the wrong buffer or
 * offset shows), each scalar itself, each constant itself; integers go out
 * as i64, floats as f64, and a slot holding the wrong value names the
 * parameter. The launch is the typed one TJ_KERNEL defines (64 C
 * arguments and 8 constants), so this also proves the macros count and
 * expand that far; make check assembles the kernel's PTX with ptxas. The
 * 65-parameter kernel that must not compile is tests/test_too_many_params.sh.
 */
#include "testlib.h"

enum { NPTR_IN = 10, NSCALAR = 52, NCONST = 8, NSLOT = NPTR_IN + NSCALAR + NCONST, LEN = 16 };

static const tj_dtype ptr_dtypes[NPTR_IN] = {TJ_F32, TJ_F64, TJ_F16, TJ_BF16, TJ_I8, TJ_I16, TJ_I32, TJ_I64, TJ_U8, TJ_U16};
static const tj_dtype scalar_dtypes[NSCALAR] = {
    TJ_I1, TJ_I8, TJ_I16, TJ_I32, TJ_I64, TJ_U8, TJ_U16, TJ_U32, TJ_U64, TJ_F16, TJ_BF16,
    TJ_F32, TJ_F64, TJ_I1, TJ_I8, TJ_I16, TJ_I32, TJ_I64, TJ_U8, TJ_U16, TJ_U32, TJ_U64,
    TJ_F16, TJ_BF16, TJ_F32, TJ_F64, TJ_I1, TJ_I8, TJ_I16, TJ_I32, TJ_I64, TJ_U8, TJ_U16,
    TJ_U32, TJ_U64, TJ_F16, TJ_BF16, TJ_F32, TJ_F64, TJ_I1, TJ_I8, TJ_I16, TJ_I32, TJ_I64,
    TJ_U8, TJ_U16, TJ_U32, TJ_U64, TJ_F16, TJ_BF16, TJ_F32, TJ_F64};

/* Slot k of out_i / out_f: an integer value as i64, a float as f64. */
static void put(tj_val out_i, tj_val out_f, int slot, tj_val v, tj_dtype dt)
{
    if (tl_is_float(dt))
        tj_store(tj_add(out_f, slot), tj_cast(v, TJ_F64));
    else
        tj_store(tj_add(out_i, slot), tj_cast(v, TJ_I64));
}

TJ_KERNEL(wide_kernel,
          TJ_PARAMS(TJ_PTR(x_f32, f32), TJ_PTR(x_f64, f64), TJ_PTR(x_f16, f16),
                    TJ_PTR(x_bf16, bf16), TJ_PTR(x_i8, i8), TJ_PTR(x_i16, i16),
                    TJ_PTR(x_i32, i32), TJ_PTR(x_i64, i64), TJ_PTR(x_u8, u8),
                    TJ_PTR(x_u16, u16), TJ_PTR(out_i, i64), TJ_PTR(out_f, f64),
                    TJ_SCALAR(s0_i1, i1), TJ_SCALAR(s1_i8, i8), TJ_SCALAR(s2_i16, i16),
                    TJ_SCALAR(s3_i32, i32), TJ_SCALAR(s4_i64, i64), TJ_SCALAR(s5_u8, u8),
                    TJ_SCALAR(s6_u16, u16), TJ_SCALAR(s7_u32, u32), TJ_SCALAR(s8_u64, u64),
                    TJ_SCALAR(s9_f16, f16), TJ_SCALAR(s10_bf16, bf16),
                    TJ_SCALAR(s11_f32, f32), TJ_SCALAR(s12_f64, f64),
                    TJ_SCALAR(s13_i1, i1), TJ_SCALAR(s14_i8, i8), TJ_SCALAR(s15_i16, i16),
                    TJ_SCALAR(s16_i32, i32), TJ_SCALAR(s17_i64, i64),
                    TJ_SCALAR(s18_u8, u8), TJ_SCALAR(s19_u16, u16),
                    TJ_SCALAR(s20_u32, u32), TJ_SCALAR(s21_u64, u64),
                    TJ_SCALAR(s22_f16, f16), TJ_SCALAR(s23_bf16, bf16),
                    TJ_SCALAR(s24_f32, f32), TJ_SCALAR(s25_f64, f64),
                    TJ_SCALAR(s26_i1, i1), TJ_SCALAR(s27_i8, i8), TJ_SCALAR(s28_i16, i16),
                    TJ_SCALAR(s29_i32, i32), TJ_SCALAR(s30_i64, i64),
                    TJ_SCALAR(s31_u8, u8), TJ_SCALAR(s32_u16, u16),
                    TJ_SCALAR(s33_u32, u32), TJ_SCALAR(s34_u64, u64),
                    TJ_SCALAR(s35_f16, f16), TJ_SCALAR(s36_bf16, bf16),
                    TJ_SCALAR(s37_f32, f32), TJ_SCALAR(s38_f64, f64),
                    TJ_SCALAR(s39_i1, i1), TJ_SCALAR(s40_i8, i8), TJ_SCALAR(s41_i16, i16),
                    TJ_SCALAR(s42_i32, i32), TJ_SCALAR(s43_i64, i64),
                    TJ_SCALAR(s44_u8, u8), TJ_SCALAR(s45_u16, u16),
                    TJ_SCALAR(s46_u32, u32), TJ_SCALAR(s47_u64, u64),
                    TJ_SCALAR(s48_f16, f16), TJ_SCALAR(s49_bf16, bf16),
                    TJ_SCALAR(s50_f32, f32), TJ_SCALAR(s51_f64, f64)),
          TJ_CONSTS(C0, C1, C2, C3, C4, C5, C6, C7))
{
    const tj_val ptrs[NPTR_IN] = {x_f32, x_f64, x_f16, x_bf16, x_i8, x_i16, x_i32, x_i64, x_u8, x_u16};
    const tj_val scalars[NSCALAR] = {
        s0_i1, s1_i8, s2_i16, s3_i32, s4_i64, s5_u8, s6_u16, s7_u32, s8_u64, s9_f16,
        s10_bf16, s11_f32, s12_f64, s13_i1, s14_i8, s15_i16, s16_i32, s17_i64, s18_u8,
        s19_u16, s20_u32, s21_u64, s22_f16, s23_bf16, s24_f32, s25_f64, s26_i1, s27_i8,
        s28_i16, s29_i32, s30_i64, s31_u8, s32_u16, s33_u32, s34_u64, s35_f16, s36_bf16,
        s37_f32, s38_f64, s39_i1, s40_i8, s41_i16, s42_i32, s43_i64, s44_u8, s45_u16,
        s46_u32, s47_u64, s48_f16, s49_bf16, s50_f32, s51_f64};
    const int64_t consts[NCONST] = {C0, C1, C2, C3, C4, C5, C6, C7};
    for (int k = 0; k < NPTR_IN; k++)
        put(out_i, out_f, k, tj_load(tj_add(ptrs[k], k)), ptr_dtypes[k]);
    for (int k = 0; k < NSCALAR; k++)
        put(out_i, out_f, NPTR_IN + k, scalars[k], scalar_dtypes[k]);
    for (int k = 0; k < NCONST; k++)
        put(out_i, out_f, NPTR_IN + NSCALAR + k, tj_i64(consts[k]), TJ_I64);
}

int main(void)
{
    tj_device *dev = tl_setup("test_many_params");
    tap_plan(3);

    void *host[NPTR_IN];
    tj_buffer in[NPTR_IN];
    for (int k = 0; k < NPTR_IN; k++) {
        host[k] = malloc(LEN * tj_dtype_size(ptr_dtypes[k]));
        tl_fill_random(ptr_dtypes[k], host[k], LEN);
        in[k] = tl_upload(dev, host[k], LEN * tj_dtype_size(ptr_dtypes[k]));
    }
    tl_num s[NSCALAR];
    for (int k = 0; k < NSCALAR; k++)
        s[k] = tl_random(scalar_dtypes[k]);
    int64_t c[NCONST];
    for (int k = 0; k < NCONST; k++)
        c[k] = (int64_t)tl_rand_u64();
    tj_buffer out_i = tl_poisoned(dev, NSLOT * 8), out_f = tl_poisoned(dev, NSLOT * 8);

    tj_launch_cfg cfg = tl_grid(1, 1, 1);
    tj_status st = wide_kernel_launch(dev, &cfg,
        in[0], in[1], in[2], in[3], in[4], in[5], in[6], in[7], in[8], in[9], out_i, out_f,
        (_Bool)s[0].i, (int8_t)s[1].i, (int16_t)s[2].i, (int32_t)s[3].i, (int64_t)s[4].i,
        (uint8_t)s[5].i, (uint16_t)s[6].i, (uint32_t)s[7].i, (uint64_t)s[8].i,
        (float)s[9].f, (float)s[10].f, (float)s[11].f, (double)s[12].f, (_Bool)s[13].i,
        (int8_t)s[14].i, (int16_t)s[15].i, (int32_t)s[16].i, (int64_t)s[17].i,
        (uint8_t)s[18].i, (uint16_t)s[19].i, (uint32_t)s[20].i, (uint64_t)s[21].i,
        (float)s[22].f, (float)s[23].f, (float)s[24].f, (double)s[25].f, (_Bool)s[26].i,
        (int8_t)s[27].i, (int16_t)s[28].i, (int32_t)s[29].i, (int64_t)s[30].i,
        (uint8_t)s[31].i, (uint16_t)s[32].i, (uint32_t)s[33].i, (uint64_t)s[34].i,
        (float)s[35].f, (float)s[36].f, (float)s[37].f, (double)s[38].f, (_Bool)s[39].i,
        (int8_t)s[40].i, (int16_t)s[41].i, (int32_t)s[42].i, (int64_t)s[43].i,
        (uint8_t)s[44].i, (uint16_t)s[45].i, (uint32_t)s[46].i, (uint64_t)s[47].i,
        (float)s[48].f, (float)s[49].f, (float)s[50].f, (double)s[51].f, c[0], c[1], c[2],
        c[3], c[4], c[5], c[6], c[7]);
    tap_ok(st == TJ_OK, "a kernel of 64 parameters and 8 constants launches (typed launch)");
    if (st != TJ_OK)
        tap_diag("  %s: %s", tj_status_name(st), tj_last_error());

    int64_t got_i[NSLOT];
    double got_f[NSLOT];
    tl_download(dev, out_i, got_i, sizeof got_i);
    tl_download(dev, out_f, got_f, sizeof got_f);
    int bad = 0;
    for (int slot = 0; slot < NSLOT; slot++) {
        tj_dtype dt;
        tl_num want;
        const char *what;
        char name[32];
        if (slot < NPTR_IN) {
            dt = ptr_dtypes[slot];
            want = tl_get(dt, host[slot], (size_t)slot);
            snprintf(name, sizeof name, "pointer %d", slot);
        } else if (slot < NPTR_IN + NSCALAR) {
            dt = scalar_dtypes[slot - NPTR_IN];
            want = s[slot - NPTR_IN];
            snprintf(name, sizeof name, "scalar %d", slot - NPTR_IN);
        } else {
            dt = TJ_I64;
            want = tl_int(c[slot - NPTR_IN - NSCALAR]);
            snprintf(name, sizeof name, "constant %d", slot - NPTR_IN - NSCALAR);
        }
        what = name;
        int ok = tl_is_float(dt) ? got_f[slot] == want.f : got_i[slot] == want.i;
        if (!ok && bad++ < 8)
            tap_diag("  %s (%s): got %lld / %.9g, expected %lld / %.9g", what, tj_dtype_name(dt),
                     (long long)got_i[slot], got_f[slot], (long long)want.i, want.f);
    }
    tap_ok(bad == 0, "each of the 64 parameters and 8 constants arrives with its value");

    char *ptx = NULL;
    st = tj_kernel_ptx(wide_kernel, c, NCONST, NULL, 0, &ptx);
    tap_ok(st == TJ_OK && ptx && strstr(ptx, "wide_kernel_param_63") != NULL,
           "its PTX takes 64 parameters (and one more, the assert record)");
    if (st != TJ_OK)
        tap_diag("  %s: %s", tj_status_name(st), tj_last_error());
    free(ptx);

    for (int k = 0; k < NPTR_IN; k++) {
        tj_buffer_free(dev, in[k]);
        free(host[k]);
    }
    tj_buffer_free(dev, out_i);
    tj_buffer_free(dev, out_f);
    tj_device_close(dev);
    return tap_done();
}
