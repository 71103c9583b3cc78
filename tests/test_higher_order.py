"""Higher-order gradients (create_graph=True): second derivatives of each covered op against
PyTorch (grad with create_graph twice, in float64) and against central differences of the
first gradient; gradient penalty and MAML steps; hessian, hvp and vhp against
torch.autograd.functional; pyrt.func.hessian; gradgradcheck, passing and failing; the
errors for ops without a formula."""

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
import pyrt.nn.functional as PF
from pyrt import autograd, double_backward
from pyrt import func as pfunc
from pyrt.autograd import Function, gradgradcheck
from pyrt.autograd import functional as AF
from pyrt.gradcheck import GradcheckError
from tests.higher_order_checks import (
    check_against_differences,
    check_against_torch,
    close,
    pyrt_gradients,
    torch_gradients,
)

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
SETTINGS = settings(max_examples=20, deadline=None, derandomize=True)
SHAPE = (3, 4)


def _nnf(lib):
    return lib.nn.functional


# scalar functions of x and y [3, 4] (values in [0.5, 2]), written once for pyrt and torch
CASES = {
    "add_sub": lambda L, x, y: ((x + y) * (x - y) + (x + 2.0) * (3.0 - y)
                                - (y - 1.0) * x).sum(),
    "mul_div": lambda L, x, y: (x * y / (y + 2.0) + 3.0 / x + x / 4.0 * y).sum(),
    "neg_pow": lambda L, x, y: (-(x ** 3) + x ** 0.5 * y + y ** -1.5 + x ** 2 * y).sum(),
    "exp_log_sqrt": lambda L, x, y: (x.exp() * y.log() + x.sqrt() * y + x.square() * y).sum(),
    "tanh_sigmoid": lambda L, x, y: (x.tanh() * y.sigmoid() * x).sum(),
    "relu_family": lambda L, x, y: ((x - 1).relu() * y + _nnf(L).leaky_relu(x - 1, 0.1) * y
                                    + (x - 1).abs() * y * x + x.clamp(0.7, 1.5) * y
                                    * x).sum(),
    "softplus": lambda L, x, y: (_nnf(L).softplus(x * y - 2)
                                 + _nnf(L).softplus(x - 1, beta=2.0) * y).sum(),
    "sin_cos": lambda L, x, y: (x.sin() * y.cos()).sum(),
    "reductions": lambda L, x, y: ((x.sum(1, keepdim=True) * y).mean()
                                   + (x.mean(0) ** 2 * y.sum(0)).sum() + x.sum() * y.mean()
                                   + (x.mean((0, 1), keepdim=True) * y).sum() ** 2),
    "matmul": lambda L, x, y: ((x @ y.T).tanh().sum() + (x.mm(y.T) ** 2).sum()
                               + (x.T @ y[:, 0]).sin().sum()),
    "linear": lambda L, x, y: _nnf(L).linear(x, y[:2, :], y[2, :2]).sigmoid().sum(),
    "shapes": lambda L, x, y: (((x.reshape(2, 6).T @ y.view(6, 2).T) ** 2).sum()
                               + (x.reshape(3, 2, 2).permute(2, 0, 1) ** 2
                                  * y.reshape(2, 3, 2)).sum()
                               + (x.reshape(3, 2, 2).transpose(1, 2) ** 2
                                  * y.flatten().reshape(3, 2, 2)).sum()),
    "broadcast": lambda L, x, y: ((x * y[0]).sum() ** 2 + (y[1].expand(3, 4) * x * x).sum()
                                  + ((x + y.mean(0)) ** 2).sum()),
    "indexing": lambda L, x, y: ((x[1:, ::2] ** 2 * y[:2, 1::2]).sum()
                                 + (x[0] * y[2] * x[2]).sum()),
    "cat_stack": lambda L, x, y: ((L.cat([x * y, x], 1) ** 2).sum()
                                  + (L.stack([x, y], 1) ** 3).sum()),
    "norm": lambda L, x, y: (((x.norm(2, dim=1) - 1) ** 2).mean() + x.norm() * y.norm(1)
                             + (y.norm(dim=0, keepdim=True) * x).sum()),
    "mse": lambda L, x, y: (_nnf(L).mse_loss(x * x, y)
                            + _nnf(L).mse_loss(x * y, x.detach() * 0 + 2)
                            + _nnf(L).mse_loss(x.exp(), y.detach() * 0 + 3, reduction="sum")
                            + (_nnf(L).mse_loss(x, y.detach() * 0 + 0.5, reduction="none")
                               * y).sum()),
    "softmax": lambda L, x, y: ((_nnf(L).log_softmax(x, 1) * y).sum()
                                + (_nnf(L).softmax(x * y, 0) ** 2).sum()),
    "cross_entropy": lambda L, x, y: _nnf(L).cross_entropy(x * y, L.tensor([0, 3, 1])),
}


def _inputs(seed):
    rng = np.random.default_rng(seed)
    return [rng.uniform(0.5, 2.0, SHAPE).astype(np.float32) for _ in range(2)]


@needs_torch
@pytest.mark.parametrize("name", sorted(CASES))
def test_second_derivatives_match_torch(name):
    check_against_torch(CASES[name], _inputs, tol=(1e-4, 1e-4))


@pytest.mark.parametrize("name", sorted(CASES))
def test_second_derivatives_match_finite_differences(name):
    check_against_differences(CASES[name], _inputs, eps=1e-2, tol=2e-2)


def test_third_and_fourth_derivatives_numpy():
    a = np.array([0.5, -1.0, 2.0], np.float32)
    x = pyrt.tensor(a, requires_grad=True)
    g = x
    expected = [4 * a ** 3, 12 * a ** 2, 24 * a, 24 + 0 * a]
    y = (x ** 4).sum()
    for want in expected:
        (g,) = autograd.grad(y, x, create_graph=True)
        np.testing.assert_allclose(g.detach().numpy(), want, rtol=1e-6)
        y = g.sum()


# ---- gradient penalty and MAML ---------------------------------------------------------------


def _twin_mlp(seed, act, width=8):
    """(pyrt Sequential, torch Sequential) with the same weights."""
    pyrt.manual_seed(seed)
    acts = {"tanh": (pyrt.nn.Tanh, torch.nn.Tanh),
            "leaky": (lambda: pyrt.nn.LeakyReLU(0.2), lambda: torch.nn.LeakyReLU(0.2))}[act]
    net = pyrt.nn.Sequential(pyrt.nn.Linear(4, width), acts[0](), pyrt.nn.Linear(width, 1))
    ref = torch.nn.Sequential(torch.nn.Linear(4, width), acts[1](),
                              torch.nn.Linear(width, 1)).double()
    with torch.no_grad():
        for p, q in zip(net.parameters(), ref.parameters()):
            q.copy_(torch.tensor(p.detach().numpy(), dtype=torch.float64))
    return net, ref


def _penalty(lib, net, x):
    x = x.clone().requires_grad_(True) if lib is torch else x.detach().requires_grad_(True)
    (g,) = lib.autograd.grad(net(x).sum(), x, create_graph=True)
    return ((g.norm(2, dim=1) - 1) ** 2).mean()


@needs_torch
@SETTINGS
@given(seed=st.integers(0, 1000), batch=st.integers(1, 6), act=st.sampled_from(["tanh",
                                                                                   "leaky"]))
def test_gradient_penalty_matches_torch(seed, batch, act):
    """WGAN-GP's penalty through Linear + Tanh + Linear (a LinearChain) and Linear +
    LeakyReLU + Linear (layer by layer)."""
    net, ref = _twin_mlp(seed, act)
    x = np.random.default_rng(seed).standard_normal((batch, 4)).astype(np.float32)
    loss = _penalty(pyrt, net, pyrt.tensor(x))
    loss.backward()
    ref_loss = _penalty(torch, ref, torch.tensor(x, dtype=torch.float64))
    ref_loss.backward()
    np.testing.assert_allclose(float(loss.detach().numpy()), ref_loss.item(), rtol=1e-4,
                               atol=1e-6)
    for p, q in zip(net.parameters(), ref.parameters()):
        if p.grad is None:  # the last bias, and (piecewise linear) the first one
            assert q.grad is None or not q.grad.any()
        else:
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-3, atol=1e-5)


@needs_torch
def test_maml_inner_step_matches_torch():
    rng = np.random.default_rng(5)
    w0 = rng.standard_normal((4, 1)).astype(np.float32)
    data = [rng.standard_normal(s).astype(np.float32) for s in ((6, 4), (6, 1), (5, 4),
                                                                 (5, 1))]

    def meta_gradient(lib, make):
        w = make(w0, requires_grad=True)
        xa, ya, xb, yb = (make(a) for a in data)
        loss = _nnf(lib).mse_loss((xa @ w).tanh(), ya)
        (g,) = lib.autograd.grad(loss, w, create_graph=True)
        fast = w - 0.1 * g
        _nnf(lib).mse_loss((xb @ fast).tanh(), yb).backward()
        return w.grad.detach().numpy()

    mine = meta_gradient(pyrt, lambda a, **kw: pyrt.tensor(a, **kw))
    ref = meta_gradient(torch, lambda a, **kw: torch.tensor(a, dtype=torch.float64, **kw))
    np.testing.assert_allclose(mine, ref, rtol=1e-4, atol=1e-6)


# ---- hessian, hvp, vhp, pyrt.func -----------------------------------------------------------


def _two_inputs(lib, x, y):
    return (x.exp() * y.sin()).sum() + (x * x * y).sum() + (x @ y.T).tanh().sum()


@needs_torch
def test_hessian_hvp_vhp_match_torch():
    import torch.autograd.functional as TF

    a, b = _inputs(6)
    v = tuple(_inputs(7))
    mine_in = (pyrt.tensor(a), pyrt.tensor(b))
    ref_in = tuple(torch.tensor(t, dtype=torch.float64) for t in (a, b))
    ref_v = tuple(torch.tensor(t, dtype=torch.float64) for t in v)
    f, g = (lambda x, y: _two_inputs(pyrt, x, y)), (lambda x, y: _two_inputs(torch, x, y))
    hess, ref_hess = AF.hessian(f, mine_in), TF.hessian(g, ref_in)
    for i in range(2):
        for j in range(2):
            assert hess[i][j].shape == SHAPE + SHAPE
            close([hess[i][j].detach().numpy()], [ref_hess[i][j].detach().numpy()], 1e-4)
    for mine_fn, ref_fn in ((AF.vhp, TF.vhp), (AF.hvp, TF.hvp)):
        value, product = mine_fn(f, mine_in, tuple(pyrt.tensor(t) for t in v))
        ref_value, ref_product = ref_fn(g, ref_in, ref_v)
        close([value.detach().numpy()], [ref_value.detach().numpy()], 1e-5)
        close([p.detach().numpy() for p in product], [p.numpy() for p in ref_product], 1e-4)
        assert not product[0].requires_grad
    single = AF.hessian(lambda x: (x ** 3).sum(), pyrt.tensor(a[0]))
    ref_single = TF.hessian(lambda x: (x ** 3).sum(), ref_in[0][0])
    close([single.detach().numpy()], [ref_single.numpy()], 1e-5)


def test_hessian_numpy_reference_and_create_graph():
    a = np.array([0.5, -1.0, 2.0], np.float32)
    h = AF.hessian(lambda x: (x ** 3).sum() + x[0] * x[1], pyrt.tensor(a))
    expected = np.diag(6 * a.astype(np.float64))
    expected[0, 1] = expected[1, 0] = 1
    np.testing.assert_allclose(h.detach().numpy(), expected, rtol=1e-6)
    assert not h.requires_grad
    x = pyrt.tensor(a, requires_grad=True)
    h = AF.hessian(lambda t: (t ** 3).sum(), x, create_graph=True)
    assert h.requires_grad
    (d,) = autograd.grad(h.sum(), x)  # the third derivative: 6 on the diagonal
    np.testing.assert_allclose(d.detach().numpy(), [6.0, 6.0, 6.0])
    _, hv = AF.hvp(lambda t: (t ** 3).sum(), x, pyrt.ones(3), create_graph=True)
    np.testing.assert_allclose(autograd.grad(hv.sum(), x)[0].detach().numpy(), [6.0, 6.0, 6.0])
    _, jv = AF.jvp(lambda t: t ** 3, x, pyrt.ones(3), create_graph=True)
    np.testing.assert_allclose(autograd.grad(jv.sum(), x)[0].detach().numpy(), 6 * a)
    _, vj = AF.vjp(lambda t: t ** 3, x, pyrt.ones(3), create_graph=True)
    np.testing.assert_allclose(autograd.grad(vj.sum(), x)[0].detach().numpy(), 6 * a)
    j = AF.jacobian(lambda t: t ** 3, x, create_graph=True)
    np.testing.assert_allclose(autograd.grad(j.sum(), x)[0].detach().numpy(), 6 * a)


def test_hessian_product_errors():
    x = pyrt.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="The function given to vhp should return a "
                                           "single Tensor"):
        AF.vhp(lambda t: (t.sum(), t.sum()), x, pyrt.ones(2))
    with pytest.raises(RuntimeError, match="The Tensor returned by the function given to "
                                           "hessian should contain a single element"):
        AF.hessian(lambda t: t * t, x)
    with pytest.raises(RuntimeError, match="The vector v can only be None"):
        AF.hvp(lambda t: (t * t).sum(), x)
    with pytest.raises(RuntimeError, match="v has invalid size"):
        AF.vhp(lambda t: (t * t).sum(), x, pyrt.ones(3))
    with pytest.raises(ValueError, match="Expected strategy"):
        AF.hessian(lambda t: (t * t).sum(), x, outer_jacobian_strategy="sideways")


@needs_torch
def test_func_hessian_and_nested_transforms_match_torch():
    import torch.func as tfunc

    a = _inputs(8)[0][0]

    def f(x):
        return (x.sin() * x.exp()).sum() + (x[0] * x[1:]).sum()

    ref_x = torch.tensor(a, dtype=torch.float64)
    close([pfunc.hessian(f)(pyrt.tensor(a)).detach().numpy()],
           [tfunc.hessian(f)(ref_x).numpy()], 1e-4)

    def g(x):
        return x.tanh() * x[0]

    close([pfunc.jacfwd(pfunc.jacrev(g))(pyrt.tensor(a)).detach().numpy()],
           [tfunc.jacfwd(tfunc.jacrev(g))(ref_x).detach().numpy()], 1e-4)

    def h(x):
        return (x ** 3).sum()

    close([pfunc.grad(lambda x: pfunc.grad(h)(x).sin().sum())(pyrt.tensor(a)).numpy()],
           [tfunc.grad(lambda x: tfunc.grad(h)(x).sin().sum())(ref_x).detach().numpy()], 1e-5)


def test_func_grad_of_grad_numpy():
    """d/dx of (d/dx x^3) = 6x, and a closed-over weight gets its mixed derivative."""
    x = pyrt.tensor(2.0)
    assert float(pfunc.grad(pfunc.grad(lambda a: a ** 3))(x).numpy()) == pytest.approx(12.0)
    w = pyrt.tensor([3.0], requires_grad=True)
    g = pfunc.grad(lambda a: (a * a * w).sum())(pyrt.tensor([2.0]))  # 2 a w
    assert g.requires_grad
    g.sum().backward()
    np.testing.assert_allclose(w.grad.detach().numpy(), [4.0])


# ---- gradgradcheck ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["mul_div", "exp_log_sqrt", "tanh_sigmoid", "matmul",
                                  "softmax", "norm", "linear"])
def test_gradgradcheck_passes(name):
    a, b = _inputs(9)
    small = [pyrt.tensor(t[:2, :4], requires_grad=True) for t in (a, b)]
    fn = CASES[name]
    if name == "linear":
        small = [pyrt.tensor(t[:3, :4], requires_grad=True) for t in (a, b)]
    assert gradgradcheck(lambda x, y: fn(pyrt, x, y), small)


def test_gradgradcheck_of_vector_outputs_and_given_grad_outputs():
    x = pyrt.tensor([0.5, 1.0, 1.5], requires_grad=True)
    assert gradgradcheck(lambda t: t.sin() * t, (x,))
    assert gradgradcheck(lambda t: t.exp(), (x,), (pyrt.tensor([1.0, -2.0, 0.5]),))


def test_gradgradcheck_fails_on_a_wrong_formula(monkeypatch):
    """tanh's formula with the right value but a derivative missing (1 - y^2 held
    constant): gradgradcheck finds the second derivatives wrong."""
    from pyrt import functional as F

    x = pyrt.tensor([0.3, -0.6, 1.2], requires_grad=True)
    assert gradgradcheck(lambda t: t.tanh(), (x,))
    monkeypatch.setitem(double_backward.UNARY, "tanh",
                        lambda g, x, y: F.mul(g, F.sub(1.0, F.mul(y, y).detach())))
    assert gradgradcheck(lambda t: t.tanh(), (x,), raise_exception=False) is False
    with pytest.raises(GradcheckError, match="Jacobian mismatch for output 0 with respect to "
                                             "input 0"):
        gradgradcheck(lambda t: t.tanh(), (x,))


# ---- the engine ------------------------------------------------------------------------------


def test_retain_graph_defaults_to_create_graph():
    x = pyrt.tensor([1.0, 2.0], requires_grad=True)
    y = (x.exp() * x).sum()
    autograd.grad(y, x, create_graph=True)
    (g,) = autograd.grad(y, x, create_graph=True)  # the graph was kept
    np.testing.assert_allclose(g.detach().numpy(), np.exp([1.0, 2.0]) * [2.0, 3.0], rtol=1e-6)
    autograd.grad(y, x, create_graph=True, retain_graph=False)
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second "
                                           "time"):
        autograd.grad(y, x, create_graph=True)


def test_backward_create_graph_accumulates_a_differentiable_grad():
    x = pyrt.tensor([1.0, 2.0], requires_grad=True)
    autograd.backward((x ** 3).sum(), create_graph=True)
    assert x.grad.requires_grad
    np.testing.assert_allclose(x.grad.detach().numpy(), [3.0, 12.0])
    autograd.backward((x ** 2).sum(), create_graph=True)  # added out of place
    np.testing.assert_allclose(x.grad.detach().numpy(), [5.0, 16.0])
    (second,) = autograd.grad(x.grad.sum(), x)
    np.testing.assert_allclose(second.detach().numpy(), [8.0, 14.0])  # 6x + 2


def test_grad_outputs_are_differentiated_and_hooks_are_recorded():
    x = pyrt.tensor([1.0, 2.0], requires_grad=True)
    v = pyrt.tensor([3.0, 4.0], requires_grad=True)
    h = x * x
    h.register_hook(lambda g: g * x)  # the hook's op is recorded too
    (g,) = autograd.grad(h, x, grad_outputs=v, create_graph=True)  # 2 x^2 v
    np.testing.assert_allclose(g.detach().numpy(), [6.0, 32.0])
    dx, dv = autograd.grad(g.sum(), (x, v))
    np.testing.assert_allclose(dx.detach().numpy(), [12.0, 32.0])  # 4 x v
    np.testing.assert_allclose(dv.detach().numpy(), [2.0, 8.0])


def test_custom_function_backward_is_recorded():
    class Cube(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x * x

    x = pyrt.tensor([1.0, -2.0], requires_grad=True)
    (g,) = autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), [3.0, 12.0])
    (h,) = autograd.grad(g.sum(), x)
    np.testing.assert_allclose(h.detach().numpy(), [6.0, -12.0])


@pytest.mark.parametrize("make, name", [
    (lambda t: t.scatter_reduce(0, pyrt.tensor([0]), t, "prod"), "ScatterReduceBackward0"),
    (lambda t: t.norm(0), "NormBackward1"),
])
def test_ops_without_a_formula_are_named(make, name):
    x = pyrt.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(NotImplementedError, match=f"the derivative for '{name}' is not "
                                                  "implemented for create_graph=True"):
        autograd.grad(make(x).sum(), x, create_graph=True)
    # the ordinary gradient through them still works
    assert autograd.grad(make(x).sum(), x)[0].shape == (2,)


def test_op_name_and_closure_vars():
    x = pyrt.tensor([1.0, 2.0], requires_grad=True)
    y = PF.softmax(x, 0)
    assert double_backward.op_name(y._backward) == "SoftmaxBackward0"
    assert double_backward.closure_vars(y._backward)["dim"] == 0
    assert double_backward.op_name((x * 2.0)._backward) == "MulBackward0"


def test_ordinary_backward_loads_nothing_of_it():
    """A training step without create_graph never imports the recorded pass."""
    code = ("import pyrt, sys\n"
            "net = pyrt.nn.Sequential(pyrt.nn.Linear(2, 3), pyrt.nn.Tanh(), "
            "pyrt.nn.Linear(3, 1))\n"
            "x = pyrt.ones(4, 2)\n"
            "pyrt.nn.functional.mse_loss(net(x), pyrt.zeros(4, 1)).backward()\n"
            "assert 'pyrt.double_backward' not in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], check=True)


@needs_torch
@SETTINGS
@given(rows=st.integers(1, 4), cols=st.integers(1, 5), seed=st.integers(0, 10_000))
def test_composite_second_derivatives_over_shapes(rows, cols, seed):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal((rows, cols)).astype(np.float32) for _ in range(2)]
    vs = [rng.standard_normal((rows, cols)).astype(np.float32) for _ in range(2)]

    def f(L, x, y):
        z = (x @ y.T).tanh() + x.sum(1, keepdim=True)
        return (z.norm(2, dim=0) ** 2).sum() + (_nnf(L).log_softmax(x * y, 1) * y).mean()

    first, second = pyrt_gradients(f, arrays, vs)
    t_first, t_second = torch_gradients(f, arrays, vs)
    close(first, t_first, 1e-4)
    close(second, t_second, 1e-4)
