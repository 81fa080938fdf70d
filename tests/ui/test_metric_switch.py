"""``m`` switches everything: the panel's findings, the chart's marks and "Across runs" follow the
picked metric, and a run without it says so instead of showing its loss findings."""

from __future__ import annotations

import json

import numpy as np

from tuiloss.core.store import Run, Series, Store
from tuiloss.ui.findings import Findings, marks
from tuiloss.ui.insights import metric_report, render_insights
from tuiloss.ui.screens import MetricScreen

from ui_helpers import settle, wait_for, wait_loaded


def curve(n: int, rate: float, seed: int, *, every: int = 10, spike: int | None = None):
    """A loss-like decay to 0.2 with a little noise, optionally one 6x spike at point ``spike``."""
    rng = np.random.default_rng(seed)
    steps = np.arange(1, n + 1, dtype=float) * every
    values = 0.2 + 2.0 * np.exp(-steps / rate) + rng.normal(0, 0.002, n)
    if spike is not None:
        values[spike] *= 6
    return steps, values


def make_run(run_id: str, **metrics) -> Run:
    # one experiment family: configs sharing their keys make the runs comparable
    run = Run(id=run_id, label=run_id.upper(), source=f"{run_id}/metrics.jsonl", format="jsonl",
              config={"lr": 0.001 * len(run_id), "model": "tiny"})
    for name, (steps, values) in metrics.items():
        run.series[name] = Series()
        run.series[name].extend(steps, values)
    return run


def three_runs() -> Store:
    """a: loss with a spike, a clean val_loss; b: loss only, spiked; c: loss and a spiked val_loss."""
    store = Store()
    store.add(make_run("a", loss=curve(600, 400, 1, spike=300), val_loss=curve(60, 400, 2, every=100)))
    store.add(make_run("b", loss=curve(600, 900, 3, spike=400)))
    store.add(make_run("c", loss=curve(600, 300, 4), val_loss=curve(60, 300, 5, every=100, spike=40)))
    return store


def kinds(entry) -> list[str]:
    return [a.kind for a in entry.primary.analysis.anomalies] if entry.primary is not None else []


def test_a_picked_metric_is_analysed_in_every_run_that_has_it_and_the_others_have_none():
    store = three_runs()
    default = metric_report(store, None, None)
    assert [entry.primary_metric for entry in default.runs] == ["loss", "loss", "loss"]
    assert "spike" in kinds(default.runs[1])  # b's loss spike, shown by default

    picked = metric_report(store, None, "val_loss")
    a, b, c = picked.runs
    assert (a.primary_metric, b.primary_metric, c.primary_metric) == ("val_loss", None, "val_loss")
    assert b.label == "B" and not b.metrics and kinds(b) == []  # not its loss findings
    assert "spike" in kinds(c) and "spike" not in kinds(a)  # the findings of val_loss itself
    spike = next(x for x in c.primary.analysis.anomalies if x.kind == "spike")
    assert spike.step == 4100.0  # the 41st point of c's val_loss, not a point of its loss

    # the chart's marks follow: c's val_loss spike, nothing on b
    chart_marks = marks(picked)
    assert "b" not in chart_marks
    assert [m.step for m in chart_marks["c"] if m.kind == "spike"] == [4100.0]


def test_across_runs_compares_only_the_runs_that_have_the_picked_metric():
    store = three_runs()
    default = metric_report(store, None, None)
    assert any("B" in obs.message for obs in default.observations)  # b's loss is compared by default
    picked = metric_report(store, None, "val_loss")
    assert picked.observations  # a and c are compared in val_loss
    assert not any("B" in obs.message for obs in picked.observations)
    assert all(obs.runs and "b" not in obs.runs for obs in picked.observations)


def test_the_panel_says_which_runs_lack_the_metric():
    store = three_runs()
    picked = metric_report(store, None, "val_loss")
    ids = {"a": "1", "b": "2", "c": "3"}
    text = render_insights(picked, colors={}, numbers=ids, swatches={}, width=60, metric="val_loss").plain
    block_b = text.split("2 ■ B")[1].split("3 ■ C")[0]
    assert "no val_loss in this run" in block_b
    assert "spiked" not in block_b  # b's loss spike is not shown as a finding of val_loss
    assert "Across runs, in val_loss" in text
    default = render_insights(metric_report(store, None, None), colors={}, numbers=ids, swatches={}, width=60)
    assert "no " not in default.plain.split("Across runs")[0] and "Across runs\n" in default.plain


def test_a_switch_is_history_not_news():
    store = three_runs()
    findings = Findings()
    findings.initial_runs.update({"a", "b", "c"})
    findings.baseline_generation = 1
    assert findings.take(metric_report(store, None, None), 1) == []
    findings.restart(2)
    # the val_loss spike of c was in the logs before: switching to it announces nothing
    assert findings.take(metric_report(store, None, "val_loss"), 2) == []
    assert not findings.new


def write_runs(root) -> None:
    """Two runs on disk: one logs loss and val_loss, the other loss only (spiked)."""
    for name, (loss, val) in {"with_eval": (curve(600, 400, 1), curve(60, 400, 2, every=100, spike=40)),
                              "no_eval": (curve(600, 900, 3, spike=400), None)}.items():
        folder = root / name
        folder.mkdir()
        lines = [{"step": float(s), "loss": float(v)} for s, v in zip(*loss)]
        if val is not None:
            lines += [{"step": float(s), "val_loss": float(v)} for s, v in zip(*val)]
        lines.sort(key=lambda line: line["step"])
        (folder / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))


async def test_m_switches_the_panel_the_marks_and_the_list(tmp_path, config_for):
    from tuiloss.ui.app import make_app

    write_runs(tmp_path)
    app = make_app(config_for(tmp_path))
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_loaded(pilot, app)
        await wait_for(pilot, lambda: app.report is not None and app.settled(), what="the first analysis")
        assert "spiked" in app.insights_panel.text.plain  # no_eval's loss spike
        await pilot.press("m")
        assert isinstance(app.screen, MetricScreen)
        names = [name for name, _ in app.screen.metrics]
        for _ in range(names.index("val_loss") + 1):
            await pilot.press("down")
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.report is not None and app.settled(), what="the val_loss analysis")
        await settle(pilot, app)
        panel = app.insights_panel.text.plain
        assert "no val_loss in this run" in panel
        no_eval = panel.split("no_eval")[1].split("with_eval")[0]
        assert "spiked" not in no_eval  # its loss spike is not shown under val_loss
        assert "spiked" in panel.split("with_eval")[1]  # the val_loss spike
        assert app.chart.spec.title.startswith("val_loss")
        spec = app.chart.spec  # the marks drawn: only the val_loss spike, at its step
        at = [10 ** label.x if spec.x_log else label.x for label in spec.labels if label.text.startswith("▲")]
        assert len(at) == 1 and abs(at[0] - 4100.0) < 0.01 * 4100.0
        rows = {row.label: row for row in app.run_list.rows_shown}
        assert rows["no_eval"].value == "-"
        assert app.findings.new == set()  # history, not news: no toast
        await pilot.press("m", "home", "enter")
        await wait_for(pilot, lambda: app.report is not None and "no val_loss" not in app.insights_panel.text.plain,
                       what="back to each run's primary metric")
