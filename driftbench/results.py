"""A runs folder or an archive as pandas DataFrames, for notebooks: the records the leaderboard reads, the same way.

``runs`` has one row per run (its summary's fields, nested ones flattened with dots, and its
config under ``config.``), ``evaluations`` one row per rounds.csv row, ``events`` one row per
method event, ``diagnostics`` one row per decision quantity a method measured, ``matrices`` one
row per entry of a run's segment accuracy matrix and ``detections`` one row per drift event a
run's reactions were scored against (docs "Scorecard"); each table starts with the run's
``trace``, ``method``, ``seed`` and ``path`` (its folder, or its place in an archive). A reproduce
folder's runs are there too, told apart by their path.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pandas as pd

from driftbench.methods.events import DIAGNOSTIC_COLUMNS, EVENT_COLUMNS
from driftbench.record.files import DIAGNOSTICS, EVENTS, ROUNDS
from driftbench.record.runs import RunRecord, every_run
from driftbench.record.schema import ROUND_COLUMNS, Summary

IDENTITY = ("trace", "method", "seed", "path")  # path: the run's folder, or its place in an archive
MATRIX_COLUMNS = ("after_segment", "on_segment", "segment_start", "accuracy")
DETECTION_COLUMNS = ("round", "kind", "clients", "delay", "clients_detected", "client_delay_mean", "window")


def runs(folder: str | Path) -> pd.DataFrame:
    """One row per run under ``folder`` (a runs folder or an archive, a sweep's or reproduce's): identity, status, path
    (an archived run's place in the archive), summary fields (NaN while incomplete), ``config.*``."""
    rows = []
    for record in every_run(Path(folder)):
        summary = asdict(record.summary) if record.summary is not None else {}
        rows.append({**summary, **identity(record), "status": record.status, "config": record.config()})
    table = pd.json_normalize(rows)
    return table[[*IDENTITY, *(c for c in table.columns if c not in IDENTITY)]]


def evaluations(folder: str | Path) -> pd.DataFrame:
    """One row per evaluation (rounds.csv row) of every run under ``folder`` that wrote one."""
    return per_run(folder, ROUNDS, RunRecord.rounds, ROUND_COLUMNS)


def events(folder: str | Path) -> pd.DataFrame:
    """One row per method event (events.csv row) of every run under ``folder``."""
    return per_run(folder, EVENTS, RunRecord.events, EVENT_COLUMNS)


def diagnostics(folder: str | Path) -> pd.DataFrame:
    """One row per measured decision quantity (diagnostics.csv row) of every run under ``folder``."""
    return per_run(folder, DIAGNOSTICS, RunRecord.diagnostics, DIAGNOSTIC_COLUMNS)


def matrices(folder: str | Path) -> pd.DataFrame:
    """One row per accuracy-matrix entry of every complete run: the models after one segment on another's test data."""
    rows = [
        {**identity(record), "after_segment": i, "on_segment": j, "segment_start": start, "accuracy": value}
        for record, summary in complete(folder)
        for i, row in enumerate(summary.scorecard.accuracy_matrix)
        for j, (start, value) in enumerate(zip(summary.scorecard.segment_starts, row))
    ]
    return pd.DataFrame(rows, columns=[*IDENTITY, *MATRIX_COLUMNS])


def detections(folder: str | Path) -> pd.DataFrame:
    """One row per drift event of every complete run: the delay to the run's first reaction to it, and per client."""
    rows = [
        {**identity(record), **asdict(event), "window": summary.scorecard.detection.window}
        for record, summary in complete(folder)
        for event in summary.scorecard.detection.events
    ]
    return pd.DataFrame(rows, columns=[*IDENTITY, *DETECTION_COLUMNS])


def complete(folder: str | Path) -> list[tuple[RunRecord, Summary]]:
    """The runs under ``folder`` that have a summary, with it."""
    return [(record, record.summary) for record in every_run(Path(folder)) if record.summary is not None]


def identity(record: RunRecord) -> dict[str, Any]:
    """A run's trace, method, seed and folder (a reproduce folder holds several runs of one trace, method and seed)."""
    return {"trace": record.trace, "method": record.method, "seed": record.seed, "path": str(record.path)}


def per_run(folder: str | Path, name: str, read: Callable[[RunRecord], pd.DataFrame], columns: tuple[str, ...]) -> pd.DataFrame:
    """The table ``name`` of every run under ``folder`` that has one, stacked, each row led by its run's identity."""
    tables = [with_identity(record, read(record)) for record in every_run(Path(folder)) if record.holds(name)]
    if not tables:
        return pd.DataFrame(columns=list(dict.fromkeys([*IDENTITY, *columns])))
    return pd.concat(tables, ignore_index=True)


def with_identity(record: RunRecord, table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with the run's identity as its first columns (replacing a method column it holds)."""
    return pd.concat(
        [pd.DataFrame(identity(record), index=table.index), table.drop(columns=[*IDENTITY], errors="ignore")], axis=1
    )
