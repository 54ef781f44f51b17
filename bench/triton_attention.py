#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""
triton_attention.py -- the other side of tjit's fused-attention benchmark
(bench/gpu_attention.c): a Triton kernel of tutorial 06's algorithm and
torch's scaled_dot_product_attention (its FlashAttention backend), on the
same problems, timed the same way.

The Triton kernel is written here from the tutorial's idea, the same
algorithm as samples/attention_kernel.h: a program per BLOCK_M query rows
of one (batch, head), Q resident, K and V walked in BLOCK_N blocks with the
online softmax in base 2 (log2(e) folded into the scale), P cast to the
input dtype for the second dot; causal attention in two stages (the
blocks left of the diagonal unmasked, then the diagonal block masked).
It runs in the configurations of gpu_attention.c (CONFIGS: BM, BN, warps,
stages), each a record. Problems: Z = 4, H = 32 (the tutorial's), N_CTX
4096 and 16384, head dim 64 and 128, f16, causal and not.

Method (the same as gpu_attention.c): Q, K, V torch.randn in the dtype, O
poisoned with NaN, each result checked once against torch's attention in
fp32 on the first (batch, head) pair (atol 1e-2); WARMUP calls (at least
one on each set), then RUNS calls each between two CUDA events, enqueued
back to back, each on the next of two to eight copies of Q, K, V and O
(rotated buffers, together at least 256 MiB: bench/rotation.py; SDPA
makes its own O); the figure is the median interval, TFLOP/s
4 Z H N_CTX^2 D over it (half when causal).
Output: one JSON line per measurement.

    usage: python3 bench/triton_attention.py [--runs N] [--warmup N] [--quick]
"""
import argparse
import json
import math
import statistics
import sys

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from rotation import rotated_sets, rotating

Z, H = 4, 32
# (BM, BN, warps, stages): the same list as bench/gpu_attention.c.
CONFIGS = ((128, 64, 4, 3), (128, 64, 8, 3), (128, 128, 8, 3), (64, 64, 4, 3))
PROBLEMS = tuple((n, d, causal) for n in (4096, 16384) for d in (64, 128) for causal in (False, True))
QUICK_PROBLEMS = ((1024, 64, False), (1024, 128, True))
PROFILE_PROBLEMS = ((4096, 64, True),)  # --profile: for scripts/gpu-ncu.sh attention


@triton.jit
def _keys(acc, m_i, l_i, q, k_head, v_head, stride_m, offs_m, lo, hi, qk_scale,
          BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr, MASKED: tl.constexpr):
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    for start_n in range(lo, hi, BLOCK_N):
        keys = start_n + offs_n
        kt = tl.load(k_head + offs_d[:, None] + keys[None, :] * stride_m)
        s = tl.dot(q, kt)
        if MASKED:
            keep = offs_m[:, None] >= keys[None, :]
            scaled = tl.where(keep, s * qk_scale, float("-inf"))
            m_new = tl.maximum(m_i, tl.max(scaled, 1))
            shifted = scaled - m_new[:, None]
        else:
            m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale)
            shifted = s * qk_scale - m_new[:, None]
        p = tl.math.exp2(shifted)
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_head + keys[:, None] * stride_m + offs_d[None, :])
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
        m_i = m_new
    return acc, m_i, l_i


@triton.jit
def attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, sm_scale, H, N_CTX, stride_z, stride_h, stride_m,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr,
                     CAUSAL: tl.constexpr):
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    head = (off_hz // H) * stride_z + (off_hz % H) * stride_h
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    rows = offs_m[:, None] * stride_m + offs_d[None, :]
    q = tl.load(q_ptr + head + rows)
    qk_scale = sm_scale * 1.4426950408889634
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    m_i = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    k_head = k_ptr + head
    v_head = v_ptr + head
    if CAUSAL:
        diag = start_m * BLOCK_M
        acc, m_i, l_i = _keys(acc, m_i, l_i, q, k_head, v_head, stride_m, offs_m, 0, diag, qk_scale,
                              BLOCK_N, HEAD_DIM, False)
        acc, m_i, l_i = _keys(acc, m_i, l_i, q, k_head, v_head, stride_m, offs_m, diag,
                              diag + BLOCK_M, qk_scale, BLOCK_N, HEAD_DIM, True)
    else:
        acc, m_i, l_i = _keys(acc, m_i, l_i, q, k_head, v_head, stride_m, offs_m, 0, N_CTX, qk_scale,
                              BLOCK_N, HEAD_DIM, False)
    tl.store(o_ptr + head + rows, (acc / l_i[:, None]).to(o_ptr.dtype.element_ty))


def triton_attention(q, k, v, o, causal, config):
    bm, bn, warps, stages = config
    z, h, n, d = q.shape
    grid = (triton.cdiv(n, bm), z * h)
    attention_kernel[grid](q, k, v, o, 1.0 / math.sqrt(d), h, n, q.stride(0), q.stride(1),
                           q.stride(2), BLOCK_M=bm, BLOCK_N=bn, HEAD_DIM=d, CAUSAL=causal,
                           num_warps=warps, num_stages=stages)


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
    parser.add_argument("--profile", action="store_true", help="N_CTX 4096, d 64, causal; one run per config")
    args = parser.parse_args()
    if args.profile:
        args.runs, args.warmup = 1, 0
    device_name = torch.cuda.get_device_name(0)

    def emit(record):
        record["device"] = device_name
        print(json.dumps(record), flush=True)

    emit({"impl": "triton", "what": "versions", "torch": torch.__version__,
          "triton": triton.__version__, "cuda": torch.version.cuda})
    failed = False
    for n, d, causal in QUICK_PROBLEMS if args.quick else PROFILE_PROBLEMS if args.profile else PROBLEMS:
        torch.manual_seed(n + d)
        q, k, v = (torch.randn(Z, H, n, d, device="cuda", dtype=torch.float16) for _ in range(3))
        o = torch.empty_like(q)
        copies = 0 if args.profile else rotated_sets(4 * q.nbytes) - 1  # --profile: one set (ncu counts the calls)
        sets = [(q, k, v, o)] + [(q.clone(), k.clone(), v.clone(), torch.empty_like(o)) for _ in range(copies)]
        warmup = args.warmup if args.profile else max(args.warmup, len(sets))
        want = F.scaled_dot_product_attention(q[:1, :1].float(), k[:1, :1].float(),
                                              v[:1, :1].float(), is_causal=causal)
        flops = 4.0 * Z * H * n * n * d * (0.5 if causal else 1.0)
        base = {"what": "attention", "dtype": "f16", "n_ctx": n, "head_dim": d,
                "causal": causal, "z": Z, "h": H}
        got = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        ms = median_event_ms(rotating(sets, lambda q, k, v, o: F.scaled_dot_product_attention(q, k, v,
                                                                                             is_causal=causal)),
                             args.runs, warmup)
        emit({"impl": "torch", **base, "config": "sdpa", "runs": args.runs, "ms": ms,
              "tflops": flops / (ms * 1e-3) / 1e12, "timer": "cuda_events",
              "correct": bool(torch.allclose(got[:1, :1].float(), want, atol=1e-2, rtol=0))})
        for config in CONFIGS:
            record = {"impl": "triton", **base, "config": "%dx%d, %d warps, %d stages" % config}
            try:
                o.fill_(float("nan"))
                triton_attention(q, k, v, o, causal, config)
                torch.cuda.synchronize()
                correct = bool(torch.allclose(o[:1, :1].float(), want, atol=1e-2, rtol=0))
                ms = median_event_ms(rotating(sets, lambda q, k, v, o: triton_attention(q, k, v, o, causal, config)),
                                     args.runs, warmup)
                record.update(runs=args.runs, ms=ms, tflops=flops / (ms * 1e-3) / 1e12,
                              correct=correct, timer="cuda_events")
                failed |= not correct
            except Exception as err:  # a config that does not compile (shared memory)
                record["error"] = f"{type(err).__name__}: {str(err)[:300]}"
                failed = True
            emit(record)
        del q, k, v, o, sets
        torch.cuda.empty_cache()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
