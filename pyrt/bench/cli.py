"""``python -m pyrt bench scaling``: how pyrt's workloads scale with threads, beside its peers.

For each thread count, every workload's variants (pyrt, its peers, its references) run in
fresh processes (pyrt.bench.runner); the medians, speedups, efficiencies and ratios
(pyrt.bench.report) go into DIR/scaling.json, DIR/scaling.md and DIR/scaling.png
(pyrt.bench.plot). A peer that is not installed, and the C programs when pyrt runs without its
source checkout, are reported as skipped with the reason.
"""

import argparse
import dataclasses
import datetime
import importlib
import os
import sys
import tempfile
from pathlib import Path

import numpy
from threadpoolctl import threadpool_info
from tqdm import tqdm

import pyrt
from pyrt.bench import machine, programs, report, runner, workloads
from pyrt.bench.options import PEERS, SUITES, parse_peers, parse_threads
from pyrt.bench.plot import write_plot
from pyrt.cli.interrupt import InterruptOn
from pyrt.cli.options import CLIError, positive_float, positive_int
from pyrt.data.mnist import DatasetNotFoundError, find_mnist

__all__ = ["add_parser", "run"]

NOT_INSTALLED = "{name} is not installed ({error})"
TIMEOUT_S = 900.0  # default --timeout


def _only(text):
    """argparse type for --only: comma-separated names of workloads."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in workloads.NAMES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown workload(s) {', '.join(map(repr, unknown)) or repr(text)}: expected "
            f"names from {', '.join(workloads.NAMES)}")
    return names


def _out_dir(text):
    """argparse type for --out: a folder path (created when the run starts)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a folder, got an empty path")
    return Path(text)


def add_parser(subparsers):
    bench = subparsers.add_parser(
        "bench", help="benchmark pyrt beside its peers",
        description="Benchmark pyrt beside the libraries a user would use instead.")
    kinds = bench.add_subparsers(dest="benchmark", metavar="BENCHMARK", required=True)
    p = kinds.add_parser(
        "scaling", help="how each workload scales with threads, beside its peers",
        description="Run every workload at each thread count in fresh processes (pyrt through "
                    "PYRT_NUM_THREADS, each peer through its own knob), take the median of R "
                    "runs, and write DIR/scaling.json, DIR/scaling.md and DIR/scaling.png: "
                    "time, speedup over pyrt's one-thread run, parallel efficiency, and each "
                    "peer's figure with the ratio pyrt/peer.")
    p.add_argument("--threads", type=parse_threads, default="max", metavar="1,2,4,...|max",
                   help="thread counts (1 is always added: speedups are over it); max: 1, 2, "
                        "4, ... up to the CPUs this process may run on (default: max)")
    p.add_argument("--suite", choices=SUITES, default="all",
                   help="runtime: C-level fib and parallel_for; kernels: sum, a*b+c, GEMM, "
                        "conv2d; train: XOR step, Fashion-MNIST MLP and CNN epochs "
                        "(default: all)")
    p.add_argument("--repeat", type=positive_int, default=5, metavar="R",
                   help="timed runs per variant and thread count; the median is reported "
                        "(default: 5)")
    p.add_argument("--out", type=_out_dir, default=None, metavar="DIR",
                   help="where the results go (default: benchmarks/results/ in a source "
                        "checkout, else ./pyrt-bench-results)")
    p.add_argument("--peers", type=parse_peers, default="auto",
                   metavar="auto|none|" + ",".join(PEERS),
                   help="the peers to run beside pyrt; auto: every one that is installed "
                        "(default: auto)")
    p.add_argument("--only", type=_only, default=None, metavar="W1,W2",
                   help=f"only these workloads of the suite: {', '.join(workloads.NAMES)}")
    p.add_argument("--quick", action="store_true",
                   help="small sizes and synthetic data: a smoke test of a few seconds, not a "
                        "measurement")
    p.add_argument("--timeout", type=positive_float, default=TIMEOUT_S, metavar="S",
                   help="seconds one process may run before it is stopped (default: "
                        f"{TIMEOUT_S:g})")
    p.set_defaults(run=run)
    return bench


def default_out():
    root = programs.source_root()
    return root / "benchmarks" / "results" if root else Path.cwd() / "pyrt-bench-results"


def _python_peers(requested):
    """{peer: module or None} for the importable peers among `requested`, and {peer: why
    not} for the others."""
    found, missing = {}, {}
    for peer in ("torch", "numexpr"):
        if peer in requested:
            try:
                found[peer] = importlib.import_module(peer)
            except ImportError as exc:
                missing[peer] = NOT_INSTALLED.format(name=peer, error=exc)
    return found, missing


def _select(catalogue, args, missing, root):
    """The workloads to run, each with the variants to run; and the skipped variants, each
    with the reason."""
    chosen, skipped = [], []
    for w in catalogue:
        if (args.suite != "all" and w.suite != args.suite) or (args.only
                                                               and w.name not in args.only):
            continue
        keep = []
        for v in w.variants:
            if v.peer is not None and v.peer not in args.peers:
                continue
            reason = missing.get(v.peer)
            if reason is None and v.program is not None and root is None:
                reason = ("the C programs live in benchmarks/ of pyrt's source checkout, and "
                          "this pyrt runs without it")
            if reason is None:
                keep.append(v)
            else:
                skipped.append({"workload": w.name, "variant": v.label, "reason": reason})
        if w.pyrt in keep:
            chosen.append(dataclasses.replace(w, variants=tuple(keep)))
    return chosen, skipped


def _build(chosen, root, build_dir, notes, skipped):
    """Build the C programs the chosen variants need; drop the variants whose program did not
    build (as skipped, with the reason) and the workloads left without pyrt."""
    needed = {v.program for w in chosen for v in w.variants if v.program is not None}
    if not needed:
        return chosen
    print(f"building {len(needed)} C programs from {root / 'benchmarks'} ...", file=sys.stderr,
          flush=True)
    built = programs.build_with_stream(needed, notes, root, build_dir)
    out = []
    for w in chosen:
        keep = []
        for v in w.variants:
            if v.program is None or v.program in built:
                keep.append(v)
                continue
            kind = programs.PROGRAMS.get(v.program, (None, "stream"))[1]
            reason = ("oneTBB headers not found (install libtbb-dev)"
                      if kind == "tbb" and not programs.have_tbb()
                      else f"{v.program} did not build (see the notes)")
            skipped.append({"workload": w.name, "variant": v.label, "reason": reason})
        if w.pyrt in keep:
            out.append(dataclasses.replace(w, variants=tuple(keep)))
    return out


def _machine(root, peers):
    blas = [f"{i.get('internal_api')} {i.get('version')} ({i.get('architecture')})"
            for i in threadpool_info() if i.get("user_api") == "blas"]
    libraries = {"pyrt": pyrt.__version__, "NumPy": numpy.__version__,
                 "BLAS": ", ".join(blas) or None,
                 "PyTorch": machine.version(peers.get("torch")),
                 "numexpr": machine.version(peers.get("numexpr")),
                 "oneTBB": machine.tbb_version()}
    return machine.machine_info({"cores": os.cpu_count(), "affinity": machine.affinity(),
                                 "libraries": libraries}, root)


def _notes(records):
    """The problems the runs reported, each once."""
    notes = []
    for r in records:
        where = f"{r['workload']} · {r['variant']} · threads={r['threads']}"
        for text in r.get("notes", []) + ([r["error"]] if "error" in r else []):
            if f"{where}: {text}" not in notes:
                notes.append(f"{where}: {text}")
    return notes


def _command_line(args):
    """The command that repeats this run, every setting spelt out."""
    words = ["python -m pyrt bench scaling", "--threads", ",".join(map(str, args.threads)),
             "--suite", args.suite, "--repeat", str(args.repeat),
             "--peers", ",".join(args.peers) or "none"]
    if args.only:
        words += ["--only", ",".join(args.only)]
    if args.quick:
        words.append("--quick")
    if args.timeout != TIMEOUT_S:
        words += ["--timeout", f"{args.timeout:g}"]
    if args.out:
        words += ["--out", str(args.out)]
    return " ".join(words)


def _writable_dir(out):
    """Create the folder `out` (and its parents) and check that files can be written in it,
    before anything runs: a sweep is not thrown away at the end for want of a folder."""
    if out.exists() and not out.is_dir():
        raise CLIError(f"--out {out}: is a file, not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CLIError(f"--out {out}: cannot create the folder ({exc.strerror})") from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise CLIError(f"--out {out}: the folder is not writable")


def _check_only(catalogue, args):
    """A CLIError when --only names a workload outside --suite."""
    if not args.only or args.suite == "all":
        return
    names = [w.name for w in catalogue if w.suite == args.suite]
    outside = [n for n in args.only if n not in names]
    if outside:
        raise CLIError(f"--only {','.join(outside)}: not in --suite {args.suite} (its "
                       f"workloads: {', '.join(names)})")


def run(args):
    """The sweep. Ctrl-C (or SIGTERM, SIGHUP) stops it cleanly at any point: before the runs
    start nothing is written; during them the child's processes are killed and the finished
    runs are printed. The exit status is 1 when a run failed (its error is in the notes)."""
    out = args.out or default_out()
    root = programs.source_root()
    cpus = len(os.sched_getaffinity(0))
    try:
        with InterruptOn(runner.STOP_SIGNALS[1:]):
            peers, missing = _python_peers(args.peers)
            try:
                data = None if args.quick else find_mnist()
            except DatasetNotFoundError as exc:  # a PYRT_DATA that names no directory
                raise CLIError(str(exc)) from None
            catalogue = workloads.catalogue(args.quick, data)
            _check_only(catalogue, args)
            chosen, skipped = _select(catalogue, args, missing, root)
            # created once the options are known to be valid, before anything runs
            _writable_dir(out)
            info = _machine(root, peers)
    except KeyboardInterrupt:
        raise CLIError("interrupted before the first run: nothing was run or written",
                       code=130) from None
    notes = []
    if any(t > cpus for t in args.threads):
        notes.append(f"Thread counts above {cpus}, the CPUs this process may run on, are "
                     "oversubscribed: marked * in the tables.")
    settings = {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "command": _command_line(args),
        "threads": args.threads, "suite": args.suite, "repeat": args.repeat,
        "peers": args.peers, "only": args.only, "quick": args.quick,
        "timeout_s": args.timeout, "data": None if data is None else str(data),
    }
    records = []
    with tempfile.TemporaryDirectory(prefix="pyrt-bench-") as build_dir:
        try:
            with InterruptOn(runner.STOP_SIGNALS[1:]):
                chosen = _build(chosen, root, Path(build_dir), notes, skipped) if root else chosen
        except KeyboardInterrupt:
            raise CLIError("interrupted while building the C programs: nothing was run or "
                           "written", code=130) from None
        if not chosen:
            raise CLIError("nothing to run: " + ("; ".join(
                f"{s['workload']} · {s['variant']}: {s['reason']}" for s in skipped)
                or "no workload selected"), code=1)
        runs = runner.plan(chosen, args.threads, args.repeat)
        # the bar only on a terminal: in a log file its frames would pile up on one line
        bar = tqdm(total=sum(r.processes for r in runs), unit="run", file=sys.stderr,
                   dynamic_ncols=True, disable=not sys.stderr.isatty())
        try:
            runner.execute(runs, Path(build_dir),
                           {"quick": args.quick, "data": settings["data"]}, args.timeout,
                           records, bar)
        except KeyboardInterrupt:
            bar.close()
            result = _report(info, settings, notes, skipped, chosen, records, cpus, args)
            print(report.markdown(result, chosen), end="", flush=True)
            raise CLIError(f"interrupted: {len(records)} of {bar.total} runs finished (shown "
                           f"above); nothing was written to {out}", code=130) from None
        bar.close()
    result = _report(info, settings, notes, skipped, chosen, records, cpus, args)
    plot_note = write_plot(out / "scaling.png", result["summary"], chosen, args.threads)
    if plot_note:
        result["notes"].append(plot_note)
        # a figure left by an earlier run would pass for this one's
        (out / "scaling.png").unlink(missing_ok=True)
    text = report.write_files(out, result, chosen)
    print(text, end="", flush=True)
    written = ["scaling.json", "scaling.md"] + ([] if plot_note else ["scaling.png"])
    print(f"wrote {', '.join(str(out / name) for name in written)}", file=sys.stderr)
    failed = sum("error" in r for r in records)
    if failed:
        print(f"pyrt: {failed} of {len(records)} runs failed (their errors are in the notes)",
              file=sys.stderr)
        return 1
    return 0


def _report(info, settings, notes, skipped, chosen, records, cpus, args):
    info["loadavg_end"] = os.getloadavg()
    return {
        "machine": info, "settings": settings, "notes": notes + _notes(records),
        "skipped": skipped,
        "workloads": [{"name": w.name, "suite": w.suite, "title": w.title, "what": w.what,
                       "rate_unit": w.rate[0] if w.rate else None,
                       "variants": [{"label": v.label, "peer": v.peer,
                                     "reference": v.reference, "threaded": v.threaded,
                                     "program": v.program} for v in w.variants]}
                      for w in chosen],
        "summary": report.summarise(chosen, records, args.threads, cpus),
        "runs": records,
    }
