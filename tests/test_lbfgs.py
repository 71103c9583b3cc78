"""LBFGS: on a convex quadratic it reaches the minimiser (solved directly), with and without
the strong Wolfe line search; on a Rosenbrock-plus-least-squares loss its iterates follow
PyTorch's; its arguments are checked. Also a 0-d tensor's gradient through NumPy's scalar
arithmetic (which LBFGS's losses run into)."""

import numpy as np
import pytest

import pyrt

try:
    import torch
except ImportError:
    torch = None

F32 = np.float32


def problem(lib):
    r = np.random.default_rng(0)
    a = r.standard_normal((20, 5)).astype(F32)
    b = r.standard_normal(20).astype(F32)
    return lib.tensor(a), lib.tensor(b), a, b


@pytest.mark.parametrize("line_search", [None, "strong_wolfe"])
def test_reaches_the_least_squares_solution(line_search):
    at, bt, a, b = problem(pyrt)
    x = pyrt.zeros(5, requires_grad=True)
    opt = pyrt.optim.LBFGS([x], lr=1, max_iter=50, line_search_fn=line_search)

    def closure():
        opt.zero_grad()
        loss = ((at @ x - bt) ** 2).sum()
        loss.backward()
        return loss

    for _ in range(3):
        opt.step(closure)
    want = np.linalg.lstsq(a.astype(np.float64), b.astype(np.float64), rcond=None)[0]
    np.testing.assert_allclose(x.detach().numpy(), want, rtol=1e-3, atol=1e-4)
    assert opt.state[x]["func_evals"] > 1


@pytest.mark.parametrize("line_search,history", [(None, 100), ("strong_wolfe", 100),
                                                 (None, 3), ("strong_wolfe", 2)])
def test_follows_torch(line_search, history):
    """A smooth convex loss (L2-regularised logistic regression), on which float32 rounding
    does not grow: the losses each step starts from and the final weights agree with
    PyTorch's."""
    if torch is None:
        pytest.skip("torch is not installed")
    r = np.random.default_rng(1)
    a = r.standard_normal((40, 6)).astype(F32)
    labels = (r.random(40) < 0.5).astype(F32)
    results = []
    for lib in (pyrt, torch):
        at, yt = lib.tensor(a), lib.tensor(labels)
        w = lib.tensor(np.zeros(6, F32), requires_grad=True)
        opt = lib.optim.LBFGS([w], lr=0.8, max_iter=7, history_size=history,
                              line_search_fn=line_search)

        def closure(w=w, opt=opt, at=at, yt=yt, lib=lib):
            opt.zero_grad()
            z = at @ w
            loss = (lib.nn.functional.binary_cross_entropy_with_logits(z, yt)
                    + 0.05 * (w * w).sum())
            loss.backward()
            return loss

        losses = [float(opt.step(closure)) for _ in range(4)]
        results.append((w.detach().numpy().copy(), losses))
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-5)
    # without a line search the iterates are PyTorch's; with one, near the minimum, where the
    # Wolfe tests compare numbers at float32's resolution, the two may stop at different
    # points of the flat bottom (the same loss to 1e-5)
    tolerance = dict(rtol=1e-4, atol=1e-5) if line_search is None else dict(atol=2e-3)
    np.testing.assert_allclose(results[0][0], results[1][0], **tolerance)


def test_rosenbrock_reaches_its_minimum():
    x = pyrt.tensor(np.array([-1.2, 1.0], F32), requires_grad=True)
    opt = pyrt.optim.LBFGS([x], lr=1, max_iter=100, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2
        loss.backward()
        return loss

    for _ in range(3):
        opt.step(closure)
    np.testing.assert_allclose(x.detach().numpy(), [1.0, 1.0], atol=1e-3)


def test_arguments_are_checked():
    x = pyrt.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="line_search_fn must be None or 'strong_wolfe'"):
        pyrt.optim.LBFGS([x], line_search_fn="armijo")
    with pytest.raises(ValueError, match="per-parameter options"):
        pyrt.optim.LBFGS([{"params": [x]}, {"params": [pyrt.zeros(1, requires_grad=True)]}])
    with pytest.raises(ValueError, match="max_iter must be a positive integer"):
        pyrt.optim.LBFGS([x], max_iter=0)
    with pytest.raises(RuntimeError, match="requires a closure"):
        pyrt.optim.LBFGS([x]).step(None)


def test_gradient_of_a_0d_tensor_through_scalar_arithmetic():
    """(1 - x) ** 2 of a 0-d x: NumPy's arithmetic on 0-d arrays gives scalars, which the
    ops downstream must still take."""
    x = pyrt.tensor(2.0, requires_grad=True)
    ((1 - x) ** 2 + 3 * x ** 3).backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * (2.0 - 1) + 9 * 4.0)
    y = pyrt.tensor(0.5, requires_grad=True)
    (grad,) = pyrt.autograd.grad((1 - y) ** 2, [y])
    np.testing.assert_allclose(grad.numpy(), -1.0)
