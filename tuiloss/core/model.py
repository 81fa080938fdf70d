"""Values that cross module boundaries: parsed batches, skipped lines, segment events."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

#: Why a segment of a series starts.
SEGMENT_REASONS = ("start", "reset", "truncated", "replaced", "rotated", "recreated")


@dataclass(frozen=True, slots=True)
class Skipped:
    """A line (or record) that was read but could not be used."""

    line: int | None
    reason: str
    text: str = ""


@dataclass(slots=True)
class Batch:
    """Points parsed from one chunk of a log, metric by metric, in file order.

    ``series`` maps a metric name to ``(steps, values)``, two float64 arrays of the
    same length. NaN and Inf values are kept: they are findings, not gaps.

    ``lines`` is how many lines the batch was read from, when the parser knows it
    without counting them (the source counts otherwise). ``backlog`` is how many
    bytes of the file wait unread per byte read for this batch: the store makes
    room for the points they will likely bring, so a big file is not copied over
    and over as its series grow.
    """

    series: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    skipped: Counter = field(default_factory=Counter)
    unmatched: int = 0
    examples: list[Skipped] = field(default_factory=list)
    lines: int | None = None
    backlog: float = 0.0

    MAX_EXAMPLES = 20

    @property
    def points(self) -> int:
        return sum(len(steps) for steps, _ in self.series.values())

    def skip(self, reason: str, line: int | None = None, text: str = "", count: int = 1) -> None:
        self.skipped[reason] += count
        if len(self.examples) < self.MAX_EXAMPLES:
            self.examples.append(Skipped(line, reason, text[:200]))

    def add(self, metric: str, steps, values) -> None:
        """Append points for ``metric`` (merging with any already in the batch)."""
        steps = np.asarray(steps, dtype=np.float64)
        values = np.asarray(values, dtype=np.float64)
        if not len(steps):
            return
        old = self.series.get(metric)
        if old is not None:
            steps = np.concatenate((old[0], steps))
            values = np.concatenate((old[1], values))
        self.series[metric] = (steps, values)

    def merge(self, other: Batch) -> None:
        for metric, (steps, values) in other.series.items():
            self.add(metric, steps, values)
        self.skipped.update(other.skipped)
        self.unmatched += other.unmatched
        room = self.MAX_EXAMPLES - len(self.examples)
        if room > 0:
            self.examples.extend(other.examples[:room])


def batch_from_rows(rows: dict[str, tuple[list[float], list[float]]]) -> Batch:
    """Build a batch from per-metric Python lists of steps and values."""
    batch = Batch()
    for metric, (steps, values) in rows.items():
        if steps:
            batch.series[metric] = (
                np.asarray(steps, dtype=np.float64),
                np.asarray(values, dtype=np.float64),
            )
    return batch


@dataclass(frozen=True, slots=True)
class SegmentEvent:
    """The file behind a run changed identity: what follows starts a new segment."""

    reason: str
    detail: str = ""


@dataclass(frozen=True, slots=True)
class Notice:
    """Something the user should be told about a source (unreadable, deleted, ...)."""

    level: str  # "info" | "warning" | "error"
    message: str


@dataclass(frozen=True, slots=True)
class RunSpec:
    """A run found on disk, before any of it is read."""

    id: str  # absolute path of the file or owned folder
    path: str
    source: str  # path relative to the root it was found under
    format: str
    config: dict = field(default_factory=dict, hash=False, compare=False)
