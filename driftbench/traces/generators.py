"""The generator registry: a name, a parameter dataclass and a ``make(params, pool)`` function."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from driftbench.config import RECORDED_WHEN_SET, require
from driftbench.data.pool import Pool
from driftbench.errors import ConfigError
from driftbench.traces.model import TraceBuilder

if TYPE_CHECKING:
    from _typeshed import DataclassInstance


@dataclass(frozen=True)
class ClientParams:
    """Parameters every generator shares: population, horizon, per-client sample counts and the seed.

    The last ``newcomers`` of the ``clients`` are absent for the trace's rounds and join after them
    (FedDAG B.6): the method places each one, it trains its model ``newcomer_epochs`` local epochs (0: none),
    and the run records their mean test accuracy (``Trace.incumbents``, ``Method.admit``).
    """

    clients: int = 50
    rounds: int = 100
    train_samples: int = 60
    test_samples: int = 30
    test_fraction: float = 0.2
    seed: int = 0
    newcomers: int = field(default=0, metadata={RECORDED_WHEN_SET: True})
    newcomer_epochs: float = field(default=10.0, metadata={RECORDED_WHEN_SET: True})

    def __post_init__(self) -> None:
        require(self.clients >= 2, f"clients must be >= 2, got {self.clients}")
        require(self.rounds >= 1, f"rounds must be >= 1, got {self.rounds}")
        require(self.train_samples >= 1, f"train_samples must be >= 1, got {self.train_samples}")
        require(self.test_samples >= 1, f"test_samples must be >= 1, got {self.test_samples}")
        require(0 < self.test_fraction < 1, f"test_fraction must be in (0, 1), got {self.test_fraction}")
        require(
            self.newcomers == 0 or 0 < self.newcomers <= self.clients - 2,
            f"newcomers must be in 0..clients-2 ({self.clients - 2}: two clients train before they join), got {self.newcomers}",
        )
        require(self.newcomer_epochs >= 0, f"newcomer_epochs must be >= 0 (0: tested as placed), got {self.newcomer_epochs}")


@dataclass(frozen=True)
class Generator:
    """A registered trace generator; ``make`` fills a TraceBuilder deterministically from params."""

    name: str
    params: type[DataclassInstance]
    make: Callable[[Any, Pool], TraceBuilder]


GENERATORS: dict[str, Generator] = {}


def register(generator: Generator) -> Generator:
    """Add ``generator`` to the registry under its name; a second generator of that name is a ConfigError."""
    taken = GENERATORS.setdefault(generator.name, generator)
    if taken is not generator:
        raise ConfigError(
            f"generators in {taken.make.__module__} and {generator.make.__module__} are both named {generator.name!r}"
        )
    return generator
