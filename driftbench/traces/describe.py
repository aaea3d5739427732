"""Human-readable description of a trace for ``driftbench trace show``."""

from __future__ import annotations

import json

import numpy as np

from driftbench.traces.model import Trace


def describe_trace(trace: Trace) -> str:
    """Header facts, then one line per drift event with the mean L1 label-distribution shift."""
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
    if len(trace.event_round):
        lines.append(f"  {'round':>5}  {'kind':<8}  {'clients':>7}  {'mean L1 shift':>13}")
        for event in trace.events():
            lines.append(f"  {event.round:>5}  {event.kind:<8}  {len(event.clients):>7}  {event.magnitude:>13.3f}")
        lines.append(f"  mean L1 shift over events: {float(np.mean(trace.event_magnitude)):.3f}")
    return "\n".join(lines)
