"""Stochastic weight averaging and exponential moving averages of a model's weights, as
torch.optim.swa_utils (Izmailov et al. 2018): AveragedModel keeps the running average of the
parameters a training run passes through, SWALR anneals the learning rate to the constant one
SWA trains with, and update_bn recomputes the BatchNorm statistics of the averaged weights.

    swa_model = AveragedModel(model)
    swa_scheduler = SWALR(optimizer, swa_lr=0.05)
    for epoch in range(epochs):
        train_one_epoch(model, optimizer)
        if epoch >= swa_start:
            swa_model.update_parameters(model)
            swa_scheduler.step()
    update_bn(loader, swa_model)
"""

import copy
import itertools
import math

import numpy as np

from pyrt.autograd import mark_modified_all, no_grad
from pyrt.functional import _xp
from pyrt.nn.batchnorm import _BatchNorm
from pyrt.nn.module import Module
from pyrt.optim.lr_scheduler import LRScheduler, _per_group, _real
from pyrt.optim.optimizer import Optimizer
from pyrt.tensor import Tensor, _move

__all__ = ["SWALR", "AveragedModel", "get_ema_avg_fn", "get_ema_multi_avg_fn",
           "get_swa_avg_fn", "get_swa_multi_avg_fn", "update_bn"]


def _check_decay(decay):
    decay = _real(decay, "decay")
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in "
                         "[0,1] range.")
    return decay


def _count(num_averaged):
    """The number of models averaged so far, from a 0-d tensor or a number."""
    if isinstance(num_averaged, Tensor):
        num_averaged = num_averaged._data
    return int(num_averaged)


def _lerp_(a, b, weight):
    """a moved towards b by `weight`, in place, as torch's lerp_ computes it: from a for a
    weight under one half, from b otherwise (so that weight 1 gives b exactly)."""
    w = np.float32(weight)
    if abs(w) < 0.5:
        a += w * (b - a)
    else:
        a[...] = b - (b - a) * (np.float32(1) - w)


def _floating(tensors):
    return tensors[0]._data.dtype.kind == "f"


def get_ema_multi_avg_fn(decay=0.999):
    """The function that moves a list of averaged tensors in place towards the current ones
    by an exponential moving average: ema = decay ema + (1 - decay) current. Integer tensors
    (BatchNorm's num_batches_tracked) take the average rounded towards zero."""
    decay = _check_decay(decay)

    def ema_update(ema_param_list, current_param_list, _num_averaged):
        if _floating(ema_param_list):
            for ema, current in zip(ema_param_list, current_param_list, strict=True):
                _lerp_(ema._data, current._data, 1 - decay)
        else:
            for ema, current in zip(ema_param_list, current_param_list, strict=True):
                xp = _xp(ema._data)
                average = (ema._data.astype(xp.float32) * np.float32(decay)
                           + current._data.astype(xp.float32) * np.float32(1 - decay))
                ema._data[...] = average  # (the integer part, as torch's copy_ keeps it)
        mark_modified_all(t._data for t in ema_param_list)

    return ema_update


def get_swa_multi_avg_fn():
    """The function that updates a list of averaged tensors in place to the equal-weight
    average of the num_averaged models so far and the current one:
    average = average + (current - average) / (num_averaged + 1). Like torch's, it refuses
    integer tensors (average them with get_swa_avg_fn, or leave buffers out)."""

    def swa_update(averaged_param_list, current_param_list, num_averaged):
        if not _floating(averaged_param_list):
            raise RuntimeError("get_swa_multi_avg_fn: cannot average integer tensors in place "
                               "(such as BatchNorm's num_batches_tracked): use "
                               "use_buffers=False or the default average")
        weight = 1 / (_count(num_averaged) + 1)
        for averaged, current in zip(averaged_param_list, current_param_list, strict=True):
            _lerp_(averaged._data, current._data, weight)
        mark_modified_all(t._data for t in averaged_param_list)

    return swa_update


def get_ema_avg_fn(decay=0.999):
    """The function of (ema, current, num_averaged) that returns the exponential moving
    average decay ema + (1 - decay) current."""
    decay = _check_decay(decay)

    def ema_update(ema_param, current_param, num_averaged):
        with no_grad():
            return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn():
    """The function of (average, current, num_averaged) that returns the equal-weight average
    of the num_averaged models so far and the current one."""

    def swa_update(averaged_param, current_param, num_averaged):
        with no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


def _assign(tensor, value):
    """Write `value` (a Tensor or an array) into `tensor`'s array, in its dtype (a float into
    an integer tensor keeps its integer part, as torch's copy_)."""
    array = value._data if isinstance(value, Tensor) else value
    array = _move(array, tensor.device) if hasattr(array, "shape") else array
    tensor._data[...] = array


class AveragedModel(Module):
    """A copy of `model` (deep-copied, on `device` if given) whose parameters
    ``update_parameters(model)`` keeps as the running average of the model's: the first call
    copies them, later ones average with `avg_fn` (a function of one averaged tensor, the
    model's tensor and the count of models averaged so far, returning the new average) or
    `multi_avg_fn` (the same for lists of tensors, updating them in place); by default, the
    equal-weight average of every model passed (SWA). With `use_buffers` the buffers are
    averaged too; without, they are copied from the model. ``n_averaged`` (an int64 buffer)
    counts the models averaged. Calling it runs the averaged copy. avg_fn and multi_avg_fn
    are not saved in state_dict()."""

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        if not isinstance(model, Module):
            raise TypeError(f"model must be a Module, got {type(model).__name__}")
        if avg_fn is not None and multi_avg_fn is not None:
            raise ValueError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        count = np.array(0, np.int64)
        self.register_buffer("n_averaged", Tensor(count if device is None
                                                  else _move(count, device)))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def update_parameters(self, model):
        """Average the parameters of `model` (and its buffers, with use_buffers) into this
        copy's."""
        if self.use_buffers:
            averaged = itertools.chain(self.module.parameters(), self.module.buffers())
            current = itertools.chain(model.parameters(), model.buffers())
        else:
            averaged, current = self.module.parameters(), model.parameters()
        pairs = [(a.detach(), Tensor(_move(m._data, a.device))) for a, m in zip(averaged, current)]
        n = _count(self.n_averaged)
        if n == 0:
            for a, m in pairs:
                _assign(a, m)
        elif self.multi_avg_fn is not None or self.avg_fn is None:
            # by dtype (and device), as torch groups the lists it hands multi_avg_fn
            groups = {}
            for a, m in pairs:
                groups.setdefault((a.device, a._data.dtype.str), []).append((a, m))
            for group in groups.values():
                averaged_list, current_list = map(list, zip(*group))
                if self.multi_avg_fn is not None:
                    self.multi_avg_fn(averaged_list, current_list, self.n_averaged)
                else:
                    average = get_swa_avg_fn()
                    for a, m in group:
                        _assign(a, average(a, m, self.n_averaged))
        else:
            for a, m in pairs:
                _assign(a, self.avg_fn(a, m, self.n_averaged))
        if not self.use_buffers:
            for b_averaged, b_model in zip(self.module.buffers(), model.buffers(), strict=True):
                _assign(b_averaged, b_model)
        self.n_averaged._data[...] += 1
        mark_modified_all(t._data for t in itertools.chain(self.module.parameters(),
                                                          self.module.buffers()))


def update_bn(loader, model, device=None):
    """Recompute the running statistics of every BatchNorm layer of `model` with one pass over
    `loader` (batches: tensors, or lists or tuples whose first element is the input): the
    statistics are reset and become the cumulative average over the batches (momentum None
    for the pass), which suits averaged weights that no batch has yet gone through. The
    layers' momentum and the model's training mode are restored after."""
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    try:
        with no_grad():
            for batch in loader:
                if isinstance(batch, (list, tuple)):
                    batch = batch[0]
                if device is not None:
                    batch = batch.to(device)
                model(batch)
    finally:
        for module, momentum in momenta.items():
            module.momentum = momentum
        model.train(was_training)


class SWALR(LRScheduler):
    """Anneals every group's lr from its value to `swa_lr` (one for all groups, or a list of
    one per group) over `anneal_epochs` steps along half a cosine ("cos") or a line
    ("linear"), then keeps it there. Each step computes the lr from the group's current one,
    as torch's does, so that it agrees with torch's to the last bit."""

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos",
                 last_epoch=-1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        swa_lrs = _per_group(swa_lr, "swa_lr", optimizer)
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError("anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        if isinstance(anneal_epochs, bool) or not isinstance(anneal_epochs, int) \
                or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got "
                             f"{anneal_epochs}")
        for lr, group in zip(swa_lrs, optimizer.param_groups):
            group["swa_lr"] = lr
        self._set_anneal_func(anneal_strategy)
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        """The lr the annealing started from, given the lr `alpha` of the way to swa_lr."""
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def _set_anneal_func(self, anneal_strategy):
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else \
            self._linear_anneal

    def get_lr(self):
        # the steps taken before this one (torch's _step_count - 1: pyrt counts after)
        step = self._step_count
        if self.anneal_epochs == 0:
            step = max(1, step)
        # the lr the annealing started from, recovered from the current one, then moved to
        # this step's point of the curve
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        starts = [self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha)
                  for group in self.optimizer.param_groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [group["swa_lr"] * alpha + lr * (1 - alpha)
                for group, lr in zip(self.optimizer.param_groups, starts)]

    def state_dict(self):
        """Everything but the optimizer and the annealing function."""
        return {key: value for key, value in self.__dict__.items()
                if key not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
