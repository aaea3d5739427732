"""Hand-made client answers for method unit tests."""

from dataclasses import dataclass

import numpy as np
import torch

from driftbench.methods.base import Method, ProxParams
from driftbench.methods.queries import ClientQueries, Overhead
from driftbench.methods.rounds import Plan, RunContext
from driftbench.train_config import TrainConfig


class ScriptedClients:
    """Clients whose histograms, losses, gradients and inputs are given arrays (rows indexed by client)."""

    def __init__(self, hist=None, losses=None, grads=None, inputs=None):
        self.hist, self.loss_table, self.grads, self.inputs_table = hist, losses, grads, inputs

    def label_histograms(self, clients):
        return self.hist[clients]

    def losses(self, clients, models):
        return self.loss_table[np.ix_(clients, models)]

    def gradients(self, clients, model):
        return self.grads[clients]

    def inputs(self, clients, summarize):
        return np.stack(
            [summarize(torch.as_tensor(self.inputs_table[c]), torch.zeros(len(self.inputs_table[c]))) for c in clients]
        )


def context(n, participants, params=None, classes=3):
    """A run context with a tiny two-entry model (or ``params``)."""
    init = params if params is not None else {"w": torch.zeros(2, dtype=torch.float64)}
    return RunContext(n, classes, init, TrainConfig(participants=participants), seed=0)


def queries(side, changed=(), overhead=None, model_bytes=100):
    """ClientQueries over ``side`` with the given drifted clients."""
    return ClientQueries(np.asarray(changed, dtype=np.int64), side, model_bytes, overhead if overhead is not None else Overhead())


def events(method):
    """The method's logged events as (kind, clients, value) tuples (rounds are the scheduler's to stamp)."""
    return [(row["kind"], row["clients"], row["value"]) for row in method.events.rows]


def id_text(clients):
    """Client ids as an event row writes them."""
    return " ".join(str(int(c)) for c in clients)


@dataclass(frozen=True)
class MoveScript(ProxParams):
    """When ``ScriptedMoves`` moves which clients to its model 1: (round, clients) pairs."""

    moves: tuple[tuple[int, tuple[int, ...]], ...] = ()


class ScriptedMoves(Method):
    """Two fixed models, one always predicting class 0 and one class 1; every client trains each round, and the
    training is discarded; the script's clients move to model 1 (a logged ``move``) at its rounds.

    Unregistered (no ``name`` in its body): a test registers it for as long as it runs.
    """

    Params = MoveScript

    def setup(self, ctx: RunContext) -> None:
        super().setup(ctx)
        self.models = {n: torch.zeros(2, *p.shape, dtype=p.dtype, device=p.device) for n, p in ctx.init_params.items()}
        bias = self.models[f"{ctx.classifier}.bias"]
        bias[0, 0] = bias[1, 1] = 1.0

    def plan(self, rnd, clients, rng):
        for at, moved in self.params.moves:
            if at == rnd:
                self.assignment[list(moved)] = 1
                self.events.record("move", clients=moved)
        return Plan(np.arange(self.ctx.num_clients), self.assignment.copy())

    def aggregate(self, rnd, result):
        pass
