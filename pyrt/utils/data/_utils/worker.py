"""torch.utils.data._utils.worker's name: get_worker_info."""

from pyrt.data.worker import get_worker_info

__all__ = ["get_worker_info"]
