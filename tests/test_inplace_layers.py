"""inplace=True of the activations and dropouts, functional and modules, and the in-place
forms F.relu_ and the like. Where autograd records nothing of the input, the result is written
into it and the input returned, as PyTorch does; where it records the input's history, the op
is recorded in place, with the out-of-place op's values and gradients (checked against
PyTorch's in-place ops where installed)."""

import numpy as np
import pytest

import pyrt
import pyrt.nn as nn
import pyrt.nn.functional as F

try:
    import torch
except ImportError:
    torch = None

F32 = np.float32

# (name, call with inplace as given, needs the seed): every functional op with inplace
OPS = [
    ("relu", lambda x, i: F.relu(x, i)),
    ("leaky_relu", lambda x, i: F.leaky_relu(x, 0.2, i)),
    ("hardtanh", lambda x, i: F.hardtanh(x, -0.5, 0.5, i)),
    ("elu", lambda x, i: F.elu(x, 0.7, i)),
    ("silu", lambda x, i: F.silu(x, i)),
    ("relu6", lambda x, i: F.relu6(x, i)),
    ("hardsigmoid", lambda x, i: F.hardsigmoid(x, i)),
    ("hardswish", lambda x, i: F.hardswish(x, i)),
    ("threshold", lambda x, i: F.threshold(x, 0.1, -2.0, i)),
    ("selu", lambda x, i: F.selu(x, i)),
    ("celu", lambda x, i: F.celu(x, 0.5, i)),
    ("mish", lambda x, i: F.mish(x, i)),
    ("rrelu", lambda x, i: F.rrelu(x, 0.1, 0.3, True, i)),
    ("dropout", lambda x, i: F.dropout(x, 0.4, True, i)),
    ("dropout1d", lambda x, i: F.dropout1d(x, 0.4, True, i)),
    ("dropout1d unbatched", lambda x, i: F.dropout1d(x, 0.4, True, i)),
    ("dropout2d", lambda x, i: F.dropout2d(x, 0.4, True, i)),
    ("dropout3d", lambda x, i: F.dropout3d(x, 0.4, True, i)),
    ("alpha_dropout", lambda x, i: F.alpha_dropout(x, 0.4, True, i)),
    ("feature_alpha_dropout", lambda x, i: F.feature_alpha_dropout(x, 0.4, True, i)),
]


def data(seed=0, shape=(2, 3, 4, 5)):
    return (np.random.default_rng(seed).standard_normal(shape) * 2).astype(F32)


def input_for(name, seed):
    """Most ops take [2, 3, 4, 5]; dropout1d [2, 3, 20], or [3, 20] unbatched."""
    shape = {"dropout1d": (2, 3, 20), "dropout1d unbatched": (3, 20)}.get(name, (2, 3, 4, 5))
    return data(seed, shape)


def out_of_place(op, x):
    pyrt.manual_seed(3)
    return op(pyrt.tensor(x), False).numpy()


@pytest.mark.parametrize("name,op", OPS, ids=[n for n, _ in OPS])
def test_written_into_an_input_without_history(name, op):
    x = input_for(name, 0)
    want = out_of_place(op, x)
    t = pyrt.tensor(x)
    pyrt.manual_seed(3)  # the same draws as the out-of-place call
    y = op(t, True)
    assert y is t
    np.testing.assert_array_equal(t.numpy(), want)
    # under no_grad, a tensor that requires grad is written too
    t = pyrt.tensor(x, requires_grad=True)
    with pyrt.no_grad():
        pyrt.manual_seed(3)
        assert op(t, True) is t
    np.testing.assert_array_equal(t.detach().numpy(), want)


@pytest.mark.parametrize("name,op", OPS, ids=[n for n, _ in OPS])
def test_with_history_recorded_as_an_in_place_op(name, op):
    """On a tensor with history the op is recorded in place, as PyTorch records it: the
    tensor itself holds the result, and gradients are the out-of-place op's. On one that a
    recorded op has already read, the result is a new tensor and the input keeps its
    values, so that the earlier op's gradient stays right."""
    x = input_for(name, 1)
    g = input_for(name, 2)
    grads, values = [], []
    for inplace in (False, True):
        leaf = pyrt.tensor(x, requires_grad=True)
        hidden = leaf * 1.5  # a tensor with history
        pyrt.manual_seed(3)
        y = op(hidden, inplace)
        assert (y is hidden) == inplace
        y.backward(pyrt.tensor(g))
        values.append(y.detach().numpy())
        grads.append(leaf.grad.numpy())
    np.testing.assert_array_equal(values[1], values[0])
    np.testing.assert_array_equal(grads[1], grads[0])
    leaf = pyrt.tensor(x, requires_grad=True)
    hidden = leaf * 1.5
    earlier = hidden * 2.0  # reads hidden
    pyrt.manual_seed(3)
    y = op(hidden, True)
    assert y is not hidden
    np.testing.assert_array_equal(hidden.detach().numpy(), x * F32(1.5))
    np.testing.assert_array_equal(y.detach().numpy(), values[0])
    (earlier.sum() + (y * pyrt.tensor(g)).sum()).backward()
    np.testing.assert_allclose(leaf.grad.numpy(), grads[0] + 3.0, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name,op", OPS[:13], ids=[n for n, _ in OPS[:13]])
def test_against_torch_in_place_ops_in_a_graph(name, op):
    """The deterministic activations: pyrt's result and gradient equal torch's in-place
    op's."""
    if torch is None:
        pytest.skip("torch is not installed")
    if name == "rrelu":
        pytest.skip("its slopes are drawn from each library's own generator")
    tf = {"relu": lambda x: torch.nn.functional.relu(x, True),
          "leaky_relu": lambda x: torch.nn.functional.leaky_relu(x, 0.2, True),
          "hardtanh": lambda x: torch.nn.functional.hardtanh(x, -0.5, 0.5, True),
          "elu": lambda x: torch.nn.functional.elu(x, 0.7, True),
          "silu": lambda x: torch.nn.functional.silu(x, True),
          "relu6": lambda x: torch.nn.functional.relu6(x, True),
          "hardsigmoid": lambda x: torch.nn.functional.hardsigmoid(x, True),
          "hardswish": lambda x: torch.nn.functional.hardswish(x, True),
          "threshold": lambda x: torch.nn.functional.threshold(x, 0.1, -2.0, True),
          "selu": lambda x: torch.nn.functional.selu(x, True),
          "celu": lambda x: torch.nn.functional.celu(x, 0.5, True),
          "mish": lambda x: torch.nn.functional.mish(x, True)}[name]
    x, g = data(4), data(5)
    leaf = pyrt.tensor(x, requires_grad=True)
    y = op(leaf * 1.0, True)
    y.backward(pyrt.tensor(g))
    tleaf = torch.tensor(x, requires_grad=True)
    ty = tf(tleaf * 1.0)
    ty.backward(torch.tensor(g))
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(leaf.grad.numpy(), tleaf.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_a_leaf_that_requires_grad_is_refused_as_in_pytorch():
    leaf = pyrt.tensor(data(), requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used "
                                           "in an in-place operation"):
        F.relu(leaf, inplace=True)
    with pytest.raises(RuntimeError, match="a leaf Variable"):
        nn.Dropout(0.5, inplace=True)(leaf)


def test_a_write_under_a_saved_input_stops_its_backward():
    """An input an op saved for its backward, then written in place: backward refuses, as
    PyTorch's version counters make it."""
    w = pyrt.tensor(data(6), requires_grad=True)
    x = pyrt.tensor(data(7))
    y = w * x  # saves x for w's gradient
    F.relu(x, inplace=True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_dropout_evaluating_leaves_the_input_alone():
    """Not training, dropout returns its input without writing it, so that nothing saved
    from it is stopped."""
    w = pyrt.tensor(data(6), requires_grad=True)
    x = pyrt.tensor(data(7))
    y = w * x
    assert F.dropout(x, 0.5, training=False, inplace=True) is x
    m = nn.Dropout(0.5, inplace=True).eval()
    assert m(x) is x
    y.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), x.numpy())


def test_modules_with_inplace_train_as_without_and_print_as_torch():
    """A network built with inplace layers (as many PyTorch models are) trains to the same
    weights as without them, and its inference writes the intermediate results in place."""
    def net(inplace):
        pyrt.manual_seed(0)
        return nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.ReLU(inplace=inplace),
                             nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16, 8),
                             nn.LeakyReLU(0.1, inplace=inplace), nn.Dropout(0.2, inplace),
                             nn.Linear(8, 3), nn.Hardtanh(-2.0, 2.0, inplace=inplace))

    x = pyrt.tensor(data(8, (6, 2, 4, 4)))
    labels = np.array([0, 1, 2, 0, 1, 2])
    weights = []
    for inplace in (False, True):
        model = net(inplace)
        opt = pyrt.optim.SGD(model.parameters(), lr=0.1)
        pyrt.manual_seed(1)
        for _ in range(3):
            opt.zero_grad()
            F.cross_entropy(model(x), labels).backward()
            opt.step()
        weights.append([p.detach().numpy().copy() for p in model.parameters()])
        model.eval()
        with pyrt.no_grad():
            out = model(x)
        assert out.shape == (6, 3)
    for a, b in zip(*weights):
        np.testing.assert_array_equal(a, b)
    relu = nn.ReLU(inplace=True)
    hidden = pyrt.tensor(data(9))
    assert relu(hidden) is hidden and hidden.numpy().min() >= 0
    layers = [nn.ReLU(inplace=True), nn.LeakyReLU(0.1, inplace=True), nn.ELU(inplace=True),
              nn.Hardtanh(inplace=True), nn.ReLU6(inplace=True), nn.SiLU(inplace=True),
              nn.SELU(inplace=True), nn.CELU(inplace=True), nn.Mish(inplace=True),
              nn.Hardswish(inplace=True), nn.Hardsigmoid(inplace=True),
              nn.Threshold(0.1, 20.0, inplace=True), nn.RReLU(inplace=True),
              nn.Dropout(inplace=True), nn.Dropout2d(inplace=True),
              nn.AlphaDropout(inplace=True), nn.ReLU(), nn.LeakyReLU(0.1)]
    if torch is not None:
        for layer in layers:
            theirs = getattr(torch.nn, type(layer).__name__)
            args = {"Threshold": (0.1, 20.0), "LeakyReLU": (0.1,)}.get(type(layer).__name__, ())
            assert repr(layer) == repr(theirs(*args, inplace=layer.inplace)), repr(layer)
    assert repr(nn.ReLU(inplace=True)) == "ReLU(inplace=True)"
    assert repr(nn.LeakyReLU(0.1, inplace=True)) == "LeakyReLU(negative_slope=0.1, inplace=True)"


UNDERSCORED = [("relu_", ()), ("elu_", (0.7,)), ("leaky_relu_", (0.2,)),
               ("hardtanh_", (-0.5, 0.5)), ("selu_", ()), ("celu_", (0.5,)),
               ("rrelu_", (0.1, 0.3, False)), ("threshold_", (0.1, -2.0))]


@pytest.mark.parametrize("name,args", UNDERSCORED, ids=[n for n, _ in UNDERSCORED])
def test_the_underscored_forms_write_in_place(name, args):
    """F.relu_ and the like, as Tensor.relu_: written into the input (against the op's
    out-of-place result, and torch's); recorded in a graph, refused on a tensor a recorded op
    has read."""
    x = data(10)
    t = pyrt.tensor(x)
    assert getattr(F, name)(t, *args) is t
    np.testing.assert_array_equal(t.numpy(), getattr(F, name[:-1])(pyrt.tensor(x), *args).numpy())
    if torch is not None:
        tt = torch.tensor(x)
        getattr(torch.nn.functional, name)(tt, *args)
        np.testing.assert_allclose(t.numpy(), tt.numpy(), rtol=1e-6, atol=1e-6)
    leaf = pyrt.tensor(x, requires_grad=True)
    hidden = leaf * 1.0
    assert getattr(F, name)(hidden, *args) is hidden
    np.testing.assert_array_equal(hidden.detach().numpy(), t.numpy())
    hidden.sum().backward()
    assert leaf.grad is not None
    hidden = pyrt.tensor(x, requires_grad=True) * 1.0
    hidden.exp()
    with pytest.raises(RuntimeError, match="already read is not supported"):
        getattr(F, name)(hidden, *args)
    with pytest.raises(TypeError, match="input must be a Tensor"):
        getattr(F, name)(x, *args)
