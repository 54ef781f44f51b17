/* SPDX-License-Identifier: MIT */
/*
 * tjit/tjit_macros.h — the preprocessor machinery of tjit.h: counting a
 * macro's arguments (TJ__NARGS) and applying a macro to each of them
 * (TJ__EACH). TJ_KERNEL expands its parameter and constant lists with it,
 * TJ_SHAPE and TJ_VALS count their arguments, TJ_VALS and TJ_DIMS apply
 * one macro per argument. None of it is API (every name has tj__/TJ__);
 * it lives apart so that tjit.h reads as the API it is. Included by
 * tjit.h, never on its own.
 */
#ifndef TJIT_MACROS_H
#define TJIT_MACROS_H

/* Argument counting and per-parameter expansion for TJ_KERNEL. They go to
 * 128 arguments, twice TJ_MAX_PARAMS, so that a kernel past the limit still
 * expands cleanly and TJ_KERNEL's _Static_assert is its one error. */
/* __VA_OPT__ (C23, and GCC >= 8 and clang >= 12 in every mode) lets an
 * empty list count as 0. */
#define TJ__NARGS(...) TJ__NARGS_(~ __VA_OPT__(,) __VA_ARGS__, 128, 127, 126, \
    125, 124, 123, 122, 121, 120, 119, 118, 117, 116, 115, 114, 113, 112, \
    111, 110, 109, 108, 107, 106, 105, 104, 103, 102, 101, 100, 99, 98, 97, \
    96, 95, 94, 93, 92, 91, 90, 89, 88, 87, 86, 85, 84, 83, 82, 81, 80, 79, \
    78, 77, 76, 75, 74, 73, 72, 71, 70, 69, 68, 67, 66, 65, 64, 63, 62, 61, \
    60, 59, 58, 57, 56, 55, 54, 53, 52, 51, 50, 49, 48, 47, 46, 45, 44, 43, \
    42, 41, 40, 39, 38, 37, 36, 35, 34, 33, 32, 31, 30, 29, 28, 27, 26, 25, \
    24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, \
    5, 4, 3, 2, 1, 0)
#define TJ__NARGS_(z, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, \
    a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, \
    a28, a29, a30, a31, a32, a33, a34, a35, a36, a37, a38, a39, a40, a41, \
    a42, a43, a44, a45, a46, a47, a48, a49, a50, a51, a52, a53, a54, a55, \
    a56, a57, a58, a59, a60, a61, a62, a63, a64, a65, a66, a67, a68, a69, \
    a70, a71, a72, a73, a74, a75, a76, a77, a78, a79, a80, a81, a82, a83, \
    a84, a85, a86, a87, a88, a89, a90, a91, a92, a93, a94, a95, a96, a97, \
    a98, a99, a100, a101, a102, a103, a104, a105, a106, a107, a108, a109, \
    a110, a111, a112, a113, a114, a115, a116, a117, a118, a119, a120, a121, \
    a122, a123, a124, a125, a126, a127, a128, n, ...) n
#define TJ__CAT(a, b) TJ__CAT_(a, b)
#define TJ__CAT_(a, b) a##b
/* TJ__EACH(m, (x, y, z)) is m(0, x) m(1, y) m(2, z). */
#define TJ__EACH_P(m, list) TJ__EACH(m, list)
#define TJ__EACH_C(m, list) TJ__EACH(m, list)
#define TJ__EACH(m, list) \
    TJ__APPLY(TJ__CAT(TJ__EACH_, TJ__NARGS list), m, TJ__NARGS list, TJ__EXPAND list)
#define TJ__APPLY(f, ...) f(__VA_ARGS__)
#define TJ__EXPAND(...) __VA_ARGS__
#define TJ__EACH_0(m, n, ...)
#define TJ__EACH_1(m, n, x) m((n) - 1, x)
#define TJ__EACH_2(m, n, x, ...) m((n) - 2, x) TJ__EACH_1(m, n, __VA_ARGS__)
#define TJ__EACH_3(m, n, x, ...) m((n) - 3, x) TJ__EACH_2(m, n, __VA_ARGS__)
#define TJ__EACH_4(m, n, x, ...) m((n) - 4, x) TJ__EACH_3(m, n, __VA_ARGS__)
#define TJ__EACH_5(m, n, x, ...) m((n) - 5, x) TJ__EACH_4(m, n, __VA_ARGS__)
#define TJ__EACH_6(m, n, x, ...) m((n) - 6, x) TJ__EACH_5(m, n, __VA_ARGS__)
#define TJ__EACH_7(m, n, x, ...) m((n) - 7, x) TJ__EACH_6(m, n, __VA_ARGS__)
#define TJ__EACH_8(m, n, x, ...) m((n) - 8, x) TJ__EACH_7(m, n, __VA_ARGS__)
#define TJ__EACH_9(m, n, x, ...) m((n) - 9, x) TJ__EACH_8(m, n, __VA_ARGS__)
#define TJ__EACH_10(m, n, x, ...) m((n) - 10, x) TJ__EACH_9(m, n, __VA_ARGS__)
#define TJ__EACH_11(m, n, x, ...) m((n) - 11, x) TJ__EACH_10(m, n, __VA_ARGS__)
#define TJ__EACH_12(m, n, x, ...) m((n) - 12, x) TJ__EACH_11(m, n, __VA_ARGS__)
#define TJ__EACH_13(m, n, x, ...) m((n) - 13, x) TJ__EACH_12(m, n, __VA_ARGS__)
#define TJ__EACH_14(m, n, x, ...) m((n) - 14, x) TJ__EACH_13(m, n, __VA_ARGS__)
#define TJ__EACH_15(m, n, x, ...) m((n) - 15, x) TJ__EACH_14(m, n, __VA_ARGS__)
#define TJ__EACH_16(m, n, x, ...) m((n) - 16, x) TJ__EACH_15(m, n, __VA_ARGS__)
#define TJ__EACH_17(m, n, x, ...) m((n) - 17, x) TJ__EACH_16(m, n, __VA_ARGS__)
#define TJ__EACH_18(m, n, x, ...) m((n) - 18, x) TJ__EACH_17(m, n, __VA_ARGS__)
#define TJ__EACH_19(m, n, x, ...) m((n) - 19, x) TJ__EACH_18(m, n, __VA_ARGS__)
#define TJ__EACH_20(m, n, x, ...) m((n) - 20, x) TJ__EACH_19(m, n, __VA_ARGS__)
#define TJ__EACH_21(m, n, x, ...) m((n) - 21, x) TJ__EACH_20(m, n, __VA_ARGS__)
#define TJ__EACH_22(m, n, x, ...) m((n) - 22, x) TJ__EACH_21(m, n, __VA_ARGS__)
#define TJ__EACH_23(m, n, x, ...) m((n) - 23, x) TJ__EACH_22(m, n, __VA_ARGS__)
#define TJ__EACH_24(m, n, x, ...) m((n) - 24, x) TJ__EACH_23(m, n, __VA_ARGS__)
#define TJ__EACH_25(m, n, x, ...) m((n) - 25, x) TJ__EACH_24(m, n, __VA_ARGS__)
#define TJ__EACH_26(m, n, x, ...) m((n) - 26, x) TJ__EACH_25(m, n, __VA_ARGS__)
#define TJ__EACH_27(m, n, x, ...) m((n) - 27, x) TJ__EACH_26(m, n, __VA_ARGS__)
#define TJ__EACH_28(m, n, x, ...) m((n) - 28, x) TJ__EACH_27(m, n, __VA_ARGS__)
#define TJ__EACH_29(m, n, x, ...) m((n) - 29, x) TJ__EACH_28(m, n, __VA_ARGS__)
#define TJ__EACH_30(m, n, x, ...) m((n) - 30, x) TJ__EACH_29(m, n, __VA_ARGS__)
#define TJ__EACH_31(m, n, x, ...) m((n) - 31, x) TJ__EACH_30(m, n, __VA_ARGS__)
#define TJ__EACH_32(m, n, x, ...) m((n) - 32, x) TJ__EACH_31(m, n, __VA_ARGS__)
#define TJ__EACH_33(m, n, x, ...) m((n) - 33, x) TJ__EACH_32(m, n, __VA_ARGS__)
#define TJ__EACH_34(m, n, x, ...) m((n) - 34, x) TJ__EACH_33(m, n, __VA_ARGS__)
#define TJ__EACH_35(m, n, x, ...) m((n) - 35, x) TJ__EACH_34(m, n, __VA_ARGS__)
#define TJ__EACH_36(m, n, x, ...) m((n) - 36, x) TJ__EACH_35(m, n, __VA_ARGS__)
#define TJ__EACH_37(m, n, x, ...) m((n) - 37, x) TJ__EACH_36(m, n, __VA_ARGS__)
#define TJ__EACH_38(m, n, x, ...) m((n) - 38, x) TJ__EACH_37(m, n, __VA_ARGS__)
#define TJ__EACH_39(m, n, x, ...) m((n) - 39, x) TJ__EACH_38(m, n, __VA_ARGS__)
#define TJ__EACH_40(m, n, x, ...) m((n) - 40, x) TJ__EACH_39(m, n, __VA_ARGS__)
#define TJ__EACH_41(m, n, x, ...) m((n) - 41, x) TJ__EACH_40(m, n, __VA_ARGS__)
#define TJ__EACH_42(m, n, x, ...) m((n) - 42, x) TJ__EACH_41(m, n, __VA_ARGS__)
#define TJ__EACH_43(m, n, x, ...) m((n) - 43, x) TJ__EACH_42(m, n, __VA_ARGS__)
#define TJ__EACH_44(m, n, x, ...) m((n) - 44, x) TJ__EACH_43(m, n, __VA_ARGS__)
#define TJ__EACH_45(m, n, x, ...) m((n) - 45, x) TJ__EACH_44(m, n, __VA_ARGS__)
#define TJ__EACH_46(m, n, x, ...) m((n) - 46, x) TJ__EACH_45(m, n, __VA_ARGS__)
#define TJ__EACH_47(m, n, x, ...) m((n) - 47, x) TJ__EACH_46(m, n, __VA_ARGS__)
#define TJ__EACH_48(m, n, x, ...) m((n) - 48, x) TJ__EACH_47(m, n, __VA_ARGS__)
#define TJ__EACH_49(m, n, x, ...) m((n) - 49, x) TJ__EACH_48(m, n, __VA_ARGS__)
#define TJ__EACH_50(m, n, x, ...) m((n) - 50, x) TJ__EACH_49(m, n, __VA_ARGS__)
#define TJ__EACH_51(m, n, x, ...) m((n) - 51, x) TJ__EACH_50(m, n, __VA_ARGS__)
#define TJ__EACH_52(m, n, x, ...) m((n) - 52, x) TJ__EACH_51(m, n, __VA_ARGS__)
#define TJ__EACH_53(m, n, x, ...) m((n) - 53, x) TJ__EACH_52(m, n, __VA_ARGS__)
#define TJ__EACH_54(m, n, x, ...) m((n) - 54, x) TJ__EACH_53(m, n, __VA_ARGS__)
#define TJ__EACH_55(m, n, x, ...) m((n) - 55, x) TJ__EACH_54(m, n, __VA_ARGS__)
#define TJ__EACH_56(m, n, x, ...) m((n) - 56, x) TJ__EACH_55(m, n, __VA_ARGS__)
#define TJ__EACH_57(m, n, x, ...) m((n) - 57, x) TJ__EACH_56(m, n, __VA_ARGS__)
#define TJ__EACH_58(m, n, x, ...) m((n) - 58, x) TJ__EACH_57(m, n, __VA_ARGS__)
#define TJ__EACH_59(m, n, x, ...) m((n) - 59, x) TJ__EACH_58(m, n, __VA_ARGS__)
#define TJ__EACH_60(m, n, x, ...) m((n) - 60, x) TJ__EACH_59(m, n, __VA_ARGS__)
#define TJ__EACH_61(m, n, x, ...) m((n) - 61, x) TJ__EACH_60(m, n, __VA_ARGS__)
#define TJ__EACH_62(m, n, x, ...) m((n) - 62, x) TJ__EACH_61(m, n, __VA_ARGS__)
#define TJ__EACH_63(m, n, x, ...) m((n) - 63, x) TJ__EACH_62(m, n, __VA_ARGS__)
#define TJ__EACH_64(m, n, x, ...) m((n) - 64, x) TJ__EACH_63(m, n, __VA_ARGS__)
#define TJ__EACH_65(m, n, x, ...) m((n) - 65, x) TJ__EACH_64(m, n, __VA_ARGS__)
#define TJ__EACH_66(m, n, x, ...) m((n) - 66, x) TJ__EACH_65(m, n, __VA_ARGS__)
#define TJ__EACH_67(m, n, x, ...) m((n) - 67, x) TJ__EACH_66(m, n, __VA_ARGS__)
#define TJ__EACH_68(m, n, x, ...) m((n) - 68, x) TJ__EACH_67(m, n, __VA_ARGS__)
#define TJ__EACH_69(m, n, x, ...) m((n) - 69, x) TJ__EACH_68(m, n, __VA_ARGS__)
#define TJ__EACH_70(m, n, x, ...) m((n) - 70, x) TJ__EACH_69(m, n, __VA_ARGS__)
#define TJ__EACH_71(m, n, x, ...) m((n) - 71, x) TJ__EACH_70(m, n, __VA_ARGS__)
#define TJ__EACH_72(m, n, x, ...) m((n) - 72, x) TJ__EACH_71(m, n, __VA_ARGS__)
#define TJ__EACH_73(m, n, x, ...) m((n) - 73, x) TJ__EACH_72(m, n, __VA_ARGS__)
#define TJ__EACH_74(m, n, x, ...) m((n) - 74, x) TJ__EACH_73(m, n, __VA_ARGS__)
#define TJ__EACH_75(m, n, x, ...) m((n) - 75, x) TJ__EACH_74(m, n, __VA_ARGS__)
#define TJ__EACH_76(m, n, x, ...) m((n) - 76, x) TJ__EACH_75(m, n, __VA_ARGS__)
#define TJ__EACH_77(m, n, x, ...) m((n) - 77, x) TJ__EACH_76(m, n, __VA_ARGS__)
#define TJ__EACH_78(m, n, x, ...) m((n) - 78, x) TJ__EACH_77(m, n, __VA_ARGS__)
#define TJ__EACH_79(m, n, x, ...) m((n) - 79, x) TJ__EACH_78(m, n, __VA_ARGS__)
#define TJ__EACH_80(m, n, x, ...) m((n) - 80, x) TJ__EACH_79(m, n, __VA_ARGS__)
#define TJ__EACH_81(m, n, x, ...) m((n) - 81, x) TJ__EACH_80(m, n, __VA_ARGS__)
#define TJ__EACH_82(m, n, x, ...) m((n) - 82, x) TJ__EACH_81(m, n, __VA_ARGS__)
#define TJ__EACH_83(m, n, x, ...) m((n) - 83, x) TJ__EACH_82(m, n, __VA_ARGS__)
#define TJ__EACH_84(m, n, x, ...) m((n) - 84, x) TJ__EACH_83(m, n, __VA_ARGS__)
#define TJ__EACH_85(m, n, x, ...) m((n) - 85, x) TJ__EACH_84(m, n, __VA_ARGS__)
#define TJ__EACH_86(m, n, x, ...) m((n) - 86, x) TJ__EACH_85(m, n, __VA_ARGS__)
#define TJ__EACH_87(m, n, x, ...) m((n) - 87, x) TJ__EACH_86(m, n, __VA_ARGS__)
#define TJ__EACH_88(m, n, x, ...) m((n) - 88, x) TJ__EACH_87(m, n, __VA_ARGS__)
#define TJ__EACH_89(m, n, x, ...) m((n) - 89, x) TJ__EACH_88(m, n, __VA_ARGS__)
#define TJ__EACH_90(m, n, x, ...) m((n) - 90, x) TJ__EACH_89(m, n, __VA_ARGS__)
#define TJ__EACH_91(m, n, x, ...) m((n) - 91, x) TJ__EACH_90(m, n, __VA_ARGS__)
#define TJ__EACH_92(m, n, x, ...) m((n) - 92, x) TJ__EACH_91(m, n, __VA_ARGS__)
#define TJ__EACH_93(m, n, x, ...) m((n) - 93, x) TJ__EACH_92(m, n, __VA_ARGS__)
#define TJ__EACH_94(m, n, x, ...) m((n) - 94, x) TJ__EACH_93(m, n, __VA_ARGS__)
#define TJ__EACH_95(m, n, x, ...) m((n) - 95, x) TJ__EACH_94(m, n, __VA_ARGS__)
#define TJ__EACH_96(m, n, x, ...) m((n) - 96, x) TJ__EACH_95(m, n, __VA_ARGS__)
#define TJ__EACH_97(m, n, x, ...) m((n) - 97, x) TJ__EACH_96(m, n, __VA_ARGS__)
#define TJ__EACH_98(m, n, x, ...) m((n) - 98, x) TJ__EACH_97(m, n, __VA_ARGS__)
#define TJ__EACH_99(m, n, x, ...) m((n) - 99, x) TJ__EACH_98(m, n, __VA_ARGS__)
#define TJ__EACH_100(m, n, x, ...) m((n) - 100, x) TJ__EACH_99(m, n, __VA_ARGS__)
#define TJ__EACH_101(m, n, x, ...) m((n) - 101, x) TJ__EACH_100(m, n, __VA_ARGS__)
#define TJ__EACH_102(m, n, x, ...) m((n) - 102, x) TJ__EACH_101(m, n, __VA_ARGS__)
#define TJ__EACH_103(m, n, x, ...) m((n) - 103, x) TJ__EACH_102(m, n, __VA_ARGS__)
#define TJ__EACH_104(m, n, x, ...) m((n) - 104, x) TJ__EACH_103(m, n, __VA_ARGS__)
#define TJ__EACH_105(m, n, x, ...) m((n) - 105, x) TJ__EACH_104(m, n, __VA_ARGS__)
#define TJ__EACH_106(m, n, x, ...) m((n) - 106, x) TJ__EACH_105(m, n, __VA_ARGS__)
#define TJ__EACH_107(m, n, x, ...) m((n) - 107, x) TJ__EACH_106(m, n, __VA_ARGS__)
#define TJ__EACH_108(m, n, x, ...) m((n) - 108, x) TJ__EACH_107(m, n, __VA_ARGS__)
#define TJ__EACH_109(m, n, x, ...) m((n) - 109, x) TJ__EACH_108(m, n, __VA_ARGS__)
#define TJ__EACH_110(m, n, x, ...) m((n) - 110, x) TJ__EACH_109(m, n, __VA_ARGS__)
#define TJ__EACH_111(m, n, x, ...) m((n) - 111, x) TJ__EACH_110(m, n, __VA_ARGS__)
#define TJ__EACH_112(m, n, x, ...) m((n) - 112, x) TJ__EACH_111(m, n, __VA_ARGS__)
#define TJ__EACH_113(m, n, x, ...) m((n) - 113, x) TJ__EACH_112(m, n, __VA_ARGS__)
#define TJ__EACH_114(m, n, x, ...) m((n) - 114, x) TJ__EACH_113(m, n, __VA_ARGS__)
#define TJ__EACH_115(m, n, x, ...) m((n) - 115, x) TJ__EACH_114(m, n, __VA_ARGS__)
#define TJ__EACH_116(m, n, x, ...) m((n) - 116, x) TJ__EACH_115(m, n, __VA_ARGS__)
#define TJ__EACH_117(m, n, x, ...) m((n) - 117, x) TJ__EACH_116(m, n, __VA_ARGS__)
#define TJ__EACH_118(m, n, x, ...) m((n) - 118, x) TJ__EACH_117(m, n, __VA_ARGS__)
#define TJ__EACH_119(m, n, x, ...) m((n) - 119, x) TJ__EACH_118(m, n, __VA_ARGS__)
#define TJ__EACH_120(m, n, x, ...) m((n) - 120, x) TJ__EACH_119(m, n, __VA_ARGS__)
#define TJ__EACH_121(m, n, x, ...) m((n) - 121, x) TJ__EACH_120(m, n, __VA_ARGS__)
#define TJ__EACH_122(m, n, x, ...) m((n) - 122, x) TJ__EACH_121(m, n, __VA_ARGS__)
#define TJ__EACH_123(m, n, x, ...) m((n) - 123, x) TJ__EACH_122(m, n, __VA_ARGS__)
#define TJ__EACH_124(m, n, x, ...) m((n) - 124, x) TJ__EACH_123(m, n, __VA_ARGS__)
#define TJ__EACH_125(m, n, x, ...) m((n) - 125, x) TJ__EACH_124(m, n, __VA_ARGS__)
#define TJ__EACH_126(m, n, x, ...) m((n) - 126, x) TJ__EACH_125(m, n, __VA_ARGS__)
#define TJ__EACH_127(m, n, x, ...) m((n) - 127, x) TJ__EACH_126(m, n, __VA_ARGS__)
#define TJ__EACH_128(m, n, x, ...) m((n) - 128, x) TJ__EACH_127(m, n, __VA_ARGS__)

#endif /* TJIT_MACROS_H */
