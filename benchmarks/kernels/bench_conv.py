"""conv2d, max_pool2d and batch_norm, forward and backward: pyrt.ops beside PyTorch at equal
thread counts.

The workloads are the layers of the small Fashion-MNIST CNN at batch 64, and two layers of the
kinds other networks use:

    conv1       x [64, 1, 28, 28], 8 filters of 1x3x3, padding 1
    conv2       x [64, 8, 14, 14], 16 filters of 8x3x3, padding 1
    depthwise   x [64, 32, 28, 28], 32 filters of 1x3x3, padding 1, groups 32
    dilated     x [64, 16, 14, 14], 16 filters of 16x3x3, padding 2, dilation 2
    wide        x [32, 96, 16, 16], 32 filters of 96x3x3, padding 1, and x [32, 128, 8, 8],
                128 filters of 128x3x3, padding 1 (layers deeper in an image network)
    pool1       max_pool2d 2x2 of [64, 8, 28, 28]
    pool2       max_pool2d 2x2 of [64, 16, 14, 14]
    bn2d        batch_norm in training of [64, 8, 28, 28] (BatchNorm2d after conv1)
    bn1d        batch_norm in training of [256, 512] (BatchNorm1d after a linear layer)

Each is timed as its forward call and its backward call (all three gradients of a
convolution or a batch norm; the input gradient of a pooling), in this process:

    pyrt    conv2d(x, w, b, padding=1, out=y)          conv2d_backward(x, w, dy, padding=1)
            (the dilation and groups passed too)
            max_pool2d(x, 2, return_indices=True)      max_pool2d_backward(dy, ind, shape, 2)
            batch_norm(x, rm, rv, w, b, training=True)  batch_norm_backward(dy, x, w, mean, ...)
    torch   aten.convolution(x, w, b, ...)             aten.convolution_backward(dy, x, w, ...)
            aten.max_pool2d_with_indices(x, 2, 2)      aten.max_pool2d_with_indices_backward
            aten.native_batch_norm(x, w, b, rm, rv, True, ...)   aten.native_batch_norm_backward
            (the kernels autograd runs, without building a graph)

with pyrt.set_num_threads(t) and torch.set_num_threads(t). Each sample times enough calls to
take about --sample-ms; variants are interleaved sample by sample, so drift on a shared
machine spreads over all of them. The report gives medians and pyrt's time over torch's
(below 1: pyrt is faster). pyrt's results are checked against torch's, and its gradients for
bitwise equality across thread counts.

    python benchmarks/kernels/bench_conv.py                  # threads 1 and 2
    python benchmarks/kernels/bench_conv.py --threads 1,2,4 --repeat 15
    python benchmarks/kernels/bench_conv.py --quick --out /tmp/conv   # smoke test

Writes kernels_conv.json (machine, settings, every sample) and kernels_conv.md (medians,
ratios) under --out (default benchmarks/results).
"""

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import benchmarks._harness as harness  # noqa: E402
from pyrt.bench.kernels import conv_variants  # noqa: E402
from pyrt.ops.batch_norm import batch_norm, batch_norm_backward  # noqa: E402
from pyrt.ops.pool import max_pool2d, max_pool2d_backward  # noqa: E402

PAUSE_S = 0.005

# (name, kind, input shape, filters or pooling window, options of a convolution)
WORKLOADS = [
    ("conv1 1->8 3x3 pad 1, 28x28", "conv", (64, 1, 28, 28), 8, {}),
    ("conv2 8->16 3x3 pad 1, 14x14", "conv", (64, 8, 14, 14), 16, {}),
    ("depthwise 32 3x3 pad 1, 28x28", "conv", (64, 32, 28, 28), 32, {"groups": 32}),
    ("16->16 3x3 dilation 2 pad 2, 14x14", "conv", (64, 16, 14, 14), 16, {"dilation": 2}),
    ("96->32 3x3 pad 1, 16x16", "conv", (32, 96, 16, 16), 32, {}),
    ("128->128 3x3 pad 1, 8x8", "conv", (32, 128, 8, 8), 128, {}),
    ("max_pool2d 2x2 [64, 8, 28, 28]", "pool", (64, 8, 28, 28), 2, {}),
    ("max_pool2d 2x2 [64, 16, 14, 14]", "pool", (64, 16, 14, 14), 2, {}),
    ("batch_norm [64, 8, 28, 28]", "batch_norm", (64, 8, 28, 28), None, {}),
    ("batch_norm [256, 512]", "batch_norm", (256, 512), None, {}),
]


def pool_variants(rng, shape, k, torch):
    x = rng.standard_normal(shape).astype(np.float32)
    y, ind = max_pool2d(x, k, return_indices=True)
    dy = rng.standard_normal(y.shape).astype(np.float32)
    out = {"pyrt": (lambda: max_pool2d(x, k, return_indices=True),
                    lambda: max_pool2d_backward(dy, ind, shape, k),
                    lambda: (*max_pool2d(x, k, return_indices=True),
                             max_pool2d_backward(dy, ind, shape, k)))}
    if torch is not None:
        aten = torch.ops.aten
        xt, dyt = torch.from_numpy(x), torch.from_numpy(dy)
        yt, it = aten.max_pool2d_with_indices(xt, [k, k], [k, k])

        def t_bwd():
            return aten.max_pool2d_with_indices_backward(dyt, xt, [k, k], [k, k], [0, 0],
                                                         [1, 1], False, it)

        out["torch"] = (lambda: aten.max_pool2d_with_indices(xt, [k, k], [k, k]), t_bwd,
                        lambda: (yt.numpy(), it.numpy(), t_bwd().numpy()))
    return out


def bn_variants(rng, shape, _, torch):
    x = rng.standard_normal(shape).astype(np.float32)
    dy = rng.standard_normal(shape).astype(np.float32)
    c = shape[1]
    w, b = rng.standard_normal(c).astype(np.float32), rng.standard_normal(c).astype(np.float32)
    rm, rv = np.zeros(c, np.float32), np.ones(c, np.float32)
    _, mean, invstd = batch_norm(x, rm.copy(), rv.copy(), w, b, training=True)

    def forward():
        return batch_norm(x, rm, rv, w, b, training=True)[0]

    def backward():
        return batch_norm_backward(dy, x, w, mean, invstd)

    out = {"pyrt": (forward, backward, lambda: (forward(), *backward()))}
    if torch is not None:
        aten = torch.ops.aten
        xt, dyt, wt, bt = (torch.from_numpy(a) for a in (x, dy, w, b))
        rmt, rvt = torch.zeros(c), torch.ones(c)
        _, mt, it = aten.native_batch_norm(xt, wt, bt, rmt.clone(), rvt.clone(), True, 0.1,
                                           1e-5)

        def t_fwd():
            return aten.native_batch_norm(xt, wt, bt, rmt, rvt, True, 0.1, 1e-5)[0]

        def t_bwd():
            return aten.native_batch_norm_backward(dyt, xt, wt, rmt, rvt, mt, it, True, 1e-5,
                                                   [True, True, True])

        out["torch"] = (t_fwd, t_bwd, lambda: tuple(t.numpy() for t in (t_fwd(), *t_bwd())))
    return out


def make_runs(rng, workload, torch):
    _, kind, shape, size, options = workload
    make = {"conv": conv_variants, "pool": pool_variants, "batch_norm": bn_variants}[kind]
    return make(rng, shape, size, torch, **options)


def main(argv=None):
    harness.forward_backward_main(
        argv, __doc__, __file__, "kernels_conv",
        "conv2d, max_pool2d and batch_norm: pyrt.ops against PyTorch",
        "all three gradients of a convolution or a batch norm, the input gradient of a "
        "pooling; the target is 0.8 or less", WORKLOADS, make_runs, repeat=15, sample_ms=20.0,
        pause_s=PAUSE_S)


if __name__ == "__main__":
    main()
