"""The ``reproduce`` page: the README's and docs/reproduce.md's paper-claims blocks and forest plots, from ``results/``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from driftbench.pages.archived import Archived, Missing, judged_papers
from driftbench.pages.claims_markdown import (
    archives_table,
    claims_table,
    counts_table,
    diagnoses_text,
    headline,
    not_yet,
)
from driftbench.pages.forest_files import forest_files, image_link
from driftbench.pages.moved import moved_brief, moved_text, read_then
from driftbench.pages.render import Block, Rendered
from driftbench.reproduce.forest import CAPTION, forests

README, PAGE = "README.md", "docs/reproduce.md"


def paragraphs(*parts: Sequence[str]) -> str:
    """The non-empty parts, a blank line between them."""
    return "\n\n".join("\n".join(part).strip("\n") for part in parts if part)


def render_reproduce(root: Path) -> list[Rendered]:
    """Every paper's claims judged on its archive in ``results/`` (or the commands that make it): the blocks, and each
    archived paper's forest plot as its data file and the picture drawn from it."""
    papers = judged_papers(root)
    then = read_then(root)
    archived = [p for p in papers if isinstance(p, Archived)]
    missing = [p for p in papers if isinstance(p, Missing)]
    drawn = [forest for p in archived for forest in forests(p.report.results)]
    figures = [CAPTION, *(image_link(f) for f in drawn)] if drawn else ["No forest plot yet: no paper's runs are archived."]
    blocks = [
        Block(README, "claims-headline", headline(papers)),
        Block(README, "claims-table", paragraphs(counts_table(archived), [moved_brief(archived, then)])),
        Block(
            PAGE,
            "reproduce-headline",
            paragraphs([headline(papers)], counts_table(archived), archives_table(archived), not_yet(missing)),
        ),
        Block(PAGE, "reproduce-forest", "\n\n".join(figures)),
        Block(PAGE, "reproduce-claims", paragraphs(claims_table(archived))),
        Block(PAGE, "reproduce-diagnoses", paragraphs(diagnoses_text(archived))),
        Block(PAGE, "reproduce-moved", paragraphs(moved_text(archived, then))),
    ]
    return [*blocks, *(item for forest in drawn for item in forest_files(forest))]
