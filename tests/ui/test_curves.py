"""Curve preparation without a terminal: what each curve carries, and the caches behind it."""

from __future__ import annotations

import numpy as np

from tuiloss.core.analysis import ema, minmax_columns
from tuiloss.core.report import fmt_step, fmt_value
from tuiloss.core.store import Run, Series
from tuiloss.ui.chartdata import ChartView, Mark, build_chart
from tuiloss.ui.curves import Curves, legend_text, value_at, values_at
from tuiloss.ui.selection import ASCII_MARKERS, PALETTE, Selection


def make_run(run_id: str, **metrics: tuple[list[float], list[float]]) -> Run:
    series = {}
    for name, (steps, values) in metrics.items():
        s = Series()
        s.extend(np.asarray(steps, dtype=float), np.asarray(values, dtype=float))
        series[name] = s
    return Run(id=run_id, label=f"run {run_id}", source=run_id, format="csv", series=series)


def selection_of(runs: list[Run]) -> Selection:
    selection = Selection()
    for run in runs:
        selection.add(run.id)
    return selection


STEPS = [0.0, 10.0, 20.0, 30.0]


def test_each_run_with_points_in_its_metric_gets_a_curve_in_its_colour():
    a = make_run("a", loss=(STEPS, [4.0, 3.0, 2.0, 1.0]), val_loss=([10.0, 30.0], [3.5, 1.5]))
    empty = make_run("empty", loss=([], []))
    other = make_run("other", accuracy=(STEPS, [0.1, 0.2, 0.3, 0.4]))
    b = make_run("b", loss=([5.0, 6.0, 4.0], [1.0, 2.0, 3.0]))  # a reset at step 4
    runs = [a, empty, other, b]
    selection = selection_of(runs)
    selection.metric = "loss"
    marks = {"a": [Mark("spike", 20.0, 2.0)], "b": [Mark("spike", 5.0, 1.0)]}
    curves = Curves().prepare(runs, selection, ChartView(show_eval=True), marks, {"a": "loss", "b": "grad_norm"})
    assert [c.key for c in curves] == ["a", "b"]
    first, second = curves
    assert (first.color, first.marker, second.color, second.marker) == (PALETTE[0], ASCII_MARKERS[0],
                                                                         PALETTE[3], ASCII_MARKERS[3])
    assert (first.first_step, first.last_step, first.min_positive, first.has_nonpositive_steps) == (0.0, 30.0, 10.0,
                                                                                                    True)
    assert first.marks == marks["a"] and second.marks == []  # b's marks were found in another metric
    assert list(first.eval_steps) == [10.0, 30.0] and second.eval_steps is None
    assert first.smoothed is None and first.segment_starts == [] and second.segment_starts == [(4.0, "reset")]
    steps, values = a.series["loss"].visible()
    cols = first.raw(0.0, 30.0, 8, False)
    expected = minmax_columns(steps, values, 0.0, 30.0, 8, False)
    assert np.array_equal(cols.min, expected.min, equal_nan=True) and np.array_equal(cols.max, expected.max,
                                                                                       equal_nan=True)


def test_column_indexes_are_kept_per_curve_and_catch_up_with_new_points():
    run = make_run("a", loss=(STEPS, [4.0, 3.0, 2.0, 1.0]))
    selection, curves = selection_of([run]), Curves()
    view = ChartView(log_x=False)
    first = curves.prepare([run], selection, view, {}, {})[0]
    run.series["loss"].extend(np.array([40.0, 50.0]), np.array([9.0, 0.5]))
    run.changed()  # stored outside Run.apply: counted by hand (see Run.version)
    second = curves.prepare([run], selection, view, {}, {})[0]
    assert first.raw.__self__ is second.raw.__self__  # the same ColumnIndex, grown
    assert second.raw.__self__.rebuilds == 0 and len(second.raw.__self__) == 6
    cols = second.raw(0.0, 50.0, 5, False)
    assert np.nanmax(cols.max) == 9.0 and np.nanmin(cols.min) == 0.5 and second.last_step == 50.0


def test_smoothed_values_are_cached_until_the_series_grows_or_the_view_changes():
    curves = Curves()
    values = np.array([4.0, 3.0, 2.0, 1.0])
    smoothed = curves.smoothed("a", "loss", values, 0.6, False)
    assert np.allclose(smoothed, ema(values, 0.6, log=False))
    assert curves.smoothed("a", "loss", values, 0.6, False) is smoothed
    assert curves.smoothed("a", "loss", values, 0.9, False) is not smoothed
    assert np.allclose(curves.smoothed("a", "loss", values, 0.6, True), ema(values, 0.6, log=True))
    longer = np.append(values, 0.5)
    again = curves.smoothed("a", "loss", longer, 0.6, False)
    assert len(again) == 5 and np.allclose(again, ema(longer, 0.6, log=False))

    run = make_run("a", loss=(STEPS, list(values)))
    curve = curves.prepare([run], selection_of([run]), ChartView(log_x=False, smoothing=0.6), {}, {})[0]
    cols = curve.smoothed(0.0, 30.0, 4, False)
    assert np.allclose(cols.last, ema(values, 0.6, log=False))


def test_chart_reuses_the_points_of_unchanged_curves_and_matches_build_chart():
    run = make_run("a", loss=(STEPS, [4.0, 3.0, 2.0, 1.0]))
    selection, curves, view = selection_of([run]), Curves(), ChartView(log_x=False)
    prepared = curves.prepare([run], selection, view, {}, {})
    spec = curves.chart(prepared, view, 40, height=10, metric="loss", background=(0, 0, 0))
    again = curves.chart(curves.prepare([run], selection, view, {}, {}), view, 40, height=10, metric="loss",
                         background=(0, 0, 0))
    assert again.traces[0].xs is spec.traces[0].xs  # from the memo
    fresh = build_chart(prepared, view, 40, height=10, metric="loss", background=(0, 0, 0))
    assert list(fresh.traces[0].ys) == list(spec.traces[0].ys) and fresh.title == spec.title == "loss · step"


def test_values_at_the_cursor_are_the_nearest_points():
    steps, values = np.array([10.0, 20.0, 40.0]), np.array([1.0, 2.0, 4.0])
    assert [value_at(steps, values, s) for s in (0.0, 14.0, 16.0, 31.0, 100.0)] == [1.0, 1.0, 2.0, 4.0, 4.0]
    assert value_at(np.array([]), np.array([]), 5.0) is None
    a = make_run("a", loss=(list(steps), list(values)))
    b = make_run("b", accuracy=([1.0], [0.5]))
    selection = selection_of([a, b])
    selection.metric = "loss"
    assert values_at([a, b], selection, 19.0) == {"a": 2.0}


def test_the_legend_lists_shown_runs_with_their_list_numbers_and_last_values():
    a = make_run("a", loss=(STEPS, [4.0, 3.0, 2.0, 1.5]))
    b = make_run("b", loss=(STEPS, [1.0, 1.0, 1.0, 1.0]))
    c = make_run("c", loss=([], []))
    selection = selection_of([a, b, c])
    selection.toggle(["b"], False)
    lines = legend_text([a, b, c], selection, plain=True).splitlines()
    assert lines == [f" 1 {ASCII_MARKERS[0]} run a  last {fmt_value(1.5)} at {fmt_step(30.0)}",
                     f" 3 {ASCII_MARKERS[2]} run c  last - at -"]
    assert legend_text([a], selection, plain=False).startswith(" 1 ■ run a")


def test_a_run_keeps_its_curve_until_its_points_segments_marks_or_the_view_change():
    a = make_run("a", loss=(STEPS, [4.0, 3.0, 2.0, 1.0]))
    b = make_run("b", loss=(STEPS, [5.0, 4.0, 3.0, 2.0]))
    runs = [a, b]
    selection = selection_of(runs)
    curves, view, marks = Curves(), ChartView(), {}
    first = curves.prepare(runs, selection, view, marks, {})
    again = curves.prepare(runs, selection, view, {}, {})  # another empty marks dict: nothing to mark either way
    assert [c is d for c, d in zip(first, again)] == [True, True]
    b.series["loss"].extend(np.array([40.0]), np.array([1.5]))  # b grew
    b.points += 1
    grown = curves.prepare(runs, selection, view, {}, {})
    assert grown[0] is first[0] and grown[1] is not first[1] and grown[1].last_step == 40.0
    a.series["loss"].mark("replaced")  # the next point starts a new segment: nothing to draw yet
    a.changed()
    assert curves.prepare(runs, selection, view, {}, {})[0] is first[0]
    a.series["loss"].extend(np.array([0.0]), np.array([4.0]))
    a.changed()
    marked = curves.prepare(runs, selection, view, {}, {})
    assert marked[0] is not first[0] and marked[0].segment_starts == [(0.0, "replaced")] and marked[1] is grown[1]
    spikes = {"b": [Mark("spike", 40.0, 1.5)]}
    with_marks = curves.prepare(runs, selection, view, spikes, {"b": "loss"})
    assert with_marks[0] is marked[0] and with_marks[1].marks == spikes["b"]
    smoothed = curves.prepare(runs, selection, ChartView(smoothing=0.6), spikes, {"b": "loss"})
    assert all(c.smoothed is not None for c in smoothed)
    selection.metric = "missing"
    assert curves.prepare(runs, selection, ChartView(smoothing=0.6), spikes, {"b": "loss"}) == []


def test_the_metrics_prepare_read_name_the_chart_as_the_shown_runs_common_metric_does():
    from tuiloss.ui.selection import common_metric, metrics_label

    a = make_run("a", loss=(STEPS, [4.0, 3.0, 2.0, 1.0]))
    b = make_run("b", loss=(STEPS, [5.0, 4.0, 3.0, 2.0]))
    c = make_run("c", accuracy=(STEPS, [0.1, 0.2, 0.3, 0.4]))
    selection = selection_of([a, b, c])
    curves = Curves()
    for runs in ([a, b], [a, b, c], [a, b], [c], []):
        for _ in range(2):  # made, then kept
            curves.prepare(runs, selection, ChartView(), {}, {})
            assert metrics_label(curves.metrics) == common_metric(runs), runs


def test_a_run_whose_version_did_not_move_keeps_its_curve_and_one_that_grew_gets_a_new_one():
    a = make_run("a", loss=(STEPS, [4.0, 3.0, 2.0, 1.0]))
    b = make_run("b", loss=(STEPS, [5.0, 4.0, 3.0, 2.0]))
    runs = [a, b]
    selection = selection_of(runs)
    curves, view = Curves(), ChartView()
    first = curves.prepare(runs, selection, view, {}, {})
    version = a.version
    a.label = "renamed"  # a counted field: the curve is checked again and kept (same points, same key)
    assert a.version != version
    b.series["loss"].extend(np.array([40.0]), np.array([1.5]))
    b.changed()
    after = curves.prepare(runs, selection, view, {}, {})
    assert after[0] is first[0] and after[1] is not first[1] and after[1].last_step == 40.0
    fresh = Curves().prepare(runs, selection, view, {}, {})
    assert [(c.key, c.last_step, c.color, c.segment_starts) for c in after] == [
        (c.key, c.last_step, c.color, c.segment_starts) for c in fresh]
    assert curves.prepare(runs, selection, view, {}, {})[1] is after[1]  # nothing moved: kept
