"""pyrt's command line: ``python -m pyrt train xor``, ``python -m pyrt train mnist`` and
``python -m pyrt bench scaling``.

Each command module adds its parser with ``add_parser(subparsers)`` and sets ``run``, which
returns the exit status. Problems the user can fix raise CLIError: its message is printed
without a traceback and the process exits with its code (2 unless said otherwise).
"""

import argparse
import os
import signal
import sys

import pyrt
from pyrt.bench import cli as bench
from pyrt.cli import train_mnist, train_xor
from pyrt.cli.options import CLIError

__all__ = ["CLIError", "build_parser", "main"]

TRAIN_COMMANDS = (train_xor, train_mnist)


def build_parser():
    parser = argparse.ArgumentParser(
        prog="python -m pyrt",
        description="pyrt: a work-stealing parallel runtime with tensor kernels and a small "
                    "neural-network layer.")
    parser.add_argument("--version", action="version", version=f"pyrt {pyrt.__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    train = commands.add_parser("train", help="train a network and report accuracy and speed",
                                description="Train a network and report accuracy and speed.")
    tasks = train.add_subparsers(dest="task", metavar="TASK", required=True)
    for command in TRAIN_COMMANDS:
        command.add_parser(tasks)
    bench.add_parser(commands)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except CLIError as exc:
        print(f"pyrt: {exc}", file=sys.stderr, flush=True)
        return exc.code
    except KeyboardInterrupt:  # outside the loops that stop cleanly (loading data, say)
        print("pyrt: interrupted", file=sys.stderr, flush=True)
        return 130
    except BrokenPipeError:
        # the reader of stdout went away (`| head -1`): stop quietly with the status of a tool
        # killed by SIGPIPE; stdout now points at /dev/null, or the flush at exit would fail
        # again and print a traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE
