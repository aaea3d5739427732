"""Run checkpoints: scheduler totals, metrics so far, method state and RNG states in one weights-only torch file.

A method's state is ``vars(method)`` minus what ``setup`` rebuilds it from (``params``,
``ctx``); by contract it holds only numpy arrays, torch tensors, int/float/bool/str/None
and lists/dicts/tuples of these. Numpy values are stored as raw bytes in a uint8 tensor
with their dtype and shape, so the round trip is exact (dtype, shape, nesting, tuple vs
list) and loading needs no unpickling (``torch.load(..., weights_only=True)``).
Local training keeps no optimizer state across rounds (the engine starts momentum buffers
at zero every round), so method state plus the bank it holds is all the training state.
"""

from __future__ import annotations

import io
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch

from driftbench.atomic import atomic_write
from driftbench.errors import RunError

FORMAT_VERSION = 1
STATE_FILE = "state.pt"
REBUILT = ("params", "ctx", "events")  # method attributes rebuilt from the configuration (the event log: scheduler state)
_ARRAY_TAG = "__ndarray__"
_PLAIN = (int, float, bool, str, type(None))


def encode(value: Any, where: str) -> Any:
    """``value`` with every numpy array or scalar replaced by a tagged byte tensor; raise on other types."""
    if isinstance(value, (np.ndarray, np.generic)):  # before plain types: np.float64 and np.str_ subclass them
        array = np.asarray(value)
        if array.dtype.hasobject or array.dtype.fields is not None:
            raise RunError(f"{where}: numpy dtype {array.dtype} cannot be checkpointed; use a plain numeric dtype")
        data = torch.from_numpy(np.frombuffer(np.ascontiguousarray(array).tobytes(), dtype=np.uint8).copy())
        return {_ARRAY_TAG: array.dtype.str, "shape": list(array.shape), "scalar": isinstance(value, np.generic), "data": data}
    if isinstance(value, (torch.Tensor, *_PLAIN)):
        return value
    if isinstance(value, dict):
        if _ARRAY_TAG in value:
            raise RunError(f"{where}: the key {_ARRAY_TAG!r} is reserved by checkpoints")
        return {k: encode(v, f"{where}[{k!r}]") for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(encode(v, f"{where}[{i}]") for i, v in enumerate(value))
    raise RunError(
        f"{where}: a {type(value).__name__} cannot be checkpointed; method state must be numpy arrays, "
        "torch tensors, int/float/bool/str/None or lists/dicts/tuples of these"
    )


def decode(value: Any) -> Any:
    """Inverse of ``encode``."""
    if isinstance(value, dict):
        if _ARRAY_TAG in value:
            raw = value["data"].cpu().numpy().tobytes()
            array = np.frombuffer(raw, dtype=np.dtype(value[_ARRAY_TAG])).reshape(value["shape"]).copy()
            return array[()] if value["scalar"] else array
        return {k: decode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(decode(v) for v in value)
    return value


def method_state(method: Any) -> dict[str, Any]:
    """The method's attributes, encoded for a checkpoint."""
    name = getattr(method, "name", type(method).__name__)
    return {k: encode(v, f"method {name}: attribute {k}") for k, v in vars(method).items() if k not in REBUILT}


def restore_method(method: Any, state: dict[str, Any]) -> None:
    """Make a freshly set-up ``method`` hold exactly the checkpointed (decoded) attributes."""
    for name in [k for k in vars(method) if k not in REBUILT and k not in state]:
        delattr(method, name)
    for name, value in state.items():
        setattr(method, name, value)


def rng_states() -> dict[str, Any]:
    """The global torch, CUDA, numpy and Python RNG states (per-round streams derive from the seed and round)."""
    return {
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        "numpy": encode(np.random.get_state(), "numpy RNG"),
        "python": random.getstate(),
    }


def restore_rng(states: dict[str, Any]) -> None:
    """Set the global RNGs to the checkpointed states (CUDA only when the device count matches)."""
    torch.set_rng_state(states["torch"].cpu())
    if torch.cuda.is_available() and len(states["cuda"]) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all([s.cpu() for s in states["cuda"]])
    np.random.set_state(states["numpy"])
    random.setstate(states["python"])


def save(directory: Path, next_round: int, scheduler: dict[str, Any], method: Any) -> Path:
    """Atomically write the checkpoint to resume at ``next_round``; return its path."""
    state = {
        "format": FORMAT_VERSION,
        "next_round": next_round,
        "scheduler": encode(scheduler, "scheduler"),
        "method": method_state(method),
        "rng": rng_states(),
    }
    buffer = io.BytesIO()
    torch.save(state, buffer)
    path = Path(directory) / STATE_FILE
    atomic_write(path, lambda fh: fh.write(buffer.getbuffer()))
    return path


def load(directory: Path, device: torch.device) -> dict[str, Any]:
    """Read and decode a checkpoint (tensors onto ``device``); a damaged or foreign file raises ``RunError``."""
    path = Path(directory) / STATE_FILE
    try:
        state = torch.load(path, map_location=device, weights_only=True)
    except Exception as exc:  # torch raises several unrelated types for a damaged file
        raise RunError(f"{path}: unreadable checkpoint ({type(exc).__name__}); delete it or rerun without --resume") from None
    if not isinstance(state, dict) or state.get("format") != FORMAT_VERSION:
        raise RunError(f"{path}: not a driftbench checkpoint of format {FORMAT_VERSION}; delete it or rerun without --resume")
    decoded: dict[str, Any] = decode(state)
    return decoded


def exists(directory: Path) -> bool:
    """Whether ``directory`` holds a checkpoint."""
    return (Path(directory) / STATE_FILE).is_file()


def remove(directory: Path) -> None:
    """Delete the checkpoint folder, if any."""
    shutil.rmtree(directory, ignore_errors=True)
