"""The typed run record: one writer and one reader that round-trip exactly and refuse other versions or foreign files."""

import json
import math
from dataclasses import asdict, replace

import pytest

from driftbench.errors import RecordError
from driftbench.record.schema import (
    ROUND_COLUMNS,
    SCHEMA_VERSION,
    Detection,
    EventDetection,
    Recovery,
    RoundRow,
    RunOverhead,
    Scorecard,
    Streaming,
    Summary,
    Target,
    TimeToAccuracy,
    read_events,
    read_rounds,
    read_summary,
    write_events,
    write_rounds,
    write_summary,
)

SUMMARY = Summary(
    schema_version=SCHEMA_VERSION,
    trace="t",
    trace_hash="ab" * 32,
    method="fedavg",
    oracle=False,
    seed=1,
    rounds=10,
    final_accuracy=0.5,
    time_to_accuracy=TimeToAccuracy(Target(0.47, "reference", "fedavg", 0.5, 0.015), "reached", 0.015, 7, 12.5),
    streaming=Streaming(0.45, 0.3, 0.41),
    recovery=(
        Recovery(5, "label", "recovered", 0.6, 0.3, 0.59, 0.3, 2, 16.7),
        Recovery(8, "concept", "no_baseline", None, None, None, None, None, None),
    ),
    ari_mean=None,
    ari_final=0.25,
    ari_rounds=0,
    n_clusters_final=1,
    partition_changes=2,
    degenerate=("one_cluster",),
    ari_reference=None,
    mean_client_distance_final=0.1,
    overhead=RunOverhead(1.5, 0.2, 0.01, 40, 0, 3),
    events={"move": 2, "recluster_global": 0},
    scorecard=Scorecard(
        segment_starts=(0, 5),
        accuracy_matrix=((0.8, 0.1), (0.5, None)),
        in_segment_accuracy=0.8,
        next_segment_accuracy=0.1,
        next_segment_worst=0.1,
        backward_transfer=-0.3,
        forgetting=0.3,
        prequential_accuracy=0.6,
        prequential_after_events=(0.55,),
        detection=Detection("scored", 10, 3, (EventDetection(5, "label", 4, 2, 3, 2.5),), 1, 0, 2, 2.0, 2.5, 1),
    ),
    sim_seconds=99.0,
    wall_seconds=1.0,
    status="ok",
    diverged_round=None,
    run_dir="x",
)


def test_summary_round_trips_exactly(tmp_path):
    write_summary(tmp_path / "summary.json", SUMMARY)
    assert read_summary(tmp_path / "summary.json") == SUMMARY
    assert json.loads((tmp_path / "summary.json").read_text())["schema_version"] == SCHEMA_VERSION


@pytest.mark.parametrize(
    "change,message",
    [
        (lambda d: d.pop("schema_version"), "schema version \\(none\\)"),
        (lambda d: d.update(schema_version=1), "schema version 1, but this driftbench reads version"),
        (lambda d: d.pop("overhead"), "missing \\['overhead'\\]"),
        (lambda d: d.update(extra=1), "unexpected \\['extra'\\]"),
        (lambda d: d.update(seed="one"), "seed: expected int"),
        (lambda d: d["recovery"][0].update(round=True), "recovery\\[0\\]: round: expected int"),
        (lambda d: d.update(overhead=[]), "overhead: expected a table"),
        (lambda d: d["events"].update(move="two"), "events.move: expected int"),
        (lambda d: d["time_to_accuracy"].update(rounds=None, sim_seconds="x"), "time_to_accuracy: sim_seconds: expected float"),
        (lambda d: d["time_to_accuracy"]["target"].pop("rule"), "time_to_accuracy: target: .*missing \\['rule'\\]"),
        (lambda d: d.update(schema_version=5), "schema version 5, but this driftbench reads version 6"),
        (lambda d: d["scorecard"]["accuracy_matrix"][1].append("x"), "scorecard: accuracy_matrix\\[1\\]\\[2\\]: expected float"),
        (lambda d: d["scorecard"]["detection"].pop("window"), "scorecard: detection: .*missing \\['window'\\]"),
    ],
)
def test_other_versions_and_foreign_files_get_one_line_naming_the_file(tmp_path, change, message):
    data = json.loads(json.dumps(asdict(SUMMARY)))
    change(data)
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(data))
    with pytest.raises(RecordError, match=message) as raised:
        read_summary(path)
    assert str(path) in str(raised.value) and "\n" not in str(raised.value)


def test_rounds_round_trip_in_schema_order_and_refuse_other_columns(tmp_path):
    rows = [
        RoundRow(0, 1.0, 0.1, 0.5, 0.2, 0.8, 0, math.nan, 1, 0.0, 0.0, 10, 20),
        RoundRow(1, 2.0, 0.2, 0.6, 0.3, 0.9, 1, 0.5, 2, 0.5, 0.1, 30, 40),
    ]
    write_rounds(tmp_path / "rounds.csv", rows)
    table = read_rounds(tmp_path / "rounds.csv")
    assert tuple(table.columns) == ROUND_COLUMNS and [RoundRow(**r) for r in table.to_dict("records")][1] == rows[1]
    assert math.isnan(table["ari"].iloc[0])
    table.drop(columns="ari").to_csv(tmp_path / "old.csv", index=False)
    with pytest.raises(
        RecordError,
        match=r"old.csv: columns differ from schema version \d+'s rounds table \(missing \['ari'\], unexpected \[\]\)",
    ):
        read_rounds(tmp_path / "old.csv")


def test_a_summary_with_a_diverged_run_keeps_its_round(tmp_path):
    diverged = replace(SUMMARY, status="diverged", diverged_round=3, time_to_accuracy=None)
    write_summary(tmp_path / "s.json", diverged)
    assert read_summary(tmp_path / "s.json").diverged_round == 3


def test_events_round_trip_with_blank_clients_and_values(tmp_path):
    rows = [
        {"round": 3, "kind": "threshold", "clients": "", "value": 0.2},
        {"round": 4, "kind": "move", "clients": "1 5 7", "value": None},
    ]
    write_events(tmp_path / "events.csv", "fielding", rows)
    table = read_events(tmp_path / "events.csv")
    assert table["clients"].tolist() == ["", "1 5 7"] and table["method"].tolist() == ["fielding"] * 2
    assert table["value"].iloc[0] == 0.2 and math.isnan(table["value"].iloc[1])
    table.drop(columns="method").to_csv(tmp_path / "old.csv", index=False)
    with pytest.raises(
        RecordError,
        match=r"old.csv: columns differ from schema version \d+'s events table \(missing \['method'\], unexpected \[\]\)",
    ):
        read_events(tmp_path / "old.csv")
