"""The step axis: the most global counter a log writes, whatever the format."""

import pytest

from tuiloss.core.engine import load
from tuiloss.core.formats.base import find_step_key, is_metric_name, step_rank


@pytest.mark.parametrize("names, expected", [
    (["epoch", "global_step", "loss"], "global_step"),
    (["epoch", "micro_step", "global_step"], "global_step"),
    (["epoch", "step", "loss"], "step"),
    (["time/iterations", "time/total_timesteps", "train/loss"], "time/total_timesteps"),
    (["num_updates", "epoch", "loss"], "num_updates"),
    (["iteration", "consumed_samples", "lm loss"], "iteration"),
    (["current_steps", "epoch", "loss"], "current_steps"),
    (["Global Step", "Epoch"], "Global Step"),
    (["globalStep", "epoch"], "globalStep"),
    (["epoch", "loss"], "epoch"),
    (["loss", "lr"], None),
])
def test_a_global_counter_is_preferred_over_a_local_one(names, expected):
    assert find_step_key(names) == expected


def test_the_user_can_name_the_step():
    assert find_step_key(["epoch", "global_step"], prefer="epoch") == "epoch"
    assert step_rank("global_step") < step_rank("step") < step_rank("epoch")


def test_log_prefix_tokens_are_not_metric_names():
    assert not is_metric_name("logging.py") and not is_metric_name("train.py")
    assert is_metric_name("loss") and is_metric_name("lm loss") and is_metric_name("tok/s")


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_deepspeed_timer_lines_take_the_global_step_not_the_epoch(tmp_path):
    lines = []
    for k in range(1, 13):
        epoch, micro = divmod(k * 10, 40)
        lines.append(f"[2023-04-18 02:03:40,414] [INFO] [timer.py:199:stop] epoch={epoch}/micro_step={micro}/"
                     f"global_step={k * 10}, RunningAvgSamplesPerSec=171.7, CurrSamplesPerSec=17{k % 10}.3, "
                     f"MemAllocated=3.96GB\n")
    store, _, _ = load([str(_write(tmp_path / "ds" / "train.log", "".join(lines)))])
    (run,) = list(store)
    steps = run.series["CurrSamplesPerSec"].visible()[0]
    assert steps.tolist() == [k * 10 for k in range(1, 13)]
    assert not any(name.endswith(".py") for name in run.series)
    assert run.primary_metric is None  # throughput only: nothing to judge


def test_a_csv_with_total_timesteps_uses_it_as_the_step(tmp_path):
    rows = ["time/iterations,time/total_timesteps,train/loss,rollout/ep_rew_mean"]
    rows += [f"{i},{i * 2048},{1.0 / i},{7.0 * i}" for i in range(1, 11)]
    store, _, _ = load([str(_write(tmp_path / "ppo" / "progress.csv", "\n".join(rows) + "\n"))])
    (run,) = list(store)
    assert run.series["train/loss"].visible()[0].tolist() == [i * 2048 for i in range(1, 11)]
    assert "time/total_timesteps" not in run.series


def test_jsonl_with_epoch_and_global_step_uses_the_global_step(tmp_path):
    text = "".join(f'{{"epoch": {i // 5}, "global_step": {i * 8}, "loss": {2 - i / 10}}}\n' for i in range(1, 11))
    store, _, _ = load([str(_write(tmp_path / "r" / "log.jsonl", text))])
    (run,) = list(store)
    assert run.series["loss"].visible()[0].tolist() == [i * 8 for i in range(1, 11)]


def test_a_counter_written_before_a_finer_one_in_key_value_lines(tmp_path):
    lines = "".join(f"INFO epoch: {i // 4} iteration {i * 10} loss: {2 - i / 20:.3f} lr: 0.001\n" for i in range(1, 13))
    store, _, _ = load([str(_write(tmp_path / "r" / "train.log", lines))])
    (run,) = list(store)
    assert run.series["loss"].visible()[0].tolist() == [i * 10 for i in range(1, 13)]
