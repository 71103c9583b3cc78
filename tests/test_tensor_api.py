"""The parts of the Tensor interface that rearrange, compare and convert, against NumPy and
(where installed) PyTorch: values, gradients, dtypes and PyTorch's errors."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
from pyrt import nn, optim

SHAPES = st.lists(st.integers(1, 5), min_size=1, max_size=4).map(tuple)


def leaf(array):
    return pyrt.tensor(np.asarray(array, np.float32), requires_grad=True)


def grad_of(fn, array, upstream_seed=0):
    """The gradient of sum(fn(x) * w) w.r.t. x, w fixed random weights: a gradient that
    tells every output element apart."""
    x = leaf(array)
    y = fn(x)
    w = np.random.default_rng(upstream_seed).standard_normal(y.shape).astype(np.float32)
    (y * pyrt.tensor(w)).sum().backward()
    return y.detach().numpy(), x.grad.numpy(), w


# ---- comparisons -----------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"])
def test_comparisons_are_elementwise_bool_tensors(op):
    rng = np.random.default_rng(0)
    a = rng.integers(0, 3, (4, 5)).astype(np.float32)
    b = rng.integers(0, 3, (4, 5)).astype(np.float32)
    row = rng.integers(0, 3, (5,)).astype(np.float32)
    ta = pyrt.tensor(a, requires_grad=True)
    for other, ref in [(pyrt.tensor(b), b), (pyrt.tensor(row), row), (1.0, 1.0), (2, 2)]:
        got = getattr(ta, op)(other)
        assert isinstance(got, pyrt.Tensor)
        assert got.dtype == np.bool_ and not got.requires_grad
        np.testing.assert_array_equal(got.numpy(), getattr(a, op)(ref))
    # scalar on the left: Python calls the reflected method
    np.testing.assert_array_equal((1.0 < ta).numpy(), 1.0 < a)


def test_counting_correct_predictions():
    logits = pyrt.tensor(np.array([[0.1, 2.0, 0.3], [3.0, 0.0, 1.0], [0.0, 0.5, 0.2]],
                                  np.float32))
    labels = pyrt.tensor(np.array([1, 2, 1]))
    correct = (logits.argmax(1) == labels).sum()
    assert correct.dtype == np.int64 and correct.item() == 2
    assert (logits.argmax(1) == labels).float().mean().item() == pytest.approx(2 / 3)
    _, predicted = logits.max(1)
    assert predicted.tolist() == [1, 0, 1]


def test_tensors_stay_hashable_by_identity():
    # an optimizer keys its state by parameter, and comparisons are elementwise
    a, b = leaf([1.0, 2.0]), leaf([1.0, 2.0])
    state = {a: "a", b: "b"}
    assert state[a] == "a" and state[b] == "b" and len(state) == 2
    model = nn.Linear(3, 2)
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(pyrt.randn(4, 3)).sum().backward()
    opt.step()
    assert all(p in opt.state for p in model.parameters())


def test_numpy_arrays_meet_tensors_as_in_torch():
    # array op Tensor is a Tensor (NumPy defers to the reflected operator), with gradients
    x = leaf([[1.0, 2.0], [3.0, 4.0]])
    a = np.array([[1.0, -1.0], [0.5, 2.0]], np.float32)
    for y, ref in ((a + x, a + x._data), (a * x, a * x._data), (a - x, a - x._data),
                   (a @ x, a @ x._data), (x @ a, x._data @ a), (x @ a.tolist(), x._data @ a)):
        assert type(y) is pyrt.Tensor and y.requires_grad
        np.testing.assert_allclose(y._data, ref, rtol=1e-6)
    (a @ x).sum().backward()
    np.testing.assert_allclose(x.grad._data, a.T @ np.ones((2, 2), np.float32), rtol=1e-6)
    # np.asarray(tensor) is its data, shared, as numpy() gives it
    t = pyrt.tensor(a)
    assert np.asarray(t) is t._data
    assert np.asarray(t, np.float64).dtype == np.float64
    assert not np.shares_memory(np.array(t, copy=True), t._data)
    with pytest.raises(RuntimeError, match="requires grad"):
        np.asarray(x * 2)
    for bad in (None, "x", object()):
        with pytest.raises(TypeError, match="operands must be Tensors"):
            x @ bad
        with pytest.raises(TypeError, match="operands must be Tensors"):
            bad @ x


def test_truth_value():
    assert bool(pyrt.tensor([1.0])) and not bool(pyrt.tensor(0.0))
    assert bool(pyrt.tensor([2.0]) == 2.0)
    zero_d = pyrt.tensor(2.0) == 2.0
    assert isinstance(zero_d._data, np.ndarray) and zero_d.shape == () and bool(zero_d)
    with pytest.raises(RuntimeError, match="more than one value is ambiguous"):
        bool(pyrt.tensor([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="more than one value is ambiguous"):
        if pyrt.tensor([1.0, 2.0]) == 1.0:
            pass


# ---- dtypes ----------------------------------------------------------------------------------


def test_sum_of_integers_and_bools_is_int64():
    for data in ([True, False, True], [1, 2, 3]):
        t = pyrt.tensor(np.array(data))
        s = t.sum()
        assert s.dtype == np.int64 and s.item() == np.sum(data)
        # whole-tensor results are 0-d arrays, as every tensor's data is
        for whole in (s, t.max(), t.min(), t.argmax()):
            assert isinstance(whole._data, np.ndarray) and whole.shape == ()
            assert repr(whole).startswith("tensor(")
    np.testing.assert_array_equal(pyrt.tensor(np.array([[1, 2], [3, 4]])).sum(0).numpy(),
                                  [4, 6])
    with pytest.raises(RuntimeError, match="floating point"):
        pyrt.tensor(np.array([1, 2])).mean()


def test_float_and_long():
    t = pyrt.tensor(np.array([1, 2, 3]))
    f = t.float()
    assert f.dtype == np.float32 and f.tolist() == [1.0, 2.0, 3.0]
    x = leaf([1.5, -2.5])
    assert x.float() is x
    assert x.long().dtype == np.int64 and x.long().tolist() == [1, -2]
    assert not x.long().requires_grad


# ---- max and min -----------------------------------------------------------------------------


@settings(max_examples=30, deadline=None, derandomize=True)
@given(shape=SHAPES, data=st.data())
def test_max_and_min_along_a_dim(shape, data):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    keepdim = data.draw(st.booleans())
    x = np.random.default_rng(len(shape)).permutation(int(np.prod(shape))).reshape(shape)
    x = x.astype(np.float32)  # distinct values: one maximum per slice
    for name, ref, arg in [("max", np.max, np.argmax), ("min", np.min, np.argmin)]:
        t = leaf(x)
        result = getattr(t, name)(dim, keepdim)
        values, indices = result
        assert result.values is values and result.indices is indices
        np.testing.assert_array_equal(values.detach().numpy(), ref(x, axis=dim, keepdims=keepdim))
        np.testing.assert_array_equal(indices.numpy(), arg(x, axis=dim, keepdims=keepdim))
        assert indices.dtype == np.int64
        values.sum().backward()
        expect = np.zeros_like(x)
        np.put_along_axis(expect, arg(x, axis=dim, keepdims=True), 1.0, axis=dim)
        np.testing.assert_array_equal(t.grad.numpy(), expect)


def test_max_and_min_of_all_elements():
    t = leaf([[3.0, -1.0], [7.0, 2.0]])
    assert t.max().item() == 7.0 and t.min().item() == -1.0
    t.min().backward()
    np.testing.assert_array_equal(t.grad.numpy(), [[0, 1], [0, 0]])


# ---- rearranging -----------------------------------------------------------------------------


@settings(max_examples=40, deadline=None, derandomize=True)
@given(shape=SHAPES, data=st.data())
def test_permute_and_transpose(shape, data):
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    order = data.draw(st.permutations(range(len(shape))))
    y, g, w = grad_of(lambda t: t.permute(*order), x)
    np.testing.assert_array_equal(y, x.transpose(order))
    np.testing.assert_array_equal(g, w.transpose(np.argsort(order)))
    assert y.flags.c_contiguous
    d0 = data.draw(st.integers(-len(shape), len(shape) - 1))
    d1 = data.draw(st.integers(-len(shape), len(shape) - 1))
    y, g, w = grad_of(lambda t: t.transpose(d0, d1), x)
    np.testing.assert_array_equal(y, np.swapaxes(x, d0, d1))
    np.testing.assert_array_equal(g, np.swapaxes(w, d0, d1))


def test_squeeze_and_unsqueeze():
    x = np.arange(6, dtype=np.float32).reshape(2, 1, 3, 1)
    t = leaf(x)
    assert t.squeeze().shape == (2, 3)
    assert t.squeeze(1).shape == (2, 3, 1)
    assert t.squeeze(-1).shape == (2, 1, 3)
    assert t.squeeze(0).shape == (2, 1, 3, 1)  # size 2: unchanged
    assert t.unsqueeze(0).shape == (1, 2, 1, 3, 1)
    assert t.unsqueeze(-1).shape == (2, 1, 3, 1, 1)
    assert t.unsqueeze(4).shape == (2, 1, 3, 1, 1)
    _, g, w = grad_of(lambda v: v.squeeze().unsqueeze(1), x)
    np.testing.assert_array_equal(g, w.reshape(x.shape))
    with pytest.raises(IndexError, match="Dimension out of range"):
        t.unsqueeze(5)
    with pytest.raises(IndexError, match="Dimension out of range"):
        t.squeeze(4)


@settings(max_examples=30, deadline=None, derandomize=True)
@given(shape=SHAPES, sizes=st.lists(st.integers(1, 4), min_size=1, max_size=4),
       data=st.data())
def test_cat_and_stack(shape, sizes, data):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    rng = np.random.default_rng(2)
    at = dim % len(shape)
    parts = [rng.standard_normal(shape[:at] + (n,) + shape[at + 1:]).astype(np.float32)
             for n in sizes]
    leaves = [leaf(p) for p in parts]
    out = pyrt.cat(leaves, dim)
    np.testing.assert_array_equal(out.detach().numpy(), np.concatenate(parts, axis=dim))
    w = rng.standard_normal(out.shape).astype(np.float32)
    (out * pyrt.tensor(w)).sum().backward()
    for piece, t in zip(np.split(w, np.cumsum(sizes)[:-1], axis=dim), leaves):
        np.testing.assert_array_equal(t.grad.numpy(), piece)

    same = [rng.standard_normal(shape).astype(np.float32) for _ in sizes]
    leaves = [leaf(p) for p in same]
    sdim = data.draw(st.integers(-len(shape) - 1, len(shape)))
    out = pyrt.stack(leaves, sdim)
    np.testing.assert_array_equal(out.detach().numpy(), np.stack(same, axis=sdim))
    w = rng.standard_normal(out.shape).astype(np.float32)
    (out * pyrt.tensor(w)).sum().backward()
    for i, t in enumerate(leaves):
        np.testing.assert_array_equal(t.grad.numpy(), np.take(w, i, axis=sdim))


def test_cat_and_stack_errors():
    a, b = pyrt.zeros(2, 3), pyrt.zeros(2, 4)
    assert pyrt.cat([a, b], 1).shape == (2, 7)
    with pytest.raises(RuntimeError, match="Sizes of tensors must match except in dimension 0"):
        pyrt.cat([a, b])
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        pyrt.stack([a, b])
    with pytest.raises(ValueError, match="non-empty"):
        pyrt.cat([])
    with pytest.raises(TypeError, match="sequence of Tensors"):
        pyrt.cat(a)
    with pytest.raises(TypeError, match="element 1 is ndarray"):
        pyrt.stack([a, np.zeros((2, 3), np.float32)])
    with pytest.raises(TypeError, match="one dtype"):
        pyrt.cat([a, pyrt.tensor(np.zeros((2, 3), np.int64))])
    with pytest.raises(IndexError, match="Dimension out of range"):
        pyrt.cat([a, a], 2)


def test_against_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    ops = [
        lambda m, t: t.permute(2, 0, 1) * 2,
        lambda m, t: t.transpose(0, 2).abs(),
        lambda m, t: t.clamp(-0.5, 0.5).unsqueeze(1).squeeze(),
        lambda m, t: m.cat([t, t ** 3], 1),
        lambda m, t: m.stack([t, t.abs()], -1).max(1)[0],
        lambda m, t: t.min(2).values,
    ]
    for op in ops:
        p = leaf(x)
        q = torch.tensor(x, requires_grad=True)
        yp, yq = op(pyrt, p), op(torch, q)
        np.testing.assert_allclose(yp.detach().numpy(), yq.detach().numpy(), rtol=1e-6)
        w = rng.standard_normal(yq.shape).astype(np.float32)
        (yp * pyrt.tensor(w)).sum().backward()
        (yq * torch.tensor(w)).sum().backward()
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-6)


# ---- in-place ops ----------------------------------------------------------------------------

IN_PLACE = [
    (lambda t, o: t.add_(o), "add_"),
    (lambda t, o: t.sub_(o), "sub_"),
    (lambda t, o: t.mul_(o), "mul_"),
    (lambda t, o: t.div_(o), "div_"),
    (lambda t, o: t.add_(o, alpha=-0.5), "add_ alpha"),
    (lambda t, o: t.sub_(o, alpha=2), "sub_ alpha"),
]


def _iadd(t, o):
    t += o
    return t


def _isub(t, o):
    t -= o
    return t


def _imul(t, o):
    t *= o
    return t


def _idiv(t, o):
    t /= o
    return t


@pytest.mark.parametrize("op", [op for op, _ in IN_PLACE] + [_iadd, _isub, _imul, _idiv])
def test_in_place_arithmetic_writes_into_the_tensor_as_torch(op):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    others = [rng.uniform(0.5, 2.0, (2, 3)).astype(np.float32),
              rng.uniform(0.5, 2.0, (3,)).astype(np.float32), 1.5, 3]
    for other in others:
        for requires_grad in (True, False):
            p = pyrt.tensor(x, requires_grad=requires_grad)
            q = torch.tensor(x, requires_grad=requires_grad)
            buffer = p._data
            wrap_p = pyrt.tensor if isinstance(other, np.ndarray) else (lambda v: v)
            wrap_q = torch.tensor if isinstance(other, np.ndarray) else (lambda v: v)
            with pyrt.no_grad(), torch.no_grad():
                result = op(p, wrap_p(other))
                op(q, wrap_q(other))
            assert result is p and p._data is buffer and p.is_leaf
            assert p.requires_grad == requires_grad
            np.testing.assert_allclose(p._data, q.detach().numpy(), rtol=1e-6)
    # integer tensors stay integer; a float result cannot go into them, as in torch
    n = pyrt.tensor([1, 2, 3])
    n += 2
    n.mul_(pyrt.tensor([1, 0, 1]))
    assert n.dtype == np.int64 and n.tolist() == [3, 0, 5]


def test_in_place_errors_match_torch():
    torch = pytest.importorskip("torch")

    def error(fn, lib):
        with pytest.raises(Exception) as info:
            fn(lib)
        return info.type

    leaf_ops = [lambda t: t.add_(1.0), lambda t: t.sub_(1.0), lambda t: t.mul_(2.0),
                lambda t: t.div_(2.0), lambda t: t.zero_(), lambda t: t.fill_(1.0),
                lambda t: t.copy_(t.detach() * 2), _iadd]
    for op in leaf_ops:
        for lib in (pyrt, torch):
            w = lib.tensor([2.0, 4.0], requires_grad=True)
            with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is "
                                                   "being used in an in-place operation"):
                op(w, 1.0) if op is _iadd else op(w)
    for fn in (lambda m: m.tensor([1, 2]).add_(1.5), lambda m: m.tensor([1, 2]).div_(2),
               lambda m: m.tensor([1.0, 2.0]).add_(m.ones(2, 2)),
               lambda m: m.tensor([1, 2]).add_(m.tensor([1, 2]), alpha=2.5),
               lambda m: m.tensor([True]).sub_(m.tensor([True]))):
        assert error(fn, pyrt) is error(fn, torch) is RuntimeError
    with pytest.raises(RuntimeError, match="broadcast"):
        pyrt.tensor([1.0, 2.0]).add_(pyrt.ones(3))
    for alpha in ("2", True, [2.0]):  # torch: TypeError, or a RuntimeError for a bool
        t = pyrt.tensor([1.0, 2.0])
        with pytest.raises(TypeError, match="sub_\\(\\): argument 'alpha' must be a real"):
            t.sub_(pyrt.ones(2), alpha=alpha)
        np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])  # nothing written


def test_in_place_ops_in_a_graph_are_recorded_or_refused():
    """As PyTorch records them: on a tensor with history, or with an operand that requires
    grad, the op joins the graph; on a tensor a recorded op has already read, pyrt refuses
    (that op's gradient would follow the new value)."""
    w = pyrt.tensor([2.0, 4.0], requires_grad=True)
    y = w * 2.0
    assert y.add_(1.0) is y and y.tolist() == [5.0, 9.0]
    y.mul_(w)  # d/dw (2w + 1) w = 4w + 1
    y.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [9.0, 17.0])
    w.grad = None
    buffer = pyrt.zeros(2)
    buffer += w
    assert buffer.requires_grad
    (buffer * 3.0).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [3.0, 3.0])
    w.grad = None
    copied = pyrt.zeros(2)
    copied.copy_(w * w)
    copied.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [4.0, 8.0])
    read = w * 2.0
    product = read * read
    with pytest.raises(RuntimeError, match="already read is not supported"):
        read.add_(1.0)
    constant = pyrt.ones(2)
    scaled = w * constant  # reads the constant for w's gradient
    with pytest.raises(RuntimeError, match="already read is not supported"):
        constant += w
    with pyrt.no_grad():  # the user's word that no gradient is wanted
        buffer += w
        buffer.copy_(product)
    np.testing.assert_array_equal(buffer._data, [16.0, 64.0])
    scaled.sum().backward()


INDEXED_WRITES = [
    (0, 5), (-1, 2.5), ((1, slice(1, 3)), -1.0), ((slice(None), 3), [1.0, 2.0, 3.0]),
    ("mask", 7.0), ("rows", "tensor"), (("rows", 1), [8.0, 9.0]), ((Ellipsis, 0), 0.5),
]


@pytest.mark.parametrize("index,value", INDEXED_WRITES)
def test_item_assignment_writes_as_torch(index, value):
    torch = pytest.importorskip("torch")
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    ours, theirs = pyrt.tensor(a), torch.tensor(a)

    def convert(x, lib):
        if x == "mask":
            return lib.tensor([True, False, True])
        if x == "rows":
            return lib.tensor([0, 2])
        if x == "tensor":
            return lib.tensor(np.full(4, 6.0, np.float32))
        if isinstance(x, tuple):
            return tuple(convert(i, lib) for i in x)
        if isinstance(x, list):
            return lib.tensor(x)
        return x

    ours[convert(index, pyrt)] = convert(value, pyrt)
    theirs[convert(index, torch)] = convert(value, torch)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    # and reading back through the same index
    np.testing.assert_array_equal(ours[convert(index, pyrt)].numpy(),
                                  theirs[convert(index, torch)].numpy())


def test_item_assignment_is_checked_as_in_place_ops():
    w = pyrt.tensor([2.0, 4.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        w[0] = 1.0
    hidden = w * 2.0
    hidden[1] = 0.0  # recorded: the written position passes no gradient
    hidden.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [2.0, 0.0])
    w.grad = None
    buffer = pyrt.zeros(3)
    buffer[1:] = w  # recorded: w's gradient is that of the positions it was written to
    (buffer * pyrt.tensor([1.0, 2.0, 3.0])).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [2.0, 3.0])
    w.grad = None
    read = w * 1.0
    read.exp()
    with pytest.raises(RuntimeError, match="already read"):
        read[0] = 1.0
    with pyrt.no_grad():
        w[0] = 1.0
    np.testing.assert_array_equal(w._data, [1.0, 4.0])
    # a constant written after a forward that reads it: backward refuses, as torch's version
    # counter makes it
    x = pyrt.tensor([3.0, 5.0])
    y = (w * x).sum()
    x[1] = 0.0
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()
    labels = pyrt.tensor([1, 2, 3])
    labels[0] = 2.7  # NumPy's (and torch's) cast into the tensor's dtype
    assert labels.dtype == np.int64 and labels.tolist() == [2, 2, 3]
    with pytest.raises(IndexError):
        labels[5] = 1
    for bad in (None, "3"):
        with pytest.raises(TypeError, match="can't assign a"):
            labels[0] = bad
    with pytest.raises(ValueError):
        labels[:2] = [1, 2, 3]


def test_basic_indexing_gives_views_that_write_through():
    torch = pytest.importorskip("torch")
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    ours, theirs = pyrt.tensor(a), torch.tensor(a)
    for t in (ours, theirs):
        t[:, 1][0] = 50.0
        t[::2][1] = 70.0
        t[0:2][0, 0] = 5.0
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    # a strided view goes through the ops as any tensor does, with gradients
    w = pyrt.tensor(a, requires_grad=True)
    col = w[:, 1:3]
    assert not col._data.flags.c_contiguous
    (col * col).sum().backward()
    want = np.zeros_like(a)
    want[:, 1:3] = 2 * a[:, 1:3]
    np.testing.assert_array_equal(w.grad.numpy(), want)


def test_an_index_written_after_the_forward_does_not_move_the_gradient():
    a = pyrt.tensor(np.ones((3, 2), np.float32), requires_grad=True)
    idx = pyrt.tensor(np.array([0]))
    y = a[idx]
    idx[0] = 2
    y.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy()[:, 0], [1.0, 0.0, 0.0])


def test_fill_of_a_leaf_cannot_corrupt_a_saved_value():
    w = pyrt.tensor([2.0, 4.0], requires_grad=True)
    log = w.log()
    with pytest.raises(RuntimeError, match="leaf Variable"):
        w.fill_(1.0)
    log.sum().backward()
    np.testing.assert_allclose(w.grad._data, [0.5, 0.25])
    with pyrt.no_grad():
        w.fill_(1.0)
        w.grad.zero_()
    assert w.tolist() == [1.0, 1.0] and w.grad.tolist() == [0.0, 0.0]


# ---- type promotion --------------------------------------------------------------------------


def test_arithmetic_promotes_int_and_bool_like_torch():
    torch = pytest.importorskip("torch")
    values = {"float": [1.5, -2.0, 3.0], "long": [2, 0, -3], "bool": [True, False, True]}
    operands = [("tensor", kind) for kind in values] + [("scalar", 2), ("scalar", 0.5),
                                                        ("scalar", True)]

    def make(lib, operand):
        what, v = operand
        return lib.tensor(values[v]) if what == "tensor" else v

    for a in operands:
        for b in operands:
            if a[0] == b[0] == "scalar":
                continue
            for op in ("__add__", "__sub__", "__mul__", "__truediv__"):
                try:
                    want = getattr(make(torch, a), op)(make(torch, b))
                except RuntimeError:
                    with pytest.raises(RuntimeError):
                        getattr(make(pyrt, a), op)(make(pyrt, b))
                    continue
                if want is NotImplemented:
                    continue
                got = getattr(make(pyrt, a), op)(make(pyrt, b))
                if got is NotImplemented:  # a scalar on the left: Python reflects
                    got = getattr(make(pyrt, b), op.replace("__", "__r", 1))(make(pyrt, a))
                assert str(got.dtype) == str(want.dtype).replace("torch.", ""), (a, b, op)
                assert not got.requires_grad
                np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    assert (-pyrt.tensor([1, 2])).tolist() == [-1, -2]
    with pytest.raises(RuntimeError, match="Negation"):
        -pyrt.tensor([True])


def test_unsupported_operands_are_named():
    x = pyrt.tensor([1.0, 2.0])
    with pytest.raises(TypeError, match=r"add\(\): other must be a Tensor"):
        x + "a"
    with pytest.raises(TypeError, match=r"mul\(\): input is a tensor of dtype float64"):
        pyrt.Tensor(np.ones(2)) * pyrt.tensor([1, 2])
    # accuracy as torch writes it: an int64 count divided by an int
    labels = pyrt.tensor([1, 2, 3])
    accuracy = (labels == pyrt.tensor([1, 0, 3])).sum() / 3
    assert accuracy.dtype == np.float32 and accuracy.item() == pytest.approx(2 / 3)


# ---- transposes, shapes and dims -------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:.*x.T.*:UserWarning")  # torch's, for 0-d and 3-d
@pytest.mark.filterwarnings("ignore:Tensor.T is deprecated:UserWarning")
def test_t_and_T_like_torch():
    torch = pytest.importorskip("torch")
    for shape in ((), (3,), (2, 3), (2, 3, 4)):
        x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
        for name in ("t", "T"):
            p, q = leaf(x), torch.tensor(x, requires_grad=True)
            if name == "t" and len(shape) > 2:
                for lib_t in (p, q):
                    with pytest.raises(RuntimeError, match="t\\(\\) expects a tensor with <= 2"):
                        lib_t.t()
                continue
            with pytest.warns(UserWarning) if name == "T" and len(shape) > 2 else _nothing():
                yp = p.t() if name == "t" else p.T
            yq = q.t() if name == "t" else q.T
            assert yp.shape == tuple(yq.shape)
            np.testing.assert_array_equal(yp.detach().numpy(), yq.detach().numpy())
            w = np.random.default_rng(1).standard_normal(yp.shape).astype(np.float32)
            (yp * pyrt.tensor(w)).sum().backward()
            (yq * torch.tensor(w)).sum().backward()
            np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy())


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_the_tensor_class_takes_sequences_as_torch_tensor_does():
    # a list or tuple becomes float32 (torch.Tensor's dtype), integers and bools included
    for data in ([1.0, 2.5], [[1, 2], [3, 4]], ((True,), (False,)), []):
        t = pyrt.Tensor(data)
        expected = np.array(data, dtype=np.float32)
        assert t.dtype == np.float32 and t.shape == expected.shape
        np.testing.assert_array_equal((t * 2).numpy(), expected * 2)
    # an array is wrapped as it is, sharing its memory; a Tensor's array is shared too
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert pyrt.Tensor(a)._data is a and pyrt.Tensor(pyrt.Tensor(a))._data is a
    assert pyrt.Tensor(np.float32(2.5)).shape == () and pyrt.Tensor(3).dtype == np.int64
    w = pyrt.Tensor([[0.5, -1.0]], requires_grad=True)
    (w * w).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [[1.0, -2.0]])
    for bad, words in ((None, "got NoneType"), ("12", "got str"), ({1: 2}, "got dict"),
                       ([[1.0], [2.0, 3.0]], "of one shape"), (["a"], "of one shape")):
        with pytest.raises(TypeError, match=r"Tensor\(data\): data must be .*" + words):
            pyrt.Tensor(bad)


def test_integer_powers_and_clamps_stay_int64_and_exact():
    values = np.array([1, 5, -3, 0, 2**20 + 1, -(2**25) - 1], np.int64)
    t = pyrt.tensor(values)
    exact = [(t ** 3, values ** 3), (t ** 1, values), (t ** 0, values ** 0),
             (t.clamp(-4, 2**25), np.clip(values, -4, 2**25)),
             (t.clamp(max=3), np.minimum(values, 3)), (t.clamp(min=2**24 + 3),
                                                       np.maximum(values, 2**24 + 3))]
    for got, expected in exact:
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got.numpy(), expected)
    # a float exponent or bound gives float32, as PyTorch promotes
    assert (t ** 0.5).dtype == np.float32 and t.clamp(min=0.5).dtype == np.float32
    with pytest.raises(RuntimeError, match="Integers to negative integer powers"):
        t ** -1
    # floats keep their gradients
    x = pyrt.tensor([1.5, -2.0], requires_grad=True)
    (x ** 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [6.75, 12.0])


def test_flatten_of_zero_size_and_0d_tensors_like_torch():
    torch = pytest.importorskip("torch")
    for shape, start in (((0, 3, 4), 1), ((0, 3, 4), 0), ((2, 0, 4), 1), ((2, 3, 0), 2),
                         ((), 0), ((2, 3, 4), -1)):
        got = pyrt.zeros(*shape).flatten(start)
        assert got.shape == tuple(torch.zeros(shape).flatten(start).shape)


def test_reshape_refuses_negative_sizes_but_one_minus_one():
    torch = pytest.importorskip("torch")
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    for shape in ((-2, 6), (-1, -1), (5, -1), (5, 3)):
        with pytest.raises(RuntimeError) as ours:
            pyrt.tensor(x).reshape(*shape)
        with pytest.raises(RuntimeError) as theirs:
            torch.tensor(x).reshape(*shape)
        assert str(ours.value).split(" at index")[0] == str(theirs.value).split(" at index")[0]
    assert pyrt.tensor(x).view(-1, 6).shape == (2, 6)


@pytest.mark.parametrize("call, integers_too", [
    (lambda t: t.sum(dim=3), True), (lambda t: t.mean(dim=-2), False),
    (lambda t: t.max(dim=1), True), (lambda t: t.min(dim=2), True),
    (lambda t: t.argmax(dim=5), True), (lambda t: t.softmax(dim=1), False),
    (lambda t: t.log_softmax(dim=-3), False), (lambda t: t.sum(dim=(0, 1)), True),
    (lambda t: t.size(1), True),
])
def test_dims_out_of_range_are_index_errors_as_in_torch(call, integers_too):
    torch = pytest.importorskip("torch")
    # mean and softmax of integers are refused for their dtype first
    for data in ([1.0, 2.0, 3.0], [1, 2, 3]) if integers_too else ([1.0, 2.0, 3.0],):
        with pytest.raises(IndexError) as theirs:
            call(torch.tensor(data))
        with pytest.raises(IndexError) as ours:
            call(pyrt.tensor(data))
        assert str(ours.value) == str(theirs.value)


def test_reduction_dims_are_checked_like_torch():
    x = pyrt.tensor(np.ones((2, 3), np.float32))
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times"):
        x.sum(dim=(0, -2))
    assert x.sum(dim=(0, -1)).item() == 6.0
    assert pyrt.tensor(2.0).sum(0).shape == ()  # a 0-d tensor has dims 0 and -1
    with pytest.raises(IndexError, match="no dimensions"):
        pyrt.tensor(2.0).size(0)


# ---- gradients, conversions and creation -----------------------------------------------------


def test_assigned_grad_is_checked_as_in_torch():
    torch = pytest.importorskip("torch")
    for bad, error in (([1.0, 3.0], TypeError), ("grad", TypeError),
                       (np.ones(3, np.float32), RuntimeError),
                       (np.array([1, 2]), RuntimeError)):
        for lib in (pyrt, torch):
            x = lib.tensor([1.0, 2.0], requires_grad=True)
            value = lib.tensor(bad) if isinstance(bad, np.ndarray) else bad
            with pytest.raises(error):
                x.grad = value
            assert x.grad is None
    x = leaf([1.0, 2.0])
    x.grad = pyrt.tensor([0.5, 0.5])
    (x * 2.0).sum().backward()
    assert x.grad.tolist() == [2.5, 2.5]
    x.grad = None
    assert x.grad is None


def test_numpy_of_a_tensor_that_requires_grad_is_refused():
    x = leaf([1.0, 2.0])
    for call in (x.numpy, lambda: np.asarray(x), (x * 2).numpy):
        with pytest.raises(RuntimeError, match=r"Can't call numpy\(\) on Tensor that requires "
                                               r"grad. Use tensor.detach\(\).numpy\(\)"):
            call()
    assert x.detach().numpy() is x._data
    with pyrt.no_grad():
        assert (x * 2).numpy().tolist() == [2.0, 4.0]


def test_int_index_and_float_conversions_like_torch():
    torch = pytest.importorskip("torch")
    for value in (2.5, -2.5, [3.0], 7, True, [2]):
        for convert in (int, float, bool, lambda t: [10, 20, 30, 40, 50, 60, 70, 80][t]):
            try:
                want = convert(torch.tensor(value))
            except TypeError:
                with pytest.raises(TypeError, match="only integer tensors of a single element"):
                    convert(pyrt.tensor(value))
                continue
            got = convert(pyrt.tensor(value))
            assert got == want and type(got) is type(want)
    assert list(range(pyrt.tensor(3))) == [0, 1, 2]
    with pytest.raises(ValueError, match="only one element tensors"):
        int(pyrt.tensor([1, 2]))


def test_creation_dtypes_and_requires_grad_like_torch():
    torch = pytest.importorskip("torch")
    for data in ([True], [True, False], [[1, 2]], [1.5]):
        got, want = pyrt.tensor(data), torch.tensor(data)
        assert str(got.dtype) == str(want.dtype).replace("torch.", "").replace("long", "int64")
    with pytest.raises(TypeError, match="complex"):
        pyrt.tensor([1, 2], dtype=np.complex64)
    with pytest.raises(TypeError, match="real numbers"):
        pyrt.tensor(np.array([1j]))
    for data in ([1, 2], [True]):
        for lib in (pyrt, torch):
            t = lib.tensor(data)
            with pytest.raises(RuntimeError, match="floating point"):
                t.requires_grad = True
            assert not t.requires_grad
    y = leaf([1.0]) * 2
    with pytest.raises(RuntimeError, match="leaf variables"):
        y.requires_grad = False
    x = pyrt.tensor([1.0])
    x.requires_grad = True
    assert x.requires_grad and (x * 2).requires_grad


# ---- dtypes, conversion and factories under PyTorch's names ----------------------------------


def test_grad_fn_marks_tensors_made_by_ops():
    x = leaf([1.0, 2.0])
    assert x.grad_fn is None and x.is_leaf
    y = x * 2
    assert y.grad_fn is not None and not y.is_leaf
    assert (pyrt.tensor([1.0]) * 2).grad_fn is None  # nothing to differentiate
    with pyrt.no_grad():
        assert (x * 2).grad_fn is None


def test_dtype_names_compare_with_tensor_dtypes():
    assert pyrt.zeros(2).dtype == pyrt.float32 == pyrt.float
    assert pyrt.tensor([1, 2]).dtype == pyrt.int64 == pyrt.long
    assert pyrt.tensor([True]).dtype == pyrt.bool_ == pyrt.bool
    assert "float" not in pyrt.__all__ and "bool" not in pyrt.__all__  # they shadow builtins
    assert pyrt.tensor([1, 2], dtype=pyrt.float32).dtype == np.float32


def test_to_converts_dtype_and_device_as_torch():
    torch = pytest.importorskip("torch")
    x = np.array([[1.7, -2.5], [0.0, 3.2]], np.float32)
    p, q = pyrt.tensor(x), torch.tensor(x)
    for ours, theirs in ((pyrt.int64, torch.int64), (pyrt.bool_, torch.bool),
                         (pyrt.float32, torch.float32)):
        for args in ((ours,), ("cpu", ours)):
            got = p.to(*args)
            assert got.dtype == ours
            np.testing.assert_array_equal(got.numpy(), q.to(theirs).numpy())
        np.testing.assert_array_equal(p.to(dtype=ours).numpy(), q.to(dtype=theirs).numpy())
    assert p.to(pyrt.float32) is p and p.to("cpu") is p and p.to(p) is p
    labels = pyrt.tensor([3, 1])
    assert p.to(labels).dtype == pyrt.int64 and labels.to(np.float32).dtype == pyrt.float32
    w = leaf(x)
    assert w.to("cpu", pyrt.float32) is w
    assert not w.to(pyrt.int64).requires_grad  # an integer tensor is outside autograd
    with pytest.raises(TypeError, match="dtype given twice"):
        p.to(pyrt.int64, dtype=pyrt.float32)
    with pytest.raises(TypeError, match="device given twice"):
        p.to("cpu", device="cpu")
    with pytest.raises(TypeError, match="at most 2 positional"):
        p.to("cpu", pyrt.int64, False)
    with pytest.raises(ValueError, match="device must be"):
        p.to("float32")
    with pytest.raises(TypeError, match="real or bool dtype"):
        p.to(np.complex64)


def test_factories_take_a_dtype():
    assert pyrt.zeros(2, 3, dtype=pyrt.int64).numpy().tolist() == [[0, 0, 0], [0, 0, 0]]
    assert pyrt.ones(2, dtype=pyrt.bool_).numpy().tolist() == [True, True]
    assert pyrt.empty(4, dtype=pyrt.long).dtype == np.int64
    assert pyrt.zeros(2).dtype == np.float32  # float32 by default
    with pytest.raises(RuntimeError, match="floating point"):
        pyrt.zeros(2, dtype=pyrt.int64, requires_grad=True)
    with pytest.raises(TypeError, match="dtype must be a dtype"):
        pyrt.ones(2, dtype="no such dtype")
    with pytest.raises(TypeError, match="real or bool dtype"):
        pyrt.ones(2, dtype=np.complex64)


@settings(max_examples=60, deadline=None)
@given(start=st.one_of(st.integers(-20, 20), st.floats(-20, 20).map(lambda v: round(v, 2))),
       end=st.one_of(st.none(), st.integers(-20, 20),
                     st.floats(-20, 20).map(lambda v: round(v, 2))),
       step=st.one_of(st.integers(-5, 5), st.sampled_from([0.25, -0.5, 1.5, 0.1])))
def test_arange_matches_torch(start, end, step):
    torch = pytest.importorskip("torch")
    args = (start,) if end is None else (start, end, step)
    try:
        want = torch.arange(*args)
    except RuntimeError:  # a zero step, or bounds against the step's sign
        with pytest.raises(ValueError, match="arange"):
            pyrt.arange(*args)
        return
    got = pyrt.arange(*args)
    assert str(got.dtype) == str(want.dtype).replace("torch.", "")
    assert got.shape == tuple(want.shape)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)


def test_arange_arguments():
    assert pyrt.arange(3, dtype=pyrt.float32).numpy().tolist() == [0.0, 1.0, 2.0]
    assert pyrt.arange(0, 1, 0.5, requires_grad=True).requires_grad
    for bad in ("3", None, True, [3]):
        with pytest.raises(TypeError, match="arange"):
            pyrt.arange(bad)
    with pytest.raises(ValueError, match="finite"):
        pyrt.arange(0, float("inf"))
    with pytest.raises(RuntimeError, match="floating point"):
        pyrt.arange(3, requires_grad=True)


# ---- where -----------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(shapes=st.lists(SHAPES.map(lambda s: s[-2:]), min_size=3, max_size=3),
       seed=st.integers(0, 2**16))
def test_where_values_and_gradients_match_torch(shapes, seed):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(seed)
    # each operand's dims set to 1 at random, so that the three broadcast together
    full = tuple(max(d) for d in zip(*[s[-2:] if len(s) == 2 else (1,) + s for s in shapes]))
    cs, xs, ys = (tuple(n if rng.random() < 0.6 else 1 for n in full)[-len(s):] for s in shapes)
    c = rng.random(cs) < 0.5
    x = rng.standard_normal(xs).astype(np.float32)
    y = rng.standard_normal(ys).astype(np.float32)
    p, q = leaf(x), leaf(y)
    out = pyrt.where(pyrt.tensor(c), p, q)
    tp, tq = (torch.tensor(v, requires_grad=True) for v in (x, y))
    ref = torch.where(torch.tensor(c), tp, tq)
    np.testing.assert_array_equal(out.detach().numpy(), ref.detach().numpy())
    w = rng.standard_normal(ref.shape).astype(np.float32)
    (out * pyrt.tensor(w)).sum().backward()
    (ref * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(q.grad.numpy(), tq.grad.numpy(), rtol=1e-6, atol=1e-6)


def test_where_promotes_and_checks_like_torch():
    torch = pytest.importorskip("torch")
    c = [True, False, True]
    cases = [(pyrt.tensor([1, 2, 3]), 0.5), (pyrt.tensor([1, 2, 3]), pyrt.tensor([4, 5, 6])),
             (1.0, pyrt.zeros(3)), (pyrt.tensor([True, True, False]), False)]
    for a, b in cases:
        got = pyrt.where(pyrt.tensor(c), a, b)
        ta, tb = (torch.tensor(v.numpy()) if isinstance(v, pyrt.Tensor) else v for v in (a, b))
        want = torch.where(torch.tensor(c), ta, tb)
        assert str(got.dtype) == str(want.dtype).replace("torch.", "")
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    x = leaf([1.0, -2.0, 3.0])
    y = x.where(x > 0, 0.0)  # the method: self where the condition holds
    y.sum().backward()
    assert y.detach().numpy().tolist() == [1.0, 0.0, 3.0]
    assert x.grad.numpy().tolist() == [1.0, 0.0, 1.0]
    with pytest.raises(TypeError, match="condition must be a bool tensor"):
        pyrt.where(pyrt.tensor([1, 0]), 1.0, 0.0)
    with pytest.raises(ValueError, match="where"):
        pyrt.where(pyrt.tensor([True, False]), pyrt.zeros(3), 0.0)
    with pytest.raises(TypeError, match="other must be"):
        pyrt.where(pyrt.tensor([True]), pyrt.zeros(1), "0")


# ---- var and std -----------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(shape=SHAPES, data=st.data(), keepdim=st.booleans(), correction=st.sampled_from([0, 1, 2]),
       std=st.booleans(), seed=st.integers(0, 2**16))
def test_var_and_std_match_torch(shape, data, keepdim, correction, std, seed):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    dims = data.draw(st.one_of(
        st.none(), st.integers(-len(shape), len(shape) - 1),
        st.lists(st.integers(0, len(shape) - 1), min_size=1, unique=True).map(tuple)))
    name = "std" if std else "var"
    p, q = leaf(x), torch.tensor(x, requires_grad=True)
    kwargs = {"correction": correction}
    if dims is not None:
        kwargs.update(dim=dims, keepdim=keepdim)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # no degrees of freedom: both warn
        got = getattr(p, name)(**kwargs)
        want = getattr(q, name)(**kwargs)
    assert got.shape == tuple(want.shape)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=2e-5,
                               atol=1e-6)
    if not np.all(np.isfinite(want.detach().numpy())):
        return  # too few elements for the correction: nan, as torch gives
    w = rng.standard_normal(want.shape).astype(np.float32)
    (got * pyrt.tensor(w)).sum().backward()
    (want * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_var_arguments():
    x = pyrt.tensor([[1.0, 2.0, 4.0], [0.0, 0.0, 3.0]])
    assert x.var().item() == pytest.approx(np.var(x.numpy(), ddof=1))
    assert x.var(unbiased=False).item() == pytest.approx(np.var(x.numpy()))
    np.testing.assert_allclose(x.std(1, False).numpy(), np.std(x.numpy(), 1), rtol=1e-6)
    with pytest.warns(UserWarning, match="degrees of freedom"):
        assert np.isnan(pyrt.tensor([3.0]).var().item())  # 0 / 0
    with pytest.warns(UserWarning, match="degrees of freedom"):
        assert pyrt.tensor([1.0, 2.0]).var(correction=2).item() == np.inf
    with pytest.raises(TypeError, match="not both"):
        x.var(unbiased=True, correction=0)
    with pytest.raises(TypeError, match="correction must be a number"):
        x.var(correction="1")
    with pytest.raises(RuntimeError, match="floating point"):
        pyrt.tensor([1, 2]).var()
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.std(2)


# ---- flip, index_select and the smaller conveniences -----------------------------------------


@settings(max_examples=40, deadline=None)
@given(shape=SHAPES, data=st.data(), seed=st.integers(0, 2**16))
def test_flip_and_index_select_match_torch(shape, data, seed):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    dims = data.draw(st.lists(st.integers(-len(shape), len(shape) - 1), max_size=len(shape),
                              unique_by=lambda d: d % len(shape)))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    index = rng.integers(0, shape[dim], data.draw(st.integers(0, 6)))  # repeats included
    for name, p_op, t_op in (
            ("flip", lambda t: t.flip(dims), lambda t: t.flip(dims)),
            ("index_select", lambda t: t.index_select(dim, pyrt.tensor(index)),
             lambda t: t.index_select(dim, torch.tensor(index)))):
        p, q = leaf(x), torch.tensor(x, requires_grad=True)
        got, want = p_op(p), t_op(q)
        np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy(), err_msg=name)
        w = rng.standard_normal(tuple(want.shape)).astype(np.float32)
        (got * pyrt.tensor(w)).sum().backward()
        (want * torch.tensor(w)).sum().backward()
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-6, atol=1e-6,
                                   err_msg=name)


def test_flip_and_index_select_errors_and_corners():
    x = pyrt.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert x.flip(0, 1).tolist() == [[6.0, 5.0, 4.0], [3.0, 2.0, 1.0]]
    assert x.flip().tolist() == x.tolist() and x.flip() is not x
    assert pyrt.tensor(2.0).flip(0).item() == 2.0
    assert x.index_select(1, pyrt.tensor(2)).tolist() == [[3.0], [6.0]]  # 0-d: keeps the dim
    assert pyrt.tensor(3.0).index_select(0, pyrt.tensor([0])).shape == ()
    with pytest.raises(RuntimeError, match="appears multiple times"):
        x.flip(0, -2)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.flip(2)
    with pytest.raises(RuntimeError, match="out of range for dimension 1 with size 3"):
        x.index_select(1, pyrt.tensor([3]))
    with pytest.raises(RuntimeError, match="out of range"):
        x.index_select(0, pyrt.tensor([-1]))
    with pytest.raises(RuntimeError, match="int32/int64"):
        x.index_select(0, pyrt.tensor([0.0]))
    with pytest.raises(IndexError, match="vector"):
        x.index_select(0, pyrt.tensor([[0]]))
    with pytest.raises(TypeError, match="argument 'index' must be a Tensor"):
        x.index_select(0, [0])
    index = pyrt.tensor([0, 0])
    w = leaf([1.0, 2.0])
    out = w.index_select(0, index)
    index._data[:] = 1  # written after the forward: the gradient still goes to position 0
    out.sum().backward()
    assert w.grad.tolist() == [2.0, 0.0]


def test_conveniences_match_torch():
    torch = pytest.importorskip("torch")
    x = np.array([[1.5, 0.0, -2.0], [np.nan, np.inf, 3.0]], np.float32)
    p, q = pyrt.tensor(x), torch.tensor(x)
    for name in ("isnan", "isinf", "isfinite"):
        np.testing.assert_array_equal(getattr(p, name)().numpy(), getattr(q, name)().numpy())
        np.testing.assert_array_equal(getattr(pyrt, name)(p).numpy(),
                                      getattr(torch, name)(q).numpy())
    for name in ("any", "all"):
        for args in ((), (0,), (1, True), (-1,)):
            got, want = getattr(p, name)(*args), getattr(q, name)(*args)
            assert got.dtype == np.bool_
            np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert pyrt.tensor(0.0).any(0).item() is False
    with pytest.raises(TypeError, match="keepdim"):
        p.any(0, "yes")
    ints = pyrt.tensor([3, 1, 2])
    assert ints.argsort().tolist() == torch.tensor([3, 1, 2]).argsort().tolist()
    assert ints.argsort(descending=True).tolist() == [0, 2, 1]
    assert p.view_as(pyrt.zeros(3, 2)).shape == (3, 2)
    assert ints.type_as(p).dtype == np.float32
    assert pyrt.tensor([1.5, -2.5]).type_as(ints).tolist() == [1, -2]
    for name, args in (("new_zeros", ((2, 3),)), ("new_ones", (2,)), ("new_empty", (4,)),
                       ("new_full", ((2,), 7)), ("new_tensor", ([1, 2],))):
        for source, ref in ((p, q), (ints, torch.tensor([3, 1, 2]))):
            got, want = getattr(source, name)(*args), getattr(ref, name)(*args)
            assert got.shape == tuple(want.shape) and got.dtype == source.dtype, name
            if name != "new_empty":
                np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert p.new_zeros(2, dtype=pyrt.int64).dtype == np.int64
    assert p.new_ones(2, requires_grad=True).requires_grad
    with pytest.raises(TypeError, match="argument 'other' must be a Tensor"):
        p.view_as((3, 2))
    with pytest.raises(TypeError, match="argument 'other' must be a Tensor"):
        p.type_as(np.float32)


def test_grad_fn_is_a_node_walked_as_torchs():
    def walk(lib):
        w = lib.tensor([[1.0, -2.0], [0.5, 3.0]], requires_grad=True)
        x = lib.tensor([[1.0, 2.0]])
        y = (x @ w).relu().sum()
        g = y.grad_fn
        (relu, _), = g.next_functions
        (mm, _), = relu.next_functions
        first, second = mm.next_functions
        return g, relu, mm, first, second, w

    g, relu, mm, first, second, w = walk(pyrt)
    assert (g.name(), relu.name(), mm.name()) == ("SumBackward0", "ReluBackward0",
                                                  "MatmulBackward0")
    assert first == (None, 0)  # x does not require grad
    assert second[0].name() == "torch::autograd::AccumulateGrad" and second[0].variable is w
    assert second[0].next_functions == ()
    y = pyrt.ones(2, requires_grad=True) * 2
    assert y.grad_fn == y.grad_fn and hash(y.grad_fn) == hash(y.grad_fn)
    assert repr(y.grad_fn).startswith("<MulBackward0 object at 0x")
    try:
        import torch
    except ImportError:
        return
    tg, trelu, tmm, tfirst, tsecond, _ = walk(torch)
    assert (tg.name(), trelu.name(), tmm.name()) == (g.name(), relu.name(), "MmBackward0")
    assert tfirst == (None, 0) and tsecond[0].name() == second[0].name()
