"""More threads than CPUs: pyrt's kernels with the pool capped at the CPUs, beside the same
thread count with every thread kept awake, and beside as many threads as CPUs.

A thread count above the CPUs is allowed, but the pool keeps no more threads awake than there
are CPUs (csrc/README.md, "More threads than CPUs"). PYRT_CPUS tells the pool how many CPUs it
may keep busy, so setting it to the thread count gives back the uncapped pool, in which the
surplus threads share CPUs with those that work. Each workload runs in a fresh process for:

- ``cpus``: as many threads as the process has CPUs (the default);
- ``capped``: --over threads (default 4x the CPUs), the pool capped at the CPUs;
- ``uncapped``: --over threads with PYRT_CPUS=--over, every thread awake.

Workloads: steps of the Fashion-MNIST MLP's training (784-128-10, batch 64, SGD with
momentum, on random images of its shape), a 512^3 sgemm, exp of 2^21 floats, and the CNN's two
conv layers forward and backward at batch 64. A figure is the median over --repeat processes,
the variants taken in turn in every round; `÷ cpus` is a variant's time over the time on as
many threads as CPUs (1.00: as fast).

    python benchmarks/runtime/bench_oversubscribed.py
    python benchmarks/runtime/bench_oversubscribed.py --quick --out /tmp/over   # smoke test

Writes runtime_oversubscribed.json and .md under --out (default benchmarks/results).
"""

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import benchmarks._harness as harness  # noqa: E402
import pyrt  # noqa: E402

WORKLOADS = ("mlp_step", "sgemm512", "exp2M", "conv")
VARIANTS = ("cpus", "capped", "uncapped")

# Run in the child: each workload's median time per call, in microseconds, as one JSON line.
CHILD = r"""
import json, sys, time
import numpy as np
import pyrt
from pyrt import nn, optim
from pyrt.bench.training import _pyrt_model, _training_step

calls = int(sys.argv[1])
rng = np.random.default_rng(0)

def per_call(run, n):
    run()
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            run()
        times.append((time.perf_counter() - t0) / n * 1e6)
    return float(np.median(times))

model = _pyrt_model("mlp", 0)
step = _training_step(model, nn.CrossEntropyLoss(), optim.SGD(model.parameters(), lr=0.1,
                                                               momentum=0.9))
images = rng.random((64 * 16, 1, 28, 28), dtype=np.float32)
labels = rng.integers(0, 10, 64 * 16)
batches = [(pyrt.Tensor(images[i:i + 64]), pyrt.Tensor(labels[i:i + 64]))
           for i in range(0, len(images), 64)]
it = iter(range(1 << 62))
mlp = lambda: step(*batches[next(it) % len(batches)])
a, b = (rng.standard_normal((512, 512), dtype=np.float32) for _ in range(2))
c = np.empty((512, 512), np.float32)
x = rng.standard_normal(1 << 21, dtype=np.float32)
y = np.empty_like(x)
images1 = rng.standard_normal((64, 1, 28, 28), dtype=np.float32)
images2 = rng.standard_normal((64, 8, 14, 14), dtype=np.float32)
w1 = rng.standard_normal((8, 1, 3, 3), dtype=np.float32)
w2 = rng.standard_normal((16, 8, 3, 3), dtype=np.float32)
def conv():
    for xs, w in ((images1, w1), (images2, w2)):
        out = pyrt.ops.conv2d(xs, w, padding=1)
        pyrt.ops.conv2d_backward(xs, w, out, padding=1)
print(json.dumps({
    "mlp_step": per_call(mlp, 20 * calls),
    "sgemm512": per_call(lambda: pyrt.ops.matmul(a, b, out=c), calls),
    "exp2M": per_call(lambda: pyrt.ops.exp(x, out=y), 2 * calls),
    "conv": per_call(conv, calls),
}))
"""


def child_env(variant, cpus, over):
    env = dict(os.environ)
    env.pop("PYRT_CPUS", None)
    env["PYRT_NUM_THREADS"] = str(cpus if variant == "cpus" else over)
    if variant == "uncapped":
        env["PYRT_CPUS"] = str(over)
    return env


def markdown(report):
    rows, cpus, over = report["summary"], report["cpus"], report["over"]
    cells = []
    for w in WORKLOADS:
        base = rows[w]["cpus"]
        cells.append([w] + [f"{rows[w][v]:.1f}" for v in VARIANTS]
                     + [f"{rows[w][v] / base:.2f}" for v in VARIANTS[1:]])
    table = harness.markdown_table(
        ["workload", f"{cpus} threads (µs)", f"{over} threads, capped (µs)",
         f"{over} threads, uncapped (µs)", "capped ÷ cpus", "uncapped ÷ cpus"], cells)
    method = (f"Median time per call over {report['settings']['repeat']} fresh processes per "
              f"variant, variants in turn each round. `capped`: {over} threads with the pool "
              f"capped at the {cpus} CPUs (the default); `uncapped`: {over} threads with "
              f"PYRT_CPUS={over}, every thread awake. `÷ cpus`: over the time on {cpus} "
              "threads.")
    return harness.markdown_report(report, "More threads than CPUs", f"pyrt {pyrt.__version__}",
                                   method, [table], load_at_end=True)


def main(argv=None):
    cpus = pyrt.cpu_count()
    args = harness.parse_options(argv, __doc__, repeat=7, quick_repeat=1, own=[
        ("--over", {"type": int, "default": 4 * cpus,
                    "help": "the thread count above the CPUs (default 4x the CPUs)"})],
        quick_help="one process per variant, few calls")
    calls = 2 if args.quick else 20
    samples = {(w, v): [] for w in WORKLOADS for v in VARIANTS}
    for r in range(args.repeat):
        for v in VARIANTS:
            done = subprocess.run([sys.executable, "-c", CHILD, str(calls)], check=True,
                                  capture_output=True, text=True, cwd=ROOT,
                                  env=child_env(v, cpus, args.over), timeout=900)
            for w, us in json.loads(done.stdout.strip().splitlines()[-1]).items():
                samples[w, v].append(us)
        print(f"round {r + 1}/{args.repeat}", flush=True)
    summary = {w: {v: statistics.median(samples[w, v]) for v in VARIANTS} for w in WORKLOADS}
    settings = harness.run_settings(__file__, argv, args)
    harness.write_report(args.out, "runtime_oversubscribed", harness.machine_info({}),
                         settings, [], {"cpus": cpus, "over": args.over, "summary": summary,
                                        "samples": {f"{w} {v}": s
                                                    for (w, v), s in samples.items()}},
                         markdown)


if __name__ == "__main__":
    main()
