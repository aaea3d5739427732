"""The quality gate: compare a runs folder with committed reference results; list every regression.

A regression is a run that is missing, incomplete, diverged, made from a different trace
(hash), or whose final accuracy or mean ARI fell by more than the tolerance below the
reference. Runs that do better than the reference, or that the reference does not list,
pass. The default tolerances are in ``driftbench.evaluation.tolerance``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

import driftbench
from driftbench.config import require
from driftbench.errors import ConfigError, RunError
from driftbench.evaluation.tolerance import ACCURACY_TOLERANCE, ARI_TOLERANCE
from driftbench.record.files import read_json, write_json
from driftbench.record.runs import INCOMPLETE, RunRecord, find_runs

METRICS = ("final_accuracy", "ari_mean")


@dataclass(frozen=True)
class Regression:
    """One problem found by the check."""

    run: str
    metric: str
    reference: float | None
    measured: float | None
    problem: str


def reference_of(records: list[RunRecord]) -> dict[str, Any]:
    """Reference results from finished runs; every run must have finished with status ok."""
    bad = [f"{r.label} ({INCOMPLETE if r.summary is None else r.status})" for r in records if r.status != "ok"]
    require(not bad, f"cannot make a reference from runs that did not finish ok: {', '.join(bad)}")
    return {
        "driftbench_version": driftbench.__version__,
        "torch_version": torch.__version__,
        "runs": {r.label: {"trace_hash": r.trace_hash, **{m: getattr(r.summary, m) for m in METRICS}} for r in records},
    }


def write_reference(root: Path, path: Path) -> int:
    """Write the reference file for the runs under ``root``; return how many runs it holds."""
    reference = reference_of(find_runs(root))
    write_json(Path(path), reference)
    return len(reference["runs"])


def read_reference(path: Path) -> dict[str, dict[str, Any]]:
    """The per-run entries of a reference file."""
    require(Path(path).is_file(), f"--reference {path}: no such reference file")
    try:
        runs: dict[str, dict[str, Any]] = read_json(Path(path))["runs"]
        require(isinstance(runs, dict), "'runs' is not a table")
        for label, entry in runs.items():
            require(
                isinstance(entry, dict) and {"trace_hash", *METRICS} <= set(entry),
                f"entry {label!r} lacks trace_hash or a metric",
            )
    except (RunError, KeyError, TypeError, ConfigError) as exc:
        raise ConfigError(f"--reference {path}: not a driftbench reference file ({exc})") from None
    return runs


def regressions(
    records: list[RunRecord],
    reference: dict[str, dict[str, Any]],
    tolerance: float = ACCURACY_TOLERANCE,
    ari_tolerance: float = ARI_TOLERANCE,
) -> list[Regression]:
    """Every reference run that is missing, failed, changed or fell by more than its metric's tolerance."""
    require(
        tolerance >= 0 and ari_tolerance >= 0, f"--tolerance and --ari-tolerance must be >= 0, got {tolerance}, {ari_tolerance}"
    )
    found = {r.label: r for r in records}
    allowed = {"final_accuracy": tolerance, "ari_mean": ari_tolerance}
    problems = []
    for label, expected in reference.items():
        record = found.get(label)
        if record is None or record.summary is None or record.status != "ok" or record.trace_hash != expected["trace_hash"]:
            problems.append(Regression(label, "run", None, None, run_problem(record, expected)))
            continue
        for metric in METRICS:
            ref, got = expected[metric], getattr(record.summary, metric)
            if ref is not None and (got is None or got < ref - allowed[metric]):
                problems.append(Regression(label, metric, ref, got, f"fell by more than {allowed[metric]}"))
    return problems


def run_problem(record: RunRecord | None, expected: dict[str, Any]) -> str:
    """Why a reference run cannot be compared."""
    if record is None:
        return "missing: no run folder"
    if record.summary is None:
        return f"{INCOMPLETE}, at {record.path}"
    if record.status != "ok":
        return f"{record.status} at round {record.summary.diverged_round}"
    return (
        f"trace changed: hash {record.trace_hash[:12]}, reference {expected['trace_hash'][:12]} "
        "(regenerate the reference if the change is intended)"
    )


def regression_rows(problems: list[Regression]) -> list[dict[str, str]]:
    """The regressions as printable rows."""

    def fmt(value: float | None) -> str:
        return "-" if value is None else f"{value:.4f}"

    return [
        {
            "run": p.run,
            "metric": p.metric,
            "reference": fmt(p.reference),
            "measured": fmt(p.measured),
            "change": "-" if p.reference is None or p.measured is None else f"{p.measured - p.reference:+.4f}",
            "problem": p.problem,
        }
        for p in problems
    ]
