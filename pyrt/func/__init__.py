"""torch.func's API (``pyrt.func``): vmap, grad, grad_and_value, vjp, jvp, jacrev, jacfwd,
hessian, functional_call and stack_module_state. See pyrt.func.vmap and
pyrt.func.eager_transforms for how each is computed without batching rules or forward
mode."""

from pyrt.func.eager_transforms import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, vjp
from pyrt.func.module_state import functional_call, stack_module_state
from pyrt.func.vmap import vmap

__all__ = ["functional_call", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp",
           "stack_module_state", "vjp", "vmap"]
