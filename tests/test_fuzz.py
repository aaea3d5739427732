"""Fuzzing: trace files, TOML/--set configuration, claim files and run records on arbitrary and mutated input.

Only driftbench's own errors come out, in one line naming the file (or the --set key) at fault.
"""

import io
import json
import shutil
import string
import tempfile
from pathlib import Path
from unittest import mock

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from driftbench.cli import main
from driftbench.config import parse_sets
from driftbench.errors import ConfigError, DriftbenchError, RecordError
from driftbench.methods import catalog as method_catalog
from driftbench.record.schema import ROUND_COLUMNS, read_rounds, read_summary
from driftbench.reproduce.claim_file import read_claim_file
from driftbench.reproduce.planning import plan
from driftbench.reproduce.report import read_report
from driftbench.reproduce.verdict import UNTESTABLE
from driftbench.runner import Execution
from driftbench.traces import catalog as trace_catalog
from driftbench.traces.io import load_trace, save_trace
from driftbench.traces.model import TraceBuilder

ROOT = Path(__file__).resolve().parents[1]
FUZZ = settings(max_examples=100, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
SHIPPED_TOML = sorted((ROOT / "traces").glob("*.toml")) + sorted((ROOT / "methods").glob("*.toml"))


def valid_trace_bytes() -> bytes:
    """A small valid trace file."""
    builder = TraceBuilder(num_clients=2, rounds=4, num_classes=3)
    builder.samples(0, train=[0, 1, 2], test=[3])
    builder.samples(1, train=[4, 5], test=[6, 7])
    builder.segment(0, 0, group=0)
    builder.segment(1, 0, group=1)
    builder.segment(1, 2, label_map=[2, 1, 0], group=0)
    builder.event(2, [1], "concept")
    trace = builder.build({"name": "fuzz", "generator": "hand"}, np.array([0, 1, 2, 0, 1, 2, 0, 1]))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzz.trace"
        save_trace(trace, path, {"train": {"lr": 0.1}})
        return path.read_bytes()


VALID_TRACE = valid_trace_bytes()
VALID_ARRAYS = dict(np.load(io.BytesIO(VALID_TRACE), allow_pickle=False))


def load_bytes(data: bytes) -> None:
    """Load ``data`` as a trace file; a successful load must still hold the saved content."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "x.trace"
        path.write_bytes(data)
        try:
            trace, _ = load_trace(path)
        except DriftbenchError:
            return
    assert trace.content_hash() == json.loads(VALID_ARRAYS["header"].tobytes())["hash"]


@FUZZ
@given(
    st.one_of(
        st.binary(max_size=600),
        st.binary(max_size=600).map(lambda b: b"PK\x03\x04" + b),
        st.binary(max_size=300).map(lambda b: b"\x93NUMPY\x01\x00" + b),
    )
)
def test_trace_loading_on_arbitrary_bytes(data):
    load_bytes(data)


@FUZZ
@given(
    st.lists(st.tuples(st.integers(0, len(VALID_TRACE) - 1), st.integers(0, 255)), min_size=1, max_size=8),
    st.integers(1, len(VALID_TRACE)),
)
def test_trace_loading_on_mutated_files(flips, keep):
    data = bytearray(VALID_TRACE)
    for position, value in flips:
        data[position] = value
    load_bytes(bytes(data[:keep]))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
arrays = st.sampled_from(["int64", "float32", "uint8", "bool", "<U3", "complex64"]).flatmap(
    lambda dtype: st.lists(st.integers(-3, 300), max_size=6).map(lambda v: np.array(v).astype(dtype))
)


@FUZZ
@given(
    st.dictionaries(st.sampled_from(["format", "info", "hash", "defaults", "extra"]), json_values)
    | json_values.map(lambda v: {"value": v}),
    st.dictionaries(st.sampled_from(sorted(VALID_ARRAYS)), arrays, max_size=3),
    st.booleans(),
)
def test_trace_loading_with_mutated_header_and_arrays(header_edit, array_edit, header_raw):
    header = json.loads(VALID_ARRAYS["header"].tobytes())
    header.update(header_edit)
    contents = {**VALID_ARRAYS, **array_edit}
    if header_raw or "header" not in array_edit:
        contents["header"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    buffer = io.BytesIO()
    np.savez(buffer, **contents)
    load_bytes(buffer.getvalue())


def parse_catalog_entry(text: bytes) -> None:
    """Parse ``text`` as a trace TOML (at every scale) and as a method TOML of a catalog folder.

    A method TOML that is refused is refused in one line naming the file (and the field at fault).
    """
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzzed.toml"
        path.write_bytes(text)
        loads = [(trace_catalog, trace_catalog.load_spec, scale) for scale in trace_catalog.SCALES]
        for module, load, *scale in [*loads, (method_catalog, method_catalog.load_method)]:
            with mock.patch.object(module, "CATALOG_DIR", Path(folder)):
                try:
                    load("fuzzed", *scale)
                except DriftbenchError as exc:
                    assert module is trace_catalog or (str(path) in str(exc) and "\n" not in str(exc)), str(exc)


@FUZZ
@given(st.binary(max_size=300) | st.text(alphabet=string.printable, max_size=300).map(str.encode))
def test_toml_parsing_on_arbitrary_input(text):
    parse_catalog_entry(text)


bare_keys = st.from_regex(r"[a-z_]{1,10}", fullmatch=True)
toml_values = st.recursive(
    st.integers().map(str)
    | st.floats().map(repr)
    | st.booleans().map(lambda b: str(b).lower())
    | st.text(max_size=10).map(json.dumps),
    lambda inner: (
        st.lists(inner, max_size=3).map(lambda v: f"[{', '.join(v)}]")
        | st.lists(st.tuples(bare_keys, inner), max_size=3).map(lambda kv: "{" + ", ".join(f"{k} = {v}" for k, v in kv) + "}")
    ),
    max_leaves=6,
)
line_edits = st.tuples(st.sampled_from(["value", "delete", "duplicate", "insert"]), st.integers(0, 60), toml_values, bare_keys)


@FUZZ
@given(st.sampled_from(SHIPPED_TOML), st.lists(line_edits, min_size=1, max_size=4))
def test_toml_parsing_on_mutated_shipped_files(path, edits):
    lines = path.read_text().splitlines()
    for action, index, value, key in edits:
        at = index % (len(lines) + 1)
        if action == "value" and at < len(lines) and " = " in lines[at]:
            lines[at] = f"{lines[at].split(' = ', 1)[0]} = {value}"
        elif action == "delete" and at < len(lines):
            del lines[at]
        elif action == "duplicate" and at < len(lines):
            lines.insert(at, lines[at])
        else:
            lines.insert(at, f"{key} = {value}" if index % 2 else f"[{key}]")
    parse_catalog_entry("\n".join(lines).encode())


set_keys = st.sampled_from(
    [
        "clients",
        "rounds",
        "fraction",
        "concepts",
        "train.lr",
        "train.participants",
        "train.dtype",
        "train.model",
        "params.seed",
        "source",
        "source.classes",
        "seed",
    ]
) | st.text(max_size=12)


@FUZZ
@given(st.dictionaries(set_keys, st.text(max_size=12), min_size=1, max_size=3))
def test_set_overrides_on_arbitrary_values(sets):
    spec = trace_catalog.load_spec("label-swap")
    try:
        trace_catalog.apply_sets(spec, sets)
    except DriftbenchError:
        pass
    try:
        method_catalog.load_method("static", sets)
    except DriftbenchError:
        pass


set_values = toml_values | st.text(max_size=12) | st.sampled_from(["[0, 2]", "[0,2", "{classes = 10}", "{", "[[1], 2]"])


@FUZZ
@given(st.lists(st.tuples(set_keys, set_values), min_size=1, max_size=3))
def test_set_overrides_as_typed_on_the_command_line(items):
    """``--set KEY=VALUE`` as typed, TOML arrays and tables included: applied, or one line naming a key given."""
    typed = [f"{key}={value}" for key, value in items]
    try:
        trace_catalog.apply_sets(trace_catalog.load_spec("rotation"), parse_sets(typed))
    except DriftbenchError as exc:
        named = [item.partition("=")[0].strip().rpartition(".")[2] for item in typed] + [repr(item) for item in typed]
        assert any(name in str(exc) for name in named) and "\n" not in str(exc), str(exc)


def test_set_takes_toml_arrays_and_tables_as_claim_files_write_them():
    assert parse_sets(["quarter_turns=[0, 2]"]) == parse_sets(["quarter_turns=0,2"]) == {"quarter_turns": "0,2"}
    spec = trace_catalog.apply_sets(trace_catalog.load_spec("rotation"), parse_sets(["quarter_turns=[0,2]"]))
    assert spec.params.quarter_turns == (0, 2)
    assert parse_sets(["source={classes = 10, noise = 0.5}"]) == {"source.classes": "10", "source.noise": "0.5"}
    with pytest.raises(ConfigError, match=r"^--set quarter_turns: '\[0,' is not a TOML array or inline table \(.*\); write"):
        parse_sets(["quarter_turns=[0,"])


CLAIM_FIELDS = {  # a valid claim on static, field by field as TOML text; the fuzz below rewrites them
    "id": '"a"',
    "where": '"Table 1"',
    "claim": '"the oracle ends above FedAvg"',
    "trace": '"static"',
    "set": '{ clients = 6, rounds = 4, "train.participants" = 3 }',
    "methods": '["oracle", "fedavg"]',
    "metric": '"final_accuracy"',
    "direction": '"oracle > fedavg"',
    "paper_figure": '"0.9 vs 0.6"',
    "kind": '"exact"',
    "unit": '"points"',
    "paper_value": "10",
    "premises": '["pre_drift_accuracy: oracle = fedavg within 0.03", "none degenerate"]',
    "method_set": "{ fedavg = { mu = 0.1 } }",
    "diagnosis": '"shared"',
}
CLAIM_VALUES = [  # values a claim file's author gets wrong in any field
    '"nope"',
    '["oracle", "oracle"]',
    '"oracle >> fedavg"',
    '"oracle = fedavg within 0"',
    '"decreasing"',
    '["final_accuracy: increasing"]',
    '["oracle > fedavg"]',
    "{ fraction = 0 }",
    "{}",
]
SCENARIOS = [  # edits that keep a claim readable, for the planning to judge: unknown names, premises, twins
    *(
        {"metric": '"delta_permille_stable"', "twin": twin}
        for twin in ["{ fraction = 0 }", "{ clients = 6 }", "{ colour = 1 }", "{}"]
    ),
    {"methods": '["oracle", "nope"]', "direction": '"oracle > nope"'},
    {"methods": '["flower:Nope", "fedavg"]', "direction": '"flower:Nope > fedavg"'},
    {"trace": '"nope"'},
    {"set": "{ colour = 1 }"},
    {"set": '{ clients = 2, "train.participants" = 3 }'},
    {"method_set": "{ fedavg = { kk = 1 } }"},
    {"method_set": "{ nope = { k = 1 } }"},
    {"premises": '["final_accuracy: ifca > fedavg by 0.1"]'},
    {"premises": '["nope: oracle > fedavg"]'},
    {"metric": '"tta_speedup"', "target": '"nope"'},
    {"metric": '"tta_speedup"', "target": '"fedavg"', "unit": '"x"'},
    {"kind": '"bound"', "bound": '"at_least"'},
    {"kind": '"driftbench"'},
    {"calibrated_to": '{ method = "nope", paper = 38.3, ours = 39.1, seeds = [10] }'},
]
field_edits = st.tuples(
    st.sampled_from([*CLAIM_FIELDS, "twin", "bound", "target", "difference", "calibrated_to", "effect", "extra"]),
    st.none() | toml_values | st.sampled_from(CLAIM_VALUES),  # None: delete the field
).map(lambda edit: {edit[0]: edit[1]})
claim_edits = st.lists(st.tuples(st.integers(0, 1), field_edits | st.sampled_from(SCENARIOS)), min_size=1, max_size=3)


def claim_file_text(edits: list[tuple[int, dict[str, str | None]]]) -> str:
    """A claim file of two claims (``CLAIM_FIELDS``, ids a and b) with ``edits`` applied and a shared diagnosis."""
    claims = [dict(CLAIM_FIELDS), {**CLAIM_FIELDS, "id": '"b"', "metric": '"peak_accuracy"'}]
    for index, fields in edits:
        for key, value in fields.items():
            if value is None:
                claims[index].pop(key, None)
            else:
                claims[index][key] = value
    tables = "".join("[[claims]]\n" + "".join(f"{k} = {v}\n" for k, v in claim.items()) for claim in claims)
    diagnosis = '[diagnoses.shared]\nkind = "method"\ncommand = "driftbench run --trace static"\nevidence = "0.5 at seed 1"\n'
    return f'paper = "A paper"\n{diagnosis}{tables}'


@FUZZ
@given(claim_edits)
def test_claim_files_with_wrong_types_names_premises_and_twins(edits):
    """A mutated claim file is refused in one line naming the file and claim, or planned, untestable claims with a reason."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "paper.toml"
        path.write_text(claim_file_text(edits))
        try:
            claims = read_claim_file(path)
        except DriftbenchError as exc:
            assert str(exc).startswith(f"{path}: ") and "\n" not in str(exc), str(exc)
            return
        planned = plan(claims, (0,), "embedded", Execution(out=Path(folder)))
    assert all(reason and "\n" not in reason for reason in planned.untestable.values())
    assert len(planned.untestable) + len({c.key for c in claims} - set(planned.untestable)) == len(claims)


@pytest.mark.parametrize(
    "fields,refused",
    [
        ({"metric": '"delta_permille_stable"', "twin": "{ clients = 6 }"}, "claims[0] (a): twin {'clients': 6}: changes nothing"),
        ({"metric": '"delta_permille_stable"', "twin": "{}"}, "claims[0] (a): twin {}: changes nothing in the claim's set"),
        ({"premises": '["nope: oracle > fedavg"]'}, "claims[0] (a): premises[0]: metric 'nope': allowed: final_accuracy"),
        ({"methods": '"oracle"'}, "claims[0] (a): methods must be an array, got 'oracle'"),
    ],
)
def test_claim_file_errors_name_the_file_claim_and_field(tmp_path, fields, refused):
    path = tmp_path / "paper.toml"
    path.write_text(claim_file_text([(0, fields)]))
    with pytest.raises(ConfigError) as error:
        read_claim_file(path)
    assert str(error.value).startswith(f"{path}: {refused}")


@pytest.mark.parametrize(
    "fields,reason",
    [
        ({"metric": '"delta_permille_stable"', "twin": "{ colour = 1 }"}, "no-drift twin: --set colour: unknown key for trace"),
        ({"methods": '["oracle", "nope"]', "direction": '"oracle > nope"'}, "method 'nope' is not in methods/"),
        ({"method_set": "{ fedavg = { kk = 1 } }"}, "--set method (fedavg): unknown key 'kk'"),
    ],
)
def test_claims_that_cannot_run_are_planned_untestable_with_the_reason(tmp_path, fields, reason):
    path = tmp_path / "paper.toml"
    path.write_text(claim_file_text([(0, fields)]))
    planned = plan(read_claim_file(path), (0,), "embedded", Execution(out=tmp_path))
    assert set(planned.untestable) == {"paper/a"} and planned.untestable["paper/a"].startswith(reason)


RECORD_SET = 'clients = 6, rounds = 4, "train.participants" = 3, "train.local_steps" = 1'
RECORD_CLAIMS = "".join(  # two claims in two settings: four runs at seed 0
    f'[[claims]]\nid = "{claim}"\nwhere = "Table 1"\nclaim = "c"\ntrace = "static"\nset = {{ {RECORD_SET}{extra} }}\n'
    f'methods = ["oracle", "fedavg"]\nmetric = "{metric}"\ndirection = "oracle > fedavg"\npaper_figure = "1"\n'
    'kind = "exact"\nunit = "points"\npaper_value = 10\n'
    for claim, metric, extra in [("final", "final_accuracy", ""), ("peak", "peak_accuracy", ', "train.lr" = 0.2')]
)
PEAK_SETS = ["clients=6", "rounds=4", "train.local_steps=1", "train.lr=0.2", "train.participants=3"]
PEAK = f"static+{','.join(PEAK_SETS)}/static/oracle/seed0"  # the oracle's run of the second claim


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A report of two claims whose runs are recorded under runs/: its folder and the command that wrote it."""
    root = tmp_path_factory.mktemp("recorded")
    (root / "claims").mkdir()
    (root / "claims/paper.toml").write_text(f'paper = "A paper"\n{RECORD_CLAIMS}')
    args = ["reproduce", "--claims", str(root / "claims"), "--seeds", "0", "--jobs", "2", "--device", "cpu", "--quiet"]
    args += ["--out", str(root / "runs"), "--report", str(root / "report")]
    assert main(args) == 0
    return root, args


def damage(path: Path, kind: str, value) -> None:
    """Damage a record file: ``truncate`` it to a fraction ``value`` of its bytes, ``drop`` its CSV column ``value``, or
    set its JSON ``field`` ``value[0]`` to ``value[1]``.
    """
    if kind == "truncate":
        data = path.read_bytes()
        path.write_bytes(data[: int(len(data) * value)])
    elif kind == "drop":
        pd.read_csv(path).drop(columns=value).to_csv(path, index=False)
    else:
        path.write_text(json.dumps({**json.loads(path.read_text()), value[0]: value[1]}))


SUMMARY_FIELDS = ["final_accuracy", "seed", "recovery", "overhead", "scorecard", "status", "time_to_accuracy", "events"]
damages = (
    st.tuples(st.just("truncate"), st.sampled_from(["summary.json", "rounds.csv"]), st.floats(0, 0.999))
    | st.tuples(st.just("drop"), st.just("rounds.csv"), st.sampled_from(ROUND_COLUMNS))
    | st.tuples(st.just("field"), st.just("summary.json"), st.tuples(st.sampled_from(SUMMARY_FIELDS), json_values))
)


@FUZZ
@given(damages)
def test_damaged_run_records_are_refused_naming_the_file_and_field(recorded, damaged):
    """A truncated summary.json or rounds.csv, a rounds.csv without a column, a summary field set to another value: read as
    a kept run's record is (``Recorder.stored_summary``), each is refused in one line naming the file and field, or reads.
    """
    kind, name, value = damaged
    with tempfile.TemporaryDirectory() as folder:
        run = Path(folder) / "run"
        shutil.copytree(recorded[0] / "runs" / PEAK, run)
        data = (run / name).read_bytes()  # a table cut at the end of a line is whole rows, only fewer: not this test's case
        assume(kind != "truncate" or name != "rounds.csv" or not data[: int(len(data) * value)].endswith(b"\n"))
        damage(run / name, kind, value)
        try:
            read_summary(run / "summary.json")
            read_rounds(run / "rounds.csv")
        except RecordError as exc:
            assert str(exc).startswith(f"{run / name}: ") and "\n" not in str(exc), str(exc)
            assert kind != "drop" or f"missing [{value!r}]" in str(exc)
            assert kind != "field" or f": {value[0]}" in str(exc) or f"missing [{value[0]!r}]" in str(exc)
            return
    assert kind == "field", "a damaged record read as a whole one"


@pytest.mark.parametrize(
    "kind,name,value,named",
    [("truncate", "summary.json", 0.5, "unreadable run record"), ("drop", "rounds.csv", "accuracy_mean", "'accuracy_mean'")],
)
def test_a_report_on_recorded_runs_judges_the_others_and_names_the_damaged_one(recorded, capsys, kind, name, value, named):
    root, args = recorded
    whole = {row["id"]: row for row in read_report(root / "report/reproduce.csv")}
    path = root / "runs" / PEAK / name
    kept = path.read_bytes()
    try:
        damage(path, kind, value)
        assert main([*args, "--recorded"]) == 0
        rows = {row["id"]: row for row in read_report(root / "report/reproduce.csv")}
        judged = ("driftbench", "ours", "verdict")  # the same figures (Holm's family is one claim smaller)
        assert [rows["final"][k] for k in judged] == [whole["final"][k] for k in judged]
        assert rows["final"]["verdict"] != UNTESTABLE
        assert rows["peak"]["verdict"] == UNTESTABLE
        assert f"failed: RecordError: {path}: " in rows["peak"]["reason"] and named in rows["peak"]["reason"]
        capsys.readouterr()
        sets = [arg for pair in PEAK_SETS for arg in ("--set", pair)]
        command = ["run", "--trace", "static", "--method", "oracle", *sets, "--device", "cpu", "--quiet", "--resume"]
        assert main([*command, "--out", str(root / "runs" / PEAK.split("/")[0])]) == 2  # the run alone: bad input
        err = capsys.readouterr().err
        assert err.startswith(f"error: {path}: ") and named in err and err.count("\n") == 1, err
    finally:
        path.write_bytes(kept)
