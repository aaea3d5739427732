"""The run records under a runs folder: ``<root>/<trace>/<method>/seed<k>/``, complete or not, as readers see them.

Readers get each summary completed with what depends on another run (``driftbench.record.derived``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from driftbench.errors import ConfigError
from driftbench.record.derived import derive, needs_reference, reference_folder
from driftbench.record.files import CONFIG, ROUNDS, SUMMARY, read_json, run_label
from driftbench.record.schema import Summary, read_rounds, read_summary

INCOMPLETE = "incomplete: config.json but no summary.json (crashed or still running)"


@dataclass(frozen=True)
class RunRecord:
    """One run folder: identity from config.json and, once the run finished, its summary."""

    path: Path
    trace: str
    trace_hash: str
    method: str
    seed: int
    summary: Summary | None  # None while the run is incomplete

    @property
    def label(self) -> str:
        """``<trace>/<method>/seed<k>``."""
        return run_label(self.trace, self.method, self.seed)

    @property
    def status(self) -> str:
        """The summary's status ("ok" | "diverged"), or "incomplete"."""
        return self.summary.status if self.summary is not None else "incomplete"

    def rounds(self) -> pd.DataFrame:
        """The run's rounds.csv."""
        return read_rounds(self.path / ROUNDS)


def find_runs(root: Path) -> list[RunRecord]:
    """Every run folder under ``root`` (one with a config.json), sorted by trace, method and seed."""
    root = Path(root)
    if not root.is_dir():
        raise ConfigError(f"{root}: no such runs folder")
    folders = sorted(config.parent for config in root.glob("*/*/seed*/config.json"))
    if not folders:
        raise ConfigError(f"{root}: no run records (expected {root}/<trace>/<method>/seed<k>/config.json)")
    return with_derived(sorted((load_record(f) for f in folders), key=lambda r: (r.trace, r.method, r.seed)))


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
    try:
        config = read_json(folder / CONFIG)
        summary = read_summary(folder / SUMMARY) if (folder / SUMMARY).is_file() else None
        return RunRecord(
            folder, config["trace"]["name"], config["trace"]["hash"], config["method"]["name"], int(config["seed"]), summary
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{folder}: not a readable run record ({type(exc).__name__}: {exc})") from None
