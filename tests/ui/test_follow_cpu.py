"""What keeps following a busy log cheap: paced frames, an axis end that moves ahead in steps, the
inotify queue read by the reading thread."""

from __future__ import annotations

import math
import os

import numpy as np

from tuiloss.core.analysis import ColumnIndex
from tuiloss.ui.chartdata import FOLLOW_GRID, ChartView, CurveInput, build_chart, rounded_end, x_window
from tuiloss.ui.throttle import Throttle

from test_viewer_parts import FakeTimers as ViewerTimers


class FakeTimers(ViewerTimers):
    """The throttle tests' timers, fired in the order they are due."""

    def fire_next(self) -> float:
        """Fire the timer due first; the delay it had."""
        self.waiting.sort(key=lambda item: item[0])
        return self.fire()


def _throttle(timers, runs):
    return Throttle(timers.set_timer, lambda: runs.append(timers.now), lambda: 0.1, shortest=0.005,
                    clock=lambda: timers.now, pace=lambda: 0.15)


def test_paced_requests_wait_out_the_pace_only_while_they_come_faster_than_the_frames():
    timers, runs = FakeTimers(), []
    throttle = _throttle(timers, runs)
    throttle.request(paced=True)  # nothing ran for long: at once
    assert timers.fire_next() == 0.005 and len(runs) == 1
    timers.now += 2.0
    # a log read ten times a second: each read drawn at the redraw interval, as before
    few = Throttle(timers.set_timer, lambda: runs.append(timers.now), lambda: 0.1, shortest=0.005,
                   clock=lambda: timers.now, pace=lambda: 0.15)
    gaps = _frame_gaps(timers, few, runs, 30, 0.1)
    assert min(gaps) >= 0.1 - 1e-9 and max(gaps) < 0.15 - 1e-9
    # read twenty times a second (a hundred lines a second): the frames come at the pace
    runs.clear()
    many = Throttle(timers.set_timer, lambda: runs.append(timers.now), lambda: 0.1, shortest=0.005,
                    clock=lambda: timers.now, pace=lambda: 0.15)
    gaps = _frame_gaps(timers, many, runs, 60, 0.05)[20:]  # once a second of them came
    assert min(gaps) >= 0.15 - 1e-9 and len(gaps) < 30


def _frame_gaps(timers, throttle, runs, count: int, apart: float) -> list[float]:
    """Paced requests ``apart`` seconds apart, each timer fired when due; the gaps between runs."""
    timers.waiting.clear()
    start = len(runs)
    end = timers.now + count * apart
    next_request = timers.now
    while timers.now < end:
        due = min((delay for delay, _ in timers.waiting), default=None)
        if due is not None and timers.now + due <= next_request:
            timers.fire_next()
            timers.waiting = [(delay - due, callback) for delay, callback in timers.waiting]
            continue
        step = next_request - timers.now
        timers.now = next_request
        timers.waiting = [(delay - step, callback) for delay, callback in timers.waiting]
        throttle.request(paced=True)
        next_request += apart
    made = runs[start:]
    return [b - a for a, b in zip(made, made[1:])]


def test_a_key_moves_a_paced_run_forward_to_the_redraw_interval():
    timers, runs = FakeTimers(), []
    throttle = _throttle(timers, runs)
    throttle.request(now=True)
    timers.fire_next()
    for _ in range(20):  # a busy log: paced requests, many a second
        throttle.request(paced=True)
    timers.fire_next()
    throttle.request(paced=True)  # 0.15 s after the last run
    throttle.request()  # a key: 0.1 s after it, sooner than the pace
    assert sorted(round(delay, 9) for delay, _ in timers.waiting) == [0.1, 0.15]  # the paced one, then the key's
    assert math.isclose(timers.fire_next(), 0.1) and len(runs) == 3
    timers.fire_next()  # the paced timer was replaced: nothing more runs
    assert len(runs) == 3 and not throttle.pending
    throttle.request()
    throttle.request(paced=True)  # a paced request folds into a sooner run
    assert len(timers.waiting) == 1


def _curve(last: float) -> CurveInput:
    steps = np.arange(1.0, last + 1)
    index = ColumnIndex()
    index.sync(steps, 1.0 / np.sqrt(steps))
    return CurveInput(key="a", color=(200, 100, 50), marker="*", first_step=1.0, last_step=last, min_positive=1.0,
                      raw=index.query)


def test_a_followed_axis_end_moves_ahead_on_the_follow_grid_and_stays_while_the_steps_fit():
    view, memo = ChartView(log_x=True), {}
    first = x_window([_curve(10_000)], view, memo, follow=True)
    assert first.hi == rounded_end(first.lo, math.log10(10_000))  # drawn from scratch: the fine grid
    ends = []
    for last in range(10_001, 12_000, 7):  # a run followed line by line
        window = x_window([_curve(last)], view, memo, follow=True)
        assert math.log10(last) <= window.hi  # every point inside the axis
        assert window.hi - math.log10(last) < (window.hi - window.lo) / FOLLOW_GRID  # never far ahead
        ends.append(window.hi)
    moves = sum(1 for a, b in zip(ends, ends[1:]) if a != b)
    fine = {rounded_end(first.lo, math.log10(last)) for last in range(10_001, 12_000, 7)}
    assert 1 <= moves and moves + 1 < len(fine) / 4  # the fine grid would have moved it many times more
    # not followed (a load, or without the memo) the end is the fine grid's, as before
    assert x_window([_curve(11_000)], view).hi == rounded_end(first.lo, math.log10(11_000))
    assert x_window([_curve(11_000)], view, {}, follow=True).hi == rounded_end(first.lo, math.log10(11_000))


def test_a_followed_axis_end_comes_back_when_it_would_leave_more_than_a_follow_step_empty():
    view, memo = ChartView(log_x=True), {}
    x_window([_curve(10_000)], view, memo, follow=True)
    grown = x_window([_curve(10_050)], view, memo, follow=True)
    assert grown.hi > rounded_end(grown.lo, math.log10(10_050))  # ahead of the fine grid
    # the longest run switched off: the steps end far before that end, so it comes back
    shorter = x_window([_curve(5_000)], view, memo, follow=True)
    assert shorter.hi == rounded_end(shorter.lo, math.log10(5_000))


def test_the_followed_chart_shows_every_point_of_the_run():
    memo, view = {}, ChartView(log_x=False)
    for last in (1_000, 1_001, 1_013, 1_100):
        spec = build_chart([_curve(last)], view, 80, height=20, memo=memo, follow=True)
        assert spec.x_lim[0] <= 1.0 and last <= spec.x_lim[1] and spec.newest_step == last
        assert max(spec.traces[0].xs) <= spec.x_lim[1]


# -- inotify, read by the driver's thread -----------------------------------------------------------

def _inotify_watcher(root):
    import sys

    import pytest

    from tuiloss.ui.watcher import Inotify, Watcher

    if not sys.platform.startswith("linux"):
        pytest.skip("inotify is Linux's")
    watcher = Watcher([str(root)], None, mounts=[])
    watcher.start()
    assert watcher.mode == "inotify" and isinstance(watcher._observer, Inotify), watcher.reason
    return watcher


def _changes_until(watcher, done, seconds: float = 10.0):
    import time

    paths, structure = set(), False
    deadline = time.monotonic() + seconds
    while not done(paths):
        assert time.monotonic() < deadline, paths
        watcher.wait(0.1)
        changes = watcher.take()
        paths |= changes.paths
        structure = structure or changes.structure
    return paths, structure


def test_writes_between_two_reads_wait_in_the_kernel_queue_folded_into_one_event(tmp_path):
    (tmp_path / "run").mkdir()
    log = tmp_path / "run" / "metrics.csv"
    log.write_text("step,loss\n")
    watcher = _inotify_watcher(tmp_path)
    try:
        _changes_until(watcher, lambda paths: True, 0)  # what the first write queued, if anything
        watcher.take()
        with open(log, "a") as handle:
            for step in range(200):  # a log written line by line, between two reads of the queue
                handle.write(f"{step},0.5\n")
                handle.flush()
        assert watcher.wait(5.0)
        found = watcher._observer.read()
        assert {path for path, _ in found} == {str(log)} and not any(structure for _, structure in found)
        assert len(found) <= 3  # 200 writes, one event: the kernel folds a repeat of the last one
    finally:
        watcher.stop()


def test_a_new_folder_and_what_was_made_in_it_before_its_watch_are_seen(tmp_path):
    watcher = _inotify_watcher(tmp_path)
    try:
        deep = tmp_path / "new" / "deeper"
        deep.mkdir(parents=True)
        (deep / "train.log").write_text("iter 1: loss 1.0\n")
        paths, structure = _changes_until(watcher, lambda paths: str(deep / "train.log") in paths)
        assert structure and str(tmp_path / "new") in paths
        with open(deep / "train.log", "a") as handle:  # now watched: a write there is seen as one
            handle.write("iter 2: loss 0.9\n")
        paths, structure = _changes_until(watcher, lambda paths: str(deep / "train.log") in paths)
        assert not structure
        (tmp_path / "new").rename(tmp_path / "moved")  # moved: its folders are watched where they are now
        _changes_until(watcher, lambda paths: str(tmp_path / "moved") in paths)
        with open(tmp_path / "moved" / "deeper" / "train.log", "a") as handle:
            handle.write("iter 3: loss 0.8\n")
        _changes_until(watcher, lambda paths: str(tmp_path / "moved" / "deeper" / "train.log") in paths)
        assert not any(folder.startswith(str(tmp_path / "new")) for folder in watcher._observer.folders.values())
    finally:
        watcher.stop()


def test_a_wake_ends_the_wait_on_the_queue(tmp_path):
    import threading
    import time

    watcher = _inotify_watcher(tmp_path)
    try:
        assert not watcher.wait(0.05)  # nothing queued: the timeout
        waker = threading.Timer(0.05, watcher.wake)
        waker.start()
        began = time.monotonic()
        assert watcher.wait(30.0) and time.monotonic() - began < 20
        waker.join()
    finally:
        watcher.stop()
    assert watcher._observer is None and not watcher.uses_events


def test_a_folder_past_the_watch_limit_turns_the_watcher_to_polling(tmp_path, monkeypatch):
    import errno

    import tuiloss.ui.watcher as watcher_module

    watcher = _inotify_watcher(tmp_path)
    try:
        def refused(queue, path, mask):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        monkeypatch.setattr(watcher_module, "add_watch", refused)
        (tmp_path / "later").mkdir()
        (tmp_path / "later" / "metrics.csv").write_text("step,loss\n1,0.5\n")
        _changes_until(watcher, lambda paths: str(tmp_path / "later" / "metrics.csv") in paths)
        assert watcher.recheck()  # the driver asks at each wake-up
        assert (watcher.mode, "watch limit" in watcher.reason, watcher.uses_events) == ("polling", True, False)
        assert watcher.sees_new_files  # the folders' times are looked at instead
    finally:
        watcher.stop()


def test_a_watched_root_that_is_a_link_to_a_folder_is_watched_through_it(tmp_path):
    (tmp_path / "real" / "run1").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    watcher = _inotify_watcher(tmp_path / "link")
    try:
        log = tmp_path / "link" / "run1" / "metrics.csv"
        log.write_text("step,loss\n1,0.5\n")
        paths, structure = _changes_until(watcher, lambda paths: str(log) in paths)
        assert structure
    finally:
        watcher.stop()


# -- reads of a busy log --------------------------------------------------------------------------

def _reads(write_times: list[float]) -> tuple[list[float], list[float]]:
    """The driver's reads of a log written at ``write_times``: each wake (the first write not yet
    read) is read when :class:`ReadPace` says, and takes every write made before. Returns the
    times of the reads and how long each write waited for its read."""
    from tuiloss.core.driver import ReadPace

    pace, reads, waits, k = ReadPace(), [], [], 0
    while k < len(write_times):
        woken = write_times[k]
        at = max(woken, pace.due(woken))
        pace.read(at)
        reads.append(at)
        while k < len(write_times) and write_times[k] <= at:
            waits.append(at - write_times[k])
            k += 1
    return reads, waits


def test_a_log_written_a_hundred_lines_a_second_is_read_a_few_times_a_second_each_point_soon():
    from tuiloss.core.driver import FOLLOW_GAP, READ_GAP

    busy = [k * 0.01 for k in range(1_000)]  # ten seconds at a hundred lines a second
    reads, waits = _reads(busy)
    assert len(reads) <= 10 / FOLLOW_GAP + 3  # not one read per write, nor twenty a second
    assert max(waits) <= FOLLOW_GAP + 1e-9  # no point waits longer than the follow gap for its read
    assert len(reads) < 10 / READ_GAP / 2
    # ten lines a second: each line read as it comes, as before
    reads, waits = _reads([k * 0.1 for k in range(100)])
    assert len(reads) == 100 and max(waits) == 0.0
    # a busy log that falls quiet: its next lone line is read at once
    reads, waits = _reads(busy + [busy[-1] + 1.0])
    assert waits[-1] == 0.0 and reads[-1] == busy[-1] + 1.0


def _busy_reads(write_times: list[float]) -> list[bool]:
    """Whether each of the driver's reads of a log written at ``write_times`` (as :func:`_reads`
    makes them) was made at the follow pace."""
    from tuiloss.core.driver import ReadPace

    pace, busy, k = ReadPace(), [], 0
    while k < len(write_times):
        woken = write_times[k]
        at = max(woken, pace.due(woken))
        pace.read(at)
        busy.append(pace.busy)
        while k < len(write_times) and write_times[k] <= at:
            k += 1
    return busy


def test_the_reads_of_a_log_written_more_than_twenty_lines_a_second_say_so():
    hundred = [k * 0.01 for k in range(500)]
    busy = _busy_reads(hundred)
    assert not busy[0] and all(busy[3:])  # after the first few reads
    assert not any(_busy_reads([k * 0.1 for k in range(50)]))  # ten lines a second
    assert not _busy_reads(hundred + [hundred[-1] + 1.0])[-1]  # a lone line after a quiet while


# -- the panel, once a second -----------------------------------------------------------------------

async def test_the_panel_paints_again_only_its_lines_that_changed_and_shows_the_new_text():
    from rich.text import Text
    from textual.app import App

    from tuiloss.ui.widgets import InsightsPanel

    class Host(App[None]):
        def compose(self):
            yield InsightsPanel(id="insights")

    def text(last: float) -> Text:
        out = Text()
        for k in range(30):
            out.append(f"run {k}", style="bold")
            out.append(f"  last {last if k == 3 else 0.5:.3f}\n")
        return out

    app = Host()
    async with app.run_test(size=(40, 12)) as pilot:
        panel = app.query_one(InsightsPanel)
        panel.show(text(0.25))
        await pilot.pause()
        painted: list[int] = []
        render_line = panel.render_line

        def noting(y):
            painted.append(y)
            return render_line(y)

        panel.render_line = noting
        panel.show(text(0.125))  # a followed run's block changed: its line, no other
        await pilot.pause()
        assert painted and set(painted) == {3}
        shown = [panel.render_line(y).text for y in range(panel.size.height)]
        panel._strips.clear()  # every line made again from the text shown
        assert shown == [panel.render_line(y).text for y in range(panel.size.height)]
        assert "last 0.125" in shown[3] and "last 0.500" in shown[4]


def test_the_automatic_log_y_decides_as_the_quantiles_of_every_curve_do():
    from tuiloss.ui.chartdata import LOG_Y_RATIO, _spans_decades

    def reference(extremes) -> bool:
        lows = np.concatenate([low for low, _ in extremes])
        highs = np.concatenate([high for _, high in extremes])
        if not len(lows) or not len(highs) or lows.min() <= 0:
            return False
        return float(np.quantile(highs, 0.98)) > LOG_Y_RATIO * float(np.quantile(lows, 0.02))

    rng = np.random.default_rng(11)
    answers = set()
    for trial in range(400):
        curves = int(rng.integers(1, 40))
        scale = 10.0 ** rng.uniform(-1.5, 1.5)  # some spans under a decade, some over, some near it
        extremes = []
        for _ in range(curves):
            size = int(rng.integers(1, 300))
            low = np.exp(rng.normal(0.0, 1.0, size)) * (0.2 if trial % 7 else 1.0)
            extremes.append((low, low * scale * np.exp(rng.normal(0.0, 0.1, size))))
        if trial % 5 == 0:  # a near tie: the 98th percentile of the maxima ten times the 2nd of the minima
            lows = np.concatenate([low for low, _ in extremes])
            highs = np.concatenate([high for _, high in extremes])
            extremes.append((np.zeros(0), np.full(3, 0.0)))
            ratio = LOG_Y_RATIO * float(np.quantile(lows, 0.02)) / float(np.quantile(highs, 0.98))
            extremes = [(low, high * ratio * (1 + k * 1e-16)) for k, (low, high) in enumerate(extremes[:-1])]
        if trial % 11 == 0:
            extremes[0][0][:1] = -1.0  # a value not above zero: never log
        answers.add(reference(extremes))
        assert _spans_decades(extremes) == reference(extremes), trial
    assert answers == {True, False}


# -- a busy log's frames ----------------------------------------------------------------------------

async def test_a_busy_logs_points_are_drawn_at_each_read_and_its_numbers_once_a_second(tmp_path, config_for,
                                                                                        monkeypatch):
    """Each read of a log written more than twenty lines a second draws its points on the chart at
    once; the status line's counts and the runs list's values follow once a second (the tick), and
    any read that is not busy, or a key, draws them with its frame as before."""
    from ui_helpers import settle, wait_for, wait_loaded

    from test_scale import write_runs
    from tuiloss.core.driver import ReadPace
    from tuiloss.ui.app import TuilossApp, make_app

    monkeypatch.setattr(ReadPace, "busy", property(lambda self: True))  # every read is at the follow pace
    ticking = [True]
    tick = TuilossApp._tick
    monkeypatch.setattr(TuilossApp, "_tick", lambda self: tick(self) if ticking[0] else None)
    write_runs(tmp_path, 3)
    app = make_app(config_for(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        await settle(pilot, app)
        drawn = []
        draw_status = app._draw_status
        app._draw_status = lambda: drawn.append(app.store.points) or draw_status()
        points = app.status_bar.status.points
        ticking[0] = False
        log = tmp_path / "run000" / "metrics.csv"
        for step in range(21, 26):
            with open(log, "a") as handle:
                handle.write(f"{step},{1.0 / step:.6f}\n")
            await wait_for(pilot, lambda: app.chart.spec.newest_step == step, 5, f"step {step} on the chart")
        assert drawn == [] and app.status_bar.status.points == points  # the frames drew the chart alone
        assert not app.settled()  # the numbers are owed to the tick
        ticking[0] = True
        await settle(pilot, app)
        assert app.status_bar.status.points == app.store.points == points + 5
        row = next(row for row in app.run_list.rows_shown if row.key.endswith("run000/metrics.csv"))
        assert row.value == "0.0400"  # 1/25
        ticking[0] = False
        await pilot.press("1")  # a key draws them with its frame, busy or not
        await settle(pilot, app)
        assert len(drawn) >= 2 and app.status_bar.status.shown == 2


# -- an idle viewer -----------------------------------------------------------------------------------

async def test_an_idle_viewer_repaints_nothing_while_the_words_on_screen_stay_the_same(tmp_path, config_for,
                                                                                        monkeypatch):
    """The once-a-second tick finds the last point a second older; the status line says so only
    when its words change ("2.0h ago" to "3.0h ago"): nothing else is repainted meanwhile."""
    from textual.widget import Widget
    from ui_helpers import settle, wait_loaded

    from test_scale import write_runs
    from tuiloss.ui.app import make_app

    write_runs(tmp_path, 3)
    app = make_app(config_for(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        now = [app.clock() + 7200.0]
        app.clock = lambda: now[0]
        app._tick()
        await settle(pilot, app)
        assert "2.0h ago" in str(app.status_bar.text)
        refreshed = []
        refresh = Widget.refresh
        monkeypatch.setattr(Widget, "refresh", lambda self, *a, **k: refreshed.append(self) or refresh(self, *a, **k))
        for _ in range(5):
            now[0] += 1.0
            app._tick()
            await pilot.pause()
        assert refreshed == []
        now[0] += 3600.0
        app._tick()
        await settle(pilot, app)
        assert refreshed == [app.status_bar] and "3.0h ago" in str(app.status_bar.text)
