"""Streaming windows: samples arrive at rounds and a client keeps those of the last ``window_rounds`` rounds."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from driftbench.traces.model import TraceBuilder


def arrival_rounds(times: np.ndarray, rounds_per_unit: int, window_rounds: int) -> np.ndarray:
    """The round at which data of time unit ``t`` (a day, a bucket) arrives.

    Unit ``t`` spans ``rounds_per_unit`` rounds and arrives at its end; the clock is shifted so
    that the first ``window_rounds`` rounds' worth of data has arrived by round 0.
    """
    return rounds_per_unit * (np.asarray(times, dtype=np.int64) + 1) - window_rounds


def window_bounds(arrivals: np.ndarray, rounds: np.ndarray, window_rounds: int, min_size: int) -> np.ndarray:
    """(len(rounds), 2) slices of the sorted ``arrivals`` that arrived in the ``window_rounds`` rounds up to each round.

    A window is widened to the ``min_size`` samples nearest in arrival order (or all there are),
    so that a client is never left without data.
    """
    rounds = np.asarray(rounds, dtype=np.int64)
    size = min(min_size, len(arrivals))
    hi = np.maximum(np.searchsorted(arrivals, rounds, side="right"), size)
    lo = np.minimum(np.searchsorted(arrivals, rounds - window_rounds, side="right"), hi - size)
    return np.stack([lo, hi], axis=1)


class SlidingWindows:
    """Writes piecewise-constant windows of streaming clients into a builder and collects arrival events."""

    def __init__(self, builder: TraceBuilder, updates: np.ndarray, window_rounds: int, min_size: int) -> None:
        self.builder, self.updates = builder, np.asarray(updates, dtype=np.int64)
        self.window_rounds, self.min_size = window_rounds, min_size
        self.changed: dict[int, list[int]] = defaultdict(list)

    def client(
        self,
        client: int,
        train_arrivals: np.ndarray,
        test_arrivals: np.ndarray,
        groups: np.ndarray,
        rotations: np.ndarray | None = None,
    ) -> None:
        """Segments for ``client`` at every update round where its windows, group or rotation change.

        ``*_arrivals`` are the arrival rounds of the client's samples, sorted, in the order the
        builder holds them; ``groups`` is its ground-truth group and ``rotations`` (default 0)
        the turn of its images in degrees at each update round.
        """
        train = window_bounds(train_arrivals, self.updates, self.window_rounds, self.min_size)
        test = window_bounds(test_arrivals, self.updates, self.window_rounds, self.min_size)
        turns = np.zeros(len(self.updates), dtype=np.int64) if rotations is None else np.asarray(rotations)
        state = np.concatenate([train, test, np.asarray(groups)[:, None], turns[:, None]], axis=1)
        new = np.ones(len(state), dtype=bool)
        new[1:] = (state[1:] != state[:-1]).any(axis=1)
        for i in np.flatnonzero(new):
            rnd = int(self.updates[i])
            self.builder.segment(
                client, rnd, train=tuple(train[i]), test=tuple(test[i]), rotation=int(turns[i]), group=int(groups[i])
            )
            if rnd > 0:
                self.changed[rnd].append(client)

    def events(self, kind: str) -> None:
        """One event of ``kind`` per update round, listing the clients whose windows changed then."""
        for rnd, clients in sorted(self.changed.items()):
            self.builder.event(rnd, np.array(clients), kind)
