"""Data folders of real sources: where they are, required files and CSV columns, and a hashed npz cache."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from driftbench.atomic import atomic_write
from driftbench.errors import DataSourceError

log = logging.getLogger(__name__)


def data_root(root: str, source: str) -> Path:
    """The data folder of ``source``: ``root``, or ``~/.cache/driftbench/<source>`` when it is empty."""
    return Path(root).expanduser() if root else Path.home() / ".cache" / "driftbench" / source


def require_file(path: Path, source: str, hint: str) -> Path:
    """``path`` if it is a file; otherwise a DataSourceError naming it and what belongs there."""
    if not path.is_file():
        raise DataSourceError(f"{source}: missing file {path}; {hint}")
    return path


def read_table(path: Path, columns: Iterable[str], source: str, hint: str) -> pd.DataFrame:
    """Read CSV ``path`` and check that it has ``columns``; errors name the file and the first missing column."""
    require_file(path, source, hint)
    try:
        table = pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise DataSourceError(f"{source}: {path} is not a readable CSV: {str(exc).splitlines()[0]}") from None
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise DataSourceError(
            f"{source}: {path} lacks column {missing[0]!r}; found: {', '.join(map(str, table.columns)) or '(none)'}"
        )
    return table


def digest_files(paths: Iterable[Path], *extra: object) -> str:
    """SHA-256 over the bytes of ``paths`` and the ``extra`` values (a cache key)."""
    digest = hashlib.sha256(repr(extra).encode())
    for path in paths:
        digest.update(path.read_bytes())
    return digest.hexdigest()


def cached_array(path: Path, key: str, build: Callable[[], np.ndarray]) -> np.ndarray:
    """The array stored in npz ``path`` under ``key``, or ``build()`` written there (atomically) when absent or stale.

    A folder that cannot be written to only costs the cache: the array is still returned.
    """
    if path.is_file():
        try:
            with np.load(path, allow_pickle=False) as cached:
                if str(cached["key"]) == key:
                    stored: np.ndarray = cached["x"]
                    return stored
        except (OSError, ValueError, KeyError):
            log.warning("ignoring unreadable cache %s", path)
    array = build()
    try:
        atomic_write(path, lambda fh: np.savez(fh, x=array, key=np.array(key)))
    except OSError as exc:
        log.warning("cannot write cache %s: %s", path, exc.strerror)
    return array
