"""TOML catalogs and typed parameters: errors name the file, field or value and what is allowed."""

from pathlib import Path

import pytest

from driftbench import paths
from driftbench.config import parse_sets
from driftbench.errors import ConfigError
from driftbench.methods import catalog as method_catalog
from driftbench.traces import catalog as trace_catalog


def test_malformed_toml_names_the_file_and_line(tmp_path, monkeypatch):
    (tmp_path / "broken.toml").write_text('generator = "static"\n[params\nclients = 3\n')
    monkeypatch.setattr(trace_catalog, "CATALOG_DIR", tmp_path)
    with pytest.raises(ConfigError, match=r"broken.toml: invalid TOML: .*line 2"):
        trace_catalog.load_spec("broken")


def test_unknown_and_ill_typed_toml_keys_are_named(tmp_path, monkeypatch):
    (tmp_path / "extra.toml").write_text('generator = "static"\ncolour = "red"\n[source]\nname = "digits"\n')
    (tmp_path / "typed.toml").write_text('generator = "static"\n[params]\nclients = "ten"\n[source]\nname = "digits"\n')
    monkeypatch.setattr(trace_catalog, "CATALOG_DIR", tmp_path)
    with pytest.raises(ConfigError, match=r"extra.toml: unknown key 'colour'; allowed: description, drift, generator"):
        trace_catalog.load_spec("extra")
    with pytest.raises(ConfigError, match=r"typed.toml \[params\]: clients: expected int, got 'ten'"):
        trace_catalog.load_spec("typed")


def test_method_toml_with_unknown_class_lists_the_classes(tmp_path, monkeypatch):
    (tmp_path / "mine.toml").write_text('class = "fancy"\n')
    monkeypatch.setattr(method_catalog, "CATALOG_DIR", tmp_path)
    with pytest.raises(
        ConfigError, match=r"unknown method class in .*mine.toml 'fancy'.*valid: auxo, cfl, cflgt, fedavg, fedccfa, fedcm,"
    ):
        method_catalog.load_method("mine")


def test_missing_catalog_says_how_to_install(tmp_path, monkeypatch):
    monkeypatch.setattr(trace_catalog, "CATALOG_DIR", tmp_path / "nowhere")
    with pytest.raises(ConfigError, match="trace catalog .*nowhere not found; the installation is incomplete: reinstall"):
        trace_catalog.catalog()


def test_catalogs_are_the_wheels_copy_when_installed_from_one_else_the_checkouts(tmp_path, monkeypatch):
    assert paths.catalog_dir("traces") == trace_catalog.CATALOG_DIR == Path(__file__).resolve().parents[1] / "traces"
    (tmp_path / "traces").mkdir()
    monkeypatch.setattr(paths, "BUNDLED", tmp_path)  # where a wheel puts them
    assert paths.catalog_dir("traces") == tmp_path / "traces"
    assert paths.catalog_dir("claims") == Path(__file__).resolve().parents[1] / "claims"  # not in that wheel: the checkout's


def test_parse_sets_splits_on_the_first_equals():
    assert parse_sets(["a=1", "b = x=y"]) == {"a": "1", "b": "x=y"}
    with pytest.raises(ConfigError, match="expected key=value"):
        parse_sets(["=3"])


def test_method_variant_changes_only_what_it_lists():
    base, variant = method_catalog.load_method("fielding"), method_catalog.load_method("fielding-gradient")
    assert variant.implementation == base.implementation == "fielding"
    assert variant.params.representation == "gradient" != base.params.representation
    assert variant.params.distance == "l2" != base.params.distance
    changed = {"representation": base.params.representation, "distance": base.params.distance}
    assert {**vars(variant.params), **changed} == vars(base.params)
    assert method_catalog.load_method("fedcm-star").params.migrate is False
    assert method_catalog.load_method("mscfl-alpha", {"tau": "2.0"}).params.tau == 2.0


def test_trace_variant_lays_its_tables_over_the_base():
    base, small = trace_catalog.load_spec("fmow-timeline"), trace_catalog.load_spec("fmow-small")
    assert small.generator == base.generator and small.source_params == base.source_params
    assert small.params.clients < base.params.clients and small.params.rounds == base.params.rounds
    assert small.train.participants == small.params.clients and small.train.lr == base.train.lr
    assert "feddrift" in small.methods and "feddrift" not in base.methods


@pytest.mark.parametrize(
    ("catalog", "text", "message"),
    [
        (method_catalog, 'variant_of = "fedavg"\nclass = "fedavg"\n', r"bad.toml: a variant .* and has no class key"),
        (method_catalog, 'variant_of = "bad"\n', r"does not lead back to it \(bad -> bad\)"),
        (method_catalog, 'variant_of = "other"\n', r"other.toml: .* does not lead back to it \(bad -> other -> bad\)"),
        (method_catalog, 'variant_of = "nothing"\n', r"unknown base method \(variant_of\) in .*bad.toml 'nothing'"),
        (trace_catalog, 'variant_of = "bad"\n', r"does not lead back to it \(bad -> bad\), and has no generator key"),
        (trace_catalog, 'variant_of = "other"\n', r"other.toml: .* does not lead back to it \(bad -> other -> bad\)"),
        (trace_catalog, 'variant_of = "nothing"\n', "unknown trace 'nothing'"),
    ],
)
def test_bad_variants_are_named(tmp_path, monkeypatch, catalog, text, message):
    (tmp_path / "bad.toml").write_text(text)
    (tmp_path / "other.toml").write_text('variant_of = "bad"\n')  # a cycle when bad names other
    monkeypatch.setattr(catalog, "CATALOG_DIR", tmp_path)
    load = catalog.load_method if catalog is method_catalog else catalog.load_spec
    with pytest.raises(ConfigError, match=message):
        load("bad")


def test_every_catalog_toml_has_a_description_or_inherits_one(tmp_path, monkeypatch):
    (tmp_path / "bare.toml").write_text('class = "fedavg"\n')
    (tmp_path / "base.toml").write_text('class = "fedavg"\ndescription = "the base"\n')
    (tmp_path / "variant.toml").write_text('variant_of = "base"\n[params]\nmu = 0.1\n')
    monkeypatch.setattr(method_catalog, "CATALOG_DIR", tmp_path)
    with pytest.raises(ConfigError, match=r"bare.toml: no description; add a one-line description"):
        method_catalog.load_method("bare")
    assert method_catalog.load_method("variant").description == "the base"
    monkeypatch.setattr(trace_catalog, "CATALOG_DIR", tmp_path)
    (tmp_path / "trace.toml").write_text('generator = "static"\n[source]\nname = "digits"\n')
    with pytest.raises(ConfigError, match=r"trace.toml: no description; add a one-line description"):
        trace_catalog.load_spec("trace")


def test_a_literal_variant_changes_only_the_readings_of_its_paper_that_its_base_reads_otherwise():
    """A method whose defaults read its paper names the variant that runs the paper as written (``literal``)."""
    load_method, catalog = method_catalog.load_method, method_catalog.catalog
    literals = {name: load_method(name).literal for name in catalog() if load_method(name).literal}
    assert literals == {
        "fedcm": "fedcm-literal",
        "fedcm-star": "fedcm-literal-star",
        "fedcm-kmeans": "fedcm-literal-kmeans",
        "fedcm-hierarchical": "fedcm-literal-hierarchical",
        "feddag": "feddag-literal",
        "feddag-single": "feddag-literal-single",
    }
    readings = {"fedcm": {"personal": "shared"}, "feddag": {"compactness": "sum", "line8": "lowest"}}
    for name, literal in literals.items():
        base, variant = load_method(name), load_method(literal)
        assert variant.implementation == base.implementation and variant.literal is None
        changed = {k: v for k, v in vars(variant.params).items() if getattr(base.params, k) != v}
        assert changed == readings[base.implementation.split("-")[0]], name
