"""The cost of a pyrt.ops call above its C kernel, on 4-element arrays, beside NumPy and PyTorch.

On arrays this small the kernel's own work is a few nanoseconds, so a call's time is what the
Python wrapper adds: checking dtype, shape, layout and overlap, getting the data pointers, and
allocating a result. Each op is timed four ways in one process:

- ``pyrt.ops``: the public call, as a user writes it;
- ``C call``: the same kernel called through cffi with pointers made before the timing, which
  is the C work plus cffi's own call (the floor a Python wrapper can reach);
- ``NumPy``: the ufunc or function a user would call instead;
- ``torch``: the PyTorch op on tensors, with ``out=`` where the pyrt call has one.

`wrapper` is pyrt.ops' time minus the C call's: what the issue's "well under 1 microsecond
above the C work" is about. Samples are about --sample-ms long, passes interleaved across the
variants, medians of --repeat passes. The arrays are too small to be split, so every thread
count runs the kernel on the calling thread; 1 and 2 threads are both timed all the same.

    python benchmarks/kernels/bench_overhead.py
    python benchmarks/kernels/bench_overhead.py --quick --out /tmp/overhead   # smoke test

Writes kernels_overhead.json (machine, settings, every sample) and kernels_overhead.md under
--out (default benchmarks/results).
"""

import statistics
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from pyrt._pyrt_cffi import ffi, lib  # noqa: E402

import benchmarks._harness as harness  # noqa: E402
import pyrt  # noqa: E402
from pyrt import ops  # noqa: E402

PAUSE_S = 0.005
WAYS = ("pyrt.ops", "C call", "NumPy", "torch")


def workloads(torch):
    """(op, {way: callable}) for each op timed; every callable returns its result array."""
    rng = np.random.default_rng(0)
    a, b, g = (rng.standard_normal(4).astype(np.float32) for _ in range(3))
    m1, m2 = (rng.standard_normal((2, 2)).astype(np.float32) for _ in range(2))
    out, res, mout = np.empty(4, np.float32), np.empty((), np.float32), np.empty((2, 2),
                                                                                  np.float32)
    floats = ffi.typeof("float[]")
    pa, pb, pg, pout, pres = (ffi.from_buffer(floats, x) for x in (a, b, g, out, res))
    pm1, pm2, pmout = (ffi.from_buffer(floats, x) for x in (m1, m2, mout))
    two = ffi.new("float[1]", (2.0,))
    bias = rng.standard_normal(2).astype(np.float32)
    labels = np.array([1, 0])
    param, mom, avg, avg_sq = (np.zeros(4, np.float32) for _ in range(4))
    pbias, pparam, pmom, pavg, pavg_sq = (ffi.from_buffer(floats, x)
                                          for x in (bias, param, mom, avg, avg_sq))
    plabels = ffi.from_buffer("int64_t[]", labels)
    pgrad2 = ffi.from_buffer(floats, np.empty((2, 2), np.float32))

    def numpy_softmax(x):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return np.divide(e, e.sum(axis=1, keepdims=True), out=mout)

    def numpy_cross_entropy(x):  # the mean loss and its gradient
        shifted = x - x.max(axis=1, keepdims=True)
        e = np.exp(shifted)
        total = e.sum(axis=1, keepdims=True)
        rows = np.arange(len(x))
        loss = np.mean(np.log(total[:, 0]) - shifted[rows, labels])
        grad = e / total
        grad[rows, labels] -= 1
        return loss, grad / np.float32(len(x))

    def numpy_sgd():  # buf = 0.9 buf + g; param -= 0.01 buf
        np.multiply(mom, np.float32(0.9), out=mom)
        np.add(mom, g, out=mom)
        param[...] -= np.float32(0.01) * mom
        return param

    def numpy_adam():  # step 1 of Adam, lr 1e-3, betas (0.9, 0.999), eps 1e-8
        avg[...] = avg + np.float32(0.1) * (g - avg)
        avg_sq[...] = np.float32(0.999) * avg_sq + np.float32(0.001) * g * g
        denom = np.sqrt(avg_sq) / np.float32(np.sqrt(0.001)) + np.float32(1e-8)
        param[...] -= np.float32(1e-3 / 0.1) * avg / denom
        return param
    binary, unary, backward = lib.pyrt_binary, lib.pyrt_unary, lib.pyrt_unary_backward
    none, scalar = lib.PYRT_BCAST_NONE, lib.PYRT_BCAST_SCALAR
    add, mul, relu = lib.PYRT_ADD, lib.PYRT_MUL, lib.PYRT_RELU
    table = [
        ("add(a, b, out=out)", {
            "pyrt.ops": lambda: ops.add(a, b, out=out),
            "C call": lambda: binary(add, pa, pb, pout, 1, 4, none, 0),
            "NumPy": lambda: np.add(a, b, out=out)}),
        ("add(a, b)", {
            "pyrt.ops": lambda: ops.add(a, b),
            "C call": lambda: binary(add, pa, pb, pout, 1, 4, none, 0),
            "NumPy": lambda: np.add(a, b)}),
        ("mul(a, 2.0, out=out)", {
            "pyrt.ops": lambda: ops.mul(a, 2.0, out=out),
            "C call": lambda: binary(mul, pa, two, pout, 1, 4, scalar, 0),
            "NumPy": lambda: np.multiply(a, 2.0, out=out)}),
        ("relu(a, out=out)", {
            "pyrt.ops": lambda: ops.relu(a, out=out),
            "C call": lambda: unary(relu, pa, pout, 4),
            "NumPy": lambda: np.maximum(a, 0, out=out)}),
        ("relu_backward(g, a, out=out)", {
            "pyrt.ops": lambda: ops.relu_backward(g, a, out=out),
            "C call": lambda: backward(relu, pg, pa, pout, 4),
            "NumPy": lambda: np.multiply(g, a > 0, out=out)}),
        ("sum(a)", {
            "pyrt.ops": lambda: ops.sum(a),
            "C call": lambda: lib.pyrt_sum(pa, pres, 1, 4, 1),
            "NumPy": lambda: np.sum(a)}),
        ("matmul(m1, m2, out=mout), 2x2", {
            "pyrt.ops": lambda: ops.matmul(m1, m2, out=mout),
            "C call": lambda: lib.pyrt_sgemm(0, 0, 2, 2, 2, 1.0, pm1, 2, pm2, 2, 0.0, pmout, 2),
            "NumPy": lambda: np.matmul(m1, m2, out=mout)}),
        ("addcmul(a, b, g, out=out)", {
            "pyrt.ops": lambda: ops.addcmul(a, b, g, out=out),
            "C call": lambda: lib.pyrt_addcmul(pa, pb, pg, 1.0, pout, 4),
            "NumPy": lambda: np.add(np.multiply(b, g, out=out), a, out=out)}),
        ("bias_act(m1, bias, 'relu', out=mout)", {
            "pyrt.ops": lambda: ops.bias_act(m1, bias, "relu", out=mout),
            "C call": lambda: lib.pyrt_bias_act(pm1, pbias, pmout, 2, 2, relu),
            "NumPy": lambda: np.maximum(np.add(m1, bias, out=mout), 0, out=mout)}),
        ("softmax(m1, out=mout)", {
            "pyrt.ops": lambda: ops.softmax(m1, out=mout),
            "C call": lambda: lib.pyrt_softmax(pm1, pmout, 2, 2, 0),
            "NumPy": lambda: numpy_softmax(m1)}),
        ("cross_entropy(m1, labels, return_grad=True)", {
            "pyrt.ops": lambda: ops.cross_entropy(m1, labels, return_grad=True),
            "C call": lambda: lib.pyrt_cross_entropy(pm1, plabels, pres, pgrad2, 2, 2),
            "NumPy": lambda: numpy_cross_entropy(m1)}),
        ("sgd_step(param, g, buf, lr=0.01, momentum=0.9)", {
            "pyrt.ops": lambda: ops.sgd_step(param, g, mom, lr=0.01, momentum=0.9),
            "C call": lambda: lib.pyrt_sgd_step(pparam, pg, pmom, 4, 0.01, 0.9, 0.0, 0.0, 0, 0),
            "NumPy": numpy_sgd}),
        ("adam_step(param, g, m, v, step=1)", {
            "pyrt.ops": lambda: ops.adam_step(param, g, avg, avg_sq, step=1),
            "C call": lambda: lib.pyrt_adam_step(pparam, pg, pavg, pavg_sq, 4, 1e-3, 0.9, 0.999,
                                                 1e-8, 0.0, 1),
            "NumPy": numpy_adam}),
    ]
    if torch is not None:
        ta, tb, tg, tout, tm1, tm2, tmout = (torch.from_numpy(x)
                                             for x in (a, b, g, out, m1, m2, mout))
        threshold_backward = torch.ops.aten.threshold_backward
        tbias, tparam, tmom = (torch.from_numpy(x) for x in (bias, param, mom))

        def torch_sgd():
            tmom.mul_(0.9).add_(tg)
            return tparam.add_(tmom, alpha=-0.01)

        peers = [lambda: torch.add(ta, tb, out=tout), lambda: torch.add(ta, tb),
                 lambda: torch.mul(ta, 2.0, out=tout), lambda: torch.clamp_min(ta, 0, out=tout),
                 lambda: threshold_backward(tg, ta, 0.0), lambda: torch.sum(ta),
                 lambda: torch.matmul(tm1, tm2, out=tmout),
                 lambda: torch.addcmul(ta, tb, tg, out=tout),
                 lambda: torch.clamp_min(torch.add(tm1, tbias, out=tmout), 0, out=tmout),
                 lambda: torch.softmax(tm1, 1), None, torch_sgd, None]
        assert len(peers) == len(table)
        for (_, ways), peer in zip(table, peers):
            if peer is not None:  # (no single torch call does the same work)
                ways["torch"] = peer
    return table


def markdown(report):
    settings, info = report["settings"], report["machine"]
    method = (f"Arrays of 4 float32 (matmul: 2x2), one call per timed run, median over "
              f"{harness.timing_phrase(settings)}. `wrapper` is pyrt.ops' time minus the C "
              "call's (the same kernel through cffi, pointers made beforehand): the Python "
              "wrapper's own cost. `÷ NumPy` is pyrt.ops' time over NumPy's.")
    libraries = f"NumPy {info['numpy']}; PyTorch {info['torch'] or 'not installed'}"
    cells = []
    for r in report["summary"]:
        us = {w: r.get(w) for w in WAYS}
        cells.append([r["op"], r["threads"]]
                     + [f"{1e6 * us[w]:.3f}" if us[w] is not None else "-" for w in WAYS]
                     + [f"{1e6 * (us['pyrt.ops'] - us['C call']):.3f}",
                        f"{us['pyrt.ops'] / us['NumPy']:.2f}"])
    table = harness.markdown_table(
        ["op", "threads", "pyrt.ops (µs)", "C call (µs)", "NumPy (µs)", "torch (µs)",
         "wrapper (µs)", "÷ NumPy"], cells)
    return harness.markdown_report(report, "Per-call cost of pyrt.ops on 4-element arrays",
                                   libraries, method, [table])


def main(argv=None):
    args = harness.parse_options(argv, __doc__, repeat=15, sample_ms=20.0)
    notes = []
    torch = harness.optional_import("torch", notes,
                                    "torch skipped: PyTorch is not installed.")
    info = harness.machine_info({"numpy": np.__version__, "torch": harness.version(torch)})
    table = workloads(torch)
    variants = []
    for t in args.threads:
        def setup(t=t):
            pyrt.set_num_threads(t)
            if torch is not None:
                torch.set_num_threads(t)
        for op, ways in table:
            for way, run in ways.items():
                variants.append(((op, way, t), setup, run))
    samples = harness.timed_passes(variants, args.repeat, PAUSE_S,
                                   sample_s=args.sample_ms / 1e3, show_passes=True)
    summary = []
    for t in args.threads:
        for op, ways in table:
            row = {"op": op, "threads": t}
            for way in ways:
                row[way] = statistics.median(samples[(op, way, t)])
            summary.append(row)
    settings = harness.run_settings(__file__, argv, args)
    harness.write_report(args.out, "kernels_overhead", info, settings, notes, {
        "summary": summary,
        "samples": harness.sample_records(samples, ("op", "way", "threads")),
    }, markdown)


if __name__ == "__main__":
    main()
