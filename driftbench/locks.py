"""Run locks: one process at a time writes a run folder, which holds ``run.lock`` (host, pid, start time) meanwhile.

The lock file is created whole or not at all: its content goes to a temporary file that is then
hard-linked to ``run.lock``, which fails when the name exists, so of two processes that find no
lock at the same time exactly one gets it. A lock whose process is gone (same host, pid not
running) is stale: the next process removes it, with a one-line notice, and claims the run. The
removal happens under an exclusive ``flock`` of the run folder after reading the lock again, so
two processes that find the same stale lock never remove each other's fresh one. A lock from
another host cannot be checked from here: it is respected until ``driftbench unlock`` clears it.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from time import sleep

from driftbench.atomic import write_error
from driftbench.errors import ConfigError, RunLocked

LOCK = "run.lock"
POLL_SECONDS = 1.0
log = logging.getLogger("driftbench")


@dataclass(frozen=True)
class Holder:
    """Who holds a run lock: host name, process id and when it started (UTC, ISO 8601)."""

    host: str
    pid: int
    started: str

    def __str__(self) -> str:
        return f"pid {self.pid} on {self.host} since {self.started}"

    @property
    def stale(self) -> bool:
        """Whether the holder is known to be gone: a process of this host that no longer runs."""
        return self.host == socket.gethostname() and not pid_running(self.pid)


def pid_running(pid: int) -> bool:
    """Whether a process with this id runs on this host (one of another user counts)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def this_process() -> Holder:
    """This process as a lock holder, started now."""
    started = datetime.now(UTC).isoformat(timespec="seconds")
    return Holder(socket.gethostname(), os.getpid(), started)


def read_holder(folder: Path) -> Holder | None:
    """The holder of ``folder``'s lock; None when there is none. A damaged lock reads as an unknown host's."""
    try:
        data = json.loads((folder / LOCK).read_text())
        return Holder(str(data["host"]), int(data["pid"]), str(data["started"]))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        return Holder("(unreadable lock)", 0, "?")


def locked_error(folder: Path, holder: Holder) -> RunLocked:
    """The one-line error for a run that another process holds."""
    return RunLocked(
        f"{folder}: running elsewhere, locked by {holder}; wait for it to finish, or, if that process is gone, "
        f"clear the lock with: driftbench unlock {folder}"
    )


def claim(folder: Path) -> Holder:
    """Create ``folder``'s lock for this process, taking over a stale one; raise ``RunLocked`` when another holds it."""
    me = this_process()
    tmp = folder / f".{LOCK}.{me.pid}.tmp"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(asdict(me)) + "\n")
        while True:
            try:
                os.link(tmp, folder / LOCK)
                return me
            except FileExistsError:
                holder = read_holder(folder)
                if holder is None:
                    continue  # released meanwhile
                if not holder.stale:
                    raise locked_error(folder, holder) from None
                if remove_if_held_by(folder, holder):
                    log.warning("%s: taking over the stale lock of %s, which no longer runs", folder, holder)
    except OSError as exc:
        raise write_error(exc, folder / LOCK, "creating the run lock") from None
    finally:
        with suppress(OSError):
            tmp.unlink(missing_ok=True)


def remove_if_held_by(folder: Path, holder: Holder) -> bool:
    """Remove ``folder``'s lock if ``holder`` still holds it, under the folder's flock; whether it was removed."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        if read_holder(folder) != holder:
            return False
        (folder / LOCK).unlink()
        return True
    finally:
        os.close(fd)  # closing releases the flock


@contextmanager
def run_lock(folder: Path, wait: bool = False) -> Iterator[Holder]:
    """Hold ``folder``'s lock for the block; with ``wait``, wait for another holder to finish instead of raising."""
    noted = False
    while True:
        try:
            me = claim(folder)
            break
        except RunLocked as exc:
            if not wait:
                raise
            if not noted:
                log.info("%s; waiting for it", exc)
                noted = True
            sleep(POLL_SECONDS)
    try:
        yield me
    finally:
        with suppress(OSError):  # a folder that refuses changes keeps the lock, stale once this process ends
            remove_if_held_by(folder, me)
            folder.rmdir()  # only when the run wrote nothing (it failed before starting its record)


def unlock(paths: list[Path]) -> list[str]:
    """Remove the run locks in or below ``paths`` whatever holds them; one line per removed lock.

    A lock whose process still runs on this host is refused (``ConfigError``): it would run twice.
    """
    locks = [lock for path in paths for lock in ([path / LOCK] if (path / LOCK).exists() else sorted(path.rglob(LOCK)))]
    if not locks:
        raise ConfigError(f"unlock: no {LOCK} in or below {', '.join(str(p) for p in paths)}")
    lines = []
    for lock in locks:
        holder = read_holder(lock.parent)
        if holder is None:
            continue
        if holder.host == socket.gethostname() and pid_running(holder.pid):
            raise ConfigError(f"unlock: {lock.parent} is locked by {holder}, which is running; stop it first")
        try:
            removed = remove_if_held_by(lock.parent, holder)
        except OSError as exc:
            raise write_error(exc, lock, "removing the run lock") from None
        if removed:
            lines.append(f"unlocked {lock.parent} (was locked by {holder})")
    return lines
