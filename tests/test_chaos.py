"""Faults injected: a Ray worker killed mid-sweep, and a claims report killed at random moments, each resumed.

Each ends with every run trained once to completion and records (or the report) equal to those of
a sweep (a report) nobody interrupted, wall-clock fields aside.
"""

import json
import logging
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from driftbench.cli import main
from driftbench.locks import LEASE_ENV, LOCK, Holder, flocked, lock_text, read_holder
from driftbench.record.files import WALL_CLOCK_FIELDS
from driftbench.record.schema import ROUND_COLUMNS, read_rounds, read_summary
from driftbench.runner import Execution, PoolOptions, Request, outcome_line, plan_jobs, run_here, run_pool
from driftbench.scheduler import Checkpointing, checkpoint
from tests.test_resume import deterministic

ROOT = Path(__file__).resolve().parents[1]
LEASE = 3.0  # seconds: the lease of the Ray workers' locks, so that a lost node's run is taken over in seconds
SWEEP = {
    "clients": "8",
    "rounds": "40",
    "drift_every": "10",
    "train_samples": "10",
    "test_samples": "5",
    "train.participants": "4",
    "train.local_steps": "2",
}


def records(root: Path) -> dict[str, object]:
    """Every run record below ``root``: its summary, rounds, events and diagnostics, wall-clock fields aside."""
    columns = [c for c in ROUND_COLUMNS if c not in WALL_CLOCK_FIELDS]
    return {
        str(folder.relative_to(root)): (
            deterministic(json.loads((folder / "summary.json").read_text())),
            pd.read_csv(folder / "rounds.csv")[columns].to_csv(index=False),
            (folder / "events.csv").read_text(),
            (folder / "diagnostics.csv").read_text(),
        )
        for folder in sorted(path.parent for path in root.rglob("summary.json"))
    }


def wait_for(condition, what: str, seconds: float = 300.0, every: float = 0.005) -> None:
    """Poll ``condition`` every ``every`` seconds until it holds; fail after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"no {what} within {seconds:.0f} s"
        time.sleep(every)


@pytest.fixture
def ray_cluster():
    """A local Ray cluster of two worker CPUs whose workers take locks with a lease of ``LEASE`` seconds."""
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'driftbench[ray]')")
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        logging_level=logging.WARNING,
        runtime_env={"env_vars": {LEASE_ENV: str(LEASE)}},
    )
    yield ray
    ray.shutdown()


def parent(pid: int) -> int | None:
    """The parent of process ``pid``; None once it has exited (a zombie included)."""
    try:
        state, ppid = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[:2]
    except OSError:
        return None
    return None if state in ("Z", "X") else int(ppid)


def children(pid: int) -> list[int]:
    """The live processes that ``pid`` started."""
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and parent(int(p.name)) == pid]


def raylet(node) -> int:
    """The process id of a Ray node's raylet, the parent of its workers."""
    from ray._private.ray_constants import PROCESS_TYPE_RAYLET

    return node.all_processes[PROCESS_TYPE_RAYLET][0].process.pid


def node_processes(node) -> list[int]:
    """A Ray node's processes: those it started itself and those its raylet started (workers, agents)."""
    return [*(p.process.pid for ps in node.all_processes.values() for p in ps), *children(raylet(node))]


@pytest.fixture
def two_nodes(tmp_path_factory, monkeypatch):
    """A Ray cluster of two nodes on this machine, bound to 127.0.0.1: a head and a worker node, one CPU each, each with its
    own temp folder. Shut down after the test, passed or failed, with none of its processes left.

    Ray's own multi-node simulation (``ray.cluster_utils.Cluster``) keeps each node's processes, so one node can be killed
    alone and the cluster stopped without ``ray stop``, which stops every Ray process on the machine.
    """
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'driftbench[ray]')")
    from ray._private import services
    from ray.cluster_utils import Cluster

    temp = tmp_path_factory.mktemp("ray")
    (temp / "ray").mkdir()
    monkeypatch.setenv("RAY_TMPDIR", str(temp))  # Cluster writes its address here, not where any ray.init() would join it
    monkeypatch.setattr(services, "resolve_ip_for_localhost", lambda host: host)  # else 127.0.0.1 means the public IP (ray#59110)
    cluster = Cluster()
    try:
        for name in ("head", "worker"):
            cluster.add_node(
                node_ip_address="127.0.0.1", num_cpus=1, resources={name: 1}, temp_dir=str(temp / name), include_dashboard=False
            )
        yield cluster
        processes = [pid for node in cluster.list_all_nodes() for pid in node_processes(node)]
    finally:
        ray.shutdown()  # a failed sweep may still be connected to the head, which Cluster does not remove then
        cluster.shutdown()
    wait_for(lambda: not any(parent(pid) for pid in processes), "end of the cluster's processes", 30, every=0.1)


def lose_a_run(tmp_path: Path, caplog, options: PoolOptions, there: Callable[[int], bool], kill: Callable[[int], None]) -> Holder:
    """Sweep four runs with ``options`` and lose one: once a run whose holder ``there`` accepts (a process id) wrote its
    first checkpoint, the holder is frozen, its lock made to name a lost node, and ``kill`` kills it.

    With its lock naming another host, only its lease can free the run, as for a node lost on a real cluster; the
    retried task waits for it, takes the run over and resumes from the checkpoint. Then nothing is lost: every run
    trained once, to the end, one task ran again, no lock or temporary file is left, and the records equal those of
    runs nobody interrupted. Returns the lost holder, as its lock names it.
    """
    execution = Execution("cpu", tmp_path / "killed", checkpointing=Checkpointing(every=4))
    request = Request({"label-swap": SWEEP}, ("fedavg", "oracle"), (0, 1))
    jobs = plan_jobs(request, execution)
    labels = {execution.out.resolve() / job.label: job.label for job in jobs}

    def checkpointed_there() -> tuple[Path, Holder] | None:
        for folder in labels:
            holder = read_holder(folder)
            if holder is not None and checkpoint.exists(folder / "checkpoint") and there(holder.pid):
                return folder, holder
        return None

    with caplog.at_level(logging.INFO, logger="driftbench"), ThreadPoolExecutor(1) as thread:
        sweep = thread.submit(run_pool, jobs, options)
        wait_for(lambda: checkpointed_there() or sweep.done(), "checkpoint")
        found = checkpointed_there()
        assert found is not None and not sweep.done()
        victim, holder = found
        assert holder.lease_seconds == LEASE  # the sweep's lease reached the worker
        os.kill(holder.pid, signal.SIGSTOP)  # frozen: it writes nothing more
        saved = checkpoint.load(victim / "checkpoint", torch.device("cpu"))
        lost = replace(holder, host="lost-node")
        with flocked(victim):  # the lock now tells of a worker on a lost node: no process check can free it
            (victim / LOCK).write_text(lock_text(lost))
        kill(holder.pid)
        outcomes = sweep.result(timeout=600)
    assert [o.state for o in outcomes] == ["ran"] * 4, outcome_line(outcomes)  # each run trained once, to the end
    died = [r.getMessage() for r in caplog.records if "its worker died" in r.getMessage()]
    assert len(died) == 1 and died[0].startswith(f"{labels[victim]}: its worker died (")
    assert not list(execution.out.rglob(LOCK)) and not list(execution.out.rglob("*.tmp"))

    rows = pd.read_csv(victim / "rounds.csv")
    before = rows[rows["round"] < saved["next_round"]]
    kept = pd.DataFrame(saved["scheduler"]["rows"])
    assert len(before) == len(kept) > 0  # the rows up to the checkpoint are the dead worker's, wall seconds and all
    assert before["wall_seconds"].tolist() == pytest.approx(kept["wall_seconds"].tolist(), rel=1e-12, abs=0)

    run_here(plan_jobs(request, Execution("cpu", tmp_path / "whole", checkpointing=Checkpointing(every=4))))
    assert records(execution.out) == records(tmp_path / "whole") and len(records(execution.out)) == 4
    return lost


def test_a_ray_worker_killed_mid_sweep_is_retried_after_its_lease_and_resumes_from_its_checkpoint(ray_cluster, tmp_path, caplog):
    """Four runs on two Ray workers; one worker process is killed after its run's first checkpoint (``lose_a_run``)."""
    lose_a_run(tmp_path, caplog, PoolOptions("ray", 2, quiet=True), lambda pid: True, lambda pid: os.kill(pid, signal.SIGKILL))


def test_a_ray_node_killed_mid_sweep_loses_nothing(two_nodes, tmp_path, caplog, monkeypatch):
    """Four runs on a cluster of two nodes that the sweep joins (``--address``); the worker node is killed, its raylet and
    every process it started at once, after its run's first checkpoint (``lose_a_run``). The sweep's lease reaches the
    node's tasks; the run lost with it runs again on the head; the sweep disconnects, leaving the cluster running.
    """
    import ray

    node = next(iter(two_nodes.worker_nodes))
    node_raylet = raylet(node)

    def kill_node(_: int) -> None:
        for pid in [node_raylet, *children(node_raylet)]:  # the frozen holder among them
            os.kill(pid, signal.SIGKILL)
        two_nodes.remove_node(node, allow_graceful=False)

    monkeypatch.setenv(LEASE_ENV, str(LEASE))  # the sweep's, set after the nodes started: its tasks get it from the sweep
    options = PoolOptions("ray", address=two_nodes.address, quiet=True)
    lost = lose_a_run(tmp_path, caplog, options, lambda pid: parent(pid) == node_raylet, kill_node)
    assert "its worker died (NodeDiedError: " in caplog.text  # Ray's word for a task lost with its node
    assert not ray.is_initialized() and parent(raylet(two_nodes.head_node))  # disconnected; the cluster still runs
    takeover = f"taking over the stale lock of {lost}, whose lease ran out"  # the retried task's notice, in its log
    assert any(takeover in log.read_text() for log in Path(two_nodes.head_node.get_logs_dir_path()).glob("worker-*.err"))


SMALL = 'clients = 8, rounds = 40, drift_every = 10, train_samples = 10, test_samples = 5, "train.participants" = 4'
CLAIM = f'where = "Table 1"\nclaim = "a claim"\ntrace = "label-swap"\nset = {{ {SMALL}, "train.local_steps" = 2 }}\n'
PAPERS = {  # two papers whose claims share runs; one has a no-drift twin: 8 runs at two seeds
    "alpha": (
        f'paper = "Alpha"\n[[claims]]\nid = "final"\n{CLAIM}methods = ["oracle", "fedavg"]\nmetric = "final_accuracy"\n'
        'direction = "oracle > fedavg"\npaper_figure = "0.9 vs 0.6"\nkind = "exact"\nunit = "points"\npaper_value = 10\n'
        f'[[claims]]\nid = "delta"\n{CLAIM}twin = {{ fraction = 0 }}\nmethods = ["oracle", "fedavg"]\n'
        'metric = "delta_permille_stable"\ndirection = "oracle < fedavg"\npaper_figure = "1 vs 27"\nkind = "proxy"\n'
        'difference = "the twin stands in for Stable"\nunit = "permille"\npaper_value = { oracle = 1, fedavg = 27 }\n'
    ),
    "beta": (
        f'paper = "Beta"\n[[claims]]\nid = "peak"\n{CLAIM}methods = ["oracle", "fedavg"]\nmetric = "peak_accuracy"\n'
        'direction = "oracle > fedavg"\npaper_figure = "0.95 vs 0.7"\nkind = "exact"\nunit = "points"\npaper_value = 25\n'
    ),
}
WALL_CLOCK_LINES = (r"\d+ runs \(\d+ ran, \d+ up to date, \d+ failed\) in [\d.]+ min wall", r"^Run time by paper.*$")


def reproduce_command(tmp_path: Path, report: str) -> list[str]:
    """``driftbench reproduce`` of both papers at seeds 0 and 1 on two workers, writing its report to ``report``."""
    claims = tmp_path / "claims"
    for name, text in PAPERS.items():
        claims.mkdir(parents=True, exist_ok=True)
        (claims / f"{name}.toml").write_text(text)
    args = ["reproduce", *PAPERS, "--claims", str(claims), "--seeds", "0,1", "--jobs", "2", "--device", "cpu", "--quiet"]
    return ["driftbench", *args, "--out", str(tmp_path / "runs"), "--report", str(tmp_path / report)]


def report_files(folder: Path) -> list[str]:
    """reproduce.csv and reproduce.md, the run counts and wall-clock figures of reproduce.md's headline aside."""
    csv, md = ((folder / name).read_text() for name in ("reproduce.csv", "reproduce.md"))
    for pattern in WALL_CLOCK_LINES:
        md = re.sub(pattern, "(wall clock)", md, flags=re.MULTILINE)
    return [csv, md]


class Progress:
    """What a report's runs have written so far, read every few milliseconds while it runs.

    ``marks`` counts checkpoints and finished runs as they appear; a summary's ``wall_seconds``, a
    measurement of its training, is kept as first seen: a run trained twice to completion would change it.
    """

    def __init__(self, runs: Path) -> None:
        self.runs, self.marks = runs, 0
        self.seen: dict[Path, int] = {}  # checkpoint -> its modification time (ns), as last seen
        self.trained: dict[Path, float] = {}  # run folder -> its summary's wall_seconds, as first seen

    def poll(self) -> int:
        """Look again; the marks so far."""
        for path in self.runs.rglob("state.pt"):
            with suppress(OSError):
                mtime = path.stat().st_mtime_ns
                self.marks += self.seen.get(path) != mtime
                self.seen[path] = mtime
        for path in self.runs.rglob("summary.json"):
            with suppress(OSError, ValueError):
                wall = json.loads(path.read_text())["wall_seconds"]
                if path.parent not in self.trained:
                    self.trained[path.parent] = wall
                    self.marks += 1
                assert wall == self.trained[path.parent], f"{path.parent} trained twice to completion"
        return self.marks


def check_run_folders(runs: Path) -> dict[Path, list[float]]:
    """Check that every run folder is whole: a finished record (all its files readable), or config.json and perhaps a
    checkpoint; the wall seconds of the rows each checkpoint holds, which a run resumed from it keeps.
    """
    checkpointed = {}
    for config in runs.rglob("config.json"):
        folder = config.parent
        json.loads(config.read_text())
        if (folder / "summary.json").exists():
            assert read_summary(folder / "summary.json").status == "ok"
            read_rounds(folder / "rounds.csv")
            assert (folder / "events.csv").is_file() and (folder / "diagnostics.csv").is_file()
        elif checkpoint.exists(folder / "checkpoint"):
            rows = checkpoint.load(folder / "checkpoint", torch.device("cpu"))["scheduler"]["rows"]
            checkpointed[folder] = [row["wall_seconds"] for row in rows]
    return checkpointed


def interrupt(command: list[str], progress: Progress, sig: int, rng: np.random.Generator) -> tuple[int | None, str]:
    """Start the report, and once it wrote one or two more checkpoints or runs and a random moment later, send ``sig`` to its
    process group (the report, its fork server and its pool workers); its exit status and stderr once all are gone.
    """
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    proc = subprocess.Popen([sys.executable, "-m", "driftbench.cli", *command[1:]], env=env, start_new_session=True, **pipes)
    goal, delay = progress.poll() + int(rng.integers(1, 3)), float(rng.uniform(0, 0.15))
    wait_for(lambda: progress.poll() >= goal or proc.poll() is not None, "progress", every=0.02)
    end = time.monotonic() + delay

    def due() -> bool:
        progress.poll()  # the summaries are watched all along
        return time.monotonic() >= end or proc.poll() is not None

    wait_for(due, "the moment", every=0.02)
    assert proc.poll() is None, f"the report finished before the kill: {proc.communicate()}"
    os.killpg(proc.pid, sig)
    _, err = proc.communicate(timeout=300)
    wait_for(lambda: not group_alive(proc.pid), "end of the killed report's processes", 60)
    return proc.returncode, err


def group_alive(group: int) -> bool:
    """Whether a process of the process group ``group`` still exists."""
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_report_killed_at_random_moments_resumes_to_the_uninterrupted_report(tmp_path):
    """Killed five times with SIGKILL and once with SIGINT, each time a random moment after a random checkpoint or run.

    Seeded: a failure replays with the same kills (the moments, measured on the report's own progress, differ by a
    few milliseconds). Each rerun is the same command; the last one finishes the report.
    """
    command = reproduce_command(tmp_path, "killed")
    rng = np.random.default_rng(56)
    progress, checkpoints = Progress(tmp_path / "runs"), []
    for _ in range(5):
        assert interrupt(command, progress, signal.SIGKILL, rng)[0] == -signal.SIGKILL
        checkpoints.append(check_run_folders(tmp_path / "runs"))
    status, err = interrupt(command, progress, signal.SIGINT, rng)
    resume = "; finished runs are kept and the others continue from their last checkpoint; resume with: "
    assert status == 130 and err.endswith(f"error: interrupted{resume}{shlex.join(command)}\n") and "Traceback" not in err, err
    checkpoints.append(check_run_folders(tmp_path / "runs"))
    assert main(command[1:]) == 0
    progress.poll()
    assert len(progress.trained) == 8 and not list((tmp_path / "runs").rglob(LOCK))
    assert not list((tmp_path / "runs").rglob("*.tmp")) and not list((tmp_path / "runs").rglob("checkpoint"))
    resumed = [(folder, walls) for found in checkpoints for folder, walls in found.items()]
    assert resumed  # each run resumed from the checkpoint a kill left: it kept the rows before it, wall seconds and all
    for folder, walls in resumed:
        kept = pd.read_csv(folder / "rounds.csv")["wall_seconds"].tolist()[: len(walls)]
        assert kept == pytest.approx(walls, rel=1e-12, abs=0), folder

    assert main(reproduce_command(tmp_path / "whole", "report")[1:]) == 0
    assert report_files(tmp_path / "killed") == report_files(tmp_path / "whole/report")
    kept = {str(folder.relative_to(tmp_path / "runs")) for folder in progress.trained}
    assert records(tmp_path / "runs") == records(tmp_path / "whole/runs") and set(records(tmp_path / "runs")) == kept
