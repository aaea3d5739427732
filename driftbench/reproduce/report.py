"""The reproduce report: reproduce.md and reproduce.csv, one row per claim, and its section of the leaderboard page."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from driftbench.atomic import atomic_write
from driftbench.config import require
from driftbench.errors import ConfigError
from driftbench.evaluation.html_page import Section
from driftbench.reproduce.claims import CALIBRATION_TOLERANCE, Claim
from driftbench.reproduce.run import ClaimResult, Report
from driftbench.reproduce.verdict import REPRODUCED, RULE_TITLE, VERDICT_RULE

COLUMNS = {  # report column -> its heading in reproduce.md and on the HTML page
    "paper": "paper",
    "id": "claim id",
    "kind": "kind",
    "where": "where",
    "claim": "claim",
    "paper_figure": "paper's figure",
    "paper_value": "paper's effect",
    "ours": "ours",
    "ratio": "ours/paper",
    "driftbench": "driftbench (mean ± std over seeds)",
    "verdict": "verdict",
    "reason": "reason",
    "notes": "metric, protocol and workload notes",
    "diagnosis": "diagnosis",
}
REPORT_FILES = ("reproduce.md", "reproduce.csv")
NO_DIAGNOSIS = "none yet: not reproduced here, cause not established"


def row(result: ClaimResult) -> dict[str, str]:
    """A claim's report row (``COLUMNS``); a claim that reproduced shows only a diagnosis of kind ``implementation`` (a fix)."""
    c = result.claim
    if result.verdict == REPRODUCED:
        diagnosis = str(c.diagnosis) if c.diagnosis and c.diagnosis.kind == "implementation" else "-"
    else:
        diagnosis = str(c.diagnosis) if c.diagnosis else NO_DIAGNOSIS
    paper = number(result.paper, c)
    effect = [bounded(paper, c), number(result.ours, c), "-" if result.ratio is None else f"{result.ratio:.2g}"]
    reason = result.reason + (f"; {off_calibration(c)}" if c.calibrated_to and not c.calibrated_to.within else "")
    cells = [c.title, c.id, c.kind, c.where, c.text, c.paper_figure, *effect, result.figure, result.verdict, reason]
    return dict(zip(COLUMNS, [*cells, notes(c), diagnosis], strict=True))


def off_calibration(claim: Claim) -> str:
    """The reason's note on a stand-in whose reference baseline lands further than the tolerance from the paper's."""
    cal = claim.calibrated_to
    assert cal is not None
    return (
        f"the stand-in is off its calibration: {cal.method} {cal.ours:.2f} against the paper's {cal.paper:.2f} "
        f"({cal.residual:+.1f} points, beyond {CALIBRATION_TOLERANCE:g})"
    )


def number(value: float | None, claim: Claim) -> str:
    """An effect in the claim's unit (``x`` for a ratio), or ``-``."""
    if value is None:
        return "-"
    unit = "x" if claim.metric == "tta_speedup" or claim.effect == "ratio" else claim.unit
    return f"{value:.3g} {unit}"


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


def rows(report: Report) -> list[dict[str, str]]:
    """One row per claim."""
    return [row(r) for r in report.results]


def markdown(report: Report) -> str:
    """reproduce.md: the headline, the verdict rule and the table of claims."""
    lines = [
        "# driftbench reproduce",
        "",
        report.headline(),
        "",
        report.run_time(),
        "",
        f"**{RULE_TITLE.strip()}** {VERDICT_RULE}",
        "",
        "| " + " | ".join(COLUMNS.values()) + " |",
        "|" + " --- |" * len(COLUMNS),
        *("| " + " | ".join(markdown_cell(row[k]) for k in COLUMNS) + " |" for row in rows(report)),
    ]
    return "\n".join(lines) + "\n"


def markdown_cell(text: str) -> str:
    """A table cell's text, its pipes escaped."""
    return text.replace("|", "\\|").replace("\n", " ")


def write_report(report: Report, folder: Path) -> list[Path]:
    """Write reproduce.md and reproduce.csv (one row per claim, ``COLUMNS``) into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(COLUMNS), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows(report))
    paths = [folder / name for name in REPORT_FILES]
    for path, text in zip(paths, [markdown(report), buffer.getvalue()]):
        atomic_write(path, lambda fh, text=text: fh.write(text.encode()))
    return paths


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
