"""Bad input through the CLI: one line ``error: ...`` naming the thing and what is allowed, exit status 2."""

import json
import re

import numpy as np
import pytest

from driftbench.cli import main
from driftbench.methods import catalog as method_catalog
from driftbench.traces import catalog as trace_catalog

TINY = [
    "--set",
    "clients=6",
    "--set",
    "rounds=4",
    "--set",
    "drift_every=2",
    "--set",
    "train_samples=10",
    "--set",
    "test_samples=5",
    "--set",
    "train.participants=3",
    "--set",
    "train.local_steps=1",
]


def fails(args, capsys, code=2):
    """Run the CLI; check the exit status and that stderr is one ``error:`` line; return that line."""
    assert main(args) == code
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    return err.strip()


@pytest.mark.parametrize(
    "args,message",
    [
        (["trace", "show", "label-swp"], "unknown trace 'label-swp' (did you mean 'label-swap'?); valid: "),
        (
            ["run", "--trace", "label-swap", "--method", "fedavg,statc"],
            "unknown method 'statc' (did you mean 'static'?); valid: ",
        ),
        (["trace", "show", "label-swap", "--set", "source=digit"], "unknown source 'digit' (did you mean 'digits'?); valid: "),
        (
            ["trace", "show", "label-swap", "--set", "colour=red"],
            "--set colour: unknown key for trace 'label-swap'; trace parameters: ",
        ),
        (["trace", "show", "label-swap", "--set", "train.lr=fast"], "--set train: lr: expected float, got 'fast'"),
        (["trace", "show", "label-swap", "--set", "clients=ten"], "--set (label-swap): clients: expected int, got 'ten'"),
        (
            ["trace", "show", "rotation", "--set", "quarter_turns=[0,"],
            "--set quarter_turns: '[0,' is not a TOML array or inline table",
        ),
        (["trace", "show", "label-swap", "--set", "train.momentum=yes please"], "momentum: expected float"),
        (
            ["run", "--trace", "label-swap", "--method", "static", "--set", "method.k_min=two"],
            "--set method (static): k_min: expected int, got 'two'",
        ),
        (
            ["run", "--trace", "label-swap", "--method", "fedavg", "--set", "method.speed=3"],
            "--set method.speed: no selected method has this parameter (fedavg: aggregator, aggregator_options, mu)",
        ),
        (["run", "--trace", "label-swap", "--rounds", "-5"], "rounds must be >= 1, got -5"),
        (["trace", "show", "label-swap", "--set", "fraction=1.5"], "fraction must be in [0, 1], got 1.5"),
        (["trace", "show", "label-swap", "--set", "fraction=-0.1"], "fraction must be in [0, 1], got -0.1"),
        (
            ["run", "--trace", "label-swap", "--set", "clients=10", "--set", "train.participants=11"],
            "train.participants must be <= the trace's 10 clients, got 11",
        ),
        (["run", "--trace", "label-swap", "--checkpoint-every", "-1"], "--checkpoint-every must be >= 0"),
        (["run", "--trace", "label-swap", "--method", "fedprox", "--set", "method.mu=-1"], "mu must be >= 0, got -1.0"),
        (["run", "--trace", "label-swap", "--set", "precision=fp16"], "precision must be one of fp32, tf32, bf16, got 'fp16'"),
        (
            ["run", "--trace", "label-swap", "--set", "train.dtype=float64", "--set", "precision=bf16"],
            "precision 'bf16' applies to float32 models; dtype 'float64' needs precision 'fp32'",
        ),
    ],
)
def test_unknown_names_keys_types_and_ranges(args, message, capsys, tmp_path):
    line = fails([*args, "--out", str(tmp_path), "--quiet"] if args[0] == "run" else args, capsys)
    assert message in line
    assert not list(tmp_path.rglob("config.json"))  # refused before any run started


@pytest.mark.parametrize(
    "folder,text,message",
    [
        ("traces", 'generator = "static"\n[params\nclients = 3\n', r"broken.toml: invalid TOML: .*line 2"),
        ("traces", 'generator = "static"\nmethods = "fedavg"\n', r"broken.toml: methods must be an array, got 'fedavg'"),
        ("traces", 'generator = "static"\n[source]\nname = "digits"\nsize = 3\n', r"broken.toml \[source\]: unknown key 'size'"),
        ("traces", b'generator = "\xff"\n', r"broken.toml: invalid TOML: not UTF-8"),
        ("methods", 'class = "fedavg"\n[params]\nmu = "a lot"\n', r"broken.toml \[params\]: mu: expected float, got 'a lot'"),
        ("methods", "class = 3\n", r"broken.toml: class must be a string, got 3"),
        ("methods", 'class = "fedavg"\nparams = 1\n', r"broken.toml: params must be a table, got 1"),
        (
            "methods",
            'class = "fedavg"\n[params]\nmuu = 0.1\n',
            r"broken.toml \[params\]: unknown key 'muu'; allowed: aggregator, aggregator_options, mu",
        ),
    ],
)
def test_malformed_catalog_toml_names_file_line_and_key(folder, text, message, capsys, tmp_path, monkeypatch):
    (tmp_path / "broken.toml").write_bytes(text if isinstance(text, bytes) else text.encode())
    if folder == "traces":
        monkeypatch.setattr(trace_catalog, "CATALOG_DIR", tmp_path)
        args = ["trace", "show", "broken"]
    else:
        monkeypatch.setattr(method_catalog, "CATALOG_DIR", tmp_path)
        args = ["run", "--trace", "label-swap", "--method", "broken", "--out", str(tmp_path / "runs"), "--quiet"]
    assert re.search(message, fails(args, capsys))


@pytest.fixture(scope="module")
def trace_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("trace") / "tiny.trace"
    assert main(["trace", "make", "label-swap", "--out", str(path), *TINY]) == 0
    return path


def rewrite(source, target, edit):
    """Copy the npz trace ``source`` to ``target`` after ``edit(arrays, header)``."""
    arrays = dict(np.load(source, allow_pickle=False))
    header = json.loads(arrays["header"].tobytes())
    edit(arrays, header)
    arrays["header"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    with open(target, "wb") as fh:
        np.savez(fh, **arrays)
    return target


@pytest.mark.parametrize(
    "damage,message",
    [
        ("truncated", r"bad.trace: not a readable trace file"),
        ("corrupted", r"bad.trace: (not a readable trace file|content hash mismatch)"),
        ("newer", r"bad.trace: trace format 2; this driftbench reads format 1"),
        ("edited", r"bad.trace: content hash mismatch \(file corrupted or edited\)"),
        ("not a trace", r"bad.trace: no header; not a driftbench trace file"),
    ],
)
def test_damaged_trace_files_are_refused(damage, message, trace_file, capsys, tmp_path):
    bad = tmp_path / "bad.trace"
    raw = trace_file.read_bytes()
    if damage == "truncated":
        bad.write_bytes(raw[: len(raw) * 2 // 3])
    elif damage == "corrupted":
        middle = len(raw) // 2
        bad.write_bytes(raw[:middle] + bytes(b ^ 0xFF for b in raw[middle : middle + 64]) + raw[middle + 64 :])
    elif damage == "newer":
        rewrite(trace_file, bad, lambda arrays, header: header.update(format=2))
    elif damage == "edited":
        rewrite(trace_file, bad, lambda arrays, header: arrays.update(seg_group=arrays["seg_group"] + 1))
    else:
        with open(bad, "wb") as fh:
            np.savez(fh, x=np.zeros(3))
    line = fails(["run", "--trace", str(bad), "--out", str(tmp_path / "runs"), "--quiet"], capsys)
    assert re.search(message, line), line


def test_data_folder_missing_a_file_or_a_column(capsys, tmp_path):
    show = ["trace", "show", "label-swap", "--set", "source.root=" + str(tmp_path)]
    line = fails([*show, "--set", "source=fedscale-openimage"], capsys)
    assert f"missing file {tmp_path}/client_data_mapping/train.csv; put FedScale's openImg folder at {tmp_path}" in line
    mapping = tmp_path / "client_data_mapping"
    mapping.mkdir()
    for split in ("train", "test"):
        (mapping / f"{split}.csv").write_text("client_id,sample_path,label_name\n1,a.jpg,cat\n")
    line = fails([*show, "--set", "source=fedscale-openimage"], capsys)
    assert f"{mapping}/train.csv lacks column 'label_id'; found: client_id, sample_path, label_name" in line
    line = fails([*show, "--set", "source=wilds-fmow"], capsys)
    assert f"missing file {tmp_path}/rgb_metadata.csv; put WILDS' fmow_v1.1 folder at {tmp_path}" in line


def test_resume_with_a_changed_configuration_names_the_first_difference(capsys, tmp_path):
    args = ["run", "--trace", "label-swap", "--method", "fedavg", "--out", str(tmp_path), "--quiet", *TINY]
    assert main(args) == 0
    capsys.readouterr()
    line = fails([*args, "--resume", "--set", "train.lr=0.5"], capsys)
    config = tmp_path / "label-swap/fedavg/seed0/config.json"
    assert line == (
        f"error: --resume: {config} has train.lr = 0.05 but this run has 0.5; rerun with the stored settings or without --resume"
    )
    assert "has trace.hash = " in fails([*args, "--resume", "--set", "fraction=0.9"], capsys)
    assert main([*args, "--resume"]) == 0  # the unchanged configuration resumes (here: keeps the complete run)
