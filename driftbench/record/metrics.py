"""Accuracy, time-to-accuracy, streaming, drift-recovery, clustering and degeneracy metrics from per-evaluation arrays."""

from __future__ import annotations

import math

import numpy as np
from scipy.spatial.distance import cdist
from sklearn.metrics import adjusted_rand_score

from driftbench.record.schema import Recovery, Streaming, Target, TimeToAccuracy

FINAL_FRACTION_DENOMINATOR = 10  # final accuracy averages the last tenth of evaluations
NOISE_FRACTION_DENOMINATOR = 2  # a curve's plateau is its second half of evaluations (level: mean, noise band: std)
NOISE_MIN_EVALUATIONS = 4  # and at least this many
TARGET_BANDS = 2  # the default target sits this many of the reference's noise bands below its plateau
SMOOTHING = 3  # evaluations in the trailing mean that time-to-accuracy reads
SUSTAIN = 3  # consecutive smoothed evaluations at or above the target that count as reaching it
PRE_WINDOW = 3  # evaluations averaged for the pre-drift accuracy, and for the post level at an interval's end
RECOVERY_TOLERANCE = 0.01  # a trough within this of the pre-drift level is no drop; back within it is recovered
COLLAPSE_FALL = 0.2  # accuracy (absolute) below a segment's smoothed best that counts as a fall (collapse_without_drift)
COLLAPSE_SPAN = 3  # evaluations in a row a fall must last to flag collapse_without_drift when it recovers before its segment ends


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


def plateau_tail(accuracy: np.ndarray) -> np.ndarray:
    """A curve's plateau: its last ceil(n / ``NOISE_FRACTION_DENOMINATOR``) evaluations, at least ``NOISE_MIN_EVALUATIONS``.

    A curve with fewer evaluations is all plateau.
    """
    accuracy = np.asarray(accuracy, dtype=float)
    tail: np.ndarray = accuracy[-max(NOISE_MIN_EVALUATIONS, -(-accuracy.size // NOISE_FRACTION_DENOMINATOR)) :]
    return tail


def noise_band(accuracy: np.ndarray) -> float:
    """The evaluation noise of a curve: the std (ddof 1) of its plateau (``plateau_tail``); 0 below 2 evaluations."""
    tail = plateau_tail(accuracy)
    return float(np.std(tail, ddof=1)) if tail.size >= 2 else 0.0


def reference_target(accuracy: np.ndarray, reference: str) -> Target:
    """The default target: the reference's plateau level (its mean) less ``TARGET_BANDS`` of its noise bands."""
    level, noise = float(plateau_tail(accuracy).mean()), noise_band(accuracy)
    return Target(level - TARGET_BANDS * noise, "reference", reference, level, noise)


def fixed_target(value: float) -> Target:
    """A target given as a number (``--target``)."""
    return Target(float(value), "fixed", None, None, 0.0)


def first_reach(accuracy: np.ndarray, target: float) -> int | None:
    """The first evaluation from which the ``SMOOTHING``-trailing mean is >= target at ``SUSTAIN`` evaluations in a row.

    Fewer than ``SUSTAIN`` evaluations left: at every one of them. None if there is no such evaluation.
    """
    accuracy = np.asarray(accuracy, dtype=float)
    if accuracy.size == 0:
        return None
    above = np.concatenate([trailing_mean(accuracy, SMOOTHING) >= target, np.ones(SUSTAIN - 1, dtype=bool)])
    hits = np.flatnonzero(held(above, SUSTAIN))
    return int(hits[0]) if hits.size else None


def crossing_seconds(sim_seconds: np.ndarray, accuracy: np.ndarray, first: int, target: float) -> float:
    """When the smoothed curve crossed ``target`` on its way to evaluation ``first`` (``first_reach``).

    Linear between the evaluation before ``first`` and ``first``, so that a small change of the
    target moves the time a little, not by a whole evaluation interval; ``first`` = 0: its time.
    """
    if first == 0:
        return float(sim_seconds[0])
    smoothed = trailing_mean(np.asarray(accuracy, dtype=float), SMOOTHING)
    before, after = smoothed[first - 1], smoothed[first]
    share = float(np.clip((target - before) / (after - before), 0.0, 1.0)) if after > before else 1.0
    return float(sim_seconds[first - 1] + share * (sim_seconds[first] - sim_seconds[first - 1]))


def time_to_accuracy(rounds: np.ndarray, sim_seconds: np.ndarray, accuracy: np.ndarray, target: Target) -> TimeToAccuracy:
    """When the run reached ``target``, unless its final accuracy is within the noise of the target.

    ``rounds`` is the evaluation ``first_reach`` finds, ``sim_seconds`` the crossing before it
    (``crossing_seconds``). The band is the larger of the target's noise and the run's own
    (``noise_band``): a final accuracy closer to the target than that is ``not_distinguishable``.
    """
    accuracy = np.asarray(accuracy, dtype=float)
    _check_same_length(rounds, sim_seconds, accuracy)
    band = max(target.noise, noise_band(accuracy))
    if accuracy.size == 0:
        return TimeToAccuracy(target, "not_reached", band, None, None)
    if abs(final_accuracy(accuracy) - target.value) < band:
        return TimeToAccuracy(target, "not_distinguishable", band, None, None)
    first = first_reach(accuracy, target.value)
    if first is None:
        return TimeToAccuracy(target, "not_reached", band, None, None)
    seconds = crossing_seconds(sim_seconds, accuracy, first, target.value)
    return TimeToAccuracy(target, "reached", band, int(rounds[first]), seconds)


def speedup(reference_tta: TimeToAccuracy | None, method_tta: TimeToAccuracy | None) -> float | None:
    """Reference TTA seconds over method TTA seconds; None unless both reached the target.

    A method reaching the target at 0 simulated seconds gives inf, or 1.0 when the
    reference did too.
    """
    if reference_tta is None or method_tta is None or not reference_tta.reached or not method_tta.reached:
        return None
    assert reference_tta.sim_seconds is not None and method_tta.sim_seconds is not None  # reached
    if method_tta.sim_seconds == 0:
        return 1.0 if reference_tta.sim_seconds == 0 else math.inf
    return reference_tta.sim_seconds / method_tta.sim_seconds


def streaming(rounds: np.ndarray, accuracy: np.ndarray, event_rounds: np.ndarray) -> Streaming:
    """Mean accuracy, worst mean over the intervals between drift events, and mean from the first event on."""
    rounds, accuracy = np.asarray(rounds), np.asarray(accuracy, dtype=float)
    _check_same_length(rounds, accuracy)
    if accuracy.size == 0:
        raise ValueError("streaming metrics need at least one evaluation")
    boundaries = np.unique(np.asarray(event_rounds))
    interval = np.searchsorted(boundaries, rounds, side="right")  # 0: before the first event
    counts = np.bincount(interval, minlength=boundaries.size + 1)
    sums = np.bincount(interval, weights=accuracy, minlength=boundaries.size + 1)
    after = accuracy[interval > 0]
    return Streaming(
        mean_accuracy=float(accuracy.mean()),
        worst_interval_accuracy=float((sums[counts > 0] / counts[counts > 0]).min()),
        post_drift_accuracy=float(after.mean()) if boundaries.size and after.size else None,
    )


def partition_changed(before: np.ndarray, after: np.ndarray) -> bool:
    """Whether two assignments partition the clients differently (relabelling clusters is no change)."""
    pairs = np.unique(np.stack([before, after]), axis=1).shape[1]
    return bool(pairs != np.unique(before).size or pairs != np.unique(after).size)


def degeneracy(
    n_clusters: np.ndarray, change_rounds: np.ndarray, event_rounds: np.ndarray, clustering: bool, reclusters: bool
) -> tuple[str, ...]:
    """The ``DEGENERACIES`` of a run: a clustering method at one cluster at every evaluation (``one_cluster``);
    a method designed to re-cluster whose partition never changed from the first drift event on
    (``clustering_unchanged``; on a trace without events there is nothing to re-cluster for).
    """
    flags = []
    if clustering and (np.asarray(n_clusters) <= 1).all():
        flags.append("one_cluster")
    if reclusters and len(event_rounds) and not (np.asarray(change_rounds) >= np.min(event_rounds)).any():
        flags.append("clustering_unchanged")
    return tuple(flags)


def collapsed_without_drift(
    rounds: np.ndarray,
    accuracy: np.ndarray,
    event_rounds: np.ndarray,
    fall: float = COLLAPSE_FALL,
    span: int = COLLAPSE_SPAN,
) -> bool:
    """Whether accuracy fell more than ``fall`` below its best and stayed down, with no drift event to explain it.

    The run is cut into segments at trace events (an evaluation at round r belongs to the
    segment of the events at or before r). In each segment, accuracy is smoothed by its
    ``SMOOTHING``-evaluation trailing mean (within the segment), and the best is the highest
    smoothed accuracy reached so far. A collapse is either of: the segment ends with its
    smoothed accuracy more than ``fall`` below its best; or ``span`` evaluations in a row each
    lie more than ``fall`` below the best reached by then, outside the segment's start, however
    far accuracy recovers afterwards. The start (``segment_start``) is a fall from the segment's
    first evaluation that the smoothed accuracy climbs back from, to within
    ``RECOVERY_TOLERANCE`` of that first evaluation: the model a run starts from is not yet the
    method's (FEDDAG's first evaluation reads the clients' warm-up models, 0.77, before its
    cluster models restart their classifiers: 0.53-0.55, then 0.79 and a final 0.903), so a fall
    from it that the method makes up is its start, while one it never makes up is a collapse. A
    shorter dip, or a fall that an event may explain, is not flagged.
    """
    rounds, accuracy = np.asarray(rounds), np.asarray(accuracy, dtype=float)
    _check_same_length(rounds, accuracy)
    segment = np.searchsorted(np.sort(np.asarray(event_rounds)), rounds, side="right")
    for index in np.unique(segment):
        values = accuracy[segment == index]
        smoothed = trailing_mean(values, SMOOTHING)
        best = np.maximum.accumulate(smoothed)
        fallen = best - values > fall
        fallen[: segment_start(smoothed)] = False
        if best[-1] - smoothed[-1] > fall or held(fallen, span).any():
            return True
    return False


def segment_start(smoothed: np.ndarray) -> int:
    """How many of a segment's evaluations are its start: those before the smoothed accuracy is first back within
    ``RECOVERY_TOLERANCE`` of the segment's first evaluation after falling below it (0 when it never comes back)."""
    back = np.flatnonzero(smoothed[1:] >= smoothed[0] - RECOVERY_TOLERANCE) + 1
    return int(back[0]) if back.size else 0


def held(flags: np.ndarray, span: int) -> np.ndarray:
    """For each start i, whether ``flags[i : i + span]`` are all true (empty when fewer than ``span`` flags)."""
    if len(flags) < span:
        return np.zeros(0, dtype=bool)
    return np.asarray(np.lib.stride_tricks.sliding_window_view(flags, span).all(axis=1))


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
