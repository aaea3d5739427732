"""The trace: a time-indexed client stream stored as per-client piecewise-constant segments."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from driftbench.errors import ConfigError

FORMAT_VERSION = 1
EVENT_KINDS = ("concept", "feature", "label", "arrival")
Segment = tuple[int, tuple[int, int], tuple[int, int], int, int, int]  # start, train window, test window, map, rotation, group
SEGMENT_FIELDS = ("seg_start", "seg_train", "seg_test", "seg_map", "seg_rotation", "seg_group")  # one row per segment


@dataclass(frozen=True)
class DriftEvent:
    """A drift event; evaluators and the scheduler see these, methods never do."""

    round: int
    clients: np.ndarray
    kind: str
    magnitude: float  # mean L1 shift of the affected clients' label distributions


@dataclass(frozen=True, eq=False)
class ClientStream:
    """What clients hold of a trace: per-segment data windows, label maps and rotations (no groups, no events)."""

    train_ptr: np.ndarray
    train_idx: np.ndarray
    test_ptr: np.ndarray
    test_idx: np.ndarray
    seg_ptr: np.ndarray
    seg_train: np.ndarray
    seg_test: np.ndarray
    seg_map: np.ndarray
    seg_rotation: np.ndarray
    label_maps: np.ndarray

    @property
    def num_classes(self) -> int:
        """Number of label classes after label maps."""
        return int(self.label_maps.shape[1])

    def _window(self, kind: str, seg: int) -> np.ndarray:
        ptr: np.ndarray = getattr(self, f"{kind}_ptr")
        idx: np.ndarray = getattr(self, f"{kind}_idx")
        bounds: np.ndarray = getattr(self, f"seg_{kind}")
        base = ptr[int(np.searchsorted(self.seg_ptr, seg, side="right")) - 1]
        lo, hi = bounds[seg]
        return idx[base + lo : base + hi]

    def train_indices(self, seg: int) -> np.ndarray:
        """Pool indices of segment ``seg``'s training window."""
        return self._window("train", seg)

    def test_indices(self, seg: int) -> np.ndarray:
        """Pool indices of segment ``seg``'s test samples."""
        return self._window("test", seg)

    def train_labels(self, seg: int, pool_y: np.ndarray) -> np.ndarray:
        """Labels of segment ``seg``'s train window after its label map."""
        labels: np.ndarray = self.label_maps[self.seg_map[seg]][pool_y[self.train_indices(seg)]]
        return labels


@dataclass(frozen=True, eq=False)
class Trace:
    """Per-client arrival-ordered sample sequences plus segments over them.

    Client ``c`` owns segments ``seg_ptr[c]:seg_ptr[c+1]`` sorted by ``seg_start``; the first
    starts at round 0 and each lasts until the next. A segment's train window is the slice
    ``seg_train[s]`` of the client's train sequence ``train_idx[train_ptr[c]:train_ptr[c+1]]``
    (likewise test), and it fixes the label map ``label_maps[seg_map[s]]``, the rotation in
    degrees and the ground-truth group (-1 where the trace defines none).
    """

    info: dict[str, Any]
    train_ptr: np.ndarray
    train_idx: np.ndarray
    test_ptr: np.ndarray
    test_idx: np.ndarray
    seg_ptr: np.ndarray
    seg_start: np.ndarray
    seg_train: np.ndarray
    seg_test: np.ndarray
    seg_map: np.ndarray
    seg_rotation: np.ndarray
    seg_group: np.ndarray
    label_maps: np.ndarray
    event_round: np.ndarray
    event_ptr: np.ndarray
    event_clients: np.ndarray
    event_magnitude: np.ndarray

    def arrays(self) -> dict[str, np.ndarray]:
        """Every array field by name, in declaration order."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "info"}

    @property
    def name(self) -> str:
        """The trace's name (a catalog name or the file it was loaded from)."""
        name: str = self.info["name"]
        return name

    @property
    def rounds(self) -> int:
        """Number of rounds the trace covers."""
        return int(self.info["rounds"])

    @property
    def num_clients(self) -> int:
        """Number of clients."""
        return len(self.seg_ptr) - 1

    @property
    def num_classes(self) -> int:
        """Number of label classes after label maps."""
        return int(self.label_maps.shape[1])

    @property
    def newcomers(self) -> int:
        """How many clients (the last ones) join only after the trace's rounds (``ClientParams.newcomers``)."""
        return int(self.info.get("params", {}).get("newcomers", 0))

    @property
    def newcomer_epochs(self) -> float:
        """Local epochs a newcomer trains its placed model before it is tested (``ClientParams.newcomer_epochs``)."""
        return float(self.info.get("params", {}).get("newcomer_epochs", 10.0))

    def incumbents(self) -> Trace:
        """The trace without its newcomers: the clients present during its rounds (itself when it has none).

        Drift events keep their incumbent clients and the whole trace's magnitudes.
        """
        n = self.num_clients - self.newcomers
        if n == self.num_clients:
            return self
        if n < 2:
            raise ConfigError(
                f"trace {self.name}: newcomers={self.newcomers} leaves {n} of its {self.num_clients} clients to train; "
                f"allowed: 0..{self.num_clients - 2}"
            )
        segs = int(self.seg_ptr[n])
        events = [replace(e, clients=e.clients[e.clients < n]) for e in self.events()]
        events = [e for e in events if len(e.clients)]
        return replace(
            self,
            train_ptr=self.train_ptr[: n + 1],
            train_idx=self.train_idx[: self.train_ptr[n]],
            test_ptr=self.test_ptr[: n + 1],
            test_idx=self.test_idx[: self.test_ptr[n]],
            seg_ptr=self.seg_ptr[: n + 1],
            **{k: getattr(self, k)[:segs] for k in SEGMENT_FIELDS},
            **event_arrays([(e.round, e.clients) for e in events]),
            event_magnitude=np.array([e.magnitude for e in events], dtype=np.float64),
            info={**self.info, "event_kinds": [e.kind for e in events]},
        )

    @property
    def num_groups(self) -> int:
        """Number of ground-truth groups (0 when the trace defines none)."""
        return int(self.seg_group.max()) + 1 if len(self.seg_group) else 0

    @property
    def seg_client(self) -> np.ndarray:
        """The client of every segment."""
        return np.repeat(np.arange(self.num_clients), np.diff(self.seg_ptr))

    def content_hash(self) -> str:
        """SHA-256 over the info (except the name, a label) and every array (name, dtype, shape, bytes)."""
        content = {k: v for k, v in self.info.items() if k != "name"}
        digest = hashlib.sha256(json.dumps(content, sort_keys=True).encode())
        for name, arr in self.arrays().items():
            arr = np.ascontiguousarray(arr)
            digest.update(f"{name}|{arr.dtype.str}|{arr.shape}".encode())
            digest.update(arr.tobytes())
        return digest.hexdigest()

    def segments_at(self, rnd: int) -> np.ndarray:
        """The segment in force for every client at round ``rnd``."""
        started = (self.seg_start <= rnd).astype(np.int64)
        return self.seg_ptr[:-1] + np.add.reduceat(started, self.seg_ptr[:-1]) - 1

    def changed_at(self, rnd: int) -> np.ndarray:
        """Clients whose segment starts at ``rnd`` (every client at round 0)."""
        if rnd == 0:
            return np.arange(self.num_clients)
        changed: np.ndarray = self.seg_client[self.seg_start == rnd]
        return changed

    def groups_at(self, rnd: int) -> np.ndarray:
        """Ground-truth group of every client at ``rnd`` (-1 = none)."""
        groups: np.ndarray = self.seg_group[self.segments_at(rnd)]
        return groups

    @property
    def stream(self) -> ClientStream:
        """The clients' data windows and transforms, without ground truth or drift events."""
        return ClientStream(*(getattr(self, f.name) for f in fields(ClientStream)))

    def train_indices(self, seg: int) -> np.ndarray:
        """Pool indices of segment ``seg``'s training window."""
        return self.stream.train_indices(seg)

    def test_indices(self, seg: int) -> np.ndarray:
        """Pool indices of segment ``seg``'s test samples."""
        return self.stream.test_indices(seg)

    def train_labels(self, seg: int, pool_y: np.ndarray) -> np.ndarray:
        """Labels of segment ``seg``'s train window after its label map."""
        return self.stream.train_labels(seg, pool_y)

    def label_distribution(self, seg: int, pool_y: np.ndarray) -> np.ndarray:
        """Normalised label histogram of segment ``seg``'s train window after its label map."""
        return label_distribution(self.train_labels(seg, pool_y), self.num_classes)

    def events(self) -> list[DriftEvent]:
        """The drift events in round order."""
        return [
            DriftEvent(
                int(self.event_round[e]),
                self.event_clients[self.event_ptr[e] : self.event_ptr[e + 1]],
                self.info["event_kinds"][e],
                float(self.event_magnitude[e]),
            )
            for e in range(len(self.event_round))
        ]


class TraceBuilder:
    """Collects a generator's clients, segments and events, then builds a validated Trace."""

    def __init__(self, num_clients: int, rounds: int, num_classes: int) -> None:
        self.num_clients, self.rounds, self.num_classes = num_clients, rounds, num_classes
        self._train: list[np.ndarray | None] = [None] * num_clients
        self._test: list[np.ndarray | None] = [None] * num_clients
        self._segments: list[list[Segment]] = [[] for _ in range(num_clients)]
        self._maps: dict[bytes, int] = {}
        self._events: list[tuple[int, np.ndarray, str]] = []

    def samples(self, client: int, train: np.ndarray, test: np.ndarray) -> None:
        """Set ``client``'s arrival-ordered train and test pool indices."""
        self._train[client] = np.asarray(train, dtype=np.int64)
        self._test[client] = np.asarray(test, dtype=np.int64)

    def segment(
        self,
        client: int,
        start: int,
        *,
        train: tuple[int, int] | None = None,
        test: tuple[int, int] | None = None,
        label_map: np.ndarray | None = None,
        rotation: int = 0,
        group: int = -1,
    ) -> None:
        """Start a segment for ``client`` at round ``start``; windows default to all samples."""
        mapping = np.arange(self.num_classes) if label_map is None else np.asarray(label_map, dtype=np.int64)
        map_id = self._maps.setdefault(mapping.tobytes(), len(self._maps))
        train_ids, test_ids = self._train[client], self._test[client]
        assert train_ids is not None and test_ids is not None, "samples() comes before segment()"
        n_train, n_test = len(train_ids), len(test_ids)
        self._segments[client].append((start, train or (0, n_train), test or (0, n_test), map_id, rotation % 360, group))

    def phases(
        self, client: int, starts: list[int], trains: list[np.ndarray], tests: list[np.ndarray], groups: list[int]
    ) -> None:
        """Give ``client`` consecutive sample blocks; from round ``starts[j]`` its windows are exactly block ``j``."""
        self.samples(client, np.concatenate(trains), np.concatenate(tests))
        train_ends, test_ends = np.cumsum([0, *map(len, trains)]), np.cumsum([0, *map(len, tests)])
        for j, start in enumerate(starts):
            train = (int(train_ends[j]), int(train_ends[j + 1]))
            self.segment(client, start, train=train, test=(int(test_ends[j]), int(test_ends[j + 1])), group=groups[j])

    def switches(
        self,
        first: np.ndarray,
        moves: list[tuple[int, np.ndarray, np.ndarray]],
        data: Callable[[int, int], tuple[np.ndarray, np.ndarray]],
    ) -> None:
        """Client c holds block ``data(c, first[c])`` (its group); at ``(rnd, movers, to)`` ``movers[i]`` moves to ``to[i]``.

        ``moves`` come in round order; blocks are drawn client by client, each client's in round order.
        """
        held: list[list[tuple[int, int]]] = [[(0, int(g))] for g in first]
        for rnd, movers, to in moves:
            for client, group in zip(movers, to, strict=True):
                held[client].append((rnd, int(group)))
        for client, phases in enumerate(held):
            blocks = [data(client, group) for _, group in phases]
            starts, groups = [rnd for rnd, _ in phases], [group for _, group in phases]
            self.phases(client, starts, [b[0] for b in blocks], [b[1] for b in blocks], groups)
        for rnd, movers, _ in moves:
            if len(movers):
                self.event(rnd, movers, "label")

    def event(self, rnd: int, clients: np.ndarray, kind: str) -> None:
        """Record a drift event at ``rnd`` affecting ``clients``."""
        if kind not in EVENT_KINDS:
            raise ValueError(f"event kind {kind!r} not in {EVENT_KINDS}")
        self._events.append((rnd, np.sort(np.asarray(clients, dtype=np.int64)), kind))

    def build(self, info: dict[str, Any], pool_y: np.ndarray) -> Trace:
        """Assemble the arrays, compute event magnitudes from ``pool_y`` and return the Trace."""
        segs = [sorted(s, key=lambda t: t[0]) for s in self._segments]
        if any(not s or s[0][0] != 0 for s in segs):
            raise ValueError("every client needs a segment starting at round 0")
        flat = [t for s in segs for t in s]
        maps = np.frombuffer(b"".join(self._maps), dtype=np.int64).reshape(len(self._maps), self.num_classes)
        events = sorted(self._events, key=lambda e: e[0])
        trains = [t for t in self._train if t is not None]
        tests = [t for t in self._test if t is not None]
        assert len(trains) == len(tests) == self.num_clients  # each client has a segment, and segment() needs samples()
        arrays = {
            "train_ptr": np.concatenate([[0], np.cumsum([len(t) for t in trains])]).astype(np.int64),
            "train_idx": np.concatenate(trains).astype(np.int64),
            "test_ptr": np.concatenate([[0], np.cumsum([len(t) for t in tests])]).astype(np.int64),
            "test_idx": np.concatenate(tests).astype(np.int64),
            "seg_ptr": np.concatenate([[0], np.cumsum([len(s) for s in segs])]).astype(np.int64),
            "seg_start": np.array([t[0] for t in flat], dtype=np.int64),
            "seg_train": np.array([t[1] for t in flat], dtype=np.int64).reshape(-1, 2),
            "seg_test": np.array([t[2] for t in flat], dtype=np.int64).reshape(-1, 2),
            "seg_map": np.array([t[3] for t in flat], dtype=np.int64),
            "seg_rotation": np.array([t[4] for t in flat], dtype=np.int64),
            "seg_group": np.array([t[5] for t in flat], dtype=np.int64),
            "label_maps": maps,
            **event_arrays([(e[0], e[1]) for e in events]),
            "event_magnitude": np.zeros(len(events)),
        }
        info = {**info, "rounds": self.rounds, "event_kinds": [e[2] for e in events]}
        trace = Trace(info, **arrays)
        return replace(trace, event_magnitude=np.array([event_shift(trace, e, pool_y) for e in trace.events()]))


def event_arrays(events: list[tuple[int, np.ndarray]]) -> dict[str, np.ndarray]:
    """A trace's ``event_round``, ``event_ptr`` and ``event_clients`` from (round, clients) pairs in round order."""
    return {
        "event_round": np.array([rnd for rnd, _ in events], dtype=np.int64),
        "event_ptr": np.concatenate([[0], np.cumsum([len(c) for _, c in events])]).astype(np.int64),
        "event_clients": np.concatenate([c for _, c in events] or [np.zeros(0, np.int64)]),
    }


def event_shift(trace: Trace, event: DriftEvent, pool_y: np.ndarray) -> float:
    """Mean L1 distance between affected clients' label distributions just before and at the event."""
    if len(event.clients) == 0 or event.round == 0:
        return 0.0
    return float(np.mean(client_shifts(trace, event, pool_y)))


def client_shifts(trace: Trace, event: DriftEvent, pool_y: np.ndarray) -> np.ndarray:
    """L1 distance between each affected client's label distribution just before and at the event."""
    if event.round == 0:
        return np.zeros(len(event.clients))
    before, after = trace.segments_at(event.round - 1), trace.segments_at(event.round)
    return np.array(
        [l1_shift(trace.label_distribution(before[c], pool_y), trace.label_distribution(after[c], pool_y)) for c in event.clients]
    )


def label_distribution(labels: np.ndarray, num_classes: int) -> np.ndarray:
    """Normalised histogram of integer labels in [0, num_classes); zeros when empty."""
    labels = np.asarray(labels, dtype=int)
    if labels.size and (labels.min() < 0 or labels.max() >= num_classes):
        raise ValueError(f"labels must lie in [0, {num_classes})")
    counts = np.bincount(labels, minlength=num_classes).astype(float)
    return counts / labels.size if labels.size else counts


def l1_shift(before: np.ndarray, after: np.ndarray) -> float:
    """L1 distance between two normalised label histograms."""
    return float(np.abs(np.asarray(before, dtype=float) - np.asarray(after, dtype=float)).sum())
