"""The FedScale Open Images source on a tiny folder in FedScale's layout (mapping CSVs + images)."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from driftbench.data import load_pool
from driftbench.errors import DataSourceError
from tests.data.formats import (
    FEDSCALE_COLOURS as COLOURS,
)
from tests.data.formats import (
    FEDSCALE_HEADER as HEADER,
)
from tests.data.formats import (
    FEDSCALE_TEST as TEST,
)
from tests.data.formats import (
    FEDSCALE_TRAIN as TRAIN,
)
from tests.data.formats import write_fedscale as write_folder


def test_pool_from_mapping_and_images(tmp_path):
    write_folder(tmp_path)
    pool = load_pool("fedscale-openimage", {"root": str(tmp_path), "size": "8"})
    assert pool.x.shape == (6, 3, 8, 8) and pool.x.dtype == np.uint8
    assert np.abs(pool.x.astype(int) - np.array(COLOURS)[:, :, None, None]).max() <= 2  # JPEG rounding
    assert pool.y.tolist() == [3, 0, 3, 7, 0, 7] and pool.num_classes == 8
    assert pool.meta["client"].tolist() == [0, 1, 0, 2, 1, 3] and pool.meta["client"].dtype == np.int64
    assert pool.meta["split"].tolist() == ["train"] * 4 + ["test"] * 2


def test_centre_crop_keeps_the_middle(tmp_path):
    write_folder(tmp_path, train=TRAIN[:1], test=TEST[:1])
    stripes = np.zeros((10, 30, 3), dtype=np.uint8)
    stripes[:, :10, 0] = stripes[:, 10:20, 1] = stripes[:, 20:, 2] = 255
    Image.fromarray(stripes).save(tmp_path / "train/a/1.png")
    x = load_pool("fedscale-openimage", {"root": str(tmp_path), "size": "8"}).x[0]
    assert x[1, 2:6, 2:6].min() == 255 and x[0, 2:6, 2:6].max() == 0 and x[2, 2:6, 2:6].max() == 0


def test_cache_is_keyed_by_the_mapping(tmp_path):
    write_folder(tmp_path)
    first = load_pool("fedscale-openimage", {"root": str(tmp_path), "size": "8"})
    assert (tmp_path / "driftbench-cache-8.npz").is_file()
    Image.new("RGB", (30, 20), (1, 2, 3)).save(tmp_path / "train/a/1.png")
    assert np.array_equal(load_pool("fedscale-openimage", {"root": str(tmp_path), "size": "8"}).x, first.x)  # served from cache
    write_folder(tmp_path, train=TRAIN[:3])  # a changed mapping rebuilds it
    rebuilt = load_pool("fedscale-openimage", {"root": str(tmp_path), "size": "8"})
    assert len(rebuilt) == 5 and rebuilt.meta["client"].tolist() == [0, 1, 0, 1, 2]


@pytest.mark.parametrize(
    "damage,message",
    [
        (
            lambda root: (root / "client_data_mapping/test.csv").unlink(),
            r"missing file .*client_data_mapping/test.csv; put FedScale",
        ),
        (
            lambda root: (root / "client_data_mapping/train.csv").write_text("client_id,sample_path,label_id\n1,x.png,0\n"),
            r"train.csv lacks column 'label_name'",
        ),
        (lambda root: (root / "test/t/2.png").unlink(), r"missing image .*test/t/2.png"),
        (
            lambda root: (root / "client_data_mapping/test.csv").write_text(HEADER + "1,t/1.png,dog,x\n"),
            r"test.csv: column 'label_id' must hold integers >= 0",
        ),
    ],
)
def test_broken_folder_gets_one_line_naming_the_problem(tmp_path, damage, message):
    write_folder(tmp_path)
    damage(tmp_path)
    with pytest.raises(DataSourceError, match=message) as info:
        load_pool("fedscale-openimage", {"root": str(tmp_path)})
    assert "\n" not in str(info.value)
