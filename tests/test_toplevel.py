"""The functions at pyrt's top level that torch has at its own (pyrt.exp(x), pyrt.sum(x, 1),
...): the same values, gradients and errors as torch's, and inference_mode."""

import numpy as np
import pytest

import pyrt
from pyrt import toplevel

# (name, positional arguments after the input, keyword arguments) of each call compared
CALLS = [
    ("abs", (), {}), ("argmax", (1,), {}), ("clamp", (-0.5, 0.5), {}), ("clone", (), {}),
    ("exp", (), {}), ("flatten", (), {}), ("log_softmax", (1,), {}), ("max", (), {}),
    ("max", (1,), {"keepdim": True}), ("mean", (0,), {}), ("min", (), {}),
    ("min", (), {"dim": 0}), ("permute", ((1, 0),), {}), ("pow", (3,), {}), ("relu", (), {}),
    ("reshape", ((12, 2),), {}), ("sigmoid", (), {}), ("softmax", (0,), {}),
    ("squeeze", (), {}), ("std", (), {}), ("sum", (), {}), ("sum", (1,), {"keepdim": True}),
    ("t", (), {}), ("tanh", (), {}), ("transpose", (0, 1), {}), ("unsqueeze", (1,), {}),
    ("var", (1,), {"correction": 0}), ("argmin", (1,), {}), ("cumsum", (0,), {}),
    ("prod", (1,), {}), ("norm", (), {}), ("norm", (1,), {"dim": 0}), ("sort", (1,), {}),
    ("topk", (2,), {}), ("expm1", (), {}), ("sin", (), {}), ("cos", (), {}),
    ("round", (), {}), ("floor", (), {}), ("ceil", (), {}), ("chunk", (2,), {}),
    ("split", (2,), {}),
]
POSITIVE = {"log", "sqrt", "log1p"}


def _values(result):
    """The arrays of a result: a tensor, a number, or a (values, indices) pair."""
    if isinstance(result, tuple):
        return [np.asarray(_values(r)[0]) for r in result]
    data = result.detach().numpy() if hasattr(result, "detach") else result
    return [np.asarray(data)]


@pytest.mark.parametrize("name,args,kwargs",
                         CALLS + [("log", (), {}), ("sqrt", (), {}), ("log1p", (), {})])
def test_functions_match_torch(name, args, kwargs):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(len(name))
    x = rng.standard_normal((4, 3)).astype(np.float32)
    if name in POSITIVE:
        x = np.abs(x) + 0.1
    if name == "reshape":
        x = rng.standard_normal((3, 4, 2)).astype(np.float32)
    p = pyrt.tensor(x, requires_grad=True)
    q = torch.tensor(x, requires_grad=True)
    got = getattr(pyrt, name)(p, *args, **kwargs)
    want = getattr(torch, name)(q, *args, **kwargs)
    for a, b in zip(_values(got), _values(want), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    first = got[0] if isinstance(got, tuple) else got
    tfirst = want[0] if isinstance(want, tuple) else want
    if first.requires_grad:
        w = rng.standard_normal(tuple(tfirst.shape)).astype(np.float32)
        (first * pyrt.tensor(w)).sum().backward()
        (tfirst * torch.tensor(w)).sum().backward()
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_every_function_exists_in_torch_and_checks_its_input():
    torch = pytest.importorskip("torch")
    for name in toplevel.__all__:
        assert hasattr(torch, name), name
        assert getattr(pyrt, name) is getattr(toplevel, name)
    for name, _, _ in CALLS:
        with pytest.raises(TypeError, match=f"{name}\\(\\): argument 'input' must be a Tensor"):
            getattr(pyrt, name)([1.0, 2.0])


def test_binary_functions_and_indexing_match_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal((4,)).astype(np.float32)
    pa, pb = pyrt.tensor(a), pyrt.tensor(b)
    ta, tb = torch.tensor(a), torch.tensor(b)
    for name in ("maximum", "minimum", "remainder", "floor_divide"):
        np.testing.assert_allclose(getattr(pyrt, name)(pa, pb).numpy(),
                                   getattr(torch, name)(ta, tb).numpy(), rtol=1e-6)
    np.testing.assert_array_equal(pyrt.max(pa, pb).numpy(), torch.max(ta, tb).numpy())
    np.testing.assert_array_equal(pa.min(pb).numpy(), ta.min(tb).numpy())
    ints = [np.array([6, 3, 5]), np.array([3, 5, 4])]
    for name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        np.testing.assert_array_equal(
            getattr(pyrt, name)(*map(pyrt.tensor, ints)).numpy(),
            getattr(torch, name)(*map(torch.tensor, ints)).numpy())
    np.testing.assert_array_equal(pyrt.bitwise_not(pyrt.tensor(ints[0])).numpy(),
                                  torch.bitwise_not(torch.tensor(ints[0])).numpy())
    index = rng.integers(0, 4, (3, 2))
    np.testing.assert_array_equal(pyrt.gather(pa, 1, pyrt.tensor(index)).numpy(),
                                  torch.gather(ta, 1, torch.tensor(index)).numpy())
    mask = a > 0
    np.testing.assert_array_equal(pyrt.masked_fill(pa, pyrt.tensor(mask), 0.5).numpy(),
                                  torch.masked_fill(ta, torch.tensor(mask), 0.5).numpy())


def test_matmul_mm_and_the_predicates():
    a = pyrt.tensor([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(pyrt.mm(a, a).numpy(), a.numpy() @ a.numpy())
    np.testing.assert_array_equal(pyrt.matmul(a, a).numpy(), a.numpy() @ a.numpy())
    assert pyrt.is_tensor(a) and not pyrt.is_tensor(a.numpy())
    assert pyrt.numel(a) == 4
    assert pyrt.equal(a, a.clone()) and not pyrt.equal(a, a.reshape(4))
    assert not pyrt.equal(a, a + 1)
    assert pyrt.allclose(a, a + 1e-9) and not pyrt.allclose(a, a + 1e-3)
    nan = pyrt.tensor([np.nan])
    assert not pyrt.allclose(nan, nan) and pyrt.allclose(nan, nan, equal_nan=True)
    with pytest.raises(TypeError, match="argument 'other' must be a Tensor"):
        pyrt.allclose(a, a.numpy())
    with pytest.raises(TypeError, match="argument 'input' must be a Tensor"):
        pyrt.equal([1.0], a)


def test_inference_mode_records_nothing():
    x = pyrt.ones(2, requires_grad=True)
    with pyrt.inference_mode():
        assert not (x * 2).requires_grad and not pyrt.is_grad_enabled()
    with pyrt.inference_mode(False):
        assert (x * 2).requires_grad
    assert pyrt.is_grad_enabled()

    @pyrt.inference_mode()
    def doubled(t):
        return t * 2

    assert not doubled(x).requires_grad and (x * 2).requires_grad

    @pyrt.inference_mode
    def tripled(t):
        return t * 3

    assert not tripled(x).requires_grad and tripled(x).tolist() == [3.0, 3.0]
    assert pyrt.is_grad_enabled()
    with pytest.raises(TypeError, match="mode must be a bool"):
        pyrt.inference_mode("yes")


def test_data_is_imported_with_the_package():
    assert pyrt.data.DataLoader is not None and "data" in pyrt.__all__
