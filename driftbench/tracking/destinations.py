"""Where runs are logged: ``--log TRACKER[=WHERE]`` as a destination, and the trackers one run logs to.

No tracker package is imported here: the command line parses ``--log`` before anything heavy loads.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from driftbench.errors import ConfigError

# each tracker's module (imported only when a run logs to it), whose TRACKER is its tracker class
TRACKER_MODULES = {"tensorboard": "driftbench.tracking.tensorboard_tracker", "mlflow": "driftbench.tracking.mlflow_tracker"}
TRACKERS = tuple(TRACKER_MODULES)
PACKAGES = {"tensorboard": ("tensorboard",), "mlflow": ("mlflow",)}  # what each tracker imports (the extra tracking)
SQLITE, SQLITE_PACKAGES = "sqlite:///", ("sqlalchemy", "alembic")  # an sqlite MLflow store's scheme and packages
TENSORBOARD_DIR = "tensorboard"  # the default TensorBoard folder, in the current directory
MLFLOW_DB = "mlflow.db"  # the default MLflow store, sqlite in the current directory, unless $MLFLOW_TRACKING_URI
MLFLOW_EXPERIMENT = "driftbench"  # the MLflow experiment, unless $MLFLOW_EXPERIMENT_NAME


@dataclass(frozen=True)
class Destination:
    """Where one tracker logs: the tracker's name (``TRACKERS``), where it writes (a TensorBoard folder or an MLflow
    tracking URI) and, for MLflow, the experiment. Resolved once in the command's process: pool workers and Ray tasks
    only follow it."""

    tracker: str
    where: str
    experiment: str = ""

    def __str__(self) -> str:
        return f"{self.tracker}={self.where}"


@dataclass(frozen=True)
class Tracking:
    """The trackers a run logs to, the runs root its TensorBoard folder is named from, and tags to give it.

    A run's TensorBoard folder is its run folder's path below ``root`` (``<trace>/<method>/seed<k>``
    for a plain run) inside the TensorBoard destination.
    """

    destinations: tuple[Destination, ...] = ()
    root: str = ""
    tags: tuple[tuple[str, str], ...] = ()


NO_TRACKING = Tracking()


def destination(value: str) -> Destination:
    """``TRACKER`` or ``TRACKER=WHERE`` as a destination; WHERE defaults to ``./tensorboard`` or MLflow's store.

    MLflow's store is ``$MLFLOW_TRACKING_URI`` when set, else ``sqlite:///<here>/mlflow.db``, and its
    experiment ``$MLFLOW_EXPERIMENT_NAME`` or ``driftbench``. A TensorBoard folder is made absolute.
    """
    tracker, _, where = value.partition("=")
    if tracker not in TRACKERS:
        raise ConfigError(f"--log {value!r}: unknown tracker {tracker!r}; allowed: {', '.join(TRACKERS)} (optionally =WHERE)")
    if tracker == "tensorboard":
        return Destination(tracker, str(Path(where or TENSORBOARD_DIR).expanduser().resolve()))
    default = os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{Path(MLFLOW_DB).resolve()}"
    return Destination(tracker, where or default, os.environ.get("MLFLOW_EXPERIMENT_NAME") or MLFLOW_EXPERIMENT)


def destinations(values: list[str] | tuple[str, ...]) -> tuple[Destination, ...]:
    """Each ``--log`` value as a destination, each once."""
    return tuple(dict.fromkeys(destination(v) for v in values))
