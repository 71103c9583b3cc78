"""Module.load_state_dict's walk, as torch.nn's: each module, parent before children, runs its
load_state_dict pre-hooks (which may rewrite the state dict in place, to rename old keys),
then takes the entries under its own prefix: parameters, persistent buffers and, where the
class defines set_extra_state, its ``_extra_state``. Each module's post-hooks run after its
children's and may edit the missing and unexpected keys in place, which the strict check
reads afterwards.

Unlike PyTorch's, the walk only gathers the copies: they are made once nothing can fail, so
an error leaves the module as it was. Only when a post-hook exists do the copies go first
(the hooks see the loaded module), and then a strict check that fails comes after them.
"""

from collections import OrderedDict, namedtuple

import numpy as np

from pyrt.autograd import mark_modified_all
from pyrt.tensor import Tensor, _move

__all__ = ["EXTRA_STATE_KEY_SUFFIX", "IncompatibleKeys", "load_state_dict"]

IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])

EXTRA_STATE_KEY_SUFFIX = "_extra_state"


class _Load:
    """What the walk gathers: the keys and errors PyTorch reports, the copies and
    set_extra_state calls to make, and the post-hooks to run, in order."""

    def __init__(self):
        self.missing, self.unexpected, self.errors = [], [], []
        self.copies, self.extra_states, self.post_hooks = [], [], []


def _walk(module, state_dict, prefix, metadata, load):
    local_metadata = {} if metadata is None else metadata.get(prefix[:-1], {})
    for hook in list(module.__dict__.get("_load_state_dict_pre_hooks", {}).values()):
        hook(state_dict, prefix, local_metadata, True, load.missing, load.unexpected,
             load.errors)
    own = {name: tensor for name, tensor in module._parameters.items() if tensor is not None}
    own.update((name, buf) for name, buf in module._buffers.items()
               if buf is not None and name not in module._non_persistent_buffers_set)
    for name, param in own.items():
        key = prefix + name
        if key not in state_dict:
            load.missing.append(key)
            continue
        value = state_dict[key]
        array = value._data if isinstance(value, Tensor) else np.asarray(value)
        if array.dtype.kind not in "fiub":
            load.errors.append(f'While copying the parameter named "{key}", expected an array '
                               f"of numbers from checkpoint but received {type(value)}")
        elif array.shape != param.shape:
            load.errors.append(f"size mismatch for {key}: copying a param with shape "
                               f"{array.shape} from checkpoint, the shape in current model is "
                               f"{param.shape}.")
        else:
            load.copies.append((param, array))
    from pyrt.nn.module import Module

    extra_key = prefix + EXTRA_STATE_KEY_SUFFIX
    if type(module).set_extra_state is not Module.set_extra_state:
        if extra_key in state_dict:
            load.extra_states.append((module, state_dict[extra_key]))
        else:
            load.missing.append(extra_key)
    elif extra_key in state_dict:
        load.unexpected.append(extra_key)
    for key in state_dict:
        if isinstance(key, str) and key.startswith(prefix) and key != extra_key:
            first = key[len(prefix):].split(".", 1)[0]
            if first not in module._modules and first not in own:
                load.unexpected.append(key)
    for name, child in module._modules.items():
        if child is not None:
            child_prefix = prefix + name + "."
            child_state = {k: v for k, v in state_dict.items()
                           if isinstance(k, str) and k.startswith(child_prefix)}
            _walk(child, child_state, child_prefix, metadata, load)
    load.post_hooks.extend((module, hook) for hook in
                           module.__dict__.get("_load_state_dict_post_hooks", {}).values())


def _check(module, load, strict):
    """The RuntimeError PyTorch raises for what the walk found, or None."""
    errors = list(load.errors)
    if strict:
        if load.unexpected:
            keys = ", ".join(f'"{k}"' for k in load.unexpected)
            errors.insert(0, f"Unexpected key(s) in state_dict: {keys}. ")
        if load.missing:
            keys = ", ".join(f'"{k}"' for k in load.missing)
            errors.insert(0, f"Missing key(s) in state_dict: {keys}. ")
    if not errors:
        return None
    return RuntimeError(f"Error(s) in loading state_dict for {type(module).__name__}:\n\t"
                        + "\n\t".join(errors))


def load_state_dict(module, state_dict, strict):
    """Load `state_dict` into `module` and its descendants (Module.load_state_dict)."""
    metadata = getattr(state_dict, "_metadata", None)
    state_dict = OrderedDict(state_dict)  # the hooks may edit this copy, not the caller's
    if metadata is not None:
        state_dict._metadata = metadata
    load = _Load()
    _walk(module, state_dict, "", metadata, load)
    error = _check(module, load, strict)
    if error is not None and (load.errors or not load.post_hooks):
        raise error
    for param, array in load.copies:
        param._data[...] = _move(array, param.device)
    # writes in place, as an optimizer step's: a graph made before reads old values
    mark_modified_all(param._data for param, _ in load.copies)
    for owner, extra in load.extra_states:
        owner.set_extra_state(extra)
    keys = IncompatibleKeys(load.missing, load.unexpected)
    for owner, hook in load.post_hooks:
        if hook(owner, keys) is not None:
            raise RuntimeError("Hooks registered with ``register_load_state_dict_post_hook`` "
                               "are not expected to return new values, if incompatible_keys "
                               "need to be modified, it should be done inplace.")
    error = _check(module, load, strict)
    if error is not None:
        raise error
    return keys
