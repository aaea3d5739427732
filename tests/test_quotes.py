"""Diagnoses' quotes: each is checked when its claim file is read, written in its form, and compared with the report's
runs, from a runs folder or an archive alike; every mismatch is one line naming the diagnosis and what the runs give."""

from dataclasses import replace
from pathlib import Path

import pytest

from driftbench.errors import ConfigError
from driftbench.pages.archived import archive_path
from driftbench.record.archive import is_archive
from driftbench.record.archive_write import write_archive
from driftbench.record.files import run_dir, write_json
from driftbench.record.schema import RoundRow, write_events, write_rounds, write_summary
from driftbench.reproduce.claim_file import claim_files, load_claims, read_claim_file
from driftbench.reproduce.planning import Setting
from driftbench.reproduce.quote import gives, holds, numbers, written
from driftbench.reproduce.quotes import quote_mismatches
from tests.test_reproduce import BASE

CLAIM = (
    '[[claims]]\nid = "c"\nwhere = "Table 1"\nclaim = "a claim"\ntrace = "static"\nset = {{ rounds = 4 }}\n'
    'methods = ["cflgt", "ifca"]\nmetric = "final_accuracy"\ndirection = "cflgt > ifca"\npaper_figure = "1 vs 2"\n'
    'kind = "exact"\nunit = "points"\npaper_value = 10\nmethod_set = {{ ifca = {{ k = 5 }} }}\ndiagnosis = "merges"\n\n'
    '[diagnoses.merges]\nkind = "method"\ncommand = "driftbench reproduce paper"\nevidence = """{evidence}"""\n'
    "quotes = [\n{quotes}]\n"
)
EVIDENCE = "CFLGT ends at 0.743, 0.918, 0.862 (ARI 1.0 at every seed), 1.1 points above IFCA on average."
QUOTES = [
    'text = "0.743, 0.918, 0.862", claim = "c", method = "cflgt", metric = "final_accuracy", form = "each"',
    'text = "ARI 1.0 at every seed", claim = "c", method = "cflgt", metric = "ari_final", form = "range", digits = 1',
    'text = "1.1 points above IFCA", claim = "c", method = "cflgt", versus = "ifca", unit = "points", '
    'metric = "final_accuracy", form = "mean", digits = 1',
]
CFLGT, IFCA = [0.7431, 0.9180, 0.8615], [0.7330, 0.9071, 0.8505]  # IFCA 1.1 points below on average


def claim_text(evidence: str = EVIDENCE, quotes: list[str] = QUOTES) -> str:
    """The claim file: one claim, and the diagnosis it names with these quotes (seeds 0-2, 3 digits unless given)."""
    tables = [f"    {{ {q}, seeds = [0, 1, 2]{'' if 'digits' in q else ', digits = 3'} }},\n" for q in quotes]
    return 'paper = "A paper"\n' + CLAIM.format(evidence=evidence, quotes="".join(tables))


def claims(tmp_path: Path, evidence: str = EVIDENCE, quotes: list[str] = QUOTES):
    """The claims of the file ``paper.toml`` in ``tmp_path`` with these quotes."""
    path = tmp_path / "claims" / "paper.toml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(claim_text(evidence, quotes))
    return read_claim_file(path)


@pytest.fixture
def runs(tmp_path):
    """The claim's runs as reproduce places them (IFCA's with its k = 5 in a folder of its own), seeds 0-2."""
    (claim,) = claims(tmp_path)
    root = tmp_path / "runs"
    for method, accuracies in (("cflgt", CFLGT), ("ifca", IFCA)):
        for seed, accuracy in enumerate(accuracies):
            folder = run_dir(Setting.of(claim, "embedded").run_folder(root, claim.method_run(method)), "static", method, seed)
            folder.mkdir(parents=True)
            write_json(
                folder / "config.json", {"trace": {"name": "static", "hash": "0" * 64}, "method": {"name": method}, "seed": seed}
            )
            summary = replace(BASE, method=method, seed=seed, final_accuracy=accuracy, ari_final=1.0, run_dir=str(folder))
            write_summary(folder / "summary.json", summary)
            dip = accuracy - 0.1  # round 2's evaluation: a dip between rounds 0 and 4
            rows = [RoundRow(r, 1.0, 0.0, a, a, a, 0, 1.0, 5, 0, 0, 0, 0) for r, a in ((0, accuracy), (2, dip), (4, accuracy))]
            write_rounds(folder / "rounds.csv", rows)
            write_events(folder / "events.csv", method, [])
    return root


@pytest.mark.parametrize(
    ("values", "form", "digits", "expected"),
    [
        ([0.7431, 0.918, 0.8615], "each", 3, "0.743, 0.918, 0.862"),
        ([0.7431, 0.918, 0.8615], "range", 3, "0.743-0.918"),
        ([0.9996, 1.0, 1.0], "range", 1, "1.0"),  # one value where the seeds agree at these digits
        ([18, 20, 17], "range", 0, "17-20"),
        ([0.011, 0.012, 0.0], "mean", 3, "0.008"),
        ([0.6, -1.2, 0.1], "min", 1, "-1.2"),
        ([0.6, -1.2, 0.1], "max", 1, "0.6"),
        ([-0.0004, 0.0001], "mean", 2, "0.00"),  # no negative zero
        ([0.7431, 0.918, 0.8615], "mean-sd", 3, "0.841 +/- 0.089"),  # the sample std, as the report's rows
    ],
)
def test_the_forms_write_the_values_as_documented(values, form, digits, expected):
    assert written(values, form, digits) == expected


def test_a_text_is_held_by_the_evidence_with_its_end_numbers_whole():
    assert holds("ari_final 0.94-1.00 (seeds 0-4)", "0.94-1.00") and holds("+2.4 points", "2.4")
    assert not holds("ari_final 0.94-1.00", "1.00")  # the top of a range
    assert not holds("0.743, 0.918", "0.74") and not holds("20.5 points", "0.5") and not holds("-2.4", "2.4")
    assert holds("scenario 2: ARI 1.0, 0.83", ": ARI 1.0,")  # a text's ends that are no number may touch one


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("IFCA(20) 16-19 clusters", ["20", "16", "19"]),  # a range's hyphen is no sign
        ("-1.2--0.5 and (-0.048 to -0.051)", ["-1.2", "-0.5", "-0.048", "-0.051"]),
        ("+2.4 points, 1e-3, CIFAR-10 at seeds 0-4.", ["2.4", "1e-3", "10", "0", "4"]),
    ],
)
def test_a_texts_numbers_are_its_maximal_numeric_runs(text, expected):
    assert numbers(text) == expected


def test_a_value_matching_only_a_number_beside_the_quoted_one_is_not_quoted():
    assert gives("16-19 clusters", "16-19") and gives("+2.4 points on average", "2.4") and gives("0.743, 0.918", "0.743, 0.918")
    assert not gives("IFCA(20) 16-19 clusters", "20") and not gives("IFCA(20) 16-19 clusters", "16-19")
    assert not gives("4 clusters at seeds 2 and 4", "2") and not gives("ARI 1.0 at seeds 0, 3, 4", "0")
    assert not gives("16-19 clusters", "16") and not gives("0.743, 0.918", "0.918, 0.743")


def test_the_runs_check_every_number_of_a_text_not_any(tmp_path, runs):
    (claim,) = claims(tmp_path)
    labelled = replace(claim.diagnosis.quotes[1], text="IFCA(10) at 12 rounds", metric="rounds", digits=0)  # the runs: 10
    read = [replace(claim, diagnosis=replace(claim.diagnosis, quotes=(labelled,)))]
    assert quote_mismatches("paper", read, runs) == [
        "paper: diagnosis merges: 'IFCA(10) at 12 rounds' (rounds of cflgt, range at seeds 0, 1, 2 in claim c's runs): "
        "the runs give 10"
    ]


def test_the_quotes_that_match_the_runs_pass_from_the_folder_and_its_archive(tmp_path, runs):
    read = claims(tmp_path)
    assert [q.text for q in read[0].diagnosis.quotes] == ["0.743, 0.918, 0.862", "ARI 1.0 at every seed", "1.1 points above IFCA"]
    assert quote_mismatches("paper", read, runs) == []
    archive = write_archive(runs, tmp_path / "archive").path
    assert quote_mismatches("paper", read, archive) == []
    with pytest.raises(ConfigError, match="unknown paper 'other': none of the claims given is its"):
        quote_mismatches("other", read, archive)


ROUND_QUOTES = [
    'text = "dips to 0.643, 0.818 and 0.762 at", claim = "c", method = "cflgt", metric = "accuracy_mean", '
    'at_rounds = [1, 3], form = "each"',
    'text = "between 0.643-0.918", claim = "c", method = "cflgt", metric = "accuracy_mean", at_rounds = [0, 4], form = "range"',
]
ROUND_EVIDENCE = EVIDENCE + " It dips to 0.643, 0.818 and 0.762 at round 2, between 0.643-0.918 over the run."
BASE_QUOTE, ROUND_QUOTE = (QUOTES[0], EVIDENCE), (ROUND_QUOTES[0], ROUND_EVIDENCE)  # a quote to break, in its evidence


def test_a_quote_at_rounds_reads_each_seeds_evaluations_there_from_the_folder_and_its_archive(tmp_path, runs):
    read = claims(tmp_path, ROUND_EVIDENCE, ROUND_QUOTES)
    archive = write_archive(runs, tmp_path / "archive").path
    assert quote_mismatches("paper", read, runs) == [] and quote_mismatches("paper", read, archive) == []
    edited = claims(tmp_path, ROUND_EVIDENCE.replace("0.762", "0.761"), [ROUND_QUOTES[0].replace("0.762", "0.761")])
    assert quote_mismatches("paper", edited, archive) == [
        "paper: diagnosis merges: 'dips to 0.643, 0.818 and 0.761 at' (accuracy_mean at rounds 1-3 of cflgt, each at "
        "seeds 0, 1, 2 in claim c's runs): the runs give 0.643, 0.818, 0.762"
    ]
    late = claims(tmp_path, ROUND_EVIDENCE, [ROUND_QUOTES[0].replace("[1, 3]", "[5, 9]")])
    (line,) = quote_mismatches("paper", late, archive)
    assert line.endswith("run static+rounds=4/static/cflgt/seed0 has no accuracy_mean at rounds 5-9")


def test_an_edited_number_is_a_mismatch_naming_the_diagnosis_and_what_the_runs_give(tmp_path, runs):
    edited = [QUOTES[0].replace("0.862", "0.861"), QUOTES[1], QUOTES[2].replace("1.1", "1.2")]
    read = claims(tmp_path, EVIDENCE.replace("0.862", "0.861").replace("1.1", "1.2"), edited)
    assert quote_mismatches("paper", read, runs) == [
        "paper: diagnosis merges: '0.743, 0.918, 0.861' (final_accuracy of cflgt, each at seeds 0, 1, 2 in claim c's runs): "
        "the runs give 0.743, 0.918, 0.862",
        "paper: diagnosis merges: '1.2 points above IFCA' (final_accuracy of cflgt less ifca in points, mean at seeds 0, 1, 2 "
        "in claim c's runs): the runs give 1.1",
    ]


def test_a_quote_whose_runs_are_missing_is_a_mismatch(tmp_path, runs):
    trace = QUOTES[2].replace('claim = "c"', 'trace = "static", set = { rounds = 4 }')
    read = claims(tmp_path, quotes=[trace])  # the trace's IFCA without the claim's k = 5: never run
    archive = write_archive(runs, tmp_path / "archive").path
    for source, kind in ((runs, "runs folder"), (archive, "archive")):
        (line,) = quote_mismatches("paper", read, source)
        assert line.startswith("paper: diagnosis merges: '1.1 points above IFCA' (final_accuracy of cflgt less ifca")
        assert line.endswith(f"run static+rounds=4/static/ifca/seed0 is not in the {kind} {source}")
    at_k5 = trace.replace("set = { rounds = 4 }", "set = { rounds = 4 }, method_set = { ifca = { k = 5 } }")
    assert quote_mismatches("paper", claims(tmp_path, quotes=[at_k5]), archive) == []


@pytest.mark.parametrize(
    ("change", "message", "quote", "evidence"),
    [
        (
            ("0.743, 0.918, 0.862", "0.743, 0.918, 0.86"),
            "quotes[0]: text '0.743, 0.918, 0.86': not in the evidence verbatim (its numbers whole)",
            *BASE_QUOTE,
        ),
        (('claim = "c"', 'claim = "d"'), "quotes[0]: claim 'd': unknown claim; the file's claims: c", *BASE_QUOTE),
        (
            ('method = "cflgt"', 'method = "flhc"'),
            "quotes[0]: claim 'c': method 'flhc': unknown method; allowed: cflgt, ifca",
            *BASE_QUOTE,
        ),
        (
            ('metric = "final_accuracy"', 'metric = "accuracy"'),
            "quotes[0]: metric 'accuracy': allowed: final_accuracy,",
            *BASE_QUOTE,
        ),
        (
            ('form = "each"', 'form = "list"'),
            "quotes[0]: form 'list': allowed: each, range, mean-sd, mean, min, max",
            *BASE_QUOTE,
        ),
        (('claim = "c"', 'claim = "c", trace = "static"'), "quotes[0]: a quote names the claim whose setting", *BASE_QUOTE),
        (('form = "each"', 'form = "each", colour = 1'), "quotes[0]: unknown key 'colour'", *BASE_QUOTE),
        (
            ("[1, 3]", "[3, 1]"),
            "quotes[0]: at_rounds: expected the first and last round of the evaluations quoted, e.g. [3, 7], got [3, 1]",
            *ROUND_QUOTE,
        ),
        (
            ('method = "cflgt"', 'method = "cflgt", versus = "ifca"'),
            "quotes[0]: versus: a quote at_rounds reads one method's",
            *ROUND_QUOTE,
        ),
        (
            ('"accuracy_mean"', '"final_accuracy"'),
            "quotes[0]: metric 'final_accuracy': allowed with at_rounds (rounds.csv): ",
            *ROUND_QUOTE,
        ),
    ],
)
def test_a_bad_quote_is_refused_at_load_naming_the_file_diagnosis_and_field(tmp_path, change, message, quote, evidence):
    with pytest.raises(ConfigError) as error:
        claims(tmp_path, evidence, [quote.replace(*change)])
    assert str(error.value).startswith(f"{tmp_path / 'claims' / 'paper.toml'}: diagnoses.merges: diagnosis: {message}")


@pytest.mark.parametrize(
    ("text", "quote", "numbers"),
    [
        ("0.743, 0.918, 0.862 at seeds 0-2", QUOTES[0], "0.743, 0.918, 0.862, 0, 2"),  # a label number beside the value
        ("ARI 1.00 at every seed", QUOTES[1], "1.00"),  # 2 decimals where digits = 1
        ("0.918-0.743", QUOTES[0].replace('form = "each"', 'form = "range"'), "0.918, 0.743"),  # a range descending
        ("0.841 at seeds", QUOTES[0].replace('form = "each"', 'form = "mean-sd"'), "0.841"),  # a mean without its std
    ],
)
def test_a_text_whose_numbers_its_form_cannot_write_is_refused_at_load(tmp_path, text, quote, numbers):
    old = quote.split('"')[1]
    with pytest.raises(ConfigError) as error:
        claims(tmp_path, EVIDENCE.replace(old, text), [quote.replace(old, text)])
    form = quote.split('form = "')[1].split('"')[0]
    assert str(error.value) == (
        f"{tmp_path / 'claims' / 'paper.toml'}: diagnoses.merges: diagnosis: quotes[0]: text {text!r}: its numbers "
        f"{numbers} are not what form {form!r} writes for 3 seeds with {1 if 'digits' in quote else 3} decimals; a text "
        "holds the quoted numbers and words, no other number"
    )


def test_a_claims_own_diagnosis_may_quote_too_and_is_named_by_its_claim(tmp_path):
    text = claim_text().replace('diagnosis = "merges"\n\n[diagnoses.merges]', "\n[claims.diagnosis]")
    path = tmp_path / "paper.toml"
    path.write_text(text)
    (claim,) = read_claim_file(path)
    assert claim.diagnosis.name == "c" and len(claim.diagnosis.quotes) == 3
    path.write_text(text.replace('method = "cflgt"', 'method = "flhc"', 1))
    with pytest.raises(ConfigError, match=r"claims\[0\] \(c\): diagnosis: quotes\[0\]: claim 'c': method 'flhc': unknown method"):
        read_claim_file(path)


ROOT = Path(__file__).resolve().parents[1]
ARCHIVED = [p for p in claim_files(ROOT / "claims") if is_archive(ROOT / archive_path(p))]  # complete reports only


def test_the_bundled_archives_are_found():
    assert "cflgt" in ARCHIVED


@pytest.mark.parametrize("paper", ARCHIVED)
def test_the_bundled_diagnoses_quote_what_their_reports_archive_holds(paper):
    assert quote_mismatches(paper, load_claims(papers=[paper]), ROOT / archive_path(paper)) == []
