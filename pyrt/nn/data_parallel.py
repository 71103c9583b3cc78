"""DataParallel on one device, with torch.nn.DataParallel's interface.

PyTorch's DataParallel copies a module onto several GPUs, splits each batch among them and
gathers the outputs. pyrt drives one device, so the wrapper runs the module on the whole batch
there; it keeps the interface that code written for PyTorch relies on: the wrapped module as
``.module`` (whose state_dict keys then start with "module."), and `device_ids` and
`output_device` accepted and checked. As in PyTorch without CUDA, the ids are not used when
pyrt has no GPU.
"""

import numbers

from pyrt.nn.module import Module

__all__ = ["DataParallel"]


def _device_index(device, name):
    """The GPU index that `device` (an int, "cuda", "cuda:k") names."""
    if isinstance(device, numbers.Integral) and not isinstance(device, bool):
        return int(device)
    text = str(device)
    if text == "cuda":
        return 0
    if text.startswith("cuda:") and text[5:].isdigit():
        return int(text[5:])
    raise ValueError(f"DataParallel: {name} must hold GPU indices or 'cuda:k' devices, got "
                     f"{device!r}")


class DataParallel(Module):
    """Runs `module` on its inputs (see the module's doc); `dim` is the batch dimension
    PyTorch would split along."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DataParallel: module must be a pyrt.nn.Module, got "
                            f"{type(module).__name__}")
        if isinstance(dim, bool) or not isinstance(dim, numbers.Integral):
            raise TypeError(f"DataParallel: dim must be an int, got {dim!r}")
        self.module = module
        self.dim = int(dim)
        from pyrt import cuda

        if not cuda.is_available():
            self.device_ids = []
            self.output_device = None
            return
        ids = [0] if device_ids is None else [_device_index(d, "device_ids") for d in device_ids]
        if not ids:
            raise ValueError("DataParallel: device_ids must name at least one device")
        out = ids[0] if output_device is None else _device_index(output_device, "output_device")
        for index in ids + [out]:
            if index != 0:
                raise ValueError(f"DataParallel: pyrt runs on one GPU, cuda:0; got device "
                                 f"cuda:{index}")
        self.device_ids = ids
        self.output_device = out

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)
