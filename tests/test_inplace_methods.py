"""The in-place Tensor methods (sin_, atan2_, eq_, addmm_, t_, fill_diagonal_, ...), the ops
masked_scatter, put and index_reduce, the random fills random_, cauchy_, log_normal_ and
geometric_, and the top-level in-place functions: each in-place form against its out-of-place
form (bitwise) and torch's, gradients in a graph against torch's and the out-of-place op's,
the new ops' gradients against finite differences."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")
SETTINGS = settings(max_examples=20, deadline=None, derandomize=True)
shapes = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)


def values(shape, seed, domain="unit"):
    rng = np.random.default_rng(seed)
    low, high = {"unit": (0.05, 0.95), "signed": (-2.0, 2.0), "above1": (1.1, 3.0)}[domain]
    return rng.uniform(low, high, shape).astype(np.float32)


# name: (input domain, the other arguments: "o" a tensor of self's shape, "r" a row that
# broadcasts to it, numbers as they are)
POINTWISE = {
    "sin_": ("signed", ()), "cos_": ("signed", ()), "tan_": ("unit", ()),
    "asin_": ("unit", ()), "acos_": ("unit", ()), "atan_": ("signed", ()),
    "sinh_": ("signed", ()), "cosh_": ("signed", ()), "asinh_": ("signed", ()),
    "acosh_": ("above1", ()), "atanh_": ("unit", ()), "arcsin_": ("unit", ()),
    "arccos_": ("unit", ()), "arctan_": ("signed", ()), "arcsinh_": ("signed", ()),
    "arccosh_": ("above1", ()), "arctanh_": ("unit", ()), "sinc_": ("signed", ()),
    "deg2rad_": ("signed", ()), "rad2deg_": ("signed", ()), "erf_": ("signed", ()),
    "erfc_": ("signed", ()), "exp2_": ("signed", ()), "expm1_": ("signed", ()),
    "log10_": ("unit", ()), "log1p_": ("unit", ()), "log2_": ("unit", ()),
    "rsqrt_": ("unit", ()), "square_": ("signed", ()), "frac_": ("signed", ()),
    "fix_": ("signed", ()), "sgn_": ("signed", ()), "negative_": ("signed", ()),
    "absolute_": ("signed", ()), "logit_": ("unit", (0.1,)),
    "atan2_": ("signed", ("r",)), "arctan2_": ("signed", ("o",)), "hypot_": ("signed", ("r",)),
    "copysign_": ("signed", ("o",)), "fmod_": ("signed", ("r",)),
    "remainder_": ("signed", ("o",)), "floor_divide_": ("signed", ("o",)),
    "divide_": ("signed", ("r",)), "multiply_": ("signed", ("r",)),
    "subtract_": ("signed", ("o",)), "true_divide_": ("signed", ("o",)),
    "xlogy_": ("unit", ("r",)), "heaviside_": ("signed", ("o",)),
    "logical_and_": ("signed", ("o",)), "logical_or_": ("signed", ("r",)),
    "logical_xor_": ("signed", ("o",)), "logical_not_": ("signed", ()),
    "eq_": ("signed", ("o",)), "ne_": ("signed", ("r",)), "not_equal_": ("signed", ("o",)),
    "gt_": ("signed", ("o",)), "ge_": ("signed", ("r",)), "lt_": ("signed", ("o",)),
    "le_": ("signed", ("o",)), "greater_": ("signed", ("r",)),
    "greater_equal_": ("signed", ("o",)), "less_": ("signed", ("o",)),
    "less_equal_": ("signed", ("r",)), "lerp_": ("signed", ("o", 0.3)),
    "addcmul_": ("signed", ("o", "r")), "addcdiv_": ("signed", ("o", "o")),
    "clamp_": ("signed", (-0.5, 0.5)), "clip_": ("signed", (-0.5, None)),
}
# torch records no derivative for these in place (but pyrt does: checked against out of place)
NO_TORCH_GRADIENT = {"asinh_", "acosh_", "atanh_", "arcsinh_", "arccosh_", "arctanh_", "sgn_"}
# no derivative in torch or pyrt
NOT_DIFFERENTIABLE = {"floor_divide_", "heaviside_"}
# comparisons and logical ops: 1 and 0 in self's dtype, a zero gradient in pyrt (torch's
# logical ops in place leave the graph as it was; its comparisons give 0 as pyrt)
AS_NUMBER = {"logical_and_", "logical_or_", "logical_xor_", "logical_not_", "eq_", "ne_",
             "not_equal_", "gt_", "ge_", "lt_", "le_", "greater_", "greater_equal_", "less_",
             "less_equal_"}


def arguments(name, shape, seed, lib, requires_grad=False):
    """(self's array, the arguments of `name` for tensor library `lib`)."""
    domain, spec = POINTWISE[name]
    x = values(shape, seed, domain)
    args = []
    for i, a in enumerate(spec):
        if a in ("o", "r"):
            data = values(shape if a == "o" else shape[-1:], seed + 1 + i,
                          "unit" if name == "xlogy_" else "signed")
            if name in ("copysign_", "remainder_", "floor_divide_", "true_divide_",
                        "addcdiv_", "divide_"):
                data = np.where(np.abs(data) < 0.2, np.float32(0.5), data)  # away from 0
            args.append(lib.tensor(data, requires_grad=requires_grad))
        else:
            args.append(a)
    return x, args


def out_of_place(name):
    return name[:-1]


@pytest.mark.parametrize("name", sorted(POINTWISE))
@SETTINGS
@given(shape=shapes, seed=st.integers(0, 2**16))
def test_in_place_equals_out_of_place_and_torch(name, shape, seed):
    x, args = arguments(name, shape, seed, pyrt)
    t = pyrt.tensor(x)
    kept = t._data
    got = getattr(t, name)(*args)
    assert got is t and t._data is kept  # written into self's own array
    want = getattr(pyrt.tensor(x), out_of_place(name))(*args)
    np.testing.assert_array_equal(t.numpy(), want.numpy().astype(np.float32))
    assert t.dtype == pyrt.float32 and t.shape == shape
    if torch is not None:
        _, targs = arguments(name, shape, seed, torch)
        expected = getattr(torch.tensor(x), name)(*targs)
        np.testing.assert_allclose(t.numpy(), expected.numpy(), rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("name", sorted(set(POINTWISE) - NOT_DIFFERENTIABLE))
def test_gradients_in_a_graph(name):
    shape = (3, 4)
    x, args = arguments(name, shape, 7, pyrt, requires_grad=True)
    weight = values(shape, 99, "signed")
    leaf = pyrt.tensor(x, requires_grad=True)
    y = leaf * 1
    getattr(y, name)(*args)
    (y * pyrt.tensor(weight)).sum().backward()
    grads = [leaf.grad.numpy()] + [a.grad.numpy() for a in args if isinstance(a, pyrt.Tensor)]
    # the out-of-place op's gradients, without torch
    leaf2 = pyrt.tensor(x, requires_grad=True)
    args2 = [pyrt.tensor(a.detach().numpy(), requires_grad=True)
             if isinstance(a, pyrt.Tensor) else a for a in args]
    out = getattr(leaf2 * 1, out_of_place(name))(*args2)
    if name in AS_NUMBER:
        for g in grads:
            np.testing.assert_array_equal(g, 0)
    else:
        (out * pyrt.tensor(weight)).sum().backward()
        ref = [leaf2.grad.numpy()] + [a.grad.numpy() for a in args2
                                       if isinstance(a, pyrt.Tensor)]
        for g, r in zip(grads, ref):
            np.testing.assert_allclose(g, r, rtol=1e-6, atol=1e-7)
    if torch is None or name in NO_TORCH_GRADIENT or name.startswith("logical"):
        return
    _, targs = arguments(name, shape, 7, torch, requires_grad=True)
    tleaf = torch.tensor(x, requires_grad=True)
    ty = tleaf * 1
    getattr(ty, name)(*targs)
    (ty * torch.tensor(weight)).sum().backward()
    tgrads = [tleaf.grad] + [a.grad for a in targs if isinstance(a, torch.Tensor)]
    for g, r in zip(grads, tgrads):
        np.testing.assert_allclose(g, r.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", sorted(POINTWISE))
def test_a_leaf_requiring_grad_is_refused(name):
    x, args = arguments(name, (2, 3), 3, pyrt)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        getattr(pyrt.tensor(x, requires_grad=True), name)(*args)
    with pyrt.no_grad():  # allowed there, as in torch
        getattr(pyrt.tensor(x, requires_grad=True), name)(*args)


@pytest.mark.parametrize("name", ["sin_", "sqrt_", "rsqrt_", "exp2_", "logit_", "deg2rad_",
                                  "erf_", "log1p_", "asinh_"])
def test_floating_results_cannot_be_written_into_integers(name):
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        getattr(pyrt.arange(4), name)()
    with pytest.raises(RuntimeError, match="desired output type Bool"):
        getattr(pyrt.tensor([True, False]), name)()
    if torch is not None:
        with pytest.raises(RuntimeError, match="desired output type Long"):
            getattr(torch.arange(4), name)()
    with pytest.raises(RuntimeError, match="desired output type Long"):
        pyrt.arange(4).true_divide_(pyrt.arange(1, 5))


def test_integer_forms_keep_integers():
    a, b = np.array([-7, -3, 0, 5, 9]), np.array([2, 3, 4, -3, 5])
    cases = [("square_", ()), ("fix_", ()), ("sgn_", ()), ("negative_", ()), ("absolute_", ()),
             ("remainder_", (b,)), ("fmod_", (b,)), ("floor_divide_", (b,)),
             ("bitwise_and_", (b,)), ("bitwise_or_", (b,)), ("bitwise_xor_", (b,)),
             ("bitwise_not_", ()), ("eq_", (b,)), ("lt_", (b,)), ("logical_and_", (b,)),
             ("logical_not_", ()), ("multiply_", (b,)), ("subtract_", (b,)),
             ("cumsum_", (0,)), ("cumprod_", (0,))]
    for name, args in cases:
        t = pyrt.tensor(a)
        getattr(t, name)(*(pyrt.tensor(v) if isinstance(v, np.ndarray) else v for v in args))
        assert t.dtype == pyrt.int64, name
        want = {"square_": a * a, "fix_": a, "sgn_": np.sign(a), "negative_": -a,
                "absolute_": np.abs(a), "remainder_": np.remainder(a, b),
                "fmod_": np.fmod(a, b), "floor_divide_": a // b, "bitwise_and_": a & b,
                "bitwise_or_": a | b, "bitwise_xor_": a ^ b, "bitwise_not_": ~a,
                "eq_": (a == b) * 1, "lt_": (a < b) * 1, "logical_and_": (a != 0) & (b != 0),
                "logical_not_": a == 0, "multiply_": a * b, "subtract_": a - b,
                "cumsum_": np.cumsum(a), "cumprod_": np.cumprod(a)}[name]
        np.testing.assert_array_equal(t.numpy(), want, err_msg=name)
    t = pyrt.tensor(a)
    t.divide_(pyrt.tensor(b), rounding_mode="floor")
    np.testing.assert_array_equal(t.numpy(), a // b)


def test_comparisons_write_one_and_zero_in_floats():
    t = pyrt.tensor([1.0, 2.0, 3.0])
    t.ge_(2)
    assert t.dtype == pyrt.float32
    np.testing.assert_array_equal(t.numpy(), [0.0, 1.0, 1.0])


def test_results_must_broadcast_to_self():
    t = pyrt.zeros(3)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        t.atan2_(pyrt.ones(2, 3))
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        t.eq_(pyrt.ones(2, 3))
    np.testing.assert_array_equal(t.numpy(), 0)  # unchanged
    with pytest.raises(RuntimeError):
        pyrt.zeros(3).lerp_(pyrt.ones(2, 3), 0.5)


# ---- matrix products, scans, triangles ----------------------------------------------------


def matrix_cases(lib, rg=False):
    r = np.random.default_rng(5)

    def m(*s):
        return lib.tensor(r.standard_normal(s).astype(np.float32), requires_grad=rg)

    return [("addmm_", (3, 4), (m(3, 5), m(5, 4)), {"beta": 0.5, "alpha": 2.0}),
            ("addbmm_", (3, 4), (m(2, 3, 5), m(2, 5, 4)), {"alpha": 0.5}),
            ("baddbmm_", (2, 3, 4), (m(2, 3, 5), m(2, 5, 4)), {"beta": 2.0}),
            ("addmv_", (3,), (m(3, 5), m(5)), {"beta": 0.5}),
            ("cumsum_", (3, 4), (1,), {}), ("cumprod_", (3, 4), (0,), {}),
            ("tril_", (3, 4), (1,), {}), ("triu_", (3, 4), (-1,), {})]


@pytest.mark.parametrize("case", range(8))
def test_matrix_scan_and_triangle_forms(case):
    name, shape, args, kwargs = matrix_cases(pyrt)[case]
    x = values(shape, case, "signed")
    t = pyrt.tensor(x)
    getattr(t, name)(*args, **kwargs)
    want = getattr(pyrt.tensor(x), name[:-1])(*args, **kwargs)
    np.testing.assert_array_equal(t.numpy(), want.numpy())
    leaf = pyrt.tensor(x, requires_grad=True)
    y = leaf * 1
    gargs = matrix_cases(pyrt, rg=True)[case][2]
    getattr(y, name)(*gargs, **kwargs)
    (y * y).sum().backward()
    if torch is None:
        return
    _, _, targs, _ = matrix_cases(torch, rg=True)[case]
    tleaf = torch.tensor(x, requires_grad=True)
    ty = tleaf * 1
    getattr(ty, name)(*targs, **kwargs)
    np.testing.assert_allclose(t.numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-5)
    (ty * ty).sum().backward()
    np.testing.assert_allclose(leaf.grad.numpy(), tleaf.grad.numpy(), rtol=1e-4, atol=1e-4)
    for a, ta in zip(gargs, targs):
        if isinstance(a, pyrt.Tensor):
            np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-4, atol=1e-4)


# ---- fill_diagonal_ --------------------------------------------------------------------------


@pytest.mark.parametrize("shape,wrap", [((3, 3), False), ((5, 3), False), ((7, 3), True),
                                        ((4, 3), True), ((3, 6), True), ((2, 2, 2), False),
                                        ((3, 3, 3), True)])
def test_fill_diagonal(shape, wrap):
    x = values(shape, 1, "signed")
    t = pyrt.tensor(x)
    t.fill_diagonal_(2.5, wrap=wrap)
    want = x.copy()
    if len(shape) == 2:
        np.fill_diagonal(want, 2.5, wrap=wrap)  # NumPy's wrap is PyTorch's
    else:
        want[(np.arange(shape[0]),) * len(shape)] = 2.5
    np.testing.assert_array_equal(t.numpy(), want)
    if torch is not None:
        np.testing.assert_array_equal(
            t.numpy(), torch.tensor(x).fill_diagonal_(2.5, wrap=wrap).numpy())
    leaf = pyrt.tensor(x, requires_grad=True)
    y = leaf * 1
    y.fill_diagonal_(0.0, wrap=wrap)
    y.sum().backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), (want != 2.5).astype(np.float32))


def test_fill_diagonal_errors_and_integers():
    t = pyrt.zeros(3, 3, dtype=pyrt.int64)
    t.fill_diagonal_(2.5)
    np.testing.assert_array_equal(t.numpy(), np.eye(3, dtype=np.int64) * 2)
    with pytest.raises(RuntimeError, match="dimensions must larger than 1"):
        pyrt.zeros(3).fill_diagonal_(1)
    with pytest.raises(RuntimeError, match="all dimensions of input must be of equal length"):
        pyrt.zeros(2, 3, 2).fill_diagonal_(1)
    with pytest.raises(TypeError, match="fill_value"):
        pyrt.zeros(2, 2).fill_diagonal_("1")
    with pytest.raises(TypeError, match="wrap"):
        pyrt.zeros(2, 2).fill_diagonal_(1, wrap=1)


# ---- shape changes in place, detach_ -----------------------------------------------------


SHAPE_CASES = [("t_", (3, 4), ()), ("t_", (3,), ()), ("transpose_", (2, 3, 4), (0, 2)),
               ("swapaxes_", (2, 3, 4), (1, -1)), ("swapdims_", (2, 3), (0, 1)),
               ("squeeze_", (1, 3, 1), ()), ("squeeze_", (1, 3, 1), (2,)),
               ("unsqueeze_", (2, 3), (1,)), ("unsqueeze_", (2, 3), (-1,))]


@pytest.mark.parametrize("name,shape,args", SHAPE_CASES)
def test_shape_changes_in_place(name, shape, args):
    x = values(shape, 2, "signed")
    t = pyrt.tensor(x)
    alias = t.detach()
    assert getattr(t, name)(*args) is t
    want = getattr(pyrt.tensor(x), name[:-1])(*args)
    assert t.shape == want.shape
    np.testing.assert_array_equal(t.numpy(), want.numpy())
    t.fill_(7.0)  # self's memory is still the alias's, as with torch's strides
    np.testing.assert_array_equal(alias.numpy(), 7.0)
    leaf = pyrt.tensor(x, requires_grad=True)
    y = leaf * 1
    getattr(y, name)(*args)
    assert y.shape == want.shape and y.requires_grad
    weight = values(want.shape, 3, "signed")
    (y * pyrt.tensor(weight)).sum().backward()
    with pytest.raises(RuntimeError, match="leaf Variable"):
        getattr(pyrt.tensor(x, requires_grad=True), name)(*args)
    if torch is None:
        return
    tt = torch.tensor(x)
    getattr(tt, name)(*args)
    assert tuple(tt.shape) == t.shape
    tleaf = torch.tensor(x, requires_grad=True)
    ty = tleaf * 1
    getattr(ty, name)(*args)
    (ty * torch.tensor(weight)).sum().backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), tleaf.grad.numpy())


def test_shape_changes_refuse_bad_dims():
    with pytest.raises(RuntimeError, match="t\\(\\) expects a tensor with <= 2 dimensions"):
        pyrt.zeros(2, 2, 2).t_()
    t = pyrt.zeros(2, 3)
    with pytest.raises(IndexError):
        t.transpose_(0, 2)
    assert t.shape == (2, 3)


def test_detach_makes_a_leaf():
    leaf = pyrt.tensor([1.0, 2.0], requires_grad=True)
    y = leaf * 2
    assert y.detach_() is y
    assert not y.requires_grad and y.grad_fn is None
    leaf.detach_()
    assert not leaf.requires_grad


# ---- masked_scatter, put, index_reduce -------------------------------------------------------


def finite_difference(f, arrays, which, eps=1e-2):
    """d sum(f(*arrays) * w) / d arrays[which], centred, in float64 from float32 forwards."""
    base = [a.astype(np.float64) for a in arrays]
    w = np.random.default_rng(11).standard_normal(f(*arrays).shape)
    grad = np.zeros_like(base[which])
    for i in np.ndindex(grad.shape):
        hi, lo = [b.copy() for b in base], [b.copy() for b in base]
        hi[which][i] += eps
        lo[which][i] -= eps
        up = f(*[h.astype(np.float32) for h in hi]).astype(np.float64)
        down = f(*[v.astype(np.float32) for v in lo]).astype(np.float64)
        grad[i] = ((up - down) * w).sum() / (2 * eps)
    return grad, w


def check_gradients(op, arrays, others=()):
    """op(*tensors, *others)'s gradients against finite differences (and torch's)."""
    def forward(*a):
        return op(pyrt, *[pyrt.tensor(v) for v in a], *others(pyrt)).numpy()

    tensors = [pyrt.tensor(a, requires_grad=True) for a in arrays]
    out = op(pyrt, *tensors, *others(pyrt))
    _, w = finite_difference(forward, arrays, 0)
    (out * pyrt.tensor(w.astype(np.float32))).sum().backward()
    for k, t in enumerate(tensors):
        want, _ = finite_difference(forward, arrays, k)
        np.testing.assert_allclose(t.grad.numpy(), want, rtol=1e-2, atol=1e-2)
    if torch is not None:
        tt = [torch.tensor(a, requires_grad=True) for a in arrays]
        tout = op(torch, *tt, *others(torch))
        np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-6,
                                   atol=1e-6)
        (tout * torch.tensor(w.astype(np.float32))).sum().backward()
        for t, r in zip(tensors, tt):
            np.testing.assert_allclose(t.grad.numpy(), r.grad.numpy(), rtol=1e-5, atol=1e-6)


@SETTINGS
@given(shape=shapes, seed=st.integers(0, 2**16), broadcast=st.booleans())
def test_masked_scatter(shape, seed, broadcast):
    rng = np.random.default_rng(seed)
    x = values(shape, seed, "signed")
    mask = rng.random(shape[-1:] if broadcast else shape) < 0.5
    source = values((int(np.prod(shape)) + 2,), seed + 1, "signed")
    got = pyrt.tensor(x).masked_scatter(pyrt.tensor(mask), pyrt.tensor(source))
    want = x.copy()
    full = np.broadcast_to(mask, shape)
    want[full] = source[:full.sum()]
    np.testing.assert_array_equal(got.numpy(), want)
    t = pyrt.tensor(x)
    t.masked_scatter_(pyrt.tensor(mask), pyrt.tensor(source))
    np.testing.assert_array_equal(t.numpy(), want)
    check_gradients(lambda lib, a, s, m: a.masked_scatter(m, s), [x, source],
                    lambda lib: (lib.tensor(mask),))


def test_masked_scatter_errors():
    x = pyrt.zeros(2, 3)
    with pytest.raises(RuntimeError, match="only supports boolean masks"):
        x.masked_scatter(pyrt.tensor([1, 0, 1]), pyrt.ones(6))
    with pytest.raises(RuntimeError, match="Number of elements of source < number of ones"):
        x.masked_scatter(pyrt.ones(2, 3, dtype=pyrt.bool), pyrt.ones(3))
    with pytest.raises(RuntimeError, match="same dtypes"):
        x.masked_scatter(pyrt.ones(2, 3, dtype=pyrt.bool), pyrt.arange(6))
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        pyrt.zeros(3).masked_scatter_(pyrt.ones(2, 3, dtype=pyrt.bool), pyrt.ones(6))


@SETTINGS
@given(shape=shapes, seed=st.integers(0, 2**16), accumulate=st.booleans())
def test_put(shape, seed, accumulate):
    rng = np.random.default_rng(seed)
    x = values(shape, seed, "signed")
    n = x.size
    # distinct positions (some negative) unless accumulating, where repeats add up
    index = (rng.integers(-n, n, 5) if accumulate
             else rng.permutation(n)[:min(n, 3)] - rng.integers(0, 2) * n)
    source = values(index.shape, seed + 1, "signed")
    got = pyrt.tensor(x).put(pyrt.tensor(index), pyrt.tensor(source), accumulate)
    want = x.copy().reshape(-1)
    if accumulate:
        np.add.at(want, index % n, source)
    else:
        want[index % n] = source
    np.testing.assert_allclose(got.numpy(), want.reshape(shape), rtol=1e-6, atol=1e-6)
    t = pyrt.tensor(x)
    t.put_(pyrt.tensor(index), pyrt.tensor(source), accumulate=accumulate)
    np.testing.assert_array_equal(t.numpy(), got.numpy())
    check_gradients(lambda lib, a, s, i: a.put(i, s, accumulate), [x, source],
                    lambda lib: (lib.tensor(index),))


def test_put_errors():
    x = pyrt.zeros(2, 3)
    with pytest.raises(IndexError, match="out of range: tried to access index 6"):
        x.put(pyrt.tensor([0, 6]), pyrt.ones(2))
    with pytest.raises(IndexError, match="same number of elements"):
        x.put(pyrt.tensor([0, 1]), pyrt.ones(3))
    with pytest.raises(RuntimeError, match="same dtype"):
        x.put(pyrt.tensor([0, 1]), pyrt.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="Expected a long tensor for index"):
        x.put(pyrt.tensor([0.0, 1.0]), pyrt.ones(2))
    with pytest.raises(TypeError, match="accumulate"):
        x.put(pyrt.tensor([0, 1]), pyrt.ones(2), accumulate=1)


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@SETTINGS
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple),
       seed=st.integers(0, 2**16))
def test_index_reduce(reduce, include_self, shape, seed):
    rng = np.random.default_rng(seed)
    dim = int(rng.integers(-len(shape), len(shape)))
    x = values(shape, seed, "signed")
    count = int(rng.integers(1, 5))
    index = rng.integers(0, shape[dim], count)
    source_shape = list(shape)
    source_shape[dim] = count
    # distinct values: amax and amin have no ties, so their gradient is one-sided
    source = (rng.permutation(int(np.prod(source_shape))).reshape(source_shape) * 0.37
              - 1).astype(np.float32)
    got = pyrt.tensor(x).index_reduce(dim, pyrt.tensor(index), pyrt.tensor(source), reduce,
                                      include_self=include_self)
    # the definition, in float64
    want = x.astype(np.float64)
    moved, src = np.moveaxis(want, dim, 0), np.moveaxis(source.astype(np.float64), dim, 0)
    for j in range(shape[dim]):
        picked = src[index == j]
        if not len(picked):
            continue
        rows = np.concatenate([moved[j][None], picked]) if include_self else picked
        moved[j] = {"prod": np.prod, "mean": np.mean, "amax": np.max,
                    "amin": np.min}[reduce](rows, axis=0)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)
    t = pyrt.tensor(x)
    t.index_reduce_(dim, pyrt.tensor(index), pyrt.tensor(source), reduce,
                    include_self=include_self)
    np.testing.assert_array_equal(t.numpy(), got.numpy())
    if reduce in ("amax", "amin") and include_self:
        x = x + 100.0 * (reduce == "amax")  # away from source's values: no ties with self
    check_gradients(lambda lib, a, s, i: a.index_reduce(dim, i, s, reduce,
                                                        include_self=include_self),
                    [x, source], lambda lib: (lib.tensor(index),))


def test_index_reduce_errors():
    x = pyrt.zeros(2, 3)
    with pytest.raises(RuntimeError, match="one of prod, mean, amax or amin but got sum"):
        x.index_reduce(0, pyrt.tensor([0, 1]), pyrt.ones(2, 3), "sum")
    with pytest.raises(RuntimeError, match="source tensor shape must match"):
        x.index_reduce(0, pyrt.tensor([0, 1]), pyrt.ones(2, 4), "prod")
    with pytest.raises(RuntimeError, match="Number of indices \\(3\\)"):
        x.index_reduce(0, pyrt.tensor([0, 1, 1]), pyrt.ones(2, 3), "prod")
    with pytest.raises(IndexError, match="index out of range in self"):
        x.index_reduce(0, pyrt.tensor([0, 2]), pyrt.ones(2, 3), "prod")
    with pytest.raises(IndexError, match="supposed to be a vector"):
        x.index_reduce(0, pyrt.tensor([[0, 1]]), pyrt.ones(2, 3), "prod")
    with pytest.raises(RuntimeError, match="same scalar type"):
        x.index_reduce(0, pyrt.tensor([0, 1]), pyrt.ones(2, 3, dtype=pyrt.int64), "prod")


def test_index_reduce_integer_mean_floors():
    x = pyrt.arange(6).reshape(2, 3)
    got = x.index_reduce(0, pyrt.tensor([0, 0]), pyrt.arange(6).reshape(2, 3) + 1, "mean")
    np.testing.assert_array_equal(got.numpy(), [[1, 2, 3], [3, 4, 5]])
    assert got.dtype == pyrt.int64


# ---- random fills ---------------------------------------------------------------------------


RANDOM_FILLS = [("random_", (3, 9)), ("random_", (5,)), ("cauchy_", (1.0, 2.0)),
                ("log_normal_", (0.5, 0.25)), ("geometric_", (0.25,))]


@pytest.mark.parametrize("name,args", RANDOM_FILLS)
def test_random_fills_repeat_with_the_seed(name, args):
    pyrt.manual_seed(3)
    a = getattr(pyrt.zeros(50), name)(*args).numpy().copy()
    pyrt.manual_seed(3)
    b = getattr(pyrt.zeros(50), name)(*args).numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, getattr(pyrt.zeros(50), name)(*args).numpy())
    with pytest.raises(RuntimeError, match="leaf Variable"):
        getattr(pyrt.zeros(3, requires_grad=True), name)(*args)


def test_random_distributions():
    pyrt.manual_seed(0)
    n = 100_000
    ints = pyrt.zeros(n).random_(3, 9).numpy()
    assert set(np.unique(ints)) == set(range(3, 9))
    np.testing.assert_allclose(np.bincount(ints.astype(int))[3:] / n, 1 / 6, atol=0.01)
    assert set(np.unique(pyrt.zeros(1000).random_(4).numpy())) == {0, 1, 2, 3}
    assert set(np.unique(pyrt.zeros(1000, dtype=pyrt.bool).random_().numpy())) == {0, 1}
    big = pyrt.zeros(n).random_().numpy()
    assert big.min() >= 0 and big.max() <= 2**24 and big.mean() > 2**22
    longs = pyrt.zeros(1000, dtype=pyrt.int64).random_(-5, None).numpy()
    assert longs.min() >= -5 and longs.max() > 2**60
    c = pyrt.zeros(n).cauchy_(1.0, 2.0).numpy()
    assert abs(np.median(c) - 1.0) < 0.05
    q1, q3 = np.percentile(c, [25, 75])  # the quartiles of Cauchy(m, s) are m -+ s
    assert abs(q1 + 1.0) < 0.1 and abs(q3 - 3.0) < 0.1
    log = np.log(pyrt.zeros(n).log_normal_(0.5, 0.25).numpy())
    assert abs(log.mean() - 0.5) < 0.01 and abs(log.std() - 0.25) < 0.01
    g = pyrt.zeros(n, dtype=pyrt.int64).geometric_(0.25).numpy()
    assert g.dtype == np.int64 and g.min() == 1
    assert abs(g.mean() - 4.0) < 0.05 and abs((g == 1).mean() - 0.25) < 0.01


def test_random_fill_errors():
    with pytest.raises(RuntimeError, match="expects 'from' to be less than 'to'"):
        pyrt.zeros(3).random_(5, 5)
    with pytest.raises(RuntimeError, match="expects 'from' to be less than 'to'"):
        pyrt.zeros(3).random_(-3)
    with pytest.raises(TypeError, match="'to' must be int"):
        pyrt.zeros(3).random_(2.5)
    with pytest.raises(RuntimeError, match="out of bounds for bool"):
        pyrt.zeros(3, dtype=pyrt.bool).random_(0, 3)
    with pytest.raises(RuntimeError, match="cauchy_ expects sigma > 0.0"):
        pyrt.zeros(3).cauchy_(0, 0)
    with pytest.raises(RuntimeError, match="dtype must be a floating point"):
        pyrt.zeros(3, dtype=pyrt.int64).cauchy_()
    with pytest.raises(RuntimeError, match="log_normal_ expects std > 0.0"):
        pyrt.zeros(3).log_normal_(0, 0)
    with pytest.raises(NotImplementedError):
        pyrt.zeros(3, dtype=pyrt.int64).log_normal_()
    for p in (0, 1, 1.5):
        with pytest.raises(RuntimeError, match="geometric_ expects p to be in \\(0, 1\\)"):
            pyrt.zeros(3).geometric_(p)


# ---- the top-level in-place functions -------------------------------------------------------


@pytest.mark.parametrize("name", ["sin_", "abs_", "relu_", "sigmoid_", "erfc_", "square_",
                                  "logit_", "rsqrt_", "zero_", "trunc_"])
def test_top_level_forms_are_the_methods(name):
    x = values((3, 4), 4, "unit")
    t = pyrt.tensor(x)
    assert getattr(pyrt, name)(t) is t
    np.testing.assert_array_equal(t.numpy(), getattr(pyrt.tensor(x), name)().numpy())
    with pytest.raises(TypeError, match="must be a Tensor"):
        getattr(pyrt, name)(x)
    assert name in pyrt.__all__


@needs_torch
def test_top_level_activation_forms_match_torch():
    x = values((3, 4), 5, "signed")
    cases = [("celu_", (0.5,)), ("selu_", ()), ("threshold_", (0.1, -1.0)),
             ("rrelu_", (0.1, 0.3, False)), ("dropout_", (0.5, False)),
             ("alpha_dropout_", (0.5, False)), ("feature_alpha_dropout_", (0.5, False)),
             ("feature_dropout_", (0.5, False)), ("clamp_", (-0.5, 0.5)), ("fix_", ())]
    for name, args in cases:
        t = pyrt.tensor(x)
        assert getattr(pyrt, name)(t, *args) is t
        want = getattr(torch, name)(torch.tensor(x), *args)
        np.testing.assert_allclose(t.numpy(), want.numpy(), rtol=1e-6, atol=1e-6,
                                   err_msg=name)
    t = pyrt.tensor(np.ones((4, 50), np.float32))
    pyrt.manual_seed(0)
    pyrt.dropout_(t, 0.5, True)
    assert set(np.unique(t.numpy())) == {0.0, 2.0}


def test_top_level_new_ops():
    x = pyrt.zeros(2, 3)
    got = pyrt.put(x, pyrt.tensor([0, -1]), pyrt.tensor([5.0, 6.0]))
    np.testing.assert_array_equal(got.numpy(), [[5, 0, 0], [0, 0, 6]])
    got = pyrt.masked_scatter(x, pyrt.tensor([True, False, True]), pyrt.arange(6.0))
    np.testing.assert_array_equal(got.numpy(), [[0, 0, 1], [2, 0, 3]])
    got = pyrt.index_reduce(x + 1, 1, pyrt.tensor([2, 2]), pyrt.full((2, 2), 3.0), "prod")
    np.testing.assert_array_equal(got.numpy(), [[1, 1, 9], [1, 1, 9]])
