"""A diagnosis's ``quotes`` in a claim file, read and checked: a bad field is a ConfigError naming the file, diagnosis, field."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from driftbench.config import check_keys, check_types, flat_sets, require
from driftbench.methods import catalog as method_catalog
from driftbench.methods.aggregators import PREFIX as FLOWER
from driftbench.reproduce.claim import UNITS, Claim, Diagnosis
from driftbench.reproduce.quote import FORMS, MAX_DIGITS, ROUND_METRICS, Quote, holds, numbers, producible, quote_metrics

QUOTE_KEYS = {
    "text": str,
    "claim": str,
    "trace": str,
    "set": dict,
    "method": str,
    "method_set": dict,
    "versus": str,
    "metric": str,
    "unit": str,
    "seeds": list,
    "at_rounds": list,
    "form": str,
    "digits": object,
}
REQUIRED = ("text", "method", "metric", "seeds", "form", "digits")


def parse_quotes(value: Any, evidence: str, where: str) -> tuple[Quote, ...]:
    """A diagnosis's ``quotes``: a list of tables, each checked; its ``text`` must be in the (normalised) ``evidence``."""
    require(
        isinstance(value, list) and all(isinstance(q, dict) for q in value),
        f"{where}: quotes: expected a list of tables, e.g. [{{ text = ..., claim = ..., method = ... }}]",
    )
    return tuple(parse_quote(table, evidence, f"{where}: quotes[{i}]") for i, table in enumerate(value))


def parse_quote(table: dict[str, Any], evidence: str, where: str) -> Quote:
    """One quote: where its runs are (a claim, or a trace and set), what it reads and how it is written; its text's
    numbers are what that form writes (``producible``)."""
    check_keys(table, QUOTE_KEYS, where)
    check_types(table, {k: t for k, t in QUOTE_KEYS.items() if t is not object}, where)
    missing = [key for key in REQUIRED if key not in table]
    require(not missing, f"{where}: missing {missing[0] if missing else ''!r}; a quote has {', '.join(QUOTE_KEYS)}")
    text = " ".join(table["text"].split())
    require(re.search(r"\d", text) is not None, f"{where}: text {text!r}: expected the passage holding the quoted number")
    require(holds(evidence, text), f"{where}: text {text!r}: not in the evidence verbatim (its numbers whole)")
    require(
        ("claim" in table) != ("trace" in table),
        f"{where}: a quote names the claim whose setting its runs are in (claim = ID), or a trace (trace and set), not both",
    )
    require(
        "claim" not in table or not {"set", "method_set"} & set(table),
        f"{where}: set, method_set: a quote of claim {table.get('claim')!r} runs in that claim's setting",
    )
    metric, form, unit, digits = table["metric"], table["form"], table.get("unit"), table["digits"]
    at_rounds = parse_rounds(table, where)
    allowed = ROUND_METRICS if at_rounds else quote_metrics()
    require(
        metric in allowed,
        f"{where}: metric {metric!r}: allowed{' with at_rounds (rounds.csv)' if at_rounds else ''}: {', '.join(allowed)}",
    )
    require(form in FORMS, f"{where}: form {form!r}: allowed: {', '.join(FORMS)}")
    require(unit is None or unit in UNITS, f"{where}: unit {unit!r}: allowed: {', '.join(UNITS)}")
    require(
        isinstance(digits, int) and not isinstance(digits, bool) and 0 <= digits <= MAX_DIGITS,
        f"{where}: digits {digits!r}: expected the decimals written, 0 to {MAX_DIGITS}",
    )
    seeds = table["seeds"]
    require(
        bool(seeds) and all(isinstance(s, int) and s >= 0 for s in seeds) and len(set(seeds)) == len(seeds),
        f"{where}: seeds: expected distinct seeds of the report's runs, e.g. [0, 1, 2, 3, 4], got {seeds!r}",
    )
    require(
        producible(text, form, digits, None if at_rounds else len(seeds)),
        f"{where}: text {text!r}: its numbers {', '.join(numbers(text))} are not what form {form!r} writes for "
        f"{'the evaluations of ' if at_rounds else ''}{len(seeds)} seeds with {digits} decimals; a text holds the quoted "
        "numbers and words, no other number",
    )
    method_sets = table.get("method_set", {})
    require(
        all(isinstance(v, dict) and v for v in method_sets.values()),
        f"{where}: method_set: expected a table of parameter tables per method, e.g. {{ ifca = {{ k = 5 }} }}",
    )
    quote = Quote(
        text,
        table["method"],
        metric,
        tuple(seeds),
        form,
        digits,
        claim=table.get("claim"),
        trace=table.get("trace"),
        sets=tuple(sorted(flat_sets(table.get("set", {})).items())),
        method_sets=tuple((m, tuple(sorted(flat_sets(s).items()))) for m, s in sorted(method_sets.items())),
        versus=table.get("versus"),
        unit=unit,
        at_rounds=at_rounds,
    )
    if quote.trace is not None:
        check_methods(quote, method_catalog.catalog(), f"{where}: trace {quote.trace!r}")
    return quote


def parse_rounds(table: dict[str, Any], where: str) -> tuple[int, int] | None:
    """The quote's ``at_rounds`` span (first and last round, both included), or None; no ``versus`` beside one."""
    if "at_rounds" not in table:
        return None
    span = table["at_rounds"]
    require(
        len(span) == 2 and all(isinstance(r, int) and not isinstance(r, bool) and r >= 0 for r in span) and span[0] <= span[1],
        f"{where}: at_rounds: expected the first and last round of the evaluations quoted, e.g. [3, 7], got {span!r}",
    )
    require("versus" not in table, f"{where}: versus: a quote at_rounds reads one method's evaluations")
    return span[0], span[1]


def check_methods(quote: Quote, known: Collection[str], where: str) -> None:
    """The quote's method and ``versus`` are among ``known`` (a claim's runs, or the catalogue's methods)."""
    for key, method in (("method", quote.method), ("versus", quote.versus)):
        if method is not None:
            require(
                method in known or (quote.trace is not None and method.startswith(FLOWER)),
                f"{where}: {key} {method!r}: unknown method; allowed: {', '.join(sorted(known))}",
            )


def check_quote_claims(claims: Sequence[Claim], shared: Mapping[str, Diagnosis], path: Path) -> None:
    """Each quote that names a claim names one of the file's, and methods among that claim's runs (``run_methods``)."""
    located = [(f"diagnoses.{name}: diagnosis", diagnosis) for name, diagnosis in shared.items()]
    located += [
        (f"claims[{index}] ({claim.id}): {at}", diagnosis)
        for index, claim in enumerate(claims)
        for at, diagnosis in (("diagnosis", claim.diagnosis), ("literal_diagnosis: diagnosis", claim.literal_diagnosis))
        if diagnosis is not None and shared.get(diagnosis.name) is not diagnosis
    ]
    by_id = {claim.id: claim for claim in claims}
    for at, diagnosis in located:
        for i, quote in enumerate(diagnosis.quotes):
            if quote.claim is not None:
                where = f"{path}: {at}: quotes[{i}]: claim {quote.claim!r}"
                require(quote.claim in by_id, f"{where}: unknown claim; the file's claims: {', '.join(by_id)}")
                check_methods(quote, by_id[quote.claim].run_methods, where)
