"""Tensor: an array with a gradient, PyTorch's interface over pyrt's ops.

A Tensor wraps a float32 (or int64, for labels) array of its device's backend: a NumPy array
on the CPU. Arithmetic, matmul, reductions and activations go through ``pyrt.functional``,
which records what ``backward()`` needs.
"""

import math
import numbers
import operator
import warnings
from collections import namedtuple

import numpy as np

from pyrt import (
    binary_pointwise,
    binning,
    contractions,
    devices,
    joining,
    logical,
    order_statistics,
    pointwise,
    printing,
    products,
    rearrange,
    reductions,
    sampling,
    scans,
    scatter,
    selection,
    shapes,
    trigonometric,
    windows,
)
from pyrt import functional as F
from pyrt.autograd import _Hooked, _HookHandle, mark_modified, register_leaf_hook, run_backward
from pyrt.autograd import _state as _grad_mode
from pyrt.matmul import matmul as _matmul
from pyrt.pointwise import checked_flag as _flag

__all__ = [
    "Tensor",
    "arange",
    "bool_",
    "empty",
    "empty_like",
    "eye",
    "float32",
    "from_numpy",
    "full",
    "full_like",
    "int64",
    "linspace",
    "manual_seed",
    "ones",
    "ones_like",
    "rand",
    "rand_like",
    "randint",
    "randn",
    "randn_like",
    "tensor",
    "where",
    "zeros",
    "zeros_like",
]

# The dtypes a tensor holds, under PyTorch's names: NumPy's dtype objects, which Tensor.dtype
# returns, so that ``x.dtype == pyrt.float32`` and ``x.to(pyrt.int64)`` read as with torch.
# (pyrt also exports them as float, long and bool.)
float32 = np.dtype(np.float32)
int64 = np.dtype(np.int64)
bool_ = np.dtype(np.bool_)

_CUDA_NAMES = ("cuda", "cuda:0")
_CPU, _CUDA = devices.CPU, devices.CUDA
# what max(dim) and min(dim) return, as torch.return_types.max and min
max_result = namedtuple("max", ("values", "indices"))
min_result = namedtuple("min", ("values", "indices"))
_DTYPE_NAMES = {np.dtype(np.int64): "Long", np.dtype(np.bool_): "Bool",
                np.dtype(np.int32): "Int"}
_ONE = np.ones((), np.float32)  # the gradient of a scalar with respect to itself (copied)
_GRAD_DTYPES = {np.dtype(np.float32): "Float", np.dtype(np.float64): "Double",
                np.dtype(np.float16): "Half", **_DTYPE_NAMES}


def _check_can_require_grad(dtype):
    if dtype.kind != "f":
        raise RuntimeError("only Tensors of floating point dtype can require gradients")
    if dtype != np.float32:  # the kernels, and so the gradients, are float32
        raise RuntimeError(f"only float32 tensors can require gradients in pyrt, got {dtype}")


def _check_device(device):
    """The canonical name of `device` (a name or a pyrt.device; None for the default device,
    pyrt.set_default_device's): "cpu", or "cuda:0" once the CUDA backend is loaded (a
    RuntimeError saying what is missing when it cannot be)."""
    if device is None:
        device = devices._default
    name = str(device)
    if name == "cpu":
        return name
    if name in _CUDA_NAMES:
        from pyrt import cuda

        cuda.require()
        return cuda.DEVICE
    if isinstance(device, str) and name.partition(":")[0] in _CUDA_NAMES + ("cpu",):
        parsed = devices.device(device)  # "cpu:0", "cuda:1": torch's names, or its error
        if parsed.type == "cpu" or parsed.index == 0:
            return _check_device(parsed.type)
        raise RuntimeError(f"pyrt uses one CUDA device, cuda:0; got {parsed}")
    if device == "bfloat16":  # pyrt.bfloat16, passed as to()'s dtype
        from pyrt import tensor_metadata

        tensor_metadata.unsupported_cast("to", "bfloat16")
    raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}")


def _move(array, device):
    """`array` on `device` (a canonical name): itself when it is there already."""
    if device == "cpu" and isinstance(array, np.ndarray):
        return array
    from pyrt import cuda

    return cuda.to_host(array) if device == "cpu" else cuda.to_device(array)


def _assigned(old, index, value):
    """`old` with old[index] = value (a number, an array or a tensor), out of place, for the
    in-place writes recorded in a graph: the gradient of old is the incoming one with the
    written positions zeroed, value's the incoming one at those positions, summed over what
    value was broadcast across."""
    out = old._data.copy()
    tensor_value = value if isinstance(value, Tensor) else None
    out[index] = value._data if tensor_value is not None else value

    def backward(g):
        d_old = d_value = None
        if old._requires_grad:
            d_old = g.copy()
            d_old[index] = 0
        if tensor_value is not None and tensor_value._requires_grad:
            picked = F._xp(g).ascontiguousarray(g[index])
            d_value = F._unbroadcast(picked, tensor_value.shape).astype(
                tensor_value._data.dtype, copy=False)
        return (d_old,) if tensor_value is None else (d_old, d_value)

    parents = (old,) if tensor_value is None else (old, tensor_value)
    return F._make(out, parents, backward, reads=False)


def _array_index(index):
    """An index of tensors' values: each Tensor in it (a mask, integer positions) replaced by
    its array."""
    if isinstance(index, Tensor):
        return index._data
    if type(index) is tuple and any(isinstance(i, Tensor) for i in index):
        return tuple(i._data if isinstance(i, Tensor) else i for i in index)
    return index


_ndarray = np.ndarray



def _other_tensor(other, name):
    """`other`, a Tensor argument of method `name`, or a TypeError."""
    if not isinstance(other, Tensor):
        raise TypeError(f"{name}(): argument 'other' must be a Tensor, got "
                        f"{type(other).__name__}")
    return other


def to_arguments(args, device, dtype):
    """(device, dtype) from to()'s positional arguments -- ``(device)``, ``(dtype)``,
    ``(device, dtype)`` or ``(other)``, a tensor whose device and dtype are meant -- and
    its keywords, as Tensor.to and Module.to take them."""
    if len(args) > 2:
        raise TypeError(f"to() takes at most 2 positional arguments ({len(args)} given)")
    if len(args) == 1 and isinstance(args[0], Tensor):
        args = (args[0].device, args[0].dtype)
    for arg in args:
        if _is_dtype(arg):
            if dtype is not None:
                raise TypeError("to(): dtype given twice")
            dtype = arg
        else:
            if device is not None:
                raise TypeError("to(): device given twice")
            device = arg
    return device, dtype

class Tensor:
    # pyrt's own code reads and writes the slots _grad and _requires_grad directly; the
    # properties grad and requires_grad check what a user assigns, as PyTorch does
    # _epoch, set by the op that made a tensor (functional._make), for graph nodes only: the
    # count of in-place writes then if its backward reads its inputs, else infinite
    # (pyrt.autograd: mark_modified)
    # _used, set by every op recorded for backward on each of its inputs (functional._make):
    # an in-place op may take over the history of a tensor no recorded op has used yet
    # (_rebase); unset until then
    __slots__ = (
        "__weakref__",
        "_backward",
        "_data",
        "_epoch",
        "_grad",
        "_parents",
        "_requires_grad",
        "_used",
    )

    def __init__(self, data, requires_grad=False):
        # an array (NumPy's, CuPy's) is wrapped as it is, sharing its memory: pyrt's ops make
        # every tensor this way, so this test is all the constructor adds to their cost
        if type(data) is not _ndarray and not hasattr(data, "__cuda_array_interface__"):
            data = _constructor_data(data)
        self._data = data
        self._grad = None
        self._requires_grad = requires_grad
        self._parents = ()
        self._backward = None

    def _set_grad(self, grad):
        if grad is not None:
            if not isinstance(grad, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad "
                                f"of type {type(grad).__name__}")
            if grad.shape != self.shape:
                raise RuntimeError(f"attempting to assign a gradient of size "
                                   f"'{list(grad.shape)}' to a tensor of size "
                                   f"'{list(self.shape)}'. Please ensure that the gradient and "
                                   f"the tensor are the same size")
            if grad.dtype != self.dtype:
                raise RuntimeError(f"attempting to assign a gradient with dtype "
                                   f"'{_GRAD_DTYPES.get(grad.dtype, grad.dtype)}' to a tensor "
                                   f"with dtype '{_GRAD_DTYPES.get(self.dtype, self.dtype)}'")
            if grad.device != self.device:
                raise RuntimeError(f"attempting to assign a gradient on {grad.device} to a "
                                   f"tensor on {self.device}")
        self._grad = grad

    grad = property(operator.attrgetter("_grad"), _set_grad)

    def _set_requires_grad(self, requires_grad):
        self.requires_grad_(requires_grad)

    requires_grad = property(operator.attrgetter("_requires_grad"), _set_requires_grad)

    # ---- description -------------------------------------------------------------------------

    @property
    def shape(self):
        return self._data.shape

    @property
    def dtype(self):
        return self._data.dtype

    @property
    def ndim(self):
        return self._data.ndim

    @property
    def device(self):
        """pyrt.device("cpu"), or pyrt.device("cuda:0") for a tensor whose data is a CuPy
        array (each equal to its name as a string)."""
        return _CPU if isinstance(self._data, np.ndarray) else _CUDA

    @property
    def is_cuda(self):
        return not isinstance(self._data, np.ndarray)

    @property
    def is_leaf(self):
        return self._backward is None

    @property
    def grad_fn(self):
        """The op that made this tensor, as torch's Node (name(), next_functions), or None
        for a leaf (pyrt/graph_nodes.py)."""
        if self._backward is None:
            return None
        from pyrt.graph_nodes import Node

        return Node(self)

    def size(self, dim=None):
        if dim is None:
            return self._data.shape
        if self._data.ndim == 0:
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        return self._data.shape[shapes.dim_index(dim, self._data.ndim)]

    def dim(self):
        return self._data.ndim

    def numel(self):
        return self._data.size

    def __len__(self):
        return len(self._data)

    def __bool__(self):
        if self._data.size != 1:
            what = "no values" if self._data.size == 0 else "more than one value"
            raise RuntimeError(f"Boolean value of Tensor with {what} is ambiguous")
        return bool(self._data.reshape(()).item())

    # comparisons are elementwise (so a tensor hashes by identity, as in PyTorch: the
    # optimizer's state is keyed by parameter)
    __hash__ = object.__hash__

    # NumPy's operators leave an array op Tensor to the Tensor's reflected operator (a
    # Tensor, as in PyTorch), instead of making an object array of one Tensor per element
    __array_ufunc__ = None

    def __repr__(self):
        """The values laid out as torch lays them out, under pyrt.set_printoptions."""
        return printing.tensor_repr(self)

    # ---- conversion --------------------------------------------------------------------------

    def numpy(self):
        """The data as a NumPy array (shared, not copied, on the CPU). Refused for a tensor
        that requires grad, as in PyTorch: writes to the array would bypass autograd."""
        if self._requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        if not isinstance(self._data, np.ndarray):
            raise TypeError(f"can't convert {self.device} device type tensor to numpy. Use "
                            "Tensor.cpu() to copy the tensor to host memory first.")
        return self._data

    def __array__(self, dtype=None, copy=None):
        """np.asarray(tensor): the data (as numpy() gives it; a copy when `dtype` differs or
        NumPy asks for one)."""
        data = self.numpy()
        if copy:
            return data.astype(dtype or data.dtype, copy=True)
        return data if dtype is None else data.astype(dtype, copy=False)

    def item(self):
        if self._data.size != 1:
            raise ValueError(f"only one-element tensors can be converted to a Python scalar, "
                             f"got shape {self.shape}")
        return self._data.reshape(()).item()

    def tolist(self):
        return self._data.tolist()

    def _scalar_value(self):
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return self._data.reshape(()).item()

    def __float__(self):
        return float(self._scalar_value())

    def __int__(self):
        return int(self._scalar_value())  # toward zero, as int(2.5) is 2

    def __index__(self):
        """An integer tensor of one element as an index (range(t), a list's [t])."""
        if self._data.dtype.kind not in "biu" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an "
                            "index")
        return int(self._data.reshape(()).item())

    def float(self):
        """This tensor as float32: itself if it is float32 already, else a converted copy."""
        if self._data.dtype == np.float32:
            return self
        return Tensor(self._data.astype(np.float32))

    def long(self):
        """A copy as int64 (floats rounded toward zero), outside autograd."""
        return Tensor(self._data.astype(np.int64))

    def int(self):
        """A copy as int32 (floats rounded toward zero), outside autograd, as torch's int()."""
        return Tensor(self._data.astype(np.int32))

    def bool(self):
        """A copy as bool (nonzero, NaN included, is True)."""
        return Tensor(self._data.astype(np.bool_))

    def double(self):
        """A float64 copy, outside autograd: pyrt stores float64 but computes gradients in
        float32 only, so a tensor that requires grad is refused rather than cut from its
        graph without a word."""
        if self._requires_grad and _grad_mode.enabled:
            raise RuntimeError("double(): pyrt computes gradients in float32 only, so a "
                               "float64 copy could not carry this tensor's gradient: call "
                               "detach().double(), or keep float32")
        return self.to(np.float64)

    def is_floating_point(self):
        return self._data.dtype.kind == "f"

    def is_contiguous(self, memory_format=None):
        """Whether the data lies in memory in C order, or as `memory_format` lays it out."""
        if memory_format is None:
            return bool(self._data.flags.c_contiguous)
        from pyrt import layouts

        return layouts.is_contiguous_as(self._data, memory_format)

    def stride(self, dim=None):
        """The steps between neighbouring elements of each dim, in elements."""
        steps = tuple(s // self._data.itemsize for s in self._data.strides)
        return steps if dim is None else steps[shapes.dim_index(dim, self._data.ndim)]

    def element_size(self):
        """The size of one element in bytes."""
        return self._data.itemsize

    def nelement(self):
        return self._data.size

    def detach(self):
        return Tensor(self._data)

    def _set_data(self, value):
        if not isinstance(value, Tensor):
            raise TypeError(f"data must be a Tensor, not {type(value).__name__}")
        self._data = value._data

    data = property(detach, _set_data, doc="""This tensor's values as a tensor outside
    autograd sharing its memory, as torch's Tensor.data: in-place ops on it change this tensor
    without being recorded (backward() still refuses a value an op of its graph read and that
    was overwritten since). Assigning a tensor makes this one share that tensor's memory,
    whatever its shape.""")

    def clone(self, *, memory_format=None):
        """A copy (in the graph: the gradient passes back). `memory_format` is checked as
        torch checks it; the copy is C-contiguous whatever it says."""
        if memory_format is not None:
            from pyrt import layouts

            layouts.check_memory_format(memory_format, self._data.ndim, "clone")
        return F.mul(self, 1.0) if self.requires_grad else Tensor(self._data.copy())

    def to(self, *args, device=None, dtype=None, non_blocking=False, copy=False,
           memory_format=None):
        """This tensor on another device and/or as another dtype, as torch.Tensor.to:
        ``to(device)``, ``to(dtype)``, ``to(device, dtype)``, ``to(other)`` (other's device
        and dtype), or the keywords. Itself if nothing changes, else a copy. A move keeps
        requires_grad (no gradient flows back through the copy); a float32 tensor converted
        to another dtype is outside autograd. `copy` asks for a copy even then;
        `non_blocking` changes nothing; `memory_format` is checked as torch checks it (the
        data stays C-contiguous)."""
        if memory_format is not None:
            from pyrt import layouts

            layouts.check_memory_format(memory_format, self._data.ndim, "to")
        device, dtype = to_arguments(args, device, dtype)
        out = self
        if dtype is not None:
            dtype = _checked_dtype(dtype)
            if dtype != self._data.dtype:
                out = Tensor(self._data.astype(dtype))
        if device is not None:
            name = _check_device(device)
            if name != out.device:
                out = Tensor(_move(out._data, name),
                             requires_grad=out is self and self.requires_grad)
        return self.clone() if copy and out is self else out

    def cpu(self):
        return self.to("cpu")

    def cuda(self):
        return self.to("cuda")

    def requires_grad_(self, requires_grad=True):
        if not requires_grad and self._backward is not None:
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use "
                "a computed variable in a subgraph that doesn't require differentiation use "
                "var_no_grad = var.detach().")
        if requires_grad:
            _check_can_require_grad(self._data.dtype)
        self._requires_grad = bool(requires_grad)
        return self

    # ---- in-place ops --------------------------------------------------------------------------
    # Outside a graph they write into the tensor's own array and record nothing for autograd.
    # As in PyTorch, a leaf that requires grad may be written only under no_grad (an
    # optimizer's update). Every such write is recorded (autograd.mark_modified): a backward
    # that would read an input overwritten since its forward (a constant input, a detached
    # alias, a parameter stepped under no_grad) raises PyTorch's RuntimeError instead of
    # computing a wrong gradient.
    # While grad mode is on, an in-place op on a tensor with history, or with an operand that
    # requires grad, is recorded as PyTorch records it (_rebase): the tensor's history so far
    # moves to a new node, the op's out-of-place result is computed from that node, and the
    # tensor takes the result's values and history (out = bn(conv(x)); out += identity, as
    # ResNet's blocks write it). pyrt's graph links each op to the tensors it read, so this is
    # done only for a tensor that no recorded op has read yet (_used); otherwise that op would
    # see the new history, and the write is refused. The values go to a new array: an alias
    # made earlier with detach() keeps the old ones.

    def _in_graph(self, *operands):
        """Whether an in-place op on self must be recorded (_rebase); PyTorch's error for a
        leaf that requires grad, and pyrt's for a tensor a recorded op has read."""
        if not _grad_mode.enabled:
            return False
        if not (self._requires_grad
                or any(isinstance(o, Tensor) and o._requires_grad for o in operands)):
            return False
        if self._requires_grad and self._backward is None:
            raise RuntimeError("a leaf Variable that requires grad is being used in an "
                               "in-place operation.")
        if getattr(self, "_used", False):
            raise RuntimeError("an in-place operation on a tensor that an operation recorded "
                               "for backward has already read is not supported (its gradient "
                               "would follow the new value): use the out-of-place op "
                               "(y = y + x rather than y += x)")
        return True

    def _rebase(self, compute):
        """The in-place op as PyTorch records it: self's history moves to a new tensor, the
        op's out-of-place result compute(that tensor) is computed, and self takes the result's
        values and history. The result must keep self's shape and cast to its dtype."""
        old = Tensor.__new__(Tensor)
        old._data = self._data
        old._grad = None
        old._take_history(self)
        result = compute(old)
        if result is old:  # nothing was computed (dropout while evaluating): self as it was
            return self
        if result.shape != self.shape:
            raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the "
                               f"broadcast shape {list(result.shape)}")
        if not np.can_cast(result._data.dtype, self._data.dtype, "same_kind"):
            raise RuntimeError(f"result type {_GRAD_DTYPES.get(result.dtype, result.dtype)} "
                               f"can't be cast to the desired output type "
                               f"{_GRAD_DTYPES.get(self.dtype, self.dtype)}")
        data = result._data
        if data is old._data or data.dtype != self._data.dtype:
            data = data.astype(self._data.dtype)  # a copy: self's old array stays old's
        self._data = data
        self._take_history(result)
        return self

    def _take_history(self, other):
        """other's place in the graph (whether it requires grad, its inputs and closure)."""
        self._requires_grad = other._requires_grad
        self._parents = other._parents
        self._backward = other._backward
        if other._backward is not None:
            self._epoch = other._epoch

    def _check_in_place(self, other=None):
        if not _grad_mode.enabled:
            return
        if self._requires_grad:
            if self._backward is None:
                raise RuntimeError("a leaf Variable that requires grad is being used in an "
                                   "in-place operation.")
            raise RuntimeError("in-place operations on a tensor that is part of an autograd "
                               "graph are not supported: use the out-of-place op "
                               "(y = y + x rather than y += x)")
        if isinstance(other, Tensor) and other._requires_grad:
            raise RuntimeError("an in-place operation with an operand that requires grad is "
                               "not supported (its gradient would be lost): use the "
                               "out-of-place op, or run it under pyrt.no_grad()")

    def _in_place(self, op, other, alpha=None):
        """self = self op (other * alpha), op "add", "sub", "mul" or "div", written into
        self's array: `other` broadcasts to self's shape, and the result must keep self's
        dtype."""
        graph = self._in_graph(other)
        src = other._data if isinstance(other, Tensor) else other
        name = op + "_"
        result = F.result_dtype(op, self, other)
        if not np.can_cast(result, self._data.dtype, "same_kind"):
            raise RuntimeError(f"result type {_GRAD_DTYPES.get(result, result)} can't be cast "
                               f"to the desired output type "
                               f"{_GRAD_DTYPES.get(self._data.dtype, self._data.dtype)}")
        xp = F._xp(self._data)
        if alpha is not None and (isinstance(alpha, bool) or not isinstance(alpha, numbers.Real)):
            raise TypeError(f"{name}(): argument 'alpha' must be a real number, got "
                            f"{type(alpha).__name__}")
        if alpha is not None and alpha != 1:
            if self._data.dtype.kind != "f" and not isinstance(alpha, numbers.Integral):
                raise RuntimeError("For integral input tensors, argument alpha must not be a "
                                   "floating point number.")
            src = xp.multiply(src, alpha)
        other_shape = np.shape(src)
        try:
            broadcast = np.broadcast_shapes(self.shape, other_shape)
        except ValueError:
            broadcast = None
        if broadcast != self.shape:
            raise RuntimeError(f"{name}: other of shape {list(other_shape)} does not "
                               f"broadcast to self's shape {list(self.shape)}")
        if graph:
            if alpha is not None and alpha != 1:
                other = F.mul(other, alpha) if isinstance(other, Tensor) else src
            return self._rebase(lambda old: getattr(F, op)(old, other))
        getattr(xp, F._UFUNCS[op])(self._data, src, out=self._data, casting="same_kind")
        mark_modified(self._data)
        return self

    def add_(self, other, *, alpha=1):
        return self._in_place("add", other, alpha)

    def sub_(self, other, *, alpha=1):
        return self._in_place("sub", other, alpha)

    def mul_(self, other):
        return self._in_place("mul", other)

    def div_(self, other):
        return self._in_place("div", other)

    def __iadd__(self, other):
        return self._in_place("add", other)

    def __isub__(self, other):
        return self._in_place("sub", other)

    def __imul__(self, other):
        return self._in_place("mul", other)

    def __itruediv__(self, other):
        return self._in_place("div", other)

    def zero_(self):
        return self.fill_(0)

    def fill_(self, value):
        """Every element set to `value`, a real number or a 0-d tensor (PyTorch's rule: NumPy
        would broadcast an array, and write None as NaN)."""
        graph = self._in_graph(value)
        if isinstance(value, Tensor):
            if value._data.ndim:
                raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got "
                                   f"tensor with {value._data.ndim} dimensions.")
        elif not isinstance(value, numbers.Real):
            raise TypeError(f"fill_(): value must be a real number or a 0-d tensor, got "
                            f"{type(value).__name__}")
        if graph:
            return self._rebase(lambda old: _assigned(old, Ellipsis, value))
        self._data[...] = value._data if isinstance(value, Tensor) else value
        mark_modified(self._data)
        return self

    def copy_(self, other):
        graph = self._in_graph(other)
        src = other._data if isinstance(other, Tensor) else np.asarray(other)
        if isinstance(src, np.ndarray) is not isinstance(self._data, np.ndarray):
            src = _move(src, self.device)
        if src.shape != self.shape:
            raise ValueError(f"copy_: shape {src.shape} does not match {self.shape}")
        if graph:
            if not isinstance(other, Tensor) or other.device != self.device:
                other = Tensor(src)
            return self._rebase(lambda old: _assigned(old, Ellipsis, other))
        self._data[...] = src
        mark_modified(self._data)
        return self

    def _write_result(self, compute, *operands, floating=False):
        """The in-place form of an op: its out-of-place result, compute(self), written into
        self's array, or in a graph recorded (_rebase; refused where _in_graph refuses). The
        result must keep self's shape and cast to self's dtype (same kind: `floating` ops
        cannot write into integers), as in PyTorch."""
        graph = self._in_graph(*operands)
        name = _GRAD_DTYPES.get(self._data.dtype, self._data.dtype)
        if floating and self._data.dtype.kind != "f":
            raise RuntimeError(f"result type Float can't be cast to the desired output type "
                               f"{name}")
        if graph:
            return self._rebase(compute)
        result = compute(self)
        if result is self:  # nothing was computed (dropout while evaluating)
            return self
        if result.shape != self.shape:
            raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the "
                               f"broadcast shape {list(result.shape)}")
        if not np.can_cast(result.dtype, self._data.dtype, "same_kind"):
            raise RuntimeError(f"result type {_GRAD_DTYPES.get(result.dtype, result.dtype)} "
                               f"can't be cast to the desired output type {name}")
        self._data[...] = result._data
        mark_modified(self._data)
        return self

    def exp_(self):
        return self._write_result(lambda old: F.exp(old), floating=True)

    def log_(self):
        return self._write_result(lambda old: F.log(old), floating=True)

    def sqrt_(self):
        return self._write_result(lambda old: F.sqrt(old), floating=True)

    def sigmoid_(self):
        return self._write_result(lambda old: F.sigmoid(old), floating=True)

    def tanh_(self):
        return self._write_result(lambda old: F.tanh(old), floating=True)

    def reciprocal_(self):
        return self._write_result(lambda old: pointwise.reciprocal(old), floating=True)

    def relu_(self):
        """max(x, 0) in place (integers stay integers, as in PyTorch)."""
        return self._write_result(lambda old: F.clamp(old, min=0) if old._exact() else
                                  F.relu(old))

    def abs_(self):
        return self._write_result(lambda old: F.abs(old))

    def neg_(self):
        return self._write_result(lambda old: F.neg(old))

    def sign_(self):
        return self._write_result(lambda old: F.sign(old))

    def floor_(self):
        return self._write_result(lambda old: F.floor(old))

    def ceil_(self):
        return self._write_result(lambda old: F.ceil(old))

    def round_(self, decimals=0):
        return self._write_result(lambda old: F.round(old, decimals))

    def trunc_(self):
        return self._write_result(lambda old: pointwise.trunc(old))

    def clamp_(self, min=None, max=None):
        return self._write_result(lambda old: F.clamp(old, min, max))

    clip_ = clamp_

    def clamp_min_(self, min):
        return self._write_result(lambda old: F.clamp(old, min=min))

    def clamp_max_(self, max):
        return self._write_result(lambda old: F.clamp(old, max=max))

    def pow_(self, exponent):
        return self._write_result(lambda old: F.pow(old, exponent), exponent,
                                  floating=F._kind(exponent) == "f")

    def masked_fill_(self, mask, value):
        return self._write_result(lambda old: F.masked_fill(old, mask, value), value)

    def nan_to_num_(self, nan=0.0, posinf=None, neginf=None):
        return self._write_result(lambda old: binary_pointwise.nan_to_num(old, nan, posinf,
                                                                      neginf))

    def scatter_(self, dim, index, src=None, *, value=None, reduce=None):
        return self._write_result(lambda old: scatter.scatter(old, dim, index, src, value=value,
                                                          reduce=reduce), src)

    def scatter_add_(self, dim, index, src):
        return self._write_result(lambda old: scatter.scatter_add(old, dim, index, src), src)

    def scatter_reduce_(self, dim, index, src, reduce, *, include_self=True):
        return self._write_result(lambda old: scatter.scatter_reduce(
            old, dim, index, src, reduce, include_self=include_self), src)

    def index_add_(self, dim, index, source, *, alpha=1):
        return self._write_result(lambda old: scatter.index_add(old, dim, index, source,
                                                            alpha=alpha), source)

    def index_copy_(self, dim, index, source):
        return self._write_result(lambda old: scatter.index_copy(old, dim, index, source), source)

    def index_fill_(self, dim, index, value):
        return self._write_result(lambda old: scatter.index_fill(old, dim, index, value), value)

    def index_put_(self, indices, values, accumulate=False):
        return self._write_result(lambda old: scatter.index_put(old, indices, values, accumulate),
                                  values)

    def normal_(self, mean=0.0, std=1.0):
        """Every element drawn from N(mean, std^2), in place, from the generator that
        pyrt.manual_seed seeds (as pyrt.randn)."""
        self._check_random_fill("normal_", mean, std)
        if std < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
        draw = _generator.standard_normal(self.shape, self._draw_dtype()) * std + mean
        return self._fill_drawn(draw)

    def uniform_(self, from_=0.0, to=1.0):
        """Every element drawn uniformly from [from_, to), in place, from the generator that
        pyrt.manual_seed seeds (as pyrt.rand)."""
        self._check_random_fill("uniform_", from_, to)
        if from_ > to:
            raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                               f"from={from_} > to={to}")
        draw = _generator.random(self.shape, self._draw_dtype()) * (to - from_) + from_
        return self._fill_drawn(draw)

    def bernoulli(self, p=None):
        return sampling.bernoulli(self, p)

    def bernoulli_(self, p=0.5):
        return sampling.bernoulli_(self, p)

    def exponential_(self, lambd=1.0):
        return sampling.exponential_(self, lambd)

    def multinomial(self, num_samples, replacement=False):
        return sampling.multinomial(self, num_samples, replacement)

    def _check_random_fill(self, name, *numbers_):
        self._check_in_place()
        if self._data.dtype.kind != "f":
            raise NotImplementedError(f"{name}(): numbers are drawn in floating point, not "
                                      f"into a {self._data.dtype} tensor")
        for value in numbers_:
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise TypeError(f"{name}(): arguments must be real numbers, got "
                                f"{type(value).__name__}")

    def _draw_dtype(self):
        return np.float64 if self._data.dtype == np.float64 else np.float32

    def _fill_drawn(self, draw):
        self._data[...] = _move(draw.astype(self._data.dtype, copy=False), self.device)
        mark_modified(self._data)
        return self

    # ---- autograd ----------------------------------------------------------------------------

    def retain_grad(self):
        """Keep this tensor's gradient in .grad after backward() though it is not a leaf (a
        leaf keeps it anyway). Its backward closure is wrapped to store the gradient it
        receives (summed over its consumers), so that the backward loop pays nothing for it."""
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self._backward is not None:
            _Hooked.of(self).retain = True

    def register_hook(self, hook):
        """Call hook(grad) with this tensor's gradient (the sum over its consumers) during
        backward(), in the order the hooks were registered; a tensor it returns replaces the
        gradient passed on, or, on a leaf, the one added to .grad. Returns a handle whose
        remove() takes the hook off."""
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require "
                               "gradient")
        if not callable(hook):
            raise TypeError(f"register_hook(): hook must be callable, got "
                            f"{type(hook).__name__}")
        if self._backward is None:
            return register_leaf_hook(self, hook)
        return _HookHandle(_Hooked.of(self).hooks, hook)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulate d(self)/d(leaf) into ``.grad`` of every leaf that requires grad, or only
        into that of `inputs` (a tensor or a sequence: leaves or tensors made by ops) when
        given. The graph is freed on the way unless `retain_graph`, so that a second
        backward() through it is an error; with retain_graph=True it can run again.
        With create_graph the backward pass is itself recorded (pyrt/higher_order.py), so
        the gradients it leaves can be differentiated again."""
        if create_graph:
            from pyrt.autograd import backward

            if gradient is not None and not isinstance(gradient, Tensor):
                gradient = Tensor(np.asarray(gradient, np.float32))
            backward(self, gradient, retain_graph, True, inputs)
            return
        if not self._requires_grad:
            raise RuntimeError("element 0 of tensors does not require grad and does not have "
                               "a grad_fn")
        if gradient is None:
            if self._data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs: "
                                   f"pass gradient= for shape {self.shape}")
            g = _ONE.copy() if self._data.ndim == 0 else np.ones(self.shape, np.float32)
            if not isinstance(self._data, np.ndarray):
                from pyrt.cuda.autograd import implicit_gradient

                g = implicit_gradient(self.shape)
        else:
            g = gradient._data if isinstance(gradient, Tensor) else gradient
            if not hasattr(g, "shape"):
                g = np.asarray(g, np.float32)
            if g.shape != self.shape:
                raise ValueError(f"gradient has shape {g.shape}, expected {self.shape}")
            # on the tensor's device, float32 and contiguous (0-d kept 0-d)
            g = _move(g, self.device)
            g = F._xp(g).asarray(g, dtype=np.float32, order="C")
        run_backward(self, g, bool(retain_graph), inputs)

    # ---- ops ---------------------------------------------------------------------------------

    def __add__(self, other):
        return F.add(self, other)

    def __radd__(self, other):
        return F.add(other, self)

    def __sub__(self, other):
        return F.sub(self, other)

    def __rsub__(self, other):
        return F.sub(other, self)

    def __mul__(self, other):
        return F.mul(self, other)

    def __rmul__(self, other):
        return F.mul(other, self)

    def __truediv__(self, other):
        return F.div(self, other)

    def __rtruediv__(self, other):
        return F.div(other, self)

    def __neg__(self):
        return F.neg(self)

    def __pow__(self, exponent):
        return F.pow(self, exponent)

    def pow(self, exponent):
        return F.pow(self, exponent)

    def __rpow__(self, base):
        return F.rpow(base, self)

    def __floordiv__(self, other):
        return F.floor_divide(self, other)

    def __rfloordiv__(self, other):
        return F.floor_divide(other, self)

    def __mod__(self, other):
        return F.remainder(self, other)

    def __rmod__(self, other):
        return F.remainder(other, self)

    def floor_divide(self, other):
        return F.floor_divide(self, other)

    def remainder(self, other):
        return F.remainder(self, other)

    # ---- bitwise ops: bool and integer tensors, outside autograd --------------------------------

    def __and__(self, other):
        return F.bitwise_and(self, other)

    def __rand__(self, other):
        return F.bitwise_and(other, self)

    def __or__(self, other):
        return F.bitwise_or(self, other)

    def __ror__(self, other):
        return F.bitwise_or(other, self)

    def __xor__(self, other):
        return F.bitwise_xor(self, other)

    def __rxor__(self, other):
        return F.bitwise_xor(other, self)

    def __invert__(self):
        return F.bitwise_not(self)

    bitwise_and, bitwise_or, bitwise_xor, bitwise_not = __and__, __or__, __xor__, __invert__

    # ---- comparisons: elementwise, bool tensors outside autograd --------------------------------

    def _compare(self, other, op):
        if other is None:  # t == None is False, t != None True, as in PyTorch
            return op is operator.ne
        if isinstance(other, Tensor):
            other = other._data
        elif not isinstance(other, (numbers.Real, np.ndarray)):
            return NotImplemented
        # of 0-d data NumPy gives a scalar: kept an array
        return Tensor(F._xp(self._data).asarray(op(self._data, other)))

    def __eq__(self, other):
        return self._compare(other, operator.eq)

    def __ne__(self, other):
        return self._compare(other, operator.ne)

    def __lt__(self, other):
        return self._compare(other, operator.lt)

    def __le__(self, other):
        return self._compare(other, operator.le)

    def __gt__(self, other):
        return self._compare(other, operator.gt)

    def __ge__(self, other):
        return self._compare(other, operator.ge)

    eq, ne, lt, le, gt, ge = __eq__, __ne__, __lt__, __le__, __gt__, __ge__

    def __matmul__(self, other):
        return _matmul(self, other)

    def __rmatmul__(self, other):
        return _matmul(other, self)

    def __getitem__(self, index):
        return F.index_rows(self, _array_index(index))

    def __setitem__(self, index, value):
        """``self[index] = value``, written in place with NumPy's indexing and casting rules
        (value a number, an array or a tensor on self's device that broadcasts to the indexed
        shape): recorded in a graph as the other in-place ops are (_rebase), its gradient
        zero at the positions written and the value's that of those positions."""
        graph = self._in_graph(value)
        if value is None or isinstance(value, (str, bytes)):
            raise TypeError(f"can't assign a {type(value).__name__} to a tensor: the value "
                            "must be a number, an array or a tensor")
        if isinstance(value, Tensor):
            if F._xp(value._data) is not F._xp(self._data):
                raise RuntimeError(f"Expected all tensors to be on the same device, but found "
                                   f"at least two devices, {self.device} and {value.device}!")
        if graph:
            self._rebase(lambda old: _assigned(old, _array_index(index), value))
            return
        self._data[_array_index(index)] = value._data if isinstance(value, Tensor) else value
        mark_modified(self._data)

    def matmul(self, other):
        return _matmul(self, other)

    def exp(self):
        return F.exp(self)

    def log(self):
        return F.log(self)

    def sqrt(self):
        return F.sqrt(self)

    def tanh(self):
        return F.tanh(self)

    def sigmoid(self):
        return F.sigmoid(self)

    def relu(self):
        return F.relu(self)

    def abs(self):
        return F.abs(self)

    def clamp(self, min=None, max=None):
        return F.clamp(self, min, max)

    def log1p(self):
        return F.log1p(self)

    def expm1(self):
        return F.expm1(self)

    def sin(self):
        return F.sin(self)

    def cos(self):
        return F.cos(self)

    def round(self, decimals=0):
        return F.round(self, decimals)

    def floor(self):
        return F.floor(self)

    def ceil(self):
        return F.ceil(self)

    def sign(self):
        return F.sign(self)

    def sgn(self):
        return F.sgn(self)

    def masked_fill(self, mask, value):
        return F.masked_fill(self, mask, value)

    # method forms of the operators, with PyTorch's keywords

    def add(self, other, *, alpha=1):
        return F.add(self, self._alpha_scaled(other, alpha, "add"))

    def sub(self, other, *, alpha=1):
        return F.sub(self, self._alpha_scaled(other, alpha, "sub"))

    def _alpha_scaled(self, other, alpha, name):
        """other * alpha, alpha checked as PyTorch checks it: a real number, an integer when
        both operands are integers."""
        if isinstance(alpha, (bool, np.bool_)) or not isinstance(alpha, numbers.Real):
            raise TypeError(f"{name}(): argument 'alpha' must be a number, got "
                            f"{type(alpha).__name__}")
        if alpha == 1 and isinstance(alpha, numbers.Integral):
            return other
        if not isinstance(alpha, numbers.Integral) and "f" not in (F._kind(self),
                                                                   F._kind(other)):
            raise RuntimeError("For integral input tensors, argument alpha must not be a "
                               "floating point number.")
        return F.mul(other, alpha) if isinstance(other, Tensor) else other * alpha

    def mul(self, other):
        return F.mul(self, other)

    def div(self, other, *, rounding_mode=None):
        """self / other; with rounding_mode "trunc" or "floor", rounded that way (integers
        stay integers, floats get a zero gradient), as torch.div."""
        if rounding_mode is None:
            return F.div(self, other)
        return pointwise.divide_rounded(self, other, rounding_mode)

    def true_divide(self, other):
        return F.div(self, other)

    def neg(self):
        return F.neg(self)

    def fmod(self, other):
        return pointwise.fmod(self, other)

    def square(self):
        return pointwise.square(self)

    def rsqrt(self):
        return pointwise.rsqrt(self)

    def reciprocal(self):
        return pointwise.reciprocal(self)

    def erf(self):
        return pointwise.erf(self)

    def log2(self):
        return pointwise.log2(self)

    def log10(self):
        return pointwise.log10(self)

    def exp2(self):
        return pointwise.exp2(self)

    def tan(self):
        return pointwise.tan(self)

    def trunc(self):
        return pointwise.trunc(self)

    def frac(self):
        return pointwise.frac(self)

    def atan(self):
        return trigonometric.atan(self)

    def asin(self):
        return trigonometric.asin(self)

    def acos(self):
        return trigonometric.acos(self)

    def sinh(self):
        return trigonometric.sinh(self)

    def cosh(self):
        return trigonometric.cosh(self)

    def asinh(self):
        return trigonometric.asinh(self)

    def acosh(self):
        return trigonometric.acosh(self)

    def atanh(self):
        return trigonometric.atanh(self)

    arctan, arcsin, arccos, arcsinh, arccosh, arctanh = atan, asin, acos, asinh, acosh, atanh

    def sinc(self):
        return trigonometric.sinc(self)

    def deg2rad(self):
        return trigonometric.deg2rad(self)

    def rad2deg(self):
        return trigonometric.rad2deg(self)

    def atan2(self, other):
        return binary_pointwise.atan2(self, other)

    arctan2 = atan2

    def hypot(self, other):
        return binary_pointwise.hypot(self, other)

    def logaddexp(self, other):
        return binary_pointwise.logaddexp(self, other)

    def logaddexp2(self, other):
        return binary_pointwise.logaddexp2(self, other)

    def xlogy(self, other):
        return binary_pointwise.xlogy(self, other)

    def copysign(self, other):
        return binary_pointwise.copysign(self, other)

    def heaviside(self, values):
        return binary_pointwise.heaviside(self, values)

    def signbit(self):
        return binary_pointwise.signbit(self)

    def nan_to_num(self, nan=0.0, posinf=None, neginf=None):
        return binary_pointwise.nan_to_num(self, nan, posinf, neginf)

    def clamp_min(self, min):
        return F.clamp(self, min=min)

    def clamp_max(self, max):
        return F.clamp(self, max=max)

    def clip(self, min=None, max=None):
        return F.clamp(self, min, max)

    def lerp(self, end, weight):
        return pointwise.lerp(self, end, weight)

    def addcmul(self, tensor1, tensor2, *, value=1):
        return pointwise.addcmul(self, tensor1, tensor2, value=value)

    def addcdiv(self, tensor1, tensor2, *, value=1):
        """self + value * tensor1 / tensor2, broadcast together."""
        for t, name in ((tensor1, "tensor1"), (tensor2, "tensor2")):
            if not isinstance(t, Tensor):
                raise TypeError(f"addcdiv(): argument '{name}' must be a Tensor, got "
                                f"{type(t).__name__}")
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"addcdiv(): argument 'value' must be a number, got "
                            f"{type(value).__name__}")
        quotient = F.div(tensor1, tensor2)
        return F.add(self, quotient if value == 1 else F.mul(quotient, value))

    def maximum(self, other):
        return F.maximum(self, other)

    # ---- PyTorch's other names, and ops written with others -------------------------------

    def absolute(self):
        return self.abs()

    def negative(self):
        return F.neg(self)

    def positive(self):
        return self

    def multiply(self, other):
        return self * other

    def divide(self, other, *, rounding_mode=None):
        return self.div(other, rounding_mode=rounding_mode) if rounding_mode else self / other

    def subtract(self, other, *, alpha=1):
        return self.sub(other, alpha=alpha)

    def greater(self, other):
        return self > other

    def greater_equal(self, other):
        return self >= other

    def less(self, other):
        return self < other

    def less_equal(self, other):
        return self <= other

    def not_equal(self, other):
        return self != other

    def fix(self):
        return pointwise.trunc(self)

    def ravel(self):
        return self.reshape(-1)

    def reshape_as(self, other):
        if not isinstance(other, Tensor):
            raise TypeError(f"reshape_as(): argument 'other' must be a Tensor, got "
                            f"{type(other).__name__}")
        return self.reshape(other.shape)

    def msort(self):
        """The elements sorted along dim 0 (the values of sort(0))."""
        return self.sort(0)[0]

    def inner(self, other):
        """The sum over the last dims of self and other of their products (a dot product of
        vectors): self [..., n] and other [..., n] give [self's leading dims, other's]."""
        if not isinstance(other, Tensor):
            raise TypeError(f"inner(): argument 'other' must be a Tensor, got "
                            f"{type(other).__name__}")
        if self.ndim == 0 or other.ndim == 0:
            return self * other
        if self.shape[-1] != other.shape[-1]:
            raise RuntimeError(f"inner() the last dimension must match on both input tensors "
                               f"but got shapes {list(self.shape)} and {list(other.shape)}")
        a = self.reshape(-1, self.shape[-1])
        b = other.reshape(-1, other.shape[-1])
        return _matmul(a, b.transpose(0, 1)).reshape(self.shape[:-1] + other.shape[:-1])

    def ger(self, vec2):
        return self.outer(vec2)

    def logit(self, eps=None):
        """log(p / (1 - p)), p clamped to [eps, 1 - eps] when eps is given."""
        p = self if eps is None else F.clamp(self, eps, 1.0 - eps)
        return F.log(p) - F.log(1.0 - p)

    def erfc(self):
        return 1.0 - self.erf()

    def fmax(self, other):
        """The larger of the two, elementwise, a NaN losing to a number (F.maximum's NaN
        propagates)."""
        return self._nan_losing(other, F.maximum)

    def fmin(self, other):
        """The smaller of the two, elementwise, a NaN losing to a number."""
        return self._nan_losing(other, F.minimum)

    def _nan_losing(self, other, pick):
        """pick(self, other) where both are numbers, the number where one is NaN."""
        return selection.where(self != self, other,
                               selection.where(other != other, self, pick(self, other)))

    def isposinf(self):
        return self == float("inf")

    def isneginf(self):
        return self == float("-inf")

    @property
    def retains_grad(self):
        """Whether retain_grad() was called on this non-leaf tensor."""
        return isinstance(self._backward, _Hooked) and bool(self._backward.retain)

    def diagonal(self, offset=0, dim1=0, dim2=1):
        return windows.diagonal(self, offset, dim1, dim2)

    def diag_embed(self, offset=0, dim1=-2, dim2=-1):
        return windows.diag_embed(self, offset, dim1, dim2)

    def unfold(self, dimension, size, step):
        return windows.unfold(self, dimension, size, step)

    def tensor_split(self, indices_or_sections, dim=0):
        return windows.tensor_split(self, indices_or_sections, dim)

    def hsplit(self, indices_or_sections):
        return windows.hsplit(self, indices_or_sections)

    def vsplit(self, indices_or_sections):
        return windows.vsplit(self, indices_or_sections)

    def dsplit(self, indices_or_sections):
        return windows.dsplit(self, indices_or_sections)

    def split_with_sizes(self, split_sizes, dim=0):
        return windows.split_with_sizes(self, split_sizes, dim)

    def minimum(self, other):
        return F.minimum(self, other)

    def mv(self, vec):
        """The matrix self [n, m] times the vector vec [m]."""
        if self.ndim != 2 or not isinstance(vec, Tensor) or vec.ndim != 1:
            raise RuntimeError(f"mv(): expected a 2-D matrix and a 1-D vector, got "
                               f"{list(self.shape)} and "
                               f"{list(vec.shape) if isinstance(vec, Tensor) else vec!r}")
        return _matmul(self, vec)

    def select(self, dim, index):
        return joining.select(self, dim, index)

    def broadcast_to(self, size):
        return joining.broadcast_to(self, size)

    def argwhere(self):
        return joining.argwhere(self)

    def fliplr(self):
        """The columns (dim 1) in reverse order."""
        if self.ndim < 2:
            raise RuntimeError("Input must be >= 2-d.")
        return shapes.flip(self, (1,))

    def flipud(self):
        """The rows (dim 0) in reverse order."""
        if self.ndim < 1:
            raise RuntimeError("Input must be >= 1-d.")
        return shapes.flip(self, (0,))

    def logical_and(self, other):
        return logical.logical_and(self, other)

    def logical_or(self, other):
        return logical.logical_or(self, other)

    def logical_xor(self, other):
        return logical.logical_xor(self, other)

    def logical_not(self):
        return logical.logical_not(self)

    def isclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        return logical.isclose(self, other, rtol, atol, equal_nan)

    def masked_select(self, mask):
        return selection.masked_select(self, mask)

    def nonzero(self, *, as_tuple=False):
        return selection.nonzero(self, as_tuple=as_tuple)

    def unique(self, sorted=True, return_inverse=False, return_counts=False, dim=None):
        return selection.unique(self, sorted, return_inverse, return_counts, dim)

    def bincount(self, weights=None, minlength=0):
        return selection.bincount(self, weights, minlength)

    def outer(self, vec2):
        return products.outer(self, vec2)

    def dot(self, other):
        return products.dot(self, other)

    def mm(self, mat2):
        return products.mm(self, mat2)

    def bmm(self, mat2):
        return products.bmm(self, mat2)

    def gather(self, dim, index):
        return shapes.gather(self, dim, index)

    def scatter(self, dim, index, src=None, *, value=None, reduce=None):
        return scatter.scatter(self, dim, index, src, value=value, reduce=reduce)

    def scatter_add(self, dim, index, src):
        return scatter.scatter_add(self, dim, index, src)

    def scatter_reduce(self, dim, index, src, reduce, *, include_self=True):
        return scatter.scatter_reduce(self, dim, index, src, reduce, include_self=include_self)

    def index_add(self, dim, index, source, *, alpha=1):
        return scatter.index_add(self, dim, index, source, alpha=alpha)

    def index_copy(self, dim, index, source):
        return scatter.index_copy(self, dim, index, source)

    def index_fill(self, dim, index, value):
        return scatter.index_fill(self, dim, index, value)

    def index_put(self, indices, values, accumulate=False):
        return scatter.index_put(self, indices, values, accumulate)

    def take(self, index):
        return scatter.take(self, index)

    def take_along_dim(self, indices, dim=None):
        return scatter.take_along_dim(self, indices, dim)

    def cross(self, other, dim=None):
        return contractions.cross(self, other, dim)

    def kron(self, other):
        return contractions.kron(self, other)

    def trace(self):
        return contractions.trace(self)

    def addmm(self, mat1, mat2, *, beta=1, alpha=1):
        return products.addmm(self, mat1, mat2, beta=beta, alpha=alpha)

    def addmv(self, mat, vec, *, beta=1, alpha=1):
        return products.addmv(self, mat, vec, beta=beta, alpha=alpha)

    def baddbmm(self, batch1, batch2, *, beta=1, alpha=1):
        return products.baddbmm(self, batch1, batch2, beta=beta, alpha=alpha)

    def addbmm(self, batch1, batch2, *, beta=1, alpha=1):
        return products.addbmm(self, batch1, batch2, beta=beta, alpha=alpha)

    # ---- reductions: float32 through the kernels, with gradients; integers and bools (counts,
    # labels) through NumPy or CuPy, as PyTorch reduces them

    def _exact(self):
        """Whether the data holds integers or bools, reduced without autograd."""
        return self._data.dtype.kind in "biu"

    def sum(self, dim=None, keepdim=False):
        if self._exact():
            dim = None if dim is None else F.reduction_axes(dim, self._data.ndim, True)
            xp = F._xp(self._data)  # a full sum is a NumPy scalar: kept an array
            return Tensor(xp.asarray(xp.sum(self._data, axis=dim, keepdims=keepdim,
                                            dtype=np.int64)))
        return F.sum(self, dim, keepdim)

    def mean(self, dim=None, keepdim=False):
        if self._exact():
            name = _DTYPE_NAMES.get(self._data.dtype, str(self._data.dtype))
            raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be "
                               f"either a floating point or complex dtype. Got: {name}")
        return F.mean(self, dim, keepdim)

    def var(self, dim=None, unbiased=None, keepdim=False, *, correction=None):
        """The variance over `dim` (all elements if None): the sum of squared deviations from
        the mean over N - correction, correction 1 by default (Bessel's), 0 with
        unbiased=False. With N - correction <= 0 it is inf (nan where the sum is 0) and a
        warning, as in PyTorch. Differentiable."""
        return self._variance("var", dim, unbiased, keepdim, correction)[0]

    def _variance(self, name, dim, unbiased, keepdim, correction):
        """(var's tensor, the axes reduced, keepdim, N - correction) for var or std (`name`,
        the function the user called: its warning points at their call)."""
        axes, keepdim, divisor = self._variance_arguments(name, dim, unbiased, keepdim,
                                                          correction)
        deviation = self - F.mean(self, axes, True)
        squares = F.sum(deviation * deviation, axes, keepdim)
        if not divisor > 0:  # as PyTorch: no degrees of freedom (or a nan correction): inf
            # (0 / 0: nan)
            warnings.warn(f"{name}(): degrees of freedom is <= 0: correction should be less "
                          f"than the number of elements reduced", UserWarning, stacklevel=3)
            return squares * math.inf, axes, keepdim, divisor
        return squares * (1.0 / divisor), axes, keepdim, divisor

    def _variance_arguments(self, name, dim, unbiased, keepdim, correction):
        """var's and std's arguments checked: (the axes reduced, keepdim, N - correction)."""
        if self._exact():
            raise RuntimeError("std and var only support floating point and complex dtypes")
        if unbiased is not None and correction is not None:
            raise TypeError(f"{name}(): give unbiased or correction, not both")
        if unbiased is not None and not isinstance(unbiased, (bool, np.bool_)):
            # as PyTorch: 0 or "no" would otherwise read as Bessel's correction
            raise TypeError(f"{name}(): argument 'unbiased' must be a bool, got "
                            f"{type(unbiased).__name__}")
        keepdim = _flag(keepdim, name, "keepdim")
        if correction is None:
            correction = 0 if unbiased is False else 1
        if isinstance(correction, bool) or not isinstance(correction, numbers.Real):
            raise TypeError(f"{name}(): correction must be a number, got "
                            f"{type(correction).__name__}")
        # an empty list of dims is all of them, as torch.var reads it
        axes = None if dim is None else F.reduction_axes(dim, self._data.ndim, True)
        if axes is None:
            n = self._data.size
        else:
            n = math.prod(self._data.shape[a] for a in
                          (axes if isinstance(axes, tuple) else (axes,)))
        return axes, keepdim, n - correction

    def std(self, dim=None, unbiased=None, keepdim=False, *, correction=None):
        """The standard deviation: the square root of var (same arguments). Where it is 0
        its gradient is 0, as PyTorch makes it, rather than the square root's infinite slope
        times a zero deviation."""
        variance, axes, keepdim, divisor = self._variance("std", dim, unbiased, keepdim,
                                                          correction)
        xp = F._xp(variance._data)
        out = F._contiguous(xp.sqrt(variance._data))
        if divisor > 0 and xp.isinf(out).any():
            # deviations beyond 1.8e19 overflow float32's squares, not always their root:
            # the root of a float64 sum of squares there, as PyTorch accumulates (the
            # gradient, g times the deviation over divisor times this root, stays finite)
            wide = self._data.astype(np.float64)
            squares = xp.square(wide - wide.mean(axis=axes, keepdims=True))
            root = xp.sqrt(squares.sum(axis=axes, keepdims=keepdim) / divisor)
            with np.errstate(over="ignore"):
                out = F._contiguous(xp.where(xp.isinf(out), root.astype(np.float32), out))

        def backward(g):
            flat = out == 0
            return (xp.where(flat, np.float32(0), g / xp.where(flat, np.float32(1), 2 * out)),)

        return F._make(out, (variance,), backward)

    def where(self, condition, other):
        """This tensor where `condition` holds, else `other` (pyrt.where)."""
        return F.where(condition, self, other)

    def max(self, dim=None, keepdim=False):
        """The largest element; with `dim`, (values, indices) along it, as torch.max; with a
        tensor, the elementwise maximum of the two (pyrt.maximum)."""
        if isinstance(dim, Tensor):
            return F.maximum(self, dim)
        self._check_reducible(dim, "max")
        if self._exact():
            return self._exact_extreme(dim, keepdim, "max", max_result)
        if dim is None:
            return F.max(self)
        return max_result(F.max(self, dim, keepdim), self.argmax(dim, keepdim))

    def min(self, dim=None, keepdim=False):
        """The smallest element; with `dim`, (values, indices) along it, as torch.min; with a
        tensor, the elementwise minimum of the two (pyrt.minimum)."""
        if isinstance(dim, Tensor):
            return F.minimum(self, dim)
        self._check_reducible(dim, "min")
        if self._exact():
            return self._exact_extreme(dim, keepdim, "min", min_result)
        flipped = F.neg(self)  # min is -max(-x): its gradient goes to the first minimum
        if dim is None:
            return F.neg(F.max(flipped))
        return min_result(F.neg(F.max(flipped, dim, keepdim)), flipped.argmax(dim, keepdim))

    def _check_reducible(self, dim, name):
        """PyTorch's errors for max or min over no elements: there is no value to give."""
        if self._data.size:
            return
        if dim is None:
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for "
                               f"input.numel() == 0. Specify the reduction dim with the 'dim' "
                               f"argument.")
        axes = F.reduction_axes(dim, self._data.ndim)
        for axis in axes if isinstance(axes, tuple) else (axes,):
            if axis is not None and self._data.shape[axis] == 0:
                raise IndexError(f"{name}(): Expected reduction dim {axis} to have non-zero "
                                 f"size.")

    def _exact_extreme(self, dim, keepdim, name, result):
        dim = None if dim is None else F.dim_index(dim, self._data.ndim)
        xp = F._xp(self._data)
        if self._data.ndim == 0 and dim is not None:  # its one dim is all of it
            return result(Tensor(self._data.copy()), Tensor(xp.zeros((), np.int64)))
        values = xp.asarray(getattr(xp, name)(self._data, axis=dim, keepdims=keepdim))
        if dim is None:
            return Tensor(values)
        indices = getattr(xp, "arg" + name)(self._data, axis=dim, keepdims=keepdim)
        return result(Tensor(values), Tensor(indices.astype(np.int64, copy=False)))

    def argmax(self, dim=None, keepdim=False):
        dim = None if dim is None else F.dim_index(dim, self._data.ndim)
        if self._data.size == 0:  # PyTorch's IndexError rather than NumPy's ValueError
            if dim is None or self._data.ndim == 0:
                raise IndexError("argmax(): Expected reduction dim to be specified for "
                                 "input.numel() == 0.")
            if self._data.shape[dim] == 0:
                raise IndexError(f"argmax(): Expected reduction dim {dim} to have non-zero "
                                 f"size.")
        if self._exact():
            xp = F._xp(self._data)
            return Tensor(xp.asarray(xp.argmax(self._data, axis=dim, keepdims=keepdim),
                                     dtype=np.int64))
        from pyrt import ops

        return Tensor(ops.argmax(self._data, dim, keepdims=keepdim))

    def argmin(self, dim=None, keepdim=False):
        """The index of the first smallest element (the first NaN, if there is one) in the
        flattened tensor, or along `dim`; int64. Bools and empty reductions are refused, as
        PyTorch refuses them."""
        if self._data.dtype == np.bool_:
            raise RuntimeError("argmin(): does not support bool input")
        keepdim = _flag(keepdim, "argmin", "keepdim")
        dim = None if dim is None else F.dim_index(dim, self._data.ndim)
        if self._data.ndim == 0:
            dim = None  # its one dim is all of it
        if dim is None and self._data.size == 0:
            raise IndexError("argmin(): Expected reduction dim to be specified for "
                             "input.numel() == 0.")
        if dim is not None and self._data.shape[dim] == 0:
            raise IndexError(f"argmin(): Expected reduction dim {dim} to have non-zero size.")
        xp = F._xp(self._data)
        return Tensor(xp.asarray(xp.argmin(self._data, axis=dim, keepdims=keepdim),
                                 dtype=np.int64))

    def cumsum(self, dim, *, dtype=None):
        """The running sums along `dim` (see pyrt.functional.cumsum); with `dtype`, of this
        tensor converted to it first (outside autograd unless it is the tensor's dtype)."""
        if dtype is not None and not _is_dtype(dtype):  # to() would take it for a device
            raise TypeError(f"cumsum(): argument 'dtype' must be a dtype such as pyrt.float32, "
                            f"got {dtype!r:.40}")
        source = self if dtype is None else self.to(dtype)
        return F.cumsum(source, dim)

    def prod(self, dim=None, keepdim=False):
        return F.prod(self, dim, keepdim)

    def cumprod(self, dim):
        return reductions.cumprod(self, dim)

    def logsumexp(self, dim, keepdim=False):
        return reductions.logsumexp(self, dim, keepdim)

    def amax(self, dim=(), keepdim=False):
        return reductions.amax(self, dim, keepdim)

    def amin(self, dim=(), keepdim=False):
        return reductions.amin(self, dim, keepdim)

    def nansum(self, dim=None, keepdim=False):
        return reductions.nansum(self, dim, keepdim)

    def median(self, dim=None, keepdim=False):
        """The lower median (of all elements, or (values, indices) along `dim`)."""
        return reductions.median(self, dim, keepdim)

    def nanmedian(self, dim=None, keepdim=False):
        return order_statistics.nanmedian(self, dim, keepdim)

    def nanmean(self, dim=None, keepdim=False):
        return reductions.nanmean(self, dim, keepdim)

    def count_nonzero(self, dim=None):
        return reductions.count_nonzero(self, dim)

    def aminmax(self, *, dim=None, keepdim=False):
        return order_statistics.aminmax(self, dim=dim, keepdim=keepdim)

    def kthvalue(self, k, dim=-1, keepdim=False):
        return order_statistics.kthvalue(self, k, dim, keepdim)

    def mode(self, dim=-1, keepdim=False):
        return order_statistics.mode(self, dim, keepdim)

    def quantile(self, q, dim=None, keepdim=False, *, interpolation="linear"):
        return order_statistics.quantile(self, q, dim, keepdim, interpolation=interpolation)

    def nanquantile(self, q, dim=None, keepdim=False, *, interpolation="linear"):
        return order_statistics.nanquantile(self, q, dim, keepdim, interpolation=interpolation)

    def cummax(self, dim):
        return scans.cummax(self, dim)

    def cummin(self, dim):
        return scans.cummin(self, dim)

    def logcumsumexp(self, dim):
        return scans.logcumsumexp(self, dim)

    def histc(self, bins=100, min=0, max=0):
        return binning.histc(self, bins, min, max)

    def norm(self, p="fro", dim=None, keepdim=False):
        return F.norm(self, p, dim, keepdim)

    def sort(self, dim=-1, descending=False, *, stable=False):
        """(values, indices) sorted along `dim`; the sort is always stable."""
        return shapes.sort(self, dim, descending)

    def topk(self, k, dim=-1, largest=True, sorted=True):
        return shapes.topk(self, k, dim, largest, sorted)

    def softmax(self, dim=-1, dtype=None):
        return F.softmax(self, dim, dtype=dtype)

    def log_softmax(self, dim=-1, dtype=None):
        return F.log_softmax(self, dim, dtype=dtype)

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return F.reshape(self, shape)

    view = reshape

    def flatten(self, start_dim=0):
        start = shapes.dim_index(start_dim, self.ndim)
        # the merged size as a product: -1 cannot be inferred when another size is 0
        return F.reshape(self, self.shape[:start] + (math.prod(self.shape[start:]),))

    @property
    def T(self):
        """The tensor with its dims reversed: the transpose of a matrix, itself for 0-D and
        1-D (PyTorch warns that reversing more than 2 dims this way is deprecated)."""
        if self._data.ndim == 2:
            return F.transpose(self)
        if self._data.ndim < 2:
            return self
        warnings.warn("The use of `x.T` on tensors of dimension other than 2 to reverse their "
                      "shape is deprecated; use x.permute(*range(x.ndim - 1, -1, -1))",
                      UserWarning, stacklevel=2)
        return shapes.permute(self, range(self._data.ndim - 1, -1, -1))

    def _matrices_transposed(self, name):
        """The last two dims swapped (mT, and mH of a real tensor), or torch's error naming
        the attribute."""
        if self._data.ndim < 2:
            raise RuntimeError(f"tensor.{name} is only supported on matrices or batches of "
                               f"matrices. Got {self._data.ndim}-D tensor.")
        return shapes.transpose(self, -2, -1)

    mT = property(lambda self: self._matrices_transposed("mT"),
                  doc="The last two dims swapped: the transpose of a matrix or of each in a "
                      "batch.")
    mH = property(lambda self: self._matrices_transposed("mH"),
                  doc="The conjugate transpose of a matrix or of each in a batch: mT, for "
                      "real tensors.")

    @property
    def H(self):
        """The conjugate transpose of a matrix: its transpose, for real tensors."""
        if self._data.ndim != 2:
            hint = (" For batches of matrices, consider using tensor.mH" if self._data.ndim > 2
                    else "")
            raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got "
                               f"{self._data.ndim}-D tensor.{hint}")
        return F.transpose(self)

    def t(self):
        """The transpose of a matrix; a 0-D or 1-D tensor is returned as it is."""
        if self._data.ndim == 2:
            return F.transpose(self)
        if self._data.ndim < 2:
            return self
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                           f"{self._data.ndim}D")

    def permute(self, *dims):
        if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
            dims = tuple(dims[0])
        return shapes.permute(self, dims)

    def transpose(self, dim0, dim1):
        return shapes.transpose(self, dim0, dim1)

    def unsqueeze(self, dim):
        return shapes.unsqueeze(self, dim)

    def squeeze(self, dim=None):
        return shapes.squeeze(self, dim)

    def expand(self, *sizes):
        return shapes.expand(self, sizes)

    def expand_as(self, other):
        if not isinstance(other, Tensor):
            raise TypeError(f"expand_as(): argument 'other' must be a Tensor, got "
                            f"{type(other).__name__}")
        return shapes.expand(self, other.shape)

    def view_as(self, other):
        """This tensor reshaped to `other`'s shape."""
        return self.reshape(_other_tensor(other, "view_as").shape)

    def type_as(self, other):
        """This tensor as `other`'s dtype (itself if it has it already)."""
        return self.to(_other_tensor(other, "type_as").dtype)

    def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
        """zeros(size), of this tensor's dtype and device unless told otherwise."""
        return zeros(*size, **self._like(dtype, device), requires_grad=requires_grad)

    def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
        """ones(size), of this tensor's dtype and device unless told otherwise."""
        return ones(*size, **self._like(dtype, device), requires_grad=requires_grad)

    def new_empty(self, *size, dtype=None, device=None, requires_grad=False):
        """empty(size), of this tensor's dtype and device unless told otherwise."""
        return empty(*size, **self._like(dtype, device), requires_grad=requires_grad)

    def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
        """full(size, fill_value), of this tensor's dtype and device unless told otherwise."""
        return full(size, fill_value, **self._like(dtype, device), requires_grad=requires_grad)

    def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False):
        """tensor(data) (a copy), of this tensor's dtype and device unless told otherwise."""
        return tensor(data, **self._like(dtype, device), requires_grad=requires_grad)

    def _like(self, dtype, device):
        return {"dtype": self.dtype if dtype is None else dtype,
                "device": self.device if device is None else device}

    def any(self, dim=None, keepdim=False):
        """Whether any element (along `dim`) is nonzero: a bool tensor."""
        return self._logical("any", dim, keepdim)

    def all(self, dim=None, keepdim=False):
        """Whether every element (along `dim`) is nonzero: a bool tensor."""
        return self._logical("all", dim, keepdim)

    def _logical(self, name, dim, keepdim):
        keepdim = _flag(keepdim, name, "keepdim")
        xp = F._xp(self._data)
        axis = None if dim is None else F.dim_index(dim, self._data.ndim)
        if self._data.ndim == 0:
            axis = None
        return Tensor(xp.asarray(getattr(xp, name)(self._data, axis=axis, keepdims=keepdim)))

    def isnan(self):
        """Where the elements are NaN: a bool tensor."""
        return Tensor(F._xp(self._data).isnan(self._data))

    def isinf(self):
        """Where the elements are +-inf: a bool tensor."""
        return Tensor(F._xp(self._data).isinf(self._data))

    def isfinite(self):
        """Where the elements are neither NaN nor +-inf: a bool tensor."""
        return Tensor(F._xp(self._data).isfinite(self._data))

    def argsort(self, dim=-1, descending=False):
        """The indices that sort this tensor along `dim` (sort's indices)."""
        return self.sort(dim, descending).indices

    def flip(self, *dims):
        """The elements in reverse order along each of `dims`, with the gradient flipped back."""
        return shapes.flip(self, dims)

    def index_select(self, dim, index):
        """The slices along `dim` at the positions of `index`, a 1-D integer tensor; the
        gradient adds each slice's back at its position (positions may repeat)."""
        return shapes.index_select(self, dim, index)

    def repeat(self, *sizes):
        if not sizes:
            raise TypeError("repeat() missing 1 required positional argument: 'sizes'")
        return shapes.repeat(self, sizes)

    def split(self, split_size_or_sections, dim=0):
        return shapes.split(self, split_size_or_sections, dim)

    def chunk(self, chunks, dim=0):
        return shapes.chunk(self, chunks, dim)

    def unbind(self, dim=0):
        return rearrange.unbind(self, dim)

    def narrow(self, dim, start, length):
        return rearrange.narrow(self, dim, start, length)

    def movedim(self, source, destination):
        return rearrange.movedim(self, source, destination)

    moveaxis = movedim

    def swapaxes(self, axis0, axis1):
        return shapes.transpose(self, axis0, axis1)

    swapdims = swapaxes

    def unflatten(self, dim, sizes):
        return rearrange.unflatten(self, dim, sizes)

    def roll(self, shifts, dims=None):
        return rearrange.roll(self, shifts, dims)

    def repeat_interleave(self, repeats, dim=None):
        return rearrange.repeat_interleave(self, repeats, dim)

    def tril(self, diagonal=0):
        return rearrange.tril(self, diagonal)

    def triu(self, diagonal=0):
        return rearrange.triu(self, diagonal)

    def diag(self, diagonal=0):
        return rearrange.diag(self, diagonal)

    def diff(self, n=1, dim=-1, prepend=None, append=None):
        return rearrange.diff(self, n, dim, prepend, append)

    def tile(self, *dims):
        if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
            dims = tuple(dims[0])
        return rearrange.tile(self, dims)

    def rot90(self, k=1, dims=(0, 1)):
        return rearrange.rot90(self, k, dims)

    def contiguous(self, memory_format=None):
        """Itself: every op returns C-contiguous data (a tensor made around a strided array
        by hand gets a contiguous copy). A `memory_format` (pyrt.channels_last, ...) is
        checked as torch checks it; the data stays C-contiguous, with the same values."""
        if memory_format is not None:
            from pyrt import layouts

            layouts.check_memory_format(memory_format, self._data.ndim, "contiguous")
        if not self._data.flags.c_contiguous:
            return F.reshape(self, self.shape)
        return self

    # ---- in-place forms ------------------------------------------------------------------------
    # Each writes its out-of-place op's result into self through _write_result (recorded in
    # a graph as PyTorch records it); `floating` ones refuse integer and bool tensors as
    # PyTorch does, since their results are floating point.

    def sin_(self):
        return self._write_result(lambda old: old.sin(), floating=True)

    def cos_(self):
        return self._write_result(lambda old: old.cos(), floating=True)

    def tan_(self):
        return self._write_result(lambda old: old.tan(), floating=True)

    def asin_(self):
        return self._write_result(lambda old: old.asin(), floating=True)

    def acos_(self):
        return self._write_result(lambda old: old.acos(), floating=True)

    def atan_(self):
        return self._write_result(lambda old: old.atan(), floating=True)

    def sinh_(self):
        return self._write_result(lambda old: old.sinh(), floating=True)

    def cosh_(self):
        return self._write_result(lambda old: old.cosh(), floating=True)

    def asinh_(self):
        return self._write_result(lambda old: old.asinh(), floating=True)

    def acosh_(self):
        return self._write_result(lambda old: old.acosh(), floating=True)

    def atanh_(self):
        return self._write_result(lambda old: old.atanh(), floating=True)

    arcsin_, arccos_, arctan_ = asin_, acos_, atan_
    arcsinh_, arccosh_, arctanh_ = asinh_, acosh_, atanh_

    def sinc_(self):
        return self._write_result(lambda old: old.sinc(), floating=True)

    def deg2rad_(self):
        return self._write_result(lambda old: old.deg2rad(), floating=True)

    def rad2deg_(self):
        return self._write_result(lambda old: old.rad2deg(), floating=True)

    def erf_(self):
        return self._write_result(lambda old: old.erf(), floating=True)

    def erfc_(self):
        return self._write_result(lambda old: old.erfc(), floating=True)

    def exp2_(self):
        return self._write_result(lambda old: old.exp2(), floating=True)

    def expm1_(self):
        return self._write_result(lambda old: old.expm1(), floating=True)

    def log10_(self):
        return self._write_result(lambda old: old.log10(), floating=True)

    def log1p_(self):
        return self._write_result(lambda old: old.log1p(), floating=True)

    def log2_(self):
        return self._write_result(lambda old: old.log2(), floating=True)

    def rsqrt_(self):
        return self._write_result(lambda old: old.rsqrt(), floating=True)

    def logit_(self, eps=None):
        return self._write_result(lambda old: old.logit(eps), floating=True)

    def square_(self):
        return self._write_result(lambda old: old.square())

    def frac_(self):
        return self._write_result(lambda old: old.frac())

    def fix_(self):
        return self._write_result(lambda old: old.fix())

    def sgn_(self):
        return self._write_result(lambda old: old.sgn())

    def negative_(self):
        return self._write_result(lambda old: old.negative())

    def absolute_(self):
        return self._write_result(lambda old: old.absolute())

    def atan2_(self, other):
        return self._write_result(lambda old: old.atan2(other), other)

    arctan2_ = atan2_

    def hypot_(self, other):
        return self._write_result(lambda old: old.hypot(other), other)

    def copysign_(self, other):
        return self._write_result(lambda old: old.copysign(other), other)

    def fmod_(self, other):
        return self._write_result(lambda old: old.fmod(other), other)

    def remainder_(self, other):
        return self._write_result(lambda old: old.remainder(other), other)

    def floor_divide_(self, other):
        return self._write_result(lambda old: old.floor_divide(other), other)

    def divide_(self, other, *, rounding_mode=None):
        return self._write_result(lambda old: old.divide(other, rounding_mode=rounding_mode),
                                  other)

    def true_divide_(self, other):
        return self._write_result(lambda old: old.true_divide(other), other)

    def multiply_(self, other):
        return self.mul_(other)

    def subtract_(self, other, *, alpha=1):
        return self.sub_(other, alpha=alpha)

    def xlogy_(self, other):
        return self._write_result(lambda old: old.xlogy(other), other)

    def heaviside_(self, values):
        return self._write_result(lambda old: old.heaviside(values), values)

    def bitwise_and_(self, other):
        return self._write_result(lambda old: old.bitwise_and(other), other)

    def bitwise_or_(self, other):
        return self._write_result(lambda old: old.bitwise_or(other), other)

    def bitwise_xor_(self, other):
        return self._write_result(lambda old: old.bitwise_xor(other), other)

    def bitwise_not_(self):
        return self._write_result(lambda old: old.bitwise_not())

    def _as_number_in_place(self, name, *args):
        from pyrt.inplace_forms import as_number_in_place

        return as_number_in_place(self, name, *args)

    def logical_and_(self, other):
        return self._as_number_in_place("logical_and", other)

    def logical_or_(self, other):
        return self._as_number_in_place("logical_or", other)

    def logical_xor_(self, other):
        return self._as_number_in_place("logical_xor", other)

    def logical_not_(self):
        return self._as_number_in_place("logical_not")

    def eq_(self, other):
        return self._as_number_in_place("eq", other)

    def ne_(self, other):
        return self._as_number_in_place("ne", other)

    def gt_(self, other):
        return self._as_number_in_place("gt", other)

    def ge_(self, other):
        return self._as_number_in_place("ge", other)

    def lt_(self, other):
        return self._as_number_in_place("lt", other)

    def le_(self, other):
        return self._as_number_in_place("le", other)

    not_equal_, greater_, greater_equal_, less_, less_equal_ = ne_, gt_, ge_, lt_, le_

    def lerp_(self, end, weight):
        return self._write_result(lambda old: old.lerp(end, weight), end, weight)

    def addcmul_(self, tensor1, tensor2, *, value=1):
        return self._write_result(lambda old: old.addcmul(tensor1, tensor2, value=value),
                                  tensor1, tensor2)

    def addcdiv_(self, tensor1, tensor2, *, value=1):
        return self._write_result(lambda old: old.addcdiv(tensor1, tensor2, value=value),
                                  tensor1, tensor2)

    def addmm_(self, mat1, mat2, *, beta=1, alpha=1):
        return self._write_result(lambda old: old.addmm(mat1, mat2, beta=beta, alpha=alpha),
                                  mat1, mat2)

    def addbmm_(self, batch1, batch2, *, beta=1, alpha=1):
        return self._write_result(
            lambda old: old.addbmm(batch1, batch2, beta=beta, alpha=alpha), batch1, batch2)

    def baddbmm_(self, batch1, batch2, *, beta=1, alpha=1):
        return self._write_result(
            lambda old: old.baddbmm(batch1, batch2, beta=beta, alpha=alpha), batch1, batch2)

    def addmv_(self, mat, vec, *, beta=1, alpha=1):
        return self._write_result(lambda old: old.addmv(mat, vec, beta=beta, alpha=alpha),
                                  mat, vec)

    def cumsum_(self, dim, *, dtype=None):
        return self._write_result(lambda old: old.cumsum(dim, dtype=dtype))

    def cumprod_(self, dim):
        return self._write_result(lambda old: old.cumprod(dim))

    def tril_(self, diagonal=0):
        return self._write_result(lambda old: old.tril(diagonal))

    def triu_(self, diagonal=0):
        return self._write_result(lambda old: old.triu(diagonal))

    def fill_diagonal_(self, fill_value, wrap=False):
        from pyrt.inplace_forms import fill_diagonal

        return self._write_result(lambda old: fill_diagonal(old, fill_value, wrap))

    def masked_scatter(self, mask, source):
        from pyrt.index_writes import masked_scatter

        return masked_scatter(self, mask, source)

    def masked_scatter_(self, mask, source):
        return self._write_result(lambda old: old.masked_scatter(mask, source), source)

    def put(self, index, source, accumulate=False):
        from pyrt.index_writes import put

        return put(self, index, source, accumulate)

    def put_(self, index, source, accumulate=False):
        return self._write_result(lambda old: old.put(index, source, accumulate), source)

    def index_reduce(self, dim, index, source, reduce, *, include_self=True):
        from pyrt.index_writes import index_reduce

        return index_reduce(self, dim, index, source, reduce, include_self=include_self)

    def index_reduce_(self, dim, index, source, reduce, *, include_self=True):
        return self._write_result(lambda old: old.index_reduce(
            dim, index, source, reduce, include_self=include_self), source)

    # the shape changes in place: self takes the new shape, its array a view of the old one

    def t_(self):
        from pyrt.inplace_forms import reshaped_in_place

        return reshaped_in_place(self, Tensor.t, lambda a: a.T)

    def transpose_(self, dim0, dim1):
        from pyrt.inplace_forms import reshaped_in_place

        return reshaped_in_place(self, lambda old: old.transpose(dim0, dim1),
                                 lambda a: a.swapaxes(dim0, dim1) if a.ndim else a)

    def swapaxes_(self, axis0, axis1):
        return self.transpose_(axis0, axis1)

    def swapdims_(self, dim0, dim1):
        return self.transpose_(dim0, dim1)

    def squeeze_(self, dim=None):
        from pyrt.inplace_forms import reshaped_in_place

        return reshaped_in_place(self, lambda old: old.squeeze(dim))

    def unsqueeze_(self, dim):
        from pyrt.inplace_forms import reshaped_in_place

        return reshaped_in_place(self, lambda old: old.unsqueeze(dim))

    def detach_(self):
        """self taken out of its graph, in place: a leaf that does not require grad."""
        self._parents = ()
        self._backward = None
        self._requires_grad = False
        return self

    def random_(self, *bounds, **named):
        return sampling.random_(self, *bounds, **named)

    def cauchy_(self, median=0.0, sigma=1.0):
        return sampling.cauchy_(self, median, sigma)

    def log_normal_(self, mean=1.0, std=2.0):
        return sampling.log_normal_(self, mean, std)

    def geometric_(self, p):
        return sampling.geometric_(self, p)

    # ---- special functions ----------------------------------------------------------------------
    # (pyrt.special_functions and pyrt.number_functions; torch.special's other names are in
    # pyrt.special)

    def lgamma(self):
        from pyrt import special_functions
        return special_functions.lgamma(self)

    def digamma(self):
        from pyrt import special_functions
        return special_functions.digamma(self)

    def polygamma(self, n):
        """The n-th derivative of digamma at self: torch's Tensor.polygamma(n)."""
        from pyrt import special_functions
        return special_functions.polygamma(n, self)

    def mvlgamma(self, p):
        from pyrt import special_functions
        return special_functions.mvlgamma(self, p)

    def erfinv(self):
        from pyrt import special_functions
        return special_functions.erfinv(self)

    def i0(self):
        from pyrt import special_functions
        return special_functions.i0(self)

    def igamma(self, other):
        from pyrt import special_functions
        return special_functions.igamma(self, other)

    def igammac(self, other):
        from pyrt import special_functions
        return special_functions.igammac(self, other)

    def float_power(self, exponent):
        """self ** exponent computed in float64 and rounded to float32 (PyTorch returns
        float64, which pyrt does not have)."""
        from pyrt import number_functions
        return number_functions.float_power(self, exponent)

    def gcd(self, other):
        from pyrt import number_functions
        return number_functions.gcd(self, other)

    def lcm(self, other):
        from pyrt import number_functions
        return number_functions.lcm(self, other)

    def ldexp(self, other):
        from pyrt import number_functions
        return number_functions.ldexp(self, other)

    def frexp(self):
        """(mantissa, exponent), the exponent int64 (PyTorch's is int32)."""
        from pyrt import number_functions
        return number_functions.frexp(self)

    def nextafter(self, other):
        from pyrt import number_functions
        return number_functions.nextafter(self, other)

    def lgamma_(self):
        return self._write_result(lambda old: old.lgamma(), floating=True)

    def digamma_(self):
        return self._write_result(lambda old: old.digamma(), floating=True)

    def polygamma_(self, n):
        return self._write_result(lambda old: old.polygamma(n), floating=True)

    def mvlgamma_(self, p):
        return self._write_result(lambda old: old.mvlgamma(p), floating=True)

    def erfinv_(self):
        return self._write_result(lambda old: old.erfinv(), floating=True)

    def i0_(self):
        return self._write_result(lambda old: old.i0(), floating=True)

    def igamma_(self, other):
        return self._write_result(lambda old: old.igamma(other), other, floating=True)

    def igammac_(self, other):
        return self._write_result(lambda old: old.igammac(other), other, floating=True)

    def float_power_(self, exponent):
        """float_power in place, into a float32 tensor (PyTorch requires float64 there)."""
        return self._write_result(lambda old: old.float_power(exponent), exponent,
                                  floating=True)

    def gcd_(self, other):
        return self._write_result(lambda old: old.gcd(other), other)

    def lcm_(self, other):
        return self._write_result(lambda old: old.lcm(other), other)

    def ldexp_(self, other):
        return self._write_result(lambda old: old.ldexp(other), other, floating=True)

    def nextafter_(self, other):
        return self._write_result(lambda old: old.nextafter(other), other, floating=True)

    # ---- linear algebra (torch's older names) -------------------------------------------------

    @staticmethod
    def _linalg_legacy():
        """pyrt.linalg.legacy, imported at the first call (it imports this module)."""
        from pyrt.linalg import legacy

        return legacy

    def det(self):
        return self._linalg_legacy().det(self)

    def inverse(self):
        return self._linalg_legacy().inverse(self)

    def slogdet(self):
        return self._linalg_legacy().slogdet(self)

    def logdet(self):
        return self._linalg_legacy().logdet(self)

    def pinverse(self, rcond=1e-15):
        return self._linalg_legacy().pinverse(self, rcond)

    def matrix_power(self, n):
        return self._linalg_legacy().matrix_power(self, n)

    def matrix_exp(self):
        return self._linalg_legacy().matrix_exp(self)

    def cholesky(self, upper=False):
        return self._linalg_legacy().cholesky(self, upper)

    def cholesky_solve(self, input2, upper=False):
        return self._linalg_legacy().cholesky_solve(self, input2, upper)

    def cholesky_inverse(self, upper=False):
        return self._linalg_legacy().cholesky_inverse(self, upper)

    def qr(self, some=True):
        return self._linalg_legacy().qr(self, some)

    def svd(self, some=True, compute_uv=True):
        return self._linalg_legacy().svd(self, some, compute_uv)

    def lu(self, pivot=True, get_infos=False):
        return self._linalg_legacy().lu(self, pivot, get_infos)

    def lu_solve(self, LU_data, LU_pivots):
        return self._linalg_legacy().lu_solve(self, LU_data, LU_pivots)

    def triangular_solve(self, A, upper=True, transpose=False, unitriangular=False):
        return self._linalg_legacy().triangular_solve(self, A, upper, transpose, unitriangular)

    def orgqr(self, input2):
        return self._linalg_legacy().orgqr(self, input2)

    # ---- numeric utilities, metadata and state ------------------------------------------------

    # numeric utilities
    # (their modules are imported where used, as they import this one)

    def vdot(self, other):
        from pyrt.linear_combinations import vdot
        return vdot(self, other)

    def addr(self, vec1, vec2, *, beta=1, alpha=1):
        from pyrt.linear_combinations import addr
        return addr(self, vec1, vec2, beta=beta, alpha=alpha)

    def addr_(self, vec1, vec2, *, beta=1, alpha=1):
        from pyrt.linear_combinations import addr
        if self.ndim != 2:
            raise RuntimeError(f"2D tensor expected, got {self.ndim}D tensor for input")
        return self._write_result(lambda old: addr(old, vec1, vec2, beta=beta, alpha=alpha),
                                  vec1, vec2)

    def cov(self, *, correction=1, fweights=None, aweights=None):
        from pyrt.statistics import cov
        return cov(self, correction=correction, fweights=fweights, aweights=aweights)

    def corrcoef(self):
        from pyrt.statistics import corrcoef
        return corrcoef(self)

    def histogram(self, bins=100, *, range=None, weight=None, density=False):
        from pyrt.statistics import histogram
        return histogram(self, bins, range=range, weight=weight, density=density)

    def diagflat(self, offset=0):
        from pyrt.matrix_builders import diagflat
        return diagflat(self, offset)

    def diagonal_scatter(self, src, offset=0, dim1=0, dim2=1):
        from pyrt.view_scatter import diagonal_scatter
        return diagonal_scatter(self, src, offset, dim1, dim2)

    def select_scatter(self, src, dim, index):
        from pyrt.view_scatter import select_scatter
        return select_scatter(self, src, dim, index)

    def slice_scatter(self, src, dim=0, start=None, end=None, step=1):
        from pyrt.view_scatter import slice_scatter
        return slice_scatter(self, src, dim, start, end, step)

    def unique_consecutive(self, return_inverse=False, return_counts=False, dim=None):
        from pyrt.unique_runs import unique_consecutive
        return unique_consecutive(self, return_inverse, return_counts, dim)

    def renorm(self, p, dim, maxnorm):
        from pyrt.norm_utilities import renorm
        return renorm(self, p, dim, maxnorm)

    def renorm_(self, p, dim, maxnorm):
        from pyrt.norm_utilities import renorm
        return self._write_result(lambda old: renorm(old, p, dim, maxnorm), floating=True)

    def dist(self, other, p=2):
        from pyrt.norm_utilities import dist
        return dist(self, other, p)

    def sum_to_size(self, *size):
        from pyrt.size_utilities import sum_to_size
        return sum_to_size(self, *size)

    def is_same_size(self, other):
        from pyrt.dtype_info import is_same_size
        return is_same_size(self, other)

    # metadata and state

    def data_ptr(self):
        """The address of the first element."""
        from pyrt import tensor_metadata

        return tensor_metadata.data_ptr(self)

    def storage_offset(self):
        """The first element's offset, in elements, into the memory this tensor shares."""
        from pyrt import tensor_metadata

        return tensor_metadata.storage_offset(self)

    @property
    def nbytes(self):
        """The size of the elements in bytes."""
        return self._data.nbytes

    @property
    def itemsize(self):
        """The size of one element in bytes."""
        return self._data.itemsize

    def ndimension(self):
        return self._data.ndim

    @property
    def is_cpu(self):
        return isinstance(self._data, np.ndarray)

    def get_device(self):
        """The GPU's index (0) for a CUDA tensor, -1 on the CPU."""
        return -1 if isinstance(self._data, np.ndarray) else 0

    def type(self, dtype=None, non_blocking=False, **kwargs):
        """With no dtype, torch's name of this tensor's type ("torch.FloatTensor",
        "torch.LongTensor", "torch.BoolTensor"); with a dtype or such a name, this tensor
        cast to it (itself if it has it already)."""
        from pyrt import tensor_metadata

        if dtype is None:
            return tensor_metadata.type_name(self)
        return tensor_metadata.cast_to_type(self, dtype, non_blocking)

    def equal(self, other):
        """Whether `other` has this tensor's shape and values (pyrt.equal)."""
        from pyrt.toplevel import equal

        return equal(self, other)

    def allclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        """Whether |self - other| <= atol + rtol * |other| everywhere (pyrt.allclose)."""
        from pyrt.toplevel import allclose

        return allclose(self, other, rtol, atol, equal_nan)

    def is_nonzero(self):
        from pyrt.dtype_info import is_nonzero

        return is_nonzero(self)

    def is_signed(self):
        return self._data.dtype.kind in "if"

    def is_complex(self):
        return self._data.dtype.kind == "c"

    def is_inference(self):
        """False: pyrt's inference_mode records no graph but makes ordinary tensors, which
        may enter autograd later, where torch's makes inference tensors."""
        return False

    def new(self, *args):
        """torch's legacy constructor: see pyrt.tensor_metadata.new."""
        from pyrt import tensor_metadata

        return tensor_metadata.new(self, args)

    def byte(self):
        from pyrt import tensor_metadata

        tensor_metadata.unsupported_cast("byte", "uint8")

    def char(self):
        from pyrt import tensor_metadata

        tensor_metadata.unsupported_cast("char", "int8")

    def short(self):
        from pyrt import tensor_metadata

        tensor_metadata.unsupported_cast("short", "int16")

    def half(self):
        from pyrt import tensor_metadata

        tensor_metadata.unsupported_cast("half", "float16")

    def bfloat16(self):
        from pyrt import tensor_metadata

        tensor_metadata.unsupported_cast("bfloat16", "bfloat16")

    def register_post_accumulate_grad_hook(self, hook):
        """Run hook(self) after backward() adds a gradient to this leaf's .grad; returns a
        handle whose remove() takes it off."""
        from pyrt import tensor_metadata

        return tensor_metadata.register_post_accumulate_grad_hook(self, hook)


    # ---- devices, layouts, memory and PyTorch's odds -------------------------------------------

    @property
    def layout(self):
        """pyrt.strided: every pyrt tensor is a dense strided array."""
        from pyrt import layouts

        return layouts.strided

    # torch's flags of the tensor kinds and devices pyrt has none of: code that checks them
    # (an optimizer refusing sparse gradients, say) reads False, as for torch's dense tensors
    is_sparse = is_sparse_csr = is_quantized = is_meta = is_nested = is_mkldnn = False
    is_mps = is_xpu = is_xla = is_ipu = is_vulkan = is_maia = is_mtia = False

    def to_dense(self, dtype=None, *, masked_grad=None):
        """The tensor itself, dense already (in dtype if given), as torch's for a strided
        tensor."""
        del masked_grad  # (a sparse tensor's option)
        return self if dtype is None else self.to(dtype)

    @property
    def output_nr(self):
        """0: pyrt records one result per op (torch numbers the outputs of multi-output
        ops)."""
        return 0

    def __dlpack__(self, **kwargs):
        """The DLPack capsule of this tensor's memory (torch.from_dlpack and NumPy's take
        it); refused for a tensor that requires grad, as in torch."""
        from pyrt import foreign_memory

        return foreign_memory.dlpack(self, **kwargs)

    def __dlpack_device__(self):
        return self._data.__dlpack_device__()

    # bit shifts: integer tensors, outside autograd (pyrt/bit_shifts.py)
    def bitwise_left_shift(self, other):
        from pyrt import bit_shifts
        return bit_shifts.bitwise_left_shift(self, other)

    def bitwise_right_shift(self, other):
        from pyrt import bit_shifts
        return bit_shifts.bitwise_right_shift(self, other)

    def bitwise_left_shift_(self, other):
        return self._write_result(lambda old: old.bitwise_left_shift(other), other)

    def bitwise_right_shift_(self, other):
        return self._write_result(lambda old: old.bitwise_right_shift(other), other)

    __lshift__ = bitwise_left_shift
    __rshift__ = bitwise_right_shift
    __ilshift__ = bitwise_left_shift_
    __irshift__ = bitwise_right_shift_

    def __rlshift__(self, other):
        from pyrt import bit_shifts
        return bit_shifts.bitwise_left_shift(other, self)

    def __rrshift__(self, other):
        from pyrt import bit_shifts
        return bit_shifts.bitwise_right_shift(other, self)

    # torch's "unsafe" splits skip a check of in-place writes to the pieces; pyrt's pieces
    # are checked either way, so they are the plain ones
    def unsafe_chunk(self, chunks, dim=0):
        return self.chunk(chunks, dim)

    def unsafe_split(self, split_size, dim=0):
        return self.split(split_size, dim)

    def unsafe_split_with_sizes(self, split_sizes, dim=0):
        return self.split_with_sizes(split_sizes, dim)

    def narrow_copy(self, dim, start, length):
        """narrow(dim, start, length) as a copy (in the graph: the gradient passes back)."""
        return self.narrow(dim, start, length).clone()

    def new_empty_strided(self, size, stride, *, dtype=None, device=None,
                          requires_grad=False):
        """empty_strided(size, stride), of this tensor's dtype and device unless told
        otherwise (the data C-contiguous, see pyrt/resizing.py)."""
        from pyrt import resizing

        shape = resizing.check_strides(size, stride, "new_empty_strided")
        return empty(shape, **self._like(dtype, device), requires_grad=requires_grad)

    def hardshrink(self, lambd=0.5):
        from pyrt.nn import functional as nnf
        return nnf.hardshrink(self, lambd)

    def prelu(self, weight):
        from pyrt.nn import functional as nnf
        return nnf.prelu(self, weight)

    # memory placement: pinned and shared memory (pyrt/shared_memory.py)
    def pin_memory(self, device=None):
        """This tensor, for copying to the GPU (pyrt's host arrays need no pinning); as in
        torch, a RuntimeError without a CUDA device, or for a tensor on the GPU."""
        from pyrt import shared_memory
        return shared_memory.pin_memory(self)

    def is_pinned(self, device=None):
        """False: pyrt does not pin host memory."""
        return False

    def share_memory_(self):
        """Move the data (on the CPU) into shared memory, which processes forked after this
        see and write; itself."""
        from pyrt import shared_memory
        return shared_memory.share_memory_(self)

    def is_shared(self):
        """Whether the data lies in shared memory (share_memory_'s); True on the GPU."""
        from pyrt import shared_memory
        return shared_memory.is_shared(self)

    # a Python function on each element, in place (pyrt/element_maps.py)
    def apply_(self, callable):
        from pyrt import element_maps
        return element_maps.apply_(self, callable)

    def map_(self, other, callable):
        from pyrt import element_maps
        return element_maps.map_(self, other, callable)

    def map2_(self, x, y, callable):
        from pyrt import element_maps
        return element_maps.map2_(self, x, y, callable)

    def resize_(self, *sizes, memory_format=None):
        """This tensor reshaped to `sizes` in place, keeping the elements in C order as far
        as they fit (new places uninitialised); refused for a tensor that requires grad."""
        from pyrt import layouts, resizing

        shape = _shape(sizes)
        if memory_format is not None:
            layouts.check_memory_format(memory_format, len(shape), "resize_")
        return resizing.resize_(self, shape)

    def resize_as_(self, the_template, memory_format=None):
        """resize_ to the shape of `the_template`."""
        return self.resize_(_other_tensor(the_template, "resize_as_").shape,
                            memory_format=memory_format)

    # complex views of a real tensor: pyrt has no complex dtype, so each is the tensor itself
    def is_conj(self):
        return False

    def is_neg(self):
        return False

    def conj(self):
        return self

    resolve_conj = resolve_neg = conj

    @property
    def real(self):
        """Itself: the real part of a real tensor."""
        return self

    @property
    def imag(self):
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")

    def isreal(self):
        """Where the elements are real: everywhere, for pyrt's real dtypes."""
        return Tensor(F._xp(self._data).ones(self._data.shape, np.bool_))

    def adjoint(self):
        """The conjugate transpose of each matrix: mH."""
        return self._matrices_transposed("adjoint()")

    # ---- strided views ------------------------------------------------------------------------

    def as_strided(self, size, stride, storage_offset=None):
        """The view of this tensor's storage with `size` and `stride` in elements (see
        pyrt.strided_views)."""
        from pyrt.strided_views import as_strided

        return as_strided(self, size, stride, storage_offset)

    def as_strided_(self, size, stride, storage_offset=None):
        from pyrt.strided_views import as_strided_

        return as_strided_(self, size, stride, storage_offset)

    def as_strided_scatter(self, src, size, stride, storage_offset=None):
        from pyrt.strided_views import as_strided_scatter

        return as_strided_scatter(self, src, size, stride, storage_offset)

    # ---- storage and the last PyTorch odds ----------------------------------------------------

    def untyped_storage(self):
        from pyrt import storage
        return storage.untyped_storage(self)

    def storage(self):
        from pyrt import storage
        return storage.typed_storage(self)

    def set_(self, source=None, storage_offset=0, size=None, stride=None):
        from pyrt import tensor_memory
        return tensor_memory.set_(self, source, storage_offset, size, stride)

    def is_set_to(self, tensor):
        from pyrt import tensor_memory
        return tensor_memory.is_set_to(self, _other_tensor(tensor, "is_set_to"))

    def resize(self, *sizes):
        from pyrt import tensor_memory
        return tensor_memory.resize(self, sizes)

    def resize_as(self, tensor):
        from pyrt import tensor_memory
        return tensor_memory.resize_as(self, tensor)

    def dim_order(self, *, ambiguity_check=False):
        from pyrt import tensor_memory
        return tensor_memory.dim_order(self, ambiguity_check)

    def as_subclass(self, cls):
        from pyrt import tensor_memory
        return tensor_memory.as_subclass(self, cls)

    def module_load(self, other, assign=False):
        from pyrt import tensor_memory
        return tensor_memory.module_load(self, other, assign)

    def record_stream(self, stream):
        from pyrt import tensor_memory
        return tensor_memory.record_stream(self, stream)

    def angle(self):
        from pyrt import real_parts
        return real_parts.angle(self)

    def conj_physical(self):
        return self

    def conj_physical_(self):
        return self

    def nonzero_static(self, *, size, fill_value=-1):
        from pyrt import real_parts
        return real_parts.nonzero_static(self, size=size, fill_value=fill_value)

# ---- creation --------------------------------------------------------------------------------


def _constructor_data(data):
    """The array of ``Tensor(data)`` for data that is not an array: a list or tuple becomes
    float32, as torch.Tensor makes it; a number, a NumPy scalar or another library's array
    converts as pyrt.tensor converts it; a Tensor's array is shared."""
    if isinstance(data, np.ndarray):  # a subclass of ndarray
        return data
    if isinstance(data, (list, tuple)):
        try:
            return np.array(data, dtype=np.float32)
        except (TypeError, ValueError):
            raise TypeError(f"Tensor(data): data must be a sequence of numbers of one shape, "
                            f"an array or a number, got {data!r:.80}") from None
    if data is None or isinstance(data, (str, bytes, dict, set)):
        raise TypeError(f"Tensor(data): data must be an array, a sequence of numbers or a "
                        f"number, got {type(data).__name__}")
    return _as_array(data, None)


def _as_array(data, dtype):
    if isinstance(data, Tensor):
        data = data._data
    arr = np.asarray(data)
    if dtype is not None:
        if np.dtype(dtype).kind not in "fiub":
            raise TypeError(f"dtype must be a real or bool dtype (float32, int64, bool), got "
                            f"{np.dtype(dtype)}")
        return arr.astype(dtype, copy=False)
    # as in PyTorch: bools stay bool, integers become int64, floating point float32
    if arr.dtype.kind == "b":
        return arr
    if arr.dtype.kind in "iu":
        if arr.dtype == np.uint64 and arr.size and arr.max() > np.iinfo(np.int64).max:
            # astype would wrap it around to a negative int64
            raise ValueError(f"data holds {int(arr.max())}, too large for int64")
        return arr.astype(np.int64, copy=False)
    if arr.dtype.kind == "f":
        return arr.astype(np.float32, copy=False)
    raise TypeError(f"data must hold real numbers or bools, got {type(data).__name__} of "
                    f"dtype {arr.dtype}")


def _is_dtype(x):
    """Whether `x` names a dtype (np.float32, pyrt.int64, np.dtype("bool")), not a device."""
    if isinstance(x, np.dtype):
        return True
    return isinstance(x, type) and (issubclass(x, np.generic) or x in (float, int, bool))


def _checked_dtype(dtype):
    """`dtype` as a NumPy dtype a tensor may hold (real numbers or bools), or a TypeError."""
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"dtype must be a dtype such as pyrt.float32 or pyrt.int64, got "
                        f"{dtype!r}") from None
    if dtype.kind not in "fiub":
        raise TypeError(f"dtype must be a real or bool dtype (float32, int64, bool), got "
                        f"{dtype}")
    return dtype


def _filled(fill, size, requires_grad, device, dtype):
    """A new tensor of `size` from NumPy's fill function (zeros, ones, empty)."""
    device = _check_device(device)
    dtype = np.dtype(np.float32) if dtype is None else _checked_dtype(dtype)
    if requires_grad:
        _check_can_require_grad(dtype)
    return Tensor(_move(fill(_shape(size), dtype), device), requires_grad)


def tensor(data, requires_grad=False, device=None, dtype=None):
    """A tensor holding a copy of `data`: floats become float32, integers int64."""
    device = _check_device(device)
    if isinstance(data, Tensor) and data.device != "cpu":
        data = data._data.get()
    arr = _as_array(data, dtype).copy()  # C-contiguous, 0-d data kept 0-d
    if requires_grad:
        _check_can_require_grad(arr.dtype)
    return Tensor(_move(arr, device), requires_grad=requires_grad)


def from_numpy(array):
    """A tensor sharing `array`'s memory (which must be float32, int64 or bool and
    contiguous)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"expected a numpy.ndarray, got {type(array).__name__}")
    if array.dtype not in (np.float32, np.int64, np.bool_):
        # torch would make a tensor of this dtype; pyrt has none to share the memory with
        raise TypeError(f"from_numpy: pyrt has no {array.dtype} dtype (only float32, int64 and "
                        f"bool); convert the array first, e.g. array.astype(np.float32), or "
                        f"copy it with pyrt.tensor(array), which makes floats float32")
    if not array.flags.c_contiguous:
        raise ValueError("from_numpy needs a C-contiguous float32, int64 or bool array")
    return Tensor(array)


def _shape(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    for n in size:
        # a bool is an Integral to Python, but as a size it is a mistake (torch.full and
        # torch.randint refuse it in their tuple of sizes)
        if isinstance(n, (bool, np.bool_)) or not isinstance(n, numbers.Integral):
            raise TypeError(f"size must be a tuple of ints, got {size!r:.80} (an element of "
                            f"type {type(n).__name__})")
        if n < 0:
            raise ValueError(f"size must be non-negative integers, got {size}")
    return tuple(int(n) for n in size)


def zeros(*size, requires_grad=False, device=None, dtype=None):
    return _filled(np.zeros, size, requires_grad, device, dtype)


def ones(*size, requires_grad=False, device=None, dtype=None):
    return _filled(np.ones, size, requires_grad, device, dtype)


def empty(*size, requires_grad=False, device=None, dtype=None,
          memory_format=None):
    """An uninitialised tensor of `size`. `memory_format` (pyrt.contiguous_format or
    channels_last) is checked as torch checks it; pyrt's data is always C-contiguous."""
    if memory_format is not None:
        from pyrt import layouts

        layouts.check_memory_format(memory_format, len(_shape(size)), "empty",
                                    preserve=False)
    return _filled(np.empty, size, requires_grad, device, dtype)


def _like(input, name, device, dtype):
    """(device, dtype) of a tensor made like `input`: input's own unless given."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be a Tensor, got "
                        f"{type(input).__name__}")
    return (input.device if device is None else device,
            input.dtype if dtype is None else dtype)


def zeros_like(input, *, dtype=None, device=None, requires_grad=False):
    device, dtype = _like(input, "zeros_like", device, dtype)
    return _filled(np.zeros, (input.shape,), requires_grad, device, dtype)


def ones_like(input, *, dtype=None, device=None, requires_grad=False):
    device, dtype = _like(input, "ones_like", device, dtype)
    return _filled(np.ones, (input.shape,), requires_grad, device, dtype)


def empty_like(input, *, dtype=None, device=None, requires_grad=False):
    device, dtype = _like(input, "empty_like", device, dtype)
    return _filled(np.empty, (input.shape,), requires_grad, device, dtype)


def _sequence_size(size, name):
    """The `size` of full or randint: a tuple or list of non-negative ints, as PyTorch takes
    it there (not separate ints)."""
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"{name}(): argument 'size' must be a tuple of ints, got "
                        f"{type(size).__name__}")
    return _shape((size,))


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False):
    """A tensor of `size` (a tuple or list) holding fill_value everywhere. Its dtype, unless
    given, follows the value as in PyTorch: bool for a bool, int64 for an int, float32 for a
    float. A value the dtype cannot hold is PyTorch's RuntimeError."""
    shape = _sequence_size(size, "full")
    fill_value = _number_of(fill_value, "full(): argument 'fill_value'", TypeError)
    if dtype is None:
        if isinstance(fill_value, (bool, np.bool_)):
            dtype = bool_
        elif isinstance(fill_value, numbers.Integral):
            dtype = int64
        else:
            dtype = float32
    return _full(shape, fill_value, "full", device, dtype, requires_grad)


def full_like(input, fill_value, *, dtype=None, device=None, requires_grad=False):
    """A tensor of input's shape (and dtype and device, unless given) holding fill_value,
    converted to the dtype as PyTorch converts it (toward zero into integers)."""
    device, dtype = _like(input, "full_like", device, dtype)
    fill_value = _number_of(fill_value, "full_like(): argument 'fill_value'", TypeError)
    return _full(input.shape, fill_value, "full_like", device, dtype, requires_grad)


def _number_of(value, name, error):
    """`value` as a number: the element of a 0-d tensor, else itself (checked later). A tensor
    of other dims is `error` (PyTorch's type for the function), naming the argument, rather
    than one element taken from it or item()'s message about elements."""
    if not isinstance(value, Tensor):
        return value
    if value._data.ndim:
        raise error(f"{name} must be a number or a 0-dimensional tensor, got a tensor of "
                    f"shape {tuple(value.shape)}")
    return value.item()


def _full(shape, fill_value, name, device, dtype, requires_grad):
    dtype = _checked_dtype(dtype)
    value = F.scalar_as(fill_value, dtype, f"{name}(): fill_value")
    device = _check_device(device)
    if requires_grad:
        _check_can_require_grad(dtype)
    return Tensor(_move(np.full(shape, value, dtype), device), requires_grad)


def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False):
    """The numbers start, start + step, ... below end (above it for a negative step), as
    torch.arange: ``arange(end)`` counts from 0. int64 when start, end and step are all
    integers, else float32, unless `dtype` says otherwise."""
    if end is None:
        start, end = 0, start
    for value, name in ((start, "start"), (end, "end"), (step, "step")):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"arange(): {name} must be a real number, got "
                            f"{type(value).__name__}")
        if not math.isfinite(value):
            raise ValueError(f"arange(): {name} must be finite, got {value}")
    if step == 0:
        raise ValueError("arange(): step must be nonzero")
    if (end - start) * step < 0:
        raise ValueError(f"arange(): upper bound and larger bound inconsistent with step sign "
                         f"(start {start}, end {end}, step {step})")
    integral = all(isinstance(v, numbers.Integral) for v in (start, end, step))
    if dtype is None:
        dtype = np.dtype(np.int64) if integral else np.dtype(np.float32)
    else:
        dtype = _checked_dtype(dtype)
    if dtype.kind == "b":  # a count that is not 0 or 1 has no bool value, as PyTorch says
        raise NotImplementedError("arange() is not implemented for bool: pass dtype=int64")
    # computed in int64 or float64, then converted, as PyTorch computes in a wider type
    data = np.arange(start, end, step, dtype=np.int64 if integral else np.float64)
    if requires_grad:
        _check_can_require_grad(dtype)
    return Tensor(_move(data.astype(dtype), _check_device(device)), requires_grad)


def where(condition, input, other):
    """`input` where `condition` holds, else `other` (see pyrt.functional.where)."""
    return F.where(condition, input, other)


# ---- random numbers --------------------------------------------------------------------------

_generator = np.random.default_rng(0)


def checked_seed(seed, none_allowed=False):
    """`seed` as an int, ValueError unless it is a non-negative integer (or, if
    `none_allowed`, None, returned as it is): the seeds of manual_seed, DataLoader and
    make_xor."""
    if seed is None and none_allowed:
        return None
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer{' or None' * none_allowed}, "
                         f"got {seed!r}")
    return int(seed)


def manual_seed(seed):
    """Seed pyrt's random numbers (parameter initialisation, shuffling, randn/rand)."""
    global _generator
    _generator = np.random.default_rng(checked_seed(seed))
    return _generator


def generator():
    return _generator


def _draw_source(generator, name):
    """The NumPy generator a draw takes: pyrt's, or a pyrt.Generator passed as `generator`."""
    from pyrt.generator import source

    return source(generator, name)


def randn(*size, generator=None, requires_grad=False, device=None):
    device = _check_device(device)
    data = _draw_source(generator, "randn").standard_normal(_shape(size), dtype=np.float32)
    return Tensor(_move(data, device), requires_grad)


def rand(*size, generator=None, requires_grad=False, device=None):
    device = _check_device(device)
    data = _draw_source(generator, "rand").random(_shape(size), dtype=np.float32)
    return Tensor(_move(data, device), requires_grad)


def _random_like(input, name, draw, device, dtype, requires_grad):
    """A tensor like `input` (its shape; its device and dtype unless given) of numbers drawn
    by draw(shape, dtype) from pyrt's generator, float32 or float64: a floating-point dtype,
    as PyTorch's rand_like and randn_like take."""
    device, dtype = _like(input, name, device, dtype)
    dtype = _checked_dtype(dtype)
    if dtype.kind != "f":
        raise NotImplementedError(f"{name}(): numbers are drawn in a floating-point dtype, "
                                  f"not {dtype}: pass dtype=pyrt.float32")
    device = _check_device(device)
    if requires_grad:
        _check_can_require_grad(dtype)
    data = draw(input.shape, np.float64 if dtype == np.float64 else np.float32)
    return Tensor(_move(data.astype(dtype, copy=False), device), requires_grad)


def rand_like(input, *, dtype=None, device=None, requires_grad=False):
    """Uniform numbers in [0, 1) in a tensor like `input`, from the generator that
    pyrt.manual_seed seeds."""
    return _random_like(input, "rand_like", lambda shape, dt: _generator.random(shape, dt),
                        device, dtype, requires_grad)


def randn_like(input, *, dtype=None, device=None, requires_grad=False):
    """Standard normal numbers in a tensor like `input`, from the generator that
    pyrt.manual_seed seeds."""
    return _random_like(input, "randn_like",
                        lambda shape, dt: _generator.standard_normal(shape, dt),
                        device, dtype, requires_grad)


def randint(low=0, high=None, size=None, *, generator=None, dtype=None, device=None,
            requires_grad=False):
    """Integers drawn uniformly from [low, high) into a tensor of `size` (a tuple or list),
    as torch.randint: ``randint(high, size)`` or ``randint(low, high, size)``; int64 unless
    `dtype` says otherwise. From the generator that pyrt.manual_seed seeds."""
    if size is None and isinstance(high, (tuple, list)):  # randint(high, size)
        low, high, size = 0, low, high
    if high is None or size is None:
        raise TypeError("randint() takes (high, size) or (low, high, size): high and size are "
                        "required")
    for value, name in ((low, "low"), (high, "high")):
        if not F._integer(value):
            raise TypeError(f"randint(): argument '{name}' must be an int, got "
                            f"{type(value).__name__}")
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} "
                           f">= to={high}")
    shape = _sequence_size(size, "randint")
    dtype = int64 if dtype is None else _checked_dtype(dtype)
    if dtype.kind in "biu":  # every value drawn must fit the dtype, not wrap around
        info = np.iinfo(dtype) if dtype.kind != "b" else None
        lowest, highest = (0, 1) if info is None else (info.min, info.max)
        if low < lowest or high - 1 > highest:
            raise RuntimeError(f"randint(): [{low}, {high}) is out of the range of {dtype}, "
                               f"[{lowest}, {highest}]")
    device = _check_device(device)
    if requires_grad:
        _check_can_require_grad(dtype)
    data = _draw_source(generator, "randint").integers(low, high, size=shape, dtype=np.int64)
    return Tensor(_move(data.astype(dtype, copy=False), device), requires_grad)


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False):
    """The n x m matrix (n x n without m) with ones on the diagonal, zeros elsewhere; float32
    unless `dtype` says otherwise."""
    for value, name in ((n, "n"),) if m is None else ((n, "n"), (m, "m")):
        if not F._integer(value):
            raise TypeError(f"eye(): argument '{name}' must be an int, got "
                            f"{type(value).__name__}")
        if value < 0:
            raise RuntimeError(f"{name} must be greater or equal to 0, got {value}")
    dtype = float32 if dtype is None else _checked_dtype(dtype)
    device = _check_device(device)
    if requires_grad:
        _check_can_require_grad(dtype)
    return Tensor(_move(np.eye(n, m, dtype=dtype), device), requires_grad)


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False):
    """`steps` numbers evenly spaced from start to end, both included, as torch.linspace;
    float32 unless `dtype` says otherwise. As PyTorch computes them: the first half counted
    up from start, the second half down from end (so that both ends are exact), in the
    dtype's own arithmetic for floating point, in float64 (then toward zero) for integers."""
    start = _number_of(start, "linspace(): argument 'start'", RuntimeError)
    end = _number_of(end, "linspace(): argument 'end'", RuntimeError)
    for value, name in ((start, "start"), (end, "end")):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
            raise TypeError(f"linspace(): argument '{name}' must be a real number, got "
                            f"{type(value).__name__}")
    if not F._integer(steps):
        raise TypeError(f"linspace(): argument 'steps' must be an int, got "
                        f"{type(steps).__name__}")
    if steps < 0:
        raise RuntimeError(f"number of steps must be non-negative, got {steps}")
    dtype = float32 if dtype is None else _checked_dtype(dtype)
    if dtype.kind == "b":
        raise NotImplementedError("linspace() is not implemented for bool")
    if dtype.kind == "f":
        work = dtype
        start, end = F.scalar_as(start, dtype, "start"), F.scalar_as(end, dtype, "end")
    else:  # the ends as integers of the dtype first, as PyTorch converts them
        work = np.dtype(np.float64)
        start, end = (float(F.scalar_as(v, dtype, name))
                      for v, name in ((start, "start"), (end, "end")))
    i = np.arange(steps, dtype=work)
    with np.errstate(invalid="ignore"):  # infinite ends give nan, as in PyTorch
        step = (work.type(end) - work.type(start)) / work.type(max(steps - 1, 1))
        values = np.where(i < steps // 2, work.type(start) + step * i,
                          work.type(end) - step * (work.type(steps - 1) - i))
    if steps == 1:
        values = np.full(1, start, work)
    device = _check_device(device)
    if requires_grad:
        _check_can_require_grad(dtype)
    return Tensor(_move(values.astype(dtype), device), requires_grad)
