"""Module's state_dict and load_state_dict hooks, extra state, and the remaining methods of
torch.nn.Module (set_submodule, to_empty, share_memory, compile, type, bfloat16,
call_super_init), against torch.nn where installed and against plain expectations."""

import numpy as np
import pytest

import pyrt
from pyrt import nn

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="needs torch")
F32 = np.float32


def hook_trace(lib):
    """The calls of every kind of state-dict hook, over a save and a load of a nested model,
    with a pre-hook that renames an old key and a post-hook that forgives a missing one."""
    model = lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.Sequential(lib.nn.Linear(3, 1)))
    calls = []
    for name, module in (("root", model), ("inner", model[1]), ("leaf", model[1][0])):
        module.register_state_dict_pre_hook(
            lambda m, prefix, keep, n=name: calls.append(("save<", n, prefix, keep)))
        module.register_state_dict_post_hook(
            lambda m, sd, prefix, meta, n=name: calls.append(("save>", n, prefix, len(sd))))
        module.register_load_state_dict_pre_hook(
            lambda m, sd, prefix, meta, strict, missing, unexpected, errors, n=name:
            calls.append(("load<", n, prefix, strict, sorted(sd))))
        module.register_load_state_dict_post_hook(
            lambda m, keys, n=name: calls.append(("load>", n, list(keys.missing_keys))))

    def rename(m, sd, prefix, *rest):
        if "0.w_old" in sd:
            sd["0.weight"] = sd.pop("0.w_old")

    model.register_load_state_dict_pre_hook(rename)

    def forgive(m, keys):
        keys.missing_keys.remove("1.0.bias")

    model.register_load_state_dict_post_hook(forgive)
    sd = model.state_dict()
    sd["0.w_old"] = sd.pop("0.weight") * 0 + 7
    del sd["1.0.bias"]
    result = model.load_state_dict(sd)
    calls.append(("result", list(result.missing_keys), list(result.unexpected_keys)))
    calls.append(("weight", model[0].weight.detach().numpy().tolist()))
    return calls


@needs_torch
def test_state_dict_hooks_order_and_effects_as_torch():
    assert hook_trace(pyrt) == hook_trace(torch)


def test_state_dict_hook_without_torch():
    calls = hook_trace(pyrt)
    assert calls[-1] == ("weight", [[7.0, 7.0]] * 3)
    assert calls[-2] == ("result", [], [])


def test_state_dict_hook_errors_and_old_form():
    layer = nn.Linear(1, 1)
    handle = layer.register_state_dict_post_hook(lambda *a: {"x": 1})
    with pytest.raises(RuntimeError, match="state_dict post-hook must return None"):
        layer.state_dict()
    handle.remove()
    layer._register_state_dict_hook(lambda m, sd, prefix, meta: {"replaced": 1})
    assert layer.state_dict() == {"replaced": 1}
    other = nn.Linear(1, 1)
    other.register_load_state_dict_post_hook(lambda m, keys: 1)
    with pytest.raises(RuntimeError, match="are not expected to return new values"):
        other.load_state_dict(other.state_dict())
    with pytest.raises(TypeError, match="hook must be callable"):
        other.register_load_state_dict_pre_hook(None)
    plain = nn.Linear(1, 1)
    seen = []
    plain._register_load_state_dict_pre_hook(lambda sd, prefix, *rest: seen.append(prefix))
    plain.load_state_dict(plain.state_dict())
    assert seen == [""]


def test_a_strict_error_leaves_the_module_unchanged_without_post_hooks():
    layer = nn.Linear(2, 2)
    before = layer.weight.detach().numpy().copy()
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "bias"'):
        layer.load_state_dict({"weight": np.zeros((2, 2), F32)})
    np.testing.assert_array_equal(layer.weight.detach().numpy(), before)


def extra_state_model(lib):
    class Counter(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(1, 1)
            self.count = 0

        def get_extra_state(self):
            return {"count": self.count}

        def set_extra_state(self, state):
            self.count = state["count"]

    return lib.nn.Sequential(Counter())


@needs_torch
def test_extra_state_as_torch():
    ours, theirs = extra_state_model(pyrt), extra_state_model(torch)
    ours[0].count = theirs[0].count = 5
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert ours.state_dict()["0._extra_state"] == {"count": 5}
    fresh_p, fresh_q = extra_state_model(pyrt), extra_state_model(torch)
    fresh_p.load_state_dict(ours.state_dict())
    fresh_q.load_state_dict(theirs.state_dict())
    assert fresh_p[0].count == fresh_q[0].count == 5
    sd = ours.state_dict()
    del sd["0._extra_state"]
    for model, state in ((fresh_p, sd), (fresh_q, {k: v for k, v in theirs.state_dict().items()
                                                   if k != "0._extra_state"})):
        with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: '
                                               '"0._extra_state"'):
            model.load_state_dict(state)
    plain = nn.Linear(1, 1)
    keys = plain.load_state_dict({**plain.state_dict(), "_extra_state": 1}, strict=False)
    assert keys.unexpected_keys == ["_extra_state"]


def test_base_extra_state_methods_refuse():
    with pytest.raises(RuntimeError, match="Module.get_extra_state\\(\\) that should never"):
        nn.Linear(1, 1).get_extra_state()
    with pytest.raises(RuntimeError, match="Module.set_extra_state\\(\\) that should never"):
        nn.Linear(1, 1).set_extra_state({})


@needs_torch
def test_set_submodule_as_torch():
    def build(lib):
        return lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.Sequential(lib.nn.ReLU()))

    for strict in (False, True):
        ours, theirs = build(pyrt), build(torch)
        ours.set_submodule("1.0", nn.Tanh(), strict=strict)
        theirs.set_submodule("1.0", torch.nn.Tanh(), strict=strict)
        assert type(ours[1][0]).__name__ == type(theirs[1][0]).__name__ == "Tanh"
    ours, theirs = build(pyrt), build(torch)
    ours.set_submodule("1.extra", nn.ReLU())
    theirs.set_submodule("1.extra", torch.nn.ReLU())
    assert list(ours[1]._modules) == list(theirs[1]._modules)
    cases = [(ValueError, lambda m, lib: m.set_submodule("", lib.nn.ReLU())),
             (ValueError, lambda m, lib: m.set_submodule("0", 3)),
             (AttributeError, lambda m, lib: m.set_submodule("1.nope", lib.nn.ReLU(), True)),
             (AttributeError, lambda m, lib: m.set_submodule("0.weight", lib.nn.ReLU())),
             (AttributeError, lambda m, lib: m.set_submodule("5.x", lib.nn.ReLU()))]
    for kind, call in cases:
        with pytest.raises(kind) as want:
            call(theirs, torch)
        with pytest.raises(kind) as got:
            call(ours, pyrt)
        assert str(got.value).replace("pyrt", "torch") == str(want.value)


def test_to_empty_share_memory_compile_and_types():
    model = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    weight = model[0].weight
    assert model.to_empty(device="cpu") is model
    assert model[0].weight is weight and weight.shape == (3, 2) and weight.dtype == np.float32
    inner = model[1].running_mean
    data = inner._data
    model.to_empty(device="cpu", recurse=False)  # no own parameters: nothing changes
    assert model[1].running_mean._data is data
    with pytest.raises(TypeError):
        model.to_empty("cpu")  # device is keyword-only, as in torch
    assert model.share_memory() is model
    assert all(p.is_shared() for p in model.parameters())
    x = pyrt.ones(4, 2)
    before = model(x).detach().numpy()
    assert model.compile() is None
    np.testing.assert_array_equal(model(x).detach().numpy(), before)
    with pytest.raises(RuntimeError, match="Unrecognized mode=fast"):
        model.compile(mode="fast")
    assert model.type(pyrt.float32) is model and model.type("torch.FloatTensor") is model
    with pytest.raises(NotImplementedError, match="float32 parameters only"):
        model.type(pyrt.float64)
    with pytest.raises(NotImplementedError, match="bfloat16\\(\\): pyrt's modules hold "
                                                  "float32 parameters only"):
        model.bfloat16()
    assert nn.Module.dump_patches is False and nn.Module.call_super_init is False


@needs_torch
def test_call_super_init_as_torch():
    def build(lib):
        class Mixin:
            def __init__(self, tag=None):
                self.tag = tag

        class Plain(lib.nn.Module):
            pass

        class Passing(lib.nn.Module, Mixin):
            call_super_init = True

        return Plain, Passing

    for lib in (pyrt, torch):
        plain, passing = build(lib)
        assert passing(tag=3).tag == 3
        with pytest.raises(TypeError, match="got an unexpected keyword argument 'tag'"):
            plain(tag=3)
        with pytest.raises(TypeError, match="takes 1 positional argument but 2 were given"):
            plain(3)
