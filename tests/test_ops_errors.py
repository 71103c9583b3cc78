"""Bad input to every public op of pyrt.ops, and to the Tensor/nn/optim surface: each must
raise TypeError/ValueError naming the argument (PyTorch's error where the API is PyTorch's),
never crash or write a wrong answer. Views, zero-size arrays, aliasing outputs and NaN/inf
must give NumPy's result."""

import inspect
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
from pyrt import nn, ops, optim

RNG = np.random.default_rng(1234)


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def raises(exc, name, fn, *args, **kwargs):
    """fn(*args, **kwargs) raises exactly `exc` (not a subclass such as OverflowError) with a
    message naming `name` as a word."""
    with pytest.raises(exc) as info:
        fn(*args, **kwargs)
    assert type(info.value) is exc, f"{type(info.value).__name__}: {info.value}"
    assert re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", str(info.value)), str(info.value)
    return str(info.value)


# ---- one valid call of every op ----------------------------------------------------------------
# name -> (function, positional arguments as (name, value), keyword arguments, the names of the
# float32 inputs that are only read, the names of integer inputs)

X, B6, W = f32(4, 6), f32(6), f32(6, 3)
IMG, KER, KB = f32(2, 3, 6, 6), f32(4, 3, 3, 3), f32(4)
_, IDX = ops.max_pool2d(IMG, 2, return_indices=True)
POS = np.abs(X) + 0.5
LABELS = np.array([0, 5, 2, 1])
BN_X, BN_C = f32(4, 3, 5), f32(3)
_, BN_MEAN, BN_INVSTD = ops.batch_norm(BN_X, training=True)
LN_X, LN_W = f32(4, 3, 5), f32(5)
_, LN_MEAN, LN_INVSTD = ops.layer_norm(LN_X, (5,))


def _spec(fn, args, kwargs=None, reads=None, ints=()):
    names = [n for n, _ in args]
    return fn, args, kwargs or {}, reads if reads is not None else names, ints


SPECS = {
    **{name: _spec(getattr(ops, name), [("a", X), ("b", X[::-1].copy())])
       for name in ("add", "sub", "mul")},
    "div": _spec(ops.div, [("a", X), ("b", POS)]),
    "addcmul": _spec(ops.addcmul, [("input", X), ("tensor1", POS), ("tensor2", X.T.copy().T)]),
    **{name: _spec(getattr(ops, name), [("x", X)])
       for name in ("neg", "exp", "tanh", "sigmoid", "relu")},
    **{name: _spec(getattr(ops, name), [("x", POS)]) for name in ("log", "sqrt")},
    "relu_backward": _spec(ops.relu_backward, [("grad", X), ("x", POS - 1)]),
    "sigmoid_backward": _spec(ops.sigmoid_backward, [("grad", X), ("y", POS)]),
    "tanh_backward": _spec(ops.tanh_backward, [("grad", X), ("y", POS)]),
    "exp_backward": _spec(ops.exp_backward, [("grad", X), ("y", POS)]),
    "log_backward": _spec(ops.log_backward, [("grad", X), ("x", POS)]),
    "sqrt_backward": _spec(ops.sqrt_backward, [("grad", X), ("y", POS)]),
    "bias_act": _spec(ops.bias_act, [("x", X), ("bias", B6)], {"act": "tanh"}),
    "bias_grad": _spec(ops.bias_grad, [("grad", X)]),
    "matmul": _spec(ops.matmul, [("a", X), ("b", W)]),
    **{name: _spec(getattr(ops, name), [("x", X)], {"axis": 0})
       for name in ("sum", "mean", "max", "argmax", "softmax", "log_softmax")},
    "cross_entropy": _spec(ops.cross_entropy, [("logits", X), ("labels", LABELS)],
                           {"return_grad": True}, ["logits"], ["labels"]),
    "binary_cross_entropy_with_logits": _spec(
        ops.binary_cross_entropy_with_logits, [("logits", X), ("targets", np.abs(POS) / 3)],
        {"return_grad": True}),
    "conv2d": _spec(ops.conv2d, [("x", IMG), ("weight", KER), ("bias", KB)], {"padding": 1}),
    "conv2d_backward": _spec(ops.conv2d_backward,
                             [("x", IMG), ("weight", KER), ("grad_output", f32(2, 4, 3, 3))],
                             {"stride": 2, "padding": 1}),
    "max_pool2d": _spec(ops.max_pool2d, [("x", IMG), ("kernel_size", 2)], {}, ["x"]),
    "avg_pool2d": _spec(ops.avg_pool2d, [("x", IMG), ("kernel_size", 3)], {"padding": 1},
                        ["x"]),
    "max_pool2d_backward": _spec(
        ops.max_pool2d_backward,
        [("grad_output", f32(2, 3, 3, 3)), ("indices", IDX), ("input_shape", IMG.shape),
         ("kernel_size", 2)], reads=["grad_output"], ints=["indices"]),
    "avg_pool2d_backward": _spec(
        ops.avg_pool2d_backward,
        [("grad_output", f32(2, 3, 2, 2)), ("input_shape", IMG.shape), ("kernel_size", 3)],
        {"padding": 1}, ["grad_output"]),
    "sgd_step": _spec(ops.sgd_step, [("param", X), ("grad", POS),
                                     ("momentum_buffer", np.zeros_like(X))],
                      {"lr": 0.1, "momentum": 0.9}, ["grad"]),
    "adam_step": _spec(ops.adam_step, [("param", X), ("grad", POS), ("exp_avg", X),
                                       ("exp_avg_sq", POS)], {"step": 3}, ["grad"]),
    "batch_norm": _spec(ops.batch_norm, [("x", BN_X), ("running_mean", BN_C),
                                         ("running_var", np.abs(BN_C)), ("weight", BN_C),
                                         ("bias", BN_C[::-1].copy())],
                        {"training": True}, ["x", "weight", "bias"]),
    "batch_norm_backward": _spec(ops.batch_norm_backward,
                                 [("grad_output", f32(4, 3, 5)), ("x", BN_X), ("weight", BN_C),
                                  ("mean", BN_MEAN), ("invstd", BN_INVSTD)]),
    "layer_norm": _spec(ops.layer_norm, [("x", LN_X), ("normalized_shape", (5,)),
                                         ("weight", LN_W), ("bias", LN_W[::-1].copy())],
                        {}, ["x", "weight", "bias"]),
    "layer_norm_backward": _spec(ops.layer_norm_backward,
                                 [("grad_output", f32(4, 3, 5)), ("x", LN_X),
                                  ("normalized_shape", (5,)), ("weight", LN_W),
                                  ("mean", LN_MEAN), ("invstd", LN_INVSTD)],
                                 {}, ["grad_output", "x", "weight", "mean", "invstd"]),
}
IN_PLACE = {"sgd_step": ["param", "momentum_buffer"],
            "adam_step": ["param", "exp_avg", "exp_avg_sq"],
            "batch_norm": ["running_mean", "running_var"]}
SCALAR_OK = {"add", "sub", "mul", "div"}  # a or b may be a real number
OPTIONAL = {("bias_act", "bias"), ("conv2d", "bias"), ("sgd_step", "momentum_buffer"),
            ("batch_norm", "running_mean"), ("batch_norm", "running_var"),
            ("batch_norm", "weight"), ("batch_norm", "bias"), ("batch_norm_backward", "weight"),
            ("layer_norm", "weight"), ("layer_norm", "bias"), ("layer_norm_backward", "weight")}


def fresh(name):
    """The arguments of SPECS[name] as copies (in-place ops write to theirs)."""
    _, args, kwargs, _, _ = SPECS[name]
    args = [(n, v.copy() if isinstance(v, np.ndarray) else v) for n, v in args]
    return args, dict(kwargs)


def call(name, replace=None, **extra):
    fn = SPECS[name][0]
    args, kwargs = fresh(name)
    values = [replace[n] if replace and n in replace else v for n, v in args]
    kwargs.update(extra)
    return fn(*values, **kwargs)


def results(name, replace=None, **extra):
    """The arrays an op produces: its result(s), or its in-place arguments after the step."""
    if name in IN_PLACE:
        args, kwargs = fresh(name)
        values = dict(args)
        values.update(replace or {})
        SPECS[name][0](*values.values(), **kwargs, **extra)
        return [values[n] for n in IN_PLACE[name]]
    out = call(name, replace, **extra)
    return [r for r in (out if isinstance(out, tuple) else (out,)) if r is not None]


def same(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


def test_every_public_op_is_covered():
    assert set(SPECS) | {"sgemm_kernel"} == set(ops.__all__)
    assert ops.sgemm_kernel() in ("avx512", "avx2", "generic")
    with pytest.raises(TypeError):
        ops.sgemm_kernel(1)


FLOAT_ARGS = [(op, arg) for op, s in SPECS.items() for arg in s[3]]
INT_ARGS = [(op, arg) for op, s in SPECS.items() for arg in s[4]]
ARRAY_ARGS = FLOAT_ARGS + [(op, arg) for op, names in IN_PLACE.items() for arg in names]


def _value(op, arg):
    return dict(SPECS[op][1])[arg]


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.bool_, object, np.complex64])
@pytest.mark.parametrize("op,arg", ARRAY_ARGS)
def test_float_inputs_of_another_dtype_are_type_errors(op, arg, dtype):
    bad = _value(op, arg).astype(dtype)
    msg = raises(TypeError, arg, call, op, {arg: bad})
    assert "float32" in msg


@pytest.mark.parametrize("bad", [[[1.0, 2.0]], None, "abc", 1.5, b"x", {"a": 1},
                                 np.ma.masked_array(np.ones(3, np.float32), [0, 1, 0])],
                         ids=["list", "None", "str", "scalar", "bytes", "dict", "masked"])
@pytest.mark.parametrize("op,arg", ARRAY_ARGS)
def test_float_inputs_that_are_not_arrays_are_type_errors(op, arg, bad):
    if op in SCALAR_OK and isinstance(bad, float):
        return  # a real number is a valid operand of the arithmetic ops
    if bad is None and (op, arg) in OPTIONAL:
        return
    raises(TypeError, arg, call, op, {arg: bad})


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.bool_, object, np.complex64])
@pytest.mark.parametrize("op,arg", INT_ARGS)
def test_integer_inputs_of_another_dtype_are_type_errors(op, arg, dtype):
    bad = _value(op, arg).astype(dtype)
    msg = raises(TypeError, arg, call, op, {arg: bad})
    assert "integer" in msg


@pytest.mark.parametrize("op,arg", INT_ARGS)
def test_integer_inputs_of_any_integer_dtype_and_layout_are_taken(op, arg):
    want = results(op)
    value = _value(op, arg)
    same(results(op, {arg: value.astype(np.int32)}), want)
    same(results(op, {arg: np.flip(np.flip(value).copy())}), want)


def _views(a):
    """Views of a's values: with negative strides, and with a gap between elements."""
    if a.ndim == 0:
        return []
    flipped = np.flip(np.flip(a).copy())
    spaced = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
    spaced[..., ::2] = a
    return [flipped, spaced[..., ::2]]


@pytest.mark.parametrize("op,arg", FLOAT_ARGS + INT_ARGS)
def test_views_of_read_inputs_give_the_contiguous_result(op, arg):
    want = results(op)
    for view in _views(_value(op, arg)):
        assert not view.flags.c_contiguous
        same(results(op, {arg: view}), want)


@pytest.mark.parametrize("op,arg", [(op, a) for op, names in IN_PLACE.items() for a in names])
def test_views_and_read_only_arrays_updated_in_place_are_value_errors(op, arg):
    for view in _views(_value(op, arg)):
        msg = raises(ValueError, arg, call, op, {arg: view})
        assert "in place" in msg
    frozen = _value(op, arg).copy()
    frozen.setflags(write=False)
    raises(ValueError, arg, call, op, {arg: frozen})
    raises(ValueError, arg, call, op, {arg: _value(op, arg)[:2].copy()})


# ---- out= ------------------------------------------------------------------------------------

# the signature, not the code object: once the CUDA backend is loaded each op is a router
# that takes *args and **kwargs, with the CPU op as its __wrapped__
OUT_OPS = [op for op in SPECS if "out" in inspect.signature(SPECS[op][0]).parameters]


def test_out_ops_are_the_documented_ones():
    assert set(OUT_OPS) == {
        "add", "sub", "mul", "div", "addcmul", "neg", "exp", "log", "sqrt", "tanh", "sigmoid",
        "relu", "relu_backward", "sigmoid_backward", "tanh_backward", "exp_backward",
        "log_backward", "sqrt_backward", "bias_act", "bias_grad", "matmul", "sum", "mean",
        "max", "softmax", "log_softmax", "conv2d", "max_pool2d", "avg_pool2d",
        "max_pool2d_backward", "avg_pool2d_backward"}


@pytest.mark.parametrize("op", OUT_OPS)
def test_out_must_be_a_writable_contiguous_float32_array_of_the_result_shape(op):
    want = call(op)
    out = np.full_like(want, np.nan)
    assert call(op, out=out) is out
    np.testing.assert_array_equal(out, want)
    frozen = np.zeros_like(want)
    frozen.setflags(write=False)
    assert "read-only" in raises(ValueError, "out", call, op, out=frozen)
    raises(ValueError, "out", call, op, out=np.zeros(want.shape + (1,), np.float32))
    raises(ValueError, "out", call, op, out=np.zeros((want.size + 1,), np.float32))
    for dtype in (np.float64, np.int32, np.bool_):
        raises(TypeError, "out", call, op, out=np.zeros_like(want, dtype=dtype))
    raises(TypeError, "out", call, op, out=want.tolist())
    if want.ndim:
        assert "contiguous" in raises(ValueError, "out", call, op, out=_views(want)[1])


@pytest.mark.parametrize("op", OUT_OPS)
def test_out_overlapping_an_input_raises_or_gives_the_right_answer(op):
    first, value = SPECS[op][1][0]
    want = call(op)
    if want.shape == value.shape:
        alias = value.copy()
        try:
            got = call(op, {first: alias}, out=alias)
        except ValueError as e:
            assert first in str(e) and "overlap" in str(e)
        else:
            assert got is alias
            np.testing.assert_array_equal(got, want)
    # out one element past the start of the input: every element read is written elsewhere
    buf = np.empty(max(value.size, want.size) + 1, np.float32)
    shifted = buf[1:1 + value.size].reshape(value.shape)
    shifted[...] = value
    out = buf[:want.size].reshape(want.shape)
    try:
        got = call(op, {first: shifted}, out=out)
    except ValueError as e:
        assert re.search(rf"\b{first}\b", str(e)) and "overlap" in str(e), str(e)
    else:
        np.testing.assert_array_equal(got, want)


# ---- shapes, axes and geometry ---------------------------------------------------------------

BAD_SHAPES = [
    ("add", {"b": f32(4, 5)}, "add"),
    ("addcmul", {"tensor2": f32(6)}, "tensor2"),
    ("relu_backward", {"x": f32(4, 5)}, "x"),
    ("tanh_backward", {"y": f32(6)}, "y"),
    ("bias_act", {"bias": f32(5)}, "bias"),
    ("bias_act", {"bias": f32(1, 6)}, "bias"),
    ("bias_act", {"x": np.ones((), np.float32)}, "x"),
    ("bias_grad", {"grad": np.ones((), np.float32)}, "grad"),
    ("matmul", {"b": f32(5, 3)}, "b"),
    ("matmul", {"a": f32(6)}, "a"),
    ("matmul", {"b": f32(1, 6, 3)}, "b"),
    ("cross_entropy", {"logits": f32(4)}, "logits"),
    ("cross_entropy", {"logits": f32(4, 6, 1)}, "logits"),
    ("cross_entropy", {"labels": LABELS[:3]}, "labels"),
    ("cross_entropy", {"labels": LABELS.reshape(4, 1)}, "labels"),
    ("binary_cross_entropy_with_logits", {"targets": f32(4, 1)}, "targets"),
    ("conv2d", {"x": f32(3, 6, 6)}, "x"),
    ("conv2d", {"weight": f32(4, 2, 3, 3)}, "weight"),
    ("conv2d", {"weight": f32(4, 3, 9, 9)}, "weight's"),
    ("conv2d", {"weight": np.zeros((4, 3, 0, 3), np.float32)}, "weight's"),
    ("conv2d", {"bias": f32(3)}, "bias"),
    ("conv2d_backward", {"grad_output": f32(2, 4, 4, 4)}, "grad_output"),
    ("max_pool2d", {"x": f32(3, 6, 6)}, "x"),
    ("avg_pool2d", {"x": np.zeros((2, 3, 0, 0), np.float32)}, "x"),  # nothing to pool
    ("max_pool2d_backward", {"indices": IDX[:1]}, "indices"),
    ("max_pool2d_backward", {"input_shape": (2, 3, 6)}, "input_shape"),
    ("max_pool2d_backward", {"input_shape": (2, 3, -6, 6)}, "input_shape"),
    ("avg_pool2d_backward", {"grad_output": f32(2, 3, 6, 6)}, "grad_output"),
    ("sgd_step", {"grad": f32(6, 4)}, "grad"),
    ("adam_step", {"exp_avg_sq": f32(4, 1)}, "exp_avg_sq"),
    ("batch_norm", {"x": f32(4)}, "x"),
    ("batch_norm", {"weight": f32(4)}, "weight"),
    ("batch_norm", {"running_var": f32(3, 1)}, "running_var"),
    ("batch_norm_backward", {"grad_output": f32(4, 3)}, "grad_output"),
    ("batch_norm_backward", {"invstd": f32(5)}, "invstd"),
]


@pytest.mark.parametrize("op,replace,name", BAD_SHAPES)
def test_wrong_shapes_are_value_errors(op, replace, name):
    raises(ValueError, name, call, op, replace)


@pytest.mark.parametrize("op", ["sum", "mean", "max", "argmax", "softmax", "log_softmax"])
@pytest.mark.parametrize("axis", [2, 5, -3, -10, 2**63])
def test_axis_out_of_range_is_a_value_error(op, axis):
    raises(ValueError, "axis", call, op, axis=axis)


@pytest.mark.parametrize("op", ["sum", "mean", "max", "argmax", "softmax", "log_softmax"])
@pytest.mark.parametrize("axis", [1.0, "0", [0], np.float32(0), True, False])
def test_axis_of_another_type_is_a_type_error(op, axis):
    msg = raises(TypeError, "axis", call, op, axis=axis)
    assert ("or None" in msg) == (op not in ("softmax", "log_softmax"))


@pytest.mark.parametrize("op", ["sum", "mean", "max"])
def test_axis_tuples_are_checked(op):
    raises(ValueError, "axis", call, op, axis=(0, 0))
    raises(ValueError, "axis", call, op, axis=(0, -1, 1))
    raises(ValueError, "axis", call, op, axis=(0, 7))
    raises(TypeError, "axis", call, op, axis=(0, "1"))


@settings(derandomize=True, max_examples=150, deadline=None)
@given(shape=st.lists(st.integers(0, 3), max_size=4),
       axis=st.one_of(st.none(), st.integers(-6, 6),
                      st.lists(st.integers(-6, 6), max_size=3).map(tuple)))
def test_reductions_raise_where_numpy_raises(shape, axis):
    x = RNG.standard_normal(shape).astype(np.float32)
    for ours, theirs in ((ops.sum, np.sum), (ops.max, np.max)):
        try:
            want = theirs(x, axis=axis)
        except ValueError:  # numpy's AxisError and the empty-maximum error
            with pytest.raises(ValueError):
                ours(x, axis=axis)
            continue
        got = ours(x, axis=axis)
        assert got.shape == np.shape(want)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@settings(derandomize=True, max_examples=150, deadline=None)
@given(a=st.lists(st.integers(0, 3), max_size=3), b=st.lists(st.integers(0, 3), max_size=3))
def test_broadcasting_raises_where_numpy_raises(a, b):
    x, y = f32(*a), f32(*b)
    try:
        want = x + y
    except ValueError:
        raises(ValueError, "add", ops.add, x, y)
        return
    got = ops.add(x, y)
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("op", ["conv2d", "conv2d_backward", "max_pool2d", "avg_pool2d"])
@pytest.mark.parametrize("arg,value,exc", [
    ("stride", 0, ValueError), ("stride", -1, ValueError), ("stride", (1, 0), ValueError),
    ("stride", 2**31, ValueError), ("stride", 2**63, ValueError),
    ("stride", 1.0, TypeError), ("stride", "1", TypeError), ("stride", True, TypeError),
    ("stride", (1, 1, 1), ValueError), ("padding", -1, ValueError),
    ("padding", 2**62, ValueError), ("padding", (0, -2), ValueError),
    ("padding", "same", TypeError), ("padding", None, TypeError),
])
def test_bad_strides_and_padding_name_the_argument(op, arg, value, exc):
    raises(exc, arg, call, op, **{arg: value})


@pytest.mark.parametrize("op", ["max_pool2d", "avg_pool2d", "max_pool2d_backward",
                                "avg_pool2d_backward"])
@pytest.mark.parametrize("value,exc", [(0, ValueError), (-2, ValueError), ((2, 0), ValueError),
                                       (2**40, ValueError), (None, TypeError),
                                       (2.0, TypeError)])
def test_bad_kernel_sizes_name_the_argument(op, value, exc):
    raises(exc, "kernel_size", call, op, {"kernel_size": value})


@pytest.mark.parametrize("op", ["max_pool2d_backward", "avg_pool2d_backward"])
@pytest.mark.parametrize("shape,exc", [
    ((2, 3, 6.5, 6), TypeError), ("2366", TypeError), (None, TypeError), (7, TypeError),
    ((2, 3, 2**31, 6), ValueError), ((2**63, 3, 6, 6), ValueError),
])
def test_bad_input_shapes_name_the_argument(op, shape, exc):
    raises(exc, "input_shape", call, op, {"input_shape": shape})


def test_sizes_whose_byte_count_overflows_are_value_errors():
    one = np.ones((1, 1, 1, 1), np.float32)
    # the output would be 2**31+1 squared pixels: more bytes than an int64 counts
    msg = raises(ValueError, "too", ops.conv2d, one, one, padding=2**30)
    assert "big" in msg
    with pytest.raises(ValueError, match="too big"):
        ops.matmul(np.zeros((2**40, 0), np.float32), np.zeros((0, 2**40), np.float32))
    raises(ValueError, "x", ops.conv2d, np.zeros((0, 1, 2**31, 1), np.float32), one)


@pytest.mark.parametrize("labels,bad", [([0, 5, 2, 6], 6), ([0, -1, 2, 1], -1),
                                        ([0, 2**62, 0, 0], 2**62)])
def test_cross_entropy_labels_out_of_range_are_value_errors(labels, bad):
    msg = raises(ValueError, "labels", call, "cross_entropy", {"labels": np.array(labels)})
    assert str(bad) in msg and "[0, 6)" in msg


def test_max_pool2d_backward_refuses_indices_outside_the_plane():
    grad = np.ones((1, 1, 1, 2), np.float32)
    for idx in ([-5, 1], [1, 4], [1, 2**62]):
        raises(ValueError, "indices", ops.max_pool2d_backward, grad,
               np.array(idx).reshape(1, 1, 1, 2), (1, 1, 2, 2), (2, 1), 1)


def test_bad_scalars_name_the_argument():
    raises(TypeError, "b", ops.add, X, 1j)
    raises(TypeError, "a", ops.mul, None, X)
    raises(TypeError, "add", ops.add, 1.0, 2.0)
    raises(TypeError, "value", ops.addcmul, X, X, X, value="2")
    raises(ValueError, "value", ops.addcmul, X, X, X, value=10**400)
    raises(ValueError, "b", ops.add, X, 10**400)
    raises(ValueError, "a", ops.div, -(10**400), X)
    raises(TypeError, "alpha", ops.matmul, X, W, alpha="2")
    raises(TypeError, "beta", ops.matmul, X, W, beta=None, out=np.zeros((4, 3), np.float32))
    raises(ValueError, "alpha", ops.matmul, X, W, alpha=10**400)
    raises(ValueError, "act", ops.bias_act, X, B6, "gelu")
    raises(ValueError, "act", ops.bias_act, X, B6, ["relu"])


OPTIM_ERRORS = [
    ("sgd_step", {"lr": -0.1}, ValueError, "learning rate"),
    ("sgd_step", {"lr": "0.1"}, TypeError, "lr"),
    ("sgd_step", {"momentum": -0.5}, ValueError, "momentum"),
    ("sgd_step", {"weight_decay": -1.0}, ValueError, "weight_decay"),
    ("sgd_step", {"nesterov": True, "dampening": 0.5}, ValueError, "Nesterov"),
    ("adam_step", {"lr": -1.0}, ValueError, "learning rate"),
    ("adam_step", {"betas": (1.0, 0.9)}, ValueError, "beta"),
    ("adam_step", {"betas": (0.9, -0.1)}, ValueError, "beta"),
    ("adam_step", {"betas": (0.9,)}, TypeError, "betas"),
    ("adam_step", {"eps": -1e-8}, ValueError, "epsilon"),
    ("adam_step", {"step": 0}, ValueError, "step"),
    ("adam_step", {"step": 1.0}, TypeError, "step"),
]


@pytest.mark.parametrize("op,kwargs,exc,name", OPTIM_ERRORS)
def test_bad_hyper_parameters_leave_the_parameter_alone(op, kwargs, exc, name):
    args, base = fresh(op)
    values = dict(args)
    before = values["param"].copy()
    with pytest.raises(exc, match=name):
        SPECS[op][0](*values.values(), **{**base, **kwargs})
    np.testing.assert_array_equal(values["param"], before)


def test_sgd_momentum_without_a_buffer_is_a_value_error():
    raises(ValueError, "momentum_buffer", ops.sgd_step, X.copy(), X, lr=0.1, momentum=0.9)


# ---- zero-size arrays and special values -----------------------------------------------------

EMPTY = np.zeros((0, 6), np.float32)


@pytest.mark.parametrize("op,ref", [
    ("neg", np.negative), ("exp", np.exp), ("tanh", np.tanh), ("relu", lambda a: a * (a > 0)),
    ("add", lambda a: a + a), ("bias_grad", lambda a: a.sum(0)),
    ("sum", lambda a: a.sum(1)), ("mean", lambda a: a.mean(1)), ("max", lambda a: a.max(1)),
    ("argmax", lambda a: a.argmax(1)), ("softmax", lambda a: a),
])
def test_zero_size_inputs_give_numpy_results(op, ref):
    fn = getattr(ops, op)
    if op == "add":
        got = fn(EMPTY, EMPTY)
    elif op in ("sum", "mean", "max", "argmax"):
        got = fn(EMPTY, axis=1)
    else:
        got = fn(EMPTY)
    want = ref(EMPTY)
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_zero_size_reductions_follow_numpy():
    np.testing.assert_array_equal(ops.sum(EMPTY, axis=0), np.zeros(6))
    assert float(ops.sum(EMPTY)) == 0.0
    with pytest.warns(RuntimeWarning):
        assert np.isnan(ops.mean(EMPTY))
    with pytest.raises(ValueError, match="zero-size"):
        ops.max(EMPTY, axis=0)
    with pytest.raises(ValueError, match="empty"):
        ops.argmax(EMPTY, axis=0)


def test_zero_size_products_convolutions_and_losses():
    np.testing.assert_array_equal(ops.matmul(np.zeros((3, 0), np.float32),
                                             np.zeros((0, 2), np.float32),
                                             out=np.full((3, 2), np.nan, np.float32)),
                                  np.zeros((3, 2)))
    assert ops.matmul(EMPTY, W).shape == (0, 3)
    assert ops.conv2d(IMG[:0], KER, KB).shape == (0, 4, 4, 4)
    _, gw, gb = ops.conv2d_backward(IMG[:0], KER, np.zeros((0, 4, 4, 4), np.float32))
    np.testing.assert_array_equal(gw, np.zeros_like(KER))
    np.testing.assert_array_equal(gb, np.zeros(4))
    assert ops.max_pool2d(IMG[:, :0], 2).shape == (2, 0, 3, 3)
    assert np.isnan(ops.cross_entropy(EMPTY, np.zeros(0, np.int64)))
    raises(ValueError, "labels", ops.cross_entropy, np.zeros((2, 0), np.float32),
           np.zeros(2, np.int64))


SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 3e38], np.float32)


@pytest.mark.parametrize("op,ref", [
    ("neg", np.negative), ("exp", np.exp), ("log", np.log), ("sqrt", np.sqrt),
    ("tanh", np.tanh), ("sigmoid", lambda a: 1 / (1 + np.exp(-a))),
    ("relu", lambda a: np.where(np.isnan(a), a, np.maximum(a, 0))),
])
def test_unary_ops_propagate_nan_and_inf_like_numpy(op, ref):
    with np.errstate(all="ignore"):
        want = ref(SPECIAL.astype(np.float64)).astype(np.float32)
    got = getattr(ops, op)(SPECIAL)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got[~np.isnan(want)], want[~np.isnan(want)], rtol=1e-6)


@pytest.mark.parametrize("op,ref", [("add", np.add), ("sub", np.subtract),
                                    ("mul", np.multiply), ("div", np.divide)])
def test_binary_ops_propagate_nan_and_inf_like_numpy(op, ref):
    a, b = np.meshgrid(SPECIAL, SPECIAL)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(getattr(ops, op)(a, b), ref(a, b))
        np.testing.assert_array_equal(getattr(ops, op)(a, 0.0), ref(a, np.float32(0)))


def test_reductions_and_products_propagate_nan_and_inf():
    m = np.array([[1, np.nan, 2], [np.inf, -np.inf, 0], [np.inf, 1, 2]], np.float32)
    with np.errstate(all="ignore"):
        for ours, theirs in ((ops.sum, np.sum), (ops.mean, np.mean), (ops.max, np.max)):
            for axis in (None, 0, 1):
                np.testing.assert_array_equal(ours(m, axis), theirs(m, axis))
        for axis in (None, 0, 1):
            np.testing.assert_array_equal(ops.argmax(m, axis), np.argmax(m, axis))
        np.testing.assert_array_equal(np.isnan(ops.matmul(m, np.ones((3, 1), np.float32))),
                                      np.isnan(m @ np.ones((3, 1), np.float32)))
    zero_times_inf = ops.matmul(np.array([[np.inf]], np.float32), np.zeros((1, 1), np.float32))
    assert np.isnan(zero_times_inf).all()


def test_softmax_and_losses_propagate_nan():
    rows = np.array([[np.nan, 1.0], [np.inf, 1.0], [-np.inf, -np.inf], [-np.inf, 0.0]],
                    np.float32)
    got = ops.softmax(rows)
    assert np.isnan(got[:3]).all()
    np.testing.assert_array_equal(got[3], [0, 1])
    assert np.isnan(ops.log_softmax(rows)[:3]).all()
    np.testing.assert_array_equal(ops.log_softmax(rows)[3], [-np.inf, 0])
    assert np.isnan(ops.cross_entropy(rows[:1], np.array([1])))
    assert np.isnan(ops.binary_cross_entropy_with_logits(SPECIAL[:1], np.zeros(1, np.float32)))



def test_pooling_and_convolution_propagate_nan():
    x = np.array([[[[np.nan, 1], [2, 3]]]], np.float32)
    assert np.isnan(ops.max_pool2d(x, 2)).all()
    assert np.isnan(ops.avg_pool2d(x, 2)).all()
    assert np.isnan(ops.conv2d(x, np.zeros((1, 1, 2, 2), np.float32))).all()


# ---- the Tensor, nn and optim surface --------------------------------------------------------

@pytest.mark.parametrize("data", [None, "abc", [1j], [object()], [2**70], {"a": 1}],
                         ids=["None", "str", "complex", "object", "huge-int", "dict"])
def test_tensor_of_data_that_is_not_numbers_is_a_type_error(data):
    raises(TypeError, "data", pyrt.tensor, data)


def test_tensor_keeps_the_shape_of_its_data_like_pytorch():
    torch = pytest.importorskip("torch")
    for data in (3.0, 2, [1.5], [[1, 2]], np.float32(4), np.ones((2, 0))):
        assert pyrt.tensor(data).shape == tuple(torch.tensor(data).shape)
    assert pyrt.tensor(np.ones((3, 4))[:, ::2])._data.flags.c_contiguous
    with pytest.raises(ValueError):
        pyrt.tensor([[1, 2], [3]])
    with pytest.raises(ValueError, match="device"):
        pyrt.tensor([1.0], device="tpu")
    with pytest.raises(RuntimeError, match="floating point dtype can require gradients"):
        pyrt.tensor([1, 2], requires_grad=True)
    raises(ValueError, "size", pyrt.zeros, -1)
    raises(TypeError, "size", pyrt.zeros, 2.5)  # as torch: a size must be an int


def test_tensor_of_uint64_values_beyond_int64_is_a_value_error():
    # integers become int64: these would wrap around to negative values
    for big in (2**63, 2**64 - 1):
        msg = raises(ValueError, "data", pyrt.tensor, np.array([0, big], np.uint64))
        assert str(big) in msg
    small = np.array([0, 2**63 - 1], np.uint64)
    assert pyrt.tensor(small).tolist() == [0, 2**63 - 1]
    assert pyrt.tensor(np.zeros(0, np.uint64)).dtype == np.int64


def test_fill_takes_a_number_or_a_0d_tensor_like_pytorch():
    torch = pytest.importorskip("torch")
    x = pyrt.randn(3, 4)
    before = x._data.copy()
    for bad in (None, "a", [1.0] * 4):
        raises(TypeError, "value", x.fill_, bad)
        with pytest.raises(TypeError):
            torch.zeros(3, 4).fill_(bad)
    raises(TypeError, "value", x.fill_, 1j)
    with pytest.raises(RuntimeError) as theirs:
        torch.zeros(3, 4).fill_(torch.ones(4))
    with pytest.raises(RuntimeError) as ours:
        x.fill_(pyrt.ones(4))
    assert str(ours.value) == str(theirs.value)
    np.testing.assert_array_equal(x._data, before)  # nothing written, no NaN from None
    assert x.fill_(pyrt.tensor(2.5))._data.tolist() == [[2.5] * 4] * 3
    assert x.fill_(np.float32(-1))._data.tolist() == [[-1.0] * 4] * 3


def test_linear_with_a_wrong_input_width_or_type():
    pyrt.manual_seed(0)
    lin = nn.Linear(4, 3)
    msg = raises(ValueError, "input", lin, pyrt.randn(2, 5))
    assert "(3, 4)" in msg
    raises(ValueError, "input", lin, pyrt.randn(2, 1, 5))
    raises(TypeError, "input", lin, np.ones((2, 4), np.float32))
    raises(TypeError, "input", lin, pyrt.tensor([[1, 2, 3, 4]]))
    raises(ValueError, "input", lin, pyrt.tensor(1.0))
    raises(ValueError, "input", nn.Linear(1, 3), pyrt.tensor(1.0))
    for bad in (0, -1, 2.5, "4"):
        raises(ValueError, "in_features", nn.Linear, bad, 3)


def test_conv2d_and_pooling_layers_with_bad_input():
    pyrt.manual_seed(0)
    conv = nn.Conv2d(3, 4, 3)
    assert "input channels" in raises(ValueError, "weight", conv, pyrt.randn(1, 2, 8, 8))
    raises(ValueError, "x", conv, pyrt.randn(3, 8, 8))
    raises(ValueError, "weight's", conv, pyrt.randn(1, 3, 2, 2))
    raises(TypeError, "input", conv, np.ones((1, 3, 8, 8), np.float32))
    raises(ValueError, "kernel_size", nn.Conv2d, 3, 4, 0)
    raises(ValueError, "stride", nn.Conv2d, 3, 4, 3, stride=0)
    raises(ValueError, "padding", nn.Conv2d, 3, 4, 3, padding=-1)
    raises(ValueError, "kernel_size", nn.MaxPool2d, 0)
    raises(ValueError, "x", nn.MaxPool2d(2), pyrt.randn(3, 8, 8))


def test_cross_entropy_loss_with_bad_labels():
    loss = nn.CrossEntropyLoss()
    logits = pyrt.randn(4, 5, requires_grad=True)
    raises(TypeError, "target", loss, logits, pyrt.tensor([0.0, 1.0, 2.0, 3.0]))
    raises(ValueError, "target", loss, logits, pyrt.tensor([0, 1, 2, 5]))
    raises(ValueError, "target", loss, logits, pyrt.tensor([0, -1, 2, 3]))
    raises(ValueError, "target", loss, logits, pyrt.tensor([0, 1, 2]))
    # one sample, [C], takes one class index, a 0-d target
    raises(ValueError, "target must have shape", loss, pyrt.randn(5), pyrt.tensor([0]))
    raises(ValueError, "input must be", loss, pyrt.tensor(1.0), pyrt.tensor(0))
    raises(TypeError, "input", loss, np.ones((4, 5), np.float32), pyrt.tensor([0, 1, 2, 3]))
    raises(ValueError, "reduction", nn.CrossEntropyLoss, reduction="average")
    # labels as an array or a list: the same loss as a tensor of them
    want = float(loss(logits, pyrt.tensor([0, 1, 2, 3])))
    assert float(loss(logits, np.array([0, 1, 2, 3]))) == want
    assert float(loss(logits, [0, 1, 2, 3])) == want


def test_losses_with_targets_of_a_wrong_shape_or_type():
    x = pyrt.randn(4, 5, requires_grad=True)
    raises(ValueError, "targets", nn.BCEWithLogitsLoss(), x, pyrt.randn(4, 1))
    raises(ValueError, "target", nn.MSELoss(), x, pyrt.randn(5))
    raises(TypeError, "operands", nn.MSELoss(), x, "abc")
    raises(TypeError, "target", nn.MSELoss(), x, pyrt.tensor(np.ones((4, 5), np.int64)))
    raises(TypeError, "target", nn.MSELoss(reduction="none"), x, pyrt.Tensor(np.ones((4, 5))))
    raises(TypeError, "input", nn.MSELoss(), pyrt.tensor([1, 2]), pyrt.ones(2))
    target = RNG.standard_normal((4, 5)).astype(np.float32)
    assert float(nn.MSELoss()(x, target)) == float(nn.MSELoss()(x, pyrt.tensor(target)))


@pytest.mark.parametrize("cls,kwargs", [
    ("SGD", {"lr": -0.1}), ("SGD", {"lr": 0.1, "momentum": -1.0}),
    ("SGD", {"lr": 0.1, "weight_decay": -1.0}), ("SGD", {"lr": 0.1, "nesterov": True}),
    ("Adam", {"lr": -1.0}), ("Adam", {"betas": (1.0, 0.9)}), ("Adam", {"betas": (0.9, 1.5)}),
    ("Adam", {"eps": -1.0}), ("Adam", {"weight_decay": -1.0}),
])
def test_optimizers_reject_bad_hyper_parameters_as_pytorch_does(cls, kwargs):
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError) as theirs:
        getattr(torch.optim, cls)([torch.zeros(2, requires_grad=True)], **kwargs)
    with pytest.raises(ValueError) as ours:
        getattr(optim, cls)([pyrt.zeros(2, requires_grad=True)], **kwargs)
    assert str(ours.value) == str(theirs.value)


def test_optimizers_reject_bad_parameter_lists():
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.SGD([], lr=0.1)
    raises(TypeError, "params", optim.SGD, pyrt.randn(2), lr=0.1)
    with pytest.raises(TypeError, match="Tensors"):
        optim.Adam([1.0])
    raises(TypeError, "lr", optim.SGD, [pyrt.zeros(2, requires_grad=True)], lr="0.1")


@pytest.mark.parametrize("cls", ["SGD", "Adam", "AdamW"])
def test_a_parameter_that_cannot_be_updated_in_place_is_named(cls):
    for data in (np.ones(4, np.float32)[::2],
                 np.frombuffer(np.ones(2, np.float32).tobytes(), np.float32)):
        p = nn.Parameter(np.ones(2, np.float32))
        p.grad = pyrt.ones(2)
        p._data = data
        raises(ValueError, "param", getattr(optim, cls)([p], lr=0.1).step)


def test_load_state_dict_with_missing_extra_or_misshapen_keys_like_pytorch():
    torch = pytest.importorskip("torch")
    pyrt.manual_seed(0)
    ours, theirs = nn.Linear(4, 3), torch.nn.Linear(4, 3)
    sd = ours.state_dict()
    before = ours.weight._data.copy()
    cases = [
        ({"weight": sd["weight"]}, "Missing key(s) in state_dict: \"bias\""),
        ({**sd, "extra": sd["bias"]}, "Unexpected key(s) in state_dict: \"extra\""),
        ({**sd, "weight": np.zeros((4, 3), np.float32)}, "size mismatch for weight"),
    ]
    for state, expected in cases:
        with pytest.raises(RuntimeError) as mine:
            ours.load_state_dict(state)
        with pytest.raises(RuntimeError) as ref:
            theirs.load_state_dict({k: torch.from_numpy(np.asarray(v)) for k, v in
                                    state.items()})
        assert expected in str(mine.value) and expected in str(ref.value)
        np.testing.assert_array_equal(ours.weight._data, before)  # nothing copied
    with pytest.raises(RuntimeError, match="weight"):
        ours.load_state_dict({**sd, "weight": "abc"})
    with pytest.raises(TypeError, match="state_dict"):
        ours.load_state_dict([1, 2])
    missing, unexpected = ours.load_state_dict({"weight": sd["weight"]}, strict=False)
    assert missing == ["bias"] and unexpected == []


def test_backward_errors_like_pytorch():
    torch = pytest.importorskip("torch")
    y = pyrt.randn(3, 2, requires_grad=True) * 2
    with pytest.raises(RuntimeError) as theirs:
        (torch.randn(3, 2, requires_grad=True) * 2).backward()
    msg = str(theirs.value)
    assert msg.startswith("grad can be implicitly created only for scalar outputs")
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        y.backward()
    with pytest.raises(RuntimeError, match="does not require grad"):
        pyrt.randn(3).backward()
    raises(ValueError, "gradient", y.backward, pyrt.ones(2, 3))


def test_dimensions_out_of_range_like_pytorch():
    torch = pytest.importorskip("torch")
    for shape, dim in (((3,), 5), ((2, 3, 4), -4), ((), 1)):
        with pytest.raises(IndexError) as theirs:
            torch.zeros(shape).flatten(dim)
        with pytest.raises(IndexError) as ours:
            pyrt.zeros(*shape).flatten(dim)
        assert str(ours.value) == str(theirs.value)
    with pytest.raises(IndexError) as theirs:
        torch.nn.Flatten(5)(torch.zeros(2, 3, 4, 5))
    with pytest.raises(IndexError) as ours:
        nn.Flatten(5)(pyrt.zeros(2, 3, 4, 5))
    assert str(ours.value) == str(theirs.value)
    assert pyrt.zeros(2, 3, 4).flatten(-2).shape == (2, 12)
    raises(IndexError, "Dimension", pyrt.randn(2, 3).sum, 5)


def test_tensor_arithmetic_with_bad_operands_and_division_by_zero():
    torch = pytest.importorskip("torch")
    values = [1.0, -2.0, 0.0]
    x = pyrt.tensor(values, requires_grad=True)
    y = x / 0
    y.backward(pyrt.ones(3))
    tx = torch.tensor(values, requires_grad=True)
    ty = tx / 0
    ty.backward(torch.ones(3))
    np.testing.assert_array_equal(y.detach().numpy(), ty.detach().numpy())
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())
    for bad in (None, "a", [1j, 2, 3]):
        raises(TypeError, "other", lambda b: x + b, bad)
        raises(TypeError, "other", lambda b: x * b, bad)


def test_a_device_array_reaching_the_cpu_op_says_how_to_route_it():
    fake = type("ndarray", (), {"__module__": "cupy._core.core"})
    msg = raises(TypeError, "x", ops.relu, fake())
    assert "CUDA backend is loaded" in msg and "pyrt.cuda.require()" in msg



ACTIVATIONS = {"relu": lambda a: np.maximum(a, 0), "sigmoid": lambda a: 1 / (1 + np.exp(-a)),
               "tanh": np.tanh, "exp": np.exp, "log": np.log, "sqrt": np.sqrt}


@pytest.mark.parametrize("name", list(ACTIVATIONS))
@pytest.mark.parametrize("bad", [[1.0], np.ones(3, np.float32), None])
def test_activation_functions_name_an_input_that_is_not_a_tensor(name, bad):
    # an array has a .data of its own (a memoryview), a list and None have none
    with pytest.raises(TypeError, match=f"{name}: input must be a Tensor, got "
                                        f"{type(bad).__name__}"):
        getattr(pyrt.functional, name)(bad)
    x = pyrt.tensor([0.25, 4.0])
    np.testing.assert_allclose(getattr(pyrt.functional, name)(x).numpy(),
                               ACTIVATIONS[name](x.numpy()), rtol=1e-6)
