"""Atomic file writes: a temporary file beside the target, fsync, rename; a reader never sees half a file."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def atomic_write(path: Path, write: Any) -> None:
    """Call ``write(fh)`` on a temporary file beside ``path``, fsync it, then rename over ``path``.

    The temporary name carries the process id, so concurrent writers never share one, and it
    is removed when writing fails.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
