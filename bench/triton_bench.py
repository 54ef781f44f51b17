#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""
triton_bench.py -- the GPU half of tjit's comparison: the kernels of
bench/gpu_bench.c written in Triton, timed the same way on the same GPU
(transpose twice: with tl.trans, and as transpose_ptrs, storing the loaded
tile through swapped pointers).

gpu_bench.c runs tjit's kernels; this script runs the same five algorithms
as idiomatic Triton kernels with the same sizes, tile sizes and warp counts,
plus PyTorch's own operators where one does the same job, and the device
copy bandwidth that every figure is reported against. bench/gpu_compare.sh
runs both programs in one go and joins their output.

Softmax and the box filter run in the same few configurations as in
gpu_bench.c (SOFTMAX_WARPS_TRIED and BOX_CONFIGS here, softmax_warps_tried
and box_configs there; the first of each is the reference row, the others
are named after their configuration), so that each side's best
configuration can be compared as well; "softmax_fast" is the same softmax
with exp2 and one reciprocal of the sum per row, "softmax_precise" the same
with libdevice's exp and IEEE division (tl.math.div_rn), the accuracy of
tjit's tj_exp and tj_div (tjit's "softmax" uses tj_fast_exp and
tj_fast_div: the math of tl.exp and `/`).

What is measured and how (the same definitions as gpu_bench.c):

  bandwidth     each kernel is launched WARMUP times, then RUNS times with a
                CUDA event recorded before and after each launch on the
                default stream, all enqueued back to back (the GPU stays busy,
                so host launch time stays out of the interval); the figure is
                the median interval. GB/s counts useful bytes, 1e9 bytes a
                GB: every element the algorithm must read once plus every
                element it writes once (vector and strided add 3*n*4, one
                read of x[i*s] and y[i*s] and one write of out[i] whatever
                the stride; transpose, softmax and the box filter 2*R*C*4;
                copy 2*n*4), never the sectors the hardware fetches.
  cold_compile  wall time of the first call of a kernel (then a device
                synchronize) minus the median wall time of ten warm calls
                (each with a synchronize), in a process whose compiler is
                already initialized by a tiny primer kernel, with an empty
                cache: TRITON_CACHE_DIR is a fresh temporary directory. The
                primer's own first call is reported as first_compile.
                The small problems: vector add on 4096 elements, softmax on
                one row of 4096.
  launch_cost   host wall time of N back-to-back calls of the vector add
                kernel on 4096 elements, without synchronizing, divided by
                N; the median of 5 batches.

Each kernel's output is checked once against PyTorch (exact where the
operation is exact, float64 with a tolerance otherwise) after the output was
poisoned with NaN. Output: one JSON line per measurement on stdout.

    usage: python3 bench/triton_bench.py [--runs N] [--warmup N] [--quick]
"""
import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

# An empty compile cache, set before Triton reads it.
_CACHE_DIR = tempfile.mkdtemp(prefix="triton-bench-cache-")
os.environ["TRITON_CACHE_DIR"] = _CACHE_DIR

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.language.extra import libdevice  # noqa: E402

# Tile sizes and warp counts: the same constants as bench/gpu_bench.c.
ADD_BLOCK, ADD_WARPS = 1024, 4
TRANSPOSE_TILE, TRANSPOSE_WARPS = 64, 4
SOFTMAX_WARPS_TRIED = (16, 8, 4)  # the first is the reference configuration
BOX_CONFIGS = ((16, 64, 4), (32, 64, 4), (32, 64, 8), (16, 128, 4), (32, 128, 8), (64, 64, 8))
SOFTMAX_WARPS = SOFTMAX_WARPS_TRIED[0]
LAUNCH_N, LAUNCH_CALLS, LAUNCH_BATCHES = 4096, 1000, 5


# --------------------------------------------------------------------------
# The kernels
# --------------------------------------------------------------------------

@triton.jit
def primer_kernel(out_ptr):
    tl.store(out_ptr, 1.0)


@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(x_ptr + offs, mask=mask)
    b = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, a + b, mask=mask)


@triton.jit
def strided_add_kernel(x_ptr, y_ptr, out_ptr, n, stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(x_ptr + offs * stride, mask=mask)
    b = tl.load(y_ptr + offs * stride, mask=mask)
    tl.store(out_ptr + offs, a + b, mask=mask)


@triton.jit
def transpose_kernel(src_ptr, dst_ptr, rows, cols, TILE_R: tl.constexpr, TILE_C: tl.constexpr):
    r = tl.program_id(0) * TILE_R + tl.arange(0, TILE_R)
    c = tl.program_id(1) * TILE_C + tl.arange(0, TILE_C)
    load_mask = (r[:, None] < rows) & (c[None, :] < cols)
    tile = tl.load(src_ptr + r[:, None] * cols + c[None, :], mask=load_mask)
    store_mask = (c[:, None] < cols) & (r[None, :] < rows)
    tl.store(dst_ptr + c[:, None] * rows + r[None, :], tl.trans(tile), mask=store_mask)


@triton.jit
def transpose_ptrs_kernel(src_ptr, dst_ptr, rows, cols,
                          TILE_R: tl.constexpr, TILE_C: tl.constexpr):
    r = (tl.program_id(0) * TILE_R + tl.arange(0, TILE_R))[:, None]
    c = (tl.program_id(1) * TILE_C + tl.arange(0, TILE_C))[None, :]
    mask = (r < rows) & (c < cols)
    tile = tl.load(src_ptr + r * cols + c, mask=mask)
    tl.store(dst_ptr + c * rows + r, tile, mask=mask)


@triton.jit
def softmax_kernel(src_ptr, dst_ptr, cols, row_stride, BLOCK: tl.constexpr):
    row_start = tl.program_id(0) * row_stride
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(src_ptr + row_start + offs, mask=mask, other=-float("inf"))
    num = tl.exp(x - tl.max(x, axis=0))
    tl.store(dst_ptr + row_start + offs, num / tl.sum(num, axis=0), mask=mask)


@triton.jit
def softmax_precise_kernel(src_ptr, dst_ptr, cols, row_stride, BLOCK: tl.constexpr):
    # accurate math, as tjit's tj_exp and tj_div: libdevice's expf, IEEE division
    row_start = tl.program_id(0) * row_stride
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(src_ptr + row_start + offs, mask=mask, other=-float("inf"))
    num = libdevice.exp(x - tl.max(x, axis=0))
    tl.store(dst_ptr + row_start + offs, tl.math.div_rn(num, tl.sum(num, axis=0)), mask=mask)


@triton.jit
def softmax_fast_kernel(src_ptr, dst_ptr, cols, row_stride, BLOCK: tl.constexpr):
    row_start = tl.program_id(0) * row_stride
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(src_ptr + row_start + offs, mask=mask, other=-float("inf"))
    num = tl.exp2((x - tl.max(x, axis=0)) * 1.4426950408889634)
    tl.store(dst_ptr + row_start + offs, num * (1.0 / tl.sum(num, axis=0)), mask=mask)


@triton.jit
def box_filter_kernel(src_ptr, dst_ptr, height, width,
                      BLOCK_H: tl.constexpr, BLOCK_W: tl.constexpr):
    r = (tl.program_id(0) * BLOCK_H + tl.arange(0, BLOCK_H))[:, None]
    c = (tl.program_id(1) * BLOCK_W + tl.arange(0, BLOCK_W))[None, :]
    acc = tl.zeros((BLOCK_H, BLOCK_W), dtype=tl.float32)
    for dr in tl.static_range(3):
        rr = r + (dr - 1)
        row_ok = (rr >= 0) & (rr < height)
        for dc in tl.static_range(3):
            cc = c + (dc - 1)
            inside = row_ok & (cc >= 0) & (cc < width)
            acc += tl.load(src_ptr + rr * width + cc, mask=inside, other=0.0)
    out_mask = (r < height) & (c < width)
    tl.store(dst_ptr + r * width + c, acc * (1.0 / 9.0), mask=out_mask)


# --------------------------------------------------------------------------
# Measuring
# --------------------------------------------------------------------------

RUNS, WARMUP = 100, 10
DEVICE_NAME = ""


def emit(record):
    record.setdefault("device", DEVICE_NAME)
    print(json.dumps(record), flush=True)


def median_event_ms(fn):
    """Median CUDA-event time of one call of fn, in ms (see the top comment)."""
    for _ in range(WARMUP):
        fn()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(RUNS)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(RUNS)]
    for start, end in zip(starts, ends):
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends))


def bandwidth(impl, kernel, shape, useful_bytes, fn, correct=None, **params):
    try:
        ms = median_event_ms(fn)
    except Exception as err:  # a failure is a row to report, not the end of the run
        emit({"impl": impl, "what": "bandwidth", "kernel": kernel, "error": repr(err)})
        return
    record = {"impl": impl, "what": "bandwidth", "kernel": kernel, "dtype": "f32",
              "shape": list(shape), "bytes": useful_bytes, "runs": RUNS, "ms": round(ms, 5),
              "gbps": round(useful_bytes / (ms * 1e-3) / 1e9, 2)}
    record.update(params)
    if correct is not None:
        record["correct"] = bool(correct)
    emit(record)


def wall_synced(fn):
    t0 = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    return time.perf_counter() - t0


def cold_compile(kernel, fn):
    """First call (compiles) minus a warm call, both with a synchronize."""
    first = wall_synced(fn)
    warm = statistics.median(wall_synced(fn) for _ in range(10))
    emit({"impl": "triton", "what": "cold_compile", "kernel": kernel,
          "first_ms": round(first * 1e3, 3), "warm_ms": round(warm * 1e3, 4),
          "ms": round((first - warm) * 1e3, 3)})


def check_and_report(ok, kernel, detail):
    if not ok:
        print(f"triton_bench: {kernel}: wrong result ({detail})", file=sys.stderr)
    return ok


def first_run(kernel, fn, output, check):
    """Poisons output with NaN, runs fn once (compiling it) and returns
    check()'s verdict; a failure to compile or run is a record with "error"
    and returns None, and the run goes on."""
    try:
        output.fill_(float("nan"))
        fn()
        return check()
    except Exception as err:  # e.g. a configuration that needs too many resources
        emit({"impl": "triton", "what": "bandwidth", "kernel": kernel, "error": repr(err)})
        print(f"triton_bench: {kernel}: {err!r}", file=sys.stderr)
        return None


def main():
    global RUNS, WARMUP, DEVICE_NAME
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--warmup", type=int, default=WARMUP)
    parser.add_argument("--quick", action="store_true", help="small sizes, a smoke test")
    args = parser.parse_args()
    RUNS, WARMUP = max(1, args.runs), max(1, args.warmup)
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False

    dev = torch.device("cuda")
    DEVICE_NAME = torch.cuda.get_device_name(dev)
    emit({"impl": "triton", "what": "versions", "triton": triton.__version__,
          "torch": torch.__version__, "cuda": torch.version.cuda})

    q = args.quick
    add_n = 1 << (20 if q else 28)
    strided_n = 1 << (17 if q else 25)
    tr_n = 1024 if q else 8192
    sm_rows, sm_cols = (256, 4096) if q else (8192, 4096)
    box_h = box_w = 1024 if q else 8192
    all_ok = True

    gen = torch.Generator(device=dev)
    gen.manual_seed(int.from_bytes(os.urandom(4), "little"))

    def uniform(count):
        return torch.rand(count, device=dev, generator=gen) * 2 - 1

    x, y = uniform(add_n), uniform(add_n)
    out = torch.empty(add_n, device=dev)

    # Compiler start-up (primer), then the cold compiles of vector add and
    # softmax, and the host cost of one launch.
    primer_out = torch.empty(1, device=dev)
    first = wall_synced(lambda: primer_kernel[(1,)](primer_out))
    emit({"impl": "triton", "what": "first_compile", "kernel": "primer",
          "ms": round(first * 1e3, 3)})

    small = uniform(LAUNCH_N), uniform(LAUNCH_N), torch.empty(LAUNCH_N, device=dev)
    small_grid = (triton.cdiv(LAUNCH_N, ADD_BLOCK),)

    def small_add():
        vector_add_kernel[small_grid](*small, LAUNCH_N, BLOCK=ADD_BLOCK, num_warps=ADD_WARPS)

    cold_compile("vector_add", small_add)
    sm_small_src = uniform(sm_cols).view(1, sm_cols)
    sm_small_dst = torch.empty_like(sm_small_src)
    sm_block = triton.next_power_of_2(sm_cols)
    cold_compile("softmax", lambda: softmax_kernel[(1,)](
        sm_small_src, sm_small_dst, sm_cols, sm_cols, BLOCK=sm_block, num_warps=SOFTMAX_WARPS))

    per_call = []
    for _ in range(LAUNCH_BATCHES):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(LAUNCH_CALLS):
            small_add()
        per_call.append((time.perf_counter() - t0) / LAUNCH_CALLS)
    torch.cuda.synchronize()
    emit({"impl": "triton", "what": "launch_cost", "how": "kernel[grid](...)",
          "calls": LAUNCH_CALLS, "us": round(statistics.median(per_call) * 1e6, 3)})

    # The physical limit: a device-to-device copy.
    copy_dst = torch.empty_like(x)
    bandwidth("torch", "copy", [add_n], 2 * add_n * 4, lambda: copy_dst.copy_(x))
    del copy_dst

    # vector add
    grid = (triton.cdiv(add_n, ADD_BLOCK),)

    def add():
        vector_add_kernel[grid](x, y, out, add_n, BLOCK=ADD_BLOCK, num_warps=ADD_WARPS)

    out.fill_(float("nan"))
    add()
    ok = check_and_report(torch.equal(out, x + y), "vector_add", "differs from x + y")
    all_ok &= ok
    bandwidth("triton", "vector_add", [add_n], 3 * add_n * 4, add, ok,
              block=ADD_BLOCK, num_warps=ADD_WARPS, config=f"BLOCK {ADD_BLOCK}, {ADD_WARPS} warps")
    bandwidth("torch", "vector_add", [add_n], 3 * add_n * 4,
              lambda: torch.add(x, y, out=out))

    # strided add: out[i] = x[i*s] + y[i*s], i < strided_n
    for s in (1, 2, 4, 8):
        grid = (triton.cdiv(strided_n, ADD_BLOCK),)

        def strided(s=s, grid=grid):
            strided_add_kernel[grid](x, y, out, strided_n, s, BLOCK=ADD_BLOCK,
                                     num_warps=ADD_WARPS)

        out.fill_(float("nan"))
        strided()
        want = x[::s][:strided_n] + y[::s][:strided_n]
        ok = check_and_report(torch.equal(out[:strided_n], want), f"strided_add s={s}",
                              "differs from x[::s] + y[::s]")
        all_ok &= ok
        name = f"strided_add_s{s}"
        bandwidth("triton", name, [strided_n], 3 * strided_n * 4, strided, ok,
                  stride=s, block=ADD_BLOCK, num_warps=ADD_WARPS,
                  config=f"BLOCK {ADD_BLOCK}, {ADD_WARPS} warps")
        xs, ys, os_ = x[::s][:strided_n], y[::s][:strided_n], out[:strided_n]
        bandwidth("torch", name, [strided_n], 3 * strided_n * 4,
                  lambda xs=xs, ys=ys, os_=os_: torch.add(xs, ys, out=os_), stride=s)
        del want

    # transpose
    src = x[: tr_n * tr_n].view(tr_n, tr_n)
    dst = out[: tr_n * tr_n].view(tr_n, tr_n)
    grid = (triton.cdiv(tr_n, TRANSPOSE_TILE), triton.cdiv(tr_n, TRANSPOSE_TILE))

    def transpose():
        transpose_kernel[grid](src, dst, tr_n, tr_n, TILE_R=TRANSPOSE_TILE,
                               TILE_C=TRANSPOSE_TILE, num_warps=TRANSPOSE_WARPS)

    dst.fill_(float("nan"))
    transpose()
    ok = check_and_report(torch.equal(dst, src.t()), "transpose", "differs from src.t()")
    all_ok &= ok
    nbytes = 2 * tr_n * tr_n * 4
    tr_config = f"{TRANSPOSE_TILE}x{TRANSPOSE_TILE} tiles, {TRANSPOSE_WARPS} warps"
    bandwidth("triton", "transpose", [tr_n, tr_n], nbytes, transpose, ok,
              tile=[TRANSPOSE_TILE, TRANSPOSE_TILE], num_warps=TRANSPOSE_WARPS, config=tr_config)
    bandwidth("torch", "transpose", [tr_n, tr_n], nbytes, lambda: dst.copy_(src.t()))

    def transpose_ptrs():
        transpose_ptrs_kernel[grid](src, dst, tr_n, tr_n, TILE_R=TRANSPOSE_TILE,
                                    TILE_C=TRANSPOSE_TILE, num_warps=TRANSPOSE_WARPS)

    dst.fill_(float("nan"))
    transpose_ptrs()
    ok = check_and_report(torch.equal(dst, src.t()), "transpose_ptrs", "differs from src.t()")
    all_ok &= ok
    bandwidth("triton", "transpose_ptrs", [tr_n, tr_n], nbytes, transpose_ptrs, ok,
              tile=[TRANSPOSE_TILE, TRANSPOSE_TILE], num_warps=TRANSPOSE_WARPS, config=tr_config)

    # row softmax, one program per row: each warp count tried, then
    # softmax_fast at the reference one
    src = x[: sm_rows * sm_cols].view(sm_rows, sm_cols)
    dst = out[: sm_rows * sm_cols].view(sm_rows, sm_cols)
    ref = torch.softmax(src.double(), dim=1)
    nbytes = 2 * sm_rows * sm_cols * 4
    variants = [("softmax" if i == 0 else f"softmax_w{w}", softmax_kernel, w, "")
                for i, w in enumerate(SOFTMAX_WARPS_TRIED)]
    variants.append(("softmax_fast", softmax_fast_kernel, SOFTMAX_WARPS, ", exp2 + 1/sum"))
    variants.append(("softmax_precise", softmax_precise_kernel, SOFTMAX_WARPS,
                     ", precise exp and div"))
    for name, kernel, warps, extra in variants:
        def softmax(kernel=kernel, warps=warps):
            kernel[(sm_rows,)](src, dst, sm_cols, sm_cols, BLOCK=sm_block, num_warps=warps)

        ok = first_run(name, softmax, dst, lambda: check_and_report(
            torch.allclose(dst.double(), ref, rtol=1e-4, atol=1e-7), name,
            f"max abs error {(dst.double() - ref).abs().max().item():.3g}"))
        all_ok &= bool(ok)
        if ok is not None:
            bandwidth("triton", name, [sm_rows, sm_cols], nbytes, softmax, ok,
                      block=sm_block, num_warps=warps,
                      config=f"BLOCK {sm_block}, {warps} warps{extra}")
    del ref
    bandwidth("torch", "softmax", [sm_rows, sm_cols], nbytes,
              lambda: torch.softmax(src, dim=1))

    # 3x3 box filter with zero padding, in each configuration tried
    src = x[: box_h * box_w].view(box_h, box_w)
    dst = out[: box_h * box_w].view(box_h, box_w)
    weight = torch.full((1, 1, 3, 3), 1.0 / 9.0, device=dev, dtype=torch.float64)
    ref = F.conv2d(src.double()[None, None], weight, padding=1)[0, 0]
    nbytes = 2 * box_h * box_w * 4
    for i, (bh, bw, warps) in enumerate(BOX_CONFIGS):
        name = "box_filter" if i == 0 else f"box_filter_{bh}x{bw}_w{warps}"
        grid = (triton.cdiv(box_h, bh), triton.cdiv(box_w, bw))

        def box(grid=grid, bh=bh, bw=bw, warps=warps):
            box_filter_kernel[grid](src, dst, box_h, box_w, BLOCK_H=bh, BLOCK_W=bw,
                                    num_warps=warps)

        ok = first_run(name, box, dst, lambda: check_and_report(
            torch.allclose(dst.double(), ref, rtol=1e-5, atol=1e-5), name,
            f"max abs error {(dst.double() - ref).abs().max().item():.3g}"))
        all_ok &= bool(ok)
        if ok is not None:
            bandwidth("triton", name, [box_h, box_w], nbytes, box, ok,
                      tile=[bh, bw], num_warps=warps, config=f"{bh}x{bw} tiles, {warps} warps")
    del ref
    img, weight32 = src[None, None], weight.float()
    bandwidth("torch", "box_filter", [box_h, box_w], nbytes,
              lambda: F.conv2d(img, weight32, padding=1), how="conv2d")

    return 0 if all_ok else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    finally:
        shutil.rmtree(_CACHE_DIR, ignore_errors=True)
