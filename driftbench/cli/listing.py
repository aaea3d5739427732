"""``driftbench list``: the registered traces, methods or sources with a one-line description."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from driftbench.cli.common import Subparsers


def add_parser(sub: Subparsers) -> None:
    """Add ``driftbench list`` and its flags."""
    lst = sub.add_parser("list", help="list traces, methods or sources with a one-line description")
    kinds = ["traces", "methods", "sources"]
    lst.add_argument("kind", metavar="KIND", choices=kinds, help="traces (with their kind of drift), methods or sources")
    lst.set_defaults(func=cmd_list)


def cmd_list(args: argparse.Namespace) -> int:
    """``driftbench list``."""
    rows = listing(args.kind)
    width = max((len(name) for name, _ in rows), default=0)
    for name, description in rows:
        print(f"{name:<{width}}  {description}")
    return 0


def listing(kind: str) -> list[tuple[str, str]]:
    """Names and one-line descriptions of the registered traces (led by their kind of drift), methods or sources."""
    if kind == "traces":
        from driftbench.traces.catalog import DRIFT_KINDS, catalog, load_spec

        width = max(len(drift) for drift in DRIFT_KINDS)
        return [(name, f"{spec.drift or '-':<{width}}  {spec.description}") for name in catalog() for spec in [load_spec(name)]]
    if kind == "methods":
        from driftbench.methods.catalog import catalog, load_method

        return [(name, load_method(name).description) for name in catalog()]
    from driftbench.data import SOURCES

    return [(name, source.description) for name, source in sorted(SOURCES.items())]
