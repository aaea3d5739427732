"""A synthetic local-training workload that runs on the batched engine and on the sequential reference."""

from __future__ import annotations

import numpy as np
import torch

from driftbench.data.pool import Pool
from driftbench.engine.batched import BatchedTrainer, TrainOutput, default_chunk_size
from driftbench.engine.device_data import DevicePool, LocalWork, batch_plan
from driftbench.engine.models import build_model
from driftbench.engine.precision import float32_math
from driftbench.engine.reference import train_sequential
from driftbench.train_config import TrainConfig


class Workload:
    """One round of ``clients`` x ``steps`` x ``batch`` local SGD on random uint8 images, for timing both trainers.

    Samples are uint8, as image datasets are stored, and scaled to [0, 1] when gathered.
    """

    def __init__(
        self,
        model: str,
        input_shape: tuple[int, int, int],
        clients: int,
        steps: int,
        batch: int,
        device: str = "cpu",
        num_classes: int = 10,
        samples_per_client: int = 500,
        seed: int = 0,
        precision: str = "fp32",
        compile: bool = False,
    ) -> None:
        rng = np.random.default_rng(seed)
        n = clients * samples_per_client
        pool = Pool(
            "bench", rng.integers(0, 256, (n, *input_shape), dtype=np.uint8), rng.integers(0, num_classes, n), num_classes
        )
        self.device = torch.device(device)
        self.model = build_model(model, input_shape, num_classes, seed, torch.float32).to(self.device)
        self.data = DevicePool(pool, self.device, torch.float32)
        self.cfg = TrainConfig(
            model=model, lr=0.01, momentum=0.9, batch_size=batch, local_steps=steps, participants=clients, precision=precision
        )
        windows = [np.arange(k * samples_per_client, (k + 1) * samples_per_client) for k in range(clients)]
        self.work = LocalWork(
            clients=np.arange(clients),
            batches=batch_plan(rng, windows, steps, batch),
            steps=np.full(clients, steps),
            label_maps=np.tile(np.arange(num_classes), (clients, 1)),
            rotations=np.zeros(clients, dtype=np.int64),
        )
        self.start = {n: p.detach().unsqueeze(0).repeat(clients, *([1] * p.dim())) for n, p in self.model.named_parameters()}
        self.trainer = BatchedTrainer(self.model, self.data, default_chunk_size(self.model, self.device), precision, compile)

    @property
    def samples(self) -> int:
        """Training samples processed in one round."""
        return int(self.work.steps.sum()) * self.cfg.batch_size

    def batched(self) -> TrainOutput:
        """One round on the batched engine."""
        out = self.trainer.train(self.start, self.work, self.cfg)
        self._sync()
        return out

    def sequential(self) -> TrainOutput:
        """The same round on the plain sequential loop (in the same float32 arithmetic; it has no autocast)."""
        with float32_math(self.cfg.precision):
            out = train_sequential(self.model, self.data, self.start, self.work, self.cfg)
        self._sync()
        return out

    def _sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
