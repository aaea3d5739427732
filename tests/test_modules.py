"""The package's modules: each imports with docstrings stripped (``python -OO``), and none grows past one job's size."""

import os
import subprocess
import sys
from pathlib import Path

import driftbench

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path(driftbench.__file__).parent
MAX_LINES = 450  # a module longer than this does several jobs (docs/development.md)


def module_names() -> list[str]:
    """Every module of the package, dotted."""
    files = sorted(p.relative_to(PACKAGE.parent).with_suffix("") for p in PACKAGE.rglob("*.py") if p.stem != "__main__")
    return [".".join(f.parts[:-1] if f.name == "__init__" else f.parts) for f in files]


def test_every_module_imports_without_docstrings():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    imports = "; ".join(f"import {module}" for module in module_names())  # one interpreter: torch loads once
    done = subprocess.run([sys.executable, "-OO", "-c", imports], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_no_module_is_longer_than_one_job():
    long = {str(p.relative_to(ROOT)): n for p in PACKAGE.rglob("*.py") if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, f"split by job: {long}"
