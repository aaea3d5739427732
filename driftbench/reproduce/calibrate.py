"""``driftbench reproduce --calibrate``: the reference baseline of each calibrated stand-in, run at its calibration seeds."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from driftbench.atomic import atomic_write
from driftbench.config import require
from driftbench.record.runs import RunRecord
from driftbench.reproduce.claim import CALIBRATION_TOLERANCE, Calibration, Claim, MethodRun
from driftbench.reproduce.metrics import Context, metric_spec
from driftbench.reproduce.planning import Setting, plan_needs
from driftbench.reproduce.run import execute_plan
from driftbench.runner import Execution, PoolOptions

ACCURACY_POINTS = 100.0


@dataclass(frozen=True)
class Measured:
    """One calibration re-run: the setting and method, the claims that share it, what they record and what ran now."""

    setting: Setting
    calibration: Calibration
    claims: tuple[str, ...]
    seeds: tuple[int, ...]
    accuracy: tuple[float, ...] | str  # the calibration's accuracy per seed in points, or why a run has none

    def mean(self) -> float | None:
        """The measured accuracy's mean over the seeds, in points; None if a run failed."""
        return None if isinstance(self.accuracy, str) else float(np.mean(self.accuracy))

    def row(self) -> dict[str, str]:
        """The row ``--calibrate`` prints and writes: recorded and measured accuracy, and the measured residual."""
        cal = self.calibration
        measured, residual = "-", str(self.accuracy)
        if not isinstance(self.accuracy, str):
            mean = float(np.mean(self.accuracy))
            spread = f" ± {np.std(self.accuracy, ddof=1):.2f}" if len(self.accuracy) > 1 else ""
            measured, residual = f"{mean:.2f}{spread}", f"{mean - cal.paper:+.2f}"
        sets = ",".join(f"{k}={v}" for k, v in self.setting.sets) or "defaults"
        return {
            "claims": " ".join(self.claims),
            "setting": f"{self.setting.trace} ({sets})",
            "method": MethodRun(cal.method, cal.method_sets).label,
            "metric": cal.metric,
            "seeds": ",".join(map(str, self.seeds)),
            "paper": f"{cal.paper:.2f}",
            "recorded": f"{cal.ours:.2f}",
            "measured": measured,
            "residual": residual,
        }


def calibrate(
    claims: Sequence[Claim], seeds: tuple[int, ...] | None, scale: str, pool: PoolOptions, execution: Execution
) -> list[Measured]:
    """Run each calibrated setting's reference at ``seeds`` (default: the recorded ones); their final or peak accuracies.

    A claim on a stand-in for data that is not here (CIFAR-10, FIELDING's traces) records in ``calibrated_to`` how close
    a reference baseline lands to the paper's figure for that table: its final accuracy in points (or its peak, where the
    table prints that), at seeds the report does not use. This re-runs that baseline on the claim's setting (once per
    setting, method and seeds, however many claims share it), to set the measured accuracy beside the recorded one.
    """
    groups: dict[tuple[Setting, Calibration, tuple[int, ...]], list[str]] = {}
    for claim in claims:
        if claim.calibrated_to:
            cal = claim.calibrated_to
            setting = Setting.of(claim, scale)
            setting = Setting(setting.trace, tuple(sorted({**dict(setting.sets), **dict(cal.sets)}.items())))
            key = (setting, replace(cal, sets=()), seeds or cal.seeds)  # the same runs, however the setting was reached
            groups.setdefault(key, []).append(claim.key)
    require(bool(groups), f"--calibrate: none of the {len(claims)} claims has calibrated_to (docs/reproduce.md)")
    measured = []
    for (setting, cal, at), keys in groups.items():
        method = MethodRun(cal.method, cal.method_sets)
        outcomes = execute_plan(plan_needs({setting: [method]}, at, execution), pool)
        summaries = [outcomes[(setting, method, seed)] for seed in at]
        failed = next((o for o in summaries if o.summary is None or o.summary.status != "ok"), None)
        accuracy: tuple[float, ...] | str = (
            f"run {failed.label} did not finish ok"
            if failed
            else tuple(ACCURACY_POINTS * accuracy_of(o.record, cal.metric) for o in summaries if o.record)
        )
        measured.append(Measured(setting, cal, tuple(keys), at, accuracy))
    return measured


def accuracy_of(record: RunRecord, metric: str) -> float:
    """A finished run's final or peak accuracy (a calibration's ``metric``), as a fraction."""
    assert record.summary is not None  # calibrate reads finished runs
    value = metric_spec(metric).read(record.summary, Context(rows=record.rounds))
    require(value is not None, f"--calibrate: run {record.path} has no {metric}")
    assert value is not None  # require()d above
    return value


def headline(measured: Sequence[Measured]) -> str:
    """How many calibrations land within the tolerance of the paper's figure, as measured now."""
    means = [(m.mean(), m.calibration.paper) for m in measured]
    within = sum(ours is not None and abs(ours - paper) <= CALIBRATION_TOLERANCE for ours, paper in means)
    failed = sum(ours is None for ours, _ in means)
    return f"{len(measured)} calibrations: {within} within {CALIBRATION_TOLERANCE:g} points of the paper's, {failed} failed."


def write_calibration(table: list[dict[str, str]], folder: Path) -> Path:
    """``folder/calibration.csv``: one row per calibration re-run."""
    folder.mkdir(parents=True, exist_ok=True)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(table[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(table)
    path = folder / "calibration.csv"
    atomic_write(path, lambda fh: fh.write(buffer.getvalue().encode()))
    return path
