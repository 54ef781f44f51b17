/* SPDX-License-Identifier: MIT */
/*
 * fuzz_prog.h — the random tile programs of test_fuzz.c, as data.
 *
 * A program is a list of ops, each making one value; operands are earlier
 * values by index. The same list is walked three times: by the generator
 * (gen_program, from a seed alone), by the kernel body, which turns each op
 * into tj_* calls at build time, and by the C reference (fuzz_ref.h), which
 * computes what every element must be. Keeping the program as data is what
 * lets the reference and the kernel agree on it without a second
 * generator.
 *
 * Values are tiles of dims (r, c) with r in {1, R} and c in {1, C} (R x C
 * the tile of one program), or scalars. Float values carry two bounds, as
 * in test_differential.c: mag on their magnitude (the generator keeps
 * every value finite) and err on how far tjit may be from the reference —
 * 0 while every op was correctly rounded, so that the two must agree bit
 * for bit, the sign of a zero included; comparisons, float-to-int casts,
 * floor, mod and argmax are drawn only over exact values. NaN enters as
 * the .other of a load or a where's alternative, and a value that may hold
 * one (nan) goes only where NaN has a rule to test: minimum, maximum and
 * the max/min/argmax/argmin reductions (with and without .propagate_nan),
 * where, casts between floats, shapes and stores — not into arithmetic,
 * which one NaN would take over, comparisons or casts to integers.

 */
#ifndef TJIT_TESTS_FUZZ_PROG_H
#define TJIT_TESTS_FUZZ_PROG_H

#include "testlib.h"
#include "fuzz_rng.h"

enum { FZ_MAXOPS = 40, FZ_MAXTILE = 512, FZ_MAXSTORES = 8 };

typedef enum fz_kind {
    /* leaves */
    FZ_LOAD,      /* masked load of the tile from input buffer `in`; sub 0: .other =
                   * const, 1: no .other (0), 2: the mask also ANDed with i1 value b */
    FZ_LOAD_ROW,  /* [1, C]: a masked load of the columns' elements, expanded */
    FZ_LOAD_COL,  /* [R, 1]: the rows' elements */
    FZ_CONST,     /* a typed scalar constant */
    FZ_FULL,      /* tj_full of dims (r, c) (rank 0 for a scalar) */
    FZ_PARAM,     /* the scalar parameter sf (f32) or si (i32): sub 0 / 1 */
    FZ_PID,       /* tj_program_id(0) */
    FZ_ROW_IDX,   /* [R, 1] global row numbers (i32) */
    FZ_COL_IDX,   /* [1, C] column numbers (i32) */
    /* element-wise */
    FZ_BIN,       /* sub: tj_binop (TJ_OP_POW too); operands cast to dt first;
                   * b < 0: a C literal */
    FZ_UN,        /* sub: tj_unop (tj_sin, tj_cos, tj_tanh, tj_erf too) */
    FZ_FMA,
    FZ_CMP,       /* sub: TJ_OP_EQ..GE over operands of dtype `in` (as a dtype) */
    FZ_WHERE,     /* a: an i1 condition */
    FZ_CAST,
    /* reductions and shapes */
    FZ_REDUCE,    /* sub: tj_reduce_op along axis, the axis kept as 1 */
    FZ_CUMSUM,
    FZ_FLAT_REDUCE, /* the tile reshaped to 1-D and reduced to a scalar */
    FZ_FLAT_CUMSUM, /* reshaped to 1-D, cumsum, reshaped back */
    FZ_TRANS,
    FZ_PERMUTE3,  /* (r, c) viewed as [r, c/2, 2], permuted to [r, 2, c/2], reshaped back */
    FZ_BCAST,     /* tj_broadcast_to (R, C) */
    /* control flow */
    FZ_FOR,       /* acc = a; TJ_FOR(k, 0, trips) { acc = acc sub b (+ k if axis) },
                     or the same as a TJ_WHILE (fz_for_as_while) */
    FZ_IF,        /* v = a; TJ_IF(pid + trips < iconst) { v = v sub b } TJ_ELSE { v = v sub2 b } */
    FZ_BAD        /* ill-formed programs: one bad op (sub: fz_bad), see test_fuzz.c */
} fz_kind;

typedef struct fz_op {
    fz_kind kind;
    int sub, sub2;
    int a, b, c;     /* operand values */
    int in;          /* FZ_LOAD*: the input dtype; FZ_CMP: the operands' dtype */
    int axis;        /* reductions; FZ_FOR: add k too; FZ_BAD: inside a region */
    tj_dtype dt;     /* of the result */
    int r, cdim, scalar; /* dims of the result */
    double fconst;   /* float constants, literals, .other */
    int64_t iconst;  /* integer ones; FZ_IF: the bound */
    double mag, err; /* float bounds, see above */
    int nan;         /* may hold a NaN, see above */
    int propagate;   /* float minimum/maximum and reductions: .propagate_nan = ALL */
} fz_op;

typedef struct fz_prog {
    int R, C;
    int nops;
    fz_op op[FZ_MAXOPS];
    int nstores;     /* values stored, each to a slot of the output buffer of its dtype */
    int store[FZ_MAXSTORES], slot[FZ_MAXSTORES];
    int slots[TJ_DTYPE_COUNT]; /* slots of each output buffer */
    int store_mask;  /* an i1 value ANDed into the first store's mask, or -1 */
    int bad;         /* index of the FZ_BAD op, or -1 */
} fz_prog;

/* Half the FZ_FOR loops are written as TJ_WHILE(k < trips) loops, picked
 * by their ops, so that each seed keeps the program it always had. */
static inline int fz_for_as_while(const fz_op *o) { return (o->sub + o->sub2) % 2; }

static inline int fz_is_float(tj_dtype t) { return t >= TJ_F16 && t <= TJ_F64; }
static inline int fz_is_int(tj_dtype t) { return !fz_is_float(t) && t != TJ_I1; }

#define FZ_INPUT_MAG 4.0 /* float inputs and constants lie in [-4, 4] */

/* The largest magnitude a float value of t may reach. */
static inline double fz_limit(tj_dtype t)
{
    return t == TJ_F16 ? 2e4 : t == TJ_F64 ? 1e100 : 1e30;
}

/* One more rounding of a value of magnitude mag whose inputs were off by
 * err_in: exact stays exact. */
static inline double fz_rounding(tj_dtype t, double err_in, double mag)
{
    return err_in > 0 ? err_in + tl_eps(t) * mag : 0;
}

#endif
