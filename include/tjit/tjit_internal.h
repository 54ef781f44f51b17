/* SPDX-License-Identifier: MIT */
/*
 * tjit_internal.h — what tjit.h's macros expand to (tj__ names): not API,
 * and free to change between releases. Part of <tjit.h>, which includes it:
 * include that, not this.
 */
#ifndef TJIT_PUBLIC_INTERNAL_H
#define TJIT_PUBLIC_INTERNAL_H

#ifndef TJIT_H
#error "include <tjit.h>, not its parts"
#endif

/* ------------------------------------------------------------------------ */
/* Internals used by the macros above (names with tj__ are not API)         */
/* ------------------------------------------------------------------------ */

TJ_API tj_val tj__val_id(tj_val v);
TJ_API tj_arg tj__arg_int(tj_dtype dtype, int64_t value);
TJ_API tj_arg tj__arg_float(tj_dtype dtype, double value);
TJ_API tj_val tj__weak_int(long long v);
TJ_API tj_val tj__weak_uint(unsigned long long v);
TJ_API tj_val tj__weak_float(double v);
TJ_API tj_val tj__const_int(tj_loc loc, long long value, tj_dtype dtype);
TJ_API tj_val tj__const_float(tj_loc loc, double value, tj_dtype dtype);
TJ_API tj_val tj__program_id(tj_loc loc, int axis);
TJ_API tj_val tj__num_programs(tj_loc loc, int axis);
TJ_API tj_val tj__arange(tj_loc loc, int64_t lo, int64_t hi);
TJ_API tj_val tj__full(tj_loc loc, tj_shape shape, tj_val value, tj_dtype dtype);
TJ_API tj_val tj__full_like(tj_loc loc, tj_val x, tj_val value);
TJ_API tj_val tj__expand_dims(tj_loc loc, tj_val x, int axis);
TJ_API tj_val tj__broadcast_to(tj_loc loc, tj_val x, tj_shape shape);
TJ_API tj_val tj__reshape(tj_loc loc, tj_val x, tj_shape shape);
TJ_API tj_val tj__permute(tj_loc loc, tj_val x, tj_shape order);
TJ_API tj_val tj__join(tj_loc loc, tj_val a, tj_val b);
TJ_API void tj__split(tj_loc loc, tj_val x, tj_val *a, tj_val *b);
TJ_API tj_val tj__interleave(tj_loc loc, tj_val a, tj_val b);
TJ_API tj_val tj__cat(tj_loc loc, tj_val a, tj_val b);
TJ_API tj_val tj__sort(tj_loc loc, tj_val x, tj_sort_opts opts);
TJ_API tj_val tj__topk(tj_loc loc, tj_val x, int64_t k);
TJ_API tj_val tj__bitonic_merge(tj_loc loc, tj_val x, tj_sort_opts opts);
TJ_API tj_val tj__flip(tj_loc loc, tj_val x, int axis);
TJ_API tj_val tj__gather(tj_loc loc, tj_val src, tj_val index, int axis);
TJ_API tj_val tj__histogram(tj_loc loc, tj_val x, int64_t num_bins, tj_histogram_opts opts);
TJ_API void tj__swizzle2d(tj_loc loc, tj_val i, tj_val j, tj_val size_i, tj_val size_j, tj_val size_g,
                          tj_val *new_i, tj_val *new_j);
TJ_API tj_val tj__binary(tj_loc loc, tj_binop op, tj_val a, tj_val b);
TJ_API tj_val tj__unary(tj_loc loc, tj_unop op, tj_val x);
TJ_API tj_val tj__fma(tj_loc loc, tj_val a, tj_val b, tj_val c);
TJ_API tj_val tj__where(tj_loc loc, tj_val cond, tj_val a, tj_val b);
TJ_API tj_val tj__cast(tj_loc loc, tj_val x, tj_dtype dtype);
TJ_API tj_val tj__cast_opts(tj_loc loc, tj_val x, tj_dtype dtype, tj_cast_opts opts);
TJ_API tj_val tj__int_to_ptr(tj_loc loc, tj_val x, tj_dtype dtype);
TJ_API tj_val tj__ptr_to_int(tj_loc loc, tj_val p);
TJ_API tj_val tj__umulhi(tj_loc loc, tj_val a, tj_val b);
TJ_API tj_val tj__random(tj_loc loc, tj_random_kind kind, tj_val seed, tj_val offset,
                         tj_rand_opts opts);
TJ_API void tj__random4x(tj_loc loc, tj_random_kind kind, tj_val seed, tj_val offset,
                         tj_val *const out[4], tj_rand_opts opts);
TJ_API tj_val tj__load(tj_loc loc, tj_val ptr, tj_mem_opts opts);
TJ_API void tj__store(tj_loc loc, tj_val ptr, tj_val value, tj_mem_opts opts);
TJ_API tj_val tj__make_block_ptr(tj_loc loc, tj_val base, tj_vals shape, tj_vals strides,
                                 tj_vals offsets, tj_shape block_shape, tj_shape order);
TJ_API tj_val tj__advance(tj_loc loc, tj_val bp, tj_vals offsets);
TJ_API tj_val tj__make_tensor_descriptor(tj_loc loc, tj_val base, tj_vals shape,
                                         tj_vals strides, tj_shape block_shape);
TJ_API tj_val tj__descriptor_load(tj_loc loc, tj_val desc, tj_vals offsets);
TJ_API void tj__descriptor_store(tj_loc loc, tj_val desc, tj_vals offsets, tj_val value);
TJ_API tj_val tj__atomic(tj_loc loc, tj_atomic_op op, tj_val ptr, tj_val value, tj_mem_opts opts);
TJ_API tj_val tj__atomic_cas(tj_loc loc, tj_val ptr, tj_val cmp, tj_val value);
TJ_API tj_val tj__atomic_opts(tj_loc loc, tj_atomic_op op, tj_val ptr, tj_val value, tj_atomic_opts opts);
TJ_API tj_val tj__atomic_cas_opts(tj_loc loc, tj_val ptr, tj_val cmp, tj_val value, tj_atomic_opts opts);
TJ_API tj_val tj__reduce(tj_loc loc, tj_reduce_op op, tj_val x, int axis);
TJ_API tj_val tj__reduce_minmax(tj_loc loc, tj_reduce_op op, tj_val x, int axis, tj_minmax_opts opts);
TJ_API tj_val tj__minmax(tj_loc loc, tj_binop op, tj_val a, tj_val b, tj_minmax_opts opts);
TJ_API tj_val tj__clamp(tj_loc loc, tj_val x, tj_val lo, tj_val hi, tj_minmax_opts opts);
TJ_API tj_val tj__inline_asm(tj_loc loc, const char *ptx, const char *constraints, tj_dtype dtype, tj_vals args);
TJ_API tj_val tj__inline_asm_opts(tj_loc loc, const char *ptx, const char *constraints, tj_dtype dtype,
                                  tj_vals args, tj_asm_opts opts);
TJ_API tj_val tj__cumsum(tj_loc loc, tj_val x, int axis);
TJ_API tj_val tj__scan(tj_loc loc, tj_reduce_op op, tj_val x, int axis);
TJ_API tj_val tj__reduce_opts(tj_loc loc, tj_reduce_op op, tj_val x, int axis, tj_reduce_opts opts);
TJ_API tj_val tj__scan_opts(tj_loc loc, tj_reduce_op op, tj_val x, int axis, tj_scan_opts opts);
TJ_API tj_val tj__reduce_with(tj_loc loc, tj_val x, int axis, tj_combine_fn combine, tj_reduce_opts opts);
TJ_API void tj__reduce_n(tj_loc loc, int n, const tj_val *xs, tj_val *out, int axis, tj_combine_n_fn combine,
                         void *ctx, tj_reduce_opts opts);
TJ_API tj_val tj__xor_sum(tj_loc loc, tj_val x, int axis, tj_reduce_opts opts);
TJ_API tj_val tj__softmax(tj_loc loc, tj_val x, int axis);
TJ_API tj_val tj__ravel(tj_loc loc, tj_val x);
TJ_API tj_val tj__scan_with(tj_loc loc, tj_val x, int axis, tj_combine_fn combine, tj_scan_opts opts);
TJ_API void tj__scan_n(tj_loc loc, int n, const tj_val *xs, tj_val *out, int axis, tj_combine_n_fn combine,
                       void *ctx, tj_scan_opts opts);
TJ_API tj_val tj__dot(tj_loc loc, tj_val a, tj_val b, tj_val acc, tj_dot_opts opts);
TJ_API tj_val tj__assume(tj_loc loc, int what, tj_val x, int64_t n);
TJ_API void tj__assume_true(tj_loc loc, tj_val cond);
TJ_API void tj__print(tj_loc loc, const char *prefix, tj_val x);
TJ_API void tj__device_assert(tj_loc loc, tj_val cond, const char *msg);
TJ_API tj_val tj__for_begin(tj_loc loc, tj_val lo, tj_val hi, tj_val step,
                            tj_val **vars, int nvars);
TJ_API tj_val tj__for_begin_opts(tj_loc loc, tj_val lo, tj_val hi, tj_val step,
                                 tj_val **vars, int nvars, tj_loop_opts opts);
TJ_API int tj__if_begin(tj_loc loc, tj_val cond, tj_val **vars, int nvars);
TJ_API int tj__else_begin(tj_loc loc);
TJ_API int tj__while_begin(tj_loc loc, tj_val **vars, int nvars);
TJ_API void tj__while_cond(tj_loc loc, tj_val cond);
TJ_API void tj__debug_barrier(tj_loc loc);
TJ_API int tj__region_next(void);

/* Parameters are triples (kind, name, dtype); kind's bit 0: a pointer,
 * bit 1: not specialized on. */
#define TJ__P_IS(t) TJ__P_IS_ t
#define TJ__P_IS_(p, n, d) p
#define TJ__P_NAME(t) TJ__P_NAME_ t
#define TJ__P_NAME_(p, n, d) n
#define TJ__P_DT(t) TJ__P_DT_ t
#define TJ__P_DT_(p, n, d) TJ__DT_##d
#define TJ__P_CT(t) TJ__P_CT_ t
#define TJ__P_CT_(p, n, d) TJ__CAT(TJ__CT, p)(d)
#define TJ__CT1(d) tj_buffer
#define TJ__CT0(d) TJ__CT_##d
#define TJ__CT3(d) tj_buffer
#define TJ__CT2(d) TJ__CT_##d
#define TJ__P_DECL(i, t) , TJ__UNUSED tj_val TJ__P_NAME(t)
#define TJ__P_DESC(i, t) , {TJ__P_IS(t) & 1, TJ__P_DT(t), TJ__STR(TJ__P_NAME(t)), TJ__P_IS(t) >> 1}
#define TJ__P_CARG(i, t) , TJ__P_CT(t) TJ__P_NAME(t)
#define TJ__P_MKARG(i, t) , TJ__CAT(TJ__MKARG, TJ__P_IS(t))(TJ__P_DT(t), TJ__P_NAME(t))
#define TJ__MKARG1(dt, n) {TJ_I32, 1, {.buf = (n)}}
#define TJ__MKARG3 TJ__MKARG1
#define TJ__MKARG2 TJ__MKARG0
#define TJ__MKARG0(dt, n) _Generic((n), float: tj__arg_float, double: tj__arg_float, \
                                    default: tj__arg_int)((dt), (n))
#define TJ__P_PASS(i, t) , tj__p[i]
#define TJ__C_DECL(i, n) , TJ__UNUSED int64_t n
#define TJ__C_NAME(i, n) , #n
#define TJ__C_PASS(i, n) , tj__c[i]
#define TJ__C_PASSV(i, n) , (n)
#define TJ__STR(x) TJ__STR_(x)
#define TJ__STR_(x) #x

#define TJ__DT_i1 TJ_I1
#define TJ__DT_i8 TJ_I8
#define TJ__DT_i16 TJ_I16
#define TJ__DT_i32 TJ_I32
#define TJ__DT_i64 TJ_I64
#define TJ__DT_u8 TJ_U8
#define TJ__DT_u16 TJ_U16
#define TJ__DT_u32 TJ_U32
#define TJ__DT_u64 TJ_U64
#define TJ__DT_f16 TJ_F16
#define TJ__DT_bf16 TJ_BF16
#define TJ__DT_f32 TJ_F32
#define TJ__DT_f64 TJ_F64
#define TJ__DT_f8e4m3 TJ_F8E4M3
#define TJ__DT_f8e5m2 TJ_F8E5M2
#define TJ__CT_i1 _Bool
#define TJ__CT_i8 int8_t
#define TJ__CT_i16 int16_t
#define TJ__CT_i32 int32_t
#define TJ__CT_i64 int64_t
#define TJ__CT_u8 uint8_t
#define TJ__CT_u16 uint16_t
#define TJ__CT_u32 uint32_t
#define TJ__CT_u64 uint64_t
#define TJ__CT_f16 double
#define TJ__CT_bf16 double
#define TJ__CT_f32 double
#define TJ__CT_f64 double
#define TJ__CT_f8e4m3 double
#define TJ__CT_f8e5m2 double

#endif /* TJIT_PUBLIC_INTERNAL_H */
