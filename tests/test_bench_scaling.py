"""python -m pyrt bench scaling: end to end on --quick sizes, the report's arithmetic, argument
errors, skipped peers and C programs, exit statuses, and Ctrl-C (or SIGTERM, SIGHUP) leaving no
process behind."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from pyrt.bench import cli as bench_cli
from pyrt.bench import programs
from pyrt.bench.options import parse_threads, power_of_two_counts
from pyrt.bench.report import markdown_table, summarise, workload_table
from pyrt.bench.runner import Run, _command, _record, plan, run_command
from pyrt.bench.workloads import NAMES, Variant, Workload
from pyrt.cli import main

ROOT = Path(__file__).resolve().parents[1]
CPUS = len(os.sched_getaffinity(0))
REPORT_KEYS = {"machine", "settings", "notes", "skipped", "workloads", "summary", "runs"}
MACHINE_KEYS = {"cpu_model", "cores", "affinity", "libraries", "gcc", "python"}


def scaling(*args, env=None, timeout=120):
    return subprocess.run([sys.executable, "-m", "pyrt", "bench", "scaling", *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=timeout,
                          check=False)


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    """The whole sweep at --quick sizes with the cheap peers (NumPy, OpenMP)."""
    out = tmp_path_factory.mktemp("scaling")
    start = time.monotonic()
    proc = scaling("--threads", "1,2", "--repeat", "1", "--quick", "--peers", "numpy,omp",
                   "--out", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out, proc, time.monotonic() - start


def test_quick_sweep_writes_json_and_markdown(quick_run):
    out, proc, seconds = quick_run
    assert seconds < 60
    report = json.loads((out / "scaling.json").read_text())
    assert REPORT_KEYS <= set(report)
    assert MACHINE_KEYS <= set(report["machine"])
    assert report["machine"]["affinity"] == sorted(os.sched_getaffinity(0))
    assert report["settings"]["threads"] == [1, 2] and report["settings"]["quick"]
    assert [w["name"] for w in report["workloads"]] == list(NAMES)
    for summary in report["summary"]:
        assert [row["threads"] for row in summary["rows"]] == [1, 2], summary["workload"]
        assert summary["rows"][0]["speedup"] == pytest.approx(1.0)
    for run in report["runs"]:
        assert run["samples"] and all(s > 0 for s in run["samples"]), run
    # the NumPy peers are there, with their ratios
    gemm = next(s for s in report["summary"] if s["workload"] == "gemm1024")
    assert set(gemm["rows"][1]["others"]) == {"np.matmul"}
    text = (out / "scaling.md").read_text()
    assert text == proc.stdout
    assert text.count("\n## ") == len(NAMES)
    assert "| threads | pyrt | speedup | efficiency | np.matmul | pyrt ÷ np.matmul |" in text
    assert "Synthetic data (--quick)" in text


def test_quick_sweep_plots_or_says_why_not(quick_run):
    out, _, _ = quick_run
    report = json.loads((out / "scaling.json").read_text())
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert any("matplotlib is not installed" in n for n in report["notes"])
        assert not (out / "scaling.png").exists()
    else:
        assert (out / "scaling.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _workload():
    return Workload("w", "a workload", "what it does",
                    (Variant("pyrt"), Variant("peer", peer="numpy"),
                     Variant("serial", threaded=False, reference=True)),
                    rate=("items/s", 8.0))


def _records(timings):
    return [{"workload": "w", "variant": v, "threads": t, "samples": s}
            for (v, t), s in timings.items()]


def test_speedup_efficiency_and_ratios_on_made_up_timings():
    records = _records({("pyrt", 1): [4.0, 3.0, 5.0], ("pyrt", 2): [2.5], ("pyrt", 4): [2.0],
                        ("peer", 1): [8.0], ("peer", 2): [5.0], ("serial", 1): [2.0]})
    [summary] = summarise([_workload()], records, [1, 2, 4], cpus=2)
    one, two, four = summary["rows"]
    assert one["pyrt_s"] == 4.0 and one["speedup"] == 1.0 and one["efficiency"] == 1.0
    assert two["speedup"] == pytest.approx(1.6) and two["efficiency"] == pytest.approx(0.8)
    assert four["speedup"] == pytest.approx(2.0) and four["efficiency"] == pytest.approx(0.5)
    assert two["pyrt_rate"] == pytest.approx(8.0 / 2.5)
    assert two["others"]["peer"]["pyrt_over"] == pytest.approx(0.5)
    assert two["others"]["peer"]["speedup"] == pytest.approx(0.8)
    # a one-thread variant is compared with its one-thread time at every thread count
    assert two["others"]["serial"]["seconds"] == 2.0
    assert two["others"]["serial"]["pyrt_over"] == pytest.approx(1.25)
    assert "peer" not in four["others"]
    assert [r["oversubscribed"] for r in summary["rows"]] == [False, False, True]

    lines = workload_table(_workload(), summary, cpus=2)
    assert lines[0] == ("| threads | pyrt | speedup | efficiency | peer | pyrt ÷ peer "
                        "| serial (1 thread) | pyrt ÷ serial |")
    assert lines[3].startswith("| 2 | 2.5 s (3.2 items/s) | 1.60x | 80% | 5 s (1.6 items/s) "
                               "| 0.50 |")
    assert lines[4].startswith("| 4* | 2 s") and "| - | - |" in lines[4]
    assert "oversubscribed" in lines[-1]


def test_the_plan_takes_each_workload_in_rounds_over_thread_counts_and_variants():
    pyrt_v, serial = Variant("pyrt"), Variant("serial", program="loop_serial", threaded=False)
    a = Workload("sum", "A", "", (pyrt_v, serial))
    b = Workload("xor", "B", "", (pyrt_v,))
    runs = plan([a, b], [1, 2], 3)
    order = [(r.workload.name, r.round, r.threads, r.variant.label) for r in runs]
    assert order == [("sum", r, t, v) for r in range(3) for t in (1, 2)
                     for v in ("pyrt", "serial") if v == "pyrt" or t == 1] + [
        ("xor", r, t, "pyrt") for r in range(3) for t in (1, 2)]
    assert all(r.processes == 1 for r in runs)
    # a Python worker takes one sample; an epoch's round is its run index (seed, batch order)
    spec = json.loads(_command(runs[-1], Path("/build"), {"quick": True})[-1])
    assert (spec["repeat"], spec["first"], spec["threads"]) == (1, 2, 2)


def test_no_speedup_without_a_one_thread_figure():
    [summary] = summarise([_workload()], _records({("pyrt", 2): [1.0]}), [1, 2], cpus=2)
    [row] = summary["rows"]
    assert row["speedup"] is None and row["efficiency"] is None
    assert markdown_table(["a", "b"], [[1, 2]]) == ["| a | b |", "|---|---|", "| 1 | 2 |"]


def test_thread_lists():
    assert power_of_two_counts(1) == [1]
    assert power_of_two_counts(16) == [1, 2, 4, 8, 16]
    assert power_of_two_counts(6) == [1, 2, 4, 6]
    assert parse_threads("max") == power_of_two_counts(CPUS)
    assert parse_threads("4,2,2") == [1, 2, 4]


@pytest.mark.parametrize("args, message", [
    (["--threads", "0"], "argument --threads: '0': thread counts must be from 1 to 1024"),
    (["--threads=-2"], "argument --threads: '-2': thread counts must be from 1 to 1024"),
    (["--threads", "1,x"], "argument --threads: '1,x' is not a comma-separated list"),
    (["--threads", ""], ("argument --threads: expected a comma-separated list of thread "
                         "counts, got nothing")),
    (["--threads", "1025"], "argument --threads: '1025': thread counts must be from 1 to 1024"),
    (["--threads", "1,,2"], "argument --threads: '1,,2': an empty item"),
    (["--out", ""], "argument --out: expected a folder, got an empty path"),
    (["--suite", "gpu"], "argument --suite: invalid choice: 'gpu'"),
    (["--peers", "mkl"], "argument --peers: unknown peer(s) 'mkl'"),
    (["--peers", "torch,mkl"], "unknown peer(s) 'mkl'"),
    (["--repeat", "0"], "argument --repeat: expected a positive integer, got '0'"),
    (["--repeat", "-1"], "argument --repeat"),
    (["--only", "fib,nope"], "argument --only: unknown workload(s) 'nope'"),
])
def test_bad_arguments_exit_2(args, message, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["bench", "scaling", *args])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_missing_peer_is_skipped_with_the_reason(tmp_path):
    stub = tmp_path / "stub"
    stub.mkdir()
    (stub / "numexpr.py").write_text("raise ImportError('no numexpr here')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(stub), *filter(None, [os.environ.get("PYTHONPATH")])]))
    proc = scaling("--only", "addcmul", "--peers", "numexpr", "--quick", "--threads", "1",
                   "--repeat", "1", "--out", str(tmp_path / "out"), env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads((tmp_path / "out" / "scaling.json").read_text())
    assert report["skipped"] == [{"workload": "addcmul", "variant": "numexpr",
                                  "reason": "numexpr is not installed (no numexpr here)"}]
    assert "- addcmul · numexpr: numexpr is not installed" in proc.stdout
    assert {r["variant"] for r in report["runs"]} == {"pyrt.ops.addcmul", "STREAM triad"}


def test_without_the_checkout_c_programs_are_skipped(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(programs, "source_root", lambda: None)
    code = main(["bench", "scaling", "--only", "fib,xor", "--peers", "none", "--quick",
                 "--threads", "1", "--repeat", "1", "--out", str(tmp_path)])
    assert code == 0
    report = json.loads((tmp_path / "scaling.json").read_text())
    assert {(s["workload"], s["variant"]) for s in report["skipped"]} == {
        ("fib", "pyrt"), ("fib", "serial C")}
    assert all("source checkout" in s["reason"] for s in report["skipped"])
    assert [w["name"] for w in report["workloads"]] == ["xor"]
    assert report["summary"][0]["rows"][0]["pyrt_s"] > 0
    assert "fib · pyrt: the C programs live in benchmarks/" in capsys.readouterr().out


def test_oversubscribed_thread_counts_are_flagged(tmp_path, capsys):
    over = CPUS + 1
    code = main(["bench", "scaling", "--only", "xor", "--peers", "none", "--quick",
                 "--threads", f"1,{over}", "--repeat", "1", "--out", str(tmp_path)])
    assert code == 0
    report = json.loads((tmp_path / "scaling.json").read_text())
    rows = report["summary"][0]["rows"]
    assert [(r["threads"], r["oversubscribed"]) for r in rows] == [(1, False), (over, True)]
    text = capsys.readouterr().out
    assert f"| {over}* |" in text and "oversubscribed" in text


def _children(pid):
    """The pids of the live processes whose parent is `pid`."""
    kids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            kids.append(int(stat.parent.name))
    return kids


def _group_alive(pgid):
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_stop_signal_kills_the_running_child_and_exits_130(tmp_path, sig):
    # Ctrl-C, and kill/timeout (SIGTERM) or a closed terminal (SIGHUP), which would not reach
    # the child in its own session: the child must not outlive the sweep
    proc = subprocess.Popen(
        [sys.executable, "-m", "pyrt", "bench", "scaling", "--only", "xor", "--peers", "none",
         "--threads", "1", "--repeat", "1000", "--out", str(tmp_path)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        children = []
        while not children and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
            children = _children(proc.pid)
        assert children, "no worker process started"
        time.sleep(0.5)  # let the workers get into their timed steps
        children = _children(proc.pid) or children  # the one running now
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err[-2000:]
    assert re.search(r"interrupted: \d+ of 1000 runs finished", err), err[-2000:]
    assert "# pyrt scaling across thread counts" in out
    assert not (tmp_path / "scaling.json").exists()
    for child in children:
        assert not _group_alive(child)


def test_an_unusable_out_fails_before_anything_runs(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    started = time.monotonic()
    for out, why in ((blocker, "is a file, not a folder"),
                     (blocker / "below", "cannot create the folder")):
        code = main(["bench", "scaling", "--only", "xor", "--peers", "none", "--quick",
                     "--threads", "1", "--repeat", "1", "--out", str(out)])
        assert code == 2
        assert f"pyrt: --out {out}: {why}" in capsys.readouterr().err
    assert time.monotonic() - started < 10  # refused at once, not after the sweep


def test_invalid_options_create_no_out_folder(tmp_path, capsys):
    out = tmp_path / "new"
    code = main(["bench", "scaling", "--suite", "runtime", "--only", "xor", "--quick",
                 "--out", str(out)])
    assert code == 2 and "--only xor: not in --suite runtime" in capsys.readouterr().err
    assert not out.exists()


def test_only_outside_the_suite_is_an_error(tmp_path, capsys):
    code = main(["bench", "scaling", "--suite", "runtime", "--only", "xor", "--quick",
                 "--out", str(tmp_path)])
    assert code == 2
    assert "--only xor: not in --suite runtime (its workloads: fib," in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_failed_runs_give_exit_status_1(tmp_path, capsys):
    code = main(["bench", "scaling", "--only", "xor", "--peers", "none", "--quick",
                 "--threads", "1", "--repeat", "1", "--timeout", "0.01", "--out",
                 str(tmp_path)])
    assert code == 1
    captured = capsys.readouterr()
    assert "pyrt: 1 of 1 runs failed" in captured.err
    assert "timed out after 0.01 s" in captured.out
    report = json.loads((tmp_path / "scaling.json").read_text())
    assert report["settings"]["timeout_s"] == 0.01
    assert "--timeout 0.01" in report["settings"]["command"]


def test_a_stale_plot_is_removed_when_none_is_drawn(tmp_path, monkeypatch):
    (tmp_path / "scaling.png").write_bytes(b"an earlier run's figure")
    monkeypatch.setattr(bench_cli, "write_plot", lambda *args: "scaling.png skipped: no matplotlib")
    code = main(["bench", "scaling", "--only", "xor", "--peers", "none", "--quick",
                 "--threads", "1", "--repeat", "1", "--out", str(tmp_path)])
    assert code == 0
    assert not (tmp_path / "scaling.png").exists()


def test_a_line_that_is_not_json_is_a_failed_run():
    # a child that dies in the middle of its result line: that run fails, the sweep goes on
    from pyrt.cli.interrupt import StopOnInterrupt

    cmd = [sys.executable, "-c", "print('{\"seconds\": 0.1'); raise SystemExit(3)"]
    with StopOnInterrupt() as stop:
        outcome = run_command(cmd, dict(os.environ), 30, stop)
    assert outcome == {"error": 'exit status 3: its last line is not JSON: {"seconds": 0.1'}


def test_a_thread_count_the_library_did_not_run_is_noted():
    run = Run(workload=SimpleNamespace(name="fib"),
              variant=SimpleNamespace(label="pyrt", program="fib_pyrt"), threads=4, processes=1)
    record = _record(run, {"result": {"seconds": 1.0, "threads": 2}}, cpus=2)
    assert record["notes"] == ["asked for 4 threads, program ran 2"]
    assert _record(run, {"result": {"seconds": 1.0, "threads": 4}}, cpus=2)["notes"] == []


def test_timed_passes_interleave_variants_and_pause_per_variant(monkeypatch):
    from pyrt.bench import timing

    order, pauses = [], []
    monkeypatch.setattr(timing.time, "sleep", pauses.append)
    variants = [(key, lambda: None, lambda key=key: order.append(key)) for key in ("a", "b")]
    samples = timing.timed_passes(variants, 3, lambda key: 0.3 if key == "b" else 0.1,
                                  untimed=False)
    assert order == ["a", "b"] * 3 and pauses == [0.1, 0.3] * 3
    assert {k: len(v) for k, v in samples.items()} == {"a": 3, "b": 3}
    timing.timed_passes(variants[:1], 2, 0.05, untimed=False)
    assert pauses[-2:] == [0.05, 0.05]


def test_sweeps_taken_in_parts_merge_into_the_whole(quick_run, tmp_path):
    # the quick sweep cut in two by suite, as two runs would have written it, then joined by
    # benchmarks/merge_scaling.py: the same tables, runs and plot as the sweep in one run
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import merge_scaling
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    out, _, _ = quick_run
    whole = json.loads((out / "scaling.json").read_text())
    parts = []
    for i, suites in enumerate((("train", "runtime"), ("kernels",))):
        keep = [k for k, w in enumerate(whole["workloads"]) if w["suite"] in suites]
        part = dict(whole, workloads=[whole["workloads"][k] for k in keep],
                    summary=[whole["summary"][k] for k in keep],
                    runs=[r for r in whole["runs"]
                          if any(r["workload"] == whole["workloads"][k]["name"] for k in keep)])
        part["settings"] = dict(whole["settings"], suite="+".join(suites))
        folder = tmp_path / f"part{i}"
        folder.mkdir()
        (folder / "scaling.json").write_text(json.dumps(part))
        parts.append(str(folder))
    merge_scaling.main([*parts, "--out", str(tmp_path / "merged")])
    merged = json.loads((tmp_path / "merged" / "scaling.json").read_text())
    assert [w["name"] for w in merged["workloads"]] == list(NAMES)  # report order again
    assert merged["summary"] == whole["summary"]
    assert sorted(map(json.dumps, merged["runs"])) == sorted(map(json.dumps, whole["runs"]))
    assert merged["settings"]["command"] == "; ".join([whole["settings"]["command"]] * 2)
    text = (tmp_path / "merged" / "scaling.md").read_text()
    original = (out / "scaling.md").read_text()
    assert text[text.index("\n## "):] == original[original.index("\n## "):]
    assert ((tmp_path / "merged" / "scaling.png").exists()
            == (out / "scaling.png").exists())
    # parts of different sweeps are refused
    other = dict(json.loads(Path(parts[1], "scaling.json").read_text()))
    other["settings"] = dict(other["settings"], threads=[1, 2, 4])
    Path(parts[1], "scaling.json").write_text(json.dumps(other))
    with pytest.raises(SystemExit, match="differ in threads"):
        merge_scaling.main([*parts, "--out", str(tmp_path / "again")])


def test_paired_loop_bench_takes_a_grain(tmp_path):
    """benchmarks/runtime/bench_loop_paired.py: a loop of the caller's grain, paired at 1 and 2
    threads, written under its own name with the loop it timed."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "runtime" / "bench_loop_paired.py"), "--quick",
         "--n", "1024", "--grain", "32", "--out", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads((tmp_path / "runtime_loop_paired_1024_32.json").read_text())
    (run,) = report["runs"]
    assert (run["n"], run["grain"], run["threads"], run["ok"]) == (1024, 32, [1, 2], True)
    assert run["ratio"] > 0 and "in chunks of 32" in (
        tmp_path / "runtime_loop_paired_1024_32.md").read_text()
    bad = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "runtime" / "bench_loop_paired.py"), "--quick",
         "--grain", "-1", "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
        timeout=60, check=False)
    assert bad.returncode != 0 and "--grain" in bad.stderr
