"""record/scores.py: a run's scores from its per-round rows, held in memory (no run folder)."""

import pandas as pd
import pytest

from driftbench.record.scores import peak_accuracy, reaches, seconds_to


def rows(accuracy: list[float]) -> pd.DataFrame:
    """Per-round rows with these client-mean accuracies, one evaluation every 10 simulated seconds."""
    return pd.DataFrame({"accuracy_mean": accuracy, "sim_seconds": [10.0 * (r + 1) for r in range(len(accuracy))]})


def test_scores_read_the_rows_they_are_given():
    curve = rows([0.1, 0.7, 0.7, 0.7, 0.7])  # 3-means 0.1, 0.4, 0.5 (30 s), 0.7 (40 s): crosses 0.6 at 35 s
    assert peak_accuracy(curve) == 0.7 and peak_accuracy(rows([])) is None
    assert reaches(curve, 0.6) and seconds_to(curve, 0.6) == pytest.approx(35.0)
    assert not reaches(curve, 0.8) and seconds_to(curve, 0.8) == 50.0  # never reached: the run's end
