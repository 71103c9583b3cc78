"""get_worker_info, as torch.utils.data's: None, for pyrt's DataLoader reads every sample in
the calling process.

torch's loader can read samples in worker processes, and an IterableDataset uses
``get_worker_info()`` there to split its stream between them (``id``, ``num_workers``,
``seed``, ``dataset``). pyrt's loader takes ``num_workers`` and starts no workers: the kernels
of the calling process already use every core. Code written for torch's single-process
loading, the ``worker_info is None`` branch, therefore runs unchanged and reads the whole
stream.
"""

__all__ = ["get_worker_info"]


def get_worker_info():
    """Information about the data-loading worker process calling it, or None in the main
    process: always None in pyrt, where no worker processes are started."""
    return None
