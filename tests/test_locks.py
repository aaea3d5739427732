"""Run locks: two sweeps into one folder run each run once, stale locks and run-out leases are taken over, live ones kept."""

import json
import logging
import multiprocessing
import os
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from driftbench import locks
from driftbench.cli import main
from driftbench.errors import RunLocked
from driftbench.locks import LEASE_ENV, LOCK, Holder, claim, read_holder, remove_if_held_by, run_lock
from driftbench.methods.catalog import load_method
from driftbench.record.schema import read_summary
from driftbench.runner import LOCKED, Execution, PoolOptions, Request, execute, job_trace, outcome_line, plan_jobs, run_pool
from driftbench.scheduler import RunSpec, run

ROOT = Path(__file__).resolve().parents[1]
SETS = {"clients": "6", "rounds": "4", "train.participants": "3", "train.local_steps": "1"}
TINY = [arg for key, value in SETS.items() for arg in ("--set", f"{key}={value}")]
RUN = ["run", "--trace", "label-swap", "--method", "fedavg", "--device", "cpu", "--quiet", *TINY]
FOLDER = "label-swap/fedavg/seed0"


def dead_pid() -> int:
    """The id of a process of this host that has ended (and been reaped)."""
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True)
    return int(proc.stdout)


def write_lock(folder: Path, host: str, pid: int, renewed: datetime | None = None, lease: float = 120.0) -> Holder:
    """A lock of ``host``'s process ``pid``: without a lease (as before leases), or last renewed at ``renewed``."""
    holder = Holder(host, pid, "2026-01-01T00:00:00+00:00")
    if renewed is not None:
        holder = Holder(host, pid, holder.started, renewed.isoformat(), lease)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / LOCK).write_text(json.dumps({k: v for k, v in vars(holder).items() if v is not None}))
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


@pytest.mark.parametrize("found", ["no lock", "a run-out lease"])
def test_of_processes_that_race_for_a_free_run_exactly_one_claims_it(found, tmp_path):
    """Six processes reach a run at once, finding no lock, or another host's lock whose lease ran out an hour ago."""
    if found == "a run-out lease":
        write_lock(tmp_path, "node7", 4242, datetime.now(UTC) - timedelta(hours=1))
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


def test_another_hosts_lock_whose_lease_ran_out_is_taken_over_without_unlock(tmp_path, caplog):
    """The lock of a process killed on node7 an hour ago, its lease of 120 s long run out: no ``unlock`` needed."""
    stale = write_lock(tmp_path / FOLDER, "node7", 4242, datetime.now(UTC) - timedelta(hours=1))
    with caplog.at_level(logging.WARNING, logger="driftbench"):
        assert main([*RUN, "--out", str(tmp_path)]) == 0
    ran_out = (datetime.fromisoformat(str(stale.renewed)) + timedelta(seconds=120)).isoformat(timespec="seconds")
    notices = [r.getMessage() for r in caplog.records if "stale lock" in r.getMessage()]
    assert notices == [f"{tmp_path / FOLDER}: taking over the stale lock of {stale}, whose lease ran out at {ran_out}"]
    assert read_summary(tmp_path / FOLDER / "summary.json").status == "ok" and not (tmp_path / FOLDER / LOCK).exists()


LEASE = 2.0  # seconds: the foreign holders below renew every LEASE / 12
FOREIGN_HOLDER = """
import socket, sys, time
from pathlib import Path
socket.gethostname = lambda: "node7"  # this process plays a process on another host
from driftbench.locks import run_lock
with run_lock(Path(sys.argv[1])):
    print("holding", flush=True)
    end = time.monotonic() + float(sys.argv[2])
    while time.monotonic() < end:  # a long computing step: the main thread never waits
        pass
print("released", flush=True)
"""


def foreign_holder(folder: Path, busy: float) -> subprocess.Popen:
    """A process "on node7" that holds ``folder``'s lock (lease ``LEASE``) while computing for ``busy`` seconds."""
    env = {**os.environ, LEASE_ENV: str(LEASE), "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-c", FOREIGN_HOLDER, str(folder), str(busy)]
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "holding\n", proc.communicate()
    return proc


def test_a_slow_holder_on_another_host_is_never_taken_over_while_it_runs(tmp_path):
    """Its main thread computes for three leases without a pause; the renewals keep every takeover away until it ends."""
    proc = foreign_holder(tmp_path, busy=3 * LEASE)
    first = read_holder(tmp_path)
    assert first is not None and first.host == "node7" and first.lease_seconds == LEASE
    deadline, tries = time.monotonic() + 2.5 * LEASE, 0
    while time.monotonic() < deadline:
        with pytest.raises(RunLocked, match="running elsewhere, locked by pid .* on node7 .* its lease runs out at"):
            claim(tmp_path)
        tries += 1
        time.sleep(0.05)
    renewed = read_holder(tmp_path)
    assert tries > 10 and renewed is not None and renewed.same_process(first) and renewed.renewed != first.renewed
    assert proc.communicate(timeout=60) == ("released\n", "") and read_holder(tmp_path) is None
    claim(tmp_path)


def test_a_holder_killed_on_another_host_is_taken_over_once_its_lease_runs_out(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv(LEASE_ENV, str(LEASE))
    folder = tmp_path / FOLDER
    proc = foreign_holder(folder, busy=600)
    with pytest.raises(RunLocked, match="the run is taken over once its lease runs out at"):
        claim(folder)
    proc.kill()
    proc.wait()
    last = read_holder(folder)  # its last renewal, a lease before the takeover
    assert last is not None and last.expires is not None
    deadline = time.monotonic() + 30 * LEASE

    def sleep(seconds):  # the wait below fails rather than waits for ever on a lease that never runs out
        assert time.monotonic() < deadline, "the lease never ran out"
        time.sleep(seconds)

    monkeypatch.setattr(locks, "sleep", sleep)
    with caplog.at_level(logging.INFO, logger="driftbench"):
        outcome = execute(sweep_job(tmp_path, wait=True))  # what a Ray retry does: wait for the lock
    assert outcome.state == "ran" and outcome.status == "ok"
    (notice,) = [r for r in caplog.records if "stale lock" in r.getMessage()]
    ran_out = last.expires.isoformat(timespec="seconds")
    assert notice.getMessage() == f"{folder}: taking over the stale lock of {last}, whose lease ran out at {ran_out}"
    assert notice.created >= last.expires.timestamp()
    assert not (folder / LOCK).exists()


def tiny_spec(out: Path) -> RunSpec:
    (job,) = plan_jobs(Request({"label-swap": SETS}, ("fedavg",)), Execution("cpu", out))
    resolved = job_trace(job)
    return RunSpec(resolved.trace, resolved.pool, resolved.train, load_method("fedavg"), 0, "cpu", out, quiet=True)


def test_a_holder_that_lost_its_lock_stops_without_overwriting_its_successor(tmp_path, monkeypatch):
    """Stopped for longer than its lease, a holder finds its lock taken over: it renews no more, and its run stops."""
    monkeypatch.setenv(LEASE_ENV, "0.6")
    folder = tmp_path / FOLDER
    with run_lock(folder) as lease:
        with locks.flocked(folder):  # as a takeover replaces it
            successor = write_lock(folder, "node7", 4242, datetime.now(UTC))
        deadline = time.monotonic() + 30
        while lease.lost is None:
            assert time.monotonic() < deadline, "the lease never noticed its successor"
            time.sleep(0.01)
        assert lease.lost == f"it is now locked by {successor}"
        lost = r"lost its run lock \(it is now locked by pid 4242 on node7 .*\); stopped after round 0, writing nothing more"
        with pytest.raises(RunLocked, match=lost):
            run(tiny_spec(tmp_path), lambda: lease.lost)
        assert not (folder / "summary.json").exists() and not (folder / "checkpoint").exists()
    assert read_holder(folder) == successor  # neither renewed over nor released


def test_the_holder_removes_what_killed_writers_left_but_not_a_live_claim(tmp_path):
    folder = tmp_path / FOLDER
    (folder / "checkpoint").mkdir(parents=True)
    dead, live = Holder(socket.gethostname(), dead_pid(), "2026-01-01T00:00:00+00:00"), Holder("node7", 1, "?")
    leftovers = [folder / ".summary.json.12.tmp", folder / "checkpoint/.state.pt.12.tmp", folder / f".{LOCK}.12.tmp"]
    for path, text in zip(leftovers, ["{", "", locks.lock_text(dead)]):
        path.write_text(text)
    (folder / f".{LOCK}.13.tmp").write_text(locks.lock_text(live))  # another host's claim under way
    with run_lock(folder):
        assert not any(path.exists() for path in leftovers) and (folder / f".{LOCK}.13.tmp").exists()


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


def test_a_takeover_that_finds_the_stale_lock_already_removed_removes_nothing(tmp_path):
    """A second taker that reads the stale lock, then finds it gone under the flock (the first removed it, not yet
    claimed): nothing to remove, no error; the six-process race failed with ENOENT here."""
    stale = write_lock(tmp_path, socket.gethostname(), dead_pid())
    assert remove_if_held_by(tmp_path, stale)
    assert not remove_if_held_by(tmp_path, stale)
    assert read_holder(tmp_path) is None


def test_another_hosts_lock_without_a_lease_is_respected_until_unlock_clears_it(tmp_path, capsys):
    """A lock without a lease (an older driftbench's, which never renews it) of another host cannot be judged from here."""
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
