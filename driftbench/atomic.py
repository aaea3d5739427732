"""Atomic file writes: a temporary file beside the target, fsync, rename; a reader never sees half a file.

A failed write raises ``WriteError``, one line naming the file, the step that failed and, when the
disk is full, the space the new copy needs: the previous file stays whole until the rename, so an
atomic write needs room for a second copy.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

from driftbench.errors import WriteError

NO_SPACE = (errno.ENOSPC, errno.EDQUOT)


def atomic_write(path: Path, write: Any) -> None:
    """Call ``write(fh)`` on a temporary file beside ``path``, fsync it, then rename over ``path``.

    The temporary name carries the process id, so concurrent writers never share one, and it
    is removed when writing fails. An ``OSError`` becomes ``WriteError`` (``write_error``).
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    step, sized = "creating its folder", None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        step = "writing a temporary copy beside it"
        with open(tmp, "wb") as fh:
            sized = SizedFile(fh)
            write(sized)
            fh.flush()
            step = "syncing the temporary copy"
            os.fsync(fh.fileno())
        step = "renaming the temporary copy over it"
        os.replace(tmp, path)
    except OSError as exc:
        raise write_error(exc, path, step, sized.size if sized else 0) from None
    finally:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass  # the folder refuses changes: the write failed before creating the file


class SizedFile:
    """A binary file that notes how far any write reached (``size``): what a failed write needed on disk."""

    def __init__(self, fh: Any) -> None:
        self.fh, self.size = fh, 0

    def write(self, data: Any) -> int:
        """Write ``data`` at the current position."""
        self.size = max(self.size, self.fh.tell() + memoryview(data).nbytes)
        written: int = self.fh.write(data)
        return written

    def __getattr__(self, name: str) -> Any:
        return getattr(self.fh, name)


def write_error(exc: OSError, path: Path, step: str, size: int = 0) -> WriteError:
    """``exc`` as one line: the file, the step, the reason and, for a full disk, the space the new copy needs."""
    reason = exc.strerror or str(exc)
    code = errno.errorcode.get(exc.errno or 0)
    line = f"cannot write {path} ({step}): {reason}{f' [{code}]' if code else ''}"
    if exc.errno in NO_SPACE and size:
        line += f"; it needs at least {human_size(size)} free: the previous copy stays whole until the new one is complete"
    return WriteError(line)


def human_size(size: int) -> str:
    """``size`` bytes as B, KiB, MiB or GiB (one decimal above bytes)."""
    if size < 1024:
        return f"{size} B"
    scaled = float(size)
    for unit in ("KiB", "MiB", "GiB"):
        scaled /= 1024
        if scaled < 1024 or unit == "GiB":
            break
    return f"{scaled:.1f} {unit}"
