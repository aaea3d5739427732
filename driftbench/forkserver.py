"""The local run pool's processes: forked from a server that has imported driftbench once, which can start early.

Importing torch, scikit-learn and the methods takes seconds of CPU; spawned workers would each
pay it. The fork server pays it once, in parallel with the main process's own imports when
``start_early`` runs first, and every worker is a fork of it. Workers take the main process's
plug-in paths at pool start (``worker_state``), not the server's; multiprocessing gives them its
working directory. A worker ends itself once the process that opened its pool is gone, so a
killed sweep leaves no run computing (and holding its run lock) behind.

Ctrl-C reaches every process of the terminal's process group, pool workers too. The server starts
with SIGINT ignored, so a worker is born ignoring it and ignores it between jobs (where it would
end the worker with a traceback); during a job (``interruptible``) it raises ``KeyboardInterrupt``,
and during a run's rounds the scheduler checkpoints instead.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from multiprocessing.context import BaseContext
from multiprocessing.forkserver import ensure_running
from typing import Any, TypeVar

from driftbench.locks import pid_running
from driftbench.registry import ENV

PRELOAD = ["driftbench.runner"]


def pool_context() -> BaseContext:
    """The fork server context, preloading ``PRELOAD``; spawn where the platform has no fork server (Windows)."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    return context


def preload(modules: list[str]) -> None:
    """Have the fork server import ``modules`` too, so its workers do not (a server already running keeps its own)."""
    PRELOAD.extend(m for m in modules if m not in PRELOAD)


def start_early() -> None:
    """Start the fork server now (SIGINT ignored), so that its imports overlap the caller's work before the pool opens."""
    if pool_context().get_start_method() == "forkserver":
        with sigint_ignored():
            ensure_running()


@contextmanager
def sigint_ignored() -> Iterator[None]:
    """SIGINT ignored for the block, so that a process started meanwhile starts ignoring it (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


T = TypeVar("T")


def interruptible(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in a pool worker, with SIGINT raising ``KeyboardInterrupt`` meanwhile (ignored again after)."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return fn(*args)
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def worker_state() -> tuple[str | None, int]:
    """What a worker takes from this process: ``DRIFTBENCH_PLUGINS``, and this process's id (the pool's owner)."""
    return (os.environ.get(ENV), os.getpid())


def enter_worker_state(plugins: str | None, owner: int) -> None:
    """Pool initializer: this worker's plug-in paths become those of ``worker_state``; it exits when ``owner`` is gone."""
    if plugins is None:
        os.environ.pop(ENV, None)
    else:
        os.environ[ENV] = plugins
    threading.Thread(target=exit_with, args=(owner,), daemon=True, name="driftbench-owner").start()


def exit_with(owner: int, every: float = 1.0) -> None:
    """Poll every ``every`` seconds whether process ``owner`` exists; once it does not, end this process (status 1)."""
    while pid_running(owner):
        time.sleep(every)
    os._exit(1)
