"""Traces: the model, file I/O, generators (importing this registers them) and the named catalog."""

from driftbench.registry import import_modules
from driftbench.traces.generators import GENERATORS
from driftbench.traces.model import DriftEvent, Trace, TraceBuilder

import_modules(__name__)  # each generator module registers itself in GENERATORS

__all__ = ["GENERATORS", "DriftEvent", "Trace", "TraceBuilder"]
