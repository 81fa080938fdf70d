"""Options of the reliability suite.

``--chaos-seconds N`` gives the chaos test N seconds per watch mode (inotify and
polling); ``--long`` makes that ten minutes unless ``--chaos-seconds`` says
otherwise; ``--chaos-trials N`` sets the fewest trials per mode. A failing
trial prints its seed: ``TUILOSS_CHAOS_SEED=<seed> pytest tests/reliability/test_chaos.py``
replays exactly that trial in both modes. With ``--long`` each trial also writes
for longer (up to 8 s), so histories grow deeper between the destructive events.

Give the path when passing these options (``pytest tests/reliability --long``):
pytest reads this file's options only for the folders named on the command line.
"""

from __future__ import annotations

import pytest

#: Seconds of chaos per watch mode in a normal run; both modes together stay near a minute.
DEFAULT_CHAOS_SECONDS = 25.0
LONG_CHAOS_SECONDS = 600.0
DEFAULT_CHAOS_TRIALS = 10


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tuiloss reliability")
    group.addoption("--long", action="store_true", default=False,
                    help="run the chaos test for a long time (see --chaos-seconds)")
    group.addoption("--chaos-seconds", type=float, default=None, metavar="N",
                    help=f"seconds of chaos per watch mode (default {DEFAULT_CHAOS_SECONDS:g}, "
                         f"{LONG_CHAOS_SECONDS:g} with --long)")
    group.addoption("--chaos-trials", type=int, default=DEFAULT_CHAOS_TRIALS, metavar="N",
                    help=f"fewest chaos trials per watch mode (default {DEFAULT_CHAOS_TRIALS})")


@pytest.fixture
def chaos_budget(request: pytest.FixtureRequest) -> tuple[float, int, float]:
    """(seconds per mode, fewest trials per mode, longest writing time of one trial)."""
    long = request.config.getoption("--long")
    seconds = request.config.getoption("--chaos-seconds")
    if seconds is None:
        seconds = LONG_CHAOS_SECONDS if long else DEFAULT_CHAOS_SECONDS
    return seconds, request.config.getoption("--chaos-trials"), 8.0 if long else 2.0
