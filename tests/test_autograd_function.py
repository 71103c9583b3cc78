"""Custom autograd Functions, pyrt.autograd.grad / backward, backward(inputs=) and hooks on
leaves: against PyTorch where it is installed, else against closed forms and finite
differences."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
import pyrt.autograd as autograd
from pyrt.autograd import Function

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")


def _array(tensor):
    return np.asarray(tensor.detach().numpy())


# ---- Functions used by the tests -------------------------------------------------------------


class Exp(Function):
    """exp, its backward reading the saved output."""

    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * y


MULADD_CALLS = []  # the gradients each call of MulAdd.backward received


class MulAdd(Function):
    """(x * y, x + y): two outputs."""

    @staticmethod
    def forward(ctx, x, y, materialize=True):
        ctx.set_materialize_grads(materialize)
        ctx.save_for_backward(x, y)
        return x * y, x + y

    @staticmethod
    def backward(ctx, grad_product, grad_sum):
        MULADD_CALLS.append((grad_product, grad_sum))
        x, y = ctx.saved_tensors
        if grad_product is None:
            grad_product = pyrt.zeros(x.shape)
        if grad_sum is None:
            grad_sum = pyrt.zeros(x.shape)
        return grad_product * y + grad_sum, grad_product * x + grad_sum, None


class Sort(Function):
    """(values, indices) of a 1-d sort: the integer indices get no gradient."""

    @staticmethod
    def forward(ctx, x):
        values, indices = x.sort()
        ctx.save_for_backward(indices)
        return values, indices

    @staticmethod
    def backward(ctx, grad_values, grad_indices):
        (indices,) = ctx.saved_tensors
        Sort.grad_indices = grad_indices
        g = np.zeros(grad_values.shape, np.float32)
        g[indices.numpy()] = grad_values.numpy()
        return pyrt.tensor(g)


class Scale(Function):
    """x * factor, a number passed through (and a keyword argument)."""

    @staticmethod
    def forward(ctx, x, factor, *, shift=0.0):
        ctx.factor = factor
        ctx.seen = ctx.needs_input_grad
        return x * factor + shift

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.factor, None


class ValueAndMask(Function):
    """(2x, x > 0), the mask marked non-differentiable though it is float."""

    @staticmethod
    def forward(ctx, x, materialize=True):
        mask = (x > 0).float()
        ctx.mark_non_differentiable(mask)
        ctx.set_materialize_grads(materialize)
        return x * 2, mask

    @staticmethod
    def backward(ctx, grad, grad_mask):
        ValueAndMask.grad_mask = grad_mask
        return grad * 2, None


def _exp_torch():
    class TorchExp(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad):
            (y,) = ctx.saved_tensors
            return grad * y

    return TorchExp


def _numerical_gradient(f, x, eps=1e-2):
    """Central differences of the scalar f at the float32 array x, in float64."""
    grad = np.zeros(x.shape)
    for i in np.ndindex(x.shape):
        plus, minus = x.copy(), x.copy()
        plus[i] += eps
        minus[i] -= eps
        grad[i] = (f(plus) - f(minus)) / (2 * eps)
    return grad


# ---- custom Functions --------------------------------------------------------------------------


def test_exp_gradient_is_the_saved_output_times_the_incoming_one():
    rng = np.random.default_rng(0)
    data = rng.standard_normal((3, 4)).astype(np.float32)
    weight = rng.standard_normal((3, 4)).astype(np.float32)
    x = pyrt.tensor(data, requires_grad=True)
    y = Exp.apply(x)
    assert y.requires_grad and not y.is_leaf and y.grad_fn.name() == "ExpBackward"
    (y * pyrt.tensor(weight)).sum().backward()
    np.testing.assert_allclose(_array(y), np.exp(data), rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), weight * np.exp(data), rtol=1e-5)


def test_exp_passes_a_finite_difference_check():
    rng = np.random.default_rng(1)
    data = rng.uniform(-1, 1, (2, 3)).astype(np.float32)
    weight = rng.standard_normal((2, 3)).astype(np.float32)

    def loss(a):
        with pyrt.no_grad():
            return float((Exp.apply(pyrt.tensor(a)) * pyrt.tensor(weight)).sum())

    x = pyrt.tensor(data, requires_grad=True)
    (Exp.apply(x) * pyrt.tensor(weight)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), _numerical_gradient(loss, data),
                               rtol=2e-3, atol=2e-3)


@needs_torch
def test_a_function_composed_with_built_in_ops_matches_torch():
    rng = np.random.default_rng(2)
    data = rng.standard_normal((4, 3)).astype(np.float32)
    weight = rng.standard_normal((3, 2)).astype(np.float32)
    grads = []
    for lib, exp in ((pyrt, Exp), (torch, _exp_torch())):
        x = lib.tensor(data, requires_grad=True)
        w = lib.tensor(weight, requires_grad=True)
        hidden = exp.apply(x.matmul(w).tanh())  # a Function between built-in ops
        loss = (exp.apply(hidden * 0.5) * hidden).sum()
        loss.backward()
        grads.append((x.grad.numpy().copy(), w.grad.numpy().copy(), float(loss.detach())))
    for ours, theirs in zip(grads[0], grads[1]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)


def test_a_two_output_function_runs_its_backward_once_with_both_gradients():
    MULADD_CALLS.clear()
    x = pyrt.tensor([1.0, 2.0], requires_grad=True)
    y = pyrt.tensor([3.0, 4.0], requires_grad=True)
    product, total = MulAdd.apply(x, y)
    assert product.grad_fn.name() == total.grad_fn.name() == "MulAddBackward"
    # the product is used twice: its gradients are summed before the one call
    (product * 2 + total * 3 + product).sum().backward()
    assert len(MULADD_CALLS) == 1
    np.testing.assert_array_equal(MULADD_CALLS[0][0].numpy(), [3.0, 3.0])
    np.testing.assert_array_equal(MULADD_CALLS[0][1].numpy(), [3.0, 3.0])
    np.testing.assert_array_equal(x.grad.numpy(), 3 * y.detach().numpy() + 3)
    np.testing.assert_array_equal(y.grad.numpy(), 3 * x.detach().numpy() + 3)


@pytest.mark.parametrize("materialize", [True, False])
def test_an_output_without_gradient_gets_zeros_or_none(materialize):
    MULADD_CALLS.clear()
    x = pyrt.tensor([1.0, 2.0], requires_grad=True)
    y = pyrt.tensor([3.0, 4.0], requires_grad=True)
    product, _ = MulAdd.apply(x, y, materialize)
    product.sum().backward()
    (grad_product, grad_sum), = MULADD_CALLS
    np.testing.assert_array_equal(grad_product.numpy(), [1.0, 1.0])
    if materialize:
        np.testing.assert_array_equal(grad_sum.numpy(), [0.0, 0.0])
    else:
        assert grad_sum is None
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 4.0])


def test_sort_routes_gradients_back_and_its_integer_output_needs_none():
    x = pyrt.tensor([3.0, 1.0, 2.0], requires_grad=True)
    values, indices = Sort.apply(x)
    np.testing.assert_array_equal(_array(values), [1.0, 2.0, 3.0])
    assert values.requires_grad and not indices.requires_grad
    (values * pyrt.tensor([1.0, 10.0, 100.0])).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [100.0, 1.0, 10.0])
    # the integer output's gradient is materialized as zeros of its dtype
    assert Sort.grad_indices.dtype == indices.dtype
    np.testing.assert_array_equal(Sort.grad_indices.numpy(), [0, 0, 0])


@needs_torch
def test_sort_matches_torch_sort():
    rng = np.random.default_rng(3)
    data = rng.permutation(8).astype(np.float32)
    weight = rng.standard_normal(8).astype(np.float32)
    x = pyrt.tensor(data, requires_grad=True)
    (Sort.apply(x)[0] * pyrt.tensor(weight)).sum().backward()
    tx = torch.tensor(data, requires_grad=True)
    (tx.sort()[0] * torch.tensor(weight)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())


def test_non_tensor_arguments_pass_through_and_get_no_gradient():
    x = pyrt.tensor([1.0, -2.0], requires_grad=True)
    y = Scale.apply(x, 3.0, shift=1.0)
    np.testing.assert_array_equal(_array(y), [4.0, -5.0])
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])


def test_needs_input_grad_and_grad_mode_inside_forward_and_backward():
    seen = {}

    class Probe(Function):
        @staticmethod
        def forward(ctx, x, w, n):
            seen["forward"] = (ctx.needs_input_grad, pyrt.is_grad_enabled())
            return x * w * n

        @staticmethod
        def backward(ctx, grad):
            seen["backward"] = pyrt.is_grad_enabled()
            return grad, grad, None

    x = pyrt.ones(2, requires_grad=True)
    Probe.apply(x, pyrt.ones(2), 2).sum().backward()
    assert seen == {"forward": ((True, False, False), False), "backward": False}
    out = Probe.apply(pyrt.ones(2), pyrt.ones(2), 2)
    assert seen["forward"][0] == (False, False, False) and not out.requires_grad
    with pyrt.no_grad():
        assert not Probe.apply(x, pyrt.ones(2), 2).requires_grad


def test_a_gradient_returned_for_an_input_that_needs_none_is_dropped():
    x = pyrt.ones(2, requires_grad=True)
    w = pyrt.tensor([2.0, 3.0])

    class Both(Function):
        @staticmethod
        def forward(ctx, x, w):
            return x * w

        @staticmethod
        def backward(ctx, grad):
            return grad * 2, grad * 100

    Both.apply(x, w).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])
    assert w.grad is None


def test_none_gradients_reach_no_input():
    class Cut(Function):
        @staticmethod
        def forward(ctx, x, w):
            return x * w

        @staticmethod
        def backward(ctx, grad):
            return None, grad

    x, w = pyrt.ones(2, requires_grad=True), pyrt.ones(2, requires_grad=True)
    (Cut.apply(x, w) + x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0])  # only through `+ x`
    np.testing.assert_array_equal(w.grad.numpy(), [1.0, 1.0])


@pytest.mark.parametrize("materialize", [True, False])
def test_mark_non_differentiable(materialize):
    x = pyrt.tensor([-1.0, 2.0], requires_grad=True)
    value, mask = ValueAndMask.apply(x, materialize)
    assert value.requires_grad and not mask.requires_grad and mask.is_leaf
    np.testing.assert_array_equal(mask.numpy(), [0.0, 1.0])
    value.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])
    if materialize:
        np.testing.assert_array_equal(ValueAndMask.grad_mask.numpy(), [0.0, 0.0])
    else:
        assert ValueAndMask.grad_mask is None


def test_an_input_returned_as_it_is_becomes_a_new_tensor():
    class Identity(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad * 5

    x = pyrt.ones(3, requires_grad=True)
    y = Identity.apply(x)
    assert y is not x and x.is_leaf and not y.is_leaf
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [5.0, 5.0, 5.0])


def test_a_gradient_shaped_as_the_input_broadcasts_to_is_summed_back():
    class Spread(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad.expand(4, 3)

    x = pyrt.ones(3, requires_grad=True)
    Spread.apply(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [4.0, 4.0, 4.0])


def test_a_tensor_backward_returns_and_keeps_does_not_become_a_grad():
    constant = pyrt.tensor([7.0, 7.0])

    class Constant(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, grad):
            return constant  # a leaf's .grad must not be this array, added to later

    x = pyrt.ones(2, requires_grad=True)
    for _ in range(3):
        Constant.apply(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [21.0, 21.0])
    np.testing.assert_array_equal(constant.numpy(), [7.0, 7.0])


def test_arbitrary_attributes_and_setup_context():
    class Power(Function):
        @staticmethod
        def forward(x, exponent):
            return x ** exponent

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])
            ctx.exponent = inputs[1]

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * ctx.exponent * x ** (ctx.exponent - 1), None

    x = pyrt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    Power.apply(x, 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 12.0, 27.0])


@settings(max_examples=25, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=0, max_size=3), seed=st.integers(0, 2**16))
def test_exp_and_grad_agree_with_the_closed_form_for_any_shape(shape, seed):
    rng = np.random.default_rng(seed)
    data = rng.uniform(-2, 2, shape).astype(np.float32)
    weight = rng.standard_normal(shape).astype(np.float32)
    x = pyrt.tensor(data, requires_grad=True)
    loss = (Exp.apply(x) * pyrt.tensor(weight)).sum()
    (g,) = autograd.grad(loss, x, retain_graph=True)
    loss.backward()
    np.testing.assert_allclose(g.numpy(), weight * np.exp(data), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(g.numpy(), x.grad.numpy())


# ---- errors of Functions -----------------------------------------------------------------------


def test_a_wrong_number_of_gradients_is_an_error():
    class Short(Function):
        @staticmethod
        def forward(ctx, x, w):
            return x * w

        @staticmethod
        def backward(ctx, grad):
            return grad

    x = pyrt.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"function ShortBackward returned an incorrect "
                                           r"number of gradients \(expected 2, got 1\)"):
        Short.apply(x, x).sum().backward()


def test_extra_none_gradients_are_allowed_and_extra_tensors_are_not():
    class Extra(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2, None, None

    x = pyrt.ones(2, requires_grad=True)
    Extra.apply(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])

    class TooMany(Extra):
        @staticmethod
        def backward(ctx, grad):
            return grad, grad

    with pytest.raises(RuntimeError, match=r"expected 1, got 2"):
        TooMany.apply(x).sum().backward()


def test_a_gradient_for_a_non_tensor_argument_is_an_error():
    class Number(Function):
        @staticmethod
        def forward(ctx, x, n):
            return x * n

        @staticmethod
        def backward(ctx, grad):
            return grad, grad

    with pytest.raises(RuntimeError, match="position 2, but the corresponding forward input "
                                           "was not a Tensor"):
        Number.apply(pyrt.ones(2, requires_grad=True), 2).sum().backward()


def test_a_gradient_of_the_wrong_shape_or_type_is_an_error():
    class Cropped(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad[:2]

    class Number(Cropped):
        @staticmethod
        def backward(ctx, grad):
            return 3

    x = pyrt.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Function CroppedBackward returned an invalid "
                                           r"gradient at index 0 - got \[2\] but expected "
                                           r"shape compatible with \[3\]"):
        Cropped.apply(x).sum().backward()
    with pytest.raises(TypeError, match="returned a int as gradient 0: expected a Tensor"):
        Number.apply(x).sum().backward()


def test_a_saved_tensor_written_in_place_after_forward_is_an_error():
    x = pyrt.tensor([0.0, 1.0], requires_grad=True)
    y = Exp.apply(x)
    with pyrt.no_grad():
        y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation: saved tensor 0 "
                                           r"\(of shape \[2\]\) of ExpBackward"):
        y.sum().backward()


def test_a_saved_tensor_written_before_save_for_backward_is_fine():
    class SaveLater(Function):
        @staticmethod
        def forward(ctx, x):
            y = x * 2
            y.add_(1)  # before it is saved
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad):
            (y,) = ctx.saved_tensors
            return grad * y

    x = pyrt.tensor([1.0, 2.0], requires_grad=True)
    SaveLater.apply(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 5.0])


def test_saved_tensors_are_freed_by_backward_unless_the_graph_is_retained():
    contexts = []

    class Keep(Exp):
        @staticmethod
        def forward(ctx, x):
            contexts.append(ctx)
            return Exp.forward(ctx, x)

    x = pyrt.tensor([0.0, 1.0], requires_grad=True)
    y = Keep.apply(x)
    y.sum().backward(retain_graph=True)
    np.testing.assert_allclose(contexts[0].saved_tensors[0].numpy(), np.exp([0.0, 1.0]),
                               rtol=1e-6)
    y.sum().backward()
    with pytest.raises(RuntimeError, match="directly access saved tensors after they have "
                                           "already been freed"):
        contexts[0].saved_tensors  # noqa: B018
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.sum().backward()


def test_save_for_backward_takes_tensors_or_none():
    class SaveNumber(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, 3)
            return x * 2

    with pytest.raises(TypeError, match="argument 1 must be a Tensor or None, got int"):
        SaveNumber.apply(pyrt.ones(2, requires_grad=True))

    class SaveNone(Exp):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(None, x)
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            none, _ = ctx.saved_tensors
            assert none is None
            return grad * 2

    x = pyrt.ones(2, requires_grad=True)
    SaveNone.apply(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])


def test_mark_dirty_is_refused():
    class Dirty(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_dirty(x)
            return x

    with pytest.raises(NotImplementedError, match="mark_dirty"):
        Dirty.apply(pyrt.ones(2, requires_grad=True))


def test_a_missing_backward_is_an_error_at_backward_time():
    class NoBackward(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

    y = NoBackward.apply(pyrt.ones(2, requires_grad=True))
    with pytest.raises(NotImplementedError, match="must implement the backward"):
        y.sum().backward()


def test_calling_an_instance_is_refused_as_legacy_style():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        instance = Exp()
    assert any(issubclass(w.category, DeprecationWarning) for w in caught)
    with pytest.raises(RuntimeError, match="Legacy autograd function"):
        instance(pyrt.ones(2, requires_grad=True))
    with pytest.raises(RuntimeError, match="subclass of Function"):
        Function.apply(pyrt.ones(2, requires_grad=True))


# ---- pyrt.autograd.grad ------------------------------------------------------------------------


def test_grad_of_leaves_and_intermediates_leaves_grad_untouched():
    x = pyrt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w = pyrt.tensor([2.0, 0.5, -1.0], requires_grad=True)
    h = x * w
    loss = (h * h).sum()
    gx, gh = autograd.grad(loss, [x, h])
    np.testing.assert_allclose(gh.numpy(), 2 * _array(h))
    np.testing.assert_allclose(gx.numpy(), 2 * _array(h) * w.detach().numpy())
    assert x.grad is None and w.grad is None and h.grad is None
    assert isinstance(gx, pyrt.Tensor) and not gx.requires_grad


def test_grad_keeps_grad_that_is_there_as_it_is():
    x = pyrt.tensor([1.0, 2.0], requires_grad=True)
    (x * 3).sum().backward()
    (g,) = autograd.grad((x * x).sum(), x)
    np.testing.assert_array_equal(g.numpy(), [2.0, 4.0])
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])


@needs_torch
def test_grad_with_several_outputs_and_weights_matches_torch():
    rng = np.random.default_rng(4)
    data = rng.standard_normal((3, 2)).astype(np.float32)
    weight = rng.standard_normal((3, 2)).astype(np.float32)
    results = []
    for lib, ag in ((pyrt, autograd), (torch, torch.autograd)):
        x = lib.tensor(data, requires_grad=True)
        h = x.tanh()
        outputs = [h * 2, (h * x).sum()]
        grads = ag.grad(outputs, [x, h], grad_outputs=[lib.tensor(weight), None])
        results.append([g.numpy() for g in grads])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


def test_grad_of_an_output_that_is_also_reached_from_another_sums_both():
    x = pyrt.tensor([1.0, 2.0], requires_grad=True)
    h = x * 3
    (g,) = autograd.grad([h.sum(), h], x, grad_outputs=[None, pyrt.tensor([1.0, 10.0])])
    np.testing.assert_array_equal(g.numpy(), [6.0, 33.0])


def test_grad_of_the_same_input_twice_and_of_an_output_itself():
    x = pyrt.tensor([1.0, 2.0], requires_grad=True)
    g1, g2 = autograd.grad((x * x).sum(), [x, x])
    np.testing.assert_array_equal(g1.numpy(), [2.0, 4.0])
    np.testing.assert_array_equal(g2.numpy(), [2.0, 4.0])
    assert g1 is not g2
    (g,) = autograd.grad(x, x, pyrt.tensor([5.0, 6.0]))
    np.testing.assert_array_equal(g.numpy(), [5.0, 6.0])


def test_grad_through_a_custom_function():
    MULADD_CALLS.clear()
    x = pyrt.tensor([1.0, 2.0], requires_grad=True)
    y = pyrt.tensor([3.0, 4.0], requires_grad=True)
    product, total = MulAdd.apply(x, y)
    gx, gy = autograd.grad([product.sum(), total.sum()], [x, y])
    np.testing.assert_array_equal(gx.numpy(), [4.0, 5.0])
    np.testing.assert_array_equal(gy.numpy(), [2.0, 3.0])
    assert len(MULADD_CALLS) == 1 and x.grad is None


def test_grad_of_an_unused_input():
    x = pyrt.ones(2, requires_grad=True)
    unused = pyrt.ones(3, requires_grad=True)
    loss = (x * 2).sum()
    with pytest.raises(RuntimeError, match="The differentiated Tensor at index 1 appears to "
                                           "not have been used in the graph. Set "
                                           "allow_unused=True"):
        autograd.grad(loss, [x, unused], retain_graph=True)
    gx, gu = autograd.grad(loss, [x, unused], retain_graph=True, allow_unused=True)
    np.testing.assert_array_equal(gx.numpy(), [2.0, 2.0])
    assert gu is None
    _, gu = autograd.grad(loss, [x, unused], retain_graph=True, allow_unused=True,
                          materialize_grads=True)
    np.testing.assert_array_equal(gu.numpy(), [0.0, 0.0, 0.0])
    _, gu = autograd.grad(loss, [x, unused], materialize_grads=True)  # implies allow_unused
    assert gu.shape == (3,)
    with pytest.raises(ValueError, match="allow_unused"):
        autograd.grad(loss, [x], allow_unused=False, materialize_grads=True)


def test_grad_frees_the_graph_unless_retained():
    x = pyrt.ones(2, requires_grad=True)
    loss = (x * x).sum()
    autograd.grad(loss, x, retain_graph=True)
    autograd.grad(loss, x)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        autograd.grad(loss, x)


def test_grad_errors():
    x = pyrt.ones(3, requires_grad=True)
    h = x * 2
    with pytest.raises(RuntimeError, match="One of the differentiated Tensors does not "
                                           "require grad"):
        autograd.grad(h.sum(), [pyrt.ones(3)], retain_graph=True)
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad and "
                                           "does not have a grad_fn"):
        autograd.grad(pyrt.ones(3).sum(), x)
    with pytest.raises(RuntimeError, match=r"Mismatch in shape: grad_output\[0\] has a shape "
                                           r"of \[2\] and output\[0\] has a shape of \[3\]"):
        autograd.grad(h, x, grad_outputs=pyrt.ones(2), retain_graph=True)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar "
                                           "outputs"):
        autograd.grad(h, x, retain_graph=True)
    with pytest.raises(RuntimeError, match="got 2 tensors and 1 gradients"):
        autograd.grad([h, h], x, grad_outputs=[pyrt.ones(3)], retain_graph=True)
    with pytest.raises(TypeError, match="gradients can be either Tensors or None, but got "
                                        "list"):
        autograd.grad(h, x, grad_outputs=[[1.0, 2.0, 3.0]], retain_graph=True)
    with pytest.raises(RuntimeError, match="`inputs` argument to `grad\\(\\)` cannot be "
                                           "empty"):
        autograd.grad(h.sum(), [], retain_graph=True)
    with pytest.raises(TypeError, match="outputs must be a Tensor or a sequence of Tensors"):
        autograd.grad(3, x)
    with pytest.raises(TypeError, match=r"inputs\[0\] must be a Tensor"):
        autograd.grad(h.sum(), [3], retain_graph=True)
    with pytest.raises(NotImplementedError, match="'ScatterReduceBackward0' is not "
                                                  "implemented for create_graph=True"):
        autograd.grad(x.scatter_reduce(0, pyrt.tensor([0]), x, "prod").sum(), x,
                      create_graph=True)


@needs_torch
def test_grad_errors_have_torch_types():
    for ag, lib in ((autograd, pyrt), (torch.autograd, torch)):
        x = lib.ones(3, requires_grad=True)
        h = x * 2
        calls = [(h.sum(), [lib.ones(3)], None), (lib.ones(3).sum(), x, None),
                 (h, x, lib.ones(2)), (h.sum(), [lib.ones(2, requires_grad=True)], None)]
        for outputs, inputs, grad_outputs in calls:
            with pytest.raises(RuntimeError):
                ag.grad(outputs, inputs, grad_outputs, retain_graph=True)


# ---- backward(inputs=) and pyrt.autograd.backward ----------------------------------------------


@needs_torch
def test_backward_inputs_accumulates_only_into_them_as_torch():
    results = []
    for lib in (pyrt, torch):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        w = lib.tensor([0.5, -1.0, 2.0], requires_grad=True)
        h = x * w
        loss = (h * h).sum()
        loss.backward(inputs=[x], retain_graph=True)
        first = (x.grad.numpy().copy(), w.grad)
        loss.backward(inputs=h, retain_graph=True)  # a tensor made by an op gets .grad too
        loss.backward(inputs=[x, w])
        results.append((first, x.grad.numpy().copy(), w.grad.numpy().copy(),
                        h.grad.numpy().copy()))
    (first, *rest), (torch_first, *torch_rest) = results
    np.testing.assert_allclose(first[0], torch_first[0])
    assert first[1] is None and torch_first[1] is None
    for ours, theirs in zip(rest, torch_rest):
        np.testing.assert_allclose(ours, theirs)


def test_backward_inputs_leaves_the_other_leaves_alone():
    x = pyrt.tensor([1.0, 2.0], requires_grad=True)
    w = pyrt.tensor([3.0, 4.0], requires_grad=True)
    (x * w).sum().backward(inputs=[w])
    assert x.grad is None
    np.testing.assert_array_equal(w.grad.numpy(), [1.0, 2.0])


def test_backward_inputs_errors():
    x = pyrt.ones(2, requires_grad=True)
    loss = (x * 2).sum()
    with pytest.raises(RuntimeError, match="`inputs` argument to `backward\\(\\)` cannot be "
                                           "empty"):
        loss.backward(inputs=[], retain_graph=True)
    with pytest.raises(RuntimeError, match="does not require grad"):
        loss.backward(inputs=[pyrt.ones(2)], retain_graph=True)
    unused = pyrt.ones(2, requires_grad=True)
    loss.backward(inputs=[unused])  # as in torch: no error, nothing accumulated
    assert unused.grad is None and x.grad is None


def test_autograd_backward_of_several_tensors():
    x = pyrt.tensor([1.0, 2.0], requires_grad=True)
    w = pyrt.tensor([3.0, 4.0], requires_grad=True)
    h = x * w
    autograd.backward([h.sum(), h * 2], [None, pyrt.tensor([10.0, 100.0])])
    np.testing.assert_array_equal(x.grad.numpy(), [63.0, 804.0])
    np.testing.assert_array_equal(w.grad.numpy(), [21.0, 402.0])
    y = (x * x).sum()
    autograd.backward(y, inputs=[x])
    np.testing.assert_array_equal(x.grad.numpy(), [65.0, 808.0])
    with pytest.raises(RuntimeError, match="element 1 of tensors does not require grad"):
        autograd.backward([(x * 2).sum(), pyrt.ones(2).sum()])
    with pytest.raises(NotImplementedError, match="'ScatterReduceBackward0' is not "
                                                  "implemented for create_graph=True"):
        autograd.backward(x.scatter_reduce(0, pyrt.tensor([0]), x, "prod").sum(),
                          create_graph=True)


# ---- hooks on leaves ---------------------------------------------------------------------------


def test_leaf_hooks_run_in_order_on_the_summed_gradient_and_replace_it():
    seen = []
    x = pyrt.ones(2, requires_grad=True)
    x.register_hook(lambda g: seen.append(("first", g.numpy().copy())) or g * 3)
    x.register_hook(lambda g: seen.append(("second", g.numpy().copy())))
    (x * x).sum().backward()  # two gradients reach x: the hooks see their sum, once
    assert [name for name, _ in seen] == ["first", "second"]
    np.testing.assert_array_equal(seen[0][1], [2.0, 2.0])
    np.testing.assert_array_equal(seen[1][1], [6.0, 6.0])
    np.testing.assert_array_equal(x.grad.numpy(), [6.0, 6.0])


@needs_torch
def test_leaf_and_non_leaf_hooks_match_torch():
    logs = []
    for lib in (pyrt, torch):
        log = []
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        x.grad = lib.tensor([1.0, 1.0, 1.0])  # a hook's result is added to what is there
        h = x * 2
        h.register_hook(lambda g, log=log: log.append(("h", g.tolist())) or g * 10)
        x.register_hook(lambda g, log=log: log.append(("x", g.tolist())) or g + 1)
        (h * h).sum().backward()
        logs.append((log, x.grad.tolist()))
    assert logs[0] == logs[1]


def test_leaf_hook_remove_and_a_removed_hook_runs_no_more():
    calls = []
    x = pyrt.ones(2, requires_grad=True)
    handle = x.register_hook(lambda g: calls.append(1) or g * 100)
    (x * 1).sum().backward()
    handle.remove()
    handle.remove()  # a second remove() does nothing
    (x * 1).sum().backward()
    assert calls == [1]
    np.testing.assert_array_equal(x.grad.numpy(), [101.0, 101.0])


def test_the_same_hook_registered_twice_is_removed_by_its_own_handle():
    calls = []

    def hook(g):
        calls.append(1)

    x = pyrt.ones(2, requires_grad=True)
    first = x.register_hook(hook)
    x.register_hook(hook)
    first.remove()
    (x * 1).sum().backward()
    assert calls == [1]


def test_leaf_hooks_run_for_grad_and_shape_changes_are_errors():
    x = pyrt.tensor([1.0, 2.0], requires_grad=True)
    x.register_hook(lambda g: g * 10)
    (g,) = autograd.grad((x * x).sum(), x)
    np.testing.assert_array_equal(g.numpy(), [20.0, 40.0])
    assert x.grad is None
    a = pyrt.ones(2, requires_grad=True)
    a.register_hook(lambda g: pyrt.ones(3))
    with pytest.raises(RuntimeError, match="has changed the size of value"):
        (a * 2).sum().backward()


def test_hooks_on_one_leaf_leave_other_graphs_and_leaves_as_they_were():
    hooked = pyrt.ones(2, requires_grad=True)
    hooked.register_hook(lambda g: g * 0)
    x = pyrt.tensor([1.0, 2.0], requires_grad=True)
    w = pyrt.tensor([3.0, 4.0], requires_grad=True)
    loss = (x * w).sum() + (hooked * x).sum()
    loss.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [4.0, 5.0])
    np.testing.assert_array_equal(w.grad.numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(hooked.grad.numpy(), [0.0, 0.0])


def test_register_hook_errors():
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        pyrt.ones(2).register_hook(print)
    with pytest.raises(TypeError, match="callable"):
        pyrt.ones(2, requires_grad=True).register_hook(3)
