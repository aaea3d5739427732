"""Readers of run records: leaderboard, plots, the quality gate."""
