"""torch.distributed as pyrt has it: pyrt runs in one process and has no process groups, so
``is_available()`` and ``is_initialized()`` are False, and what needs a process group
(``get_rank()``, ``get_world_size()``, the collectives) raises the ValueError torch raises
before ``init_process_group()``. Code that checks ``dist.is_available() and
dist.is_initialized()`` first, as most library code does, takes its one-process path."""

__all__ = ["all_gather", "all_reduce", "barrier", "broadcast", "destroy_process_group",
           "get_rank", "get_world_size", "init_process_group", "is_available",
           "is_initialized", "reduce"]

_NO_GROUP = ("Default process group has not been initialized, please make sure to call "
             "init_process_group.")


def is_available():
    """False: pyrt has no distributed backend."""
    return False


def is_initialized():
    """False: no process group is ever made."""
    return False


def init_process_group(*args, **kwargs):
    raise RuntimeError("init_process_group: pyrt runs in one process and has no distributed "
                       "backend (pyrt.distributed.is_available() is False)")


def _needs_group(*args, **kwargs):
    raise ValueError(_NO_GROUP)


get_rank = get_world_size = barrier = destroy_process_group = _needs_group
all_reduce = all_gather = broadcast = reduce = _needs_group
