"""The runs list keeps a row while its run and inputs are the same, and ages its state on time.

A frame makes a new model of the list (:class:`~tuiloss.ui.runstate.ListedRuns`); a row whose run
did not change is the row of the model before, until the clock reaches the time its state would
change (running -> stalled -> stopped): then it is worked out again and shows the new state.
"""

import itertools

import numpy as np

from tuiloss.core.analysis.state import RUNNING_WINDOW, STALL_INTERVALS, STOPPED_AFTER, run_state, state_holds_for
from tuiloss.core.store import Run, Series
from tuiloss.ui.runstate import Activities, ListedRuns

from ui_helpers import CountingSelection


def _runs(count: int) -> list[Run]:
    runs = []
    for k in range(count):
        series = Series()
        series.extend(np.arange(10.0), np.full(10, 1.0 + k))
        runs.append(Run(id=f"r{k}", label=f"r{k}", source=f"r{k}", format="csv", series={"loss": series}, points=10))
    return runs


_NUMBERED: dict = {}


def _model(runs, selection, activity, now, before=None, **changes):
    """The list's model at ``now``, given the one ``before`` as the widget gives it (the app keeps
    the numbered runs, the same list, while the runs and the selection are the same)."""
    options = dict(plain=False, value_at=None, findings={}, stalled=(), new=(), activity=activity, now=now)
    options.update(changes)
    key = (id(runs), selection.version)
    numbered = _NUMBERED.setdefault(key, selection.numbered(runs))
    rows = ListedRuns(numbered, selection, **options)
    if before is not None and rows.same_rows(before):
        rows.take_rows(before)
    list(rows)
    return rows


def test_a_row_is_kept_while_its_run_and_inputs_are_the_same():
    runs, selection, activity = _runs(3), CountingSelection(), Activities()
    for run in runs:
        selection.add(run.id)
        activity.found(run.id, 1000.0)
    first = _model(runs, selection, activity, 1001.0)
    assert selection.asked == 3
    second = _model(runs, selection, activity, 1002.0, first)
    assert selection.asked == 3 and all(a is b for a, b in zip(first, second))
    runs[1].series["loss"].extend(np.array([10.0]), np.array([0.5]))
    runs[1].points = 11  # a read reached it: a new version
    activity.grew(runs[1].id, 1003.0)
    third = _model(runs, selection, activity, 1003.0, second)
    assert selection.asked == 4 and third[1].value == "0.500" and third[0] is second[0] and third[2] is second[2]
    fourth = _model(runs, selection, activity, 1003.5, third, findings={"r2": 1})  # a finding on r2
    assert selection.asked == 5 and fourth[2].anomalies == 1 and fourth[0] is third[0]
    fifth = _model(runs, selection, activity, 1004.0, fourth, findings={"r2": 1}, stalled={"r0"})
    assert selection.asked == 6 and fifth[0].state == "stalled"
    selection.toggle(["r0"], False)  # the selection changed: every row again
    _model(runs, selection, activity, 1004.5, fifth)
    assert selection.asked == 9


def test_a_kept_row_ages_into_stalled_and_stopped_at_its_time():
    runs, selection, activity = _runs(2), CountingSelection(), Activities()
    for run in runs:
        selection.add(run.id)
        activity.found(run.id, None)
    for t in (0.0, 10.0, 20.0, 30.0):  # a point every 10 s: stalled after 100 s of silence
        activity.grew(runs[0].id, t)
    activity.found(runs[1].id, 30.0)  # how often it writes is not known: stopped after 30 min
    stalls_at = 30.0 + max(RUNNING_WINDOW, STALL_INTERVALS * 10.0)
    rows = _model(runs, selection, activity, 31.0)
    assert [row.state for row in rows] == ["running", "running"] and selection.asked == 2
    for now in np.linspace(31.5, stalls_at - 0.01, 50):  # the frames before: nothing worked out again
        rows = _model(runs, selection, activity, float(now), rows)
    assert selection.asked == 2
    rows = _model(runs, selection, activity, stalls_at + 0.01, rows)
    assert [row.state for row in rows] == ["stalled", "running"] and selection.asked == 3
    rows = _model(runs, selection, activity, 30.0 + STOPPED_AFTER - 0.01, rows)
    assert [row.state for row in rows] == ["stalled", "running"]
    rows = _model(runs, selection, activity, 30.0 + STOPPED_AFTER + 0.01, rows)
    assert rows[1].state == "stopped"


def test_a_state_holds_for_as_long_as_the_clock_alone_leaves_it():
    silences = [None, 0.0, 5.0, 59.0, 61.0, 150.0, 1799.0, 1801.0, 5000.0, 100_000.0]
    intervals = [None, 0.5, 10.0, 30.0, 100.0]
    logged = [None, 0.0, 3600.0, 14 * 3600.0 + 1700.0, 14 * 3600.0 + 1900.0]
    for silence, interval, stamped, stalled in itertools.product(silences, intervals, logged, (False, True)):
        state = run_state(silence=silence, interval=interval, stalled=stalled, logged_silence=stamped).state
        holds = state_holds_for(silence=silence, interval=interval, stalled=stalled, logged_silence=stamped)
        for later in (0.0, 0.5, 1.0, 10.0, 100.0, 1000.0, 10_000.0, 100_000.0, holds - 1e-6):
            if not 0 <= later < holds:
                continue

            def aged(value):
                return None if value is None else value + later

            assert run_state(silence=aged(silence), interval=interval, stalled=stalled,
                             logged_silence=aged(stamped)).state == state, (silence, interval, stamped, stalled, later)
