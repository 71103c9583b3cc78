"""pyrt.save and pyrt.load of whole objects (models, optimizers, classes of the user's),
pickled beside their tensors: round trips that give the same outputs and keep training,
shared tensors loading shared, weights_only refusing what it was not told is safe (as
torch.load since 2.6), the allowlist, and files written before whole objects were saved."""

import collections
import io
import json
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
from pyrt import nn, optim, serialization
from pyrt.nn.buffer import Buffer

try:
    import torch
except ImportError:  # the comparisons with torch are skipped
    torch = None


class Record:
    """A class of the user's, holding tensors, arrays and NumPy scalars."""

    def __init__(self, weight, array, scalar, note):
        self.weight, self.array, self.scalar, self.note = weight, array, scalar, note


def round_trip(obj, **load_options):
    buffer = io.BytesIO()
    pyrt.save(obj, buffer)
    buffer.seek(0)
    return pyrt.load(buffer, **load_options)


def cnn():
    return nn.Sequential(nn.Conv2d(1, 3, 3, padding=1), nn.BatchNorm2d(3), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(12, 4))


@given(st.integers(0, 2**31 - 1), st.integers(1, 6))
@settings(max_examples=10, deadline=None)
def test_a_saved_model_gives_the_same_outputs_and_keeps_training(seed, batch):
    """A CNN and its Adam optimizer, saved whole after two steps and loaded: the same
    outputs, and four more steps on both give the same weights (the loaded optimizer updates
    the loaded model's parameters, its state carried over)."""
    pyrt.manual_seed(seed)
    rng = np.random.default_rng(seed)
    model = cnn()
    opt = optim.Adam(model.parameters(), lr=0.01)
    data = [(pyrt.tensor(rng.standard_normal((batch, 1, 4, 4)).astype(np.float32)),
             pyrt.tensor(rng.integers(0, 4, batch))) for _ in range(6)]

    def step(model, opt, x, y):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    for x, y in data[:2]:
        step(model, opt, x, y)
    back = round_trip({"model": model, "optimizer": opt, "epoch": 2}, weights_only=False)
    copy, copy_opt = back["model"], back["optimizer"]
    assert back["epoch"] == 2 and type(copy) is nn.Sequential
    assert [type(p) for p in copy.parameters()] == [nn.Parameter] * 6
    assert all(a is b for a, b in zip(copy_opt.param_groups[0]["params"], copy.parameters(),
                                      strict=True))
    for m in (model, copy):
        m.eval()
    x = data[2][0]
    np.testing.assert_array_equal(copy(x).detach().numpy(), model(x).detach().numpy())
    for m in (model, copy):
        m.train()
    for x, y in data[2:]:
        step(model, opt, x, y)
        step(copy, copy_opt, x, y)
    for (name, a), b in zip(model.state_dict().items(), copy.state_dict().values(),
                            strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=name)


def test_optimizer_state_round_trips():
    pyrt.manual_seed(0)
    model = nn.Linear(3, 2)
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(pyrt.ones(1, 3)).sum().backward()
    opt.step()
    back = round_trip(opt, weights_only=False)
    assert type(back) is optim.SGD and back.defaults == opt.defaults
    for p, q in zip(opt.param_groups[0]["params"], back.param_groups[0]["params"],
                    strict=True):
        np.testing.assert_array_equal(np.asarray(back.state[q]["momentum_buffer"]),
                                      np.asarray(opt.state[p]["momentum_buffer"]))
        assert q.requires_grad and q.grad is None  # (.grad is not saved, as torch's)


def test_what_was_shared_when_saved_is_shared_when_loaded():
    weight = nn.Parameter(np.arange(4, dtype=np.float32))
    tied = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
    tied[1].weight = tied[0].weight
    array = np.arange(3.0)
    buffer = Buffer(pyrt.zeros(2), persistent=False)
    value = Record(weight, array, np.int32(7), "note")
    value.again = weight
    value.detached = weight.detach()  # a tensor of its own on the same data
    value.arrays = [array, array]
    value.model, value.buffer, value.counts = tied, buffer, collections.Counter("aab")
    back = round_trip(value, weights_only=False)
    assert back.weight is back.again and type(back.weight) is nn.Parameter
    assert back.weight.requires_grad and not back.detached.requires_grad
    assert back.detached is not back.weight
    back.detached._data[0] = 9.0
    assert back.weight.detach().numpy()[0] == 9.0
    assert back.array is back.arrays[0] is back.arrays[1] and back.array.dtype == np.float64
    assert back.scalar == 7 and isinstance(back.scalar, np.int32) and back.note == "note"
    assert back.model[0].weight is back.model[1].weight
    assert len(list(back.model.parameters())) == 3
    assert type(back.buffer) is Buffer and back.buffer.persistent is False
    assert back.counts == collections.Counter("aab")
    # each array is stored once: the parameter, the linear layers' three, array, buffer,
    # the scalar, and the pickle
    buffer_file = io.BytesIO()
    pyrt.save(value, buffer_file)
    buffer_file.seek(0)
    with np.load(buffer_file) as npz:
        assert len([k for k in npz.files if k != "meta"]) == 8


def test_weights_only_refuses_a_pickled_object_as_torch_does():
    model = nn.Sequential(nn.Linear(2, 2))
    for options in ({}, {"weights_only": True}, {"weights_only": None}):
        with pytest.raises(pickle.UnpicklingError) as error:
            round_trip(model, **options)
        message = str(error.value)
        assert message.startswith("Weights only load failed.")
        assert "`weights_only` set to `False`" in message
        assert "only if you trust the source" in message
        assert ("Unsupported global: GLOBAL pyrt.nn.layers.Sequential was not an allowed "
                "global by default. Please use `pyrt.serialization.add_safe_globals("
                "[pyrt.nn.layers.Sequential])`") in message
    if torch is not None:  # torch's own refusal, for the wording
        buffer = io.BytesIO()
        torch.save(torch.nn.Sequential(torch.nn.Linear(2, 2)), buffer)
        buffer.seek(0)
        with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
            torch.load(buffer)


def test_safe_globals_allow_listed_classes():
    model = nn.Sequential(nn.Linear(2, 3))
    layers = [nn.Sequential, nn.Linear]
    with serialization.safe_globals(layers):
        back = round_trip(model)
    assert serialization.get_safe_globals() == []
    np.testing.assert_array_equal(back[0].weight.detach().numpy(),
                                  model[0].weight.detach().numpy())
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL pyrt.nn.layers.Linear"):
        with serialization.safe_globals([nn.Sequential]):
            round_trip(model)
    record = Record(pyrt.ones(2), np.zeros(2), np.float64(1.5), "x")
    try:
        serialization.add_safe_globals([(Record, f"{__name__}.Record")])
        assert serialization.get_safe_globals() == [Record]
        back = round_trip(record)  # arrays and NumPy scalars need no NumPy global
        assert back.scalar == 1.5 and back.array.tolist() == [0.0, 0.0]
        assert isinstance(back.weight, pyrt.Tensor)
        serialization.add_safe_globals([(len, "somewhere.length")])
        assert serialization.get_safe_globals() == [Record, (len, "somewhere.length")]
    finally:
        serialization.clear_safe_globals()
    assert serialization.get_safe_globals() == []
    with pytest.raises(pickle.UnpicklingError, match="Record was not an allowed global"):
        round_trip(record)
    # an optimizer: its state is a defaultdict(dict), allowed by default
    opt = optim.SGD(model.parameters(), lr=0.1)
    with serialization.safe_globals([optim.SGD]):
        assert round_trip(opt).defaults["lr"] == 0.1


def test_safe_globals_errors():
    for call in (serialization.add_safe_globals, serialization.safe_globals):
        with pytest.raises(TypeError, match="safe_globals must be a list"):
            call(nn.Linear)
        with pytest.raises(TypeError, match="expected a class or a function, got int"):
            call([1])
        with pytest.raises(TypeError, match="expected \\(class or function, str\\) pairs"):
            call([(nn.Linear, 3)])
    assert serialization.get_safe_globals() == []


def test_weights_only_files_keep_their_format_and_load_either_way(tmp_path):
    """Tensors and containers are still written as JSON and arrays, version 1, with no
    pickle; a file written so before whole objects were saved loads as it did."""
    state = {"w": pyrt.tensor([[1.0, 2.0]], requires_grad=True), "step": 3}
    pyrt.save(state, tmp_path / "state.pt")
    with np.load(tmp_path / "state.pt") as npz:
        meta = json.loads(str(npz["meta"]))
        assert sorted(npz.files) == ["a0", "meta"]
    assert meta == {"__dict__": [["format", "pyrt"], ["version", 1], ["value", {"__dict__": [
        ["w", {"__tensor__": "a0", "requires_grad": True}], ["step", 3]]}]]}
    for weights_only in (None, True, False):
        back = pyrt.load(tmp_path / "state.pt", weights_only=weights_only)
        assert back["step"] == 3 and back["w"].requires_grad
    old = io.BytesIO()  # as pyrt.save wrote it before
    np.savez(old, meta=np.array(json.dumps(meta)), a0=np.array([[5.0, 6.0]], np.float32))
    old.seek(0)
    assert pyrt.load(old)["w"].tolist() == [[5.0, 6.0]]


def test_map_location_moves_pickled_tensors():
    model = nn.Linear(2, 2)
    back = round_trip(model, weights_only=False, map_location="cpu")
    assert back.weight.device == "cpu"
    with pytest.raises(ValueError, match="device must be"):
        round_trip(model, weights_only=False, map_location="tpu")


def crafted(pickled, **arrays):
    """A version-2 file holding the pickle bytes `pickled` beside `arrays`."""
    meta = {"__dict__": [["format", "pyrt"], ["version", 2], ["pickle", "p"]]}
    buffer = io.BytesIO()
    np.savez(buffer, meta=np.array(json.dumps(meta)),
             p=np.frombuffer(pickled, np.uint8), **arrays)
    buffer.seek(0)
    return buffer


class _IdPickler(pickle.Pickler):
    """Pickles one persistent id: the object `ids[0]` stands for."""

    def __init__(self, file, ids):
        super().__init__(file, protocol=4)
        self.ids = ids

    def persistent_id(self, obj):
        return self.ids.get(id(obj))


def pickled_ids(pid):
    marker = object()
    out = io.BytesIO()
    _IdPickler(out, {id(marker): pid}).dump([marker])
    return out.getvalue()


def test_corrupt_pickled_files_are_refused():
    float_array = np.ones(2, np.float32)
    bad_ids = [("tensor", 0, "missing", False, None, None),
               ("tensor", 0, "a0", "yes", None, None),
               ("tensor", 0, "a0", False, dict, None),
               ("tensor", [0], "a0", False, None, None),
               ("array", 3), ("what", "a0"), "a0"]
    for pid in bad_ids:
        with pytest.raises(pickle.UnpicklingError, match="unknown persistent id"):
            pyrt.load(crafted(pickled_ids(pid), a0=float_array), weights_only=False)
    with pytest.raises(pickle.UnpicklingError, match="corrupt tensor.*int64 that requires"):
        pyrt.load(crafted(pickled_ids(("tensor", 0, "a0", True, None, None)),
                          a0=np.arange(2)), weights_only=False)
    good = pyrt.load(crafted(pickled_ids(("tensor", 0, "a0", True, None, None)),
                             a0=float_array))
    assert good[0].requires_grad and good[0].tolist() == [1.0, 1.0]
    meta = {"__dict__": [["format", "pyrt"], ["version", 2], ["pickle", "a0"]]}
    buffer = io.BytesIO()
    np.savez(buffer, meta=np.array(json.dumps(meta)), a0=float_array)
    buffer.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="no pickle in array 'a0'"):
        pyrt.load(buffer)
    # a pickle that calls a function not allowed: refused before it runs
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL os.system was not an allowed"):
        pyrt.load(crafted(b"\x80\x04cos\nsystem\n\x8c\x04true\x85R."))


def test_an_older_pyrt_is_told_to_upgrade(tmp_path):
    """A pickled file is version 2: pyrt.load of version 1 says it is newer, not corrupt."""
    pyrt.save(Record(pyrt.ones(1), None, None, ""), tmp_path / "r.pt")
    top = serialization.read(tmp_path / "r.pt")
    assert top["version"] == serialization.PICKLE_VERSION == 2 and "value" not in top
