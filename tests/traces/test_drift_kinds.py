"""Each named trace's kind of drift, as data in its TOML: validated, inherited by variants, listed."""

import pytest

from driftbench.cli import main
from driftbench.errors import ConfigError
from driftbench.traces import catalog as trace_catalog
from driftbench.traces.catalog import DRIFT_KINDS, catalog, drift_kind, load_spec

KINDS = {
    "static": "none",
    "label-combos": "none",
    "label-swap-static": "none",
    "label-shift": "label",
    "openimage-buckets": "label",
    "label-swap": "concept",
    "changepoints": "concept",
    "rotation": "feature",
    "fmow-timeline": "natural",
    "fmow-small": "natural",
    "fmow-frequent": "natural",
}


def test_every_named_trace_has_its_kind_of_drift():
    assert set(catalog()) == set(KINDS)
    assert {name: drift_kind(name) for name in catalog()} == KINDS
    assert {name: load_spec(name).drift for name in catalog()} == KINDS
    assert drift_kind("no-such-trace") is None


def test_a_kind_outside_the_list_is_a_one_line_error(tmp_path, monkeypatch):
    (tmp_path / "odd.toml").write_text('description = "odd"\ngenerator = "static"\ndrift = "sudden"\n')
    (tmp_path / "plain.toml").write_text('description = "plain"\ngenerator = "static"\n[source]\nname = "digits"\n')
    monkeypatch.setattr(trace_catalog, "CATALOG_DIR", tmp_path)
    with pytest.raises(ConfigError, match=r"odd.toml: drift = 'sudden'; allowed: none, label, concept, feature, natural$"):
        drift_kind("odd")
    with pytest.raises(ConfigError, match="drift = 'sudden'"):
        load_spec("odd")
    assert drift_kind("plain") is None and load_spec("plain").drift is None
    assert list(DRIFT_KINDS) == ["none", "label", "concept", "feature", "natural"]


def test_list_traces_shows_the_kind(capsys):
    assert main(["list", "traces"]) == 0
    kinds = {line.split()[0]: line.split()[1] for line in capsys.readouterr().out.splitlines()}
    assert kinds == KINDS
