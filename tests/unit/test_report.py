"""The typed report: built straight from the analysis, JSON only at the edge."""

import itertools
import json
import math
import os
import sys
import threading

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
    assert list(data) == ["version", "root", "runs", "observations", "jobs", "ignored"]
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


# -- direction, runs in one log, the same series twice, the step axis --------------------------


def _series(steps, values) -> Series:
    series = Series()
    series.extend(np.asarray(steps, dtype=float), np.asarray(values, dtype=float))
    return series


def _named_run(run_id: str, **series) -> Run:
    run = Run(id=run_id, label=run_id, source=f"{run_id}/train.log", format="text")
    run.series.update(series)
    return run


def test_a_rising_accuracy_is_progress_not_divergence():
    steps = np.arange(50, 1650, 50)
    acc = 100 - 88 * np.exp(-steps / 200.0)  # 12 -> 99.7
    run = _named_run("nmt", acc=_series(steps, acc))
    entry = build_report(make_store(run)).runs[0]
    m = entry.primary
    assert m.name == "acc" and m.direction.value == "higher"
    assert not m.anomalies
    # the same numbers read as a loss are a divergence: the direction decides
    as_loss = build_report(make_store(_named_run("l", loss=_series(steps, acc)))).runs[0].primary
    assert as_loss.direction.value == "lower" and [a.kind for a in as_loss.anomalies] == ["divergence"]
    text = render_text(build_report(make_store(run)))
    assert "(acc, higher is better)" in text and "diverg" not in text


def test_a_metric_of_unknown_direction_gets_no_health_verdicts():
    from tuiloss.core.analysis.metrics import Direction
    from tuiloss.core.report import analyze

    steps = np.arange(1, 400, dtype=float)
    values = np.where(steps == 200, 50.0, 1.0 + 0.01 * np.sin(steps))
    lower = analyze(steps, values, (), is_eval=False, direction=Direction.LOWER)
    unknown = analyze(steps, values, (), is_eval=False, direction=Direction.UNKNOWN)
    assert any(a.kind == "spike" for a in lower.anomalies)
    assert not any(a.kind in ("spike", "divergence", "drift") for a in unknown.anomalies)
    assert unknown.convergence_step is None


def test_throughput_is_never_the_primary_metric():
    steps = np.arange(10, 200, 10)
    run = _named_run("ds", CurrSamplesPerSec=_series(steps, np.full(len(steps), 171.0)),
                     ppl=_series([0, 100], [4998.3, 1.9]))
    entry = build_report(make_store(run)).runs[0]
    assert entry.primary_metric == "ppl" and entry.primary.direction.value == "lower"
    alone = build_report(make_store(_named_run("t", CurrSamplesPerSec=_series(steps, np.ones(len(steps))))))
    assert alone.runs[0].primary_metric is None
    assert "no loss, perplexity, reward or accuracy" in render_text(alone)


def test_runs_restarted_in_one_log_are_reported_apart_with_their_own_findings():
    a = np.geomspace(2.0, 0.2, 300)
    b = np.geomspace(2.2, 0.9, 200)
    b[120] = 30.0  # a spike in the second run only
    steps = np.concatenate((np.arange(1, 301), np.arange(1, 201)))
    run = _named_run("/x/sweep/training.log", loss=_series(steps, np.concatenate((a, b))))
    run.label = "training.log"
    report = build_report(make_store(run))
    assert [r.label for r in report.runs] == ["training.log", "training.log #2"]
    first, second = report.runs
    assert first.primary.points == 300 and second.primary.points == 200
    assert not first.primary.anomalies
    assert [a.kind for a in second.primary.anomalies] == ["spike"]
    assert second.primary.anomalies[0].step == 121
    assert report_json(report)["runs"][1]["id"] == "/x/sweep/training.log#2"


def test_two_sources_of_the_same_series_are_said_to_be_and_compared_once():
    steps = np.arange(2048, 2048 * 60, 2048)
    values = np.geomspace(3.0, 0.05, len(steps))
    csv = _named_run("progress.csv", loss=_series(steps, values))
    events = _named_run("events", loss=_series(steps, values.astype(np.float32).astype(float)))
    other = _named_run("other", loss=_series(steps, values * 1.5))
    report = build_report(make_store(csv, events, other))
    by = {r.label: r for r in report.runs}
    assert by["progress.csv"].same_series == ("events",) and by["events"].same_series == ("progress.csv",)
    assert by["other"].same_series == ()
    compared = {label for o in report.observations for label in o.runs}
    assert "events" not in compared or "progress.csv" not in compared
    assert "holds the same series as events" in render_text(report)


def test_a_coarse_step_axis_keeps_line_order_and_is_said():
    epochs = np.repeat(np.round(np.linspace(0, 0.06, 7), 2), [1, 4, 4, 4, 4, 3, 3])
    values = np.linspace(12.4, 0.5, len(epochs))
    report = build_report(make_store(_named_run("hf", loss=_series(epochs, values))))
    m = report.runs[0].primary
    assert m.coarse_steps and m.distinct_steps == 7 and m.points == 23
    assert m.first == pytest.approx(12.4) and m.final == pytest.approx(0.5)  # line order kept
    assert "coarse step axis: 23 points on 7 distinct steps" in render_text(report)
    assert report_json(report)["runs"][0]["metrics"]["loss"]["coarse_steps"] is True


def test_step_option_re_keys_every_metric_on_the_named_column():
    steps = np.arange(1, 101, dtype=float)
    run = _named_run("r", loss=_series(steps, np.geomspace(2, 1, 100)), epoch=_series(steps, steps // 10))
    run.step_override = "epoch"  # --step epoch
    report = build_report(make_store(run))
    m = report.runs[0].primary
    assert m.name == "loss" and m.first_step == 0 and m.last_step == 10 and m.points == 100
    assert "epoch" not in report.runs[0].metrics


def test_a_keras_sweep_in_one_stdout_file_is_one_run_per_model(tmp_path):
    from tuiloss.core.engine import load

    out = []
    for model, (start, end) in enumerate(((0.69, 0.20), (0.71, 0.35), (0.70, 0.10))):
        out.append(f"Model {model}: fitting\n")
        for epoch in range(1, 9):
            loss = start + (end - start) * (epoch - 1) / 7
            out.append(f"Epoch {epoch}/8\n")
            out.append(f"100/100 [==============================] - 2s 10ms/step - loss: {loss:.4f} - "
                       f"accuracy: {1 - loss:.4f} - val_loss: {loss + 0.05:.4f} - val_accuracy: {0.95 - loss:.4f}\n")
    (tmp_path / "sweep").mkdir()
    (tmp_path / "sweep" / "stdout.txt").write_text("".join(out))
    store, _, _ = load([str(tmp_path / "sweep" / "stdout.txt")])
    report = build_report(store)
    assert [run.label for run in report.runs] == ["sweep", "sweep #2", "sweep #3"]
    for run, (start, end) in zip(report.runs, ((0.69, 0.20), (0.71, 0.35), (0.70, 0.10))):
        m = run.primary
        assert m.name == "loss" and m.points == 8 and (m.first_step, m.last_step) == (1, 8)
        assert m.first == pytest.approx(start, abs=1e-4) and m.final == pytest.approx(end, abs=1e-4)
        assert run.metrics["val_loss"].points == 8
        assert not any(a.kind == "reset" for a in m.anomalies)


def test_a_twin_printed_with_five_digits_is_the_same_series_and_a_close_run_is_not():
    steps = np.arange(1, 101, dtype=float)
    values = np.geomspace(1.2345678, 0.0123456, 100)
    events = _named_run("events", loss=_series(steps, values.astype(np.float32).astype(float)))
    results = _named_run("results.csv", loss=_series(steps, np.array([float(f"{v:.5g}") for v in values])))
    close = _named_run("seed2", loss=_series(steps, values * (1 + 0.002 * np.sin(steps))))
    report = build_report(make_store(events, results, close))
    by = {r.label: r.same_series for r in report.runs}
    assert by == {"events": ("results.csv",), "results.csv": ("events",), "seed2": ()}


def test_overfitting_is_said_of_the_primary_metrics_own_eval_series_only():
    steps = np.arange(100, 5100, 100, dtype=float)
    train = 5.0 * (steps / 100) ** -0.3
    evals = np.arange(500, 5500, 500, dtype=float)
    falls_then_rises = np.concatenate([np.linspace(4.0, 3.0, 4), np.linspace(3.05, 3.6, 6)])
    run = _named_run(
        "w2v",
        loss=_series(steps, train),
        valid_loss=_series(evals, falls_then_rises),
        valid_code_perplexity=_series(evals, falls_then_rises),  # an auxiliary term: its rise is no overfitting
    )
    metrics = build_report(make_store(run)).runs[0].metrics
    kinds = {name: [a.kind for a in m.analysis.anomalies] for name, m in metrics.items() if m.analysis is not None}
    assert "overfitting" in kinds["valid_loss"]
    assert "overfitting" not in kinds.get("valid_code_perplexity", [])


def test_a_report_whose_analysis_kept_up_with_the_load_says_what_one_built_after_it_says(tmp_path, monkeypatch):
    """``tuiloss report`` on one log analyses each batch's new points while the next chunks are parsed."""
    from tuiloss.core.engine import load
    from tuiloss.core.report import KeptAnalyzers
    from tuiloss.core.sources import line as line_module

    monkeypatch.setattr(line_module, "DEFAULT_MAX_READ", 1)  # reads of the smallest size: 2 MiB
    rng = np.random.default_rng(3)
    steps = np.arange(200_000)  # over 2 MiB: read in several chunks
    loss = 0.3 + 2.0 / (1 + steps / 2_000) + 0.01 * rng.standard_normal(len(steps))
    loss[80_000:80_003] *= 3  # a spike
    loss[100_000] = np.nan
    rows = [f"{s},{v:.6f},{0.5 + s * 1e-6:.6f}" for s, v in zip(steps, loss)]
    rows += [f"{s},{2.5 - s * 1e-5:.6f},0.5" for s in range(0, 5_000)]  # training restarted in the log
    (tmp_path / "metrics.csv").write_text("step,loss,accuracy\n" + "\n".join(rows) + "\n")
    analyzers = KeptAnalyzers()
    caught = []
    analysed = threading.Event()
    reads = itertools.count()
    read = line_module.LineSource._read

    def gated(self):
        # the second chunk is read once the first is analysed: however loaded the machine, the
        # analysis is handed the log in more than one piece (batches that wait are handed on together)
        if next(reads) == 1:
            assert analysed.wait(60)
        return read(self)

    def stored(store):
        analyzers.catch_up(store)
        caught.append(sum(a._scan.n for a in analyzers._kept.values()))
        if caught[-1]:
            analysed.set()

    monkeypatch.setattr(line_module.LineSource, "_read", gated)
    store, _, _ = load([str(tmp_path)], stored=stored)
    kept = report_json(build_report(store, root=str(tmp_path), analyzer_for=analyzers), [])
    after = report_json(build_report(load([str(tmp_path)])[0], root=str(tmp_path)), [])
    # it kept up, batch by batch
    assert len([n for n in caught if n]) >= 2 and caught == sorted(caught)
    assert json.dumps(kept, sort_keys=True, default=str) == json.dumps(after, sort_keys=True, default=str)
    assert len(kept["runs"]) == 2
    assert "spike" in json.dumps(kept)


def test_many_logs_are_analysed_after_the_load_one_by_one(tmp_path):
    from tuiloss.core.engine import load
    from tuiloss.core.report import KeptAnalyzers

    for k in range(2):
        (tmp_path / f"run{k}").mkdir()
        (tmp_path / f"run{k}" / "metrics.csv").write_text("step,loss\n" + "".join(f"{s},{1 / (s + 1)}\n" for s in range(500)))
    analyzers = KeptAnalyzers()
    store, _, _ = load([str(tmp_path)], stored=analyzers.catch_up)
    assert len(store) == 2 and analyzers._kept == {}  # no per-point state held through the load


@pytest.mark.parametrize("block", [1, 3, 16])
def test_twins_are_found_the_same_wherever_the_comparison_cuts_its_blocks(monkeypatch, block):
    # Two series of millions of points are compared a block at a time, not by one intersection
    # (copies of both); the answer is the intersection's: the first point of each shared step,
    # the values agreeing to what was printed, repeated steps, gaps and NaN values.
    from tuiloss.core import report as rep
    from tuiloss.core.analysis.observations import RunFacts

    def facts(steps, values):
        return RunFacts("x", "x", {}, None, np.asarray(steps, dtype=float), np.asarray(values, dtype=float))

    def whole(a, b):  # the rule over one intersection of the steps
        common, ia, ib = np.intersect1d(a.steps, b.steps, return_indices=True)
        if len(common) < 5 or len(common) < 0.8 * min(len(a.steps), len(b.steps)):
            return False
        va, vb = a.values[ia], b.values[ib]
        both = np.isfinite(va) & np.isfinite(vb)
        if both.sum() < 5:
            return False
        va, vb = va[both], vb[both]
        unit = 10.0 ** -min(rep._printed_decimals(va), rep._printed_decimals(vb))
        return bool(np.all(np.abs(va - vb) <= np.maximum(1e-4 * np.abs(va), 0.51 * unit) + 1e-12))

    rng = np.random.default_rng(block)
    monkeypatch.setattr(rep, "SAME_BLOCK", block)
    answers = []
    for trial in range(60):
        n = int(rng.integers(0, 60))
        steps = np.sort(rng.integers(0, 40, n)) if trial % 3 else np.arange(n)
        values = np.round(rng.random(n), 4)
        if trial % 4 == 0:
            values[rng.random(n) < 0.2] = np.nan
        other_steps = steps[rng.random(n) < 0.9] if trial % 5 else steps
        other = np.interp(other_steps, steps, values) if n else np.zeros(0)
        if trial % 7 == 1:
            other = other + 0.01  # a close run, not a twin
        elif trial % 2:
            other = np.round(other, 3)  # printed with fewer digits
        a, b = facts(steps, values), facts(other_steps, other)
        shared = list(rep._shared(a.steps, b.steps))
        _, ia, ib = np.intersect1d(a.steps, b.steps, return_indices=True)
        assert np.array_equal(np.concatenate([i for i, _ in shared] or [[]]), ia)
        assert np.array_equal(np.concatenate([j for _, j in shared] or [[]]), ib)
        if trial % 11 == 0:
            b = facts(other_steps[::-1].copy(), other[::-1].copy())  # not ascending: the intersection itself
        expected = whole(a, b)
        assert rep._same_points(a, b) == expected, trial
        answers.append(expected)
    assert any(answers) and not all(answers)


def _load_watching_parsers(tmp_path, monkeypatch, analysed: bool):
    """Load a CSV big enough to be parsed in pieces; what each piece's thread was (its priority,
    and how many threads parsed at most), and the runs stored at each hand-on."""
    from tuiloss.core.engine import Options, load
    from tuiloss.core.formats import csv as csv_module

    monkeypatch.setattr(csv_module, "PARALLEL_MIN_BYTES", 64)
    monkeypatch.setattr(csv_module, "PIECE_BYTES", 4096)
    monkeypatch.setattr(csv_module, "available_cpus", lambda: 2)
    log = tmp_path / "metrics.csv"
    log.write_text("step,loss\n" + "".join(f"{k},{1 / (k + 1):.6f}\n" for k in range(5000)))
    seen = []
    original = csv_module.CsvParser._read_piece

    def read_piece(self, *args):
        seen.append((os.getpriority(os.PRIO_PROCESS, threading.get_native_id()), csv_module._workers()))
        return original(self, *args)

    monkeypatch.setattr(csv_module.CsvParser, "_read_piece", read_piece)
    during = []
    store, _, _ = load([str(log)], Options(), (lambda store: during.append(len(store))) if analysed else None)
    assert len(store.runs) == 1 and len(next(iter(store.runs.values())).series["loss"]) == 5000
    return seen, during


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="thread priorities are Linux's")
def test_report_parses_at_the_lowest_priority_while_it_analyses_each_batch(tmp_path, monkeypatch):
    """While ``report`` loads, its analysis of each batch comes first: the chunks are parsed on
    threads of the lowest priority, which take the CPU it leaves. A load without that work
    parses at the process' own priority."""
    own = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    seen, during = _load_watching_parsers(tmp_path, monkeypatch, analysed=True)
    assert seen and {priority for priority, _ in seen} == {19} and {workers for _, workers in seen} == {2}
    assert during
    seen, _ = _load_watching_parsers(tmp_path, monkeypatch, analysed=False)
    assert seen and {priority for priority, _ in seen} == {own}


def test_without_thread_priorities_report_parses_on_one_thread_fewer(tmp_path, monkeypatch):
    from tuiloss.core.formats import csv as csv_module

    monkeypatch.setattr(csv_module, "_THREAD_PRIORITIES", False)
    seen, during = _load_watching_parsers(tmp_path, monkeypatch, analysed=True)
    assert seen and {workers for _, workers in seen} == {1} and during
    seen, _ = _load_watching_parsers(tmp_path, monkeypatch, analysed=False)
    assert {workers for _, workers in seen} == {2}


def test_a_long_runs_events_read_on_a_second_thread_are_those_read_on_one(monkeypatch):
    import tuiloss.core.report as report_module

    steps = np.arange(1, 20_001, dtype=float)
    lr = np.where(steps < 10_000, 1e-3, 1e-4)  # one step decay: an lr_drop event
    loss = 2.0 / np.sqrt(steps)
    store = make_store(_named_run("a", loss=_series(steps, loss), lr=_series(steps, lr)))
    monkeypatch.setattr(report_module, "EVENTS_APART_FROM", 1 << 62)
    alone = report_json(build_report(store))
    monkeypatch.setattr(report_module, "EVENTS_APART_FROM", 0)
    seen = []
    original = report_module.events_of
    monkeypatch.setattr(report_module, "events_of",
                        lambda *args: seen.append(threading.current_thread().name) or original(*args))
    apart = report_json(build_report(store))
    assert seen and seen[0].startswith("tuiloss-report") or report_module._helper() is None
    assert apart == alone
    assert any(event["kind"] == "lr_drop" for event in alone["runs"][0]["events"])


def test_no_progress_of_a_planned_total_of_steps_is_said_on_an_axis_of_fractional_epochs(tmp_path):
    # Unsloth's banner plans 60 steps; the Trainer's dicts under it step on a fractional epoch
    from tuiloss.core.engine import load

    dicts = "".join(f"{{'loss': {2 - k / 10}, 'learning_rate': 4e-05, 'epoch': {k / 10000}}}\n" for k in range(1, 6))
    (tmp_path / "train.log").write_text("\\        /    Total batch size = 8 | Total steps = 60\n" + dicts)
    report = build_report(load([str(tmp_path)])[0], root=str(tmp_path))
    axis = report_json(report, [])["runs"][0]["axis"]
    # 60 optimizer steps are no total of this axis of epochs: neither the total nor a progress is said
    assert axis["planned_steps"] is None and axis["coarse"] and axis["progress"] is None
    assert " planned (" not in render_text(report)
