"""Training speed: pyrt beside PyTorch on the same networks, recipes and initial weights.

    xor   the network of Arraymancer issue #485: Linear(2, 3, bias=False), ReLU,
          Linear(3, 1, bias=False), BCEWithLogitsLoss, SGD lr 0.01, batch 32; microseconds per
          step (forward, loss, zero_grad, backward, optimizer.step), median over --repeat runs
          of --xor-steps steps after a warm-up. A hand-written NumPy step of the same network
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
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

TASKS = ("xor", "mlp", "cnn")
FRAMEWORKS = ("pyrt", "torch", "numpy")  # numpy: the hand-written XOR reference only
XOR_WARMUP = 200


# ---- the workloads (run inside a worker subprocess) -------------------------------------------


def _xor_batches():
    from pyrt.data import make_xor

    x, y = make_xor(3200, seed=0)
    return [(x[i:i + 32], y[i:i + 32]) for i in range(0, len(x), 32)]


def _pyrt_xor_model(seed):
    import pyrt
    from pyrt.cli.models import xor_net

    pyrt.manual_seed(seed)
    return xor_net()


def _time_steps(step, batches, steps, repeat):
    """Median microseconds per step over `repeat` runs of `steps` steps, after a warm-up."""
    n = len(batches)
    for i in range(XOR_WARMUP):
        step(*batches[i % n])
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        for i in range(steps):
            step(*batches[i % n])
        samples.append((time.perf_counter() - start) / steps * 1e6)
    return samples


def xor_pyrt(args):
    import pyrt
    from pyrt import nn, optim

    model = _pyrt_xor_model(0)
    criterion = nn.BCEWithLogitsLoss()
    opt = optim.SGD(model.parameters(), lr=0.01)
    batches = [(pyrt.Tensor(x), pyrt.Tensor(y)) for x, y in _xor_batches()]

    def step(x, y):
        loss = criterion(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    return {"us_per_step": _time_steps(step, batches, args.xor_steps, args.repeat)}


def xor_torch(args):
    import torch

    w1, w2 = (p.data.copy() for p in _pyrt_xor_model(0).parameters())
    model = torch.nn.Sequential(torch.nn.Linear(2, 3, bias=False), torch.nn.ReLU(),
                                torch.nn.Linear(3, 1, bias=False))
    with torch.no_grad():
        model[0].weight.copy_(torch.from_numpy(w1))
        model[2].weight.copy_(torch.from_numpy(w2))
    criterion = torch.nn.BCEWithLogitsLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    batches = [(torch.from_numpy(x), torch.from_numpy(y)) for x, y in _xor_batches()]

    def step(x, y):
        loss = criterion(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    return {"us_per_step": _time_steps(step, batches, args.xor_steps, args.repeat)}


def xor_numpy(args):
    """The same step written out in NumPy: forward, stable BCE-with-logits, backward, SGD."""
    w1, w2 = (p.data.copy() for p in _pyrt_xor_model(0).parameters())
    lr = np.float32(0.01)

    def step(x, y):
        h = x @ w1.T
        a = np.maximum(h, 0)
        z = a @ w2.T
        loss = np.mean(np.maximum(z, 0) - z * y + np.log1p(np.exp(-np.abs(z))))
        dz = (1 / (1 + np.exp(-z)) - y) / np.float32(len(z))
        dw2 = dz.T @ a
        dh = (dz @ w2) * (h > 0)
        dw1 = dh.T @ x
        w1[...] -= lr * dw1
        w2[...] -= lr * dw2
        return loss

    return {"us_per_step": _time_steps(step, _xor_batches(), args.xor_steps, args.repeat)}


def _epoch_batches(n, seed, batch):
    order = np.random.default_rng(seed).permutation(n)
    return [order[i:i + batch] for i in range(0, n, batch)]


def _load_fashion(args):
    from pyrt.data import load_mnist

    return load_mnist(args.data, download=False)


def _pyrt_model(task, seed):
    import pyrt
    from pyrt.cli.models import build_model

    pyrt.manual_seed(seed)
    return build_model(task)


def epoch_pyrt(args, task):
    import pyrt
    from pyrt import nn, optim
    from pyrt.cli.train_mnist import evaluate

    data = _load_fashion(args)
    times, accuracies, losses = [], [], []
    for run in range(args.runs):
        model = _pyrt_model(task, run)
        opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        criterion = nn.CrossEntropyLoss()
        batches = [(pyrt.Tensor(data.train_images[i]), pyrt.Tensor(data.train_labels[i]))
                   for i in _epoch_batches(args.train_limit, run, 64)]
        last = None
        start = time.perf_counter()
        for x, y in batches:
            loss = criterion(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            last = loss
        times.append(time.perf_counter() - start)
        losses.append(float(last.item()))
        accuracies.append(evaluate(model, data.test_images, data.test_labels, "cpu"))
    return {"epoch_s": times, "test_accuracy": accuracies, "last_loss": losses}


def _torch_model(task, seed):
    import torch

    tn = torch.nn
    if task == "mlp":
        model = tn.Sequential(tn.Flatten(), tn.Linear(784, 128), tn.ReLU(), tn.Linear(128, 10))
    else:
        model = tn.Sequential(
            tn.Conv2d(1, 8, 3, padding=1), tn.ReLU(), tn.MaxPool2d(2),
            tn.Conv2d(8, 16, 3, padding=1), tn.ReLU(), tn.MaxPool2d(2),
            tn.Flatten(), tn.Linear(16 * 7 * 7, 10))
    # the same initial weights as pyrt's model of this seed
    source = [p.data for p in _pyrt_model(task, seed).parameters()]
    params = list(model.parameters())
    assert [tuple(p.shape) for p in params] == [s.shape for s in source]
    with torch.no_grad():
        for p, s in zip(params, source):
            p.copy_(torch.from_numpy(s))
    return model


def epoch_torch(args, task):
    import torch

    data = _load_fashion(args)
    test_x = torch.from_numpy(data.test_images)
    test_y = torch.from_numpy(data.test_labels)
    times, accuracies, losses = [], [], []
    for run in range(args.runs):
        model = _torch_model(task, run)
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        criterion = torch.nn.CrossEntropyLoss()
        batches = [(torch.from_numpy(data.train_images[i]),
                    torch.from_numpy(data.train_labels[i]))
                   for i in _epoch_batches(args.train_limit, run, 64)]
        last = None
        start = time.perf_counter()
        for x, y in batches:
            loss = criterion(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            last = loss
        times.append(time.perf_counter() - start)
        losses.append(float(last.item()))
        with torch.no_grad():
            correct = 0
            for lo in range(0, len(test_x), 1000):
                pred = model(test_x[lo:lo + 1000]).argmax(dim=1)
                correct += int((pred == test_y[lo:lo + 1000]).sum())
        accuracies.append(correct / len(test_x))
    return {"epoch_s": times, "test_accuracy": accuracies, "last_loss": losses}


def worker(args):
    """Run one (framework, threads) pair and print its samples as one JSON line."""
    if args.framework == "torch":
        import torch

        torch.set_num_threads(args.threads)
    import pyrt

    pyrt.set_num_threads(args.threads)
    out = {}
    for task in args.only:
        if task == "xor":
            out[task] = {"pyrt": xor_pyrt, "torch": xor_torch, "numpy": xor_numpy}[
                args.framework](args)
        elif args.framework != "numpy":
            out[task] = (epoch_pyrt if args.framework == "pyrt" else epoch_torch)(args, task)
    print(json.dumps(out))


# ---- the driver ----------------------------------------------------------------------------


def _run_worker(args, framework, threads):
    cmd = [sys.executable, __file__, "--worker", framework, "--threads-one", str(threads),
           "--only", ",".join(args.only), "--repeat", str(args.repeat),
           "--runs", str(args.runs), "--xor-steps", str(args.xor_steps),
           "--train-limit", str(args.train_limit)]
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


def _markdown(results, args, machine):
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
                  (f"Median of {args.repeat} runs of {args.xor_steps} steps, microseconds per "
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
    for task, title in (("mlp", "Fashion-MNIST MLP 784-128-10"),
                        ("cnn", "Fashion-MNIST CNN (conv 8, pool, conv 16, pool, linear)")):
        if task not in args.only:
            continue
        lines += [f"## {title}: one epoch, batch 64, SGD lr 0.1 momentum 0.9", "",
                  (f"Median of {args.runs} epochs ({args.train_limit} images each) in "
                   "seconds; test accuracy after the epoch, mean over the runs (seeds "
                   f"0..{args.runs - 1})."), "",
                  "| threads | pyrt s | torch s | pyrt/torch | pyrt acc | torch acc |",
                  "|---:|---:|---:|---:|---:|---:|"]
        for t in args.threads:
            mp = _median(results, "pyrt", t, task, "epoch_s")
            mq = _median(results, "torch", t, task, "epoch_s")
            acc = {}
            for fw in ("pyrt", "torch"):
                r = results.get((fw, t), {}).get(task)
                acc[fw] = f"{statistics.mean(r['test_accuracy']):.2%}" if r else "-"
            sp = f"{mp:.3f}" if mp else "-"
            sq = f"{mq:.3f}" if mq else "-"
            lines.append(f"| {t} | {sp} | {sq} | {_fmt_ratio(mp, mq)} | {acc['pyrt']} | "
                         f"{acc['torch']} |")
        lines.append("")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    ap.add_argument("--only", default=",".join(TASKS), help="xor,mlp,cnn (default: all)")
    ap.add_argument("--repeat", type=int, default=5, help="XOR runs (default: 5)")
    ap.add_argument("--xor-steps", type=int, default=2000, help="steps per XOR run")
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
        if t not in TASKS:
            ap.error(f"--only: unknown task {t!r} (choose from {', '.join(TASKS)})")
    if args.framework:
        args.threads = args.threads_one
        worker(args)
        return
    args.argv = sys.argv[1:]
    if args.quick:
        args.repeat, args.runs, args.xor_steps, args.train_limit = 1, 1, 200, 3200
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
    }, indent=1))
    md = _markdown(results, args, machine)
    (out / "nn_train.md").write_text(md + "\n")
    print(md)


if __name__ == "__main__":
    main()
