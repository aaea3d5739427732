"""Traces: the model, file I/O, generators (importing this registers them) and the named catalog."""

from driftbench.traces import (  # noqa: F401  (registration)
    fmow_timeline,
    label_combos,
    label_shift,
    label_swap,
    openimage_buckets,
    rotation,
    static,
)
from driftbench.traces.generators import GENERATORS
from driftbench.traces.model import DriftEvent, Trace, TraceBuilder

__all__ = ["GENERATORS", "DriftEvent", "Trace", "TraceBuilder"]
