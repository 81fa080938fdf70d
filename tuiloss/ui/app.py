"""The live viewer: ``tuiloss watch`` and ``tuiloss demo``.

Threads: the driver (:mod:`tuiloss.core.driver`) reads files and posts batches; the insights
thread (:mod:`tuiloss.ui.insights`) analyses frozen snapshots and posts reports. Only the UI
thread touches the store, the widgets and the plot: it applies batches with
:func:`~tuiloss.core.engine.apply_result` and redraws at most ten times a second, only when
something changed. What each widget shows is worked out by headless helpers (selection,
curves, findings, panel, runstate); this module composes, routes messages and keys, and draws.
What needs numpy loads after the first frame (:mod:`tuiloss.ui.startup`).
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Callable

from rich.text import Text
from textual import events, on
from textual.app import App, ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Footer
from textual.worker import get_current_worker

from tuiloss.config import Config
from tuiloss.core.analysis.display import step_label
from tuiloss.ui import collection, keys, messages
from tuiloss.ui.markup import safe_label
from tuiloss.ui.reads import PendingReads
from tuiloss.ui.repaint import MainScreen
from tuiloss.ui.screens import HelpScreen, MetricScreen
from tuiloss.ui.selection import ChartPacing, Selection, metric_counts, metrics_label
from tuiloss.ui.startup import DeferredStart
from tuiloss.ui.throttle import Throttle
from tuiloss.ui.widgets import FilterBar, InsightsPanel, KeysFooter, LossChart, RunList, StatusBar
from tuiloss.ui.widgets.status_bar import Status

if TYPE_CHECKING:
    from tuiloss.core.analysis import Anomaly
    from tuiloss.core.driver import Ingested
    from tuiloss.core.engine import Engine, Options, ReadResult
    from tuiloss.core.report import Report
    from tuiloss.core.store import Run

#: Narrower than this, the insights panel starts hidden and stacks under the chart.
NARROW = 100
REDRAW_INTERVAL = 0.1
#: Once loaded, the redraws that new reads or reports ask for are this many redraw intervals
#: apart at least while they come faster than the frames (see Throttle; a key's frame keeps the
#: interval): a log followed line by line costs fewer frames, and each of its points is still on
#: screen well within a quarter of a second.
FOLLOW_PACE = 1.5
#: Seconds between two slices of the reads waiting (see PendingReads): the event loop goes round.
READ_GAP = 0.001


class TuilossApp(DeferredStart, App[None]):
    """Charts, runs list, insights and status of every run under the watched paths."""

    CSS_PATH = "tuiloss.tcss"
    TITLE = "tuiloss"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS = keys.BINDINGS

    def __init__(
        self,
        config: Config,
        *,
        engine_factory: Callable[[list[str], Options], Engine] | None = None,
        watcher_factory: Callable[[list[str], float | None], object] | None = None,
        clock: Callable[[], float] | None = None,
        export_dir: str | None = None,
        redraw_interval: float = REDRAW_INTERVAL,
    ) -> None:
        # NO_COLOR: Textual drops colour entirely with native ANSI colours (else it draws greys).
        super().__init__(ansi_color=True if os.environ.get("NO_COLOR") else None)
        self.config = config
        self._factories = engine_factory, watcher_factory
        self.clock = clock or time.time
        self.export_dir = export_dir
        self.redraw_interval = redraw_interval
        self.report_root = config.paths[0] if len(config.paths) == 1 else None
        self.selection = Selection(config.metric)
        self.pacing = ChartPacing()  # runs join the chart a slice per frame
        self._keyed = False  # the next frame is a key's: no run new to the chart joins in it
        self._admit_due = False  # a redraw is set for when the keys rest (see ChartPacing.keyed)
        self.watch_mode, self.mode_reason = "starting", ""
        self.files = 0
        self.load_progress: float | None = 0.0
        self.loaded = self.booted = False
        self.error: str | None = None
        # A slow frame (thousands of curves) makes the redraws that no key asked for rarer: the
        # UI thread stays mostly free for keys, whose frames do not wait out the interval.
        self.redraws = Throttle(self.set_timer, self._redraw, lambda: max(self.redraw_interval, 2 * self._frame_seconds),
                                pace=lambda: max(FOLLOW_PACE * self.redraw_interval, 2 * self._frame_seconds))
        self._frame_seconds = 0.0  # what the last redraw took on this thread
        self._lines_due = True  # the next frame draws the runs list and the status line too (see _redraw)
        self._lines_owed = False  # a frame left them to the tick
        self._panel_rest = Throttle(self.set_timer, self._draw_insights, lambda: 0.05)  # blocks left to make
        self._stopped = False
        self._main_screen = None
        self._narrow = False
        self._counts_memo: tuple | None = None
        self._reported_memo: tuple | None = None  # (report, its runs' metrics), see _reported_metrics
        self._store_version = 0  # goes up with every read applied (the key of the counts _listed keeps)
        self._listed_memo: tuple | None = None
        self._shown_memo: tuple | None = None  # ((every run, selection version), listed, shown), see _which
        self.reads = PendingReads(self._apply_part)  # applied a slice at a time: keys get in between
        self._reads_due = False  # the next slice is asked for
        self._load_due = False  # the load finished behind reads still waiting

    # -- layout -------------------------------------------------------------------------------

    def get_default_screen(self) -> MainScreen:
        """Textual's screen, whose partial updates render only the rows that changed (see :mod:`tuiloss.ui.repaint`)."""
        return MainScreen(id="_default")

    def compose(self) -> ComposeResult:
        self.chart, self.run_list, self.insights_panel = LossChart(id="chart"), RunList(id="runs"), InsightsPanel(id="insights")
        self.filter_input, self.status_bar = FilterBar(id="filter"), StatusBar(id="status")
        with Horizontal(id="body"):
            with Vertical(id="left"):
                yield self.chart
                yield self.run_list
            yield self.insights_panel
        yield self.filter_input
        yield self.status_bar
        yield KeysFooter()

    def on_mount(self) -> None:
        self._main_screen = screen = self.screen  # the current screen may later be a modal
        self._lay_out(self.size.width)
        screen.set_class(self.config.ascii, "ascii")
        self.run_list.ascii = self.config.ascii
        self.run_list.border_title = "runs"
        self.run_list.focus()
        self.call_after_refresh(self.boot_when_drawn)

    def on_resize(self, event: events.Resize) -> None:
        # The event has the new size; the app's own may still be the old one.
        if self._main_screen is not None and (event.size.width < NARROW) != self._narrow:
            self._lay_out(event.size.width)
        self.schedule_redraw()

    def _lay_out(self, width: int) -> None:
        """The layout a fresh start at ``width`` columns draws: narrow ones stack the panel, hidden."""
        self._narrow = narrow = width < NARROW
        self._main_screen.set_class(narrow, "narrow")
        self.insights_panel.set_class(narrow, "hidden")
        self._main_screen.set_class(not narrow, "with-insights")

    def _ingest(self) -> None:
        worker = get_current_worker()
        self.ingestor.run(should_stop=lambda: worker.is_cancelled)

    def _stop_threads(self) -> None:
        if not self._stopped:
            self._stopped = True
            if self.booted:
                self.ingestor.stop()
                self.insights.stop()

    def on_unmount(self) -> None:
        self._stop_threads()

    async def action_quit(self) -> None:
        self._stop_threads()
        self.exit()

    # -- data in ------------------------------------------------------------------------------

    @on(messages.RecordsIngested)
    def apply_records(self, message: messages.RecordsIngested) -> None:
        self.reads.add(message.batch)
        if not self._reads_due:
            self._apply_reads()

    def _apply_reads(self) -> None:
        """Apply the reads waiting for a few milliseconds, the rest once the event loop went round
        (a key pressed meanwhile goes from widget to widget first: a callback queued on the app
        would come before it); while a key's frame is due, after that frame (see _redraw)."""
        self._reads_due = False
        if self._keyed or self._stopped:
            return
        if self.reads.apply_some():
            self._reads_due = True
            self.set_timer(READ_GAP, self._apply_reads)
        elif self._load_due:
            self._load_due = False
            self.finish_load()

    def _apply_part(self, event: Ingested, result: ReadResult, last: bool) -> None:
        try:
            self._apply(event, result)
        finally:
            if last:  # the read is in
                self.ingestor.ack()

    @on(messages.WatchStarted)
    def show_watch_mode(self, message: messages.WatchStarted) -> None:
        self.watch_mode, self.mode_reason = message.mode, message.reason
        self._draw_status()

    @on(messages.LoadFinished)
    def finish_load(self) -> None:
        if self.reads:  # finished once its last reads are in
            self._load_due = True
            return
        self.load_progress = None
        self.loaded = True
        self.findings.baseline_generation = self.insights.sent + 1
        self.request_insights(now=True)
        self.schedule_redraw()

    @on(messages.IngestFailed)
    def show_ingest_failure(self, message: messages.IngestFailed) -> None:
        self.error = message.error
        self.notify(safe_label(message.error, 300), title="tuiloss", severity="error", markup=False)
        self._draw_status()

    def _apply(self, event: Ingested, result: ReadResult) -> None:
        """Apply ``result``, ``event``'s read or a part of it (see :class:`~tuiloss.ui.reads.PendingReads`)."""
        new = self.late.take_read(self.store, result, self.options, self.clock(), self.selection, self.activity,
                                  event.activity, watching=self.loaded)
        if not self.loaded:
            collection.step()  # what a long load made is frozen as it goes (a no-op unless it outlasts the hold)
            self.findings.initial_runs.update(new)
            self.load_progress = event.progress if event.progress is not None else self.load_progress
        self.files = event.files or self.files
        self._store_version += 1
        self.error = next((n.message for n in reversed(result.notices) if n.level == "error"), self.error)
        if result.new_runs or any(update.run_id in self.store.runs for update in result.updates):
            if not (self.loaded and event.busy) or result.new_runs or result.notices:
                self._lines_due = True
            self.redraws.request(paced=self.loaded)
            self.insights.request(paced=self.loaded)

    # -- insights -------------------------------------------------------------------------------

    def request_insights(self, now: bool = False) -> None:
        """Analyse the shown runs again soon (see :class:`~tuiloss.ui.feed.InsightsFeed`)."""
        self.insights.request(now)

    @property
    def report(self) -> Report | None:
        """The newest analysis of the shown runs, ``None`` before the first (or after ``m``)."""
        return self.insights.report

    @on(messages.InsightsReady)
    def take_insights(self, message: messages.InsightsReady) -> None:
        before = self.report
        if self.insights.take(message.ready):
            self._announce(self.findings.take(message.ready.report, message.ready.generation))
            self._draw_insights()
            if self.late.chart_unchanged(before, self.report):  # the same marks: no frame of every curve
                self._draw_list()
            else:
                self._lines_due = True
                self.redraws.request(paced=self.loaded)
            baseline = self.findings.baseline_generation  # the first analysis of the whole load
            if not self.loaded or baseline is None or message.ready.generation < baseline:
                pass  # an analysis of part of the load: the rest of its first analysis is still to come
            elif collection.held():
                self.call_after_refresh(collection.release, True)  # the findings are drawn first
            elif collection.unsettled():
                self.call_after_refresh(collection.settle)  # the load outlasted the hold

    def _check_stalls(self) -> None:
        """A run that grew while watched and then fell silent for many usual intervals is stalled."""
        fresh, changed = self.findings.check_stalls(self.activity.lively_runs(self.store), self.activity, self.clock())
        self._announce([(self.store.find(run_id).label, anomaly) for run_id, anomaly in fresh])
        if changed:
            self._draw_insights()

    def _announce(self, fresh: list[tuple[str, Anomaly]]) -> None:
        """A toast per finding that is news (and the bell, if asked for)."""
        for label, anomaly in fresh:
            text = f"{safe_label(label, 60)}: {safe_label(anomaly.message, 200)}"
            title = safe_label(self.late.notice_title(anomaly), 20)
            self.notify(text, title=title, severity="warning", timeout=8, markup=False)
        if fresh and self.config.bell:
            self.bell()

    # -- which runs -------------------------------------------------------------------------------

    def all_runs(self) -> list[Run]:
        """Every run of the store (each log's runs), the same list while the runs listed are the
        same (see :meth:`~tuiloss.core.store.Store.listing`): only the logs a read changed are
        looked at again."""
        return self.store.listing()

    def listed_runs(self) -> list[Run]:
        """Runs in the list: all of them, or those matching the filter."""
        return list(self._which()[0])

    def shown_runs(self) -> list[Run]:
        """Runs on the chart and in the insights: listed and switched on."""
        return list(self._which()[1])

    def _which(self) -> tuple[list[Run], list[Run]]:
        """(the listed runs, the shown ones), worked out again only when the runs listed or the
        selection changed: every frame and analysis asks, and ten thousand runs cost milliseconds."""
        runs = self.all_runs()
        key = (runs, self.selection.version)
        memo = self._shown_memo
        if memo is None or memo[0][0] is not runs or memo[0][1] != key[1]:
            listed = self.selection.listed(runs)
            memo = self._shown_memo = (key, listed, [run for run in listed if self.selection.is_on(run.id)])
        return memo[1], memo[2]

    # -- drawing ----------------------------------------------------------------------------------

    def schedule_redraw(self) -> None:
        """Redraw soon, at most every ``redraw_interval`` seconds."""
        self._lines_due = True
        self.redraws.request()

    def settled(self) -> bool:
        """Whether the screen is at rest: loaded, nothing read waits to be applied, no redraw pending
        (nor one set for when the keys rest, with runs waiting to join the chart), and the runs list and
        status line are up to date (a busy log's last frame leaves them to the tick).

        Tests wait on this before they look.
        """
        return (self.loaded and self.ingestor.idle and not self.redraws.pending and not self._admit_due
                and not self._lines_owed)

    def on_loss_chart_resized(self, _: LossChart.Resized) -> None:
        self.chart.fit_toasts()
        self.schedule_redraw()

    def _redraw(self) -> None:
        if self._stopped or not self.booted:
            return
        began, keyed = time.perf_counter(), self._keyed
        self._draw_chart()
        if self._lines_due:  # else a busy log's read: its points are on the chart, its numbers come with the tick
            self._lines_due = self._lines_owed = False
            self._draw_list()
            self._draw_status()
        else:
            self._lines_owed = True
        self._frame_seconds = time.perf_counter() - began
        if keyed:  # a toggle's analysis, asked for once its frame is out (see _toggle), and the reads held back
            self.call_after_refresh(self.request_insights, True)
            if self.reads and not self._reads_due:
                self._reads_due = True
                self.call_after_refresh(self._apply_reads)
        if self.report is not None:  # after this frame: with thousands of runs the panel's text is the slow part
            self.call_after_refresh(self._draw_insights)

    def _tick(self) -> None:
        """Once a second: ages, run states and stalls change with time alone; and the runs list's
        values and the status line's counts of a busy log's reads (see :attr:`Ingested.busy`
        and _redraw: a log written more than twenty lines a second has its points drawn at
        each read, and its numbers once a second)."""
        if not self._stopped:
            collection.step()  # reads done, the load's findings not yet drawn: what they make is frozen too
            self._check_stalls()
            self._draw_status()
            self._draw_list()
            self._lines_owed = False

    def _draw_chart(self) -> None:
        chart, shown = self.chart, self.pacing.admit(self.shown_runs(), fresh=not self._keyed)
        self._keyed = False
        reported = self._reported_metrics()
        missing = self.xaxis.prepare(shown)
        curves = self.curves.prepare(shown, self.selection, self.view, self.late.marks(self.report), reported,
                                     xaxis=self.xaxis)
        # the shown runs' metric (common_metric), from what prepare read of each run
        label = self.selection.metric or metrics_label(self.curves.metrics) or "loss"
        if self.grouping.on:
            curves = self.grouping.curves(curves, list(self.store), self.selection)
        spec = self.curves.chart(curves, self.view, chart.plot_width, height=chart.plot_height,
                                 metric=safe_label(label, 40), background=chart.background, xaxis=self.xaxis,
                                 follow=self.loaded)
        if self.grouping.on and not spec.empty:
            spec.title = self.grouping.title(spec.title, self.config.ascii)
        note = self.xaxis.missing_note(missing, len(shown))
        if note is not None:  # runs without the chosen x axis are said, never dropped silently
            spec.title += f"{' - ' if self.config.ascii else ' · '}{note}"
            if len(missing) == len(shown):
                spec.empty = f"{note}: X shows the next x axis"
        if self.view.events:
            self.eventmarks.mark(spec, shown, self.selection, self.xaxis)
        if self.loaded and not self.store.runs:  # say what was found, and why nothing is shown
            spec.empty = self.late.nothing_found(list(self.config.paths), sorted(self.engine.ignored.items()))
        if not self.loaded and self.load_progress is not None:
            spec.title += f"{' - ' if self.config.ascii else ' · '}loading {self.load_progress:.0%}"
        if self.pacing.waiting:  # the next frames draw them, once the keys rest
            spec.title += f"{' - ' if self.config.ascii else ' · '}{self.pacing.waiting:,} runs to draw"
            resting = self.pacing.resting()
            if resting:
                if not self._admit_due:
                    self._admit_due = True
                    self.set_timer(resting, self._admit_rest)
            else:
                self.schedule_redraw()
        chart.draw(spec)

    def _admit_rest(self) -> None:
        """The keys rested: the runs waiting to join the chart join in the next frames."""
        self._admit_due = False
        self.schedule_redraw()

    def _reported_metrics(self) -> dict[str, str | None]:
        """Each reported run's metric (its findings are marked on that curve), by run id, kept
        while the report is the same: a frame of thousands of curves asks for it every time."""
        report, memo = self.report, self._reported_memo
        if memo is None or memo[0] is not report:
            memo = self._reported_memo = (report, {entry.id: entry.primary_metric for entry in (report.runs if report else ())})
        return memo[1]

    def _draw_list(self) -> None:
        cursor, run_list, selection = self.view.cursor, self.run_list, self.selection
        axis = None if self.xaxis.is_step else self.xaxis
        value_at = None if cursor is None else (lambda run: self.late.value_at_cursor(run, selection, cursor, axis))
        numbered = self._listed()[0]
        rows = self.late.ListedRuns(numbered, selection, plain=self.view.plain, value_at=value_at,
                                    findings=self._finding_counts(), stalled=self.findings.stalls,
                                    new={key[0] for key in self.findings.new}, activity=self.activity, now=self.clock(),
                                    jobs=self.activity.jobs)
        if self.grouping.on:
            rows = self.grouping.rows(list(rows), list(self.store), self.selection, self.view.plain, self.config.ascii)
        run_list.show(rows, value_header=f"@{self._cursor_label(cursor)}" if cursor is not None else "last",
                      label_width=max(10, run_list.size.width - 33))
        title = (f"runs ({len(rows)}/{self._listed()[1]} match /{safe_label(selection.filter.pattern, 20)}/)"
                 if selection.filter else "runs")
        near = self._events_near(cursor, len(title) + 4)
        if near:
            title = f"{title}{' - ' if self.config.ascii else ' · '}{near}"
        if run_list.border_title != title:  # setting it repaints the whole list
            run_list.border_title = title

    def _listed(self) -> tuple[list, int, int, int, int]:
        """(the listed runs numbered, how many runs, how many shown, how many points, how many
        lines skipped): the numbers kept while the runs listed and the selection are the same,
        the counts while no read was applied: the once-a-second tick of ten thousand idle runs
        costs what one does, and a read of a few runs does not number them all again."""
        runs = self.all_runs()  # its jobs are worked out as each read is applied (take_read)
        memo = self._listed_memo
        selection = self.selection
        if memo is None or memo[0] is not runs or memo[1] != (selection.version, selection.unnumbered):
            numbered = selection.numbered(runs)
            shown = sum(1 for _, run in numbered if selection.is_on(run.id))
            memo = self._listed_memo = (runs, (selection.version, selection.unnumbered), numbered, shown, None)
        counts = memo[4]
        if counts is None or counts[0] != self._store_version:
            counts = (self._store_version, self.store.points, self.store.skipped_lines)
            self._listed_memo = memo = memo[:4] + (counts,)
        return memo[2], len(runs), memo[3], counts[1], counts[2]

    def _finding_counts(self) -> dict[str, int]:
        """The list's ``!`` counts, worked out again only when the report or the stalls changed."""
        report, stalls = self.report, self.findings.stalls
        memo = self._counts_memo
        if memo is None or memo[0] is not report or memo[1] is not stalls:
            memo = self._counts_memo = (report, stalls, self.findings.counts(report))
        return memo[2]

    def _cursor_label(self, cursor: float) -> str:
        if self.xaxis.is_step:
            return step_label(round(cursor))
        spec = self.chart.spec
        span = (10 ** spec.x_lim[1] - 10 ** spec.x_lim[0]) if spec is not None and spec.x_log else (
            spec.x_lim[1] - spec.x_lim[0] if spec is not None else 0.0)
        return self.xaxis.formatter(span)(cursor)

    def _events_near(self, cursor: float | None, taken: int) -> str:
        """The events near the step cursor, for the runs list's top border after ``taken`` cells (when ``t`` shows them)."""
        spec = self.chart.spec
        if cursor is None or not self.view.events or spec is None:
            return ""
        numbers = {run.id: number for number, run in self._listed()[0]}
        found = self.eventmarks.near(spec, self.shown_runs(), numbers, self.xaxis, cursor, self.chart.plot_width)
        return safe_label(self.late.near_text(found, self.config.ascii, max(20, self.run_list.size.width - taken - 2)), 400)

    def _draw_status(self) -> None:
        if not self.booted:
            return
        _, runs, shown, points, skipped = self._listed()
        self.status_bar.show(Status(
            runs=runs, shown=shown, points=points, files=self.files,
            mode=self.watch_mode, reason=self.mode_reason, since_last=self.activity.since_last(self.clock()),
            skipped=skipped, paused=self.ingestor.paused,
            loading=self.load_progress if not self.loaded else None,
            filter=self.selection.filter.pattern if self.selection.filter else None, error=self.error,
            ascii=self.config.ascii, remote=remote.status() if (remote := getattr(self.engine, "remote", None)) else (),
        ))

    def _draw_insights(self) -> None:
        panel = self.insights_panel
        if self.report is None or self._keyed:  # a key's frame first: it draws the panel after (_redraw)
            return
        width = max(20, panel.size.width - 1) if panel.size.width else 40
        text = self.panel.render(self.report, self.all_runs(), self.selection, stalls=self.findings.stalls,
                                 new=self.findings.new, plain=self.view.plain, ascii=self.config.ascii, width=width,
                                 jobs=self.activity.jobs.jobs)
        if text is not None:
            if self.grouping.on:  # the configurations first: what the seeds say together
                text = self.grouping.panel(self.report, list(self.store), self.selection, plain=self.view.plain,
                                           ascii=self.config.ascii, width=width) + Text("\n") + text
            panel.show(text)
            if self.panel.behind:  # made a slice at a time: keys get in between
                self._panel_rest.request()

    # -- actions ------------------------------------------------------------------------------------

    def _set_view(self, **changes) -> None:
        self.view = replace(self.view, **changes)
        self.schedule_redraw()

    def action_toggle_log_x(self) -> None:
        self._set_view(log_x=not self.view.log_x)

    def action_toggle_events(self) -> None:
        self._set_view(events=not self.view.events)
        self._draw_list()

    def action_cycle_x_axis(self) -> None:
        shown = self.shown_runs()
        before = self.xaxis.name
        after = self.xaxis.cycle(shown)
        if after == before:
            self.notify("the shown runs log no wall time, time since start or progress counter (tokens, samples)",
                        timeout=3, markup=False)
            return
        self._set_view(cursor=None, zoom=0)  # the cursor and zoom were places on the other axis
        self._draw_list()

    def action_toggle_log_y(self) -> None:
        self._set_view(log_y=not self.chart.spec.y_log)  # from what is shown, auto or not

    def action_cycle_smoothing(self) -> None:
        self._set_view(smoothing=self.late.next_smoothing(self.view.smoothing))
        self.notify(f"smoothing: EMA {self.view.smoothing:g}" if self.view.smoothing else "smoothing off",
                    timeout=1.5, markup=False)

    def action_toggle_eval(self) -> None:
        self._set_view(show_eval=not self.view.show_eval)
        if self.view.show_eval and not any(self.selection.eval_of(run) for run in self.shown_runs()):
            self.notify("no evaluation series (val_loss, eval_loss...) in the shown runs", timeout=3, markup=False)

    def action_zoom(self, steps: int) -> None:
        """``steps`` more (or, negative, fewer) halvings of the shown step range, 0 to 16."""
        self._set_view(zoom=min(max(self.view.zoom + steps, 0), 16) if steps else 0)

    def action_move_cursor(self, columns: int) -> None:
        self._move_cursor(self.late.moved_cursor(self.chart.spec, self.view.cursor, columns, self.chart.plot_width))

    def action_cursor_edge(self, end: bool) -> None:
        self._move_cursor(self.late.edge_step(self.chart.spec, end=end))

    def _move_cursor(self, step: float | None) -> None:
        if step is not None:
            self._set_view(cursor=step)
            self._draw_list()

    def action_escape(self) -> None:
        """Clear the filter being typed; else hide the cursor; else acknowledge the new findings."""
        if self.filter_input.is_open:
            self.filter_input.clear()
        elif self.view.cursor is not None:
            self._set_view(cursor=None)
            self._draw_list()
        elif self.findings.new:
            self.findings.new.clear()
            self._draw_insights()
            self._draw_list()

    def action_toggle_insights(self) -> None:
        panel = self.insights_panel
        panel.toggle_class("hidden")
        shown = not panel.has_class("hidden")
        self._main_screen.set_class(shown, "with-insights")
        if shown:
            self._draw_insights()
        self.schedule_redraw()

    def action_toggle_pause(self) -> None:
        if self.ingestor.paused:
            self.ingestor.resume()
        else:
            self.ingestor.pause()
        self._draw_status()

    def _toggle(self, run_ids: list[str], value: bool | None = None) -> None:
        self.selection.toggle(run_ids, value)
        self.pacing.keyed()  # the runs waiting to join the chart wait for the keys to rest
        self.insights.defer()  # an analysis on its way lets this frame go first
        self._keyed = True
        self._lines_due = True
        self.redraws.request(now=True)  # a key's frame does not wait out the redraw interval
        # The analysis is asked for once that frame is out (_redraw): its snapshot of every shown
        # run is taken on this thread, and with thousands of runs it would hold the frame back
        # (asked for after the next refresh, it came with the runs list's repaint, before the frame).
        self._draw_list()

    def action_toggle_run(self, index: int) -> None:
        run = next((run for number, run in self._listed()[0] if number == index + 1), None)  # the list's own numbers
        if run is not None:
            self._toggle([run.id])

    def action_toggle_highlighted(self) -> None:
        key = self.run_list.highlighted_key
        members = self.grouping.members_of(key, list(self.store))
        if members:  # a configuration's row: its runs all on, or all off if they were
            self._toggle(members, not all(self.selection.is_on(run_id) for run_id in members))
        elif key is not None and members is None:
            self._toggle([key])

    def action_toggle_grouped(self) -> None:
        """Grouped mode: a curve per configuration with its min-max band (``--group-by none`` forbids it)."""
        if not self.grouping.allowed:
            self.notify("grouping is off (--group-by none)", timeout=3, markup=False)
            return
        self.grouping.on = not self.grouping.on
        self.panel.forget()
        groups = self.grouping.groups(list(self.store))
        several = sum(len(g.run_ids) > 1 for g in groups)
        if self.grouping.on:
            self.notify(f"grouped: {len(groups)} configurations, {several} of several runs" if several
                        else "grouped: no two runs share a configuration", timeout=3, markup=False)
        self.schedule_redraw()
        self._draw_list()
        self._draw_insights()

    def action_show_all(self, on: bool = True) -> None:
        self._toggle([run.id for run in self.listed_runs()], on)

    def action_show_only(self) -> None:
        key = self.run_list.highlighted_key
        members = self.grouping.members_of(key, list(self.store))
        if members:  # a configuration's row: only its runs
            self.selection.toggle([run.id for run in self.listed_runs()], False)
            self._toggle(members, True)
        elif key is not None and members is None:
            self.selection.show_only(self.listed_runs(), key)
            self._toggle([key], True)

    def action_filter(self) -> None:
        self.filter_input.open(self.selection.filter)

    @on(FilterBar.Chosen)
    def apply_filter(self, message: FilterBar.Chosen) -> None:
        self.selection.filter = message.pattern
        self.run_list.focus()
        self.request_insights(now=True)
        self.schedule_redraw()
        self._draw_list()
        self._draw_status()

    def action_show_multiples(self) -> None:
        from tuiloss.ui.multiples import MultiplesScreen

        self.push_screen(MultiplesScreen(self))

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def action_pick_metric(self) -> None:
        def chosen(name: str | None) -> None:
            if name is not None:
                self.selection.metric = name or None
                self.insights.restart()
                self.findings.restart(self.insights.sent + 1)
                what, dots = safe_label(name, 60) if name else "each run's primary metric", "..." if self.config.ascii else "…"
                self.insights_panel.show(Text(f"analysing {what}{dots}", style="dim"))
                self.request_insights(now=True)
                self.schedule_redraw()

        self.push_screen(MetricScreen(metric_counts(self.listed_runs()), self.selection.metric), chosen)

    def action_export(self) -> None:
        chart = self.chart.capture() + "\n\n" + self._legend_text()
        try:
            self.last_export, note = self.late.export_shown(
                self.report, self.shown_runs(), chart, requested=self.export_dir, watched=list(self.config.paths),
                root=self.report_root, metric=self.selection.metric, now=self.clock())
        except OSError as exc:
            self.notify(f"export failed: {exc}", severity="error", markup=False)
            return
        message = "wrote {}, {} and {}".format(*self.last_export) + (f" ({note})" if note else "")
        self.notify(message, title="exported", timeout=6, markup=False)

    def _legend_text(self) -> str:
        return self.late.legend_text(list(self.store), self.selection, self.view.plain)


def make_app(config: Config, **options) -> TuilossApp:
    """The viewer for ``config``; the CLI and the tests build it the same way.

    Options (all keyword): ``engine_factory`` builds the core engine from (roots, options), tests
    may wrap it; ``watcher_factory`` builds the watcher from (roots, poll seconds); ``clock`` gives
    wall-clock seconds (tests freeze it for stable screenshots); ``export_dir`` is where ``e``
    writes (default: the current folder, never inside the watched tree).
    """
    return TuilossApp(config, **options)
