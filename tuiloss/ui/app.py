"""The live viewer: ``tuiloss watch`` and ``tuiloss demo``.

Threads: the driver (:mod:`tuiloss.core.driver`) reads files and posts
batches; the insights thread (:mod:`tuiloss.ui.insights`) analyses frozen
snapshots and posts reports. Only this module's UI thread touches the store,
the widgets and the plot: it applies batches with
:func:`~tuiloss.core.engine.apply_result` and redraws at most ten times a
second, only when something changed.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import replace
from datetime import datetime
from typing import Callable

from textual import on
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.color import Color
from textual.containers import Horizontal, Vertical
from textual.widgets import Footer, Input
from textual.worker import get_current_worker

from tuiloss.config import Config
from tuiloss.core.analysis import Anomaly
from tuiloss.core.analysis.display import step_label
from tuiloss.core.driver import Ingested, Ingestor
from tuiloss.core.engine import Engine, Options, apply_result
from tuiloss.core.report import Report, build_report, render_markdown
from tuiloss.core.store import Run, Store, eval_counterpart
from tuiloss.ui.chartdata import ChartView, edge_step, moved_cursor, next_smoothing
from tuiloss.ui.curves import Curves, legend_text, values_at
from tuiloss.ui.export import choose_folder, write_export
from tuiloss.ui import messages
from tuiloss.ui.findings import Findings, anomaly_counts, marks, notice_title, with_stall
from tuiloss.ui.insights import (
    InsightsRequest,
    InsightsWorker,
    render_insights,
)
from tuiloss.ui.runstate import Activity, list_rows
from tuiloss.ui.screens import HelpScreen, MetricScreen
from tuiloss.ui.selection import Selection, common_metric, metric_counts, parse_filter
from tuiloss.ui.selection import rich_color as _rich
from tuiloss.ui.snapshot import snapshot_run, snapshot_store
from tuiloss.ui.markup import safe_label
from tuiloss.ui.watcher import Watcher
from tuiloss.ui.widgets import InsightsPanel, LossChart, RunList, StatusBar
from tuiloss.ui.widgets.status_bar import Status

#: Narrower than this, the insights panel starts hidden and stacks under the chart.
NARROW = 100
REDRAW_INTERVAL = 0.1
INSIGHTS_INTERVAL = 0.5




class TuilossApp(App[None]):
    """Charts, runs list, insights and status of every run under the watched paths."""

    CSS_PATH = "tuiloss.tcss"
    TITLE = "tuiloss"
    ENABLE_COMMAND_PALETTE = False

    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
        Binding("question_mark", "help", "Help"),
        Binding("i", "toggle_insights", "Insights"),
        Binding("x", "toggle_log_x", "Log x"),
        Binding("y", "toggle_log_y", "Log y"),
        Binding("s", "cycle_smoothing", "Smooth"),
        Binding("v", "toggle_eval", "Eval"),
        Binding("m", "pick_metric", "Metric"),
        Binding("left_square_bracket", "zoom_in", "Zoom+"),
        Binding("right_square_bracket", "zoom_out", "Zoom-"),
        Binding("r", "reset_zoom", "Reset zoom", show=False),
        Binding("p", "toggle_pause", "Pause"),
        Binding("e", "export", "Export"),
        Binding("slash", "filter", "Filter"),
        Binding("left", "move_cursor(-1)", "Cursor left", show=False),
        Binding("right", "move_cursor(1)", "Cursor right", show=False),
        Binding("shift+left", "move_cursor(-10)", "Cursor far left", show=False),
        Binding("shift+right", "move_cursor(10)", "Cursor far right", show=False),
        Binding("home", "cursor_home", "Cursor to start", show=False),
        Binding("end", "cursor_end", "Cursor to end", show=False),
        Binding("escape", "escape", "Hide cursor", show=False),
        Binding("space", "toggle_highlighted", "Toggle run", show=False),
        Binding("enter", "toggle_highlighted", "Toggle run", show=False),
        Binding("a", "show_all", "All runs", show=False),
        Binding("n", "show_none", "No runs", show=False),
        Binding("o", "show_only", "Only this run", show=False),
        *[Binding(str((k + 1) % 10), f"toggle_run({k})", f"Toggle run {k + 1}", show=False) for k in range(10)],
    ]

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
        super().__init__()
        self.config = config
        self.options = Options(format=config.format, pattern=config.pattern, metric=config.metric)
        roots = list(config.paths)
        self.engine = (engine_factory or Engine)(roots, self.options)
        self.watcher = (watcher_factory or Watcher)(roots, config.poll)
        self.clock = clock or time.time
        self.export_dir = export_dir
        self.redraw_interval = redraw_interval
        self.report_root = config.paths[0] if len(config.paths) == 1 else None
        self.store = Store()
        no_color = bool(os.environ.get("NO_COLOR"))
        self.view = ChartView(
            log_x=config.log_x,
            log_y=config.log_y,
            smoothing=config.smoothing,
            ascii=config.ascii,
            no_color=no_color,
        )
        self.selection = Selection(config.metric)
        self.activity: dict[str, Activity] = {}
        self.watch_mode = "starting"
        self.mode_reason = ""
        self.files = 0
        self.load_progress: float | None = 0.0
        self.loaded = False
        self.error: str | None = None
        self.report: Report | None = None
        self.report_generation = 0
        self.findings = Findings()
        self._insights_generation = 0
        self._insights_due = False
        self._insights_timer = None
        self._last_insights = 0.0
        self._redraw_timer = None
        self._last_draw = 0.0
        self.curves = Curves()
        self._insights_inputs: tuple | None = None
        self.ingestor = Ingestor(self.engine, self.watcher, lambda event: self.post_message(messages.from_driver(event)))
        self.insights_worker = InsightsWorker(lambda ready: self.post_message(messages.InsightsReady(ready)))
        self._stopped = False
        self._widgets: dict = {}
        self.analysis_seconds = 0.0

    # -- layout -------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        with Horizontal(id="body"):
            with Vertical(id="left"):
                yield LossChart(id="chart")
                yield RunList(id="runs")
            yield InsightsPanel(id="insights")
        yield Input(placeholder="regex over run labels and config; enter applies, empty clears, escape cancels",
                    id="filter", classes="hidden")
        yield StatusBar(id="status")
        yield Footer()

    # Widgets are looked up once on the main screen: the current screen may be a modal.
    @property
    def chart(self) -> LossChart:
        return self._widgets["chart"]

    @property
    def run_list(self) -> RunList:
        return self._widgets["runs"]

    @property
    def insights_panel(self) -> InsightsPanel:
        return self._widgets["insights"]

    @property
    def status_bar(self) -> StatusBar:
        return self._widgets["status"]

    @property
    def filter_input(self) -> Input:
        return self._widgets["filter"]

    def on_mount(self) -> None:
        screen = self.screen
        self._widgets = {
            "chart": screen.query_one("#chart", LossChart),
            "runs": screen.query_one("#runs", RunList),
            "insights": screen.query_one("#insights", InsightsPanel),
            "status": screen.query_one("#status", StatusBar),
            "filter": screen.query_one("#filter", Input),
        }
        narrow = self.size.width < NARROW
        self._main_screen = screen
        screen.set_class(narrow, "narrow")
        self.insights_panel.set_class(narrow, "hidden")
        screen.set_class(not narrow, "with-insights")
        self.run_list.border_title = "runs"
        self.run_list.focus()
        self.insights_worker.start()
        self.run_worker(self._ingest, thread=True, name="ingest", group="ingest", exit_on_error=False)
        self.set_interval(1.0, self._tick)
        self._draw_status()

    def on_resize(self) -> None:
        if self._widgets:
            self._main_screen.set_class(self.size.width < NARROW, "narrow")
        self.schedule_redraw()

    def _ingest(self) -> None:
        worker = get_current_worker()
        self.ingestor.run(should_stop=lambda: worker.is_cancelled)

    def _stop_threads(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        self.ingestor.stop()
        self.insights_worker.stop()

    def on_unmount(self) -> None:
        self._stop_threads()

    async def action_quit(self) -> None:
        self._stop_threads()
        self.exit()

    # -- data in ------------------------------------------------------------------------------

    @on(messages.RecordsIngested)
    def apply_records(self, message: messages.RecordsIngested) -> None:
        try:
            self._apply(message.batch)
        finally:
            self.ingestor.ack()

    @on(messages.WatchStarted)
    def show_watch_mode(self, message: messages.WatchStarted) -> None:
        self.watch_mode, self.mode_reason = message.mode, message.reason
        self._draw_status()

    @on(messages.LoadFinished)
    def finish_load(self) -> None:
        self.load_progress = None
        self.loaded = True
        self.findings.baseline_generation = self._insights_generation + 1
        self.request_insights(now=True)
        self.schedule_redraw()

    @on(messages.IngestFailed)
    def show_ingest_failure(self, message: messages.IngestFailed) -> None:
        self.error = message.error
        self.notify(safe_label(message.error, 300), title="tuiloss", severity="error", markup=False)
        self._draw_status()

    def _apply(self, event: Ingested) -> None:
        now = self.clock()
        result = event.result
        before = {u.run_id: self.store.runs[u.run_id].points for u in result.updates if u.run_id in self.store.runs}
        apply_result(self.store, result, self.options, now=now)
        for spec in result.new_runs:
            run_id = spec.id
            if self.selection.add(run_id):
                mtime = event.activity.get(run_id)
                self.activity[run_id] = Activity(mtime if mtime else None)
                if not self.loaded:
                    self.findings.initial_runs.add(run_id)
        changed = bool(result.new_runs)
        for update in result.updates:
            run = self.store.runs.get(update.run_id)
            if run is None:
                continue
            changed = True
            if run.points > before.get(update.run_id, 0) and self.loaded:
                self.activity.setdefault(run.id, Activity()).grew(now)
        if event.files:
            self.files = event.files
        if event.progress is not None and not self.loaded:
            self.load_progress = event.progress
        for notice in result.notices:
            if notice.level == "error":
                self.error = notice.message
        if changed:
            self.schedule_redraw()
            self.request_insights()

    # -- insights -------------------------------------------------------------------------------

    def request_insights(self, now: bool = False) -> None:
        """Analyse the visible runs again soon (at most every INSIGHTS_INTERVAL)."""
        self._insights_due = True
        if self._insights_timer is not None:
            return
        # A slow analysis (millions of points) runs less often, so it never hogs the CPU.
        interval = max(INSIGHTS_INTERVAL, 2 * self.analysis_seconds)
        wait = 0.0 if now else max(0.0, self._last_insights + interval - time.monotonic())
        self._insights_timer = self.set_timer(max(wait, 0.01), self._send_insights)

    def _send_insights(self) -> None:
        self._insights_timer = None
        if not self._insights_due:
            return
        self._insights_due = False
        self._last_insights = time.monotonic()
        self._insights_generation += 1
        runs = [snapshot_run(run) for run in self.shown_runs()]
        self.insights_worker.request(InsightsRequest(self._insights_generation, runs, self.metric, self.report_root))

    @on(messages.InsightsReady)
    def take_insights(self, message: messages.InsightsReady) -> None:
        ready = message.ready
        if ready.generation < self.report_generation:
            return
        self.report_generation = ready.generation
        self.report = ready.report
        self.analysis_seconds = ready.seconds
        fresh = self.findings.take(ready.report, ready.generation)
        for label, anomaly in fresh:
            text = f"{safe_label(label, 60)}: {safe_label(anomaly.message, 200)}"
            self.notify(text, title=safe_label(notice_title(anomaly), 20), severity="warning", timeout=8, markup=False)
        if fresh and self.config.bell:
            self.bell()
        self._draw_insights()
        self.schedule_redraw()

    @property
    def stalls(self) -> dict[str, Anomaly]:
        """Per run id, its live stall (see :class:`~tuiloss.ui.findings.Findings`)."""
        return self.findings.stalls

    @property
    def new_anomalies(self) -> set[tuple]:
        """Keys of the findings that arrived while watching, not yet acknowledged."""
        return self.findings.new

    def _draw_insights(self) -> None:
        if self.report is None:
            return
        numbers = {run.id: n for n, run in self._numbered()}
        shown = {run.id for run in self.shown_runs()}
        width = max(20, self.insights_panel.size.width - 1) if self.insights_panel.size.width else 40
        # Everything the text depends on: with a thousand runs, rendering it is a large share of a redraw.
        inputs = (self.report, tuple(numbers.items()), frozenset(shown), self.stalls,
                  frozenset(self.new_anomalies), len(self.run_colors), self.view.ascii, self.view.no_color, width)
        if inputs == self._insights_inputs:
            return
        self._insights_inputs = inputs
        report = replace(self.report, runs=tuple(with_stall(r, self.stalls.get(r.id)) for r in self.report.runs
                                                 if r.id in shown))
        text = render_insights(
            report,
            colors={rid: _rich(c) for rid, c in self.run_colors.items()},
            numbers={rid: str(n) for rid, n in numbers.items()},
            swatches={rid: self._swatch(rid) for rid in self.run_colors},
            new=self.new_anomalies,
            ascii=self.config.ascii,
            width=width,
        )
        self.insights_panel.show(text)

    # -- which runs -------------------------------------------------------------------------------

    # The selection's state, under the names the rest of the app and the tests read.
    @property
    def metric(self) -> str | None:
        return self.selection.metric

    @property
    def filter(self) -> re.Pattern | None:
        return self.selection.filter

    @property
    def switched_on(self) -> dict[str, bool]:
        return self.selection.switched_on

    @property
    def run_colors(self) -> dict[str, tuple[int, int, int]]:
        return self.selection.colors

    def listed_runs(self) -> list[Run]:
        """Runs in the list: all of them, or those matching the filter."""
        return self.selection.listed(self.store)

    def shown_runs(self) -> list[Run]:
        """Runs on the chart and in the insights: listed and switched on."""
        return self.selection.shown(self.store)

    def _numbered(self) -> list[tuple[int, Run]]:
        return self.selection.numbered(self.store)

    @property
    def _plain(self) -> bool:
        """Runs are told apart by markers, not colours."""
        return self.view.ascii or self.view.no_color

    def _swatch(self, run_id: str) -> str:
        return self.selection.swatch(run_id, self._plain)

    # -- drawing ----------------------------------------------------------------------------------

    def schedule_redraw(self) -> None:
        """Redraw soon, at most every ``redraw_interval`` seconds."""
        if self._redraw_timer is not None:
            return
        wait = max(0.0, self._last_draw + self.redraw_interval - time.monotonic())
        self._redraw_timer = self.set_timer(max(wait, 0.005), self._redraw)

    def _redraw(self) -> None:
        self._redraw_timer = None
        if self._stopped:
            return
        self._last_draw = time.monotonic()
        self._draw_chart()
        self._draw_list()
        self._draw_status()
        if self.report is not None:
            self._draw_insights()

    def settled(self) -> bool:
        """Whether the screen is at rest: loaded, nothing read waits to be applied, no redraw pending.

        The runs list (a DataTable) sizes its columns when it is next idle, so a list given new
        rows is not at rest until it has laid them out. Tests wait on this before they look.
        """
        return (self.loaded and self.ingestor.idle and self._redraw_timer is None
                and not getattr(self.run_list, "_require_update_dimensions", False))

    def on_loss_chart_resized(self, _: LossChart.Resized) -> None:
        self.schedule_redraw()

    def _background(self) -> tuple[int, int, int]:
        try:
            return Color.parse(self.theme_variables.get("surface", "#1e1e1e")).rgb
        except Exception:
            return (30, 30, 30)

    def _marks(self) -> dict:
        return marks(self.report)

    def _draw_chart(self) -> None:
        chart = self.chart
        shown = self.shown_runs()
        label = self.metric or common_metric(shown) or "loss"
        reported = {entry.id: entry.primary_metric for entry in (self.report.runs if self.report else ())}
        curves = self.curves.prepare(shown, self.selection, self.view, self._marks(), reported)
        spec = self.curves.chart(curves, self.view, chart.plot_width, height=chart.plot_height,
                                 metric=safe_label(label, 40), background=self._background())
        if not self.loaded and self.load_progress is not None:
            spec.title += f" · loading {self.load_progress:.0%}"
        chart.draw(spec)

    def _draw_list(self) -> None:
        now = self.clock()
        counts = anomaly_counts(self.report) if self.report else {}
        for run_id in self.stalls:
            counts[run_id] = counts.get(run_id, 0) + 1
        cursor = self.view.cursor
        at_cursor = values_at(self.shown_runs(), self.selection, cursor) if cursor is not None else None
        rows = list_rows(list(self.store), self.selection, plain=self._plain, at_cursor=at_cursor, findings=counts,
                         stalled=self.stalls, new={key[0] for key in self.new_anomalies}, activity=self.activity,
                         now=now)
        header = f"@{step_label(round(cursor))}" if cursor is not None else "last"
        run_list = self.run_list
        run_list.show(rows, value_header=header, label_width=max(10, run_list.size.width - 33))
        listed, total = len(rows), len(self.store)
        run_list.border_title = f"runs ({listed}/{total} match /{safe_label(self.filter.pattern, 20)}/)" if self.filter else "runs"

    def _draw_status(self) -> None:
        lasts = [a.last for a in self.activity.values() if a.last is not None]
        since = self.clock() - max(lasts) if lasts else None
        self.status_bar.show(
            Status(
                runs=len(self.store),
                shown=len(self.shown_runs()),
                points=self.store.points,
                files=self.files,
                mode=self.watch_mode,
                reason=self.mode_reason,
                since_last=since,
                skipped=self.store.skipped_lines,
                paused=self.ingestor.paused,
                loading=self.load_progress if not self.loaded else None,
                filter=self.filter.pattern if self.filter else None,
                error=self.error,
            )
        )

    def _tick(self) -> None:
        """Once a second: ages, run states and stalls change with time alone."""
        if self._stopped:
            return
        self._check_stalls()
        self._draw_status()
        self._draw_list()

    def _check_stalls(self) -> None:
        """A run that grew while watched and then fell silent for many usual intervals is stalled."""
        fresh, changed = self.findings.check_stalls(self.store, self.activity, self.clock())
        for run_id, anomaly in fresh:
            label = self.store.runs[run_id].label
            self.notify(f"{safe_label(label, 60)}: {safe_label(anomaly.message, 200)}",
                        title="new stall", severity="warning", timeout=8, markup=False)
        if fresh and self.config.bell:
            self.bell()
        if changed:
            self._draw_insights()

    # -- actions ------------------------------------------------------------------------------------

    def _set_view(self, **changes) -> None:
        self.view = replace(self.view, **changes)
        self.schedule_redraw()

    def action_toggle_log_x(self) -> None:
        self._set_view(log_x=not self.view.log_x)

    def action_toggle_log_y(self) -> None:
        self._set_view(log_y=not self.view.log_y)

    def action_cycle_smoothing(self) -> None:
        self._set_view(smoothing=next_smoothing(self.view.smoothing))
        self.notify(f"smoothing: EMA {self.view.smoothing:g}" if self.view.smoothing else "smoothing off",
                    timeout=1.5, markup=False)

    def action_toggle_eval(self) -> None:
        show = not self.view.show_eval
        self._set_view(show_eval=show)
        if show and not any(
            eval_counterpart(self.selection.metric_of(run) or "", list(run.series)) for run in self.shown_runs()
        ):
            self.notify("no evaluation series (val_loss, eval_loss...) in the shown runs", timeout=3, markup=False)

    def action_zoom_in(self) -> None:
        self._set_view(zoom=min(self.view.zoom + 1, 16))

    def action_zoom_out(self) -> None:
        self._set_view(zoom=max(self.view.zoom - 1, 0))

    def action_reset_zoom(self) -> None:
        self._set_view(zoom=0)

    def action_move_cursor(self, columns: int) -> None:
        self._move_cursor(moved_cursor(self.chart.spec, self.view.cursor, columns, self.chart.plot_width))

    def action_cursor_home(self) -> None:
        self._move_cursor(edge_step(self.chart.spec, end=False))

    def action_cursor_end(self) -> None:
        self._move_cursor(edge_step(self.chart.spec, end=True))

    def _move_cursor(self, step: float | None) -> None:
        if step is not None:
            self._set_view(cursor=step)
            self._draw_list()

    def action_escape(self) -> None:
        filter_input = self.filter_input
        if not filter_input.has_class("hidden"):
            filter_input.add_class("hidden")
            self.run_list.focus()
            return
        if self.view.cursor is not None:
            self._set_view(cursor=None)
            self._draw_list()
        elif self.new_anomalies:
            self.new_anomalies.clear()
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
        self.schedule_redraw()
        self.request_insights(now=True)
        self._draw_list()

    def action_toggle_run(self, index: int) -> None:
        listed = self.listed_runs()
        if index < len(listed):
            self._toggle([listed[index].id])

    def action_toggle_highlighted(self) -> None:
        key = self.run_list.highlighted_key
        if key is not None:
            self._toggle([key])

    def action_show_all(self) -> None:
        self._toggle([run.id for run in self.listed_runs()], True)

    def action_show_none(self) -> None:
        self._toggle([run.id for run in self.listed_runs()], False)

    def action_show_only(self) -> None:
        key = self.run_list.highlighted_key
        if key is not None:
            self.selection.show_only(self.listed_runs(), key)
            self._toggle([key], True)

    def action_filter(self) -> None:
        filter_input = self.filter_input
        filter_input.remove_class("hidden")
        filter_input.value = self.filter.pattern if self.filter else ""
        filter_input.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id != "filter":
            return
        try:
            self.selection.filter = parse_filter(event.value)
        except re.error as exc:
            self.notify(f"not a valid regex: {exc}", severity="error", markup=False)
            return
        event.input.add_class("hidden")
        self.run_list.focus()
        self.request_insights(now=True)
        self.schedule_redraw()
        self._draw_list()
        self._draw_status()

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def action_pick_metric(self) -> None:
        def chosen(name: str | None) -> None:
            if name is None:
                return
            self.selection.metric = name or None
            self.report = None
            self.request_insights(now=True)
            self.schedule_redraw()

        self.push_screen(MetricScreen(metric_counts(self.listed_runs()), self.metric), chosen)

    def action_export(self) -> None:
        folder, note = choose_folder(self.export_dir, list(self.config.paths))
        report = self.report
        if report is None:
            report = build_report(snapshot_store([snapshot_run(r) for r in self.shown_runs()]),
                                  root=self.report_root, metric=self.metric)
        else:
            shown = {run.id for run in self.shown_runs()}
            report = replace(report, runs=tuple(r for r in report.runs if r.id in shown))
        stamp = datetime.fromtimestamp(self.clock()).strftime("%Y%m%d-%H%M%S")
        markdown = f"# tuiloss report\n\nWatched: {', '.join(self.config.paths)}\n\n" + render_markdown(report)
        chart = self.chart.capture() + "\n\n" + self._legend_text()
        try:
            report_path, chart_path = write_export(folder, stamp, markdown, chart)
        except OSError as exc:
            self.notify(f"export failed: {exc}", severity="error", markup=False)
            return
        self.last_export = (report_path, chart_path)
        message = f"wrote {report_path} and {chart_path}" + (f" ({note})" if note else "")
        self.notify(message, title="exported", timeout=6, markup=False)

    def _legend_text(self) -> str:
        return legend_text(list(self.store), self.selection, self._plain)




def make_app(
    config: Config,
    *,
    engine_factory: Callable[[list[str], Options], Engine] | None = None,
    watcher_factory: Callable[[list[str], float | None], object] | None = None,
    clock: Callable[[], float] | None = None,
    export_dir: str | None = None,
) -> TuilossApp:
    """The viewer for ``config``; the CLI and the tests build it the same way.

    Args:
        config: what the command line asked for.
        engine_factory: builds the core engine from (roots, options); tests may wrap it.
        watcher_factory: builds the watcher from (roots, poll seconds).
        clock: wall-clock seconds; tests freeze it for stable screenshots.
        export_dir: where ``e`` writes (default: the current folder, never inside the watched tree).
    """
    return TuilossApp(config, engine_factory=engine_factory, watcher_factory=watcher_factory, clock=clock,
                      export_dir=export_dir)
