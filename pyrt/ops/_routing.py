"""Routing ``pyrt.ops`` calls on CuPy arrays to the CUDA backend's table (pyrt.cuda.ops).

Until the CUDA backend loads, every public name of pyrt.ops is the CPU op itself: a process
that never touches a GPU pays nothing for routing. When the backend loads (the first tensor
moved to "cuda", or ``pyrt.cuda.require()``), each name that both backends implement is
rebound, here and only here, to a router: a call with a CuPy array among its arguments
(positional or keyword, ``out=`` included) runs the CUDA op, any other call the CPU op,
unchanged. A call mixing NumPy and CuPy arrays so reaches the CUDA op, whose checks refuse it
with PyTorch's mixed-device RuntimeError: nothing is copied between devices behind the
caller's back.
"""

import pyrt.ops as _ops

__all__ = ["route_device_arrays"]

_routed = False


def _router(cpu, cuda, device_type):
    def op(*args, **kwargs):
        for a in args:
            if type(a) is device_type:
                return cuda(*args, **kwargs)
        if kwargs:
            for a in kwargs.values():
                if type(a) is device_type:
                    return cuda(*args, **kwargs)
        return cpu(*args, **kwargs)

    op.__name__, op.__qualname__, op.__doc__ = cpu.__name__, cpu.__qualname__, cpu.__doc__
    op.__wrapped__ = cpu
    return op


def route_device_arrays():
    """Rebind pyrt.ops' public names to routers (once; later calls do nothing)."""
    global _routed
    if _routed:
        return
    import cupy

    from pyrt.cuda.ops import OPS

    for name in _ops.__all__:
        if name in OPS:
            setattr(_ops, name, _router(getattr(_ops, name), OPS[name], cupy.ndarray))
    _routed = True
