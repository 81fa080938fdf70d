import math

import numpy as np
import pytest

from tuiloss.ui.chartdata import (
    ChartSpec,
    ChartView,
    Mark,
    build_chart,
    edge_step,
    linear_ticks,
    log_ticks,
    moved_cursor,
    next_smoothing,
    rounded_end,
    step_label,
    x_window,
)

from ui_helpers import curve_from_arrays


def test_step_labels():
    assert [step_label(v) for v in (1, 10, 100, 1e3, 1e4, 1e5, 1e6)] == ["1", "10", "100", "1K", "10K", "100K", "1M"]
    assert step_label(2500) == "2.5K"
    assert step_label(0.5) == "0.5"


def test_log_ticks_are_decades_when_the_range_spans_them():
    assert log_ticks(0, 5) == [1, 10, 100, 1e3, 1e4, 1e5]
    ticks = log_ticks(math.log10(20_000), math.log10(100_000))
    assert len(ticks) >= 2 and all(2e4 <= t <= 1e5 for t in ticks)


def test_linear_ticks_are_round():
    assert linear_ticks(0, 100_000, 5) == [0, 20_000, 40_000, 60_000, 80_000, 100_000]
    assert linear_ticks(0.17, 1.45, 6) == [0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4]


def _curve(steps, values, **kw):
    return curve_from_arrays("run", steps, values, **kw)


def test_log_axis_is_plotted_as_log10_values_with_step_labels():
    steps = np.arange(100, 100_001, 100, dtype=float)
    spec = build_chart([_curve(steps, 1 / np.sqrt(steps))], ChartView(), 80)
    assert spec.x_log
    assert spec.x_lim == (2.0, 5.0)
    assert spec.x_ticks[1] == ["100", "1K", "10K", "100K"]
    assert spec.x_ticks[0] == [2.0, 3.0, 4.0, 5.0]
    xs = [x for trace in spec.traces for x in trace.xs]
    assert min(xs) >= 2.0 and max(xs) <= 5.0


def test_linear_axis_on_request():
    steps = np.arange(0, 1001, dtype=float)
    spec = build_chart([_curve(steps, np.ones_like(steps))], ChartView(log_x=False), 60)
    assert not spec.x_log and spec.x_lim == (0.0, 1000.0)


def test_step_zero_is_drawn_at_the_left_edge_on_a_log_axis():
    steps = np.arange(0, 1001, 10, dtype=float)
    spec = build_chart([_curve(steps, np.linspace(2, 1, len(steps)))], ChartView(), 60)
    assert spec.x_log and "step 0 at left edge" in spec.title
    xs = [x for t in spec.traces for x in t.xs]
    assert all(math.isfinite(x) for x in xs)


def test_a_one_point_spike_survives_downsampling():
    steps = np.arange(1, 1_000_001, dtype=float)
    values = np.full(len(steps), 0.2)
    values[500_000] = 5.0
    spec = build_chart([_curve(steps, values)], ChartView(log_x=False), 40)
    ys = [y for t in spec.traces for y in t.ys]
    assert max(ys) == 5.0
    assert sum(len(t.xs) for t in spec.traces) <= 4 * 80 + 4


def test_nan_is_marked_at_the_top():
    steps = np.arange(1, 101, dtype=float)
    values = np.linspace(1, 0.5, 100)
    values[50] = np.nan
    spec = build_chart([_curve(steps, values)], ChartView(), 40)
    assert any(label.text == "×" for label in spec.labels)
    assert "NaN" in spec.title


def test_ascii_mode_uses_no_braille():
    steps = np.arange(1, 101, dtype=float)
    spec = build_chart([_curve(steps, np.linspace(1, 0.5, 100), marker="+", smoothing=0.6)],
                       ChartView(ascii=True, smoothing=0.6), 40)
    assert all(t.marker != "braille" for t in spec.traces)
    assert {t.marker for t in spec.traces} == {".", "+"}


def test_smoothing_keeps_the_raw_curve_behind():
    steps = np.arange(1, 101, dtype=float)
    curve = _curve(steps, np.linspace(1, 0.5, 100), smoothing=0.9)
    spec = build_chart([curve], ChartView(smoothing=0.9), 40)
    assert len(spec.traces) == 2  # raw first (faint), smoothed on top
    assert spec.traces[0].color != spec.traces[1].color


def test_log_y_plots_log10_values():
    steps = np.arange(1, 101, dtype=float)
    spec = build_chart([_curve(steps, np.geomspace(10, 0.1, 100))], ChartView(log_y=True), 40)
    ys = [y for t in spec.traces for y in t.ys]
    assert -1.01 <= min(ys) and max(ys) <= 1.01
    assert "log y" in spec.title
    assert all(label in ("0.1", "0.2", "0.5", "1", "1.00", "2", "2.00", "5", "5.00", "10", "10.0", "0.100", "0.200", "0.500")
               for label in spec.y_ticks[1])


def test_zoom_halves_the_range_ending_at_the_latest_step():
    steps = np.arange(0, 100_001, 100, dtype=float)
    curve = _curve(steps, np.ones_like(steps))
    window = x_window([curve], ChartView(log_x=False, zoom=1))
    assert window.lo == 50_000.0
    assert window.hi == rounded_end(50_000.0, 100_000.0)  # on a grid just past the latest step
    assert 100_000 <= window.hi < 100_000 + 50_000 / 256
    window = x_window([curve], ChartView(log_x=False, zoom=2))
    assert window.lo == 75_000.0


def test_the_x_axis_end_moves_in_grid_steps_as_a_run_grows():
    ends = [rounded_end(0.0, float(last)) for last in range(10_000, 10_400)]
    assert all(end >= last for end, last in zip(ends, range(10_000, 10_400)))
    assert all(end - last < 10_000 / 256 for end, last in zip(ends, range(10_000, 10_400)))
    assert len(set(ends)) < 400 / 10  # one step in ten or fewer moves the window
    assert rounded_end(3.0, 3.0) == 3.0 and rounded_end(0.0, float("inf")) == float("inf")


def test_spike_and_drift_marks():
    steps = np.arange(100, 100_001, 100, dtype=float)
    values = np.full(len(steps), 0.2)
    curve = _curve(steps, values, marks=[Mark("spike", 25_000, 1.4, 30_000), Mark("drift", 40_000, 0.21, 60_000)])
    spec = build_chart([curve], ChartView(log_x=False), 80)
    texts = [label.text for label in spec.labels]
    assert "▲1.40" in texts
    assert "↗drift" in texts


def test_empty_chart_says_so():
    assert build_chart([], ChartView(), 40).empty == "no runs to show"


def test_a_memo_reuses_the_points_of_an_unchanged_curve_and_not_of_a_changed_one():
    from dataclasses import replace

    from tuiloss.core.analysis import ColumnIndex

    steps = np.arange(1, 5001, dtype=float)
    index = ColumnIndex()
    index.sync(steps, 1 / np.sqrt(steps))
    curve = replace(_curve(steps, 1 / np.sqrt(steps)), raw=index.query)
    memo: dict = {}
    first = build_chart([curve], ChartView(log_y=False), 80, memo=memo)
    again = build_chart([curve], ChartView(log_y=False), 80, memo=memo)
    assert again.traces[0].xs is first.traces[0].xs  # same answer from the index: points reused
    longer = np.arange(1, 6001, dtype=float)
    values = 1 / np.sqrt(longer)
    values[-1] = 5.0  # a spike at the new end
    index.sync(longer, values)
    grown = replace(curve, last_step=6000.0, raw=index.query)
    after = build_chart([grown], ChartView(log_y=False), 80, memo=memo)
    assert after.traces[0].xs is not first.traces[0].xs
    assert max(after.traces[0].ys) == 5.0
    assert after.y_lim[1] > 5.0
    fresh = build_chart([grown], ChartView(log_y=False), 80)
    assert np.array_equal(after.traces[0].xs, fresh.traces[0].xs)
    assert np.array_equal(after.traces[0].ys, fresh.traces[0].ys)


def test_the_step_cursor_starts_at_the_right_edge_moves_by_columns_and_stays_inside():
    linear = ChartSpec(x_lim=(0.0, 100.0))
    assert moved_cursor(linear, None, -1, 50) == 100.0
    assert moved_cursor(linear, 100.0, -10, 50) == 80.0
    assert moved_cursor(linear, 10.0, -10, 50) == 0.0
    assert (edge_step(linear, end=False), edge_step(linear, end=True)) == (0.0, 100.0)
    log = ChartSpec(x_lim=(1.0, 5.0), x_log=True)  # steps 10 .. 100K
    assert moved_cursor(log, None, 1, 40) == 100_000
    assert math.isclose(moved_cursor(log, 100_000, -10, 40), 10**4)
    assert math.isclose(moved_cursor(log, 0.0, 10, 40), 10**2)  # step 0 sits at the left edge
    assert (edge_step(log, end=False), edge_step(log, end=True)) == (10.0, 100_000.0)
    empty = ChartSpec(empty="no runs to show")
    assert moved_cursor(empty, 5.0, 1, 40) is None and edge_step(empty, end=True) is None


def test_smoothing_cycles_through_its_steps_and_back_to_none():
    assert [next_smoothing(w) for w in (0.0, 0.6, 0.9, 0.99)] == [0.6, 0.9, 0.99, 0.0]
    assert next_smoothing(0.7) == 0.9  # a --smoothing between the steps goes on to the next one


def _loss(steps, start, level, noise, seed=0):
    """A loss falling from ``start`` to ``level`` (a power law in the step), with noise."""
    rng = np.random.default_rng(seed)
    return level + (start - level) * (steps / steps[0]) ** -0.9 + rng.normal(0, noise, len(steps))


def test_values_spanning_decades_get_a_log_axis_by_default_and_an_explicit_choice_wins():
    steps = np.arange(10, 20_001, 10, dtype=float)
    wide = _curve(steps, np.geomspace(38.0, 1e-4, len(steps)))
    auto = build_chart([wide], ChartView(), 60, height=20)
    assert auto.y_log and "log y (auto)" in auto.title
    assert max(y for t in auto.traces for y in t.ys) - min(y for t in auto.traces for y in t.ys) > 5  # decades
    linear = build_chart([wide], ChartView(log_y=False), 60, height=20)
    assert not linear.y_log and "log y" not in linear.title
    narrow = build_chart([_curve(steps, _loss(steps, 1.3, 0.2, 0.004))], ChartView(), 60, height=20)
    assert not narrow.y_log  # 1.3 / 0.2 is under a decade
    negative = build_chart([_curve(steps, np.linspace(-5, 40, len(steps)))], ChartView(), 60, height=20)
    assert not negative.y_log  # no log axis for values at or below zero
    forced = build_chart([_curve(steps, _loss(steps, 1.3, 0.2, 0.004))], ChartView(log_y=True), 60, height=20)
    assert forced.y_log and "log y ·" in forced.title + " ·"


def test_a_transient_ten_times_the_final_level_is_cut_so_the_settled_curves_get_the_rows():
    steps = np.arange(100, 100_001, 100, dtype=float)
    a = _curve(steps, _loss(steps, 1.3, 0.20, 0.003, seed=1))
    b = _curve(steps, _loss(steps, 1.25, 0.23, 0.003, seed=2))
    spec = build_chart([a, b], ChartView(), 60, height=20)
    y_lo, y_hi = spec.y_lim
    assert y_hi < 0.5 and y_lo < 0.2  # the settled levels 0.20 and 0.23 fill the axis
    rows_between_the_levels = (0.23 - 0.20) / (y_hi - y_lo) * 20
    assert rows_between_the_levels >= 2
    arrows = [label.text for label in spec.labels if label.text.startswith("↑")]
    assert len(arrows) == 1 and 1.27 <= float(arrows[0][1:]) <= 1.33  # where the curves began
    full = build_chart([a, b], ChartView(), 60, height=20)
    assert full.y_lim == spec.y_lim  # the same data, the same axis


def test_a_curve_that_stays_in_range_is_not_cut_and_a_new_last_point_is_always_on_the_axis():
    steps = np.arange(1, 1001, dtype=float)
    gentle = _curve(steps, np.linspace(1.0, 0.6, len(steps)))
    spec = build_chart([gentle], ChartView(), 60, height=20)
    assert spec.y_lim[0] <= 0.6 and spec.y_lim[1] >= 1.0
    assert not [label for label in spec.labels if label.text[:1] in "↑↓"]
    values = _loss(steps, 1.3, 0.2, 0.002)
    values[-1] = 3.0  # the newest point jumps: it must be seen at once
    spec = build_chart([_curve(steps, values)], ChartView(), 60, height=20)
    assert spec.y_lim[1] >= 3.0


def test_a_rising_metric_cut_below_is_marked_below():
    steps = np.arange(1, 2001, dtype=float)
    accuracy = 99.5 - 87.5 * (steps / steps[0]) ** -0.9 + np.random.default_rng(3).normal(0, 0.05, len(steps))
    spec = build_chart([_curve(steps, accuracy)], ChartView(), 60, height=20)
    assert spec.y_lim[0] > 90
    arrows = [label.text for label in spec.labels if label.text.startswith("↓")]
    assert len(arrows) == 1 and 11.8 <= float(arrows[0][1:]) <= 12.2  # where it began
    plain = build_chart([_curve(steps, accuracy)], ChartView(ascii=True), 60, height=20)
    assert len([label for label in plain.labels if label.text.startswith("v1")]) == 1


def test_eval_points_are_drawn_over_the_curves_and_inside_the_axis():
    steps = np.arange(25, 5001, 25, dtype=float)
    train = np.geomspace(0.3, 1e-4, len(steps))  # falls to nothing, like an overfitting fine-tune
    eval_steps = np.array([1000.0, 2000.0, 3000.0, 4000.0, 5000.0])
    eval_values = np.array([0.321, 0.35, 0.38, 0.40, 0.420])  # rises at every eval
    curve = _curve(steps, train, eval_steps=eval_steps, eval_values=eval_values)
    spec = build_chart([curve], ChartView(show_eval=True), 60, height=20)
    assert spec.traces[-1].kind == "scatter"  # last: no curve is drawn over an eval point
    y_lo, y_hi = spec.y_lim
    ys = spec.traces[-1].ys
    assert len(ys) == 5 and all(y_lo <= y <= y_hi for y in ys)
    assert list(ys) == sorted(ys) and ys[-1] - ys[0] > 0.02 * (y_hi - y_lo)  # seen rising, not pinned
    linear = build_chart([curve], ChartView(show_eval=True, log_y=False), 60, height=20)
    assert all(linear.y_lim[0] <= y <= linear.y_lim[1] for y in linear.traces[-1].ys)


def test_y_tick_labels_share_one_number_of_decimals():
    from tuiloss.ui.chartdata import tick_labels

    assert tick_labels([0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4]) == ["0.2", "0.4", "0.6", "0.8", "1.0", "1.2", "1.4"]
    assert tick_labels([0.18, 0.2, 0.22, 0.24]) == ["0.18", "0.20", "0.22", "0.24"]
    assert tick_labels([0.0, 250.0, 500.0]) == ["0", "250", "500"]
    steps = np.arange(1, 101, dtype=float)
    spec = build_chart([_curve(steps, np.linspace(1.4, 0.2, 100))], ChartView(log_y=False), 40, height=20)
    decimals = {len(label.split(".")[1]) if "." in label else 0 for label in spec.y_ticks[1]}
    assert len(decimals) == 1


def test_the_x_axis_always_labels_its_last_decade():
    for top in (1e4, 1e5, 1e6, 1e7, 1e8):
        ticks = log_ticks(0, math.log10(top), max_ticks=3)
        assert ticks[-1] == top and len(ticks) <= 3


def test_the_cursor_ends_at_the_latest_step_not_the_axis_grid():
    spec = ChartSpec(x_lim=(0.0, 100.25), newest_step=100.0)
    assert edge_step(spec, end=True) == 100.0
    assert moved_cursor(spec, None, 0, 50) == 100.0
    assert moved_cursor(spec, 99.0, 5, 50) == 100.0  # never past it
    log = ChartSpec(x_lim=(1.0, 3.001), x_log=True, newest_step=1000.0)
    assert edge_step(log, end=True) == pytest.approx(1000.0)


def _drawing(spec: ChartSpec) -> tuple:
    """Everything a spec draws, arrays as lists: two specs that draw the same compare equal."""
    traces = [(list(map(float, t.xs)), list(map(float, t.ys)), t.color, t.marker, t.kind) for t in spec.traces]
    return (traces, spec.labels, spec.vlines, spec.x_lim, spec.y_lim, spec.x_ticks, spec.y_ticks, spec.title,
            spec.empty, spec.x_log, spec.y_log, spec.notes, spec.newest_step)


def _many_curves(count: int) -> list:
    from dataclasses import replace

    rng = np.random.default_rng(7)
    curves = []
    for k in range(count):
        steps = np.arange(1, 2001 + 37 * k, dtype=float)
        values = 0.3 + (1.0 + k % 5) / np.sqrt(steps) + 0.01 * rng.random(len(steps))
        if k % 9 == 4:
            values[len(values) // 3] = np.nan
        if k % 7 == 3:
            values = values * 1e3 ** (-steps / steps[-1])  # spans decades: pulls the y axis toward log
        extra = {}
        if k % 11 == 2:
            extra = dict(marks=[Mark("spike", 500.0, float(values[499]))], segment_starts=[(900.0, "reset")])
        curve = curve_from_arrays(f"run{k}", steps, values, color=(k, 100, 200), marker="*o#"[k % 3], **extra)
        curves.append(replace(curve, smoothed=curve_from_arrays("s", steps, values, smoothing=0.9).smoothed))
    return curves


@pytest.mark.parametrize("view", [ChartView(), ChartView(log_y=False), ChartView(smoothing=0.9),
                                  ChartView(ascii=True), ChartView(zoom=1, log_x=False)])
def test_a_frame_that_keeps_its_unchanged_curves_draws_what_a_frame_made_afresh_draws(view):
    from dataclasses import replace

    curves = _many_curves(40)
    grown = replace(curves[3], last_step=curves[3].last_step + 500.0,
                    raw=curve_from_arrays("g", np.arange(1, 2541, dtype=float), np.linspace(3, 0.5, 2540)).raw)
    decades = [c for k, c in enumerate(curves) if k % 7 == 3]
    frames = [
        curves,
        curves[:5] + curves[6:],  # one switched off
        curves,  # and on again
        curves[:10] + curves[20:],  # ten at once
        [c for c in curves if c not in decades],  # the curves that span decades leave: the y scale may change
        curves,
        curves[:3] + [grown] + curves[4:],  # one grew: a new curve object
        curves[:3] + [grown] + curves[4:] + [curves[0]] * 0,
        curves[-1:] + curves[:-1],  # the same curves in another order
        [],
        curves[:1],
    ]
    memo: dict = {}
    for frame in frames:
        kept = build_chart(frame, view, 90, height=24, memo=memo)
        fresh = build_chart(frame, view, 90, height=24)
        assert _drawing(kept) == _drawing(fresh)


def test_the_auto_log_y_reads_kept_pools_as_the_whole_quantiles_do():
    from tuiloss.ui.chartdata import _merged, sorted_quantile

    rng = np.random.default_rng(3)
    for size in (1, 2, 3, 50, 1001, 40_000):
        values = np.sort(np.round(rng.lognormal(size=size), 2))  # rounded: many equal values
        for q in (0.0, 0.02, 0.5, 0.98, 1.0):
            assert sorted_quantile(values, q) == float(np.quantile(values, q))
    pool = np.sort(np.round(rng.random(5000), 3))
    out, into = pool[::7].copy(), np.round(rng.random(300), 3)
    rng.shuffle(out)
    kept = _merged(pool, [out], [into])
    assert np.array_equal(kept, np.sort(np.concatenate([np.delete(pool, np.arange(0, 5000, 7)), into])))


@pytest.mark.parametrize("view", [ChartView(), ChartView(log_y=False), ChartView(smoothing=0.9)])
def test_a_followed_curve_whose_new_points_draw_the_same_keeps_its_traces_and_draws_what_a_fresh_frame_does(view):
    from dataclasses import replace

    from tuiloss.core.analysis import ColumnIndex
    from tuiloss.ui.canvas import Layers, render_chart

    curves = _many_curves(12)
    rng = np.random.default_rng(11)
    steps = np.arange(1, 3001, dtype=float)
    values = 0.4 + 0.001 * rng.integers(0, 7, len(steps))  # a settled run's level and noise
    values[:50] = 2.0  # its transient: the spike kept in view is the first column's
    index = ColumnIndex()
    memo: dict = {}
    layers, fresh_layers = Layers(), None
    kept_traces = changed_traces = 0
    before = None
    for frame in range(40):
        grown = np.arange(1, len(steps) + 1 + 15 * frame, dtype=float)
        more = 0.4 + 0.001 * rng.integers(0, 7, len(grown) - len(steps))
        if frame == 25:
            more[-1] = 0.2  # a new low: its column draws anew, and the pools change
        values = np.concatenate([values, more[len(values) - len(steps):]]) if len(grown) > len(values) else values
        index.sync(grown, values)
        followed = replace(curve_from_arrays("followed", grown, values, color=(9, 9, 9)), raw=index.query,
                           last_step=float(grown[-1]))
        frame_curves = curves[:4] + [followed] + curves[4:]
        kept = build_chart(frame_curves, view, 90, height=24, memo=memo)
        fresh = build_chart(frame_curves, view, 90, height=24)
        assert _drawing(kept) == _drawing(fresh)
        assert [line.plain for line in render_chart(kept, 100, 30, layers=layers)] == [
            line.plain for line in render_chart(fresh, 100, 30, layers=fresh_layers)]
        if before is not None and view.smoothing == 0:
            same = [a is b for a, b in zip(before.traces, kept.traces)]
            kept_traces += all(same)
            changed_traces += not all(same)
        before = kept
    if view.smoothing == 0:
        assert kept_traces > 0 and changed_traces > 0  # some frames drew the followed curve the same, some not


def test_a_curve_whose_extremes_changed_in_place_moves_only_those_in_and_out_of_the_pools():
    from tuiloss.ui.chartdata import _merged, _only_what_changed

    rng = np.random.default_rng(5)
    pool = np.sort(np.round(rng.random(3000), 2))
    old = pool[rng.choice(3000, 200, replace=False)]
    new = old.copy()
    new[[3, 50, 199]] = [0.5, 2.0, -1.0]
    out, into = [old.copy()], [new.copy()]
    _only_what_changed(out, into)
    assert len(out[0]) == len(into[0]) == 3
    assert np.array_equal(_merged(pool, out, into), _merged(pool, [old], [new]))
    shorter = [new[:-1].copy()]
    longer = [old.copy()]
    _only_what_changed(longer, shorter)  # not lined up: left whole
    assert len(longer[0]) == 200 and len(shorter[0]) == 199


def test_settled_bounds_are_the_quantiles_numpy_gives():
    from tuiloss.ui.chartdata import settled_bounds

    rng = np.random.default_rng(13)
    for size in (1, 2, 3, 7, 50, 333, 4000):
        for values in (rng.normal(size=size), np.round(rng.lognormal(size=size), 2), np.full(size, 0.386)):
            values = values.copy()
            if size > 3:
                values[size // 2] = np.nan
            kept = values[np.isfinite(values)]
            low, high = np.quantile(kept, (0.02, 0.98))
            assert settled_bounds(values) == (min(float(low), float(kept[-1])), max(float(high), float(kept[-1])))
    assert settled_bounds(np.array([np.nan, np.inf])) is None


@pytest.mark.parametrize("view", [ChartView(), ChartView(log_y=False)])
def test_a_frame_where_one_curve_changed_asks_only_that_curve_its_columns_and_draws_what_a_fresh_one_does(view):
    from dataclasses import replace

    asked: list[str] = []

    def counted(curve):
        def raw(*args):
            asked.append(curve.key)
            return curve.raw(*args)
        return replace(curve, raw=raw)

    base = _many_curves(30)
    curves = [counted(c) for c in base]
    memo: dict = {}
    build_chart(curves, view, 90, height=24, memo=memo)
    assert len(asked) == 30
    for k in (3, 17, 3):
        asked.clear()
        grown = counted(replace(base[k], color=(1, 2, k)))  # a new object at the same place
        curves = curves[:k] + [grown] + curves[k + 1:]
        kept = build_chart(curves, view, 90, height=24, memo=memo)
        assert asked == [curves[k].key]
        asked.clear()
        assert _drawing(kept) == _drawing(build_chart(curves, view, 90, height=24))
    asked.clear()
    build_chart(curves, view, 90, height=24, memo=memo)  # nothing changed
    assert asked == []
