"""Human-readable description of a trace for ``driftbench trace show``, with a FIELDING Table 2-style drift table."""

from __future__ import annotations

import json

import numpy as np

from driftbench.traces.model import Trace, client_shifts

STATS = ("min", "max", "mean", "median")


def shift_stats(values: np.ndarray) -> dict[str, float]:
    """Min, max, mean and median of L1 shifts."""
    return dict(zip(STATS, (float(np.min(values)), float(np.max(values)), float(np.mean(values)), float(np.median(values)))))


def drift_table(trace: Trace, pool_y: np.ndarray) -> list[dict[str, object]]:
    """One row per drift event with the L1 label-distribution shift of its clients (min, max, mean, median).

    A last row, ``all``, gives the same statistics over the events' mean shifts, as FIELDING's
    Table 2 does ("average per-client shift before and after each drift event").
    """
    rows: list[dict[str, object]] = []
    for event in trace.events():
        shifts = client_shifts(trace, event, pool_y)
        rows.append({"round": event.round, "kind": event.kind, "clients": len(event.clients), **shift_stats(shifts)})
    if rows:
        means = np.array([row["mean"] for row in rows])
        rows.append({"round": "all", "kind": f"{len(rows)} events", "clients": "", **shift_stats(means)})
    return rows


def describe_trace(trace: Trace, pool_y: np.ndarray) -> str:
    """Header facts, then the drift magnitude table (L1 shift of label distributions per event)."""
    info = trace.info
    lines = [
        f"trace      {trace.name}",
        f"generator  {info['generator']}  {json.dumps(info['params'])}",
        f"source     {info['source']['name']}  {json.dumps(info['source']['params'])}",
        f"clients    {trace.num_clients}",
        f"rounds     {trace.rounds}",
        f"classes    {trace.num_classes}",
        f"groups     {trace.num_groups or 'none (no ground truth)'}",
        f"segments   {len(trace.seg_start)}",
        f"sha256     {trace.content_hash()}",
        f"events     {len(trace.event_round)}",
    ]
    rows = drift_table(trace, pool_y)
    if rows:
        lines.append("drift magnitude (L1 label-distribution shift per client, just before vs at the event; 2 = disjoint)")
        lines.append(f"  {'round':>5}  {'kind':<9}  {'clients':>7}  " + "  ".join(f"{s:>6}" for s in STATS))
        for row in rows:
            values = "  ".join(f"{row[s]:>6.3f}" for s in STATS)
            lines.append(f"  {row['round']:>5}  {row['kind']:<9}  {row['clients']:>7}  {values}")
        lines.append(f"  mean L1 shift over events: {rows[-1]['mean']:.3f}")
    else:
        lines.append("drift magnitude: no drift events")
    return "\n".join(lines)
