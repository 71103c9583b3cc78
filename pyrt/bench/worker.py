"""One Python variant of one workload at one thread count, in a process of its own.

    python -m pyrt.bench.worker '{"workload": "sum", "variant": "torch.sum", "threads": 2,
                                  "repeat": 5, "first": 0, "quick": false, "data": null}'

times `repeat` samples (the sweep asks for one per process) and prints one JSON line:
"samples" (seconds per call, one per timed sample), the thread counts the
libraries report ("threads_seen"), "notes" (results that did not check) and, for an epoch,
the test accuracy after each one and the data set's name. pyrt's thread count
comes from PYRT_NUM_THREADS, set by the runner; each peer's is set here through its own knob
(torch.set_num_threads, numexpr.set_num_threads, threadpoolctl for NumPy's BLAS), inside the
variant's setup(). Only the peer a variant needs is imported.
"""

import importlib
import json
import sys
from types import SimpleNamespace

import numpy as np

import pyrt
from pyrt.bench import kernels, training
from pyrt.bench.timing import timed_passes
from pyrt.bench.workloads import sizes

__all__ = ["main", "measure"]


def _peer(label, name, wanted_by):
    """The module `name` when the variant `label` uses it (one of `wanted_by`), else None."""
    return importlib.import_module(name) if label in wanted_by else None


def _time(variants, label, spec):
    """Median-ready samples of the variant `label` among (key, setup, run[, out]) tuples."""
    key, setup, run = next(v[:3] for v in variants if v[0][0] == label)
    size = sizes(spec["quick"])
    samples = timed_passes([(key, setup, run)], spec["repeat"], 0.0, sample_s=size["sample_s"])
    return samples[key]


def _sum(spec, extra):
    label, n = spec["variant"], sizes(spec["quick"])["sum_n"]
    x = kernels.sum_values(n)
    variants = kernels.sum_variants(x, [spec["threads"]], _peer(label, "torch", {"torch.sum"}))
    exact = float(np.sum(x, dtype=np.float64))  # exact: every partial sum is a float
    result = float(next(v for v in variants if v[0][0] == label)[2]())
    if result != exact:
        extra["notes"].append(f"{label}: sum {result!r} differs from the exact {exact!r}")
    return _time(variants, label, spec)


def _addcmul(spec, extra):
    label, n = spec["variant"], sizes(spec["quick"])["addcmul_n"]
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(n, dtype=np.float32) for _ in range(3))
    variants = kernels.addcmul_variants(
        a, b, c, [spec["threads"]], _peer(label, "numexpr", {"numexpr"}),
        _peer(label, "torch", {"torch.addcmul"}))
    _, setup, run, out = next(v for v in variants if v[0][0] == label)
    setup()
    run()
    if not kernels.addcmul_close(out, a.astype(np.float64) * b + c, a, b, c):
        extra["notes"].append(f"{label}: result differs from a * b + c in float64")
    return _time(variants, label, spec)


def _gemm_shapes(spec):
    if spec["workload"] == "gemm1024":
        g = sizes(spec["quick"])["gemm_n"]
        return [(g, g, g, False, False)]
    return [shape[1:] for shape in kernels.MLP_GEMMS]


def _gemm(spec, extra):
    """One product, or the MLP's six one after the other: their time together is a call."""
    from threadpoolctl import ThreadpoolController

    label, t = spec["variant"], spec["threads"]
    blas = ThreadpoolController() if label == "np.matmul" else None
    torch = _peer(label, "torch", {"torch.matmul"})
    key = {"pyrt.ops.matmul": "pyrt", "np.matmul": "numpy", "torch.matmul": "torch"}[label]
    rng = np.random.default_rng(0)
    steps, products = [], []
    for m, n, k, trans_a, trans_b in _gemm_shapes(spec):
        a, b = kernels.gemm_operands(rng, m, n, k, trans_a, trans_b)
        c = np.empty((m, n), np.float32)
        _, setup, run = next(v for v in kernels.gemm_variants(a, b, c, trans_a, trans_b, t,
                                                               blas, torch) if v[0][0] == key)
        setup()
        steps.append(run)
        products.append(((m, n, k), c, a, b, trans_a, trans_b))

    def all_products():
        for run in steps:
            run()

    samples = _time([((label, t), lambda: None, all_products)], label, spec)
    # checked after the timing: the check multiplies in float64 through NumPy's BLAS, whose
    # threads then spin for about 0.1 s, on the CPUs the timed calls would run on
    for shape, c, a, b, trans_a, trans_b in products:
        if not kernels.gemm_close(c, a, b, trans_a, trans_b):
            extra["notes"].append(f"{label} {shape}: wrong result")
    return samples


def _conv(spec, extra):
    label = spec["variant"]
    batch = sizes(spec["quick"])["conv_batch"]
    torch = _peer(label, "torch", {"torch"})
    if torch is not None:
        torch.set_num_threads(spec["threads"])
    rng = np.random.default_rng(0)
    key = "torch" if label == "torch" else "pyrt"
    layers = [kernels.conv_variants(rng, (batch, 1, 28, 28), 8, torch)[key],
              kernels.conv_variants(rng, (batch, 8, 14, 14), 16, torch)[key]]

    def forward_backward():
        for forward, backward, _ in layers:
            forward()
            backward()

    return _time([((label, spec["threads"]), lambda: None, forward_backward)], label, spec)


def _xor(spec, extra):
    size = sizes(spec["quick"])
    args = SimpleNamespace(xor_steps=size["xor_steps"], repeat=spec["repeat"])
    step = {"pyrt": training.xor_pyrt, "torch": training.xor_torch,
            "NumPy by hand": training.xor_numpy}[spec["variant"]]
    return [us * 1e-6 for us in step(args)["us_per_step"]]


def _epoch(spec, extra):
    size = sizes(spec["quick"])
    if spec["data"] is None or spec["quick"]:
        images = 64 * size["synthetic_steps"]
        data = training.synthetic_fashion(images, 1000)
    else:
        data = training.load_fashion(spec["data"])
        images = len(data.train_images)
    args = SimpleNamespace(runs=spec["repeat"], first=spec.get("first", 0), train_limit=images)
    task = spec["workload"].split("_")[0]
    epoch = training.epoch_torch if spec["variant"] == "torch" else training.epoch_pyrt
    result = epoch(args, task, data)
    extra.update(test_accuracy=result["test_accuracy"], data=data.name)
    return result["epoch_s"]


WORKLOADS = {"sum": _sum, "addcmul": _addcmul, "gemm1024": _gemm, "gemm_mlp": _gemm,
             "conv": _conv, "xor": _xor, "mlp_epoch": _epoch, "cnn_epoch": _epoch}


def measure(spec):
    """The JSON-ready result of one run described by `spec` (see the module's docstring)."""
    if spec["variant"] == "torch" or spec["variant"].startswith("torch."):
        import torch

        torch.set_num_threads(spec["threads"])
    extra = {"notes": []}
    samples = WORKLOADS[spec["workload"]](spec, extra)
    seen = {"pyrt": pyrt.get_num_threads()}
    if "torch" in sys.modules:
        seen["torch"] = sys.modules["torch"].get_num_threads()
    return {"samples": samples, "threads_seen": seen, **extra}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    print(json.dumps(measure(json.loads(argv[0]))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
