"""The gradients of convolutions with respect to their input and weight, under torch.nn.grad's
names (pyrt.conv_grad computes them)."""

from pyrt.conv_grad import (
    conv1d_input,
    conv1d_weight,
    conv2d_input,
    conv2d_weight,
    conv3d_input,
    conv3d_weight,
)

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input",
           "conv3d_weight"]
