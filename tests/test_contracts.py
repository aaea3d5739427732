"""Every registered source, generator and method on tiny inputs: determinism, shapes, declared bytes."""

from dataclasses import fields

import numpy as np
import pandas as pd
import pytest

from driftbench.config import read_toml
from driftbench.data import SOURCES, load_pool
from driftbench.methods import catalog as method_catalog
from driftbench.methods.base import FLOAT_BYTES
from driftbench.methods.catalog import IMPLEMENTATIONS, MethodSpec
from driftbench.scheduler import RunSpec, run
from driftbench.traces.catalog import apply_sets, catalog, generate, load_spec
from driftbench.traces.generators import GENERATORS
from tests.data.formats import TORCHVISION_WRITERS, make_hf_dataset, write_fedscale, write_fmow

TINY_GENERATOR = {"clients": 8, "rounds": 6, "train_samples": 10, "test_samples": 5}  # the shared ClientParams
DURATIONS = ("_round", "_rounds", "_every")  # endings of generator parameters counted in rounds


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


def generator_trace(generator):
    """The first catalog trace the generator makes: every generator ships with a trace TOML."""
    names = [t for t in catalog() if load_spec(t).generator == generator]
    assert names, f"generator {generator!r} has no trace TOML in traces/"
    return names[0]


def tiny_spec(generator):
    """The generator's catalog trace shrunk to TINY_GENERATOR; parameters counted in rounds shrink with the horizon."""
    spec = load_spec(generator_trace(generator))
    shrink = TINY_GENERATOR["rounds"] / (spec.params.rounds or TINY_GENERATOR["rounds"])  # 0: a horizon from elsewhere (a file)
    durations = {f.name: getattr(spec.params, f.name) for f in fields(spec.params) if f.name.endswith(DURATIONS)}
    sets = {**TINY_GENERATOR, **{k: max(1, int(v * shrink)) if v else 0 for k, v in durations.items()}}
    return apply_sets(spec, {**{k: str(v) for k, v in sets.items()}, "train.participants": "4", "train.local_steps": "2"})


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
def test_method_is_deterministic_and_counts_model_traffic(implementation, tmp_path, monkeypatch):
    spec = tiny_spec("label-swap")
    trace, pool = generate(spec)
    cls = IMPLEMENTATIONS[implementation]
    method = MethodSpec(implementation, implementation, "", "", cls.Params())
    plans = []
    planned = cls.plan
    monkeypatch.setattr(cls, "plan", lambda self, *args: plans.append(planned(self, *args)) or plans[-1])
    summaries = [run(RunSpec(trace, pool, spec.train, method, seed=0, device="cpu", out=tmp_path / o, quiet=True)) for o in "ab"]
    keep = ("final_accuracy", "recovery", "ari_mean", "n_clusters_final", "mean_client_distance_final", "status")
    assert [{k: getattr(s, k) for k in keep} for s in summaries][0] == {k: getattr(summaries[1], k) for k in keep}
    assert summaries[0].status == "ok"
    rounds = pd.read_csv(tmp_path / "a/label-swap" / implementation / "seed0/rounds.csv")
    model_bytes = FLOAT_BYTES * (64 * 200 + 200 + 200 * 200 + 200 + 200 * 10 + 10)  # the MLP on 8x8 digits
    first_run = plans[:6]
    trained = sum(len(p.participants) for p in first_run)
    downloaded = sum(len(p.participants) * p.models_downloaded for p in first_run)
    assert trained > 0
    extra = summaries[0].overhead
    uploaded = sum(len(p.participants) * p.models_uploaded for p in first_run)
    assert rounds["upload_bytes"].iloc[-1] == uploaded * model_bytes + extra.extra_upload_bytes
    assert rounds["download_bytes"].iloc[-1] == downloaded * model_bytes + extra.extra_download_bytes
