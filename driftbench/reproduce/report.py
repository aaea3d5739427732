"""The reproduce report: its headline, reproduce.md and reproduce.csv (a row per claim), forest plots, the page's section."""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from driftbench.atomic import atomic_write
from driftbench.config import require
from driftbench.errors import ConfigError
from driftbench.evaluation.html_page import Section
from driftbench.evaluation.plots import Plot
from driftbench.reproduce.claim import CALIBRATION_TOLERANCE, Claim, Diagnosis
from driftbench.reproduce.effects import ratio_effect
from driftbench.reproduce.forest import CAPTION, forest_plots
from driftbench.reproduce.judging import ClaimResult, seed_range
from driftbench.reproduce.verdict import DETERMINISTIC, REPRODUCED, RULE_TITLE, VERDICT_RULE, VERDICTS, level
from driftbench.runner import NOT_RECORDED, RunOutcome

COLUMNS = {  # report column -> its heading in reproduce.md and on the HTML page
    "paper": "paper",
    "id": "claim id",
    "kind": "kind",
    "where": "where",
    "claim": "claim",
    "paper_figure": "paper's figure",
    "paper_value": "paper's effect",
    "ours": "ours",
    "interval": "ours, 95% interval",
    "ratio": "ours/paper",
    "driftbench": "driftbench (mean ± std over seeds)",
    "verdict": "verdict",
    "reason": "reason",
    "notes": "metric, protocol and workload notes",
    "diagnosis": "diagnosis",
}
REPORT_FILES = ("reproduce.md", "reproduce.csv")
NO_DIAGNOSIS = "none yet: not reproduced here, cause not established"


@dataclass(frozen=True)
class Report:
    """What ``reproduce`` found: one result per claim, the runs behind them and how long it took."""

    results: list[ClaimResult]
    seeds: tuple[int, ...]
    scale: str
    outcomes: list[RunOutcome] = field(default_factory=list)
    seconds: float = 0.0
    paper_seconds: Mapping[str, float] = field(default_factory=dict)  # each paper's runs' recorded walls, summed
    second: tuple[int, ...] = ()  # the second stage's seeds (the verdict rule), for the claims the first left open

    def run_time(self) -> str:
        """Each paper's run time: the recorded wall seconds of the runs its claims need, a shared run in each paper."""
        hours = ", ".join(f"{paper} {seconds / 3600:.2f} h" for paper, seconds in self.paper_seconds.items())
        return f"Run time by paper (the runs' recorded walls, one process each; a run two papers share counts in both): {hours}."

    def headline(self) -> str:
        """The paper claims' verdict counts, the driftbench claims' apart, then seeds, scale, runs and wall time."""
        states = [o.state for o in self.outcomes]
        paper = [r.verdict for r in self.results if r.claim.kind != "driftbench" and not r.claim.literal]
        own = [r.verdict for r in self.results if r.claim.kind == "driftbench" and not r.claim.literal]
        literal = [r.verdict for r in self.results if r.claim.literal]

        def counts(verdicts: list[str]) -> str:
            return ", ".join(f"{verdicts.count(v)} {v}" for v in VERDICTS)

        pending = f", {states.count(NOT_RECORDED)} {NOT_RECORDED}" if NOT_RECORDED in states else ""
        calibrated = [r.claim.calibrated_to for r in self.results if r.claim.calibrated_to]
        off = sum(not c.within for c in calibrated)
        looks = f"Holm over each paper's claims at level {level(1):g}."
        if self.second:
            went = sum(set(self.second) <= set(r.seeds) for r in self.results)
            looks = (
                f"Holm over each paper's claims at each of two looks, at Pocock's level {level(2):g}: seeds "
                f"{seed_range(self.seeds)}, then seeds {seed_range(self.second)} for the {went} claims the first left "
                "inconclusive."
            )
        twins = (
            f"{len(literal)} literal twins (claims run again with methods as their papers are written, where the "
            f"default is a reading; their own Holm families, judged once, at level {level(1):g}): {counts(literal)}. "
            if literal
            else ""
        )
        return (
            f"{len(paper)} paper claims: {counts(paper)}. {len(own)} driftbench claims (figures the papers do not "
            f"report): {counts(own)}. {twins}{looks} {len(calibrated)} claims run on calibrated "
            f"stand-ins, {off} of them more than {CALIBRATION_TOLERANCE:g} points off. "
            f"Seeds {', '.join(map(str, self.seeds + self.second))}, scale "
            f"{self.scale}; {len(states)} runs ({states.count('ran')} ran, {states.count('skipped')} up to date, "
            f"{states.count('failed')} failed{pending}) in {self.seconds / 60:.1f} min wall."
        )


def shown_diagnosis(result: ClaimResult) -> Diagnosis | None:
    """The diagnosis a claim's row shows: any where it did not reproduce, only a fix (``implementation``) where it did
    (or where it holds at its one deterministic value)."""
    d = result.claim.diagnosis
    if settled(result) and (d is None or d.kind != "implementation"):
        return None
    return d


def settled(result: ClaimResult) -> bool:
    """Whether a claim needs no diagnosis: it reproduced, or it holds at its one deterministic value."""
    return result.verdict == REPRODUCED or (result.verdict == DETERMINISTIC and bool(result.holds))


def row(result: ClaimResult, brief: bool = False) -> dict[str, str]:
    """A claim's report row (``COLUMNS``); ``brief`` names its diagnosis by id and kind, as reproduce.md's table does."""
    c, d = result.claim, shown_diagnosis(result)
    if d is None:
        diagnosis = "-" if settled(result) else NO_DIAGNOSIS
    else:
        diagnosis = f"{d.name} ({d.kind})" if brief else str(d)
    paper = number(result.paper, c)
    ratio = "-" if result.ratio is None else f"{result.ratio:.2g}"
    effect = [bounded(paper, c), number(result.ours, c), interval(result), ratio]
    beside = f"; beside the verdict: {'; '.join(result.shown)}" if result.shown else ""
    reason = result.reason + beside + (f"; {off_calibration(c)}" if c.calibrated_to and not c.calibrated_to.within else "")
    cells = [c.title, c.label, c.kind, c.where, c.text, c.paper_figure, *effect, result.figure, result.verdict, reason]
    return dict(zip(COLUMNS, [*cells, notes(c), diagnosis], strict=True))


def interval(result: ClaimResult) -> str:
    """Our effect's 95% interval over seeds in the paper's unit (of the geometric mean, for ratios), or ``-``."""
    if result.effect is None or len(result.effect.values) < 2:
        return "-"
    shown = result.effect.interval()
    return f"[{shown.low:.3g}, {shown.high:.3g}] {unit(result.claim)}"


def off_calibration(claim: Claim) -> str:
    """The reason's note on a stand-in whose reference baseline lands further than the tolerance from the paper's."""
    cal = claim.calibrated_to
    assert cal is not None
    return (
        f"the stand-in is off its calibration: {cal.method} {cal.ours:.2f} against the paper's {cal.paper:.2f} "
        f"({cal.residual:+.1f} points, beyond {CALIBRATION_TOLERANCE:g})"
    )


def unit(claim: Claim) -> str:
    """The unit of the claim's effect: ``x`` for a ratio, else its paper value's."""
    return "x" if ratio_effect(claim) else claim.unit


def number(value: float | None, claim: Claim) -> str:
    """An effect in the claim's unit, or ``-``."""
    return "-" if value is None else f"{value:.3g} {unit(claim)}"


def bounded(text: str, claim: Claim) -> str:
    """The paper's effect as shown: ``at least 6 points`` where its value is a bound (``claim.bound``)."""
    return f"{claim.bound.replace('_', ' ')} {text}" if claim.bound and text != "-" else text


def notes(claim: Claim) -> str:
    """The claim's proxy difference, protocol, what differs, calibration, premises and twin, on one line (``-`` if none)."""
    parts = [
        *([f"proxy: {claim.difference}"] if claim.difference else []),
        *([f"protocol: {claim.protocol}"] if claim.protocol else []),
        *([f"differs: {claim.differs}"] if claim.differs else []),
        *([str(claim.calibrated_to)] if claim.calibrated_to else []),
        *([f"premises: {'; '.join(p.text for p in claim.premises)}"] if claim.premises else []),
        *([f"no-drift twin: {', '.join(f'{k}={v}' for k, v in claim.twin.items())}"] if claim.twin else []),
    ]
    return " | ".join(parts) or "-"


def rows(report: Report, brief: bool = False) -> list[dict[str, str]]:
    """One row per claim (``brief``: diagnoses by id and kind)."""
    return [row(r, brief) for r in report.results]


def markdown(report: Report, plots: Sequence[Plot] | None = ()) -> str:
    """reproduce.md: headline, verdict rule, forest plots (``None``: no matplotlib), the claims, then the diagnoses."""
    lines = [
        "# driftbench reproduce",
        "",
        report.headline(),
        "",
        report.run_time(),
        "",
        f"**{RULE_TITLE.strip()}** {VERDICT_RULE}",
        "",
        *figure_lines(plots),
        "| " + " | ".join(COLUMNS.values()) + " |",
        "|" + " --- |" * len(COLUMNS),
        *("| " + " | ".join(markdown_cell(row[k]) for k in COLUMNS) + " |" for row in rows(report, brief=True)),
        *diagnosis_section(report.results),
    ]
    return "\n".join(lines) + "\n"


def diagnosis_section(results: Sequence[ClaimResult]) -> list[str]:
    """reproduce.md's section of the diagnoses its rows name (``diagnoses``), or nothing where they name none."""
    listed = diagnoses(results)
    return ["", "## Diagnoses", "", *listed] if listed else []


def figure_lines(plots: Sequence[Plot] | None) -> list[str]:
    """reproduce.md's lines for the forest plots: the caption and each image, or why there are none."""
    if plots is None:
        return ["Forest plots need matplotlib: pip install 'driftbench[plots]'.", ""]
    if not plots:
        return []
    return [CAPTION, "", *(f"![{p.name}]({p.name}.png)" for p in plots), ""]


def diagnoses(results: Sequence[ClaimResult], heading: str = "###") -> list[str]:
    """Markdown of the diagnoses the rows name, each once per paper with the claims that name it, its evidence and its
    command, under ``heading`` (``"###"``: a section each)."""
    named: dict[tuple[str, str], tuple[Diagnosis, list[str]]] = {}
    for result in results:
        d = shown_diagnosis(result)
        if d is not None:
            named.setdefault((result.claim.title, d.name), (d, []))[1].append(result.claim.label)
    lines: list[str] = []
    for (title, name), (d, ids) in named.items():
        fix = f", fixed in {d.commit}" if d.commit else ""
        lines += [
            f"{heading} {title}: {name} ({d.kind}{fix})",
            "",
            f"Claims: {', '.join(ids)}.",
            "",
            d.evidence,
            "",
            f"Command: `{d.command}`",
            "",
        ]
    return lines


def markdown_cell(text: str) -> str:
    """A table cell's text, its pipes escaped."""
    return text.replace("|", "\\|").replace("\n", " ")


def write_report(report: Report, folder: Path) -> list[Path]:
    """Write reproduce.md, reproduce.csv (one row per claim, ``COLUMNS``) and each paper's forest plot into ``folder``.

    reproduce.csv holds every field in full; reproduce.md names each row's diagnosis by its id and kind and lists every
    diagnosis once below the table, with its evidence and command. Without matplotlib the plots are left out, and
    reproduce.md says so.
    """
    folder.mkdir(parents=True, exist_ok=True)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(COLUMNS), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows(report))
    try:
        plots: list[Plot] | None = forest_plots(report.results)
    except ConfigError:  # no matplotlib: the report is written without its plots
        plots = None
    files = {name: text.encode() for name, text in zip(REPORT_FILES, [markdown(report, plots), buffer.getvalue()])}
    files.update({name: content for plot in plots or [] for name, content in plot.files.items()})
    for name, content in files.items():
        atomic_write(folder / name, lambda fh, content=content: fh.write(content))
    return [folder / name for name in files]


def read_report(path: Path) -> list[dict[str, str]]:
    """The rows of a reproduce.csv; a file without exactly its columns is a ConfigError naming it."""
    try:
        with open(path, newline="") as fh:
            reader = csv.DictReader(fh)
            rows = list(reader)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ConfigError(f"{path}: unreadable claims report ({exc})") from None
    require(reader.fieldnames == list(COLUMNS), f"{path}: columns {reader.fieldnames}: expected {list(COLUMNS)}")
    return rows


def report_section(rows: list[dict[str, str]]) -> Section:
    """The HTML page's section of paper claims: one row per claim, under the verdict rule."""
    return Section(
        "Paper claims",
        subtitle=f"driftbench reproduce: each paper's claims checked on the benchmark. {VERDICT_RULE}",
        rows=[{COLUMNS[k]: row[k] for k in COLUMNS} for row in rows],
    )
