"""Live behaviour: appends, new runs and deleted logs reach the screen while watching."""

from __future__ import annotations

import math
import os
import time

from tuiloss.ui.app import make_app
from tuiloss.ui.chartdata import FOLLOW_GRID

from ui_helpers import settle, wait_for, wait_loaded


def jsonl_run(app):
    return next(run for run in app.store if run.format == "jsonl")


async def test_an_appended_line_reaches_the_chart_list_and_panel(sample_logs, config_for):
    app = make_app(config_for(sample_logs))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        run = jsonl_run(app)
        before = len(run.series["loss"])
        draws = app.chart.draws
        with open(sample_logs / "prenorm_clip1" / "metrics.jsonl", "a") as handle:
            handle.write('{"step": 100100, "loss": 0.1234}\n')
        # How fast is the benchmarks' latency row; here only that it arrives.
        await wait_for(pilot, lambda: len(run.series["loss"]) == before + 1 and app.chart.draws > draws,
                       15, "the point on the chart")
        assert app.chart.spec.newest_step == 100_100
        lo, hi = app.chart.spec.x_lim  # followed, the axis ends a step of the follow grid ahead at most
        assert math.log10(100_100) <= hi < math.log10(100_100) + (hi - lo) / FOLLOW_GRID
        await settle(pilot, app)
        row = next(r for r in app.run_list.rows_shown if r.key == run.id)
        assert row.value == "0.123" and row.state == "running"
        # "final" is the robust final level (the median of the last 1%); the new point is the new min
        await wait_for(pilot, lambda: "min 0.123" in app.insights_panel.text.plain, 5, "the panel")
        assert app.status_bar.status.since_last is not None and app.status_bar.status.since_last < 5


async def test_new_runs_appear_and_deleted_ones_stay_marked(sample_logs, config_for):
    app = make_app(config_for(sample_logs))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        before = app.store.points
        folder = sample_logs / "prenorm_new"
        folder.mkdir()
        with open(folder / "metrics.jsonl", "w") as handle:
            for step in range(100, 1100, 100):
                handle.write(f'{{"step": {step}, "loss": {1.0 / step ** 0.2:.4f}}}\n')

        def new_run():
            return next((run for run in app.store if "prenorm_new" in run.id), None)

        # the run is listed when its file appears, before its points are read: wait for all ten
        await wait_for(pilot, lambda: new_run() is not None and app.store.points == before + 10, 5, "the new run")
        new = new_run()
        assert len(app.store) == 8 and len(new.series["loss"]) == 10 and app.selection.switched_on[new.id]
        await settle(pilot, app)
        assert len(app.run_list.rows_shown) == 8
        os.remove(sample_logs / "postnorm_deepnorm" / "train.log")
        deleted = next(run for run in app.store if run.id.endswith(os.path.join("postnorm_deepnorm", "train.log")))
        await wait_for(pilot, lambda: deleted.deleted, 5, "the deletion")
        await settle(pilot, app)
        row = next(r for r in app.run_list.rows_shown if r.key == deleted.id)
        assert row.state == "deleted" and row.value != "-"  # its points are kept


async def test_quit_during_a_live_stream_does_not_hang(sample_logs, config_for):
    app = make_app(config_for(sample_logs))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        with open(sample_logs / "prenorm_clip1" / "metrics.jsonl", "a") as handle:
            for step in range(100_100, 110_000, 100):
                handle.write(f'{{"step": {step}, "loss": 0.2}}\n')
        began = time.monotonic()
        await pilot.press("q")
    assert time.monotonic() - began < 5


async def test_a_new_anomaly_is_highlighted_notified_and_rung(sample_logs, config_for):
    app = make_app(config_for(sample_logs, bell=True))
    rings = []
    app.bell = lambda: rings.append(1)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        assert not app.findings.new and not list(app._notifications)  # history is not news
        with open(sample_logs / "prenorm_clip1" / "metrics.jsonl", "a") as handle:
            handle.write('{"step": 100100, "loss": 1.5}\n')
        await wait_for(pilot, lambda: app.findings.new, 10, "the new spike")
        await settle(pilot, app)
        notes = [n.message for n in app._notifications]
        assert any("Pre-Norm | Gradient Clip=1 | Run 2" in m and "1.50" in m for m in notes), notes
        assert rings == [1]
        assert "NEW" in app.insights_panel.text.plain
        row = next(r for r in app.run_list.rows_shown if r.label == "Pre-Norm | Gradient Clip=1 | Run 2")
        assert row.new_anomaly
        assert any(label.text.endswith("1.50") for label in app.chart.spec.labels)
        await pilot.press("escape")  # acknowledged
        assert not app.findings.new


async def test_hostile_labels_and_metric_names_are_shown_as_plain_text(tmp_path, config_for):
    import json

    run = tmp_path / "logs" / "evil"
    run.mkdir(parents=True)
    name = "\x1b]0;owned\x07[red]Run[/red] \x1b[2J\u202eevil\x9b1m"
    (run / "config.json").write_text(json.dumps({"run_name": name, "lr": "[b]x\x1b[5m"}))
    (run / "metrics.jsonl").write_text("".join(
        json.dumps({"step": s, "loss": 1.0 / s, "\x1b[31mweird[/]": 1.0}) + "\n" for s in range(1, 50)))
    app = make_app(config_for(tmp_path / "logs"))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        label = app.store.runs[next(iter(app.store.runs))].label
        assert "\x1b" in label  # the store keeps data as read ...
        shown = [app.run_list.render_line(1).text]  # the first run's row as drawn
        shown.append(app.insights_panel.text.plain)
        await pilot.press("m")
        await settle(pilot, app)
        shown.append(" ".join(str(option.prompt) for option in app.screen.query_one("OptionList")._options))
        for text in shown:  # ... the screen shows it made safe
            assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text and "\x9b" not in text
        assert "[red]Run[/red]" in shown[0]


async def test_updates_while_a_modal_screen_is_open(sample_logs, config_for):
    app = make_app(config_for(sample_logs))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("question_mark")
        run = jsonl_run(app)
        before = len(run.series["loss"])
        with open(sample_logs / "prenorm_clip1" / "metrics.jsonl", "a") as handle:
            handle.write('{"step": 100100, "loss": 0.2}\n')
        await wait_for(pilot, lambda: len(run.series["loss"]) == before + 1, 5, "the point")
        analysed = app.insights.generation
        await wait_for(pilot, lambda: app.insights.generation > analysed and app.settled(), 10,
                       "a redraw and an analysis behind the help")
        await pilot.press("escape", "m")
        await settle(pilot, app)
        await pilot.press("escape")
        assert app.chart.draws > 0 and app.is_running


async def test_a_run_that_falls_silent_is_stalled(sample_logs, config_for):
    now = [time.time()]
    app = make_app(config_for(sample_logs), clock=lambda: now[0])
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        run = jsonl_run(app)
        path = sample_logs / "prenorm_clip1" / "metrics.jsonl"
        for k in range(4):  # a point every 5 s of the (fake) clock
            before = len(run.series["loss"])
            with open(path, "a") as handle:
                handle.write(f'{{"step": {100_100 + 100 * k}, "loss": 0.2}}\n')
            await wait_for(pilot, lambda: len(run.series["loss"]) == before + 1, 5, "the point")
            now[0] += 5
        now[0] += 600  # silent for 10 minutes
        await wait_for(pilot, lambda: run.id in app.findings.stalls, 5, "the stall")
        await settle(pilot, app)
        row = next(r for r in app.run_list.rows_shown if r.key == run.id)
        assert row.state == "stalled"
        assert "no new point for" in app.insights_panel.text.plain
        assert any("stall" in n.title for n in app._notifications)


async def test_nan_and_step_reset_are_marked_on_the_curve(tmp_path, config_for, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    logs = tmp_path / "logs"
    logs.mkdir()
    lines = [f'{{"step": {s}, "loss": {2.0 / s ** 0.3:.4f}}}' for s in range(1, 301)]
    lines[150] = '{"step": 151, "loss": NaN}'
    lines += [f'{{"step": {s}, "loss": {2.0 / s ** 0.3:.4f}}}' for s in range(200, 400)]  # resumed run
    (logs / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    app = make_app(config_for(logs))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        assert app.view.no_color and app.run_list.rows_shown[0].swatch == "*"
        texts = [label.text for label in app.chart.spec.labels]
        assert "X" in texts  # NaN, at the top (ascii glyphs without colour)
        assert "R" in texts and app.chart.spec.vlines  # the reset at step 200
        assert "NaN" in app.chart.spec.title
        plain = app.insights_panel.text.plain
        assert "new segment at 200: reset" in plain


async def test_live_findings_equal_the_batch_report(sample_logs, config_for):
    from tuiloss.core.engine import load
    from tuiloss.core.report import build_report, report_json

    app = make_app(config_for(sample_logs))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        path = sample_logs / "postnorm_deepnorm" / "train.log"
        with open(path, "a") as handle:
            for step in range(100_100, 102_000, 100):
                handle.write(f"iter {step}: loss 0.2050, time 210.00ms, mfu 31.00%\n")
        run = next(r for r in app.store if "postnorm" in r.id)
        await wait_for(pilot, lambda: len(run.series["loss"]) == 1019, 5, "the points")
        await wait_for(pilot, lambda: next(r for r in app.report.runs if r.id == run.id)
                       .metrics["loss"].last_step == 101_900, 10, "the analysis")
        live = report_json(app.report)
        kept = app.insights.worker.analyzers._kept
        assert (run.id, "loss") in kept and kept[(run.id, "loss")].rebuilds == 0  # extended, not redone
    store, _, _ = load([str(sample_logs)])
    batch = report_json(build_report(store, root=str(sample_logs)))

    def findings(report):
        out = {}
        for entry in report["runs"]:
            facts = entry["metrics"][entry["primary_metric"]]
            out[entry["id"]] = (facts["anomalies"], facts["plateaus"], facts["convergence_step"], facts["final"])
        return out

    assert findings(live) == findings(batch)
    assert live["observations"] == batch["observations"]


async def test_a_run_folder_renamed_while_watched_keeps_its_row_number_and_colour(sample_logs, config_for):
    app = make_app(config_for(sample_logs))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        run = jsonl_run(app)
        points = run.points
        before = next(r for r in app.run_list.rows_shown if r.key == run.id)
        os.rename(sample_logs / "prenorm_clip1", sample_logs / "prenorm_clip1_resumed")
        with open(sample_logs / "prenorm_clip1_resumed" / "metrics.jsonl", "a") as handle:
            handle.write('{"step": 100100, "loss": 0.1234}\n')
        await wait_for(pilot, lambda: run.points == points + 1 and "resumed" in run.source, 10, "the moved run")
        await settle(pilot, app)
        assert len(app.store) == 7 and not run.deleted
        after = next(r for r in app.run_list.rows_shown if r.key == run.id)
        assert (after.number, after.color, after.state) == (before.number, before.color, "running")
        assert after.value == "0.123"
