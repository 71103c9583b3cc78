"""torch.device, and the device factories use when they are given none.

A ``pyrt.device`` names where a tensor's data lies: ``device("cpu")``, ``device("cuda")``,
``device("cuda:0")``, ``device("cuda", 0)``, with ``.type`` and ``.index`` and torch's repr
``device(type='cpu')``. It is a ``str`` holding the device's name ("cpu", "cuda:0"), so that
it is accepted wherever a device name is, and ``Tensor.device``, which returns one, still
compares equal to (and hashes as) the name pyrt returned before: ``t.device == "cpu"`` is True,
where torch (which does not compare devices with strings) says False.
"""

__all__ = ["device", "get_default_device", "set_default_device"]

_TYPES = ("cpu", "cuda")
_builtin_type = type


class device(str):
    """A device: ``device(type_or_name, index=None)`` or ``device(other_device)``; an int n
    is ``cuda:n``, as torch reads it where an accelerator is present."""

    __slots__ = ()

    def __new__(cls, type, index=None):
        if isinstance(type, device):
            if index is not None:
                raise RuntimeError(f"type (string) must not include an index because index "
                                   f"was passed explicitly: {type}")
            return type
        if isinstance(type, int) and not isinstance(type, bool) and index is None:
            from pyrt import cuda

            if not cuda.is_available():
                raise RuntimeError("Cannot access accelerator device when none is available.")
            type, index = "cuda", type
        if not isinstance(type, str):
            raise TypeError(f"device(): argument 'type' must be str, a device or an int, got "
                            f"{_builtin_type(type).__name__}")
        name, colon, number = type.partition(":")
        if name not in _TYPES:
            if colon or name.strip() in _TYPES:
                raise RuntimeError(f"Invalid device string: '{type}'")
            raise RuntimeError(f"Expected one of cpu, cuda device type at start of device "
                               f"string: {type}")
        if colon:
            if index is not None:
                raise RuntimeError(f"type (string) must not include an index because index "
                                   f"was passed explicitly: {type}")
            if not number.isdigit() or not number.isascii() or (len(number) > 1
                                                                 and number[0] == "0"):
                raise RuntimeError(f"Invalid device string: '{type}'")
            index = int(number)
        elif index is not None:
            if isinstance(index, bool) or not isinstance(index, int):
                raise TypeError(f"device(): argument 'index' must be int, got "
                                f"{_builtin_type(index).__name__}")
            if index < 0:
                raise RuntimeError("Device index must not be negative")
        return str.__new__(cls, name if index is None else f"{name}:{index}")

    @property
    def type(self):
        """The kind of device: "cpu" or "cuda"."""
        return self.partition(":")[0]

    @property
    def index(self):
        """The device's number, or None where the name gives none ("cpu", "cuda")."""
        number = self.partition(":")[2]
        return int(number) if number else None

    def __repr__(self):
        index = self.index
        if index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={index})"

    def __str__(self):
        return str.__str__(self)

    def __reduce__(self):
        return device, (str.__str__(self),)


CPU = device("cpu")
CUDA = device("cuda:0")  # the one CUDA device pyrt uses

# what factories (zeros, randn, tensor, ...) use when they are given no device
_default = "cpu"


def set_default_device(device):
    """Make `device` (a name, a device, or None for "cpu") the one that factories use when
    they are given none, as torch.set_default_device. "cuda" needs the CUDA backend."""
    global _default
    from pyrt.tensor import _check_device

    _default = "cpu" if device is None else _check_device(device)


def get_default_device():
    """The device factories use when they are given none (a pyrt.device)."""
    return CPU if _default == "cpu" else CUDA
