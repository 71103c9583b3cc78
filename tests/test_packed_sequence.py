"""nn.utils.rnn (pad_sequence, PackedSequence and its packing and unpacking) and the recurrent
layers over a PackedSequence. The utilities against torch.nn.utils.rnn where installed and
against their definitions in NumPy; the layers over a packed batch against torch's (outputs,
final states, gradients of inputs and weights) and, without PyTorch, against running each
sequence alone through the same layer, which is what packing means. Also gradients through
packing, round trips, and the errors PyTorch raises."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
from pyrt import nn
from pyrt.nn.utils import rnn as R

try:  # the reference for the comparisons marked needs_torch
    import torch
    import torch.nn.utils.rnn as T
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")

F32 = np.float32


def assert_close(got, ref, tol=2e-5, what=""):
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    assert got.shape == ref.shape, f"{what}: shape {got.shape} != {ref.shape}"
    scale = max(float(np.max(np.abs(ref), initial=0.0)), 1.0)
    err = float(np.max(np.abs(got - ref), initial=0.0))
    assert err <= tol * scale, f"{what}: max error {err:.3g}"


def padded_reference(x, lengths, padding_value=0.0):
    """x [T, B, *] with every step past a sequence's length set to padding_value."""
    out = np.array(x, copy=True)
    for b, n in enumerate(lengths):
        out[n:, b] = padding_value
    return out


def packed_reference(x, lengths):
    """(data, batch_sizes, order) of packing x [T, B, *] by its definition: the sequences
    sorted longest first (stably), then step by step the steps that exist."""
    order = np.argsort(-np.asarray(lengths), kind="stable")
    rows, sizes = [], []
    for t in range(max(lengths)):
        active = [b for b in order if lengths[b] > t]
        sizes.append(len(active))
        rows.extend(x[t, b] for b in active)
    return np.stack(rows), np.array(sizes), order


# ---------------------------------------------------------------- the utilities, by definition

@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=1, max_size=5), st.integers(0, 2),
       st.booleans(), st.integers(0, 2**31 - 1))
def test_pack_and_pad_match_their_definitions(lengths, extra, batch_first, seed):
    steps = max(lengths) + extra
    x = np.random.default_rng(seed).standard_normal((steps, len(lengths), 3)).astype(F32)
    given_x = np.swapaxes(x, 0, 1).copy() if batch_first else x
    packed = R.pack_padded_sequence(pyrt.tensor(given_x), lengths, batch_first=batch_first,
                                    enforce_sorted=False)
    data, sizes, order = packed_reference(x, lengths)
    np.testing.assert_array_equal(packed.data.numpy(), data)
    np.testing.assert_array_equal(packed.batch_sizes.numpy(), sizes)
    np.testing.assert_array_equal(packed.sorted_indices.numpy(), order)
    np.testing.assert_array_equal(packed.unsorted_indices.numpy(), np.argsort(order))
    np.testing.assert_array_equal(packed.lengths(), np.asarray(lengths)[order])

    padded, got_lengths = R.pad_packed_sequence(packed, batch_first=batch_first,
                                                padding_value=-2.0, total_length=steps)
    want = padded_reference(x, lengths, -2.0)
    np.testing.assert_array_equal(padded.numpy(), np.swapaxes(want, 0, 1) if batch_first
                                  else want)
    np.testing.assert_array_equal(got_lengths.numpy(), lengths)
    assert got_lengths.numpy().dtype == np.int64


def test_sorted_lengths_pack_without_indices():
    x = pyrt.tensor(np.arange(24, dtype=F32).reshape(4, 3, 2))
    packed = R.pack_padded_sequence(x, [4, 2, 2])
    assert packed.sorted_indices is None and packed.unsorted_indices is None
    np.testing.assert_array_equal(packed.batch_sizes.numpy(), [3, 3, 1, 1])
    padded, lengths = R.pad_packed_sequence(packed)
    assert padded.shape == (4, 3, 2)
    np.testing.assert_array_equal(lengths.numpy(), [4, 2, 2])
    assert isinstance(packed, tuple) and packed._fields == (
        "data", "batch_sizes", "sorted_indices", "unsorted_indices")


def test_lengths_as_tensor_or_array():
    x = pyrt.tensor(np.random.default_rng(1).standard_normal((3, 2, 2)).astype(F32))
    ref = R.pack_padded_sequence(x, [3, 1])
    for lengths in (pyrt.tensor(np.array([3, 1])), np.array([3, 1], dtype=np.int32), (3, 1)):
        got = R.pack_padded_sequence(x, lengths)
        np.testing.assert_array_equal(got.data.numpy(), ref.data.numpy())


@pytest.mark.parametrize("side", ["right", "left"])
@pytest.mark.parametrize("batch_first", [False, True])
def test_pad_sequence(side, batch_first):
    g = np.random.default_rng(2)
    seqs = [g.standard_normal((n, 2, 3)).astype(F32) for n in (2, 5, 1)]
    got = R.pad_sequence([pyrt.tensor(s) for s in seqs], batch_first=batch_first,
                         padding_value=7.0, padding_side=side).numpy()
    want = np.full((5, 3, 2, 3), 7.0, F32)
    for b, s in enumerate(seqs):
        if side == "right":
            want[:len(s), b] = s
        else:
            want[5 - len(s):, b] = s
    np.testing.assert_array_equal(got, np.swapaxes(want, 0, 1) if batch_first else want)


def test_round_trips_and_unpad():
    g = np.random.default_rng(3)
    seqs = [pyrt.tensor(g.standard_normal((n, 4)).astype(F32)) for n in (3, 5, 2, 5)]
    for back in (R.unpack_sequence(R.pack_sequence(seqs, enforce_sorted=False)),
                 R.unpad_sequence(R.pad_sequence(seqs), [3, 5, 2, 5]),
                 R.unpad_sequence(R.pad_sequence(seqs, batch_first=True),
                                  pyrt.tensor(np.array([3, 5, 2, 5])), batch_first=True)):
        assert len(back) == 4
        for a, b in zip(back, seqs):
            np.testing.assert_array_equal(a.numpy(), b.numpy())
    perm = pyrt.tensor(np.array([2, 0, 3, 1]))
    np.testing.assert_array_equal(R.invert_permutation(perm).numpy(), [1, 3, 0, 2])
    assert R.invert_permutation(None) is None


def test_gradients_flow_through_packing():
    g = np.random.default_rng(4)
    x = pyrt.tensor(g.standard_normal((4, 3, 2)).astype(F32), requires_grad=True)
    lengths = [2, 4, 1]
    packed = R.pack_padded_sequence(x, lengths, enforce_sorted=False)
    weight = g.standard_normal(packed.data.shape).astype(F32)
    (packed.data * pyrt.tensor(weight)).sum().backward()
    # each step of a sequence gets its packed row's weight; padding gets none
    data, _, _ = packed_reference(np.arange(12).reshape(4, 3, 1), lengths)
    want = np.zeros((4, 3, 2), F32)
    for row, index in enumerate(data[:, 0]):
        t, b = divmod(int(index), 3)
        want[t, b] = weight[row]
    np.testing.assert_array_equal(x.grad.numpy(), want)

    y = pyrt.tensor(g.standard_normal((4, 3, 2)).astype(F32), requires_grad=True)
    padded, _ = R.pad_packed_sequence(R.pack_padded_sequence(y, lengths, enforce_sorted=False),
                                      padding_value=5.0)
    padded.sum().backward()
    np.testing.assert_array_equal(y.grad.numpy(), padded_reference(np.ones((4, 3, 2), F32),
                                                                   lengths))


def test_packed_sequence_to():
    x = pyrt.tensor(np.ones((2, 2, 1), F32))
    packed = R.pack_padded_sequence(x, [2, 1])
    assert packed.to("cpu") is packed
    assert not packed.is_cuda
    as_f64 = packed.to(np.float64)
    assert as_f64.data.dtype == np.float64 and as_f64.batch_sizes is packed.batch_sizes


# ---------------------------------------------------------------- errors, as PyTorch raises them

def test_errors():
    x = pyrt.tensor(np.zeros((3, 2, 4), F32))
    with pytest.raises(RuntimeError, match="sorted in decreasing order"):
        R.pack_padded_sequence(x, [2, 3])
    with pytest.raises(RuntimeError, match="greater than 0"):
        R.pack_padded_sequence(x, [2, 0], enforce_sorted=False)
    with pytest.raises(RuntimeError, match="equal to batch_size"):
        R.pack_padded_sequence(x, [2])
    with pytest.raises(ValueError, match="longer than the input's 3 steps"):
        R.pack_padded_sequence(x, [4, 2])
    with pytest.raises(TypeError, match="lengths must be a 1-D sequence of ints"):
        R.pack_padded_sequence(x, [2.0, 1.0])
    with pytest.raises(TypeError, match="input must be a Tensor"):
        R.pack_padded_sequence(np.zeros((3, 2)), [2, 1])
    with pytest.raises(ValueError, match="time and a batch dim"):
        R.pack_padded_sequence(pyrt.tensor(np.zeros(3, F32)), [2])
    with pytest.raises(ValueError, match="total_length=2"):
        R.pad_packed_sequence(R.pack_padded_sequence(x, [3, 2]), total_length=2)
    with pytest.raises(RuntimeError, match="padding_side"):
        R.pad_sequence([pyrt.tensor(np.zeros(2, F32))], padding_side="up")
    with pytest.raises(RuntimeError, match="empty list"):
        R.pad_sequence([])


# ---------------------------------------------------------------- recurrent layers over packing

def layer(kind, **kwargs):
    pyrt.manual_seed(0)
    return getattr(nn, kind)(3, 5, **kwargs)


def initial(kind, module, batch, seed):
    """hx for `module` over `batch` sequences: (pyrt's, NumPy arrays)."""
    g = np.random.default_rng(seed)
    layers = module.num_layers * (2 if module.bidirectional else 1)
    h_size = module.proj_size if getattr(module, "proj_size", 0) else module.hidden_size
    h0 = g.standard_normal((layers, batch, h_size)).astype(F32)
    if kind != "LSTM":
        return pyrt.tensor(h0), (h0,)
    c0 = g.standard_normal((layers, batch, module.hidden_size)).astype(F32)
    return (pyrt.tensor(h0), pyrt.tensor(c0)), (h0, c0)


def states(kind, final):
    return final if kind == "LSTM" else (final,)


CASES = [("RNN", {}), ("GRU", {}), ("LSTM", {}),
         ("RNN", {"num_layers": 2, "bidirectional": True, "nonlinearity": "relu"}),
         ("GRU", {"num_layers": 2, "bidirectional": True}),
         ("LSTM", {"num_layers": 2, "bidirectional": True}),
         ("LSTM", {"proj_size": 2, "bidirectional": True}),
         ("GRU", {"bias": False})]


@pytest.mark.parametrize("kind,kwargs", CASES)
@pytest.mark.parametrize("with_hx", [False, True])
def test_packed_layer_is_each_sequence_alone(kind, kwargs, with_hx):
    """Packing means each sequence runs only its own steps: the packed batch gives, for every
    sequence, the output and final state of running it alone (unbatched) through the layer."""
    module = layer(kind, **kwargs)
    lengths = [3, 6, 1, 4, 6]
    x = np.random.default_rng(5).standard_normal((6, 5, 3)).astype(F32)
    hx, arrays = initial(kind, module, 5, 6) if with_hx else (None, None)
    out, final = module(R.pack_padded_sequence(pyrt.tensor(x), lengths, enforce_sorted=False),
                        hx)
    padded, _ = R.pad_packed_sequence(out)
    padded, final = padded.detach().numpy(), [s.detach().numpy() for s in states(kind, final)]
    for b, n in enumerate(lengths):
        alone_hx = None
        if with_hx:
            alone = tuple(pyrt.tensor(a[:, b]) for a in arrays)
            alone_hx = alone if kind == "LSTM" else alone[0]
        o, f = module(pyrt.tensor(x[:n, b]), alone_hx)
        assert_close(padded[:n, b], o.detach().numpy(), what=f"output of sequence {b}")
        assert not padded[n:, b].any(), "steps past a sequence's end are zero"
        for got, want in zip(final, states(kind, f)):
            assert_close(got[:, b], want.detach().numpy(), what=f"final state of sequence {b}")


@needs_torch
@pytest.mark.parametrize("kind,kwargs", CASES)
@pytest.mark.parametrize("enforce_sorted,with_hx", [(False, True), (False, False),
                                                    (True, True)])
def test_packed_layer_against_torch(kind, kwargs, enforce_sorted, with_hx):
    module = layer(kind, **kwargs)
    ref = getattr(torch.nn, kind)(3, 5, **kwargs)
    ref.load_state_dict({k: torch.from_numpy(np.array(v))
                         for k, v in module.state_dict().items()})
    lengths = [6, 6, 4, 3, 1] if enforce_sorted else [3, 6, 1, 4, 6]
    g = np.random.default_rng(7)
    x = g.standard_normal((6, 5, 3)).astype(F32)
    hx, arrays = initial(kind, module, 5, 8) if with_hx else (None, None)
    ref_hx = None
    if with_hx:
        ref_hx = tuple(torch.from_numpy(a) for a in arrays)
        ref_hx = ref_hx if kind == "LSTM" else ref_hx[0]
    xp, xt = pyrt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, final = module(R.pack_padded_sequence(xp, lengths, enforce_sorted=enforce_sorted), hx)
    ref_out, ref_final = ref(T.pack_padded_sequence(xt, lengths,
                                                    enforce_sorted=enforce_sorted), ref_hx)
    np.testing.assert_array_equal(out.batch_sizes.numpy(), ref_out.batch_sizes.numpy())
    assert_close(out.data.detach().numpy(), ref_out.data.detach().numpy(), what="packed output")
    finals, ref_finals = states(kind, final), states(kind, ref_final)
    for got, want in zip(finals, ref_finals):
        assert_close(got.detach().numpy(), want.detach().numpy(), what="final state")

    weight = g.standard_normal(out.data.shape).astype(F32)
    loss = (out.data * pyrt.tensor(weight)).sum() + sum(s.sum() for s in finals)
    ref_loss = (ref_out.data * torch.from_numpy(weight)).sum() + sum(s.sum()
                                                                     for s in ref_finals)
    loss.backward()
    ref_loss.backward()
    assert_close(xp.grad.numpy(), xt.grad.numpy(), what="input gradient")
    for (name, p), q in zip(module.named_parameters(), ref.parameters()):
        assert_close(p.grad.numpy(), q.grad.numpy(), what=f"gradient of {name}")


@needs_torch
def test_utilities_against_torch():
    g = np.random.default_rng(9)
    seqs = [g.standard_normal((n, 3)).astype(F32) for n in (2, 5, 5, 1, 3)]
    for side in ("left", "right"):
        for batch_first in (False, True):
            got = R.pad_sequence([pyrt.tensor(s) for s in seqs], batch_first, 1.5, side)
            want = T.pad_sequence([torch.from_numpy(s) for s in seqs], batch_first, 1.5, side)
            np.testing.assert_array_equal(got.numpy(), want.numpy())
    for enforce_sorted, order in ((False, seqs), (True, sorted(seqs, key=len, reverse=True))):
        got = R.pack_sequence([pyrt.tensor(s) for s in order], enforce_sorted)
        want = T.pack_sequence([torch.from_numpy(s) for s in order], enforce_sorted)
        for a, b in zip(got, want):
            if b is None:
                assert a is None
            else:
                np.testing.assert_array_equal(a.numpy(), b.numpy())
        padded, lengths = R.pad_packed_sequence(got, batch_first=True, total_length=7)
        ref_padded, ref_lengths = T.pad_packed_sequence(want, batch_first=True,
                                                        total_length=7)
        np.testing.assert_array_equal(padded.numpy(), ref_padded.numpy())
        np.testing.assert_array_equal(lengths.numpy(), ref_lengths.numpy())


def test_packed_layer_errors():
    module = layer("LSTM")
    packed = R.pack_sequence([pyrt.tensor(np.zeros((2, 3), F32))])
    with pytest.raises(RuntimeError, match="Expected hidden"):
        module(packed, (pyrt.tensor(np.zeros((1, 2, 5), F32)),
                        pyrt.tensor(np.zeros((1, 2, 5), F32))))
    wrong = R.pack_sequence([pyrt.tensor(np.zeros((2, 4), F32))])
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size"):
        module(wrong)


def test_packed_training_learns_lengths():
    """A GRU over packed sequences of different lengths learns to output each one's length:
    only possible if padding is not read."""
    pyrt.manual_seed(0)
    g = np.random.default_rng(10)
    gru = nn.GRU(1, 16)
    head = nn.Linear(16, 1)
    opt = pyrt.optim.Adam(list(gru.parameters()) + list(head.parameters()), lr=0.02)
    losses = []
    for _ in range(150):
        lengths = g.integers(1, 9, size=16)
        x = np.ones((8, 16, 1), F32)  # padding equal to the data: only lengths tell them apart
        _, h = gru(R.pack_padded_sequence(pyrt.tensor(x), lengths, enforce_sorted=False))
        pred = head(h[0])
        loss = ((pred - pyrt.tensor(lengths[:, None].astype(F32) / 8)) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.item()))
    assert np.mean(losses[-10:]) < 0.01 < losses[0]
