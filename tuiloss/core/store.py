"""In-memory storage of every point read: per (run, metric) growable numpy series."""

from __future__ import annotations

import bisect
import itertools
import math
import operator
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterator

import numpy as np

from tuiloss.core.analysis import metrics
from tuiloss.core.analysis.arrays import AHEAD, AHEAD_BYTES, GrowableArray
from tuiloss.core.model import Batch, Notice, SegmentEvent, Skipped


@dataclass(frozen=True, slots=True)
class Segment:
    """A stretch of a series between two discontinuities."""

    start: int  # index of the first point
    start_step: float
    reason: str  # see model.SEGMENT_REASONS


class Series:
    """Every point of one metric of one run, in arrival order, split into segments.

    A new segment starts when the step counter goes back (``reset``) or when the
    file behind the run was truncated, replaced or rotated. A counter that goes
    back at every point (5000, 4999, ..., 1: steps remaining, counted down) is one
    ``backwards`` segment, not a reset per point. Nothing is dropped;
    :meth:`visible` hides the parts of older segments that a newer one overlaps.
    """

    __slots__ = ("steps", "values", "segments", "_pending", "_descending", "_visible_cache", "_restarts_cache", "phase")

    def __init__(self) -> None:
        self.steps = GrowableArray()
        self.values = GrowableArray()
        self.segments: list[Segment] = []
        self._pending: str | None = None
        self._descending = False  # the last point stored is below the one before it
        self._visible_cache: tuple[int, tuple[np.ndarray, np.ndarray]] | None = None
        self._restarts_cache: tuple[tuple, list[int]] | None = None
        #: Where on the growth grid its arrays make room (see :func:`_make_room`): the metrics
        #: of a log grow at different sizes, not all at once.
        self.phase = 0

    def __len__(self) -> int:
        return len(self.steps)

    def mark(self, reason: str) -> None:
        """The next point starts a new segment for ``reason`` (truncated, replaced, ...)."""
        if len(self):
            self._pending = reason

    def extend(
        self, steps: np.ndarray, values: np.ndarray, backlog: float = 0.0, drops: np.ndarray | None = None
    ) -> list[Segment]:
        """Append points; return the segments they opened.

        ``backlog`` (unread bytes per byte that gave these points) sizes the room
        made for what follows, at most 100 times these points. ``drops`` is
        ``step_drops(steps)``, when the caller has it already.
        """
        if not len(steps):
            return []
        if backlog > 0:
            self.steps.reserve(_room(len(self.steps), len(steps), backlog))
            self.values.reserve(_room(len(self.values), len(steps), backlog))
        base = len(self)
        opened: list[Segment] = []
        last_drop = -1  # batch index of the last point that went back
        if base == 0:
            opened.append(Segment(0, float(steps[0]), "start"))
        elif self._pending is not None:
            opened.append(Segment(base, float(steps[0]), self._pending))
        elif steps[0] < self.steps.view[-1]:
            self._went_back(base, 0, steps, opened, self._descending)
            last_drop = 0
        self._pending = None
        for i in step_drops(steps) if drops is None else drops:
            i = int(i)
            self._went_back(base, i, steps, opened, last_drop == i - 1)
            last_drop = i
        self._descending = last_drop == len(steps) - 1
        self._visible_cache = None  # it holds the arrays it was worked out on: no longer the newest
        _make_room(self.steps, len(steps), self.phase + 1)
        self.steps.extend(steps)
        _make_room(self.values, len(values), self.phase)
        self.values.extend(values)
        if backlog > 0:  # a batch like this one follows
            self.steps.page_in(len(steps))
            self.values.page_in(len(values))
        self.segments.extend(opened)
        return opened

    def _went_back(self, base: int, i: int, steps: np.ndarray, opened: list[Segment], after_drop: bool) -> None:
        """The step went back at batch index ``i``: a reset, or one more step of a counter running backwards.

        ``after_drop``: the point before went back too. The segment the first drop opened
        is then a ``backwards`` one, and no new segment starts.
        """
        if not after_drop:
            opened.append(Segment(base + i, float(steps[i]), "reset"))
            return
        last = opened[-1] if opened else self.segments[-1]
        if last.reason == "reset":
            relabelled = Segment(last.start, last.start_step, "backwards")
            if opened:
                opened[-1] = relabelled
            else:
                self.segments[-1] = relabelled

    def extend_values(self, values: np.ndarray, leader: "Series", backlog: float = 0.0) -> None:
        """Append values whose steps ``leader``, which shares this one's steps array, just stored.

        The steps are the same, and so are the segments: those ``leader``'s :meth:`extend`
        opened, and its last one relabelled (a reset found to be a counter running backwards).
        """
        if backlog > 0:
            self.values.reserve(_room(len(self.values), len(values), backlog))
        self._pending = None
        self._descending = leader._descending
        self._visible_cache = None
        _make_room(self.values, len(values), self.phase)
        self.values.extend(values)
        if backlog > 0:
            self.values.page_in(len(values))
        k = len(self.segments)
        if k and self.segments[k - 1] is not leader.segments[k - 1]:
            self.segments[k - 1] = leader.segments[k - 1]
        self.segments.extend(leader.segments[k:])

    def own_steps(self) -> None:
        """Stop sharing the steps array: take a copy of it."""
        self.steps = self.steps.copy()

    def segment_bounds(self) -> Iterator[tuple[Segment, int]]:
        """Each segment with the index one past its last point."""
        for k, seg in enumerate(self.segments):
            end = self.segments[k + 1].start if k + 1 < len(self.segments) else len(self)
            yield seg, end

    def visible(self) -> tuple[np.ndarray, np.ndarray]:
        """Steps and values as the chart shows them: the newest segment wins overlaps.

        Returned in step order. With a single segment this is the stored data itself.
        """
        n = len(self)
        if self._visible_cache is not None and self._visible_cache[0] == n:
            return self._visible_cache[1]
        steps, values = self.steps.view, self.values.view
        if len(self.segments) > 1:
            keep_s: list[np.ndarray] = []
            keep_v: list[np.ndarray] = []
            cut = math.inf
            for seg, end in reversed(list(self.segment_bounds())):
                s, v = steps[seg.start : end], values[seg.start : end]
                if cut != math.inf:
                    mask = s < cut
                    s, v = s[mask], v[mask]
                keep_s.append(s)
                keep_v.append(v)
                if seg.reason != "backwards":  # a counter running down goes over no earlier step again
                    cut = min(cut, seg.start_step)
            steps = np.concatenate(keep_s[::-1])
            values = np.concatenate(keep_v[::-1])
            order = np.argsort(steps, kind="stable")
            steps, values = steps[order], values[order]
        self._visible_cache = (n, (steps, values))
        return steps, values

    def restarts(self) -> list[int]:
        """Indices where a new run starts in the same log: the step went back to the start.

        A ``reset`` segment whose first step is at or before the first logging
        interval of the run so far (``step <= first + (second - first)``) is a
        restart from scratch (runs appended to one file, a sweep printed to one
        stdout); a reset to any later step is a resume from a checkpoint and stays
        a segment of the same run. So is a counter that goes back while the curve
        carries on from where it was (an iteration counted per epoch): a restart
        begins a fresh curve: the old curve moved (by 10% at least) and the new
        one opens nearer its first values than its last ones.
        Truncation, replacement and rotation are never
        restarts: the file's identity changed, not the training.

        Worked out again only when the answer can have changed: a segment was added or the
        last one relabelled, or the newest segment does not hold the three points it is judged
        on yet. Points are only ever appended, and a segment reads none past the three after
        its start, so a series that just grows costs nothing here.
        """
        key = self._restarts_key()
        cached = self._restarts_cache
        if cached is not None and cached[0] == key:
            return list(cached[1])
        found = self._find_restarts()
        self._restarts_cache = (key, found)
        return list(found)

    def _restarts_key(self) -> tuple:
        if not self.segments:
            return (0,)
        last = self.segments[-1]
        return (len(self.segments), last, min(len(self), last.start + _JUDGED_POINTS))

    def _find_restarts(self) -> list[int]:
        found = []
        steps, values = self.steps.view, self.values.view
        first = 0
        for seg, end in self.segment_bounds():
            if seg.reason != "reset" or seg.start == 0:
                continue
            start = float(steps[first])
            interval = float(steps[first + 1] - steps[first]) if seg.start - first > 1 else 0.0
            if seg.start_step > start + max(interval, 0.0):
                continue
            k = max(1, min(3, (seg.start - first) // 2))  # the opening and closing points never overlap
            opening = _level(values[first : first + k])
            before = _level(values[seg.start - k : seg.start])
            new = _level(values[seg.start : min(seg.start + _JUDGED_POINTS, end)])
            if None in (opening, before, new) or not _fresh(opening, before, new):
                continue  # the curve goes on where it was: a counter restarted, not the training
            found.append(seg.start)
            first = seg.start
        return found

    def part(self, start: int, end: int) -> "Series":
        """The points ``[start, end)`` and their segments: one run of a file that holds several.

        The points are not copied: the part reads the stored arrays, which only ever grow past
        their end, so what it holds never changes. It is read, never extended.
        """
        out = Series()
        out.steps = _window(self.steps, start, end)
        out.values = _window(self.values, start, end)
        segments = self.segments
        first = max(bisect.bisect_right(segments, start, key=_start) - 1, 0)  # the segment ``start`` is in
        for k in range(first, len(segments)):
            seg = segments[k]
            seg_end = segments[k + 1].start if k + 1 < len(segments) else len(self)
            if seg.start >= end:
                break
            if seg_end <= start:
                continue
            at = max(seg.start, start)
            reason = "start" if at == start else seg.reason
            out.segments.append(Segment(at - start, float(self.steps.view[at]), reason))
        return out

    @property
    def nbytes(self) -> int:
        """Bytes reserved for this series (a steps array shared with others counts in each)."""
        return self.steps.nbytes + self.values.nbytes


def _reads(part: Series, whole: Series) -> bool:
    """Whether ``part`` reads ``whole``'s arrays as they are now: once ``whole`` grew into new
    ones, a part kept from before would keep the old ones in memory."""
    return part.steps._data.base is whole.steps._data and part.values._data.base is whole.values._data


def _start(segment: Segment) -> int:
    return segment.start


#: Points after a segment's start that :meth:`Series.restarts` reads to judge it (its new level).
_JUDGED_POINTS = 3


def _window(array: GrowableArray, start: int, end: int) -> GrowableArray:
    """``array``'s values ``[start, end)`` without a copy; with no room to grow, an extend would copy."""
    out = GrowableArray.__new__(GrowableArray)
    out._data = array._data[start:end]
    out._size = end - start
    return out


#: How far (relative) a run's curve must have moved for a return to its first level to be told apart.
FRESH_CURVE_CHANGE = 0.1


def _fresh(opening: float, before: float, new: float) -> bool:
    """Whether ``new`` starts a fresh curve: the old one moved, and ``new`` is back near its opening level."""
    scale = max(abs(opening), abs(before))
    moved = abs(opening - before) >= FRESH_CURVE_CHANGE * scale if scale > 0 else False
    return moved and abs(new - opening) < abs(new - before)


def rekey(series: Series, by: Series) -> Series:
    """``series`` with each point's step replaced by ``by``'s value at that step.

    ``by`` is another metric of the same rows (an ``epoch`` or ``consumed_samples``
    column): a point whose step ``by`` has no value at is left out. The points keep
    their order; where the new axis goes back a segment starts, as when read.
    """
    out = Series()
    steps, values = series.steps.view, series.values.view
    at, new = by.visible()
    if not len(steps) or not len(at):
        return out
    where = np.clip(np.searchsorted(at, steps, side="right") - 1, 0, len(at) - 1)
    found = (at[where] == steps) & np.isfinite(new[where])
    out.extend(new[where][found].astype(np.float64), values[found].astype(np.float64))
    return out


def _level(values: np.ndarray) -> float | None:
    """The median of the finite ``values``, None when there are none."""
    values = values[np.isfinite(values)]
    return float(np.median(values)) if len(values) else None


#: Growth of an array that has no backlog to be sized from (a log read as it is written).
_GROWTH = 1.5
#: Phases of the growth grid: the arrays of one log make room at sizes this far apart.
_PHASES = 3


def _make_room(array: GrowableArray, adding: int, phase: int) -> None:
    """Room for ``adding`` more values, made (when needed) on the array's own growth grid.

    The arrays of a log that is read as it is written grow in lockstep (a row adds a point
    to each), and a copy made to grow holds the old array and the new one at once, until
    whoever still reads the old one (the analysis of a snapshot, the chart) lets it go. On
    grids of capacities ``1.5**(k + phase/3)`` the arrays of a log grow at sizes 15% apart,
    one at a time; and past ``AHEAD_BYTES`` an array grows into address space reserved
    ``AHEAD`` times ahead (see :meth:`GrowableArray.reserve_ahead`), so a log growing to tens
    of millions of points is not copied again, nor held twice while it is read.
    """
    needed = len(array) + adding
    if needed <= array.capacity:
        return
    offset = (phase % _PHASES) / _PHASES
    k = math.ceil(math.log(needed * _GROWTH, _GROWTH) - offset)
    capacity = max(int(_GROWTH ** (k + offset)) + 1, needed)
    if capacity * array.view.itemsize >= AHEAD_BYTES and array.reserve_ahead(needed * AHEAD):
        return
    array.reserve(capacity)


def _room(size: int, batch: int, backlog: float) -> int:
    """Capacity for a batch and what the backlog will likely bring, at most 100 batches."""
    return size + int(batch * (1.0 + min(backlog, 100.0)) * 1.02) + 1


_DROP_BLOCK = 1 << 16


def step_drops(steps: np.ndarray) -> np.ndarray:
    """Indices ``i`` where ``steps[i] < steps[i - 1]``: the step counter went back.

    Compared a block at a time into one small buffer: a whole-array comparison
    would allocate fresh memory the size of the batch for a one-bit answer.
    """
    n = len(steps)
    found = []
    less = np.empty(min(max(n - 1, 0), _DROP_BLOCK), dtype=bool)
    for lo in range(1, n, _DROP_BLOCK):
        hi = min(lo + _DROP_BLOCK, n)
        out = less[: hi - lo]
        np.less(steps[lo:hi], steps[lo - 1 : hi - 1], out=out)
        if out.any():
            found.append(np.flatnonzero(out) + lo)
    return np.concatenate(found) if found else np.empty(0, dtype=np.intp)


def is_eval_metric(name: str) -> bool:
    """Whether ``name`` is an evaluation series (see :func:`tuiloss.core.analysis.metrics.is_eval`)."""
    return metrics.is_eval(name)


def choose_primary(names: list[str]) -> str | None:
    """The metric a person means by "the loss" of a run (see :mod:`tuiloss.core.analysis.metrics`)."""
    return metrics.choose_primary(names)


def eval_counterpart(primary: str, names: list[str]) -> str | None:
    """The evaluation series matching ``primary`` (val_loss for loss, ...), if any."""
    return metrics.eval_counterpart(primary, names)


#: Numbers each change of a run (see :attr:`Run.version`); a number is never given twice.
_tick = itertools.count(1)
#: The number of the last change of any run. Runs change on other threads too (the analysis splits
#: its snapshots), and one may store its number late; but a listing that finds here the number it
#: saw last knows that no run changed on its thread since.
_last_change = 0

#: The fields of a run whose change :attr:`Run.version` counts (what a split copies, names or sorts).
_COUNTED = frozenset({"id", "label", "source", "format", "config", "deleted", "metric_override", "path",
                      "last_point_time", "points", "status", "step_override", "unmatched", "series",
                      "part_of", "log_primary", "restarted_after", "notices", "skipped", "meta"})


@dataclass
class Run:
    """One log source: its series, where it came from, and what was skipped.

    A log may hold several runs (training restarted in it) or be re-keyed on another
    step axis (``--step``): :meth:`split` gives the runs it holds, and iterating a
    :class:`Store` gives those. A run split out of a log has ``part_of`` set to the
    log's id, and holds what it needs of the log as plain values (so a frozen copy of
    it never reads the live log from another thread).
    """

    id: str
    label: str
    source: str
    format: str
    config: dict = field(default_factory=dict)
    series: dict[str, Series] = field(default_factory=dict)
    skipped: Counter = field(default_factory=Counter)
    skipped_examples: list[Skipped] = field(default_factory=list)
    unmatched: int = 0
    notices: list[Notice] = field(default_factory=list)
    deleted: bool = False
    metric_override: str | None = None
    path: str = ""  # where its file or folder is now (the id stays where it was found: a moved run keeps it)
    last_point_time: float | None = None
    points: int = 0
    status: str | None = None  # what the run's tracker says: running, finished or failed (MLflow, W&B)
    step_override: str | None = None
    #: what the parsers said of the log beside its points (``Batch.meta``: planned_steps, step_key,
    #: coarse_steps, repeated_steps, held, how the log ends), the newest batch's word winning;
    #: ``held`` is the newest batch's count.
    meta: dict = field(default_factory=dict)
    part_of: str | None = None  # for a run split out of a log: the log's id
    log_primary: str | None = None  # ... and the log's primary metric when it was split
    #: for a run split out of a log: training restarted after it in the same log (it is over)
    restarted_after: bool = False
    #: a new number whenever the run changes: a batch or a segment mark stored, or one of the fields
    #: a split copies or the list shows set (its label after a move, ``deleted``, ...); see
    #: :meth:`Store.listing`. Points added to a series directly, not through :meth:`apply`, are
    #: not counted.
    version: int = field(default=0, init=False, repr=False, compare=False)
    _primary: tuple[int, str | None] | None = field(default=None, init=False, repr=False, compare=False)
    _split: tuple | None = field(default=None, init=False, repr=False, compare=False)
    _parts: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __setattr__(self, name: str, value) -> None:
        object.__setattr__(self, name, value)
        if name in _COUNTED:
            self.changed()

    def changed(self) -> None:
        """Count a change of the run (see :attr:`version`)."""
        global _last_change
        _last_change = number = next(_tick)
        object.__setattr__(self, "version", number)

    @property
    def skipped_lines(self) -> int:
        return sum(self.skipped.values())

    @property
    def primary_metric(self) -> str | None:
        if self.metric_override is not None:
            return self.metric_override
        if self.log_primary in self.series:  # a run of a log: the log's choice, where it has that metric
            return self.log_primary
        # Metrics are only ever added, so their count says whether the choice can have changed.
        cached = self._primary
        if cached is None or cached[0] != len(self.series):
            cached = self._primary = (len(self.series), choose_primary(list(self.series)))
        return cached[1]

    @property
    def eval_metric(self) -> str | None:
        primary = self.primary_metric
        return eval_counterpart(primary, list(self.series)) if primary else None

    @property
    def segments(self) -> list[Segment]:
        primary = self.primary_metric
        series = self.series.get(primary) if primary else None
        return series.segments if series is not None else []

    def apply(self, batch: Batch, now: float | None = None) -> int:
        """Store a parsed batch; return how many points it added.

        Metrics of one of the batch's row groups share one stored copy of the
        steps, for as long as their rows agree.
        """
        self.changed()
        for metric in batch.series:
            if metric not in self.series:
                self.series[metric] = Series()
                self.series[metric].phase = 2 * (len(self.series) - 1)  # its values, and the steps it leads
        holders = Counter(id(series.steps) for series in self.series.values())
        added = 0
        for group in batch.row_groups():
            steps, metrics = group.steps, group.metrics
            if not len(steps):
                continue
            members = [self.series[metric] for metric in metrics]
            shared = members[0].steps
            together = all(series.steps is shared for series in members) and holders[id(shared)] == len(members)
            if not together and len(members) > 1 and not any(len(series) for series in members):
                for series in members[1:]:  # new series of the same rows
                    series.steps = shared
                together = True
            drops = step_drops(steps)
            if together:
                opened = members[0].extend(steps, batch.series[metrics[0]][1], batch.backlog, drops)
                for metric, series in zip(metrics[1:], members[1:]):
                    series.extend_values(batch.series[metric][1], members[0], batch.backlog)
            else:
                for metric, series in zip(metrics, members):
                    if holders[id(series.steps)] > 1:
                        holders[id(series.steps)] -= 1
                        series.own_steps()
                    series.extend(steps, batch.series[metric][1], batch.backlog, drops)
            added += len(steps) * len(members)
        self.skipped.update(batch.skipped)
        if batch.meta or self.meta.get("held"):
            self.meta.update(batch.meta)
            self.meta["held"] = int(batch.meta.get("held", 0))
        room = Batch.MAX_EXAMPLES - len(self.skipped_examples)
        if room > 0:
            self.skipped_examples.extend(batch.examples[:room])
        self.unmatched += batch.unmatched
        self.status = batch.meta.get("status", self.status)
        if added:
            self.points += added
            if now is not None:
                self.last_point_time = now
        return added

    def mark(self, event: SegmentEvent) -> None:
        self.changed()
        self.meta.pop("end", None)  # the file changed: how it ends is read again
        for series in self.series.values():
            series.mark(event.reason)

    def split(self) -> list["Run"]:
        """The runs this log holds, in order: ``[self]``, unless training restarted in it.

        The one place a log becomes runs; the report, the viewer's list, chart and panel
        all read these. The first keeps the log's id and label; the k-th is ``id#k``,
        labelled ``label #k``, and shares the log's config, skips and notices. Recomputed
        only when points or metrics were added (the parts copy no points), so the last
        run grows as the log does and a restart appended later becomes a run of its own.
        With ``step_override`` (``--step``) the runs are those of the re-keyed axis.
        """
        if self.part_of is not None:
            return [self]
        key = (self.points, len(self.series), self.primary_metric, self.step_override)
        cached = self._split
        if cached is None or cached[0] != key:
            parts = self.parts(self.step_override)
            if len(parts) == 1 and parts[0] is self.series:
                runs = [self]
            else:
                runs = [self._run_of(k, series, last=k == len(parts)) for k, series in enumerate(parts, 1)]
            cached = self._split = (key, runs)
        runs = cached[1]
        if runs[0] is not self:
            for k, run in enumerate(runs, 1):
                run.label = self.label if k == 1 else f"{self.label} #{k}"
                run.deleted, run.unmatched, run.metric_override = self.deleted, self.unmatched, self.metric_override
            runs[-1].last_point_time = self.last_point_time
        return runs

    def _run_of(self, k: int, series: dict[str, "Series"], last: bool) -> "Run":
        return Run(
            id=self.id if k == 1 else f"{self.id}#{k}", label=self.label, source=self.source,
            format=self.format, config=self.config, series=series, skipped=self.skipped,
            skipped_examples=self.skipped_examples, unmatched=self.unmatched, notices=self.notices,
            deleted=self.deleted, metric_override=self.metric_override, points=sum(map(len, series.values())),
            step_override=self.step_override, meta=self.meta, part_of=self.id,
            log_primary=self.primary_metric, restarted_after=not last, path=self.path, status=self.status,
        )

    def parts(self, step: str | None = None) -> list[dict[str, Series]]:
        """The runs this log holds, each as its series: one, unless training restarted in it.

        The primary metric's restarts (see :meth:`Series.restarts`) decide how many
        runs there are; every metric is split at its own restarts, its k-th stretch
        going to the k-th run (a metric with fewer restarts is absent from the last
        runs). Without a restart this is ``[self.series]``, no copy made.

        ``step`` (the user's ``--step``) names a metric of the run to use as the
        step axis instead: every series is re-keyed on it first (see :func:`rekey`),
        and the restarts are those of the new axis.
        """
        series = self.series
        primary = self.primary_metric
        if step is not None and step in series:
            by = series[step]
            keyed = {name: rekey(s, by) for name, s in series.items() if name != step}
            series = {name: s for name, s in keyed.items() if len(s)}
            if primary not in series:
                primary = choose_primary(list(series))
        main = series.get(primary) if primary else None
        restarts = main.restarts() if main is not None else []
        if not restarts:
            return [series]
        count = len(restarts) + 1
        out: list[dict[str, Series]] = [{} for _ in range(count)]
        # A stretch that did not change is the same part as before, its visible points worked
        # out once: while the newest run grows, the earlier ones cost nothing (stored series only).
        kept, made = (self._parts if series is self.series else {}), {}
        for name, one in series.items():
            cuts = [0, *one.restarts(), len(one)]
            for k in range(min(len(cuts) - 1, count)):
                end = cuts[k + 1] if k + 1 < count else len(one)
                key = (name, cuts[k], end, len(one.segments) if k + 1 == count else 0)
                part = kept.get(key)
                if part is None or not _reads(part, one):
                    part = one.part(cuts[k], end)
                out[k][name] = made[key] = part
        if series is self.series:
            self._parts = made
        return out


class Store:
    """All runs, by id, in discovery order."""

    def __init__(self) -> None:
        self.runs: dict[str, Run] = {}
        # what the last listing found, per log in order: the log, its version, its runs, their names
        self._listing: list[Run] = []
        self._logs: list[Run] = []
        self._versions: list[int] = []
        self._split: list[list[Run]] = []
        self._names: list[tuple] = []
        self._listed_at = -1  # the number of the last change of a run (see Run.version) when listed

    def __iter__(self) -> Iterator[Run]:
        """Every run, in discovery order: each log's runs (see :meth:`Run.split`) in turn.

        ``runs`` holds the logs as read, by id; the engine stores what it reads there.
        """
        for log in self.runs.values():
            yield from log.split()

    def __len__(self) -> int:
        """How many runs: each log's (see :meth:`Run.split`, kept while the log does not change)."""
        return sum(len(log.split()) for log in self.runs.values())

    def __bool__(self) -> bool:
        return bool(self.runs)  # every log holds one run at least

    def listing(self) -> list[Run]:
        """Every run, as ``list(self)`` gives them, kept up to date at the cost of what changed.

        Only the logs whose :attr:`Run.version` moved since the last listing are split again
        (a log that did not change holds the same runs), and when no run changed at all this is
        a comparison. The list is the same object while it holds the same runs in the same order
        and none of them changed how it is named or found (its label, source or config), so a
        caller may keep what it worked out of it by its identity; it is never written to.
        Points added to a series directly (not through :meth:`Run.apply`) are not seen.
        """
        if self._listed_at == _last_change and len(self._logs) == len(self.runs):
            return self._listing
        logs = list(self.runs.values())
        known = len(self._logs)
        if known > len(logs) or not all(map(operator.is_, self._logs, logs)):  # a log went: from scratch
            self._logs, self._versions, self._split, self._names, known = [], [], [], [], 0
        same = known == len(logs)
        versions = [log.version for log in logs]
        changed = [k for k, now, then in zip(range(known), versions, self._versions) if now != then]
        for k in itertools.chain(changed, range(known, len(logs))):
            runs = logs[k].split()
            names = tuple((run.label, run.source, run.config) for run in runs)
            if k == len(self._split):
                self._split.append(runs)
                self._names.append(names)
                continue
            before = self._split[k]
            if len(before) != len(runs) or not all(map(operator.is_, before, runs)) or self._names[k] != names:
                same = False
            self._split[k], self._names[k] = runs, names
        if not same:
            self._listing = [run for runs in self._split for run in runs]
        # read after the splits: those change the runs split out of a log (labels, ...), never a log
        self._logs, self._versions, self._listed_at = logs, versions, _last_change
        return self._listing

    def find(self, run_id: str) -> Run | None:
        """The run ``run_id`` names (a log's, or one split out of it as ``id#k``)."""
        log = self.runs.get(run_id)
        if log is not None:
            return log.split()[0]
        head, _, number = run_id.rpartition("#")
        log = self.runs.get(head)
        if log is not None and number.isdigit():  # the k-th run of a log: only that log is split
            return next((run for run in log.split() if run.id == run_id), None)
        return None

    def add(self, run: Run) -> Run:
        self.runs.setdefault(run.id, run)
        return self.runs[run.id]

    @property
    def points(self) -> int:
        return sum(run.points for run in self.runs.values())

    @property
    def skipped_lines(self) -> int:
        return sum(run.skipped_lines for run in self.runs.values())
