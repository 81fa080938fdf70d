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
