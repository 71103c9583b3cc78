"""scale_grad_by_freq of F.embedding / nn.Embedding and F.embedding_bag / nn.EmbeddingBag:
each row's gradient divided by the count of its index in the input, against a NumPy float64
formula and torch 2.13, with repeated indices, padding_idx and max_norm together."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
from pyrt import nn
from pyrt.nn import functional as F

try:
    import torch
except ImportError:
    torch = None

F32 = np.float32


def numpy_grad(index, g, rows, padding_idx, bag_of=None, share=None):
    """float64: the table's gradient, each entry's output gradient (its bag's, times `share`,
    for bags; an entry in no bag, bag -1, adds nothing) added to its row and divided by the
    row's count among all of index."""
    flat = index.reshape(-1)
    grad = np.zeros((rows, g.shape[-1]))
    counts = np.bincount(flat, minlength=rows)
    for e, r in enumerate(flat):
        if r == padding_idx or (bag_of is not None and bag_of[e] < 0):
            continue
        row_g = g.reshape(-1, g.shape[-1])[e if bag_of is None else bag_of[e]]
        grad[r] += row_g * (1.0 if share is None else share[e]) / counts[r]
    return grad


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**16), rows=st.integers(2, 7), shape=st.sampled_from(
    [(5,), (3, 4), (2, 2, 3)]), padding=st.booleans(), renorm=st.booleans())
def test_embedding_against_numpy_and_torch(seed, rows, shape, padding, renorm):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((rows, 3)).astype(F32)
    index = rng.integers(0, min(rows, 3), shape)  # few rows: many repeats
    g = rng.standard_normal(shape + (3,)).astype(F32)
    padding_idx = int(index.reshape(-1)[0]) if padding else None
    max_norm = 0.8 if renorm else None
    grads, tables = [], []
    libs = (pyrt, torch) if torch is not None else (pyrt,)
    for lib in libs:
        weight = lib.tensor(w.copy(), requires_grad=True)
        out = lib.nn.functional.embedding(lib.tensor(index), weight, padding_idx=padding_idx,
                                          max_norm=max_norm, scale_grad_by_freq=True)
        out.backward(lib.tensor(g))
        grads.append(weight.grad.numpy())
        tables.append(weight.detach().numpy())
    np.testing.assert_allclose(grads[0], numpy_grad(index, g.astype(np.float64), rows,
                                                    padding_idx), rtol=1e-5, atol=1e-6)
    if torch is not None:
        np.testing.assert_allclose(grads[0], grads[1], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(tables[0], tables[1], rtol=1e-5, atol=1e-6)


def test_module_passes_the_option_on():
    pyrt.manual_seed(0)
    emb = nn.Embedding(4, 2, padding_idx=0, scale_grad_by_freq=True)
    index = np.array([1, 1, 1, 2, 0, 0])
    emb(pyrt.tensor(index)).sum().backward()
    np.testing.assert_allclose(emb.weight.grad.numpy(), [[0, 0], [1, 1], [1, 1], [0, 0]])
    assert "scale_grad_by_freq=True" in repr(emb)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**16), mode=st.sampled_from(["sum", "mean"]),
       padding=st.booleans(), weighted=st.booleans(), last=st.booleans())
def test_embedding_bag_against_numpy(seed, mode, padding, weighted, last):
    rng = np.random.default_rng(seed)
    rows = 6
    w = rng.standard_normal((rows, 3)).astype(F32)
    index = rng.integers(0, 4, 9)
    offsets = np.array([0, 2, 2, 6] + ([8] if last else []))
    weighted = weighted and mode == "sum"
    psw = rng.uniform(0.5, 2, 9).astype(F32) if weighted else None
    padding_idx = int(index[0]) if padding else None
    weight = pyrt.tensor(w.copy(), requires_grad=True)
    out = F.embedding_bag(pyrt.tensor(index), weight, pyrt.tensor(offsets), mode=mode,
                          scale_grad_by_freq=True, include_last_offset=last,
                          padding_idx=padding_idx,
                          per_sample_weights=None if psw is None else pyrt.tensor(psw))
    g = rng.standard_normal(out.shape).astype(F32)
    out.backward(pyrt.tensor(g))
    # the bags, and each entry's share of its bag's gradient
    ends = list(offsets[1:]) + ([] if last else [len(index)])
    starts = list(offsets[:len(ends)])
    bag_of = np.full(len(index), -1)
    share = np.zeros(len(index))
    for b, (s, e) in enumerate(zip(starts, ends)):
        members = [i for i in range(s, e) if index[i] != padding_idx]
        for i in members:
            bag_of[i] = b
            share[i] = (psw[i] if weighted else 1.0) / (len(members) if mode == "mean" else 1)
    ref = numpy_grad(index, g.astype(np.float64), rows, padding_idx, bag_of, share)
    np.testing.assert_allclose(weight.grad.numpy(), ref, rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(torch is None, reason="needs torch")
def test_embedding_bag_matches_torch_where_each_index_occurs_once_or_sorted_alike():
    # (torch's CPU kernel looks each row's count up at the row's rank among the distinct
    # indices, in the sorted indices: right when those agree, as here)
    rng = np.random.default_rng(0)
    w = rng.standard_normal((5, 3)).astype(F32)
    index = np.array([1, 1, 2, 2, 3, 3, 0, 0])
    grads = []
    for lib in (pyrt, torch):
        weight = lib.tensor(w.copy(), requires_grad=True)
        out = lib.nn.functional.embedding_bag(lib.tensor(index), weight,
                                              lib.tensor(np.array([0, 3, 5])),
                                              mode="mean", scale_grad_by_freq=True)
        out.backward(lib.tensor(np.arange(9, dtype=F32).reshape(3, 3)))
        grads.append(weight.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6)


def test_embedding_bag_module_and_max_mode_error():
    bag = nn.EmbeddingBag(4, 2, mode="sum", scale_grad_by_freq=True)
    bag(pyrt.tensor(np.array([[1, 1], [1, 2]]))).sum().backward()
    np.testing.assert_allclose(bag.weight.grad.numpy(), [[0, 0], [1, 1], [1, 1], [0, 0]])
    message = "max mode does not support scaling the gradient by the frequency"
    with pytest.raises(ValueError, match=message):
        nn.EmbeddingBag(4, 2, mode="max", scale_grad_by_freq=True)
    with pytest.raises(ValueError, match=message):
        F.embedding_bag(pyrt.tensor(np.array([[1]])), pyrt.randn(4, 2), mode="max",
                        scale_grad_by_freq=True)
    with pytest.raises(RuntimeError, match="found idx to be 7"):
        F.embedding_bag(pyrt.tensor(np.array([[1, 7]])), pyrt.randn(4, 2),
                        scale_grad_by_freq=True)
