"""Method implementations by class name and named configurations from the top-level ``methods/*.toml``."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from driftbench.config import build, catalog_files, check_table, described, lookup, read_toml, recorded_params
from driftbench.errors import ConfigError
from driftbench.methods.aggregators import PREFIX
from driftbench.methods.base import IMPLEMENTATIONS, Method
from driftbench.paths import catalog_dir
from driftbench.registry import AddedTomls, import_modules

import_modules("driftbench.methods")  # each method class registers itself in IMPLEMENTATIONS
CATALOG_DIR = catalog_dir("methods")
PLUGIN_TOMLS = AddedTomls("method")  # what plug-ins add: driftbench.discovery hands them over
SPEC_KEYS = {"class": str, "variant_of": str, "description": str, "paper": str, "params": dict, "literal": str}  # key -> type


@dataclass(frozen=True)
class MethodSpec:
    """A named method configuration: implementation, parameters, description and paper reference."""

    name: str
    implementation: str
    description: str
    paper: str
    params: Any
    literal: str | None = None  # the variant that runs its paper as written, where these parameters are a reading of it

    def create(self) -> Method:
        """A fresh method instance with these parameters."""
        return IMPLEMENTATIONS[self.implementation](self.params)

    def as_config(self) -> dict[str, Any]:
        """The JSON form written into a run's config.json (the aggregator only when it is not the built-in mean).

        A ``RECORDED_WHEN_SET`` parameter enters it only when set away from its default, so runs made
        before that parameter existed keep their config hash.
        """
        params = recorded_params(self.params)
        if params.get("aggregator") == "mean":
            params = {k: v for k, v in params.items() if k not in ("aggregator", "aggregator_options")}
        return {"name": self.name, "class": self.implementation, "params": params}


def catalog() -> dict[str, Path]:
    """Method names and their TOML files, those of the plug-ins loaded (``driftbench.discovery.plugins``) included."""
    return PLUGIN_TOMLS.over(catalog_files(CATALOG_DIR, "method"))


def load_method(name: str, sets: dict[str, str] | None = None) -> MethodSpec:
    """Parse the named method's TOML and apply ``--set method.KEY=VALUE`` overrides.

    A variant (``variant_of = "BASE"``) takes its base's class and parameters and changes only the
    parameters it lists, so a paper's variant never copies, and never drifts from, the paper's values.
    """
    spec = flower_spec(name) if name.startswith(PREFIX) else catalog_spec(name, ())
    if not sets:
        return spec
    return replace(spec, params=build(type(spec.params), sets, f"--set method ({name})", base=spec.params))


def flower_spec(name: str) -> MethodSpec:
    """``flower:NAME``: FedAvg's one global model and uniform sampling, aggregated by Flower strategy NAME."""
    base = catalog_spec("fedavg", ())
    params = build(type(base.params), {"aggregator": name}, f"--method {name}", base=base.params)
    return MethodSpec(name, base.implementation, f"one global model aggregated by Flower's {name[len(PREFIX) :]}", "", params)


def catalog_spec(name: str, chain: tuple[str, ...]) -> MethodSpec:
    """The named method as its TOML defines it; ``chain`` holds the variants that led here, to refuse a cycle."""
    path = lookup(catalog(), name, "method")
    raw = read_toml(path)
    check_table(raw, SPEC_KEYS, str(path))
    if "variant_of" in raw:
        if "class" in raw or raw["variant_of"] in (*chain, name):
            raise ConfigError(
                f"{path}: a variant names in variant_of a base that does not lead back to it "
                f"({' -> '.join((*chain, name, raw['variant_of']))}), and has no class key"
            )
        lookup(catalog(), raw["variant_of"], f"base method (variant_of) in {path}")
        base = catalog_spec(raw["variant_of"], (*chain, name))
        cls, defaults, inherited = IMPLEMENTATIONS[base.implementation], base.params, base.description
    else:
        cls, defaults, inherited = lookup(IMPLEMENTATIONS, raw.get("class", ""), f"method class in {path}"), None, ""
    params = build(cls.Params, raw.get("params", {}), f"{path} [params]", base=defaults)
    return MethodSpec(name, cls.name, described(raw, path, inherited), raw.get("paper", ""), params, raw.get("literal"))
