"""WILDS FMoW (fmow_v1.1) from a local folder: timestamped satellite images with a UTM-zone region each.

The folder holds WILDS' layout: ``rgb_metadata.csv`` (split, img_filename, img_path,
spatial_reference, epsg, category, visible, img_width, img_height, country_code, cloud_cover,
timestamp, lat, lon, region) and ``images/rgb_img_<row>.png``, where ``<row>`` is the row's index
in the CSV. Sequestered (``seq``) rows are dropped, as WILDS does, and so are images taken
before ``since``. Decoded images are cached like FedScale's (``driftbench-cache-<size>.npz``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from driftbench.config import require
from driftbench.data.files import cached_array, data_root, digest_files, read_table
from driftbench.data.images import decode_files
from driftbench.data.pool import Pool
from driftbench.data.sources import Source, register
from driftbench.errors import DataSourceError

NAME = "wilds-fmow"
COLUMNS = ("split", "category", "timestamp", "epsg", "lat", "lon")
CACHE_FORMAT = 1  # bump when the decoding changes, so old caches are rebuilt


def _is_naive_date(text: str) -> bool:
    try:
        return pd.Timestamp(text).tz is None
    except ValueError:
        return False


@dataclass(frozen=True)
class FMoWParams:
    """Data folder, image size and start date of the FMoW pool.

    ``root``: WILDS' fmow_v1.1 folder (empty: ``~/.cache/driftbench/wilds-fmow``); ``size``: image side;
    ``since``: keep images taken on or after this date (FIELDING keeps those after 2015-01-01).
    """

    root: str = ""
    size: int = 32
    since: str = "2015-01-01"

    def __post_init__(self) -> None:
        require(8 <= self.size <= 256, f"size must be in 8..256, got {self.size}")
        require(_is_naive_date(self.since), f"since must be a date like 2015-01-01 (UTC, no zone), got {self.since!r}")


def utm_grid_zone(epsg: pd.Series, lat: pd.Series, lon: pd.Series) -> np.ndarray:
    """UTM grid zone id = 100 x zone number + latitude band (C=0 .. X=19).

    FIELDING's 302 clients are "unique UTM zones", more than the 120 zone-and-hemisphere EPSG
    codes, so a zone here is a grid zone (number and 8-degree latitude band, as fMoW's own ``utm``
    field). The number comes from a UTM EPSG code (326zz north, 327zz south), else from the longitude.
    """
    code = pd.to_numeric(epsg, errors="coerce").to_numpy(dtype=float)
    is_utm = np.isin(code // 100, (326, 327))
    from_lon = np.floor((lon.to_numpy(dtype=float) + 180.0) / 6.0) % 60 + 1
    zone = np.where(is_utm, code % 100, from_lon)
    band = np.clip(np.floor((lat.to_numpy(dtype=float) + 80.0) / 8.0), 0, 19)
    grid_zone: np.ndarray = (100 * zone + band).astype(np.int64)
    return grid_zone


def parse_timestamps(table: pd.DataFrame, path: object) -> pd.Series:
    """The ``timestamp`` column as naive UTC datetime64[ns]."""
    try:
        stamps = pd.to_datetime(table["timestamp"], utc=True, format="ISO8601")
    except (ValueError, TypeError) as exc:
        raise DataSourceError(f"{NAME}: {path}: column 'timestamp' is not ISO 8601 ({str(exc).splitlines()[0]})") from None
    return stamps.dt.tz_localize(None).astype("datetime64[ns]")


def load(params: FMoWParams) -> Pool:
    """Non-sequestered images taken on or after ``since``, in CSV order, with ``timestamp``, ``region``, ``split`` meta."""
    root = data_root(params.root, NAME)
    path = root / "rgb_metadata.csv"
    hint = f"put WILDS' fmow_v1.1 folder at {root}: rgb_metadata.csv and images/rgb_img_<row>.png"
    table = read_table(path, COLUMNS, NAME, hint)
    for column in ("lat", "lon"):
        if pd.to_numeric(table[column], errors="coerce").isna().any():
            raise DataSourceError(f"{NAME}: {path}: column {column!r} must hold numbers")
    # WILDS numbers its 62 categories in alphabetical order.
    categories = sorted(table["category"].astype(str).unique())
    stamps = parse_timestamps(table, path)
    rows = np.flatnonzero((table["split"] != "seq").to_numpy() & (stamps >= pd.Timestamp(params.since)).to_numpy())
    if not len(rows):
        raise DataSourceError(f"{NAME}: {path} has no non-sequestered image taken on or after {params.since}")
    kept = table.iloc[rows]
    x = cached_array(
        root / f"driftbench-cache-{params.size}.npz",
        digest_files([path], params.size, params.since, CACHE_FORMAT),
        lambda: decode_files([root / "images" / f"rgb_img_{row}.png" for row in rows], params.size, NAME),
    )
    y = pd.Categorical(kept["category"].astype(str), categories=categories).codes.astype(np.int64)
    meta = pd.DataFrame(
        {
            "timestamp": stamps.iloc[rows].to_numpy(),
            "region": utm_grid_zone(kept["epsg"], kept["lat"], kept["lon"]),
            "split": kept["split"].astype(str).to_numpy(),
        }
    )
    return Pool(NAME, x, y, len(categories), meta)


register(
    Source(
        NAME,
        "WILDS FMoW satellite images from a local folder (rgb_metadata.csv + images): timestamps, UTM-zone regions, 62 classes",
        FMoWParams,
        load,
    )
)
