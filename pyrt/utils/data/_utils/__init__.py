"""torch.utils.data._utils's submodules that ported code imports: ``collate`` and
``worker``."""

from pyrt.utils.data._utils import collate, worker  # noqa: F401
