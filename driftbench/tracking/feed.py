"""The one path from a run record to its trackers: live, round by round, from the recorder, or from the record (export).

A ``Feed`` holds one run's trackers and the last round they were sent. Both paths make the values with
``driftbench.tracking.values`` from the same rows, events and summary, so an export of a record logs
what the live run logged, and what readers derive from other runs (a time to FedAvg's target). A
tracker that raises is dropped with one warning line: the run, its record and the other trackers go on.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, Protocol

from driftbench.errors import ConfigError, one_line
from driftbench.record.files import as_json
from driftbench.record.runs import RunRecord
from driftbench.record.schema import RoundRow, Summary
from driftbench.tracking.destinations import PACKAGES, SQLITE, SQLITE_PACKAGES, TRACKER_MODULES, Destination, Tracking
from driftbench.tracking.values import (
    Identity,
    Scalar,
    drift_scalars,
    event_scalars,
    identity,
    last_round,
    round_scalars,
    summary_scalars,
)

log = logging.getLogger(__name__)

FLUSH_SECONDS = 5.0  # how long a tracker may hold values before writing them (the live view's delay)
EXTRA = "pip install 'driftbench[tracking]'"


class Tracker(Protocol):
    """A tracker's side of one run: a log per record, found again by the record's key (``Identity.key``)."""

    name: str  # the tracker's name, as --log gives it (``TRACKERS``)

    def recorded(self, identity: Identity) -> bool:
        """Whether a finished log of this record exists."""

    def start(self, identity: Identity) -> None:
        """Begin a fresh log of the record, replacing any log of its key: name, parameters, tags."""

    def reopen(self, identity: Identity) -> None:
        """Continue the record's finished log, its tags set to the identity's (``reproduce`` tags a run it keeps)."""

    def log(self, scalars: Sequence[Scalar], tags: Mapping[str, str]) -> None:
        """Log scalars and set tags (a tracker may hold them up to ``FLUSH_SECONDS``)."""

    def finish(self, summary: Mapping[str, Any]) -> None:
        """Write what is held, the summary's tags and the scorecard artifact, and end the log as finished."""

    def close(self) -> None:
        """Write what is held and let go of the log without finishing it."""


def open_tracker(destination: Destination) -> Tracker:
    """The tracker of a destination; a missing package, or a store that cannot be opened, is a ``ConfigError``."""
    try:
        tracker: Tracker = importlib.import_module(TRACKER_MODULES[destination.tracker]).TRACKER(destination, FLUSH_SECONDS)
        return tracker
    except ImportError as exc:
        raise ConfigError(f"--log {destination.tracker} needs the {exc.name} package: {EXTRA}") from None
    except Exception as exc:  # the tracker's own errors: a bad URI, an unreadable store
        raise ConfigError(f"--log {destination}: cannot open it ({one_line(exc)})") from None


def check(tracking: Tracking) -> None:
    """Before any run starts: each destination's packages are installed and an sqlite store's folder exists.

    Nothing is imported here (mlflow alone takes a second or two, on the path of every run): the runs open
    their trackers, and the first to open a new sqlite store creates it (under a lock, ``mlflow_tracker``).
    """
    for destination in tracking.destinations:
        sqlite = destination.where.startswith(SQLITE)
        for package in PACKAGES[destination.tracker] + (SQLITE_PACKAGES if sqlite else ()):
            if importlib.util.find_spec(package) is None:
                raise ConfigError(f"--log {destination.tracker} needs the {package} package: {EXTRA}")
        folder = Path(destination.where.removeprefix(SQLITE)).parent
        if sqlite and not folder.is_dir():
            raise ConfigError(f"--log {destination}: no folder {folder} for the sqlite store")


class Feed:
    """One run's trackers, its identity and drift events, and the last round sent; a tracker that raises is dropped."""

    def __init__(self, trackers: list[Tracker], identity: Identity, drift: list[Scalar]) -> None:
        self.trackers, self.identity, self.drift = trackers, identity, drift
        self.sent = -1  # the last round whose rows and events the trackers have

    @staticmethod
    def open(tracking: Tracking, folder: Path, config: Mapping[str, Any]) -> Feed:
        """The feed of the run in ``folder`` whose config.json is ``config``, to the destinations of ``tracking``."""
        run = identity(config, folder, tracking.root, tracking.tags)
        trackers = []
        for destination in tracking.destinations:
            try:
                trackers.append(open_tracker(destination))
            except ConfigError as exc:
                log.warning("%s: not logged to %s (%s)", run.name, destination.tracker, exc)
        return Feed(trackers, run, drift_scalars(config))

    def start(self) -> None:
        """Begin a fresh log of the run in every tracker."""
        self.sent = -1
        self.each(lambda t: t.start(self.identity))

    def advance(self, upto: int, rows: Sequence[RoundRow], events: Sequence[Mapping[str, Any]]) -> None:
        """Send the evaluations, method events and drift events of the rounds after the last sent, up to ``upto``."""
        if not self.trackers or upto <= self.sent:
            return

        def due(rnd: int) -> bool:
            return self.sent < rnd <= upto

        scalars = [
            *round_scalars(asdict(row) for row in rows if due(row.round)),
            *event_scalars(e for e in events if due(int(e["round"]))),
            *(s for s in self.drift if due(s.step)),
        ]
        self.sent = upto
        if scalars:
            self.each(lambda t: t.log(scalars, {}))

    def finish(self, summary: Summary, rows: Sequence[RoundRow], events: Sequence[Mapping[str, Any]]) -> None:
        """Send what remains up to the run's last round, then the summary's numbers, tags and scorecard; end every log."""
        plain = as_json(asdict(summary))
        self.advance(last_round(plain), rows, events)
        scalars = summary_scalars(plain, last_round(plain))

        def end(tracker: Tracker) -> None:
            tracker.log(scalars, {})
            tracker.finish(plain)

        self.each(end)

    def close(self) -> None:
        """Let go of every log unfinished (an interrupted run: ``--resume`` starts its log afresh)."""
        self.each(lambda t: t.close())

    def push(self, read: Callable[[], RunRecord]) -> list[str]:
        """Log the complete record ``read`` returns (as readers see it; read only when needed) to each tracker without a
        finished log of it; returns their names.

        A tracker that has one gets the identity's tags on it instead (``reproduce`` tags a run it keeps).
        This is the live path's start and finish, fed from the record (a run folder or an archive). A tracker
        that raises is dropped.
        """
        fresh = []
        for tracker in list(self.trackers):
            if self.guarded(tracker, lambda t: t.recorded(self.identity)):
                self.guarded(tracker, self.retag)
            elif tracker in self.trackers:
                fresh.append(tracker)
        if not fresh:
            return []
        record = read()
        summary = record.summary
        assert summary is not None  # push is given complete records
        rows = [RoundRow(**row) for row in record.rounds().to_dict("records")]
        events = record.events().to_dict("records")
        feed = Feed(fresh, self.identity, self.drift)
        feed.start()
        feed.finish(summary, rows, events)
        self.trackers = [t for t in self.trackers if t not in fresh or t in feed.trackers]  # those that raised: dropped
        return [t.name for t in feed.trackers]

    def retag(self, tracker: Tracker) -> None:
        """Give the tracker's finished log of the run the identity's tags."""
        tracker.reopen(self.identity)
        tracker.close()

    def each(self, call: Callable[[Tracker], object]) -> None:
        """``call`` every tracker, dropping each that raises."""
        for tracker in list(self.trackers):
            self.guarded(tracker, call)

    def guarded(self, tracker: Tracker, call: Callable[[Tracker], Any]) -> Any:
        """``call(tracker)``; if it raises, drop the tracker with one warning line and return None."""
        try:
            return call(tracker)
        except Exception as exc:  # a tracker never fails the run: its log stops here
            if tracker in self.trackers:
                self.trackers.remove(tracker)
                log.warning(
                    "%s: %s stopped logging this run (%s); the run and its record go on",
                    self.identity.name,
                    tracker.name,
                    one_line(exc),
                )
            return None
