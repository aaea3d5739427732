"""The scheduler's scorecard passes: prequential scores of the batches about to be trained on, and segment-end matrix rows."""

from __future__ import annotations

from typing import Any

import numpy as np

from driftbench.engine.device_data import LocalWork
from driftbench.engine.evaluate import per_client_mean
from driftbench.methods.base import Plan
from driftbench.record.schema import Scorecard
from driftbench.record.scorecard import column_means, reactions_of, scorecard, segment_ends, segment_starts
from driftbench.scheduler.clients import RoundClients
from driftbench.traces.model import Trace


class ScorecardPasses:
    """The scorecard's evaluations over one run: matrix rows so far and each round's prequential accuracy.

    Neither pass draws random numbers or changes the bank, so training is the same with or
    without them; both are checkpoint state.
    """

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.starts = segment_starts(trace.event_round, trace.rounds)
        self.ends = set(segment_ends(self.starts, trace.rounds).tolist())
        self.columns = np.stack([trace.segments_at(int(s)) for s in self.starts])  # (S, K): each client's segment at each start
        self.matrix: list[list[float]] = []
        self.prequential: list[list[float]] = []

    def state(self) -> dict[str, Any]:
        """The passes' results so far, for a checkpoint."""
        return {"matrix": self.matrix, "prequential": self.prequential}

    def restore(self, state: dict[str, Any]) -> None:
        """Continue from a checkpoint's ``state()``."""
        self.matrix = [list(row) for row in state["matrix"]]
        self.prequential = [list(row) for row in state["prequential"]]

    def score_batches(self, rnd: int, clients: RoundClients, plan: Plan, work: LocalWork) -> None:
        """Score each participant's start model on its first batch of the round, before it trains (one forward pass per model)."""
        if not len(work.clients) or not work.batches.shape[1]:
            return
        first = list(work.batches[:, 0])
        with clients.precision():
            accuracy = per_client_mean(
                clients.model, clients.data, clients.bank(), plan.start_models, first, work.label_maps, work.rotations
            )
        self.prequential.append([float(rnd), float(accuracy.mean())])

    def segment_end(self, rnd: int, side: RoundClients, assignment: np.ndarray) -> None:
        """At a segment's last round, add the matrix row: every client's model on its test data of every segment.

        ``side`` is any ``RoundClients`` of the run; all (segment, client) pairs go through one pass per model.
        """
        if rnd not in self.ends:
            return
        segments, clients = self.columns.shape
        per_pair = RoundClients(
            side.stream, self.columns.reshape(-1), side.pool_y, side.model, side.data, side.method, side.train
        )
        accuracy = per_pair.accuracy(np.tile(assignment, segments)).reshape(segments, clients)
        bounds = self.trace.seg_test[self.columns]
        self.matrix.append(column_means(accuracy.T, (bounds[..., 1] > bounds[..., 0]).T).tolist())

    def scorecard(self, method_events: list[dict[str, Any]]) -> Scorecard:
        """The run's scorecard from the passes so far, the trace's drift events and the method's event log."""
        events = self.trace.events()
        matrix = np.array(self.matrix, dtype=float).reshape(len(self.matrix), len(self.starts))
        prequential = np.array(self.prequential, dtype=float).reshape(len(self.prequential), 2)
        return scorecard(
            self.starts,
            matrix,
            prequential,
            [(e.round, e.clients) for e in events],
            [e.kind for e in events],
            reactions_of(method_events),
        )
