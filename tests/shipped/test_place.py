"""driftbench place: a plug-in method run on exactly a shipped archive's traces and seeds and paired with its runs; a
run that would not pair (the trace's data changed, another override), a method the archive holds and an unknown one are
refused in one line before anything runs."""

from pathlib import Path

import pytest

from driftbench.cli import main
from driftbench.record.runs import find_runs, record_folders

PACKAGE = Path(__file__).resolve().parents[2] / "examples" / "my-method" / "src" / "driftbench_my_method"
TRACES, SEEDS = ("label-swap", "static"), (0, 1)


def place(archive: Path, out: Path, method: str = "my-method") -> int:
    args = ["place", method, "--archive", str(archive), "--out", str(out), "--jobs", "1", "--quiet"]
    return main([*args, "--plugins", str(PACKAGE)])


def test_place_makes_exactly_the_archives_traces_x_seeds_and_pairs_them(shipped, plugin_state, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    out = Path("placed")  # relative, as typed
    assert place(shipped, out) == 0
    printed = capsys.readouterr().out
    assert "4 ran, 0 skipped (up to date), 0 failed" in printed and "paired 4 runs of my-method" in printed
    made = [folder.relative_to(out / "runs").as_posix() for folder in record_folders(out / "runs")]
    assert made == [f"{trace}/my-method/seed{seed}" for trace in TRACES for seed in SEEDS]
    archived = {(r.trace, r.seed): r.trace_hash for r in find_runs(shipped)}
    combined = find_runs(out / "archive")
    new = [r for r in combined if r.method == "my-method"]
    assert {(r.trace, r.seed): r.trace_hash for r in new} == archived  # each new run replays its shipped runs' trace
    assert sorted(r.label for r in combined) == sorted([*(r.label for r in find_runs(shipped)), *made])
    assert all(r.config()["trace"]["params"]["clients"] == 6 for r in new)  # the archive's overrides, not the defaults
    assert all(r.summary.time_to_accuracy is not None for r in new)  # FedAvg's shipped run of its trace and seed sets it
    assert "my-method" in (out / "report" / "leaderboard" / "leaderboard.md").read_text()
    assert "my-method" in (out / "report" / "matrix.md").read_text() and (out / "report" / "matrix-heatmap.png").is_file()
    assert place(shipped, out) == 0  # again: every run kept, nothing made
    assert "0 ran, 4 skipped (up to date), 0 failed" in capsys.readouterr().out


def stale_hash(run, config):
    if run["trace"] == "static" and run["seed"] == 1:
        config["trace"]["hash"] = "0" * 64


def more_clients(run, config):
    if run["trace"] == "static":
        config["trace"]["params"]["clients"] = 7  # a recorded override that builds other data now


@pytest.mark.parametrize(("change", "where"), [(stale_hash, "static seed 1"), (more_clients, "static seed 0")])
def test_place_refuses_a_trace_whose_data_differs_in_one_line_and_writes_nothing(
    shipped, alter, plugin_state, tmp_path, capsys, change, where
):
    archive = alter(shipped, tmp_path / "altered", change)
    assert place(archive, tmp_path / "placed") == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1
    assert error.startswith(f"error: {archive}: {where}: the trace built now") and "changed since the archive" in error
    assert not (tmp_path / "placed").exists()


def test_place_refuses_other_settings_a_method_the_archive_holds_and_an_unknown_method(
    shipped, alter, plugin_state, tmp_path, capsys
):
    def longer(run, config):
        config["rounds"] = 7  # the trace's data as archived, what a run records of it not

    archive = alter(shipped, tmp_path / "altered", longer)
    assert place(archive, tmp_path / "placed") == 2
    assert "label-swap seed 0: rounds is 7 in the archived runs but 6 in a run made now" in capsys.readouterr().err
    assert place(shipped, tmp_path / "placed", "fedavg") == 2
    assert "holds 4 runs of method 'fedavg' already; place yours under another name" in capsys.readouterr().err
    assert place(shipped, tmp_path / "placed", "my-methd") == 2
    assert "unknown method 'my-methd'" in capsys.readouterr().err
    assert not (tmp_path / "placed").exists()
