"""Claim files (``claims/*.toml``) read into claims: each field parsed and checked, a bad one a ConfigError naming it."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from driftbench.config import check_keys, check_types, flat_sets, read_toml, require
from driftbench.errors import ConfigError
from driftbench.paths import catalog_dir
from driftbench.record.summarize import REFERENCE
from driftbench.reproduce.claim import (
    CALIBRATION_METRICS,
    DIAGNOSIS_KINDS,
    EFFECTS,
    KINDS,
    UNITS,
    Calibration,
    Claim,
    Diagnosis,
    Direction,
    PaperValue,
    Premise,
)
from driftbench.reproduce.metrics import metric_names
from driftbench.reproduce.quote_file import check_quote_claims, parse_quotes
from driftbench.reproduce.verdict import BOUNDS

CLAIMS_DIR = catalog_dir("claims")
FILE_KEYS = {"paper": str, "reference": str, "diagnoses": dict, "claims": list}  # key -> TOML type
CLAIM_KEYS = {
    "id": str,
    "where": str,
    "claim": str,
    "trace": str,
    "set": dict,
    "methods": list,
    "metric": str,
    "target": str,
    "direction": str,
    "paper_figure": str,
    "kind": str,
    "difference": str,
    "unit": str,
    "effect": str,
    "premises": list,
    "method_set": dict,
    "twin": dict,
    "protocol": str,
    "workload": str,
    "differs": str,
    "diagnosis": object,  # a table, or the name of one of the file's [diagnoses]
    "literal_diagnosis": object,  # the same, for the claim's literal twin
    "bound": str,
    "calibrated_to": dict,
}  # paper_value (a number or a table) is checked on its own
VALUE_KEY = "paper_value"
OPTIONAL_CLAIM_KEYS = {"set", "target", "diagnosis", "difference", "effect", "premises", "method_set", "twin", "protocol"}
OPTIONAL_CLAIM_KEYS |= {"workload", "bound", "differs", "calibrated_to", "literal_diagnosis"}
DEGENERATE_PREMISE = "none degenerate"
DIAGNOSIS_KEYS = {"kind": str, "evidence": str, "command": str, "commit": str, "quotes": list}
CALIBRATION_KEYS = {"method": str, "paper": object, "ours": object, "seeds": list, "set": dict, "metric": str, "method_set": dict}
ORDERINGS = ("increasing", "decreasing")
PAIR = re.compile(r"^\s*(\S+)\s*([<>])\s*(\S+)(?:\s+by\s+(\S+))?\s*$")
WITHIN = re.compile(r"^\s*(\S+)\s*=\s*(\S+)\s+within\s+(\S+)\s*$")
DIRECTIONS = '"A > B", "A < B" (optionally "by X"), "A = B within X", "increasing" or "decreasing" (over methods, in order)'
PREMISES = f'"METRIC: A > B by X", "METRIC: A = B within X" (the direction grammar) or "{DEGENERATE_PREMISE}"'


def claim_files(folder: Path) -> dict[str, Path]:
    """Paper names (file stems) and their claim files in ``folder``."""
    require(folder.is_dir(), f"--claims {folder}: no such folder")
    return {path.stem: path for path in sorted(folder.glob("*.toml"))}


def load_claims(folder: Path | None = None, papers: Sequence[str] = ()) -> list[Claim]:
    """The claims of the named papers (default: every claim file in ``folder``, the repository's ``claims/``)."""
    files = claim_files(folder or CLAIMS_DIR)
    require(bool(files), f"--claims {folder or CLAIMS_DIR}: no claim files (*.toml)")
    for paper in papers:
        require(paper in files, f"unknown paper {paper!r}; claim files in {folder or CLAIMS_DIR}: {', '.join(files)}")
    return [claim for paper in (dict.fromkeys(papers) or files) for claim in read_claim_file(files[paper])]


def read_claim_file(path: Path) -> list[Claim]:
    """Parse and validate one paper's claim file; a bad field is a ConfigError naming the file and the field."""
    raw = read_toml(path)
    tables = claim_tables(raw, path)
    shared = {name: parse_diagnosis(table, f"{path}: diagnoses.{name}", name) for name, table in raw.get("diagnoses", {}).items()}
    claims = [parse_claim(table, path, raw["paper"], i, shared) for i, table in enumerate(tables)]
    ids = [c.id for c in claims]
    duplicate = next((i for i in ids if ids.count(i) > 1), None)
    require(duplicate is None, f"{path}: claims: id {duplicate!r} is used more than once")
    check_distinct(claims, path)
    check_quote_claims(claims, shared, path)
    named = {t[key] for t in tables for key in ("diagnosis", "literal_diagnosis") if isinstance(t.get(key), str)}
    unused = sorted(set(shared) - named)
    require(not unused, f"{path}: diagnoses.{unused[0] if unused else ''}: no claim names it")
    return claims


def comparison(claim: Claim) -> tuple[object, ...]:
    """What a claim compares, the same for two claims that compare the same runs the same way: its setting (trace and
    set), metric (with its target and no-drift twin), methods (with their overrides) and direction ("B < A" is "A > B")."""
    d = claim.direction
    flipped = {"<": ">", "increasing": "decreasing"}
    methods = d.methods[::-1] if d.relation in flipped else tuple(sorted(d.methods)) if d.relation == "=" else d.methods
    runs = tuple(claim.method_run(m) for m in methods)
    twin = tuple(sorted((claim.twin or {}).items()))
    return (
        claim.trace,
        tuple(sorted(claim.sets.items())),
        claim.metric,
        claim.target,
        twin,
        runs,
        flipped.get(d.relation, d.relation),
        d.margin,
    )


def check_distinct(claims: Sequence[Claim], path: Path) -> None:
    """No two claims of a file compare the same runs the same way (``comparison``): that is one claim counted twice."""
    seen: dict[tuple[object, ...], str] = {}
    for claim in claims:
        first = seen.setdefault(comparison(claim), claim.id)
        require(
            first == claim.id,
            f"{path}: claims {first!r} and {claim.id!r} compare the same runs the same way (trace {claim.trace!r} with "
            f"the same set, methods {list(claim.methods)}, metric {claim.metric!r}, direction {claim.direction.relation!r}): "
            "one claim counted twice",
        )


def claim_tables(raw: dict[str, Any], path: Path) -> list[dict[str, Any]]:
    """A claim file's ``[[claims]]`` tables, its keys and its paper's name checked."""
    check_keys(raw, FILE_KEYS, str(path))
    check_types(raw, FILE_KEYS, str(path))
    require(
        isinstance(raw.get("paper"), str) and bool(raw["paper"]),
        f'{path}: paper: expected the paper\'s name, e.g. paper = "FIELDING"',
    )
    tables = raw.get("claims")
    require(
        isinstance(tables, list) and bool(tables) and all(isinstance(t, dict) for t in tables),
        f"{path}: claims: expected one or more [[claims]] tables",
    )
    assert isinstance(tables, list)  # require()d above
    return tables


def parse_claim(
    table: dict[str, Any], path: Path, title: str, index: int, shared: Mapping[str, Diagnosis] | None = None
) -> Claim:
    """One ``[[claims]]`` table, its fields checked in turn: the first bad one is a ConfigError naming it."""
    where = f"{path}: claims[{index}]" + (f" ({table['id']})" if isinstance(table.get("id"), str) else "")
    check_claim_keys(table, where)
    methods = parse_methods(table["methods"], where)
    check_metric(table, where)
    kind, unit, effect = parse_kind(table, where)
    direction = parse_direction(table["direction"], methods, where)
    require(
        effect == "difference" or (direction.relation != "=" and not direction.margin),
        f'{where}: effect \'ratio\': a ratio effect is judged on the log scale, with no "by X" margin and no "A = B '
        'within X" (give the claim effect = "difference")',
    )
    bound = parse_bound(table, direction, where)
    premises = tuple(parse_premise(p, f"{where}: premises[{i}]") for i, p in enumerate(table.get("premises", [])))
    paper_value = parse_paper_value(table, kind, direction.methods, where)
    method_sets = parse_method_sets(table.get("method_set", {}), where)
    protocol, workload, differs = (one_line(table, key, where) for key in ("protocol", "workload", "differs"))
    diagnosis, literal_diagnosis = parse_diagnoses(table, shared or {}, where)
    claim = Claim(
        path.stem,
        title,
        table["id"],
        table["where"],
        table["claim"],
        table["trace"],
        flat_sets(table.get("set", {})),
        table["metric"],
        direction,
        table["paper_figure"],
        kind=kind,
        unit=unit,
        paper_value=paper_value,
        difference=" ".join(table["difference"].split()) if "difference" in table else None,
        effect=effect,
        premises=premises,
        method_sets=method_sets,
        twin=flat_sets(table["twin"]) if "twin" in table else None,
        protocol=protocol,
        workload=workload,
        differs=differs,
        target=table.get("target", REFERENCE) if table["metric"] == "tta_speedup" else None,
        diagnosis=diagnosis,
        literal_diagnosis=literal_diagnosis,
        bound=bound,
        calibrated_to=parse_calibration(table["calibrated_to"], where) if "calibrated_to" in table else None,
    )
    check_overrides(claim, table, where)
    return claim


def check_claim_keys(table: dict[str, Any], where: str) -> None:
    """Every key of a claim known and of its TOML type, and every required key there."""
    check_keys(table, {**CLAIM_KEYS, VALUE_KEY: object}, where)
    check_types(table, CLAIM_KEYS, where)
    missing = sorted(set(CLAIM_KEYS) - OPTIONAL_CLAIM_KEYS - set(table))
    if missing:
        raise ConfigError(f"{where}: missing {missing[0]!r}; a claim has {', '.join(sorted(CLAIM_KEYS))} (see docs/reproduce.md)")


def parse_methods(methods: list[Any], where: str) -> tuple[str, ...]:
    """A claim's ``methods``: distinct, non-empty names."""
    require(
        bool(methods) and all(isinstance(m, str) and m for m in methods) and len(set(methods)) == len(methods),
        f"{where}: methods: expected a list of distinct method names, got {methods!r}",
    )
    return tuple(methods)


def check_metric(table: dict[str, Any], where: str) -> None:
    """A known ``metric``, with a ``target`` only for time to accuracy and a ``twin`` exactly for the no-drift delta."""
    require(table["metric"] in metric_names(), f"{where}: metric {table['metric']!r}: allowed: {', '.join(metric_names())}")
    require(
        "target" not in table or table["metric"] == "tta_speedup",
        f"{where}: target: only a tta_speedup claim has a target method, this one's metric is {table['metric']!r}",
    )
    require(
        ("twin" in table) == (table["metric"] == "delta_permille_stable"),
        f"{where}: twin: a delta_permille_stable claim, and only it, names its no-drift twin (trace overrides)",
    )


def parse_kind(table: dict[str, Any], where: str) -> tuple[str, str, str]:
    """A claim's ``kind``, ``unit`` and ``effect``; a proxy, and only a proxy, says how its metric differs."""
    kind, unit, effect = table["kind"], table["unit"], table.get("effect", "difference")
    require(kind in KINDS, f"{where}: kind {kind!r}: allowed: {', '.join(KINDS)}")
    require(unit in UNITS, f"{where}: unit {unit!r}: allowed: {', '.join(UNITS)}")
    require(effect in EFFECTS, f"{where}: effect {effect!r}: allowed: {', '.join(EFFECTS)}")
    require(
        (kind == "proxy") == bool(str(table.get("difference", "")).strip()),
        f"{where}: difference: a proxy claim, and only it, says in one line how its metric differs from the paper's",
    )
    return kind, unit, effect


def check_overrides(claim: Claim, table: dict[str, Any], where: str) -> None:
    """The no-drift twin's overrides change the claim's setting, and only methods the claim runs have parameter overrides."""
    require(
        claim.twin is None or any(claim.sets.get(k) != v for k, v in claim.twin.items()),
        f"{where}: twin {table.get('twin')!r}: changes nothing in the claim's set, so the no-drift twin would be the "
        "claim's own runs; give the overrides that remove the drift, e.g. twin = { fraction = 0 }",
    )
    stray = sorted(set(claim.method_sets) - set(claim.run_methods))
    if stray:
        raise ConfigError(f"{where}: method_set: {stray[0]!r} is not one of the claim's runs {list(claim.run_methods)}")


def parse_direction(text: str, methods: tuple[str, ...], where: str) -> Direction:
    """A claim's ``direction`` string over its ``methods``; anything else is a ConfigError naming ``where``."""
    if text.strip() in ORDERINGS:
        require(len(methods) >= 2, f"{where}: methods: an ordering needs at least two methods, got {list(methods)}")
        return Direction(text.strip(), methods)
    pair, within = PAIR.match(text), WITHIN.match(text)
    require(pair is not None or within is not None, f"{where}: direction {text!r}: expected {DIRECTIONS}")
    if pair is not None:
        a, relation, b, margin = pair.groups()
    else:
        assert within is not None  # require()d above
        (a, b, margin), relation = within.groups(), "="
    value = _number(margin or "0", f"{where}: direction {text!r}: margin")
    require(value >= 0 and (relation != "=" or value > 0), f"{where}: direction {text!r}: the margin must be >= 0 (> 0 for =)")
    require(a != b, f"{where}: direction {text!r}: compares {a!r} with itself")
    require(
        sorted(methods) == sorted({a, b}),
        f"{where}: methods {list(methods)}: must be exactly the direction's methods {a!r} and {b!r}",
    )
    return Direction(relation, (a, b), value)


def _number(text: str, where: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ConfigError(f"{where}: expected a number, got {text!r}") from None
    require(math.isfinite(value), f"{where}: expected a finite number, got {text!r}")
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def parse_premise(text: Any, where: str) -> Premise:
    """One entry of a claim's ``premises``; an unknown metric or a bad relation is a ConfigError naming ``where``."""
    require(isinstance(text, str) and bool(text.strip()), f"{where}: expected {PREMISES}, got {text!r}")
    if text.strip() == DEGENERATE_PREMISE:
        return Premise(text.strip(), None)
    metric, sep, relation = text.partition(":")
    require(bool(sep), f"{where}: {text!r}: expected {PREMISES}")
    metric = metric.strip()
    require(metric in metric_names(), f"{where}: metric {metric!r}: allowed: {', '.join(metric_names())}")
    methods = tuple(dict.fromkeys(re.findall(r"[^\s<>=]+", relation.split(" by ")[0].split(" within ")[0])))
    direction = parse_direction(relation, methods, where)
    require(direction.relation in (">", "<", "="), f"{where}: {text!r}: a premise compares two methods")
    return Premise(" ".join(text.split()), metric, direction)


def parse_paper_value(table: dict[str, Any], kind: str, methods: tuple[str, ...], where: str) -> PaperValue | None:
    """The paper's figure as data: one number (the effect) or one per compared method; a driftbench claim has none."""
    value = table.get(VALUE_KEY)
    if kind == "driftbench":
        require(value is None, f"{where}: {VALUE_KEY}: a driftbench claim is on a figure the paper does not report")
        return None
    allowed = f"a number (the effect) or a table of a number per method {list(methods)}"
    require(value is not None, f"{where}: missing {VALUE_KEY!r}: the paper's figure as {allowed}")
    if isinstance(value, dict):
        require(
            sorted(value) == sorted(methods) and all(_is_number(v) for v in value.values()),
            f"{where}: {VALUE_KEY} {value!r}: expected {allowed}",
        )
        return {m: float(v) for m, v in value.items()}
    require(_is_number(value), f"{where}: {VALUE_KEY} {value!r}: expected {allowed}")
    assert value is not None  # require()d above
    return float(value)


def parse_bound(table: dict[str, Any], direction: Direction, where: str) -> str | None:
    """A bound claim's ``bound``: its ``paper_value`` is one number bounding the effect of the methods it compares."""
    require(
        (table["kind"] == "bound") == ("bound" in table),
        f"{where}: bound: a bound claim, and only it, says which bound its {VALUE_KEY} is: {', '.join(BOUNDS)}",
    )
    if "bound" not in table:
        return None
    bound = table["bound"]
    require(bound in BOUNDS, f"{where}: bound {bound!r}: allowed: {', '.join(BOUNDS)}")
    require(
        _is_number(table.get(VALUE_KEY)),
        f"{where}: bound: the {VALUE_KEY} of a bound is one number (the effect), got {table.get(VALUE_KEY)!r}",
    )
    require(direction.relation != "=", f"{where}: bound: an equivalence (A = B within X) has no effect to bound")
    return str(bound)


def one_line(table: dict[str, Any], key: str, where: str) -> str | None:
    """An optional one-line note (``protocol``, ``workload``, ``differs``); an empty one is a ConfigError naming ``where``."""
    if key not in table:
        return None
    text = " ".join(table[key].split())
    require(bool(text), f"{where}: {key}: expected one line, got an empty string")
    return text


def parse_method_sets(table: dict[str, Any], where: str) -> dict[str, dict[str, str]]:
    """``method_set = { ifca = { k = 5 } }``: each method's parameter overrides as ``--set method.KEY`` strings."""
    require(
        all(isinstance(v, dict) and v for v in table.values()),
        f"{where}: method_set: expected a table of parameter tables per method, e.g. {{ ifca = {{ k = 5 }} }}",
    )
    return {method: flat_sets(sets) for method, sets in table.items()}


def parse_diagnoses(
    table: dict[str, Any], shared: Mapping[str, Diagnosis], where: str
) -> tuple[Diagnosis | None, Diagnosis | None]:
    """A claim's ``diagnosis`` and its literal twin's ``literal_diagnosis``, each None where the claim gives none."""

    def named(key: str, at: str) -> Diagnosis | None:
        return claim_diagnosis(table[key], shared, at, table["id"]) if key in table else None

    return named("diagnosis", where), named("literal_diagnosis", f"{where}: literal_diagnosis")


def claim_diagnosis(value: Any, shared: Mapping[str, Diagnosis], where: str, claim_id: str = "") -> Diagnosis:
    """A claim's ``diagnosis``: its own table, or the name of a diagnosis its file's ``[diagnoses]`` shares between claims."""
    if isinstance(value, str):
        require(value in shared, f"{where}: diagnosis {value!r}: the file's [diagnoses] are {', '.join(shared) or 'none'}")
        return shared[value]
    require(isinstance(value, dict), f"{where}: diagnosis must be a table or the name of one of the file's [diagnoses]")
    return parse_diagnosis(value, where, claim_id)


def parse_diagnosis(table: dict[str, Any], where: str, name: str = "") -> Diagnosis:
    """A claim's ``[claims.diagnosis]`` table; a bad kind, no command or evidence without a number is a ConfigError."""
    where = f"{where}: diagnosis"
    require(isinstance(table, dict), f"{where}: expected a table with {', '.join(DIAGNOSIS_KEYS)}")
    check_keys(table, DIAGNOSIS_KEYS, where)
    check_types(table, DIAGNOSIS_KEYS, where)
    require(table.get("kind") in DIAGNOSIS_KINDS, f"{where}: kind {table.get('kind')!r}: allowed: {', '.join(DIAGNOSIS_KINDS)}")
    evidence = " ".join(str(table.get("evidence", "")).split())
    require(
        bool(re.search(r"\d", evidence)),
        f"{where}: evidence: expected the experiment's numbers in one paragraph, got {evidence[:60]!r}",
    )
    command = " ".join(str(table.get("command", "")).split())
    require(bool(command), f"{where}: command: expected the command of the experiment that decided it")
    require(
        (table["kind"] == "implementation") == ("commit" in table),
        f"{where}: commit: an implementation diagnosis, and only it, names the commit that fixed it",
    )
    quotes = parse_quotes(table.get("quotes", []), evidence, where)
    return Diagnosis(table["kind"], evidence, command, table.get("commit"), name, quotes)


def parse_calibration(table: dict[str, Any], where: str) -> Calibration:
    """``calibrated_to = { method = "fedavg", paper = 38.30, ours = 37.1, seeds = [10, 11] }`` (optional ``set``); checked."""
    where = f"{where}: calibrated_to"
    check_keys(table, CALIBRATION_KEYS, where)
    missing = sorted(set(CALIBRATION_KEYS) - {"set", "metric", "method_set"} - set(table))
    require(not missing, f"{where}: missing {missing[0] if missing else ''!r}; it has {', '.join(CALIBRATION_KEYS)}")
    check_types(table, CALIBRATION_KEYS, where)
    for key in ("paper", "ours"):
        require(_is_number(table[key]), f"{where}: {key}: expected the accuracy in points, got {table[key]!r}")
    seeds = table["seeds"]
    require(
        bool(seeds) and all(isinstance(s, int) and s >= 0 for s in seeds),
        f"{where}: seeds: expected the calibration's seeds, e.g. [10, 11, 12], got {seeds!r}",
    )
    metric = table.get("metric", "final_accuracy")
    require(metric in CALIBRATION_METRICS, f"{where}: metric {metric!r}: allowed: {', '.join(CALIBRATION_METRICS)}")
    sets = tuple(sorted(flat_sets(table.get("set", {})).items()))
    method_sets = tuple(sorted(flat_sets(table.get("method_set", {})).items()))
    return Calibration(table["method"], float(table["paper"]), float(table["ours"]), tuple(seeds), sets, metric, method_sets)
