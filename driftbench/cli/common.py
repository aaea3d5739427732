"""What the commands share: the argument helpers and the text table their output uses."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from driftbench.errors import ConfigError
from driftbench.tracking.destinations import Destination, Tracking, destination

if TYPE_CHECKING:
    Subparsers: TypeAlias = argparse._SubParsersAction[argparse.ArgumentParser]

LOG_HELP = (
    "tensorboard (event files in ./tensorboard, or the folder WHERE) or mlflow (the store $MLFLOW_TRACKING_URI, "
    "else sqlite:///mlflow.db here, or the tracking URI WHERE); needs the extra 'tracking'"
)


def never(args: argparse.Namespace) -> bool:
    """A command that starts no fork server early."""
    return False


def leaves(p: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """The parsers of the commands that run (``p`` itself when it has no subcommands)."""
    subs = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
    return [leaf for a in subs for child in dict.fromkeys(a.choices.values()) for leaf in leaves(child)] or [p]


def add_command(sub: Subparsers, name: str, line: str, description: str, example: str) -> argparse.ArgumentParser:
    """A command's parser with its one-line help, its description and its example, shown as written."""
    formatter = argparse.RawDescriptionHelpFormatter
    return sub.add_parser(name, help=line, description=description, epilog=example, formatter_class=formatter)


def add_sets(p: argparse.ArgumentParser, keys: str) -> None:
    """Add the repeatable ``--set key=value`` option."""
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=f"override a setting ({keys}); a list is 0,2 or [0, 2], a table {{classes = 10}}, as in TOML files",
    )


def add_scale(p: argparse.ArgumentParser) -> None:
    """Add ``--scale embedded|paper``: a named trace's offline default or its paper setup (``[scale.paper]``)."""
    p.add_argument(
        "--scale",
        default="embedded",
        choices=["embedded", "paper"],
        help="embedded: offline default (the default); paper: the paper's setup from the trace's [scale.paper]",
    )


def add_trace_source(p: argparse.ArgumentParser) -> None:
    """Add the trace to read (a name or a file) with its ``--set``, ``--scale`` and ``--data-root``."""
    p.add_argument("name", help="trace name or trace file")
    add_sets(p, "KEY: trace parameter, source or source.KEY")
    add_scale(p)
    add_data_root(p)


def add_data_root(p: argparse.ArgumentParser) -> None:
    """Add ``--data-root DIR``: the folder of a real source's files (sets ``source.root``)."""
    p.add_argument(
        "--data-root",
        type=Path,
        metavar="DIR",
        help="folder of a real data source's files, downloaded there when missing (default ~/.cache/driftbench/<source>)",
    )


def data_root_sets(args: argparse.Namespace) -> dict[str, str]:
    """``--data-root`` as a ``source.root`` override (sources that read no files ignore it)."""
    return {"source.root": str(args.data_root.expanduser().resolve())} if args.data_root else {}


def split_method_sets(sets: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """Separate ``method.KEY`` overrides from the trace's."""
    method = {k.removeprefix("method."): v for k, v in sets.items() if k.startswith("method.")}
    return {k: v for k, v in sets.items() if not k.startswith("method.")}, method


def comma_list(value: str) -> list[str]:
    """``a,b`` -> ``["a", "b"]``."""
    return [v.strip() for v in value.split(",") if v.strip()]


def seed_list(value: str) -> list[int]:
    """``0,1,2`` -> ``[0, 1, 2]``."""
    try:
        seeds = [int(v) for v in comma_list(value)]
    except ValueError:
        seeds = []
    if not seeds or min(seeds) < 0:
        raise argparse.ArgumentTypeError(f"{value!r}: expected comma-separated integers >= 0")
    return seeds


def text_table(rows: list[dict[str, str]]) -> str:
    """Rows of text cells as aligned columns under their keys."""
    headers = list(rows[0])
    widths = [max(len(h), *(len(str(r[h])) for r in rows)) for h in headers]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths))]
    lines += ["  ".join(str(r[h]).ljust(w) for h, w in zip(headers, widths)) for r in rows]
    return "\n".join(lines)


def log_destination(value: str) -> Destination:
    """``--log TRACKER[=WHERE]`` as a destination (an unknown tracker is a usage error)."""
    try:
        return destination(value)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix(f"--log {value!r}: ")) from None


def add_log(p: argparse.ArgumentParser) -> None:
    """Add the repeatable ``--log TRACKER[=WHERE]``: the trackers every run logs to, live."""
    p.add_argument(
        "--log",
        action="append",
        default=[],
        type=log_destination,
        metavar="TRACKER[=WHERE]",
        help=f"log every run live, each evaluation as it happens, to {LOG_HELP} (repeatable; see docs/trackers.md)",
    )


def tracking_of(log: list[Destination] | tuple[Destination, ...], out: Path) -> Tracking:
    """The trackers of ``--log`` for runs under ``out``, each opened once here (``driftbench.tracking.feed.check``)."""
    from driftbench.tracking.feed import check

    tracking = Tracking(tuple(dict.fromkeys(log)), str(out.resolve()))
    check(tracking)
    return tracking
