"""The `driftbench bench engine` workload on Flower's simulation runtime, to compare end-to-end FedAvg time.

FedAvg with driftbench's LeNet-5 on random uint8 3x32x32 images (scaled to [0, 1]): 100 clients of
500 samples, 10 clients per round, one local epoch at batch 50 (10 SGD steps, lr 0.01, momentum
0.9), 20 rounds, no evaluation; each simulated client gets 1 CPU. Not run in CI. Prints one JSON
object: seconds end to end (including the runtime's start-up) and per round.

    pip install -e '.[peers]'
    python benchmarks/peers/flower_fedavg.py                  # Flower, this machine
    driftbench bench engine --model lenet5 --clients 10 --steps 10 --batch 50 --json   # driftbench, same round
"""

from __future__ import annotations

import argparse
import functools
import json
import time

import numpy as np
import torch
import torch.nn.functional as F
from flwr.app import ArrayRecord, ConfigRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp.strategy import FedAvg
from flwr.simulation import run_simulation

from driftbench.engine.models import build_model

SHAPE, CLASSES = (3, 32, 32), 10


def lenet() -> torch.nn.Module:
    """driftbench's LeNet-5 with its seed-0 initialisation."""
    return build_model("lenet5", SHAPE, CLASSES, 0, torch.float32)


@functools.lru_cache(maxsize=None)
def partition(client: int, samples: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Client ``client``'s uint8 images and labels, generated once per worker process."""
    rng = np.random.default_rng([0, client])
    x = torch.from_numpy(rng.integers(0, 256, (samples, *SHAPE), dtype=np.uint8))
    return x, torch.from_numpy(rng.integers(0, CLASSES, samples))


client_app = ClientApp()


@client_app.train()
def train(msg: Message, context: Context) -> Message:
    """One local epoch of SGD from the received model, as a plain PyTorch loop."""
    config = msg.content["config"]
    model = lenet()
    model.load_state_dict(msg.content["arrays"].to_torch_state_dict())
    optimizer = torch.optim.SGD(model.parameters(), lr=config["lr"], momentum=config["momentum"])
    x, y = partition(int(context.node_config["partition-id"]), int(config["samples"]))
    order = torch.randperm(len(y))
    batch = int(config["batch"])
    for start in range(0, len(y), batch):
        rows = order[start : start + batch]
        optimizer.zero_grad()
        F.cross_entropy(model(x[rows].float() / 255.0), y[rows]).backward()
        optimizer.step()
    content = RecordDict({"arrays": ArrayRecord(model.state_dict()), "metrics": MetricRecord({"num-examples": len(y)})})
    return Message(content=content, reply_to=msg)


def server_app(args: argparse.Namespace, stamps: list[float]) -> ServerApp:
    """FedAvg over ``args.per_round`` sampled clients; ``stamps`` gets the time before round 1 and after each round."""
    app = ServerApp()

    @app.main()
    def main(grid: Grid, context: Context) -> None:
        strategy = FedAvg(fraction_train=args.per_round / args.clients, fraction_evaluate=0.0,
                          min_train_nodes=args.per_round, min_available_nodes=args.clients)
        config = ConfigRecord({"lr": 0.01, "momentum": 0.9, "batch": args.batch, "samples": args.samples})
        strategy.start(grid=grid, initial_arrays=ArrayRecord(lenet().state_dict()), num_rounds=args.rounds,
                       train_config=config, evaluate_fn=lambda _round, _arrays: stamps.append(time.perf_counter()))

    return app


def main() -> None:
    """Run the simulation and print its timings as JSON."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--clients", type=int, default=100, help="simulated clients (default 100)")
    p.add_argument("--per-round", type=int, default=10, help="clients sampled per round (default 10)")
    p.add_argument("--samples", type=int, default=500, help="samples per client (default 500)")
    p.add_argument("--batch", type=int, default=50, help="batch size (default 50)")
    p.add_argument("--rounds", type=int, default=20, help="rounds (default 20)")
    p.add_argument("--cpus-per-client", type=float, default=1.0, help="Ray CPUs per simulated client (default 1)")
    args = p.parse_args()
    stamps: list[float] = []
    started = time.perf_counter()
    run_simulation(server_app=server_app(args, stamps), client_app=client_app, num_supernodes=args.clients,
                   backend_config={"client_resources": {"num_cpus": args.cpus_per_client, "num_gpus": 0.0}})
    total = time.perf_counter() - started
    rounds = np.diff(stamps)
    print(json.dumps({
        "framework": "flower", "clients": args.clients, "per_round": args.per_round, "samples": args.samples,
        "batch": args.batch, "rounds": args.rounds, "total_seconds": total, "rounds_seconds": float(rounds.sum()),
        "round_seconds": {"min": float(rounds.min()), "median": float(np.median(rounds))},
    }))


if __name__ == "__main__":
    import flower_fedavg  # Ray workers unpickle the ClientApp by module name, which __main__ is not for them

    flower_fedavg.main()
