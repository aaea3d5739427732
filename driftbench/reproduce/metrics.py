"""The metrics a claim may compare: how each is read from a run (its summary, or its rows by ``record.scores``), and shown."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from driftbench.methods.events import EVENT_KINDS
from driftbench.record.schema import Summary
from driftbench.record.scores import peak_accuracy, seconds_to

EVENTS_PREFIX = "events."


@dataclass(frozen=True)
class Context:
    """What a run's metric may read beside its summary: the time-to-accuracy target's run, the no-drift twin's run, and
    the run's own rows (rounds.csv's, read through its record when a metric asks)."""

    target: Summary | None = None
    twin: Summary | None = None
    rows: Callable[[], pd.DataFrame] | None = None

    def run_rows(self) -> pd.DataFrame:
        """The run's rows (a metric that reads them is given them: ``scoring``, ``calibrate``)."""
        assert self.rows is not None
        return self.rows()


@dataclass(frozen=True)
class Metric:
    """A per-run number a claim compares: how to read it from a summary, why it may be missing, and how it is shown."""

    read: Callable[[Summary, Context], float | None]  # (run, its context) -> value
    missing: str  # why a run has no value
    fmt: str = "{:.3g}"
    shown: Callable[[float], float] = float  # the value as the report shows it
    healthy: bool = False  # read from the run's own level before a drift: a collapse before it leaves no meaning


def _mean_or_none(values: Sequence[float]) -> float | None:
    return float(np.mean(values)) if values else None


def log_speed(_: Summary, context: Context) -> float:
    """-ln(simulated hours to the target's final accuracy): a pair's difference is the log of their speed-up ratio.

    The target is reached as in summaries (``record.scores.seconds_to``); a run that never reaches
    it counts as reaching it at its end, a bound on its time that only the slower side of a claim
    may take (``judging.judge_claim``: the side claimed faster must reach the target).
    """
    target = context.target
    assert target is not None  # every tta_speedup claim has a target method (claim_file), whose run is planned
    return -math.log(seconds_to(context.run_rows(), target.final_accuracy) / 3600)


def stable_delta(summary: Summary, context: Context) -> float | None:
    """Fed-CM's Delta: (Stable - final) / Stable x 1000, Stable the final accuracy of the same method without the drift.

    Stable is the twin run's: the claim's trace with its drift removed (``twin``), same method and seed.
    Our reading: the paper prints Delta without defining it, so its claims are proxies.
    """
    twin = context.twin
    assert twin is not None  # a delta_permille_stable claim has a twin (claim_file), whose run is planned
    return (twin.final_accuracy - summary.final_accuracy) / twin.final_accuracy * 1000


def pre_drift(summary: Summary, _: Context) -> float | None:
    """The mean accuracy of the evaluations before the first drift event (its recovery record's ``pre``)."""
    return next((r.pre for r in summary.recovery if r.pre is not None), None)


METRICS: dict[str, Metric] = {
    "final_accuracy": Metric(lambda s, _: s.final_accuracy, "no final accuracy", "{:.3f}"),
    "tta_speedup": Metric(log_speed, "no evaluation", "{:.3g} sim h", lambda v: math.exp(-v)),
    "mean_accuracy": Metric(lambda s, _: s.streaming.mean_accuracy, "no evaluation", "{:.3f}"),
    "worst_interval_accuracy": Metric(lambda s, _: s.streaming.worst_interval_accuracy, "no evaluation", "{:.3f}"),
    "post_drift_accuracy": Metric(
        lambda s, _: s.streaming.post_drift_accuracy, "no evaluation at or after a drift event", "{:.3f}"
    ),
    "mean_drop": Metric(
        lambda s, _: _mean_or_none([r.drop for r in s.recovery if r.drop is not None]),
        "no drift event with an evaluation before it",
        "{:.3f}",
        healthy=True,
    ),
    "rounds_to_recover": Metric(
        lambda s, _: _mean_or_none([r.rounds_to_recover for r in s.recovery if r.rounds_to_recover is not None]),
        "no drift event it recovered from",
        healthy=True,
    ),
    "delta_permille": Metric(
        lambda s, _: _mean_or_none([r.delta_permille for r in s.recovery if r.delta_permille is not None]),
        "no drift event with an evaluation before it",
        healthy=True,
    ),
    "delta_permille_stable": Metric(stable_delta, "no final accuracy", healthy=True),
    "peak_accuracy": Metric(lambda _, c: peak_accuracy(c.run_rows()), "no evaluation", "{:.3f}"),
    "newcomer_accuracy": Metric(lambda s, _: s.newcomer_accuracy, "no newcomers (the trace's newcomers is 0)", "{:.3f}"),
    "pre_drift_accuracy": Metric(pre_drift, "no evaluation before a drift event", "{:.3f}"),
    "ari_mean": Metric(lambda s, _: s.ari_mean, "no evaluation whose ground truth has >= 2 groups", "{:.3f}"),
    "n_clusters_final": Metric(lambda s, _: s.n_clusters_final, "no cluster count"),
    "mean_client_distance_final": Metric(lambda s, _: s.mean_client_distance_final, "no clustering", "{:.3f}"),
    "cluster_seconds": Metric(lambda s, _: s.overhead.cluster_seconds, "no server time"),
    "client_query_seconds": Metric(lambda s, _: s.overhead.client_query_seconds, "no client time"),
    "clustering_seconds": Metric(lambda s, _: s.overhead.cluster_seconds + s.overhead.client_query_seconds, "no server time"),
    "scorecard.in_segment_accuracy": Metric(lambda s, _: s.scorecard.in_segment_accuracy, "no segment completed", "{:.3f}"),
    "scorecard.next_segment_accuracy": Metric(
        lambda s, _: s.scorecard.next_segment_accuracy, "no drift event: no next segment", "{:.3f}"
    ),
    "scorecard.next_segment_worst": Metric(
        lambda s, _: s.scorecard.next_segment_worst, "no drift event: no next segment", "{:.3f}"
    ),
    "scorecard.backward_transfer": Metric(
        lambda s, _: s.scorecard.backward_transfer, "fewer than two segments", "{:.3f}", healthy=True
    ),
    "scorecard.forgetting": Metric(lambda s, _: s.scorecard.forgetting, "fewer than two segments", "{:.3f}", healthy=True),
    "scorecard.prequential_accuracy": Metric(lambda s, _: s.scorecard.prequential_accuracy, "no client trained", "{:.3f}"),
    "scorecard.detection_delay": Metric(lambda s, _: s.scorecard.detection.delay_mean, "no drift event detected"),
    "scorecard.client_detection_delay": Metric(
        lambda s, _: s.scorecard.detection.client_delay_mean, "no drifted client reached by a reaction"
    ),
    "scorecard.false_alarms": Metric(lambda s, _: s.scorecard.detection.false_alarms, "no detection record"),
    "scorecard.missed_events": Metric(lambda s, _: s.scorecard.detection.missed, "no detection record"),
}


def metric_names() -> list[str]:
    """Every metric a claim may name: the summary metrics, then ``events.<kind>`` for each event kind."""
    return [*METRICS, *(EVENTS_PREFIX + kind for kind in EVENT_KINDS)]


def metric_spec(name: str) -> Metric:
    """The named metric; ``events.<kind>`` reads the run's count of that method event."""
    if name.startswith(EVENTS_PREFIX):
        kind = name.removeprefix(EVENTS_PREFIX)
        return Metric(lambda s, _: s.events.get(kind), "no count of this event kind in its run record")
    return METRICS[name]
