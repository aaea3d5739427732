"""The Markdown of the papers judged on their archives: counts, the headline, each claim's row, the diagnoses."""

from __future__ import annotations

from collections.abc import Sequence

from driftbench.pages.archived import SECOND, SEEDS, Archived, Missing, archive_path, make_command
from driftbench.reproduce.judging import ClaimResult, seed_range
from driftbench.reproduce.report import COLUMNS, diagnoses, markdown_cell, rows
from driftbench.reproduce.verdict import DIRECTION_ONLY, INCONCLUSIVE, INVALID_PREMISE, NOT_REPRODUCED, REPRODUCED, VERDICTS

RENDER = "`driftbench render`"
OWN = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE)  # the driftbench claims' columns, the rest counted as other
TWINS = (REPRODUCED, DIRECTION_ONLY, NOT_REPRODUCED, INCONCLUSIVE, INVALID_PREMISE)  # the literal twins', the rest other
COUNT_HEADINGS = (
    "paper",
    "paper claims",
    *VERDICTS,
    "driftbench claims (reproduced / not / inconclusive / other)",
    "literal twins (reproduced / direction only / not / inconclusive / invalid premise / other)",
)
CLAIM_COLUMNS = ("paper", "id", "kind", "paper_value", "ours", "interval", "ratio", "verdict", "reason", "diagnosis")
STAGES_TEXT = f"seeds {seed_range(SEEDS)}, then {seed_range(SECOND)} for the claims the first look leaves inconclusive"


def paper_claims(results: Sequence[ClaimResult]) -> list[str]:
    """The verdicts of the paper's own claims: neither driftbench claims nor literal twins."""
    return [r.verdict for r in results if r.claim.kind != "driftbench" and not r.claim.literal]


def split(verdicts: list[str], shown: Sequence[str]) -> str:
    """``N: a / b / ... / other``: how many, each of ``shown``, then the rest."""
    counts = [verdicts.count(v) for v in shown]
    return f"{len(verdicts)}: {' / '.join(map(str, [*counts, len(verdicts) - sum(counts)]))}"


def table(headings: Sequence[str], body: Sequence[Sequence[str]]) -> list[str]:
    """A Markdown table, its cells' pipes escaped."""
    lines = ["| " + " | ".join(headings) + " |", "|" + " --- |" * len(headings)]
    return lines + ["| " + " | ".join(markdown_cell(cell) for cell in row) + " |" for row in body]


def counts_table(archived: Sequence[Archived]) -> list[str]:
    """Per archived paper: its paper claims by verdict, its driftbench claims and its literal twins apart."""
    body = []
    for paper in archived:
        results = paper.report.results
        own = paper_claims(results)
        driftbench = [r.verdict for r in results if r.claim.kind == "driftbench" and not r.claim.literal]
        twins = [r.verdict for r in results if r.claim.literal]
        body.append(
            [
                paper.title,
                str(len(own)),
                *(str(own.count(v)) for v in VERDICTS),
                split(driftbench, OWN),
                split(twins, TWINS) if twins else "-",
            ]
        )
    return table(COUNT_HEADINGS, body) if body else []


def not_yet(missing: Sequence[Missing]) -> list[str]:
    """One line per paper not archived yet: its runs are not in the repository, or only parts of them (never judged,
    Holm's family being the whole report's), and the commands that make or complete them."""
    return [not_yet_line(m) for m in missing]


def not_yet_line(paper: Missing) -> str:
    """A paper not archived yet: the commands that make its runs, after unpacking the parts archived already."""
    if not paper.parts:
        return f"- **{paper.title}**: its runs are not in the repository yet; `{make_command(paper.paper)}` makes them."
    parts = ", ".join(f"`{path}` ({runs} runs)" for path, runs in paper.parts)
    unpack = " && ".join(f"driftbench unpack {path} --out runs-{paper.paper}" for path, _ in paper.parts)
    return (
        f"- **{paper.title}**: part of its runs are in the repository, {parts}, not judged until its report is complete; "
        f"`{unpack} && {make_command(paper.paper)}` completes them."
    )


def commits_text(paper: Archived) -> str:
    """The commits a paper's judged runs ran at: ``d69a500`` or ``d69a500 (150 runs), 9502d9b (46 runs)``."""
    commits = paper.commits()
    if len(commits) == 1:
        return commits[0][0]
    return ", ".join(f"{commit} ({runs} runs)" for commit, runs in commits)


def headline(papers: Sequence[Archived | Missing]) -> str:
    """The sentence over every archived paper: the paper claims judged by verdict, the seeds, the commits, the command."""
    archived = [p for p in papers if isinstance(p, Archived)]
    missing = [p.title for p in papers if isinstance(p, Missing)]
    if not archived:
        return (
            f"No paper's runs are archived in `results/` yet, so no claim is judged here: each paper's line below "
            f"gives the commands that make its archive, judged at {STAGES_TEXT}. {RENDER} renders this from `results/`."
        )
    verdicts = [v for p in archived for v in paper_claims(p.report.results)]
    counts = ", ".join(f"{verdicts.count(v)} {v}" for v in VERDICTS)
    ran = "; ".join(f"{p.title} at {commits_text(p)}" for p in archived)
    rest = f" Not archived yet: {', '.join(missing)}." if missing else ""
    return (
        f"Of the {len(verdicts)} paper claims of {', '.join(p.title for p in archived)}, judged on their archived runs "
        f"(`results/reproduce-<paper>`; {STAGES_TEXT}): {counts}. The runs ran at: {ran}. {RENDER} renders this from "
        f"`results/` with no run, as `driftbench reproduce PAPER --recorded` judges each archive.{rest}"
    )


def archives_table(archived: Sequence[Archived]) -> list[str]:
    """Per archived paper: its archive, runs, size, the commits its runs ran at and their recorded walls, summed."""
    headings = ("paper", "archive", "runs", "size", "commits", "runs' walls (one process each)")
    body = [
        [
            p.title,
            f"`{archive_path(p.paper)}`",
            str(p.runs),
            f"{p.size / 1024:.0f} KiB",
            commits_text(p),
            f"{p.report.paper_seconds.get(p.title, 0.0) / 3600:.2f} h",
        ]
        for p in archived
    ]
    return table(headings, body) if body else []


def claims_table(archived: Sequence[Archived]) -> list[str]:
    """Every claim of the archived papers, a row each as reproduce.md's (its diagnosis by id and kind)."""
    body = [[row[k] for k in CLAIM_COLUMNS] for p in archived for row in rows(p.report, brief=True)]
    return table([COLUMNS[k] for k in CLAIM_COLUMNS], body) if body else [NOTHING_JUDGED]


NOTHING_JUDGED = "No claim is judged here yet: no paper's runs are archived in `results/` (the headline above)."


def diagnoses_text(archived: Sequence[Archived]) -> list[str]:
    """Each diagnosis the rows name, once per paper, with the claims that name it, its evidence and its command."""
    listed = [line for p in archived for line in diagnoses(p.report.results)]
    return listed or [NOTHING_JUDGED]
