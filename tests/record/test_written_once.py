"""A run record is final when its run ends; what depends on other runs (time to FedAvg's target) is derived on reading.

``records_89c096f.json`` holds a comparison's records as the code at 89c096f wrote them (wall-clock
fields and paths left out), when summary.json was rewritten with the time to FedAvg's target after
every run had ended. The same comparison now writes each summary once, without that time, and its
readers derive the same time from the records. (FedDAG's record left the file when its A.9 re-placement
stopped resetting models: the 89c096f record no longer describes it.)
"""

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from driftbench.record.runs import find_runs, read_records
from driftbench.runner import Execution, PoolOptions, Request, finished_summaries, plan_jobs, run_here, run_pool
from driftbench.scheduler import recorder
from tests.test_resume import deterministic

BEFORE = json.loads((Path(__file__).parent / "records_89c096f.json").read_text())
SETS = {
    "clients": "12",
    "rounds": "40",
    "drift_every": "12",
    "fraction": "0.5",
    "train.participants": "6",
    "train.local_steps": "5",
}
METHODS = ("fedavg", "ifca")


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """The comparison run here, with every summary.json write counted by path."""
    root = tmp_path_factory.mktemp("runs")
    writes: list[Path] = []
    original = recorder.write_summary

    def counted(path, summary):
        writes.append(Path(path))
        original(path, summary)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(recorder, "write_summary", counted)
        summaries = run_here(plan_jobs(Request({"label-swap": SETS}, METHODS, (0,)), Execution("cpu", root, quiet=True)))
    return root, writes, summaries


def test_each_summary_is_written_once_when_its_run_ends(written):
    root, writes, _ = written
    assert sorted(writes) == sorted(root / "label-swap" / m / "seed0" / "summary.json" for m in METHODS)


def test_the_files_are_the_records_at_89c096f_less_the_derived_time_to_accuracy(written):
    root, _, _ = written
    for method in METHODS:
        label = f"label-swap/{method}/seed0"
        before, folder = BEFORE[label], root / label
        summary = deterministic(json.loads((folder / "summary.json").read_text()))
        expected = dict(before["summary"])
        if method != "fedavg":
            assert expected["time_to_accuracy"] is not None, "the fixture's runs had a time to FedAvg's target"
            expected["time_to_accuracy"] = None  # moved out of the file: derived on reading
        assert summary == expected, label
        rounds = pd.read_csv(folder / "rounds.csv")
        pd.testing.assert_frame_equal(rounds[list(before["rounds"])], pd.DataFrame(before["rounds"]), check_dtype=False)


def test_readers_derive_the_time_to_accuracy_the_rewrite_stored(written):
    root, _, summaries = written
    found = {r.method: r.summary for r in find_runs(root)}
    for method in METHODS:
        stored = BEFORE[f"label-swap/{method}/seed0"]["summary"]["time_to_accuracy"]
        assert deterministic(json.loads(json.dumps(found[method].time_to_accuracy, default=vars))) == stored
        assert next(s for s in summaries if s.method == method).time_to_accuracy == found[method].time_to_accuracy


def test_a_run_alone_finds_its_reference_beside_it_and_none_without_one(written, tmp_path):
    root, _, _ = written
    [ifca] = read_records([root / "label-swap/ifca/seed0"])
    assert ifca.summary is not None and ifca.summary.time_to_accuracy is not None
    alone = tmp_path / "label-swap/ifca/seed0"
    alone.parent.mkdir(parents=True)
    (root / "label-swap/ifca/seed0").rename(alone)
    try:
        [orphan] = read_records([alone])
        assert orphan.summary is not None and orphan.summary.time_to_accuracy is None
    finally:
        alone.rename(root / "label-swap/ifca/seed0")


def test_a_pool_leaves_each_summary_as_its_run_wrote_it(tmp_path):
    """After a pool's runs end nothing adds the time to FedAvg's target to the files; readers derive it."""
    jobs = plan_jobs(Request({"label-swap": SETS}, ("fedavg", "ifca"), (0,)), Execution("cpu", tmp_path))
    outcomes = run_pool(jobs, PoolOptions("local", 2, quiet=True))
    assert [o.state for o in outcomes] == ["ran", "ran"]
    stored = json.loads((tmp_path / "label-swap/ifca/seed0/summary.json").read_text())
    assert stored["time_to_accuracy"] is None
    derived = {s.method: s.time_to_accuracy for s in finished_summaries(outcomes)}
    assert derived["ifca"] is not None and derived["ifca"].target == derived["fedavg"].target


def test_a_record_written_before_holds_its_stored_time_and_reads_the_same(written, tmp_path):
    """A record from 89c096f or before holds the time the rewrite stored; readers derive the same time from it."""
    root, _, _ = written
    for method in METHODS:
        copy = tmp_path / "label-swap" / method / "seed0"
        shutil.copytree(root / "label-swap" / method / "seed0", copy)
        summary = json.loads((copy / "summary.json").read_text())
        summary["time_to_accuracy"] = BEFORE[f"label-swap/{method}/seed0"]["summary"]["time_to_accuracy"]
        (copy / "summary.json").write_text(json.dumps(summary))
    old = {r.method: r.summary.time_to_accuracy for r in find_runs(tmp_path)}
    assert old == {r.method: r.summary.time_to_accuracy for r in find_runs(root)}
