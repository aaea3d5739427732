"""Fixtures shared by test modules."""

import sys
from pathlib import Path

import pytest

from driftbench import discovery
from driftbench.methods import catalog as method_catalog
from driftbench.methods.base import IMPLEMENTATIONS
from driftbench.registry import AddedTomls
from driftbench.traces import catalog as trace_catalog
from driftbench.traces.generators import GENERATORS


@pytest.fixture
def plugin_state(monkeypatch):
    """No plug-in loaded nor installed; whatever a test loads is forgotten afterwards."""
    monkeypatch.setenv(discovery.ENV, "")  # recorded, so that teardown also undoes what --plugins writes there
    monkeypatch.delenv(discovery.ENV)
    monkeypatch.setattr(discovery, "LOADED", {})
    monkeypatch.setattr(discovery, "installed", lambda: ())
    monkeypatch.setattr(method_catalog, "PLUGIN_TOMLS", AddedTomls("method"))
    monkeypatch.setattr(trace_catalog, "PLUGIN_TOMLS", AddedTomls("trace"))
    path, methods, generators = list(sys.path), dict(IMPLEMENTATIONS), dict(GENERATORS)
    monkeypatch.setattr(sys, "path", list(path))
    yield
    for registry, kept in ((IMPLEMENTATIONS, methods), (GENERATORS, generators)):
        registry.clear()
        registry.update(kept)
    added = [Path(folder).resolve() for folder in set(sys.path) - set(path)]
    for name, module in list(sys.modules.items()):
        origin = getattr(module, "__file__", None)
        if origin and any(folder in Path(origin).resolve().parents for folder in added):
            del sys.modules[name]  # a plug-in's module, imported from a folder the test put on the path
