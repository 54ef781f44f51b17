#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""
torch_llm.py -- the other side of bench/gpu_llm.c: torch.matmul (cuBLAS)
on the LLM shapes in bf16, Y = X W^T with W [N, K] row-major (F.linear's
layout), and torch._scaled_mm (cuBLASLt fp8) on e4m3 at 4096^3 and 8192^3
with unit scales and a bf16 result, the same layout.

Method, as gpu_llm.c's: inputs torch.randn in the dtype, WARMUP calls (at
least one on each set), then RUNS calls each between two CUDA events,
enqueued back to back, each on the next of two to eight sets of X, W and Y
(rotated buffers, together at least 256 MiB: bench/rotation.py; Y given as
out=); the figure is the median interval, TFLOP/s 2 M N K over it. One
JSON line each.

    usage: python3 bench/torch_llm.py [--runs N] [--warmup N] [--quick]
"""
import argparse
import json
import statistics

import torch

from rotation import rotated_sets, rotating

MS = (1, 16, 128, 1024, 4096, 16384)
NKS = ((4096, 4096), (11008, 4096), (4096, 11008), (12288, 4096), (28672, 8192), (8192, 28672))


def median_ms(fn, runs, warmup):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(runs)]
    for start, end in events:
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    return statistics.median(start.elapsed_time(end) for start, end in events)


def record(what, dtype, m, n, k, ms):
    print(json.dumps({"impl": "torch", "what": what, "dtype": dtype, "m": m, "n": n, "k": k, "ms": ms,
                      "tflops": 2.0 * m * n * k / (ms * 1e-3) / 1e12,
                      "device": torch.cuda.get_device_name()}), flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    print(json.dumps({"impl": "torch", "versions": {"torch": torch.__version__, "cuda": torch.version.cuda}}),
          flush=True)
    ms_list, nks = (MS[:2], NKS[:1]) if args.quick else (MS, NKS)
    for m in ms_list:
        for n, k in nks:
            def operands():
                return (torch.randn(m, k, device="cuda", dtype=torch.bfloat16),
                        torch.randn(n, k, device="cuda", dtype=torch.bfloat16),
                        torch.empty(m, n, device="cuda", dtype=torch.bfloat16))
            sets = [operands()]
            sets += [operands() for _ in range(rotated_sets(sum(t.nbytes for t in sets[0])) - 1)]
            record("llm", "bf16", m, n, k,
                   median_ms(rotating(sets, lambda x, w, y: torch.matmul(x, w.t(), out=y)), args.runs,
                             max(args.warmup, len(sets))))
            del sets
    one = torch.ones((), device="cuda", dtype=torch.float32)
    for size in (4096, 8192):
        def operands():
            return (torch.randn(size, size, device="cuda").to(torch.float8_e4m3fn),
                    torch.randn(size, size, device="cuda").to(torch.float8_e4m3fn),
                    torch.empty(size, size, device="cuda", dtype=torch.bfloat16))
        sets = [operands()]
        sets += [operands() for _ in range(rotated_sets(sum(t.nbytes for t in sets[0])) - 1)]

        def scaled_mm(x, w, y):
            return torch._scaled_mm(x, w.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16, out=y)
        try:
            scaled_mm(*sets[0])
        except (TypeError, RuntimeError) as e:  # a torch without _scaled_mm.out: Y as torch allocates it
            print(json.dumps({"impl": "torch", "note": "_scaled_mm without out=: %s" % e}), flush=True)

            def scaled_mm(x, w, y):
                return torch._scaled_mm(x, w.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
        record("llm", "fp8", size, size, size,
               median_ms(rotating(sets, scaled_mm), args.runs, max(args.warmup, len(sets))))
        del sets

if __name__ == "__main__":
    main()
