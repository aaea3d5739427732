"""The WILDS FMoW source on a tiny fmow_v1.1 folder (rgb_metadata.csv with WILDS' header + PNGs)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from driftbench.data import load_pool
from driftbench.errors import ConfigError, DataSourceError
from tests.data.formats import FMOW_HEADER as HEADER
from tests.data.formats import write_fmow as write_folder


def test_pool_keeps_recent_unsequestered_rows_with_meta(tmp_path):
    write_folder(tmp_path)
    pool = load_pool("wilds-fmow", {"root": str(tmp_path), "size": "8"})
    assert pool.x.shape == (3, 3, 8, 8)
    assert pool.x[:, 0, 4, 4].tolist() == [40, 120, 200]  # rows 0, 2 and 4
    assert pool.num_classes == 3 and pool.y.tolist() == [0, 1, 2]  # airport, crop_field, zoo in alphabetical order
    assert pool.meta["timestamp"].dtype == np.dtype("datetime64[ns]")
    assert pool.meta["timestamp"].tolist() == [
        pd.Timestamp("2015-03-12 15:59:45"),
        pd.Timestamp("2016-07-01 10:00:00.5"),
        pd.Timestamp("2017-02-03 04:05:06"),
    ]
    assert pool.meta["region"].dtype == np.int64 and pool.meta["region"].tolist() == [1714, 3308, 3216]
    assert pool.meta["split"].tolist() == ["train", "val", "test"]


def test_since_filters_by_date(tmp_path):
    write_folder(tmp_path)
    pool = load_pool("wilds-fmow", {"root": str(tmp_path), "size": "8", "since": "2016-06-01"})
    assert pool.meta["split"].tolist() == ["val", "test"] and pool.num_classes == 3
    with pytest.raises(ConfigError, match="since must be a date"):
        load_pool("wilds-fmow", {"root": str(tmp_path), "since": "last tuesday"})


def test_missing_folder_column_and_image_are_named(tmp_path):
    with pytest.raises(DataSourceError, match=r"missing file .*rgb_metadata.csv; put WILDS' fmow_v1.1 folder"):
        load_pool("wilds-fmow", {"root": str(tmp_path / "nowhere")})
    write_folder(tmp_path, header=HEADER.replace("timestamp", "time"))
    with pytest.raises(DataSourceError, match="rgb_metadata.csv lacks column 'timestamp'"):
        load_pool("wilds-fmow", {"root": str(tmp_path)})
    write_folder(tmp_path / "b", images=False)
    with pytest.raises(DataSourceError, match=r"missing image .*images/rgb_img_0.png"):
        load_pool("wilds-fmow", {"root": str(tmp_path / "b")})
