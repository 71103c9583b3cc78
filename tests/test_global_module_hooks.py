"""Hooks common to all modules (pyrt.nn.modules.module.register_module_*_hook) against
torch.nn on the same weights and against NumPy formulas: their order beside a module's own
hooks, what their results replace, always_call, the backward hooks' gradients, the
registration hooks, removal, and a plain call that costs what it cost before."""

import cProfile
import pstats
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
from pyrt import nn
from pyrt.nn.modules import module as M

try:
    import torch
    import torch.nn.modules.module as TM
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="needs torch")
F32 = np.float32


@pytest.fixture(autouse=True)
def no_global_hooks_left():
    """Each test removes its hooks; a leftover one would change every later test."""
    yield
    from pyrt.nn import global_hooks as G

    assert not (G.FORWARD_PRE_HOOKS or G.FORWARD_HOOKS or G.BACKWARD_HOOKS
                or G.BACKWARD_PRE_HOOKS or G.PARAMETER_REGISTRATION_HOOKS
                or G.BUFFER_REGISTRATION_HOOKS or G.MODULE_REGISTRATION_HOOKS)
    assert nn.Module._hooked is False


def mlp(lib, seed=0):
    if lib is pyrt:
        pyrt.manual_seed(seed)
    return lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.ReLU(), lib.nn.Linear(3, 1))


def twins(seed=0):
    ours, theirs = mlp(pyrt, seed), mlp(torch, seed)
    with torch.no_grad():
        for p, q in zip(ours.parameters(), theirs.parameters()):
            q.copy_(torch.from_numpy(p.detach().numpy()))
    return ours, theirs


def numpy_mlp(model, x):
    w1, b1, w2, b2 = (p.detach().numpy().astype(np.float64) for p in model.parameters())
    return np.maximum(x @ w1.T + b1, 0) @ w2.T + b2


def record_events(lib, model, module_api, x):
    """The hooks run by one forward and backward, in order, as (kind, module class)."""
    events = []

    def tag(kind):
        return lambda module, *rest: events.append((kind, type(module).__name__))

    handles = [module_api.register_module_forward_pre_hook(tag("global pre")),
               module_api.register_module_forward_hook(tag("global fwd")),
               module_api.register_module_full_backward_pre_hook(tag("global bwd pre")),
               module_api.register_module_full_backward_hook(tag("global bwd"))]
    for layer in (model[0], model[2]):
        handles += [layer.register_forward_pre_hook(tag("own pre")),
                    layer.register_forward_hook(tag("own fwd")),
                    layer.register_full_backward_pre_hook(tag("own bwd pre")),
                    layer.register_full_backward_hook(tag("own bwd"))]
    try:
        model(x).sum().backward()
    finally:
        for h in handles:
            h.remove()
    return events


@needs_torch
def test_order_of_global_and_own_hooks_matches_torch():
    ours, theirs = twins()
    x = np.random.default_rng(0).standard_normal((4, 2)).astype(F32)
    mine = record_events(pyrt, ours, M, pyrt.tensor(x, requires_grad=True))
    ref = record_events(torch, theirs, TM, torch.tensor(x, requires_grad=True))
    assert mine == ref
    assert mine[:3] == [("global pre", "Sequential"), ("global pre", "Linear"),
                        ("own pre", "Linear")]


def test_fused_sequential_runs_layer_by_layer_while_a_global_hook_exists():
    model = mlp(pyrt)
    x = np.random.default_rng(1).standard_normal((5, 2)).astype(F32)
    fused = model(pyrt.tensor(x)).detach().numpy()
    seen = []
    with M.register_module_forward_hook(lambda m, a, o: seen.append(type(m).__name__)):
        hooked = model(pyrt.tensor(x)).detach().numpy()
    assert seen == ["Linear", "ReLU", "Linear", "Sequential"]
    np.testing.assert_allclose(hooked, fused, rtol=1e-6)
    np.testing.assert_allclose(hooked, numpy_mlp(model, x), rtol=1e-5, atol=1e-6)
    seen.clear()
    model(pyrt.tensor(x))  # removed: fused again, no hook
    assert seen == []


def test_a_module_whose_own_hooks_were_removed_still_sees_global_hooks():
    layer = nn.Linear(2, 2)
    layer.register_forward_hook(lambda m, a, o: None).remove()
    assert "_hooked" not in layer.__dict__
    seen = []
    with M.register_module_forward_pre_hook(lambda m, a: seen.append(m)):
        layer(pyrt.ones(1, 2))
    assert seen == [layer]


def test_pre_hook_replaces_input_and_forward_hook_replaces_output():
    layer = nn.Identity()
    x = pyrt.tensor(np.arange(3, dtype=F32))
    with M.register_module_forward_pre_hook(lambda m, args: args[0] * 2), \
            M.register_module_forward_hook(lambda m, args, out: out + 1):
        out = layer(x).detach()
    np.testing.assert_array_equal(out.numpy(), np.arange(3) * 2 + 1)


@needs_torch
def test_with_kwargs_forward_hook_sees_kwargs_as_torch():
    class Scale(nn.Module):
        def forward(self, x, *, k=1.0):
            return x * k

    class TScale(torch.nn.Module):
        def forward(self, x, *, k=1.0):
            return x * k

    results = []
    for lib, module_api, cls in ((pyrt, M, Scale), (torch, TM, TScale)):
        got = []
        h = module_api.register_module_forward_hook(
            lambda m, args, kwargs, out, got=got: got.append(dict(kwargs)) or out * 10,
            with_kwargs=True)
        try:
            out = cls()(lib.ones(2), k=3.0)
        finally:
            h.remove()
        results.append((got, out.detach().numpy().tolist()))
    assert results[0] == results[1] == ([{"k": 3.0}], [30.0, 30.0])


@needs_torch
def test_always_call_runs_when_forward_raises_as_torch():
    class Boom(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    class TBoom(torch.nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    for lib, module_api, cls in ((pyrt, M, Boom), (torch, TM, TBoom)):
        calls, skipped = [], []
        h1 = module_api.register_module_forward_hook(
            lambda m, a, o, calls=calls: calls.append(o), always_call=True)
        h2 = module_api.register_module_forward_hook(
            lambda m, a, o, skipped=skipped: skipped.append(o))
        try:
            with pytest.raises(ValueError, match="boom"):
                cls()(lib.ones(1))
        finally:
            h1.remove()
            h2.remove()
        assert calls == [None] and skipped == []


def test_always_call_hook_error_is_a_warning_and_the_call_error_goes_on():
    class Boom(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    def bad(m, a, o):
        raise KeyError("hook")

    with M.register_module_forward_hook(bad, always_call=True):
        with pytest.warns(UserWarning, match="always_call=True.. raised an exception"), \
                pytest.raises(ValueError, match="boom"):
            Boom()(pyrt.ones(1))


@needs_torch
@settings(max_examples=10, deadline=None)
@given(n=st.integers(1, 6), seed=st.integers(0, 2**16))
def test_full_backward_hooks_see_torchs_gradients(n, seed):
    ours, theirs = twins(seed)
    x = np.random.default_rng(seed).standard_normal((n, 2)).astype(F32)
    grads = []
    for lib, model, module_api in ((pyrt, ours, M), (torch, theirs, TM)):
        seen = []

        def hook(m, gin, gout, seen=seen):
            seen.append((type(m).__name__, [None if g is None else g.detach().numpy().copy()
                                            for g in gin + gout]))

        h = module_api.register_module_full_backward_hook(hook)
        try:
            xt = lib.tensor(x, requires_grad=True)
            model(xt).sum().backward()
        finally:
            h.remove()
        grads.append(seen)
    assert [name for name, _ in grads[0]] == [name for name, _ in grads[1]]
    for (_, mine), (_, ref) in zip(*grads):
        for a, b in zip(mine, ref):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    # NumPy: the Sequential's grad_input is d(sum of outputs)/dx = relu'(h) w1^T w2^T summed
    w1, b1, w2, _ = (p.detach().numpy().astype(np.float64) for p in ours.parameters())
    mask = (x @ w1.T + b1) > 0
    np.testing.assert_allclose(grads[0][-1][1][0], (mask * w2) @ w1, rtol=1e-5, atol=1e-6)


def test_backward_pre_hook_replaces_grad_output():
    layer = nn.Linear(2, 1)
    x = pyrt.tensor(np.ones((3, 2), F32), requires_grad=True)
    with M.register_module_full_backward_pre_hook(lambda m, gout: (gout[0] * 0,)):
        layer(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), 0)
    assert layer.weight.grad.numpy().sum() == 0


def test_deprecated_global_backward_hook_sees_last_op_gradients():
    layer = nn.Linear(2, 1)
    seen = []
    x = pyrt.tensor(np.ones((3, 2), F32), requires_grad=True)
    with M.register_module_backward_hook(lambda m, gin, gout: seen.append(len(gout))):
        layer(x).sum().backward()
    assert seen == [1]


def test_full_and_deprecated_global_backward_hooks_do_not_mix():
    with M.register_module_full_backward_hook(lambda *a: None):
        with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and "
                                               "full backward hooks as a global Module hook"):
            M.register_module_backward_hook(lambda *a: None)
    with M.register_module_backward_hook(lambda *a: None):
        with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks"):
            M.register_module_full_backward_hook(lambda *a: None)
    # the last hook removed, either kind may be registered again
    M.register_module_backward_hook(lambda *a: None).remove()


def test_a_hook_must_be_callable():
    for register in (M.register_module_forward_pre_hook, M.register_module_forward_hook,
                     M.register_module_full_backward_pre_hook,
                     M.register_module_parameter_registration_hook,
                     M.register_module_buffer_registration_hook,
                     M.register_module_module_registration_hook):
        with pytest.raises(TypeError, match="hook must be callable, got int"):
            register(3)


@needs_torch
def test_registration_hooks_see_what_torchs_see():
    logs = []
    for lib, module_api in ((pyrt, M), (torch, TM)):
        log = []

        def hook(kind, log=log):
            return lambda m, name, value: log.append((kind, type(m).__name__, name))

        handles = [module_api.register_module_parameter_registration_hook(hook("param")),
                   module_api.register_module_buffer_registration_hook(hook("buffer")),
                   module_api.register_module_module_registration_hook(hook("module"))]
        try:
            model = lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.ReLU())
            model.register_buffer("mask", lib.ones(3))
            model.mask = lib.zeros(3)
            model.head = lib.nn.Linear(3, 1, bias=False)
            model.head = None
        finally:
            for h in handles:
                h.remove()
        logs.append(log)
    assert logs[0] == logs[1]


def test_registration_hooks_replace_what_is_registered():
    swap = nn.Parameter(pyrt.zeros(3, 2))
    other = nn.Identity()
    with M.register_module_parameter_registration_hook(
            lambda m, name, p: swap if name == "weight" else None), \
            M.register_module_buffer_registration_hook(lambda m, name, b: b * 2), \
            M.register_module_module_registration_hook(lambda m, name, c: other):
        layer = nn.Linear(2, 3)
        layer.register_buffer("scale", pyrt.ones(2))
        layer.child = nn.ReLU()
    assert layer.weight is swap
    np.testing.assert_array_equal(layer.scale.numpy(), [2, 2])
    assert layer.child is other


def xor_step_calls():
    """Python calls of one XOR training step, second step onward."""
    pyrt.manual_seed(0)
    model = nn.Sequential(nn.Linear(2, 3, bias=False), nn.ReLU(), nn.Linear(3, 1, bias=False))
    loss_fn = nn.BCEWithLogitsLoss()
    opt = pyrt.optim.SGD(model.parameters(), lr=0.1)
    x = pyrt.tensor(np.array([[0, 0], [0, 1], [1, 0], [1, 1]], F32))
    y = pyrt.tensor(np.array([[0], [1], [1], [0]], F32))

    def step():
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()

    step()
    step()
    profile = cProfile.Profile()
    profile.enable()
    step()
    profile.disable()
    return pstats.Stats(profile).total_calls


def test_a_plain_call_costs_the_same_once_global_hooks_are_removed():
    before = xor_step_calls()
    with warnings.catch_warnings():
        M.register_module_forward_hook(lambda m, a, o: None).remove()
        M.register_module_full_backward_hook(lambda m, gi, go: None).remove()
    assert xor_step_calls() == before
