"""The run records under a runs folder (``<root>/<trace>/<method>/seed<k>/``) or in an archive, as readers see them.

A ``RunRecord`` owns the access to its run's config and tables: they are read from the run's folder,
or served from the archive's tables (``driftbench.record.archive``), whichever holds the run. Readers
get each summary completed with what depends on another run (``driftbench.record.derived``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

import pandas as pd

from driftbench.errors import ConfigError
from driftbench.record.archive import Archive, ArchivedRun, is_archive, open_archive
from driftbench.record.derived import derive, needs_reference, reference_folder
from driftbench.record.files import CONFIG, DIAGNOSTICS, EVENTS, ROUNDS, SUMMARY, read_json, run_label
from driftbench.record.schema import Summary, read_summary, read_table

INCOMPLETE = "incomplete: config.json but no summary.json (crashed or still running)"
RUN_FOLDERS = "*/*/seed*"  # where a runs folder's runs are below its root: <trace>/<method>/seed<k>


class RunSource(Protocol):
    """Where a run's config and tables are read: its folder (``RunFolder``) or an archive (``ArchivedRun``)."""

    def config(self) -> dict[str, Any]:
        """The run's config.json content."""

    def table(self, name: str) -> pd.DataFrame:
        """The run's table ``name`` (rounds.csv, events.csv, diagnostics.csv) as ``schema.read_table`` reads its file."""

    def holds(self, name: str) -> bool:
        """Whether the run has the table ``name``."""


@dataclass(frozen=True)
class RunFolder:
    """A run's folder: its config and tables are its files."""

    path: Path

    def config(self) -> dict[str, Any]:
        """The folder's config.json."""
        return read_json(self.path / CONFIG)

    def table(self, name: str) -> pd.DataFrame:
        """The folder's table file ``name``."""
        return read_table(self.path / name, name)

    def holds(self, name: str) -> bool:
        """Whether the folder has the table file ``name``."""
        return (self.path / name).is_file()


@dataclass(frozen=True)
class RunRecord:
    """One run: identity from its config and, once the run finished, its summary; its config and tables on request."""

    path: Path  # the run's folder; for an archived run, its place <archive>/<trace>/<method>/seed<k> (no folder there)
    trace: str
    trace_hash: str
    method: str
    seed: int
    summary: Summary | None  # None while the run is incomplete
    source: RunSource = field(repr=False, compare=False)

    @property
    def label(self) -> str:
        """``<trace>/<method>/seed<k>``."""
        return run_label(self.trace, self.method, self.seed)

    @property
    def status(self) -> str:
        """The summary's status ("ok" | "diverged"), or "incomplete"."""
        return self.summary.status if self.summary is not None else "incomplete"

    def config(self) -> dict[str, Any]:
        """The run's config.json content."""
        return self.source.config()

    def rounds(self) -> pd.DataFrame:
        """The run's rounds.csv rows."""
        return self.source.table(ROUNDS)

    def events(self) -> pd.DataFrame:
        """The run's events.csv rows."""
        return self.source.table(EVENTS)

    def diagnostics(self) -> pd.DataFrame:
        """The run's diagnostics.csv rows."""
        return self.source.table(DIAGNOSTICS)

    def holds(self, name: str) -> bool:
        """Whether the run has the table ``name`` (an incomplete run has none; an archive may leave out diagnostics)."""
        return self.source.holds(name)


def find_runs(root: Path) -> list[RunRecord]:
    """Every run at ``<trace>/<method>/seed<k>`` below ``root``, a runs folder or an archive, sorted by trace, method and
    seed; in a runs folder, every one with a config.json (complete or not)."""
    root = Path(root)
    if is_archive(root):
        found = [r for r in archived_runs(root) if len(r.path.relative_to(root).parts) == len(Path(RUN_FOLDERS).parts)]
        return sorted(found, key=lambda r: (r.trace, r.method, r.seed))
    folders = sorted(config.parent for config in in_folder(root).glob(f"{RUN_FOLDERS}/{CONFIG}"))
    if not folders:
        raise ConfigError(f"{root}: no run records (expected {root}/<trace>/<method>/seed<k>/config.json, or an archive)")
    return with_derived(sorted((load_record(f) for f in folders), key=lambda r: (r.trace, r.method, r.seed)))


def every_run(root: Path) -> list[RunRecord]:
    """Every run below ``root`` at any depth (a sweep's and reproduce's alike), a runs folder or an archive, as readers
    see them, sorted by trace, method, seed and place."""
    root = Path(root)
    records = archived_runs(root) if is_archive(root) else read_records(record_folders(root))
    return sorted(records, key=lambda r: (r.trace, r.method, r.seed, str(r.path)))


def nested_runs(root: Path) -> list[tuple[Path, Callable[[], RunRecord]]]:
    """Every run below ``root`` at any depth (reproduce's setting folders too), a runs folder or an archive, sorted by
    place, each with how to read its record as readers see it: a folder's record is read when asked, so that a
    damaged one stops only itself."""
    root = Path(root)
    if is_archive(root):
        records = {record.path: record for record in archived_runs(root)}
        return [(path, functools.partial(records.__getitem__, path)) for path in records]
    return [(folder, functools.partial(read_record, folder)) for folder in record_folders(root)]


def record_folders(root: Path) -> list[Path]:
    """Every run folder (``seed<k>/config.json``) below the runs folder ``root``, at any depth, sorted."""
    folders = sorted(config.parent for config in in_folder(root).rglob(CONFIG) if config.parent.name.startswith("seed"))
    if not folders:
        raise ConfigError(f"{root}: no run records (expected <trace>/<method>/seed<k>/config.json below it, or an archive)")
    return folders


def in_folder(root: Path) -> Path:
    """``root``, a runs folder that exists (``ConfigError`` if it does not)."""
    if not root.is_dir():
        raise ConfigError(f"{root}: no such runs folder")
    return root


def archived_runs(root: Path) -> list[RunRecord]:
    """Every run in the archive at ``root``, in the archive's order (by place), as readers see them."""
    return list(archive_records(open_archive(root)))


@functools.lru_cache(maxsize=4)
def archive_records(archive: Archive) -> tuple[RunRecord, ...]:
    """The records of an archive's runs, derived once per archive read."""
    records = [record_of(archive.path / r.place, r.config, r.summary, ArchivedRun(archive, r.place)) for r in archive.runs]
    return tuple(with_derived(records))


def read_record(folder: Path) -> RunRecord:
    """The record in ``folder`` as readers see it (``read_records``)."""
    return read_records([folder])[0]


def read_records(folders: Sequence[Path]) -> list[RunRecord]:
    """The records in ``folders``, in order, as readers see them (``with_derived``)."""
    return with_derived([load_record(Path(f)) for f in folders])


def with_derived(records: Sequence[RunRecord]) -> list[RunRecord]:
    """The records with each summary completed by ``derive``; a reference run is found among them, else beside its run."""
    by_path = {record.path: record for record in records}

    def reference(record: RunRecord) -> Summary | None:
        folder = reference_folder(record.path)
        found = by_path.get(folder) or (load_record(folder) if (folder / SUMMARY).is_file() else None)
        return None if found is None else found.summary

    return [
        replace(r, summary=derive(r.summary, r.rounds, reference(r))) if r.summary and needs_reference(r.summary) else r
        for r in records
    ]


def load_record(folder: Path) -> RunRecord:
    """Read a run folder's config.json and, if present, summary.json."""
    config = read_json(folder / CONFIG)
    summary = read_summary(folder / SUMMARY) if (folder / SUMMARY).is_file() else None
    return record_of(folder, config, summary, RunFolder(folder))


def folder_record(folder: Path, summary: Summary) -> RunRecord:
    """The record of the run that finished in ``folder`` with ``summary``, its identity from the summary."""
    return RunRecord(folder, summary.trace, summary.trace_hash, summary.method, summary.seed, summary, RunFolder(folder))


def record_of(path: Path, config: dict[str, Any], summary: Summary | None, source: RunSource) -> RunRecord:
    """The record of the run at ``path`` whose config.json content is ``config``."""
    try:
        trace, method = config["trace"], config["method"]
        return RunRecord(path, trace["name"], trace["hash"], method["name"], int(config["seed"]), summary, source)
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{path}: not a readable run record ({type(exc).__name__}: {exc})") from None
