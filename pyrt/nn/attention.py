"""MultiheadAttention, as torch.nn's: queries attend over keys and values in num_heads heads
of embed_dim / num_heads features each (pyrt.attention.multi_head_attention_forward), with
PyTorch's parameters, initialisation, shapes and state_dict names.
"""

import numbers

import numpy as np

from pyrt.attention import canonical_mask, multi_head_attention_forward
from pyrt.nn import init
from pyrt.nn.attention_backends import SDPBackend, sdpa_kernel  # noqa: F401  (torch.nn.attention's)
from pyrt.nn.layers import Linear
from pyrt.nn.module import Module
from pyrt.nn.parameter import Parameter

__all__ = ["MultiheadAttention"]


def _size(value, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {value!r}")
    return int(value)


class MultiheadAttention(Module):
    """Attention of queries [L, N, embed_dim] over keys [S, N, kdim] and values
    [S, N, vdim] ([N, L, E] and so on with batch_first; [L, E] unbatched).

    Parameters: in_proj_weight [3 embed_dim, embed_dim] (the query, key and value projections
    stacked) when kdim and vdim are embed_dim, else q_proj_weight, k_proj_weight and
    v_proj_weight; in_proj_bias [3 embed_dim] with bias; out_proj, a Linear(embed_dim,
    embed_dim); bias_k and bias_v [1, 1, embed_dim] with add_bias_kv. As PyTorch initialises
    them: xavier_uniform_ for the projection weights, zero biases, xavier_normal_ for bias_k
    and bias_v. dropout drops attention weights while training."""
    _tensor_input = True

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False):
        super().__init__()
        embed_dim, num_heads = _size(embed_dim, "embed_dim"), _size(num_heads, "num_heads")
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got "
                             f"embed_dim={embed_dim} and num_heads={num_heads} instead")
        self.embed_dim = embed_dim
        self.kdim = embed_dim if kdim is None else _size(kdim, "kdim")
        self.vdim = embed_dim if vdim is None else _size(vdim, "vdim")
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")

        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(np.empty((3 * embed_dim, embed_dim), np.float32))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        else:
            self.q_proj_weight = Parameter(np.empty((embed_dim, embed_dim), np.float32))
            self.k_proj_weight = Parameter(np.empty((embed_dim, self.kdim), np.float32))
            self.v_proj_weight = Parameter(np.empty((embed_dim, self.vdim), np.float32))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(np.empty(3 * embed_dim, np.float32))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias)
        if add_bias_kv:
            self.bias_k = Parameter(np.empty((1, 1, embed_dim), np.float32))
            self.bias_v = Parameter(np.empty((1, 1, embed_dim), np.float32))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self):
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):
        """(output, weights): output of query's shape but embed_dim features; weights
        [N, L, S] averaged over the heads, [N, num_heads, L, S] with
        average_attn_weights=False ([L, S] or [num_heads, L, S] unbatched), None with
        need_weights=False. key_padding_mask [N, S] masks keys of each batch element,
        attn_mask [L, S] or [N * num_heads, L, S] keys of each query: bool (True masks out)
        or float (added to the scores). is_causal: a hint that attn_mask is causal."""
        is_batched = query.ndim == 3
        key_padding_mask = canonical_mask(key_padding_mask, "key_padding_mask",
                                          None if attn_mask is None else attn_mask.dtype,
                                          "attn_mask", query.dtype)
        attn_mask = canonical_mask(attn_mask, "attn_mask", None, "", query.dtype,
                                   check_other=False)
        if self.batch_first and is_batched:  # [N, len, E] -> [len, N, E]
            if key is value:
                if query is key:
                    query = key = value = query.transpose(1, 0)
                else:
                    query, key = (x.transpose(1, 0) for x in (query, key))
                    value = key
            else:
                query, key, value = (x.transpose(1, 0) for x in (query, key, value))
        out, weights = multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight,
            self.in_proj_bias, self.bias_k, self.bias_v, self.add_zero_attn, self.dropout,
            self.out_proj.weight, self.out_proj.bias, training=self.training,
            key_padding_mask=key_padding_mask, need_weights=need_weights, attn_mask=attn_mask,
            use_separate_proj_weight=not self._qkv_same_embed_dim,
            q_proj_weight=self.q_proj_weight, k_proj_weight=self.k_proj_weight,
            v_proj_weight=self.v_proj_weight, average_attn_weights=average_attn_weights,
            is_causal=is_causal)
        if self.batch_first and is_batched:
            out = out.transpose(1, 0)
        return out, weights
