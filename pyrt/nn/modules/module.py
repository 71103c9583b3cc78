"""torch.nn.modules.module's names in pyrt: Module, the base of every layer, and the hooks
common to all modules (pyrt/nn/global_hooks.py)."""

from pyrt.nn import Module
from pyrt.nn.global_hooks import (
    register_module_backward_hook,
    register_module_buffer_registration_hook,
    register_module_forward_hook,
    register_module_forward_pre_hook,
    register_module_full_backward_hook,
    register_module_full_backward_pre_hook,
    register_module_module_registration_hook,
    register_module_parameter_registration_hook,
)

__all__ = ["Module", "register_module_backward_hook", "register_module_buffer_registration_hook",
           "register_module_forward_hook", "register_module_forward_pre_hook",
           "register_module_full_backward_hook", "register_module_full_backward_pre_hook",
           "register_module_module_registration_hook",
           "register_module_parameter_registration_hook"]
