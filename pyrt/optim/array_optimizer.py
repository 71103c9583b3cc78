"""The base of the optimizers written with array operations in place on each parameter and
its state (NumPy's on the CPU, CuPy's on the GPU): RMSprop, Adagrad, Adadelta, Adamax, NAdam
and RAdam. A subclass gives its state's arrays, how a parameter's state starts and one
parameter's update; step() checks everything before it writes anything, records the writes
for autograd and counts the steps."""

import operator

import numpy as np

from pyrt.autograd import new_write, write_key
from pyrt.functional import _xp
from pyrt.ops.optim import _grad as _param_grad
from pyrt.ops.optim import _in_place
from pyrt.optim.optimizer import Optimizer

__all__ = ["ArrayOptimizer", "decay", "lerp_"]


def check_step_count(restored, key):
    """ValueError naming parameter `key` unless its loaded state's "step" (the steps it has
    taken, which step() counts on from) is an integer >= 0."""
    step = restored.get("step")
    if step is None:
        return
    try:
        if isinstance(step, (bool, np.bool_)):
            raise TypeError
        step = operator.index(step)
    except TypeError:
        raise ValueError(f"loaded state 'step' of parameter {key} must be an integer, got "
                         f"{type(step).__name__}") from None
    if not 0 <= step < 2**63:
        raise ValueError(f"loaded state 'step' of parameter {key} must be in [0, 2**63), "
                         f"got {step}")


def check_state_arrays(restored, key, param, names):
    """ValueError naming parameter `key` if its loaded state holds None for one of `names`
    (arrays that step() updates in place, and would fail on after writing the others)."""
    for name in names:
        if name in restored and restored[name] is None:
            raise ValueError(f"loaded state {name!r} of parameter {key} must be an array of "
                             f"shape {param.shape}, got None")


def param_and_grad(p, state, names):
    """(param, grad): the arrays of parameter `p` and its gradient, checked as SGD and Adam
    check them, before step() writes to any parameter: the parameter a C-contiguous, writable
    float32 array (its update is written into it), the gradient float32 of its shape (a
    smaller one would broadcast), and so the arrays `names` of its `state` that it holds."""
    if isinstance(p._data, np.ndarray):
        in_place, grad_of = _in_place, _param_grad
    else:
        from pyrt.cuda.ops._checks import in_place
        from pyrt.cuda.ops._checks import param_grad as grad_of
    param = in_place(p._data, "param")
    grad = grad_of(p._grad._data, param.shape)
    for name in names:
        if state.get(name) is not None:
            in_place(state[name], name, param.shape)
    return param, grad


class ArrayOptimizer(Optimizer):
    def step(self, closure=None):
        """Update every parameter that has a gradient; returns closure()'s loss if given."""
        loss = self._closure_loss(closure)
        self._on_device()  # (moves the state arrays to the parameters' device if need be)
        # every group's settings checked before any parameter is written, and every
        # parameter, gradient and state array, so that a bad one leaves all as they were
        settings = [self._hyperparameters(group) for group in self.param_groups]
        work = [[(p, *param_and_grad(p, self.state.get(p) or {}, self._STATE_ARRAYS))
                 for p in group["params"] if p._grad is not None]
                for group in self.param_groups]
        count, marks = new_write()
        for items, hyperparameters in zip(work, settings):
            for p, param, grad in items:
                xp = _xp(param)
                state = self.state[p]
                if not state:  # its first step (or a loaded state left it out)
                    state["step"] = 0
                    self._new_state(state, param, xp, *hyperparameters)
                # the write is recorded for autograd first: a graph that read p before this
                # step must refuse its backward
                marks[write_key(param)] = count
                state["step"] += 1
                self._update(param, grad, state, xp, *hyperparameters)
        return loss

    def _new_state(self, state, param, xp, *hyperparameters):
        """Fill a parameter's state before its first step ("step" is there already): zeros
        for each of its arrays, unless the subclass says otherwise."""
        for name in self._STATE_ARRAYS:
            state[name] = xp.zeros_like(param)

    def _update(self, param, grad, state, xp, *hyperparameters):
        """One parameter's step t = state["step"] (counted already), in place."""
        raise NotImplementedError

    def _check_state(self, restored, key, param):
        super()._check_state(restored, key, param)
        check_step_count(restored, key)
        check_state_arrays(restored, key, param, self._STATE_ARRAYS)


def lerp_(a, b, weight):
    """a += weight * (b - a) in place: torch's lerp_ of a moving average."""
    a += weight * (b - a)


def decay(param, grad, lr, weight_decay, decoupled):
    """Weight decay: the parameter shrunk in place (decoupled, as AdamW), or the gradient
    with weight_decay * param added (L2). Returns the gradient to use."""
    if weight_decay == 0:
        return grad
    if decoupled:
        param *= 1 - lr * weight_decay
        return grad
    return grad + weight_decay * param
