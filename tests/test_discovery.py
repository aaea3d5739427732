"""Registration without hand-kept lists: a method or a generator is one module plus one TOML, found by discovery."""

import json
import os
import re
import sys
from importlib.metadata import EntryPoint

import pytest

import driftbench.methods
import driftbench.traces
from driftbench import discovery
from driftbench.cli import main
from driftbench.contracts import tiny_spec
from driftbench.errors import ConfigError
from driftbench.forkserver import start_early
from driftbench.methods import catalog as method_catalog
from driftbench.methods.base import IMPLEMENTATIONS, Method
from driftbench.methods.fedavg import FedAvg
from driftbench.registry import import_modules
from driftbench.scheduler import RunSpec, run
from driftbench.traces import catalog as trace_catalog
from driftbench.traces.generators import GENERATORS, Generator, register
from driftbench.traces.static import StaticParams, make

METHOD_TEMPLATE = """
from driftbench.methods.base import Method, ProxParams


class Made(Method):
    name = "{name}"
    Params = ProxParams

    def plan(self, rnd, clients, rng):
        return self.uniform_plan(rng)
"""
GENERATOR_TEMPLATE = """
from driftbench.traces.generators import Generator, register
from driftbench.traces.static import StaticParams, make

register(Generator("{name}", StaticParams, make))
"""
METHOD_MODULE = METHOD_TEMPLATE.format(name="throwaway")
GENERATOR_MODULE = GENERATOR_TEMPLATE.format(name="throwaway")


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


PLUGIN_METHOD = METHOD_TEMPLATE.format(name="everyone-{tag}")
PLUGIN_GENERATOR = GENERATOR_TEMPLATE.format(name="still-{tag}")
TINY_RUN = ["--set", "clients=4", "--set", "rounds=3", "--set", "train.participants=2", "--set", "train.local_steps=1"]


def plugin_folder(root, tag, method=PLUGIN_METHOD, method_toml=None, generator=PLUGIN_GENERATOR):
    """A plug-in folder: a method module, a generator module and their TOMLs in methods/ and traces/."""
    folder = root / f"plugin_{tag}"
    (folder / "methods").mkdir(parents=True)
    (folder / "traces").mkdir()
    (folder / f"everyone_{tag}.py").write_text(method.format(tag=tag))
    (folder / f"still_{tag}.py").write_text(generator.format(tag=tag))
    toml = method_toml or f'class = "everyone-{tag}"\ndescription = "every client, test plug-in {tag}"\n'
    (folder / "methods" / f"all-{tag}.toml").write_text(toml)
    trace = f'generator = "still-{tag}"\ndescription = "no drift, test plug-in {tag}"\n[source]\nname = "digits"\n'
    (folder / "traces" / f"calm-{tag}.toml").write_text(trace)
    return folder


def test_a_plugin_folder_adds_methods_and_traces_that_run(plugin_state, tmp_path, capsys):
    folder = plugin_folder(tmp_path, "a")
    assert main(["list", "methods", "--plugins", str(folder)]) == 0
    assert re.search(r"^all-a +every client, test plug-in a$", capsys.readouterr().out, re.M)
    assert main(["list", "traces"]) == 0  # loaded once, for the rest of the process
    assert "calm-a" in capsys.readouterr().out
    out = tmp_path / "runs"
    assert main(["run", "--trace", "calm-a", "--method", "all-a", "--out", str(out), "--quiet", *TINY_RUN]) == 0
    assert json.loads((out / "calm-a/all-a/seed0/summary.json").read_text())["status"] == "ok"


def test_the_environment_names_plugins_and_sweep_workers_load_them(plugin_state, tmp_path, monkeypatch):
    monkeypatch.setenv(discovery.ENV, os.pathsep.join([str(plugin_folder(tmp_path, "b")), str(plugin_folder(tmp_path, "c"))]))
    assert not {"all-b", "all-c"} & set(method_catalog.catalog())  # the catalogs hold what discovery hands them
    discovery.plugins()
    assert {"all-b", "all-c"} <= set(method_catalog.catalog())
    out = tmp_path / "runs"
    sweep = ["sweep", "--traces", "calm-b", "--methods", "all-c", "--jobs", "1", "--out", str(out), "--quiet", *TINY_RUN]
    assert main(sweep) == 0  # the pool's worker finds calm-b and all-c through DRIFTBENCH_PLUGINS
    assert (out / "calm-b/all-c/seed0/summary.json").is_file()


def test_workers_of_a_fork_server_started_earlier_take_the_current_directory_and_plugins(plugin_state, tmp_path, monkeypatch):
    start_early()  # the server's directory and environment are those of before the change below
    plugin_folder(tmp_path, "e")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(discovery.ENV, "plugin_e")  # relative: found only from tmp_path
    sweep = ["sweep", "--traces", "calm-e", "--methods", "all-e", "--jobs", "1", "--out", "runs", "--quiet", *TINY_RUN]
    assert main(sweep) == 0
    assert json.loads((tmp_path / "runs/calm-e/all-e/seed0/summary.json").read_text())["status"] == "ok"


def test_an_installed_package_is_found_by_its_entry_point(plugin_state, tmp_path, monkeypatch):
    site = tmp_path / "site"
    plugin_folder(site, "d").joinpath("__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(site))
    points = (EntryPoint("all-d", "plugin_d", "driftbench.methods"), EntryPoint("calm-d", "plugin_d", "driftbench.traces"))
    monkeypatch.setattr(discovery, "installed", lambda: points)
    discovery.plugins()
    assert method_catalog.load_method("all-d").implementation == "everyone-d"
    assert trace_catalog.load_spec("calm-d").generator == "still-d"
    assert [p.label for p in discovery.plugins()] == ["all-d (entry point driftbench.methods = plugin_d)"]  # one package


def test_installed_reads_both_entry_point_groups(monkeypatch):
    groups = []
    monkeypatch.setattr(discovery, "entry_points", lambda group: groups.append(group) or [])
    discovery.installed.cache_clear()
    try:
        assert discovery.installed() == () and groups == ["driftbench.methods", "driftbench.traces"]
    finally:
        discovery.installed.cache_clear()


BROKEN = {
    "clash": (
        "",
        'class = "everyone-{tag}"\ndescription = "x"\n',
        "ifca",
        r"method 'ifca' \(.*ifca.toml\) clashes with the built-in",
    ),
    "import": (PLUGIN_METHOD + "\nraise RuntimeError('no GPU here')\n", None, None, "import failed: RuntimeError: no GPU here"),
    "no plan": (PLUGIN_METHOD.replace("def plan", "def other"), None, None, r"method class 'everyone-\w+' .* defines no plan"),
    "params": (PLUGIN_METHOD.replace("Params = ProxParams", "Params = dict"), None, None, "Params must be a dataclass"),
    "no toml": ("", 'class = "fedavg"\ndescription = "x"\n', None, r"class 'everyone-\w+' has no TOML in .*methods/"),
    "same class": (PLUGIN_METHOD.replace('"everyone-{tag}"', '"ifca"'), None, None, "are both named 'ifca'"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_broken_plugin_gets_one_line_naming_it(case, plugin_state, tmp_path, capsys):
    module, toml, toml_name, message = BROKEN[case]
    tag = case.replace(" ", "")
    folder = plugin_folder(tmp_path, tag, method=module or PLUGIN_METHOD, method_toml=toml and toml.format(tag=tag))
    if toml_name:
        (folder / "methods" / f"all-{tag}.toml").rename(folder / "methods" / f"{toml_name}.toml")
    if case == "no toml":
        (folder / f"orphan_{tag}.py").write_text(PLUGIN_METHOD.format(tag=f"{tag}-orphan"))
    assert main(["list", "methods", "--plugins", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: plug-in {folder}") and len(err.strip().splitlines()) == 1
    assert re.search(message, err), err


def test_a_plugin_module_may_not_take_a_known_module_name(plugin_state, tmp_path, capsys):
    (tmp_path / "json.py").write_text("")
    assert main(["list", "methods", "--plugins", str(tmp_path / "json.py")]) == 2
    assert "module name 'json' is already taken by" in capsys.readouterr().err


def test_check_method_runs_the_contract_on_a_plugin_method(plugin_state, tmp_path, capsys):
    folder = plugin_folder(tmp_path, "e")
    assert main(["check-method", "all-e", "--plugins", str(folder)]) == 0
    assert "check-method all-e: keeps the method contract" in capsys.readouterr().out
    lazy = PLUGIN_METHOD.replace("return self.uniform_plan(rng)", "return Plan(np.zeros(0, int), np.zeros(0, int))")
    lazy = "import numpy as np\nfrom driftbench.methods.rounds import Plan\n" + lazy
    folder = plugin_folder(tmp_path, "f", method=lazy)
    assert main(["check-method", "all-f", "--plugins", str(folder)]) == 1
    assert "  - no client trained in any round" in capsys.readouterr().out
