"""Per-run scores from a run's per-round rows (a record's ``rounds()``): peak accuracy, time to a target."""

from __future__ import annotations

import numpy as np
import pandas as pd

from driftbench.record.metrics import crossing_seconds, first_reach


def peak_accuracy(rows: pd.DataFrame) -> float | None:
    """The highest client-mean accuracy over the run's evaluations; None without one."""
    accuracy = rows["accuracy_mean"].to_numpy()
    return float(np.nanmax(accuracy)) if accuracy.size else None


def reaches(rows: pd.DataFrame, target: float) -> bool:
    """Whether the run reaches ``target`` accuracy as summaries define reaching it (``metrics.first_reach``)."""
    return first_reach(rows["accuracy_mean"].to_numpy(), target) is not None


def seconds_to(rows: pd.DataFrame, target: float) -> float:
    """Simulated seconds until the run reaches ``target`` accuracy (``metrics.first_reach``); its end if it never does."""
    accuracy, seconds = rows["accuracy_mean"].to_numpy(), rows["sim_seconds"].to_numpy()
    first = first_reach(accuracy, target)
    return float(seconds[-1]) if first is None else crossing_seconds(seconds, accuracy, first, target)
