"""More log shapes seen in public training logs, on small logs written here (see test_formats_wild)."""

from __future__ import annotations

from tuiloss.core.formats.stdout import TextParser
from wild_helpers import feed_lines, pts, read_both


def test_a_percentage_after_a_counter_word_is_progress_not_the_step():
    # kohya-ss sd-scripts: ``steps:  10%|...| 6/60 [..., avr_loss=0.25]``: the step is the bar's count
    text = "".join(f"steps: {k * 100 // 60:3d}%|##        | {k}/60 [00:{k:02d}<00:{60 - k:02d},  1.00it/s, avr_loss={1 / k:.4f}]\n"
                   for k in (6, 12, 18))
    batch = TextParser().feed(text.encode(), 1)
    assert pts(batch, "avr_loss") == [(6, 0.1667), (12, 0.0833), (18, 0.0556)]


ESPNET = (
    "[host] 2020-04-05 16:34:54,278 (trainer:192) INFO: 1/40epoch started. Estimated time to finish: 7 minutes\n"
    "[host] 2020-04-05 16:34:56,315 (trainer:453) INFO: 1epoch:train:1-10batch: iter_time=0.006, forward_time=0.076, "
    "loss=50.873, loss_att=35.801, acc=0.471, optim0_lr0=1.000e-03, train_time=0.203\n"
    "[host] 2020-04-05 16:34:58,046 (trainer:453) INFO: 1epoch:train:11-20batch: iter_time=4.280e-05, loss=40.5, acc=0.5\n"
    "[host] 2020-04-05 16:35:00,000 (trainer:243) INFO: 1epoch results: [train] iter_time=0.164, loss=45.386, acc=0.49, "
    "time=1 minute and 43.19 seconds, total_count=20, [valid] loss=47.955, acc=0.52, cer=1.010, time=50.5 seconds, "
    "total_count=4, [att_plot] time=3.2 seconds, total_count=0\n"
    "[host] 2020-04-05 16:35:02,000 (trainer:453) INFO: 2epoch:train:1-10batch: iter_time=0.006, loss=30.25, acc=0.6\n"
    "[host] 2020-04-05 16:35:04,000 (trainer:453) INFO: 2epoch:train:11-20batch: iter_time=0.006, loss=20.125, acc=0.7\n"
    "[host] 2020-04-05 16:35:06,000 (trainer:243) INFO: 2epoch results: [train] loss=25.386, [valid] loss=40.0, cer=0.9, "
    "time=50.5 seconds, total_count=4\n"
)


def test_espnet_batch_stretches_step_on_the_global_batch_and_epoch_results_at_each_epoch_end():
    batch = TextParser().feed(ESPNET.encode(), 1)
    assert pts(batch, "loss") == [(10, 50.873), (20, 40.5), (30, 30.25), (40, 20.125)]
    assert pts(batch, "train_loss") == [(20, 45.386), (40, 25.386)]
    assert pts(batch, "valid_loss") == [(20, 47.955), (40, 40.0)]
    assert pts(batch, "valid_cer") == [(20, 1.01), (40, 0.9)]
    # an epoch's times and counts are no metrics, nor is the attention plot's time
    assert not {"time", "total_count", "train_time_total", "valid_total_count", "att_plot_time"} & set(batch.series)
    assert batch.meta["step_key"] == "batch"


def test_funasr_batch_stretches_step_on_their_updates():
    text = "".join(f"[h] 2023-04-23 18:59:48,924 (trainer:777) INFO: 2epoch:train:{k * 50 + 1}-{k * 50 + 50}batch:"
                   f"{(k + 1) * 50 + 1000}num_updates: iter_time=0.008, loss_att=0.186, acc=0.942, loss={0.5 - k / 10:.3f}\n"
                   for k in range(3))
    batch = TextParser().feed(text.encode(), 1)
    assert pts(batch, "loss") == [(1050, 0.5), (1100, 0.4), (1150, 0.3)]
    assert batch.meta["step_key"] == "num_updates"


def test_espnet_epoch_results_alone_step_by_epoch():
    text = "".join(f"[h] 2021-07-06 14:20:17,332 (trainer:398) INFO: {e}epoch results: [train] loss={50 - e}.5, "
                   f"total_count=130000, [valid] loss={40 - e}.25, acc=0.8, time=34.18 seconds\n" for e in (1, 2, 3))
    batch = TextParser().feed(text.encode(), 1)
    assert pts(batch, "train_loss") == [(1, 49.5), (2, 48.5), (3, 47.5)]
    assert pts(batch, "valid_loss") == [(1, 39.25), (2, 38.25), (3, 37.25)]


MODEL_CARD = (
    "***** Running training *****\n"
    "| Training Loss | Epoch | Step | Validation Loss | Accuracy |\n"
    "|:-------------:|:-----:|:----:|:---------------:|:--------:|\n"
    "| No log        | 1.0   | 500  | 0.1987          | 0.9200   |\n"
    "| 0.2345        | 2.0   | 1000 | 0.1800          | 0.9300   |\n"
    "| 0.1345        | 3.0   | 1500 | 0.1700          | 0.9400   |\n"
    "\n"
    "a sentence | with | pipes\n"
)


def test_a_markdown_table_steps_on_its_step_column_and_skips_cells_not_logged():
    for batch in (TextParser().feed(MODEL_CARD.encode(), 1), feed_lines(TextParser(), MODEL_CARD)):
        assert pts(batch, "Training Loss") == [(1000, 0.2345), (1500, 0.1345)]  # "No log": no point
        assert pts(batch, "Validation Loss") == [(500, 0.1987), (1000, 0.18), (1500, 0.17)]
        assert pts(batch, "Accuracy") == [(500, 0.92), (1000, 0.93), (1500, 0.94)]
        assert not {"Epoch", "Step"} & set(batch.series)
        assert batch.meta["step_key"] == "step"


def test_a_markdown_table_of_epochs_steps_by_epoch():
    text = "| epoch | train_loss | val_loss |\n|---|---|---|\n| 1 | 0.9 | 1.0 |\n| 2 | 0.7 | 0.8 |\n"
    batch = TextParser().feed(text.encode(), 1)
    assert pts(batch, "train_loss") == [(1, 0.9), (2, 0.7)]
    assert batch.meta["step_key"] == "epoch"


def test_key_value_fields_after_the_counter_are_read_beside_the_pairs_that_follow():
    # lit-gpt: ``iter 10 step 1: loss 2.5000, iter time: 123.45ms (optimizer.step)``: the step is the
    # optimizer's, and the loss (written without a colon) is read with the timing after it
    text = "".join(f"iter {k * 10} step {k}: loss {3 - k / 10:.4f}, iter time: 12{k}.45ms (optimizer.step)\n" for k in (1, 2, 3))
    batch = TextParser().feed(text.encode(), 1)
    assert pts(batch, "loss") == [(1, 2.9), (2, 2.8), (3, 2.7)]
    assert batch.meta["step_key"] == "step"


SWIFT = (
    "[INFO:swift] Start time of running main: 2025-01-01 10:00:00\n"
    "Train:   2%|▏         | 1/60 [00:42<41:47, 42.51s/it]{'loss': '0.3713', 'grad_norm': '0.8901', "
    "'learning_rate': '3.333e-05', 'epoch': '0.08602', 'global_step/max_steps': '1/60', 'elapsed_time': '43s', "
    "'remaining_time': '41m 48s', 'memory(GiB)': '14.3', 'train_speed(s/it)': '42.51'}\n"
    "{'loss': 0.2992, 'grad_norm': 0.6541, 'learning_rate': 9.97e-05, 'epoch': 0.4301, "
    "'global_step/max_steps': '5/60', 'percentage': '8.33%', 'elapsed_time': '3m 53s', 'remaining_time': '42m 43s'}\n"
    "{'eval_loss': '0.2804', 'eval_runtime': '9.8578', 'epoch': '0.4301', 'global_step/max_steps': '5/60', "
    "'percentage': '8.33%', 'elapsed_time': '4m 3s', 'remaining_time': '0s'}\n"
)


def test_a_counters_progress_in_a_string_is_the_step_and_its_total_and_times_are_no_metrics():
    # ms-swift prints its step as ``'global_step/max_steps': '5/60'`` beside a fractional epoch,
    # and its clock as ``'elapsed_time': '3m 53s'``: numbers only at the start of a string
    for batch, parser in ((TextParser().feed(SWIFT.encode(), 1), None), (None, TextParser())):
        if batch is None:
            batch = feed_lines(parser, SWIFT)
        assert pts(batch, "loss") == [(1, 0.3713), (5, 0.2992)]
        assert pts(batch, "eval_loss") == [(5, 0.2804)]
        assert pts(batch, "memory(GiB)") == [(1, 14.3)]
        assert not {"elapsed_time", "remaining_time", "percentage", "global_step/max_steps", "epoch"} & set(batch.series)
    parser = TextParser()
    feed_lines(parser, SWIFT)
    assert parser.state.meta["planned_steps"] == 60
    assert parser.state.meta["step_key"] == "global_step"


def test_a_json_counters_progress_is_the_step_and_a_progress_under_another_name_is_no_counter():
    text = ('{"loss": 0.5, "epoch": 0.1, "step": "10/200"}\n'
            '{"loss": 0.4, "epoch": 0.2, "step": "20/200", "shards": "3/8"}\n')
    parser = TextParser()
    batch = parser.feed(text.encode(), 1)
    assert pts(batch, "loss") == [(10, 0.5), (20, 0.4)]
    assert "shards" not in batch.series
    assert parser.state.meta["planned_steps"] == 200


VERL = (
    "trainer:\n"
    "  total_epochs: 15\n"
    "  total_training_steps: 200\n"
    "\x1b[36m(TaskRunner pid=1234)\x1b[0m step:1 - actor/entropy:np.float64(1.2) - actor/pg_loss:np.float64(-0.02) "
    "- critic/score/mean:0.25 - timing_s/step:60.5 - training/global_step:1 - training/epoch:0\n"
    "\x1b[36m(TaskRunner pid=1234)\x1b[0m step:2 - actor/entropy:1.1 - actor/pg_loss:0.01 - critic/score/mean:0.5 "
    "- timing_s/step:59.5 - training/global_step:2 - training/epoch:0\n"
    "(TaskRunner pid=1234) step:2 - val-core/openai/gsm8k/reward/mean@1:0.625 - val-aux/num_turns/min:1\n"
)


def test_verl_console_lines_behind_a_ray_prefix_with_metric_names_holding_an_at():
    # verl prints ``step:N - key:value - ...`` behind Ray's ``(TaskRunner pid=N)``: the process id
    # is no metric, ``mean@1`` is part of a name, and its config gives the planned total
    for parser, batch in ((TextParser(), None), (TextParser(), "lines")):
        batch = parser.feed(VERL.encode(), 1) if batch is None else feed_lines(parser, VERL)
        assert pts(batch, "actor/pg_loss") == [(1, -0.02), (2, 0.01)]
        assert pts(batch, "critic/score/mean") == [(1, 0.25), (2, 0.5)]
        assert pts(batch, "val-core/openai/gsm8k/reward/mean@1") == [(2, 0.625)]
        assert not {"pid", "training/global_step", "training/epoch", "total_training_steps"} & set(batch.series)
        assert parser.state.meta["planned_steps"] == 200


def test_planned_totals_as_trainers_spell_them():
    for line, total in (("  total_training_steps: 200", 200), ("--max_train_steps=1000", 1000),
                        ("  Total optimization steps = 1,250", 1250), ("max_iters = 5000", 5000),
                        ("  total_training_steps: null", None), ("max_steps: 1.5e3", None)):
        parser = TextParser()
        parser.feed(f"{line}\nstep 1: loss 2.5\nstep 2: loss 2.25\n".encode(), 1)
        assert parser.state.meta.get("planned_steps") == total, line


def test_llm_c_validation_lines_without_a_colon_and_torchtitans_planned_total():
    llmc = "".join(f"step {k:4d}/500 | train loss {4 / k:.6f} | norm 1.2 | lr 6.00e-04 | 150.00 ms | 45.2% bf16 MFU | 150000 tok/s\n"
                   for k in (1, 2)) + "val loss 3.500000\nval loss: 3.25\nval loss:3.125\n"
    batch = TextParser().feed(llmc.encode(), 1)
    assert pts(batch, "val loss") == [(2, 3.5), (2, 3.25), (2, 3.125)]
    titan = ("[rank0]:[titan] 2025-01-01 10:00:00,000 - root - INFO - Training starts at step 1, with local batch size 8, "
             "global batch size 64, sequence length 8192, total steps 1000 (warmup 200)\n"
             "[rank0]:[titan] 2025-01-01 10:00:05,000 - root - INFO - \x1b[31mstep:  1  \x1b[32mloss: 12.2500  "
             "\x1b[33mmemory: 30.12GiB(38.05%)  \x1b[34mtps: 1,234  \x1b[35mmfu: 15.06%\x1b[39m\n")
    parser = TextParser()
    batch = feed_lines(parser, titan)
    assert pts(batch, "loss") == [(1, 12.25)] and pts(batch, "tps") == [(1, 1234)]
    assert parser.state.meta["planned_steps"] == 1000


def test_nanotrons_magnitudes_are_their_numbers_and_its_bracketed_prefix_no_metrics():
    # nanotron writes ``tokens_per_sec: 1.3M`` behind ``[INFO|DP=0|PP=0|TP=0|lm-head-pp0]:``
    text = "".join(
        f"12/01/2024 10:00:0{k} [INFO|DP=0|PP=0|TP=0|lm-head-pp0]: iteration: {k} / 300 | consumed_tokens: {k * 0.5}M | "
        f"elapsed_time_per_iteration_ms: 1.2K | tokens_per_sec: 164K | lm_loss: {10 / k} | memory: 30.5GiB | lr: 0.0003\n"
        for k in (1, 2))
    for batch in (TextParser().feed(text.encode(), 1), feed_lines(TextParser(), text)):
        assert pts(batch, "lm_loss") == [(1, 10), (2, 5)]
        assert pts(batch, "consumed_tokens") == [(1, 500_000), (2, 1_000_000)]
        assert pts(batch, "tokens_per_sec") == [(1, 164_000), (2, 164_000)]
        assert pts(batch, "elapsed_time_per_iteration_ms") == [(1, 1200), (2, 1200)]
        assert pts(batch, "memory") == [(1, 30.5), (2, 30.5)]  # a unit, not a magnitude
        assert not {"DP", "PP", "TP"} & set(batch.series)


D2_EVAL = (
    "[03/15 10:00:00 d2.utils.events]:  eta: 0:10:00  iter: 999  total_loss: 0.9  loss_cls: 0.3  lr: 0.02  max_mem: 3417M\n"
    "[03/15 10:40:00 d2.evaluation.coco_evaluation]: Evaluation results for bbox: \n"
    "|   AP   |  AP50  |  AP75  |  APs   |  APm   |  APl   |\n"
    "|:------:|:------:|:------:|:------:|:------:|:------:|\n"
    "| 40.221 | 61.013 | 43.812 | 24.203 | 43.511 | 52.004 |\n"
    "[03/15 10:40:01 d2.evaluation.testing]: copypaste: Task: bbox\n"
    "[03/15 10:40:01 d2.evaluation.testing]: copypaste: AP,AP50,AP75,APs,APm,APl\n"
    "[03/15 10:40:01 d2.evaluation.testing]: copypaste: 40.2210,61.0130,43.8120,24.2030,43.5110,52.0040\n"
    "[03/15 10:40:01 d2.evaluation.testing]: copypaste: Task: segm\n"
    "[03/15 10:40:01 d2.evaluation.testing]: copypaste: AP,AP50\n"
    "[03/15 10:40:01 d2.evaluation.testing]: copypaste: 36.5,58.25\n"
    "[03/15 10:40:01 d2.evaluation.testing]: copypaste: 1.0,2.0\n"
    "[03/15 10:41:00 d2.utils.events]:  eta: 0:09:00  iter: 1019  total_loss: 0.875  loss_cls: 0.3  lr: 0.02  max_mem: 3417M\n"
)


def test_detectron2s_copypaste_evaluation_is_read_at_the_iteration_reached():
    for batch in (TextParser().feed(D2_EVAL.encode(), 1), feed_lines(TextParser(), D2_EVAL)):
        assert pts(batch, "total_loss") == [(999, 0.9), (1019, 0.875)]
        assert pts(batch, "eval_bbox/AP") == [(999, 40.221)]
        assert pts(batch, "eval_bbox/APl") == [(999, 52.004)]
        assert pts(batch, "eval_segm/AP50") == [(999, 58.25)]  # a row without its names is not read
        assert pts(batch, "max_mem") == [(999, 3417e6), (1019, 3417e6)]
        assert not any(name.startswith(("AP", "eval_AP")) for name in batch.series)


ACCELERATE = (
    "10/10/2022 22:57:22 - INFO - __main__ - ***** Running training *****\n"
    "10/10/2022 22:57:22 - INFO - __main__ -   Num Epochs = 5\n"
    "10/10/2022 22:57:22 - INFO - __main__ -   Total optimization steps = 245\n"
    " 20%|##        | 49/245 [01:03<04:11,  1.28s/it]\n"
    "10/10/2022 22:58:29 - INFO - __main__ - epoch 0: perplexity: 1222.16 eval_loss: 7.108\n"
    " 40%|####      | 98/245 [02:05<03:08,  1.28s/it]\n"
    "10/10/2022 22:59:29 - INFO - __main__ - epoch 1: perplexity: 894.52 eval_loss: 6.796\n"
)


def test_a_total_of_optimizer_steps_is_no_total_of_an_axis_of_epochs():
    # accelerate's no-trainer examples log their evaluation per epoch under the Trainer-like
    # banner: 'at step 1 of 245 planned' would compare epochs with optimizer steps
    for feed in (lambda p: p.feed(ACCELERATE.encode(), 1), lambda p: feed_lines(p, ACCELERATE)):
        parser = TextParser()
        batch = feed(parser)
        assert pts(batch, "eval_loss") == [(0, 7.108), (1, 6.796)]
        assert batch.meta["step_key"] == "epoch" and batch.meta.get("planned_steps") is None
    steps = "  Total optimization steps = 245\n" + "".join(f"step {k}: loss {1 / k}\n" for k in (1, 2))
    assert TextParser().feed(steps.encode(), 1).meta["planned_steps"] == 245  # on an axis of steps it holds


METRIC_LOGGER = (
    "Namespace(batch_size=256, epochs=2, model='deit_tiny_patch16_224')\n"
    "Start training for 2 epochs\n"
    "Epoch: [0]  [  0/250]  eta: 0:02:30  lr: 0.000001  loss: 9.1294 (9.1794)  time: 0.6007  data: 0.0004  max mem: 5800\n"
    "Epoch: [0]  [249/250]  eta: 0:00:00  lr: 0.000021  loss: 8.8695 (8.9195)  time: 0.6007  data: 0.0004  max mem: 5800\n"
    "Epoch: [0] Total time: 0:02:31 (0.6007 s / it)\n"
    "Averaged stats: lr: 0.000021  loss: 8.9277 (8.9777)\n"
    "Test:  [ 0/20]  eta: 0:00:10  loss: 7.0000 (7.0000)  acc1: 2.0000 (2.0000)  time: 0.3876  data: 0.2001  max mem: 5800\n"
    "Test:  [19/20]  eta: 0:00:00  loss: 7.0000 (7.0000)  acc1: 2.0000 (2.0000)  time: 0.3876  data: 0.2001  max mem: 5800\n"
    "Test: Total time: 0:00:08 (0.3876 s / it)\n"
    "* Acc@1 2.000 Acc@5 20.000 loss 7.000\n"
    "Max accuracy: 2.00%\n"
    "Epoch: [1]  [  0/250]  eta: 0:02:30  lr: 0.000041  loss: 7.5 (7.5)  time: 0.6007  data: 0.0004  max mem: 5800\n"
    "Test:  Acc@1 3.500 Acc@5 25.000\n"
)


def test_a_metric_loggers_lines_step_on_the_global_batch_with_the_evaluation_at_each_epochs_end():
    # torchvision's references, DeiT, MAE, DETR and DINO: ``Epoch: [e]  [i/n]``, meters as
    # ``name: value (average)`` or ``name: value``; the evaluation's summary after ``*`` or ``Test:``
    for parser, batch in read_both(METRIC_LOGGER):
        assert pts(batch, "loss") == [(0, 9.1294), (249, 8.8695), (250, 7.5)]
        assert pts(batch, "lr") == [(0, 0.000001), (249, 0.000021), (250, 0.000041)]
        assert pts(batch, "max mem") == [(0, 5800), (249, 5800), (250, 5800)]
        assert pts(batch, "val_Acc@1") == [(250, 2.0), (500, 3.5)]
        assert pts(batch, "val_loss") == [(250, 7.0)]
        assert "eta" not in batch.series and "Max accuracy" not in batch.series
        assert parser.state.meta["planned_steps"] == 500  # 2 epochs of 250 batches


def test_paddledetections_bracketed_epoch_and_batch_make_the_global_batch():
    text = "".join(f"[08/15 04:03:30] ppdet.engine INFO: Epoch: [{e}] [{i:3d}/300] learning_rate: 0.064000 "
                   f"loss: {3 - e - i / 300:.6f} eta: 0:25:34 batch_cost: 1.3390 data_cost: 0.0007 ips: 17.9954 images/s\n"
                   for e in (0, 1) for i in (0, 20))
    for batch in (TextParser().feed(text.encode(), 1), feed_lines(TextParser(), text)):
        assert [step for step, _ in pts(batch, "loss")] == [0, 20, 300, 320]


def test_an_evaluation_shown_again_beside_every_step_is_one_point():
    # NeMo prints the latest validation on every training line until the next one; its
    # iteration counts within the epoch, its global_step through the training
    lines = [f"[default0]:Training epoch {k // 100}, iteration {k % 100}/100 | lr: 0.0003 | global_step: {k} | "
             f"reduced_train_loss: {7 - k / 100:.2f}" + ("" if k < 50 else f" | val_loss: {7.5 if k < 150 else 7.25}")
             for k in range(40, 160)]
    text = "\n".join(lines) + "\n"
    for batch in (TextParser().feed(text.encode(), 1), feed_lines(TextParser(), text)):
        assert pts(batch, "val_loss") == [(50, 7.5), (150, 7.25)]
        steps = [step for step, _ in pts(batch, "reduced_train_loss")]
        assert steps == list(range(40, 160))
        assert "global_step" not in batch.series


def test_mpi_output_tags_and_keys_with_parentheses():
    # Open MPI's --tag-output and horovodrun put the process before each line; DGL's
    # examples write ``Time(s) nan | Loss 2.1575``
    tagged = "".join(f"[1,{rank}]<stdout>:{line}\n" for epoch in (1, 2) for rank in (0, 1) for line in (
        f"Epoch {epoch}/2", f"250/250 - 5s - loss: {1.5 - epoch / 4 + rank / 100:.4f} - accuracy: 0.5 - val_loss: 0.9"))
    batch = TextParser().feed(tagged.encode(), 1)
    assert sorted(step for step, _ in pts(batch, "loss")) == [1, 1, 2, 2]  # both ranks' values, at their epochs
    dgl = "".join(f"Epoch {k:05d} | Time(s) {'nan' if k < 3 else '0.0041'} | Loss {2 - k / 10:.4f} | TrainAcc 0.18 | ValAcc 0.15\n"
                  for k in (1, 2, 3))
    for batch in (TextParser().feed(dgl.encode(), 1), feed_lines(TextParser(), dgl)):
        assert pts(batch, "Loss") == [(1, 1.9), (2, 1.8), (3, 1.7)]
        assert pts(batch, "ValAcc") == [(1, 0.15), (2, 0.15), (3, 0.15)]


def test_a_loguru_module_and_line_before_the_message_is_no_metric():
    text = "".join(f"2021-07-20 12:00:12 | INFO     | yolox.core.trainer:261 - epoch: 1/4, iter: {k}/250, mem: 6013Mb, "
                   f"iter_time: 0.502s, total_loss: {19 - k / 10:.1f}, lr: 4.000e-06, size: 640, ETA: 0:08:15\n" for k in (10, 20))
    for batch in (TextParser().feed(text.encode(), 1), feed_lines(TextParser(), text)):
        assert pts(batch, "total_loss") == [(10, 18.0), (20, 17.0)]
        assert not any("yolox" in name or "trainer" in name for name in batch.series)


def _yolox(epoch: int, k: int, epochs: int = 200, per_epoch: int = 661) -> str:
    return (f"2022-08-13 21:34:54.633 | INFO     | yolox.core.trainer:after_iter:261 - epoch: {epoch}/{epochs}, "
            f"iter: {k}/{per_epoch}, mem: 5707Mb, iter_time: 0.313s, total_loss: {19 - epoch / 20:.1f}, lr: 5.7e-09, size: 640\n")


def test_yoloxs_count_within_the_epoch_is_placed_when_lines_between_epochs_are_left_out():
    # epoch 1 then epoch 200 (the lines between cut out, or a log resumed late): the iter went on from
    # 30 to 650, yet a count of the run with a total of 661 over 200 epochs would not pass 30 in epoch 1
    text = "".join(_yolox(1, k) for k in (10, 20, 30)) + "".join(_yolox(200, k) for k in (650, 660))
    for batch in (TextParser().feed(text.encode(), 1), feed_lines(TextParser(), text)):
        assert [step for step, _ in pts(batch, "total_loss")] == [10, 20, 30, 199 * 661 + 650, 199 * 661 + 660]


def test_a_count_of_the_run_beside_its_epochs_stays_global():
    # PaddleSeg-like: a count of the whole run (total 4000 over 4 epochs) that went on at each epoch
    text = "".join(_yolox(e, k, epochs=4, per_epoch=4000) for e, k in ((1, 500), (1, 1000), (2, 1500), (2, 2000), (3, 2500)))
    for batch in (TextParser().feed(text.encode(), 1), feed_lines(TextParser(), text)):
        assert [step for step, _ in pts(batch, "total_loss")] == [500, 1000, 1500, 2000, 2500]


def test_dicts_at_a_fraction_of_an_epoch_under_a_harness_own_step_lines_are_that_steps_record():
    # a GRPO harness prints its own [STEP N] line, then TRL's dict at a fraction of an epoch: one run
    # of steps 1-3 (not a reset at every dict), the dict's new metrics at the step above it
    text = "".join(
        f"[STEP {k:3d}] loss={loss:.4f}  grad={0.1 / k:.4f}  lr=1.00e-05\n"
        f"{{'loss': '{loss:.5f}', 'grad_norm': '{0.1 / k:.4f}', 'reward': '{0.5 + k / 10}', 'epoch': '{k / 111:.6f}'}}\n"
        for k, loss in ((1, 0.0617), (2, 0.0512), (3, 0.0412)))
    for batch in (TextParser().feed(text.encode(), 1), feed_lines(TextParser(), text)):
        assert pts(batch, "loss") == [(1, 0.0617), (2, 0.0512), (3, 0.0412)]
        assert pts(batch, "reward") == [(1, 0.6), (2, 0.7), (3, 0.8)]
        assert [step for step, _ in pts(batch, "grad_norm")] == [1, 2, 3]


def test_an_epochs_line_in_a_log_counted_in_steps_is_at_the_step_the_epoch_ended_on():
    # a hand-written loop: a line per 100 steps, and the epoch's validation after them
    for sep in (" ", ", ", ": "):
        text = "".join(f"step{':' if sep == ': ' else ''} {s}{sep}loss{':' if sep == ': ' else ''} {2 - s / 1000}\n" for s in (100, 200)) \
            + f"epoch{':' if sep == ': ' else ''} 1{sep}val_loss{':' if sep == ': ' else ''} 1.8\n" \
            + "".join(f"step{':' if sep == ': ' else ''} {s}{sep}loss{':' if sep == ': ' else ''} {2 - s / 1000}\n" for s in (300, 400))
        for batch in (TextParser().feed(text.encode(), 1), feed_lines(TextParser(), text)):
            assert pts(batch, "val_loss") == [(200, 1.8)], sep
            assert [step for step, _ in pts(batch, "loss")] == [100, 200, 300, 400]


def test_fields_parted_by_spaces_alone_after_the_epoch():
    # print("epoch", e, "train_loss", x, "val_loss", y)
    text = "".join(f"epoch {e} train_loss {1 - e / 10:.2f} val_loss {1.1 - e / 10:.2f}\n" for e in (1, 2, 3))
    for batch in (TextParser().feed(text.encode(), 1), feed_lines(TextParser(), text)):
        assert pts(batch, "train_loss") == [(1, 0.9), (2, 0.8), (3, 0.7)]
        assert pts(batch, "val_loss") == [(1, 1.0), (2, 0.9), (3, 0.8)]
        assert batch.unmatched == 0


def test_epoch_lines_under_progress_bars_that_count_within_the_epoch_keep_every_epoch():
    # SpeechBrain: a bar of 13 batches per epoch, then the epoch's line: each epoch is a point (a
    # bar's count is no step of the run, so the epochs are not all put at batch 13)
    bar = "100%|" + "#" * 40 + "| 13/13 [00:01<00:00,  9.1it/s, train_loss=6.1]\n"
    text = "".join(f"speechbrain.utils.epoch_loop - Going into epoch {e}\n{bar}"
                   f"speechbrain.utils.train_logger - epoch: {e}, lr: 5.00e-04 - train loss1: {7 - e}, valid loss1: {8 - e}\n"
                   for e in (1, 2, 3))
    for batch in (TextParser().feed(text.encode(), 1), feed_lines(TextParser(), text)):
        assert len(pts(batch, "train loss1")) == 3
        assert [value for _, value in pts(batch, "train loss1")] == [6, 5, 4]


FLAIR = "".join(
    f"2023-02-27 17:07:43,414 epoch {e} - iter {i}/469 - loss {3 - e / 2 - i / 1000:.8f} - time (sec): 3.95 - samples/sec: 4201.00 - lr: 0.100000\n"
    for e in (1, 2) for i in (46, 92)
) + "2023-02-27 17:07:47,121 EPOCH 2 done: loss 1.9812 - lr 0.100000\n" \
    "2023-02-27 17:07:47,458 DEV : loss 1.5114094900901995 - f1-score (micro avg)  0.6850\n"


def test_flairs_dashed_fields_after_the_iteration_and_its_dev_summary():
    for batch in (TextParser().feed(FLAIR.encode(), 1), feed_lines(TextParser(), FLAIR)):
        assert [step for step, _ in pts(batch, "loss")] == [46, 92, 469 + 46, 469 + 92]
        assert pts(batch, "loss")[0] == (46, 2.454)
        assert pts(batch, "dev_loss") == [(469 + 92, 1.5114094900901995)]
        assert pts(batch, "dev_f1-score (micro avg)") == [(469 + 92, 0.685)]


TF_OD = "".join(
    f"INFO:tensorflow:Step {k} per-step time 0.567s\n"
    f"I0813 12:00:56.003700 139687560058752 model_lib_v2.py:700] Step {k} per-step time 0.567s\n"
    + "".join(f"{head}{{'Loss/classification_loss': {1 / k:.6f},\n 'Loss/total_loss': {2 / k:.6f},\n 'learning_rate': 0.008}}\n"
              for head in ("INFO:tensorflow:", "I0813 12:00:56.003700 139687560058752 model_lib_v2.py:701] "))
    for k in (100, 200))


def test_tensorflow_object_detections_losses_in_a_dict_over_several_lines_under_the_step():
    # printed twice, by TensorFlow's logger and by absl's: each value is read once
    for batch in (TextParser().feed(TF_OD.encode(), 1), feed_lines(TextParser(), TF_OD)):
        assert pts(batch, "Loss/total_loss") == [(100, 0.02), (200, 0.01)]
        assert pts(batch, "learning_rate") == [(100, 0.008), (200, 0.008)]
        assert pts(batch, "per-step time") == [(100, 0.567), (200, 0.567)]
    settings = "{'batch_size': 32,\n 'lr': 0.001}\niter 1: loss 2.0\n"
    assert sorted(TextParser().feed(settings.encode(), 1).series) == ["loss"]  # a dict under no step is no record


NNUNET_V2 = "".join(f"2024-03-01 21:{k // 10:02d}:{k % 10:02d}.593456: {line} \n" for k, line in enumerate((
    "This split has 16 training and 4 validation cases.",
    "Desired fold for training: 0",
    "",
    "Epoch 0",
    "Current learning rate: 0.01",
    "train_loss 0.05",
    "val_loss 0.125",
    "Pseudo dice [np.float32(0.3), np.float32(0.25)]",
    "Epoch time: 95.31 s",
    "Yayy! New best EMA pseudo Dice: 0.3",
    "",
    "Epoch 1",
    "Current learning rate: 0.00999",
    "train_loss -0.0180",
    "val_loss 0.052",
    "Pseudo dice [np.float32(0.359), np.float32(0.3)]",
    "Epoch time: 95.68 s",
    "Training done.",
    "Desired fold for training: 0",
    "Mean Validation Dice:  0.9181",
)))
NNUNET_V1 = (
    "2021-06-20 08:13:03.113071: lr: 0.01\n"
    "2021-06-20 08:13:03.123071: \n"
    "epoch:  0 \n"
    "2021-06-20 08:17:03.123071: train loss : 0.1000\n"
    "2021-06-20 08:17:43.123071: validation loss: 0.3000\n"
    "2021-06-20 08:17:43.133071: Average global foreground Dice: [0.5]\n"
    "2021-06-20 08:17:43.143071: (interpret this as an estimate for the Dice of the different classes. This is not exact.)\n"
    "2021-06-20 08:17:43.153071: lr: 0.009991\n"
    "2021-06-20 08:17:43.173071: This epoch took 288.040000 s\n"
    "\n"
    "2021-06-20 08:17:43.183071: \n"
    "epoch:  1 \n"
    "2021-06-20 08:21:43.183071: train loss : -0.0944\n"
    "2021-06-20 08:22:23.183071: validation loss: 0.1056\n"
    "2021-06-20 08:22:23.193071: Average global foreground Dice: [0.625]\n"
    "2021-06-20 08:22:23.213071: lr: 0.009982\n"
)


def test_nnunets_epoch_lines_and_their_values_on_lines_alone_behind_its_clock():
    # nnU-Net writes no line of a counter and a metric: ``Epoch 5`` on a line of its own, then one
    # value a line behind a wall-clock stamp (``train_loss -0.2396``, no colon); its losses are
    # negative (a Dice term), its pseudo Dice a list of one value a class
    from tuiloss.core.discover import sniff_head

    for text in (NNUNET_V2, NNUNET_V1):
        assert sniff_head("training_log_2024_3_1_21_49_46.txt", text.encode()) == ("text", "")
    for whole in (True, False):
        parser = TextParser()
        batch = parser.feed(NNUNET_V2.encode(), 1) if whole else feed_lines(parser, NNUNET_V2)
        assert pts(batch, "train_loss") == [(0, 0.05), (1, -0.018)]
        assert pts(batch, "val_loss") == [(0, 0.125), (1, 0.052)]
        assert pts(batch, "Pseudo dice[0]") == [(0, 0.3), (1, 0.359)]
        assert pts(batch, "Pseudo dice[1]") == [(0, 0.25), (1, 0.3)]
        assert pts(batch, "Current learning rate") == [(0, 0.01), (1, 0.00999)]
        assert pts(batch, "Mean Validation Dice") == [(1, 0.9181)]  # the final validation, after training
        # a time with its unit, a running best and a setting printed again are no points
        assert set(batch.series) == {"train_loss", "val_loss", "Pseudo dice[0]", "Pseudo dice[1]",
                                     "Current learning rate", "Mean Validation Dice"}
        assert parser.state.meta["step_key"] == "epoch"
        assert parser.ending is not None and parser.ending.kind == "finished"
        parser = TextParser()
        batch = parser.feed(NNUNET_V1.encode(), 1) if whole else feed_lines(parser, NNUNET_V1)
        assert pts(batch, "train loss") == [(0, 0.1), (1, -0.0944)]
        assert pts(batch, "validation loss") == [(0, 0.3), (1, 0.1056)]
        assert pts(batch, "Average global foreground Dice") == [(0, 0.5), (1, 0.625)]
        assert pts(batch, "lr") == [(0, 0.009991), (1, 0.009982)]  # (not the setting before training)


def test_gpt_neox_validation_results_and_its_speed_before_the_iteration():
    # GPT-NeoX prints ``validation results at iteration N`` (Megatron-LM ``validation loss at``) and
    # starts its training line with ``samples/sec``
    rule = "-" * 99 + "\n"
    neox = "".join(
        f" samples/sec: {52 + k / 10:.3f} | iteration {k * 10:8d}/{500:8d} | elapsed time per iteration (ms): 626.1 | "
        f"learning rate: 1.199E-04 | lm_loss: {8 - k:.6E} | loss scale: 65536.0 | number of skipped iterations:   0 |\n"
        for k in (1, 2)) + rule + (
        " validation results at iteration 20 | lm_loss value: 6.500000E+00 | lm_loss_ppl value: 6.650000E+02 | \n") + rule
    megatron = (" [2024-05-01 12:00:00] iteration       20/     500 | consumed samples:         1280 | lm loss: 6.250000E+00 |\n"
                + rule + " validation loss at iteration 20 | lm loss value: 7.900000E+00 | lm loss PPL: 2.800000E+03 | \n" + rule)
    for whole in (True, False):
        parser = TextParser()
        batch = parser.feed(neox.encode(), 1) if whole else feed_lines(parser, neox)
        assert pts(batch, "lm_loss") == [(10, 7), (20, 6)]
        assert pts(batch, "samples/sec") == [(10, 52.1), (20, 52.2)]
        assert pts(batch, "val_lm_loss") == [(20, 6.5)]
        assert pts(batch, "val_lm_loss_ppl") == [(20, 665)]
        assert parser.state.meta["planned_steps"] == 500
        parser = TextParser()
        batch = parser.feed(megatron.encode(), 1) if whole else feed_lines(parser, megatron)
        assert pts(batch, "lm loss") == [(20, 6.25)] and pts(batch, "consumed samples") == [(20, 1280)]
        assert pts(batch, "validation lm loss") == [(20, 7.9)]
        assert pts(batch, "validation lm loss PPL") == [(20, 2800)]


FAIRSEQ2 = (
    "[Rank 0] 2025-04-18 12:00:02,007 INFO fairseq2 - Config:\n"
    "  regime:\n"
    "    num_steps: 400\n"
    "[Rank 0] 2025-04-18 12:09:40,805 INFO fairseq2 - Train Metrics (step 100) - Loss: 136.993 | Gradient Norm: 8.46 | "
    "Elapsed Time: 565s | Learning Rate: 5e-05 | Elements per Second: 1,791 | Padding Ratio (%): 12%\n"
    "[Rank 0] 2025-04-18 12:09:41,007 INFO fairseq2 - Validating at step 100.\n"
    "[Rank 0] 2025-04-18 12:10:26,315 INFO fairseq2 - Validation Metrics (step 100) - Loss: 164.391 | "
    "Unit Error Rate (UER): 51.20 | Word Error Rate (WER): 85.33 | Elapsed Time: 41s | Number of Examples: 2,416\n"
    "[Rank 0] 2025-04-18 12:12:21,805 INFO fairseq2 - Train Metrics (step 120) - Loss: 108.081 | Gradient Norm: 7.75 | "
    "Elapsed Time: 680s | Learning Rate: 5e-05 | Elements per Second: 1,790 | Padding Ratio (%): 11%\n"
    "[Rank 0] 2025-04-18 12:41:34,007 INFO fairseq2 - End of training reached at step 120.\n"
    "[Rank 0] 2025-04-18 12:41:35,007 INFO fairseq2 - Training complete in 46m 12s! Model saved to /ckpt/omniasr_ctc_300m\n"
)


def test_fairseq2_keys_with_an_abbreviation_in_parentheses_and_its_end_of_training():
    for parser, batch in read_both(FAIRSEQ2):
        assert pts(batch, "Loss") == [(100, 136.993), (120, 108.081)]
        assert pts(batch, "val_Loss") == [(100, 164.391)]
        assert pts(batch, "val_Unit Error Rate (UER)") == [(100, 51.2)]
        assert pts(batch, "val_Word Error Rate (WER)") == [(100, 85.33)]
        assert pts(batch, "Padding Ratio (%)") == [(100, 12), (120, 11)]
        assert parser.ending is not None and parser.ending.kind == "finished"
        # a regime's ``num_steps`` is no planned total everywhere (CleanRL's is the steps of one rollout)
        assert "planned_steps" not in parser.state.meta


UNSLOTH = (
    "==((====))==  Unsloth - 2x faster free finetuning | Num GPUs = 1\n"
    "   \\\\   /|    Num examples = 51,760 | Num Epochs = 1\n"
    "O^O/ \\_/ \\    Batch size per device = 2 | Gradient Accumulation steps = 4\n"
    "\\        /    Total batch size = 8 | Total steps = 60\n"
    ' "-____-"     Number of trainable parameters = 41,943,040\n'
    "{'loss': 2.6228, 'grad_norm': 0.698158, 'learning_rate': 4e-05, 'epoch': 0.0002}\n"
    "{'loss': 2.5145, 'grad_norm': 0.785511, 'learning_rate': 8e-05, 'epoch': 0.0003}\n"
)


def test_unsloths_banner_gives_no_points_and_its_total_steps_is_the_planned_total():
    # ``Gradient Accumulation steps = 4`` and ``Total steps = 60`` are amounts set for the run, not the
    # step reached: the banner's batch sizes were points at "step 4" and "step 60"
    for parser, batch in read_both(UNSLOTH):
        assert set(batch.series) == {"loss", "grad_norm", "learning_rate"}
        assert pts(batch, "loss") == [(0.0002, 2.6228), (0.0003, 2.5145)]
        assert parser.state.meta["planned_steps"] == 60
    for line, total in (("Total steps: 60", 60), ("  TOTAL STEPS = 1,000", 1000), ("Total steps: 5000 | reward: 12.5", None)):
        parser = TextParser()
        parser.feed(f"{line}\nstep 1: loss 2.5\nstep 2: loss 2.25\n".encode(), 1)
        assert parser.state.meta.get("planned_steps") == total, line
    # a running total of steps beside a metric is still the step (an RL loop's ``Total steps``)
    batch = TextParser().feed(b"Total steps: 5000 | reward: 12.5\nTotal steps: 6000 | reward: 13.5\n", 1)
    assert pts(batch, "reward") == [(5000, 12.5), (6000, 13.5)]


SKLEARN_MLP = (
    "Fitting MLPClassifier(early_stopping=True, hidden_layer_sizes=(100,), max_iter=200, verbose=True)\n"
    "Iteration 1, loss = 0.69549982\n"
    "Validation score: 0.627984\n"
    "Iteration 2, loss = 0.65386959\n"
    "Validation score: 0.653731\n"
    "Validation score did not improve more than tol=0.000100 for 10 consecutive epochs. Stopping.\n"
    "test set score: 0.947500\n"
)


def test_scikit_learns_validation_score_is_an_evaluation_like_an_accuracy_and_its_stop_ends_the_run():
    from tuiloss.core.analysis import metrics

    for parser, batch in read_both(SKLEARN_MLP):
        assert pts(batch, "loss") == [(1, 0.69549982), (2, 0.65386959)]
        assert pts(batch, "Validation score") == [(1, 0.627984), (2, 0.653731)]
        assert parser.ending is not None and (parser.ending.kind, parser.ending.reason) == ("finished", "early stopping")
    for name in ("Validation score", "val_score", "test set score"):
        assert metrics.is_eval(name) and metrics.role(name) == "accuracy", name
    assert metrics.role("score") == "reward" and metrics.role("eval_episode/score") == "reward"  # an RL episode's


MONAI = (
    "Loading dataset: 100%|##########| 32/32 [00:41<00:00,  1.29s/it]\n"
    + "".join("----------\n" + f"epoch {e}/3\n" + "".join(f"{b}/4, train_loss: {1 - e / 10 - b / 100:.4f}\n" for b in (1, 2, 3, 4))
              + f"epoch {e} average loss: {1 - e / 10:.4f}\n" for e in (1, 2, 3))
)
MONAI = MONAI.replace("epoch 2 average loss: 0.8000\n", "epoch 2 average loss: 0.8000\nsaved new best metric model\n"
                      "current epoch: 2 current mean dice: 0.6582\nbest mean dice: 0.7300 at epoch: 1\n")
MONAI += "train completed, best_metric: 0.7300 at epoch: 1\n"


def test_monai_batches_under_an_epoch_line_step_globally_and_its_running_best_is_no_point():
    # MONAI's tutorials print ``1/16, train_loss: 0.1751`` under ``epoch 12/20``: the batch in the epoch;
    # ``best mean dice: 0.73 at epoch: 10`` is the best so far and the epoch it was reached at
    for parser, batch in read_both(MONAI):
        assert [s for s, _ in pts(batch, "train_loss")] == list(range(1, 13))
        assert pts(batch, "train_loss")[4] == (5, 0.79)  # epoch 2, batch 1
        assert pts(batch, "loss") == [(4, 0.9), (8, 0.8), (12, 0.7)]  # each epoch's mean, at its end
        assert pts(batch, "dice") == [(8, 0.6582)]
        assert not any("best" in name for name in batch.series)
        assert parser.state.meta["planned_epochs"] == 3 and parser.state.meta["planned_steps"] == 12
        assert parser.ending is not None and parser.ending.kind == "finished"


SPEECHBRAIN = (
    "epoch: 39, lr: 3.55e-04, steps: 55653, optimizer: Adam - train loss: 12.18 - valid loss: 13.96, valid ACC: 0.95, valid WER: 9.60\n"
    "epoch: 40, lr: 3.44e-04, steps: 57080, optimizer: Adam - train loss: 12.15 - valid loss: 13.94, valid ACC: 0.95, valid WER: 9.52\n"
    "Epoch loaded: 40 - test loss: 15.10, test CER: 3.41, test WER: 9.87\n"
    "Epoch loaded: 40 - test-other loss: 25.30, test-other CER: 7.12, test-other WER: 19.44\n"
)


def test_speechbrain_tests_of_the_loaded_epoch_are_read_at_the_last_step_and_the_epoch_loaded_is_no_metric():
    # SpeechBrain's train_log.txt ends with the tests of the checkpoint it loaded, a line per test set
    for _, batch in read_both(SPEECHBRAIN):
        assert pts(batch, "train loss") == [(55653, 12.18), (57080, 12.15)]
        assert pts(batch, "test loss") == [(57080, 15.10)]
        assert pts(batch, "test-other loss") == [(57080, 25.30)]  # the second test set's line: read, not unmatched
        assert pts(batch, "test-other WER") == [(57080, 19.44)]
        assert "Epoch loaded" not in batch.series and batch.unmatched == 0
