"""The drift scorecard from plain arrays: segments, accuracy-matrix summaries, prequential means, drift-detection scoring.

docs/scorecard.md defines every number with its formula and source.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from driftbench.methods.events import EVENT_KINDS
from driftbench.record.schema import Detection, EventDetection, Scorecard

DETECTION_WINDOW = 10  # rounds from an event (its round included) in which a reaction counts for it
REACTION_KINDS = tuple(kind for kind in EVENT_KINDS if kind != "threshold")  # events that change who trains which model

Change = tuple[int, np.ndarray]  # (round, clients): a drift event or a method reaction


def segment_starts(event_rounds: np.ndarray, rounds: int) -> np.ndarray:
    """Where the run's segments start: round 0 and every distinct drift-event round inside (0, rounds)."""
    events = np.asarray(event_rounds, dtype=np.int64)
    inside = events[(events > 0) & (events < rounds)]
    starts: np.ndarray = np.unique(np.concatenate([[0], inside])).astype(np.int64)
    return starts


def segment_ends(starts: np.ndarray, rounds: int) -> np.ndarray:
    """The last round of each segment: the round before the next start, and the run's last round."""
    ends: np.ndarray = np.append(np.asarray(starts)[1:], rounds) - 1
    return ends


def column_means(per_client: np.ndarray, has_data: np.ndarray) -> np.ndarray:
    """Mean over clients (rows) of each segment column, over the clients with test data there; NaN where none has."""
    counts = has_data.sum(axis=0)
    sums = np.where(has_data, per_client, 0.0).sum(axis=0)
    means: np.ndarray = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    return means


def in_segment_accuracy(matrix: np.ndarray) -> float | None:
    """Mean of the diagonal A[i, i] over the segments evaluated (CLEAR's in-domain accuracy)."""
    return _mean([matrix[i, i] for i in range(min(matrix.shape))])


def next_segment_accuracies(matrix: np.ndarray) -> list[float]:
    """A[i, i + 1] for every evaluated segment i with a next one (Wild-Time's Eval-Stream, next-period accuracy)."""
    rows, columns = matrix.shape
    return [float(matrix[i, i + 1]) for i in range(rows) if i + 1 < columns and not np.isnan(matrix[i, i + 1])]


def backward_transfer(matrix: np.ndarray) -> float | None:
    """GEM's BWT over the T x T block: mean over j < T - 1 of A[T-1, j] - A[j, j]; None below two segments."""
    t = min(matrix.shape)
    return _mean([matrix[t - 1, j] - matrix[j, j] for j in range(t - 1)]) if t >= 2 else None


def forgetting(matrix: np.ndarray) -> float | None:
    """Chaudhry et al.'s average forgetting over the T x T block: mean over j < T - 1 of max_{l < T-1} A[l, j] - A[T-1, j]."""
    t = min(matrix.shape)
    if t < 2:
        return None
    return _mean([np.nanmax(matrix[: t - 1, j]) - matrix[t - 1, j] for j in range(t - 1) if _any(matrix[: t - 1, j])])


def interval_means(rounds: np.ndarray, values: np.ndarray, starts: np.ndarray) -> list[float | None]:
    """Mean of ``values`` over the rounds from each start up to the next larger start (or the end); None where no round falls."""
    rounds, values, starts = np.asarray(rounds), np.asarray(values, dtype=float), np.asarray(starts)
    distinct = np.unique(starts)
    ends = np.append(distinct, np.iinfo(np.int64).max)[np.searchsorted(distinct, starts, side="right")]
    return [_mean(values[(rounds >= s) & (rounds < e)]) for s, e in zip(starts, ends)]


def detection(events: Sequence[Change], kinds: Sequence[str], reactions: Sequence[Change], window: int) -> Detection:
    """Score ``reactions`` against drift ``events`` (rounds > 0).

    A reaction at round r counts for an event at round e touching clients C when e <= r < e +
    ``window`` and it touches a client of C; a reaction that counts for no event is a false
    alarm; an event no reaction counts for is missed.
    """
    counted = np.zeros(len(reactions), dtype=bool)
    scored, client_delays = [], []
    for (rnd, clients), kind in zip(events, kinds):
        first = np.full(len(clients), window)  # per drifted client: rounds to the first reaction touching it (window: none)
        for r, (react_round, touched) in enumerate(reactions):
            hits = np.isin(clients, touched)
            if 0 <= react_round - rnd < window and hits.any():
                counted[r] = True
                first = np.where(hits, np.minimum(first, react_round - rnd), first)
        seen = first[first < window]
        scored.append(EventDetection(rnd, kind, len(clients), int(seen.min()) if seen.size else None, seen.size, _mean(seen)))
        client_delays.extend(seen.tolist())
    delays = [e.delay for e in scored if e.delay is not None]
    return Detection(
        outcome="scored" if events else "no_events",
        window=window,
        reactions=len(reactions),
        events=tuple(scored),
        detected=len(delays),
        missed=len(scored) - len(delays),
        false_alarms=int((~counted).sum()),
        delay_mean=_mean(delays),
        client_delay_mean=_mean(client_delays),
        clients_missed=sum(e.clients - e.clients_detected for e in scored),
    )


def reactions_of(rows: Sequence[dict[str, Any]]) -> list[Change]:
    """A method's reactions from its event-log rows: ``REACTION_KINDS`` events after round 0 (round 0 forms the clustering)."""
    return [
        (int(row["round"]), np.array(row["clients"].split(), dtype=np.int64))
        for row in rows
        if row["kind"] in REACTION_KINDS and int(row["round"]) > 0
    ]


def scorecard(
    starts: np.ndarray,
    matrix: np.ndarray,
    prequential: np.ndarray,
    events: Sequence[Change],
    kinds: Sequence[str],
    reactions: Sequence[Change],
) -> Scorecard:
    """The run's scorecard: ``matrix`` rows are the segments evaluated so far, ``prequential`` (round, accuracy) rows.

    Only ``events`` after round 0 count (``segment_starts``' convention).
    """
    drift = [(rnd, clients, kind) for (rnd, clients), kind in zip(events, kinds) if rnd > 0]
    nexts = next_segment_accuracies(matrix)
    rounds, values = prequential[:, 0], prequential[:, 1]
    return Scorecard(
        segment_starts=tuple(int(s) for s in starts),
        accuracy_matrix=tuple(tuple(None if np.isnan(v) else float(v) for v in row) for row in matrix),
        in_segment_accuracy=in_segment_accuracy(matrix),
        next_segment_accuracy=_mean(nexts),
        next_segment_worst=min(nexts) if nexts else None,
        backward_transfer=backward_transfer(matrix),
        forgetting=forgetting(matrix),
        prequential_accuracy=_mean(values),
        prequential_after_events=tuple(interval_means(rounds, values, np.array([d[0] for d in drift], dtype=np.int64))),
        detection=detection([(r, c) for r, c, _ in drift], [k for _, _, k in drift], reactions, DETECTION_WINDOW),
    )


def _any(values: np.ndarray) -> bool:
    return bool((~np.isnan(np.asarray(values, dtype=float))).any())


def _mean(values: Sequence[float] | np.ndarray) -> float | None:
    """Mean of the values that are not NaN; None when none is."""
    array = np.asarray(values, dtype=float)
    array = array[~np.isnan(array)]
    return float(array.mean()) if array.size else None
