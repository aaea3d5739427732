"""Tiny datasets written in each real source's exact on-disk format (shared by the data and contracts tests)."""

from __future__ import annotations

import gzip
import pickle
from pathlib import Path

import numpy as np
import scipy.io
import torchvision.datasets as tv
from PIL import Image

Split = tuple[np.ndarray, np.ndarray]  # (x as N x C x H x W uint8, y)


def images(rng: np.random.Generator, n: int, shape: tuple[int, ...]) -> np.ndarray:
    return rng.integers(0, 256, size=(n, *shape), dtype=np.uint8)


def write_cifar(root: Path, cls: type, label_key: bytes, rng: np.random.Generator) -> dict[str, Split]:
    """CIFAR python batches as the Toronto tarball holds them: protocol-2 pickled dicts with bytes keys."""
    folder = root / cls.base_folder
    folder.mkdir(parents=True)
    expected = {}
    for split, files in (("train", cls.train_list), ("test", cls.test_list)):
        xs, ys = [], []
        for name, _md5 in files:
            x, y = images(rng, 2, (3, 32, 32)), rng.integers(0, 10, 2)
            batch = {
                b"batch_label": name.encode(),
                b"data": x.reshape(2, -1),
                label_key: y.tolist(),
                b"filenames": [b"a.png", b"b.png"],
            }
            (folder / name).write_bytes(pickle.dumps(batch, protocol=2))
            xs.append(x)
            ys.append(y)
        expected[split] = (np.concatenate(xs), np.concatenate(ys))
    (folder / cls.meta["filename"]).write_bytes(pickle.dumps({cls.meta["key"].encode(): [b"a", b"b"]}, protocol=2))
    return expected


def write_idx(path: Path, array: np.ndarray, packed: bool) -> None:
    header = bytes([0, 0, 8, array.ndim]) + np.asarray(array.shape, dtype=">i4").tobytes()
    raw = header + array.tobytes()
    if packed:
        path.with_name(path.name + ".gz").write_bytes(gzip.compress(raw))
    else:
        path.write_bytes(raw)


def write_idx_files(folder: Path, names: list[str], rng: np.random.Generator, packed: bool) -> dict[str, Split]:
    """MNIST-style IDX files named ``names`` (train images, train labels, test images, test labels; without .gz)."""
    folder.mkdir(parents=True)
    expected = {}
    for split, (image_file, label_file), n in (("train", names[:2], 5), ("test", names[2:], 3)):
        x, y = images(rng, n, (28, 28)), rng.integers(0, 10, n).astype(np.uint8)
        write_idx(folder / image_file, x, packed)
        write_idx(folder / label_file, y, packed)
        expected[split] = (x[:, None], y.astype(np.int64))
    return expected


def write_mnist(root: Path, cls: type, rng: np.random.Generator, packed: bool) -> dict[str, Split]:
    """MNIST-style IDX files in ``<root>/<Class>/raw`` (plain, as torchvision leaves them, or still gzipped)."""
    names = [name.removesuffix(".gz") for name, _md5 in cls.resources]
    return write_idx_files(root / cls.__name__ / "raw", names, rng, packed)


# What `dpkg -L dataset-fashion-mnist` lists in /usr/share/datasets/fashion-mnist, each gzipped.
DEBIAN_FMNIST = ["train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"]


def write_debian_fmnist(datasets: Path, rng: np.random.Generator) -> dict[str, Split]:
    """Debian's dataset-fashion-mnist under ``datasets`` (for /usr/share/datasets): fashion-mnist/*-ubyte.gz, no sub-folders."""
    return write_idx_files(datasets / "fashion-mnist", DEBIAN_FMNIST, rng, packed=True)


def write_svhn(root: Path, rng: np.random.Generator) -> dict[str, Split]:
    """SVHN .mat files: X is 32 x 32 x 3 x N, y is N x 1 with 10 standing for digit 0."""
    root.mkdir(parents=True)
    expected = {}
    for split, n in (("train", 4), ("test", 2)):
        x, y = images(rng, n, (3, 32, 32)), np.array([10, 1, 9, 10][:n])
        scipy.io.savemat(root / tv.SVHN.split_list[split][1], {"X": x.transpose(2, 3, 1, 0), "y": y[:, None].astype(np.uint8)})
        expected[split] = (x, y % 10)
    return expected


TORCHVISION_WRITERS = {
    "cifar10": lambda root, rng: write_cifar(root, tv.CIFAR10, b"labels", rng),
    "cifar100": lambda root, rng: write_cifar(root, tv.CIFAR100, b"fine_labels", rng),
    "mnist": lambda root, rng: write_mnist(root, tv.MNIST, rng, packed=False),
    "fmnist": lambda root, rng: write_mnist(root, tv.FashionMNIST, rng, packed=True),
    "svhn": write_svhn,
}


FEDSCALE_HEADER = "client_id,sample_path,label_name,label_id\n"
FEDSCALE_TRAIN = [(12, "a/1.png", "cat", 3), (5, "a/2.jpg", "dog", 0), (12, "b/3.png", "cat", 3), (9, "4.png", "tree", 7)]
FEDSCALE_TEST = [(5, "t/1.png", "dog", 0), (30, "t/2.png", "tree", 7)]
FEDSCALE_COLOURS = [(200, 10, 10), (10, 200, 10), (10, 10, 200), (90, 90, 90), (250, 250, 0), (0, 128, 255)]


def write_fedscale(root: Path, train=FEDSCALE_TRAIN, test=FEDSCALE_TEST) -> None:
    """client_data_mapping/{train,test}.csv and solid-colour images of assorted sizes and modes under train/ and test/."""
    (root / "client_data_mapping").mkdir(parents=True, exist_ok=True)
    colours = iter(FEDSCALE_COLOURS)
    for split, rows in (("train", train), ("test", test)):
        lines = [f"{c},{p},{name},{label}\n" for c, p, name, label in rows]
        (root / "client_data_mapping" / f"{split}.csv").write_text(FEDSCALE_HEADER + "".join(lines))
        for k, (_c, path, _name, _label) in enumerate(rows):
            target = root / split / path
            target.parent.mkdir(parents=True, exist_ok=True)
            Image.new("RGB", (30 + 7 * k, 20 + 3 * k), next(colours)).save(target)


FMOW_HEADER = (
    "split,img_filename,img_path,spatial_reference,epsg,category,visible,img_width,img_height,"
    "country_code,cloud_cover,timestamp,lat,lon,region"
)
# split, epsg, category, timestamp, lat, lon
FMOW_ROWS = [
    ("train", 32617, "airport", "2015-03-12T15:59:45Z", 35.0, -80.5),  # zone 17, band S -> 1714
    ("seq", 32617, "zoo", "2016-01-01T00:00:00Z", 35.0, -80.5),  # sequestered: dropped
    ("val", 32733, "crop_field", "2016-07-01T10:00:00.5Z", -10.0, 14.9),  # zone 33, band L -> 3308
    ("train", 32617, "airport", "2014-12-31T23:59:59Z", 35.0, -80.5),  # before 2015: dropped
    ("test", 4326, "zoo", "2017-02-03T04:05:06Z", 50.0, 10.5),  # not UTM: zone 32 from lon, band U -> 3216
]


def write_fmow(root: Path, rows=FMOW_ROWS, header=FMOW_HEADER, images=True) -> None:
    """rgb_metadata.csv and images/rgb_img_<row>.png (grey level 40 * (row + 1)) for the rows a loader should read."""
    (root / "images").mkdir(parents=True, exist_ok=True)
    lines = [header]
    for i, (split, epsg, category, stamp, lat, lon) in enumerate(rows):
        lines.append(
            f"{split},img_{i}.jpg,{split}/{category}/img_{i}.jpg,PROJCS,{epsg},{category},True,224,224,USA,0,{stamp},{lat},{lon},Americas"
        )
        if images and split != "seq" and not stamp.startswith("2014"):
            Image.new("RGB", (24, 24), (40 * (i + 1),) * 3).save(root / "images" / f"rgb_img_{i}.png")
    (root / "rgb_metadata.csv").write_text("\n".join(lines) + "\n")


def colour_images(values: list[int], mode: str = "RGB", size: tuple[int, int] = (12, 10)) -> list[Image.Image]:
    """Solid-colour PIL images, one per value."""
    return [Image.new(mode, size, (v, 255 - v, 7) if mode == "RGB" else v) for v in values]


def make_hf_dataset(values: list[int], labels: list[int], mode: str = "RGB"):
    """A Hugging Face dataset of solid-colour images with a ClassLabel column ``fine``."""
    import datasets

    features = datasets.Features({"img": datasets.Image(), "fine": datasets.ClassLabel(names=["a", "b", "c", "d"])})
    return datasets.Dataset.from_dict({"img": colour_images(values, mode), "fine": labels}, features=features)
