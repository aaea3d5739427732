"""No unpickling in shipped code: np.load/torch.load refuse pickles; pickle is used only by allow-listed restricted unpicklers."""

import ast
import importlib
import io
import os
import pickle
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("driftbench", "benchmarks")

# (file, class) -> why it may subclass pickle.Unpickler. Each entry must override find_class
# and refuse globals outside its data-only set (checked below).
ALLOWED_UNPICKLERS = {
    # CIFAR-10/100 ship as pickled batches; find_class resolves only numpy's array/dtype rebuilders.
    ("driftbench/data/restricted_pickle.py", "_DataOnlyUnpickler"),
}
FORBIDDEN_MODULES = {"_pickle", "cPickle", "dill", "cloudpickle", "shelve", "joblib", "marshal"}
FORBIDDEN_NAMES = {
    "pickle.load",
    "pickle.loads",
    "pickle.Unpickler",
    "pickle._Unpickler",
    "pickle._load",
    "pickle._loads",
    "pandas.read_pickle",
    "torch.serialization.load",
}
FORBIDDEN_ATTRIBUTES = {"read_pickle", "to_pickle"}  # DataFrame methods and pandas functions, however reached


class PickleScan(ast.NodeVisitor):
    """Collects pickle use in one module, resolving import aliases (``import numpy as np``)."""

    def __init__(self, path: str) -> None:
        self.path, self.aliases, self.problems = path, {}, []
        self.allowed_bases: set[int] = set()

    def report(self, node: ast.AST, what: str) -> None:
        self.problems.append(f"{self.path}:{node.lineno}: {what}")

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.aliases[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
            self.check_module(node, alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        for alias in node.names:
            full = f"{node.module}.{alias.name}"
            self.aliases[alias.asname or alias.name] = full
            self.check_module(node, node.module or "")
            if full in FORBIDDEN_NAMES:
                self.report(node, f"imports {full}")

    def check_module(self, node: ast.AST, module: str) -> None:
        if module.split(".")[0] in FORBIDDEN_MODULES:
            self.report(node, f"imports {module}")

    def dotted(self, node: ast.AST) -> str | None:
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id, node.id)
        if isinstance(node, ast.Attribute):
            base = self.dotted(node.value)
            return f"{base}.{node.attr}" if base else None
        return None

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        if (self.path, node.name) in ALLOWED_UNPICKLERS:
            self.allowed_bases.update(id(base) for base in node.bases)
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        name = self.dotted(node)
        if name in FORBIDDEN_NAMES and id(node) not in self.allowed_bases:
            self.report(node, f"uses {name}")
        if node.attr in FORBIDDEN_ATTRIBUTES:
            self.report(node, f"uses .{node.attr}")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        name = self.dotted(node.func)
        required = {"torch.load": ("weights_only", True), "numpy.load": ("allow_pickle", False)}.get(name)
        if required and not any(
            k.arg == required[0] and isinstance(k.value, ast.Constant) and k.value.value is required[1] for k in node.keywords
        ):
            self.report(node, f"{name} without {required[0]}={required[1]}")
        self.generic_visit(node)


def scan(source: str, path: str) -> list[str]:
    """Pickle-use problems in one module's source."""
    visitor = PickleScan(path)
    visitor.visit(ast.parse(source))
    return visitor.problems


def shipped_files() -> list[Path]:
    return sorted(p for folder in SCANNED for p in (ROOT / folder).rglob("*.py"))


def test_shipped_code_never_unpickles():
    problems = [p for path in shipped_files() for p in scan(path.read_text(), path.relative_to(ROOT).as_posix())]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    "source",
    [
        "import pickle\npickle.loads(b'')",
        "from pickle import load\nload(fh)",
        "import pickle as p\nclass U(p.Unpickler):\n    pass",
        "import numpy as np\nnp.load('a.npy')",
        "import numpy\nnumpy.load('a.npy', allow_pickle=True)",
        "import torch\ntorch.load('m.pt')",
        "from torch import load as tl\ntl('m.pt', weights_only=False)",
        "import pandas as pd\npd.read_pickle('x')",
        "frame.to_pickle('x')",
        "import dill",
        "import joblib\njoblib.load('m')",
    ],
)
def test_the_scan_catches_each_kind_of_pickle_use(source):
    assert scan(source, "example.py")


def test_the_scan_accepts_safe_loads():
    safe = "import numpy as np\nimport torch\nnp.load('a', allow_pickle=False)\ntorch.load('b', weights_only=True)\n"
    assert scan(safe, "example.py") == []


class _CallsGetcwd:
    def __reduce__(self):
        return os.getcwd, ()


class _CallsEval:
    def __reduce__(self):
        return eval, ("1 + 1",)


@pytest.mark.parametrize("path,name", sorted(ALLOWED_UNPICKLERS))
def test_allowed_unpicklers_restrict_classes(path, name):
    module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
    cls = getattr(module, name)
    assert issubclass(cls, pickle.Unpickler) and "find_class" in vars(cls)
    for payload in (_CallsGetcwd(), _CallsEval(), {"model": _CallsGetcwd()}):
        with pytest.raises(pickle.UnpicklingError):
            cls(io.BytesIO(pickle.dumps(payload, protocol=2))).load()
    data = {"data": np.arange(6, dtype=np.uint8).reshape(2, 3), "labels": [1, 2], "name": "batch"}
    loaded = cls(io.BytesIO(pickle.dumps(data, protocol=2))).load()
    assert np.array_equal(loaded["data"], data["data"]) and loaded["labels"] == [1, 2] and loaded["name"] == "batch"
