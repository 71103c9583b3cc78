"""Tensor: an array with a gradient, PyTorch's interface over pyrt's ops.

A Tensor wraps a float32 (or int64, for labels) array of its device's backend: a NumPy array
on the CPU. Arithmetic, matmul, reductions and activations go through ``pyrt.functional``,
which records what ``backward()`` needs.
"""

import numbers
import operator
from collections import namedtuple

import numpy as np

from pyrt import functional as F
from pyrt import shapes
from pyrt.autograd import run_backward

__all__ = ["Tensor", "tensor", "zeros", "ones", "randn", "rand", "empty", "manual_seed",
           "from_numpy"]

_CUDA_NAMES = ("cuda", "cuda:0")
# what max(dim) and min(dim) return, as torch.return_types.max and min
max_result = namedtuple("max", ("values", "indices"))
min_result = namedtuple("min", ("values", "indices"))
_DTYPE_NAMES = {np.dtype(np.int64): "Long", np.dtype(np.bool_): "Bool",
                np.dtype(np.int32): "Int"}
_ONE = np.ones((), np.float32)  # the gradient of a scalar with respect to itself (copied)


def _check_device(device):
    """The canonical name of `device`: "cpu", or "cuda:0" once the CUDA backend is loaded
    (a RuntimeError saying what is missing when it cannot be)."""
    name = str(device)
    if name == "cpu":
        return name
    if name in _CUDA_NAMES:
        from pyrt import cuda

        cuda.require()
        return cuda.DEVICE
    raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}")


def _move(array, device):
    """`array` on `device` (a canonical name): itself when it is there already."""
    if device == "cpu" and isinstance(array, np.ndarray):
        return array
    from pyrt import cuda

    return cuda.to_host(array) if device == "cpu" else cuda.to_device(array)


class Tensor:
    __slots__ = ("data", "grad", "requires_grad", "_parents", "_backward", "__weakref__")

    def __init__(self, data, requires_grad=False):
        self.data = data
        self.grad = None
        self.requires_grad = requires_grad
        self._parents = ()
        self._backward = None

    # ---- description -------------------------------------------------------------------------

    @property
    def shape(self):
        return self.data.shape

    @property
    def dtype(self):
        return self.data.dtype

    @property
    def ndim(self):
        return self.data.ndim

    @property
    def device(self):
        """"cpu", or "cuda:0" for a tensor whose data is a CuPy array."""
        return "cpu" if isinstance(self.data, np.ndarray) else "cuda:0"

    @property
    def is_leaf(self):
        return self._backward is None

    def size(self, dim=None):
        return self.data.shape if dim is None else self.data.shape[dim]

    def dim(self):
        return self.data.ndim

    def numel(self):
        return self.data.size

    def __len__(self):
        return len(self.data)

    def __bool__(self):
        if self.data.size != 1:
            what = "no values" if self.data.size == 0 else "more than one value"
            raise RuntimeError(f"Boolean value of Tensor with {what} is ambiguous")
        return bool(self.data.reshape(()).item())

    # comparisons are elementwise (so a tensor hashes by identity, as in PyTorch: the
    # optimizer's state is keyed by parameter)
    __hash__ = object.__hash__

    # NumPy's operators leave an array op Tensor to the Tensor's reflected operator (a
    # Tensor, as in PyTorch), instead of making an object array of one Tensor per element
    __array_ufunc__ = None

    def __repr__(self):
        grad = ", requires_grad=True" if self.requires_grad else ""
        if isinstance(self.data, np.ndarray):
            body = np.array2string(self.data, separator=", ", prefix="tensor(")
            return f"tensor({body}{grad})"
        body = np.array2string(self.data.get(), separator=", ", prefix="tensor(")
        return f"tensor({body}, device='{self.device}'{grad})"

    # ---- conversion --------------------------------------------------------------------------

    def numpy(self):
        """The data as a NumPy array (shared, not copied, on the CPU)."""
        if self.requires_grad and not self.is_leaf:
            raise RuntimeError("Can't call numpy() on a tensor that requires grad: "
                               "use tensor.detach().numpy()")
        if not isinstance(self.data, np.ndarray):
            raise TypeError(f"can't convert {self.device} device type tensor to numpy. Use "
                            "Tensor.cpu() to copy the tensor to host memory first.")
        return self.data

    def __array__(self, dtype=None, copy=None):
        """np.asarray(tensor): the data (as numpy() gives it; a copy when `dtype` differs or
        NumPy asks for one)."""
        data = self.numpy()
        if copy:
            return data.astype(dtype or data.dtype, copy=True)
        return data if dtype is None else data.astype(dtype, copy=False)

    def item(self):
        if self.data.size != 1:
            raise ValueError(f"only one-element tensors can be converted to a Python scalar, "
                             f"got shape {self.shape}")
        return self.data.reshape(()).item()

    def tolist(self):
        return self.data.tolist()

    def __float__(self):
        return float(self.item())

    def float(self):
        """This tensor as float32: itself if it is float32 already, else a converted copy."""
        if self.data.dtype == np.float32:
            return self
        return Tensor(self.data.astype(np.float32))

    def long(self):
        """A copy as int64 (floats rounded toward zero), outside autograd."""
        return Tensor(self.data.astype(np.int64))

    def detach(self):
        return Tensor(self.data)

    def clone(self):
        return F.mul(self, 1.0) if self.requires_grad else Tensor(self.data.copy())

    def to(self, device):
        """This tensor on `device` ("cpu" or "cuda"): itself if it is there already, else a
        copy (no gradient flows back through the copy)."""
        name = _check_device(device)
        if name == self.device:
            return self
        return Tensor(_move(self.data, name), requires_grad=self.requires_grad)

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
        if requires_grad and self.data.dtype != np.float32:
            raise RuntimeError("only floating-point tensors can require gradients")
        self.requires_grad = requires_grad
        return self

    # ---- in-place helpers (no gradient recorded) ----------------------------------------------

    def zero_(self):
        self.data[...] = 0
        return self

    def fill_(self, value):
        self.data[...] = value
        return self

    def copy_(self, other):
        src = other.data if isinstance(other, Tensor) else np.asarray(other)
        if isinstance(src, np.ndarray) is not isinstance(self.data, np.ndarray):
            src = _move(src, self.device)
        if src.shape != self.shape:
            raise ValueError(f"copy_: shape {src.shape} does not match {self.shape}")
        self.data[...] = src
        return self

    # ---- autograd ----------------------------------------------------------------------------

    def backward(self, gradient=None):
        """Accumulate d(self)/d(leaf) into ``.grad`` of every leaf that requires grad."""
        if not self.requires_grad:
            raise RuntimeError("element 0 of tensors does not require grad and does not have "
                               "a grad_fn")
        if gradient is None:
            if self.data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs: "
                                   f"pass gradient= for shape {self.shape}")
            g = _ONE.copy() if self.data.ndim == 0 else np.ones(self.shape, np.float32)
            if not isinstance(self.data, np.ndarray):
                from pyrt.cuda.autograd import implicit_gradient

                g = implicit_gradient(self.shape)
        else:
            g = gradient.data if isinstance(gradient, Tensor) else gradient
            if not hasattr(g, "shape"):
                g = np.asarray(g, np.float32)
            if g.shape != self.shape:
                raise ValueError(f"gradient has shape {g.shape}, expected {self.shape}")
            # on the tensor's device, float32 and contiguous
            g = _move(g, self.device)
            g = F._xp(g).ascontiguousarray(g, dtype=np.float32)
        run_backward(self, g)

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

    # ---- comparisons: elementwise, bool tensors outside autograd --------------------------------

    def _compare(self, other, op):
        if other is None:  # t == None is False, t != None True, as in PyTorch
            return op is operator.ne
        if isinstance(other, Tensor):
            other = other.data
        elif not isinstance(other, (numbers.Real, np.ndarray)):
            return NotImplemented
        # of 0-d data NumPy gives a scalar: kept an array
        return Tensor(F._xp(self.data).asarray(op(self.data, other)))

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
        return F.matmul(self, other)

    def __rmatmul__(self, other):
        return F.matmul(other, self)

    def __getitem__(self, index):
        if isinstance(index, Tensor):
            index = index.data
        return F.index_rows(self, index)

    def matmul(self, other):
        return F.matmul(self, other)

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

    # ---- reductions: float32 through the kernels, with gradients; integers and bools (counts,
    # labels) through NumPy or CuPy, as PyTorch reduces them

    def _exact(self):
        """Whether the data holds integers or bools, reduced without autograd."""
        return self.data.dtype.kind in "biu"

    def sum(self, dim=None, keepdim=False):
        if self._exact():
            xp = F._xp(self.data)  # a full sum is a NumPy scalar: kept an array
            return Tensor(xp.asarray(xp.sum(self.data, axis=dim, keepdims=keepdim,
                                            dtype=np.int64)))
        return F.sum(self, dim, keepdim)

    def mean(self, dim=None, keepdim=False):
        if self._exact():
            name = _DTYPE_NAMES.get(self.data.dtype, str(self.data.dtype))
            raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be "
                               f"either a floating point or complex dtype. Got: {name}")
        return F.mean(self, dim, keepdim)

    def max(self, dim=None, keepdim=False):
        """The largest element; with `dim`, (values, indices) along it, as torch.max."""
        if self._exact():
            return self._exact_extreme(dim, keepdim, "max", max_result)
        if dim is None:
            return F.max(self)
        return max_result(F.max(self, dim, keepdim), self.argmax(dim, keepdim))

    def min(self, dim=None, keepdim=False):
        """The smallest element; with `dim`, (values, indices) along it, as torch.min."""
        if self._exact():
            return self._exact_extreme(dim, keepdim, "min", min_result)
        flipped = F.neg(self)  # min is -max(-x): its gradient goes to the first minimum
        if dim is None:
            return F.neg(F.max(flipped))
        return min_result(F.neg(F.max(flipped, dim, keepdim)), flipped.argmax(dim, keepdim))

    def _exact_extreme(self, dim, keepdim, name, result):
        xp = F._xp(self.data)
        values = xp.asarray(getattr(xp, name)(self.data, axis=dim, keepdims=keepdim))
        if dim is None:
            return Tensor(values)
        indices = getattr(xp, "arg" + name)(self.data, axis=dim, keepdims=keepdim)
        return result(Tensor(values), Tensor(indices.astype(np.int64, copy=False)))

    def argmax(self, dim=None, keepdim=False):
        if self._exact():
            xp = F._xp(self.data)
            return Tensor(xp.asarray(xp.argmax(self.data, axis=dim, keepdims=keepdim),
                                     dtype=np.int64))
        from pyrt import ops

        return Tensor(ops.argmax(self.data, dim, keepdims=keepdim))

    def softmax(self, dim=-1):
        return F.softmax(self, dim)

    def log_softmax(self, dim=-1):
        return F.log_softmax(self, dim)

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return F.reshape(self, shape)

    view = reshape

    def flatten(self, start_dim=0):
        start = shapes.dim_index(start_dim, self.ndim)
        return F.reshape(self, self.shape[:start] + (-1,))

    @property
    def T(self):
        return F.transpose(self)

    def t(self):
        return F.transpose(self)

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

    def contiguous(self):
        """Itself: every op returns C-contiguous data (a tensor made around a strided array
        by hand gets a contiguous copy)."""
        if not self.data.flags.c_contiguous:
            return F.reshape(self, self.shape)
        return self


# ---- creation --------------------------------------------------------------------------------


def _as_array(data, dtype):
    if isinstance(data, Tensor):
        data = data.data
    arr = np.asarray(data)
    if dtype is not None:
        return arr.astype(dtype, copy=False)
    if arr.dtype.kind in "iub":
        return arr.astype(np.int64, copy=False)
    if arr.dtype.kind == "f":
        return arr.astype(np.float32, copy=False)
    raise TypeError(f"data must hold real numbers, got {type(data).__name__} of dtype "
                    f"{arr.dtype}")


def tensor(data, requires_grad=False, device="cpu", dtype=None):
    """A tensor holding a copy of `data`: floats become float32, integers int64."""
    device = _check_device(device)
    if isinstance(data, Tensor) and data.device != "cpu":
        data = data.data.get()
    arr = _as_array(data, dtype).copy()  # C-contiguous, 0-d data kept 0-d
    if requires_grad and arr.dtype != np.float32:
        raise RuntimeError("only floating-point tensors can require gradients")
    return Tensor(_move(arr, device), requires_grad=requires_grad)


def from_numpy(array):
    """A tensor sharing `array`'s memory (which must be float32 or int64 and contiguous)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"expected a numpy.ndarray, got {type(array).__name__}")
    if array.dtype not in (np.float32, np.int64) or not array.flags.c_contiguous:
        raise ValueError("from_numpy needs a C-contiguous float32 or int64 array")
    return Tensor(array)


def _shape(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    for n in size:
        if not isinstance(n, numbers.Integral) or n < 0:
            raise ValueError(f"size must be non-negative integers, got {size}")
    return tuple(int(n) for n in size)


def zeros(*size, requires_grad=False, device="cpu"):
    device = _check_device(device)
    data = np.zeros(_shape(size), np.float32)
    return Tensor(_move(data, device), requires_grad)


def ones(*size, requires_grad=False, device="cpu"):
    device = _check_device(device)
    data = np.ones(_shape(size), np.float32)
    return Tensor(_move(data, device), requires_grad)


def empty(*size, requires_grad=False, device="cpu"):
    device = _check_device(device)
    data = np.empty(_shape(size), np.float32)
    return Tensor(_move(data, device), requires_grad)


# ---- random numbers --------------------------------------------------------------------------

_generator = np.random.default_rng(0)


def manual_seed(seed):
    """Seed pyrt's random numbers (parameter initialisation, shuffling, randn/rand)."""
    global _generator
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    _generator = np.random.default_rng(int(seed))
    return _generator


def generator():
    return _generator


def randn(*size, requires_grad=False, device="cpu"):
    device = _check_device(device)
    data = _generator.standard_normal(_shape(size), dtype=np.float32)
    return Tensor(_move(data, device), requires_grad)


def rand(*size, requires_grad=False, device="cpu"):
    device = _check_device(device)
    data = _generator.random(_shape(size), dtype=np.float32)
    return Tensor(_move(data, device), requires_grad)
