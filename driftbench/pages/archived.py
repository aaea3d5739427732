"""Each paper's claims judged on its archive in ``results/``, as ``reproduce --recorded`` judges them, or what makes one.

A paper's archive is ``results/reproduce-<paper>`` (the claim file's name); an archive of part of a report
(``results/reproduce-<paper>-part1``) is never judged, since Holm's correction runs over the paper's whole family: the
page names it and the commands that complete the report.
"""

from __future__ import annotations

import glob
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from driftbench.errors import ConfigError
from driftbench.record.archive import is_archive, open_archive
from driftbench.reproduce.claim import Claim
from driftbench.reproduce.claim_file import claim_files, load_claims, read_claim_file
from driftbench.reproduce.quotes import quote_mismatches
from driftbench.reproduce.report import Report
from driftbench.reproduce.run import reproduce_recorded

SEEDS, SECOND = (0, 1, 2, 3, 4), (5, 6, 7, 8, 9)  # the catalogue's report: its two stages (the verdict rule)
CLAIMS, RESULTS = "claims", "results"


def seed_flags(seeds: tuple[int, ...]) -> str:
    """``0,1,2,3,4``: seeds as a flag takes them."""
    return ",".join(map(str, seeds))


STAGES = f"--seeds {seed_flags(SEEDS)} --second-stage {seed_flags(SECOND)}"


def archive_path(paper: str) -> str:
    """Where a paper's complete report's runs are archived, below the repository's root."""
    return f"{RESULTS}/reproduce-{paper}"


def make_command(paper: str) -> str:
    """The commands that run a paper's report at its two stages on the CPU and archive its runs (its own runs folder,
    so the archive holds no other paper's runs)."""
    runs = f"runs-{paper}"
    return (
        f"driftbench reproduce {paper} {STAGES} --jobs 2 --device cpu --out {runs} && "
        f"driftbench archive {runs} --out {archive_path(paper)}"
    )


@dataclass(frozen=True)
class Archived:
    """A paper judged on its archive: the claim file's name, the archive's path, the report, its bytes and runs."""

    paper: str
    title: str
    archive: str
    report: Report
    size: int
    runs: int

    def commits(self) -> list[tuple[str, int]]:
        """The commits the judged runs ran at (the archive's ``commit`` column), short, with their runs, most first."""
        seen = Counter(
            str(o.record.config().get("git_revision") or "unknown")[:7] for o in self.report.outcomes if o.record is not None
        )
        return seen.most_common()


@dataclass(frozen=True)
class Missing:
    """A paper whose runs are not archived in the repository yet: the claim file's name, the paper's title and the
    archives of parts of its report (``results/reproduce-<paper>-part<N>``, with their runs), never judged."""

    paper: str
    title: str
    parts: tuple[tuple[str, int], ...] = ()


def report_parts(root: Path, paper: str) -> tuple[tuple[str, int], ...]:
    """The archives of parts of a paper's report below ``root``, in their numbers' order, each with its runs."""
    numbered: dict[int, Path] = {}
    for path in (root / RESULTS).glob(f"reproduce-{glob.escape(paper)}-part*"):
        match = re.fullmatch(rf"reproduce-{re.escape(paper)}-part(\d+)", path.name)
        if match and is_archive(path):
            numbered[int(match[1])] = path
    return tuple((f"{RESULTS}/{numbered[n].name}", int(open_archive(numbered[n]).manifest["runs"])) for n in sorted(numbered))


def archive_size(folder: Path) -> int:
    """An archive's bytes on disk: its tables and manifest."""
    return sum(path.stat().st_size for path in folder.iterdir() if path.is_file())


def refuse_stale_quotes(paper: str, claims: Sequence[Claim], archive: Path) -> None:
    """Raise ``ConfigError`` when a diagnosis of ``paper`` quotes a number its archived runs do not give."""
    wrong = quote_mismatches(paper, claims, archive)
    if wrong:
        more = f" (and {len(wrong) - 1} more)" if len(wrong) > 1 else ""
        raise ConfigError(f"{archive}: {wrong[0]}{more}; correct the quote in claims/{paper}.toml")


def judged_papers(root: Path) -> list[Archived | Missing]:
    """Every claim file's paper under ``root``, judged on its archive where ``results/`` holds one, in the files' order."""
    papers: list[Archived | Missing] = []
    for paper, path in claim_files(root / CLAIMS).items():
        archive = root / archive_path(paper)
        if not is_archive(archive):
            papers.append(Missing(paper, read_claim_file(path)[0].title, report_parts(root, paper)))
            continue
        claims = load_claims(root / CLAIMS, [paper])
        refuse_stale_quotes(paper, claims, archive)
        report = reproduce_recorded(claims, archive, SEEDS, SECOND)
        runs = open_archive(archive).manifest["runs"]
        papers.append(Archived(paper, report.results[0].claim.title, archive_path(paper), report, archive_size(archive), runs))
    return papers
