"""What a tracker logs of a run record: the run's identity, and its numbers as scalars (tag, step, value).

- ``rounds/<column>``: every rounds.csv column but ``round``, at step ``round`` (an empty ARI is not logged);
- ``drift/<kind>``: the trace's drift events (config.json), the number of that kind at the event's round;
- ``events/<kind>``: the method's events (events.csv), the number of that kind at their round;
- ``summary/<field>``: every number of summary.json outside its lists (``time_to_accuracy.rounds``,
  ``overhead.upload_bytes``, ...), at the run's last round (``last_round``); its strings are tags.

The live path (the recorder's rows, events and summary) and the export (the same, read from the files)
both make their values here, so both log the same numbers.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from driftbench.config import flatten
from driftbench.record.files import config_digest, run_label
from driftbench.record.schema import ROUND_COLUMNS

# summary.json fields that identify the run (its parameters and name), not results
SUMMARY_IDENTITY = ("schema_version", "trace", "trace_hash", "method", "oracle", "seed", "rounds", "run_dir")
KEY_TAG, RECORD_TAG = "driftbench.key", "driftbench.record"


@dataclass(frozen=True)
class Scalar:
    """One logged number: its tag, the round it belongs to, its value."""

    tag: str
    step: int
    value: float


@dataclass(frozen=True)
class Identity:
    """A run as a tracker names it: ``trace/method/seed<k>``, its key, its folder below the runs root, parameters, tags.

    The key is the record's config hash (``config_digest``): a tracker holds one log per key, which a
    fresh run of the same configuration replaces and an export finds again.
    """

    name: str
    key: str
    path: str
    params: dict[str, str]
    tags: dict[str, str]


def identity(config: Mapping[str, Any], folder: Path, root: str = "", tags: Iterable[tuple[str, str]] = ()) -> Identity:
    """The identity of the run whose config.json is ``config``, in ``folder`` below the runs ``root``."""
    trace, method = config["trace"], config["method"]
    name = run_label(trace["name"], method["name"], int(config["seed"]))
    folder = Path(folder).resolve()
    inside = bool(root) and folder.is_relative_to(Path(root).resolve())
    params = {
        "trace": trace["name"],
        "trace_hash": trace["hash"],
        "method": method["name"],
        "seed": config["seed"],
        "data_seed": config.get("data_seed"),
        "rounds": config["rounds"],
        "commit": config.get("git_revision"),
        **flatten(trace.get("params", {}), "trace."),
        **flatten(method.get("params", {}), "method."),
        **flatten(config.get("train", {}), "train."),
    }
    return Identity(
        name=name,
        key=config_digest(dict(config)),
        path=folder.relative_to(Path(root).resolve()).as_posix() if inside else name,
        params={k: v if isinstance(v, str) else json.dumps(v) for k, v in params.items()},
        tags={KEY_TAG: config_digest(dict(config)), RECORD_TAG: str(folder), **dict(tags)},
    )


def round_scalars(rows: Iterable[Mapping[str, Any]]) -> list[Scalar]:
    """``rounds/<column>`` of each rounds.csv row at its round (NaN, an empty ARI, is not logged)."""
    return [
        Scalar(f"rounds/{column}", int(row["round"]), float(row[column]))
        for row in rows
        for column in ROUND_COLUMNS
        if column != "round" and not math.isnan(float(row[column]))
    ]


def drift_scalars(config: Mapping[str, Any]) -> list[Scalar]:
    """``drift/<kind>``: how many of the trace's drift events of each kind fall at each round (config.json)."""
    trace = config["trace"]
    counts = Counter(zip(trace["event_rounds"], trace["event_kinds"]))
    return [Scalar(f"drift/{kind}", int(rnd), float(n)) for (rnd, kind), n in sorted(counts.items())]


def event_scalars(events: Iterable[Mapping[str, Any]]) -> list[Scalar]:
    """``events/<kind>``: how many method events of each kind the method recorded at each round (events.csv)."""
    counts = Counter((int(e["round"]), str(e["kind"])) for e in events)
    return [Scalar(f"events/{kind}", rnd, float(n)) for (rnd, kind), n in sorted(counts.items())]


def summary_scalars(summary: Mapping[str, Any], step: int) -> list[Scalar]:
    """``summary/<field>``: every number of summary.json outside its lists and identity, at ``step``."""
    return [
        Scalar(f"summary/{key}", step, float(value))
        for key, value in flatten(summary, "").items()
        if key not in SUMMARY_IDENTITY and isinstance(value, (int, float)) and not isinstance(value, bool)
    ]


def summary_tags(summary: Mapping[str, Any]) -> dict[str, str]:
    """Every string of summary.json outside its lists and identity (``status``, ``time_to_accuracy.outcome``, ...)."""
    return {k: v for k, v in flatten(summary, "").items() if k not in SUMMARY_IDENTITY and isinstance(v, str)}


def last_round(summary: Mapping[str, Any]) -> int:
    """The last round a run trained: where it diverged, else its last."""
    diverged = summary.get("diverged_round")
    return int(diverged) if diverged is not None else int(summary["rounds"]) - 1
