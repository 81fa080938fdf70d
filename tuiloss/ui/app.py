"""The live viewer: ``tuiloss watch`` and ``tuiloss demo``.

Threads: the driver (:mod:`tuiloss.core.driver`) reads files and posts
batches; the insights thread (:mod:`tuiloss.ui.insights`) analyses frozen
snapshots and posts reports. Only this module's UI thread touches the store,
the widgets and the plot: it applies batches with
:func:`~tuiloss.core.engine.apply_result` and redraws at most ten times a
second, only when something changed.
"""

from __future__ import annotations

import math
import os
import re
import time
from dataclasses import replace
from datetime import datetime
from typing import Callable

import numpy as np
from textual import on
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.color import Color
from textual.containers import Horizontal, Vertical
from textual.widgets import Footer, Input
from textual.worker import get_current_worker

from tuiloss.config import Config
from tuiloss.core.analysis import Anomaly, ColumnIndex, ema
from tuiloss.core.analysis.display import fmt_step, fmt_value, step_label
from tuiloss.core.driver import Ingested, Ingestor
from tuiloss.core.engine import Engine, Options, apply_result
from tuiloss.core.report import Report, build_report, render_markdown
from tuiloss.core.store import Run, Store, eval_counterpart
from tuiloss.ui.chartdata import (
    SMOOTHING_STEPS,
    ChartView,
    CurveInput,
    build_chart,
)
from tuiloss.ui.export import choose_folder, write_export
from tuiloss.ui import messages
from tuiloss.ui.findings import Findings, anomaly_counts, marks, with_stall
from tuiloss.ui.insights import (
    InsightsRequest,
    InsightsWorker,
    render_insights,
)
from tuiloss.ui.runstate import Activity, run_state
from tuiloss.ui.screens import HelpScreen, MetricScreen
from tuiloss.ui.snapshot import snapshot_run, snapshot_store
from tuiloss.ui.markup import safe_label
from tuiloss.ui.watcher import Watcher
from tuiloss.ui.widgets import InsightsPanel, LossChart, RunList, RunRow, StatusBar
from tuiloss.ui.widgets.status_bar import Status

#: One stable colour per run, in discovery order (Okabe-Ito based, readable on dark and light).
PALETTE: tuple[tuple[int, int, int], ...] = (
    (86, 180, 233),
    (230, 159, 0),
    (0, 190, 140),
    (240, 100, 160),
    (240, 228, 66),
    (213, 94, 0),
    (150, 130, 255),
    (160, 220, 110),
    (0, 114, 178),
    (190, 190, 190),
)
#: Per-run markers when colour or braille is unavailable (--ascii, NO_COLOR).
ASCII_MARKERS = "*+ox#%@=~&"
#: Narrower than this, the insights panel starts hidden and stacks under the chart.
NARROW = 100
REDRAW_INTERVAL = 0.1
INSIGHTS_INTERVAL = 0.5


def _rich(color: tuple[int, int, int]) -> str:
    return f"rgb({color[0]},{color[1]},{color[2]})"


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
        self.metric: str | None = config.metric
        self.filter: re.Pattern | None = None
        self.switched_on: dict[str, bool] = {}
        self.run_colors: dict[str, tuple[int, int, int]] = {}
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
        self._smooth_cache: dict[tuple, tuple[int, np.ndarray]] = {}
        self._indexes: dict[tuple, ColumnIndex] = {}
        self._insights_inputs: tuple | None = None
        self._points_memo: dict = {}  # build_chart's per-curve points, reused while a curve is unchanged
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
            if run_id not in self.run_colors:
                self.run_colors[run_id] = PALETTE[len(self.run_colors) % len(PALETTE)]
                self.switched_on[run_id] = True
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
            self.notify(text, title=f"new {safe_label(anomaly.kind, 20)}", severity="warning", timeout=8, markup=False)
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

    def listed_runs(self) -> list[Run]:
        """Runs in the list: all of them, or those matching the filter."""
        runs = list(self.store)
        if self.filter is None:
            return runs
        return [run for run in runs if self.filter.search(_filter_text(run))]

    def shown_runs(self) -> list[Run]:
        """Runs on the chart and in the insights: listed and switched on."""
        return [run for run in self.listed_runs() if self.switched_on.get(run.id, True)]

    def _numbered(self) -> list[tuple[int, Run]]:
        return list(enumerate(self.listed_runs(), 1))

    def metric_of(self, run: Run) -> str | None:
        if self.metric and self.metric in run.series:
            return self.metric
        if self.metric:
            return None
        return run.primary_metric

    def _swatch(self, run_id: str) -> str:
        if self.view.ascii or self.view.no_color:
            index = list(self.run_colors).index(run_id) if run_id in self.run_colors else 0
            return ASCII_MARKERS[index % len(ASCII_MARKERS)]
        return "■"

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

    def _curves(self) -> list[CurveInput]:
        curves = []
        marks_by_run = self._marks()
        reported = {entry.id: entry.primary_metric for entry in (self.report.runs if self.report else ())}
        color_index = {run_id: k for k, run_id in enumerate(self.run_colors)}
        for run in self.shown_runs():
            name = self.metric_of(run)
            if name is None or name not in run.series:
                continue
            series = run.series[name]
            steps, values = series.visible()
            if not len(steps):
                continue
            raw = self._column_index((run.id, name), steps, values, len(series.segments))
            smoothed = None
            if self.view.smoothing > 0:
                smooth_values = self._smoothed(run.id, name, values)
                key = (run.id, name, self.view.smoothing, self.view.log_y)
                smoothed = self._column_index(key, steps, smooth_values, len(series.segments))
            eval_steps = eval_values = None
            if self.view.show_eval:
                eval_name = eval_counterpart(name, list(run.series))
                if eval_name and eval_name in run.series:
                    eval_steps, eval_values = run.series[eval_name].visible()
            first_positive = int(np.searchsorted(steps, 0.0, side="right"))
            index = color_index.get(run.id, 0)
            curves.append(
                CurveInput(
                    key=run.id,
                    color=self.run_colors.get(run.id, PALETTE[0]),
                    marker=ASCII_MARKERS[index % len(ASCII_MARKERS)],
                    first_step=float(steps[0]),
                    last_step=float(steps[-1]),
                    min_positive=float(steps[first_positive]) if first_positive < len(steps) else None,
                    raw=raw.query,
                    smoothed=smoothed.query if smoothed is not None else None,
                    eval_steps=eval_steps,
                    eval_values=eval_values,
                    marks=marks_by_run.get(run.id, []) if name == reported.get(run.id) else [],
                    segment_starts=[(s.start_step, s.reason) for s in series.segments[1:]],
                    has_nonpositive_steps=bool(steps[0] <= 0),
                )
            )
        return curves

    def _column_index(self, key: tuple, steps: np.ndarray, values: np.ndarray, segments: int) -> ColumnIndex:
        """The incremental per-column min/max index of one curve, caught up with its points."""
        index = self._indexes.get(key)
        if index is None:
            index = self._indexes[key] = ColumnIndex()
        index.sync(steps, values, key=segments)
        return index

    def _marks(self) -> dict:
        return marks(self.report)

    def _smoothed(self, run_id: str, name: str, values: np.ndarray) -> np.ndarray:
        key = (run_id, name, self.view.smoothing, self.view.log_y)
        cached = self._smooth_cache.get(key)
        if cached is not None and cached[0] == len(values):
            return cached[1]
        smoothed = ema(values, self.view.smoothing, log=self.view.log_y)
        self._smooth_cache[key] = (len(values), smoothed)
        return smoothed

    def _draw_chart(self) -> None:
        chart = self.chart
        label = self.metric or _common_metric(self.shown_runs()) or "loss"
        spec = build_chart(self._curves(), self.view, chart.plot_width, height=chart.plot_height,
                           metric=safe_label(label, 40),
                           background=self._background(), memo=self._points_memo)
        if not self.loaded and self.load_progress is not None:
            spec.title += f" · loading {self.load_progress:.0%}"
        chart.draw(spec)

    def _cursor_values(self) -> dict[str, float | None]:
        out: dict[str, float | None] = {}
        cursor = self.view.cursor
        if cursor is None:
            return out
        for run in self.shown_runs():
            name = self.metric_of(run)
            if not name:
                continue
            steps, values = run.series[name].visible()
            out[run.id] = _value_at(steps, values, cursor)
        return out

    def _draw_list(self) -> None:
        now = self.clock()
        counts = anomaly_counts(self.report) if self.report else {}
        for run_id in self.stalls:
            counts[run_id] = counts.get(run_id, 0) + 1
        new_runs = {key[0] for key in self.new_anomalies}
        at_cursor = self._cursor_values()
        rows = []
        for number, run in self._numbered():
            name = self.metric_of(run)
            series = run.series.get(name) if name else None
            if self.view.cursor is not None:
                value = fmt_value(at_cursor.get(run.id)) if run.id in at_cursor else ""
            elif series is not None and len(series):
                value = fmt_value(float(series.visible()[1][-1]))
            else:
                value = "-"
            rows.append(
                RunRow(
                    key=run.id,
                    number=str(number % 10) if number <= 10 else "",
                    swatch=self._swatch(run.id),
                    color=_rich(self.run_colors.get(run.id, PALETTE[0])),
                    label=run.label,
                    value=value,
                    state="stalled" if run.id in self.stalls and not run.deleted
                    else run_state(run.deleted, self.activity.get(run.id), now, has_points=run.points > 0),
                    anomalies=counts.get(run.id, 0),
                    visible=self.switched_on.get(run.id, True),
                    new_anomaly=run.id in new_runs,
                )
            )
        header = f"@{step_label(round(self.view.cursor))}" if self.view.cursor is not None else "last"
        run_list = self.run_list
        label_width = max(10, run_list.size.width - 33)
        run_list.show(rows, value_header=header, label_width=label_width)
        listed, total = len(rows), len(self.store)
        run_list.border_title = f"runs ({listed}/{total} match /{safe_label(self.filter.pattern, 20)}/)" if self.filter else "runs"

    def _draw_status(self) -> None:
        lasts = [a.last for a in self.activity.values() if a.last is not None]
        since = self.clock() - max(lasts) if lasts else None
        listed = self.listed_runs()
        self.status_bar.show(
            Status(
                runs=len(self.store),
                shown=len([r for r in listed if self.switched_on.get(r.id, True)]),
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
        from dataclasses import replace

        self.view = replace(self.view, **changes)
        self.schedule_redraw()

    def action_toggle_log_x(self) -> None:
        self._set_view(log_x=not self.view.log_x)

    def action_toggle_log_y(self) -> None:
        self._set_view(log_y=not self.view.log_y)

    def action_cycle_smoothing(self) -> None:
        steps = list(SMOOTHING_STEPS)
        current = self.view.smoothing
        later = [w for w in steps if w > current + 1e-9]
        self._set_view(smoothing=later[0] if later else 0.0)
        self.notify(f"smoothing: EMA {self.view.smoothing:g}" if self.view.smoothing else "smoothing off",
                    timeout=1.5, markup=False)

    def action_toggle_eval(self) -> None:
        show = not self.view.show_eval
        self._set_view(show_eval=show)
        if show and not any(
            eval_counterpart(self.metric_of(run) or "", list(run.series)) for run in self.shown_runs()
        ):
            self.notify("no evaluation series (val_loss, eval_loss...) in the shown runs", timeout=3, markup=False)

    def action_zoom_in(self) -> None:
        self._set_view(zoom=min(self.view.zoom + 1, 16))

    def action_zoom_out(self) -> None:
        self._set_view(zoom=max(self.view.zoom - 1, 0))

    def action_reset_zoom(self) -> None:
        self._set_view(zoom=0)

    def _x_range(self) -> tuple[float, float, bool] | None:
        spec = self.chart.spec
        if spec.empty:
            return None
        return spec.x_lim[0], spec.x_lim[1], spec.x_log

    def action_move_cursor(self, columns: int) -> None:
        x_range = self._x_range()
        if x_range is None:
            return
        lo, hi, log = x_range
        if self.view.cursor is None:
            x = hi
        else:
            x = math.log10(self.view.cursor) if log and self.view.cursor > 0 else (lo if log else self.view.cursor)
            x += columns * (hi - lo) / max(self.chart.plot_width, 1)
        x = min(max(x, lo), hi)
        self._set_view(cursor=10**x if log else x)
        self._draw_list()

    def action_cursor_home(self) -> None:
        x_range = self._x_range()
        if x_range is not None:
            lo, _, log = x_range
            self._set_view(cursor=10**lo if log else lo)
            self._draw_list()

    def action_cursor_end(self) -> None:
        x_range = self._x_range()
        if x_range is not None:
            _, hi, log = x_range
            self._set_view(cursor=10**hi if log else hi)
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
        for run_id in run_ids:
            self.switched_on[run_id] = (not self.switched_on.get(run_id, True)) if value is None else value
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
        if key is None:
            return
        for run in self.listed_runs():
            self.switched_on[run.id] = run.id == key
        self._toggle([key], True)

    def action_filter(self) -> None:
        filter_input = self.filter_input
        filter_input.remove_class("hidden")
        filter_input.value = self.filter.pattern if self.filter else ""
        filter_input.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id != "filter":
            return
        pattern = event.value.strip()
        if not pattern:
            self.filter = None
        else:
            try:
                self.filter = re.compile(pattern, re.IGNORECASE)
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
        counts: dict[str, int] = {}
        for run in self.listed_runs():
            for name in run.series:
                counts[name] = counts.get(name, 0) + 1
        metrics = sorted(counts.items(), key=lambda item: (-item[1], item[0]))

        def chosen(name: str | None) -> None:
            if name is None:
                return
            self.metric = name or None
            self.report = None
            self.request_insights(now=True)
            self.schedule_redraw()

        self.push_screen(MetricScreen(metrics, self.metric), chosen)

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
        lines = []
        for number, run in self._numbered():
            if not self.switched_on.get(run.id, True):
                continue
            name = self.metric_of(run)
            series = run.series.get(name) if name else None
            last = fmt_value(float(series.visible()[1][-1])) if series is not None and len(series) else "-"
            steps = f"{fmt_step(float(series.visible()[0][-1]))}" if series is not None and len(series) else "-"
            lines.append(f"{number:>2} {self._swatch(run.id)} {safe_label(run.label, 100)}  last {last} at {steps}")
        return "\n".join(lines)


def _filter_text(run: Run) -> str:
    config = " ".join(f"{key}={value}" for key, value in run.config.items())
    return f"{run.label} {run.source} {config}"


def _common_metric(runs: list[Run]) -> str | None:
    names = {run.primary_metric for run in runs if run.primary_metric}
    if len(names) == 1:
        return names.pop()
    return " / ".join(sorted(names)[:3]) if names else None


def _value_at(steps: np.ndarray, values: np.ndarray, step: float) -> float | None:
    """The value at the point nearest to ``step``."""
    if not len(steps):
        return None
    i = int(np.searchsorted(steps, step))
    candidates = [j for j in (i - 1, i) if 0 <= j < len(steps)]
    j = min(candidates, key=lambda k: abs(steps[k] - step))
    return float(values[j])


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
