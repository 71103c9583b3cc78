"""sum_to_size: a tensor summed down to a size it could be broadcast from (the adjoint of
expand, as autograd uses it), as torch.Tensor.sum_to_size."""

from pyrt.functional import _integer

__all__ = ["sum_to_size"]


def sum_to_size(input, *size):
    """input summed over the dims that broadcasting `size` to input's shape would add or
    stretch, so that the result has `size` (Tensor.sum_to_size)."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    if not all(_integer(n) for n in size):
        raise TypeError(f"sum_to_size(): size must be a tuple of ints, got {size!r}")
    shape = tuple(input.shape)
    size = tuple(int(n) for n in size)
    lead = len(shape) - len(size)
    if lead < 0 or any(n != 1 and n != m for n, m in zip(size, shape[lead:])):
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size "
                           f"{{{list(shape)}}}.")
    out = input.sum(tuple(range(lead))) if lead else input
    stretched = tuple(k for k, (n, m) in enumerate(zip(size, shape[lead:])) if n == 1 != m)
    if stretched:
        out = out.sum(stretched, keepdim=True)
    return out

