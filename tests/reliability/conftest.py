"""Options of the reliability suite.

``--chaos-seconds N`` gives the chaos test N seconds per watch mode (inotify and
polling); ``--long`` makes that ten minutes unless ``--chaos-seconds`` says
otherwise; ``--chaos-trials N`` sets the fewest trials per mode. A failing
trial prints its seed: ``TUILOSS_CHAOS_SEED=<seed> pytest tests/reliability/test_chaos.py``
replays exactly that trial in both modes. With ``--long`` each trial also writes
for longer (up to 8 s), so histories grow deeper between the destructive events.

The options are registered in ``tests/conftest.py`` so they work from the root too.
"""

from __future__ import annotations

import pytest

#: Seconds of chaos per watch mode in a normal run; both modes together stay near a minute.
DEFAULT_CHAOS_SECONDS = 25.0
LONG_CHAOS_SECONDS = 600.0
DEFAULT_CHAOS_TRIALS = 10


@pytest.fixture
def chaos_budget(request: pytest.FixtureRequest) -> tuple[float, int, float]:
    """(seconds per mode, fewest trials per mode, longest writing time of one trial)."""
    long = request.config.getoption("--long")
    seconds = request.config.getoption("--chaos-seconds")
    if seconds is None:
        seconds = LONG_CHAOS_SECONDS if long else DEFAULT_CHAOS_SECONDS
    trials = request.config.getoption("--chaos-trials") or DEFAULT_CHAOS_TRIALS
    return seconds, trials, 8.0 if long else 2.0
