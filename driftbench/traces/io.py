"""Trace files: one npz holding the arrays and a JSON header, written atomically, read without pickle."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np

from driftbench.atomic import atomic_write
from driftbench.errors import TraceFileError
from driftbench.traces.model import FORMAT_VERSION, Trace

HEADER = "header"
ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # the openings np.load reads as an npz archive (anything else it may unpickle)
_ARRAY_FIELDS = [f.name for f in fields(Trace) if f.name != "info"]


def save_trace(trace: Trace, path: Path, defaults: dict[str, Any]) -> str:
    """Write ``trace`` and its run ``defaults`` (not hashed) to ``path``; return the content hash."""
    digest = trace.content_hash()
    header = {"format": FORMAT_VERSION, "info": trace.info, "hash": digest, "defaults": defaults}
    payload = np.frombuffer(json.dumps(header, sort_keys=True).encode(), dtype=np.uint8)
    # numeric arrays only: a trace file never holds a pickle (naming allow_pickle also lets mypy match **kwds)
    atomic_write(Path(path), lambda fh: np.savez_compressed(fh, allow_pickle=False, **{HEADER: payload}, **trace.arrays()))
    return digest


def load_trace(path: Path) -> tuple[Trace, dict[str, Any]]:
    """Read a trace file, check its format version and hash; return the trace and its run defaults."""
    path = Path(path)
    if not path.is_file():
        raise TraceFileError(f"{path}: no such trace file")
    data = _arrays(path)
    header = _header(path, data)
    missing = [name for name in _ARRAY_FIELDS if name not in data]
    if missing:
        raise TraceFileError(f"{path}: missing array {missing[0]!r}")
    for name in _ARRAY_FIELDS:
        if data[name].dtype.kind not in "iuf":
            raise TraceFileError(f"{path}: array {name!r} has dtype {data[name].dtype}, expected numbers")
    trace = Trace(header["info"], **{name: data[name] for name in _ARRAY_FIELDS})
    if trace.content_hash() != header["hash"]:
        raise TraceFileError(f"{path}: content hash mismatch (file corrupted or edited)")
    return trace, header.get("defaults", {})


def _arrays(path: Path) -> dict[str, np.ndarray]:
    """The arrays of the npz archive at ``path``; any other file is refused in one line, never unpickled."""
    try:
        with open(path, "rb") as fh:
            magic = fh.read(len(ZIP_MAGIC[0]))
    except OSError as exc:
        raise TraceFileError(f"{path}: cannot read: {exc.strerror}") from None
    if magic not in ZIP_MAGIC:
        raise TraceFileError(f"{path}: not a driftbench trace file (not an npz archive)")
    try:
        with np.load(path, allow_pickle=False) as npz:
            data = {name: npz[name] for name in npz.files}
    except Exception as exc:  # zipfile, zlib and numpy raise many unrelated types for a damaged file
        raise TraceFileError(f"{path}: not a readable trace file ({type(exc).__name__}: {exc})") from None
    if not all(isinstance(array, np.ndarray) for array in data.values()):
        raise TraceFileError(f"{path}: not a driftbench trace file (holds a member that is not a numpy array)")
    return data


def _header(path: Path, data: dict[str, np.ndarray]) -> dict[str, Any]:
    if HEADER not in data:
        raise TraceFileError(f"{path}: no header; not a driftbench trace file")
    try:
        header = json.loads(data[HEADER].tobytes().decode())
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise TraceFileError(f"{path}: header is not valid JSON") from None
    if not isinstance(header, dict) or not {"format", "info", "hash"} <= set(header):
        raise TraceFileError(f"{path}: header lacks format, info or hash")
    if not isinstance(header["info"], dict) or not isinstance(header.get("defaults", {}), dict):
        raise TraceFileError(f"{path}: header info and defaults must be JSON objects")
    if header["format"] != FORMAT_VERSION:
        raise TraceFileError(f"{path}: trace format {header['format']!r}; this driftbench reads format {FORMAT_VERSION}")
    return header
