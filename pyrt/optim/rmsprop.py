"""RMSprop, as torch.optim.RMSprop (Hinton's lecture 6e; centered as in Graves 2013), written
with array operations in place on the parameter and its state: NumPy's on the CPU, CuPy's on
the GPU."""

import operator

import numpy as np

from pyrt.autograd import new_write, write_key
from pyrt.functional import _xp
from pyrt.ops.optim import _grad as _param_grad
from pyrt.ops.optim import _in_place, _real
from pyrt.optim.optimizer import Optimizer

__all__ = ["RMSprop", "rmsprop_hyperparameters"]


def rmsprop_hyperparameters(lr, alpha, eps, weight_decay, momentum, centered):
    """RMSprop's hyper-parameters checked as PyTorch checks them, as (lr, alpha, eps,
    weight_decay, momentum) floats and centered a bool."""
    lr = _real(lr, "lr")
    alpha = _real(alpha, "alpha")
    eps = _real(eps, "eps")
    weight_decay = _real(weight_decay, "weight_decay")
    momentum = _real(momentum, "momentum")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if not 0.0 <= momentum:
        raise ValueError(f"Invalid momentum value: {momentum}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")
    if not 0.0 <= alpha:
        raise ValueError(f"Invalid alpha value: {alpha}")
    return lr, alpha, eps, weight_decay, momentum, bool(centered)


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
    if isinstance(p.data, np.ndarray):
        in_place, grad_of = _in_place, _param_grad
    else:
        from pyrt.cuda.ops._checks import in_place
        from pyrt.cuda.ops._checks import param_grad as grad_of
    param = in_place(p.data, "param")
    grad = grad_of(p._grad.data, param.shape)
    for name in names:
        if state.get(name) is not None:
            in_place(state[name], name, param.shape)
    return param, grad


class RMSprop(Optimizer):
    """For each parameter p with gradient g:

        g = g + weight_decay * p
        v = alpha * v + (1 - alpha) * g^2
        centered: g_avg = alpha * g_avg + (1 - alpha) * g;  d = sqrt(v - g_avg^2) + eps
        else:     d = sqrt(v) + eps
        with momentum: buf = momentum * buf + g / d;  p = p - lr * buf
        else:          p = p - lr * g / d

    v, g_avg and buf start at zero. ``state[p]`` holds "step" (an int), "square_avg" (v) and,
    as the options ask, "momentum_buffer" (buf) and "grad_avg" (g_avg): float32 arrays on the
    parameter's device. A buffer that an option switched on later asks for starts at zero.
    """

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False):
        rmsprop_hyperparameters(lr, alpha, eps, weight_decay, momentum, centered)  # as PyTorch
        defaults = {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps,
                    "centered": centered, "weight_decay": weight_decay}
        super().__init__(params, defaults)

    def step(self, closure=None):
        """Update every parameter that has a gradient; returns closure()'s loss if given."""
        loss = self._closure_loss(closure)
        self._on_device()  # (moves the state arrays to the parameters' device if need be)
        # every group's settings checked before any parameter is written
        settings = [self._hyperparameters(group) for group in self.param_groups]
        # and every parameter, gradient and state array, so that a bad one leaves all as
        # they were
        work = [[(p, *param_and_grad(p, self.state.get(p) or {}, self._STATE_ARRAYS))
                 for p in group["params"] if p._grad is not None]
                for group in self.param_groups]
        count, marks = new_write()
        for items, hyperparameters in zip(work, settings):
            lr, alpha, eps, weight_decay, momentum, centered = hyperparameters
            for p, param, grad in items:
                xp = _xp(param)
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["square_avg"] = xp.zeros_like(param)
                if momentum > 0 and "momentum_buffer" not in state:
                    state["momentum_buffer"] = xp.zeros_like(param)
                if centered and "grad_avg" not in state:
                    state["grad_avg"] = xp.zeros_like(param)
                # the write is recorded for autograd first: a graph that read p before this
                # step must refuse its backward
                marks[write_key(param)] = count
                state["step"] += 1
                if weight_decay != 0:
                    grad = grad + weight_decay * param
                square_avg = state["square_avg"]
                square_avg *= alpha
                square_avg += (1 - alpha) * grad * grad
                if centered:
                    grad_avg = state["grad_avg"]
                    grad_avg += (1 - alpha) * (grad - grad_avg)
                    avg = xp.sqrt(square_avg - grad_avg * grad_avg)
                else:
                    avg = xp.sqrt(square_avg)
                avg += eps
                if momentum > 0:
                    buf = state["momentum_buffer"]
                    buf *= momentum
                    buf += grad / avg
                    param -= lr * buf
                else:
                    param -= lr * (grad / avg)
        return loss

    _STATE_ARRAYS = ("square_avg", "momentum_buffer", "grad_avg")
    _STATE_NEEDED = ("step", "square_avg")

    def _check_state(self, restored, key, param):
        super()._check_state(restored, key, param)
        check_step_count(restored, key)
        check_state_arrays(restored, key, param, self._STATE_ARRAYS)

    # the group's hyper-parameters, in the order rmsprop_hyperparameters checks them
    _HYPERPARAMETERS = ("lr", "alpha", "eps", "weight_decay", "momentum", "centered")
    _checked_hyperparameters = staticmethod(rmsprop_hyperparameters)
