"""Every new trace runs end to end with fedavg and oracle on tiny settings; the oracle recovers the ground truth."""

import json

import pytest

from driftbench.cli import main

TRAIN = {"train.participants": 4, "train.local_steps": 2, "train.eval_every": 1}
SYNTHETIC = {"source.classes": 6, "source.size": 8, "source.samples_per_class": 10}
TINY = {
    "rotation": {"clients": 8, "rounds": 6, "drift_every": 2, "train_samples": 10, "test_samples": 5},
    "label-shift": {"clients": 10, "rounds": 6, "drift_round": 3, "train_samples": 10, "test_samples": 5},
    "label-combos": {"clients": 8, "rounds": 6, "drift_round": 3, "train_samples": 5, "test_samples": 2},
    "openimage-buckets": {
        "clients": 8,
        "rounds": 6,
        "buckets": 3,
        "bucket_rounds": 2,
        "window_rounds": 4,
        "train_samples": 12,
        "test_samples": 2,
        "groups": 2,
        "bucket_classes": 2,
        "min_classes": 3,
        **SYNTHETIC,
    },
    "fmow-timeline": {
        "clients": 8,
        "rounds": 6,
        "update_every": 2,
        "window_rounds": 4,
        "event_round": 3,
        "train_samples": 20,
        "test_samples": 8,
        "min_window": 2,
        **SYNTHETIC,
        "source.samples_per_class": 20,
    },
}


@pytest.mark.parametrize("trace", sorted(TINY))
def test_trace_runs_with_fedavg_and_oracle(trace, tmp_path, capsys):
    sets = [arg for key, value in {**TINY[trace], **TRAIN}.items() for arg in ("--set", f"{key}={value}")]
    code = main(["run", "--trace", trace, "--method", "fedavg,oracle", "--out", str(tmp_path), "--quiet", *sets])
    assert code == 0, capsys.readouterr().err
    summaries = {m: json.loads((tmp_path / trace / m / "seed0/summary.json").read_text()) for m in ("fedavg", "oracle")}
    assert all(s["status"] == "ok" and s["rounds"] == 6 for s in summaries.values())
    assert summaries["oracle"]["ari_reference"] == "ground_truth" and summaries["oracle"]["ari_mean"] >= 0.99
    rounds = (tmp_path / trace / "oracle/seed0/rounds.csv").read_text().splitlines()
    assert len(rounds) == 1 + 6
