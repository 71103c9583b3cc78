"""The training workloads: pyrt beside PyTorch (and a NumPy step) on the same networks, recipes,
initial weights and batch order.

    xor   the network of Arraymancer issue #485: Linear(2, 3, bias=False), ReLU,
          Linear(3, 1, bias=False), BCEWithLogitsLoss, SGD lr 0.01, batch 32; microseconds per
          step (forward, loss, zero_grad, backward, optimizer.step), `args.repeat` runs of
          `args.xor_steps` steps after a warm-up
    mlp   Fashion-MNIST, 784-128-10, CrossEntropyLoss, SGD lr 0.1 momentum 0.9, batch 64:
          seconds for one epoch of `args.train_limit` images, `args.runs` epochs (seeds from
          `args.first`, 0 unless given)
    cnn   conv 8, ReLU, pool, conv 16, ReLU, pool, linear (pyrt's CLI model), same recipe

Timing covers the training loop only: the batches are cut before the clock starts and the test
set is scored after it stops. Run r of an epoch starts from the weights pyrt draws with seed r,
copied into the torch model, and sees batch order r. benchmarks/nn/bench_train.py and
``python -m pyrt bench scaling`` call these in their worker processes.
"""

import statistics
import time

import numpy as np

import pyrt
from pyrt import nn, optim
from pyrt.bench.workloads import XOR_BLOCK, xor_block
from pyrt.cli.models import build_model, xor_net
from pyrt.cli.train_mnist import evaluate
from pyrt.data import load_mnist, make_xor
from pyrt.data.mnist import MNIST

__all__ = ["epoch_pyrt", "epoch_torch", "load_fashion", "synthetic_fashion", "xor_numpy",
           "xor_paired", "xor_pyrt", "xor_torch"]

XOR_WARMUP = 200


def _xor_batches():
    x, y = make_xor(3200, seed=0)
    return [(x[i:i + 32], y[i:i + 32]) for i in range(0, len(x), 32)]


def _pyrt_xor_model(seed):
    pyrt.manual_seed(seed)
    return xor_net()


def _time_steps(step, batches, steps, repeat):
    """Microseconds per step of `repeat` runs of `steps` steps, after a warm-up. A run's
    figure is the median over its blocks of XOR_BLOCK steps (a tenth of the run if that is
    fewer): a step takes tens of microseconds, and the mean of a run moved by a fifth on a
    shared machine whenever a block lost the CPU to another process."""
    n = len(batches)
    for i in range(XOR_WARMUP):
        step(*batches[i % n])
    block = xor_block(steps)
    samples = []
    for _ in range(repeat):
        blocks, done = [], 0
        while done < steps:
            todo = min(block, steps - done)
            start = time.perf_counter()
            for i in range(done, done + todo):
                step(*batches[i % n])
            blocks.append((time.perf_counter() - start) / todo * 1e6)
            done += todo
        samples.append(statistics.median(blocks))
    return samples


def _training_step(model, criterion, opt):
    """One SGD step on a batch: the same code drives pyrt and torch, whose APIs agree."""
    def step(x, y):
        loss = criterion(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    return step


def _xor_steps(args, model, criterion, opt, to_tensor):
    batches = [(to_tensor(x), to_tensor(y)) for x, y in _xor_batches()]
    step = _training_step(model, criterion, opt)
    return {"us_per_step": _time_steps(step, batches, args.xor_steps, args.repeat)}


def xor_pyrt(args):
    model = _pyrt_xor_model(0)
    return _xor_steps(args, model, nn.BCEWithLogitsLoss(),
                      optim.SGD(model.parameters(), lr=0.01), pyrt.Tensor)


def xor_torch(args):
    import torch

    w1, w2 = (p._data.copy() for p in _pyrt_xor_model(0).parameters())
    model = torch.nn.Sequential(torch.nn.Linear(2, 3, bias=False), torch.nn.ReLU(),
                                torch.nn.Linear(3, 1, bias=False))
    with torch.no_grad():
        model[0].weight.copy_(torch.from_numpy(w1))
        model[2].weight.copy_(torch.from_numpy(w2))
    return _xor_steps(args, model, torch.nn.BCEWithLogitsLoss(),
                      torch.optim.SGD(model.parameters(), lr=0.01), torch.from_numpy)


def xor_numpy(args):
    """The same step written out in NumPy: forward, stable BCE-with-logits, backward, SGD."""
    return {"us_per_step": _time_steps(_numpy_xor_step(), _xor_batches(), args.xor_steps,
                                       args.repeat)}


def xor_paired(threads, rounds, block=XOR_BLOCK):
    """pyrt's XOR step at each of `threads` and the hand-written NumPy step in one process,
    timed in turns: a round runs a block of `block` steps of each variant, in an order drawn
    afresh for each round (seeded), and each variant gets `rounds` blocks. A shared machine's
    speed drifts over seconds, by half at times: separate processes meet different drifts,
    while the blocks of one round meet the same one, so the ratio of two variants within a
    round measures a few percent that the medians of separate processes cannot. The order
    matters at that scale: with it reversed every other round, so that of three variants the
    second always ran second, pyrt read 2% slower at 2 threads than at 1, and 3.5% faster
    with the two counts listed the other way round. pyrt's blocks train one model on,
    whatever the thread count. Returns {variant: [microseconds per step of each block]} with
    variants "pyrt@T" and "numpy"."""
    model = _pyrt_xor_model(0)
    pyrt_step = _training_step(model, nn.BCEWithLogitsLoss(),
                               optim.SGD(model.parameters(), lr=0.01))
    arrays = _xor_batches()
    tensors = [(pyrt.Tensor(x), pyrt.Tensor(y)) for x, y in arrays]
    variants = [(f"pyrt@{t}", t, pyrt_step, tensors) for t in threads]
    variants.append(("numpy", None, _numpy_xor_step(), arrays))
    times = {name: [] for name, *_ in variants}
    n = len(arrays)
    before = pyrt.get_num_threads()
    try:
        orders = np.random.default_rng(0)
        for r in range(rounds + 1):  # round 0 is the warm-up
            for v in orders.permutation(len(variants)):
                name, t, step, batches = variants[v]
                if t is not None:
                    pyrt.set_num_threads(t)
                start = time.perf_counter()
                for i in range(block):
                    step(*batches[i % n])
                if r:
                    times[name].append((time.perf_counter() - start) / block * 1e6)
    finally:
        pyrt.set_num_threads(before)
    return times


def _numpy_xor_step():
    """The XOR step in NumPy on its own copy of pyrt's seed-0 weights."""
    w1, w2 = (p._data.copy() for p in _pyrt_xor_model(0).parameters())
    lr = np.float32(0.01)

    def step(x, y):
        h = x @ w1.T
        a = np.maximum(h, 0)
        z = a @ w2.T
        loss = np.mean(np.maximum(z, 0) - z * y + np.log1p(np.exp(-np.abs(z))))
        dz = (1 / (1 + np.exp(-z)) - y) / np.float32(len(z))
        dw2 = dz.T @ a
        dh = (dz @ w2) * (h > 0)
        dw1 = dh.T @ x
        w1[...] -= lr * dw1
        w2[...] -= lr * dw2
        return loss

    return step


def _epoch_batches(n, seed, batch):
    order = np.random.default_rng(seed).permutation(n)
    return [order[i:i + batch] for i in range(0, n, batch)]


def load_fashion(data_dir=None):
    """Fashion-MNIST from `data_dir`, else from the places load_mnist searches (never
    downloaded); DatasetNotFoundError when there is none."""
    return load_mnist(data_dir, download=False)


def synthetic_fashion(n_train, n_test, seed=0):
    """A stand-in for Fashion-MNIST when it is absent: uniform random images of its shape and
    random labels. It times the same work; its accuracies mean nothing."""
    rng = np.random.default_rng(seed)

    def split(n):
        return rng.random((n, 1, 28, 28), dtype=np.float32), rng.integers(0, 10, n)

    return MNIST(*split(n_train), *split(n_test), None, "synthetic")


def _pyrt_model(task, seed):
    pyrt.manual_seed(seed)
    return build_model(task)


def _epochs(args, data, new_model, criterion, optimizer, to_tensor, accuracy):
    """`args.runs` epochs of `args.train_limit` images, run r (from args.first, when given,
    else 0) from new_model(r) with batch order r; the seconds of each (training loop only), its
    last loss and the test accuracy after it."""
    times, accuracies, losses = [], [], []
    first = getattr(args, "first", 0)
    for run in range(first, first + args.runs):
        model = new_model(run)
        step = _training_step(model, criterion, optimizer(model.parameters(), lr=0.1,
                                                          momentum=0.9))
        batches = [(to_tensor(data.train_images[i]), to_tensor(data.train_labels[i]))
                   for i in _epoch_batches(args.train_limit, run, 64)]
        last = None
        start = time.perf_counter()
        for x, y in batches:
            last = step(x, y)
        times.append(time.perf_counter() - start)
        losses.append(float(last.item()))
        accuracies.append(accuracy(model))
    return {"epoch_s": times, "test_accuracy": accuracies, "last_loss": losses}


def epoch_pyrt(args, task, data):
    return _epochs(args, data, lambda run: _pyrt_model(task, run), nn.CrossEntropyLoss(),
                   optim.SGD, pyrt.Tensor,
                   lambda model: evaluate(model, data.test_images, data.test_labels, "cpu"))


def _torch_model(task, seed):
    import torch

    tn = torch.nn
    if task == "mlp":
        model = tn.Sequential(tn.Flatten(), tn.Linear(784, 128), tn.ReLU(), tn.Linear(128, 10))
    else:
        model = tn.Sequential(
            tn.Conv2d(1, 8, 3, padding=1), tn.ReLU(), tn.MaxPool2d(2),
            tn.Conv2d(8, 16, 3, padding=1), tn.ReLU(), tn.MaxPool2d(2),
            tn.Flatten(), tn.Linear(16 * 7 * 7, 10))
    # the same initial weights as pyrt's model of this seed
    source = [p._data for p in _pyrt_model(task, seed).parameters()]
    params = list(model.parameters())
    assert [tuple(p.shape) for p in params] == [s.shape for s in source]
    with torch.no_grad():
        for p, s in zip(params, source):
            p.copy_(torch.from_numpy(s))
    return model


def epoch_torch(args, task, data):
    import torch

    test_x = torch.from_numpy(data.test_images)
    test_y = torch.from_numpy(data.test_labels)

    def accuracy(model):
        with torch.no_grad():
            correct = 0
            for lo in range(0, len(test_x), 1000):
                pred = model(test_x[lo:lo + 1000]).argmax(dim=1)
                correct += int((pred == test_y[lo:lo + 1000]).sum())
        return correct / len(test_x)

    return _epochs(args, data, lambda run: _torch_model(task, run),
                   torch.nn.CrossEntropyLoss(), torch.optim.SGD, torch.from_numpy, accuracy)
