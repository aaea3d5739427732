"""Plug-ins: discovery imports them, checks what they registered and hands their TOMLs to the catalogs.

A plug-in is a folder of Python modules with its catalog TOMLs in ``methods/`` and ``traces/``
subfolders, the repository's own layout. It comes from an installed package's entry point
(groups ``driftbench.methods`` and ``driftbench.traces``, whose value names the package) or from
a path in ``DRIFTBENCH_PLUGINS`` (``os.pathsep``-separated; ``--plugins`` adds to it, so sweep
workers inherit it): a folder of modules, a package folder, or a module file (its TOMLs in
``methods/`` and ``traces/`` beside it). Each plug-in is imported once per process. The catalogs
never import this module: what resolves names on a user's behalf (the command line, a run's
worker) calls ``plugins()`` first.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import os
import pkgutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from types import ModuleType
from typing import Any

from driftbench.config import read_toml
from driftbench.errors import ConfigError
from driftbench.methods import catalog as method_catalog
from driftbench.methods.base import IMPLEMENTATIONS, Method
from driftbench.registry import ENV, import_modules, plugin_paths
from driftbench.traces import catalog as trace_catalog
from driftbench.traces.generators import GENERATORS

KINDS = ("methods", "traces")  # entry-point groups driftbench.<kind>; catalog subfolders <plug-in>/<kind>/
REGISTERED_BY = {"methods": "class", "traces": "generator"}  # the catalog TOML key naming the registered code


@dataclass(frozen=True)
class Plugin:
    """A loaded plug-in: how errors name it, its folder, and the catalog TOMLs it adds by kind."""

    label: str
    folder: Path
    tomls: dict[str, dict[str, Path]]  # kind -> name -> path

    def error(self, message: str) -> ConfigError:
        """A one-line error naming this plug-in."""
        return ConfigError(f"plug-in {self.label}: {message}")


LOADED: dict[str, Plugin] = {}  # entry point's package or resolved path -> the plug-in loaded from it


def add_plugins(paths: list[str] | list[Path]) -> list[Plugin]:
    """Add ``paths`` to ``DRIFTBENCH_PLUGINS`` (absolute, so worker processes find them too) and load every plug-in."""
    added = [str(Path(p).expanduser().resolve()) for p in paths]
    if added:
        os.environ[ENV] = os.pathsep.join(dict.fromkeys([*plugin_paths(), *added]))
    return plugins()


def plugins() -> list[Plugin]:
    """Every plug-in: installed packages' entry points, then the ``DRIFTBENCH_PLUGINS`` paths; loads those not yet loaded."""
    for point in installed():
        if point.module not in LOADED:  # a package may declare entry points in both groups: one plug-in
            label = f"{point.name} (entry point {point.group} = {point.value})"
            LOADED[point.module] = load(label, functools.partial(package_folder, point.module))
    for path in plugin_paths():
        key = str(Path(path).expanduser().resolve())
        if key not in LOADED:
            LOADED[key] = load(key, functools.partial(path_folder, Path(key)))
    return list(LOADED.values())


@functools.cache
def installed() -> tuple[EntryPoint, ...]:
    """The entry points of installed packages in the groups ``driftbench.methods`` and ``driftbench.traces``."""
    return tuple(point for kind in KINDS for point in entry_points(group=f"driftbench.{kind}"))


def load(label: str, import_folder: Callable[[], Path]) -> Plugin:
    """Import a plug-in with ``import_folder()`` (returns its folder), check what it registered, hand its TOMLs over."""
    before = {"methods": set(IMPLEMENTATIONS), "traces": set(GENERATORS)}
    try:
        folder = import_folder()
    except ConfigError as exc:
        raise ConfigError(f"plug-in {label}: {exc}") from None
    except Exception as exc:  # anything a plug-in's import raises becomes its one-line error
        raise ConfigError(f"plug-in {label}: import failed: {type(exc).__name__}: {' '.join(str(exc).split())}") from None
    plugin = Plugin(label, folder, {kind: catalog_tomls(folder / kind) for kind in KINDS})
    check_methods(plugin, {name: IMPLEMENTATIONS[name] for name in set(IMPLEMENTATIONS) - before["methods"]})
    check_registered(plugin, "traces", set(GENERATORS) - before["traces"])
    method_catalog.PLUGIN_TOMLS.add(label, plugin.tomls["methods"], method_catalog.catalog())
    trace_catalog.PLUGIN_TOMLS.add(label, plugin.tomls["traces"], trace_catalog.catalog())
    return plugin


def catalog_tomls(folder: Path) -> dict[str, Path]:
    """The ``*.toml`` files of a plug-in's catalog subfolder by name (none when it has no such folder)."""
    return {path.stem: path for path in sorted(folder.glob("*.toml"))} if folder.is_dir() else {}


def package_folder(module: str) -> Path:
    """Import an installed package and all its modules; its folder."""
    package = importlib.import_module(module)
    if not hasattr(package, "__path__"):
        raise ConfigError(f"{module} is a module, not a package: the entry point must name a package holding methods/ or traces/")
    import_modules(module)
    return Path(package.__path__[0])


def path_folder(path: Path) -> Path:
    """Import the modules at ``path`` (a module file, a package folder or a folder of modules); the folder of its TOMLs."""
    if path.is_file() and path.suffix == ".py":
        import_from(path.parent, path.stem)
        return path.parent
    if (path / "__init__.py").is_file():
        import_from(path.parent, path.name)
        import_modules(path.name)
        return path
    if path.is_dir():
        for module in pkgutil.iter_modules([str(path)]):
            import_from(path, module.name)
        return path
    raise ConfigError("no such module file (.py) or folder")


def import_from(folder: Path, name: str) -> ModuleType:
    """Import module ``name`` from ``folder`` (put on ``sys.path``); refuse a name another module already holds."""
    if str(folder) not in sys.path:
        sys.path.append(str(folder))
    module = importlib.import_module(name)
    origin = Path(getattr(module, "__file__", None) or "").resolve()
    if folder.resolve() not in origin.parents:
        raise ConfigError(f"module name {name!r} is already taken by {origin or 'a built-in module'}; rename {folder / name}")
    return module


def check_methods(plugin: Plugin, classes: dict[str, Any]) -> None:
    """A plug-in's method classes keep the contract's static part: typed parameters, their own ``plan``, a TOML."""
    for name, cls in classes.items():
        where = f"method class {name!r} ({cls.__module__}.{cls.__qualname__})"
        params = getattr(cls, "Params", None)
        if not (isinstance(params, type) and dataclasses.is_dataclass(params)):
            raise plugin.error(f"{where}: Params must be a dataclass of its parameters, got {params!r}")
        if cls.plan is Method.plan:
            raise plugin.error(f"{where}: defines no plan(rnd, clients, rng) -> Plan")
    check_registered(plugin, "methods", set(classes))


def check_registered(plugin: Plugin, kind: str, registered: set[str]) -> None:
    """Each method class or generator the plug-in registered is named by one of its TOMLs (else nothing could run it)."""
    key = REGISTERED_BY[kind]
    named = {read_toml(path).get(key) for path in plugin.tomls[kind].values()}
    for name in sorted(registered - named):
        raise plugin.error(f"{key} {name!r} has no TOML in {plugin.folder / kind}/ with {key} = {name!r}")
