"""The performance regression gate: benchmarks record same-process speed ratios, checked against thresholds.json.

A benchmark calls the ``speed_ratio`` fixture with a fast and a slow callable (e.g. the
batched engine and the sequential loop); the fixture times them interleaved in this process
and the test fails when slow/fast falls below ``SLACK`` x the test's committed threshold.
Absolute times are noise on shared machines; a ratio of two timings taken side by side is
not. With ``--benchmark-disable`` nothing is checked (single untimed calls). ``pytest benchmarks --update-thresholds``
writes the measured ratios
into thresholds.json instead of checking them (see the README's "Performance gate").
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest

THRESHOLDS = Path(__file__).with_name("thresholds.json")
SLACK = 0.8  # a ratio may fall 20% below its threshold before the gate fails
MEASURED = pytest.StashKey[dict]()


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--update-thresholds``."""
    parser.addoption(
        "--update-thresholds",
        action="store_true",
        help=f"write the measured speed ratios into {THRESHOLDS.name} instead of checking them",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Start an empty record of measured ratios."""
    config.stash[MEASURED] = {}


def pytest_sessionfinish(session: pytest.Session) -> None:
    """With ``--update-thresholds``, merge the measured ratios into thresholds.json."""
    measured = session.config.stash[MEASURED]
    if session.config.getoption("update_thresholds") and measured:
        data = json.loads(THRESHOLDS.read_text())
        data["thresholds"].update({name: round(ratio, 2) for name, ratio in measured.items()})
        THRESHOLDS.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n")


@pytest.fixture
def speed_ratio(request: pytest.FixtureRequest, benchmark):
    """``speed_ratio(fast, slow, what)``: time both callables interleaved, check slow/fast against its threshold.

    ``fast`` is timed by pytest-benchmark (its stats are the benchmark's); ``slow`` runs
    untimed by it, before each of ``fast``'s rounds, so both see the same machine load.
    The ratio is of the fastest rounds: interference from other processes only adds time, so
    the minimum is the least noisy estimate of each cost. Returns None with ``--benchmark-disable``.
    """

    def measure(fast: Callable[[], object], slow: Callable[[], object], what: str, rounds: int = 5) -> float | None:
        slow_seconds: list[float] = []

        def time_slow() -> None:
            start = time.perf_counter()
            slow()
            slow_seconds.append(time.perf_counter() - start)

        benchmark.pedantic(fast, setup=time_slow, rounds=rounds, warmup_rounds=1)
        if not benchmark.enabled:
            return None
        slow_min, fast_min = min(slow_seconds[1:]), benchmark.stats.stats.min  # slow_seconds[0]: the warm-up round
        ratio = slow_min / fast_min
        benchmark.extra_info.update(speed_ratio=ratio, speed_ratio_of=what, slow_seconds=slow_min, fast_seconds=fast_min)
        print(f"\n{request.node.name}: {what}: {fast_min:.3f} s vs {slow_min:.3f} s, {ratio:.2f}x")
        check(request, ratio, what)
        return ratio

    return measure


def check(request: pytest.FixtureRequest, ratio: float, what: str) -> None:
    """Fail when ``ratio`` is below SLACK x the test's threshold; with --update-thresholds, record it instead."""
    name = request.node.name
    if request.config.getoption("update_thresholds"):
        request.config.stash[MEASURED][name] = ratio
        return
    thresholds = json.loads(THRESHOLDS.read_text())["thresholds"]
    if name not in thresholds:
        pytest.fail(f"{name}: no threshold in {THRESHOLDS}; measure one with 'pytest benchmarks --update-thresholds'")
    threshold = thresholds[name]
    assert ratio >= SLACK * threshold, (
        f"{name}: speed ratio ({what}) {ratio:.2f}x is below {SLACK} x its threshold {threshold:.2f}x in {THRESHOLDS}"
    )
