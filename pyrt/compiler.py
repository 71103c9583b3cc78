"""torch.compile, as a function that returns its argument: pyrt runs every op as it is called
(its kernels are compiled ahead of time), so a program that compiles its model runs as it
would uncompiled. The arguments are checked as torch checks them."""

__all__ = ["compile"]

_MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")
_BACKENDS = ("cudagraphs", "eager", "aot_eager", "inductor")


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None,
            options=None, disable=False):
    """`model` (a function or a Module) unchanged; without `model`, a decorator that returns
    the function it decorates: ``@pyrt.compile`` and ``@pyrt.compile(mode=...)`` both work.
    `mode` must be one of torch's, and not given with `options`; a `backend` is a callable
    or one of torch's names."""
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be "
                           "specified at the same time.")
    if mode is not None and mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(_MODES)}")
    if options is not None and not isinstance(options, dict):
        raise TypeError(f"compile(): options must be a dict, got {type(options).__name__}")
    if not callable(backend) and backend not in _BACKENDS:
        raise RuntimeError(f"Invalid backend: {backend!r}, expected one of "
                           f"{', '.join(_BACKENDS)} or a callable")
    if model is None:
        return lambda fn: compile(fn, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                                  mode=mode, options=options, disable=disable)
    if not callable(model):
        raise TypeError(f"compile(): a callable function is expected, but "
                        f"{type(model).__name__} is provided")
    return model
