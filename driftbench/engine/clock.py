"""The simulated clock: per-client device profiles, the server's speed and round durations."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

PROFILE_TABLE = Path(__file__).with_name("profiles.csv")
PASSES_PER_TRAINING_SAMPLE = 3  # forward + backward ~ 3 forward passes (FedScale's compute model)
# FIELDING (003 app. C): 1-thread k-means n=1e5 d=1e4 k=10 in 477.8 s;
# server_work.kmeans(30 iterations, 10 restarts) = 7.1e12 FLOPs -> 1.49e10/s
SERVER_FLOPS_PER_SECOND = 1.5e10


@dataclass(frozen=True)
class ClientProfiles:
    """Each client's compute speed and link bandwidths, drawn from the shipped profile table."""

    ms_per_mflop: np.ndarray
    download_bps: np.ndarray
    upload_bps: np.ndarray


def client_profiles(num_clients: int, seed: int) -> ClientProfiles:
    """Assign every client a row of the profile table, deterministically from ``seed``."""
    table = pd.read_csv(PROFILE_TABLE, comment="#")
    rows = np.random.default_rng([seed, 3]).integers(0, len(table), num_clients)
    return ClientProfiles(
        table["ms_per_mflop"].to_numpy()[rows],
        table["download_bps"].to_numpy()[rows],
        table["upload_bps"].to_numpy()[rows],
    )


def client_seconds(
    profiles: ClientProfiles,
    clients: np.ndarray,
    trained_samples: np.ndarray,
    forward_flops: float,
    download_bytes: np.ndarray,
    upload_bytes: np.ndarray,
) -> np.ndarray:
    """Seconds each client spends computing and transferring in a round."""
    transfer = 8 * download_bytes / profiles.download_bps[clients] + 8 * upload_bytes / profiles.upload_bps[clients]
    seconds: np.ndarray = compute_seconds(profiles, clients, trained_samples, forward_flops) + transfer
    return seconds


def compute_seconds(
    profiles: ClientProfiles, clients: np.ndarray, trained_samples: np.ndarray, forward_flops: float
) -> np.ndarray:
    """Seconds each client computes for ``trained_samples`` (in training passes over one sample) at its profile speed."""
    seconds: np.ndarray = (
        PASSES_PER_TRAINING_SAMPLE * trained_samples * forward_flops / 1e6 * profiles.ms_per_mflop[clients] / 1e3
    )
    return seconds


def server_seconds(flops: int) -> float:
    """Seconds the server takes for ``flops`` of counted work."""
    return flops / SERVER_FLOPS_PER_SECOND


def round_seconds(client_times: np.ndarray, server_seconds: float) -> float:
    """A round lasts as long as its slowest participant plus the server's clustering time."""
    return float(client_times.max(initial=0.0)) + server_seconds
