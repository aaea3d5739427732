"""A run's seed draws a named trace's data (unless a seed is pinned); a trace file's data is fixed at every seed."""

import json
from pathlib import Path

import pytest

from driftbench.cli import main
from driftbench.runner import Execution, Request, job_trace, plan_jobs
from driftbench.traces import catalog as trace_catalog
from driftbench.traces.catalog import run_sets

TINY = ["--set", "rounds=2", "--set", "clients=6", "--set", "train.participants=3", "--set", "train.local_steps=1"]


def trace_hashes(name, sets, seeds):
    """The trace hash each seed's job of ``name`` replays, with ``sets``."""
    jobs = plan_jobs(Request({name: sets}, ("fedavg",), seeds), Execution(out=Path("unused")))
    return [job_trace(job).trace.content_hash() for job in jobs]


def sweep(tmp_path, trace, *extra):
    """A tiny fedavg sweep of ``trace`` at seeds 0 and 1; each seed's config.json."""
    out = tmp_path / "runs"
    assert main(["sweep", "--traces", trace, "--methods", "fedavg", "--seeds", "0,1", "--out", str(out), "--quiet", *extra]) == 0
    stem = trace.rsplit("/", 1)[-1].removesuffix(".trace")
    return [json.loads((out / stem / "fedavg" / f"seed{s}" / "config.json").read_text()) for s in (0, 1)]


def test_label_swap_seeds_0_and_1_replay_different_data_with_default_flags():
    first, second = trace_hashes("label-swap", {}, (0, 1))
    assert first != second


def test_a_run_records_its_data_seed_and_each_seed_its_own_trace(tmp_path):
    configs = sweep(tmp_path, "label-swap", *TINY)
    assert [c["data_seed"] for c in configs] == [0, 1]
    assert [c["trace"]["params"]["seed"] for c in configs] == [0, 1]
    assert configs[0]["trace"]["hash"] != configs[1]["trace"]["hash"]
    assert configs[0]["trace"]["pool_fingerprint"] == configs[1]["trace"]["pool_fingerprint"]  # the pool is the dataset


def test_a_seed_given_with_set_pins_the_data(tmp_path):
    configs = sweep(tmp_path, "label-swap", *TINY, "--set", "seed=7")
    assert [c["data_seed"] for c in configs] == [7, 7]
    assert configs[0]["trace"]["hash"] == configs[1]["trace"]["hash"]


def test_a_trace_file_keeps_its_data_at_every_seed(tmp_path, capsys):
    path = tmp_path / "mine.trace"
    assert main(["trace", "make", "label-swap", "--out", str(path), *TINY]) == 0
    configs = sweep(tmp_path, str(path), "--set", "train.participants=3", "--set", "train.local_steps=1")
    assert [c["data_seed"] for c in configs] == [None, None]
    assert configs[0]["trace"]["hash"] == configs[1]["trace"]["hash"]
    assert "warning" not in capsys.readouterr().err.lower()


def test_a_seed_in_the_trace_toml_pins_the_data(tmp_path, monkeypatch):
    pinned = tmp_path / "pinned.toml"
    pinned.write_text('variant_of = "label-swap"\ndescription = "label-swap with fixed data"\n[params]\nseed = 3\n')
    named = trace_catalog.catalog()
    monkeypatch.setattr(trace_catalog, "catalog", lambda: {**named, "pinned": pinned})
    assert run_sets("pinned", {}, 1) == {}
    assert run_sets("label-swap", {}, 1) == {"seed": "1"}
    assert run_sets("label-swap", {"params.seed": "4"}, 1) == {"params.seed": "4"}
    first, second = trace_hashes("pinned", {}, (0, 1))
    assert first == second


@pytest.mark.parametrize("name", sorted(trace_catalog.catalog()))
def test_every_named_trace_follows_the_run_seed(name):
    assert run_sets(name, {}, 5) == {"seed": "5"}
