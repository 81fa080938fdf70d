"""Values that cross module boundaries: parsed batches, skipped lines, segment events."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

#: Why a segment of a series starts.
SEGMENT_REASONS = ("start", "reset", "backwards", "truncated", "replaced", "rotated", "recreated")


@dataclass(frozen=True, slots=True)
class Skipped:
    """A line (or record) that was read but could not be used."""

    line: int | None
    reason: str
    text: str = ""


@dataclass(frozen=True, slots=True)
class RowGroup:
    """Metrics read from the same rows: their points share one steps array.

    The store then keeps one copy of those steps for all of them, for as long as
    their rows agree.
    """

    steps: np.ndarray
    metrics: tuple[str, ...]


@dataclass(slots=True)
class Batch:
    """Points parsed from one chunk of a log, metric by metric, in file order.

    ``series`` maps a metric name to ``(steps, values)``, two float64 arrays of the
    same length. NaN and Inf values are kept: they are findings, not gaps.
    ``groups`` names the metrics that :meth:`add_rows` read from the same rows:
    each of them has the group's ``steps`` array itself in ``series``. A metric in
    no group has steps of its own.

    ``lines`` is how many lines the batch was read from, when the parser knows it
    without counting them (the source counts otherwise). ``backlog`` is how many
    bytes of the file wait unread per byte read for this batch: the store makes
    room for the points they will likely bring, so a big file is not copied over
    and over as its series grow.

    ``meta`` holds what the parser learnt about the log's axis, for the layers
    above to say or use: ``planned_steps`` (the total a line announced, ``Step
    N/M``), ``step_key`` (the counter the steps come from), ``coarse_steps``
    (True when the only axis is a rounded epoch, so lines keep their order at
    repeated steps), ``repeated_steps`` (True when one step carries many values
    of a metric on purpose: one x with many values, not spikes), ``held`` (how
    many lines wait to be placed: an epoch-local counter whose epoch length is
    not known yet), ``end`` (how a text log ends so far: an end marker after its last
    metric line, see :mod:`~tuiloss.core.formats.endings`, or None), ``stamped`` (the
    last wall-clock time a text log printed, seconds since the epoch read as UTC).
    """

    series: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    skipped: Counter = field(default_factory=Counter)
    unmatched: int = 0
    examples: list[Skipped] = field(default_factory=list)
    lines: int | None = None
    backlog: float = 0.0
    groups: list[RowGroup] = field(default_factory=list)
    meta: dict = field(default_factory=dict)

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
            self._ungroup(metric)
        self.series[metric] = (steps, values)

    def add_rows(self, steps: np.ndarray, columns: dict[str, np.ndarray]) -> None:
        """Add metrics read from the same rows: one ``steps`` array for all ``columns``.

        Calls with the same steps array add to one group. A metric already in the
        batch gets these points appended, with steps of its own.
        """
        steps = np.asarray(steps, dtype=np.float64)
        shared = []
        for metric, values in columns.items():
            if metric in self.series:
                self.add(metric, steps, values)
            else:
                self.series[metric] = (steps, np.asarray(values, dtype=np.float64))
                shared.append(metric)
        if not shared:
            return
        for k, group in enumerate(self.groups):
            if group.steps is steps:
                self.groups[k] = RowGroup(steps, group.metrics + tuple(shared))
                return
        self.groups.append(RowGroup(steps, tuple(shared)))

    def row_groups(self) -> list[RowGroup]:
        """Every metric of the batch in one group, in the order of ``series``.

        A metric in none of ``groups`` is a group of its own.
        """
        grouped = {metric: group for group in self.groups for metric in group.metrics}
        out = []
        for metric, (steps, _) in self.series.items():
            group = grouped.get(metric)
            if group is None:
                out.append(RowGroup(steps, (metric,)))
            elif group.metrics[0] == metric:
                out.append(group)
        return out

    def merge(self, other: Batch) -> None:
        grouped = {metric: group.steps for group in other.groups for metric in group.metrics}
        for metric, (steps, values) in other.series.items():
            if metric in grouped:
                self.add_rows(grouped[metric], {metric: values})
            else:
                self.add(metric, steps, values)
        self.skipped.update(other.skipped)
        self.meta.update(other.meta)
        self.unmatched += other.unmatched
        room = self.MAX_EXAMPLES - len(self.examples)
        if room > 0:
            self.examples.extend(other.examples[:room])

    def _ungroup(self, metric: str) -> None:
        for k, group in enumerate(self.groups):
            if metric in group.metrics:
                rest = tuple(name for name in group.metrics if name != metric)
                self.groups[k] = RowGroup(group.steps, rest)
                if not rest:
                    del self.groups[k]
                return


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
