"""The shipped archive that placing and the staleness check read: a tiny one, made once, and altered copies of it."""

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from driftbench.cli import main
from driftbench.record.archive_write import write_table

SUITE = """description = "a tiny shipped archive"
methods = ["fedavg", "oracle"]
seeds = [0, 1]

[traces.label-swap]
clients = 6
rounds = 6
drift_every = 3
train = { participants = 3, local_steps = 2 }

[traces.static]
clients = 6
rounds = 6
train = { participants = 3, local_steps = 2 }
"""


@pytest.fixture(scope="package")
def shipped(tmp_path_factory):
    """A tiny shipped archive: label-swap and static (overridden small) x fedavg, oracle x seeds 0, 1."""
    root = tmp_path_factory.mktemp("shipped")
    (root / "tiny.toml").write_text(SUITE)
    runs, archive = root / "runs", root / "results" / "tiny"
    assert main(["sweep", "--suite", str(root / "tiny.toml"), "--out", str(runs), "--jobs", "1", "--quiet"]) == 0
    assert main(["archive", str(runs), "--out", str(archive), "--quiet"]) == 0
    return archive


@pytest.fixture
def alter():
    """How to alter an archive: ``alter(archive, out, change, column)`` copies it to ``out``, ``change(run, parsed JSON)``
    applied to each runs.parquet row's ``column`` (config or summary)."""
    return altered


def altered(archive: Path, out: Path, change, column: str = "config") -> Path:
    """A copy of ``archive`` at ``out`` whose runs.parquet rows have ``change(run, parsed JSON)`` applied to a column."""
    out.mkdir(parents=True)
    for file in archive.iterdir():
        (out / file.name).write_bytes(file.read_bytes())
    runs = pq.read_table(out / "runs.parquet").to_pandas()
    for i in runs.index:
        data = json.loads(runs.at[i, column])
        change(runs.loc[i], data)
        runs.at[i, column] = json.dumps(data)
    write_table(out / "runs.parquet", runs, "runs")
    return out
