"""Tensor's metadata methods (data_ptr, storage_offset, nbytes, type(), new(), the casts
pyrt refuses, the predicates) and register_post_accumulate_grad_hook, against torch where
it is installed and against NumPy's view of the same memory."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="needs torch")


def test_memory_metadata_by_definition():
    x = pyrt.arange(12).reshape(3, 4)
    base = x.data_ptr()
    assert base == x.numpy().ctypes.data
    assert x.storage_offset() == 0 and x[1:].storage_offset() == 4
    assert x[1:, 2].storage_offset() == 6 and x[1:, 2].data_ptr() == base + 6 * 8
    assert x.nbytes == 96 and x.itemsize == 8 and pyrt.ones(3).itemsize == 4
    assert x.ndimension() == 2 and x.is_cpu and x.get_device() == -1
    assert pyrt.tensor(5.0).storage_offset() == 0


@needs_torch
@settings(max_examples=20, deadline=None, derandomize=True)
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=3), data=st.data())
def test_storage_offset_of_slices_matches_torch(shape, data):
    index = tuple(slice(data.draw(st.integers(0, n - 1)), None) for n in shape)
    index = index[:data.draw(st.integers(1, len(shape)))]
    x = pyrt.arange(int(np.prod(shape))).reshape(*shape)
    t = torch.arange(int(np.prod(shape))).reshape(*shape)
    assert x[index].storage_offset() == t[index].storage_offset()
    assert x[index].nbytes == t[index].nbytes
    assert x[index].data_ptr() - x.data_ptr() == t[index].data_ptr() - t.data_ptr()


def test_type_names_and_casts():
    assert pyrt.ones(2).type() == "torch.FloatTensor"
    assert pyrt.arange(2).type() == "torch.LongTensor"
    assert pyrt.tensor([True]).type() == "torch.BoolTensor"
    x = pyrt.tensor([1.7, -2.2])
    assert x.type(pyrt.float32) is x
    assert x.type("torch.LongTensor").tolist() == [1, -2]
    assert x.type(pyrt.int64).dtype == pyrt.int64
    assert x.type("torch.DoubleTensor").dtype == np.float64
    with pytest.raises(TypeError, match="uint8"):
        x.type("torch.ByteTensor")
    with pytest.raises(ValueError, match="invalid type"):
        x.type("torch.FancyTensor")
    for name, dtype in (("byte", "uint8"), ("char", "int8"), ("short", "int16"),
                        ("half", "float16"), ("bfloat16", "bfloat16")):
        with pytest.raises(TypeError, match=f"no {dtype} dtype"):
            getattr(x, name)()


@needs_torch
def test_type_names_match_torch():
    for values in ([1.5], [1], [True]):
        assert pyrt.tensor(values).type() == torch.tensor(values).type()
        assert pyrt.typename(pyrt.tensor(values)) == torch.typename(torch.tensor(values))


def test_predicates_and_comparisons_as_methods():
    x = pyrt.tensor([1.0, 2.0])
    assert x.equal(pyrt.tensor([1.0, 2.0])) and not x.equal(pyrt.tensor([1.0, 2.5]))
    assert x.allclose(pyrt.tensor([1.0, 2.0 + 1e-6])) and not x.allclose(pyrt.tensor([1, 3.0]))
    assert x.allclose(pyrt.tensor([1.1, 2.0]), 0.2)
    assert pyrt.tensor([3]).is_nonzero() and not pyrt.tensor([0.0]).is_nonzero()
    with pytest.raises(RuntimeError, match="ambiguous"):
        x.is_nonzero()
    assert x.is_signed() and pyrt.arange(2).is_signed()
    assert not pyrt.tensor([True]).is_signed()
    assert not x.is_complex() and x.is_floating_point()
    assert not x.is_inference()
    with pyrt.inference_mode():
        assert not pyrt.ones(2).is_inference()
    with pytest.raises(TypeError, match="other"):
        x.equal([1.0, 2.0])


def test_new_is_the_legacy_constructor():
    x = pyrt.tensor([1.0, 2.0])
    assert x.new().shape == (0,) and x.new().dtype == pyrt.float32
    assert x.new(2, 3).shape == (2, 3) and x.new(2, 3).dtype == pyrt.float32
    assert x.new([1, 2]).tolist() == [1.0, 2.0] and x.new([1, 2]).dtype == pyrt.float32
    assert x.new((2, 3)).tolist() == [2.0, 3.0]  # a tuple is data, as in torch
    longs = pyrt.arange(3)
    assert longs.new([1.7, 2]).tolist() == [1, 2] and longs.new(4).dtype == pyrt.int64
    shared = x.new(x)
    shared.data[0] = 9.0
    assert x.tolist()[0] == 9.0
    with pytest.raises(TypeError, match="sequence"):
        x.new(2.5)
    with pytest.raises(TypeError, match="dtype"):
        x.new(longs)


@needs_torch
def test_new_matches_torch():
    for args in ((), (2, 3), ([1, 2],), ((2, 3),)):
        ours = pyrt.tensor([1.0]).new(*args)
        theirs = torch.tensor([1.0]).new(*args)
        assert ours.shape == tuple(theirs.shape)
        if ours.numel() and args and isinstance(args[0], (list, tuple)):
            assert ours.tolist() == theirs.tolist()
    assert pyrt.arange(2).new([1.7, 2]).tolist() == torch.arange(2).new([1.7, 2]).tolist()


def _hook_log(lib):
    """The order of events in a backward through a leaf with a hook and a post-accumulate
    hook, and the .grad the post hook saw."""
    log = []
    w = lib.tensor([1.0, 2.0], requires_grad=True)
    w.register_hook(lambda g: log.append(("hook", g.tolist())))
    w.register_post_accumulate_grad_hook(lambda t: log.append(("post", t.grad.tolist())))
    (w * w).sum().backward()
    (w * 3).sum().backward()
    return log, w


def test_post_accumulate_grad_hook_sees_the_accumulated_grad():
    log, w = _hook_log(pyrt)
    assert log == [("hook", [2.0, 4.0]), ("post", [2.0, 4.0]),
                   ("hook", [3.0, 3.0]), ("post", [5.0, 7.0])]
    assert w.grad.tolist() == [5.0, 7.0]


@needs_torch
def test_post_accumulate_grad_hook_matches_torch():
    assert _hook_log(pyrt)[0] == _hook_log(torch)[0]


def test_post_accumulate_grad_hook_runs_once_per_backward_and_removes():
    calls = []
    w = pyrt.tensor([1.0, 2.0], requires_grad=True)
    other = pyrt.tensor([3.0], requires_grad=True)
    handle = w.register_post_accumulate_grad_hook(lambda t: calls.append(t))
    (w * w + w).sum().backward()  # two gradients arrive: the hook runs once, on their sum
    assert len(calls) == 1 and calls[0] is w and w.grad.tolist() == [3.0, 5.0]
    (other * 2).sum().backward()  # another leaf's backward: not this hook
    assert len(calls) == 1
    w.grad = None
    pyrt.autograd.grad((w * 2).sum(), w)  # grad() accumulates nothing: no hook
    assert len(calls) == 1 and w.grad is None
    (w * 2).sum().backward(inputs=[w])
    assert len(calls) == 2
    handle.remove()
    handle.remove()
    (w * 2).sum().backward()
    assert len(calls) == 2


def test_post_accumulate_grad_hook_errors():
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        pyrt.ones(2).register_post_accumulate_grad_hook(lambda t: None)
    w = pyrt.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="non-leaf"):
        (w * 2).register_post_accumulate_grad_hook(lambda t: None)
    with pytest.raises(TypeError, match="callable"):
        w.register_post_accumulate_grad_hook(3)


def test_flags_of_tensor_kinds_pyrt_lacks_read_false_as_for_torchs_dense_tensors():
    flags = ["is_sparse", "is_sparse_csr", "is_quantized", "is_meta", "is_nested", "is_mkldnn",
             "is_mps", "is_xpu", "is_xla", "is_ipu", "is_vulkan", "is_maia", "is_mtia"]
    x = pyrt.ones(2, 3, requires_grad=True)
    for name in flags:
        assert getattr(x, name) is False, name
        with pytest.raises(AttributeError):
            setattr(x, name, True)
    assert x.to_dense() is x
    assert x.detach().to_dense(pyrt.int64).dtype == pyrt.int64
    try:
        import torch
    except ImportError:
        return
    t = torch.ones(2, 3)
    for name in flags:
        assert getattr(t, name) is False, name
