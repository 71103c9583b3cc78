"""torch.autograd.grad_mode's names, as ``pyrt.autograd.grad_mode``: the grad-mode context
managers and decorators (pyrt.autograd's no_grad, enable_grad, set_grad_enabled and
inference_mode)."""

from pyrt.autograd import enable_grad, inference_mode, no_grad, set_grad_enabled

__all__ = ["enable_grad", "inference_mode", "no_grad", "set_grad_enabled"]
