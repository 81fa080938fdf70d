"""What is new among the findings, live stalls and chart marks, without a terminal."""

import math
import subprocess
import sys

import numpy as np

from tuiloss.core.analysis import Anomaly, SeriesAnalysis
from tuiloss.core.report import MetricReport, Report, RunReport, SkipCounts
from tuiloss.core.store import Run, Series
from tuiloss.ui.findings import Findings, anomaly_counts, anomaly_key, marks, with_stall
from tuiloss.ui.runstate import Activity

SPIKE = Anomaly("spike", 25_000.0, 30_000.0, 1.4, 0.2, "spiked to 1.40 at 25.0K")
RESET = Anomaly("reset", 200.0, None, None, None, "the step counter went back to 200")
NAN = Anomaly("nan", math.nan, None, None, None, "became NaN")


def run_report(run_id: str, *anomalies: Anomaly) -> RunReport:
    analysis = SeriesAnalysis(10, 1.0, 10.0, 0.2, 0.19, 9.0, None, anomalies, ())
    metric = MetricReport("loss", 10, 1.0, 10.0, 1.0, 0.2, 0.19, 9.0, analysis)
    return RunReport(run_id, run_id.upper(), run_id, "csv", {}, "loss", False, SkipCounts(0, {}, 0), (), (),
                     {"loss": metric})


def report(*runs: RunReport) -> Report:
    return Report("0", None, runs)


def test_an_onset_refined_a_little_is_the_same_finding():
    moved = Anomaly("spike", 25_300.0, None, 1.5, 0.2, "spiked")
    assert anomaly_key("a", SPIKE) == anomaly_key("a", moved) == ("a", "spike", 25)
    assert anomaly_key("a", NAN) == ("a", "nan", None)  # no onset to round
    assert anomaly_key("b", SPIKE) != anomaly_key("a", SPIKE)


def test_history_is_not_news_and_what_comes_later_is():
    findings = Findings()
    findings.initial_runs.add("a")
    assert findings.take(report(run_report("a", SPIKE)), 1) == []  # before the load finished
    assert not findings.known
    findings.baseline_generation = 2
    assert findings.take(report(run_report("a", SPIKE)), 2) == []  # the first full analysis: history
    assert anomaly_key("a", SPIKE) in findings.known and not findings.new
    later = Anomaly("divergence", 80_000.0, None, 3.0, 0.2, "diverged")
    fresh = findings.take(report(run_report("a", SPIKE, later), run_report("b", SPIKE)), 3)
    assert fresh == [("A", later), ("B", SPIKE)]  # a run found while watching has no history
    assert findings.new == {anomaly_key("a", later), anomaly_key("b", SPIKE)}
    assert findings.take(report(run_report("a", SPIKE, later)), 4) == []  # told once


def test_a_finding_whose_onset_more_data_moved_is_not_news():
    findings = Findings()
    findings.initial_runs.add("a")
    findings.baseline_generation = 1
    drift = Anomaly("drift", 37_300.0, 56_200.0, 0.230, 0.209, "drifted up from 0.209 to 0.230")
    assert findings.take(report(run_report("a", drift)), 1) == []  # history
    moved = Anomaly("drift", 34_500.0, 56_400.0, 0.230, 0.208, "drifted up from 0.208 to 0.230")
    assert anomaly_key("a", moved) != anomaly_key("a", drift)  # another thousand: another key
    assert findings.take(report(run_report("a", moved)), 2) == []  # the same stretch: not news
    later = Anomaly("drift", 80_000.0, 90_000.0, 0.3, 0.23, "drifted up from 0.230 to 0.300")
    assert findings.take(report(run_report("a", moved, later)), 3) == [("A", later)]  # a new stretch is


def test_a_run_that_falls_silent_is_stalled_once():
    run = Run(id="a", label="A", source="a", format="csv")
    series = run.series["loss"] = Series()
    series.extend(np.array([1.0, 2.0, 2500.0]), np.array([1.0, 0.9, 0.8]))
    activity = Activity()
    for t in (0.0, 10.0, 20.0):
        activity.grew(t)
    findings = Findings()
    assert findings.check_stalls([run], {"a": activity}, 30.0) == ([], False)
    fresh, changed = findings.check_stalls([run], {"a": activity}, 620.0)
    assert changed and [run_id for run_id, _ in fresh] == ["a"]
    stall = findings.stalls["a"]
    assert stall.kind == "stall" and "2.5K" in stall.message
    assert anomaly_key("a", stall) in findings.new
    fresh, changed = findings.check_stalls([run], {"a": activity}, 700.0)
    assert fresh == [] and changed  # the silence grew: same stall, new sentence
    run.deleted = True
    assert findings.check_stalls([run], {"a": activity}, 800.0) == ([], True) and not findings.stalls


def test_a_stall_joins_the_primary_metric_and_counts():
    stall = Anomaly("stall", 2500.0, None, None, None, "no new point for 10 min")
    entry = with_stall(run_report("a", SPIKE), stall)
    assert entry.primary.anomalies == (SPIKE, stall)
    assert with_stall(entry, None) is entry
    assert anomaly_counts(report(entry, run_report("b"))) == {"a": 2, "b": 0}


def test_marks_leave_out_resets_and_findings_without_a_step():
    found = marks(report(run_report("a", RESET, SPIKE, NAN)))
    assert [(m.kind, m.step, m.value, m.end_step) for m in found["a"]] == [("spike", 25_000.0, 1.4, 30_000.0)]
    assert marks(None) == {}


def test_findings_import_no_textual():
    code = "import sys, tuiloss.ui.findings, tuiloss.ui.insights; print('textual' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_announced_findings_settle_visibly():
    from tuiloss.ui.findings import notice_title

    findings = Findings()
    findings.baseline_generation = 1
    assert findings.take(report(run_report("a")), 1) == []
    open_spike = Anomaly("spike", 25_000.0, None, 1.4, 0.2, "spiked to 1.40 at 25.0K, not recovered yet")
    early = Anomaly("drift", 30_700.0, 34_500.0, 0.212, 0.204, "drifted up from 0.204 to 0.212 between 30.7K and 34.5K")
    assert findings.take(report(run_report("a", open_spike, early)), 2) == [("A", open_spike), ("A", early)]
    recovered = Anomaly("spike", 25_000.0, 29_800.0, 1.4, 0.2, "spiked to 1.40 at 25.0K, recovered by 29.8K")
    final = Anomaly("drift", 37_300.0, 56_200.0, 0.23, 0.209, "drifted up from 0.209 to 0.230 between 37.3K and 56.2K")
    notices = findings.take(report(run_report("a", recovered, final)), 3)
    titles = [(notice_title(a), a.message) for _, a in notices]
    assert ("updated", "spike now: spiked to 1.40 at 25.0K, recovered by 29.8K") in titles
    assert ("withdrawn", "no longer seen: drift drifted up from 0.204 to 0.212 between 30.7K and 34.5K") in titles
    assert ("new drift", final.message) in titles  # the drift that replaced it is news of its own
    assert anomaly_key("a", early) not in findings.new
    assert findings.take(report(run_report("a", recovered, final)), 4) == []  # settled: nothing more to say


def test_a_drift_whose_stretch_moves_is_updated_not_repeated():
    findings = Findings()
    findings.baseline_generation = 1
    findings.take(report(run_report("a")), 1)
    first = Anomaly("drift", 40_000.0, 50_000.0, 0.22, 0.2, "drifted up between 40.0K and 50.0K")
    findings.take(report(run_report("a", first)), 2)
    longer = Anomaly("drift", 40_200.0, 60_000.0, 0.23, 0.2, "drifted up between 40.2K and 60.0K")
    [(label, notice)] = findings.take(report(run_report("a", longer)), 3)
    assert notice.kind == "updated" and notice.message == "drift now: drifted up between 40.2K and 60.0K"


def test_the_list_counts_the_findings_of_the_eval_series_the_panel_lists():
    from tuiloss.core.report import build_report
    from tuiloss.core.store import Run, Series, Store

    def series(steps, values):
        s = Series()
        s.extend(np.asarray(steps, dtype=float), np.asarray(values, dtype=float))
        return s

    steps = np.arange(100, 20_100, 100, dtype=float)
    evals = np.arange(1000, 21_000, 1000, dtype=float)
    val = 0.5 + 0.5 * (evals / 1000) ** -0.5
    val[9] = val[8] * 20  # one eval far off: an eval spike
    run = Run(id="a", label="a", source="a/metrics.csv", format="csv",
              series={"loss": series(steps, 0.4 + (steps / 100) ** -0.5), "val_loss": series(evals, val)})
    store = Store()
    store.runs["a"] = run
    report = build_report(store)
    listed = sum(len(m.analysis.anomalies) for m in report.runs[0].metrics.values() if m.analysis is not None)
    assert listed >= 1 and anomaly_counts(report) == {"a": listed}
