"""Options every training command shares, and how they are applied before training."""

import argparse
import json
import math
import os
import sys
from pathlib import Path

import numpy as np

import pyrt
from pyrt.runtime import MAX_THREADS

__all__ = ["CLIError", "add_common_options", "apply_common_options", "mean_loss",
           "non_empty_path", "non_negative_float", "non_negative_int", "positive_float",
           "positive_int", "print_result", "step_function", "thread_count", "wait_for_device",
           "writable_file"]


class CLIError(Exception):
    """A problem the user can fix (no data, no GPU, a bad checkpoint): main() prints the
    message without a traceback and exits with `code`."""

    def __init__(self, message, code=2):
        super().__init__(message)
        self.code = code


def _number(kind, check, what):
    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if not check(value):
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
        return value

    return parse


positive_int = _number(int, lambda v: v >= 1, "a positive integer")
non_negative_int = _number(int, lambda v: v >= 0, "a non-negative integer")
positive_float = _number(float, lambda v: 0 < v < math.inf, "a positive number")
non_negative_float = _number(float, lambda v: 0 <= v < math.inf, "a non-negative number")
thread_count = _number(int, lambda v: 1 <= v <= MAX_THREADS, f"an integer from 1 to {MAX_THREADS}")


def non_empty_path(what):
    """argparse type: a path, the empty one refused. Path("") is the current folder, so
    `--resume "$CKPT"` with the variable unset would otherwise start afresh and `--data "$DIR"`
    read whatever data the current folder holds, both without a word."""
    def parse(text):
        if not text:
            raise argparse.ArgumentTypeError(f"expected {what}, got an empty path")
        return text

    return parse


def add_common_options(parser, *, seed_default):
    parser.add_argument("--threads", type=thread_count, default=None, metavar="N",
                        help="worker threads (default: PYRT_NUM_THREADS, else all CPUs this "
                             "process may use)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                        help="where to train (default: cpu)")
    parser.add_argument("--seed", type=non_negative_int, default=None, metavar="S",
                        help=f"seed of the initial weights and shuffling (default: "
                             f"{seed_default})")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object with the results, nothing else on stdout")
    parser.add_argument("--limit-steps", type=positive_int, default=None, metavar="K",
                        help="stop after K training steps")
    parser.add_argument("--cuda-graph", action="store_true",
                        help="with --device cuda and SGD: capture one training step into a "
                             "CUDA graph and replay it per batch")


def apply_common_options(args):
    """Set the thread count and check that the device exists, before any data is loaded."""
    if args.threads is not None:
        pyrt.set_num_threads(args.threads)
    if getattr(args, "cuda_graph", False) and args.device != "cuda":
        raise CLIError("--cuda-graph needs --device cuda")
    if args.device != "cpu":
        try:
            pyrt.zeros(1, device=args.device)
        except Exception as exc:  # noqa: BLE001 (any backend failure: its message says why)
            raise CLIError(f"--device {args.device} is not usable: {exc}") from None


def writable_file(path, option):
    """CLIError unless a file can be written at `path` (its folder exists and is writable, and
    `path` is not a folder): checked before training, so that a run is not lost at its end
    for a mistyped path."""
    if not str(path):
        raise CLIError(f"{option}: the path is empty; give a file name, such as checkpoint.npz")
    path = Path(path)
    folder = path.parent
    if path.is_dir():
        raise CLIError(f"{option} {path}: is a folder; give a file name, such as "
                       f"{path / 'checkpoint.npz'}")
    if not folder.is_dir():
        what = "is a file, not a folder" if folder.exists() else "does not exist"
        raise CLIError(f"{option} {path}: the folder {folder} {what}")
    if not os.access(folder, os.W_OK | os.X_OK) or (path.exists()
                                                   and not os.access(path, os.W_OK)):
        raise CLIError(f"{option} {path}: not writable")


def step_function(args, model, criterion, optimizer):
    """``step(x, y) -> detached loss`` for the chosen device: models.train_step, or the
    step captured into a CUDA graph with --cuda-graph."""
    if getattr(args, "cuda_graph", False):
        from pyrt.cuda.graph import CapturedStep

        try:
            return CapturedStep(model, criterion, optimizer)
        except ValueError as exc:
            raise CLIError(f"--cuda-graph: {exc}") from None
    from pyrt.cli.models import train_step

    return lambda x, y: train_step(model, criterion, optimizer, x, y, args.device)


def wait_for_device(device):
    """Return once the device has run the work queued for it, so that a clock read next
    covers it (a CUDA launch returns before the GPU is done); nothing to wait for on the CPU."""
    if device != "cpu":
        from pyrt import cuda

        cuda.synchronize()


def mean_loss(losses):
    """The mean of a list of detached 0-d loss tensors, read from the device (if they are
    there) in one copy: the logging point of a training loop."""
    if not losses:
        return None
    if losses[0].device == "cpu":
        return float(np.mean([v.item() for v in losses]))
    import cupy

    return float(cupy.stack([v._data for v in losses]).mean().get())


def _finite(value):
    """`value` with every NaN or infinite float (a diverged loss) replaced by None, which JSON
    can hold."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def print_result(result, args, lines):
    """One JSON object with --json (strict JSON: a non-finite figure is null), else the
    human-readable `lines`."""
    if args.json:
        print(json.dumps(_finite(result), allow_nan=False), flush=True)
    else:
        for line in lines:
            print(line)
        sys.stdout.flush()
