"""The panel's analyses: asked for throttled, run on the insights thread, taken newest first.

Headless: the timer and the way results come back (a Textual message in the app) are the
caller's. The worker analyses frozen snapshots, so the store keeps growing meanwhile.
"""

from __future__ import annotations

import dataclasses
from operator import attrgetter
from typing import Any, Callable

from tuiloss.core.report import Report
from tuiloss.core.store import Run
from tuiloss.ui.insights import InsightsReady, InsightsRequest, InsightsWorker
from tuiloss.ui.snapshot import snapshot_run
from tuiloss.ui.throttle import Throttle

#: Analyses run at most this often; a slow one (millions of points) runs less often still.
INSIGHTS_INTERVAL = 0.5
#: Once loaded, the analyses new reads ask for run at most this often: a log followed line by
#: line is analysed again every two seconds, not with every read (once a second cost a busy log's
#: viewer ~0.8% of a core of its ~5%).
FOLLOW_INTERVAL = 2.0


class InsightsFeed:
    """Requests analyses of the shown runs and keeps the newest report that came back.

    Args:
        set_timer: schedules a callback after a delay, on the caller's thread.
        post: hands a finished analysis back to the caller's thread.
        runs: the runs to analyse, asked at each request (the shown ones).
        metric: the metric chosen by the user, ``None`` for each run's primary one.
        root: the watched folder, when there is one (labels are relative to it).
        by_configuration: False under ``--group-by none``: the seeds of two configurations
            are then compared one to one (see :func:`~tuiloss.core.report.build_report`).
    """

    def __init__(
        self,
        set_timer: Callable[[float, Callable[[], None]], Any],
        post: Callable[[InsightsReady], None],
        runs: Callable[[], list[Run]],
        metric: Callable[[], str | None],
        root: str | None,
        by_configuration: bool = True,
    ) -> None:
        self.worker = InsightsWorker(post)
        self.report: Report | None = None
        self.generation = 0  # of the report taken
        self.sent = 0  # generation of the newest request
        self.seconds = 0.0  # what the last analysis took
        self._runs, self._metric, self._root = runs, metric, root
        self._by_configuration = by_configuration
        self._due = Throttle(set_timer, self._send, self._interval, shortest=0.01,
                             pace=lambda: max(FOLLOW_INTERVAL, self._interval()))
        self.snapshots = Snapshots()

    def start(self) -> None:
        self.worker.start()

    def stop(self) -> None:
        self.worker.stop()

    def request(self, now: bool = False, paced: bool = False) -> None:
        """Analyse again soon: at once if ``now``, else at most every :data:`INSIGHTS_INTERVAL`
        (:data:`FOLLOW_INTERVAL` if ``paced``: new reads of a followed log)."""
        if now:
            self.worker.analyzers.resume()
        self._due.request(now, paced)

    def defer(self, seconds: float = 0.3) -> None:
        """A key's frame is being drawn: the analysis on its way waits between runs until it is
        out (the next urgent :meth:`request`) or ``seconds`` passed."""
        self.worker.analyzers.defer(seconds)

    def restart(self) -> None:
        """The question changed (another metric): drop the report, and any analysis still on its way."""
        self.report = None
        self.generation = self.sent + 1

    def take(self, ready: InsightsReady) -> bool:
        """Keep ``ready``'s report unless a newer one was taken; whether it was kept."""
        if ready.generation < self.generation:
            return False
        self.generation, self.report, self.seconds = ready.generation, ready.report, ready.seconds
        return True

    def _interval(self) -> float:
        return max(INSIGHTS_INTERVAL, 2 * self.seconds)

    def _send(self) -> None:
        self.sent += 1
        runs = self.snapshots.take(self._runs())
        self.worker.request(InsightsRequest(self.sent, runs, self._metric(), self._root, self._by_configuration))


#: What a snapshot copies of a run besides its series (every field the run is made with).
_FIELDS = attrgetter(*(f.name for f in dataclasses.fields(Run) if f.init and f.name != "series"))


class Snapshots:
    """The frozen copy of each run handed to the analysis, kept while the run did not change.

    Taken on the UI thread at every request: with thousands of runs, copying each one again
    (its config, skips, notices and series) held the thread for a fifth of a second per thousand
    runs. A run whose fields compare equal to its last copy's, and whose series hold the same
    buffers at the same lengths and segments, is handed over as that copy again (a snapshot is
    never written to). What the last request did not hold is dropped.

    A run whose :attr:`~tuiloss.core.store.Run.version` did not move since (nothing stored, no
    field set) is compared only where it can change in place: its config, its notices and its
    series' buffers (a tenth of the full comparison, which ten thousand runs made tens of
    milliseconds per request on a loaded machine).
    """

    def __init__(self) -> None:
        self._kept: dict[str, tuple[Run, Run, int]] = {}  # run id -> (the live run, its snapshot, its version)
        self.made = 0  # snapshots made (not kept), for tests

    def take(self, runs: list[Run]) -> list[Run]:
        kept, out, before = {}, [], self._kept
        for run in runs:
            seen = before.get(run.id)
            if seen is not None and seen[0] is run and (
                    _unmoved(run, seen[1]) if seen[2] == run.version else _unchanged(run, seen[1])):
                frozen = seen[1]
            else:
                frozen = snapshot_run(run)
                self.made += 1
            kept[run.id] = (run, frozen, run.version)
            out.append(frozen)
        self._kept = kept
        return out


def _unmoved(run: Run, frozen: Run) -> bool:
    """Whether ``frozen`` still holds what ``run`` does, ``run``'s version being the one it was
    snapshotted at: only what is edited in place without counting a change is compared."""
    try:
        if run.config != frozen.config:
            return False
    except Exception:  # a value that does not compare (an array): copy again
        return False
    notices, held = run.notices, frozen.notices
    if len(notices) != len(held) or (notices and notices[-1] is not held[-1]):
        return False
    return _same_series(run, frozen)


def _unchanged(run: Run, frozen: Run) -> bool:
    """Whether ``frozen`` (a snapshot of ``run``) still holds what ``run`` does."""
    try:
        if _FIELDS(run) != _FIELDS(frozen):
            return False
    except Exception:  # a config or meta value that does not compare (an array): copy again
        return False
    return _same_series(run, frozen)


def _same_series(run: Run, frozen: Run) -> bool:
    """Whether ``frozen``'s series hold the buffers of ``run``'s at the same lengths and segments."""
    live, held = run.series, frozen.series
    if live.keys() != held.keys():
        return False
    for name, series in live.items():
        other = held[name]
        if (series.steps._size != other.steps._size or series.values._size != other.values._size
                or series.steps._data is not other.steps._data or series.values._data is not other.values._data
                or series.segments != other.segments):
            return False
    return True
