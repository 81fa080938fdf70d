"""What the parsers read from the real logs in ../shared/real_logs: formats, keys, steps, points.

Each file is found and read the way the viewer reads it (discovery picks the
format, a source reads the file in pieces); skipped when the folder is absent.
The counts are the ones the folder's README states or that the files hold.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from tuiloss.core.discover import discover
from tuiloss.core.model import Batch
from tuiloss.core.sources import make_source


def read(path, max_read=None):
    """``(format, batch)`` of a real log, read through its source in reads of ``max_read`` bytes."""
    (spec,) = discover([str(path)]).runs
    source = make_source(spec)
    if max_read is not None:
        source.tailer.max_read = max_read
    out = Batch()
    for _ in range(10_000):
        items, more = source.read()
        for item in items:
            if isinstance(item, Batch):
                out.merge(item)
        if not more:
            break
    return spec.format, out


def steps(batch, name):
    return batch.series[name][0].tolist()


def values(batch, name):
    return batch.series[name][1].tolist()


def test_fairseq_hydra_json_lines(real_logs):
    fmt, batch = read(real_logs / "fairseq" / "wav2vec2_pretrain_hydra_json" / "hydra_train.log")
    assert fmt == "text"
    assert steps(batch, "loss") == [float(n) for n in range(200, 4601, 200)]  # num_updates, not epoch
    assert values(batch, "loss")[0] == 9.276 and values(batch, "loss")[-1] == 3.922
    assert len(steps(batch, "valid_loss")) == 10
    assert values(batch, "valid_loss")[0] == 6.389 and min(values(batch, "valid_loss")) == 3.792
    assert steps(batch, "valid_loss")[-1] == 4791
    assert values(batch, "loss_scale")[:3] == [128, 256, 64]
    assert not {"epoch", "num_updates", "valid_num_updates", "log_interval"} & set(batch.series)


def test_hf_stdout_dicts_glued_to_tqdm_bars(real_logs):
    fmt, batch = read(real_logs / "hf_stdout" / "lmsys_gemma2_lora_killed" / "train.log", max_read=256 * 1024)
    assert fmt == "text"
    loss = values(batch, "loss")
    assert len(loss) == 24 and loss[0] == 12.4476 and max(loss) == 12.4476 and loss[-1] == 0.488
    assert values(batch, "eval_loss") == [0.516632080078125] and steps(batch, "eval_loss") == [0.05]
    assert steps(batch, "loss") == sorted(steps(batch, "loss"))  # file order, at rounded epochs
    assert batch.meta["coarse_steps"] is True
    assert not {"min_num_params", "split_batches"} & set(batch.series)


@pytest.mark.parametrize("name", ["20211207_135738.log", "20211207_135738.log.json"])
def test_mmdet_run_one_global_iterations_and_nan_onset(real_logs, name):
    fmt, batch = read(real_logs / "mmdet" / "faster_rcnn_lrx10_nan_then_resume" / name)
    assert fmt == ("jsonl" if name.endswith(".json") else "text")
    at, loss = np.array(steps(batch, "loss")), np.array(values(batch, "loss"))
    assert len(at) == 750 and (np.diff(at) > 0).all()  # iter restarts every epoch: no resets
    assert at[0] == 50 and at[-1] == 10 * 3750
    nan = np.isnan(loss)
    assert nan.sum() == 355 and at[np.argmax(nan)] == 5 * 3750 + 1050 == 19800 and nan[np.argmax(nan) :].all()
    assert math.isclose(loss[0], 0.826, abs_tol=5e-4)
    assert math.isclose(np.nanmin(loss), 0.492, abs_tol=5e-4) and at[np.nanargmin(loss)] == 14550
    assert steps(batch, "val/bbox_mAP") == [3750.0 * k for k in range(1, 6)]
    assert "eta" not in batch.series and "epoch" not in batch.series


@pytest.mark.parametrize("name", ["20211207_235354.log", "20211207_235354.log.json"])
def test_mmdet_resume_continues_the_global_count(real_logs, name):
    _, batch = read(real_logs / "mmdet" / "faster_rcnn_lrx10_nan_then_resume" / name)
    at, loss = steps(batch, "loss"), values(batch, "loss")
    assert len(at) == 600 and at[0] == 4 * 3750 + 50 and at[-1] == 12 * 3750
    assert math.isclose(loss[0], 0.503, abs_tol=5e-4) and math.isclose(loss[-1], 0.478, abs_tol=5e-4)
    assert len(steps(batch, "val/bbox_mAP")) == 8


@pytest.mark.parametrize(
    "name, epochs, first_loss, val_spikes",
    [
        ("training_log.txt", 26, 0.3650, {5: 3.31, 9: 7.33, 10: 9.38}),
        ("logs/training.txt", 40, None, {9: 6.16, 10: 5.87}),
    ],
)
def test_keras3_stdout_epoch_end_lines(real_logs, name, epochs, first_loss, val_spikes):
    fmt, batch = read(real_logs / "keras_stdout" / "keras3_road_surface_cnn" / name)
    assert fmt == "text"
    assert steps(batch, "loss") == [float(e) for e in range(1, epochs + 1)]  # one value per epoch
    assert steps(batch, "val_loss") == steps(batch, "loss")
    if first_loss is not None:
        assert values(batch, "loss")[0] == first_loss  # the epoch-end line, not the pre-validation bar
    val = dict(zip(steps(batch, "val_loss"), values(batch, "val_loss")))
    for epoch, value in val_spikes.items():
        assert math.isclose(val[epoch], value, abs_tol=0.01)
    assert {"accuracy", "val_accuracy", "precision", "recall"} <= set(batch.series)


def test_opennmt_steps_and_validation(real_logs):
    fmt, batch = read(real_logs / "opennmt" / "morph_inflection_lstm" / "train.log")
    assert fmt == "text"
    assert set(batch.series) == {"acc", "ppl", "xent", "lr", "Validation perplexity", "Validation accuracy",
                                 "_checkpoint"}  # its "Saving checkpoint run/model_step_N.pt" lines, as events
    assert steps(batch, "xent") == [float(n) for n in range(50, 1601, 50)]
    assert values(batch, "xent")[0] == 3.29 and values(batch, "xent")[-1] == 0.05
    ppl = values(batch, "Validation perplexity")
    assert len(ppl) == 8 and ppl[0] == 5.45281 and math.isclose(min(ppl), 1.047, abs_tol=5e-4) and math.isclose(ppl[-1], 1.100, abs_tol=5e-4)
    assert batch.meta["planned_steps"] == 100000


def test_deepspeed_chat_step_and_ppl_lines(real_logs):
    fmt, batch = read(real_logs / "deepspeed" / "dschat_step1_sft_opt1.3b" / "opt-1.3b-globalBatchSize128.log")
    assert fmt == "text"
    assert set(batch.series) == {"ppl", "skipped", "lr", "RunningAvgSamplesPerSec", "CurrSamplesPerSec", "MemAllocated", "MaxMemAllocated",
                                 "_overflow"}  # its "OVERFLOW! ... Skipping step" lines, as events
    assert steps(batch, "skipped")[0] == 10 and steps(batch, "skipped")[-1] == 7360
    assert values(batch, "skipped")[0] == 6 and values(batch, "skipped")[-1] == 139
    assert steps(batch, "CurrSamplesPerSec") == steps(batch, "skipped")  # global_step, not the epoch
    ppl = values(batch, "ppl")
    assert len(ppl) == 17 and ppl[0] == 4998.29638671875 and steps(batch, "ppl")[0] == 0
    assert math.isclose(min(ppl), 1.803, abs_tol=5e-4) and math.isclose(ppl[-1], 1.809, abs_tol=5e-4)


@pytest.mark.parametrize(
    "folder, family_metric, count",
    [
        ("plain_text/build_nanogpt_nowarmup_stdout", "loss", None),
        ("plain_text/llmc_gpt2_124m_modded_nanogpt", "trl", None),
        ("plain_text/megatron_deepspeed_moe_gpt3_125m", "lm loss", 213),
        ("plain_text/olmo1b_continue_pretrain_killed", "train/CrossEntropyLoss", None),
    ],
)
def test_the_older_text_families_still_read_their_logs(real_logs, folder, family_metric, count):
    path = next(p for p in (real_logs / folder).iterdir() if p.name != "SOURCE.md")
    _, batch = read(path)
    at = steps(batch, family_metric)
    assert len(at) > 100 and at == sorted(at)
    if count is not None:
        assert len(at) == count


@pytest.mark.parametrize(
    "path, planned, last_step, metric",
    [
        ("fairseq/wav2vec2_pretrain_hydra_json/hydra_train.log", 400000, 4600, "loss"),  # stopped early
        ("opennmt/morph_inflection_lstm/train.log", 100000, 1600, "xent"),
        ("plain_text/olmo1b_continue_pretrain_killed/training.log", 15000, None, "train/CrossEntropyLoss"),
        ("hf_trainer_state/whisper_large_v2_ja_overfit/trainer_state.json", 5000, 5000, "loss"),
    ],
)
def test_the_planned_total_is_carried_in_batch_meta(real_logs, path, planned, last_step, metric):
    _, batch = read(real_logs / path)
    assert batch.meta["planned_steps"] == planned
    if last_step is not None:
        assert steps(batch, metric)[-1] == last_step


def test_megatron_planned_iterations(real_logs):
    folder = real_logs / "plain_text" / "megatron_deepspeed_moe_gpt3_125m"
    _, batch = read(next(p for p in folder.iterdir() if p.name != "SOURCE.md"))
    assert 1.7e6 <= batch.meta["planned_steps"] < 1.8e6 and steps(batch, "lm loss")[-1] == 2130


@pytest.mark.parametrize("name", ["20211207_135738.log", "20211207_135738.log.json", "20211207_235354.log", "20211207_235354.log.json"])
def test_mmdet_planned_total_from_max_epochs(real_logs, name):
    _, batch = read(real_logs / "mmdet" / "faster_rcnn_lrx10_nan_then_resume" / name)
    assert batch.meta["planned_epochs"] == 12
    assert batch.meta["planned_steps"] == 12 * 3750  # run 1 stops at 37500, the resume finishes at 45000


def test_keras_planned_epochs(real_logs):
    _, batch = read(real_logs / "keras_stdout" / "keras3_road_surface_cnn" / "training_log.txt")
    assert batch.meta["planned_steps"] == 40 and steps(batch, "loss")[-1] == 26  # early stopping at 26 of 40
