"""Run locks: one process at a time writes a run folder, which holds ``run.lock`` (its holder and lease) meanwhile.

The lock file is created whole or not at all: its content goes to a temporary file that is then
hard-linked to ``run.lock``, which fails when the name exists, so of two processes that find no
lock at the same time exactly one gets it. The lock carries a lease: its holder renews it (the
``renewed`` time, UTC) every ``lease / RENEWALS`` seconds from a thread while the run goes on, so a
lock not renewed for its lease is stale on any host; so is a lock of this host whose process no
longer runs. The next process removes a stale lock, with a one-line notice, and claims the run.
The removal happens under an exclusive ``flock`` of the run folder after reading the lock again,
and a renewal rewrites the lock under the same flock only while it is still its holder's, so a
takeover never removes a lock renewed meanwhile and a holder never overwrites its successor's.
A lock without a lease (written before leases) of another host cannot be checked from here: it is
respected until ``driftbench unlock`` clears it.
"""

from __future__ import annotations

import fcntl
import json
import logging
import math
import os
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from time import sleep

from driftbench.atomic import atomic_write, write_error
from driftbench.errors import ConfigError, DriftbenchError, RunLocked

LOCK = "run.lock"
POLL_SECONDS = 1.0
LEASE_ENV = "DRIFTBENCH_LOCK_LEASE"  # seconds; docs/reliability.md says why the default is what it is
LEASE_SECONDS = 120.0
RENEWALS = 12  # renewals per lease: a holder loses its lock only when twelve in a row do not happen
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Holder:
    """Who holds a run lock: host, process id, start time, and its lease: last renewal (UTC, ISO 8601) and length."""

    host: str
    pid: int
    started: str
    renewed: str | None = None  # None (with lease_seconds): a lock written before leases, never renewed
    lease_seconds: float | None = None

    def __str__(self) -> str:
        return f"pid {self.pid} on {self.host} since {self.started}"

    def same_process(self, other: Holder | None) -> bool:
        """Whether ``other`` is this holder's lock, renewed or not."""
        return other is not None and (self.host, self.pid, self.started) == (other.host, other.pid, other.started)

    @property
    def expires(self) -> datetime | None:
        """When the lease runs out unless renewed; None for a lock without a lease."""
        if self.renewed is None or self.lease_seconds is None:
            return None
        return datetime.fromisoformat(self.renewed) + timedelta(seconds=self.lease_seconds)

    @property
    def stale(self) -> str | None:
        """Why the holder is known to be gone (its lease ran out; it is this host's and no longer runs); None if it may run."""
        expires = self.expires
        if expires is not None and datetime.now(UTC) > expires:
            return f"whose lease ran out at {expires.isoformat(timespec='seconds')}"
        if self.host == socket.gethostname() and not pid_running(self.pid):
            return "which no longer runs"
        return None


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


def lease_seconds() -> float:
    """The lease of the locks this process takes: ``DRIFTBENCH_LOCK_LEASE`` seconds, default ``LEASE_SECONDS``."""
    text = os.environ.get(LEASE_ENV, "")
    try:
        seconds = float(text) if text else LEASE_SECONDS
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise ConfigError(f"{LEASE_ENV}={text!r}: expected the run locks' lease in seconds, a number > 0")
    return seconds


def now() -> str:
    """This moment, UTC, ISO 8601 to the microsecond: a lease's renewal time."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


def this_process(lease: float) -> Holder:
    """This process as a lock holder, started and renewed now, with a lease of ``lease`` seconds."""
    renewed = now()
    started = datetime.fromisoformat(renewed).isoformat(timespec="seconds")
    return Holder(socket.gethostname(), os.getpid(), started, renewed, lease)


def read_holder(folder: Path) -> Holder | None:
    """The holder of ``folder``'s lock; None when there is none."""
    return read_lock_file(folder / LOCK)


def read_lock_file(path: Path) -> Holder | None:
    """The holder a lock file names; None when there is none. A damaged lock reads as an unknown host's, without a lease."""
    try:
        data = json.loads(path.read_text())
        holder = Holder(str(data["host"]), int(data["pid"]), str(data["started"]))
        if data.get("renewed") is not None or data.get("lease_seconds") is not None:
            lease = float(data["lease_seconds"])
            holder = replace(holder, renewed=str(data["renewed"]), lease_seconds=lease)
            if not lease > 0 or datetime.fromisoformat(str(holder.renewed)).tzinfo is None or holder.expires is None:
                raise ValueError("a lease is a positive number of seconds from a renewal time with its time zone")
        return holder
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError, OverflowError):
        return Holder("(unreadable lock)", 0, "?")


def lock_text(holder: Holder) -> str:
    """A lock file's content: its holder as one line of JSON."""
    return json.dumps(asdict(holder)) + "\n"


def locked_error(folder: Path, holder: Holder) -> RunLocked:
    """The one-line error for a run that another process holds."""
    unlock = f"driftbench unlock {folder}"
    if holder.expires is None:
        gone = f"if that process is gone, clear the lock with: {unlock}"
    else:
        gone = (
            f"if that process is gone, the run is taken over once its lease runs out at "
            f"{holder.expires.isoformat(timespec='seconds')}, or clear the lock now with: {unlock}"
        )
    return RunLocked(f"{folder}: running elsewhere, locked by {holder}; wait for it to finish, or, {gone}")


def claim(folder: Path, lease: float | None = None) -> Holder:
    """Create ``folder``'s lock for this process, taking over a stale one; raise ``RunLocked`` when another holds it.

    ``lease``: seconds, default ``lease_seconds()``.
    """
    me = this_process(lease_seconds() if lease is None else lease)
    tmp = folder / f".{LOCK}.{me.pid}.tmp"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp.write_text(lock_text(me))
        while True:
            try:
                os.link(tmp, folder / LOCK)
                return me
            except FileExistsError:
                holder = read_holder(folder)
                if holder is None:
                    continue  # released meanwhile
                why = holder.stale
                if why is None:
                    raise locked_error(folder, holder) from None
                if remove_if_held_by(folder, holder):
                    log.warning("%s: taking over the stale lock of %s, %s", folder, holder, why)
    except OSError as exc:
        raise write_error(exc, folder / LOCK, "creating the run lock") from None
    finally:
        with suppress(OSError):
            tmp.unlink(missing_ok=True)


@contextmanager
def flocked(folder: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` of ``folder`` for the block."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the flock


def remove_if(folder: Path, holds: Callable[[Holder | None], bool]) -> bool:
    """Remove ``folder``'s lock if ``holds`` accepts its holder, under the folder's flock; whether it was removed."""
    with flocked(folder):
        if not holds(read_holder(folder)):
            return False
        (folder / LOCK).unlink()
        return True


def remove_if_held_by(folder: Path, holder: Holder) -> bool:
    """Remove ``folder``'s lock if it is exactly ``holder``'s (not renewed since), under the folder's flock."""
    return remove_if(folder, lambda found: found == holder)  # holder.__eq__(None) is NotImplemented, which is truthy


def renew(folder: Path, me: Holder) -> bool:
    """Rewrite ``folder``'s lock with this moment as ``me``'s renewal, if ``me`` still holds it; whether it did."""
    with flocked(folder):
        if not me.same_process(read_holder(folder)):
            return False
        atomic_write(folder / LOCK, lambda fh: fh.write(lock_text(replace(me, renewed=now())).encode()))
        return True


class Lease:
    """A claimed run lock, renewed from a thread every ``lease / RENEWALS`` seconds until ``release``.

    Renewing from a thread, not between rounds, keeps the lock through a long round or clustering
    step. Should another process take the lock over all the same (this one was stopped or cut off
    for a whole lease), ``lost`` says whose it is: the run stops at its next round (``run``'s ``lost``).
    """

    def __init__(self, folder: Path, holder: Holder) -> None:
        self.folder, self.holder = folder, holder
        self.lost: str | None = None
        self._released = threading.Event()
        self._thread = threading.Thread(target=self._renew, name=f"driftbench-lease-{folder.name}", daemon=True)
        self._thread.start()

    def _renew(self) -> None:
        assert self.holder.lease_seconds is not None  # this process's holders have a lease (this_process)
        period, failing = self.holder.lease_seconds / RENEWALS, False
        while not self._released.wait(period):
            try:
                if renew(self.folder, self.holder):
                    failing = False
                    continue
            except (OSError, DriftbenchError) as exc:
                if not failing:
                    log.warning("%s: cannot renew the run lock (%s); trying again every %.3g s", self.folder, exc, period)
                failing = True
                continue
            found = read_holder(self.folder)
            self.lost = f"it is now locked by {found}" if found else "its lock was removed"
            log.warning("%s: lost the run lock: %s; the run stops after its current round", self.folder, self.lost)
            return

    def release(self) -> None:
        """Stop renewing and remove the lock if this process still holds it (and the folder, if the run wrote nothing)."""
        self._released.set()
        self._thread.join()
        with suppress(OSError):  # a folder that refuses changes keeps the lock, stale once its lease runs out
            remove_if(self.folder, self.holder.same_process)
            self.folder.rmdir()  # only when the run wrote nothing (it failed before starting its record)


def remove_leftovers(folder: Path) -> None:
    """Delete the temporary files that killed writers left in a run folder (and its checkpoint folder) this process holds.

    Record files are written only by the lock's holder, so any temporary copy of one is a dead
    writer's; a lock's temporary file is another claimant's, removed only when its holder is stale.
    """
    for tmp in [*folder.glob(".*.tmp"), *folder.glob("*/.*.tmp")]:
        if tmp.name.startswith(f".{LOCK}."):
            holder = read_lock_file(tmp)
            if holder is None or not holder.stale:
                continue
        with suppress(OSError):
            tmp.unlink()


@contextmanager
def run_lock(folder: Path, wait: bool = False) -> Iterator[Lease]:
    """Hold ``folder``'s lock for the block, renewed; with ``wait``, wait for another holder to finish instead of raising."""
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
    lease = Lease(folder, me)
    try:
        remove_leftovers(folder)
        yield lease
    finally:
        lease.release()


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
