/* SPDX-License-Identifier: MIT */
/*
 * stream_k.c — the last wave of a persistent matmul split along K
 * (passes.h: tjp_stream_k).
 *
 * A persistent kernel (persistent.c) walks T tiles with P resident
 * programs, each taking tiles pid, pid + P, ...: where P does not divide
 * T the last wave runs T mod P tiles and the other SMs idle through it.
 * 4096^3 in 128x256 tiles is 512 tiles on 132 SMs: 3.88 waves, so 3% of
 * the run is lost, and a shape of 1.2 waves loses 40%. Stream-K (Osama et
 * al., PPoPP 2023; CUTLASS's stream-K scheduler) splits the work of the
 * last tiles by K iterations instead: every program gets the same number
 * of iterations, some tiles are computed in pieces by several programs,
 * and the pieces' accumulators are summed before the tile's epilogue.
 *
 * The split, with I the K loop's trip count (the same for every tile):
 * the last S = T mod P tiles go by stream-K (all of them where T < P,
 * none where P divides T or where that last wave leaves fewer than
 * P / IDLE_SHARE programs idle). The first D = T - S tiles run as
 * before, tile pid + u P in trip u. The S tiles' S I iterations are cut into R equal
 * ranges [g0, g1), g0 = pid S I / R, one per program below R. R is P,
 * unless that would leave ranges shorter than MIN_PIECE_ITERS (a tile in
 * many short pieces: its last piece would spend longer summing them than
 * they save); as S < P, a range is at most I long and meets at most two
 * tiles (the tail of one, the head of the next). Trips D/P and D/P + 1
 * run them from the last to the first (a trip with no tile left runs no
 * K iteration and stores nothing). So the tile loop keeps its shape — a
 * FOR from pid by P, now to D + 2P — and each trip computes its tile and
 * its K range [kb, ke) from scalars alone, which the producer warpgroup
 * (warp_specialize.c) computes as the consumers do.
 *
 * Only the last wave is split, not one more whole wave with it (CUTLASS's
 * "two-tile" stream-K): all the pieces' programs are at different K
 * offsets of different tiles at once, so the operands' L2 reuse of a
 * wave in step is lost while they run. On an H100 at 4096^3, with the
 * extra wave split, the consumers waited 1.8x as long for their
 * operands as without stream-K (Nsight Compute; RESULTS.md).
 *
 * The K loop then runs from its trip kb to ke: its bounds move, and each
 * block pointer it carries starts kb advances further. After it,
 * STREAM_K_ARRIVE hands this piece's accumulator to the tile's other
 * pieces (the GPU's src/jit/gpu/stream_k.c: a workspace of partial sums
 * and a counter per tile, the piece that arrives last sums them, nobody
 * waits for anyone), and the ops after the loop — the epilogue — run in
 * an IF on its answer, reading the sum STREAM_K_ADD makes.
 *
 * The shape it takes is the matmul's: a tile body with one K loop, at
 * its top level and with a positive constant step, whose bounds do not
 * depend on the tile; the loop carries one accumulator, f32 or i32 from
 * zeros, that a dot updates, and block pointers it advances by values
 * fixed in the loop; after it come no loops. Elsewhere the kernel stays
 * as it is (the launch's TJ_STREAM_K_ON fails saying why).
 */
#include <stdlib.h>

#include "passes.h"

/* --- what the rewrite needs ------------------------------------------------------- */

typedef struct shape {
    int32_t tiles_op;          /* the tile loop */
    int32_t body;              /* its region */
    int32_t kloop;             /* the K loop (an op of body) */
    int acc;                   /* the carried position of the accumulator */
    int64_t step;              /* the K loop's step */
} shape;

static const tji_op *def_of(const tji_func *fn, int32_t v)
{
    int32_t d = tji_val(fn, v)->def_op;
    return d >= 0 ? &fn->ops[d] : NULL;
}

static const tji_op *yield_of(const tji_func *fn, int32_t region)
{
    const tji_region *r = &fn->regions[region];
    return r->nops ? &fn->ops[r->ops[r->nops - 1]] : NULL;
}

static int is_const_int(const tji_func *fn, int32_t v, int64_t *out)
{
    const tji_op *d = def_of(fn, v);
    if (!d || d->code != TJI_CONST || tji_typeof(fn, v)->rank || tjs_dtype_is_float(tji_typeof(fn, v)->dtype))
        return 0;
    *out = d->ival;
    return 1;
}

enum { MAX_HOISTED_ARGS = 8 }; /* hoist()'s operand array; scalar ops take at most 3 */

/* v is computed without the tile: from the kernel's parameters, constants
 * and pure scalar ops, wherever they are. */
static int tile_invariant(const tji_func *fn, int32_t v, int32_t tile, int depth)
{
    if (v == tile || depth > 64)
        return 0;
    const tji_value *val = tji_val(fn, v);
    if (val->def_op < 0)
        return val->def_region == 0; /* a parameter */
    const tji_op *d = &fn->ops[val->def_op];
    if (d->region[0] >= 0 || d->nargs > MAX_HOISTED_ARGS || tji_typeof(fn, v)->rank || d->code == TJI_LOAD || d->code == TJI_ATOMIC ||
        d->code == TJI_ATOMIC_CAS || d->code == TJI_INLINE_ASM)
        return 0;
    for (int k = 0; k < d->nargs; k++)
        if (d->args[k] && !tile_invariant(fn, d->args[k], tile, depth + 1))
            return 0;
    return 1;
}

/* A carried block pointer at position k of loop: its yield advances its
 * own block argument by offsets fixed in the loop. */
static int advanced_block_ptr(const tji_func *fn, const tji_op *loop, int k)
{
    int32_t arg = fn->regions[loop->region[0]].args[1 + k];
    const tji_op *y = yield_of(fn, loop->region[0]);
    const tji_op *adv = def_of(fn, y->args[k]);
    if (!tji_is_block_ptr(tji_typeof(fn, arg)) || !adv || adv->code != TJI_ADVANCE || adv->args[0] != arg)
        return 0;
    for (int d = 1; d < adv->nargs; d++) {
        int64_t ignored;
        if (!is_const_int(fn, adv->args[d], &ignored) &&
            tji_region_within(fn, tji_value_region(fn, adv->args[d]), loop->region[0]))
            return 0;
    }
    return 1;
}

/* The accumulator at position k: zeros in, a dot's result out. */
static int accumulator(const tji_func *fn, const tji_op *loop, int k)
{
    int32_t arg = fn->regions[loop->region[0]].args[1 + k];
    const tji_type *t = tji_typeof(fn, arg);
    const tji_op *init = def_of(fn, loop->args[3 + k]);
    const tji_op *zero = init && init->code == TJI_SPLAT ? def_of(fn, init->args[0]) : NULL;
    const tji_op *dot = def_of(fn, yield_of(fn, loop->region[0])->args[k]);
    return t->rank && !t->is_ptr && (t->dtype == TJ_F32 || t->dtype == TJ_I32) && zero &&
           zero->code == TJI_CONST && zero->ival == 0 && zero->fval == 0 && dot && dot->code == TJI_DOT &&
           dot->args[2] == arg && dot->parent == loop->region[0];
}

/* Op opi (in the tile body, at any depth) comes before the K loop. */
static int before_loop(const tji_func *fn, const shape *s, int32_t opi)
{
    while (fn->ops[opi].parent != s->body)
        opi = fn->regions[fn->ops[opi].parent].parent_op;
    for (int i = 0; i < fn->regions[s->body].nops; i++)
        if (fn->regions[s->body].ops[i] == opi || fn->regions[s->body].ops[i] == s->kloop)
            return fn->regions[s->body].ops[i] == opi;
    return 0;
}

static const char *find_shape(const tji_func *fn, shape *s)
{
    s->tiles_op = tjp_tile_loop(fn);
    if (s->tiles_op < 0)
        return "the kernel is not persistent";
    s->body = fn->ops[s->tiles_op].region[0];
    int32_t tile = fn->regions[s->body].args[0];
    const tji_region *body = &fn->regions[s->body];
    s->kloop = -1;
    for (int i = 0; i < body->nops; i++) {
        const tji_op *op = &fn->ops[body->ops[i]];
        if (op->code == TJI_WHILE)
            return "a tile's body has a WHILE loop";
        if (op->code != TJI_FOR)
            continue;
        if (s->kloop >= 0)
            return "a tile's body has more than one loop";
        s->kloop = body->ops[i];
    }
    if (s->kloop < 0)
        return "a tile's body has no K loop";
    const tji_op *loop = &fn->ops[s->kloop];
    if (!is_const_int(fn, loop->args[2], &s->step) || s->step <= 0)
        return "the K loop's step is not a positive constant";
    if (!tile_invariant(fn, loop->args[0], tile, 0) || !tile_invariant(fn, loop->args[1], tile, 0))
        return "the K loop's bounds depend on the tile";
    if (tji_typeof(fn, loop->args[0])->dtype != TJ_I32)
        return "the K loop's index is not i32";
    s->acc = -1;
    for (int k = 0; k < loop->nargs - 3; k++) {
        if (advanced_block_ptr(fn, loop, k))
            continue;
        if (s->acc >= 0 || !accumulator(fn, loop, k))
            return "the K loop carries more than one accumulator (f32 or i32 from zeros, a dot's) "
                   "and the block pointers it advances";
        s->acc = k;
    }
    if (s->acc < 0)
        return "the K loop carries no dot's accumulator";
    /* what runs before the K loop runs in every piece of the tile */
    for (int32_t i = 0; i < fn->nops; i++)
        if (fn->ops[i].parent >= 0 && tji_writes_memory(&fn->ops[i]) &&
            tji_region_within(fn, fn->ops[i].parent, s->body) &&
            !tji_region_within(fn, fn->ops[i].parent, loop->region[0]) && before_loop(fn, s, i))
            return "a tile's body writes memory before its K loop (each piece would)";
    for (int i = 0; i < body->nops; i++) {
        const tji_op *op = &fn->ops[body->ops[i]];
        if (op->code == TJI_PROGRAM_ID || op->code == TJI_NUM_PROGRAMS)
            return "a tile's body reads program_id or num_programs of another axis";
    }
    return NULL;
}

/* The last wave is split where at least 1/IDLE_SHARE of the programs
 * would idle through it: a wave nearly full gains less than its pieces'
 * partial sums cost. */
enum { IDLE_SHARE = 16 };

/* The fewest K iterations a range takes (unless a whole tile's are
 * fewer): the tile's last piece reads each other piece's
 * partial sums serially (128x128 f32: 64 KiB, about two iterations'
 * time), so a piece much shorter costs more than it saves. */
enum { MIN_PIECE_ITERS = 8 };

/* --- building scalars --------------------------------------------------------------- */

typedef struct builder {
    tji_func *fn;
    int32_t region;
    int pos;
    tji_loc loc;
} builder;

static int32_t op_n(builder *b, tji_opcode code, const int32_t *args, int n, tj_dtype dtype)
{
    int32_t op = tji_insert_op(b->fn, code, b->region, b->pos++, b->loc);
    tji_set_operands(b->fn, op, args, n);
    return tji_new_results(b->fn, op, &(tji_type){.dtype = dtype}, 1);
}

static int32_t bin(builder *b, tji_opcode code, int32_t x, int32_t y)
{
    return op_n(b, code, (int32_t[]){x, y}, 2, tji_typeof(b->fn, x)->dtype);
}

static int32_t cmp(builder *b, tji_pred pred, int32_t x, int32_t y)
{
    int32_t r = op_n(b, TJI_CMP, (int32_t[]){x, y}, 2, TJ_I1);
    b->fn->ops[tji_val(b->fn, r)->def_op].pred = pred;
    return r;
}

static int32_t where(builder *b, int32_t c, int32_t x, int32_t y)
{
    return op_n(b, TJI_WHERE, (int32_t[]){c, x, y}, 3, tji_typeof(b->fn, x)->dtype);
}

static int32_t cast(builder *b, int32_t x, tj_dtype to)
{
    return op_n(b, TJI_CAST, &x, 1, to);
}

static int32_t constant(builder *b, int64_t v, tj_dtype dtype)
{
    int32_t op = tji_insert_op(b->fn, TJI_CONST, b->region, b->pos++, b->loc);
    b->fn->ops[op].ival = v;
    return tji_new_results(b->fn, op, &(tji_type){.dtype = dtype}, 1);
}

/* Clones the ops that compute v inside region (in their order) at b. */
static int32_t hoist(builder *b, int32_t v, int32_t region, int32_t *copy)
{
    const tji_value *val = tji_val(b->fn, v);
    if (val->def_op < 0 || b->fn->ops[val->def_op].parent != region)
        return v;
    if (copy[v])
        return copy[v];
    int32_t opi = val->def_op;
    int32_t args[MAX_HOISTED_ARGS];
    int n = b->fn->ops[opi].nargs;
    for (int k = 0; k < n; k++)
        args[k] = b->fn->ops[opi].args[k] ? hoist(b, b->fn->ops[opi].args[k], region, copy) : 0;
    int32_t clone = tji_insert_clone(b->fn, &b->fn->ops[opi], b->region, b->pos++, args);
    return copy[v] = tji_new_results(b->fn, clone, tji_typeof(b->fn, v), 1);
}

/* --- the rewrite -------------------------------------------------------------------- */

/* A program's share of the stream-K iterations, the same in every trip. */
typedef struct share {
    int32_t iters, units, programs, me; /* i32, i64, i32 (the ranges), i32 */
    int32_t iters64, g0, g1;            /* its range [g0, g1) of the units */
    int32_t first, last;                /* the tiles (among the split ones) it meets */
    int32_t dp_tiles, dp_trips;         /* D, D / P */
} share;

/* The values of one trip: which tile, which K iterations, which piece. */
typedef struct trip {
    int32_t tile, kb, ke, piece, active;
} trip;

/* Before the tile loop: the program's range (the essay's arithmetic),
 * from the kernel's parameters alone, so no trip divides again. */
static share split_program(builder *b, const shape *s, int32_t sk_tiles, int32_t dp_tiles, int32_t programs,
                           int32_t me, int32_t *copy)
{
    tji_func *fn = b->fn;
    const tji_op *loop = &fn->ops[s->kloop];
    int32_t lo = hoist(b, loop->args[0], s->body, copy);
    int32_t hi = hoist(b, fn->ops[s->kloop].args[1], s->body, copy);
    int32_t step = constant(b, s->step, TJ_I32);
    int32_t zero = constant(b, 0, TJ_I32), one = constant(b, 1, TJ_I32);
    int32_t span = bin(b, TJI_MAX, bin(b, TJI_SUB, hi, lo), zero);
    share h = {.me = me, .dp_tiles = dp_tiles};
    h.iters = bin(b, TJI_IDIV, bin(b, TJI_SUB, bin(b, TJI_ADD, span, step), one), step);

    h.iters64 = cast(b, h.iters, TJ_I64);
    h.units = bin(b, TJI_MUL, cast(b, sk_tiles, TJ_I64), h.iters64);
    /* the programs that take ranges: no more than leave MIN_PIECE_ITERS a range */
    int32_t ranges = bin(b, TJI_MAX, cast(b, sk_tiles, TJ_I64),
                         bin(b, TJI_IDIV, h.units, constant(b, MIN_PIECE_ITERS, TJ_I64)));
    ranges = bin(b, TJI_MAX, bin(b, TJI_MIN, ranges, cast(b, programs, TJ_I64)), constant(b, 1, TJ_I64));
    h.programs = cast(b, ranges, TJ_I32);
    h.g0 = bin(b, TJI_MIN, bin(b, TJI_IDIV, bin(b, TJI_MUL, cast(b, me, TJ_I64), h.units), ranges), h.units);
    h.g1 = bin(b, TJI_MIN, bin(b, TJI_IDIV, bin(b, TJI_MUL, bin(b, TJI_ADD, cast(b, me, TJ_I64),
                                                                 constant(b, 1, TJ_I64)), h.units), ranges),
               h.units);
    h.first = cast(b, bin(b, TJI_IDIV, h.g0, h.iters64), TJ_I32);
    h.last = cast(b, bin(b, TJI_IDIV, bin(b, TJI_SUB, h.g1, constant(b, 1, TJ_I64)), h.iters64), TJ_I32);
    h.dp_trips = bin(b, TJI_IDIV, dp_tiles, programs);
    return h;
}

/* At the top of the tile body: trip x's tile and K range. */
static trip split_trip(builder *b, const share *h, int32_t x, int32_t programs)
{
    int32_t zero = constant(b, 0, TJ_I32);
    int32_t whole = cmp(b, TJI_LT, x, h->dp_tiles);
    /* trip u = x / P: D / P whole-tile trips, then the pieces from the last */
    int32_t nth = bin(b, TJI_SUB, bin(b, TJI_IDIV, x, programs), h->dp_trips);
    int32_t sk = bin(b, TJI_SUB, h->last, nth);
    int32_t has = bin(b, TJI_AND, cmp(b, TJI_GT, h->g1, h->g0), cmp(b, TJI_GE, sk, h->first));
    has = bin(b, TJI_AND, has, cmp(b, TJI_GE, nth, zero));
    int32_t start = bin(b, TJI_MUL, cast(b, sk, TJ_I64), h->iters64);
    int32_t kb = cast(b, bin(b, TJI_MAX, bin(b, TJI_SUB, h->g0, start), constant(b, 0, TJ_I64)), TJ_I32);
    int32_t ke = cast(b, bin(b, TJI_MIN, bin(b, TJI_SUB, h->g1, start), h->iters64), TJ_I32);
    int32_t piece = where(b, has, sk, constant(b, -1, TJ_I32));
    trip t = {
        .tile = where(b, whole, x, bin(b, TJI_ADD, h->dp_tiles, where(b, has, sk, zero))),
        .kb = where(b, whole, zero, where(b, has, kb, zero)),
        .ke = where(b, whole, h->iters, where(b, has, ke, zero)),
        .piece = where(b, whole, constant(b, -1, TJ_I32), piece),
        .active = bin(b, TJI_OR, whole, has),
    };
    return t;
}

/* The K loop runs its trips kb .. ke; its block pointers start kb
 * advances on. */
static void narrow_k_loop(tji_func *fn, const shape *s, const trip *t)
{
    int pos = 0;
    while (fn->regions[s->body].ops[pos] != s->kloop)
        pos++;
    builder b = {fn, s->body, pos, fn->ops[s->kloop].loc};
    int32_t lo = fn->ops[s->kloop].args[0], hi = fn->ops[s->kloop].args[1];
    int32_t step = constant(&b, s->step, TJ_I32);
    tji_set_operand(fn, s->kloop, 0, bin(&b, TJI_ADD, lo, bin(&b, TJI_MUL, t->kb, step)));
    tji_set_operand(fn, s->kloop, 1, bin(&b, TJI_MIN, hi, bin(&b, TJI_ADD, lo, bin(&b, TJI_MUL, t->ke, step))));
    int ncarried = fn->ops[s->kloop].nargs - 3;
    for (int k = 0; k < ncarried; k++) {
        if (k == s->acc)
            continue;
        int32_t adv = tji_val(fn, yield_of(fn, fn->ops[s->kloop].region[0])->args[k])->def_op;
        int32_t args[1 + TJ_MAX_RANK];
        int n = fn->ops[adv].nargs;
        args[0] = fn->ops[s->kloop].args[3 + k];
        for (int d = 1; d < n; d++) {
            int32_t off = fn->ops[adv].args[d];
            int64_t c;
            tj_dtype dt = tji_typeof(fn, off)->dtype;
            if (is_const_int(fn, off, &c)) /* it may be the loop's own */
                off = constant(&b, c, dt);
            args[d] = bin(&b, TJI_MUL, off, dt == TJ_I32 ? t->kb : cast(&b, t->kb, dt));
        }
        tji_type bp = *tji_typeof(fn, args[0]);
        int32_t op = tji_insert_op(fn, TJI_ADVANCE, s->body, b.pos++, b.loc);
        tji_set_operands(fn, op, args, n);
        tji_set_operand(fn, s->kloop, 3 + k, tji_new_results(fn, op, &bp, 1));
    }
}

/* After the K loop: the piece arrives, and the ops after it (the
 * epilogue) run where it was the tile's last, on the pieces' sum. */
static void join_pieces(tji_func *fn, const shape *s, const share *h, const trip *t)
{
    int pos = 0;
    while (fn->regions[s->body].ops[pos] != s->kloop)
        pos++;
    pos++;
    tji_loc loc = fn->ops[s->kloop].loc;
    int32_t acc = fn->ops[s->kloop].result + s->acc;
    int32_t operands[] = {acc, t->piece, h->iters, h->units, h->programs, h->me};
    builder b = {fn, s->body, pos, loc};
    int32_t arrived = op_n(&b, TJI_STREAM_K_ARRIVE, operands, 6, TJ_I1);
    int32_t run = bin(&b, TJI_AND, arrived, t->active);
    int32_t branch = tji_insert_op(fn, TJI_IF, s->body, b.pos++, loc);
    tji_set_operands(fn, branch, &run, 1);
    int32_t then = tji_new_region(fn, branch), other = tji_new_region(fn, branch);

    /* the epilogue moves in, reading the sum */
    int32_t sum_op = tji_new_op(fn, TJI_STREAM_K_ADD, then, loc);
    tji_set_operands(fn, sum_op, operands, 6);
    int32_t sum = tji_new_results(fn, sum_op, tji_typeof(fn, acc), 1);
    int32_t *rename = tjs_xcalloc((size_t)fn->nvalues + 1, sizeof *rename);
    rename[acc] = sum;
    tji_region *body = &fn->regions[s->body];
    int32_t yield = body->ops[body->nops - 1];
    for (int k = b.pos; k < fn->regions[s->body].nops; k++) {
        int32_t opi = fn->regions[s->body].ops[k];
        if (opi == yield)
            continue;
        tji_detach_op(fn, opi);
        tji_append_op(fn, then, opi);
    }
    tji_drop_detached(fn, s->body);
    for (int32_t i = 0; i < fn->nops; i++)
        if (fn->ops[i].parent >= 0 && i != sum_op && tji_region_within(fn, fn->ops[i].parent, then))
            tji_rename_operands(fn, i, rename);
    free(rename);
    tji_new_op(fn, TJI_YIELD, then, loc);
    tji_new_op(fn, TJI_YIELD, other, loc);
}

static void rewrite(tji_func *fn, const shape *s)
{
    tji_loc loc = fn->ops[s->tiles_op].loc;
    int top = 0;
    while (fn->regions[0].ops[top] != s->tiles_op)
        top++;
    int32_t me = fn->ops[s->tiles_op].args[0], tiles = fn->ops[s->tiles_op].args[1];
    int32_t programs = fn->ops[s->tiles_op].args[2];

    /* the tiles by stream-K (S) and the trips' bound (D + 2P), before the loop */
    builder b = {fn, 0, top, loc};
    int32_t zero = constant(&b, 0, TJ_I32);
    int32_t rem = bin(&b, TJI_REM, tiles, programs);
    int32_t idle = bin(&b, TJI_MUL, bin(&b, TJI_SUB, programs, rem), constant(&b, IDLE_SHARE, TJ_I32));
    int32_t sk_tiles = where(&b, cmp(&b, TJI_GE, idle, programs), rem, zero);
    int32_t dp_tiles = bin(&b, TJI_SUB, tiles, sk_tiles);
    int32_t pieces = bin(&b, TJI_MUL, programs, constant(&b, 2, TJ_I32));
    int32_t bound = bin(&b, TJI_ADD, dp_tiles, where(&b, cmp(&b, TJI_GT, sk_tiles, zero), pieces, zero));
    tji_set_operand(fn, s->tiles_op, 1, bound);

    int32_t *copy = tjs_xcalloc((size_t)fn->nvalues + 1, sizeof *copy);
    share h = split_program(&b, s, sk_tiles, dp_tiles, programs, me, copy);
    free(copy);
    int32_t nops_before = fn->nops;
    int32_t x = fn->regions[s->body].args[0];
    builder top_of_body = {fn, s->body, 0, loc};
    trip t = split_trip(&top_of_body, &h, x, programs);
    int32_t *rename = tjs_xcalloc((size_t)fn->nvalues + 1, sizeof *rename);
    rename[x] = t.tile;
    for (int32_t i = 0; i < nops_before; i++)
        if (fn->ops[i].parent >= 0 && tji_region_within(fn, fn->ops[i].parent, s->body))
            tji_rename_operands(fn, i, rename);
    free(rename);
    narrow_k_loop(fn, s, &t);
    join_pieces(fn, s, &h, &t);
}

tj_status tjp_stream_k(tji_func *fn, int required, const char **why_not)
{
    shape s;
    const char *why = find_shape(fn, &s);
    if (why_not)
        *why_not = why;
    if (why && required)
        return tjs_error(TJ_ERR_LAUNCH, "kernel '%s': stream-K (cfg->stream_k = TJ_STREAM_K_ON) cannot split it: %s",
                         fn->name, why);
    if (!why)
        rewrite(fn, &s);
    return TJ_OK;
}

int64_t tjp_stream_k_piece_bytes(const tji_func *fn)
{
    for (int32_t i = 0; i < fn->nops; i++)
        if (fn->ops[i].parent >= 0 && fn->ops[i].code == TJI_STREAM_K_ARRIVE)
            return 4 * tji_numel(tji_typeof(fn, fn->ops[i].args[0]));
    return 0;
}
