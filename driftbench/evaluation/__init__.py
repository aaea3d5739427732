"""Metrics over run records."""
