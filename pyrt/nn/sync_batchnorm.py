"""SyncBatchNorm in one process, with torch.nn.SyncBatchNorm's interface.

PyTorch's SyncBatchNorm takes the batch statistics over the batches of every process of a
distributed group. In one process that group is the process itself, so this is the batch
normalisation of BatchNorm1d/2d/3d over inputs of any rank >= 2 ([N, C, *]), with the same
parameters, running statistics, state_dict keys and repr. ``convert_sync_batchnorm(module)``
replaces every BatchNorm*d in a model by a SyncBatchNorm holding the same Parameter and
buffer objects.
"""

from pyrt.nn.batchnorm import _BatchNorm
from pyrt.nn.module import Module

__all__ = ["SyncBatchNorm"]


class _AnyRank:
    """The ranks SyncBatchNorm takes: every rank of 2 or more."""

    def __contains__(self, ndim):
        return ndim >= 2


class SyncBatchNorm(_BatchNorm):
    """Batch normalisation over the channels (dim 1) of [N, C, *] inputs; `process_group` is
    accepted for PyTorch's signature and must be None (one process)."""
    _dims = _AnyRank()

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, process_group=None, device=None, dtype=None, *,
                 bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, bias=bias)
        if process_group is not None:
            raise ValueError("SyncBatchNorm: pyrt runs in one process; process_group must be "
                             "None")
        self.process_group = None
        if device is not None:
            self.to(device)

    def forward(self, x):
        if x.ndim < 2:
            raise ValueError(f"expected at least 2D input (got {x.ndim}D input)")
        return super().forward(x)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """`module` with every BatchNorm1d/2d/3d in it replaced by a SyncBatchNorm that holds
        its parameters and running statistics (the same objects) and its training mode; a
        BatchNorm passed itself comes back converted."""
        output = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            output = cls(module.num_features, module.eps, module.momentum, module.affine,
                         module.track_running_stats, process_group,
                         bias=module.bias is not None)
            if module.affine:
                output.weight = module.weight
                if module.bias is not None:
                    output.bias = module.bias
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                output._buffers[name] = module._buffers.get(name)
            output.training = module.training
        for name, child in module.named_children():
            converted = cls.convert_sync_batchnorm(child, process_group)
            if converted is not child:
                Module.__setattr__(output, name, converted)
        return output
