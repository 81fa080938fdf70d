"""Run states on real logs (../shared/real_logs, skipped when absent) and on a fresh copy of the sample:
what the log says, not its age (a copy gives every file the copy's time)."""

import json
import os
import time

import pytest

from tuiloss.core.engine import load
from tuiloss.core.report import build_report, render_text, report_json


def states(folder, now=None):
    report = build_report(load([str(folder)])[0], now=now)
    return {run.source: run.state for run in report.runs}, report


@pytest.mark.parametrize(
    "folder, state, reason",
    [
        ("hf_stdout/lmsys_gemma2_lora_killed", "killed", "KeyboardInterrupt"),
        ("plain_text/olmo1b_continue_pretrain_killed", "killed", "SIGTERM"),
        ("plain_text/megatron_deepspeed_moe_gpt3_125m", "killed", "SIGTERM"),  # the launcher's SIGTERM, at 2130 of 1.7M
        ("opennmt/morph_inflection_lstm", "finished", "early stopping"),
        ("deepspeed/dschat_step1_sft_opt1.3b", "finished", "the trainer's final summary"),
    ],
)
def test_real_logs_say_how_they_ended(real_logs, folder, state, reason):
    found, report = states(real_logs / folder)
    assert {(s.state, s.reason) for s in found.values()} == {(state, reason)}
    if state == "killed":
        text = render_text(report)
        assert f"killed ({reason}) after step" in text


def test_keras_early_stopping_and_a_completed_run(real_logs):
    found, _ = states(real_logs / "keras_stdout" / "keras3_road_surface_cnn")
    by_file = {source.rsplit("/", 1)[-1]: (s.state, s.reason) for source, s in found.items()}
    assert by_file["training_log.txt"] == ("finished", "early stopping")  # at epoch 26 of 40
    assert by_file["training.txt"][0] == "finished"  # all 40 epochs, then "Training completed!"


def test_a_copied_log_that_stopped_long_ago_is_stopped_by_its_own_clock(real_logs):
    # fairseq stops at 4791 of 400000 planned updates, its last line stamped 2022-04-08; the
    # copy is minutes old, but the log says when it last printed
    found, report = states(real_logs / "fairseq" / "wav2vec2_pretrain_hydra_json")
    [state] = found.values()
    assert state.state == "stopped" and "its last line printed" in state.reason
    assert "stopped" in render_text(report)


def test_a_run_short_of_its_plan_with_no_end_marker_is_not_finished(real_logs):
    # fairseq stops at 4791 of 400000 planned updates; whisper's trainer_state plans 5000 steps and has them
    for folder in ("fairseq/wav2vec2_pretrain_hydra_json",):
        found, _ = states(real_logs / folder, now=time.time() + 86400)
        assert {s.state for s in found.values()} == {"stopped"}
    found, _ = states(real_logs / "hf_trainer_state" / "whisper_large_v2_ja_overfit", now=time.time() + 86400)
    assert {s.state for s in found.values()} == {"finished"}


def test_a_fresh_copy_of_the_sample_is_finished(sample_logs):
    now = time.time()
    for path in sample_logs.rglob("*"):
        os.utime(path, (now, now))  # as a git clone leaves them
    found, report = states(sample_logs, now=now + 120)
    assert {s.state for s in found.values()} == {"finished"}
    runs = json.loads(json.dumps(report_json(report)))["runs"]
    assert {run["state"] for run in runs} == {"finished"}
    assert all(run["state_reason"] == "reached its planned 100.0K steps" for run in runs)
