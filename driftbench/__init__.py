"""driftbench: compare clustered federated learning methods under data drift."""

__version__ = "0.1.0"
