"""Server-side methods: the Method interface, implementations and the named catalog."""

from driftbench.methods.base import IMPLEMENTATIONS, Method
from driftbench.methods.catalog import MethodSpec, load_method
from driftbench.methods.queries import ClientQueries
from driftbench.methods.rounds import Plan, RunContext, TrainResult

__all__ = ["ClientQueries", "Method", "Plan", "RunContext", "TrainResult", "IMPLEMENTATIONS", "MethodSpec", "load_method"]
