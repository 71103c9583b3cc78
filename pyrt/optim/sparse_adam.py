"""SparseAdam, as torch.optim.SparseAdam: Adam that updates, at each step, only the rows of a
parameter that its gradient touches (the embedding rows a batch looked up), leaving the
moments and values of the other rows as they are.

torch takes sparse gradients only (an Embedding with sparse=True makes them, listing the rows
looked up) and refuses dense ones. pyrt has no sparse tensors: it takes the dense gradient and
treats its rows with a nonzero element as the rows listed, which gives torch's step for the
same gradient in sparse form. A row looked up whose gradient is exactly zero is the one
difference: torch decays its moments and moves it; here it is left alone."""

import math

from pyrt.ops.optim import _real
from pyrt.optim.array_optimizer import ArrayOptimizer
from pyrt.optim.torch_options import flag

__all__ = ["SparseAdam"]


def sparse_adam_hyperparameters(lr, betas, eps, maximize):
    """SparseAdam's hyper-parameters checked as PyTorch checks them, as (lr, beta1, beta2,
    eps, maximize)."""
    lr = _real(lr, "lr")
    eps = _real(eps, "eps")
    try:
        beta1, beta2 = betas
    except (TypeError, ValueError):
        raise TypeError(f"betas must be a pair of real numbers, got {betas!r}") from None
    beta1 = _real(beta1, "betas[0]")
    beta2 = _real(beta2, "betas[1]")
    if not 0.0 < lr:
        raise ValueError(f"Invalid learning rate: {lr}")
    if not 0.0 < eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if not 0.0 <= beta1 < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {beta1}")
    if not 0.0 <= beta2 < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {beta2}")
    return lr, beta1, beta2, eps, flag(maximize, "maximize")


class SparseAdam(ArrayOptimizer):
    """For each parameter p with gradient g (-g with maximize), at its step t, on the rows
    (indices of the first dimension; elements of a 1-D parameter) where g has a nonzero
    element, and there only:

        m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g^2
        p = p - lr sqrt(1 - beta2^t) / (1 - beta1^t) m / (sqrt(v) + eps)

    t counts every step the parameter had a gradient, touching its rows or not. ``state[p]``
    holds "step", "exp_avg" (m) and "exp_avg_sq" (v)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        sparse_adam_hyperparameters(lr, betas, eps, maximize)
        super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps,
                                  "maximize": maximize})

    def _update(self, param, grad, state, xp, lr, beta1, beta2, eps, maximize):
        if maximize:
            grad = -grad
        if grad.ndim == 0:
            rows = (...,) if grad != 0 else None
        else:
            touched = grad.reshape(grad.shape[0], -1).any(axis=1)
            rows = xp.flatnonzero(touched) if touched.any() else None
        if rows is None:  # torch skips an empty sparse gradient (its step still counts)
            return
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        g = grad[rows]
        old_avg, old_avg_sq = exp_avg[rows], exp_avg_sq[rows]
        new_avg = old_avg + (g - old_avg) * (1 - beta1)
        new_avg_sq = old_avg_sq + (g * g - old_avg_sq) * (1 - beta2)
        exp_avg[rows] = new_avg
        exp_avg_sq[rows] = new_avg_sq
        t = state["step"]
        step_size = lr * math.sqrt(1 - beta2 ** t) / (1 - beta1 ** t)
        param[rows] += -step_size * (new_avg / (xp.sqrt(new_avg_sq) + eps))

    _STATE_ARRAYS = ("exp_avg", "exp_avg_sq")
    _STATE_NEEDED = ("step", "exp_avg", "exp_avg_sq")
    _HYPERPARAMETERS = ("lr", "betas", "eps", "maximize")
    _checked_hyperparameters = staticmethod(sparse_adam_hyperparameters)
