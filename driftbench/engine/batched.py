"""Lockstep local training of many clients: fused SGD steps over chunks of clients, in place on stacked parameters."""

from __future__ import annotations

import copy
import logging
import queue
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, grad, vmap

from driftbench.engine.dense import dense_layers, dense_step
from driftbench.engine.device_data import DevicePool, LocalWork, Transforms
from driftbench.engine.features import FeaturePenalty, FeatureTerm, classifier_name, head_inputs, penalised
from driftbench.engine.precision import autocast, float32_math
from driftbench.engine.sgd import Chunk, GradFn, StepFn, gradient_step
from driftbench.train_config import TrainConfig

Params = dict[str, torch.Tensor]
CACHE_BYTES = 4 << 20  # a CPU chunk's parameters and momentum buffers: within the 2-core machine's L2 and its L3 share
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainOutput:
    """Trained parameters stacked on the client axis, each client's mean training loss and recorded step deltas."""

    params: Params
    loss: torch.Tensor
    path: Params = field(default_factory=dict)  # name -> (K, S, ...) parameter change at every local step


def default_chunk_size(model: nn.Module, device: torch.device) -> int | None:
    """Clients per fused forward/backward: all on CUDA, one at a time for conv nets on CPU, else as many as fit ``CACHE_BYTES``.

    On CPU, vmap turns a convolution over stacked weights into a grouped convolution, which
    is slower than one client at a time; dense layers batch into efficient matmuls. A chunk
    runs all its local steps before the next starts, so a chunk whose parameters and momentum
    buffers stay in the cache does not stream them from memory at every step.
    """
    if device.type == "cuda":
        return None
    if has_conv(model):
        return 1
    return max(1, CACHE_BYTES // (2 * sum(p.numel() * p.element_size() for p in model.parameters())))


def chunk_clients(clients: int, chunk_size: int | None) -> int:
    """Clients per chunk when ``clients`` train ``chunk_size`` at most at a time (None: all), in chunks of equal size ± 1."""
    chunks = -(-clients // (chunk_size or max(clients, 1)))
    return max(1, -(-clients // max(chunks, 1)))


@dataclass(frozen=True)
class WorkingCopy:
    """A copy of the model that trains one client at a time: its parameters, momentum buffers, classifier and forward."""

    model: nn.Module
    params: list[torch.Tensor]
    buffers: list[torch.Tensor]
    head: nn.Module
    forward: Callable[..., torch.Tensor]


def working_copy(model: nn.Module, device: torch.device, compile: bool) -> WorkingCopy:
    """A trainable copy of ``model``, channels-last for conv nets on CPU, its forward compiled when asked for."""
    local = copy.deepcopy(model).requires_grad_(True)
    if device.type == "cpu" and has_conv(model):
        local = local.to(memory_format=torch.channels_last)
    params: list[torch.Tensor] = list(local.parameters())
    head = local.get_submodule(classifier_name(local))
    return WorkingCopy(local, params, [torch.zeros_like(p) for p in params], head, _compiled(local) if compile else local)


def has_conv(model: nn.Module) -> bool:
    """Whether the model has a 2-d convolution."""
    return any(isinstance(m, nn.Conv2d) for m in model.modules())


def stack(params: list[Params]) -> Params:
    """Stack per-client parameter dicts on a new leading axis."""
    return {name: torch.stack([p[name] for p in params]) for name in params[0]}


class BatchedTrainer:
    """Trains a batch of clients that share an architecture; parameters carry a leading client axis.

    Clients are trained ``chunk_size`` at a time (None: all at once). A chunk of one client
    trains a persistent working copy of the model with ordinary autograd (channels-last for
    conv nets on CPU), so it pays no functorch overhead; on CPU as many clients as torch has
    threads train side by side, one per thread on its own copy. Larger chunks train views
    into the stacked parameters, a dense ReLU network outside bf16 and compiling by the
    written-out backpropagation of ``driftbench.engine.dense``, any other model with
    ``vmap(grad(...))``.
    All apply the same SGD update. A ``FeaturePenalty`` adds a term on the classifier layer's
    input to each client's loss; a dense network then trains with ``vmap(grad(...))``.
    ``precision`` is the arithmetic (``driftbench.engine.precision``: fp32, tf32 or bf16
    autocast of the forward passes; parameters and updates stay float32). ``compile`` wraps
    the forward pass in ``torch.compile`` and falls back to eager mode, with a warning, if
    compiling fails.
    """

    def __init__(
        self,
        model: nn.Module,
        data: DevicePool,
        chunk_size: int | None = None,
        precision: str = "fp32",
        compile: bool = False,
    ) -> None:
        self.model, self.data, self.chunk_size, self.precision = model, data, chunk_size, precision
        self.names = [n for n, _ in model.named_parameters()]
        self.head = model.get_submodule(classifier_name(model))
        self.vmapped: Callable[..., tuple[Params, torch.Tensor]] = vmap(grad(self._loss, has_aux=True), in_dims=(0, 0, 0))
        dense = dense_layers(model) is not None and precision != "bf16" and not compile
        self.chunk_step: StepFn = dense_step if dense else gradient_step(self._vmapped_grads)
        self.compile = compile
        self.copies: queue.SimpleQueue[WorkingCopy] = queue.SimpleQueue()  # idle working copies, one per client thread
        self.made = 0
        if compile and chunk_size != 1:
            self.vmapped = _compiled(self.vmapped)

    def _cross_entropy(self, logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits.float() if self.precision == "bf16" else logits, y)

    def _loss(self, params: Params, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        with autocast(self.precision, self.data.device):
            logits = functional_call(self.model, params, (x,))
        loss = self._cross_entropy(logits, y)
        return loss, loss.detach()

    def _penalised_loss(
        self, term: FeatureTerm, params: Params, x: torch.Tensor, y: torch.Tensor, weight: torch.Tensor, *targets: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        with head_inputs(self.head) as features, autocast(self.precision, self.data.device):
            logits = functional_call(self.model, params, (x,))
        loss = penalised(self._cross_entropy(logits, y), term, features[0], y, weight, targets)
        return loss, loss.detach()

    def _local_grads(self, local: WorkingCopy, penalty: FeaturePenalty | None) -> GradFn:
        """Gradients of the working copy's loss on one client's batch, plus that client's ``penalty`` term if any."""

        def grads(live: list[torch.Tensor], x: torch.Tensor, y: torch.Tensor) -> tuple[list[torch.Tensor], torch.Tensor]:
            if penalty is None:
                with autocast(self.precision, self.data.device):
                    loss = self._cross_entropy(local.forward(x[0]), y[0])
            else:
                weight, targets = penalty.client(0)
                with head_inputs(local.head) as features, autocast(self.precision, self.data.device):
                    logits = local.model(x[0])  # never compiled: the hook must see the classifier's input
                loss = penalised(self._cross_entropy(logits, y[0]), penalty.term, features[0], y[0], weight, targets)
            return list(torch.autograd.grad(loss, live)), loss.detach().unsqueeze(0)

        return grads

    def _penalised_grads(self, penalty: FeaturePenalty) -> GradFn:
        """Per-client gradients of the penalised loss of a chunk (``penalty`` holds the chunk's rows), by ``vmap(grad(...))``."""
        per_client = vmap(
            grad(partial(self._penalised_loss, penalty.term), has_aux=True), in_dims=(0,) * (4 + len(penalty.targets))
        )

        def grads(live: list[torch.Tensor], x: torch.Tensor, y: torch.Tensor) -> tuple[list[torch.Tensor], torch.Tensor]:
            values, loss = per_client(dict(zip(self.names, live)), x, y, penalty.weight, *penalty.targets)
            return [values[n] for n in self.names], loss

        return grads

    def _vmapped_grads(
        self, live: list[torch.Tensor], x: torch.Tensor, y: torch.Tensor
    ) -> tuple[list[torch.Tensor], torch.Tensor]:
        grads, loss = self.vmapped(dict(zip(self.names, live)), x, y)
        return [grads[n] for n in self.names], loss

    def train(
        self,
        start: Params,
        work: LocalWork,
        cfg: TrainConfig,
        mu: float = 0.0,
        masks: Params | None = None,
        record: tuple[str, ...] = (),
        penalty: FeaturePenalty | None = None,
    ) -> TrainOutput:
        """Run ``work`` from ``start`` (K, ...) with SGD (momentum, weight decay) and FedProx term ``mu``.

        ``masks`` (name -> K x shape of 0/1) multiply every step's update, so masked entries keep
        their start value (pruned or frozen parameters); ``record`` names parameters whose
        change at every local step is returned in ``TrainOutput.path``; ``penalty`` (rows in
        ``work``'s client order) adds its term to each client's loss.
        """
        device, masks = self.data.device, masks or {}
        params = {n: start[n].clone() for n in self.names}
        k_total, s_total = work.batches.shape[:2]
        idx = torch.as_tensor(work.batches, device=device)
        maps = torch.as_tensor(work.label_maps, device=device)
        loss_sum = torch.zeros(k_total, dtype=params[self.names[0]].dtype, device=device)
        path = {n: params[n].new_zeros((k_total, s_total, *params[n].shape[1:])) for n in record}
        with float32_math(self.precision):
            if self.chunk_size == 1:
                self._each_client(
                    k_total,
                    lambda local, k: self._train_local(
                        local, k, params, start, masks, idx, maps, work, cfg, mu, loss_sum, path, penalty
                    ),
                )
            else:
                size = chunk_clients(k_total, self.chunk_size)
                for lo in range(0, k_total, size):
                    rows = slice(lo, min(lo + size, k_total))
                    transforms = self.data.transforms(maps[rows], work.rotations[rows])
                    chunk = Chunk(
                        [params[n][rows] for n in self.names],
                        [start[n][rows] for n in self.names],
                        [torch.zeros_like(params[n][rows]) for n in self.names] if cfg.momentum else [],
                        [masks[n][rows] if n in masks else None for n in self.names],
                    )
                    recorded = {self.names.index(n): path[n][rows] for n in record}
                    step = self.chunk_step if penalty is None else gradient_step(self._penalised_grads(penalty.rows(rows)))
                    self._steps(chunk, step, idx[rows], transforms, work.steps[rows], cfg, mu, loss_sum[rows], recorded)
        return TrainOutput(params, loss_sum / torch.as_tensor(np.maximum(work.steps, 1), device=device), path)

    def _each_client(self, clients: int, train: Callable[[WorkingCopy, int], None]) -> None:
        """``train(copy, k)`` for every client k, on a working copy: one thread, or on CPU one per torch thread.

        On CPU clients train side by side, each on its own thread with single-threaded operators:
        the small convolutions of a client's step split poorly over threads, and threads that
        meet at every operator stall whenever the busy machine deschedules one of them.
        """
        threads = min(torch.get_num_threads(), clients) if self.data.device.type == "cpu" and not self.compile else 1
        for _ in range(threads - self.made):
            self.copies.put(working_copy(self.model, self.data.device, self.compile))
            self.made += 1

        def on_a_copy(k: int) -> None:
            local = self.copies.get()
            try:
                train(local, k)
            finally:
                self.copies.put(local)

        if threads == 1:
            for k in range(clients):
                on_a_copy(k)
            return
        with operators_on_one_thread(), ThreadPoolExecutor(threads) as pool:
            list(pool.map(on_a_copy, range(clients)))

    def _train_local(
        self,
        local: WorkingCopy,
        k: int,
        params: Params,
        start: Params,
        masks: Params,
        idx: torch.Tensor,
        maps: torch.Tensor,
        work: LocalWork,
        cfg: TrainConfig,
        mu: float,
        loss_sum: torch.Tensor,
        path: Params,
        penalty: FeaturePenalty | None,
    ) -> None:
        """Train client ``k`` on working copy ``local``: load its parameters, run its steps, store them back."""
        rows = slice(k, k + 1)
        step = gradient_step(self._local_grads(local, None if penalty is None else penalty.rows(rows)))
        with torch.no_grad():
            torch._foreach_copy_(local.params, [params[n][k] for n in self.names])
            if cfg.momentum:
                torch._foreach_zero_(local.buffers)
        chunk = Chunk(
            local.params,
            [start[n][k] for n in self.names],
            local.buffers if cfg.momentum else [],
            [masks[n][k] if n in masks else None for n in self.names],
        )
        recorded = {self.names.index(n): path[n][rows] for n in path}
        transforms = self.data.transforms(maps[rows], work.rotations[rows])
        self._steps(chunk, step, idx[rows], transforms, work.steps[rows], cfg, mu, loss_sum[rows], recorded)
        with torch.no_grad():
            torch._foreach_copy_([params[n][k] for n in self.names], local.params)

    def _steps(
        self,
        chunk: Chunk,
        step: StepFn,
        idx: torch.Tensor,
        transforms: Transforms,
        steps: np.ndarray,
        cfg: TrainConfig,
        mu: float,
        loss_sum: torch.Tensor,
        recorded: dict[int, torch.Tensor],
    ) -> None:
        """Run a chunk's local steps in place; a client past its own step count keeps its state (ragged work)."""
        total = int(steps.max(initial=0))
        for s, (x, y) in enumerate(self.data.batches(idx[:, :total], transforms)):
            idle = np.flatnonzero(steps <= s)  # decided on the host: no device sync per step
            with torch.no_grad():
                kept = _rows(chunk.live + chunk.buffers, idle)
                before = {i: chunk.live[i].clone() for i in recorded}
            loss = step(chunk, x, y, cfg, mu)
            with torch.no_grad():
                _restore_rows(chunk.live + chunk.buffers, idle, kept)
                for i, deltas in recorded.items():
                    deltas[:, s] = (chunk.live[i] - before[i]).view_as(deltas[:, s])
                if len(idle):
                    loss = loss.index_fill(0, torch.as_tensor(idle, device=loss.device), 0.0)
                loss_sum += loss.to(loss_sum.dtype)


def _rows(tensors: list[torch.Tensor], rows: np.ndarray) -> list[torch.Tensor]:
    """Copies of the given client rows of stacked tensors (empty when no rows)."""
    if not len(rows):
        return []
    index = torch.as_tensor(rows, device=tensors[0].device)
    return [t.index_select(0, index) for t in tensors]


def _restore_rows(tensors: list[torch.Tensor], rows: np.ndarray, kept: list[torch.Tensor]) -> None:
    """Write back rows saved by ``_rows``."""
    if len(rows):
        index = torch.as_tensor(rows, device=tensors[0].device)
        for t, saved in zip(tensors, kept):
            t.index_copy_(0, index, saved)


@contextmanager
def operators_on_one_thread() -> Iterator[None]:
    """torch's operators single-threaded within the block (threads started inside it keep that setting)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _compiled(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``torch.compile(fn)``, falling back to ``fn`` for good, with a warning, when a call fails to compile."""
    compiled = torch.compile(fn, dynamic=False)
    eager = False

    def call(*args: Any) -> Any:
        nonlocal eager
        if not eager:
            try:
                return compiled(*args)
            except Exception as exc:  # noqa: BLE001 - any backend failure: eager mode is always correct
                log.warning("torch.compile failed (%s: %s); training in eager mode", type(exc).__name__, exc)
                eager = True
        return fn(*args)

    return call
