"""A run's simulated clock and traffic totals: round durations from client profiles, model traffic, server time."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from driftbench.engine.clock import ClientProfiles, client_seconds, compute_seconds, round_seconds, server_seconds
from driftbench.methods.queries import FLOAT_BYTES, Overhead, RoundTraffic
from driftbench.methods.rounds import Plan


@dataclass
class RunClock:
    """Simulated seconds, server seconds (from counted work), clients' query seconds and bytes so far.

    ``client_query_seconds`` sums, over clients, the compute time of their extra passes for the
    method's queries (losses, gradients, features) at each client's profile speed: the clients'
    share of the clustering work. ``server_wall_seconds`` is measured.
    """

    profiles: ClientProfiles = field(repr=False)
    forward_flops: float
    model_bytes: int
    sim_seconds: float = 0.0
    server_seconds: float = 0.0
    client_query_seconds: float = 0.0
    server_wall_seconds: float = 0.0
    upload_bytes: int = 0
    download_bytes: int = 0
    overhead: Overhead = field(default_factory=Overhead)

    def advance(
        self,
        plan: Plan,
        samples: np.ndarray,
        window_sizes: np.ndarray,
        traffic: RoundTraffic,
        server_flops: int,
        server_wall_seconds: float,
    ) -> None:
        """Add one round's duration and its model traffic.

        The round lasts as long as its slowest client, over participants (training and model
        transfer) and clients that answered queries (their extra passes and transfers), plus
        the server's time: its counted work (plan and aggregate) at the server's rate.
        """
        extra, extra_down = FLOAT_BYTES * plan.upload_floats, FLOAT_BYTES * plan.download_floats
        involved = np.union1d(plan.participants, traffic.clients())
        at = np.searchsorted(involved, plan.participants)
        queried = traffic.work[involved] * window_sizes[involved]
        trained = queried.copy()
        down, up = traffic.download[involved], traffic.upload[involved]
        np.add.at(trained, at, samples)
        np.add.at(down, at, self.model_bytes * plan.models_downloaded + extra_down)
        np.add.at(up, at, self.model_bytes * plan.models_uploaded + extra)
        times = client_seconds(self.profiles, involved, trained, self.forward_flops, down, up)
        server = server_seconds(server_flops)
        self.sim_seconds += round_seconds(times, server)
        self.server_seconds += server
        self.client_query_seconds += float(compute_seconds(self.profiles, involved, queried, self.forward_flops).sum())
        self.server_wall_seconds += server_wall_seconds
        self.upload_bytes += self.model_bytes * plan.models_uploaded * len(plan.participants)
        self.overhead.upload_bytes += extra * len(plan.participants)
        self.overhead.download_bytes += extra_down * len(plan.participants)
        self.download_bytes += self.model_bytes * plan.models_downloaded * len(plan.participants)

    @property
    def total_upload_bytes(self) -> int:
        """All bytes uploaded so far: models, extra uploads and query answers."""
        return self.upload_bytes + self.overhead.upload_bytes

    @property
    def total_download_bytes(self) -> int:
        """All bytes downloaded so far: models and query downloads."""
        return self.download_bytes + self.overhead.download_bytes

    def state(self) -> dict[str, Any]:
        """The totals, for a checkpoint."""
        totals = {k: v for k, v in asdict(self).items() if k not in ("profiles", "forward_flops", "model_bytes", "overhead")}
        return {**totals, "overhead": asdict(self.overhead)}

    def restore(self, state: dict[str, Any]) -> None:
        """Continue from checkpointed totals."""
        for name, value in state.items():
            setattr(self, name, Overhead(**value) if name == "overhead" else value)
