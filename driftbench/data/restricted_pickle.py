"""The project's only unpickling: CIFAR's python batches, read with an unpickler that can build nothing but data.

CIFAR-10/100 ship as pickled dicts of numpy arrays, lists, strings and numbers. The unpickler
below resolves no global except numpy's own array and dtype reconstructors and a latin-1-only
stand-in for ``_codecs.encode`` (Python 3's protocol-2 bytes), so a data file cannot run code:
any other global (``os.system``, a class, ``eval``) raises DataSourceError.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import numpy as np

from driftbench.errors import DataSourceError


def _numpy_reconstructors() -> dict[str, Any]:
    """numpy's array and dtype rebuilders by name, found through the pickle protocol rather than private imports."""
    array = np.zeros(1)
    found: dict[str, Any] = {"ndarray": np.ndarray, "dtype": np.dtype}
    for protocol in (2, 5):
        reduced = array.__reduce_ex__(protocol)
        assert isinstance(reduced, tuple)  # an array reduces to (rebuild, args, state), not to a global's name
        rebuild = reduced[0]
        found[rebuild.__name__] = rebuild
    return found


def _latin1_bytes(text: str, encoding: str) -> bytes:
    """How Python 3 pickles bytes at protocol 2 (``_codecs.encode(text, "latin1")``), and nothing else."""
    if encoding != "latin1":
        raise pickle.UnpicklingError(f"refusing _codecs.encode with encoding {encoding!r}")
    return text.encode("latin1")


# numpy 1 pickles name the module numpy.core.*, numpy 2 pickles numpy._core.*.
_NUMPY_MODULES = ("numpy", "numpy.core.multiarray", "numpy._core.multiarray", "numpy.core.numeric", "numpy._core.numeric")
_ALLOWED = _numpy_reconstructors()


class _DataOnlyUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        """numpy's array and dtype rebuilders and the latin-1 bytes stand-in; any other global is refused."""
        if module in _NUMPY_MODULES and name in _ALLOWED:
            return _ALLOWED[name]
        if (module, name) == ("_codecs", "encode"):
            return _latin1_bytes
        raise pickle.UnpicklingError(f"refusing global {module}.{name}")

    def persistent_load(self, pid: Any) -> Any:
        """Persistent ids (references to outside objects) are refused."""
        raise pickle.UnpicklingError("refusing persistent id")


def load_data_pickle(path: Path, source: str) -> Any:
    """Unpickle ``path`` allowing only plain containers, strings, numbers and numpy arrays.

    Python 2 strings decode as latin-1, as numpy requires for arrays pickled by Python 2.
    """
    try:
        with open(path, "rb") as fh:
            return _DataOnlyUnpickler(fh, encoding="latin1").load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError) as exc:
        raise DataSourceError(f"{source}: {path} is not a plain data pickle: {exc}") from None
