"""torch.cond and torch.while_loop, run as the Python control flow they stand for (torch
compiles them into one graph; pyrt, which runs each op as it comes, takes the branch or
repeats the body). Their arguments are checked as torch checks them."""

import numbers

__all__ = ["cond", "while_loop"]


def _predicate(pred, name):
    """`pred` (a bool, a number or a one-element tensor) as a Python bool."""
    from pyrt.tensor import Tensor

    if isinstance(pred, Tensor):
        if pred._data.size != 1:
            raise RuntimeError(f"Expected {name} to be bool or single-element tensor, but "
                               f"got {pred!r}.")
        return bool(pred._data.reshape(()).item())
    if isinstance(pred, numbers.Real):
        return bool(pred)
    raise RuntimeError(f"Expected {name} to be bool or tensor, but got {pred}.")


def _sequence(value, name):
    if not isinstance(value, (tuple, list)):
        raise RuntimeError(f"Expect {name} to be a tuple or a list, got "  # noqa: TRY004
                           f"{type(value).__name__}.")
    return tuple(value)


def cond(pred, true_fn, false_fn, operands=()):
    """true_fn(*operands) if `pred` holds, else false_fn(*operands)."""
    if not callable(true_fn) or not callable(false_fn):
        raise RuntimeError("Expect both branches to be callable.")  # noqa: TRY004 (torch's)
    operands = _sequence(operands, "operands")
    return (true_fn if _predicate(pred, "pred") else false_fn)(*operands)


def while_loop(cond_fn, body_fn, carried_inputs):
    """Run ``carried = body_fn(*carried)`` while cond_fn(*carried) holds (a bool or a
    one-element tensor), starting from `carried_inputs`; the last carried values, as a tuple.
    body_fn must return as many values as it takes."""
    if not callable(cond_fn) or not callable(body_fn):
        raise RuntimeError(  # noqa: TRY004 (torch's)
            "Expect cond_fn and body_fn to be callable.")
    carried = _sequence(carried_inputs, "carried_inputs")
    while _predicate(cond_fn(*carried), "cond_fn's result"):
        out = body_fn(*carried)
        out = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        if len(out) != len(carried):
            raise RuntimeError(f"body_fn should return the same number of elements as "
                               f"carried_inputs: {len(carried)}, got {len(out)}")
        carried = out
    return carried
