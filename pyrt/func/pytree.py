"""Nested containers of arguments and results ("pytrees"), as torch.utils._pytree sees
them: tuples, lists, dicts (their keys in insertion order) and namedtuples are nodes whose
children are their items; anything else (a Tensor, a number, None) is a leaf.

flatten gives the leaves in order and a spec of the structure; unflatten puts leaves back
into a structure. broadcast_prefix spreads a prefix tree (vmap's in_dims, out_dims) over a
tree: a leaf of the prefix stands for everything below it.
"""

__all__ = ["LEAF", "broadcast_prefix", "flatten", "unflatten"]

LEAF = None  # the spec of a leaf


def _node(tree):
    """(node type, context, children) of a container, or None for a leaf."""
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):  # a namedtuple
        return type(tree), None, list(tree)
    if isinstance(tree, (tuple, list)):
        return type(tree), None, list(tree)
    if isinstance(tree, dict):
        return type(tree), list(tree), list(tree.values())
    return None


def flatten(tree):
    """(leaves, spec): the leaves of `tree` in depth-first order, and its structure."""
    leaves = []

    def walk(node):
        parts = _node(node)
        if parts is None:
            leaves.append(node)
            return LEAF
        kind, context, children = parts
        return kind, context, tuple(walk(child) for child in children)

    return leaves, walk(tree)


def _build(kind, context, children):
    if kind is not tuple and issubclass(kind, tuple) and hasattr(kind, "_fields"):
        return kind(*children)
    if issubclass(kind, dict):
        return kind(zip(context, children))
    return kind(children)


def unflatten(leaves, spec):
    """The structure `spec` (from flatten) with `leaves` in place of its leaves."""
    leaves = iter(leaves)

    def build(node_spec):
        if node_spec is LEAF:
            return next(leaves)
        kind, context, children = node_spec
        return _build(kind, context, [build(child) for child in children])

    return build(spec)


def spec_str(spec):
    """A short picture of a structure for error messages: * for a leaf."""
    if spec is LEAF:
        return "*"
    kind, context, children = spec
    inner = ", ".join(spec_str(child) for child in children)
    if issubclass(kind, dict):
        inner = ", ".join(f"{key!r}: {spec_str(child)}" for key, child in zip(context, children))
        return "{" + inner + "}"
    if issubclass(kind, list):
        return f"[{inner}]"
    return f"({inner}{',' if len(children) == 1 else ''})"


def broadcast_prefix(prefix, tree, is_leaf):
    """The value of `prefix` for each leaf of `tree`: `prefix` has tree's structure down to
    some depth, and a leaf of it (is_leaf(value)) covers the whole subtree below it. None
    when prefix does not fit tree's structure."""
    out = []

    def walk(pre, node):
        if is_leaf(pre):
            out.extend([pre] * len(flatten(node)[0]))
            return True
        pre_parts, node_parts = _node(pre), _node(node)
        if pre_parts is None or node_parts is None:
            return False
        pre_kind, pre_context, pre_children = pre_parts
        kind, context, children = node_parts
        if issubclass(kind, dict) != issubclass(pre_kind, dict):
            return False
        if issubclass(kind, dict):
            if set(pre_context) != set(context):
                return False
            pre_children = [pre[key] for key in context]
        elif (issubclass(kind, list) != issubclass(pre_kind, list)
              or len(pre_children) != len(children)):
            return False
        return all(walk(p, c) for p, c in zip(pre_children, children))

    return out if walk(prefix, tree) else None
