"""The typed report: built straight from the analysis, JSON only at the edge."""

import json
import math

import numpy as np
import pytest

from tuiloss.core.report import Report, build_report, json_number, render_text, report_json
from tuiloss.core.store import Run, Series, Store


def make_run(run_id: str, values: np.ndarray, **config) -> Run:
    run = Run(id=run_id, label=run_id.upper(), source=f"{run_id}.csv", format="csv", config=dict(config))
    for name, vals in (("loss", values), ("lr", np.full(len(values), 3e-4))):
        series = Series()
        series.extend(np.arange(1, len(vals) + 1, dtype=float), np.asarray(vals, dtype=float))
        run.series[name] = series
    return run


def make_store(*runs: Run) -> Store:
    store = Store()
    for run in runs:
        store.add(run)
    return store


def test_the_report_is_typed_and_frozen():
    report = build_report(make_store(make_run("a", np.linspace(2, 1, 500))), root="logs")
    assert isinstance(report, Report) and report.root == "logs"
    [run] = report.runs
    assert run.primary_metric == "loss" and list(run.metrics) == ["loss", "lr"]  # the primary first
    assert run.primary.analyzed and not run.metrics["lr"].analyzed
    assert run.primary.final == 1.0 and run.primary.points == 500  # the last value, every point
    assert run.metrics["lr"].anomalies == () and run.metrics["lr"].convergence_step is None
    with pytest.raises(AttributeError):
        run.label = "b"  # frozen
    with pytest.raises(TypeError):
        run.metrics["x"] = run.primary  # read-only mapping


def test_runs_are_compared_on_the_median_of_their_last_values():
    a = make_run("a", np.linspace(2, 1, 500), lr=1)
    b = make_run("b", np.linspace(3, 1.5, 500), lr=2)
    report = build_report(make_store(a, b))
    [lowest] = [o for o in report.observations if o.kind == "lowest_final"]
    assert lowest.runs[0] == "a"
    assert lowest.fields["value"] == pytest.approx(1 + 2 / 499)  # median of the last 1% (5 points)


def test_json_is_made_at_the_edge_with_numbers_json_can_hold():
    values = np.linspace(2, 1, 500)
    values[-1] = math.nan
    data = report_json(build_report(make_store(make_run("a", values))), ignored=[("a.bin", "binary")])
    json.dumps(data, allow_nan=False)
    metric = data["runs"][0]["metrics"]["loss"]
    # "final" is the one final of findings and comparisons (median of the last 1%); "last" the last value
    assert metric["last"] is None and metric["final"] == pytest.approx(1 + 3 / 499)  # 5 finite points before it
    assert metric["first_step"] == 1 and isinstance(metric["first_step"], int)
    assert data["ignored"] == [{"path": "a.bin", "reason": "binary"}]
    assert list(data) == ["version", "root", "runs", "observations", "ignored"]
    assert "ignored" not in report_json(build_report(make_store()))
    assert json_number(2.0) == 2.0 and isinstance(json_number(2.0), float)
    assert json_number(2.0, whole=True) == 2 and isinstance(json_number(2.0, whole=True), int)
    assert json_number(math.inf) is None and json_number(None) is None


def test_text_shows_a_nan_final_as_nan():
    values = np.linspace(2, 1, 500)
    values[-1] = math.nan
    text = render_text(build_report(make_store(make_run("a", values))))
    row = next(line for line in text.splitlines() if line.startswith("1 "))
    assert " NaN " in row  # the last value, in the table
    assert "; final 1.01" in text  # the final level of the findings reads past one NaN
