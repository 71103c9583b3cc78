"""MNIST and Fashion-MNIST: find the IDX files, fetch MNIST when none are found, load them.

Both data sets ship as four IDX files with the same names, gzipped or not::

    train-images-idx3-ubyte   train-labels-idx1-ubyte   (60000 images)
    t10k-images-idx3-ubyte    t10k-labels-idx1-ubyte    (10000 images)

Where pyrt looks, in order (the first directory holding all four files wins):

1. the directory passed as ``root`` (the CLI's ``--data DIR``); when given it must hold the
   data, nothing else is searched;
2. ``$PYRT_DATA``; when set it must name a directory (a misspelt one is an error, not a
   silent fall back to the directories below);
3. ``~/.cache/pyrt`` (where a download goes);
4. ``/usr/share/datasets/fashion-mnist`` (Debian's ``dataset-fashion-mnist`` package).

Each of those directories is tried as it is and in torchvision's layout (``DIR/MNIST/raw``,
then ``DIR/FashionMNIST/raw``); ``~`` is expanded. When nothing is found, MNIST is downloaded
from its public mirrors into ``~/.cache/pyrt/MNIST/raw``, each file checked against its
published MD5 (files already there too); with no network the error says how to get the data
instead.
"""

import hashlib
import http.client
import os
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import NamedTuple

import numpy as np

from pyrt.data.idx import IMAGES_MAGIC, LABELS_MAGIC, read_idx

__all__ = ["MNIST", "DatasetNotFoundError", "download_mnist", "find_mnist", "load_mnist",
           "search_dirs"]

SYSTEM_DIR = Path("/usr/share/datasets/fashion-mnist")
TORCHVISION_SUBDIRS = ("MNIST/raw", "FashionMNIST/raw")

FILES = {
    "train_images": "train-images-idx3-ubyte",
    "train_labels": "train-labels-idx1-ubyte",
    "test_images": "t10k-images-idx3-ubyte",
    "test_labels": "t10k-labels-idx1-ubyte",
}

# MNIST's public mirrors and the MD5 of each gzipped file (as published with torchvision)
MIRRORS = (
    "https://ossci-datasets.s3.amazonaws.com/mnist/",
    "https://storage.googleapis.com/cvdf-datasets/mnist/",
    "http://yann.lecun.com/exdb/mnist/",
)
MD5 = {
    "train-images-idx3-ubyte.gz": "f68b3c2dcbeaaa9fbdd348bbdeb94873",
    "train-labels-idx1-ubyte.gz": "d53e105ee54ea40749a09fcbcd1e9432",
    "t10k-images-idx3-ubyte.gz": "9fb629c4189551a2d022fa330f9573f3",
    "t10k-labels-idx1-ubyte.gz": "ec29112dd5afa0611ce80d1b7f02629c",
}
DOWNLOAD_TIMEOUT_S = 10    # a mirror silent this long is given up...
DOWNLOAD_DEADLINE_S = 300  # ...and one that takes longer than this for a file (12 MB at most)

HOW_TO_GET_DATA = (
    "Get the data in one of these ways:\n"
    "  - Fashion-MNIST from Debian/Ubuntu: sudo apt-get install dataset-fashion-mnist\n"
    "    (installs it in /usr/share/datasets/fashion-mnist, which pyrt finds by itself)\n"
    "  - put train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz,\n"
    "    t10k-images-idx3-ubyte.gz and t10k-labels-idx1-ubyte.gz (MNIST or Fashion-MNIST)\n"
    "    in a directory and pass --data DIR (or set PYRT_DATA=DIR)\n"
    "  - run once with network access: MNIST is then downloaded to ~/.cache/pyrt"
)


class DatasetNotFoundError(FileNotFoundError):
    """No MNIST-format data set was found and none could be downloaded."""


class MNIST(NamedTuple):
    """A loaded data set: images float32 [N, 1, 28, 28] scaled to [0, 1] (pixel / 255, not
    mean/std normalised), labels int64 [N], the directory the files came from and the data
    set's name as far as the directory tells ("Fashion-MNIST", "MNIST" or "MNIST-format"), and
    the paths of the four files read."""

    train_images: np.ndarray
    train_labels: np.ndarray
    test_images: np.ndarray
    test_labels: np.ndarray
    root: Path
    name: str
    files: tuple = ()


def cache_dir():
    return Path.home() / ".cache" / "pyrt"


def _env_dir():
    """``$PYRT_DATA`` as a path (``~`` expanded), or None when unset; DatasetNotFoundError when
    it names no directory."""
    raw = os.environ.get("PYRT_DATA")
    if not raw:
        return None
    path = Path(raw).expanduser()
    if not path.is_dir():
        what = "is a file, not a directory" if path.exists() else "no such directory"
        raise DatasetNotFoundError(f"PYRT_DATA={raw}: {what}. Set it to the directory "
                                   "holding the IDX files, or unset it.\n" + HOW_TO_GET_DATA)
    return path


def search_dirs(root=None):
    """The directories searched, in order (see the module's docstring)."""
    if root is not None:
        bases = [Path(root).expanduser()]
    else:
        env = _env_dir()
        bases = ([env] if env is not None else []) + [cache_dir(), SYSTEM_DIR]
    dirs = []
    for base in bases:
        dirs.append(base)
        dirs.extend(base / sub for sub in TORCHVISION_SUBDIRS)
    return dirs


def _find_file(directory, stem):
    """The file for `stem` in `directory`: uncompressed first (faster to read), then gzipped;
    also the ``train-images.idx3-ubyte`` spelling some archives use."""
    dotted = stem.replace("-idx", ".idx")
    for name in (stem, dotted, stem + ".gz", dotted + ".gz"):
        path = directory / name
        try:
            if path.is_file():
                return path
        except OSError as exc:  # a directory that cannot be searched (no x permission)
            raise DatasetNotFoundError(f"{directory}: cannot be read ({exc.strerror})") from None
    return None


def _files_in(directory):
    """The four files if `directory` holds all of them, else None."""
    found = {key: _find_file(directory, stem) for key, stem in FILES.items()}
    return found if all(found.values()) else None


def find_mnist(root=None):
    """The directory holding the four IDX files, or None. See ``search_dirs`` for the order."""
    for directory in search_dirs(root):
        if _files_in(directory):
            return directory
    return None


def _md5(path):
    digest = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _copy(response, out, deadline):
    """Copy the body of `response` to `out`, giving up at `deadline` (a mirror that trickles
    would otherwise hold the download forever: the socket timeout covers one read only)."""
    expected = response.headers.get("Content-Length")
    got = 0
    while True:
        if time.monotonic() > deadline:
            raise TimeoutError(f"slower than {DOWNLOAD_DEADLINE_S} s for the file")
        block = response.read(1 << 16)
        if not block:
            break
        out.write(block)
        got += len(block)
    if expected is not None and expected.isdigit() and got != int(expected):
        raise http.client.IncompleteRead(b"", int(expected) - got)


def _failure(url, exc):
    """What went wrong with `url`, in words."""
    if isinstance(exc, urllib.error.HTTPError):
        return f"{url}: HTTP {exc.code} {exc.reason}"
    if isinstance(exc, http.client.IncompleteRead):
        return f"{url}: the connection closed before the end of the file (truncated)"
    return f"{url}: {getattr(exc, 'reason', exc)}"


def _fetch(name, dest, mirrors, timeout, dead):
    """Download `name` from the first mirror that serves it with the right checksum; the file
    appears in `dest` only once verified. Returns the mirror that served it and the list of
    failures (the mirror None if none did). Mirrors that could not be reached at all are
    added to `dead` and not tried again for the other files."""
    failures = []
    for mirror in mirrors:
        if mirror in dead:
            continue
        url = mirror + name
        tmp = None
        try:
            fd, tmp = tempfile.mkstemp(dir=dest, prefix=name + ".", suffix=".part")
            print(f"pyrt: downloading {url} to {dest}", file=sys.stderr, flush=True)
            with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as r:
                _copy(r, out, time.monotonic() + DOWNLOAD_DEADLINE_S)
            digest = _md5(tmp)
            if digest != MD5[name]:
                failures.append(f"{url}: MD5 {digest}, expected {MD5[name]}")
                continue
            os.replace(tmp, dest / name)
            return mirror, []
        except (OSError, http.client.HTTPException) as exc:  # URLError is an OSError
            failures.append(_failure(url, exc))
            if tmp is None:  # the folder cannot take the file: no mirror will do better
                return None, [f"{dest}: cannot write a file there ({exc.strerror or exc})"]
            if isinstance(exc, urllib.error.URLError) and not isinstance(
                    exc, urllib.error.HTTPError):
                dead.add(mirror)  # no connection at all
        finally:
            if tmp is not None and os.path.exists(tmp):
                os.remove(tmp)
    return None, failures


def download_mnist(dest=None, *, mirrors=None, timeout=DOWNLOAD_TIMEOUT_S):
    """Download MNIST's four files into `dest` (default ``~/.cache/pyrt/MNIST/raw``) from the
    first of `mirrors` (default ``MIRRORS``, URL prefixes) that serves each, verifying each
    against its MD5. Returns `dest`; raises DatasetNotFoundError when a file cannot be fetched
    from any mirror."""
    dest = Path(dest) if dest is not None else cache_dir() / "MNIST" / "raw"
    mirrors = MIRRORS if mirrors is None else tuple(mirrors)
    try:
        dest.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DatasetNotFoundError(f"No MNIST-format data set found, and {dest} cannot be "
                                   f"created to download MNIST into ({exc}).\n"
                                   + HOW_TO_GET_DATA) from None
    # parts of downloads that were killed (Ctrl-C removes its own) and are too old to be
    # still going
    for part in dest.glob("*.part"):
        try:
            if time.time() - part.stat().st_mtime > 2 * DOWNLOAD_DEADLINE_S:
                part.unlink()
        except OSError:
            pass
    dead = set()
    for name, expected in MD5.items():
        if (dest / name).is_file():
            digest = _md5(dest / name)
            if digest == expected:
                continue
            raise DatasetNotFoundError(
                f"{dest / name} is not MNIST's {name} (MD5 {digest}, expected {expected}): "
                "remove it to download it again, or put the data set it belongs to in a "
                "directory of its own and pass --data DIR")
        mirror, failures = _fetch(name, dest, mirrors, timeout, dead)
        if mirror is not None:  # the mirror that served this file first for the next ones
            mirrors = (mirror,) + tuple(m for m in mirrors if m != mirror)
        if failures and mirror is None:
            raise DatasetNotFoundError(
                "No MNIST-format data set found and downloading MNIST failed:\n  "
                + "\n  ".join(failures) + "\nLooked in:\n  "
                + "\n  ".join(str(d) for d in search_dirs()) + "\n" + HOW_TO_GET_DATA)
    return dest


def _load_split(files, images_key, labels_key):
    images = read_idx(files[images_key], magic=IMAGES_MAGIC)
    labels = read_idx(files[labels_key], magic=LABELS_MAGIC)
    if images.shape[1:] != (28, 28):
        raise ValueError(f"{files[images_key]}: images are {images.shape[1]}x{images.shape[2]}, "
                         "expected 28x28")
    if len(images) != len(labels):
        raise ValueError(f"{files[images_key]} holds {len(images)} images but "
                         f"{files[labels_key]} holds {len(labels)} labels")
    if labels.size and labels.max() > 9:
        raise ValueError(f"{files[labels_key]}: label {labels.max()} is out of range 0-9")
    x = images.reshape(len(images), 1, 28, 28).astype(np.float32)
    x *= np.float32(1.0 / 255.0)
    return x, labels.astype(np.int64)


def load_mnist(root=None, *, download=True):
    """Load MNIST or Fashion-MNIST (whichever is found first; see the module's docstring).

    With `root` given, only that directory (and its torchvision layout) is used. Raises
    DatasetNotFoundError with instructions when no data set is found (and, with `download`,
    none can be fetched); ValueError naming the file when a file is truncated or corrupt.
    """
    directory = find_mnist(root)
    if directory is None:
        if root is not None:
            raise DatasetNotFoundError(_not_in(Path(root).expanduser()))
        if not download:
            raise DatasetNotFoundError(
                "No MNIST-format data set found. Looked in:\n  "
                + "\n  ".join(str(d) for d in search_dirs()) + "\n" + HOW_TO_GET_DATA)
        directory = download_mnist()
    files = _files_in(directory)
    train_x, train_y = _load_split(files, "train_images", "train_labels")
    test_x, test_y = _load_split(files, "test_images", "test_labels")
    return MNIST(train_x, train_y, test_x, test_y, directory, _name(directory),
                 tuple(files.values()))


def _not_in(root):
    """Why `root` (--data) holds no data set, as precisely as can be said."""
    if root.is_file():
        return (f"--data {root} is a file: pass the directory that holds the four IDX files "
                f"(perhaps {root.parent})")
    if not root.exists():
        return f"--data {root}: no such directory.\n" + HOW_TO_GET_DATA
    lines = []
    for directory in search_dirs(root):
        if directory.is_dir():
            missing = [_missing(directory, stem) for stem in FILES.values()
                       if _find_file(directory, stem) is None]
            lines.append(f"{directory}: {', '.join(missing)}")
    where = "\n  ".join(lines) or f"{root} holds none of them"
    return (f"No MNIST-format data set in {root}: it needs "
            + ", ".join(f"{stem}[.gz]" for stem in FILES.values())
            + " (in it, or in its MNIST/raw or FashionMNIST/raw).\n  " + where + "\n"
            + HOW_TO_GET_DATA)


def _missing(directory, stem):
    """Why `directory` has no file for `stem`: not there, or there but not a file."""
    for name in (stem, stem + ".gz"):
        path = directory / name
        if path.is_symlink() and not path.exists():
            return f"{name} is a broken link"
        if path.exists():
            return f"{name} is not a file"
    return f"no {stem}[.gz]"


def _name(directory):
    path = str(directory).lower()
    if "fashion" in path:
        return "Fashion-MNIST"
    if directory.name == "raw" and directory.parent.name == "MNIST":
        return "MNIST"
    return "MNIST-format"
