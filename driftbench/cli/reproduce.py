"""``driftbench reproduce``: check the papers' claims on the benchmark."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from driftbench.cli.common import add_log, add_scale, seed_list, text_table, tracking_of

if TYPE_CHECKING:
    from driftbench.cli.common import Subparsers
    from driftbench.reproduce.claim import Claim
    from driftbench.runner import Execution, PoolOptions


def add_parser(sub: Subparsers) -> None:
    """Add ``driftbench reproduce`` and its flags."""
    repro = sub.add_parser(
        "reproduce",
        help="check each paper's claims (claims/*.toml) on the benchmark: reproduced, direction only, not reproduced, "
        "inconclusive, deterministic, invalid premise or untestable",
        description="Run what the claims need (through the sweep: finished runs are skipped), then write reproduce.md and "
        "reproduce.csv, one row per claim: the paper's figure, driftbench's (mean +/- std over seeds) and a verdict. "
        "Exit status 0 whatever the verdicts.",
    )
    repro.add_argument("papers", nargs="*", metavar="PAPER", help="papers to check, by claim file name (default: all)")
    repro.add_argument(
        "--seeds", type=seed_list, metavar="0,1,2", help="run seeds (default 0,1,2; with --calibrate, each calibration's own)"
    )
    repro.add_argument(
        "--second-stage",
        type=seed_list,
        metavar="5,6,7",
        help="seeds a second stage runs for the claims the first (--seeds) leaves inconclusive, judged on both; as many "
        "as --seeds, none of them: each look then tests at Pocock's level 0.0147, and the literal twins, judged once, "
        "at 0.025 (the verdict rule; default: one stage, 0.025). The catalogue's report: --seeds 0,1,2,3,4 "
        "--second-stage 5,6,7,8,9",
    )
    repro.add_argument(
        "--calibrate",
        action="store_true",
        help="instead of judging claims, re-run the reference baseline of each claim's calibrated_to on the claim's "
        "setting and print its final accuracy beside the recorded one and the paper's (writes calibration.csv)",
    )
    add_scale(repro)
    repro.add_argument(
        "--backend", default="local", choices=["local", "ray"], help="local process pool or Ray tasks (default local)"
    )
    repro.add_argument(
        "--jobs", type=int, help="concurrent runs (local) or CPUs of a Ray cluster started here (default: CPU count)"
    )
    repro.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"], help="compute device (default auto)")
    repro.add_argument(
        "--out",
        type=Path,
        default=Path("runs"),
        help="root of the run records (default runs/); with --recorded, an archive too (driftbench archive), then with --report",
    )
    repro.add_argument("--claims", type=Path, metavar="DIR", help="folder of claim files (default: the repository's claims/)")
    repro.add_argument("--report", type=Path, metavar="DIR", help="folder for reproduce.md and reproduce.csv (default: --out)")
    repro.add_argument(
        "--recorded",
        action="store_true",
        help="run nothing: judge the claims on the runs already recorded under --out, a runs folder or an archive (a "
        "look at a long report while it runs); a claim missing a run reads untestable, 'not recorded yet'",
    )
    repro.add_argument("--quiet", action="store_true", help="no progress bar or log lines")
    add_log(repro)
    repro.set_defaults(func=cmd_reproduce, rerun=True)  # Ctrl-C: rerunning resumes (main)


def cmd_reproduce(args: argparse.Namespace) -> int:
    """``driftbench reproduce``."""
    from driftbench.errors import ConfigError
    from driftbench.record.archive import is_archive
    from driftbench.reproduce.claim_file import load_claims
    from driftbench.reproduce.report import rows, write_report
    from driftbench.reproduce.run import reproduce, reproduce_recorded
    from driftbench.runner import Execution, PoolOptions

    if is_archive(args.out) and not (args.recorded and args.report):
        raise ConfigError(f"--out {args.out}: an archive, which reproduce reads with --recorded and --report DIR only")
    claims = load_claims(args.claims, args.papers)
    pool = PoolOptions(args.backend, args.jobs, quiet=args.quiet)
    execution = Execution(args.device, args.out, resume="recorded" if args.recorded else "matching", threads=pool.threads)
    if args.log:  # each run tagged with the papers and claims that use it
        execution = replace(execution, tracking=tracking_of(args.log, args.out))
    if args.calibrate:
        return cmd_calibrate(args, claims, pool, execution)
    seeds, second = tuple(args.seeds or (0, 1, 2)), tuple(args.second_stage or ())
    if args.recorded and not args.log:  # the path the rendered pages judge their archives on
        report = reproduce_recorded(claims, args.out, seeds, second, args.scale, pool)
    else:
        report = reproduce(claims, seeds, args.scale, pool, execution, second)
    paths = write_report(report, args.report or args.out)
    columns = ("paper", "id", "kind", "paper_value", "ours", "ratio", "verdict", "reason")
    print(text_table([{k: row[k] for k in columns} for row in rows(report)]))
    print(report.headline())
    print(report.run_time())
    print(f"wrote {', '.join(str(p) for p in paths)}")
    return 0


def cmd_calibrate(args: argparse.Namespace, claims: list[Claim], pool: PoolOptions, execution: Execution) -> int:
    """``driftbench reproduce --calibrate``: the calibrations re-run, printed and written to calibration.csv."""
    from driftbench.reproduce.calibrate import calibrate, headline, write_calibration

    measured = calibrate(claims, tuple(args.seeds) if args.seeds else None, args.scale, pool, execution)
    table = [m.row() for m in measured]
    print(text_table(table))
    print(headline(measured))
    print(f"wrote {write_calibration(table, args.report or args.out)}")
    return 0
