"""Array-level ops: float32 NumPy arrays in, float32 NumPy arrays out, C kernels underneath,
parallel through pyrt's scheduler. Every op that produces one float32 array takes ``out=``
(argmax, whose result is int64, the losses and conv2d_backward return new arrays); every op
raises TypeError/ValueError naming the argument on bad dtype, shape or layout."""

from pyrt.ops.batch_norm import batch_norm, batch_norm_backward
from pyrt.ops.conv import conv2d, conv2d_backward
from pyrt.ops.elementwise import (
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
from pyrt.ops.layer_norm import layer_norm, layer_norm_backward
from pyrt.ops.linalg import matmul, sgemm_kernel
from pyrt.ops.optim import adam_step, sgd_step
from pyrt.ops.pool import avg_pool2d, avg_pool2d_backward, max_pool2d, max_pool2d_backward
from pyrt.ops.reduction import argmax, max, mean, sum
from pyrt.ops.softmax import (
    binary_cross_entropy_with_logits,
    cross_entropy,
    log_softmax,
    softmax,
)

__all__ = [
    "adam_step",
    "add",
    "addcmul",
    "argmax",
    "avg_pool2d",
    "avg_pool2d_backward",
    "batch_norm",
    "batch_norm_backward",
    "bias_act",
    "bias_grad",
    "binary_cross_entropy_with_logits",
    "conv2d",
    "conv2d_backward",
    "cross_entropy",
    "div",
    "exp",
    "exp_backward",
    "layer_norm",
    "layer_norm_backward",
    "log",
    "log_backward",
    "log_softmax",
    "matmul",
    "max",
    "max_pool2d",
    "max_pool2d_backward",
    "mean",
    "mul",
    "neg",
    "relu",
    "relu_backward",
    "sgd_step",
    "sgemm_kernel",
    "sigmoid",
    "sigmoid_backward",
    "softmax",
    "sqrt",
    "sqrt_backward",
    "sub",
    "sum",
    "tanh",
    "tanh_backward",
]
