"""The viewer's keys: one list of bindings, what the footer shows and the app routes."""

from __future__ import annotations

from textual.binding import Binding

#: Number keys 1-9 and 0 toggle the first ten listed runs.
BINDINGS: list[Binding] = [
    Binding("q", "quit", "Quit"),
    Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
    Binding("question_mark", "help", "Help"),
    Binding("i", "toggle_insights", "Insights"),
    Binding("x", "toggle_log_x", "Log x"),
    Binding("y", "toggle_log_y", "Log y"),
    Binding("s", "cycle_smoothing", "Smooth"),
    Binding("v", "toggle_eval", "Eval"),
    Binding("m", "pick_metric", "Metric"),
    Binding("left_square_bracket", "zoom(1)", "Zoom+"),
    Binding("right_square_bracket", "zoom(-1)", "Zoom-"),
    Binding("r", "zoom(0)", "Reset zoom", show=False),
    Binding("p", "toggle_pause", "Pause"),
    Binding("e", "export", "Export"),
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
