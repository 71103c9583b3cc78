"""Higher-order gradients through the linear ops of pyrt.double_backward_shapes (flip, roll,
repeat, triangles, diagonals, unfold and fold, pad modes, interpolate, embedding, pieces,
repeat_interleave): second derivatives against PyTorch (create_graph twice, float64) and
against central differences of the first gradient; third derivatives; gradgradcheck; the
ops that are still refused."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
from pyrt import autograd, double_backward
from pyrt.autograd import gradgradcheck

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
SETTINGS = settings(max_examples=20, deadline=None, derandomize=True)


def _nnf(lib):
    return lib.nn.functional


def _index(lib, values):
    return lib.tensor(np.array(values, np.int64))


# name -> (input shape, op written once for pyrt and torch)
OPS = {
    "flip": ((3, 4), lambda L, x: x.flip(0, 1)),
    "roll": ((3, 4), lambda L, x: x.roll((1, -2), (0, 1))),
    "roll_flat": ((3, 4), lambda L, x: x.roll(5)),
    "repeat": ((3, 4), lambda L, x: x.repeat(2, 1, 3)),
    "tril": ((3, 4), lambda L, x: x.tril(-1)),
    "triu": ((3, 4), lambda L, x: x.triu(1)),
    "diag_vector": ((4,), lambda L, x: L.diag(x, 1)),
    "diag_matrix": ((3, 4), lambda L, x: L.diag(x, -1)),
    "diagonal": ((2, 3, 4), lambda L, x: L.diagonal(x, 1, 0, 2)),
    "diag_embed": ((2, 3), lambda L, x: L.diag_embed(x, -1, 0, 2)),
    "trace": ((3, 4), lambda L, x: L.trace(x).reshape(1)),
    "tensor_unfold": ((3, 7), lambda L, x: x.unfold(1, 3, 2)),
    "unfold": ((1, 2, 4, 5), lambda L, x: _nnf(L).unfold(x, 2, padding=1, stride=(1, 2))),
    "fold": ((1, 8, 6), lambda L, x: _nnf(L).fold(x, (3, 4), 2)),
    "pad_reflect": ((1, 2, 4, 5), lambda L, x: _nnf(L).pad(x, (2, 1, 1, 3), mode="reflect")),
    "pad_replicate": ((1, 2, 4, 5),
                      lambda L, x: _nnf(L).pad(x, (1, 2, 3, 1), mode="replicate")),
    "pad_circular": ((1, 2, 4, 5),
                     lambda L, x: _nnf(L).pad(x, (1, 2, 3, 1), mode="circular")),
    "nearest": ((1, 2, 3, 4), lambda L, x: _nnf(L).interpolate(x, size=(5, 7))),
    "nearest_exact": ((1, 2, 3, 4), lambda L, x: _nnf(L).interpolate(
        x, scale_factor=1.5, mode="nearest-exact")),
    "linear": ((1, 2, 5), lambda L, x: _nnf(L).interpolate(x, size=8, mode="linear")),
    "bilinear": ((1, 2, 3, 4), lambda L, x: _nnf(L).interpolate(
        x, scale_factor=2, mode="bilinear")),
    "bilinear_corners": ((1, 2, 3, 4), lambda L, x: _nnf(L).interpolate(
        x, size=(5, 3), mode="bilinear", align_corners=True)),
    "trilinear": ((1, 1, 2, 3, 2), lambda L, x: _nnf(L).interpolate(
        x, scale_factor=2, mode="trilinear")),
    "area": ((1, 2, 6, 4), lambda L, x: _nnf(L).interpolate(x, size=(3, 2), mode="area")),
    "embedding": ((5, 3), lambda L, x: _nnf(L).embedding(_index(L, [[0, 2], [4, 2]]), x)),
    "embedding_padding": ((5, 3), lambda L, x: _nnf(L).embedding(
        _index(L, [0, 2, 4, 2]), x, padding_idx=2)),
    "embedding_freq": ((5, 3), lambda L, x: _nnf(L).embedding(
        _index(L, [0, 2, 4, 2, 2]), x, scale_grad_by_freq=True)),
    "narrow": ((3, 4), lambda L, x: x.narrow(1, 1, 2)),
    "split": ((3, 5), lambda L, x: x.split(2, 1)[2]),
    "chunk": ((4, 3), lambda L, x: x.chunk(2, 0)[1]),
    "unbind": ((3, 4), lambda L, x: x.unbind(1)[2]),
    "repeat_interleave": ((3, 4), lambda L, x: x.repeat_interleave(2, 1)),
    "repeat_interleave_counts": ((3, 4), lambda L, x: L.repeat_interleave(
        x, _index(L, [1, 0, 3]), 0)),
    "repeat_interleave_flat": ((3, 4), lambda L, x: x.repeat_interleave(2)),
    "movedim": ((2, 3, 4), lambda L, x: L.movedim(x, 0, 2)),
    "pixel_shuffle": ((1, 4, 2, 3), lambda L, x: _nnf(L).pixel_shuffle(x, 2)),
    "squeeze_unsqueeze": ((3, 1, 4), lambda L, x: x.squeeze(1).unsqueeze(0)),
}


def _loss(L, op, x):
    """A scalar whose Hessian through the linear op is not zero: sum of sin(op(x)) * op(x)."""
    y = op(L, x)
    return (y.sin() * y).sum()


def _values(shape, seed):
    return np.random.default_rng(seed).uniform(-1.5, 1.5, shape).astype(np.float32)


def _hvp(op, xv, v):
    """pyrt's Hessian-vector product of _loss at xv along v: grad of <grad, v>."""
    x = pyrt.tensor(xv, requires_grad=True)
    (g,) = autograd.grad(_loss(pyrt, op, x), x, create_graph=True)
    (h,) = autograd.grad((g * pyrt.tensor(v)).sum(), x)
    return g.detach().numpy(), h.numpy()


def _first_gradient(op, xv):
    x = pyrt.tensor(xv, requires_grad=True)
    _loss(pyrt, op, x).backward()
    return x.grad.numpy().astype(np.float64)


@needs_torch
@pytest.mark.parametrize("name", sorted(OPS))
def test_second_derivatives_match_torch(name):
    shape, op = OPS[name]
    xv, v = _values(shape, 1), _values(shape, 2)
    g, h = _hvp(op, xv, v)
    x = torch.tensor(xv, dtype=torch.float64, requires_grad=True)
    (gt,) = torch.autograd.grad(_loss(torch, op, x), x, create_graph=True)
    (ht,) = torch.autograd.grad((gt * torch.tensor(v, dtype=torch.float64)).sum(), x)
    np.testing.assert_allclose(g, gt.detach().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(h, ht.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", sorted(OPS))
def test_second_derivatives_match_central_differences(name):
    shape, op = OPS[name]
    xv, v = _values(shape, 3), _values(shape, 4)
    _, h = _hvp(op, xv, v)
    eps = 1e-2
    fd = (_first_gradient(op, xv + eps * v) - _first_gradient(op, xv - eps * v)) / (2 * eps)
    np.testing.assert_allclose(h, fd, rtol=1e-2, atol=1e-2)


@SETTINGS
@given(n=st.integers(1, 4), m=st.integers(1, 5), seed=st.integers(0, 2 ** 16),
       name=st.sampled_from(["flip", "roll", "tril", "triu", "diag_matrix", "narrow_any"]))
def test_second_derivatives_over_shapes(n, m, seed, name):
    ops = {**{k: OPS[k][1] for k in OPS},
           "roll": lambda L, x: x.roll(seed % 7, 1),
           "tril": lambda L, x: x.tril(seed % 5 - 2),
           "narrow_any": lambda L, x: x.narrow(1, seed % m, m - seed % m)}
    op = ops[name]
    xv, v = _values((n, m), seed), _values((n, m), seed + 1)
    _, h = _hvp(op, xv, v)
    eps = 1e-2
    fd = (_first_gradient(op, xv + eps * v) - _first_gradient(op, xv - eps * v)) / (2 * eps)
    np.testing.assert_allclose(h, fd, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("name", ["flip", "repeat", "diag_embed", "pad_reflect", "bilinear",
                                  "embedding_padding", "tensor_unfold", "fold",
                                  "repeat_interleave_counts", "unbind"])
def test_gradgradcheck(name):
    shape, op = OPS[name]
    x = pyrt.tensor(_values(shape, 5), requires_grad=True)
    assert gradgradcheck(lambda t: _loss(pyrt, op, t), (x,), eps=1e-2, atol=2e-2, rtol=2e-2)


@needs_torch
@pytest.mark.parametrize("name", ["roll", "repeat", "pad_circular", "bilinear_corners",
                                  "embedding_freq", "unfold", "diagonal"])
def test_third_derivatives_match_torch(name):
    """Gradients of every order pass through: the op's forward and its ordinary backward
    alternate as each other's derivative."""
    shape, op = OPS[name]
    xv, v = _values(shape, 6), _values(shape, 7)

    def third(L, x, v):
        (g,) = L.autograd.grad(_loss(L, op, x), x, create_graph=True)
        (h,) = L.autograd.grad((g * v).sum(), x, create_graph=True)
        (t,) = L.autograd.grad((h * h).sum(), x)
        return t

    t = third(pyrt, pyrt.tensor(xv, requires_grad=True), pyrt.tensor(v))
    tt = third(torch, torch.tensor(xv, dtype=torch.float64, requires_grad=True),
               torch.tensor(v, dtype=torch.float64))
    np.testing.assert_allclose(t.numpy(), tt.numpy(), rtol=1e-3, atol=1e-3)


def test_embedding_gradient_reaches_weight_only():
    """The gradient of the weight, recorded: its second derivative through the weight."""
    w = pyrt.tensor(_values((4, 2), 8), requires_grad=True)
    y = pyrt.nn.functional.embedding(pyrt.tensor(np.array([3, 3, 1])), w, padding_idx=1)
    (g,) = autograd.grad((y ** 3).sum(), w, create_graph=True)
    (h,) = autograd.grad(g.sum(), w)
    expected = np.zeros((4, 2), np.float32)
    expected[3] = 2 * 6 * w.detach().numpy()[3]  # row 3 looked up twice; row 1 is padding
    np.testing.assert_allclose(h.numpy(), expected, rtol=1e-5)


@pytest.mark.parametrize("make, name", [
    (lambda t: pyrt.scatter_reduce(t, 0, pyrt.tensor([[1, 0]]), t[:1], "prod"),
     "ScatterReduceBackward0"),
])
def test_ops_still_without_a_formula_are_named(make, name):
    x = pyrt.tensor([[0.5, 1.0], [1.5, 2.0]], requires_grad=True)
    with pytest.raises(NotImplementedError, match=f"the derivative for '{name}' is not "
                                                  "implemented for create_graph=True"):
        autograd.grad((make(x) ** 2).sum(), x, create_graph=True)


def test_every_shape_formula_is_in_the_table():
    from pyrt import double_backward_shapes

    formulas = set(double_backward._table().values())
    assert set(double_backward_shapes._FORMULAS.values()) <= formulas
    assert double_backward_shapes._swapped in formulas
