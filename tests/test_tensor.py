"""Tensor and autograd: every differentiable op against finite differences (float64) and,
where PyTorch is installed, against torch.autograd on the same inputs."""

import numpy as np
import pytest

import pyrt
import pyrt.functional as F
from pyrt import cuda

RNG_SEED = 20261122


def rng():
    return np.random.default_rng(RNG_SEED)


def numeric_grad(f, arrays, index, eps=1e-3):
    """d f(arrays) / d arrays[index] by central differences in float64."""
    base = [a.astype(np.float64) for a in arrays]
    x = base[index]
    grad = np.zeros_like(x)
    it = np.nditer(x, flags=["multi_index"])
    for _ in it:
        i = it.multi_index
        old = x[i]
        x[i] = old + eps
        fp = f(*base)
        x[i] = old - eps
        fm = f(*base)
        x[i] = old
        grad[i] = (fp - fm) / (2 * eps)
    return grad


def check_grads(pyrt_fn, numpy_fn, arrays, atol=2e-3, rtol=2e-3):
    """pyrt_fn(*tensors) -> scalar tensor; numpy_fn(*float64 arrays) -> float."""
    tensors = [pyrt.tensor(a, requires_grad=True) for a in arrays]
    out = pyrt_fn(*tensors)
    assert out.shape == () or out.numel() == 1
    np.testing.assert_allclose(float(out.item()), numpy_fn(*[a.astype(np.float64)
                                                            for a in arrays]),
                               rtol=1e-4, atol=1e-5)
    out.backward()
    for i, t in enumerate(tensors):
        want = numeric_grad(numpy_fn, arrays, i)
        np.testing.assert_allclose(t.grad._data, want, atol=atol, rtol=rtol,
                                   err_msg=f"gradient of input {i}")


def sigmoid64(x):
    return 1 / (1 + np.exp(-x))


UNARY = [
    (lambda t: t.exp(), np.exp, (-2, 2)),
    (lambda t: t.log(), np.log, (0.5, 3)),
    (lambda t: t.sqrt(), np.sqrt, (0.5, 3)),
    (lambda t: t.tanh(), np.tanh, (-2, 2)),
    (lambda t: t.sigmoid(), sigmoid64, (-3, 3)),
    (lambda t: t.relu(), lambda x: np.maximum(x, 0), (-2, 2)),
    (lambda t: -t, np.negative, (-2, 2)),
]


@pytest.mark.parametrize("op,ref,lohi", UNARY)
def test_unary_grads(op, ref, lohi):
    x = rng().uniform(*lohi, size=(3, 5)).astype(np.float32)
    if ref is not np.exp and lohi == (-2, 2):
        x[np.abs(x) < 0.05] = 0.3  # keep relu away from its kink
    w = rng().standard_normal((3, 5)).astype(np.float32)
    check_grads(lambda t: (op(t) * pyrt.tensor(w)).sum(), lambda a: (ref(a) * w).sum(), [x])


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div"])
@pytest.mark.parametrize("shapes", [((4, 3), (4, 3)), ((4, 3), (3,)), ((4, 3), (4, 1)),
                                    ((3,), (4, 3)), ((2, 4, 3), (3,))])
def test_binary_grads_with_broadcasting(name, shapes):
    r = rng()
    a = r.uniform(0.5, 2, size=shapes[0]).astype(np.float32)
    b = r.uniform(0.5, 2, size=shapes[1]).astype(np.float32)
    ops = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}
    check_grads(lambda x, y: getattr(F, name)(x, y).sum(), lambda x, y: ops[name](x, y).sum(),
                [a, b])


@pytest.mark.parametrize("scalar_left", [False, True])
@pytest.mark.parametrize("name", ["add", "sub", "mul", "div"])
def test_scalar_arithmetic(name, scalar_left):
    a = rng().uniform(0.5, 2, size=(3, 4)).astype(np.float32)
    ops = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}
    if scalar_left:
        check_grads(lambda x: getattr(F, name)(1.5, x).sum(),
                    lambda x: ops[name](1.5, x).sum(), [a])
    else:
        check_grads(lambda x: getattr(F, name)(x, 1.5).sum(),
                    lambda x: ops[name](x, 1.5).sum(), [a])


def test_matmul_grads():
    r = rng()
    a = r.standard_normal((5, 4)).astype(np.float32)
    b = r.standard_normal((4, 3)).astype(np.float32)
    w = r.standard_normal((5, 3)).astype(np.float32)
    check_grads(lambda x, y: ((x @ y) * pyrt.tensor(w)).sum(), lambda x, y: ((x @ y) * w).sum(),
                [a, b])


@pytest.mark.parametrize("act", [None, "relu", "sigmoid", "tanh"])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_grads(act, bias):
    r = rng()
    x = r.standard_normal((6, 4)).astype(np.float32)
    w = r.standard_normal((3, 4)).astype(np.float32)
    b = r.standard_normal(3).astype(np.float32)
    m = r.standard_normal((6, 3)).astype(np.float32)
    acts = {None: lambda z: z, "relu": lambda z: np.maximum(z, 0), "sigmoid": sigmoid64,
            "tanh": np.tanh}
    if bias:
        check_grads(lambda x_, w_, b_: (F.linear(x_, w_, b_, act) * pyrt.tensor(m)).sum(),
                    lambda x_, w_, b_: (acts[act](x_ @ w_.T + b_) * m).sum(), [x, w, b])
    else:
        check_grads(lambda x_, w_: (F.linear(x_, w_, None, act) * pyrt.tensor(m)).sum(),
                    lambda x_, w_: (acts[act](x_ @ w_.T) * m).sum(), [x, w])


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("kind", ["sum", "mean", "max"])
def test_reduction_grads(kind, axis, keepdims):
    x = rng().permutation(20).reshape(4, 5).astype(np.float32) / 7  # distinct: max is unique
    ref = {"sum": np.sum, "mean": np.mean, "max": np.max}[kind]
    out_shape = ref(x, axis=axis, keepdims=keepdims).shape
    w = rng().standard_normal(out_shape).astype(np.float32)

    def reduce(t):
        out = getattr(t, kind)(axis, keepdims)
        return out.values if kind == "max" and axis is not None else out  # max(dim): a pair

    check_grads(lambda t: (reduce(t) * pyrt.tensor(w)).sum(),
                lambda a: (ref(a, axis=axis, keepdims=keepdims) * w).sum(), [x])


@pytest.mark.parametrize("name,fn,ref", [
    ("abs", lambda t: t.abs(), np.abs),
    ("clamp", lambda t: t.clamp(-0.5, 0.7), lambda a: np.clip(a, -0.5, 0.7)),
    ("clamp min", lambda t: t.clamp(min=0.2), lambda a: np.maximum(a, 0.2)),
    ("clamp max", lambda t: t.clamp(max=0.2), lambda a: np.minimum(a, 0.2)),
    ("pow 3", lambda t: t.pow(3), lambda a: a ** 3),
    ("** 3", lambda t: t ** 3, lambda a: a ** 3),
    ("** 0.5 of |x|", lambda t: t.abs() ** 0.5, lambda a: np.abs(a) ** 0.5),
    ("** -1", lambda t: t ** -1, lambda a: a ** -1.0),
])
def test_abs_clamp_pow_values_and_grads(name, fn, ref):
    r = np.random.default_rng(3)
    # away from the kinks of abs and clamp and from 0, where x ** -1 blows up
    x = r.uniform(0.1, 1.0, (3, 4)).astype(np.float32) * r.choice([-1, 1], (3, 4))
    x[np.abs(np.abs(x) - 0.5) < 0.05] = 0.9
    x[np.abs(x - 0.7) < 0.05] = 0.9
    x[np.abs(x - 0.2) < 0.05] = 0.9
    w = r.standard_normal(x.shape).astype(np.float32)
    np.testing.assert_allclose(fn(pyrt.tensor(x)).numpy(), ref(x.astype(np.float64)),
                               rtol=1e-6, atol=1e-6)
    check_grads(lambda t: (fn(t) * pyrt.tensor(w)).sum(), lambda a: (ref(a) * w).sum(), [x],
                atol=1e-3, rtol=1e-3)


def test_softmax_and_log_softmax_grads():
    r = rng()
    x = r.standard_normal((4, 6)).astype(np.float32)
    w = r.standard_normal((4, 6)).astype(np.float32)

    def sm(a):
        e = np.exp(a - a.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    check_grads(lambda t: (t.softmax(-1) * pyrt.tensor(w)).sum(), lambda a: (sm(a) * w).sum(),
                [x])
    check_grads(lambda t: (t.log_softmax(-1) * pyrt.tensor(w)).sum(),
                lambda a: (np.log(sm(a)) * w).sum(), [x])


def test_loss_grads():
    r = rng()
    logits = r.standard_normal((8, 5)).astype(np.float32)
    labels = r.integers(0, 5, 8)

    def ce(a):
        m = a.max(axis=1, keepdims=True)
        lse = np.log(np.exp(a - m).sum(axis=1)) + m[:, 0]
        return (lse - a[np.arange(8), labels]).mean()

    check_grads(lambda t: F.cross_entropy(t, pyrt.tensor(labels)), ce, [logits])
    z = r.standard_normal((8, 1)).astype(np.float32)
    tgt = r.integers(0, 2, (8, 1)).astype(np.float32)
    check_grads(lambda t: F.binary_cross_entropy_with_logits(t, pyrt.tensor(tgt)),
                lambda a: (np.maximum(a, 0) - a * tgt + np.log1p(np.exp(-np.abs(a)))).mean(),
                [z])
    check_grads(lambda t: F.mse_loss(t, pyrt.tensor(tgt)), lambda a: ((a - tgt) ** 2).mean(),
                [z])


def test_reshape_transpose_index_grads():
    r = rng()
    x = r.standard_normal((4, 6)).astype(np.float32)
    w = r.standard_normal((6, 4)).astype(np.float32)
    check_grads(lambda t: (t.T * pyrt.tensor(w)).sum(), lambda a: (a.T * w).sum(), [x])
    w2 = r.standard_normal((3, 8)).astype(np.float32)
    check_grads(lambda t: (t.reshape(3, 8) * pyrt.tensor(w2)).sum(),
                lambda a: (a.reshape(3, 8) * w2).sum(), [x])
    idx = np.array([3, 0, 3])
    w3 = r.standard_normal((3, 6)).astype(np.float32)
    check_grads(lambda t: (t[idx] * pyrt.tensor(w3)).sum(), lambda a: (a[idx] * w3).sum(), [x])


def test_conv_and_pool_grads():
    r = rng()
    x = r.standard_normal((2, 2, 6, 6)).astype(np.float32)
    w = r.standard_normal((3, 2, 3, 3)).astype(np.float32)
    b = r.standard_normal(3).astype(np.float32)
    torch = pytest.importorskip("torch")
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    ref = torch.nn.functional.max_pool2d(
        torch.nn.functional.conv2d(tx, tw, tb, padding=1).relu(), 2).sum()
    ref.backward()
    px, pw, pb = (pyrt.tensor(a, requires_grad=True) for a in (x, w, b))
    out = F.max_pool2d(F.conv2d(px, pw, pb, padding=1).relu(), 2).sum()
    out.backward()
    np.testing.assert_allclose(out.item(), ref.item(), rtol=1e-5)
    for p, t in ((px, tx), (pw, tw), (pb, tb)):
        np.testing.assert_allclose(p.grad._data, t.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_gradient_accumulates_over_uses_and_calls():
    x = pyrt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (x * x + x).sum().backward()
    np.testing.assert_allclose(x.grad._data, [3.0, 5.0, 7.0])
    (x * 2.0).sum().backward()
    np.testing.assert_allclose(x.grad._data, [5.0, 7.0, 9.0])


def test_backward_of_a_leaf_accumulates_the_given_gradient():
    x = pyrt.tensor([1.0, 2.0], requires_grad=True)
    g = np.array([0.5, -1.0], np.float32)
    x.backward(g)
    x.backward(g)
    np.testing.assert_array_equal(x.grad._data, [1.0, -2.0])
    np.testing.assert_array_equal(g, [0.5, -1.0])  # the caller's array is not accumulated into


def test_requires_grad_of_a_computed_tensor_cannot_be_turned_off():
    x = pyrt.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2.0
    with pytest.raises(RuntimeError, match="leaf variables"):
        y.requires_grad_(False)
    assert x.requires_grad_(False) is x and not x.requires_grad


def test_shared_gradient_arrays_are_not_aliased():
    # a + b passes one gradient array to both inputs: their .grad must not share memory
    a = pyrt.tensor([1.0, 2.0], requires_grad=True)
    b = pyrt.tensor([3.0, 4.0], requires_grad=True)
    (a + b).sum().backward()
    a.grad._data[0] = 100.0
    assert b.grad._data[0] == 1.0


def test_no_grad_records_nothing():
    x = pyrt.tensor([1.0, 2.0], requires_grad=True)
    with pyrt.no_grad():
        y = x * 2.0
    assert not y.requires_grad and y.is_leaf

    @pyrt.no_grad()
    def f(t):
        return t * 3.0

    assert not f(x).requires_grad
    assert (x * 2.0).requires_grad


def test_backward_errors():
    x = pyrt.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="scalar outputs"):
        (x * 2.0).backward()
    with pytest.raises(RuntimeError, match="does not require grad"):
        pyrt.tensor([1.0]).backward()
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="second time"):
        y.backward()
    with pytest.raises(ValueError, match="gradient has shape"):
        (x * 2.0).backward(np.ones(3, np.float32))


def test_tensor_creation_and_conversion():
    t = pyrt.tensor([[1, 2], [3, 4]])
    assert t.dtype == np.int64
    f = pyrt.tensor([[1.0, 2.0]])
    assert f.dtype == np.float32 and f.shape == (1, 2)
    assert pyrt.tensor(np.float64(2.5)).item() == 2.5
    with pytest.raises(RuntimeError, match="floating point"):
        pyrt.tensor([1, 2], requires_grad=True)
    if not cuda.is_available():
        with pytest.raises(RuntimeError, match="cuda"):
            pyrt.tensor([1.0], device="cuda")
    with pytest.raises(ValueError, match="device"):
        pyrt.tensor([1.0], device="tpu")
    data = np.arange(3, dtype=np.float32)
    assert pyrt.tensor(data)._data is not data  # tensor() copies
    assert pyrt.from_numpy(data)._data is data  # from_numpy shares
    assert pyrt.zeros(2, 3).shape == (2, 3) and pyrt.ones((4,))._data.sum() == 4
    assert "requires_grad=True" in repr(pyrt.zeros(2, requires_grad=True))


def test_manual_seed_makes_randn_repeatable():
    pyrt.manual_seed(7)
    a = pyrt.randn(3, 4)._data.copy()
    pyrt.manual_seed(7)
    np.testing.assert_array_equal(a, pyrt.randn(3, 4)._data)
    with pytest.raises(ValueError):
        pyrt.manual_seed(-1)


def test_against_torch_on_a_small_graph():
    torch = pytest.importorskip("torch")
    r = rng()
    x = r.standard_normal((5, 4)).astype(np.float32)
    w = r.standard_normal((3, 4)).astype(np.float32)
    b = r.standard_normal(3).astype(np.float32)
    labels = r.integers(0, 3, 5)
    tw, tb = torch.tensor(w, requires_grad=True), torch.tensor(b, requires_grad=True)
    tl = torch.nn.functional.cross_entropy(torch.tanh(torch.tensor(x) @ tw.T + tb) * 2.0,
                                           torch.tensor(labels))
    tl.backward()
    pw, pb = pyrt.tensor(w, requires_grad=True), pyrt.tensor(b, requires_grad=True)
    pl = F.cross_entropy(F.linear(pyrt.tensor(x), pw, pb, "tanh") * 2.0, pyrt.tensor(labels))
    pl.backward()
    np.testing.assert_allclose(pl.item(), tl.item(), rtol=1e-5)
    np.testing.assert_allclose(pw.grad._data, tw.grad.numpy(), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(pb.grad._data, tb.grad.numpy(), rtol=1e-4, atol=1e-6)


def test_no_grad_decorator_is_reentrant():
    @pyrt.no_grad()
    def recurse(n):
        assert not pyrt.is_grad_enabled()
        return 0 if n == 0 else recurse(n - 1)

    recurse(3)
    assert pyrt.is_grad_enabled()


def test_backward_never_keeps_a_view_of_the_callers_gradient():
    # reshape's backward hands back a view of the gradient it gets; with the gradient the
    # caller passed, that view must not become w.grad, or the next backward would add into
    # the caller's array
    w = pyrt.tensor(np.ones(3), requires_grad=True)
    g = np.ones((1, 3), np.float32)
    w.reshape((1, 3)).backward(g)
    w.reshape((1, 3)).backward(g)
    np.testing.assert_array_equal(g, np.ones((1, 3), np.float32))
    np.testing.assert_array_equal(w.grad._data, [2.0, 2.0, 2.0])


# ---- grad mode, retain_graph, 0-d tensors ----------------------------------------------------


def test_set_grad_enabled_applies_when_called():
    torch = pytest.importorskip("torch")
    try:
        for lib in (pyrt, torch):
            lib.set_grad_enabled(False)  # a plain call switches recording off, as in torch
            assert not lib.is_grad_enabled()
            lib.set_grad_enabled(True)
            assert lib.is_grad_enabled()
            with lib.set_grad_enabled(False):
                assert not lib.is_grad_enabled()
            assert lib.is_grad_enabled()
            guard = lib.no_grad()  # no_grad applies on entering only
            assert lib.is_grad_enabled()
            with guard:
                assert not lib.is_grad_enabled()

            @lib.set_grad_enabled(False)
            def recording(lib=lib):
                return lib.is_grad_enabled()

            assert lib.is_grad_enabled()  # decorating applies nothing
            assert recording() is False and lib.is_grad_enabled()
    finally:
        pyrt.set_grad_enabled(True)
    x = pyrt.tensor([1.0], requires_grad=True)
    with pyrt.set_grad_enabled(False):
        assert not (x * 2.0).requires_grad


def test_retain_graph_lets_a_shared_trunk_backward_twice():
    torch = pytest.importorskip("torch")
    r = rng()
    x, w = r.standard_normal((3, 4)).astype(np.float32), r.standard_normal(4).astype(np.float32)
    labels = np.array([0, 2, 3])
    grads = []
    for lib in (pyrt, torch):
        tx, tw = lib.tensor(x, requires_grad=True), lib.tensor(w, requires_grad=True)
        trunk = (tx * tw).tanh()
        trunk.sum().backward(retain_graph=True)
        (trunk * trunk).sum().backward(retain_graph=True)
        # a loss whose backward returns the gradient it saved, straight to a fresh leaf:
        # run three times, the leaf's .grad must not be that saved array, added to in place
        tz = lib.tensor(x, requires_grad=True)
        ce = F.cross_entropy if lib is pyrt else torch.nn.functional.cross_entropy
        loss = ce(tz, lib.tensor(labels))
        for _ in range(3):
            loss.backward(retain_graph=True)
        grads.append([t.grad.detach().numpy() for t in (tx, tw, tz)])
    for ours, theirs in zip(*grads):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


def test_backward_without_retain_graph_frees_it_and_create_graph_records_it():
    x = pyrt.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=False, create_graph=False)
    with pytest.raises(RuntimeError, match="second time"):
        y.backward()
    x.grad = None
    (x * x * x).sum().backward(create_graph=True)  # x.grad = 3x^2, with a graph
    np.testing.assert_allclose(x.grad.detach().numpy(), [3.0, 12.0])
    g = x.grad
    x.grad = None
    g.sum().backward()  # d(sum 3x^2)/dx = 6x
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 12.0])
    with pytest.raises(NotImplementedError, match="ScatterReduceBackward0"):
        x.scatter_reduce(0, pyrt.tensor([0]), x, "prod").sum().backward(create_graph=True)


def test_zero_d_tensors_keep_shape_in_gradients():
    torch = pytest.importorskip("torch")
    vec = np.array([1.0, 2.0], np.float32)
    mat = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    cases = [
        (lambda m, s: (s * m.tensor(vec)).mean(), 3.0),
        (lambda m, s: s.sum(), 3.0),
        (lambda m, s: (s + m.tensor(vec)).sum(), 3.0),
        (lambda m, s: m.stack([s, s * 2.0]).sum(), 3.0),
        (lambda m, s: s.unsqueeze(0).squeeze().mean(), 3.0),
        (lambda m, s: s[1, 1].sum() + s[0].sum(), mat),
        (lambda m, s: (s.sum(1) * m.tensor(vec)).sum(), mat),
    ]
    for fn, value in cases:
        p = pyrt.tensor(value, requires_grad=True)
        q = torch.tensor(value, requires_grad=True)
        yp, yq = fn(pyrt, p), fn(torch, q)
        assert yp.shape == tuple(yq.shape)
        yp.backward()
        yq.backward()
        assert p.grad.shape == tuple(q.grad.shape)
        np.testing.assert_allclose(p.grad._data, q.grad.numpy(), rtol=1e-6)
    # a 0-d gradient passed to backward stays 0-d
    s = pyrt.tensor(2.0, requires_grad=True)
    (s * 3.0).backward(np.float32(2.0))
    assert s.grad.shape == () and s.grad.item() == 6.0


# ---- losses against a target that requires grad ----------------------------------------------


def bce_logits64(z, t):
    return np.mean(np.maximum(z, 0) - z * t + np.log1p(np.exp(-np.abs(z))))


@pytest.mark.parametrize("name", ["mse", "bce"])
def test_loss_gradient_reaches_a_target_that_requires_grad(name):
    torch = pytest.importorskip("torch")
    r = rng()
    z = r.standard_normal((3, 4)).astype(np.float32)
    t = r.uniform(0.1, 0.9, (3, 4)).astype(np.float32)
    ours = F.mse_loss if name == "mse" else F.binary_cross_entropy_with_logits
    ref = (lambda a, b: np.mean((a - b) ** 2)) if name == "mse" else bce_logits64
    check_grads(ours, ref, [z, t])  # finite differences for both arguments
    theirs = (torch.nn.functional.mse_loss if name == "mse"
              else torch.nn.functional.binary_cross_entropy_with_logits)
    for input_grad in (True, False):  # and the target alone
        pz, pt = pyrt.tensor(z, requires_grad=input_grad), pyrt.tensor(t, requires_grad=True)
        qz, qt = torch.tensor(z, requires_grad=input_grad), torch.tensor(t, requires_grad=True)
        (ours(pz, pt) * 3.0).backward()
        (theirs(qz, qt) * 3.0).backward()
        np.testing.assert_allclose(pt.grad._data, qt.grad.numpy(), rtol=1e-5, atol=1e-7)
        if input_grad:
            np.testing.assert_allclose(pz.grad._data, qz.grad.numpy(), rtol=1e-5, atol=1e-7)
        else:
            assert pz.grad is None
    # a target that does not require grad gets nothing, as before
    pz, pt = pyrt.tensor(z, requires_grad=True), pyrt.tensor(t)
    ours(pz, pt).backward()
    assert pt.grad is None and pz.grad is not None


def test_promoted_operands_pass_gradients_to_float_ones():
    torch = pytest.importorskip("torch")
    x = rng().standard_normal(5).astype(np.float32)
    counts = np.array([1, 0, 2, 3, 1])
    for fn in (lambda m, t: t * (t > 0), lambda m, t: (t + m.tensor(counts)) / m.tensor(counts + 1),
               lambda m, t: m.tensor(counts) - t * (t < 0.5)):
        p, q = pyrt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        yp, yq = fn(pyrt, p), fn(torch, q)
        assert yp.dtype == np.float32 and yp.requires_grad
        np.testing.assert_allclose(yp.detach().numpy(), yq.detach().numpy(), rtol=1e-6)
        (yp * pyrt.tensor(x)).sum().backward()
        (yq * torch.tensor(x)).sum().backward()
        np.testing.assert_allclose(p.grad._data, q.grad.numpy(), rtol=1e-6, atol=1e-7)


# ---- in-place writes between forward and backward ------------------------------------------


def _w():
    return pyrt.tensor([1.0, 2.0], requires_grad=True)


def test_an_input_written_in_place_after_its_use_stops_backward():
    # as PyTorch's version counters do: the gradient would be computed from the new values
    w, x = _w(), pyrt.tensor([3.0, 4.0])
    y = (x * w).sum()
    x.mul_(10)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_a_detached_alias_written_in_place_stops_backward():
    w = _w()
    alias = w.detach()
    z = (w * w).sum()
    alias.mul_(0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()


def test_a_parameter_stepped_before_backward_stops_it():
    pyrt.manual_seed(0)
    model = pyrt.nn.Linear(3, 2)
    opt = pyrt.optim.SGD(model.parameters(), lr=0.1)
    x = pyrt.randn(4, 3)
    model(x).sum().backward()
    out = model(x).sum()  # a forward pass, then the weights change under it
    opt.step()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()
    w = _w()  # writes under no_grad count too
    z = (w * w * w).sum()
    with pyrt.no_grad():
        w.mul_(0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()


def test_writes_that_no_backward_reads_are_allowed():
    # sums, reshapes and indexing read only shapes; writes after backward, or before the
    # forward, are fine; a training loop steps after backward
    w, x = _w(), pyrt.tensor([3.0, 4.0])
    y = (w + x).sum() + w.reshape(2, 1)[0].sum()
    x.mul_(10)
    y.backward()
    np.testing.assert_array_equal(w.grad.numpy(), [2.0, 1.0])
    w = _w()  # a product with a number reads only the number
    z = (w * 3 / 2).sum()
    with pyrt.no_grad():
        w.mul_(0)
    z.backward()
    np.testing.assert_array_equal(w.grad.numpy(), [1.5, 1.5])
    pyrt.manual_seed(0)
    model = pyrt.nn.Sequential(pyrt.nn.Linear(3, 4), pyrt.nn.ReLU(), pyrt.nn.Linear(4, 1))
    opt = pyrt.optim.Adam(model.parameters())
    x = pyrt.randn(5, 3)
    for _ in range(3):
        loss = (model(x) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    x.add_(1.0)
    model(x).sum().backward()


def test_a_sum_over_dims_of_size_one_leaves_a_writable_grad():
    # its gradient is a broadcast of the incoming one: a leaf must not keep the read-only
    # view as .grad, where the next backward adds in place
    b = pyrt.nn.Parameter(pyrt.zeros(1))
    (b.sum() * 2).backward()
    (b.sum() * 2).backward()
    np.testing.assert_array_equal(b.grad.numpy(), [4.0])
    b.grad.zero_()
    m = pyrt.nn.Linear(3, 1)
    loss = (m(pyrt.ones(4, 3)) ** 2).mean() + 0.01 * m.bias.sum()
    loss.backward()
    x = pyrt.ones(4, 1, requires_grad=True)
    (x.sum(dim=1).sum() + x.sum(dim=1).sum()).backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((4, 1), 2.0))


def test_max_of_the_whole_tensor_shares_the_gradient_among_ties():
    torch = pytest.importorskip("torch")
    values = [[1.0, 3.0, 3.0], [2.0, 2.0, 1.0]]
    for name in ("max", "min"):
        x = pyrt.tensor(values, requires_grad=True)
        getattr(x, name)().backward()
        t = torch.tensor(values, requires_grad=True)
        getattr(t, name)().backward()
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy())


@pytest.mark.parametrize("dims", [(0, 2), [1], (-1, 0), (0, 1, 2)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_max_over_several_dims_shares_the_gradient_among_ties_as_amax(dims, keepdim):
    torch = pytest.importorskip("torch")
    r = np.random.default_rng(3)
    values = r.integers(0, 3, (3, 4, 5)).astype(np.float32)  # many ties
    x = pyrt.tensor(values, requires_grad=True)
    y = F.max(x, dims, keepdim)
    g = r.standard_normal(y.shape).astype(np.float32)
    y.backward(pyrt.tensor(g))
    t = torch.tensor(values, requires_grad=True)
    ty = torch.amax(t, dim=dims, keepdim=keepdim)
    ty.backward(torch.tensor(g))
    np.testing.assert_array_equal(y.detach().numpy(), ty.detach().numpy())
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-6)


def test_sum_and_mean_over_no_dims_reduce_everything():
    torch = pytest.importorskip("torch")
    values = [[1.0, 2.0], [3.0, 4.0]]
    for name in ("sum", "mean"):
        x = pyrt.tensor(values, requires_grad=True)
        t = torch.tensor(values, requires_grad=True)
        got, want = getattr(x, name)(dim=()), getattr(t, name)(dim=())
        assert got.shape == tuple(want.shape)
        np.testing.assert_allclose(got.item(), want.item())
        got.backward()
        want.backward()
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy())


def test_grad_mode_decorators_apply_inside_generators():
    x = pyrt.tensor([1.0], requires_grad=True)

    @pyrt.no_grad()
    def without():
        yield (x * 2).requires_grad
        yield pyrt.is_grad_enabled()

    @pyrt.enable_grad()
    def with_grad():
        yield (x * 2).requires_grad

    assert list(without()) == [False, False]
    gen = without()
    next(gen)
    assert pyrt.is_grad_enabled()  # the caller's mode between the steps
    gen.close()
    with pyrt.no_grad():
        assert list(with_grad()) == [True]

    @pyrt.no_grad()
    def echo():
        got = yield 1
        return got

    gen = echo()
    next(gen)
    with pytest.raises(StopIteration) as stop:
        gen.send("sent")
    assert stop.value.value == "sent"
