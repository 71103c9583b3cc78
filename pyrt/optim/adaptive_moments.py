"""Adamax, NAdam and RAdam, as torch.optim's: Adam's moment estimates with the infinity norm
(Kingma and Ba 2015, section 7.1), with Nesterov momentum (Dozat 2016), and with the variance
of the adaptive rate rectified in the first steps (Liu et al. 2020)."""

import math

import numpy as np

from pyrt.ops.optim import _real, adam_hyperparameters
from pyrt.optim.array_optimizer import ArrayOptimizer, decay, lerp_

__all__ = ["Adamax", "NAdam", "RAdam"]


class Adamax(ArrayOptimizer):
    """For each parameter p with gradient g, at its step t:

        g = g + weight_decay * p
        m = beta1 * m + (1 - beta1) * g;  u = max(beta2 * u, |g| + eps)
        p = p - lr / (1 - beta1^t) * m / u

    ``state[p]`` holds "step", "exp_avg" (m) and "exp_inf" (u)."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0):
        adam_hyperparameters(lr, betas, eps, weight_decay)  # ValueError as PyTorch's
        super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps,
                                  "weight_decay": weight_decay})

    def _update(self, param, grad, state, xp, lr, beta1, beta2, eps, weight_decay):
        grad = decay(param, grad, lr, weight_decay, False)
        exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
        lerp_(exp_avg, grad, 1 - beta1)
        xp.maximum(exp_inf * beta2, xp.abs(grad) + eps, out=exp_inf)
        param -= lr / (1 - beta1 ** state["step"]) * (exp_avg / exp_inf)

    _STATE_ARRAYS = ("exp_avg", "exp_inf")
    _STATE_NEEDED = ("step", "exp_avg", "exp_inf")
    _HYPERPARAMETERS = ("lr", "betas", "eps", "weight_decay")
    _checked_hyperparameters = staticmethod(adam_hyperparameters)


def _moments_with(lr, betas, eps, weight_decay, decoupled_weight_decay):
    return (*adam_hyperparameters(lr, betas, eps, weight_decay), bool(decoupled_weight_decay))


def _nadam_hyperparameters(lr, betas, eps, weight_decay, momentum_decay,
                           decoupled_weight_decay):
    checked = _moments_with(lr, betas, eps, weight_decay, decoupled_weight_decay)
    momentum_decay = _real(momentum_decay, "momentum_decay")
    if not 0.0 <= momentum_decay:
        raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
    return (*checked, momentum_decay)


def _second_moment(exp_avg_sq, grad, beta2):
    exp_avg_sq *= beta2
    exp_avg_sq += (1 - beta2) * grad * grad


class NAdam(ArrayOptimizer):
    """Adam with Nesterov momentum: for each parameter p with gradient g, at its step t,

        mu_t = beta1 (1 - 0.96^(t momentum_decay) / 2);  mu_prod = mu_1 ... mu_t
        m, v as Adam's;  d = sqrt(v / (1 - beta2^t)) + eps
        p = p - lr (1 - mu_t) / (1 - mu_prod) g / d
              - lr mu_{t+1} / (1 - mu_prod mu_{t+1}) m / d

    with weight decay as L2 or, with decoupled_weight_decay, as AdamW's. ``state[p]`` holds
    "step", "mu_product" (a float32 number, as torch keeps it), "exp_avg" and "exp_avg_sq"."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 momentum_decay=4e-3, decoupled_weight_decay=False):
        _nadam_hyperparameters(lr, betas, eps, weight_decay, momentum_decay,
                               decoupled_weight_decay)
        super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps,
                                  "weight_decay": weight_decay, "momentum_decay": momentum_decay,
                                  "decoupled_weight_decay": decoupled_weight_decay})

    def _new_state(self, state, param, xp, *hyperparameters):
        super()._new_state(state, param, xp)
        state["mu_product"] = 1.0

    def _update(self, param, grad, state, xp, lr, beta1, beta2, eps, weight_decay, decoupled,
                momentum_decay):
        t = state["step"]
        grad = decay(param, grad, lr, weight_decay, decoupled)
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (t * momentum_decay))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * momentum_decay))
        mu_product = float(np.float32(float(state["mu_product"]) * mu))
        state["mu_product"] = mu_product
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        lerp_(exp_avg, grad, 1 - beta1)
        _second_moment(exp_avg_sq, grad, beta2)
        denom = xp.sqrt(exp_avg_sq / (1 - beta2 ** t)) + eps
        param -= lr * (1.0 - mu) / (1.0 - mu_product) * (grad / denom)
        param -= lr * mu_next / (1.0 - mu_product * mu_next) * (exp_avg / denom)

    _STATE_ARRAYS = ("exp_avg", "exp_avg_sq")
    _STATE_NEEDED = ("step", "mu_product", "exp_avg", "exp_avg_sq")
    _HYPERPARAMETERS = ("lr", "betas", "eps", "weight_decay", "momentum_decay",
                        "decoupled_weight_decay")
    _checked_hyperparameters = staticmethod(_nadam_hyperparameters)


class RAdam(ArrayOptimizer):
    """Adam with its adaptive rate rectified: for each parameter p with gradient g, at its
    step t, with m, v as Adam's, rho_inf = 2 / (1 - beta2) - 1 and
    rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t):

        rho_t > 5:  r = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))
                    p = p - lr m / (1 - beta1^t) r sqrt(1 - beta2^t) / (sqrt(v) + eps)
        else:       p = p - lr m / (1 - beta1^t)   (SGD with momentum while v is unreliable)

    with weight decay as L2 or, with decoupled_weight_decay, as AdamW's. ``state[p]`` holds
    "step", "exp_avg" and "exp_avg_sq"."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False):
        _moments_with(lr, betas, eps, weight_decay, decoupled_weight_decay)
        super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps,
                                  "weight_decay": weight_decay,
                                  "decoupled_weight_decay": decoupled_weight_decay})

    def _update(self, param, grad, state, xp, lr, beta1, beta2, eps, weight_decay, decoupled):
        t = state["step"]
        grad = decay(param, grad, lr, weight_decay, decoupled)
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        lerp_(exp_avg, grad, 1 - beta1)
        _second_moment(exp_avg_sq, grad, beta2)
        correction1, correction2 = 1 - beta1 ** t, 1 - beta2 ** t
        corrected = exp_avg / correction1
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * t * (beta2 ** t) / correction2
        if rho_t > 5.0:
            rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf
                             / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            adaptive = math.sqrt(correction2) / (xp.sqrt(exp_avg_sq) + eps)
            param -= corrected * lr * adaptive * rect
        else:
            param -= corrected * lr

    _STATE_ARRAYS = ("exp_avg", "exp_avg_sq")
    _STATE_NEEDED = ("step", "exp_avg", "exp_avg_sq")
    _HYPERPARAMETERS = ("lr", "betas", "eps", "weight_decay", "decoupled_weight_decay")
    _checked_hyperparameters = staticmethod(_moments_with)
