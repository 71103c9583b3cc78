"""torch.nn.modules.fold's names in pyrt: Fold and Unfold."""

from pyrt.nn import Fold, Unfold

__all__ = ["Fold", "Unfold"]
