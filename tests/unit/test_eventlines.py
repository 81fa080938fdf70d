"""Checkpoint saves and fp16 overflows in text logs, kept as events at the step reached."""

from __future__ import annotations

import numpy as np
import pytest

from tuiloss.core.analysis.events import CHECKPOINT_SERIES, OVERFLOW_SERIES
from tuiloss.core.formats.eventlines import event_lines
from tuiloss.core.formats.stdout import TextParser

SAVES = [
    "Saving model checkpoint to output/run-7/checkpoint-200\n",  # Hugging Face Trainer
    " saving checkpoint at iteration    1000 to checkpoints/gpt2\n",  # Megatron
    "[2023-07-24 13:21:33,261] [INFO] [logging.py:96:log_dist] [Rank 0] [Torch] Checkpoint global_step10 is about to be saved!\n",
    "[2022-04-08 18:58:04,038][fairseq.trainer][INFO] - Saving checkpoint to checkpoints/checkpoint_best.pt\n",
    "[2024-05-08 04:06:28,465 INFO] Saving checkpoint run/model_step_200.pt\n",  # OpenNMT
    "2021-12-08 00:37:25,092 - mmdet - INFO - Saving checkpoint at 5 epochs\n",
    "2025-12-12 11:37:18.641\thost:0\tolmo.train:1304\tINFO\tSaving unsharded checkpoint...\n",
    "Epoch 0, global step 874: 'val_loss' reached 0.09610 (best 0.09610), saving model to '/ckpt/best.ckpt' as top 1\n",
]
NOT_SAVES = [
    "  save_checkpoint ................................ True\n",
    "not saving checkpoint at iteration 5 with miou 0.3\n",
    "[2022-04-08 18:58:04,037][fairseq.checkpoint_utils][INFO] - Preparing to save checkpoint for epoch 1 @ 479 updates\n",
    "Loading checkpoint shards: 100%|##########| 2/2\n",
    "  checkpoint_activations .......................... False\n",
]


@pytest.mark.parametrize("line", SAVES)
def test_checkpoint_lines_of_the_common_trainers(line):
    assert [(series, value) for _, series, value in event_lines(line)] == [(CHECKPOINT_SERIES, 1.0)]


@pytest.mark.parametrize("line", NOT_SAVES)
def test_lines_that_are_no_save(line):
    assert event_lines(line) == []


def test_deepspeed_overflow_lines_give_the_new_scale():
    found = event_lines(
        "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 4294967296, reducing to 2147483648\n"
        "[INFO] [logging.py:96:log_dist] [Rank 0] Overflow detected. Skipping step. Attempted loss scale: 65536, reducing to 32768.0\n"
        " [deepscale] OVERFLOW! Rank 0 Skipping step.\n")
    assert [series for _, series, _ in found] == [OVERFLOW_SERIES] * 3
    assert [v for _, _, v in found][:2] == [2147483648.0, 32768.0] and np.isnan(found[2][2])


LOG = (b"iter 10: loss 2.50, time 12.0ms\n"
       b"iter 20: loss 2.40, time 12.0ms\n"
       b"saving checkpoint to out/ckpt.pt\n"
       b"iter 30: loss 2.30, time 12.0ms\n"
       b"[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, reducing to 32768\n"
       b"iter 40: loss 2.20, time 12.0ms\n"
       b"Saving model checkpoint to out/checkpoint-40\n")


def test_events_are_kept_at_the_step_the_log_had_reached_and_points_are_unchanged():
    batch = TextParser().feed(LOG, 1)
    assert batch.series[CHECKPOINT_SERIES][0].tolist() == [20.0, 40.0]
    assert batch.series[OVERFLOW_SERIES][0].tolist() == [30.0]
    assert batch.series[OVERFLOW_SERIES][1].tolist() == [32768.0]
    assert batch.unmatched == 3  # the event lines stay other text: the events are derived from them
    # The same log without its event lines gives the same points.
    plain = b"".join(line + b"\n" for line in LOG.split(b"\n") if line.startswith(b"iter"))
    other = TextParser().feed(plain, 1)
    for name in ("loss", "time"):
        assert batch.series[name][0].tolist() == other.series[name][0].tolist()
        assert batch.series[name][1].tolist() == other.series[name][1].tolist()
    assert [g.metrics for g in batch.groups] == [g.metrics for g in other.groups]


def test_events_split_over_chunks_and_before_any_point():
    parser = TextParser()
    first = parser.feed(b"Saving model checkpoint to out/checkpoint-0\niter 10: loss 2.5\n", 1)
    assert CHECKPOINT_SERIES not in first.series  # no step reached yet: nowhere to put it
    assert first.unmatched == 1  # other text, as every event line
    second = parser.feed(b"iter 20: loss 2.4\nSaving model checkpoint to out/checkpoint-20\n", 3)
    assert second.series[CHECKPOINT_SERIES][0].tolist() == [20.0]
    third = parser.feed(b"Saving model checkpoint to out/checkpoint-20b\n", 5)
    assert third.series[CHECKPOINT_SERIES][0].tolist() == [20.0]
    parser.restart()
    assert parser.reached is None


@pytest.mark.parametrize("folder, first", [
    ("opennmt/morph_inflection_lstm", [200.0, 400.0, 600.0, 800.0, 1000.0]),  # "Saving checkpoint run/model_step_N.pt"
    ("hf_stdout/lmsys_gemma2_lora_killed", None),  # "Saving model checkpoint to .../checkpoint-200", on an epoch axis
])
def test_real_logs_checkpoint_saves(real_logs, folder, first):
    from tuiloss.core.engine import load

    store, _, _ = load([str(real_logs / folder)])
    runs = [run for run in store if CHECKPOINT_SERIES in run.series]
    assert len(runs) == 1
    steps, _ = runs[0].series[CHECKPOINT_SERIES].visible()
    if first is not None:
        assert steps.tolist()[:5] == first
    else:  # the one save is placed on the run's own (epoch) axis, inside its range
        loss_steps, _ = runs[0].series[runs[0].primary_metric].visible()
        assert len(steps) == 1 and loss_steps[0] <= steps[0] <= loss_steps[-1]


def test_real_mmdet_text_log_saves_once_an_epoch(real_logs):
    from tuiloss.core.engine import load

    store, _, _ = load([str(real_logs / "mmdet/faster_rcnn_lrx10_nan_then_resume/20211207_135738.log")])
    (run,) = list(store)
    steps, _ = run.series[CHECKPOINT_SERIES].visible()
    assert steps.tolist()[:4] == [3750.0, 7500.0, 11250.0, 15000.0]  # global iteration (epoch - 1) * 3750 + 3750


def test_real_deepspeed_chat_overflows_match_its_skipped_count(real_logs):
    from tuiloss.core.engine import load

    store, _, _ = load([str(real_logs / "deepspeed/dschat_step1_sft_opt1.3b")])
    (run,) = list(store)
    steps, scales = run.series["_overflow"].visible()
    skipped = run.series["skipped"].visible()[1]
    # The log counts 139 skips at its end, 6 of them before its first step line: after the
    # evaluation at step 0 (its first ppl line), so at step 0.
    assert (skipped[0], skipped[-1]) == (6.0, 139.0)
    assert len(steps) == 139 and steps[:7].tolist() == [0.0] * 6 + [500.0]
    assert np.nanmin(scales) < 65536.0  # "reducing to ..." read where said (a hysteresis line says none)
