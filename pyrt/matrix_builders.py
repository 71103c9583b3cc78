"""Matrices built from a vector, with PyTorch's names and gradients: vander (the Vandermonde
matrix of powers of its elements) and diagflat (the flattened input on a diagonal).

vander is computed as torch computes it, as the running product along each row of
[1, x, x, ..., x] (cumprod), so that its gradient is cumprod's and no power of zero is
differentiated; diagflat is flatten followed by diag.
"""

from pyrt.functional import _integer, _tensor

__all__ = ["diagflat", "vander"]


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of the 1-D `x`: column j holds x ** (N - 1 - j), or x ** j when
    `increasing`; N columns (len(x) by default). Integers and bools give int64."""
    if not isinstance(x, _tensor()):
        raise TypeError(f"vander(): argument 'x' must be a Tensor, got {type(x).__name__}")
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    if N is None:
        N = x.shape[0]
    if not _integer(N):
        raise TypeError(f"vander(): argument 'N' must be an int, got {type(N).__name__}")
    if N < 0:
        raise RuntimeError("N must be non-negative.")
    from pyrt.shapes import cat

    x = x if x._data.dtype.kind == "f" else x.long()
    n = x.shape[0]
    if N == 0:
        return x.new_zeros((n, 0))
    ones = x.new_ones((n, 1))
    columns = cat([ones, x.unsqueeze(1).expand(n, N - 1)], 1) if N > 1 else ones
    powers = columns.cumprod(1)  # 1, x, x^2, ... along each row
    return powers if increasing else powers.flip(1)


def diagflat(input, offset=0):
    """The square matrix whose diagonal `offset` holds input's elements, flattened, and
    zeros elsewhere (torch.diagflat)."""
    if not isinstance(input, _tensor()):
        raise TypeError(f"diagflat(): argument 'input' must be a Tensor, got "
                        f"{type(input).__name__}")
    if not _integer(offset):
        raise TypeError(f"diagflat(): argument 'offset' must be an int, got "
                        f"{type(offset).__name__}")
    return input.reshape(-1).diag(int(offset))
