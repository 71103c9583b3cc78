"""a * b + c on 1e7 float32: pyrt.ops.addcmul beside a STREAM triad, NumPy, numexpr and torch.

The question is whether pyrt's elementwise kernels run at memory bandwidth. The ceiling is
benchmarks/kernels/stream_triad.c (out[i] = a[i] * b[i] + c[i]), compiled here with
`gcc -O3 -march=native -fopenmp` and run in its own process (OMP_NUM_THREADS, STREAM's
first-touch placement). In this process, each writing into a preallocated output:

    pyrt.ops.addcmul(c, a, b, out=o)                      pyrt.set_num_threads(t)
    np.multiply(a, b, out=o); np.add(o, c, out=o)          one thread, two passes
    numexpr.evaluate("a*b+c", out=o)                       numexpr.set_num_threads(t)
    torch.addcmul(c, a, b, out=o)                          torch.set_num_threads(t)

numexpr and torch are skipped, with a note, when they are not installed. Every variant's
result is checked against float64 (within two roundings). Repetitions are interleaved across
variants, with a short pause between runs so that one library's spinning threads do not eat
into the next one's time. GB/s = 16 n bytes (three arrays read, one written) / median seconds,
for everyone, NumPy's two passes included.

    python benchmarks/kernels/bench_elementwise.py                 # n = 1e7, threads 1 and 2
    python benchmarks/kernels/bench_elementwise.py --threads 1,2,4 --repeat 31
    python benchmarks/kernels/bench_elementwise.py --quick --out /tmp/ew   # smoke test

Writes kernels_elementwise.json (machine, settings, every sample) and kernels_elementwise.md
(medians, GB/s, ratios) under --out (default benchmarks/results).
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
from pyrt.ops.elementwise import addcmul  # noqa: E402

TRIAD_SRC = ROOT / "benchmarks" / "kernels" / "stream_triad.c"
BUILD = ROOT / "benchmarks" / "build" / "kernels"
PAUSE_S = 0.02
BYTES_PER_ELEMENT = 16


# ---- the STREAM triad, in its own process ---------------------------------------------------


def build_triad(notes):
    BUILD.mkdir(parents=True, exist_ok=True)
    exe = BUILD / "stream_triad"
    cmd = ["gcc", "-O3", "-march=native", "-fopenmp", "-std=gnu11", str(TRIAD_SRC),
           "-o", str(exe)]
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True)
    if proc.returncode != 0:
        notes.append(f"STREAM triad skipped: {' '.join(cmd)} failed: "
                     f"{proc.stderr.strip()[:300]}")
        return None
    return exe


def run_triad(exe, n, reps, threads):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    proc = subprocess.run([str(exe), str(n), str(reps)], check=False, env=env,
                          capture_output=True, text=True, timeout=600)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        raise RuntimeError(f"stream_triad failed: {proc.stderr.strip()[-300:]}")
    return json.loads(lines[-1])


# ---- in-process variants --------------------------------------------------------------------


def in_process_variants(a, b, c, threads_list, numexpr, torch):
    """(label, threads, setup, run, out): setup() picks the thread count (untimed), run()
    computes a * b + c into out."""
    variants = []
    for t in threads_list:
        o = np.empty_like(a)
        variants.append(("pyrt.ops.addcmul", t, lambda t=t: pyrt.set_num_threads(t),
                         lambda o=o: addcmul(c, a, b, out=o), o))

    o_np = np.empty_like(a)

    def numpy_two_passes():
        np.multiply(a, b, out=o_np)
        np.add(o_np, c, out=o_np)

    variants.append(("NumPy multiply+add", 1, lambda: None, numpy_two_passes, o_np))
    if numexpr is not None:
        for t in threads_list:
            o = np.empty_like(a)
            variants.append(("numexpr", t, lambda t=t: numexpr.set_num_threads(t),
                             lambda o=o: numexpr.evaluate("a*b+c", local_dict={
                                 "a": a, "b": b, "c": c}, out=o), o))
    if torch is not None:
        ta, tb, tc = (torch.from_numpy(x) for x in (a, b, c))
        for t in threads_list:
            o = np.empty_like(a)
            to = torch.from_numpy(o)
            variants.append(("torch.addcmul", t, lambda t=t: torch.set_num_threads(t),
                             lambda to=to: torch.addcmul(tc, ta, tb, out=to), o))
    return variants


def check(out, ref, a, b, c):
    """Within two float32 roundings of the float64 value (fused or not)."""
    eps = float(np.finfo(np.float32).eps)
    bound = 2 * eps * (np.abs(a * b).astype(np.float64) + np.abs(c)) + 1e-38
    return bool(np.all(np.abs(out.astype(np.float64) - ref) <= bound))


# ---- report ---------------------------------------------------------------------------------


def machine_info(numexpr, torch):
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
            return subprocess.run(cmd, check=False, capture_output=True,
                                  text=True).stdout.splitlines()[0]
        except (OSError, IndexError):
            return None

    return {
        "cpu_model": cpu,
        "affinity_cpus": len(os.sched_getaffinity(0)),
        "gcc": first_line(["gcc", "--version"]),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "numexpr": numexpr.__version__ if numexpr is not None else None,
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
                     "median_s": med, "gb_per_s": BYTES_PER_ELEMENT * 1e-9 * n / med})
    return rows


def markdown(info, settings, notes, rows):
    def find(label, threads):
        for r in rows:
            if r["variant"] == label and r["threads"] == threads:
                return r
        return None

    lines = [
        "# a * b + c on float32: pyrt.ops.addcmul against memory bandwidth",
        "",
        f"{settings['date']}; `{settings['command']}`",
        "",
        (f"Machine: {info['cpu_model']}, {info['affinity_cpus']} CPUs; {info['gcc']}; "
         f"NumPy {info['numpy']}; numexpr {info['numexpr'] or 'not installed'}; "
         f"PyTorch {info['torch'] or 'not installed'}; load average at start "
         f"{info['loadavg_start'][0]:.2f}."),
        "",
        f"n = {settings['n']} float32 per array (4 arrays of {4 * settings['n'] / 1e6:.0f} "
        f"MB), median of {settings['repeat']} timed passes after a warm-up"
        + (" (quick sizes: a smoke test, not a measurement)" if settings["quick"] else "")
        + ". GB/s counts 16 bytes per element for every variant. `÷ STREAM` is this row's "
        "GB/s over the STREAM triad's at the same thread count (the target for pyrt is "
        ">= 0.9); `time ÷ pyrt` is this row's median time over pyrt.ops.addcmul's at the same "
        "thread count (NumPy: over pyrt at 1 thread).",
    ]
    if notes:
        lines += ["", "Notes:", ""] + [f"- {n}" for n in notes]
    lines += ["", "| variant | threads | median time (ms) | GB/s | ÷ STREAM | time ÷ pyrt |",
              "|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (r["threads"], r["variant"])):
        stream = find("STREAM triad", r["threads"])
        mine = find("pyrt.ops.addcmul", r["threads"])
        lines.append("| {} | {} | {:.3f} | {:.2f} | {} | {} |".format(
            r["variant"], r["threads"], 1e3 * r["median_s"], r["gb_per_s"],
            f"{r['gb_per_s'] / stream['gb_per_s']:.2f}" if stream else "-",
            f"{r['median_s'] / mine['median_s']:.2f}" if mine else "-"))
    return "\n".join(lines) + "\n"


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    ap.add_argument("--n", type=float, default=1e7, help="floats per array (default 1e7)")
    ap.add_argument("--repeat", type=int, default=21, help="timed passes per variant")
    ap.add_argument("--quick", action="store_true", help="n = 2e5, 3 passes: a smoke test")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = ap.parse_args(argv)
    args.threads = [int(t) for t in args.threads.split(",") if t.strip()]
    if args.quick:
        args.n, args.repeat = 2e5, 3
    args.n = int(args.n)
    if not args.threads or min(args.threads) < 1 or args.repeat < 1 or args.n < 1:
        ap.error("--threads, --repeat and --n must be positive")
    return args


def main(argv=None):
    args = parse_args(argv)
    notes = []
    try:
        import numexpr
    except ImportError:
        numexpr = None
        notes.append("numexpr skipped: it is not installed.")
    try:
        import torch
    except ImportError:
        torch = None
        notes.append("torch.addcmul skipped: PyTorch is not installed.")
    info = machine_info(numexpr, torch)
    n = args.n
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(n, dtype=np.float32) for _ in range(3))
    ref = a.astype(np.float64) * b + c

    samples = {}
    variants = in_process_variants(a, b, c, args.threads, numexpr, torch)
    for label, t, setup, run, out in variants:  # warm-up: pools, pages, first-call costs
        setup()
        run()
        if not check(out, ref, a, b, c):
            notes.append(f"{label} threads={t}: result differs from a * b + c in float64")
        time.sleep(PAUSE_S)
    for rep in range(args.repeat):
        for label, t, setup, run, _ in variants:
            setup()
            run()  # untimed: every runtime's threads awake, as in STREAM's back-to-back loop
            t0 = time.perf_counter()
            run()
            samples.setdefault((label, t), []).append(time.perf_counter() - t0)
            time.sleep(PAUSE_S)
        print(f"pass {rep + 1}/{args.repeat}", flush=True)
    if torch is not None:
        torch.set_num_threads(max(args.threads))

    triad_runs = {}
    exe = build_triad(notes)
    if exe is not None:
        for t in args.threads:
            res = run_triad(exe, n, args.repeat, t)
            triad_runs[t] = res
            samples[("STREAM triad", t)] = res["samples"]
            if not res["ok"]:
                notes.append(f"STREAM triad threads={t}: its result did not check")

    rows = summarise(samples, n)
    settings = {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "command": " ".join(["python benchmarks/kernels/bench_elementwise.py",
                             *(sys.argv[1:] if argv is None else argv)]),
        "n": n, "threads": args.threads, "repeat": args.repeat, "quick": args.quick,
        "bytes_per_element": BYTES_PER_ELEMENT,
        "stream_flags": "-O3 -march=native -fopenmp",
    }
    info["loadavg_end"] = os.getloadavg()
    pyrt_vs_stream = {}
    for t in args.threads:
        mine = [r for r in rows if r["variant"] == "pyrt.ops.addcmul" and r["threads"] == t]
        stream = [r for r in rows if r["variant"] == "STREAM triad" and r["threads"] == t]
        if mine and stream:
            pyrt_vs_stream[t] = mine[0]["gb_per_s"] / stream[0]["gb_per_s"]
    report = {
        "machine": info, "settings": settings, "notes": notes,
        "pyrt_over_stream": pyrt_vs_stream,
        "summary": rows,
        "samples": [{"variant": k[0], "threads": k[1], "seconds": v}
                    for k, v in samples.items()],
        "stream_runs": triad_runs,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "kernels_elementwise.json").write_text(json.dumps(report, indent=1) + "\n")
    md = markdown(info, settings, notes, rows)
    (args.out / "kernels_elementwise.md").write_text(md)
    print()
    print(md)
    print(f"wrote {args.out / 'kernels_elementwise.json'} and "
          f"{args.out / 'kernels_elementwise.md'}")


if __name__ == "__main__":
    main()
