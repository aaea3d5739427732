"""The quality gate: passes against its own reference, names what regressed, failed or went missing."""

import json
import shutil

import pytest

from driftbench.cli import main
from driftbench.runner import Execution, Request, plan_jobs, run_here

TINY = {"clients": "10", "rounds": "6", "train.participants": "5", "train.local_steps": "3"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The static trace, tiny, FedAvg and oracle, seed 0."""
    root = tmp_path_factory.mktemp("runs")
    run_here(plan_jobs(Request({"static": TINY}, ("fedavg", "oracle")), Execution("cpu", root)))
    return root


@pytest.fixture(scope="module")
def reference(runs, tmp_path_factory):
    path = tmp_path_factory.mktemp("reference") / "ci.json"
    assert main(["check", str(runs), "--reference", str(path), "--update-reference"]) == 0
    return path


def check(capsys, runs, reference, *options):
    code = main(["check", str(runs), "--reference", str(reference), *options])
    return code, capsys.readouterr().out


def edited(reference, tmp_path, label, **values):
    """A copy of the reference with one run's entry changed."""
    data = json.loads(reference.read_text())
    data["runs"][label].update(values)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(data))
    return path


def test_passes_against_its_own_reference(runs, reference, capsys):
    data = json.loads(reference.read_text())
    assert set(data["runs"]) == {"static/fedavg/seed0", "static/oracle/seed0"}
    code, out = check(capsys, runs, reference)
    assert code == 0 and out.startswith("check passed: 2 runs")


def test_fails_naming_the_method_when_the_reference_is_above_the_run(runs, reference, tmp_path, capsys):
    reached = json.loads(reference.read_text())["runs"]["static/oracle/seed0"]["final_accuracy"]
    raised = edited(reference, tmp_path, "static/oracle/seed0", final_accuracy=reached + 0.05)
    code, out = check(capsys, runs, raised)
    assert code == 1
    rows = [line for line in out.splitlines() if line.startswith("static/")]
    assert len(rows) == 1 and rows[0].split()[:2] == ["static/oracle/seed0", "final_accuracy"]
    assert "fell by more than 0.02" in rows[0] and "-0.0500" in rows[0]
    assert check(capsys, runs, raised, "--tolerance", "0.06")[0] == 0


def test_ari_falls_are_regressions(runs, reference, tmp_path, capsys):
    raised = edited(reference, tmp_path, "static/fedavg/seed0", ari_mean=0.5)
    code, out = check(capsys, runs, raised)
    assert code == 1 and "static/fedavg/seed0  ari_mean" in out


def test_missing_incomplete_and_changed_runs_fail(runs, reference, tmp_path, capsys):
    broken = tmp_path / "runs"
    shutil.copytree(runs, broken)
    (broken / "static/oracle/seed0/summary.json").unlink()
    changed = edited(reference, tmp_path, "static/fedavg/seed0", trace_hash="0" * 64)
    data = json.loads(changed.read_text())
    data["runs"]["static/fedprox/seed0"] = data["runs"]["static/fedavg/seed0"]
    changed.write_text(json.dumps(data))
    code, out = check(capsys, broken, changed)
    assert code == 1 and "check failed: 3 problem(s)" in out
    assert "static/oracle/seed0" in out and "incomplete: config.json but no summary.json" in out
    assert "static/fedprox/seed0" in out and "missing: no run folder" in out
    assert "trace changed: hash" in out and "reference 000000000000" in out


def test_bad_reference_and_tolerance_are_usage_errors(runs, reference, tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"runs": 3}')
    assert main(["check", str(runs), "--reference", str(bad)]) == 2
    assert "not a driftbench reference file" in capsys.readouterr().err
    assert main(["check", str(runs), "--reference", str(reference), "--tolerance", "-1"]) == 2
    assert "--tolerance and --ari-tolerance must be >= 0" in capsys.readouterr().err
