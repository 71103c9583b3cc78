"""``pyrt train mnist``: train an MLP or a CNN on MNIST or Fashion-MNIST.

Timing covers the training loop only (batches, forward, backward, optimizer steps): loading
the files, evaluating on the test set and saving checkpoints are outside it. A checkpoint
records the epoch and the number of batches done in it; the shuffle order of an epoch depends
only on (seed, epoch), so a resumed run continues with exactly the batches an uninterrupted
run would have seen, and reaches the same weights.
"""

import math
import os
import shlex
import signal
import sys
import time
from pathlib import Path

import numpy as np

import pyrt
from pyrt import nn, optim
from pyrt.cli.checkpoint import load_checkpoint, save_checkpoint
from pyrt.cli.interrupt import StopOnInterrupt
from pyrt.cli.models import MODELS, build_model
from pyrt.cli.options import (
    CLIError,
    add_common_options,
    apply_common_options,
    mean_loss,
    non_empty_path,
    non_negative_float,
    positive_float,
    positive_int,
    print_result,
    step_function,
    wait_for_device,
    writable_file,
)
from pyrt.cli.progress import ProgressBar
from pyrt.data import DataLoader, DatasetNotFoundError, load_mnist

__all__ = ["add_parser", "run"]

DEFAULT_CHECKPOINT = "pyrt-checkpoint.npz"
EVAL_BATCH = 1000

# the settings that define a training run: taken from the checkpoint on --resume
DEFAULTS = {"model": "mlp", "batch_size": 64, "optimizer": "sgd", "lr": None, "momentum": 0.9,
            "seed": 0}
DEFAULT_LR = {"sgd": 0.1, "adam": 1e-3, "adamw": 1e-3}
CHECKPOINT_KEYS = {"model", "optimizer", "epoch", "step", "settings"}
# a stop at the next step boundary, with a checkpoint: Ctrl-C, kill or timeout, the terminal
# closing
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def add_parser(subparsers):
    p = subparsers.add_parser(
        "mnist", help="train on MNIST or Fashion-MNIST",
        description="Train a small network on MNIST-format data (MNIST or Fashion-MNIST). "
                    "The data is looked for in --data DIR, else $PYRT_DATA, ~/.cache/pyrt and "
                    "/usr/share/datasets/fashion-mnist (each also in torchvision's MNIST/raw "
                    "and FashionMNIST/raw layout), else MNIST is downloaded to ~/.cache/pyrt.")
    p.add_argument("--data", type=non_empty_path("a directory"), metavar="DIR",
                   help="directory holding the four IDX files")
    p.add_argument("--model", choices=tuple(MODELS), default=None,
                   help="mlp: 784-128-10; cnn: conv 8, pool, conv 16, pool, linear "
                        "(default: mlp)")
    p.add_argument("--epochs", type=positive_int, default=1, metavar="E",
                   help="train until E epochs are done, counting resumed ones (default: 1)")
    p.add_argument("--batch-size", type=positive_int, default=None, metavar="B",
                   help="default: 64")
    p.add_argument("--lr", type=positive_float, default=None, metavar="LR",
                   help="learning rate (default: 0.1 for sgd, 0.001 for adam and adamw)")
    p.add_argument("--momentum", type=non_negative_float, default=None, metavar="M",
                   help="SGD momentum (default: 0.9)")
    p.add_argument("--optimizer", choices=("sgd", "adam", "adamw"), default=None,
                   help="default: sgd")
    p.add_argument("--save", metavar="PATH",
                   help="write a checkpoint (.npz) after each epoch and on Ctrl-C")
    p.add_argument("--resume", type=non_empty_path("a checkpoint file"), metavar="PATH",
                   help="continue from a checkpoint")
    add_common_options(p, seed_default=DEFAULTS["seed"])
    p.set_defaults(run=run)
    return p


def _settings(args, saved):
    """The run's settings: explicit options, else the checkpoint's, else the defaults. An
    explicit option that contradicts the checkpoint is an error."""
    settings = {}
    for key, default in DEFAULTS.items():
        given = getattr(args, key)
        if key == "momentum" and given is not None and settings["optimizer"] != "sgd":
            # settings["optimizer"] is known (it comes first in DEFAULTS); checked before the
            # comparison with a checkpoint, whose momentum an Adam run never used
            raise CLIError(f"--momentum applies to --optimizer sgd, not "
                           f"{settings['optimizer']}")
        if saved is not None and key in saved:
            if given is not None and given != saved[key]:
                raise CLIError(f"--{key.replace('_', '-')} {given} contradicts the checkpoint "
                               f"{args.resume}, which was trained with {saved[key]}; leave it "
                               "out to continue that run")
            settings[key] = saved[key]
        else:
            settings[key] = given if given is not None else default
    if settings["lr"] is None:
        settings["lr"] = DEFAULT_LR[settings["optimizer"]]
    return settings


def _optimizer(settings, params):
    if settings["optimizer"] == "adam":
        return optim.Adam(params, lr=settings["lr"])
    if settings["optimizer"] == "adamw":  # torch's default weight decay, 0.01
        return optim.AdamW(params, lr=settings["lr"])
    return optim.SGD(params, lr=settings["lr"], momentum=settings["momentum"])


def _load_data(args):
    try:
        return load_mnist(args.data)
    except (DatasetNotFoundError, ValueError) as exc:  # ValueError: a damaged file, named
        raise CLIError(str(exc)) from None
    except OSError as exc:  # a file found but not readable
        raise CLIError(f"{exc.filename}: cannot be read ({exc.strerror})") from None


def _check_saved(saved, path):
    """CLIError unless the run settings and position stored in checkpoint `path` are ones
    this command could have written."""
    settings, epoch, step = saved["settings"], saved["epoch"], saved["step"]

    def bad(what):
        return CLIError(f"{path}: not a checkpoint of 'pyrt train mnist' ({what})")

    if not isinstance(settings, dict):
        raise bad("its settings are not a table")
    checks = {
        "model": lambda v: v in MODELS,
        "optimizer": lambda v: v in DEFAULT_LR,
        "batch_size": lambda v: type(v) is int and v >= 1,
        "lr": lambda v: type(v) in (int, float) and 0 < v < math.inf,
        "momentum": lambda v: type(v) in (int, float) and 0 <= v < math.inf,
        "seed": lambda v: type(v) is int and v >= 0,
    }
    for key, ok in checks.items():
        if key in settings and not ok(settings[key]):
            raise bad(f"{key} {settings[key]!r}")
    for key, value in (("epoch", epoch), ("step", step)):
        if type(value) is not int or value < 0:
            raise bad(f"{key} {value!r}")


def evaluate(model, images, labels, device):
    """Accuracy on (images, labels), in batches, without recording gradients. On a GPU the
    predicted classes stay on the device until the last batch and are read in one copy: the
    host never waits on the GPU between batches."""
    model.eval()
    predicted = []
    with pyrt.no_grad():
        for lo in range(0, len(images), EVAL_BATCH):
            x = pyrt.Tensor(images[lo:lo + EVAL_BATCH])
            if device != "cpu":
                x = x.to(device)
            predicted.append(model(x).argmax(dim=1)._data)
    model.train()
    if not predicted:
        return 0.0
    if device != "cpu":
        import cupy

        predicted = cupy.concatenate(predicted).get()
    else:
        predicted = np.concatenate(predicted)
    return int(np.count_nonzero(predicted == labels)) / len(images)


def _continue_command(args, path):
    """The shell command that continues this run from the checkpoint at `path`: the options
    given that the checkpoint does not hold (the device above all: left out, a GPU run would
    go on on the CPU), each word quoted for the shell so that the line can be pasted."""
    words = ["python", "-m", "pyrt", "train", "mnist", "--resume", str(path),
             "--epochs", str(args.epochs)]
    for option, value in (("--data", args.data), ("--save", args.save),
                          ("--threads", args.threads)):
        if value is not None:
            words += [option, str(value)]
    if args.device != "cpu":
        words += ["--device", args.device]
    words += [flag for flag, given in (("--cuda-graph", args.cuda_graph), ("--json", args.json))
              if given]
    return shlex.join(words)


def _epochs_done(epoch, step, batches):
    """Whole epochs as an int, a partial one as a fraction."""
    if step == 0:
        return epoch
    return round(epoch + step / batches, 4)


def run(args):
    apply_common_options(args)
    saved = None
    if args.resume is not None:
        try:
            saved = load_checkpoint(args.resume)
        except FileNotFoundError:
            raise CLIError(f"--resume {args.resume}: no such file") from None
        except ValueError as exc:
            raise CLIError(str(exc)) from None
        missing = CHECKPOINT_KEYS - set(saved)
        if missing:
            raise CLIError(f"{args.resume}: not a checkpoint of 'pyrt train mnist' (no "
                           f"{', '.join(sorted(missing))})")
        _check_saved(saved, args.resume)
        if saved["epoch"] >= args.epochs:
            raise CLIError(f"{args.resume} has already trained {saved['epoch']} epoch(s): "
                           f"--epochs counts them, so pass --epochs {saved['epoch'] + 1} or "
                           "more to train further")
    settings = _settings(args, saved["settings"] if saved else None)
    if args.save is not None:  # checked before the data loads, not after the training
        writable_file(args.save, "--save")

    data = _load_data(args)
    for what, images in (("training", data.train_images), ("test", data.test_images)):
        if not len(images):
            raise CLIError(f"the {what} set in {data.root} holds no images")
    if args.save is not None and Path(args.save).resolve() in {
            f.resolve() for f in data.files}:
        raise CLIError(f"--save {args.save}: is one of the data set's files; a checkpoint "
                       "would overwrite it")
    pyrt.manual_seed(settings["seed"])
    model = build_model(settings["model"])
    if args.device != "cpu":
        model.to(args.device)
    optimizer = _optimizer(settings, model.parameters())
    criterion = nn.CrossEntropyLoss()
    loader = DataLoader((data.train_images, data.train_labels), settings["batch_size"],
                        shuffle=True, seed=settings["seed"])
    epoch, step = 0, 0
    if saved:
        try:
            model.load_state_dict(saved["model"])
            optimizer.load_state_dict(saved["optimizer"])
        except (RuntimeError, ValueError, KeyError, TypeError) as exc:
            # TypeError: a list or a string where the checkpoint should hold a state dict
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise CLIError(f"{args.resume}: does not fit the {settings['model']} model "
                           f"({first.rstrip(':')})") from None
        epoch, step = saved["epoch"], saved["step"]
        if step >= len(loader):
            raise CLIError(f"{args.resume}: stopped at batch {step} of an epoch, but this data "
                           f"set has {len(loader)} batches an epoch: not the data it was "
                           "trained on")

    def checkpoint(path):
        return save_checkpoint(path, {
            "model": model.state_dict(), "optimizer": optimizer.state_dict(),
            "epoch": epoch, "step": step, "settings": settings,
            "args": {k: v for k, v in vars(args).items() if k != "run"},
        })

    def save_or_warn(path):
        """Write the --save checkpoint; a failure (the folder removed, the disk full) is
        reported and training goes on, rather than losing the run."""
        try:
            checkpoint(path)
        except OSError as exc:
            print(f"pyrt: warning: the checkpoint could not be written to {path}: "
                  f"{exc.strerror or exc}", file=sys.stderr, flush=True)

    batches = len(loader)
    train_step = step_function(args, model, criterion, optimizer)
    name = data.name
    show_bar = ProgressBar.wanted(args.json)
    if not args.json:
        print(f"training {settings['model']} on {name} ({data.root}): "
              f"{len(data.train_images)} train / {len(data.test_images)} test images, "
              f"batch {settings['batch_size']}, {settings['optimizer']} lr {settings['lr']}, "
              f"{pyrt.get_num_threads()} thread(s), {args.device}", flush=True)

    train_seconds, steps_run, images_run = 0.0, 0, 0
    test_accuracy, evaluated_at = None, None
    epoch_losses = []
    with StopOnInterrupt(STOP_SIGNALS) as stop:
        while epoch < args.epochs and not stop.requested:
            if args.limit_steps is not None and steps_run >= args.limit_steps:
                break
            loader.set_epoch(epoch)
            bar = ProgressBar(len(data.train_images), f"epoch {epoch + 1}/{args.epochs}",
                              show_bar)
            batches_iter = iter(loader)
            for _ in range(step):  # resuming mid-epoch: skip the batches already trained
                next(batches_iter)
            losses, images_epoch = [], 0
            start = time.perf_counter()
            for x, y in batches_iter:
                loss = train_step(x, y)
                losses.append(loss)
                step += 1
                steps_run += 1
                images_epoch += len(x)
                bar.update(len(x), loss)
                if stop.requested or (args.limit_steps is not None
                                      and steps_run >= args.limit_steps):
                    break
            wait_for_device(args.device)
            seconds = time.perf_counter() - start
            train_seconds += seconds
            images_run += images_epoch
            bar.close()
            # the logging point: on a GPU, the epoch's losses are read in one copy
            epoch_losses = [mean_loss(losses)] if losses else epoch_losses
            if step < batches:  # stopped inside the epoch
                break
            epoch, step = epoch + 1, 0
            test_accuracy, evaluated_at = (evaluate(model, data.test_images, data.test_labels,
                                                    args.device), (epoch, step))
            if args.save is not None:
                save_or_warn(args.save)
            if not args.json:
                print(f"epoch {epoch}/{args.epochs}: train loss {np.mean(epoch_losses):.4f}, "
                      f"test accuracy {test_accuracy:.2%}, {seconds:.2f} s "
                      f"({images_epoch / max(seconds, 1e-9):,.0f} images/s)", flush=True)

    if stop.requested and (epoch, step) != (args.epochs, 0):  # stopped before the end
        path = Path(args.save if args.save is not None else DEFAULT_CHECKPOINT)
        code = 128 + (stop.signum or signal.SIGINT)  # 130 for Ctrl-C, 143 for SIGTERM
        try:
            checkpoint(path)
        except OSError as exc:
            raise CLIError(f"interrupted at epoch {epoch + 1}, batch {step} of {batches}; the "
                           f"checkpoint could not be written to {path}: {exc.strerror}",
                           code=code) from None
        raise CLIError(
            f"interrupted at epoch {epoch + 1}, batch {step} of {batches}: checkpoint saved to "
            f"{path}; continue with: {_continue_command(args, path)}", code=code)
    if evaluated_at != (epoch, step):
        test_accuracy = evaluate(model, data.test_images, data.test_labels, args.device)
        if args.save is not None and step:
            save_or_warn(args.save)

    result = {
        "task": "mnist",
        "dataset": name,
        "model": settings["model"],
        "epochs": _epochs_done(epoch, step, batches),
        "steps": steps_run,
        "train_seconds": round(train_seconds, 6),
        "images_per_s": round(images_run / train_seconds, 1) if train_seconds > 0 else None,
        "test_accuracy": test_accuracy,
        "final_loss": float(np.mean(epoch_losses)) if epoch_losses else None,
        "threads": pyrt.get_num_threads(),
        "device": args.device,
        "seed": settings["seed"],
        "batch_size": settings["batch_size"],
        "lr": settings["lr"],
        "momentum": settings["momentum"] if settings["optimizer"] == "sgd" else None,
        "optimizer": settings["optimizer"],
    }
    lines = [(f"test accuracy {test_accuracy:.2%} after {result['epochs']} epoch(s); "
              f"training {train_seconds:.2f} s, {result['images_per_s'] or 0:,.0f} images/s")]
    if args.save is not None:
        lines.append(f"checkpoint: {os.path.abspath(args.save)}")
    print_result(result, args, lines)
    return 0
