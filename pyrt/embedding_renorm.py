"""torch.embedding_renorm_: the rows of an embedding table that some indices pick, scaled
down in place to a largest norm, as nn.Embedding(max_norm=...) and nn.EmbeddingBag do before
their lookup (renorm_rows)."""

import numbers

__all__ = ["embedding_renorm_"]


def embedding_renorm_(input, indices, max_norm, norm_type):
    """Each row of `input` (2-D) that `indices` (integers, any shape) names, whose
    `norm_type`-norm exceeds `max_norm`, multiplied by max_norm / (norm + 1e-7); each row once
    however often it is named. In place and outside autograd, as torch's; returns input."""
    from pyrt.functional import _xp
    from pyrt.tensor import Tensor

    for value, name in ((input, "self"), (indices, "indices")):
        if not isinstance(value, Tensor):
            raise TypeError(f"embedding_renorm_(): argument '{name}' must be a Tensor, got "
                            f"{type(value).__name__}")
    if input._data.ndim != 2:
        raise RuntimeError(f"embedding_renorm_(): input must be a 2-D table of rows, got "
                           f"{input._data.ndim}-D")
    if indices._data.dtype.kind not in "iu":
        raise RuntimeError(f"Expected tensor for argument #2 'indices' to have one of the "
                           f"following scalar types: Long, Int; but got {indices.dtype} "
                           f"instead (while checking arguments for embedding_renorm_)")
    if input._data.dtype.kind != "f":
        raise RuntimeError(f"embedding_renorm_(): input must be floating point, got "
                           f"{input.dtype}")
    check_norm_options("embedding_renorm_", max_norm, norm_type)
    if input._requires_grad and input._backward is None:
        from pyrt.autograd import is_grad_enabled

        if is_grad_enabled():
            raise RuntimeError("a leaf Variable that requires grad is being used in an "
                               "in-place operation.")
    xp = _xp(input._data)
    rows = xp.unique(indices._data.reshape(-1))
    if rows.size and (rows.min() < 0 or rows.max() >= input.shape[0]):
        raise IndexError(f"embedding_renorm_(): index out of range for a table of "
                         f"{input.shape[0]} rows")
    renorm_rows(input, rows, max_norm, norm_type)
    return input


def check_norm_options(op, max_norm, norm_type):
    """TypeError unless `max_norm` and `norm_type` are real numbers (torch's floats)."""
    for value, name in ((max_norm, "max_norm"), (norm_type, "norm_type")):
        if not isinstance(value, numbers.Real):
            raise TypeError(f"{op}(): argument '{name}' must be float, not "
                            f"{type(value).__name__}")


def renorm_rows(table, rows, max_norm, norm_type):
    """Scale down in place each row of the tensor `table` at the indices `rows` (an array of
    the table's backend, every index in range, each row once) whose norm exceeds max_norm,
    as torch does: times max_norm / (norm + 1e-7), the norm taken in float64. Outside
    autograd; the write is recorded, so that a graph that read the old rows refuses to run
    backward."""
    from pyrt.autograd import mark_modified
    from pyrt.functional import _xp

    data = table._data
    xp = _xp(data)
    picked = data[rows].astype(xp.float64)
    norms = xp.linalg.norm(picked, ord=float(norm_type), axis=1)
    scale = xp.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
    data[rows] = (picked * scale[:, None]).astype(data.dtype)
    mark_modified(data)
