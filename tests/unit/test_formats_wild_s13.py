"""Yet more log shapes seen in public training logs, on small logs written here (see test_formats_wild)."""

from __future__ import annotations

from tuiloss.core.analysis.metrics import choose_primary, role
from tuiloss.core.formats.layout import LAYOUT_MIN_BYTES
from tuiloss.core.formats.stdout import TextParser
from wild_helpers import batches, feed_lines, pts


def feed_chunks(parser, text: str, size: int):
    """Feed ``text`` in pieces of whole lines of about ``size`` bytes, as a tailer of a busy file would."""
    out, pos, line = None, 0, 1
    while pos < len(text):
        end = text.find("\n", pos + size) + 1 or len(text)
        batch = parser.feed(text[pos:end].encode(), line)
        line += text.count("\n", pos, end)
        out = batch if out is None else out.merge(batch) or out
        pos = end
    return out


# -- batches under epoch lines of their own, in a read long enough for a layout ------------------


def _epochs_of_batches(line: str, epochs: int, batches: int, head: str = "") -> str:
    out = [head]
    for epoch in range(1, epochs + 1):
        out.append(f"=== Epoch {epoch} ===\n")
        out += [line.format(b=b, loss=4 + epoch + b / 1000) for b in range(1, batches + 1)]
    return "".join(out)


def test_batches_under_epoch_lines_step_globally_however_much_is_read_at_once():
    # ``Batch 7: loss=...`` under ``=== Epoch 2 ===`` is the 7th batch of epoch 2: a read of the whole
    # file (fast enough for a layout) used to give step 7, a line at a time gave 700 + 7
    for line in ("Batch {b}: loss={loss:.3f}\n", "  batch {b}, loss: {loss:.3f}\n", "Iter {b} | loss {loss:.3f}\n"):
        text = _epochs_of_batches(line, epochs=3, batches=700)
        assert len(text) > 2 * LAYOUT_MIN_BYTES
        expected = [(float((e - 1) * 700 + b), round(4 + e + b / 1000, 3)) for e in (1, 2, 3) for b in range(1, 701)]
        for batch in batches(text) + [feed_chunks(TextParser(), text, LAYOUT_MIN_BYTES + 100)]:
            assert pts(batch, "loss") == expected, line


def test_a_layout_learnt_before_the_first_epoch_line_is_dropped_at_it():
    # batches before any epoch line are steps of their own; from the first epoch line on they count within it
    head = "".join(f"Batch {b}: loss={3 + b / 1000:.3f}\n" for b in range(1, 1201))
    text = _epochs_of_batches("Batch {b}: loss={loss:.3f}\n", epochs=2, batches=1200, head=head)
    expected = pts(feed_lines(TextParser(), text), "loss")
    assert expected[1199] == (1200.0, 4.2) and expected[1200] == (1.0, 5.001) and expected[-1] == (2400.0, 7.2)
    for size in (LAYOUT_MIN_BYTES, 3 * LAYOUT_MIN_BYTES, len(text)):
        assert pts(feed_chunks(TextParser(), text, size), "loss") == expected


def test_a_global_step_under_epoch_lines_is_still_read_by_a_layout():
    # ``step`` counts on across epochs here, so the fast read of its lines is kept
    text = "".join(
        f"Epoch {e}\n" + "".join(f"step: {s}, loss: {5 - s / 1e4:.4f}, lr: 0.001\n" for s in range(e * 800, e * 800 + 800))
        for e in range(3)
    )
    parser = TextParser()
    batch = parser.feed(text.encode(), 1)
    assert parser.layouts.layout is not None
    assert pts(batch, "loss") == pts(feed_lines(TextParser(), text), "loss")
    assert [s for s, _ in pts(batch, "loss")] == list(range(2400))



# -- icefall ------------------------------------------------------------------------------------

ICEFALL = """\
2024-02-03 08:00:00,100 INFO [train.py:1100] (0/2) Training started
2024-02-03 08:00:00,200 INFO [train.py:1110] (0/2) {'best_train_loss': inf, 'batch_idx_train': 0, 'log_interval': 20, 'valid_interval': 40, 'num_epochs': 2}
2024-02-03 08:00:01,000 INFO [train.py:1000] (0/2) Computing validation loss
2024-02-03 08:00:05,000 INFO [train.py:1010] (0/2) Epoch 1, validation: loss=5.5, ctc_loss=4.25, over 50000.00 frames. 
2024-02-03 08:00:06,000 INFO [train.py:990] (0/2) Epoch 1, batch 0, loss[loss=6.5, ctc_loss=5.5, over 1200.00 frames. ], tot_loss[loss=6.75, ctc_loss=5.75, over 3000.00 frames. ], batch size: 40, lr: 1.00e-04, grad_scale: 1.0
2024-02-03 08:00:16,000 INFO [train.py:990] (0/2) Epoch 1, batch 20, loss[loss=4.5, ctc_loss=3.5, over 1300.00 frames. ], tot_loss[loss=5.25, ctc_loss=4.25, over 26000.00 frames. ], batch size: 38, lr: 2.00e-03, grad_scale: 1.0
2024-02-03 08:00:26,000 INFO [train.py:990] (0/2) Epoch 1, batch 40, loss[loss=3.5, ctc_loss=2.75, over 1250.00 frames. ], tot_loss[loss=4.25, ctc_loss=3.25, over 51000.00 frames. ], batch size: 41, lr: 4.00e-03, grad_scale: 2.0
2024-02-03 08:00:27,000 INFO [train.py:1000] (0/2) Computing validation loss
2024-02-03 08:00:31,000 INFO [train.py:1010] (0/2) Epoch 1, validation: loss=3.75, ctc_loss=3.0, over 50000.00 frames. 
2024-02-03 08:00:32,000 INFO [train.py:1020] (0/2) Maximum memory allocated so far is 9000MB
2024-02-03 08:00:36,000 INFO [train.py:990] (0/2) Epoch 1, batch 60, loss[loss=3.25, ctc_loss=2.5, over 1210.00 frames. ], tot_loss[loss=3.75, ctc_loss=3.0, over 60000.00 frames. ], batch size: 39, lr: 6.00e-03, grad_scale: 2.0
2024-02-03 08:00:40,000 INFO [checkpoint.py:75] (0/2) Saving checkpoint to exp/epoch-1.pt
2024-02-03 08:00:46,000 INFO [train.py:990] (0/2) Epoch 2, batch 0, loss[loss=3.0, ctc_loss=2.25, over 1200.00 frames. ], tot_loss[loss=3.0, ctc_loss=2.25, over 1200.00 frames. ], batch size: 40, lr: 8.00e-03, grad_scale: 2.0
2024-02-03 08:00:56,000 INFO [train.py:990] (0/2) Epoch 2, batch 20, loss[loss=2.75, ctc_loss=2.0, over 1300.00 frames. ], tot_loss[loss=2.875, ctc_loss=2.125, over 26000.00 frames. ], batch size: 38, lr: 8.00e-03, grad_scale: 4.0
2024-02-03 08:00:57,000 INFO [train.py:1010] (0/2) Epoch 2, validation: loss=2.5, ctc_loss=2.0, over 50000.00 frames. 
2024-02-03 08:01:00,000 INFO [train.py:1200] (0/2) Done!
"""


def test_icefalls_batch_and_running_average_are_series_of_their_own_on_the_global_batch():
    # ``loss[...]`` is the batch's, ``tot_loss[...]`` the running average: once read as one series that
    # zigzagged between them; the batch count restarts at 0 every epoch (61 batches in epoch 1 here)
    for batch in batches(ICEFALL):
        assert pts(batch, "loss") == [(0, 6.5), (20, 4.5), (40, 3.5), (60, 3.25), (61, 3.0), (81, 2.75)]
        assert pts(batch, "tot_loss") == [(0, 6.75), (20, 5.25), (40, 4.25), (60, 3.75), (61, 3.0), (81, 2.875)]
        assert pts(batch, "ctc_loss")[3:] == [(60, 2.5), (61, 2.25), (81, 2.0)]
        assert pts(batch, "tot_ctc_loss")[:2] == [(0, 5.75), (20, 4.25)]
        assert pts(batch, "lr")[-1] == (81, 8e-3) and pts(batch, "grad_scale")[-1] == (81, 4.0)
        # validation runs within the epoch: at the batch reached (before any batch: at 0)
        assert pts(batch, "valid_loss") == [(0, 5.5), (40, 3.75), (81, 2.5)]
        assert pts(batch, "valid_ctc_loss") == [(0, 4.25), (40, 3.0), (81, 2.0)]
        assert sorted(n for n in batch.series if not n.startswith("_")) == ["ctc_loss", "grad_scale", "loss", "lr", "tot_ctc_loss", "tot_loss",
                                                                         "valid_ctc_loss", "valid_loss"]  # no frames, no batch size
        assert batch.meta["step_key"] == "batch"


def test_icefalls_older_validation_line_and_a_loss_alone_in_its_summaries():
    text = (
        "2023-01-02 10:00:00,000 INFO [train.py:400] Epoch 0, batch 0, loss[loss=1.25, over 2400.00 frames. ], "
        "tot_loss[loss=1.25, over 2400.00 frames. ], batch size: 4\n"
        "2023-01-02 10:00:01,000 INFO [train.py:400] Epoch 0, batch 10, loss[loss=0.5, over 2800.00 frames. ], "
        "tot_loss[loss=0.75, over 22000.50 frames. ], batch size: 4\n"
        "2023-01-02 10:00:02,000 INFO [train.py:420] Epoch 0, validation loss=0.875, over 18000.00 frames.\n"
        "2023-01-02 10:00:03,000 INFO [train.py:400] Epoch 1, batch 0, loss[loss=0.25, over 2400.00 frames. ], "
        "tot_loss[loss=0.25, over 2400.00 frames. ], batch size: 5\n"
        "2023-01-02 10:00:04,000 INFO [train.py:420] Epoch 1, validation loss=0.125, over 18000.00 frames.\n"
    )
    for batch in batches(text):
        assert pts(batch, "loss") == [(0, 1.25), (10, 0.5), (11, 0.25)]
        assert pts(batch, "tot_loss") == [(0, 1.25), (10, 0.75), (11, 0.25)]
        assert pts(batch, "valid_loss") == [(10, 0.875), (11, 0.125)]
        assert sorted(batch.series) == ["loss", "tot_loss", "valid_loss"]


# -- PaddleDetection's times -------------------------------------------------------------------


def test_paddledetections_batch_and_data_costs_are_times_and_an_older_logs_cost_is_the_loss():
    # ``cost`` is a loss word: ``batch_cost: 0.41`` and ``data_cost: 0.003`` (seconds) were losses
    text = "".join(
        f"[03/02 11:00:{i:02d}] ppdet.engine INFO: Epoch: [0] [{i:3d}/120] learning_rate: 0.010000 loss_cls: {2 - i / 100:.6f} "
        f"loss: {3 - i / 100:.6f} eta: 0:10:00 batch_cost: {0.41 + i / 1000:.4f} data_cost: 0.0030 ips: 19.5000 images/s\n"
        for i in (0, 10, 20)
    )
    for batch in batches(text):
        assert pts(batch, "batch_cost") == [(0, 0.41), (10, 0.42), (20, 0.43)]
        assert pts(batch, "data_cost") == [(0, 0.003), (10, 0.003), (20, 0.003)]
        assert [role(name) for name in ("batch_cost", "data_cost", "loss", "loss_cls")] == ["time", "time", "loss", "loss"]
        assert choose_primary(list(batch.series)) == "loss"
    old = "Epoch: 0001 cost= 2.302585093\nEpoch: 0002 cost= 1.201234567\n"
    for batch in batches(old):
        assert pts(batch, "cost") == [(1, 2.302585093), (2, 1.201234567)]
        assert role("cost") == "loss" and choose_primary(list(batch.series)) == "cost"


# -- Tianshou ------------------------------------------------------------------------------------


def _tianshou_epoch(epoch: int, reward: float, spread: float, best: float) -> str:
    bars = "".join(
        f"\rEpoch #{epoch}: {k * 50}%|#####     | {k * 500}/1000 [00:01<00:01, 900.00it/s, env_step={(epoch - 1) * 1000 + k * 500}, "
        f"len={10 + k}, loss={1.5 - epoch / 10 - k / 100:.3f}, n/ep=4, n/st=10, rew={10 + k}.00]"
        for k in (1, 2)
    )
    return (f"Epoch #{epoch}:   0%|          | 0/1000 [00:00<?, ?it/s]{bars}\n"
            f"Epoch #{epoch}: test_reward: {reward:.6f} ± {spread:.6f}, best_reward: {best:.6f} ± {spread:.6f} in #{epoch}\n")


TIANSHOU = (
    "Observations shape: (4,)\n"
    + _tianshou_epoch(1, 12.5, 2.25, 12.5)
    + _tianshou_epoch(2, 9.75, 1.5, 12.5)
    + _tianshou_epoch(3, 30.0, 0.5, 30.0)
    + "{'best_result': '30.00 ± 0.50', 'best_reward': 30.0, 'duration': '9.10s', 'test_episode': 300, "
    "'test_speed': '5000.00 step/s', 'test_step': 4200, 'test_time': '0.84s', 'train_episode': 250, "
    "'train_speed': '900.00 step/s', 'train_step': 3000, 'train_time/model': '2.10s'}\n"
)


def test_tianshous_test_reward_is_its_mean_at_each_epochs_end_and_its_best_is_no_point():
    # ``test_reward: 12.5 ± 2.25`` was read as nothing (the spread is no field end); its best so far
    # (``best_reward: ... in #1``) and the summary's best are running bests, never points
    for batch in batches(TIANSHOU):
        assert pts(batch, "test_reward") == [(1000, 12.5), (2000, 9.75), (3000, 30.0)]
        assert pts(batch, "loss") == [(500, 1.39), (1000, 1.38), (1500, 1.29), (2000, 1.28), (2500, 1.19), (3000, 1.18)]
        assert not any("best" in name for name in batch.series)
        assert not any(value in (2.25, 1.5, 0.5) for _, values in batch.series.values() for value in values)
        # the summary's step is the training's steps, not its tests'
        assert pts(batch, "train_episode") == [(3000, 250)] and batch.meta["step_key"] == "train_step"


def test_a_spread_after_a_mean_leaves_the_mean():
    text = "step 10: acc: 0.91 +/- 0.02, loss: 0.25\nstep 20: acc: 0.93 ± 0.01, loss: 0.125\n"
    for batch in batches(text):
        assert pts(batch, "acc") == [(10, 0.91), (20, 0.93)] and pts(batch, "loss") == [(10, 0.25), (20, 0.125)]
        assert sorted(batch.series) == ["acc", "loss"]


# -- Marian NMT ----------------------------------------------------------------------------------

MARIAN = """\
[2023-03-04 09:00:01] [marian] Marian v1.12.0 abcdef12 2023-02-20 10:00:00 +0000
[2023-03-04 09:00:02] [config] disp-freq: 200
[2023-03-04 09:00:03] [data] Setting vocabulary size for input 0 to 16,000
[2023-03-04 09:00:04] Training started
[2023-03-04 09:01:00] Ep. 1 : Up. 200 : Sen. 20,400 : Cost 8.50000000 * 812,340 @ 3,010 after 812,340 : Time 40.50s : 20057.78 words/s : gNorm 1.2500 : L.r. 1.0000e-05
[2023-03-04 09:02:00] Ep. 1 : Up. 400 : Sen. 40,800 : Cost 7.25000000 * 811,020 @ 2,990 after 1,623,360 : Time 40.25s : 20149.56 words/s : gNorm 1.1250 : L.r. 2.0000e-05
[2023-03-04 09:02:01] Saving model weights and runtime parameters to model/model.iter400.npz
[2023-03-04 09:02:02] [valid] Ep. 1 : Up. 400 : ce-mean-words : 6.875 : new best
[2023-03-04 09:02:03] [valid] Ep. 1 : Up. 400 : perplexity : 968.75 : new best
[2023-03-04 09:02:04] [valid] Ep. 1 : Up. 400 : bleu : 3.125 : new best
[2023-03-04 09:03:00] Starting data epoch 2 in logical epoch 2
[2023-03-04 09:04:00] Ep. 2 : Up. 600 : Sen. 9,600 : Cost 6.00000000 * 813,500 @ 3,005 after 2,436,860 : Time 40.75s : 19963.19 words/s : gNorm 1.0000 : L.r. 3.0000e-05
[2023-03-04 09:05:00] Ep. 2 : Up. 800 : Sen. 30,000 : Cost 5.50000000 * 812,000 @ 2,998 after 3,248,860 : Time 40.50s : 20049.38 words/s : gNorm 0.8750 : L.r. 4.0000e-05
[2023-03-04 09:05:02] [valid] Ep. 2 : Up. 800 : ce-mean-words : 7.000 : stalled 1 times (last best: 6.875)
[2023-03-04 09:05:03] [valid] Ep. 2 : Up. 800 : perplexity : 1096.63 : stalled 1 times (last best: 968.75)
[2023-03-04 09:05:04] [valid] Ep. 2 : Up. 800 : bleu : 4.5 : new best
[2023-03-04 09:05:05] Training finished
"""


def test_marians_updates_are_the_step_its_cost_the_loss_and_its_validations_valid_series():
    for batch in batches(MARIAN):
        assert pts(batch, "cost") == [(200, 8.5), (400, 7.25), (600, 6.0), (800, 5.5)]
        assert pts(batch, "words/s") == [(200, 20057.78), (400, 20149.56), (600, 19963.19), (800, 20049.38)]
        assert pts(batch, "gNorm") == [(200, 1.25), (400, 1.125), (600, 1.0), (800, 0.875)]
        assert pts(batch, "lr") == [(200, 1e-5), (400, 2e-5), (600, 3e-5), (800, 4e-5)]
        assert pts(batch, "time")[-1] == (800, 40.5)
        assert pts(batch, "valid_ce-mean-words") == [(400, 6.875), (800, 7.0)]
        assert pts(batch, "valid_perplexity") == [(400, 968.75), (800, 1096.63)]
        assert pts(batch, "valid_bleu") == [(400, 3.125), (800, 4.5)]
        assert sorted(n for n in batch.series if not n.startswith("_")) == [
            "cost", "gNorm", "lr", "time", "valid_bleu", "valid_ce-mean-words", "valid_perplexity", "words/s"]
        assert batch.meta["step_key"] == "updates"
        assert choose_primary(list(batch.series)) == "cost"
        assert [role(n) for n in ("words/s", "gNorm", "valid_ce-mean-words", "valid_bleu")] == [
            "throughput", "norm", "loss", "accuracy"]


# -- DreamerV3's console -------------------------------------------------------------------------

DREAMER = """\
Logdir: /runs/dmc_walker
Observations
  image            Space(uint8, shape=(64, 64, 3), low=0, high=255)
Start training loop
Writing metrics: /runs/dmc_walker/metrics.jsonl

--------------------[Step 5000]--------------------

episode/score 12.5 / episode/length 500 / train/loss/dec 3.1e4 / train/loss/rew 0.75 / train/opt/grad_norm 120 / fps/train 64.5

Writing metrics: /runs/dmc_walker/metrics.jsonl

--------------------[Step 10000]--------------------

train/loss/dec 2.5e4 / train/loss/rew 0.5 / train/opt/grad_norm 96 / fps/train 65.25

Writing metrics: /runs/dmc_walker/metrics.jsonl
"""


def test_dreamerv3s_console_steps_on_its_ruled_header_and_reads_the_fields_under_it():
    for batch in batches(DREAMER):
        assert pts(batch, "train/loss/dec") == [(5000, 31000.0), (10000, 25000.0)]
        assert pts(batch, "train/loss/rew") == [(5000, 0.75), (10000, 0.5)]
        assert pts(batch, "episode/score") == [(5000, 12.5)]  # only when an episode ended
        assert pts(batch, "fps/train") == [(5000, 64.5), (10000, 65.25)]
        assert sorted(batch.series) == ["episode/length", "episode/score", "fps/train", "train/loss/dec",
                                        "train/loss/rew", "train/opt/grad_norm"]
        assert batch.meta["step_key"] == "step"


# -- Sentence-Transformers' evaluators (before v3) -----------------------------------------------


def _sbert_block(stamp: str, where: str, base: float) -> str:
    rows = [("Cosine-Similarity :", 0.0), ("Manhattan-Distance:", -0.0125), ("Euclidean-Distance:", -0.015),
            ("Dot-Product-Similarity:", -0.03125)]
    head = f"{stamp} - EmbeddingSimilarityEvaluator: Evaluating the model on sts-dev dataset{where}:\n"
    return head + "".join(f"{stamp} - {sim}\tPearson: {base + shift:.5f}\tSpearman: {base + shift + 0.0025:.5f}\n"
                          for sim, shift in rows)


SBERT = (
    "2022-05-01 12:00:00 - Use pytorch device: cpu\n"
    "2022-05-01 12:00:01 - Warmup-steps: 40\n"
    "Epoch:   0%|          | 0/2 [00:00<?, ?it/s]\n"
    + _sbert_block("2022-05-01 12:01:00", " in epoch 0 after 100 steps", 0.75)
    + "2022-05-01 12:01:01 - Save model to output/sts\n"
    + _sbert_block("2022-05-01 12:02:00", " after epoch 0", 0.78125)
    + _sbert_block("2022-05-01 12:03:00", " in epoch 1 after 100 steps", 0.8125)
    + _sbert_block("2022-05-01 12:04:00", " after epoch 1", 0.8125)
    + "2022-05-01 12:04:30 - Load pretrained SentenceTransformer: output/sts\n"
    + _sbert_block("2022-05-01 12:05:00", "", 0.796875).replace("sts-dev", "sts-test")
)


def test_sentence_transformers_similarity_evaluations_at_the_global_step():
    # the steps count within the epoch; the epoch's end is where the epoch's steps end
    for batch in batches(SBERT):
        assert pts(batch, "eval_sts-dev_pearson_cosine") == [(100, 0.75), (100, 0.78125), (200, 0.8125), (200, 0.8125)]
        assert pts(batch, "eval_sts-dev_spearman_cosine")[0] == (100, 0.7525)
        assert pts(batch, "eval_sts-dev_pearson_dot")[2] == (200, 0.78125)
        assert pts(batch, "eval_sts-test_spearman_manhattan") == [(200, 0.78687)]  # the test after training
        assert len([n for n in batch.series if not n.startswith("_")]) == 16
        assert choose_primary(list(batch.series)) == "eval_sts-dev_pearson_cosine"
        assert role("eval_sts-dev_spearman_cosine") == "accuracy"
