"""Anomaly detection for autograd, as torch.autograd.detect_anomaly: while it is on, each op
recorded in a graph remembers the stack of the forward call that made it, and backward()
checks what each backward closure returns. A closure that returns NaN raises
``RuntimeError: Function 'MulBackward0' returned nan values in its 0th output.``; any error in
a closure is preceded by a warning that shows the forward stack of its op.

Nothing of this costs anything while the mode is off: the backward loop tests the mode once
per backward() call (autograd.run_backward), and the forward pass records nothing. While it
is on, ops are seen through a profile function (sys.setprofile) that catches each return of
functional._make, the one place that records an op; pyrt's tensor slots have no room for a
stack, so it is kept beside the op's backward closure, which travels with the tensor. The
profile function sees the calls of the thread that switched the mode on (as sys.setprofile
does); ops made on other threads are still checked for NaN, without their forward stack.
"""

import contextlib
import sys
import traceback
import warnings
import weakref

__all__ = ["detect_anomaly", "is_anomaly_check_nan_enabled", "is_anomaly_enabled",
           "set_detect_anomaly"]


class _AnomalyMode:
    __slots__ = ("check_nan", "enabled")

    def __init__(self):
        self.enabled = False
        self.check_nan = True


_anomaly = _AnomalyMode()  # one switch for all threads, as in PyTorch
_origins = {}  # id(backward closure) -> (weak reference to it, op name, forward stack)
_previous_profile = []  # the profile function that was in place before the mode came on


def is_anomaly_enabled():
    """Whether anomaly detection is on."""
    return _anomaly.enabled


def is_anomaly_check_nan_enabled():
    """Whether anomaly detection checks the gradients for NaN."""
    return _anomaly.check_nan


def _apply(enabled, check_nan):
    was = _anomaly.enabled
    _anomaly.enabled, _anomaly.check_nan = enabled, check_nan
    if enabled and not was:
        _previous_profile.append(sys.getprofile())
        sys.setprofile(_profile)
    elif was and not enabled:
        sys.setprofile(_previous_profile.pop() if _previous_profile else None)
        _origins.clear()


class set_detect_anomaly(contextlib.ContextDecorator):
    """Turn anomaly detection on or off (with NaN checks if `check_nan`). As
    set_grad_enabled, it applies as soon as it is called; as a context manager or decorator
    the previous setting comes back at the end."""

    def __init__(self, mode, check_nan=True):
        if not isinstance(mode, bool):
            raise TypeError(f"set_detect_anomaly(): mode must be a bool, got "
                            f"{type(mode).__name__}")
        self.prev = (_anomaly.enabled, _anomaly.check_nan)
        self.mode = (mode, bool(check_nan))
        _apply(*self.mode)

    def _recreate_cm(self):
        return _AnomalyContext(*self.mode)

    def __call__(self, func):
        _apply(*self.prev)  # decorating applies nothing: each call does
        return super().__call__(func)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _apply(*self.prev)
        return False


class _AnomalyContext(contextlib.ContextDecorator):
    """A block (or each call of a decorated function) with anomaly detection set to
    (enabled, check_nan), the previous setting restored at its end."""

    def __init__(self, enabled, check_nan):
        self.mode = (enabled, bool(check_nan))
        self.prev = None

    def _recreate_cm(self):
        return type(self)(*self.mode)

    def __enter__(self):
        self.prev = (_anomaly.enabled, _anomaly.check_nan)
        _apply(*self.mode)
        return self

    def __exit__(self, *exc):
        _apply(*self.prev)
        return False


class detect_anomaly(_AnomalyContext):
    """``with pyrt.autograd.detect_anomaly():`` (or as a decorator) turns anomaly detection
    on for a block: ops remember their forward stack, and backward() raises on a closure
    that returns NaN (when `check_nan`), naming the op and showing that stack."""

    def __init__(self, check_nan=True):
        super().__init__(True, check_nan)

    def _recreate_cm(self):
        return detect_anomaly(self.mode[1])

    def __enter__(self):
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime "
                      "and should only be enabled for debugging.", stacklevel=2)
        return super().__enter__()


# ---- recording the forward stack ------------------------------------------------------------

_make_code = None  # functional._make.__code__, looked up when the mode first comes on


def _profile(frame, event, arg):
    """sys.setprofile's function while the mode is on: on the return of functional._make
    with a recorded op, remember the op's name and the stack of its forward call."""
    global _make_code
    if event != "return":
        return
    if _make_code is None:
        from pyrt.functional import _make

        _make_code = _make.__code__
    if frame.f_code is _make_code and arg is not None:
        backward = getattr(arg, "_backward", None)
        if backward is not None:
            record(backward, _op_name(frame.f_back), frame.f_back)


def record(backward, name, frame=None):
    """Remember, for the backward closure `backward` of an op named `name` (as PyTorch names
    its grad_fn: MulBackward0), the stack of the forward call (from `frame`, the caller's by
    default). Called while the mode is on only."""
    if frame is None:
        frame = sys._getframe(1)
    key = id(backward)
    try:
        ref = weakref.ref(backward, lambda _, key=key: _origins.pop(key, None))
    except TypeError:  # a closure that takes no weak reference: none is kept for it
        return
    stack = traceback.StackSummary.extract(traceback.walk_stack(frame), lookup_lines=False)
    stack.reverse()
    _origins[key] = (ref, name, stack)


def _op_name(frame):
    """The grad_fn name of the op whose forward called functional._make from `frame`: the
    innermost function of the call stack with a public name (helpers start with "_", dunder
    methods such as __mul__ count as public), in PyTorch's form (LogSoftmaxBackward0)."""
    while frame is not None:
        name = frame.f_code.co_name
        if name.startswith("__") and name.endswith("__") and len(name) > 4:
            name = name[2:-2]
            if name.startswith("r") and name[1:] in _REFLECTED:  # __rmul__: mul
                name = name[1:]
            return _backward_name(name)
        if not name.startswith(("_", "<")) and name not in ("backward", "forward", "apply"):
            return _backward_name(name)
        frame = frame.f_back
    return "Backward0"


_REFLECTED = {"add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and",
              "or", "xor", "lshift", "rshift", "div"}


def _backward_name(name):
    return "".join(part[:1].upper() + part[1:] for part in name.split("_")) + "Backward0"


# ---- checking the backward pass -------------------------------------------------------------


def name_of(backward):
    """The name of the op whose backward closure is `backward`: the recorded one, that of a
    Function (MyFnBackward), or one made from the closure's own name."""
    origin = _origins.get(id(backward))
    if origin is not None and origin[0]() is backward:
        return origin[1]
    name = getattr(backward, "name", None)
    if callable(name):
        name = name()
    if isinstance(name, str):
        return name
    from pyrt.autograd import _Hooked

    if isinstance(backward, _Hooked):  # a tensor's hooks around its op's closure
        return name_of(backward.backward)
    qualname = getattr(backward, "__qualname__", type(backward).__name__)
    owner = qualname.split(".")[0]
    if owner == "_fused":  # cross_entropy's fused kernel: torch's closure is nll_loss's
        return "NllLossBackward0"
    if owner == "_unary":  # the shared closure of the unary kernels: its kernel names it
        from pyrt.functional import _UNARY_NAMES

        cells = dict(zip(backward.__code__.co_freevars, backward.__closure__ or ()))
        if "code" in cells:
            return _backward_name(_UNARY_NAMES[cells["code"].cell_contents])
        return _backward_name(cells["backward_op"].cell_contents.__name__[:-len("_backward")])
    return _backward_name(owner.strip("_<>") or "unknown")


def _forward_stack(backward):
    origin = _origins.get(id(backward))
    if origin is None or origin[0]() is not backward:
        return ("No forward pass information available. Enable detect anomaly during "
                "forward pass for more information.")
    return "".join(origin[2].format())


def checked_call(node, backward, g):
    """The gradients of the inputs of `node` from `backward`, its closure, on its gradient
    `g` (None: no gradient reached it) while anomaly detection is on: an error (an input
    written in place since the forward, a NaN in what the closure returns with check_nan)
    is preceded by a warning that shows the forward stack of the op."""
    try:
        if node._epoch < _writes_count():
            from pyrt.autograd import _check_inputs_unchanged

            _check_inputs_unchanged(node)
        if g is None:
            return (None,) * len(node._parents)
        grads = backward(g)
        if _anomaly.check_nan:
            for i, grad in enumerate(grads):
                # (a Function's outputs pass packs of gradients on: its node checks them)
                if getattr(grad, "dtype", None) is not None and grad.dtype.kind == "f" \
                        and bool(grad.size and _isnan_any(grad)):
                    raise RuntimeError(f"Function '{name_of(backward)}' returned nan values "
                                       f"in its {i}th output.")
    except Exception:
        warnings.warn(f"Error detected in {name_of(backward)}. Traceback of forward call that "
                      f"caused the error:\n{_forward_stack(backward)}", stacklevel=2)
        raise
    return grads


def _isnan_any(array):
    from pyrt.functional import _xp

    return _xp(array).isnan(array).any()


def _writes_count():
    from pyrt.autograd import _writes

    return _writes.count
