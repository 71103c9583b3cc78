"""Module backward hooks (register_full_backward_hook, register_full_backward_pre_hook and
the deprecated register_backward_hook) against torch.nn on the same weights and against
NumPy formulas: what the hooks see, what their return values replace, their order, removal,
and hooks on layers that Sequential would otherwise fuse."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
from pyrt import nn

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="needs torch")
F32 = np.float32


def arrays(grads):
    return [None if g is None else g.detach().numpy().copy() for g in grads]


def copy_weights(ours, theirs):
    with torch.no_grad():
        for p, q in zip(ours.parameters(), theirs.parameters()):
            q.copy_(torch.from_numpy(p.detach().numpy()))


def twin_mlps(lib_layers, seed=0):
    pyrt.manual_seed(seed)
    ours = nn.Sequential(*lib_layers(pyrt))
    theirs = torch.nn.Sequential(*lib_layers(torch))
    copy_weights(ours, theirs)
    return ours, theirs


def mlp_layers(lib):
    return [lib.nn.Linear(3, 5), lib.nn.ReLU(), lib.nn.Linear(5, 4), lib.nn.Tanh(),
            lib.nn.Linear(4, 2)]


@settings(max_examples=12, deadline=None)
@given(st.integers(1, 6), st.integers(1, 5), st.integers(1, 5), st.integers(0, 99))
def test_linear_hook_sees_input_and_output_gradients_as_numpy(n, d_in, d_out, seed):
    """y = x W^T + b, loss = sum(y * c): grad_output = c, grad_input = c W."""
    rng = np.random.default_rng(seed)
    pyrt.manual_seed(seed)
    layer = nn.Linear(d_in, d_out)
    x = rng.standard_normal((n, d_in)).astype(F32)
    c = rng.standard_normal((n, d_out)).astype(F32)
    seen = []
    layer.register_full_backward_hook(lambda m, gi, go: seen.append((arrays(gi), arrays(go))))
    xt = pyrt.tensor(x, requires_grad=True)
    (layer(xt) * pyrt.tensor(c)).sum().backward()
    (grad_in,), (grad_out,) = seen[0]
    w = layer.weight.detach().numpy().astype(np.float64)
    np.testing.assert_allclose(grad_out, c, rtol=1e-6)
    np.testing.assert_allclose(grad_in, c @ w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(xt.grad.numpy(), c @ w, rtol=1e-5, atol=1e-6)


def grad_cam(lib, seed=3):
    """The activations and the gradients of a convolution's output, captured by hooks as in
    Grad-CAM, and the resulting class-activation map."""
    conv = lib.nn.Conv2d(2, 4, 3, padding=1)
    head = lib.nn.Sequential(lib.nn.ReLU(), lib.nn.Flatten(), lib.nn.Linear(4 * 5 * 5, 3))
    captured = {}
    conv.register_forward_hook(lambda m, a, o: captured.update(act=o.detach()))
    conv.register_full_backward_hook(lambda m, gi, go: captured.update(grad=go[0]))
    return conv, head, captured


@needs_torch
def test_grad_cam_capture_as_torch():
    pyrt.manual_seed(3)
    conv_p, head_p, cap_p = grad_cam(pyrt)
    conv_q, head_q, cap_q = grad_cam(torch)
    copy_weights(conv_p, conv_q)
    copy_weights(head_p, head_q)
    x = np.random.default_rng(4).standard_normal((2, 2, 5, 5)).astype(F32)
    with pytest.warns(UserWarning, match="no inputs require gradients"):
        head_p(conv_p(pyrt.tensor(x)))[:, 1].sum().backward()  # the input needs no grad
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's: no input requires grad
        head_q(conv_q(torch.tensor(x)))[:, 1].sum().backward()
    np.testing.assert_allclose(cap_p["grad"].numpy(), cap_q["grad"].numpy(), rtol=1e-5,
                               atol=1e-6)
    cams = []
    for cap in (cap_p, cap_q):
        act, grad = cap["act"].numpy(), cap["grad"].numpy()
        weights = grad.mean(axis=(2, 3), keepdims=True)
        cams.append(np.maximum((weights * act).sum(axis=1), 0))
    np.testing.assert_allclose(cams[0], cams[1], rtol=1e-5, atol=1e-6)


def clipping_run(lib, x, clip):
    """A layer whose input gradient a hook clips to [-clip, clip]."""
    layer = lib.nn.Linear(3, 2)
    layer.register_full_backward_hook(
        lambda m, gi, go: tuple(None if g is None else g.clamp(-clip, clip) for g in gi))
    xt = lib.tensor(x, requires_grad=True)
    (layer(xt) * 10).sum().backward()
    return layer, xt


@needs_torch
def test_gradient_clipping_through_the_hook_return_as_torch():
    x = np.random.default_rng(5).standard_normal((4, 3)).astype(F32)
    pyrt.manual_seed(5)
    layer_p, xp = clipping_run(pyrt, x, 0.5)
    layer_q, xq = clipping_run(torch, x, 0.5)
    copy_weights(layer_p, layer_q)
    layer_q.zero_grad()
    xq.grad = None
    (layer_q(xq) * 10).sum().backward()
    np.testing.assert_allclose(xp.grad.numpy(), xq.grad.numpy(), rtol=1e-6)
    assert np.abs(xp.grad.numpy()).max() <= 0.5
    # the parameters' gradients are not the hook's business
    np.testing.assert_allclose(layer_p.weight.grad.numpy(), layer_q.weight.grad.numpy(),
                               rtol=1e-5)


def several_io_log(lib):
    class Two(lib.nn.Module):
        def forward(self, a, b, scale, c):
            return a * b * scale, a + c, "tag"

    module, log = Two(), []
    module.register_full_backward_pre_hook(lambda m, go: log.append(("pre", arrays(go))))

    def doubler(m, go):
        return tuple(None if g is None else g * 2 for g in go)

    module.register_full_backward_pre_hook(doubler)
    module.register_full_backward_hook(lambda m, gi, go: log.append(("full", arrays(gi),
                                                                     arrays(go))))
    rng = np.random.default_rng(6)
    a, b, c = (lib.tensor(rng.standard_normal(3).astype(F32)) for _ in range(3))
    a.requires_grad_()
    c.requires_grad_()
    out1, _, tag = module(a, b, 3.0, c)
    assert tag == "tag"
    out1.sum().backward()  # out2 gets no gradient: None in grad_output
    log.append(("grads", a.grad.numpy().copy(), c.grad.numpy().copy()))
    return log


@needs_torch
def test_several_inputs_and_outputs_as_torch():
    ours, theirs = several_io_log(pyrt), several_io_log(torch)
    assert len(ours) == len(theirs) == 3
    for got, want in zip(ours, theirs):
        assert got[0] == want[0]
        for g, w in zip(got[1:], want[1:]):
            if isinstance(g, list):
                assert [x is None for x in g] == [x is None for x in w]
                for gg, ww in zip(g, w):
                    if gg is not None:
                        np.testing.assert_allclose(gg, ww, rtol=1e-6)
            else:
                np.testing.assert_allclose(g, w, rtol=1e-6)


def test_an_unused_input_gets_zeros_and_a_non_tensor_none():
    class First(nn.Module):
        def forward(self, a, b, k):
            return a * k

    module, seen = First(), []
    module.register_full_backward_hook(lambda m, gi, go: seen.append(gi))
    a = pyrt.ones(2, requires_grad=True)
    b = pyrt.ones(2, requires_grad=True)
    module(a, b, 4.0).sum().backward()
    grad_a, grad_b, grad_k = seen[0]
    np.testing.assert_array_equal(grad_a.numpy(), [4, 4])
    np.testing.assert_array_equal(grad_b.numpy(), [0, 0])
    assert grad_k is None
    assert b.grad is not None and not b.grad.numpy().any()


def test_no_input_requires_grad_hook_fires_from_the_outputs():
    layer, seen = nn.Linear(2, 2), []
    layer.register_full_backward_hook(lambda m, gi, go: seen.append((gi, arrays(go))))
    with pytest.warns(UserWarning, match="no inputs require gradients"):
        layer(pyrt.ones(1, 2)).sum().backward()
    assert seen[0][0] == (None,)
    np.testing.assert_array_equal(seen[0][1][0], [[1, 1]])
    layer.register_full_backward_hook(lambda m, gi, go: (pyrt.ones(1, 2),))
    with pytest.raises(RuntimeError, match="where no input requires gradient should always "
                                           "return None"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        layer(pyrt.ones(1, 2)).sum().backward()


def test_nothing_requires_grad_or_no_grad_mode_no_hook():
    layer, seen = nn.Linear(2, 2).requires_grad_(False), []
    layer.register_full_backward_hook(lambda *a: seen.append(a))
    out = layer(pyrt.ones(1, 2))
    assert not out.requires_grad
    layer.requires_grad_(True)
    with pyrt.no_grad():
        assert not layer(pyrt.ones(1, 2, requires_grad=True)).requires_grad
    assert seen == []


@needs_torch
@pytest.mark.parametrize("layer", [0, 1, 2, 3, 4])
def test_hooks_on_layers_inside_a_fused_sequential_as_torch(layer):
    """A hooked layer is called, not fused into a linear chain: its hooks fire and what they
    return changes every gradient before it."""
    ours, theirs = twin_mlps(mlp_layers, seed=layer)
    x = np.random.default_rng(7).standard_normal((6, 3)).astype(F32)
    logs = {"pyrt": [], "torch": []}
    handles = []
    for model, key in ((ours, "pyrt"), (theirs, "torch")):
        log = logs[key]

        def pre(m, go, log=log):
            log.append(("pre", go[0].detach().numpy().copy()))

        def full(m, gi, go, log=log):
            log.append(("full", gi[0].detach().numpy().copy()))
            return (gi[0] * 3,)

        handles.append(model[layer].register_full_backward_pre_hook(pre))
        handles.append(model[layer].register_full_backward_hook(full))
    xp = pyrt.tensor(x, requires_grad=True)
    xq = torch.tensor(x, requires_grad=True)
    ours(xp).square().sum().backward()
    theirs(xq).square().sum().backward()
    assert [k for k, _ in logs["pyrt"]] == [k for k, _ in logs["torch"]] == ["pre", "full"]
    for (_, g), (_, w) in zip(logs["pyrt"], logs["torch"]):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(xp.grad.numpy(), xq.grad.numpy(), rtol=1e-5, atol=1e-6)
    for p, q in zip(ours.parameters(), theirs.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-6)
    for handle in handles:
        handle.remove()
    assert not ours[layer]._hooked
    logs["pyrt"].clear()
    ours(pyrt.tensor(x, requires_grad=True)).sum().backward()
    assert logs["pyrt"] == []


@needs_torch
def test_hook_order_on_nested_modules_prepend_and_the_sequential_itself():
    def order(lib):
        inner = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.Tanh())
        outer = lib.nn.Sequential(lib.nn.Linear(2, 2), inner, lib.nn.Linear(2, 1))
        calls = []
        for name, module in (("outer", outer), ("inner", inner), ("inner.0", inner[0]),
                             ("first", outer[0])):
            module.register_full_backward_hook(lambda m, gi, go, n=name: calls.append(n))
            module.register_full_backward_pre_hook(lambda m, go, n=name: calls.append(n + "<"))
        inner.register_full_backward_hook(lambda m, gi, go: calls.append("inner!"),
                                          prepend=True)
        outer(lib.ones(3, 2, requires_grad=True)).sum().backward()
        return calls

    assert order(pyrt) == order(torch)


def test_removal_and_context_manager():
    layer, seen = nn.Linear(2, 2), []
    with layer.register_full_backward_hook(lambda *a: seen.append("full")):
        layer(pyrt.ones(1, 2, requires_grad=True)).sum().backward()
    handle = layer.register_full_backward_pre_hook(lambda *a: seen.append("pre"))
    handle.remove()
    handle.remove()
    layer(pyrt.ones(1, 2, requires_grad=True)).sum().backward()
    assert seen == ["full"] and not layer._hooked


def test_a_graph_kept_for_a_second_backward_runs_the_hooks_again():
    layer, seen = nn.Linear(2, 2), []
    layer.register_full_backward_hook(lambda m, gi, go: seen.append(gi[0].numpy().copy()))
    out = layer(pyrt.ones(1, 2, requires_grad=True)).sum()
    out.backward(retain_graph=True)
    out.backward()
    assert len(seen) == 2
    np.testing.assert_array_equal(seen[0], seen[1])


def test_hooks_and_central_differences_agree():
    """With a hook that scales grad_output by 2, the input gradient is twice the numerical
    derivative of the layer's loss."""
    rng = np.random.default_rng(8)
    pyrt.manual_seed(8)
    layer = nn.Sequential(nn.Linear(3, 4), nn.Tanh())
    x = rng.standard_normal((2, 3))
    layer.register_full_backward_pre_hook(lambda m, go: (go[0] * 2,))
    xt = pyrt.tensor(x.astype(F32), requires_grad=True)
    layer(xt).sum().backward()
    w = layer[0].weight.detach().numpy().astype(np.float64)
    b = layer[0].bias.detach().numpy().astype(np.float64)

    def loss(v):
        return np.tanh(v @ w.T + b).sum()

    eps, numeric = 1e-6, np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[idx] = eps
        numeric[idx] = (loss(x + step) - loss(x - step)) / (2 * eps)
    np.testing.assert_allclose(xt.grad.numpy(), 2 * numeric, rtol=1e-4, atol=1e-5)


def test_full_backward_hook_errors():
    layer = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="hook must be callable"):
        layer.register_full_backward_hook(3)
    layer.register_full_backward_hook(lambda m, gi, go: (gi[0], gi[0]))
    with pytest.raises(RuntimeError, match="Backward hook returned an invalid number of "
                                           "grad_input, got 2, but expected 1"):
        layer(pyrt.ones(1, 2, requires_grad=True)).sum().backward()
    with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full "
                                           "backward hooks"):
        layer.register_backward_hook(lambda *a: None)
    pre = nn.Linear(2, 2)
    pre.register_full_backward_pre_hook(lambda m, go: (go[0], None))
    with pytest.raises(RuntimeError, match="Backward pre hook returned an invalid number of "
                                           "grad_output, got 2, but expected 1"):
        pre(pyrt.ones(1, 2, requires_grad=True)).sum().backward()
    sized = nn.Linear(2, 2)
    sized.register_full_backward_hook(lambda m, gi, go: (pyrt.ones(3),))
    with pytest.raises(RuntimeError, match="hook 'hook' has changed the size of value"):
        sized(pyrt.ones(1, 2, requires_grad=True)).sum().backward()
    typed = nn.Linear(2, 2)
    typed.register_full_backward_hook(lambda m, gi, go: ("x",))
    with pytest.raises(TypeError, match="expected Variable, but hook returned 'str'"):
        typed(pyrt.ones(1, 2, requires_grad=True)).sum().backward()


def test_an_output_that_is_not_a_tensor_or_tuple_warns_as_torch():
    class Listed(nn.Module):
        def forward(self, x):
            return [x * 2]

    module = Listed()
    module.register_full_backward_hook(lambda *a: None)
    with pytest.warns(UserWarning, match="module output should be a Tensor or a tuple of "
                                         "Tensors but received <class 'list'>"):
        module(pyrt.ones(2, requires_grad=True))


def legacy_log(lib):
    class Mul(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = lib.nn.Parameter(lib.tensor([3.0, -2.0]))

        def forward(self, x):
            return x * self.w

    module, log = Mul(), []

    def hook(m, gi, go):
        log.append((arrays(gi), arrays(go)))
        return (gi[0] * 10, gi[1])

    module.register_backward_hook(hook)
    x = lib.tensor([1.0, 4.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (module(x * 1) * lib.tensor([1.0, 2.0])).sum().backward()
    log.append((x.grad.numpy().copy(), module.w.grad.numpy().copy()))
    return log


@needs_torch
def test_deprecated_backward_hook_sees_the_last_ops_gradients_as_torch():
    ours, theirs = legacy_log(pyrt), legacy_log(torch)
    (gi_p, go_p), (gi_q, go_q) = ours[0], theirs[0]
    for g, w in zip(gi_p + go_p, gi_q + go_q):
        np.testing.assert_allclose(g, w)
    np.testing.assert_allclose(ours[1][0], theirs[1][0])
    np.testing.assert_allclose(ours[1][1], theirs[1][1])
    with pytest.raises(RuntimeError, match="Cannot use both"):
        layer = nn.Linear(1, 1)
        layer.register_backward_hook(lambda *a: None)
        layer.register_full_backward_hook(lambda *a: None)
