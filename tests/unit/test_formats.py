"""Each format parses as the real tools write it."""

import math
import os

import numpy as np
import pytest

from tuiloss.core.formats.csv import CsvParser
from tuiloss.core.formats.hf_trainer import TrainerStateParser
from tuiloss.core.formats.jsonl import JsonlParser
from tuiloss.core.formats.stdout import PatternParser, TextParser


def pts(batch, metric):
    steps, values = batch.series[metric]
    return list(zip(steps.tolist(), values.tolist()))


# -- CSV -------------------------------------------------------------------------

LIGHTNING = b"""epoch,step,train_loss_step,val_loss,train_loss_epoch
0,49,2.5,,
0,99,2.1,,
0,99,,2.3,
0,99,,,2.2
1,149,1.9,,
"""


def test_lightning_sparse_rows_become_separate_series():
    batch = CsvParser().feed(LIGHTNING, 1)
    assert pts(batch, "train_loss_step") == [(49, 2.5), (99, 2.1), (149, 1.9)]
    assert pts(batch, "val_loss") == [(99, 2.3)]
    assert pts(batch, "train_loss_epoch") == [(99, 2.2)]
    assert pts(batch, "epoch") == [(49, 0), (99, 0), (99, 0), (99, 0), (149, 1)]
    assert not batch.skipped


def test_yolo_padded_headers_and_values():
    data = (
        b"                  epoch,         train/box_loss,         train/cls_loss,   metrics/mAP50(B)\n"
        b"                      1,                 1.2345,                 2.3456,            0.1\n"
        b"                      2,                 1.1000,                 2.1000,            0.2\n"
    )
    batch = CsvParser().feed(data, 1)
    assert pts(batch, "train/box_loss") == [(1, 1.2345), (2, 1.1)]
    assert pts(batch, "metrics/mAP50(B)") == [(1, 0.1), (2, 0.2)]


def test_keras_csvlogger_uses_epoch_as_step():
    data = b"epoch,loss,val_loss,lr\n0,0.5,0.6,0.001\n1,0.4,0.5,0.001\n"
    batch = CsvParser().feed(data, 1)
    assert pts(batch, "loss") == [(0, 0.5), (1, 0.4)]
    assert "epoch" not in batch.series


def test_no_step_column_uses_row_number_across_chunks():
    parser = CsvParser()
    first = parser.feed(b"loss,acc\n0.9,0.1\n0.8,0.2\n", 1)
    second = parser.feed(b"0.7,0.3\n", 4)
    assert pts(first, "loss") == [(0, 0.9), (1, 0.8)]
    assert pts(second, "loss") == [(2, 0.7)]


def test_tsv_is_detected_from_the_header():
    batch = CsvParser().feed(b"step\tloss\n1\t0.5\n2\t0.4\n", 1)
    assert pts(batch, "loss") == [(1, 0.5), (2, 0.4)]


def test_csv_bad_rows_are_counted_by_reason_and_nan_is_kept():
    data = b"step,loss\n1,0.5\n2,nan\n3,abc\nstep,loss\n4,0.3,extra\n5,inf\n,0.1\n"
    batch = CsvParser().feed(data, 1)
    steps, values = batch.series["loss"]
    assert steps.tolist() == [1, 2, 5]
    assert values[0] == 0.5 and math.isnan(values[1]) and math.isinf(values[2])
    assert batch.skipped == {
        "non-numeric value": 1,
        "repeated header": 1,
        "wrong number of fields": 1,
        "missing step": 1,
    }


# -- JSON lines -------------------------------------------------------------------

def test_detectron2_metrics_json_nested_and_eval_lines():
    data = (
        b'{"data_time": 0.01, "eta_seconds": 100.0, "iteration": 19, "loss_box_reg": 0.3, "lr": 0.0002, "total_loss": 1.9}\n'
        b'{"bbox": {"AP": 10.5, "AP50": 20.1}, "iteration": 39}\n'
    )
    batch = JsonlParser().feed(data, 1)
    assert pts(batch, "total_loss") == [(19, 1.9)]
    assert pts(batch, "bbox/AP") == [(39, 10.5)]


def test_mmengine_val_lines_keep_their_own_series():
    data = (
        b'{"lr": 0.1, "data_time": 0.01, "loss": 2.3, "time": 0.2, "epoch": 1, "iter": 10, "memory": 100, "step": 10}\n'
        b'{"accuracy/top1": 40.0, "data_time": 0.02, "time": 0.1, "step": 1}\n'
        b'{"lr": 0.1, "data_time": 0.01, "loss": 2.1, "time": 0.2, "epoch": 1, "iter": 20, "memory": 100, "step": 20}\n'
    )
    batch = JsonlParser().feed(data, 1)
    assert pts(batch, "loss") == [(10, 2.3), (20, 2.1)]
    assert pts(batch, "accuracy/top1") == [(1, 40.0)]


def test_python_json_nan_and_infinity_are_kept():
    batch = JsonlParser().feed(b'{"step": 1, "loss": NaN}\n{"step": 2, "loss": Infinity}\n', 1)
    steps, values = batch.series["loss"]
    assert steps.tolist() == [1, 2] and math.isnan(values[0]) and values[1] == math.inf


def test_jsonl_bad_lines_are_counted():
    data = b'{"step": 1, "loss": 0.5}\n{"step": 2, "loss": 0.4\n[1, 2]\n{"note": "hi"}\n\n'
    batch = JsonlParser().feed(data, 1)
    assert pts(batch, "loss") == [(1, 0.5)]
    assert batch.skipped == {"invalid JSON": 1, "not a JSON object": 1, "missing step": 1}
    assert batch.examples[0].line == 2


def test_llama_factory_current_steps_and_null_reward():
    line = b'{"current_steps": 10, "total_steps": 100, "loss": 3.9862, "reward": null, "learning_rate": 5e-05, "epoch": 0.02, "elapsed_time": "0:00:28"}\n'
    batch = JsonlParser().feed(line, 1)
    assert pts(batch, "loss") == [(10, 3.9862)]
    assert "reward" not in batch.series and "elapsed_time" not in batch.series


# -- trainer_state.json -----------------------------------------------------------

def state(entries):
    import json

    return json.dumps({"global_step": 0, "log_history": entries}).encode()


def test_a_row_with_an_unbalanced_quote_and_a_trailing_delimiter_is_read_not_raised():
    """The quote is read as text on both reads a row with one field too many takes (the second
    drops its empty last field): it opened a string to the end of the chunk on the second."""
    parser = CsvParser()
    parser.feed(b"epoch,step,train_loss,val_loss,lr\n", 1)
    batch = parser.feed(b'"0,0,100,,0.6123,\n', 2)
    assert pts(batch, "train_loss") == [(0, 100.0)] and pts(batch, "lr") == [(0, 0.6123)]


def test_trainer_state_takes_only_new_entries_on_rewrite():
    parser = TrainerStateParser()
    first = [{"epoch": 0.1, "loss": 1.0, "step": 10}, {"epoch": 0.2, "loss": 0.9, "step": 20}]
    batch, rewritten = parser.parse(state(first))
    assert pts(batch, "loss") == [(10, 1.0), (20, 0.9)] and not rewritten
    second = first + [{"epoch": 0.3, "eval_loss": 0.95, "step": 30}, {"epoch": 0.3, "loss": 0.8, "step": 30}]
    batch, rewritten = parser.parse(state(second))
    assert pts(batch, "loss") == [(30, 0.8)] and pts(batch, "eval_loss") == [(30, 0.95)]
    assert not rewritten


def test_trainer_state_restarted_from_checkpoint_is_a_rewrite():
    parser = TrainerStateParser()
    parser.parse(state([{"loss": 1.0, "step": 10}, {"loss": 0.9, "step": 20}]))
    batch, rewritten = parser.parse(state([{"loss": 1.0, "step": 10}, {"loss": 0.95, "step": 20}]))
    assert rewritten and pts(batch, "loss") == [(20, 0.95)]


def test_trainer_states_final_summary_says_the_run_finished(tmp_path):
    """``train()`` logs a summary (runtime, throughput, mean loss) when it returns: the run finished,
    even short of its planned steps; evaluations may follow it, a resumed training may not."""
    from tuiloss.core.engine import load
    from tuiloss.core.report import build_report

    logs = [{"loss": 1.39 + 0.01 * (k % 3), "learning_rate": 1e-5, "step": 50 * k} for k in range(1, 63)]
    summary = {"step": 3140, "train_loss": 1.39, "train_runtime": 12359.4, "total_flos": 5.3e16}
    evaluation = {"eval_loss": 1.3863, "step": 3140}
    assert TrainerStateParser().parse(state(logs))[0].meta["end"] is None
    ended = TrainerStateParser().parse(state(logs + [summary, evaluation]))[0].meta["end"]
    assert (ended.kind, ended.reason) == ("finished", "the trainer's final summary") and "train_runtime" in ended.line
    resumed = logs + [summary, {"loss": 1.2, "step": 3200}]
    assert TrainerStateParser().parse(state(resumed))[0].meta["end"] is None
    (tmp_path / "run").mkdir()
    written = tmp_path / "run" / "trainer_state.json"
    written.write_bytes(json_state(logs + [summary], max_steps=3140))
    os.utime(written, (1e9, 1e9))  # long silent: without the summary it would read "stopped"
    (entry,) = build_report(load([str(tmp_path)])[0]).runs
    assert (entry.state.state, entry.state.reason) == ("finished", "the trainer's final summary")


def json_state(entries, **fields):
    import json

    return json.dumps({"global_step": 0, "log_history": entries, **fields}).encode()


def test_trainer_state_half_written_waits():
    batch, rewritten = TrainerStateParser().parse(b'{"log_history": [{"loss": 1.0, "st')
    assert batch is None


# -- text -------------------------------------------------------------------------

def test_nanogpt_iter_and_eval_lines():
    data = (
        b"number of parameters: 85.00M\n"
        b"step 0: train loss 10.9, val loss 10.95\n"
        b"iter 0: loss 10.9123, time 1234.56ms, mfu -100.00%\n"
        b"iter 10: loss 9.5, time 212.01ms, mfu 31.20%\n"
    )
    parser = TextParser()
    batch = parser.feed(data, 1)
    assert parser.family.name == "nanogpt"
    assert pts(batch, "loss") == [(0, 10.9123), (10, 9.5)]
    assert pts(batch, "val loss") == [(0, 10.95)]
    assert pts(batch, "mfu") == [(0, -100.0), (10, 31.2)]
    assert batch.unmatched == 1 and not batch.skipped


def test_llmc_pipe_lines():
    data = b"step    1/5000 | train loss 10.955010 | norm 15.3420 | lr 6.00e-04 | (19152.47 ms | 27374 tok/s)\n"
    batch = TextParser().feed(data, 1)
    assert pts(batch, "train loss") == [(1, 10.95501)]
    assert pts(batch, "lr") == [(1, 6e-4)]


def test_megatron_iteration_and_validation_lines():
    data = (
        b" iteration      100/    1000 | consumed samples:        25600 | elapsed time per iteration (ms): 473.2 |"
        b" learning rate: 3.000E-04 | global batch size:   256 | lm loss: 2.345000E+00 | loss scale: 2048.0 |"
        b" number of skipped iterations:   0 | number of nan iterations:   0 |\n"
        b" validation loss at iteration 100 | lm loss value: 9.082616E+00 | lm loss PPL: 8.800958E+03 | \n"
    )
    batch = TextParser().feed(data, 1)
    assert pts(batch, "lm loss") == [(100, 2.345)]
    assert pts(batch, "learning rate") == [(100, 3e-4)]
    assert pts(batch, "validation lm loss") == [(100, 9.082616)]


def test_hf_dict_lines_use_epoch_as_step():
    data = b"{'loss': 0.51, 'grad_norm': 1.5, 'learning_rate': 5e-05, 'epoch': 0.1}\n{'eval_loss': 0.61, 'eval_runtime': 3.2, 'epoch': 0.1}\n"
    batch = TextParser().feed(data, 1)
    assert pts(batch, "loss") == [(0.1, 0.51)] and pts(batch, "eval_loss") == [(0.1, 0.61)]


def test_keras_epoch_blocks_skip_progress_lines():
    data = (
        b"Epoch 1/2\n"
        b"  5/100 [>....] - ETA: 3s - loss: 0.9\r100/100 [=====] - 2s 20ms/step - loss: 0.41 - val_loss: 0.52\n"
        b"Epoch 2/2\n"
        b"100/100 [=====] - 2s 20ms/step - loss: 0.31 - val_loss: 0.42\n"
    )
    batch = TextParser().feed(data, 1)
    assert pts(batch, "loss") == [(1, 0.41), (2, 0.31)]
    assert pts(batch, "val_loss") == [(1, 0.52), (2, 0.42)]


def test_olmo_multiline_blocks_with_thousands_separators():
    data = (
        b"2025-12-12 11:05:05.850\thost:0\tolmo.train:979\tINFO\t[step=2/15000,epoch=0]\n"
        b"    train/CrossEntropyLoss=2.919\n"
        b"    throughput/total_tokens=4,194,304\n"
        b"2025-12-12 11:05:09.701\thost:0\tolmo.train:979\tINFO\t[step=3/15000,epoch=0]\n"
        b"    train/CrossEntropyLoss=3.022\n"
    )
    batch = TextParser().feed(data, 1)
    assert pts(batch, "train/CrossEntropyLoss") == [(2, 2.919), (3, 3.022)]
    assert pts(batch, "throughput/total_tokens") == [(2, 4194304.0)]


def test_generic_key_value_lines():
    data = b"2024 INFO step=10 loss=2.5 lr=1e-3\nsome other text\nstep: 20, loss: 2.4\n"
    batch = TextParser().feed(data, 1)
    assert pts(batch, "loss") == [(10, 2.5), (20, 2.4)]
    assert batch.unmatched == 1


def test_malformed_family_line_is_counted_apart_from_unmatched_text():
    data = b"iter 1: loss 2.0, time 1ms\niter 2: loss abc\nhello world\n"
    batch = TextParser().feed(data, 1)
    assert pts(batch, "loss") == [(1, 2.0)]
    assert batch.skipped == {"malformed line": 1}
    assert batch.unmatched == 1


def test_user_pattern_with_named_groups():
    parser = PatternParser(r"^E(?P<step>\d+) L=(?P<loss>\S+)")
    batch = parser.feed(b"E1 L=0.5\nnoise\nE2 L=oops\n", 1)
    assert pts(batch, "loss") == [(1, 0.5)]
    assert batch.skipped == {"malformed value": 1} and batch.unmatched == 1


# -- real logs ----------------------------------------------------------------------

@pytest.mark.parametrize(
    "relpath, metric, count, first, last_step",
    [
        ("plain_text/build_nanogpt_nowarmup_stdout/nanogpt-nowarmup-1816358.out", "loss", None, (0, 10.95501), None),
        ("plain_text/llmc_gpt2_124m_modded_nanogpt/main.log", "trl", None, (0, 11.0091), None),
        ("plain_text/megatron_deepspeed_moe_gpt3_125m/gpt3-0.125B-tokendropping-graduallyIncrease-lr-3.0e-4-with-kernel.log", "lm loss", 213, (10, 10.69056), 2130),
        ("plain_text/olmo1b_continue_pretrain_killed/training.log", "train/CrossEntropyLoss", 1010, None, 1010),
        ("jsonl/chatglm2_lora_trainer_log_50ep/trainer_log.jsonl", "loss", None, (10, 3.9862), None),
        ("keras_csvlogger/brats2020_unet_reduce_lr/training.log", "val_loss", None, None, None),
        ("lightning_csv/pinn_pendulum_v28_long_plateau/metrics.csv", "train_loss_epoch", 10000, (31, 230.7210693359375), None),
    ],
)
def test_real_logs_parse(real_logs, relpath, metric, count, first, last_step):
    from tuiloss.core.engine import load

    store, _, _ = load([str(real_logs / relpath)])
    (run,) = list(store)
    series = run.series[metric]
    steps, values = series.visible()
    # OLMo prints a "Pre-train system metrics" block before step 1: data with no step to put it at
    allowed = {"metric before any step"} if "olmo" in relpath else set()
    assert len(steps) > 0 and set(run.skipped) <= allowed, run.skipped
    if count is not None:
        assert len(steps) == count
    if first is not None:
        assert (steps[0], values[0]) == pytest.approx(first)
    if last_step is not None:
        assert steps[-1] == last_step


def test_real_nanogpt_sample_text_is_not_data(real_logs):
    from tuiloss.core.engine import load

    store, _, _ = load([str(real_logs / "plain_text/build_nanogpt_nowarmup_stdout")])
    (run,) = list(store)
    assert set(run.series) == {"loss", "lr", "norm", "dt", "tok/sec", "validation loss"}
    steps, values = run.series["loss"].visible()
    assert np.all(np.diff(steps) >= 0)


def test_csv_column_kind_does_not_depend_on_read_boundaries():
    parser = CsvParser()
    first = parser.feed(b"step,loss,split\n1,0.5x,train\n", 1)  # a torn first value
    second = parser.feed(b"2,0.4,train\n", 3)
    third = parser.feed(b"3,oops,val\n", 4)
    assert "loss" not in first.series and pts(second, "loss") == [(2, 0.4)]
    assert third.skipped == {"non-numeric value": 1}
    assert "split" not in second.series and "split" not in third.series
