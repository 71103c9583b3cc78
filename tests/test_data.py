"""pyrt.data: IDX files, finding and loading MNIST-format data, the XOR task, DataLoader."""

import functools
import gzip
import hashlib
import http.server
import struct
import threading
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
from pyrt.data import DataLoader, DatasetNotFoundError, load_mnist, make_xor, read_idx, write_idx
from pyrt.data import mnist as mnist_module
from pyrt.data.idx import IMAGES_MAGIC, LABELS_MAGIC

FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
         "t10k-labels-idx1-ubyte")


def write_mnist(directory, n_train=30, n_test=10, gz=True, seed=0):
    """A small MNIST-format data set in `directory`; returns the uint8 arrays written."""
    rng = np.random.default_rng(seed)
    directory.mkdir(parents=True, exist_ok=True)
    arrays = {
        FILES[0]: rng.integers(0, 256, (n_train, 28, 28), dtype=np.uint8),
        FILES[1]: rng.integers(0, 10, n_train, dtype=np.uint8),
        FILES[2]: rng.integers(0, 256, (n_test, 28, 28), dtype=np.uint8),
        FILES[3]: rng.integers(0, 10, n_test, dtype=np.uint8),
    }
    for name, array in arrays.items():
        write_idx(directory / (name + (".gz" if gz else "")), array)
    return arrays


@pytest.fixture
def no_data_anywhere(tmp_path, monkeypatch):
    """HOME, PYRT_DATA and the system directory all point at empty places."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("PYRT_DATA", raising=False)
    monkeypatch.setattr(mnist_module, "SYSTEM_DIR", tmp_path / "system")
    return tmp_path


# ---- IDX -------------------------------------------------------------------------------------

DTYPES = (np.uint8, np.int8, np.int16, np.int32, np.float32, np.float64)


@settings(max_examples=40, deadline=None)
@given(dtype=st.sampled_from(DTYPES),
       shape=st.lists(st.integers(0, 5), min_size=1, max_size=4),
       gz=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_idx_round_trip(tmp_path_factory, dtype, shape, gz, seed):
    rng = np.random.default_rng(seed)
    array = (rng.standard_normal(shape) * 100).astype(dtype)
    path = tmp_path_factory.mktemp("idx") / ("a.idx.gz" if gz else "a.idx")
    write_idx(path, array)
    back = read_idx(path)
    assert back.dtype == np.dtype(dtype) and back.dtype.isnative
    assert back.shape == array.shape
    np.testing.assert_array_equal(back, array)


def test_idx_header_is_big_endian_mnist_layout(tmp_path):
    images = np.arange(2 * 28 * 28, dtype=np.uint8).reshape(2, 28, 28)
    write_idx(tmp_path / "img", images)
    raw = (tmp_path / "img").read_bytes()
    assert struct.unpack(">IIII", raw[:16]) == (IMAGES_MAGIC, 2, 28, 28)
    assert raw[16:] == images.tobytes()
    write_idx(tmp_path / "lab", np.array([3, 1, 4], np.uint8))
    assert (tmp_path / "lab").read_bytes()[:8] == struct.pack(">II", LABELS_MAGIC, 3)


def test_idx_gzip_detected_by_content_not_name(tmp_path):
    array = np.arange(12, dtype=np.int32).reshape(3, 4)
    write_idx(tmp_path / "a.gz", array)
    (tmp_path / "a.gz").rename(tmp_path / "plain-name")
    np.testing.assert_array_equal(read_idx(tmp_path / "plain-name"), array)


def _idx_bytes(array):
    """A uint8 array as IDX bytes, built by hand."""
    header = struct.pack(f">I{array.ndim}I", (0x08 << 8) | array.ndim, *array.shape)
    return header + array.tobytes()


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("damage, message", [
    (lambda b: b[:-5], "truncated"),
    (lambda b: b + b"\0\0", "trailing bytes"),
    (lambda b: b[:6], "truncated header"),
    (lambda b: b[:2], "shorter than the 4-byte magic"),
    (lambda b: b"\x01\x00" + b[2:], "bad magic number"),
    (lambda b: b[:2] + b"\x42" + b[3:], "bad magic number"),
])
def test_idx_damaged_file_names_file_and_problem(tmp_path, gz, damage, message):
    data = damage(_idx_bytes(np.zeros((4, 3, 3), np.uint8)))
    path = tmp_path / ("images.gz" if gz else "images")
    path.write_bytes(gzip.compress(data) if gz else data)
    with pytest.raises(ValueError, match=message) as info:
        read_idx(path)
    assert str(path) in str(info.value)


def test_idx_wrong_magic_for_the_role(tmp_path):
    path = tmp_path / "labels-as-images"
    write_idx(path, np.zeros(5, np.uint8))
    with pytest.raises(ValueError, match="wrong magic number 0x00000801, expected 0x00000803"):
        read_idx(path, magic=IMAGES_MAGIC)


def test_idx_corrupt_gzip(tmp_path):
    path = tmp_path / "bad.gz"
    good = gzip.compress(_idx_bytes(np.zeros((100, 28, 28), np.uint8)))
    path.write_bytes(good[: len(good) // 2])
    with pytest.raises(ValueError, match="corrupt gzip") as info:
        read_idx(path)
    assert str(path) in str(info.value)


def test_write_idx_rejects_unsupported_dtype(tmp_path):
    with pytest.raises(TypeError, match="array"):
        write_idx(tmp_path / "x", np.zeros(3, np.int64))


# ---- MNIST: loading and finding --------------------------------------------------------------


@pytest.mark.parametrize("gz", [True, False])
def test_load_mnist_shapes_dtypes_scaling(tmp_path, gz):
    arrays = write_mnist(tmp_path, n_train=7, n_test=3, gz=gz)
    data = load_mnist(tmp_path)
    assert data.train_images.shape == (7, 1, 28, 28) and data.train_images.dtype == np.float32
    assert data.test_images.shape == (3, 1, 28, 28)
    assert data.train_labels.dtype == np.int64 and data.train_labels.shape == (7,)
    np.testing.assert_allclose(data.train_images[:, 0] * 255, arrays[FILES[0]], atol=1e-4)
    np.testing.assert_array_equal(data.test_labels, arrays[FILES[3]])
    assert data.root == tmp_path and data.name == "MNIST-format"


def test_load_mnist_dotted_names(tmp_path):
    write_mnist(tmp_path, gz=False)
    for name in FILES:  # the spelling of the original uncompressed archive
        (tmp_path / name).rename(tmp_path / name.replace("-idx", ".idx"))
    assert len(load_mnist(tmp_path).train_images) == 30


def test_load_mnist_mismatched_counts(tmp_path):
    write_mnist(tmp_path)
    write_idx(tmp_path / "train-labels-idx1-ubyte.gz", np.zeros(29, np.uint8))
    with pytest.raises(ValueError, match="30 images but .* 29 labels"):
        load_mnist(tmp_path)


def test_load_mnist_truncated_file_is_named(tmp_path):
    write_mnist(tmp_path, gz=False)
    path = tmp_path / "t10k-images-idx3-ubyte"
    path.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(ValueError, match="truncated") as info:
        load_mnist(tmp_path)
    assert str(path) in str(info.value)


def test_load_mnist_rejects_other_image_sizes_and_labels(tmp_path):
    write_mnist(tmp_path)
    write_idx(tmp_path / "train-images-idx3-ubyte.gz", np.zeros((30, 32, 32), np.uint8))
    with pytest.raises(ValueError, match="32x32, expected 28x28"):
        load_mnist(tmp_path)
    write_mnist(tmp_path)
    write_idx(tmp_path / "t10k-labels-idx1-ubyte.gz", np.full(10, 12, np.uint8))
    with pytest.raises(ValueError, match="label 12 is out of range"):
        load_mnist(tmp_path)


def test_search_order(no_data_anywhere, monkeypatch):
    tmp = no_data_anywhere
    home_cache = tmp / "home" / ".cache" / "pyrt"
    env_dir = tmp / "env"
    explicit = tmp / "explicit"
    monkeypatch.setenv("PYRT_DATA", str(env_dir))
    # a PYRT_DATA naming no directory is an error, not a silent fall back to the others
    with pytest.raises(mnist_module.DatasetNotFoundError, match=f"PYRT_DATA={env_dir}: no "
                                                                "such directory"):
        mnist_module.find_mnist()
    env_dir.mkdir()
    assert mnist_module.find_mnist() is None

    write_mnist(tmp / "system", seed=1)
    assert mnist_module.find_mnist() == tmp / "system"
    assert load_mnist().name == "MNIST-format"

    write_mnist(home_cache / "FashionMNIST" / "raw", seed=2)
    assert mnist_module.find_mnist() == home_cache / "FashionMNIST" / "raw"
    assert load_mnist().name == "Fashion-MNIST"
    write_mnist(home_cache / "MNIST" / "raw", seed=3)  # MNIST/raw before FashionMNIST/raw
    assert mnist_module.find_mnist() == home_cache / "MNIST" / "raw"
    write_mnist(home_cache, seed=4)  # the directory itself first
    assert mnist_module.find_mnist() == home_cache

    write_mnist(env_dir / "MNIST" / "raw", seed=5)
    assert mnist_module.find_mnist() == env_dir / "MNIST" / "raw"
    assert load_mnist().name == "MNIST"

    write_mnist(explicit, seed=6)
    assert mnist_module.find_mnist(explicit) == explicit
    dirs = mnist_module.search_dirs()
    assert dirs[:3] == [env_dir, env_dir / "MNIST" / "raw", env_dir / "FashionMNIST" / "raw"]
    assert dirs[3] == home_cache and dirs[6] == tmp / "system"


def test_explicit_root_is_not_a_fallback(no_data_anywhere):
    write_mnist(no_data_anywhere / "system")
    empty = no_data_anywhere / "empty"
    empty.mkdir()
    with pytest.raises(DatasetNotFoundError, match="No MNIST-format data set in") as info:
        load_mnist(empty)
    assert "--data DIR" in str(info.value)


def test_incomplete_directory_is_skipped(no_data_anywhere, monkeypatch):
    partial = no_data_anywhere / "partial"
    write_mnist(partial)
    (partial / "t10k-labels-idx1-ubyte.gz").unlink()
    monkeypatch.setenv("PYRT_DATA", str(partial))
    write_mnist(no_data_anywhere / "system")
    assert mnist_module.find_mnist() == no_data_anywhere / "system"


def test_no_data_without_download(no_data_anywhere):
    with pytest.raises(DatasetNotFoundError) as info:
        load_mnist(download=False)
    message = str(info.value)
    assert "apt-get install dataset-fashion-mnist" in message
    assert "--data DIR" in message
    assert str(no_data_anywhere / "system") in message


def test_no_data_and_no_network(no_data_anywhere, monkeypatch):
    # nothing listens on port 1: the connection is refused at once, as with no network
    monkeypatch.setattr(mnist_module, "MIRRORS", ("http://127.0.0.1:1/",))
    with pytest.raises(DatasetNotFoundError) as info:
        load_mnist()
    message = str(info.value)
    assert "downloading MNIST failed" in message and "127.0.0.1:1" in message
    assert "apt-get install dataset-fashion-mnist" in message
    leftovers = list((no_data_anywhere / "home").rglob("*.part"))
    assert leftovers == []


@pytest.fixture
def mirror(tmp_path):
    """A local HTTP server holding a gzipped MNIST-format data set; yields (url, directory)."""
    served = tmp_path / "served"
    write_mnist(served)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    handler.log_message = lambda *a: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/", served
    server.shutdown()
    server.server_close()


def _md5_of(directory):
    return {p.name: hashlib.md5(p.read_bytes()).hexdigest() for p in directory.iterdir()}


def test_download_verifies_checksums_and_is_found_afterwards(no_data_anywhere, mirror,
                                                             monkeypatch):
    url, served = mirror
    monkeypatch.setattr(mnist_module, "MD5", _md5_of(served))
    monkeypatch.setattr(mnist_module, "MIRRORS", ("http://127.0.0.1:1/", url))
    data = load_mnist()
    target = no_data_anywhere / "home" / ".cache" / "pyrt" / "MNIST" / "raw"
    assert data.root == target and data.name == "MNIST"
    assert mnist_module.find_mnist() == target
    assert len(data.train_images) == 30


def test_download_rejects_a_bad_checksum(no_data_anywhere, mirror, monkeypatch):
    url, served = mirror
    wrong = {name: "0" * 32 for name in _md5_of(served)}
    monkeypatch.setattr(mnist_module, "MD5", wrong)
    monkeypatch.setattr(mnist_module, "MIRRORS", (url,))
    with pytest.raises(DatasetNotFoundError, match="MD5 .*, expected 0{32}"):
        load_mnist()
    target = no_data_anywhere / "home" / ".cache" / "pyrt" / "MNIST" / "raw"
    assert list(target.iterdir()) == []  # nothing unverified is kept


def test_a_file_already_in_the_download_directory_is_checked(no_data_anywhere, mirror,
                                                            monkeypatch):
    url, served = mirror
    monkeypatch.setattr(mnist_module, "MD5", _md5_of(served))
    monkeypatch.setattr(mnist_module, "MIRRORS", (url,))
    target = no_data_anywhere / "home" / ".cache" / "pyrt" / "MNIST" / "raw"
    target.mkdir(parents=True)
    foreign = target / "train-labels-idx1-ubyte.gz"
    write_idx(foreign, np.zeros(30, np.uint8))  # valid IDX, but not the data set's
    with pytest.raises(DatasetNotFoundError, match=f"{foreign} is not MNIST's"):
        load_mnist()


def test_a_dead_mirror_is_tried_once_and_a_slow_one_given_up(no_data_anywhere, mirror,
                                                             monkeypatch, capsys):
    url, served = mirror
    monkeypatch.setattr(mnist_module, "MD5", _md5_of(served))
    monkeypatch.setattr(mnist_module, "MIRRORS", ("http://127.0.0.1:1/", url))
    load_mnist()
    err = capsys.readouterr().err
    assert err.count("downloading http://127.0.0.1:1/") == 1  # not once per file
    assert err.count(f"downloading {url}") == 4
    # a transfer past its deadline (a mirror that trickles) fails instead of hanging
    monkeypatch.setattr(mnist_module, "DOWNLOAD_DEADLINE_S", -1)
    with pytest.raises(DatasetNotFoundError, match="slower than -1 s"):
        mnist_module.download_mnist(no_data_anywhere / "elsewhere", mirrors=(url,))


def test_unreadable_files_and_a_file_for_data_are_named(no_data_anywhere, tmp_path,
                                                        monkeypatch):
    write_mnist(tmp_path / "d")
    with pytest.raises(DatasetNotFoundError, match="is a file: pass the directory"):
        load_mnist(tmp_path / "d" / "train-images-idx3-ubyte.gz")
    real = Path.read_bytes

    def refuse(path):
        if path.name.startswith("t10k-images"):
            raise PermissionError(13, "Permission denied")
        return real(path)

    monkeypatch.setattr(Path, "read_bytes", refuse)
    with pytest.raises(ValueError, match="t10k-images-idx3-ubyte.gz: cannot be read "
                                         r"\(Permission denied\)"):
        load_mnist(tmp_path / "d")


# ---- XOR -------------------------------------------------------------------------------------


def test_make_xor():
    x, y = make_xor(1000, seed=3)
    assert x.shape == (1000, 2) and y.shape == (1000, 1)
    assert x.dtype == np.float32 and y.dtype == np.float32
    assert set(np.unique(x)) == {0.0, 1.0}
    np.testing.assert_array_equal(y[:, 0], np.logical_xor(x[:, 0], x[:, 1]))
    assert len(np.unique(x, axis=0)) == 4
    x2, _ = make_xor(1000, seed=3)
    np.testing.assert_array_equal(x, x2)
    assert not np.array_equal(x, make_xor(1000, seed=4)[0])
    with pytest.raises(ValueError, match="n_samples"):
        make_xor(0)
    for seed in (-1, 1.5, "3", True):
        with pytest.raises(ValueError, match="seed must be a non-negative integer or None"):
            make_xor(4, seed=seed)


# ---- DataLoader ------------------------------------------------------------------------------


def _arrays(n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, 3)).astype(np.float32), np.arange(n)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 50), batch_size=st.integers(1, 20), drop_last=st.booleans(),
       shuffle=st.booleans(), seed=st.integers(0, 1000))
def test_loader_batches_cover_the_data(n, batch_size, drop_last, shuffle, seed):
    x, y = _arrays(n)
    loader = DataLoader((x, y), batch_size, shuffle=shuffle, drop_last=drop_last, seed=seed)
    batches = list(loader)
    assert len(batches) == len(loader)
    full, rest = divmod(n, batch_size)
    assert len(loader) == full + (0 if drop_last or rest == 0 else 1)
    sizes = [len(b[0]) for b in batches]
    assert all(s == batch_size for s in sizes[:full])
    seen = np.concatenate([b[1].numpy() for b in batches]) if batches else np.array([], int)
    if not shuffle:
        np.testing.assert_array_equal(seen, np.arange(len(seen)))
    assert len(np.unique(seen)) == len(seen) == (full * batch_size if drop_last else n)
    for bx, by in batches:  # the rows stay paired
        assert isinstance(bx, pyrt.Tensor) and bx.dtype == np.float32
        assert by.dtype == np.int64
        np.testing.assert_array_equal(bx.numpy(), x[by.numpy()])


def test_loader_shuffle_is_seeded_per_epoch():
    x, y = _arrays(100)

    def orders(loader, epochs=3):
        return [np.concatenate([b[1].numpy() for b in loader]) for _ in range(epochs)]

    a = orders(DataLoader((x, y), 16, shuffle=True, seed=7))
    b = orders(DataLoader((x, y), 16, shuffle=True, seed=7))
    c = orders(DataLoader((x, y), 16, shuffle=True, seed=8))
    for ea, eb in zip(a, b):
        np.testing.assert_array_equal(ea, eb)
    assert not np.array_equal(a[0], a[1])  # a new order each epoch
    assert not np.array_equal(a[0], c[0])
    assert not np.array_equal(a[0], np.arange(100))
    resumed = DataLoader((x, y), 16, shuffle=True, seed=7)
    resumed.set_epoch(2)
    np.testing.assert_array_equal(orders(resumed, 1)[0], a[2])


def test_loader_order_independent_of_threads():
    x, y = _arrays(300)
    orders = []
    for k in (1, 2, 4):
        with pyrt.num_threads(k):
            loader = DataLoader((x, y), 32, shuffle=True, seed=11)
            orders.append(np.concatenate([b[1].numpy() for b in loader]))
    for order in orders[1:]:
        np.testing.assert_array_equal(order, orders[0])


def test_loader_default_seed_follows_manual_seed():
    x, y = _arrays(64)
    pyrt.manual_seed(5)
    first = next(iter(DataLoader((x, y), 64, shuffle=True)))[1].numpy()
    pyrt.manual_seed(5)
    again = next(iter(DataLoader((x, y), 64, shuffle=True)))[1].numpy()
    np.testing.assert_array_equal(first, again)


def test_loader_converts_dtypes():
    loader = DataLoader((np.ones((4, 2), np.float64), np.ones(4, np.uint8)), 2)
    bx, by = next(iter(loader))
    assert bx.dtype == np.float32 and by.dtype == np.int64


@pytest.mark.parametrize("kwargs, error, match", [
    ({"dataset": np.zeros((4, 2))}, TypeError, "tuple of arrays"),
    ({"dataset": ()}, TypeError, "tuple of arrays"),
    ({"dataset": (np.zeros((4, 2)), np.zeros(3))}, ValueError, "differ in length"),
    ({"dataset": (np.zeros(4),), "batch_size": 0}, ValueError, "batch_size"),
    ({"dataset": (np.zeros(4),), "seed": -1}, ValueError, "seed"),
    ({"dataset": (np.array(["a", "b"]),)}, TypeError, "numbers"),
    # each names the array, not in NumPy's words and not as "a scalar"
    ({"dataset": (np.zeros(4), None)}, TypeError, r"dataset\[1\] must hold numbers, got NoneType"),
    ({"dataset": ((np.zeros((4, 2)), np.zeros(4)),)}, ValueError,
     r"dataset\[0\] must be an array, got rows of different shapes"),
])
def test_loader_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        DataLoader(**kwargs)


def test_loader_takes_its_epoch_at_iter():
    x, y = _arrays(10)
    loader = DataLoader((x, y), 4, shuffle=True, seed=1)
    first = iter(loader)
    loader.set_epoch(5)  # after iter(): the iteration already has its epoch
    np.testing.assert_array_equal(next(first)[1].numpy(), loader.order(0)[:4])


def test_loader_reads_a_list_as_samples():
    # a list is a map-style data set, as in torch: its (input, target) samples are collated
    # into the batches the same data as columns, a tuple of arrays, gives
    x, y = _arrays(10)
    samples = DataLoader([(x[i], y[i]) for i in range(10)], 4, shuffle=True, seed=3)
    columns = DataLoader((x, y), 4, shuffle=True, seed=3)
    for (sx, sy), (cx, cy) in zip(samples, columns, strict=True):
        np.testing.assert_array_equal(sx.numpy(), cx.numpy())
        np.testing.assert_array_equal(sy.numpy(), cy.numpy())
        assert sx.dtype == cx.dtype and sy.dtype == cy.dtype
    # the old spelling of columns, [x, y], now fails to collate, and the error says why
    with pytest.raises(ValueError, match="different shapes.*pass a tuple to batch arrays"):
        next(iter(DataLoader([x, y], 2)))


def test_discovery_errors_say_what_is_wrong(no_data_anywhere, monkeypatch):
    tmp = no_data_anywhere
    a_file = tmp / "a-file"
    a_file.write_text("")
    monkeypatch.setenv("PYRT_DATA", str(a_file))
    with pytest.raises(DatasetNotFoundError, match="is a file, not a directory"):
        mnist_module.find_mnist()
    monkeypatch.delenv("PYRT_DATA")
    # a folder, or a broken link, where a file should be
    odd = tmp / "odd"
    write_mnist(odd)
    (odd / "train-labels-idx1-ubyte.gz").unlink()
    (odd / "train-labels-idx1-ubyte.gz").mkdir()
    (odd / "t10k-labels-idx1-ubyte.gz").unlink()
    (odd / "t10k-labels-idx1-ubyte.gz").symlink_to(tmp / "gone")
    with pytest.raises(DatasetNotFoundError) as info:
        load_mnist(odd)
    message = str(info.value)
    assert "train-labels-idx1-ubyte.gz is not a file" in message
    assert "t10k-labels-idx1-ubyte.gz is a broken link" in message


def test_an_unsearchable_directory_is_a_clear_error(no_data_anywhere, monkeypatch):
    # (as root every directory can be searched: the refusal is simulated)
    def refuse(self):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(mnist_module.Path, "is_file", refuse)
    with pytest.raises(DatasetNotFoundError, match=r"cannot be read \(Permission denied\)"):
        load_mnist(no_data_anywhere)
