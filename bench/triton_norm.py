# SPDX-License-Identifier: MIT
"""triton_norm.py - the reference side of bench/gpu_norm: layer norm forward,
its backward dx kernel (dw/db partials summed per group of rows under a spin
lock) and seeded dropout, written in Triton after its tutorials 05 and 04,
the same algorithms as tjit's samples; and torch's F.layer_norm and
F.dropout. Same problems, bytes counted the same way, CUDA events, the median
of the runs. One JSON line per measurement ("impl": "triton" or "torch",
"what": "norm").

    usage: python3 bench/triton_norm.py [--runs N] [--warmup N] [--quick]
"""
import argparse
import json
import statistics
import sys

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

EPS = 1e-5
DROP_P = 0.25
SEED = 1234


@triton.jit
def ln_fwd(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    X += row * stride
    Y += row * stride
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        acc += tl.load(X + cols, mask=cols < N, other=0.0)
    mean = tl.sum(acc, axis=0) / N
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(X + cols, mask=cols < N, other=0.0)
        x = tl.where(cols < N, x - mean, 0.0)
        acc += x * x
    rstd = 1 / tl.sqrt(tl.sum(acc, axis=0) / N + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.0)
        tl.store(Y + cols, (x - mean) * rstd * w + b, mask=mask)


@triton.jit
def ln_bwd_dx(DX, DY, DW, DB, X, W, Mean, Rstd, Lock, stride, N,
              GROUP_M: tl.constexpr, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    X += row * stride
    DY += row * stride
    DX += row * stride
    group = row % GROUP_M
    Lock += group
    Count = Lock + GROUP_M
    DW = DW + group * N + cols
    DB = DB + group * N + cols
    x = tl.load(X + cols, mask=mask, other=0.0)
    dy = tl.load(DY + cols, mask=mask, other=0.0)
    w = tl.load(W + cols, mask=mask, other=0.0)
    mean = tl.load(Mean + row)
    rstd = tl.load(Rstd + row)
    x_hat = tl.where(mask, (x - mean) * rstd, 0.0)
    wdy = tl.where(mask, w * dy, 0.0)
    c1 = tl.sum(x_hat * wdy, axis=0) / N
    c2 = tl.sum(wdy, axis=0) / N
    tl.store(DX + cols, (wdy - (x_hat * c1 + c2)) * rstd, mask=mask)
    partial_dw = dy * x_hat
    partial_db = dy
    while tl.atomic_cas(Lock, 0, 1) == 1:
        pass
    count = tl.load(Count)
    if count == 0:
        tl.atomic_xchg(Count, 1)
    else:
        partial_dw += tl.load(DW, mask=mask)
        partial_db += tl.load(DB, mask=mask)
    tl.store(DW, partial_dw, mask=mask)
    tl.store(DB, partial_db, mask=mask)
    tl.debug_barrier()
    tl.atomic_xchg(Lock, 0)


@triton.jit
def dropout(X, OUT, n, p, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(X + offs, mask=mask)
    keep = tl.rand(seed, offs) > p
    tl.store(OUT + offs, tl.where(keep, x / (1 - p), 0.0), mask=mask)


def median_ms(fn, warmup, runs):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    events = []
    for _ in range(runs):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        events.append((start, end))
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in events)


def record(impl, op, m, n, ms, nbytes, correct, error=None):
    row = {"impl": impl, "what": "norm", "op": op, "m": m, "n": n}
    if error:
        row["error"] = error
    else:
        row.update(ms=round(ms, 5), gbps=round(nbytes / (ms * 1e-3) / 1e9, 1), correct=bool(correct))
    print(json.dumps(row), flush=True)


def next_pow2(n):
    return 1 << (n - 1).bit_length()


def warps_of(block):
    return min(max(block // 256, 1), 8)


def layer_norm(m, n, args):
    x = torch.rand(m, n, device="cuda") * 4 - 2
    w = torch.rand(n, device="cuda") + 0.5
    b = torch.rand(n, device="cuda") - 0.5
    dy = torch.rand(m, n, device="cuda") * 2 - 1
    y, dx = torch.empty_like(x), torch.empty_like(x)
    mean = torch.empty(m, device="cuda")
    rstd = torch.empty(m, device="cuda")
    group_m = 256 if n <= 1024 else 128 if n <= 4096 else 64
    pdw = torch.zeros(group_m, n, device="cuda")
    pdb = torch.zeros(group_m, n, device="cuda")
    locks = torch.zeros(2 * group_m, dtype=torch.int32, device="cuda")
    block = min(next_pow2(n), 4096)
    block_n = next_pow2(n)

    def fwd():
        ln_fwd[(m,)](x, y, w, b, mean, rstd, n, n, EPS, BLOCK=block, num_warps=warps_of(block))

    def bwd():
        ln_bwd_dx[(m,)](dx, dy, pdw, pdb, x, w, mean, rstd, locks, n, n,
                        GROUP_M=group_m, BLOCK_N=block_n, num_warps=warps_of(block_n))

    fwd()
    bwd()
    torch.cuda.synchronize()
    x64 = x.double().requires_grad_()
    want = F.layer_norm(x64, (n,), w.double(), b.double(), EPS)
    want.backward(dy.double())
    ok_fwd = torch.allclose(y.double(), want.detach(), atol=1e-4, rtol=1e-4)
    ok_bwd = torch.allclose(dx.double(), x64.grad, atol=1e-4, rtol=1e-4)
    record("triton", "layer_norm_fwd", m, n, median_ms(fwd, args.warmup, args.runs), 2.0 * m * n * 4, ok_fwd)
    record("triton", "layer_norm_bwd_dx", m, n, median_ms(bwd, args.warmup, args.runs), 3.0 * m * n * 4, ok_bwd)
    torch_ms = median_ms(lambda: F.layer_norm(x, (n,), w, b, EPS), args.warmup, args.runs)
    record("torch", "layer_norm_fwd", m, n, torch_ms, 2.0 * m * n * 4, True)


def dropout_problem(n, args):
    x = torch.rand(n, device="cuda") * 4 - 2
    out = torch.empty_like(x)
    block = 1024

    def run():
        dropout[(triton.cdiv(n, block),)](x, out, n, DROP_P, SEED, BLOCK=block)

    run()
    torch.cuda.synchronize()
    kept = out != 0
    ok = torch.allclose(out[kept], x[kept] / (1 - DROP_P)) and abs(kept.float().mean().item() - (1 - DROP_P)) < 0.01
    record("triton", "dropout", 1, n, median_ms(run, args.warmup, args.runs), 2.0 * n * 4, ok)
    torch_ms = median_ms(lambda: F.dropout(x, DROP_P, training=True), args.warmup, args.runs)
    record("torch", "dropout", 1, n, torch_ms, 2.0 * n * 4, True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    m = 256 if args.quick else 4096
    for n in (1024, 4096, 8192):
        try:
            layer_norm(m, n, args)
        except Exception as e:  # a failed problem is a record, not the end of the run
            record("triton", "layer_norm", m, n, 0, 0, False, error=str(e))
    top = 1 << (20 if args.quick else 26)
    for n in (top // 4, top):
        try:
            dropout_problem(n, args)
        except Exception as e:
            record("triton", "dropout", 1, n, 0, 0, False, error=str(e))


if __name__ == "__main__":
    sys.exit(main())
