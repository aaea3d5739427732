"""Every registered source, generator and method on tiny inputs: determinism, shapes, declared bytes."""

import numpy as np
import pytest

from driftbench.config import read_toml
from driftbench.contracts import TINY_GENERATOR, RecordedSpec, assert_keeps_contract, tiny_spec
from driftbench.data import SOURCES, load_pool
from driftbench.methods import catalog as method_catalog
from driftbench.methods.base import Method, ProxParams
from driftbench.methods.catalog import IMPLEMENTATIONS, MethodSpec
from driftbench.methods.queries import FLOAT_BYTES
from driftbench.methods.rounds import Plan
from driftbench.scheduler import RunSpec, run
from driftbench.traces.catalog import generate
from driftbench.traces.generators import GENERATORS
from tests.data.formats import TORCHVISION_WRITERS, make_hf_dataset, write_fedscale, write_fmow


@pytest.fixture(scope="module")
def tiny_sources(tmp_path_factory):
    """Tiny settings per source; real sources read small files written in their own formats."""
    root = tmp_path_factory.mktemp("sources")
    rng = np.random.default_rng(0)
    for name, write in TORCHVISION_WRITERS.items():
        write(root / name, rng)
    write_fedscale(root / "fedscale")
    write_fmow(root / "fmow")
    make_hf_dataset([10, 20, 30], [0, 1, 3]).save_to_disk(str(root / "hf"))
    offline = {"download": "false"}
    return {
        "digits": {},
        "synthetic": {"classes": 4, "size": 8, "channels": 1, "samples_per_class": 6},
        **{name: {"root": str(root / name), **offline} for name in TORCHVISION_WRITERS},
        "fedscale-openimage": {"root": str(root / "fedscale"), "size": "8"},
        "wilds-fmow": {"root": str(root / "fmow"), "size": "8"},
        "hf": {"dataset": str(root / "hf"), "image": "img", "label": "fine", "size": "8"},
    }


def test_every_source_has_tiny_settings(tiny_sources):
    assert set(tiny_sources) == set(SOURCES)


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_source_is_deterministic_and_well_formed(name, tiny_sources):
    a, b = load_pool(name, tiny_sources[name]), load_pool(name, tiny_sources[name])
    assert a.fingerprint() == b.fingerprint()
    assert a.x.ndim == 4 and a.x.dtype in (np.float32, np.uint8) and len(a) == len(a.y)
    assert set(np.unique(a.y)) <= set(range(a.num_classes))


@pytest.mark.parametrize("implementation", sorted(IMPLEMENTATIONS))
def test_every_method_class_has_a_catalog_toml(implementation):
    classes = {read_toml(path).get("class") for path in method_catalog.catalog().values()}
    assert implementation in classes, f"method class {implementation!r} has no methods/*.toml with class = {implementation!r}"


@pytest.mark.parametrize("generator", sorted(GENERATORS))
def test_generator_is_deterministic_and_well_formed(generator):
    (a, pool), (b, _) = generate(tiny_spec(generator)), generate(tiny_spec(generator))
    assert a.content_hash() == b.content_hash()
    assert a.num_clients == 8 and a.rounds == 6
    assert (a.seg_start[a.seg_ptr[:-1]] == 0).all()
    for seg in range(len(a.seg_start)):
        train, test = a.train_indices(seg), a.test_indices(seg)
        assert len(train) and len(test) and not set(train) & set(test)
        assert train.max() < len(pool) and test.max() < len(pool)
    for event in a.events():
        assert 0 < event.round < a.rounds and event.clients.max() < a.num_clients


@pytest.mark.parametrize("implementation", sorted(IMPLEMENTATIONS))
def test_method_keeps_the_contract(implementation, tmp_path):
    cls = IMPLEMENTATIONS[implementation]
    assert_keeps_contract(MethodSpec(implementation, implementation, "", "", cls.Params()), tmp_path)


def test_traffic_is_counted_in_models_of_the_tiny_mlp(tmp_path):
    spec = tiny_spec("label-swap")
    trace, pool = generate(spec)
    recorded = RecordedSpec("fedavg", "fedavg", "", "", IMPLEMENTATIONS["fedavg"].Params())
    run(RunSpec(trace, pool, spec.train, recorded, seed=0, device="cpu", out=tmp_path, quiet=True))
    assert recorded.methods[0].ctx.model_bytes == FLOAT_BYTES * (64 * 200 + 200 + 200 * 200 + 200 + 200 * 10 + 10)
    assert len(recorded.plans) == TINY_GENERATOR["rounds"]


class Lazy(Method):
    """Trains nobody: breaks the contract's clause that clients train."""

    Params = ProxParams

    def plan(self, rnd, clients, rng):
        return Plan(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))


Lazy.name = "lazy"  # set after the class body, so that the class is not registered for good


def test_a_method_that_trains_nobody_breaks_the_contract(tmp_path, monkeypatch):
    monkeypatch.setitem(IMPLEMENTATIONS, "lazy", Lazy)
    with pytest.raises(AssertionError, match="method 'lazy' breaks the contract: no client trained in any round"):
        assert_keeps_contract(MethodSpec("lazy", "lazy", "", "", ProxParams()), tmp_path)


class Hoarder(Lazy):
    """Keeps a Python set in its state, which a checkpoint cannot hold."""

    def plan(self, rnd, clients, rng):
        self.seen = {rnd}
        return self.uniform_plan(rng)


Hoarder.name = "hoarder"


def test_a_method_whose_state_cannot_be_checkpointed_breaks_the_contract(tmp_path, monkeypatch):
    monkeypatch.setitem(IMPLEMENTATIONS, "hoarder", Hoarder)
    with pytest.raises(AssertionError, match=r"its state cannot be checkpointed \(method hoarder: attribute seen"):
        assert_keeps_contract(MethodSpec("hoarder", "hoarder", "", "", ProxParams()), tmp_path)
