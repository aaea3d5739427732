"""The run records under a runs folder: ``<root>/<trace>/<method>/seed<k>/``, complete or not."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from driftbench.errors import ConfigError
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
    return sorted((load_record(f) for f in folders), key=lambda r: (r.trace, r.method, r.seed))


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
