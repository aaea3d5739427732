"""Trace files that are not npz archives of numeric arrays are refused in one line, without numpy's advice to unpickle."""

import zipfile

import numpy as np
import pytest

from driftbench.errors import TraceFileError
from driftbench.traces.io import load_trace


def write_npy(path):
    with open(path, "wb") as fh:
        np.save(fh, np.arange(3))


def write_zip_of_text(path):
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("header.npy", "not an array")


@pytest.mark.parametrize(
    "write,message",
    [
        (lambda path: path.write_bytes(b"\x80\x04K\x01." * 50), "not a driftbench trace file (not an npz archive)"),
        (lambda path: path.write_bytes(b""), "not a driftbench trace file (not an npz archive)"),
        (write_npy, "not a driftbench trace file (not an npz archive)"),
        (write_zip_of_text, "not a driftbench trace file (holds a member that is not a numpy array)"),
    ],
    ids=["pickle-like bytes", "empty", "npy", "zip of text"],
)
def test_files_that_are_not_trace_archives_are_refused(write, message, tmp_path):
    path = tmp_path / "x.trace"
    write(path)
    with pytest.raises(TraceFileError) as caught:
        load_trace(path)
    assert str(caught.value) == f"{path}: {message}" and "pickle" not in str(caught.value)
