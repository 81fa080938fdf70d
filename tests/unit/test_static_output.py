"""Output for scripts and CI: `report --plot`, `report --fail-on`, `export --csv`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tuiloss.cli import main
from tuiloss.core.engine import Options, load
from tuiloss.core.gate import KINDS, failures, parse_kinds
from tuiloss.core.report import build_report
from tuiloss.ui.plot import render_plot

LABELS = (
    "Pre-Norm | Gradient Clip=10 | Run 1",
    "Pre-Norm | Gradient Clip=1 | Run 2",
    "Post-Norm | DeepNorm | Gradient Clip=1",
    "Pre-Norm | Attn. Relax | Gradient Clip=1",
    "Pre-Norm | Gradient Clip=10 | Seed 2024",
    "Pre-Norm | Gradient Clip=1 | Seed 2024",
    "Post-Norm | DeepNorm | Gradient Clip=1 | Seed 2024",
)


def tuiloss(*args: str, columns: int = 100, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tuiloss", *args], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, COLUMNS=str(columns), **(env or {})))


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    import shutil

    folder = tmp_path_factory.mktemp("static") / "sample_logs"
    shutil.copytree(Path(__file__).resolve().parents[2] / "sample_logs", folder)
    store, _, _ = load([str(folder)], Options())
    return folder, store, build_report(store, root=str(folder))


def chart_part(out: str) -> list[str]:
    """The plot's lines: from its title to its legend's marks line."""
    lines = out.splitlines()
    start = next(k for k, line in enumerate(lines) if "by step" in line)
    end = next(k for k, line in enumerate(lines) if line.strip().startswith("marks:"))
    return lines[start:end + 1]


@pytest.mark.parametrize("columns", [80, 120])
def test_plot_under_the_report_fits_the_terminal_and_shows_the_story(sample, columns):
    folder, _, _ = sample
    done = tuiloss("report", str(folder), "--plot", columns=columns)
    assert done.returncode == 0, done.stderr
    assert "converged" in done.stdout.split("by step")[0]  # the findings come first
    chart = chart_part(done.stdout)
    assert "\x1b" not in done.stdout  # not a terminal: no colour
    assert max(len(line) for line in chart) <= columns
    axis = next(line for line in chart if "100K" in line)
    assert "1K" in axis and "10K" in axis  # the log step axis, labelled by decades
    for label in LABELS:
        assert any(label in line for line in chart)
    body = "\n".join(chart[1:-len(LABELS) - 1])
    assert "^" in body and "/" in body  # the DeepNorm spike and the clip=1 drift are marked
    markers = [line.split()[0] for line in chart if any(label in line for label in LABELS)]
    assert len(set(markers)) == 7 and all(marker in body for marker in markers)  # one character per run


def test_the_spike_mark_sits_at_its_peak(sample):
    _, store, report = sample
    chart = render_plot(report, store, width=100, height=20).splitlines()
    body = [line for line in chart[:22] if "┤" in line or "│" in line]
    top = next(k for k, line in enumerate(body) if "^" in line)
    assert top <= 1  # 1.39 is the highest value of the chart: the mark is on its top rows


def test_colour_only_when_asked(sample):
    _, store, report = sample
    assert "\x1b[" in render_plot(report, store, width=100, color=True)
    assert "\x1b" not in render_plot(report, store, width=100, color=False)


def test_plot_in_markdown_is_a_fenced_block_and_not_with_json(sample):
    folder, _, _ = sample
    done = tuiloss("report", str(folder), "--plot", "--markdown")
    assert done.returncode == 0 and "\n```text\n" in done.stdout and done.stdout.rstrip().endswith("```")
    refused = tuiloss("report", str(folder), "--plot", "--json")
    assert refused.returncode == 2 and "--plot" in refused.stderr and not refused.stdout


def test_plot_of_a_run_spanning_decades_uses_log_values(tmp_path):
    (tmp_path / "m.csv").write_text("step,loss\n" + "".join(f"{s},{100 * 0.9 ** s:.6g}\n" for s in range(1, 80)))
    store, _, _ = load([str(tmp_path)], Options())
    chart = render_plot(build_report(store), store, width=80)
    assert "log values" in chart.splitlines()[0]


def test_plot_with_nothing_to_draw_says_so(tmp_path):
    (tmp_path / "m.csv").write_text("step,loss\n")
    store, _, _ = load([str(tmp_path)], Options())
    assert render_plot(build_report(store), store, width=80) == "(no points to plot)\n"


# -- --fail-on ------------------------------------------------------------------------------------

def test_fail_on_exits_3_on_a_finding_of_the_kinds_named(sample):
    folder, _, _ = sample
    done = tuiloss("report", str(folder), "--fail-on", "spike")
    assert done.returncode == 3
    told = [line for line in done.stderr.splitlines() if line.startswith("tuiloss: --fail-on spike")]
    assert told and all("Post-Norm | DeepNorm | Gradient Clip=1" in line for line in told)
    assert "25.0K" in told[0]
    assert done.stdout  # the report is printed as well
    assert tuiloss("report", str(folder), "--fail-on", "nan,no-progress,divergence").returncode == 0


def test_since_keeps_the_findings_from_a_step_on(sample):
    _, _, report = sample
    assert [f.kind for f in failures(report, parse_kinds("spike"), since=30_000)] == []
    drifts = failures(report, parse_kinds("drift"), since=30_000)  # clip=1 drifts in both its seeds
    assert sorted(f.label for f in drifts) == ["Pre-Norm | Gradient Clip=1 | Run 2", "Pre-Norm | Gradient Clip=1 | Seed 2024"]
    assert {f.kind for f in failures(report, parse_kinds("any"))} == {"spike", "drift"}


def test_fail_on_names_what_it_accepts(sample, capsys):
    folder, _, _ = sample
    with pytest.raises(SystemExit) as exit_:
        main(["report", str(folder), "--fail-on", "spikes"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "unknown kind 'spikes'" in err and all(kind in err for kind in KINDS)
    assert main(["report", str(folder), "--since", "100"]) == 2
    assert "--since limits --fail-on" in capsys.readouterr().err


def test_no_progress_and_nan_fail_the_gate(tmp_path):
    flat = tmp_path / "flat"
    flat.mkdir()
    rng = np.random.default_rng(0)
    (flat / "metrics.csv").write_text("step,loss\n" + "".join(
        f"{s},{2.3 + 0.01 * rng.standard_normal():.4f}\n" for s in range(1, 400)))
    nan = tmp_path / "nan"
    nan.mkdir()
    (nan / "metrics.csv").write_text("step,loss\n" + "".join(
        f"{s},{'nan' if s > 300 else f'{2 / s ** 0.3:.4f}'}\n" for s in range(1, 400)))
    store, _, _ = load([str(tmp_path)], Options())
    report = build_report(store, root=str(tmp_path))
    by_kind = {f.kind: f.label for f in failures(report, parse_kinds("no-progress,nan"))}
    assert by_kind == {"no-progress": "flat", "nan": "nan"}


def test_a_run_creeping_up_to_the_end_fails_the_drift_gate_with_its_verdict(tmp_path):
    rng = np.random.default_rng(3)
    steps = 10 * np.arange(1, 5001)
    rise = 1 + 0.12 * np.clip((steps / steps[-1] - 0.7) / 0.3, 0, 1)
    loss = (0.2 + 1.2 * np.exp(-steps / 3000)) * rise * np.exp(0.01 * rng.standard_normal(len(steps)))
    (tmp_path / "metrics.csv").write_text("step,loss\n" + "".join(f"{s},{v:.5f}\n" for s, v in zip(steps, loss)))
    store, _, _ = load([str(tmp_path)], Options())
    report = build_report(store, root=str(tmp_path))
    told = failures(report, parse_kinds("drift"))
    assert [f.kind for f in told] == ["drift", "worsening"]
    assert told[1].message.startswith("not settled: rising since")


def test_follow_fails_at_the_first_new_finding(tmp_path):
    log = tmp_path / "metrics.csv"
    log.write_text("step,loss\n" + "".join(f"{s},{2 / s ** 0.3:.4f}\n" for s in range(1, 200)))
    proc = subprocess.Popen([sys.executable, "-m", "tuiloss", "report", "--follow", "--poll", "0.2",
                             "--fail-on", "nan", str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        assert "(199 points)" in proc.stdout.readline()  # the first load is told: no NaN yet
        with open(log, "a") as handle:
            handle.write("".join(f"{s},nan\n" for s in range(200, 210)))
        assert proc.wait(timeout=60) == 3
        assert "--fail-on nan" in proc.stderr.read()
    finally:
        proc.kill()
        proc.wait()


# -- export --csv ---------------------------------------------------------------------------------

def test_export_writes_every_point_as_a_tidy_table(sample, tmp_path):
    folder, store, _ = sample
    done = tuiloss("export", str(folder), "--csv", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    table = pd.read_csv(tmp_path / "out" / "tuiloss-series.csv", keep_default_na=False)
    assert list(table.columns) == ["run", "metric", "step", "value", "segment", "run_id"]
    assert len(table) == store.points and f"{store.points:,} points" in done.stdout
    for run in store:
        for name, series in run.series.items():
            rows = table[(table.run_id == run.id) & (table.metric == name)]
            assert np.array_equal(rows.step.to_numpy(float), series.steps.view)
            assert np.array_equal(rows.value.to_numpy(float), series.values.view, equal_nan=True)


def test_export_numbers_segments_and_keeps_nan(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    # A resume (the counter goes back a little, the loss goes on), a NaN, then a fresh restart.
    (logs / "train.jsonl").write_text("".join(f'{{"step": {s}, "loss": {1 / s}}}\n' for s in range(1, 7))
                                      + "".join(f'{{"step": {s}, "loss": {1 / (s + 2)}}}\n' for s in range(5, 9))
                                      + '{"step": 9, "loss": NaN}\n'
                                      + "".join(f'{{"step": {s}, "loss": 2.0}}\n' for s in range(1, 4)))
    assert main(["export", str(logs), "--csv", str(tmp_path / "out")]) == 0
    table = pd.read_csv(tmp_path / "out" / "tuiloss-series.csv", keep_default_na=False)
    store, _, _ = load([str(logs)], Options())
    expected = []
    for run in store:
        series = run.series["loss"]
        for k, step in enumerate(series.steps.view):
            expected.append((run.id, int(step), sum(seg.start <= k for seg in series.segments) - 1))
    assert list(zip(table.run_id, table.step, table.segment)) == expected
    assert len(expected) == 14 and max(e[2] for e in expected) >= 1  # the resume is a segment of its own
    assert "nan" in table.value.astype(str).tolist()


def test_export_refuses_a_folder_inside_the_logs(sample, capsys):
    folder, _, _ = sample
    assert main(["export", str(folder), "--csv", str(folder / "exports")]) == 2
    assert "inside the logs" in capsys.readouterr().err
    assert not (folder / "exports").exists()


def test_export_of_nothing_says_why(tmp_path, capsys):
    (tmp_path / "logs").mkdir()
    assert main(["export", str(tmp_path / "logs"), "--csv", str(tmp_path / "out")]) == 2
    assert "tuiloss:" in capsys.readouterr().err

