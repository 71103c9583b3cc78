"""The CUDA backend's table of ops: the primitives of ``pyrt.ops`` by the same names, with
the same arguments and errors, on float32 CuPy arrays. pyrt/ops/_routing.py sends a
``pyrt.ops.<name>`` call on CuPy arrays to ``OPS[name]``."""

from pyrt.cuda.ops.batch_norm import batch_norm, batch_norm_backward
from pyrt.cuda.ops.conv import (
    avg_pool2d,
    avg_pool2d_backward,
    conv2d,
    conv2d_backward,
    max_pool2d,
    max_pool2d_backward,
)
from pyrt.cuda.ops.elementwise import (
    add,
    addcmul,
    bias_act,
    bias_grad,
    div,
    exp,
    exp_backward,
    log,
    log_backward,
    mul,
    neg,
    relu,
    relu_backward,
    sigmoid,
    sigmoid_backward,
    sqrt,
    sqrt_backward,
    sub,
    tanh,
    tanh_backward,
)
from pyrt.cuda.ops.layer_norm import layer_norm, layer_norm_backward
from pyrt.cuda.ops.linalg import matmul
from pyrt.cuda.ops.optim import adam_step, sgd_step
from pyrt.cuda.ops.reduction import (
    argmax,
    binary_cross_entropy_with_logits,
    cross_entropy,
    log_softmax,
    max,
    mean,
    softmax,
    sum,
)

OPS = {
    "add": add, "addcmul": addcmul, "adam_step": adam_step, "argmax": argmax,
    "avg_pool2d": avg_pool2d, "avg_pool2d_backward": avg_pool2d_backward,
    "batch_norm": batch_norm, "batch_norm_backward": batch_norm_backward,
    "bias_act": bias_act, "bias_grad": bias_grad,
    "binary_cross_entropy_with_logits": binary_cross_entropy_with_logits, "conv2d": conv2d,
    "conv2d_backward": conv2d_backward, "cross_entropy": cross_entropy, "div": div,
    "exp": exp, "exp_backward": exp_backward, "layer_norm": layer_norm,
    "layer_norm_backward": layer_norm_backward, "log": log, "log_backward": log_backward,
    "log_softmax": log_softmax, "matmul": matmul, "max": max, "max_pool2d": max_pool2d,
    "max_pool2d_backward": max_pool2d_backward, "mean": mean, "mul": mul, "neg": neg,
    "relu": relu, "relu_backward": relu_backward, "sgd_step": sgd_step, "sigmoid": sigmoid,
    "sigmoid_backward": sigmoid_backward, "softmax": softmax, "sqrt": sqrt,
    "sqrt_backward": sqrt_backward, "sub": sub, "sum": sum, "tanh": tanh,
    "tanh_backward": tanh_backward,
}

__all__ = ["OPS"]  # the ops themselves are reached through the table
