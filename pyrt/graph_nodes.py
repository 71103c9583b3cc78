"""What Tensor.grad_fn returns: a view of the op that made a tensor as torch.autograd.graph's
Node, named as torch names it (MulBackward0), with `next_functions` leading to the ops that
made its inputs, and AccumulateGrad at the leaves, so that code walking a graph (printing
it, drawing it) walks pyrt's. The graph itself stays the tensors' `_parents` and
`_backward` closures; a Node is made on each read of grad_fn and compares equal to another
of the same op."""

__all__ = ["AccumulateGrad", "Node"]


class Node:
    """The recorded op that made `of` (a tensor, or a Function call's hidden node)."""

    __slots__ = ("_of",)

    def __init__(self, of):
        self._of = of

    def name(self):
        from pyrt.anomaly_mode import name_of

        return name_of(self._of._backward)

    @property
    def next_functions(self):
        """((node, 0), ...) for each input of the op: its own Node if an op made it,
        AccumulateGrad for a leaf that requires grad, None for one that does not."""
        out = []
        for parent in self._of._parents:
            if not parent._requires_grad:
                out.append((None, 0))
            elif parent._backward is None:
                out.append((AccumulateGrad(parent), 0))
            else:
                out.append((Node(parent), 0))
        return tuple(out)

    @property
    def metadata(self):
        return {}

    def __eq__(self, other):
        return type(other) is type(self) and other._of is self._of

    def __hash__(self):
        return id(self._of)

    def __repr__(self):
        return f"<{self.name()} object at {id(self._of):#x}>"


class AccumulateGrad(Node):
    """The end of a path at a leaf: `variable` is the leaf whose .grad gains the gradient."""

    __slots__ = ()

    @property
    def variable(self):
        return self._of

    def name(self):
        return "torch::autograd::AccumulateGrad"

    @property
    def next_functions(self):
        return ()
