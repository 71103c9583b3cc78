"""Run the plan of a scaling sweep: every (workload, variant, thread count) in fresh processes.

Each process gives one sample: a C variant is its program (its figure is the program's own
median of a few passes), a Python variant one `python -m pyrt.bench.worker` process that times
one sample after a warm-up. A workload's `repeat` samples per (variant, thread count) are taken
in rounds, each round running every variant at every thread count once, so that drift on a
shared machine over the workload's runs (other jobs, clock changes) spreads over all thread
counts and peers instead of landing on one of them: a slower spell that fell on the 2-thread
runs alone would pass for a loss of scaling. Every process gets the thread count through
PYRT_NUM_THREADS, OMP_NUM_THREADS and TBB_NUM_THREADS (the worker sets torch's, numexpr's and
the BLAS's from there), so that no two runtimes' pools ever meet in one process.

Each process runs in a session, and so a process group, of its own: a Ctrl-C at the terminal
reaches only this process, whose handler (pyrt.cli.interrupt.StopOnInterrupt) just raises a
flag; the wait loop sees it, kills the child's whole group (its threads, and any process it
started) and raises KeyboardInterrupt, so no stray process is left behind. SIGTERM and SIGHUP
(kill, timeout, a closed terminal) do the same: a child in its own session would not get them,
and would outlive this process.
"""

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pyrt
from pyrt.cli.interrupt import StopOnInterrupt

__all__ = ["STOP_SIGNALS", "Run", "execute", "kill_group", "plan", "run_command",
           "thread_env"]

POLL_S = 0.05  # how often the wait loop looks at the Ctrl-C flag
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@dataclass(frozen=True)
class Run:
    workload: object  # pyrt.bench.workloads.Workload
    variant: object  # pyrt.bench.workloads.Variant
    threads: int
    processes: int  # how many processes, one sample each
    round: int = 0  # the round it belongs to: an epoch's run index (its seed and batch order)


def plan(workloads, threads, repeat):
    """The runs, workload by workload; within one, `repeat` rounds of every thread count, and
    within a thread count every variant, so that pyrt and its peers at one thread count run
    close together in time and each thread count's samples are spread over the workload's
    whole span."""
    runs = []
    for workload in workloads:
        for r in range(repeat):
            for t in threads:
                for variant in workload.variants:
                    if variant.threaded or t == 1:
                        runs.append(Run(workload, variant, t, 1, r))
    return runs


def thread_env(threads):
    """The environment of a run at `threads` threads. The package's own folder leads
    PYTHONPATH, so that a worker imports this pyrt even when it runs from a checkout."""
    env = dict(os.environ)
    for var in ("PYRT_NUM_THREADS", "OMP_NUM_THREADS", "TBB_NUM_THREADS"):
        env[var] = str(threads)
    package_parent = str(Path(pyrt.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH"))
                                        if p)
    return env


def run_command(cmd, env, timeout, stop):
    """Run one child in a process group of its own; return {"result": the last JSON line it
    printed} or {"error": why there is none}. When `stop` (a StopOnInterrupt) sees a Ctrl-C,
    or a second Ctrl-C raises KeyboardInterrupt in the wait, or the child outlives `timeout`
    seconds, the child's whole group is killed; then KeyboardInterrupt is raised (after a
    Ctrl-C) or the timeout is reported."""
    if stop.requested:
        raise KeyboardInterrupt
    proc = subprocess.Popen([str(c) for c in cmd], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                out, err = proc.communicate(timeout=POLL_S)
                break
            except subprocess.TimeoutExpired:
                if stop.requested:
                    raise KeyboardInterrupt from None
                if time.monotonic() > deadline:
                    kill_group(proc)
                    return {"error": f"timed out after {timeout:g} s"}
    except BaseException:
        kill_group(proc)
        raise
    lines = [ln for ln in out.splitlines() if ln.startswith("{")]
    if not lines:
        return {"error": f"exit status {proc.returncode}: "
                         f"{(err.strip() or out.strip())[-500:]}"}
    try:
        record = {"result": json.loads(lines[-1])}
    except json.JSONDecodeError:  # a line cut short by a crash: one failed run, not the sweep
        return {"error": f"exit status {proc.returncode}: its last line is not JSON: "
                         f"{lines[-1][:200]}"}
    if proc.returncode != 0:  # a C program whose own check failed still prints its line
        record["error"] = f"exit status {proc.returncode}: {err.strip()[-300:]}"
    return record


def kill_group(proc):
    """SIGKILL the child's process group (its pgid is its pid: it leads a new session), then
    reap the child."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.communicate()


def _command(run, build_dir, options):
    if run.variant.program is not None:
        return [build_dir / run.variant.program, *run.variant.args]
    spec = {"workload": run.workload.name, "variant": run.variant.label, "threads": run.threads,
            "repeat": 1, "first": run.round, **options}
    return [sys.executable, "-m", "pyrt.bench.worker", json.dumps(spec)]


def _record(run, outcome, cpus):
    """One process's outcome as a raw record of the report: its samples (seconds), the thread
    counts it reports, its notes, its error if any and, for a C program, the line it printed."""
    record = {"workload": run.workload.name, "variant": run.variant.label,
              "threads": run.threads, "oversubscribed": run.threads > cpus}
    result = outcome.get("result")
    if result is not None and run.variant.program is not None:
        record["samples"] = [result.get("seconds", result.get("median_s"))]
        record["threads_seen"] = {"program": result.get("threads")}
        record["notes"] = [] if result.get("ok", True) else ["its result did not check"]
        record["raw"] = result
    elif result is not None:
        record.update(result)
    for library, seen in record.get("threads_seen", {}).items():
        if seen is not None and seen != run.threads:
            record.setdefault("notes", []).append(
                f"asked for {run.threads} threads, {library} ran {seen}")
    if "error" in outcome:
        record["error"] = outcome["error"]
    return record


def execute(runs, build_dir, options, timeout, records, bar):
    """Run `runs` (plan()), appending one record per process to `records` as each finishes, so
    that the caller still has them after a Ctrl-C (KeyboardInterrupt). `options` go into every
    worker's spec (quick, data); `bar` is a tqdm progress bar counting processes."""
    cpus = len(os.sched_getaffinity(0))
    with StopOnInterrupt(STOP_SIGNALS) as stop:
        for run in runs:
            bar.set_description(f"{run.workload.name} · {run.variant.label} · "
                                f"{run.threads} thread{'s' if run.threads > 1 else ''}")
            cmd = _command(run, build_dir, options)
            env = thread_env(run.threads)
            for _ in range(run.processes):
                records.append(_record(run, run_command(cmd, env, timeout, stop), cpus))
                bar.update(1)
