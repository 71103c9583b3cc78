"""nn.Embedding, nn.EmbeddingBag and their functions with max_norm: the rows looked up are
scaled down in place in the weight to a norm of at most max_norm before the lookup, as
torch's. Compared with torch and with a NumPy float64 reference over indices with repeats,
norm types and padding; gradients are those of the lookup of the scaled rows."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
from pyrt import nn
from pyrt.nn import functional as NF

try:
    import torch
except ImportError:  # the comparisons with torch are skipped; the NumPy ones still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="needs torch")
NORM_TYPES = (2.0, 1.0, 3.0, 0.5, float("inf"))


def renormed(weight, index, max_norm, norm_type):
    """The NumPy float64 reference: each row named scaled by max_norm / (norm + 1e-7) when
    its norm exceeds max_norm."""
    out = weight.astype(np.float64)
    for row in np.unique(index):
        norm = np.linalg.norm(out[row], ord=norm_type)
        if norm > max_norm:
            out[row] *= max_norm / (norm + 1e-7)
    return out


def lookup_grad(shape, index, g):
    """The reference gradient of a lookup: each row's output gradients added up."""
    grad = np.zeros(shape)
    np.add.at(grad, index.reshape(-1), g.reshape(index.size, -1))
    return grad


cases = st.tuples(st.integers(1, 8), st.integers(1, 5), st.integers(0, 2**31 - 1),
                  st.sampled_from(NORM_TYPES), st.floats(0.2, 3.0))


@given(cases, st.lists(st.integers(1, 4), min_size=1, max_size=2))
@settings(max_examples=20, deadline=None)
def test_embedding_renormalises_the_rows_it_reads(case, index_shape):
    rows, dim, seed, norm_type, max_norm = case
    rng = np.random.default_rng(seed)
    weight = (rng.standard_normal((rows, dim)) * 2).astype(np.float32)
    index = rng.integers(0, rows, index_shape)  # (repeats likely: few rows)
    g = rng.standard_normal((*index_shape, dim)).astype(np.float32)
    w = pyrt.tensor(weight, requires_grad=True)
    out = NF.embedding(pyrt.tensor(index), w, max_norm=max_norm, norm_type=norm_type)
    (out * pyrt.tensor(g)).sum().backward()
    want = renormed(weight, index, max_norm, norm_type)
    np.testing.assert_allclose(w.detach().numpy(), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out.detach().numpy(), want[index], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w.grad.numpy(), lookup_grad(weight.shape, index, g),
                               rtol=1e-5, atol=1e-5)
    if torch is not None:
        tw = torch.tensor(weight, requires_grad=True)
        tout = torch.nn.functional.embedding(torch.tensor(index), tw, max_norm=max_norm,
                                             norm_type=norm_type)
        (tout * torch.tensor(g)).sum().backward()
        np.testing.assert_allclose(w.detach().numpy(), tw.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
        np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
        np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-6)


@needs_torch
@pytest.mark.parametrize("padding_idx", [None, 1])
def test_module_matches_torch_over_training_steps(padding_idx):
    """Several steps of SGD through nn.Embedding(max_norm=1): the weight renormalised at
    each forward, trained between them, stays torch's."""
    rng = np.random.default_rng(3)
    pyrt.manual_seed(0)
    ours = nn.Embedding(6, 4, padding_idx=padding_idx, max_norm=1.0)
    theirs = torch.nn.Embedding(6, 4, padding_idx=padding_idx, max_norm=1.0)
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(ours.weight.detach().numpy()))
    opt = pyrt.optim.SGD(ours.parameters(), lr=0.5)
    topt = torch.optim.SGD(theirs.parameters(), lr=0.5)
    for _ in range(4):
        index = rng.integers(0, 6, (3, 2))
        g = rng.standard_normal((3, 2, 4)).astype(np.float32)
        opt.zero_grad()
        topt.zero_grad()
        (ours(pyrt.tensor(index)) * pyrt.tensor(g)).sum().backward()
        (theirs(torch.tensor(index)) * torch.tensor(g)).sum().backward()
        np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(),
                                   rtol=1e-6)
        opt.step()
        topt.step()
        np.testing.assert_allclose(ours.weight.detach().numpy(),
                                   theirs.weight.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert repr(ours) == repr(theirs)


def test_rows_not_read_and_rows_within_the_norm_stay_as_they_are():
    weight = np.array([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0]], np.float32)
    w = pyrt.tensor(weight)
    out = NF.embedding(pyrt.tensor([0, 1, 0]), w, max_norm=1.0)
    np.testing.assert_allclose(w.numpy(), [[0.6, 0.8], [0.3, 0.4], [6.0, 8.0]], rtol=1e-6)
    np.testing.assert_allclose(out.numpy(), [[0.6, 0.8], [0.3, 0.4], [0.6, 0.8]], rtol=1e-6)
    # a strided weight: the scaled rows are written through the view and read back
    table = weight.T.copy()
    out = NF.embedding(pyrt.tensor([2]), pyrt.Tensor(table.T), max_norm=5.0)
    np.testing.assert_allclose(out.numpy(), [[3.0, 4.0]], rtol=1e-6)
    np.testing.assert_allclose(table[:, 2], [3.0, 4.0], rtol=1e-6)


def test_a_graph_that_read_the_old_weight_refuses_backward():
    """The renormalisation writes the weight in place, as torch's: a product computed from
    the weight before it cannot run backward any more."""
    w = pyrt.tensor([[3.0, 4.0]], requires_grad=True)
    before = (w * w).sum()
    NF.embedding(pyrt.tensor([0]), w, max_norm=1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        before.backward()


def bag_cases():
    return st.tuples(st.integers(2, 7), st.integers(0, 2**31 - 1),
                     st.sampled_from(NORM_TYPES), st.sampled_from(["sum", "mean", "max"]),
                     st.booleans())


@given(bag_cases())
@settings(max_examples=20, deadline=None)
def test_embedding_bag_renormalises_every_row_its_input_names(case):
    rows, seed, norm_type, mode, last_offset = case
    rng = np.random.default_rng(seed)
    weight = (rng.standard_normal((rows, 3)) * 2).astype(np.float32)
    index = rng.integers(0, rows, 7)
    offsets = np.array([0, 2, 2, 5])  # an empty bag; with include_last_offset, index[5:] is
    # no bag's, and its rows are renormalised all the same
    # (torch 2.13's CPU kernel, with include_last_offset, runs the last bag to the end of
    # input with padding_idx, and divides a mean by that length: its outputs are compared
    # only without it)
    options = {"mode": mode, "include_last_offset": last_offset, "padding_idx": 0}
    w = pyrt.tensor(weight, requires_grad=True)
    out = NF.embedding_bag(pyrt.tensor(index), w, pyrt.tensor(offsets), max_norm=1.2,
                           norm_type=norm_type, **options)
    g = rng.standard_normal(out.shape).astype(np.float32)
    (out * pyrt.tensor(g)).sum().backward()
    want = renormed(weight, index, 1.2, norm_type)
    np.testing.assert_allclose(w.detach().numpy(), want, rtol=1e-5, atol=1e-6)
    reduce = {"sum": np.sum, "mean": np.mean, "max": np.max}[mode]
    bounds = offsets if last_offset else [*offsets, index.size]
    for b, (start, end) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
        entries = [i for i in index[start:end] if options["padding_idx"] != i]
        bag = reduce(want[entries], axis=0) if entries else np.zeros(3)
        np.testing.assert_allclose(out.detach().numpy()[b], bag, rtol=1e-5, atol=1e-6)
    if torch is not None:
        tw = torch.tensor(weight, requires_grad=True)
        tout = torch.nn.functional.embedding_bag(
            torch.tensor(index), tw, torch.tensor(offsets), max_norm=1.2, norm_type=norm_type,
            **options)
        (tout * torch.tensor(g)).sum().backward()
        np.testing.assert_allclose(w.detach().numpy(), tw.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
        if not last_offset:
            np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(),
                                       rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-5,
                                       atol=1e-6)


@needs_torch
def test_embedding_bag_module_with_a_2d_input_matches_torch():
    pyrt.manual_seed(1)
    ours = nn.EmbeddingBag(5, 3, max_norm=0.7, norm_type=1.0, mode="sum")
    theirs = torch.nn.EmbeddingBag(5, 3, max_norm=0.7, norm_type=1.0, mode="sum")
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(ours.weight.detach().numpy()))
    index = np.array([[0, 4, 4], [2, 0, 1]])
    np.testing.assert_allclose(ours(pyrt.tensor(index)).detach().numpy(),
                               theirs(torch.tensor(index)).detach().numpy(), rtol=1e-5)
    np.testing.assert_allclose(ours.weight.detach().numpy(), theirs.weight.detach().numpy(),
                               rtol=1e-5)
    assert repr(ours) == repr(theirs).replace("mode=sum", "mode='sum'")


def test_errors():
    weight = pyrt.randn(4, 2)
    for value, name in (("a", "max_norm"), (None, "norm_type")):
        options = {"max_norm": value, "norm_type": 2.0} if name == "max_norm" else {
            "max_norm": 1.0, "norm_type": value}
        with pytest.raises(TypeError, match=f"embedding\\(\\): argument '{name}' must be "
                                            f"float, not"):
            NF.embedding(pyrt.tensor([1]), weight, **options)
        with pytest.raises(TypeError, match=f"argument '{name}' must be float"):
            nn.Embedding(4, 2, **options)
        with pytest.raises(TypeError, match=f"embedding_bag\\(\\): argument '{name}' must"):
            NF.embedding_bag(pyrt.tensor([[1]]), weight, **options)
        with pytest.raises(TypeError, match=f"argument '{name}' must be float"):
            nn.EmbeddingBag(4, 2, **options)
        with pytest.raises(TypeError, match=f"embedding_renorm_\\(\\): argument '{name}'"):
            pyrt.embedding_renorm_(weight, pyrt.tensor([1]), *options.values())
    # an index outside the table: refused before any row is written
    before = weight.numpy().copy()
    with pytest.raises(IndexError, match="index out of range in self"):
        NF.embedding(pyrt.tensor([0, 4]), weight, max_norm=0.1)
    with pytest.raises(RuntimeError, match="found idx to be 4"):
        NF.embedding_bag(pyrt.tensor([[0, 4]]), weight, max_norm=0.1)
    np.testing.assert_array_equal(weight.numpy(), before)
