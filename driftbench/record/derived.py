"""What a run's results hold that depends on another run, derived when records are read: the time to FedAvg's target.

A record is final when its run ends. A run of a method other than the reference (FedAvg), under
the default target, cannot know that target when it ends (FedAvg's run of the same trace and seed
sets it, and may still be running), so its summary.json holds ``time_to_accuracy: null``. Every
reader (the leaderboard, the printed table, the DataFrames, the trackers' export) completes the
summary with ``derive``, from the run's own rows and the reference run's summary. A run under a
fixed ``--target`` and the reference run itself hold their time to accuracy already.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pandas as pd

from driftbench.record.schema import Summary
from driftbench.record.summarize import REFERENCE, rows_time_to_accuracy, summary_target


def needs_reference(summary: Summary) -> bool:
    """Whether a run's time to accuracy is measured against its reference run's target (not set by the run itself)."""
    own = summary.time_to_accuracy is not None and summary.time_to_accuracy.target.rule == "fixed"
    return summary.method != REFERENCE and not own


def reference_folder(folder: Path) -> Path:
    """The folder of the reference run beside the run in ``folder``: ``<root>/<trace>/fedavg/seed<k>``."""
    return folder.parent.parent / REFERENCE / folder.name


def derive(summary: Summary, rows: Callable[[], pd.DataFrame], reference: Summary | None) -> Summary:
    """``summary`` with its time to the reference run's target, from the run's own rows (read only when needed).

    ``reference`` is the summary of FedAvg's run of the same trace and seed; one of another trace
    hash, one that diverged, or none gives no time to accuracy. A summary that does not need a
    reference (``needs_reference``) is returned as it is.
    """
    if not needs_reference(summary):
        return summary
    matches = reference is not None and reference.trace_hash == summary.trace_hash and reference.status == "ok"
    target = summary_target(reference) if matches and reference is not None else None
    return replace(summary, time_to_accuracy=None if target is None else rows_time_to_accuracy(rows(), target))
