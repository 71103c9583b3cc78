"""Scaling benchmarks of pyrt beside its peers: ``python -m pyrt bench scaling`` (see cli)."""
