"""The run record (config.json, rounds.csv, events.csv, diagnostics.csv, summary.json): paths, columns, states and atomic writers.

A run folder is in one of three states: no config.json (absent), config.json without
summary.json (incomplete: crashed, interrupted or still running; ``checkpoint/`` may hold
its last checkpoint), or summary.json present (complete; its ``status`` is "ok" or
"diverged"). Every file is written whole (temporary file, fsync, rename) and summary.json
last, so a reader never sees a half-written file or a complete run without its rounds.csv.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

from driftbench.atomic import atomic_write
from driftbench.errors import RecordError

# Fields measured on the wall clock; the only ones that differ between identical runs.
WALL_CLOCK_FIELDS = ("wall_seconds", "server_wall_seconds")
CONFIG, ROUNDS, EVENTS, SUMMARY, CHECKPOINT = "config.json", "rounds.csv", "events.csv", "summary.json", "checkpoint"
DIAGNOSTICS = "diagnostics.csv"
# config.json fields that describe the environment, not the experiment; --resume may change them.
VOLATILE_CONFIG = ("device", "git_revision", "driftbench_version", "torch_version", "provenance")


def run_label(trace: str, method: str, seed: int) -> str:
    """``<trace>/<method>/seed<k>``, a run's folder below the root; a trace file's name is its stem."""
    return f"{Path(trace).stem}/{method}/seed{seed}"


def run_dir(root: Path, trace: str, method: str, seed: int) -> Path:
    """``<root>/<trace>/<method>/seed<k>``."""
    return Path(root) / run_label(trace, method, seed)


def _json_ready(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_ready(v) for v in value]
    return value


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` as indented JSON atomically (non-finite floats become null)."""
    text = json.dumps(_json_ready(data), indent=2, sort_keys=False) + "\n"
    atomic_write(path, lambda fh: fh.write(text.encode()))


def read_json(path: Path) -> dict[str, Any]:
    """Read a JSON file of the run record; an unreadable one raises ``RecordError`` naming it."""
    try:
        with open(path) as fh:
            record: dict[str, Any] = json.load(fh)
            return record
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RecordError(f"{path}: unreadable run record ({exc})") from None


def clear_results(run: Path) -> None:
    """Remove a previous run's summary.json and tables, so a restarted run reads as incomplete."""
    for name in (SUMMARY, ROUNDS, EVENTS, DIAGNOSTICS):
        (Path(run) / name).unlink(missing_ok=True)


def as_json(data: Any) -> Any:
    """``data`` as it reads back from JSON (tuples become lists, non-finite floats null)."""
    return json.loads(json.dumps(_json_ready(data)))


def config_difference(stored: dict[str, Any], current: dict[str, Any]) -> tuple[str, Any, Any] | None:
    """The first dotted key (volatile fields aside) where two config.json contents differ, with both values."""
    return _first_difference(experiment_config(stored), experiment_config(current), "")


def experiment_config(config: dict[str, Any]) -> dict[str, Any]:
    """A config.json content without its volatile fields (device, versions, git revision): what the results depend on."""
    return {k: v for k, v in as_json(config).items() if k not in VOLATILE_CONFIG}


def config_digest(config: dict[str, Any]) -> str:
    """The resolved config hash: SHA-256 of a run's config.json content without its volatile fields."""
    return hashlib.sha256(json.dumps(experiment_config(config), sort_keys=True).encode()).hexdigest()


def _first_difference(a: Any, b: Any, prefix: str) -> tuple[str, Any, Any] | None:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in [*a, *(k for k in b if k not in a)]:
            if key not in a or key not in b:
                return f"{prefix}{key}", a.get(key, "(absent)"), b.get(key, "(absent)")
            found = _first_difference(a[key], b[key], f"{prefix}{key}.")
            if found:
                return found
        return None
    return None if a == b else (prefix.rstrip("."), a, b)
