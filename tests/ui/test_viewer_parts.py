"""The viewer's small headless parts: the throttle behind redraws and analyses, the panel's
render memo, and run activity."""

from __future__ import annotations

import re

import numpy as np

from tuiloss.core.report import build_report
from tuiloss.core.store import Run, Series, Store
from tuiloss.ui.panel import PanelText
from tuiloss.ui.runstate import Activities
from tuiloss.ui.selection import Selection
from tuiloss.ui.throttle import Throttle


class FakeTimers:
    """Timers that fire only when the test says, on a clock the test moves."""

    def __init__(self) -> None:
        self.now = 100.0
        self.waiting: list[tuple[float, object]] = []

    def set_timer(self, delay, callback):
        self.waiting.append((delay, callback))
        return object()

    def fire(self) -> float:
        delay, callback = self.waiting.pop(0)
        self.now += delay
        callback()
        return delay


def test_requests_while_one_waits_fold_into_one_run():
    timers, runs = FakeTimers(), []
    throttle = Throttle(timers.set_timer, lambda: runs.append(timers.now), lambda: 0.5, clock=lambda: timers.now)
    throttle.request()
    throttle.request()
    assert len(timers.waiting) == 1 and throttle.pending
    timers.fire()
    assert len(runs) == 1 and not throttle.pending


def test_an_urgent_request_does_not_wait_behind_one_scheduled_later():
    timers, runs = FakeTimers(), []
    throttle = Throttle(timers.set_timer, lambda: runs.append(timers.now), lambda: 0.5,
                        shortest=0.01, clock=lambda: timers.now)
    throttle.request(now=True)
    timers.fire()
    throttle.request()  # waits out the interval: 0.5 s
    throttle.request(now=True)  # the load finished: analyse now
    throttle.request(now=True)  # folds into the urgent one
    assert [delay for delay, _ in timers.waiting] == [0.5, 0.01]
    timers.waiting.reverse()  # the urgent timer fires first
    assert timers.fire() == 0.01 and len(runs) == 2 and not throttle.pending
    timers.fire()  # the one scheduled later finds nothing to do
    assert len(runs) == 2 and not throttle.pending


def test_a_request_right_after_a_run_waits_out_the_interval_unless_it_is_urgent():
    timers, runs = FakeTimers(), []
    interval = [0.5]
    throttle = Throttle(timers.set_timer, lambda: runs.append(timers.now), lambda: interval[0],
                        shortest=0.01, clock=lambda: timers.now)
    throttle.request(now=True)
    assert timers.fire() == 0.01  # at once: only the shortest wait
    timers.now += 0.1
    throttle.request()
    assert abs(timers.fire() - 0.4) < 1e-9  # the rest of the interval
    interval[0] = 3.0  # the interval is asked each time (a slow analysis runs less often)
    throttle.request()
    assert abs(timers.fire() - 3.0) < 1e-9
    throttle.request(now=True)
    assert timers.fire() == 0.01
    assert len(runs) == 4


def _run(run_id: str, values: list[float]) -> Run:
    series = Series()
    series.extend(np.arange(1.0, len(values) + 1) * 100, np.asarray(values, dtype=float))
    return Run(id=run_id, label=f"run {run_id}", source=f"/logs/{run_id}.csv", format="csv", series={"loss": series})


def test_the_panel_renders_again_only_when_what_it_shows_changes():
    runs = [_run("a", [1.0 / k for k in range(1, 60)]), _run("b", [2.0 / k for k in range(1, 60)])]
    store = Store()
    for run in runs:
        store.runs[run.id] = run
    report = build_report(store)
    selection = Selection()
    for run in runs:
        selection.add(run.id)
    panel = PanelText()
    args = dict(stalls={}, new=set(), plain=False, ascii=False, width=60)
    first = panel.render(report, runs, selection, **args)
    assert first is not None and "1 ■ run a" in first.plain and "2 ■ run b" in first.plain
    assert panel.render(report, runs, selection, **args) is None  # nothing changed
    selection.toggle(["b"], False)
    text = panel.render(report, runs, selection, **args)
    assert text is not None and "1 ■ run a" in text.plain and "2 ■ run b" not in text.plain  # its findings go
    assert panel.render(report, runs, selection, **dict(args, width=40)) is not None
    panel.forget()
    assert panel.render(report, runs, selection, **dict(args, width=40)) is not None


def test_activity_tells_the_time_since_any_run_last_grew():
    activity = Activities()
    assert activity.since_last(1000.0) is None
    activity.found("a", None)  # no file time: no growth seen yet
    assert activity.since_last(1000.0) is None
    activity.found("b", 900.0)
    activity.grew("a", 950.0)
    activity.grew("c", 960.0)  # a run seen growing before it was found
    assert activity.since_last(1000.0) == 40.0
    assert activity["b"].last == 900.0 and activity["c"].last == 960.0


def test_the_feed_analyses_the_shown_runs_and_keeps_only_the_newest_report():
    import queue
    import time

    from tuiloss.ui.feed import InsightsFeed

    timers, results = FakeTimers(), queue.Queue()
    shown = [_run("a", [1.0 / k for k in range(1, 60)])]
    feed = InsightsFeed(timers.set_timer, results.put, lambda: shown, lambda: None, None)
    feed.start()
    try:
        feed.request(now=True)
        feed.request()  # folds into the waiting one
        timers.fire()
        assert not timers.waiting and feed.sent == 1
        first = results.get(timeout=20)
        assert first.generation == 1 and [run.id for run in first.report.runs] == ["a"]
        shown.append(_run("b", [2.0 / k for k in range(1, 60)]))
        feed.request(now=True)
        timers.fire()
        second = results.get(timeout=20)
        assert [run.id for run in second.report.runs] == ["a", "b"]
        assert feed.take(second) and feed.report is second.report and feed.generation == 2
        assert not feed.take(first)  # an older analysis that arrives late is dropped
        assert feed.report is second.report
    finally:
        feed.stop()
    deadline = time.monotonic() + 10
    while feed.worker._thread.is_alive():
        assert time.monotonic() < deadline, "the analysis thread did not end"
        time.sleep(0.01)


def test_ascii_mode_shortens_with_dots_and_separates_the_status_with_dashes():
    from tuiloss.core.sanitize import safe_label, truncate_middle
    from tuiloss.ui.widgets.status_bar import Status, status_text

    assert truncate_middle("Pre-Norm | Gradient Clip=10 | Run 1", 12) == "Pre-No…Run 1"
    assert truncate_middle("Pre-Norm | Gradient Clip=10 | Run 1", 12, "...") == "Pre-N...un 1"
    assert safe_label("Pre-Norm | Gradient Clip=10 | Run 1", 12, ascii=True) == "Pre-N...un 1"
    assert truncate_middle("abcdef", 2, "...") == ".." and truncate_middle("abc", 3, "...") == "abc"
    text = status_text(Status(runs=4, shown=4, points=4000, files=4, mode="inotify", ascii=True)).plain
    assert text.isascii() and " - 4,000 points - 4 files - inotify" in text
    assert "·" in status_text(Status(runs=4, shown=4, points=4000, files=4, mode="inotify")).plain


def test_ascii_markers_never_look_like_a_findings_mark():
    from tuiloss.ui.chartdata import ANOMALY_GLYPHS
    from tuiloss.ui.selection import ASCII_MARKERS

    marks = {ascii_glyph for _, ascii_glyph in ANOMALY_GLYPHS.values()} | set("+~-E")  # panel marks, eval points
    assert len(set(ASCII_MARKERS)) == len(ASCII_MARKERS) == 10
    assert not {m.lower() for m in ASCII_MARKERS} & {m.lower() for m in marks}


def test_the_readme_lists_the_keys_the_help_shows():
    import re
    from pathlib import Path

    from tuiloss.ui.keys import KEYS

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    table = readme[readme.index("| key | does |"):].split("\n\n", 1)[0].splitlines()[2:]
    rows = [tuple(cell.strip().strip("`") for cell in re.split(r"(?<!\\)\|", row)[1:3]) for row in table]
    assert rows == [tuple(pair) for pair in KEYS]


def test_every_key_of_the_help_is_bound():
    from tuiloss.ui.keys import BINDINGS, KEYS

    bound = {key for binding in BINDINGS for key in binding.key.split(",")}
    names = {"space": "space", "enter": "enter", "up": None, "down": None, "tab": None, "?": "question_mark",
             "/": "slash", "[": "left_square_bracket", "]": "right_square_bracket", "left": "left",
             "right": "right", "home": "home", "end": "end", "escape": "escape"}
    for keys, _ in KEYS:
        for key in re.split(r" / |, |-", keys):
            key = key.strip()
            if key.isdigit():
                assert key in bound
            elif names.get(key, key) is not None:
                assert names.get(key, key) in bound, key


def test_a_panel_made_in_slices_ends_as_the_panel_made_at_once():
    from tuiloss.ui.insights import RunTexts

    runs = [_run(f"r{k}", [(k + 1.0) / j for j in range(1, 60)]) for k in range(6)]
    store = Store()
    for run in runs:
        store.runs[run.id] = run
    report = build_report(store)
    selection = Selection()
    for run in runs:
        selection.add(run.id)
    args = dict(stalls={}, new=set(), plain=False, ascii=False, width=60)
    whole = PanelText().render(report, runs, selection, **args)
    panel = PanelText()
    panel.blocks = RunTexts(budget=-1.0, fewest=2)  # two blocks a panel, titles for the others
    sliced = [panel.render(report, runs, selection, **args)]
    while panel.behind:
        made = panel.blocks.made
        sliced.append(panel.render(report, runs, selection, **args))
        assert panel.blocks.made == made + min(2, len(runs) - made)  # only the blocks left are made
    assert len(sliced) == 3 and sliced[0].joined().plain != whole.joined().plain  # titles stood in first
    assert sliced[-1].joined().plain == whole.joined().plain and sliced[-1].joined().spans == whole.joined().spans
    assert panel.render(report, runs, selection, **args) is None  # all made: nothing changed
