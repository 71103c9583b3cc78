"""layer_norm forward and backward: pyrt.ops beside PyTorch at equal thread counts.

The workloads are the layer norms of common networks, and rows long enough that pyrt splits
each one across threads:

    transformer   x [64 * 128, 768], normalized over 768 (a BERT-base layer, batch 64)
    vit           x [64, 197, 384], normalized over 384 (a ViT-S layer, batch 64)
    mlp           x [64, 512], normalized over 512 (after a hidden layer, batch 64)
    narrow        x [4096, 64], normalized over 64
    wide          x [8, 2^17], normalized over 2^17 (rows split into leaves)

each with a weight and a bias, and timed as its forward call and its backward call (the
input, weight and bias gradients), in this process:

    pyrt    layer_norm(x, shape, w, b)        layer_norm_backward(dy, x, shape, w, mean, invstd)
    torch   aten.native_layer_norm(x, ...)    aten.native_layer_norm_backward(dy, x, ...)
            (the kernels autograd runs, without building a graph)

with pyrt.set_num_threads(t) and torch.set_num_threads(t). Each sample times enough calls to
take about --sample-ms; variants are interleaved sample by sample, so drift on a shared
machine spreads over all of them. The report gives medians and pyrt's time over torch's
(below 1: pyrt is faster). pyrt's results are checked against torch's, and for bitwise
equality across thread counts.

    python benchmarks/kernels/bench_layer_norm.py                  # threads 1 and 2
    python benchmarks/kernels/bench_layer_norm.py --threads 1,2,4 --repeat 15
    python benchmarks/kernels/bench_layer_norm.py --quick --out /tmp/ln   # smoke test

Writes kernels_layer_norm.json (machine, settings, every sample) and kernels_layer_norm.md
(medians, ratios) under --out (default benchmarks/results).
"""

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import benchmarks._harness as harness  # noqa: E402
import pyrt  # noqa: E402
from pyrt.ops.layer_norm import layer_norm, layer_norm_backward  # noqa: E402

PAUSE_S = 0.005
EPS = 1e-5

# (name, input shape, normalized_shape)
WORKLOADS = [
    ("transformer [8192, 768]", (64 * 128, 768), (768,)),
    ("vit [64, 197, 384]", (64, 197, 384), (384,)),
    ("mlp [64, 512]", (64, 512), (512,)),
    ("narrow [4096, 64]", (4096, 64), (64,)),
    ("wide [8, 131072]", (8, 2**17), (2**17,)),
]


def variants(rng, shape, normalized_shape, torch):
    """{variant: (forward, backward, results)}: the two timed calls, and a call giving every
    result to check."""
    x = rng.standard_normal(shape).astype(np.float32)
    dy = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal(normalized_shape).astype(np.float32)
    b = rng.standard_normal(normalized_shape).astype(np.float32)
    _, mean, invstd = layer_norm(x, normalized_shape, w, b, EPS)

    def forward():
        return layer_norm(x, normalized_shape, w, b, EPS)

    def backward():
        return layer_norm_backward(dy, x, normalized_shape, w, mean, invstd)

    out = {"pyrt": (forward, backward, lambda: (forward()[0], *backward()))}
    if torch is not None:
        aten = torch.ops.aten
        xt, dyt, wt, bt = (torch.from_numpy(a) for a in (x, dy, w, b))
        dims = list(normalized_shape)
        _, mt, rt = aten.native_layer_norm(xt, dims, wt, bt, EPS)

        def t_fwd():
            return aten.native_layer_norm(xt, dims, wt, bt, EPS)

        def t_bwd():
            return aten.native_layer_norm_backward(dyt, xt, dims, mt, rt, wt, bt,
                                                   [True, True, True])

        out["torch"] = (t_fwd, t_bwd,
                        lambda: tuple(t.numpy() for t in (t_fwd()[0], *t_bwd())))
    return out


def check(name, runs, args, torch, notes):
    """pyrt against torch, and pyrt's own results across thread counts."""
    mine = []
    for threads in args.threads:
        pyrt.set_num_threads(threads)
        mine.append(runs["pyrt"][2]())
    if not all(a.tobytes() == b.tobytes() for m in mine[1:] for a, b in zip(mine[0], m)):
        notes.append(f"pyrt {name}: results differ across thread counts")
    if torch is not None:
        torch.set_num_threads(args.threads[0])
        theirs = runs["torch"][2]()
        for what, a, b in zip(("y", "dx", "dweight", "dbias"), mine[0], theirs):
            if not np.allclose(a, b, rtol=1e-4, atol=1e-4 * (1 + np.abs(b).max())):
                notes.append(f"pyrt {name}: {what} differs from torch")


def markdown(report):
    info, settings = report["machine"], report["settings"]
    table = harness.forward_backward_table(report, [name for name, *_ in WORKLOADS])
    method = (f"Median time per call in microseconds, of {harness.timing_phrase(settings)}. "
              "Backward is the input, weight and bias gradients. `pyrt/torch` is pyrt's time "
              "over torch's at the same thread count (below 1: pyrt is faster).")
    return harness.markdown_report(
        report, "layer_norm: pyrt.ops against PyTorch",
        f"NumPy {info['numpy']}; PyTorch {info['torch'] or 'not installed'}", method, [table],
        load_at_end=True)


def main(argv=None):
    args = harness.parse_options(argv, __doc__, repeat=15, sample_ms=20.0)
    notes = []
    torch = harness.optional_import("torch", notes, "torch skipped: PyTorch is not installed.")
    info = harness.machine_info({"numpy": np.__version__, "torch": harness.version(torch)})
    rng = np.random.default_rng(0)

    results = {"summary": [], "samples": []}
    for name, shape, normalized_shape in WORKLOADS:
        runs = variants(rng, shape, normalized_shape, torch)
        check(name, runs, args, torch, notes)
        samples = harness.pyrt_torch_passes(runs, ("forward", "backward"), args, torch,
                                            PAUSE_S, untimed=False)
        key_names = ("variant", "pass", "threads")
        results["summary"] += harness.median_rows(samples, key_names, workload=name)
        results["samples"] += harness.sample_records(samples, key_names, workload=name)
        print(f"done {name}", flush=True)

    settings = harness.run_settings(__file__, argv, args)
    harness.write_report(args.out, "kernels_layer_norm", info, settings, notes, results,
                         markdown)


if __name__ == "__main__":
    main()
