"""``driftbench export``: log the complete runs under a runs folder (at any depth) or in an archive to one tracker.

Each record goes through ``Feed.push``, the live path fed from the record, so an exported run has the
name, parameters and values a live one would have, and the time to FedAvg's target that readers derive
(``driftbench.record.derived``), which a live run cannot know when it ends. A record the tracker
already holds a finished log of (by its key) is left alone: exporting twice adds nothing.
"""

from __future__ import annotations

import logging
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from driftbench.errors import DriftbenchError
from driftbench.record.runs import RunRecord, nested_runs
from driftbench.tracking.destinations import Destination
from driftbench.tracking.feed import Feed, Tracker, open_tracker
from driftbench.tracking.values import drift_scalars, identity

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Exported:
    """What an export did: runs logged, runs the tracker already had, incomplete runs skipped, runs that failed."""

    logged: int
    present: int
    incomplete: int
    failed: int

    def line(self, destination: Destination) -> str:
        """One line for the terminal."""
        return (
            f"{destination}: {self.logged} runs logged, {self.present} already there, "
            f"{self.incomplete} incomplete (skipped), {self.failed} failed"
        )


def export(destination: Destination, root: Path, quiet: bool = False) -> Exported:
    """Log every complete run under ``root`` (a runs folder or an archive) that the tracker has no finished log of; each
    run's path below ``root`` (its place in an archive) names its TensorBoard folder, as ``--log`` with ``--out ROOT``
    would."""
    tracker = open_tracker(destination)
    runs = tqdm(nested_runs(root), desc="export", unit="run", disable=quiet or not sys.stderr.isatty())
    done = Counter(export_run(tracker, folder, read, root) for folder, read in runs)
    return Exported(done["logged"], done["present"], done["incomplete"], done["failed"])


def export_run(tracker: Tracker, folder: Path, read: Callable[[], RunRecord], root: Path) -> str:
    """Log one run (at ``folder``, ``read`` reads its record); what became of it: logged, present, incomplete or failed."""
    try:
        record = read()
        if record.summary is None:
            return "incomplete"
        config = record.config()
        feed = Feed([tracker], identity(config, folder, str(root)), drift_scalars(config))
        pushed = feed.push(lambda: record)
    except DriftbenchError as exc:  # an unreadable record: named, and the others go on
        log.warning("%s: not exported (%s)", folder, exc)
        return "failed"
    if pushed:
        return "logged"
    return "present" if feed.trackers else "failed"  # no tracker left: it raised, and Feed warned with its error
