"""The arithmetic and the files of a scaling sweep: medians, speedups, efficiencies, ratios;
scaling.json and scaling.md.

For a workload at t threads, with T(v, t) the median time of variant v:

    speedup(v, t)    = T(pyrt, 1) / T(v, t)     over pyrt's one-thread run, for every variant,
                                                 so that a peer's curve shows how it compares
    efficiency(t)    = speedup(pyrt, t) / t      1 is perfect scaling
    pyrt / v at t    = T(pyrt, t) / T(v, t)      below 1: pyrt is faster

A variant that runs on one thread only (a serial baseline, NumPy's single-threaded kernels)
is compared at every t with its one-thread time.
"""

import json
import statistics

__all__ = ["efficiency", "markdown", "markdown_table", "ratio", "speedup", "summarise",
           "write_files"]


def speedup(base_s, seconds):
    return base_s / seconds


def efficiency(speedup_, threads):
    return speedup_ / threads


def ratio(pyrt_s, peer_s):
    return pyrt_s / peer_s


def medians(records):
    """{(workload, variant, threads): median of all the samples of its records}, over the
    records that finished with samples."""
    samples = {}
    for r in records:
        if r.get("samples"):
            samples.setdefault((r["workload"], r["variant"], r["threads"]), []).extend(
                r["samples"])
    return {key: statistics.median(values) for key, values in samples.items()}


def summarise(workloads, records, threads, cpus):
    """Per workload: its rows, one per thread count at which pyrt finished, each with pyrt's
    median, speedup and efficiency and, per other variant, its median, speedup and the ratio
    pyrt / variant (see the module's docstring); None where a figure is missing."""
    median = medians(records)
    summary = []
    for w in workloads:
        base = median.get((w.name, w.pyrt.label, 1))
        rows = []
        for t in threads:
            mine = median.get((w.name, w.pyrt.label, t))
            if mine is None:
                continue
            up = speedup(base, mine) if base else None
            row = {"threads": t, "oversubscribed": t > cpus, "pyrt_s": mine, "speedup": up,
                   "efficiency": efficiency(up, t) if up else None, "others": {}}
            if w.rate:
                row["pyrt_rate"] = w.rate[1] / mine
            for v in w.variants:
                if v.is_pyrt:
                    continue
                theirs = median.get((w.name, v.label, t if v.threaded else 1))
                if theirs is not None:
                    row["others"][v.label] = {
                        "seconds": theirs, "speedup": speedup(base, theirs) if base else None,
                        "pyrt_over": ratio(mine, theirs),
                        **({"rate": w.rate[1] / theirs} if w.rate else {})}
            rows.append(row)
        summary.append({"workload": w.name, "rows": rows})
    return summary


# ---- markdown --------------------------------------------------------------------------------


def markdown_table(head, rows):
    """Lines of a markdown table: the header, the rule, one line per row of cells."""
    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + [
        "| " + " | ".join(str(c) for c in row) + " |" for row in rows]


def seconds_text(s):
    """A time in the unit that gives it 3 significant digits or so."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"


def _figure(seconds, rate, unit):
    text = seconds_text(seconds)
    return f"{text} ({rate:.3g} {unit})" if rate is not None else text


def workload_table(w, summary, cpus):
    """The markdown lines of one workload's table, and a footnote on oversubscription."""
    others = [v for v in w.variants if not v.is_pyrt]
    unit = w.rate[0] if w.rate else None
    head = ["threads", "pyrt", "speedup", "efficiency"]
    for v in others:
        head += [v.label + ("" if v.threaded else " (1 thread)"), f"pyrt ÷ {v.label}"]
    cells = []
    for row in summary["rows"]:
        line = [f"{row['threads']}*" if row["oversubscribed"] else row["threads"],
                _figure(row["pyrt_s"], row.get("pyrt_rate"), unit),
                f"{row['speedup']:.2f}x" if row["speedup"] else "-",
                f"{row['efficiency']:.0%}" if row["efficiency"] else "-"]
        for v in others:
            o = row["others"].get(v.label)
            line += ([_figure(o["seconds"], o.get("rate"), unit), f"{o['pyrt_over']:.2f}"]
                     if o else ["-", "-"])
        cells.append(line)
    lines = markdown_table(head, cells)
    if any(row["oversubscribed"] for row in summary["rows"]):
        lines += ["", (f"\\* oversubscribed: more threads than the {cpus} CPUs this process "
                       "may run on (pyrt's kernels keep no more of its threads awake than "
                       "there are CPUs: README, Threads).")]
    return lines


def markdown(report, workloads):
    """scaling.md: a header (date, command, machine, method, notes, skipped variants), then a
    section per workload."""
    info, settings = report["machine"], report["settings"]
    libraries = ", ".join(f"{name} {v}" for name, v in info["libraries"].items() if v)
    machine = (f"Machine: {info['cpu_model']}, {info['cores']} CPUs, "
               f"{len(info['affinity'])} this process may run on; {info['gcc']}; {libraries}; "
               f"load average at start {info['loadavg_start'][0]:.2f}, at end "
               f"{info['loadavg_end'][0]:.2f}.")
    repeat = settings["repeat"]
    runs = f"{repeat} timed run{'s' if repeat > 1 else ''}, one per process"
    rounds = ("" if repeat == 1 else
              f", taken in {repeat} rounds that each run every variant at every thread count")
    method = (f"Each (workload, variant, thread count) runs in fresh processes; a figure is the "
              f"median of {runs}{rounds}"
              + (" (--quick sizes: a smoke test, not a measurement)" if settings["quick"] else "")
              + ". `speedup` is pyrt's one-thread time over its time at this thread count, "
              "`efficiency` the speedup over the thread count, `pyrt ÷ X` pyrt's time over X's "
              "at the same thread count (below 1: pyrt is faster). Rates in parentheses.")
    lines = ["# pyrt scaling across thread counts", "",
             f"{settings['date']}; `{settings['command']}`", "", machine, "", method]
    if report["notes"]:
        lines += ["", "Notes:", ""] + [f"- {n}" for n in report["notes"]]
    if report["skipped"]:
        lines += ["", "Skipped:", ""] + [
            f"- {s['workload']} · {s['variant']}: {s['reason']}" for s in report["skipped"]]
    by_name = {s["workload"]: s for s in report["summary"]}
    for w in workloads:
        lines += ["", f"## {w.title}", "", w.what, ""]
        lines += list(w.notes) + ([""] if w.notes else [])
        if by_name[w.name]["rows"]:
            lines += workload_table(w, by_name[w.name], len(info["affinity"]))
        else:
            lines.append("No pyrt figure: see the notes and skipped variants above.")
    return "\n".join(lines) + "\n"


def write_files(out, report, workloads):
    """Write out/scaling.json (the report) and out/scaling.md; return the markdown."""
    text = markdown(report, workloads)
    out.mkdir(parents=True, exist_ok=True)
    (out / "scaling.json").write_text(json.dumps(report, indent=1) + "\n")
    (out / "scaling.md").write_text(text)
    return text
