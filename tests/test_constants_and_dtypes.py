"""torch's constants (pi, e, inf, nan, newaxis) and the names of the dtypes pyrt stores
without computing in them (float64/double, int32/int)."""

import math

import numpy as np
import pytest

import pyrt

try:
    import torch
except ImportError:
    torch = None


@pytest.mark.parametrize("name", ["pi", "e", "inf", "nan"])
def test_constants_are_maths(name):
    value = getattr(pyrt, name)
    assert type(value) is float
    assert (math.isnan(value) and math.isnan(getattr(math, name))) or value == getattr(math, name)
    if torch is not None:
        theirs = getattr(torch, name)
        assert (math.isnan(value) and math.isnan(theirs)) or value == theirs


def test_newaxis_indexes_as_none():
    x = pyrt.arange(3.0)
    assert x[pyrt.newaxis].shape == (1, 3) and x[:, pyrt.newaxis].shape == (3, 1)


@pytest.mark.parametrize("names, dtype", [(("float64", "double"), np.float64),
                                          (("int32", "int"), np.int32)])
def test_stored_dtypes_convert_and_round_trip(names, dtype):
    x = pyrt.tensor([1.5, -2.0, 3.25])
    for name in names:
        d = getattr(pyrt, name)
        assert d == np.dtype(dtype)
        y = x.to(d)
        assert y.dtype == d and pyrt.zeros(2, dtype=d).dtype == d
        np.testing.assert_array_equal(y.numpy(), x.numpy().astype(dtype))
        np.testing.assert_array_equal(y.float().numpy(), x.numpy().astype(dtype)
                                      .astype(np.float32))
    assert x.double().dtype == pyrt.double and x.int().dtype == pyrt.int


def test_float64_arithmetic_says_to_convert():
    with pytest.raises(TypeError, match=r"float64.*\.float\(\)"):
        pyrt.ones(2, dtype=pyrt.float64) + 1


def test_autocast_dtypes_are_named_and_bfloat16_is_refused_as_a_tensor_dtype():
    assert pyrt.float16 == pyrt.half == np.dtype(np.float16)
    with pyrt.autocast("cpu", dtype=pyrt.bfloat16):
        y = pyrt.ones(2, 3) @ pyrt.ones(3, 1)
    assert y.dtype == pyrt.float32  # ops run in float32 inside the region
    with pyrt.autocast("cpu", dtype=pyrt.float16):
        assert pyrt.get_autocast_dtype("cpu") == pyrt.float16
    with pytest.raises(TypeError, match="pyrt has no bfloat16 dtype"):
        pyrt.ones(2).to(pyrt.bfloat16)
    with pytest.raises(TypeError, match="dtype must be a dtype"):
        pyrt.zeros(2, dtype=pyrt.bfloat16)
