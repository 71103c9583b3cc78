"""Constraints: the sets a distribution's parameters and values lie in. `check(value)` gives
a bool tensor, True where value lies in the set, over value's shape less the constraint's
`event_dim` rightmost dims (a simplex constrains a whole vector, so its event_dim is 1).

The names are PyTorch's: real, positive, greater_than(lower), interval(lower, upper),
unit_interval, simplex, lower_cholesky, positive_definite, independent(base, n), ...
"""

import numpy as np

from pyrt.functional import _tensor

__all__ = [
    "Constraint", "boolean", "cat", "corr_cholesky", "dependent", "dependent_property",
    "greater_than", "greater_than_eq", "half_open_interval", "independent", "integer_interval",
    "interval", "is_dependent", "less_than", "lower_cholesky", "lower_triangular", "multinomial",
    "nonnegative", "nonnegative_integer", "one_hot", "positive", "positive_definite",
    "positive_integer", "positive_semidefinite", "real", "real_vector", "simplex", "square",
    "stack", "symmetric", "unit_interval",
]


class Constraint:
    """A set of values. `is_discrete` says whether it holds integers only; `event_dim` how many
    rightmost dims together make one member."""

    is_discrete = False
    event_dim = 0

    def check(self, value):
        """A bool tensor: whether each event of `value` lies in the set."""
        raise NotImplementedError

    def __repr__(self):
        return self.__class__.__name__[1:] + "()"


class _Dependent(Constraint):
    """The placeholder for a support that depends on other parameters (Uniform's support
    depends on low and high); it cannot be checked."""

    def __init__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        self._is_discrete = is_discrete
        self._event_dim = event_dim
        super().__init__()

    @property
    def is_discrete(self):
        if self._is_discrete is NotImplemented:
            raise NotImplementedError(".is_discrete cannot be determined statically")
        return self._is_discrete

    @property
    def event_dim(self):
        if self._event_dim is NotImplemented:
            raise NotImplementedError(".event_dim cannot be determined statically")
        return self._event_dim

    def __call__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        if is_discrete is NotImplemented:
            is_discrete = self._is_discrete
        if event_dim is NotImplemented:
            event_dim = self._event_dim
        return _Dependent(is_discrete=is_discrete, event_dim=event_dim)

    def check(self, x):
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint):
    """Whether `constraint` is a dependent placeholder (skipped by argument validation)."""
    return isinstance(constraint, _Dependent)


class _DependentProperty(property, _Dependent):
    """A property that is also a dependent constraint: ``support`` of a distribution whose
    support depends on its parameters, declared as ``@constraints.dependent_property``."""

    def __init__(self, fn=None, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        property.__init__(self, fn)
        self._is_discrete = is_discrete
        self._event_dim = event_dim

    def __call__(self, fn):
        return _DependentProperty(fn, is_discrete=self._is_discrete, event_dim=self._event_dim)


class _IndependentConstraint(Constraint):
    """`base_constraint` applied to events of `reinterpreted_batch_ndims` more rightmost dims:
    true for an event only where true for all its elements."""

    def __init__(self, base_constraint, reinterpreted_batch_ndims):
        if not isinstance(base_constraint, Constraint):
            raise TypeError("independent(): base_constraint must be a Constraint, got "
                            f"{type(base_constraint).__name__}")
        if not isinstance(reinterpreted_batch_ndims, int) or reinterpreted_batch_ndims < 0:
            raise ValueError("independent(): reinterpreted_batch_ndims must be a non-negative "
                             f"int, got {reinterpreted_batch_ndims!r}")
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims
        super().__init__()

    @property
    def is_discrete(self):
        return self.base_constraint.is_discrete

    @property
    def event_dim(self):
        return self.base_constraint.event_dim + self.reinterpreted_batch_ndims

    def check(self, value):
        result = self.base_constraint.check(value)
        if result.dim() < self.reinterpreted_batch_ndims:
            expected = self.base_constraint.event_dim + self.reinterpreted_batch_ndims
            raise ValueError(f"Expected value.dim() >= {expected} but got {value.dim()}")
        for _ in range(self.reinterpreted_batch_ndims):
            result = result.all(-1)
        return result

    def __repr__(self):
        return (f"{self.__class__.__name__[1:]}({self.base_constraint!r}, "
                f"{self.reinterpreted_batch_ndims})")


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value):
        return (value == 0) | (value == 1)


class _IntegerInterval(Constraint):
    """Integers in [lower_bound, upper_bound]."""

    is_discrete = True

    def __init__(self, lower_bound, upper_bound):
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value):
        return (value % 1 == 0) & (self.lower_bound <= value) & (value <= self.upper_bound)

    def __repr__(self):
        return (f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound}, "
                f"upper_bound={self.upper_bound})")


class _IntegerGreaterThan(Constraint):
    """Integers >= lower_bound."""

    is_discrete = True

    def __init__(self, lower_bound):
        self.lower_bound = lower_bound
        super().__init__()

    def check(self, value):
        return (value % 1 == 0) & (value >= self.lower_bound)

    def __repr__(self):
        return f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound})"


class _Real(Constraint):
    """The extended reals less NaN."""

    def check(self, value):
        return value == value


class _GreaterThan(Constraint):
    def __init__(self, lower_bound):
        self.lower_bound = lower_bound
        super().__init__()

    def check(self, value):
        return value > self.lower_bound

    def __repr__(self):
        return f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound})"


class _GreaterThanEq(_GreaterThan):
    def check(self, value):
        return value >= self.lower_bound


class _LessThan(Constraint):
    def __init__(self, upper_bound):
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value):
        return value < self.upper_bound

    def __repr__(self):
        return f"{self.__class__.__name__[1:]}(upper_bound={self.upper_bound})"


class _Interval(Constraint):
    """The closed interval [lower_bound, upper_bound]."""

    def __init__(self, lower_bound, upper_bound):
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value):
        return (self.lower_bound <= value) & (value <= self.upper_bound)

    def __repr__(self):
        return (f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound}, "
                f"upper_bound={self.upper_bound})")


class _HalfOpenInterval(_Interval):
    """[lower_bound, upper_bound)."""

    def check(self, value):
        return (self.lower_bound <= value) & (value < self.upper_bound)


def _host_check(value, event_dim, test):
    """A bool tensor on value's device from a test run on value's host data as float64: for
    the matrix constraints, whose checks are not elementwise."""
    from pyrt.tensor import _move

    data = np.asarray(_move(value._data, "cpu"), np.float64)
    return _tensor()(_move(np.asarray(test(data), bool), value.device))


class _Simplex(Constraint):
    """Vectors of non-negative entries summing to 1 (within 1e-6)."""

    event_dim = 1

    def check(self, value):
        return (value >= 0).all(-1) & ((value.sum(-1) - 1).abs() < 1e-6)


class _OneHot(Constraint):
    """Vectors of zeros with a single one."""

    is_discrete = True
    event_dim = 1

    def check(self, value):
        is_boolean = (value == 0) | (value == 1)
        return is_boolean.all(-1) & (value.sum(-1) == 1)


class _Multinomial(Constraint):
    """Vectors of non-negative integer counts summing to at most upper_bound."""

    is_discrete = True
    event_dim = 1

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value):
        return (value >= 0).all(-1) & (value.sum(-1) <= self.upper_bound)


class _LowerTriangular(Constraint):
    event_dim = 2

    def check(self, value):
        return _host_check(value, 2, lambda a: (np.tril(a) == a).all((-2, -1)))


class _LowerCholesky(Constraint):
    """Lower-triangular matrices with a positive diagonal."""

    event_dim = 2

    def check(self, value):
        return _host_check(value, 2, lambda a: (np.tril(a) == a).all((-2, -1))
                           & (np.diagonal(a, 0, -2, -1) > 0).all(-1))


class _CorrCholesky(Constraint):
    """Lower Cholesky factors of correlation matrices: lower triangular, a positive diagonal
    and rows of unit Euclidean norm (within 10 float32 eps per column)."""

    event_dim = 2

    def check(self, value):
        tol = float(np.finfo(np.float32).eps) * value.shape[-1] * 10
        return _LowerCholesky().check(value) & _host_check(
            value, 2, lambda a: (np.abs(np.linalg.norm(a, axis=-1) - 1) <= tol).all(-1))


class _Square(Constraint):
    event_dim = 2

    def check(self, value):
        full = np.ones(value.shape[:-2], bool) if value.shape[-2] == value.shape[-1] \
            else np.zeros(value.shape[:-2], bool)
        return _host_check(value, 2, lambda a: full)


class _Symmetric(_Square):
    def check(self, value):
        if value.shape[-2] != value.shape[-1]:
            return super().check(value)
        return _host_check(value, 2, lambda a: np.isclose(a, np.swapaxes(a, -1, -2),
                                                          atol=1e-6).all((-2, -1)))


def _eigenvalues(a):
    return np.linalg.eigvalsh(np.nan_to_num(a)) if a.size else np.zeros(a.shape[:-1])


class _PositiveSemidefinite(_Symmetric):
    def check(self, value):
        sym = super().check(value)
        if value.shape[-2] != value.shape[-1]:
            return sym
        return sym & _host_check(value, 2, lambda a: (_eigenvalues(a) >= 0).all(-1))


class _PositiveDefinite(_Symmetric):
    def check(self, value):
        sym = super().check(value)
        if value.shape[-2] != value.shape[-1]:
            return sym
        return sym & _host_check(value, 2, lambda a: (_eigenvalues(a) > 0).all(-1))


def _check_dim(dim, value):
    if not -value.dim() <= dim < value.dim():
        raise ValueError(f"dim {dim} out of range for value with {value.dim()} dimensions")


class _Cat(Constraint):
    """The constraints `cseq` applied to consecutive slices of `lengths` (default: 1 each)
    along `dim`, as torch.cat joins them."""

    def __init__(self, cseq, dim=0, lengths=None):
        self.cseq = list(cseq)
        if not all(isinstance(c, Constraint) for c in self.cseq):
            raise TypeError("cat(): all elements of cseq must be Constraint instances")
        self.lengths = [1] * len(self.cseq) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.cseq):
            raise ValueError(f"cat(): lengths ({len(self.lengths)}) must match cseq "
                             f"({len(self.cseq)})")
        self.dim = dim
        super().__init__()

    @property
    def is_discrete(self):
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self):
        return max(c.event_dim for c in self.cseq)

    def check(self, value):
        import pyrt

        _check_dim(self.dim, value)
        checks, start = [], 0
        for constraint, length in zip(self.cseq, self.lengths):
            checks.append(constraint.check(value.narrow(self.dim, start, length)))
            start += length
        return pyrt.cat(checks, self.dim)


class _Stack(Constraint):
    """The constraints `cseq` applied to the slices along `dim`, one each, as torch.stack
    joins them."""

    def __init__(self, cseq, dim=0):
        self.cseq = list(cseq)
        if not all(isinstance(c, Constraint) for c in self.cseq):
            raise TypeError("stack(): all elements of cseq must be Constraint instances")
        self.dim = dim
        super().__init__()

    @property
    def is_discrete(self):
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self):
        # A negative dim that falls inside the members' event dims adds one to them.
        dim = max(c.event_dim for c in self.cseq)
        if self.dim + dim < 0:
            dim += 1
        return dim

    def check(self, value):
        import pyrt

        _check_dim(self.dim, value)
        if value.shape[self.dim] != len(self.cseq):
            raise ValueError(f"value.size({self.dim}) = {value.shape[self.dim]} must equal "
                             f"len(cseq) {len(self.cseq)}")
        return pyrt.stack([c.check(value.select(self.dim, i))
                           for i, c in enumerate(self.cseq)], self.dim)


dependent = _Dependent()
dependent_property = _DependentProperty
independent = _IndependentConstraint
boolean = _Boolean()
nonnegative_integer = _IntegerGreaterThan(0)
positive_integer = _IntegerGreaterThan(1)
integer_interval = _IntegerInterval
real = _Real()
real_vector = independent(real, 1)
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
unit_interval = _Interval(0.0, 1.0)
interval = _Interval
half_open_interval = _HalfOpenInterval
simplex = _Simplex()
one_hot = _OneHot()
multinomial = _Multinomial
lower_triangular = _LowerTriangular()
lower_cholesky = _LowerCholesky()
corr_cholesky = _CorrCholesky()
square = _Square()
symmetric = _Symmetric()
positive_semidefinite = _PositiveSemidefinite()
positive_definite = _PositiveDefinite()
cat = _Cat
stack = _Stack
