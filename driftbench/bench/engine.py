"""``driftbench bench engine``: the batched engine against the plain sequential loop, on one workload, in one process."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from torch.profiler import ProfilerActivity, profile

from driftbench.atomic import atomic_write
from driftbench.bench.workload import Workload
from driftbench.config import require
from driftbench.engine.batched import default_chunk_size
from driftbench.engine.clock import PASSES_PER_TRAINING_SAMPLE
from driftbench.engine.device_data import resolve_device
from driftbench.engine.models import MODELS, forward_flops
from driftbench.engine.precision import float32_math
from driftbench.train_config import PRECISIONS

INPUT_SHAPES = {"mlp": (1, 8, 8)}  # the 8x8 digits; every other model gets 3x32x32 images
MATMUL_SIZE = {"cpu": 1024, "cuda": 8192}


@dataclass(frozen=True)
class EngineBench:
    """What ``driftbench bench engine`` times: model, clients per round, local steps, batch size, device, repeats."""

    model: str = "lenet5"
    clients: int = 10
    steps: int = 10
    batch: int = 50
    device: str = "auto"
    repeats: int = 5
    input_shape: tuple[int, int, int] | None = None
    precision: str = "fp32"
    compile: bool = False

    def __post_init__(self) -> None:
        require(self.model in MODELS, f"--model {self.model!r}: allowed: {', '.join(sorted(MODELS))}")
        for name in ("clients", "steps", "batch", "repeats"):
            require(getattr(self, name) >= 1, f"--{name} must be >= 1, got {getattr(self, name)}")
        require(
            self.input_shape is None or (len(self.input_shape) == 3 and min(self.input_shape) >= 1),
            f"--input must be three positive sizes CxHxW, got {self.input_shape}",
        )
        require(self.precision in PRECISIONS, f"--precision {self.precision!r}: allowed: {', '.join(PRECISIONS)}")

    @property
    def shape(self) -> tuple[int, int, int]:
        """The input shape: the one given, or the model's usual one."""
        return self.input_shape or INPUT_SHAPES.get(self.model, (3, 32, 32))


def run_engine_bench(bench: EngineBench, profile: Path | None = None) -> dict[str, Any]:
    """Time both trainers interleaved after a warm-up; seconds per round, speed-up, throughput and GFLOP/s.

    With ``profile`` (a folder), one more batched round runs under the torch profiler
    (``profile_round``) and the report names the files it wrote.
    """
    device = resolve_device(bench.device)
    workload = Workload(
        bench.model,
        bench.shape,
        bench.clients,
        bench.steps,
        bench.batch,
        str(device),
        precision=bench.precision,
        compile=bench.compile,
    )
    workload.batched(), workload.sequential()  # warm-up (and compilation, when asked for)
    batched, sequential = [], []
    for _ in range(bench.repeats):
        batched.append(seconds(workload.batched))
        sequential.append(seconds(workload.sequential))
    flops = PASSES_PER_TRAINING_SAMPLE * forward_flops(workload.model, bench.shape) * workload.samples
    with float32_math(bench.precision):
        peak = matmul_peak_gflops(device, torch.bfloat16 if bench.precision == "bf16" else torch.float32)
    median = statistics.median(batched)
    profiled = {"profile": [str(p) for p in profile_round(workload, profile)]} if profile is not None else {}
    return {
        **{k: v for k, v in asdict(bench).items() if k not in ("input_shape", "device")},
        "input_shape": list(bench.shape),
        "device": str(device),
        "threads": torch.get_num_threads(),
        "chunk_size": default_chunk_size(workload.model, device),
        "batched_seconds": {"min": min(batched), "median": median},
        "sequential_seconds": {"min": min(sequential), "median": statistics.median(sequential)},
        "speedup_vs_sequential": statistics.median(s / b for s, b in zip(sequential, batched)),
        "samples_per_second": workload.samples / median,
        "sequential_samples_per_second": workload.samples / statistics.median(sequential),
        "gflops_per_second": flops / median / 1e9,
        "matmul_peak_gflops_per_second": peak,
        "peak_fraction": flops / median / 1e9 / peak,
        "torch_version": torch.__version__,
        **profiled,
    }


def profile_round(workload: Workload, folder: Path, rows: int = 30) -> tuple[Path, Path]:
    """One batched round under the torch profiler (and CUDA's, on a GPU): its operator table and a Chrome trace in ``folder``.

    The table (``profile.txt``) sorts operators by their own device time, which shows whether the
    step is launch-bound (many short kernels) or compute-bound; open ``trace.json`` in
    chrome://tracing or Perfetto for the timeline.
    """
    os.environ.setdefault("KINETO_LOG_LEVEL", "5")  # the profiler library's own start-up messages stay off the terminal
    cuda = workload.device.type == "cuda"
    activities = [ProfilerActivity.CPU, *([ProfilerActivity.CUDA] if cuda else [])]
    with profile(activities=activities) as prof:
        workload.batched()
    table = prof.key_averages().table(sort_by="self_cuda_time_total" if cuda else "self_cpu_time_total", row_limit=rows)
    folder.mkdir(parents=True, exist_ok=True)
    text, trace = folder / "profile.txt", folder / "trace.json"
    atomic_write(text, lambda fh: fh.write(table.encode()))
    prof.export_chrome_trace(str(trace))
    return text, trace


def seconds(fn: Callable[[], object]) -> float:
    """Wall-clock seconds of one call."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def matmul_peak_gflops(device: torch.device, dtype: torch.dtype, repeats: int = 5) -> float:
    """Best GFLOP/s of a square matrix multiply on ``device``: the achievable peak the engine is compared with."""
    n = MATMUL_SIZE[device.type]
    a, b = torch.rand(n, n, device=device).to(dtype), torch.rand(n, n, device=device).to(dtype)
    sync: Callable[[], None] = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    a @ b
    sync()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        sync()
        best = min(best, time.perf_counter() - start)
    return 2.0 * n**3 / best / 1e9


def format_engine_bench(result: dict[str, Any]) -> str:
    """The human-readable report of ``run_engine_bench``."""
    shape = "x".join(map(str, result["input_shape"]))
    b, s = result["batched_seconds"], result["sequential_seconds"]
    return "\n".join(
        [
            f"{result['model']} on {shape}, {result['clients']} clients x {result['steps']} steps x batch {result['batch']}, "
            f"{result['device']} ({result['threads']} threads), chunk size {result['chunk_size'] or 'all'}, "
            f"{result['repeats']} interleaved repeats after a warm-up",
            f"batched     {b['median']:.4f} s/round (min {b['min']:.4f})  {result['samples_per_second']:,.0f} samples/s",
            f"sequential  {s['median']:.4f} s/round (min {s['min']:.4f})  "
            f"{result['sequential_samples_per_second']:,.0f} samples/s",
            f"speedup_vs_sequential  {result['speedup_vs_sequential']:.2f}x (median of per-repeat ratios)",
            f"batched compute  {result['gflops_per_second']:.1f} GFLOP/s = {result['peak_fraction']:.1%} of a "
            f"{result['matmul_peak_gflops_per_second']:.1f} GFLOP/s matrix multiply in this process",
            *([f"profile of one batched round: {', '.join(result['profile'])}"] if "profile" in result else []),
        ]
    )
