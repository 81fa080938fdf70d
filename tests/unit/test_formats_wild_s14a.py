"""Log shapes of pairs without a counter word and of sentences, on small logs written here: CenterNet's
progress lines and ``log.txt``, hand-written ``[e][b/N] loss=...`` lines under epoch summaries,
PyTorch-YOLOv3's blocks, nanoT5's ``Key --> value``, Dopamine and Sample Factory (see test_formats_wild)."""

from __future__ import annotations

from tuiloss.core.analysis.metrics import choose_primary, eval_counterpart, role
from wild_helpers import batches, pts, read_both


def _names(batch) -> list[str]:
    return sorted(name for name in batch.series if not name.startswith("_"))


# -- CenterNet, FairMOT, CenterTrack -----------------------------------------------------------


def _centernet(phase: str, epoch: int, k: int, loss: float) -> str:
    return (f"ctdet/coco_dla| {phase}: [{epoch}][{k}/3]|Tot: 0:00:{20 + k:02d} |ETA: 0:00:00 |loss {loss:.4f} "
            f"|hm_loss {loss - 2:.4f} |wh_loss 22.5000 |off_loss 0.2500 |Data 0.{700 + k}s(0.736s) |Net {8 - k:.3f}s\n")


CENTERNET = (
    "Loaded train 1955 samples\n"
    "Starting training...\n"
    "0\n"
    + _centernet("train", 1, 0, 250.5)
    + "0\n1\n"
    + _centernet("train", 1, 1, 200.25)
    + "2\n"
    + _centernet("train", 1, 2, 180.0)
    + _centernet("val", 1, 0, 12.5)
    + _centernet("val", 1, 2, 11.5)
    + _centernet("train", 2, 0, 8.0)
    + "7\n"
)


def test_centernets_progress_lines_step_on_the_global_batch_their_times_are_times():
    # ``train: [2][0/3]`` is the 4th batch (epochs count from 1 here, batches from 0); nothing was read before
    for batch in batches(CENTERNET):
        assert pts(batch, "loss") == [(0, 250.5), (1, 200.25), (2, 180.0), (3, 8.0)]
        assert pts(batch, "hm_loss") == [(0, 248.5), (1, 198.25), (2, 178.0), (3, 6.0)]
        assert pts(batch, "Data time") == [(0, 0.7), (1, 0.701), (2, 0.702), (3, 0.7)]
        assert pts(batch, "Net time") == [(0, 8.0), (1, 7.0), (2, 6.0), (3, 8.0)]
        # the clocks (``Tot``, ``ETA``), the evaluation's progress and the stray integers are no points
        assert _names(batch) == ["Data time", "Net time", "hm_loss", "loss", "off_loss", "wh_loss"]
        assert choose_primary(list(batch.series)) == "loss"
        assert [role(name) for name in ("Data time", "Net time", "hm_loss")] == ["time", "time", "loss"]


def test_centernets_log_txt_is_a_point_an_epoch_its_validation_named_for_it():
    # the validation's values follow the training's on the line, under the same keys
    text = (
        "2025-12-02-20-20: epoch: 1 |loss 5.646465 | hm_loss 2.343528 | wh_loss 1.702252 | time 0.016667 |\n"
        "2025-12-03-06-39: epoch: 2 |loss 4.437072 | hm_loss 1.758706 | wh_loss 1.516937 | time 0.016667 | "
        "loss 4.900000 | hm_loss 2.000000 | wh_loss 1.600000 | time 0.005000 | \n"
    )
    for parser, batch in read_both(text):
        assert pts(batch, "loss") == [(1, 5.646465), (2, 4.437072)]
        assert pts(batch, "wh_loss") == [(1, 1.702252), (2, 1.516937)]
        assert pts(batch, "val_loss") == [(2, 4.9)] and pts(batch, "val_hm_loss") == [(2, 2.0)]
        assert pts(batch, "time") == [(1, 0.016667), (2, 0.016667)] and pts(batch, "val_time") == [(2, 0.005)]
        assert len(_names(batch)) == 8  # the date before each line is no metric
        assert parser.state.meta["step_key"] == "epoch"
        assert eval_counterpart("loss", batch.series) == "val_loss"


# -- hand-written ``[e][b/N] loss=...`` lines and their epochs' summaries ------------------------

HANDWRITTEN = """\
Training for 5 epochs
  [1][100/200] loss=66.7476 (hm=66.748 sz=0.000)
  [1][200/200] loss=51.4778 (hm=51.478 sz=0.000)
Epoch   1/5 | train: 337.3360 | val: 50.3708 | lr: 1.81e-04 | time: 666.9s
  \u2192 Saved checkpoint: checkpoints/best.pth
  [2][100/200] loss=4.4399 (hm=4.440 sz=0.000)
  [2][200/200] loss=3.3577 (hm=3.358 sz=0.000)
Epoch   2/5 | train: 16.1462 | val: 2.6588 | lr: 1.31e-04 | time: 645.4s
"""


def test_handwritten_batch_lines_step_globally_and_their_epochs_losses_sit_at_each_epochs_end():
    # on one chart: the batches' loss, and each epoch's mean train loss and validation loss where the epoch ends
    for parser, batch in read_both(HANDWRITTEN):
        assert pts(batch, "loss") == [(100, 66.7476), (200, 51.4778), (300, 4.4399), (400, 3.3577)]
        assert pts(batch, "hm") == [(100, 66.748), (200, 51.478), (300, 4.44), (400, 3.358)]
        assert pts(batch, "sz") == [(100, 0.0), (200, 0.0), (300, 0.0), (400, 0.0)]
        assert pts(batch, "train_loss") == [(200, 337.336), (400, 16.1462)]
        assert pts(batch, "val_loss") == [(200, 50.3708), (400, 2.6588)]
        assert pts(batch, "lr") == [(200, 1.81e-4), (400, 1.31e-4)]
        assert pts(batch, "time") == [(200, 666.9), (400, 645.4)]
        assert _names(batch) == ["hm", "loss", "lr", "sz", "time", "train_loss", "val_loss"]
        assert choose_primary(list(batch.series)) == "loss"
        assert parser.state.meta["planned_steps"] == 1000  # 5 epochs of 200 batches


def test_a_bracketed_epoch_and_count_needs_its_count_and_total_to_lead_the_line():
    # ``[2][100/200]`` leads the line before a key; a list of numbers in brackets is no counter
    text = "[2, 3] [4/5] loss=1.5\nresult [2][100/200] loss=0.5\n"
    for batch in batches(text):
        assert "loss" not in batch.series


# -- eriklindernoren's PyTorch-YOLOv3 ------------------------------------------------------------


def _yolov3_block(epoch: int, k: int, loss: float) -> str:
    return (
        f"\n---- [Epoch {epoch}/3, Batch {k}/10] ----\n"
        "+------------+--------------+--------------+\n"
        "| Metrics    | YOLO Layer 0 | YOLO Layer 1 |\n"
        "+------------+--------------+--------------+\n"
        "| grid_size  | 38           | 76           |\n"
        f"| loss       | {loss / 2:.6f}    | {loss / 2:.6f}    |\n"
        "| cls_acc    | 100.00%      | 100.00%      |\n"
        "+------------+--------------+--------------+\n"
        f"Total loss {loss}\n"
        "---- ETA 0:00:10.369194\n"
    )


YOLOV3 = (
    _yolov3_block(0, 0, 57.91100311279297) + _yolov3_block(0, 9, 40.5)
    + "\n---- Evaluating Model ----\n+-------+------------+---------+\n| Index | Class name | AP      |\n"
    + "| 0     | sign       | 0.12500 |\n+-------+------------+---------+\n---- mAP 0.125\n"
    + _yolov3_block(1, 0, 30.25)
)


def test_pytorch_yolov3s_total_loss_is_read_at_the_global_batch_and_its_map_at_the_epochs_end():
    for parser, batch in read_both(YOLOV3):
        assert pts(batch, "total_loss") == [(0, 57.91100311279297), (9, 40.5), (10, 30.25)]
        assert pts(batch, "val_mAP") == [(10, 0.125)]
        assert _names(batch) == ["total_loss", "val_mAP"]  # the layers' table, its grid sizes among it, is no series
        assert parser.state.meta["planned_steps"] == 30 and parser.state.meta["step_key"] == "batch"
        assert choose_primary(list(batch.series)) == "total_loss"


# -- nanoT5 --------------------------------------------------------------------------------------

NANOT5 = (
    "[train] Step 100 out of 65536 | Loss --> 59.881 | Grad_l2 --> 61.126 | Weights_l2 --> 7042.931 | Lr --> 0.010 "
    "| Seconds_per_step --> 1.385 | \n"
    "[train] Step 200 out of 65536 | Loss --> 9.881 | Grad_l2 --> 1.126 | Weights_l2 --> 7043.931 | Lr --> 0.010 "
    "| Seconds_per_step --> 1.285 | \n"
    "[eval] Step 200 out of 65536 | Loss --> 3.500 | Accuracy --> 0.250 | Time --> 30.500 | \n"
)


def test_nanot5s_arrows_separate_keys_from_values_and_its_steps_have_their_total_in_words():
    for parser, batch in read_both(NANOT5):
        assert pts(batch, "Loss") == [(100, 59.881), (200, 9.881)]
        assert pts(batch, "Grad_l2") == [(100, 61.126), (200, 1.126)]
        assert pts(batch, "Weights_l2") == [(100, 7042.931), (200, 7043.931)]
        assert pts(batch, "Seconds_per_step") == [(100, 1.385), (200, 1.285)]
        assert pts(batch, "eval_Loss") == [(200, 3.5)] and pts(batch, "eval_Accuracy") == [(200, 0.25)]
        assert len(_names(batch)) == 8
        assert parser.state.meta["planned_steps"] == 65536 and parser.state.meta["step_key"] == "step"
        assert choose_primary(list(batch.series)) == "Loss"
        assert [role(name) for name in ("Grad_l2", "Weights_l2", "Lr", "Seconds_per_step")] == ["norm", "norm", "lr", "time"]


def test_an_arrow_between_two_numbers_is_no_separator():
    # pytorchtools' EarlyStopping: the loss went from one value to the other
    text = "step 10 | loss 0.7 |\nValidation loss decreased (0.693147 --> 0.650000).  Saving model ...\nstep 20 | loss 0.6 |\n"
    for batch in batches(text):
        assert _names(batch) == ["loss"] and pts(batch, "loss") == [(10, 0.7), (20, 0.6)]


# -- Dopamine ------------------------------------------------------------------------------------


def _dopamine_iteration(n: int, train: float, evaluation: float) -> str:
    prefix = f"I0908 17:19:{39 + n}.618797 1803949 run_experiment.py"
    return (f"{prefix}:446] Starting iteration {n}\n"
            f"{prefix}:405] Average undiscounted return per training episode: {train:.2f}\n"
            f"{prefix}:407] Average training steps per second: {1027.8 + n:.2f}\n"
            f"{prefix}:427] Average undiscounted return per evaluation episode: {evaluation:.2f}\n")


DOPAMINE = "I0908 17:19:38.000000 1803949 train.py:50] Creating runner\n" + _dopamine_iteration(0, -168.19, -279.07) + \
    _dopamine_iteration(1, -120.5, -150.25)


def test_dopamines_returns_are_rewards_at_each_iteration():
    # read a line at a time, the iteration's line is read again with the first value that shows the family
    for parser, batch in read_both(DOPAMINE):
        assert pts(batch, "train_average_return") == [(0, -168.19), (1, -120.5)]
        assert pts(batch, "eval_average_return") == [(0, -279.07), (1, -150.25)]
        assert pts(batch, "train_average_steps_per_second") == [(0, 1027.8), (1, 1028.8)]
        assert len(_names(batch)) == 3
        assert parser.state.meta["step_key"] == "iteration"
        assert choose_primary(list(batch.series)) == "train_average_return"
        assert [role(name) for name in _names(batch)] == ["reward", "reward", "throughput"]


def test_a_starting_iteration_line_alone_does_not_lock_a_log_to_dopamine():
    text = "Starting iteration 3\nstep: 1, loss: 2.5\nstep: 2, loss: 2.25\n"
    for batch in batches(text):
        assert pts(batch, "loss") == [(1, 2.5), (2, 2.25)]


# -- Sample Factory ------------------------------------------------------------------------------


def _sample_factory(frames: int, fps: str, rewards: str) -> str:
    return (f"[2022-11-30 19:48:21,166][07494] Fps is (10 sec: {fps}, 60 sec: 20377.6, 300 sec: 20377.6). "
            f"Total num frames: {frames}. Throughput: 0: 5085.4. Samples: 203415. Policy #0 lag: (min: 0.0, avg: 1.9, max: 5.0)\n"
            f"[2022-11-30 19:48:21,166][07494] Avg episode reward: [{rewards}]\n")


SAMPLE_FACTORY = (
    "[2022-11-30 19:48:11,000][07494] Fps is (10 sec: nan, 60 sec: nan, 300 sec: nan). Total num frames: 0. Throughput: 0: nan. "
    "Samples: 0. Policy #0 lag: (min: -1.0, avg: -1.0, max: -1.0)\n"
    "[2022-11-30 19:48:19,509][07580] Updated weights for policy 0, policy_version 926 (0.0015)\n"
    + _sample_factory(3829760, "22528.2", "(0, '0.824')")
    + _sample_factory(3932160, "20480.5", "(0, '-1.250'), (1, '2.500')")
)


def test_sample_factorys_rewards_sit_at_the_frames_counted_so_far():
    for parser, batch in read_both(SAMPLE_FACTORY):
        assert pts(batch, "avg_episode_reward") == [(3829760, 0.824), (3932160, -1.25)]
        assert pts(batch, "avg_episode_reward/policy_1") == [(3932160, 2.5)]
        assert pts(batch, "fps") == [(3829760, 22528.2), (3932160, 20480.5)]  # no ``nan`` before a window passed
        assert _names(batch) == ["avg_episode_reward", "avg_episode_reward/policy_1", "fps"]
        assert parser.state.meta["step_key"] == "frames"
        assert choose_primary(list(batch.series)) == "avg_episode_reward"
        assert role("fps") == "throughput"


def test_a_bare_phase_key_is_that_phases_loss_only_as_a_whole_key():
    text = "epoch 1 | train: 0.5 | val: 0.75 | val_acc: 0.5\nepoch 2 | training: 0.25 | validation: 0.5 | val_acc: 0.75\n"
    for batch in batches(text):
        assert pts(batch, "train_loss") == [(1, 0.5), (2, 0.25)] and pts(batch, "val_loss") == [(1, 0.75), (2, 0.5)]
        assert pts(batch, "val_acc") == [(1, 0.5), (2, 0.75)]
