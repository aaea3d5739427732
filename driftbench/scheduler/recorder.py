"""A run's folder: config.json when it starts, the configuration check on resume, rounds.csv and summary.json at the end."""

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

log = logging.getLogger("driftbench")


class Recorder:
    """The record of the run in ``out`` whose configuration is ``config``."""

    def __init__(self, out: Path, config: dict[str, Any]) -> None:
        self.out, self.config = out, config
        self.checkpoint_dir = out / CHECKPOINT

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
        return summary

    def finish(self, rows: list[RoundRow], events: EventLog, summary: Summary, keep_checkpoint: bool) -> None:
        """Write rounds.csv, events.csv, diagnostics.csv, then summary.json (last: it marks the run complete).

        The checkpoint is dropped unless kept.
        """
        write_rounds(self.out / ROUNDS, rows)
        write_events(self.out / EVENTS, summary.method, events.rows)
        write_diagnostics(self.out / DIAGNOSTICS, summary.method, events.measures)
        write_summary(self.out / SUMMARY, summary)
        if not keep_checkpoint:
            checkpoint.remove(self.checkpoint_dir)
