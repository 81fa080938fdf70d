"""Timing helpers: paired runs against a baseline, medians, and result rows."""

from __future__ import annotations

import gc
import statistics
import time
from dataclasses import dataclass, field
from typing import Callable


class Skip(Exception):
    """A row that cannot be measured here (its baseline library is not installed): the reason."""


@dataclass(frozen=True, slots=True)
class Row:
    """One line of the results table."""

    name: str  # short id, for --only
    what: str
    ours: float  # seconds (or the measured unit)
    baseline: float
    ratio: float  # ours / baseline, median of paired runs
    target: str  # "<= 1.25", "reported"
    passed: bool | None  # None: reported only
    unit: str = "s"
    note: str = ""
    spread: tuple[float, float] = (0.0, 0.0)  # lowest and highest paired ratio


@dataclass(slots=True)
class Timing:
    ours: list[float] = field(default_factory=list)
    baseline: list[float] = field(default_factory=list)

    @property
    def ratios(self) -> list[float]:
        return [a / b for a, b in zip(self.ours, self.baseline)]


def timed(fn: Callable[[], object]) -> float:
    gc.collect()
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def paired(ours: Callable[[], object], baseline: Callable[[], object], repeat: int) -> Timing:
    """Run both ``repeat`` times, alternating which goes first, after one warm-up each."""
    ours()
    baseline()
    timing = Timing()
    for k in range(repeat):
        if k % 2:
            timing.ours.append(timed(ours))
            timing.baseline.append(timed(baseline))
        else:
            timing.baseline.append(timed(baseline))
            timing.ours.append(timed(ours))
    return timing


def ratio_row(name: str, what: str, timing: Timing, limit: float, note: str = "", unit: str = "s") -> Row:
    ratios = timing.ratios
    ratio = statistics.median(ratios)
    return Row(
        name=name,
        what=what,
        ours=statistics.median(timing.ours),
        baseline=statistics.median(timing.baseline),
        ratio=ratio,
        target=f"<= {limit:g}",
        passed=ratio <= limit,
        unit=unit,
        note=note,
        spread=(min(ratios), max(ratios)),
    )


def limit_row(name: str, what: str, value: float, limit: float, target: str, note: str = "", unit: str = "s") -> Row:
    """A row held to an absolute limit: the limit stands as its baseline."""
    return Row(name, what, value, limit, value / limit, target, value <= limit, unit, note)


def median(values: list[float]) -> float:
    return statistics.median(values)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = (len(ordered) - 1) * q
    low = int(k)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (k - low)
