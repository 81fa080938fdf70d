"""What keeps following a busy log cheap: paced frames, an axis end that moves ahead in steps."""

from __future__ import annotations

import math

import numpy as np

from tuiloss.core.analysis import ColumnIndex
from tuiloss.ui.chartdata import FOLLOW_GRID, ChartView, CurveInput, build_chart, rounded_end, x_window
from tuiloss.ui.throttle import Throttle


class FakeTimers:
    """Timers that fire only when the test says, on a clock the test moves."""

    def __init__(self) -> None:
        self.now = 100.0
        self.waiting: list[tuple[float, object]] = []

    def set_timer(self, delay, callback):
        self.waiting.append((delay, callback))
        return object()

    def fire_next(self) -> float:
        """Fire the timer due first; the delay it had."""
        self.waiting.sort(key=lambda item: item[0])
        delay, callback = self.waiting.pop(0)
        self.now += delay
        callback()
        return delay


def _throttle(timers, runs):
    return Throttle(timers.set_timer, lambda: runs.append(timers.now), lambda: 0.1, shortest=0.005,
                    clock=lambda: timers.now, pace=lambda: 0.15)


def test_paced_requests_wait_out_the_pace_and_fold_into_one_run():
    timers, runs = FakeTimers(), []
    throttle = _throttle(timers, runs)
    throttle.request(paced=True)  # nothing ran for long: at once
    assert timers.fire_next() == 0.005 and len(runs) == 1
    for _ in range(5):  # reads a few ms apart fold into one frame, the pace after the last
        throttle.request(paced=True)
    assert len(timers.waiting) == 1
    assert math.isclose(timers.fire_next(), 0.15) and len(runs) == 2


def test_a_key_moves_a_paced_run_forward_to_the_redraw_interval():
    timers, runs = FakeTimers(), []
    throttle = _throttle(timers, runs)
    throttle.request(now=True)
    timers.fire_next()
    throttle.request(paced=True)  # 0.15 s after the last run
    throttle.request()  # a key: 0.1 s after it, sooner
    assert sorted(round(delay, 9) for delay, _ in timers.waiting) == [0.1, 0.15]
    assert math.isclose(timers.fire_next(), 0.1) and len(runs) == 2
    timers.fire_next()  # the paced timer was replaced: nothing more runs
    assert len(runs) == 2 and not throttle.pending
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
