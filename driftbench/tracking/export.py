"""``driftbench export``: log the complete runs under a runs folder, at any depth, to one tracker.

Each record goes through ``Feed.push``, the live path fed from the files, so an exported run has the
name, parameters and values a live one would have, and the time to FedAvg's target that readers derive
(``driftbench.record.derived``), which a live run cannot know when it ends. A record the tracker
already holds a finished log of (by its key) is left alone: exporting twice adds nothing.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from driftbench.errors import ConfigError, DriftbenchError
from driftbench.record.files import CONFIG, SUMMARY, read_json
from driftbench.tracking.destinations import Destination
from driftbench.tracking.feed import Feed, open_tracker
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


def record_folders(root: Path) -> list[Path]:
    """Every run folder (``seed<k>/config.json``) below ``root``, at any depth, sorted."""
    if not root.is_dir():
        raise ConfigError(f"{root}: no such runs folder")
    folders = sorted(config.parent for config in root.rglob(CONFIG) if config.parent.name.startswith("seed"))
    if not folders:
        raise ConfigError(f"{root}: no run records (expected <trace>/<method>/seed<k>/config.json below it)")
    return folders


def export(destination: Destination, root: Path, quiet: bool = False) -> Exported:
    """Log every complete run under ``root`` that the tracker has no finished log of; each run's path below
    ``root`` names its TensorBoard folder, as ``--log`` with ``--out ROOT`` would."""
    tracker = open_tracker(destination)
    logged = present = incomplete = failed = 0
    for folder in tqdm(record_folders(root), desc="export", unit="run", disable=quiet or not sys.stderr.isatty()):
        if not (folder / SUMMARY).is_file():
            incomplete += 1
            continue
        try:
            config = read_json(folder / CONFIG)
            feed = Feed([tracker], identity(config, folder, str(root)), drift_scalars(config))
            pushed = feed.push(folder)
        except DriftbenchError as exc:  # an unreadable record: named, and the others go on
            log.warning("%s: not exported (%s)", folder, exc)
            failed += 1
            continue
        if pushed:
            logged += 1
        elif feed.trackers:
            present += 1
        else:
            failed += 1  # the tracker raised; Feed warned with its error
    return Exported(logged, present, incomplete, failed)
