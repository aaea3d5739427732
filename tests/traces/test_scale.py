"""``[scale.paper]`` in trace TOMLs and ``--scale`` on the CLI."""

import pytest

from driftbench.cli import main
from driftbench.data.sources import SOURCES
from driftbench.engine.models import MODELS
from driftbench.errors import ConfigError
from driftbench.traces import catalog as trace_catalog
from driftbench.traces.catalog import load_spec, resolve

SCALED = """
description = "test"
generator = "label-swap"
[params]
clients = 6
rounds = 4
concepts = 2
[source]
name = "synthetic"
classes = 4
size = 8
samples_per_class = 5
[train]
lr = 0.1
[scale.paper.params]
clients = 9
[scale.paper.train]
participants = 3
[scale.paper.source]
samples_per_class = 7
"""


@pytest.fixture
def scaled_catalog(tmp_path, monkeypatch):
    (tmp_path / "tiny.toml").write_text(SCALED)
    (tmp_path / "other.toml").write_text(
        SCALED.replace("[scale.paper.source]\n", '[scale.paper.source]\nname = "digits"\n').replace("samples_per_class = 7\n", "")
    )
    monkeypatch.setattr(trace_catalog, "CATALOG_DIR", tmp_path)
    return tmp_path


def test_paper_scale_overrides_params_train_and_source(scaled_catalog):
    embedded, paper = load_spec("tiny"), load_spec("tiny", "paper")
    assert (embedded.params.clients, paper.params.clients) == (6, 9)
    assert paper.params.rounds == 4 and paper.train.lr == 0.1  # unset keys keep the embedded values
    assert (embedded.train.participants, paper.train.participants) == (20, 3)
    assert paper.source == "synthetic" and paper.source_params.samples_per_class == 7 and paper.source_params.classes == 4
    other = load_spec("other", "paper")  # another source replaces the source table instead of merging into it
    assert other.source == "digits"
    assert resolve("tiny", {"scale": "paper"}).trace.num_clients == 9


def test_scale_errors_name_the_file_and_the_choices(scaled_catalog, tmp_path):
    (tmp_path / "plain.toml").write_text(SCALED.split("[scale.paper.params]")[0])
    with pytest.raises(ConfigError, match="plain.toml: trace has no \\[scale.paper\\] table"):
        load_spec("plain", "paper")
    with pytest.raises(ConfigError, match="--scale 'huge': allowed: embedded, paper"):
        load_spec("tiny", "huge")
    (tmp_path / "bad.toml").write_text(SCALED.replace("[scale.paper.params]", "[scale.paper.model]"))
    with pytest.raises(ConfigError, match="bad.toml \\[scale.paper\\]: unknown key 'model'; allowed: params, source, train"):
        load_spec("bad", "paper")


def test_every_paper_scale_in_the_catalog_names_known_sources_and_models():
    scaled = [name for name in trace_catalog.catalog() if "scale" in trace_catalog.read_toml(trace_catalog.catalog()[name])]
    assert {"rotation", "label-shift", "label-combos", "openimage-buckets", "fmow-timeline"} <= set(scaled)
    for name in scaled:
        spec = load_spec(name, "paper")
        assert spec.source in SOURCES and spec.train.model in MODELS
    assert load_spec("openimage-buckets", "paper").params.clients == 5078


def test_cli_scale_option_and_trace_files(tmp_path, capsys):
    assert main(["trace", "show", "rotation", "--scale", "embedded", "--set", "clients=4", "--set", "rounds=3"]) == 0
    assert "clients    4" in capsys.readouterr().out
    path = tmp_path / "r.trace"
    assert main(["trace", "make", "rotation", "--out", str(path), "--set", "clients=4", "--set", "rounds=3"]) == 0
    assert main(["trace", "show", str(path), "--scale", "paper"]) == 2
    assert "is a trace file, whose data is fixed" in capsys.readouterr().err
