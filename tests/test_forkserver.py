"""Pool workers: each ends itself once the process that opened the pool is gone, and takes Ctrl-C only within a job."""

import os
import signal
import subprocess
import sys

import pytest

from driftbench.forkserver import interruptible, worker_state
from driftbench.runner import LocalBackend, PoolOptions


def test_worker_state_names_this_process_as_the_pools_owner():
    assert worker_state()[1] == os.getpid()


def test_a_worker_exits_once_its_owner_is_killed_and_not_before():
    owner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    watch = f"from driftbench.forkserver import exit_with; exit_with({owner.pid}, every=0.05)"
    worker = subprocess.Popen([sys.executable, "-c", watch])
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            worker.wait(timeout=1.0)  # the owner lives: the worker keeps going
        owner.kill()
        owner.wait()
        assert worker.wait(timeout=10) == 1
    finally:
        owner.kill()
        worker.kill()


def test_a_worker_ignores_ctrl_c_between_jobs_and_takes_it_within_one():
    """Between jobs Ctrl-C would end a worker with a traceback; within one it stops the job (or checkpoints its run)."""
    backend = LocalBackend(PoolOptions(jobs=1, quiet=True))
    try:
        idle, busy, after = (
            backend.pool.submit(*call, signal.SIGINT).result(timeout=120)
            for call in [(signal.getsignal,), (interruptible, signal.getsignal), (signal.getsignal,)]
        )
    finally:
        backend.close()
    assert idle == after == signal.SIG_IGN and busy is signal.default_int_handler
