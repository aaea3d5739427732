"""The clients' side of a round: what they compute from their current data, with no view of ground truth.

A ``RoundClients`` holds the clients' data windows (a ``ClientStream``: no groups, no drift
events), the round's segments, the model and the method's bank; methods reach it only
through ``ClientQueries``, which counts every answer.
"""

from __future__ import annotations

from contextlib import AbstractContextManager

import numpy as np
import torch

from driftbench.engine.batched import BatchedTrainer, Params
from driftbench.engine.device_data import DevicePool, LocalWork, batch_plan
from driftbench.engine.evaluate import (
    DataSummary,
    OutputSummary,
    client_gradients,
    client_inputs,
    client_outputs,
    per_client_mean,
)
from driftbench.engine.precision import evaluation
from driftbench.methods.base import Method
from driftbench.methods.rounds import Phase
from driftbench.traces.model import ClientStream
from driftbench.train_config import TrainConfig

Views = tuple[list[np.ndarray], np.ndarray, np.ndarray]  # windows (pool indices), label maps, rotations


class RoundClients:
    """Every client's current windows and transforms under the current model bank (``method.models``)."""

    def __init__(
        self,
        stream: ClientStream,
        segments: np.ndarray,
        pool_y: np.ndarray,
        model: torch.nn.Module,
        data: DevicePool,
        method: Method,
        train: TrainConfig,
        trainer: BatchedTrainer,
    ) -> None:
        self.stream, self.segments, self.pool_y = stream, segments, pool_y
        self.model, self.data, self.method, self.train, self.trainer = model, data, method, train, trainer

    def bank(self) -> Params:
        """The method's model bank as it is now."""
        return self.method.models

    def views(self, clients: np.ndarray, test: bool = False) -> Views:
        """The clients' current train (or test) windows, label maps and rotations."""
        s, segs = self.stream, self.segments[clients]
        windows = s.test_indices if test else s.train_indices
        return [windows(seg) for seg in segs], s.label_maps[s.seg_map[segs]], s.seg_rotation[segs]

    def window_sizes(self) -> np.ndarray:
        """Every client's current training-window size."""
        bounds = self.stream.seg_train[self.segments]
        sizes: np.ndarray = bounds[:, 1] - bounds[:, 0]
        return sizes

    def work(self, clients: np.ndarray, rng: np.random.Generator, phase: Phase) -> LocalWork:
        """One phase of this round's local training for ``clients``: batches from their windows (``Phase`` says how)."""
        windows, maps, rotations = self.views(clients)
        if phase.per_class:
            labels = [self.stream.train_labels(seg, self.pool_y) for seg in self.segments[clients]]
            windows = [class_balanced(rng, w, y, phase.per_class) for w, y in zip(windows, labels)]
        if phase.epochs:
            sizes = np.array([len(w) for w in windows])
            steps = np.maximum(1, np.ceil(phase.epochs * sizes / self.train.batch_size)).astype(np.int64)
        else:
            steps = np.full(len(clients), self.train.local_steps if phase.local_steps is None else phase.local_steps)
        return LocalWork(
            clients=clients,
            batches=batch_plan(rng, windows, int(steps.max(initial=0)), self.train.batch_size),
            steps=steps,
            label_maps=maps,
            rotations=rotations,
        )

    def accuracy(self, assignment: np.ndarray) -> np.ndarray:
        """Every client's test accuracy with its assigned bank model."""
        tests = self.views(np.arange(len(self.segments)), test=True)
        with self.precision():
            return per_client_mean(self.model, self.data, self.bank(), assignment, *tests, "accuracy")

    def label_histograms(self, clients: np.ndarray) -> np.ndarray:
        """Label counts of the clients' current train windows after their label maps."""
        s = self.stream
        counts = [np.bincount(s.train_labels(seg, self.pool_y), minlength=s.num_classes) for seg in self.segments[clients]]
        return np.stack(counts).astype(np.float64)

    def losses(self, clients: np.ndarray, models: np.ndarray) -> np.ndarray:
        """Mean train-window loss of each bank model in ``models`` on each client."""
        windows, maps, rotations = self.views(clients)
        with self.precision():
            columns = [
                per_client_mean(self.model, self.data, self.bank(), np.full(len(clients), m), windows, maps, rotations, "loss")
                for m in models
            ]
        return np.stack(columns, axis=1) if columns else np.zeros((len(clients), 0))

    def gradients(self, clients: np.ndarray, model: int) -> np.ndarray:
        """Flattened gradients of the clients' mean train-window loss at bank model ``model``."""
        with self.precision():
            return client_gradients(self.model, self.data, self._model(model), *self.views(clients)).cpu().numpy()

    def outputs(self, clients: np.ndarray, model: int, summarize: OutputSummary) -> np.ndarray:
        """Stacked ``summarize(features, probs, labels)`` of each client's window under bank model ``model``."""
        with self.precision():
            return client_outputs(self.model, self.data, self._model(model), *self.views(clients), summarize)

    def trained_outputs(self, clients: np.ndarray, params: Params, summarize: OutputSummary) -> np.ndarray:
        """Stacked ``summarize(features, probs, labels)`` of each client's window under its own model (``params`` row k)."""
        with self.precision():
            rows = [
                client_outputs(
                    self.model, self.data, {n: p[k] for n, p in params.items()}, *self.views(clients[k : k + 1]), summarize
                )
                for k in range(len(clients))
            ]
        return np.concatenate(rows) if rows else np.zeros((0, 0))

    def local_models(
        self, clients: np.ndarray, params: Params, rounds: int, rng: np.random.Generator, masks: Params | None
    ) -> Params:
        """Each client's ``params`` row trained ``rounds`` x the trace's local steps on its window, in one go."""
        work = self.work(clients, rng, Phase(local_steps=rounds * self.train.local_steps))
        return self.trainer.train(params, work, self.train, 0.0, masks, ()).params

    def test_accuracy(self, clients: np.ndarray, params: Params) -> np.ndarray:
        """Each client's test accuracy with its own model (``params`` row k for ``clients[k]``)."""
        with self.precision():
            rows = np.arange(len(clients))
            return per_client_mean(self.model, self.data, params, rows, *self.views(clients, test=True), "accuracy")

    def inputs(self, clients: np.ndarray, summarize: DataSummary) -> np.ndarray:
        """Stacked ``summarize(inputs, labels)`` of each client's window."""
        return client_inputs(self.data, *self.views(clients), summarize)

    def precision(self) -> AbstractContextManager[None]:
        """The run's arithmetic precision for a pass that evaluates a bank model."""
        return evaluation(self.train.precision, self.data.device)

    def _model(self, index: int) -> Params:
        return {n: p[index] for n, p in self.bank().items()}


def class_balanced(rng: np.random.Generator, window: np.ndarray, labels: np.ndarray, per_class: int) -> np.ndarray:
    """m samples of each class in ``window`` (``labels`` its labels), m = min(``per_class``, the rarest class's count)."""
    classes, counts = np.unique(labels, return_counts=True)
    m = min(per_class, int(counts.min()))
    return np.concatenate([rng.choice(window[labels == c], m, replace=False) for c in classes])
