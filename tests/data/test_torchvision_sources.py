"""torchvision sources read tiny files written in torchvision's exact on-disk formats; nothing is downloaded."""

from __future__ import annotations

import os
import pickle
import urllib.error
from pathlib import Path

import numpy as np
import pytest
import torchvision.datasets as tv
import torchvision.datasets.utils as tv_utils

from driftbench.data import load_pool, torchvision_sources
from driftbench.errors import DataSourceError
from tests.data.formats import TORCHVISION_WRITERS, write_cifar, write_debian_fmnist, write_mnist


@pytest.fixture(autouse=True)
def no_downloads(monkeypatch):
    """Any download attempt fails as if offline (a test that expects one replaces this)."""

    def offline(*_args, **_kwargs):
        raise urllib.error.URLError("downloads are disabled in tests")

    monkeypatch.setattr(tv_utils, "download_url", offline)


@pytest.mark.parametrize("name", sorted(TORCHVISION_WRITERS))
def test_source_reads_torchvision_layout(name, tmp_path):
    expected = TORCHVISION_WRITERS[name](tmp_path / "data", np.random.default_rng(0))
    pool = load_pool(name, {"root": str(tmp_path / "data"), "download": "false"})
    x = np.concatenate([expected["train"][0], expected["test"][0]])
    y = np.concatenate([expected["train"][1], expected["test"][1]])
    assert pool.x.dtype == np.uint8 and np.array_equal(pool.x, x)
    assert np.array_equal(pool.y, y)
    assert pool.meta["split"].tolist() == ["train"] * len(expected["train"][1]) + ["test"] * len(expected["test"][1])
    assert pool.num_classes == (100 if name == "cifar100" else 10)
    test_only = load_pool(name, {"root": str(tmp_path / "data"), "split": "test"})
    assert np.array_equal(test_only.x, expected["test"][0]) and set(test_only.meta["split"]) == {"test"}


def test_missing_files_without_download_name_the_file(tmp_path):
    with pytest.raises(DataSourceError, match=r"missing file .*cifar-10-batches-py/data_batch_1; extract cifar-10-python.tar.gz"):
        load_pool("cifar10", {"root": str(tmp_path), "download": "false"})


def test_offline_download_says_what_to_put_where(tmp_path, monkeypatch):
    calls = []

    def offline(url, root, filename=None, md5=None, **_kw):
        calls.append((url, Path(root)))
        raise urllib.error.URLError("no network")

    monkeypatch.setattr(tv_utils, "download_url", offline)
    with pytest.raises(DataSourceError, match=r"cannot download into .*no network.*offline, put MNIST's four IDX files"):
        load_pool("mnist", {"root": str(tmp_path)})
    assert [url for url, _ in calls] == [m + tv.MNIST.resources[0][0] for m in tv.MNIST.mirrors]
    assert {root for _, root in calls} == {tmp_path / "MNIST" / "raw"}
    calls.clear()
    with pytest.raises(DataSourceError, match="offline, extract cifar-10-python.tar.gz"):
        load_pool("cifar10", {"root": str(tmp_path)})
    assert calls == [(tv.CIFAR10.url, tmp_path)]


def test_cifar_batch_cannot_run_code(tmp_path):
    write_cifar(tmp_path, tv.CIFAR10, b"labels", np.random.default_rng(0))
    marker = tmp_path / "pwned"

    class Payload:
        def __reduce__(self):
            return os.mkdir, (str(marker),)

    (tmp_path / tv.CIFAR10.base_folder / "data_batch_1").write_bytes(pickle.dumps({b"data": Payload()}, protocol=2))
    with pytest.raises(DataSourceError, match="data_batch_1 is not a plain data pickle: refusing global"):
        load_pool("cifar10", {"root": str(tmp_path)})
    assert not marker.exists()


def test_malformed_files_are_named(tmp_path):
    write_mnist(tmp_path, tv.MNIST, np.random.default_rng(0), packed=False)
    (tmp_path / "MNIST/raw/t10k-labels-idx1-ubyte").write_bytes(b"\x00\x00\x0d\x01garbage")
    with pytest.raises(DataSourceError, match="t10k-labels-idx1-ubyte is not an unsigned-byte IDX file"):
        load_pool("mnist", {"root": str(tmp_path)})
    write_cifar(tmp_path / "c", tv.CIFAR10, b"labels", np.random.default_rng(0))
    (tmp_path / "c" / tv.CIFAR10.base_folder / "test_batch").write_bytes(pickle.dumps({b"data": np.zeros((1, 3072), np.uint8)}))
    with pytest.raises(DataSourceError, match="test_batch lacks key 'labels'"):
        load_pool("cifar10", {"root": str(tmp_path / "c")})


def test_fmnist_reads_debian_folder_unless_a_data_root_is_given(tmp_path, monkeypatch):
    monkeypatch.setattr(torchvision_sources, "SYSTEM_DATASETS", tmp_path / "datasets")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    debian = write_debian_fmnist(tmp_path / "datasets", np.random.default_rng(0))
    torchvision = write_mnist(tmp_path / "root", tv.FashionMNIST, np.random.default_rng(1), packed=False)
    for pool, expected in (
        (load_pool("fmnist", {}), debian),
        (load_pool("fmnist", {"root": str(tmp_path / "root")}), torchvision),
    ):
        assert pool.x.shape == (8, 1, 28, 28) and pool.x.dtype == np.uint8 and pool.y.dtype == np.int64
        assert np.array_equal(pool.x, np.concatenate([expected["train"][0], expected["test"][0]]))
        assert np.array_equal(pool.y, np.concatenate([expected["train"][1], expected["test"][1]]))
        assert pool.meta["split"].tolist() == ["train"] * 5 + ["test"] * 3
    (tmp_path / "datasets/fashion-mnist/train-labels-idx1-ubyte.gz").unlink()
    assert np.array_equal(load_pool("fmnist", {"split": "test"}).x, debian["test"][0])
    with pytest.raises(DataSourceError, match=r"missing file .*home/\.cache/driftbench/fmnist/FashionMNIST/raw/train-images"):
        load_pool("fmnist", {"download": "false"})  # an incomplete Debian folder is passed over


def test_real_fashion_mnist_from_debian():
    folder = torchvision_sources.SYSTEM_DATASETS / "fashion-mnist"
    if not folder.is_dir():
        if os.environ.get("DRIFTBENCH_REQUIRE_FMNIST"):
            pytest.fail(f"{folder} is required here (.ci/run installs dataset-fashion-mnist) but is missing")
        pytest.skip("Debian's dataset-fashion-mnist is not installed (apt-get install dataset-fashion-mnist)")
    pool = load_pool("fmnist", {"download": "false"})
    assert pool.x.shape == (70_000, 1, 28, 28) and pool.x.dtype == np.uint8 and pool.x.max() == 255
    train = (pool.meta["split"] == "train").to_numpy()
    assert train.sum() == 60_000 and train[:60_000].all()
    assert np.bincount(pool.y[train]).tolist() == [6_000] * 10
    assert np.bincount(pool.y[~train]).tolist() == [1_000] * 10


def test_missing_fmnist_is_one_line_naming_the_package_and_data_root(tmp_path, monkeypatch, capsys):
    from driftbench.cli import main

    monkeypatch.setattr(torchvision_sources, "SYSTEM_DATASETS", tmp_path / "datasets")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    trace = ["trace", "show", "label-shift", "--set", "source=fmnist"]
    for args, says in (
        (["--set", "source.download=false", "--data-root", str(tmp_path / "empty")], "missing file"),
        ([], "cannot download into"),  # the default: a download, offline here
    ):
        assert main([*trace, *args]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and says in err, err
        assert "apt-get install dataset-fashion-mnist (it installs " in err and "--data-root DIR reads DIR instead of" in err


TINY_TRACE = [
    "--set",
    "clients=4",
    "--set",
    "rounds=4",
    "--set",
    "drift_every=2",
    "--set",
    "train_samples=4",
    "--set",
    "test_samples=2",
]


def test_data_root_option_reaches_the_source_and_trace_files(tmp_path, capsys):
    from driftbench.cli import main

    first, moved = tmp_path / "first", tmp_path / "moved"
    write_cifar(first, tv.CIFAR10, b"labels", np.random.default_rng(0))
    assert main(["trace", "show", "label-swap", "--set", "source=cifar10", "--data-root", str(first), *TINY_TRACE]) == 0
    trace_file = tmp_path / "tiny.trace"
    assert (
        main(
            [
                "trace",
                "make",
                "label-swap",
                "--set",
                "source=cifar10",
                "--set",
                "source.download=false",
                "--data-root",
                str(first),
                *TINY_TRACE,
                "--out",
                str(trace_file),
            ]
        )
        == 0
    )
    first.rename(moved)
    capsys.readouterr()
    assert main(["trace", "show", str(trace_file)]) == 2  # the recorded folder is gone
    assert "missing file" in capsys.readouterr().err
    assert main(["trace", "show", str(trace_file), "--data-root", str(moved)]) == 0
    assert main(["trace", "show", "label-swap", "--data-root", str(moved), *TINY_TRACE]) == 0  # digits: no files, ignored
