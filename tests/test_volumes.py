"""The 3-d ops and layers (pyrt.volumes; nn.Conv3d, MaxPool3d, AvgPool3d, the adaptive 3-d
pools, BatchNorm3d, InstanceNorm3d and the 3-d padding layers): values and gradients against
PyTorch where installed and against NumPy references of their definitions (window by window,
in float64) and finite differences; every option over hypothesis-drawn shapes, indices, thread
counts, reprs and errors."""

import itertools

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import pyrt
import pyrt.nn.functional as F
from pyrt import nn

try:  # the reference for the comparisons marked needs_torch; the others use NumPy's
    import torch
    import torch.nn.functional as TF
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")

F32 = np.float32


def close(got, ref, tol=2e-5, what=""):
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    assert got.shape == ref.shape, f"{what}: shape {got.shape} != {ref.shape}"
    scale = max(float(np.max(np.abs(ref), initial=0.0)), 1.0)
    err = float(np.max(np.abs(got - ref), initial=0.0))
    assert err <= tol * scale, f"{what}: max error {err:.3g}"


def three(v):
    return (v,) * 3 if isinstance(v, int) else tuple(v)


# ---- NumPy references, window by window ----------------------------------------------------------


def conv3d_reference(x, w, b, stride, padding, dilation, groups):
    x, w = x.astype(np.float64), w.astype(np.float64)
    (sd, sh, sw), (pd, ph, pw), (dd, dh, dw) = three(stride), three(padding), three(dilation)
    n = x.shape[0]
    k, cg, kd, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pd, pd), (ph, ph), (pw, pw)))
    out = [(xp.shape[2 + a] - (dl * (kk - 1) + 1)) // s + 1
           for a, (kk, s, dl) in enumerate(zip((kd, kh, kw), (sd, sh, sw), (dd, dh, dw)))]
    y = np.zeros((n, k) + tuple(out))
    per = k // groups
    for o in range(k):
        g = o // per
        for i, j, m in itertools.product(range(kd), range(kh), range(kw)):
            patch = xp[:, g * cg:(g + 1) * cg,
                       i * dd:i * dd + (out[0] - 1) * sd + 1:sd,
                       j * dh:j * dh + (out[1] - 1) * sh + 1:sh,
                       m * dw:m * dw + (out[2] - 1) * sw + 1:sw]
            y[:, o] += np.einsum("ncdhw,c->ndhw", patch, w[o, :, i, j, m])
        if b is not None:
            y[:, o] += b[o]
    return y


def out_size(size, k, s, p, d, ceil_mode):
    span = size + 2 * p - d * (k - 1) - 1
    out = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def pool3d_reference(x, kernel, stride, padding, dilation, ceil_mode, kind,
                     count_include_pad=True, divisor_override=None):
    """max (with the flat index of the first maximum) or avg pooling by its definition."""
    kernel, padding, dilation = three(kernel), three(padding), three(dilation)
    stride = kernel if stride is None else three(stride)
    n, c = x.shape[:2]
    sizes = x.shape[2:]
    outs = [out_size(*a, ceil_mode) for a in zip(sizes, kernel, stride, padding, dilation)]
    y = np.zeros((n, c) + tuple(outs))
    index = np.zeros((n, c) + tuple(outs), np.int64)
    for o in itertools.product(*(range(v) for v in outs)):
        starts = [oo * s - p for oo, s, p in zip(o, stride, padding)]
        taps = [[st0 + t * d for t in range(k)] for st0, k, d in zip(starts, kernel, dilation)]
        inside = [[t for t in ax if 0 <= t < size] for ax, size in zip(taps, sizes)]
        if kind == "max":
            best = np.full((n, c), -np.inf)
            where = np.zeros((n, c), np.int64)
            for a, b_, e in itertools.product(*inside):
                v = x[:, :, a, b_, e]
                better = v > best
                best = np.where(better, v, best)
                where = np.where(better, (a * sizes[1] + b_) * sizes[2] + e, where)
            y[(slice(None), slice(None)) + o] = best
            index[(slice(None), slice(None)) + o] = where
        else:
            total = sum(x[:, :, a, b_, e].astype(np.float64)
                        for a, b_, e in itertools.product(*inside))
            if divisor_override:
                count = divisor_override
            elif count_include_pad:
                count = np.prod([min(st0 + k, size + p) - st0 for st0, k, size, p
                                 in zip(starts, kernel, sizes, padding)])
            else:
                count = np.prod([len(ax) for ax in inside])
            y[(slice(None), slice(None)) + o] = total / count
    return y, index


def adaptive_reference(x, out, kind):
    n, c = x.shape[:2]
    sizes = x.shape[2:]
    y = np.zeros((n, c) + tuple(out))
    for o in itertools.product(*(range(v) for v in out)):
        bins = tuple(slice(oo * s // v, -(-(oo + 1) * s // v)) for oo, s, v in zip(o, sizes, out))
        block = x[(slice(None), slice(None)) + bins].reshape(n, c, -1)
        y[(slice(None), slice(None)) + o] = block.max(2) if kind == "max" else block.mean(2)
    return y


def volume(seed, shape):
    return np.random.default_rng(seed).standard_normal(shape).astype(F32)


# ---- conv3d ----------------------------------------------------------------------------------


conv_cases = st.fixed_dictionaries({
    "n": st.integers(1, 2), "groups": st.sampled_from([1, 2]), "cg": st.integers(1, 3),
    "kpg": st.integers(1, 3), "size": st.tuples(st.integers(3, 7), st.integers(3, 7),
                                                 st.integers(3, 7)),
    "kernel": st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3)),
    "stride": st.tuples(st.integers(1, 2), st.integers(1, 2), st.integers(1, 2)),
    "padding": st.tuples(st.integers(0, 2), st.integers(0, 2), st.integers(0, 2)),
    "dilation": st.tuples(st.integers(1, 2), st.integers(1, 2), st.integers(1, 2)),
    "bias": st.booleans(), "seed": st.integers(0, 2**31 - 1)})


def conv_inputs(case):
    c, k = case["cg"] * case["groups"], case["kpg"] * case["groups"]
    x = volume(case["seed"], (case["n"], c) + case["size"])
    w = volume(case["seed"] + 1, (k, case["cg"]) + case["kernel"])
    b = volume(case["seed"] + 2, (k,)) if case["bias"] else None
    return x, w, b


def fits(case):
    return all(s + 2 * p >= d * (k - 1) + 1 for s, p, d, k in
               zip(case["size"], case["padding"], case["dilation"], case["kernel"]))


@settings(max_examples=40, deadline=None)
@given(conv_cases)
def test_conv3d_against_its_definition(case):
    assume(fits(case))
    x, w, b = conv_inputs(case)
    options = {k: case[k] for k in ("stride", "padding", "dilation", "groups")}
    y = F.conv3d(pyrt.tensor(x), pyrt.tensor(w), None if b is None else pyrt.tensor(b),
                 **options)
    close(y.numpy(), conv3d_reference(x, w, b, **options), what="conv3d")


@needs_torch
@settings(max_examples=30, deadline=None)
@given(conv_cases, st.sampled_from([1, 2]))
def test_conv3d_gradients_against_torch(case, threads):
    assume(fits(case))
    pyrt.set_num_threads(threads)
    x, w, b = conv_inputs(case)
    options = {k: case[k] for k in ("stride", "padding", "dilation", "groups")}
    against_torch(F.conv3d, TF.conv3d, (x, w, b), options, case["seed"] + 3)


def against_torch(fn, torch_fn, arrays, options, seed):
    """fn's output and the gradients of its inputs (x, w and b, b None for none) against
    torch_fn's, for a random output gradient."""
    arrays = [a for a in arrays if a is not None]
    mine = [pyrt.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    y = fn(*mine[:2], mine[2] if len(arrays) == 3 else None, **options)
    ref = torch_fn(*theirs[:2], theirs[2] if len(arrays) == 3 else None, **options)
    close(y.detach().numpy(), ref.detach().numpy(), what="output")
    g = volume(seed, tuple(ref.shape))
    (y * pyrt.tensor(g)).sum().backward()
    (ref * torch.from_numpy(g)).sum().backward()
    for name, a, t in zip("xwb", mine, theirs):
        close(a.grad.numpy(), t.grad.numpy(), what=f"gradient of {name}")


def test_conv3d_gradient_by_finite_differences():
    x, w, b = volume(1, (1, 2, 4, 4, 3)), volume(2, (2, 2, 2, 3, 2)), volume(3, (2,))
    g = volume(4, (1, 2, 2, 4, 4))
    xs = [pyrt.tensor(a, requires_grad=True) for a in (x, w, b)]
    (F.conv3d(*xs, stride=(2, 1, 1), padding=(0, 1, 1)) * pyrt.tensor(g)).sum().backward()

    def loss(arrays):
        return float((conv3d_reference(*arrays, (2, 1, 1), (0, 1, 1), 1, 1) * g).sum())

    arrays = [a.astype(np.float64) for a in (x, w, b)]
    for which, t in enumerate(xs):
        numeric = np.zeros(arrays[which].shape)
        for idx in np.ndindex(*arrays[which].shape):
            up = [a.copy() for a in arrays]
            down = [a.copy() for a in arrays]
            up[which][idx] += 1e-3
            down[which][idx] -= 1e-3
            numeric[idx] = (loss(up) - loss(down)) / 2e-3
        close(t.grad.numpy(), numeric, 1e-3, what=f"gradient {which}")


def test_conv3d_same_padding_and_unbatched():
    x, w = volume(5, (3, 5, 6, 4)), volume(6, (2, 3, 2, 3, 4))
    y = F.conv3d(pyrt.tensor(x), pyrt.tensor(w), padding="same", dilation=(1, 2, 1))
    assert y.shape == (2, 5, 6, 4)
    # "same": the extra padding of an even extent goes after, as PyTorch's
    xp = np.pad(x[None], ((0, 0), (0, 0), (0, 1), (2, 2), (1, 2)))
    close(y.numpy(), conv3d_reference(xp, w, None, 1, 0, (1, 2, 1), 1)[0], what="same")
    valid = F.conv3d(pyrt.tensor(x), pyrt.tensor(w), padding="valid")
    close(valid.numpy(), conv3d_reference(x[None], w, None, 1, 0, 1, 1)[0], what="valid")


def test_conv3d_same_bits_at_any_thread_count():
    x, w, b = volume(7, (2, 4, 6, 7, 8)), volume(8, (6, 4, 3, 3, 3)), volume(9, (6,))
    results = []
    for threads in (1, 2, 3):
        pyrt.set_num_threads(threads)
        xt, wt = pyrt.tensor(x, requires_grad=True), pyrt.tensor(w, requires_grad=True)
        y = F.conv3d(xt, wt, pyrt.tensor(b), padding=1)
        y.sum().backward()
        results.append((y.detach().numpy(), xt.grad.numpy(), wt.grad.numpy()))
    for other in results[1:]:
        for a, b_ in zip(results[0], other):
            np.testing.assert_array_equal(a, b_)


def test_conv3d_errors():
    x = pyrt.tensor(np.zeros((1, 2, 5, 5, 5), F32))
    w = pyrt.tensor(np.zeros((3, 2, 2, 2, 2), F32))
    with pytest.raises(RuntimeError, match="to have 3 channels, but got 2 channels"):
        F.conv3d(x, pyrt.tensor(np.zeros((3, 3, 2, 2, 2), F32)))
    with pytest.raises(RuntimeError, match="Kernel size can't be greater than actual input"):
        F.conv3d(x, pyrt.tensor(np.zeros((3, 2, 7, 2, 2), F32)))
    with pytest.raises(RuntimeError, match="Expected 4D \\(unbatched\\) or 5D"):
        F.conv3d(pyrt.tensor(np.zeros((5, 5), F32)), w)
    with pytest.raises(RuntimeError, match="5-D weight"):
        F.conv3d(x, pyrt.tensor(np.zeros((3, 2, 2, 2), F32)))
    with pytest.raises(ValueError, match="not supported for strided"):
        F.conv3d(x, w, stride=2, padding="same")
    with pytest.raises(RuntimeError, match="Invalid padding string"):
        F.conv3d(x, w, padding="foo")
    with pytest.raises(RuntimeError, match="stride to be a single integer value or a list of 3"):
        F.conv3d(x, w, stride=(1, 1))
    with pytest.raises(ValueError, match="padding must be integers >= 0"):
        F.conv3d(x, w, padding=-1)
    with pytest.raises(RuntimeError, match="divisible by 2"):
        F.conv3d(pyrt.tensor(np.zeros((1, 4, 5, 5, 5), F32)),
                 pyrt.tensor(np.zeros((3, 2, 2, 2, 2), F32)), groups=2)
    with pytest.raises(TypeError):
        F.conv3d(np.zeros((1, 2, 5, 5, 5), F32), w)


# ---- conv_transpose3d --------------------------------------------------------------------------


def conv_transpose3d_reference(x, w, b, stride, padding, output_padding, dilation, groups):
    """Each input voxel's value times its filter added into the output at stride steps, the
    padding then cut off each side (the definition, in float64)."""
    (sd, sh, sw), (pd, ph, pw) = three(stride), three(padding)
    (od, oh, ow), (dd, dh, dw) = three(output_padding), three(dilation)
    n, c, depth, height, width = x.shape
    _, kg, kd, kh, kw = w.shape
    full = [(depth - 1) * sd + dd * (kd - 1) + 1 + od, (height - 1) * sh + dh * (kh - 1) + 1 + oh,
            (width - 1) * sw + dw * (kw - 1) + 1 + ow]
    y = np.zeros((n, kg * groups) + tuple(full))
    per = c // groups
    for ci in range(c):
        g = ci // per
        for i, j, m in itertools.product(range(kd), range(kh), range(kw)):
            contrib = np.einsum("ndhw,k->nkdhw", x[:, ci].astype(np.float64), w[ci, :, i, j, m])
            y[:, g * kg:(g + 1) * kg,
              i * dd:i * dd + (depth - 1) * sd + 1:sd,
              j * dh:j * dh + (height - 1) * sh + 1:sh,
              m * dw:m * dw + (width - 1) * sw + 1:sw] += contrib
    y = y[:, :, pd:full[0] - pd, ph:full[1] - ph, pw:full[2] - pw]
    return y if b is None else y + b.reshape(1, -1, 1, 1, 1)


transpose_cases = st.fixed_dictionaries({
    "n": st.integers(1, 2), "groups": st.sampled_from([1, 2]), "cg": st.integers(1, 2),
    "kpg": st.integers(1, 3), "size": st.tuples(st.integers(1, 4), st.integers(1, 4),
                                                 st.integers(1, 4)),
    "kernel": st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3)),
    "stride": st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3)),
    "padding": st.tuples(st.integers(0, 2), st.integers(0, 2), st.integers(0, 2)),
    "dilation": st.tuples(st.integers(1, 2), st.integers(1, 2), st.integers(1, 2)),
    "extra": st.tuples(st.integers(0, 2), st.integers(0, 2), st.integers(0, 2)),
    "bias": st.booleans(), "seed": st.integers(0, 2**31 - 1)})


def transpose_inputs(case):
    """(x, w, b, options) of a case PyTorch takes (output_padding below stride or dilation,
    a positive output), or None."""
    output_padding = tuple(min(e, max(s, d) - 1) for e, s, d in
                           zip(case["extra"], case["stride"], case["dilation"]))
    sizes = [(i - 1) * s - 2 * p + d * (k - 1) + op + 1 for i, s, p, d, k, op in zip(
        case["size"], case["stride"], case["padding"], case["dilation"], case["kernel"],
        output_padding)]
    if min(sizes) < 1:
        return None
    c, k = case["cg"] * case["groups"], case["kpg"] * case["groups"]
    x = volume(case["seed"], (case["n"], c) + case["size"])
    w = volume(case["seed"] + 1, (c, case["kpg"]) + case["kernel"])
    b = volume(case["seed"] + 2, (k,)) if case["bias"] else None
    options = {"stride": case["stride"], "padding": case["padding"],
               "output_padding": output_padding, "dilation": case["dilation"],
               "groups": case["groups"]}
    return x, w, b, options


@settings(max_examples=40, deadline=None)
@given(transpose_cases)
def test_conv_transpose3d_against_its_definition(case):
    inputs = transpose_inputs(case)
    assume(inputs is not None)
    x, w, b, options = inputs
    y = F.conv_transpose3d(pyrt.tensor(x), pyrt.tensor(w), None if b is None else pyrt.tensor(b),
                           **options)
    close(y.numpy(), conv_transpose3d_reference(x, w, b, **options), what="conv_transpose3d")


@needs_torch
@settings(max_examples=30, deadline=None)
@given(transpose_cases, st.sampled_from([1, 2]))
def test_conv_transpose3d_gradients_against_torch(case, threads):
    inputs = transpose_inputs(case)
    assume(inputs is not None)
    x, w, b, options = inputs
    pyrt.set_num_threads(threads)
    against_torch(F.conv_transpose3d, TF.conv_transpose3d, (x, w, b), options, case["seed"] + 3)


def test_conv_transpose3d_is_conv3d_input_gradient():
    """<conv3d(x, w), y> = <x, conv_transpose3d(y, w)>: the two are adjoint."""
    x, w = volume(20, (2, 4, 5, 6, 5)), volume(21, (6, 2, 3, 2, 3))
    options = {"stride": (2, 1, 2), "padding": (1, 0, 1), "dilation": (1, 2, 1), "groups": 2}
    y = F.conv3d(pyrt.tensor(x), pyrt.tensor(w), **options).numpy()
    g = volume(22, y.shape)
    back = F.conv_transpose3d(pyrt.tensor(g), pyrt.tensor(w), output_padding=(0, 0, 0),
                              **options).numpy()
    assert back.shape == x.shape
    np.testing.assert_allclose(float((y * g).sum()), float((x * back).sum()), rtol=1e-4)


def test_conv_transpose3d_layer_and_errors():
    pyrt.manual_seed(2)
    layer = nn.ConvTranspose3d(4, 6, (3, 2, 3), stride=2, padding=1, groups=2)
    assert layer.weight.shape == (4, 3, 3, 2, 3)
    assert repr(layer) == ("ConvTranspose3d(4, 6, kernel_size=(3, 2, 3), stride=(2, 2, 2), "
                           "padding=(1, 1, 1), groups=2)")
    x = pyrt.tensor(volume(23, (1, 4, 3, 3, 3)))
    assert layer(x).shape == (1, 6, 5, 4, 5)
    assert layer(x, output_size=(6, 5, 6)).shape == (1, 6, 6, 5, 6)
    with pytest.raises(ValueError, match="requested an output size"):
        layer(x, output_size=(9, 9, 9))
    w = pyrt.tensor(np.zeros((4, 3, 2, 2, 2), F32))
    with pytest.raises(RuntimeError, match="to have 4 channels, but got 2 channels"):
        F.conv_transpose3d(pyrt.tensor(np.zeros((1, 2, 3, 3, 3), F32)), w)
    with pytest.raises(RuntimeError, match="output padding must be smaller"):
        F.conv_transpose3d(x, w, output_padding=1)
    with pytest.raises(RuntimeError, match="Output size is too small"):
        F.conv_transpose3d(x, w, padding=3)
    with pytest.raises(RuntimeError, match="5-D"):
        F.conv_transpose3d(x, pyrt.tensor(np.zeros((4, 3, 2, 2), F32)))


# ---- pooling ---------------------------------------------------------------------------------


pool_cases = st.fixed_dictionaries({
    "size": st.tuples(st.integers(2, 7), st.integers(2, 7), st.integers(2, 7)),
    "kernel": st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3)),
    "stride": st.one_of(st.none(), st.tuples(st.integers(1, 3), st.integers(1, 3),
                                             st.integers(1, 3))),
    "padding": st.tuples(st.integers(0, 1), st.integers(0, 1), st.integers(0, 1)),
    "dilation": st.tuples(st.integers(1, 2), st.integers(1, 2), st.integers(1, 2)),
    "ceil_mode": st.booleans(), "seed": st.integers(0, 2**31 - 1)})


def valid_pool(case, dilated):
    """Whether PyTorch takes the case: max pooling's (dilated) window must fit the padded
    input, average pooling's the input itself."""
    dilation = case["dilation"] if dilated else (1, 1, 1)
    for s, k, p, d in zip(case["size"], case["kernel"], case["padding"], dilation):
        if p > ((k - 1) * d + 1) // 2 or s + 2 * p < d * (k - 1) + 1 or (not dilated and s < k):
            return False
    return True


@settings(max_examples=50, deadline=None)
@given(pool_cases)
def test_max_pool3d_against_its_definition(case):
    assume(valid_pool(case, True))
    x = volume(case["seed"], (2, 3) + case["size"])
    options = {k: case[k] for k in ("stride", "padding", "dilation", "ceil_mode")}
    y, index = F.max_pool3d(pyrt.tensor(x), case["kernel"], return_indices=True, **options)
    ref, ref_index = pool3d_reference(x, case["kernel"], kind="max", **options)
    close(y.numpy(), ref, 0, what="max_pool3d")
    np.testing.assert_array_equal(index.numpy(), ref_index)
    # each maximum's gradient goes to its index
    xt = pyrt.tensor(x, requires_grad=True)
    g = volume(case["seed"] + 1, ref.shape)
    (F.max_pool3d(xt, case["kernel"], **options) * pyrt.tensor(g)).sum().backward()
    want = np.zeros(x.shape, np.float64).reshape(2, 3, -1)
    np.add.at(want, (np.arange(2)[:, None, None], np.arange(3)[None, :, None],
                     ref_index.reshape(2, 3, -1)), g.reshape(2, 3, -1))
    close(xt.grad.numpy(), want.reshape(x.shape), 1e-6, what="max_pool3d gradient")


@settings(max_examples=50, deadline=None)
@given(pool_cases, st.booleans(), st.sampled_from([None, 1, 5]))
def test_avg_pool3d_against_its_definition(case, count_include_pad, divisor_override):
    assume(valid_pool(case, False))
    x = volume(case["seed"], (2, 3) + case["size"])
    options = {k: case[k] for k in ("stride", "padding", "ceil_mode")}
    y = F.avg_pool3d(pyrt.tensor(x), case["kernel"], count_include_pad=count_include_pad,
                     divisor_override=divisor_override, **options)
    ref, _ = pool3d_reference(x, case["kernel"], dilation=1, kind="avg",
                              count_include_pad=count_include_pad,
                              divisor_override=divisor_override, **options)
    close(y.numpy(), ref, 1e-5, what="avg_pool3d")


@needs_torch
@settings(max_examples=40, deadline=None)
@given(pool_cases, st.booleans(), st.sampled_from([None, 3]))
def test_pools_against_torch(case, count_include_pad, divisor_override):
    x = volume(case["seed"], (2, 3) + case["size"])
    g_seed = case["seed"] + 1
    if valid_pool(case, True):
        options = {k: case[k] for k in ("stride", "padding", "dilation", "ceil_mode")}
        xp, xt = pyrt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        y, i = F.max_pool3d(xp, case["kernel"], return_indices=True, **options)
        ref, ref_i = TF.max_pool3d(xt, case["kernel"], return_indices=True, **options)
        close(y.detach().numpy(), ref.detach().numpy(), 0, what="max")
        np.testing.assert_array_equal(i.numpy(), ref_i.numpy())
        g = volume(g_seed, tuple(ref.shape))
        (y * pyrt.tensor(g)).sum().backward()
        (ref * torch.from_numpy(g)).sum().backward()
        close(xp.grad.numpy(), xt.grad.numpy(), 1e-6, what="max gradient")
    if valid_pool(case, False):
        options = {k: case[k] for k in ("stride", "padding", "ceil_mode")}
        options.update(count_include_pad=count_include_pad, divisor_override=divisor_override)
        xp, xt = pyrt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        y = F.avg_pool3d(xp, case["kernel"], **options)
        ref = TF.avg_pool3d(xt, case["kernel"], **options)
        close(y.detach().numpy(), ref.detach().numpy(), 1e-5, what="avg")
        g = volume(g_seed, tuple(ref.shape))
        (y * pyrt.tensor(g)).sum().backward()
        (ref * torch.from_numpy(g)).sum().backward()
        close(xp.grad.numpy(), xt.grad.numpy(), 1e-5, what="avg gradient")


@pytest.mark.parametrize("out", [1, (2, 3, 4), (None, 2, 1), (5, 6, 7), (3, 1, 5)])
def test_adaptive_pools(out):
    x = volume(11, (2, 3, 5, 6, 7))
    sizes = [x.shape[2 + a] if o is None else o for a, o in enumerate(three(out) if out != 1
                                                                       else (1, 1, 1))]
    close(F.adaptive_avg_pool3d(pyrt.tensor(x), out).numpy(),
          adaptive_reference(x, sizes, "avg"), 1e-5, what="adaptive avg")
    y, index = F.adaptive_max_pool3d(pyrt.tensor(x), out, return_indices=True)
    ref = adaptive_reference(x, sizes, "max")
    close(y.numpy(), ref, 0, what="adaptive max")
    np.testing.assert_array_equal(np.take_along_axis(x.reshape(2, 3, -1),
                                                     index.numpy().reshape(2, 3, -1), 2),
                                  ref.reshape(2, 3, -1))
    if torch is not None:
        for fn, tfn in ((F.adaptive_avg_pool3d, TF.adaptive_avg_pool3d),
                        (F.adaptive_max_pool3d, TF.adaptive_max_pool3d)):
            xp, xt = pyrt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
            y, ref = fn(xp, out), tfn(xt, out)
            g = volume(12, tuple(ref.shape))
            (y * pyrt.tensor(g)).sum().backward()
            (ref * torch.from_numpy(g)).sum().backward()
            close(xp.grad.numpy(), xt.grad.numpy(), 1e-6, what=f"{fn.__name__} gradient")
        _, ref_index = TF.adaptive_max_pool3d(torch.from_numpy(x), out, return_indices=True)
        np.testing.assert_array_equal(index.numpy(), ref_index.numpy())


def test_unbatched_pools():
    x = volume(13, (3, 4, 5, 6))
    for fn, args in ((F.max_pool3d, (2,)), (F.avg_pool3d, (2,)),
                     (F.adaptive_avg_pool3d, (2,)), (F.adaptive_max_pool3d, (2,))):
        batched = fn(pyrt.tensor(x[None]), *args).numpy()
        np.testing.assert_array_equal(fn(pyrt.tensor(x), *args).numpy(), batched[0])
    y, i = F.max_pool3d(pyrt.tensor(x), 2, return_indices=True)
    assert y.shape == i.shape == (3, 2, 2, 3)
    _, i2 = F.max_pool3d_with_indices(pyrt.tensor(x), 2)
    np.testing.assert_array_equal(i2.numpy(), i.numpy())
    _, i3 = F.adaptive_max_pool3d_with_indices(pyrt.tensor(x), (1, 2, 2))
    np.testing.assert_array_equal(i3.numpy(), F.adaptive_max_pool3d(pyrt.tensor(x), (1, 2, 2),
                                                                     True)[1].numpy())


def test_pool_errors():
    x = pyrt.tensor(np.zeros((1, 2, 5, 5, 5), F32))
    with pytest.raises(RuntimeError, match="pad should be at most half of effective kernel"):
        F.max_pool3d(x, 2, padding=2)
    with pytest.raises(RuntimeError, match="pad should be at most half"):
        F.avg_pool3d(x, 2, padding=2)
    with pytest.raises(RuntimeError, match="smaller than kernel size"):
        F.avg_pool3d(x, (6, 1, 1), padding=(3, 0, 0))
    with pytest.raises(RuntimeError, match="divisor must be not zero"):
        F.avg_pool3d(x, 2, divisor_override=0)
    with pytest.raises(RuntimeError, match="output_size must be 3"):
        F.adaptive_avg_pool3d(x, (2, 2))
    with pytest.raises(RuntimeError, match="4D or 5D"):
        F.max_pool3d(pyrt.tensor(np.zeros((5, 5, 5), F32)), 2)
    with pytest.raises(RuntimeError, match="too small"):
        F.max_pool3d(pyrt.tensor(np.zeros((1, 1, 1, 5, 5), F32)), 2)


# ---- layers ----------------------------------------------------------------------------------


def test_conv3d_layer():
    pyrt.manual_seed(0)
    layer = nn.Conv3d(4, 6, (3, 2, 2), stride=(1, 2, 1), padding=1, groups=2)
    assert layer.weight.shape == (6, 2, 3, 2, 2) and layer.bias.shape == (6,)
    bound = 1 / np.sqrt(2 * 3 * 2 * 2)
    assert np.abs(layer.weight.detach().numpy()).max() <= bound
    assert np.abs(layer.weight.detach().numpy()).max() > 0.8 * bound
    assert repr(layer) == ("Conv3d(4, 6, kernel_size=(3, 2, 2), stride=(1, 2, 1), "
                           "padding=(1, 1, 1), groups=2)")
    assert repr(nn.Conv3d(2, 3, 2, bias=False)) == ("Conv3d(2, 3, kernel_size=(2, 2, 2), "
                                                    "stride=(1, 1, 1), bias=False)")
    x = volume(14, (2, 4, 5, 6, 5))
    y = layer(pyrt.tensor(x))
    weight, bias = layer.weight.detach().numpy(), layer.bias.detach().numpy()
    close(y.detach().numpy(), conv3d_reference(x, weight, bias, (1, 2, 1), 1, 1, 2),
          what="layer")
    with pytest.raises(ValueError, match="divisible by groups"):
        nn.Conv3d(3, 6, 2, groups=2)
    with pytest.raises(ValueError, match="not supported for strided"):
        nn.Conv3d(3, 6, 2, stride=2, padding="same")


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("mode", ["zeros", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("padding", [1, (1, 2, 0), "same"])
def test_conv3d_padding_modes(mode, padding):
    pyrt.manual_seed(1)
    layer = nn.Conv3d(2, 3, (3, 2, 3), padding=padding, padding_mode=mode)
    x = volume(15, (1, 2, 5, 6, 7))
    y = layer(pyrt.tensor(x)).detach().numpy()
    if padding == "same":
        sides = [(1, 1), (0, 1), (1, 1)]
    else:
        sides = [(p, p) for p in three(padding)]
    np_mode = {"zeros": "constant", "reflect": "reflect", "replicate": "edge",
               "circular": "wrap"}[mode]
    xp = np.pad(x, [(0, 0), (0, 0)] + sides, mode=np_mode)
    weight, bias = layer.weight.detach().numpy(), layer.bias.detach().numpy()
    close(y, conv3d_reference(xp, weight, bias, 1, 0, 1, 1), what=f"{mode} {padding}")
    if torch is not None:
        ref = torch.nn.Conv3d(2, 3, (3, 2, 3), padding=padding, padding_mode=mode)
        ref.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in
                             layer.state_dict().items()})
        close(y, ref(torch.from_numpy(x)).detach().numpy(), what="torch")


@needs_torch
def test_layer_reprs_match_torch():
    for make in (lambda m: m.MaxPool3d(2), lambda m: m.MaxPool3d((2, 1, 2), 1, 1, 2, True, True),
                 lambda m: m.AvgPool3d(3, 2, 1), lambda m: m.AdaptiveAvgPool3d((2, None, 3)),
                 lambda m: m.AdaptiveMaxPool3d(2), lambda m: m.BatchNorm3d(4),
                 lambda m: m.InstanceNorm3d(4, affine=True), lambda m: m.ZeroPad3d(1),
                 lambda m: m.ConstantPad3d((1, 2, 0, 1, 2, 0), 3.5),
                 lambda m: m.ReflectionPad3d(1), lambda m: m.ReplicationPad3d(2),
                 lambda m: m.CircularPad3d(1), lambda m: m.Conv3d(2, 4, 3, padding="same"),
                 lambda m: m.ConvTranspose3d(2, 4, 3, 2, 1, 1, dilation=2)):
        assert repr(make(nn)) == repr(make(torch.nn))


def test_pool_layers():
    x = pyrt.tensor(volume(16, (2, 3, 6, 5, 4)))
    y, i = nn.MaxPool3d(2, return_indices=True)(x)
    ry, ri = F.max_pool3d(x, 2, return_indices=True)
    np.testing.assert_array_equal(y.numpy(), ry.numpy())
    np.testing.assert_array_equal(i.numpy(), ri.numpy())
    np.testing.assert_array_equal(nn.AvgPool3d(3, 2, 1, divisor_override=4)(x).numpy(),
                                  F.avg_pool3d(x, 3, 2, 1, divisor_override=4).numpy())
    close(nn.AdaptiveAvgPool3d(1)(x).numpy(), x.numpy().mean((2, 3, 4), keepdims=True), 1e-6,
          what="global average")
    assert nn.AdaptiveMaxPool3d((1, 2, 2))(x).shape == (2, 3, 1, 2, 2)
    with pytest.raises(TypeError, match="return_indices must be a bool"):
        nn.MaxPool3d(2, return_indices=1)
    with pytest.raises(ValueError, match="kernel_size must be integers >= 1"):
        nn.AvgPool3d(0)


@pytest.mark.parametrize("training", [True, False])
def test_batch_and_instance_norm_3d(training):
    x = volume(17, (3, 4, 2, 3, 5)) * 2 + 1
    bn = nn.BatchNorm3d(4)
    bn.train(training)
    y = bn(pyrt.tensor(x)).detach().numpy()
    if training:
        mean, var = x.mean((0, 2, 3, 4), keepdims=True), x.var((0, 2, 3, 4), keepdims=True)
        close(y, (x - mean) / np.sqrt(var + 1e-5), 1e-5, what="batch norm")
        close(bn.running_mean.numpy(), 0.1 * mean.ravel(), 1e-5, what="running mean")
    else:
        close(y, x / np.sqrt(1 + 1e-5), 1e-5, what="batch norm eval")
    with pytest.raises(ValueError, match="expected 5D input"):
        bn(pyrt.tensor(x[0]))
    inorm = nn.InstanceNorm3d(4)
    for sample in (x, x[0]):
        got = inorm(pyrt.tensor(sample)).detach().numpy()
        axes = tuple(range(sample.ndim - 3, sample.ndim))
        mean, var = sample.mean(axes, keepdims=True), sample.var(axes, keepdims=True)
        close(got, (sample - mean) / np.sqrt(var + 1e-5), 1e-5, what="instance norm")
    if torch is not None:
        ref = torch.nn.BatchNorm3d(4)
        ref.train(training)
        close(y, ref(torch.from_numpy(x)).detach().numpy(), 1e-5, what="torch batch norm")


@pytest.mark.parametrize("cls,np_mode", [("ZeroPad3d", "constant"), ("ReflectionPad3d", "reflect"),
                                         ("ReplicationPad3d", "edge"),
                                         ("CircularPad3d", "wrap")])
def test_padding_layers_3d(cls, np_mode):
    x = volume(18, (2, 3, 4, 5, 6))
    padding = (1, 2, 0, 1, 2, 1)
    y = getattr(nn, cls)(padding)(pyrt.tensor(x)).numpy()
    want = np.pad(x, [(0, 0), (0, 0), (2, 1), (0, 1), (1, 2)], mode=np_mode)
    np.testing.assert_array_equal(y, want)
    const = nn.ConstantPad3d(1, 2.5)(pyrt.tensor(x)).numpy()
    np.testing.assert_array_equal(const, np.pad(x, [(0, 0), (0, 0)] + [(1, 1)] * 3,
                                                constant_values=2.5))
    with pytest.raises(ValueError, match="tuple of 6 ints"):
        getattr(nn, cls)((1, 2))


# ---- max unpooling and power-average pooling of volumes --------------------------------------


@pytest.mark.parametrize("kernel,stride,padding", [(2, None, 0), ((3, 2, 2), (2, 2, 1), 1),
                                                   (3, 2, (1, 0, 1))])
def test_max_unpool3d_puts_each_maximum_back(kernel, stride, padding):
    x = volume(30, (2, 3, 6, 5, 7))
    y, index = F.max_pool3d(pyrt.tensor(x), kernel, stride, padding, return_indices=True)
    out = F.max_unpool3d(y, index, kernel, stride, padding, output_size=x.shape[2:]).numpy()
    want = np.zeros(x.shape, F32).reshape(2, 3, -1)
    np.put_along_axis(want, index.numpy().reshape(2, 3, -1), y.numpy().reshape(2, 3, -1), 2)
    np.testing.assert_array_equal(out, want.reshape(x.shape))
    layer = nn.MaxUnpool3d(kernel, stride, padding)
    np.testing.assert_array_equal(layer(y, index, output_size=x.shape).numpy(), out)
    # the gradient gathers from the positions written
    yt = pyrt.tensor(y.numpy(), requires_grad=True)
    g = volume(31, x.shape)
    (F.max_unpool3d(yt, index, kernel, stride, padding, x.shape[2:])
     * pyrt.tensor(g)).sum().backward()
    np.testing.assert_array_equal(
        yt.grad.numpy(), np.take_along_axis(g.reshape(2, 3, -1), index.numpy().reshape(2, 3, -1),
                                            2).reshape(y.shape))
    if torch is not None:
        ref = TF.max_unpool3d(torch.from_numpy(y.numpy()), torch.from_numpy(index.numpy()),
                              kernel, stride, padding, output_size=x.shape[2:])
        np.testing.assert_array_equal(out, ref.numpy())


@pytest.mark.parametrize("p", [1.0, 2.0, 3.0, 1.5, float("inf")])
@pytest.mark.parametrize("kernel,stride,ceil_mode", [(2, None, False),
                                                     ((3, 2, 2), (2, 1, 2), True)])
def test_lp_pool3d(p, kernel, stride, ceil_mode):
    # positive values: a window's sum of x ** p below zero has no real root (NaN, as torch's)
    x = np.abs(volume(32, (2, 3, 6, 5, 7))) + 0.1
    xt = pyrt.tensor(x, requires_grad=True)
    y = F.lp_pool3d(xt, p, kernel, stride, ceil_mode)
    window = three(kernel)
    if np.isinf(p):
        ref, _ = pool3d_reference(np.abs(x), window, stride, 0, 1, ceil_mode, "max")
    else:
        # torch's definition: the mean of x ** p over the window, times its size, to 1 / p
        mean, _ = pool3d_reference(x.astype(np.float64) ** p, window, stride, 0, 1, ceil_mode,
                                   "avg")
        ref = (np.sign(mean) * np.abs(mean) * np.prod(window)) ** (1 / p)
    close(y.detach().numpy(), ref, 1e-4, what=f"lp_pool3d p={p}")
    np.testing.assert_array_equal(nn.LPPool3d(p, kernel, stride, ceil_mode)(pyrt.tensor(x))
                                  .numpy(), y.detach().numpy())
    if torch is not None:
        xr = torch.tensor(x, requires_grad=True)
        ref_t = TF.lp_pool3d(xr, p, kernel, stride, ceil_mode)
        g = volume(33, tuple(ref_t.shape))
        (y * pyrt.tensor(g)).sum().backward()
        (ref_t * torch.from_numpy(g)).sum().backward()
        close(y.detach().numpy(), ref_t.detach().numpy(), 1e-4, what="torch")
        close(xt.grad.numpy(), xr.grad.numpy(), 1e-4, what="torch gradient")


@pytest.mark.parametrize("taps,out,depth", [((3, 1, 1, 1), 6, 6), ((2, 2, 0, 1), 4, 8),
                                            ((3, 3, 2, 2), 3, 9), ((1, 2, 0, 1), 5, 9),
                                            ((3, 2, 1, 2), 4, 7)])
@pytest.mark.parametrize("threads", [1, 2])
def test_depth_copies_match_their_strided_forms(taps, out, depth, threads):
    """The parallel block copies of the depth gather and of its adjoint (where each slice has
    one source) against the strided NumPy assignments they replace (taken for arrays that
    are not C-contiguous)."""
    from pyrt.volumes import _gather_taps, _scatter_taps

    x = volume(40, (2, 4, depth, 3, 5))
    with pyrt.num_threads(threads):
        fast = _gather_taps(x, taps, out, 2)
        slow = _gather_taps(np.asfortranarray(x), taps, out, 2)
        np.testing.assert_array_equal(fast, slow)
        cols = volume(41, fast.shape)
        fast = _scatter_taps(cols, taps, out, x.shape)
        slow = _scatter_taps(np.asfortranarray(cols), taps, out, x.shape)
        np.testing.assert_allclose(fast, slow, rtol=1e-6, atol=1e-6)
