"""The Hugging Face source on a dataset saved with save_to_disk and as Parquet; nothing is downloaded."""

from __future__ import annotations

import datasets
import numpy as np
import pytest

from driftbench.data import load_pool
from driftbench.errors import ConfigError, DataSourceError, UnknownNameError
from driftbench.traces.catalog import apply_sets, load_spec
from tests.data.formats import make_hf_dataset as make_dataset


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    path = tmp_path_factory.mktemp("hf") / "saved"
    splits = {"train": make_dataset([10, 20, 30], [0, 1, 1]), "test": make_dataset([40, 50], [2, 0])}
    datasets.DatasetDict(splits).save_to_disk(str(path))
    return path


def test_saved_dataset_loads_every_split(saved):
    pool = load_pool(f"hf:{saved}", {"image": "img", "label": "fine"})
    assert pool.x.shape == (5, 3, 10, 12) and pool.x.dtype == np.uint8
    assert pool.x[:, 0, 0, 0].tolist() == [10, 20, 30, 40, 50]
    assert pool.x[:, 1, 5, 5].tolist() == [245, 235, 225, 215, 205]
    assert pool.y.tolist() == [0, 1, 1, 2, 0]
    assert pool.num_classes == 4  # from the ClassLabel feature, not the labels seen
    assert pool.meta["split"].tolist() == ["train"] * 3 + ["test"] * 2


def test_split_and_size(saved):
    pool = load_pool("hf", {"dataset": str(saved), "image": "img", "label": "fine", "split": "test", "size": "8"})
    assert pool.x.shape == (2, 3, 8, 8)
    assert (pool.x[:, 0] == np.array([40, 50])[:, None, None]).all()
    with pytest.raises(DataSourceError, match="no split 'valid'; available: train, test, all"):
        load_pool(f"hf:{saved}", {"image": "img", "label": "fine", "split": "valid"})


def test_parquet_file_and_grey_images(tmp_path):
    path = tmp_path / "grey.parquet"
    make_dataset([3, 4, 5], [3, 2, 1], mode="L").to_parquet(str(path))
    pool = load_pool(f"hf:{path}", {"image": "img", "label": "fine", "root": str(tmp_path / "cache")})
    assert pool.x.shape == (3, 1, 10, 12)
    assert pool.x[:, 0, 0, 0].tolist() == [3, 4, 5] and pool.y.tolist() == [3, 2, 1]


def test_missing_column_and_empty_name_are_errors(saved):
    with pytest.raises(DataSourceError, match="has no column 'image'; columns: img, fine"):
        load_pool(f"hf:{saved}", {"label": "fine"})
    with pytest.raises(ConfigError, match="dataset must name a hub dataset or a local path"):
        load_pool("hf")
    with pytest.raises(UnknownNameError, match="unknown source 'nope:x'"):
        load_pool("nope:x")


def test_hub_failure_says_how_to_work_offline(monkeypatch, tmp_path):
    def offline(*_args, **_kwargs):
        raise ConnectionError("Couldn't reach 'someone/imgs' on the Hub")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(DataSourceError, match=r"cannot load 'someone/imgs' from the Hugging Face hub .*save_to_disk"):
        load_pool("hf:someone/imgs", {"root": str(tmp_path)})


def test_trace_source_set_resolves_the_family(saved):
    spec = apply_sets(load_spec("label-swap"), {"source": f"hf:{saved}", "source.image": "img", "source.label": "fine"})
    assert spec.source == "hf"
    assert (spec.source_params.dataset, spec.source_params.image) == (str(saved), "img")
