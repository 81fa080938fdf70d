"""Findings per run and across runs: a typed :class:`Report`, rendered as text, markdown or JSON.

``tuiloss report`` and the viewer's insights panel both come from :func:`build_report`,
which builds the report straight from the analysis results; the renderers only format
what it returns, and JSON exists only at the edge (:func:`report_json`).
"""

from __future__ import annotations

import functools
import math
import os
import stat
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Callable, Iterable, Mapping

import numpy as np

from tuiloss import __version__
from tuiloss.core.analysis import (
    join_eval,
    Anomaly,
    Observation,
    Plateau,
    RunFacts,
    SeriesAnalysis,
    analyze_series,
    compare_runs,
    describe,
)
from tuiloss.core.analysis import metrics as names
from tuiloss.core.analysis.arrays import first_min
from tuiloss.core.analysis.display import finite, fmt_step, fmt_value
from tuiloss.core.analysis.events import EVENT_SERIES, Event, counted
from tuiloss.core.analysis.metrics import Direction
from tuiloss.core.analysis.live import LiveAnalyzer
from tuiloss.core.analysis.signals import find_signals, signal_series
from tuiloss.core.analysis.state import RunState, planned_steps, run_state
from tuiloss.core.analysis.summary import final_value
from tuiloss.core.cpus import available_cpus
from tuiloss.core.model import Notice
from tuiloss.core.ranks import Job, facts_of, find_jobs, job_json, rank_name
from tuiloss.core.remote import is_url, modified
from tuiloss.core.sanitize import escape_markdown, safe_label
from tuiloss.core.store import Run, Series, Store, is_eval_metric
from tuiloss.core.timeline import events_of

@dataclass(frozen=True, slots=True)
class MetricReport:
    """One metric of a run: its plain facts, and its analysis when it was analysed.

    Attributes:
        name: the metric.
        points: points stored (every segment).
        first_step: first visible step, None if empty.
        last_step: last visible step.
        first: first visible value.
        final: last visible value (NaN stays NaN).
        min: lowest finite value.
        min_step: where it was first reached.
        analysis: the findings (the primary metric and eval losses), None for the others.
        role: what the name says it measures (``loss``, ``accuracy``, ``throughput``, ...).
        direction: which way is better; the health verdicts follow it.
    """

    name: str
    points: int
    first_step: float | None
    last_step: float | None
    first: float | None
    final: float | None
    min: float | None
    min_step: float | None
    analysis: SeriesAnalysis | None = None
    role: str = "other"
    direction: Direction = Direction.UNKNOWN
    distinct_steps: int = 0
    values_per_step: int = 0

    @property
    def coarse_steps(self) -> bool:
        """Whether many points share a step on a coarse axis (an epoch rounded to 2 decimals).

        Such points keep the order of their lines; the axis cannot place them finer. Points
        written many to a step on purpose are not on a coarse axis: see ``values_per_step``.
        """
        return not self.values_per_step and _shares_steps(self.points, self.distinct_steps)

    @property
    def per_step_median(self) -> bool:
        """Whether the detectors read one median per step (many values written at each step)."""
        return self.values_per_step > 0

    @property
    def analyzed(self) -> bool:
        """Whether the detectors ran over this metric."""
        return self.analysis is not None

    @property
    def convergence_step(self) -> float | None:
        """Where it settled (None: not analysed, or never settled)."""
        return self.analysis.convergence_step if self.analysis is not None else None

    @property
    def verdict(self):
        """Where the series got to (None: not analysed)."""
        return self.analysis.verdict if self.analysis is not None else None

    @property
    def settled_final(self) -> float | None:
        """The one "final" of findings and comparisons: the median of the last 1% of finite
        points (1 to 51); the last value when not analysed."""
        return self.analysis.final if self.analysis is not None else self.final

    @property
    def anomalies(self) -> tuple[Anomaly, ...]:
        return self.analysis.anomalies if self.analysis is not None else ()

    @property
    def plateaus(self) -> tuple[Plateau, ...]:
        return self.analysis.plateaus if self.analysis is not None else ()


@dataclass(frozen=True, slots=True)
class SegmentReport:
    """A stretch of the primary metric between two discontinuities."""

    start_step: float
    end_step: float | None
    reason: str
    points: int


@dataclass(frozen=True, slots=True)
class SkipCounts:
    """What was read but not used: lines skipped (by reason) and lines no pattern matched."""

    lines: int
    reasons: Mapping[str, int]
    unmatched: int


@dataclass(frozen=True, slots=True)
class StepAxis:
    """What the log says of its step axis (the parsers' ``Batch.meta``), for the user to be told.

    Attributes:
        key: the counter the steps come from (``global_step``, ``iter``...), None if unsaid.
        planned: the total of steps the log announced (``Step N/M``, ``max_steps``), None if unsaid.
        coarse: the only axis is a rounded epoch: lines keep their order at each step.
        held: lines read but not yet placed on the axis (an epoch's length still unknown).
    """

    key: str | None = None
    planned: float | None = None
    coarse: bool = False
    held: int = 0


@dataclass(frozen=True, slots=True)
class RunReport:
    """One run: where it came from, its metrics (the primary one first) and what was skipped."""

    id: str
    label: str
    source: str
    format: str
    config: Mapping
    primary_metric: str | None
    deleted: bool
    skipped: SkipCounts
    notices: tuple[Notice, ...]
    segments: tuple[SegmentReport, ...]
    metrics: Mapping[str, MetricReport]
    same_series: tuple[str, ...] = ()
    axis: StepAxis = StepAxis()
    state: RunState = RunState("stopped")
    events: tuple[Event, ...] = ()  # resumes, LR drops, loss-scale drops, checkpoints, evals (see timeline)

    @property
    def primary(self) -> MetricReport | None:
        """The primary metric's report, None if the run has none yet."""
        return self.metrics.get(self.primary_metric) if self.primary_metric else None


@dataclass(frozen=True, slots=True)
class Report:
    """Everything ``tuiloss report`` and the insights panel show.

    Attributes:
        version: tuiloss' version.
        root: the one path reported on, None for several.
        runs: one entry per run, in store order.
        observations: comparisons across runs.
        error: why the analysis failed (the panel shows it), None when it did not.
        jobs: the per-rank logs of one distributed job, grouped (see :mod:`tuiloss.core.ranks`).
    """

    version: str
    root: str | None
    runs: tuple[RunReport, ...]
    observations: tuple[Observation, ...] = ()
    error: str | None = None
    jobs: tuple[Job, ...] = ()


AnalyzerFor = Callable[[str, str], "LiveAnalyzer | None"]


class KeptAnalyzers:
    """Live analysers kept per (run, metric), so a report can be built as a load goes.

    :meth:`catch_up`, after each stored batch, does the per-point work of each run's primary
    metric while the reader parses the next chunks; :func:`build_report` given this as its
    ``analyzer_for`` then finishes each analysis. The findings are those of a report built
    after the load (each analyser gives exactly what a batch analysis gives). Only a lone
    log is analysed as it loads: the per-point state of every log read at once, kept through
    the load, would add its 8 bytes per point to the peak; many logs are analysed one by one
    after it, each state dropped when done.
    """

    def __init__(self, metric: str | None = None) -> None:
        self.metric = metric
        self._kept: dict[tuple[str, str], LiveAnalyzer] = {}

    def __call__(self, run_id: str, name: str) -> LiveAnalyzer | None:
        """The analyser that kept up with ``name`` of ``run_id``; None (a batch analysis) for the rest."""
        return self._kept.get((run_id, name))

    def catch_up(self, store: Store) -> None:
        if len(store.runs) != 1:
            self._kept.clear()
            return
        for run in store:
            primary = self.metric if self.metric in run.series else run.primary_metric
            series = run.series.get(primary) if primary else None
            if series is None or not len(series):
                continue
            analyzer = self._kept.get((run.id, primary))
            if analyzer is None:
                higher = names.direction(primary) is Direction.HIGHER  # as analyze() mirrors it
                analyzer = self._kept[(run.id, primary)] = LiveAnalyzer(is_eval=is_eval_metric(primary), higher_is_better=higher)
            steps, values = series.visible()
            analyzer.catch_up(steps, values, series.segments, series.values.capacity)


class KeptEntries:
    """Each run's entry and facts, kept while what they are worked out from stays the same.

    Given to :func:`build_report` (the viewer's, asked again twice a second while a log grows),
    a run whose points, metrics, notices, skips and log facts did not change since the last
    report is not analysed again: its entry is the one kept. So are the checks that two runs
    hold the same series, per pair of unchanged runs. A run's state is worked out at each
    report (it ages with the clock). The report is the one built without it: the entry of a
    run is a function of what the key holds (see :func:`entry_key`).
    """

    def __init__(self) -> None:
        self._entries: dict[str, tuple[tuple, RunReport, RunFacts | None]] = {}
        self._seen: dict[str, tuple[tuple, RunReport, RunFacts | None]] = {}
        self._pairs: dict[tuple[str, str], tuple[RunFacts, RunFacts, bool]] = {}
        self._pairs_seen: dict[tuple[str, str], tuple[RunFacts, RunFacts, bool]] = {}
        self._labels: dict[tuple, dict[str, tuple[str, ...]]] = {}
        #: (run id, what changed) -> (the entry it was changed from, the change, the changed entry)
        self._changed: dict[tuple[str, str], tuple[RunReport, object, RunReport]] = {}
        self._changed_seen: dict[tuple[str, str], tuple[RunReport, object, RunReport]] = {}
        self._openings: dict[int, tuple[RunFacts, float]] = {}
        self._openings_seen: dict[int, tuple[RunFacts, float]] = {}
        self.analysed = 0  # entries worked out (not kept), for tests

    def begin(self) -> None:
        """A report starts: what it does not ask for is dropped when it ends."""
        self._seen, self._pairs_seen, self._changed_seen, self._openings_seen = {}, {}, {}, {}

    def changed(self, entry: RunReport, field: str, value: object) -> RunReport:
        """``entry`` with ``field`` set to ``value``: the entry made last time while ``entry`` is the
        one it was made from and ``value`` is equal (a run that did not change keeps its state from
        one report to the next: no copy of each entry twice a second)."""
        key = (entry.id, field)
        seen = self._changed.get(key)
        if seen is None or seen[0] is not entry or not _same_key(seen[1], value):
            seen = (entry, value, entry if getattr(entry, field) == value else replace(entry, **{field: value}))
        self._changed_seen[key] = seen
        return seen[2]

    def opening(self, fact: RunFacts) -> float:
        """:func:`_opening` of ``fact``, worked out once per fact (kept while its run does not change)."""
        seen = self._openings.get(id(fact))
        if seen is None or seen[0] is not fact:
            seen = (fact, _opening(fact))
        self._openings_seen[id(fact)] = seen
        return seen[1]

    def end(self) -> None:
        """The report is built: the entries of runs it did not hold (switched off, filtered out) stay
        while they are few, so a run switched on again is not analysed again; so do the checks of
        pairs whose facts are both still kept."""
        entries = self._entries
        if len(entries) - len(self._seen) > len(self._seen) + 64:
            entries = {}
        entries.update(self._seen)
        facts = {id(kept[2]) for kept in entries.values() if kept[2] is not None}
        pairs = {pair: kept for pair, kept in self._pairs.items() if id(kept[0]) in facts and id(kept[1]) in facts}
        pairs.update(self._pairs_seen)
        self._entries, self._pairs = entries, pairs
        self._seen, self._pairs_seen = {}, {}
        self._changed, self._openings = self._changed_seen, self._openings_seen
        self._changed_seen, self._openings_seen = {}, {}

    def entry(self, run: Run, metric: str | None, analyzer_for: AnalyzerFor | None) -> tuple[RunReport, RunFacts | None]:
        key = entry_key(run, metric)
        kept = self._entries.get(run.id)
        if kept is None or not _same_key(kept[0], key):
            entry, fact = _run_entry(run, run.id, run.label, run.series, metric, analyzer_for)
            kept = (key, entry, fact)
            self.analysed += 1
        self._seen[run.id] = kept
        return kept[1], kept[2]

    def same_points(self, a: RunFacts, b: RunFacts) -> bool:
        """:func:`_same_points`, answered again for a pair whose facts are the very ones seen last."""
        pair = (a.id, b.id)
        kept = self._pairs.get(pair)
        if kept is None or kept[0] is not a or kept[1] is not b:
            kept = (a, b, _same_points(a, b))
        self._pairs_seen[pair] = kept
        return kept[2]

    def others(self, members: tuple[str, ...], labels: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
        """Per member of a group of runs holding the same series, the labels of the others."""
        key = (members, labels)
        found = self._labels.get(key)
        if found is None:
            if len(self._labels) > 64:
                self._labels.clear()
            found = self._labels[key] = _others(members, labels)
        return found


def entry_key(run: Run, metric: str | None) -> tuple:
    """What a run's entry (:func:`_run_entry`) is worked out from, its state apart: the series only
    ever grow, so their lengths and segments stand for their points."""
    series = tuple((name, len(one), tuple(one.segments)) for name, one in run.series.items())
    return (metric, run.label, run.source, run.format, run.path, run.deleted, run.unmatched, run.status,
            run.metric_override, run.step_override, run.part_of, run.log_primary, run.restarted_after,
            run.primary_metric, series, tuple(run.notices), dict(run.skipped), dict(run.config), dict(run.meta))


def _same_key(a: tuple, b: tuple) -> bool:
    try:
        return bool(a == b)
    except Exception:  # a config or meta value that does not compare (an array): not the same
        return False


def build_report(store: Store, root: str | None = None, metric: str | None = None,
                 runs: Iterable[Run] | None = None, analyzer_for: AnalyzerFor | None = None,
                 now: float | None = None, kept: KeptEntries | None = None,
                 by_configuration: bool = True) -> Report:
    """The report over ``runs`` (default: every run of ``store``).

    A log that holds several runs is reported as those runs (see
    :meth:`~tuiloss.core.store.Run.split`, which the viewer reads too), and a run
    re-keyed with ``--step`` on its new axis. ``analyzer_for(run_id, metric)``, when
    given, returns a kept ``LiveAnalyzer`` (or None) so the viewer re-analyses only
    what is new; the findings are the same. ``now`` (default: the clock) ages the logs
    for the runs' states. ``kept`` (:class:`KeptEntries`, held between reports) keeps the
    entries of the runs that did not change since the last report. ``by_configuration``
    false (``--group-by none``) compares the seeds of one configuration one to one, as there
    are no configurations to compare them.
    """
    now = time.time() if now is None else now
    chosen = list(store) if runs is None else [part for run in runs for part in run.split()]
    entries: list[RunReport] = []
    facts: list[tuple[RunFacts, dict[str, Series]]] = []
    if kept is not None:
        kept.begin()
    for run in chosen:
        if kept is not None:
            entry, fact = kept.entry(run, metric, analyzer_for)
        else:
            entry, fact = _run_entry(run, run.id, run.label, run.series, metric, analyzer_for)
        state = state_of(run, silence=_silence(run, now), now=now)
        entries.append(kept.changed(entry, "state", state) if kept is not None else replace(entry, state=state))
        if fact is not None:
            facts.append((fact, run.series))
    entries, compared = _same_series(entries, facts, kept)
    if kept is not None:
        kept.end()
    jobs = find_jobs(facts_of(run, entry.state.state, entry.state.reason)
                     for run, entry in zip(chosen, entries) if rank_name(run.source) is not None)
    # A job is compared with the other runs as one run, its lead rank: its ranks among themselves are no news.
    others = {run_id for job in jobs for run_id in job.others}
    compared = [fact for fact in compared if fact.id not in others]
    return Report(__version__, root, tuple(entries), tuple(compare_runs(compared, by_configuration)), jobs=tuple(jobs))


def _run_entry(run: Run, run_id: str, label: str, series: dict[str, Series], metric: str | None,
               analyzer_for: AnalyzerFor | None) -> tuple[RunReport, RunFacts | None]:
    """One run of a log (the whole log, or one of the runs restarted in it)."""
    primary = metric if metric in series else (run.primary_metric if run.primary_metric in series else None)
    axis = _axis(run)
    metrics = {}
    fact = None
    # A long run's work that needs nothing of the metrics' reports is done on two helper threads
    # meanwhile (the load that kept the other CPU busy is over), while this thread reports the
    # other series: its events (an LR's drops and restarts; the longest, and waited for last, so
    # begun first), the signals of its secondary series that the primary's analysis reads, and
    # what the primary's kept analysis reads of every point (its blocks, the scales left behind).
    helper = _helper() if sum(len(one) for one in series.values()) >= EVENTS_APART_FROM else None
    kept = analyzer_for(run_id, primary) if primary is not None and analyzer_for is not None else None
    events = helper.submit(events_of, run, series, primary) if helper is not None else None
    found = helper.submit(_signals, run_id, series, primary, analyzer_for) if helper is not None and primary in series else None
    prepared = helper.submit(kept.prepare) if helper is not None and kept is not None else None
    counterpart = names.eval_counterpart(primary, list(series)) if primary in series else None
    for name in sorted(series, key=lambda m: (m == primary, m)):
        if name in EVENT_SERIES:
            continue  # events, listed as such
        analyzed = name == primary or is_eval_metric(name) and names.role(name) in ("loss", "ppl")
        analyzer = analyzer_for(run_id, name) if analyzed and analyzer_for is not None else None
        # Overfitting is said of the primary metric's own eval series only (an auxiliary eval
        # term, like wav2vec2's code perplexity, may rise as training goes well).
        train = _analysed_points(series[primary], axis.coarse)[:2] if name == counterpart else None
        signals: tuple | Future = ()
        if name == primary:
            signals = found if found is not None else _signals(run_id, series, primary, analyzer_for)
        metrics[name] = _metric(series[name], name, analyzed, analyzer, train, signals, coarse=axis.coarse,
                                train_name=primary or "", prepared=prepared if analyzer is kept else None)
    metrics = {name: metrics[name] for name in sorted(metrics, key=lambda m: (m != primary, m))}  # the primary first
    if prepared is not None:
        prepared.result()  # done before the analyser is next used, whatever the loop read
    if primary in metrics and metrics[primary].direction is Direction.LOWER:
        # the comparisons across runs ("ended lowest", ...) are about losses; its anomalies are
        # counted with its eval series', as the panel counts them
        evals = {name: m.anomalies for name, m in metrics.items() if name != primary and m.analysis is not None}
        fact = _run_facts(run_id, label, run, series, primary, metrics[primary], evals)
    entry = RunReport(
        id=run_id,
        label=label,
        source=run.source,
        format=run.format,
        config=MappingProxyType(dict(run.config)),
        primary_metric=primary,
        deleted=run.deleted,
        skipped=SkipCounts(run.skipped_lines, MappingProxyType(dict(run.skipped)), run.unmatched),
        notices=tuple(run.notices),
        segments=_segments(series.get(primary) if primary else None),
        metrics=MappingProxyType(metrics),
        axis=axis,
        events=tuple(events.result() if events is not None else events_of(run, series, primary)),
    )
    return entry, fact


#: Points (of all a run's series) from which its events are read on :func:`_helper`'s thread.
EVENTS_APART_FROM = 1 << 20


@functools.lru_cache(maxsize=1)
def _helper() -> ThreadPoolExecutor | None:
    """The threads a long run's events, signals and kept analysis are worked out on after its load
    (see :func:`_run_entry`): two, one per CPU; None with a single CPU."""
    return ThreadPoolExecutor(2, thread_name_prefix="tuiloss-report") if available_cpus() > 1 else None


def _axis(run: Run) -> StepAxis:
    """What ``run``'s log says of its axis. Re-keyed on another metric (``--step``), the log's
    counter and planned total are not this axis'; lines still held belong to a log's newest run."""
    meta = run.meta
    keyed = run.step_override is not None
    planned = meta.get("planned_steps")
    return StepAxis(
        key=run.step_override if keyed else meta.get("step_key"),
        planned=float(planned) if isinstance(planned, (int, float)) and planned > 0 and not keyed else None,
        coarse=bool(meta.get("coarse_steps")) and not keyed,
        held=int(meta.get("held") or 0) if not run.restarted_after else 0,
    )


#: How a run ended where its tracker recorded it (MLflow's status, W&B's exit record).
TRACKER_ENDINGS = {"finished": ("finished", "its tracker recorded it finished"),
                   "failed": ("crashed", "its tracker recorded it failed or killed")}


def state_of(run: Run, series: Mapping[str, Series] | None = None, *, silence: float | None = None,
             interval: float | None = None, stalled: bool = False, now: float | None = None) -> RunState:
    """A run's state (see :mod:`tuiloss.core.analysis.state`): how its log ends, whether it
    reached its planned total, then how long it has been silent.

    Args:
        run: the run; series: its series (default: all of them; one run restarted in a log).
        silence: seconds since it last grew (None: unknown).
        interval: its usual seconds between writes; stalled: the viewer saw it stall.
        now: the clock, to age the last time the log printed by its own clock (default: the clock).
    """
    if run.restarted_after:  # it ended where the next run of its log began
        return RunState("stopped", "restarted in the same log")
    series = run.series if series is None else series
    end = run.meta.get("end")
    stamped = run.meta.get("stamped")
    name = run.primary_metric
    main = series.get(name) if name else None
    last = spacing = None
    if main is not None and len(main):
        steps = main.visible()[0]
        last = float(steps[-1])
        spacing = float(steps[-1] - steps[-2]) if len(steps) > 1 else None
    ending = (end.kind, end.reason) if end is not None else TRACKER_ENDINGS.get(run.status or "")
    return run_state(
        ending=ending,
        planned=planned_steps(run.meta.get("planned_steps"), run.config),
        last_step=last, spacing=spacing, silence=silence, interval=interval, deleted=run.deleted,
        has_points=run.points > 0, unread=any(n.level == "error" for n in run.notices), stalled=stalled,
        logged_silence=(time.time() if now is None else now) - stamped if stamped is not None else None,
    )


def _silence(run: Run, now: float) -> float | None:
    """Seconds since the run's log (its newest file, for a folder) was last written."""
    path = run.path or run.part_of or run.id
    if is_url(path):
        written = modified(path)  # a remote log: as its root's listing says
        return now - written if written is not None else None
    try:
        found = os.stat(path)  # one call for a log (a report asks each run's, twice a second)
        if stat.S_ISDIR(found.st_mode):
            times = [entry.stat().st_mtime for entry in os.scandir(path) if entry.is_file()]
            return now - max(times) if times else None
        return now - found.st_mtime
    except OSError:
        return None


def _same_series(entries: list[RunReport], facts: list[tuple[RunFacts, dict[str, Series]]],
                 memo: KeptEntries | None = None):
    """Say which runs hold the same series (one training written by two loggers); compare each once.

    Two runs hold the same series when their primary metrics span the same steps and
    agree, value for value (to the 5 digits a text log prints; first, middle and last
    value first), on at least 80% of the
    shorter one's steps and on five steps at least. Only runs with the same first and
    last step and nearly the same first value are compared, so this stays cheap for
    a thousand runs.
    """
    groups: dict[str, list[str]] = {}
    twin_of: dict[str, str] = {}
    spans: dict[tuple, list[RunFacts]] = {}
    for fact, _ in facts:
        if len(fact.steps):
            spans.setdefault((float(fact.steps[0]), float(fact.steps[-1])), []).append(fact)
    for same_span in spans.values():
        if len(same_span) < 2:
            continue
        opening = {fact.id: memo.opening(fact) if memo is not None else _opening(fact) for fact in same_span}
        same_span.sort(key=lambda fact: opening[fact.id])
        for i, fact in enumerate(same_span):
            if fact.id in twin_of:
                continue
            for other in same_span[i + 1:]:
                if not math.isclose(opening[other.id], opening[fact.id], rel_tol=2e-4, abs_tol=1e-12):
                    break
                if other.id not in twin_of and _close_ends(fact, other) and (
                        memo.same_points(fact, other) if memo is not None else _same_points(fact, other)):
                    twin_of[other.id] = fact.id
                    groups.setdefault(fact.id, [fact.id]).append(other.id)
    kept = [fact for fact, _ in facts if fact.id not in twin_of]
    if not groups:
        return entries, kept
    by_id = {entry.id: entry for entry in entries}
    same: dict[str, tuple[str, ...]] = {}
    for members in groups.values():
        labels = tuple(by_id[member].label for member in members)
        same.update(memo.others(tuple(members), labels) if memo is not None else _others(tuple(members), labels))
    out = [(memo.changed(entry, "same_series", same[entry.id]) if memo is not None
            else replace(entry, same_series=same[entry.id])) if entry.id in same else entry for entry in entries]
    return out, kept


def _others(members: tuple[str, ...], labels: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """Per member of a group holding the same series, the labels of the others."""
    return {member: labels[:k] + labels[k + 1:] for k, member in enumerate(members)}


def _opening(fact: RunFacts) -> float:
    """The first finite value (a sort key: NaN-free)."""
    values = fact.values[np.isfinite(fact.values)]
    return float(values[0]) if len(values) else 0.0


def _close_ends(a: RunFacts, b: RunFacts) -> bool:
    """A check in constant time before the full one: the middle and last values agree."""
    for va, vb in ((a.values[len(a.values) // 2], b.values[len(b.values) // 2]), (a.values[-1], b.values[-1])):
        if math.isfinite(va) and math.isfinite(vb) and not math.isclose(va, vb, rel_tol=2e-4, abs_tol=1e-12):
            return False
    return True


#: Points compared at a time: two series of millions of points are compared without a copy of either.
SAME_BLOCK = 1 << 16


def _same_points(a: RunFacts, b: RunFacts) -> bool:
    """Whether ``a`` and ``b`` agree on enough of the steps they share (see :func:`_same_series`)."""
    if not (_ascending(a.steps) and _ascending(b.steps)):  # a run's visible steps are, but in case
        _, ia, ib = np.intersect1d(a.steps, b.steps, assume_unique=False, return_indices=True)
        return _agree(a, b, [(ia, ib)])
    return _agree(a, b, None)


def _ascending(steps: np.ndarray) -> bool:
    last = len(steps) - 1
    return all(bool(np.all(steps[lo + 1 : min(lo + SAME_BLOCK, last) + 1] >= steps[lo : min(lo + SAME_BLOCK, last)]))
               for lo in range(0, max(last, 0), SAME_BLOCK))


def _shared(a: np.ndarray, b: np.ndarray):
    """The indices of the steps ``a`` and ``b`` (both ascending) share, a block of ``a`` at a time:
    the first point of each step in either, as ``numpy.intersect1d`` gives them."""
    same = len(a) == len(b) and all(np.array_equal(a[lo : lo + SAME_BLOCK], b[lo : lo + SAME_BLOCK])
                                    for lo in range(0, len(a), SAME_BLOCK))
    for lo in range(0, len(a), SAME_BLOCK):
        piece = a[lo : lo + SAME_BLOCK]
        first = np.ones(len(piece), dtype=bool)
        first[1:] = piece[1:] != piece[:-1]
        if lo:
            first[0] = piece[0] != a[lo - 1]
        at = np.flatnonzero(first)
        if same:  # the same steps (one training written twice): no search
            yield at + lo, at + lo
            continue
        where = np.searchsorted(b, piece[at])
        found = where < len(b)
        found[found] = b[where[found]] == piece[at[found]]
        yield at[found] + lo, where[found]


def _agree(a: RunFacts, b: RunFacts, pairs) -> bool:
    """The rule of :func:`_same_points` over the shared points ``pairs`` (index arrays of ``a``
    and ``b``; None: read them block by block from :func:`_shared`), in one pass.

    A pair agrees when ``|a - b| <= max(1e-4 |a|, 0.51 unit) + 1e-12``, the unit being the
    printed precision of the first 200 pairs: a pair within ``1e-4 |a| + 1e-12`` agrees
    whatever the unit, and the others do when the largest of their differences is within
    ``0.51 unit + 1e-12``; so only that largest difference is kept until the unit is known.
    """
    shared = finite = 0
    sample_a, sample_b = [], []
    widest = -math.inf  # the largest difference of the pairs that need the unit
    for ia, ib in _shared(a.steps, b.steps) if pairs is None else pairs:
        shared += len(ia)
        va, vb = a.values[ia], b.values[ib]
        both = np.isfinite(va) & np.isfinite(vb)
        va, vb = va[both], vb[both]
        finite += len(va)
        if sum(map(len, sample_a)) < 200:
            sample_a.append(va[:200])
            sample_b.append(vb[:200])
        gap = np.abs(va - vb)
        loose = gap[gap > 1e-4 * np.abs(va) + 1e-12]
        if len(loose):
            widest = max(widest, float(loose.max()))
    if shared < 5 or shared < 0.8 * min(len(a.steps), len(b.steps)) or finite < 5:
        return False
    # A text log prints a fixed number of decimals (mmdetection: 4); its twin holds more digits.
    decimals = min(_printed_decimals(np.concatenate(sample_a)), _printed_decimals(np.concatenate(sample_b)))
    return widest <= 0.51 * 10.0 ** -decimals + 1e-12


def _printed_decimals(values: np.ndarray, most: int = 8) -> int:
    """The fewest decimals that write every value exactly (as a log printed them), at most ``most``."""
    sample = values[: 200]
    for decimals in range(most):
        scaled = sample * 10.0**decimals
        if np.all(np.abs(scaled - np.rint(scaled)) <= 1e-6 * np.maximum(1.0, np.abs(scaled))):
            return decimals
    return most


def _signals(run_id: str, series: dict[str, Series], primary: str | None,
             analyzer_for: AnalyzerFor | None) -> tuple:
    """Events of the run's secondary series (grad norm, loss scale, skips, LR), as evidence."""
    others = [n for n in series if n != primary and not is_eval_metric(n)]
    wanted = signal_series(others)
    if not wanted:
        return ()

    def analyze(name, steps, values):
        kept = analyzer_for(run_id, name) if analyzer_for is not None else None
        return kept.update(steps, values) if kept is not None else analyze_series(steps, values)

    return tuple(find_signals({n: series[n].visible() for n in wanted.values()}, analyze))


def _metric(series: Series, name: str, analyzed: bool, analyzer: LiveAnalyzer | None, train=None,
            signals: tuple | Future = (), coarse: bool = False, train_name: str = "",
            prepared: Future | None = None) -> MetricReport:
    """What a report says of one series; ``prepared``, and ``signals`` when a future: work done on
    another thread meanwhile, waited for where the analysis needs it."""
    steps, values = series.visible()
    low = first_min(values)
    analysis = None
    direction = names.direction(name)
    per_step = distinct = 0
    if analyzed:
        distinct = _distinct(steps)
        a_steps, a_values, per_step = _analysed_points(series, coarse, distinct)
    if isinstance(signals, Future):
        signals = signals.result()
    if analyzed and analyzer is not None:
        if prepared is not None:
            prepared.result()
        analysis = follow_direction(analyzer.update(a_steps, a_values, series.segments, signals), direction)
    elif analyzed:
        analysis = analyze(a_steps, a_values, series.segments, is_eval=is_eval_metric(name), direction=direction,
                           signals=signals)
    if analysis is not None and train is not None and is_eval_metric(name):
        # what only the pair says: the eval rising from its best while train falls
        joined = join_eval(train[0], train[1], a_steps, a_values, analysis,
                           perplexity=names.role(name) == "ppl" and names.role(train_name) != "ppl")
        if joined:
            anomalies = sorted(analysis.anomalies + tuple(joined), key=lambda a: a.step)
            analysis = replace(analysis, anomalies=tuple(anomalies))
    return MetricReport(
        name=name,
        points=len(series),
        first_step=float(steps[0]) if len(steps) else None,
        last_step=float(steps[-1]) if len(steps) else None,
        first=float(values[0]) if len(values) else None,
        final=float(values[-1]) if len(values) else None,
        min=float(values[low]) if low is not None else None,
        min_step=float(steps[low]) if low is not None else None,
        analysis=analysis,
        role=names.role(name),
        direction=direction,
        distinct_steps=distinct,
        values_per_step=per_step,
    )


def _distinct(steps: np.ndarray) -> int:
    """How many different steps ``steps`` (in step order) holds: one pass, no sort."""
    return int(np.count_nonzero(steps[1:] != steps[:-1])) + 1 if len(steps) else 0


def _shares_steps(points: int, distinct: int) -> bool:
    """Whether many of ``points`` share a step: fewer than 80% of them have a step of their own."""
    return points >= 4 and distinct < 0.8 * points


def _analysed_points(series: Series, coarse: bool, distinct: int | None = None) -> tuple[np.ndarray, np.ndarray, int]:
    """The points the detectors read, and how many values each step has when they read medians.

    A step written many times (Ultralytics writes every batch loss of an epoch at step =
    epoch) is one x with many values: the spread within one step is no spike, so the
    detectors read one median per step (0 values per step said: the points as they are).
    On a coarse axis (an epoch rounded to 2 decimals, as the parser said or as fractional
    steps show) the points are consecutive training and keep their line order instead.
    """
    steps, values = series.visible()
    if coarse:
        return steps, values, 0
    points = len(steps)
    distinct = _distinct(steps) if distinct is None else distinct  # ``distinct``: known already
    if not _shares_steps(points, distinct) or np.any(steps != np.floor(steps)):
        return steps, values, 0
    steps, values = per_step_median(steps, values)
    return steps, values, max(2, round(points / distinct))


def per_step_median(steps: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One point per step (``steps`` in step order): the median of the values written at it.

    The lower median, so it is always one of the values; NaN counts above every number,
    so a step is NaN when at least half its values are.
    """
    if not len(steps):
        return steps, values
    starts = np.flatnonzero(np.concatenate(([True], steps[1:] != steps[:-1])))
    counts = np.diff(np.append(starts, len(steps)))
    group = np.repeat(np.arange(len(starts)), counts)
    ordered = values[np.lexsort((values, group))]
    return steps[starts], ordered[starts + (counts - 1) // 2]


#: Findings that say a lower-is-better curve went the wrong way; they mean nothing
#: (or the opposite) on a metric that improves upwards or whose direction is unknown.
LOWER_IS_BETTER_KINDS = frozenset(("spike", "divergence", "drift"))


def analyze(steps, values, segments, *, is_eval: bool, direction: Direction, signals: tuple = ()) -> SeriesAnalysis:
    """The detectors over one series, told which way it improves.

    The one call site of the detectors in the report: a higher-is-better series is
    analysed mirrored (its findings read "dropped to ..."); a series of unknown
    direction keeps no verdict about its health (see :func:`follow_direction`).
    """
    analysis = analyze_series(steps, values, segments, is_eval=is_eval, signals=signals,
                              higher_is_better=direction is Direction.HIGHER)
    return follow_direction(analysis, direction)


def follow_direction(analysis: SeriesAnalysis, direction: Direction) -> SeriesAnalysis:
    """``analysis`` keeping only the verdicts that hold for a metric improving in ``direction``.

    The detectors follow the direction themselves (a higher-is-better series is mirrored), so a
    rising accuracy is progress, never divergence. A metric of unknown direction gets no
    verdict about its health at all (nor a convergence step); NaN and resets stay.
    """
    if direction is not Direction.UNKNOWN:
        return analysis
    kept = tuple(a for a in analysis.anomalies if a.kind not in LOWER_IS_BETTER_KINDS)
    convergence = None
    if len(kept) == len(analysis.anomalies) and convergence == analysis.convergence_step:
        return analysis
    return replace(analysis, anomalies=kept, convergence_step=convergence)


def _run_facts(run_id: str, label: str, run: Run, series: dict[str, Series], name: str,
               metric: MetricReport, eval_anomalies: Mapping[str, tuple] | None = None) -> RunFacts:
    """What the comparisons across runs read of a run's primary metric.

    Runs are compared on the median of the last finite values of the whole visible series.
    """
    steps, values = series[name].visible()
    steps = np.asarray(steps, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    analysis = replace(metric.analysis, final=final_value(values))
    return RunFacts(str(run_id), str(label), dict(run.config), analysis, steps, values,
                    metric=name, source=str(run.source), format=str(run.format),
                    metric_names=frozenset(series), eval_anomalies=MappingProxyType(dict(eval_anomalies or {})))


def _segments(series: Series | None) -> tuple[SegmentReport, ...]:
    if series is None:
        return ()
    steps = series.steps.view
    return tuple(
        SegmentReport(seg.start_step, float(steps[end - 1]) if end > seg.start else None, seg.reason, end - seg.start)
        for seg, end in series.segment_bounds()
    )


# -- JSON, at the edge --------------------------------------------------------------------------


def json_number(value: float | None, *, whole: bool = False) -> float | int | None:
    """``value`` as JSON can hold it: NaN and infinities become None.

    Args:
        value: a number or None.
        whole: write an integral value as an integer (``100`` rather than ``100.0``).
    """
    if value is None:
        return None
    value = float(value)
    if not math.isfinite(value):
        return None
    if whole and value == int(value) and abs(value) < 2**53:
        return int(value)
    return value


def report_json(report: Report, ignored: list[tuple[str, str]] | None = None) -> dict:
    """The report as ``tuiloss report --json`` prints it (see README for the schema).

    Args:
        report: what :func:`build_report` returned.
        ignored: the files passed over and why; listed under ``ignored`` when given.
    """
    out = {
        "version": report.version,
        "root": report.root,
        "runs": [_run_json(run) for run in report.runs],
        "observations": [observation_json(o) for o in report.observations],
    }
    out["jobs"] = [job_json(job) for job in report.jobs]
    if ignored is not None:
        out["ignored"] = [{"path": path, "reason": why} for path, why in ignored]
    return out


def _run_json(run: RunReport) -> dict:
    return {
        "id": run.id,
        "label": run.label,
        "source": run.source,
        "format": run.format,
        "config": {k: _json_config(v) for k, v in run.config.items()},
        "primary_metric": run.primary_metric,
        "state": run.state.state,
        "state_reason": run.state.reason,
        "skipped": {"lines": run.skipped.lines, "reasons": dict(run.skipped.reasons), "unmatched": run.skipped.unmatched},
        "notices": [{"level": n.level, "message": n.message} for n in run.notices],
        "same_series": list(run.same_series),
        "axis": {
            "step_key": run.axis.key,
            "planned_steps": json_number(run.axis.planned, whole=True),
            "progress": json_number(_progress(run)),
            "coarse": run.axis.coarse,
            "held_lines": run.axis.held,
        },
        "segments": [
            {
                "start_step": json_number(seg.start_step, whole=True),
                "end_step": json_number(seg.end_step, whole=True),
                "reason": seg.reason,
                "points": seg.points,
            }
            for seg in run.segments
        ],
        "metrics": {name: _metric_json(m) for name, m in run.metrics.items()},
        "events": [{"kind": e.kind, "step": json_number(e.step, whole=True), "message": e.message,
                    "before": json_number(e.before), "after": json_number(e.after)} for e in run.events],
    }


def _metric_json(m: MetricReport) -> dict:
    return {
        "points": m.points,
        "first_step": json_number(m.first_step, whole=True),
        "last_step": json_number(m.last_step, whole=True),
        "first": json_number(m.first, whole=True),
        "final": json_number(m.settled_final, whole=True),
        "last": json_number(m.final, whole=True),
        "min": json_number(m.min, whole=True),
        "min_step": json_number(m.min_step, whole=True),
        "role": m.role,
        "coarse_steps": m.coarse_steps,
        "values_per_step": m.values_per_step or None,
        "direction": m.direction.value,
        "convergence_step": json_number(m.convergence_step, whole=True),
        "verdict": verdict_json(m.verdict),
        "analyzed": m.analyzed,
        "anomalies": [anomaly_json(a) for a in m.anomalies],
        "plateaus": [plateau_json(p) for p in m.plateaus],
    }


def verdict_json(verdict) -> dict | None:
    """A verdict's JSON fields (None when the metric was not analysed)."""
    if verdict is None:
        return None
    return {
        "kind": verdict.kind,
        "step": json_number(verdict.step),
        "level": json_number(verdict.level),
        "low": json_number(verdict.low),
        "high": json_number(verdict.high),
        "start": json_number(verdict.start),
        "message": verdict.message,
    }


def anomaly_json(anomaly: Anomaly) -> dict:
    """An anomaly's JSON fields (NaN and Inf become null)."""
    return {
        "kind": anomaly.kind,
        "step": json_number(anomaly.step),
        "end_step": json_number(anomaly.end_step),
        "value": json_number(anomaly.value),
        "baseline": json_number(anomaly.baseline),
        "message": anomaly.message,
        "severity": json_number(anomaly.severity),
        "severity_word": anomaly.severity_word,
    }


def plateau_json(plateau: Plateau) -> dict:
    """A plateau's JSON fields."""
    return {
        "start_step": json_number(plateau.start_step),
        "end_step": json_number(plateau.end_step),
        "mean": json_number(plateau.mean),
        "low": json_number(plateau.low),
        "high": json_number(plateau.high),
        "std": json_number(plateau.std),
    }


def observation_json(observation: Observation) -> dict:
    """An observation's JSON form: its numbers made JSON-safe."""
    return {
        "kind": observation.kind,
        "runs": list(observation.runs),
        "message": observation.message,
        "fields": _json(dict(observation.fields)),
    }


def _json(value):
    if isinstance(value, dict):
        return {str(k): _json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json(v) for v in value]
    if isinstance(value, (float, np.floating)):
        return json_number(float(value))
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    if value is None or isinstance(value, (str, int, bool)):
        return value
    return str(value)  # dates and other config values JSON cannot hold


def _json_config(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


# -- text and markdown -------------------------------------------------------------

def printable(text: object, max_len: int = 200) -> str:
    """Text from a log made safe for a terminal (see :mod:`tuiloss.core.sanitize`)."""
    return safe_label(text, max_len)


_HEADER = ("#", "run", "format", "metric", "points", "steps", "first", "last", "min", "skipped", "state")
_RIGHT = {0, 4, 6, 7, 8, 9}


def summary_rows(report: Report) -> list[tuple[str, ...]]:
    """One row per run: label, format, primary metric, points, step range, values."""
    rows = []
    for index, run in enumerate(report.runs, 1):
        m = run.primary
        label = printable(run.label, 60)
        if m is None:
            rows.append((str(index), label, run.format, "-", "0", "-", "-", "-", "-", f"{run.skipped.lines:,}",
                         run.state.state))
            continue
        last = fmt_value(finite(m.final)) if finite(m.final) is not None or not m.points else "NaN"
        rows.append((
            str(index), label, run.format, printable(m.name, 40), f"{m.points:,}",
            f"{fmt_step(finite(m.first_step))}-{fmt_step(finite(m.last_step))}",
            fmt_value(finite(m.first)), last, fmt_value(finite(m.min)), f"{run.skipped.lines:,}", run.state.state,
        ))
    return rows


def metric_title(run: RunReport) -> str:
    """The primary metric and which way it is better: ``xent, lower is better``."""
    m = run.primary
    if m is None:
        return printable(run.primary_metric or "-", 40)
    return f"{printable(m.name, 40)}, {describe.direction(m.direction.value)}"


def _by_severity(m: MetricReport) -> tuple[Anomaly, ...]:
    """The anomalies most severe first, as the report and the panel list them."""
    return m.analysis.by_severity() if m.analysis is not None else ()


def eval_metrics(run: RunReport) -> list[MetricReport]:
    """The run's analysed metrics other than the primary one (its evaluation series)."""
    return [m for name, m in run.metrics.items() if name != run.primary_metric and m.analysis is not None]


def anomaly_notes(run: RunReport) -> list[str]:
    """The anomalies of the primary metric, then those of its eval series, each most severe first."""
    m = run.primary
    if m is None:
        return []
    notes = [f"{a.kind} ({a.severity_word}): {printable(a.message)}" for a in _by_severity(m)]
    for other in eval_metrics(run):
        notes += [f"{a.kind} ({a.severity_word}) in {printable(other.name, 40)}: {printable(a.message)}"
                  for a in _by_severity(other)]
    return notes


def run_findings(run: RunReport) -> list[str]:
    """Sentences about one run's primary metric: anomalies first, then the rest."""
    m = run.primary
    if m is None:
        if run.metrics:
            notes = [describe.no_quality_metric([printable(name, 40) for name in run.metrics])]
        else:
            notes = [describe.no_metrics(run.skipped.lines)]
        return notes + axis_notes(run) + [f"{notice.level}: {printable(notice.message)}" for notice in run.notices]
    final = fmt_value(finite(m.settled_final)) if finite(m.settled_final) is not None else "NaN"
    notes = anomaly_notes(run)
    notes += [describe.plateau(p) for p in m.plateaus]
    if m.points and m.analyzed:
        notes.append(describe.settling(m.verdict.message if m.verdict is not None else None, final, None,
                                       finite(m.convergence_step)))
    if run.state.state in ("killed", "crashed"):
        notes.append(describe.run_ended(run.state.state, printable(run.state.reason, 80), finite(m.last_step)))
    notes += [describe.segment(finite(seg.start_step), seg.reason) for seg in run.segments[1:]]
    notes += axis_notes(run)
    notes += event_notes(run)
    if run.same_series:
        notes.append(describe.same_series([printable(label, 80) for label in run.same_series]))
    if run.skipped.lines:
        reasons = [(printable(why, 80), count) for why, count in run.skipped.reasons.items()]
        notes.append(describe.skipped(run.skipped.lines, reasons))
    notes += [f"{notice.level}: {printable(notice.message)}" for notice in run.notices]
    return notes


def _progress(run: RunReport) -> float | None:
    """How far the primary metric got of the total the log planned (0.0014 of 1.7M), None if unsaid.

    A run past its "plan" shows that the total was another counter's (a bar loading 4 shards):
    no progress is said then, nor on a coarse axis: its fractional epochs are not the planned
    steps (Hugging Face's dicts under Unsloth's ``Total steps = 60``).
    """
    m = run.primary
    if run.axis.planned is None or run.axis.coarse or m is None or finite(m.last_step) is None:
        return None
    share = m.last_step / run.axis.planned
    return share if share <= 1.01 else None


def axis_notes(run: RunReport) -> list[str]:
    """What the report and the panel say of a run's step axis: progress of the planned total,
    a coarse axis, values read as their median per step, lines still held."""
    m = run.primary
    notes = []
    if m is not None and m.points:
        if _progress(run) is not None:
            notes.append(describe.progress(finite(m.last_step), run.axis.planned))
        if m.per_step_median:
            notes.append(describe.per_step_median(m.points, m.distinct_steps, m.values_per_step))
        elif m.coarse_steps or run.axis.coarse:
            notes.append(describe.coarse_axis(m.points, m.distinct_steps))
    if run.axis.held:
        notes.append(describe.held_lines(run.axis.held))
    return notes


#: Learning-rate and loss-scale events listed one by one in the text report, at most.
LISTED_EVENTS = 4


def event_notes(run: RunReport) -> list[str]:
    """The run's events in the text report: how many of each kind, and its LR changes when few.

    Evaluations and the segments (said above) are left out; ``--json`` lists every event.
    """
    shown = [e for e in run.events if e.kind not in ("eval", "segment")]
    if not shown:
        return []
    notes = [f"events: {counted(shown)}"]
    lr = [e for e in shown if e.kind in ("lr_drop", "lr_restart")]
    if 0 < len(lr) <= LISTED_EVENTS:
        notes += [f"at {fmt_step(e.step)}: {printable(e.message, 120)}" for e in lr]
    return notes


def _headline(report: Report) -> str:
    runs = report.runs
    points = sum(r.primary.points for r in runs if r.primary is not None)
    skipped = sum(r.skipped.lines for r in runs)
    root = f" in {printable(report.root)}" if report.root else ""
    return (f"tuiloss {report.version}: {len(runs)} run{'s' if len(runs) != 1 else ''}{root}, "
            f"{points:,} points of the primary metric, {skipped:,} line{'s' if skipped != 1 else ''} skipped")


def render_text(report: Report, *, verbose: bool = False, ignored: list | None = None) -> str:
    """The report as an aligned plain-text table followed by the findings."""
    lines = [_headline(report), ""]
    rows = summary_rows(report)
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(_HEADER)]

    def fmt_row(row):
        cells = (c.rjust(w) if i in _RIGHT else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths)))
        return "  ".join(cells).rstrip()

    lines += [fmt_row(_HEADER), *map(fmt_row, rows)]
    findings = []
    for index, run in enumerate(report.runs, 1):
        notes = run_findings(run)
        if notes:
            anomalies = len(anomaly_notes(run))
            findings.append(f"{index}. {printable(run.label, 80)} ({metric_title(run)})")
            findings += [f"  {'!' if i < anomalies else '-'} {note}" for i, note in enumerate(notes)]
    if findings:
        lines += ["", "Findings", *findings]
    if report.observations:
        lines += ["", "Across runs", *(f"  - {printable(o.message, 400)}" for o in report.observations)]
    if report.jobs:
        lines += ["", "Ranks", *(f"  {mark} {note}" for mark, note in rank_notes(report))]
    if ignored:
        lines += ["", f"Passed over {len(ignored):,} file{'s' if len(ignored) != 1 else ''} that are not logs"
                  + ("" if verbose else " (--verbose lists them)")]
        if verbose:
            lines += [f"  {printable(path, 300)}: {why}" for path, why in ignored]
    return "\n".join(lines) + "\n"


def _md(text: str, table: bool = False) -> str:
    """Text from a log in markdown (a table cell, a heading, a finding): shown, never rendered."""
    return escape_markdown(text, table=table)


def render_markdown(report: Report) -> str:
    """The report as markdown: a table of runs, findings per run, observations."""
    lines = [f"**{_headline(report)}**", ""]
    lines.append("| " + " | ".join(_HEADER) + " |")
    lines.append("|" + "|".join("---:" if i in _RIGHT else "---" for i in range(len(_HEADER))) + "|")
    lines += ["| " + " | ".join(_md(cell, table=True) for cell in row) + " |" for row in summary_rows(report)]
    for index, run in enumerate(report.runs, 1):
        notes = run_findings(run)
        if notes:
            lines += ["", f"### {index}. {_md(printable(run.label, 80))} ({_md(metric_title(run))})", ""]
            lines += [f"- {_md(note)}" for note in notes]
    if report.observations:
        lines += ["", "### Across runs", ""]
        lines += [f"- {_md(printable(o.message, 400))}" for o in report.observations]
    if report.jobs:
        lines += ["", "### Ranks", ""]
        lines += [f"- {_md(note)}" for _, note in rank_notes(report)]
    return "\n".join(lines) + "\n"


def rank_notes(report: Report) -> list[tuple[str, str]]:
    """The Ranks section: each job with its ranks, then what was found (``!``) or kept apart."""
    notes = []
    for job in report.jobs:
        notes.append(("-", f"{printable(job.label, 200)}: one job of {job.summary}"))
        notes += [("!", printable(finding.message, 400)) for finding in job.findings]
        notes += [("-", printable(apart.message, 400)) for apart in job.apart]
    return notes


def nothing_found(paths: list[str], ignored: list[tuple[str, str]]) -> str:
    """Why no run is shown: what was looked at, and why each file was passed over (the first few)."""
    where = ", ".join(printable(p, 200) for p in paths)
    if not ignored:
        return f"no training logs found in {where}: no files there"
    shown = "; ".join(f"{printable(path.rsplit('/', 1)[-1], 80)}: {printable(why, 120)}" for path, why in ignored[:5])
    more = f"; and {len(ignored) - 5} more" if len(ignored) > 5 else ""
    return (f"no training logs found in {where}: passed over {len(ignored)} "
            f"file{'s' if len(ignored) != 1 else ''} ({shown}{more})")
