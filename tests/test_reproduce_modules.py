"""reproduce/ as modules: each imports with docstrings stripped (``python -OO``)."""

import os
import subprocess
import sys
from pathlib import Path

import driftbench.reproduce

ROOT = Path(__file__).resolve().parents[1]
MODULES = sorted(f"driftbench.reproduce.{p.stem}" for p in Path(driftbench.reproduce.__file__).parent.glob("[!_]*.py"))


def test_every_reproduce_module_imports_without_docstrings():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    imports = "; ".join(f"import {module}" for module in MODULES)  # one interpreter: torch loads once
    done = subprocess.run([sys.executable, "-OO", "-c", imports], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
