"""What a log says of its step axis reaches the user, and the detectors read it right: a step
written many times is one x (its median), a rounded-epoch axis keeps line order and is said to be
coarse, a planned total gives progress, lines still held are said (issue 12, item 1)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tuiloss.core.engine import Options, load
from tuiloss.core.report import build_report, per_step_median, render_markdown, render_text, report_json


def report_of(path, **options):
    store, _, _ = load([str(path)], Options(**options))
    report = build_report(store)
    return report, report_json(report)


def _batches_at_each_epoch(epochs: int = 30, per_epoch: int = 40, seed: int = 1) -> list[tuple[int, float]]:
    """Ultralytics-like: every batch loss of an epoch written at step = epoch. The first batch of
    each epoch is high, and one batch in epoch 14 is 6x its neighbours: spread within a step."""
    rng = np.random.default_rng(seed)
    level = np.geomspace(3.0, 0.8, epochs)
    out = []
    for epoch in range(epochs):
        values = level[epoch] * rng.lognormal(0.0, 0.05, per_epoch)
        values[0] *= 2.5
        if epoch == 14:
            values[17] *= 6.0
        out += [(epoch, float(v)) for v in values]
    return out


def test_many_values_at_one_step_are_one_x_analysed_as_their_median(tmp_path):
    rows = _batches_at_each_epoch()
    path = tmp_path / "yolo" / "metrics.jsonl"
    path.parent.mkdir()
    path.write_text("".join(json.dumps({"epoch": e, "train/box_loss": v}) + "\n" for e, v in rows))
    report, data = report_of(path)
    m = report.runs[0].primary
    assert m.points == 1200 and m.distinct_steps == 30 and m.values_per_step == 40
    assert not m.coarse_steps and not any(a.kind == "spike" for a in m.anomalies)
    assert m.first == pytest.approx(rows[0][1]) and m.final == pytest.approx(rows[-1][1])  # as written
    text = render_text(report)
    assert "40 values per step (1,200 points on 30 steps), analysed as their median" in text
    assert "coarse step axis" not in text
    assert data["runs"][0]["metrics"]["train/box_loss"]["values_per_step"] == 40


def test_read_as_written_the_spread_within_one_step_would_be_called_a_spike():
    # the control: the detectors over the very points, each epoch's values read one by one
    from tuiloss.core.analysis.metrics import Direction
    from tuiloss.core.report import analyze

    rows = _batches_at_each_epoch()
    steps, values = np.array([e for e, _ in rows], dtype=float), np.array([v for _, v in rows])
    raw = analyze(steps, values, (), is_eval=False, direction=Direction.LOWER)
    assert any(a.kind == "spike" for a in raw.anomalies)
    medians = analyze(*per_step_median(steps, values), (), is_eval=False, direction=Direction.LOWER)
    assert not any(a.kind == "spike" for a in medians.anomalies)


def test_a_rounded_epoch_axis_keeps_line_order_and_is_said_to_be_coarse(tmp_path):
    # HF Trainer stdout: the only axis is the epoch, rounded to 2 decimals
    lines = []
    for k in range(1, 41):
        loss = 12.0 * 0.93**k
        lines.append(f"{{'loss': {loss:.4f}, 'grad_norm': 1.5, 'learning_rate': 7e-05, 'epoch': {k * 0.0042:.2f}}}\n")
    path = tmp_path / "lora" / "train.log"
    path.parent.mkdir()
    path.write_text("".join(lines))
    report, data = report_of(path)
    run = report.runs[0]
    m = run.primary
    assert run.axis.coarse and m.values_per_step == 0 and m.points == 40
    assert m.first == pytest.approx(12.0 * 0.93) and m.final == pytest.approx(12.0 * 0.93**40, abs=1e-4)
    assert f"coarse step axis: 40 points on {m.distinct_steps} distinct steps, kept in line order" in render_text(report)
    assert data["runs"][0]["axis"]["coarse"] is True


def test_a_planned_total_gives_the_progress_in_text_markdown_and_json(tmp_path):
    lines = "".join(f"[2024-01-01 10:00:00,000 INFO] Step {k * 50}/100000; acc: {12 + k:.2f}; ppl: {30 / k:.2f}; "
                    f"xent: {3.3 / k:.3f}; lr: 1.00e+00; 4352/5120 tok/s;\n" for k in range(1, 33))
    path = tmp_path / "nmt" / "train.log"
    path.parent.mkdir()
    path.write_text(lines)
    report, data = report_of(path)
    assert "at step 1.6K of 100.0K planned (2%)" in render_text(report)
    assert "at step 1.6K of 100.0K planned \\(2%\\)" in render_markdown(report)  # escaped, not rendered
    axis = data["runs"][0]["axis"]
    assert axis["planned_steps"] == 100000 and axis["progress"] == pytest.approx(0.016)
    # re-keyed on another metric (--step), the planned total is not this axis'
    keyed, data = report_of(path, step="acc")
    assert data["runs"][0]["axis"]["planned_steps"] is None and "planned" not in render_text(keyed)


def test_lines_waiting_for_the_epoch_s_length_are_said_until_placed(tmp_path):
    # mmdetection resumed at epoch 5: the iterations per epoch are known only when epoch 6 starts
    path = tmp_path / "resume" / "20211207.log.json"
    path.parent.mkdir()
    rows = [{"mode": "train", "epoch": 5, "iter": it, "lr": 0.02, "loss": 1.0 - it / 2000} for it in range(50, 1001, 50)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    report, data = report_of(path)
    assert data["runs"][0]["axis"]["held_lines"] == 20
    assert "20 lines not placed yet" in render_text(report)
    with open(path, "a") as handle:
        handle.write(json.dumps({"mode": "train", "epoch": 6, "iter": 50, "lr": 0.02, "loss": 0.5}) + "\n")
    report, data = report_of(path)
    assert data["runs"][0]["axis"]["held_lines"] == 0 and report.runs[0].primary.points == 21
    assert "not placed yet" not in render_text(report)


def test_per_step_median_is_one_written_value_per_step_and_nan_wins_only_a_majority():
    steps = np.array([1.0, 1, 1, 2, 2, 2, 2, 3, 3, 3])
    values = np.array([5.0, 1, 3, 4, np.nan, 2, 8, np.nan, np.nan, 1])
    at, medians = per_step_median(steps, values)
    assert at.tolist() == [1, 2, 3]
    assert medians[0] == 3 and medians[1] == 4 and np.isnan(medians[2])
    empty = np.array([])
    assert [len(a) for a in per_step_median(empty, empty)] == [0, 0]


# -- real logs (facts from ../shared/real_logs/README.md) -------------------------------------------


@pytest.mark.parametrize("folder, said", [
    ("plain_text/megatron_deepspeed_moe_gpt3_125m", "at step 2.1K of 1.7M planned"),  # stops at 2130 of 1.7M
    ("fairseq/wav2vec2_pretrain_hydra_json", "at step 4.6K of 400.0K planned (1%)"),  # 4791 of 400000 updates
    ("opennmt/morph_inflection_lstm", "at step 1.6K of 100.0K planned (2%)"),  # step 1600 of 100000
    ("plain_text/olmo1b_continue_pretrain_killed", "of 15.0K planned"),  # step=N/15000
])
def test_real_logs_say_how_far_of_their_plan_they_got(real_logs, folder, said):
    report, _ = report_of(real_logs / folder)
    assert said in render_text(report)


def test_real_hf_stdout_says_its_rounded_epoch_axis_is_coarse(real_logs):
    report, data = report_of(real_logs / "hf_stdout/lmsys_gemma2_lora_killed")
    (run,) = report.runs
    assert run.axis.coarse and run.primary.values_per_step == 0 and run.primary.points == 24
    assert "coarse step axis: 24 points" in render_text(report)
    assert "planned" not in render_text(report)  # the checkpoint-loading bar's 4/4 is no plan
    assert "Loading checkpoint shards" not in run.metrics  # nor its percentage a metric


def test_a_progress_bar_s_head_is_neither_a_metric_nor_a_plan(tmp_path):
    # a model loading before training: tqdm's ``desc:  NN%|bar| n/total [...]``, redrawn with \r
    bar = "".join(f"Loading checkpoint shards: {25 * k:3d}%|{'#' * k:<4}| {k}/4 [00:0{k}<00:00,  1.13s/it]\r"
                  for k in range(5))
    dicts = "".join(f"{{'loss': {2.0 / k:.4f}, 'learning_rate': 7e-05, 'epoch': {k}}}\n" for k in range(1, 9))
    path = tmp_path / "lora" / "train.log"
    path.parent.mkdir()
    path.write_text(bar + "\n" + dicts)
    report, data = report_of(path)
    (run,) = report.runs
    assert set(run.metrics) == {"loss", "learning_rate"} and run.primary.points == 8
    assert data["runs"][0]["axis"]["planned_steps"] is None


def test_a_total_the_run_went_past_is_no_plan_of_its_axis(tmp_path):
    path = tmp_path / "r" / "metrics.jsonl"
    path.parent.mkdir()
    path.write_text("".join(json.dumps({"step": k * 100, "loss": 2.0 / k}) + "\n" for k in range(1, 21)))
    store, _, _ = load([str(path)])
    (log,) = store.runs.values()
    log.meta["planned_steps"] = 4.0  # another counter's total
    report = build_report(store)
    assert "planned" not in render_text(report) and report_json(report)["runs"][0]["axis"]["progress"] is None
    log.meta["planned_steps"] = 4000.0
    assert "at step 2.0K of 4.0K planned (50%)" in render_text(build_report(store))
