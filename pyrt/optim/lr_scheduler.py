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

import bisect
import math
import numbers
import types
from collections import Counter

from pyrt.optim.optimizer import Optimizer

__all__ = ["ChainedScheduler", "ConstantLR", "CosineAnnealingLR", "CosineAnnealingWarmRestarts",
           "CyclicLR", "ExponentialLR", "LRScheduler", "LambdaLR", "LinearLR", "MultiStepLR",
           "MultiplicativeLR", "OneCycleLR", "PolynomialLR", "ReduceLROnPlateau", "SequentialLR",
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
        self._initial_step()

    def _initial_step(self):
        """The step construction takes (SequentialLR takes it again for the schedule that
        runs first)."""
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
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
        self._update_lr()
        self._step_count += 1

    def _update_lr(self, epoch=None):
        """Set the lrs of the next step (epoch None), or of step `epoch` from the closed form
        where the schedule has one, as SequentialLR does when a schedule takes over."""
        previous = self.last_epoch
        if epoch is None:
            self.last_epoch += 1
            compute = self.get_lr
        else:
            self.last_epoch = epoch
            compute = getattr(self, "_get_closed_form_lr", self.get_lr)
        try:
            lrs = compute()
        except BaseException:  # (OneCycleLR past its last step): the step is not counted
            self.last_epoch = previous
            raise
        for group, lr in zip(self.optimizer.param_groups, lrs):
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


class _LRScheduler(LRScheduler):
    """LRScheduler's older name, kept by torch (and ported schedules subclass it)."""


class StepLR(LRScheduler):
    """lr times gamma every step_size steps."""

    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1):
        # torch takes a whole float too (its tutorials pass step_size=1.0)
        if isinstance(step_size, float) and step_size.is_integer():
            step_size = int(step_size)
        self.step_size = _whole(step_size, "step_size", 1)
        self.gamma = _real(gamma, "gamma")
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._current()
        return [lr * self.gamma for lr in self._current()]

    def _get_closed_form_lr(self):
        return [base * self.gamma ** (self.last_epoch // self.step_size) for base in self.base_lrs]


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

    def _get_closed_form_lr(self):
        passed = bisect.bisect_right(sorted(self.milestones.elements()), self.last_epoch)
        return [base * self.gamma ** passed for base in self.base_lrs]


class ExponentialLR(LRScheduler):
    """lr times gamma every step."""

    def __init__(self, optimizer, gamma, last_epoch=-1):
        self.gamma = _real(gamma, "gamma")
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self._is_initial:
            return self._current()
        return [lr * self.gamma for lr in self._current()]

    def _get_closed_form_lr(self):
        return [base * self.gamma ** self.last_epoch for base in self.base_lrs]


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

    def _get_closed_form_lr(self):
        t, T, low = self.last_epoch, self.T_max, self.eta_min
        return [low + (base - low) * (1 + math.cos(math.pi * t / T)) / 2 for base in self.base_lrs]


class _FunctionSchedule(LRScheduler):
    """A schedule given by functions of the step: one, or one per parameter group. Saved as
    PyTorch saves it: the functions themselves are not saved, only the attributes of those
    that are callable objects (None for plain functions and lambdas)."""

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

    def state_dict(self):
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


class LambdaLR(_FunctionSchedule):
    """initial_lr times lr_lambda(step): one function, or one per parameter group."""

    def get_lr(self):
        return [base * fn(self.last_epoch) for base, fn in zip(self.base_lrs, self.lr_lambdas)]


class MultiplicativeLR(_FunctionSchedule):
    """lr times lr_lambda(step) at every step after the first: one function, or one per
    parameter group."""

    def get_lr(self):
        if self._is_initial:
            return self._current()
        return [lr * fn(self.last_epoch) for lr, fn in zip(self._current(), self.lr_lambdas)]


class ConstantLR(LRScheduler):
    """lr times factor for the first total_iters steps, then the lr itself (a warm-up)."""

    def __init__(self, optimizer, factor=1.0 / 3, total_iters=5, last_epoch=-1):
        factor = _real(factor, "factor")
        if factor > 1.0 or factor < 0:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        self.factor = factor
        self.total_iters = _whole(total_iters, "total_iters", 0)
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self.last_epoch == 0:
            return [lr * self.factor for lr in self._current()]
        if self.last_epoch != self.total_iters:
            return self._current()
        return [lr * (1.0 / self.factor) for lr in self._current()]

    def _get_closed_form_lr(self):
        done = self.last_epoch >= self.total_iters
        return [base * (self.factor + done * (1 - self.factor)) for base in self.base_lrs]


class PolynomialLR(LRScheduler):
    """lr decayed to 0 over total_iters steps as a polynomial of the given power:
    initial_lr * (1 - min(t, total_iters) / total_iters) ** power at step t."""

    def __init__(self, optimizer, total_iters=5, power=1.0, last_epoch=-1):
        self.total_iters = _whole(total_iters, "total_iters", 0)
        self.power = _real(power, "power")
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        t, steps = self.last_epoch, self.total_iters
        if self._is_initial or t > steps:
            return self._current()
        # the factor of step t over that of step t - 1
        decay = ((1.0 - t / steps) / (1.0 - (t - 1) / steps)) ** self.power
        return [lr * decay for lr in self._current()]

    def _get_closed_form_lr(self):
        left = 1.0 - min(self.total_iters, self.last_epoch) / self.total_iters
        return [base * left ** self.power for base in self.base_lrs]


def _composed(kind, schedulers, optimizer):
    """The schedules a SequentialLR or ChainedScheduler runs, checked as torch checks them."""
    schedulers = list(schedulers)
    if not schedulers:
        what = " to be chained" if kind == "ChainedScheduler" else ""
        raise ValueError(f"{kind} expects at least one scheduler{what}, but got no scheduler.")
    optimizer = optimizer if optimizer is not None else getattr(schedulers[0], "optimizer", None)
    for i, sched in enumerate(schedulers):
        if not hasattr(sched, "optimizer"):
            raise TypeError(f"{kind} at index {i} should have `optimizer` as its attribute.")
        if isinstance(sched, ReduceLROnPlateau):
            message = (f"{kind} does not support `ReduceLROnPlateau` scheduler as it requires "
                       "additional kwargs to be specified when calling `step`, but got one at "
                       f"index {i} in the given schedulers sequence.")
            raise ValueError(message)  # noqa: TRY004 (a ValueError, as torch's)
        if sched.optimizer is not optimizer:
            raise ValueError(f"{kind} expects all schedulers to belong to the same optimizer, "
                             f"but got scheduler {type(sched).__name__} at index {i} has "
                             f"{sched.optimizer}, which is different from "
                             f"{type(optimizer).__name__}.")
    return schedulers, optimizer


class _ComposedSchedule(LRScheduler):
    """What SequentialLR and ChainedScheduler share: their schedules' states saved with
    theirs."""

    def state_dict(self):
        state = {key: value for key, value in self.__dict__.items()
                 if key not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [sched.state_dict() for sched in self._schedulers]
        return state

    def load_state_dict(self, state_dict):
        state = dict(state_dict)
        saved = state.pop("_schedulers")
        self.__dict__.update(state)
        for sched, sched_state in zip(self._schedulers, saved):
            sched.load_state_dict(sched_state)


class SequentialLR(_ComposedSchedule):
    """The schedules one after another: schedulers[i] from step milestones[i - 1] on, each
    starting at its own step 0 (warm-up, then decay)."""

    def __init__(self, optimizer, schedulers, milestones, last_epoch=-1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        schedulers, _ = _composed("SequentialLR", schedulers, optimizer)
        milestones = [_whole(m, "milestones", 0) for m in milestones]
        if len(milestones) != len(schedulers) - 1:
            raise ValueError("Sequential Schedulers expects number of schedulers provided to be "
                             "one more than the number of milestone points, but got number of "
                             f"schedulers {len(schedulers)} and the number of milestones to be "
                             f"equal to {len(milestones)}")
        self._schedulers = schedulers
        self._milestones = milestones
        self.last_epoch = _whole(last_epoch, "last_epoch", -1) + 1
        self.optimizer = optimizer
        # back to the initial lrs, the schedules' own first steps undone, and the first step
        # taken again by the schedule that runs at step 0
        for group in optimizer.param_groups:
            group["lr"] = group["initial_lr"]
        self._undo(self)
        first = self._schedulers[bisect.bisect_right(milestones, 0)]
        first._initial_step()
        self._last_lr = first.get_last_lr()

    def _undo(self, sched):
        """Take back the step each schedule (inside composed ones too) took when built."""
        if isinstance(sched, _ComposedSchedule):
            for inner in sched._schedulers:
                self._undo(inner)
        elif hasattr(sched, "last_epoch"):
            sched.last_epoch -= 1

    def step(self):
        self.last_epoch += 1
        at = bisect.bisect_right(self._milestones, self.last_epoch)
        sched = self._schedulers[at]
        if at > 0 and self._milestones[at - 1] == self.last_epoch:
            sched._update_lr(0)  # a schedule taking over starts at its step 0
        else:
            sched.step()
        self._last_lr = sched.get_last_lr()


class ChainedScheduler(_ComposedSchedule):
    """The schedules all stepped at every step, each multiplying in its own factor (a warm-up
    and a decay at once, say)."""

    def __init__(self, schedulers, optimizer=None):
        self._schedulers, self.optimizer = _composed("ChainedScheduler", schedulers, optimizer)
        self._last_lr = self._current()

    def step(self):
        for sched in self._schedulers:
            sched.step()
        self._last_lr = self._current()


class LinearLR(LRScheduler):
    """lr times a factor going in a straight line from start_factor to end_factor over
    total_iters steps, then staying there: initial_lr * (start_factor + (end_factor -
    start_factor) * min(t, total_iters) / total_iters) at step t (a warm-up, usually)."""

    def __init__(self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5,
                 last_epoch=-1):
        start_factor = _real(start_factor, "start_factor")
        end_factor = _real(end_factor, "end_factor")
        if not 0.0 < start_factor <= 1.0:
            raise ValueError("Starting multiplicative factor expected to be greater than 0 and "
                             "less or equal to 1.")
        if not 0.0 <= end_factor <= 1.0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = _whole(total_iters, "total_iters", 0)
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        t, start, end = self.last_epoch, self.start_factor, self.end_factor
        if t == 0:
            return [lr * start for lr in self._current()]
        if self._is_initial or t > self.total_iters:
            return self._current()
        # the factor of step t over that of step t - 1
        ratio = 1.0 + (end - start) / (self.total_iters * start + (t - 1) * (end - start))
        return [lr * ratio for lr in self._current()]

    def _get_closed_form_lr(self):
        start, end, steps = self.start_factor, self.end_factor, self.total_iters
        return [base * (start + (end - start) * min(steps, self.last_epoch) / steps)
                for base in self.base_lrs]


def _momentum_bounds(schedule, optimizer, cycle_momentum, max_momentum, base_momentum):
    """A cycling schedule's momentum settings: sets schedule.cycle_momentum (and use_beta1:
    Adam's beta1 cycles where there is no momentum); returns the per-group (max, base)
    momenta, or (None, None) without cycling."""
    schedule.cycle_momentum = bool(cycle_momentum)
    if not schedule.cycle_momentum:
        return None, None
    if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
        raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` "
                         "option enabled")
    schedule.use_beta1 = "betas" in optimizer.defaults
    return (_per_group(max_momentum, "max_momentum", optimizer),
            _per_group(base_momentum, "base_momentum", optimizer))


def _per_group(value, name, optimizer):
    """`value` for each parameter group: one real number for all, or a list of one each."""
    groups = len(optimizer.param_groups)
    if isinstance(value, (list, tuple)):
        if len(value) != groups:
            raise ValueError(f"{name} must have the same length as optimizer.param_groups. "
                             f"{name} has {len(value)} values, param_groups has {groups}.")
        return [_real(v, name) for v in value]
    return [_real(value, name)] * groups


class OneCycleLR(LRScheduler):
    """The 1cycle policy (Smith and Topin, 2017), stepped once per batch for total_steps (or
    epochs * steps_per_epoch) steps: lr goes from initial_lr = max_lr / div_factor up to max_lr
    over the first pct_start of the steps, then down to initial_lr / final_div_factor, along
    half a cosine ("cos") or a straight line ("linear"). With three_phase it comes back down to
    initial_lr over as many steps as it went up, then on to the minimum.

    With cycle_momentum the momentum (Adam's beta1) moves the other way, from max_momentum
    down to base_momentum while lr rises, and back. The bounds live in each parameter group
    ("initial_lr", "max_lr", "min_lr", "max_momentum", "base_momentum"), as in PyTorch. Where
    PyTorch divides by zero (a phase of no steps: pct_start * total_steps == 1, or pct_start
    == 1 at the last step), the phase is at its end at once."""

    def __init__(self, optimizer, max_lr, total_steps=None, epochs=None, steps_per_epoch=None,
                 pct_start=0.3, anneal_strategy="cos", cycle_momentum=True, base_momentum=0.85,
                 max_momentum=0.95, div_factor=25.0, final_div_factor=1e4, three_phase=False,
                 last_epoch=-1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        if total_steps is not None:
            if not _is_count(total_steps):
                raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
            self.total_steps = int(total_steps)
        elif epochs is not None and steps_per_epoch is not None:
            if not _is_count(epochs):
                raise ValueError(f"Expected positive integer epochs, but got {epochs}")
            if not _is_count(steps_per_epoch):
                raise ValueError("Expected positive integer steps_per_epoch, but got "
                                 f"{steps_per_epoch}")
            self.total_steps = int(epochs) * int(steps_per_epoch)
        else:
            raise ValueError("You must define either total_steps OR (epochs AND "
                             "steps_per_epoch)")
        if (isinstance(pct_start, bool) or not isinstance(pct_start, numbers.Real)
                or not 0 <= pct_start <= 1):
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError("anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        for value, name in ((div_factor, "div_factor"), (final_div_factor, "final_div_factor")):
            if not _real(value, name) > 0:
                raise ValueError(f"{name} must be > 0, got {value}")
        self._anneal_func_type = anneal_strategy
        # each phase: the step it ends at, and the group keys of the values it goes between
        # (the step numbers computed as PyTorch computes them, so that the lrs agree bitwise)
        warm_up = float(pct_start * self.total_steps) - 1
        if three_phase:
            self._schedule_phases = [
                _phase(warm_up, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                _phase(float(2 * pct_start * self.total_steps) - 2, "max_lr", "initial_lr",
                       "base_momentum", "max_momentum"),
                _phase(self.total_steps - 1, "initial_lr", "min_lr", "max_momentum",
                       "max_momentum"),
            ]
        else:
            self._schedule_phases = [
                _phase(warm_up, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                _phase(self.total_steps - 1, "max_lr", "min_lr", "base_momentum",
                       "max_momentum"),
            ]
        # every argument checked before the groups are written: a refused schedule leaves the
        # optimizer as it was (a later schedule would take its initial_lr)
        max_lrs = _per_group(max_lr, "max_lr", optimizer)
        last_epoch = _whole(last_epoch, "last_epoch", -1)
        tops, bases = _momentum_bounds(self, optimizer, cycle_momentum, max_momentum,
                                       base_momentum)
        if last_epoch == -1:
            for group, top in zip(optimizer.param_groups, max_lrs):
                group["initial_lr"] = top / div_factor
                group["max_lr"] = top
                group["min_lr"] = group["initial_lr"] / final_div_factor
        if self.cycle_momentum and last_epoch == -1:
            # (the first step sets the momentum itself: max_momentum)
            for group, top, base in zip(optimizer.param_groups, tops, bases):
                group["max_momentum"] = top
                group["base_momentum"] = base
        super().__init__(optimizer, last_epoch)

    def _set_momentum(self, group, momentum):
        if self.use_beta1:
            group["betas"] = (momentum, *group["betas"][1:])
        else:
            group["momentum"] = momentum

    def _anneal(self, start, end, pct):
        """The value a fraction pct of the way from start to end."""
        if self._anneal_func_type == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self):
        t = self.last_epoch
        if t > self.total_steps:
            raise ValueError(f"Tried to step {t} times. The specified number of total steps "
                             f"is {self.total_steps}")
        lrs = []
        last = len(self._schedule_phases) - 1
        for group in self.optimizer.param_groups:
            start = 0.0
            for i, phase in enumerate(self._schedule_phases):
                end = phase["end_step"]
                if t <= end or i == last:
                    pct = 1.0 if end == start else (t - start) / (end - start)
                    break
                start = end
            lrs.append(self._anneal(group[phase["start_lr"]], group[phase["end_lr"]], pct))
            if self.cycle_momentum:
                self._set_momentum(group, self._anneal(group[phase["start_momentum"]],
                                                       group[phase["end_momentum"]], pct))
        return lrs


def _is_count(value):
    return not isinstance(value, bool) and isinstance(value, numbers.Integral) and value > 0


def _phase(end_step, start_lr, end_lr, start_momentum, end_momentum):
    return {"end_step": end_step, "start_lr": start_lr, "end_lr": end_lr,
            "start_momentum": start_momentum, "end_momentum": end_momentum}


class ReduceLROnPlateau(LRScheduler):
    """lr times factor (not below min_lr, one value or one per group) once the metric given to
    ``step(metrics)`` has gone more than patience steps without improving on its best; then
    cooldown steps pass before bad steps count again. A metric improves on the best when it
    is below best * (1 - threshold) (threshold_mode "rel") or best - threshold ("abs") in mode
    "min", above best * (1 + threshold) or best + threshold in mode "max". A change of lr
    smaller than eps is not made.

        sched = optim.lr_scheduler.ReduceLROnPlateau(opt, patience=3)
        for epoch in range(30):
            train_one_epoch(model, opt)
            sched.step(validation_loss(model))
    """

    def __init__(self, optimizer, mode="min", factor=0.1, patience=10, threshold=1e-4,
                 threshold_mode="rel", cooldown=0, min_lr=0, eps=1e-8):
        self.factor = _real(factor, "factor")
        if self.factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if isinstance(min_lr, (list, tuple)):
            groups = len(optimizer.param_groups)
            if len(min_lr) != groups:
                raise ValueError(f"expected {groups} min_lrs, got {len(min_lr)}")
            self.default_min_lr = None
            self.min_lrs = [_real(value, "min_lr") for value in min_lr]
        else:
            self.default_min_lr = _real(min_lr, "min_lr")
            self.min_lrs = [self.default_min_lr] * len(optimizer.param_groups)
        self.patience = _whole(patience, "patience", 0)
        self.cooldown = _whole(cooldown, "cooldown", 0)
        self.eps = _real(eps, "eps")
        self.last_epoch = 0
        self._last_lr = self._current()
        self._init_is_better(mode, threshold, threshold_mode)
        self._reset()

    def _init_is_better(self, mode, threshold, threshold_mode):
        if mode not in ("min", "max"):
            raise ValueError(f"mode {mode} is unknown!")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(f"threshold mode {threshold_mode} is unknown!")
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.mode = mode
        self.threshold = _real(threshold, "threshold")
        self.threshold_mode = threshold_mode

    def _reset(self):
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    @property
    def in_cooldown(self):
        return self.cooldown_counter > 0

    def _is_better(self, value, best):
        if self.mode == "min" and self.threshold_mode == "rel":
            return value < best * (1.0 - self.threshold)
        if self.mode == "min":
            return value < best - self.threshold
        if self.threshold_mode == "rel":
            return value > best * (self.threshold + 1.0)
        return value > best + self.threshold

    def step(self, metrics):
        """Count a step whose metric (a number, or a tensor of one value) is `metrics`, and
        lower the lrs if it is one bad step too many."""
        try:
            current = float(metrics)
        except (TypeError, ValueError) as e:
            raise type(e)(f"ReduceLROnPlateau.step: metrics must be a real number or a tensor of "
                          f"one value, got {type(metrics).__name__}: {e}") from None
        self.last_epoch += 1
        if self._is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0  # bad steps in the cooldown do not count
        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = self._current()

    def _reduce_lr(self):
        groups = self.optimizer.param_groups
        if len(groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError(
                    f"The number of param groups in the `optimizer` ({len(groups)}) differs "
                    f"from when `ReduceLROnPlateau` was initialized ({len(self.min_lrs)}), "
                    "usually due to a new param group being added to the optimizer. Please "
                    "modify the `min_lrs` field to match the length of the `optimizer` param "
                    "groups.")
            self.min_lrs = [self.default_min_lr] * len(groups)
        for group, min_lr in zip(groups, self.min_lrs):
            old = float(group["lr"])
            new = max(old * self.factor, min_lr)
            if old - new > self.eps:
                group["lr"] = new

    def load_state_dict(self, state_dict):
        saved = self.__dict__.copy()
        self.__dict__.update(state_dict)
        try:
            self._init_is_better(self.mode, self.threshold, self.threshold_mode)
        except BaseException:  # a state refused leaves the schedule as it was
            self.__dict__.clear()
            self.__dict__.update(saved)
            raise


class CosineAnnealingWarmRestarts(LRScheduler):
    """SGDR (Loshchilov and Hutter, 2017): lr falls from initial_lr to eta_min along half a
    cosine over T_i steps, then restarts, the period growing by T_mult each time (T_0 first):
    eta_min + (initial_lr - eta_min) (1 + cos(pi T_cur / T_i)) / 2, T_cur the steps since the
    last restart. step(epoch) may jump to any (fractional) epoch, as PyTorch's."""

    def __init__(self, optimizer, T_0, T_mult=1, eta_min=0.0, last_epoch=-1):
        self.T_0 = _whole(T_0, "T_0", 1)
        self.T_i = self.T_0
        self.T_mult = _whole(T_mult, "T_mult", 1)
        self.eta_min = _real(eta_min, "eta_min")
        self.T_cur = _whole(last_epoch, "last_epoch", -1)
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        return [self.eta_min + (base - self.eta_min)
                * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2 for base in self.base_lrs]

    def step(self, epoch=None):
        """The next step, or with `epoch` the schedule's point at that epoch."""
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur - self.T_i
                self.T_i = self.T_i * self.T_mult
        else:
            epoch = _real(epoch, "epoch") if not isinstance(epoch, numbers.Integral) else epoch
            if epoch < 0:
                raise ValueError(f"Expected non-negative epoch, but got {epoch}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    n = int(math.log((epoch / self.T_0 * (self.T_mult - 1) + 1), self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult**n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult**n
            else:
                self.T_i = self.T_0
                self.T_cur = epoch
        groups = self.optimizer.param_groups
        if len(groups) != len(self.base_lrs):
            raise ValueError(f"the optimizer has {len(groups)} parameter groups, but the "
                             f"schedule was built for {len(self.base_lrs)}")
        self.last_epoch = math.floor(epoch)
        for group, lr in zip(groups, self.get_lr()):
            group["lr"] = lr
        self._last_lr = self._current()
        self._step_count += 1


def _triangular(x):
    return 1.0


def _triangular2(x):
    return 1 / (2.0 ** (x - 1))


class CyclicLR(LRScheduler):
    """The cyclical learning rate (Smith, 2017), stepped once per batch: lr goes from base_lr
    up to max_lr over step_size_up steps and back down over step_size_down (the same by
    default), the height of each cycle scaled by mode: "triangular" (1), "triangular2"
    (halved each cycle) or "exp_range" (gamma ** step), or by scale_fn of the cycle or of the
    step (scale_mode). With cycle_momentum the momentum (Adam's beta1) moves the other way,
    between max_momentum and base_momentum."""

    def __init__(self, optimizer, base_lr, max_lr, step_size_up=2000, step_size_down=None,
                 mode="triangular", gamma=1.0, scale_fn=None, scale_mode="cycle",
                 cycle_momentum=True, base_momentum=0.8, max_momentum=0.9, last_epoch=-1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        base_lrs = _per_group(base_lr, "base_lr", optimizer)
        self.max_lrs = _per_group(max_lr, "max_lr", optimizer)
        up = _real(step_size_up, "step_size_up")
        down = _real(step_size_down, "step_size_down") if step_size_down is not None else up
        if not (up > 0 and down >= 0):
            raise ValueError(f"step_size_up must be > 0 and step_size_down >= 0, got {up} and "
                             f"{down}")
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")
        if scale_fn is not None and not callable(scale_fn):
            raise TypeError(f"scale_fn must be callable, got {type(scale_fn).__name__}")
        if scale_mode not in ("cycle", "iterations"):
            raise ValueError(f"scale_mode must be 'cycle' or 'iterations', got {scale_mode!r}")
        self.mode = mode
        self.gamma = _real(gamma, "gamma")
        self.scale_fn = scale_fn
        self.scale_mode = scale_mode
        if scale_fn is None:
            self.scale_mode = "iterations" if mode == "exp_range" else "cycle"
        last_epoch = _whole(last_epoch, "last_epoch", -1)
        self.max_momentums, self.base_momentums = _momentum_bounds(
            self, optimizer, cycle_momentum, max_momentum, base_momentum)
        if last_epoch == -1:
            for group, lr in zip(optimizer.param_groups, base_lrs):
                group["lr"] = lr
            if self.cycle_momentum:
                for group, top, low in zip(optimizer.param_groups, self.max_momentums,
                                           self.base_momentums):
                    OneCycleLR._set_momentum(self, group, top)
                    group["max_momentum"] = top
                    group["base_momentum"] = low
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _scale(self, cycle):
        x = cycle if self.scale_mode == "cycle" else self.last_epoch
        if self.scale_fn is not None:
            return self.scale_fn(x)
        if self.mode == "triangular":
            return _triangular(x)
        if self.mode == "triangular2":
            return _triangular2(x)
        return self.gamma**x

    def get_lr(self):
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        if x <= self.step_ratio:
            scale_factor = x / self.step_ratio
        else:
            scale_factor = (x - 1) / (self.step_ratio - 1)
        scale = self._scale(cycle)
        lrs = [low + (top - low) * scale_factor * scale
               for low, top in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            for group, low, top in zip(self.optimizer.param_groups, self.base_momentums,
                                       self.max_momentums):
                OneCycleLR._set_momentum(self, group, top - (top - low) * scale_factor * scale)
        return lrs

    def state_dict(self):
        """As the base's; a scale_fn is saved as PyTorch saves it: a function not at all, a
        callable object as its attributes."""
        state = super().state_dict()
        fn = state.get("scale_fn")
        state["scale_fn"] = (None if fn is None or isinstance(fn, types.FunctionType)
                             else dict(fn.__dict__))
        return state

    def load_state_dict(self, state_dict):
        fn = self.scale_fn
        super().load_state_dict(state_dict)
        self.scale_fn = fn
        if isinstance(state_dict.get("scale_fn"), dict) and fn is not None:
            fn.__dict__.update(state_dict["scale_fn"])
