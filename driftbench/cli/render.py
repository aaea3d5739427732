"""``driftbench render``: the README's and the docs' published tables and figures, re-rendered from ``results/``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from driftbench.cli.common import Subparsers

DESCRIPTION = (
    "Render every published number from the archives in the repository's results/ folder, with no run: the blocks "
    "between '<!-- --8<-- [start:NAME] -->' and '[end:NAME]' markers in README.md and docs/, the data files of the "
    "figures, and the figures drawn from them. --check renders into memory and fails (exit status 1) on the first "
    "block or data file that differs from the repository's copy, naming it and the line; CI runs it, so a page "
    "never disagrees with the archives it quotes."
)
EXAMPLE = "examples:\n  driftbench render                 write the pages\n  driftbench render --check         what CI runs"


def add_parser(sub: Subparsers) -> None:
    """Add ``driftbench render`` and its flags."""
    from driftbench.cli.common import add_command

    line = "render the README's and the docs' tables and figures from the archives in results/"
    render = add_command(sub, "render", line, DESCRIPTION, EXAMPLE)
    render.add_argument("pages", nargs="*", metavar="PAGE", help="the pages to render (default: every one)")
    render.add_argument("--root", type=Path, default=Path("."), help="the repository's root (default: here)")
    render.add_argument("--check", action="store_true", help="write nothing; fail on the first difference")
    render.add_argument("--verbose", dest="quiet", action="store_false", help="log each archived run as it is read")
    render.set_defaults(func=cmd_render, quiet=True)


def cmd_render(args: argparse.Namespace) -> int:
    """``driftbench render``: write the rendered pages, or with ``--check`` name the first that differs."""
    from driftbench.errors import ConfigError
    from driftbench.pages.catalog import PAGES
    from driftbench.pages.render import first_difference, write_rendered

    unknown = sorted(set(args.pages) - set(PAGES))
    if unknown:
        raise ConfigError(f"unknown page {', '.join(unknown)}; the pages are {', '.join(sorted(PAGES))}")
    for name in args.pages or sorted(PAGES):
        rendered = PAGES[name](args.root)
        if args.check:
            difference = first_difference(args.root, rendered)
            if difference:
                print(f"error: page '{name}' differs from its render: {difference}; run driftbench render {name}")
                return 1
            print(f"{name}: as rendered")
        else:
            changed = write_rendered(args.root, rendered)
            print(f"{name}: {', '.join(dict.fromkeys(changed)) if changed else 'unchanged'}")  # a page of blocks once
    return 0
