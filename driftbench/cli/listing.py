"""``driftbench list``: the registered traces, methods or sources with a one-line description."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from driftbench.cli.common import Subparsers


def add_parser(sub: Subparsers) -> None:
    """Add ``driftbench list`` and its flags."""
    lst = sub.add_parser("list", help="list traces, methods or sources with a one-line description")
    lst.add_argument("kind", metavar="KIND", choices=["traces", "methods", "sources"], help="traces, methods or sources")
    lst.set_defaults(func=cmd_list)


def cmd_list(args: argparse.Namespace) -> int:
    """``driftbench list``."""
    rows = listing(args.kind)
    width = max((len(name) for name, _ in rows), default=0)
    for name, description in rows:
        print(f"{name:<{width}}  {description}")
    return 0


def listing(kind: str) -> list[tuple[str, str]]:
    """Names and one-line descriptions of the registered traces, methods or sources."""
    if kind == "traces":
        from driftbench.traces.catalog import catalog, load_spec

        return [(name, load_spec(name).description) for name in catalog()]
    if kind == "methods":
        from driftbench.methods.catalog import catalog, load_method

        return [(name, load_method(name).description) for name in catalog()]
    from driftbench.data import SOURCES

    return [(name, source.description) for name, source in sorted(SOURCES.items())]
