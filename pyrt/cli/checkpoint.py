"""Training checkpoints: the state of ``pyrt train`` (model and optimizer state dicts, epoch,
step, seed, settings) in pyrt.save's file format (pyrt/serialization.py), beside the format
name "pyrt-checkpoint" and its version. pyrt.load reads them too."""

from pathlib import Path

from pyrt import serialization

__all__ = ["FORMAT", "VERSION", "load_checkpoint", "save_checkpoint"]

FORMAT = serialization.CHECKPOINT_FORMAT
VERSION = 1


def save_checkpoint(path, state):
    """Write `state` (a dict) to `path` atomically, adding the format name and version."""
    return serialization.write(Path(path), {"format": FORMAT, "version": VERSION, **state})


def load_checkpoint(path):
    """Read a checkpoint written by ``save_checkpoint``; ValueError naming the file if it is
    not one (or of a newer version)."""
    path = Path(path)
    state = serialization.read(path, "pyrt checkpoint")
    if state.get("format") != FORMAT:
        raise ValueError(f"{path}: not a pyrt checkpoint")
    if not isinstance(state.get("version"), int) or state["version"] > VERSION:
        raise ValueError(f"{path}: checkpoint version {state.get('version')!r} is newer than "
                         f"this pyrt reads ({VERSION}); upgrade pyrt")
    return state
