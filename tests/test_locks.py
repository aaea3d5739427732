"""Run locks: two sweeps into one folder run each run once, stale locks are taken over, other hosts' locks are respected."""

import json
import logging
import multiprocessing
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from driftbench import locks
from driftbench.cli import main
from driftbench.errors import RunLocked
from driftbench.locks import LOCK, Holder, claim, read_holder, remove_if_held_by
from driftbench.record.schema import read_summary
from driftbench.runner import LOCKED, Execution, PoolOptions, Request, execute, outcome_line, plan_jobs, run_pool

ROOT = Path(__file__).resolve().parents[1]
SETS = {"clients": "6", "rounds": "4", "train.participants": "3", "train.local_steps": "1"}
TINY = [arg for key, value in SETS.items() for arg in ("--set", f"{key}={value}")]
RUN = ["run", "--trace", "label-swap", "--method", "fedavg", "--device", "cpu", "--quiet", *TINY]
FOLDER = "label-swap/fedavg/seed0"


def dead_pid() -> int:
    """The id of a process of this host that has ended (and been reaped)."""
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True)
    return int(proc.stdout)


def write_lock(folder: Path, host: str, pid: int) -> Holder:
    holder = Holder(host, pid, "2026-01-01T00:00:00+00:00")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / LOCK).write_text(json.dumps({"host": host, "pid": pid, "started": holder.started}))
    return holder


def test_two_sweeps_at_once_run_each_run_once(tmp_path):
    """Two ``driftbench sweep`` processes on one folder and 4 runs: the two reports together ran each run once."""
    args = ["sweep", "--traces", "label-swap", "--methods", "fedavg,oracle", "--seeds", "0,1", "--jobs", "2", *TINY[:6]]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "driftbench.cli", *args, "--device", "cpu", "--quiet", "--out", str(tmp_path)]
    procs = [subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    reports = [proc.communicate(timeout=600) for proc in procs]
    lasts = [out.strip().splitlines()[-1] for out, _ in reports]
    counts = [dict((state, int(n)) for n, state in (part.strip().split(" ", 1) for part in last.split(","))) for last in lasts]
    ran = sum(c["ran"] for c in counts)
    assert ran == 4, f"each run trained once in total: {lasts}"
    for c, (out, err) in zip(counts, reports):
        assert c["ran"] + c["skipped (up to date)"] + c.get(LOCKED, 0) == 4 and c["failed"] == 0, (out, err)
        assert "Traceback" not in err
    summaries = sorted(tmp_path.glob("*/*/seed*/summary.json"))
    assert len(summaries) == 4 and all(read_summary(p).status == "ok" for p in summaries)
    assert not list(tmp_path.rglob(LOCK)) and not list(tmp_path.rglob("*.tmp"))


def contend(folder: Path, start, done, results) -> None:  # a process of the race below
    start.wait()
    try:
        claim(folder)
        results.put("claimed")
    except RunLocked:
        results.put("locked")
    done.wait()  # the winner holds its lock until every process has tried


def test_of_processes_that_find_no_lock_at_once_exactly_one_claims_the_run(tmp_path):
    context = multiprocessing.get_context("fork")
    start, done, results = context.Barrier(6), context.Barrier(6), context.Queue()
    procs = [context.Process(target=contend, args=(tmp_path, start, done, results)) for _ in range(6)]
    for proc in procs:
        proc.start()
    outcomes = sorted(results.get(timeout=60) for _ in procs)
    for proc in procs:
        proc.join(60)
    assert outcomes == ["claimed"] + ["locked"] * 5


def test_a_stale_lock_of_this_host_is_taken_over_with_a_notice(tmp_path, caplog, capsys):
    stale = write_lock(tmp_path / FOLDER, socket.gethostname(), dead_pid())
    with caplog.at_level(logging.WARNING, logger="driftbench"):
        assert main([*RUN, "--out", str(tmp_path)]) == 0
    notices = [r.getMessage() for r in caplog.records if "stale lock" in r.getMessage()]
    assert notices == [f"{tmp_path / FOLDER}: taking over the stale lock of {stale}, which no longer runs"]
    assert read_summary(tmp_path / FOLDER / "summary.json").status == "ok"
    assert not (tmp_path / FOLDER / LOCK).exists()


def test_two_takeovers_of_one_stale_lock_never_remove_the_fresh_lock(tmp_path):
    """Two processes that read the same stale lock: the first removes it and claims the run, the second then finds it held."""
    stale = write_lock(tmp_path, socket.gethostname(), dead_pid())
    assert stale.stale and read_holder(tmp_path) == stale
    assert remove_if_held_by(tmp_path, stale)
    fresh = claim(tmp_path)
    assert not remove_if_held_by(tmp_path, stale)
    assert read_holder(tmp_path) == fresh
    with pytest.raises(RunLocked, match=f"running elsewhere, locked by pid {os.getpid()} on "):
        claim(tmp_path)


def test_another_hosts_lock_is_respected_until_unlock_clears_it(tmp_path, capsys):
    holder = write_lock(tmp_path / FOLDER, "node7", 4242)
    assert main([*RUN, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"error: {tmp_path / FOLDER}: running elsewhere, locked by {holder}; wait for it to finish, or, if that process is "
        f"gone, clear the lock with: driftbench unlock {tmp_path / FOLDER}\n"
    )
    assert not (tmp_path / FOLDER / "config.json").exists()
    assert main(["unlock", str(tmp_path)]) == 0
    assert capsys.readouterr().out == f"unlocked {tmp_path / FOLDER} (was locked by {holder})\n"
    assert main([*RUN, "--out", str(tmp_path)]) == 0
    assert read_summary(tmp_path / FOLDER / "summary.json").status == "ok"


def test_unlock_refuses_a_running_holder_and_a_folder_without_locks(tmp_path, capsys):
    write_lock(tmp_path / FOLDER, socket.gethostname(), os.getpid())
    assert main(["unlock", str(tmp_path / FOLDER)]) == 2
    assert "which is running; stop it first" in capsys.readouterr().err
    (tmp_path / FOLDER / LOCK).unlink()
    assert main(["unlock", str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"error: unlock: no {LOCK} in or below {tmp_path}\n"


def sweep_job(out: Path, wait: bool):
    (job,) = plan_jobs(Request({"label-swap": SETS}, ("fedavg",)), Execution("cpu", out, wait_locked=wait))
    return job


def test_a_sweep_job_reports_a_locked_run_or_waits_for_it(tmp_path, monkeypatch, caplog):
    folder = tmp_path / FOLDER
    holder = write_lock(folder, "node7", 4242)
    outcome = execute(sweep_job(tmp_path, wait=False))
    assert outcome.state == LOCKED and outcome.exit_code == 2 and str(holder) in outcome.error
    waits = []

    def sleep(seconds):  # the holder finishes while the job waits
        waits.append(seconds)
        remove_if_held_by(folder, holder)

    monkeypatch.setattr(locks, "sleep", sleep)
    with caplog.at_level(logging.INFO, logger="driftbench"):
        outcome = execute(sweep_job(tmp_path, wait=True))
    assert waits == [locks.POLL_SECONDS] and outcome.state == "ran" and outcome.status == "ok"
    assert any(r.getMessage().endswith(f"driftbench unlock {folder}; waiting for it") for r in caplog.records)


@pytest.mark.parametrize("backend", ["local", "ray"])
def test_a_pool_reports_a_locked_run_as_running_elsewhere_and_runs_the_others(backend, tmp_path):
    if backend == "ray":
        pytest.importorskip("ray", reason="Ray is not installed (pip install 'driftbench[ray]')")
    holder = write_lock(tmp_path / FOLDER, "node7", 4242)
    jobs = plan_jobs(Request({"label-swap": SETS}, ("fedavg", "oracle")), Execution("cpu", tmp_path))
    outcomes = {o.label: o for o in run_pool(jobs, PoolOptions(backend, 2, quiet=True))}
    assert outcomes[FOLDER].state == LOCKED and str(holder) in outcomes[FOLDER].error
    assert outcomes["label-swap/oracle/seed0"].state == "ran"
    assert outcome_line(list(outcomes.values())) == "1 ran, 0 skipped (up to date), 1 running elsewhere, 0 failed"
    assert read_holder(tmp_path / FOLDER) == holder and not (tmp_path / FOLDER / "config.json").exists()
