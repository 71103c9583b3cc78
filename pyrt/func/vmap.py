"""vmap: a function of one example mapped over a batch, as torch.func.vmap.

PyTorch runs the function once on "batched tensors" that carry the batch dimension through
every op. pyrt has no batching rules: vmap runs the function once per batch element, on
views of the inputs with the mapped dimension selected away, and stacks the results along
out_dims. The values are exactly those of the loop; the cost is that of the loop (B calls
of the function for a batch of B, no vectorization), and the outputs of every call are
held until they are stacked. Gradients flow through the selections and the stack, so a
vmapped function can be differentiated, and grad(), vjp() and jacrev() can be vmapped
(per-sample gradients).

randomness says what random draws inside the function do: "error" refuses them, "different"
lets each call draw its own numbers (the loop's draws), "same" restores the generator before
each call so that every element gets the numbers of the first.
"""

import functools
import importlib

from pyrt.func.pytree import broadcast_prefix, flatten, spec_str, unflatten

__all__ = ["vmap"]

_RANDOMNESS = ("error", "different", "same")


def _tensor_module():
    """The module pyrt.tensor (the attribute of that name is the function pyrt.tensor)."""
    return importlib.import_module("pyrt.tensor")


class _RandomnessRefused:
    """Stands in for pyrt's generator inside vmap(randomness="error"): every draw raises."""

    def __getattr__(self, name):
        raise RuntimeError("vmap: called random operation while in randomness error mode. "
                           "Please either use the 'same' or 'different' randomness flags on "
                           "vmap or perform the randomness operation out of vmap")


def check_randomness(randomness):
    if randomness not in _RANDOMNESS:
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")


def _is_dim(value):
    return value is None or (isinstance(value, int) and not isinstance(value, bool))


def _name(func):
    return getattr(func, "__name__", type(func).__name__)


def _batched_inputs(func, in_dims, args):
    """(flat leaves, their spec, each leaf's mapped dim or None, the batch size)."""
    from pyrt.tensor import Tensor

    where = f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>)"
    if not isinstance(in_dims, (int, tuple)) or isinstance(in_dims, bool):
        raise ValueError(  # noqa: TRY004 (torch's)
            f"{where}: expected `in_dims` to be int or a (potentially nested) "
            f"tuple matching the structure of inputs, got: {type(in_dims)}.")
    if not args:
        raise ValueError(f"vmap({_name(func)})(<inputs>): got no inputs. Maybe you forgot to "
                         "add inputs, or you are trying to vmap over a function with no "
                         "inputs. The latter is unsupported.")
    leaves, spec = flatten(args)
    dims = broadcast_prefix(in_dims if isinstance(in_dims, tuple) else (in_dims,) * len(args),
                            args, _is_dim)
    if dims is None:
        raise ValueError(f"{where}: in_dims is not compatible with the structure of `inputs`. "
                         f"in_dims has structure {spec_str(flatten(in_dims)[1])} but inputs "
                         f"has structure {spec_str(spec)}.")
    sizes, mapped = [], []
    for leaf, dim in zip(leaves, dims):
        if dim is None:
            mapped.append(None)
            continue
        if not isinstance(leaf, Tensor):
            raise ValueError(  # noqa: TRY004 (torch's)
                f"{where}: Got in_dim={dim} for an input but the input is of type "
                f"{type(leaf)}. We cannot vmap over non-Tensor arguments, please "
                "use None as the respective in_dim")
        if not -leaf.ndim <= dim < leaf.ndim:
            raise ValueError(f"{where}: Got in_dim={dim} for some input, but that input is a "
                             f"Tensor of dimensionality {leaf.ndim} so expected in_dim to "
                             f"satisfy {-leaf.ndim} <= in_dim < {leaf.ndim}.")
        dim %= leaf.ndim
        mapped.append(dim)
        sizes.append(leaf.shape[dim])
    if not sizes:
        raise ValueError(f"{where}: at least one input must be a Tensor batched along a "
                         "dimension (an in_dim that is not None); got none.")
    if len(set(sizes)) > 1:
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped "
                         f"dimension, got sizes {sizes} for the mapped dimension")
    return leaves, spec, mapped, sizes[0]


def _element(leaves, spec, mapped, i):
    """The arguments of the call for batch element i (element 0 of zeros when i is None:
    the stand-in call of an empty batch)."""
    from pyrt.functional import _xp
    from pyrt.tensor import Tensor

    def pick(leaf, dim):
        if dim is None:
            return leaf
        if i is None:
            shape = leaf.shape[:dim] + leaf.shape[dim + 1:]
            return Tensor(_xp(leaf._data).zeros(shape, leaf._data.dtype))
        return leaf.select(dim, i)

    return unflatten([pick(leaf, dim) for leaf, dim in zip(leaves, mapped)], spec)


def _call_each(func, calls, randomness, kwargs):
    """func(*args, **kwargs) for each args of `calls`, drawing random numbers as
    `randomness` says."""
    module = _tensor_module()
    if randomness == "error":
        saved, module._generator = module._generator, _RandomnessRefused()
        try:
            return [func(*args, **kwargs) for args in calls]
        finally:
            module._generator = saved
    if randomness == "same" and not isinstance(module._generator, _RandomnessRefused):
        start = module._generator.bit_generator.state
        results = []
        for args in calls:
            module._generator.bit_generator.state = start
            results.append(func(*args, **kwargs))
        return results
    return [func(*args, **kwargs) for args in calls]


def _stack_outputs(func, out_dims, results, empty):
    """The per-element outputs stacked along their out_dims, in their structure."""
    from pyrt.functional import _xp
    from pyrt.shapes import stack
    from pyrt.tensor import Tensor

    name = _name(func)
    flat, spec = flatten(results[0])
    dims = broadcast_prefix(out_dims, results[0], _is_dim)
    if dims is None:
        raise ValueError(f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not "
                         f"compatible with the structure of `outputs`. out_dims has structure "
                         f"{spec_str(flatten(out_dims)[1])} but outputs has structure "
                         f"{spec_str(spec)}.")
    columns = [flat]
    for result in results[1:]:
        leaves, other = flatten(result)
        if other != spec:
            raise ValueError(f"vmap({name}, ...): `{name}` returned outputs of different "
                             f"structures for different batch elements: {spec_str(spec)} "
                             f"and {spec_str(other)}")
        columns.append(leaves)
    out = []
    for k, (first, dim) in enumerate(zip(flat, dims)):
        values = [column[k] for column in columns]
        if dim is None:
            if any(not _same(first, value) for value in values[1:]):
                raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor "
                                 "when out_dim is None")
            out.append(first)
            continue
        if not isinstance(first, Tensor):
            raise ValueError(  # noqa: TRY004 (torch's)
                f"vmap({name}, ...): `{name}` must only return Tensors, got type "
                f"{type(first)}. Did you mean to set out_dims= to None for "
                "output?")
        if empty:
            if not -first.ndim - 1 <= dim <= first.ndim:
                raise IndexError(f"Dimension out of range (expected to be in range of "
                                 f"[{-first.ndim - 1}, {first.ndim}], but got {dim})")
            xp = _xp(first._data)
            data = xp.moveaxis(xp.empty((0,) + tuple(first.shape), first._data.dtype), 0, dim)
            out.append(Tensor(data))
        else:
            out.append(stack(values, dim))
    return unflatten(out, spec)


def _same(a, b):
    from pyrt.functional import _xp
    from pyrt.tensor import Tensor

    if isinstance(a, Tensor) and isinstance(b, Tensor):
        return a.shape == b.shape and bool(_xp(a._data).array_equal(a._data, b._data))
    if isinstance(a, Tensor) or isinstance(b, Tensor):
        return False
    return a is b or a == b


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """The function that maps `func` over a dimension of its inputs: in_dims gives, per
    positional argument (or once for all), the dimension of each tensor to map over (None:
    the argument is passed whole to every call), nested like the arguments where they are
    tuples, lists or dicts; keyword arguments are never mapped. The outputs (nested as func
    returns them) are stacked along out_dims; an out_dim of None returns an output that is
    the same for every element as it is. chunk_size only bounds how many elements PyTorch
    vectorizes at once; here every element runs on its own anyway. See the module docstring
    for the cost."""
    check_randomness(randomness)
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got "
                         f"{chunk_size})")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        leaves, spec, mapped, size = _batched_inputs(func, in_dims, args)
        if size == 0:  # one call on zeros gives the outputs' shapes; its draws are undone
            from pyrt.random import fork_rng

            with fork_rng():
                results = _call_each(func, [_element(leaves, spec, mapped, None)],
                                     randomness, kwargs)
        else:
            calls = [_element(leaves, spec, mapped, i) for i in range(size)]
            results = _call_each(func, calls, randomness, kwargs)
        return _stack_outputs(func, out_dims, results, empty=size == 0)

    return wrapped
