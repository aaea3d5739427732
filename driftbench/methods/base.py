"""The Method interface: a server-side algorithm with a few hooks; the scheduler owns the loop.

A method sees only what clients report through ``ClientQueries`` (never drift events or
ground truth, except a method marked ``oracle``); every query counts its traffic and
extra client passes, so overhead is measured, not declared by hand.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, TypeVar

import numpy as np
import torch

from driftbench.config import require
from driftbench.engine.batched import Params
from driftbench.engine.batched import Params as NamedTensors  # in Method's body, Params names the parameter dataclass
from driftbench.engine.evaluate import DataSummary, OutputSummary
from driftbench.engine.features import FeaturePenalty
from driftbench.errors import ConfigError, RunError
from driftbench.methods import server_work
from driftbench.methods.aggregators import check_aggregator, flower_average, load_strategy, remix_state
from driftbench.methods.events import EventLog
from driftbench.train_config import TrainConfig

T = TypeVar("T")
FLOAT_BYTES = 4  # traffic is counted as float32, whatever the compute dtype


@dataclass(frozen=True)
class RunContext:
    """What a method knows at setup: population size, classes, initial model and training settings."""

    num_clients: int
    num_classes: int
    init_params: Params
    train: TrainConfig
    seed: int
    classifier: str = ""  # module name of the classifier layer: its parameters are f"{classifier}.weight" / ".bias"

    @property
    def model_bytes(self) -> int:
        """Bytes of one model on the wire."""
        return FLOAT_BYTES * sum(p.numel() for p in self.init_params.values())


@dataclass(frozen=True)
class ProxParams:
    """FedProx's ``mu`` (0 = plain FedAvg local training) and the aggregation step (``aggregators``: mean or flower:NAME)."""

    mu: float = 0.0
    aggregator: str = "mean"
    aggregator_options: tuple[str, ...] = ()  # KEY=VALUE keyword arguments of the Flower strategy

    def __post_init__(self) -> None:
        require(self.mu >= 0, f"mu must be >= 0, got {self.mu}")
        check_aggregator(self.aggregator, self.aggregator_options)


@dataclass(frozen=True)
class Phase:
    """One stage of a round's local training; a plan's phases run one after another on every participant.

    Phases without ``start`` form the main line: the first trains from the plan's start models,
    each next one from where the previous one ended, and the last one's result is what
    participants upload (``TrainResult.params``). A phase with ``start`` (bank rows, one per
    participant) is a side branch: it trains from those rows, and its result only comes back in
    ``TrainResult.phases``. Steps: ``local_steps`` (None: the trace's), or, with ``epochs`` > 0,
    ceil(epochs x samples / batch size) for each participant. ``per_class`` > 0 trains on a
    class-balanced subsample of the window: m samples of each class the client holds, m = the
    smaller of ``per_class`` and its rarest class's count. ``lr_scale`` multiplies the trace's
    learning rate; ``masks`` and ``record`` as the plan's (the path comes back from the main line's
    last phase); ``penalty`` adds a term on the classifier layer's input to each participant's loss.
    ``prune`` computes the masks from the phase's starting models (a client pruning what it has
    just trained): pruned entries start at zero and stay there, and the masks come back in
    ``TrainResult.masks``.
    """

    start: np.ndarray | None = None
    local_steps: int | None = None
    epochs: float = 0.0
    per_class: int = 0
    lr_scale: float = 1.0
    masks: Params | None = None
    record: tuple[str, ...] = ()
    penalty: FeaturePenalty | None = None
    prune: Callable[[Params], Params] | None = None

    def __post_init__(self) -> None:
        if self.prune is not None and self.masks is not None:
            raise RunError("a phase takes fixed masks or a prune function, not both")


@dataclass(frozen=True)
class Plan:
    """A round's decision: who trains, from which model of the bank, and with what proximal term."""

    participants: np.ndarray
    start_models: np.ndarray
    mu: float = 0.0
    models_downloaded: int = 1  # models each participant downloads (IFCA downloads all K)
    models_uploaded: int = 1  # models each participant uploads (0 for a phase whose result stays on the client)
    masks: Params | None = None  # name -> (participants x shape) 0/1 update masks: pruned or frozen entries
    record: tuple[str, ...] = ()  # parameters whose change at every local step comes back in TrainResult.path
    local_steps: int | None = None  # this round's local steps when not the trace's (e.g. pre-training)
    upload_floats: int = 0  # numbers each participant uploads beyond its model (gradient paths, masks)
    download_floats: int = 0  # numbers each participant downloads beyond its models (personal layers, anchors)
    phases: tuple[Phase, ...] = ()  # local training in stages; when given, masks, record and local_steps stay unset
    report: OutputSummary | None = None  # participants upload report(features, probs, labels) of their trained model

    def __post_init__(self) -> None:
        if self.phases and (self.masks is not None or self.record or self.local_steps is not None):
            raise RunError("a plan with phases sets masks, record and local_steps in its phases")
        if self.phases and all(p.start is not None for p in self.phases):
            raise RunError("a plan with phases needs a main line: a phase without start")

    def stages(self) -> tuple[Phase, ...]:
        """The phases of local training: ``phases``, or the one phase that ``masks``, ``record`` and ``local_steps`` describe."""
        return self.phases or (Phase(local_steps=self.local_steps, masks=self.masks, record=self.record),)


@dataclass(frozen=True)
class TrainResult:
    """Local training outcome for a plan's participants, in plan order."""

    plan: Plan
    params: Params
    num_samples: np.ndarray
    loss: np.ndarray
    path: Params = field(default_factory=dict)  # name -> (participants x steps x shape), for Plan.record
    phases: tuple[Params, ...] = ()  # each phase's trained parameters, in Plan.phases order
    reports: np.ndarray | None = None  # participants x R: Plan.report of each participant's trained model
    masks: Params = field(default_factory=dict)  # name -> (participants x shape): the masks a Phase.prune computed


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


FORWARD_PASS = 1 / 3  # a forward-only pass costs a third of a training pass (forward + backward)


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


IMPLEMENTATIONS: dict[str, type[Method]] = {}  # method class name -> class; filled as each method module is imported


class Method:
    """Base of every method: holds the model bank (M x ...) and each client's current model."""

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


def bank_rows(bank: Params, rows: np.ndarray) -> Params:
    """Models ``rows`` of ``bank``, stacked in that order."""
    index = torch.as_tensor(rows, device=next(iter(bank.values())).device)
    return {n: p[index] for n, p in bank.items()}


def replicate(params: Params, copies: int) -> Params:
    """``copies`` identical models stacked on a leading axis."""
    return {n: p.unsqueeze(0).repeat(copies, *([1] * p.dim())) for n, p in params.items()}


def cluster_average(bank: Params, trained: Params, cluster: np.ndarray, weights: np.ndarray) -> Params:
    """Replace each bank model that had participants by their weighted mean; keep the others."""
    server_work.charge(server_work.aggregation(len(cluster), server_work.model_parameters(bank)))
    device = next(iter(bank.values())).device
    index = torch.as_tensor(cluster, device=device)
    dtype = next(iter(bank.values())).dtype
    w = torch.as_tensor(weights, dtype=dtype, device=device)
    total = torch.zeros(len(next(iter(bank.values()))), dtype=dtype, device=device).index_add_(0, index, w)
    out = {}
    for name, models in bank.items():
        shape = (-1,) + (1,) * (models.dim() - 1)
        summed = torch.zeros_like(models).index_add_(0, index, trained[name] * w.view(shape))
        out[name] = torch.where(total.view(shape) > 0, summed / total.clamp(min=1e-30).view(shape), models)
    return out


def sample_participants(rng: np.random.Generator, num_clients: int, count: int) -> np.ndarray:
    """``count`` distinct clients chosen uniformly (all of them if there are fewer), sorted."""
    return np.sort(rng.choice(num_clients, size=min(count, num_clients), replace=False))
