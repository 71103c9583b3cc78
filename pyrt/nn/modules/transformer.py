"""torch.nn.modules.transformer's names in pyrt: the transformer layers."""

from pyrt.nn import (
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)

__all__ = ["Transformer", "TransformerDecoder", "TransformerDecoderLayer", "TransformerEncoder",
           "TransformerEncoderLayer"]
