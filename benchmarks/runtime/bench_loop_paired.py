"""The 64-element parallel_for on one thread and on several, in turns in one process.

A loop too small to split runs whole on the caller at any thread count; on several threads
parallel_for first checks that it knows the loop to be that small (csrc/runtime/parallel_for.c,
the fast path), on one it does not. The difference is about a nanosecond of a call of 30-50: fresh
processes, one per thread count as in `python -m pyrt bench scaling`, meet different drifts of
a shared machine's speed and part by 10-15% either way. benchmarks/runtime/loop/loop_paired.c
times batches of 1000 calls on one thread and on --threads in turns (a round runs one batch of
each) and reports the median over the rounds of the ratio of the two batches; this script
builds it, runs it --repeat times and reports every run and the median.

    python benchmarks/runtime/bench_loop_paired.py
    python benchmarks/runtime/bench_loop_paired.py --n 1024 --grain 32  # see below
    python benchmarks/runtime/bench_loop_paired.py --quick --out /tmp/paired   # smoke test

With --grain the caller asks for chunks of that many indices: 1024 floats in chunks of 32
(about 0.4 us in all) is a loop that could be split but is not worth it, and pyrt should keep
it on the caller (csrc/runtime/parallel_for.c, SPLIT_MIN_US and SPLIT_SEEN_US).

Writes runtime_loop_paired.json and .md under --out (default benchmarks/results), or
runtime_loop_paired_<n>_<grain>.json and .md for another loop.
"""

import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import benchmarks._harness as harness  # noqa: E402
import pyrt  # noqa: E402
from pyrt.bench import programs  # noqa: E402

BUILD = ROOT / "benchmarks" / "build" / "runtime"


def markdown(report):
    settings = report["settings"]
    cells = [[str(i + 1), f"{r['ns_per_call'][0]:.1f}", f"{r['ns_per_call'][1]:.1f}",
              f"{r['ratio']:.3f}"] for i, r in enumerate(report["runs"])]
    many = settings["many"]
    table = harness.markdown_table(
        ["run", "1 thread (ns per call)", f"{many} threads (ns per call)",
         f"{many} threads ÷ 1 (median of rounds)"], cells)
    grain = settings.get("grain", 0)
    chunks = f"in chunks of {grain}" if grain else "with pyrt's grain"
    method = (f"`y[i] = y[i]*a + x[i]` over {settings['n']} floats through "
              f"pyrt_parallel_for {chunks}; each run is one process of "
              f"{settings['rounds']} rounds, a round timing a batch of 1000 calls on one thread "
              f"and a batch on {many} (every other round in the other order); times are the "
              "median batch's, the ratio the median of the rounds' ratios. Median ratio over "
              f"the {len(report['runs'])} runs: {report['median_ratio']:.3f}.")
    return harness.markdown_report(report, "A small loop on one thread and on several, paired",
                                   f"pyrt {pyrt.__version__}", method, [table], load_at_end=True)


def main(argv=None):
    args = harness.parse_options(argv, __doc__, repeat=5, quick_repeat=1, own=[
        ("--many", {"type": int, "default": 2, "help": "the other thread count (default 2)"}),
        ("--n", {"type": int, "default": 64, "help": "floats in the loop (default 64)"}),
        ("--grain", {"type": int, "default": 0,
                     "help": "the caller's grain (default 0: pyrt's own)"})],
        quick_help="one run of few rounds")
    if args.n < 1 or args.grain < 0:
        sys.exit("bench_loop_paired: --n must be at least 1 and --grain at least 0")
    notes = []
    if "loop_paired" not in programs.build({"loop_paired"}, notes, ROOT, BUILD):
        sys.exit("bench_loop_paired: loop_paired did not build: " + " ".join(notes))
    n, rounds = args.n, 50 if args.quick else 2000
    runs = []
    for _ in range(args.repeat):
        done = subprocess.run([str(BUILD / "loop_paired"), str(n), str(rounds), str(args.many),
                               str(args.grain)],
                              check=True, capture_output=True, text=True, timeout=600)
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    settings = harness.run_settings(__file__, argv, args, n=n, rounds=rounds, many=args.many,
                                    grain=args.grain)
    name = ("runtime_loop_paired" if (n, args.grain) == (64, 0)
            else f"runtime_loop_paired_{n}_{args.grain}")
    harness.write_report(args.out, name, harness.machine_info({}), settings,
                         notes, {"runs": runs,
                                 "median_ratio": statistics.median(r["ratio"] for r in runs)},
                         markdown)


if __name__ == "__main__":
    main()
