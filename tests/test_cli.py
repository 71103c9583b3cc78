"""The command line: python -m pyrt train xor|mnist, end to end on a tiny data set."""

import json
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import pyrt
from pyrt.cli import main
from pyrt.cli.checkpoint import load_checkpoint, save_checkpoint
from pyrt.data import mnist as mnist_module
from pyrt.data import write_idx

ROOT = Path(__file__).resolve().parents[1]


def _pythonpath():
    """PYTHONPATH for a child process: this checkout first, then what the environment had
    (where the dependencies may be)."""
    return os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)


REQUIRED_KEYS = {"epochs", "train_seconds", "images_per_s", "test_accuracy", "final_loss",
                 "threads", "device", "model", "seed", "batch_size", "lr", "optimizer"}


def _learnable(n, rng):
    """Images whose label is the row of a bright bar: a model can learn it in an epoch."""
    labels = rng.integers(0, 10, n).astype(np.uint8)
    images = rng.integers(0, 60, (n, 28, 28)).astype(np.uint8)
    for image, label in zip(images, labels):
        image[2 + 2 * label: 5 + 2 * label, 4:24] = 255
    return images, labels


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("mnist")
    rng = np.random.default_rng(0)
    for split, n in (("train", 320), ("t10k", 100)):
        images, labels = _learnable(n, rng)
        write_idx(directory / f"{split}-images-idx3-ubyte.gz", images)
        write_idx(directory / f"{split}-labels-idx1-ubyte", labels)
    return directory


@pytest.fixture(autouse=True)
def keep_thread_count():
    before = pyrt.get_num_threads()
    yield
    pyrt.set_num_threads(before)


def run_cli(*args, env=None, timeout=120):
    return subprocess.run([sys.executable, "-m", "pyrt", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)


def run_json(capsys, *args):
    code = main(list(args))
    out = capsys.readouterr().out
    assert code == 0, out
    lines = out.strip().splitlines()
    assert len(lines) == 1, out
    return json.loads(lines[0])


# ---- MNIST -----------------------------------------------------------------------------------


@pytest.mark.parametrize("model", ["mlp", "cnn"])
def test_mnist_json_subprocess(data_dir, model):
    proc = run_cli("train", "mnist", "--data", str(data_dir), "--model", model, "--epochs", "1",
                   "--json", "--threads", "2")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)  # stdout is exactly one JSON object
    assert REQUIRED_KEYS <= set(result)
    assert result["model"] == model and result["epochs"] == 1 and result["threads"] == 2
    assert result["device"] == "cpu" and result["batch_size"] == 64
    assert result["optimizer"] == "sgd" and result["lr"] == 0.1
    assert result["train_seconds"] > 0 and result["images_per_s"] > 0
    assert 0.0 <= result["test_accuracy"] <= 1.0 and np.isfinite(result["final_loss"])
    assert result["steps"] == 5  # 320 images in batches of 64


def test_mnist_learns_and_prints_a_report(data_dir, capsys):
    assert main(["train", "mnist", "--data", str(data_dir), "--epochs", "2"]) == 0
    out = capsys.readouterr().out
    assert "epoch 1/2" in out and "epoch 2/2" in out and "test accuracy" in out
    result = run_json(capsys, "train", "mnist", "--data", str(data_dir), "--epochs", "2",
                      "--batch-size", "32", "--json")
    assert result["test_accuracy"] > 0.9


@pytest.mark.parametrize("kind", ["adam", "adamw"])
def test_mnist_adam_and_limit_steps(data_dir, capsys, kind):
    result = run_json(capsys, "train", "mnist", "--data", str(data_dir), "--optimizer", kind,
                      "--limit-steps", "3", "--json", "--threads", "1")
    assert result["optimizer"] == kind and result["lr"] == 1e-3
    assert result["steps"] == 3 and result["epochs"] == 0.6 and result["threads"] == 1


def _weights(path):
    return load_checkpoint(path)["model"]


def test_checkpoint_resume_equals_straight_run(data_dir, tmp_path, capsys):
    common = ["train", "mnist", "--data", str(data_dir), "--json"]
    run_json(capsys, *common, "--epochs", "1", "--save", str(tmp_path / "one.npz"))
    resumed = run_json(capsys, *common, "--epochs", "2", "--resume", str(tmp_path / "one.npz"),
                       "--save", str(tmp_path / "resumed.npz"))
    straight = run_json(capsys, *common, "--epochs", "2", "--save", str(tmp_path / "two.npz"))
    a, b = _weights(tmp_path / "resumed.npz"), _weights(tmp_path / "two.npz")
    assert a.keys() == b.keys()
    for name in a:
        np.testing.assert_array_equal(a[name], b[name])
    assert resumed["steps"] == 5 and resumed["epochs"] == 2
    assert resumed["test_accuracy"] == straight["test_accuracy"]

    # stopped in the middle of an epoch, resumed: still the same weights
    run_json(capsys, *common, "--epochs", "2", "--limit-steps", "7",
             "--save", str(tmp_path / "mid.npz"))
    assert load_checkpoint(tmp_path / "mid.npz")["step"] == 2
    run_json(capsys, *common, "--epochs", "2", "--resume", str(tmp_path / "mid.npz"),
             "--save", str(tmp_path / "mid-resumed.npz"))
    c = _weights(tmp_path / "mid-resumed.npz")
    for name in a:
        np.testing.assert_array_equal(c[name], b[name])


def test_resume_refuses_contradicting_settings(data_dir, tmp_path, capsys):
    path = tmp_path / "ck.npz"
    run_json(capsys, "train", "mnist", "--data", str(data_dir), "--limit-steps", "1", "--json",
             "--save", str(path))
    code = main(["train", "mnist", "--data", str(data_dir), "--resume", str(path),
                 "--model", "cnn"])
    assert code == 2
    assert "--model cnn contradicts the checkpoint" in capsys.readouterr().err


def test_resume_bad_checkpoint(data_dir, tmp_path, capsys):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a checkpoint")
    assert main(["train", "mnist", "--data", str(data_dir), "--resume", str(bad)]) == 2
    assert "not a pyrt checkpoint" in capsys.readouterr().err
    assert main(["train", "mnist", "--data", str(data_dir), "--resume",
                 str(tmp_path / "missing.npz")]) == 2
    assert "no such file" in capsys.readouterr().err


@pytest.mark.parametrize("sig,save", [(signal.SIGINT, None), (signal.SIGTERM, "mine.npz")])
def test_a_stop_signal_saves_a_checkpoint(data_dir, tmp_path, sig, save):
    # Ctrl-C, or SIGTERM from kill or timeout: a checkpoint at a step boundary, one line
    # saying how to continue (with --save when it was given), exit status 128 + the signal
    proc = subprocess.Popen(
        [sys.executable, "-m", "pyrt", "train", "mnist", "--data", str(data_dir),
         "--epochs", "100000", *(["--save", save] if save else [])],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": _pythonpath()},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().startswith("training mlp")  # the handler is in place
        assert proc.stdout.readline().startswith("epoch 1/")
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 128 + sig, err
    path = save or "pyrt-checkpoint.npz"
    assert f"checkpoint saved to {path}" in err and f"--resume {path}" in err
    assert ("--save" in err) == bool(save) and len(err.strip().splitlines()) == 1
    state = load_checkpoint(tmp_path / path)
    assert state["epoch"] >= 1 and state["settings"]["model"] == "mlp"


def test_resume_checks_what_it_reads(data_dir, tmp_path, capsys):
    common = ["train", "mnist", "--data", str(data_dir)]
    path = tmp_path / "ck.npz"
    assert main([*common, "--limit-steps", "1", "--json", "--save", str(path)]) == 0
    capsys.readouterr()
    good = load_checkpoint(path)
    for key, value in (("model", "resnet"), ("batch_size", 0), ("lr", -1.0), ("seed", "3")):
        state = {**good, "settings": {**good["settings"], key: value}}
        save_checkpoint(tmp_path / "bad.npz", state)
        assert main([*common, "--resume", str(tmp_path / "bad.npz")]) == 2
        err = capsys.readouterr().err
        assert f"not a checkpoint of 'pyrt train mnist' ({key} {value!r})" in err, err
    for key, value in (("epoch", -1), ("step", "3")):
        save_checkpoint(tmp_path / "bad.npz", {**good, key: value})
        assert main([*common, "--resume", str(tmp_path / "bad.npz")]) == 2
        assert f"({key} {value!r})" in capsys.readouterr().err
    # the weights of the other model: one line, not a dump of the state dict
    save_checkpoint(tmp_path / "bad.npz", {**good, "settings": {**good["settings"],
                                                                "model": "cnn"}})
    assert main([*common, "--resume", str(tmp_path / "bad.npz")]) == 2
    err = capsys.readouterr().err
    assert "does not fit the cnn model" in err and len(err.strip().splitlines()) == 1
    # a folder, a text file
    assert main([*common, "--resume", str(tmp_path)]) == 2
    assert "is a folder, not a pyrt checkpoint" in capsys.readouterr().err
    (tmp_path / "text.npz").write_text("hello")
    assert main([*common, "--resume", str(tmp_path / "text.npz")]) == 2
    err = capsys.readouterr().err
    assert "not a NumPy .npz archive" in err and "pickle" not in err
    # state dicts of the wrong type, an optimizer state its step could not use: one line
    groups = good["optimizer"]["param_groups"]
    for key, value in (("model", "weights"), ("optimizer", [1, 2]),
                       ("optimizer", {**good["optimizer"],
                                      "param_groups": [{**groups[0], "lr": -1.0}]})):
        save_checkpoint(tmp_path / "bad.npz", {**good, key: value})
        assert main([*common, "--resume", str(tmp_path / "bad.npz")]) == 2
        err = capsys.readouterr().err
        assert "does not fit the mlp model" in err and len(err.strip().splitlines()) == 1


def test_the_continue_command_can_be_pasted(tmp_path):
    from pyrt.cli import build_parser
    from pyrt.cli.train_mnist import _continue_command

    data, save = tmp_path / "my data", tmp_path / "run 1.npz"
    args = build_parser().parse_args([
        "train", "mnist", "--data", str(data), "--save", str(save), "--epochs", "3",
        "--device", "cuda", "--threads", "2", "--json", "--limit-steps", "5"])
    # quoted for the shell, and on the same device (the checkpoint does not record it)
    assert shlex.split(_continue_command(args, save)) == [
        "python", "-m", "pyrt", "train", "mnist", "--resume", str(save), "--epochs", "3",
        "--data", str(data), "--save", str(save), "--threads", "2", "--device", "cuda",
        "--json"]


def test_a_closed_stdout_is_not_a_traceback():
    # `python -m pyrt train xor | head -c 0`: the reader is gone before the result is written
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "pyrt", "train", "xor", "--json", "--limit-steps", "1"],
            cwd=ROOT, env={**os.environ, "PYTHONPATH": _pythonpath()}, stdout=write,
            stderr=subprocess.PIPE, text=True, timeout=120, check=False)
    finally:
        os.close(write)
    assert proc.returncode == 128 + signal.SIGPIPE
    assert proc.stderr == ""


def test_resuming_a_finished_run_says_so(data_dir, tmp_path, capsys):
    common = ["train", "mnist", "--data", str(data_dir), "--json"]
    run_json(capsys, *common, "--epochs", "1", "--save", str(tmp_path / "one.npz"))
    assert main([*common, "--epochs", "1", "--resume", str(tmp_path / "one.npz")]) == 2
    assert "has already trained 1 epoch(s)" in capsys.readouterr().err


def test_save_refuses_empty_paths_and_the_data(data_dir, tmp_path, capsys):
    common = ["train", "mnist", "--data", str(data_dir), "--limit-steps", "1"]
    assert main([*common, "--save", ""]) == 2
    assert "--save: the path is empty" in capsys.readouterr().err
    target = data_dir / "train-labels-idx1-ubyte"
    before = target.read_bytes()
    assert main([*common, "--save", str(target)]) == 2
    assert "is one of the data set's files" in capsys.readouterr().err
    assert target.read_bytes() == before


def test_a_checkpoint_that_cannot_be_written_is_reported_and_training_goes_on(
        data_dir, tmp_path, capsys, monkeypatch):
    from pyrt.cli import train_mnist

    def refuse(path, state):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(train_mnist, "save_checkpoint", refuse)
    assert main(["train", "mnist", "--data", str(data_dir), "--epochs", "2", "--json",
                 "--save", str(tmp_path / "ck.npz")]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["epochs"] == 2
    assert "warning: the checkpoint could not be written" in err and "No space left" in err


def test_invalid_thread_environment_is_one_line(data_dir):
    proc = run_cli("train", "xor", "--help",
                   env={**os.environ, "PYTHONPATH": _pythonpath(), "PYRT_NUM_THREADS": "0"})
    assert proc.returncode == 2
    assert proc.stderr.startswith("pyrt: ") and "PYRT_NUM_THREADS" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_no_data_exits_2_with_instructions(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("PYRT_DATA", raising=False)
    monkeypatch.setattr(mnist_module, "SYSTEM_DIR", tmp_path / "none")
    monkeypatch.setattr(mnist_module, "MIRRORS", ("http://127.0.0.1:1/",))
    assert main(["train", "mnist", "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "apt-get install dataset-fashion-mnist" in captured.err
    assert "--data DIR" in captured.err


def test_missing_data_dir_subprocess(tmp_path):
    proc = run_cli("train", "mnist", "--data", str(tmp_path / "nowhere"), "--json")
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert f"--data {tmp_path / 'nowhere'}: no such directory" in proc.stderr
    assert "Traceback" not in proc.stderr


def _cuda_usable():
    try:
        pyrt.zeros(1, device="cuda")
    except Exception:  # noqa: BLE001 (any failure means no usable GPU)
        return False
    return True


@pytest.mark.skipif(_cuda_usable(), reason="a CUDA device is usable here")
def test_device_cuda_without_gpu(data_dir):
    proc = run_cli("train", "mnist", "--data", str(data_dir), "--device", "cuda", "--json")
    assert proc.returncode == 2
    assert "--device cuda is not usable" in proc.stderr and "Traceback" not in proc.stderr
    assert proc.stdout == ""


@pytest.mark.parametrize("args, message", [
    (["--epochs", "0"], "expected a positive integer"),
    (["--lr", "inf"], "argument --lr: expected a positive number, got 'inf'"),
    (["--lr", "nan"], "argument --lr: expected a positive number, got 'nan'"),
    (["--momentum", "-0.5"], "argument --momentum: expected a non-negative number"),
    (["--threads", "0"], "argument --threads: expected an integer from 1 to 1024"),
    (["--threads", "100000"], "argument --threads: expected an integer from 1 to 1024"),
    # an unset shell variable: not the current folder, not a fresh start instead of a resume
    (["--data", ""], "argument --data: expected a directory, got an empty path"),
    (["--resume", ""], "argument --resume: expected a checkpoint file, got an empty path"),
])
def test_bad_arguments_exit_2(args, message, capsys):
    with pytest.raises(SystemExit) as info:
        main(["train", "mnist", *args])
    assert info.value.code == 2
    assert message in capsys.readouterr().err


def test_an_unusable_save_path_is_refused_before_training(data_dir, tmp_path, capsys,
                                                          monkeypatch):
    def no_loading(*args):
        raise AssertionError("the data was loaded before --save was checked")

    monkeypatch.setattr("pyrt.cli.train_mnist._load_data", no_loading)
    for path, message in ((tmp_path / "missing" / "c.npz", "does not exist"),
                          (tmp_path, "is a folder"),
                          (data_dir / "train-labels-idx1-ubyte" / "c.npz",
                           "is a file, not a folder")):
        assert main(["train", "mnist", "--data", str(data_dir), "--save", str(path)]) == 2
        err = capsys.readouterr().err
        assert f"pyrt: --save {path}: " in err and message in err


def test_momentum_with_adam_is_an_error(data_dir, capsys):
    assert main(["train", "mnist", "--data", str(data_dir), "--optimizer", "adam",
                 "--momentum", "0.5"]) == 2
    assert "--momentum applies to --optimizer sgd, not adam" in capsys.readouterr().err


def test_momentum_against_an_adam_checkpoint_says_why(data_dir, tmp_path, capsys):
    path = tmp_path / "adam.npz"
    run_json(capsys, "train", "mnist", "--data", str(data_dir), "--optimizer", "adam",
             "--limit-steps", "1", "--json", "--save", str(path))
    assert main(["train", "mnist", "--data", str(data_dir), "--resume", str(path),
                 "--momentum", "0.5"]) == 2
    err = capsys.readouterr().err
    assert "--momentum applies to --optimizer sgd, not adam" in err and "contradicts" not in err


def test_an_empty_split_is_an_error(tmp_path, capsys):
    rng = np.random.default_rng(3)
    for split, n in (("train", 64), ("t10k", 0)):
        images, labels = _learnable(n, rng)
        write_idx(tmp_path / f"{split}-images-idx3-ubyte", images)
        write_idx(tmp_path / f"{split}-labels-idx1-ubyte", labels)
    assert main(["train", "mnist", "--data", str(tmp_path), "--json"]) == 2
    captured = capsys.readouterr()
    assert f"the test set in {tmp_path} holds no images" in captured.err
    assert captured.out == ""


def test_a_diverged_run_still_prints_strict_json(capsys):
    code = main(["train", "xor", "--json", "--lr", "1e38", "--limit-steps", "20",
                 "--restart-after", "0"])
    assert code == 0
    out = capsys.readouterr().out
    result = json.loads(out, parse_constant=lambda c: pytest.fail(f"{c} in the JSON"))
    assert result["final_loss"] is None  # the loss diverged: NaN is not JSON


def test_ctrl_c_while_loading_exits_130_without_a_traceback(monkeypatch, capsys):
    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr("pyrt.cli.train_mnist._load_data", interrupted)
    assert main(["train", "mnist"]) == 130
    assert capsys.readouterr().err == "pyrt: interrupted\n"


# ---- XOR -------------------------------------------------------------------------------------


def test_xor_reaches_full_accuracy(capsys):
    result = run_json(capsys, "train", "xor", "--json")
    assert result["solved"] and result["accuracy"] == 1.0 and result["test_accuracy"] == 1.0
    assert REQUIRED_KEYS <= set(result)
    assert result["batch_size"] == 32 and result["lr"] == 0.01 and result["model"] == "xor-2-3-1"
    assert result["steps"] == 100 * result["epochs"]
    # images/s counts the rows trained: 3200 a 100-step epoch, whatever the batch size
    big = run_json(capsys, "train", "xor", "--json", "--batch-size", "5000",
                   "--limit-steps", "3", "--restart-after", "0")
    # (train_seconds is rounded to the microsecond: the tolerance allows for it)
    seconds = big["train_seconds"]
    assert big["images_per_s"] == pytest.approx(3 * 3200 / seconds,
                                                rel=1e-3 + 1e-6 / seconds)


def test_xor_step_budget_and_report(capsys):
    assert main(["train", "xor", "--limit-steps", "150", "--restart-after", "0"]) == 0
    out = capsys.readouterr().out
    assert "after 150 steps" in out and "us/step" in out


# ---- checkpoint files ------------------------------------------------------------------------


def test_checkpoint_file_round_trip(tmp_path):
    state = {
        "model": {"0.weight": np.arange(6, dtype=np.float32).reshape(2, 3)},
        "optimizer": {"state": {0: {"momentum_buffer": np.ones(3, np.float32), "step": 4}},
                      "param_groups": [{"lr": 0.1, "betas": (0.9, 0.999), "params": [0]}]},
        "scalar": np.float32(2.5), "tensor": pyrt.tensor([1.0, 2.0]), "none": None,
        "tensor0d": pyrt.tensor(3.0),
        "epoch": 3, "name": "mlp",
    }
    path = save_checkpoint(tmp_path / "ck", state)
    assert path == tmp_path / "ck" and list(tmp_path.iterdir()) == [path]  # no suffix added
    back = load_checkpoint(path)
    assert back["format"] == "pyrt-checkpoint" and back["version"] == 1
    np.testing.assert_array_equal(back["model"]["0.weight"], state["model"]["0.weight"])
    assert list(back["optimizer"]["state"]) == [0]  # integer keys stay integers
    assert back["optimizer"]["param_groups"][0]["betas"] == (0.9, 0.999)
    assert back["scalar"] == np.float32(2.5) and isinstance(back["scalar"], np.float32)
    assert isinstance(back["tensor"], pyrt.Tensor)
    np.testing.assert_array_equal(back["tensor"].numpy(), [1.0, 2.0])
    assert back["tensor0d"].shape == () and back["tensor0d"].item() == 3.0
    assert back["none"] is None and back["epoch"] == 3 and back["name"] == "mlp"


def test_checkpoint_from_a_newer_version(tmp_path, monkeypatch):
    from pyrt.cli import checkpoint

    monkeypatch.setattr(checkpoint, "VERSION", 99)
    save_checkpoint(tmp_path / "new.npz", {})
    monkeypatch.setattr(checkpoint, "VERSION", 1)
    with pytest.raises(ValueError, match="version 99 is newer"):
        load_checkpoint(tmp_path / "new.npz")


# ---- progress bar ----------------------------------------------------------------------------


def test_progress_bar(capsys):
    from pyrt.cli.progress import ProgressBar

    assert not ProgressBar.wanted(json_output=True)
    assert not ProgressBar.wanted(json_output=False)  # stderr is captured: not a terminal
    quiet = ProgressBar(100, "epoch 1/1", enabled=False)
    quiet.update(10, pyrt.tensor(0.5))
    quiet.close()
    assert capsys.readouterr().err == ""
    bar = ProgressBar(100, "epoch 1/1", enabled=True)
    for _ in range(10):
        bar.update(10, pyrt.tensor(0.5))
    bar.close()
    err = capsys.readouterr().err
    assert "epoch 1/1" in err and "img" in err


def test_resume_checkpoint_of_something_else(data_dir, tmp_path, capsys):
    save_checkpoint(tmp_path / "other.npz", {"weights": np.zeros(3)})
    assert main(["train", "mnist", "--data", str(data_dir), "--resume",
                 str(tmp_path / "other.npz")]) == 2
    assert "not a checkpoint of 'pyrt train mnist'" in capsys.readouterr().err


def test_evaluate_counts_every_batch():
    # several evaluation batches and a partial last one, against the model applied directly
    from pyrt.cli import train_mnist
    from pyrt.cli.models import mlp

    pyrt.manual_seed(0)
    model = mlp()
    rng = np.random.default_rng(0)
    images = rng.standard_normal((2 * train_mnist.EVAL_BATCH + 37, 1, 28, 28)).astype(np.float32)
    with pyrt.no_grad():
        predicted = model(pyrt.tensor(images)).numpy().argmax(axis=1)
    labels = predicted.copy()
    labels[::3] = (labels[::3] + 1) % 10  # a third wrong
    expected = np.count_nonzero(predicted == labels) / len(images)
    assert train_mnist.evaluate(model, images, labels, "cpu") == expected
    assert model.training  # left in training mode
    assert train_mnist.evaluate(model, images[:0], labels[:0], "cpu") == 0.0
