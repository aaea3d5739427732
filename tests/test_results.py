"""driftbench.results: a small sweep's runs folder as DataFrames, row for row what the record reader reads."""

import json
import shutil

import pandas as pd
import pytest

from driftbench import results
from driftbench.cli import main
from driftbench.errors import ConfigError
from driftbench.record.files import CONFIG, read_json
from driftbench.record.runs import find_runs
from driftbench.record.schema import ROUND_COLUMNS, read_events, read_rounds

TINY = ["--set", "clients=6", "--set", "rounds=6", "--set", "drift_every=3", "--set", "train.participants=3"]
TINY += ["--set", "train.local_steps=1", "--set", "method.k=2"]


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """A sweep of label-swap x (fedavg, ifca) x seeds 0, 1 at tiny settings, and one incomplete run beside it."""
    out = tmp_path_factory.mktemp("runs")
    sweep = ["sweep", "--traces", "label-swap", "--methods", "fedavg,ifca", "--seeds", "0,1", "--jobs", "1"]
    assert main([*sweep, "--out", str(out), "--quiet", *TINY]) == 0
    crashed = out / "label-swap" / "crashed" / "seed0"
    crashed.mkdir(parents=True)
    config = read_json(out / "label-swap" / "ifca" / "seed0" / CONFIG)
    (crashed / CONFIG).write_text(json.dumps({**config, "method": {**config["method"], "name": "crashed"}}))
    return out


def test_runs_has_one_row_per_run_with_summary_and_config(swept):
    table = results.runs(swept)
    records = find_runs(swept)
    assert list(table.columns[:5]) == ["trace", "method", "seed", "path", "status"]
    assert [tuple(r) for r in table[["method", "seed", "status"]].itertuples(index=False)] == [
        (r.method, r.seed, r.status) for r in records
    ]
    done = {(r.method, r.seed): r.summary for r in records if r.summary is not None}
    for row in table[table["status"] == "ok"].itertuples(index=False):
        row = row._asdict()
        summary = done[(row["method"], row["seed"])]
        assert row["final_accuracy"] == summary.final_accuracy
        assert row["n_clusters_final"] == summary.n_clusters_final
    ok = table[table["status"] == "ok"]
    assert (ok["overhead.extra_download_bytes"] > 0).tolist() == [False, False, True, True]  # IFCA downloads K models
    assert ok["config.method.params.k"].tolist()[2:] == [2, 2] and ok["config.method.params.k"].isna().tolist()[:2] == [True] * 2
    crashed = table[table["method"] == "crashed"].iloc[0]
    assert crashed["status"] == "incomplete" and pd.isna(crashed["final_accuracy"])


def test_evaluations_stack_every_rounds_csv_with_the_run_identity(swept):
    table = results.evaluations(swept)
    assert list(table.columns) == [*results.IDENTITY, *ROUND_COLUMNS]
    assert len(table) == 4 * 6
    one = table[(table["method"] == "ifca") & (table["seed"] == 1)].drop(columns=list(results.IDENTITY))
    pd.testing.assert_frame_equal(one.reset_index(drop=True), read_rounds(swept / "label-swap/ifca/seed1/rounds.csv"))


def test_events_stack_every_events_csv_with_the_run_identity(swept):
    table = results.events(swept)
    files = [read_events(r.path / "events.csv") for r in find_runs(swept) if r.summary is not None]
    assert len(table) == sum(len(f) for f in files) and list(table.columns[:4]) == list(results.IDENTITY)
    assert set(table["method"]) <= {"fedavg", "ifca"} and set(table["kind"]) <= {"assign"}
    assert len(results.diagnostics(swept)) == 2 * 6 * 2  # IFCA's two quantities, every round, two seeds


def test_a_folder_without_runs_is_a_one_line_error(tmp_path):
    with pytest.raises(ConfigError, match="no run records"):
        results.runs(tmp_path)


def test_matrices_and_detections_unroll_each_summary_scorecard(swept):
    done = {(r.method, r.seed): r.summary.scorecard for r in find_runs(swept) if r.summary is not None}
    matrices = results.matrices(swept)
    assert list(matrices.columns) == [*results.IDENTITY, *results.MATRIX_COLUMNS]
    assert len(matrices) == sum(len(c.accuracy_matrix) * len(c.segment_starts) for c in done.values())
    one = matrices[(matrices["method"] == "ifca") & (matrices["seed"] == 1)]
    card = done[("ifca", 1)]
    assert len(card.segment_starts) == 2  # the event at round 3 splits the 6 rounds
    assert one.pivot(index="after_segment", columns="on_segment", values="accuracy").to_numpy().tolist() == [
        list(row) for row in card.accuracy_matrix
    ]
    detections = results.detections(swept)
    assert list(detections.columns) == [*results.IDENTITY, *results.DETECTION_COLUMNS]
    assert len(detections) == sum(len(c.detection.events) for c in done.values()) > 0
    fedavg = detections[detections["method"] == "fedavg"]
    assert fedavg["delay"].isna().all() and (fedavg["clients_detected"] == 0).all()  # one model: it never reacts


def test_a_reproduce_folder_s_runs_are_told_apart_by_their_path(swept, tmp_path):
    nested = tmp_path / "report"
    shutil.copytree(swept / "label-swap", nested / "label-swap+rounds=6" / "label-swap")
    shutil.copytree(swept / "label-swap", nested / "label-swap+rounds=7" / "label-swap")
    table = results.runs(nested)
    assert len(table) == 2 * len(find_runs(swept)) and table["path"].is_unique
    assert len(results.evaluations(nested)) == 2 * len(results.evaluations(swept))
