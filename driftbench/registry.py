"""What registers itself and where plug-ins come from: a package's modules, ``DRIFTBENCH_PLUGINS``, the TOMLs plug-ins add.

The catalogs (``driftbench.methods.catalog``, ``driftbench.traces.catalog``) hold an ``AddedTomls``
each; ``driftbench.discovery`` loads the plug-ins and hands their TOMLs to them, so that the
catalogs never import discovery.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from pathlib import Path

from driftbench.errors import ConfigError

ENV = "DRIFTBENCH_PLUGINS"


def import_modules(package: str) -> None:
    """Import every module of ``package`` so that the methods or generators each defines register themselves."""
    for module in pkgutil.iter_modules(importlib.import_module(package).__path__):
        importlib.import_module(f"{package}.{module.name}")


def plugin_paths() -> list[str]:
    """The plug-in paths in ``DRIFTBENCH_PLUGINS``."""
    return [p for p in os.environ.get(ENV, "").split(os.pathsep) if p.strip()]


class AddedTomls:
    """The catalog TOMLs of one kind (``method``, ``trace``) that plug-ins added, by name, with the plug-in that added each."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.paths: dict[str, Path] = {}
        self.owners: dict[str, str] = {}

    def add(self, label: str, tomls: dict[str, Path], builtin: dict[str, Path]) -> None:
        """Add plug-in ``label``'s TOMLs; a name the built-ins or another plug-in already hold is a ConfigError."""
        for name, path in tomls.items():
            if name in self.owners:
                raise ConfigError(
                    f"plug-in {label}: {self.kind} {name!r} ({path}) is also defined by plug-in {self.owners[name]}"
                )
            if name in builtin:
                raise ConfigError(
                    f"plug-in {label}: {self.kind} {name!r} ({path}) clashes with the built-in {self.kind} of that name"
                )
        self.paths.update(tomls)
        self.owners.update(dict.fromkeys(tomls, label))

    def over(self, builtin: dict[str, Path]) -> dict[str, Path]:
        """The built-in catalog with the added TOMLs after it."""
        return {**builtin, **self.paths}
