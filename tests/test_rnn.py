"""Recurrent layers (nn.RNN, LSTM, GRU and their cells): outputs, final states and every
gradient against torch.nn with the same weights over layers, directions, batch_first, bias,
unbatched input, initial states and projections (fixed cases and hypothesis-drawn sizes);
without PyTorch, against a float64 NumPy reference of the recurrences (forward) and its
finite differences (gradients). Also: parameter names, shapes, initialisation and state_dict
with torch's keys, repr, errors as PyTorch raises them, dropout between layers while training
only, and a small sequence task learned with Adam."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
from pyrt import cuda, nn, optim

try:  # the reference for the comparisons marked needs_torch; the others use NumPy's
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")

F32 = np.float32


def rng(seed):
    return np.random.default_rng(seed)


def assert_close(got, ref, rtol=1e-5, what="", floor=1e-30):
    """Equal to `rtol` relative to the largest magnitude of the reference, or `floor` if
    larger (float32 sums in a different order differ in the last places of their terms, not
    of a result near zero: a gradient that is a sum of cancelling terms passes the size of
    its terms as the floor)."""
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    assert got.shape == ref.shape, f"{what}: shape {got.shape} != {ref.shape}"
    scale = max(float(np.max(np.abs(ref), initial=0.0)), floor)
    err = float(np.max(np.abs(got - ref), initial=0.0))
    assert err <= rtol * scale, f"{what}: max error {err:.3g} > {rtol} * {scale:.3g}"


def make(kind, *args, **kwargs):
    """pyrt.nn's `kind` ("RNN", "LSTM", "GRU" or a cell), seeded."""
    pyrt.manual_seed(0)
    return getattr(nn, kind)(*args, **kwargs)


def twin(module, kind, *args, **kwargs):
    """The torch module `kind`(*args, **kwargs) with `module`'s weights."""
    twin = getattr(torch.nn, kind)(*args, **kwargs)
    twin.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in
                          module.state_dict().items()})
    return twin


def grads(module):
    return {name: p.grad.numpy() for name, p in module.named_parameters()}


# ---- the NumPy reference -------------------------------------------------------------------


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def ref_step(mode, x, h, c, p, suffix=""):
    """One step of `mode` in float64 from input x [N, F] and state h (and c), with the
    parameters p[name + suffix]; torch's formulas as its documentation writes them."""
    b_ih, b_hh = p.get("bias_ih" + suffix, 0.0), p.get("bias_hh" + suffix, 0.0)
    gi = x @ p["weight_ih" + suffix].T + b_ih
    gh = h @ p["weight_hh" + suffix].T + b_hh
    if mode == "RNN_TANH":
        return np.tanh(gi + gh), None
    if mode == "RNN_RELU":
        return np.maximum(gi + gh, 0), None
    if mode == "LSTM":
        i, f, g, o = np.split(gi + gh, 4, axis=1)
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
        h = sigmoid(o) * np.tanh(c)
        if "weight_hr" + suffix in p:
            h = h @ p["weight_hr" + suffix].T
        return h, c
    i_r, i_z, i_n = np.split(gi, 3, axis=1)
    h_r, h_z, h_n = np.split(gh, 3, axis=1)
    r, z = sigmoid(i_r + h_r), sigmoid(i_z + h_z)
    n = np.tanh(i_n + r * h_n)
    return (1 - z) * n + z * h, None


def reference(mode, p, x, h0, c0, num_layers, bidirectional):
    """(output [L, N, D * H], h_n, c_n or None) of a whole stacked layer, time first."""
    directions = 2 if bidirectional else 1
    hs, cs, inp = [], [], x
    for layer in range(num_layers):
        outs = []
        for d in range(directions):
            k = layer * directions + d
            suffix = f"_l{layer}" + ("_reverse" if d else "")
            h, c = h0[k], None if c0 is None else c0[k]
            out = [None] * len(x)
            for t in (reversed(range(len(x))) if d else range(len(x))):
                h, c = ref_step(mode, inp[t], h, c, p, suffix)
                out[t] = h
            outs.append(np.stack(out))
            hs.append(h)
            cs.append(c)
        inp = np.concatenate(outs, axis=2)
    return inp, np.stack(hs), None if c0 is None else np.stack(cs)


def params64(module):
    return {name: p.detach().numpy().astype(np.float64) for name, p in
            module.named_parameters()}


# ---- against torch ---------------------------------------------------------------------------

KINDS = [("RNN", {}), ("RNN", {"nonlinearity": "relu"}), ("LSTM", {}), ("GRU", {})]
KIND_IDS = ["rnn_tanh", "rnn_relu", "lstm", "gru"]
STACKS = [(1, False), (2, False), (1, True), (2, True)]
# (batch_first, bias, batched, initial state given)
OPTIONS = [(False, True, True, True), (True, True, True, False), (False, False, True, False),
           (True, False, False, True), (False, True, False, False)]


def compare_layer(kind, kwargs, input_size, hidden_size, length, batch, seed, batched=True,
                  given_state=True):
    """pyrt's layer against torch's with the same weights: output, final states and the
    gradients of every parameter, of the input and of the initial states, the loss a random
    weighting of the output plus the squared final states."""
    layers = kwargs.get("num_layers", 1) * (2 if kwargs.get("bidirectional") else 1)
    model = make(kind, input_size, hidden_size, **kwargs)
    ref = twin(model, kind, input_size, hidden_size, **kwargs)
    r = rng(seed)
    lead = (batch, length) if kwargs.get("batch_first") else (length, batch)
    x = r.standard_normal((lead if batched else (length,)) + (input_size,)).astype(F32)
    sizes = [kwargs.get("proj_size") or hidden_size] + ([hidden_size] if kind == "LSTM" else [])
    states = [r.standard_normal((layers,) + ((batch,) if batched else ()) + (n,)).astype(F32)
              for n in sizes]
    xs, xt = pyrt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ss = [pyrt.tensor(s, requires_grad=True) for s in states]
    st_ = [torch.tensor(s, requires_grad=True) for s in states]
    if given_state:
        hx_p = tuple(ss) if kind == "LSTM" else ss[0]
        hx_t = tuple(st_) if kind == "LSTM" else st_[0]
        out, final = model(xs, hx_p)
        out_t, final_t = ref(xt, hx_t)
    else:
        out, final = model(xs)
        out_t, final_t = ref(xt)
    finals = final if kind == "LSTM" else (final,)
    finals_t = final_t if kind == "LSTM" else (final_t,)
    assert_close(out.detach().numpy(), out_t.detach().numpy(), what="output")
    for i, (a, b) in enumerate(zip(finals, finals_t)):
        assert_close(a.detach().numpy(), b.detach().numpy(), what=f"final state {i}")
    w = r.standard_normal(out.shape).astype(F32)
    loss = (out * pyrt.tensor(w)).sum() + sum((s * s).sum() for s in finals)
    loss_t = (out_t * torch.tensor(w)).sum() + sum((s * s).sum() for s in finals_t)
    loss.backward()
    loss_t.backward()
    ref_params = dict(ref.named_parameters())
    # a bias's gradient sums the gates' gradients over steps and rows, which may cancel: its
    # terms are as large as the gradients of the weights they scale
    floor = max(float(p.grad.abs().max()) for p in ref_params.values())
    for name, g in grads(model).items():
        assert_close(g, ref_params[name].grad.numpy(), what=f"grad of {name}",
                     floor=0.1 * floor)
    assert_close(xs.grad.numpy(), xt.grad.numpy(), what="grad of input")
    if given_state:
        for i, (a, b) in enumerate(zip(ss, st_)):
            assert_close(a.grad.numpy(), b.grad.numpy(), what=f"grad of initial state {i}")


@needs_torch
@pytest.mark.parametrize("kind,extra", KINDS, ids=KIND_IDS)
@pytest.mark.parametrize("num_layers,bidirectional", STACKS)
@pytest.mark.parametrize("batch_first,bias,batched,given_state", OPTIONS)
def test_layer_matches_torch(kind, extra, num_layers, bidirectional, batch_first, bias, batched,
                             given_state):
    kwargs = dict(extra, num_layers=num_layers, bidirectional=bidirectional,
                  batch_first=batch_first, bias=bias)
    compare_layer(kind, kwargs, 4, 5, 7, 3, seed=num_layers, batched=batched,
                  given_state=given_state)


@needs_torch
@pytest.mark.parametrize("num_layers,bidirectional", STACKS)
@pytest.mark.parametrize("batched,given_state", [(True, True), (False, False)])
def test_lstm_with_projections_matches_torch(num_layers, bidirectional, batched, given_state):
    kwargs = {"num_layers": num_layers, "bidirectional": bidirectional, "proj_size": 3}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's note that oneDNN has no projections
        compare_layer("LSTM", kwargs, 4, 6, 5, 2, seed=7, batched=batched,
                      given_state=given_state)


@needs_torch
@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_long_sequence_matches_torch(kind):
    """Past the few steps of the other cases: the time steps are cut from the input
    projection in halves of halves, 37 of them unevenly."""
    compare_layer(kind, {"num_layers": 2, "bidirectional": True}, 3, 4, 37, 2, seed=5)


@needs_torch
@settings(max_examples=12, deadline=None)
@given(kind=st.sampled_from(["RNN", "LSTM", "GRU"]), input_size=st.integers(1, 5),
       hidden_size=st.integers(1, 5), length=st.integers(1, 9), batch=st.integers(1, 4),
       num_layers=st.integers(1, 2), bidirectional=st.booleans(), batch_first=st.booleans(),
       seed=st.integers(0, 2**16))
def test_layer_matches_torch_over_sizes(kind, input_size, hidden_size, length, batch,
                                        num_layers, bidirectional, batch_first, seed):
    kwargs = {"num_layers": num_layers, "bidirectional": bidirectional,
              "batch_first": batch_first}
    compare_layer(kind, kwargs, input_size, hidden_size, length, batch, seed)


CELLS = [("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu"}), ("LSTMCell", {}),
         ("GRUCell", {})]
CELL_IDS = ["rnn_tanh", "rnn_relu", "lstm", "gru"]


@needs_torch
@pytest.mark.parametrize("kind,extra", CELLS, ids=CELL_IDS)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("batched,given_state", [(True, True), (True, False), (False, True)])
def test_cell_matches_torch(kind, extra, bias, batched, given_state):
    """A cell's new state(s) and the gradients of its parameters, input and state."""
    cell = make(kind, 4, 5, bias=bias, **extra)
    ref = twin(cell, kind, 4, 5, bias=bias, **extra)
    r = rng(3)
    lead = (3,) if batched else ()
    x = r.standard_normal(lead + (4,)).astype(F32)
    states = [r.standard_normal(lead + (5,)).astype(F32)
              for _ in range(2 if kind == "LSTMCell" else 1)]
    xs, xt = pyrt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ss = [pyrt.tensor(s, requires_grad=True) for s in states]
    st_ = [torch.tensor(s, requires_grad=True) for s in states]
    args_p, args_t = [xs], [xt]
    if given_state:
        args_p.append(tuple(ss) if kind == "LSTMCell" else ss[0])
        args_t.append(tuple(st_) if kind == "LSTMCell" else st_[0])
    new, new_t = cell(*args_p), ref(*args_t)
    new = new if kind == "LSTMCell" else (new,)
    new_t = new_t if kind == "LSTMCell" else (new_t,)
    loss, loss_t = 0, 0
    for i, (a, b) in enumerate(zip(new, new_t)):
        assert_close(a.detach().numpy(), b.detach().numpy(), what=f"state {i}")
        w = r.standard_normal(a.shape).astype(F32)
        loss = loss + (a * pyrt.tensor(w)).sum()
        loss_t = loss_t + (b * torch.tensor(w)).sum()
    loss.backward()
    loss_t.backward()
    ref_params = dict(ref.named_parameters())
    for name, g in grads(cell).items():
        assert_close(g, ref_params[name].grad.numpy(), what=f"grad of {name}")
    assert_close(xs.grad.numpy(), xt.grad.numpy(), what="grad of input")
    if given_state:
        for i, (a, b) in enumerate(zip(ss, st_)):
            assert_close(a.grad.numpy(), b.grad.numpy(), what=f"grad of state {i}")


@needs_torch
@pytest.mark.parametrize("kind,kwargs", [
    ("RNN", {"num_layers": 2, "nonlinearity": "relu"}),
    ("LSTM", {"num_layers": 2, "bidirectional": True, "proj_size": 2}),
    ("GRU", {"bidirectional": True, "bias": False}),
    ("LSTMCell", {}),
])
def test_torch_state_dict_loads_with_the_same_names_and_shapes(kind, kwargs):
    """A torch module's state_dict, as arrays, loads into pyrt's (the keys in the same order)
    and then both compute the same thing."""
    torch.manual_seed(1)
    ref = getattr(torch.nn, kind)(3, 4, **kwargs)
    model = make(kind, 3, 4, **kwargs)
    state = {k: v.numpy() for k, v in ref.state_dict().items()}
    assert list(model.state_dict()) == list(state)
    assert [v.shape for v in model.state_dict().values()] == [v.shape for v in state.values()]
    model.load_state_dict(state)
    x = rng(2).standard_normal((5, 2, 3) if "Cell" not in kind else (2, 3)).astype(F32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's note that oneDNN has no projections
        out_t = ref(torch.tensor(x))
    out = model(pyrt.tensor(x))
    first_p = out[0] if isinstance(out, tuple) else out
    first_t = out_t[0] if isinstance(out_t, tuple) else out_t
    assert_close(first_p.detach().numpy(), first_t.detach().numpy(), what=kind)


@needs_torch
@pytest.mark.parametrize("kind,kwargs", [
    ("RNN", {}), ("RNN", {"nonlinearity": "relu", "num_layers": 3}),
    ("LSTM", {"num_layers": 2, "bias": False, "batch_first": True, "dropout": 0.5,
              "bidirectional": True, "proj_size": 3}),
    ("GRU", {"dropout": 0.25, "num_layers": 2}),
    ("RNNCell", {}), ("RNNCell", {"bias": False, "nonlinearity": "relu"}),
    ("LSTMCell", {"bias": False}), ("GRUCell", {}),
])
def test_repr_matches_torch(kind, kwargs):
    assert repr(make(kind, 4, 5, **kwargs)) == repr(getattr(torch.nn, kind)(4, 5, **kwargs))


# ---- against the NumPy reference -------------------------------------------------------------


@pytest.mark.parametrize("kind,extra", KINDS + [("LSTM", {"proj_size": 2})],
                         ids=KIND_IDS + ["lstm_proj"])
@pytest.mark.parametrize("batch_first", [False, True])
def test_layer_matches_numpy_reference(kind, extra, batch_first):
    model = make(kind, 3, 4, num_layers=2, bidirectional=True, batch_first=batch_first,
                 **extra)
    r = rng(11)
    x = r.standard_normal((6, 2, 3)).astype(F32)
    h0 = r.standard_normal((4, 2, extra.get("proj_size", 4))).astype(F32)
    c0 = r.standard_normal((4, 2, 4)).astype(F32) if kind == "LSTM" else None
    hx = (pyrt.tensor(h0), pyrt.tensor(c0)) if kind == "LSTM" else pyrt.tensor(h0)
    xin = x.transpose(1, 0, 2) if batch_first else x
    out, final = model(pyrt.tensor(np.ascontiguousarray(xin)), hx)
    want, h_n, c_n = reference(model.mode, params64(model), x.astype(np.float64), h0, c0, 2,
                               True)
    got = out.detach().numpy()
    assert_close(got.transpose(1, 0, 2) if batch_first else got, want, what="output")
    if kind == "LSTM":
        assert_close(final[0].detach().numpy(), h_n, what="h_n")
        assert_close(final[1].detach().numpy(), c_n, what="c_n")
    else:
        assert_close(final.detach().numpy(), h_n, what="h_n")


@pytest.mark.parametrize("kind,extra", [("RNN", {}), ("LSTM", {"proj_size": 2}), ("GRU", {})])
def test_gradients_match_finite_differences_of_the_reference(kind, extra):
    """Every parameter's gradient, the input's and the initial state's, against central
    differences of the float64 reference's loss (the reference itself checked against the
    layer's forward above)."""
    model = make(kind, 2, 3, num_layers=2, bidirectional=True, **extra)
    r = rng(4)
    x = r.standard_normal((4, 2, 2))
    h0 = r.standard_normal((4, 2, extra.get("proj_size", 3)))
    c0 = r.standard_normal((4, 2, 3)) if kind == "LSTM" else None
    w = r.standard_normal((4, 2, 2 * extra.get("proj_size", 3)))
    p = params64(model)

    def loss(p, x, h0):
        out, h_n, _ = reference(model.mode, p, x, h0, c0, 2, True)
        return float((out * w).sum() + (h_n ** 2).sum())

    def numeric(array, f):
        g = np.zeros_like(array)
        for i in np.ndindex(array.shape):
            keep = array[i]
            array[i] = keep + 1e-6
            up = f()
            array[i] = keep - 1e-6
            down = f()
            array[i] = keep
            g[i] = (up - down) / 2e-6
        return g

    xs = pyrt.tensor(x.astype(F32), requires_grad=True)
    hs = pyrt.tensor(h0.astype(F32), requires_grad=True)
    hx = (hs, pyrt.tensor(c0.astype(F32))) if kind == "LSTM" else hs
    out, final = model(xs, hx)
    h_n = final[0] if kind == "LSTM" else final
    ((out * pyrt.tensor(w.astype(F32))).sum() + (h_n * h_n).sum()).backward()
    for name, g in grads(model).items():
        assert_close(g, numeric(p[name], lambda: loss(p, x, h0)), rtol=1e-4, what=name)
    assert_close(xs.grad.numpy(), numeric(x, lambda: loss(p, x, h0)), rtol=1e-4, what="input")
    assert_close(hs.grad.numpy(), numeric(h0, lambda: loss(p, x, h0)), rtol=1e-4, what="h0")


@pytest.mark.parametrize("kind,extra", CELLS, ids=CELL_IDS)
def test_cell_matches_numpy_reference(kind, extra):
    cell = make(kind, 3, 4, **extra)
    r = rng(8)
    x = r.standard_normal((2, 3)).astype(F32)
    h = r.standard_normal((2, 4)).astype(F32)
    c = r.standard_normal((2, 4)).astype(F32)
    mode = cell.mode
    want_h, want_c = ref_step(mode, x.astype(np.float64), h, c, params64(cell))
    if kind == "LSTMCell":
        got_h, got_c = cell(pyrt.tensor(x), (pyrt.tensor(h), pyrt.tensor(c)))
        assert_close(got_c.detach().numpy(), want_c, what="c'")
    else:
        got_h = cell(pyrt.tensor(x), pyrt.tensor(h))
    assert_close(got_h.detach().numpy(), want_h, what="h'")
    # without a state: zeros; unbatched: the same step on one row
    zeros = np.zeros((2, 4))
    want0, _ = ref_step(mode, x.astype(np.float64), zeros, zeros, params64(cell))
    got0 = cell(pyrt.tensor(x))
    got0 = got0[0] if kind == "LSTMCell" else got0
    assert_close(got0.detach().numpy(), want0, what="zero state")
    one = cell(pyrt.tensor(x[1]))
    one = one[0] if kind == "LSTMCell" else one
    assert one.shape == (4,)
    assert_close(one.detach().numpy(), want0[1], what="unbatched")


def test_unbatched_input_gives_unbatched_output_and_states():
    model = make("LSTM", 3, 4, num_layers=2, bidirectional=True, batch_first=True)
    x = pyrt.tensor(rng(1).standard_normal((5, 3)).astype(F32))
    out, (h, c) = model(x)
    assert out.shape == (5, 8) and h.shape == (4, 4) and c.shape == (4, 4)
    batched, (hb, cb) = model(x.unsqueeze(0))  # batch_first: N leads
    np.testing.assert_array_equal(out.detach().numpy(), batched.detach().numpy()[0])
    np.testing.assert_array_equal(h.detach().numpy(), hb.detach().numpy()[:, 0])
    np.testing.assert_array_equal(c.detach().numpy(), cb.detach().numpy()[:, 0])


def test_no_grad_gives_the_same_values_without_a_graph():
    """Without gradients the time steps are cut in one split: the same values."""
    model = make("GRU", 3, 4, num_layers=2, bidirectional=True)
    x = pyrt.tensor(rng(2).standard_normal((9, 2, 3)).astype(F32))
    out, h = model(x)
    assert out.requires_grad and h.requires_grad
    with pyrt.no_grad():
        out0, h0 = model(x)
    assert not out0.requires_grad and not h0.requires_grad
    np.testing.assert_array_equal(out0.numpy(), out.detach().numpy())
    np.testing.assert_array_equal(h0.numpy(), h.detach().numpy())


def test_an_empty_batch_gives_empty_outputs():
    out, (h, c) = make("LSTM", 3, 4, num_layers=2)(pyrt.zeros(5, 0, 3))
    assert out.shape == (5, 0, 4) and h.shape == (2, 0, 4) and c.shape == (2, 0, 4)


# ---- parameters, initialisation, state_dict, repr ----------------------------------------------


def test_parameter_names_and_shapes_are_torchs():
    model = make("LSTM", 3, 5, num_layers=2, bidirectional=True, proj_size=2)
    layer0 = [("weight_ih_l0", (20, 3)), ("weight_hh_l0", (20, 2)), ("bias_ih_l0", (20,)),
              ("bias_hh_l0", (20,)), ("weight_hr_l0", (2, 5))]
    layer1 = [(n.replace("l0", "l1"), (20, 4) if n == "weight_ih_l0" else s) for n, s in layer0]
    want = []
    for layer in (layer0, layer1):
        want += layer + [(n + "_reverse", s) for n, s in layer]
    assert [(n, p.shape) for n, p in model.named_parameters()] == want
    # all_weights: each layer and direction's parameters, in that order
    assert [p.shape for p in model.all_weights[3]] == [s for _, s in layer1]
    assert model.all_weights[1][0] is model.weight_ih_l0_reverse
    gru = make("GRU", 3, 5, bias=False)
    assert [(n, p.shape) for n, p in gru.named_parameters()] == [
        ("weight_ih_l0", (15, 3)), ("weight_hh_l0", (15, 5))]
    rnn = make("RNN", 3, 5, num_layers=2)
    assert [n for n, _ in rnn.named_parameters()][4:] == [
        "weight_ih_l1", "weight_hh_l1", "bias_ih_l1", "bias_hh_l1"]
    assert rnn.weight_ih_l1.shape == (5, 5)
    cell = make("GRUCell", 3, 5)
    assert [(n, p.shape) for n, p in cell.named_parameters()] == [
        ("weight_ih", (15, 3)), ("weight_hh", (15, 5)), ("bias_ih", (15,)), ("bias_hh", (15,))]
    assert [n for n, _ in make("LSTMCell", 3, 5, bias=False).named_parameters()] == [
        "weight_ih", "weight_hh"]
    assert cell.bias_ih is not None and make("RNNCell", 3, 5, bias=False).bias_ih is None


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell"])
def test_init_is_uniform_within_one_over_sqrt_hidden_size_from_pyrts_generator(kind):
    hidden = 16
    a = make(kind, 8, hidden)
    bound = 1 / math.sqrt(hidden)
    values = np.concatenate([p.detach().numpy().ravel() for p in a.parameters()])
    assert np.all(np.abs(values) <= bound)
    assert np.abs(values).max() > 0.95 * bound  # spread over the whole interval
    assert abs(values.mean()) < 0.1 * bound
    b = make(kind, 8, hidden)  # the same seed: the same weights
    for (name, pa), pb in zip(a.named_parameters(), b.parameters()):
        np.testing.assert_array_equal(pa.detach().numpy(), pb.detach().numpy(), err_msg=name)
    pyrt.manual_seed(1)  # drawn again from another seed: other weights
    a.reset_parameters()
    hh = "weight_hh" if "Cell" in kind else "weight_hh_l0"
    assert not np.array_equal(getattr(a, hh).detach().numpy(), getattr(b, hh).detach().numpy())


def test_state_dict_round_trip():
    a = make("LSTM", 3, 4, num_layers=2, bidirectional=True)
    pyrt.manual_seed(9)
    b = nn.LSTM(3, 4, num_layers=2, bidirectional=True)
    x = pyrt.tensor(rng(0).standard_normal((4, 2, 3)).astype(F32))
    assert not np.array_equal(a(x)[0].detach().numpy(), b(x)[0].detach().numpy())
    b.load_state_dict({k: np.array(v) for k, v in a.state_dict().items()})
    np.testing.assert_array_equal(a(x)[0].detach().numpy(), b(x)[0].detach().numpy())
    with pytest.raises(RuntimeError, match="size mismatch for weight_ih_l0"):
        nn.LSTM(2, 4, num_layers=2, bidirectional=True).load_state_dict(a.state_dict())


def test_repr():
    assert repr(make("RNN", 4, 5)) == "RNN(4, 5)"
    assert repr(make("LSTM", 4, 5, 2, bias=False, batch_first=True, dropout=0.5,
                     bidirectional=True, proj_size=3)) == (
        "LSTM(4, 5, proj_size=3, num_layers=2, bias=False, batch_first=True, dropout=0.5, "
        "bidirectional=True)")
    assert repr(make("GRUCell", 4, 5, bias=False)) == "GRUCell(4, 5, bias=False)"
    assert repr(make("RNNCell", 4, 5, nonlinearity="relu")) == "RNNCell(4, 5, nonlinearity=relu)"
    assert repr(nn.Sequential(make("GRU", 2, 3))) == "Sequential(\n  (0): GRU(2, 3)\n)"


# ---- errors ------------------------------------------------------------------------------------


def tensor_of(lib):
    """A function making a random float32 tensor of a shape, in `lib` (pyrt or torch)."""
    r = rng(0)
    return lambda *shape: lib.tensor(r.standard_normal(shape).astype(F32))


# (id, the call given (nn, tensor maker), pyrt's exception, its message, whether torch raises
# the same type)
ERRORS = [
    ("nonlinearity", lambda nn, T: nn.RNN(4, 5, nonlinearity="sigmoid"), ValueError,
     "Unknown nonlinearity 'sigmoid'", True),
    ("dropout_high", lambda nn, T: nn.LSTM(4, 5, dropout=1.5), ValueError,
     r"dropout should be a number in range \[0, 1\]", True),
    ("dropout_negative", lambda nn, T: nn.GRU(4, 5, dropout=-0.1), ValueError, "dropout", True),
    ("dropout_bool", lambda nn, T: nn.GRU(4, 5, dropout=True), ValueError, "dropout", True),
    ("hidden_size_zero", lambda nn, T: nn.RNN(4, 0), ValueError,
     "hidden_size must be greater than zero", True),
    ("input_size_negative", lambda nn, T: nn.LSTM(-1, 5), ValueError,
     "input_size must be greater than zero", True),
    ("num_layers_zero", lambda nn, T: nn.GRU(4, 5, num_layers=0), ValueError,
     "num_layers must be greater than zero", True),
    ("hidden_size_float", lambda nn, T: nn.GRU(4, 5.0), TypeError,
     "hidden_size should be of type int, got: float", True),
    ("bias_not_bool", lambda nn, T: nn.RNN(4, 5, bias=1), TypeError,
     "bias should be of type bool", True),
    ("batch_first_not_bool", lambda nn, T: nn.RNN(4, 5, batch_first="yes"), TypeError,
     "batch_first should be of type bool", True),
    ("proj_size_too_big", lambda nn, T: nn.LSTM(4, 5, proj_size=5), ValueError,
     "proj_size has to be smaller than hidden_size", True),
    ("proj_size_negative", lambda nn, T: nn.LSTM(4, 5, proj_size=-1), ValueError,
     "proj_size should be a positive integer or zero", True),
    ("input_1d", lambda nn, T: nn.GRU(4, 5)(T(4)), ValueError,
     "GRU: Expected input to be 2D or 3D, got 1D instead", True),
    ("input_4d", lambda nn, T: nn.LSTM(4, 5)(T(1, 2, 3, 4)), ValueError,
     "LSTM: Expected input to be 2D or 3D, got 4D", True),
    ("input_size", lambda nn, T: nn.RNN(4, 5)(T(3, 2, 3)), RuntimeError,
     r"input.size\(-1\) must be equal to input_size. Expected 4, got 3", True),
    ("h0_shape", lambda nn, T: nn.RNN(4, 5)(T(3, 2, 4), T(1, 3, 5)), RuntimeError,
     r"Expected hidden size \(1, 2, 5\), got \[1, 3, 5\]", True),
    ("h0_layers", lambda nn, T: nn.GRU(4, 5, bidirectional=True)(T(3, 2, 4), T(1, 2, 5)),
     RuntimeError, r"Expected hidden size \(2, 2, 5\), got \[1, 2, 5\]", True),
    ("h0_batch_first", lambda nn, T: nn.GRU(4, 5, batch_first=True)(T(3, 2, 4), T(1, 2, 5)),
     RuntimeError, r"Expected hidden size \(1, 3, 5\)", True),
    ("c0_shape", lambda nn, T: nn.LSTM(4, 5)(T(3, 2, 4), (T(1, 2, 5), T(1, 2, 6))),
     RuntimeError, r"Expected hidden\[1\] size \(1, 2, 5\), got \[1, 2, 6\]", True),
    ("h0_proj", lambda nn, T: nn.LSTM(4, 5, proj_size=2)(T(3, 2, 4), (T(1, 2, 5), T(1, 2, 5))),
     RuntimeError, r"Expected hidden\[0\] size \(1, 2, 2\), got \[1, 2, 5\]", True),
    ("h0_rank_batched", lambda nn, T: nn.RNN(4, 5)(T(3, 2, 4), T(2, 5)), RuntimeError,
     "For batched 3-D input, hx should also be 3-D but got 2-D tensor", True),
    ("h0_rank_unbatched", lambda nn, T: nn.GRU(4, 5)(T(3, 4), T(1, 1, 5)), RuntimeError,
     "For unbatched 2-D input, hx should also be 2-D but got 3-D tensor", True),
    ("lstm_rank", lambda nn, T: nn.LSTM(4, 5)(T(3, 2, 4), (T(1, 2, 5), T(2, 5))),
     RuntimeError, r"hx and cx should also be 3-D but got \(3-D, 2-D\)", True),
    ("empty_sequence", lambda nn, T: nn.LSTM(4, 5)(T(0, 2, 4)), RuntimeError,
     "Expected sequence length to be larger than 0", True),
    ("cell_input_3d", lambda nn, T: nn.GRUCell(4, 5)(T(1, 2, 4)), ValueError,
     "GRUCell: Expected input to be 1D or 2D, got 3D instead", True),
    ("cell_hidden_3d", lambda nn, T: nn.RNNCell(4, 5)(T(2, 4), T(1, 2, 5)), ValueError,
     "RNNCell: Expected hidden to be 1D or 2D, got 3D instead", True),
    ("lstm_cell_hx_3d", lambda nn, T: nn.LSTMCell(4, 5)(T(2, 4), (T(2, 5), T(1, 2, 5))),
     ValueError, r"LSTMCell: Expected hx\[1\] to be 1D or 2D, got 3D instead", True),
    ("cell_input_size", lambda nn, T: nn.RNNCell(4, 5)(T(3, 6)), RuntimeError,
     "input has inconsistent input_size: got 6 expected 4", True),
    ("cell_batch", lambda nn, T: nn.GRUCell(4, 5)(T(3, 4), T(2, 5)), RuntimeError,
     "Input batch size 3 doesn't match hidden0 batch size 2", True),
    ("cell_hidden_size", lambda nn, T: nn.RNNCell(4, 5)(T(3, 4), T(3, 6)), RuntimeError,
     "hidden0 has inconsistent hidden_size: got 6, expected 5", True),
    ("lstm_cell_c", lambda nn, T: nn.LSTMCell(4, 5)(T(3, 4), (T(3, 5), T(3, 6))),
     RuntimeError, "hidden1 has inconsistent hidden_size: got 6, expected 5", True),
    # torch accepts these until a forward or takes them as they come; pyrt refuses them at once
    ("cell_nonlinearity", lambda nn, T: nn.RNNCell(4, 5, nonlinearity="gelu"), ValueError,
     "Unknown nonlinearity 'gelu'", False),
    ("cell_hidden_size_zero", lambda nn, T: nn.LSTMCell(4, 0), ValueError,
     "hidden_size must be greater than zero", False),
    ("cell_unbatched_2d_state", lambda nn, T: nn.GRUCell(4, 5)(T(4), T(1, 5)), RuntimeError,
     "For 1-D input, hidden should also be 1-D but got 2-D tensor", False),
    ("lstm_hx_tensor", lambda nn, T: nn.LSTM(4, 5)(T(3, 2, 4), T(1, 2, 5)), TypeError,
     r"hx must be a tuple \(h_0, c_0\)", False),
    ("lstm_cell_hx_one", lambda nn, T: nn.LSTMCell(4, 5)(T(3, 4), (T(3, 5),)), TypeError,
     r"hx must be a tuple \(h, c\)", False),
]


@pytest.mark.parametrize("call,error,message", [e[1:4] for e in ERRORS],
                         ids=[e[0] for e in ERRORS])
def test_errors(call, error, message):
    with pytest.raises(error, match=message):
        call(nn, tensor_of(pyrt))


@needs_torch
@pytest.mark.parametrize("call,error", [e[1:3] for e in ERRORS if e[4]],
                         ids=[e[0] for e in ERRORS if e[4]])
def test_errors_are_torchs(call, error):
    with pytest.raises(error):
        call(torch.nn, tensor_of(torch))


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell"])
@pytest.mark.parametrize("value", [[[0.0, 1.0]], np.zeros((2, 1, 2), F32), None],
                         ids=["list", "ndarray", "None"])
def test_input_that_is_not_a_tensor_is_a_type_error(kind, value):
    """Packed sequences and other inputs that are not Tensors are refused by name."""
    with pytest.raises(TypeError, match=f"{kind}: input must be a pyrt Tensor, got"):
        make(kind, 2, 3)(value)


@pytest.mark.parametrize("kind", ["RNN", "GRU", "RNNCell", "GRUCell"])
def test_a_state_that_is_not_a_tensor_is_a_type_error(kind):
    x = pyrt.zeros(1, 2) if "Cell" in kind else pyrt.zeros(3, 1, 2)
    with pytest.raises(TypeError, match="must be a pyrt Tensor, got list"):
        make(kind, 2, 3)(x, [[0.0, 0.0, 0.0]])


def test_a_float64_input_is_refused_as_torch_refuses_it():
    with pytest.raises(ValueError, match=r"RNN input dtype \(float64\) does not match weight "
                                         r"dtype \(float32\)"):
        make("GRU", 2, 3)(pyrt.tensor(np.zeros((3, 1, 2))).double())


# ---- dropout -----------------------------------------------------------------------------------


def test_dropout_applies_between_layers_while_training_only():
    model = make("LSTM", 3, 4, num_layers=2, dropout=0.5)
    plain = make("LSTM", 3, 4, num_layers=2)  # the same weights (the same seed), no dropout
    x = pyrt.tensor(rng(3).standard_normal((5, 2, 3)).astype(F32))
    want = plain(x)[0].detach().numpy()
    model.eval()
    np.testing.assert_array_equal(model(x)[0].detach().numpy(), want)
    model.train()
    pyrt.manual_seed(7)
    first = model(x)[0].detach().numpy()
    assert not np.allclose(first, want)
    pyrt.manual_seed(7)  # the masks come from pyrt's generator: seeded, the same again
    np.testing.assert_array_equal(model(x)[0].detach().numpy(), first)
    assert not np.array_equal(model(x)[0].detach().numpy(), first)  # the next masks differ


def test_dropout_of_one_zeroes_the_input_of_the_next_layer_but_not_the_output():
    """p = 1 drops every element between layers: layer 1 then sees zeros, and its output
    (the last layer's) is kept as it is."""
    model = make("GRU", 3, 4, num_layers=2, bidirectional=True, dropout=1.0)
    top = nn.GRU(8, 4, bidirectional=True)  # layer 1 alone, fed zeros
    top.load_state_dict({k.replace("_l1", "_l0"): v for k, v in model.state_dict().items()
                         if "_l1" in k})
    x = pyrt.tensor(rng(4).standard_normal((5, 2, 3)).astype(F32))
    h0 = pyrt.tensor(rng(5).standard_normal((4, 2, 4)).astype(F32))
    out, h = model(x, h0)
    want, want_h = top(pyrt.zeros(5, 2, 8), h0[2:])
    np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), rtol=1e-6,
                               atol=1e-7)
    np.testing.assert_allclose(h.detach().numpy()[2:], want_h.detach().numpy(), rtol=1e-6,
                               atol=1e-7)
    assert np.abs(out.detach().numpy()).max() > 0


def test_dropout_with_one_layer_warns_and_does_nothing():
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        model = make("RNN", 3, 4, dropout=0.5)
    plain = make("RNN", 3, 4)
    x = pyrt.tensor(rng(6).standard_normal((4, 2, 3)).astype(F32))
    np.testing.assert_array_equal(model(x)[0].detach().numpy(), plain(x)[0].detach().numpy())


# ---- training ----------------------------------------------------------------------------------


class Recall(nn.Module):
    """Reads a sequence and answers with a linear read-out of the last hidden state."""

    def __init__(self, kind):
        super().__init__()
        self.rnn = getattr(nn, kind)(1, 12, batch_first=True)
        self.head = nn.Linear(12, 1)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(out[:, -1])


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_adam_learns_to_recall_the_first_element(kind):
    """The target is the first of 6 random numbers, which the state must carry to the end: a
    few dozen Adam steps cut the loss by more than half."""
    pyrt.manual_seed(0)
    model = Recall(kind)
    opt = optim.Adam(model.parameters(), lr=0.02)
    r = rng(0)
    x = r.uniform(-1, 1, (32, 6, 1)).astype(F32)
    y = pyrt.tensor(x[:, 0].copy())
    x = pyrt.tensor(x)
    losses = []
    for _ in range(60):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0], losses[::10]


# ---- CUDA --------------------------------------------------------------------------------------


@pytest.mark.skipif(not cuda.is_available(), reason=f"no CUDA device: {cuda._probe()[1]}")
@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_cuda_matches_cpu(kind):
    """The same layer on the GPU: output and every gradient as on the CPU."""
    import cupy

    cuda.require()
    r = rng(12)
    x = r.standard_normal((6, 3, 4)).astype(F32)
    w = r.standard_normal((6, 3, 10)).astype(F32)
    results = []
    for device in ("cpu", "cuda"):
        model = make(kind, 4, 5, num_layers=2, bidirectional=True).to(device)
        t = pyrt.tensor(x, requires_grad=True, device=device)
        out, _ = model(t)
        (out * pyrt.tensor(w, device=device)).sum().backward()
        results.append([out.data, t.grad.data] + [p.grad.data for p in model.parameters()])
    for d, h in zip(results[1], results[0]):
        assert isinstance(d, cupy.ndarray)
        np.testing.assert_allclose(cupy.asnumpy(d), h, rtol=1e-4, atol=1e-4)
