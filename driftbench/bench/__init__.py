"""Performance benchmarks: the engine against a plain per-client loop, and FIELDING's clustering costs."""
