"""What passes between the scheduler and a method each round: run context, plan, phases, train result, participants."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from driftbench.engine.batched import Params
from driftbench.engine.evaluate import OutputSummary
from driftbench.engine.features import FeaturePenalty
from driftbench.errors import RunError
from driftbench.methods.queries import FLOAT_BYTES
from driftbench.train_config import TrainConfig


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


def sample_participants(rng: np.random.Generator, num_clients: int, count: int) -> np.ndarray:
    """``count`` distinct clients chosen uniformly (all of them if there are fewer), sorted."""
    return np.sort(rng.choice(num_clients, size=min(count, num_clients), replace=False))
