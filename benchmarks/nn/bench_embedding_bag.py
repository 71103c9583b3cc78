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
        for what, a, b in zip(("output", "weight gradient"), mine[0], runs["torch"][2]()):
            if not np.allclose(a, b, rtol=1e-4, atol=1e-4 * (1 + np.abs(b).max())):
                notes.append(f"pyrt {name}: {what} differs from torch")


def markdown(report):
    info, settings = report["machine"], report["settings"]
    table = harness.forward_backward_table(report, [name for name, *_ in WORKLOADS])
    method = (f"Median time per call in microseconds, of {harness.timing_phrase(settings)}. "
              "Backward is the weight's gradient. `pyrt/torch` is pyrt's time over torch's at "
              "the same thread count (below 1: pyrt is faster).")
    return harness.markdown_report(
        report, "embedding_bag: pyrt against PyTorch",
        f"NumPy {info['numpy']}; PyTorch {info['torch'] or 'not installed'}", method, [table],
        load_at_end=True)


def main(argv=None):
    args = harness.parse_options(argv, __doc__, repeat=11, sample_ms=30.0)
    notes = []
    torch = harness.optional_import("torch", notes, "torch skipped: PyTorch is not installed.")
    info = harness.machine_info({"numpy": np.__version__, "torch": harness.version(torch)})
    rng = np.random.default_rng(0)

    results = {"summary": [], "samples": []}
    for name, rows, dim, count, bags, mode in WORKLOADS:
        runs = variants(rng, rows, dim, count, bags, mode, torch)
        check(name, runs, args, torch, notes)
        samples = harness.pyrt_torch_passes(runs, ("forward", "backward"), args, torch,
                                            PAUSE_S, untimed=False)
        key_names = ("variant", "pass", "threads")
        results["summary"] += harness.median_rows(samples, key_names, workload=name)
        results["samples"] += harness.sample_records(samples, key_names, workload=name)
        print(f"done {name}", flush=True)

    settings = harness.run_settings(__file__, argv, args)
    harness.write_report(args.out, "nn_embedding_bag", info, settings, notes, results,
                         markdown)


if __name__ == "__main__":
    main()
