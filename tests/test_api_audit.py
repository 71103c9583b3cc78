"""Bad input to the Tensor methods, factories, top-level functions and pyrt.save/load: each
case here once gave a silently wrong result, an unclear exception or an object that breaks
pyrt's invariants. Values are compared with torch where torch accepts the input."""

import io
import json

import numpy as np
import pytest

import pyrt
from pyrt import serialization

torch = pytest.importorskip("torch")


def normal(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# ---- reductions over an empty list of dims, and their flags -----------------------------------


def test_var_and_std_over_an_empty_list_of_dims_reduce_every_dim():
    data = normal((3, 4))
    for name in ("var", "std"):
        got = getattr(pyrt.tensor(data), name)(dim=[])
        want = getattr(torch.tensor(data), name)(dim=[])
        assert got.shape == tuple(want.shape)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5)


def test_var_gradient_over_an_empty_list_of_dims_matches_torch():
    data = normal((2, 3), seed=1)
    x = pyrt.tensor(data, requires_grad=True)
    x.var(dim=[]).backward()
    t = torch.tensor(data, requires_grad=True)
    t.var().backward()  # (torch's own backward of dim=[] divides by zero: inf)
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_integer_sum_over_an_empty_list_of_dims_is_the_total():
    data = np.arange(6).reshape(2, 3)
    got = pyrt.tensor(data).sum(dim=[])
    want = torch.tensor(data).sum(dim=[])
    assert got.shape == () and got.dtype == pyrt.int64
    assert got.item() == want.item()


def test_var_unbiased_must_be_a_bool():
    x = pyrt.tensor(normal((2, 3)))
    for bad in (0, 1, "no", 1.0):
        with pytest.raises(TypeError, match="'unbiased' must be a bool"):
            x.var(1, unbiased=bad)
    np.testing.assert_allclose(x.var(1, unbiased=False).numpy(),
                               torch.tensor(x.numpy()).var(1, unbiased=False).numpy(),
                               rtol=1e-5)


@pytest.mark.parametrize("call", [
    lambda x: x.sort(descending="yes"),
    lambda x: x.sort(descending=None),
    lambda x: x.topk(1, largest=0),
    lambda x: x.topk(1, sorted="no"),
    lambda x: x.prod(0, keepdim="yes"),
    lambda x: x.norm(dim=0, keepdim=1),
    lambda x: x.argmin(0, keepdim=None),
    lambda x: x.var(0, keepdim="no"),
])
def test_bool_arguments_refuse_other_types(call):
    with pytest.raises(TypeError, match="must be a bool"):
        call(pyrt.tensor(normal((3, 2))))


def test_bool_arguments_take_numpy_bools():
    data = normal((3, 2), seed=2)
    got = pyrt.tensor(data).sort(0, descending=np.bool_(True)).values
    np.testing.assert_array_equal(got.numpy(),
                                  torch.tensor(data).sort(0, descending=True).values.numpy())


def test_integer_max_and_min_take_one_dim():
    x = pyrt.tensor([[1, 5], [3, 2]])
    for name in ("max", "min"):
        with pytest.raises(TypeError, match="dim must be an int"):
            getattr(x, name)(dim=(0, 1))
        got = getattr(x, name)(dim=1)
        want = getattr(torch.tensor(x.numpy()), name)(dim=1)
        np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())
        np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
    got = pyrt.tensor(3).max(0)
    want = torch.tensor(3).max(0)
    assert (got.values.item(), got.indices.item()) == (want.values.item(), want.indices.item())


def test_argmax_of_an_empty_dim_is_torch_index_error():
    for make, call in ((lambda m: m.zeros(0, 3), lambda x: x.argmax(0)),
                       (lambda m: m.zeros(0), lambda x: x.argmax())):
        with pytest.raises(IndexError) as want:
            call(make(torch))
        with pytest.raises(IndexError, match="argmax") as got:
            call(make(pyrt))
        assert str(got.value) == str(want.value)
    assert pyrt.zeros(0, 3).argmax(1).shape == (0,)


def test_cumsum_dtype_must_be_a_dtype():
    x = pyrt.tensor([1.5, 2.5])
    with pytest.raises(TypeError, match="'dtype' must be a dtype"):
        x.cumsum(0, dtype="float")
    np.testing.assert_array_equal(x.cumsum(0, dtype=pyrt.int64).numpy(),
                                  torch.tensor([1.5, 2.5]).cumsum(0, dtype=torch.int64).numpy())


# ---- where ------------------------------------------------------------------------------------


def test_where_gradient_ignores_later_writes_to_the_condition():
    data = normal((2, 3), seed=3)
    cond = data > 0
    x = pyrt.tensor(data, requires_grad=True)
    c = pyrt.tensor(cond)
    y = pyrt.where(c, x, 0.0)
    c[...] = ~cond  # written after the forward pass
    y.sum().backward()
    t = torch.tensor(data, requires_grad=True)
    torch.where(torch.tensor(cond), t, 0.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())


def test_where_refuses_a_number_its_dtype_cannot_hold():
    cond = pyrt.tensor([True, False])
    for input in (pyrt.tensor([1.0, 2.0]), pyrt.tensor([1, 2])):
        with pytest.raises(RuntimeError, match="other 1e\\+40 cannot be converted to float32"):
            pyrt.where(cond, input, 1e40)
    with pytest.raises(RuntimeError, match="cannot be converted to int64"):
        pyrt.where(cond, pyrt.tensor([1, 2]), 2**70)
    got = pyrt.where(cond, pyrt.tensor([1, 2]), 0.5)
    want = torch.where(torch.tensor([True, False]), torch.tensor([1, 2]), 0.5)
    assert str(got.dtype) == str(want.dtype).removeprefix("torch.")
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_where_refuses_float64_rather_than_rounding_it():
    big = pyrt.tensor([1e300, 1.0], dtype=np.float64)
    with pytest.raises(TypeError, match="input is a tensor of dtype float64"):
        pyrt.where(pyrt.tensor([True, False]), big, 0.0)


# ---- factories ----------------------------------------------------------------------------------


def test_separate_sizes_refuse_bools():
    # (torch reads ones(2, False) as a (2, 0) tensor: a bool there is a mistake)
    for call in (lambda: pyrt.zeros(True), lambda: pyrt.ones(2, False),
                 lambda: pyrt.randn(np.bool_(True))):
        with pytest.raises(TypeError, match="size must be a tuple of ints"):
            call()


@pytest.mark.parametrize("call", [
    lambda m: m.full((True,), 1.0),
    lambda m: m.full((2.0,), 1.0),
    lambda m: m.randint(0, 3, (np.bool_(True),)),
])
def test_sizes_refuse_bools_and_floats_as_torch(call):
    with pytest.raises(TypeError):
        call(torch)
    with pytest.raises(TypeError, match="size must be a tuple of ints"):
        call(pyrt)


def test_arange_refuses_bool_as_torch():
    with pytest.raises(NotImplementedError):
        torch.arange(0, 5, dtype=torch.bool)
    with pytest.raises(NotImplementedError, match="arange.*bool"):
        pyrt.arange(0, 5, dtype=pyrt.bool)


def test_fill_values_of_more_than_one_element_name_the_argument():
    two = pyrt.tensor([1.0, 2.0])
    with pytest.raises(TypeError, match="'fill_value' must be a number or a 0-dimensional"):
        pyrt.full((2,), two)
    with pytest.raises(TypeError, match="'fill_value' must be a number or a 0-dimensional"):
        pyrt.full_like(two, two)
    with pytest.raises(RuntimeError, match="'start' must be a number or a 0-dimensional"):
        pyrt.linspace(two, 1.0, 3)
    np.testing.assert_array_equal(pyrt.full((2,), pyrt.tensor(3)).numpy(),
                                  torch.full((2,), torch.tensor(3)).numpy())
    np.testing.assert_allclose(pyrt.linspace(pyrt.tensor(0.0), 1.0, 5).numpy(),
                               torch.linspace(torch.tensor(0.0), 1.0, 5).numpy())


# ---- allclose -----------------------------------------------------------------------------------


def test_allclose_checks_its_tolerances_and_shapes():
    a, b = pyrt.tensor([1.0, 2.0]), pyrt.tensor([1.0, 2.1])
    for bad in (None, "a", True):
        with pytest.raises(TypeError, match="'rtol' must be a float"):
            pyrt.allclose(a, b, rtol=bad)
    with pytest.raises(RuntimeError, match="atol must be greater than or equal to zero"):
        pyrt.allclose(a, b, atol=-1.0)
    with pytest.raises(RuntimeError, match="rtol must be greater than or equal to zero"):
        pyrt.allclose(a, b, rtol=float("nan"))
    with pytest.raises(TypeError, match="'equal_nan' must be a bool"):
        pyrt.allclose(a, b, equal_nan="yes")
    with pytest.raises(RuntimeError, match="must match the size"):
        pyrt.allclose(a, pyrt.tensor([1.0, 2.0, 3.0]))
    ta, tb = torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.1])
    assert pyrt.allclose(a, b, rtol=0.1) == torch.allclose(ta, tb, rtol=0.1)
    assert pyrt.allclose(a, b) == torch.allclose(ta, tb)


# ---- save and load ------------------------------------------------------------------------------


def crafted(value, **arrays):
    """A file in pyrt.save's format holding `value` as metadata, beside `arrays`."""
    meta = {"__dict__": [["format", "pyrt"], ["version", 1], ["value", value]]}
    buffer = io.BytesIO()
    np.savez(buffer, meta=np.array(json.dumps(meta)), **arrays)
    buffer.seek(0)
    return buffer


def test_load_refuses_tensors_pyrt_never_writes():
    cases = [({"__tensor__": "a0"}, {"a0": np.array(["x", "y"])}, "dtype <U1"),
             ({"__tensor__": "a0"}, {"a0": np.array([1 + 2j])}, "dtype complex128"),
             ({"__tensor__": "meta"}, {}, "a tensor of dtype <U"),
             ({"__tensor__": "a0", "requires_grad": True}, {"a0": np.array([1, 2])},
              "int64 that requires grad"),
             ({"__tensor__": "a0", "requires_grad": True}, {"a0": np.array([1.0])},
              "float64 that requires grad")]
    for value, arrays, why in cases:
        with pytest.raises(ValueError, match=f"corrupt metadata \\(.*{why}"):
            pyrt.load(crafted(value, **arrays))
    loaded = pyrt.load(crafted({"__tensor__": "a0", "requires_grad": True},
                               a0=np.array([1.0], np.float32)))
    assert loaded.requires_grad and loaded.dtype == pyrt.float32


def test_load_of_corrupt_bytes_is_a_value_error():
    buffer = io.BytesIO()
    pyrt.save({"w": pyrt.tensor(normal((2, 2)), requires_grad=True), "n": [1, (2, "x")]},
              buffer)
    data = buffer.getvalue()
    rng = np.random.default_rng(0)
    for _ in range(1500):
        damaged = bytearray(data)
        for i in rng.integers(0, len(data), size=rng.integers(1, 5)):
            damaged[i] = rng.integers(0, 256)
        try:
            pyrt.load(io.BytesIO(bytes(damaged)))
        except ValueError:
            pass  # anything else (zipfile's RuntimeError, NotImplementedError) fails the test


def test_load_of_a_npy_file_says_what_it_is(tmp_path):
    path = tmp_path / "a.npy"
    np.save(path, np.arange(3))
    with pytest.raises(ValueError, match="a NumPy .npy array, not an .npz archive"):
        pyrt.load(path)


def test_text_files_and_other_objects_are_refused_naming_f(tmp_path):
    path = tmp_path / "a.pt"
    with open(path, "w") as f, pytest.raises(TypeError, match="text mode.*'wb'"):
        pyrt.save([1], f)
    pyrt.save([1], path)
    with open(path) as f, pytest.raises(TypeError, match="text mode.*'rb'"):
        pyrt.load(f)
    with pytest.raises(TypeError, match="text mode"):
        pyrt.save([1], io.StringIO())
    for bad in (None, 5, b"a.pt"):
        with pytest.raises(TypeError, match="save\\(\\): f must be a path"):
            pyrt.save([1], bad)
        with pytest.raises(TypeError, match="load\\(\\): f must be a path"):
            pyrt.load(bad)
    assert pyrt.load(path) == [1]


def nested(depth, kind):
    value = 1
    for _ in range(depth):
        value = {"k": value} if kind == "dict" else (value,) if kind == "tuple" else [value]
    return value


@pytest.mark.parametrize("kind", ["dict", "tuple", "list"])
def test_nesting_is_limited_so_that_every_saved_file_loads(kind, tmp_path):
    deepest = nested(serialization.MAX_DEPTH, kind)
    pyrt.save(deepest, tmp_path / "a.pt")
    assert pyrt.load(tmp_path / "a.pt") == deepest
    with pytest.raises(ValueError, match="nested more than"):
        pyrt.save(nested(serialization.MAX_DEPTH + 1, kind), tmp_path / "b.pt")
    assert not (tmp_path / "b.pt").exists()


def test_a_container_that_contains_itself_is_refused():
    loop = []
    loop.append(loop)
    with pytest.raises(ValueError, match="contains itself"):
        pyrt.save(loop, io.BytesIO())


def test_deeply_nested_metadata_is_corrupt_not_a_recursion_error():
    meta = ('{"__dict__": [["format", "pyrt"], ["version", 1], ["value", '
            + "[" * 100000 + "]" * 100000 + "]]}")
    buffer = io.BytesIO()
    np.savez(buffer, meta=np.array(meta))
    buffer.seek(0)
    with pytest.raises(ValueError, match="nested too deeply"):
        pyrt.load(buffer)


def test_max_and_min_over_no_elements_raise_as_torch():
    for dtype in (pyrt.float32, pyrt.int64):
        empty = pyrt.zeros(0, 3, dtype=dtype)
        for name in ("max", "min"):
            for args, error, message in (
                    ((0,), IndexError, "reduction dim 0 to have non-zero size"),
                    ((), RuntimeError, "reduction dim to be specified")):
                with pytest.raises(error, match=message):
                    getattr(torch.zeros(0, 3), name)(*args)
                with pytest.raises(error, match=f"{name}\\(\\): Expected {message}"):
                    getattr(empty, name)(*args)
            values, indices = getattr(empty, name)(1)  # over 3 elements of no rows: empty
            assert values.shape == indices.shape == (0,)
