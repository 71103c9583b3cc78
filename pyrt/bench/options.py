"""The options of ``python -m pyrt bench scaling`` as argparse types: each turns the text a user
typed into a value, or raises argparse.ArgumentTypeError saying what was expected, which
argparse prints with the usage line before exiting with status 2."""

import argparse
import os

from pyrt.runtime import MAX_THREADS

__all__ = ["PEERS", "SUITES", "parse_peers", "parse_thread_list", "parse_threads",
           "power_of_two_counts"]

SUITES = ("runtime", "kernels", "train", "all")

# What each --peers name selects, and the knob that sets its thread count.
PEERS = {
    "torch": "PyTorch (torch.set_num_threads)",
    "omp": "OpenMP with gcc -fopenmp (OMP_NUM_THREADS)",
    "tbb": "oneTBB (TBB_NUM_THREADS, passed to tbb::global_control)",
    "numpy": "NumPy and its BLAS (threadpoolctl)",
    "numexpr": "numexpr (numexpr.set_num_threads)",
}


def parse_thread_list(text):
    """argparse type: "1,2,4" -> [1, 2, 4], the thread counts to run at (each from 1 to
    pyrt's MAX_THREADS)."""
    items = [t.strip() for t in text.split(",")]
    if not any(items):
        raise argparse.ArgumentTypeError("expected a comma-separated list of thread counts, "
                                         "got nothing")
    if not all(items):
        raise argparse.ArgumentTypeError(f"{text!r}: an empty item in the list of thread "
                                         "counts")
    try:
        threads = [int(t) for t in items]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a comma-separated list of thread counts") from None
    if min(threads) < 1 or max(threads) > MAX_THREADS:
        raise argparse.ArgumentTypeError(
            f"{text!r}: thread counts must be from 1 to {MAX_THREADS}")
    return threads


def power_of_two_counts(cpus):
    """1, 2, 4, ... below `cpus`, then `cpus` itself: the counts a scaling curve needs."""
    counts, t = [], 1
    while t < cpus:
        counts.append(t)
        t *= 2
    return counts + [cpus]


def parse_threads(text):
    """argparse type for --threads: "max" (1, 2, 4, ... up to the CPUs this process may run
    on) or a list of counts, returned sorted without repeats and always with 1, since every
    speedup is taken over pyrt's one-thread run."""
    if text.strip() == "max":
        return power_of_two_counts(len(os.sched_getaffinity(0)))
    return sorted(set(parse_thread_list(text)) | {1})


def parse_peers(text):
    """argparse type for --peers: "auto" (every peer that is installed: the names of PEERS),
    "none" (an empty list), or comma-separated names of PEERS."""
    text = text.strip()
    if text == "auto":
        return list(PEERS)
    if text == "none":
        return []
    names = [p.strip() for p in text.split(",") if p.strip()]
    unknown = [p for p in names if p not in PEERS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown peer(s) {', '.join(map(repr, unknown)) or repr(text)}: expected auto, "
            f"none or a comma-separated list of {', '.join(PEERS)}")
    return list(dict.fromkeys(names))
