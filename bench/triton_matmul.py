#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""
triton_matmul.py -- the other side of tjit's GPU matmul benchmark
(bench/gpu_matmul.c): torch.matmul (cuBLAS) and a Triton matmul in the
style of Triton's tutorial 03, on the same problems, timed the same way.

The Triton kernel is written here from the tutorial's idea: a 1-D grid of
BLOCK_M x BLOCK_N tiles grouped by GROUP_M = 8 rows for L2 reuse, a loop
over K in BLOCK_K steps with masked tail loads, tl.dot accumulating in
fp32, C in the inputs' dtype. It runs in the same configurations as
gpu_matmul.c (HALF_CONFIGS, TF32_CONFIGS: BM, BN, BK, warps, stages), each
a record. Problems: f16 and bf16 at 4096^3 and 8192^3, fp32 with TF32
input precision at 8192^3, each NN and NT (B stored N x K and passed as
its transposed view, so the kernel reads it through strides).

Triton 3.6 lowers tl.dot on sm_90 to wgmma (its "MMA v3"); with the
environment variable DISABLE_MMA_V3=1, set before Triton is imported (so
bench/gpu_matmul.sh runs this script a second time in its own process),
it falls back to mma.sync, the instructions tjit's GPU back end emits.
That run is labelled impl "triton_mma_v2" and skips torch.

Method (the same as gpu_matmul.c): inputs torch.randn in the dtype, C
poisoned with NaN, each result checked once against torch.matmul of the
same inputs in fp32 (allclose with a K-scaled tolerance); WARMUP calls,
then RUNS calls each between two CUDA events on the current stream,
enqueued back to back, each on the next of two to eight copies of A, B
and C (rotated buffers, together at least 256 MiB: bench/rotation.py, the
rule of gpu_timing.h); the figure is the median interval, TFLOP/s 2 M N K over
it. Output: one JSON line per measurement.

    usage: python3 bench/triton_matmul.py [--runs N] [--warmup N] [--quick | --profile DTYPE] [--only DTYPE]

--only DTYPE runs the problems of that dtype alone. --profile DTYPE runs DTYPE (f16, bf16 or tf32) at
4096^3 only, NN then NT, each configuration launched
twice (the check, one run), as gpu_matmul --profile does, for Nsight
Compute (scripts/gpu-ncu.sh matmul).
"""
import argparse
import json
import os
import statistics
import sys

import torch
import triton
import triton.language as tl

from rotation import rotated_sets, rotating

MMA_V2 = os.environ.get("DISABLE_MMA_V3") == "1"
IMPL = "triton_mma_v2" if MMA_V2 else "triton"
GROUP_M = 8
# (BM, BN, BK, warps, stages): the same lists as bench/gpu_matmul.c.
HALF_CONFIGS = ((128, 128, 32, 4, 1), (128, 128, 32, 4, 4), (128, 128, 64, 4, 4),
                (64, 256, 32, 4, 4), (128, 256, 32, 8, 3), (128, 256, 64, 8, 3),
                (128, 128, 64, 4, 2), (128, 128, 64, 8, 3))
TF32_CONFIGS = ((128, 128, 32, 4, 1), (128, 128, 32, 4, 3), (128, 128, 16, 4, 4),
                (64, 256, 32, 4, 4), (128, 256, 32, 8, 3), (128, 128, 32, 8, 3),
                (128, 128, 16, 4, 3), (128, 64, 32, 4, 4))
PROBLEMS = (("f16", 4096), ("f16", 8192), ("bf16", 4096), ("bf16", 8192), ("tf32", 8192))
QUICK_PROBLEMS = (("f16", 512), ("bf16", 1024), ("tf32", 512))
DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16, "tf32": torch.float32}


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  GROUP: tl.constexpr, TF32: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    in_group = GROUP * num_pid_n
    first_pid_m = (pid // in_group) * GROUP
    group_size_m = min(num_pid_m - first_pid_m, GROUP)
    pid_m = first_pid_m + ((pid % in_group) % group_size_m)
    pid_n = (pid % in_group) // group_size_m

    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
        if TF32:
            acc = tl.dot(a, b, acc, input_precision="tf32")
        else:
            acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn
    mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=mask)


def triton_matmul(a, b, c, config, tf32):
    bm, bn, bk, warps, stages = config
    m, k = a.shape
    n = b.shape[1]
    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
    matmul_kernel[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        c.stride(0), c.stride(1), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                        GROUP=GROUP_M, TF32=tf32, num_warps=warps, num_stages=stages)


def median_event_ms(fn, runs, warmup):
    for _ in range(warmup):
        fn()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
    for start, end in zip(starts, ends):
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--profile", choices=("f16", "bf16", "tf32"))
    parser.add_argument("--only", choices=("f16", "bf16", "tf32"))
    parser.add_argument("--device", default="gpu")  # accepted for gpu_matmul's options
    args = parser.parse_args()
    device_name = torch.cuda.get_device_name(0)

    def emit(record):
        record["device"] = device_name
        print(json.dumps(record), flush=True)

    emit({"impl": IMPL, "what": "versions", "torch": torch.__version__,
          "triton": triton.__version__, "cuda": torch.version.cuda})
    failed = False
    if args.profile:
        args.runs, args.warmup = 1, 0
    problems = ((args.profile, 4096),) if args.profile else QUICK_PROBLEMS if args.quick else PROBLEMS
    if args.only and not args.profile:
        problems = tuple(p for p in problems if p[0] == args.only)
    for dtype_name, n in problems:
        dtype = DTYPES[dtype_name]
        tf32 = dtype_name == "tf32"
        torch.manual_seed(n)
        a = torch.randn(n, n, device="cuda", dtype=dtype)
        b_nn = torch.randn(n, n, device="cuda", dtype=dtype)
        b_nt = torch.randn(n, n, device="cuda", dtype=dtype).t()  # stored N x K
        c = torch.empty(n, n, device="cuda", dtype=dtype)
        copies = [(a, b_nn, b_nt, c)] + [(a.clone(), b_nn.clone(), b_nt.t().clone().t(), torch.empty_like(c))
                                         for _ in range(rotated_sets(3 * a.nbytes) - 1)]
        flops = 2.0 * n ** 3
        configs = TF32_CONFIGS if tf32 else HALF_CONFIGS
        if args.quick:
            configs = configs[:1]
        for layout, b, which in (("NN", b_nn, 1), ("NT", b_nt, 2)):
            sets = [(s[0], s[which], s[3]) for s in copies]
            torch.backends.cuda.matmul.allow_tf32 = False  # the reference in IEEE f32
            want = torch.matmul(a.float(), b.float())
            torch.backends.cuda.matmul.allow_tf32 = True  # torch's f32 matmul as TF32: the same work
            # f32 accumulation in any order (K-scaled) and TF32's input
            # truncation (two inputs), relative to sum |a b| ~ n E|a b| = n 2/pi;
            # C's rounding
            tol = (2 * n * 2.0 ** -23 + (2.0 ** -9 if tf32 else 0)) * n * 0.64
            rtol = {"f16": 2.0 ** -10, "bf16": 2.0 ** -7, "tf32": 2.0 ** -20}[dtype_name]
            base = {"dtype": dtype_name, "size": n, "layout": layout}
            if not MMA_V2 and not args.profile:
                ms = median_event_ms(rotating(sets, lambda x, y, z: torch.matmul(x, y, out=z)),
                                     args.runs, args.warmup)
                emit({"impl": "torch", "what": "matmul", **base, "config": "cuBLAS",
                      "runs": args.runs, "ms": ms, "tflops": flops / (ms * 1e-3) / 1e12,
                      "correct": bool(torch.allclose(c.float(), want, rtol=rtol, atol=tol)),
                      "timer": "cuda_events"})
            for config in configs:
                record = {"impl": IMPL, "what": "matmul", **base,
                          "config": "%dx%dx%d, %d warps, %d stages" % config}
                try:
                    c.fill_(float("nan"))
                    triton_matmul(a, b, c, config, tf32)
                    torch.cuda.synchronize()
                    correct = bool(torch.allclose(c.float(), want, rtol=rtol, atol=tol))
                    ms = median_event_ms(rotating(sets, lambda x, y, z: triton_matmul(x, y, z, config, tf32)),
                                         args.runs, args.warmup)
                    record.update(runs=args.runs, ms=ms, tflops=flops / (ms * 1e-3) / 1e12,
                                  correct=correct, timer="cuda_events")
                    failed |= not correct
                except Exception as err:  # a config that does not compile (shared memory)
                    record["error"] = f"{type(err).__name__}: {str(err)[:300]}"
                    failed = True
                emit(record)
        del a, b_nn, b_nt, c, copies, sets
        torch.cuda.empty_cache()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
