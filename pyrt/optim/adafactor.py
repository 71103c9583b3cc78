"""Adafactor, as torch.optim.Adafactor (Shazeer and Stern 2018): Adam-like steps without first
moments, whose second moments of a matrix are kept factored, as the means of its rows and of
its columns, in memory proportional to rows + columns rather than rows x columns."""

import math

import numpy as np

from pyrt.ops.optim import _real
from pyrt.optim.array_optimizer import ArrayOptimizer, lerp_
from pyrt.optim.torch_options import check_options
from pyrt.tensor import Tensor

__all__ = ["Adafactor"]

_FLOAT32_EPS = float(np.finfo(np.float32).eps)  # eps1 by default, as torch's for float32


def adafactor_hyperparameters(lr, beta2_decay, eps, d, weight_decay, maximize, foreach):
    """Adafactor's hyper-parameters checked as PyTorch checks them, as (lr, beta2_decay,
    eps1 or None, eps2, d, weight_decay, maximize)."""
    lr = _real(lr, "lr")
    beta2_decay = _real(beta2_decay, "beta2_decay")
    try:
        eps1, eps2 = eps
    except (TypeError, ValueError):
        raise TypeError(f"eps must be a pair (eps1 or None, eps2), got {eps!r}") from None
    eps1 = None if eps1 is None else _real(eps1, "eps[0]")
    eps2 = _real(eps2, "eps[1]")
    d = _real(d, "d")
    weight_decay = _real(weight_decay, "weight_decay")
    if not 0.0 <= lr:
        raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
    if not 0.0 >= beta2_decay:
        raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
    if eps1 is not None and not 0.0 <= eps1:
        raise ValueError(f"epsilon1 should be >= 0 but is: {eps1}")
    if not 0.0 <= eps2:
        raise ValueError(f"epsilon2 should be >= 0 but is: {eps2}")
    if not 1.0 <= d:
        raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
    maximize = check_options(maximize, foreach)
    return lr, beta2_decay, eps1, eps2, d, weight_decay, maximize


def _factor_shapes(shape):
    """The shapes of row_var (the last dimension reduced to 1) and col_var (the one before
    it) of a parameter of `shape`, with two dimensions or more."""
    return shape[:-1] + (1,), shape[:-2] + (1,) + shape[-1:]


def _rms(x, xp):
    """The root mean square of the array x, as a Python float."""
    return float(xp.sqrt(xp.sum(x * x))) / math.sqrt(x.size)


class Adafactor(ArrayOptimizer):
    """For each parameter p with gradient g (-g with maximize), at its step t:

        beta2_t = 1 - t^beta2_decay;  rho = min(lr, 1 / sqrt(t))
        alpha = max(eps2, rms(p)) rho;  p = p (1 - lr weight_decay)
        p of 2 dimensions or more (the last two the matrix: rows and columns):
            R = beta2_t R + (1 - beta2_t) mean(g^2 over columns)
            C = beta2_t C + (1 - beta2_t) mean(g^2 over rows)
            v = R C / max(mean(R), eps1)    (an outer product: the factored estimate)
        else:
            v = beta2_t v + (1 - beta2_t) g^2
        u = g / sqrt(max(v, eps1^2));  p = p - alpha / max(1, rms(u) / d) u

    eps1 None means float32's machine epsilon. ``state[p]`` holds "step" and either
    "row_var" (R, the parameter's shape with the last dimension 1) and "col_var" (C, the one
    before it 1), or "variance" (v, the parameter's shape). ``foreach`` is accepted and
    changes nothing."""

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0,
                 weight_decay=0.0, *, foreach=None, maximize=False):
        adafactor_hyperparameters(lr, beta2_decay, eps, d, weight_decay, maximize, foreach)
        super().__init__(params, {"lr": lr, "beta2_decay": beta2_decay, "eps": tuple(eps),
                                  "d": d, "weight_decay": weight_decay, "foreach": foreach,
                                  "maximize": maximize})

    def step(self, closure=None):
        """Update every parameter that has a gradient; returns closure()'s loss if given."""
        # the factored moments are not of the parameter's shape, which the base checks the
        # state arrays against: they are checked here, before any parameter is written
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state.get(p)
                if p._grad is not None and state and p._data.ndim > 1:
                    _check_factors(state, f"of shape {p.shape}", p.shape, in_place=True)
        return super().step(closure)

    def _new_state(self, state, param, xp, *hyperparameters):
        if param.ndim > 1:
            row_shape, col_shape = _factor_shapes(param.shape)
            state["row_var"] = xp.zeros(row_shape, np.float32)
            state["col_var"] = xp.zeros(col_shape, np.float32)
        else:
            state["variance"] = xp.zeros_like(param)

    def _update(self, param, grad, state, xp, lr, beta2_decay, eps1, eps2, d, weight_decay,
                maximize):
        if maximize:
            grad = -grad
        if eps1 is None:
            eps1 = _FLOAT32_EPS
        t = float(state["step"])
        one_minus_beta2 = t ** beta2_decay
        rho = min(lr, 1 / t ** 0.5)
        alpha = max(eps2, _rms(param, xp)) * rho  # (from the parameter before its decay)
        if weight_decay != 0:
            param *= 1 - lr * weight_decay
        if param.ndim > 1:
            row_var, col_var = state["row_var"], state["col_var"]
            square = grad * grad
            lerp_(row_var, square.mean(axis=-1, keepdims=True), one_minus_beta2)
            lerp_(col_var, square.mean(axis=-2, keepdims=True), one_minus_beta2)
            # the rank-one estimate of the second moments, normalised by the mean row moment
            row_mean = xp.maximum(row_var.mean(axis=-2, keepdims=True), np.float32(eps1))
            var_estimate = row_var * col_var / row_mean
        else:
            variance = state["variance"]
            lerp_(variance, grad * grad, one_minus_beta2)
            var_estimate = variance
        update = grad / xp.sqrt(xp.maximum(var_estimate, np.float32(eps1 * eps1)))
        denom = max(1.0, _rms(update, xp) / d)
        param += (-alpha / denom) * update

    _STATE_ARRAYS = ("variance",)
    _STATE_NEEDED = ("step",)
    _HYPERPARAMETERS = ("lr", "beta2_decay", "eps", "d", "weight_decay", "maximize", "foreach")
    _checked_hyperparameters = staticmethod(adafactor_hyperparameters)

    def _check_state(self, restored, key, param):
        super()._check_state(restored, key, param)
        if restored and param.ndim < 2 and "variance" not in restored:
            raise ValueError(f"loaded state of parameter {key} lacks variance")

    def load_state_dict(self, state_dict):
        """Restore a state saved by ``state_dict()``, as Optimizer.load_state_dict; the
        factored moments, not of their parameter's shape, are checked and restored here."""
        params_of = {}
        for group, saved in zip(self.param_groups, state_dict["param_groups"]):
            params_of.update(zip(saved["params"], group["params"]))
        rest, factors = {}, {}
        for key, values in state_dict["state"].items():
            values = dict(values)
            loaded = {name: values.pop(name) for name in ("row_var", "col_var") if name in values}
            param = params_of.get(key)
            if param is not None and values:
                if param.ndim > 1:
                    factors[key] = _check_factors(loaded, key, param.shape)
                elif loaded:
                    raise ValueError(f"loaded state of parameter {key} holds factored moments, "
                                     f"but the parameter has shape {param.shape}")
            rest[key] = values
        super().load_state_dict({**state_dict, "state": rest})
        for key, loaded in factors.items():
            self.state[params_of[key]].update(loaded)


def _check_factors(state, key, shape, in_place=False):
    """The factored moments row_var and col_var of `state` for a parameter of `shape`, as
    float32 arrays (copies unless in_place); ValueError naming parameter `key` for one
    missing or of the wrong shape, as the step or a loaded state would meet them."""
    checked = {}
    for name, expected in zip(("row_var", "col_var"), _factor_shapes(tuple(shape))):
        value = state.get(name)
        if value is None:
            raise ValueError(f"state of parameter {key} lacks {name}")
        if isinstance(value, Tensor):
            value = value._data
        elif not in_place and hasattr(value, "__array__") and not hasattr(value, "flags"):
            value = np.asarray(value)  # another library's tensor (torch's state)
        if not hasattr(value, "shape") or tuple(value.shape) != expected:
            raise ValueError(f"state {name!r} of parameter {key} must have shape {expected}, "
                             f"got {getattr(value, 'shape', type(value).__name__)}")
        if in_place:
            if value.dtype != np.float32 or not value.flags.c_contiguous:
                raise ValueError(f"state {name!r} of parameter {key} must be a C-contiguous "
                                 "float32 array: it is updated in place")
        else:
            if value.dtype.kind not in "biuf":
                raise ValueError(f"loaded state {name!r} of parameter {key} must hold real "
                                 f"numbers, got dtype {value.dtype}")
            value = np.array(value, dtype=np.float32, order="C")
        checked[name] = value
    return checked
