"""Precision is a recorded training setting: fp32 keeps TF32 off, tf32 turns it on, bf16 autocasts every model pass."""

import json

import pytest
import torch

from driftbench.cli import main
from driftbench.engine.precision import evaluation, float32_math
from driftbench.record.files import config_digest
from tests.test_bad_input import TINY

BACKENDS = (torch.backends.cuda.matmul, torch.backends.cudnn.conv, torch.backends.cudnn.rnn)


@pytest.mark.parametrize("precision,expected", [("fp32", "ieee"), ("bf16", "ieee"), ("tf32", "tf32")])
def test_float32_math_sets_tf32_only_for_tf32_and_restores_the_settings(precision, expected):
    before = [b.fp32_precision for b in BACKENDS]
    with pytest.raises(RuntimeError, match="inside"):
        with float32_math(precision):
            assert [b.fp32_precision for b in BACKENDS] == [expected] * 3
            raise RuntimeError("inside")
    assert [b.fp32_precision for b in BACKENDS] == before


def test_bf16_evaluation_autocasts_matmuls_and_fp32_does_not():
    a = torch.ones(4, 4)
    with evaluation("bf16", torch.device("cpu")):
        assert (a @ a).dtype == torch.bfloat16
    with evaluation("fp32", torch.device("cpu")):
        assert (a @ a).dtype == torch.float32


def test_a_bf16_run_records_its_precision_and_is_another_experiment(tmp_path, capsys):
    # ifca asks for losses, flexcfl for gradients and cflgt for classifier features: every evaluating pass runs in bf16
    methods = "fedavg,ifca,flexcfl,cflgt"
    for precision in ("fp32", "bf16"):
        args = ["run", "--trace", "label-swap", "--method", methods, "--out", str(tmp_path / precision), "--quiet", *TINY]
        assert main([*args, "--set", f"precision={precision}"]) == 0
    capsys.readouterr()
    for method in methods.split(","):
        configs = [json.loads((tmp_path / p / "label-swap" / method / "seed0/config.json").read_text()) for p in ("fp32", "bf16")]
        assert [c["train"]["precision"] for c in configs] == ["fp32", "bf16"]
        assert config_digest(configs[0]) != config_digest(configs[1])
        summary = json.loads((tmp_path / "bf16/label-swap" / method / "seed0/summary.json").read_text())
        assert summary["status"] == "ok" and 0 <= summary["final_accuracy"] <= 1
