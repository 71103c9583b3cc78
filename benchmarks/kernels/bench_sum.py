"""Sum of 1e8 float32: pyrt.ops.sum beside a STREAM-style read, np.sum and torch.sum.

The question is whether pyrt's deterministic reduction runs at memory bandwidth. The ceiling
is benchmarks/runtime/sum/stream_read.c, compiled here with `gcc -O3 -march=native -fopenmp`
and run in its own process (OpenMP threads, STREAM's first-touch placement). In this process:
pyrt.ops.sum at each thread count (pyrt.num_threads), np.sum (always one thread: NumPy's sum
uses no BLAS) and torch.sum (torch.set_num_threads) when PyTorch is installed.

The data are those of stream_read.c (multiples of 1/512 in (-0.5, 0.5) from a hash of the
index), so every float sum is exact in any order: each result is checked against the exact
sum, and pyrt's must be bitwise identical at every thread count. Repetitions are interleaved
across variants, with a short pause between runs so that one library's spinning threads do not
eat into the next one's time. GB/s = 4n bytes / median seconds.

    python benchmarks/kernels/bench_sum.py                    # n = 1e8, threads 1 and 2
    python benchmarks/kernels/bench_sum.py --threads 1,2,4 --repeat 21
    python benchmarks/kernels/bench_sum.py --quick --out /tmp/sum   # smoke test

Writes kernels_sum.json (machine, settings, every sample) and kernels_sum.md (medians, GB/s,
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
from pyrt.ops.reduction import sum as pyrt_sum  # noqa: E402

STREAM_SRC = ROOT / "benchmarks" / "runtime" / "sum" / "stream_read.c"
BUILD = ROOT / "benchmarks" / "build" / "kernels"
PAUSE_S = 0.02


def sum_values(n, chunk=1 << 24):
    """x[i] = sum_value(i) of benchmarks/runtime/sum/sum_common.h, in chunks."""
    x = np.empty(n, np.float32)
    for start in range(0, n, chunk):
        h = np.arange(start, min(n, start + chunk), dtype=np.uint32)
        h *= np.uint32(0x9E3779B1)
        h ^= h >> np.uint32(15)
        h *= np.uint32(0x85EBCA77)
        h ^= h >> np.uint32(13)
        x[start:start + len(h)] = ((2 * (h & 255)).astype(np.float32) - 255.0) / 512.0
    return x


# ---- the STREAM read, in its own process ----------------------------------------------------


def build_stream(notes):
    BUILD.mkdir(parents=True, exist_ok=True)
    exe = BUILD / "stream_read"
    cmd = ["gcc", "-O3", "-march=native", "-fopenmp", "-std=gnu11",
           f"-I{STREAM_SRC.parent.parent}", str(STREAM_SRC), "-o", str(exe)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        notes.append(f"STREAM read skipped: {' '.join(cmd)} failed: {proc.stderr.strip()[:300]}")
        return None
    return exe


def run_stream(exe, n, reps, threads):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    proc = subprocess.run([str(exe), str(n), str(reps)], env=env, capture_output=True,
                          text=True, timeout=600)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"stream_read failed: {proc.stderr.strip()[-300:]}")
    return json.loads(lines[-1])


# ---- in-process variants --------------------------------------------------------------------


def timed(fn):
    t0 = time.perf_counter()
    result = fn()
    return time.perf_counter() - t0, result


def in_process_variants(x, threads_list, torch):
    """(label, threads, setup, run): setup() picks the thread count (untimed), run() does one
    sum and returns its value."""
    variants = []
    for t in threads_list:
        variants.append(("pyrt.ops.sum", t, lambda t=t: pyrt.set_num_threads(t),
                         lambda: pyrt_sum(x)))
    variants.append(("np.sum", 1, lambda: None, lambda: np.sum(x)))
    if torch is not None:
        tx = torch.from_numpy(x)
        for t in threads_list:
            variants.append(("torch.sum", t, lambda t=t: torch.set_num_threads(t),
                             lambda: torch.sum(tx).item()))
    return variants


# ---- report ---------------------------------------------------------------------------------


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


def summarise(samples, n):
    """Rows per (variant, threads): median seconds and GB/s."""
    rows = []
    for (label, threads), secs in samples.items():
        med = statistics.median(secs)
        rows.append({"variant": label, "threads": threads, "reps": len(secs),
                     "median_s": med, "gb_per_s": 4e-9 * n / med})
    return rows


def markdown(info, settings, notes, rows):
    def find(label, threads):
        for r in rows:
            if r["variant"] == label and r["threads"] == threads:
                return r
        return None

    lines = [
        "# Sum of float32: pyrt.ops.sum against memory bandwidth",
        "",
        f"{settings['date']}; `{settings['command']}`",
        "",
        f"Machine: {info['cpu_model']}, {info['affinity_cpus']} CPUs; {info['gcc']}; "
        f"NumPy {info['numpy']}; PyTorch {info['torch'] or 'not installed'}; load average at "
        f"start {info['loadavg_start'][0]:.2f}.",
        "",
        f"n = {settings['n']} float32 ({4 * settings['n'] / 1e6:.0f} MB), median of "
        f"{settings['repeat']} timed passes after a warm-up"
        + (" (quick sizes: a smoke test, not a measurement)" if settings["quick"] else "")
        + ". `÷ STREAM` is this row's GB/s over the STREAM read's at the same thread count "
        "(the target for pyrt is >= 0.9); `time ÷ pyrt` is this row's median time over "
        "pyrt.ops.sum's at the same thread count (np.sum: over pyrt at 1 thread).",
    ]
    if notes:
        lines += ["", "Notes:", ""] + [f"- {n}" for n in notes]
    lines += ["", "| variant | threads | median time (ms) | GB/s | ÷ STREAM | time ÷ pyrt |",
              "|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (r["threads"], r["variant"])):
        stream = find("STREAM read", r["threads"])
        mine = find("pyrt.ops.sum", r["threads"])
        lines.append("| {} | {} | {:.2f} | {:.2f} | {} | {} |".format(
            r["variant"], r["threads"], 1e3 * r["median_s"], r["gb_per_s"],
            f"{r['gb_per_s'] / stream['gb_per_s']:.2f}" if stream else "-",
            f"{r['median_s'] / mine['median_s']:.2f}" if mine else "-"))
    return "\n".join(lines) + "\n"


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    ap.add_argument("--n", type=float, default=1e8, help="number of floats (default 1e8)")
    ap.add_argument("--repeat", type=int, default=10, help="timed passes per variant")
    ap.add_argument("--quick", action="store_true", help="n = 2e6, 3 passes: a smoke test")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = ap.parse_args(argv)
    args.threads = [int(t) for t in args.threads.split(",") if t.strip()]
    if args.quick:
        args.n, args.repeat = 2e6, 3
    args.n = int(args.n)
    if not args.threads or min(args.threads) < 1 or args.repeat < 1 or args.n < 1:
        ap.error("--threads, --repeat and --n must be positive")
    return args


def main(argv=None):
    args = parse_args(argv)
    try:
        import torch
    except ImportError:
        torch = None
    notes = [] if torch is not None else ["torch.sum skipped: PyTorch is not installed."]
    info = machine_info(torch)
    n = args.n
    x = sum_values(n)
    exact = float(np.sum(x, dtype=np.float64))  # exact: every partial sum is a float

    samples = {}
    results = {}
    variants = in_process_variants(x, args.threads, torch)
    for label, t, setup, run in variants:  # warm-up: the pool, the pages, torch's threads
        setup()
        results[(label, t)] = [float(run())]
        time.sleep(PAUSE_S)
    for rep in range(args.repeat):
        for label, t, setup, run in variants:
            setup()
            run()  # untimed: every runtime's threads awake, as in STREAM's back-to-back loop
            seconds, value = timed(run)
            samples.setdefault((label, t), []).append(seconds)
            results[(label, t)].append(float(value))
            time.sleep(PAUSE_S)
        print(f"pass {rep + 1}/{args.repeat}", flush=True)
    if torch is not None:
        torch.set_num_threads(max(args.threads))

    for (label, t), values in results.items():
        if any(v != exact for v in values):
            notes.append(f"{label} threads={t}: result {values[0]!r} differs from the exact "
                         f"sum {exact!r}")
    pyrt_bits = {np.float32(v).tobytes() for (label, _), vs in results.items()
                 if label == "pyrt.ops.sum" for v in vs}
    deterministic = len(pyrt_bits) == 1
    if not deterministic:
        notes.append("pyrt.ops.sum is not bitwise identical across thread counts")

    stream_runs = {}
    exe = build_stream(notes)
    if exe is not None:
        for t in args.threads:
            res = run_stream(exe, n, args.repeat, t)
            stream_runs[t] = res
            samples[("STREAM read", t)] = res["samples"]
            if not res["ok"]:
                notes.append(f"STREAM read threads={t}: its sum is not exact")

    rows = summarise(samples, n)
    settings = {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "command": " ".join(["python benchmarks/kernels/bench_sum.py",
                             *(sys.argv[1:] if argv is None else argv)]),
        "n": n, "threads": args.threads, "repeat": args.repeat, "quick": args.quick,
        "stream_flags": "-O3 -march=native -fopenmp",
    }
    info["loadavg_end"] = os.getloadavg()
    report = {
        "machine": info, "settings": settings, "notes": notes,
        "exact_sum": exact, "pyrt_bitwise_identical_across_threads": deterministic,
        "summary": rows,
        "samples": [{"variant": k[0], "threads": k[1], "seconds": v}
                    for k, v in samples.items()],
        "stream_runs": stream_runs,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "kernels_sum.json").write_text(json.dumps(report, indent=1) + "\n")
    md = markdown(info, settings, notes, rows)
    (args.out / "kernels_sum.md").write_text(md)
    print()
    print(md)
    print(f"wrote {args.out / 'kernels_sum.json'} and {args.out / 'kernels_sum.md'}")


if __name__ == "__main__":
    main()
