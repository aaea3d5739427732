"""Registries fill themselves at import: a package's modules register what they define, so discovery imports them all."""

from __future__ import annotations

import importlib
import pkgutil


def import_modules(package: str) -> None:
    """Import every module of ``package`` so that the methods or generators each defines register themselves."""
    for module in pkgutil.iter_modules(importlib.import_module(package).__path__):
        importlib.import_module(f"{package}.{module.name}")
