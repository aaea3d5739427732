"""The MLflow tracker: one MLflow run per record, in the destination's experiment (``driftbench`` by default).

A run is found again by its ``driftbench.key`` tag. Metrics are buffered and sent in one batch at most
every ``flush_seconds`` (a sqlite store commits each batch to disk: tens of milliseconds), and at the end;
the scorecard is the artifact ``scorecard.json``. MLflow's usage telemetry is off unless
``$MLFLOW_DISABLE_TELEMETRY`` says otherwise: driftbench reaches no network.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

from mlflow import MlflowClient  # noqa: E402  (after the telemetry switch, which mlflow reads on import)
from mlflow.entities import Metric, Param, Run, RunTag  # noqa: E402

from driftbench.locks import flocked  # noqa: E402
from driftbench.tracking.destinations import SQLITE, Destination  # noqa: E402
from driftbench.tracking.values import KEY_TAG, Identity, Scalar, summary_tags  # noqa: E402

T = TypeVar("T")
PARAMS_TAGS, METRICS = 100, 1000  # MLflow's limits on one log_batch


class MlflowTracker:
    """Logs runs to the destination's MLflow tracking store (a ``sqlite:///`` file or a server) and experiment."""

    name = "mlflow"

    def __init__(self, destination: Destination, flush_seconds: float) -> None:
        self.client, self.experiment = opened(absolute(destination.where), destination.experiment)
        self.flush_seconds = flush_seconds
        self.run_id: str | None = None
        self.live = False  # whether this tracker started the run it logs to (and so ends it)
        self.metrics: list[Metric] = []
        self.tags: dict[str, str] = {}
        self.flushed = time.monotonic()

    def runs(self, identity: Identity) -> list[Run]:
        """The MLflow runs (not deleted) that log this record, newest first."""
        found: list[Run] = self.client.search_runs(
            [self.experiment], filter_string=f"tags.`{KEY_TAG}` = '{identity.key}'", order_by=["attributes.start_time DESC"]
        )
        return found

    def recorded(self, identity: Identity) -> bool:
        """Whether a finished MLflow run logs this record."""
        return any(run.info.status == "FINISHED" for run in self.runs(identity))

    def start(self, identity: Identity) -> None:
        """A fresh MLflow run named ``trace/method/seed<k>`` with the identity's tags and parameters; older ones deleted."""
        self.metrics, self.tags = [], {}
        for run in self.runs(identity):
            self.client.delete_run(run.info.run_id)
        self.run_id = self.client.create_run(self.experiment, run_name=identity.name, tags=identity.tags).info.run_id
        self.live = True
        for params in chunks([Param(k, v) for k, v in identity.params.items()], PARAMS_TAGS):
            self.client.log_batch(self.run_id, params=params)

    def reopen(self, identity: Identity) -> None:
        """Continue the record's newest finished MLflow run, its tags updated to the identity's."""
        finished = [run for run in self.runs(identity) if run.info.status == "FINISHED"]
        self.run_id, self.live = finished[0].info.run_id, False
        self.metrics, self.tags = [], dict(identity.tags)

    def log(self, scalars: Sequence[Scalar], tags: Mapping[str, str]) -> None:
        """Queue the scalars as metrics and the tags; send them once ``flush_seconds`` have passed since the last send."""
        stamp = int(time.time() * 1000)
        self.metrics += [Metric(s.tag, s.value, stamp, s.step) for s in scalars]
        self.tags.update(tags)
        if time.monotonic() - self.flushed >= self.flush_seconds:
            self.flush()

    def flush(self) -> None:
        """Send the queued metrics and tags."""
        assert self.run_id is not None  # start() or reopen() names the run
        for metrics in chunks(self.metrics, METRICS):
            self.client.log_batch(self.run_id, metrics=metrics)
        for tags in chunks([RunTag(k, v) for k, v in self.tags.items()], PARAMS_TAGS):
            self.client.log_batch(self.run_id, tags=tags)
        self.metrics, self.tags, self.flushed = [], {}, time.monotonic()

    def finish(self, summary: Mapping[str, Any]) -> None:
        """Send what is queued with the summary's tags, log the scorecard artifact, and end the run as finished."""
        assert self.run_id is not None
        self.tags.update(summary_tags(summary))
        self.flush()
        self.client.log_dict(self.run_id, summary["scorecard"], "scorecard.json")
        self.client.set_terminated(self.run_id, "FINISHED")
        self.run_id = None

    def close(self) -> None:
        """Send what is queued; a run this tracker started and did not finish (an interrupted run) ends as killed."""
        if self.run_id is None:
            return
        self.flush()
        if self.live:
            self.client.set_terminated(self.run_id, "KILLED")
        self.run_id = None


TRACKER = MlflowTracker  # the class driftbench.tracking.feed.open_tracker makes


@cache
def opened(uri: str, experiment: str) -> tuple[MlflowClient, str]:
    """The store's client and the experiment's id (created if missing), opened once per process: opening a store
    costs about 0.25 s of CPU, a run's whole log about 0.1 s."""
    # Pool workers open one store at once; MLflow creates a new store's tables in each process that finds them
    # missing, and two at a time collide: the first process to open a new sqlite store creates them under a flock.
    sqlite = uri.startswith(SQLITE)
    with flocked(Path(uri.removeprefix(SQLITE)).parent) if sqlite else nullcontext():
        client = MlflowClient(tracking_uri=uri)
        found = client.get_experiment_by_name(experiment)
        return client, client.create_experiment(experiment) if found is None else found.experiment_id


def absolute(uri: str) -> str:
    """The URI with an sqlite store's relative path made absolute (from the current folder); other URIs as they are."""
    if not uri.startswith(SQLITE) or Path(uri.removeprefix(SQLITE)).is_absolute():
        return uri
    return f"{SQLITE}{Path(uri.removeprefix(SQLITE)).resolve()}"


def chunks(items: Sequence[T], size: int) -> list[Sequence[T]]:
    """``items`` in consecutive pieces of at most ``size``."""
    return [items[i : i + size] for i in range(0, len(items), size)]
