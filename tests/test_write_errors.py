"""Write errors (a full disk, a read-only folder, no permission) end a run with one line; --resume then finishes it identically.

The errors are injected into the atomic writer's file, so they hit every user, root included.
"""

import builtins
import errno
import os
import re

import pytest

from driftbench import atomic
from driftbench.atomic import atomic_write
from driftbench.cli import main
from driftbench.engine.batched import operators_on_one_thread
from driftbench.errors import WriteError
from driftbench.record.schema import run_state
from driftbench.runner import Execution, Request, execute, plan_jobs
from driftbench.scheduler import checkpoint
from tests.test_resume import assert_same_record

SETS = {"clients": "6", "rounds": "6", "drift_every": "3", "train.participants": "3", "train.local_steps": "2"}
RUN = ["run", "--trace", "label-swap", "--method", "fedavg", "--device", "cpu", "--quiet", "--checkpoint-every", "2"]
RUN += [arg for key, value in SETS.items() for arg in ("--set", f"{key}={value}")]
FOLDER = "label-swap/fedavg/seed0"


class FailingFile:
    """A file whose writes fail with ``code``."""

    def __init__(self, fh, code):
        self.fh, self.code = fh, code

    def write(self, data):
        raise OSError(self.code, os.strerror(self.code))

    def __getattr__(self, name):
        return getattr(self.fh, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.fh.close()


def fail_writes(monkeypatch, name: str, code: int, after: int = 0) -> None:
    """Make the atomic writer's writes of the file ``name`` fail with ``code``, after ``after`` that succeed."""
    left = [after]

    def opener(path, mode="r", *args, **kwargs):
        fh = builtins.open(path, mode, *args, **kwargs)
        if os.path.basename(path).startswith(f".{name}.") and "w" in mode:
            left[0] -= 1
            if left[0] < 0:
                return FailingFile(fh, code)
        return fh

    monkeypatch.setattr(atomic, "open", opener, raising=False)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    out = tmp_path_factory.mktemp("uninterrupted")
    with operators_on_one_thread():
        assert main([*RUN, "--out", str(out)]) == 0
    return out / FOLDER


def test_a_full_disk_at_a_checkpoint_gives_one_line_and_resume_gives_the_identical_record(
    uninterrupted, tmp_path, monkeypatch, capsys
):
    folder = tmp_path / FOLDER
    fail_writes(monkeypatch, "state.pt", errno.ENOSPC, after=1)  # the round-2 checkpoint is written, round 4's is not
    with operators_on_one_thread():
        assert main([*RUN, "--out", str(tmp_path)]) == 2
    out, err = capsys.readouterr()
    head, tail = err.split("; it needs at least ")
    path = folder / "checkpoint/state.pt"
    assert head == f"error: cannot write {path} (writing a temporary copy beside it): No space left on device [ENOSPC]"
    assert re.fullmatch(r"\d+\.\d (KiB|MiB) free: the previous copy stays whole until the new one is complete; .*\n", tail)
    assert tail.endswith(
        f"; what was written before is intact; after freeing space, driftbench {' '.join(RUN)} --out {tmp_path} "
        "--resume continues from the last checkpoint (round 2)\n"
    )
    assert out == ""
    assert run_state(folder) == "incomplete" and not list(tmp_path.rglob("*.tmp")) and not list(tmp_path.rglob("run.lock"))
    assert checkpoint.load(folder / "checkpoint", "cpu")["next_round"] == 2
    monkeypatch.undo()  # space freed
    with operators_on_one_thread():
        assert main([*RUN, "--out", str(tmp_path), "--resume"]) == 0
    assert_same_record(uninterrupted, folder)


@pytest.mark.parametrize(
    "name,code,reason,where",
    [
        ("config.json", errno.EROFS, "Read-only file system [EROFS]", "round 0 (no checkpoint was written)"),
        ("rounds.csv", errno.EACCES, "Permission denied [EACCES]", "the last checkpoint (round 4)"),
        ("summary.json", errno.EDQUOT, "Disk quota exceeded [EDQUOT]", "the last checkpoint (round 4)"),
    ],
)
def test_a_refused_record_write_gives_one_line_and_keeps_the_checkpoint(name, code, reason, where, tmp_path, monkeypatch, capsys):
    folder = tmp_path / FOLDER
    fail_writes(monkeypatch, name, code)
    with operators_on_one_thread():
        assert main([*RUN, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: cannot write {folder / name} (writing a temporary copy beside it): {reason}; ")
    assert err.endswith(f"--resume continues from {where}\n") and err.count("\n") == 1
    assert ("needs at least" in err) == (code == errno.EDQUOT)
    assert run_state(folder) == ("absent" if name == "config.json" else "incomplete")
    assert checkpoint.exists(folder / "checkpoint") == (name != "config.json")
    assert not list(tmp_path.rglob("*.tmp")) and not list(tmp_path.rglob("run.lock"))


def test_a_sweep_reports_the_run_as_failed_with_the_line(tmp_path, monkeypatch):
    (job,) = plan_jobs(Request({"label-swap": SETS}, ("fedavg",)), Execution("cpu", tmp_path))
    fail_writes(monkeypatch, "rounds.csv", errno.ENOSPC)
    outcome = execute(job)
    assert outcome.state == "failed" and outcome.exit_code == 2
    assert outcome.error.startswith(f"WriteError: cannot write {tmp_path / FOLDER / 'rounds.csv'} (writing a temporary")
    assert outcome.error.endswith(
        "after freeing space, the same sweep (or --resume) continues from round 0 (no checkpoint was written)"
    )


def test_a_failed_write_leaves_the_previous_file_whole(tmp_path, monkeypatch):
    path = tmp_path / "data.bin"
    path.write_bytes(b"old")
    fail_writes(monkeypatch, "data.bin", errno.ENOSPC)
    with pytest.raises(WriteError, match=r"data.bin \(writing .*\[ENOSPC\]; it needs at least 2.9 KiB free"):
        atomic_write(path, lambda fh: fh.write(b"x" * 3000))
    assert path.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["data.bin"]
