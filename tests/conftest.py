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


TINY_MATRIX_SETS = {"clients": "6", "rounds": "6", "train.participants": "3", "train.local_steps": "2"}
TINY_MATRIX_TRACES = ("static", "rotation")  # kinds of drift none and feature
TINY_MATRIX_METHODS = ("fedavg", "static", "oracle")
TINY_MATRIX_SEEDS = (0, 1, 2)


@pytest.fixture(scope="session")
def tiny_matrix(tmp_path_factory):
    """A tiny drift matrix, made once: its runs folder and its archive (2 traces x 3 methods x 3 seeds)."""
    from driftbench.record.archive_write import write_archive
    from driftbench.runner import Execution, Request, plan_jobs, run_here

    root = tmp_path_factory.mktemp("matrix")
    request = Request(dict.fromkeys(TINY_MATRIX_TRACES, TINY_MATRIX_SETS), TINY_MATRIX_METHODS, TINY_MATRIX_SEEDS)
    run_here(plan_jobs(request, Execution("cpu", root / "runs")))
    write_archive(root / "runs", root / "archive")
    return root / "runs", root / "archive"
