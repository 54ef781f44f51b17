/* SPDX-License-Identifier: MIT */
/*
 * test_stream_k.c — stream-K (src/passes/stream_k.c, src/jit/gpu/
 * stream_k.c): a persistent matmul's last wave split along K into pieces
 * that the last to arrive sums.
 *
 * Without a GPU (the PTX, assembled by ptxas where make check sets
 * TJIT_PTXAS):
 *  - the block-pointer matmul, warp-specialized on sm_90a: its pieces
 *    arrive with an acquire read, a fenced acq_rel count and bar.red.or
 *    among the consumers (named barrier 1), its artifact asks for a
 *    workspace of 128x128 f32 pieces, and its TMA copies stay;
 *  - the benchmark's bf16 kernel at 128x256x64: no spill but of a few
 *    scalars (ptxas -v), its C still goes by a TMA store (the sum keeps
 *    the dot's layout), and its partials move in 16-byte parts, read
 *    back through L2 (.cg);
 *  - forced persistent on sm_80 (no producer warpgroup): barrier 0;
 *  - required of a kernel whose K loop carries pointer tiles (the
 *    tutorial's): refused, saying why.
 *  - the split itself, its IR run by a scalar evaluator for many tile,
 *    program and K counts: every K iteration of every tile computed
 *    once, the last wave in pieces (whole where it leaves fewer than
 *    1/16 of the programs idle), in ranges of 8 iterations or more (but
 *    at tile edges), with one piece number a tile and a program's two
 *    pieces in two slots;
 * On any device (the GPU when tests/gpu-test.sh runs it; the CPU ignores
 * the option), C checked element by element with C poisoned, stream-K
 * required:
 *  - fewer tiles than programs (a range a tile, or pieces of 2 or 3),
 *    K of one iteration (programs with no iteration at all), ragged
 *    edges over more tiles than a wave, a long K, and many waves; each
 *    launched twice (the first must leave the counters zero);
 *  - two streams at once (a workspace each), and a stream made after one
 *    is destroyed;
 *  - on one stream, a shape that splits few tiles, then one that splits
 *    many (its counters reaching where the first left partial sums);
 *  - a launch value that is no tj_stream_k, and stream-K required of a
 *    launch that is not persistent (a GPU's matter), are refused.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builder/ir.h"
#include "ffi_bind/ffi_bind.h"
#include "jit/pipeline.h"
#include "jit/runtime/ptxas.h"
#include "matmul_spec.h"
#include "tap.h"
#include "testlib.h"
#include "tjit.h"
#include "../samples/matmul_kernel.h"

TJ_KERNEL(sk_matmul,
          TJ_PARAMS(TJ_PTR(a, f16), TJ_PTR(b, f16), TJ_PTR(c, f32), TJ_SCALAR(M, i32), TJ_SCALAR(N, i32),
                    TJ_SCALAR(K, i32), TJ_SCALAR(stride_am, i32), TJ_SCALAR(stride_ak, i32),
                    TJ_SCALAR(stride_bk, i32), TJ_SCALAR(stride_bn, i32), TJ_SCALAR(stride_cm, i32),
                    TJ_SCALAR(stride_cn, i32)),
          TJ_CONSTS(BM, BN, BK, GROUP))
{
    matmul_block_ptr_body(a, b, c, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn, BM,
                          BN, BK, GROUP, TJ_PRECISION_IEEE, TJ_F32);
}

TJ_KERNEL(sk_bf16,
          TJ_PARAMS(TJ_PTR(a, bf16), TJ_PTR(b, bf16), TJ_PTR(c, bf16), TJ_SCALAR(M, i32), TJ_SCALAR(N, i32),
                    TJ_SCALAR(K, i32), TJ_SCALAR(stride_am, i32), TJ_SCALAR(stride_ak, i32),
                    TJ_SCALAR(stride_bk, i32), TJ_SCALAR(stride_bn, i32), TJ_SCALAR(stride_cm, i32),
                    TJ_SCALAR(stride_cn, i32)),
          TJ_CONSTS(BM, BN, BK, GROUP))
{
    matmul_block_ptr_body(a, b, c, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn, BM,
                          BN, BK, GROUP, TJ_PRECISION_IEEE, TJ_BF16);
}

/* The tutorial's loop: pointer tiles advanced, not block pointers. */
MATMUL_TUTORIAL_KERNEL(sk_tutorial, f16, f16, f32, TJ_F32, TJ_PRECISION_IEEE)

static tj_device *dev;

/* Kernel k's artifact at BM x BN x 64 (groups of 8), 8 warps, for sm_<sm>[a],
 * persistent as mode says, stream-K required; ptxas checks it where it is set. */
static tj_status compile(const tj_kernel *k, int64_t bm, int64_t bn, int sm, int arch_specific,
                         tjp_persistence mode, tjj_artifact *art)
{
    int64_t consts[4] = {bm, bn, 64, 8};
    tji_func *fn = NULL;
    memset(art, 0, sizeof *art);
    tj_status st = tji_build(k, consts, 4, &fn);
    if (st == TJ_OK)
        st = tjj_compile_gpu(fn, &(tjj_gpu_target){.sm = sm, .arch_specific = arch_specific, .num_warps = 8,
                                                   .spec = tl_matmul_spec(k, 4096),
                                                   .persistent = (int)mode | TJP_STREAM_K_REQUIRED},
                             art);
    if (st == TJ_OK && tjj_ptxas_path())
        st = tjj_ptxas_check(tjj_ptxas_path(), art->gpu.ptx, sm, arch_specific, fn->name);
    tji_func_free(fn);
    return st;
}

static void ptx_of_stream_k(void)
{
    tjj_artifact art;
    tj_status st = compile(sk_matmul, 128, 128, 90, 1, TJP_PERSIST_WHERE_IT_PAYS, &art);
    if (st != TJ_OK)
        tap_diag("%s", tj_last_error());
    const char *ptx = st == TJ_OK ? art.gpu.ptx : "";
    tap_ok(st == TJ_OK && art.gpu.persistent && art.gpu.producer_warps == 4 &&
               art.gpu.stream_k_piece_bytes == 128 * 128 * 4,
           "sm_90a: persistent, warp-specialized, pieces of 128x128 f32 (%lld bytes)",
           (long long)art.gpu.stream_k_piece_bytes);
    tap_ok(strstr(ptx, "ld.acquire.gpu.global.u32") && strstr(ptx, "fence.acq_rel.gpu") &&
               strstr(ptx, "atom.acq_rel.gpu.global.add.u32") && strstr(ptx, "bar.red.or.pred"),
           "a piece arrives: acquire read, fenced acq_rel count, bar.red.or");
    tap_ok(strstr(ptx, "bar.red.or.pred q, 1, 256, p;") != NULL,
           "among the consumers only (named barrier 1, 256 threads)");
    tap_ok(strstr(ptx, "cp.async.bulk.tensor.2d.shared::cluster.global") != NULL,
           "its loads stay TMA copies");
    tjj_artifact_free(&art);

    const char *ptxas = tjj_ptxas_path();
    st = compile(sk_bf16, 128, 256, 90, 1, TJP_PERSIST_WHERE_IT_PAYS, &art);
    if (st != TJ_OK)
        tap_diag("%s", tj_last_error());
    long spills = st == TJ_OK && ptxas ? tl_ptxas_spills(ptxas, art.gpu.ptx) : -1;
    /* a few of the tile loop's scalars may go to local memory (reloaded
     * once a trip); the accumulator, 512 bytes a thread, never */
    tap_ok(st == TJ_OK && (!ptxas || (spills >= 0 && spills <= 64)),
           "the benchmark's bf16 128x256x64 kernel: ptxas -v spills no more than a few scalars (%ld bytes)",
           spills);
    tap_ok(st == TJ_OK && strstr(art.gpu.ptx, "cp.async.bulk.tensor.2d.global.shared::cta") != NULL,
           "its C goes by a TMA store");
    /* the partials in the threads' register order: a warp's access is 512
     * contiguous bytes of 16-byte parts, read back through L2 alone */
    const char *saved = st == TJ_OK ? strstr(art.gpu.ptx, "st.global.v4.b32") : NULL;
    const char *summed = st == TJ_OK ? strstr(art.gpu.ptx, "ld.global.cg.v4.b32") : NULL;
    tap_ok(saved && summed && !strstr(art.gpu.ptx, "ld.volatile") && !strstr(art.gpu.ptx, "st.global.v2"),
           "its partials are stored and read in 16-byte parts (ld.global.cg.v4: L2, no volatile loads)");
    tjj_artifact_free(&art);

    st = compile(sk_matmul, 128, 128, 80, 0, TJP_PERSIST_ALWAYS, &art);
    if (st != TJ_OK)
        tap_diag("%s", tj_last_error());
    tap_ok(st == TJ_OK && strstr(art.gpu.ptx, "bar.red.or.pred q, 0, p;") && art.gpu.producer_warps == 0 &&
               art.gpu.stream_k_piece_bytes > 0,
           "sm_80, persistent by force: every thread meets at barrier 0");
    tjj_artifact_free(&art);

    st = compile(sk_tutorial, 128, 128, 90, 1, TJP_PERSIST_ALWAYS, &art);
    tap_ok(st == TJ_ERR_LAUNCH && strstr(tj_last_error(), "sk_tutorial") && strstr(tj_last_error(), "stream-K") &&
               strstr(tj_last_error(), "carries"),
           "required of the tutorial's loop (pointer tiles): refused (%s)", tj_last_error());
    tjj_artifact_free(&art);
}

/* --- the split, evaluated: the pass's IR run by a scalar evaluator ------------ */

/* The scalars of the kernel as made persistent and split, for one program
 * `pid` of P on T tiles of 128x128 (M = 128 rows_of_tiles, N = 128 T /
 * rows_of_tiles) and K = 64 iters: a value per id (a block pointer's: its
 * offsets). */
typedef struct eval {
    const tji_func *fn;
    int64_t *v, (*bp)[2];
    const char *unknown; /* an op the evaluator does not know */
} eval;

static int64_t wrap(const tji_func *fn, int32_t id, int64_t x)
{
    tj_dtype d = tji_typeof(fn, id)->dtype;
    return d == TJ_I1 ? x != 0 : d == TJ_I32 ? (int64_t)(int32_t)x : x;
}

static void eval_op(eval *e, const tji_op *op)
{
    const tji_func *fn = e->fn;
    int64_t a = op->nargs > 0 ? e->v[op->args[0]] : 0, b = op->nargs > 1 ? e->v[op->args[1]] : 0, r = 0;
    switch (op->code) {
    case TJI_CONST: r = op->ival; break;
    case TJI_ADD: r = a + b; break;
    case TJI_SUB: r = a - b; break;
    case TJI_MUL: r = a * b; break;
    case TJI_IDIV: r = b ? a / b : 0; break;
    case TJI_REM: r = b ? a % b : 0; break;
    case TJI_MIN: r = a < b ? a : b; break;
    case TJI_MAX: r = a > b ? a : b; break;
    case TJI_AND: r = a & b; break;
    case TJI_OR: r = a | b; break;
    case TJI_XOR: r = a ^ b; break;
    case TJI_CAST: r = a; break;
    case TJI_WHERE: r = a ? b : e->v[op->args[2]]; break;
    case TJI_CMP: {
        static const int pick[][3] = {{0, 1, 0}, {1, 0, 1}, {1, 0, 0}, {1, 1, 0}, {0, 0, 1}, {0, 1, 1}};
        r = pick[op->pred][a < b ? 0 : a == b ? 1 : 2];
        break;
    }
    case TJI_MAKE_BLOCK_PTR: {
        int rank = (op->nargs - 1) / 3;
        e->bp[op->result][0] = e->v[op->args[1 + 2 * rank]];
        e->bp[op->result][1] = e->v[op->args[2 + 2 * rank]];
        return;
    }
    case TJI_ADVANCE:
        e->bp[op->result][0] = e->bp[op->args[0]][0] + e->v[op->args[1]];
        e->bp[op->result][1] = e->bp[op->args[0]][1] + e->v[op->args[2]];
        return;
    case TJI_SPLAT: return; /* the accumulator's zeros */
    default:
        if (!e->unknown)
            e->unknown = tji_opcode_name(op->code);
        return;
    }
    e->v[op->result] = wrap(fn, op->result, r);
}

/* What trip x of program pid does: the tile (row and column block) its
 * block pointers start at, its K iterations [k0, k0 + n), its piece and
 * whether it is active. */
typedef struct trip_seen {
    int64_t row, col, k0, n, piece, active;
} trip_seen;

static int split_covers(const tji_func *fn, int T, int P, int rows, int iters, char *why, size_t whysize)
{
    const tji_region *top = &fn->regions[0];
    int32_t tiles_op = tjp_tile_loop(fn);
    if (tiles_op < 0)
        return snprintf(why, whysize, "no tile loop"), 0;
    const tji_op *tl = &fn->ops[tiles_op];
    const tji_region *body = &fn->regions[tl->region[0]];
    int32_t kloop = -1, arrive = -1, branch = -1;
    for (int i = 0; i < body->nops; i++) {
        tji_opcode c = fn->ops[body->ops[i]].code;
        if (c == TJI_FOR)
            kloop = body->ops[i];
        else if (c == TJI_STREAM_K_ARRIVE)
            arrive = body->ops[i];
        else if (c == TJI_IF)
            branch = body->ops[i];
    }
    if (kloop < 0 || arrive < 0 || branch < 0)
        return snprintf(why, whysize, "no K loop, arrival or IF in the tile body"), 0;
    int32_t run = fn->ops[branch].args[0], run_def = tji_val(fn, run)->def_op;
    int32_t active = fn->ops[run_def].args[1];
    /* coverage: tile (row * cols + col) x iteration, counted */
    int cols = T / rows;
    int *count = calloc((size_t)T * iters + 1, sizeof *count);
    int *pieces = malloc(((size_t)T + 1) * sizeof *pieces), *programs = calloc((size_t)T + 1, sizeof *programs);
    int *first = malloc(((size_t)T + 1) * sizeof *first), *last = calloc((size_t)T + 1, sizeof *last);
    int64_t ranges = 0, units = 0;
    for (int t = 0; t < T; t++)
        pieces[t] = -2, first[t] = P;
    eval e = {fn, calloc((size_t)fn->nvalues + 1, sizeof *e.v), calloc((size_t)fn->nvalues + 1, sizeof *e.bp), NULL};
    int ok = 1;
    for (int pid = 0; pid < P && ok; pid++) {
        for (int k = 0; k < fn->nparams; k++) {
            const char *name = fn->params[k].name;
            int32_t id = fn->params[k].value;
            e.v[id] = !strcmp(name, "M") ? 128 * rows : !strcmp(name, "N") ? 128 * cols
                      : !strcmp(name, "K") ? 64 * iters : 1;
        }
        for (int i = 0; i < top->nops && top->ops[i] != tiles_op; i++) {
            const tji_op *op = &fn->ops[top->ops[i]];
            if (op->code == TJI_PROGRAM_ID || op->code == TJI_NUM_PROGRAMS || op->code == TJI_LOGICAL_PROGRAMS)
                e.v[op->result] = op->code == TJI_PROGRAM_ID ? pid : op->code == TJI_NUM_PROGRAMS ? P : T;
            else
                eval_op(&e, op);
        }
        int64_t slot_piece[2] = {-1, -1}; /* the program's pieces in its slots 2 pid and 2 pid + 1 */
        for (int64_t x = pid; x < e.v[tl->args[1]] && ok; x += P) {
            e.v[body->args[0]] = x;
            for (int i = 0; body->ops[i] != kloop; i++)
                eval_op(&e, &fn->ops[body->ops[i]]);
            const tji_op *k = &fn->ops[kloop];
            /* the loop runs trips 0 .. cdiv(K, 64) of step 1 and carries the
             * accumulator, A's block pointer ([row, k]) and B's ([k, col]) */
            int32_t ab[2] = {0, 0};
            for (int c = 3, n = 0; c < k->nargs && n < 2; c++)
                if (tji_is_block_ptr(tji_typeof(fn, k->args[c])))
                    ab[n++] = k->args[c];
            int64_t lo = e.v[k->args[0]], hi = e.v[k->args[1]], step = e.v[k->args[2]];
            trip_seen s = {e.bp[ab[0]][0] / 128, e.bp[ab[1]][1] / 128, e.bp[ab[0]][1] / 64,
                           hi > lo ? (hi - lo + step - 1) / step : 0, e.v[fn->ops[arrive].args[1]], e.v[active]};
            if (e.unknown) {
                snprintf(why, whysize, "op %s", e.unknown);
                ok = 0;
                break;
            }
            if (!s.active) {
                if (s.n)
                    ok = 0, snprintf(why, whysize, "program %d trip %lld: inactive but runs %lld iterations",
                                     pid, (long long)x, (long long)s.n);
                continue;
            }
            int64_t t = s.row * cols + s.col;
            if (e.bp[ab[1]][0] != s.k0 * 64 || t < 0 || t >= T || lo != s.k0 * step) {
                snprintf(why, whysize, "program %d trip %lld: tile %lld, A at k %lld, B at k %lld, loop from %lld",
                         pid, (long long)x, (long long)t, (long long)s.k0 * 64, (long long)e.bp[ab[1]][0],
                         (long long)lo);
                ok = 0;
                break;
            }
            for (int64_t j = s.k0; j < s.k0 + s.n && j < iters; j++)
                count[t * iters + j]++;
            programs[t]++;
            first[t] = pid < first[t] ? pid : first[t];
            last[t] = pid;
            units = e.v[fn->ops[arrive].args[3]], ranges = e.v[fn->ops[arrive].args[4]];
            /* the slot of a piece (src/jit/gpu/stream_k.c): 2 pid, + 1 where
             * the range starts before the piece's tile; a program's two
             * pieces that are not whole tiles never share one */
            if (s.piece >= 0 && s.n < iters) {
                int slot = pid * units / ranges < s.piece * iters;
                if (slot_piece[slot] >= 0)
                    ok = 0, snprintf(why, whysize, "program %d: pieces %lld and %lld in slot %d", pid,
                                     (long long)slot_piece[slot], (long long)s.piece, slot);
                slot_piece[slot] = s.piece;
            }
            if (pieces[t] != -2 && pieces[t] != s.piece)
                ok = 0, snprintf(why, whysize, "tile %lld: pieces %d and %lld", (long long)t, pieces[t],
                                 (long long)s.piece);
            pieces[t] = (int)s.piece;
        }
    }
    for (int64_t t = 0; ok && t < T; t++) {
        for (int j = 0; ok && j < iters; j++)
            if (count[t * iters + j] != 1)
                ok = 0, snprintf(why, whysize, "tile %lld iteration %d: computed %d times", (long long)t, j,
                                 count[t * iters + j]);
        /* a split tile's programs are the owners (src/jit/gpu/stream_k.c)
         * of its first and last unit and those between */
        int64_t start = (int64_t)pieces[t] * iters; /* the piece is the tile's place among the split ones */
        int64_t lo = ((start + 1) * ranges + units - 1) / (units ? units : 1) - 1;
        int64_t hi = ((start + iters) * ranges + units - 1) / (units ? units : 1) - 1;
        if (ok && programs[t] > 1 && (first[t] != lo || last[t] != hi || programs[t] != hi - lo + 1))
            ok = 0, snprintf(why, whysize, "tile %lld: programs %d..%d (%d), owners %lld..%lld", (long long)t,
                             first[t], last[t], programs[t], (long long)lo, (long long)hi);
        /* ranges of 8 iterations or more (stream_k.c's MIN_PIECE_ITERS)
         * but at tile edges */
        int most = iters / 8 + 2;
        if (ok && (programs[t] > most || (programs[t] > 1 && pieces[t] < 0)))
            ok = 0, snprintf(why, whysize, "tile %lld: %d programs, piece %d", (long long)t, programs[t], pieces[t]);
    }
    /* the last wave's T mod P tiles in pieces, unless it leaves fewer than
     * P / 16 programs idle (stream_k.c's IDLE_SHARE); the others whole */
    int split = (P - T % P) * 16 >= P ? T % P : 0, pieced = 0;
    for (int t = 0; t < T; t++)
        pieced += pieces[t] >= 0;
    if (ok && pieced != split)
        ok = 0, snprintf(why, whysize, "%d tiles in pieces, expected %d", pieced, split);
    free(count), free(pieces), free(programs), free(first), free(last), free(e.v), free(e.bp);
    return ok;
}

/* The split, for tile counts below, at and above the programs, whole waves
 * and not, and K of 1 to 64 iterations: every iteration of every tile
 * computed once, in ranges of 8 iterations or more, one piece number a
 * tile. */
static void split_everywhere(void)
{
    int64_t consts[4] = {128, 128, 64, 8};
    tji_func *fn = NULL;
    tj_status st = tji_build(sk_matmul, consts, 4, &fn);
    if (st == TJ_OK)
        st = tjp_make_persistent(fn, &(tjp_target){90, 1, 8}, NULL, 3, TJP_PERSIST_ALWAYS, NULL);
    if (st == TJ_OK)
        st = tjp_stream_k(fn, 1, NULL);
    static const int shapes[][2] = {{1, 1}, {2, 3}, {8, 8}, {8, 16}, {11, 12}, {12, 11}, {16, 16}, {20, 26}, {32, 32}};
    static const int progs[] = {1, 7, 132, 133, 264};
    static const int ks[] = {1, 2, 3, 5, 64};
    char why[256] = "";
    int checked = 0, ok = st == TJ_OK;
    for (size_t a = 0; ok && a < sizeof shapes / sizeof *shapes; a++)
        for (size_t b = 0; ok && b < sizeof progs / sizeof *progs; b++)
            for (size_t c = 0; ok && c < sizeof ks / sizeof *ks; c++) {
                int rows = shapes[a][0], T = rows * shapes[a][1];
                ok = split_covers(fn, T, progs[b], rows, ks[c], why, sizeof why);
                if (!ok)
                    tap_diag("%d tiles, %d programs, %d iterations: %s", T, progs[b], ks[c], why);
                checked++;
            }
    if (st != TJ_OK)
        tap_diag("%s", tj_last_error());
    tap_ok(ok, "the split, evaluated on %d launches (1 to 1024 tiles, 1 to 264 programs, 1 to 64 K "
               "iterations): every iteration of every tile once, the last wave in pieces (not where it is "
               "nearly full), pieces of 8 iterations or more but at tile edges", checked);
    tji_func_free(fn);
}

/* C = A B (f16 small integers, exact in f32) in 128x128x64 tiles, groups
 * of 8, stream-K required: one problem's buffers and expected values. */
typedef struct problem {
    int m, n, k;
    int8_t *ia, *ib;
    float *hc;
    tj_buffer a, b, c;
    int ok;
} problem;

static problem make(int m, int n, int k)
{
    problem p = {m, n, k, malloc((size_t)m * k), malloc((size_t)k * n), malloc((size_t)m * n * 4), {0}, {0}, {0}, 0};
    size_t a_count = (size_t)m * k, b_count = (size_t)k * n;
    uint16_t *ha = malloc(a_count * 2), *hb = malloc(b_count * 2);
    tl_small_int_f16(a_count, p.ia, ha);
    tl_small_int_f16(b_count, p.ib, hb);
    p.ok = tj_buffer_alloc(dev, a_count * 2, &p.a) == TJ_OK && tj_buffer_alloc(dev, b_count * 2, &p.b) == TJ_OK &&
           tj_buffer_alloc(dev, (size_t)m * n * 4, &p.c) == TJ_OK &&
           tj_buffer_write(dev, p.a, 0, ha, a_count * 2) == TJ_OK &&
           tj_buffer_write(dev, p.b, 0, hb, b_count * 2) == TJ_OK;
    free(ha), free(hb);
    return p;
}

/* C poisoned, then the launch on `stream` (NULL: the default), 128x128
 * tiles, K in steps of bk. */
static tj_status launch_bk(problem *p, tj_stream *stream, int bk)
{
    memset(p->hc, 0xff, (size_t)p->m * p->n * 4);
    tj_status st = p->ok ? tj_buffer_write(dev, p->c, 0, p->hc, (size_t)p->m * p->n * 4) : TJ_ERR_LAUNCH;
    int64_t consts[4] = {128, 128, bk, 8};
    tj_launch_cfg cfg = {.grid = {(p->m + 127) / 128 * ((p->n + 127) / 128)}, .num_warps = 8, .stream = stream,
                         .persistent = TJ_PERSISTENT_ON, .version = TJ_LAUNCH_CFG_VERSION,
                         .stream_k = TJ_STREAM_K_ON};
    tj_arg args[12] = {TJ_ARG_BUF(p->a), TJ_ARG_BUF(p->b), TJ_ARG_BUF(p->c), TJ_ARG_I32(p->m), TJ_ARG_I32(p->n),
                       TJ_ARG_I32(p->k), TJ_ARG_I32(p->k), TJ_ARG_I32(1), TJ_ARG_I32(p->n), TJ_ARG_I32(1),
                       TJ_ARG_I32(p->n), TJ_ARG_I32(1)};
    return st == TJ_OK ? tj_launch(dev, sk_matmul, &cfg, args, 12, consts, 4) : st;
}

static tj_status launch(problem *p, tj_stream *stream)
{
    return launch_bk(p, stream, 64);
}

/* C read back (after the device is done) and checked: 1 where right. */
static int right(problem *p, tj_status st, const char *what)
{
    if (st == TJ_OK)
        st = tj_synchronize(dev);
    if (st == TJ_OK)
        st = tj_buffer_read(dev, p->c, 0, p->hc, (size_t)p->m * p->n * 4);
    long bad = st == TJ_OK ? tl_first_wrong_product(p->ia, p->ib, p->hc, p->m, p->n, p->k, p->k) : -1;
    if (st != TJ_OK)
        tap_diag("%s: %s: %s", what, tj_status_name(st), tj_last_error());
    else if (bad >= 0)
        tap_diag("%s: C[%ld][%ld] = %g", what, bad / p->n, bad % p->n, p->hc[bad]);
    return st == TJ_OK && bad < 0;
}

static void drop(problem *p)
{
    tj_buffer_free(dev, p->a);
    tj_buffer_free(dev, p->b);
    tj_buffer_free(dev, p->c);
    free(p->ia), free(p->ib), free(p->hc);
}

/* The CPU ignores stream-K: there a problem bigger than this checks
 * nothing of it and only costs time (under the sanitizers, minutes). */
static int gpu_only(long long macs)
{
    return tj_device_get_kind(dev) != TJ_DEVICE_GPU && macs > (1ll << 28);
}

/* Launched twice: the first launch must leave the counters zero for the second. */
static void run(int m, int n, int k, const char *what)
{
    if (gpu_only((long long)m * n * k)) {
        char why[200];
        snprintf(why, sizeof why, "%s: a GPU's matter (the CPU ignores stream-K)", what);
        tap_skip(1, why);
        return;
    }
    problem p = make(m, n, k);
    int ok = right(&p, launch(&p, NULL), what) && right(&p, launch(&p, NULL), what);
    tap_ok(p.ok && ok, "%s: %d x %d x %d, launched twice", what, m, n, k);
    drop(&p);
}

/* Two streams at once, each with its own workspace; then a stream made
 * after one is destroyed (its handle may be the old one's). */
static void streams(void)
{
    if (gpu_only(2000ll * 2608 * 208)) {
        tap_skip(2, "two streams at once: a GPU's matter (the CPU ignores stream-K)");
        return;
    }
    problem p = make(2000, 2608, 208), q = make(1024, 1024, 1024);
    tj_stream *s1 = NULL, *s2 = NULL, *s3 = NULL;
    int made = tj_stream_create(dev, &s1) == TJ_OK && tj_stream_create(dev, &s2) == TJ_OK;
    tj_status sp = made ? launch(&p, s1) : TJ_ERR_LAUNCH, sq = made ? launch(&q, s2) : TJ_ERR_LAUNCH;
    int ok = right(&p, sp, "stream 1") & right(&q, sq, "stream 2");
    tap_ok(made && ok, "two streams at once, a workspace each: both right");
    tj_stream_destroy(s1);
    made = tj_stream_create(dev, &s3) == TJ_OK;
    ok = made && right(&p, launch(&p, s3), "a later stream") && right(&q, launch(&q, s2), "stream 2 again");
    tap_ok(ok, "a stream made after one is destroyed, and the other again: both right");
    tj_stream_destroy(s2);
    tj_stream_destroy(s3);
    drop(&p);
    drop(&q);
}

/* One stream, two shapes. A launch keeps a counter for each split tile
 * (S = T mod P of them) and puts its partial sums past its ranges'
 * counters (8R bytes, R >= S ranges, rounded up to 128). 268 tiles on
 * P = 132 or 264 programs split 4, in K of 12 iterations: 6 ranges of 8,
 * so the partial sums start at byte 128; 364 tiles split 100, whose
 * counters reach byte 400 — into the first slot, which holds a partial
 * sum where its piece was not the last of its tile to arrive (about half
 * the time: the pair runs three times). Those counters must be zero all
 * the same. */
static void two_shapes(void)
{
    if (gpu_only(128ll * 128 * 364 * 384)) {
        tap_skip(1, "two shapes on one stream: a GPU's matter (the CPU ignores stream-K)");
        return;
    }
    problem few = make(128, 268 * 128, 384), many = make(128, 364 * 128, 384);
    int ok = few.ok && many.ok;
    for (int round = 0; round < 3 && ok; round++)
        ok = right(&few, launch_bk(&few, NULL, 32), "268 tiles, 4 split") &&
             right(&many, launch_bk(&many, NULL, 32), "then 364 tiles, 100 split");
    tap_ok(ok, "one stream, 268 tiles (4 split) then 364 (100 split), three times: all right");
    drop(&few);
    drop(&many);
}

static void refusals(void)
{
    int64_t consts[4] = {128, 128, 64, 8};
    tj_buffer none = {0};
    tj_arg args[12] = {TJ_ARG_BUF(none), TJ_ARG_BUF(none), TJ_ARG_BUF(none), TJ_ARG_I32(0), TJ_ARG_I32(0),
                       TJ_ARG_I32(0), TJ_ARG_I32(0), TJ_ARG_I32(1), TJ_ARG_I32(0), TJ_ARG_I32(1), TJ_ARG_I32(0),
                       TJ_ARG_I32(1)};
    tj_launch_cfg cfg = {.grid = {1}, .version = TJ_LAUNCH_CFG_VERSION, .stream_k = (tj_stream_k)7};
    tj_status st = tj_launch(dev, sk_matmul, &cfg, args, 12, consts, 4);
    tap_ok(st == TJ_ERR_INVALID_ARG && strstr(tj_last_error(), "sk_matmul") && strstr(tj_last_error(), "stream_k"),
           "a stream_k value that is no tj_stream_k: refused (%s)", tj_last_error());
    if (tj_device_get_kind(dev) != TJ_DEVICE_GPU) {
        tap_skip(1, "stream-K required of a launch that is not persistent: a GPU's matter");
        return;
    }
    cfg = (tj_launch_cfg){.grid = {1}, .persistent = TJ_PERSISTENT_OFF, .version = TJ_LAUNCH_CFG_VERSION,
                          .stream_k = TJ_STREAM_K_ON};
    st = tj_launch(dev, sk_matmul, &cfg, args, 12, consts, 4);
    tap_ok(st == TJ_ERR_LAUNCH && strstr(tj_last_error(), "sk_matmul") && strstr(tj_last_error(), "persistent"),
           "stream-K required of a launch that is not persistent: refused (%s)", tj_last_error());
}

int main(void)
{
    dev = tl_setup("test_stream_k");
    tap_plan(20);
    ptx_of_stream_k();
    split_everywhere();
    run(1024, 1024, 256, "64 tiles of 4 iterations, fewer than the programs: a range a tile");
    run(1024, 1024, 64, "K of one iteration: programs with no iteration");
    run(2000, 2608, 208, "336 ragged tiles, more than a wave");
    run(1024, 1024, 4096, "64 tiles of 64 iterations");
    /* the benchmark's 4096^3 tile count (3.88 waves of 132), a short K: checked on the host fast */
    run(2048, 4096, 128, "512 tiles, many waves");
    streams();
    two_shapes();
    refusals();
    tj_device_close(dev);
    return tap_done();
}
