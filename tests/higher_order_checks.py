"""What the tests of higher-order gradients share: a function f(lib, *xs) of tensors, run
with pyrt or with torch (float64), gives its first gradients and its Hessian times vectors
by grad(create_graph=True), or its first gradients by the ordinary backward pass."""

import warnings

import numpy as np

import pyrt
from pyrt import autograd


def call(f, lib, xs):
    """f(lib, *xs), with the deprecation warnings some of torch's forms give silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return f(lib, *xs)


def pyrt_gradients(f, arrays, vs):
    """(the first gradients, the Hessian of f times vs) by grad with create_graph."""
    xs = [pyrt.tensor(a, requires_grad=True) for a in arrays]
    grads = autograd.grad(call(f, pyrt, xs), xs, create_graph=True)
    assert all(g.requires_grad for g in grads)
    s = sum(((g * pyrt.tensor(v)).sum() for g, v in zip(grads, vs)), pyrt.tensor(0.0))
    second = autograd.grad(s, xs, allow_unused=True, materialize_grads=True)
    return [g.detach().numpy() for g in grads], [h.detach().numpy() for h in second]


def torch_gradients(f, arrays, vs):
    """pyrt_gradients' figures from torch, in float64."""
    import torch

    xs = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]
    grads = torch.autograd.grad(call(f, torch, xs), xs, create_graph=True)
    s = sum((g * torch.tensor(v, dtype=torch.float64)).sum() for g, v in zip(grads, vs))
    second = torch.autograd.grad(s, xs, allow_unused=True, materialize_grads=True)
    return [g.detach().numpy() for g in grads], [h.detach().numpy() for h in second]


def plain_gradients(f, arrays):
    """The first gradients by the ordinary backward pass."""
    xs = [pyrt.tensor(a, requires_grad=True) for a in arrays]
    call(f, pyrt, xs).backward()
    return [x.grad.detach().numpy().astype(np.float64) for x in xs]


def close(actual, expected, tol):
    """Each array within tol of its expected one, relative to the larger of 1 and its
    largest magnitude."""
    for a, e in zip(actual, expected):
        scale = max(1.0, float(np.abs(e).max()))
        np.testing.assert_allclose(a, e, rtol=tol, atol=tol * scale)


def check_against_torch(f, inputs, tol=(1e-4, 2e-4)):
    """f's first gradients and Hessian-vector products equal torch's (float64), at the
    arrays inputs(1) along inputs(2); tol: those of the first and of the second."""
    arrays, vs = inputs(1), inputs(2)
    first, second = pyrt_gradients(f, arrays, vs)
    t_first, t_second = torch_gradients(f, arrays, vs)
    close(first, t_first, tol[0])
    close(second, t_second, tol[1])


def check_against_differences(f, inputs, eps, tol):
    """H v = (grad(x + eps v) - grad(x - eps v)) / 2 eps from the ordinary backward, at the
    arrays inputs(3) along inputs(4) (in float32: eps large enough for its rounding, small
    enough for the curvature and not to cross a kink), and the recorded first gradient
    equals the ordinary one."""
    arrays, vs = inputs(3), inputs(4)
    first, second = pyrt_gradients(f, arrays, vs)
    close(first, plain_gradients(f, arrays), 1e-5)
    plus = plain_gradients(f, [a + eps * v for a, v in zip(arrays, vs)])
    minus = plain_gradients(f, [a - eps * v for a, v in zip(arrays, vs)])
    close(second, [(p - m) / (2 * eps) for p, m in zip(plus, minus)], tol)
