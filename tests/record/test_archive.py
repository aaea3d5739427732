"""Archives of run records: every reader takes one as it takes the runs folder (tables, summaries, the leaderboard byte
for byte, export, reproduce --recorded), each bad input is refused in one line naming the file, and a write never
loses an archive."""

import json
import shutil

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from driftbench import results
from driftbench.cli import main
from driftbench.errors import DriftbenchError
from driftbench.record.archive import MANIFEST, ArchivedRun, open_archive, table_file
from driftbench.record.archive_write import write_table
from driftbench.record.files import CONFIG, DIAGNOSTICS, read_json
from driftbench.record.runs import find_runs, nested_runs
from driftbench.reproduce.report import read_report
from tests.test_fuzz import recorded  # noqa: F401 (a fixture: reproduce's runs of two claims, recorded)
from tests.tracking.test_trackers import tensorboard_scalars

TINY = ["--set", "clients=6", "--set", "rounds=6", "--set", "drift_every=3", "--set", "train.participants=3"]
TINY += ["--set", "train.local_steps=1", "--set", "method.k=2"]
TABLES = ("runs", "evaluations", "events", "diagnostics", "matrices", "detections")


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """A sweep of label-swap x (fedavg, ifca) x seeds 0, 1 at tiny settings, every run complete."""
    out = tmp_path_factory.mktemp("runs")
    sweep = ["sweep", "--traces", "label-swap", "--methods", "fedavg,ifca", "--seeds", "0,1", "--jobs", "1"]
    assert main([*sweep, "--out", str(out), "--quiet", *TINY]) == 0
    return out


@pytest.fixture(scope="module")
def archived(swept, tmp_path_factory):
    """The sweep archived with its diagnostics."""
    out = tmp_path_factory.mktemp("results") / "tiny"
    assert main(["archive", str(swept), "--out", str(out), "--diagnostics", "--quiet"]) == 0
    return out


def test_every_table_and_summary_reads_from_the_archive_as_from_the_runs_folder(swept, archived):
    for name in TABLES:
        folder, archive = getattr(results, name)(swept), getattr(results, name)(archived)
        places = {str(swept / r.label): str(archived / r.label) for r in find_runs(swept)}
        assert list(archive["path"]) == [places[path] for path in folder["path"]]  # the run's folder, or its place
        folder, archive = folder.drop(columns="path"), archive.drop(columns="path")
        assert len(folder) > 0
        pd.testing.assert_frame_equal(archive, folder)
    runs, read = find_runs(swept), find_runs(archived)
    assert [(r.label, r.summary, r.trace_hash) for r in read] == [(r.label, r.summary, r.trace_hash) for r in runs]
    assert [r.config() for r in read] == [read_json(r.path / CONFIG) for r in runs]
    derived = [r.summary.time_to_accuracy for r in read if r.method == "ifca"]  # FedAvg's target, derived on reading
    assert all(tta is not None and tta.target.reference == "fedavg" for tta in derived)
    assert all(isinstance(r.source, ArchivedRun) for r in read)


def test_the_command_says_what_it_wrote_and_leaves_out_incomplete_runs(swept, tmp_path, capsys):
    runs = tmp_path / "runs"
    shutil.copytree(swept, runs)
    crashed = runs / "label-swap/crashed/seed0"
    crashed.mkdir(parents=True)
    config = read_json(runs / "label-swap/ifca/seed0" / CONFIG)
    (crashed / CONFIG).write_text(json.dumps({**config, "method": {**config["method"], "name": "crashed"}}))
    out = tmp_path / "results/small"
    assert main(["archive", str(runs), "--out", str(out), "--quiet"]) == 0
    printed = capsys.readouterr().out.splitlines()
    files = {p.name: p.stat().st_size for p in out.iterdir()}
    assert sorted(files) == [MANIFEST, "evaluations.parquet", "events.parquet", "runs.parquet"]  # no diagnostics
    assert printed[0] == f"wrote {out}: 4 runs, {sum(files.values())} bytes " + printed[0].split("bytes ")[1]
    assert {line.split()[0]: int(line.split()[-1]) for line in printed[2:-1]} == files
    assert printed[-1] == "skipped 1 incomplete runs: label-swap/crashed/seed0"
    assert read_json(out / MANIFEST)["tables"] == {"runs": 4, "evaluations": 24, "events": len(results.events(swept))}
    assert [r.label for r in find_runs(out)] == [r.label for r in find_runs(swept)]
    assert results.diagnostics(out).empty and not any(r.holds(DIAGNOSTICS) for r in find_runs(out))


def test_the_leaderboard_from_the_archive_is_byte_identical(swept, archived, tmp_path):
    pytest.importorskip("matplotlib", reason="the leaderboard's plots need matplotlib")
    for root, board in ((swept, "folder"), (archived, "archive")):
        assert main(["leaderboard", str(root), "--out", str(tmp_path / board)]) == 0
    for name in ("leaderboard.md", "leaderboard.csv"):
        assert (tmp_path / "archive" / name).read_bytes() == (tmp_path / "folder" / name).read_bytes()
    assert "Run folders" in (tmp_path / "folder/index.html").read_text()
    assert "Run folders" not in (tmp_path / "archive/index.html").read_text()  # an archived run has no folder to link


def test_export_from_the_archive_logs_what_the_folder_exports(swept, archived, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for root, logs in ((swept, "folder"), (archived, "archive")):
        assert main(["export", f"tensorboard={logs}", str(root), "--quiet"]) == 0
        assert capsys.readouterr().out.endswith(": 4 runs logged, 0 already there, 0 incomplete (skipped), 0 failed\n")
    for record in find_runs(swept):
        logged = tensorboard_scalars(tmp_path / "folder" / record.label)
        assert logged and tensorboard_scalars(tmp_path / "archive" / record.label) == logged


def test_reproduce_recorded_judges_an_archive_as_the_runs_folder(recorded, tmp_path, monkeypatch, capsys):  # noqa: F811
    root, args = recorded
    assert main(["archive", str(root / "runs"), "--out", str(tmp_path / "archive"), "--quiet"]) == 0
    assert [path.relative_to(tmp_path / "archive").parts[0] for path, _ in nested_runs(tmp_path / "archive")] == [
        path.relative_to(root / "runs").parts[0] for path, _ in nested_runs(root / "runs")
    ]  # below their settings' folders, as reproduce wrote them
    at = {flag: args.index(flag) + 1 for flag in ("--out", "--report")}
    for out, report in ((root / "runs", "folder"), (tmp_path / "archive", "archive")):
        command = [*args, "--recorded"]
        command[at["--out"]], command[at["--report"]] = str(out), str(tmp_path / report)
        if report == "archive":  # its rows come from the archive's tables, not from the folders the summaries name
            monkeypatch.setattr("driftbench.record.runs.read_table", lambda *_: pytest.fail("read a run folder's table"))
        assert main(command) == 0
        assert "4 runs (0 ran, 4 up to date, 0 failed)" in capsys.readouterr().out
    rows = {report: read_report(tmp_path / report / "reproduce.csv") for report in ("folder", "archive")}
    assert rows["archive"] == rows["folder"] and [row["id"] for row in rows["folder"]] == ["final", "peak"]
    assert main([*args[:-4], "--out", str(tmp_path / "archive")]) == 2  # runs nothing into an archive
    assert "an archive, which reproduce reads with --recorded and --report DIR only" in capsys.readouterr().err


def damage(archive, case):
    """Damage a copy of an archive: the file at fault, for each bad input."""
    if case == "no manifest":
        (archive / MANIFEST).unlink()
        return archive
    manifest = read_json(archive / MANIFEST)
    if case in ("foreign manifest", "newer version", "more rows"):
        edits = {"foreign manifest": {"format": "other"}, "newer version": {"version": 2}}
        edits["more rows"] = {"tables": {**manifest["tables"], "evaluations": manifest["tables"]["evaluations"] + 1}}
        (archive / MANIFEST).write_text(json.dumps({**manifest, **edits[case]}))
        return archive / (table_file("evaluations") if case == "more rows" else MANIFEST)
    table = archive / table_file({"missing table": "events", "cut": "evaluations"}.get(case, "runs"))
    if case == "missing table":
        table.unlink()
    elif case == "cut":
        table.write_bytes(table.read_bytes()[:-100])
    elif case == "foreign columns":
        pq.write_table(pa.Table.from_pandas(pd.read_parquet(table).drop(columns="summary"), preserve_index=False), table)
    else:  # a summary that fails the record's schema
        frame = pd.read_parquet(table)
        frame.loc[0, "summary"] = json.dumps({**json.loads(frame.loc[0, "summary"]), "final_accuracy": "high"})
        write_table(table, frame, "runs")
    return table


BAD = {
    "no manifest": "not a driftbench archive (no archive.json)",
    "foreign manifest": "not a driftbench archive manifest (format 'other', expected 'driftbench-archive')",
    "newer version": "archive format version 2, but this driftbench reads version 1",
    "missing table": "missing (archive.json lists the table events)",
    "cut": "unreadable Parquet table",
    "foreign columns": ") are not archive table runs's (run string, trace string, method string, seed int64",
    "more rows": "24 rows, but archive.json says 25",
    "summary schema": "label-swap/fedavg/seed0/summary.json: final_accuracy: expected float, got 'high'",
}


@pytest.mark.parametrize("case", BAD)
def test_each_bad_archive_is_refused_in_one_line_naming_the_file(archived, tmp_path, case):
    archive = tmp_path / "archive"
    shutil.copytree(archived, archive)
    at_fault = damage(archive, case)
    with pytest.raises(DriftbenchError) as error:
        open_archive(archive)  # what find_runs would read as a runs folder (it has no run records)
        for record in find_runs(archive):
            record.rounds(), record.events()
    message = str(error.value)
    assert message.startswith(f"{at_fault}: ") and BAD[case] in message and "\n" not in message, message


def test_the_cli_names_the_damaged_file_and_a_folder_without_runs(archived, tmp_path, capsys):
    archive = tmp_path / "archive"
    shutil.copytree(archived, archive)
    at_fault = damage(archive, "cut")
    assert main(["leaderboard", str(archive), "--out", str(tmp_path / "board")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {at_fault}: unreadable Parquet table (") and err.count("\n") == 1
    assert main(["check", str(tmp_path), "--reference", str(tmp_path / "ref.json"), "--update-reference"]) == 2
    assert capsys.readouterr().err.startswith(f"error: {tmp_path}: no run records (expected ")


def test_writing_again_refuses_and_loses_nothing(swept, archived, tmp_path, monkeypatch, capsys):
    out = tmp_path / "results/tiny"
    shutil.copytree(archived, out)
    kept = {p.name: p.read_bytes() for p in out.iterdir()}
    assert main(["archive", str(swept), "--out", str(out), "--quiet"]) == 2
    assert capsys.readouterr().err == f"error: {out}: exists; --force replaces the archive there\n"
    assert main(["archive", str(swept), "--out", str(swept / "label-swap"), "--force", "--quiet"]) == 2
    assert "not an archive: --force replaces an archive only" in capsys.readouterr().err
    assert main(["archive", str(archived), "--out", str(tmp_path / "again"), "--quiet"]) == 2
    assert "an archive already; archive a runs folder" in capsys.readouterr().err

    def full(path, frame, table):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("driftbench.record.archive_write.write_table", full)
    assert main(["archive", str(swept), "--out", str(out), "--force", "--quiet"]) == 2
    assert capsys.readouterr().err.startswith(f"error: cannot write {out} (writing its tables into a temporary folder")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == kept and sorted(p.name for p in out.parent.iterdir()) == ["tiny"]
    monkeypatch.undo()
    assert main(["archive", str(swept), "--out", str(out), "--force", "--quiet"]) == 0  # replaced: no diagnostics now
    assert sorted(p.name for p in out.iterdir()) == [MANIFEST, "evaluations.parquet", "events.parquet", "runs.parquet"]
    assert sorted(p.name for p in out.parent.iterdir()) == ["tiny"]


def test_unpacked_runs_read_as_the_archive_and_a_sweep_into_them_keeps_every_one(swept, archived, tmp_path, capsys):
    """A sweep continued on a new machine from an archive: the runs come back as folders and none trains again."""
    out = tmp_path / "runs"
    assert main(["unpack", str(archived), "--out", str(out), "--quiet"]) == 0
    assert capsys.readouterr().out.startswith(f"wrote 4 runs below {out}; left 0 run folders")
    for name in TABLES:
        unpacked, archive = getattr(results, name)(out), getattr(results, name)(archived)
        if name == "runs":  # the summary names the run's new folder
            assert list(unpacked["run_dir"]) == [str(r.path.resolve()) for r in find_runs(out)]
        unpacked, archive = (table.drop(columns=["path", "run_dir"], errors="ignore") for table in (unpacked, archive))
        pd.testing.assert_frame_equal(unpacked, archive)
    sweep = ["sweep", "--traces", "label-swap", "--methods", "fedavg,ifca", "--seeds", "0,1", "--jobs", "1"]
    assert main([*sweep, "--out", str(out), "--quiet", *TINY]) == 0
    assert "0 ran, 4 skipped (up to date)" in capsys.readouterr().out
    assert main(["unpack", str(archived), "--out", str(out), "--quiet"]) == 0
    assert capsys.readouterr().out.startswith(f"wrote 0 runs below {out}; left 4 run folders already there: ")
