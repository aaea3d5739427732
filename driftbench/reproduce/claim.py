"""The claim model: a paper's claim as data (``Claim``), what it compares (``Direction``), its premises and notes."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from driftbench.reproduce.quote import Quote

# exact: the paper's metric and figure; bound: the paper's metric, its figure a bound the paper implies but does
# not print (``bound`` says which side); proxy: another metric standing in for it (``difference`` says how);
# driftbench: a figure the paper does not report, judged apart from the paper's claims
KINDS = ("exact", "bound", "proxy", "driftbench")
# unit -> ours' scale
UNITS = {"points": 100.0, "permille": 1.0, "x": 1.0, "seconds": 1.0, "count": 1.0, "ari": 1.0, "distance": 1.0}
EFFECTS = ("difference", "ratio")  # how the paper's effect and ours are formed from the methods' values
# why a claim does not reproduce (or did not, until a fix): the paper's algorithm does not do it here (method), ours
# differed from the paper and was fixed in ``commit`` (implementation), or a named, measured property of the stand-in
DIAGNOSIS_KINDS = ("method", "implementation", "workload")
CALIBRATION_METRICS = ("final_accuracy", "peak_accuracy")  # the accuracy a paper's table prints
CALIBRATION_TOLERANCE = 5.0  # points: a stand-in whose reference baseline lands further from the paper's is flagged
PaperValue = float | dict[str, float]


@dataclass(frozen=True)
class Direction:
    """What a claim says about its methods' metric: ``>``, ``<``, ``=`` (within ``margin``), ``increasing`` or ``decreasing``."""

    relation: str
    methods: tuple[str, ...]  # A and B, or the methods of an ordering in order
    margin: float = 0.0  # "by X" or "within X"

    def statistic(self, values: Mapping[str, float]) -> float:
        """The claim's statistic at one seed from each method's value: positive when the claim holds (``VERDICT_RULE``)."""
        v = [values[m] for m in self.methods]
        if self.relation in (">", "<"):
            return (1 if self.relation == ">" else -1) * (v[0] - v[1]) - self.margin
        if self.relation == "=":
            return self.margin - abs(v[0] - v[1])
        sign = 1 if self.relation == "increasing" else -1
        return min(sign * (b - a) for a, b in zip(v, v[1:]))


@dataclass(frozen=True)
class Diagnosis:
    """Why a claim does not reproduce: ``kind`` (``DIAGNOSIS_KINDS``), the experiment's ``command`` and its numbers."""

    kind: str
    evidence: str
    command: str
    commit: str | None = None  # the fix, for kind ``implementation``
    name: str = ""  # its key in the file's [diagnoses], or the id of the one claim whose own table it is
    quotes: tuple[Quote, ...] = ()  # the evidence's numbers from the report's runs, checked against them (``quotes``)

    def __str__(self) -> str:
        fix = f" (fixed in {self.commit})" if self.commit else ""
        return f"{self.kind}{fix}: {self.evidence} Command: {self.command}"


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


@dataclass(frozen=True)
class MethodRun:
    """A method and the overrides of its parameters a claim gives it (its paper's protocol for that baseline)."""

    name: str
    sets: tuple[tuple[str, str], ...] = ()

    @property
    def label(self) -> str:
        """``name`` or ``name(k=5)``."""
        return self.name + (f"({','.join(f'{k}={v}' for k, v in self.sets)})" if self.sets else "")


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
    bound: str | None = None  # verdict.BOUNDS: paper_value bounds the effect (the paper prints none), verdict.band
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
    def claimed(self) -> tuple[str, ...]:
        """The methods whose own behaviour the claim measures: A in "A > B", "A < B" or "A = B within X" (claim files
        name the method a claim is about first); every method of an ordering."""
        d = self.direction
        return d.methods if d.relation in ("increasing", "decreasing") else d.methods[:1]

    @property
    def run_methods(self) -> tuple[str, ...]:
        """The methods whose runs the claim needs: its own, the time-to-accuracy target's and its premises'."""
        premised = [m for p in self.premises for m in p.methods]
        return tuple(dict.fromkeys([*self.methods, *([self.target] if self.target else []), *premised]))

    @property
    def faster(self) -> str | None:
        """The method a time-to-accuracy claim says is faster, which must reach the target; None for other claims."""
        if self.target is None or self.direction.relation not in (">", "<"):
            return None
        return self.methods[0] if self.direction.relation == ">" else self.methods[1]

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
