"""conv2d and max_pool2d, forward and backward: pyrt.ops beside PyTorch at equal thread counts.

The workloads are the layers of the small Fashion-MNIST CNN at batch 64:

    conv1       x [64, 1, 28, 28], 8 filters of 1x3x3, padding 1
    conv2       x [64, 8, 14, 14], 16 filters of 8x3x3, padding 1
    pool1       max_pool2d 2x2 of [64, 8, 28, 28]
    pool2       max_pool2d 2x2 of [64, 16, 14, 14]

Each is timed as its forward call and its backward call (all three gradients of a
convolution; the input gradient of a pooling), in this process:

    pyrt    conv2d(x, w, b, padding=1, out=y)          conv2d_backward(x, w, dy, padding=1)
            max_pool2d(x, 2, return_indices=True)      max_pool2d_backward(dy, ind, shape, 2)
    torch   aten.convolution(x, w, b, ...)             aten.convolution_backward(dy, x, w, ...)
            aten.max_pool2d_with_indices(x, 2, 2)      aten.max_pool2d_with_indices_backward
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

import pyrt  # noqa: E402
from pyrt.ops.conv import conv2d, conv2d_backward  # noqa: E402
from pyrt.ops.pool import max_pool2d, max_pool2d_backward  # noqa: E402

PAUSE_S = 0.005

# (name, kind, input shape, filters or pooling window)
WORKLOADS = [
    ("conv1 1->8 3x3 pad 1, 28x28", "conv", (64, 1, 28, 28), 8),
    ("conv2 8->16 3x3 pad 1, 14x14", "conv", (64, 8, 14, 14), 16),
    ("max_pool2d 2x2 [64, 8, 28, 28]", "pool", (64, 8, 28, 28), 2),
    ("max_pool2d 2x2 [64, 16, 14, 14]", "pool", (64, 16, 14, 14), 2),
]


def conv_variants(rng, shape, filters, torch):
    """{variant: (forward, backward, results)} for a 3x3 convolution with padding 1."""
    x = rng.standard_normal(shape).astype(np.float32)
    w = (rng.standard_normal((filters, shape[1], 3, 3)) / 3).astype(np.float32)
    b = rng.standard_normal(filters).astype(np.float32)
    y = np.empty((shape[0], filters, shape[2], shape[3]), np.float32)
    dy = rng.standard_normal(y.shape).astype(np.float32)
    out = {"pyrt": (lambda: conv2d(x, w, b, padding=1, out=y),
                    lambda: conv2d_backward(x, w, dy, padding=1),
                    lambda: (conv2d(x, w, b, padding=1), *conv2d_backward(x, w, dy, padding=1)))}
    if torch is not None:
        aten = torch.ops.aten
        xt, wt, bt, dyt = (torch.from_numpy(a) for a in (x, w, b, dy))
        args = ([1, 1], [1, 1], [1, 1], False, [0, 0], 1)

        def t_fwd():
            return aten.convolution(xt, wt, bt, *args)

        def t_bwd():
            return aten.convolution_backward(dyt, xt, wt, [filters], *args, [True, True, True])

        out["torch"] = (t_fwd, t_bwd, lambda: tuple(t.numpy() for t in (t_fwd(), *t_bwd())))
    return out


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


def calls_per_sample(run, sample_s):
    """How many calls make one sample of about sample_s seconds (at least 1)."""
    run()
    t0 = time.perf_counter()
    run()
    one = max(time.perf_counter() - t0, 1e-7)
    return max(1, int(sample_s / one))


def set_threads(label, threads, torch):
    if label == "pyrt":
        pyrt.set_num_threads(threads)
    else:
        torch.set_num_threads(threads)


def measure(variants, args, torch):
    """{(variant, pass, threads): [seconds per call, one per sample]}."""
    samples = {}
    for threads in args.threads:
        runs = [(label, name, fn) for label, (fwd, bwd, _) in variants.items()
                for name, fn in (("forward", fwd), ("backward", bwd))]
        counts = {}
        for label, name, fn in runs:
            set_threads(label, threads, torch)
            counts[label, name] = calls_per_sample(fn, args.sample_ms / 1e3)
        for _ in range(args.repeat):
            for label, name, fn in runs:
                set_threads(label, threads, torch)
                reps = counts[label, name]
                t0 = time.perf_counter()
                for _ in range(reps):
                    fn()
                samples.setdefault((label, name, threads), []).append(
                    (time.perf_counter() - t0) / reps)
                time.sleep(PAUSE_S)
    return samples


def check(name, variants, args, torch, notes):
    """pyrt against torch, and pyrt's own results across thread counts."""
    mine = []
    for threads in args.threads:
        pyrt.set_num_threads(threads)
        mine.append(variants["pyrt"][2]())
    if not all(all(np.array_equal(a, b) for a, b in zip(mine[0], m)) for m in mine[1:]):
        notes.append(f"pyrt {name}: results differ across thread counts")
    if torch is not None:
        theirs = variants["torch"][2]()
        for a, b in zip(mine[0], theirs):
            if not np.allclose(a, b, rtol=1e-4, atol=1e-4 * (1 + np.abs(b).max())):
                notes.append(f"pyrt {name}: differs from torch")


def machine_info(torch):
    cpu = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass

    def first_line(cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True).stdout.splitlines()[0]
        except (OSError, IndexError):
            return None

    return {
        "cpu_model": cpu,
        "affinity_cpus": len(os.sched_getaffinity(0)),
        "gcc": first_line(["gcc", "--version"]),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "torch": torch.__version__ if torch is not None else None,
        "git_commit": first_line(["git", "-C", str(ROOT), "rev-parse", "HEAD"]),
        "loadavg_start": os.getloadavg(),
    }


def summarise(name, samples):
    rows = []
    for (label, pass_, threads), secs in samples.items():
        rows.append({"workload": name, "variant": label, "pass": pass_, "threads": threads,
                     "reps": len(secs), "median_s": statistics.median(secs)})
    return rows


def micros(seconds):
    return f"{seconds * 1e6:.0f}" if seconds is not None else "-"


def markdown(info, settings, notes, rows):
    med = {(r["workload"], r["variant"], r["pass"], r["threads"]): r["median_s"] for r in rows}
    lines = [
        "# conv2d and max_pool2d: pyrt.ops against PyTorch",
        "",
        f"{settings['date']}; `{settings['command']}`",
        "",
        f"Machine: {info['cpu_model']}, {info['affinity_cpus']} CPUs; {info['gcc']}; "
        f"NumPy {info['numpy']}; PyTorch {info['torch'] or 'not installed'}; load average at "
        f"start {info['loadavg_start'][0]:.2f}, at end {info['loadavg_end'][0]:.2f}.",
        "",
        f"Median time per call in microseconds, of {settings['repeat']} samples of about "
        f"{settings['sample_ms']} ms each, variants interleaved"
        + (" (quick: a smoke test, not a measurement)" if settings["quick"] else "")
        + ". Backward is all three gradients of a convolution, the input gradient of a "
        "pooling. `pyrt/torch` is pyrt's time over torch's at the same thread count (below 1: "
        "pyrt is faster); the target is 0.8 or less.",
    ]
    if notes:
        lines += ["", "Notes:", ""] + [f"- {n}" for n in notes]
    lines += ["", "| workload | threads | pyrt fwd | torch fwd | pyrt bwd | torch bwd | "
              "pyrt fwd+bwd | torch fwd+bwd | pyrt/torch |",
              "|---|---|---|---|---|---|---|---|---|"]
    for name, *_ in WORKLOADS:
        for threads in settings["threads"]:
            pf, pb = med.get((name, "pyrt", "forward", threads)), med.get(
                (name, "pyrt", "backward", threads))
            if pf is None:
                continue
            tf, tb = med.get((name, "torch", "forward", threads)), med.get(
                (name, "torch", "backward", threads))
            total_t = tf + tb if tf is not None else None
            lines.append(f"| {name} | {threads} | {micros(pf)} | {micros(tf)} | {micros(pb)} | "
                         f"{micros(tb)} | {micros(pf + pb)} | {micros(total_t)} | "
                         + (f"{(pf + pb) / total_t:.2f}" if total_t else "-") + " |")
    return "\n".join(lines) + "\n"


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    ap.add_argument("--repeat", type=int, default=15, help="timed samples per variant")
    ap.add_argument("--sample-ms", type=float, default=20.0, help="target length of a sample")
    ap.add_argument("--quick", action="store_true", help="3 short samples")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = ap.parse_args(argv)
    args.threads = [int(t) for t in args.threads.split(",") if t.strip()]
    if args.quick:
        args.repeat, args.sample_ms = 3, 2.0
    if not args.threads or min(args.threads) < 1 or args.repeat < 1 or args.sample_ms <= 0:
        ap.error("--threads, --repeat and --sample-ms must be positive")
    return args


def main(argv=None):
    args = parse_args(argv)
    try:
        import torch
    except ImportError:
        torch = None
    notes = [] if torch is not None else ["torch skipped: PyTorch is not installed."]
    info = machine_info(torch)
    rng = np.random.default_rng(0)

    rows, all_samples = [], []
    for name, kind, shape, size in WORKLOADS:
        make = conv_variants if kind == "conv" else pool_variants
        variants = make(rng, shape, size, torch)
        check(name, variants, args, torch, notes)
        samples = measure(variants, args, torch)
        rows += summarise(name, samples)
        all_samples += [{"workload": name, "variant": v, "pass": p, "threads": t, "seconds": s}
                        for (v, p, t), s in samples.items()]
        print(f"done {name}", flush=True)

    info["loadavg_end"] = os.getloadavg()
    settings = {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "command": " ".join(["python benchmarks/kernels/bench_conv.py",
                             *(sys.argv[1:] if argv is None else argv)]),
        "threads": args.threads, "repeat": args.repeat, "sample_ms": args.sample_ms,
        "quick": args.quick,
    }
    report = {"machine": info, "settings": settings, "notes": notes, "summary": rows,
              "samples": all_samples}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "kernels_conv.json").write_text(json.dumps(report, indent=1) + "\n")
    md = markdown(info, settings, notes, rows)
    (args.out / "kernels_conv.md").write_text(md)
    print()
    print(md)
    print(f"wrote {args.out / 'kernels_conv.json'} and {args.out / 'kernels_conv.md'}")


if __name__ == "__main__":
    main()
