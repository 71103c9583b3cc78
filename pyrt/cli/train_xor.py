"""``pyrt train xor``: the XOR benchmark of Arraymancer issue #485.

3200 random pairs, batches of 32 taken in order (100 steps an epoch), the bias-free network
2 -> 3 -> ReLU -> 1 with weights drawn from U(-1, 1), sigmoid cross-entropy, SGD with learning
rate 0.01. Training stops when the network classifies the whole data set correctly (logit > 0
means 1) or when the step budget is spent.

Without biases the input (0, 0) always gets the logit 0, and the three hidden units must
split the other three inputs between them exactly; from most initial weights plain SGD instead
settles in a minimum that gets one of the four inputs wrong (75% accuracy) and stays there.
So when the data set is not learnt within --restart-after epochs, the weights are drawn
again (from the same seeded generator), as often as the budget allows.
"""

import time

import numpy as np

import pyrt
from pyrt import nn, optim
from pyrt.cli.models import xor_net
from pyrt.cli.options import (
    add_common_options,
    apply_common_options,
    mean_loss,
    non_negative_int,
    positive_float,
    positive_int,
    print_result,
    step_function,
    wait_for_device,
)
from pyrt.data import DataLoader, make_xor
from pyrt.data.xor import XOR_TRUTH_TABLE

__all__ = ["add_parser", "run"]

SAMPLES = 3200
DEFAULT_BUDGET = 100_000


def add_parser(subparsers):
    p = subparsers.add_parser(
        "xor", help="learn XOR with the 2-3-1 network of Arraymancer #485",
        description="Learn XOR with the bias-free 2-3-1 ReLU network of Arraymancer issue "
                    "#485 (3200 samples, SGD), until 100% accuracy or the step budget.")
    p.add_argument("--batch-size", type=positive_int, default=32, metavar="B",
                   help="default: 32")
    p.add_argument("--lr", type=positive_float, default=0.01, metavar="LR",
                   help="SGD learning rate (default: 0.01)")
    p.add_argument("--restart-after", type=non_negative_int, default=30, metavar="E",
                   help="draw new weights when not solved within E epochs; 0: never "
                        "(default: 30)")
    add_common_options(p, seed_default=0)
    p.set_defaults(run=run)
    return p


def _accuracy(model, x, y):
    device = next(iter(model.parameters())).device
    with pyrt.no_grad():
        predicted = model(pyrt.Tensor(x).to(device)).cpu().numpy() > 0
    return float(np.mean(predicted == (y > 0.5)))


def run(args):
    apply_common_options(args)
    seed = 0 if args.seed is None else args.seed
    budget = args.limit_steps or DEFAULT_BUDGET
    pyrt.manual_seed(seed)
    x, y = make_xor(SAMPLES, seed=seed)
    loader = DataLoader((x, y), args.batch_size, shuffle=False, seed=seed)
    criterion = nn.BCEWithLogitsLoss()

    def fresh_start():
        model = xor_net()
        if args.device != "cpu":
            model.to(args.device)
        optimizer = optim.SGD(model.parameters(), lr=args.lr)
        return model, optimizer, step_function(args, model, criterion, optimizer)

    model, _, train_step = fresh_start()
    steps, epochs, restarts, epochs_since_start, rows = 0, 0, 0, 0, 0
    train_seconds, accuracy, losses = 0.0, 0.0, []
    while steps < budget:
        losses = []
        start = time.perf_counter()
        for xb, yb in loader:
            losses.append(train_step(xb, yb))
            steps += 1
            rows += len(xb)
            if steps >= budget:
                break
        wait_for_device(args.device)
        train_seconds += time.perf_counter() - start
        epochs += 1
        epochs_since_start += 1
        accuracy = _accuracy(model, x, y)
        if accuracy == 1.0:
            break
        if args.restart_after and epochs_since_start >= args.restart_after and steps < budget:
            model, _, train_step = fresh_start()
            restarts += 1
            epochs_since_start = 0

    final_loss = mean_loss(losses)
    result = {
        "task": "xor",
        "model": "xor-2-3-1",
        "solved": accuracy == 1.0,
        "epochs": epochs,
        "steps": steps,
        "restarts": restarts,
        "train_seconds": round(train_seconds, 6),
        "us_per_step": round(train_seconds / steps * 1e6, 3) if steps else None,
        "images_per_s": round(rows / train_seconds, 1)
        if train_seconds > 0 else None,
        "accuracy": accuracy,
        "test_accuracy": _accuracy(model, *XOR_TRUTH_TABLE),
        "final_loss": final_loss,
        "threads": pyrt.get_num_threads(),
        "device": args.device,
        "seed": seed,
        "batch_size": args.batch_size,
        "lr": args.lr,
        "optimizer": "sgd",
    }
    verdict = "learnt XOR" if result["solved"] else "step budget spent before XOR was learnt"
    lines = [
        (f"{verdict}: accuracy {accuracy:.2%} after {steps} steps ({epochs} epochs, "
         f"{restarts} restart(s)), final loss {final_loss:.4f}"),
        (f"training {train_seconds:.3f} s, {result['us_per_step']:.1f} us/step, "
         f"{pyrt.get_num_threads()} thread(s), {args.device}"),
    ]
    print_result(result, args, lines)
    return 0
