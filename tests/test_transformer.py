"""Attention and the Transformer's layers: F.scaled_dot_product_attention against a NumPy
float64 reference (outputs, and gradients against its finite differences) and against
PyTorch over shapes, masks, scales and grouped heads; nn.MultiheadAttention,
TransformerEncoderLayer, TransformerDecoderLayer, their stacks and nn.Transformer against
PyTorch's with the same weights (a torch state_dict converted to NumPy, loaded strictly):
outputs, attention weights and the gradients of inputs and parameters, over batch_first,
masks (bool, float, key padding, causal), norm_first, activations, kdim/vdim and unbatched
inputs; MultiheadAttention against a NumPy reference too; initialisation, dropout and errors
as PyTorch raises them."""

import copy
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
import pyrt.nn.functional as F
from pyrt import nn

try:  # the reference for the comparisons marked needs_torch; the others use NumPy's
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")

F32 = np.float32


def rng(seed):
    return np.random.default_rng(seed)


def assert_close(actual, expected, rtol=1e-5):
    """Close relative to the size of `expected`: |actual - expected| <= rtol * max|expected|
    elementwise (float32 sums of a few terms differ by a few ulps of the largest)."""
    actual = actual.detach().numpy() if isinstance(actual, pyrt.Tensor) else np.asarray(actual)
    expected = np.asarray(expected, dtype=np.float64)
    assert actual.shape == expected.shape
    scale = max(float(np.abs(expected).max(initial=0.0)), 1.0)
    np.testing.assert_allclose(actual, expected, rtol=0, atol=rtol * scale)


# ---- a NumPy float64 reference -------------------------------------------------------------


def np_softmax(x):
    """Softmax over the last axis; rows that are all -inf give zeros, as PyTorch's
    scaled_dot_product_attention gives them."""
    top = np.max(x, axis=-1, keepdims=True)
    dead = np.isneginf(top)
    e = np.exp(x - np.where(dead, 0.0, top))
    return np.where(dead, 0.0, e / np.where(dead, 1.0, e.sum(-1, keepdims=True)))


def np_sdpa(q, k, v, mask=None, is_causal=False, scale=None):
    """softmax(q k^T * scale + mask) v in float64, the mask bool (keep where True) or float
    (added)."""
    q, k, v = (a.astype(np.float64) for a in (q, k, v))
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = q @ np.swapaxes(k, -1, -2) * scale
    if is_causal:
        mask = np.tril(np.ones(scores.shape[-2:], bool))
    if mask is not None:
        scores = np.where(mask, scores, -np.inf) if mask.dtype == bool else scores + mask
    return np_softmax(scores) @ v


def np_mha(query, key, value, params, num_heads, attn_mask=None, key_padding_mask=None):
    """Multi-head attention of seq-first query [L, N, E], key and value [S, N, E] in float64,
    with packed projections; masks bool (True masks out) or float. Returns (output,
    weights averaged over heads)."""
    w_in = params["in_proj_weight"].astype(np.float64)
    b_in = params["in_proj_bias"].astype(np.float64)
    E = query.shape[-1]
    q, k, v = (x.astype(np.float64) @ w_in[i * E:(i + 1) * E].T + b_in[i * E:(i + 1) * E]
               for i, x in enumerate((query, key, value)))
    L, N, _ = q.shape
    S = k.shape[0]
    hd = E // num_heads
    # [len, N, E] -> [N, H, len, hd]
    q, k, v = (x.reshape(x.shape[0], N, num_heads, hd).transpose(1, 2, 0, 3) for x in (q, k, v))
    bias = np.zeros((N, num_heads, L, S))
    for m, shape in ((attn_mask, (1, 1, L, S)), (key_padding_mask, (N, 1, 1, S))):
        if m is not None:
            m = m.reshape(shape)
            bias = bias + (np.where(m, -np.inf, 0.0) if m.dtype == bool else m)
    weights = np_softmax(q @ k.transpose(0, 1, 3, 2) / math.sqrt(hd) + bias)
    out = (weights @ v).transpose(2, 0, 1, 3).reshape(L, N, E)
    out = (out @ params["out_proj.weight"].astype(np.float64).T
           + params["out_proj.bias"].astype(np.float64))
    return out, weights.mean(axis=1)


def finite_difference(f, x, eps=1e-6):
    """The gradient of the scalar f at the float64 array x, by central differences."""
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        saved = x[i]
        x[i] = saved + eps
        up = f(x)
        x[i] = saved - eps
        down = f(x)
        x[i] = saved
        grad[i] = (up - down) / (2 * eps)
    return grad


def values(t):
    """The values of a tensor that may require gradients, as an array."""
    return t.detach().numpy()


def random_inputs(r, *shapes):
    return [r.standard_normal(s).astype(F32) for s in shapes]


def bool_mask(r, shape):
    """A random bool mask with at least one True (kept) key in each row."""
    m = r.random(shape) < 0.6
    m[..., 0] = True
    return m


# ---- scaled_dot_product_attention without PyTorch -------------------------------------------


@pytest.mark.parametrize("mask_kind", ["none", "bool", "float", "causal"])
@pytest.mark.parametrize("shapes", [
    ((3, 4), (5, 4), (5, 2)),
    ((2, 3, 4), (2, 5, 4), (2, 5, 6)),
    ((2, 3, 1, 4), (1, 3, 6, 4), (2, 1, 6, 3)),  # batch dims broadcast
])
def test_sdpa_matches_numpy(shapes, mask_kind):
    r = rng(0)
    q, k, v = random_inputs(r, *shapes)
    L, S = shapes[0][-2], shapes[1][-2]
    mask = {"none": None, "bool": bool_mask(r, (L, S)),
            "float": r.standard_normal((L, S)).astype(F32), "causal": None}[mask_kind]
    out = F.scaled_dot_product_attention(
        pyrt.tensor(q), pyrt.tensor(k), pyrt.tensor(v),
        None if mask is None else pyrt.tensor(mask), is_causal=mask_kind == "causal")
    assert_close(out, np_sdpa(q, k, v, mask, is_causal=mask_kind == "causal"))


def test_sdpa_scale_and_batched_mask():
    r = rng(1)
    q, k, v = random_inputs(r, (2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 2))
    mask = r.standard_normal((2, 1, 4, 6)).astype(F32)
    out = F.scaled_dot_product_attention(pyrt.tensor(q), pyrt.tensor(k), pyrt.tensor(v),
                                         attn_mask=pyrt.tensor(mask), scale=0.37)
    assert_close(out, np_sdpa(q, k, v, mask, scale=0.37))


@pytest.mark.parametrize("mask_kind", ["none", "bool", "float", "causal"])
def test_sdpa_gradients_match_finite_differences(mask_kind):
    r = rng(2)
    shapes = ((2, 3, 4), (2, 5, 4), (2, 5, 3))
    arrays = random_inputs(r, *shapes)
    mask = {"none": None, "bool": bool_mask(r, (3, 5)),
            "float": r.standard_normal((3, 5)).astype(F32), "causal": None}[mask_kind]
    dy = r.standard_normal((2, 3, 3))
    tensors = [pyrt.tensor(a, requires_grad=True) for a in arrays]
    out = F.scaled_dot_product_attention(*tensors, None if mask is None else pyrt.tensor(mask),
                                         is_causal=mask_kind == "causal")
    (out * pyrt.tensor(dy.astype(F32))).sum().backward()
    for i, t in enumerate(tensors):
        x = arrays[i].astype(np.float64)

        def loss(xi, i=i):
            args = [xi if j == i else a for j, a in enumerate(arrays)]
            return float((np_sdpa(*args, mask, is_causal=mask_kind == "causal") * dy).sum())

        assert_close(t.grad, finite_difference(loss, x), rtol=1e-4)


def test_sdpa_fully_masked_rows_are_zero_with_zero_gradient():
    # as PyTorch's: a query that may attend to nothing gives zeros, and no NaN anywhere
    r = rng(3)
    q, k, v = (pyrt.tensor(a, requires_grad=True)
               for a in random_inputs(r, (2, 3, 4), (2, 5, 4), (2, 5, 6)))
    keep = np.ones((3, 5), bool)
    keep[1] = False
    for mask in (pyrt.tensor(keep), pyrt.tensor(np.where(keep, 0, -np.inf).astype(F32))):
        for t in (q, k, v):
            t.grad = None
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        out.sum().backward()
        assert np.all(out.detach().numpy()[:, 1] == 0)
        assert np.isfinite(out.detach().numpy()).all()
        assert np.all(q.grad.numpy()[:, 1] == 0) and np.isfinite(q.grad.numpy()).all()
        for t in (k, v):
            assert np.isfinite(t.grad.numpy()).all() and np.abs(t.grad.numpy()).max() > 0


def test_sdpa_grouped_query_attention_matches_repeated_heads():
    r = rng(4)
    q, k, v = random_inputs(r, (2, 6, 3, 4), (2, 2, 5, 4), (2, 2, 5, 3))
    out = F.scaled_dot_product_attention(pyrt.tensor(q), pyrt.tensor(k), pyrt.tensor(v),
                                         enable_gqa=True)
    # query heads 0-2 read key/value head 0, heads 3-5 head 1
    expected = np_sdpa(q, np.repeat(k, 3, axis=1), np.repeat(v, 3, axis=1))
    assert_close(out, expected)


def test_sdpa_dropout_is_seeded_and_drops_weights():
    r = rng(5)
    q, k, v = (pyrt.tensor(a) for a in random_inputs(r, (4, 8, 4), (4, 8, 4), (4, 8, 4)))
    plain = F.scaled_dot_product_attention(q, k, v).numpy()
    outs = []
    for _ in range(2):
        pyrt.manual_seed(7)
        outs.append(F.scaled_dot_product_attention(q, k, v, dropout_p=0.5).numpy())
    np.testing.assert_array_equal(outs[0], outs[1])
    assert not np.allclose(outs[0], plain)
    assert np.all(F.scaled_dot_product_attention(q, k, v, dropout_p=1.0).numpy() == 0)


def test_sdpa_errors():
    x = pyrt.zeros(2, 3, 4)
    sdpa = F.scaled_dot_product_attention
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set"):
        sdpa(x, x, x, attn_mask=pyrt.ones(3, 3, dtype=pyrt.bool_), is_causal=True)
    with pytest.raises(RuntimeError, match="Expected attn_mask dtype to be bool or float"):
        sdpa(x, x, x, attn_mask=pyrt.zeros(3, 3, dtype=pyrt.int64))
    with pytest.raises(RuntimeError, match="at least 2 dimensional"):
        sdpa(pyrt.zeros(4), x, x)
    with pytest.raises(RuntimeError, match="to have the same dtype"):
        sdpa(x, x.long(), x)
    with pytest.raises(RuntimeError, match="key's last dim"):
        sdpa(x, pyrt.zeros(2, 3, 5), x)
    with pytest.raises(RuntimeError, match="value's sequence length"):
        sdpa(x, x, pyrt.zeros(2, 4, 4))
    with pytest.raises(RuntimeError, match="must match the size"):
        sdpa(x, pyrt.zeros(3, 3, 4), x)
    with pytest.raises(RuntimeError, match="attn_mask of shape"):
        sdpa(x, x, x, attn_mask=pyrt.zeros(2, 4))
    with pytest.raises(RuntimeError, match="Number of heads in key and value must divide"):
        sdpa(pyrt.zeros(1, 4, 3, 2), pyrt.zeros(1, 3, 3, 2), pyrt.zeros(1, 3, 3, 2),
             enable_gqa=True)
    with pytest.raises(ValueError, match="dropout probability"):
        sdpa(x, x, x, dropout_p=1.5)
    with pytest.raises(TypeError, match="argument 'key'"):
        sdpa(x, np.zeros((2, 3, 4), F32), x)


def test_sdpa_is_exported_from_both_functional_modules():
    assert F.scaled_dot_product_attention is pyrt.functional.scaled_dot_product_attention
    assert F.multi_head_attention_forward is pyrt.functional.multi_head_attention_forward


# ---- scaled_dot_product_attention against PyTorch --------------------------------------------


@needs_torch
@settings(max_examples=25, deadline=None)
@given(batch=st.lists(st.integers(1, 3), min_size=0, max_size=2),
       L=st.integers(1, 5), S=st.integers(1, 6), E=st.integers(1, 6), Ev=st.integers(1, 5),
       mask_kind=st.sampled_from(["none", "bool", "float", "causal"]),
       scale=st.sampled_from([None, 0.5]), broadcast_key=st.booleans(),
       seed=st.integers(0, 2**16))
def test_sdpa_matches_torch(batch, L, S, E, Ev, mask_kind, scale, broadcast_key, seed):
    r = rng(seed)
    batch = tuple(batch)
    key_batch = tuple(1 for _ in batch) if broadcast_key else batch
    q, k, v = random_inputs(r, batch + (L, E), key_batch + (S, E), batch + (S, Ev))
    mask = {"none": None, "bool": bool_mask(r, (L, S)),
            "float": r.standard_normal(batch + (L, S)).astype(F32), "causal": None}[mask_kind]
    dy = r.standard_normal(batch + (L, Ev)).astype(F32)
    kw = {"is_causal": mask_kind == "causal", "scale": scale}
    ours = [pyrt.tensor(a, requires_grad=True) for a in (q, k, v)]
    theirs = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
    out = F.scaled_dot_product_attention(*ours, None if mask is None else pyrt.tensor(mask), **kw)
    ref = torch.nn.functional.scaled_dot_product_attention(
        *theirs, None if mask is None else torch.tensor(mask), **kw)
    (out * pyrt.tensor(dy)).sum().backward()
    (ref * torch.tensor(dy)).sum().backward()
    assert_close(out, ref.detach().numpy())
    for a, b in zip(ours, theirs):
        assert_close(a.grad, b.grad.numpy())


@needs_torch
def test_sdpa_gqa_and_fully_masked_rows_match_torch():
    r = rng(6)
    q, k, v = random_inputs(r, (2, 4, 3, 8), (2, 2, 5, 8), (2, 2, 5, 8))
    keep = bool_mask(r, (3, 5))
    keep[2] = False
    ours = [pyrt.tensor(a, requires_grad=True) for a in (q, k, v)]
    theirs = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
    out = F.scaled_dot_product_attention(*ours, pyrt.tensor(keep), enable_gqa=True)
    ref = torch.nn.functional.scaled_dot_product_attention(*theirs, torch.tensor(keep),
                                                           enable_gqa=True)
    out.sum().backward()
    ref.sum().backward()
    assert_close(out, ref.detach().numpy())
    for a, b in zip(ours, theirs):
        assert_close(a.grad, b.grad.numpy())


@needs_torch
@pytest.mark.parametrize("args", [
    {"attn_mask": "bool", "is_causal": True},
    {"attn_mask": "int"},
    {"query": (4,)},
    {"key": (3, 3, 4)},
])
def test_sdpa_errors_have_torch_types(args):
    shapes = {"query": (2, 3, 4), "key": (2, 3, 4), "value": (2, 3, 4)}
    shapes.update({n: s for n, s in args.items() if n in shapes})
    mask = {"bool": np.ones((3, 3), bool), "int": np.ones((3, 3), np.int64),
            None: None}[args.get("attn_mask")]
    kw = {"is_causal": args.get("is_causal", False)}
    arrays = [np.zeros(shapes[n], F32) for n in ("query", "key", "value")]
    with pytest.raises(Exception) as theirs:
        torch.nn.functional.scaled_dot_product_attention(
            *map(torch.tensor, arrays), None if mask is None else torch.tensor(mask), **kw)
    with pytest.raises(theirs.type):
        F.scaled_dot_product_attention(*map(pyrt.tensor, arrays),
                                       None if mask is None else pyrt.tensor(mask), **kw)


# ---- helpers for the modules -----------------------------------------------------------------


def load_from_torch(ours, theirs):
    """Copy a torch module's weights into ours: its state_dict, as NumPy, loaded strictly
    (so the keys must be the same); both in the same training mode."""
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    ours.train(theirs.training)


def compare_backward(ours, theirs, our_out, their_out, our_inputs, their_inputs, seed):
    """Backward from the same random output gradient; the inputs' and parameters' gradients
    compared."""
    dy = rng(seed).standard_normal(their_out.shape).astype(F32)
    (our_out * pyrt.tensor(dy)).sum().backward()
    (their_out * torch.tensor(dy)).sum().backward()
    for a, b in zip(our_inputs, their_inputs):
        if b.requires_grad:
            assert_close(a.grad, b.grad.numpy())
    their_params = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        assert p.grad is not None, name
        assert_close(p.grad, their_params[name].grad.numpy())


def both(arrays):
    """Each array as a pyrt and a torch tensor requiring gradients."""
    return ([pyrt.tensor(a, requires_grad=True) for a in arrays],
            [torch.tensor(a, requires_grad=True) for a in arrays])


def masks(array, as_float=False):
    """(pyrt, torch) tensors of a bool mask (True masks out), or of its float form."""
    if array is None:
        return None, None
    if as_float:
        array = np.where(array, -np.inf, 0).astype(F32)
    return pyrt.tensor(array), torch.tensor(array)


# ---- MultiheadAttention ----------------------------------------------------------------------


def test_mha_parameters_and_init():
    pyrt.manual_seed(0)
    m = nn.MultiheadAttention(16, 4)
    assert [n for n, _ in m.named_parameters()] == [
        "in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"]
    assert m.in_proj_weight.shape == (48, 16) and m.head_dim == 4
    assert np.all(m.in_proj_bias.detach().numpy() == 0)
    assert np.all(m.out_proj.bias.detach().numpy() == 0)
    w = m.in_proj_weight.detach().numpy()
    bound = math.sqrt(6 / (16 + 48))  # xavier_uniform_: fan_in 16, fan_out 48
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.1 * bound
    sep = nn.MultiheadAttention(8, 2, kdim=3, vdim=5, bias=False, add_bias_kv=True)
    assert [(n, p.shape) for n, p in sep.named_parameters()] == [
        ("q_proj_weight", (8, 8)), ("k_proj_weight", (8, 3)), ("v_proj_weight", (8, 5)),
        ("bias_k", (1, 1, 8)), ("bias_v", (1, 1, 8)), ("out_proj.weight", (8, 8))]
    assert sep.in_proj_weight is None and sep.in_proj_bias is None


def test_mha_matches_numpy_reference():
    r = rng(10)
    pyrt.manual_seed(1)
    m = nn.MultiheadAttention(8, 2)
    params = {k: v.numpy() for k, v in m.state_dict().items()}
    params["in_proj_bias"] = r.standard_normal(24).astype(F32)
    params["out_proj.bias"] = r.standard_normal(8).astype(F32)
    m.load_state_dict(params)
    q, kv = random_inputs(r, (3, 2, 8), (5, 2, 8))
    attn = bool_mask(r, (3, 5))
    pad = ~bool_mask(r, (2, 5))
    out, w = m(pyrt.tensor(q), pyrt.tensor(kv), pyrt.tensor(kv), attn_mask=pyrt.tensor(~attn),
               key_padding_mask=pyrt.tensor(pad))
    ref_out, ref_w = np_mha(q, kv, kv, params, 2, attn_mask=~attn, key_padding_mask=pad)
    assert_close(out, ref_out)
    assert_close(w, ref_w)


def test_mha_gradient_matches_finite_differences():
    r = rng(11)
    pyrt.manual_seed(2)
    m = nn.MultiheadAttention(4, 2)
    params = {k: v.numpy() for k, v in m.state_dict().items()}
    x = r.standard_normal((3, 2, 4)).astype(F32)
    causal = np.triu(np.ones((3, 3), bool), 1)
    dy = r.standard_normal((3, 2, 4))
    out, _ = m(pyrt.tensor(x), pyrt.tensor(x), pyrt.tensor(x), attn_mask=pyrt.tensor(causal))
    (out * pyrt.tensor(dy.astype(F32))).sum().backward()

    def loss(w):
        p = dict(params, in_proj_weight=w)
        return float((np_mha(x, x, x, p, 2, attn_mask=causal)[0] * dy).sum())

    expected = finite_difference(loss, params["in_proj_weight"].astype(np.float64))
    assert_close(m.in_proj_weight.grad, expected, rtol=1e-4)


MHA_CASES = [
    {},
    {"batch_first": True},
    {"self_attention": False},
    {"bias": False, "average_attn_weights": False},
    {"kdim": 3, "vdim": 5, "batch_first": True},
    {"attn_mask": "bool"},
    {"attn_mask": "float", "key_padding_mask": "float"},
    {"attn_mask": "bool3d", "need_weights": False},
    {"key_padding_mask": "bool", "batch_first": True},
    {"attn_mask": "causal", "is_causal": True, "need_weights": False},
    {"attn_mask": "causal", "is_causal": True, "key_padding_mask": "bool"},
    {"unbatched": True, "attn_mask": "bool", "key_padding_mask": "bool"},
    {"unbatched": True, "attn_mask": "bool3d", "average_attn_weights": False},
    {"add_bias_kv": True, "attn_mask": "bool", "key_padding_mask": "bool"},
    {"add_zero_attn": True, "attn_mask": "float", "need_weights": False},
]


@needs_torch
@pytest.mark.parametrize("case", MHA_CASES, ids=lambda c: ",".join(map(str, c.items())) or "-")
def test_mha_matches_torch(case):
    r = rng(12)
    E, H, L, S, N = 8, 2, 4, 5, 3
    self_attention = case.get("self_attention", True) and "kdim" not in case
    if self_attention:
        S = L
    ctor = {k: case[k] for k in ("bias", "add_bias_kv", "add_zero_attn", "kdim", "vdim",
                                 "batch_first") if k in case}
    torch.manual_seed(0)
    theirs = torch.nn.MultiheadAttention(E, H, **ctor)
    ours = nn.MultiheadAttention(E, H, **ctor)
    with torch.no_grad():  # nonzero biases, so that their gradients are tested
        for name, p in theirs.named_parameters():
            if "bias" in name:
                p.copy_(torch.tensor(r.standard_normal(p.shape).astype(F32)))
    load_from_torch(ours, theirs)

    unbatched = case.get("unbatched", False)
    batch_first = case.get("batch_first", False)

    def shape(length, dim):
        if unbatched:
            return (length, dim)
        return (N, length, dim) if batch_first else (length, N, dim)

    if self_attention:
        (q,), (tq,) = both(random_inputs(r, shape(L, E)))
        k = v = q
        tk = tv = tq
    else:
        arrays = random_inputs(r, shape(L, E), shape(S, case.get("kdim", E)),
                               shape(S, case.get("vdim", E)))
        (q, k, v), (tq, tk, tv) = both(arrays)
    n = 1 if unbatched else N
    attn = {None: None, "bool": ~bool_mask(r, (L, S)),
            "float": r.standard_normal((L, S)).astype(F32),
            "bool3d": ~bool_mask(r, (n * H, L, S)),
            "causal": np.triu(np.ones((L, S), bool), 1)}[case.get("attn_mask")]
    pad = {None: None, "bool": ~bool_mask(r, (n, S)),
           "float": r.standard_normal((n, S)).astype(F32)}[case.get("key_padding_mask")]
    if unbatched and pad is not None:
        pad = pad[0]
    kw = {k: case[k] for k in ("need_weights", "average_attn_weights", "is_causal")
          if k in case}
    (am, tam), (pm, tpm) = masks(attn), masks(pad)
    out, w = ours(q, k, v, key_padding_mask=pm, attn_mask=am, **kw)
    ref, tw = theirs(tq, tk, tv, key_padding_mask=tpm, attn_mask=tam, **kw)
    assert_close(out, ref.detach().numpy())
    if tw is None:
        assert w is None
    else:
        assert_close(w, tw.detach().numpy())
    compare_backward(ours, theirs, out, ref, [q, k, v], [tq, tk, tv], seed=13)


@needs_torch
def test_mha_fully_masked_query_matches_torch_without_weights():
    # a query with every key masked: its output is out_proj's bias, its weights zero
    r = rng(15)
    torch.manual_seed(5)
    theirs = torch.nn.MultiheadAttention(8, 2)
    with torch.no_grad():
        theirs.out_proj.bias.copy_(torch.tensor(r.standard_normal(8).astype(F32)))
    ours = nn.MultiheadAttention(8, 2)
    load_from_torch(ours, theirs)
    x = r.standard_normal((4, 2, 8)).astype(F32)
    mask = np.zeros((4, 4), bool)
    mask[2] = True
    out, w = ours(*[pyrt.tensor(x)] * 3, attn_mask=pyrt.tensor(mask))
    ref, _ = theirs(*[torch.tensor(x)] * 3, attn_mask=torch.tensor(mask), need_weights=False)
    assert_close(out, ref.detach().numpy())
    assert_close(out[2], np.broadcast_to(theirs.out_proj.bias.detach().numpy(), (2, 8)))
    assert np.all(values(w)[:, 2] == 0)


@needs_torch
def test_mha_state_dict_keys_match_torch():
    for kw in ({}, {"kdim": 3, "vdim": 5}, {"bias": False}, {"add_bias_kv": True}):
        assert (list(nn.MultiheadAttention(8, 2, **kw).state_dict())
                == list(torch.nn.MultiheadAttention(8, 2, **kw).state_dict()))


def test_mha_dropout_acts_in_training_only():
    r = rng(14)
    pyrt.manual_seed(3)
    m = nn.MultiheadAttention(8, 2, dropout=0.5)
    x = pyrt.tensor(r.standard_normal((4, 2, 8)).astype(F32))
    m.eval()
    a, wa = m(x, x, x)
    b, _ = m(x, x, x)
    np.testing.assert_array_equal(values(a), values(b))
    np.testing.assert_allclose(values(wa).sum(-1), 1, rtol=1e-5)
    m.train()
    pyrt.manual_seed(4)
    c, wc = m(x, x, x, average_attn_weights=False)
    assert not np.allclose(values(c), values(a))
    # the weights returned are those after dropout: zeros, and the others scaled by 2
    wc = values(wc)
    assert (wc == 0).any() and np.abs(wc.sum(-1) - 1).max() > 1e-3


def test_mha_errors():
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(10, 3)
    with pytest.raises(ValueError, match="embed_dim and num_heads must be greater than 0"):
        nn.MultiheadAttention(0, 1)
    m = nn.MultiheadAttention(4, 2)
    x = pyrt.zeros(3, 2, 4)
    with pytest.raises(AssertionError, match="only bool and floating types of attn_mask"):
        m(x, x, x, attn_mask=pyrt.zeros(3, 3, dtype=pyrt.int64))
    with pytest.raises(RuntimeError, match="The shape of the 2D attn_mask is"):
        m(x, x, x, attn_mask=pyrt.zeros(3, 4))
    with pytest.raises(RuntimeError, match="The shape of the 3D attn_mask is"):
        m(x, x, x, attn_mask=pyrt.zeros(2, 3, 3))
    with pytest.raises(AssertionError, match=r"Expected key_padded_mask.shape\[1\] to be 3"):
        m(x, x, x, key_padding_mask=pyrt.zeros(2, 4, dtype=pyrt.bool_))
    with pytest.raises(AssertionError, match="query should be unbatched 2D or batched 3D"):
        m(pyrt.zeros(1, 3, 2, 4), x, x)
    with pytest.raises(AssertionError, match="expected `key` and `value` to be 3-D"):
        m(x, pyrt.zeros(3, 4), x)
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        m(x, x, x, is_causal=True)
    with pytest.raises(AssertionError, match="was expecting embedding dimension of 4"):
        m(pyrt.zeros(3, 2, 6), pyrt.zeros(3, 2, 6), pyrt.zeros(3, 2, 6))
    with pytest.warns(UserWarning, match="mismatched key_padding_mask and attn_mask"):
        m(x, x, x, key_padding_mask=pyrt.zeros(2, 3, dtype=pyrt.bool_),
          attn_mask=pyrt.zeros(3, 3))


@needs_torch
def test_mha_errors_have_torch_types():
    for args in ((10, 3), (0, 1)):
        with pytest.raises(Exception) as theirs:
            torch.nn.MultiheadAttention(*args)
        with pytest.raises(theirs.type):
            nn.MultiheadAttention(*args)
    pm, tm = nn.MultiheadAttention(4, 2), torch.nn.MultiheadAttention(4, 2)
    x = np.zeros((3, 2, 4), F32)
    for kw in ({"attn_mask": np.zeros((3, 3), np.int64)}, {"attn_mask": np.zeros((3, 4), F32)},
               {"key_padding_mask": np.zeros((2, 4), bool)}, {"is_causal": True},
               {"attn_mask": np.zeros((5, 3, 3), F32)}):
        with pytest.raises(Exception) as theirs:
            tm(*[torch.tensor(x)] * 3, **{k: torch.tensor(v) if isinstance(v, np.ndarray) else v
                                          for k, v in kw.items()})
        with pytest.raises(theirs.type):
            pm(*[pyrt.tensor(x)] * 3, **{k: pyrt.tensor(v) if isinstance(v, np.ndarray) else v
                                         for k, v in kw.items()})


# ---- the Transformer's layers ----------------------------------------------------------------


def torch_activation(activation):
    if isinstance(activation, str):
        return activation
    return {F.relu: torch.nn.functional.relu, F.gelu: torch.nn.functional.gelu,
            F.silu: torch.nn.functional.silu}[activation]


ENCODER_CASES = [
    {},
    {"norm_first": True, "activation": "gelu"},
    {"batch_first": True, "activation": F.gelu, "src_mask": "causal"},
    {"src_mask": "float", "src_key_padding_mask": "bool"},
    {"src_mask": "bool", "batch_first": True, "activation": F.silu},
    {"src_mask": "causal", "is_causal": True, "norm_first": True},
    {"unbatched": True, "src_mask": "bool", "src_key_padding_mask": "bool"},
    {"bias": False, "layer_norm_eps": 1e-3, "src_key_padding_mask": "float"},
    {"eval": True, "dropout": 0.1},
]


def layer_args(case):
    return {k: (torch_activation(v) if k == "activation" else v) for k, v in case.items()
            if k in ("norm_first", "activation", "batch_first", "bias", "layer_norm_eps",
                     "dropout")}


def sequence_inputs(r, case, length, d, n):
    if case.get("unbatched"):
        shape = (length, d)
    else:
        shape = (n, length, d) if case.get("batch_first") else (length, n, d)
    return r.standard_normal(shape).astype(F32)


def src_masks(r, case, length, n, prefix="src"):
    """The (pyrt, torch) masks of a case: {prefix}_mask and {prefix}_key_padding_mask."""
    kind = case.get(f"{prefix}_mask")
    mask = {None: None, "bool": ~bool_mask(r, (length, length)),
            "float": r.standard_normal((length, length)).astype(F32),
            "causal": np.triu(np.ones((length, length), bool), 1)}[kind]
    as_float = kind == "causal" and not case.get("is_causal")  # the float form, detected
    pad_kind = case.get(f"{prefix}_key_padding_mask")
    pad = {None: None, "bool": ~bool_mask(r, (n, length)),
           "float": r.standard_normal((n, length)).astype(F32)}[pad_kind]
    if case.get("unbatched") and pad is not None:
        pad = pad[0]
    return masks(mask, as_float), masks(pad)


def prepare(ours, theirs, case):
    load_from_torch(ours, theirs)
    if case.get("eval"):
        ours.eval()
        theirs.eval()
    return ours, theirs


@needs_torch
@pytest.mark.filterwarnings("ignore:Support for mismatched")
@pytest.mark.parametrize("case", ENCODER_CASES,
                         ids=lambda c: ",".join(f"{k}={getattr(v, '__name__', v)}"
                                                for k, v in c.items()) or "-")
def test_encoder_layer_matches_torch(case):
    r = rng(20)
    d, nhead, ff, S, N = 8, 2, 16, 5, 3
    kw = dict({"dropout": 0.0}, **layer_args(case))
    torch.manual_seed(1)
    theirs = torch.nn.TransformerEncoderLayer(d, nhead, ff, **kw)
    ours = nn.TransformerEncoderLayer(d, nhead, ff, **dict(kw, activation=case.get(
        "activation", F.relu)))
    prepare(ours, theirs, case)
    (x,), (tx,) = both([sequence_inputs(r, case, S, d, N)])
    (m, tm), (p, tp) = src_masks(r, case, S, N)
    is_causal = case.get("is_causal", False)
    out = ours(x, src_mask=m, src_key_padding_mask=p, is_causal=is_causal)
    ref = theirs(tx, src_mask=tm, src_key_padding_mask=tp, is_causal=is_causal)
    assert_close(out, ref.detach().numpy())
    compare_backward(ours, theirs, out, ref, [x], [tx], seed=21)


DECODER_CASES = [
    {},
    {"norm_first": True, "tgt_mask": "causal", "tgt_is_causal": True, "activation": "gelu"},
    {"batch_first": True, "tgt_mask": "bool", "memory_mask": "float"},
    {"tgt_key_padding_mask": "bool", "memory_key_padding_mask": "float"},
    {"unbatched": True, "tgt_mask": "causal", "memory_key_padding_mask": "bool"},
    {"bias": False, "memory_mask": "bool", "batch_first": True},
]


def decoder_masks(r, case, T, S, n):
    """The (pyrt, torch) masks of a decoder case, by keyword."""
    out = {}
    shapes = {"tgt_mask": (T, T), "memory_mask": (T, S), "tgt_key_padding_mask": (n, T),
              "memory_key_padding_mask": (n, S)}
    for name, shape in shapes.items():
        kind = case.get(name)
        if kind is None:
            continue
        if kind == "causal":
            a = np.triu(np.ones(shape, bool), 1)
        elif kind == "bool":
            a = ~bool_mask(r, shape)
        else:
            a = r.standard_normal(shape).astype(F32)
        if case.get("unbatched") and "padding" in name:
            a = a[0]
        out[name] = masks(a)
    return ({k: v[0] for k, v in out.items()}, {k: v[1] for k, v in out.items()})


@needs_torch
@pytest.mark.parametrize("case", DECODER_CASES,
                         ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()) or "-")
def test_decoder_layer_matches_torch(case):
    r = rng(22)
    d, nhead, ff, T, S, N = 8, 2, 16, 4, 6, 2
    kw = dict({"dropout": 0.0}, **layer_args(case))
    torch.manual_seed(2)
    theirs = torch.nn.TransformerDecoderLayer(d, nhead, ff, **kw)
    ours = nn.TransformerDecoderLayer(d, nhead, ff, **kw)
    prepare(ours, theirs, case)
    (x, mem), (tx, tmem) = both([sequence_inputs(r, case, T, d, N),
                                 sequence_inputs(r, case, S, d, N)])
    our_masks, their_masks = decoder_masks(r, case, T, S, N)
    flags = {k: case[k] for k in ("tgt_is_causal",) if k in case}
    out = ours(x, mem, **our_masks, **flags)
    ref = theirs(tx, tmem, **their_masks, **flags)
    assert_close(out, ref.detach().numpy())
    compare_backward(ours, theirs, out, ref, [x, mem], [tx, tmem], seed=23)


@needs_torch
@pytest.mark.filterwarnings("ignore:Support for mismatched")
@pytest.mark.parametrize("batch_first", [False, True])
def test_encoder_and_decoder_stacks_match_torch(batch_first):
    r = rng(24)
    d, nhead, ff, S, T, N = 8, 2, 12, 5, 4, 2
    torch.manual_seed(3)
    kw = {"dropout": 0.0, "batch_first": batch_first}
    t_enc = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(d, nhead, ff, **kw),
                                        2, norm=torch.nn.LayerNorm(d),
                                        enable_nested_tensor=False)
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(d, nhead, ff, **kw), 2,
                                norm=nn.LayerNorm(d))
    t_dec = torch.nn.TransformerDecoder(torch.nn.TransformerDecoderLayer(d, nhead, ff, **kw), 2)
    dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(d, nhead, ff, **kw), 2)
    load_from_torch(enc, t_enc)
    load_from_torch(dec, t_dec)
    case = {"batch_first": batch_first}
    (src, tgt), (tsrc, ttgt) = both([sequence_inputs(r, case, S, d, N),
                                     sequence_inputs(r, case, T, d, N)])
    pad = ~bool_mask(r, (N, S))
    # the float causal masks generate_square_subsequent_mask makes, detected as causal
    src_mask = nn.Transformer.generate_square_subsequent_mask(S)
    tgt_mask = nn.Transformer.generate_square_subsequent_mask(T)
    mem = enc(src, mask=src_mask, src_key_padding_mask=pyrt.tensor(pad))
    t_mem = t_enc(tsrc, mask=torch.tensor(src_mask.numpy()),
                  src_key_padding_mask=torch.tensor(pad))
    assert_close(mem, t_mem.detach().numpy())
    out = dec(tgt, mem, tgt_mask=tgt_mask, memory_key_padding_mask=pyrt.tensor(pad))
    ref = t_dec(ttgt, t_mem, tgt_mask=torch.tensor(tgt_mask.numpy()),
                memory_key_padding_mask=torch.tensor(pad))
    assert_close(out, ref.detach().numpy())
    dy = r.standard_normal(ref.shape).astype(F32)
    (out * pyrt.tensor(dy)).sum().backward()
    (ref * torch.tensor(dy)).sum().backward()
    assert_close(src.grad, tsrc.grad.numpy())
    assert_close(tgt.grad, ttgt.grad.numpy())
    for ours, theirs in ((enc, t_enc), (dec, t_dec)):
        tp = dict(theirs.named_parameters())
        for name, p in ours.named_parameters():
            assert_close(p.grad, tp[name].grad.numpy())


@needs_torch
@pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")
@pytest.mark.parametrize("kw", [{}, {"batch_first": True, "norm_first": True,
                                     "activation": "gelu"}])
def test_transformer_matches_torch(kw):
    r = rng(25)
    d, nhead, S, T, N = 8, 2, 5, 4, 2
    args = dict(d_model=d, nhead=nhead, num_encoder_layers=2, num_decoder_layers=1,
                dim_feedforward=12, dropout=0.0, **kw)
    torch.manual_seed(4)
    theirs = torch.nn.Transformer(**args)
    ours = nn.Transformer(**args)
    load_from_torch(ours, theirs)
    case = {"batch_first": kw.get("batch_first", False)}
    (src, tgt), (tsrc, ttgt) = both([sequence_inputs(r, case, S, d, N),
                                     sequence_inputs(r, case, T, d, N)])
    tgt_mask = nn.Transformer.generate_square_subsequent_mask(T)
    t_tgt_mask = torch.nn.Transformer.generate_square_subsequent_mask(T)
    np.testing.assert_array_equal(tgt_mask.numpy(), t_tgt_mask.numpy())
    pad = ~bool_mask(r, (N, S))
    out = ours(src, tgt, tgt_mask=tgt_mask, src_key_padding_mask=pyrt.tensor(pad),
               memory_key_padding_mask=pyrt.tensor(pad))
    ref = theirs(tsrc, ttgt, tgt_mask=t_tgt_mask, src_key_padding_mask=torch.tensor(pad),
                 memory_key_padding_mask=torch.tensor(pad))
    assert_close(out, ref.detach().numpy())
    compare_backward(ours, theirs, out, ref, [src, tgt], [tsrc, ttgt], seed=26)


def test_transformer_init_and_clones():
    pyrt.manual_seed(5)
    t = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=1,
                       dim_feedforward=12)
    layers = t.encoder.layers
    assert len(layers) == 2 and layers[0] is not layers[1]
    w0, w1 = (layer.linear1.weight.detach().numpy() for layer in layers)
    assert not np.array_equal(w0, w1)  # every matrix drawn again by xavier_uniform_
    bound = math.sqrt(6 / (8 + 12))
    assert np.abs(w0).max() <= bound
    assert np.all(layers[0].self_attn.in_proj_bias.detach().numpy() == 0)
    # the stacks copy their layer: copies with parameters of their own, equal at first
    layer = nn.TransformerEncoderLayer(8, 2, 12)
    enc = nn.TransformerEncoder(layer, 2)
    a, b = (m.linear1.weight for m in enc.layers)
    assert a is not b and a is not layer.linear1.weight
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    assert "layers.1.self_attn.out_proj.weight" in enc.state_dict()


def test_square_subsequent_mask():
    m = nn.Transformer.generate_square_subsequent_mask(3).numpy()
    expected = np.array([[0, -np.inf, -np.inf], [0, 0, -np.inf], [0, 0, 0]], F32)
    np.testing.assert_array_equal(m, expected)
    b = nn.Transformer.generate_square_subsequent_mask(3, dtype=pyrt.bool_).numpy()
    np.testing.assert_array_equal(b, np.triu(np.ones((3, 3), bool), 1))


def test_encoder_layer_causal_flag_matches_mask():
    # is_causal=True (with its mask) and the mask alone give the same result
    r = rng(27)
    pyrt.manual_seed(6)
    layer = nn.TransformerEncoderLayer(8, 2, 12, dropout=0.0)
    x = pyrt.tensor(r.standard_normal((5, 2, 8)).astype(F32))
    mask = nn.Transformer.generate_square_subsequent_mask(5)
    a = values(layer(x, src_mask=mask, is_causal=True))
    b = values(layer(x, src_mask=mask))
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    # position 0 sees only itself: changing later positions leaves it as it is
    x2 = x.numpy().copy()
    x2[1:] += 1
    c = values(layer(pyrt.tensor(x2), src_mask=mask, is_causal=True))
    np.testing.assert_allclose(a[0], c[0], rtol=1e-6, atol=1e-6)
    assert not np.allclose(a[1:], c[1:])


def test_encoder_layer_dropout_in_training_only():
    r = rng(28)
    pyrt.manual_seed(7)
    layer = nn.TransformerEncoderLayer(8, 2, 12, dropout=0.3)
    x = pyrt.tensor(r.standard_normal((4, 2, 8)).astype(F32))
    pyrt.manual_seed(8)
    a = values(layer(x))
    pyrt.manual_seed(8)
    b = values(layer(x))
    np.testing.assert_array_equal(a, b)
    layer.eval()
    c = values(layer(x))
    assert not np.allclose(a, c)
    np.testing.assert_array_equal(c, values(layer(x)))


def test_layer_errors():
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(8, 2, activation="tanh")
    with pytest.raises(TypeError, match="activation must be"):
        nn.TransformerDecoderLayer(8, 2, activation=3)
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.TransformerEncoderLayer(8, 3)
    t = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                       dim_feedforward=8)
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        t(pyrt.zeros(3, 2, 8), pyrt.zeros(3, 3, 8))
    with pytest.raises(RuntimeError, match="the feature number of src and tgt"):
        t(pyrt.zeros(3, 2, 8), pyrt.zeros(3, 2, 6))
    layer = nn.TransformerEncoderLayer(8, 2, 8)
    with pytest.raises(AssertionError, match="only bool and floating types of src_mask"):
        layer(pyrt.zeros(3, 2, 8), src_mask=pyrt.zeros(3, 3, dtype=pyrt.int64))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        layer(pyrt.zeros(3, 2, 8), src_mask=pyrt.zeros(3, 3, dtype=pyrt.bool_),
              src_key_padding_mask=pyrt.zeros(2, 3, dtype=pyrt.bool_))


def test_layer_is_deep_copyable_and_state_dict_round_trips():
    pyrt.manual_seed(9)
    layer = nn.TransformerDecoderLayer(8, 2, 12, activation=nn.GELU())
    other = nn.TransformerDecoderLayer(8, 2, 12, activation=nn.GELU())
    other.load_state_dict(layer.state_dict())
    r = rng(29)
    x, mem = (pyrt.tensor(a) for a in random_inputs(r, (3, 2, 8), (4, 2, 8)))
    layer.eval()
    other.eval()
    np.testing.assert_array_equal(values(layer(x, mem)), values(other(x, mem)))
    np.testing.assert_array_equal(values(copy.deepcopy(layer)(x, mem)), values(layer(x, mem)))
