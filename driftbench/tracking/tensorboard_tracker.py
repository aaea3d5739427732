"""The TensorBoard tracker: one event-file folder per run, ``<where>/<run folder below the runs root>``.

Scalars are TensorBoard's own, 32-bit floats: the record's double rounded to 7 significant digits (a
byte count above 2**24 rounds). Float64 tensors would keep every digit, but TensorBoard's fast loader
(its default) does not show them; MLflow and the record hold the exact values. The run's parameters
go to the HParams dashboard, its key and identity to text (``run/key``, ``run/identity``), and at the
end its scorecard and the summary's tags to text (``run/scorecard``, ``run/summary``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tensorboard.backend.event_processing.event_accumulator import TENSORS, EventAccumulator
from tensorboard.plugins.hparams.summary_v2 import hparams_pb
from tensorboard.util.tensor_util import make_ndarray
from torch.utils.tensorboard import SummaryWriter

from driftbench.tracking.destinations import Destination
from driftbench.tracking.values import Identity, Scalar, summary_tags

EVENT_FILES = "events.out.tfevents.*"
KEY_TEXT, FINISHED_TEXT = "run/key", "run/scorecard"
TEXT_SUFFIX = "/text_summary"  # where add_text puts a text tag


class TensorBoardTracker:
    """Logs runs to TensorBoard event files under the destination's folder; ``tensorboard --logdir`` it shows them."""

    name = "tensorboard"

    def __init__(self, destination: Destination, flush_seconds: float) -> None:
        self.root, self.flush_seconds = Path(destination.where), flush_seconds
        self.root.mkdir(parents=True, exist_ok=True)
        self.folder: Path | None = None
        self.writer: SummaryWriter | None = None

    def recorded(self, identity: Identity) -> bool:
        """Whether the run's folder holds a finished log of this record (its key and its scorecard)."""
        folder = self.root / identity.path
        if not any(folder.glob(EVENT_FILES)):
            return False
        texts = read_texts(folder)
        return texts.get(KEY_TEXT) == identity.key and FINISHED_TEXT in texts

    def start(self, identity: Identity) -> None:
        """A fresh log: the run folder's old event files removed, then its key, identity and parameters."""
        self.close()
        self.folder = self.root / identity.path
        for old in self.folder.glob(EVENT_FILES):
            old.unlink()
        writer = self.open()
        writer.add_text(KEY_TEXT, identity.key)
        writer.add_text("run/identity", fenced({"name": identity.name, "params": identity.params, "tags": identity.tags}))
        assert writer.file_writer is not None  # SummaryWriter opens its file on creation
        writer.file_writer.add_summary(hparams_pb(dict(identity.params)))  # the HParams dashboard's parameters

    def reopen(self, identity: Identity) -> None:
        """Continue the run's log: what is logged next goes to a new event file in its folder."""
        self.close()
        self.folder = self.root / identity.path

    def log(self, scalars: Sequence[Scalar], tags: Mapping[str, str]) -> None:
        """Write the scalars, and the summary's tags as the text ``run/summary`` (TensorBoard shows its latest)."""
        writer = self.open()
        for s in scalars:
            writer.add_scalar(s.tag, s.value, s.step)
        if tags:
            writer.add_text("run/summary", fenced(dict(tags)))

    def finish(self, summary: Mapping[str, Any]) -> None:
        """Write the summary's tags and the scorecard as text, and close the event file."""
        self.log([], summary_tags(summary))
        self.open().add_text(FINISHED_TEXT, fenced(summary["scorecard"]))
        self.close()

    def close(self) -> None:
        """Flush and close the event file."""
        if self.writer is not None:
            self.writer.close()
            self.writer = None

    def open(self) -> SummaryWriter:
        """The writer of the current run's folder, opened on first use."""
        if self.writer is None:
            assert self.folder is not None  # start() or reopen() names the run
            self.writer = SummaryWriter(str(self.folder), flush_secs=self.flush_seconds)
        return self.writer


TRACKER = TensorBoardTracker  # the class driftbench.tracking.feed.open_tracker makes


def fenced(data: Any) -> str:
    """``data`` as indented JSON in a Markdown code block (TensorBoard renders text as Markdown)."""
    return "```json\n" + json.dumps(data, indent=2) + "\n```"


def read_texts(folder: Path) -> dict[str, str]:
    """The last value of each text tag in a run folder's event files."""
    events = EventAccumulator(str(folder), size_guidance={TENSORS: 0})
    events.Reload()
    return {
        tag.removesuffix(TEXT_SUFFIX): make_ndarray(events.Tensors(tag)[-1].tensor_proto).item().decode()
        for tag in events.Tags()[TENSORS]
        if tag.endswith(TEXT_SUFFIX)
    }
