"""Which findings are news: known vs new anomalies, live stalls, and the marks findings put on the chart.

The viewer delegates this to :class:`Findings`, which holds no widget and imports no Textual,
so it is tested on its own. A finding is known once it has been shown; what was already in
the logs when they were first loaded is history, not news.

Live findings settle: a finding that was announced and then changes is announced again as
``updated`` (a spike that has since recovered, a drift whose stretch moved), and one that
the analysis no longer makes is announced as ``withdrawn`` (an early drift that more data
showed to be noise) and loses its NEW mark.
"""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType
from typing import Iterable, Mapping

from tuiloss.core.analysis import Anomaly, stall_anomaly
from tuiloss.core.analysis.anomalies import counts_as_anomaly
from tuiloss.core.analysis.display import finite
from tuiloss.core.report import Report, RunReport, eval_metrics, state_of
from tuiloss.core.store import Run
from tuiloss.ui.chartdata import Mark
from tuiloss.ui.runstate import Activity

#: An anomaly's identity across re-analyses: (run id, kind, onset in thousands of steps).
AnomalyKey = tuple[str, str, "int | None"]


def anomaly_key(run_id: str, anomaly: Anomaly) -> AnomalyKey:
    """Identity of a finding across re-analyses (its onset may be refined, so not the step)."""
    return (run_id, anomaly.kind, _bucket(anomaly.step))


def _bucket(step: float | None) -> int | None:
    step = finite(step)
    if step is None:
        return None
    # Re-analysis with more data can move an onset a little; same stretch, same finding.
    return int(round(step / 1000.0))


#: The kinds of the notices :meth:`Findings.take` gives about findings announced before.
UPDATED, WITHDRAWN = "updated", "withdrawn"


def notice_title(anomaly: Anomaly) -> str:
    """The title of a finding's notification: ``new spike``, ``updated``, ``withdrawn``."""
    return anomaly.kind if anomaly.kind in (UPDATED, WITHDRAWN) else f"new {anomaly.kind}"


def _overlaps(a: Anomaly, b: Anomaly) -> bool:
    a0, b0 = finite(a.step), finite(b.step)
    if a0 is None or b0 is None:
        return False
    a1 = finite(a.end_step) if finite(a.end_step) is not None else a0
    b1 = finite(b.end_step) if finite(b.end_step) is not None else b0
    return a0 <= b1 and b0 <= a1


def _changed(old: Anomaly, new: Anomaly) -> bool:
    """Whether a reader would want to hear again: it recovered, or its stretch or end moved."""
    if (old.end_step is None) != (new.end_step is None):
        return True
    return old.kind == "drift" and old.message != new.message


def anomaly_counts(report: Report) -> dict[str, int]:
    """How many anomalies each run has, as the panel lists them: its primary metric's and its eval
    series' (a line of grad-norm information is not one)."""
    counts = {}
    for run in report.runs:
        metrics = ([run.primary] if run.primary is not None else []) + eval_metrics(run)
        counts[run.id] = sum(counts_as_anomaly(a) for m in metrics for a in m.anomalies)
    return counts


def with_stall(run: RunReport, stall: Anomaly | None) -> RunReport:
    """A run's report with a live ``stall`` finding added to its primary metric."""
    metric = run.primary
    if stall is None or metric is None or metric.analysis is None:
        return run
    analysis = replace(metric.analysis, anomalies=(*metric.analysis.anomalies, stall))
    return replace(run, metrics=MappingProxyType({**run.metrics, metric.name: replace(metric, analysis=analysis)}))


def marks(report: Report | None) -> dict[str, list[Mark]]:
    """Per run, the anomalies of its primary metric to mark on its curve (resets are drawn as lines).

    Asked at every frame: the marks of the last report asked for are kept (a report is never
    changed; a frame of thousands of runs walked every entry again)."""
    if report is not None and _marked[0] is report:
        return _marked[1]
    out = _marks(report)
    if report is not None:
        _marked[:] = [report, out]
    return out


_marked: list = [None, {}]  # (the report, its marks) last worked out


def chart_unchanged(before: Report | None, after: Report | None) -> bool:
    """Whether the chart drawn with ``before``'s findings is the one ``after``'s would draw: each
    run's marks and the metric they were found in (what the chart reads of a report) are the same.

    A report that only lost runs (switched off) or came back with the same findings (a toggle's
    analysis) then needs no frame of every curve again."""
    if before is None or after is None:
        return before is after
    old, new = marks(before), marks(after)
    old_metric = {run.id: run.primary_metric for run in before.runs}
    new_ids = set()
    for run in after.runs:
        new_ids.add(run.id)
        drawn = new.get(run.id) or []
        if drawn != (old.get(run.id) or []) or (drawn and old_metric.get(run.id) != run.primary_metric):
            return False
    return all(run_id in new_ids or not drawn for run_id, drawn in old.items())


def _marks(report: Report | None) -> dict[str, list[Mark]]:
    out: dict[str, list[Mark]] = {}
    for run in report.runs if report is not None else ():
        metric = run.primary
        if metric is None:
            continue
        out[run.id] = [
            Mark(a.kind, a.step, finite(a.value), finite(a.end_step))
            for a in metric.anomalies
            if finite(a.step) is not None and a.kind != "reset"
        ]
    return out


class Findings:
    """What the viewer has shown of the findings, and what is new since.

    Attributes:
        known: keys of every finding seen (shown or history).
        new: keys of the findings that arrived while watching and are not yet acknowledged.
        stalls: per run id, its live stall (no point for many usual intervals).
        initial_runs: runs found before the first load finished: their findings are history.
        baseline_generation: the first analysis that covers the whole first load; None until
            the load finished. Findings of earlier (partial) analyses are not recorded.
    """

    def __init__(self) -> None:
        self.known: set[AnomalyKey] = set()
        self.new: set[AnomalyKey] = set()
        self.stalls: dict[str, Anomaly] = {}
        self.initial_runs: set[str] = set()
        self.baseline_generation: int | None = None
        self._analysed: set[str] = set()
        #: per run, the announced findings as last seen (what an update is measured against)
        self._announced: dict[str, dict[AnomalyKey, Anomaly]] = {}
        #: per run, every finding of the last analysis: one found again over the same stretch,
        #: its onset moved by more data, is the same finding, not news
        self._seen: dict[str, tuple[Anomaly, ...]] = {}

    def take(self, report: Report, generation: int) -> list[tuple[str, Anomaly]]:
        """Record the anomalies of analysis number ``generation``.

        Returns:
            (run label, anomaly) for each finding to announce: not known before, found after the
            baseline, and not the history of a run that was there at the first load.
        """
        fresh: list[tuple[str, Anomaly]] = []
        baseline = self.baseline_generation is not None and generation >= self.baseline_generation
        for run in report.runs:
            anomalies = run.primary.anomalies if run.primary is not None else ()
            first_time = run.id not in self._analysed
            if baseline:
                self._analysed.add(run.id)
            if baseline:
                fresh.extend(self._settle(run.id, run.label, anomalies))
            before, self._seen[run.id] = self._seen.get(run.id, ()), tuple(anomalies)
            for anomaly in anomalies:
                key = anomaly_key(run.id, anomaly)
                if key in self.known or not baseline:
                    continue
                self.known.add(key)
                if any(old.kind == anomaly.kind and _overlaps(old, anomaly) for old in before):
                    continue  # seen before, its onset refined
                quiet = first_time and run.id in self.initial_runs
                if not quiet and generation > self.baseline_generation:
                    fresh.append((run.label, anomaly))
                    self.new.add(key)
                    self._announced.setdefault(run.id, {})[key] = anomaly
        return fresh

    def restart(self, generation: int) -> None:
        """Another metric was picked: its findings in analysis ``generation`` are history, not news.

        What was announced of the metric left is not withdrawn either; the panel no longer shows it.
        """
        self.new.clear()
        self._announced.clear()
        self._seen.clear()
        if self.baseline_generation is not None:
            self.baseline_generation = generation

    def _settle(self, run_id: str, label: str, anomalies) -> list[tuple[str, Anomaly]]:
        """Notices about the announced findings of one run that changed or went away."""
        announced = self._announced.get(run_id)
        if not announced:
            return []
        current = {anomaly_key(run_id, a): a for a in anomalies}
        out = []
        for key, old in list(announced.items()):
            new = current.get(key)
            if new is None:  # gone: superseded by one of its kind over the same stretch, or withdrawn
                new = next((a for a in anomalies if a.kind == old.kind and _overlaps(a, old)), None)
                del announced[key]
                self.new.discard(key)
                if new is not None:
                    new_key = anomaly_key(run_id, new)
                    self.known.add(new_key)
                    announced[new_key] = new
                    out.append((label, Anomaly(UPDATED, new.step, new.end_step, new.value, new.baseline,
                                               f"{old.kind} now: {new.message}", new.severity)))
                else:
                    out.append((label, Anomaly(WITHDRAWN, old.step, old.end_step, old.value, old.baseline,
                                               f"no longer seen: {old.kind} {old.message}", 0.0)))
            elif _changed(old, new):
                announced[key] = new
                out.append((label, Anomaly(UPDATED, new.step, new.end_step, new.value, new.baseline,
                                           f"{new.kind} now: {new.message}", new.severity)))
        return out

    def counts(self, report: Report | None) -> dict[str, int]:
        """Per run, what the list's ``!`` column counts: the panel's findings, and a live stall."""
        counts = anomaly_counts(report) if report is not None else {}
        for run_id in self.stalls:
            counts[run_id] = counts.get(run_id, 0) + 1
        return counts

    def check_stalls(self, runs: Iterable[Run], activity: Mapping[str, Activity], now: float) -> tuple[list[tuple[str, Anomaly]], bool]:
        """Find the runs that grew while watched and then fell silent for many usual intervals.

        Returns:
            The stalls not known before, as (run id, anomaly), and whether the stalls changed.
        """
        stalls = {}
        for run in runs:
            seen = activity.get(run.id)
            if seen is None or len(seen.arrivals) < 3 or run.deleted or run.restarted_after or state_of(run).ended:
                continue  # a run its log says is over (finished, killed, crashed, restarted) does not stall
            name = run.primary_metric
            series = run.series.get(name) if name else None
            if series is None or not len(series):
                continue
            anomaly = stall_anomaly(float(series.visible()[0][-1]), seen.last, list(seen.arrivals), now)
            if anomaly is not None:
                stalls[run.id] = anomaly
        fresh = [(run_id, a) for run_id, a in stalls.items() if anomaly_key(run_id, a) not in self.known]
        for run_id, anomaly in fresh:
            key = anomaly_key(run_id, anomaly)
            self.known.add(key)
            self.new.add(key)
        changed = stalls != self.stalls
        if changed:
            self.stalls = stalls
        return fresh, changed
