"""Registration without hand-kept lists: a method or a generator is one module plus one TOML, found by discovery."""

import sys

import pytest

import driftbench.methods
import driftbench.traces
from driftbench.discovery import import_modules
from driftbench.errors import ConfigError
from driftbench.methods import catalog as method_catalog
from driftbench.methods.base import IMPLEMENTATIONS, Method
from driftbench.methods.fedavg import FedAvg
from driftbench.scheduler import RunSpec, run
from driftbench.traces import catalog as trace_catalog
from driftbench.traces.generators import GENERATORS, Generator, register
from driftbench.traces.static import StaticParams, make
from tests.test_contracts import tiny_spec

METHOD_MODULE = """
from driftbench.methods.base import Method, ProxParams


class Throwaway(Method):
    name = "throwaway"
    Params = ProxParams

    def plan(self, rnd, clients, rng):
        return self.uniform_plan(rng)
"""
GENERATOR_MODULE = """
from driftbench.traces.generators import Generator, register
from driftbench.traces.static import StaticParams, make

register(Generator("throwaway", StaticParams, make))
"""


@pytest.fixture
def new_module(tmp_path, monkeypatch):
    """Add a module ``throwaway`` to a package (from a folder put on its path); forget it and its registration afterwards."""
    packages = []

    def add(package, source):
        folder = tmp_path / package.__name__
        folder.mkdir()
        (folder / "throwaway.py").write_text(source)
        monkeypatch.setattr(package, "__path__", [*package.__path__, str(folder)])
        packages.append(package)

    yield add
    for package in packages:
        sys.modules.pop(f"{package.__name__}.throwaway", None)
        vars(package).pop("throwaway", None)
    IMPLEMENTATIONS.pop("throwaway", None)
    GENERATORS.pop("throwaway", None)


def catalog_with(tmp_path, text):
    """A catalog folder holding only ``throwaway.toml``."""
    folder = tmp_path / "catalog"
    folder.mkdir()
    (folder / "throwaway.toml").write_text(text)
    return folder


def test_a_new_method_is_its_module_and_its_toml(new_module, tmp_path, monkeypatch):
    new_module(driftbench.methods, METHOD_MODULE)
    folder = catalog_with(tmp_path, 'class = "throwaway"\ndescription = "made up by a test"\n')
    monkeypatch.setattr(method_catalog, "CATALOG_DIR", folder)
    import_modules("driftbench.methods")  # what importing the catalog does
    method = method_catalog.load_method("throwaway")
    assert method.description == "made up by a test"
    spec = tiny_spec("label-swap")
    trace, pool = trace_catalog.generate(spec)
    summary = run(RunSpec(trace, pool, spec.train, method, seed=0, device="cpu", out=tmp_path / "runs", quiet=True))
    assert summary.status == "ok"


def test_a_new_generator_is_its_module_and_its_toml(new_module, tmp_path, monkeypatch):
    new_module(driftbench.traces, GENERATOR_MODULE)
    toml = 'generator = "throwaway"\ndescription = "made up by a test"\n'
    toml += '[params]\nclients = 4\nrounds = 3\n[source]\nname = "digits"\n'
    monkeypatch.setattr(trace_catalog, "CATALOG_DIR", catalog_with(tmp_path, toml))
    import_modules("driftbench.traces")  # what importing driftbench.traces does
    spec = trace_catalog.load_spec("throwaway")
    trace, _ = trace_catalog.generate(spec)
    assert spec.description == "made up by a test" and (trace.num_clients, trace.rounds) == (4, 3)


def test_classes_without_a_name_of_their_own_are_not_registered():
    class Helper(Method):
        pass

    class Tuned(FedAvg):
        pass

    assert IMPLEMENTATIONS["fedavg"] is FedAvg and not {Helper, Tuned} & set(IMPLEMENTATIONS.values())


def test_two_methods_of_one_name_are_refused():
    with pytest.raises(ConfigError, match=r"driftbench.methods.fedavg.FedAvg and .*Impostor are both named 'fedavg'"):

        class Impostor(Method):
            name = "fedavg"

    assert IMPLEMENTATIONS["fedavg"] is FedAvg


def test_two_generators_of_one_name_are_refused():
    with pytest.raises(ConfigError, match=r"driftbench.traces.rotation and driftbench.traces.static are both named 'rotation'"):
        register(Generator("rotation", StaticParams, make))
    assert GENERATORS["rotation"].params is not StaticParams
