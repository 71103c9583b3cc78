"""pyrt's CUDA backend beside PyTorch CUDA eager on the same models, in one run:

- XOR 2-3-1 step time, MNIST-shaped MLP (784-128-10) and CNN step time and epoch time
  (60000 images, batch 64, random data of MNIST's shape: the timing does not depend on the
  values), pyrt eager and with CUDA-graph capture;
- the bias-gradient reduction at the CNN's shapes at batch 256 (and, to separate bandwidth
  from launch latency, conv1's at batch 4096) against the device-to-device copy bandwidth of
  the same bytes (cupy copy) and against PyTorch's sum over the same axes, with an empty
  kernel's time as the floor under any launch.

Device times come from CUDA events; each figure is the median of several repeats. Results go
to benchmarks/results/cuda.{json,md}, naming the device.

    python benchmarks/cuda/bench_cuda.py [--repeats 5] [--steps 200]

Exits with a message when no GPU (or no CuPy / PyTorch CUDA) is present.
"""

import argparse
import json
import statistics
import sys
from pathlib import Path

import numpy as np

import pyrt
from pyrt import cuda, nn, optim
from pyrt.cli.models import cnn, mlp, train_step, xor_net

RESULTS = Path(__file__).resolve().parents[1] / "results"


def _require():
    if not cuda.is_available():
        sys.exit(f"bench_cuda: no GPU to measure on: {cuda._probe()[1]}")
    try:
        import torch
    except ImportError:
        sys.exit("bench_cuda: PyTorch is needed as the baseline (pip install torch)")
    if not torch.cuda.is_available():
        sys.exit("bench_cuda: PyTorch was built without CUDA or sees no GPU")
    cuda.require()


def _timed(fn, steps, repeats):
    """Median seconds per call of fn() over `repeats` runs of `steps` calls, by CUDA events
    on the current stream."""
    import cupy

    fn()
    cupy.cuda.Device().synchronize()
    times = []
    for _ in range(repeats):
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        for _ in range(steps):
            fn()
        stop.record()
        stop.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, stop) / 1e3 / steps)
    return statistics.median(times)


def _graph_timed(fn, steps, repeats):
    """Median seconds per call of fn() on the device alone: `steps` calls captured into one
    CUDA graph, whose replays are timed by CUDA events, so that the host's launch overhead
    (several microseconds a call, more than a small kernel takes) is left out."""
    import cupy

    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        fn()  # compiles the kernels and makes the workspaces before the capture
        stream.synchronize()
        stream.begin_capture()
        try:
            for _ in range(steps):
                fn()
        finally:
            graph = stream.end_capture()
        graph.launch(stream=stream)
        stream.synchronize()
        times = []
        for _ in range(repeats):
            start, stop = cupy.cuda.Event(), cupy.cuda.Event()
            start.record(stream)
            graph.launch(stream=stream)
            stop.record(stream)
            stop.synchronize()
            times.append(cupy.cuda.get_elapsed_time(start, stop) / 1e3 / steps)
    return statistics.median(times)


def _torch_graph_timed(fn, steps, repeats):
    """_graph_timed for a PyTorch call: `steps` calls captured into one torch.cuda.CUDAGraph,
    its replays timed by CUDA events."""
    import torch

    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        fn()
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            for _ in range(steps):
                fn()
        graph.replay()
        torch.cuda.synchronize()
        times = []
        for _ in range(repeats):
            start = torch.cuda.Event(enable_timing=True)
            stop = torch.cuda.Event(enable_timing=True)
            start.record()
            graph.replay()
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop) / 1e3 / steps)
    return statistics.median(times)


def _batch(shape, classes, n, seed=0):
    r = np.random.default_rng(seed)
    x = r.standard_normal((n,) + shape).astype(np.float32)
    y = r.integers(0, classes, n) if classes else (r.random((n, 1)) > 0.5).astype(np.float32)
    return x, y


def pyrt_step(build, x, y, criterion, graph, lr=0.01):
    pyrt.manual_seed(0)
    model = build().to("cuda")
    opt = optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    xt, yt = pyrt.tensor(x), pyrt.tensor(y)
    if graph:
        from pyrt.cuda.graph import CapturedStep

        step = CapturedStep(model, criterion, opt)
        for _ in range(3):
            step(xt, yt)
        # replays alone: the batch is already in the static buffers
        return lambda: step.graph.launch(stream=step.stream), step.stream
    xd, yd = xt.to("cuda"), yt.to("cuda")
    return lambda: train_step(model, criterion, opt, xd, yd, "cuda"), None


def torch_step(which, x, y, lr=0.01):
    import torch

    torch.manual_seed(0)
    if which == "xor":
        model = torch.nn.Sequential(torch.nn.Linear(2, 3, bias=False), torch.nn.ReLU(),
                                    torch.nn.Linear(3, 1, bias=False))
        crit = torch.nn.BCEWithLogitsLoss()
    elif which == "mlp":
        model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 128),
                                    torch.nn.ReLU(), torch.nn.Linear(128, 10))
        crit = torch.nn.CrossEntropyLoss()
    else:
        model = torch.nn.Sequential(
            torch.nn.Conv2d(1, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(8, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Flatten(), torch.nn.Linear(16 * 7 * 7, 10))
        crit = torch.nn.CrossEntropyLoss()
    model = model.cuda()
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    xd, yd = torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()

    def step():
        loss = crit(model(xd), yd)
        opt.zero_grad()
        loss.backward()
        opt.step()

    return step


def bench_models(steps, repeats):
    import cupy

    rows = []
    cases = [("xor", xor_net, (2,), 0, 32, nn.BCEWithLogitsLoss()),
             ("mlp", mlp, (1, 28, 28), 10, 64, nn.CrossEntropyLoss()),
             ("cnn", cnn, (1, 28, 28), 10, 64, nn.CrossEntropyLoss())]
    for name, build, shape, classes, batch, crit in cases:
        x, y = _batch(shape, classes, batch)
        t_torch = _timed(torch_step(name, x, y), steps, repeats)
        row = {"model": name, "batch": batch, "torch_eager_us": t_torch * 1e6}
        for graph in (False, True):
            key = "pyrt_graph" if graph else "pyrt_eager"
            try:
                fn, stream = pyrt_step(build, x, y, crit, graph)
                with (stream if stream is not None else cupy.cuda.Stream.null):
                    t = _timed(fn, steps, repeats)
            except Exception as exc:  # noqa: BLE001 (one failed variant keeps the others)
                row[f"{key}_error"] = f"{type(exc).__name__}: {exc}"
                print(f"bench_cuda: {name} {key} failed: {row[f'{key}_error']}",
                      file=sys.stderr)
                continue
            row[f"{key}_us"] = t * 1e6
            row[f"{key}_vs_torch"] = t / t_torch
            if name != "xor":
                row[f"epoch_s_{key}"] = t * 60000 / batch
        if name != "xor":
            row["epoch_s_torch"] = t_torch * 60000 / batch
        rows.append(row)
    return rows


def bench_bias_grad(steps, repeats):
    """Read bandwidth of ops.bias_grad beside the copy bandwidth of the same array."""
    import cupy

    from pyrt import ops

    rows = []
    shapes = [("conv1 NCHW [256, 8, 28, 28]", (256, 8, 28, 28), "planes"),
              ("conv2 NCHW [256, 16, 14, 14]", (256, 16, 14, 14), "planes"),
              ("conv1 NHWC [256*28*28, 8]", (256 * 28 * 28, 8), "rows"),
              ("conv2 NHWC [256*14*14, 16]", (256 * 14 * 14, 16), "rows"),
              ("linear [256, 128]", (256, 128), "rows"),
              ("linear [256, 10]", (256, 10), "rows"),
              # the same layers at batch 4096: bandwidth rather than launch latency
              ("conv1 NCHW [4096, 8, 28, 28]", (4096, 8, 28, 28), "planes"),
              ("conv1 NHWC [4096*28*28, 8]", (4096 * 28 * 28, 8), "rows")]
    from pyrt.cuda.ops.elementwise import bias_grad_planes

    for label, shape, layout in shapes:
        g = cupy.asarray(np.random.default_rng(0).standard_normal(shape).astype(np.float32))
        dst = cupy.empty_like(g)
        reduce = bias_grad_planes if layout == "planes" else ops.bias_grad
        t_reduce = _timed(lambda g=g, reduce=reduce: reduce(g), steps, repeats)
        t_copy = _timed(lambda g=g, dst=dst: cupy.copyto(dst, g), steps, repeats)
        read_gbs = g.nbytes / t_reduce / 1e9
        copy_gbs = 2 * g.nbytes / t_copy / 1e9  # a copy reads and writes every byte
        row = {"shape": label, "bytes": g.nbytes, "bias_grad_us": t_reduce * 1e6,
               "copy_us": t_copy * 1e6, "bias_grad_GBs": read_gbs, "copy_GBs": copy_gbs,
               "fraction_of_copy": read_gbs / copy_gbs}
        # the same on the device alone: a few microseconds of kernel each, which the launches
        # above hide
        try:
            d_reduce = _graph_timed(lambda g=g, reduce=reduce: reduce(g), steps, repeats)
            d_copy = _graph_timed(lambda g=g, dst=dst: cupy.copyto(dst, g), steps, repeats)
            row.update({"device_bias_grad_us": d_reduce * 1e6, "device_copy_us": d_copy * 1e6,
                        "device_bias_grad_GBs": g.nbytes / d_reduce / 1e9,
                        "device_copy_GBs": 2 * g.nbytes / d_copy / 1e9,
                        "device_fraction_of_copy": (g.nbytes / d_reduce) / (2 * g.nbytes / d_copy)})
        except Exception as exc:  # noqa: BLE001 (the launch-bound figures still stand)
            row["device_error"] = f"{type(exc).__name__}: {exc}"
            print(f"bench_cuda: {label}: device-time measurement failed: {row['device_error']}",
                  file=sys.stderr)
        # PyTorch's reduction of the same array over the same axes, on the device alone
        try:
            import torch

            tg = torch.as_tensor(g, device="cuda")
            axes = (0, 2, 3) if layout == "planes" else tuple(range(g.ndim - 1))
            row["torch_device_us"] = _torch_graph_timed(lambda tg=tg, axes=axes: tg.sum(axes),
                                                        steps, repeats) * 1e6
        except Exception as exc:  # noqa: BLE001 (pyrt's figures still stand)
            row["torch_error"] = f"{type(exc).__name__}: {exc}"
            print(f"bench_cuda: {label}: torch's reduction failed: {row['torch_error']}",
                  file=sys.stderr)
        rows.append(row)
    return rows


def bench_empty_kernel(steps, repeats):
    """Device time of an empty kernel in a CUDA graph: the floor under any one launch."""
    import cupy

    empty = cupy.RawKernel('extern "C" __global__ void pyrt_bench_empty() {}',
                           "pyrt_bench_empty")
    return _graph_timed(lambda: empty((1,), (32,), ()), steps, repeats) * 1e6


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--steps", type=int, default=200)
    args = p.parse_args()
    _require()
    import cupy
    import torch

    device = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    result = {"device": device, "cupy": cupy.__version__, "torch": torch.__version__,
              "repeats": args.repeats, "steps": args.steps,
              "models": bench_models(args.steps, args.repeats), "bias_grad": []}
    try:
        result["empty_kernel_device_us"] = bench_empty_kernel(args.steps, args.repeats)
        result["bias_grad"] = bench_bias_grad(args.steps, args.repeats)
    except Exception as exc:  # noqa: BLE001 (the model figures are still written)
        result["bias_grad_error"] = f"{type(exc).__name__}: {exc}"
        print(f"bench_cuda: the bias-gradient benchmark failed: {result['bias_grad_error']}",
              file=sys.stderr)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "cuda.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [f"# CUDA backend on {device}", "",
             (f"CuPy {cupy.__version__}, PyTorch {torch.__version__}; medians of "
              f"{args.repeats} runs of {args.steps} steps (CUDA events)."), "",
             "| model | batch | torch eager us/step | pyrt eager | ratio | pyrt graph | ratio |",
             "|---|---|---|---|---|---|---|"]

    def cells(r, key):
        if f"{key}_us" not in r:
            return "failed | -"
        return f"{r[f'{key}_us']:.1f} | {r[f'{key}_vs_torch']:.2f}"

    for r in result["models"]:
        lines.append(f"| {r['model']} | {r['batch']} | {r['torch_eager_us']:.1f} | "
                     f"{cells(r, 'pyrt_eager')} | {cells(r, 'pyrt_graph')} |")
    floor = result.get("empty_kernel_device_us")
    lines += ["", ("Bias gradient against a copy of the same array (read and written: twice "
                   "its bytes): calls timed back to back (launches included), and on the "
                   "device alone (the calls replayed from a CUDA graph), with PyTorch's sum "
                   "over the same axes timed the same way."
                   + (f" An empty kernel takes {floor:.2f} us there." if floor else "")), "",
              ("| bias gradient | reduce GB/s | copy GB/s | fraction | device: reduce us | "
               "copy us | fraction | torch us | pyrt / torch |"),
              "|---|---|---|---|---|---|---|---|---|"]
    for r in result["bias_grad"]:
        device = (f"{r['device_bias_grad_us']:.2f} | {r['device_copy_us']:.2f} | "
                  f"{r['device_fraction_of_copy']:.2f}" if "device_copy_GBs" in r
                  else "failed | - | -")
        torch_cells = (f"{r['torch_device_us']:.2f} | "
                       f"{r['device_bias_grad_us'] / r['torch_device_us']:.2f}"
                       if "torch_device_us" in r and "device_bias_grad_us" in r
                       else "- | -")
        lines.append(f"| {r['shape']} | {r['bias_grad_GBs']:.0f} | {r['copy_GBs']:.0f} | "
                     f"{r['fraction_of_copy']:.2f} | {device} | {torch_cells} |")
    (RESULTS / "cuda.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
