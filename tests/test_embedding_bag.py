"""embedding_bag and nn.EmbeddingBag (pyrt/embedding_bag.py, pyrt/nn/embedding_bag.py).

Against a NumPy reference written as loops over the bags and their entries, straight from
the definition (it runs without PyTorch), and against PyTorch where it is installed: the
outputs and the gradients of sum(out * G), for a fixed random G, with respect to weight and
per_sample_weights, over bag sizes, offsets, modes, padding and include_last_offset
(hypothesis), with tied and NaN values for "max"; at 1 and 2 threads; errors with PyTorch's
types; the module's initialisation, repr, state_dict and from_pretrained."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
from pyrt.embedding_bag import embedding_bag
from pyrt.nn.embedding import Embedding
from pyrt.nn.embedding_bag import EmbeddingBag

try:  # the reference for the comparisons marked needs_torch; the others use the loops
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")

F32 = np.float32
MODES = ("sum", "mean", "max")
SETTINGS = settings(max_examples=60, deadline=None)


def rng(seed):
    return np.random.default_rng(seed)


def assert_close(got, want, scale=1.0, tol=1e-5, what=""):
    """|got - want| <= tol * max(|want|, scale) elementwise; NaN where want has NaN."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * scale, equal_nan=True,
                               err_msg=what)


# ---- the reference ---------------------------------------------------------------------------


def reference(index, weight, offsets=None, mode="mean", per_sample_weights=None,
              include_last_offset=False, padding_idx=None, grad=None):
    """(output, gradient of weight, gradient of per_sample_weights) of sum(output * grad),
    bag by bag and entry by entry, in float64. The maximum is a running one from the bag's
    first entry, replaced by a greater value only (the first of equal values wins, NaN
    compares false), and its gradient goes to the entry it came from."""
    index, weight = np.asarray(index), np.asarray(weight, np.float64)
    rows, dim = weight.shape
    flat = index.reshape(-1)
    if index.ndim == 2:
        size = index.shape[1]
        bounds = [(b * size, (b + 1) * size) for b in range(index.shape[0])]
    else:
        ends = list(offsets[1:]) + ([] if include_last_offset else [flat.size])
        bounds = list(zip(offsets, ends))
    if padding_idx is not None:
        padding_idx %= rows
    scales = None if per_sample_weights is None else np.asarray(per_sample_weights).reshape(-1)
    out = np.zeros((len(bounds), dim))
    grad_weight = np.zeros((rows, dim))
    grad_scales = np.zeros(flat.size)
    for b, (start, end) in enumerate(bounds):
        entries = [i for i in range(start, end) if flat[i] != padding_idx]
        if not entries:
            continue
        if mode == "max":
            for d in range(dim):
                best = entries[0]
                for i in entries[1:]:
                    if weight[flat[i], d] > weight[flat[best], d]:
                        best = i
                out[b, d] = weight[flat[best], d]
                grad_weight[flat[best], d] += grad[b, d]
            continue
        for i in entries:
            s = 1 / len(entries) if mode == "mean" else 1.0 if scales is None else scales[i]
            out[b] += s * weight[flat[i]]
            grad_weight[flat[i]] += s * grad[b]
            grad_scales[i] = grad[b] @ weight[flat[i]]
    return out, grad_weight, grad_scales.reshape(index.shape)


def run_pyrt(index, weight, offsets=None, grad=None, per_sample_weights=None, **options):
    """(output, gradient of weight, gradient of per_sample_weights or None) of pyrt's."""
    w = pyrt.tensor(weight, requires_grad=True)
    p = None if per_sample_weights is None else pyrt.tensor(per_sample_weights,
                                                             requires_grad=True)
    o = None if offsets is None else pyrt.tensor(offsets)
    out = embedding_bag(pyrt.tensor(index), w, o, per_sample_weights=p, **options)
    assert out.dtype == F32
    (out * pyrt.tensor(grad)).sum().backward()
    return out._data, w.grad._data, None if p is None else p.grad._data


def run_torch(index, weight, offsets=None, grad=None, per_sample_weights=None, **options):
    w = torch.tensor(weight, requires_grad=True)
    p = None if per_sample_weights is None else torch.tensor(per_sample_weights,
                                                              requires_grad=True)
    o = None if offsets is None else torch.tensor(offsets)
    out = torch.nn.functional.embedding_bag(torch.tensor(index), w, o, per_sample_weights=p,
                                            **options)
    (out * torch.tensor(grad)).sum().backward()
    return out.detach().numpy(), w.grad.numpy(), None if p is None else p.grad.numpy()


# ---- cases -----------------------------------------------------------------------------------


@st.composite
def bag_cases(draw, tail=True):
    """A case: index (2-D, or 1-D with offsets), weight, grad and the options. Weights are
    sometimes small integers, so that "max" meets equal values in a bag. With `tail`, a 1-D
    input with include_last_offset may run past its last offset (those entries are in no
    bag; PyTorch is inconsistent there, pytorch/pytorch#52851)."""
    r = rng(draw(st.integers(0, 2**32 - 1)))
    rows, dim = draw(st.integers(1, 6)), draw(st.integers(0, 4))
    mode = draw(st.sampled_from(MODES))
    include_last_offset = draw(st.booleans())
    offsets = None
    if draw(st.booleans()):
        shape = (draw(st.integers(0, 4)), draw(st.integers(1, 4)))
    else:
        sizes = draw(st.lists(st.integers(0, 4), max_size=5))
        bounds = np.cumsum([0] + sizes)
        offsets = bounds if include_last_offset else bounds[:-1]
        extra = draw(st.integers(0, 2)) if tail and include_last_offset else 0
        shape = (int(bounds[-1]) + extra,)
    if draw(st.booleans()):
        weight = r.integers(-2, 3, (rows, dim)).astype(F32)
    else:
        weight = r.standard_normal((rows, dim)).astype(F32)
    options = {"mode": mode, "include_last_offset": include_last_offset,
               "padding_idx": draw(st.one_of(st.none(), st.integers(-rows, rows - 1)))}
    per_sample_weights = None
    if mode == "sum" and draw(st.booleans()):
        per_sample_weights = r.standard_normal(shape).astype(F32)
    index = r.integers(0, rows, shape)
    bags = shape[0] if offsets is None else offsets.size - include_last_offset
    grad = r.standard_normal((bags, dim)).astype(F32)
    return index, weight, offsets, grad, per_sample_weights, options


def check_case(case, run):
    index, weight, offsets, grad, per_sample_weights, options = case
    out, grad_weight, grad_scales = run_pyrt(index, weight, offsets, grad, per_sample_weights,
                                             **options)
    want, want_weight, want_scales = run(index, weight, offsets, grad, per_sample_weights,
                                         **options)
    # each value sums a bag's rows (times their weights): rounded to the size of those
    size = max(float(np.nanmax(np.abs(weight), initial=0)), 1.0) * index.size
    assert_close(out, want, size, what="output")
    assert_close(grad_weight, want_weight, size * float(np.abs(grad).max(initial=1)),
                 what="gradient of weight")
    if per_sample_weights is not None:
        assert_close(grad_scales, want_scales, size, what="gradient of per_sample_weights")


def reference_run(index, weight, offsets, grad, per_sample_weights, **options):
    return reference(index, weight, offsets, per_sample_weights=per_sample_weights, grad=grad,
                     **options)


@SETTINGS
@given(case=bag_cases())
def test_against_the_definition(case):
    check_case(case, reference_run)


@needs_torch
@SETTINGS
@given(case=bag_cases(tail=False))
def test_against_torch(case):
    check_case(case, run_torch)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("mode", MODES)
def test_larger_bags_at_one_and_two_threads(threads, mode):
    """300 indices in 40 bags of random sizes (some empty) from a 50-row table, padding row
    included: against the loops, and against torch where installed."""
    r = rng(threads * 10 + MODES.index(mode))
    sizes = r.integers(0, 16, 40)
    sizes[[3, 17]] = 0
    index = r.integers(0, 50, int(sizes.sum()))
    offsets = np.cumsum(sizes) - sizes
    weight = r.standard_normal((50, 16)).astype(F32)
    grad = r.standard_normal((40, 16)).astype(F32)
    scales = r.standard_normal(index.shape).astype(F32) if mode == "sum" else None
    case = index, weight, offsets, grad, scales, {"mode": mode, "padding_idx": 7}
    with pyrt.num_threads(threads):
        check_case(case, reference_run)
        if torch is not None:
            check_case(case, run_torch)


# ---- by hand ---------------------------------------------------------------------------------


def test_bags_by_hand():
    """Rows 10 * i + (0, 1): bags [1, 2], [] and [3, 0, 3] with padding 0 left out of the
    third bag's sum and count."""
    weight = pyrt.tensor(np.array([[0, 1], [10, 11], [20, 21], [30, 31]], F32),
                         requires_grad=True)
    index, offsets = pyrt.tensor([1, 2, 3, 0, 3]), pyrt.tensor([0, 2, 2])
    out = embedding_bag(index, weight, offsets, mode="mean", padding_idx=0)
    assert out._data.tolist() == [[15, 16], [0, 0], [30, 31]]
    out.sum().backward()
    assert weight.grad._data[:, 0].tolist() == [0, 0.5, 0.5, 1]  # 3: twice, half each
    out = embedding_bag(index, weight, offsets, mode="sum")
    assert out._data.tolist() == [[30, 32], [0, 0], [60, 63]]
    out = embedding_bag(index, weight, offsets, mode="max", padding_idx=3)
    assert out._data.tolist() == [[20, 21], [0, 0], [0, 1]]  # 0 alone: 3 is padding
    # include_last_offset: the last offset ends the last bag, index 3 after it is in none
    out = embedding_bag(index, weight, pyrt.tensor([0, 2, 4]), mode="sum",
                        include_last_offset=True)
    assert out._data.tolist() == [[30, 32], [30, 32]]
    # fixed-length bags from a 2-D input; per_sample_weights scale the rows
    scales = pyrt.tensor(np.array([[2, -1], [0.5, 0.5]], F32), requires_grad=True)
    weight.grad = None
    out = embedding_bag(pyrt.tensor([[1, 2], [3, 3]]), weight, mode="sum",
                        per_sample_weights=scales)
    assert out._data.tolist() == [[0, 1], [30, 31]]
    (out * pyrt.tensor(np.array([[1, 0], [0, 1]], F32))).sum().backward()
    assert scales.grad._data.tolist() == [[10, 20], [31, 31]]
    assert weight.grad._data[:, 1].tolist() == [0, 0, 0, 1]


def test_max_takes_the_first_of_equal_values_and_keeps_a_leading_nan():
    """PyTorch's running maximum: among equal values the first entry gets the gradient; a
    NaN first in its bag stays, a later NaN never takes over."""
    nan = np.nan
    weight = np.array([[1, nan, 5], [2, 1, 5], [nan, 0, 5], [2, 3, 5]], F32)
    index, offsets = np.array([0, 1, 2, 3, 2, 1]), np.array([0, 4])
    grad = np.array([[1, 2, 3], [4, 5, 6]], F32)
    out, grad_weight, _ = run_pyrt(index, weight, offsets, grad, mode="max")
    np.testing.assert_array_equal(out, [[2, nan, 5], [nan, 1, 5]])
    np.testing.assert_array_equal(grad_weight, [[0, 2, 3], [1, 5, 0], [4, 0, 6], [0, 0, 0]])
    check_case((index, weight, offsets, grad, None, {"mode": "max"}), reference_run)
    if torch is not None:
        check_case((index, weight, offsets, grad, None, {"mode": "max"}), run_torch)
    # -inf is a value like any other; only a bag of padding alone is empty
    weight = np.array([[-np.inf, 1], [-np.inf, 2]], F32)
    out, grad_weight, _ = run_pyrt([0, 1, 1], weight, [0, 2], np.ones((2, 2), F32),
                                   mode="max", padding_idx=1)
    assert out.tolist() == [[-np.inf, 1], [0, 0]]
    assert grad_weight.tolist() == [[1, 1], [0, 0]]


def test_edge_shapes():
    """No bags, empty bags, an empty input, a 2-D input without columns (B empty bags, where
    PyTorch fails on a zero step), a table of width 0."""
    weight = pyrt.tensor(np.ones((3, 2), F32), requires_grad=True)
    for index, offsets, bags in (([], [], 0), ([], [0], 1), ([], [0, 0, 0], 3),
                                 ([1], [0, 0, 1], 3)):
        out = embedding_bag(pyrt.tensor(np.array(index, np.int64)), weight,
                            pyrt.tensor(np.array(offsets, np.int64)), mode="max")
        assert out.shape == (bags, 2)
        assert out._data.sum() == len(index) * 2
    out = embedding_bag(pyrt.tensor(np.zeros((3, 0), np.int64)), weight, mode="mean")
    assert out.shape == (3, 2) and not out._data.any()
    out.sum().backward()
    assert weight.grad.shape == (3, 2) and not weight.grad._data.any()
    for mode in MODES:
        out = embedding_bag(pyrt.tensor([[0, 2]]), pyrt.tensor(np.ones((3, 0), F32)),
                            mode=mode)
        assert out.shape == (1, 0)


def test_entries_after_the_last_offset_are_in_no_bag():
    """With include_last_offset, what lies after the last offset is read by no bag: it
    changes nothing, gets no gradient, and is not checked (as in PyTorch)."""
    weight = pyrt.tensor(np.arange(8, dtype=F32).reshape(4, 2), requires_grad=True)
    out = embedding_bag(pyrt.tensor([1, 2, 3, 99]), weight, pyrt.tensor([0, 1, 3]),
                        mode="sum", include_last_offset=True)
    assert out._data.tolist() == [[2, 3], [10, 12]]
    out.sum().backward()
    assert weight.grad._data[:, 0].tolist() == [0, 1, 1, 1]


def test_later_writes():
    """A later write to the indices does not move the gradient; writing per_sample_weights
    in place before backward is an error, as in PyTorch (weight's gradient reads it)."""
    weight = pyrt.tensor(np.ones((4, 2), F32), requires_grad=True)
    index = pyrt.tensor([1, 2, 1])
    out = embedding_bag(index, weight, pyrt.tensor([0]), mode="sum")
    index._data[0] = 3
    out.sum().backward()
    assert weight.grad._data[:, 0].tolist() == [0, 2, 1, 0]
    scales = pyrt.tensor(np.ones(3, F32))
    out = embedding_bag(index, weight, pyrt.tensor([0]), mode="sum",
                        per_sample_weights=scales)
    scales.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


# ---- errors ----------------------------------------------------------------------------------

L = np.int64
ERRORS = [  # (input, offsets, keyword arguments, error, message) with a (5, 3) weight
    (np.array(1), None, {}, ValueError, "input has to be 1D or 2D Tensor, but got Tensor of "
     "dimension 0"),
    (np.zeros((1, 1, 1), L), None, {}, ValueError, "dimension 3"),
    (np.zeros((2, 2), L), np.array([0, 1]), {}, ValueError, "if input is 2D, then offsets "
     "has to be None"),
    (np.array([1, 2]), None, {}, ValueError, "offsets has to be a 1D Tensor but got None"),
    (np.array([1, 2]), np.zeros((1, 1), L), {}, ValueError, "offsets has to be a 1D Tensor"),
    (np.array([1, 2, 3]), np.array([1, 2]), {}, RuntimeError, r"offsets\[0\] has to be 0.*"
     "However, got 1"),
    (np.array([1, 2, 3]), np.array([0, 2, 1]), {"mode": "sum"}, RuntimeError,
     "offsets has to be non-decreasing"),
    (np.array([1, 2, 3]), np.array([0, 5]), {}, RuntimeError, r"offsets\[-1\] can not be "
     "greater than input's length 3 but got offsets\\[-1\\] of 5"),
    (np.array([1, 2]), np.zeros(0, L), {"include_last_offset": True}, RuntimeError,
     "include_last_offset: number of offset should be at least 1"),
    (np.array([1, 2, 3]), np.array([0, 1]), {"per_sample_weights": np.ones(3, F32)},
     NotImplementedError, "per_sample_weights is only supported for mode='sum' "
     r"\(got mode='mean'\)"),
    (np.array([1, 2, 3]), np.array([0, 1]),
     {"mode": "max", "per_sample_weights": np.ones(3, F32)}, NotImplementedError,
     "got mode='max'"),
    (np.array([1, 2, 3]), np.array([0, 1]),
     {"mode": "sum", "per_sample_weights": np.ones(2, F32)}, ValueError,
     "If per_sample_weights .* must have the same shape as the input"),
    (np.zeros((2, 2), L), None, {"mode": "sum", "per_sample_weights": np.ones(4, F32)},
     ValueError, "must have the same shape as the input"),
    (np.array([1, 2, 3]), np.array([0, 1]), {"mode": "min"}, ValueError,
     "mode has to be one of sum, mean or max"),
    (np.array([1, 5, 3]), np.array([0, 1]), {}, RuntimeError,
     "Expected idx >= 0 && idx < num_embeddings .* found idx to be 5"),
    (np.array([1, -1, 3]), np.array([0, 1]), {"mode": "max"}, RuntimeError,
     "found idx to be -1"),
]


def _as(module, value):
    return module.tensor(value) if isinstance(value, np.ndarray) else value


@pytest.mark.parametrize("index,offsets,kwargs,error,message", ERRORS)
def test_errors_as_torch(index, offsets, kwargs, error, message):
    """pyrt raises `error` naming the argument; PyTorch raises the same type."""
    weight = np.ones((5, 3), F32)
    with pytest.raises(error, match=message):
        embedding_bag(pyrt.tensor(index), pyrt.tensor(weight), _as(pyrt, offsets),
                      **{k: _as(pyrt, v) for k, v in kwargs.items()})
    if torch is not None:
        with pytest.raises(error):
            torch.nn.functional.embedding_bag(
                torch.tensor(index), torch.tensor(weight), _as(torch, offsets),
                **{k: _as(torch, v) for k, v in kwargs.items()})


def test_other_errors():
    weight, index, offsets = pyrt.randn(5, 3), pyrt.tensor([1, 2]), pyrt.tensor([0])
    with pytest.raises(ValueError, match="weight has to be a 2D Tensor, but got Tensor of "
                                         "dimension 1"):
        embedding_bag(index, pyrt.randn(5), offsets)
    for option, value in (("sparse", True),):
        with pytest.raises(ValueError, match=f"embedding_bag: {option}={value!r} is not "
                                             "supported"):
            embedding_bag(index, weight, offsets, **{option: value})
        with pytest.raises(ValueError, match=f"EmbeddingBag: {option}={value!r} is not "):
            EmbeddingBag(5, 3, **{option: value})
    for padding in (5, -6):
        with pytest.raises(ValueError, match="Padding_idx must be within num_embeddings"):
            embedding_bag(index, weight, offsets, padding_idx=padding)
        with pytest.raises(ValueError, match="Padding_idx must be within num_embeddings"):
            EmbeddingBag(5, 3, padding_idx=padding)
    with pytest.raises(TypeError, match="embedding_bag: input must be a Tensor, got list"):
        embedding_bag([1, 2], weight, offsets)
    with pytest.raises(TypeError, match="embedding_bag: offsets must be a Tensor"):
        embedding_bag(index, weight, np.array([0]))
    with pytest.raises(TypeError, match="input must have an integer dtype, got float32"):
        embedding_bag(pyrt.tensor([1.0, 2.0]), weight, offsets)
    with pytest.raises(TypeError, match="offsets must have an integer dtype, got float32"):
        embedding_bag(index, weight, pyrt.tensor([0.0]))
    with pytest.raises(TypeError, match="per_sample_weights must have dtype float32, got "
                                        "int64"):
        embedding_bag(index, weight, offsets, mode="sum", per_sample_weights=pyrt.tensor([1, 1]))
    with pytest.raises(ValueError, match="mode has to be one of sum, mean or max"):
        EmbeddingBag(5, 3, mode="min")
    with pytest.raises(AssertionError, match="Shape of weight does not match"):
        EmbeddingBag(5, 3, _weight=pyrt.randn(4, 3))
    with pytest.raises(AssertionError, match="Embeddings parameter is expected to be "
                                             "2-dimensional"):
        EmbeddingBag.from_pretrained(pyrt.randn(5))
    with pytest.raises(TypeError, match="embedding_bag: input must be a Tensor, got list"):
        EmbeddingBag(5, 3)([1, 2], offsets)


# ---- the module ------------------------------------------------------------------------------


def test_module_init_state_and_repr():
    """N(0, 1) drawn as nn.Embedding draws it from the seeded generator, the padding row
    zeroed; torch's state_dict keys and reprs."""
    pyrt.manual_seed(11)
    bag = EmbeddingBag(300, 200, padding_idx=-1)
    pyrt.manual_seed(11)
    same = Embedding(300, 200, padding_idx=-1)
    assert np.array_equal(bag.weight._data, same.weight._data)
    assert isinstance(bag.weight, pyrt.nn.Parameter) and bag.weight.requires_grad
    assert bag.padding_idx == 299 and not bag.weight._data[299].any()
    values = bag.weight._data[:299]
    assert abs(values.mean()) < 0.01 and abs(values.std() - 1) < 0.01
    assert list(bag.state_dict()) == ["weight"]
    assert bag.mode == "mean" and bag.include_last_offset is False
    reprs = [((5, 3), {}, "EmbeddingBag(5, 3, mode='mean')"),
             ((5, 3), {"mode": "max", "padding_idx": -4}, "EmbeddingBag(5, 3, mode='max', "
              "padding_idx=1)"),
             ((0, 4), {"mode": "sum", "norm_type": 3.0, "include_last_offset": True},
              "EmbeddingBag(0, 4, norm_type=3.0, mode='sum')")]
    for args, kwargs, want in reprs:
        assert repr(EmbeddingBag(*args, **kwargs)) == want
        if torch is not None:
            assert repr(torch.nn.EmbeddingBag(*args, **kwargs)) == want


def test_from_pretrained():
    table = pyrt.tensor(np.arange(15, dtype=F32).reshape(5, 3))
    frozen = EmbeddingBag.from_pretrained(table, mode="sum", padding_idx=1)
    assert frozen.weight._data is table._data  # shared, the padding row kept
    assert not frozen.weight.requires_grad and frozen.weight._data[1].tolist() == [3, 4, 5]
    out = frozen(pyrt.tensor([[0, 1, 2]]))
    assert out._data.tolist() == [[6, 8, 10]] and not out.requires_grad
    assert repr(frozen) == "EmbeddingBag(5, 3, mode='sum', padding_idx=1)"
    trained = EmbeddingBag.from_pretrained(table, freeze=False, mode="max",
                                           include_last_offset=True)
    out = trained(pyrt.tensor([4, 0, 1]), pyrt.tensor([0, 1, 3]))
    assert out._data.tolist() == [[12, 13, 14], [3, 4, 5]]
    out.sum().backward()
    assert trained.weight.grad._data[:, 0].tolist() == [0, 1, 0, 0, 1]


@pytest.mark.parametrize("mode", MODES)
def test_module_forward(mode):
    """The module passes its options and forward's arguments on to embedding_bag."""
    pyrt.manual_seed(3)
    bag = EmbeddingBag(6, 4, mode=mode, include_last_offset=True, padding_idx=2)
    index, offsets = pyrt.tensor([0, 2, 5, 5, 1, 3]), pyrt.tensor([0, 2, 2, 6])
    scales = pyrt.tensor(np.linspace(-1, 1, 6, dtype=F32)) if mode == "sum" else None
    out = bag(index, offsets, per_sample_weights=scales)
    want = embedding_bag(index, bag.weight, offsets, mode=mode, include_last_offset=True,
                         padding_idx=2, per_sample_weights=scales)
    assert out.shape == (3, 4) and np.array_equal(out._data, want._data)
    if torch is not None:
        theirs = torch.nn.EmbeddingBag(6, 4, mode=mode, include_last_offset=True,
                                       padding_idx=2)
        theirs.load_state_dict({k: torch.from_numpy(v.numpy())
                                for k, v in bag.state_dict().items()})
        got = theirs(torch.from_numpy(index._data), torch.from_numpy(offsets._data),
                     None if scales is None else torch.from_numpy(scales._data))
        assert_close(out._data, got.detach().numpy(), what="module output")
