"""torch.testing: ``assert_close``, to compare results with torch's tolerances and messages,
and ``make_tensor``, to make random test inputs with torch's value ranges."""

from pyrt.testing.comparison import assert_close
from pyrt.testing.creation import make_tensor

__all__ = ["assert_close", "make_tensor"]
