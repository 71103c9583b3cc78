"""Module.state_dict() as torch's: detached tensors sharing memory with the parameters and
buffers (or, with keep_vars=True, those themselves), destination and prefix, _metadata; its
round trips through pyrt.save/pyrt.load, deepcopy, pickle, the training CLI's checkpoints
and torch's modules."""

import copy
import io
import pickle
from collections import OrderedDict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
from pyrt import nn
from pyrt.cli.checkpoint import load_checkpoint, save_checkpoint

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="needs torch")


def models(lib):
    """The same modules built from pyrt.nn or torch.nn: their state dicts have equal keys."""
    return {
        "linear": lambda: lib.nn.Linear(4, 3),
        "conv": lambda: lib.nn.Conv2d(2, 3, 3, padding=1),
        "batchnorm": lambda: lib.nn.BatchNorm2d(3),
        "lstm": lambda: lib.nn.LSTM(3, 4, num_layers=2),
        "sequential": lambda: lib.nn.Sequential(
            lib.nn.Linear(4, 5), lib.nn.ReLU(),
            lib.nn.Sequential(lib.nn.Linear(5, 2), lib.nn.BatchNorm1d(2))),
    }


NAMES = list(models(pyrt))


@pytest.mark.parametrize("name", NAMES)
def test_values_are_detached_tensors_sharing_memory(name):
    pyrt.manual_seed(0)
    module = models(pyrt)[name]()
    own = dict(module.named_parameters())
    own.update(module.named_buffers())
    state = module.state_dict()
    assert type(state) is OrderedDict and list(state) == list(own)
    for key, value in state.items():
        assert type(value) is pyrt.Tensor and not value.requires_grad and value.grad_fn is None
        assert value._data is own[key]._data and value is not own[key]
        assert value.shape == own[key].shape and value.device == own[key].device


def test_write_through_state_dict_changes_the_module():
    lin = nn.Linear(3, 2)
    state = lin.state_dict()
    state["weight"].fill_(0)
    state["bias"].copy_(pyrt.tensor([1.0, 2.0]))
    assert np.array_equal(lin.weight._data, np.zeros((2, 3), np.float32))
    assert np.array_equal(lin.bias._data, [1.0, 2.0])
    bn = nn.BatchNorm1d(2)
    bn.state_dict()["running_mean"].add_(3.0)
    assert np.array_equal(bn.running_mean._data, [3.0, 3.0])
    # clone() is a copy that no longer follows the module
    snapshot = lin.state_dict()["weight"].clone()
    lin.weight._data += 1
    assert np.array_equal(snapshot._data, np.zeros((2, 3), np.float32))


def test_keep_vars_gives_the_parameters_and_buffers():
    bn = nn.BatchNorm1d(2)
    state = bn.state_dict(keep_vars=True)
    assert state["weight"] is bn.weight and state["running_var"] is bn.running_var
    assert state["weight"].requires_grad and isinstance(state["weight"], nn.Parameter)


def test_prefix_destination_and_metadata():
    net = nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.Linear(3, 1)))
    state = net.state_dict(prefix="net.")
    assert list(state) == ["net.0.weight", "net.0.bias", "net.1.0.weight", "net.1.0.bias"]
    assert list(state._metadata) == ["net", "net.0", "net.1", "net.1.0"]
    destination = {"other": 1}
    result = net[0].state_dict(destination=destination, prefix="a.")
    assert result is destination and list(result) == ["other", "a.weight", "a.bias"]
    assert list(net.state_dict()._metadata) == ["", "0", "1", "1.0"]
    with pytest.raises(TypeError, match="prefix"):
        net.state_dict(prefix=3)
    # a tied weight is under each name, one memory
    tied = nn.Sequential(nn.Linear(2, 2, bias=False))
    tied.append(tied[0])
    state = tied.state_dict()
    assert list(state) == ["0.weight", "1.weight"] and state["0.weight"]._data is \
        state["1.weight"]._data


@needs_torch
@pytest.mark.parametrize("name", NAMES)
def test_equal_to_torchs_and_loads_both_ways(name):
    pyrt.manual_seed(3)
    torch.manual_seed(3)
    ours, theirs = models(pyrt)[name](), models(torch)[name]()
    theirs.load_state_dict({k: torch.from_numpy(v.numpy().copy())
                            for k, v in ours.state_dict().items()})
    mine, torchs = ours.state_dict(), theirs.state_dict()
    assert list(mine) == list(torchs)
    assert list(mine._metadata) == list(torchs._metadata)
    for key, value in mine.items():
        assert tuple(value.shape) == tuple(torchs[key].shape)
        assert value.requires_grad == torchs[key].requires_grad
        assert np.array_equal(value.numpy(), torchs[key].numpy()), key
    with torch.no_grad():
        for value in theirs.parameters():
            value.mul_(2)
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    for key, value in ours.state_dict().items():
        assert np.array_equal(value.numpy(), theirs.state_dict()[key].numpy()), key


@settings(max_examples=20, deadline=None, derandomize=True)
@given(st.integers(1, 6), st.integers(1, 6), st.booleans())
def test_save_load_round_trip(n_in, n_out, bias):
    pyrt.manual_seed(n_in * 7 + n_out)
    lin = nn.Sequential(nn.Linear(n_in, n_out, bias=bias), nn.BatchNorm1d(n_out))
    buffer = io.BytesIO()
    pyrt.save(lin.state_dict(), buffer)
    buffer.seek(0)
    loaded = pyrt.load(buffer)
    assert list(loaded) == list(lin.state_dict())
    for key, value in lin.state_dict().items():
        assert type(loaded[key]) is pyrt.Tensor and not loaded[key].requires_grad
        assert loaded[key].dtype == value.dtype
        assert np.array_equal(loaded[key]._data, value._data), key
    other = nn.Sequential(nn.Linear(n_in, n_out, bias=bias), nn.BatchNorm1d(n_out))
    other.load_state_dict(loaded)
    for key, value in other.state_dict().items():
        assert np.array_equal(value._data, lin.state_dict()[key]._data), key


def test_older_files_of_arrays_still_load():
    lin = nn.Linear(3, 2)
    arrays = OrderedDict((k, v.numpy().copy()) for k, v in lin.state_dict().items())
    buffer = io.BytesIO()
    pyrt.save(arrays, buffer)
    buffer.seek(0)
    loaded = pyrt.load(buffer)
    assert all(type(v) is np.ndarray for v in loaded.values())
    other = nn.Linear(3, 2)
    other.load_state_dict(loaded)
    assert np.array_equal(other.weight._data, lin.weight._data)


def test_keep_vars_saves_and_loads():
    lin = nn.Linear(2, 2)
    buffer = io.BytesIO()
    pyrt.save(lin.state_dict(keep_vars=True), buffer)
    buffer.seek(0)
    loaded = pyrt.load(buffer)
    assert loaded["weight"].requires_grad
    assert np.array_equal(loaded["weight"]._data, lin.weight._data)


def test_checkpoint_round_trip_and_old_checkpoints(tmp_path):
    lin = nn.Linear(3, 2)
    save_checkpoint(tmp_path / "new.ckpt", {"model": lin.state_dict()})
    save_checkpoint(tmp_path / "old.ckpt",
                    {"model": {k: v.numpy().copy() for k, v in lin.state_dict().items()}})
    for name, kind in (("new.ckpt", pyrt.Tensor), ("old.ckpt", np.ndarray)):
        saved = load_checkpoint(tmp_path / name)
        assert all(type(v) is kind for v in saved["model"].values())
        other = nn.Linear(3, 2)
        other.load_state_dict(saved["model"])
        assert np.array_equal(other.weight._data, lin.weight._data)
        assert np.array_equal(other.bias._data, lin.bias._data)


@pytest.mark.parametrize("clone", [copy.deepcopy, lambda s: pickle.loads(pickle.dumps(s))])
def test_deepcopy_and_pickle_are_independent_snapshots(clone):
    bn = nn.BatchNorm1d(3)
    snapshot = clone(bn.state_dict())
    assert type(snapshot) is OrderedDict
    bn.running_mean._data += 5
    bn.weight._data *= 2
    assert np.array_equal(snapshot["running_mean"]._data, np.zeros(3, np.float32))
    assert np.array_equal(snapshot["weight"]._data, np.ones(3, np.float32))
    assert all(type(v) is pyrt.Tensor and not v.requires_grad for v in snapshot.values())
    bn.load_state_dict(snapshot)
    assert np.array_equal(bn.weight._data, np.ones(3, np.float32))


def test_data_parallel_prefix():
    model = nn.DataParallel(nn.Linear(2, 2))
    state = model.state_dict()
    assert list(state) == ["module.weight", "module.bias"]
    assert state["module.weight"]._data is model.module.weight._data
