"""What a method may ask clients each round (``ClientQueries``) and the traffic and extra passes each answer costs."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import numpy as np

from driftbench.engine.batched import Params
from driftbench.engine.evaluate import DataSummary, OutputSummary
from driftbench.errors import RunError
from driftbench.methods import server_work

T = TypeVar("T")
FLOAT_BYTES = 4  # traffic is counted as float32, whatever the compute dtype
FORWARD_PASS = 1 / 3  # a forward-only pass costs a third of a training pass (forward + backward)


@dataclass
class Overhead:
    """Traffic and client work beyond plain model training, accumulated over a run."""

    upload_bytes: int = 0
    download_bytes: int = 0
    client_extra_passes: int = 0


@dataclass
class RoundTraffic:
    """Per-client query traffic of one round, for the simulated clock: bytes and extra work in training passes."""

    download: np.ndarray
    upload: np.ndarray
    work: np.ndarray  # extra passes over the client's window, in units of one training pass (forward = 1/3)

    @classmethod
    def empty(cls, num_clients: int) -> RoundTraffic:
        """No traffic yet for ``num_clients`` clients."""
        return cls(np.zeros(num_clients), np.zeros(num_clients), np.zeros(num_clients))

    def clients(self) -> np.ndarray:
        """Clients that answered any query."""
        return np.flatnonzero((self.download > 0) | (self.upload > 0) | (self.work > 0))


class ClientSide(Protocol):
    """What clients can compute from their current data this round (the scheduler implements it)."""

    def label_histograms(self, clients: np.ndarray) -> np.ndarray:
        """Label counts (len(clients) x C) of the clients' current training windows."""

    def losses(self, clients: np.ndarray, models: np.ndarray) -> np.ndarray:
        """Mean loss (len(clients) x len(models)) of bank models on the clients' training windows."""

    def gradients(self, clients: np.ndarray, model: int) -> np.ndarray:
        """Flattened gradients (len(clients) x P) of each client's mean loss at bank model ``model``."""

    def outputs(self, clients: np.ndarray, model: int, summarize: OutputSummary) -> np.ndarray:
        """Stacked ``summarize(features, probs, labels)`` of each client's window under bank model ``model``."""

    def inputs(self, clients: np.ndarray, summarize: DataSummary) -> np.ndarray:
        """Stacked ``summarize(inputs, labels)`` of each client's window."""

    def trained_outputs(self, clients: np.ndarray, params: Params, summarize: OutputSummary) -> np.ndarray:
        """Stacked ``summarize(features, probs, labels)`` of each client's window under its own model (``params`` row)."""

    def local_models(
        self, clients: np.ndarray, params: Params, rounds: int, rng: np.random.Generator, masks: Params | None
    ) -> Params:
        """Each client's ``params`` row trained ``rounds`` rounds of local steps on its window, without federation."""


class ClientQueries:
    """The clients' side of one round as a method sees it: answers requests and counts what they cost.

    Traffic is counted in float32 numbers: a histogram uploads C, a loss query downloads each
    model asked about and uploads one number per model, a gradient query downloads the model
    and uploads P numbers. Each pass of a client over its window counts as one extra pass.
    ``traffic``, when given, also receives each client's share for the simulated clock.
    ``truth`` (every client's true group) is given to an oracle method's queries only: no
    other object a method receives holds ground truth or drift events.
    """

    def __init__(
        self,
        changed: np.ndarray,
        side: ClientSide,
        model_bytes: int,
        overhead: Overhead,
        traffic: RoundTraffic | None = None,
        truth: np.ndarray | None = None,
    ) -> None:
        self.changed = changed  # clients whose local data changed since the last round (they know it)
        self._side, self._model_bytes, self._overhead = side, model_bytes, overhead
        self._traffic, self._truth = traffic, truth
        self.seconds = 0.0  # time spent computing client answers, excluded from server time

    def label_histograms(self, clients: np.ndarray) -> np.ndarray:
        """Label counts (len(clients) x C) of the clients' current training windows."""
        clients = np.asarray(clients)
        counts = self._timed(self._side.label_histograms, clients)
        self._charge(clients, upload_floats=counts.shape[1])
        return counts

    def losses(self, clients: np.ndarray, models: np.ndarray, trains_one: bool = False) -> np.ndarray:
        """Mean training-window loss of each of ``models`` (bank indices) on each client.

        ``trains_one``: each client then trains one of ``models`` this round, so one of the
        downloads is the plan's ordinary model download and is not counted again.
        """
        clients, models = np.asarray(clients), np.asarray(models)
        values = self._timed(self._side.losses, clients, models)
        self._charge(clients, len(models) - trains_one, len(models), len(models), FORWARD_PASS)
        return values

    def gradients(self, clients: np.ndarray, model: int) -> np.ndarray:
        """Each client's flattened gradient of its mean training-window loss at bank model ``model``."""
        clients = np.asarray(clients)
        values = self._timed(self._side.gradients, clients, model)
        self._charge(clients, 1, values.shape[1], 1, 1.0)
        return values

    def features(self, clients: np.ndarray, model: int, summarize: OutputSummary) -> np.ndarray:
        """Each client runs bank model ``model`` over its window and uploads ``summarize(features, probs, labels)``.

        Features are the classifier layer's input, probabilities the softmax outputs; the
        summary (a 1-D array per client) is computed on the client, so only it is uploaded.
        """
        clients = np.asarray(clients)
        values = self._timed(self._side.outputs, clients, model, summarize)
        self._charge(clients, 1, values.shape[1], 1, FORWARD_PASS)
        return values

    def data(self, clients: np.ndarray, summarize: DataSummary) -> np.ndarray:
        """Each client uploads ``summarize(inputs, labels)`` of its window (no model involved)."""
        clients = np.asarray(clients)
        values = self._timed(self._side.inputs, clients, summarize)
        self._charge(clients, upload_floats=values.shape[1])
        return values

    def reports(self, clients: np.ndarray, params: Params, summarize: OutputSummary) -> np.ndarray:
        """After training, each client runs its own trained model (``params``, rows in ``clients`` order) over its
        window and uploads ``summarize(features, probs, labels)``; the model is already on the client (no download)."""
        clients = np.asarray(clients)
        values = self._timed(self._side.trained_outputs, clients, params, summarize)
        self._charge(clients, 0, values.shape[1], 1, FORWARD_PASS)
        return values

    def local_models(
        self, clients: np.ndarray, params: Params, rounds: int, rng: np.random.Generator, masks: Params | None = None
    ) -> Params:
        """Each client trains its row of ``params`` for ``rounds`` rounds of local steps (``masks``: entries it may
        change) and uploads the result; counted as one model download and upload and ``rounds`` passes each."""
        clients = np.asarray(clients)
        values = self._timed(self._side.local_models, clients, params, rounds, rng, masks)
        upload = sum(p[0].numel() for p in params.values())
        self._charge(clients, 1, upload, rounds, 1.0)
        return values

    def ground_truth(self) -> np.ndarray:
        """Every client's true group now; only for methods marked ``oracle``."""
        if self._truth is None:
            raise RunError("only an oracle method may read ground truth")
        return self._truth

    def _charge(
        self, clients: np.ndarray, models: int = 0, upload_floats: int = 0, passes: int = 0, pass_cost: float = 0.0
    ) -> None:
        """Count, for each of ``clients``, ``models`` model downloads, an upload and ``passes`` extra passes."""
        down, up = self._model_bytes * models, FLOAT_BYTES * upload_floats
        self._overhead.download_bytes += down * len(clients)
        self._overhead.upload_bytes += up * len(clients)
        self._overhead.client_extra_passes += passes * len(clients)
        if self._traffic is not None:
            np.add.at(self._traffic.download, clients, down)
            np.add.at(self._traffic.upload, clients, up)
            np.add.at(self._traffic.work, clients, passes * pass_cost)

    def _timed(self, fn: Callable[..., T], *args: Any) -> T:
        started = time.perf_counter()
        try:
            with server_work.paused():
                return fn(*args)
        finally:
            self.seconds += time.perf_counter() - started
