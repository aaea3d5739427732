"""The archive of run records: its format (Parquet tables and a manifest), and reading it back, checked.

An archive is a folder: ``runs.parquet`` (one row per complete run: its place below the archived
runs folder, identity, config hash, commit, and its config.json and summary.json as JSON text),
``evaluations.parquet`` (every rounds.csv row), ``events.parquet`` (every events.csv row), optionally
``diagnostics.parquet``, each row led by its run's place, and ``archive.json``, the manifest: format
name and version, driftbench version, runs, and each table's rows. A run's place is its folder below
the runs folder archived, ``<trace>/<method>/seed<k>`` for a sweep's runs (reproduce's sit below their
setting's folders). Reading refuses, in one line naming the file, what is not an archive of this
format version, a missing or damaged table, or a summary that fails the record's schema. Nothing
is unpickled: Parquet holds typed columns and the JSON is parsed as JSON.
"""

from __future__ import annotations

import copy
import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_type_hints

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from driftbench.errors import RecordError, one_line
from driftbench.record.files import CONFIG, DIAGNOSTICS, EVENTS, ROUNDS, SUMMARY, read_json
from driftbench.record.schema import TABLES, RoundRow, Summary, empty_table, summary_from

FORMAT, VERSION = "driftbench-archive", 1
MANIFEST = "archive.json"
PLACE = "run"  # the column naming a row's run: its place, the run's folder below the runs folder archived
RUN_COLUMNS = (PLACE, "trace", "method", "seed", "trace_hash", "config_hash", "commit", "status", "config", "summary")
RUNS = "runs"
TABLE_OF = {ROUNDS: "evaluations", EVENTS: "events", DIAGNOSTICS: "diagnostics"}  # a run's table file -> archive table
REQUIRED = (RUNS, TABLE_OF[ROUNDS], TABLE_OF[EVENTS])
COLUMNS = {RUNS: RUN_COLUMNS, **{table: (PLACE, *TABLES[name]) for name, table in TABLE_OF.items()}}
NUMBERS = {  # the columns that hold numbers, and their Parquet type; every other column holds text
    "seed": pa.int64(),
    "value": pa.float64(),
    **{name: pa.int64() if kind is int else pa.float64() for name, kind in get_type_hints(RoundRow).items()},
}


def arrow_schema(table: str) -> pa.Schema:
    """The Parquet schema of archive ``table``: its columns, each a 64-bit number (``NUMBERS``) or text."""
    return pa.schema([(column, NUMBERS.get(column, pa.string())) for column in COLUMNS[table]])


def table_file(table: str) -> str:
    """The file name of an archive table: ``<table>.parquet``."""
    return f"{table}.parquet"


def is_archive(path: Path) -> bool:
    """Whether ``path`` is an archive's folder (it holds ``archive.json``; reading checks the rest)."""
    return (Path(path) / MANIFEST).is_file()


def archive_holding(folder: Path) -> Path | None:
    """The archive above ``folder`` (the folder is then a run's place in it, not a folder on disk); None if there is none."""
    return next((parent for parent in Path(folder).parents if is_archive(parent)), None)


@dataclass(frozen=True)
class ArchivedRunRow:
    """One row of runs.parquet, read: the run's place, its config.json content and its summary."""

    place: str
    config: dict[str, Any]
    summary: Summary


class Archive:
    """An archive read and checked: its manifest and runs at once, each other table when first asked, once."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.manifest = read_manifest(self.path)
        self.rows: dict[str, int] = self.manifest["tables"]  # table -> its rows, as the manifest counts them
        for table in self.rows:
            check_columns(self.path / table_file(table), table)
        self.runs = read_runs(self.path / table_file(RUNS), self.rows[RUNS])
        self.by_place = {run.place: run for run in self.runs}
        self.split: dict[str, dict[str, pd.DataFrame]] = {}

    def __reduce__(self) -> tuple[Any, tuple[Path]]:
        """An archive crosses to another process as its path, read again there (once: ``open_archive``)."""
        return open_archive, (self.path,)

    def holds(self, name: str) -> bool:
        """Whether the archive holds the runs' table file ``name`` (diagnostics.csv is optional)."""
        return TABLE_OF[name] in self.rows

    def table(self, place: str, name: str) -> pd.DataFrame:
        """The rows of the run at ``place`` of its table file ``name``, as ``schema.read_table`` reads that file."""
        if name not in self.split:
            self.split[name] = self.read_split(TABLE_OF[name])
        rows = self.split[name].get(place)
        return empty_table(name) if rows is None else rows.copy()

    def read_split(self, table: str) -> dict[str, pd.DataFrame]:
        """An archive table read and split by run: place -> its rows, without the place column."""
        frame = read_parquet(self.path / table_file(table), self.rows[table])
        return {str(place): rows.drop(columns=PLACE).reset_index(drop=True) for place, rows in frame.groupby(PLACE, sort=False)}


@dataclass(frozen=True)
class ArchivedRun:
    """A run in an archive: its config and tables are the archive's (``runs.RunSource``)."""

    archive: Archive
    place: str

    def config(self) -> dict[str, Any]:
        """The run's config.json content (a copy: the archive's stays as read)."""
        return copy.deepcopy(self.archive.by_place[self.place].config)

    def table(self, name: str) -> pd.DataFrame:
        """The run's rows of its table file ``name``."""
        return self.archive.table(self.place, name)

    def holds(self, name: str) -> bool:
        """Whether the archive holds the table ``name``."""
        return self.archive.holds(name)


def open_archive(path: Path) -> Archive:
    """The archive at ``path``, read once while its manifest stays the same file (a rewrite replaces it)."""
    manifest = Path(path) / MANIFEST
    try:
        stat = manifest.stat()
    except OSError:
        raise RecordError(f"{path}: not a driftbench archive (no {MANIFEST})") from None
    return opened(Path(path), (stat.st_ino, stat.st_mtime_ns, stat.st_size))


@functools.lru_cache(maxsize=4)
def opened(path: Path, stamp: tuple[int, int, int]) -> Archive:
    """The archive at ``path`` whose manifest has the ``stamp`` (inode, modification time, size), read."""
    return Archive(path)


def read_manifest(folder: Path) -> dict[str, Any]:
    """An archive's archive.json, checked: this format and version, the required tables, known tables only."""
    path = folder / MANIFEST
    manifest = read_json(path)
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        found = manifest.get("format") if isinstance(manifest, dict) else None
        raise RecordError(f"{path}: not a driftbench archive manifest (format {found!r}, expected {FORMAT!r})")
    if manifest.get("version") != VERSION:
        raise RecordError(
            f"{path}: archive format version {manifest.get('version')!r}, but this driftbench reads version {VERSION}; "
            "archive the runs again with this driftbench"
        )
    tables = manifest.get("tables")
    if not isinstance(tables, dict) or not set(REQUIRED) <= set(tables) <= set(COLUMNS):
        raise RecordError(
            f"{path}: tables {sorted(tables) if isinstance(tables, dict) else tables!r}; expected "
            f"{', '.join(REQUIRED)} and optionally {TABLE_OF[DIAGNOSTICS]}"
        )
    for table in tables:
        if not (folder / table_file(table)).is_file():
            raise RecordError(f"{folder / table_file(table)}: missing ({MANIFEST} lists the table {table})")
    return manifest


def check_columns(path: Path, table: str) -> None:
    """Refuse a Parquet file whose footer is unreadable or whose columns are not those of archive ``table``."""
    try:
        schema = pq.read_schema(path)
    except (OSError, pa.ArrowException) as exc:
        raise RecordError(f"{path}: unreadable Parquet table ({one_line(exc)})") from None
    if not schema.equals(arrow_schema(table)):
        found, expected = (", ".join(f"{field.name} {field.type}" for field in s) for s in (schema, arrow_schema(table)))
        raise RecordError(f"{path}: columns ({found}) are not archive table {table}'s ({expected})")


def read_parquet(path: Path, rows: int) -> pd.DataFrame:
    """A table file read whole, with the manifest's count of ``rows`` (``RecordError`` naming it when damaged)."""
    try:
        frame = pq.read_table(path).to_pandas()
    except (OSError, pa.ArrowException) as exc:
        raise RecordError(f"{path}: unreadable Parquet table ({one_line(exc)})") from None
    if len(frame) != rows:
        raise RecordError(f"{path}: {len(frame)} rows, but {MANIFEST} says {rows}")
    return frame


def read_runs(path: Path, rows: int) -> list[ArchivedRunRow]:
    """runs.parquet's ``rows`` rows, each config parsed and each summary checked against the record's schema."""
    frame = read_parquet(path, rows)[[PLACE, "config", "summary"]]
    return [run_row(path, str(place), config, summary) for place, config, summary in frame.itertuples(index=False)]


def run_row(path: Path, place: str, config: str, summary: str) -> ArchivedRunRow:
    """One run of runs.parquet (at ``path``) read: its config JSON parsed, its summary JSON read as ``read_summary`` does."""
    try:
        parsed_config, parsed_summary = json.loads(config), json.loads(summary)
    except (TypeError, json.JSONDecodeError) as exc:
        raise RecordError(f"{path}: {place}: unreadable JSON ({exc})") from None
    if not isinstance(parsed_config, dict):
        raise RecordError(f"{path}: {place}/{CONFIG}: not a table")
    return ArchivedRunRow(place, parsed_config, summary_from(parsed_summary, f"{path}: {place}/{SUMMARY}"))
