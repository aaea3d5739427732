"""Leaderboard plots as PNG bytes: accuracy against simulated time with drift events marked, ARI against rounds."""

from __future__ import annotations

import io
from typing import Any

import pandas as pd

from driftbench.errors import ConfigError
from driftbench.record.runs import RunRecord

CURVE_COLUMNS = ["sim_seconds", "accuracy_mean", "ari"]


def seed_mean_curves(records: list[RunRecord]) -> dict[str, pd.DataFrame]:
    """Per method, the mean over its complete runs' rounds.csv by evaluated round."""
    by_method: dict[str, list[pd.DataFrame]] = {}
    for record in records:
        if record.summary is not None:
            by_method.setdefault(record.method, []).append(record.rounds())
    return {
        method: pd.concat(tables).groupby("round", as_index=False)[CURVE_COLUMNS].mean() for method, tables in by_method.items()
    }


def accuracy_plot(trace: str, curves: dict[str, pd.DataFrame], events: list[int]) -> bytes:
    """Mean client accuracy against simulated seconds, one line per method, a marker where each drift event hits."""
    fig, ax = _figure()
    for method, curve in curves.items():
        (line,) = ax.plot(curve["sim_seconds"], curve["accuracy_mean"], label=method, linewidth=1.2)
        hits = [int(i) for i in curve["round"].searchsorted(events) if i < len(curve)]
        ax.plot(curve["sim_seconds"].iloc[hits], curve["accuracy_mean"].iloc[hits], "v", color=line.get_color(), markersize=6)
    if events:
        ax.plot([], [], "v", color="0.3", label="drift event")
    ax.set(title=f"{trace}: accuracy", xlabel="simulated time (s)", ylabel="mean client accuracy")
    return _png(fig, ax)


def ari_plot(trace: str, curves: dict[str, pd.DataFrame], events: list[int]) -> bytes | None:
    """ARI against rounds, one line per method, drift events as dashed lines; None when no run has an ARI."""
    with_ari = {m: c.dropna(subset=["ari"]) for m, c in curves.items()}
    with_ari = {m: c for m, c in with_ari.items() if len(c)}
    if not with_ari:
        return None
    fig, ax = _figure()
    for method, curve in with_ari.items():
        ax.plot(curve["round"], curve["ari"], label=method, linewidth=1.2)
    for i, event in enumerate(events):
        ax.axvline(event, color="0.5", linestyle="--", linewidth=0.8, label="drift event" if i == 0 else None)
    ax.set(title=f"{trace}: clustering vs ground truth", xlabel="round", ylabel="adjusted Rand index")
    return _png(fig, ax)


def _figure() -> tuple[Any, Any]:
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ConfigError("leaderboard plots need matplotlib: pip install 'driftbench[plots]'") from None
    fig = Figure(figsize=(7, 4), dpi=100)
    return fig, fig.subplots()


def _png(fig: Any, ax: Any) -> bytes:
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()
