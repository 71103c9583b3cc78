"""Run the C benchmarks of pyrt's runtime beside their serial baselines and OpenMP/TBB peers.

Builds every program under benchmarks/runtime/ into benchmarks/build/runtime/, runs each at
the chosen thread counts `--repeat` times, and writes two files under `--out`:

    runtime.json  the machine, the settings and every raw measurement line of every run
    runtime.md    a table per workload: medians, per-task/iteration figures or GB/s, and ratios

Each program prints one JSON line. The repetitions are interleaved (every variant runs once,
then every variant again, ...) so that drift on a shared machine spreads over all variants.
Thread counts reach the runtimes through PYRT_NUM_THREADS, OMP_NUM_THREADS and
TBB_NUM_THREADS (read by the TBB programs, which pass it to tbb::global_control); OMP_PROC_BIND
and OMP_WAIT_POLICY are left as the environment has them.

    python benchmarks/run_runtime.py                       # 1 and all CPUs, 5 repeats
    python benchmarks/run_runtime.py --threads 1,2 --repeat 9
    python benchmarks/run_runtime.py --quick --repeat 1    # smaller sizes: a smoke test
"""

import json
import os
import platform
import statistics
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import benchmarks._harness as harness  # noqa: E402
from pyrt.bench import programs  # noqa: E402
from pyrt.bench.machine import tbb_version  # noqa: E402

BUILD = ROOT / "benchmarks" / "build" / "runtime"

# Problem sizes: (full, --quick).
SIZES = {
    "fib_n": (30, 25),
    "fib_reps": (3, 1),
    "loop64_calls": (1_000_000, 100_000),
    "loop1024_calls": (200_000, 20_000),
    "loop_max_seconds": (2.0, 0.3),
    "sum_n": (100_000_000, 20_000_000),
    "sum_reps": (10, 3),
    "idle_window": (1.0, 0.2),
}


@dataclass
class Variant:
    label: str
    program: str
    args: list
    threaded: bool = True  # False: runs on one thread only, whatever --threads says


@dataclass
class Workload:
    name: str
    title: str
    what: str  # one line for the markdown
    metric: str  # "fib", "loop", "sum" or "idle": how the table is made
    variants: list
    references: list = field(default_factory=list)  # labels that ratio columns divide by


def workloads(quick):
    size = {k: v[1] if quick else v[0] for k, v in SIZES.items()}
    n, reps = size["fib_n"], size["fib_reps"]
    fib = Workload(
        "fib", f"fib({n}), one task per call",
        f"Naive recursion with a task per call; tasks = calls = 2*fib({n + 1})-1.",
        "fib",
        [Variant("serial", "fib_serial", [n, reps], threaded=False),
         Variant("pyrt", "fib_pyrt", [n, reps]),
         Variant("omp task", "fib_omp", [n, reps]),
         Variant("tbb task_group", "fib_tbb", [n, reps])],
        ["serial", "pyrt"])
    loops = []
    for elems in (64, 1024):
        common = [elems, size[f"loop{elems}_calls"], size["loop_max_seconds"]]
        loops.append(Workload(
            f"loop{elems}", f"{elems}-element parallel_for",
            f"`y[i] = y[i]*a + x[i]` over {elems} floats, the whole loop called repeatedly; "
            "time per call. pyrt from the main thread or inside pyrt_run, grain 0 (auto) or 32.",
            "loop",
            [Variant("serial", "loop_serial", common, threaded=False),
             Variant("pyrt (main, auto)", "loop_pyrt", common + [0, "main"]),
             Variant("pyrt (main, grain 32)", "loop_pyrt", common + [32, "main"]),
             Variant("pyrt (run, auto)", "loop_pyrt", common + [0, "run"]),
             Variant("pyrt (run, grain 32)", "loop_pyrt", common + [32, "run"]),
             Variant("omp parallel for", "loop_omp", common),
             Variant("tbb (simple, grain 32)", "loop_tbb", common + ["simple"]),
             Variant("tbb (auto)", "loop_tbb", common + ["auto"])],
            ["serial", "pyrt (main, auto)"]))
    n, reps = size["sum_n"], size["sum_reps"]
    sum_ = Workload(
        "sum", f"sum of {n:.0e} floats".replace("e+0", "e"),
        f"Sum of {n} float32 ({4 * n / 1e6:.0f} MB), exact by construction and checked; "
        "GB/s = bytes read / median time.",
        "sum",
        [Variant("serial", "sum_serial", [n, reps], threaded=False),
         Variant("pyrt parallel_reduce", "sum_pyrt", [n, reps]),
         Variant("omp parallel for simd", "sum_omp", [n, reps]),
         Variant("stream read", "stream_read", [n, reps])],
        ["serial", "pyrt parallel_reduce", "stream read"])
    window = size["idle_window"]
    idle = Workload(
        "idle", "idle pool",
        f"Process CPU time over {window} s of wall time, starting 10 ms after parallel work; "
        "percent of one core.",
        "idle",
        [Variant("pyrt", "idle_pyrt", [window]),
         Variant("omp", "idle_omp", [window]),
         Variant("tbb", "idle_tbb", [window])])
    return [fib] + loops + [sum_, idle]


# ---- running --------------------------------------------------------------------------------

def run_one(program, args, threads, timeout):
    env = dict(os.environ)
    for var in ("PYRT_NUM_THREADS", "OMP_NUM_THREADS", "TBB_NUM_THREADS"):
        env[var] = str(threads)
    cmd = [str(BUILD / program), *map(str, args)]
    record = {"program": program, "argv": cmd[1:], "requested_threads": threads}
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        record["error"] = f"timed out after {timeout} s"
        return record
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        record["error"] = (f"exit status {proc.returncode}: "
                           f"{proc.stderr.strip()[-500:] or proc.stdout.strip()[-500:]}")
        return record
    record["result"] = json.loads(lines[-1])
    return record


def headline(metric, res):
    if metric == "fib":
        return f"{res['ns_per_task']:.2f} ns/task"
    if metric == "loop":
        return f"{res['ns_per_call']:.1f} ns/call"
    if metric == "sum":
        return f"{res['gb_per_s']:.2f} GB/s"
    return f"{res['cpu_percent']:.3f} % of a core"


# ---- reporting ------------------------------------------------------------------------------

def num(x):
    if x is None:
        return "-"
    if abs(x) >= 100:
        return f"{x:.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def summarise(wl, records):
    """Rows of the workload's table: median over repeats per (variant, threads)."""
    rows = []
    by_key = {}
    for rec in records:
        by_key.setdefault((rec["variant"], rec["requested_threads"]), []).append(rec)
    for (label, threads), recs in by_key.items():
        ok = [r["result"] for r in recs if "result" in r]
        row = {"variant": label, "threads": threads, "runs": len(recs), "ok_runs": len(ok)}
        if ok:
            key = "cpu_percent" if wl.metric == "idle" else "seconds"
            row["median"] = statistics.median(r[key] for r in ok)
            row["reported_threads"] = sorted({r["threads"] for r in ok})
            row["first"] = ok[0]
        rows.append(row)
    return rows


def reference_time(rows, label, threads):
    for row in rows:
        if row["variant"] == label and "median" in row:
            if row["threads"] == threads or label == "serial":
                return row["median"]
    return None


def table(wl, rows):
    refs = wl.references
    if wl.metric == "fib":
        head = ["variant", "threads", "median time (ms)", "ns per task"]
    elif wl.metric == "loop":
        head = ["variant", "threads", "ns per call", "ns per iteration"]
    elif wl.metric == "sum":
        head = ["variant", "threads", "median time (ms)", "GB/s"]
    else:
        head = ["variant", "threads", "% of one core", "workers started / asleep"]
    head += [f"÷ {r}" for r in refs]
    cells = []
    for row in rows:
        line = [row["variant"], row["threads"]]
        if "median" not in row:
            cells.append(line + ["failed", "-"] + ["-"] * len(refs))
            continue
        m, first = row["median"], row["first"]
        if wl.metric == "fib":
            line += [num(1e3 * m), num(1e9 * m / first["tasks"])]
        elif wl.metric == "loop":
            line += [num(1e9 * m), num(1e9 * m / first["n"])]
        elif wl.metric == "sum":
            line += [num(1e3 * m), num(4e-9 * first["n"] / m)]
        else:
            workers = (f"{first['workers_started']} / {first['workers_sleeping_after']}"
                       if "workers_started" in first else "-")
            line += [f"{m:.3f}", workers]
        for ref in refs:
            t = reference_time(rows, ref, row["threads"])
            line.append(f"{m / t:.2f}" if t else "-")
        cells.append(line)
    return harness.markdown_table(head, cells)


def runtime_machine_info():
    info = harness.machine_info({"nproc": os.cpu_count(),
                                 "gxx": harness.first_line(["g++", "--version"]),
                                 "tbb": tbb_version(), "kernel": platform.release()})
    info["git_dirty"] = bool(harness.first_line(["git", "-C", str(ROOT), "status", "--porcelain"]))
    info["env"] = {k: v for k, v in os.environ.items()
                   if k.startswith(("OMP_", "GOMP_", "KMP_", "TBB_", "PYRT_"))}
    return info


def markdown(report, sections):
    settings = report["settings"]
    method = (
        f"Median of {settings['repeat']} run{'s' if settings['repeat'] > 1 else ''} per row"
        + (" (quick sizes: a smoke test, not a measurement)" if settings["quick"] else "")
        + ". A `÷ X` column is this row's median time divided by X's at the same thread count "
        "(serial runs on one thread): below 1 is faster than X.")
    return harness.markdown_report(
        report, "pyrt runtime benchmarks", f"oneTBB {report['machine']['tbb'] or 'not found'}",
        method, [[f"## {wl.title}", "", wl.what, ""] + table(wl, rows) for wl, rows in sections])


# ---- main -----------------------------------------------------------------------------------

def parse_args(argv):
    cpus = len(os.sched_getaffinity(0))
    return harness.parse_options(
        argv, __doc__, threads=",".join(map(str, sorted({1, cpus}))),
        threads_help="comma-separated thread counts (default: 1 and the CPU count)",
        repeat=5, repeat_help="runs per variant (default 5)",
        own=[("--only", {"help": "comma-separated workloads: fib,loop64,loop1024,sum,idle "
                                 "(default all)"}),
             ("--timeout", {"type": float, "default": 300.0,
                            "help": "seconds per program run"})],
        quick_repeat=None, quick_help="small sizes, for a smoke test",
        out_help="output folder (default benchmarks/results)")


def main(argv=None):
    args = parse_args(argv)
    selected = workloads(args.quick)
    if args.only:
        names = set(args.only.split(","))
        unknown = names - {wl.name for wl in selected}
        if unknown:
            sys.exit(f"unknown workload(s): {', '.join(sorted(unknown))}")
        selected = [wl for wl in selected if wl.name in names]

    notes = []
    info = runtime_machine_info()
    built = programs.build({v.program for wl in selected for v in wl.variants}, notes, ROOT, BUILD)

    plan = [(wl, v, t) for wl in selected for v in wl.variants if v.program in built
            for t in (args.threads if v.threaded else [1])]
    records = {wl.name: [] for wl in selected}
    total = len(plan) * args.repeat
    step = 0
    for rep in range(args.repeat):
        for wl, v, t in plan:
            step += 1
            rec = run_one(v.program, v.args, t, args.timeout)
            rec.update(workload=wl.name, variant=v.label, repeat=rep)
            records[wl.name].append(rec)
            shown = headline(wl.metric, rec["result"]) if "result" in rec else rec["error"]
            print(f"[{step}/{total}] {wl.name} {v.label} threads={t}: {shown}", flush=True)
            if "result" in rec and rec["result"].get("threads") != t and v.threaded:
                note = (f"{wl.name} {v.label}: asked for {t} threads, the program reports "
                        f"{rec['result'].get('threads')}")
                if note not in notes:
                    notes.append(note)
            if "error" in rec:
                note = f"{wl.name} {v.label} threads={t}: {rec['error']}"
                if note not in notes:
                    notes.append(note)

    settings = harness.run_settings(__file__, argv, args, cflags=programs.cflags(ROOT),
                                    cxxflags=programs.cxxflags(ROOT))
    sections = [(wl, summarise(wl, records[wl.name])) for wl in selected]
    harness.write_report(args.out, "runtime", info, settings, notes, {
        "summary": {wl.name: [{k: v for k, v in row.items() if k != "first"} for row in rows]
                    for wl, rows in sections},
        "runs": records,
    }, lambda report: markdown(report, sections))


if __name__ == "__main__":
    main()
