"""Muon, as torch.optim.Muon (Jordan et al. 2024): SGD with Nesterov momentum for the 2-D
parameters of hidden layers, whose update matrix is replaced by the nearest semi-orthogonal
one (about U V^T of its SVD U S V^T), found by a few Newton-Schulz iterations.

torch runs the iterations in bfloat16; pyrt has no bfloat16 and runs them in float32, so its
updates are more precise than torch's and differ from them by bfloat16's rounding (about 1e-2
relative), as the updates of two GPUs' bfloat16 kernels may differ."""

import math

import numpy as np

from pyrt.ops.optim import _real
from pyrt.optim.array_optimizer import ArrayOptimizer, lerp_
from pyrt.optim.torch_options import flag

__all__ = ["Muon", "zeropower_via_newtonschulz"]

EPS = 1e-7
DEFAULT_A = 3.4445
DEFAULT_B = -4.7750
DEFAULT_C = 2.0315
DEFAULT_NS_STEPS = 5
_ADJUSTMENTS = (None, "original", "match_rms_adamw")


def zeropower_via_newtonschulz(grad, ns_coefficients, ns_steps, eps, xp=np):
    """The 2-D array `grad` orthogonalised: scaled to Frobenius norm 1 (so that its spectral
    norm is at most 1), then `ns_steps` iterations of the quintic X = a X + (b A + c A^2) X
    with A = X X^T, which drive every singular value towards 1 (to roughly 0.7 .. 1.2: the
    coefficients trade exactness for speed). The iterations run on the wide orientation, where
    A is the smaller Gram matrix."""
    a, b, c = ns_coefficients
    tall = grad.shape[0] > grad.shape[1]
    x = grad.T if tall else grad
    x = x / max(float(xp.sqrt(xp.sum(x * x))), eps)
    for _ in range(ns_steps):
        gram = x @ x.T
        x = a * x + (b * gram + c * (gram @ gram)) @ x
    return xp.ascontiguousarray(x.T if tall else x)


def adjusted_lr(lr, adjust_lr_fn, shape):
    """lr scaled for a matrix of `shape` (A, B): by sqrt(max(1, A / B)) ("original", None), so
    that the update's RMS does not depend on the shape, or by 0.2 sqrt(max(A, B))
    ("match_rms_adamw"), so that it matches AdamW's."""
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        return lr * math.sqrt(max(1, rows / cols))
    return lr * 0.2 * math.sqrt(max(rows, cols))


def muon_hyperparameters(lr, weight_decay, momentum, nesterov, ns_coefficients, eps, ns_steps,
                         adjust_lr_fn):
    """Muon's hyper-parameters checked as PyTorch checks them (those torch checks on the first
    step, ns_steps and ns_coefficients, checked here too), as (lr, weight_decay, momentum,
    nesterov, (a, b, c), eps, ns_steps, adjust_lr_fn)."""
    lr = _real(lr, "lr")
    weight_decay = _real(weight_decay, "weight_decay")
    momentum = _real(momentum, "momentum")
    eps = _real(eps, "eps")
    if not 0.0 <= lr:
        raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
    if not 0.0 <= momentum:
        raise ValueError(f"momentum should be >= 0 but is: {momentum}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
    if adjust_lr_fn not in _ADJUSTMENTS:
        raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
    if isinstance(ns_steps, bool) or not isinstance(ns_steps, (int, np.integer)):
        raise TypeError(f"ns_steps must be an int, got {type(ns_steps).__name__}")
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if ns_steps < 0:
        raise ValueError(f"ns_steps must be >= 0, got {ns_steps}")
    if not isinstance(ns_coefficients, (tuple, list)) or len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    coefficients = tuple(_real(v, f"ns_coefficients[{i}]") for i, v in enumerate(ns_coefficients))
    return (lr, weight_decay, momentum, flag(nesterov, "nesterov"), coefficients, eps,
            int(ns_steps), adjust_lr_fn)


class Muon(ArrayOptimizer):
    """For each 2-D parameter p [A, B] with gradient g:

        buf = momentum buf + (1 - momentum) g          (buf starts at zero)
        u = g + momentum (buf - g) if nesterov else buf
        p = p (1 - lr weight_decay) - adjusted_lr(lr) NS(u)

    NS is zeropower_via_newtonschulz, and adjusted_lr scales lr by sqrt(max(1, A / B)) or, with
    adjust_lr_fn="match_rms_adamw", by 0.2 sqrt(max(A, B)). Parameters of other ranks (biases,
    embeddings) are refused: train them with AdamW. ``state[p]`` holds "momentum_buffer" and
    "step" (which torch does not keep)."""

    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=(DEFAULT_A, DEFAULT_B, DEFAULT_C), eps=EPS,
                 ns_steps=DEFAULT_NS_STEPS, adjust_lr_fn=None):
        muon_hyperparameters(lr, weight_decay, momentum, nesterov, ns_coefficients, eps,
                             ns_steps, adjust_lr_fn)
        super().__init__(params, {"lr": lr, "weight_decay": weight_decay, "momentum": momentum,
                                  "nesterov": nesterov, "ns_coefficients": ns_coefficients,
                                  "eps": eps, "ns_steps": ns_steps,
                                  "adjust_lr_fn": adjust_lr_fn})

    def add_param_group(self, param_group):
        """Add a group of parameters, as Optimizer.add_param_group: 2-D ones only."""
        super().add_param_group(param_group)
        for p in self.param_groups[-1]["params"]:
            if p.ndim != 2:
                del self.param_groups[-1]
                raise ValueError("Muon only supports 2D parameters whereas we found a parameter "
                                 f"with size: {tuple(p.shape)}")

    def _update(self, param, grad, state, xp, lr, weight_decay, momentum, nesterov,
                ns_coefficients, eps, ns_steps, adjust_lr_fn):
        buf = state["momentum_buffer"]
        lerp_(buf, grad, 1 - momentum)
        update = grad + momentum * (buf - grad) if nesterov else buf
        update = zeropower_via_newtonschulz(update, ns_coefficients, ns_steps, eps, xp)
        param *= 1 - lr * weight_decay
        param -= adjusted_lr(lr, adjust_lr_fn, param.shape) * update

    _STATE_ARRAYS = ("momentum_buffer",)
    _STATE_NEEDED = ("momentum_buffer",)

    def _check_state(self, restored, key, param):
        if restored:
            restored.setdefault("step", 0)  # a state saved by torch, which keeps no count
        super()._check_state(restored, key, param)

    _HYPERPARAMETERS = ("lr", "weight_decay", "momentum", "nesterov", "ns_coefficients", "eps",
                        "ns_steps", "adjust_lr_fn")
    _checked_hyperparameters = staticmethod(muon_hyperparameters)
