"""torch.nn.modules.container's names in pyrt: the containers."""

from pyrt.nn import Container, ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential

__all__ = ["Container", "ModuleDict", "ModuleList", "ParameterDict", "ParameterList", "Sequential"]
