"""``driftbench check-method``: run the method contract on one method (a plug-in's, say)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from driftbench.cli.common import add_sets
from driftbench.config import parse_sets

if TYPE_CHECKING:
    from driftbench.cli.common import Subparsers


def add_parser(sub: Subparsers) -> None:
    """Add ``driftbench check-method`` and its flags."""
    contract = sub.add_parser(
        "check-method",
        help="check that a method (a plug-in's, say) keeps the method contract the built-ins are tested with",
        description="Run the method twice on a tiny label-swap trace: it must end ok, give identical metrics, and "
        "record the model traffic its plans declare. Exit 1 with the broken clauses otherwise.",
    )
    contract.add_argument("name", metavar="NAME", help="method name (see 'driftbench list methods')")
    add_sets(contract, "method.KEY or KEY: a method parameter")
    contract.add_argument("--out", type=Path, help="keep the two runs' records here (default: a temporary folder)")
    contract.set_defaults(func=cmd_check_method)


def cmd_check_method(args: argparse.Namespace) -> int:
    """``driftbench check-method``."""
    import tempfile

    from driftbench.contracts import contract_failures
    from driftbench.methods.catalog import load_method

    sets = {k.removeprefix("method."): v for k, v in parse_sets(args.set).items()}
    method = load_method(args.name, sets or None)
    with tempfile.TemporaryDirectory() as scratch:
        failures = contract_failures(method, args.out or Path(scratch))
    if failures:
        print(f"check-method {args.name}: breaks the method contract:")
        print("\n".join(f"  - {failure}" for failure in failures))
        return 1
    kept = "2 tiny label-swap runs: ok, identical, traffic as declared, state checkpoints"
    print(f"check-method {args.name}: keeps the method contract ({kept})")
    return 0
