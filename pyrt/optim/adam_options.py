"""Adam's and AdamW's options that its fused kernel does not compute, ``amsgrad`` (Reddi et
al. 2018) and ``maximize``: a step of a group that sets either is written with array
operations in place (NumPy's on the CPU, CuPy's on the GPU), as torch.optim.Adam computes it."""

import math

from pyrt.functional import _xp
from pyrt.optim.array_optimizer import lerp_, param_and_grad
from pyrt.optim.torch_options import check_options, flag

__all__ = ["adam_flags", "array_step", "uses_array_step"]


def adam_flags(amsgrad, foreach, maximize, capturable, differentiable, fused):
    """Check Adam's options as torch does; returns (amsgrad, maximize) as bools. ``fused``
    (one kernel for all parameters) changes nothing: pyrt's step is fused already."""
    if fused is not None:
        flag(fused, "fused")
    return flag(amsgrad, "amsgrad"), check_options(maximize, foreach, capturable, differentiable)


def uses_array_step(optimizer):
    """Whether some group sets amsgrad or maximize (which the fused kernel does not do)."""
    return any(group.get("amsgrad") or group.get("maximize") for group in optimizer.param_groups)


def array_step(optimizer):
    """One step of every parameter with a gradient. For each parameter p with gradient g, at
    its step t (weight decay is 0 here for AdamW, which applied it already):

        g = -g if maximize;  g = g + weight_decay * p
        m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g^2
        v_max = max(v_max, v) if amsgrad (the denominator never shrinks), else v
        p = p - lr / (1 - beta1^t) * m / (sqrt(v_max) / sqrt(1 - beta2^t) + eps)

    ``state[p]`` holds "step", "exp_avg", "exp_avg_sq" and, with amsgrad, "max_exp_avg_sq"."""
    names = ("exp_avg", "exp_avg_sq", "max_exp_avg_sq")
    # every group's settings, parameter and gradient checked before anything is written
    settings = [(optimizer._hyperparameters(group), bool(group.get("amsgrad")),
                 bool(group.get("maximize"))) for group in optimizer.param_groups]
    work = [[(p, *param_and_grad(p, optimizer.state.get(p) or {}, names))
             for p in group["params"] if p._grad is not None]
            for group in optimizer.param_groups]
    for items, ((lr, beta1, beta2, eps, weight_decay), amsgrad, maximize) in zip(work, settings):
        for p, param, grad in items:
            xp = _xp(param)
            state = optimizer.state[p]
            if not state:
                state.update(step=0, exp_avg=xp.zeros_like(param),
                             exp_avg_sq=xp.zeros_like(param))
            if amsgrad and state.get("max_exp_avg_sq") is None:
                state["max_exp_avg_sq"] = xp.zeros_like(param)
            state["step"] += 1
            t = state["step"]
            if maximize:
                grad = -grad
            if weight_decay != 0:
                grad = grad + weight_decay * param
            exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
            lerp_(exp_avg, grad, 1 - beta1)
            exp_avg_sq *= beta2
            exp_avg_sq += (1 - beta2) * grad * grad
            second = exp_avg_sq
            if amsgrad:
                xp.maximum(state["max_exp_avg_sq"], exp_avg_sq, out=state["max_exp_avg_sq"])
                second = state["max_exp_avg_sq"]
            denom = xp.sqrt(second) / math.sqrt(1 - beta2 ** t) + eps
            param -= (lr / (1 - beta1 ** t)) * (exp_avg / denom)
    optimizer._stepped()
