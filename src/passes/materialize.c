/* SPDX-License-Identifier: MIT */
/*
 * materialize.c — the CPU back end's fusion plan: which tile values get an
 * array of their own and which are recomputed where they are read.
 *
 * The CPU code generator turns each materialized tile into a loop nest that
 * fills a scratch array, and every other tile into an expression evaluated
 * element by element inside the loop nest of whoever reads it. A chain of
 * element-wise ops ending in a store is thus one loop, the way a C programmer
 * would write it. The plan is a small analysis over the IR:
 *
 *  - Scalars (rank 0) are SSA values computed once at their op; the plan
 *    marks them materialized (computed in place), and they never take scratch.
 *  - Values whose op is not element-wise, or whose op must run exactly once
 *    where it stands, are materialized: REDUCE, CUMSUM, DOT, ATOMIC,
 *    ATOMIC_CAS, FOR, IF and WHILE results, block arguments, volatile loads.
 *    So are the tile operands of PRINT (the runtime prints an array), of
 *    YIELD and CONDITION (a loop or branch copies arrays into its carried or
 *    result arrays; see cpu/cpu_control.c for why the copy must read stable
 *    arrays) and of DOT (its micro-kernel reads rows and columns of plain
 *    matrices).
 *  - RESHAPE and PERMUTE are views: they stay fused and read their operand,
 *    which is materialized, through remapped indices. No copy is made.
 *  - An "evaluation site" of a fused value is an op whose loop nest computes
 *    it: a materialized user, or a sink (STORE, ATOMIC, ASSERT, REDUCE ...),
 *    found by following fused users. A fused value is computed once per site.
 *  - A LOAD is fused only when that recomputation is invisible: exactly one
 *    use, exactly one site, the site in the load's own region, no op with
 *    a side effect (store, atomic, print, assert, debug barrier, a WHILE,
 *    which may never end, or a FOR/IF holding one) between the load and its
 *    site, and, where the site is a store or an
 *    atomic, no element of that write can overwrite what the load reads
 *    for another element (load_overtaken_by_write, alias.c): a program's
 *    loads happen before its later stores, as written, so an in-place
 *    reversal or transpose reads the tile first. Otherwise it is read
 *    before the side effect into an array of its own.
 *  - Costly element-wise values (division, remainder, math functions, FMA,
 *    casts to or from 16-bit floats) are materialized when they have more
 *    than one site or a site in another region (a loop body would recompute
 *    them every iteration). Cheap ones (splat, broadcast, arange, +, -, *,
 *    bitwise, compares, where, addptr, cheap casts) are always fused:
 *    recomputing an add is cheaper than a round trip through memory, and
 *    LLVM merges the copies inside one loop. A GPU layout CONVERT means
 *    nothing on the CPU: it is fused as the identity.
 *
 * A fused expression's depth is bounded (bound_fused_size, FUSE_LIMIT ops):
 * a longer chain is cut into loops by materializing every so often, which
 * keeps LLVM's time linear in the kernel and the code generator's recursion
 * along an expression shallow. The passes here walk the IR in id order
 * (operands have smaller ids than their users) or with explicit work
 * lists, never recursing along a chain.
 *
 * Materializing a value changes the sites of the values it reads, so the
 * decisions repeat until nothing changes (the materialized set only grows),
 * and so do they after the size bound has materialized more.
 */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

/* Per value: how many evaluation sites it has (capped at 2: "more than one"),
 * the one site when there is exactly one, and whether a site lies outside the
 * value's own region. */
typedef struct sites {
    uint8_t done, count, elsewhere;
    int32_t site_op;
} sites;

typedef struct planner {
    const tji_func *fn;
    tjp_plan *plan;
    int32_t *users_start;  /* CSR lists of (op) per value id, one per use */
    int32_t *users;
    int32_t *op_pos;       /* position of each op in its region */
    int8_t *op_effects;    /* -1 unknown, 0/1: has a side effect (recursive) */
    sites *site;
    tjp_provenance prov;   /* for tjp_may_alias */
    int32_t *size;         /* per value id: the depth of its fused expression */
    int32_t *stack, *seen, stamp; /* work list and visit marks of a walk */
} planner;

static int is_cheap_elementwise(tji_opcode c)
{
    switch (c) {
    case TJI_SPLAT: case TJI_BROADCAST: case TJI_EXPAND_DIMS: case TJI_ARANGE:
    case TJI_CONST: case TJI_ADD: case TJI_SUB: case TJI_MUL: case TJI_AND:
    case TJI_OR: case TJI_XOR: case TJI_SHL: case TJI_SHR: case TJI_MIN:
    case TJI_MAX: case TJI_CMP: case TJI_ADDPTR: case TJI_NEG: case TJI_NOT:
    case TJI_ABS: case TJI_POPC: case TJI_CLZ: case TJI_BREV: case TJI_WHERE: case TJI_BITCAST: case TJI_CAST:
    case TJI_RESHAPE: case TJI_PERMUTE:
    case TJI_PROGRAM_ID: case TJI_NUM_PROGRAMS: case TJI_CONVERT: case TJI_ASSUME:
        return 1;
    default:
        return 0;
    }
}

static int is_costly_elementwise(tji_opcode c)
{
    switch (c) {
    case TJI_DIV: case TJI_IDIV: case TJI_REM: case TJI_EXP: case TJI_EXP2:
    case TJI_LOG: case TJI_LOG2: case TJI_SQRT: case TJI_RSQRT: case TJI_SIGMOID:
    case TJI_FLOOR: case TJI_CEIL: case TJI_FMA: case TJI_POW: case TJI_SIN: case TJI_COS:
    case TJI_TANH: case TJI_ERF: case TJI_LOG1P: case TJI_EXPM1: case TJI_RINT: case TJI_TRUNC:
    case TJI_ROUND: case TJI_INLINE_ASM: case TJI_ATAN2: case TJI_HYPOT: case TJI_TAN: case TJI_ASIN:
    case TJI_ACOS: case TJI_ATAN: case TJI_SINH: case TJI_COSH: case TJI_ASINH: case TJI_ACOSH:
    case TJI_ATANH: case TJI_LOG10: case TJI_CBRT: case TJI_EXP10: case TJI_ERFC: case TJI_LGAMMA:
        return 1;
    default:
        return 0;
    }
}

/* Floats whose conversions cost more than an instruction (calls or integer code). */
static int is_narrow_float(tj_dtype t) { return t == TJ_F16 || t == TJ_BF16 || tjs_dtype_is_fp8(t); }

/* A value the code generator can recompute at any index of any loop nest. */
static int fusible(const tji_func *fn, int32_t id)
{
    const tji_value *v = tji_val(fn, id);
    if (v->type.rank == 0 || v->def_op < 0)
        return 0;
    const tji_op *op = &fn->ops[v->def_op];
    return is_cheap_elementwise(op->code) || is_costly_elementwise(op->code) ||
           (op->code == TJI_LOAD && !op->is_volatile);
}

static int costly(const tji_func *fn, int32_t id)
{
    const tji_op *op = &fn->ops[tji_val(fn, id)->def_op];
    if (is_costly_elementwise(op->code))
        return 1;
    if (op->code == TJI_CAST && op->nargs == 1) {
        const tji_type *from = tji_typeof(fn, op->args[0]);
        const tji_type *to = tji_typeof(fn, id);
        return !from->is_ptr && (is_narrow_float(from->dtype) || is_narrow_float(to->dtype));
    }
    return 0;
}

static int op_has_effects(planner *p, int32_t opi)
{
    if (p->op_effects[opi] >= 0)
        return p->op_effects[opi];
    const tji_op *op = &p->fn->ops[opi];
    int effects = 0;
    switch (op->code) {
    case TJI_STORE: case TJI_ATOMIC: case TJI_ATOMIC_CAS: case TJI_PRINT: case TJI_ASSERT:
    case TJI_ASSUME_TRUE: case TJI_BARRIER: case TJI_WHILE: /* a while loop may never end */
        effects = 1;
        break;
    case TJI_LOAD:
        effects = op->is_volatile;
        break;
    case TJI_FOR: case TJI_IF:
        for (int r = 0; r < 2 && !effects; r++) {
            if (op->region[r] < 0)
                continue;
            const tji_region *reg = &p->fn->regions[op->region[r]];
            for (int32_t i = 0; i < reg->nops && !effects; i++)
                effects = op_has_effects(p, reg->ops[i]);
        }
        break;
    default:
        break;
    }
    p->op_effects[opi] = (int8_t)effects;
    return effects;
}

/* The region a value lives in. */
static int32_t value_region(const tji_func *fn, int32_t id)
{
    const tji_value *v = tji_val(fn, id);
    return v->def_op < 0 ? v->def_region : fn->ops[v->def_op].parent;
}

static void add_site(sites *s, const tji_func *fn, int32_t id, int32_t opi, int count)
{
    if (count <= 0)
        return;
    if (s->count == 0 && count == 1)
        s->site_op = opi;
    s->count = (uint8_t)(s->count + count > 2 ? 2 : s->count + count);
    if (fn->ops[opi].parent != value_region(fn, id))
        s->elsewhere = 1;
}

/* Evaluation sites of every fused value: a fused user passes on its own
 * sites, any other user is a site itself. Users have larger ids than the
 * values they read, so one pass from the last id down finds every fused
 * user's sites first: no recursion along a chain of any length. */
static void find_sites(planner *p)
{
    const tji_func *fn = p->fn;
    memset(p->site, 0, sizeof(sites) * (size_t)(fn->nvalues + 1));
    for (int32_t id = fn->nvalues; id >= 1; id--) {
        if (p->plan->materialize[id] || !fusible(fn, id))
            continue;
        sites *s = &p->site[id];
        for (int32_t u = p->users_start[id]; u < p->users_start[id + 1]; u++) {
            int32_t opi = p->users[u];
            const tji_op *op = &fn->ops[opi];
            int32_t r = op->nresults == 1 ? op->result : 0;
            if (r > id && fusible(fn, r) && !p->plan->materialize[r]) {
                const sites *rs = &p->site[r];
                if (rs->count == 1)
                    add_site(s, fn, id, rs->site_op, 1);
                else
                    add_site(s, fn, id, opi, rs->count); /* count is what matters */
                if (rs->elsewhere)
                    s->elsewhere = 1;
            } else {
                add_site(s, fn, id, opi, 1);
            }
        }
    }
}

/* The write a fused load is read in, when that is a store or an atomic:
 * the load is then done in the write's loop nest, element by element
 * between its writes. That is only right where no element the write
 * stores is one the load reads for another element: different buffers
 * (alias.c), or the same address expression with the value reaching the
 * write at the index it was loaded at (element-wise ops of one shape; a
 * broadcast or expand_dims on the way would read one loaded element at
 * several indices). */
static int load_overtaken_by_write(planner *p, int32_t load_id, int32_t site_op)
{
    const tji_func *fn = p->fn;
    const tji_op *site = &fn->ops[site_op];
    if (site->code != TJI_STORE && site->code != TJI_ATOMIC && site->code != TJI_ATOMIC_CAS)
        return 0;
    const tji_op *load = &fn->ops[tji_val(fn, load_id)->def_op];
    if (!tjp_may_alias(fn, &p->prov, load->args[0], site->args[0]))
        return 0;
    if (!tjp_same_value(fn, load->args[0], site->args[0]))
        return 1;
    const tji_type *lt = tji_typeof(fn, load_id);
    int32_t n = 0;
    p->stamp++;
    p->stack[n++] = load_id;
    while (n > 0) {
        int32_t v = p->stack[--n];
        for (int32_t u = p->users_start[v]; u < p->users_start[v + 1]; u++) {
            const tji_op *op = &fn->ops[p->users[u]];
            int32_t r = op->nresults == 1 ? op->result : 0;
            if (!r || !fusible(fn, r) || p->plan->materialize[r] || p->seen[r] == p->stamp)
                continue;
            const tji_type *rt = tji_typeof(fn, r);
            if (rt->rank != lt->rank || memcmp(rt->shape, lt->shape, sizeof rt->shape) != 0)
                return 1;
            p->seen[r] = p->stamp;
            p->stack[n++] = r;
        }
    }
    return 0;
}

/* A fused value is recomputed inside the loop nest of each reader: a
 * chain of thousands of element-wise ops would be one loop body that LLVM
 * takes quadratic time over (and the code generator, recursing along the
 * chain, deep stack). So a fused value more than FUSE_LIMIT ops deep (the
 * longest path of fused ops below it) is materialized, cutting the chain
 * into loops of bounded depth. Depth, not a count of the tree: a box
 * filter's nine loads share their index math, which one loop computes
 * once. One forward pass in id order; returns whether it materialized
 * anything. */
enum { FUSE_LIMIT = 256 };
static int bound_fused_size(planner *p)
{
    const tji_func *fn = p->fn;
    uint8_t *mat = p->plan->materialize;
    int changed = 0;
    for (int32_t id = 1; id <= fn->nvalues; id++) {
        p->size[id] = 0;
        if (mat[id] || !fusible(fn, id))
            continue;
        const tji_op *op = &fn->ops[tji_val(fn, id)->def_op];
        int32_t size = 0;
        for (int32_t a = 0; a < op->nargs; a++)
            if (op->args[a] > 0 && op->args[a] < id && p->size[op->args[a]] > size)
                size = p->size[op->args[a]];
        size++;
        if (size > FUSE_LIMIT) {
            mat[id] = 1;
            changed = 1;
            size = 0;
        }
        p->size[id] = size;
    }
    return changed;
}

/* No op with a side effect strictly between ops a and b of one region. */
static int quiet_between(planner *p, int32_t a, int32_t b)
{
    const tji_region *reg = &p->fn->regions[p->fn->ops[a].parent];
    for (int32_t i = p->op_pos[a] + 1; i < p->op_pos[b]; i++)
        if (op_has_effects(p, reg->ops[i]))
            return 0;
    return 1;
}

static int decide(planner *p)
{
    const tji_func *fn = p->fn;
    uint8_t *mat = p->plan->materialize;
    int changed = 0;
    find_sites(p);
    for (int32_t id = 1; id <= fn->nvalues; id++) {
        if (mat[id] || !fusible(fn, id))
            continue;
        const tji_op *op = &fn->ops[tji_val(fn, id)->def_op];
        const sites *s = &p->site[id];
        int need = 0;
        if (op->code == TJI_LOAD) {
            need = p->plan->uses[id] > 1 || s->count > 1 || s->elsewhere;
            if (!need && s->count == 1)
                need = fn->ops[s->site_op].parent != op->parent ||
                       !quiet_between(p, tji_val(fn, id)->def_op, s->site_op) ||
                       load_overtaken_by_write(p, id, s->site_op);
        } else if (costly(fn, id)) {
            need = s->count > 1 || s->elsewhere;
        }
        if (need) {
            mat[id] = 1;
            changed = 1;
        }
    }
    return changed;
}

void tjp_materialize(const tji_func *fn, tjp_plan *plan)
{
    int32_t n = fn->nvalues;
    plan->materialize = tjs_xcalloc((size_t)n + 1, 1);
    plan->uses = tjs_xcalloc((size_t)n + 1, sizeof(int32_t));
    planner p = {.fn = fn, .plan = plan};
    p.users_start = tjs_xcalloc((size_t)n + 2, sizeof(int32_t));
    p.op_pos = tjs_xcalloc((size_t)fn->nops + 1, sizeof(int32_t));
    p.op_effects = tjs_xmalloc((size_t)fn->nops + 1);
    memset(p.op_effects, -1, (size_t)fn->nops + 1);
    p.site = tjs_xcalloc((size_t)n + 1, sizeof(sites));
    p.size = tjs_xcalloc((size_t)n + 1, sizeof(int32_t));
    p.stack = tjs_xmalloc(sizeof(int32_t) * ((size_t)n + 1));
    p.seen = tjs_xcalloc((size_t)n + 1, sizeof(int32_t));
    tjp_find_provenance(fn, &p.prov);

    /* Uses, and users as compressed lists. */
    int64_t total = 0;
    for (int32_t i = 0; i < fn->nops; i++)
        for (int32_t a = 0; a < fn->ops[i].nargs; a++) {
            int32_t v = fn->ops[i].args[a];
            if (v > 0 && v <= n) {
                plan->uses[v]++;
                total++;
            }
        }
    for (int32_t v = 1; v <= n; v++)
        p.users_start[v + 1] = p.users_start[v] + plan->uses[v];
    p.users = tjs_xmalloc(sizeof(int32_t) * (size_t)(total ? total : 1));
    int32_t *fill = tjs_xcalloc((size_t)n + 1, sizeof(int32_t));
    for (int32_t i = 0; i < fn->nops; i++)
        for (int32_t a = 0; a < fn->ops[i].nargs; a++) {
            int32_t v = fn->ops[i].args[a];
            if (v > 0 && v <= n)
                p.users[p.users_start[v] + fill[v]++] = i;
        }
    free(fill);
    for (int32_t r = 0; r < fn->nregions; r++)
        for (int32_t i = 0; i < fn->regions[r].nops; i++)
            p.op_pos[fn->regions[r].ops[i]] = i;

    /* What is materialized whatever its uses. */
    for (int32_t id = 1; id <= n; id++)
        if (!fusible(fn, id))
            plan->materialize[id] = 1;
    for (int32_t i = 0; i < fn->nops; i++) {
        const tji_op *op = &fn->ops[i];
        int force = op->code == TJI_PRINT || op->code == TJI_YIELD || op->code == TJI_DOT ||
                    op->code == TJI_CONDITION ||
                    op->code == TJI_RESHAPE || op->code == TJI_PERMUTE;
        for (int32_t a = 0; force && a < op->nargs; a++)
            if (op->args[a] > 0)
                plan->materialize[op->args[a]] = 1;
    }
    do {
        while (decide(&p)) {
        }
    } while (bound_fused_size(&p));

    free(p.users_start);
    free(p.users);
    free(p.op_pos);
    free(p.op_effects);
    free(p.site);
    free(p.size);
    free(p.stack);
    free(p.seen);
    tjp_provenance_free(&p.prov);
}

void tjp_plan_free(tjp_plan *plan)
{
    free(plan->materialize);
    free(plan->uses);
    plan->materialize = NULL;
    plan->uses = NULL;
}
