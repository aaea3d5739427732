"""FedScale's Open Images benchmark from a local folder: real clients from its client-data mapping.

The folder holds FedScale's layout: ``client_data_mapping/{train,test}.csv`` (header
``client_id,sample_path,label_name,label_id``) and the images at ``train/<sample_path>`` and
``test/<sample_path>``. Images are decoded once, centre-cropped to a square, resized to
``size`` and cached as uint8 in ``<root>/driftbench-cache-<size>.npz``, keyed by a hash of the
mapping files (a changed mapping rebuilds the cache).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from driftbench.config import require
from driftbench.data.files import cached_array, data_root, digest_files, read_table
from driftbench.data.images import decode_files
from driftbench.data.pool import Pool
from driftbench.data.sources import Source, register
from driftbench.errors import DataSourceError

NAME = "fedscale-openimage"
SPLITS = ("train", "test")
COLUMNS = ("client_id", "sample_path", "label_name", "label_id")
CACHE_FORMAT = 1  # bump when the decoding changes, so old caches are rebuilt


@dataclass(frozen=True)
class FedScaleParams:
    """``root``: FedScale's openImg folder (empty: ``~/.cache/driftbench/fedscale-openimage``); ``size``: image side."""

    root: str = ""
    size: int = 32

    def __post_init__(self) -> None:
        require(8 <= self.size <= 256, f"size must be in 8..256, got {self.size}")


def read_mapping(csvs: list[Path], hint: str) -> pd.DataFrame:
    """The train then test mapping rows with a ``split`` column; label ids checked to be integers >= 0."""
    tables = []
    for split, path in zip(SPLITS, csvs):
        table = read_table(path, COLUMNS, NAME, hint)
        if not pd.api.types.is_integer_dtype(table["label_id"]) or (len(table) and table["label_id"].min() < 0):
            raise DataSourceError(f"{NAME}: {path}: column 'label_id' must hold integers >= 0")
        tables.append(table.assign(split=split))
    mapping = pd.concat(tables, ignore_index=True)
    if mapping.empty:
        raise DataSourceError(f"{NAME}: {csvs[0]} and {csvs[1]} list no samples")
    return mapping


def load(params: FedScaleParams) -> Pool:
    """Every sample of the train and test mappings, in file order, with ``client`` and ``split`` meta columns."""
    root = data_root(params.root, NAME)
    hint = (
        f"put FedScale's openImg folder at {root}: client_data_mapping/{{train,test}}.csv and the images under train/ and test/"
    )
    csvs = [root / "client_data_mapping" / f"{split}.csv" for split in SPLITS]
    mapping = read_mapping(csvs, hint)
    paths = [root / split / sample for split, sample in zip(mapping["split"], mapping["sample_path"])]
    x = cached_array(
        root / f"driftbench-cache-{params.size}.npz",
        digest_files(csvs, params.size, CACHE_FORMAT),
        lambda: decode_files(paths, params.size, NAME),
    )
    y = mapping["label_id"].to_numpy(np.int64)
    meta = pd.DataFrame(
        {
            "client": pd.factorize(mapping["client_id"])[0].astype(np.int64),
            "split": mapping["split"].to_numpy(),
        }
    )
    return Pool(NAME, x, y, int(y.max()) + 1, meta)


register(
    Source(
        NAME,
        "FedScale Open Images from a local folder (client_data_mapping/*.csv + images): real clients, 596 classes",
        FedScaleParams,
        load,
    )
)
