"""A trace's run records read for the leaderboard: per-run rows (time to accuracy, speed-up), trace hashes, settings."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from driftbench.errors import ConfigError
from driftbench.record.metrics import speedup
from driftbench.record.runs import INCOMPLETE, RunRecord
from driftbench.record.schema import Summary, TimeToAccuracy
from driftbench.record.summarize import REFERENCE

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunRow:
    """One complete run as the leaderboard reads it, with what it compares against the reference's run of its seed."""

    record: RunRecord
    summary: Summary
    time_to_accuracy: TimeToAccuracy | None
    speedup: float | None  # the reference's simulated time to the target / this run's; None unless both reached it
    vs_reference: float | None  # final accuracy minus the reference's; None without a complete reference run
    first_evaluation: bool  # reached the target at its first evaluation: the speed-up is bounded by the evaluation grid


def run_rows(records: list[RunRecord]) -> list[RunRow]:
    """The complete runs among one trace's ``records``, paired by seed with ``REFERENCE``'s; incomplete ones are logged.

    The one place the leaderboard reads a run's time to accuracy, and computes its speed-up.
    """
    read: list[tuple[RunRecord, Summary, TimeToAccuracy | None]] = []
    for record in records:
        if record.summary is None:
            log.warning("%s: %s; left out of the leaderboard", record.path, INCOMPLETE)
        else:
            read.append((record, record.summary, record.summary.time_to_accuracy))
    reference = {record.seed: (summary, tta) for record, summary, tta in read if record.method == REFERENCE}
    rows = []
    for record, summary, tta in read:
        reference_summary, reference_tta = reference.get(record.seed, (None, None))
        vs_reference = None if reference_summary is None else summary.final_accuracy - reference_summary.final_accuracy
        first = reached_at_first_evaluation(record, tta)
        rows.append(RunRow(record, summary, tta, speedup(reference_tta, tta), vs_reference, first))
    return rows


def reached_at_first_evaluation(record: RunRecord, tta: TimeToAccuracy | None) -> bool:
    """Whether the run reached its target ``tta`` at its first evaluation."""
    return bool(tta is not None and tta.reached and tta.rounds == int(record.rounds()["round"].iloc[0]))


def seed_hashes(trace: str, records: list[RunRecord]) -> dict[int, str]:
    """The trace hash of each seed's runs (a named trace draws its data from the seed); a seed with two is refused."""
    first: dict[int, RunRecord] = {}
    for record in sorted(records, key=lambda r: r.seed):
        seen = first.setdefault(record.seed, record)
        if seen.trace_hash != record.trace_hash:
            raise ConfigError(
                f"runs of trace {trace!r} at seed {record.seed} have different trace hashes: {seen.trace_hash[:12]} "
                f"({seen.path}) and {record.trace_hash[:12]} ({record.path}); keep runs of one trace version per runs folder"
            )
    return {seed: record.trace_hash for seed, record in first.items()}


def hash_text(hashes: dict[int, str], width: int = 64) -> str:
    """The trace hash, or when the seeds' data differ one per seed (``seed0:HASH``, space-separated, ``width`` characters)."""
    if len(set(hashes.values())) == 1:
        return next(iter(hashes.values()))
    return " ".join(f"seed{seed}:{digest[:width]}" for seed, digest in hashes.items())


def run_settings(records: list[RunRecord], hashes: dict[int, str]) -> dict[str, str]:
    """Trace hash (per seed), rounds, seeds and git revisions of one trace's runs, as text."""
    revisions = {r.config().get("git_revision") for r in records}
    rounds = {r.summary.rounds for r in records if r.summary is not None}
    return {
        "trace hash": hash_text(hashes, 12),
        "rounds": ", ".join(str(n) for n in sorted(rounds)) or "-",
        "seeds": ", ".join(str(s) for s in sorted({r.seed for r in records})),
        "git revision": ", ".join(sorted(str(v)[:12] if v else "unknown" for v in revisions)),
        "runs": f"{len(records)} ({sum(r.summary is not None for r in records)} complete)",
    }
