"""The run record (config.json, rounds.csv, summary.json): paths, columns and atomic writers."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from driftbench.traces.io import atomic_write

ROUND_COLUMNS = (
    "round", "sim_seconds", "wall_seconds", "accuracy_mean", "accuracy_p10", "accuracy_p90", "ari",
    "n_clusters", "cluster_seconds", "upload_bytes", "download_bytes",
)
# Fields measured on the wall clock (or including such a measurement); they differ between identical runs.
WALL_CLOCK_FIELDS = ("wall_seconds", "cluster_seconds", "sim_seconds")


def run_dir(root: Path, trace: str, method: str, seed: int) -> Path:
    """``<root>/<trace>/<method>/seed<k>``; a trace file's name is its stem."""
    return Path(root) / Path(trace).stem / method / f"seed{seed}"


def _json_ready(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_ready(v) for v in value]
    return value


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` as indented JSON atomically (non-finite floats become null)."""
    text = json.dumps(_json_ready(data), indent=2, sort_keys=False) + "\n"
    atomic_write(path, lambda fh: fh.write(text.encode()))


def write_rounds(path: Path, rows: list[dict[str, Any]]) -> None:
    """Write the per-evaluation rows as CSV with the contract's columns, atomically."""
    buffer = io.StringIO()
    pd.DataFrame(rows, columns=list(ROUND_COLUMNS)).to_csv(buffer, index=False)
    atomic_write(path, lambda fh: fh.write(buffer.getvalue().encode()))


def read_json(path: Path) -> dict[str, Any]:
    """Read a JSON file of the run record."""
    with open(path) as fh:
        return json.load(fh)
