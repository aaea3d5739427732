"""torchvision's CIFAR-10/100, MNIST, Fashion-MNIST and SVHN, read from torchvision's on-disk layout.

Missing files are downloaded into the data root with torchvision's download helpers (URLs and
checksums from torchvision's dataset classes; progress bar included). The files are read
here, not by torchvision's dataset classes: MNIST-style IDX files and SVHN's .mat files
directly, CIFAR's pickled python batches through ``restricted_pickle``, which builds nothing
but containers and numpy arrays (torchvision's own CIFAR loader would unpickle them freely).
"""

from __future__ import annotations

import gzip
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.io
from torchvision import datasets as tv
from torchvision.datasets import utils as tv_utils

from driftbench.config import require
from driftbench.data.files import data_root
from driftbench.data.pool import Pool
from driftbench.data.restricted_pickle import load_data_pickle
from driftbench.data.sources import Source, register
from driftbench.errors import DataSourceError

SPLITS = ("train", "test")


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
class Layout:
    """Where a torchvision dataset keeps each split's files, how to read them and how to fetch them."""

    name: str
    description: str
    num_classes: int
    files: dict[str, tuple[str, ...]]  # split -> paths relative to the data root
    read: Callable[[list[Path], str], tuple[np.ndarray, np.ndarray]]  # (split's files, source) -> (x, y)
    fetch: Callable[[Path, tuple[str, ...]], None]  # (data root, splits) -> downloads
    hint: str  # what to put where, with {root}


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
    """An unsigned-byte IDX array (MNIST's format; ``path`` or ``path``.gz) of ``ndim`` dimensions."""
    try:
        if path.is_file():
            raw = path.read_bytes()
        else:
            with gzip.open(path.with_name(path.name + ".gz")) as fh:
                raw = fh.read()
    except (OSError, EOFError) as exc:
        raise DataSourceError(f"{source}: cannot read {path} or its .gz: {exc}") from None
    if len(raw) < 4 + 4 * ndim or raw[:3] != b"\x00\x00\x08" or raw[3] != ndim:
        raise DataSourceError(f"{source}: {path} is not an unsigned-byte IDX file of {ndim} dimensions")
    shape = tuple(int(d) for d in np.frombuffer(raw, dtype=">i4", count=ndim, offset=4))
    body = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if body.size != np.prod(shape):
        raise DataSourceError(f"{source}: {path} holds {body.size} bytes, its header says {shape}")
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


def fetch_archive(cls: type[tv.CIFAR10]) -> Callable[[Path, tuple[str, ...]], None]:
    """Download and extract a CIFAR-style tarball (``cls.url``, ``cls.filename``, ``cls.tgz_md5``)."""

    def fetch(root: Path, _splits: tuple[str, ...]) -> None:
        tv_utils.download_and_extract_archive(cls.url, str(root), filename=cls.filename, md5=cls.tgz_md5)

    return fetch


def fetch_mnist(cls: type[tv.MNIST]) -> Callable[[Path, tuple[str, ...]], None]:
    """Download and gunzip an MNIST-style dataset's files into ``<root>/<ClassName>/raw``, trying each mirror."""

    def fetch(root: Path, _splits: tuple[str, ...]) -> None:
        raw = root / cls.__name__ / "raw"
        for filename, md5 in cls.resources:
            if (raw / filename.removesuffix(".gz")).is_file():
                continue
            errors = []
            for mirror in cls.mirrors:
                try:
                    tv_utils.download_and_extract_archive(mirror + filename, str(raw), filename=filename, md5=md5)
                    break
                except (OSError, RuntimeError) as exc:
                    errors.append(exc)
            else:
                raise errors[-1]

    return fetch


def fetch_svhn(root: Path, splits: tuple[str, ...]) -> None:
    """Download SVHN's .mat files of ``splits`` into the data root."""
    for split in splits:
        url, filename, md5 = tv.SVHN.split_list[split]
        tv_utils.download_url(url, str(root), filename=filename, md5=md5)


def mnist_files(cls: type[tv.MNIST]) -> dict[str, tuple[str, ...]]:
    """An MNIST-style dataset's (images, labels) files per split, as torchvision leaves them after download."""
    names = [f"{cls.__name__}/raw/{name.removesuffix('.gz')}" for name, _md5 in cls.resources]
    return {"train": (names[0], names[1]), "test": (names[2], names[3])}


def cifar_layout(name: str, cls: type[tv.CIFAR10], classes: int, label_key: str, description: str) -> Layout:
    """The layout of a CIFAR dataset: torchvision's extracted python batches under ``cls.base_folder``."""
    files = {
        split: tuple(f"{cls.base_folder}/{n}" for n, _ in batches)
        for split, batches in (("train", cls.train_list), ("test", cls.test_list))
    }
    return Layout(
        name,
        description,
        classes,
        files,
        read_cifar(label_key),
        fetch_archive(cls),
        f"extract {cls.filename} into {{root}} (it holds {cls.base_folder}/)",
    )


LAYOUTS = (
    cifar_layout(
        "cifar10",
        tv.CIFAR10,
        10,
        "labels",
        "CIFAR-10 (torchvision): 60,000 32x32 colour images, 10 classes; downloaded when missing",
    ),
    cifar_layout(
        "cifar100",
        tv.CIFAR100,
        100,
        "fine_labels",
        "CIFAR-100 (torchvision): 60,000 32x32 colour images, 100 fine classes; downloaded when missing",
    ),
    Layout(
        "mnist",
        "MNIST (torchvision): 70,000 28x28 handwritten digits, 10 classes; downloaded when missing",
        10,
        mnist_files(tv.MNIST),
        read_mnist,
        fetch_mnist(tv.MNIST),
        "put MNIST's four IDX files (train-images-idx3-ubyte, ...; .gz allowed) in {root}/MNIST/raw",
    ),
    Layout(
        "fmnist",
        "Fashion-MNIST (torchvision): 70,000 28x28 clothing images, 10 classes; downloaded when missing",
        10,
        mnist_files(tv.FashionMNIST),
        read_mnist,
        fetch_mnist(tv.FashionMNIST),
        "put Fashion-MNIST's four IDX files (train-images-idx3-ubyte, ...; .gz allowed) in {root}/FashionMNIST/raw",
    ),
    Layout(
        "svhn",
        "SVHN cropped digits (torchvision): 99,289 32x32 colour images, 10 classes; downloaded when missing",
        10,
        {split: (tv.SVHN.split_list[split][1],) for split in SPLITS},
        read_svhn,
        fetch_svhn,
        "put train_32x32.mat and test_32x32.mat in {root}",
    ),
)


def _missing(layout: Layout, root: Path, splits: tuple[str, ...]) -> list[Path]:
    """The files of ``splits`` that are in the data root neither as they are nor gzipped."""
    paths = [root / f for split in splits for f in layout.files[split]]
    return [p for p in paths if not (p.is_file() or p.with_name(p.name + ".gz").is_file())]


def load_layout(layout: Layout, params: TorchvisionParams) -> Pool:
    """The pool of ``layout``'s requested splits, downloading missing files first when allowed."""
    root = data_root(params.root, layout.name)
    splits = SPLITS if params.split == "all" else (params.split,)
    hint = layout.hint.format(root=root)
    if _missing(layout, root, splits) and params.download:
        root.mkdir(parents=True, exist_ok=True)
        try:
            layout.fetch(root, splits)
        except (OSError, RuntimeError) as exc:
            raise DataSourceError(f"{layout.name}: cannot download into {root} ({exc}); offline, {hint}") from None
    missing = _missing(layout, root, splits)
    if missing:
        retry = "" if params.download else " (or set source.download=true)"
        raise DataSourceError(f"{layout.name}: missing file {missing[0]}; {hint}{retry}")
    parts = [layout.read([root / f for f in layout.files[s]], layout.name) for s in splits]
    y = np.concatenate([part_y for _, part_y in parts])
    if len(y) and (y.min() < 0 or y.max() >= layout.num_classes):
        raise DataSourceError(f"{layout.name}: labels outside 0..{layout.num_classes - 1} in {root}")
    meta = pd.DataFrame({"split": np.repeat(splits, [len(part_y) for _, part_y in parts])})
    return Pool(layout.name, np.concatenate([x for x, _ in parts]), y, layout.num_classes, meta)


for _layout in LAYOUTS:
    register(Source(_layout.name, _layout.description, TorchvisionParams, partial(load_layout, _layout)))
