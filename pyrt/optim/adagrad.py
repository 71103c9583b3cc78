"""Adagrad, as torch.optim.Adagrad (Duchi, Hazan and Singer 2011), written with array
operations in place on the parameter and its state: NumPy's on the CPU, CuPy's on the GPU."""

from pyrt.functional import _xp
from pyrt.ops.optim import _real
from pyrt.optim.array_optimizer import ArrayOptimizer

__all__ = ["Adagrad", "adagrad_hyperparameters"]


def adagrad_hyperparameters(lr, lr_decay, weight_decay, initial_accumulator_value, eps):
    """Adagrad's hyper-parameters checked as PyTorch checks them, as floats (lr, lr_decay,
    weight_decay, initial_accumulator_value, eps)."""
    lr = _real(lr, "lr")
    lr_decay = _real(lr_decay, "lr_decay")
    weight_decay = _real(weight_decay, "weight_decay")
    initial_accumulator_value = _real(initial_accumulator_value, "initial_accumulator_value")
    eps = _real(eps, "eps")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")
    if not 0.0 <= lr_decay:
        raise ValueError(f"Invalid lr_decay value: {lr_decay}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")
    if not 0.0 <= initial_accumulator_value:
        raise ValueError(f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    return lr, lr_decay, weight_decay, initial_accumulator_value, eps


class Adagrad(ArrayOptimizer):
    """For each parameter p with gradient g, at its step t (counting from 1):

        g = g + weight_decay * p
        sum = sum + g^2
        p = p - lr / (1 + (t - 1) * lr_decay) * g / (sqrt(sum) + eps)

    ``state[p]`` holds "step" (an int, the steps taken) and "sum" (a float32 array on the
    parameter's device). As in PyTorch, the state of every parameter is made with its group:
    step 0 and sum filled with initial_accumulator_value (the group's own value, where PyTorch
    takes the constructor's for every group).
    """

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
                 eps=1e-10):
        adagrad_hyperparameters(lr, lr_decay, weight_decay, initial_accumulator_value,
                                eps)  # ValueError as PyTorch's
        defaults = {"lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
                    "initial_accumulator_value": initial_accumulator_value}
        super().__init__(params, defaults)

    def add_param_group(self, param_group):
        """Add a group of parameters, as Optimizer.add_param_group, and make their state."""
        if isinstance(param_group, dict):  # (the state is made with its values: checked first)
            self._check_hyperparameters({**self.defaults, **param_group})
        super().add_param_group(param_group)
        group = self.param_groups[-1]
        for p in group["params"]:
            self._make_state(p, group)

    def _make_state(self, p, group):
        self.state[p] = {"step": 0}
        self._new_state(self.state[p], p._data, _xp(p._data), *self._hyperparameters(group))

    def _new_state(self, state, param, xp, lr, lr_decay, weight_decay, initial, eps):
        state["sum"] = xp.full_like(param, initial)

    def _update(self, param, grad, state, xp, lr, lr_decay, weight_decay, initial, eps):
        if weight_decay != 0:
            grad = grad + weight_decay * param
        clr = lr / (1 + (state["step"] - 1) * lr_decay)
        state_sum = state["sum"]
        state_sum += grad * grad
        std = xp.sqrt(state_sum)
        std += eps
        param -= clr * (grad / std)

    _STATE_ARRAYS = ("sum",)
    _STATE_NEEDED = ("step", "sum")

    # the group's hyper-parameters, in the order adagrad_hyperparameters checks them
    _HYPERPARAMETERS = ("lr", "lr_decay", "weight_decay", "initial_accumulator_value", "eps")
    _checked_hyperparameters = staticmethod(adagrad_hyperparameters)
