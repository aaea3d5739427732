"""``oracle``: clusters equal the ground-truth groups at every round (an upper bound; not from a paper)."""

from __future__ import annotations

import numpy as np
import torch

from driftbench.errors import RunError
from driftbench.methods.bank import replicate
from driftbench.methods.base import Method, ProxParams
from driftbench.methods.queries import ClientQueries
from driftbench.methods.rounds import Plan


class Oracle(Method):
    """One model per true group; a group first seen later starts from the shared initialisation."""

    name = "oracle"
    Params = ProxParams
    oracle = True

    def plan(self, rnd: int, clients: ClientQueries, rng: np.random.Generator) -> Plan:
        """Assign every client to its true group; sample participants uniformly."""
        truth = clients.ground_truth()
        if (truth < 0).any():
            raise RunError("oracle needs a trace with ground-truth groups for every client")
        known = self.num_models
        missing = int(truth.max()) + 1 - known
        if missing > 0:
            fresh = replicate(self.ctx.init_params, missing)
            self.models = {n: torch.cat([m, fresh[n]]) for n, m in self.models.items()}
        before, self.assignment = self.assignment, truth
        if rnd == 0:
            self.events.clustering(truth)
        else:  # a group first seen now gets a new model
            self.events.regrouping("move", truth, np.arange(len(truth)), before, np.unique(truth[truth >= known]))
        return self.uniform_plan(rng)
