"""affine_grid and grid_sample: values and gradients against a float64 reference written
point by point from the definitions (and its finite differences for the grid), and against
PyTorch where installed, over shapes, modes, padding modes and align_corners (hypothesis);
then the errors."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
import pyrt.nn.functional as F

try:
    import torch
except ImportError:
    torch = None

F32 = np.float32


def reference(x, grid, mode, padding, align):
    """grid_sample in float64, one output point at a time."""
    n, c, h, w = x.shape
    _, ho, wo, _ = grid.shape
    out = np.zeros((n, c, ho, wo))

    def coordinate(g, size):
        p = (g + 1) / 2 * (size - 1) if align else ((g + 1) * size - 1) / 2
        if padding == "border":
            p = min(max(p, 0.0), size - 1.0)
        elif padding == "reflection":
            low, high = (0.0, 2.0 * (size - 1)) if align else (-1.0, 2.0 * size - 1)
            if low == high:
                p = 0.0
            else:
                m, span = low / 2, (high - low) / 2
                d = abs(p - m)
                flips, extra = math.floor(d / span), math.fmod(d, span)
                p = extra + m if flips % 2 == 0 else span - extra + m
            p = min(max(p, 0.0), size - 1.0)
        return p

    def pixel(b, ch, yy, xx):
        return x[b, ch, yy, xx] if 0 <= yy < h and 0 <= xx < w else 0.0

    for b in range(n):
        for i in range(ho):
            for j in range(wo):
                px = coordinate(grid[b, i, j, 0], w)
                py = coordinate(grid[b, i, j, 1], h)
                for ch in range(c):
                    if mode == "nearest":
                        out[b, ch, i, j] = pixel(b, ch, int(np.rint(py)), int(np.rint(px)))
                    else:
                        x0, y0 = math.floor(px), math.floor(py)
                        ax, ay = px - x0, py - y0
                        out[b, ch, i, j] = (
                            pixel(b, ch, y0, x0) * (1 - ax) * (1 - ay)
                            + pixel(b, ch, y0, x0 + 1) * ax * (1 - ay)
                            + pixel(b, ch, y0 + 1, x0) * (1 - ax) * ay
                            + pixel(b, ch, y0 + 1, x0 + 1) * ax * ay)
    return out


@st.composite
def cases(draw):
    return dict(n=draw(st.integers(1, 2)), c=draw(st.integers(1, 3)), h=draw(st.integers(1, 5)),
                w=draw(st.integers(1, 5)), ho=draw(st.integers(1, 4)), wo=draw(st.integers(1, 4)),
                mode=draw(st.sampled_from(["bilinear", "nearest"])),
                padding=draw(st.sampled_from(["zeros", "border", "reflection"])),
                align=draw(st.booleans()), seed=draw(st.integers(0, 2**16)))


def make(case):
    r = np.random.default_rng(case["seed"])
    x = r.standard_normal((case["n"], case["c"], case["h"], case["w"])).astype(F32)
    # points inside and around the image, kept off the pixel boundaries where floor and
    # rounding jump (the gradient there is one-sided)
    grid = (r.random((case["n"], case["ho"], case["wo"], 2)) * 2.8 - 1.4).astype(F32)
    return x, grid


@settings(max_examples=80, deadline=None)
@given(cases())
def test_against_the_definition(case):
    x, grid = make(case)
    xt = pyrt.tensor(x, requires_grad=True)
    gt = pyrt.tensor(grid, requires_grad=True)
    y = F.grid_sample(xt, gt, case["mode"], case["padding"], case["align"])
    want = reference(x.astype(np.float64), grid.astype(np.float64), case["mode"],
                     case["padding"], case["align"])
    np.testing.assert_allclose(y.detach().numpy(), want, rtol=1e-5, atol=1e-5)
    wgt = np.random.default_rng(case["seed"] + 1).standard_normal(want.shape)
    (y * pyrt.tensor(wgt.astype(F32))).sum().backward()
    # the image's gradient: the output is linear in it, so the gradient is the reference's
    # output for the weights' adjoint, checked one pixel at a time
    d_input = np.zeros(x.shape)
    for index in np.ndindex(x.shape):
        e = np.zeros(x.shape)
        e[index] = 1.0
        d_input[index] = (reference(e, grid.astype(np.float64), case["mode"], case["padding"],
                                    case["align"]) * wgt).sum()
    np.testing.assert_allclose(xt.grad.numpy(), d_input, rtol=1e-4, atol=1e-4)
    if case["mode"] == "nearest":
        assert not gt.grad.numpy().any()
        return
    # the grid's gradient by central differences of the reference, away from the kinks
    eps = 1e-4
    g64 = grid.astype(np.float64)
    for index in np.ndindex(grid.shape):
        up, down = g64.copy(), g64.copy()
        up[index] += eps
        down[index] -= eps
        numeric = ((reference(x.astype(np.float64), up, "bilinear", case["padding"],
                              case["align"])
                    - reference(x.astype(np.float64), down, "bilinear", case["padding"],
                                case["align"])) * wgt).sum() / (2 * eps)
        assert abs(gt.grad.numpy()[index] - numeric) <= 2e-3 * (1 + abs(numeric)), index


@settings(max_examples=60, deadline=None)
@given(cases())
def test_against_torch(case):
    if torch is None:
        pytest.skip("torch is not installed")
    x, grid = make(case)
    args = (case["mode"], case["padding"], case["align"])
    xp, gp = pyrt.tensor(x, requires_grad=True), pyrt.tensor(grid, requires_grad=True)
    xq, gq = torch.tensor(x, requires_grad=True), torch.tensor(grid, requires_grad=True)
    yp, yq = F.grid_sample(xp, gp, *args), torch.nn.functional.grid_sample(xq, gq, *args)
    np.testing.assert_allclose(yp.detach().numpy(), yq.detach().numpy(), rtol=1e-5, atol=1e-5)
    wgt = np.random.default_rng(case["seed"] + 2).standard_normal(yq.shape).astype(F32)
    (yp * pyrt.tensor(wgt)).sum().backward()
    (yq * torch.tensor(wgt)).sum().backward()
    np.testing.assert_allclose(xp.grad.numpy(), xq.grad.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(gp.grad.numpy(), gq.grad.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("size", [(2, 3, 4, 5), (1, 1, 1, 3), (3, 2, 6, 1)])
def test_affine_grid(align, size):
    """The identity map gives the pixel centres (or the corners' with align_corners), and a
    spatial transformer's round trip, affine_grid then grid_sample, is differentiable in
    theta: its gradient against finite differences (and torch's)."""
    n, _, h, w = size
    identity = pyrt.tensor(np.tile(np.array([[1, 0, 0], [0, 1, 0]], F32), (n, 1, 1)))
    grid = F.affine_grid(identity, size, align_corners=align).numpy()
    assert grid.shape == (n, h, w, 2)
    x = np.random.default_rng(1).standard_normal(size).astype(F32)
    same = F.grid_sample(pyrt.tensor(x), pyrt.tensor(grid), align_corners=align).numpy()
    np.testing.assert_allclose(same, x, rtol=1e-5, atol=1e-5)
    # a map that puts no point near a pixel's edge, where bilinear sampling has its kinks
    theta = (np.tile(np.array([[0.73, 0.21, 0.13], [-0.17, 0.81, 0.07]], F32), (n, 1, 1))
             + np.random.default_rng(2).standard_normal((n, 2, 3)).astype(F32) * 0.01)
    tp = pyrt.tensor(theta, requires_grad=True)
    out = F.grid_sample(pyrt.tensor(x), F.affine_grid(tp, size, align), align_corners=align)
    out.sum().backward()

    def loss(th):
        g = F.affine_grid(pyrt.tensor(th.astype(F32)), size, align)
        return float(F.grid_sample(pyrt.tensor(x), g, align_corners=align).sum())

    for index in np.ndindex(theta.shape):
        up, down = theta.astype(np.float64), theta.astype(np.float64)
        up[index] += 1e-3
        down[index] -= 1e-3
        numeric = (loss(up) - loss(down)) / 2e-3
        assert abs(tp.grad.numpy()[index] - numeric) <= 5e-2 * (1 + abs(numeric)), index
    if torch is not None:
        tq = torch.tensor(theta, requires_grad=True)
        grid_q = torch.nn.functional.affine_grid(tq, size, align)
        np.testing.assert_allclose(F.affine_grid(pyrt.tensor(theta), size, align).numpy(),
                                   grid_q.detach().numpy(), rtol=1e-5, atol=1e-6)
        torch.nn.functional.grid_sample(torch.tensor(x), grid_q,
                                        align_corners=align).sum().backward()
        np.testing.assert_allclose(tp.grad.numpy(), tq.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_errors():
    x, grid = pyrt.ones(1, 2, 3, 3), pyrt.zeros(1, 2, 2, 2)
    with pytest.raises(ValueError, match="expected mode to be 'bilinear', 'nearest'"):
        F.grid_sample(x, grid, mode="linear")
    with pytest.raises(NotImplementedError, match="bicubic"):
        F.grid_sample(x, grid, mode="bicubic")
    with pytest.raises(ValueError, match="expected padding_mode to be 'zeros'"):
        F.grid_sample(x, grid, padding_mode="constant")
    with pytest.raises(RuntimeError, match="same batch size"):
        F.grid_sample(x, pyrt.zeros(2, 2, 2, 2))
    with pytest.raises(RuntimeError, match=r"grid \[N, H_out, W_out, 2\]"):
        F.grid_sample(x, pyrt.zeros(1, 2, 2, 3))
    with pytest.raises(NotImplementedError, match="5-D"):
        F.grid_sample(pyrt.ones(1, 1, 2, 2, 2), pyrt.zeros(1, 1, 1, 1, 3))
    with pytest.raises(TypeError, match="argument 'align_corners' must be a bool"):
        F.grid_sample(x, grid, align_corners=None)
    with pytest.raises(TypeError, match="argument 'grid' must be a Tensor"):
        F.grid_sample(x, np.zeros((1, 2, 2, 2), F32))
    with pytest.raises(ValueError, match="Expected a batch of 2D affine matrices"):
        F.affine_grid(pyrt.zeros(2, 3, 3), (2, 1, 4, 4))
    with pytest.raises(NotImplementedError, match="4D sizes"):
        F.affine_grid(pyrt.zeros(1, 2, 3), (1, 1, 4))
