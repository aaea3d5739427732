"""What moved since the report on the runs at 83fbd63: each archived claim whose verdict changed, and what decided it.

That report's verdicts are data, extracted once from its last pasted render into ``results/reproduce-83fbd63.csv``
(``results/README.md`` gives the command).
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path

from driftbench.errors import ConfigError
from driftbench.pages.archived import Archived
from driftbench.pages.claims_markdown import table
from driftbench.reproduce.judging import ClaimResult
from driftbench.reproduce.verdict import DECISIONS

THEN = "83fbd63"
THEN_FILE = f"results/reproduce-{THEN}.csv"
THEN_COLUMNS = ("paper", "claim", "verdict")
Verdicts = dict[tuple[str, str], str]  # (paper's title, claim label) -> verdict


def read_then(root: Path) -> Verdicts:
    """The 83fbd63 report's verdicts; a file missing, unreadable or of other columns is a ConfigError naming it."""
    path = root / THEN_FILE
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            found = list(reader)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ConfigError(f"{path}: unreadable verdicts of the {THEN} report ({exc})") from None
    if tuple(reader.fieldnames or ()) != THEN_COLUMNS:
        raise ConfigError(f"{path}: columns {reader.fieldnames}: expected {list(THEN_COLUMNS)}")
    return {(row["paper"], row["claim"]): row["verdict"] for row in found}


def decided_by(result: ClaimResult) -> str:
    """What gave a claim its verdict now: the decision table's row it met (``DECISIONS``), or for an untested claim
    (a premise, one value, a target never reached, no runs) its reason."""
    if result.decision is None:
        return result.reason
    return f"decision table row {list(DECISIONS).index(result.decision) + 1}: {DECISIONS[result.decision].meets}"


def moved_rows(archived: Sequence[Archived], then: Verdicts) -> list[list[str]]:
    """Each claim of the archived papers whose verdict differs from the 83fbd63 report's (``-``: absent there or now)."""
    body = []
    for paper in archived:
        now = {(r.claim.title, r.claim.label): r for r in paper.report.results}
        for key, result in now.items():
            old = then.get(key, "-")
            if old != result.verdict:
                body.append([*key, old, result.verdict, decided_by(result)])
        gone = [key for key in then if key[0] == paper.title and key not in now]
        body += [[*key, then[key], "-", "no longer a claim of claims/"] for key in gone]
    return body


def moved_text(archived: Sequence[Archived], then: Verdicts) -> list[str]:
    """The block: how many of the archived papers' claims moved since 83fbd63, and each with what decided it."""
    source = f"`{THEN_FILE}`, {len(then)} claims"
    if not archived:
        return [f"No paper is archived yet, so nothing is set beside the {THEN} report's verdicts ({source})."]
    titles = [p.title for p in archived]
    body = moved_rows(archived, then)
    count = sum(1 for key in then if key[0] in titles)
    lines = [
        f"{len(body)} claims of {', '.join(titles)} have another verdict than in the {THEN} report ({source}, {count} "
        "of them of these papers), a claim new or gone since included: each with the row of the verdict rule's "
        "decision table that decided its verdict now or, where no test was made, the reason.",
    ]
    if body:
        lines += ["", *table(("paper", "claim", THEN, "now", "decided by"), body)]
    return lines


def moved_brief(archived: Sequence[Archived], then: Verdicts) -> str:
    """The README's line: per archived paper, each claim that moved since 83fbd63, old verdict to new, grouped."""
    if not archived:
        return ""
    groups: dict[tuple[str, str, str], list[str]] = {}
    for paper, claim, old, new, _ in moved_rows(archived, then):
        groups.setdefault((paper, old, new), []).append(claim)
    if not groups:
        return f"No verdict moved since the {THEN} report."
    parts = [f"{paper}: {', '.join(claims)} {old} → {new}" for (paper, old, new), claims in groups.items()]
    return f"Moved since the {THEN} report (why: [What moved](docs/reproduce.md#what-moved-since-the-{THEN}-report)): " + (
        "; ".join(parts) + "."
    )
