"""pyrt.save and pyrt.load: round trips of tensors, arrays and state dicts through paths and
file objects, training resumed from a saved model and optimizer, the CLI's checkpoints, and
the errors for what cannot be stored or is not a file of pyrt's (whole objects, pickled:
tests/test_serialization_objects.py)."""

import io
import json
import pickle

import numpy as np
import pytest

import pyrt
from pyrt import nn, optim, serialization
from pyrt.cli.checkpoint import save_checkpoint


def test_round_trip_of_nested_values(tmp_path):
    value = {
        "weights": pyrt.tensor([[1.0, 2.0]], requires_grad=True),
        "labels": pyrt.tensor([3, 1]),
        "scalar": pyrt.tensor(2.5),
        "array": np.arange(6, dtype=np.float64).reshape(2, 3),
        "numpy scalar": np.int32(7),
        "ints": {0: (1, 2.5, "x", None, True)},
        "list": [pyrt.ones(1), []],
    }
    pyrt.save(value, tmp_path / "v.pt")
    back = pyrt.load(tmp_path / "v.pt")
    assert list(back) == list(value)
    assert back["weights"].requires_grad and not back["labels"].requires_grad
    np.testing.assert_array_equal(back["weights"].detach().numpy(), [[1.0, 2.0]])
    assert back["labels"].dtype == np.int64 and back["labels"].tolist() == [3, 1]
    assert back["scalar"].shape == () and back["scalar"].item() == 2.5
    assert back["array"].dtype == np.float64
    np.testing.assert_array_equal(back["array"], value["array"])
    assert back["numpy scalar"] == 7 and isinstance(back["numpy scalar"], np.int32)
    assert back["ints"] == {0: (1, 2.5, "x", None, True)}  # integer keys, tuples kept
    assert isinstance(back["list"][0], pyrt.Tensor) and back["list"][1] == []
    # a bare tensor, and a file object instead of a path
    buffer = io.BytesIO()
    pyrt.save(pyrt.arange(4), buffer)
    buffer.seek(0)
    assert pyrt.load(buffer).tolist() == [0, 1, 2, 3]


def test_what_was_shared_when_saved_is_shared_when_loaded(tmp_path):
    """As torch.save keeps storage: one tensor under two names loads as one tensor, a
    tensor and its detached copy share their data again, an array met twice is one array,
    each stored once; tensors that only hold equal values stay apart."""
    weight = pyrt.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    array = np.arange(3.0)
    value = {"encoder": weight, "decoder": weight, "frozen": weight.detach(),
             "equal": pyrt.tensor([[1.0, 2.0], [3.0, 4.0]]), "array": array,
             "arrays": [array, array]}
    pyrt.save(value, tmp_path / "shared.pt")
    with np.load(tmp_path / "shared.pt") as npz:
        assert len([k for k in npz.files if k != "meta"]) == 3  # weight, equal, array
    back = pyrt.load(tmp_path / "shared.pt")
    assert back["encoder"] is back["decoder"] and back["encoder"].requires_grad
    assert back["frozen"] is not back["encoder"] and not back["frozen"].requires_grad
    assert back["array"] is back["arrays"][0] is back["arrays"][1]
    back["frozen"].data[0, 0] = 9.0  # writes through to the tensor whose data it shares
    assert back["encoder"].detach().numpy()[0, 0] == 9.0
    assert back["equal"].numpy()[0, 0] == 1.0
    # a model's tied weight, saved as its parameters, loads as one parameter
    model = nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 3))
    model[1].weight = model[0].weight
    pyrt.save(dict(model.named_parameters(remove_duplicate=False)), tmp_path / "tied.pt")
    state = pyrt.load(tmp_path / "tied.pt")
    assert state["0.weight"] is state["1.weight"]


def test_a_saved_model_and_optimizer_resume_training_exactly(tmp_path):
    def make():
        pyrt.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
        return model, optim.Adam(model.parameters(), lr=0.01)

    rng = np.random.default_rng(0)
    batches = [(pyrt.tensor(rng.standard_normal((5, 4)).astype(np.float32)),
                pyrt.tensor(rng.integers(0, 3, 5))) for _ in range(6)]

    def train(model, opt, part):
        for x, y in part:
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()

    straight, opt = make()
    train(straight, opt, batches)
    first, opt = make()
    train(first, opt, batches[:3])
    pyrt.save({"model": first.state_dict(), "optimizer": opt.state_dict()}, tmp_path / "m")
    state = pyrt.load(tmp_path / "m")
    resumed, opt = make()
    resumed.load_state_dict(state["model"])
    opt.load_state_dict(state["optimizer"])
    train(resumed, opt, batches[3:])
    for (name, a), b in zip(straight.state_dict().items(), resumed.state_dict().values()):
        assert np.array_equal(a, b), name


def test_cli_checkpoints_load_as_their_state(tmp_path):
    save_checkpoint(tmp_path / "ck.npz", {"model": {"w": np.ones(2, np.float32)}, "epoch": 3})
    state = pyrt.load(tmp_path / "ck.npz")
    assert state["format"] == "pyrt-checkpoint" and state["epoch"] == 3
    np.testing.assert_array_equal(state["model"]["w"], [1.0, 1.0])


def test_saving_leaves_no_file_behind_when_it_fails(tmp_path):
    with pytest.raises((AttributeError, pickle.PicklingError), match="lambda"):
        pyrt.save({"x": lambda: 1}, tmp_path / "bad")
    assert list(tmp_path.iterdir()) == []
    # the metadata alone still takes only plain values (the CLI's checkpoints)
    with pytest.raises(TypeError, match="cannot store a object"):
        serialization.write(tmp_path / "bad", {"x": object()})
    with pytest.raises(TypeError, match="dtype object"):
        serialization.write(tmp_path / "bad", {"x": np.array([None])})
    assert list(tmp_path.iterdir()) == []


def test_loading_what_is_not_a_pyrt_file_names_it(tmp_path):
    with pytest.raises(FileNotFoundError):
        pyrt.load(tmp_path / "missing")
    with pytest.raises(ValueError, match="is a folder"):
        pyrt.load(tmp_path)
    text = tmp_path / "text"
    text.write_text("hello")
    with pytest.raises(ValueError, match=f"{text}: not a file written by pyrt.save"):
        pyrt.load(text)
    np.savez(tmp_path / "plain.npz", a=np.zeros(2))
    with pytest.raises(ValueError, match="no 'meta' entry"):
        pyrt.load(tmp_path / "plain.npz")
    serialization.write(tmp_path / "other.npz", {"format": "other"})
    with pytest.raises(ValueError, match="format 'other'"):
        pyrt.load(tmp_path / "other.npz")
    serialization.write(tmp_path / "newer.npz", {"format": "pyrt", "version": 99, "value": 1})
    with pytest.raises(ValueError, match="version 99 is newer"):
        pyrt.load(tmp_path / "newer.npz")
    for meta in ("{not json", json.dumps({"format": "pyrt"})):  # a dict not encoded as one
        np.savez(tmp_path / "broken.npz", meta=np.array(meta))
        with pytest.raises(ValueError, match="corrupt metadata"):
            pyrt.load(tmp_path / "broken.npz")
    with pytest.raises(ValueError, match="device must be"):
        pyrt.save(1, tmp_path / "one") or pyrt.load(tmp_path / "one", map_location="tpu")
