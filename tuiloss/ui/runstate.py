"""What the runs list shows of each run: its row, and its state (running, stalled, finished, killed,
crashed, stopped, ...: see :mod:`tuiloss.core.analysis.state`).

Headless: :func:`list_rows` computes the rows that the
:class:`~tuiloss.ui.widgets.run_list.RunList` widget shows.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from itertools import islice
from statistics import median
from typing import Callable, Collection, Mapping, Sequence

from tuiloss.core.analysis.display import fmt_value
from tuiloss.core.analysis.state import RunState, state_holds_for
from tuiloss.core.engine import Options, ReadResult, apply_result
from tuiloss.core.ranks import rank_name
from tuiloss.core.report import state_of
from tuiloss.core.store import Run, Store
from tuiloss.ui.jobs import JobFold
from tuiloss.ui.selection import Selection, rich_color

class Activity:
    """When a run last grew, and how often it usually does."""

    __slots__ = ("last", "arrivals")

    def __init__(self, last: float | None = None) -> None:
        self.last = last
        self.arrivals: deque[float] = deque(maxlen=32)

    def grew(self, now: float) -> None:
        self.arrivals.append(now)
        self.last = now if self.last is None else max(self.last, now)

    @property
    def interval(self) -> float | None:
        if len(self.arrivals) < 3:
            return None
        times = list(self.arrivals)
        return median(b - a for a, b in zip(times, times[1:]))


class Activities(dict):
    """Per run id, its :class:`Activity`: when the viewer saw it grow; and the jobs the runs make
    (per-rank logs, see :mod:`tuiloss.ui.jobs`), whose ranks are judged by how they grow."""

    def __init__(self) -> None:
        super().__init__()
        self.jobs = JobFold()
        self.newest: float | None = None  # the latest growth of any run (the status line's age)
        self.lively: set[str] = set()  # runs seen to grow a few times while watched: the ones that can stall
        self._logs_seen = 0  # the store's logs looked at for a rank's name so far (logs are only added)
        self._rank_logs: list[str] = []  # the ids of those whose name marks a rank

    def found(self, run_id: str, mtime: float | None) -> None:
        """A run seen for the first time; its file's mtime stands for its last growth."""
        self[run_id] = Activity(mtime if mtime else None)
        self._note(mtime if mtime else None)

    def grew(self, run_id: str, now: float) -> None:
        seen = self.setdefault(run_id, Activity())
        seen.grew(now)
        if len(seen.arrivals) >= 3:
            self.lively.add(run_id)
        self._note(now)

    def lively_runs(self, store: Store) -> list[Run]:
        """The runs that grew a few times while watched (a stall needs a usual interval), found by
        their ids: the once-a-second stall check of ten thousand idle runs costs what one does."""
        out = []
        for run_id in self.lively:
            log = store.runs.get(run_id)
            if log is None:  # a run split out of a log: ``id#k``
                base, _, k = run_id.rpartition("#")
                log = store.runs.get(base)
            run = next((run for run in log.split() if run.id == run_id), None) if log is not None else None
            if run is not None:
                out.append(run)
        return out

    def _note(self, when: float | None) -> None:
        if when is not None and (self.newest is None or when > self.newest):
            self.newest = when

    def ranked(self, store: Store, moved: bool = False) -> list[Run]:
        """The runs whose names mark a rank: what jobs are made of. Each log is looked at once,
        when it is new (or again after a run ``moved``), not each time a read is applied."""
        if moved:
            self._logs_seen, self._rank_logs = 0, []
        logs = store.runs
        if len(logs) != self._logs_seen:
            self._rank_logs += [log_id for log_id, log in islice(logs.items(), self._logs_seen, None)
                                if rank_name(log.source) is not None]
            self._logs_seen = len(logs)
        return [run for log_id in self._rank_logs for run in logs[log_id].split()]

    def since_last(self, now: float) -> float | None:
        """Seconds since any run last grew, ``None`` before the first point."""
        return now - self.newest if self.newest is not None else None


def take_read(store: Store, result: ReadResult, options: Options, now: float, selection: Selection,
              activity: Activities, mtimes: Mapping[str, float | None], *, watching: bool) -> list[str]:
    """Apply one read to ``store``: new runs join the selection and are tracked from their file's
    mtime; while ``watching`` (after the first load), runs that gained points grew ``now``.

    A log's runs are those :meth:`~tuiloss.core.store.Run.split` gives: a restart read in it
    is a new run (its own colour and row), found ``now`` while watching.

    Returns the ids of the runs new to the selection.
    """
    logs = {u.run_id: store.runs[u.run_id] for u in result.updates if u.run_id in store.runs}
    before = {run.id: run.points for log in logs.values() for run in log.split()}
    apply_result(store, result, options, now=now)
    new = [spec.id for spec in result.new_runs if selection.add(spec.id)]
    for run_id in new:
        activity.found(run_id, mtimes.get(run_id))
    for log in logs.values():
        for run in log.split():
            if selection.add(run.id):
                new.append(run.id)
                activity.found(run.id, now if watching else mtimes.get(log.id))
            elif watching and run.points > before.get(run.id, 0):
                activity.grew(run.id, now)
    ranked = activity.ranked(store, moved=bool(result.moved))  # the other runs make no job
    if activity.jobs.update(ranked, activity, now, lambda run: row_state(run, activity.get(run.id), now)):
        activity.jobs.hide_folded(selection)  # a job is one curve: its lead rank's
    return new


def row_state(run: Run, activity: Activity | None, now: float, stalled: bool = False) -> RunState:
    """A run's state as the list shows it (see :mod:`tuiloss.core.analysis.state`): what its log
    says (finished, killed, crashed), else how long it has been silent against its usual interval."""
    return row_state_until(run, activity, now, stalled)[0]


def row_state_until(run: Run, activity: Activity | None, now: float, stalled: bool = False) -> tuple[RunState, float]:
    """:func:`row_state`, and the time until which it stays the same while nothing but the clock
    moves (see :func:`~tuiloss.core.analysis.state.state_holds_for`)."""
    last = activity.last if activity is not None else None
    silence = now - last if last is not None else None
    interval = activity.interval if activity is not None else None
    stamped = run.meta.get("stamped")
    logged = now - stamped if stamped is not None else None
    state = state_of(run, silence=silence, interval=interval, stalled=stalled, now=now)
    return state, now + state_holds_for(silence=silence, interval=interval, stalled=stalled, logged_silence=logged)


@dataclass(frozen=True, slots=True)
class RunRow:
    """What one row shows (already formatted; the widget makes the label safe)."""

    key: str
    number: str  # "1".."9", "0", or "" past ten
    swatch: str
    color: str  # a Rich colour, "" for none
    label: str
    value: str
    state: str
    anomalies: int
    visible: bool
    new_anomaly: bool = False


class ListedRuns(Sequence):
    """The runs list as a model: the listed runs in list order, each row worked out when asked.

    The widget asks for the rows it draws (a dozen on screen of thousands listed) and the key
    of the highlighted one; a row is computed once per model, so a redraw costs what is on
    screen, not what is listed. A model given the one before it (:meth:`take_rows`) keeps its
    rows whose run and inputs did not change, until the time their state would age (a followed
    run among idle ones: its row alone is worked out again at each frame).

    Args:
        numbered: the listed runs with their numbers (:meth:`Selection.numbered`).
        selection: which runs are switched on, their colours.
        plain: swatches are markers (no colour or no braille).
        value_at: each shown run's value at the step cursor (``None`` if it has none there),
            or ``None`` without a cursor: the rows then show the last values. A run it is not
            asked about (switched off, without the metric) shows no value.
        findings: how many findings each run has.
        stalled: runs stalled now; new: runs with a finding not yet seen.
        activity: when each run grew; now: the time to age them at.
    """

    def __init__(
        self,
        numbered: list[tuple[int, Run]],
        selection: Selection,
        *,
        plain: bool,
        value_at: Callable[[Run], tuple[bool, float | None]] | None,
        findings: Mapping[str, int],
        stalled: Collection[str],
        new: Collection[str],
        activity: Mapping[str, Activity],
        now: float,
        jobs=None,
    ) -> None:
        #: What the labels and the order come from, compared by identity: the same objects while
        #: no read was applied and the selection and the jobs did not change (see :meth:`same_rows`).
        self.origin = (numbered, jobs.jobs if jobs is not None else None)
        if jobs is not None and jobs.folded:  # a job's other ranks have no row of their own
            numbered = [(number, run) for number, run in numbered if jobs.listed(run, selection)]
        self._numbered = numbered
        self._jobs = jobs
        self._selection = selection
        self._plain, self._value_at = plain, value_at
        self._findings, self._stalled, self._new = findings, stalled, new
        self._activity, self._now = activity, now
        self._rows: dict[int, RunRow] = {}
        #: what each row was made of, and until when its state holds (see take_rows)
        self._made: dict[int, tuple[tuple, float]] = {}
        self._kept: ListedRuns | None = None
        self._index: dict[str, int] | None = None

    def __len__(self) -> int:
        return len(self._numbered)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        row = self._rows.get(index)
        if row is None:
            number, run = self._numbered[index]
            made = self._inputs(run) if self._value_at is None else None
            kept = self._kept
            if made is not None and kept is not None:
                was = kept._made.get(index)
                if was is not None and was[0] == made and self._now < was[1]:
                    self._made[index] = was
                    row = self._rows[index] = kept._rows[index]
                    return row
            row, until = self._row(number, run)
            self._rows[index] = row
            if made is not None:
                self._made[index] = (made, until)
        return row

    def key(self, index: int) -> str:
        """The id of the run at ``index`` (without working out its row)."""
        return self._numbered[index][1].id

    def same_rows(self, other) -> bool:
        """Whether ``other`` lists the same runs in the same order with the same labels (their
        rows' values and states may differ): a redraw of ten thousand idle runs then measures
        no label and indexes no run again."""
        return (isinstance(other, ListedRuns) and len(other.origin) == len(self.origin)
                and all(a is b for a, b in zip(other.origin, self.origin)))

    def take_index(self, other) -> None:
        """Reuse the index of ``other``, which lists the same runs (:meth:`same_rows`)."""
        if self._index is None and other._index is not None:
            self._index = other._index

    def take_rows(self, other) -> None:
        """Keep the rows ``other`` worked out (it lists the same runs, :meth:`same_rows`) whose run
        and inputs are the same here, while their state holds at this model's time; the model
        before ``other`` is let go."""
        if isinstance(other, ListedRuns) and other is not self:
            other._kept = None
            self._kept = other

    def _inputs(self, run: Run) -> tuple:
        """What a row shows of ``run`` besides its number, label and the clock: the same tuple, the
        same row (a run changes its version with each read that reaches it, see :attr:`Run.version`)."""
        selection, activity, run_id = self._selection, self._activity.get(run.id), run.id
        # the run by identity (the model before holds it): runs compare their series by value
        return (id(run), run.version, run.points, selection.version, selection.metric, self._plain,
                self._findings.get(run_id, 0), run_id in self._stalled, run_id in self._new, activity,
                activity.last if activity is not None else None, len(activity.arrivals) if activity is not None else 0)

    def index_of(self, key: str) -> int | None:
        """Where the run ``key`` is listed, ``None`` if it is not."""
        if self._index is None:
            self._index = {run.id: k for k, (_, run) in enumerate(self._numbered)}
        return self._index.get(key)

    def labels(self) -> list[str]:
        """Every listed run's label, in list order (the widget sizes its label column by them)."""
        return [self._label(run) for _, run in self._numbered]

    def _label(self, run: Run) -> str:
        return self._jobs.label(run) if self._jobs is not None else run.label

    def _row(self, number: int, run: Run) -> tuple[RunRow, float]:
        """The row of ``run``, and until when its state holds."""
        selection = self._selection
        if self._value_at is not None:
            has, at = self._value_at(run) if selection.is_on(run.id) else (False, None)
            value = fmt_value(at) if has else ""
        else:
            name = selection.metric_of(run)
            series = run.series.get(name) if name else None
            value = fmt_value(float(series.visible()[1][-1])) if series is not None and len(series) else "-"
        state, until = row_state_until(run, self._activity.get(run.id), self._now, stalled=run.id in self._stalled)
        return RunRow(
            key=run.id,
            number=str(number % 10) if 0 < number <= 10 else "",
            swatch=selection.swatch(run.id, self._plain),
            color=rich_color(selection.color(run.id)),
            label=self._label(run),
            value=value,
            state=state.state,
            anomalies=self._findings.get(run.id, 0),
            visible=selection.is_on(run.id),
            new_anomaly=run.id in self._new,
        ), until


def list_rows(
    runs: list[Run],
    selection: Selection,
    *,
    plain: bool,
    at_cursor: Mapping[str, float | None] | None,
    findings: Mapping[str, int],
    stalled: Collection[str],
    new: Collection[str],
    activity: Mapping[str, Activity],
    now: float,
) -> list[RunRow]:
    """Every row of :class:`ListedRuns` at once, ``at_cursor`` given as each shown run's value by id."""
    runs = list(runs)
    jobs = fold_jobs(runs, activity, now)
    value_at = None if at_cursor is None else (lambda run: (run.id in at_cursor, at_cursor.get(run.id)))
    return list(ListedRuns(selection.numbered(runs), selection, plain=plain, value_at=value_at, findings=findings,
                           stalled=stalled, new=new, activity=activity, now=now, jobs=jobs))


def fold_jobs(runs: list[Run], activity: Mapping[str, Activity], now: float):
    """The jobs ``runs`` make (per-rank logs, one row each), worked out again if runs were read
    since; ``None`` when ``activity`` keeps no jobs."""
    jobs = getattr(activity, "jobs", None)
    if jobs is not None:
        ranked = [run for run in runs if rank_name(run.source) is not None]  # as take_read gives them
        jobs.update(ranked, activity, now, lambda run: row_state(run, activity.get(run.id), now))
    return jobs
