"""Diagnoses' quotes checked against the report's runs: each quote's numbers computed from an archive or a runs folder."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from driftbench.config import require
from driftbench.record.archive import is_archive
from driftbench.record.files import run_dir
from driftbench.record.runs import RunRecord, nested_runs
from driftbench.reproduce.claim import Claim, Diagnosis, MethodRun
from driftbench.reproduce.metrics import Context, metric_spec
from driftbench.reproduce.planning import Setting
from driftbench.reproduce.quote import SUMMARY_FIELDS, Quote, gives, written

Records = Mapping[Path, Callable[[], RunRecord]]  # a run's place -> how to read its record


class Missing(Exception):
    """A run a quote reads, or its metric, that the runs do not hold."""


def quote_mismatches(paper: str, claims: Sequence[Claim], source: Path, scale: str = "embedded") -> list[str]:
    """One line per quote of the paper's diagnoses whose numbers are not exactly what the runs in ``source`` (the report's
    archive or runs folder) give (``gives``): the diagnosis, the quote's text and what the runs give, or the missing run."""
    own = [claim for claim in claims if claim.paper == paper]
    require(bool(own), f"unknown paper {paper!r}: none of the claims given is its")
    by_id = {claim.id: claim for claim in own if not claim.literal}
    records = dict(nested_runs(Path(source)))
    lines = []
    for diagnosis in distinct_diagnoses(own):
        for quote in diagnosis.quotes:
            try:
                value = quote_value(quote, by_id, records, Path(source), scale)
            except Missing as exc:
                lines.append(f"{paper}: diagnosis {diagnosis.name}: {quote.text!r} ({quote.describe()}): {exc}")
                continue
            if not gives(quote.text, value):
                lines.append(f"{paper}: diagnosis {diagnosis.name}: {quote.text!r} ({quote.describe()}): the runs give {value}")
    return lines


def distinct_diagnoses(claims: Sequence[Claim]) -> list[Diagnosis]:
    """The claims' diagnoses and literal twins' diagnoses, each once, in the claims' order."""
    found = [d for claim in claims for d in (claim.diagnosis, claim.literal_diagnosis) if d is not None]
    return list({(d.name, d.evidence): d for d in found}.values())


def quote_value(quote: Quote, claims: Mapping[str, Claim], records: Records, root: Path, scale: str) -> str:
    """The quote as the runs write it; ``Missing`` where a run is missing, unfinished or without the metric."""
    setting, runs = quote_runs(quote, claims, scale)

    def place(method: str, seed: int) -> Path:
        return run_dir(setting.run_folder(root, runs(method)), setting.trace, method, seed)

    span = quote.at_rounds
    if span is not None:
        values = [v for seed in quote.seeds for v in read_rounds(place(quote.method, seed), quote.metric, span, records, root)]
    else:
        methods = [m for m in (quote.method, quote.versus) if m is not None]
        read = [[read_value(place(m, seed), quote.metric, records, root) for m in methods] for seed in quote.seeds]
        values = [seed_values[0] - sum(seed_values[1:]) for seed_values in read]
    return written([value * quote.scale for value in values], quote.form, quote.digits)


def quote_runs(quote: Quote, claims: Mapping[str, Claim], scale: str) -> tuple[Setting, Callable[[str], MethodRun]]:
    """The setting the quote's runs are in and each method's overrides there: its claim's, or its own ``trace`` and ``set``."""
    if quote.claim is not None:
        claim = claims[quote.claim]
        return Setting.of(claim, scale), claim.method_run
    assert quote.trace is not None  # a quote names a claim or a trace (quote_file)
    sets = {**dict(quote.sets), **({"scale": scale} if scale != "embedded" else {})}
    overrides = dict(quote.method_sets)
    return Setting(quote.trace, tuple(sorted(sets.items()))), lambda method: MethodRun(method, overrides.get(method, ()))


def finished_record(place: Path, records: Records, root: Path) -> RunRecord:
    """The run's record; ``Missing`` naming the run where it is not in the archive or runs, or unfinished."""
    if place not in records:
        raise Missing(f"run {place.relative_to(root)} is not in the {'archive' if is_archive(root) else 'runs folder'} {root}")
    record = records[place]()
    if record.summary is None:
        raise Missing(f"run {place.relative_to(root)} is incomplete in {root}")
    return record


def read_rounds(place: Path, metric: str, span: tuple[int, int], records: Records, root: Path) -> list[float]:
    """A run's evaluations of the rounds.csv column ``metric`` in rounds ``span`` (both ends included), in round order;
    ``Missing`` where none."""
    first, last = span
    rows = finished_record(place, records, root).rounds()
    values = rows.loc[rows["round"].between(first, last), ["round", metric]].dropna().sort_values("round")
    if values.empty:
        raise Missing(f"run {place.relative_to(root)} has no {metric} at rounds {first}-{last}")
    return [float(v) for v in values[metric]]


def read_value(place: Path, metric: str, records: Records, root: Path) -> float:
    """A run's metric; ``Missing`` naming the run where it is not in the archive or runs, unfinished, or has none."""
    record = finished_record(place, records, root)
    summary = record.summary
    assert summary is not None
    if metric in SUMMARY_FIELDS:
        value = getattr(summary, metric)
    else:
        value = metric_spec(metric).read(summary, Context(rows=record.rounds))
    if value is None:
        raise Missing(f"run {place.relative_to(root)} has no {metric}")
    return float(value)
