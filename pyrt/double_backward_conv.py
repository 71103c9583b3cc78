"""Differentiable backward formulas of the spatial ops: convolutions (conv2d, and conv1d and
nn.Conv2d, which run it), transposed convolutions, max and average pooling (adaptive average
pooling runs one or the other) and constant padding. pyrt.double_backward registers them;
its docstring says how formulas are found and what they return.

For y = conv2d(x, w) + b the gradients are, as in pyrt.conv_grad:
- dx = conv_transpose2d(g, w): conv2d_input, a transposed convolution;
- dw = the correlation of x with g: conv2d_weight, a conv2d of x by g;
- db = g summed over the batch and the image.
Each is itself a convolution with a formula here, so the gradient of the gradient (the
gradient penalty's backward pass) runs on the same kernels.

Pooling's backward is linear in g: max pooling's scatters g to the pixels its indices name
(index_add, whose gradient gathers them back); average pooling's spreads g over each window,
recorded as the adjoint op below, whose gradient is average pooling again.
"""

from pyrt import functional as F
from pyrt import ops
from pyrt.double_backward import _const, _need, index_add

__all__ = ["avg_pool2d_adjoint"]


# ---- convolutions ---------------------------------------------------------------------------


def _conv_options(env):
    options = env["options"]
    return options["stride"], options["padding"], options["dilation"], options["groups"]


def _conv2d(node, g, env):
    from pyrt.conv_grad import conv2d_input, conv2d_weight

    x, w = node._parents[:2]
    bias = node._parents[2] if len(node._parents) > 2 else None
    stride, padding, dilation, groups = _conv_options(env)
    dx = dw = db = None
    if _need(x):
        dx = conv2d_input(x.shape, w, g, stride, padding, dilation, groups)
    if _need(w):
        dw = conv2d_weight(x, w.shape, g, stride, padding, dilation, groups)
    if bias is not None and _need(bias):
        db = F.sum(g, (0, 2, 3))
    return (dx, dw, db)[:len(node._parents)]


def _conv_transpose2d(node, g, env):
    """y = conv_transpose2d(x, w): dx = conv2d(g, w) (cut to x's size where x was extended
    by zero rows), dw = conv2d's weight gradient with g as its input and x, so extended, as
    its output gradient."""
    from pyrt.conv_grad import conv2d_weight
    from pyrt.spatial import conv2d, pad

    x, w = node._parents[:2]
    bias = node._parents[2] if len(node._parents) > 2 else None
    stride, padding, dilation, groups = _conv_options(env)
    eh, ew = env["eh"], env["ew"]
    dx = dw = db = None
    if _need(x):
        dx = conv2d(g, w, None, stride, padding, dilation, groups)
        if eh or ew:
            dx = F.index_rows(dx, (slice(None), slice(None), slice(0, env["h"]),
                                   slice(0, env["wd"])))
    if _need(w):
        grown = pad(x, (0, ew, 0, eh)) if eh or ew else x
        dw = conv2d_weight(g, w.shape, grown, stride, padding, dilation, groups)
    if bias is not None and _need(bias):
        db = F.sum(g, (0, 2, 3))
    return (dx, dw, db)[:len(node._parents)]


# ---- pooling --------------------------------------------------------------------------------


def _max_pool2d(node, g, env):
    """Each gradient to the pixel its window's index names; an index of -1 (a window of
    padding alone, or one the fused ReLU zeroed) takes none."""
    idx, shape = env["idx"], env["shape"]
    xp = F._xp(idx)
    picked = xp.nonzero(idx >= 0)
    flat = idx[picked]
    width = shape[3]
    target = (picked[0], picked[1], flat // width, flat % width)
    return (index_add(F.index_rows(g, picked), shape, target),)


def avg_pool2d_adjoint(g, shape, kernel_size, stride, padding, ceil_mode, count_include_pad):
    """The gradient of avg_pool2d (input of `shape`) for the output gradient Tensor g, as a
    recorded op: each window's gradient spread evenly over its pixels. Its own gradient is
    avg_pool2d of the incoming gradient (the two are each other's adjoint)."""
    window = (kernel_size, stride, padding)
    options = {"ceil_mode": ceil_mode, "count_include_pad": count_include_pad}
    out = ops.avg_pool2d_backward(g._data, shape, *window, **options)
    return F._make(out, (g,), lambda h: (ops.avg_pool2d(h, *window, **options),), reads=False)


def _avg_pool2d(node, g, env):
    return (avg_pool2d_adjoint(g, env["shape"], env["kernel_size"], env["stride"],
                               env["padding"], env["ceil_mode"], env["count_include_pad"]),)


def _avg_pool2d_adjoint(node, g, env):
    from pyrt.spatial import avg_pool2d

    (kernel_size, stride, padding), options = env["window"], env["options"]
    return (avg_pool2d(g, kernel_size, stride, padding, **options),)


def _adaptive_avg_pool2d(node, g, env):
    """Bins that do not tile the image: y = rows x cols^T per plane, so the gradient is
    rows^T g cols (an absent matrix: the bins are the positions themselves)."""
    from pyrt.matmul import matmul

    rows, cols = env["rows"], env["cols"]
    if rows is not None:
        g = matmul(_const(rows.T), g)
    if cols is not None:
        g = matmul(g, _const(cols))
    return (g,)


# ---- padding --------------------------------------------------------------------------------


def _pad_constant(node, g, env):
    """The padded output's inner part; where negative amounts cropped the input, that part
    is put back into zeros of the input's shape."""
    shape, crop, inner = env["shape"], env["crop"], env["inner"]
    kept = F.index_rows(g, inner)
    if all(s.start == 0 and s.stop == n for s, n in zip(crop, shape)):
        return (kept,)
    return (index_add(kept, shape, crop),)


# ---- registration ---------------------------------------------------------------------------


def examples(leaf):
    """(tensor made by an op, formula for the closure it recorded) pairs."""
    from pyrt.adaptive_pool import adaptive_avg_pool2d
    from pyrt.conv_transpose import conv_transpose2d
    from pyrt.spatial import avg_pool2d, conv2d, max_pool2d, pad

    x, w = leaf(1, 2, 5, 5), leaf(2, 2, 3, 3)
    yield conv2d(x, w), _conv2d
    yield conv_transpose2d(x, w), _conv_transpose2d
    yield max_pool2d(x, 2), _max_pool2d
    pooled = avg_pool2d(x, 2)
    yield pooled, _avg_pool2d
    yield avg_pool2d_adjoint(pooled, x.shape, 2, None, 0, False, True), _avg_pool2d_adjoint
    yield adaptive_avg_pool2d(x, 3), _adaptive_avg_pool2d
    yield pad(x, (1, 1)), _pad_constant

