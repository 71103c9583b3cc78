"""functional_call and stack_module_state as torch.func has them: a module run with tensors
given in place of its parameters and buffers, and the parameters and buffers of several
modules of one class stacked for vmap (model ensembling)."""

from pyrt.nn.utils.stateless import swapped_call

__all__ = ["functional_call", "stack_module_state"]


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights=True, strict=False):
    """``module(*args, **kwargs)`` with the tensors of `parameter_and_buffer_dicts` (a dict
    of dotted name -> Tensor, or a tuple or list of such dicts, which must not share a name)
    in place of the module's own for the call. `args` that is not a tuple is one argument.
    tie_weights and strict as in pyrt.nn.utils.stateless.functional_call."""
    if isinstance(parameter_and_buffer_dicts, dict):
        values = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, (list, tuple)):
        for d in parameter_and_buffer_dicts:
            if not isinstance(d, dict):
                raise ValueError(  # noqa: TRY004 (torch's)
                    f"Expected all elements of parameter_and_buffer_dicts to be "
                    f"dictionaries but got {type(d)}")
        counts = {}
        for d in parameter_and_buffer_dicts:
            for key in d:
                counts[key] = counts.get(key, 0) + 1
        repeated = [key for key, count in counts.items() if count > 1]
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of "
                             "functional call is ambiguous")
        values = {key: value for d in parameter_and_buffer_dicts for key, value in d.items()}
    else:
        raise ValueError(  # noqa: TRY004 (torch's)
            f"Expected parameter_and_buffer_dicts to be a dict, or a list/tuple "
            f"of dicts, but got {type(parameter_and_buffer_dicts)}")
    return swapped_call(module, values, args, kwargs, tie_weights=tie_weights, strict=strict)


def stack_module_state(models):
    """(params, buffers): for each parameter and buffer name of `models` (modules of one
    class, all training or all evaluating), the tensors of every model stacked along a new
    first dim. The stacked parameters are new leaves, requiring grad where every model's
    does; the buffers do not require grad."""
    from pyrt.shapes import stack

    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or not any(m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same "
                           "training/eval mode.")
    if len({type(m) for m in models}) != 1:
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")

    def stacked(named, make_leaf):
        out = {}
        for name, _ in named(models[0]):
            tensors = [dict(named(m))[name] for m in models]
            value = stack([t.detach() for t in tensors])
            if make_leaf and all(t.requires_grad for t in tensors):
                value.requires_grad_(True)
            out[name] = value
        return out

    params = stacked(lambda m: list(m.named_parameters()), True)
    buffers = stacked(lambda m: list(m.named_buffers()), False)
    return params, buffers
