"""Where a training step's time goes, at each thread count: every call into pyrt's C library
timed by name, and the rest of the step (Python, NumPy, allocation) as one remainder.

    python benchmarks/nn/profile_step.py --model cnn --threads 1,2,4,8,16 --steps 200 --rounds 5

The model trains on random images of Fashion-MNIST's shape (the work per step does not depend
on the pixels) with the benchmark's recipe: batch 64, CrossEntropyLoss, SGD lr 0.1 momentum 0.9.
One process runs every thread count in turns, `--rounds` times, in an order drawn afresh for
each round; a round times `--steps` steps plainly, then `--steps` more with each C call wrapped
in a timer (about 0.2 us a call), so the plain step time is the figure and the wrapped one is
the breakdown. Prints a table per model and, with --out, writes the raw figures as JSON.
"""

import argparse
import collections
import json
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

import pyrt
from pyrt import nn, optim
from pyrt.cli.models import build_model

# the modules that call the C library through a module-level `lib`
LIB_USERS = ["pyrt.ops._checks", "pyrt.ops._memory", "pyrt.ops.batch_norm", "pyrt.ops.conv",
             "pyrt.ops.elementwise", "pyrt.ops.linalg", "pyrt.ops.optim", "pyrt.ops.pool",
             "pyrt.ops.reduction", "pyrt.ops.softmax", "pyrt.functional",
             "pyrt.nn.linear_chain", "pyrt.optim.sgd"]


class TimedLib:
    """Stands in for the cffi library: calls to pyrt_* functions add their time to `spent`."""

    def __init__(self, real):
        self._real = real
        self.spent = collections.Counter()
        self.calls = collections.Counter()
        self._wrapped = {}

    def __getattr__(self, name):
        fn = getattr(self._real, name)
        if not (callable(fn) and name.startswith("pyrt_")):
            return fn
        wrapped = self._wrapped.get(name)
        if wrapped is None:
            spent, calls, clock = self.spent, self.calls, time.perf_counter_ns

            def wrapped(*args):
                start = clock()
                try:
                    return fn(*args)
                finally:
                    spent[name] += clock() - start
                    calls[name] += 1

            self._wrapped[name] = wrapped
        return wrapped


def _install(timed):
    """Points every LIB_USERS module's `lib`, and the C functions some of them keep in module
    attributes (`_sgemm = lib.pyrt_sgemm`), at `timed`. Returns what to put back."""
    by_id = {id(getattr(timed._real, n)): n for n in dir(timed._real) if n.startswith("pyrt_")}
    real = []
    for name in LIB_USERS:
        module = sys.modules.get(name)
        if module is None:
            continue
        for attr, value in list(vars(module).items()):
            if attr == "lib" and value is timed._real:
                real.append((module, attr, value))
                module.lib = timed
            elif id(value) in by_id and callable(value):
                real.append((module, attr, value))
                setattr(module, attr, getattr(timed, by_id[id(value)]))
    return real


def _uninstall(real):
    for module, attr, value in real:
        setattr(module, attr, value)


def _trainer(model_name, seed=0):
    pyrt.manual_seed(seed)
    model = build_model(model_name)
    criterion = nn.CrossEntropyLoss()
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    rng = np.random.default_rng(seed)
    batches = [(pyrt.Tensor(rng.random((64, 1, 28, 28), dtype=np.float32)),
                pyrt.Tensor(rng.integers(0, 10, 64))) for _ in range(16)]

    def steps(n):
        for i in range(n):
            x, y = batches[i % len(batches)]
            loss = criterion(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()

    return steps


def profile(model_name, threads, steps, rounds):
    run = _trainer(model_name)
    run(steps)  # warm-up: buffers, caches, the pool's threads
    plain = {t: [] for t in threads}
    spent = {t: collections.Counter() for t in threads}
    calls = {t: collections.Counter() for t in threads}
    wrapped_total = {t: 0.0 for t in threads}
    order = np.random.default_rng(0)
    before = pyrt.get_num_threads()
    try:
        for _ in range(rounds):
            for i in order.permutation(len(threads)):
                t = threads[i]
                pyrt.set_num_threads(t)
                run(steps // 4)
                start = time.perf_counter()
                run(steps)
                plain[t].append((time.perf_counter() - start) / steps * 1e6)
                timed = TimedLib(sys.modules["pyrt.ops.conv"].lib)
                real = _install(timed)
                try:
                    start = time.perf_counter()
                    run(steps)
                    wrapped_total[t] += (time.perf_counter() - start) / steps * 1e6
                finally:
                    _uninstall(real)
                for name, ns in timed.spent.items():
                    spent[t][name] += ns / 1e3 / steps
                    calls[t][name] += timed.calls[name] / steps
    finally:
        pyrt.set_num_threads(before)
    result = {}
    for t in threads:
        per_call = {name: us / rounds for name, us in spent[t].items()}
        result[t] = {"step_us": plain[t], "step_us_median": statistics.median(plain[t]),
                     "wrapped_step_us": wrapped_total[t] / rounds,
                     "c_us": per_call,
                     "calls": {name: n / rounds for name, n in calls[t].items()}}
    return result


def report(model_name, threads, result):
    print(f"\n## {model_name}: microseconds per step (plain step: median of rounds; calls: "
          "mean of the wrapped rounds)\n")
    names = sorted(result[threads[0]]["c_us"], key=lambda n: -result[threads[0]]["c_us"][n])
    print("| | " + " | ".join(f"{t} thr" for t in threads) + " |")
    print("|---|" + "---|" * len(threads))
    print("| step (plain) | " + " | ".join(f"{result[t]['step_us_median']:.0f}" for t in threads)
          + " |")
    print("| step (wrapped) | " + " | ".join(f"{result[t]['wrapped_step_us']:.0f}"
                                            for t in threads) + " |")
    print("| all C calls | " + " | ".join(f"{sum(result[t]['c_us'].values()):.0f}"
                                         for t in threads) + " |")
    print("| rest | " + " | ".join(
        f"{result[t]['wrapped_step_us'] - sum(result[t]['c_us'].values()):.0f}"
        for t in threads) + " |")
    for name in names:
        n = result[threads[0]]["calls"].get(name, 0)
        print(f"| {name} (x{n:g}) | " + " | ".join(
            f"{result[t]['c_us'].get(name, 0):.1f}" for t in threads) + " |")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="cnn", help="comma-separated: mlp, cnn")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", help="write the raw figures to this JSON file")
    args = parser.parse_args(argv)
    threads = [int(t) for t in args.threads.split(",")]
    if any(t < 1 for t in threads):
        parser.error(f"--threads must be positive integers, got {args.threads!r}")
    if args.steps < 4 or args.rounds < 1:
        parser.error("--steps must be at least 4 and --rounds at least 1")
    out = {"cpus": os.cpu_count(), "threads": threads, "steps": args.steps,
           "rounds": args.rounds, "models": {}}
    for model_name in args.model.split(","):
        result = profile(model_name, threads, args.steps, args.rounds)
        report(model_name, threads, result)
        out["models"][model_name] = {str(t): r for t, r in result.items()}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
