"""Storage views, set_/resize/dim_order and the other Tensor odds, the *_copy functions,
segment_reduce and the native_* functions: values, gradients and errors against torch where
installed and against NumPy."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
from pyrt import copy_ops, native_ops, real_parts, tensor_memory
from pyrt.segment_reduce import segment_reduce
from pyrt.storage import TypedStorage, UntypedStorage, is_storage

try:
    import torch
except ImportError:
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed")


# ---- storage --------------------------------------------------------------------------------

def test_storages_view_the_tensor_memory():
    x = pyrt.tensor([[1.0, -2.0], [3.0, 4.0]])
    u = x[1:].untyped_storage()
    assert isinstance(u, UntypedStorage) and is_storage(u)
    assert u.size() == u.nbytes() == len(u) == 16 and u.element_size() == 1
    assert u.data_ptr() == x.data_ptr() and u.dtype == np.uint8 and u.device == "cpu"
    assert u.tolist() == list(x.numpy().tobytes())
    with pytest.warns(UserWarning, match="TypedStorage is deprecated"):
        s = x.storage()
    assert isinstance(s, TypedStorage) and s.dtype == np.float32 and s.element_size() == 4
    assert s.tolist() == [1.0, -2.0, 3.0, 4.0] and s[1] == -2.0 and s[-1] == 4.0 and len(s) == 4
    s[0] = 7.0
    assert x[0, 0].item() == 7.0
    s.fill_(2.0)
    assert x.numpy().tolist() == [[2.0, 2.0], [2.0, 2.0]]
    u.copy_(pyrt.tensor([1.0, 2.0, 3.0, 4.0]).untyped_storage())
    assert x.numpy().tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert s.untyped().nbytes() == 16 and s.cpu() is s
    assert isinstance(u[0:4], UntypedStorage) and len(u[0:4]) == 4


def test_storage_errors():
    x = pyrt.tensor([1.0, 2.0])
    u = x.untyped_storage()
    with pytest.raises(IndexError, match="out of range"):
        u[8]
    with pytest.raises(TypeError, match="can't index"):
        u[1.0]
    with pytest.raises(RuntimeError, match="size does not match"):
        u.copy_(pyrt.tensor([1.0]).untyped_storage())
    with pytest.raises(TypeError, match="argument 'source' must be a storage"):
        u.copy_(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match="slices are only supported in UntypedStorage"):
            x.storage()[0:1]


@needs_torch
def test_storage_matches_torch():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    p, t = pyrt.tensor(x)[1:], torch.tensor(x)[1:]
    assert p.untyped_storage().tolist() == t.untyped_storage().tolist()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert p.storage().tolist() == t.storage().tolist()
        assert p.storage().size() == t.storage().size()


# ---- set_, is_set_to, resize, dim_order, as_subclass, module_load ---------------------------

def test_set_shares_memory():
    x = pyrt.tensor([[1.0, 2.0], [3.0, 4.0]])
    y = pyrt.zeros(3).set_(x)
    assert y.is_set_to(x) and not y.is_set_to(x.clone()) and y.shape == (2, 2)
    y[0, 0] = 9.0
    assert x[0, 0].item() == 9.0
    z = pyrt.zeros(1).set_(x, 1, (2,), (2,))
    assert z.numpy().tolist() == [2.0, 4.0] and not z.is_set_to(x)
    w = pyrt.zeros(1).set_(x.untyped_storage())
    assert w.numpy().tolist() == [9.0, 2.0, 3.0, 4.0]
    assert pyrt.zeros(2).set_().shape == (0,)


def test_set_errors():
    x = pyrt.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        pyrt.ones(2, requires_grad=True).set_(x)
    with pytest.raises(RuntimeError, match="Could not set tensor of type"):
        pyrt.zeros(2, dtype=pyrt.int64).set_(x)
    with pytest.raises(RuntimeError, match="out of bounds for storage of size 8"):
        pyrt.zeros(2).set_(x, 1, (2,))
    with pytest.raises(RuntimeError, match="invalid storage offset -1"):
        pyrt.zeros(2).set_(x, -1, (1,))
    with pytest.raises(TypeError, match="argument 'source' must be a Tensor or a storage"):
        pyrt.zeros(2).set_([1.0])
    with pytest.raises(TypeError, match="argument 'other' must be a Tensor"):
        x.is_set_to([1.0])


@needs_torch
def test_set_with_view_matches_torch():
    x = np.arange(12, dtype=np.float32)
    got = pyrt.zeros(1).set_(pyrt.tensor(x), 2, (3, 2), (3, 1))
    want = torch.zeros(1).set_(torch.tensor(x), 2, (3, 2), (3, 1))
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_resize_and_resize_as_copy_and_warn():
    x = pyrt.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
        y = x.resize(4)
    with pytest.warns(UserWarning, match="non-inplace resize_as is deprecated"):
        z = x.resize_as(pyrt.zeros(1, 4))
    assert y.shape == (4,) and z.shape == (1, 4)
    (y * pyrt.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    assert x.grad.numpy().tolist() == [[1.0, 2.0], [3.0, 4.0]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match="requested resize to 3 \\(3 elements in total\\)"
                                               ", but the given tensor has a size of 2x2"):
            x.resize(3)


def test_dim_order():
    assert pyrt.empty(2, 3, 5, 7).dim_order() == (0, 1, 2, 3)
    assert tensor_memory.empty_permuted((2, 3, 4), (0, 2, 1)).dim_order() == (0, 2, 1)
    with pytest.raises(RuntimeError, match="does not have unique dim order"):
        pyrt.empty(1, 2, 3, 4).dim_order(ambiguity_check=True)
    with pytest.raises(TypeError, match="must be a bool or a list of memory formats"):
        pyrt.empty(2).dim_order(ambiguity_check="a")


@needs_torch
def test_empty_permuted_matches_torch():
    for size, layout in (((2, 3, 4), (0, 2, 1)), ((2, 3, 4, 5), (0, 2, 3, 1)), ((3,), (0,))):
        p = tensor_memory.empty_permuted(size, layout)
        t = torch.empty_permuted(size, layout)
        assert p.shape == tuple(t.shape) and p.stride() == t.stride()
        assert p.dim_order() == t.dim_order()
    for layout, message in (((0, 2), "Number of dimensions in size does not match"),
                            ((0, 2, 2), "Duplicate dim not allowed"),
                            ((0, 1, 5), "Dimension out of range")):
        with pytest.raises(RuntimeError, match=message):
            tensor_memory.empty_permuted((2, 3, 4), layout)
        with pytest.raises(RuntimeError, match=message):
            torch.empty_permuted((2, 3, 4), layout)


def test_as_subclass_keeps_memory_and_graph():
    class Marked(pyrt.Tensor):
        pass

    x = pyrt.tensor([1.0, 2.0], requires_grad=True)
    m = x.as_subclass(Marked)
    assert type(m) is Marked and m.data_ptr() == x.data_ptr()
    (m * m).sum().backward()
    assert x.grad.numpy().tolist() == [2.0, 4.0]
    with pytest.raises(TypeError, match="does not inherit from Tensor"):
        x.as_subclass(int)


def test_module_load_and_record_stream():
    x = pyrt.zeros(2)
    y = pyrt.tensor([1.0, 2.0], requires_grad=True)
    out = x.module_load(y)
    assert out.numpy().tolist() == [1.0, 2.0] and x.numpy().tolist() == [1.0, 2.0]
    assert not out.requires_grad
    assert x.module_load(y, assign=True).data_ptr() == y.data_ptr()
    with pytest.raises(RuntimeError, match="expected a CUDA tensor"):
        x.record_stream(None)


def test_from_file(tmp_path):
    path = tmp_path / "values.bin"
    np.arange(5, dtype=np.float32).tofile(path)
    assert tensor_memory.from_file(str(path), size=3).numpy().tolist() == [0.0, 1.0, 2.0]
    shared = tensor_memory.from_file(str(path), shared=True, size=5)
    shared[0] = 8.0
    assert np.fromfile(path, np.float32)[0] == 8.0
    with pytest.raises(RuntimeError, match="file too short"):
        tensor_memory.from_file(str(path), size=9)
    if torch is not None:
        want = torch.from_file(str(path), size=4, dtype=torch.float32)
        np.testing.assert_array_equal(tensor_memory.from_file(str(path), size=4).numpy(),
                                      want.numpy())


# ---- angle, conj_physical, nonzero_static ---------------------------------------------------

def test_angle_values_and_zero_gradient():
    x = pyrt.tensor([1.0, -2.0, 0.0, float("nan"), -0.0], requires_grad=True)
    a = x.angle()
    # -0.0 gives 0 as in torch (NumPy's angle says pi there)
    np.testing.assert_array_equal(a.detach().numpy(),
                                  np.float32([0.0, np.pi, 0.0, np.nan, 0.0]))
    if torch is not None:
        np.testing.assert_array_equal(
            a.detach().numpy(), torch.tensor([1.0, -2.0, 0.0, np.nan, -0.0]).angle().numpy())
    a.sum().backward()
    assert x.grad.numpy().tolist() == [0.0] * 5
    assert real_parts.angle(pyrt.tensor([-1, 2])).dtype == np.float32
    if torch is not None:
        np.testing.assert_array_equal(real_parts.angle(pyrt.tensor([-1, 2])).numpy(),
                                      torch.angle(torch.tensor([-1, 2])).numpy())


def test_conj_physical_is_identity():
    x = pyrt.tensor([1.0, -2.0])
    assert x.conj_physical() is x and x.conj_physical_() is x
    assert real_parts.conj_physical(x) is x and real_parts.conj_physical_(x) is x


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 3), st.integers(0, 12), st.integers(-3, 3), st.integers(0, 2 ** 31))
def test_nonzero_static_matches_nonzero(ndim, size, fill, seed):
    rng = np.random.default_rng(seed)
    x = (rng.random(rng.integers(1, 4, ndim)) > 0.5).astype(np.float32)
    got = pyrt.tensor(x).nonzero_static(size=size, fill_value=fill).numpy()
    found = np.argwhere(x) if ndim else np.zeros((int(x != 0), 0), np.int64)
    want = np.full((size, ndim), fill, np.int64)
    want[:min(size, len(found))] = found[:size]
    np.testing.assert_array_equal(got, want)
    if torch is not None:
        np.testing.assert_array_equal(
            got, torch.tensor(x).nonzero_static(size=size, fill_value=fill).numpy())


def test_nonzero_static_errors():
    with pytest.raises(RuntimeError, match="'size' must be an non-negative integer"):
        pyrt.ones(2).nonzero_static(size=-1)
    with pytest.raises(TypeError, match="argument 'size' must be int"):
        pyrt.ones(2).nonzero_static(size=1.5)


# ---- *_copy -----------------------------------------------------------------------------------

COPIES = [("view_copy", ((4, 3),)), ("permute_copy", ((1, 0),)), ("transpose_copy", (0, 1)),
          ("t_copy", ()), ("squeeze_copy", ()), ("unsqueeze_copy", (1,)),
          ("expand_copy", ((2, 3, 4),)), ("diagonal_copy", (1,)), ("select_copy", (1, 2)),
          ("slice_copy", (1, 1, 4, 2)), ("split_copy", (2, 1)),
          ("split_with_sizes_copy", ([1, 3], 1)), ("unbind_copy", (1,)),
          ("unfold_copy", (1, 2, 1)), ("alias_copy", ()),
          ("as_strided_copy", ((2, 2), (1, 2), 1))]


@pytest.mark.parametrize("name,args", COPIES)
def test_copies_match_the_view_and_own_their_memory(name, args):
    rng = np.random.default_rng(len(name))
    x = rng.standard_normal((3, 4)).astype(np.float32)
    p = pyrt.tensor(x, requires_grad=True)
    got = getattr(copy_ops, name)(p, *args)
    parts = got if isinstance(got, tuple) else (got,)
    view = getattr(pyrt.tensor(x), name[:-5])(*args) if name not in (
        "slice_copy", "alias_copy") else None
    if view is not None:
        views = view if isinstance(view, (tuple, list)) else (view,)
        for a, b in zip(parts, views, strict=True):
            np.testing.assert_array_equal(a.detach().numpy(), b.numpy())
    for a in parts:
        assert a._data.flags.c_contiguous and not np.shares_memory(a._data, p._data)
    weights = [rng.standard_normal(a.shape).astype(np.float32) for a in parts]
    sum(((a * pyrt.tensor(w)).sum() for a, w in zip(parts, weights))).backward()
    if torch is not None:
        q = torch.tensor(x, requires_grad=True)
        want = getattr(torch, name)(q, *args)
        wants = want if isinstance(want, (tuple, list)) else (want,)
        for a, b in zip(parts, wants, strict=True):
            np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
        sum(((b * torch.tensor(w)).sum() for b, w in zip(wants, weights))).backward()
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-6)


def test_copies_refuse_non_tensors_and_detach_copy():
    for name, args in COPIES:
        with pytest.raises(TypeError, match=f"{name}\\(\\): argument 'input' must be a Tensor"):
            getattr(copy_ops, name)([1.0, 2.0], *args)
    x = pyrt.tensor([1.0, 2.0], requires_grad=True)
    d = copy_ops.detach_copy(x)
    assert not d.requires_grad and not np.shares_memory(d._data, x._data)
    assert copy_ops.view_copy(pyrt.tensor([1.0]), pyrt.int32).numpy().tolist() == [1065353216]
    with pytest.raises(RuntimeError, match="slice step must be positive"):
        copy_ops.slice_copy(x, 0, 0, 2, 0)


# ---- segment_reduce ---------------------------------------------------------------------------

def _segment_reference(x, lengths, reduce, initial):
    """float64 value and gradient (for unit output gradients) of each 1-D segment."""
    out, grad, start = [], np.zeros(len(x)), 0
    empty = {"sum": 0, "prod": 1, "max": -np.inf, "min": np.inf, "mean": np.nan}[reduce]
    for n in lengths:
        part = x[start:start + n].astype(np.float64)
        if n == 0:
            out.append(empty if initial is None else initial)
            continue
        full = part if initial is None else np.append(part, initial)
        value = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min,
                 "mean": np.sum}[reduce](full)
        value = value / n if reduce == "mean" else value
        out.append(value)
        if reduce == "sum":
            grad[start:start + n] = 1
        elif reduce == "mean":
            grad[start:start + n] = 1 / n
        elif reduce in ("max", "min"):
            hit = part == value
            grad[start:start + n] = hit / max(hit.sum(), 1)
        else:
            init = 1.0 if initial is None else initial
            grad[start:start + n] = [np.prod(np.delete(part, i)) * init for i in range(n)]
        start += n
    return np.array(out), grad


@settings(max_examples=20, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=5),
       st.sampled_from(["sum", "mean", "max", "min", "prod"]),
       st.sampled_from([None, 0.5]), st.integers(0, 2 ** 31))
def test_segment_reduce_matches_reference(lengths, reduce, initial, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(-3, 4, sum(lengths)).astype(np.float32)
    p = pyrt.tensor(x, requires_grad=True)
    got = segment_reduce(p, reduce, lengths=pyrt.tensor(lengths), initial=initial)
    got.sum().backward()
    want, grad = _segment_reference(x, lengths, reduce, initial)
    np.testing.assert_allclose(got.detach().numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(p.grad.numpy(), grad, rtol=1e-6, atol=1e-7)
    if torch is not None:
        q = torch.tensor(x, requires_grad=True)
        w = torch.segment_reduce(q, reduce, lengths=torch.tensor(lengths), initial=initial)
        w.sum().backward()
        np.testing.assert_allclose(got.detach().numpy(), w.detach().numpy(), rtol=1e-6)
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-6, atol=1e-7)


@needs_torch
def test_segment_reduce_offsets_and_axis_match_torch():
    x = np.arange(24, dtype=np.float32).reshape(2, 6, 2)
    for reduce in ("sum", "max", "prod"):
        p = pyrt.tensor(x, requires_grad=True)
        q = torch.tensor(x, requires_grad=True)
        got = segment_reduce(p, reduce, lengths=pyrt.tensor([[2, 4], [0, 6]]), axis=1)
        want = torch.segment_reduce(q, reduce, lengths=torch.tensor([[2, 4], [0, 6]]), axis=1)
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6)
        got.sum().backward()
        want.sum().backward()
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-6)
    d = np.array([1.0, 5.0, 5.0, 3.0, 0.0], np.float32)
    got = segment_reduce(pyrt.tensor(d), "mean", offsets=pyrt.tensor([1, 3, 3, 5]))
    want = torch.segment_reduce(torch.tensor(d), "mean", offsets=torch.tensor([1, 3, 3, 5]))
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_segment_reduce_errors():
    d = pyrt.tensor([1.0, 2.0, 3.0])
    x = pyrt.zeros(2, 3)
    cases = [
        (RuntimeError, "reduce argument must be either sum, prod, mean, amax or amin, got foo",
         lambda: segment_reduce(d, "foo", lengths=pyrt.tensor([3]))),
        (RuntimeError, "Either lengths or offsets must be defined",
         lambda: segment_reduce(d, "sum")),
        (RuntimeError, "Expected all rows of lengths along axis to sum to data.size",
         lambda: segment_reduce(d, "sum", lengths=pyrt.tensor([1, 1]))),
        (RuntimeError, "lengths contains negative value!",
         lambda: segment_reduce(d, "sum", lengths=pyrt.tensor([-1, 4]))),
        (RuntimeError, "indices based reduction is not supported yet",
         lambda: segment_reduce(d, "sum", lengths=pyrt.tensor([3]), indices=pyrt.tensor([3]))),
        (RuntimeError, "Expected axis to be the last dimension of lengths but got 1",
         lambda: segment_reduce(x, "sum", lengths=pyrt.tensor([1, 2]), axis=1)),
        (NotImplementedError, "'lengths' must hold integers",
         lambda: segment_reduce(d, "sum", lengths=pyrt.tensor([3.0]))),
        (TypeError, "argument 'data' must be a Tensor",
         lambda: segment_reduce([1.0], "sum", lengths=pyrt.tensor([1]))),
        (RuntimeError, "offsets must be non-decreasing",
         lambda: segment_reduce(d, "sum", offsets=pyrt.tensor([2, 1]))),
    ]
    for kind, message, call in cases:
        with pytest.raises(kind, match=message):
            call()
    unsafe = segment_reduce(d, "sum", lengths=pyrt.tensor([1, 1]), unsafe=True)
    assert unsafe.numpy().tolist() == [1.0, 2.0]


# ---- native_* ---------------------------------------------------------------------------------

def test_native_layer_and_group_norm_statistics_match_numpy():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 4, 3)).astype(np.float32)
    _, mean, rstd = native_ops.native_layer_norm(pyrt.tensor(x), [4, 3], None, None, 1e-5)
    np.testing.assert_allclose(mean.numpy().ravel(), x.reshape(2, -1).mean(1), rtol=1e-5)
    np.testing.assert_allclose(rstd.numpy().ravel(), 1 / np.sqrt(x.reshape(2, -1).var(1) + 1e-5),
                               rtol=1e-4)
    assert mean.shape == (2, 1, 1)
    _, mean, rstd = native_ops.native_group_norm(pyrt.tensor(x), None, None, 2, 4, 3, 2, 1e-5)
    g = x.reshape(2, 2, -1)
    np.testing.assert_allclose(mean.detach().numpy(), g.mean(-1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rstd.detach().numpy(), 1 / np.sqrt(g.var(-1) + 1e-5), rtol=1e-4)
    with pytest.raises(RuntimeError, match="Expected input to have 48 elements"):
        native_ops.native_group_norm(pyrt.tensor(x), None, None, 2, 8, 3, 2, 1e-5)


@needs_torch
def test_native_norms_match_torch():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    w = rng.standard_normal(4).astype(np.float32)
    calls = [
        ("native_layer_norm", lambda m, t, wt: m.native_layer_norm(t, [5], None, None, 1e-5)),
        ("native_group_norm", lambda m, t, wt: m.native_group_norm(t, wt, wt, 3, 4, 5, 2,
                                                                    1e-5)),
        ("native_batch_norm", lambda m, t, wt: m.native_batch_norm(t, wt, None, None, None,
                                                                    True, 0.1, 1e-5)),
    ]
    for name, call in calls:
        p, q = pyrt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        got, want = call(native_ops, p, pyrt.tensor(w)), call(torch, q, torch.tensor(w))
        for a, b in zip(got, want, strict=True):
            np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-4,
                                       atol=1e-5, err_msg=name)
            assert a.requires_grad == b.requires_grad, name
        loss_weights = rng.standard_normal(x.shape).astype(np.float32)
        (got[0] * pyrt.tensor(loss_weights)).sum().backward()
        (want[0] * torch.tensor(loss_weights)).sum().backward()
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-3, atol=1e-4)
    _, m, v = native_ops.native_batch_norm(pyrt.tensor(x), None, None, pyrt.zeros(4),
                                             pyrt.ones(4), False, 0.1, 1e-5)
    assert m.shape == v.shape == (0,)
    with pytest.raises(RuntimeError, match="running_mean and running_var must be given"):
        native_ops.native_batch_norm(pyrt.tensor(x), None, None, None, None, False, 0.1, 1e-5)


def test_native_dropout_norm_shuffle_and_pad():
    pyrt.manual_seed(0)
    x = pyrt.ones(4, 5, requires_grad=True)
    out, mask = native_ops.native_dropout(x, 0.5, True)
    assert mask.dtype == np.bool_
    np.testing.assert_array_equal(out.detach().numpy(), mask.numpy() * 2.0)
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), mask.numpy() * 2.0)
    same, keep = native_ops.native_dropout(x, 0.5, False)
    assert keep.numpy().all() and same.detach().numpy().tolist() == x.detach().numpy().tolist()
    with pytest.raises(RuntimeError, match="bernoulli_ expects p to be in \\[0, 1\\]"):
        native_ops.native_dropout(x, 1.5, True)
    v = np.array([[3.0, -4.0], [1.0, 2.0]], np.float32)
    assert abs(native_ops.native_norm(pyrt.tensor(v)).item() - np.linalg.norm(v)) < 1e-5
    np.testing.assert_allclose(native_ops.native_norm(pyrt.tensor(v), 1, [1], False).numpy(),
                               np.abs(v).sum(1))
    c = np.arange(8, dtype=np.float32).reshape(1, 4, 2)
    shuffled = native_ops.native_channel_shuffle(pyrt.tensor(c), 2).numpy()
    np.testing.assert_array_equal(shuffled, c[:, [0, 2, 1, 3]])
    padded = native_ops.constant_pad_nd(pyrt.tensor(v), (1, -1), 2.0).numpy()
    np.testing.assert_array_equal(padded, [[2.0, 3.0], [2.0, 1.0]])
    with pytest.raises(RuntimeError, match="Length of pad must be even"):
        native_ops.constant_pad_nd(pyrt.tensor(v), (1,))
    for name in native_ops.__all__:
        with pytest.raises(TypeError, match=f"{name}\\(\\): argument 'input' must be a Tensor"):
            getattr(native_ops, name)([1.0, 2.0], *([None] * 7)[:_arity(name)])


def _arity(name):
    """How many arguments after input each native function takes."""
    return {"native_layer_norm": 4, "native_batch_norm": 7, "native_group_norm": 7,
            "native_dropout": 2, "native_norm": 0, "native_channel_shuffle": 1,
            "constant_pad_nd": 1}[name]
