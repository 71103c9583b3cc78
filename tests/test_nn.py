"""pyrt.nn: Module bookkeeping (registration order, names, state_dict, train/eval, repr,
zero_grad), every layer and loss against NumPy and, where PyTorch is installed, against
torch.nn with the same weights (outputs and gradients), PyTorch's initialisation bounds, and
whole models (MLP, CNN) trained side by side with torch."""

import copy
import math
import pickle
import re
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
import pyrt.functional as F
from pyrt import cuda, nn, optim

F32 = np.float32
THREADS = [1, 2, 4]


def rng(seed):
    return np.random.default_rng(seed)


def assert_close(got, ref, rtol=1e-5, what=""):
    """Equal to `rtol` relative to the largest magnitude of the reference: float32 sums of
    hundreds of terms in a different order differ by a few units in the last place of the
    terms, not of a result that happens to be near zero."""
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    assert got.shape == ref.shape, what
    scale = max(float(np.max(np.abs(ref), initial=0.0)), 1e-30)
    err = float(np.max(np.abs(got - ref), initial=0.0))
    assert err <= rtol * scale, f"{what}: max error {err:.3g} > {rtol} * {scale:.3g}"


def to_torch(array, requires_grad=False):
    torch = pytest.importorskip("torch")
    return torch.tensor(np.asarray(array), requires_grad=requires_grad)


def copy_to_torch(module, torch_module):
    """Load `module`'s weights into a torch module with the same structure and names."""
    torch = pytest.importorskip("torch")
    torch_module.load_state_dict({k: torch.from_numpy(v.numpy())
                                  for k, v in module.state_dict().items()})


# ---- Parameter -------------------------------------------------------------------------------


def test_parameter_is_a_leaf_tensor_that_requires_grad():
    p = nn.Parameter(np.arange(6, dtype=np.float64).reshape(2, 3))
    assert isinstance(p, pyrt.Tensor)
    assert p.requires_grad and p.is_leaf
    assert p.dtype == F32 and p._data.flags.c_contiguous
    assert not nn.Parameter(pyrt.zeros(2), requires_grad=False).requires_grad
    assert repr(nn.Parameter([1.0])).startswith("Parameter containing:\ntensor(")
    shared = np.zeros(3, F32)
    assert nn.Parameter(shared)._data is shared
    assert type(p * 2.0) is pyrt.Tensor  # results of ops are plain tensors


# ---- Module bookkeeping ----------------------------------------------------------------------


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(np.ones(4, F32))
        self.fc = nn.Linear(4, 3)
        self.act = nn.Tanh()
        self.offset = nn.Parameter(np.zeros(3, F32))

    def forward(self, x):
        return self.act(self.fc(x * self.scale)) + self.offset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()
        self.head = nn.Sequential(nn.Linear(3, 5), nn.ReLU(), nn.Linear(5, 2))
        self.temperature = nn.Parameter(np.ones(1, F32))

    def forward(self, x):
        return self.head(self.block(x)) * self.temperature


NET_NAMES = ["block.scale", "block.offset", "block.fc.weight", "block.fc.bias",
             "head.0.weight", "head.0.bias", "head.2.weight", "head.2.bias", "temperature"]


def test_parameters_come_in_registration_order_with_dotted_names():
    net = Net()
    # a module's own parameters first, then its children's (PyTorch's order)
    names = [name for name, _ in net.named_parameters()]
    assert names == ["temperature"] + NET_NAMES[:-1]
    params = list(net.parameters())
    assert [id(p) for p in params] == [id(p) for _, p in net.named_parameters()]
    assert params[0] is net.temperature and params[3] is net.block.fc.weight
    assert [n for n, _ in net.named_parameters(recurse=False)] == ["temperature"]
    assert [n for n, _ in nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 1))
            .named_parameters()] == ["0.weight", "0.bias", "2.weight", "2.bias"]


def test_parameters_order_matches_torch():
    torch = pytest.importorskip("torch")

    class TorchBlock(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = torch.nn.Parameter(torch.ones(4))
            self.fc = torch.nn.Linear(4, 3)
            self.act = torch.nn.Tanh()
            self.offset = torch.nn.Parameter(torch.zeros(3))

    class TorchNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.block = TorchBlock()
            self.head = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.ReLU(),
                                            torch.nn.Linear(5, 2))
            self.temperature = torch.nn.Parameter(torch.ones(1))

    ours, theirs = Net(), TorchNet()
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    assert [n for n, _ in ours.named_children()] == [n for n, _ in theirs.named_children()]


def test_children_and_modules():
    net = Net()
    assert [name for name, _ in net.named_children()] == ["block", "head"]
    assert list(net.children()) == [net.block, net.head]
    names = [name for name, _ in net.named_modules()]
    assert names == ["", "block", "block.fc", "block.act", "head", "head.0", "head.1",
                     "head.2"]
    assert next(net.modules()) is net
    visited = []
    assert net.apply(lambda m: visited.append(type(m).__name__)) is net
    assert visited[-1] == "Net" and visited.count("Linear") == 3


def test_shared_parameters_and_modules_come_once():
    shared = nn.Linear(3, 3)
    model = nn.Sequential(shared, nn.ReLU(), shared)
    assert len(list(model.parameters())) == 2
    assert len(list(model.modules())) == 3  # the Sequential, the Linear once, the ReLU
    assert list(model.state_dict()) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    model.load_state_dict(model.state_dict())


def test_setattr_registers_replaces_and_deletes():
    m = nn.Module()
    m.w = nn.Parameter(np.zeros(2, F32))
    m.child = nn.Linear(2, 2)
    m.plain = 3
    assert list(m._parameters) == ["w"] and list(m._modules) == ["child"]
    assert "w" not in m.__dict__ and m.plain == 3
    m.w = nn.Parameter(np.ones(2, F32))  # replacing keeps the position
    assert np.all(m.w._data == 1)
    with pytest.raises(TypeError, match="cannot assign 'Tensor' as parameter 'w'"):
        m.w = pyrt.ones(2)
    m.w = None
    assert m.w is None and next(m.parameters()) is m.child.weight
    with pytest.raises(TypeError, match="as child module 'child'"):
        m.child = 5
    del m.child
    assert not hasattr(m, "child")
    with pytest.raises(AttributeError, match="'Module' object has no attribute 'nothing'"):
        _ = m.nothing


def test_assigning_before_init_is_an_error():
    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(np.zeros(1, F32))

    with pytest.raises(AttributeError, match=re.escape("before Module.__init__() call")):
        Early()


def test_register_parameter_and_add_module_check_arguments():
    m = nn.Module()
    with pytest.raises(TypeError, match="parameter 'x'"):
        m.register_parameter("x", np.zeros(2, F32))
    with pytest.raises(KeyError, match="empty or contain"):
        m.register_parameter("a.b", None)
    with pytest.raises(KeyError, match="already exists"):
        m.add_module("forward", nn.ReLU())
    with pytest.raises(TypeError, match="is not a Module subclass"):
        m.add_module("x", 3)


def _with_buffers(lib):
    """A module of `lib` (pyrt.nn or torch.nn) with a persistent buffer, a parameter, a child
    with its own buffer and a non-persistent buffer, built in the same order in both."""
    def tensor(values):
        return (pyrt.tensor(values) if lib is nn else
                pytest.importorskip("torch").tensor(values))

    class Scaled(lib.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("scale", tensor([2.0, 3.0]))
            self.fc = lib.Linear(2, 2)
            self.register_buffer("steps", tensor(0))
            self.register_buffer("mask", tensor([1.0, 0.0]), persistent=False)

        def forward(self, x):
            return self.fc(x * self.scale) * self.mask

    outer = lib.Sequential(Scaled(), lib.ReLU())
    outer[0].fc.register_buffer("offset", tensor([0.5, -0.5]))
    return outer


def test_buffers_are_state_but_not_parameters():
    m = _with_buffers(nn)
    inner = m[0]
    assert [n for n, _ in m.named_buffers()] == ["0.scale", "0.steps", "0.mask",
                                                 "0.fc.offset"]
    assert [n for n, _ in m.named_parameters()] == ["0.fc.weight", "0.fc.bias"]
    assert len(list(m.buffers(recurse=False))) == 0 and len(list(inner.buffers())) == 4
    assert isinstance(inner.scale, pyrt.Tensor) and "scale" in dir(inner)
    # saved: parameters, then persistent buffers, module by module, as torch orders them
    keys = list(m.state_dict())
    assert keys == ["0.scale", "0.steps", "0.fc.weight", "0.fc.bias", "0.fc.offset"]
    torch = pytest.importorskip("torch")
    assert keys == list(_with_buffers(torch.nn).state_dict())
    assert m.state_dict()["0.steps"].dtype == np.int64
    # assignment replaces a buffer; a non-tensor is refused
    inner.scale = pyrt.tensor([4.0, 5.0])
    assert np.array_equal(m.state_dict()["0.scale"], [4.0, 5.0])
    with pytest.raises(TypeError, match="as buffer 'scale'"):
        inner.scale = np.ones(2, F32)
    inner.scale = None
    assert "0.scale" not in m.state_dict() and inner.scale is None
    del inner.steps
    assert not hasattr(inner, "steps") and "0.steps" not in m.state_dict()


def test_buffers_load_copy_and_pickle():
    torch = pytest.importorskip("torch")
    theirs = _with_buffers(torch.nn)
    with torch.no_grad():
        theirs[0].scale.copy_(torch.tensor([7.0, 8.0]))
        theirs[0].steps.fill_(5)
    ours = _with_buffers(nn)
    ours.load_state_dict(theirs.state_dict())
    assert np.array_equal(ours[0].scale._data, [7.0, 8.0]) and int(ours[0].steps.item()) == 5
    x = rng(4).standard_normal((3, 2)).astype(F32)
    assert_close(ours(pyrt.tensor(x))._data, theirs(torch.from_numpy(x)).detach().numpy())
    state = ours.state_dict()
    del state["0.fc.offset"]
    with pytest.raises(RuntimeError, match='Missing key.*"0.fc.offset"'):
        ours.load_state_dict(state)
    clone = copy.deepcopy(ours)
    assert np.array_equal(clone[0].scale._data, [7.0, 8.0])
    assert clone[0].scale is not ours[0].scale
    assert list(clone.state_dict()) == list(ours.state_dict())
    plain = nn.Sequential(nn.Linear(2, 2))
    plain[0].register_buffer("offset", pyrt.tensor([1.0, 2.0]))
    plain[0].register_buffer("mask", pyrt.tensor([1.0, 0.0]), persistent=False)
    clone = pickle.loads(pickle.dumps(plain))
    assert np.array_equal(clone[0].offset._data, [1.0, 2.0])
    assert list(clone.state_dict()) == ["0.weight", "0.bias", "0.offset"]
    assert ours.to("cpu")[0].scale.device == "cpu"


def test_register_buffer_checks_arguments():
    m = nn.Module()
    with pytest.raises(TypeError, match="buffer 'b'.*pyrt.Tensor or None"):
        m.register_buffer("b", np.zeros(2, F32))
    with pytest.raises(TypeError, match="use register_parameter"):
        m.register_buffer("b", nn.Parameter([1.0]))
    with pytest.raises(KeyError, match="empty or contain"):
        m.register_buffer("a.b", None)
    m.weight = nn.Parameter([1.0])
    with pytest.raises(KeyError, match="already exists"):
        m.register_buffer("weight", pyrt.zeros(1))
    m.register_buffer("b", None)
    assert m.b is None and list(m.buffers()) == [] and "b" not in m.state_dict()
    m.b = pyrt.ones(2)  # a buffer registered as None takes a tensor later
    assert list(m.state_dict()) == ["weight", "b"]
    with pytest.raises(AttributeError, match="before Module.__init__"):
        class Early(nn.Module):
            def __init__(self):
                self.register_buffer("x", None)
        Early()


@pytest.mark.parametrize("module", [
    nn.Linear(3, 2), nn.Conv2d(3, 4, 3), nn.MaxPool2d(2), nn.AvgPool2d(2), nn.Flatten(),
    nn.ReLU(), nn.Sigmoid(), nn.Tanh(), nn.CrossEntropyLoss(), nn.BCEWithLogitsLoss(),
    nn.MSELoss(), nn.BatchNorm2d(3)], ids=lambda m: type(m).__name__)
@pytest.mark.parametrize("bad", [None, 3, np.zeros((2, 3, 4, 4), F32)],
                         ids=["None", "int", "ndarray"])
def test_a_layer_called_on_something_else_than_a_tensor_says_so(module, bad):
    losses = (nn.CrossEntropyLoss, nn.BCEWithLogitsLoss, nn.MSELoss)
    args = (bad, pyrt.zeros(2)) if isinstance(module, losses) else (bad,)
    # (activations name the array the op got: "was a numpy.ndarray passed where a
    # pyrt.Tensor was expected?")
    with pytest.raises(TypeError, match=f"input must be a (pyrt )?Tensor, got "
                                        f"{type(bad).__name__}|pyrt.Tensor was expected"):
        module(*args)


def test_a_users_module_keeps_its_own_attribute_errors():
    class Broken(nn.Module):
        def forward(self, x):
            return x.no_such_attribute

    with pytest.raises(AttributeError, match="no_such_attribute"):
        Broken()(None)
    with pytest.raises(AttributeError, match="no_such_attribute"):
        nn.Sequential(Broken())(None)


def test_forward_must_be_defined():
    with pytest.raises(NotImplementedError, match=r'Module \[Module\] is missing the '
                                                  r'required "forward" function'):
        nn.Module()(pyrt.zeros(1))


def test_train_and_eval_reach_every_module():
    net = Net()
    assert net.training and all(m.training for m in net.modules())
    assert net.eval() is net
    assert not any(m.training for m in net.modules())
    net.block.train()
    assert net.block.fc.training and not net.head.training
    assert net.train(True) is net and all(m.training for m in net.modules())
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        net.train("no")


def test_zero_grad():
    net = Net()
    x = pyrt.tensor(rng(0).standard_normal((5, 4)))
    net(x).sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    net.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not p.grad._data.any() for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())
    net.zero_grad()  # no gradients: nothing to do


def test_to_device():
    net = Net()
    assert net.to("cpu") is net and net.cpu() is net
    if not cuda.is_available():
        with pytest.raises(RuntimeError, match="'cuda' is not available"):
            net.to("cuda")
    with pytest.raises(ValueError, match="device must be 'cpu' or 'cuda'"):
        net.to("tpu")


# ---- state_dict ------------------------------------------------------------------------------


def test_state_dict_shares_memory_and_round_trips():
    pyrt.manual_seed(1)
    net = Net()
    state = net.state_dict()
    assert list(state) == ["temperature"] + NET_NAMES[:-1]
    assert all(type(v) is pyrt.Tensor and v.dtype == pyrt.float32 and not v.requires_grad
               for v in state.values())
    net.block.fc.weight._data += 1  # as torch's: the state dict's tensors follow the model
    assert np.array_equal(state["block.fc.weight"]._data, net.block.fc.weight._data)
    state = {k: v.clone() for k, v in state.items()}

    other = Net()
    weight = other.block.fc.weight
    result = other.load_state_dict(pickle.loads(pickle.dumps(state)))
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert other.block.fc.weight is weight  # loaded in place: optimizers keep their params
    for (name, a), b in zip(other.state_dict().items(), state.values()):
        assert np.array_equal(a, b), name
    x = pyrt.tensor(rng(2).standard_normal((3, 4)))
    net.load_state_dict(state)
    assert np.array_equal(net(x)._data, other(x)._data)


def test_modules_copy_and_pickle():
    net = Net()
    for other in (copy.deepcopy(net), pickle.loads(pickle.dumps(net))):
        assert repr(other) == repr(net)
        for (name, a), (_, b) in zip(other.named_parameters(), net.named_parameters()):
            assert type(a) is nn.Parameter and a._data is not b._data, name
            assert np.array_equal(a._data, b._data), name


@pytest.mark.parametrize("make_opt", [lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9),
                                      lambda ps: optim.Adam(ps, lr=0.01)],
                         ids=["SGD", "Adam"])
def test_models_and_optimizers_copy_and_pickle_after_training(make_opt):
    # after steps, a Sequential holds its fused plan and an optimizer its kernel pointers:
    # a copy rebuilds them and trains on as the original does
    pyrt.manual_seed(7)
    net = nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 2))
    opt = make_opt(net.parameters())
    x = pyrt.tensor(rng(7).standard_normal((6, 3)).astype(F32))

    def step(model, optimizer):
        optimizer.zero_grad()
        model(x).sum().backward()
        optimizer.step()

    for _ in range(2):
        step(net, opt)
    for copier in (copy.deepcopy, lambda o: pickle.loads(pickle.dumps(o))):
        net2, opt2 = copier((net, opt))  # together, as a checkpoint holds them
        assert opt2.param_groups[0]["params"][0] is net2[0].weight
        before = net2[0].weight._data.copy()
        step(net2, opt2)
        step(net, opt)
        assert not np.array_equal(net2[0].weight._data, before)  # it trained on
        for a, b in zip(net2.parameters(), net.parameters()):
            assert a._data is not b._data and np.array_equal(a._data, b._data)


def test_load_state_dict_accepts_tensors_and_other_dtypes():
    lin = nn.Linear(2, 2)
    lin.load_state_dict({"weight": pyrt.tensor([[1.0, 2.0], [3.0, 4.0]]),
                         "bias": np.array([5, 6], np.int64)})
    assert lin.weight._data.tolist() == [[1, 2], [3, 4]] and lin.bias._data.tolist() == [5, 6]
    assert lin.bias.dtype == F32


def test_load_state_dict_errors_like_torch():
    net = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    before = net.state_dict()
    bad = dict(before)
    del bad["2.bias"]
    bad["3.weight"] = np.zeros(2, F32)
    bad["0.weight"] = np.zeros((3, 5), F32)
    bad["0.bias"] = np.ones(3, F32)  # valid, but nothing is copied when there is an error
    expected = ('Error(s) in loading state_dict for Sequential:\n\t'
                'Missing key(s) in state_dict: "2.bias". \n\t'
                'Unexpected key(s) in state_dict: "3.weight". \n\t'
                'size mismatch for 0.weight: copying a param with shape (3, 5) from '
                'checkpoint, the shape in current model is (3, 4).')
    with pytest.raises(RuntimeError) as info:
        net.load_state_dict(bad)
    assert str(info.value) == expected
    assert all(np.array_equal(a, b) for a, b in zip(net.state_dict().values(),
                                                     before.values()))

    del bad["0.weight"]
    result = net.load_state_dict(bad, strict=False)
    assert result.missing_keys == ["0.weight", "2.bias"]
    assert result.unexpected_keys == ["3.weight"]
    assert np.all(net[0].bias._data == 1)

    with pytest.raises(RuntimeError, match="size mismatch for 0.bias"):
        net.load_state_dict({"0.bias": np.zeros(4, F32)}, strict=False)
    with pytest.raises(RuntimeError, match='parameter named "0.bias"'):
        net.load_state_dict({"0.bias": np.array(["a", "b", "c"])}, strict=False)
    with pytest.raises(TypeError, match="dict-like"):
        net.load_state_dict([1, 2])


def test_load_state_dict_messages_match_torch():
    torch = pytest.importorskip("torch")
    bad = {"0.weight": np.zeros((3, 5), F32), "0.bias": np.zeros(3, F32),
           "9.bias": np.zeros(1, F32)}
    with pytest.raises(RuntimeError) as ours:
        nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 2)).load_state_dict(bad)
    with pytest.raises(RuntimeError) as theirs:
        torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(),
                            torch.nn.Linear(3, 2)).load_state_dict(
            {k: torch.from_numpy(v) for k, v in bad.items()})
    # the same text but for how a shape prints: (3, 5) here, torch.Size([3, 5]) there
    theirs = re.sub(r"torch\.Size\(\[([^\]]*)\]\)", r"(\1)", str(theirs.value))
    assert str(ours.value) == theirs


def test_load_torch_state_dict():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    theirs = torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.Sigmoid())
    ours = nn.Sequential(nn.Linear(5, 4), nn.Sigmoid())
    ours.load_state_dict(theirs.state_dict())
    x = rng(3).standard_normal((2, 5)).astype(F32)
    assert_close(ours(pyrt.tensor(x))._data, theirs(torch.from_numpy(x)).detach().numpy())


# ---- repr ------------------------------------------------------------------------------------

CNN_REPR = """\
Sequential(
  (0): Conv2d(1, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))
  (1): ReLU()
  (2): MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)
  (3): Conv2d(8, 16, kernel_size=(3, 3), stride=(2, 2), bias=False)
  (4): Sequential(
    (0): Flatten(start_dim=1, end_dim=-1)
    (1): Linear(in_features=64, out_features=10, bias=True)
  )
)"""


def test_repr_is_nested_like_torch():
    model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(8, 16, 3, stride=2, bias=False),
                          nn.Sequential(nn.Flatten(), nn.Linear(64, 10)))
    assert repr(model) == CNN_REPR
    assert repr(nn.Linear(3, 2, bias=False)) == "Linear(in_features=3, out_features=2, bias=False)"
    assert repr(nn.AvgPool2d(3, 1, 1)) == "AvgPool2d(kernel_size=3, stride=1, padding=1)"
    assert repr(nn.Tanh()) == "Tanh()" and repr(nn.MSELoss()) == "MSELoss()"

    class Custom(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(2, 2)

        def extra_repr(self):
            return "first\nsecond"

    assert repr(Custom()) == ("Custom(\n  first\n  second\n"
                              "  (fc): Linear(in_features=2, out_features=2, bias=True)\n)")


def test_repr_matches_torch():
    torch = pytest.importorskip("torch")
    tnn = torch.nn
    ours = nn.Sequential(nn.Conv2d(3, 4, (3, 5), padding=(1, 2)), nn.ReLU(), nn.Flatten(),
                         nn.Sequential(nn.Linear(10, 5), nn.Sigmoid()), nn.Tanh(),
                         nn.Linear(5, 1, bias=False), nn.CrossEntropyLoss())
    theirs = tnn.Sequential(tnn.Conv2d(3, 4, (3, 5), padding=(1, 2)), tnn.ReLU(), tnn.Flatten(),
                            tnn.Sequential(tnn.Linear(10, 5), tnn.Sigmoid()), tnn.Tanh(),
                            tnn.Linear(5, 1, bias=False), tnn.CrossEntropyLoss())
    assert repr(ours) == repr(theirs)
    for ours, theirs in ((nn.MaxPool2d(3, 2, 1), tnn.MaxPool2d(3, 2, 1)),
                         (nn.AvgPool2d(2), tnn.AvgPool2d(2))):
        assert repr(ours) == repr(theirs)


def test_a_forward_set_on_an_instance_is_called_inside_sequential():
    # Sequential fuses exact Linear and activation layers into kernels: one whose forward was
    # replaced (a wrapped layer) must run through that forward, before or after a first call
    x = pyrt.tensor(np.ones((2, 4), np.float32))
    for patched in (0, 1, 2):
        seq = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
        plain = seq(x).detach().numpy().copy()
        calls = []
        original = seq[patched].forward

        def wrapped(*args, _original=original, _calls=calls, **kwargs):
            _calls.append(1)
            return _original(*args, **kwargs) * 2

        seq[patched].forward = wrapped
        out = seq(x).detach().numpy()
        assert calls, f"the forward of module {patched} was not called"
        assert not np.array_equal(out, plain)
        del seq[patched].forward
        np.testing.assert_array_equal(seq(x).detach().numpy(), plain)


def test_sequential_of_a_non_tensor_is_a_type_error():
    for bad in ([[1.0, 2.0]], None, np.ones((1, 2), np.float32)):
        with pytest.raises(TypeError, match="input must be a (pyrt )?Tensor"):
            nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 1))(bad)


def test_flatten_and_a_cnn_take_an_empty_batch():
    x = pyrt.tensor(np.zeros((0, 1, 4, 4), np.float32))
    assert nn.Flatten()(pyrt.tensor(np.zeros((0, 3, 4), np.float32))).shape == (0, 12)
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(2, 3))
    assert model(x).shape == (0, 3)


def test_a_name_in_use_is_not_taken_over():
    m = nn.Module()
    m.plain = 5
    m.child = nn.ReLU()
    m.weight = nn.Parameter(np.ones(2, np.float32))
    for register, name in ((m.register_parameter, "plain"), (m.add_module, "plain"),
                           (m.register_parameter, "child"), (m.add_module, "weight")):
        with pytest.raises(KeyError, match=f"attribute '{name}' already exists"):
            register(name, None)
    assert m.plain == 5 and isinstance(m.child, nn.ReLU) and m.weight is not None
    m.register_parameter("weight", None)  # its own kind: replaced, as in PyTorch
    m.add_module("child", nn.Tanh())
    assert m.weight is None and isinstance(m.child, nn.Tanh)
    assert {"weight", "child"} <= set(dir(m))


# ---- Sequential ------------------------------------------------------------------------------


def test_sequential_container():
    a, b, c = nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1)
    seq = nn.Sequential(a, b, c)
    assert len(seq) == 3 and list(seq) == [a, b, c]
    assert seq[0] is a and seq[-1] is c
    head = seq[1:]
    assert isinstance(head, nn.Sequential) and list(head) == [b, c]
    assert [n for n, _ in head.named_children()] == ["1", "2"]
    d = nn.Tanh()
    seq[1] = d
    assert list(seq) == [a, d, c] and list(seq._modules) == ["0", "1", "2"]
    del seq[0]
    assert list(seq) == [d, c] and list(seq._modules) == ["0", "1"]
    assert seq.append(nn.Sigmoid()) is seq and len(seq) == 3
    with pytest.raises(IndexError, match="out of range"):
        seq[3]
    with pytest.raises(TypeError, match="integers or slices"):
        seq["0"]
    from collections import OrderedDict
    named = nn.Sequential(OrderedDict([("fc", nn.Linear(2, 2)), ("act", nn.ReLU())]))
    assert [n for n, _ in named.named_parameters()] == ["fc.weight", "fc.bias"]
    assert named.fc is named[0]


@pytest.mark.parametrize("act", [nn.ReLU, nn.Sigmoid, nn.Tanh])
def test_sequential_fuses_linear_and_activation(act, monkeypatch):
    pyrt.manual_seed(4)
    model = nn.Sequential(nn.Linear(6, 5), act(), nn.Linear(5, 3), act())
    x = pyrt.tensor(rng(4).standard_normal((7, 6)), requires_grad=True)
    g = rng(5).standard_normal((7, 3)).astype(F32)

    # unfused: each module in turn
    y_ref = x
    for module in model:
        y_ref = module(y_ref)
    y_ref.backward(g)
    ref_grads = [p.grad._data.copy() for p in model.parameters()] + [x.grad._data.copy()]
    model.zero_grad()
    x.grad = None

    # fused: the activation modules are never called
    calls = []
    name = act.__name__.lower()
    real = getattr(F, name)
    monkeypatch.setattr(F, name, lambda t: calls.append(1) or real(t))
    y = model(x)
    assert calls == []
    assert np.array_equal(y._data, y_ref._data)
    y.backward(g)
    grads = [p.grad._data for p in model.parameters()] + [x.grad._data]
    for a, b in zip(grads, ref_grads):
        assert np.array_equal(a, b)

    # a Linear not followed by an activation, or a subclass, is left alone
    class MyLinear(nn.Linear):
        pass

    nn.Sequential(MyLinear(6, 3), act())(x)
    assert calls == [1]


def _conv_relu_pool_input(r, shape, kind):
    """Inputs that stress the order of ReLU and max pooling: windows all negative, ties of
    zeros and positives, NaN, infinities."""
    x = r.standard_normal(shape).astype(F32)
    if kind == "rounded":  # many exact ties, zeros among them
        x = np.round(x).astype(F32)
    elif kind == "specials":
        flat = x.reshape(-1)
        picks = r.choice(flat.size, size=max(1, flat.size // 10), replace=False)
        flat[picks] = r.choice(np.array([np.nan, np.inf, -np.inf, 0.0, -0.0], F32), picks.size)
    elif kind == "negative":
        x = -np.abs(x)
    return x


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 3), c=st.integers(1, 3), h=st.integers(3, 9), w=st.integers(3, 9),
       kernel=st.integers(2, 3), stride=st.sampled_from([None, 1, 2]), padding=st.integers(0, 1),
       ceil_mode=st.booleans(), kind=st.sampled_from(["normal", "rounded", "specials",
                                                      "negative"]),
       threads=st.sampled_from([1, 2, 4]), seed=st.integers(0, 2**16))
def test_sequential_pools_before_relu_with_the_same_values_and_gradients(
        n, c, h, w, kernel, stride, padding, ceil_mode, kind, threads, seed):
    r = rng(seed)
    pyrt.manual_seed(seed)
    conv = nn.Conv2d(c, 2, 3, padding=1)
    pool = nn.MaxPool2d(kernel, stride, padding=min(padding, kernel // 2), ceil_mode=ceil_mode)
    model = nn.Sequential(conv, nn.ReLU(), pool)
    x = _conv_relu_pool_input(r, (n, c, h, w), kind)
    with pyrt.num_threads(threads):
        # the modules in the order written
        xr = pyrt.tensor(x, requires_grad=True)
        y_ref = pool(F.relu(conv(xr)))
        g = r.standard_normal(y_ref.shape).astype(F32)
        y_ref.backward(g)
        ref = [xr.grad._data.copy(), conv.weight.grad._data.copy(), conv.bias.grad._data.copy()]
        conv.zero_grad()
        xs = pyrt.tensor(x, requires_grad=True)
        y = model(xs)
        y.backward(g)
    assert np.array_equal(y._data, y_ref._data, equal_nan=True)
    assert np.array_equal(np.signbit(y._data), np.signbit(y_ref._data))
    for a, b in zip([xs.grad._data, conv.weight.grad._data, conv.bias.grad._data], ref):
        assert np.array_equal(a, b, equal_nan=True)


def test_sequential_pools_with_the_relu_only_where_that_is_exact(monkeypatch):
    pyrt.manual_seed(0)
    x = pyrt.tensor(rng(1).standard_normal((2, 3, 8, 8)))
    seen = []
    real = F.relu
    monkeypatch.setattr(F, "relu", lambda t: seen.append(t.shape) or real(t))
    y = nn.Sequential(nn.ReLU(), nn.MaxPool2d(2))(x)
    assert seen == [] and y.shape == (2, 3, 4, 4)  # the pooling applied the ReLU
    # dilated windows (one may hold padding alone, -inf, which ReLU would make 0), returned
    # indices, and a pooling that is not a plain MaxPool2d keep the written order
    for pool in (nn.MaxPool2d(2, dilation=2), nn.MaxPool2d(2, return_indices=True),
                 nn.AvgPool2d(2)):
        seen.clear()
        nn.Sequential(nn.ReLU(), pool)(x)
        assert seen == [(2, 3, 8, 8)], pool
    # an option changed after the first call is seen by the next one
    pool = nn.MaxPool2d(2)
    model = nn.Sequential(nn.ReLU(), pool)
    model(x)
    pool.return_indices = True
    seen.clear()
    y, _ = model(x)
    assert seen == [(2, 3, 8, 8)] and y.shape == (2, 3, 4, 4)


# ---- layers against NumPy and torch ----------------------------------------------------------


def check_module_against_torch(ours, theirs, x, seed):
    """Forward and backward (with a random output gradient) of both modules from the same
    weights and input: outputs, input gradient and parameter gradients agree to 1e-5."""
    torch = pytest.importorskip("torch")
    copy_to_torch(ours, theirs)
    xt = to_torch(x, requires_grad=True)
    yt = theirs(xt)
    g = rng(seed).standard_normal(tuple(yt.shape)).astype(F32)
    yt.backward(torch.from_numpy(g))
    xp = pyrt.tensor(x, requires_grad=True)
    y = ours(xp)
    y.backward(g)
    assert_close(y._data, yt.detach().numpy(), what="output")
    assert_close(xp.grad._data, xt.grad.numpy(), what="input grad")
    for (name, p), (tname, tp) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert name == tname
        assert_close(p.grad._data, tp.grad.numpy(), what=f"{name} grad")


@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 9), fin=st.integers(1, 40), fout=st.integers(1, 40),
       bias=st.booleans(), seed=st.integers(0, 2**16))
def test_linear_against_numpy(n, fin, fout, bias, seed):
    r = rng(seed)
    lin = nn.Linear(fin, fout, bias=bias)
    x = r.standard_normal((n, fin)).astype(F32)
    g = r.standard_normal((n, fout)).astype(F32)
    w = lin.weight._data.astype(np.float64)
    b = lin.bias._data.astype(np.float64) if bias else 0.0
    xp = pyrt.tensor(x, requires_grad=True)
    y = lin(xp)
    y.backward(g)
    assert_close(y._data, x @ w.T + b)
    assert_close(xp.grad._data, g.astype(np.float64) @ w)
    assert_close(lin.weight.grad._data, g.T.astype(np.float64) @ x)
    if bias:
        assert_close(lin.bias.grad._data, g.sum(0, dtype=np.float64))


@pytest.mark.parametrize("shape,fin,fout,bias", [((8, 20), 20, 7, True), ((3, 5, 6), 6, 4, True),
                                                 ((6,), 6, 3, False), ((64, 784), 784, 128,
                                                                       True)])
def test_linear_against_torch(shape, fin, fout, bias):
    torch = pytest.importorskip("torch")
    x = rng(6).standard_normal(shape).astype(F32)
    check_module_against_torch(nn.Linear(fin, fout, bias=bias),
                               torch.nn.Linear(fin, fout, bias=bias), x, 7)


@settings(max_examples=20, deadline=None)
@given(lead=st.lists(st.integers(0, 3), max_size=3), fin=st.integers(1, 9),
       fout=st.integers(1, 9), bias=st.booleans(), act=st.sampled_from([None, "relu", "tanh"]),
       seed=st.integers(0, 2**16))
def test_functional_linear_of_any_leading_dims(lead, fin, fout, bias, act, seed):
    """F.linear takes [*, in] as PyTorch does ([in] included), the leading dims one batch."""
    r = rng(seed)
    x = r.standard_normal((*lead, fin)).astype(F32)
    w = r.standard_normal((fout, fin)).astype(F32)
    b = r.standard_normal(fout).astype(F32) if bias else None
    g = r.standard_normal((*lead, fout)).astype(F32)
    xp, wp = pyrt.tensor(x, requires_grad=True), pyrt.tensor(w, requires_grad=True)
    y = F.linear(xp, wp, None if b is None else pyrt.tensor(b), act)
    pre = x.astype(np.float64) @ w.T.astype(np.float64) + (0.0 if b is None else b)
    ref = {None: pre, "relu": np.maximum(pre, 0), "tanh": np.tanh(pre)}[act]
    assert y.shape == ref.shape
    np.testing.assert_allclose(y._data, ref, rtol=1e-4, atol=1e-5)
    y.backward(g)
    gp = g * {None: 1.0, "relu": pre > 0, "tanh": 1 - np.tanh(pre) ** 2}[act]
    np.testing.assert_allclose(xp.grad._data, gp @ w.astype(np.float64), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(wp.grad._data, gp.reshape(-1, fout).T
                               @ x.reshape(-1, fin).astype(np.float64), rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="at least 1 dimension"):
        F.linear(pyrt.tensor(1.0), wp)
    with pytest.raises(ValueError, match=r"does not match weight"):
        F.linear(pyrt.zeros(2, 3, fin + 1), wp)


def conv2d_reference(x, w, b, stride, padding):
    """Cross-correlation in float64 by sliding windows."""
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (padding[0],) * 2, (padding[1],) * 2))
    kh, kw = w.shape[2:]
    win = np.lib.stride_tricks.sliding_window_view(x, (kh, kw), axis=(2, 3))
    win = win[:, :, ::stride[0], ::stride[1]]  # [n, c, oh, ow, kh, kw]
    y = np.einsum("ncijhw,kchw->nkij", win, w.astype(np.float64))
    return y if b is None else y + b[None, :, None, None]


@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 3), c=st.integers(1, 4), k=st.integers(1, 5), h=st.integers(3, 10),
       w=st.integers(3, 10), kh=st.integers(1, 3), kw=st.integers(1, 3),
       stride=st.integers(1, 2), padding=st.integers(0, 1), bias=st.booleans(),
       seed=st.integers(0, 2**16))
def test_conv2d_against_numpy(n, c, k, h, w, kh, kw, stride, padding, bias, seed):
    conv = nn.Conv2d(c, k, (kh, kw), stride=stride, padding=padding, bias=bias)
    assert conv.weight.shape == (k, c, kh, kw)
    assert conv.kernel_size == (kh, kw) and conv.stride == (stride, stride)
    x = rng(seed).standard_normal((n, c, h, w)).astype(F32)
    ref = conv2d_reference(x, conv.weight._data, conv.bias._data if bias else None,
                           conv.stride, conv.padding)
    assert_close(conv(pyrt.tensor(x))._data, ref)


@pytest.mark.parametrize("c,k,ks,stride,padding,bias", [
    (1, 8, 3, 1, 1, True), (8, 16, 3, 1, 1, True), (3, 4, (2, 3), 2, (1, 0), False),
    (2, 5, 1, 1, 0, True)])
def test_conv2d_against_torch(c, k, ks, stride, padding, bias):
    torch = pytest.importorskip("torch")
    x = rng(8).standard_normal((4, c, 11, 9)).astype(F32)
    check_module_against_torch(nn.Conv2d(c, k, ks, stride, padding, bias=bias),
                               torch.nn.Conv2d(c, k, ks, stride, padding, bias=bias), x, 9)


@pytest.mark.parametrize("c,k,ks,stride,padding,groups,bias", [
    (4, 6, 3, 1, 1, 2, True), (6, 6, 3, 2, 1, 6, False), (3, 9, (2, 3), 1, (1, 0), 3, True),
    (8, 4, 1, 1, 0, 4, True)])
def test_grouped_conv2d_against_torch(c, k, ks, stride, padding, groups, bias):
    """Groups, depthwise (groups == channels) included: outputs and all three gradients;
    PyTorch's default initialisation bound follows the channels per group."""
    torch = pytest.importorskip("torch")
    x = rng(50).standard_normal((3, c, 10, 9)).astype(F32)
    ours = nn.Conv2d(c, k, ks, stride, padding, groups=groups, bias=bias)
    theirs = torch.nn.Conv2d(c, k, ks, stride, padding, groups=groups, bias=bias)
    assert repr(ours) == repr(theirs) and ours.weight.shape == tuple(theirs.weight.shape)
    bound = 1 / math.sqrt(c // groups * math.prod(ours.kernel_size))
    assert np.abs(ours.weight._data).max() <= bound
    check_module_against_torch(ours, theirs, x, 10)
    # the functional form, with an input that needs no gradient
    y = F.conv2d(pyrt.tensor(x), ours.weight, ours.bias, stride, padding, groups=groups)
    assert_close(y._data, theirs(to_torch(x)).detach().numpy())


@pytest.mark.parametrize("options", [
    {"dilation": 2, "padding": 2}, {"dilation": (1, 3), "stride": (2, 1)},
    {"padding": "same"}, {"padding": "same", "kernel_size": (4, 2), "dilation": (1, 3)},
    {"padding": "valid", "stride": 2}, {"padding": "same", "groups": 2, "dilation": 2},
    {"padding": 1, "padding_mode": "reflect"}, {"padding": (2, 1), "padding_mode": "replicate"},
    {"padding": "same", "padding_mode": "circular", "kernel_size": 4, "groups": 4},
    {"padding": (1, 2), "padding_mode": "circular", "dilation": (2, 1), "bias": False}])
def test_conv2d_dilation_paddings_and_padding_modes_against_torch(options):
    """Outputs, repr and all three gradients match torch.nn.Conv2d for dilations, the string
    paddings (odd totals included) and the padding modes, alone and with groups."""
    torch = pytest.importorskip("torch")
    options = dict(options)
    kernel = options.pop("kernel_size", 3)
    x = rng(51).standard_normal((2, 4, 11, 10)).astype(F32)
    ours = nn.Conv2d(4, 8, kernel, **options)
    with warnings.catch_warnings():  # torch's note on even kernels with padding="same"
        warnings.simplefilter("ignore", UserWarning)
        theirs = torch.nn.Conv2d(4, 8, kernel, **options)
        assert repr(ours) == repr(theirs)
        check_module_against_torch(ours, theirs, x, 52)


def test_conv2d_options_are_checked_as_torch():
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="out_channels must be divisible by groups"):
        nn.Conv2d(4, 3, 3, groups=2)
    with pytest.raises(ValueError, match="groups must be a positive integer"):
        nn.Conv2d(4, 4, 3, groups=0)
    with pytest.raises(ValueError, match="dilation must be integers >= 1"):
        nn.Conv2d(4, 4, 3, dilation=0)
    with pytest.raises(ValueError, match="padding_mode must be one of 'zeros', 'reflect', "
                                         "'replicate' or 'circular', but got padding_mode='wrap'"):
        nn.Conv2d(4, 4, 3, padding_mode="wrap")
    with pytest.raises(ValueError, match="Invalid padding string 'full'"):
        nn.Conv2d(4, 4, 3, padding="full")
    with pytest.raises(ValueError, match="padding='same' is not supported for strided"):
        nn.Conv2d(4, 4, 3, stride=2, padding="same")
    x, w = pyrt.randn(1, 4, 5, 5), pyrt.randn(6, 3, 3, 3)
    with pytest.raises(ValueError, match=r"Given groups=2, weight of size \[6, 3, 3, 3\]"):
        F.conv2d(x, w, groups=2)
    with pytest.raises(ValueError, match="groups must be a positive integer"):
        F.conv2d(x, w, groups=-1)


def pool_reference(x, k, reduce):
    n, c, h, w = x.shape
    x = x[:, :, :h // k * k, :w // k * k].reshape(n, c, h // k, k, w // k, k)
    return reduce(x, axis=(3, 5))


@pytest.mark.parametrize("k", [1, 2, 3])
def test_pooling_against_numpy(k):
    x = rng(10).standard_normal((2, 3, 8, 7)).astype(F32)
    assert_close(nn.MaxPool2d(k)(pyrt.tensor(x))._data, pool_reference(x, k, np.max))
    assert_close(nn.AvgPool2d(k)(pyrt.tensor(x))._data, pool_reference(x, k, np.mean))
    assert nn.MaxPool2d(k).stride == k and nn.MaxPool2d(3, 1).stride == 1


@pytest.mark.parametrize("args", [(2,), (3, 2), (3, 1, 1), ((2, 3), (1, 2), (1, 0))])
def test_pooling_against_torch(args):
    torch = pytest.importorskip("torch")
    x = rng(11).standard_normal((2, 3, 9, 8)).astype(F32)
    check_module_against_torch(nn.MaxPool2d(*args), torch.nn.MaxPool2d(*args), x, 12)
    check_module_against_torch(nn.AvgPool2d(*args), torch.nn.AvgPool2d(*args), x, 13)


@pytest.mark.parametrize("args,options", [
    ((3,), {"dilation": 2}), ((3, 1, 1, 2), {}), ((2, 2, 0, 3), {"ceil_mode": True}),
    (((3, 2), (2, 1), (1, 1), (2, 3)), {}), ((3, 2, 1, (1, 2)), {"ceil_mode": True})])
def test_dilated_max_pooling_and_its_indices_against_torch(args, options):
    torch = pytest.importorskip("torch")
    x = rng(53).standard_normal((2, 3, 11, 10)).astype(F32)
    ours, theirs = nn.MaxPool2d(*args, **options), torch.nn.MaxPool2d(*args, **options)
    assert repr(ours) == repr(theirs)
    check_module_against_torch(ours, theirs, x, 54)
    ours, theirs = (nn.MaxPool2d(*args, return_indices=True, **options),
                    torch.nn.MaxPool2d(*args, return_indices=True, **options))
    (y, idx), (yt, it) = ours(pyrt.tensor(x)), theirs(to_torch(x))
    assert idx.dtype == np.int64 and np.array_equal(idx._data, it.numpy())
    assert_close(y._data, yt.numpy())
    # the indices are the tensor's own: writing them moves no gradient
    xp = pyrt.tensor(x, requires_grad=True)
    y, idx = F.max_pool2d(xp, *args, return_indices=True, **options)
    idx._data[...] = 0
    y.sum().backward()
    xt = to_torch(x, requires_grad=True)
    torch.nn.functional.max_pool2d(xt, *args, **options).sum().backward()
    assert_close(xp.grad._data, xt.grad.numpy())


@pytest.mark.parametrize("pad,mode", [
    ((1, 2), "constant"), ((1, -2, 3, 0), "constant"), ((1, 1, 2, 0, 1, 1), "constant"),
    ((1, 2, 0, 3), "reflect"), ((9, 9, 10, 10), "reflect"), ((2, 0, 3, 1), "replicate"),
    ((2, 2, 1, 1), "circular"), ((10, 10, 11, 11), "circular")])
def test_pad_against_torch(pad, mode):
    """F.pad's values and gradients, cropping included, as torch.nn.functional.pad's."""
    torch = pytest.importorskip("torch")
    x = rng(55).standard_normal((2, 3, 11, 10)).astype(F32)
    xp, xt = pyrt.tensor(x, requires_grad=True), to_torch(x, requires_grad=True)
    y, yt = F.pad(xp, pad, mode=mode), torch.nn.functional.pad(xt, pad, mode=mode)
    assert_close(y._data, yt.detach().numpy())
    g = rng(56).standard_normal(y.shape).astype(F32)
    y.backward(pyrt.tensor(g))
    yt.backward(torch.from_numpy(g))
    assert_close(xp.grad._data, xt.grad.numpy())
    value = F.pad(pyrt.tensor(x), pad, value=-2.5)._data if mode == "constant" else None
    if value is not None:
        assert_close(value, torch.nn.functional.pad(to_torch(x), pad, value=-2.5).numpy())


def test_spatial_functions_take_tensors_only():
    x, w = np.ones((1, 1, 4, 4), F32), pyrt.randn(1, 1, 3, 3)
    for call, message in [(lambda: F.conv2d(x, w), "conv2d: input must be a Tensor"),
                          (lambda: F.conv2d(pyrt.tensor(x), w._data), "conv2d: weight must be"),
                          (lambda: F.conv2d(pyrt.tensor(x), w, np.ones(1, F32)),
                           "conv2d: bias must be a Tensor, got ndarray"),
                          (lambda: F.max_pool2d(x, 2), "max_pool2d: input must be a Tensor"),
                          (lambda: F.avg_pool2d(x, 2), "avg_pool2d: input must be a Tensor"),
                          (lambda: F.pad(x, (1, 1)), "pad: input must be a Tensor")]:
        with pytest.raises(TypeError, match=message):
            call()


def test_pad_errors_name_the_problem():
    x = pyrt.randn(2, 3, 4)
    for pad, mode, error, message in [
            ((1,), "constant", ValueError, "Padding length must be divisible by 2"),
            ((1,) * 8, "constant", ValueError, "Padding length too large"),
            ((1, 1), "wrap", ValueError, "mode must be one of"),
            ((4, 0), "reflect", ValueError, "Padding size should be less than"),
            ((5, 0), "circular", ValueError, "wrapping around more than once"),
            ((-1, 0), "replicate", ValueError, "only supported in constant mode"),
            ((-3, -2), "constant", ValueError, "leaves it -1 long"),
            ((1.5, 1), "constant", TypeError, "pad must be a sequence of ints"),
            ("ab", "constant", TypeError, "pad must be a sequence of ints")]:
        with pytest.raises(error, match=message):
            F.pad(x, pad, mode=mode)
    with pytest.raises(ValueError, match="doesn't take in value"):
        F.pad(x, (1, 1), mode="reflect", value=1.0)
    with pytest.raises(ValueError, match="has nothing to copy"):
        F.pad(pyrt.randn(2, 0), (1, 1), mode="replicate")


def test_pooling_checks_arguments():
    with pytest.raises(ValueError, match="kernel_size"):
        nn.MaxPool2d(0)
    with pytest.raises(ValueError, match="stride"):
        nn.AvgPool2d(2, stride=-1)
    with pytest.raises(TypeError, match="padding"):
        nn.MaxPool2d(2, padding="same")


@pytest.mark.parametrize("start,end", [(1, -1), (0, -1), (2, 3), (1, 2)])
def test_flatten(start, end):
    x = rng(14).standard_normal((2, 3, 4, 5)).astype(F32)
    ref = x.reshape(x.shape[:start] + (-1,) + x.shape[end % 4 + 1:])
    assert np.array_equal(nn.Flatten(start, end)(pyrt.tensor(x))._data, ref)
    torch = pytest.importorskip("torch")
    check_module_against_torch(nn.Flatten(start, end), torch.nn.Flatten(start, end), x, 15)


def test_flatten_checks_dims():
    x = rng(14).standard_normal((2, 3, 4, 5)).astype(F32)
    assert nn.Flatten()(pyrt.tensor(x)).shape == (2, 60)
    with pytest.raises(ValueError, match="start_dim"):
        nn.Flatten(3, 1)(pyrt.tensor(x))


@pytest.mark.parametrize("name", ["ReLU", "Sigmoid", "Tanh"])
def test_activations(name):
    x = rng(16).standard_normal((5, 7)).astype(F32)
    ref = {"ReLU": lambda v: np.maximum(v, 0), "Sigmoid": lambda v: 1 / (1 + np.exp(-v)),
           "Tanh": np.tanh}[name](x.astype(np.float64))
    assert_close(getattr(nn, name)()(pyrt.tensor(x))._data, ref)
    torch = pytest.importorskip("torch")
    check_module_against_torch(getattr(nn, name)(), getattr(torch.nn, name)(), x, 17)


def test_layer_arguments_are_checked():
    with pytest.raises(ValueError, match="in_features"):
        nn.Linear(0, 3)
    with pytest.raises(ValueError, match="out_features"):
        nn.Linear(3, 2.5)
    with pytest.raises(ValueError, match="kernel_size"):
        nn.Conv2d(1, 2, 0)
    with pytest.raises(TypeError, match="stride"):
        nn.Conv2d(1, 2, 3, stride=(1, 2, 3))
    with pytest.raises(ValueError, match="padding"):
        nn.Conv2d(1, 2, 3, padding=-1)


# ---- losses ----------------------------------------------------------------------------------


def test_losses_against_numpy():
    r = rng(18)
    z = r.standard_normal((6, 4))
    labels = r.integers(0, 4, 6)
    logp = z - np.log(np.exp(z).sum(1, keepdims=True))
    loss = nn.CrossEntropyLoss()(pyrt.tensor(z), pyrt.tensor(labels))
    assert_close(loss._data, -logp[np.arange(6), labels].mean())
    t = r.random((6, 4))
    ref = np.mean(np.maximum(z, 0) - z * t + np.log1p(np.exp(-np.abs(z))))
    assert_close(nn.BCEWithLogitsLoss()(pyrt.tensor(z), pyrt.tensor(t))._data, ref)
    assert_close(nn.MSELoss()(pyrt.tensor(z), pyrt.tensor(t))._data, np.mean((z - t) ** 2))


@pytest.mark.parametrize("name", ["CrossEntropyLoss", "NLLLoss", "BCEWithLogitsLoss", "MSELoss"])
def test_losses_against_torch(name):
    torch = pytest.importorskip("torch")
    r = rng(19)
    z = r.standard_normal((16, 10)).astype(F32)
    if name in ("CrossEntropyLoss", "NLLLoss"):
        target = r.integers(0, 10, 16)
    else:
        target = r.random((16, 10)).astype(F32)
    zp = pyrt.tensor(z, requires_grad=True)
    loss = getattr(nn, name)()(zp, pyrt.tensor(target))
    (loss * 3.0).backward()
    zt = to_torch(z, requires_grad=True)
    tloss = getattr(torch.nn, name)()(zt, torch.from_numpy(target))
    (tloss * 3.0).backward()
    assert_close(loss._data, tloss.detach().numpy())
    assert_close(zp.grad._data, zt.grad.numpy())


def _loss_case(name, r, rows, cols):
    """(input, target) for loss `name`: logits up to +-20 (the stable formulas), and labels,
    probabilities or values."""
    z = (r.standard_normal((rows, cols)) * 8).clip(-20, 20).astype(F32)
    if name in ("CrossEntropyLoss", "NLLLoss"):
        return z, r.integers(0, cols, rows)
    return z, r.random((rows, cols)).astype(F32)


@pytest.mark.parametrize("name", ["CrossEntropyLoss", "NLLLoss", "BCEWithLogitsLoss", "MSELoss"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@settings(max_examples=12, deadline=None)
@given(rows=st.integers(0, 40), cols=st.integers(1, 12), seed=st.integers(0, 2**16),
       target_grad=st.booleans())
def test_loss_reductions_against_torch(name, reduction, rows, cols, seed, target_grad):
    """Every reduction of every loss, module and functional form: the loss and the gradients
    of the input (and of a float target that requires grad) under a random upstream gradient,
    as torch.nn computes them."""
    torch = pytest.importorskip("torch")
    r = rng(seed)
    z, target = _loss_case(name, r, rows, cols)
    target_grad = target_grad and name not in ("CrossEntropyLoss", "NLLLoss")
    zp = pyrt.tensor(z, requires_grad=True)
    tp = pyrt.tensor(target, requires_grad=target_grad)
    loss = getattr(nn, name)(reduction=reduction)(zp, tp)
    zt = to_torch(z, requires_grad=True)
    tt = to_torch(target, requires_grad=target_grad)
    tloss = getattr(torch.nn, name)(reduction=reduction)(zt, tt)
    assert loss.shape == tuple(tloss.shape)
    ref = tloss.detach().numpy()
    if rows == 0 and reduction == "mean":  # the mean of nothing
        assert np.isnan(ref) and np.isnan(loss._data)
    else:  # a row's loss is near |z| eps of float32 rounding, however small the loss
        scale = max(float(np.max(np.abs(ref), initial=0)), float(np.max(np.abs(z), initial=0)))
        err = float(np.max(np.abs(loss._data - ref), initial=0))
        assert err <= 2e-6 * scale, f"loss: max error {err:.3g}, scale {scale:.3g}"
    g = r.standard_normal(loss.shape).astype(F32)
    loss.backward(pyrt.tensor(g))
    tloss.backward(torch.from_numpy(g))
    # softmax - onehot cancels where a row is nearly certain: float32 rounding of the
    # probability (about 1) times g, however small the difference
    scale = max(float(np.max(np.abs(zt.grad.numpy()), initial=0)),
                float(np.max(np.abs(g), initial=0)))
    err = float(np.max(np.abs(zp.grad._data - zt.grad.numpy()), initial=0))
    assert err <= 2e-6 * scale, f"input grad: max error {err:.3g}, scale {scale:.3g}"
    if target_grad:
        assert_close(tp.grad._data, tt.grad.numpy(), rtol=2e-6, what="target grad")
    functional = {"CrossEntropyLoss": F.cross_entropy, "NLLLoss": F.nll_loss,
                  "BCEWithLogitsLoss": F.binary_cross_entropy_with_logits,
                  "MSELoss": F.mse_loss}[name]
    again = functional(pyrt.tensor(z), pyrt.tensor(target), reduction=reduction)
    assert np.array_equal(again._data, loss._data, equal_nan=True)


def test_loss_reductions_against_numpy():
    """reduction="none" and "sum" from the formulas, in float64."""
    r = rng(31)
    z = r.standard_normal((7, 5)) * 6
    labels = r.integers(0, 5, 7)
    logp = z - np.log(np.exp(z).sum(1, keepdims=True))
    rows = -logp[np.arange(7), labels]
    ce = nn.CrossEntropyLoss(reduction="none")(pyrt.tensor(z), pyrt.tensor(labels))
    assert_close(ce._data, rows)
    assert_close(F.cross_entropy(pyrt.tensor(z), labels, reduction="sum")._data, rows.sum())
    t = r.random((7, 5))
    elements = np.maximum(z, 0) - z * t + np.log1p(np.exp(-np.abs(z)))
    assert_close(nn.BCEWithLogitsLoss(reduction="none")(pyrt.tensor(z), pyrt.tensor(t))._data,
                 elements)
    assert_close(nn.MSELoss(reduction="sum")(pyrt.tensor(z), pyrt.tensor(t))._data,
                 ((z - t) ** 2).sum())
    # log_softmax then the negative log-likelihood is the cross-entropy
    logp32 = F.log_softmax(pyrt.tensor(z), 1)
    assert_close(nn.NLLLoss(reduction="none")(logp32, pyrt.tensor(labels))._data, rows)
    assert_close(F.nll_loss(logp32, labels)._data, rows.mean())
    assert_close(F.nll_loss(logp32, labels, reduction="sum")._data, rows.sum())


def test_loss_reductions_are_checked():
    for loss in (nn.CrossEntropyLoss, nn.NLLLoss, nn.BCEWithLogitsLoss, nn.MSELoss):
        assert loss().reduction == "mean" and repr(loss()) == f"{loss.__name__}()"
        assert repr(loss(reduction="sum")) == f"{loss.__name__}(reduction='sum')"
        for bad in ("average", "Mean", None, 1):
            with pytest.raises(ValueError, match="valid value for reduction"):
                loss(reduction=bad)
    z = pyrt.randn(3, 4, requires_grad=True)
    with pytest.raises(ValueError, match="valid value for reduction"):
        F.cross_entropy(z, [0, 1, 2], reduction="avg")
    with pytest.raises(ValueError, match="valid value for reduction"):
        F.mse_loss(z, pyrt.zeros(3, 4), reduction="elementwise_mean")
    # the checks of the mean apply to every reduction
    for reduction in ("mean", "sum", "none"):
        with pytest.raises(ValueError, match=r"target must hold class indices in \[0, 4\) or "
                                             r"ignore_index \(-100\), got 4"):
            F.cross_entropy(z, [0, 1, 4], reduction=reduction)
        with pytest.raises(ValueError, match=r"got -1"):  # below 0, not ignore_index
            F.cross_entropy(z, [0, -1, 2], reduction=reduction)
        with pytest.raises(TypeError, match=r"target must hold class indices \(an integer "
                                            r"dtype\) of shape \(3,\), or class probabilities"):
            F.cross_entropy(z, pyrt.tensor([0.0, 1.0, 2.0]), reduction=reduction)
        with pytest.raises(ValueError, match=r"target must have shape \(3,\)"):
            F.cross_entropy(z, [0, 1], reduction=reduction)
        with pytest.raises(ValueError, match="targets must have the shape"):
            F.binary_cross_entropy_with_logits(z, pyrt.zeros(3, 5), reduction=reduction)
        with pytest.raises(TypeError, match="input must be a Tensor"):
            F.cross_entropy(np.zeros((3, 4), F32), [0, 1, 2], reduction=reduction)
    for reduction in ("mean", "sum", "none"):
        with pytest.raises(ValueError, match=r"target must hold class indices in \[0, 4\) "
                                             r"or ignore_index \(-100\), got -1"):
            F.nll_loss(z, [0, -1, 2], reduction=reduction)
        with pytest.raises(TypeError, match=r"target must hold class indices \(an integer "
                                            r"dtype\) of shape \(3,\); got float32"):
            F.nll_loss(z, pyrt.tensor([0.0, 1.0, 2.0]), reduction=reduction)
        with pytest.raises(ValueError, match=r"target must have shape \(3,\)"):
            F.nll_loss(z, [0, 1], reduction=reduction)
        with pytest.raises(ValueError, match=r"target must have shape \(\)"):  # one sample
            F.nll_loss(pyrt.zeros(4), [0, 1, 2, 3], reduction=reduction)
        with pytest.raises(ValueError, match="input must be"):
            F.nll_loss(pyrt.tensor(1.0), 0, reduction=reduction)
        with pytest.raises(TypeError, match="input must have dtype float32"):
            F.nll_loss(pyrt.tensor([[1, 2]]), [0], reduction=reduction)
        with pytest.raises(TypeError, match="input must be a Tensor"):
            F.nll_loss(np.zeros((3, 4), F32), [0, 1, 2], reduction=reduction)
        with pytest.raises(TypeError, match="target must be a tensor of class indices"):
            F.nll_loss(z, None, reduction=reduction)


def test_nn_functional_reads_as_torch():
    """pyrt.nn.functional holds pyrt.functional's ops under torch.nn.functional's names, and
    the losses take torch's keywords."""
    torch = pytest.importorskip("torch")
    import pyrt.nn.functional as NF

    for name in NF.__all__:
        assert getattr(NF, name) is getattr(F, name)
        assert hasattr(torch.nn.functional, name)
    r = rng(33)
    x, w = r.standard_normal((5, 6)).astype(F32), r.standard_normal((4, 6)).astype(F32)
    labels = r.integers(0, 4, 5)
    loss = NF.cross_entropy(input=NF.relu(NF.linear(pyrt.tensor(x), pyrt.tensor(w))),
                            target=pyrt.tensor(labels), reduction="sum")
    ref = torch.nn.functional.cross_entropy(
        input=torch.relu(torch.from_numpy(x) @ torch.from_numpy(w).T),
        target=torch.from_numpy(labels), reduction="sum")
    assert_close(loss._data, ref.numpy())
    with pytest.raises(TypeError):  # reduction is a keyword, as it is the 7th in torch
        NF.cross_entropy(pyrt.tensor(x), labels, "sum")


def test_summed_loss_of_an_empty_batch_is_zero():
    z = pyrt.tensor(np.zeros((0, 3), F32), requires_grad=True)
    loss = F.cross_entropy(z, np.zeros(0, np.int64), reduction="sum")
    assert float(loss) == 0.0
    loss.backward()
    assert z.grad.shape == (0, 3)
    assert F.cross_entropy(z, np.zeros(0, np.int64), reduction="none").shape == (0,)
    assert float(F.binary_cross_entropy_with_logits(z, pyrt.zeros(0, 3),
                                                    reduction="sum")) == 0.0
    loss = F.nll_loss(z, np.zeros(0, np.int64), reduction="sum")
    assert float(loss) == 0.0 and np.isnan(float(F.nll_loss(z, np.zeros(0, np.int64))))


# ---- dropout, identity, softmax, ModuleList --------------------------------------------------


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_dropout_masks_and_scales_while_training(p):
    x = pyrt.tensor(rng(40).uniform(1, 2, (400, 250)).astype(F32), requires_grad=True)
    drop = nn.Dropout(p)
    pyrt.manual_seed(3)
    y = drop(x)
    kept = y._data != 0
    assert abs(1 - kept.mean() - p) < 0.01  # 100000 draws: the rate is within 4 sigma
    scale = F32(1) / F32(1 - p)  # torch's float32 factor
    np.testing.assert_array_equal(y._data[kept], x._data[kept] * scale)
    g = rng(41).standard_normal(y.shape).astype(F32)
    y.backward(pyrt.tensor(g))
    np.testing.assert_array_equal(x.grad._data, np.where(kept, g * scale, 0))
    # the same seed, the same mask, at any thread count
    for threads in THREADS:
        with pyrt.num_threads(threads):
            pyrt.manual_seed(3)
            assert np.array_equal(drop(x)._data, y._data)
    # evaluation mode, p = 0 and training=False pass the input itself
    assert drop.eval()(x) is x
    assert nn.Dropout(0.0)(x) is x and F.dropout(x, 0.7, training=False) is x
    z = nn.Dropout(1.0)(x)
    assert not z._data.any()


def test_dropout_is_checked_and_prints_as_torch():
    torch = pytest.importorskip("torch")
    for p in (-0.1, 1.5, "0.5", True):
        with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
            nn.Dropout(p)
        with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
            F.dropout(pyrt.ones(3), p)
    assert repr(nn.Dropout(0.25)) == repr(torch.nn.Dropout(0.25))
    assert repr(nn.Dropout(0.25, True)) == repr(torch.nn.Dropout(0.25, True))
    assert repr(nn.Identity(3, k=1)) == repr(torch.nn.Identity(3, k=1))
    with pytest.raises(TypeError, match="input must be a"):
        nn.Dropout()(np.ones(3, F32))


def test_dropout_trains_in_a_sequential_and_evaluates_without():
    pyrt.manual_seed(5)
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Dropout(0.5), nn.Linear(8, 2))
    x = pyrt.tensor(rng(42).standard_normal((16, 6)).astype(F32))
    train_out = model(x)
    model.eval()
    a, b = model(x), model(x)
    assert np.array_equal(a._data, b._data) and not np.array_equal(a._data, train_out._data)
    no_dropout = nn.Sequential(model[0], model[1], nn.Identity(), model[3])
    assert np.array_equal(no_dropout(x)._data, a._data)


@pytest.mark.parametrize("cls", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("shape,dim", [((4, 7), 1), ((4, 7), 0), ((2, 3, 5), -1), ((5,), None),
                                       ((2, 3, 4, 5), None), ((2, 3, 5), None)])
def test_softmax_modules_match_torch(cls, shape, dim):
    torch = pytest.importorskip("torch")
    z = rng(43).standard_normal(shape).astype(F32) * 4
    ours, theirs = getattr(nn, cls)(dim=dim), getattr(torch.nn, cls)(dim=dim)
    assert repr(ours) == repr(theirs)
    zp, zt = pyrt.tensor(z, requires_grad=True), to_torch(z, requires_grad=True)
    if dim is None:
        with pytest.warns(UserWarning, match="Implicit dimension choice"):
            y = ours(zp)
        with pytest.warns(UserWarning):
            yt = theirs(zt)
    else:
        y, yt = ours(zp), theirs(zt)
    assert_close(y._data, yt.detach().numpy())
    g = rng(44).standard_normal(shape).astype(F32)
    y.backward(pyrt.tensor(g))
    yt.backward(torch.from_numpy(g))
    assert_close(zp.grad._data, zt.grad.numpy())


def _module_list(lib):
    class Tower(lib.Module):
        def __init__(self):
            super().__init__()
            self.layers = lib.ModuleList([lib.Linear(4, 4) for _ in range(2)])
            self.layers.append(lib.Linear(4, 3))
            self.layers.insert(1, lib.Tanh())
            self.layers += [lib.ReLU()]

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return x

    return Tower()


def test_module_list_registers_its_modules_as_torch():
    torch = pytest.importorskip("torch")
    pyrt.manual_seed(6)
    ours, theirs = _module_list(nn), _module_list(torch.nn)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert repr(ours.layers) == repr(theirs.layers)
    theirs.load_state_dict({k: torch.from_numpy(v.numpy()) for k, v in ours.state_dict().items()})
    x = rng(45).standard_normal((5, 4)).astype(F32)
    assert_close(ours(pyrt.tensor(x))._data, theirs(torch.from_numpy(x)).detach().numpy())
    layers = ours.layers
    assert len(layers) == 5 and isinstance(layers[1], nn.Tanh) and layers[-1] is layers[4]
    assert isinstance(layers[1:3], nn.ModuleList) and len(layers[1:3]) == 2
    assert [type(m) for m in layers[::2]] == [nn.Linear, nn.Linear, nn.ReLU]
    del layers[1]
    assert list(layers._modules) == ["0", "1", "2", "3"] and len(list(ours.parameters())) == 6
    layers[0] = nn.Identity()
    assert len(list(ours.parameters())) == 4
    with pytest.raises(IndexError, match="out of range for a ModuleList of length 4"):
        layers[4]
    with pytest.raises(TypeError, match="ModuleList indices must be integers"):
        layers["0"]
    with pytest.raises(TypeError, match="iterable of modules"):
        layers.extend(nn.ReLU())
    with pytest.raises(TypeError, match="is not a Module subclass"):
        layers.insert(0, 3)
    with pytest.raises(TypeError, match="is not a Module subclass"):
        layers.append(np.zeros(2))
    assert len(nn.ModuleList()) == 0


def test_edge_cases_of_the_new_modules():
    # a 0-d loss of each element is a 0-d tensor with a 0-d gradient
    z = pyrt.tensor(np.float32(0.3), requires_grad=True)
    loss = F.binary_cross_entropy_with_logits(z, pyrt.tensor(np.float32(0.5)), reduction="none")
    assert loss.shape == () and loss.device == "cpu"
    loss.backward()
    assert isinstance(z.grad._data, np.ndarray) and z.grad.shape == ()
    # a ModuleList extends with another ModuleList or a Sequential
    ml = nn.ModuleList(nn.ModuleList([nn.ReLU()]))
    ml.extend(nn.Sequential(nn.Tanh(), nn.Sigmoid()))
    ml += nn.ModuleList([nn.Identity()])
    assert [type(m) for m in ml] == [nn.ReLU, nn.Tanh, nn.Sigmoid, nn.Identity]
    with pytest.raises(TypeError, match="item assignment takes an integer index"):
        ml[0:1] = [nn.ReLU()]
    with pytest.raises(TypeError, match="item assignment takes an integer index"):
        nn.Sequential(nn.ReLU())[0:1] = [nn.ReLU()]
    # dropout names what it refuses
    with pytest.raises(TypeError, match="dropout: input must be a float32 tensor"):
        F.dropout(pyrt.tensor([1, 2, 3]), 0.5)
    with pytest.raises(TypeError, match="input must be a"):
        F.dropout(np.ones(3, F32), 0.5, training=False)


def test_load_state_dict_counts_as_a_write():
    m = nn.Linear(3, 1)
    x = pyrt.tensor(np.ones((2, 3), F32), requires_grad=True)
    y = m(x).sum()
    m.load_state_dict({k: v + 1 for k, v in m.state_dict().items()})
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_modules_pickled_without_buffers_still_load():
    m = nn.Sequential(nn.Linear(2, 2))
    for module in m.modules():  # as a module pickled before buffers existed
        del module.__dict__["_buffers"], module.__dict__["_non_persistent_buffers_set"]
    clone = pickle.loads(pickle.dumps(m))
    assert list(clone.state_dict()) == ["0.weight", "0.bias"]
    clone.to("cpu")


def test_pool_layers_take_torchs_options():
    torch = pytest.importorskip("torch")
    x = rng(46).standard_normal((2, 3, 7, 9)).astype(F32)
    for ours, theirs in [
            (nn.MaxPool2d(2, ceil_mode=True), torch.nn.MaxPool2d(2, ceil_mode=True)),
            (nn.MaxPool2d(3, 2, 1, ceil_mode=True), torch.nn.MaxPool2d(3, 2, 1, ceil_mode=True)),
            (nn.AvgPool2d(3, 2, 1, ceil_mode=True, count_include_pad=False),
             torch.nn.AvgPool2d(3, 2, 1, ceil_mode=True, count_include_pad=False)),
            (nn.AvgPool2d(2, ceil_mode=True), torch.nn.AvgPool2d(2, ceil_mode=True))]:
        assert repr(ours) == repr(theirs)
        xp, xt = pyrt.tensor(x, requires_grad=True), to_torch(x, requires_grad=True)
        y, yt = ours(xp), theirs(xt)
        assert_close(y._data, yt.detach().numpy())
        g = rng(47).standard_normal(y.shape).astype(F32)
        y.backward(pyrt.tensor(g))
        yt.backward(torch.from_numpy(g))
        assert_close(xp.grad._data, xt.grad.numpy())
    with pytest.raises(ValueError, match="dilation must be integers >= 1"):
        nn.MaxPool2d(2, dilation=0)
    with pytest.raises(TypeError, match="return_indices must be a bool"):
        nn.MaxPool2d(2, return_indices=1)
    with pytest.raises(ValueError, match="divisor_override=4 is not supported"):
        nn.AvgPool2d(2, divisor_override=4)
    with pytest.raises(TypeError, match="ceil_mode must be a bool"):
        nn.MaxPool2d(2, ceil_mode=1)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf"), 3])
@pytest.mark.parametrize("max_norm", [0.5, 1e6])
def test_clip_grad_norm_matches_torch(norm_type, max_norm):
    torch = pytest.importorskip("torch")
    r = rng(48)
    shapes = [(4, 5), (5,), (3, 3)] + ([(0,)] if norm_type != float("inf") else [])
    grads = [(r.standard_normal(shape) * 3).astype(F32) for shape in shapes]
    ours = [pyrt.tensor(np.zeros_like(g), requires_grad=True) for g in grads]
    theirs = [torch.zeros(g.shape, requires_grad=True) for g in grads]
    for p, t, g in zip(ours, theirs, grads):
        p.grad, t.grad = pyrt.tensor(g.copy()), torch.from_numpy(g.copy())
    ours.append(pyrt.tensor(np.ones(2, F32), requires_grad=True))  # no gradient: left out
    total = nn.utils.clip_grad_norm_(ours, max_norm, norm_type)
    ref = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type)
    assert total.shape == () and total.dtype == F32
    assert_close(total._data, ref.numpy(), rtol=1e-6)
    for p, t in zip(ours, theirs):
        assert_close(p.grad._data, t.grad.numpy(), rtol=1e-6)
    assert ours[-1].grad is None


def test_clip_grad_value_and_errors_match_torch():
    torch = pytest.importorskip("torch")
    g = (rng(49).standard_normal((6, 7)) * 2).astype(F32)
    p, t = pyrt.tensor(np.zeros_like(g), requires_grad=True), torch.zeros(6, 7,
                                                                         requires_grad=True)
    p.grad, t.grad = pyrt.tensor(g.copy()), torch.from_numpy(g.copy())
    nn.utils.clip_grad_value_(p, 0.75)  # a single tensor, as torch takes it
    torch.nn.utils.clip_grad_value_(t, 0.75)
    np.testing.assert_array_equal(p.grad._data, t.grad.numpy())
    p = pyrt.tensor(np.zeros(2, F32), requires_grad=True)
    p.grad = pyrt.tensor(np.array([np.inf, 1.0], F32))
    with pytest.raises(RuntimeError, match="is non-finite, so it cannot be clipped"):
        nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
    assert p.grad._data[0] == np.inf  # nothing scaled
    with pytest.raises(TypeError, match="max_norm must be a real number"):
        nn.utils.clip_grad_norm_([p], "1")
    with pytest.raises(TypeError, match="parameters must be Tensors"):
        nn.utils.clip_grad_norm_([np.ones(2)], 1.0)
    assert float(nn.utils.clip_grad_norm_([], 1.0)) == 0.0
    # an empty gradient adds nothing, for the inf norm too (torch refuses that one)
    e = pyrt.tensor(np.zeros(0, F32), requires_grad=True)
    e.grad = pyrt.tensor(np.zeros(0, F32))
    p.grad = pyrt.tensor(np.array([-3.0, 1.0], F32))
    assert float(nn.utils.clip_grad_norm_([e, p], 10.0, float("inf"))) == 3.0


# ---- initialisation --------------------------------------------------------------------------


def test_default_init_bounds_are_torchs():
    """weight and bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)): kaiming_uniform_(a=sqrt(5))."""
    pyrt.manual_seed(20)
    for layer, fan_in in [(nn.Linear(784, 128), 784), (nn.Linear(3, 500), 3),
                          (nn.Conv2d(8, 16, 3), 72), (nn.Conv2d(1, 300, (2, 5)), 10)]:
        bound = 1 / math.sqrt(fan_in)
        for p in layer.parameters():
            values = p._data.astype(np.float64)
            assert np.all(np.abs(values) <= bound)
            if values.size >= 300:  # uniform: reaches near both ends, std = bound / sqrt(3)
                assert values.max() > 0.95 * bound and values.min() < -0.95 * bound
                assert abs(values.std() - bound / math.sqrt(3)) < 0.1 * bound
                assert abs(values.mean()) < 0.1 * bound


def test_default_init_statistics_match_torch():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    pyrt.manual_seed(0)
    for ours, theirs in [(nn.Linear(784, 128), torch.nn.Linear(784, 128)),
                         (nn.Conv2d(8, 16, 3), torch.nn.Conv2d(8, 16, 3))]:
        for (name, p), tp in zip(ours.named_parameters(), theirs.parameters()):
            a, b = p._data.astype(np.float64), tp.detach().numpy().astype(np.float64)
            assert a.shape == b.shape, name
            # the same bound: both stay inside the other's range, to sampling precision
            bound = max(np.abs(a).max(), np.abs(b).max())
            assert np.abs(a).max() > 0.97 * bound and np.abs(b).max() > 0.97 * bound, name
            assert abs(a.std() - b.std()) < 0.1 * b.std(), name


def test_init_is_seeded():
    pyrt.manual_seed(21)
    a = nn.Conv2d(2, 3, 3).state_dict()
    pyrt.manual_seed(21)
    b = nn.Conv2d(2, 3, 3).state_dict()
    c = nn.Conv2d(2, 3, 3).state_dict()
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert not np.array_equal(a["weight"], c["weight"])


def test_init_functions():
    pyrt.manual_seed(22)
    t = pyrt.empty(200, 300)
    assert nn.init.uniform_(t, -2.0, 3.0) is t
    assert t._data.min() >= -2.0 and t._data.max() <= 3.0 and abs(t._data.mean() - 0.5) < 0.05
    nn.init.normal_(t, 1.0, 2.0)
    assert abs(t._data.mean() - 1.0) < 0.05 and abs(t._data.std() - 2.0) < 0.05
    assert np.all(nn.init.zeros_(t)._data == 0) and np.all(nn.init.ones_(t)._data == 1)
    assert np.all(nn.init.constant_(t, 0.5)._data == 0.5)
    # kaiming_uniform_: bound = gain * sqrt(3 / fan), gain = sqrt(2 / (1 + a^2)) for leaky_relu
    w = pyrt.empty(300, 20, 3, 3)
    for a, mode, nonlinearity, fan in [(0, "fan_in", "relu", 180), (0, "fan_out", "relu", 2700),
                                       (math.sqrt(5), "fan_in", "leaky_relu", 180)]:
        gain = nn.init.calculate_gain(nonlinearity, a)
        bound = gain * math.sqrt(3 / fan)
        nn.init.kaiming_uniform_(w, a=a, mode=mode, nonlinearity=nonlinearity)
        assert np.abs(w._data).max() <= bound and np.abs(w._data).max() > 0.99 * bound
    nn.init.kaiming_normal_(w, nonlinearity="relu")
    assert abs(w._data.std() - math.sqrt(2 / 180)) < 0.01 * math.sqrt(2 / 180)
    nn.init.xavier_uniform_(w)
    assert np.abs(w._data).max() <= math.sqrt(6 / (180 + 2700))
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        nn.init.kaiming_uniform_(pyrt.empty(5))
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        nn.init.kaiming_uniform_(w, mode="fan_avg")
    with pytest.raises(ValueError, match="Unsupported nonlinearity"):
        nn.init.calculate_gain("swish")


def test_calculate_gain_matches_torch():
    torch = pytest.importorskip("torch")
    for args in [("linear",), ("conv2d",), ("sigmoid",), ("tanh",), ("relu",), ("leaky_relu",),
                 ("leaky_relu", 0.2), ("selu",)]:
        assert nn.init.calculate_gain(*args) == pytest.approx(torch.nn.init.calculate_gain(*args))


# ---- whole models trained side by side with torch --------------------------------------------


def mlp(lib):
    return lib.nn.Sequential(lib.nn.Linear(784, 128), lib.nn.ReLU(), lib.nn.Linear(128, 10))


def cnn(lib):
    L = lib.nn
    return L.Sequential(L.Conv2d(1, 8, 3, padding=1), L.ReLU(), L.MaxPool2d(2),
                        L.Conv2d(8, 16, 3, padding=1), L.ReLU(), L.MaxPool2d(2), L.Flatten(),
                        L.Linear(784, 10))


def batches(model_name, steps, seed):
    """Random inputs labelled by a fixed random linear teacher, so there is something to learn:
    four batches, cycled."""
    r = rng(seed)
    shape = (64, 784) if model_name == "mlp" else (16, 1, 28, 28)
    xs = r.standard_normal((4,) + shape).astype(F32)
    teacher = r.standard_normal((784, 10))
    ys = np.argmax(xs.reshape(4, shape[0], 784) @ teacher, axis=-1)
    return [(xs[i % 4], ys[i % 4]) for i in range(steps)]


def make_optimizer(lib, name, params):
    if name == "sgd":
        return lib.optim.SGD(params, lr=0.02, momentum=0.9)
    return lib.optim.Adam(params, lr=1e-3)


def train_pyrt(model, opt, data):
    loss_fn, losses = nn.CrossEntropyLoss(), []
    for x, y in data:
        opt.zero_grad()
        loss = loss_fn(model(pyrt.tensor(x)), pyrt.tensor(y))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("model_name", ["mlp", "cnn"])
@pytest.mark.parametrize("opt_name", ["sgd", "adam"])
def test_training_matches_torch(model_name, opt_name):
    """20 steps from the same weights on the same batches: the losses agree to 1e-5 (the two
    sides round sums in different orders, a few float32 ulps per step, far below 1e-5)."""
    torch = pytest.importorskip("torch")
    build = {"mlp": mlp, "cnn": cnn}[model_name]
    pyrt.manual_seed(23)
    ours, theirs = build(pyrt), build(torch)
    copy_to_torch(ours, theirs)
    data = batches(model_name, 20, 24)

    losses = train_pyrt(ours, make_optimizer(pyrt, opt_name, ours.parameters()), data)

    opt = make_optimizer(torch, opt_name, theirs.parameters())
    loss_fn, torch_losses = torch.nn.CrossEntropyLoss(), []
    for x, y in data:
        opt.zero_grad()
        loss = loss_fn(theirs(torch.from_numpy(x)), torch.from_numpy(y))
        loss.backward()
        opt.step()
        torch_losses.append(loss.item())

    assert losses[-1] < 0.9 * losses[0]  # it learns
    np.testing.assert_allclose(losses, torch_losses, rtol=1e-5)
    # the weights to 1e-4 of their largest value: Adam divides by sqrt(v), so where a gradient
    # is nearly zero its rounding noise moves a weight by up to lr; measured 1e-5, 3e-7 for SGD
    for (name, p), tp in zip(ours.named_parameters(), theirs.parameters()):
        assert_close(p._data, tp.detach().numpy(), rtol=1e-4, what=name)


@pytest.mark.parametrize("model_name,opt_name", [("mlp", "sgd"), ("cnn", "adam")])
def test_training_is_bitwise_identical_at_any_thread_count(model_name, opt_name):
    build = {"mlp": mlp, "cnn": cnn}[model_name]
    data = batches(model_name, 3, 25)
    results = []
    for threads in THREADS:
        with pyrt.num_threads(threads):
            pyrt.manual_seed(26)
            model = build(pyrt)
            losses = train_pyrt(model, make_optimizer(pyrt, opt_name, model.parameters()),
                                data)
            results.append((losses, model.state_dict()))
    for losses, state in results[1:]:
        assert losses == results[0][0]
        for name in state:
            assert np.array_equal(state[name], results[0][1][name]), name


def test_optimizer_sees_model_parameters_after_load_state_dict():
    pyrt.manual_seed(27)
    model = mlp(pyrt)
    opt = optim.SGD(model.parameters(), lr=0.1)
    model.load_state_dict(mlp(pyrt).state_dict())
    before = copy.deepcopy(model.state_dict())
    train_pyrt(model, opt, batches("mlp", 1, 28))
    assert not np.array_equal(model[0].weight._data, before["0.weight"])


# ---- manual updates, learnable scalars, losses between two networks ---------------------------


def test_manual_sgd_with_in_place_operators_matches_torch():
    torch = pytest.importorskip("torch")
    r = rng(31)
    x = r.standard_normal((8, 3)).astype(F32)
    y = r.standard_normal((8, 2)).astype(F32)
    pyrt.manual_seed(31)
    ours = nn.Linear(3, 2)
    theirs = torch.nn.Linear(3, 2)
    copy_to_torch(ours, theirs)
    for _ in range(3):
        for model, lib in ((ours, pyrt), (theirs, torch)):
            model.zero_grad()
            mse = F.mse_loss if lib is pyrt else torch.nn.functional.mse_loss
            mse(model(lib.tensor(x)), lib.tensor(y)).backward()
            with lib.no_grad():  # the update of the PyTorch tutorials
                for i, p in enumerate(model.parameters()):
                    if i == 0:
                        p -= 0.1 * p.grad
                    else:
                        p.sub_(p.grad, alpha=0.1)
    for name, value in ours.state_dict().items():
        assert_close(value, theirs.state_dict()[name].numpy(), what=name)
    before = ours.weight.detach().numpy().copy()
    with pytest.raises(RuntimeError, match="leaf Variable"):
        ours.weight -= 0.1 * ours.weight.grad  # outside no_grad, as torch
    np.testing.assert_array_equal(ours.weight.detach().numpy(), before)


class _Scaled(nn.Module):
    """A learnable scalar (a temperature) times a Linear."""

    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(pyrt.tensor(1.5))
        self.fc = nn.Linear(3, 2)

    def forward(self, x):
        return self.fc(x) * self.scale


@pytest.mark.parametrize("opt_name", ["sgd", "adam"])
def test_zero_d_parameters_train_like_torch(opt_name):
    torch = pytest.importorskip("torch")
    assert nn.Parameter(pyrt.tensor(2.0)).shape == ()
    pyrt.manual_seed(32)
    ours = _Scaled()
    theirs = torch.nn.Module()
    theirs.scale = torch.nn.Parameter(torch.tensor(1.5))
    theirs.fc = torch.nn.Linear(3, 2)
    copy_to_torch(ours, theirs)
    assert ours.scale.shape == () and ours.state_dict()["scale"].shape == ()
    r = rng(32)
    x, labels = r.standard_normal((6, 3)).astype(F32), r.integers(0, 2, 6)

    def make(lib, model):
        if opt_name == "sgd":
            return lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        return lib.optim.Adam(model.parameters(), lr=0.01)

    opt_ours, opt_theirs = make(pyrt, ours), make(torch, theirs)
    for _ in range(3):
        for model, opt, lib, forward in (
                (ours, opt_ours, pyrt, ours),
                (theirs, opt_theirs, torch, lambda t: theirs.fc(t) * theirs.scale)):
            opt.zero_grad()
            ce = F.cross_entropy if lib is pyrt else torch.nn.functional.cross_entropy
            ce(forward(lib.tensor(x)), lib.tensor(labels)).backward()
            assert tuple(model.scale.grad.shape) == ()
            opt.step()
    for name, value in ours.state_dict().items():
        assert_close(value, theirs.state_dict()[name].numpy(), rtol=1e-5, what=name)
    # a checkpoint with 0-d values loads back
    ours.load_state_dict({**ours.state_dict(), "scale": np.array(3.0, F32)})
    assert ours.scale.shape == () and ours.scale.item() == 3.0


@pytest.mark.parametrize("name", ["MSELoss", "BCEWithLogitsLoss"])
def test_losses_between_two_networks_train_both_like_torch(name):
    torch = pytest.importorskip("torch")
    x = rng(33).standard_normal((5, 3)).astype(F32)
    pyrt.manual_seed(33)
    student, teacher = nn.Linear(3, 2), nn.Linear(3, 2)
    t_student, t_teacher = torch.nn.Linear(3, 2), torch.nn.Linear(3, 2)
    copy_to_torch(student, t_student)
    copy_to_torch(teacher, t_teacher)
    target = torch.sigmoid if name == "BCEWithLogitsLoss" else (lambda t: t)
    ours_target = (lambda t: t.sigmoid()) if name == "BCEWithLogitsLoss" else (lambda t: t)
    getattr(nn, name)()(student(pyrt.tensor(x)), ours_target(teacher(pyrt.tensor(x)))).backward()
    getattr(torch.nn, name)()(t_student(torch.tensor(x)),
                              target(t_teacher(torch.tensor(x)))).backward()
    for ours, theirs in ((student, t_student), (teacher, t_teacher)):
        for (pname, p), tp in zip(ours.named_parameters(), theirs.parameters()):
            assert_close(p.grad._data, tp.grad.numpy(), what=pname)
