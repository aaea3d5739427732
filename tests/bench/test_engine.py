"""`driftbench bench engine`, mixed precision and the torch.compile fallback of the batched engine."""

import json
import logging

import numpy as np
import pytest
import torch

from driftbench.cli import main
from driftbench.data.pool import Pool
from driftbench.engine.batched import BatchedTrainer
from driftbench.engine.device_data import DevicePool, LocalWork, batch_plan
from driftbench.engine.models import build_model
from driftbench.train_config import TrainConfig

TINY = ["--clients", "3", "--steps", "2", "--batch", "4", "--repeats", "2", "--device", "cpu"]


def test_bench_engine_json_reports_both_trainers(capsys):
    assert main(["bench", "engine", "--model", "mlp", *TINY, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    # chunks of 9 clients: CACHE_BYTES (4 MiB) over the parameters and momentum buffers of one (2 x 221 kB)
    assert (result["model"], result["clients"], result["input_shape"], result["chunk_size"]) == ("mlp", 3, [1, 8, 8], 9)
    for trainer in ("batched_seconds", "sequential_seconds"):
        assert 0 < result[trainer]["min"] <= result[trainer]["median"]
    assert result["samples_per_second"] == pytest.approx(3 * 2 * 4 / result["batched_seconds"]["median"])
    # the speed-up is sequential over batched time: with 2 repeats each maximum is 2 x median - min
    b, q = result["batched_seconds"], result["sequential_seconds"]
    b_max, q_max = 2 * b["median"] - b["min"], 2 * q["median"] - q["min"]
    assert q["min"] / b_max * (1 - 1e-9) <= result["speedup_vs_sequential"] <= q_max / b["min"] * (1 + 1e-9)
    assert result["peak_fraction"] == pytest.approx(result["gflops_per_second"] / result["matmul_peak_gflops_per_second"])
    assert result["kernel_ceiling"]["threads"] == torch.get_num_threads()  # the dense MLP's products use every thread


def test_bench_engine_bounds_a_dense_net_by_its_batched_products(capsys):
    """Chunks of clients: each Linear layer's products at (batch, outputs, inputs) for the chunk's size, their FLOPs over
    their time against the same process's matrix multiply; the whole step (loss, ReLU, SGD passes besides) stays below it."""
    assert main(["bench", "engine", "--model", "mlp", *TINY, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    ceiling = result["kernel_ceiling"]
    shapes = [(layer["layer"], layer["gemm_mnk"], layer["clients"]) for layer in ceiling["layers"]]
    assert shapes == [("1", [4, 200, 64], 3), ("3", [4, 200, 200], 3), ("5", [4, 10, 200], 3)]
    assert ceiling["matmul_peak_gflops_per_second"] == result["matmul_peak_gflops_per_second"]
    assert result["peak_fraction"] < ceiling["fraction"]
    assert main(["bench", "engine", "--model", "mlp", *TINY]) == 0
    assert "layer kernels alone, in chunks of 3 clients:" in capsys.readouterr().out


def test_bench_engine_profiles_one_round_into_a_table_and_a_trace(tmp_path, capsys):
    assert main(["bench", "engine", "--model", "mlp", *TINY, "--profile", str(tmp_path / "prof")]) == 0
    out = capsys.readouterr().out
    table, trace = tmp_path / "prof/profile.txt", tmp_path / "prof/trace.json"
    assert f"profile of one batched round: {table}, {trace}" in out
    assert "Self CPU" in table.read_text() and "aten::" in table.read_text()
    assert json.loads(trace.read_text())["traceEvents"]


def test_bench_engine_text_for_a_conv_net(capsys):
    assert main(["bench", "engine", "--model", "lenet5", "--input", "1x12x12", *TINY]) == 0
    out = capsys.readouterr().out
    assert out.startswith("lenet5 on 1x12x12, 3 clients x 2 steps x batch 4, cpu")
    assert "chunk size 1" in out and "speedup_vs_sequential" in out and "GFLOP/s" in out
    assert "layer kernels alone, one client per thread:" in out


def test_bench_engine_bounds_a_conv_net_by_its_layers_kernels(capsys):
    """One client per thread, each Conv2d and Linear layer's product shape (M, N, K) and GFLOP/s; their FLOPs over their
    time, against a one-thread matrix multiply, is the ceiling."""
    assert main(["bench", "engine", "--model", "lenet5", "--input", "1x12x12", *TINY, "--json"]) == 0
    ceiling = json.loads(capsys.readouterr().out)["kernel_ceiling"]
    # 12x12 padded by 2 -> 12x12 x 6, pooled 6x6 -> 2x2 x 16, pooled 1x1 -> 16 features; batch 4
    shapes = [(layer["layer"], layer["gemm_mnk"]) for layer in ceiling["layers"]]
    assert shapes == [("0.0", [576, 6, 25]), ("0.3", [16, 16, 150]), ("1", [4, 120, 16]), ("3", [4, 84, 120]), ("5", [4, 10, 84])]
    assert all(layer["gflops_per_second"] > 0 for layer in ceiling["layers"])
    assert 0 < ceiling["fraction"] and ceiling["matmul_peak_gflops_per_second"] > 0 and ceiling["threads"] == 1


@pytest.mark.parametrize(
    "args,message",
    [
        (["--clients", "0"], "--clients must be >= 1, got 0"),
        (["--model", "vgg"], "--model 'vgg': allowed:"),
        (["--precision", "fp16"], "--precision 'fp16': allowed: fp32, tf32, bf16"),
    ],
)
def test_bench_engine_rejects_bad_settings(args, message, capsys):
    assert main(["bench", "engine", *args]) == 2
    assert message in capsys.readouterr().err


def test_bench_engine_rejects_a_malformed_shape(capsys):
    with pytest.raises(SystemExit):
        main(["bench", "engine", "--input", "3x32"])
    assert "expected CxHxW" in capsys.readouterr().err


def small_round(model_name, shape, device="cpu", clients=4, steps=6):
    rng = np.random.default_rng(0)
    n = clients * 40
    pool = Pool("t", rng.random((n, *shape), dtype=np.float32), rng.integers(0, 5, n), 5)
    model = build_model(model_name, shape, 5, seed=0, dtype=torch.float32).to(device)
    data = DevicePool(pool, torch.device(device), torch.float32)
    windows = [np.arange(k * 40, (k + 1) * 40) for k in range(clients)]
    work = LocalWork(
        np.arange(clients),
        batch_plan(rng, windows, steps, 16),
        np.full(clients, steps),
        np.tile(np.arange(5), (clients, 1)),
        np.array([0, 90, 180, 270] * clients)[:clients],
    )
    start = {n: p.detach().unsqueeze(0).repeat(clients, *[1] * p.dim()) for n, p in model.named_parameters()}
    cfg = TrainConfig(model=model_name, lr=0.05, momentum=0.9, batch_size=16, local_steps=steps)
    return model, data, start, work, cfg


def update_cosine(trained, reference, start):
    """Cosine similarity of the two rounds' parameter changes, all clients and parameters flattened."""
    a = torch.cat([(trained[n] - start[n]).flatten() for n in start])
    b = torch.cat([(reference[n] - start[n]).flatten() for n in start])
    return torch.nn.functional.cosine_similarity(a, b, dim=0).item()


@pytest.mark.parametrize("model_name,shape,chunk", [("mlp", (1, 8, 8), None), ("lenet5", (1, 12, 12), 1)])
def test_bfloat16_autocast_trains_like_full_precision(model_name, shape, chunk):
    model, data, start, work, cfg = small_round(model_name, shape)
    full = BatchedTrainer(model, data, chunk).train(start, work, cfg)
    mixed = BatchedTrainer(model, data, chunk, precision="bf16").train(start, work, cfg)
    first = next(iter(start))
    assert not torch.equal(mixed.params[first], full.params[first])  # autocast was in force
    assert update_cosine(mixed.params, full.params, start) > 0.98
    torch.testing.assert_close(mixed.loss, full.loss, rtol=0.02, atol=0.0)


def test_compile_failure_falls_back_to_eager(monkeypatch, caplog):
    def broken_compile(fn, **_kwargs):
        def fail(*_args):
            raise RuntimeError("no compiler")

        return fail

    model, data, start, work, cfg = small_round("mlp", (1, 8, 8))
    monkeypatch.setattr(torch, "compile", lambda fn, **_kwargs: fn)  # the step compile wraps, run eagerly
    eager = BatchedTrainer(model, data, compile=True).train(start, work, cfg)
    monkeypatch.setattr(torch, "compile", broken_compile)
    with caplog.at_level(logging.WARNING, logger="driftbench"):
        fallback = BatchedTrainer(model, data, compile=True).train(start, work, cfg)
    assert "torch.compile failed (RuntimeError: no compiler)" in caplog.text
    for name in start:
        assert torch.equal(fallback.params[name], eager.params[name])
        assert not torch.equal(fallback.params[name], start[name])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("model_name,shape", [("mlp", (1, 8, 8)), ("lenet5", (3, 32, 32))])
def test_cuda_engine_matches_cpu_and_bfloat16_holds(model_name, shape):
    _, cpu_data, start, work, cfg = small_round(model_name, shape)
    model, data, _, _, _ = small_round(model_name, shape, device="cuda")
    cpu = BatchedTrainer(build_model(model_name, shape, 5, 0, torch.float32), cpu_data, 1).train(start, work, cfg)
    on_gpu = {n: p.cuda() for n, p in start.items()}
    full = BatchedTrainer(model, data).train(on_gpu, work, cfg)
    mixed = BatchedTrainer(model, data, precision="bf16").train(on_gpu, work, cfg)
    for name in start:
        torch.testing.assert_close(full.params[name].cpu(), cpu.params[name], rtol=1e-3, atol=1e-4)
    assert update_cosine({n: p.cpu() for n, p in mixed.params.items()}, cpu.params, start) > 0.98
