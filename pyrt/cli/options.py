"""Options every training command shares, and how they are applied before training."""

import argparse
import json
import sys

import pyrt

__all__ = ["CLIError", "add_common_options", "apply_common_options", "non_negative_float",
           "non_negative_int", "positive_float", "positive_int", "print_result"]


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
positive_float = _number(float, lambda v: v > 0, "a positive number")
non_negative_float = _number(float, lambda v: v >= 0, "a non-negative number")


def add_common_options(parser, *, seed_default):
    parser.add_argument("--threads", type=positive_int, default=None, metavar="N",
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


def apply_common_options(args):
    """Set the thread count and check that the device exists, before any data is loaded."""
    if args.threads is not None:
        pyrt.set_num_threads(args.threads)
    if args.device != "cpu":
        try:
            pyrt.zeros(1, device=args.device)
        except Exception as exc:  # noqa: BLE001 (any backend failure: its message says why)
            raise CLIError(f"--device {args.device} is not usable: {exc}") from None


def print_result(result, args, lines):
    """One JSON object with --json, else the human-readable `lines`."""
    if args.json:
        print(json.dumps(result), flush=True)
    else:
        for line in lines:
            print(line)
        sys.stdout.flush()
