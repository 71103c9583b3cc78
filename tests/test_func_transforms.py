"""pyrt.func (vmap, grad, grad_and_value, vjp, jvp, jacrev, jacfwd, functional_call,
stack_module_state) against loops, finite differences and torch.func."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
import pyrt.func as pf

try:
    import torch
    import torch.func as tf
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")
SETTINGS = settings(max_examples=20, deadline=None, derandomize=True)


def arr(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def close(a, b, tol=1e-5):
    a = a.data if isinstance(a, pyrt.Tensor) else a
    b = b.detach().numpy() if torch is not None and isinstance(b, torch.Tensor) else b
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def f_np(x, y):  # the function of the vmap tests, in float64
    return np.sin(x) * y.sum() + x ** 2


def f_pyrt(x, y):
    return x.sin() * y.sum() + x * x


# ---- vmap ------------------------------------------------------------------------------------


@SETTINGS
@given(st.integers(1, 4), st.integers(1, 3), st.integers(1, 3), st.integers(0, 1),
       st.integers(-2, 1), st.integers(0, 2**16))
def test_vmap_matches_loop_and_torch(batch, n, k, x_dim, out_dim, seed):
    rng = np.random.default_rng(seed)
    x = arr(rng, *((batch, n) if x_dim == 0 else (n, batch)))
    y = arr(rng, batch, k)
    got = pf.vmap(f_pyrt, in_dims=(x_dim, 0), out_dims=out_dim)(pyrt.tensor(x), pyrt.tensor(y))
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    rows = [f_np(np.take(x64, i, axis=x_dim), y64[i]) for i in range(batch)]
    close(got, np.stack(rows, axis=out_dim), 1e-5)
    if torch is not None:
        want = tf.vmap(lambda a, b: a.sin() * b.sum() + a * a, in_dims=(x_dim, 0),
                       out_dims=out_dim)(torch.tensor(x), torch.tensor(y))
        close(got, want)


def test_vmap_nested_containers_and_out_dims():
    rng = np.random.default_rng(0)
    a, b, c = arr(rng, 3, 2), arr(rng, 2), arr(rng, 4, 3)

    def func(d, t):
        return {"s": d["a"] * d["b"]}, (t.sum(), t * 2)

    in_dims = ({"a": 0, "b": None}, 1)
    out_dims = ({"s": 1}, (0, 1))
    got = pf.vmap(func, in_dims=in_dims, out_dims=out_dims)(
        {"a": pyrt.tensor(a), "b": pyrt.tensor(b)}, pyrt.tensor(c))
    assert set(got[0]) == {"s"} and isinstance(got[1], tuple)
    close(got[0]["s"], (a * b).T)
    close(got[1][0], c.sum(0))
    close(got[1][1], c * 2)
    if torch is not None:
        want = tf.vmap(func, in_dims=in_dims, out_dims=out_dims)(
            {"a": torch.tensor(a), "b": torch.tensor(b)}, torch.tensor(c))
        close(got[0]["s"], want[0]["s"])
        close(got[1][1], want[1][1])


def test_vmap_unbatched_output_kwargs_nested_and_empty():
    x = pyrt.tensor(np.arange(6, dtype=np.float32).reshape(3, 2))
    ones, y = pf.vmap(lambda a: (pyrt.ones(2), a + 1), out_dims=(None, 0))(x)
    close(ones, np.ones(2))
    close(y, x.data + 1)
    close(pf.vmap(lambda a, scale=1.0: a * scale)(x, scale=3.0), x.data * 3)
    # nested vmap: an outer product
    u, v = pyrt.tensor([1.0, 2.0]), pyrt.tensor([3.0, 4.0, 5.0])
    outer = pf.vmap(pf.vmap(lambda p, q: p * q, in_dims=(None, 0)), in_dims=(0, None))(u, v)
    close(outer, np.outer([1, 2], [3, 4, 5]))
    empty = pf.vmap(lambda a: a.sum(0, keepdim=True), out_dims=1)(pyrt.zeros(0, 4))
    assert empty.shape == (1, 0)
    assert pyrt.vmap(lambda a: a * 2)(x).shape == (3, 2)


def test_vmap_gradient_flows_through():
    x = pyrt.tensor(np.arange(6, dtype=np.float32).reshape(3, 2), requires_grad=True)
    pf.vmap(lambda a: (a * a).sum())(x).sum().backward()
    close(x.grad, 2 * x.data)


def test_vmap_randomness_modes():
    x = pyrt.zeros(3, 4)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        pf.vmap(lambda a: a + pyrt.rand(4))(x)
    pyrt.manual_seed(0)
    same = pf.vmap(lambda a: a + pyrt.rand(4), randomness="same")(x)
    np.testing.assert_array_equal(same.data[0], same.data[1])
    np.testing.assert_array_equal(same.data[0], same.data[2])
    pyrt.manual_seed(0)
    first = pyrt.rand(4)
    close(same[0], first)  # the draws of one call
    pyrt.manual_seed(0)
    different = pf.vmap(lambda a: a + pyrt.rand(4), randomness="different")(x)
    pyrt.manual_seed(0)
    loop = np.stack([pyrt.rand(4).data for _ in range(3)])
    np.testing.assert_array_equal(different.data, loop)
    assert not np.array_equal(different.data[0], different.data[1])
    assert pyrt.rand(1).shape == (1,)  # the generator is back after the refusal


@pytest.mark.parametrize("call, error, match", [
    (lambda: pf.vmap(lambda a, b: a + b)(pyrt.zeros(3, 4), pyrt.zeros(2, 4)), ValueError,
     "same size in the mapped dimension"),
    (lambda: pf.vmap(lambda a: a, in_dims=(0, 0))(pyrt.zeros(3)), ValueError,
     "not compatible with the structure"),
    (lambda: pf.vmap(lambda a: a, in_dims=(3,))(pyrt.zeros(3, 4)), ValueError,
     "expected in_dim to satisfy -2 <= in_dim < 2"),
    (lambda: pf.vmap(lambda a: a)(3), ValueError, "We cannot vmap over non-Tensor"),
    (lambda: pf.vmap(lambda a: a, in_dims=None)(pyrt.zeros(3)), ValueError,
     "expected `in_dims` to be int"),
    (lambda: pf.vmap(lambda a: a, in_dims=(None,))(pyrt.zeros(3)), ValueError,
     "at least one input"),
    (lambda: pf.vmap(lambda a: a)(), ValueError, "got no inputs"),
    (lambda: pf.vmap(lambda a: 3)(pyrt.zeros(3)), ValueError, "must only return Tensors"),
    (lambda: pf.vmap(lambda a: a, out_dims=None)(pyrt.arange(3.0)), ValueError,
     "can not return a BatchedTensor"),
    (lambda: pf.vmap(lambda a: a, out_dims=(0, 0))(pyrt.zeros(3)), ValueError,
     "out_dims is not compatible"),
    (lambda: pf.vmap(lambda a: a, chunk_size=0), ValueError, "chunk_size should be None"),
    (lambda: pf.vmap(lambda a: a, randomness="foo"), RuntimeError,
     "Only allowed values for randomness"),
])
def test_vmap_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


# ---- grad, grad_and_value, vjp, jvp, jacrev, jacfwd ------------------------------------------


def loss_pyrt(w, x):
    return ((x @ w).tanh() ** 2).sum()


def loss_np(w, x):
    return (np.tanh(x @ w) ** 2).sum()


def finite_difference(func, w, x, eps=1e-6):
    w = w.astype(np.float64)
    out = np.zeros_like(w)
    for idx in np.ndindex(w.shape):
        up, down = w.copy(), w.copy()
        up[idx] += eps
        down[idx] -= eps
        out[idx] = (func(up, x) - func(down, x)) / (2 * eps)
    return out


@SETTINGS
@given(st.integers(1, 4), st.integers(1, 3), st.integers(1, 3), st.integers(0, 2**16))
def test_grad_matches_finite_differences_and_torch(m, n, k, seed):
    rng = np.random.default_rng(seed)
    w, x = arr(rng, n, k), arr(rng, m, n)
    g = pf.grad(loss_pyrt)(pyrt.tensor(w), pyrt.tensor(x))
    close(g, finite_difference(loss_np, w, x.astype(np.float64)), 1e-4)
    g_w, g_x = pf.grad(loss_pyrt, argnums=(0, 1))(pyrt.tensor(w), pyrt.tensor(x))
    close(g_w, g.data)
    (_g2, value) = pf.grad_and_value(loss_pyrt)(pyrt.tensor(w), pyrt.tensor(x))
    close(value, loss_np(w, x), 1e-4)
    if torch is not None:
        want = tf.grad(lambda a, b: ((b @ a).tanh() ** 2).sum(), argnums=(0, 1))(
            torch.tensor(w), torch.tensor(x))
        close(g_w, want[0])
        close(g_x, want[1])


def test_grad_pytree_argument_and_aux():
    rng = np.random.default_rng(1)
    params = {"w": arr(rng, 3, 2), "b": arr(rng, 2)}
    x = arr(rng, 4, 3)

    def loss(p, inp):
        out = inp @ p["w"] + p["b"]
        return (out * out).mean(), out

    g, aux = pf.grad(loss, has_aux=True)({k: pyrt.tensor(v) for k, v in params.items()},
                                         pyrt.tensor(x))
    assert set(g) == {"w", "b"} and aux.shape == (4, 2)
    out = x @ params["w"] + params["b"]
    close(g["b"], 2 * out.sum(0) / out.size)
    close(g["w"], 2 * x.T @ out / out.size)
    # an argument the output does not depend on gets zeros
    close(pf.grad(lambda a, b: (b * b).sum(), argnums=0)(pyrt.ones(2), pyrt.ones(3)),
          np.zeros(2))


@pytest.mark.parametrize("call, error, match", [
    (lambda: pf.grad(lambda a: a)(pyrt.ones(3)), RuntimeError, "return a scalar Tensor"),
    (lambda: pf.grad(lambda a: 3.0)(pyrt.ones(3)), RuntimeError, "return a Tensor"),
    (lambda: pf.grad(lambda a: a.sum(), argnums=2)(pyrt.ones(3)), RuntimeError,
     "Got argnum=2, but only 1 positional inputs"),
    (lambda: pf.grad(lambda a: a.sum(), argnums="a")(pyrt.ones(3)), RuntimeError,
     "argnums must be int"),
    (lambda: pf.grad(lambda a: a.sum(), argnums=())(pyrt.ones(3)), RuntimeError,
     "non-empty"),
    (lambda: pf.grad(lambda a: a.sum(), argnums=(0, 0))(pyrt.ones(3)), RuntimeError,
     "unique"),
    (lambda: pf.grad(lambda a: a.sum(), has_aux=True)(pyrt.ones(3)), RuntimeError,
     r"\(output, aux\)"),
    (lambda: pf.grad(lambda a: a.sum())(pyrt.tensor([1, 2])), RuntimeError,
     "floating point"),
    (lambda: pf.grad(lambda a: a.sum())(3.0), ValueError, "must be Tensor"),
    (lambda: pf.hessian(lambda a: a.scatter_reduce(0, pyrt.tensor([0]), a, "prod").sum() ** 2)(
        pyrt.ones(3)), NotImplementedError,
     "'ScatterReduceBackward0' is not implemented for create_graph=True"),
    (lambda: pf.grad(pf.grad(lambda a: (a.reshape(1).scatter_reduce(
        0, pyrt.tensor([0]), a.reshape(1), "prod") ** 3).sum()))(pyrt.tensor(2.0)),
     NotImplementedError, "'ScatterReduceBackward0' is not implemented"),
    (lambda: pf.jacrev(lambda a: a, chunk_size=0), ValueError, "chunk_size"),
    (lambda: pf.jacfwd(lambda a: a, randomness="x"), RuntimeError, "randomness"),
    (lambda: pf.jacfwd(lambda a: a + pyrt.rand(2))(pyrt.ones(2)), RuntimeError,
     "randomness error mode"),
])
def test_transform_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_vjp_against_definition_and_torch():
    rng = np.random.default_rng(2)
    x, cot = arr(rng, 3, 4), arr(rng, 3, 4)
    out, fn = pf.vjp(lambda a: (a * a, {"k": a.sum()}), pyrt.tensor(x))
    close(out[0], x * x)
    for _ in range(2):  # vjp_fn may be called again
        (g,) = fn((pyrt.tensor(cot), {"k": pyrt.tensor(2.0)}))
        close(g, 2 * x * cot + 2.0)
    with pytest.raises(RuntimeError, match="pytree structure of cotangents"):
        fn(pyrt.tensor(cot))
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        fn((pyrt.ones(3, 3), {"k": pyrt.tensor(1.0)}))
    with pytest.raises(RuntimeError, match="only tensors"):
        pf.vjp(lambda a: 3, pyrt.tensor(x))
    if torch is not None:
        _, tfn = tf.vjp(lambda a: (a * a, {"k": a.sum()}), torch.tensor(x))
        close(g, tfn((torch.tensor(cot), {"k": torch.tensor(2.0)}))[0])


def test_jacobians_and_jvp_against_torch():
    rng = np.random.default_rng(3)
    a, b = arr(rng, 3, 2), arr(rng, 3, 2)

    def func(p, q):
        return {"prod": p * q.sin(), "total": (p @ q.mT).sum()}

    for transform in (pf.jacrev, pf.jacfwd):
        jac = transform(func, argnums=(0, 1))(pyrt.tensor(a), pyrt.tensor(b))
        assert jac["prod"][0].shape == (3, 2, 3, 2)
        assert jac["total"][1].shape == (3, 2)
        # the definition: d(p * sin q)/dp is diagonal with sin q
        close(jac["prod"][0].data.reshape(6, 6), np.diag(np.sin(b).reshape(-1)))
        close(jac["total"][0], np.tile(b.sum(0), (3, 1)))
        if torch is not None:
            want = tf.jacrev(func, argnums=(0, 1))(torch.tensor(a), torch.tensor(b))
            for key in ("prod", "total"):
                for i in (0, 1):
                    close(jac[key][i], want[key][i])
    jac, aux = pf.jacrev(lambda p: (p * 2, p), has_aux=True)(pyrt.tensor(a))
    close(aux, a)
    _values, product = pf.jvp(lambda p: p.sin() * 2, (pyrt.tensor(a),), (pyrt.tensor(b),))
    close(product, 2 * np.cos(a) * b)
    if torch is not None:
        _, want = tf.jvp(lambda p: p.sin() * 2, (torch.tensor(a),), (torch.tensor(b),))
        close(product, want)


# ---- functional_call, stack_module_state and per-sample gradients ---------------------------


def make_model(seed):
    pyrt.manual_seed(seed)
    return pyrt.nn.Sequential(pyrt.nn.Linear(4, 5), pyrt.nn.Tanh(), pyrt.nn.Linear(5, 3))


def test_per_sample_gradients_match_loop():
    model = make_model(0)
    rng = np.random.default_rng(4)
    data, targets = arr(rng, 6, 4), rng.integers(0, 3, 6)
    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}

    def compute_loss(p, b, sample, target):
        out = pf.functional_call(model, (p, b), (sample.unsqueeze(0),))
        return pyrt.nn.functional.cross_entropy(out, target.unsqueeze(0))

    per_sample = pf.vmap(pf.grad(compute_loss), in_dims=(None, None, 0, 0))(
        params, buffers, pyrt.tensor(data), pyrt.tensor(targets))
    for i in range(6):
        model.zero_grad()
        loss = pyrt.nn.functional.cross_entropy(model(pyrt.tensor(data[i:i + 1])),
                                                pyrt.tensor(targets[i:i + 1]))
        loss.backward()
        for name, param in model.named_parameters():
            close(per_sample[name][i], param.grad, 1e-5)
    assert all(p.grad is not None for p in model.parameters())  # the loop's, not vmap's


def test_functional_call_and_stack_module_state():
    model = pyrt.nn.Linear(2, 3)
    x = pyrt.ones(2)
    out = pf.functional_call(model, ({"weight": pyrt.ones(3, 2)}, {"bias": pyrt.zeros(3)}), x)
    close(out, np.full(3, 2.0))
    with pytest.raises(ValueError, match="appeared in multiple dictionaries"):
        pf.functional_call(model, ({"weight": pyrt.ones(3, 2)}, {"weight": pyrt.ones(3, 2)}), x)
    with pytest.raises(ValueError, match="Expected parameter_and_buffer_dicts"):
        pf.functional_call(model, 3, x)
    models = [make_model(s) for s in range(4)]
    params, buffers = pf.stack_module_state(models)
    assert params["0.weight"].shape == (4, 5, 4) and buffers == {}
    assert params["0.weight"].requires_grad and params["0.weight"].is_leaf
    inp = pyrt.tensor(arr(np.random.default_rng(5), 2, 4))
    ensemble = pf.vmap(lambda p, b, v: pf.functional_call(models[0], (p, b), (v,)),
                       in_dims=(0, 0, None))(params, buffers, inp)
    for i, m in enumerate(models):
        close(ensemble[i], m(inp).detach())
    with pytest.raises(RuntimeError, match="at least one model"):
        pf.stack_module_state([])
    with pytest.raises(RuntimeError, match="same training/eval mode"):
        pf.stack_module_state([make_model(0), make_model(1).eval()])
    with pytest.raises(RuntimeError, match="same class"):
        pf.stack_module_state([pyrt.nn.Linear(2, 3), pyrt.nn.Tanh()])
