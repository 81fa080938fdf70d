"""What the runs list shows of each run: its row, and its state (running, stalled, finished, killed,
crashed, stopped, ...: see :mod:`tuiloss.core.analysis.state`).

Headless: :func:`list_rows` computes the rows that the
:class:`~tuiloss.ui.widgets.run_list.RunList` widget shows.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from statistics import median
from typing import Collection, Mapping

from tuiloss.core.analysis.display import fmt_value
from tuiloss.core.analysis.state import RunState
from tuiloss.core.engine import Options, ReadResult, apply_result
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

    def found(self, run_id: str, mtime: float | None) -> None:
        """A run seen for the first time; its file's mtime stands for its last growth."""
        self[run_id] = Activity(mtime if mtime else None)

    def grew(self, run_id: str, now: float) -> None:
        self.setdefault(run_id, Activity()).grew(now)

    def since_last(self, now: float) -> float | None:
        """Seconds since any run last grew, ``None`` before the first point."""
        lasts = [a.last for a in self.values() if a.last is not None]
        return now - max(lasts) if lasts else None


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
    if activity.jobs.update(store, activity, now, lambda run: row_state(run, activity.get(run.id), now)):
        activity.jobs.hide_folded(selection)  # a job is one curve: its lead rank's
    return new


def row_state(run: Run, activity: Activity | None, now: float, stalled: bool = False) -> RunState:
    """A run's state as the list shows it (see :mod:`tuiloss.core.analysis.state`): what its log
    says (finished, killed, crashed), else how long it has been silent against its usual interval."""
    last = activity.last if activity is not None else None
    return state_of(run, silence=now - last if last is not None else None,
                    interval=activity.interval if activity is not None else None, stalled=stalled, now=now)


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
    """One row per listed run of ``runs``, numbered as the number keys toggle them.

    Args:
        runs: every run, in discovery order.
        selection: which runs are listed and switched on, their colours.
        plain: swatches are markers (no colour or no braille).
        at_cursor: each shown run's value at the step cursor, or ``None`` without a cursor
            (the rows then show the last values).
        findings: how many findings each run has.
        stalled: runs stalled now; new: runs with a finding not yet seen.
        activity: when each run grew; now: the time to age them at.
    """
    rows = []
    jobs = getattr(activity, "jobs", None)  # per-rank logs: one row per job
    if jobs is not None:
        jobs.update(runs, activity, now, lambda run: row_state(run, activity.get(run.id), now))
    for number, run in selection.numbered(runs):
        if jobs is not None and not jobs.listed(run, selection):
            continue
        name = selection.metric_of(run)
        series = run.series.get(name) if name else None
        if at_cursor is not None:
            value = fmt_value(at_cursor.get(run.id)) if run.id in at_cursor else ""
        elif series is not None and len(series):
            value = fmt_value(float(series.visible()[1][-1]))
        else:
            value = "-"
        rows.append(
            RunRow(
                key=run.id,
                number=str(number % 10) if 0 < number <= 10 else "",
                swatch=selection.swatch(run.id, plain),
                color=rich_color(selection.color(run.id)),
                label=jobs.label(run) if jobs is not None else run.label,
                value=value,
                state=row_state(run, activity.get(run.id), now, stalled=run.id in stalled).state,
                anomalies=findings.get(run.id, 0),
                visible=selection.is_on(run.id),
                new_anomaly=run.id in new,
            )
        )
    return rows
