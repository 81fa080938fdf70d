"""Log shapes of public training logs that were misread, on small logs written here (see test_formats_wild)."""

from __future__ import annotations

from tuiloss.core.formats.stdout import TextParser
from wild_helpers import batches, feed_lines, pts


def steps_of(batch, name):
    return [step for step, _ in pts(batch, name)]


# -- MindSpore ---------------------------------------------------------------------

def mindspore(epochs, steps, sep=" ", colon=":") -> str:
    return "".join(f"epoch: {e}{sep}step{colon} {s}, loss is {0.9 - e / 10 - s / 1000:.4f}\n" for e in epochs for s in steps)


def test_mindspores_step_counts_within_the_epoch_and_its_metric_is_loss():
    # LossMonitor: ``epoch: 2 step: 3, loss is 0.697``; the step restarts every epoch
    text = "============== Starting Training ==============\n" + mindspore((1, 2, 3), (1, 2, 3, 4))
    for batch in batches(text):
        assert set(batch.series) == {"loss"}
        assert steps_of(batch, "loss") == list(range(1, 13))
        assert pts(batch, "loss")[4] == (5, 0.699)
        assert batch.meta["step_key"] == "step"


def test_a_mindspore_log_that_skips_epochs_never_goes_back_nor_counts_on():
    # a README that quotes epoch 1 and then epoch 7: the steps of epoch 7 follow those of epoch 1
    # (epochs of 4 steps as far as the log shows), never a restart at step 1
    text = mindspore((1,), (1, 2, 3, 4)) + mindspore((7,), (1, 2))
    for batch in batches(text):
        assert steps_of(batch, "loss") == [1, 2, 3, 4, 25, 26]
    # ... nor a global count when the quoted epoch shows a step beyond the first epoch's last
    text = mindspore((1,), (1, 2, 3, 4, 5)) + mindspore((4,), (20, 21), colon="")
    for batch in batches(text):
        assert steps_of(batch, "loss") == [1, 2, 3, 4, 5, 35, 36]


def test_mindspores_tutorial_loops_and_data_sink_mode():
    # ``epoch: 0, step: 10, loss is ...`` (a loop that counts from 0); in data sink mode one line an epoch,
    # its step the epoch's size
    text = mindspore((0, 1), (0, 10, 20), sep=", ")
    for batch in batches(text):
        assert steps_of(batch, "loss") == [0, 10, 20, 20, 30, 40]
    text = mindspore((1, 2, 3), (1875,))
    for batch in batches(text):
        assert steps_of(batch, "loss") == [1875, 3750, 5625]


def test_mindspores_ranks_repeat_a_step_and_a_global_step_wins():
    text = "".join(f"epoch: 1 step: {s}, loss is 0.{r}{s}\n" for s in (1, 2) for r in range(1, 9))
    for batch in batches(text):
        assert steps_of(batch, "loss") == [1] * 8 + [2] * 8
    # a callback that prints the global step too
    text = "".join(f"epoch: {e} step: {s} global_step: {(e - 1) * 50 + s}, loss is 0.5\n" for e in (1, 2) for s in (25, 50))
    for batch in batches(text):
        assert steps_of(batch, "loss") == [25, 50, 75, 100]


# -- PaddleSeg ---------------------------------------------------------------------

def paddleseg(epochs_iters, evals=()) -> str:
    out = []
    for epoch, it in epochs_iters:
        out.append(f"2022-03-01 10:00:00 [INFO]\t[TRAIN] epoch: {epoch}, iter: {it}/1000, loss: {1 - it / 1000:.4f}, "
                   f"lr: 0.009000, batch_cost: 0.4500, reader_cost: 0.00100, ips: 8.8000 samples/sec | ETA 00:10:00\n")
        if it in evals:
            out += ["2022-03-01 10:00:01 [INFO]\tStart evaluating (total_samples: 50, total_iters: 50)...\n",
                    "50/50 [==============================] - 2s 30ms/step - batch_cost: 0.0300 - reader cost: 2.5e-04\n",
                    f"2022-03-01 10:00:03 [INFO]\t[EVAL] #Images: 50 mIoU: 0.{it // 100} Acc: 0.9{it // 100} Kappa: 0.{it // 100 + 2} \n",
                    "2022-03-01 10:00:03 [INFO]\t[EVAL] Class IoU: \n[0.9907 0.5337]\n",
                    f"2022-03-01 10:00:03 [INFO]\t[EVAL] The model with the best validation mIoU (0.{it // 100}) was saved at iter {it}.\n"]
    return "".join(out)


def test_paddleseg_iter_counts_over_the_run_from_whatever_epoch_the_log_starts_in():
    # its ``iter: M/T`` goes on across epochs (T: the run's iterations); a log that starts in
    # epoch 2 (a tail, a watch started mid-run) must not put epoch 2 at T + M and then go back
    run = [(2, 300), (2, 320), (2, 340), (3, 360), (3, 380), (4, 400), (4, 420)]
    for batch in batches(paddleseg(run)):
        assert pts(batch, "loss") == [(it, round(1 - it / 1000, 4)) for _, it in run]
        assert batch.meta["planned_steps"] == 1000
    for batch in batches(paddleseg([(1, 20), (1, 40), (2, 60), (2, 80)])):
        assert steps_of(batch, "loss") == [20, 40, 60, 80]


def test_paddleseg_evaluations_at_the_iteration_trained_last():
    text = paddleseg([(1, 100), (1, 200), (2, 300), (2, 400)], evals=(200, 400))
    for batch in batches(text):
        assert pts(batch, "eval_mIoU") == [(200, 0.2), (400, 0.4)]
        assert pts(batch, "eval_Acc") == [(200, 0.92), (400, 0.94)]
        assert pts(batch, "eval_Kappa") == [(200, 0.4), (400, 0.6)]
        assert not {"Images", "eval_Images", "#Images"} & set(batch.series)
        assert steps_of(batch, "loss") == [100, 200, 300, 400]


def test_a_count_within_the_epoch_with_its_total_in_a_log_started_mid_run_waits_for_the_next_epoch():
    # PaddleDetection's ``Epoch: [3] [100/300]``: an epoch with no total, so the count's total may be the
    # run's; a log that starts in epoch 3 shows it when epoch 4 starts (its epochs taken as counted from 1)
    text = "".join(f"ppdet.engine INFO: Epoch: [{e}] [{s:3d}/300] learning_rate: 0.0100 loss: {e + s / 1000:.4f}\n"
                   for e in (3, 4) for s in (100, 200, 299))
    for batch in batches(text):
        assert steps_of(batch, "loss") == [700, 800, 899, 1000, 1100, 1199]
    waiting = feed_lines(TextParser(), text[: text.index("Epoch: [4]")])
    assert "loss" not in waiting.series and waiting.meta["held"] == 3
    # the PyTorch tutorials' ``Epoch [3/5], Step [100/300]``: beside an epoch of a total, the count's total is
    # the epoch's, placed at once
    text = "".join(f"Epoch [3/5], Step [{s}/300], Loss: {3 + s / 1000:.4f}\n" for s in (100, 200, 300))
    for batch in batches(text):
        assert steps_of(batch, "Loss") == [700, 800, 900]


# -- char-rnn ----------------------------------------------------------------------

def test_char_rnns_leading_count_over_the_run_is_the_step_not_the_epoch():
    # the TensorFlow port: ``i/iterations (epoch e), train_loss = ..., time/batch = ...``
    tf = "".join(f"{k}/6000 (epoch {k // 300}), train_loss = {3 - k / 1000:.3f}, time/batch = 0.120\n" for k in range(295, 305))
    for batch in batches(tf):
        assert pts(batch, "train_loss") == [(k, round(3 - k / 1000, 3)) for k in range(295, 305)]
        assert set(batch.series) == {"train_loss", "time/batch"}
        assert batch.meta["planned_steps"] == 6000
    # Karpathy's Lua original prints a fractional epoch and a gradient norm
    lua = "".join(f"{k}/6000 (epoch {k / 300:.3f}), train_loss = {3 - k / 1000:.8f}, grad/param norm = 4.5e-01, "
                  f"time/batch = 0.0950s\n" for k in range(1, 5))
    for batch in batches(lua):
        assert steps_of(batch, "train_loss") == [1, 2, 3, 4]
        assert pts(batch, "grad/param norm")[0] == (1, 0.45)
        assert batch.meta["planned_steps"] == 6000


def test_char_rnn_over_many_lines_and_ml5s_chart_lines_beside_it():
    # enough lines for the layout reader; ml5's trainer prints a JSON point for its chart before each line
    text = "Here we go! Reading text file...\n" + "".join(
        f'{{"chart": "loss", "x": {k}, "y": {4 - k / 1000:.6f}}}\n{k}/4800 (epoch {k // 400}), train_loss = {4 - k / 1000:.3f}, '
        f"time/batch = 0.060\n" for k in range(0, 600))
    for batch in batches(text):
        assert steps_of(batch, "train_loss") == list(range(0, 600))
        assert pts(batch, "train_loss")[450] == (450, 3.55)
        assert set(batch.series) == {"train_loss", "time/batch"}


# -- MXNet's Speedometer and GluonCV -------------------------------------------------

def mxnet_epoch(e: int) -> str:
    """One epoch of MXNet's Module.fit: Speedometer lines, then the epoch's mean, time and validation."""
    batches = "".join(f"INFO:root:Epoch[{e}] Batch [{b}]\tSpeed: {100 + b}.50 samples/sec\t"
                      f"Train-accuracy={0.5 + e / 10 + b / 1000:.6f}\n" for b in (20, 40, 60))
    return (batches + f"INFO:root:Epoch[{e}] Train-accuracy={0.55 + e / 10:.6f}\n"
            f"INFO:root:Epoch[{e}] Time cost={90 + e}.125\n"
            f'INFO:root:Saved checkpoint to "./out/model-{e + 1:04d}.params"\n'
            f"INFO:root:Epoch[{e}] Validation-accuracy={0.6 + e / 10:.6f}\n")


def test_mxnets_epoch_means_are_a_series_of_their_own_beside_the_batches():
    for batch in batches(mxnet_epoch(0) + mxnet_epoch(1)):
        assert pts(batch, "Train-accuracy") == [(20, 0.52), (40, 0.54), (60, 0.56), (80, 0.62), (100, 0.64), (120, 0.66)]
        assert pts(batch, "Train-accuracy_epoch") == [(60, 0.55), (120, 0.65)]
        assert pts(batch, "Validation-accuracy") == [(60, 0.6), (120, 0.7)]
        assert pts(batch, "Time cost") == [(60, 90.125), (120, 91.125)]
        assert pts(batch, "Speed")[0] == (20, 120.5)


GLUONCV = "".join(
    "".join(f"INFO:root:Epoch[{e}] Batch [{b}]\tSpeed: 800.25 samples/sec\taccuracy={0.1 + e / 10 + b / 1000:.6f}\n"
            for b in (49, 99))
    + f"INFO:root:[Epoch {e}] training: accuracy={0.2 + e / 10:.6f}\n"
    + f"INFO:root:[Epoch {e}] time cost: {60 + e}.5\n"
    + f"INFO:root:[Epoch {e}] validation: accuracy={0.3 + e / 10:.6f}\n"
    for e in (0, 1)
)
AUTOGLUON = "".join(
    f"[Epoch {e}] training: accuracy={0.3 + e / 10:.6f}\n"
    f"[Epoch {e}] speed: 90 samples/sec     time cost: {7 + e}.25\n"
    f"[Epoch {e}] validation: top1={0.4 + e / 10:.6f} top5=1.000000\n"
    f"[Epoch {e}] Current best top-1: {0.4 + e / 10:.6f} vs previous {'-inf' if e == 0 else 0.4}, saved to /tmp/t/best.pkl\n"
    for e in (0, 1)
)


def test_gluoncvs_epoch_means_and_a_running_best_that_is_no_point():
    for batch in batches(GLUONCV):
        assert pts(batch, "accuracy") == [(49, 0.149), (99, 0.199), (148, 0.249), (198, 0.299)]
        assert pts(batch, "accuracy_epoch") == [(99, 0.2), (198, 0.3)]
        assert pts(batch, "val_accuracy") == [(99, 0.3), (198, 0.4)]
        assert pts(batch, "time cost") == [(99, 60.5), (198, 61.5)]
    # AutoGluon's image predictor: epochs alone, and ``Current best top-1: ... vs previous ...`` a running best
    for batch in batches(AUTOGLUON):
        assert pts(batch, "accuracy") == [(0, 0.3), (1, 0.4)]
        assert pts(batch, "val_top1") == [(0, 0.4), (1, 0.5)]
        assert set(batch.series) == {"accuracy", "speed", "time cost", "val_top1", "val_top5"}


# -- OpenAI Spinning Up --------------------------------------------------------------

SPINNINGUP = (
    "Epoch\tAverageEpRet\tStdEpRet\tMaxEpRet\tMinEpRet\tEpLen\tAverageVVals\tTotalEnvInteracts\tLossPi\tLossV\t"
    "DeltaLossPi\tDeltaLossV\tEntropy\tKL\tClipFrac\tStopIter\tTime\n"
    + "".join(f"{e}\t{-80 + 5 * e:.3f}\t18.5\t{-40 + 5 * e:.3f}\t-130.25\t150.0\t0.25\t{4000 * (e + 1)}\t0.0125\t{20 - e:.2f}\t"
              f"-0.0125\t-4.5\t0.925\t0.0045\t0.0625\t79.0\t{16.5 * (e + 1):.2f}\n" for e in range(4))
)


def test_spinning_ups_progress_steps_on_env_interactions_and_its_returns_are_rewards(tmp_path):
    from tuiloss.core.analysis.metrics import Direction, choose_primary, direction, role
    from tuiloss.core.discover import sniff
    from tuiloss.core.formats.csv import CsvParser

    path = tmp_path / "progress.txt"
    path.write_text(SPINNINGUP)
    assert sniff(str(path)) == ("csv", "")
    whole = CsvParser().feed(SPINNINGUP.encode(), 1)
    lines = SPINNINGUP.splitlines(keepends=True)
    parser = CsvParser()
    split = parser.feed(lines[0].encode(), 1)
    for k, line in enumerate(lines[1:], start=2):
        split.merge(parser.feed(line.encode(), k))
    for batch in (whole, split):
        assert pts(batch, "AverageEpRet") == [(4000, -80), (8000, -75), (12000, -70), (16000, -65)]
        assert "TotalEnvInteracts" not in batch.series
    for name in ("AverageEpRet", "AverageTestEpRet", "EpRet", "MaxEpRet", "MinEpRet"):
        assert role(name) == "reward" and direction(name) is Direction.HIGHER
    for name in ("Entropy", "KL", "DeltaLossPi", "DeltaLossV", "StdEpRet", "ClipFrac"):
        assert direction(name) is Direction.UNKNOWN
    assert role("StopIter") == "count"
    # a KL or an entropy inside a loss's name stays a loss
    assert role("kl_loss") == role("train/entropy_loss") == role("cross entropy") == "loss"
    # as for Stable-Baselines3's train/loss beside rollout/ep_rew_mean, a training loss is the primary metric
    assert choose_primary(list(whole.series)) in ("LossPi", "LossV")
    assert choose_primary(["AverageEpRet", "AverageTestEpRet", "Entropy", "KL", "Time"]) == "AverageEpRet"


# -- kohya-ss sd-scripts ------------------------------------------------------------------

def kohya_bar(k: int, total: int = 1200, loss: float | None = None) -> str:
    rate = f", avr_loss={loss}" if loss is not None else ""
    return f"steps: {100 * k // total:3d}%|##        | {k}/{total} [00:{k % 60:02d}<01:00,  2.50it/s{rate}]"


KOHYA = (
    "running training / 学習開始\n"
    "  num train images * repeats / 学習画像の数×繰り返し回数: 300\n"
    "  num batches per epoch / 1epochのバッチ数: 300\n"
    "  num epochs / epoch数: 4\n"
    "  gradient accumulation steps / 勾配を合計するステップ数 = 1\n"
    "  total optimization steps / 学習ステップ数: 1200\n"
    + kohya_bar(0) + "\n"
    "epoch 1/4\n"
    + "\r".join(kohya_bar(k, loss=round(0.2 - k / 10000, 4)) for k in (100, 200, 300)) + "\n"
    "epoch 2/4\n"
    + "\r".join(kohya_bar(k, loss=round(0.2 - k / 10000, 4)) for k in (400, 500)) + "\n"
)


def test_kohyas_bar_counts_the_whole_run_under_its_epoch_lines():
    # its ``steps:`` bar spans all epochs (its total is the settings' total optimization steps):
    # the ``epoch 1/4`` above it neither multiplies the planned steps nor offsets the count
    for batch in batches(KOHYA):
        assert pts(batch, "avr_loss") == [(100, 0.19), (200, 0.18), (300, 0.17), (400, 0.16), (500, 0.15)]
        assert batch.meta["planned_steps"] == 1200
    parser = TextParser()
    feed_lines(parser, KOHYA[: KOHYA.index("epoch 2/4")])
    assert parser.state.meta["planned_steps"] == 1200  # while the first epoch runs, too


# -- YOLOv5 (up to v5.0) and YOLOv7: results.txt ---------------------------------------------

def yolo_row(e: int, last: int = 9, mem: str = "2.05G") -> str:
    cells = [0.09 - e / 1000, 0.08 - e / 2000, 0.0, 0.17 - e / 700, 31 + e, 640, 0.1 * e / 2, 0.05 * e, 0.02 * e, 0.01 * e,
             0.07 - e / 1000, 0.05, 0.0]
    return f"{e}/{last}".rjust(10) + mem.rjust(10) + "".join(f"{c:10.4g}" for c in cells) + "\n"


def test_yolov5s_results_txt_is_one_row_an_epoch_named_as_its_results_csv(tmp_path):
    from tuiloss.core.analysis.metrics import choose_primary
    from tuiloss.core.discover import sniff

    text = "".join(yolo_row(e, mem="14G" if e == 2 else "2.05G") for e in range(4))
    path = tmp_path / "runs" / "train" / "exp" / "results.txt"
    path.parent.mkdir(parents=True)
    path.write_text(text)
    assert sniff(str(path)) == ("text", "")
    for batch in batches(text):
        assert pts(batch, "train/total_loss") == [(0, 0.17), (1, 0.1686), (2, 0.1671), (3, 0.1657)]
        assert pts(batch, "metrics/mAP_0.5") == [(0, 0), (1, 0.02), (2, 0.04), (3, 0.06)]
        assert pts(batch, "val/box_loss")[3] == (3, 0.067)
        assert set(batch.series) == {"train/box_loss", "train/obj_loss", "train/cls_loss", "train/total_loss",
                                     "metrics/precision", "metrics/recall", "metrics/mAP_0.5", "metrics/mAP_0.5:0.95",
                                     "val/box_loss", "val/obj_loss", "val/cls_loss"}
        assert batch.meta["planned_steps"] == 9 and batch.meta["step_key"] == "epoch"
        assert choose_primary(list(batch.series)) == "train/total_loss"


def test_a_row_of_another_width_or_a_progress_bar_is_no_yolo_results_row():
    # YOLOv5's stdout: the epoch's bar row holds 6 numbers, then the bar
    bar = "       3/19     3.17G   0.05923    0.0645  0.007296     0.131       207       640: 100%|##########| 112/112\n"
    assert "train/total_loss" not in TextParser().feed((bar * 3).encode(), 1).series
    short = yolo_row(1)[:-11] + "\n"  # 14 cells
    assert "train/total_loss" not in TextParser().feed((short * 3).encode(), 1).series


# -- rsl_rl ---------------------------------------------------------------------------

def rsl_block(it: int, total: int = 50, isaac: bool = False, indent: str = "") -> str:
    if isaac:
        items = [("Mean value_function loss", f"{0.02 - it / 1000:.4f}"), ("Mean surrogate loss", "-0.0050"),
                 ("Mean entropy loss", "3.5000"), ("Mean reward", f"{1 + it / 2:.2f}"),
                 ("Episode_Reward/track_lin_vel_xy_exp", f"{0.5 + it / 100:.4f}")]
    else:
        items = [("Value function loss", f"{0.02 - it / 1000:.4f}"), ("Surrogate loss", "-0.0050"),
                 ("Mean action noise std", "1.00"), ("Mean total reward", f"{1 + it / 2:.2f}"),
                 ("Mean episode rew_tracking_lin_vel", f"{0.5 + it / 100:.4f}")]
    lines = ["#" * 80, f"Learning iteration {it}/{total}".center(80), "",
             f"{'Computation':>35s}: 90000 steps/s (collection: 0.900s, learning 0.200s)"]
    lines += [f"{key:>35s}: {value}" for key, value in items]
    lines += ["-" * 80, f"{'Total timesteps':>35s}: {98304 * (it + 1)}", f"{'Iteration time':>35s}: 1.10s",
              f"{'Total time':>35s}: {1.1 * (it + 1):.2f}s", f"{'ETA':>35s}: 55.0s", ""]
    return "".join(indent + line + "\n" for line in lines)


def test_rsl_rls_blocks_are_a_point_an_iteration():
    for isaac in (False, True):
        text = "Storing git diff for 'proj' in: logs/go2/git/proj.diff\n" + "".join(rsl_block(it, isaac=isaac) for it in range(3))
        loss, reward, lin_vel = (("Mean value_function loss", "Mean reward", "Episode_Reward/track_lin_vel_xy_exp") if isaac
                                 else ("Value function loss", "Mean total reward", "Mean episode rew_tracking_lin_vel"))
        for batch in batches(text):
            assert pts(batch, loss) == [(0, 0.02), (1, 0.019), (2, 0.018)]
            assert pts(batch, reward) == [(0, 1.0), (1, 1.5), (2, 2.0)]
            assert pts(batch, lin_vel)[2] == (2, 0.52)
            assert not {"Computation", "Total timesteps", "Iteration time", "Total time", "ETA"} & set(batch.series)
            assert batch.meta["planned_steps"] == 50 and batch.meta["step_key"] == "iteration"
    # a block copied with an indent, as a README quotes it
    for batch in batches("".join(rsl_block(it, indent="    ") for it in (7, 8))):
        assert steps_of(batch, "Surrogate loss") == [7, 8]


# -- VITS, so-vits-svc, RVC ------------------------------------------------------------------

def test_vits_lists_name_their_losses_and_step_on_the_global_step():
    # so-vits-svc: five losses, the global step and the learning rate in a list with no names
    text = "".join(f"2023-03-01 10:00:0{k},123 44k INFO Train Epoch: {k + 1} [{20 * k}%]\n"
                   f"2023-03-01 10:00:0{k},124 44k INFO [2.{k}5, 3.{k}5, 10.{k}5, 20.{k}5, 1.{k}5, {200 * k}, 0.0001]\n"
                   f"2023-03-01 10:00:0{k},125 44k INFO ====> Epoch: {k + 1}\n" for k in range(3))
    for batch in batches(text):
        assert pts(batch, "loss_mel") == [(0, 20.05), (200, 20.15), (400, 20.25)]
        assert pts(batch, "loss_kl")[1] == (200, 1.15)
        assert set(batch.series) == {"loss_disc", "loss_gen", "loss_fm", "loss_mel", "loss_kl", "lr"}
        assert batch.meta["step_key"] == "global_step"
    # VITS and Bert-VITS2 log a sixth loss (the duration's) before the KL: named by its place
    six = "INFO Train Epoch: 1 [0%]\nINFO [2.5, 3.5, 10.5, 20.5, 0.75, 1.5, 0, 0.0002]\n"
    for batch in batches(six):
        assert set(batch.series) == {"loss_disc", "loss_gen", "loss_fm", "loss_mel", "loss_4", "loss_kl", "lr"}
        assert pts(batch, "loss_4") == [(0, 0.75)] and pts(batch, "lr") == [(0, 0.0002)]


def test_rvc_losses_after_its_step_and_rate():
    text = "".join(f"INFO:voice:Train Epoch: {e} [{10 * e}%]\nINFO:voice:[{100 * e}, 9.99e-05]\n"
                   f"INFO:voice:loss_disc=3.{e}25, loss_gen=3.{e}75, loss_fm=9.{e}5,loss_mel=22.{e}5, loss_kl=2.{e}25\n"
                   "DEBUG:matplotlib:interactive is False\n"
                   f"INFO:voice:====> Epoch: {e} [2024-06-13 02:20:09] | (0:12:58.170309)\n" for e in (1, 2, 3))
    for batch in batches(text):
        assert pts(batch, "loss_mel") == [(100, 22.15), (200, 22.25), (300, 22.35)]
        assert pts(batch, "loss_disc")[0] == (100, 3.125)
        assert pts(batch, "lr") == [(100, 9.99e-05), (200, 9.99e-05), (300, 9.99e-05)]
        assert set(batch.series) == {"loss_disc", "loss_gen", "loss_fm", "loss_mel", "loss_kl", "lr"}
