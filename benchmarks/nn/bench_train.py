"""Training speed: pyrt beside PyTorch on the same networks, recipes and initial weights.

    xor   the network of Arraymancer issue #485: Linear(2, 3, bias=False), ReLU,
          Linear(3, 1, bias=False), BCEWithLogitsLoss, SGD lr 0.01, batch 32; microseconds per
          step (forward, loss, zero_grad, backward, optimizer.step), median over --repeat runs
          of --xor-steps steps after a warm-up (a run's figure: the median of its blocks of
          100 steps). A hand-written NumPy step of the same network
          is the reference row.
    mlp   Fashion-MNIST, 784-128-10 (Flatten, Linear, ReLU, Linear), CrossEntropyLoss, SGD
          lr 0.1 momentum 0.9, batch 64: seconds for one epoch (60000 images)
    cnn   Fashion-MNIST, conv 8, ReLU, pool, conv 16, ReLU, pool, linear (pyrt's CLI model),
          same recipe: seconds for one epoch

Each (framework, threads) pair runs in a fresh subprocess, so that thread pools never meet
(for XOR, one subprocess per run, the runs of all pairs interleaved); the thread count is set
with pyrt.set_num_threads / torch.set_num_threads. Timing covers the
training loop only: the shuffled batches are cut from the data set before the clock starts,
and the test accuracy is measured after it stops. Run r of an epoch benchmark starts from the
weights pyrt draws with seed r, copied into the torch model, and sees batch order r; the
table gives the median epoch time and the mean test accuracy over the runs.

    python benchmarks/nn/bench_train.py                      # threads 1 and 2, R = 3
    python benchmarks/nn/bench_train.py --only xor --repeat 5
    python benchmarks/nn/bench_train.py --quick --out /tmp/nn   # smoke test

Writes nn_train.json (machine, settings, every sample) and nn_train.md (medians, ratios)
under --out (default benchmarks/results).
"""

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from pyrt.bench.training import (  # noqa: E402
    epoch_pyrt,
    epoch_torch,
    load_fashion,
    xor_numpy,
    xor_paired,
    xor_pyrt,
    xor_torch,
)
from pyrt.bench.workloads import XOR_BLOCK, xor_block  # noqa: E402

TASKS = ("xor", "mlp", "cnn")
FRAMEWORKS = ("pyrt", "torch", "numpy")  # numpy: the hand-written XOR reference only


# ---- the worker subprocess -----------------------------------------------------------------


def worker(args):
    """Run one (framework, threads) pair and print its samples as one JSON line."""
    if args.framework == "torch":
        import torch

        torch.set_num_threads(args.threads)
    import pyrt

    pyrt.set_num_threads(args.threads)
    out = {}
    for task in args.only:
        if task == "xor_paired":
            out[task] = xor_paired(args.thread_list, args.paired_rounds)
        elif task == "xor":
            out[task] = {"pyrt": xor_pyrt, "torch": xor_torch, "numpy": xor_numpy}[
                args.framework](args)
        elif args.framework != "numpy":
            epoch = epoch_pyrt if args.framework == "pyrt" else epoch_torch
            out[task] = epoch(args, task, load_fashion(args.data))
    print(json.dumps(out))


# ---- the driver ----------------------------------------------------------------------------


def _run_worker(args, framework, threads):
    cmd = [sys.executable, __file__, "--worker", framework, "--threads-one", str(threads),
           "--only", ",".join(args.only), "--repeat", str(args.repeat),
           "--runs", str(args.runs), "--xor-steps", str(args.xor_steps),
           "--train-limit", str(args.train_limit), "--paired-rounds", str(args.paired_rounds),
           "--threads", ",".join(map(str, args.threads))]
    if args.data:
        cmd += ["--data", args.data]
    env = dict(os.environ, PYRT_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{framework} at {threads} thread(s) failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _fmt_ratio(a, b):
    return f"{a / b:.2f}x" if a and b else "-"


def _median(results, framework, threads, task, key):
    r = results.get((framework, threads), {}).get(task)
    return statistics.median(r[key]) if r else None


def _paired_lines(paired, threads):
    """The paired XOR run: each variant's median block, and its time over pyrt's at the
    first thread count and over NumPy's as the median of the ratios within rounds."""
    first = f"pyrt@{threads[0]}"
    rounds = len(paired["numpy"])
    lines = ["### The same steps in one process, in turns", "",
             (f"pyrt at each thread count and the NumPy step take turns in blocks of "
              f"{XOR_BLOCK} steps, {rounds} blocks each, in one process (a round runs a "
              "block of each, in an order drawn afresh for each round), so that every variant "
              "meets the same drift of the machine's speed. Times are the median block's "
              "microseconds per step; the ratios are medians of the ratios of blocks of the "
              f"same round. vs pyrt at {threads[0]}: over pyrt's block at {threads[0]} "
              "thread(s)."), "",
             f"| variant | us per step | vs NumPy | vs pyrt at {threads[0]} |",
             "|---|---:|---:|---:|"]
    for name in [f"pyrt@{t}" for t in threads] + ["numpy"]:
        blocks = paired[name]
        vs_numpy = statistics.median(a / b for a, b in zip(blocks, paired["numpy"]))
        vs_first = statistics.median(a / b for a, b in zip(blocks, paired[first]))
        label = "NumPy by hand" if name == "numpy" else f"pyrt, {name[5:]} thread(s)"
        lines.append(f"| {label} | {statistics.median(blocks):.1f} | {vs_numpy:.2f}x | "
                     f"{vs_first:.2f}x |")
    return lines + [""]


def _markdown(results, args, machine, paired=None):
    command = "python benchmarks/nn/bench_train.py " + " ".join(args.argv)
    lines = ["# Training speed: pyrt vs PyTorch", "",
             (f"{machine['date']}, {machine['cpu']}, {machine['cpus']} CPUs, "
              f"Python {machine['python']}, NumPy {machine['numpy']}, "
              f"torch {machine['torch']}"), "",
             ("Each (framework, threads) pair in a fresh process; training loop only. "
              f"Command: `{command.strip()}`"), ""]
    t1 = args.threads[0]
    if "xor" in args.only:
        lines += ["## XOR step (2-3-1, batch 32, SGD lr 0.01)", "",
                  (f"Median of {args.repeat} runs of {args.xor_steps} steps (each run's "
                   f"figure the median of its blocks of {xor_block(args.xor_steps)} "
                   "steps), microseconds per "
                   "step (forward, loss, zero_grad, backward, step); NumPy: the same step "
                   "written by hand. pyrt vs 1st: pyrt's time over its time at "
                   f"{t1} thread(s)."), "",
                  ("| threads | pyrt us | torch us | NumPy us | pyrt/torch | pyrt/NumPy "
                   "| pyrt vs 1st |"),
                  "|---:|---:|---:|---:|---:|---:|---:|"]
        base = _median(results, "pyrt", t1, "xor", "us_per_step")
        for t in args.threads:
            med = {fw: _median(results, fw, t, "xor", "us_per_step") for fw in FRAMEWORKS}
            cell = {fw: f"{m:.1f}" if m else "-" for fw, m in med.items()}
            lines.append(f"| {t} | {cell['pyrt']} | {cell['torch']} | {cell['numpy']} | "
                         f"{_fmt_ratio(med['pyrt'], med['torch'])} | "
                         f"{_fmt_ratio(med['pyrt'], med['numpy'])} | "
                         f"{_fmt_ratio(med['pyrt'], base)} |")
        lines.append("")
        if paired:
            lines += _paired_lines(paired, args.threads)
    for task, title in (("mlp", "Fashion-MNIST MLP 784-128-10"),
                        ("cnn", "Fashion-MNIST CNN (conv 8, pool, conv 16, pool, linear)")):
        if task not in args.only:
            continue
        lines += [f"## {title}: one epoch, batch 64, SGD lr 0.1 momentum 0.9", "",
                  (f"Median of {args.runs} epochs ({args.train_limit} images each) in "
                   "seconds; test accuracy after the epoch, mean over the runs (seeds "
                   f"0..{args.runs - 1}). Run r of both starts from the same weights and sees "
                   "the same batch order, so their accuracies differ only where float32 "
                   "rounding sends the two trajectories apart: acc diff is pyrt's minus "
                   "torch's in points, paired by seed, with the standard error of its mean."),
                  "",
                  ("| threads | pyrt s | torch s | pyrt/torch | pyrt acc | torch acc "
                   "| acc diff | s.e. |"),
                  "|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for t in args.threads:
            mp = _median(results, "pyrt", t, task, "epoch_s")
            mq = _median(results, "torch", t, task, "epoch_s")
            accs = {fw: results.get((fw, t), {}).get(task, {}).get("test_accuracy")
                    for fw in ("pyrt", "torch")}
            acc = {fw: f"{statistics.mean(a):.2%}" if a else "-" for fw, a in accs.items()}
            diff, se = "-", "-"
            if accs["pyrt"] and accs["torch"]:
                d = [100 * (p - q) for p, q in zip(accs["pyrt"], accs["torch"])]
                diff = f"{statistics.mean(d):+.2f}"
                se = f"{statistics.stdev(d) / len(d) ** 0.5:.2f}" if len(d) > 1 else "-"
            sp = f"{mp:.3f}" if mp else "-"
            sq = f"{mq:.3f}" if mq else "-"
            lines.append(f"| {t} | {sp} | {sq} | {_fmt_ratio(mp, mq)} | {acc['pyrt']} | "
                         f"{acc['torch']} | {diff} | {se} |")
        lines.append("")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    ap.add_argument("--only", default=",".join(TASKS), help="xor,mlp,cnn (default: all)")
    ap.add_argument("--repeat", type=int, default=5, help="XOR runs (default: 5)")
    ap.add_argument("--xor-steps", type=int, default=2000, help="steps per XOR run")
    ap.add_argument("--paired-rounds", type=int, default=300,
                    help="blocks of 100 XOR steps per variant in the paired run (0: none)")
    ap.add_argument("--runs", "--seeds", type=int, default=3, dest="runs",
                    help="epochs per MLP/CNN benchmark, seeds 0..R-1 (default: 3)")
    ap.add_argument("--train-limit", type=int, default=60000,
                    help="images per epoch (default: all 60000)")
    ap.add_argument("--data", default=None, help="Fashion-MNIST directory")
    ap.add_argument("--no-torch", action="store_true", help="skip PyTorch")
    ap.add_argument("--quick", action="store_true",
                    help="smoke test: 1 run, 200 XOR steps, 3200-image epochs")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    ap.add_argument("--worker", choices=FRAMEWORKS, dest="framework", help=argparse.SUPPRESS)
    ap.add_argument("--threads-one", type=int, dest="threads_one", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.only = [t for t in args.only.split(",") if t]
    for t in args.only:
        if t not in TASKS and not (args.framework and t == "xor_paired"):
            ap.error(f"--only: unknown task {t!r} (choose from {', '.join(TASKS)})")
    if args.framework:
        args.thread_list = [int(t) for t in args.threads.split(",")]
        args.threads = args.threads_one
        worker(args)
        return
    args.argv = sys.argv[1:]
    if args.quick:
        args.repeat, args.runs, args.xor_steps, args.train_limit = 1, 1, 200, 3200
        args.paired_rounds = min(args.paired_rounds, 5)
    args.threads = [int(t) for t in args.threads.split(",")]
    frameworks = ["pyrt"]
    torch_version = None
    if not args.no_torch:
        try:
            import torch

            torch_version = torch.__version__
            frameworks.append("torch")
        except ImportError:
            print("torch is not installed: pyrt only", file=sys.stderr)
    if "xor" in args.only:
        frameworks.append("numpy")
    results = {(fw, t): {} for t in args.threads for fw in frameworks}
    paired = None
    if "xor" in args.only:
        # XOR runs take seconds: one process per run, the runs of all variants interleaved,
        # so that drift on a shared machine spreads over all of them
        sub = argparse.Namespace(**{**vars(args), "only": ["xor"], "repeat": 1})
        for _ in range(args.repeat):
            for t in args.threads:
                for fw in frameworks:
                    samples = _run_worker(sub, fw, t)["xor"]["us_per_step"]
                    results[(fw, t)].setdefault("xor", {"us_per_step": []})
                    results[(fw, t)]["xor"]["us_per_step"] += samples
        print("xor: done", file=sys.stderr, flush=True)
        if args.paired_rounds > 0:
            sub = argparse.Namespace(**{**vars(args), "only": ["xor_paired"]})
            paired = _run_worker(sub, "pyrt", args.threads[0])["xor_paired"]
            print("xor paired: done", file=sys.stderr, flush=True)
    epochs = [task for task in args.only if task != "xor"]
    for t in args.threads:
        for fw in frameworks:
            if fw == "numpy" or not epochs:
                continue
            sub = argparse.Namespace(**{**vars(args), "only": epochs})
            results[(fw, t)].update(_run_worker(sub, fw, t))
            print(f"{fw} threads={t}: done", file=sys.stderr, flush=True)
    machine = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "cpu": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "torch": torch_version,
        "numpy": np.__version__,
    }
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    machine["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    settings = {k: v for k, v in vars(args).items() if k not in ("framework", "threads_one")}
    (out / "nn_train.json").write_text(json.dumps({
        "machine": machine, "settings": settings,
        "results": [{"framework": fw, "threads": t, **r} for (fw, t), r in results.items()],
        "xor_paired": paired,
    }, indent=1))
    md = _markdown(results, args, machine, paired)
    (out / "nn_train.md").write_text(md + "\n")
    print(md)


if __name__ == "__main__":
    main()
