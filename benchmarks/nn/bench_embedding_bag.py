"""embedding_bag forward and backward: pyrt beside PyTorch at equal thread counts.

The workloads are bags of a recommender's sparse features: a table of 20000 rows of 64 floats,
200000 indices in 20000 bags of random sizes (offsets), reduced by their sum, their mean and
their maximum, and a smaller table of 128-float rows in bags of fixed length (a 2-D input).
Each is timed as its forward call and its backward call (the weight's gradient), in this
process:

    pyrt    F.embedding_bag(input, weight, offsets, mode=...)   the recorded backward of one
                                                                 such call, for a gradient
    torch   aten._embedding_bag(weight, input, offsets, ...)    aten._embedding_bag_backward
            (the kernels autograd runs, without building a graph)

with pyrt.set_num_threads(t) and torch.set_num_threads(t). Each sample times enough calls to
take about --sample-ms; variants are interleaved sample by sample. The report gives medians
and pyrt's time over torch's (below 1: pyrt is faster). pyrt's results are checked against
torch's, and for bitwise equality across thread counts.

    python benchmarks/nn/bench_embedding_bag.py                  # threads 1 and 2
    python benchmarks/nn/bench_embedding_bag.py --quick --out /tmp/eb   # smoke test

Writes nn_embedding_bag.json and nn_embedding_bag.md under --out (default benchmarks/results).
"""

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import benchmarks._harness as harness  # noqa: E402
import pyrt  # noqa: E402
import pyrt.nn.functional as F  # noqa: E402

PAUSE_S = 0.005
MODES = {"sum": 0, "mean": 1, "max": 2}

# (name, rows, dim, indices, bags (None: a 2-D input of bags of `indices` each), mode)
WORKLOADS = [
    ("sum, 200k indices in 20k bags of 64", 20000, 64, 200000, 20000, "sum"),
    ("mean, 200k indices in 20k bags of 64", 20000, 64, 200000, 20000, "mean"),
    ("max, 200k indices in 20k bags of 64", 20000, 64, 200000, 20000, "max"),
    ("sum, [4096, 20] bags of 128", 5000, 128, 20, None, "sum"),
]


def variants(rng, rows, dim, count, bags, mode, torch):
    """{variant: (forward, backward, results)}."""
    table = rng.standard_normal((rows, dim)).astype(np.float32)
    if bags is None:
        index = rng.integers(0, rows, (4096, count))
        offsets, num_bags = None, 4096
    else:
        index = rng.integers(0, rows, count)
        cuts = np.sort(rng.choice(np.arange(1, count), bags - 1, replace=False))
        offsets, num_bags = np.concatenate([[0], cuts]).astype(np.int64), bags
    grad = rng.standard_normal((num_bags, dim)).astype(np.float32)
    weight = pyrt.tensor(table, requires_grad=True)
    index_t = pyrt.tensor(index)
    offsets_t = None if offsets is None else pyrt.tensor(offsets)

    def forward():
        with pyrt.no_grad():
            return F.embedding_bag(index_t, weight, offsets_t, mode=mode).numpy()

    recorded = F.embedding_bag(index_t, weight, offsets_t, mode=mode)

    def backward():
        return recorded._backward(grad)[0]

    out = {"pyrt": (forward, backward, lambda: (forward(), backward()))}
    if torch is not None:
        aten = torch.ops.aten
        wt, gt = torch.from_numpy(table), torch.from_numpy(grad)
        it = torch.from_numpy(index.reshape(-1))
        ot = (torch.arange(0, index.size, count) if offsets is None
              else torch.from_numpy(offsets))
        code = MODES[mode]
        _, offset2bag, bag_size, top = aten._embedding_bag(wt, it, ot, False, code)

        def t_fwd():
            return aten._embedding_bag(wt, it, ot, False, code)[0]

        def t_bwd():
            return aten._embedding_bag_backward(gt, it, ot, offset2bag, bag_size, top, rows,
                                                False, code, False, None)

        out["torch"] = (t_fwd, t_bwd, lambda: (t_fwd().numpy(), t_bwd().numpy()))
    return out


def main(argv=None):
    harness.forward_backward_main(
        argv, __doc__, __file__, "nn_embedding_bag", "embedding_bag: pyrt against PyTorch",
        "the weight's gradient", WORKLOADS,
        lambda rng, workload, torch: variants(rng, *workload[1:], torch),
        repeat=11, sample_ms=30.0, pause_s=PAUSE_S)


if __name__ == "__main__":
    main()
