"""The insights panel's content: the same findings as ``tuiloss report``.

:class:`InsightsWorker` runs :func:`tuiloss.core.report.build_report` on its own
thread over frozen snapshots of the visible runs (:mod:`tuiloss.ui.snapshot`),
coalescing requests so only the latest is analysed. :func:`render_insights`
turns the typed report into Rich text, with the sentences of
:mod:`tuiloss.core.analysis.describe`. No Textual import here.
"""

from __future__ import annotations

import textwrap
import threading
import time
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Callable

from rich.text import Text

from tuiloss import __version__
from tuiloss.core.analysis import describe
from tuiloss.core.analysis.display import finite, fmt_value
from tuiloss.core.analysis.live import LiveAnalyzer
from tuiloss.core.analysis.metrics import Direction, direction
from tuiloss.core.report import KeptEntries, Report, RunReport, axis_notes, build_report
from tuiloss.core.store import Store, is_eval_metric
from tuiloss.core.sanitize import to_ascii
from tuiloss.ui.chartdata import ANOMALY_GLYPHS
from tuiloss.ui.findings import anomaly_key
from tuiloss.ui.lines import PanelLines, line_count
from tuiloss.ui.markup import safe_label


@dataclass(frozen=True, slots=True)
class InsightsRequest:
    generation: int
    runs: list  # snapshot Runs
    metric: str | None
    root: str | None
    by_configuration: bool = True  # False under --group-by none (see build_report)


@dataclass(frozen=True, slots=True)
class InsightsReady:
    generation: int
    report: Report
    seconds: float


class InsightsWorker:
    """One analysis thread; the newest request replaces any waiting one."""

    def __init__(self, post: Callable[[InsightsReady], None]) -> None:
        self.post = post
        self._pending: InsightsRequest | None = None
        self._cond = threading.Condition()
        self._stopped = False
        self._thread: threading.Thread | None = None
        self.busy = False
        self.analyzers = Analyzers()
        self.kept = QuietEntries(self.analyzers)  # the entries of runs that did not change since the last report

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="tuiloss-insights", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=2)

    def request(self, request: InsightsRequest) -> None:
        with self._cond:
            self._pending = request
            self._cond.notify_all()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while self._pending is None and not self._stopped:
                    self._cond.wait()
                if self._stopped:
                    return
                request, self._pending = self._pending, None
                self.busy = True
            began = time.perf_counter()
            try:
                report = analyse(request, self.analyzers, self.kept)
            except Exception as exc:  # an analysis bug must not take the viewer down
                report = Report(__version__, request.root, (), error=f"{type(exc).__name__}: {exc}")
            finally:
                self.busy = False
            self.post(InsightsReady(request.generation, report, time.perf_counter() - began))


def analyse(request: InsightsRequest, analyzer_for=None, kept: KeptEntries | None = None) -> Report:
    from tuiloss.ui.snapshot import snapshot_store

    return metric_report(snapshot_store(request.runs), request.root, request.metric, analyzer_for, kept,
                         request.by_configuration)


def metric_report(store: Store, root: str | None, metric: str | None, analyzer_for=None,
                  kept: KeptEntries | None = None, by_configuration: bool = True) -> Report:
    """The findings of ``store``'s runs in ``metric`` (picked with ``m``), or each run's primary one.

    With a metric picked, only the runs that have it are analysed and compared ("Across runs");
    a run without it stays in the report with no metric at all (the panel says it lacks the
    metric), never with the findings of its own primary metric.
    """
    if metric is None:
        return build_report(store, root=root, analyzer_for=analyzer_for, kept=kept, by_configuration=by_configuration)
    runs = [run if metric in run.series else replace(run, series={}) for run in store]
    report = build_report(store, root=root, metric=metric, runs=runs, analyzer_for=analyzer_for, kept=kept,
                          by_configuration=by_configuration)
    # a run restarted in its log may lack the metric in one of its parts: that part says so too
    return replace(report, runs=tuple(entry if entry.primary_metric == metric else lacking(entry)
                                      for entry in report.runs))


def lacking(entry: RunReport) -> RunReport:
    """``entry`` as a run without the picked metric: no metric, no findings."""
    return replace(entry, primary_metric=None, metrics=MappingProxyType({}), segments=())


class QuietEntries(KeptEntries):
    """The report's kept entries, whose comparisons of two runs' series wait, as the runs' analyses
    do, while the UI draws a key's frame (:meth:`Analyzers.defer`): ten thousand runs of the same
    curve took most of a second of comparisons, where a key's frame drawn meanwhile took twice as long."""

    def __init__(self, analyzers: Analyzers) -> None:
        super().__init__()
        self._analyzers = analyzers

    def same_points(self, a, b) -> bool:
        self._analyzers.wait()
        return super().same_points(a, b)


class Analyzers:
    """One kept ``LiveAnalyzer`` per (run, metric): each analysis costs what is new.

    Used on the analysis thread, and by a long run's report for its secondary series (grad norms) on a
    helper thread while the analysis thread reports the others: no key is used on two threads at once.
    Without the live analyser, every analysis is a batch one.
    """

    def __init__(self) -> None:
        self._kept: dict[tuple[str, str], LiveAnalyzer] = {}
        self._quiet_until = 0.0  # the UI is drawing a key's frame until then (see defer)

    def defer(self, seconds: float) -> None:
        """Hold the analysis between two runs for up to ``seconds`` (any thread): the UI thread is
        drawing a key's frame, and an analysis holding the GIL meanwhile would make it wait."""
        self._quiet_until = time.monotonic() + min(seconds, 0.5)

    def resume(self) -> None:
        self._quiet_until = 0.0

    def wait(self) -> None:
        """Wait while the UI draws a key's frame (see :meth:`defer`): called between two steps of an analysis."""
        while time.monotonic() < self._quiet_until:
            time.sleep(0.005)

    def __call__(self, run_id: str, metric: str) -> LiveAnalyzer:
        self.wait()  # between two runs' analyses: the UI goes first
        key = (run_id, metric)
        analyzer = self._kept.get(key)
        if analyzer is None:
            higher = direction(metric) is Direction.HIGHER  # as the report analyses it
            analyzer = self._kept[key] = LiveAnalyzer(is_eval=is_eval_metric(metric), higher_is_better=higher)
        return analyzer


# -- rendering ------------------------------------------------------------------------------


class RunTexts:
    """Each run's block of the panel, kept while the run's entry and how it is drawn are the same.

    The panel of a thousand runs is then made of the blocks kept, and the one or two that
    changed (a followed run, a run switched on). What the last panel did not show is dropped.

    A panel goes over the runs for ``budget`` seconds at most (``fewest`` blocks made in any
    case): the runs it did not reach keep the block they had (none before their first) and wait
    for the next panels, which go on from there (:func:`render_rest`). The first report of ten
    thousand runs held the UI thread for a quarter of a second, and each later slice went over
    every run left again.
    """

    def __init__(self, budget: float = 0.02, fewest: int = 16) -> None:
        self._kept: dict[str, tuple[tuple, Text, int]] = {}  # run id -> (what made it, block, its lines)
        self._used: dict[str, tuple[tuple, Text, int]] = {}
        self.made = 0  # blocks made (not kept), for tests
        self.budget, self.fewest = budget, fewest
        self.behind = 0  # runs the last panel did not reach
        self._began, self._made_now, self._reached = 0.0, 0, 0
        #: the last panel's blocks and their line counts, the runs it did not reach (where each
        #: waits in the blocks) and how blocks are drawn: :func:`render_rest` goes on from there
        self.rest: tuple[list[Text], list[int], list[tuple[int, RunReport]], tuple] | None = None

    def begin(self) -> None:
        self._began, self.behind, self._made_now, self._reached = time.perf_counter(), 0, 0, 0
        self.rest = None

    def resume(self) -> None:
        """Begin a panel that goes on with the runs the last one did not reach (see
        :func:`render_rest`): the same runs, so every block kept stays kept."""
        rest = self.rest
        self.begin()
        self.rest = rest
        self._used = self._kept

    def spent(self) -> bool:
        """Whether this panel's budget is spent: the runs after wait for the next one. It makes
        ``fewest`` blocks first, or reaches :data:`REACHED` times as many runs whose blocks it kept
        (a toggle among ten thousand runs keeps every other block: it went over them all)."""
        self._reached += 1
        return ((self._made_now >= self.fewest or self._reached > REACHED * self.fewest)
                and time.perf_counter() - self._began > self.budget)

    def block(self, run: RunReport, drawn: tuple, make: Callable[[], Text]) -> tuple[Text, int]:
        """``run``'s block drawn as ``drawn`` says, and its lines: kept, or made by ``make``."""
        # the entry's metrics are made once per analysis of the run: the same object, the same findings
        key = (run.metrics, run.label, run.notices, run.state.state, run.state.reason, run.segments, run.axis,
               run.skipped, run.deleted, run.primary_metric, drawn)
        seen = self._kept.get(run.id)
        if seen is None or not (seen[0][0] is key[0] and seen[0][1:] == key[1:]):
            block = make()
            seen = (key, block, line_count(block))
            self.made += 1
            self._made_now += 1
        self._used[run.id] = seen
        return seen[1], seen[2]

    def last(self, run_id: str) -> tuple[Text, int]:
        """The block a run not reached shows meanwhile: its last one, or none, and its lines."""
        seen = self._kept.get(run_id)
        if seen is None:
            return _NONE, 0
        self._used[run_id] = seen  # looked at again by the next panel: what made it is not checked here
        return seen[1], seen[2]

    def end(self) -> None:
        self._kept, self._used = self._used, {}


_NONE = Text()  # a run not reached that had no block yet: no line (never written to)
#: A panel that made fewer blocks than its fewest stops at its budget all the same once it reached
#: this many times that many runs (their blocks kept): it still goes further than the last one.
REACHED = 64


def render_insights(report: Report, **how) -> Text:
    """:func:`render_lines` of ``report`` as one text (the blocks one after the other)."""
    return render_lines(report, **how).joined()


def render_lines(
    report: Report,
    *,
    colors: dict[str, str],
    numbers: dict[str, str],
    swatches: dict[str, str],
    new: set[tuple] = frozenset(),  # type: ignore[assignment]
    ascii: bool = False,
    width: int = 40,
    metric: str | None = None,
    kept: RunTexts | None = None,
) -> PanelLines:
    """The panel text: per run of ``report`` its findings, then the observations across runs.

    Lines are wrapped to ``width`` with a hanging indent, so each finding reads as a block.
    ``metric`` is the one picked with ``m`` (``None``: each run's primary metric); a run
    without it says so. ``kept`` (held between panels) keeps each run's block while it is the same.
    The blocks are not joined: the panel reads the lines it shows from them (:class:`PanelLines`).
    """
    out = Text()
    width = max(20, width)
    if report.error:
        _item(out, ascii, width, "!", "bold red", f"analysis failed: {safe_label(report.error, 200)}", indent=0)
    if not report.runs:
        out.append("No runs shown.\n", style="dim")
    blocks, counts = [out], [line_count(out)]
    news: dict[str, set] = {}
    for key in new:
        news.setdefault(key[0], set()).add(key)
    how = (colors, numbers, swatches, news, ascii, width, metric)
    waiting: list[tuple[int, RunReport]] = []  # the runs not reached, where they are in ``blocks``
    if kept is not None:
        kept.begin()
    for run in report.runs:
        if kept is None:
            block = _made(run, _drawn(run, how))
            blocks.append(block)
            counts.append(line_count(block))
        elif waiting or kept.spent():  # the next panels go on from here
            block, count = kept.last(run.id)
            waiting.append((len(blocks), run))
            blocks.append(block)
            counts.append(count)
        else:
            drawn = _drawn(run, how)
            block, count = kept.block(run, drawn, lambda run=run, drawn=drawn: _made(run, drawn))
            blocks.append(block)
            counts.append(count)
    if kept is not None:
        kept.end()
        kept.behind = len(waiting)
        kept.rest = (blocks, counts, waiting, how)
    if report.observations:
        out = Text()
        out.append("Across runs" + (f", in {safe_label(metric, 40)}" if metric else "") + "\n", style="bold underline")
        for obs in report.observations:
            _item(out, ascii, width, "•" if not ascii else "-", "bold", safe_label(obs.message, 400))
        blocks.append(out)
        counts.append(line_count(out))
    return PanelLines(blocks, counts)


def _drawn(run: RunReport, how: tuple) -> tuple:
    """How ``run``'s block is drawn (what its block is kept by, besides its entry)."""
    colors, numbers, swatches, news, ascii, width, metric = how
    fresh = frozenset(news.get(run.id, ()))
    return colors.get(run.id, ""), numbers.get(run.id, "?"), swatches.get(run.id, "■"), fresh, ascii, width, metric


def _made(run: RunReport, drawn: tuple) -> Text:
    block = Text()
    _run_block(block, run, *drawn)
    return block


def render_rest(kept: RunTexts) -> PanelLines:
    """The last panel of :func:`render_lines` again, going on with the runs it did not reach
    (``kept.behind``) as far as the budget allows: what :func:`render_lines` with the same
    arguments would give, at the cost of the runs reached, not of every run left."""
    assert kept.rest is not None
    blocks, counts, waiting, how = kept.rest
    blocks, counts = list(blocks), list(counts)  # the last panel's lines stay as they were
    kept.resume()
    reached = 0
    for at, run in waiting:
        if kept.spent():
            break
        drawn = _drawn(run, how)
        blocks[at], counts[at] = kept.block(run, drawn, lambda run=run, drawn=drawn: _made(run, drawn))
        reached += 1
    left = waiting[reached:]
    kept.end()
    kept.behind = len(left)
    kept.rest = (blocks, counts, left, how)
    return PanelLines(blocks, counts)


def _item(out: Text, ascii: bool, width: int, mark: str, mark_style: str, body: str, style: str = "",
          indent: int = 2) -> None:
    """One finding, wrapped to ``width`` with a hanging indent."""
    if ascii:  # --ascii means ASCII: the sentences' own symbols too (a spread's ±, an arrow)
        mark, body = to_ascii(mark), to_ascii(body)
    lines = textwrap.wrap(body, max(10, width - indent - len(mark) - 1)) or [""]
    pad = " " * (indent + len(mark) + 1)
    out.append(" " * indent)
    out.append(mark, style=mark_style)
    out.append(" " + lines[0], style=style)
    for line in lines[1:]:
        out.append("\n" + pad + line, style=style)
    out.append("\n")


def _run_title(out: Text, run: RunReport, color: str, number: str, swatch: str, width: int) -> None:
    """A run's title line(s) in the panel: its number, swatch and label."""
    head = f"{number} {swatch}"
    title = textwrap.wrap(safe_label(run.label, 200), max(10, width - len(head) - 1)) or [""]
    out.append(head[:-1], style="bold")
    out.append(head[-1], style=color)
    out.append(" " + title[0], style="bold")
    for line in title[1:]:
        out.append("\n" + " " * (len(head) + 1) + line, style="bold")
    out.append("\n")


def _run_block(out: Text, run: RunReport, color: str, number: str, swatch: str, new: frozenset, ascii: bool,
               width: int, metric: str | None) -> None:
    """One run's part of the panel: its title, findings, settling and notes."""
    glyph = 1 if ascii else 0

    def item(mark: str, mark_style: str, body: str, style: str = "", indent: int = 2) -> None:
        _item(out, ascii, width, mark, mark_style, body, style, indent)

    _run_title(out, run, color, number, swatch, width)
    facts = run.primary
    for notice in run.notices:
        if notice.level in ("error", "warning"):
            item("!", "yellow", safe_label(notice.message, 300), "yellow")
    if metric is not None and run.primary_metric != metric:
        item("·", "dim", f"no {safe_label(metric, 60)} in this run", "dim")
        return
    if facts is None or not facts.points:
        item("…", "dim", "no points yet", "dim")
        for note in axis_notes(run):
            item("." if ascii else "·", "dim", note, "dim")
        return
    for anomaly in (facts.analysis.by_severity() if facts.analysis is not None else facts.anomalies):
        mark = ANOMALY_GLYPHS.get(anomaly.kind, ("!", "!"))[glyph]
        fresh = anomaly_key(run.id, anomaly) in new
        body = safe_label(anomaly.message, 400)
        item(mark, f"bold {color}".strip(), ("NEW " if fresh else "") + body, "bold reverse" if fresh else "")
    for name, other in run.metrics.items():  # eval series: spikes, NaN, overfitting
        if name == run.primary_metric or other.analysis is None:
            continue
        for anomaly in other.analysis.by_severity():
            mark = ANOMALY_GLYPHS.get(anomaly.kind, ("!", "!"))[glyph]
            fresh = anomaly_key(run.id, anomaly) in new
            body = f"{safe_label(name, 40)}: {safe_label(anomaly.message, 400)}"
            item(mark, f"bold {color}".strip(), ("NEW " if fresh else "") + body, "bold reverse" if fresh else "")
    for plateau in facts.plateaus:
        item("─" if not ascii else "-", "bold", describe.plateau(plateau))
    conv = finite(facts.convergence_step)
    low = finite(facts.min)
    verdict = facts.verdict
    summary = describe.settling(verdict.message if verdict is not None else None,
                                fmt_value(finite(facts.settled_final)), fmt_value(low) if low is not None else None,
                                conv)
    kind = verdict.kind if verdict is not None else None
    if conv is not None:
        mark = "✓" if not ascii else "+"
    elif kind in ("diverged", "no_progress", "worsening"):
        mark = "!"
    else:
        mark = "…" if not ascii else "~"
    item(mark, "bold", summary)
    if run.state.state in ("killed", "crashed"):  # how the log ends (see core.analysis.state)
        item("■" if not ascii else "#", "bold red" if run.state.state == "crashed" else "yellow",
             describe.run_ended(run.state.state, safe_label(run.state.reason, 80), finite(facts.last_step)), "")
    for seg in run.segments[1:]:
        item(ANOMALY_GLYPHS["reset"][glyph], "yellow",
             describe.segment(finite(seg.start_step), safe_label(seg.reason, 20)), "yellow")
    for note in axis_notes(run):  # progress of the planned total, a coarse or repeated axis
        item("." if ascii else "·", "dim", note, "dim")
    if run.skipped.lines:
        item("·", "dim", describe.skipped(run.skipped.lines), "dim")
    if run.deleted:
        item("!", "yellow", "log deleted; its points are kept", "yellow")
