"""pyrt.autograd.functional (jacobian, vjp, jvp), gradcheck, anomaly detection, Variable and
pyrt.utils.checkpoint, against PyTorch where installed and against finite differences and
NumPy definitions in float64."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
from pyrt.autograd import Function, Variable, gradcheck, gradgradcheck
from pyrt.autograd import functional as AF
from pyrt.gradcheck import GradcheckError
from pyrt.utils.checkpoint import checkpoint, checkpoint_sequential

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
# an op whose recorded backward pyrt still refuses (scatter_reduce's "prod")
_REFUSED = "'ScatterReduceBackward0' is not implemented"


def _prod_scatter(t):
    return t.scatter_reduce(0, pyrt.tensor([0]), t, "prod")
SETTINGS = settings(max_examples=20, deadline=None, derandomize=True)


# functions of one or several tensors, written once for pyrt and torch (both have these ops)
FUNCTIONS = {
    "single": (1, lambda x: (x * x).tanh() + x.exp()),
    "reduce": (1, lambda x: (x.sin() * x).sum()),
    "pair": (2, lambda x, y: x * y.exp() - y),
    "tuple_out": (2, lambda x, y: (x * y, (x * x).sum() * y.cos())),
    "unused": (2, lambda x, y: x.sigmoid() * 3),
}


def _arrays(n, shape, seed):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1.5, 1.5, shape).astype(np.float32) for _ in range(n)]


def _fd_jacobian(func, arrays, j, eps=1e-3):
    """d func / d arrays[j] by central differences in float64: (outputs..., input) per
    output, flattened as (output elements, input elements)."""
    def evaluate(values):
        out = func(*[pyrt.tensor(v.astype(np.float32)) for v in values])
        outs = out if isinstance(out, tuple) else (out,)
        return [o.numpy().astype(np.float64).reshape(-1) for o in outs]

    base = [a.astype(np.float64) for a in arrays]
    n_in = base[j].size
    cols = []
    for k in range(n_in):
        plus, minus = [b.copy() for b in base], [b.copy() for b in base]
        plus[j].reshape(-1)[k] += eps
        minus[j].reshape(-1)[k] -= eps
        cols.append([(p - m) / (2 * eps) for p, m in zip(evaluate(plus), evaluate(minus))])
    return [np.stack([c[i] for c in cols], axis=1) for i in range(len(cols[0]))]


# ---- jacobian / vjp / jvp -------------------------------------------------------------------


@SETTINGS
@given(name=st.sampled_from(sorted(FUNCTIONS)),
       shape=st.sampled_from([(), (1,), (3,), (2, 3)]), seed=st.integers(0, 2**16))
def test_jacobian_matches_finite_differences(name, shape, seed):
    n, func = FUNCTIONS[name]
    arrays = _arrays(n, shape, seed)
    inputs = tuple(pyrt.tensor(a) for a in arrays)
    jac = AF.jacobian(func, inputs)
    out = func(*inputs)
    outs, blocks = (out, jac) if isinstance(out, tuple) else ((out,), (jac,))
    for j in range(n):
        expected = _fd_jacobian(func, arrays, j)
        for i, row in enumerate(blocks):
            got = row[j].numpy()
            assert got.shape == tuple(outs[i].shape) + shape
            np.testing.assert_allclose(got.reshape(expected[i].shape), expected[i],
                                       rtol=2e-2, atol=2e-3)


@needs_torch
@SETTINGS
@given(name=st.sampled_from(sorted(FUNCTIONS)),
       shape=st.sampled_from([(), (4,), (2, 3)]), seed=st.integers(0, 2**16),
       as_tuple=st.booleans())
def test_jacobian_vjp_jvp_match_torch(name, shape, seed, as_tuple):
    n, func = FUNCTIONS[name]
    arrays = _arrays(n, shape, seed)
    vs = _arrays(n, shape, seed + 1)
    if n == 1 and not as_tuple:
        ours, theirs = pyrt.tensor(arrays[0]), torch.tensor(arrays[0])
        v_ours, v_theirs = pyrt.tensor(vs[0]), torch.tensor(vs[0])
    else:
        ours = tuple(pyrt.tensor(a) for a in arrays)
        theirs = tuple(torch.tensor(a) for a in arrays)
        v_ours = tuple(pyrt.tensor(v) for v in vs)
        v_theirs = tuple(torch.tensor(v) for v in vs)
    _assert_close(AF.jacobian(func, ours), torch.autograd.functional.jacobian(func, theirs))
    _assert_close(AF.jvp(func, ours, v_ours), torch.autograd.functional.jvp(func, theirs,
                                                                            v_theirs))
    out = func(*(ours if isinstance(ours, tuple) else (ours,)))
    rng = np.random.default_rng(seed)
    if isinstance(out, tuple):
        w = [rng.standard_normal(o.shape).astype(np.float32) for o in out]
        w_ours, w_theirs = tuple(map(pyrt.tensor, w)), tuple(map(torch.tensor, w))
    else:
        w = rng.standard_normal(out.shape).astype(np.float32)
        w_ours, w_theirs = pyrt.tensor(w), torch.tensor(w)
    _assert_close(AF.vjp(func, ours, w_ours), torch.autograd.functional.vjp(func, theirs,
                                                                            w_theirs))


def _assert_close(ours, theirs):
    """Nested tuples of the same structure, with equal values."""
    if isinstance(theirs, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            _assert_close(a, b)
        return
    assert isinstance(ours, pyrt.Tensor)
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert not ours.requires_grad
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-6)


@SETTINGS
@given(shape=st.sampled_from([(2,), (3, 2)]), seed=st.integers(0, 2**16))
def test_vjp_and_jvp_contract_the_jacobian(shape, seed):
    _, func = FUNCTIONS["tuple_out"]
    x, y, vx, vy = (pyrt.tensor(a) for a in _arrays(4, shape, seed))
    jac = AF.jacobian(func, (x, y))
    outputs, jvp = AF.jvp(func, (x, y), (vx, vy))
    for i, out in enumerate(outputs):
        n = out.numel()
        expected = sum(jac[i][j].numpy().reshape(n, -1).astype(np.float64)
                       @ v.numpy().reshape(-1) for j, v in enumerate((vx, vy)))
        np.testing.assert_allclose(jvp[i].numpy().reshape(-1), expected, rtol=1e-5, atol=1e-6)
    w = tuple(pyrt.tensor(a) for a in _arrays(2, shape, seed + 1))
    _, vjp = AF.vjp(func, (x, y), w)
    for j in range(2):
        expected = sum(w[i].numpy().reshape(-1).astype(np.float64)
                       @ jac[i][j].numpy().reshape(outputs[i].numel(), -1) for i in range(2))
        np.testing.assert_allclose(vjp[j].numpy().reshape(-1), expected, rtol=1e-5, atol=1e-6)


def test_functional_results_and_defaults():
    x = pyrt.tensor([1.0, 2.0, 3.0])
    out, g = AF.vjp(lambda t: (t * t).sum(), x)  # v may be left out for one element
    assert out.item() == pytest.approx(14.0)
    np.testing.assert_array_equal(g.numpy(), [2.0, 4.0, 6.0])
    out, d = AF.jvp(lambda t: t * t * t, pyrt.tensor(2.0))
    assert d.item() == pytest.approx(12.0)
    # an input the function does not use: zeros
    _, (gx, gy) = AF.vjp(lambda a, b: a.sum(), (x, x))
    np.testing.assert_array_equal(gx.numpy(), [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(gy.numpy(), [0.0, 0.0, 0.0])
    jac = AF.jacobian(lambda a, b: a * 2, (x, x))
    np.testing.assert_array_equal(jac[1].numpy(), np.zeros((3, 3)))
    np.testing.assert_array_equal(jac[0].numpy(), 2 * np.eye(3))
    # the identity, and vectorize / forward-mode giving the same values
    np.testing.assert_array_equal(AF.jacobian(lambda t: t, x).numpy(), np.eye(3))
    same = AF.jacobian(lambda t: t.exp(), x, vectorize=True, strategy="forward-mode")
    np.testing.assert_allclose(same.numpy(), np.diag(np.exp([1.0, 2.0, 3.0])), rtol=1e-6)
    assert x.grad is None and not x.requires_grad  # the caller's tensors are untouched
    assert pyrt.autograd.functional is AF
    import pyrt.autograd.functional as imported  # importable as torch.autograd.functional is

    assert imported is AF


def test_functional_errors():
    x = pyrt.tensor([1.0, 2.0])
    with pytest.raises(TypeError, match="The inputs given to jacobian must be a Tensor"):
        AF.jacobian(lambda t: t, [x])
    with pytest.raises(TypeError, match="outputs of the user-provided function"):
        AF.vjp(lambda t: 3.0, x, pyrt.tensor(1.0))
    with pytest.raises(RuntimeError, match="v can only be None"):
        AF.vjp(lambda t: t * 2, x)
    with pytest.raises(RuntimeError, match="v can only be None"):
        AF.jvp(lambda t: t * 2, x)
    with pytest.raises(RuntimeError, match="v has invalid size"):
        AF.vjp(lambda t: t * 2, x, pyrt.tensor([1.0, 2.0, 3.0]))
    with pytest.raises(RuntimeError, match="v is a tuple of invalid length"):
        AF.jvp(lambda a, b: a * b, (x, x), (x,))
    with pytest.raises(RuntimeError, match="independent of input 1"):
        AF.jacobian(lambda a, b: a * 2, (x, x), strict=True)
    with pytest.raises(RuntimeError, match="independent of input 1"):
        AF.vjp(lambda a, b: a.sum(), (x, x), strict=True)
    with pytest.raises(RuntimeError, match="does not require gradients"):
        AF.jacobian(lambda a: pyrt.tensor([1.0]), x, strict=True)
    with pytest.raises(ValueError, match="reverse-mode"):
        AF.jacobian(lambda t: t, x, strategy="sideways")
    with pytest.raises(ValueError, match="requires `vectorize=True`"):
        AF.jacobian(lambda t: t, x, strategy="forward-mode")
    for fn in (AF.jacobian, AF.vjp, AF.jvp):
        with pytest.raises(NotImplementedError, match=_REFUSED):
            fn(lambda t: _prod_scatter(t).sum() ** 2, pyrt.tensor([1.0]), create_graph=True)
    for fn in (AF.hessian, AF.hvp, AF.vhp):
        with pytest.raises(NotImplementedError, match=_REFUSED):
            fn(lambda t: (_prod_scatter(t) * t).sum(), pyrt.tensor([1.0]))


# ---- gradcheck ------------------------------------------------------------------------------


class _Cube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x * x


class _WrongCube(_Cube):
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 2 * x * x  # should be 3 x^2


class _NoneUnaware(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        return x * 2, x * 3

    @staticmethod
    def backward(ctx, g1, g2):
        return g1 * 2 + g2 * 3  # fails when a gradient is None


@SETTINGS
@given(shape=st.sampled_from([(), (3,), (2, 2)]), seed=st.integers(0, 2**16))
def test_gradcheck_passes_correct_functions(shape, seed):
    a, b = (pyrt.tensor(v, requires_grad=True) for v in _arrays(2, shape, seed))
    assert gradcheck(lambda x, y: (x * y.exp(), (x - y).tanh()), (a, b))
    assert gradcheck(_Cube.apply, a)
    assert gradcheck(lambda x, k: x.sin() * k, [a, 2.0])  # a non-tensor argument


def test_gradcheck_fails_wrong_backward():
    x = pyrt.tensor([0.5, -1.0, 2.0], requires_grad=True)
    with pytest.raises(GradcheckError, match="Jacobian mismatch for output 0 with respect to "
                                             "input 0"):
        gradcheck(_WrongCube.apply, (x,))
    assert gradcheck(_WrongCube.apply, (x,), raise_exception=False) is False
    assert issubclass(GradcheckError, RuntimeError)
    both = lambda t: sum(_NoneUnaware.apply(t))  # noqa: E731
    with pytest.raises(GradcheckError, match="undefined"):
        gradcheck(both, (x,))
    assert gradcheck(both, (x,), check_undefined_grad=False)


def test_gradcheck_errors():
    x = pyrt.tensor([1.0, 2.0])
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        gradcheck(lambda t: t * 2, (x,))
    x.requires_grad_(True)
    with pytest.raises(NotImplementedError, match="forward-mode"):
        gradcheck(lambda t: t * 2, (x,), check_forward_ad=True)
    with pytest.raises(NotImplementedError, match="check_fwd_over_rev"):
        gradgradcheck(lambda t: t * 2, (x,), check_fwd_over_rev=True)
    with pytest.raises(NotImplementedError, match=_REFUSED):
        gradgradcheck(lambda t: (_prod_scatter(t) * t).sum(), (x,))
    assert pyrt.autograd.gradcheck is gradcheck


@needs_torch
def test_gradcheck_agrees_with_torch_on_a_wrong_function():
    class TorchWrongCube(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 2 * x * x

    xt = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64, requires_grad=True)
    assert not torch.autograd.gradcheck(TorchWrongCube.apply, (xt,), raise_exception=False)
    x = pyrt.tensor([0.5, -1.0, 2.0], requires_grad=True)
    assert not gradcheck(_WrongCube.apply, (x,), raise_exception=False)
    assert torch.autograd.gradcheck(lambda t: (t * t).sin(), (xt,))
    assert gradcheck(lambda t: (t * t).sin(), (x,))


# ---- anomaly detection ----------------------------------------------------------------------


class _NanBackward(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 1

    @staticmethod
    def backward(ctx, g):
        return g * float("nan")


def test_anomaly_off_by_default_and_nan_passes():
    assert not pyrt.autograd.is_anomaly_enabled()
    assert pyrt.autograd.is_anomaly_check_nan_enabled()
    x = pyrt.tensor([0.0, 4.0], requires_grad=True)
    (x.sqrt() * x).sum().backward()  # 0 * inf: a NaN gradient, unnoticed
    assert np.isnan(x.grad.numpy()[0])


def test_detect_anomaly_names_the_op_and_shows_the_forward_stack():
    x = pyrt.tensor([0.0, 4.0], requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pyrt.autograd.detect_anomaly():
            assert pyrt.autograd.is_anomaly_enabled()
            y = (x.sqrt() * x).sum()  # the line the forward stack must show
            with pytest.raises(RuntimeError, match=r"Function 'SqrtBackward0' returned nan "
                                                   r"values in its 0th output\."):
                y.backward()
    assert not pyrt.autograd.is_anomaly_enabled()
    messages = [str(w.message) for w in caught]
    assert any("Anomaly Detection has been enabled" in m for m in messages)
    detected = [m for m in messages if m.startswith("Error detected in SqrtBackward0")]
    assert detected and "y = (x.sqrt() * x).sum()" in detected[0]
    assert "test_autograd_utilities.py" in detected[0] and "in sqrt" in detected[0]


@needs_torch
def test_anomaly_message_matches_torch():
    xt = torch.tensor([0.0, 4.0], requires_grad=True)
    x = pyrt.tensor([0.0, 4.0], requires_grad=True)
    messages = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for lib, t in ((torch, xt), (pyrt, x)):
            with lib.autograd.detect_anomaly():
                y = (t.sqrt() * t).sum()
                with pytest.raises(RuntimeError) as info:
                    y.backward()
            messages.append(str(info.value))
    assert messages[0] == messages[1]


def test_anomaly_in_a_function_grad_and_check_nan_off():
    x = pyrt.tensor([1.0, 2.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pyrt.autograd.detect_anomaly():
            y = _NanBackward.apply(x).sum()
            with pytest.raises(RuntimeError, match="'_NanBackwardBackward' returned nan"):
                pyrt.autograd.grad(y, x)
        with pyrt.autograd.detect_anomaly(check_nan=False):
            assert not pyrt.autograd.is_anomaly_check_nan_enabled()
            _NanBackward.apply(x).sum().backward()  # no check: NaN goes through
        assert np.isnan(x.grad.numpy()).all()
        assert pyrt.autograd.is_anomaly_check_nan_enabled()


def test_set_detect_anomaly_and_decorator():
    pyrt.autograd.set_detect_anomaly(True)
    try:
        assert pyrt.autograd.is_anomaly_enabled()
    finally:
        pyrt.autograd.set_detect_anomaly(False)
    assert not pyrt.autograd.is_anomaly_enabled()
    with pyrt.autograd.set_detect_anomaly(True, check_nan=False):
        assert pyrt.autograd.is_anomaly_enabled()
        assert not pyrt.autograd.is_anomaly_check_nan_enabled()
    assert not pyrt.autograd.is_anomaly_enabled()

    @pyrt.autograd.detect_anomaly()
    def step(t):
        assert pyrt.autograd.is_anomaly_enabled()
        (t.sqrt() * t).sum().backward()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match="SqrtBackward0"):
            step(pyrt.tensor([0.0, 1.0], requires_grad=True))
    assert not pyrt.autograd.is_anomaly_enabled()
    with pytest.raises(TypeError, match="mode must be a bool"):
        pyrt.autograd.set_detect_anomaly("yes")


def test_anomaly_mode_keeps_gradients_and_inplace_check():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((3, 4)).astype(np.float32)
    x = pyrt.tensor(a, requires_grad=True)
    (x.tanh() * x).sum().backward()
    plain = x.grad.numpy().copy()
    x.grad = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pyrt.autograd.detect_anomaly():
            (x.tanh() * x).sum().backward()
            np.testing.assert_array_equal(x.grad.numpy(), plain)
            c = pyrt.tensor(a)
            z = (x * c).sum()
            c.mul_(2)  # read by the product's backward
            with pytest.warns(UserWarning, match="Error detected in MulBackward0"):
                with pytest.raises(RuntimeError, match="modified by an inplace operation"):
                    z.backward()


# ---- Variable -------------------------------------------------------------------------------


def test_variable():
    t = pyrt.tensor([1.0, 2.0])
    v = Variable(t, requires_grad=True)
    assert isinstance(v, pyrt.Tensor) and v is not t and v.requires_grad and v.is_leaf
    assert not t.requires_grad and np.shares_memory(v.detach().numpy(), t.numpy())
    assert isinstance(t, Variable) and not isinstance(1.0, Variable)
    assert not Variable(t * 1).requires_grad
    assert tuple(Variable().shape) == (0,)
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got list"):
        Variable([1.0])
    with pytest.warns(UserWarning, match="volatile"):
        Variable(t, volatile=True)


# ---- checkpoint -----------------------------------------------------------------------------


def _model(seed):
    pyrt.manual_seed(seed)
    return pyrt.nn.Sequential(pyrt.nn.Linear(4, 8), pyrt.nn.Tanh(), pyrt.nn.Dropout(0.3),
                              pyrt.nn.Linear(8, 8), pyrt.nn.Dropout(0.5), pyrt.nn.Linear(8, 2))


def _grads(model, x, run, seed):
    for p in model.parameters():
        p.grad = None
    x.grad = None
    pyrt.manual_seed(seed)
    out = run(model, x)
    (out * out).sum().backward()
    return out.detach().numpy().copy(), [x.grad.numpy().copy()] + [
        p.grad.numpy().copy() for p in model.parameters()]


@SETTINGS
@given(batch=st.integers(1, 5), seed=st.integers(0, 2**16), reentrant=st.booleans())
def test_checkpoint_gradients_equal_plain_ones(batch, seed, reentrant):
    model = _model(seed)
    x = pyrt.tensor(np.random.default_rng(seed).standard_normal((batch, 4)).astype(np.float32),
                    requires_grad=True)
    out, plain = _grads(model, x, lambda m, t: m(t), seed + 1)
    runs = [lambda m, t: checkpoint(m, t, use_reentrant=reentrant),
            lambda m, t: checkpoint_sequential(m, 2, t, use_reentrant=reentrant),
            lambda m, t: checkpoint(lambda u: m[3:](checkpoint(m[:3], u, use_reentrant=False)),
                                    t, use_reentrant=reentrant)]
    for run in runs:
        out2, grads = _grads(model, x, run, seed + 1)
        np.testing.assert_array_equal(out2, out)
        for a, b in zip(grads, plain):
            np.testing.assert_array_equal(a, b)  # bit for bit


def test_checkpoint_restores_rng_only_when_asked():
    model = pyrt.nn.Sequential(pyrt.nn.Linear(4, 64), pyrt.nn.Dropout(0.5))
    x = pyrt.tensor(np.ones((8, 4), np.float32), requires_grad=True)
    _, plain = _grads(model, x, lambda m, t: m(t), 7)
    _, kept = _grads(model, x, lambda m, t: checkpoint(m, t, use_reentrant=False), 7)
    _, lost = _grads(model, x, lambda m, t: checkpoint(m, t, use_reentrant=False,
                                                       preserve_rng_state=False), 7)
    np.testing.assert_array_equal(kept[0], plain[0])
    assert not np.array_equal(lost[0], plain[0])  # other dropout masks in the recomputation
    # the generator goes on after the backward pass as it would without checkpointing
    pyrt.manual_seed(5)
    (checkpoint(model, x, use_reentrant=False).sum()).backward()
    after = pyrt.rand(3).numpy()
    pyrt.manual_seed(5)
    model(x).sum().backward()
    np.testing.assert_array_equal(pyrt.rand(3).numpy(), after)


def test_checkpoint_outputs_and_modes():
    lin = pyrt.nn.Linear(3, 2)
    x = pyrt.tensor(np.ones((2, 3), np.float32))  # requires no grad: parameters still learn
    out, idx, y = checkpoint(lambda t: (lin(t), 3, lin(t) * 2), x, use_reentrant=False)
    assert idx == 3 and out.requires_grad and y.requires_grad
    assert out.grad_fn is not None
    (out.sum() + y.sum()).backward()
    np.testing.assert_allclose(lin.bias.grad.numpy(), [6.0, 6.0])
    np.testing.assert_allclose(lin.weight.grad.numpy(), np.full((2, 3), 6.0))
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        out = checkpoint(lin, x, use_reentrant=True)
    assert not out.requires_grad
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed"):
        checkpoint(lin, x.requires_grad_(True))
    with pyrt.no_grad():
        assert not checkpoint(lin, x, use_reentrant=False).requires_grad
    # pyrt.autograd.grad works through a checkpoint too
    (gx,) = pyrt.autograd.grad(checkpoint(lambda t: (t * t).sum(), x, use_reentrant=False), x)
    np.testing.assert_array_equal(gx.numpy(), 2 * x.detach().numpy())
    # keyword arguments go to the function (use_reentrant=False only)
    out = checkpoint(lambda t, scale: t * scale, x, scale=3.0, use_reentrant=False)
    np.testing.assert_array_equal(out.detach().numpy(), np.full((2, 3), 3.0))


def test_checkpoint_errors():
    x = pyrt.tensor([1.0], requires_grad=True)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
        checkpoint(lambda t, scale: t, x, scale=2, use_reentrant=True)
    with pytest.raises(ValueError, match="only supported when use_reentrant=False"):
        checkpoint(lambda t: t, x, use_reentrant=True, debug=True)
    with pytest.raises(TypeError, match="must be callable"):
        checkpoint(3, x, use_reentrant=False)
    with pytest.raises(TypeError, match="must return a Tensor or a tuple or list"):
        checkpoint(lambda t: {"y": t}, x, use_reentrant=False)
    with pytest.raises(ValueError, match="segments must be a positive integer"):
        checkpoint_sequential([lambda t: t], 0, x, use_reentrant=False)
    with pytest.raises(ValueError, match="determinism_check"):
        checkpoint(lambda t: t, x, use_reentrant=False, determinism_check="always")


def test_the_top_level_anomaly_switches_are_torch_s():
    assert not pyrt.is_anomaly_enabled() and pyrt.is_anomaly_check_nan_enabled()
    try:
        pyrt.set_anomaly_enabled(True, False)
        assert pyrt.is_anomaly_enabled() and not pyrt.is_anomaly_check_nan_enabled()
        assert pyrt.autograd.is_anomaly_enabled()
    finally:
        pyrt.set_anomaly_enabled(False)
    assert not pyrt.is_anomaly_enabled() and pyrt.is_anomaly_check_nan_enabled()
