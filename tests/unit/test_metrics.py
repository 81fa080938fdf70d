"""What metric names mean: role, direction, evaluation, and the primary metric of a run."""

import pytest

from tuiloss.core.analysis.metrics import Direction, choose_primary, direction, eval_counterpart, is_eval, role


@pytest.mark.parametrize("name, expected", [
    ("loss", "loss"), ("train/loss", "loss"), ("lm loss", "loss"), ("xent", "loss"), ("cross entropy", "loss"),
    ("nll_loss", "loss"), ("total_loss", "loss"), ("trl", "loss"), ("trainLoss", "loss"),
    ("ppl", "ppl"), ("validation lm loss PPL", "ppl"), ("perplexity", "ppl"),
    ("acc", "accuracy"), ("val_accuracy", "accuracy"), ("val/bbox_mAP", "accuracy"), ("BLEU", "accuracy"),
    ("f1", "accuracy"), ("eval/accuracy", "accuracy"), ("dice_coef", "accuracy"),
    ("rollout/ep_rew_mean", "reward"), ("eval/mean_reward", "reward"), ("score", "reward"),
    ("success_rate", "accuracy"), ("pass@1", "accuracy"), ("train_step_timing in s", "time"),
    ("wer", "error"),
    ("CurrSamplesPerSec", "throughput"), ("RunningAvgSamplesPerSec", "throughput"), ("tok/sec", "throughput"),
    ("tok/s", "throughput"), ("it/s", "throughput"), ("time/fps", "throughput"),
    ("eval/samples_per_second", "throughput"), ("tokens per second", "throughput"),
    ("t", "time"), ("eta", "time"), ("dt", "time"), ("data_time", "time"), ("eval/runtime", "time"),
    ("elapsed time per iteration (ms)", "time"),
    ("MaxMemAllocated", "memory"), ("memory", "memory"),
    ("lr", "lr"), ("learning rate", "lr"), ("train/learning_rate", "lr"),
    ("grad_norm", "norm"), ("gnorm", "norm"),
    ("loss scale", "scale"), ("loss_scale", "scale"),
    ("N", "count"), ("consumed samples", "count"), ("number of nan iterations", "count"), ("skipped", "count"),
    ("epoch", "step"), ("micro_step", "step"), ("time/total_timesteps", "step"),
    ("logging.py", "other"), ("96", "other"),
    # PaddlePaddle's seconds per batch and waiting for data; a cost alone is the objective
    ("batch_cost", "time"), ("data_cost", "time"), ("avg_reader_cost", "time"), ("avg_batch_cost", "time"),
    ("cost_ms", "time"), ("cost", "loss"), ("train_cost", "loss"), ("val_cost", "loss"), ("avg_cost", "loss"),
    ("eval_sts-dev_spearman_cosine", "accuracy"), ("pearson", "accuracy"),
])
def test_role_of_names_seen_in_real_logs(name, expected):
    assert role(name) == expected


@pytest.mark.parametrize("name, expected", [
    ("loss", Direction.LOWER), ("xent", Direction.LOWER), ("ppl", Direction.LOWER), ("wer", Direction.LOWER),
    ("acc", Direction.HIGHER), ("val/bbox_mAP", Direction.HIGHER), ("rollout/ep_rew_mean", Direction.HIGHER),
    ("BLEU", Direction.HIGHER), ("f1", Direction.HIGHER),
    ("lr", Direction.UNKNOWN), ("CurrSamplesPerSec", Direction.UNKNOWN), ("explained_variance", Direction.UNKNOWN),
    ("some_custom_thing", Direction.UNKNOWN), ("my_weird_loss", Direction.LOWER),
])
def test_direction_follows_the_role(name, expected):
    assert direction(name) is expected


@pytest.mark.parametrize("name, expected", [
    ("val_loss", True), ("eval/loss", True), ("validation lm loss", True), ("valid_loss", True), ("tel", True),
    ("test_acc", True), ("metrics/val_loss", True),
    ("loss", False), ("train/loss", False), ("train_val_ratio", False), ("rollout/ep_rew_mean", False),
])
def test_evaluation_series_by_prefix(name, expected):
    assert is_eval(name) is expected


@pytest.mark.parametrize("names, expected", [
    # DeepSpeed-Chat: throughput and log-prefix tokens around a perplexity
    (["CurrSamplesPerSec", "RunningAvgSamplesPerSec", "logging.py", "skipped", "ppl"], "ppl"),
    (["CurrSamplesPerSec", "RunningAvgSamplesPerSec", "logging.py", "micro_step", "skipped"], None),
    # OpenNMT: the loss is xent, before its perplexity and accuracy
    (["acc", "lr", "ppl", "xent"], "xent"),
    # fairseq / generic names with spaces
    (["cross entropy", "wps", "ups"], "cross entropy"),
    # a loss never named like the list: any train loss, the total before components
    (["loss_cls", "loss_bbox", "loss_total_weird", "lr"], "loss_total_weird"),
    (["rpn_loss", "lr", "time"], "rpn_loss"),
    # eval loss when there is no train loss, before accuracy
    (["val_loss", "val_accuracy", "lr"], "val_loss"),
    # RL: the reward
    (["rollout/ep_rew_mean", "time/fps", "time/iterations"], "rollout/ep_rew_mean"),
    # metric-only logs: the accuracy, never the throughput
    (["eval/accuracy", "eval/samples_per_second", "eval/runtime"], "eval/accuracy"),
    (["tok/s", "N", "t", "eta"], None),
    ([], None),
])
def test_choose_primary_by_meaning(names, expected):
    assert choose_primary(names) == expected


def test_eval_counterpart_of_a_loss_named_otherwise():
    assert eval_counterpart("xent", ["xent", "val_loss", "acc"]) == "val_loss"
    assert eval_counterpart("train/loss", ["train/loss", "eval/loss"]) == "eval/loss"
    assert eval_counterpart("loss", ["loss", "lr"]) is None


def test_a_name_of_no_known_role_is_still_charted_but_never_a_prefix_token():
    assert choose_primary(["step_time", "value"]) == "value"
    assert direction("value") is Direction.UNKNOWN
    assert choose_primary(["logging.py", "96", "CurrSamplesPerSec"]) is None
    assert choose_primary(["bpb", "lr"]) == "bpb" and direction("val_bpb") is Direction.LOWER


@pytest.mark.parametrize("name, expected", [
    ("reward_std", "other"),  # GRPO's spread of the group's rewards: no better way
    ("rewards/fbeta_reward/std", "other"),
    ("frac_reward_zero_std", "other"),
    ("loss_std", "other"),
    ("reward", "reward"),
    ("variance_loss", "loss"),  # VICReg's variance term is a loss
    ("TFLOP/s/device", "throughput"),  # MaxText
    ("Tokens/s/device", "throughput"),
    ("tok/s", "throughput"),
])
def test_spreads_and_rates_per_device(name, expected):
    assert role(name) == expected


def test_a_spread_of_rewards_is_never_the_primary_metric():
    assert choose_primary(["reward_std", "reward", "kl"]) == "reward"
    assert choose_primary(["reward_std", "completion_length"]) != "reward_std"
