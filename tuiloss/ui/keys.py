"""The viewer's keys: one list of bindings, what the footer shows and the app routes."""

from __future__ import annotations

from textual.binding import Binding

#: The footer shows the keys a first look needs and fits in 80 columns; ``?`` lists them all.
#: Number keys 1-9 and 0 toggle runs 1-10.
BINDINGS: list[Binding] = [
    Binding("q", "quit", "Quit"),
    Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
    Binding("question_mark", "help", "Help"),
    Binding("i", "toggle_insights", "Panel"),
    Binding("x", "toggle_log_x", "Log x"),
    Binding("y", "toggle_log_y", "Log y", show=False),
    Binding("s", "cycle_smoothing", "Smooth"),
    Binding("v", "toggle_eval", "Eval"),
    Binding("m", "pick_metric", "Metric"),
    Binding("g", "toggle_grouped", "Group"),
    Binding("t", "toggle_events", "Events", show=False),
    Binding("X", "cycle_x_axis", "X axis", show=False),
    Binding("M", "show_multiples", "Multiples", show=False),
    Binding("left_square_bracket", "zoom(1)", "Zoom+", show=False),
    Binding("right_square_bracket", "zoom(-1)", "Zoom-", show=False),
    Binding("r", "zoom(0)", "Reset zoom", show=False),
    Binding("p", "toggle_pause", "Pause", show=False),
    Binding("e", "export", "Export", show=False),
    Binding("slash", "filter", "Filter"),
    Binding("left", "move_cursor(-1)", "Cursor left", show=False),
    Binding("right", "move_cursor(1)", "Cursor right", show=False),
    Binding("shift+left", "move_cursor(-10)", "Cursor far left", show=False),
    Binding("shift+right", "move_cursor(10)", "Cursor far right", show=False),
    Binding("home", "cursor_edge(False)", "Cursor to start", show=False),
    Binding("end", "cursor_edge(True)", "Cursor to end", show=False),
    Binding("escape", "escape", "Hide cursor", show=False),
    Binding("space", "toggle_highlighted", "Toggle run", show=False),
    Binding("enter", "toggle_highlighted", "Toggle run", show=False),
    Binding("a", "show_all", "All runs", show=False),
    Binding("n", "show_all(False)", "No runs", show=False),
    Binding("o", "show_only", "Only this run", show=False),
    *[Binding(str((k + 1) % 10), f"toggle_run({k})", f"Toggle run {k + 1}", show=False) for k in range(10)],
]

#: Every key and what it does: the help screen shows this table, and README.md lists the same rows.
KEYS = (
    ("1-9, 0", "show or hide run 1-10"),
    ("space / enter", "show or hide the highlighted run"),
    ("up / down", "highlight a run"),
    ("a / n / o", "show all runs / none / only the highlighted one"),
    ("/", "filter runs by a regex over labels and config; empty or escape clears; runs keep their numbers"),
    ("left / right", "move the step cursor (shift: 10 columns); values at the cursor appear in the list"),
    ("home / end", "cursor to the first / last step"),
    ("escape", "clear the filter being typed, else hide the cursor, else clear the NEW marks of fresh findings"),
    ("[ / ]", "zoom the step range in / out around the latest data"),
    ("r", "reset the zoom"),
    ("x", "log or linear step axis"),
    ("X", "cycle the x axis: step, wall time, time since start, a logged progress counter (tokens, samples, timesteps), those the shown runs have; runs without it are said in the title"),
    ("t", "mark the runs' events: L learning-rate drop, W warm restart, S loss-scale drop, O overflow, C checkpoint saved, > restart, a dot an evaluation; with the cursor, those near it are listed above the runs"),
    ("M", "small multiples: loss, eval loss, learning rate, grad norm and more of the shown runs, one small chart each, on the same x axis"),
    ("y", "linear or log loss axis (default: log when the values span a decade; on a linear axis an early transient far above the settled curves is cut and marked with an arrow and where it began)"),
    ("s", "cycle smoothing (EMA 0, 0.6, 0.9, 0.99); the raw curve stays behind"),
    ("v", "overlay the evaluation series (val_loss, eval_loss...) as dots"),
    ("m", "pick the metric: the chart, its marks, the panel and Across runs follow it; a run without it says so"),
    ("g", "group runs by configuration (seeds of one sweep point): a median curve with its min-max band each, the runs under their configuration's row (space on it toggles them all), its seeds' findings first in the panel"),
    ("i", "show or hide the insights panel"),
    ("tab", "focus the runs list or the insights panel (up/down scroll it)"),
    ("p", "pause or resume live updates"),
    ("e", "export a markdown report, a text capture of the chart and the points as CSV (never inside the watched tree)"),
    ("?", "this help"),
    ("q", "quit"),
)

#: The marks on the chart (braille / ASCII).
MARKS = (
    ("▲ / ^", "spike, with its peak value"),
    ("↗ / /", "upward drift (a bar spans it)"),
    ("↑ / !", "divergence"),
    ("× / X", "NaN or Inf (at the top)"),
    ("↺ / R", "a new segment: step reset, truncated or replaced log"),
    ("┊ / :", "with t: a thin line under L (LR drop), W (warm restart), S (loss-scale drop) or > (restart); C (checkpoint) and O (overflow) alone on the top row, a dot (an evaluation) on the bottom row"),
)
