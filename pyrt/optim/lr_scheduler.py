"""Learning-rate schedules, as torch.optim.lr_scheduler: each ``step()`` sets the ``lr`` of
every parameter group of an optimizer, usually once per epoch, after the optimizer's own
steps. The schedules use PyTorch's recursive forms (each lr computed from the group's current
one), so that the values agree with PyTorch's to the last bit and a schedule composes with
changes made to the lr in between.

    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sched = optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.5)
    for epoch in range(30):
        train_one_epoch(model, opt)
        sched.step()
"""

import math
import numbers
import types
from collections import Counter

from pyrt.optim.optimizer import Optimizer

__all__ = ["CosineAnnealingLR", "ExponentialLR", "LRScheduler", "LambdaLR", "MultiStepLR",
           "StepLR"]


def _whole(value, name, minimum):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _real(value, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    return float(value)


class LRScheduler:
    """The base of the schedules: keeps each group's starting lr (``initial_lr``, also in the
    group, as PyTorch keeps it) and the count of steps (``last_epoch``); a subclass gives
    get_lr(), the lrs of the step just counted. Construction takes a first step
    (``_is_initial``), which leaves the lrs as they are: a schedule resumed with
    ``last_epoch`` other than -1 (its groups already hold ``initial_lr``) goes on from the lrs
    the optimizer holds."""

    def __init__(self, optimizer, last_epoch=-1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        last_epoch = _whole(last_epoch, "last_epoch", -1)
        for i, group in enumerate(optimizer.param_groups):
            if last_epoch == -1:
                group.setdefault("initial_lr", group["lr"])
            elif "initial_lr" not in group:
                raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] "
                               "when resuming an optimizer")
        self.optimizer = optimizer
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._step_count = 0
        self._is_initial = True
        self.step()
        self._is_initial = False

    def get_lr(self):
        raise NotImplementedError(f"{type(self).__name__} does not implement get_lr()")

    def _current(self):
        return [group["lr"] for group in self.optimizer.param_groups]

    def step(self):
        """Count a step and set every group's lr for it."""
        groups = self.optimizer.param_groups
        if len(groups) != len(self.base_lrs):
            raise ValueError(f"the optimizer has {len(groups)} parameter groups, but the "
                             f"schedule was built for {len(self.base_lrs)}: build the schedule "
                             "after adding groups")
        self._step_count += 1
        self.last_epoch += 1
        for group, lr in zip(groups, self.get_lr()):
            group["lr"] = lr
        self._last_lr = self._current()

    def get_last_lr(self):
        """The lrs the last step set, one per parameter group."""
        return list(self._last_lr)

    def state_dict(self):
        """Everything but the optimizer."""
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)


class StepLR(LRScheduler):
    """lr times gamma every step_size steps."""

    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1):
        self.step_size = _whole(step_size, "step_size", 1)
        self.gamma = _real(gamma, "gamma")
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._current()
        return [lr * self.gamma for lr in self._current()]


class MultiStepLR(LRScheduler):
    """lr times gamma at each of the steps in milestones (twice for a milestone given
    twice)."""

    def __init__(self, optimizer, milestones, gamma=0.1, last_epoch=-1):
        self.milestones = Counter(_whole(m, "milestones", 0) for m in milestones)
        self.gamma = _real(gamma, "gamma")
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self.last_epoch not in self.milestones:
            return self._current()
        factor = self.gamma ** self.milestones[self.last_epoch]
        return [lr * factor for lr in self._current()]


class ExponentialLR(LRScheduler):
    """lr times gamma every step."""

    def __init__(self, optimizer, gamma, last_epoch=-1):
        self.gamma = _real(gamma, "gamma")
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self._is_initial:
            return self._current()
        return [lr * self.gamma for lr in self._current()]


class CosineAnnealingLR(LRScheduler):
    """lr from its initial value down to eta_min along half a cosine over T_max steps (and
    back up over the next T_max, as SGDR without restarts):
    eta_min + (initial_lr - eta_min) (1 + cos(pi t / T_max)) / 2 at step t."""

    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1):
        self.T_max = _whole(T_max, "T_max", 1)
        self.eta_min = _real(eta_min, "eta_min")
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        t, T, low = self.last_epoch, self.T_max, self.eta_min
        if self._is_initial:
            return self._current()
        if (t - 1 - T) % (2 * T) == 0:  # the bottom of the curve: the ratio below is 0 / 0
            return [lr + (base - low) * (1 - math.cos(math.pi / T)) / 2
                    for base, lr in zip(self.base_lrs, self._current())]
        ratio = (1 + math.cos(math.pi * t / T)) / (1 + math.cos(math.pi * (t - 1) / T))
        return [ratio * (lr - low) + low for lr in self._current()]


class LambdaLR(LRScheduler):
    """initial_lr times lr_lambda(step): one function, or one per parameter group."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        groups = optimizer.param_groups
        lambdas = list(lr_lambda) if isinstance(lr_lambda, (list, tuple)) else (
            [lr_lambda] * len(groups))
        if len(lambdas) != len(groups):
            raise ValueError(f"Expected {len(groups)} lr_lambdas, but got {len(lambdas)}")
        for fn in lambdas:
            if not callable(fn):
                raise TypeError(f"lr_lambda must be callable, got {type(fn).__name__}")
        self.lr_lambdas = lambdas
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        return [base * fn(self.last_epoch) for base, fn in zip(self.base_lrs, self.lr_lambdas)]

    def state_dict(self):
        """As PyTorch saves it: the functions themselves are not saved, only the attributes
        of those that are callable objects (None for plain functions and lambdas)."""
        state = {key: value for key, value in self.__dict__.items()
                 if key not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = [None if isinstance(fn, types.FunctionType) else fn.__dict__.copy()
                               for fn in self.lr_lambdas]
        return state

    def load_state_dict(self, state_dict):
        state = dict(state_dict)
        saved = state.pop("lr_lambdas", [None] * len(self.lr_lambdas))
        self.__dict__.update(state)
        for fn, attributes in zip(self.lr_lambdas, saved):
            if attributes is not None:
                fn.__dict__.update(attributes)
