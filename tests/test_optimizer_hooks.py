"""Optimizer step hooks (per optimizer and global) and state_dict hooks, against
torch.optim where installed: order, arguments, replacement of arguments and results,
removal; and the plain step keeps its cost (no wrapper when no hook exists)."""

import copy
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
from pyrt.optim import optimizer as optimizer_module

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="needs torch")


def sgd(lib, values=(1.0, 2.0), lr=0.5):
    param = lib.nn.Parameter(lib.tensor(list(values)))
    param.grad = lib.tensor([1.0] * len(values))
    return param, lib.optim.SGD([param], lr=lr)


def trace(lib):
    """The calls of global and per-optimizer step hooks over three steps, one with a
    pre-hook that swaps the closure for one that reports a loss."""
    if lib is pyrt:
        hooks = optimizer_module
    else:
        import torch.optim.optimizer as hooks
    param, opt = sgd(lib)
    calls = []
    handles = [
        hooks.register_optimizer_step_pre_hook(
            lambda o, a, k: calls.append(("global<", len(a), sorted(k)))),
        hooks.register_optimizer_step_post_hook(lambda o, a, k: calls.append("global>")),
        opt.register_step_pre_hook(lambda o, a, k: calls.append(("own<", a[0] is o))),
        opt.register_step_post_hook(lambda o, a, k: calls.append("own>")),
    ]
    opt.step()

    def swap(o, args, kwargs):
        return (o,), {"closure": lambda: 3.0}

    swapper = opt.register_step_pre_hook(swap)
    calls.append(("loss", opt.step()))
    swapper.remove()
    for handle in handles:
        handle.remove()
        handle.remove()
    opt.step()
    calls.append(("param", param.detach().numpy().tolist()))
    return calls


@needs_torch
def test_step_hooks_order_arguments_and_removal_as_torch():
    assert trace(pyrt) == trace(torch)


def test_step_hooks_without_torch():
    calls = trace(pyrt)
    assert calls[:4] == [("global<", 1, []), ("own<", True), "own>", "global>"]
    assert ("loss", 3.0) in calls
    assert calls[-1] == ("param", [-0.5, 0.5])


def test_a_plain_step_has_no_wrapper_and_a_removed_hook_leaves_none():
    _, opt = sgd(pyrt)
    assert "step" not in opt.__dict__
    handle = opt.register_step_post_hook(lambda *a: None)
    assert "step" in opt.__dict__
    handle.remove()
    assert "step" not in opt.__dict__
    with optimizer_module.register_optimizer_step_pre_hook(lambda *a: None):
        assert "step" in opt.__dict__
        _, later = sgd(pyrt)  # made while a global hook exists
        assert "step" in later.__dict__
    assert "step" not in opt.__dict__ and "step" not in later.__dict__


def test_step_hook_errors():
    _, opt = sgd(pyrt)
    opt.register_step_pre_hook(lambda *a: 5)
    with pytest.raises(RuntimeError, match="must return None or a tuple of \\(new_args, "
                                           "new_kwargs\\), but got 5."):
        opt.step()
    with pytest.raises(TypeError, match="hook must be callable"):
        opt.register_step_post_hook("no")


def test_copies_and_pickles_drop_the_hooks_as_torch():
    _, opt = sgd(pyrt)
    opt.register_step_pre_hook(lambda *a: None)
    for clone in (copy.deepcopy(opt), pickle.loads(pickle.dumps(opt))):
        assert "step" not in clone.__dict__ and not clone._optimizer_step_pre_hooks
        clone.step()


def state_trace(lib):
    param, opt = sgd(lib)
    opt = lib.optim.SGD([param], lr=0.5, momentum=0.9)
    param.grad = lib.tensor([1.0, 1.0])
    opt.step()
    calls = []
    opt.register_state_dict_pre_hook(lambda o: calls.append("save<"))
    opt.register_state_dict_post_hook(lambda o, sd: calls.append(("save>", sorted(sd))))

    def tag(o, sd):
        return {**sd, "tag": 1}

    opt.register_state_dict_post_hook(tag)
    opt.register_state_dict_pre_hook(lambda o: calls.append("first<"), prepend=True)
    sd = opt.state_dict()
    calls.append(("keys", sorted(sd)))

    def rewrite(o, state):
        calls.append(("load<", sorted(state)))
        state.pop("tag")
        groups = [dict(g, lr=0.25) for g in state["param_groups"]]
        return {**state, "param_groups": groups}

    opt.register_load_state_dict_pre_hook(rewrite)
    opt.register_load_state_dict_post_hook(lambda o: calls.append("load>"))
    opt.load_state_dict(sd)
    calls.append(("tag kept", "tag" in sd, opt.param_groups[0]["lr"]))
    return calls


@needs_torch
def test_state_dict_hooks_as_torch():
    assert state_trace(pyrt) == state_trace(torch)


@settings(max_examples=10, deadline=None)
@given(st.lists(st.floats(-4, 4), min_size=1, max_size=5), st.floats(0.01, 1.0))
def test_a_hook_that_scales_the_gradients_before_each_step_as_numpy(values, lr):
    param, opt = sgd(pyrt, values, lr)

    def halve(o, args, kwargs):
        for group in o.param_groups:
            for p in group["params"]:
                p.grad = p.grad * 0.5

    opt.register_step_pre_hook(halve)
    opt.step()
    want = np.asarray(values, np.float64) - lr * 0.5
    np.testing.assert_allclose(param.detach().numpy(), want, rtol=1e-5, atol=1e-6)


def test_type_aliases_exist():
    assert pyrt.optim.Optimizer.OptimizerPreHook is optimizer_module.OptimizerPreHook
    assert optimizer_module.OptimizerPostHook is not None
