"""torchvision's CIFAR-10/100, MNIST, Fashion-MNIST and SVHN, read from torchvision's on-disk layout.

Fashion-MNIST is also read from Debian's ``dataset-fashion-mnist`` (the four gzipped IDX files in
/usr/share/datasets/fashion-mnist) when no data root is given. Missing files are downloaded
into the data root with torchvision's download helpers (URLs and checksums from torchvision's
dataset classes; progress bar included). The files are read here, not by torchvision's dataset
classes: MNIST-style IDX files and SVHN's .mat files directly, CIFAR's pickled python batches
through ``restricted_pickle``, which builds nothing but containers and numpy arrays
(torchvision's own CIFAR loader would unpickle them freely).
"""

from __future__ import annotations

import functools
import gzip
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import scipy.io

from driftbench.config import require
from driftbench.data.files import data_root
from driftbench.data.pool import Pool
from driftbench.data.restricted_pickle import load_data_pickle
from driftbench.data.sources import Source, register
from driftbench.errors import DataSourceError

SPLITS = ("train", "test")
SYSTEM_DATASETS = Path("/usr/share/datasets")  # where Debian's dataset-* packages install their files


@dataclass(frozen=True)
class TorchvisionParams:
    """Data folder, split and download switch of a torchvision source.

    ``root``: data folder (empty: ``~/.cache/driftbench/<source>``); ``split``: train, test or all
    (train then test, told apart by the ``split`` meta column); ``download``: fetch missing files.
    """

    root: str = ""
    split: str = "all"
    download: bool = True

    def __post_init__(self) -> None:
        require(self.split in (*SPLITS, "all"), f"split must be train, test or all, got {self.split!r}")


@dataclass(frozen=True)
class Files:
    """Where a dataset keeps each split's files (paths relative to the data root), how to fetch them, what to do offline."""

    paths: dict[str, tuple[str, ...]]
    fetch: Callable[[Path, tuple[str, ...]], None]  # (data root, splits) -> downloads
    hint: str  # what to put where, with {root}


@dataclass(frozen=True)
class Packaged:
    """A Debian package that installs a dataset's files, without torchvision's sub-folders, in ``SYSTEM_DATASETS/<folder>``."""

    package: str
    folder: str

    def path(self) -> Path:
        """The folder the package's files are in."""
        return SYSTEM_DATASETS / self.folder


@dataclass(frozen=True)
class Layout:
    """A torchvision dataset: its class in ``torchvision.datasets`` (file names, URLs, checksums) and how to read it."""

    name: str
    description: str
    num_classes: int
    dataset: str  # the torchvision.datasets class
    files_of: Callable[[Any], Files]  # that class -> its files
    read: Callable[[list[Path], str], tuple[np.ndarray, np.ndarray]]  # (split's files, source) -> (x, y)
    packaged: Packaged | None = None  # read when no data root is given and it holds the files

    def files(self) -> Files:
        """The dataset's files, from its torchvision class (torchvision is imported here: importing it takes seconds)."""
        from torchvision import datasets

        return self.files_of(getattr(datasets, self.dataset))


def read_cifar(label_key: str) -> Callable[[list[Path], str], tuple[np.ndarray, np.ndarray]]:
    """A reader of CIFAR python batches whose labels are under ``label_key``."""

    def read(paths: list[Path], source: str) -> tuple[np.ndarray, np.ndarray]:
        xs, ys = [], []
        for path in paths:
            batch = load_data_pickle(path, source)
            if not isinstance(batch, dict):
                raise DataSourceError(f"{source}: {path} holds a {type(batch).__name__}, not a CIFAR batch dict")
            batch = {k.decode("latin1") if isinstance(k, bytes) else k: v for k, v in batch.items()}
            for key in ("data", label_key):
                if key not in batch:
                    raise DataSourceError(f"{source}: {path} lacks key {key!r}; found: {', '.join(map(str, batch)) or '(none)'}")
            data = np.asarray(batch["data"])
            if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3 * 32 * 32:
                raise DataSourceError(f"{source}: {path}: 'data' must be N x 3072 uint8, got {data.shape} {data.dtype}")
            labels = np.asarray(batch[label_key], dtype=np.int64)
            if labels.shape != (len(data),):
                raise DataSourceError(f"{source}: {path}: {len(data)} images but {labels.size} {label_key}")
            xs.append(data.reshape(-1, 3, 32, 32))
            ys.append(labels)
        return np.concatenate(xs), np.concatenate(ys)

    return read


def read_idx(path: Path, ndim: int, source: str) -> np.ndarray:
    """An unsigned-byte IDX array (MNIST's format; ``path`` or ``path``.gz) of ``ndim`` dimensions, read-only; read once
    a process while the file stays as it is (every run of a sweep or report on Fashion-MNIST reads the same files)."""
    file = path if path.is_file() else path.with_name(path.name + ".gz")
    try:
        stat = file.stat()
    except OSError as exc:
        raise DataSourceError(f"{source}: cannot read {path} or its .gz: {exc}") from None
    return cached_idx(file, ndim, source, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=8)
def cached_idx(file: Path, ndim: int, source: str, mtime_ns: int, size: int) -> np.ndarray:
    """``read_idx``'s array of ``file`` as it was at ``mtime_ns`` and ``size`` (the cache's key)."""
    try:
        if file.suffix != ".gz":
            raw = file.read_bytes()
        else:
            with gzip.open(file) as fh:
                raw = fh.read()
    except (OSError, EOFError) as exc:
        raise DataSourceError(f"{source}: cannot read {file}: {exc}") from None
    if len(raw) < 4 + 4 * ndim or raw[:3] != b"\x00\x00\x08" or raw[3] != ndim:
        raise DataSourceError(f"{source}: {file} is not an unsigned-byte IDX file of {ndim} dimensions")
    shape = tuple(int(d) for d in np.frombuffer(raw, dtype=">i4", count=ndim, offset=4))
    body = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if body.size != np.prod(shape):
        raise DataSourceError(f"{source}: {file} holds {body.size} bytes, its header says {shape}")
    return body.reshape(shape)


def read_mnist(paths: list[Path], source: str) -> tuple[np.ndarray, np.ndarray]:
    """MNIST-style images and labels from an (images, labels) pair of IDX files."""
    images, labels = read_idx(paths[0], 3, source), read_idx(paths[1], 1, source)
    if len(images) != len(labels):
        raise DataSourceError(f"{source}: {paths[0]} has {len(images)} images but {paths[1]} {len(labels)} labels")
    return images[:, None], labels.astype(np.int64)


def read_svhn(paths: list[Path], source: str) -> tuple[np.ndarray, np.ndarray]:
    """SVHN's cropped digits from a .mat file (X: 32 x 32 x 3 x N, y: N x 1 with 10 meaning digit 0)."""
    try:
        mat = scipy.io.loadmat(paths[0])
    except (ValueError, TypeError, OSError) as exc:
        raise DataSourceError(f"{source}: {paths[0]} is not a readable .mat file: {exc}") from None
    for key in ("X", "y"):
        if key not in mat:
            raise DataSourceError(f"{source}: {paths[0]} lacks variable {key!r}")
    x, y = np.asarray(mat["X"]), np.asarray(mat["y"]).reshape(-1).astype(np.int64)
    if x.ndim != 4 or x.shape[:3] != (32, 32, 3) or x.shape[3] != len(y):
        raise DataSourceError(f"{source}: {paths[0]}: X must be 32 x 32 x 3 x {len(y)}, got {x.shape}")
    return np.ascontiguousarray(x.transpose(3, 2, 0, 1)).astype(np.uint8), y % 10


def download(url: str, root: Path, filename: str, md5: str, extract: bool = True) -> None:
    """torchvision's download helper (with its progress bar and checksum), imported when a download is needed."""
    from torchvision.datasets import utils

    if extract:
        utils.download_and_extract_archive(url, str(root), filename=filename, md5=md5)
    else:
        utils.download_url(url, str(root), filename=filename, md5=md5)


def cifar_files(cls: Any) -> Files:
    """A CIFAR dataset's extracted python batches under ``cls.base_folder``, fetched as the tarball ``cls.url``."""

    def fetch(root: Path, _splits: tuple[str, ...]) -> None:
        download(cls.url, root, cls.filename, cls.tgz_md5)

    paths = {
        split: tuple(f"{cls.base_folder}/{n}" for n, _ in batches)
        for split, batches in (("train", cls.train_list), ("test", cls.test_list))
    }
    return Files(paths, fetch, f"extract {cls.filename} into {{root}} (it holds {cls.base_folder}/)")


def mnist_files(cls: Any) -> Files:
    """An MNIST-style dataset's (images, labels) IDX files per split in ``<root>/<ClassName>/raw``, from each mirror in turn."""
    raw = f"{cls.__name__}/raw"

    def fetch(root: Path, _splits: tuple[str, ...]) -> None:
        for filename, md5 in cls.resources:
            if (root / raw / filename.removesuffix(".gz")).is_file():
                continue
            errors = []
            for mirror in cls.mirrors:
                try:
                    download(mirror + filename, root / raw, filename, md5)
                    break
                except (OSError, RuntimeError) as exc:
                    errors.append(exc)
            else:
                raise errors[-1]

    names = [f"{raw}/{name.removesuffix('.gz')}" for name, _md5 in cls.resources]
    hint = f"put {cls.__name__}'s four IDX files (train-images-idx3-ubyte, ...; .gz allowed) in {{root}}/{raw}"
    return Files({"train": (names[0], names[1]), "test": (names[2], names[3])}, fetch, hint)


def svhn_files(cls: Any) -> Files:
    """SVHN's .mat file per split in the data root."""

    def fetch(root: Path, splits: tuple[str, ...]) -> None:
        for split in splits:
            url, filename, md5 = cls.split_list[split]
            download(url, root, filename, md5, extract=False)

    return Files(
        {split: (cls.split_list[split][1],) for split in SPLITS}, fetch, "put train_32x32.mat and test_32x32.mat in {root}"
    )


LAYOUTS = (
    Layout(
        "cifar10",
        "CIFAR-10 (torchvision): 60,000 32x32 colour images, 10 classes; downloaded when missing",
        10,
        "CIFAR10",
        cifar_files,
        read_cifar("labels"),
    ),
    Layout(
        "cifar100",
        "CIFAR-100 (torchvision): 60,000 32x32 colour images, 100 fine classes; downloaded when missing",
        100,
        "CIFAR100",
        cifar_files,
        read_cifar("fine_labels"),
    ),
    Layout(
        "mnist",
        "MNIST (torchvision): 70,000 28x28 handwritten digits, 10 classes; downloaded when missing",
        10,
        "MNIST",
        mnist_files,
        read_mnist,
    ),
    Layout(
        "fmnist",
        "Fashion-MNIST: 70,000 28x28 clothing images, 10 classes; Debian's dataset-fashion-mnist files when installed, "
        "else downloaded when missing",
        10,
        "FashionMNIST",
        mnist_files,
        read_mnist,
        Packaged("dataset-fashion-mnist", "fashion-mnist"),
    ),
    Layout(
        "svhn",
        "SVHN cropped digits (torchvision): 99,289 32x32 colour images, 10 classes; downloaded when missing",
        10,
        "SVHN",
        svhn_files,
        read_svhn,
    ),
)


def _missing(root: Path, paths: dict[str, tuple[str, ...]], splits: tuple[str, ...]) -> list[Path]:
    """The files of ``splits`` that are in ``root`` neither as they are nor gzipped."""
    found = [root / f for split in splits for f in paths[split]]
    return [p for p in found if not (p.is_file() or p.with_name(p.name + ".gz").is_file())]


def _read_pool(layout: Layout, root: Path, paths: dict[str, tuple[str, ...]], splits: tuple[str, ...]) -> Pool:
    """The pool of ``splits`` read from ``root``, the split of each sample in the ``split`` meta column."""
    parts = [layout.read([root / f for f in paths[s]], layout.name) for s in splits]
    y = np.concatenate([part_y for _, part_y in parts])
    if len(y) and (y.min() < 0 or y.max() >= layout.num_classes):
        raise DataSourceError(f"{layout.name}: labels outside 0..{layout.num_classes - 1} in {root}")
    meta = pd.DataFrame({"split": np.repeat(splits, [len(part_y) for _, part_y in parts])})
    return Pool(layout.name, np.concatenate([x for x, _ in parts]), y, layout.num_classes, meta)


def load_layout(layout: Layout, params: TorchvisionParams) -> Pool:
    """The pool of ``layout``'s requested splits: from the data root if given, else its Debian package's folder if that
    holds the files, else the default data root, downloading missing files first when allowed."""
    splits = SPLITS if params.split == "all" else (params.split,)
    files = layout.files()
    if layout.packaged and not params.root:
        flat = {split: tuple(Path(f).name for f in names) for split, names in files.paths.items()}
        if not _missing(layout.packaged.path(), flat, splits):
            return _read_pool(layout, layout.packaged.path(), flat, splits)
    root = data_root(params.root, layout.name)
    install = ""
    if layout.packaged:
        install = f"apt-get install {layout.packaged.package} (it installs {layout.packaged.path()}), or "
    remedy = f"{install}{files.hint.format(root=root)}"
    elsewhere = f"; --data-root DIR reads DIR instead of {root}"
    if _missing(root, files.paths, splits) and params.download:
        root.mkdir(parents=True, exist_ok=True)
        try:
            files.fetch(root, splits)
        except (OSError, RuntimeError) as exc:
            raise DataSourceError(f"{layout.name}: cannot download into {root} ({exc}); offline, {remedy}{elsewhere}") from None
    missing = _missing(root, files.paths, splits)
    if missing:
        retry = "" if params.download else " (or set source.download=true)"
        raise DataSourceError(f"{layout.name}: missing file {missing[0]}; {remedy}{retry}{elsewhere}")
    return _read_pool(layout, root, files.paths, splits)


for _layout in LAYOUTS:
    register(Source(_layout.name, _layout.description, TorchvisionParams, partial(load_layout, _layout)))
