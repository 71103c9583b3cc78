"""Module's forward hooks, dotted-path lookups, dtype methods and the list interface of
Sequential and ModuleList, side by side with torch.nn on the same weights: the same calls,
arguments, outputs and errors; a hooked layer inside a Sequential (whose fused steps call
kernels rather than modules) still sees its calls."""

import numpy as np
import pytest

import pyrt
from pyrt import nn

torch = pytest.importorskip("torch")

F32 = np.float32


def twin_mlps(seed=0):
    """A pyrt MLP and torch's with the same weights."""
    pyrt.manual_seed(seed)
    ours = nn.Sequential(nn.Linear(3, 5), nn.ReLU(), nn.Linear(5, 4), nn.Tanh(), nn.Linear(4, 2))
    theirs = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.ReLU(), torch.nn.Linear(5, 4),
                                 torch.nn.Tanh(), torch.nn.Linear(4, 2))
    with torch.no_grad():
        for p, q in zip(ours.parameters(), theirs.parameters()):
            q.copy_(torch.from_numpy(p.detach().numpy()))
    return ours, theirs


def batch(seed=1, shape=(6, 3)):
    return np.random.default_rng(seed).standard_normal(shape).astype(F32)


def run_both(ours, theirs, x):
    out_p = ours(pyrt.tensor(x)).detach().numpy()
    out_q = theirs(torch.tensor(x)).detach().numpy()
    np.testing.assert_allclose(out_p, out_q, rtol=1e-5, atol=1e-6)
    return out_p


@pytest.mark.parametrize("layer", [0, 1, 2, 3, 4])
def test_hooks_on_a_layer_inside_a_sequential_see_and_change_its_calls_as_torchs(layer):
    """Each layer (fused into a step of the Sequential when unhooked) hooked in both: the
    pre-hook doubles the input, the hook records and shifts the output; removing both gives
    the plain outputs back."""
    ours, theirs = twin_mlps()
    x = batch()
    plain = run_both(ours, theirs, x)
    seen = {"pyrt": [], "torch": []}
    handles = []
    for model, key in ((ours, "pyrt"), (theirs, "torch")):
        log = seen[key]

        def pre(module, args, log=log):
            log.append(("pre", type(module).__name__, tuple(args[0].shape)))
            return args[0] * 2  # one value: the new single argument

        def post(module, args, output, log=log):
            log.append(("post", tuple(args[0].shape), tuple(output.shape)))
            return output + 1

        handles.append(model[layer].register_forward_pre_hook(pre))
        handles.append(model[layer].register_forward_hook(post))
    hooked = run_both(ours, theirs, x)
    assert seen["pyrt"] == seen["torch"] and len(seen["pyrt"]) == 2
    assert not np.allclose(hooked, plain)
    for handle in handles:
        handle.remove()
        handle.remove()  # a second remove does nothing
    np.testing.assert_array_equal(run_both(ours, theirs, x), plain)
    assert not ours[layer]._hooked


def hook_calls(lib):
    """The calls a module of `lib` (pyrt or torch) makes to hooks registered in several ways,
    over two forwards: the first inside a pre-hook's context manager."""
    class Scaled(lib.nn.Module):
        def forward(self, x, scale=1.0):
            return x * scale

    calls = []
    layer = Scaled()
    layer.register_forward_hook(lambda m, a, o: calls.append("first"))
    layer.register_forward_hook(lambda m, a, o: calls.append("prepended"), prepend=True)

    def with_kwargs(module, args, kwargs, output):
        calls.append(("kwargs", sorted(kwargs), float(output.sum())))

    layer.register_forward_hook(with_kwargs, with_kwargs=True)

    def pre_kwargs(module, args, kwargs):
        calls.append("pre")
        return args, {**kwargs, "scale": 3.0}

    with layer.register_forward_pre_hook(pre_kwargs, with_kwargs=True):
        layer(lib.ones(1, 2))
    layer(lib.ones(1, 2), scale=2.0)
    return calls


def test_hook_order_prepend_kwargs_and_context_manager_as_torch():
    assert hook_calls(pyrt) == hook_calls(torch) == [
        "pre", "prepended", "first", ("kwargs", ["scale"], 6.0),
        "prepended", "first", ("kwargs", ["scale"], 4.0)]


def test_a_hook_on_the_whole_model_and_a_hook_that_returns_none():
    ours, _ = twin_mlps(3)
    outputs = []
    ours.register_forward_hook(lambda m, a, o: outputs.append(o.detach().numpy().copy()))
    out = ours(pyrt.tensor(batch(4))).detach().numpy()
    np.testing.assert_array_equal(outputs[0], out)  # None: the output is kept


def test_hook_errors():
    layer = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="hook must be callable"):
        layer.register_forward_hook("print")
    layer.register_forward_pre_hook(lambda m, a, k: "neither", with_kwargs=True)
    with pytest.raises(RuntimeError, match="forward pre-hook must return None or a tuple"):
        layer(pyrt.ones(1, 2))


def test_gradients_flow_through_what_a_hook_returns():
    ours, theirs = twin_mlps(5)
    for model in (ours, theirs):
        model[2].register_forward_hook(lambda m, a, o: o * 3)
    x = batch(6)
    loss_p = ours(pyrt.tensor(x)).sum()
    loss_q = theirs(torch.tensor(x)).sum()
    loss_p.backward()
    loss_q.backward()
    for p, q in zip(ours.parameters(), theirs.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_get_submodule_parameter_and_buffer_as_torch():
    def build(lib):
        return lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.Sequential(lib.nn.BatchNorm1d(3)))

    ours, theirs = build(pyrt), build(torch)
    assert ours.get_submodule("") is ours
    assert type(ours.get_submodule("1.0")).__name__ == "BatchNorm1d"
    assert ours.get_parameter("0.weight") is ours[0].weight
    assert ours.get_buffer("1.0.running_mean") is ours[1][0].running_mean
    for call in (lambda m: m.get_submodule("2"), lambda m: m.get_submodule("0.weight"),
                 lambda m: m.get_parameter("0.nope"), lambda m: m.get_parameter("1.0"),
                 lambda m: m.get_parameter("1.0.running_mean"),
                 lambda m: m.get_buffer("0.weight"), lambda m: m.get_buffer("0.x")):
        with pytest.raises(AttributeError) as want:
            call(theirs)
        with pytest.raises(AttributeError) as got:
            call(ours)
        assert str(got.value) == str(want.value)


def test_dtype_methods():
    layer = nn.Linear(2, 2)
    assert layer.float() is layer and layer.weight.dtype == np.float32
    for name in ("double", "half"):
        with pytest.raises(NotImplementedError, match="float32 parameters only"):
            getattr(layer, name)()


@pytest.mark.parametrize("kind", ["Sequential", "ModuleList"])
def test_list_interface_as_torchs(kind):
    def build(lib):
        make = getattr(lib.nn, kind)
        mods = [lib.nn.ReLU(), lib.nn.Tanh(), lib.nn.Sigmoid()]
        return make(*mods) if kind == "Sequential" else make(mods)

    def names(container):
        return [type(m).__name__ for m in container]

    ours, theirs = build(pyrt), build(torch)
    for model, lib in ((ours, pyrt), (theirs, torch)):
        model.insert(1, lib.nn.Identity())
        model.extend([lib.nn.Softmax(dim=1)])
        popped = model.pop(0)
        assert type(popped).__name__ == "ReLU"
        model.pop(-2)
    assert names(ours) == names(theirs)
    assert [name for name, _ in ours.named_children()] == \
        [name for name, _ in theirs.named_children()]
    combined_p, combined_q = ours + build(pyrt), theirs + build(torch)
    assert type(combined_p).__name__ == kind and names(combined_p) == names(combined_q)
    assert combined_p[0] is ours[0]  # the same modules, not copies
    with pytest.raises(IndexError):
        ours.pop(10)
    with pytest.raises(TypeError):
        ours.insert("0", nn.ReLU())
    with pytest.raises(TypeError):
        ours.extend(nn.ReLU())
    assert ours.__add__(nn.Linear(1, 1)) is NotImplemented


def test_a_sequential_changed_in_place_runs_its_new_layers():
    ours, theirs = twin_mlps(7)
    x = batch(8)
    run_both(ours, theirs, x)  # plans its fused steps
    ours.pop(-1)
    del theirs[-1]
    ours.append(nn.Sigmoid())
    theirs.append(torch.nn.Sigmoid())
    run_both(ours, theirs, x)
