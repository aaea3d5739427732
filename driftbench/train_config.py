"""Local-training settings shared by every method on a trace."""

from __future__ import annotations

from dataclasses import dataclass, field

from driftbench.config import RECORDED_WHEN_SET, lookup, require

DTYPES = ("float32", "float64")
MODELS = ("mlp", "lenet5", "resnet18", "shufflenet_v2")  # the engine's models (driftbench.engine.models builds them)
WIDENABLE = ("mlp", "lenet5")  # the models whose hidden units and channels ``width`` scales
PRECISIONS = ("fp32", "tf32", "bf16")  # arithmetic precisions (driftbench.engine.precision applies them)


@dataclass(frozen=True)
class TrainConfig:
    """How clients train: model and its width, SGD settings, local work per round, participants and evaluation cadence.

    ``width`` scales the hidden units of ``mlp`` and the channels and hidden units of ``lenet5`` (1: their usual sizes).
    """

    model: str = "mlp"
    width: float = field(default=1.0, metadata={RECORDED_WHEN_SET: True})
    lr: float = 0.05
    momentum: float = 0.0
    weight_decay: float = 0.0
    batch_size: int = 20
    local_steps: int = 10
    participants: int = 20
    eval_every: int = 1
    dtype: str = "float32"
    precision: str = "fp32"

    def __post_init__(self) -> None:
        lookup(dict.fromkeys(MODELS), self.model, "model")
        require(self.width > 0, f"width must be > 0, got {self.width}")
        require(
            self.width == 1 or self.model in WIDENABLE,
            f"width scales {' and '.join(WIDENABLE)} only; model {self.model!r} needs width 1, got {self.width}",
        )
        require(self.lr > 0, f"lr must be > 0, got {self.lr}")
        require(0 <= self.momentum < 1, f"momentum must be in [0, 1), got {self.momentum}")
        require(self.weight_decay >= 0, f"weight_decay must be >= 0, got {self.weight_decay}")
        require(self.batch_size >= 1, f"batch_size must be >= 1, got {self.batch_size}")
        require(self.local_steps >= 1, f"local_steps must be >= 1, got {self.local_steps}")
        require(self.participants >= 1, f"participants must be >= 1, got {self.participants}")
        require(self.eval_every >= 1, f"eval_every must be >= 1, got {self.eval_every}")
        require(self.dtype in DTYPES, f"dtype must be one of {', '.join(DTYPES)}, got {self.dtype!r}")
        require(self.precision in PRECISIONS, f"precision must be one of {', '.join(PRECISIONS)}, got {self.precision!r}")
        require(
            self.precision == "fp32" or self.dtype == "float32",
            f"precision {self.precision!r} applies to float32 models; dtype {self.dtype!r} needs precision 'fp32'",
        )
