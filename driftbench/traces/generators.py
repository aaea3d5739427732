"""The generator registry: a name, a parameter dataclass and a ``make(params, pool)`` function."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from driftbench.data.pool import Pool
from driftbench.traces.model import TraceBuilder


@dataclass(frozen=True)
class Generator:
    """A registered trace generator; ``make`` fills a TraceBuilder deterministically from params."""

    name: str
    description: str
    params: type
    make: Callable[[Any, Pool], TraceBuilder]


GENERATORS: dict[str, Generator] = {}


def register(generator: Generator) -> Generator:
    """Add ``generator`` to the registry under its name."""
    GENERATORS[generator.name] = generator
    return generator
