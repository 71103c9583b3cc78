"""The fused recurrences: the LSTM cell (pyrt.lstm_cell, csrc/kernels/lstm_cell.c) against
the closed form in float64, its gradients against the closed form and central differences,
with either output's gradient missing, without c_prev or gates_h, bitwise the same at 1, 2
and 3 threads and the same as the cell composed of Tensor ops, and its errors; and nn.LSTM
and nn.GRU, whose layers run as one op each (pyrt.recurrence, with the GRU's cell kernel),
bitwise the same at any thread count and the same as their step-by-step composition. Their
values and gradients against PyTorch and NumPy are in test_rnn.py."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
from pyrt.lstm_cell import _composed, lstm_cell


def normal(shape, seed, scale=1.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def sig(x):
    return 1 / (1 + np.exp(-x))


def reference(gx, gh, cp, wh, wc):
    """h, c and the gradients of sum(h * wh + c * wc) in the gates and c_prev, float64."""
    g = gx.astype(np.float64) + (0 if gh is None else gh)
    cp = np.zeros(g.shape[:1] + (g.shape[1] // 4,)) if cp is None else cp.astype(np.float64)
    i, f, gg, o = np.split(g, 4, axis=1)
    si, sf, tg, so = sig(i), sig(f), np.tanh(gg), sig(o)
    c = sf * cp + si * tg
    tc = np.tanh(c)
    h = so * tc
    dct = wc + wh * so * (1 - tc ** 2)
    dgates = np.concatenate([dct * tg * si * (1 - si), dct * cp * sf * (1 - sf),
                             dct * si * (1 - tg ** 2), wh * tc * so * (1 - so)], axis=1)
    return h, c, dgates, dct * sf


def run(gx, gh, cp, wh, wc, threads=1, op=lstm_cell):
    with pyrt.num_threads(threads):
        tensors = [None if a is None else pyrt.tensor(a, requires_grad=True)
                   for a in (gx, gh, cp)]
        h, c = op(*tensors)
        loss = None
        for out, w in ((h, wh), (c, wc)):
            if w is not None:
                term = (out * pyrt.tensor(w)).sum()
                loss = term if loss is None else loss + term
        loss.backward()
        grads = [None if t is None or t.grad is None else t.grad.numpy() for t in tensors]
        return h.detach().numpy(), c.detach().numpy(), grads


@settings(max_examples=30, deadline=None, derandomize=True)
@given(rows=st.integers(1, 40), hidden=st.integers(1, 70), seed=st.integers(0, 2**16),
       with_h=st.booleans(), with_c=st.booleans(), use_h=st.booleans(), use_c=st.booleans(),
       scale=st.sampled_from([0.1, 1.0, 4.0]))
def test_cell_against_closed_form(rows, hidden, seed, with_h, with_c, use_h, use_c, scale):
    if not (use_h or use_c):
        use_h = True
    gx = normal((rows, 4 * hidden), seed, scale)
    gh = normal((rows, 4 * hidden), seed + 1, scale) if with_h else None
    cp = normal((rows, hidden), seed + 2) if with_c else None
    wh = normal((rows, hidden), seed + 3) if use_h else None
    wc = normal((rows, hidden), seed + 4) if use_c else None
    h, c, (dx, dh_, dcp) = run(gx, gh, cp, wh, wc, threads=2)
    zeros = np.zeros((rows, hidden))
    want = reference(gx, gh, cp, zeros if wh is None else wh, zeros if wc is None else wc)
    np.testing.assert_allclose(h, want[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c, want[1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dx, want[2], rtol=1e-4, atol=1e-6)
    if with_h:
        assert np.array_equal(dh_, dx)
    if with_c:
        np.testing.assert_allclose(dcp, want[3], rtol=1e-4, atol=1e-6)


def test_cell_against_central_differences():
    gx, gh, cp = normal((3, 20), 1, 2.0), normal((3, 20), 2), normal((3, 5), 3)
    wh, wc = normal((3, 5), 4), normal((3, 5), 5)

    def loss(gx, cp):
        h, c = lstm_cell(pyrt.tensor(gx), pyrt.tensor(gh), pyrt.tensor(cp))
        return float(((h * pyrt.tensor(wh)).sum() + (c * pyrt.tensor(wc)).sum()).item())

    _, _, (dx, _, dcp) = run(gx, gh, cp, wh, wc)
    for array, grad, at in ((gx, dx, 0), (cp, dcp, 1)):
        for k in range(0, array.size, 3):
            moved = [gx.astype(np.float64), cp.astype(np.float64)]
            step = 1e-2
            values = []
            for sign in (1, -1):
                parts = [m.copy() for m in moved]
                parts[at].reshape(-1)[k] += sign * step
                values.append(loss(*(p.astype(np.float32) for p in parts)))
            fd = (values[0] - values[1]) / (2 * step)
            assert abs(grad.reshape(-1)[k] - fd) <= 2e-2 * max(1.0, abs(fd))


@pytest.mark.parametrize("rows,hidden", [(1, 1), (16, 128), (33, 37), (64, 9), (200, 64)])
def test_cell_is_the_same_at_any_thread_count_and_as_composed(rows, hidden):
    gx, gh = normal((rows, 4 * hidden), 6, 3.0), normal((rows, 4 * hidden), 7)
    cp, wh, wc = normal((rows, hidden), 8), normal((rows, hidden), 9), normal((rows, hidden), 10)
    first = run(gx, gh, cp, wh, wc, 1)
    for threads in (2, 3):
        again = run(gx, gh, cp, wh, wc, threads)
        assert first[0].tobytes() == again[0].tobytes()
        assert first[1].tobytes() == again[1].tobytes()
        for a, b in zip(first[2], again[2]):
            assert a.tobytes() == b.tobytes()
    composed = run(gx, gh, cp, wh, wc, 1, _composed)
    for a, b in zip(first[:2] + tuple(first[2]), composed[:2] + tuple(composed[2])):
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=2e-6)


def test_cell_without_grad_records_nothing():
    with pyrt.no_grad():
        h, c = lstm_cell(pyrt.tensor(normal((2, 8), 0), requires_grad=True))
    assert not h.requires_grad and not c.requires_grad


def test_cell_errors():
    with pytest.raises(ValueError, match="gates must be"):
        lstm_cell(pyrt.tensor(normal((2, 7), 0)))
    with pytest.raises(ValueError, match="gates_h"):
        lstm_cell(pyrt.tensor(normal((2, 8), 0)), pyrt.tensor(normal((3, 8), 0)))
    with pytest.raises(ValueError, match="c_prev"):
        lstm_cell(pyrt.tensor(normal((2, 8), 0)), None, pyrt.tensor(normal((2, 3), 0)))


def test_cell_refuses_c_prev_written_before_backward():
    gates = pyrt.tensor(normal((2, 8), 0), requires_grad=True)
    c_prev = pyrt.tensor(normal((2, 2), 1))
    h, _ = lstm_cell(gates, None, c_prev)
    c_prev.add_(1.0)
    with pytest.raises(RuntimeError, match="inplace"):
        h.sum().backward()


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_layer_is_the_same_at_any_thread_count_and_as_its_steps(kind, bidirectional):
    """nn.LSTM and nn.GRU run each layer and direction as one op (pyrt.recurrence); their
    outputs and gradients are bitwise the same at 1, 2 and 3 threads, and those of the
    step-by-step composition (the path of CuPy arrays and LSTM projections) to rounding."""
    from pyrt.nn import rnn

    x = normal((9, 5, 6), 20)
    w = normal((9, 5, 2 * 7 if bidirectional else 7), 21)

    def run_layer(threads, one_op=True):
        pyrt.manual_seed(3)
        model = getattr(pyrt.nn, kind)(6, 7, num_layers=2, bidirectional=bidirectional)
        xs = pyrt.tensor(x, requires_grad=True)
        if not one_op:  # every array looks unusable to the one-op path
            rnn._plain = lambda a: False
        try:
            with pyrt.num_threads(threads):
                out, final = model(xs)
                h_n = final[0] if kind == "LSTM" else final
                ((out * pyrt.tensor(w)).sum() + (h_n * h_n).sum()).backward()
        finally:
            rnn._plain = pyrt.functional._plain
        return [out.detach().numpy(), h_n.detach().numpy(), xs.grad.numpy()] + \
            [p.grad.numpy() for p in model.parameters()]

    first = run_layer(1)
    for threads in (2, 3):
        assert all(a.tobytes() == b.tobytes() for a, b in zip(first, run_layer(threads)))
    for a, b in zip(first, run_layer(1, one_op=False)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_cell_gives_each_input_its_own_gradient_whichever_require_grad():
    """Inputs that do not require grad hold their places: each other input gets its own
    gradient, of its own shape."""
    gx, gh, cp = normal((3, 8), 30), normal((3, 8), 31), normal((3, 2), 32)
    wh, wc = normal((3, 2), 33), normal((3, 2), 34)
    _, _, (dx, dh_, dcp) = run(gx, gh, cp, wh, wc)
    for needs in [(False, True, True), (True, False, True), (False, False, True),
                  (True, True, False), (False, True, False)]:
        tensors = [pyrt.tensor(a, requires_grad=r) for a, r in zip((gx, gh, cp), needs)]
        h, c = lstm_cell(*tensors)
        ((h * pyrt.tensor(wh)).sum() + (c * pyrt.tensor(wc)).sum()).backward()
        for t, r, want in zip(tensors, needs, (dx, dh_, dcp)):
            if r:
                assert t.grad.shape == want.shape
                assert t.grad.numpy().tobytes() == want.tobytes()
            else:
                assert t.grad is None
