"""RMSprop, as torch.optim.RMSprop (Hinton's lecture 6e; centered as in Graves 2013), written
with array operations in place on the parameter and its state: NumPy's on the CPU, CuPy's on
the GPU."""

from pyrt.ops.optim import _real
from pyrt.optim.array_optimizer import ArrayOptimizer
from pyrt.optim.torch_options import check_options

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


class RMSprop(ArrayOptimizer):
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
    ``foreach`` and ``capturable`` are accepted and change nothing; ``maximize=True`` is
    refused.
    """

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False):
        rmsprop_hyperparameters(lr, alpha, eps, weight_decay, momentum, centered)  # as PyTorch
        if check_options(maximize, foreach, capturable, differentiable):
            raise ValueError("maximize=True is not supported by pyrt's RMSprop")
        defaults = {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps,
                    "centered": centered, "weight_decay": weight_decay}
        super().__init__(params, defaults)

    def _new_state(self, state, param, xp, *hyperparameters):
        state["square_avg"] = xp.zeros_like(param)

    def _update(self, param, grad, state, xp, lr, alpha, eps, weight_decay, momentum,
                centered):
        # the buffers an option asks for start at zero, also when it is switched on later
        if momentum > 0 and "momentum_buffer" not in state:
            state["momentum_buffer"] = xp.zeros_like(param)
        if centered and "grad_avg" not in state:
            state["grad_avg"] = xp.zeros_like(param)
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

    _STATE_ARRAYS = ("square_avg", "momentum_buffer", "grad_avg")
    _STATE_NEEDED = ("step", "square_avg")

    # the group's hyper-parameters, in the order rmsprop_hyperparameters checks them
    _HYPERPARAMETERS = ("lr", "alpha", "eps", "weight_decay", "momentum", "centered")
    _checked_hyperparameters = staticmethod(rmsprop_hyperparameters)
