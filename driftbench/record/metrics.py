"""Accuracy, drift-recovery and clustering metrics computed from per-evaluation arrays."""

from __future__ import annotations

import math

import numpy as np
from scipy.spatial.distance import cdist
from sklearn.metrics import adjusted_rand_score

from driftbench.record.schema import Recovery, TimeToAccuracy

FINAL_FRACTION_DENOMINATOR = 10  # final accuracy averages the last tenth of evaluations
PRE_WINDOW = 3  # evaluations averaged for the pre-drift accuracy, and for the post level at an interval's end
RECOVERY_TOLERANCE = 0.01  # a trough within this of the pre-drift level is no drop; back within it is recovered


def final_window(n: int) -> int:
    """How many trailing evaluations final accuracy averages: ceil(n / 10), at least one."""
    # Integer ceiling: 0.1 * n in floating point would round 30 up to 4 evaluations.
    return max(1, -(-n // FINAL_FRACTION_DENOMINATOR))


def final_accuracy(accuracy: np.ndarray) -> float:
    """Mean accuracy over the last ceil(n / 10) evaluations (at least one)."""
    accuracy = np.asarray(accuracy, dtype=float)
    if accuracy.size == 0:
        raise ValueError("final_accuracy needs at least one evaluation")
    count = final_window(accuracy.size)
    return float(accuracy[-count:].mean())


def plateau_change(accuracy: np.ndarray, fraction: float = 0.2) -> float:
    """How much accuracy still moves at the end: |later-half mean - earlier-half mean| of the last ``fraction`` of evaluations.

    Half-means rather than first and last values, so evaluation noise does not pass for a trend.
    """
    accuracy = np.asarray(accuracy, dtype=float)
    tail = accuracy[-max(2, math.ceil(fraction * accuracy.size)) :]
    if tail.size < 2:
        raise ValueError("plateau_change needs at least two evaluations")
    half = tail.size // 2
    return float(abs(tail[-half:].mean() - tail[:half].mean()))


def trailing_mean(values: np.ndarray, window: int) -> np.ndarray:
    """Mean of each value and up to ``window - 1`` values before it."""
    padded = np.concatenate([np.full(window - 1, np.nan), values])
    means: np.ndarray = np.nanmean(np.lib.stride_tricks.sliding_window_view(padded, window), axis=1)
    return means


def time_to_accuracy(
    rounds: np.ndarray, sim_seconds: np.ndarray, accuracy: np.ndarray, target: float, window: int = 1
) -> TimeToAccuracy:
    """The first evaluation after which the trailing ``window``-mean of accuracy never drops below target (null if none).

    With ``window`` = the final-accuracy window, a run whose final accuracy is the target
    always reaches it; with ``window`` = 1 a noisy curve may never "stay" above its own mean.
    """
    accuracy = np.asarray(accuracy, dtype=float)
    _check_same_length(rounds, sim_seconds, accuracy)
    if accuracy.size:
        accuracy = trailing_mean(accuracy, window)
    if accuracy.size == 0 or accuracy[-1] < target:
        return TimeToAccuracy(target=float(target), rounds=None, sim_seconds=None)
    below = np.flatnonzero(accuracy < target)
    first = int(below[-1]) + 1 if below.size else 0
    return TimeToAccuracy(target=float(target), rounds=int(rounds[first]), sim_seconds=float(sim_seconds[first]))


def speedup(reference_tta: TimeToAccuracy | None, method_tta: TimeToAccuracy | None) -> float | None:
    """Reference TTA seconds over method TTA seconds; None if either has no target or never reached it.

    A method reaching the target at 0 simulated seconds gives inf, or 1.0 when the
    reference did too.
    """
    if reference_tta is None or method_tta is None or reference_tta.sim_seconds is None or method_tta.sim_seconds is None:
        return None
    if method_tta.sim_seconds == 0:
        return 1.0 if reference_tta.sim_seconds == 0 else math.inf
    return reference_tta.sim_seconds / method_tta.sim_seconds


def recovery(rounds: np.ndarray, accuracy: np.ndarray, event_rounds: np.ndarray, event_kinds: list[str]) -> list[Recovery]:
    """One Recovery per drift event, measured over evaluations until the next later event (or the end).

    Duplicate event rounds each get their own, identical, entry: an event's interval
    ends at the next strictly later event round.
    """
    rounds = np.asarray(rounds)
    accuracy = np.asarray(accuracy, dtype=float)
    events = np.asarray(event_rounds)
    _check_same_length(rounds, accuracy)
    _check_same_length(events, np.asarray(event_kinds))
    if np.any(np.diff(events) < 0):
        raise ValueError("event_rounds must be sorted ascending")
    distinct = np.unique(events)
    ends = np.append(distinct, np.inf)[np.searchsorted(distinct, events, side="right")]
    return [_event_recovery(rounds, accuracy, int(s), e, k) for s, e, k in zip(events, ends, event_kinds)]


def _event_recovery(rounds: np.ndarray, accuracy: np.ndarray, start: int, end: float, kind: str) -> Recovery:
    """Recovery of one event whose interval is rounds in [start, end).

    pre: mean of the last 3 evaluations before the event; trough: the interval's minimum;
    post: mean of its last 3 evaluations; drop = max(0, pre - trough); a drop within the
    tolerance is ``no_drop``; otherwise rounds to recover counts from the event to the
    first evaluation after the trough back within the tolerance of pre; delta_permille =
    (pre - post) / pre x 1000 (Fed-CM's delta, per event; negative: ends above pre).
    """
    before = accuracy[rounds < start]
    in_interval = (rounds >= start) & (rounds < end)
    window_rounds, window_accuracy = rounds[in_interval], accuracy[in_interval]
    if not before.size or not window_accuracy.size:
        return Recovery(start, kind, "no_baseline", None, None, None, None, None, None)
    pre = float(before[-PRE_WINDOW:].mean())
    lowest = int(np.argmin(window_accuracy))
    trough, post = float(window_accuracy[lowest]), float(window_accuracy[-PRE_WINDOW:].mean())
    drop = max(0.0, pre - trough)
    delta_permille = (pre - post) / pre * 1000 if pre > 0 else None
    if drop <= RECOVERY_TOLERANCE:
        return Recovery(start, kind, "no_drop", pre, trough, post, drop, None, delta_permille)
    back = np.flatnonzero(window_accuracy[lowest:] >= pre - RECOVERY_TOLERANCE)
    rounds_to_recover = int(window_rounds[lowest + back[0]]) - start if back.size else None
    outcome = "not_recovered" if rounds_to_recover is None else "recovered"
    return Recovery(start, kind, outcome, pre, trough, post, drop, rounds_to_recover, delta_permille)


def has_groups(truth: np.ndarray) -> bool:
    """Whether the clients with a ground-truth group (>= 0) span at least two groups: only then is ARI defined."""
    truth = np.asarray(truth)
    return len(np.unique(truth[truth >= 0])) >= 2


def adjusted_rand(truth: np.ndarray, assignment: np.ndarray) -> float:
    """Adjusted Rand index between true and assigned clusters, over clients with truth >= 0."""
    truth = np.asarray(truth)
    assignment = np.asarray(assignment)
    _check_same_length(truth, assignment)
    known = truth >= 0
    if not known.any():
        raise ValueError("adjusted_rand needs at least one client with a ground-truth cluster")
    return float(adjusted_rand_score(truth[known], assignment[known]))


def mean_client_distance(label_distributions: np.ndarray, assignment: np.ndarray) -> float:
    """Mean over non-singleton clients of the mean L1 distance to their cluster mates."""
    distributions = np.asarray(label_distributions, dtype=float)
    assignment = np.asarray(assignment)
    _check_same_length(distributions, assignment)
    per_client = [
        _mean_distance_to_mates(distributions[assignment == cluster])
        for cluster in np.unique(assignment)
        if np.count_nonzero(assignment == cluster) > 1
    ]
    return float(np.concatenate(per_client).mean()) if per_client else 0.0


def _mean_distance_to_mates(members: np.ndarray) -> np.ndarray:
    """Per member, the mean L1 distance to every other member (self-distance is zero)."""
    distances: np.ndarray = cdist(members, members, metric="cityblock").sum(axis=1) / (len(members) - 1)
    return distances


def _check_same_length(*arrays: np.ndarray) -> None:
    """Raise ValueError unless every array has the same number of rows."""
    if len({len(array) for array in arrays}) > 1:
        raise ValueError("per-evaluation arrays must have the same length")
