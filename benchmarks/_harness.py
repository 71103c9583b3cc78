"""What the benchmark scripts share: options, machine facts, timing passes and report files.

Each script under benchmarks/ keeps what is its own (workloads, variants, result checks,
tables) and takes the rest from here. The scripts are run as files from the repository root
(`python benchmarks/kernels/bench_sum.py`), not as a package: each puts the repository root on
sys.path, as it does for pyrt, and imports `benchmarks._harness`.

Every script writes <out>/<name>.json (machine, settings, notes, then its own results: raw
samples included) and <out>/<name>.md (a header in the same form for all, then its tables).
"""

import argparse
import datetime
import importlib
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

# Shared with `python -m pyrt bench scaling`, which lives in the package: machine facts,
# timing passes, the C programs' builds, thread lists and markdown tables.
from pyrt.bench import machine
from pyrt.bench.machine import cpu_model, first_line, version  # noqa: F401
from pyrt.bench.options import parse_thread_list
from pyrt.bench.programs import STREAM_FLAGS, build_stream  # noqa: F401
from pyrt.bench.report import markdown_table
from pyrt.bench.timing import calls_per_sample, timed_passes  # noqa: F401

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
KERNELS_BUILD = ROOT / "benchmarks" / "build" / "kernels"

# ---- command line ---------------------------------------------------------------------------


def positive_int(text):
    """argparse type: a whole number >= 1, written as an integer or as a float ("1e8")."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (value >= 1 and value.is_integer()):
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return int(value)


def positive_float(text):
    """argparse type: a number > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not positive")
    return value


def short_count(n):
    """A count as its help text writes it: 1e8 for 100000000, 2e5 for 200000, else 1234."""
    digits = str(n).rstrip("0")
    zeros = len(str(n)) - len(digits)
    return f"{digits}e{zeros}" if len(digits) == 1 and zeros >= 3 else str(n)


def parse_options(argv, doc, *, repeat, repeat_help=None, n=None, n_help=None, quick_n=None,
                  sample_ms=None, own=(), quick_help=None, quick_repeat=3, threads="1,2",
                  threads_help="comma-separated thread counts", out_help=None):
    """Parse a benchmark's command line (argv None: sys.argv[1:]) into an argparse namespace.

    The options, in the order --help lists them:
        --threads      the thread counts, parsed to a list
        --n            with a default `n`: the number of elements (1e8 is accepted), `n_help`
                       saying of what
        --repeat       timed passes, or samples, per variant
        --sample-ms    with a default `sample_ms`: the length of a timed_passes sample
        --quick        a smoke test: --repeat becomes quick_repeat (None: kept), --n quick_n,
                       --sample-ms 2 (the script may shrink more: `quick_help` says what)
        `own`          the script's own options, (flag, add_argument keywords) pairs
        --out          the folder for the report files (default benchmarks/results)
    The description is the first paragraph of the script's docstring `doc`.
    """
    kind = "samples" if sample_ms is not None else "passes"
    if quick_help is None:
        quick_help = f"{quick_repeat} short samples" if sample_ms is not None else (
            f"n = {short_count(quick_n)}, {quick_repeat} passes: a smoke test")
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--threads", type=parse_thread_list, default=threads, help=threads_help)
    if n is not None:
        ap.add_argument("--n", type=positive_int, default=n,
                        help=f"{n_help} (default {short_count(n)})")
    ap.add_argument("--repeat", type=positive_int, default=repeat,
                    help=repeat_help or f"timed {kind} per variant")
    if sample_ms is not None:
        ap.add_argument("--sample-ms", type=positive_float, default=sample_ms,
                        help="target length of a sample")
    ap.add_argument("--quick", action="store_true", help=quick_help)
    for flag, keywords in own:
        ap.add_argument(flag, **keywords)
    ap.add_argument("--out", type=Path, default=RESULTS, help=out_help)
    args = ap.parse_args(argv)
    if args.quick:
        if quick_repeat is not None:
            args.repeat = quick_repeat
        if n is not None:
            args.n = quick_n
        if sample_ms is not None:
            args.sample_ms = 2.0
    return args


def optional_import(name, notes, skipped):
    """The module, or None when it is not installed: the peers that need it are then left out,
    and the note `skipped` says so."""
    try:
        return importlib.import_module(name)
    except ImportError:
        notes.append(skipped)
        return None


# ---- machine and settings -------------------------------------------------------------------


def machine_info(extra):
    """The machine a report was measured on (pyrt.bench.machine.machine_info of this checkout);
    write_report adds the load average at the end."""
    return machine.machine_info(extra, ROOT)


def run_settings(script, argv, args, **extra):
    """A report's settings: the date, the command line as typed at the repository root (the
    script's path, then argv or sys.argv[1:]), the options of parse_options that the run has
    (n, threads, repeat, sample_ms, quick, in that order), then the script's `extra` fields."""
    path = Path(script).resolve().relative_to(ROOT).as_posix()
    options = [name for name in ("n", "threads", "repeat", "sample_ms", "quick")
               if hasattr(args, name)]
    return {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "command": " ".join([f"python {path}", *(sys.argv[1:] if argv is None else argv)]),
        **{name: getattr(args, name) for name in options},
        **extra,
    }


# ---- timing ---------------------------------------------------------------------------------


def timing_phrase(settings, stream=False):
    """How the medians of timed_passes (or passes_beside_stream, with `stream`) were taken,
    for a report's method paragraph."""
    if "sample_ms" in settings:
        return (f"{settings['repeat']} samples of about {settings['sample_ms']} ms each, "
                "variants interleaved"
                + (" (quick: a smoke test, not a measurement)" if settings["quick"] else ""))
    return (f"{settings['repeat']} timed passes after a warm-up"
            + (f", in {min(STREAM_ROUNDS, settings['repeat'])} rounds with the STREAM "
               "ceiling's passes between them" if stream else "")
            + (" (quick sizes: a smoke test, not a measurement)" if settings["quick"] else ""))


def pyrt_torch_passes(runs, passes, args, torch, pause_s, untimed=True):
    """{(variant, pass, threads): [seconds per call, one per sample]} of runs {"pyrt": fns,
    "torch": fns}, fns a tuple whose first len(passes) entries are the calls timed under the
    names `passes`: at each of args.threads, with pyrt.set_num_threads / torch.set_num_threads
    as each sample's setup, args.repeat samples of about args.sample_ms (timed_passes)."""
    import pyrt

    samples = {}
    for threads in args.threads:
        set_threads = {"pyrt": lambda t=threads: pyrt.set_num_threads(t),
                       "torch": lambda t=threads: torch.set_num_threads(t)}
        timed = [((label, name, threads), set_threads[label], fn)
                 for label, fns in runs.items() for name, fn in zip(passes, fns)]
        samples.update(timed_passes(timed, args.repeat, pause_s, sample_s=args.sample_ms / 1e3,
                                    untimed=untimed))
    return samples


def median_rows(samples, names, **fixed):
    """Summary rows of {key tuple: [seconds]}: the `fixed` fields, the key's parts under
    `names`, the number of samples ("reps") and their median ("median_s")."""
    return [{**fixed, **dict(zip(names, key)), "reps": len(secs),
             "median_s": statistics.median(secs)} for key, secs in samples.items()]


def sample_records(samples, names, **fixed):
    """The raw samples for the JSON report: the `fixed` fields, the key's parts under `names`
    and the list of seconds."""
    return [{**fixed, **dict(zip(names, key)), "seconds": secs}
            for key, secs in samples.items()]


# ---- STREAM-style ceilings of memory-bound kernels ------------------------------------------


STREAM_ROUNDS = 7  # rounds of passes_beside_stream


def passes_beside_stream(variants, repeat, pause_s, stream, *, rounds=STREAM_ROUNDS,
                         on_result=None):
    """timed_passes of `variants` with a STREAM-style ceiling measured between them, so that
    both see the same machine: a shared machine's bandwidth drifts by tens of percent over a
    minute, and a ceiling timed before or after the variants is compared with another load.

    `stream` is (src, label, n, threads, notes, wrong, include): the C program is built (gcc
    with STREAM_FLAGS) and, after each of `rounds` rounds of the variants' passes, run once
    per thread count in its own process (OMP_NUM_THREADS, STREAM's first-touch placement) for
    as many passes on n elements. Returns (samples, {threads: [the JSON line of each run]});
    the ceiling's samples are under (label, threads). A run whose result did not check adds
    the note "<label> threads=<t>: <wrong>"; when the program does not build, a note says why
    and only the variants run.
    """
    src, label, n, threads, notes, wrong, include = stream
    exe = build_stream(src, KERNELS_BUILD, notes, include)
    rounds = max(1, min(rounds, repeat))
    samples, runs = {}, {t: [] for t in threads} if exe is not None else {}
    for r in range(rounds):
        passes = repeat // rounds + (r < repeat % rounds)  # `repeat` passes in all
        for key, secs in timed_passes(variants, passes, pause_s, on_result=on_result).items():
            samples.setdefault(key, []).extend(secs)
        for t, done in runs.items():
            env = dict(os.environ, OMP_NUM_THREADS=str(t))
            # A program whose result does not check still prints its line, then exits with 1.
            proc = subprocess.run([str(exe), str(n), str(passes)], check=False, env=env,
                                  capture_output=True, text=True, timeout=600)
            lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
            if not lines:
                raise RuntimeError(f"{exe.name} failed: {proc.stderr.strip()[-300:]}")
            run = json.loads(lines[-1])
            done.append(run)
            samples.setdefault((label, t), []).extend(run["samples"])
            if not run["ok"] and f"{label} threads={t}: {wrong}" not in notes:
                notes.append(f"{label} threads={t}: {wrong}")
        print(f"round {r + 1}/{rounds}", flush=True)
    return samples, runs


def bandwidth_rows(samples, n, bytes_per_element):
    """median_rows by (variant, threads), with GB/s = bytes_per_element * n / median."""
    rows = median_rows(samples, ("variant", "threads"))
    for r in rows:
        r["gb_per_s"] = bytes_per_element * 1e-9 * n / r["median_s"]
    return rows


def bandwidth_legend(stream, mine, one_thread):
    """What the ratio columns of bandwidth_table mean."""
    return (f"`÷ STREAM` is this row's GB/s over the {stream}'s at the same thread count (the "
            f"target for pyrt is >= 0.9); `time ÷ pyrt` is this row's median time over {mine}'s "
            f"at the same thread count ({one_thread}: over pyrt at 1 thread).")


def bandwidth_table(rows, stream, mine, ms_digits):
    """Markdown table of bandwidth_rows, by thread count: median time, GB/s, GB/s over the
    `stream` ceiling's and time over the `mine` variant's at the same thread count (a
    one-thread-only row: over theirs at 1 thread)."""
    index = {(r["variant"], r["threads"]): r for r in rows}
    cells = []
    for r in sorted(rows, key=lambda r: (r["threads"], r["variant"])):
        ceiling, ours = index.get((stream, r["threads"])), index.get((mine, r["threads"]))
        cells.append([r["variant"], r["threads"], f"{1e3 * r['median_s']:.{ms_digits}f}",
                      f"{r['gb_per_s']:.2f}",
                      f"{r['gb_per_s'] / ceiling['gb_per_s']:.2f}" if ceiling else "-",
                      f"{r['median_s'] / ours['median_s']:.2f}" if ours else "-"])
    return markdown_table(["variant", "threads", "median time (ms)", "GB/s", "÷ STREAM",
                           "time ÷ pyrt"], cells)


# ---- reports --------------------------------------------------------------------------------


def forward_backward_table(report, workloads):
    """The markdown table of a report whose summary times each workload's "forward" and
    "backward" passes for the variants "pyrt" and "torch": microseconds of each pass and of
    both, and pyrt's time over torch's, per workload name in `workloads` and thread count."""
    med = {(r["workload"], r["variant"], r["pass"], r["threads"]): r["median_s"]
           for r in report["summary"]}

    def micros(seconds):
        return f"{seconds * 1e6:.0f}" if seconds is not None else "-"

    cells = []
    for name in workloads:
        for threads in report["settings"]["threads"]:
            pf = med.get((name, "pyrt", "forward", threads))
            pb = med.get((name, "pyrt", "backward", threads))
            if pf is None:
                continue
            tf = med.get((name, "torch", "forward", threads))
            tb = med.get((name, "torch", "backward", threads))
            total_t = tf + tb if tf is not None else None
            cells.append([name, threads, micros(pf), micros(tf), micros(pb), micros(tb),
                          micros(pf + pb), micros(total_t),
                          f"{(pf + pb) / total_t:.2f}" if total_t else "-"])
    return markdown_table(
        ["workload", "threads", "pyrt fwd", "torch fwd", "pyrt bwd", "torch bwd",
         "pyrt fwd+bwd", "torch fwd+bwd", "pyrt/torch"], cells)


def markdown_report(report, title, libraries, method, blocks, load_at_end=False):
    """A report's markdown: the title, date and command, the machine ("Machine: <cpu>, <n>
    CPUs; <gcc>; <libraries>; load average at start <x>[, at end <y>]."), the paragraph on the
    `method`, the notes (skipped peers, failed checks) if any, then the `blocks` (lists of
    lines: tables, sections), a blank line before each."""
    info, settings, notes = report["machine"], report["settings"], report["notes"]
    load = f"load average at start {info['loadavg_start'][0]:.2f}"
    if load_at_end:
        load += f", at end {info['loadavg_end'][0]:.2f}"
    machine = (f"Machine: {info['cpu_model']}, {info['affinity_cpus']} CPUs; {info['gcc']}; "
               f"{libraries}; {load}.")
    lines = [f"# {title}", "", f"{settings['date']}; `{settings['command']}`", "", machine, "",
             method]
    if notes:
        lines += ["", "Notes:", ""] + [f"- {n}" for n in notes]
    for block in blocks:
        lines += [""] + block
    return "\n".join(lines) + "\n"


def write_report(out, name, info, settings, notes, results, markdown):
    """End a run: add the load average at the end to `info`, then write out/<name>.json (the
    report: {machine, settings, notes, **results}) and out/<name>.md (markdown(report)), and
    print the markdown."""
    info["loadavg_end"] = os.getloadavg()
    report = {"machine": info, "settings": settings, "notes": notes, **results}
    text = markdown(report)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(report, indent=1) + "\n")
    (out / f"{name}.md").write_text(text)
    print()
    print(text)
    print(f"wrote {out / f'{name}.json'} and {out / f'{name}.md'}")


def check_pyrt_torch(name, runs, args, torch, notes):
    """Note where pyrt's results (runs["pyrt"][2]() at each of args.threads) differ across
    thread counts by a bit, or from torch's (runs["torch"][2](), at the first thread count)
    beyond float32 rounding."""
    import numpy as np

    import pyrt

    mine = []
    for threads in args.threads:
        pyrt.set_num_threads(threads)
        mine.append(runs["pyrt"][2]())
    if not all(a.tobytes() == b.tobytes() for m in mine[1:] for a, b in zip(mine[0], m)):
        notes.append(f"pyrt {name}: results differ across thread counts")
    if torch is not None:
        torch.set_num_threads(args.threads[0])
        for i, (a, b) in enumerate(zip(mine[0], runs["torch"][2]())):
            if not np.allclose(a, b, rtol=1e-4, atol=1e-4 * (1 + np.abs(b).max())):
                notes.append(f"pyrt {name}: result {i} differs from torch")


def forward_backward_main(argv, doc, script, out_name, title, backward, workloads, make_runs,
                          *, repeat, sample_ms, pause_s):
    """The run of a benchmark of pyrt's and torch's forward and backward passes: for each
    workload (a tuple, its name first), runs = make_runs(rng, workload, torch), {variant:
    (forward, backward, results)}, checked (check_pyrt_torch) and timed at each thread count;
    then out/<out_name>.json and .md, a forward_backward_table whose method paragraph says
    what `backward` computes."""
    import numpy as np

    args = parse_options(argv, doc, repeat=repeat, sample_ms=sample_ms)
    notes = []
    torch = optional_import("torch", notes, "torch skipped: PyTorch is not installed.")
    info = machine_info({"numpy": np.__version__, "torch": version(torch)})
    rng = np.random.default_rng(0)
    results = {"summary": [], "samples": []}
    for workload in workloads:
        name = workload[0]
        runs = make_runs(rng, workload, torch)
        check_pyrt_torch(name, runs, args, torch, notes)
        samples = pyrt_torch_passes(runs, ("forward", "backward"), args, torch, pause_s,
                                    untimed=False)
        key_names = ("variant", "pass", "threads")
        results["summary"] += median_rows(samples, key_names, workload=name)
        results["samples"] += sample_records(samples, key_names, workload=name)
        print(f"done {name}", flush=True)

    def markdown(report):
        table = forward_backward_table(report, [w[0] for w in workloads])
        method = (f"Median time per call in microseconds, of "
                  f"{timing_phrase(report['settings'])}. Backward is {backward}. `pyrt/torch` "
                  f"is pyrt's time over torch's at the same thread count (below 1: pyrt is "
                  f"faster).")
        libraries = (f"NumPy {report['machine']['numpy']}; PyTorch "
                     f"{report['machine']['torch'] or 'not installed'}")
        return markdown_report(report, title, libraries, method, [table], load_at_end=True)

    settings = run_settings(script, argv, args)
    write_report(args.out, out_name, info, settings, notes, results, markdown)
