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


def main(argv=None):
    harness.forward_backward_main(
        argv, __doc__, __file__, "kernels_layer_norm", "layer_norm: pyrt.ops against PyTorch",
        "the input, weight and bias gradients", WORKLOADS,
        lambda rng, workload, torch: variants(rng, *workload[1:], torch),
        repeat=15, sample_ms=20.0, pause_s=PAUSE_S)


if __name__ == "__main__":
    main()
