"""driftbench stale: a slice of a shipped archive's runs (each method's cheapest, within a budget of recorded wall time)
made again equals its records, wall times aside; a summary value altered in the archive fails it, naming the method,
the run and the archive to make again with its command."""

import math
from dataclasses import replace

import pytest

from driftbench.cli import main
from driftbench.record.archive import open_archive
from driftbench.shipped.stale import cheap_slice, first_difference, remake_command


def test_stale_passes_when_the_slice_made_again_equals_its_records(shipped, capsys):
    assert main(["stale", str(shipped), "--quiet"]) == 0
    printed = capsys.readouterr().out.strip()
    assert printed.startswith(f"{shipped}: not stale: made 2 of its 8 runs (") and "one per method (" in printed
    runs = open_archive(shipped).runs
    chosen = cheap_slice(runs, 120.0)
    assert sorted(r.summary.method for r in chosen) == ["fedavg", "oracle"]
    for run in chosen:  # each method's cheapest by recorded wall time
        assert run.summary.wall_seconds == min(r.summary.wall_seconds for r in runs if r.summary.method == run.summary.method)
    assert cheap_slice(runs, 0.0) == chosen[:1] and cheap_slice(runs, 120.0, 1) == chosen[:1]  # always at least one


def test_stale_fails_naming_the_method_the_run_and_the_archive_when_a_summary_value_differs(shipped, alter, tmp_path, capsys):
    target = next(r for r in cheap_slice(open_archive(shipped).runs, 120.0) if r.summary.method == "oracle")

    def better(run, summary):
        if run["run"] == target.place:
            summary["final_accuracy"] += 0.01

    archive = alter(shipped, tmp_path / "results" / "tiny", better, column="summary")
    assert main(["stale", str(archive), "--quiet"]) == 1
    first, *lines = capsys.readouterr().out.strip().splitlines()
    assert first.startswith(f"{archive}: stale: 1 of the 2 of its 8 runs")
    assert len(lines) == 1
    trace, seed = target.summary.trace, target.summary.seed
    archived, now = target.summary.final_accuracy + 0.01, target.summary.final_accuracy
    assert lines[0].startswith(f"oracle: {trace} seed {seed}: final_accuracy archived {archived!r}, now {now!r}; ")
    assert f"; re-make {archive}: driftbench " in lines[0]
    assert lines[0].endswith(f"--out runs-tiny-remade && driftbench archive runs-tiny-remade --out {archive} --force")


def test_first_difference_leaves_out_the_machines_fields_and_compares_numbers_to_the_tolerance():
    archived = {"wall_seconds": 1.0, "run_dir": "a", "overhead": {"server_wall_seconds": 0.1, "cluster_seconds": 0.5}}
    now = {"wall_seconds": 9.0, "run_dir": "b", "overhead": {"server_wall_seconds": 0.2, "cluster_seconds": 0.5 * (1 + 1e-12)}}
    assert first_difference(archived, now) is None
    assert first_difference({"a": [1.0, math.nan]}, {"a": [1.0, math.nan]}) is None
    assert first_difference({"a": [1.0, 0.5]}, {"a": [1.0, 0.5001]}) == ("a[1]", 0.5, 0.5001)
    assert first_difference({"a": None}, {"a": 0.0}) == ("a", None, 0.0)
    assert first_difference({"a": 1}, {}) == ("a", 1, "(absent)")


@pytest.mark.parametrize(
    ("command", "made"),
    [
        (
            "/venv/bin/driftbench sweep --suite m.toml --out runs-m --jobs 2",
            "driftbench sweep --suite m.toml --jobs 2 --out runs-x-remade",
        ),
        ("/src/driftbench/cli/__main__.py sweep --out=runs-m --seeds 0", "driftbench sweep --seeds 0 --out runs-x-remade"),
    ],
)
def test_the_remake_command_sweeps_into_a_fresh_folder_and_archives_it_over_the_archive(shipped, command, made):
    run = open_archive(shipped).runs[0]
    run = replace(run, config={**run.config, "provenance": {**run.config["provenance"], "command": command}})
    archive = shipped.parent / "x"
    assert remake_command(archive, run) == f"{made} && driftbench archive runs-x-remade --out {archive} --force"


def test_a_run_recorded_on_another_cpu_is_compared_as_the_quality_gate_compares(shipped, alter, tmp_path, capsys):
    def elsewhere(run, config):
        config["provenance"]["cpu"] = "x86_64 Another CPU; avx avx2"

    moved = alter(shipped, tmp_path / "results" / "elsewhere", elsewhere)
    assert main(["stale", str(moved), "--quiet"]) == 0  # the same code: equal, so within any tolerance
    printed = capsys.readouterr().out
    assert "2 recorded on another or an unnamed CPU: final_accuracy within 0.02, ari_mean within 0.05" in printed
    target = cheap_slice(open_archive(moved).runs, 120.0)[0]

    def shifted(by: float):
        def change(run, summary):
            if run["run"] == target.place:
                summary["final_accuracy"] += by

        return change

    small = alter(moved, tmp_path / "results" / "small-move", shifted(0.01), column="summary")
    assert main(["stale", str(small), "--quiet"]) == 0  # 0.01: another CPU's rounding may move it so far
    large = alter(moved, tmp_path / "results" / "large-move", shifted(0.05), column="summary")
    assert main(["stale", str(large), "--quiet"]) == 1
    assert "final_accuracy (another CPU: within 0.02) archived" in capsys.readouterr().out


def test_stale_refuses_an_out_folder_that_holds_runs_already(shipped, tmp_path, capsys):
    out = tmp_path / "kept"
    (out / "static").mkdir(parents=True)
    assert main(["stale", str(shipped), "--out", str(out), "--quiet"]) == 2
    assert f"--out {out}: not empty" in capsys.readouterr().err
