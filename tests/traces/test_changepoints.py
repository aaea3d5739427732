"""Changepoint matrices (FedDrift's drift schedules): import as a trace, export ground truth, round trip, bad files."""

import json

import numpy as np
import pytest

from driftbench.cli import main
from driftbench.errors import ConfigError
from driftbench.traces.catalog import apply_sets, generate, load_spec
from driftbench.traces.changepoints import ground_truth, read_changepoints, write_changepoints
from driftbench.traces.label_swap import concept_permutation
from driftbench.traces.model import TraceBuilder

MATRIX = np.array([[0, 0, 1, 1], [0, 0, 1, 1], [0, 2, 1, 1], [1, 2, 1, 0]])
TINY = {"train_samples": "10", "test_samples": "5", "rounds_per_step": "1"}


def schedule(tmp_path, text, name="schedule.cp"):
    """Write ``text`` to a changepoint file and return its path."""
    path = tmp_path / name
    path.write_text(text)
    return path


def imported(path, **sets):
    """The changepoints trace over ``path`` (tiny samples, one round per step unless ``sets`` say otherwise)."""
    return generate(apply_sets(load_spec("changepoints"), {"file": str(path), **TINY, **{k: str(v) for k, v in sets.items()}}))


def test_import_gives_the_matrix_as_groups_and_events_at_its_changes(tmp_path):
    path = schedule(tmp_path, "# a comment line\n0 0 1 1\n0 0 1 1\n\n0 2 1 1\n1 2 1 0\n")
    trace, pool = imported(path)
    assert (trace.num_clients, trace.rounds, trace.num_groups) == (4, 4, 3)
    assert np.array_equal(np.stack([trace.groups_at(r) for r in range(4)]), MATRIX)
    events = trace.events()
    assert [(e.round, e.kind, e.clients.tolist()) for e in events] == [(2, "concept", [1]), (3, "concept", [0, 3])]
    seg = trace.segments_at(3)
    for client, concept in enumerate(MATRIX[3]):
        assert np.array_equal(trace.label_maps[trace.seg_map[seg[client]]], concept_permutation(concept, pool.num_classes))
    first = trace.segments_at(0)
    assert all(np.array_equal(trace.train_indices(a), trace.train_indices(b)) for a, b in zip(first, seg))


def test_rotation_realises_quarter_turns_and_steps_last_several_rounds(tmp_path):
    path = schedule(tmp_path, "0,0,1,1\n0, 0, 1, 1\n0,2,1,1\n1,2,1,0\n")  # commas, as a CSV writer would put them
    trace, _ = imported(path, realise="rotation", rounds_per_step=3)
    assert trace.rounds == 12
    for rnd in range(12):
        assert np.array_equal(trace.groups_at(rnd), MATRIX[rnd // 3])
        assert np.array_equal(trace.seg_rotation[trace.segments_at(rnd)], 90 * MATRIX[rnd // 3])
    assert [(e.round, e.kind) for e in trace.events()] == [(6, "feature"), (9, "feature")]
    assert np.array_equal(ground_truth(trace, every=3), MATRIX)


def test_more_clients_repeat_the_columns_and_a_longer_horizon_holds_the_last_row(tmp_path):
    trace, _ = imported(schedule(tmp_path, "0 1\n1 1\n"), clients=5, rounds=4)
    assert np.array_equal(ground_truth(trace), [[0, 1, 0, 1, 0], [1, 1, 1, 1, 1], [1, 1, 1, 1, 1], [1, 1, 1, 1, 1]])
    assert [(e.round, e.clients.tolist()) for e in trace.events()] == [(1, [0, 2, 4])]
    short, _ = imported(schedule(tmp_path, "0 1\n1 1\n0 0\n"), rounds=2)
    assert short.rounds == 2 and [e.round for e in short.events()] == [1]


def test_export_writes_the_imported_matrix_back(tmp_path):
    path = schedule(tmp_path, "0 0 1 1\n0 0 1 1\n0 2 1 1\n1 2 1 0\n")
    out = tmp_path / "out.cp"
    write_changepoints(ground_truth(imported(path)[0]), out)
    assert out.read_text() == path.read_text()
    assert np.array_equal(read_changepoints(out), MATRIX)


def test_export_marks_clients_without_a_group_and_samples_every_n_rounds(tmp_path):
    builder = TraceBuilder(num_clients=2, rounds=5, num_classes=2)
    for client in range(2):
        builder.samples(client, np.arange(4), np.arange(4, 6))
    builder.segment(0, 0, group=0)
    builder.segment(0, 3, group=1)
    builder.segment(1, 0)  # no ground truth
    trace = builder.build({"name": "t"}, np.zeros(6, dtype=np.int64))
    assert ground_truth(trace).tolist() == [[0, -1], [0, -1], [0, -1], [1, -1], [1, -1]]
    assert ground_truth(trace, every=2).tolist() == [[0, -1], [0, -1], [1, -1]]
    with pytest.raises(ConfigError, match="--every must be >= 1, got 0"):
        ground_truth(trace, every=0)


@pytest.mark.parametrize(
    "text,message",
    [
        ("0 1\n0 1.5\n", r"schedule.cp, line 2: '1.5' is not an integer concept id"),
        ("0 1\n\n0,\n", r"schedule.cp, line 3: '' is not an integer concept id"),
        ("0 1 1\n0 1\n", r"schedule.cp, line 2: 2 concept ids, but line 1 has 3; one per client on every row"),
        ("", r"schedule.cp: empty changepoint file"),
        ("# only a comment\n\n", r"schedule.cp: empty changepoint file"),
        ("0 1\n0 -2\n", r"schedule.cp, line 2: concept id -2 is negative; ids are integers >= 0"),
        ("0\n1\n", r"schedule.cp: one client column; a trace needs >= 2 clients"),
        ("0 11\n", r"schedule.cp: concept id 11 with realise=labels needs ids below the source's 10 classes"),
    ],
)
def test_a_bad_file_is_a_one_line_error_naming_file_line_and_value(tmp_path, text, message):
    path = schedule(tmp_path, text)
    with pytest.raises(ConfigError, match=message) as error:
        imported(path)
    assert str(path) in str(error.value) and "\n" not in str(error.value)


def test_missing_file_unknown_realisation_and_rotation_ids_are_refused(tmp_path):
    with pytest.raises(ConfigError, match="nowhere.cp: no such changepoint file"):
        imported(tmp_path / "nowhere.cp")
    path = schedule(tmp_path, "0 4\n")
    with pytest.raises(ConfigError, match="concept id 4 with realise=rotation, which has ids 0..3"):
        imported(path, realise="rotation")
    with pytest.raises(ConfigError, match="realise must be one of labels, rotation, got 'colour'"):
        imported(path, realise="colour")


def test_the_named_trace_finds_its_bundled_schedule_from_any_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    trace, _ = generate(load_spec("changepoints"))
    assert trace.num_clients == 10 and trace.rounds == 100 and trace.num_groups == 4
    assert len({e.round for e in trace.events()}) == len(trace.events()) and all(e.round % 10 == 0 for e in trace.events())


def test_cli_makes_runs_and_exports_a_changepoint_trace(tmp_path, capsys):
    path = schedule(tmp_path, "0 0 1 1\n0 0 1 1\n0 2 1 1\n1 2 1 0\n")
    saved = tmp_path / "cp.trace"
    sets = [arg for key, value in {"file": path, **TINY, "rounds_per_step": 2}.items() for arg in ("--set", f"{key}={value}")]
    assert main(["trace", "make", "changepoints", "--out", str(saved), *sets]) == 0
    assert "4 clients, 8 rounds, 2 drift events" in capsys.readouterr().out
    train = ["--set", "train.participants=4", "--set", "train.local_steps=2"]
    code = main(["run", "--trace", str(saved), "--method", "fedavg,oracle", "--out", str(tmp_path / "runs"), "--quiet", *train])
    assert code == 0, capsys.readouterr().err
    summaries = {m: json.loads((tmp_path / f"runs/cp/{m}/seed0/summary.json").read_text()) for m in ("fedavg", "oracle")}
    assert all(s["status"] == "ok" and s["rounds"] == 8 for s in summaries.values())
    assert summaries["oracle"]["ari_mean"] >= 0.99 and [r["round"] for r in summaries["fedavg"]["recovery"]] == [4, 6]
    out = tmp_path / "back.cp"
    assert main(["trace", "export", str(saved), "--out", str(out), "--every", "2"]) == 0
    assert out.read_text() == path.read_text()
    assert main(["trace", "export", str(saved), "--out", str(out), "--set", "clients=3"]) == 2
    assert "cp.trace is a trace file, whose ground truth is fixed" in capsys.readouterr().err


def test_export_help_teaches_by_example(capsys):
    with pytest.raises(SystemExit):
        main(["trace", "export", "--help"])
    help_text = capsys.readouterr().out
    assert "driftbench trace export label-swap --out label-swap.cp --every 25" in help_text and "-1" in help_text
