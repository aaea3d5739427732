"""The source registry: a name, a parameter dataclass and a loader that returns a Pool."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from driftbench.config import build, lookup
from driftbench.data.pool import Pool

if TYPE_CHECKING:
    from _typeshed import DataclassInstance


@dataclass(frozen=True)
class Source:
    """A registered data source: ``load(params)`` returns the same Pool for the same params."""

    name: str
    description: str
    params: type[DataclassInstance]
    load: Callable[[Any], Pool]
    argument: str = ""  # the parameter that ``name:VALUE`` sets (``hf:mnist`` sets dataset), if any


SOURCES: dict[str, Source] = {}


def register(source: Source) -> Source:
    """Add ``source`` to the registry under its name."""
    SOURCES[source.name] = source
    return source


def source_reference(value: str, kind: str = "source") -> tuple[str, dict[str, str]]:
    """The registered source that ``value`` names and the parameters it implies: ``hf:mnist`` -> (hf, {dataset: mnist})."""
    family, sep, argument = value.partition(":")
    if sep and family in SOURCES and SOURCES[family].argument:
        return family, {SOURCES[family].argument: argument}
    return lookup(SOURCES, value, kind).name, {}


def source_params(name: str, values: Mapping[str, Any], where: str) -> Any:
    """Validated parameters of source ``name`` from a TOML table or ``--set`` values."""
    return build(lookup(SOURCES, name, "source").params, values, where)


def load_pool(name: str, values: Mapping[str, Any] | None = None) -> Pool:
    """Load the pool of source ``name`` (or ``family:VALUE``) with parameter overrides ``values``."""
    name, implied = source_reference(name)
    params = source_params(name, {**implied, **(values or {})}, f"source {name}")
    return SOURCES[name].load(params)
