"""Runs split out of one log (a restart: ``training.log #2``) are runs of their own in the viewer,
as in the report: own colour, number, row, curve and legend entry, live too; and ``--step``."""

from __future__ import annotations

import numpy as np

from tuiloss.core.engine import load
from tuiloss.core.report import build_report
from tuiloss.ui.app import make_app

from ui_helpers import settle, wait_for, wait_loaded


def _lines(n: int, first: float, last: float) -> str:
    """A fresh training: ``step N | loss X`` from step 1, falling from ``first`` to ``last``."""
    values = np.geomspace(first, last, n)
    return "".join(f"step {k} | loss: {v:.4f}\n" for k, v in enumerate(values, 1))


def _rows(app):
    return {row.key: row for row in app.run_list.rows_shown}


async def test_a_restart_in_one_log_is_its_own_run_in_the_list_chart_and_legend(tmp_path, config_for):
    log = tmp_path / "exp" / "training.log"
    log.parent.mkdir()
    log.write_text(_lines(80, 2.0, 0.4) + _lines(60, 2.1, 0.9))
    reported = build_report(load([str(tmp_path)])[0])
    app = make_app(config_for(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        runs = list(app.store)
        assert [(r.id, r.label) for r in runs] == [(r.id, r.label) for r in reported.runs]
        first, second = runs
        assert second.id == f"{first.id}#2" and second.label == f"{first.label} #2"
        assert len(first.series["loss"]) == 80 and len(second.series["loss"]) == 60
        rows = _rows(app)
        assert [rows[r.id].number for r in runs] == ["1", "2"]
        assert rows[first.id].color != rows[second.id].color
        assert rows[first.id].value == "0.400" and rows[second.id].value == "0.900"
        assert rows[first.id].state == "stopped"  # training restarted after it
        assert {curve.key for curve in app.curves.prepare(runs, app.selection, app.view, {}, {})} == {first.id, second.id}
        legend = app._legend_text()
        assert f"{first.label} #2" in legend
        assert [r.id for r in app.report.runs] == [first.id, second.id]
        await pilot.press("2")  # the number key switches the second run alone
        await settle(pilot, app)
        assert not app.selection.is_on(second.id) and app.selection.is_on(first.id)


async def test_a_restart_appended_while_watched_becomes_a_new_row(tmp_path, config_for):
    log = tmp_path / "exp" / "training.log"
    log.parent.mkdir()
    log.write_text(_lines(80, 2.0, 0.4))
    app = make_app(config_for(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        (only,) = list(app.store)
        with open(log, "a") as handle:
            handle.write(_lines(40, 2.1, 1.0))
        await wait_for(pilot, lambda: len(app.store) == 2 and app.store.points == 120, 10, "the restart")
        await settle(pilot, app)
        first, second = list(app.store)
        assert first.id == only.id and len(first.series["loss"]) == 80 and len(second.series["loss"]) == 40
        rows = _rows(app)
        assert set(rows) == {first.id, second.id} and rows[second.id].state == "running"
        assert app.selection.is_on(second.id) and rows[second.id].color != rows[first.id].color
        with open(log, "a") as handle:  # the new run goes on growing
            handle.write("step 41 | loss: 0.9500\n")
        await wait_for(pilot, lambda: app.store.points == 121, 10, "the next point")
        await settle(pilot, app)
        await wait_for(pilot, lambda: [len(r.series["loss"]) for r in app.store] == [80, 41], 5, "the second run")
        await wait_for(pilot, lambda: app.report is not None and len(app.report.runs) == 2
                       and app.report.runs[1].primary.points == 41, 10, "the panel's report")


async def test_watch_step_re_keys_the_curves_on_the_named_metric(tmp_path, config_for):
    log = tmp_path / "exp" / "metrics.jsonl"
    log.parent.mkdir()
    log.write_text("".join(f'{{"step": {k}, "samples": {k * 32}, "loss": {2.0 / k:.4f}}}\n' for k in range(1, 41)))
    app = make_app(config_for(tmp_path, step="samples"))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        (run,) = list(app.store)
        steps, _ = run.series["loss"].visible()
        assert steps[0] == 32 and steps[-1] == 40 * 32 and "samples" not in run.series
        assert app.report.runs[0].primary.last_step == 1280
        assert app.chart.spec.newest_step == 1280  # the curves end at 40 x 32 samples


def test_frozen_copies_of_a_log_s_runs_never_read_the_live_log():
    # the panel analyses snapshots on its own thread while the UI thread appends
    from tuiloss.core.model import Batch
    from tuiloss.core.store import Run
    from tuiloss.ui.snapshot import snapshot_run, snapshot_store

    log = Run(id="/x/training.log", label="training.log", source="training.log", format="text")
    batch = Batch()
    batch.add("loss", np.arange(1.0, 61.0), np.geomspace(2.0, 0.4, 60))
    log.apply(batch)
    (alone,) = log.split()
    frozen = snapshot_run(alone)
    assert frozen.split() == [frozen] and frozen.split()[0] is not log
    batch = Batch()
    batch.add("loss", np.arange(1.0, 21.0), np.geomspace(2.1, 1.0, 20))
    log.apply(batch)
    first, second = log.split()
    frozen = [snapshot_run(run) for run in (first, second)]
    assert [run.restarted_after for run in frozen] == [True, False]
    assert [run.split() for run in frozen] == [[frozen[0]], [frozen[1]]]
    report = build_report(snapshot_store(frozen))
    assert [r.id for r in report.runs] == [log.id, f"{log.id}#2"]
    assert [r.primary.points for r in report.runs] == [60, 20]


def test_the_panel_says_what_the_report_says_of_the_step_axis():
    from tuiloss.core.model import Batch
    from tuiloss.core.store import Run, Store
    from tuiloss.ui.insights import render_insights

    log = Run(id="/x/yolo", label="yolo", source="yolo", format="tfevents")
    batch = Batch()
    batch.add("train/box_loss", np.repeat(np.arange(1.0, 21.0), 10), np.repeat(np.geomspace(3, 1, 20), 10))
    batch.meta.update(planned_steps=100.0, repeated_steps=True)
    log.apply(batch)
    store = Store()
    store.add(log)
    report = build_report(store)
    for ascii, mark in ((False, "·"), (True, ".")):
        text = render_insights(report, colors={}, numbers={}, swatches={}, ascii=ascii, width=200).plain
        assert f"{mark} at step 20 of 100 planned (20%)" in text
        assert f"{mark} 10 values per step (200 points on 20 steps), analysed as their median" in text
    assert render_insights(report, colors={}, numbers={}, swatches={log.id: "*"}, ascii=True, width=200).plain.isascii()
