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
from torch import nn
from torch.profiler import ProfilerActivity, profile

from driftbench.atomic import atomic_write
from driftbench.bench.workload import Workload
from driftbench.config import require
from driftbench.engine.batched import chunk_clients, operators_on_one_thread, working_copy
from driftbench.engine.clock import PASSES_PER_TRAINING_SAMPLE
from driftbench.engine.dense import Product, dense_layers, dense_step
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
    trainer, bound = workload.trainer, {}
    if device.type == "cpu" and trainer.chunk_size == 1:
        bound = {"kernel_ceiling": kernel_ceiling(workload.model, bench.shape, bench.batch)}
    elif device.type == "cpu" and trainer.chunk_step is dense_step:
        clients = chunk_clients(bench.clients, trainer.chunk_size)
        bound = {"kernel_ceiling": dense_ceiling(workload.model, bench.batch, clients, peak)}
    return {
        **{k: v for k, v in asdict(bench).items() if k not in ("input_shape", "device")},
        "input_shape": list(bench.shape),
        "device": str(device),
        "threads": torch.get_num_threads(),
        "chunk_size": trainer.chunk_size,
        "batched_seconds": {"min": min(batched), "median": median},
        "sequential_seconds": {"min": min(sequential), "median": statistics.median(sequential)},
        "speedup_vs_sequential": statistics.median(s / b for s, b in zip(sequential, batched)),
        "samples_per_second": workload.samples / median,
        "sequential_samples_per_second": workload.samples / statistics.median(sequential),
        "gflops_per_second": flops / median / 1e9,
        "matmul_peak_gflops_per_second": peak,
        "peak_fraction": flops / median / 1e9 / peak,
        "torch_version": torch.__version__,
        **bound,
        **profiled,
    }


def kernel_ceiling(model: nn.Module, shape: tuple[int, int, int], batch: int, repeats: int = 5) -> dict[str, Any]:
    """The fraction of the matmul peak that the Conv2d and Linear layers' own kernels reach in one client's step.

    On the CPU the engine trains one client per thread with single-threaded operators, so each
    layer runs here as it does there: on a channels-last copy, forward and backward (no input
    gradient for the first layer) on one client's batch, on one thread, the best of
    ``repeats`` in that thread's CPU time (which other processes on a busy machine do not
    inflate), against a one-thread matrix multiply timed the same way. Everything else in a
    step (activations, pooling, the loss, SGD) is left out, so no engine that runs these
    kernels gets above this fraction; each layer's entry gives its matrix-product shape
    (M samples x positions, N outputs, K inputs per output) and GFLOP/s.
    """
    local = working_copy(model, torch.device("cpu"), compile=False).model
    inputs: list[tuple[str, nn.Module, torch.Tensor]] = []
    hooks = [
        m.register_forward_hook(lambda m, x, _y, name=name: inputs.append((name, m, x[0].detach())))
        for name, m in local.named_modules()
        if isinstance(m, (nn.Conv2d, nn.Linear))
    ]
    try:
        with torch.no_grad():
            local(torch.rand(batch, *shape).to(memory_format=torch.channels_last))
    finally:
        for hook in hooks:
            hook.remove()
    layers: list[tuple[dict[str, Any], float, float]] = []
    with operators_on_one_thread():
        peak = matmul_peak_gflops(torch.device("cpu"), torch.float32, clock=time.thread_time)
        for i, (name, module, x) in enumerate(inputs):
            x = x.clone().requires_grad_(i > 0)
            wrt = [*module.parameters(), *([x] if i else [])]

            def step(module: nn.Module = module, x: torch.Tensor = x, wrt: list[torch.Tensor] = wrt) -> None:
                out = module(x)
                torch.autograd.grad(out, wrt, torch.ones_like(out))

            step()
            taken = min(seconds(step, time.thread_time) for _ in range(repeats))
            m, n, k = gemm = _gemm_shape(module, x)
            layers.append(({"layer": name, "gemm_mnk": gemm}, PASSES_PER_TRAINING_SAMPLE * 2.0 * m * n * k, taken))
    return _ceiling(layers, peak, threads=1)


def dense_ceiling(model: nn.Module, batch: int, clients: int, peak: float, repeats: int = 5) -> dict[str, Any]:
    """The fraction of the matmul peak that the dense engine's batched products alone reach in a chunk's local step.

    Each Linear layer's products as ``engine.dense`` forms them over a chunk of ``clients``
    stacked models: the forward (bias + x W^T), the weight gradient accumulated into the
    momentum buffer (its inner size is one batch) and, above the first layer, the input
    gradient; the best of ``repeats`` on this process's threads, against ``peak`` (the square
    matrix multiply on the same threads), FLOPs counted as ``peak_fraction`` counts them.
    Everything else in a step (ReLU, the loss, the bias and SGD passes, gathering the batch)
    is left out, so the engine's ``peak_fraction`` stays below this fraction.
    """
    layers: list[tuple[dict[str, Any], float, float]] = []
    for i, name in enumerate(dense_layers(model) or []):
        linear = model.get_submodule(name)
        assert isinstance(linear, nn.Linear)
        out_features, in_features = linear.out_features, linear.in_features
        step = _dense_products(clients, batch, out_features, in_features, first=i == 0)
        step()
        taken = min(seconds(step) for _ in range(repeats))
        entry = {"layer": name, "gemm_mnk": [batch, out_features, in_features], "clients": clients}
        layers.append((entry, PASSES_PER_TRAINING_SAMPLE * 2.0 * clients * batch * out_features * in_features, taken))
    return _ceiling(layers, peak, torch.get_num_threads())


def _ceiling(layers: list[tuple[dict[str, Any], float, float]], peak: float, threads: int) -> dict[str, Any]:
    """A ceiling from each layer's (entry, FLOPs, best seconds): all layers' FLOPs over their time against ``peak``."""
    flops, taken = sum(f for _, f, _ in layers), sum(t for _, _, t in layers)
    return {
        "fraction": flops / taken / 1e9 / peak,
        "matmul_peak_gflops_per_second": peak,
        "threads": threads,
        "layers": [{**entry, "gflops_per_second": f / t / 1e9} for entry, f, t in layers],
    }


def _dense_products(clients: int, batch: int, out_features: int, in_features: int, first: bool) -> Callable[[], None]:
    """One dense layer's products in a local step, on random stacked tensors: forward, weight gradient, input gradient."""
    weight, buffer = torch.rand(clients, out_features, in_features), torch.zeros(clients, out_features, in_features)
    bias, below = torch.rand(clients, out_features), torch.rand(clients, batch, in_features)
    delta = torch.rand(clients, batch, out_features)

    def step() -> None:
        torch.baddbmm(bias.unsqueeze(1), below, weight.transpose(1, 2))
        Product(delta, below).add_to(buffer, 0.9, 1.0)
        if not first:  # the first layer's input gradient is not needed
            torch.bmm(delta, weight)

    return step


def _gemm_shape(module: nn.Module, x: torch.Tensor) -> list[int]:
    """The (M, N, K) of a layer's forward pass as one matrix product (a convolution's as im2col would form it)."""
    if isinstance(module, nn.Linear):
        return [x.shape[0], module.out_features, module.in_features]
    assert isinstance(module, nn.Conv2d)
    with torch.no_grad():
        positions = module(x[:1]).shape[-2:].numel()
    k = module.in_channels // module.groups * module.kernel_size[0] * module.kernel_size[1]
    return [x.shape[0] * positions, module.out_channels, k]


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


def seconds(fn: Callable[[], object], clock: Callable[[], float] = time.perf_counter) -> float:
    """Seconds of one call on ``clock`` (wall-clock by default)."""
    start = clock()
    fn()
    return clock() - start


def matmul_peak_gflops(
    device: torch.device, dtype: torch.dtype, repeats: int = 5, clock: Callable[[], float] = time.perf_counter
) -> float:
    """Best GFLOP/s of a square matrix multiply on ``device`` by ``clock``: the achievable peak the engine is compared with."""
    n = MATMUL_SIZE[device.type]
    a, b = torch.rand(n, n, device=device).to(dtype), torch.rand(n, n, device=device).to(dtype)
    sync: Callable[[], None] = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    a @ b
    sync()
    best = float("inf")
    for _ in range(repeats):
        start = clock()
        a @ b
        sync()
        best = min(best, clock() - start)
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
            *(_ceiling_lines(result["kernel_ceiling"]) if "kernel_ceiling" in result else []),
            *([f"profile of one batched round: {', '.join(result['profile'])}"] if "profile" in result else []),
        ]
    )


def _ceiling_lines(ceiling: dict[str, Any]) -> list[str]:
    """The text lines of ``kernel_ceiling`` or ``dense_ceiling``: the bound, then each layer's product shape and GFLOP/s."""
    layers = ceiling["layers"]
    how = f"in chunks of {layers[0]['clients']} clients" if layers and "clients" in layers[0] else "one client per thread"
    return [
        f"layer kernels alone, {how}: {ceiling['fraction']:.1%} of a "
        f"{ceiling['matmul_peak_gflops_per_second']:.1f} GFLOP/s matrix multiply on {ceiling['threads']} thread(s) "
        "(the engine's ceiling: small products)",
        *(
            f"  {layer['layer']:10s} M={m:<6d} N={n:<4d} K={k:<5d} {layer['gflops_per_second']:6.1f} GFLOP/s"
            for layer in layers
            for m, n, k in [layer["gemm_mnk"]]
        ),
    ]
