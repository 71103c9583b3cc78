"""Combine sweeps of ``python -m pyrt bench scaling`` taken in parts on one machine (by
--suite or --only, at the same thread counts and repeat) into one scaling.{json,md,png}, as
a single run would have written them: the workloads in report order, every raw timing kept,
each part's command listed.

    python benchmarks/merge_scaling.py PART_DIR... --out DIR
"""

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from pyrt.bench import report, workloads
from pyrt.bench.plot import write_plot


def _load(folder):
    path = Path(folder) / "scaling.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        sys.exit(f"merge_scaling: cannot read {path}: {exc}")


def merge(parts):
    """One report from several, and the Workload objects its markdown and plot need."""
    first = parts[0]
    for p in parts[1:]:
        for key in ("threads", "repeat", "quick"):
            if p["settings"][key] != first["settings"][key]:
                sys.exit(f"merge_scaling: the parts differ in {key}: "
                         f"{first['settings'][key]} and {p['settings'][key]}")
        if p["machine"]["cpu_model"] != first["machine"]["cpu_model"]:
            sys.exit("merge_scaling: the parts ran on different machines")
    order = {name: i for i, name in enumerate(workloads.NAMES)}
    entries = sorted(((w, s, p) for p in parts for w, s in zip(p["workloads"], p["summary"])),
                     key=lambda e: order[e[0]["name"]])
    names = [w["name"] for w, _, _ in entries]
    if len(set(names)) != len(names):
        sys.exit(f"merge_scaling: a workload appears in several parts: {names}")
    settings = dict(first["settings"])
    settings["command"] = "; ".join(p["settings"]["command"] for p in parts)
    settings["suite"] = ",".join(p["settings"]["suite"] for p in parts)
    settings["peers"] = sorted({peer for p in parts for peer in p["settings"]["peers"]})
    machine = dict(first["machine"])
    machine["loadavg_end"] = parts[-1]["machine"]["loadavg_end"]
    merged = {
        "machine": machine, "settings": settings,
        "notes": list(dict.fromkeys(n for p in parts for n in p["notes"])),
        "skipped": [s for p in parts for s in p["skipped"]],
        "workloads": [w for w, _, _ in entries],
        "summary": [s for _, s, _ in entries],
        "runs": [r for p in parts for r in p["runs"]],
    }
    # the catalogue's workloads (for rates and notes) with the variants each part ran
    catalogue = {w.name: w for w in workloads.catalogue(settings["quick"], settings["data"])}
    chosen = []
    for w, _, _ in entries:
        variants = tuple(workloads.Variant(v["label"], peer=v["peer"], program=v["program"],
                                           threaded=v["threaded"], reference=v["reference"])
                         for v in w["variants"])
        chosen.append(dataclasses.replace(catalogue[w["name"]], what=w["what"],
                                          variants=variants))
    return merged, chosen


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("parts", nargs="+", help="folders holding a scaling.json each")
    p.add_argument("--out", required=True, type=Path, help="where the merged files go")
    args = p.parse_args(argv)
    merged, chosen = merge([_load(f) for f in args.parts])
    args.out.mkdir(parents=True, exist_ok=True)
    note = write_plot(args.out / "scaling.png", merged["summary"], chosen,
                      merged["settings"]["threads"])
    if note:
        merged["notes"].append(note)
    report.write_files(args.out, merged, chosen)
    print(f"wrote {args.out / 'scaling.json'}, {args.out / 'scaling.md'}"
          + ("" if note else f", {args.out / 'scaling.png'}"))


if __name__ == "__main__":
    main()
