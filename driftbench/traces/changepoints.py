"""``changepoints``: another tool's drift schedule as a trace; and any trace's ground truth written in that format.

The format is FedDrift's (Jothimurugesan et al., AISTATS 2023, ``data/changepoints/*.cp``): a text
file with one row per time step and one integer concept id per client, separated by whitespace (as
FedDrift writes them) or commas. Concept ids become ground-truth groups, realised as label
permutations (``concept_permutation``) or as quarter turns of the images (FedDrift's MNIST drift).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from driftbench.atomic import atomic_write
from driftbench.config import require
from driftbench.data.pool import Pool
from driftbench.errors import ConfigError
from driftbench.traces import catalog
from driftbench.traces.generators import ClientParams, Generator, register
from driftbench.traces.io import load_trace
from driftbench.traces.label_swap import concept_permutation
from driftbench.traces.model import Trace, TraceBuilder
from driftbench.traces.sampling import draw, train_test_ids

EVENT_KIND = {"labels": "concept", "rotation": "feature"}  # realise -> kind of the drift events
QUARTER_TURNS = 4  # rotation realises concept k as k x 90 degrees
CONCEPT_ID = re.compile(r"-?\d+")


@dataclass(frozen=True)
class ChangepointParams(ClientParams):
    """A changepoint matrix ``file`` realised as label permutations or rotations; each time step lasts ``rounds_per_step`` rounds.

    ``clients = 0`` takes one client per column and ``rounds = 0`` covers every row; otherwise client
    ``c`` follows column ``c mod columns`` and the last row holds to the end.
    """

    file: str = ""
    realise: str = "labels"
    rounds_per_step: int = 1
    clients: int = 0
    rounds: int = 0

    def __post_init__(self) -> None:
        require(bool(self.file), "file: set file=PATH, a changepoint matrix (one row per time step, one concept id per client)")
        require(self.realise in EVENT_KIND, f"realise must be one of {', '.join(EVENT_KIND)}, got {self.realise!r}")
        require(self.rounds_per_step >= 1, f"rounds_per_step must be >= 1, got {self.rounds_per_step}")
        require(self.clients == 0 or self.clients >= 2, f"clients must be 0 (one per column) or >= 2, got {self.clients}")
        require(self.rounds >= 0, f"rounds must be 0 (every row) or >= 1, got {self.rounds}")
        # the shared checks of the sample counts; 0 clients or rounds (taken from the file) are valid here
        ClientParams(max(self.clients, 2), max(self.rounds, 1), self.train_samples, self.test_samples, self.test_fraction)


def schedule_path(file: str) -> Path:
    """``file`` as given or, when there is no such file, the schedule of that name beside the catalog's trace TOMLs."""
    path = Path(file).expanduser()
    bundled = catalog.CATALOG_DIR / path
    return bundled if not path.exists() and not path.is_absolute() and bundled.is_file() else path


def read_changepoints(path: Path) -> np.ndarray:
    """The (time steps, clients) matrix of concept ids in ``path``; blank lines and ``#`` comments are skipped."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such changepoint file") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not a text changepoint file (byte {exc.start} is not UTF-8)") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    rows: list[list[int]] = []
    first = 0
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.partition("#")[0].strip()
        if not line:
            continue
        row = [concept_id(entry, path, number) for entry in (line.split(",") if "," in line else line.split())]
        if rows and len(row) != len(rows[0]):
            raise ConfigError(
                f"{path}, line {number}: {len(row)} concept ids, but line {first} has {len(rows[0])}; one per client on every row"
            )
        first = first or number
        rows.append(row)
    require(bool(rows), f"{path}: empty changepoint file; expected one row per time step with one concept id per client")
    return np.array(rows, dtype=np.int64)


def concept_id(entry: str, path: Path, line: int) -> int:
    """One entry of a changepoint file as a concept id (an integer >= 0)."""
    entry = entry.strip()
    require(bool(CONCEPT_ID.fullmatch(entry)), f"{path}, line {line}: {entry!r} is not an integer concept id")
    require(not entry.startswith("-"), f"{path}, line {line}: concept id {entry} is negative; ids are integers >= 0")
    return int(entry)


def client_schedule(params: ChangepointParams, matrix: np.ndarray, path: Path) -> np.ndarray:
    """The concept of every client (columns) at every time step that starts within the horizon (rows)."""
    clients = params.clients or matrix.shape[1]
    require(clients >= 2, f"{path}: one client column; a trace needs >= 2 clients (set clients=N to repeat the column)")
    steps = math.ceil(params.rounds / params.rounds_per_step) if params.rounds else len(matrix)
    return matrix[np.minimum(np.arange(steps), len(matrix) - 1)][:, np.arange(clients) % matrix.shape[1]]


def realisations(params: ChangepointParams, concepts: int, pool: Pool, path: Path) -> tuple[list[np.ndarray], list[int]]:
    """The label map and the rotation (degrees) of each concept ``0..concepts-1``."""
    identity = np.arange(pool.num_classes)
    if params.realise == "rotation":
        require(
            concepts <= QUARTER_TURNS,
            f"{path}: concept id {concepts - 1} with realise=rotation, which has ids 0..3 (0, 90, 180, 270 degrees); "
            "use realise=labels",
        )
        return [identity] * concepts, [90 * k for k in range(concepts)]
    require(
        concepts <= pool.num_classes,
        f"{path}: concept id {concepts - 1} with realise=labels needs ids below the source's {pool.num_classes} classes",
    )
    return [concept_permutation(k, pool.num_classes) for k in range(concepts)], [0] * concepts


def make(params: ChangepointParams, pool: Pool) -> TraceBuilder:
    """IID samples per client, kept throughout; from step t (round t x rounds_per_step) client c holds its column's concept."""
    path = schedule_path(params.file)
    schedule = client_schedule(params, read_changepoints(path), path)
    maps, rotations = realisations(params, int(schedule.max()) + 1, pool, path)
    rng = np.random.default_rng([params.seed, 0xC9])
    train_ids, test_ids = train_test_ids(rng, pool, params.test_fraction)
    builder = TraceBuilder(schedule.shape[1], params.rounds or len(schedule) * params.rounds_per_step, pool.num_classes)
    for client in range(schedule.shape[1]):
        builder.samples(client, draw(rng, train_ids, params.train_samples), draw(rng, test_ids, params.test_samples))
    for step, row in enumerate(schedule):
        movers = np.arange(len(row)) if step == 0 else np.flatnonzero(row != schedule[step - 1])
        for mover in movers:
            k = int(row[mover])
            builder.segment(int(mover), step * params.rounds_per_step, label_map=maps[k], rotation=rotations[k], group=k)
        if step and len(movers):
            builder.event(step * params.rounds_per_step, movers, EVENT_KIND[params.realise])
    return builder


def ground_truth(trace: Trace, every: int = 1) -> np.ndarray:
    """Row t: the ground-truth group of every client at round t x ``every`` (-1 where a client has none)."""
    require(every >= 1, f"--every must be >= 1, got {every}")
    return np.stack([trace.groups_at(rnd) for rnd in range(0, trace.rounds, every)])


def write_changepoints(matrix: np.ndarray, path: Path) -> None:
    """Write ``matrix`` as a changepoint file: one row per line, entries separated by spaces (FedDrift's format)."""
    text = "".join(" ".join(map(str, row)) + "\n" for row in matrix.tolist())
    atomic_write(Path(path), lambda fh: fh.write(text.encode()))


def named_or_file(name: str, sets: dict[str, str]) -> Trace:
    """The trace ``NAME|FILE`` names (``--set`` values and ``sets["scale"]`` apply to a name); a file's data is not loaded."""
    if not catalog.is_trace_file(name):
        return catalog.generate(catalog.named_spec(name, sets))[0]
    fixed = {k: v for k, v in sets.items() if k != "source.root" and (k, v) != (catalog.SCALE_SET, "embedded")}
    require(not fixed, f"--set, --scale: {name} is a trace file, whose ground truth is fixed; remake it with 'trace make'")
    return load_trace(Path(name))[0]


register(Generator("changepoints", ChangepointParams, make))
