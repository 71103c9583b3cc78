"""torch.nn.utils.clip_grad's names: the gradient clipping of pyrt.nn.utils (clip_grad_norm_,
clip_grad_value_, clip_grad_norm, clip_grads_with_norm_, get_total_norm)."""

from pyrt.nn.utils import clip_grad_norm_, clip_grad_value_
from pyrt.nn.utils.clip_norms import clip_grad_norm, clip_grads_with_norm_, get_total_norm

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_",
           "get_total_norm"]
