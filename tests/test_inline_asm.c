/* SPDX-License-Identifier: MIT */
/*
 * test_inline_asm.c — tj_inline_asm_elementwise (Triton's
 * tl.inline_asm_elementwise): PTX run per element on a GPU.
 *
 * The kernels use one register kind each: r (i32 add of two tiles, and of
 * a tile and a C number), f (an f32 multiply-add), h (the bits of an f16,
 * negated by an xor), l (a u64 shift) and d (an f64 negation), broadcast
 * ([R, 1] with [1, C]). Without a GPU the test checks what can be checked
 * here: the PTX holds the user's instruction once per element and ptxas
 * assembles it for sm_80 and sm_90; a CPU launch is refused, naming the
 * op; the constraint errors (letter and dtype, counts, the output's "=");
 * the printed IR reads back (tjit-opt's lit test inline-asm.tir). Packs
 * (tj_inline_asm's .pack, Triton's pack): two f16 in one r register
 * (add.rn.f16x2), four u8 in one (a mask of each byte), four u8 widened to
 * four u16 in two output registers (prmt), the two f16 of a register
 * swapped (prmt: lane 0 is the low half), and a scalar padded to a pack;
 * their PTX assembles, and their errors (a pack that does not fill whole
 * registers, too few outputs, a pack too large). Side effects (.side_effects,
 * Triton's is_pure=False): two reads of %globaltimer stay two where the
 * same pure reads are merged, and a red.global whose result is
 * unused stays in the PTX; PTX with no arguments gives a scalar. On a GPU
 * (tests/gpu/test_inline_asm.gpu) every element is checked against C, and
 * the red.global adds 1 to each element's counter exactly once.
 */
#include "testlib.h"

enum { R = 4, C = 32 };

/* o_add = a + b (r), o_add7 = a + 7 (r), o_fma = x * 2 + y (f), o_neg = -h
 * (h, on the bits), o_shl = u << 3 (l), o_dneg = -d (d); a [R, 1], b [1, C]. */
TJ_KERNEL(asm_kinds,
          TJ_PARAMS(TJ_PTR(a, i32), TJ_PTR(b, i32), TJ_PTR(x, f32), TJ_PTR(y, f32), TJ_PTR(h, f16),
                    TJ_PTR(u, u64), TJ_PTR(d, f64), TJ_PTR(o_add, i32), TJ_PTR(o_add7, i32),
                    TJ_PTR(o_fma, f32), TJ_PTR(o_neg, f16), TJ_PTR(o_shl, u64), TJ_PTR(o_dneg, f64)),
          TJ_CONSTS())
{
    tj_val r = tj_expand_dims(tj_arange(0, R), 1), c = tj_expand_dims(tj_arange(0, C), 0);
    tj_val at = tj_add(tj_mul(r, C), c);
    tj_val va = tj_load(tj_add(a, r)), vb = tj_load(tj_add(b, c));
    tj_store(tj_add(o_add, at), tj_inline_asm_elementwise("add.s32 $0, $1, $2;", "=r,r,r", TJ_I32, va, vb));
    tj_store(tj_add(o_add7, at), tj_inline_asm_elementwise("add.s32 $0, $1, $2;", "=r,r,r", TJ_I32,
                                                           tj_load(tj_add(a, tj_add(r, tj_mul(c, 0)))), 7));
    tj_val vx = tj_load(tj_add(x, at)), vy = tj_load(tj_add(y, at));
    tj_store(tj_add(o_fma, at), tj_inline_asm_elementwise("fma.rn.f32 $0, $1, 0f40000000, $2;", "=f,f,f", TJ_F32,
                                                          vx, vy));
    tj_store(tj_add(o_neg, at), tj_inline_asm_elementwise("xor.b16 $0, $1, 0x8000;", "=h,h", TJ_F16,
                                                          tj_load(tj_add(h, at))));
    tj_store(tj_add(o_shl, at), tj_inline_asm_elementwise("shl.b64 $0, $1, 3;", "=l,l", TJ_U64,
                                                          tj_load(tj_add(u, at))));
    tj_store(tj_add(o_dneg, at), tj_inline_asm_elementwise("neg.f64 $0, $1;", "=d,d", TJ_F64,
                                                           tj_load(tj_add(d, at))));
}

enum { NP = 256 };

/* Packs: o_h2 = p + q (f16, two per r register), o_mask = u & 0x7f (u8,
 * four per register), o_wide = u as u16 (four u8 in, two registers out),
 * o_sc[0] = u[0] & 0x7f (a scalar: one lane of a pack of 4), o_swap[i] =
 * p[i ^ 1] (the halves of each pair's register exchanged). */
TJ_KERNEL(asm_packed,
          TJ_PARAMS(TJ_PTR(p, f16), TJ_PTR(q, f16), TJ_PTR(u, u8), TJ_PTR(o_h2, f16), TJ_PTR(o_mask, u8),
                    TJ_PTR(o_wide, u16), TJ_PTR(o_sc, u8), TJ_PTR(o_swap, f16)),
          TJ_CONSTS())
{
    tj_val i = tj_arange(0, NP), vu = tj_load(tj_add(u, i));
    tj_store(tj_add(o_h2, i), tj_inline_asm("add.rn.f16x2 $0, $1, $2;", "=r,r,r", TJ_F16,
                                            TJ_VALS(tj_load(tj_add(p, i)), tj_load(tj_add(q, i))), .pack = 2));
    tj_store(tj_add(o_mask, i), tj_inline_asm("and.b32 $0, $1, 0x7f7f7f7f;", "=r,r", TJ_U8, TJ_VALS(vu), .pack = 4));
    tj_store(tj_add(o_wide, i), tj_inline_asm("prmt.b32 $0, $2, 0, 0x4140; prmt.b32 $1, $2, 0, 0x4342;", "=r,=r,r",
                                              TJ_U16, TJ_VALS(vu), .pack = 4));
    tj_store(o_sc, tj_inline_asm("and.b32 $0, $1, 0x7f7f7f7f;", "=r,r", TJ_U8, TJ_VALS(tj_load(u)), .pack = 4));
    tj_store(tj_add(o_swap, i), tj_inline_asm("prmt.b32 $0, $1, 0, 0x1032;", "=r,r", TJ_F16,
                                              TJ_VALS(tj_load(tj_add(p, i))), .pack = 2));
}

/* fp8 packs (Triton's use of pack): |x| of four e4m3 bytes at once. */
TJ_KERNEL(asm_fp8_packed, TJ_PARAMS(TJ_PTR(x, f8e4m3), TJ_PTR(o, f8e4m3)), TJ_CONSTS())
{
    tj_val i = tj_arange(0, NP);
    tj_store(tj_add(o, i), tj_inline_asm("and.b32 $0, $1, 0x7f7f7f7f;", "=r,r", TJ_F8E4M3,
                                         TJ_VALS(tj_load(tj_add(x, i))), .pack = 4));
}

enum { NE = 128 };

/* Side effects: o_dt[pid] = the time between two reads of the timer,
 * o_ctas[pid] = the grid's size (PTX with no arguments), and
 * counters[i] += 1 for each element i by a red.global whose result is
 * unused. timer_pure: the same reads, pure, which LLVM may merge. */
TJ_KERNEL(asm_effects, TJ_PARAMS(TJ_SCALAR(counters, u64), TJ_PTR(o_dt, u64), TJ_PTR(o_ctas, i32)), TJ_CONSTS())
{
    tj_val t0 = tj_inline_asm("mov.u64 $0, %globaltimer;", "=l", TJ_U64, TJ_VALS(), .side_effects = 1);
    tj_val counter = tj_add(counters, tj_mul(tj_cast(tj_arange(0, NE), TJ_U64), 4));
    tj_inline_asm("red.global.add.u32 [$1], 1;\n\tmov.u32 $0, 0;", "=r,l", TJ_I32, TJ_VALS(counter),
                  .side_effects = 1);
    tj_val t1 = tj_inline_asm("mov.u64 $0, %globaltimer;", "=l", TJ_U64, TJ_VALS(), .side_effects = 1);
    tj_store(tj_add(o_dt, tj_program_id(0)), tj_sub(t1, t0));
    tj_store(tj_add(o_ctas, tj_program_id(0)), tj_inline_asm_elementwise("mov.u32 $0, %nctaid.x;", "=r", TJ_I32));
}

TJ_KERNEL(timer_pure, TJ_PARAMS(TJ_PTR(o_dt, u64)), TJ_CONSTS())
{
    tj_val t0 = tj_inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", TJ_U64);
    tj_val t1 = tj_inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", TJ_U64);
    tj_store(o_dt, tj_sub(t1, t0));
}

/* PTX with side effects whose result nobody reads: the CPU must refuse it
 * all the same (it once ran the kernel without it). */
TJ_KERNEL(asm_unused, TJ_PARAMS(TJ_SCALAR(counters, u64), TJ_PTR(o, i32)), TJ_CONSTS())
{
    tj_val i = tj_arange(0, NE);
    tj_inline_asm("red.global.add.u32 [$1], 1;\n\tmov.u32 $0, 0;", "=r,l", TJ_I32,
                  TJ_VALS(tj_add(counters, tj_mul(tj_cast(i, TJ_U64), 4))), .side_effects = 1);
    tj_store(tj_add(o, i), i);
}

TJ_KERNEL(asm_effects_wrong, TJ_PARAMS(TJ_PTR(o, i32)), TJ_CONSTS())
{
    tj_store(o, tj_inline_asm("mov.u32 $0, 1;", "=r", TJ_I32, TJ_VALS(), .side_effects = 2));
}

#define BAD_PACK_KERNEL(NAME, CONSTRAINTS, DT, PACK)                                                  \
    TJ_KERNEL(NAME, TJ_PARAMS(TJ_PTR(h, f16), TJ_PTR(i, i8)), TJ_CONSTS())                          \
    {                                                                                                \
        tj_val v = tj_load(tj_add(h, tj_arange(0, 8))), k = tj_load(tj_add(i, tj_arange(0, 8)));     \
        tj_inline_asm("mov.b32 $0, $1;", CONSTRAINTS, DT, TJ_VALS(DT == TJ_I8 ? k : v), .pack = PACK); \
    }
BAD_PACK_KERNEL(pack_partial, "=r,r", TJ_I8, 3)     /* three bytes: not a whole r register */
BAD_PACK_KERNEL(pack_one_output, "=r,r", TJ_F16, 4) /* four f16 need two outputs */
BAD_PACK_KERNEL(pack_too_big, "=r,r", TJ_I8, 64)

#define BAD_ASM_KERNEL(NAME, CONSTRAINTS, DT, ARG)                                                    \
    TJ_KERNEL(NAME, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(i, i8)), TJ_CONSTS())                          \
    {                                                                                                \
        tj_val v = tj_load(tj_add(x, tj_arange(0, 8))), k = tj_load(tj_add(i, tj_arange(0, 8)));     \
        (void)v, (void)k;                                                                            \
        tj_inline_asm_elementwise("mov.b32 $0, $1;", CONSTRAINTS, DT, ARG);                          \
    }
BAD_ASM_KERNEL(asm_letter_wrong, "=r,h", TJ_I32, v)     /* an f32 in an h register */
BAD_ASM_KERNEL(asm_out_wrong, "=f,r", TJ_I32, v)        /* an i32 result in an f register */
BAD_ASM_KERNEL(asm_too_few, "=r", TJ_I32, v)             /* no input's constraint */
BAD_ASM_KERNEL(asm_too_many, "=r,r,r", TJ_I32, v)       /* two inputs' for one argument */
BAD_ASM_KERNEL(asm_no_output, "r,r", TJ_I32, v)          /* no "=" */
BAD_ASM_KERNEL(asm_byte, "=r,r", TJ_I32, k)              /* an i8: no register of 8 bits */

static float f16_bits_negated(uint16_t bits)
{
    return tj_f16_to_f32((uint16_t)(bits ^ 0x8000));
}

static void run_packed_on_gpu(tj_device *dev)
{
    uint16_t p[NP], q[NP], o_h2[NP], o_wide[NP], o_swap[NP];
    uint8_t u[NP], o_mask[NP], o_sc[1];
    for (int i = 0; i < NP; i++) {
        p[i] = tj_f32_to_f16((float)tl_rand_double(-100, 100)), q[i] = tj_f32_to_f16((float)tl_rand_double(-100, 100));
        u[i] = (uint8_t)tl_rand_u64();
    }
    tj_buffer bp = tl_upload(dev, p, sizeof p), bq = tl_upload(dev, q, sizeof q), bu = tl_upload(dev, u, sizeof u);
    tj_buffer bh2 = tl_poisoned(dev, sizeof o_h2), bmask = tl_poisoned(dev, sizeof o_mask);
    tj_buffer bwide = tl_poisoned(dev, sizeof o_wide), bsc = tl_poisoned(dev, sizeof o_sc);
    tj_buffer bswap = tl_poisoned(dev, sizeof o_swap);
    tj_arg args[] = {TJ_ARG_BUF(bp),    TJ_ARG_BUF(bq),  TJ_ARG_BUF(bu),   TJ_ARG_BUF(bh2),
                     TJ_ARG_BUF(bmask), TJ_ARG_BUF(bwide), TJ_ARG_BUF(bsc), TJ_ARG_BUF(bswap)};
    tj_launch_cfg cfg = {.grid = {1}};
    if (!tl_launch_failed(tj_launch(dev, asm_packed, &cfg, args, 8, NULL, 0), "packed inline PTX on the GPU")) {
        tl_download(dev, bh2, o_h2, sizeof o_h2), tl_download(dev, bmask, o_mask, sizeof o_mask);
        tl_download(dev, bwide, o_wide, sizeof o_wide), tl_download(dev, bsc, o_sc, sizeof o_sc);
        tl_download(dev, bswap, o_swap, sizeof o_swap);
        int wrong = o_sc[0] != (u[0] & 0x7f);
        for (int i = 0; i < NP; i++) {
            float sum = (float)tl_round(TJ_F16, (double)tj_f16_to_f32(p[i]) + tj_f16_to_f32(q[i]));
            wrong += tj_f16_to_f32(o_h2[i]) != sum || o_mask[i] != (u[i] & 0x7f) || o_wide[i] != u[i] ||
                     o_swap[i] != p[i ^ 1];
        }
        tap_ok(!wrong, "packed inline PTX on the GPU: f16x2 add, byte masks, bytes widened, a scalar, halves swapped");
    }
    tj_buffer_free(dev, bp), tj_buffer_free(dev, bq), tj_buffer_free(dev, bu), tj_buffer_free(dev, bh2);
    tj_buffer_free(dev, bmask), tj_buffer_free(dev, bwide), tj_buffer_free(dev, bsc), tj_buffer_free(dev, bswap);
}

/* Every counter is 1: each element's red.global ran once, its result unused. */
static void run_effects_on_gpu(tj_device *dev)
{
    enum { GRID = 3 };
    uint32_t counters[NE];
    uint64_t dt[GRID], address = 0;
    int32_t ctas[GRID];
    tj_buffer bc = tl_poisoned(dev, sizeof counters), bdt = tl_poisoned(dev, sizeof dt);
    tj_buffer bctas = tl_poisoned(dev, sizeof ctas);
    tj_buffer_write(dev, bc, 0, memset(counters, 0, sizeof counters), sizeof counters);
    tj_buffer_address(dev, bc, &address);
    tj_arg args[] = {TJ_ARG_U64(address), TJ_ARG_BUF(bdt), TJ_ARG_BUF(bctas)};
    tj_launch_cfg cfg = {.grid = {GRID}};
    if (!tl_launch_failed(tj_launch(dev, asm_effects, &cfg, args, 3, NULL, 0), "inline PTX with side effects")) {
        tl_download(dev, bc, counters, sizeof counters), tl_download(dev, bdt, dt, sizeof dt);
        tl_download(dev, bctas, ctas, sizeof ctas);
        int wrong = 0;
        for (int i = 0; i < NE; i++)
            wrong += counters[i] != GRID;
        for (int p = 0; p < GRID; p++)
            wrong += ctas[p] != GRID || dt[p] > (uint64_t)1e9; /* t1 >= t0, within a second */
        if (wrong)
            tap_diag("counters[0] %u (want %d), ctas[0] %d, dt[0] %llu ns", counters[0], GRID, ctas[0],
                     (unsigned long long)dt[0]);
        tap_ok(!wrong, "inline PTX with side effects on the GPU: each element's red.global ran once per program, "
               "its result unused; no-argument PTX reads the grid's size");
    }
    tj_buffer_free(dev, bc), tj_buffer_free(dev, bdt), tj_buffer_free(dev, bctas);
}

/* The side effects' PTX for sm_90: volatile reads stay two, pure ones are
 * merged; the unused red.global stays. */
static void check_effects_ptx(void)
{
    char *ptx = NULL, *pure_ptx = NULL;
    tj_status st = tj_kernel_ptx(asm_effects, NULL, 0, "sm_90", 4, &ptx);
    tj_status pure_st = tj_kernel_ptx(timer_pure, NULL, 0, "sm_90", 4, &pure_ptx);
    if (st != TJ_OK || pure_st != TJ_OK)
        tap_diag("%s", tj_last_error());
    tap_ok(st == TJ_OK && tl_count(ptx, "%globaltimer") == 2 && strstr(ptx, "red.global.add.u32"),
           "PTX with side effects keeps both timer reads and the red.global whose result is unused");
    tap_ok(pure_st == TJ_OK && tl_count(pure_ptx, "%globaltimer") < 2,
           "the same reads without side effects are merged (why is_pure=False matters)");
    tap_ok(st == TJ_OK && strstr(ptx, "%nctaid.x"), "PTX with no arguments gives a scalar");
    free(ptx), free(pure_ptx);
}

static void run_on_gpu(tj_device *dev)
{
    int32_t a[R], b[C], o_add[R * C], o_add7[R * C];
    float x[R * C], y[R * C], o_fma[R * C];
    uint16_t h[R * C], o_neg[R * C];
    uint64_t u[R * C], o_shl[R * C];
    double d[R * C], o_dneg[R * C];
    for (int i = 0; i < R; i++)
        a[i] = (int32_t)tl_rand_range(-100000, 100000);
    for (int j = 0; j < C; j++)
        b[j] = (int32_t)tl_rand_range(-100000, 100000);
    for (int i = 0; i < R * C; i++) {
        x[i] = (float)tl_rand_double(-10, 10), y[i] = (float)tl_rand_double(-10, 10);
        h[i] = tj_f32_to_f16((float)tl_rand_double(-10, 10));
        u[i] = tl_rand_u64(), d[i] = tl_rand_double(-1e6, 1e6);
    }
    tj_buffer in[7] = {tl_upload(dev, a, sizeof a), tl_upload(dev, b, sizeof b), tl_upload(dev, x, sizeof x),
                       tl_upload(dev, y, sizeof y), tl_upload(dev, h, sizeof h), tl_upload(dev, u, sizeof u),
                       tl_upload(dev, d, sizeof d)};
    size_t sizes[6] = {sizeof o_add, sizeof o_add7, sizeof o_fma, sizeof o_neg, sizeof o_shl, sizeof o_dneg};
    void *outs[6] = {o_add, o_add7, o_fma, o_neg, o_shl, o_dneg};
    tj_buffer out[6];
    tj_arg args[13];
    for (int i = 0; i < 7; i++)
        args[i] = TJ_ARG_BUF(in[i]);
    for (int i = 0; i < 6; i++)
        out[i] = tl_poisoned(dev, sizes[i]), args[7 + i] = TJ_ARG_BUF(out[i]);
    tj_launch_cfg cfg = {.grid = {1}};
    if (tl_launch_failed(tj_launch(dev, asm_kinds, &cfg, args, 13, NULL, 0), "inline PTX on the GPU"))
        return;
    for (int i = 0; i < 6; i++)
        tl_download(dev, out[i], outs[i], sizes[i]);
    int wrong = 0;
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) {
            int k = i * C + j;
            wrong += o_add[k] != (int32_t)((uint32_t)a[i] + (uint32_t)b[j]);
            wrong += o_add7[k] != (int32_t)((uint32_t)a[i] + 7u);
            wrong += o_fma[k] != fmaf(x[k], 2.0f, y[k]);
            wrong += tj_f16_to_f32(o_neg[k]) != f16_bits_negated(h[k]);
            wrong += o_shl[k] != u[k] << 3;
            wrong += o_dneg[k] != -d[k];
        }
    tap_ok(!wrong, "inline PTX on the GPU: r, f, h, l and d registers, broadcast operands, every element");
    for (int i = 0; i < 7; i++)
        tj_buffer_free(dev, in[i]);
    for (int i = 0; i < 6; i++)
        tj_buffer_free(dev, out[i]);
}

int main(void)
{
    tj_device *dev = tl_setup("test_inline_asm");
    int on_gpu = tj_device_get_kind(dev) == TJ_DEVICE_GPU;
    tap_plan(2 + 1 + 6 + 2 + 1 + 3 + 1 + 3 + 1 + 1);
    static const char *const sms[] = {"sm_80", "sm_90"};
    for (int t = 0; t < 2; t++) {
        char *ptx = NULL;
        tj_status st = tj_kernel_ptx(asm_kinds, NULL, 0, sms[t], 4, &ptx);
        if (st != TJ_OK)
            tap_diag("%s", tj_last_error());
        /* each instruction once per element a thread holds: 128 elements, 128 threads */
        int ok = st == TJ_OK && strstr(ptx, "add.s32") && strstr(ptx, "fma.rn.f32") && strstr(ptx, "xor.b16") &&
                 strstr(ptx, "shl.b64") && strstr(ptx, "neg.f64");
        tap_ok(ok, "PTX for %s holds each inline instruction%s", sms[t],
               getenv("TJIT_PTXAS") && *getenv("TJIT_PTXAS") ? ", and ptxas assembles it" : "");
        free(ptx);
    }
    for (int t = 0; t < 2; t++) {
        char *ptx = NULL;
        tj_status st = tj_kernel_ptx(asm_packed, NULL, 0, sms[t], 4, &ptx);
        if (st != TJ_OK)
            tap_diag("%s", tj_last_error());
        int ok = st == TJ_OK && strstr(ptx, "add.rn.f16x2") && strstr(ptx, "0x7f7f7f7f") && strstr(ptx, "prmt.b32") &&
                 strstr(ptx, "0x1032");
        tap_ok(ok, "PTX for %s holds each packed instruction%s", sms[t],
               getenv("TJIT_PTXAS") && *getenv("TJIT_PTXAS") ? ", and ptxas assembles it" : "");
        free(ptx);
    }
    char *fp8_ptx = NULL;
    tj_status fp8_st = tj_kernel_ptx(asm_fp8_packed, NULL, 0, "sm_90", 4, &fp8_ptx);
    if (fp8_st != TJ_OK)
        tap_diag("%s", tj_last_error());
    tap_ok(fp8_st == TJ_OK && strstr(fp8_ptx, "0x7f7f7f7f"), "fp8 values are packed four to an r register");
    free(fp8_ptx);
    check_effects_ptx();
    if (on_gpu) {
        run_on_gpu(dev);
        run_packed_on_gpu(dev);
        run_effects_on_gpu(dev);
    } else {
        int32_t dummy[R * C] = {0};
        tj_buffer bufs[13];
        tj_arg args[13];
        for (int i = 0; i < 13; i++)
            bufs[i] = tl_upload(dev, dummy, sizeof dummy), args[i] = TJ_ARG_BUF(bufs[i]);
        tj_launch_cfg cfg = {.grid = {1}};
        tj_status st = tj_launch(dev, asm_kinds, &cfg, args, 13, NULL, 0);
        tap_ok(st != TJ_OK && tl_error_mentions("asm_kinds", "runs on a GPU only", NULL),
               "a CPU launch is refused, saying inline PTX runs on a GPU only");
        st = tj_launch(dev, asm_packed, &cfg, args, 8, NULL, 0);
        tap_ok(st != TJ_OK && tl_error_mentions("asm_packed", "runs on a GPU only", NULL),
               "a CPU launch of packed PTX is refused the same way");
        tj_arg unused_args[] = {TJ_ARG_U64(0), args[1]};
        st = tj_launch(dev, asm_unused, &cfg, unused_args, 2, NULL, 0);
        tap_ok(st != TJ_OK && tl_error_mentions("asm_unused", "runs on a GPU only", NULL),
               "a CPU launch of PTX with side effects, its result unused, is refused the same way");
        for (int i = 0; i < 13; i++)
            tj_buffer_free(dev, bufs[i]);
    }
    tl_build_refused(asm_letter_wrong, TJ_ERR_INVALID_ARG, "'inline_asm_elementwise'", "an input's constraint letter");
    tl_build_refused(asm_out_wrong, TJ_ERR_INVALID_ARG, NULL, "the output's constraint letter");
    tl_build_refused(asm_too_few, TJ_ERR_INVALID_ARG, NULL, "fewer inputs than there are arguments");
    tl_build_refused(asm_too_many, TJ_ERR_INVALID_ARG, NULL, "more inputs than there are arguments");
    tl_build_refused(asm_no_output, TJ_ERR_INVALID_ARG, NULL, "must start with the output's");
    tl_build_refused(asm_byte, TJ_ERR_INVALID_ARG, NULL, "cast 8-bit values");
    tl_build_refused(pack_partial, TJ_ERR_INVALID_ARG, "'inline_asm_elementwise'", "does not fill whole registers");
    tl_build_refused(pack_one_output, TJ_ERR_INVALID_ARG, NULL, "the output's pack needs more outputs");
    tl_build_refused(pack_too_big, TJ_ERR_INVALID_ARG, NULL, "pack 64: 1 to 16");
    tl_build_refused(asm_effects_wrong, TJ_ERR_INVALID_ARG, "'inline_asm_elementwise'", "side_effects 2: 0 (pure) or 1");
    tj_device_close(dev);
    return tap_done();
}
