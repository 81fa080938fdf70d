"""OpenAI baselines' logger tables: Stable-Baselines3's shape without sections (on a small log written here)."""

from __future__ import annotations

from tuiloss.core.discover import sniff_head
from tuiloss.core.formats.stdout import TextParser
from wild_helpers import feed_lines, pts


def _table(update: int) -> str:
    rows = {"approxkl": 0.0031, "eprewmean": 20.0 + update, "nupdates": update, "policy_loss": -0.013,
            "serial_timesteps": 128 * update, "total_timesteps": 1024 * update, "value_loss": 0.5 / update}
    width = max(len(key) for key in rows)
    ruler = "-" * (width + 17) + "\n"
    return ruler + "".join(f"| {key:<{width}} | {value:<12g} |\n" for key, value in rows.items()) + ruler


LOG = "".join(_table(update) for update in range(1, 4))


def test_a_table_is_points_at_its_total_timesteps_and_its_counts_no_metrics():
    assert sniff_head("log.txt", LOG.encode()) == ("text", "")
    for batch in (TextParser().feed(LOG.encode(), 1), feed_lines(TextParser(), LOG)):
        assert pts(batch, "eprewmean") == [(1024.0, 21.0), (2048.0, 22.0), (3072.0, 23.0)]
        assert pts(batch, "value_loss") == [(1024.0, 0.5), (2048.0, 0.25), (3072.0, 0.166667)]  # as printed
        assert "nupdates" not in batch.series and "serial_timesteps" not in batch.series
        assert "total_timesteps" not in batch.series
