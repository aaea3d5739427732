"""Server-side methods: the Method interface, implementations and the named catalog."""

from driftbench.methods.base import ClientQueries, Method, Plan, RunContext, TrainResult
from driftbench.methods.catalog import IMPLEMENTATIONS, MethodSpec, load_method

__all__ = ["ClientQueries", "Method", "Plan", "RunContext", "TrainResult", "IMPLEMENTATIONS", "MethodSpec", "load_method"]
