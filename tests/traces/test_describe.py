"""``trace show``'s drift magnitude table (FIELDING Table 2 style)."""

import numpy as np
import pytest

from driftbench.traces.describe import describe_trace, drift_table
from driftbench.traces.model import TraceBuilder


def two_event_trace():
    """4 clients over labels 0..3; at round 2 clients 0, 1 shift fully or halfway, at round 3 client 2 halfway."""
    pool_y = np.array([0, 0, 1, 1, 2, 2, 3, 3])
    b = TraceBuilder(4, 5, 4)
    for c in range(4):
        b.samples(c, np.array([0, 1, 4, 5, 2]), np.array([6]))
        b.segment(c, 0, train=(0, 2), group=0)
    b.segment(0, 2, train=(2, 4), group=0)  # labels {0} -> {2}: L1 2
    b.segment(1, 2, train=(1, 3), group=0)  # {0} -> {0, 2}: L1 1
    b.segment(2, 3, train=(1, 3), group=0)  # L1 1
    b.event(2, np.array([0, 1]), "label")
    b.event(3, np.array([2]), "arrival")
    return b.build({"name": "t", "generator": "g", "params": {}, "source": {"name": "s", "params": {}}}, pool_y), pool_y


def test_rows_per_event_and_over_events():
    trace, pool_y = two_event_trace()
    first, second, overall = drift_table(trace, pool_y)
    assert (first["round"], first["clients"]) == (2, 2)
    assert [first[s] for s in ("min", "max", "mean", "median")] == pytest.approx([1.0, 2.0, 1.5, 1.5])
    assert [second[s] for s in ("min", "max", "mean", "median")] == pytest.approx([1.0, 1.0, 1.0, 1.0])
    assert overall["round"] == "all"
    assert [overall[s] for s in ("min", "max", "mean", "median")] == pytest.approx([1.0, 1.5, 1.25, 1.25])
    assert trace.event_magnitude.tolist() == pytest.approx([1.5, 1.0])  # the stored magnitudes agree


def test_show_prints_the_table():
    trace, pool_y = two_event_trace()
    text = describe_trace(trace, pool_y)
    assert "drift magnitude" in text and "mean L1 shift over events: 1.250" in text
    row = next(line for line in text.splitlines() if line.split()[:2] == ["2", "label"])
    assert row.split()[2:] == ["2", "1.000", "2.000", "1.500", "1.500"]
