"""The training loop's fast paths give the results of the checked paths they stand in for.

SGD and Adam check hyper-parameters and arrays once and keep the kernels' pointers; these tests
change what those caches depend on between steps (a learning rate, a parameter's array, a
momentum buffer restored from a checkpoint) and compare with a fresh optimizer or the checked
kernels of pyrt.ops. Sequential keeps its plan of fused steps; the tests change its modules
after a first call. The backward pass runs each closure once all of its consumers are done;
the tests use tensors consumed several times, and branches that pass no gradient.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyrt._pyrt_cffi import ffi

import pyrt
from pyrt import nn, optim
from pyrt.nn.linear_chain import LinearChain
from pyrt.ops.optim import adam_step, sgd_step


def _params(seed, shapes=((3, 4), (4,))):
    rng = np.random.default_rng(seed)
    return [nn.Parameter(rng.standard_normal(s).astype(np.float32)) for s in shapes]


def _grads(seed, params):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(p.shape).astype(np.float32) for p in params]


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_sgd_follows_changes_of_lr_and_arrays(momentum):
    params = _params(0)
    ref = [p._data.copy() for p in params]
    bufs = [None] * len(params)
    opt = optim.SGD(params, lr=0.1, momentum=momentum)
    for step in range(6):
        if step == 2:
            opt.param_groups[0]["lr"] = 0.03  # a scheduler's change
        if step == 4:  # a parameter given a new array: the update must land in it
            params[0]._data = params[0]._data.copy()
        lr = opt.param_groups[0]["lr"]
        for p, r, g, i in zip(params, ref, _grads(step, params), range(len(params))):
            p.grad = pyrt.Tensor(g)
            if momentum:
                first = bufs[i] is None
                if first:
                    bufs[i] = np.empty_like(r)
                sgd_step(r, g, bufs[i], lr=lr, momentum=momentum, first_step=first)
            else:
                sgd_step(r, g, lr=lr)
        opt.step()
        for p, r in zip(params, ref):
            np.testing.assert_array_equal(p._data, r)


def test_sgd_checks_hyper_parameters_changed_after_construction():
    params = _params(1)
    opt = optim.SGD(params, lr=0.1)
    for p in params:
        p.grad = pyrt.Tensor(np.ones(p.shape, np.float32))
    opt.param_groups[0]["lr"] = -1.0
    with pytest.raises(ValueError, match="Invalid learning rate"):
        opt.step()
    opt.param_groups[0]["lr"] = 0.1
    opt.step()


@pytest.mark.parametrize("make", [lambda ps: optim.SGD(ps, lr=0.05, momentum=0.9),
                                  lambda ps: optim.Adam(ps, lr=0.01)])
def test_loaded_state_is_used_by_the_next_step(make):
    # two optimizers over the same parameters: loading b's state into a must make a take
    # the step b takes, even though a already cached pointers to its own buffers
    pa, pb = _params(2), _params(2)
    a, b = make(pa), make(pb)
    for step in range(3):
        for p, g in zip(pa, _grads(step, pa)):
            p.grad = pyrt.Tensor(g)
        a.step()
    for step in range(5):
        for p, g in zip(pb, _grads(10 + step, pb)):
            p.grad = pyrt.Tensor(g)
        b.step()
    a.load_state_dict(b.state_dict())
    for p, q in zip(pa, pb):
        p._data[...] = q._data
    for p, q, g in zip(pa, pb, _grads(99, pa)):
        p.grad, q.grad = pyrt.Tensor(g), pyrt.Tensor(g.copy())
    a.step()
    b.step()
    for p, q in zip(pa, pb):
        np.testing.assert_array_equal(p._data, q._data)


def test_adam_matches_the_checked_kernel_across_lr_changes():
    params = _params(3)
    ref = [p._data.copy() for p in params]
    m = [np.zeros_like(r) for r in ref]
    v = [np.zeros_like(r) for r in ref]
    opt = optim.Adam(params, lr=0.01, weight_decay=0.1)
    for step in range(1, 5):
        if step == 3:
            opt.param_groups[0]["lr"] = 0.002
        lr = opt.param_groups[0]["lr"]
        for i, (p, g) in enumerate(zip(params, _grads(step, params))):
            p.grad = pyrt.Tensor(g)
            adam_step(ref[i], g, m[i], v[i], step=step, lr=lr, weight_decay=0.1)
        opt.step()
        for p, r in zip(params, ref):
            np.testing.assert_array_equal(p._data, r)


def test_optimizer_takes_a_non_contiguous_gradient():
    params = _params(4, shapes=((3, 4),))
    g = np.asfortranarray(np.arange(12, dtype=np.float32).reshape(3, 4))
    ref = params[0]._data.copy()
    sgd_step(ref, np.ascontiguousarray(g), lr=0.1)
    params[0].grad = pyrt.Tensor(g)
    optim.SGD(params, lr=0.1).step()
    np.testing.assert_array_equal(params[0]._data, ref)


def test_sequential_follows_changes_of_its_modules():
    pyrt.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    x = pyrt.randn(5, 4)
    first = model(x)._data.copy()
    h = np.maximum(x._data @ model[0].weight._data.T + model[0].bias._data, 0)
    np.testing.assert_allclose(first, h @ model[2].weight._data.T + model[2].bias._data,
                               rtol=1e-5, atol=1e-6)
    model[1] = nn.Tanh()  # a different activation: a different fused step
    np.testing.assert_allclose(
        model(x)._data,
        np.tanh(x._data @ model[0].weight._data.T + model[0].bias._data) @ model[2].weight._data.T
        + model[2].bias._data, rtol=1e-5, atol=1e-6)
    model.append(nn.Sigmoid())
    assert model(x).shape == (5, 2)
    assert np.all((model(x)._data > 0) & (model(x)._data < 1))
    model[0].weight = nn.Parameter(np.zeros((3, 4), np.float32))  # a new parameter is used
    np.testing.assert_allclose(
        model(x)._data,
        1 / (1 + np.exp(-(np.tanh(model[0].bias._data) @ model[2].weight._data.T
                          + model[2].bias._data))) * np.ones((5, 1)), rtol=1e-5, atol=1e-6)


def test_backward_sums_the_gradients_of_a_tensor_used_several_times():
    x = pyrt.tensor(np.array([[1.0, -2.0], [3.0, 0.5]], np.float32), requires_grad=True)
    w = pyrt.tensor(np.array([[0.5, 1.0], [-1.0, 2.0]], np.float32), requires_grad=True)
    h = (x @ w).relu()
    y = (h * h + h @ w + h).sum()  # h is consumed four times, w twice
    y.backward()
    xd, wd = x._data.astype(np.float64), w._data.astype(np.float64)
    pre = xd @ wd
    hd = np.maximum(pre, 0)
    dh = 2 * hd + np.ones((2, 2)) @ wd.T + 1
    dpre = dh * (pre > 0)
    np.testing.assert_allclose(x.grad._data, dpre @ wd.T, rtol=1e-5)
    np.testing.assert_allclose(w.grad._data, xd.T @ dpre + hd.T @ np.ones((2, 2)), rtol=1e-5)


def test_backward_through_a_branch_that_passes_no_gradient():
    # a closure may return None for an input that requires grad: that input's own inputs
    # must still run, with the gradients that reached them by other paths
    from pyrt.functional import _make

    a = pyrt.tensor(np.array([1.0, 2.0], np.float32), requires_grad=True)
    b = pyrt.tensor(np.array([3.0, 4.0], np.float32), requires_grad=True)
    c = a * b
    blocked = _make(c._data.copy(), (c,), lambda g: (None,))  # passes nothing back to c
    only_blocked = _make(b._data.copy(), (b,), lambda g: (None,))
    y = (blocked * 3.0).sum() + (c * 2.0).sum() + only_blocked.sum()
    y.backward()
    np.testing.assert_array_equal(a.grad._data, [6.0, 8.0])
    np.testing.assert_array_equal(b.grad._data, [2.0, 4.0])
    z = _make(a._data.copy(), (a,), lambda g: (None,)).sum()
    a.grad = None
    z.backward()
    assert a.grad is None


# ---- runs of Linear layers as one LinearChain --------------------------------------------

_ACTS = [None, nn.ReLU, nn.Sigmoid, nn.Tanh]


def _layer_by_layer(model, x):
    """The model's modules called one after another: the path a LinearChain stands in for."""
    for module in model:
        x = module(x)
    return x


def _forward_backward(model, run, x, g):
    for p in model.parameters():
        p.grad = None
    x.grad = None
    y = run(model, x)
    y.backward(g)
    grads = [None if p.grad is None else p.grad._data.copy() for p in model.parameters()]
    return y._data.copy(), grads, None if x.grad is None else x.grad._data.copy()


@settings(max_examples=40, deadline=None)
@given(dims=st.lists(st.integers(1, 40), min_size=3, max_size=5),
       acts=st.lists(st.sampled_from(range(len(_ACTS))), min_size=4, max_size=4),
       biases=st.lists(st.booleans(), min_size=4, max_size=4),
       frozen=st.lists(st.booleans(), min_size=8, max_size=8),
       batch=st.integers(0, 70), x_grad=st.booleans(), threads=st.sampled_from([1, 2]),
       seed=st.integers(0, 2**16))
def test_linear_chain_equals_the_layers_one_by_one(dims, acts, biases, frozen, batch, x_grad,
                                                   threads, seed):
    pyrt.manual_seed(seed)
    modules = []
    for i, (k, n) in enumerate(zip(dims, dims[1:])):
        modules.append(nn.Linear(k, n, bias=biases[i]))
        if _ACTS[acts[i]] is not None:
            modules.append(_ACTS[acts[i]]())
    model = nn.Sequential(*modules)
    for p, off in zip(model.parameters(), frozen):
        p.requires_grad = not off
    rng = np.random.default_rng(seed)
    x = pyrt.tensor(rng.standard_normal((batch, dims[0])).astype(np.float32),
                    requires_grad=x_grad)
    g = rng.standard_normal((batch, dims[-1])).astype(np.float32)
    if not x_grad and not any(p.requires_grad for p in model.parameters()):
        return  # nothing to differentiate
    with pyrt.num_threads(threads):
        y, grads, dx = _forward_backward(model, lambda m, t: m(t), x, g)
        y_ref, grads_ref, dx_ref = _forward_backward(model, _layer_by_layer, x, g)
    # the model ran as one fused chain, not through the layers' own path
    (chain, _), = model.__dict__["_plan"][1]
    assert isinstance(chain, LinearChain) and chain(x) is not None
    assert np.array_equal(y, y_ref)
    assert (dx is None) == (dx_ref is None) and (dx is None or np.array_equal(dx, dx_ref))
    for a, b in zip(grads, grads_ref):
        assert (a is None) == (b is None) and (a is None or np.array_equal(a, b))


def test_linear_chain_follows_replaced_parameters():
    pyrt.manual_seed(1)
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    x = pyrt.randn(5, 4)
    model(x)
    # a new array in the same Parameter, then a new Parameter: both are used, and the new
    # Parameter gets the gradient
    model[0].weight._data = np.ascontiguousarray(model[0].weight._data[:, ::-1])
    old = model[2].weight
    model[2].weight = nn.Parameter(np.full((2, 3), 0.5, np.float32))
    y = model(x)
    ref = _layer_by_layer(model, x)
    assert np.array_equal(y._data, ref._data)
    y.sum().backward()
    assert old.grad is None and model[2].weight.grad is not None
    # a weight of the wrong shape: the layers run one by one and raise their own error
    model[2].weight = nn.Parameter(np.zeros((2, 4), np.float32))
    with pytest.raises(ValueError, match="does not match weight"):
        model(x)


def test_linear_chain_with_a_layer_used_twice():
    pyrt.manual_seed(2)
    layer = nn.Linear(3, 3)
    model = nn.Sequential(layer, nn.Tanh(), layer)
    x = pyrt.tensor(np.random.default_rng(2).standard_normal((4, 3)), requires_grad=True)
    g = np.random.default_rng(3).standard_normal((4, 3)).astype(np.float32)
    y, grads, dx = _forward_backward(model, lambda m, t: m(t), x, g)
    y_ref, grads_ref, dx_ref = _forward_backward(model, _layer_by_layer, x, g)
    assert np.array_equal(y, y_ref) and np.array_equal(dx, dx_ref)
    for a, b in zip(grads, grads_ref):
        assert np.array_equal(a, b)


def test_linear_chain_leaves_other_inputs_to_the_layers():
    pyrt.manual_seed(3)
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    x3 = pyrt.randn(2, 5, 4)  # 3-D: the layers flatten the leading dimensions themselves
    assert np.array_equal(model(x3)._data, _layer_by_layer(model, x3)._data)
    xt = pyrt.Tensor(np.asfortranarray(pyrt.randn(5, 4)._data))  # not C-contiguous
    assert np.array_equal(model(xt)._data, _layer_by_layer(model, xt)._data)
    with pytest.raises(ValueError, match="does not match weight"):
        model(pyrt.randn(5, 3))
    with pyrt.no_grad():
        y = model(pyrt.randn(5, 4))
    assert not y.requires_grad and y.is_leaf


def _xor_like(seed):
    pyrt.manual_seed(seed)
    model = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1, bias=False))
    rng = np.random.default_rng(seed)
    xs = [pyrt.tensor(rng.standard_normal((8, 2)).astype(np.float32)) for _ in range(4)]
    return model, xs


def _reference_grads(model, x):
    """The parameter gradients of model(x).sum() computed layer by layer, into fresh arrays."""
    for p in model.parameters():
        p.grad = None
    _layer_by_layer(model, x).sum().backward()
    grads = [p.grad._data.copy() for p in model.parameters()]
    for p in model.parameters():
        p.grad = None
    return grads


def test_linear_chain_reuses_gradient_arrays_nobody_holds():
    model, xs = _xor_like(4)
    refs = [_reference_grads(model, x) for x in xs]
    bases = set()
    for x, ref in zip(xs, refs):
        model.zero_grad()  # the last step's gradients are dropped
        model(x).sum().backward()
        for p, r in zip(model.parameters(), ref):
            assert np.array_equal(p.grad._data, r)
        bases.add(id(model[0].weight.grad._data.base))
    assert len(bases) == 1  # the same buffer every step


@pytest.mark.parametrize("hold", ["grad", "array", "slice", "pointer"])
def test_linear_chain_never_overwrites_a_gradient_still_held(hold):
    model, xs = _xor_like(5)
    refs = [_reference_grads(model, x) for x in xs[:2]]
    model(xs[0]).sum().backward()
    w = model[0].weight
    held = {"grad": lambda: w.grad, "array": lambda: w.grad._data,
            "slice": lambda: w.grad._data[1:], "pointer": lambda: ffi.from_buffer(
                "float[]", w.grad._data)}[hold]()
    first = w.grad._data.copy()
    model.zero_grad()
    model(xs[1]).sum().backward()
    assert np.array_equal(w.grad._data, refs[1][0])
    assert np.array_equal(first, refs[0][0]) and not np.shares_memory(w.grad._data, first)
    kept = {"grad": lambda: held._data, "array": lambda: held,
            "slice": lambda: held, "pointer": lambda: np.frombuffer(ffi.buffer(held),
                                                                    np.float32)}[hold]()
    assert np.array_equal(kept.reshape(-1), first[1:].reshape(-1) if hold == "slice"
                          else first.reshape(-1))


def test_linear_chain_gradients_accumulate_without_zero_grad():
    model, xs = _xor_like(6)
    refs = [_reference_grads(model, x) for x in xs[:3]]
    for x in xs[:3]:
        model(x).sum().backward()  # no zero_grad: gradients add up
    for i, p in enumerate(model.parameters()):
        assert np.allclose(p.grad._data, refs[0][i] + refs[1][i] + refs[2][i], rtol=1e-6)
    held = [p.grad._data for p in model.parameters()]
    model.zero_grad(set_to_none=False)  # zeroed in place, then summed into
    model(xs[3]).sum().backward()
    ref = [p.grad._data.copy() for p in model.parameters()]
    assert all(a is p.grad._data for a, p in zip(held, model.parameters()))
    for got, r in zip(ref, _reference_grads(model, xs[3])):
        assert np.array_equal(got, r)


def test_linear_chain_reuses_output_arrays_nobody_holds():
    model, xs = _xor_like(8)
    refs = [_layer_by_layer(model, x)._data.copy() for x in xs]
    arrays = set()
    for x, ref in zip(xs, refs):
        model.zero_grad()
        loss = model(x).sum()  # the output itself is held by the loss's graph only
        loss.backward()
        assert np.isclose(loss.item(), ref.sum(), rtol=1e-5, atol=1e-6)
        arrays.add(id(model.__dict__["_plan"][1][0][0]._reuse.outs[0][1]))
    assert len(arrays) == 1
    # a loop that keeps each output until the next one replaces it: two arrays in turn, and
    # every output keeps its values while held
    outputs = []
    for x, ref in zip(xs, refs):
        output = model(x)
        assert np.array_equal(output._data, ref)
        outputs.append(output)
    for output, ref in zip(outputs, refs):
        assert np.array_equal(output._data, ref)


def test_linear_chain_output_read_by_a_pending_backward_is_not_reused():
    model, xs = _xor_like(9)
    ref = _reference_grads(model, xs[0])
    for p in model.parameters():
        p.grad = None
    output = model(xs[0])
    output._data = output._data.copy()  # the graph no longer references the forward's array
    pending = output.sum()
    del output
    model(xs[1])  # a forward between the first one and its backward
    model(xs[2])
    pending.backward()
    for p, r in zip(model.parameters(), ref):
        assert np.array_equal(p.grad._data, r)


def test_linear_chain_forward_twice_then_backward():
    model, xs = _xor_like(10)
    ref0, ref1 = _reference_grads(model, xs[0]), _reference_grads(model, xs[1])
    (model(xs[0]).sum() + model(xs[1]).sum()).backward()
    for p, r0, r1 in zip(model.parameters(), ref0, ref1):
        assert np.allclose(p.grad._data, r0 + r1, rtol=1e-6)


def test_linear_chain_shared_by_threads():
    # each thread reuses only its own arrays: outputs computed concurrently by one model stay
    # those of their own inputs
    import threading

    model, xs = _xor_like(11)
    refs = [_layer_by_layer(model, x)._data.copy() for x in xs]
    errors = []

    def run(i):
        for _ in range(300):
            with pyrt.no_grad():
                y = model(xs[i])
            if not np.array_equal(y._data, refs[i]):
                errors.append(i)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(xs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_linear_chain_keeps_no_large_arrays():
    # arrays of the buffer cache's size and more are made afresh, not kept by the chain
    pyrt.manual_seed(12)
    model = nn.Sequential(nn.Linear(200, 300), nn.ReLU(), nn.Linear(300, 10))
    x = pyrt.randn(128, 200)
    refs = _reference_grads(model, x)
    for _ in range(2):
        model.zero_grad()
        out = model(x)
        assert np.array_equal(out._data, _layer_by_layer(model, x)._data)
        out.sum().backward()
        for p, r in zip(model.parameters(), refs):
            assert np.array_equal(p.grad._data, r)
    chain = model.__dict__["_plan"][1][0][0]
    assert chain._reuse.outs == () and chain._reuse.grads is None
