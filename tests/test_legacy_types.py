"""torch's legacy tensor types (pyrt.legacy_types): instance checks by dtype and device, the
legacy constructor's forms, casts with t.type(...), and the TypeError of the types whose
dtype pyrt lacks; compared with torch where it is installed."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
from pyrt import legacy_types as L
from pyrt import nn

try:
    import torch
except ImportError:  # the comparisons with torch are skipped
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="needs torch")
HELD = ["FloatTensor", "DoubleTensor", "LongTensor", "IntTensor", "BoolTensor"]
MISSING = {"HalfTensor": "float16", "BFloat16Tensor": "bfloat16", "ByteTensor": "uint8",
           "CharTensor": "int8", "ShortTensor": "int16"}


def test_the_names_are_torchs():
    assert sorted(L.CPU_TYPES) == sorted(HELD + list(MISSING))
    for name, cls in L.CPU_TYPES.items():
        assert getattr(L, name) is cls and repr(cls) == f"<class 'pyrt.{name}'>"
        assert not cls.is_cuda and not cls.is_sparse and cls.layout is pyrt.strided
        assert repr(L.CUDA_TYPES[name]) == f"<class 'pyrt.cuda.{name}'>"
        assert L.CUDA_TYPES[name].is_cuda and L.CUDA_TYPES[name].dtype == cls.dtype
        if torch is not None:
            assert hasattr(torch, name) and hasattr(torch.cuda, name)
            assert str(getattr(torch, name).dtype) == f"torch.{cls.dtype}"


@pytest.mark.parametrize("name", HELD)
def test_isinstance_by_dtype_and_device(name):
    dtype = L.CPU_TYPES[name].dtype
    t = pyrt.zeros(2, dtype=dtype)
    for other, cls in L.CPU_TYPES.items():
        assert isinstance(t, cls) == (other == name), other
        assert not isinstance(t, L.CUDA_TYPES[other])
    assert not issubclass(pyrt.Tensor, L.CPU_TYPES[name])
    assert not isinstance(np.zeros(2, dtype), L.CPU_TYPES[name])
    if torch is not None:
        theirs = torch.zeros(2, dtype=getattr(torch, str(dtype)))
        for other in L.CPU_TYPES:
            assert isinstance(theirs, getattr(torch, other)) == (other == name)
    assert t.type() == f"torch.{name}"


def test_a_parameter_is_a_float_tensor():
    assert isinstance(nn.Parameter(pyrt.ones(2)), L.FloatTensor)
    assert isinstance(pyrt.arange(3), L.LongTensor)


@given(st.lists(st.integers(0, 4), min_size=0, max_size=3), st.integers(0, 2**31 - 1))
@settings(max_examples=20, deadline=None)
def test_constructors_match_torch(shape, seed):
    """A size (as ints or size=) gives zeros (torch: uninitialised memory) of that shape; a
    list of numbers gives them, cast as torch casts them."""
    rng = np.random.default_rng(seed)
    values = (rng.standard_normal(5) * 3).round(2).tolist()
    for name in HELD:
        cls = L.CPU_TYPES[name]
        for made in (cls(*shape), cls(size=shape)):
            assert made.shape == (tuple(shape) if shape else (0,)) and made.dtype == cls.dtype
            assert not made.numpy().any()
        data = cls(values)
        np.testing.assert_array_equal(data.numpy(), np.array(values).astype(cls.dtype))
        assert cls(np.array(values)).tolist() == data.tolist()
        if torch is not None:
            theirs = getattr(torch, name)(values)
            np.testing.assert_array_equal(data.numpy(), theirs.numpy())
            assert tuple(getattr(torch, name)(*shape).shape) == (cls(*shape).shape)


def test_a_tensor_argument_shares_memory():
    t = pyrt.ones(3, requires_grad=True)
    shared = L.FloatTensor(t)
    assert shared is not t and not shared.requires_grad
    shared._data[0] = 5.0
    assert t.detach().numpy()[0] == 5.0
    assert L.LongTensor(device="cpu").shape == (0,)
    assert L.FloatTensor([[1, 2], [3, 4]]).shape == (2, 2)


def test_type_casts_to_a_legacy_type():
    x = pyrt.tensor([1.5, -2.5, 0.0])
    assert x.type(L.LongTensor).tolist() == [1, -2, 0]
    assert x.type(L.BoolTensor).tolist() == [True, True, False]
    assert x.type(L.FloatTensor) is x
    assert L.cast(x, L.DoubleTensor).dtype == np.float64
    if torch is not None:
        assert torch.tensor([1.5, -2.5, 0.0]).type(torch.LongTensor).tolist() == [1, -2, 0]
    with pytest.raises(TypeError, match="type\\(\\): pyrt has no float16 dtype"):
        x.type(L.HalfTensor)
    with pytest.raises(TypeError, match="type\\(\\): pyrt has no bfloat16 dtype"):
        L.cast(x, L.BFloat16Tensor)


@pytest.mark.skipif(pyrt.cuda.is_available(), reason="checks the refusal without a GPU")
def test_cuda_types_need_the_gpu():
    cuda_float = L.CUDA_TYPES["FloatTensor"]
    assert not isinstance(pyrt.ones(2), cuda_float)
    with pytest.raises(RuntimeError, match="device 'cuda' is not available"):
        cuda_float(2)
    with pytest.raises(RuntimeError, match="device 'cuda' is not available"):
        L.cast(pyrt.ones(2), cuda_float)


@pytest.mark.skipif(not pyrt.cuda.is_available(), reason="needs a GPU")
def test_cuda_types_on_the_gpu():
    cuda_float = L.CUDA_TYPES["FloatTensor"]
    made = cuda_float([1.0, 2.0])
    assert made.is_cuda and isinstance(made, cuda_float)
    assert not isinstance(made, L.FloatTensor)
    moved = L.cast(pyrt.arange(2), cuda_float)
    assert moved.is_cuda and moved.tolist() == [0.0, 1.0]
    with pytest.raises(RuntimeError, match="legacy constructor expects device type: cuda"):
        cuda_float(2, device="cpu")


@pytest.mark.skipif(not hasattr(pyrt, "FloatTensor"), reason="not exported at the top level")
def test_exported_names():
    for name in L.CPU_TYPES:
        assert getattr(pyrt, name) is L.CPU_TYPES[name]
        assert getattr(pyrt.cuda, name) is L.CUDA_TYPES[name]
    x = pyrt.ones(2)
    if pyrt.cuda.is_available():
        assert x.type(pyrt.cuda.FloatTensor).is_cuda
    else:
        with pytest.raises(RuntimeError, match="not available"):
            x.type(pyrt.cuda.FloatTensor)


def test_errors():
    for name, dtype in MISSING.items():
        assert not isinstance(pyrt.ones(2), L.CPU_TYPES[name])
        with pytest.raises(TypeError, match=f"{name}\\(\\): pyrt has no {dtype} dtype: its "
                                            f"tensors hold float32, int64 or bool"):
            L.CPU_TYPES[name](2)
    cases = [((3.5,), {}, TypeError, "FloatTensor\\(\\): data must be a sequence \\(got float"),
             ((True,), {}, TypeError, "data must be a sequence \\(got bool\\)"),
             ((2, "a"), {}, TypeError, "argument 'size' must be a tuple of ints, but found an "
                                       "element of type str"),
             ((-1,), {}, RuntimeError, "Trying to create tensor with negative dimension -1"),
             ((2,), {"size": (2,)}, TypeError, "either as ints or as size=, not both"),
             ((), {"size": 2}, TypeError, "argument 'size' must be a tuple of ints, got int"),
             ((pyrt.arange(2),), {}, TypeError, "expected a tensor of dtype float32 on cpu, "
                                                "got int64 on cpu"),
             ((2,), {"device": "tpu"}, ValueError, "device must be")]
    for args, kwargs, error, message in cases:
        with pytest.raises(error, match=message):
            L.FloatTensor(*args, **kwargs)
    if torch is not None:  # the same inputs torch refuses
        for args, kwargs, _, _ in cases[:4]:
            with pytest.raises((TypeError, RuntimeError)):
                torch.FloatTensor(*args, **kwargs)
