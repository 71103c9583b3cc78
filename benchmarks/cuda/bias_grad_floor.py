"""How far pyrt's bias gradient is from what one launch can do: the device time (calls
replayed from a CUDA graph) of pyrt's plane-sum kernel beside the variants of
bias_grad_floor.cu (no combine at all, float atomics, flagged partial sums, thread-block
clusters), an empty kernel, copies and PyTorch's sum, at the CNN's shapes at batch 256 and
conv1's at batch 4096. "hot": the array in L2 (replays back to back); "cold-extra": the time a
call adds after a 256 MiB fill has evicted it. Each variant's largest error against a float64
sum is printed beside it. Needs an NVIDIA GPU (the cluster variants sm_90).

    python benchmarks/cuda/bias_grad_floor.py
"""

import sys
from pathlib import Path

import cupy
import numpy as np

from pyrt.cuda import _module
from pyrt.cuda.ops.elementwise import bias_grad_planes

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_cuda

VARIANTS = ["v_flag256", "v_flag256u2", "v_flag512", "v_atomic256", "v_partial256",
            "v_cluster1024", "v_cluster512", "v_cluster256", "v_empty", "v_copy4"]
SHAPES = [("conv1", (256, 8, 28, 28)), ("conv2", (256, 16, 14, 14)),
          ("conv1 b4096", (4096, 8, 28, 28))]


def _kernels():
    common = (_module.KERNEL_DIR / "common.cuh").read_text().replace("#pragma once\n", "")
    source = (Path(__file__).resolve().parent / "bias_grad_floor.cu").read_text()
    module = cupy.RawModule(code=source.replace('#include "common.cuh"', common),
                            options=("-DPYRT_BLOCK=256",))
    return {name: module.get_function(name) for name in VARIANTS}


def cold_time(fn, flush, steps=50, repeats=7):
    """Median microseconds fn() adds on the device after a fill of `flush` (256 MiB, which
    evicts the array from L2): graphs of `steps` (fill, call) pairs and of fills alone."""
    def pairs():
        flush.fill(1.0)
        fn()

    return (bench_cuda._graph_timed(pairs, steps, repeats)
            - bench_cuda._graph_timed(lambda: flush.fill(1.0), steps, repeats)) * 1e6


def hot_time(fn):
    return bench_cuda._graph_timed(fn, 200, 7) * 1e6


def run(label, shape, kernels, sms, flush):
    n, k, h, w = shape
    g = cupy.asarray(np.random.default_rng(0).standard_normal(shape).astype(np.float32))
    dst = cupy.empty_like(g)
    ref = g.astype(cupy.float64).sum(axis=(0, 2, 3))
    out = cupy.zeros(k, cupy.float32)
    slots = cupy.zeros(4096 * 64, cupy.uint64)  # v_flag's, which it leaves zeroed
    scratch = cupy.zeros(4096 * 64, cupy.uint64)  # v_partial's
    inner = h * w
    n4 = n * inner // 4
    nt = g.size // 4

    def launch(name, block, slices):
        f = kernels[name]
        buf = scratch if name == "v_partial256" else slots
        return lambda: f((k, slices), (block,), (g, out, buf, n, k, inner))

    cases = {"empty": launch("v_empty", 256, 1),
             "cupy copyto": lambda: cupy.copyto(dst, g),
             "copy4 4/SM": lambda: kernels["v_copy4"]((min(4 * sms * 2, -(-nt // 256)),),
                                                      (256,), (g, dst, nt)),
             "copy4 full": lambda: kernels["v_copy4"]((-(-nt // 256),), (256,), (g, dst, nt)),
             "pyrt": lambda: bias_grad_planes(g)}
    for name, block, per in [("v_flag256", 256, 4), ("v_flag256u2", 256, 2),
                             ("v_flag512", 512, 4), ("v_partial256", 256, 4),
                             ("v_atomic256", 256, 4)]:
        for mult in (2, 4, 8):
            want = max(1, mult * sms // k)
            slices = max(1, min(want, -(-n4 // (block * per))))
            cases[f"{name} s={slices} ({mult}/SM)"] = launch(name, block, slices)
    for name in ("v_cluster1024", "v_cluster512", "v_cluster256"):
        cases[f"{name} s=8"] = launch(name, int(name[len("v_cluster"):]), 8)
    print(f"## {label} {shape} {g.nbytes / 1e6:.1f} MB", flush=True)
    cold_cases = ("cupy copyto", "pyrt", "copy4 full")
    for name, fn in cases.items():
        try:
            out.fill(0)
            fn()
            cupy.cuda.Device().synchronize()
            check = ""
            if name.startswith(("v_flag", "v_cluster", "v_atomic", "pyrt")):
                got = fn() if name == "pyrt" else out
                if name.startswith("v_atomic"):
                    out.fill(0)
                    fn()
                    got = out
                check = f"err {float(cupy.abs(got - ref).max()):.2e}"
            hot = hot_time(fn)
            cold = float("nan")
            if name in cold_cases or name.startswith(("v_flag256 ", "v_cluster")):
                cold = cold_time(fn, flush)
            print(f"{name:32s} hot {hot:7.2f} us  cold-extra {cold:7.2f} us  {check}",
                  flush=True)
        except Exception as exc:  # noqa: BLE001 (a variant the device refuses is reported)
            print(f"{name:32s} FAILED {type(exc).__name__}: {exc}", flush=True)
    try:
        import torch

        tg = torch.as_tensor(g, device="cuda")
        t = bench_cuda._torch_graph_timed(lambda: tg.sum((0, 2, 3)), 200, 7) * 1e6
        print(f"{'torch sum((0,2,3))':32s} hot {t:7.2f} us", flush=True)
    except Exception as exc:  # noqa: BLE001 (the other figures stand)
        print("torch failed", type(exc).__name__, exc)


def main():
    kernels = _kernels()
    sms = cupy.cuda.Device().attributes["MultiProcessorCount"]
    flush = cupy.empty(256 * 2 ** 20 // 4, cupy.float32)
    for label, shape in SHAPES:
        run(label, shape, kernels, sms, flush)


if __name__ == "__main__":
    main()
