"""Paper claims as data (``claims/*.toml``): parsing, validation, the metrics a claim may compare and its direction."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from driftbench.config import check_keys, check_types, flat_sets, read_toml, require
from driftbench.errors import ConfigError
from driftbench.methods.events import EVENT_KINDS
from driftbench.paths import catalog_dir
from driftbench.record.files import ROUNDS
from driftbench.record.metrics import crossing_seconds, first_reach
from driftbench.record.schema import Summary, read_rounds
from driftbench.record.summarize import REFERENCE
from driftbench.reproduce.verdict import BOUNDS

CLAIMS_DIR = catalog_dir("claims")
FILE_KEYS = {"paper": str, "reference": str, "diagnoses": dict, "claims": list}  # key -> TOML type
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
    "kind": str,
    "difference": str,
    "unit": str,
    "effect": str,
    "premises": list,
    "method_set": dict,
    "twin": dict,
    "protocol": str,
    "workload": str,
    "differs": str,
    "diagnosis": object,  # a table, or the name of one of the file's [diagnoses]
    "literal_diagnosis": object,  # the same, for the claim's literal twin
    "bound": str,
    "calibrated_to": dict,
}  # paper_value (a number or a table) is checked on its own
VALUE_KEY = "paper_value"
OPTIONAL_CLAIM_KEYS = {"set", "target", "diagnosis", "difference", "effect", "premises", "method_set", "twin", "protocol"}
OPTIONAL_CLAIM_KEYS |= {"workload", "bound", "differs", "calibrated_to", "literal_diagnosis"}
# exact: the paper's metric and figure; bound: the paper's metric, its figure a bound the paper implies but does
# not print (``bound`` says which side); proxy: another metric standing in for it (``difference`` says how);
# driftbench: a figure the paper does not report, judged apart from the paper's claims
KINDS = ("exact", "bound", "proxy", "driftbench")
# unit -> ours' scale
UNITS = {"points": 100.0, "permille": 1.0, "x": 1.0, "seconds": 1.0, "count": 1.0, "ari": 1.0, "distance": 1.0}
EFFECTS = ("difference", "ratio")  # how the paper's effect and ours are formed from the methods' values
DEGENERATE_PREMISE = "none degenerate"
DIAGNOSIS_KEYS = {"kind": str, "evidence": str, "command": str, "commit": str}
# why a claim does not reproduce (or did not, until a fix): the paper's algorithm does not do it here (method), ours
# differed from the paper and was fixed in ``commit`` (implementation), or a named, measured property of the stand-in
DIAGNOSIS_KINDS = ("method", "implementation", "workload")
CALIBRATION_KEYS = {"method": str, "paper": object, "ours": object, "seeds": list, "set": dict, "metric": str, "method_set": dict}
CALIBRATION_METRICS = ("final_accuracy", "peak_accuracy")  # the accuracy a paper's table prints
CALIBRATION_TOLERANCE = 5.0  # points: a stand-in whose reference baseline lands further from the paper's is flagged
EVENTS_PREFIX = "events."


def _mean_or_none(values: list[float]) -> float | None:
    return float(np.mean(values)) if values else None


@dataclass(frozen=True)
class Context:
    """What a run's metric may read beside the run: the time-to-accuracy target's run and the no-drift twin's run."""

    target: Summary | None = None
    twin: Summary | None = None


@dataclass(frozen=True)
class Metric:
    """A per-run number a claim compares: how to read it from a summary, why it may be missing, and how it is shown."""

    read: Callable[[Summary, Context], float | None]  # (run, its context) -> value
    missing: str  # why a run has no value
    fmt: str = "{:.3g}"
    shown: Callable[[float], float] = float  # the value as the report shows it


def reaches(summary: Summary, target: Summary) -> bool:
    """Whether the run reaches ``target``'s final accuracy as summaries define reaching it (``metrics.first_reach``)."""
    rows = read_rounds(Path(summary.run_dir) / ROUNDS)
    return first_reach(rows["accuracy_mean"].to_numpy(), target.final_accuracy) is not None


def log_speed(summary: Summary, context: Context) -> float:
    """-ln(simulated hours to the target's final accuracy): a pair's difference is the log of their speed-up ratio.

    The target is reached as in summaries (``metrics.first_reach``); a run that never reaches it
    counts as reaching it at its end, a bound on its time that only the slower side of a claim may
    take (``run.evaluate``: the side claimed faster must reach the target).
    """
    target = context.target
    assert target is not None  # every tta_speedup claim has a target method (parse_claim), whose run is planned
    rows = read_rounds(Path(summary.run_dir) / ROUNDS)
    accuracy, seconds = rows["accuracy_mean"].to_numpy(), rows["sim_seconds"].to_numpy()
    first = first_reach(accuracy, target.final_accuracy)
    reached = seconds[-1] if first is None else crossing_seconds(seconds, accuracy, first, target.final_accuracy)
    return -math.log(float(reached) / 3600)


def peak_accuracy(summary: Summary, _: Context) -> float | None:
    """The highest client-mean accuracy over the run's evaluations (the figure MSCFL's Table 1 reports)."""
    accuracy = read_rounds(Path(summary.run_dir) / ROUNDS)["accuracy_mean"].to_numpy()
    return float(np.nanmax(accuracy)) if accuracy.size else None


def stable_delta(summary: Summary, context: Context) -> float | None:
    """Fed-CM's Delta: (Stable - final) / Stable x 1000, Stable the final accuracy of the same method without the drift.

    Stable is the twin run's: the claim's trace with its drift removed (``twin``), same method and seed.
    Our reading: the paper prints Delta without defining it, so its claims are proxies.
    """
    twin = context.twin
    assert twin is not None  # a delta_permille_stable claim has a twin (parse_claim), whose run is planned
    return (twin.final_accuracy - summary.final_accuracy) / twin.final_accuracy * 1000


def pre_drift(summary: Summary, _: Context) -> float | None:
    """The mean accuracy of the evaluations before the first drift event (its recovery record's ``pre``)."""
    return next((r.pre for r in summary.recovery if r.pre is not None), None)


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
    "delta_permille_stable": Metric(stable_delta, "no final accuracy"),
    "peak_accuracy": Metric(peak_accuracy, "no evaluation", "{:.3f}"),
    "newcomer_accuracy": Metric(lambda s, _: s.newcomer_accuracy, "no newcomers (the trace's newcomers is 0)", "{:.3f}"),
    "pre_drift_accuracy": Metric(pre_drift, "no evaluation before a drift event", "{:.3f}"),
    "ari_mean": Metric(lambda s, _: s.ari_mean, "no evaluation whose ground truth has >= 2 groups", "{:.3f}"),
    "n_clusters_final": Metric(lambda s, _: s.n_clusters_final, "no cluster count"),
    "mean_client_distance_final": Metric(lambda s, _: s.mean_client_distance_final, "no clustering", "{:.3f}"),
    "cluster_seconds": Metric(lambda s, _: s.overhead.cluster_seconds, "no server time"),
    "client_query_seconds": Metric(lambda s, _: s.overhead.client_query_seconds, "no client time"),
    "clustering_seconds": Metric(lambda s, _: s.overhead.cluster_seconds + s.overhead.client_query_seconds, "no server time"),
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
    """Why a claim does not reproduce: ``kind`` (``DIAGNOSIS_KINDS``), the experiment's ``command`` and its numbers."""

    kind: str
    evidence: str
    command: str
    commit: str | None = None  # the fix, for kind ``implementation``
    name: str = ""  # its key in the file's [diagnoses], or the id of the one claim whose own table it is

    def __str__(self) -> str:
        fix = f" (fixed in {self.commit})" if self.commit else ""
        return f"{self.kind}{fix}: {self.evidence} Command: {self.command}"


def parse_diagnosis(table: dict[str, Any], where: str, name: str = "") -> Diagnosis:
    """A claim's ``[claims.diagnosis]`` table; a bad kind, no command or evidence without a number is a ConfigError."""
    where = f"{where}: diagnosis"
    require(isinstance(table, dict), f"{where}: expected a table with {', '.join(DIAGNOSIS_KEYS)}")
    check_keys(table, DIAGNOSIS_KEYS, where)
    check_types(table, DIAGNOSIS_KEYS, where)
    require(table.get("kind") in DIAGNOSIS_KINDS, f"{where}: kind {table.get('kind')!r}: allowed: {', '.join(DIAGNOSIS_KINDS)}")
    evidence = " ".join(str(table.get("evidence", "")).split())
    require(
        bool(re.search(r"\d", evidence)),
        f"{where}: evidence: expected the experiment's numbers in one paragraph, got {evidence[:60]!r}",
    )
    command = " ".join(str(table.get("command", "")).split())
    require(bool(command), f"{where}: command: expected the command of the experiment that decided it")
    require(
        (table["kind"] == "implementation") == ("commit" in table),
        f"{where}: commit: an implementation diagnosis, and only it, names the commit that fixed it",
    )
    return Diagnosis(table["kind"], evidence, command, table.get("commit"), name)


@dataclass(frozen=True)
class Calibration:
    """A stand-in's calibration: the reference method's accuracy (points) on the claim's setting, paper and ours."""

    method: str
    paper: float
    ours: float
    seeds: tuple[int, ...]  # the calibration's seeds, which the report's should not be
    sets: tuple[tuple[str, str], ...] = ()  # overrides of the claim's setting, e.g. the no-drift data the paper's table reports
    metric: str = "final_accuracy"  # CALIBRATION_METRICS: the accuracy the paper's table prints
    method_sets: tuple[tuple[str, str], ...] = ()  # the reference's parameters, as the table's claims run it (IFCA's K)

    @property
    def residual(self) -> float:
        """Ours less the paper's, in points."""
        return self.ours - self.paper

    @property
    def within(self) -> bool:
        """Whether the residual is within ``CALIBRATION_TOLERANCE``."""
        return abs(self.residual) <= CALIBRATION_TOLERANCE

    def __str__(self) -> str:
        seeds = ",".join(map(str, self.seeds))
        peak = " (peak)" if self.metric == "peak_accuracy" else ""
        versus = f"{self.method}{peak} {self.ours:.2f} against the paper's {self.paper:.2f}"
        on = f" with {', '.join(f'{k}={v}' for k, v in self.sets)}" if self.sets else ""
        return f"calibrated: {versus}{on} (seeds {seeds}, residual {self.residual:+.1f} points)"


def parse_calibration(table: dict[str, Any], where: str) -> Calibration:
    """``calibrated_to = { method = "fedavg", paper = 38.30, ours = 37.1, seeds = [10, 11] }`` (optional ``set``); checked."""
    where = f"{where}: calibrated_to"
    check_keys(table, CALIBRATION_KEYS, where)
    missing = sorted(set(CALIBRATION_KEYS) - {"set", "metric", "method_set"} - set(table))
    require(not missing, f"{where}: missing {missing[0] if missing else ''!r}; it has {', '.join(CALIBRATION_KEYS)}")
    check_types(table, CALIBRATION_KEYS, where)
    for key in ("paper", "ours"):
        require(_is_number(table[key]), f"{where}: {key}: expected the accuracy in points, got {table[key]!r}")
    seeds = table["seeds"]
    require(
        bool(seeds) and all(isinstance(s, int) and s >= 0 for s in seeds),
        f"{where}: seeds: expected the calibration's seeds, e.g. [10, 11, 12], got {seeds!r}",
    )
    metric = table.get("metric", "final_accuracy")
    require(metric in CALIBRATION_METRICS, f"{where}: metric {metric!r}: allowed: {', '.join(CALIBRATION_METRICS)}")
    sets = tuple(sorted(flat_sets(table.get("set", {})).items()))
    method_sets = tuple(sorted(flat_sets(table.get("method_set", {})).items()))
    return Calibration(table["method"], float(table["paper"]), float(table["ours"]), tuple(seeds), sets, metric, method_sets)


@dataclass(frozen=True)
class Premise:
    """What must hold for a claim's comparison to mean the paper's: a metric's relation on the seed means, or no degeneracy."""

    text: str
    metric: str | None  # None: the ``none degenerate`` premise over the claim's methods
    direction: Direction | None = None

    @property
    def methods(self) -> tuple[str, ...]:
        """The methods the premise reads."""
        return self.direction.methods if self.direction else ()


PREMISES = f'"METRIC: A > B by X", "METRIC: A = B within X" (the direction grammar) or "{DEGENERATE_PREMISE}"'


def parse_premise(text: Any, where: str) -> Premise:
    """One entry of a claim's ``premises``; an unknown metric or a bad relation is a ConfigError naming ``where``."""
    require(isinstance(text, str) and bool(text.strip()), f"{where}: expected {PREMISES}, got {text!r}")
    if text.strip() == DEGENERATE_PREMISE:
        return Premise(text.strip(), None)
    metric, sep, relation = text.partition(":")
    require(bool(sep), f"{where}: {text!r}: expected {PREMISES}")
    metric = metric.strip()
    require(metric in metric_names(), f"{where}: metric {metric!r}: allowed: {', '.join(metric_names())}")
    methods = tuple(dict.fromkeys(re.findall(r"[^\s<>=]+", relation.split(" by ")[0].split(" within ")[0])))
    direction = parse_direction(relation, methods, where)
    require(direction.relation in (">", "<", "="), f"{where}: {text!r}: a premise compares two methods")
    return Premise(" ".join(text.split()), metric, direction)


PaperValue = float | dict[str, float]


def parse_paper_value(table: dict[str, Any], kind: str, methods: tuple[str, ...], where: str) -> PaperValue | None:
    """The paper's figure as data: one number (the effect) or one per compared method; a driftbench claim has none."""
    value = table.get(VALUE_KEY)
    if kind == "driftbench":
        require(value is None, f"{where}: {VALUE_KEY}: a driftbench claim is on a figure the paper does not report")
        return None
    allowed = f"a number (the effect) or a table of a number per method {list(methods)}"
    require(value is not None, f"{where}: missing {VALUE_KEY!r}: the paper's figure as {allowed}")
    if isinstance(value, dict):
        require(
            sorted(value) == sorted(methods) and all(_is_number(v) for v in value.values()),
            f"{where}: {VALUE_KEY} {value!r}: expected {allowed}",
        )
        return {m: float(v) for m, v in value.items()}
    require(_is_number(value), f"{where}: {VALUE_KEY} {value!r}: expected {allowed}")
    assert value is not None  # require()d above
    return float(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(frozen=True)
class Claim:
    """One claim of one paper: where it is, the setting it runs in, what it compares and the paper's figure as data."""

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
    kind: str = "exact"  # KINDS
    unit: str = "points"  # UNITS: the unit of paper_value; driftbench's values are scaled to it
    paper_value: PaperValue | None = None  # the effect, or each method's value (None for a driftbench claim)
    difference: str | None = None  # a proxy's metric against the paper's, in one line
    effect: str = "difference"  # EFFECTS; a time-to-accuracy claim's effect is always the speed-up ratio
    premises: tuple[Premise, ...] = ()
    method_sets: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # method -> its parameter overrides
    twin: Mapping[str, str] | None = None  # trace overrides that remove the drift: the no-drift twin setting
    protocol: str | None = None  # how the baselines are set, or which stands in for the paper's, in one line
    workload: str | None = None  # the paper's workload that this trace does not build yet, in one line: not run
    differs: str | None = None  # what of the paper's protocol the claim's setting still does not follow, and why, in one line
    target: str | None = None  # tta_speedup: the method whose final accuracy is the target (default FedAvg)
    diagnosis: Diagnosis | None = None  # why it does not reproduce, where that has been found out
    literal_diagnosis: Diagnosis | None = None  # its literal twin's, where the readings fail for different reasons
    bound: str | None = None  # BOUNDS: paper_value bounds the effect (the paper prints none), verdict.magnitude
    calibrated_to: Calibration | None = None  # the stand-in's calibration on a reference baseline
    literal: bool = False  # the claim run again with the literal variants of methods whose default is a reading

    def renamed(self, names: Mapping[str, str]) -> Claim:
        """The claim with its methods renamed (``names``: old -> new) wherever it names them, as its literal twin."""

        def name(method: str) -> str:
            return names.get(method, method)

        def premise(p: Premise) -> Premise:
            if p.direction is None:
                return p
            text = re.sub(r"[^\s<>=:]+", lambda m: name(m.group()), p.text)
            return replace(p, text=text, direction=replace(p.direction, methods=tuple(map(name, p.direction.methods))))

        value = self.paper_value
        return replace(
            self,
            direction=replace(self.direction, methods=tuple(map(name, self.direction.methods))),
            premises=tuple(map(premise, self.premises)),
            paper_value={name(m): v for m, v in value.items()} if isinstance(value, dict) else value,
            method_sets={name(m): sets for m, sets in self.method_sets.items()},
            target=None if self.target is None else name(self.target),
            diagnosis=self.literal_diagnosis or self.diagnosis,
            literal=True,
        )

    @property
    def methods(self) -> tuple[str, ...]:
        """The methods the claim compares."""
        return self.direction.methods

    @property
    def runs(self) -> tuple[str, ...]:
        """The methods whose runs the claim needs: its own, the time-to-accuracy target's and its premises'."""
        premised = [m for p in self.premises for m in p.methods]
        return tuple(dict.fromkeys([*self.methods, *([self.target] if self.target else []), *premised]))

    @property
    def label(self) -> str:
        """The claim's id as reports show it: `` (literal)`` after a literal twin's."""
        return self.id + (" (literal)" if self.literal else "")

    @property
    def key(self) -> str:
        """``<paper>/<label>``."""
        return f"{self.paper}/{self.label}"

    def method_run(self, method: str) -> MethodRun:
        """The method with the claim's overrides of its parameters: what one run folder holds."""
        return MethodRun(method, tuple(sorted(self.method_sets.get(method, {}).items())))


@dataclass(frozen=True)
class MethodRun:
    """A method and the overrides of its parameters a claim gives it (its paper's protocol for that baseline)."""

    name: str
    sets: tuple[tuple[str, str], ...] = ()

    @property
    def label(self) -> str:
        """``name`` or ``name(k=5)``."""
        return self.name + (f"({','.join(f'{k}={v}' for k, v in self.sets)})" if self.sets else "")


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
    shared = {name: parse_diagnosis(table, f"{path}: diagnoses.{name}", name) for name, table in raw.get("diagnoses", {}).items()}
    claims = [parse_claim(table, path, raw["paper"], i, shared) for i, table in enumerate(tables)]
    ids = [c.id for c in claims]
    duplicate = next((i for i in ids if ids.count(i) > 1), None)
    require(duplicate is None, f"{path}: claims: id {duplicate!r} is used more than once")
    named = {t[key] for t in tables for key in ("diagnosis", "literal_diagnosis") if isinstance(t.get(key), str)}
    unused = sorted(set(shared) - named)
    require(not unused, f"{path}: diagnoses.{unused[0] if unused else ''}: no claim names it")
    return claims


def claim_diagnosis(value: Any, shared: Mapping[str, Diagnosis], where: str, claim_id: str = "") -> Diagnosis:
    """A claim's ``diagnosis``: its own table, or the name of a diagnosis its file's ``[diagnoses]`` shares between claims."""
    if isinstance(value, str):
        require(value in shared, f"{where}: diagnosis {value!r}: the file's [diagnoses] are {', '.join(shared) or 'none'}")
        return shared[value]
    require(isinstance(value, dict), f"{where}: diagnosis must be a table or the name of one of the file's [diagnoses]")
    return parse_diagnosis(value, where, claim_id)


def parse_claim(
    table: dict[str, Any], path: Path, title: str, index: int, shared: Mapping[str, Diagnosis] | None = None
) -> Claim:
    """One ``[[claims]]`` table."""
    where = f"{path}: claims[{index}]" + (f" ({table['id']})" if isinstance(table.get("id"), str) else "")
    check_keys(table, {**CLAIM_KEYS, VALUE_KEY: object}, where)
    check_types(table, CLAIM_KEYS, where)
    missing = sorted(set(CLAIM_KEYS) - OPTIONAL_CLAIM_KEYS - set(table))
    if missing:
        raise ConfigError(f"{where}: missing {missing[0]!r}; a claim has {', '.join(sorted(CLAIM_KEYS))} (see docs/reproduce.md)")
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
    require(
        ("twin" in table) == (table["metric"] == "delta_permille_stable"),
        f"{where}: twin: a delta_permille_stable claim, and only it, names its no-drift twin (trace overrides)",
    )
    kind, unit, effect = table["kind"], table["unit"], table.get("effect", "difference")
    require(kind in KINDS, f"{where}: kind {kind!r}: allowed: {', '.join(KINDS)}")
    require(unit in UNITS, f"{where}: unit {unit!r}: allowed: {', '.join(UNITS)}")
    require(effect in EFFECTS, f"{where}: effect {effect!r}: allowed: {', '.join(EFFECTS)}")
    require(
        (kind == "proxy") == bool(str(table.get("difference", "")).strip()),
        f"{where}: difference: a proxy claim, and only it, says in one line how its metric differs from the paper's",
    )
    direction = parse_direction(table["direction"], tuple(methods), where)
    bound = parse_bound(table, direction, where)
    premises = tuple(parse_premise(p, f"{where}: premises[{i}]") for i, p in enumerate(table.get("premises", [])))
    target = table.get("target", REFERENCE) if table["metric"] == "tta_speedup" else None
    claim = Claim(
        path.stem,
        title,
        table["id"],
        table["where"],
        table["claim"],
        table["trace"],
        flat_sets(table.get("set", {})),
        table["metric"],
        direction,
        table["paper_figure"],
        kind=kind,
        unit=unit,
        paper_value=parse_paper_value(table, kind, direction.methods, where),
        difference=" ".join(table["difference"].split()) if "difference" in table else None,
        effect=effect,
        premises=premises,
        method_sets=parse_method_sets(table.get("method_set", {}), where),
        twin=flat_sets(table["twin"]) if "twin" in table else None,
        protocol=one_line(table, "protocol", where),
        workload=one_line(table, "workload", where),
        differs=one_line(table, "differs", where),
        target=target,
        diagnosis=claim_diagnosis(table["diagnosis"], shared or {}, where, table["id"]) if "diagnosis" in table else None,
        literal_diagnosis=claim_diagnosis(table["literal_diagnosis"], shared or {}, f"{where}: literal_diagnosis", table["id"])
        if "literal_diagnosis" in table
        else None,
        bound=bound,
        calibrated_to=parse_calibration(table["calibrated_to"], where) if "calibrated_to" in table else None,
    )
    require(
        claim.twin is None or any(claim.sets.get(k) != v for k, v in claim.twin.items()),
        f"{where}: twin {table.get('twin')!r}: changes nothing in the claim's set, so the no-drift twin would be the "
        "claim's own runs; give the overrides that remove the drift, e.g. twin = { fraction = 0 }",
    )
    stray = sorted(set(claim.method_sets) - set(claim.runs))
    if stray:
        raise ConfigError(f"{where}: method_set: {stray[0]!r} is not one of the claim's runs {list(claim.runs)}")
    return claim


def parse_bound(table: dict[str, Any], direction: Direction, where: str) -> str | None:
    """A bound claim's ``bound``: its ``paper_value`` is one number bounding the effect of the methods it compares."""
    require(
        (table["kind"] == "bound") == ("bound" in table),
        f"{where}: bound: a bound claim, and only it, says which bound its {VALUE_KEY} is: {', '.join(BOUNDS)}",
    )
    if "bound" not in table:
        return None
    bound = table["bound"]
    require(bound in BOUNDS, f"{where}: bound {bound!r}: allowed: {', '.join(BOUNDS)}")
    require(
        _is_number(table.get(VALUE_KEY)),
        f"{where}: bound: the {VALUE_KEY} of a bound is one number (the effect), got {table.get(VALUE_KEY)!r}",
    )
    require(direction.relation != "=", f"{where}: bound: an equivalence (A = B within X) has no effect to bound")
    return str(bound)


def one_line(table: dict[str, Any], key: str, where: str) -> str | None:
    """An optional one-line note (``protocol``, ``workload``, ``differs``); an empty one is a ConfigError naming ``where``."""
    if key not in table:
        return None
    text = " ".join(table[key].split())
    require(bool(text), f"{where}: {key}: expected one line, got an empty string")
    return text


def parse_method_sets(table: dict[str, Any], where: str) -> dict[str, dict[str, str]]:
    """``method_set = { ifca = { k = 5 } }``: each method's parameter overrides as ``--set method.KEY`` strings."""
    require(
        all(isinstance(v, dict) and v for v in table.values()),
        f"{where}: method_set: expected a table of parameter tables per method, e.g. {{ ifca = {{ k = 5 }} }}",
    )
    return {method: flat_sets(sets) for method, sets in table.items()}
