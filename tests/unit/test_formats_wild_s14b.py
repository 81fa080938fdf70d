"""Tables and summaries of public training logs: Spinning Up's and tensorpack's epochs, AllenNLP's bars,
Chainer's table under its progress bar, YOLOv5's stdout table (on small logs written here, in their shapes)."""

from __future__ import annotations

from tuiloss.core.analysis.metrics import Direction, choose_primary, direction, role
from tuiloss.core.formats.layout import LAYOUT_MIN_BYTES
from tuiloss.core.formats.stdout import TextParser
from wild_helpers import batches, feed_lines, pts


# -- Spinning Up: a table an epoch ---------------------------------------------------------------


def _spinup_table(epoch: int, interacts: str, ret: float) -> str:
    rows = [("Epoch", str(epoch)), ("AverageEpRet", f"{ret:.3g}"), ("StdEpRet", "11.5"), ("MaxEpRet", "68"),
            ("EpLen", "22.7"), ("TotalEnvInteracts", interacts), ("LossPi", "1.14e-07"),
            ("LossV", f"{283 / (epoch + 1):.3g}"), ("DeltaLossV", "-172"), ("Entropy", "0.68"), ("KL", "0.0152"),
            ("ClipFrac", "0.223"), ("StopIter", "64"), ("Time", f"{1.97 * (epoch + 1):.3g}")]
    ruler = "-" * 39 + "\n"
    return ruler + "".join(f"| {key:>17} | {value:>15} |\n" for key, value in rows) + ruler


SPINUP = ("Logging data to /tmp/experiments/1700000000/progress.txt\n"
          + _spinup_table(0, "4e+03", 22.7) + _spinup_table(1, "8e+03", 30.25) + _spinup_table(2, "1.2e+04", 41.5))


def test_spinning_ups_tables_are_points_at_its_env_interactions_and_its_returns_are_rewards():
    for batch in batches(SPINUP):
        assert pts(batch, "AverageEpRet") == [(4000, 22.7), (8000, 30.2), (12000, 41.5)]  # as printed: three digits
        assert pts(batch, "LossV") == [(4000, 283), (8000, 142), (12000, 94.3)]
        assert pts(batch, "Time") == [(4000, 1.97), (8000, 3.94), (12000, 5.91)]
        assert "Epoch" not in batch.series and "TotalEnvInteracts" not in batch.series
        assert batch.meta["step_key"] == "TotalEnvInteracts"
        # a training loss stays the primary metric beside a return, as for Stable-Baselines3
        assert choose_primary(list(batch.series)) == "LossV"
    assert [role(n) for n in ("AverageEpRet", "MaxEpRet", "Entropy", "KL", "ClipFrac", "StopIter", "Time")] == [
        "reward", "reward", "other", "other", "other", "count", "time"]
    assert direction("AverageEpRet") is Direction.HIGHER and direction("Entropy") is Direction.UNKNOWN


def test_a_spinning_up_table_without_env_interactions_is_stepped_on_its_epoch():
    text = SPINUP.replace("| TotalEnvInteracts |", "|    TotalEnvSteps |")
    text = "| TotalEnvInteracts |           0e+00 |\n" + text  # shows the family before any table
    for batch in batches(text):
        assert pts(batch, "AverageEpRet") == [(0, 22.7), (1, 30.2), (2, 41.5)]
        assert batch.meta["step_key"] == "Epoch"


# -- tensorpack: an epoch's statistics, a line each ---------------------------------------------


def _tensorpack_epoch(epoch: int, cost: float, reward: float) -> str:
    stamp = f"[0724 {10 + epoch // 60:02d}:{epoch % 60:02d}:52"
    stats = [("SummaryGradient/conv0/W/rms", "0.00012757"), ("cost", f"{cost:g}"), ("expreplay/mean_score", "0.84249"),
             ("input_queue_size", "49.998"), ("learning_rate", "0.001"), ("param-summary/fc0/W-rms", "0.016261"),
             ("predict_reward", f"{reward:g}")]
    return (f"100%|####################|25000/25000[03:53<00:00,107.25it/s]\n"
            f"{stamp} @base.py:198] Epoch {epoch} (global_step {25000 * epoch}) finished, time:233.11 sec.\n"
            f"{stamp} @saver.py:85] Model saved to train_log/DQN-breakout/model-{25000 * epoch}.\n"
            + "".join(f"{stamp} @monitor.py:310] {key}: {value}\n" for key, value in stats)
            + f"{stamp} @base.py:188] Start Epoch {epoch + 1} ...\n")


TENSORPACK = ("[0724 10:43:59 @base.py:160] Setup callbacks graph ...\n"
              + _tensorpack_epoch(1, 0.001137, 0.31057) + _tensorpack_epoch(2, 0.0010428, 0.38159))


def test_tensorpacks_statistics_are_points_at_the_global_step_its_cost_the_loss():
    # ``cost`` and ``learning_rate`` were dropped (their names say no metric), ``predict_reward`` the primary
    for batch in batches(TENSORPACK):
        assert pts(batch, "cost") == [(25000, 0.001137), (50000, 0.0010428)]
        assert pts(batch, "learning_rate") == [(25000, 0.001), (50000, 0.001)]
        assert pts(batch, "predict_reward") == [(25000, 0.31057), (50000, 0.38159)]
        assert pts(batch, "SummaryGradient/conv0/W/rms")[-1] == (50000, 0.00012757)
        assert pts(batch, "param-summary/fc0/W-rms")[0] == (25000, 0.016261)
        assert "input_queue_size" not in batch.series
        assert batch.meta["step_key"] == "global_step"
        assert choose_primary(list(batch.series)) == "cost"
    assert [role(n) for n in ("cost", "learning_rate", "SummaryGradient/conv0/W/rms", "param-summary/fc0/W-rms")] == [
        "loss", "lr", "norm", "norm"]


def test_tensorpacks_statistics_in_a_read_long_enough_for_a_layout():
    text = "".join(_tensorpack_epoch(e, 0.001 + e / 1e6, 0.3 + e / 1000) for e in range(1, 90))
    assert len(text) > 2 * LAYOUT_MIN_BYTES
    expected = [(25000.0 * e, float(f"{0.001 + e / 1e6:g}")) for e in range(1, 90)]
    for batch in batches(text):
        assert pts(batch, "cost") == expected


def test_cost_is_the_loss_unless_it_is_a_time():
    assert [role(n) for n in ("cost", "train_cost", "val_cost", "Cost")] == ["loss"] * 4
    assert [role(n) for n in ("time cost", "Time-cost", "batch_cost", "reader_cost", "avg_reader_cost", "data_cost",
                              "cost_ms")] == ["time"] * 7
    assert [role(n) for n in ("AverageTestEpRet", "TestEpRet", "EpRet", "episode_return", "mean_return",
                              "undiscounted return")] == ["reward"] * 6


# -- YOLOv5 (up to v5.0) and YOLOv7: the stdout table --------------------------------------------

YOLO5_HEAD = "\n     Epoch   gpu_mem       box       obj       cls     total    labels  img_size\n"
YOLO5_CLASS = ("               Class      Images      Labels           P           R      mAP@.5  mAP@.5:.95: 100%|"
               "##########| 28/28 [00:20<00:00,  1.37it/s]\n")


def _yolo5_row(epoch: int, last: int, box: float, bar: str = "100%|##########| 112/112 [01:16<00:00,  1.46it/s]") -> str:
    cells = f"{'3.39G':>10}{box:>10.4g}{0.0288:>10.4g}{0.0224:>10.4g}{box + 0.0512:>10.4g}{42 + epoch:>10}{640:>10}"
    return f"{f'{epoch}/{last}':>10}{cells}: {bar}"


def _yolo5_epoch(epoch: int, last: int = 299, live: bool = False) -> str:
    box = 0.0471 - epoch / 1000
    head = _yolo5_row(epoch, last, box + 0.01, " 50%|#####     | 56/112 [00:38<00:38,  1.46it/s]") + "\r" if live else ""
    return (YOLO5_HEAD + head + _yolo5_row(epoch, last, box) + "\n" + (YOLO5_CLASS if epoch % 2 else "")
            + f"{'all':>20}{5000:>12}{36335:>12}{0.6 + epoch / 100:>12.3g}{0.5:>12.3g}{0.55:>12.3g}{0.35 + epoch / 100:>12.3g}\n")


YOLO5 = ("Starting training for 300 epochs...\n" + _yolo5_epoch(0, live=True) + _yolo5_epoch(1) + _yolo5_epoch(2, live=True))


def test_yolov5s_stdout_table_reads_its_losses_parts_at_each_epoch_and_the_validation_as_val():
    for batch in batches(YOLO5):
        assert pts(batch, "box_loss") == [(0, 0.0471), (1, 0.0461), (2, 0.0451)]  # a bar half-way is progress
        assert pts(batch, "total_loss") == [(0, 0.0983), (1, 0.0973), (2, 0.0963)]
        assert pts(batch, "obj_loss")[0] == (0, 0.0288) and pts(batch, "cls_loss")[0] == (0, 0.0224)
        assert pts(batch, "val_precision") == [(0, 0.6), (1, 0.61), (2, 0.62)]
        assert pts(batch, "val_recall") == [(0, 0.5), (1, 0.5), (2, 0.5)]
        assert pts(batch, "val_mAP@.5") == [(0, 0.55), (1, 0.55), (2, 0.55)]
        assert pts(batch, "val_mAP@.5:.95") == [(0, 0.35), (1, 0.36), (2, 0.37)]
        # the labels of the last batch, the image size and the memory (``3.39G``) are no metrics
        assert set(batch.series) == {"box_loss", "obj_loss", "cls_loss", "total_loss", "val_precision", "val_recall",
                                     "val_mAP@.5", "val_mAP@.5:.95"}
        assert batch.meta["step_key"] == "epoch" and batch.meta["planned_steps"] == 300  # 0/299: from 0
        assert choose_primary(list(batch.series)) == "total_loss"
    assert [role(n) for n in ("total_loss", "val_precision", "val_mAP@.5:.95")] == ["loss", "accuracy", "accuracy"]


def test_yolov7s_table_behind_a_loggers_line_and_a_log_that_starts_after_epoch_0():
    text = ("2023-03-11 11:50:48.658 | INFO     | __main__:train:316 - " + _yolo5_epoch(0, last=9)
            + _yolo5_epoch(1, last=9))
    for batch in batches(text):
        assert pts(batch, "total_loss") == [(0, 0.0983), (1, 0.0973)] and batch.meta["planned_steps"] == 10
    later = _yolo5_epoch(3, last=9) + _yolo5_epoch(4, last=9)  # YOLOv5 before the validation's names: ``targets``
    for batch in batches(later.replace("    labels", "   targets").replace("Labels", "Targets")):
        assert pts(batch, "box_loss") == [(3, 0.0441), (4, 0.0431)] and "targets" not in batch.series
        assert pts(batch, "val_precision") == [(3, 0.63), (4, 0.64)]
        assert batch.meta["planned_steps"] == 9  # no epoch 0 seen: the total as it says


def test_an_all_row_is_no_validation_under_another_table():
    # Ultralytics' own ``all`` row names its columns otherwise (``Box(P``): not read as YOLOv5's
    text = ("      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size\n"
            "       1/20      1.19G      1.018      3.009      1.465          2        640: 100%|####| 4/4 [00:01<00:00]\n"
            "                   all          7         14    0.00667          1      0.307      0.197\n")
    for batch in batches(text):
        assert not any(name.startswith("val_") for name in batch.series)


# -- Chainer: PrintReport's table under its ProgressBar ------------------------------------------

CHAINER_HEAD = ("epoch       main/loss   validation/main/loss  main/accuracy  validation/main/accuracy  elapsed_time\n")


def _chainer_bar(iteration: int, per_epoch: int = 300, epochs: int = 20) -> str:
    total = iteration / (per_epoch * epochs) * 100
    return (f"     total [{'#' * int(total / 2):.<50}] {total:5.2f}%\n"
            f"this epoch [{'#' * int(iteration % per_epoch / per_epoch * 50):.<50}] "
            f"{iteration % per_epoch / per_epoch * 100:5.2f}%\n"
            f"{iteration:>10} iter, {iteration // per_epoch} epoch / {epochs} epochs\n"
            f"{19.812:>10.5g} iters/sec. Estimated time to finish: 0:04:52.752795.\n")


def _chainer_row(loss: float, elapsed: float) -> str:
    return (f"{'':12}{loss:<12.6g}{loss / 2:<22.6g}{0.9321:<15.6g}{0.9641:<26.6g}{elapsed:<14.6g}\n")


CHAINER = ("Num epoch: 20\n" + CHAINER_HEAD + _chainer_bar(100) + _chainer_bar(200) + _chainer_row(0.22397, 23.6282)
           + _chainer_bar(400) + _chainer_bar(500) + _chainer_row(0.125, 47.25) + _chainer_row(0.0625, 70.5))


def test_chainers_rows_blanked_by_its_progress_bar_are_read_at_the_epoch_after_those_done():
    for batch in batches(CHAINER):
        # the third row came with no bar before it: the epoch after the row before
        assert pts(batch, "main/loss") == [(1, 0.22397), (2, 0.125), (3, 0.0625)]
        assert pts(batch, "validation/main/loss") == [(1, 0.111985), (2, 0.0625), (3, 0.03125)]
        assert pts(batch, "elapsed_time") == [(1, 23.6282), (2, 47.25), (3, 70.5)]
        assert set(batch.series) == {"main/loss", "validation/main/loss", "main/accuracy", "validation/main/accuracy",
                                     "elapsed_time"}  # the bar's iterations and speed are no rows
        assert batch.meta["step_key"] == "epoch" and batch.meta["planned_steps"] == 20
        assert choose_primary(list(batch.series)) == "main/loss"


def test_a_chainer_log_resumed_takes_its_epoch_from_the_bar():
    text = CHAINER_HEAD + _chainer_bar(1700) + _chainer_row(0.05, 120.5)
    for batch in batches(text):
        assert pts(batch, "main/loss") == [(6, 0.05)]


def test_a_chainer_row_with_its_epoch_then_one_blanked_with_no_bar_between():
    text = CHAINER_HEAD + _chainer_bar(200) + "1           0.5         0.25                  0.9            0.95                      12.5\n"
    for batch in batches(text + _chainer_row(0.25, 25.0)):
        assert pts(batch, "main/loss") == [(1, 0.5), (2, 0.25)]


def test_a_bar_line_is_never_a_row_of_a_table_as_wide():
    head = "epoch       main/loss   validation/main/loss  main/accuracy  a  b  elapsed_time\n"
    for batch in batches(head + _chainer_bar(200) + "1  0.5  0.25  0.9  1  2  3.5\n"):
        assert pts(batch, "main/loss") == [(1, 0.5)]
        assert not batch.skipped


# -- AllenNLP: an epoch's bars -----------------------------------------------------------------

def _allen(stamp: str, module: str, message: str) -> str:
    return f"2019-10-15 12:{stamp},697 - INFO - allennlp.training.{module} - {message}\n"


def _allen_bar(values: tuple[float, float, float], n: int, m: int, sep: str = "\r") -> str:
    acc, acc3, loss = values
    desc = f"accuracy: {acc:.4f}, accuracy3: {acc3:.4f}, loss: {loss:.4f} ||: "
    return desc + f"{n * 100 // m:3d}%|{'#' * (n * 10 // m):<10}| {n}/{m} [00:37<00:00,  3.32it/s]" + sep


def _allen_epoch(epoch: int, train: tuple, val: tuple, sep: str = "\r") -> str:
    half = tuple(v + 0.5 for v in train)
    bars = _allen_bar(half, 62, 125, sep) + _allen_bar(train, 125, 125, sep) + _allen_bar(train, 125, 125, "\n")
    return (_allen(f"{45 + epoch}:23", "trainer", f"Epoch {epoch}/39")
            + _allen(f"{45 + epoch}:23", "trainer", "Peak CPU memory usage MB: 1919.684")
            + _allen(f"{45 + epoch}:24", "trainer", "Training") + bars
            + _allen(f"{45 + epoch}:50", "trainer", "Validating") + _allen_bar(val, 31, 31, "\n")
            + _allen(f"{45 + epoch}:51", "tensorboard_writer", "                  Training |  Validation")
            + _allen(f"{45 + epoch}:51", "tensorboard_writer", "cpu_memory_MB |  1919.684  |       N/A")
            + _allen(f"{45 + epoch}:51", "tensorboard_writer", f"loss          |     {train[2]:.3f}  |     {val[2]:.3f}"))


ALLENNLP = (_allen("45:20", "trainer", "Beginning training.")
            + _allen_epoch(0, (0.1656, 0.3559, 3.5716), (0.1852, 0.3841, 3.2306))
            + _allen_epoch(1, (0.2511, 0.4494, 3.0232), (0.3684, 0.5976, 2.4891)))


def test_allennlps_full_bars_are_an_epochs_points_once_and_its_validation_val():
    for text in (ALLENNLP, ALLENNLP.replace("\r", "\n")):  # redrawn in place, or a line a redraw (its stdout.log)
        for batch in batches(text):
            assert pts(batch, "loss") == [(0, 3.5716), (1, 3.0232)]  # the bar half-way is progress; its copy no point
            assert pts(batch, "accuracy3") == [(0, 0.3559), (1, 0.4494)]
            assert pts(batch, "val_loss") == [(0, 3.2306), (1, 2.4891)]
            assert pts(batch, "val_accuracy") == [(0, 0.1852), (1, 0.3684)]
            # the table repeats the bars' means rounded; the memory is no metric
            assert set(batch.series) == {"loss", "accuracy", "accuracy3", "val_loss", "val_accuracy", "val_accuracy3"}
            assert batch.meta["step_key"] == "epoch" and batch.meta["planned_steps"] == 40  # 0/39: from 0
            assert choose_primary(list(batch.series)) == "loss"


def test_an_allennlp_bar_taken_before_its_line_ended_gives_its_points_once():
    # a live reader takes a last line that stays unfinished a while: the bar's redraws arrive in pieces
    text = _allen_epoch(0, (0.1656, 0.3559, 3.5716), (0.1852, 0.3841, 3.2306))
    cut = text.index("125/125") + 40
    parser = TextParser()
    out = parser.feed(text[: text.index("62/125") + 40].encode(), 1)
    out.merge(parser.feed(text[text.index("62/125") + 40 : cut].encode(), 5))
    out.merge(parser.feed(text[cut:].encode(), 5))
    assert pts(out, "loss") == [(0, 3.5716)] and pts(out, "val_loss") == [(0, 3.2306)]
