"""A run's folder: config.json when it starts, the configuration check on resume, rounds.csv and summary.json at the end.

The recorder also feeds the run's trackers (``driftbench.tracking``): each evaluation and method event as
the rounds go, the summary once the record is written, so a tracker holds the record's own numbers.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from driftbench.errors import ConfigError
from driftbench.methods.events import EventLog
from driftbench.record.files import (
    CHECKPOINT,
    CONFIG,
    DIAGNOSTICS,
    EVENTS,
    ROUNDS,
    SUMMARY,
    clear_results,
    config_difference,
    read_json,
    write_json,
)
from driftbench.record.runs import read_records
from driftbench.record.schema import (
    RoundRow,
    Summary,
    read_rounds,
    read_summary,
    run_state,
    write_diagnostics,
    write_events,
    write_rounds,
    write_summary,
)
from driftbench.scheduler import checkpoint
from driftbench.tracking.destinations import NO_TRACKING, Tracking
from driftbench.tracking.feed import Feed

log = logging.getLogger(__name__)


class Recorder:
    """The record of the run in ``out`` whose configuration is ``config``, and its feed to the trackers of ``tracking``."""

    def __init__(self, out: Path, config: dict[str, Any], tracking: Tracking = NO_TRACKING) -> None:
        self.out, self.config = out, config
        self.checkpoint_dir = out / CHECKPOINT
        self.feed = Feed.open(tracking, out, config)

    def state(self, resume: bool) -> str:
        """``absent`` (start afresh), ``incomplete`` (continue) or the stored status (complete); absent without ``resume``."""
        if not resume:
            return "absent"
        state = run_state(self.out)
        if state != "absent":
            self.check_config(read_json(self.out / CONFIG))
        return state

    def start(self) -> None:
        """Begin a fresh record: no checkpoint, no results, this configuration."""
        checkpoint.remove(self.checkpoint_dir)
        clear_results(self.out)
        write_json(self.out / CONFIG, self.config)
        self.feed.start()

    def resumed(self, next_round: int, rows: list[RoundRow], events: EventLog) -> None:
        """Continue the record at ``next_round``: the trackers' logs start afresh with the rows and events restored."""
        self.feed.start()
        self.feed.advance(next_round - 1, rows, events.rows)

    def track(self, rnd: int, rows: list[RoundRow], events: EventLog) -> None:
        """Round ``rnd`` is done: hand the trackers its evaluation (if any) and events."""
        self.feed.advance(rnd, rows, events.rows)

    def check_config(self, stored: dict[str, Any]) -> None:
        """Refuse to resume a run whose stored configuration differs from this one."""
        difference = config_difference(stored, self.config)
        if difference:
            key, before, now = difference
            raise ConfigError(
                f"--resume: {self.out / CONFIG} has {key} = {before!r} but this run has {now!r}; "
                "rerun with the stored settings or without --resume"
            )

    def stored_summary(self) -> Summary:
        """The summary of a complete run, its rounds.csv read too: a damaged record raises ``RecordError`` naming the file."""
        log.info("%s is complete; --resume keeps it", self.out)
        summary = read_summary(self.out / SUMMARY)
        read_rounds(self.out / ROUNDS)
        self.feed.push(lambda: read_records([self.out])[0])
        return summary

    def finish(self, rows: list[RoundRow], events: EventLog, summary: Summary, keep_checkpoint: bool) -> None:
        """Write rounds.csv, events.csv, diagnostics.csv, then summary.json (last: it marks the run complete).

        The checkpoint is dropped unless kept. The trackers get the rest of the run and its summary last.
        """
        write_rounds(self.out / ROUNDS, rows)
        write_events(self.out / EVENTS, summary.method, events.rows)
        write_diagnostics(self.out / DIAGNOSTICS, summary.method, events.measures)
        write_summary(self.out / SUMMARY, summary)
        if not keep_checkpoint:
            checkpoint.remove(self.checkpoint_dir)
        self.feed.finish(summary, rows, events.rows)

    def close(self) -> None:
        """Let go of the trackers' logs (unfinished if the run stopped before ``finish``)."""
        self.feed.close()
