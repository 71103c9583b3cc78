"""Attention on Tensors, as torch.nn.functional's: scaled_dot_product_attention and
multi_head_attention_forward (the computation of nn.MultiheadAttention).

Queries Q [..., L, E] attend over keys K [..., S, E] and values V [..., S, Ev]:

    out = softmax(Q K^T * scale + mask) V,    scale = 1 / sqrt(E) unless given,

the softmax over the S keys of each query row. A bool mask keeps the scores where it is True
(the others become -inf, so their weights are 0); a float mask is added to the scores. Each
step is a differentiable Tensor op (bmm, the softmax kernel, masked_fill, ...), so the
gradients are those of the composition and the code runs wherever those ops run.

A query row whose keys are all masked has no finite score, and its softmax would be 0 / 0.
As PyTorch's scaled_dot_product_attention (its "safe softmax"), its weights are zero instead:
its output row is 0 and no gradient flows through it.
"""

import math
import warnings

import numpy as np

from pyrt.functional import _tensor, dropout, dropout_probability, linear
from pyrt.pointwise import broadcast_shape
from pyrt.shapes import cat

__all__ = ["multi_head_attention_forward", "scaled_dot_product_attention"]

_BOOL = np.dtype(np.bool_)
_F32 = np.dtype(np.float32)


def _attention(q, k, v, mask, dropout_p, scale, is_causal):
    """softmax(q k^T * scale + mask) v for 3-D batches q [B, L, E], k [B, S, E] and
    v [B, S, Ev], the mask (None, bool or float32) broadcasting to [B, L, S]; is_causal masks
    key j > i from query i instead. Returns (output [B, L, Ev], weights [B, L, S]), the
    weights after dropout."""
    scores = (q * scale).bmm(k.transpose(1, 2))
    if is_causal:  # query i sees keys 0..i: the lower triangle, aligned top left
        mask = scores.new_ones(scores.shape[1], scores.shape[2], dtype=_BOOL).tril()
    if mask is None:
        weights = scores.softmax(-1)
    else:
        scores = scores.masked_fill(~mask, -math.inf) if mask.dtype == _BOOL else scores + mask
        # rows with every key masked: a softmax of zeros (finite), then their weights zeroed
        dead = (scores == -math.inf).all(dim=-1, keepdim=True)
        weights = scores.masked_fill(dead, 0.0).softmax(-1).masked_fill(dead, 0.0)
    if dropout_p > 0:
        weights = dropout(weights, dropout_p)
    return weights.bmm(v), weights


def _check_tensor(x, name, op):
    if not isinstance(x, _tensor()):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(x).__name__}")


def _as_batches(x, batch, tail):
    """x [*b, *tail], its batch dims b broadcasting to `batch`, as [prod(batch), *tail]."""
    if x.shape[:-2] != batch:
        x = x.expand(batch + tail)
    return x.reshape((math.prod(batch),) + tail)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """softmax(query key^T * scale + mask) value, with query [..., L, E], key [..., S, E] and
    value [..., S, Ev] whose batch dims broadcast; the result is [..., L, Ev].

    attn_mask broadcasts to [..., L, S]: bool (attend where True) or float32 (added to the
    scores). is_causal lets query i attend to keys 0..i only, and excludes attn_mask.
    dropout_p drops attention weights (always, as PyTorch's: pass 0 when evaluating). scale
    defaults to 1 / sqrt(E). enable_gqa lets key and value have fewer heads (dim -3) than
    query, each serving query's heads in consecutive groups of the same size."""
    op = "scaled_dot_product_attention"
    for x, name in ((query, "query"), (key, "key"), (value, "value")):
        _check_tensor(x, name, op)
    if min(query.ndim, key.ndim, value.ndim) < 2:
        raise RuntimeError(f"Expected query, key, and value to all be  at least 2 dimensional, "
                           f"but got query.dim: {query.ndim} key.dim: {key.ndim} and "
                           f"value.dim: {value.ndim} instead.")
    if not query.dtype == key.dtype == value.dtype:
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got "
                           f"query.dtype: {query.dtype} key.dtype: {key.dtype} and "
                           f"value.dtype: {value.dtype} instead.")
    if query.dtype != _F32:
        raise RuntimeError(f"{op}: expected float32 query, key and value, got {query.dtype}")
    if attn_mask is not None:
        if is_causal:
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be "
                               "set when is_causal=True")
        _check_tensor(attn_mask, "attn_mask", op)
        if attn_mask.dtype not in (_BOOL, query.dtype):
            raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query "
                               f"dtype, but got attn_mask.dtype: {attn_mask.dtype} and  "
                               f"query.dtype: {query.dtype} instead.")
    dropout_probability(dropout_p)
    (L, E), (S, key_e), (value_s, Ev) = query.shape[-2:], key.shape[-2:], value.shape[-2:]
    if key_e != E:
        raise RuntimeError(f"{op}: key's last dim ({key_e}) must equal query's ({E})")
    if value_s != S:
        raise RuntimeError(f"{op}: value's sequence length ({value_s}) must equal key's ({S})")
    if enable_gqa:
        # grouped-query attention: query head h reads key and value head h // (Hq / Hkv)
        if min(query.ndim, key.ndim, value.ndim) < 3:
            raise RuntimeError(f"{op}: enable_gqa expects query, key and value with a heads "
                               f"dim (-3), got {query.ndim}-D, {key.ndim}-D and {value.ndim}-D")
        heads = query.shape[-3]
        if heads % key.shape[-3] or heads % value.shape[-3]:
            raise RuntimeError("Number of heads in key and value must divide the number of "
                               "heads in query")
        key = key.repeat_interleave(heads // key.shape[-3], dim=-3)
        value = value.repeat_interleave(heads // value.shape[-3], dim=-3)
    batch = broadcast_shape(broadcast_shape(query.shape[:-2], key.shape[:-2]), value.shape[:-2])
    q, k, v = (_as_batches(query, batch, (L, E)), _as_batches(key, batch, (S, E)),
               _as_batches(value, batch, (S, Ev)))
    mask = attn_mask
    if mask is not None:
        scores_shape = batch + (L, S)
        if mask.ndim > len(scores_shape) or any(
                m not in (1, n) for m, n in zip(mask.shape[::-1], scores_shape[::-1])):
            raise RuntimeError(f"{op}: attn_mask of shape {mask.shape} does not broadcast to "
                               f"the attention scores' shape {scores_shape}")
        if mask.ndim > 2:  # (a [L, S] mask broadcasts over the batches as it is)
            mask = _as_batches(mask, batch, (L, S))
    out, _ = _attention(q, k, v, mask, dropout_p, 1 / math.sqrt(E) if scale is None else scale,
                        is_causal)
    return out.reshape(batch + (L, Ev))


# ---- multi-head attention --------------------------------------------------------------------


def _linear(x, weight, bias):
    """x [*, in] @ weight.T + bias: F.linear over the leading dims flattened."""
    y = linear(x.reshape(-1, x.shape[-1]), weight, bias)
    return y.reshape(x.shape[:-1] + (weight.shape[0],))


def _none_or_dtype(mask):
    return None if mask is None else mask.dtype


def canonical_mask(mask, mask_name, other_type, other_name, target_type, check_other=True):
    """`mask` as an additive float mask (PyTorch's _canonical_mask): a bool mask becomes 0
    where False and -inf where True (True masks out); a float mask is kept. Masks of other
    dtypes are refused; a mask whose dtype differs from the other mask's is deprecated."""
    if mask is None:
        return None
    _check_tensor(mask, mask_name, "multi_head_attention_forward")
    if mask.dtype != _BOOL and mask.dtype.kind != "f":
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and mask.dtype != other_type:
        warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. Use "
                      f"same type for both instead.", stacklevel=3)
    if mask.dtype == _BOOL:
        return mask.new_zeros(mask.shape, dtype=target_type).masked_fill(mask, -math.inf)
    return mask


def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads):
    """Whether the input is batched (query 3-D) or not (2-D), or PyTorch's AssertionError for
    inconsistent dims."""
    if query.ndim == 3:
        if key.ndim != 3 or value.ndim != 3:
            raise AssertionError(f"For batched (3-D) `query`, expected `key` and `value` to be "
                                 f"3-D but found {key.ndim}-D and {value.ndim}-D tensors "
                                 f"respectively")
        if key_padding_mask is not None and key_padding_mask.ndim != 2:
            raise AssertionError(f"For batched (3-D) `query`, expected `key_padding_mask` to be "
                                 f"`None` or 2-D but found {key_padding_mask.ndim}-D tensor "
                                 f"instead")
        if attn_mask is not None and attn_mask.ndim not in (2, 3):
            raise AssertionError(f"For batched (3-D) `query`, expected `attn_mask` to be "
                                 f"`None`, 2-D or 3-D but found {attn_mask.ndim}-D tensor "
                                 f"instead")
        return True
    if query.ndim == 2:
        if key.ndim != 2 or value.ndim != 2:
            raise AssertionError(f"For unbatched (2-D) `query`, expected `key` and `value` to "
                                 f"be 2-D but found {key.ndim}-D and {value.ndim}-D tensors "
                                 f"respectively")
        if key_padding_mask is not None and key_padding_mask.ndim != 1:
            raise AssertionError(f"For unbatched (2-D) `query`, expected `key_padding_mask` to "
                                 f"be `None` or 1-D but found {key_padding_mask.ndim}-D tensor "
                                 f"instead")
        if attn_mask is not None:
            if attn_mask.ndim not in (2, 3):
                raise AssertionError(f"For unbatched (2-D) `query`, expected `attn_mask` to be "
                                     f"`None`, 2-D or 3-D but found {attn_mask.ndim}-D tensor "
                                     f"instead")
            expected = (num_heads, query.shape[0], key.shape[0])
            if attn_mask.ndim == 3 and attn_mask.shape != expected:
                raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got "
                                     f"{attn_mask.shape}")
        return False
    raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received "
                         f"{query.ndim}-D query tensor")


def _in_projection(query, key, value, in_proj_weight, in_proj_bias, separate_weights):
    """The projections q, k, v of query, key and value: by the thirds of the packed
    in_proj_weight [3E, E] (one GEMM for self-attention, where the three are one tensor), or
    by q/k/v_proj_weight; the bias [3E] split in thirds either way."""
    b_q = b_k = b_v = None
    if in_proj_bias is not None:
        b_q, b_k, b_v = in_proj_bias.chunk(3)
    if separate_weights is not None:
        w_q, w_k, w_v = separate_weights
    else:
        if query is key and key is value:
            return _linear(query, in_proj_weight, in_proj_bias).chunk(3, dim=-1)
        w_q, w_k, w_v = in_proj_weight.chunk(3)
    return _linear(query, w_q, b_q), _linear(key, w_k, b_k), _linear(value, w_v, b_v)


def _pad_key(mask):
    """A float mask [..., S] with a column of zeros appended: one more key, attended to."""
    return None if mask is None else cat([mask, mask.new_zeros(mask.shape[:-1] + (1,))], -1)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads,
                                 in_proj_weight, in_proj_bias, bias_k, bias_v, add_zero_attn,
                                 dropout_p, out_proj_weight, out_proj_bias, training=True,
                                 key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None,
                                 static_v=None, average_attn_weights=True, is_causal=False):
    """Multi-head attention, as torch.nn.functional's: query [L, N, E], key [S, N, kdim] and
    value [S, N, vdim] (or [L, E], [S, kdim], [S, vdim] unbatched) are projected to E
    features, split into num_heads heads of E / num_heads features each, attended head by
    head (softmax(q k^T / sqrt(E / num_heads) + mask) v), and the heads' outputs, side by side,
    projected by out_proj. Returns (output [L, N, E], weights [N, L, S] averaged over heads,
    or [N, num_heads, L, S], or None without need_weights).

    key_padding_mask [N, S] masks keys of each batch element, attn_mask [L, S] or
    [N * num_heads, L, S] keys of each query: bool (True masks out) or float (added).
    is_causal is a hint that attn_mask is the causal mask. bias_k and bias_v [1, 1, E] append
    a learned key and value; add_zero_attn a zero key and value.

    A query whose keys are all masked gets zero weights, so its output is out_proj's bias,
    with or without need_weights (PyTorch gives that without need_weights, NaN with it)."""
    if static_k is not None or static_v is not None:
        raise NotImplementedError("multi_head_attention_forward: static_k and static_v are not "
                                  "supported")
    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:  # a batch of one, removed again at the end
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    key_padding_mask = canonical_mask(key_padding_mask, "key_padding_mask",
                                      _none_or_dtype(attn_mask), "attn_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                           "Transformer module method `generate_square_subsequent_mask` to "
                           "create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # the causal mask is made where it is applied
    else:
        attn_mask = canonical_mask(attn_mask, "attn_mask", None, "", query.dtype,
                                   check_other=False)
        if key_padding_mask is not None:
            is_causal = False  # merged with the padding, the mask is no longer causal
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but "
                             f"got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if key.shape[:2] != value.shape[:2]:
            raise AssertionError(f"key's sequence and batch dims {key.shape[:2]} do not match "
                                 f"value's {value.shape[:2]}")
        separate = (q_proj_weight, k_proj_weight, v_proj_weight)
        if any(w is None for w in separate):
            raise AssertionError("use_separate_proj_weight is True but q_proj_weight, "
                                 "k_proj_weight or v_proj_weight is None")
    else:
        if key.shape != value.shape:
            raise AssertionError(f"key shape {key.shape} does not match value shape "
                                 f"{value.shape}")
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        separate = None
    q, k, v = _in_projection(query, key, value, in_proj_weight, in_proj_bias, separate)

    if attn_mask is not None:
        if attn_mask.ndim == 2:
            if attn_mask.shape != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but "
                                   f"should be {(tgt_len, src_len)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.ndim == 3:
            if attn_mask.shape != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but "
                                   f"should be {(bsz * num_heads, tgt_len, src_len)}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.ndim} is not supported")
    if (bias_k is None) != (bias_v is None):
        raise AssertionError("bias_k and bias_v must both be given or both be None")
    if bias_k is not None:  # one more key and value, learned, for every batch element
        k = cat([k, bias_k.expand(1, bsz, embed_dim)])
        v = cat([v, bias_v.expand(1, bsz, embed_dim)])
        attn_mask, key_padding_mask = _pad_key(attn_mask), _pad_key(key_padding_mask)

    # heads as batches: [len, N, E] -> [N * num_heads, len, head_dim], batch n's head h at
    # n * num_heads + h (as a 3-D attn_mask numbers them)
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = k.reshape(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    v = v.reshape(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    if add_zero_attn:  # one more key and value, zero, that every query may attend to
        k = cat([k, k.new_zeros(bsz * num_heads, 1, head_dim)], 1)
        v = cat([v, v.new_zeros(bsz * num_heads, 1, head_dim)], 1)
        attn_mask, key_padding_mask = _pad_key(attn_mask), _pad_key(key_padding_mask)
    src_len = k.shape[1]

    if key_padding_mask is not None:
        if key_padding_mask.shape[0] != bsz:
            raise AssertionError(f"Expected key_padded_mask.shape[0] to be {bsz}, but got "
                                 f"{key_padding_mask.shape[0]}")
        if key_padding_mask.shape[1] != src_len:
            raise AssertionError(f"Expected key_padded_mask.shape[1] to be {src_len}, but got "
                                 f"{key_padding_mask.shape[1]}")
        # each batch element's padding, for each of its heads and queries
        key_padding_mask = (key_padding_mask.reshape(bsz, 1, 1, src_len)
                            .expand(bsz, num_heads, 1, src_len)
                            .reshape(bsz * num_heads, 1, src_len))
        attn_mask = key_padding_mask if attn_mask is None else attn_mask + key_padding_mask
    if not training:
        dropout_p = 0.0

    out, weights = _attention(q, k, v, attn_mask, dropout_p, 1 / math.sqrt(head_dim), is_causal)
    # heads side by side again: [N * num_heads, L, head_dim] -> [L, N, E]
    out = out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, embed_dim)
    if not is_batched:
        out = out.squeeze(1)
    if not need_weights:
        return out, None
    weights = weights.reshape(bsz, num_heads, tgt_len, src_len)
    if average_attn_weights:
        weights = weights.mean(dim=1)
    if not is_batched:
        weights = weights.squeeze(0)
    return out, weights
