"""Paper-scale models: torchvision's ResNet-18 and ShuffleNet v2 with GroupNorm, trained alike by both engines."""

import numpy as np
import pytest
import torch
from torch import nn

from driftbench import train_config
from driftbench.data.pool import Pool
from driftbench.engine.batched import BatchedTrainer
from driftbench.engine.device_data import DevicePool, LocalWork, batch_plan
from driftbench.engine.models import MODELS, build_model, forward_flops
from driftbench.engine.reference import train_sequential
from driftbench.errors import ConfigError
from driftbench.train_config import TrainConfig

# torchvision's documented ImageNet figures: multiply-adds (its "GFLOPS" column) and parameter counts.
TORCHVISION = {"resnet18": (1.81e9, 11_689_512), "shufflenet_v2": (0.14e9, 2_278_604)}


@pytest.mark.parametrize("name", sorted(TORCHVISION))
def test_architecture_is_torchvisions_without_batchnorm(name):
    model = build_model(name, (3, 224, 224), 1000, seed=0, dtype=torch.float32)
    macs, params = TORCHVISION[name]
    assert sum(p.numel() for p in model.parameters()) == params  # GroupNorm has BatchNorm's affine parameters
    assert abs(forward_flops(model, (3, 224, 224)) / 2 - macs) < 0.005e9
    assert not any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in model.modules())
    assert any(isinstance(m, nn.GroupNorm) for m in model.modules())
    assert list(model.buffers()) == []


@pytest.mark.parametrize("name", sorted(TORCHVISION))
@pytest.mark.parametrize("shape", [(3, 32, 32), (1, 28, 28)])
def test_small_inputs(name, shape):
    model = build_model(name, shape, 10, seed=0, dtype=torch.float32)
    assert model(torch.rand(2, *shape)).shape == (2, 10)
    assert 0 < forward_flops(model, shape) < 2 * TORCHVISION[name][0] / 10


@pytest.mark.parametrize("name", sorted(TORCHVISION))
def test_batched_matches_sequential(name):
    """2 clients x 1 step at 3x32x32, one client at a time (the CPU path) and vmapped (the CUDA path)."""
    rng = np.random.default_rng(0)
    pool = Pool("t", rng.random((40, 3, 32, 32), dtype=np.float32), rng.integers(0, 5, 40), 5)
    model = build_model(name, pool.input_shape, pool.num_classes, seed=1, dtype=torch.float32)
    data = DevicePool(pool, torch.device("cpu"), torch.float32)
    cfg = TrainConfig(model=name, lr=0.1, momentum=0.9, weight_decay=1e-3, batch_size=4, local_steps=1)
    work = LocalWork(
        clients=np.arange(2),
        batches=batch_plan(rng, [np.arange(20), np.arange(20, 40)], 1, 4),
        steps=np.array([1, 1]),
        label_maps=np.stack([np.arange(5), np.arange(5)[::-1]]),
        rotations=np.array([0, 90]),
    )
    start = {n: p.detach().unsqueeze(0).expand(2, *p.shape).clone() for n, p in model.named_parameters()}
    sequential = train_sequential(model, data, start, work, cfg, mu=0.01)
    for chunk in (1, None):
        batched = BatchedTrainer(model, data, chunk).train(start, work, cfg, mu=0.01)
        assert torch.allclose(batched.loss, sequential.loss, atol=1e-5, rtol=0)
        for n in start:
            assert not torch.equal(batched.params[n], start[n]), n  # every parameter was trained
            assert (batched.params[n] - sequential.params[n]).abs().max().item() <= 1e-5, (chunk, n)


def test_the_training_settings_name_the_models_the_engine_builds():
    assert tuple(MODELS) == train_config.MODELS


def parameter_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def test_width_scales_the_mlps_hidden_units_and_lenets_channels_and_leaves_width_1_as_it_was():
    narrow, usual, wide = (build_model("mlp", (1, 28, 28), 10, 0, torch.float32, w) for w in (0.25, 1.0, 4.0))
    assert [m[1].out_features for m in (narrow, usual, wide)] == [50, 200, 800]
    assert parameter_count(usual) == 784 * 200 + 200 + 200 * 200 + 200 + 200 * 10 + 10
    default = build_model("mlp", (1, 28, 28), 10, 0, torch.float32)
    assert all(torch.equal(a, b) for a, b in zip(default.parameters(), usual.parameters()))
    lenet = build_model("lenet5", (1, 28, 28), 10, 0, torch.float32, 2.0)
    convs = [m for m in lenet.modules() if isinstance(m, nn.Conv2d)]
    linears = [m for m in lenet.modules() if isinstance(m, nn.Linear)]
    assert [c.out_channels for c in convs] == [12, 32] and [f.out_features for f in linears] == [240, 168, 10]


def test_width_applies_to_the_mlp_and_lenet5_only():
    assert TrainConfig(model="lenet5", width=0.5).width == 0.5
    with pytest.raises(ConfigError, match="width scales mlp and lenet5 only"):
        TrainConfig(model="resnet18", width=2.0)
    with pytest.raises(ConfigError, match="width must be > 0"):
        TrainConfig(width=0)
