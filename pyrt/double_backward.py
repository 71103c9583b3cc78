"""Differentiable backward formulas: what create_graph=True runs in place of the closures
that ops record.

An op records ``backward(g)``, a closure from the gradient array of its output to the
gradient arrays of its inputs (functional._make); it stays the fast path of every ordinary
backward. For a backward pass that is itself recorded (grad(create_graph=True), hessian,
gradgradcheck) this module maps each such closure, by its code object, to a formula written
with pyrt's Tensor ops: given the node (the op's output tensor; its ``_parents`` are the
inputs), the output gradient as a Tensor and the closure's variables, it returns one gradient
Tensor (or None) per input, each with a graph of its own. Formulas read the inputs, and the
output itself where the derivative is written through it (exp: g * y), as tensors of the
graph, so that their own gradients flow back to the inputs; what is piecewise constant (the
masks of relu, abs, clamp) enters as a constant tensor.

A closure's variables are read from the closure itself: its code object names them
(``co_freevars``) and ``__closure__`` holds one cell per name in the same order, so
``dict(zip(fn.__code__.co_freevars, (c.cell_contents for c in fn.__closure__)))`` is the
op's saved state (shapes, axes, scalar factors, saved arrays) by name.

The table is built on first use by running each op once on a small tensor and taking the code
object of the closure it records; closures that only other devices record are found among
the code objects nested in the op's function (_closures). Formulas use only ops that have
formulas themselves, so derivatives of any order work. A closure without a formula makes
the recorded pass raise NotImplementedError naming the op, as torch's grad_fn is named.
"""

import types

import numpy as np

from pyrt import functional as F
from pyrt import shapes
from pyrt.autograd import enable_grad
from pyrt.ops._checks import F32

__all__ = ["formula_for", "op_name"]

# the key of a formula's env under which formula_for puts the closure itself (not a name a
# closure's variable can have)
CLOSURE = "<closure>"


def closure_vars(fn):
    """The variables a closure reads from its enclosing function, by name (cells not yet
    filled are left out)."""
    cells = fn.__closure__ or ()
    out = {}
    for name, cell in zip(fn.__code__.co_freevars, cells):
        try:
            out[name] = cell.cell_contents
        except ValueError:  # an empty cell
            pass
    return out


def op_name(fn):
    """A readable name of the op that recorded closure `fn`, as torch names grad_fn
    ('SoftmaxBackward0'), from the function the closure was defined in."""
    qualname = getattr(fn, "__qualname__", type(fn).__name__)
    outer = qualname.split(".<locals>")[0].split(".")
    name = outer[-1] if not outer[-1].startswith("__") or len(outer) == 1 else outer[-2]
    camel = "".join(part[:1].upper() + part[1:] for part in name.strip("_").split("_"))
    return f"{camel}Backward0"


def _refuse(name, detail=""):
    raise NotImplementedError(
        f"the derivative for '{name}' is not implemented for create_graph=True: pyrt has no "
        f"double-backward formula for it{detail}, so higher-order gradients cannot pass "
        "through this op")


def formula_for(fn):
    """The differentiable formula for backward closure `fn`, a function (node, g) -> one
    gradient Tensor or None per input of node; NotImplementedError naming the op if there
    is none."""
    code = getattr(fn, "__code__", None)
    formula = _table().get(code) if code is not None else None
    if formula is None:
        where = f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', '')}"
        _refuse(op_name(fn), f" ({where.strip('.') or type(fn).__name__})")
    env = closure_vars(fn)
    env[CLOSURE] = fn  # for formulas that apply the closure itself (linear ops)
    return lambda node, g: formula(node, g, env)


# ---- helpers: tensors from arrays, sums and expansions that record their own graph --------


def _const(array):
    """A constant float32 tensor on the array's device."""
    return F._tensor()(F._xp(array).asarray(array, dtype=F32, order="C"))


def _need(t):
    return t._requires_grad


def _host(array):
    return array if isinstance(array, np.ndarray) else array.get()


def sum_to(g, shape):
    """Tensor g summed over what was broadcast to make `shape` (the inverse of expand)."""
    shape = tuple(shape)
    if g.shape == shape:
        return g
    extra = g.ndim - len(shape)
    axes = tuple(range(extra)) + tuple(
        i + extra for i, n in enumerate(shape) if n == 1 and g.shape[i + extra] != 1)
    out = F.sum(g, axes) if axes else g
    return F.reshape(out, shape) if out.shape != shape else out


def _expand_reduced(g, shape, axis):
    """The gradient of a reduction over `axis` of a tensor of `shape` spread back over it."""
    kept = F._reduced_shape(shape, axis, keepdims=True)
    return shapes.expand(F.reshape(g, kept), shape)


def _with_slope_of(value, expr):
    """A tensor whose value is the array `value` (the one the ordinary backward computed) and
    whose derivative is that of the tensor `expr`: value + (expr - expr.detach()). For fused
    kernels whose saved gradient is exact but whose formula is cheaper to differentiate than
    to recompute."""
    if not expr._requires_grad:
        return _const(value)
    return F.add(_const(value), F.sub(expr, expr.detach()))


def index_add(g, shape, index):
    """zeros(shape) with g added at `index` (NumPy's indexing, repeats summed): the gradient
    of indexing, recorded so that it can be differentiated again (its own gradient is the
    indexing)."""
    xp = F._xp(g._data)
    out = xp.zeros(shape, F32)
    xp.add.at(out, index, g._data)
    return F._make(out, (g,), lambda h: (F._contiguous(h[index]),), reads=False)


# ---- arithmetic -----------------------------------------------------------------------------


def _passed(node, g, env):
    return (g,)


def _negated(node, g, env):
    return (F.neg(g),)


def _add(node, g, env):
    a, b = node._parents
    return (sum_to(g, a.shape) if _need(a) else None, sum_to(g, b.shape) if _need(b) else None)


def _sub(node, g, env):
    a, b = node._parents
    return (sum_to(g, a.shape) if _need(a) else None,
            sum_to(F.neg(g), b.shape) if _need(b) else None)


def _mul_scalar(node, g, env):
    return (F.mul(g, env["b"]),)


def _mul(node, g, env):
    a, b = node._parents
    return (sum_to(F.mul(g, b), a.shape) if _need(a) else None,
            sum_to(F.mul(g, a), b.shape) if _need(b) else None)


def _div_scalar(node, g, env):
    return (F.div(g, env["b"]),)


def _scalar_div(node, g, env):
    # d(a/b)/db = -a/b^2 = -out/b for a number a
    (b,) = node._parents
    return (F.neg(F.div(F.mul(g, node), b)),)


def _div(node, g, env):
    a, b = node._parents
    return (sum_to(F.div(g, b), a.shape) if _need(a) else None,
            sum_to(F.neg(F.div(F.mul(g, node), b)), b.shape) if _need(b) else None)


def _pow(node, g, env):
    (x,) = node._parents
    e = float(env["e"])
    return (F.mul(g, F.mul(F.pow(x, e - 1.0), e)),)


def _pow_zero(node, g, env):
    return (_const(F._xp(g._data).zeros(node._parents[0].shape, F32)),)


def _abs(node, g, env):
    return (F.mul(g, _const(F.sign_of(env["xp"], env["xd"]))),)


def _clamp(node, g, env):
    xd, lo, hi, xp = env["xd"], env["lo"], env["hi"], env["xp"]
    inside = xp.ones(xd.shape, bool)
    if lo is not None:
        inside &= xd >= lo
    if hi is not None:
        inside &= xd <= hi
    return (F.mul(g, _const(inside)),)


# ---- unary kernels: y = f(x), the derivative through y or x --------------------------------

# name -> (g, x, y) -> the gradient of x, for the kernels of functional._unary
UNARY = {
    "exp": lambda g, x, y: F.mul(g, y),
    "log": lambda g, x, y: F.div(g, x),
    "sqrt": lambda g, x, y: F.div(g, F.mul(y, 2.0)),
    "tanh": lambda g, x, y: F.mul(g, F.sub(1.0, F.mul(y, y))),
    "sigmoid": lambda g, x, y: F.mul(g, F.mul(y, F.sub(1.0, y))),
    "relu": lambda g, x, y: F.mul(g, _const(y._data > 0)),
}


def _unary(node, g, env):
    if "code" in env:
        name = F._UNARY_NAMES[env["code"]]
    else:  # the device closure: the routed backward op, by name
        name = env["backward_op"].__name__.removesuffix("_backward")
    formula = UNARY.get(name)
    if formula is None:
        _refuse(f"{name.capitalize()}Backward0")
    return (formula(g, node._parents[0], node),)


# functions of pointwise._floating, by the name of the function that made the closure
POINTWISE = {
    "sin": lambda g, x, y: F.mul(g, F.cos(x)),
    "cos": lambda g, x, y: F.neg(F.mul(g, F.sin(x))),
    "tan": lambda g, x, y: F.mul(g, F.add(F.mul(y, y), 1.0)),
    "log1p": lambda g, x, y: F.div(g, F.add(x, 1.0)),
    "expm1": lambda g, x, y: F.mul(g, F.add(y, 1.0)),
}


def _floating(node, g, env):
    derivative = env["derivative"]
    name = derivative.__qualname__.split(".")[0]
    formula = POINTWISE.get(name)
    if formula is None:
        _refuse(op_name(derivative))
    return (formula(g, node._parents[0], node),)


# ---- activations: y = f(x), the gradient g * slope() ----------------------------------------


def _softplus_beta(x, z, y):
    """softplus's beta, which its closure does not keep: z = float32(x * beta) is kept, so
    beta is z / x at an element with x != 0, checked against every element (an exact
    match); where x is all zeros, y = log(2) / beta."""
    xh, zh = np.asarray(x, np.float64), np.asarray(z, np.float64)
    if not np.any(xh):
        return float(np.log(2.0) / np.asarray(y, np.float64).reshape(-1)[0])
    k = np.argmax(np.abs(xh))
    guess = np.float32(zh.reshape(-1)[k] / xh.reshape(-1)[k])
    for beta in (guess, np.nextafter(guess, np.float32(np.inf)),
                 np.nextafter(guess, np.float32(-np.inf))):
        if np.array_equal(np.asarray(x, np.float32) * beta, np.asarray(z, np.float32)):
            return float(beta)
    return float(guess)


def _softplus(g, x, y, env):
    slope = env["slope"]
    cells = closure_vars(slope)
    linear, z = cells["linear"], cells["z"]
    beta = _softplus_beta(_host(x._data), _host(z), _host(y._data))
    smooth = F.mul(F.sigmoid(F.mul(x, beta)), _const(~linear))
    return F.mul(g, _with_slope_of(slope(), smooth))


def _piecewise_linear(g, x, y, env):
    return F.mul(g, _const(env["slope"]()))


# activations of activations._elementwise, by the name of the function that made the slope
ACTIVATIONS = {
    "leaky_relu": _piecewise_linear,
    "hardtanh": _piecewise_linear,
    "relu6": _piecewise_linear,
    "softplus": _softplus,
}


def _elementwise(node, g, env):
    slope = env["slope"]
    name = slope.__qualname__.split(".")[0]
    formula = ACTIVATIONS.get(name)
    if formula is None:
        _refuse(op_name(slope))
    return (formula(g, node._parents[0], node, env),)


# ---- linear algebra -------------------------------------------------------------------------


def _mT(t):
    return F.transpose(t) if t.ndim == 2 else shapes.transpose(t, -2, -1)


def _matmul_2d(node, g, env):
    a, b = node._parents
    return (F.matmul(g, F.transpose(b)) if _need(a) else None,
            F.matmul(F.transpose(a), g) if _need(b) else None)


def _matmul(node, g, env):
    """torch.matmul of any dims: a vector is a matrix of one row (first) or one column
    (second), the batch dims broadcast."""
    from pyrt.matmul import matmul

    a, b = node._parents
    am = F.reshape(a, (1,) + a.shape) if a.ndim == 1 else a
    bm = F.reshape(b, b.shape + (1,)) if b.ndim == 1 else b
    gm = F.reshape(g, env["full"].shape)
    da = db = None
    if _need(a):
        da = F.reshape(sum_to(matmul(gm, _mT(bm)), am.shape), a.shape)
    if _need(b):
        db = F.reshape(sum_to(matmul(_mT(am), gm), bm.shape), b.shape)
    return da, db


def _bmm(node, g, env):
    from pyrt.products import bmm

    a, b = node._parents
    return (bmm(g, shapes.transpose(b, 1, 2)) if _need(a) else None,
            bmm(shapes.transpose(a, 1, 2), g) if _need(b) else None)


def _dot(node, g, env):
    a, b = node._parents
    return (F.mul(g, b) if _need(a) else None, F.mul(g, a) if _need(b) else None)


_ACT_SLOPES = {"relu": UNARY["relu"], "sigmoid": UNARY["sigmoid"], "tanh": UNARY["tanh"]}


def _linear_grads(node, g, act):
    """x @ weight.T + bias, then act (None, "relu", "sigmoid", "tanh"), on 2-D x."""
    x, weight = node._parents[:2]
    bias = node._parents[2] if len(node._parents) > 2 else None
    gp = g if act is None else _ACT_SLOPES[act](g, None, node)
    return (F.matmul(gp, weight) if _need(x) else None,
            F.matmul(F.transpose(gp), x) if _need(weight) else None,
            F.sum(gp, 0) if bias is not None and _need(bias) else None)[:len(node._parents)]


_CODE_ACTS = None


def _linear(node, g, env):
    global _CODE_ACTS
    if _CODE_ACTS is None:
        _CODE_ACTS = {code: act for act, code in F._ACT_CODES.items()}
    return _linear_grads(node, g, _CODE_ACTS.get(env["act_code"]))


def _linear_checked(node, g, env):
    act_backward = env["act_backward"]
    act = None if act_backward is None else act_backward.__name__.removesuffix("_backward")
    return _linear_grads(node, g, act)


def _linear_chain(node, g, env):
    """A LinearChain: its layers recomputed one by one with F.linear (the same kernels, the
    same numbers) from the node's inputs, and the recorded backward of that."""
    from pyrt.higher_order import gradients

    chain, biases = env["self"], env["biases"]
    x, params = node._parents[0], node._parents[1:]
    y, at = x, 0
    with enable_grad():
        for (_, act), bias in zip(chain.steps, biases):
            w = params[at]
            b = params[at + 1] if bias is not None else None
            at += 1 if bias is None else 2
            y = F.linear(y, w, b, act)
    return gradients(y, g, node._parents)


# ---- reductions ----------------------------------------------------------------------------


def _sum(node, g, env):
    return (_expand_reduced(g, env["shape"], env["axis"]),)


def _mean(node, g, env):
    return (F.mul(_expand_reduced(g, env["shape"], env["axis"]), 1.0 / env["count"]),)


def _norm(node, g, env):
    p, axis, out = env["p"], env["axis"], env["out"]
    (x,) = node._parents
    kept = F._reduced_shape(x.shape, axis, keepdims=True)
    gk = F.reshape(g, kept)
    if p == 1:
        return (F.mul(_const(F._xp(out).sign(x._data)), gk),)
    if p != 2:
        _refuse("NormBackward1", f" at p={p} (only p=1 and p=2 have one)")
    # x * g / n, 0 where the norm is 0
    zero = _const((out == 0).reshape(kept))
    n = F.add(F.reshape(node, kept), zero)
    return (F.mul(x, F.mul(F.div(gk, n), F.sub(1.0, zero))),)


# ---- shapes ---------------------------------------------------------------------------------


def _reshape(node, g, env):
    return (F.reshape(g, env["in_shape"]),)


def _transpose(node, g, env):
    return (F.transpose(g),)


def _swap_last(node, g, env):
    return (_mT(g),)


def _permute(node, g, env):
    return (shapes.permute(g, env["inverse"]),)


def _expand(node, g, env):
    return (sum_to(g, env["in_shape"]),)


def _index(node, g, env):
    return (index_add(g, env["x"].shape, env["index"]),)


def _index_add(node, g, env):
    return (F.index_rows(g, env["index"]),)


def _cat(node, g, env):
    at, bounds = env["at"], env["bounds"]
    edges = [0, *bounds, g.shape[at]]
    lead = (slice(None),) * at
    return tuple(F.index_rows(g, lead + (slice(lo, hi),)) if _need(t) else None
                 for t, lo, hi in zip(node._parents, edges, edges[1:]))


def _stack(node, g, env):
    lead = (slice(None),) * env["at"]
    return tuple(F.index_rows(g, lead + (i,)) if _need(t) else None
                 for i, t in enumerate(node._parents))


# ---- softmax and losses ---------------------------------------------------------------------


def _softmax(node, g, env):
    gy = F.mul(g, node)
    return (F.sub(gy, F.mul(node, F.sum(gy, env["dim"], True))),)


def _log_softmax(node, g, env):
    return (F.sub(g, F.mul(F.exp(node), F.sum(g, env["dim"], True))),)


def _mse(node, g, env):
    """mse_loss's three closures: with a target that requires grad (both inputs), or with
    the closure of one reduction (dinput) or the fast path of mean and sum, which keep only
    input - target (the kept values then get input's derivative)."""
    inner = closure_vars(env["dinput"]) if "dinput" in env else env
    scale = inner.get("scale", 2.0)  # reduction="none" doubles inside its closure
    input = node._parents[0]
    if len(node._parents) > 1:
        d = F.mul(F.mul(F.sub(input, node._parents[1]), scale), g)
        return (d if _need(input) else None, F.neg(d))
    return (F.mul(F.mul(_with_slope_of(inner["diff"], input), scale), g),)


def _cross_entropy_fused(node, g, env):
    """The fused mean cross-entropy of [N, C] logits: its gradient (softmax - one_hot) / N,
    kept by the kernel, with the derivative of softmax / N."""
    (logits,) = node._parents
    n = max(logits.shape[0], 1)
    grad = _with_slope_of(env["grad"], F.mul(F.softmax(logits, 1), 1.0 / n))
    return (F.mul(grad, g),)


# ---- the table --------------------------------------------------------------------------------


def _closures(function, name):
    """The code objects of the closures named `name` defined in `function` (at any depth):
    for closures that only a device records, which no example on the CPU can make, and for
    those whose example would cost more than it shows."""
    found, stack = [], [function.__code__]
    while stack:
        for const in stack.pop().co_consts:
            if isinstance(const, types.CodeType):
                if const.co_name == name:
                    found.append(const)
                stack.append(const)
    if not found:
        raise LookupError(f"{function.__qualname__} defines no closure {name!r}")
    return found


def _leaf_maker():
    """leaf(*shape): a float32 leaf tensor that requires grad, of seeded normal values (the
    examples draw nothing from pyrt's generator)."""
    Tensor = F._tensor()
    rng = np.random.default_rng(0)

    def leaf(*shape):
        return Tensor(rng.standard_normal(shape).astype(F32)).requires_grad_(True)

    return leaf


def _examples():
    """(tensor made by an op, formula for the closure it recorded) pairs."""
    from pyrt.activations import leaky_relu
    from pyrt.class_losses import cross_entropy
    from pyrt.matmul import matmul
    from pyrt.pointwise import sin
    from pyrt.products import bmm, dot
    from pyrt.reductions import norm

    Tensor = F._tensor()
    leaf = _leaf_maker()
    x, y, v = leaf(3, 4), leaf(3, 4), leaf(4)
    x3 = leaf(2, 3, 4)
    yield F.add(x, 2.0), _passed
    yield F.add(x, y), _add
    yield F.sub(x, 2.0), _passed
    yield F.sub(2.0, x), _negated
    yield F.sub(x, y), _sub
    yield F.mul(x, 2.0), _mul_scalar
    yield F.mul(x, y), _mul
    yield F.div(x, 0.0), _div_scalar
    yield F.div(2.0, x), _scalar_div
    yield F.div(x, y), _div
    yield F.neg(x), _negated
    yield F.pow(x, 3.0), _pow
    yield F.pow(x, 0.0), _pow_zero
    yield F.abs(x), _abs
    yield F.clamp(x, -0.5, 0.5), _clamp
    yield F.exp(x), _unary
    yield sin(x), _floating
    yield leaky_relu(x), _elementwise
    yield F.matmul(x, F.transpose(y)), _matmul_2d
    yield matmul(x3, v), _matmul
    yield bmm(x3, shapes.transpose(x3, 1, 2)), _bmm
    yield dot(v, v), _dot
    yield F.linear(x, y), _linear
    yield F.sum(x, 0), _sum
    yield F.mean(x, 0), _mean
    yield norm(x, 2, 1), _norm
    yield F.reshape(x, (12,)), _reshape
    yield F.transpose(x), _transpose
    yield shapes.permute(x3, (0, 2, 1)), _swap_last
    yield shapes.permute(x3, (2, 0, 1)), _permute
    yield shapes.expand(v, (3, 4)), _expand
    yield F.index_rows(x, 1), _index
    yield index_add(x, (5, 4), slice(1, 4)), _index_add
    yield shapes.cat((x, y)), _cat
    yield shapes.stack((x, y)), _stack
    yield F.softmax(x, 1), _softmax
    yield F.log_softmax(x, 1), _log_softmax
    target = Tensor(np.zeros((3, 4), F32))
    yield F.mse_loss(x, target), _mse  # the fast path of mean and sum
    yield F.mse_loss(x, target, reduction="none"), _mse
    yield F.mse_loss(x, y), _mse
    labels = Tensor(np.array([0, 1, 3]))
    yield cross_entropy(x, labels), _cross_entropy_fused


def _found_closures():
    """(function, closure name, formula): closures found by name in the function that
    defines them (_closures)."""
    from pyrt.matmul import matmul
    from pyrt.nn.linear_chain import LinearChain
    from pyrt.products import bmm

    return (
        (F._unary, "<lambda>", _unary),  # the CPU's and the device's
        (F._linear_checked, "backward", _linear_checked),
        (F.matmul, "<lambda>", _matmul_2d),  # plain arrays, and other layouts
        (matmul, "xp_backward", _matmul),
        (bmm, "<lambda>", _bmm),
        # (an example would make Linear layers, drawing their weights from pyrt's generator)
        (LinearChain.__call__, "backward", _linear_chain),
    )


# modules with the formulas of further op families, each with examples(leaf) and, where
# some closures are found by name, found(); their activations and floating functions join
# the tables above
FORMULA_MODULES = ("pyrt.double_backward_conv", "pyrt.double_backward_losses",
                   "pyrt.double_backward_norm", "pyrt.double_backward_ops",
                   "pyrt.double_backward_pointwise", "pyrt.double_backward_reductions",
                   "pyrt.double_backward_select", "pyrt.double_backward_shapes")

_TABLE = {}


def _table():
    """code object of a backward closure -> its formula, built on first use."""
    if not _TABLE:
        import importlib

        modules = [importlib.import_module(name) for name in FORMULA_MODULES]
        for module in modules:
            ACTIVATIONS.update(getattr(module, "ACTIVATIONS", {}))
            POINTWISE.update(getattr(module, "POINTWISE", {}))
        table = {}
        with enable_grad():
            for tensor, formula in _examples():
                table[tensor._backward.__code__] = formula
            for module in modules:
                for tensor, formula in module.examples(_leaf_maker()):
                    table[tensor._backward.__code__] = formula
        found = list(_found_closures())
        for module in modules:
            found.extend(getattr(module, "found", tuple)())
        for function, name, formula in found:
            for code in _closures(function, name):
                table[code] = formula
        _TABLE.update(table)
    return _TABLE
