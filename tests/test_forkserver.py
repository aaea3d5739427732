"""A pool worker ends itself once the process that opened the pool is gone: a killed sweep leaves no run computing."""

import os
import subprocess
import sys

import pytest

from driftbench.forkserver import worker_state


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
