"""Paper claims as data (``claims/*.toml``): parsing, validation, the metrics a claim may compare and its direction."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from driftbench.config import check_keys, check_types, read_toml, require
from driftbench.errors import ConfigError
from driftbench.methods.events import EVENT_KINDS
from driftbench.record.files import ROUNDS
from driftbench.record.metrics import crossing_seconds, first_reach
from driftbench.record.schema import Summary, read_rounds
from driftbench.record.summarize import REFERENCE
from driftbench.runner import flat_sets

CLAIMS_DIR = Path(__file__).resolve().parents[2] / "claims"
FILE_KEYS = {"paper": str, "reference": str, "claims": list}  # key -> TOML type
CLAIM_KEYS = {
    "id": str,
    "where": str,
    "claim": str,
    "trace": str,
    "set": dict,
    "methods": list,
    "metric": str,
    "target": str,
    "direction": str,
    "paper_figure": str,
    "diagnosis": dict,
}
OPTIONAL_CLAIM_KEYS = {"set", "target", "diagnosis"}
DIAGNOSIS_KEYS = {"kind": str, "evidence": str}
# what a claim that does not reproduce (or stays inconclusive) is found to be; "fixed" names the bug and its regression test
DIAGNOSIS_KINDS = ("implementation verified", "workload differs", "fixed")
EVENTS_PREFIX = "events."


def _mean_or_none(values: list[float]) -> float | None:
    return float(np.mean(values)) if values else None


@dataclass(frozen=True)
class Metric:
    """A per-run number a claim compares: how to read it from a summary, why it may be missing, and how it is shown."""

    read: Callable[[Summary, Summary | None], float | None]  # (run, the time-to-accuracy target's run) -> value
    missing: str  # why a run has no value
    fmt: str = "{:.3g}"
    shown: Callable[[float], float] = float  # the value as the report shows it


def log_speed(summary: Summary, target: Summary | None) -> float:
    """-ln(simulated hours to ``target``'s final accuracy): a pair's difference is the log of their speed-up ratio.

    The target is reached as in summaries (``metrics.first_reach``); a run that never reaches it
    counts as reaching it at its end (a bound on its time).
    """
    assert target is not None  # every tta_speedup claim has a target method (parse_claim), whose run is planned
    rows = read_rounds(Path(summary.run_dir) / ROUNDS)
    accuracy, seconds = rows["accuracy_mean"].to_numpy(), rows["sim_seconds"].to_numpy()
    first = first_reach(accuracy, target.final_accuracy)
    reached = seconds[-1] if first is None else crossing_seconds(seconds, accuracy, first, target.final_accuracy)
    return -math.log(float(reached) / 3600)


METRICS: dict[str, Metric] = {
    "final_accuracy": Metric(lambda s, _: s.final_accuracy, "no final accuracy", "{:.3f}"),
    "tta_speedup": Metric(log_speed, "no evaluation", "{:.3g} sim h", lambda v: math.exp(-v)),
    "mean_accuracy": Metric(lambda s, _: s.streaming.mean_accuracy, "no evaluation", "{:.3f}"),
    "worst_interval_accuracy": Metric(lambda s, _: s.streaming.worst_interval_accuracy, "no evaluation", "{:.3f}"),
    "post_drift_accuracy": Metric(
        lambda s, _: s.streaming.post_drift_accuracy, "no evaluation at or after a drift event", "{:.3f}"
    ),
    "mean_drop": Metric(
        lambda s, _: _mean_or_none([r.drop for r in s.recovery if r.drop is not None]),
        "no drift event with an evaluation before it",
        "{:.3f}",
    ),
    "rounds_to_recover": Metric(
        lambda s, _: _mean_or_none([r.rounds_to_recover for r in s.recovery if r.rounds_to_recover is not None]),
        "no drift event it recovered from",
    ),
    "delta_permille": Metric(
        lambda s, _: _mean_or_none([r.delta_permille for r in s.recovery if r.delta_permille is not None]),
        "no drift event with an evaluation before it",
    ),
    "ari_mean": Metric(lambda s, _: s.ari_mean, "no evaluation whose ground truth has >= 2 groups", "{:.3f}"),
    "n_clusters_final": Metric(lambda s, _: s.n_clusters_final, "no cluster count"),
    "cluster_seconds": Metric(lambda s, _: s.overhead.cluster_seconds, "no server time"),
    "scorecard.in_segment_accuracy": Metric(lambda s, _: s.scorecard.in_segment_accuracy, "no segment completed", "{:.3f}"),
    "scorecard.next_segment_accuracy": Metric(
        lambda s, _: s.scorecard.next_segment_accuracy, "no drift event: no next segment", "{:.3f}"
    ),
    "scorecard.next_segment_worst": Metric(
        lambda s, _: s.scorecard.next_segment_worst, "no drift event: no next segment", "{:.3f}"
    ),
    "scorecard.backward_transfer": Metric(lambda s, _: s.scorecard.backward_transfer, "fewer than two segments", "{:.3f}"),
    "scorecard.forgetting": Metric(lambda s, _: s.scorecard.forgetting, "fewer than two segments", "{:.3f}"),
    "scorecard.prequential_accuracy": Metric(lambda s, _: s.scorecard.prequential_accuracy, "no client trained", "{:.3f}"),
    "scorecard.detection_delay": Metric(lambda s, _: s.scorecard.detection.delay_mean, "no drift event detected"),
    "scorecard.client_detection_delay": Metric(
        lambda s, _: s.scorecard.detection.client_delay_mean, "no drifted client reached by a reaction"
    ),
    "scorecard.false_alarms": Metric(lambda s, _: s.scorecard.detection.false_alarms, "no detection record"),
    "scorecard.missed_events": Metric(lambda s, _: s.scorecard.detection.missed, "no detection record"),
}


def metric_names() -> list[str]:
    """Every metric a claim may name: the summary metrics, then ``events.<kind>`` for each event kind."""
    return [*METRICS, *(EVENTS_PREFIX + kind for kind in EVENT_KINDS)]


def metric_spec(name: str) -> Metric:
    """The named metric; ``events.<kind>`` reads the run's count of that method event."""
    if name.startswith(EVENTS_PREFIX):
        kind = name.removeprefix(EVENTS_PREFIX)
        return Metric(lambda s, _: s.events.get(kind), "no count of this event kind in its run record")
    return METRICS[name]


@dataclass(frozen=True)
class Direction:
    """What a claim says about its methods' metric: ``>``, ``<``, ``=`` (within ``margin``), ``increasing`` or ``decreasing``."""

    relation: str
    methods: tuple[str, ...]  # A and B, or the methods of an ordering in order
    margin: float = 0.0  # "by X" or "within X"

    def statistic(self, values: Mapping[str, float]) -> float:
        """The claim's statistic at one seed from each method's value: positive when the claim holds (module docstring)."""
        v = [values[m] for m in self.methods]
        if self.relation in (">", "<"):
            return (1 if self.relation == ">" else -1) * (v[0] - v[1]) - self.margin
        if self.relation == "=":
            return self.margin - abs(v[0] - v[1])
        sign = 1 if self.relation == "increasing" else -1
        return min(sign * (b - a) for a, b in zip(v, v[1:]))


ORDERINGS = ("increasing", "decreasing")
PAIR = re.compile(r"^\s*(\S+)\s*([<>])\s*(\S+)(?:\s+by\s+(\S+))?\s*$")
WITHIN = re.compile(r"^\s*(\S+)\s*=\s*(\S+)\s+within\s+(\S+)\s*$")
DIRECTIONS = '"A > B", "A < B" (optionally "by X"), "A = B within X", "increasing" or "decreasing" (over methods, in order)'


def parse_direction(text: str, methods: tuple[str, ...], where: str) -> Direction:
    """A claim's ``direction`` string over its ``methods``; anything else is a ConfigError naming ``where``."""
    if text.strip() in ORDERINGS:
        require(len(methods) >= 2, f"{where}: methods: an ordering needs at least two methods, got {list(methods)}")
        return Direction(text.strip(), methods)
    pair, within = PAIR.match(text), WITHIN.match(text)
    require(pair is not None or within is not None, f"{where}: direction {text!r}: expected {DIRECTIONS}")
    if pair is not None:
        a, relation, b, margin = pair.groups()
    else:
        assert within is not None  # require()d above
        (a, b, margin), relation = within.groups(), "="
    value = _number(margin or "0", f"{where}: direction {text!r}: margin")
    require(value >= 0 and (relation != "=" or value > 0), f"{where}: direction {text!r}: the margin must be >= 0 (> 0 for =)")
    require(a != b, f"{where}: direction {text!r}: compares {a!r} with itself")
    require(
        sorted(methods) == sorted({a, b}),
        f"{where}: methods {list(methods)}: must be exactly the direction's methods {a!r} and {b!r}",
    )
    return Direction(relation, (a, b), value)


def _number(text: str, where: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ConfigError(f"{where}: expected a number, got {text!r}") from None
    require(math.isfinite(value), f"{where}: expected a finite number, got {text!r}")
    return value


@dataclass(frozen=True)
class Diagnosis:
    """Why a claim does not reproduce: ``kind`` (``DIAGNOSIS_KINDS``) and the evidence (conformance test, run quantities)."""

    kind: str
    evidence: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.evidence}"


def parse_diagnosis(table: dict[str, Any], where: str) -> Diagnosis:
    """A claim's ``[claims.diagnosis]`` table; a bad kind or empty evidence is a ConfigError naming ``where``."""
    where = f"{where}: diagnosis"
    check_keys(table, DIAGNOSIS_KEYS, where)
    check_types(table, DIAGNOSIS_KEYS, where)
    require(table.get("kind") in DIAGNOSIS_KINDS, f"{where}: kind {table.get('kind')!r}: allowed: {', '.join(DIAGNOSIS_KINDS)}")
    require(bool(str(table.get("evidence", "")).strip()), f"{where}: evidence: expected the evidence, in one paragraph")
    return Diagnosis(table["kind"], " ".join(table["evidence"].split()))


@dataclass(frozen=True)
class Claim:
    """One claim of one paper: where it is, the setting it runs in, what it compares and the paper's figure."""

    paper: str  # the claim file's name (``driftbench reproduce PAPER``)
    title: str  # the paper as the report names it
    id: str
    where: str
    text: str
    trace: str
    sets: dict[str, str]
    metric: str
    direction: Direction
    paper_figure: str
    target: str | None = None  # tta_speedup: the method whose final accuracy is the target (default FedAvg)
    diagnosis: Diagnosis | None = None  # why it does not reproduce, where that has been found out

    @property
    def methods(self) -> tuple[str, ...]:
        """The methods the claim compares."""
        return self.direction.methods

    @property
    def runs(self) -> tuple[str, ...]:
        """The methods whose runs the claim needs: its own and the time-to-accuracy target's."""
        return tuple(dict.fromkeys([*self.methods, *([self.target] if self.target else [])]))

    @property
    def key(self) -> str:
        """``<paper>/<id>``."""
        return f"{self.paper}/{self.id}"


def claim_files(folder: Path) -> dict[str, Path]:
    """Paper names (file stems) and their claim files in ``folder``."""
    require(folder.is_dir(), f"--claims {folder}: no such folder")
    return {path.stem: path for path in sorted(folder.glob("*.toml"))}


def load_claims(folder: Path | None = None, papers: Sequence[str] = ()) -> list[Claim]:
    """The claims of the named papers (default: every claim file in ``folder``, the repository's ``claims/``)."""
    files = claim_files(folder or CLAIMS_DIR)
    require(bool(files), f"--claims {folder or CLAIMS_DIR}: no claim files (*.toml)")
    for paper in papers:
        require(paper in files, f"unknown paper {paper!r}; claim files in {folder or CLAIMS_DIR}: {', '.join(files)}")
    return [claim for paper in (dict.fromkeys(papers) or files) for claim in read_claim_file(files[paper])]


def read_claim_file(path: Path) -> list[Claim]:
    """Parse and validate one paper's claim file; a bad field is a ConfigError naming the file and the field."""
    raw = read_toml(path)
    check_keys(raw, FILE_KEYS, str(path))
    check_types(raw, FILE_KEYS, str(path))
    require(
        isinstance(raw.get("paper"), str) and bool(raw["paper"]),
        f'{path}: paper: expected the paper\'s name, e.g. paper = "FIELDING"',
    )
    tables = raw.get("claims")
    require(
        isinstance(tables, list) and bool(tables) and all(isinstance(t, dict) for t in tables),
        f"{path}: claims: expected one or more [[claims]] tables",
    )
    assert isinstance(tables, list)  # require()d above
    claims = [parse_claim(table, path, raw["paper"], i) for i, table in enumerate(tables)]
    ids = [c.id for c in claims]
    duplicate = next((i for i in ids if ids.count(i) > 1), None)
    require(duplicate is None, f"{path}: claims: id {duplicate!r} is used more than once")
    return claims


def parse_claim(table: dict[str, Any], path: Path, title: str, index: int) -> Claim:
    """One ``[[claims]]`` table."""
    where = f"{path}: claims[{index}]" + (f" ({table['id']})" if isinstance(table.get("id"), str) else "")
    check_keys(table, CLAIM_KEYS, where)
    check_types(table, CLAIM_KEYS, where)
    missing = sorted(set(CLAIM_KEYS) - OPTIONAL_CLAIM_KEYS - set(table))
    if missing:
        raise ConfigError(
            f"{where}: missing {missing[0]!r}; a claim has {', '.join(sorted(CLAIM_KEYS))} (set, target, diagnosis optional)"
        )
    methods = table["methods"]
    require(
        bool(methods) and all(isinstance(m, str) and m for m in methods) and len(set(methods)) == len(methods),
        f"{where}: methods: expected a list of distinct method names, got {methods!r}",
    )
    require(table["metric"] in metric_names(), f"{where}: metric {table['metric']!r}: allowed: {', '.join(metric_names())}")
    require(
        "target" not in table or table["metric"] == "tta_speedup",
        f"{where}: target: only a tta_speedup claim has a target method, this one's metric is {table['metric']!r}",
    )
    target = table.get("target", REFERENCE) if table["metric"] == "tta_speedup" else None
    return Claim(
        path.stem,
        title,
        table["id"],
        table["where"],
        table["claim"],
        table["trace"],
        flat_sets(table.get("set", {})),
        table["metric"],
        parse_direction(table["direction"], tuple(methods), where),
        table["paper_figure"],
        target,
        parse_diagnosis(table["diagnosis"], where) if "diagnosis" in table else None,
    )
