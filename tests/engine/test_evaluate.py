"""Forward-only per-client statistics and per-client gradients against plain module calls."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from driftbench.data.pool import Pool
from driftbench.engine.device_data import DevicePool
from driftbench.engine.evaluate import client_gradients, client_inputs, client_outputs, per_client_mean
from driftbench.engine.features import classifier_name
from driftbench.engine.models import build_model


def setup(model_name="mlp"):
    rng = np.random.default_rng(0)
    pool = Pool("t", rng.random((40, 1, 8, 8), dtype=np.float32), rng.integers(0, 4, 40), 4)
    model = build_model(model_name, pool.input_shape, 4, seed=0, dtype=torch.float64)
    data = DevicePool(pool, torch.device("cpu"), torch.float64)
    bank = {n: torch.stack([p.detach(), p.detach() * 0.5]) for n, p in model.named_parameters()}
    windows = [np.arange(0, 10), np.arange(10, 25), np.arange(25, 40)]
    maps = np.array([[0, 1, 2, 3], [3, 2, 1, 0], [1, 0, 3, 2]])
    rotations = np.array([0, 180, 90])
    return pool, model, data, bank, windows, maps, rotations


def by_hand(pool, model, bank, m, window, label_map, rotation):
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(bank[name][m])
    x = torch.rot90(torch.as_tensor(pool.x[window], dtype=torch.float64), rotation // 90, dims=(-2, -1))
    y = torch.as_tensor(label_map[pool.y[window]])
    return model, x, y


def test_per_client_accuracy_and_loss_match_module_calls():
    pool, model, data, bank, windows, maps, rotations = setup()
    served_by = np.array([1, 0, 1])
    acc = per_client_mean(model, data, bank, served_by, windows, maps, rotations, "accuracy")
    loss = per_client_mean(model, data, bank, served_by, windows, maps, rotations, "loss")
    for c in range(3):
        module, x, y = by_hand(pool, model, bank, served_by[c], windows[c], maps[c], rotations[c])
        with torch.no_grad():
            logits = module(x)
        assert acc[c] == (logits.argmax(1) == y).double().mean().item()
        assert abs(loss[c] - F.cross_entropy(logits, y).item()) < 1e-12


@pytest.mark.parametrize("model_name", ["mlp", "lenet5"])  # written-out backpropagation, torch.func.grad
def test_client_gradients_match_autograd(model_name):
    pool, model, data, bank, windows, maps, rotations = setup(model_name)
    grads = client_gradients(model, data, {n: p[1] for n, p in bank.items()}, windows, maps, rotations)
    assert grads.shape == (3, sum(p.numel() for p in model.parameters()))
    for c in range(3):
        module, x, y = by_hand(pool, model, bank, 1, windows[c], maps[c], rotations[c])
        module.zero_grad()
        F.cross_entropy(module(x), y).backward()
        expected = torch.cat([p.grad.reshape(-1) for p in module.parameters()])
        assert torch.allclose(grads[c], expected, atol=1e-12)


def test_client_outputs_summarize_classifier_inputs_and_probabilities():
    pool, model, data, bank, windows, maps, rotations = setup()
    params = {n: p[1] for n, p in bank.items()}
    assert classifier_name(model) == "5"

    def summary(features, probs, labels):
        return torch.cat([features.mean(0), probs.sum(0), torch.bincount(labels, minlength=4).double()])

    got = client_outputs(model, data, params, windows, maps, rotations, summary)
    for c in range(3):
        module, x, y = by_hand(pool, model, bank, 1, windows[c], maps[c], rotations[c])
        with torch.no_grad():
            features = module[:-1](x)
            probs = torch.softmax(module[-1](features), 1)
        want = torch.cat([features.mean(0), probs.sum(0), torch.bincount(y, minlength=4).double()]).numpy()
        np.testing.assert_allclose(got[c], want, rtol=1e-10, atol=1e-12)
        assert abs(got[c][200:204].sum() - len(windows[c])) < 1e-9  # probabilities sum to one per sample


def test_client_inputs_see_transformed_samples():
    pool, _model, data, _bank, windows, maps, rotations = setup()
    got = client_inputs(data, windows, maps, rotations, lambda x, y: torch.cat([x.sum((0, 1)).reshape(-1), y[:1].double()]))
    for c in range(3):
        _, x, y = by_hand(pool, _model, _bank, 0, windows[c], maps[c], rotations[c])
        np.testing.assert_allclose(got[c], torch.cat([x.sum((0, 1)).reshape(-1), y[:1].double()]).numpy(), rtol=1e-12)
