"""More log shapes of public projects: printed tensors, average meters, CLU, MLPerf, SB3 tables, tutorials' lines,
phase tags, fairseq's epoch results and exports of trackers' charts, each on a small log written here."""

from __future__ import annotations

import pytest

from tuiloss.core.discover import sniff
from tuiloss.core.formats.csv import CsvParser
from tuiloss.core.formats.stdout import TextParser

from test_formats_wild_more import feed_lines, pts


def test_a_printed_scalar_tensor_is_its_number_in_a_text_log_read_whole_or_line_by_line(tmp_path):
    text = "".join(f"Epoch 1, step {k}: loss tensor({1 / k:.4f}, device='cuda:0', grad_fn=<NllLossBackward0>)\n"
                   for k in (1, 2, 4))
    log = tmp_path / "train.log"
    log.write_text(text)
    assert sniff(str(log)) == ("text", "")
    for batch in (TextParser().feed(text.encode(), 1), feed_lines(TextParser(), text)):
        assert pts(batch, "loss") == [(1, 1.0), (2, 0.5), (4, 0.25)]
        assert not batch.skipped and not batch.unmatched


def test_a_dict_that_starts_with_its_step_is_found_and_its_numpy_scalars_read(tmp_path):
    text = "".join(f"{{'step': {k}, 'loss': tensor({2 / k:.3f}, device='cuda:0'), 'acc': np.float64({k / 10})}}\n"
                   for k in (10, 20, 30))
    log = tmp_path / "log.txt"
    log.write_text(text)
    assert sniff(str(log)) == ("text", "")  # the step first once kept the whole log unread
    batch = TextParser().feed(text.encode(), 1)
    assert pts(batch, "loss") == [(10, 0.2), (20, 0.1), (30, 0.067)]
    assert pts(batch, "acc") == [(10, 1.0), (20, 2.0), (30, 3.0)]


def test_a_tensor_of_several_values_is_no_number():
    text = "".join(f"step {k}: loss=tensor([{1 / k:.2f}, 0.30]), lr={k / 100}\n" for k in (1, 2))
    batch = TextParser().feed(text.encode(), 1)
    assert "loss" not in batch.series  # never one of its values taken for the loss
    assert pts(batch, "lr") == [(1, 0.01), (2, 0.02)]


def test_csv_cells_of_printed_tensors_are_their_numbers():
    data = ("step,loss,acc\n"
            "1,\"tensor(0.6931, device='cuda:0', grad_fn=<NllLossBackward0>)\",tensor(0.5000)\n"
            "2,\"tensor(0.5000, device='cuda:0', grad_fn=<NllLossBackward0>)\",tensor(0.7500)\n"
            "3,\"tensor([0.1, 0.2])\",tensor(0.8000)\n").encode()
    batch = CsvParser().feed(data, 1)
    assert pts(batch, "loss") == [(1, 0.6931), (2, 0.5)]
    assert pts(batch, "acc") == [(1, 0.5), (2, 0.75), (3, 0.8)]
    assert batch.skipped == {"non-numeric value": 1}  # the tensor of two values, said


IMAGENET = (
    "=> creating model 'resnet18'\n"
    "Epoch: [0][   0/1307]\tTime 49.345 (49.345)\tData  0.561 ( 0.561)\tLoss 3.2172e+00 (3.2172e+00)\tAcc@1   0.00 (  0.00)\tAcc@5  25.00 ( 25.00)\n"
    "Epoch: [0][  10/1307]\tTime  0.779 ( 5.211)\tData  0.000 ( 0.060)\tLoss 2.3915e+01 (1.5221e+01)\tAcc@1   0.00 (  5.68)\tAcc@5  12.50 ( 27.27)\n"
    "Epoch: [0][1300/1307]\tTime  0.765 ( 3.096)\tData  0.000 ( 0.053)\tLoss 2.5000e+00 (2.1256e+01)\tAcc@1  37.50 (  5.95)\tAcc@5  37.50 ( 27.38)\n"
    "Test: [  0/196]\tTime  1.201 ( 1.201)\tLoss 1.2000e+00 (1.2000e+00)\tAcc@1  70.31 ( 70.31)\tAcc@5  90.62 ( 90.62)\n"
    "Test: [ 10/196]\tTime  0.120 ( 0.301)\tLoss 1.1000e+00 (1.1500e+00)\tAcc@1  72.00 ( 71.02)\tAcc@5  91.00 ( 90.80)\n"
    " *   Acc@1 71.500 Acc@5 90.900\n"
    "Epoch: [1][   0/1307]  Time  0.800 ( 0.800)  Data  0.100 ( 0.100)  Loss 2.0000e+00 (2.0000e+00)  Acc@1  50.00 ( 50.00)  Acc@5 100.00 (100.00)\n"
    "Epoch: [1][  10/1307]  Time  0.225 ( 9.306)  Data  0.000 ( 0.709)  Loss 1.5000e+00 (1.7500e+00)  Acc@1 100.00 ( 75.00)  Acc@5 100.00 (100.00)\n"
)


def test_average_meters_read_their_latest_values_at_the_global_batch(tmp_path):
    log = tmp_path / "out"
    log.write_text(IMAGENET)
    assert sniff(str(log)) == ("text", "")
    for batch in (TextParser().feed(IMAGENET.encode(), 1), feed_lines(TextParser(), IMAGENET)):
        assert pts(batch, "Loss") == [(0, 3.2172), (10, 23.915), (1300, 2.5), (1307, 2.0), (1317, 1.5)]
        assert pts(batch, "Acc@1") == [(0, 0.0), (10, 0.0), (1300, 37.5), (1307, 50.0), (1317, 100.0)]
        assert pts(batch, "val_Acc@1") == [(1307, 71.5)] and pts(batch, "val_Acc@5") == [(1307, 90.9)]
        assert not any(name.startswith("Test") for name in batch.series)  # an evaluation's batches are progress
        assert batch.meta["step_key"] == "batch" and not batch.skipped


def test_meters_named_as_a_contrastive_trainer_names_them():
    text = "".join(f"Train: [{e}][{b}/391]\tBT 0.160 (0.403)\tDT 0.001 (0.220)\tloss {5 - e - b / 1000:.3f} (5.005)\n"
                   for e in (1, 2) for b in (10, 20))
    batch = TextParser().feed(text.encode(), 1)
    assert pts(batch, "loss") == [(10, 3.99), (20, 3.98), (401, 2.99), (411, 2.98)]  # epochs counted from 1
    assert pts(batch, "BT") == [(10, 0.16), (20, 0.16), (401, 0.16), (411, 0.16)]


def test_clu_logging_writer_lines_step_on_their_bracketed_step(tmp_path):
    text = ("I1201 12:00:00.000100 140233 train.py:300] Starting training loop at step 0.\n"
            + "".join(f"I1201 12:00:0{k}.123456 140233 logging_writer.py:48] [{k * 100}] learning_rate=0.0010000000474974513, "
                      f"train_loss={2 / k:.4f}, images=[[0.1 0.2]]\n" for k in (1, 2, 4)))
    log = tmp_path / "train.txt"
    log.write_text(text)
    assert sniff(str(log)) == ("text", "")
    for batch in (TextParser().feed(text.encode(), 1), feed_lines(TextParser(), text)):
        assert pts(batch, "train_loss") == [(100, 2.0), (200, 1.0), (400, 0.5)]
        assert pts(batch, "learning_rate")[0] == (100, 0.0010000000474974513)
        assert set(batch.series) == {"train_loss", "learning_rate"}  # an array is no number


def test_a_counter_written_again_under_a_longer_name_is_no_metric():
    # MaxText: ``completed step: 10, seconds: 1.2, ..., loss: 10.5``
    text = "".join(f"completed step: {k}, seconds: 1.234, TFLOP/s/device: 100.5, total_weights: 65536, loss: {9 - k / 10:.2f}\n"
                   for k in (10, 20))
    batch = TextParser().feed(text.encode(), 1)
    assert pts(batch, "loss") == [(10, 8.0), (20, 7.0)]
    assert "completed step" not in batch.series and pts(batch, "seconds") == [(10, 1.234), (20, 1.234)]


def test_mlperf_points_in_time_step_on_their_metadata_and_settings_and_intervals_are_no_points(tmp_path):
    def record(event, key, value, **meta):
        import json

        body = {"namespace": "", "time_ms": 1, "event_type": event, "key": key, "value": value,
                "metadata": {"file": "run.py", "lineno": 7, **meta}}
        return ":::MLLOG " + json.dumps(body)

    text = "\n".join([
        record("POINT_IN_TIME", "global_batch_size", 256),
        record("INTERVAL_START", "run_start", None),
        "0: " + record("POINT_IN_TIME", "train_loss", 9.5, samples_count=0, lr=1e-4),
        "0: " + record("INTERVAL_START", "eval_start", 3072, samples_count=3072),
        "0: " + record("POINT_IN_TIME", "eval_accuracy", 0.25, samples_count=3072),
        "[0] " + record("POINT_IN_TIME", "train_loss", 7.25, samples_count=3072),
        "0: " + record("POINT_IN_TIME", "tracked_stats", {"throughput": 12.5}, step=3072),  # another axis
        ':::MLLOG {"key": "train_loss", "value": 1.0,}',  # cut short and closed: not JSON
    ]) + "\n"
    log = tmp_path / "result_0.txt"
    log.write_text(text)
    assert sniff(str(log)) == ("text", "")
    batch = TextParser().feed(text.encode(), 1)
    assert pts(batch, "train_loss") == [(0, 9.5), (3072, 7.25)]
    assert pts(batch, "eval_accuracy") == [(3072, 0.25)]
    assert set(batch.series) == {"train_loss", "eval_accuracy"}  # no setting, interval or point on another axis
    assert batch.meta["step_key"] == "samples_count" and batch.skipped == {"malformed MLLOG record": 1}


def test_bracketed_fields_side_by_side_keep_their_whole_names():
    # PyTorch-GAN: two losses in one line, each in its own brackets
    text = "".join(f"[Epoch {e}/200] [Batch {b}/938] [D loss: {0.5 - b / 10000:.4f}] [G loss: {0.9 + b / 10000:.4f}]\n"
                   for e in (0, 1) for b in (0, 500))
    batch = TextParser().feed(text.encode(), 1)
    assert pts(batch, "D loss") == [(0, 0.5), (500, 0.45), (938, 0.5), (1438, 0.45)]
    assert pts(batch, "G loss") == [(0, 0.9), (500, 0.95), (938, 0.9), (1438, 0.95)]
    assert "loss" not in batch.series  # never the two losses mixed into one series


def sb3_table(step: int, reward: float, loss: float) -> str:
    rows = [("rollout/", ""), ("   ep_len_mean", "200"), ("   ep_rew_mean", f"{reward:.3g}"), ("time/", ""),
            ("   fps", "1234"), ("   iterations", str(step // 2048)), ("   total_timesteps", str(step)),
            ("train/", ""), ("   approx_kl", "0.0123"), ("   loss", f"{loss:.3g}"), ("   n_updates", "40")]
    ruler = "-" * 41 + "\n"
    return ruler + "".join(f"| {key:<24}| {value:<12}|\n" for key, value in rows) + ruler


def test_stable_baselines3_tables_are_points_at_their_total_timesteps(tmp_path):
    text = "Using cuda device\n" + sb3_table(2048, -1.2e3, 0.5) + sb3_table(4096, -900.0, 0.25)
    log = tmp_path / "ppo.out"
    log.write_text(text)
    assert sniff(str(log)) == ("text", "")
    # a line at a time (a table across reads), the first ruler comes before the table shows what the log is
    for batch, other in ((TextParser().feed(text.encode(), 1), 1), (feed_lines(TextParser(), text), 2)):
        assert pts(batch, "rollout/ep_rew_mean") == [(2048, -1200.0), (4096, -900.0)]
        assert pts(batch, "train/loss") == [(2048, 0.5), (4096, 0.25)]
        assert set(batch.series) == {"rollout/ep_len_mean", "rollout/ep_rew_mean", "time/fps", "train/approx_kl", "train/loss"}
        assert batch.unmatched == other  # the banner


def test_tutorial_shapes_of_a_counter_then_key_value_fields(tmp_path):
    # d2l: commas only; TensorFlow's tutorials: spaces only; a counter numbered with a hash
    d2l = "".join(f"epoch {e}, loss {1 / e:.4f}, train acc {0.5 + e / 10:.3f}, test acc 0.5\n" for e in (1, 2))
    batch = TextParser().feed(d2l.encode(), 1)
    assert pts(batch, "loss") == [(1, 1.0), (2, 0.5)] and pts(batch, "train acc") == [(1, 0.6), (2, 0.7)]
    tf = "".join(f"Epoch {e} Batch {b} Loss {4 - e - b / 1000:.4f}\n" for e in (1, 2) for b in (0, 100))
    batch = TextParser().feed(tf.encode(), 1)
    assert pts(batch, "Loss") == [(0, 3.0), (100, 2.9), (100, 2.0), (200, 1.9)]  # 100 batches an epoch, learnt
    hashed = "".join(f"Step #{k}\tLoss: {1 / k:.2f}\n" for k in (10, 20))
    assert pts(TextParser().feed(hashed.encode(), 1), "Loss") == [(10, 0.1), (20, 0.05)]
    log = tmp_path / "out.txt"
    for text in (d2l, tf, hashed):
        log.write_text(text)
        assert sniff(str(log)) == ("text", "")
    assert not TextParser().feed(b"epoch 3, took 20 s, 4 files\n", 1).series  # no metric named: nothing read


def test_the_cifar_tutorials_epoch_and_batch_in_brackets():
    text = "".join(f"[{e}, {b:5d}] loss: {2 - e / 10 - b / 100000:.3f}\n" for e in (1, 2) for b in (2000, 4000, 6000))
    batch = TextParser().feed(text.encode(), 1)
    assert pts(batch, "loss") == [(2000, 1.88), (4000, 1.86), (6000, 1.84), (8000, 1.78), (10000, 1.76), (12000, 1.74)]


def test_lines_of_metrics_under_a_counter_line_of_their_own():
    # the sentiment-analysis and seq2seq tutorials: an epoch's line, then its results a line each
    text = ("lr: 0.001 | dropout loss: 0.5 | hidden: 256\n"  # settings before any step: no point
            + "".join(f"Epoch: {e:02} | Epoch Time: 0m 5s\n\tTrain Loss: {1 / e:.3f} | Train Acc: {50 + e:.2f}%\n"
                      f"\t Val. Loss: {1.1 / e:.3f} |  Val. Acc: {49 + e:.2f}%\n" for e in (1, 2))
            + "The model reached loss: 0.2 and acc: 0.9 on the test set\n")  # a sentence: no record
    for batch in (TextParser().feed(text.encode(), 1), feed_lines(TextParser(), text)):
        assert pts(batch, "Train Loss") == [(1, 1.0), (2, 0.5)]
        assert pts(batch, "Val. Acc") == [(1, 50.0), (2, 51.0)]
        assert set(batch.series) == {"Train Loss", "Train Acc", "Val. Loss", "Val. Acc"}
        assert batch.meta["step_key"] == "epoch"


def test_mmengine_iteration_loops_step_on_the_iteration_with_the_evaluation_at_its_end(tmp_path):
    head = "2023/01/01 12:00:00 - mmengine - INFO - "
    text = ("".join(f"{head}Iter(train) [{k:5d}/90000]  base_lr: 2.0000e-02 lr: 2.0000e-02  eta: 1 day, 2:03:04  "
                    f"time: 0.5123  data_time: 0.0123  memory: 3000  loss: {2 - k / 100:.2f}\n" for k in (50, 100))
            + f"{head}Iter(val) [ 50/100]    eta: 0:00:30  time: 0.0431  data_time: 0.0034  memory: 1234\n"
            + f"{head}Iter(val) [100/100]    coco/bbox_mAP: 0.3740  data_time: 0.0034  time: 0.0431\n")
    log = tmp_path / "20230101_120000.log"
    log.write_text(text)
    assert sniff(str(log)) == ("text", "")
    for batch in (TextParser().feed(text.encode(), 1), feed_lines(TextParser(), text)):
        assert pts(batch, "loss") == [(50, 1.5), (100, 1.0)]
        assert pts(batch, "val/coco/bbox_mAP") == [(100, 0.374)]
        assert not {"val/time", "val/eta", "val/memory", "val/data_time", "eta"} & set(batch.series)
        assert batch.meta["planned_steps"] == 90000 and batch.meta["step_key"] == "iter"


def test_a_loguru_code_location_is_no_metric():
    text = "".join(f"2024-01-01 12:00:0{k}.123 | INFO     | __main__:train:142 - Epoch 1 | Step {k * 100} | Loss: {1 / k:.2f}\n"
                   for k in (1, 2))
    batch = TextParser().feed(text.encode(), 1)
    assert set(batch.series) == {"Loss"} and pts(batch, "Loss") == [(100, 1.0), (200, 0.5)]


def test_a_tensorboard_csv_export_is_its_tag_and_a_wandb_exports_bounds_are_no_metrics(tmp_path):
    from tuiloss.core.engine import load

    (tmp_path / "tb").mkdir()
    (tmp_path / "tb" / "run-version_0-tag-train_loss.csv").write_text(
        "Wall time,Step,Value\n1700000000.5,100,0.9\n1700000060.5,200,0.5\n")
    (tmp_path / "wb").mkdir()
    (tmp_path / "wb" / "wandb_export_2024-01-01.csv").write_text(
        '"Step","a - train/loss","a - train/loss__MIN","a - train/loss__MAX"\n"100","0.9","0.8","1.0"\n"200","0.5","0.4","0.6"\n')
    store, _, _ = load([str(tmp_path)])
    by_folder = {run.source.split("/")[0]: run for run in store}
    tb, wb = by_folder["tb"], by_folder["wb"]
    assert set(tb.series) == {"train_loss"} and list(tb.series["train_loss"].visible()[1]) == [0.9, 0.5]
    assert list(tb.series["train_loss"].visible()[0]) == [100, 200]  # the step, never the wall time
    assert set(wb.series) == {"train/loss"}  # its run "a"


def test_fairseqs_epoch_results_are_named_for_their_phase_never_points_of_the_running_loss():
    new = ("2020-01-01 12:00:00 | INFO | train_inner | epoch 001:    100 / 200 loss=9.5, ppl=724, num_updates=100, lr=1e-05\n"
           "2020-01-01 12:00:00 | INFO | train_inner | epoch 001:    200 / 200 loss=9.0, ppl=512, num_updates=200, lr=1e-05\n"
           "2020-01-01 12:00:00 | INFO | valid | epoch 001 | valid on 'valid' subset | loss 9.6 | ppl 776 | num_updates 200 | best_loss 9.6\n"
           "2020-01-01 12:00:00 | INFO | train | epoch 001 | loss 9.25 | ppl 608 | num_updates 200 | lr 1e-05\n")
    old = ("| epoch 001:    100 / 200 loss=9.5, ppl=724, num_updates=100, lr=1e-05\n"
           "| epoch 001:    200 / 200 loss=9.0, ppl=512, num_updates=200, lr=1e-05\n"
           "| epoch 001 | valid on 'valid' subset | loss 9.6 | ppl 776 | num_updates 200 | best_loss 9.6\n"
           "| epoch 001 | loss 9.25 | ppl 608 | num_updates 200 | lr 1e-05\n")
    for text in (new, old):
        batch = TextParser().feed(text.encode(), 1)
        assert pts(batch, "loss") == [(100, 9.5), (200, 9.0)]  # the valid loss was a third point of it
        assert pts(batch, "valid_loss") == [(200, 9.6)] and pts(batch, "valid_best_loss") == [(200, 9.6)]
        assert pts(batch, "train_loss") == [(200, 9.25)]


def test_a_colourised_log_is_read_as_its_text(tmp_path):
    text = "".join(f"\x1b[32m2024-01-01 12:00:00.123\x1b[0m | \x1b[1mINFO    \x1b[0m | \x1b[36m__main__\x1b[0m:\x1b[36mtrain\x1b[0m:"
                   f"\x1b[36m42\x1b[0m - \x1b[1mstep {k} | loss {1 / k:.2f} | lr 1e-4\x1b[0m\x1b]0;title\x07\n" for k in (1, 2, 4))
    log = tmp_path / "train.txt"
    log.write_text(text)
    assert sniff(str(log)) == ("text", "")
    for batch in (TextParser().feed(text.encode(), 1), feed_lines(TextParser(), text)):
        assert set(batch.series) == {"loss", "lr"} and pts(batch, "loss") == [(1, 1.0), (2, 0.5), (4, 0.25)]


def test_csv_cells_grouped_by_thousands_are_their_numbers_and_a_decimal_comma_is_not_one():
    data = b'step,loss\n"1,000",0.9\n"2,500",0.5\n"12,000",0.25\n"0,250",0.2\n'
    batch = CsvParser().feed(data, 1)
    assert pts(batch, "loss") == [(1000, 0.9), (2500, 0.5), (12000, 0.25)]
    assert batch.skipped == {"non-numeric value": 1}  # "0,250": said, never read as 250


@pytest.mark.parametrize("train, evaluation, name", [
    ("[train] epoch 1 step {k} loss {v}", "[val] epoch 1 step {k} loss {v}", "val_loss"),
    ("train: step {k}, loss: {v}", "eval: step {k}, loss: {v}", "eval_loss"),
    ("TRAIN | step {k} | loss {v}", "VALID | step {k} | loss {v}", "val_loss"),
    ("Training - Epoch 1 - Step {k} - loss: {v}", "Validation - Epoch 1 - Step {k} - loss: {v}", "val_loss"),
    ("mode=train step={k} loss={v}", "mode=val step={k} loss={v}", "val_loss"),
    ("step {k}: loss {v}", "Evaluation at step {k}: loss {v}", "eval_loss"),
])
def test_a_line_tagged_as_an_evaluation_names_its_metrics_for_it(train, evaluation, name):
    text = "".join(train.format(k=k, v=1 / k) + "\n" for k in (100, 200)) + evaluation.format(k=200, v=0.75) + "\n"
    batch = TextParser().feed(text.encode(), 1)
    assert pts(batch, "loss") == [(100, 0.01), (200, 0.005)]  # the evaluation's 0.75 was a third point of it
    assert pts(batch, name) == [(200, 0.75)]


def test_a_phase_word_that_is_a_key_or_follows_the_metrics_is_no_tag():
    batch = TextParser().feed(b"iter 100 | loss 0.5 | dev: 0.6\nval=0.5 step 5 loss: 0.3\n", 1)
    assert pts(batch, "loss") == [(100, 0.5), (5, 0.3)] and pts(batch, "dev") == [(100, 0.6)]


def test_a_csv_column_naming_each_rows_phase_keeps_the_evaluations_rows_apart():
    data = b"step,split,loss,acc\n100,train,0.5,0.8\n200,train,0.4,0.85\n200,val,0.6,0.7\n300,train,0.35,0.9\n"
    batch = CsvParser().feed(data, 1)
    assert pts(batch, "loss") == [(100, 0.5), (200, 0.4), (300, 0.35)]  # 0.6 was a point of it
    assert pts(batch, "val_loss") == [(200, 0.6)] and pts(batch, "val_acc") == [(200, 0.7)]
    other = CsvParser().feed(b"step,mode,loss\n1,max,0.5\n2,min,0.4\n", 1)  # a mode of another kind
    assert pts(other, "loss") == [(1, 0.5), (2, 0.4)]


@pytest.mark.parametrize("line, names", [
    ("epoch {e} | train: loss={a} acc=0.8 | val: loss={b} acc=0.7", ("loss", "val_loss", "val_acc")),
    ("Epoch {e} - Train loss: {a}, acc: 0.8 - Val loss: {b}, acc: 0.7", ("Train loss", "Val loss", "val_acc")),
])
def test_a_line_reporting_two_phases_under_the_same_keys_keeps_them_apart(line, names):
    text = "".join(line.format(e=e, a=1 / e, b=2 / e) + "\n" for e in (1, 2))
    batch = TextParser().feed(text.encode(), 1)
    train, val, other = names
    assert pts(batch, train) == [(1, 1.0), (2, 0.5)] and pts(batch, val) == [(1, 2.0), (2, 1.0)]
    assert pts(batch, other) == [(1, 0.7), (2, 0.7)] and pts(batch, "acc") == [(1, 0.8), (2, 0.8)]


def test_a_notebooks_table_copied_out_with_tabs_keeps_its_names_of_words(tmp_path):
    text = ("==((====))==  Unsloth - 2x faster free finetuning\n"
            "Epoch\tTraining Loss\tValidation Loss\n1\t0.523400\t0.611200\n2\t0.411100\t0.590000\n")
    log = tmp_path / "output.txt"
    log.write_text(text)
    assert sniff(str(log)) == ("text", "")
    batch = TextParser().feed(text.encode(), 1)
    assert pts(batch, "Training Loss") == [(1, 0.5234), (2, 0.4111)]
    assert pts(batch, "Validation Loss") == [(1, 0.6112), (2, 0.59)]


def test_a_count_that_restarts_under_an_epoch_line_of_its_own_is_made_global_not_a_reset():
    restarting = "".join(f"Epoch {e}/3\n" + "".join(f"step {s}/500, loss {e + s / 1000:.3f}\n" for s in (250, 500))
                         for e in (1, 2, 3))
    batch = TextParser().feed(restarting.encode(), 1)  # (no Keras bar under the epoch's line: not Keras)
    assert [s for s, _ in pts(batch, "loss")] == [250, 500, 750, 1000, 1250, 1500]
    banner = "".join(f"=== Epoch {e} ===\n" + "".join(f"Batch {b}: loss={e + b / 1000:.3f}\n" for b in (100, 200))
                     + f"Epoch {e} done. val_loss={e / 10:.1f}\n" for e in (1, 2))
    for batch in (TextParser().feed(banner.encode(), 1), feed_lines(TextParser(), banner)):
        assert [s for s, _ in pts(batch, "loss")] == [100, 200, 300, 400]
        assert pts(batch, "val_loss") == [(200, 0.1), (400, 0.2)]  # each epoch's end, on the same axis
    going_on = "".join(f"Epoch {e}\n" + "".join(f"step {s}: loss {s / 1000:.3f}\n" for s in (e * 100 - 50, e * 100))
                       for e in (1, 2))
    assert [s for s, _ in pts(TextParser().feed(going_on.encode(), 1), "loss")] == [50, 100, 150, 200]


def test_jsonl_records_of_an_epoch_and_the_batch_in_it_step_on_the_global_batch():
    from tuiloss.core.formats.jsonl import JsonlParser

    data = "".join(f'{{"epoch": {e}, "batch": {b}, "loss": {e + b / 1000}}}\n' for e in (1, 2) for b in (100, 200)).encode()
    batch = JsonlParser().feed(data, 1)
    assert [s for s, _ in pts(batch, "loss")] == [100, 200, 300, 400] and "batch" not in batch.series


def test_a_csv_step_that_starts_again_at_every_epoch_is_made_global_and_a_global_one_left_alone():
    within = "epoch,iteration,loss\n" + "".join(f"{e},{b},{e + b / 1000}\n" for e in (0, 1, 2) for b in (100, 200, 300))
    batch = CsvParser().feed(within.encode(), 1)
    assert [s for s, _ in pts(batch, "loss")] == [100, 200, 300, 400, 500, 600, 700, 800, 900]
    zero = "epoch,batch_idx,loss\n" + "".join(f"{e},{b},0.5\n" for e in (1, 2) for b in (0, 1, 2))
    assert [s for s, _ in pts(CsvParser().feed(zero.encode(), 1), "loss")] == [0, 1, 2, 3, 4, 5]  # counted from 0
    lightning = "epoch,step,loss\n" + "".join(f"{e},{e * 3 + b},0.5\n" for e in (0, 1) for b in (0, 1, 2))
    assert [s for s, _ in pts(CsvParser().feed(lightning.encode(), 1), "loss")] == [0, 1, 2, 3, 4, 5]
    parser = CsvParser()  # read a row at a time, as a live log arrives
    rows = within.splitlines(keepends=True)
    got = parser.feed("".join(rows[:2]).encode(), 1)
    for k, row in enumerate(rows[2:], start=3):
        got.merge(parser.feed(row.encode(), k))
    assert [s for s, _ in pts(got, "loss")] == [100, 200, 300, 400, 500, 600, 700, 800, 900]


def test_a_jsonl_step_that_starts_again_at_every_epoch_is_made_global_and_a_global_one_left_alone():
    from tuiloss.core.formats.jsonl import JsonlParser

    within = "".join(f'{{"epoch": {e}, "step": {s}, "loss": 0.5}}\n' for e in (1, 2, 3) for s in (100, 200))
    for batch in (JsonlParser().feed(within.encode(), 1), feed_lines(JsonlParser(), within)):
        assert [s for s, _ in pts(batch, "loss")] == [100, 200, 300, 400, 500, 600]
    going_on = "".join(f'{{"epoch": {e}, "step": {e * 2 + s}, "loss": 0.5}}\n' for e in (0, 1) for s in (0, 1))
    assert [s for s, _ in pts(JsonlParser().feed(going_on.encode(), 1), "loss")] == [0, 1, 2, 3]
    fractions = "".join(f'{{"epoch": {s / 100}, "step": {s}, "loss": 0.5}}\n' for s in (10, 20, 30))
    assert [s for s, _ in pts(JsonlParser().feed(fractions.encode(), 1), "loss")] == [10, 20, 30]


def test_a_long_general_log_still_finds_another_familys_lines_at_the_start_of_a_later_read():
    parser = TextParser()
    general = "".join(f"step={k}, loss={1 / (k + 1):.4f}, lr=1.0e-04\n" for k in range(8000)).encode()
    assert len(general) > 200_000 and parser.feed(general, 1).series and parser.family.name == "generic"
    megatron = "".join(f" iteration {k:8d}/   10000 | consumed samples: {k * 8} | lm loss: {2.0 - k / 1e5:.6E} |\n"
                       for k in range(8000, 16000)).encode()
    batch = parser.feed(megatron, 8001)
    assert parser.family.name == "megatron" and pts(batch, "lm loss")[0] == (8000, 1.92)


def test_a_wandb_chart_export_is_a_run_per_run_it_holds_and_other_csvs_are_not_split(tmp_path):
    from tuiloss.core.engine import load

    (tmp_path / "wandb_export_2024-01-01.csv").write_text(
        '"Step","a - train/loss","a - train/loss__MIN","a - train/loss__MAX","b - train/loss","b - train/loss__MIN",'
        '"b - train/loss__MAX"\n"100","0.9","0.8","1.0","","",""\n"200","0.5","0.4","0.6","0.7","0.6","0.8"\n')
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "log.csv").write_text("Step,train - loss\n1,0.5\n2,0.4\n")
    store, _, _ = load([str(tmp_path)])
    runs = {run.label: run for run in store}
    assert set(runs) == {"a", "b", "plain"}
    assert set(runs["a"].series) == {"train/loss"} and list(runs["a"].series["train/loss"].visible()[1]) == [0.9, 0.5]
    assert list(runs["b"].series["train/loss"].visible()[0]) == [200]  # its empty cell at 100 is no point,
    assert not runs["b"].skipped  # nor a skipped row: that row is a's
    assert set(runs["plain"].series) == {"train - loss"}
