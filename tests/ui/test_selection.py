"""Run selection without a terminal: colours, switches, the filter, numbering, metrics."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest

from tuiloss.core.report import fmt_value
from tuiloss.core.store import Run, Series
from tuiloss.ui.runstate import Activity, list_rows
from tuiloss.ui.selection import (
    ASCII_MARKERS,
    PALETTE,
    Selection,
    common_metric,
    filter_text,
    metric_counts,
    parse_filter,
    rich_color,
)


def make_run(run_id: str, metrics: dict[str, list[float]] | None = None, **kw) -> Run:
    series = {}
    for name, values in (metrics or {"loss": [3.0, 2.0, 1.0]}).items():
        s = Series()
        s.extend(np.arange(1.0, len(values) + 1), np.asarray(values, dtype=float))
        series[name] = s
    return Run(id=run_id, label=kw.pop("label", run_id), source=kw.pop("source", f"/logs/{run_id}.csv"),
               format="csv", series=series, points=sum(len(s) for s in series.values()), **kw)


def selection_of(runs: list[Run], metric: str | None = None) -> Selection:
    selection = Selection(metric)
    for run in runs:
        selection.add(run.id)
    return selection


def test_colours_and_markers_follow_discovery_order_and_wrap_around():
    ids = [f"r{k}" for k in range(len(PALETTE) + 2)]
    selection = Selection()
    assert [selection.add(run_id) for run_id in ids] == [True] * len(ids)
    assert not selection.add("r0")  # known: keeps its colour
    assert [selection.color(run_id) for run_id in ids] == [*PALETTE, PALETTE[0], PALETTE[1]]
    assert selection.color("unknown") == PALETTE[0]
    assert [selection.marker(run_id) for run_id in ids[:3]] == list(ASCII_MARKERS[:3])
    assert selection.marker("unknown") == ASCII_MARKERS[0]
    selection.add("late")  # the marker order catches up with runs found later
    assert selection.marker("late") == ASCII_MARKERS[len(ids) % len(ASCII_MARKERS)]
    assert selection.swatch("r2", plain=False) == "■" and selection.swatch("r2", plain=True) == ASCII_MARKERS[2]
    assert rich_color((1, 20, 255)) == "rgb(1,20,255)"


def test_toggles_switch_runs_and_show_only_keeps_one():
    runs = [make_run(run_id) for run_id in "abc"]
    selection = selection_of(runs)
    assert [r.id for r in selection.shown(runs)] == ["a", "b", "c"]
    selection.toggle(["a", "b"])
    assert [r.id for r in selection.shown(runs)] == ["c"]
    selection.toggle(["a", "c"])
    assert [r.id for r in selection.shown(runs)] == ["a"]
    selection.toggle(["a", "b", "c"], True)
    assert [r.id for r in selection.shown(runs)] == ["a", "b", "c"]
    selection.toggle(["b"], False)
    selection.toggle(["b"], False)  # a value, not a flip
    assert not selection.is_on("b")
    selection.show_only(runs, "b")
    assert [r.id for r in selection.shown(runs)] == ["b"]
    assert selection.is_on("never-added")  # runs not seen yet count as on


def test_the_filter_matches_label_source_and_config_and_keeps_each_runs_number():
    runs = [
        make_run("a", label="Pre-Norm", config={"lr": 0.001}),
        make_run("b", label="Post-Norm", source="/logs/deepnorm/out.txt"),
        make_run("c", label="baseline", config={"lr": 0.1}),
    ]
    assert filter_text(runs[0]) == "Pre-Norm /logs/a.csv lr=0.001"
    selection = selection_of(runs)
    assert [(n, r.id) for n, r in selection.numbered(runs)] == [(1, "a"), (2, "b"), (3, "c")]
    selection.filter = parse_filter("  DEEPNORM ")
    assert selection.filter.pattern == "DEEPNORM"
    assert [(n, r.id) for n, r in selection.numbered(runs)] == [(2, "b")]  # key 2 is still run b
    assert selection.numbered_run(runs, 2) is runs[1] and selection.numbered_run(runs, 1) is None
    selection.filter = parse_filter(r"lr=0\.1\b")
    assert [r.id for r in selection.listed(runs)] == ["c"]
    selection.toggle(["c"], False)
    assert selection.listed(runs) == [runs[2]] and selection.shown(runs) == []
    assert parse_filter("   ") is None
    with pytest.raises(re.error):
        parse_filter("(unclosed")


def test_metric_of_prefers_the_chosen_metric_and_common_metric_names_the_chart():
    loss = make_run("a", {"loss": [1.0], "grad_norm": [2.0]})
    other = make_run("b", {"train/loss": [1.0]})
    selection = selection_of([loss, other])
    assert selection.metric_of(loss) == "loss" and selection.metric_of(other) == "train/loss"
    selection.metric = "grad_norm"
    assert selection.metric_of(loss) == "grad_norm" and selection.metric_of(other) is None
    assert common_metric([loss]) == "loss"
    assert common_metric([loss, other]) == "loss / train/loss"
    assert common_metric([]) is None
    assert metric_counts([loss, other, make_run("c", {"loss": [1.0]})]) == [("loss", 2), ("grad_norm", 1),
                                                                            ("train/loss", 1)]
    # A text log's checkpoint saves are events, not a metric to pick.
    assert metric_counts([make_run("d", {"loss": [1.0], "_checkpoint": [1.0]})]) == [("loss", 1)]


def test_list_rows_number_colour_and_value_each_listed_run():
    runs = [make_run(f"r{k}", {"loss": [5.0, float(k)]}) for k in range(12)]
    runs[1].deleted = True
    selection = selection_of(runs)
    selection.toggle(["r2"], False)
    rows = list_rows(runs, selection, plain=False, at_cursor=None, findings={"r3": 2}, stalled={"r3", "r1"},
                     new={"r3"}, activity={"r0": Activity(last=100.0)}, now=110.0)
    assert [row.number for row in rows] == [*"1234567890", "", ""]
    assert [row.value for row in rows[:3]] == [fmt_value(0.0), fmt_value(1.0), fmt_value(2.0)]
    assert rows[0].color == rich_color(PALETTE[0]) and rows[0].swatch == "■"
    assert [row.state for row in rows[:4]] == ["running", "deleted", "stopped", "stalled"]
    assert not rows[2].visible and rows[3].visible
    assert (rows[3].anomalies, rows[3].new_anomaly, rows[0].anomalies, rows[0].new_anomaly) == (2, True, 0, False)
    at_cursor = {"r0": 4.5, "r1": None}
    rows = list_rows(runs, selection, plain=True, at_cursor=at_cursor, findings={}, stalled=(), new=(),
                     activity={}, now=0.0)
    assert [row.value for row in rows[:3]] == [fmt_value(4.5), "-", ""]
    assert [row.swatch for row in rows[:2]] == list(ASCII_MARKERS[:2])
    selection.metric = "missing"
    assert list_rows(runs[:1], selection, plain=False, at_cursor=None, findings={}, stalled=(), new=(),
                     activity={}, now=0.0)[0].value == "-"


def test_selection_curves_and_rows_import_no_ui_framework():
    code = ("import sys\nimport tuiloss.ui.selection, tuiloss.ui.curves, tuiloss.ui.runstate, tuiloss.ui.chartdata\n"
            "print([m for m in ('textual', 'rich', 'plotext', 'watchdog') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]"
