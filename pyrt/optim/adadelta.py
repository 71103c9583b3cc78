"""Adadelta, as torch.optim.Adadelta (Zeiler 2012): a step scaled by the ratio of running
root-mean-squares of past updates and of gradients, so that it carries the parameter's
units."""

from pyrt.ops.optim import _real
from pyrt.optim.array_optimizer import ArrayOptimizer, decay

__all__ = ["Adadelta"]


def adadelta_hyperparameters(lr, rho, eps, weight_decay):
    """Adadelta's hyper-parameters checked as PyTorch checks them, as floats."""
    lr, rho = _real(lr, "lr"), _real(rho, "rho")
    eps, weight_decay = _real(eps, "eps"), _real(weight_decay, "weight_decay")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")
    if not 0.0 <= rho <= 1.0:
        raise ValueError(f"Invalid rho value: {rho}")
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")
    return lr, rho, eps, weight_decay


class Adadelta(ArrayOptimizer):
    """For each parameter p with gradient g:

        g = g + weight_decay * p
        v = rho * v + (1 - rho) * g^2
        d = sqrt(u + eps) / sqrt(v + eps) * g
        u = rho * u + (1 - rho) * d^2
        p = p - lr * d

    ``state[p]`` holds "step", "square_avg" (v) and "acc_delta" (u)."""

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0):
        adadelta_hyperparameters(lr, rho, eps, weight_decay)  # ValueError as PyTorch's
        super().__init__(params, {"lr": lr, "rho": rho, "eps": eps,
                                  "weight_decay": weight_decay})

    def _update(self, param, grad, state, xp, lr, rho, eps, weight_decay):
        grad = decay(param, grad, lr, weight_decay, False)
        square_avg, acc_delta = state["square_avg"], state["acc_delta"]
        square_avg *= rho
        square_avg += (1 - rho) * grad * grad
        delta = xp.sqrt(acc_delta + eps) / xp.sqrt(square_avg + eps) * grad
        acc_delta *= rho
        acc_delta += (1 - rho) * delta * delta
        param -= lr * delta

    _STATE_ARRAYS = ("square_avg", "acc_delta")
    _STATE_NEEDED = ("step", "square_avg", "acc_delta")
    _HYPERPARAMETERS = ("lr", "rho", "eps", "weight_decay")
    _checked_hyperparameters = staticmethod(adadelta_hyperparameters)
