import numpy as np

from tuiloss.core.analysis import Anomaly, Observation, Plateau, SeriesAnalysis
from tuiloss.core.report import MetricReport, Report, RunReport, SkipCounts
from tuiloss.core.store import Run, Series
from tuiloss.ui.export import choose_folder, inside, write_export
from tuiloss.ui.findings import anomaly_key
from tuiloss.ui.insights import render_insights
from tuiloss.core.formats.endings import Ending
from tuiloss.ui.runstate import Activity, row_state
from tuiloss.ui.snapshot import snapshot_run, snapshot_series
from tuiloss.ui.widgets.status_bar import Status, age, status_text


def test_run_states():
    def state(activity, now, **kw):
        run = Run(id="r", label="r", source="r", format="text", series={"loss": series_of(10)}, points=10, **kw)
        return row_state(run, activity, now).state

    assert state(Activity(100.0), 100.0, deleted=True) == "deleted"
    assert state(Activity(100.0), 130.0) == "running"
    assert state(Activity(100.0), 100.0 + 600) == "running"  # how often it writes is not known yet
    assert state(Activity(100.0), 100.0 + 7200) == "stopped"
    slow = Activity()
    for t in (0, 600, 1200, 1800):
        slow.grew(float(t))
    assert slow.interval == 600
    assert state(slow, 1800 + 3000) == "running"  # within 10 usual intervals
    assert state(slow, 1800 + 6001) == "stalled"  # silent for 10 of them
    assert state(slow, 1800 + 60_001) == "stopped"
    # what the log says wins over its age
    assert state(slow, 1800 + 6001, meta={"planned_steps": 9.0}) == "finished"
    assert state(Activity(100.0), 100.0, meta={"planned_steps": 50.0}) == "running"
    killed = Ending("killed", "KeyboardInterrupt", "KeyboardInterrupt")
    assert state(Activity(100.0), 100.0, meta={"end": killed}) == "killed"
    empty = Run(id="e", label="e", source="e", format="text")
    assert row_state(empty, None, 0.0).state == "waiting"


def series_of(n):
    series = Series()
    series.extend(np.arange(float(n)), np.ones(n))
    return series


def test_snapshots_do_not_see_later_appends():
    series = Series()
    series.extend(np.arange(10.0), np.arange(10.0))
    frozen = snapshot_series(series)
    series.extend(np.arange(10.0, 10_000.0), np.arange(10.0, 10_000.0))  # reallocates
    series.extend(np.array([5.0]), np.array([99.0]))  # a reset: new segment
    steps, values = frozen.visible()
    assert len(frozen) == 10 and list(steps) == list(range(10)) and len(frozen.segments) == 1
    assert len(series.segments) == 2
    run = Run(id="r", label="r", source="r", format="text", series={"loss": series})
    copy = snapshot_run(run)
    assert copy.series["loss"] is not series and len(copy.series["loss"]) == len(series)


def test_export_never_writes_inside_the_watched_tree(tmp_path):
    logs = tmp_path / "logs"
    (logs / "run").mkdir(parents=True)
    assert inside(str(logs / "run"), [str(logs)])
    assert not inside(str(tmp_path), [str(logs)])
    folder, note = choose_folder(None, [str(logs)], cwd=str(logs / "run"))
    assert not inside(folder, [str(logs)]) and "inside the watched folder" in note
    folder, note = choose_folder(str(tmp_path / "out"), [str(logs)])
    assert folder == str(tmp_path / "out") and not note
    report, chart = write_export(folder, "20330518-000000", "# r\n", "chart")
    assert open(report).read() == "# r\n" and open(chart).read() == "chart\n"
    again = write_export(folder, "20330518-000000", "# r\n", "chart")
    assert again[0] != report


def test_status_line():
    text = status_text(Status(runs=4, shown=4, points=4000, files=4, mode="polling", reason="nfs4 file system",
                              since_last=3, skipped=12, paused=True)).plain
    assert "PAUSED" in text and "4 runs" in text and "4,000 points" in text and "4 files" in text
    assert "polling (nfs4 file system)" in text and "3s ago" in text and "12 skipped" in text
    assert age(None) == "no points yet" and age(7200) == "2.0h ago"


def _report(label="[bold]x\x1b[31m", message="spiked to 1.40 at 25.0K"):
    anomaly = Anomaly("spike", 25000, 30000, 1.4, 0.2, message)
    plateau = Plateau(60000, 100000, 0.23, 0.22, 0.24, 0.005)
    analysis = SeriesAnalysis(10, None, None, 0.2, 0.19, None, 18000, (anomaly,), (plateau,))
    metric = MetricReport("loss", 10, None, None, None, 0.2, 0.19, None, analysis)
    run = RunReport("r1", label, "", "", {}, "loss", False, SkipCounts(0, {}, 0), (), (), {"loss": metric})
    return Report("0", None, (run,), (Observation("fastest_convergence", ("r1",), "A converged fastest"),))


def test_insights_text_shows_the_findings_and_is_safe():
    report = _report()
    text = render_insights(report, colors={"r1": "red"}, numbers={"r1": "1"}, swatches={"r1": "■"},
                           new={anomaly_key("r1", report.runs[0].primary.anomalies[0])}, width=80)
    plain = text.plain
    assert "▲ NEW spiked to 1.40 at 25.0K" in plain
    assert "plateau 60.0K-100.0K at 0.230 (0.220-0.240)" in plain
    assert "converged at 18.0K; final 0.200" in plain
    assert "A converged fastest" in plain
    assert "[bold]x" in plain and "\x1b" not in plain
    assert any("reverse" in str(span.style) for span in text.spans)  # the new anomaly is highlighted


def test_insights_wrap_with_a_hanging_indent():
    report = _report(label="Pre-Norm | Attn. Relax | Gradient Clip=1", message="word " * 30)
    text = render_insights(report, colors={}, numbers={"r1": "2"}, swatches={"r1": "■"}, width=30)
    lines = text.plain.splitlines()
    assert all(len(line) <= 30 for line in lines)
    spike = [i for i, line in enumerate(lines) if line.startswith("  ▲")][0]
    assert lines[spike + 1].startswith("    word")
