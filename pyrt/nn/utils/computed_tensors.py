"""ComputedTensors: the parameter (or buffer) dict of a module one of whose tensors is computed
from others on each read, as parametrizations and the hooks of weight_norm and spectral_norm
make them.

Layers read their tensors straight from their dicts (``self._parameters["weight"]``: an
attribute read through Module.__getattr__ costs more than the small layers' arithmetic), so a
computed tensor must come out of the dict. A module that has one gets this dict subclass in
place of its OrderedDict: the computed name is not a key, so ``named_parameters()`` and
``state_dict()`` list only what is stored (the original tensors, under their own names), and a
read of it falls to ``__missing__``, which returns the module's attribute of that name (a
parametrization's property, or the tensor a forward pre-hook set). Modules that compute
nothing keep their plain OrderedDict and pay nothing.
"""

from collections import OrderedDict

from pyrt.nn.module import FORWARD_PATCHES

__all__ = ["ComputedTensors", "compute_on_read", "stop_computing"]


class ComputedTensors(OrderedDict):
    """The entries of a module's ``_parameters`` or ``_buffers``; a read of a name in
    `computed` (not a key) gives ``getattr(module, name)``."""

    def __init__(self, entries=(), module=None):
        super().__init__(entries)
        self.module = module
        self.computed = set()

    def __missing__(self, name):
        if name in self.computed:
            return getattr(self.module, name)
        raise KeyError(name)


def _replace_store(module, store, entries):
    object.__setattr__(module, store, entries)
    # Sequential's fused steps hold the dicts of their layers: they are planned again
    FORWARD_PATCHES[0] += 1


def compute_on_read(module, store, name):
    """Make a read of `name` in ``module.<store>`` ("_parameters" or "_buffers") give
    ``getattr(module, name)``; `name` must not be a key of it."""
    entries = module.__dict__[store]
    if type(entries) is not ComputedTensors:
        entries = ComputedTensors(entries, module)
        _replace_store(module, store, entries)
    entries.computed.add(name)


def stop_computing(module, store, name):
    """Undo compute_on_read(module, store, name); a dict left computing nothing becomes a
    plain OrderedDict again."""
    entries = module.__dict__[store]
    if type(entries) is ComputedTensors:
        entries.computed.discard(name)
        if not entries.computed:
            _replace_store(module, store, OrderedDict(entries))
