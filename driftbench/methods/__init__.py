"""Server-side methods: the Method interface, implementations and the named catalog."""

from driftbench.methods.base import IMPLEMENTATIONS, ClientQueries, Method, Plan, RunContext, TrainResult
from driftbench.methods.catalog import MethodSpec, load_method

__all__ = ["ClientQueries", "Method", "Plan", "RunContext", "TrainResult", "IMPLEMENTATIONS", "MethodSpec", "load_method"]
