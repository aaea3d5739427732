"""The results part of summary.json from a run's evaluated rounds, drift events and a time-to-accuracy target."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from driftbench.record.metrics import final_accuracy, final_window, recovery, time_to_accuracy
from driftbench.record.schema import Summary, TimeToAccuracy

REFERENCE = "fedavg"  # time-to-accuracy targets and speed-ups are relative to this method


def summarize(
    rows: pd.DataFrame, event_rounds: np.ndarray, event_kinds: list[str], method: str, target: float | None
) -> dict[str, Any]:
    """Final accuracy, time-to-accuracy, per-event recovery and ARI: the ``Summary`` fields computed from the rows.

    Without a ``target`` the reference method (FedAvg) targets its own final accuracy and
    other methods get no time-to-accuracy. "Stays at or above the target" is judged on the
    trailing mean over the final-accuracy window, so the reference reaches its own target.
    """
    acc = rows["accuracy_mean"].to_numpy()
    final = final_accuracy(acc)
    if target is None and method == REFERENCE:
        target = final
    tta = None if target is None else rows_time_to_accuracy(rows, target)
    ari = rows["ari"].dropna()
    return {
        "final_accuracy": final,
        "time_to_accuracy": tta,
        "recovery": tuple(recovery(rows["round"].to_numpy(), acc, np.asarray(event_rounds), event_kinds)),
        "ari_mean": float(ari.mean()) if len(ari) else None,
        "ari_final": float(ari.iloc[-1]) if len(ari) else None,
        "ari_rounds": len(ari),
        "n_clusters_final": int(rows["n_clusters"].iloc[-1]),
    }


def rows_time_to_accuracy(rows: pd.DataFrame, target: float) -> TimeToAccuracy:
    """When a run's rounds.csv rows reached ``target`` and stayed, judged on the trailing final-accuracy-window mean."""
    acc = rows["accuracy_mean"].to_numpy()
    return time_to_accuracy(rows["round"].to_numpy(), rows["sim_seconds"].to_numpy(), acc, target, final_window(len(acc)))


def summary_tta(summary: Summary | None) -> TimeToAccuracy | None:
    """A summary's time-to-accuracy; None without a summary or a target."""
    return None if summary is None else summary.time_to_accuracy
