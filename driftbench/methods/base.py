"""The ``Method`` base class every method subclasses, the registry of method classes, and ``ProxParams``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch

from driftbench.config import require
from driftbench.engine.batched import Params
from driftbench.engine.batched import Params as NamedTensors  # in Method's body, Params names the parameter dataclass
from driftbench.errors import ConfigError
from driftbench.methods.aggregators import check_aggregator, flower_average, load_strategy, remix_state
from driftbench.methods.bank import bank_rows, cluster_average, replicate
from driftbench.methods.events import EventLog
from driftbench.methods.queries import ClientQueries
from driftbench.methods.rounds import Plan, RunContext, TrainResult, sample_participants


@dataclass(frozen=True)
class ProxParams:
    """FedProx's ``mu`` (0 = plain FedAvg local training) and the aggregation step (``aggregators``: mean or flower:NAME)."""

    mu: float = 0.0
    aggregator: str = "mean"
    aggregator_options: tuple[str, ...] = ()  # KEY=VALUE keyword arguments of the Flower strategy

    def __post_init__(self) -> None:
        require(self.mu >= 0, f"mu must be >= 0, got {self.mu}")
        check_aggregator(self.aggregator, self.aggregator_options)


IMPLEMENTATIONS: dict[str, type[Method]] = {}  # method class name -> class; filled as each method module is imported


class Method:
    """Base of every method: holds the model bank (M x ...) and each client's current model.

    The scheduler owns the loop and calls the hooks; a method sees clients only through
    ``ClientQueries``, so its traffic and extra client passes are measured, not declared.
    """

    name: ClassVar[str]
    Params: ClassVar[type]
    oracle: ClassVar[bool] = False
    clustering: ClassVar[bool] = True  # False for one-model methods (FedAvg): they cannot be degenerate clusterings

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Register a class that sets ``name`` in its own body; a helper base without one stays unregistered."""
        super().__init_subclass__(**kwargs)
        if "name" in vars(cls):
            taken = IMPLEMENTATIONS.setdefault(cls.name, cls)
            if taken is not cls:
                raise ConfigError(f"method classes {qualified(taken)} and {qualified(cls)} are both named {cls.name!r}")

    def __init__(self, params: Any) -> None:
        self.params = params
        self.events = EventLog()
        self.models: Params = {}
        self.assignment = np.zeros(0, dtype=np.int64)
        self.aggregator_state: dict[int, dict[str, Any]] = {}  # per cluster: a Flower aggregator's rounds and optimizer state
        load_strategy(params)

    def setup(self, ctx: RunContext) -> None:
        """Start with one model (the shared initialisation) serving every client."""
        self.ctx = ctx
        self.models = replicate(ctx.init_params, 1)
        self.assignment = np.zeros(ctx.num_clients, dtype=np.int64)

    @property
    def reclusters(self) -> bool:
        """Whether the method's design changes a clustering once formed (re-clustering, migration, splits, re-assignment)."""
        return self.clustering

    @property
    def partition(self) -> np.ndarray:
        """Each client's cluster (ARI, cluster counts, re-clustering): the bank model serving it, unless overridden."""
        return self.assignment

    @property
    def num_models(self) -> int:
        """Number of models in the bank."""
        return len(next(iter(self.models.values())))

    def plan(self, rnd: int, clients: ClientQueries, rng: np.random.Generator) -> Plan:
        """Decide assignment and this round's participants."""
        raise NotImplementedError

    def uniform_plan(self, rng: np.random.Generator) -> Plan:
        """The trace's number of participants drawn uniformly, each training its assigned model (FedProx ``mu``)."""
        participants = sample_participants(rng, self.ctx.num_clients, self.ctx.train.participants)
        return Plan(participants, self.assignment[participants], mu=self.params.mu)

    def aggregate(self, rnd: int, result: TrainResult) -> None:
        """Fold the participants' trained models into the bank (the aggregator per model, by sample counts)."""
        self.models = self.average(result)

    def admit(self, newcomers: np.ndarray, clients: ClientQueries, rng: np.random.Generator) -> NamedTensors:
        """The model each client joining after the run starts from (a row per newcomer; FedDAG B.6).

        Default: of the models serving clients, the one with the lowest loss on the newcomer's
        window (IFCA's cluster estimate), the rule for every method whose paper gives none.
        """
        serving = np.unique(self.assignment)
        if len(serving) == 1:
            return bank_rows(self.models, np.repeat(serving, len(newcomers)))
        return bank_rows(self.models, serving[np.argmin(clients.losses(newcomers, serving), axis=1)])

    def newcomer_masks(self, count: int) -> NamedTensors | None:
        """Entries ``count`` newcomers may change when they train their placed models (None: every entry)."""
        return None

    def average(
        self, result: TrainResult, clusters: np.ndarray | None = None, weights: np.ndarray | None = None
    ) -> dict[str, torch.Tensor]:
        """The bank with each model that had participants replaced by their aggregate: weighted mean or Flower strategy.

        ``clusters`` (default: the plan's start models) says which model each participant's
        result folds into, ``weights`` (default: sample counts) how much it counts.
        """
        clusters = result.plan.start_models if clusters is None else clusters
        weights = result.num_samples if weights is None else weights
        aggregator = getattr(self.params, "aggregator", "mean")
        if aggregator == "mean":
            return cluster_average(self.models, result.params, clusters, weights)
        options, lr = self.params.aggregator_options, self.ctx.train.lr
        models, self.aggregator_state = flower_average(
            aggregator, options, self.models, result.params, clusters, weights, result.loss, lr, self.aggregator_state
        )
        return models

    def remix(self, old: np.ndarray, new: np.ndarray, remixed: dict[str, torch.Tensor]) -> None:
        """Adopt ``remixed``, the bank for clusters ``new`` mixed from clusters ``old``, and remix the aggregator's state too."""
        self.models = remixed
        self.aggregator_state = remix_state(self.aggregator_state, old, new)


def qualified(cls: type) -> str:
    """A class's module and name, as an error message shows it."""
    return f"{cls.__module__}.{cls.__qualname__}"
