"""Passes over clients' data: per-client accuracy and loss, gradients, and client-side summaries of outputs or inputs."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, grad

from driftbench.engine.batched import Params
from driftbench.engine.dense import dense_grads, dense_layers
from driftbench.engine.device_data import DevicePool
from driftbench.engine.features import classifier_name, head_inputs

EVAL_CHUNK = 8192  # samples per forward pass
STATISTICS = ("accuracy", "loss")


@torch.no_grad()
def per_client_mean(
    model: nn.Module,
    data: DevicePool,
    bank: Params,
    model_of_client: np.ndarray,
    windows: list[np.ndarray],
    label_maps: np.ndarray,
    rotations: np.ndarray,
    statistic: str = "accuracy",
) -> np.ndarray:
    """Mean accuracy or loss of every client on its samples (with its label map and rotation) under ``bank[model_of_client[c]]``.

    One forward pass per model and chunk: all clients served by the same model are processed together.
    """
    total = np.zeros(len(windows))
    lengths = np.array([len(w) for w in windows])
    for clients, _, values in _sample_passes(model, data, bank, model_of_client, windows, label_maps, rotations, statistic):
        total += np.bincount(clients, weights=values, minlength=len(windows))
    means: np.ndarray = total / np.maximum(lengths, 1)
    return means


@torch.no_grad()
def per_sample(
    model: nn.Module,
    data: DevicePool,
    bank: Params,
    model_of_client: np.ndarray,
    windows: list[np.ndarray],
    label_maps: np.ndarray,
    rotations: np.ndarray,
    statistic: str = "accuracy",
) -> np.ndarray:
    """Accuracy (0 or 1) or loss of every sample of the concatenated windows, in that order; ``per_client_mean``'s passes."""
    out = np.zeros(sum(len(w) for w in windows))
    for _, rows, values in _sample_passes(model, data, bank, model_of_client, windows, label_maps, rotations, statistic):
        out[rows] = values
    return out


def _sample_passes(
    model: nn.Module,
    data: DevicePool,
    bank: Params,
    model_of_client: np.ndarray,
    windows: list[np.ndarray],
    label_maps: np.ndarray,
    rotations: np.ndarray,
    statistic: str,
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per model and chunk of its clients' samples: each sample's client, its row in the concatenated windows, its value."""
    if statistic not in STATISTICS:
        raise ValueError(f"statistic must be one of {STATISTICS}, got {statistic!r}")
    _, owner, idx, maps = _flatten(windows, label_maps, data.device)
    for m in np.unique(model_of_client):
        params = {n: p[m] for n, p in bank.items()}
        rows = np.flatnonzero(model_of_client[owner] == m)
        for start in range(0, len(rows), EVAL_CHUNK):
            chunk = rows[start : start + EVAL_CHUNK]
            clients = owner[chunk]
            x, y = data.gather(torch.as_tensor(idx[chunk, None], device=data.device), maps[clients], rotations[clients])
            logits = functional_call(model, params, (x[:, 0],))
            if statistic == "accuracy":
                values = logits.argmax(1) == y[:, 0]
            else:
                values = F.cross_entropy(logits, y[:, 0], reduction="none")
            yield clients, chunk, values.double().cpu().numpy()


def client_gradients(
    model: nn.Module, data: DevicePool, params: Params, windows: list[np.ndarray], label_maps: np.ndarray, rotations: np.ndarray
) -> torch.Tensor:
    """Each client's gradient (flattened, K x P) of its mean loss over its window at ``params``.

    A dense ReLU network (``dense_layers``) outside autocast takes all clients with windows of one
    length at once, by the trainer's written-out backpropagation; any other model one client at
    a time with ``torch.func.grad``.
    """
    if dense_layers(model) is not None and not torch.is_autocast_enabled(data.device.type):
        return _dense_client_gradients(data, params, windows, label_maps, rotations)

    def loss(p: Params, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(functional_call(model, p, (x,)), y)

    grad_fn = grad(loss)
    samples = _client_samples(data, windows, label_maps, rotations)
    return torch.stack([torch.cat([g.reshape(-1) for g in grad_fn(params, x, y).values()]) for x, y in samples])


def _dense_client_gradients(
    data: DevicePool, params: Params, windows: list[np.ndarray], label_maps: np.ndarray, rotations: np.ndarray
) -> torch.Tensor:
    """``client_gradients`` of a dense network: clients grouped by window length, EVAL_CHUNK samples per pass."""
    live = list(params.values())
    grads = live[0].new_empty((len(windows), sum(p.numel() for p in live)))
    lengths = np.array([len(w) for w in windows])
    for length in np.unique(lengths):
        same = np.flatnonzero(lengths == length)
        per_pass = max(1, EVAL_CHUNK // max(int(length), 1))
        for start in range(0, len(same), per_pass):
            rows = same[start : start + per_pass]
            idx = torch.as_tensor(np.stack([windows[k] for k in rows]), device=data.device)
            x, y = data.gather(idx, torch.as_tensor(label_maps[rows], device=data.device), rotations[rows])
            per_client, _ = dense_grads([p.expand(len(rows), *p.shape) for p in live], x, y)
            grads[torch.as_tensor(rows, device=data.device)] = torch.cat([g.reshape(len(rows), -1) for g in per_client], 1)
    return grads


def _flatten(
    windows: list[np.ndarray], label_maps: np.ndarray, device: torch.device
) -> tuple[np.ndarray, np.ndarray, np.ndarray, torch.Tensor]:
    """All clients' windows as one index array: per-client lengths, each sample's client, the indices and the label maps."""
    lengths = np.array([len(w) for w in windows])
    owner = np.repeat(np.arange(len(windows)), lengths)
    idx = np.concatenate(windows) if windows else np.zeros(0, dtype=np.int64)
    return lengths, owner, idx, torch.as_tensor(label_maps, device=device)


def _client_samples(
    data: DevicePool, windows: list[np.ndarray], label_maps: np.ndarray, rotations: np.ndarray
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Each client's whole window (inputs, labels) after its transforms, one client at a time."""
    maps = torch.as_tensor(label_maps, device=data.device)
    for k, window in enumerate(windows):
        x, y = data.gather(torch.as_tensor(window[None], device=data.device), maps[k : k + 1], rotations[k : k + 1])
        yield x[0], y[0]


ClientSummary = np.ndarray | torch.Tensor  # a client's 1-D summary, array or tensor (as_numpy takes either)
OutputSummary = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], ClientSummary]  # (features, probs, labels) -> 1-D
DataSummary = Callable[[torch.Tensor, torch.Tensor], ClientSummary]  # (inputs, labels) -> 1-D


@torch.no_grad()
def client_outputs(
    model: nn.Module,
    data: DevicePool,
    params: Params,
    windows: list[np.ndarray],
    label_maps: np.ndarray,
    rotations: np.ndarray,
    summarize: OutputSummary,
) -> np.ndarray:
    """Stacked ``summarize(features, probabilities, labels)`` of each client's window under one model.

    Features are the classifier layer's input. All clients' samples go through the model in
    shared chunks; only the per-client summaries are computed one client at a time.
    """
    lengths, owner, idx, maps = _flatten(windows, label_maps, data.device)
    probs, labels = [], []
    with head_inputs(model.get_submodule(classifier_name(model))) as captured:
        for start in range(0, len(idx), EVAL_CHUNK):
            rows = slice(start, start + EVAL_CHUNK)
            clients = owner[rows]
            x, y = data.gather(torch.as_tensor(idx[rows, None], device=data.device), maps[clients], rotations[clients])
            probs.append(torch.softmax(functional_call(model, params, (x[:, 0],)), dim=1))
            labels.append(y[:, 0])
    dtype = next(iter(params.values())).dtype  # bfloat16 autocast leaves the features in bfloat16
    features, probs_all, labels_all = torch.cat(captured).to(dtype), torch.cat(probs).to(dtype), torch.cat(labels)
    bounds = np.concatenate([[0], np.cumsum(lengths)])
    return np.stack(
        [as_numpy(summarize(features[a:b], probs_all[a:b], labels_all[a:b])) for a, b in zip(bounds[:-1], bounds[1:])]
    )


@torch.no_grad()
def client_inputs(
    data: DevicePool, windows: list[np.ndarray], label_maps: np.ndarray, rotations: np.ndarray, summarize: DataSummary
) -> np.ndarray:
    """Stacked ``summarize(inputs, labels)`` of each client's window as the client sees it (after its transforms)."""
    return np.stack([as_numpy(summarize(x, y)) for x, y in _client_samples(data, windows, label_maps, rotations)])


def as_numpy(values: ClientSummary) -> np.ndarray:
    """A summary as a 1-D float64 host array, whether the client returned a tensor or an array."""
    if isinstance(values, torch.Tensor):
        values = values.detach().cpu().numpy()
    return np.asarray(values, dtype=np.float64).reshape(-1)
