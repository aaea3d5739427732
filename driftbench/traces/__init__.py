"""Traces: the model, file I/O, generators (importing this registers them) and the named catalog."""

from driftbench.traces import label_swap, static  # noqa: F401  (registration)
from driftbench.traces.generators import GENERATORS
from driftbench.traces.model import DriftEvent, Trace, TraceBuilder

__all__ = ["GENERATORS", "DriftEvent", "Trace", "TraceBuilder"]
