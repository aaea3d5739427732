"""The scheduler's scorecard passes: prequential scores of the batches about to be trained on, and segment-end matrix rows."""

from __future__ import annotations

from typing import Any

import numpy as np

from driftbench.engine.device_data import LocalWork
from driftbench.engine.evaluate import per_client_mean, per_sample
from driftbench.methods.rounds import Plan
from driftbench.record.schema import Scorecard
from driftbench.record.scorecard import column_means, reactions_of, scorecard, segment_ends, segment_starts
from driftbench.scheduler.clients import RoundClients
from driftbench.traces.model import ClientStream, Trace


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
        self.distinct = DistinctTests(trace.stream, self.columns)

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

        A client's test windows of different segments overlap, so each distinct (sample, label map,
        rotation) of a client is scored once under its model and the windows average those scores.
        """
        if rnd not in self.ends:
            return
        d = self.distinct
        with side.precision():
            scores = per_sample(side.model, side.data, side.bank(), assignment[d.owner], d.windows, d.maps, d.rotations)
        accuracy = d.window_means(scores).reshape(self.columns.shape)
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


class DistinctTests:
    """Each client's distinct test samples over all of its ``columns`` segments, one window per (label map, rotation).

    ``window_means`` turns scores of those samples (``per_sample`` order) into each (segment, client) pair's mean,
    in ``columns.reshape(-1)`` order, 0 for an empty window.
    """

    def __init__(self, stream: ClientStream, columns: np.ndarray) -> None:
        self.windows: list[np.ndarray] = []
        owners, maps, rotations = [], [], []
        pair_rows: list[np.ndarray] = [np.zeros(0, dtype=np.int64)] * columns.size
        offset = 0
        for client in range(columns.shape[1]):
            segments = columns[:, client]
            keys = np.stack([stream.seg_map[segments], stream.seg_rotation[segments]], axis=1)
            for key in np.unique(keys, axis=0):
                rows = np.flatnonzero((keys == key).all(axis=1))
                tests = [stream.test_indices(int(segments[r])) for r in rows]
                union = np.unique(np.concatenate(tests))
                for r, window in zip(rows, tests):
                    pair_rows[r * columns.shape[1] + client] = offset + np.searchsorted(union, window)
                self.windows.append(union)
                owners.append(client)
                maps.append(stream.label_maps[key[0]])
                rotations.append(key[1])
                offset += len(union)
        self.owner = np.array(owners, dtype=np.int64)
        self.maps = np.array(maps).reshape(len(owners), -1)
        self.rotations = np.array(rotations, dtype=np.int64)
        self.lengths = np.array([len(r) for r in pair_rows])
        self.rows = np.concatenate(pair_rows).astype(np.int64)
        self.pair_of_row = np.repeat(np.arange(columns.size), self.lengths)

    def window_means(self, scores: np.ndarray) -> np.ndarray:
        """Mean score of each (segment, client) pair's window."""
        totals = np.bincount(self.pair_of_row, weights=scores[self.rows], minlength=len(self.lengths))
        means: np.ndarray = totals / np.maximum(self.lengths, 1)
        return means
