"""Hugging Face ``datasets`` image-classification data: ``source=hf:NAME`` for a hub name or a local path.

A local path may be a ``save_to_disk`` folder, a Parquet file, or a folder of data files that
``datasets.load_dataset`` understands (split names taken from file names). Anything else is
fetched from the hub into the data root. Needs the ``hf`` extra (``pip install 'driftbench[hf]'``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from PIL import Image

from driftbench.config import require
from driftbench.data.files import data_root
from driftbench.data.images import channels_first, square
from driftbench.data.pool import Pool
from driftbench.data.sources import Source, register
from driftbench.errors import DataSourceError

GREY_MODES = ("1", "L", "I", "I;16", "F")
BATCH = 1000


@dataclass(frozen=True)
class HFParams:
    """Which Hugging Face dataset, split and columns, and the image size.

    ``dataset``: hub name or local path; ``root``: download cache (empty: ``~/.cache/driftbench/hf``);
    ``config``: the hub dataset's configuration; ``split``: a split name or ``all`` (every split in
    order, told apart by the ``split`` meta column); ``image``/``label``: column names; ``size``:
    square side to centre-crop and resize to (0 keeps the stored size, which must then be uniform).
    """

    dataset: str = ""
    root: str = ""
    config: str = ""
    split: str = "all"
    image: str = "image"
    label: str = "label"
    size: int = 0

    def __post_init__(self) -> None:
        require(bool(self.dataset), "dataset must name a hub dataset or a local path (e.g. source=hf:mnist)")
        require(self.size == 0 or 8 <= self.size <= 512, f"size must be 0 or in 8..512, got {self.size}")


def open_dataset(params: HFParams) -> Any:
    """The ``Dataset`` or ``DatasetDict`` that ``params.dataset`` names."""
    try:
        import datasets
    except ImportError:
        raise DataSourceError("hf: the Hugging Face source needs the datasets package: pip install 'driftbench[hf]'") from None
    path = Path(params.dataset).expanduser()
    cache = str(data_root(params.root, "hf"))
    try:
        if (path / "dataset_dict.json").is_file() or (path / "state.json").is_file():
            return datasets.load_from_disk(str(path))
        if path.is_file():
            return datasets.load_dataset(path.suffix.lstrip(".") or "parquet", data_files=str(path), cache_dir=cache)
        return datasets.load_dataset(str(path) if path.exists() else params.dataset, params.config or None, cache_dir=cache)
    except (OSError, ValueError, datasets.exceptions.DatasetsError) as exc:
        where = f"local {path}" if path.exists() else f"{params.dataset!r} from the Hugging Face hub"
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DataSourceError(
            f"hf: cannot load {where} ({reason}); offline, save it with Dataset.save_to_disk or as Parquet "
            "and pass the path (source=hf:/path/to/it)"
        ) from None


def splits_of(data: Any, split: str) -> dict[str, Any]:
    """The requested splits by name; a single saved ``Dataset`` counts as split ``train``."""
    available = dict(data) if hasattr(data, "keys") else {"train": data}
    if split == "all":
        return available
    if split not in available:
        raise DataSourceError(f"hf: no split {split!r}; available: {', '.join(available)}, all")
    return {split: available[split]}


def _as_image(value: Any) -> Image.Image:
    return value if isinstance(value, Image.Image) else Image.fromarray(np.asarray(value, dtype=np.uint8))


def images_of(part: Any, column: str, size: int, mode: str) -> np.ndarray:
    """The ``column`` images of one split as N x C x H x W uint8 (resized to ``size`` unless 0)."""
    arrays = []
    for batch in part.iter(batch_size=BATCH):
        for value in batch[column]:
            image = _as_image(value)
            arrays.append(square(image, size, mode) if size else channels_first(image.convert(mode)))
    shapes = {a.shape for a in arrays}
    if len(shapes) > 1:
        raise DataSourceError(f"hf: images in column {column!r} differ in size ({sorted(shapes)[:2]}...); set source.size")
    return np.stack(arrays) if arrays else np.zeros((0, 1 if mode == "L" else 3, size, size), dtype=np.uint8)


def load(params: HFParams) -> Pool:
    """The pool of the requested splits, in the dataset's order."""
    parts = splits_of(open_dataset(params), params.split)
    first = next(iter(parts.values()))
    for column in (params.image, params.label):
        if column not in first.column_names:
            raise DataSourceError(f"hf: {params.dataset} has no column {column!r}; columns: {', '.join(first.column_names)}")
    sample = _as_image(first[0][params.image]) if len(first) else None
    mode = "L" if sample is not None and sample.mode in GREY_MODES else "RGB"
    labels = {name: np.asarray(part[params.label]) for name, part in parts.items()}
    y = np.concatenate(list(labels.values()))
    if not np.issubdtype(y.dtype, np.integer) or (len(y) and y.min() < 0):
        raise DataSourceError(f"hf: column {params.label!r} must hold class ids >= 0, got {y.dtype} values")
    feature = first.features[params.label]
    num_classes = int(getattr(feature, "num_classes", None) or (y.max() + 1 if len(y) else 1))
    x = np.concatenate([images_of(part, params.image, params.size, mode) for part in parts.values()])
    meta = pd.DataFrame({"split": np.repeat(list(labels), [len(v) for v in labels.values()])})
    return Pool("hf", x, y.astype(np.int64), num_classes, meta)


register(
    Source(
        "hf",
        "Hugging Face datasets: source=hf:NAME for a hub name or a local save_to_disk/Parquet path (needs the hf extra)",
        HFParams,
        load,
        argument="dataset",
    )
)
