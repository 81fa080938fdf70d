"""Ray Tune's result blocks (RLlib's training runs), on a small log written here."""

from __future__ import annotations

from tuiloss.core.discover import sniff_head
from tuiloss.core.formats.stdout import TextParser
from wild_helpers import feed_lines, pts


def _result(iteration: int) -> str:
    return f"""== Status ==
Number of trials: 1/1 (1 RUNNING)

Result for PPO_CartPole-v1_95ec4_00000:
  agent_timesteps_total: {4000 * iteration}
  config:
    lr: 5.0e-05
    train_batch_size: 4000
  date: 2022-04-28_03-31-53
  done: false
  episode_reward_mean: {20.0 + iteration}
  episodes_total: {40 * iteration}
  hist_stats:
    episode_reward: [12.0, 30.0]
  info:
    learner:
      default_policy:
        learner_stats:
          policy_loss: -0.0{iteration}
          total_loss: {10.0 / iteration}
    num_steps_sampled: {4000 * iteration}
  perf:
    cpu_util_percent: 36.4
  pid: 3889
  time_this_iter_s: 80.5
  timesteps_total: {4000 * iteration}
  training_iteration: {iteration}

"""


LOG = "".join(_result(k) for k in range(1, 4))
LOSS = "info/learner/default_policy/learner_stats/total_loss"


def test_a_result_block_is_points_at_its_timesteps_its_nested_keys_joined():
    assert sniff_head("stdout.log", LOG.encode()) == ("text", "")
    for batch in (TextParser().feed(LOG.encode(), 1), feed_lines(TextParser(), LOG)):
        assert pts(batch, "episode_reward_mean") == [(4000.0, 21.0), (8000.0, 22.0), (12000.0, 23.0)]
        assert pts(batch, LOSS) == [(4000.0, 10.0), (8000.0, 5.0), (12000.0, 10.0 / 3)]
        assert pts(batch, "time_this_iter_s")[0] == (4000.0, 80.5)
        assert batch.meta["step_key"] == "timesteps_total"


def test_settings_histograms_load_and_counts_are_no_metrics():
    batch = TextParser().feed(LOG.encode(), 1)
    assert not any(name.startswith(("config", "hist_stats", "perf")) for name in batch.series)
    for name in ("pid", "episodes_total", "agent_timesteps_total", "training_iteration", "timesteps_total",
                 "info/num_steps_sampled"):
        assert name not in batch.series


def test_a_block_cut_between_two_reads_is_read_once_it_ends():
    parser = TextParser()
    cut = LOG.index("  pid:")
    first = parser.feed(LOG[:cut].encode(), 1)
    rest = parser.feed(LOG[cut:].encode(), LOG[:cut].count("\n") + 1)
    first.merge(rest)
    assert pts(first, "episode_reward_mean") == [(4000.0, 21.0), (8000.0, 22.0), (12000.0, 23.0)]
