"""What became of runs: a run's outcome and its states, and how a command reports them."""

from __future__ import annotations

import traceback
from dataclasses import dataclass, field

from driftbench.errors import DriftbenchError, one_line
from driftbench.record.runs import RunRecord
from driftbench.record.schema import Summary

LOCKED = "running elsewhere"  # the state of a run whose folder another process holds

NOT_RECORDED = "not recorded"  # the state of a run that policy "recorded" did not find and did not run


@dataclass(frozen=True)
class RunOutcome:
    """What became of one run: ``ran``, ``skipped`` (up to date), ``running elsewhere``, ``not recorded`` or ``failed``."""

    label: str
    state: str
    status: str | None  # the summary's status ("ok" | "diverged"); None when the run failed
    seconds: float
    error: str = ""
    record: RunRecord | None = field(default=None, repr=False)  # the finished run's record: its summary, rows, config
    error_trace: str = field(default="", repr=False)  # for failures that are not driftbench's own errors (bugs)
    exit_code: int = 0  # of the error, for a run that did not finish

    @property
    def summary(self) -> Summary | None:
        """The finished run's summary; None when the run did not finish."""
        return None if self.record is None else self.record.summary


def failed(label: str, exc: Exception, seconds: float) -> RunOutcome:
    """The outcome of a run that ``exc`` stopped (with the traceback when it is not one of driftbench's own errors)."""
    trace = "" if isinstance(exc, DriftbenchError) else traceback.format_exc()
    code = exc.exit_code if isinstance(exc, DriftbenchError) else 1
    return RunOutcome(label, "failed", None, seconds, error=one_line(exc), error_trace=trace, exit_code=code)


def outcome_table(outcomes: list[RunOutcome]) -> list[dict[str, str]]:
    """One printable row per run."""
    return [
        {"run": o.label, "state": o.state, "status": o.status or "-", "seconds": f"{o.seconds:.1f}", "error": o.error or "-"}
        for o in outcomes
    ]


def outcome_line(outcomes: list[RunOutcome]) -> str:
    """The count of each state: ``N ran, N skipped (up to date)[, N running elsewhere][, N not recorded], N failed``."""
    states = [o.state for o in outcomes]
    elsewhere = "".join(f", {states.count(state)} {state}" for state in (LOCKED, NOT_RECORDED) if state in states)
    counts = f"{states.count('ran')} ran, {states.count('skipped')} skipped (up to date)"
    return f"{counts}{elsewhere}, {states.count('failed')} failed"


def unfinished_exit(outcomes: list[RunOutcome]) -> int:
    """The exit status of runs that did not finish: the highest of their errors' (0 when all finished)."""
    return max((o.exit_code for o in outcomes), default=0)
