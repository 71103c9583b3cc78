"""SGEMM: pyrt.ops.matmul beside NumPy (OpenBLAS) and torch.matmul, at equal thread counts.

The question is how close pyrt's packed, cache-blocked GEMM comes to (or how far it passes)
the BLAS everyone uses, on square products and on the products a small network trains with:

    square      64^3, 256^3, 1024^3
    MLP         784-128-10 at batch 64: forward X W^T, input gradient dY W, weight gradient
                dY^T X of each layer (trans flags as the layers use them)
    CNN         conv as GEMM at batch 64: conv1 (8 filters of 1x3x3 over 28x28) and conv2
                (16 filters of 8x3x3 over 14x14): forward W col, weight gradient dY col^T,
                column gradient W^T dY

In this process, each writing into a preallocated output:

    pyrt.ops.linalg.matmul(a, b, trans_a=, trans_b=, out=c)    pyrt.set_num_threads(t)
    np.matmul(op(a), op(b), out=c)                              threadpoolctl BLAS limit t
    torch.matmul(op(a), op(b), out=c)                           torch.set_num_threads(t)

torch is skipped, with a note, when it is not installed. Each sample times enough calls to
take about --sample-ms; variants are interleaved sample by sample, so drift on a shared
machine spreads over all of them, with a pause of PAUSE_S between samples so that a library's
spinning threads are gone before the next one runs, and an untimed quarter of a sample before
each sample. GFLOP/s = 2 m n k / median seconds per call. pyrt's results
are checked against float64 and for bitwise equality across thread counts.

    python benchmarks/kernels/bench_gemm.py                  # threads 1 and 2
    python benchmarks/kernels/bench_gemm.py --threads 1,2,4 --repeat 15
    python benchmarks/kernels/bench_gemm.py --quick --out /tmp/gemm   # smoke test

Writes kernels_gemm.json (machine, settings, every sample) and kernels_gemm.md (medians,
GFLOP/s, ratios) under --out (default benchmarks/results).
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
from threadpoolctl import ThreadpoolController

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import pyrt
from pyrt.ops.linalg import matmul, sgemm_kernel

# Between two timed samples: OpenBLAS's threads keep spinning for tens of milliseconds after a
# call (and libgomp's for a few), which would eat into the next library's time on 2 threads.
PAUSE_S = 0.1

# (group, name, m, n, k, trans_a, trans_b)
SHAPES = [
    ("square", "64^3", 64, 64, 64, False, False),
    ("square", "256^3", 256, 256, 256, False, False),
    ("square", "1024^3", 1024, 1024, 1024, False, False),
    ("MLP", "fc1 forward X W1^T", 64, 128, 784, False, True),
    ("MLP", "fc1 dX = dY W1", 64, 784, 128, False, False),
    ("MLP", "fc1 dW = dY^T X", 128, 784, 64, True, False),
    ("MLP", "fc2 forward H W2^T", 64, 10, 128, False, True),
    ("MLP", "fc2 dH = dY W2", 64, 128, 10, False, False),
    ("MLP", "fc2 dW = dY^T H", 10, 128, 64, True, False),
    ("CNN", "conv1 forward W col", 8, 64 * 28 * 28, 9, False, False),
    ("CNN", "conv1 dW = dY col^T", 8, 9, 64 * 28 * 28, False, True),
    ("CNN", "conv1 dcol = W^T dY", 9, 64 * 28 * 28, 8, True, False),
    ("CNN", "conv2 forward W col", 16, 64 * 14 * 14, 72, False, False),
    ("CNN", "conv2 dW = dY col^T", 16, 72, 64 * 14 * 14, False, True),
    ("CNN", "conv2 dcol = W^T dY", 72, 64 * 14 * 14, 16, True, False),
]
QUICK_SHAPES = {"64^3", "256^3", "fc1 forward X W1^T", "conv2 dW = dY col^T"}


def operands(rng, m, n, k, trans_a, trans_b):
    a = rng.standard_normal((k, m) if trans_a else (m, k)).astype(np.float32)
    b = rng.standard_normal((n, k) if trans_b else (k, n)).astype(np.float32)
    return a, b


def check(c, a, b, trans_a, trans_b):
    """c == op(a) @ op(b) within float32 rounding (a bound on the sum of |products|)."""
    a64 = (a.T if trans_a else a).astype(np.float64)
    b64 = (b.T if trans_b else b).astype(np.float64)
    k = a64.shape[1]
    err = np.abs(c - a64 @ b64)
    return bool(np.all(err <= 2 * (k + 2) * np.finfo(np.float32).eps
                       * (np.abs(a64) @ np.abs(b64)) + 1e-30))


def variants(a, b, c, trans_a, trans_b, threads, blas, torch):
    """(label, setup, run): setup() picks the thread count (untimed); run() does one product."""
    A, B = (a.T if trans_a else a), (b.T if trans_b else b)
    out = [("pyrt", lambda: pyrt.set_num_threads(threads),
            lambda: matmul(a, b, trans_a=trans_a, trans_b=trans_b, out=c))]
    if blas is not None:
        out.append(("numpy", lambda: blas.limit(limits=threads, user_api="blas"),
                    lambda: np.matmul(A, B, out=c)))
    if torch is not None:
        ta, tb, tc = torch.from_numpy(a), torch.from_numpy(b), torch.from_numpy(c)
        ta, tb = (ta.T if trans_a else ta), (tb.T if trans_b else tb)
        out.append(("torch", lambda: torch.set_num_threads(threads),
                    lambda: torch.matmul(ta, tb, out=tc)))
    return out


def calls_per_sample(run, sample_s):
    """How many calls make one sample of about sample_s seconds (at least 1)."""
    run()
    t0 = time.perf_counter()
    run()
    one = max(time.perf_counter() - t0, 1e-7)
    return max(1, int(sample_s / one))


def measure(shape, args, blas, torch, rng, notes, pyrt_results):
    _, name, m, n, k, trans_a, trans_b = shape
    a, b = operands(rng, m, n, k, trans_a, trans_b)
    c = np.empty((m, n), np.float32)
    samples = {}
    for threads in args.threads:
        vs = variants(a, b, c, trans_a, trans_b, threads, blas, torch)
        counts = {}
        for label, setup, run in vs:  # warm-up, and the calls per sample
            setup()
            counts[label] = calls_per_sample(run, args.sample_ms / 1e3)
            if not check(c, a, b, trans_a, trans_b):
                notes.append(f"{label} {name} threads={threads}: wrong result")
            if label == "pyrt":
                pyrt_results.setdefault(name, []).append(c.copy())
        for _ in range(args.repeat):
            for label, setup, run in vs:
                setup()
                reps = counts[label]
                # untimed: after the pause, bring caches and clocks back to a running state
                for _ in range(max(1, reps // 4)):
                    run()
                t0 = time.perf_counter()
                for _ in range(reps):
                    run()
                samples.setdefault((label, threads), []).append((time.perf_counter() - t0)
                                                                 / reps)
                time.sleep(PAUSE_S)
    return samples


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
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
            return proc.stdout.splitlines()[0]
        except (OSError, IndexError):
            return None

    blas = [i for i in ThreadpoolController().info() if i.get("user_api") == "blas"]
    return {
        "cpu_model": cpu,
        "affinity_cpus": len(os.sched_getaffinity(0)),
        "gcc": first_line(["gcc", "--version"]),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "blas": [f"{i.get('internal_api')} {i.get('version')} ({i.get('architecture')})"
                 for i in blas],
        "torch": torch.__version__ if torch is not None else None,
        "pyrt_sgemm_kernel": sgemm_kernel(),
        "git_commit": first_line(["git", "-C", str(ROOT), "rev-parse", "HEAD"]),
        "loadavg_start": os.getloadavg(),
    }


def summarise(shape, samples):
    group, name, m, n, k, trans_a, trans_b = shape
    rows = []
    for (label, threads), secs in samples.items():
        med = statistics.median(secs)
        rows.append({"group": group, "shape": name, "m": m, "n": n, "k": k,
                     "trans_a": trans_a, "trans_b": trans_b, "variant": label,
                     "threads": threads, "reps": len(secs), "median_s": med,
                     "gflop_per_s": 2e-9 * m * n * k / med})
    return rows


def markdown(info, settings, notes, rows):
    index = {(r["shape"], r["variant"], r["threads"]): r for r in rows}
    lines = [
        "# SGEMM: pyrt.ops.matmul against OpenBLAS (NumPy) and PyTorch",
        "",
        f"{settings['date']}; `{settings['command']}`",
        "",
        (f"Machine: {info['cpu_model']}, {info['affinity_cpus']} CPUs; {info['gcc']}; "
         f"NumPy {info['numpy']} with {', '.join(info['blas']) or 'no BLAS found'}; PyTorch "
         f"{info['torch'] or 'not installed'}; pyrt kernel {info['pyrt_sgemm_kernel']}; load "
         f"average at start {info['loadavg_start'][0]:.2f}, at end "
         f"{info['loadavg_end'][0]:.2f}."),
        "",
        f"GFLOP/s = 2mnk / median time per call, median of {settings['repeat']} samples of "
        f"about {settings['sample_ms']} ms each, variants interleaved"
        + (" (quick: a smoke test, not a measurement)" if settings["quick"] else "")
        + ". `÷ numpy` and `÷ torch` are pyrt's speed over theirs at the same thread count "
        "(above 1: pyrt is faster). Shapes are (m, n, k) of op(A) [m, k] times op(B) [k, n]; "
        "T marks a transposed operand.",
    ]
    if notes:
        lines += ["", "Notes:", ""] + [f"- {n}" for n in notes]
    lines += ["", ("| group | product | m, n, k | threads | pyrt GFLOP/s | numpy GFLOP/s | "
                   "torch GFLOP/s | ÷ numpy | ÷ torch |"),
              "|---|---|---|---|---|---|---|---|---|"]
    seen = []
    for r in rows:
        key = (r["shape"], r["threads"])
        if key in seen:
            continue
        seen.append(key)
    for shape, threads in seen:
        mine = index.get((shape, "pyrt", threads))
        np_row = index.get((shape, "numpy", threads))
        t_row = index.get((shape, "torch", threads))
        flags = ("T" if mine["trans_a"] else "") + "·" + ("T" if mine["trans_b"] else "")
        lines.append("| {} | {} | {}, {}, {} ({}) | {} | {:.1f} | {} | {} | {} | {} |".format(
            mine["group"], shape, mine["m"], mine["n"], mine["k"], flags, threads,
            mine["gflop_per_s"],
            f"{np_row['gflop_per_s']:.1f}" if np_row else "-",
            f"{t_row['gflop_per_s']:.1f}" if t_row else "-",
            f"{np_row['median_s'] / mine['median_s']:.2f}" if np_row else "-",
            f"{t_row['median_s'] / mine['median_s']:.2f}" if t_row else "-"))
    return "\n".join(lines) + "\n"


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    ap.add_argument("--repeat", type=int, default=7, help="timed samples per variant")
    ap.add_argument("--sample-ms", type=float, default=10.0, help="target length of a sample")
    ap.add_argument("--quick", action="store_true", help="4 shapes, 3 short samples")
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
    notes = [] if torch is not None else ["torch.matmul skipped: PyTorch is not installed."]
    controller = ThreadpoolController()
    blas = controller if any(i.get("user_api") == "blas" for i in controller.info()) else None
    if blas is None:
        notes.append("np.matmul skipped: threadpoolctl finds no BLAS to limit.")
    info = machine_info(torch)
    rng = np.random.default_rng(0)
    shapes = [s for s in SHAPES if not args.quick or s[1] in QUICK_SHAPES]

    rows, all_samples, pyrt_results = [], [], {}
    for shape in shapes:
        samples = measure(shape, args, blas, torch, rng, notes, pyrt_results)
        rows += summarise(shape, samples)
        all_samples += [{"shape": shape[1], "variant": v, "threads": t, "seconds": s}
                        for (v, t), s in samples.items()]
        print(f"done {shape[1]}", flush=True)
    for name, results in pyrt_results.items():
        if not all(np.array_equal(r, results[0]) for r in results):
            notes.append(f"pyrt {name}: results differ across thread counts")

    info["loadavg_end"] = os.getloadavg()
    settings = {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "command": " ".join(["python benchmarks/kernels/bench_gemm.py",
                             *(sys.argv[1:] if argv is None else argv)]),
        "threads": args.threads, "repeat": args.repeat, "sample_ms": args.sample_ms,
        "quick": args.quick,
    }
    report = {"machine": info, "settings": settings, "notes": notes, "summary": rows,
              "samples": all_samples}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "kernels_gemm.json").write_text(json.dumps(report, indent=1) + "\n")
    md = markdown(info, settings, notes, rows)
    (args.out / "kernels_gemm.md").write_text(md)
    print()
    print(md)
    print(f"wrote {args.out / 'kernels_gemm.json'} and {args.out / 'kernels_gemm.md'}")


if __name__ == "__main__":
    main()
