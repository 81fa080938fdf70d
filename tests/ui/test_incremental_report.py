"""The panel's reports while logs grow: only the runs that changed are analysed again, and each
report holds exactly what a fresh batch report of the same files holds."""

from __future__ import annotations

import json
import math

from tuiloss.core.engine import Engine, apply_result, load
from tuiloss.core.report import KeptEntries, build_report, report_json
from tuiloss.core.store import Store
from tuiloss.ui.insights import Analyzers, RunTexts, metric_report, render_insights
from tuiloss.ui.snapshot import snapshot_run, snapshot_store


def curve(k: int, s: int) -> float:
    value = 0.3 + 2.0 / (1.0 + s * 0.02 * (k + 1)) + 0.002 * ((s * 7919 + k) % 11)
    return value * (3.0 if (k == 2 and s == 140) else 1.0)  # run 2 spikes at step 140


def write(path, k: int, start: int, stop: int, header: bool = False) -> None:
    with open(path, "a") as handle:
        if header:
            handle.write("step,loss\n")
        handle.write("".join(f"{s},{curve(k, s):.5f}\n" for s in range(start, stop)))


def make_runs(root, count: int = 4, points: int = 120) -> list:
    paths = []
    for k in range(count):
        folder = root / f"run{k}"
        folder.mkdir(parents=True)
        paths.append(folder / "metrics.csv")
        write(paths[-1], k, 1, points, header=True)
    twin = root / "run0_copy"  # the same series as run0, written by another logger
    twin.mkdir()
    (twin / "metrics.csv").write_text((root / "run0" / "metrics.csv").read_text())
    return paths


class Viewer:
    """What the panel's analysis thread keeps between reports, over a store read as the viewer reads it."""

    def __init__(self, root) -> None:
        self.engine, self.store = Engine([str(root)], hold=0.0), Store()
        self.analyzers, self.kept = Analyzers(), KeptEntries()

    def read(self) -> None:
        apply_result(self.store, self.engine.scan())
        while True:
            result = self.engine.read()
            apply_result(self.store, result)
            if not result.more:
                return

    def report(self, metric=None):
        snapshot = snapshot_store([snapshot_run(run) for run in self.store])
        return metric_report(snapshot, None, metric, self.analyzers, self.kept)


def findings(report) -> str:
    """The report as JSON, less each run's state (it ages with the clock)."""
    out = report_json(report)
    for run in out["runs"]:
        run.pop("state", None)
    return json.dumps(out, sort_keys=True, default=str)


def panel(report, kept=None) -> str:
    return render_insights(report, colors={}, numbers={}, swatches={}, width=60, kept=kept).plain


def test_after_appends_the_report_and_panel_are_those_of_a_fresh_start(tmp_path):
    paths = make_runs(tmp_path)
    viewer = Viewer(tmp_path)
    viewer.read()
    first = viewer.report()
    assert viewer.kept.analysed == 5
    assert next(r for r in first.runs if r.id.endswith("run0_copy/metrics.csv")).same_series  # the twins
    blocks = RunTexts()
    assert panel(first, blocks) == panel(first) and blocks.made == 5
    end = {path: 120 for path in paths}
    for n in range(6):  # appends to one run, then to another
        path = paths[n % 2]
        k = paths.index(path)
        write(path, k, end[path], end[path] + 7)
        end[path] += 7
        viewer.read()
        before = viewer.kept.analysed
        live = viewer.report()
        assert viewer.kept.analysed == before + 1  # the run that grew, no other
        fresh_store, _, _ = load([str(tmp_path)])
        fresh = metric_report(fresh_store, None, None)
        assert findings(live) == findings(fresh), n
        made = blocks.made
        assert panel(live, blocks) == panel(fresh), n
        assert blocks.made == made + 1, n  # the block of the run that grew, no other
    grown = next(r for r in live.runs if r.id == str(paths[0]))
    assert grown.metrics["loss"].last_step == end[paths[0]] - 1
    assert viewer.analyzers._kept[(str(paths[0]), "loss")].rebuilds == 0  # extended, not redone
    assert not next(r for r in live.runs if r.id.endswith("run0_copy/metrics.csv")).same_series  # no longer


def test_nothing_changed_nothing_analysed_and_a_new_metric_or_run_is(tmp_path):
    make_runs(tmp_path, count=3)
    viewer = Viewer(tmp_path)
    viewer.read()
    first = viewer.report()
    again = viewer.report()
    assert viewer.kept.analysed == 4
    assert findings(again) == findings(first)
    # a run switched off, then on again: neither report analyses anything
    runs = [run for run in viewer.store if not run.id.endswith("run1/metrics.csv")]
    without = metric_report(snapshot_store([snapshot_run(run) for run in runs]), None, None, viewer.analyzers,
                            viewer.kept)
    assert len(without.runs) == 3 and findings(viewer.report()) == findings(first)
    assert viewer.kept.analysed == 4
    picked = viewer.report("loss")  # another question: every run again
    assert viewer.kept.analysed == 8 and findings(picked) == findings(metric_report(load([str(tmp_path)])[0], None, "loss"))
    folder = tmp_path / "run9"
    folder.mkdir()
    write(folder / "metrics.csv", 9, 1, 50, header=True)
    viewer.read()
    viewer.report("loss")
    assert viewer.kept.analysed == 9  # the new run only


def test_a_truncated_log_is_analysed_again_from_its_new_segment(tmp_path):
    paths = make_runs(tmp_path, count=2)
    viewer = Viewer(tmp_path)
    viewer.read()
    viewer.report()
    paths[1].write_text("step,loss\n" + "".join(f"{s},{1.0 / s:.5f}\n" for s in range(1, 60)))
    viewer.read()
    before = viewer.kept.analysed
    live = viewer.report()
    assert viewer.kept.analysed == before + 1
    run = next(r for r in live.runs if r.id == str(paths[1]))
    assert math.isclose(run.metrics["loss"].final, 1.0 / 59, rel_tol=1e-4)
    assert [a.kind for a in run.metrics["loss"].analysis.anomalies] == ["reset"]
    # what a batch analysis of the same store (which saw the truncation) says
    batch = build_report(snapshot_store([snapshot_run(r) for r in viewer.store]))
    assert findings(live) == findings(batch)


def test_an_unchanged_run_keeps_its_entry_from_report_to_report_until_its_state_moves(tmp_path):
    import time

    paths = make_runs(tmp_path, count=3)
    viewer = Viewer(tmp_path)
    viewer.read()
    first, again = viewer.report(), viewer.report()
    assert any(entry.same_series for entry in first.runs)  # the twins' entries, copied once
    assert [a is b for a, b in zip(first.runs, again.runs)] == [True] * len(first.runs)
    write(paths[1], 1, 120, 127)
    viewer.read()
    grown = viewer.report()
    assert [b.id for a, b in zip(again.runs, grown.runs) if a is not b] == [str(paths[1])]
    # days later, with nothing written: each state moves with the clock, as a fresh report's does
    store = snapshot_store([snapshot_run(run) for run in viewer.store])
    later = time.time() + 5 * 86400
    aged = build_report(store, now=later, analyzer_for=viewer.analyzers, kept=viewer.kept)
    fresh = build_report(load([str(tmp_path)])[0], now=later)
    assert [entry.state for entry in aged.runs] == [entry.state for entry in fresh.runs]
    assert [entry.state for entry in aged.runs] != [entry.state for entry in grown.runs]
    assert all(a is not b for a, b in zip(grown.runs, aged.runs))


def test_the_comparisons_of_runs_series_wait_while_a_keys_frame_is_drawn(monkeypatch):
    import threading
    from types import SimpleNamespace

    from tuiloss.core import report as report_module
    from tuiloss.ui.insights import QuietEntries

    monkeypatch.setattr(report_module, "_same_points", lambda a, b: True)
    analyzers = Analyzers()
    kept = QuietEntries(analyzers)
    a, b = SimpleNamespace(id="a"), SimpleNamespace(id="b")
    assert kept.same_points(a, b)  # nothing deferred: at once
    analyzers.defer(10.0)  # a key's frame (held half a second at most)
    answered = threading.Event()
    thread = threading.Thread(target=lambda: answered.set() if kept.same_points(a, b) else None, daemon=True)
    thread.start()
    assert not answered.wait(0.05)  # waits for the frame
    analyzers.resume()  # the frame is out
    assert answered.wait(10.0)
    thread.join(10.0)
