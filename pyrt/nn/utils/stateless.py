"""functional_call: a Module run with other tensors in place of its parameters and buffers,
as torch.nn.utils.stateless.functional_call (deprecated there in favour of
torch.func.functional_call, which takes the same arguments).

For the call, each dotted name ("fc.weight", "bn.running_mean") of the given dict is swapped
into the module that holds it: into its parameter or buffer dict where the name is one, as a
plain attribute otherwise. Whatever happens in the call, the module's own tensors come back
afterwards. Gradients flow to the given tensors, so that a model can be differentiated with
respect to weights it does not own. With tie_weights, a tensor the module holds under several
names (a tied embedding and output layer) is replaced under all of them by the value given
for any one.
"""

import warnings

from pyrt.tensor import Tensor

__all__ = ["functional_call"]


def _owner(module, name):
    """The submodule that holds the dotted `name`, and the name's last part."""
    *path, leaf = name.split(".")
    for part in path:
        child = module._modules.get(part) if hasattr(module, "_modules") else None
        if child is None:
            raise AttributeError(f"{type(module).__name__} has no submodule {part!r} (in "
                                 f"{name!r})")
        module = child
    return module, leaf


def _untie(module, values):
    """`values` with each tensor given for one name of a tied tensor given for all its
    names; a ValueError where different tensors are given for one tied tensor."""
    names_of = {}
    for name, tensor in list(module.named_parameters(remove_duplicate=False)) + list(
            module.named_buffers(remove_duplicate=False)):
        names_of.setdefault(id(tensor), set()).add(name)
    tied = {name: names for names in names_of.values() if len(names) > 1 for name in names}
    untied = dict(values)
    for name in values:
        if name in tied:
            given = [n for n in tied[name] if n in values]
            if len({id(values[n]) for n in given}) > 1:
                raise ValueError(f"functional_call got multiple values for keys "
                                 f"{sorted(tied[name])}, which are tied. Consider using "
                                 f"tie_weights=False")
            for other in tied[name]:
                untied[other] = values[name]
    return untied


def _check_keys(module, values):
    valid = {name for name, _ in module.named_parameters(remove_duplicate=False)}
    valid |= {name for name, _ in module.named_buffers(remove_duplicate=False)}
    missing, unexpected = sorted(valid - set(values)), sorted(set(values) - valid)
    errors = []
    if unexpected:
        errors.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
    if missing:
        errors.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
    if errors:
        raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(
            type(module).__name__, "\n\t".join(errors)))


def functional_call(module, parameters_and_buffers, args=None, kwargs=None, *,
                    tie_weights=True, strict=False):
    """``module(*args, **kwargs)`` with the tensors of `parameters_and_buffers` (a dict of
    dotted name -> Tensor) in place of the module's own for the call; `args` may be one
    argument or a tuple. strict: the dict must name every parameter and buffer, and nothing
    else. Warns as PyTorch's deprecated stateless.functional_call does."""
    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch "
                  "2.0 and will be removed in a future version of PyTorch. Please use "
                  "`torch.func.functional_call` instead which is a drop-in replacement.",
                  FutureWarning, stacklevel=2)
    return swapped_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights,
                        strict=strict)


def swapped_call(module, parameters_and_buffers, args=None, kwargs=None, *, tie_weights=True,
                 strict=False):
    """functional_call without its deprecation warning (torch.func.functional_call's)."""
    from pyrt.nn.data_parallel import DataParallel

    if isinstance(module, DataParallel):
        raise RuntimeError("The stateless API can't be used with nn.DataParallel module")  # noqa: TRY004
    if not isinstance(parameters_and_buffers, dict):
        raise TypeError(f"functional_call: parameters_and_buffers must be a dict of name -> "
                        f"Tensor, got {type(parameters_and_buffers).__name__}")
    for name, value in parameters_and_buffers.items():
        if not isinstance(value, Tensor):
            raise TypeError(f"functional_call: {name!r} must be a Tensor, got "
                            f"{type(value).__name__}")
    values = _untie(module, parameters_and_buffers) if tie_weights else parameters_and_buffers
    if strict:
        _check_keys(module, values)
    args = () if args is None else (args if isinstance(args, tuple) else (args,))
    kwargs = {} if kwargs is None else kwargs
    restore = []  # (owner, where the name was, name, its own value), to undo in reverse
    try:
        for name, value in values.items():
            owner, leaf = _owner(module, name)
            for store in ("_parameters", "_buffers"):
                entries = owner.__dict__[store]
                if leaf in entries:
                    restore.append((owner, store, leaf, entries[leaf]))
                    entries[leaf] = value
                    break
            else:
                restore.append((owner, None, leaf, owner.__dict__.get(leaf, restore)))
                object.__setattr__(owner, leaf, value)
        return module(*args, **kwargs)
    finally:
        for owner, store, leaf, own in reversed(restore):
            if store is not None:
                owner.__dict__[store][leaf] = own
            elif own is restore:  # the attribute did not exist before the call
                object.__delattr__(owner, leaf)
            else:
                object.__setattr__(owner, leaf, own)
