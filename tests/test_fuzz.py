"""Fuzzing: trace files and TOML/--set configuration on arbitrary and mutated input raise only driftbench's own errors."""

import io
import json
import string
import tempfile
from pathlib import Path
from unittest import mock

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from driftbench.errors import DriftbenchError
from driftbench.methods import catalog as method_catalog
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
    """Parse ``text`` as a trace TOML (at every scale) and as a method TOML of a catalog folder."""
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "fuzzed.toml").write_bytes(text)
        loads = [(trace_catalog, trace_catalog.load_spec, scale) for scale in trace_catalog.SCALES]
        for module, load, *scale in [*loads, (method_catalog, method_catalog.load_method)]:
            with mock.patch.object(module, "CATALOG_DIR", Path(folder)):
                try:
                    load("fuzzed", *scale)
                except DriftbenchError:
                    pass


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
