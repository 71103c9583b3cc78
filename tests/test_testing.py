"""pyrt.testing: assert_close's verdicts and messages against torch.testing.assert_close on
the same inputs and against a NumPy float64 model of torch's rule, and make_tensor's ranges,
shapes and errors."""

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
from pyrt.testing import assert_close, make_tensor

try:
    import torch
except ImportError:
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="needs PyTorch")


def _outcome(call, *args, **kwargs):
    try:
        call(*args, **kwargs)
    except Exception as error:  # noqa: BLE001 (the outcome is what is compared)
        return type(error), str(error)
    return None


def _same_as_torch(ours, theirs, **kwargs):
    """assert_close on pyrt's inputs says what torch's says on torch's, but for the names of
    the types (torch.Size, torch.float32, torch.Tensor are pyrt's tuple, dtype, Tensor)."""
    got = _outcome(assert_close, *ours, **kwargs)
    want = _outcome(torch.testing.assert_close, *theirs, **kwargs)
    if want is None:
        assert got is None
        return
    assert got is not None and got[0] is want[0]
    normal = re.sub(r"torch\.Size\(\[(.*?)\]\)", r"(\1,)", want[1])
    normal = normal.replace("torch.", "").replace("<class 'Tensor'>",
                                                  "<class 'pyrt.tensor.Tensor'>")
    assert got[1] == normal, (got[1], want[1])


def _pairs(a, e):
    return (pyrt.tensor(a), pyrt.tensor(e)), (torch.tensor(a), torch.tensor(e))


@needs_torch
@settings(max_examples=20, deadline=None)
@given(shape=st.sampled_from([(), (3,), (2, 3), (2, 1, 4)]), seed=st.integers(0, 2**16),
       kind=st.sampled_from(["float32", "int64", "bool"]),
       scale=st.sampled_from([0.0, 1e-7, 1e-5, 1e-3, 1.0]))
def test_messages_match_torch(shape, seed, kind, scale):
    rng = np.random.default_rng(seed)
    expected = (rng.standard_normal(shape) * 4).astype(kind)
    noise = rng.standard_normal(shape) * scale * (rng.random(shape) < 0.5)
    actual = (expected + noise).astype(kind) if kind != "bool" else rng.random(shape) < 0.5
    _same_as_torch(*_pairs(actual, expected))
    _same_as_torch(*_pairs(actual, expected), rtol=1e-3, atol=1e-4)


def _numpy_verdict(actual, expected, rtol, atol):
    """torch's rule in float64: equal, or |a - e| <= atol + rtol * |e| and finite."""
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    with np.errstate(invalid="ignore"):
        diff = np.abs(a - e)
        return bool(((a == e) | (np.isfinite(diff) & (diff <= atol + rtol * np.abs(e)))).all())


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**16), n=st.integers(1, 20),
       scale=st.sampled_from([0.0, 1e-6, 1e-5, 1e-4, 1e-2]))
def test_verdicts_match_a_float64_model(seed, n, scale):
    rng = np.random.default_rng(seed)
    expected = rng.standard_normal(n)
    actual = expected + rng.standard_normal(n) * scale
    verdict = _outcome(assert_close, actual, expected) is None
    assert verdict == _numpy_verdict(actual, expected, 1e-7, 1e-7)


@needs_torch
@pytest.mark.parametrize("ours,theirs,kwargs", [
    ((1.0, 1), None, {}), ((1.0, 1), None, {"check_dtype": False}), ((1.0, 1.5), None, {}),
    ((None, 1), None, {}), ((True, False), None, {}), (({"a": 1}, {"b": 1}), None, {}),
    (([1, 2], [1]), None, {}), (([1.0, "a"], [2.0, "b"]), None, {}),
    (({"x": [1.0, 2.0]}, {"x": [1.0, 2.5]}), None, {}),
    ((np.array([np.nan, 1.0]), np.array([np.nan, 1.0])), None, {}),
    ((np.array([np.nan, 1.0]), np.array([np.nan, 1.0])), None, {"equal_nan": True}),
    ((np.array([np.inf, 0.0]), np.array([-np.inf, 0.0])), None, {}),
    ((np.array([0.0, 1.0]), np.array([0.0, 2.0])), None, {}),
    ((np.array([1, 2]), np.array([1, 3], np.int32)), None, {"check_dtype": False}),
    ((np.float32(1.0), np.float32(1.0 + 1e-7)), None, {}),
    ((np.zeros(2, np.float32), np.zeros(2)), None, {}),
])
def test_python_and_numpy_inputs_match_torch(ours, theirs, kwargs):
    _same_as_torch(ours, theirs or ours, **kwargs)


@needs_torch
def test_tensor_attributes_and_options_match_torch():
    x = np.array([1.0, 2.0, 3.0], np.float32)
    y = np.array([1.0, 4.0, 5.0], np.float32)
    _same_as_torch(*_pairs(x, y), msg="custom")
    _same_as_torch(([pyrt.tensor(x)], [pyrt.tensor(y)]), ([torch.tensor(x)], [torch.tensor(y)]),
                   msg=lambda m: f"Header\n\n{m}\n\nFooter")
    _same_as_torch((pyrt.ones(2), pyrt.ones(3)), (torch.ones(2), torch.ones(3)))
    _same_as_torch((pyrt.ones(2), pyrt.ones(2, dtype=pyrt.int64)),
                   (torch.ones(2), torch.ones(2, dtype=torch.int64)))
    _same_as_torch((pyrt.tensor([1, 2]), pyrt.tensor([1.0, 2.5])),
                   (torch.tensor([1, 2]), torch.tensor([1.0, 2.5])), check_dtype=False)
    _same_as_torch((pyrt.ones(2, 4)[:, ::2], pyrt.ones(2, 2)),
                   (torch.ones(2, 4)[:, ::2], torch.ones(2, 2)), check_stride=True)
    _same_as_torch((x, pyrt.tensor(x)), (x, torch.tensor(x)))
    _same_as_torch(*_pairs(x, y), rtol=0.5)
    parameter = pyrt.nn.Parameter(pyrt.tensor(x))
    assert_close(parameter, pyrt.tensor(x))
    with pytest.raises(TypeError, match="No comparison pair was able to handle inputs of type "
                                        "<class 'pyrt.nn.parameter.Parameter'> and <class "
                                        "'pyrt.tensor.Tensor'>."):
        assert_close(parameter, pyrt.tensor(x), allow_subclasses=False)


def test_errors_name_what_differs_without_torch():
    with pytest.raises(AssertionError, match=re.escape(
            "Tensor-likes are not close!\n\nMismatched elements: 1 / 3 (33.3%)\n"
            "Greatest absolute difference: 0.5 at index (1,) (up to 1e-05 allowed)\n"
            "Greatest relative difference: 0.25 at index (1,) (up to 1.3e-06 allowed)")):
        assert_close(pyrt.tensor([1.0, 2.5, 3.0]), pyrt.tensor([1.0, 2.0, 3.0]))
    with pytest.raises(AssertionError, match=re.escape(
            "Tensor-likes are not equal!\n\nMismatched elements: 1 / 2 (50.0%)\n"
            "Greatest absolute difference: 2 at index (0,)\n"
            "Greatest relative difference: 2.0 at index (0,)")):
        assert_close(pyrt.tensor([3, 2]), pyrt.tensor([1, 2]))
    with pytest.raises(ValueError, match="Both 'rtol' and 'atol' must be either specified or "
                                         "omitted, but got no atol."):
        assert_close(pyrt.ones(1), pyrt.ones(1), rtol=0.1, msg="not used")
    with pytest.raises(AssertionError, match=re.escape(
            "Scalars are not close!\n\nExpected 1.0 but got 2.0.\nAbsolute difference: 1.0 "
            "(up to 1e-05 allowed)\nRelative difference: 1.0 (up to 1.3e-06 allowed)")):
        assert_close(pyrt.tensor(2.0), pyrt.tensor(1.0))
    with pytest.raises(AssertionError, match=re.escape("The failure occurred for item [1]")):
        assert_close([pyrt.ones(1), pyrt.ones(1)], [pyrt.ones(1), pyrt.zeros(1)])
    assert_close(pyrt.tensor([1.0]), pyrt.tensor([1.0 + 5e-6]))
    assert_close({"a": [1, (2.0, None)]}, {"a": [1, (2.0, None)]})


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**16), shape=st.sampled_from([(5,), (3, 4), (2, 3, 2)]),
       noncontiguous=st.booleans())
def test_make_tensor_ranges_and_layout(seed, shape, noncontiguous):
    pyrt.manual_seed(seed)
    t = make_tensor(*shape, dtype=pyrt.float32, device="cpu", noncontiguous=noncontiguous)
    assert t.shape == shape and t.dtype == pyrt.float32 and not t.requires_grad
    assert t.is_contiguous() != noncontiguous
    assert -9 <= t.min().item() and t.max().item() < 9
    i = make_tensor(shape, dtype=pyrt.int64, device="cpu", low=-3, high=3, exclude_zero=True)
    values = i.numpy()
    assert values.dtype == np.int64 and values.min() >= -3 and values.max() < 3
    assert (values != 0).all()
    b = make_tensor(list(shape), dtype=pyrt.bool_, device="cpu")
    assert b.dtype == pyrt.bool_ and b.shape == shape
    g = make_tensor(2, dtype=pyrt.float32, device="cpu", low=0.5, high=0.75,
                    requires_grad=True)
    assert g.requires_grad and g.is_leaf and (g.detach().numpy() >= 0.5).all()


def test_make_tensor_defaults_cover_torch_ranges():
    pyrt.manual_seed(0)
    ints = make_tensor(4000, dtype=pyrt.int64, device="cpu").numpy()
    assert ints.min() == -9 and ints.max() == 9
    bools = make_tensor(200, dtype=pyrt.bool_, device="cpu").numpy()
    assert bools.any() and not bools.all()
    wide = make_tensor(100, dtype=pyrt.float32, device="cpu", low=-3e38, high=3e38).numpy()
    assert np.isfinite(wide).all() and np.abs(wide).max() > 1e37


def test_make_tensor_errors():
    with pytest.raises(ValueError, match="`low` must be less than `high`, but got 3 >= 1"):
        make_tensor(2, dtype=pyrt.int64, device="cpu", low=3, high=1)
    with pytest.raises(ValueError, match="`low` and `high` cannot be NaN"):
        make_tensor(2, dtype=pyrt.float32, device="cpu", low=float("nan"))
    with pytest.raises(ValueError, match=r"The value interval specified by `low` and `high` "
                                         r"is \[5, 9\), but bool only supports \[0, 2\)"):
        make_tensor(2, dtype=pyrt.bool_, device="cpu", low=5, high=9)
    with pytest.raises(ValueError, match="`requires_grad=True` is not supported for boolean "
                                         "and integral dtypes"):
        make_tensor(2, dtype=pyrt.int64, device="cpu", requires_grad=True)
    with pytest.raises(TypeError, match="The requested dtype 'float64' is not supported by "
                                        "pyrt.testing.make_tensor()"):
        make_tensor(2, dtype=np.float64, device="cpu")
    with pytest.warns(FutureWarning, match="Passing `low==high`"):
        make_tensor(2, dtype=pyrt.float32, device="cpu", low=1.0, high=1.0)
