"""torch.nn.modules.utils's helpers, which ported layers use to take an int or a tuple
alike: ``_pair(3) == (3, 3)``, ``_pair((3, 5)) == (3, 5)``; and
consume_prefix_in_state_dict_if_present, which strips a prefix ("module." of DataParallel)
from a state dict's keys."""

import collections.abc
from itertools import repeat

__all__ = ["_list_with_default", "_ntuple", "_pair", "_quadruple", "_reverse_repeat_tuple",
           "_single", "_triple", "consume_prefix_in_state_dict_if_present"]


def _ntuple(n, name="parse"):
    """A function that returns an iterable as a tuple and repeats anything else n times."""

    def parse(x):
        if isinstance(x, collections.abc.Iterable):
            return tuple(x)
        return tuple(repeat(x, n))

    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(t, n):
    """Each element of `t`, last first, repeated n times: F.pad's order of a conv's padding."""
    return tuple(x for x in reversed(t) for _ in range(n))


def _list_with_default(out_size, defaults):
    """out_size with each None replaced by the size in `defaults` (the input's trailing
    sizes), as the adaptive pools read it."""
    if isinstance(out_size, int):
        return out_size
    if len(defaults) <= len(out_size):
        raise ValueError(f"Input dimension should be at least {len(out_size) + 1}")
    return [v if v is not None else d
            for v, d in zip(out_size, defaults[-len(out_size):])]


def consume_prefix_in_state_dict_if_present(state_dict, prefix):
    """Strip `prefix` from the keys of `state_dict` (and of its ``_metadata``) that start
    with it, in place."""
    for key in sorted(state_dict.keys()):
        if key.startswith(prefix):
            state_dict[key[len(prefix):]] = state_dict.pop(key)
    metadata = getattr(state_dict, "_metadata", None)
    if metadata is not None:
        for key in list(metadata.keys()):
            # the metadata of the top module is keyed "" and its children "a.b.c"
            if len(key) == 0:
                continue
            if key == prefix.replace(".", "") or key.startswith(prefix):
                metadata[key[len(prefix):]] = metadata.pop(key)
